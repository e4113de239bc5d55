package io.safetensors.spark.jni;

import java.util.Arrays;

/** A tensor's name, dtype, shape and size, read from a header or the tensor index. */
public final class TensorInfo {
    private final String name;
    private final String dtype;
    private final long[] shape;
    private final long nbytes;
    private final String file;

    TensorInfo(String name, String dtype, long[] shape, long nbytes, String file) {  // made by sts_jni.c
        this.name = name;
        this.dtype = dtype;
        this.shape = shape;
        this.nbytes = nbytes;
        this.file = file;
    }

    public String name() { return name; }
    public String dtype() { return dtype; }
    public long[] shape() { return shape.clone(); }
    public long nbytes() { return nbytes; }
    /** The shard holding it (datasets), or null (a single file). */
    public String file() { return file; }

    @Override
    public String toString() {
        String in = file != null ? " in " + file : "";
        return name + " " + dtype + " " + Arrays.toString(shape) + " " + nbytes + " bytes" + in;
    }
}
