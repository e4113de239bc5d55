package io.safetensors.spark.jni;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * A dataset folder (manifest, tensor index, shards) or a single file. Keys are looked up in O(1)
 * through _tensor_index.json, or a map built once from the headers. Shards are mapped on first
 * use; get() hands out read-only, little-endian direct ByteBuffers over the mapping, valid until
 * close(). Any number of threads may call get() and info() at once.
 */
public final class Dataset implements AutoCloseable {
    private final NativeRef ref;

    private Dataset(long handle) { ref = new NativeRef(this, handle, Native::datasetClose); }

    /**
     * @throws IOException the folder or a file cannot be read
     * @throws SafetensorsException the manifest, index or a shard is inconsistent
     */
    public static Dataset open(String path) throws IOException { return new Dataset(Native.datasetOpen(path)); }

    /** The tensor's bytes, or null when no tensor has that key. */
    public ByteBuffer get(String key) throws IOException {
        return ref.track(Native.datasetGet(ref.get("the dataset"), key));
    }

    /** The tensor's dtype, shape, size and shard, without touching its data; null when absent. */
    public TensorInfo info(String key) throws IOException { return Native.datasetInfo(ref.get("the dataset"), key); }

    /** Unmaps every shard: buffers from get() must not be touched afterwards. Idempotent. */
    @Override
    public void close() { ref.close(); }
}
