/* Runs a fuzz target's LLVMFuzzerTestOneInput over files, without libFuzzer: link it with one
   fuzz/fuzz_*.c (built with ASan + UBSan) and pass files or folders (read one level deep, names
   starting with '.' skipped). Each input is copied into a buffer of exactly its size, so an
   out-of-bounds read is caught. Prints the count; exits 1 if a path cannot be read or nothing was
   run. A broken invariant aborts inside the target, as under libFuzzer. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
    FILE *fp = fopen(path, "rb");
    uint8_t *buf;
    long len;
    size_t got;
    if (!fp) { fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno)); return -1; }
    if (fseek(fp, 0, SEEK_END) != 0 || (len = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET) != 0) {
        fprintf(stderr, "replay: cannot size %s\n", path);
        fclose(fp);
        return -1;
    }
    buf = (uint8_t *)malloc(len ? (size_t)len : 1);
    if (!buf) { fprintf(stderr, "replay: out of memory for %s\n", path); fclose(fp); return -1; }
    got = fread(buf, 1, (size_t)len, fp);
    fclose(fp);
    if (got != (size_t)len) { fprintf(stderr, "replay: short read on %s\n", path); free(buf); return -1; }
    if (getenv("REPLAY_VERBOSE")) fprintf(stderr, "replay: %s (%ld bytes)\n", path, len);
    LLVMFuzzerTestOneInput(buf, (size_t)len);
    free(buf);
    return 0;
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Files of a folder in name order, so runs are reproducible. */
static int run_dir(const char *dir, size_t *count) {
    DIR *d = opendir(dir);
    struct dirent *ent;
    char **names = NULL;
    size_t n = 0, cap = 0, i;
    int bad = 0;
    if (!d) { fprintf(stderr, "replay: cannot open folder %s: %s\n", dir, strerror(errno)); return -1; }
    while ((ent = readdir(d)) != NULL) {
        if (ent->d_name[0] == '.') continue;
        if (n == cap) {
            char **nn = (char **)realloc(names, (cap = cap ? cap * 2 : 64) * sizeof *names);
            if (!nn) { bad = -1; break; }
            names = nn;
        }
        names[n] = (char *)malloc(strlen(dir) + strlen(ent->d_name) + 2);
        if (!names[n]) { bad = -1; break; }
        sprintf(names[n], "%s/%s", dir, ent->d_name);
        n++;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_names);
    for (i = 0; i < n; i++) {
        struct stat st;
        if (!bad && stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
            if (run_file(names[i]) != 0) bad = -1;
            else (*count)++;
        }
        free(names[i]);
    }
    free(names);
    return bad;
}

int main(int argc, char **argv) {
    size_t count = 0;
    int i, bad = 0;
    for (i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) { fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno)); bad = 1; continue; }
        if (S_ISDIR(st.st_mode)) { if (run_dir(argv[i], &count) != 0) bad = 1; }
        else if (run_file(argv[i]) != 0) bad = 1;
        else count++;
    }
    printf("replay: %lu inputs ran without a finding\n", (unsigned long)count);
    return bad || count == 0;
}
