package io.safetensors.spark.jni;

import java.io.IOException;
import java.io.ObjectOutputStream;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The binding driven the way Spark's scheduler drives a DataSource V2 writer: the driver
 * prepares the job, executor threads (or other JVMs) run one writer per task attempt, commit
 * messages travel as bytes, the driver commits or aborts. Then what Spark does to writers:
 * failed and retried tasks, speculative duplicates, job aborts. Plus the read side, the errors
 * and the safety net. A plain runner (no JUnit): one PASS/FAIL line per test, exit status 1 on
 * any failure. usage: JniTests WORKDIR (datasets kept there for examples/jni/check_jni.py)
 */
public final class JniTests {
    private static Path work;
    private static int failures, passed;

    private JniTests() {}

    interface Body { void run() throws Exception; }

    public static void main(String[] args) throws Exception {
        work = Paths.get(args[0]).toAbsolutePath();
        test("options straight from a Spark options map (any case, with path)", JniTests::optionsFromSparkMap);
        test("bad options: IllegalArgumentException with the option and value", JniTests::badOptions);
        test("KV job: driver, 3 executor threads, 6 partitions, commit; read back", JniTests::kvJobOnThreads);
        test("KV job with kv_layout=arrival: shards written while they fill; read back", JniTests::kvArrival);
        test("batch job: every numeric array type to F64, a Tensor column, tail pad", JniTests::batchJob);
        test("a task fails mid-partition, is aborted and retried with a new attempt id", JniTests::failedTaskRetried);
        test("speculative execution: two attempts succeed, the driver discards one", JniTests::speculativeAttempts);
        test("job abort: no manifest, no stray files", JniTests::jobAbort);
        test("tasks in separate JVMs: the factory and the messages cross as bytes", JniTests::tasksInOtherProcesses);
        test("read a file: tensors in offset order, zero-copy read-only buffers", JniTests::readFile);
        test("dataset get() from 4 threads at once", JniTests::datasetThreads);
        test("a dataset's read-only buffers feed a new job, still without a copy", JniTests::copyThroughBuffers);
        test("errors become exceptions with the rule; objects stay usable", JniTests::errors);
        test("a file the format rejects: SafetensorsException with result, rule, offset", JniTests::badFiles);
        test("Cleaner safety net: frees only when owner and buffers are unreachable", JniTests::cleanerSafetyNet);
        test("Cleaner safety net: a forgotten task writer is aborted", JniTests::cleanerAbortsWriter);
        test("every native object the tests made was freed", () -> check(gcUntil(() -> Native.liveHandles() == 0, 300),
                Native.liveHandles() + " task writers, files or datasets are still open"));
        System.out.println(failures == 0 ? "jni: all " + passed + " tests passed"
                                         : "jni: " + failures + " of " + (passed + failures) + " tests FAILED");
        System.exit(failures == 0 ? 0 : 1);
    }

    private static void test(String name, Body body) {
        long t0 = System.nanoTime();
        try {
            body.run();
            passed++;
            System.out.printf("PASS  %s (%d ms)%n", name, (System.nanoTime() - t0) / 1_000_000);
        } catch (Throwable e) {
            failures++;
            System.out.println("FAIL  " + name);
            e.printStackTrace(System.out);
        }
    }

    static void check(boolean ok, String what) { if (!ok) throw new AssertionError(what); }

    @SuppressWarnings("unchecked")
    static <T extends Throwable> T expect(Class<T> type, Body body) {
        try {
            body.run();
        } catch (Throwable e) {
            if (type.isInstance(e)) return (T) e;
            throw new AssertionError("expected " + type.getSimpleName() + ", got " + e, e);
        }
        throw new AssertionError("expected " + type.getSimpleName() + ", got none");
    }

    // ---- the scheduler in miniature --------------------------------------------------------------

