package io.safetensors.spark.jni;

/**
 * A rejection by the library that is neither a bad option (IllegalArgumentException) nor an I/O
 * failure (java.io.IOException): a file breaking a rule of the format, a row not matching the
 * schema, a duplicate key, an inconsistent commit message.
 */
public final class SafetensorsException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final String result;
    private final String rule;
    private final long offset;

    SafetensorsException(String result, String rule, long offset, String message) {  // made by sts_jni.c
        super(result + ": " + message + (offset >= 0 ? " (at byte " + offset + ")" : ""));
        this.result = result;
        this.rule = rule;
        this.offset = offset;
    }

    /** The library's result name: "INVALID_OFFSET", "SCHEMA", "DUPLICATE_KEY", ... */
    public String result() { return result; }

    /** The rule broken: "offsets.contiguous", "row.shape", "dataset.duplicate_key", ... */
    public String rule() { return rule; }

    /** The byte offset in the file where it applies, or -1. */
    public long offset() { return offset; }
}
