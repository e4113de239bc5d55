package io.safetensors.spark.jni.bench;

import io.safetensors.spark.jni.BatchWrite;
import io.safetensors.spark.jni.Column;
import io.safetensors.spark.jni.Dataset;
import io.safetensors.spark.jni.TaskWriter;
import io.safetensors.spark.jni.Tensor;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Stream;

/**
 * The JNI binding's costs, each beside a C baseline measured in the same JVM process and run
 * (examples/jni/bench/bench_jni.c calls the library directly):
 *   write  1M KV rows (key row-0000000.., one F32 [256] = 1 KiB tensor from a direct ByteBuffer),
 *          durable=false, generate_index: TaskWriter.write per row against sts_task_write per row
 *          from C; timed from opening the task writer to its commit. Rows/s of both, their ratio,
 *          and the per-row JNI overhead (difference of the medians / rows).
 *   heap   used heap after GC before and after one JNI write of all rows (1 GiB of tensor bytes).
 *   get    Dataset.get(key) (read-only direct buffer over the mapping), each call timed alone,
 *          after the index load and one warm-up pass, against sts_dataset_get from C on the same
 *          keys: p50 and p99.
 * usage: Bench [--quick] [--rows N] [--runs N] [--lookups N] [--dir D] [--no-io-thread]
 *   --quick  100,000 rows, 2 runs, 50,000 lookups (default 1,000,000 rows, 5 runs, 200,000 lookups)
 *   --dir    where the datasets go (default /tmp; 2 x 1.1 GB at a time), removed at the end
 *   --no-io-thread  io_thread=false on both sides: every write on the calling thread, so wall
 *            time is work done (the default overlaps the writes with the next rows' encoding)
 */
public final class Bench {
    static { System.loadLibrary("sts_jni_bench"); }

    /** C: prepares dir, writes rows, commits; returns ns from task open to task commit, cpu[0] the thread's CPU ns. */
    static native long writeC(String dir, int rows, boolean ioThread, long[] cpu);
    /** C: sts_dataset_get of these rows' keys, each timed; {p50, p99} ns. */
    static native long[] getC(String dir, int[] rows);

    private static final String USAGE =
            "usage: Bench [--quick] [--rows N] [--runs N] [--lookups N] [--dir D] [--no-io-thread]";
    private static final int RING = 1024, ELEMS = 256;
    private static final int[] SHAPE = { ELEMS };
    private static final ByteBuffer[] ring = new ByteBuffer[RING];
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    private Bench() {}

    private static boolean ioThread = true;

    static Map<String, String> options() {
        Map<String, String> o = new HashMap<>();
        o.put("name_col", "id");
        o.put("generate_index", "true");
        o.put("durable", "false");
        o.put("io_thread", Boolean.toString(ioThread));
        return o;
    }

    /** "row-0000123" (as bench_jni.c's key()) */
    static String key(int r) {
        char[] c = { 'r', 'o', 'w', '-', '0', '0', '0', '0', '0', '0', '0' };
        for (int i = 10; r > 0; i--, r /= 10) c[i] = (char) ('0' + r % 10);
        return new String(c);
    }

    /** Prepares dir, writes rows through JNI, commits; returns ns from task open to task commit. */
    static long writeJni(Path dir, int rows, long[] heap, long[] cpu) throws IOException {
        BatchWrite job = BatchWrite.prepare(dir.toString(), options(), Column.string("id"), Column.tensor("x"));
        if (heap != null) heap[0] = usedHeap();
        byte[] msg;
        long t0 = System.nanoTime(), c0 = THREADS.getCurrentThreadCpuTime(), t;
        try (TaskWriter w = job.createWriterFactory().createWriter(0, 1)) {
            for (int r = 0; r < rows; r++) w.write(key(r), Tensor.of(ring[r & (RING - 1)], "F32", SHAPE));
            msg = w.commit();
        }
        t = System.nanoTime() - t0;
        cpu[0] = THREADS.getCurrentThreadCpuTime() - c0;
        if (heap != null) heap[1] = usedHeap();
        BatchWrite.Summary s = job.commit(new byte[][] { msg });
        if (s.samples != rows) throw new AssertionError("summary " + s);
        return t;
    }

