package io.safetensors.spark.jni;

import java.io.IOException;
import java.util.Arrays;

/**
 * One task attempt's writer (Spark's DataWriter): write rows, then commit() for the message, or
 * abort(); always close(). Files stay hidden until commit; abort and an uncommitted close remove
 * them. One thread at a time.
 */
public final class TaskWriter implements AutoCloseable {
    private final NativeRef ref;
    private final int partitionId;
    private final long taskId;
    private final Column[] schema;
    private final Object[] row;  // the checked cells: an array no caller can change during the native call

    TaskWriter(long handle, int partitionId, long taskId, Column[] schema) {
        this.ref = new NativeRef(this, handle, Native::taskClose);
        this.partitionId = partitionId;
        this.taskId = taskId;
        this.schema = schema;
        this.row = new Object[schema.length];
    }

    /**
     * One row, a cell per schema column: a String (the key), a {@link Tensor}, or a float[],
     * double[], int[], long[], short[] or byte[] matching the column. Arrays are pinned during
     * the call (GetPrimitiveArrayCritical: the JVM's GC waits meanwhile), never copied on the
     * heap; the writer keeps a copy of what it needs, so the cells and their buffers may be
     * reused once write returns (as Spark reuses its rows). A rejected row (SafetensorsException:
     * SCHEMA, DUPLICATE_KEY; IllegalArgumentException: a wrong cell) changes nothing; an
     * IOException is final for this writer.
     */
    public void write(Object... cells) throws IOException {
        long h = ref.get("the task writer");
        if (cells.length != schema.length)
            throw new IllegalArgumentException("a row has " + schema.length + " cells, got " + cells.length);
        try {
            for (int i = 0; i < cells.length; i++) row[i] = schema[i].check(cells[i]);
            Native.taskWrite(h, row);
        } finally {
            Arrays.fill(row, null);  // keep no reference to the caller's row
        }
    }

    /** Seals and publishes this attempt's files; returns the commit message (JSON bytes) for the driver. */
    public byte[] commit() throws IOException { return Native.taskCommit(ref.get("the task writer")); }

    /** Removes this attempt's files (unless committed) and frees the writer. */
    public void abort() { ref.close(); }

    /** Frees the writer; an uncommitted writer is aborted. Idempotent. */
    @Override
    public void close() { ref.close(); }

    public int partitionId() { return partitionId; }
    public long taskId() { return taskId; }
}
