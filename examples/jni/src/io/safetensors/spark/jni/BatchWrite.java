package io.safetensors.spark.jni;

import java.io.IOException;
import java.util.Map;

/**
 * The driver's side of a write job, shaped like Spark's BatchWrite: prepare once (what
 * WriteBuilder.buildForBatch checks eagerly), hand a {@link WriterFactory} to the tasks, then
 * commit the tasks' messages (or abort them).
 *
 * <pre>{@code
 * BatchWrite job = BatchWrite.prepare("out/", options, Column.string("id"), Column.tensor("x"));
 * WriterFactory factory = job.createWriterFactory();       // Serializable: ships to executors
 * // on an executor, per task attempt:
 * try (TaskWriter w = factory.createWriter(partitionId, taskId)) {
 *     w.write("row-1", Tensor.of(directBuffer, "F32", 256));
 *     messages[partitionId] = w.commit();                   // the WriterCommitMessage, as bytes
 * }
 * job.commit(messages);                                     // index, then dataset_manifest.json
 * }</pre>
 */
public final class BatchWrite {
    private final String dir;
    private final String[] keys, values;
    private final Column[] schema;

    private BatchWrite(String dir, String[] keys, String[] values, Column[] schema) {
        this.dir = dir;
        this.keys = keys;
        this.values = values;
        this.schema = schema;
    }

    /**
     * Checks the options against the schema and prepares dir (created when missing; a non-empty
     * folder is refused unless mode=overwrite). options are the connector's, as Spark's
     * case-insensitive options map holds them (keys in any case; "path" is ignored).
     *
     * @throws IllegalArgumentException a bad option, with the option and the value in the message
     * @throws IOException the folder cannot be made or listed
     * @throws SafetensorsException the folder is not empty (EXISTS)
     */
    public static BatchWrite prepare(String dir, Map<String, String> options, Column... schema) throws IOException {
        String[] k = new String[options.size()], v = new String[options.size()];
        int i = 0;
        for (Map.Entry<String, String> e : options.entrySet()) {
            k[i] = e.getKey();
            v[i++] = e.getValue();
        }
        Column[] s = schema.clone();
        Native.prepare(dir, k, v, Column.names(s), Column.kinds(s), Column.elems(s));
        return new BatchWrite(dir, k, v, s);
    }

    /** What each task needs, serializable like Spark's DataWriterFactory. */
    public WriterFactory createWriterFactory() { return new WriterFactory(dir, keys, values, schema); }

    /**
     * Merges the tasks' messages, one per partition (a speculative loser's or a failed attempt's
     * must not be among them), checks their shards and cross-task duplicates, then writes the
     * index (generate_index) and dataset_manifest.json last. Shards no message names are removed.
     * A SafetensorsException whose rule is "io.durable" means the dataset was published but the
     * folder's final fsync failed (it may not survive a crash); any other failure published nothing.
     */
    public Summary commit(byte[][] messages) throws IOException {
        long[] s = Native.commit(dir, keys, values, messages);
        return new Summary(s[0], s[1], s[2], s[3]);
    }

    /** Removes the shards named in committed messages; nothing is published. A message naming a
     *  shard of the published dataset (after the commit) is refused: rule "dataset.published". */
    public void abort(byte[][] messages) throws IOException { Native.abort(dir, messages); }
    /** Drops these tasks' output while the job goes on (a speculative attempt that lost, the first
     *  attempt of a retried task): their shards go, the job keeps its folder. */
    public void discard(byte[][] messages) throws IOException { Native.discard(dir, messages); }

    public String dir() { return dir; }

    /** What a dataset commit published. */
    public static final class Summary {
        public final long shards, samples, bytes, tensors;
        Summary(long shards, long samples, long bytes, long tensors) {
            this.shards = shards;
            this.samples = samples;
            this.bytes = bytes;
            this.tensors = tensors;
        }
        @Override
        public String toString() {
            return shards + " shards, " + samples + " samples, " + bytes + " bytes, " + tensors + " tensors";
        }
    }
}
