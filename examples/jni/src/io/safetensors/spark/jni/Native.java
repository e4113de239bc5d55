package io.safetensors.spark.jni;

import java.io.IOException;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;

/**
 * The native methods of libsts_jni.so (examples/jni/sts_jni.c), one per library call, and the
 * dtype table read from the header. Handles are C addresses; the public classes own them.
 */
final class Native {
    static {
        String lib = System.getProperty("sts.jni.library");  // an absolute path to libsts_jni.so, or
        if (lib != null) System.load(lib);
        else System.loadLibrary("sts_jni");                  // found on -Djava.library.path
    }

    /** The 22 safetensors dtype names, indexed by the header's sts_dtype value. */
    static final String[] DTYPES = dtypeNames();
    private static final Map<String, Integer> DTYPE_IDS = new HashMap<>();
    static {
        for (int i = 0; i < DTYPES.length; i++) DTYPE_IDS.put(DTYPES[i], i);
    }

    /** The sts_dtype of a header spelling ("F32", "BF16", ...). */
    static int dtype(String name) {
        Integer id = DTYPE_IDS.get(name);
        if (id == null)
            throw new IllegalArgumentException("unknown dtype: " + name + " (one of " + String.join(" ", DTYPES) + ")");
        return id;
    }

    private Native() {}

    static native String[] dtypeNames();

    // driver: the options and the schema travel with every call (the library keeps no job state)
    static native void prepare(String dir, String[] keys, String[] values, String[] names, int[] kinds, int[] elems)
            throws IOException;
    static native long[] commit(String dir, String[] keys, String[] values, byte[][] messages) throws IOException;
    static native void abort(String dir, byte[][] messages) throws IOException;
    static native void discard(String dir, byte[][] messages) throws IOException;

    // task writers
    static native long taskOpen(String dir, String[] keys, String[] values, String[] names, int[] kinds, int[] elems,
                                int partition) throws IOException;
    /** objs: an object per cell; meta[0, nmeta): the row's numbers (TaskWriter.write lays them out). */
    static native void taskWrite(long task, Object[] objs, long[] meta, int nmeta) throws IOException;
    static native byte[] taskCommit(long task) throws IOException;
    static native void taskClose(long task);

    // reading
    static native long fileOpen(String path) throws IOException;
    static native TensorInfo[] fileTensors(long file);
    static native ByteBuffer fileGet(long file, String name);
    static native void fileClose(long file);
    static native long datasetOpen(String path) throws IOException;
    static native ByteBuffer datasetGet(long dataset, String key) throws IOException;
    static native TensorInfo datasetInfo(long dataset, String key) throws IOException;
    static native void datasetClose(long dataset);

    // for the tests: open native objects, and a direct buffer's address
    static native long liveHandles();
    static native long address(Buffer buffer);
}
