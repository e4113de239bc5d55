package io.safetensors.spark.jni;

import java.io.IOException;
import java.io.Serializable;

/** Made by the driver, serialized to executors (Spark's DataWriterFactory); makes task writers. */
public final class WriterFactory implements Serializable {
    private static final long serialVersionUID = 1L;
    private final String dir;
    private final String[] keys, values;
    private final Column[] schema;

    WriterFactory(String dir, String[] keys, String[] values, Column[] schema) {
        this.dir = dir;
        this.keys = keys;
        this.values = values;
        this.schema = schema;
    }

    /**
     * A writer for one attempt of one partition (Spark's createWriter(partitionId, taskId)). Its
     * files are named part-{partitionId}-{shard}-{uuid}: the uuid is new per writer, so attempts
     * of the same partition never collide.
     */
    public TaskWriter createWriter(int partitionId, long taskId) throws IOException {
        long h = Native.taskOpen(dir, keys, values, Column.names(schema), Column.kinds(schema), Column.elems(schema),
                                 partitionId);
        return new TaskWriter(h, partitionId, taskId, schema);
    }
}
