package io.safetensors.spark.jni;

import java.io.ObjectInputStream;
import java.nio.file.Files;
import java.nio.file.Paths;

/**
 * A task in its own JVM, as on a Spark executor: the WriterFactory arrives serialized, the commit
 * message leaves as bytes. usage: TaskProcess FACTORY_FILE PARTITION TASK_ID ROWS MESSAGE_FILE
 */
public final class TaskProcess {
    private TaskProcess() {}

    public static void main(String[] a) throws Exception {
        WriterFactory factory;
        try (ObjectInputStream in = new ObjectInputStream(Files.newInputStream(Paths.get(a[0])))) {
            factory = (WriterFactory) in.readObject();
        }
        int partition = Integer.parseInt(a[1]);
        try (TaskWriter w = factory.createWriter(partition, Long.parseLong(a[2]))) {
            Rows.writeKv(w, partition, Integer.parseInt(a[3]), -1);
            Files.write(Paths.get(a[4]), w.commit());
        }
    }
}