    /** Runs one attempt of each partition on a pool of executor threads; returns the messages in partition order. */
    private static byte[][] runTasks(WriterFactory f, int partitions, int rows) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(3);
        try {
            List<Future<byte[]>> out = new ArrayList<>();
            for (int p = 0; p < partitions; p++) {
                final int part = p;
                out.add(pool.submit(() -> runTask(f, part, 1000L + part, rows, -1)));
            }
            byte[][] msgs = new byte[partitions][];
            for (int p = 0; p < partitions; p++) msgs[p] = out.get(p).get();
            return msgs;
        } finally {
            pool.shutdown();
        }
    }

    /** One task attempt as Spark's DataWritingSparkTask runs it: write, commit; on failure abort; always close. */
    private static byte[] runTask(WriterFactory f, int partition, long taskId, int rows, int failAt)
            throws IOException {
        TaskWriter w = f.createWriter(partition, taskId);
        try {
            Rows.writeKv(w, partition, rows, failAt);
            return w.commit();
        } catch (RuntimeException | IOException e) {
            w.abort();
            throw e;
        } finally {
            w.close();
        }
    }

    private static Path fresh(String name) throws IOException {
        Path d = work.resolve(name);
        check(!Files.exists(d), d + " exists");
        return d;
    }

    /** Every entry of dir, hidden ones too. */
    static Set<String> list(Path dir) throws IOException {
        Set<String> s = new TreeSet<>();
        if (!Files.isDirectory(dir)) return s;
        try (Stream<Path> st = Files.list(dir)) { st.forEach(p -> s.add(p.getFileName().toString())); }
        return s;
    }

    private static final Pattern SHARD = Pattern.compile("\"shard_path\":\\s*\"([^\"]+)\"");

    /** The shard names a commit message or a manifest lists. */
    static Set<String> shards(String json) {
        Set<String> s = new TreeSet<>();
        Matcher m = SHARD.matcher(json);
        while (m.find()) s.add(m.group(1));
        return s;
    }
    static Set<String> shards(byte[] message) { return shards(new String(message, StandardCharsets.UTF_8)); }

    private static String uuid(String shard) { return shard.substring(16, 52); }  // part-TTTTT-SSSS-<uuid>.safetensors

    /** A committed dataset holds its manifest, its index and the manifest's shards: nothing else. */
    private static Set<String> checkClean(Path dir, boolean index) throws IOException {
        byte[] manifest = Files.readAllBytes(dir.resolve("dataset_manifest.json"));
        Set<String> listed = shards(new String(manifest, StandardCharsets.UTF_8));
        Set<String> want = new TreeSet<>(listed);
        want.add("dataset_manifest.json");
        if (index) { want.add("_tensor_index.csv"); want.add("_tensor_index.json"); }
        check(list(dir).equals(want), "the folder holds " + list(dir) + ", expected " + want);
        return listed;
    }

    // ---- tests -----------------------------------------------------------------------------------

    static void optionsFromSparkMap() throws Exception {
        // keys lower-cased and "path" added, as CaseInsensitiveStringMap holds them
        Path d = fresh("options_lower");
        Map<String, String> o = Rows.kvOptions(d.toString());
        o.put("duplicatesstrategy", "lastWin");
        BatchWrite job = BatchWrite.prepare(d.toString(), o, Rows.KV_SCHEMA);
        byte[] msg;
        try (TaskWriter w = job.createWriterFactory().createWriter(0, 1)) {
            w.write(Rows.kvRow(0, 0));
            w.write(Rows.kvRow(0, 1));
            Object[] again = Rows.kvRow(0, 5);
            again[0] = Rows.key(0, 0);          // the same key: lastWin keeps this row
            w.write(again);
            msg = w.commit();
        }
        BatchWrite.Summary s = job.commit(new byte[][] { msg });
        check(s.samples == 2 && s.shards == 1, "summary " + s + " (the replaced row is not a sample)");
        try (Dataset ds = Dataset.open(d.toString())) {
            byte[] img = Expect.bytes(ds.get(Rows.key(0, 0) + "__img"));
            check(Arrays.equals(img, Rows.imgBytes(0, 5)), "lastWin: the last row wins");
        }
        // the user's spelling (Spark keeps it in asCaseSensitiveMap) works the same
        Path d2 = fresh("options_mixed");
        Map<String, String> m = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        m.put("Name_Col", "id");
        m.put("DTYPE", "BF16");
        m.put("duplicatesStrategy", "fail");
        m.put("Target_Shard_Size_MB", "64");
        m.put("kv_separator", "::");
        BatchWrite job2 = BatchWrite.prepare(d2.toString(), m, Rows.KV_SCHEMA);
        byte[] msg2 = runTask(job2.createWriterFactory(), 0, 1, 3, -1);
        job2.commit(new byte[][] { msg2 });
        try (Dataset ds = Dataset.open(d2.toString())) {
            check(ds.get(Rows.key(0, 1) + "::emb") != null, "kv_separator :: applies");
            TaskWriter w = job2.createWriterFactory().createWriter(1, 2);  // fail: a duplicate within a task is refused
            try {
                w.write(Rows.kvRow(1, 0));
                SafetensorsException e = expect(SafetensorsException.class, () -> w.write(Rows.kvRow(1, 0)));
                check(e.result().equals("DUPLICATE_KEY") && e.rule().equals("dataset.duplicate_key"), e.toString());
            } finally {
                w.close();
            }
        }
    }

    static void badOptions() throws Exception {
        String[][] cases = {  // option, value, what the message must say
            { "batch_size", "0", "batch_size must be an integer greater than 0" },
            { "target_shard_size_mb", "10", "between 50 and 1000" },
            { "dtype", "F8_E4M3", "one of F16 F32 F64 BF16" },
            { "duplicatesStrategy", "first", "fail or lastWin" },
            { "tail_strategy", "keep", "drop, pad or write" },
            { "mode", "append", "not supported" },
            { "kv_separator", "", "non-empty" },
            { "compression", "zstd", "unknown option" },
        };
        for (String[] c : cases) {
            Map<String, String> o = Rows.kvOptions("x");
            o.put(c[0], c[1]);
            IllegalArgumentException e = expect(IllegalArgumentException.class,
                    () -> BatchWrite.prepare(work.resolve("bad_options").toString(), o, Rows.KV_SCHEMA));
            check(e.getMessage().contains(c[2]) && e.getMessage().startsWith("option: "),
                    c[0] + "=" + c[1] + ": " + e.getMessage());
        }
        Map<String, String> both = Rows.kvOptions("x");
        both.put("batch_size", "8");
        IllegalArgumentException e = expect(IllegalArgumentException.class,
                () -> BatchWrite.prepare(work.resolve("bad_options").toString(), both, Rows.KV_SCHEMA));
        check(e.getMessage().contains("mutually exclusive"), e.getMessage());
        Map<String, String> noDtype = Rows.kvOptions("x");
        noDtype.remove("dtype");
        e = expect(IllegalArgumentException.class,
                () -> BatchWrite.prepare(work.resolve("bad_options").toString(), noDtype, Rows.KV_SCHEMA));
        check(e.getMessage().contains("dtype is required because column \"emb\""), e.getMessage());
        Map<String, String> badCol = Rows.kvOptions("x");
        badCol.put("name_col", "nope");
        e = expect(IllegalArgumentException.class,
                () -> BatchWrite.prepare(work.resolve("bad_options").toString(), badCol, Rows.KV_SCHEMA));
        check(e.getMessage().contains("name_col \"nope\" is not a column"), e.getMessage());
        expect(IllegalArgumentException.class, () -> Column.array("s", String.class));
        expect(IllegalArgumentException.class, () -> Tensor.of(new byte[4], "F128", 1));
        check(list(work.resolve("bad_options")).isEmpty(), "a rejected job leaves nothing");
    }

    static void kvJobOnThreads() throws Exception {
        Path d = fresh("kv_threads");
        BatchWrite job = BatchWrite.prepare(d.toString(), Rows.kvOptions(d.toString()), Rows.KV_SCHEMA);
        byte[][] msgs = runTasks(job.createWriterFactory(), 6, 40);
        BatchWrite.Summary s = job.commit(msgs);
        check(s.samples == 240 && s.tensors == 480 && s.shards == 6, "summary " + s);
        checkClean(d, true);
        Expect e = new Expect();
        for (int p = 0; p < 6; p++) Rows.expectKv(e, p, 40);
        e.totalSamples = 240;
        e.checkDataset(d);
        e.save(d);
    }

    /** kv_layout=arrival from the options map: 40 rows of 2 MiB over a 50 MiB target, so each shard
     *  goes out from an eighth of it, behind its header's room, its newest rows held for that room. */
    static void kvArrival() throws Exception {
        Path d = fresh("kv_arrival");
        Map<String, String> o = Rows.kvOptions(d.toString());
        o.put("kv_layout", "arrival");
        o.put("target_shard_size_mb", "50");
        BatchWrite job = BatchWrite.prepare(d.toString(), o, Rows.KV_SCHEMA);
        WriterFactory f = job.createWriterFactory();
        Expect e = new Expect();
        byte[] m;
        try (TaskWriter w = f.createWriter(0, 7)) {
            for (int r = 0; r < 40; r++) {
                byte[] big = new byte[2 << 20];
                new java.util.SplittableRandom(1000 + r).nextBytes(big);
                float[] emb = Rows.emb(0, r);
                w.write(Rows.key(0, r), Tensor.of(big, "F16", 1024, 1024), emb);
                e.add(Rows.key(0, r) + "__img", null, "F16", new long[] { 1024, 1024 }, big, null);
                e.add(Rows.key(0, r) + "__emb", null, "BF16", new long[] { 8 }, Rows.bf16(emb), emb);
            }
            m = w.commit();
        }
        BatchWrite.Summary s = job.commit(new byte[][] { m });
        check(s.samples == 40 && s.tensors == 80 && s.shards == 2, "summary " + s);
        checkClean(d, true);
        e.totalSamples = 40;
        e.checkDataset(d);
    }

    static void batchJob() throws Exception {
        Path d = fresh("batch");
        Map<String, String> o = new HashMap<>();
        o.put("batch_size", "4");
        o.put("dtype", "F64");
        o.put("tail_strategy", "pad");
        Column[] schema = { Column.array("f", float.class), Column.array("d", double.class),
                            Column.array("i", int.class), Column.array("l", long.class),
                            Column.array("s", short.class), Column.array("b", byte.class), Column.tensor("t") };
        BatchWrite job = BatchWrite.prepare(d.toString(), o, schema);
        WriterFactory f = job.createWriterFactory();
        int rows = 10, batch = 4;
        byte[][] msgs = new byte[2][];
        Expect e = new Expect();
        for (int p = 0; p < 2; p++) {
            double[][] cols = new double[6][];  // each column's values, stacked, padded with zero rows
            ByteBuffer t = ByteBuffer.allocate(3 * batch * 8).order(ByteOrder.LITTLE_ENDIAN);
            for (int k = 0; k < 6; k++) cols[k] = new double[3 * batch * 3];
            try (TaskWriter w = f.createWriter(p, 10 + p)) {
                for (int r = 0; r < rows; r++) {
                    float[] fa = new float[3]; double[] da = new double[3]; int[] ia = new int[3];
                    long[] la = new long[3]; short[] sa = new short[3]; byte[] ba = new byte[3];
                    for (int k = 0; k < 3; k++) {
                        fa[k] = r * 0.5f + p + k; da[k] = r * 1.25 + p - k; ia[k] = r * 1000 - p + k;
                        la[k] = r * 100_000L + k - 7; sa[k] = (short) (r - 5 + k); ba[k] = (byte) (r * 3 - 7 + k);
                        double[] v = { fa[k], da[k], ia[k], la[k], sa[k], ba[k] };
                        for (int c = 0; c < 6; c++) cols[c][r * 3 + k] = v[c];
                    }
                    ByteBuffer tb = ByteBuffer.allocateDirect(8).order(ByteOrder.LITTLE_ENDIAN);
                    tb.putInt(r + p * 100).putInt(-r).flip();
                    t.putInt(r + p * 100).putInt(-r);
                    w.write(fa, da, ia, la, sa, ba, Tensor.of(tb, "I32", 2));
                }
                msgs[p] = w.commit();
            }
            String[] names = { "f", "d", "i", "l", "s", "b" };
            byte[] tAll = Arrays.copyOf(t.array(), 3 * batch * 8);
            for (int k = 0; k < 3; k++) {  // batches: rows 0-3, 4-7, 8-9 + two zero rows
                String prefix = String.format("part-%05d-%04d", p, k);
                for (int c = 0; c < 6; c++) {
                    ByteBuffer b = ByteBuffer.allocate(batch * 3 * 8).order(ByteOrder.LITTLE_ENDIAN);
                    for (int j = 0; j < batch * 3; j++) b.putDouble(cols[c][k * batch * 3 + j]);
                    e.add(names[c], prefix, "F64", new long[] { batch, 3 }, b.array(), null);
                }
                byte[] tk = Arrays.copyOfRange(tAll, k * batch * 8, (k + 1) * batch * 8);
                e.add("t", prefix, "I32", new long[] { batch, 2 }, tk, null);
            }
        }
        BatchWrite.Summary s = job.commit(msgs);
        check(s.shards == 6 && s.samples == 20, "summary " + s + " (the padding rows are not samples)");
        checkClean(d, false);
        // each shard through SafetensorsFile
        Map<String, Path> byPrefix = new HashMap<>();
        for (String n : list(d)) if (n.endsWith(".safetensors")) byPrefix.put(n.substring(0, 15), d.resolve(n));
        for (Expect.Entry x : e.entries) {
            try (SafetensorsFile sf = SafetensorsFile.open(byPrefix.get(x.filePrefix).toString())) {
                check(Arrays.equals(Expect.bytes(sf.get(x.key)), x.bytes),
                        x.filePrefix + "/" + x.key + ": the bytes differ");
            }
        }
        e.totalSamples = 20;
        e.save(d);
    }

    static void failedTaskRetried() throws Exception {
        Path d = fresh("retry");
        Map<String, String> o = Rows.kvOptions(d.toString());
        o.put("target_shard_size_mb", "50");
        o.put("io_thread", "false");  // a shard that rolls is written before write() returns
        BatchWrite job = BatchWrite.prepare(d.toString(), o, Rows.KV_SCHEMA);
        WriterFactory f = job.createWriterFactory();
        byte[] m0 = runTask(f, 0, 100, 30, -1), m2 = runTask(f, 2, 102, 30, -1);
        // partition 1, attempt 101: rows with 2 MiB tensors (other bytes than the retry's), so
        // its first shard rolls past 50 MiB and reaches the disk; then it fails at row 30
        TaskWriter w = f.createWriter(1, 101);
        Set<String> during;
        try {
            for (int r = 0; r < 30; r++) {
                byte[] big = new byte[2 << 20];
                new java.util.SplittableRandom(r).nextBytes(big);
                w.write(Rows.key(1, r), Tensor.of(big, "F16", 1024, 1024), Rows.emb(1, r));
            }
            IllegalStateException x = expect(IllegalStateException.class, () -> Rows.writeKv(w, 1, 30, 0));
            check(x.getMessage().contains("simulated"), x.toString());
            during = list(d);
            check(during.stream().anyMatch(n -> n.startsWith(".part-00001-0000-")),
                    "the failed attempt's sealed shard is on disk: " + during);
            w.abort();                         // what Spark does with a task that threw
        } finally {
            w.close();
        }
        check(list(d).stream().noneMatch(n -> n.startsWith(".part-00001-")),
                "abort removed the failed attempt's files: " + list(d));
        byte[] m1 = runTask(f, 1, 201, 30, -1);  // the retry: a new attempt id, a new uuid
        job.commit(new byte[][] { m0, m1, m2 });
        Set<String> committed = checkClean(d, true);
        for (String n : during)
            if (n.startsWith(".part-00001-"))
                for (String c : committed) check(!n.contains(uuid(c)), "a file of the failed attempt survived: " + n);
        check(committed.containsAll(shards(m1)), "the retry's shards are the ones committed");
        Expect e = new Expect();
        for (int p = 0; p < 3; p++) Rows.expectKv(e, p, 30);  // the retry's bytes, never the failed attempt's
        e.totalSamples = 90;
        e.checkDataset(d);
        e.save(d);
    }

    static void speculativeAttempts() throws Exception {
        Path d = fresh("speculative");
        BatchWrite job = BatchWrite.prepare(d.toString(), Rows.kvOptions(d.toString()), Rows.KV_SCHEMA);
        WriterFactory f = job.createWriterFactory();
        byte[] m0 = runTask(f, 0, 300, 25, -1), m2 = runTask(f, 2, 302, 25, -1);
        byte[] first = runTask(f, 1, 301, 25, -1), second = runTask(f, 1, 401, 25, -1);  // both attempts succeed
        Set<String> loser = shards(second);
        check(!loser.isEmpty() && list(d).containsAll(loser) && list(d).containsAll(shards(first)),
                "both attempts published");
        check(!shards(first).equals(loser), "attempts of one partition never share a file name");
        // a driver that passes both attempts: refused (each row would count twice), nothing published
        SafetensorsException both = expect(SafetensorsException.class,
                () -> job.commit(new byte[][] { m0, first, second, m2 }));
        check(both.rule().equals("dataset.message") && both.getMessage().contains("both of task 1"), both.toString());
        check(!list(d).contains("dataset_manifest.json") && list(d).containsAll(loser), "the refused commit changed nothing");
        job.discard(new byte[][] { second }); // the driver's OutputCommitCoordinator let the first one win
        for (String n : loser) check(!list(d).contains(n), "the discarded attempt's shard " + n + " is gone");
        check(list(d).containsAll(shards(first)), "the winner's shards are untouched");
        BatchWrite.Summary s = job.commit(new byte[][] { m0, first, m2 });
        check(s.samples == 75, "each row once: " + s);
        // a driver that discards or aborts after its commit: refused, the dataset untouched
        Set<String> published = list(d);
        SafetensorsException late = expect(SafetensorsException.class, () -> job.discard(new byte[][] { first }));
        check(late.rule().equals("dataset.published"), late.toString());
        late = expect(SafetensorsException.class, () -> job.abort(new byte[][] { m0, first, m2 }));
        check(late.rule().equals("dataset.published") && late.getMessage().contains("published dataset"), late.toString());
        check(list(d).equals(published), "discard and abort after the commit changed the folder: " + list(d));
        checkClean(d, true);
        Expect e = new Expect();
        for (int p = 0; p < 3; p++) Rows.expectKv(e, p, 25);
        e.totalSamples = 75;
        e.checkDataset(d);
        e.save(d);
    }

    static void jobAbort() throws Exception {
        Path d = fresh("job_abort");
        BatchWrite job = BatchWrite.prepare(d.toString(), Rows.kvOptions(d.toString()), Rows.KV_SCHEMA);
        WriterFactory f = job.createWriterFactory();
        byte[] m0 = runTask(f, 0, 500, 20, -1), m1 = runTask(f, 1, 501, 20, -1);
        expect(IllegalStateException.class, () -> runTask(f, 2, 502, 20, 9));  // the stage fails
        check(!list(d).isEmpty(), "committed tasks left shards");
        job.abort(new byte[][] { m0, m1 });  // Spark's BatchWrite.abort with the messages it has
        check(list(d).isEmpty(), "after the job abort the folder holds " + list(d));
        expect(IOException.class, () -> Dataset.open(d.resolve("dataset_manifest.json").toString()));
    }

    static void tasksInOtherProcesses() throws Exception {
        Path d = fresh("processes");
        BatchWrite job = BatchWrite.prepare(d.toString(), Rows.kvOptions(d.toString()), Rows.KV_SCHEMA);
        Path factoryFile = work.resolve("processes.factory");
        try (ObjectOutputStream out = new ObjectOutputStream(Files.newOutputStream(factoryFile))) {
            out.writeObject(job.createWriterFactory());
        }
        String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        String cp = System.getProperty("java.class.path"), libPath = System.getProperty("java.library.path");
        List<String> jvm = new ArrayList<>(Arrays.asList(java, "-Xcheck:jni", "-cp", cp,
                                                         "-Djava.library.path=" + libPath));
        String lib = System.getProperty("sts.jni.library");
        if (lib != null) jvm.add("-Dsts.jni.library=" + lib);
        List<Process> procs = new ArrayList<>();
        List<Path> logs = new ArrayList<>();
        for (int p = 0; p < 2; p++) {
            List<String> cmd = new ArrayList<>(jvm);
            cmd.addAll(Arrays.asList(TaskProcess.class.getName(), factoryFile.toString(), "" + p, "" + (700 + p), "50",
                                     work.resolve("processes.msg" + p).toString()));
            Path log = work.resolve("processes.log" + p);
            logs.add(log);
            procs.add(new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start());
        }
        byte[][] msgs = new byte[2][];
        for (int p = 0; p < 2; p++) {
            int rc = procs.get(p).waitFor();
            String out = new String(Files.readAllBytes(logs.get(p)), StandardCharsets.UTF_8);
            check(rc == 0, "task process " + p + " exited " + rc + ":\n" + out);
            String lower = out.toLowerCase(Locale.ROOT);
            check(!lower.contains("warning") && !lower.contains("fatal"),
                    "-Xcheck:jni in task process " + p + ":\n" + out);
            msgs[p] = Files.readAllBytes(work.resolve("processes.msg" + p));
        }
        job.commit(msgs);
        checkClean(d, true);
        Expect e = new Expect();
        for (int p = 0; p < 2; p++) Rows.expectKv(e, p, 50);
        e.totalSamples = 100;
        e.checkDataset(d);
        e.save(d);
    }

    /** A safetensors file written by hand (not by the library): 8-byte length, JSON, padding, data. */
    static Path handFile(String name, String header, byte[] data) throws IOException {
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        int pad = (8 - h.length % 8) % 8;
        ByteBuffer b = ByteBuffer.allocate(8 + h.length + pad + data.length).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(h.length + pad).put(h);
        for (int i = 0; i < pad; i++) b.put((byte) ' ');
        b.put(data);
        Path p = work.resolve(name);
        Files.write(p, b.array());
        return p;
    }

    static void readFile() throws Exception {
        ByteBuffer data = ByteBuffer.allocate(30).order(ByteOrder.LITTLE_ENDIAN);
        data.putFloat(1.5f).putFloat(-2f).putFloat(3.25f).putFloat(4f);        // a: F32 [2,2]
        data.putShort((short) 0x3f80).putShort((short) 0xc000).putShort((short) 0x4040);  // b: BF16 [3] = 1, -2, 3
        data.putLong(-1234567890123L);                                          // é🙂: I64 []
        String name = "\u00e9\ud83d\ude42";
        Path p = handFile("hand.safetensors", "{\"__metadata__\":{\"format\":\"pt\"},"
                + "\"b\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[16,22]},"
                + "\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
                + "\"" + name + "\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[22,30]},"
                + "\"z\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[30,30]}}", data.array());
        long live = Native.liveHandles();
        SafetensorsFile f = SafetensorsFile.open(p.toString());
        try {
            check(Native.liveHandles() == live + 1, "one native file open");
            List<TensorInfo> t = f.tensors();
            check(t.size() == 4, "4 tensors: " + t);
            check(t.get(0).name().equals("a") && t.get(1).name().equals("b") && t.get(2).name().equals(name)
                  && t.get(3).name().equals("z"),
                    "data-offset order, names decoded from UTF-8 (a non-BMP one too): " + t);
            check(t.get(0).dtype().equals("F32") && Arrays.equals(t.get(0).shape(), new long[] { 2, 2 })
                  && t.get(0).nbytes() == 16, t.get(0).toString());
            check(t.get(1).dtype().equals("BF16") && t.get(2).shape().length == 0 && t.get(3).nbytes() == 0,
                  t.toString());
            ByteBuffer a = f.get("a");
            check(a.isDirect() && a.isReadOnly() && a.order() == ByteOrder.LITTLE_ENDIAN && a.capacity() == 16,
                  "a read-only direct LE buffer");
            check(a.getFloat(0) == 1.5f && a.getFloat(12) == 4f, "a's values");
            check(Native.address(a) == Native.address(f.get("a")), "zero copy: two gets, one address (the mapping)");
            check(Native.address(f.get("b")) == Native.address(a) + 16, "b follows a in the mapping");
            check(f.get(name).getLong(0) == -1234567890123L, "the I64 scalar by its non-BMP name");
            check(f.get("z").capacity() == 0, "an empty tensor is an empty buffer");
            check(f.get("missing") == null, "an absent name gives null");
            expect(java.nio.ReadOnlyBufferException.class, () -> f.get("a").putFloat(0, 1f));
        } finally {
            f.close();
        }
        check(Native.liveHandles() == live, "close() freed it");
        expect(IllegalStateException.class, () -> f.get("a"));
        f.close();  // idempotent
        // the same file as a one-file dataset
        try (Dataset ds = Dataset.open(p.toString())) {
            check(ds.get("b").getShort(4) == 0x4040, "a single file reads as a dataset");
            check(ds.info(name).file().equals("hand.safetensors"), "info names the file");
            check(ds.get("nope") == null && ds.info("nope") == null, "absent keys give null");
        }
    }

    static void datasetThreads() throws Exception {
        Path d = work.resolve("kv_threads");
        Expect e = new Expect();
        for (int p = 0; p < 6; p++) Rows.expectKv(e, p, 40);
        try (Dataset ds = Dataset.open(d.toString())) {
            ExecutorService pool = Executors.newFixedThreadPool(4);
            try {
                List<Future<Integer>> fs = new ArrayList<>();
                for (int t = 0; t < 4; t++) {
                    final int start = t;
                    fs.add(pool.submit(() -> {
                        int n = 0;
                        for (int i = 0; i < e.entries.size(); i++) {
                            Expect.Entry x = e.entries.get((i + start * 97) % e.entries.size());
                            check(Arrays.equals(Expect.bytes(ds.get(x.key)), x.bytes), x.key);
                            n++;
                        }
                        return n;
                    }));
                }
                for (Future<Integer> fu : fs) check(fu.get() == e.entries.size(), "every lookup done");
            } finally {
                pool.shutdown();
            }
        }
    }

    static void copyThroughBuffers() throws Exception {
        Path d = fresh("copied");
        Map<String, String> o = new HashMap<>();
        o.put("name_col", "key");
        BatchWrite job = BatchWrite.prepare(d.toString(), o, Column.string("key"), Column.tensor("img"));
        Expect e = new Expect();
        byte[] msg;
        try (Dataset src = Dataset.open(work.resolve("kv_threads").toString());
             TaskWriter w = job.createWriterFactory().createWriter(0, 1)) {
            for (int r = 0; r < 40; r++) {
                String k = Rows.key(3, r);
                ByteBuffer b = src.get(k + "__img");  // read-only, direct: written from the mapping
                w.write(k, Tensor.of(b, "F16", 3, 5));
                e.add(k + "__img", null, "F16", new long[] { 3, 5 }, Rows.imgBytes(3, r), null);
            }
            msg = w.commit();
        }
        job.commit(new byte[][] { msg });
        e.totalSamples = 40;
        e.checkDataset(d);
        e.save(d);
    }

    static void errors() throws Exception {
        expect(IOException.class, () -> SafetensorsFile.open(work.resolve("no-such-file.safetensors").toString()));
        expect(IOException.class, () -> Dataset.open(work.resolve("no-such-folder").toString()));
        // EXISTS: a committed dataset's folder is not empty
        Map<String, String> o = Rows.kvOptions("x");
        SafetensorsException ex = expect(SafetensorsException.class,
                () -> BatchWrite.prepare(work.resolve("kv_threads").toString(), o, Rows.KV_SCHEMA));
        check(ex.result().equals("EXISTS") && ex.rule().equals("dataset.exists") && ex.offset() == -1, ex.toString());

        Path d = fresh("errors");
        BatchWrite job = BatchWrite.prepare(d.toString(), o, Rows.KV_SCHEMA);
        WriterFactory f = job.createWriterFactory();
        TaskWriter w = f.createWriter(0, 1);
        try {
            w.write(Rows.kvRow(0, 0));
            // cells that are wrong for the schema: IllegalArgumentException, the row is not written
            IllegalArgumentException iae = expect(IllegalArgumentException.class,
                    () -> w.write("k1", "not a tensor", new float[8]));
            check(iae.getMessage().contains("column img: expected a Tensor"), iae.getMessage());
            iae = expect(IllegalArgumentException.class, () -> w.write("k1", Rows.kvRow(0, 1)[1], new double[8]));
            check(iae.getMessage().contains("column emb"), iae.getMessage());
            iae = expect(IllegalArgumentException.class, () -> w.write("k1", null, new float[8]));
            check(iae.getMessage().contains("null"), iae.getMessage());
            expect(IllegalArgumentException.class, () -> w.write("k1", Rows.kvRow(0, 1)[1]));
            // bytes that disagree with dtype and shape: the library's rule
            SafetensorsException se = expect(SafetensorsException.class,
                    () -> w.write("k2", Tensor.of(ByteBuffer.allocateDirect(12), "F16", 3, 5), new float[8]));
            check(se.result().equals("SCHEMA") && se.rule().equals("row.value"), se.toString());
            // a key that is not Unicode (an unpaired surrogate) is refused, not replaced
            se = expect(SafetensorsException.class, () -> w.write("bad\ud800key", Rows.kvRow(0, 1)[1], new float[8]));
            check(se.rule().equals("row.value"), se.toString());
            // a dtype mismatch with the column's first row
            se = expect(SafetensorsException.class,
                    () -> w.write("k3", Tensor.of(new byte[30], "U8", 30), new float[8]));
            check(se.result().equals("SCHEMA") && se.rule().equals("row.dtype"), se.toString());
            w.write(Rows.kvRow(0, 1));            // the writer is still good
            byte[] m = w.commit();
            se = expect(SafetensorsException.class, w::commit);
            check(se.rule().equals("writer.state"), se.toString());
            // a duplicate across tasks fails the job's commit: nothing is published
            byte[] m2 = runTask(f, 1, 2, 1, -1);
            TaskWriter w3 = f.createWriter(2, 3);
            w3.write(Rows.kvRow(0, 0));           // partition 0's key again
            byte[] m3 = w3.commit();
            w3.close();
            se = expect(SafetensorsException.class, () -> job.commit(new byte[][] { m, m2, m3 }));
            check(se.result().equals("DUPLICATE_KEY"), se.toString());
            check(!Files.exists(d.resolve("dataset_manifest.json")), "no manifest after a failed commit");
            byte[] forged = "{\"sts_task_commit\":1}".getBytes(StandardCharsets.UTF_8);
            se = expect(SafetensorsException.class, () -> job.commit(new byte[][] { forged }));
            check(se.result().equals("DATASET") && se.rule().equals("dataset.message"), se.toString());
            job.abort(new byte[][] { m, m2, m3 });  // the job ends: its shards and its lock go
            check(list(d).isEmpty(), "abort after a failed commit: " + list(d));
            se = expect(SafetensorsException.class, () -> job.commit(new byte[][] { m }));
            check(se.rule().equals("writer.state"), "a commit after the abort: " + se);
        } finally {
            w.close();
        }
        expect(IllegalStateException.class, () -> w.write(Rows.kvRow(0, 2)));
        expect(IllegalStateException.class, w::commit);
        w.abort();  // after close: nothing left to do
        // nulls: exceptions, never a crash
        expect(NullPointerException.class, () -> SafetensorsFile.open(null));
        expect(NullPointerException.class, () -> Dataset.open(null));
        expect(NullPointerException.class, () -> job.commit(null));
        expect(IllegalArgumentException.class, () -> job.abort(new byte[][] { null }));
        try (TaskWriter w9 = f.createWriter(0, 9)) {
            expect(NullPointerException.class, () -> w9.write((Object[]) null));
        }
        try (Dataset ds = Dataset.open(work.resolve("kv_threads").toString())) {
            expect(NullPointerException.class, () -> ds.get(null));
            expect(NullPointerException.class, () -> ds.info(null));
        }
        Map<String, String> nullValue = Rows.kvOptions("x");
        nullValue.put("dtype", null);
        expect(IllegalArgumentException.class,
                () -> BatchWrite.prepare(work.resolve("nulls").toString(), nullValue, Rows.KV_SCHEMA));
        expect(NullPointerException.class, () -> Tensor.of((byte[]) null, "F32"));
        expect(IllegalArgumentException.class, () -> Tensor.of(new byte[4], "F32", -1));
    }

    static void badFiles() throws Exception {
        Path big = work.resolve("too_large.safetensors");
        Files.write(big, ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(200_000_000L).array());
        SafetensorsException e = expect(SafetensorsException.class, () -> SafetensorsFile.open(big.toString()));
        check(e.result().equals("HEADER_TOO_LARGE") && e.rule().equals("header.too_large") && e.offset() == 0,
                e.toString());
        Path hole = handFile("hole.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                + "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", new byte[12]);
        e = expect(SafetensorsException.class, () -> SafetensorsFile.open(hole.toString()));
        check(e.result().equals("INVALID_OFFSET") && e.rule().equals("offsets.contiguous") && e.offset() > 8,
                e + " offset " + e.offset());
        check(e.getMessage().contains("\"b\""), "the message names the tensor: " + e.getMessage());
        Path json = handFile("json.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]",
                new byte[4]);
        e = expect(SafetensorsException.class, () -> SafetensorsFile.open(json.toString()));
        check(e.result().equals("INVALID_HEADER_DESERIALIZATION"), e.toString());
    }

    /** Collects garbage until cond holds (at most `rounds` times); gives cond. */
    static boolean gcUntil(BooleanSupplier cond, int rounds) throws InterruptedException {
        for (int i = 0; i < rounds && !cond.getAsBoolean(); i++) {
            System.gc();
            Thread.sleep(10);
        }
        return cond.getAsBoolean();
    }

    static void cleanerSafetyNet() throws Exception {
        long live = Native.liveHandles();
        ByteBuffer a = openAndForget(work.resolve("hand.safetensors"));
        check(Native.liveHandles() == live + 1, "open");
        check(!gcUntil(() -> Native.liveHandles() == live, 20), "a buffer is reachable: the file must stay mapped");
        check(a.getFloat(12) == 4f, "the buffer still reads the mapping");
        Reference.reachabilityFence(a);
        a = null;
        check(gcUntil(() -> Native.liveHandles() == live, 500),
                "owner and buffer unreachable: the Cleaner freed the file");
    }

    /** Opens the file, takes a buffer, drops the owner without close(). */
    private static ByteBuffer openAndForget(Path p) throws IOException {
        SafetensorsFile f = SafetensorsFile.open(p.toString());
        return f.get("a");
    }

    static void cleanerAbortsWriter() throws Exception {
        Path d = fresh("forgotten");
        Map<String, String> o = new HashMap<>();
        o.put("batch_size", "4");  // batch mode lays a batch's file out at its first row
        BatchWrite job = BatchWrite.prepare(d.toString(), o, Column.tensor("t"));
        long live = Native.liveHandles();
        writeAndForget(job.createWriterFactory());
        check(Native.liveHandles() == live + 1 && !list(d).isEmpty(),
                "the forgotten writer has a hidden file: " + list(d));
        check(gcUntil(() -> Native.liveHandles() == live, 500), "the Cleaner closed the writer");
        check(list(d).equals(java.util.Collections.singleton(".sts_job.lock")),
                "and its uncommitted file is gone (the job still holds the folder): " + list(d));
        job.abort(new byte[][] {});  // the driver ends the job: its lock goes
        check(list(d).isEmpty(), "after the job's abort the folder is empty: " + list(d));
    }

    private static void writeAndForget(WriterFactory f) throws IOException {
        TaskWriter w = f.createWriter(0, 1);
        for (int r = 0; r < 6; r++) w.write(Tensor.of(new byte[8], "I32", 2));
    }
}
