package io.safetensors.spark.jni;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * What a dataset must hold, checked here through the Java reader and saved as NAME.expected.json
 * beside the dataset for examples/jni/check_jni.py (numpy alone reads the shards).
 * An entry is a key (KV mode) or, with filePrefix ("part-00001-0002"), a tensor of that shard.
 */
final class Expect {
    static final class Entry {
        final String key, filePrefix, dtype;
        final long[] shape;
        final byte[] bytes;
        final float[] f32;  // BF16 entries: the F32 values they were truncated from (numpy redoes it)
        Entry(String key, String filePrefix, String dtype, long[] shape, byte[] bytes, float[] f32) {
            this.key = key;
            this.filePrefix = filePrefix;
            this.dtype = dtype;
            this.shape = shape;
            this.bytes = bytes;
            this.f32 = f32;
        }
    }

    final List<Entry> entries = new ArrayList<>();
    long totalSamples = -1;

    void add(String key, String filePrefix, String dtype, long[] shape, byte[] bytes, float[] f32) {
        entries.add(new Entry(key, filePrefix, dtype, shape, bytes, f32));
    }

    static byte[] bytes(ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }

    /** Every KV entry through Dataset.info and Dataset.get: dtype, shape, bytes; and the key count. */
    void checkDataset(Path dir) throws IOException {
        try (Dataset ds = Dataset.open(dir.toString())) {
            for (Entry e : entries) {
                TensorInfo info = ds.info(e.key);
                JniTests.check(info != null, "key " + e.key + " is missing");
                JniTests.check(info.dtype().equals(e.dtype) && Arrays.equals(info.shape(), e.shape),
                        "key " + e.key + ": " + info + ", expected " + e.dtype + " " + Arrays.toString(e.shape));
                ByteBuffer b = ds.get(e.key);
                JniTests.check(b.isDirect() && b.isReadOnly(), "get() gives a read-only direct buffer");
                JniTests.check(Arrays.equals(bytes(b), e.bytes), "key " + e.key + ": the bytes differ");
            }
        }
    }

    void save(Path dir) throws IOException {
        StringBuilder s = new StringBuilder("{\"total_samples\": ").append(totalSamples).append(", \"entries\": [\n");
        for (int i = 0; i < entries.size(); i++) {
            Entry e = entries.get(i);
            s.append(i == 0 ? "" : ",\n").append("{\"key\": ").append(json(e.key));
            s.append(", \"file_prefix\": ").append(e.filePrefix == null ? "null" : json(e.filePrefix));
            s.append(", \"dtype\": ").append(json(e.dtype)).append(", \"shape\": ").append(Arrays.toString(e.shape));
            StringBuilder hex = new StringBuilder();
            for (byte b : e.bytes) hex.append(String.format("%02x", b & 0xff));
            s.append(", \"hex\": \"").append(hex).append('"');
            if (e.f32 != null) {
                s.append(", \"f32_bits\": [");  // exact: the raw bits, not decimal text
                for (int k = 0; k < e.f32.length; k++)
                    s.append(k == 0 ? "" : ", ").append(Float.floatToRawIntBits(e.f32[k]) & 0xffffffffL);
                s.append(']');
            }
            s.append('}');
        }
        s.append("\n]}\n");
        Path out = dir.resolveSibling(dir.getFileName() + ".expected.json");
        Files.write(out, s.toString().getBytes(StandardCharsets.UTF_8));
    }

    static String json(String v) {  // ASCII JSON: everything else as \\uXXXX (surrogate pairs as two)
        StringBuilder s = new StringBuilder("\"");
        for (char c : v.toCharArray()) {
            if (c == '"' || c == '\\') s.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e) s.append(String.format("\\u%04x", (int) c));
            else s.append(c);
        }
        return s.append('"').toString();
    }
}
