package io.safetensors.spark.jni;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The rows of the harness's KV jobs, the same in every process: row r of partition p is a
 * function of (p, r), so a task in another JVM writes what the driver expects.
 * Schema: id (the key), img (a Tensor Struct: F16 [3,5]; a direct buffer, or a byte[] every
 * third row), emb (float[8], encoded to BF16 by the dtype option: truncation, the connector's).
 */
final class Rows {
    static final Column[] KV_SCHEMA = { Column.string("id"), Column.tensor("img"), Column.array("emb", float.class) };

    private Rows() {}

    /** The connector's options as Spark's CaseInsensitiveStringMap holds them: keys lower-cased, "path" added. */
    static Map<String, String> kvOptions(String path) {
        Map<String, String> o = new LinkedHashMap<>();
        o.put("name_col", "id");
        o.put("dtype", "BF16");
        o.put("generate_index", "true");
        o.put("duplicatesstrategy", "fail");
        o.put("path", path);
        return o;
    }

    /** Every seventh key holds Greek letters and a character outside the BMP. */
    static String key(int p, int r) {
        return "p" + p + "-r" + r + (r % 7 == 3 ? "-\u03ba\u03bb\u03b5\u03b9\u03b4\u03af-\ud83d\ude42" : "");
    }

    static byte[] imgBytes(int p, int r) {
        byte[] b = new byte[30];
        new SplittableRandom(p * 1_000_003L + r).nextBytes(b);
        return b;
    }

    static float[] emb(int p, int r) {
        SplittableRandom g = new SplittableRandom(p * 7_919L + r * 31L + 5);
        float[] f = new float[8];
        for (int i = 0; i < f.length; i++) f[i] = (float) (g.nextDouble() * 200 - 100);
        return f;
    }

    static Object[] kvRow(int p, int r) {
        byte[] img = imgBytes(p, r);
        Tensor t;
        if (r % 3 == 2) t = Tensor.of(img, "F16", 3, 5);  // a byte[]: pinned during write
        else {
            ByteBuffer d = ByteBuffer.allocateDirect(img.length);
            d.put(img).flip();
            t = Tensor.of(d, "F16", 3, 5);              // a direct buffer: read in place
        }
        return new Object[] { key(p, r), t, emb(p, r) };
    }

    /** Writes rows [0, rows) of partition p; throws (as a failing executor would) before row failAt. */
    static void writeKv(TaskWriter w, int p, int rows, int failAt) throws IOException {
        for (int r = 0; r < rows; r++) {
            if (r == failAt)
                throw new IllegalStateException("simulated executor failure in partition " + p + " at row " + r);
            w.write(kvRow(p, r));
        }
    }

    /** F32 -> BF16 by truncation: the top 16 bits (no NaN among the test values). */
    static byte[] bf16(float[] f) {
        ByteBuffer b = ByteBuffer.allocate(2 * f.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : f) b.putShort((short) (Float.floatToRawIntBits(v) >>> 16));
        return b.array();
    }

    static void expectKv(Expect e, int p, int rows) {
        for (int r = 0; r < rows; r++) {
            e.add(key(p, r) + "__img", null, "F16", new long[] { 3, 5 }, imgBytes(p, r), null);
            e.add(key(p, r) + "__emb", null, "BF16", new long[] { 8 }, bf16(emb(p, r)), emb(p, r));
        }
    }
}
