package io.safetensors.spark.jni;

import java.io.Serializable;

/**
 * One column of the input schema, as Spark's StructType describes the DataFrame being written:
 * the key string (name_col), a Tensor Struct, or a numeric array (ArrayType of float, double,
 * int, long, short or byte) that the writer encodes to the dtype option.
 */
public final class Column implements Serializable {
    private static final long serialVersionUID = 1L;
    // the header's sts_value_kind
    static final int TENSOR = 1, ARRAY = 2, STRING = 3;

    final String name;
    final int kind;
    final int elem;  // arrays: the sts_dtype of the Java element type

    private Column(String name, int kind, int elem) {
        if (name == null) throw new NullPointerException("name");
        this.name = name;
        this.kind = kind;
        this.elem = elem;
    }

    /** A StringType column: the key of KV mode (name_col). */
    public static Column string(String name) { return new Column(name, STRING, 0); }

    /** A Tensor Struct column: cells are {@link Tensor}s. */
    public static Column tensor(String name) { return new Column(name, TENSOR, 0); }

    /** A numeric ArrayType column: element is float, double, int, long, short or byte (.class). */
    public static Column array(String name, Class<?> element) {
        String dt = element == float.class ? "F32" : element == double.class ? "F64" : element == int.class ? "I32"
                : element == long.class ? "I64" : element == short.class ? "I16" : element == byte.class ? "I8" : null;
        if (dt == null) throw new IllegalArgumentException("column " + name + ": arrays of " + element
                + " cannot be written; use float, double, int, long, short or byte");
        return new Column(name, ARRAY, Native.dtype(dt));
    }

    /** cell, if it fits this column (sts_jni.c relies on it); else IllegalArgumentException. */
    Object check(Object cell) {
        Class<?> type = kind == STRING ? String.class : kind == TENSOR ? Tensor.class : arrayType();
        if (type != null && type.isInstance(cell)) return cell;
        String want = kind == STRING ? "a String (the key)" : kind == TENSOR ? "a Tensor"
                : type != null ? "a " + type.getSimpleName() : "nothing (an unknown column kind)";
        String got = cell == null ? "null (cells are not nullable)" : cell.getClass().getSimpleName();
        throw new IllegalArgumentException("column " + name + ": expected " + want + ", got " + got);
    }

    /** The Java array an ARRAY column takes, from its element dtype (kind and elem are all that
        travel when a schema is serialized, so this is never out of step with them). */
    private Class<?> arrayType() {
        if (kind != ARRAY || elem < 0 || elem >= Native.DTYPES.length) return null;
        switch (Native.DTYPES[elem]) {
            case "F32": return float[].class;
            case "F64": return double[].class;
            case "I32": return int[].class;
            case "I64": return long[].class;
            case "I16": return short[].class;
            case "I8": return byte[].class;
            default: return null;
        }
    }

    public String name() { return name; }

    // the schema as the native calls take it
    static String[] names(Column[] s) {
        String[] r = new String[s.length];
        for (int i = 0; i < s.length; i++) r[i] = s[i].name;
        return r;
    }
    static int[] kinds(Column[] s) {
        int[] r = new int[s.length];
        for (int i = 0; i < s.length; i++) r[i] = s[i].kind;
        return r;
    }
    static int[] elems(Column[] s) {
        int[] r = new int[s.length];
        for (int i = 0; i < s.length; i++) r[i] = s[i].elem;
        return r;
    }
}
