#!/bin/sh
# Compiles and runs the ```java block of README.md's "From the JVM (Spark)" section, so the README's
# example stays true: its imports go on top, the rest becomes main() after the few variables it
# takes as given (a partition, a task id, a direct buffer, the messages array).
# usage: readme_example.sh README WORKDIR JAVAC JAVA CLASSES LIBDIR
set -eu
readme=$1 w=$2 javac=$3 java=$4 classes=$5 lib=$6
awk '/^## From the JVM/ { s = 1; next } s && /^```java/ { on = 1; next } on && /^```/ { exit } on' "$readme" > "$w/body"
[ -s "$w/body" ] || { echo "readme example: no \`\`\`java block after '## From the JVM (Spark)' in $readme"; exit 1; }
mkdir -p "$w/readme"
{
    echo 'import java.nio.ByteBuffer;'
    echo 'import java.util.Map;'
    grep '^import' "$w/body"
    echo 'public final class ReadmeExample {'
    echo '    public static void main(String[] args) throws Exception {'
    echo '        int partitionId = 0;'
    echo '        long taskId = 1;'
    echo '        ByteBuffer directBuffer = ByteBuffer.allocateDirect(3 * 224 * 224);'
    echo '        byte[][] messages = new byte[1][];'
    grep -v '^import' "$w/body"
    echo '        System.out.println("README example (From the JVM): ran, " + new java.io.File("out").list().length + " files in out/");'
    echo '    }'
    echo '}'
} > "$w/readme/ReadmeExample.java"
"$javac" -Xlint:all -Werror -cp "$classes" -d "$w/readme" "$w/readme/ReadmeExample.java"
cd "$w/readme"
"$java" -Xcheck:jni -Djava.library.path="$lib" -cp "$classes:." ReadmeExample > log 2>&1 || { cat log; exit 1; }
cat log
if grep -i -E 'warning|fatal error' log > /dev/null; then echo "readme example: -Xcheck:jni reported JNI misuse"; exit 1; fi