    static long usedHeap() {
        for (int i = 0; i < 3; i++) System.gc();
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    static void delete(Path p) throws IOException {
        if (!Files.exists(p)) return;
        try (Stream<Path> s = Files.walk(p)) {
            for (Path q : (Iterable<Path>) s.sorted(Comparator.reverseOrder())::iterator) Files.delete(q);
        }
    }

    static long median(long[] v) { long[] c = v.clone(); Arrays.sort(c); return c[c.length / 2]; }

    public static void main(String[] args) throws Exception {
        int rows = 1_000_000, runs = 5, lookups = 200_000;
        String base = "/tmp";
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--quick": rows = 100_000; runs = 2; lookups = 50_000; break;
                case "--rows": rows = Integer.parseInt(args[++i]); break;
                case "--runs": runs = Integer.parseInt(args[++i]); break;
                case "--lookups": lookups = Integer.parseInt(args[++i]); break;
                case "--dir": base = args[++i]; break;
                case "--no-io-thread": ioThread = false; break;
                default: throw new IllegalArgumentException(USAGE);
            }
        }
        if (rows > 10_000_000) throw new IllegalArgumentException("at most 10,000,000 rows (7-digit keys)");
        for (int i = 0; i < RING; i++) {  // bench_jni.c fills its ring alike
            ring[i] = ByteBuffer.allocateDirect(4 * ELEMS).order(ByteOrder.LITTLE_ENDIAN);
            for (int j = 0; j < ELEMS; j++) ring[i].putFloat(i * 0.5f + j);
            ring[i].flip();
        }
        Path work = Files.createTempDirectory(Paths.get(base), "sts-jni-bench.");
        try {
            System.out.printf("jni bench: %,d KV rows of F32 [256] (1 KiB) from direct buffers, durable=false, "
                    + "io_thread=%s, %d runs; %s, %s%n", rows, ioThread, runs, System.getProperty("java.vm.name"),
                    System.getProperty("java.vm.version"));
            int warm = Math.min(rows, 100_000);  // JIT and page cache
            long[] cpu = new long[1];
            writeJni(work.resolve("warm-jni"), warm, null, cpu);
            writeC(work.resolve("warm-c").toString(), warm, ioThread, cpu);
            delete(work.resolve("warm-jni"));
            delete(work.resolve("warm-c"));

            long[] tc = new long[runs], tj = new long[runs];  // wall ns, C and JNI
            long[] cc = new long[runs], cj = new long[runs];  // calling thread CPU ns
            long[] pc = new long[runs], pj = new long[runs];  // process CPU ns (every thread: I/O, GC, JIT)
            long[] heap = new long[2];
            for (int r = 0; r < runs; r++) {  // alternate the order: neither side always goes first
                Path c = work.resolve("c"), j = work.resolve("jni");
                delete(c);
                delete(j);
                for (int k = 0; k < 2; k++) {
                    long p0 = OS.getProcessCpuTime();
                    if ((k + r) % 2 == 0) {
                        tc[r] = writeC(c.toString(), rows, ioThread, cpu);
                        cc[r] = cpu[0];
                        pc[r] = OS.getProcessCpuTime() - p0;
                    } else {
                        tj[r] = writeJni(j, rows, heap, cpu);
                        cj[r] = cpu[0];
                        pj[r] = OS.getProcessCpuTime() - p0;
                    }
                }
                System.out.printf("  run %d: C %.3f s (CPU: calling thread %.3f s, process %.3f s), "
                        + "JNI %.3f s (%.3f s, %.3f s)%n", r + 1, tc[r] / 1e9, cc[r] / 1e9, pc[r] / 1e9,
                        tj[r] / 1e9, cj[r] / 1e9, pj[r] / 1e9);
            }
            long mc = median(tc), mj = median(tj);
            double rc = rows / (mc / 1e9), rj = rows / (mj / 1e9);
            System.out.printf("write  C   %,.0f rows/s (%.2f GB/s of tensor bytes)%n", rc, rc * 1024 / 1e9);
            System.out.printf("write  JNI %,.0f rows/s (%.2f GB/s): %.2fx C (target >= 0.8x: %s)%n", rj,
                    rj * 1024 / 1e9, rj / rc, rj / rc >= 0.8 ? "met" : "NOT met");
            double cpuC = median(cc) / (double) rows, cpuJ = median(cj) / (double) rows;
            System.out.printf("write  JNI overhead per row: %.0f ns of wall time (median JNI - median C, / rows), "
                    + "%.0f ns of the calling thread's CPU (C %.0f ns, JNI %.0f ns per row; the I/O thread's CPU "
                    + "is not in these)%n",
                    (mj - mc) / (double) rows, cpuJ - cpuC, cpuC, cpuJ);
            System.out.printf("heap   used after GC: %.1f MiB before writing %,d rows (%.2f GiB), "
                    + "%.1f MiB after (%+.1f MiB)%n",
                    heap[0] / 1048576.0, rows, rows * 1024 / 1073741824.0, heap[1] / 1048576.0,
                    (heap[1] - heap[0]) / 1048576.0);

            int[] keys = new int[lookups];
            SplittableRandom g = new SplittableRandom(42);
            for (int i = 0; i < lookups; i++) keys[i] = g.nextInt(rows);
            String[] names = new String[lookups];
            for (int i = 0; i < lookups; i++) names[i] = key(keys[i]) + "__x";
            long[] t = new long[lookups];
            try (Dataset ds = Dataset.open(work.resolve("jni").toString())) {  // the index loads here
                for (int pass = 0; pass < 2; pass++) {  // the first pass warms (maps the shards, JIT)
                    for (int i = 0; i < lookups; i++) {
                        long t0 = System.nanoTime();
                        ByteBuffer b = ds.get(names[i]);
                        t[i] = System.nanoTime() - t0;
                        if (b.getFloat(4) != (keys[i] & (RING - 1)) * 0.5f + 1)
                            throw new AssertionError("bytes of " + names[i]);
                    }
                }
            }
            Arrays.sort(t);
            long[] c = getC(work.resolve("jni").toString(), keys);
            System.out.printf("get    JNI Dataset.get p50 %d ns, p99 %d ns (target p50 < 2 us: %s); "
                    + "C sts_dataset_get p50 %d ns, p99 %d ns%n",
                    t[lookups / 2], t[lookups * 99 / 100], t[lookups / 2] < 2000 ? "met" : "NOT met", c[0], c[1]);
        } finally {
            delete(work);
        }
    }
}
