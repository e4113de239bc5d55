package io.safetensors.spark.jni;

import java.io.IOException;
import java.lang.reflect.Array;
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
    // the row as sts_jni.c reads it, in arrays no caller can change during the native call
    private final Object[] objs;  // per cell: the String, the Tensor's buffer or byte[], the array
    private long[] meta = new long[16];  // the row's numbers (see sts_jni.c, CELLS)

    TaskWriter(long handle, int partitionId, long taskId, Column[] schema) {
        this.ref = new NativeRef(this, handle, Native::taskClose);
        this.partitionId = partitionId;
        this.taskId = taskId;
        this.schema = schema;
        this.objs = new Object[schema.length];
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
        int n = 0;
        try {
            for (int i = 0; i < cells.length; i++) {
                Object c = schema[i].check(cells[i]);
                Tensor t = c instanceof Tensor ? (Tensor) c : null;
                int need = n + (t != null ? 5 + t.shape.length : 1);
                if (need > meta.length) meta = Arrays.copyOf(meta, 2 * need);
                if (t != null) {
                    objs[i] = t.data;
                    n = t.describe(meta, n);
                } else {
                    objs[i] = c;
                    if (!(c instanceof String)) meta[n++] = Array.getLength(c);  // a numeric array
                }
            }
            Native.taskWrite(h, objs, meta, n);
        } finally {
            Arrays.fill(objs, null);  // keep no reference to the caller's row
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
