package io.safetensors.spark.jni;

import java.io.IOException;

/**
 * One task attempt's writer (Spark's DataWriter): write rows, then commit() for the message, or
 * abort(); always close(). Files stay hidden until commit; abort and an uncommitted close remove
 * them. One thread at a time.
 */
public final class TaskWriter implements AutoCloseable {
    private final NativeRef ref;
    private final int partitionId;
    private final long taskId;

    TaskWriter(long handle, int partitionId, long taskId) {
        this.ref = new NativeRef(this, handle, Native::taskClose);
        this.partitionId = partitionId;
        this.taskId = taskId;
    }

    /**
     * One row, a cell per schema column: a String (the key), a {@link Tensor}, or a float[],
     * double[], int[], long[], short[] or byte[] matching the column. Arrays are pinned during
     * the call, never copied on the heap. A rejected row (SafetensorsException: SCHEMA,
     * DUPLICATE_KEY; IllegalArgumentException: a wrong cell) changes nothing; an IOException is
     * final for this writer.
     */
    public void write(Object... cells) throws IOException { Native.taskWrite(ref.get("the task writer"), cells); }

    /** Seals and publishes this attempt's files; returns the commit message (JSON bytes) for the driver. */
    public byte[] commit() throws IOException { return Native.taskCommit(ref.get("the task writer")); }

    /** Removes this attempt's files (unless committed) and frees the writer. */
    public void abort() { ref.close(); }

    /** Frees the writer; an uncommitted writer is aborted. Idempotent. */
    @Override
    public void close() { ref.close(); }

    public int partitionId() { return partitionId; }
    public long taskId() { return taskId; }
}
