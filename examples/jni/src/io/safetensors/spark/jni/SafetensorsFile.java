package io.safetensors.spark.jni;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;

/**
 * One safetensors file, mapped and fully validated at open. get() hands out read-only,
 * little-endian direct ByteBuffers over the mapping: zero copy, valid until close().
 */
public final class SafetensorsFile implements AutoCloseable {
    private final NativeRef ref;

    private SafetensorsFile(long handle) { ref = new NativeRef(this, handle, Native::fileClose); }

    /**
     * @throws IOException the file cannot be opened or read
     * @throws SafetensorsException the file breaks a rule of the format (result, rule, byte offset)
     */
    public static SafetensorsFile open(String path) throws IOException {
        return new SafetensorsFile(Native.fileOpen(path));
    }

    /** The tensors in data-offset order. */
    public List<TensorInfo> tensors() { return Arrays.asList(Native.fileTensors(ref.get("the file"))); }

    /** The tensor's bytes, or null when the file has none of that name. */
    public ByteBuffer get(String name) { return ref.track(Native.fileGet(ref.get("the file"), name)); }

    /** Unmaps the file: buffers from get() must not be touched afterwards. Idempotent. */
    @Override
    public void close() { ref.close(); }
}
