package io.safetensors.spark.jni;

import java.nio.ByteBuffer;

/**
 * A Tensor Struct cell (the connector's data: binary, shape: array&lt;int&gt;, dtype: string).
 * The bytes are never copied on the Java heap: a direct ByteBuffer is read through its address,
 * a byte[] is pinned for the duration of TaskWriter.write.
 */
public final class Tensor {
    final Object data;     // a direct ByteBuffer or a byte[]
    final boolean direct;
    final long offset;     // where the bytes start in data
    final long length;
    final int[] shape;
    final int dtypeId;     // sts_dtype

    private Tensor(Object data, boolean direct, long offset, long length, String dtype, int[] shape) {
        if (shape == null) throw new NullPointerException("shape");
        for (int d : shape) if (d < 0) throw new IllegalArgumentException("negative dimension in shape");
        this.data = data;
        this.direct = direct;
        this.offset = offset;
        this.length = length;
        this.shape = shape.clone();
        this.dtypeId = Native.dtype(dtype);  // BF16 included: outside the format schema's dtype regex, accepted
    }

    /**
     * The bytes between data's position and limit (little-endian, row-major). A direct buffer is
     * used in place; a heap buffer through its array. The buffer must not change until the row
     * is written.
     */
    public static Tensor of(ByteBuffer data, String dtype, int... shape) {
        if (data.isDirect()) return new Tensor(data, true, data.position(), data.remaining(), dtype, shape);
        if (!data.hasArray())
            throw new IllegalArgumentException("a read-only heap ByteBuffer: pass its byte[] or a direct buffer");
        return new Tensor(data.array(), false, data.arrayOffset() + data.position(), data.remaining(), dtype, shape);
    }

    /** All of data (what Spark's BinaryType holds). */
    public static Tensor of(byte[] data, String dtype, int... shape) {
        return new Tensor(data, false, 0, data.length, dtype, shape);
    }

    /** Writes this tensor's numbers for sts_jni.c at m[at]: offset, length, dtype, direct, rank, dims. */
    int describe(long[] m, int at) {
        m[at] = offset;
        m[at + 1] = length;
        m[at + 2] = dtypeId;
        m[at + 3] = direct ? 1 : 0;
        m[at + 4] = shape.length;
        for (int d = 0; d < shape.length; d++) m[at + 5 + d] = shape[d];
        return at + 5 + shape.length;
    }

    public String dtype() { return Native.DTYPES[dtypeId]; }
    public int[] shape() { return shape.clone(); }
    public long byteSize() { return length; }
}
