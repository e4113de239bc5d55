package io.safetensors.spark.jni;

import java.lang.ref.Cleaner;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.function.LongConsumer;

/**
 * One native object (a task writer, a file, a dataset). close() frees it: that is the contract.
 * The Cleaner is only a safety net for a forgotten close(): it frees the object once its owner
 * and every buffer handed out over its memory are unreachable, never earlier (a buffer over
 * unmapped memory would crash the JVM). close() must not race with other calls on the owner.
 */
final class NativeRef {
    private static final Cleaner CLEANER = Cleaner.create();

    private final LongConsumer free;
    private final Cleaner.Cleanable ownerGone;
    private volatile long address;  // 0 once freed
    private int users = 1;          // the owner, plus each buffer handed out (guarded by this)

    /** Takes address; if registering fails, frees it before throwing. */
    NativeRef(Object owner, long address, LongConsumer free) {
        this.free = free;
        this.address = address;
        try {
            ownerGone = CLEANER.register(owner, this::release);  // the action must not reach owner
        } catch (Throwable t) {
            free.accept(address);
            throw t;
        }
    }

    /** The address; IllegalStateException after close(). */
    long get(String what) {
        long a = address;
        if (a == 0) throw new IllegalStateException(what + " is closed");
        return a;
    }

    /** Keeps the native object alive while b (or any view of it) is reachable. */
    ByteBuffer track(ByteBuffer b) {
        if (b == null) return null;
        synchronized (this) { users++; }
        CLEANER.register(b, this::release);
        return b.asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);  // views keep b reachable
    }

    void close() {
        long a;
        synchronized (this) { a = address; address = 0; }
        if (a != 0) free.accept(a);
        ownerGone.clean();  // runs release() once: a no-op now
    }

    private void release() {
        long a = 0;
        synchronized (this) {
            if (--users == 0) { a = address; address = 0; }
        }
        if (a != 0) free.accept(a);
    }
}
