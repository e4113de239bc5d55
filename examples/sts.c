/* sts: the safetensors_spark.h command-line tool.
   Exit codes: 0 success, 1 invalid input (a file fails validation, a key is missing, a dataset is
   inconsistent, an I/O error), 2 usage error. Every command answers --help. */
#define _XOPEN_SOURCE 700           /* POSIX 2008 with realpath, before any system header */
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#include "npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>
#include <signal.h>
#include <poll.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#define EXIT_INVALID 1
#define EXIT_USAGE 2

/* ---- small helpers ---------------------------------------------------------------------------- */
static const char *prog_cmd = "sts";

static int usage_error(const char *fmt, const char *what) {
    fprintf(stderr, "%s: ", prog_cmd);
    fprintf(stderr, fmt, what);
    fprintf(stderr, "\n(try: %s --help)\n", prog_cmd);
    return EXIT_USAGE;
}
static int fail(const sts_error *e, const char *what) {
    fprintf(stderr, "%s: %s: %s: %s\n", prog_cmd, what, sts_result_name(e->code), e->message);
    return EXIT_INVALID;
}
/* Quote a (pointer, length) name for output: escapes control characters and quotes. Returns the
   columns printed (a UTF-8 character counts one). */
static size_t put_name(FILE *o, const char *s, size_t n, int json) {
    size_t i, w = 0;
    if (json) fputc('"', o), w++;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' && json) fputs("\\\"", o), w += 2;
        else if (c == '\\' && json) fputs("\\\\", o), w += 2;
        else if (c < 0x20 || c == 0x7f) fprintf(o, "\\u%04x", c), w += 6;
        else { fputc(c, o); w += (c & 0xC0) != 0x80; }
    }
    if (json) fputc('"', o), w++;
    return w;
}
static void put_shape(FILE *o, const uint64_t *d, uint32_t rank) {
    uint32_t i;
    fputc('[', o);
    for (i = 0; i < rank; i++) fprintf(o, i ? ", %llu" : "%llu", (unsigned long long)d[i]);
    fputc(']', o);
}
static int strcasecmp_ascii(const char *a, const char *b) {  /* 1 when equal ignoring ASCII case */
    while (*a && *b) {
        int x = *a >= 'A' && *a <= 'Z' ? *a + 32 : *a, y = *b >= 'A' && *b <= 'Z' ? *b + 32 : *b;
        if (x != y) return 0;
        a++, b++;
    }
    return !*a && !*b;
}
static int parse_u64(const char *s, uint64_t *v) {
    char *end;
    unsigned long long x;
    if (!s || !*s || *s == '-') return 0;
    x = strtoull(s, &end, 10);
    if (*end) return 0;
    *v = (uint64_t)x;
    return 1;
}
static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}
static int out_of_memory(void) {
    fprintf(stderr, "%s: out of memory\n", prog_cmd);
    return EXIT_INVALID;
}
/* dir + "/" + name, allocated: paths are never cut. NULL when out of memory. */
static char *path_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = (char *)malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}
/* A growing string (no fixed buffers): oom is set, and further appends ignored, when memory runs out. */
typedef struct sbuf { char *p; size_t n, cap; int oom; } sbuf;
static void sb_add(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        char *q;
        while (cap < b->n + n + 1) cap *= 2;
        if (!(q = (char *)realloc(b->p, cap))) { b->oom = 1; return; }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
static void sb_str(sbuf *b, const char *s) { sb_add(b, s, strlen(s)); }
static void sb_u64(sbuf *b, uint64_t v) {
    char t[24];
    sb_str(b, (snprintf(t, sizeof t, "%llu", (unsigned long long)v), t));
}
static void sb_json_body(sbuf *b, const char *s) {  /* a JSON string's body: quotes, backslashes, controls escaped */
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char t[8];
        if (c == '"') sb_str(b, "\\\"");
        else if (c == '\\') sb_str(b, "\\\\");
        else if (c < 0x20) sb_str(b, (snprintf(t, sizeof t, "\\u%04x", c), t));
        else sb_add(b, (const char *)&c, 1);
    }
}

/* ---- inputs and outputs --------------------------------------------------------------------------
   Every file a command writes goes to a temporary beside it (same folder, hidden name), is fsynced
   and renamed over the target only when complete; on failure (or a signal) the temporary goes and
   the target is as it was. A target that is one of the command's inputs (same device and inode:
   a dataset's shards, manifest and index included) is refused before anything is written, and so
   is one that exists but is not a regular file. "-" is standard output, which gets no binary while
   it is a terminal unless the command was given --force-tty. */
typedef struct file_id { dev_t dev; ino_t ino; char *path; } file_id;
typedef struct input_set { file_id *v; size_t n, cap; } input_set;

static void inputs_free(input_set *s) {
    size_t i;
    for (i = 0; i < s->n; i++) free(s->v[i].path);
    free(s->v);
    memset(s, 0, sizeof *s);
}
/* Records path as an input when it exists (stat follows links: a link to an input is that input).
   0, or -1 when out of memory. */
static int inputs_add(input_set *s, const char *path) {
    struct stat st;
    size_t len = strlen(path);
    if (stat(path, &st) != 0) return 0;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 8;
        file_id *v = (file_id *)realloc(s->v, cap * sizeof *v);
        if (!v) return -1;
        s->v = v;
        s->cap = cap;
    }
    if (!(s->v[s->n].path = (char *)malloc(len + 1))) return -1;
    memcpy(s->v[s->n].path, path, len + 1);
    s->v[s->n].dev = st.st_dev;
    s->v[s->n].ino = st.st_ino;
    s->n++;
    return 0;
}
/* A dataset's inputs: a single file, or the folder's manifest, index and every shard it reads. */
static int inputs_add_dataset(input_set *s, const char *path, const sts_dataset *ds) {
    static const char *const meta[] = { "dataset_manifest.json", "_tensor_index.json", "_tensor_index.csv" };
    size_t i, n = sts_dataset_describe(ds).files;
    if (!is_dir(path)) return inputs_add(s, path);
    for (i = 0; i < 3 + n; i++) {
        char *p = path_join(path, i < 3 ? meta[i] : sts_dataset_file(ds, i - 3));
        int r = p ? inputs_add(s, p) : -1;
        free(p);
        if (r) return r;
    }
    return 0;
}
static const file_id *inputs_match(const input_set *s, const struct stat *st) {
    size_t i;
    for (i = 0; s && i < s->n; i++)
        if (s->v[i].dev == st->st_dev && s->v[i].ino == st->st_ino) return &s->v[i];
    return NULL;
}

static char *volatile out_live_tmp;  /* the temporary being written, for the signal handler */
static void out_on_signal(int sig) {
    char *t = out_live_tmp;
    if (t) unlink(t);
    signal(sig, SIG_DFL);
    raise(sig);
}

typedef struct out_file {
    const char *name;   /* as given, for messages */
    char *final;        /* what the rename replaces: a symbolic link's target, else NULL (name) */
    char *tmp;          /* the temporary; NULL for standard output */
    int fd;
    int err;            /* the first write error (errno) */
} out_file;

/* Refuses target when it exists and is not a regular file, or is one of the inputs. 0, or an exit
   code once the reason is printed. *st_out (when given) gets the target's status, *exists whether
   there is one. Used by every command that writes a file, before it writes anything. */
static int out_check(const char *target, const input_set *in, struct stat *st_out, int *exists, char **resolved) {
    struct stat st;
    const file_id *m;
    *exists = 0;
    if (resolved) *resolved = NULL;
    if (lstat(target, &st) != 0) {
        if (errno == ENOENT) return 0;  /* a new file (a missing folder is reported when the temporary is created) */
        fprintf(stderr, "%s: cannot use %s: %s\n", prog_cmd, target, strerror(errno));
        return EXIT_INVALID;
    }
    if (S_ISLNK(st.st_mode)) {  /* write beside the link's target and replace that file, keeping the link */
        if (stat(target, &st) != 0) {
            fprintf(stderr, "%s: %s is a symbolic link to nothing (%s): give the file to write itself\n", prog_cmd, target, strerror(errno));
            return EXIT_INVALID;
        }
        if (resolved && S_ISREG(st.st_mode) && !(*resolved = realpath(target, NULL))) {
            fprintf(stderr, "%s: cannot resolve %s: %s\n", prog_cmd, target, strerror(errno));
            return EXIT_INVALID;
        }
    }
    *exists = 1;
    if (!S_ISREG(st.st_mode)) {
        fprintf(stderr, "%s: %s is %s, not a regular file: nothing written (give a file, or -o - and redirect standard output)\n",
                prog_cmd, target, npy_file_kind(st.st_mode));
        if (resolved) { free(*resolved); *resolved = NULL; }
        return EXIT_INVALID;
    }
    if ((m = inputs_match(in, &st)) != NULL) {
        if (strcmp(m->path, target) == 0) fprintf(stderr, "%s: %s is an input of this command: refused, nothing written\n", prog_cmd, target);
        else fprintf(stderr, "%s: %s is the same file as the input %s: refused, nothing written\n", prog_cmd, target, m->path);
        if (resolved) { free(*resolved); *resolved = NULL; }
        return EXIT_INVALID;
    }
    if (st_out) *st_out = st;
    return 0;
}
/* Standard output for binary data: refused while it is a terminal unless force_tty. */
static int out_stdout_ok(int force_tty, const char *what) {
    if (!force_tty && isatty(1)) {
        fprintf(stderr, "%s: standard output is a terminal: %s not written there (redirect it, give -o FILE, or add --force-tty)\n",
                prog_cmd, what);
        return 0;
    }
    return 1;
}
/* Opens an output: "-" is standard output (see out_stdout_ok); any other target is checked with
   out_check and gets a temporary beside it. 0, or an exit code once the reason is printed;
   nothing is created then. */
static int out_open(out_file *o, const char *target, const input_set *in, int force_tty, const char *what) {
    static int handlers;
    struct stat st;
    const char *fin, *base;
    size_t dir_len, cap;
    int exists, code, tries;
    memset(o, 0, sizeof *o);
    o->name = target;
    o->fd = -1;
    if (strcmp(target, "-") == 0) {
        if (!out_stdout_ok(force_tty, what)) return EXIT_USAGE;
        o->fd = 1;
        return 0;
    }
    if ((code = out_check(target, in, &st, &exists, &o->final)) != 0) return code;
    fin = o->final ? o->final : target;
    base = strrchr(fin, '/') ? strrchr(fin, '/') + 1 : fin;
    if (!*base) {
        fprintf(stderr, "%s: %s names a folder, not a file\n", prog_cmd, target);
        free(o->final);
        return EXIT_INVALID;
    }
    dir_len = (size_t)(base - fin);
    cap = strlen(fin) + 64;
    if (!(o->tmp = (char *)malloc(cap))) { free(o->final); return out_of_memory(); }
    if (!handlers) {
        signal(SIGINT, out_on_signal);
        signal(SIGTERM, out_on_signal);
        signal(SIGHUP, out_on_signal);
        handlers = 1;
    }
    for (tries = 0; tries < 100; tries++) {  /* ".<name>.sts-<pid>-<n>": hidden, and never a dataset writer's temporary */
        snprintf(o->tmp, cap, "%.*s.%s.sts-%lx-%lx", (int)dir_len, fin, base, (unsigned long)getpid(),
                 (unsigned long)tries + ((unsigned long)time(NULL) & 0xffff) * 100);
        do o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, exists ? 0600 : 0666); while (o->fd < 0 && errno == EINTR);
        if (o->fd >= 0 || errno != EEXIST) break;
    }
    if (o->fd < 0) {
        fprintf(stderr, "%s: cannot create a temporary beside %s: %s (nothing written)\n", prog_cmd, target, strerror(errno));
        free(o->tmp);
        free(o->final);
        o->tmp = o->final = NULL;
        return EXIT_INVALID;
    }
    out_live_tmp = o->tmp;
    if (exists && fchmod(o->fd, st.st_mode & 0777) != 0) o->err = errno;  /* the replaced file's permissions */
    return 0;
}
static void out_write(out_file *o, const void *p, size_t n) {
    const char *c = (const char *)p;
    while (n && !o->err) {
        ssize_t k = write(o->fd, c, n > ((size_t)1 << 30) ? (size_t)1 << 30 : n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) { o->err = k < 0 ? errno : EIO; break; }
        c += k;
        n -= (size_t)k;
    }
}
/* Removes the temporary; the target is untouched. */
static void out_abort(out_file *o) {
    if (o->tmp) {
        if (o->fd >= 0) close(o->fd);
        out_live_tmp = NULL;
        unlink(o->tmp);
    }
    free(o->tmp);
    free(o->final);
    memset(o, 0, sizeof *o);
    o->fd = -1;
}
static int fsync_folder_of(const char *path) {  /* 0 or an errno; file systems that cannot sync folders are fine */
    const char *slash = strrchr(path, '/');
    size_t len = !slash || slash == path ? 1 : (size_t)(slash - path);
    char *dir = (char *)malloc(len + 1);
    int fd, e = 0;
    if (!dir) return ENOMEM;
    memcpy(dir, slash ? path : ".", len);  /* "dir", "/" or "." */
    dir[len] = 0;
    do fd = open(dir, O_RDONLY | O_CLOEXEC); while (fd < 0 && errno == EINTR);
    free(dir);
    if (fd < 0) return errno;
    if (fsync(fd) != 0 && errno != EINVAL && errno != EBADF) e = errno;
    close(fd);
    return e;
}
/* Completes an output: fsync, close, rename over the target, fsync of its folder. On failure the
   temporary is removed and the target is as it was. 0, or EXIT_INVALID once the reason is printed. */
static int out_commit(out_file *o) {
    const char *fin = o->final ? o->final : o->name;
    int e = o->err;
    if (!o->tmp) {  /* standard output */
        if (e) fprintf(stderr, "%s: cannot write standard output: %s\n", prog_cmd, strerror(e));
        return e ? EXIT_INVALID : 0;
    }
    if (!e && fsync(o->fd) != 0) e = errno;
    if (close(o->fd) != 0 && !e) e = errno;
    o->fd = -1;
    if (!e && rename(o->tmp, fin) != 0) e = errno;
    if (e) {
        fprintf(stderr, "%s: cannot write %s: %s (nothing replaced)\n", prog_cmd, o->name, strerror(e));
        out_abort(o);
        return EXIT_INVALID;
    }
    out_live_tmp = NULL;
    e = fsync_folder_of(fin);
    free(o->tmp);
    free(o->final);
    o->tmp = o->final = NULL;
    if (e) { fprintf(stderr, "%s: %s written, but its folder could not be synced: %s\n", prog_cmd, o->name, strerror(e)); return EXIT_INVALID; }
    return 0;
}

/* Reads the whole of an input the CLI opens itself (not through the library). "-" and /dev/stdin
   are standard input, read as a stream (a pipe, a terminal or a file); any other path must be a
   regular file, opened without blocking so that a FIFO is refused at once instead of waited on.
   opt names the option for messages. 0, or EXIT_INVALID once the reason is printed. */
static int read_whole(const char *opt, const char *path, input_set *in, char **text, size_t *len) {
    int fd = 0, stdin_ = strcmp(path, "-") == 0 || strcmp(path, "/dev/stdin") == 0;
    size_t n = 0, cap = 4096;
    char *buf = NULL, *msg = NULL;
    struct stat st;
    *text = NULL;
    *len = 0;
    if (!stdin_) {
        if ((fd = npy_open_regular(path, "a text file", &st, &msg)) < 0) {
            if (msg) fprintf(stderr, "%s: %s %s\n", prog_cmd, opt, msg);
            free(msg);
            return msg ? EXIT_INVALID : out_of_memory();
        }
        if (in && inputs_add(in, path)) { close(fd); return out_of_memory(); }
        if ((uint64_t)st.st_size + 1 > cap) cap = (size_t)st.st_size + 1;
    }
    for (;;) {
        ssize_t k;
        if (!buf || n + 1 >= cap) {
            size_t nc = buf ? 2 * cap : cap;
            char *b = (char *)realloc(buf, nc);
            if (!b) { free(buf); if (!stdin_) close(fd); return out_of_memory(); }
            buf = b;
            cap = nc;
        }
        k = read(fd, buf + n, cap - n - 1);
        if (k > 0) { n += (size_t)k; continue; }
        if (k == 0) break;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {  /* a non-blocking standard input: wait for data */
            struct pollfd pf;
            pf.fd = fd; pf.events = POLLIN; pf.revents = 0;
            if (poll(&pf, 1, -1) >= 0 || errno == EINTR) continue;
        }
        fprintf(stderr, "%s: %s %s: cannot read %s: %s\n", prog_cmd, opt, path, stdin_ ? "standard input" : "it", strerror(errno));
        free(buf);
        if (!stdin_) close(fd);
        return EXIT_INVALID;
    }
    if (!stdin_) close(fd);
    buf[n] = 0;
    *text = buf;
    *len = n;
    return 0;
}

/* Opens a dataset (a folder or a file) with an inferred schema. An unusable tensor index (corrupt,
   unreadable) is not the end: the dataset is opened again from the shards' headers, *index_why
   gets the reason and the caller says so. */
static sts_result open_dataset(const char *path, sts_dataset **ds, sts_error *index_why, int *index_unusable, sts_error *e) {
    sts_read_config rc;
    sts_result r;
    memset(&rc, 0, sizeof rc);
    rc.infer_schema = 1;
    *index_unusable = 0;
    r = sts_dataset_open(path, &rc, NULL, ds, e);
    if (r != STS_OK && e->rule == STS_RULE_DATASET_INDEX) {
        *index_why = *e;
        rc.no_index = 1;
        if ((r = sts_dataset_open(path, &rc, NULL, ds, e)) == STS_OK) *index_unusable = 1;
        else *e = *index_why;
    }
    return r;
}

/* ---- sources: the archive ------------------------------------------------------------------------
   verify, inspect, dump and get read any source the archive (layer 10) opens: a safetensors file, a
   sharded checkpoint (its index file, or the folder holding it), one of our datasets, a .npy file,
   and whatever providers come later. Two kinds of source keep the reader they had before the
   archive, so that what sts prints for them stays as it was: a safetensors file, whose header size
   and data offsets only the file reader knows (inspect) and whose messages get phrases as the
   dataset reader does; and a folder of ours (one holding dataset_manifest.json or _tensor_index.json,
   whatever state they are in, or one that no provider claims, such as a plain folder of safetensors
   files), whose summary, key lookups, hints and verdicts are the dataset reader's. For a file, the
   probe decides, reading its first 4 KiB. */
typedef enum reader { READ_ARCHIVE, READ_FILE, READ_DATASET } reader;
static int holds(const char *dir, const char *name) {  /* an entry of that name, of any kind */
    struct stat st;
    char *p = path_join(dir, name);
    int r = p && lstat(p, &st) == 0;
    free(p);
    return r;
}
static reader which_reader(const char *path) {
    sts_input in;
    sts_error e;
    size_t win = (size_t)-1;
    int dir = is_dir(path);
    if (dir && (holds(path, "dataset_manifest.json") || holds(path, "_tensor_index.json"))) return READ_DATASET;
    memset(&in, 0, sizeof in);
    in.path = path;
    /* no provider, or no source: the reader it had before gives its verdict, as before */
    if (sts_probe(NULL, &in, NULL, NULL, 0, &win, &e) != STS_OK || win == (size_t)-1) return dir ? READ_DATASET : READ_FILE;
    if (!dir && strcmp(sts_registry_at(NULL, win)->format, "safetensors") == 0) return READ_FILE;
    return READ_ARCHIVE;
}
static sts_result archive_open(const char *path, const sts_options *o, sts_archive **a, sts_error *e) {
    sts_input in;
    memset(&in, 0, sizeof in);
    in.path = path;
    return sts_archive_open(NULL, &in, o, a, e);
}
static const char *nz(const char *s) { return s ? s : "?"; }  /* the accessors give NULL only for a NULL archive */
static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}
/* n units of `unit` bytes (2, 4 or 8), each byte-reversed in place: big-endian to little-endian. */
static void swap_units(uint8_t *p, size_t n, unsigned unit) {
    size_t i;
    unsigned b;
    for (i = 0; i < n; i++, p += unit)
        for (b = 0; b < unit / 2; b++) { uint8_t x = p[b]; p[b] = p[unit - 1 - b]; p[unit - 1 - b] = x; }
}
static int host_is_big_endian(void) {
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 0;
}
/* A tensor's bytes in little-endian order (what the codecs and the safetensors format use), through
   sts_archive_materialize: a view of the mapping when there is one, else one copy (swapped to the
   host's order by the archive; converted, or a block type decoded, to target unless it is
   STS_DTYPE_COUNT). *owned gets what the caller frees (NULL for a view). */
typedef struct le_factory { void *mem; uint64_t nbytes; } le_factory;
static void *le_allocate(void *user, const sts_tensor_desc *d, const sts_type *type, uint64_t nbytes) {
    le_factory *f = (le_factory *)user;
    (void)d; (void)type;
    if (nbytes > (uint64_t)((size_t)-1 >> 1)) return NULL;
    f->nbytes = nbytes;
    return f->mem = malloc(nbytes ? (size_t)nbytes : 1);
}
static int le_wrap(void *user, const sts_tensor_desc *d, const void *view) { (void)user; (void)d; (void)view; return 1; }
static sts_result tensor_le_bytes(const sts_archive *a, const sts_tensor_desc *d, sts_dtype target, const uint8_t **bytes,
                                  uint8_t **owned, sts_error *e) {
    le_factory lf;
    sts_factory f;
    sts_materialized m;
    sts_materialize_options mo;
    sts_result r;
    unsigned unit;
    memset(&lf, 0, sizeof lf);
    memset(&f, 0, sizeof f);
    f.allocate = le_allocate;
    f.wrap = le_wrap;
    f.user = &lf;
    *bytes = NULL;
    *owned = NULL;
    memset(&mo, 0, sizeof mo);
    mo.convert = target != STS_DTYPE_COUNT;  /* decode a block type (or convert) to target */
    mo.target = target;
    mo.rounding = STS_ROUND_NEAREST_EVEN;
    if ((r = sts_archive_materialize(a, d, &f, &mo, &m, e)) != STS_OK) { free(lf.mem); return r; }
    *bytes = (const uint8_t *)m.data;
    if (!m.wrapped) *owned = (uint8_t *)m.data;
    unit = m.type->swap;
    if (host_is_big_endian() && m.type->plain && unit > 1) {  /* host order is big-endian here: back to little */
        if (m.wrapped) {
            if (!(*owned = (uint8_t *)malloc(m.nbytes ? (size_t)m.nbytes : 1))) {
                e->code = STS_ERR_NOMEM;
                e->rule = STS_RULE_ALLOC;
                e->offset = STS_OFFSET_UNKNOWN;
                snprintf(e->message, sizeof e->message, "%s: out of memory copying tensor bytes", sts_rule_id(STS_RULE_ALLOC));
                return STS_ERR_NOMEM;
            }
            memcpy(*owned, m.data, (size_t)m.nbytes);
            *bytes = *owned;
        }
        swap_units(*owned, (size_t)(m.nbytes / unit), unit);
    }
    return STS_OK;
}

/* ---- verify ----------------------------------------------------------------------------------- */
/* One source: its archive opened (every descriptor touched, so every shard is opened and validated)
   and, with want, file 0's SHA-256 compared. Prints the line; 0 valid, EXIT_INVALID not, EXIT_USAGE
   when --sha256 was given for a source that is not one file. */
static int verify_one(const char *path, const sts_options *o, const uint8_t *want) {
    sts_archive *a;
    sts_error e;
    const sts_tensor_desc *d;
    size_t i, n;
    if (archive_open(path, o, &a, &e) != STS_OK) {
        if (e.rule == STS_RULE_PROBE) {  /* no provider claims it (a folder without an index or a manifest): the
                                            safetensors parser's verdict, as before the archive */
            sts_options ho = *o;
            sts_file *f;
            sts_error fe;
            ho.header_only = 1;
            if (sts_open(path, &ho, &f, &fe) == STS_OK) sts_close(f);
            else e = fe;
        }
        printf("%s\tERR\t%s\t%s\n", path, sts_result_name(e.code), e.message);
        return EXIT_INVALID;
    }
    if (want && (sts_archive_files(a) != 1 || strcmp(nz(sts_archive_file(a, 0)), path) != 0)) {
        if (sts_archive_files(a) != 1)
            fprintf(stderr, "%s: --sha256 applies to one file; %s is a %s archive of %zu files (give --sha256 HEX before each of its files)\n",
                    prog_cmd, path, nz(sts_archive_format(a)), sts_archive_files(a));
        else
            fprintf(stderr, "%s: --sha256 applies to one file; the tensors of %s are in %s (give --sha256 HEX %s)\n",
                    prog_cmd, path, nz(sts_archive_file(a, 0)), nz(sts_archive_file(a, 0)));
        fprintf(stderr, "(try: %s --help)\n", prog_cmd);
        sts_archive_close(a);
        return EXIT_USAGE;
    }
    n = sts_archive_count(a);
    for (i = 0; i < n; i++)
        if (sts_archive_at(a, i, &d, &e) != STS_OK) {
            printf("%s\tERR\t%s\t%s\n", path, sts_result_name(e.code), e.message);
            sts_archive_close(a);
            return EXIT_INVALID;
        }
    if (want) {
        uint8_t got[32];
        char hg[65], hw[65];
        if (sts_archive_file_sha256(a, 0, got, &e) != STS_OK) {
            printf("%s\tERR\t%s\t%s\n", path, sts_result_name(e.code), e.message);
            sts_archive_close(a);
            return EXIT_INVALID;
        }
        if (memcmp(got, want, 32) != 0) {
            sts_sha256_hex(got, hg);
            sts_sha256_hex(want, hw);
            printf("%s\tERR\t%s\t%s: ", path, sts_result_name(STS_ERR_CHECKSUM), sts_rule_id(STS_RULE_SHA256));
            put_name(stdout, path, strlen(path), 1);
            printf(" has SHA-256 %s, not %s\n", hg, hw);
            sts_archive_close(a);
            return EXIT_INVALID;
        }
    }
    printf("%s\tOK\t%zu\n", path, n);
    sts_archive_close(a);
    return 0;
}
static int cmd_verify(int argc, char **argv) {
    sts_options o;
    uint8_t want[32];
    int i, files = 0, bad = 0, opts_done = 0, pending = 0;
    memset(&o, 0, sizeof o);
    for (i = 1; i < argc; i++) {
        if (!opts_done && strcmp(argv[i], "--") == 0) { opts_done = 1; continue; }
        if (!opts_done && strcmp(argv[i], "--strict") == 0) { o.strict = 1; continue; }
        if (!opts_done && strcmp(argv[i], "--sha256") == 0) {  /* for the FILE after it */
            if (pending) return usage_error("%s", "--sha256 HEX is for the FILE after it, and two came before one FILE");
            if (i + 1 >= argc) return usage_error("%s", "--sha256 needs 64 hex digits, then the FILE they are the SHA-256 of");
            if (!sts_sha256_parse_hex(argv[i + 1], strlen(argv[i + 1]), want))
                return usage_error("--sha256 takes a SHA-256 digest, 64 hex digits, got %s", argv[i + 1]);
            pending = 1;
            i++;
            continue;
        }
        if (!opts_done && argv[i][0] == '-' && argv[i][1]) return usage_error("unknown option %s", argv[i]);
        files++;
        pending = 0;
    }
    if (pending) return usage_error("%s", "--sha256 HEX needs the FILE it is the SHA-256 of after it");
    if (!files) return usage_error("%s", "no files given; usage: sts verify [--strict] FILE...");
    opts_done = 0;
    for (i = 1; i < argc; i++) {
        int r;
        if (!opts_done && strcmp(argv[i], "--") == 0) { opts_done = 1; continue; }
        if (!opts_done && strcmp(argv[i], "--sha256") == 0) {
            sts_sha256_parse_hex(argv[i + 1], strlen(argv[i + 1]), want);
            pending = 1;
            i++;
            continue;
        }
        if (!opts_done && argv[i][0] == '-' && argv[i][1]) continue;
        r = verify_one(argv[i], &o, pending ? want : NULL);
        pending = 0;
        if (r == EXIT_USAGE) return r;
        if (r) bad = 1;
    }
    return bad ? EXIT_INVALID : 0;
}

/* ---- rules ------------------------------------------------------------------------------------ */
static int cmd_rules(int argc, char **argv) {
    int i;
    if (argc > 1) return usage_error("unexpected argument %s", argv[1]);
    printf("| rule | result code | reference variant | rule statement |\n|---|---|---|---|\n");
    for (i = 1; i < (int)STS_RULE_COUNT; i++) {
        sts_result r = sts_rule_result((sts_rule)i);
        const char *v = sts_result_variant(r);
        printf("| `%s` | `%s` | %s | %s |\n", sts_rule_id((sts_rule)i), sts_result_name(r), v ? v : "-", sts_rule_text((sts_rule)i));
    }
    return 0;
}

/* ---- inspect ---------------------------------------------------------------------------------- */
/* A shape for a table cell: "[2, 3]", cut with ", ...]" past about 40 characters. */
#define SHAPE_CELL 64
static void shape_cell(char shape[SHAPE_CELL], const uint64_t *dims, uint32_t rank) {
    int n = 0;
    uint32_t d;
    n += snprintf(shape + n, SHAPE_CELL - (size_t)n, "[");
    for (d = 0; d < rank && n < SHAPE_CELL - 24; d++) n += snprintf(shape + n, SHAPE_CELL - (size_t)n, d ? ", %llu" : "%llu", (unsigned long long)dims[d]);
    snprintf(shape + n, SHAPE_CELL - (size_t)n, d < rank ? ", ...]" : "]");
}
static void inspect_file_text(const char *path, const sts_file *f) {
    size_t i;
    printf("%s: %llu bytes, header %llu bytes, %zu tensors\n", path, (unsigned long long)sts_file_size(f),
           (unsigned long long)sts_header_size(f), sts_count(f));
    printf("%-40s %-11s %-18s %12s  %s\n", "name", "dtype", "shape", "bytes", "data_offsets");
    for (i = 0; i < sts_count(f); i++) {
        const sts_tensor *t = sts_at(f, i);
        char shape[SHAPE_CELL];
        size_t w;
        shape_cell(shape, t->shape, t->rank);
        w = put_name(stdout, t->name, t->name_len, 0);
        printf("%*s %-11s %-18s %12llu  [%llu, %llu]\n", w < 40 ? (int)(40 - w) : 0, "", sts_dtype_name(t->dtype), shape,
               (unsigned long long)sts_tensor_nbytes(t), (unsigned long long)t->begin, (unsigned long long)t->end);
    }
    if (sts_has_metadata(f)) {
        printf("metadata:\n");
        for (i = 0; i < sts_metadata_count(f); i++) {
            const sts_kv *kv = sts_metadata_at(f, i);
            printf("  ");
            put_name(stdout, kv->key, kv->key_len, 0);
            printf(" = ");
            put_name(stdout, kv->value, kv->value_len, 0);
            printf("\n");
        }
    }
}
static void inspect_file_json(const sts_file *f) {
    size_t i;
    printf("{\"file_size\": %llu, \"header_size\": %llu, \"tensors\": [", (unsigned long long)sts_file_size(f), (unsigned long long)sts_header_size(f));
    for (i = 0; i < sts_count(f); i++) {
        const sts_tensor *t = sts_at(f, i);
        printf(i ? ",\n  {\"name\": " : "\n  {\"name\": ");
        put_name(stdout, t->name, t->name_len, 1);
        printf(", \"dtype\": \"%s\", \"shape\": ", sts_dtype_name(t->dtype));
        put_shape(stdout, t->shape, t->rank);
        printf(", \"bytes\": %llu, \"data_offsets\": [%llu, %llu]}", (unsigned long long)sts_tensor_nbytes(t), (unsigned long long)t->begin, (unsigned long long)t->end);
    }
    printf("%s], \"metadata\": ", sts_count(f) ? "\n" : "");
    if (!sts_has_metadata(f)) printf("null");
    else {
        printf("{");
        for (i = 0; i < sts_metadata_count(f); i++) {
            const sts_kv *kv = sts_metadata_at(f, i);
            if (i) printf(", ");
            put_name(stdout, kv->key, kv->key_len, 1);
            printf(": ");
            put_name(stdout, kv->value, kv->value_len, 1);
        }
        printf("}");
    }
    printf("}\n");
}
/* A schema shape: a dim of any size (STS_DIM_ANY, -1 in the manifest) is shown as -1. */
static void put_dims(FILE *o, const uint64_t *d, uint32_t rank) {
    uint32_t i;
    fputc('[', o);
    for (i = 0; i < rank; i++) {
        if (i) fputs(", ", o);
        if (d[i] == STS_DIM_ANY) fputs("-1", o);
        else fprintf(o, "%llu", (unsigned long long)d[i]);
    }
    fputc(']', o);
}
static int inspect_dataset(const char *dir, int json) {
    sts_dataset *ds;
    sts_error e, why;
    sts_dataset_info info;
    size_t i, ncols;
    int no_index, from_manifest;
    const char *cols_title;
    if (open_dataset(dir, &ds, &why, &no_index, &e) != STS_OK) return fail(&e, dir);
    info = sts_dataset_describe(ds);
    /* the schema: the manifest's as written (KV mode: its columns, not the per-key tensors), else
       what the reader inferred from the index or the first file */
    from_manifest = info.manifest_columns > 0;
    ncols = from_manifest ? info.manifest_columns : info.columns;
    cols_title = from_manifest ? "columns (the schema of dataset_manifest.json)" : info.has_manifest && info.kv ? "tensors of the first shard" : "columns (the first file's tensors)";
    if (no_index)
        fprintf(stderr, "%s: %s: the tensor index is unusable (%s); showing the shards' headers instead (rebuild it with: sts index %s)\n",
                prog_cmd, dir, why.message, dir);
    if (json) {
        printf("{\"path\": ");
        put_name(stdout, dir, strlen(dir), 1);
        printf(", \"manifest\": %s, \"index\": %s, \"index_stale\": %s, \"index_error\": ",
               info.has_manifest ? "true" : "false", info.has_index ? "true" : "false", info.index_stale ? "true" : "false");
        if (no_index) put_name(stdout, why.message, strlen(why.message), 1);
        else printf("null");
        printf(", \"mode\": \"%s\", \"files\": %zu, ", info.has_manifest ? (info.kv ? "kv" : "batch") : "files", info.files);
        if (info.has_manifest) printf("\"total_samples\": %llu, \"total_bytes\": %llu, ", (unsigned long long)info.total_samples, (unsigned long long)info.total_bytes);
        else printf("\"total_samples\": null, \"total_bytes\": null, ");
        printf("\"schema_from\": \"%s\", \"columns\": [", from_manifest ? "manifest" : info.has_manifest && info.kv ? "first_shard" : "first_file");
        for (i = 0; i < ncols; i++) {
            const sts_view *c = from_manifest ? sts_dataset_manifest_column(ds, i) : sts_dataset_column(ds, i);
            if (i) printf(", ");
            printf("{\"name\": ");
            put_name(stdout, c->key, c->key_len, 1);
            printf(", \"dtype\": \"%s\", \"shape\": ", sts_dtype_name(c->dtype));
            put_dims(stdout, c->shape, c->rank);
            printf("}");
        }
        printf("], \"shards\": [");
    } else {
        printf("%s: %s, %zu file%s", dir, info.has_manifest ? (info.kv ? "KV-mode dataset" : "batch-mode dataset") : "folder of safetensors files",
               info.files, info.files == 1 ? "" : "s");
        if (info.has_manifest) printf(", %llu samples, %llu bytes", (unsigned long long)info.total_samples, (unsigned long long)info.total_bytes);
        if (no_index) printf(", unusable _tensor_index (rebuild it with sts index %s)\n", dir);
        else printf(info.has_index ? ", with _tensor_index\n" : info.index_stale ? ", stale _tensor_index (another dataset_id: rebuild it with sts index)\n" : ", no index\n");
        printf("%s: %zu\n", cols_title, ncols);
        for (i = 0; i < ncols && i < 20; i++) {
            const sts_view *c = from_manifest ? sts_dataset_manifest_column(ds, i) : sts_dataset_column(ds, i);
            printf("  ");
            put_name(stdout, c->key, c->key_len, 0);
            printf("  %s ", sts_dtype_name(c->dtype));
            put_dims(stdout, c->shape, c->rank);
            printf("\n");
        }
        if (ncols > 20) printf("  ... %zu more\n", ncols - 20);
        printf("%-72s %10s %10s %14s\n", "shard", "tensors", "samples", "bytes");
    }
    for (i = 0; i < info.files; i++) {  /* per-shard counts from the headers (8 + N bytes each); samples from the manifest */
        sts_file *f;
        sts_options o;
        const char *name = sts_dataset_file(ds, i);
        uint64_t samples = sts_dataset_file_samples(ds, i);
        char *path = path_join(dir, name);
        sts_result r;
        if (!path) { sts_dataset_close(ds); return out_of_memory(); }
        memset(&o, 0, sizeof o);
        o.header_only = 1;
        r = sts_open(path, &o, &f, &e);
        if (r != STS_OK) { fail(&e, path); free(path); sts_dataset_close(ds); return EXIT_INVALID; }
        free(path);
        if (json) {
            printf("%s{\"shard_path\": ", i ? ", " : "");
            put_name(stdout, name, strlen(name), 1);
            printf(", \"tensors\": %zu, \"samples\": ", sts_count(f));
            if (samples == UINT64_MAX) printf("null");
            else printf("%llu", (unsigned long long)samples);
            printf(", \"bytes\": %llu}", (unsigned long long)sts_file_size(f));
        } else {
            char sm[24];
            size_t w = put_name(stdout, name, strlen(name), 0);
            if (samples == UINT64_MAX) snprintf(sm, sizeof sm, "-");
            else snprintf(sm, sizeof sm, "%llu", (unsigned long long)samples);
            printf("%*s %10zu %10s %14llu\n", w < 72 ? (int)(72 - w) : 0, "", sts_count(f), sm, (unsigned long long)sts_file_size(f));
        }
        sts_close(f);
    }
    if (json) printf("]}\n");
    sts_dataset_close(ds);
    return 0;
}
/* An archive's typed metadata value: JSON (strings quoted, numbers, true/false, arrays; a NaN or an
   infinity is null) or text (the same, arrays cut after 16 items). */
static const char *meta_type_name(sts_meta_type t) {
    switch (t) {
    case STS_META_STRING: return "string";
    case STS_META_UINT: return "uint";
    case STS_META_INT: return "int";
    case STS_META_FLOAT: return "float";
    case STS_META_BOOL: return "bool";
    case STS_META_ARRAY: return "array";
    }
    return "?";
}
static void put_double(FILE *o, double x, int json) {
    char b[32];
    int p;
    if (x != x || x > 1.7976931348623157e308 || x < -1.7976931348623157e308) {
        fputs(json ? "null" : x != x ? "nan" : x > 0 ? "inf" : "-inf", o);
        return;
    }
    for (p = 1; p < 17; p++) {  /* the fewest digits that read back */
        snprintf(b, sizeof b, "%.*g", p, x);
        if (strtod(b, NULL) == x) break;
    }
    if (p == 17) snprintf(b, sizeof b, "%.17g", x);
    fputs(b, o);
    if (!strpbrk(b, ".en")) fputs(".0", o);  /* a float reads as one */
}
static void put_meta_value(FILE *o, const sts_meta *m, int json, int depth) {
    uint64_t k, shown;
    switch (m->type) {
    case STS_META_STRING: put_name(o, m->str, m->str_len, 1); break;
    case STS_META_UINT: fprintf(o, "%llu", (unsigned long long)m->u); break;
    case STS_META_INT: fprintf(o, "%lld", (long long)m->i); break;
    case STS_META_FLOAT: put_double(o, m->f, json); break;
    case STS_META_BOOL: fputs(m->u ? "true" : "false", o); break;
    case STS_META_ARRAY:
        shown = json || m->count <= 16 ? m->count : 16;
        fputc('[', o);
        for (k = 0; k < shown; k++) {
            if (k) fputs(", ", o);
            if (depth < 32) put_meta_value(o, &m->items[k], json, depth + 1);
            else fputs(json ? "null" : "...", o);
        }
        if (shown < m->count) fprintf(o, ", ... %llu items", (unsigned long long)m->count);
        fputc(']', o);
        break;
    }
}
static int inspect_archive(const char *path, int json) {
    sts_archive *a;
    sts_error e;
    const sts_tensor_desc **ds;
    size_t i, n, files;
    uint64_t sum = 0;
    if (archive_open(path, NULL, &a, &e) != STS_OK) return fail(&e, path);
    n = sts_archive_count(a);
    files = sts_archive_files(a);
    if (!(ds = (const sts_tensor_desc **)malloc((n ? n : 1) * sizeof *ds))) { sts_archive_close(a); return out_of_memory(); }
    for (i = 0; i < n; i++) {  /* every descriptor first: a shard that does not open is an error, not half a table */
        if (sts_archive_at(a, i, &ds[i], &e) != STS_OK) { free(ds); sts_archive_close(a); return fail(&e, path); }
        sum += ds[i]->nbytes;
    }
    if (json) {
        printf("{\"path\": ");
        put_name(stdout, path, strlen(path), 1);
        printf(", \"format\": ");
        put_name(stdout, nz(sts_archive_format(a)), strlen(nz(sts_archive_format(a))), 1);
        printf(", \"provider\": ");
        put_name(stdout, nz(sts_archive_provider(a)), strlen(nz(sts_archive_provider(a))), 1);
        printf(", \"version\": %u, \"total_bytes\": %llu, \"files\": [", (unsigned)sts_archive_version(a),
               (unsigned long long)sts_archive_total_bytes(a));
        for (i = 0; i < files; i++) {
            if (i) printf(", ");
            put_name(stdout, nz(sts_archive_file(a, i)), strlen(nz(sts_archive_file(a, i))), 1);
        }
        printf("], \"tensors\": [");
        for (i = 0; i < n; i++) {
            const sts_tensor_desc *d = ds[i];
            printf(i ? ",\n  {\"name\": " : "\n  {\"name\": ");
            put_name(stdout, d->name, d->name_len, 1);
            printf(", \"type\": ");
            put_name(stdout, d->type->name, strlen(d->type->name), 1);
            printf(", \"shape\": ");
            put_shape(stdout, d->shape, d->rank);
            if (d->rank && memcmp(d->shape, d->format_shape, d->rank * sizeof *d->shape) != 0) {
                printf(", \"format_shape\": ");
                put_shape(stdout, d->format_shape, d->rank);
            }
            printf(", \"bytes\": %llu, \"file\": %zu, \"offset\": %llu, \"byte_order\": \"%s\"}", (unsigned long long)d->nbytes,
                   d->file, (unsigned long long)d->offset, d->big_endian ? "big" : "little");
        }
        printf("%s], \"metadata\": {", n ? "\n" : "");
        for (i = 0; i < sts_archive_meta_count(a); i++) {
            const sts_meta *m = sts_archive_meta_at(a, i);
            if (i) printf(", ");
            put_name(stdout, m->key ? m->key : "", m->key ? m->key_len : 0, 1);
            printf(": ");
            put_meta_value(stdout, m, 1, 0);
        }
        printf("}}\n");
    } else {
        printf("%s: %s (provider %s", path, nz(sts_archive_format(a)), nz(sts_archive_provider(a)));
        if (sts_archive_version(a)) printf(", version %u", (unsigned)sts_archive_version(a));
        printf("), %zu tensor%s, %llu bytes", n, n == 1 ? "" : "s", (unsigned long long)sum);
        if (sts_archive_total_bytes(a) != sum) printf(" (the archive says %llu)", (unsigned long long)sts_archive_total_bytes(a));
        printf(", %zu file%s\n", files, files == 1 ? "" : "s");
        printf("%-40s %-11s %-18s %12s  %4s %12s  %s\n", "name", "type", "shape", "bytes", "file", "offset", "order");
        for (i = 0; i < n; i++) {
            const sts_tensor_desc *d = ds[i];
            char shape[SHAPE_CELL];
            size_t w;
            shape_cell(shape, d->shape, d->rank);
            w = put_name(stdout, d->name, d->name_len, 0);
            printf("%*s %-11s %-18s %12llu  %4zu %12llu  %s\n", w < 40 ? (int)(40 - w) : 0, "", d->type->name, shape,
                   (unsigned long long)d->nbytes, d->file, (unsigned long long)d->offset, d->big_endian ? "big-endian" : "little-endian");
        }
        printf("files:\n");
        for (i = 0; i < files; i++) printf("  %4zu  %s\n", i, nz(sts_archive_file(a, i)));
        if (sts_archive_meta_count(a)) {
            printf("metadata:\n");
            for (i = 0; i < sts_archive_meta_count(a); i++) {
                const sts_meta *m = sts_archive_meta_at(a, i);
                printf("  ");
                put_name(stdout, m->key ? m->key : "", m->key ? m->key_len : 0, 0);
                printf(" = ");
                put_meta_value(stdout, m, 0, 0);
                printf(" (%s)\n", meta_type_name(m->type));
            }
        }
    }
    free(ds);
    sts_archive_close(a);
    return 0;
}
/* Every registered provider's verdict on the source, and the winner (the most confident; the first
   registered on a tie). Exit 1 when no provider supports it. */
static int inspect_probe(const char *path, int json) {
    sts_input in;
    sts_error e;
    size_t i, n = sts_registry_count(NULL), win = (size_t)-1;
    sts_probe_result *res = (sts_probe_result *)calloc(n ? n : 1, sizeof *res);
    if (!res) return out_of_memory();
    memset(&in, 0, sizeof in);
    in.path = path;
    if (sts_probe(NULL, &in, NULL, res, n, &win, &e) != STS_OK && e.rule != STS_RULE_PROBE) { free(res); return fail(&e, path); }
    if (json) {
        printf("{\"path\": ");
        put_name(stdout, path, strlen(path), 1);
        printf(", \"providers\": [");
    }
    for (i = 0; i < n; i++) {
        const sts_provider *p = sts_registry_at(NULL, i);
        const char *name = p->name ? p->name : p->format;
        if (json) {
            printf(i ? ",\n  {\"provider\": " : "\n  {\"provider\": ");
            put_name(stdout, name, strlen(name), 1);
            printf(", \"format\": ");
            put_name(stdout, p->format, strlen(p->format), 1);
            printf(", \"supported\": %s, \"confidence\": %d, \"version\": %u, \"reason\": ", res[i].supported ? "true" : "false",
                   res[i].confidence, (unsigned)res[i].version);
            put_name(stdout, res[i].reason, strlen(res[i].reason), 1);
            printf("}");
        } else {
            put_name(stdout, name, strlen(name), 0);
            printf("\t");
            put_name(stdout, p->format, strlen(p->format), 0);
            printf("\t%s\t%d\t%u\t", res[i].supported ? "supported" : "unsupported", res[i].confidence, (unsigned)res[i].version);
            put_name(stdout, res[i].reason, strlen(res[i].reason), 0);
            printf("\n");
        }
    }
    if (json) {
        printf("%s], \"winner\": ", n ? "\n" : "");
        if (win == (size_t)-1) printf("null");
        else {
            const sts_provider *p = sts_registry_at(NULL, win);
            put_name(stdout, p->name ? p->name : p->format, strlen(p->name ? p->name : p->format), 1);
        }
        printf("}\n");
    } else if (win == (size_t)-1) printf("winner\t-\n");
    else {
        const sts_provider *p = sts_registry_at(NULL, win);
        printf("winner\t");
        put_name(stdout, p->name ? p->name : p->format, strlen(p->name ? p->name : p->format), 0);
        printf("\n");
    }
    free(res);
    return win == (size_t)-1 ? EXIT_INVALID : 0;
}
static int cmd_inspect(int argc, char **argv) {
    const char *path = NULL;
    int i, json = 0, probe = 0, opts_done = 0;
    sts_file *f;
    sts_error e;
    for (i = 1; i < argc; i++) {
        if (!opts_done && strcmp(argv[i], "--") == 0) { opts_done = 1; continue; }
        if (!opts_done && strcmp(argv[i], "--json") == 0) json = 1;
        else if (!opts_done && strcmp(argv[i], "--probe") == 0) probe = 1;
        else if (!opts_done && argv[i][0] == '-' && argv[i][1]) return usage_error("unknown option %s", argv[i]);
        else if (path) return usage_error("one FILE or DIR, got another: %s", argv[i]);
        else path = argv[i];
    }
    if (!path) return usage_error("%s", "which FILE or DIR?");
    if (probe) return inspect_probe(path, json);
    switch (which_reader(path)) {
    case READ_DATASET: return inspect_dataset(path, json);
    case READ_ARCHIVE: return inspect_archive(path, json);
    case READ_FILE: break;
    }
    if (sts_open(path, NULL, &f, &e) != STS_OK) return fail(&e, path);
    if (json) inspect_file_json(f);
    else inspect_file_text(path, f);
    sts_close(f);
    return 0;
}

/* ---- dump ------------------------------------------------------------------------------------- */
/* Values printed the way numpy prints arrays: nested brackets, the shortest digits that read back
   to the same value (float32 precision for 16- and 32-bit floats), and "..." past the edge items. */
/* One element as numpy's repr writes it: the fewest significant digits that read back to the same
   value of the tensor's own dtype (F16 and BF16 included), positional for 1e-4 <= |x| < 1e16,
   scientific otherwise; integers exactly (I64/U64 from their bytes, never through double). */
typedef struct dump_ctx { const uint8_t *v; const uint8_t *raw; sts_dtype dt; } dump_ctx;  /* v: F64, little-endian */

static double le_f64(const uint8_t *p) {  /* the codecs write little-endian on every host */
    uint64_t u = 0;
    double d;
    int k;
    for (k = 7; k >= 0; k--) u = u << 8 | p[k];
    memcpy(&d, &u, sizeof d);
    return d;
}
static void f64_le(double d, uint8_t *p) {
    uint64_t u;
    int k;
    memcpy(&u, &d, sizeof u);
    for (k = 0; k < 8; k++, u >>= 8) p[k] = (uint8_t)u;
}

static int same_in_dtype(double a, double b, sts_dtype dt) {
    uint8_t x[8], y[8];
    if (dt == STS_DTYPE_F64) return a == b;
    if (dt == STS_DTYPE_F16 || dt == STS_DTYPE_BF16) {
        uint8_t la[8], lb[8];
        f64_le(a, la);
        f64_le(b, lb);
        sts_convert(x, dt, la, STS_DTYPE_F64, 1, STS_ROUND_NEAREST_EVEN);
        sts_convert(y, dt, lb, STS_DTYPE_F64, 1, STS_ROUND_NEAREST_EVEN);
        return x[0] == y[0] && x[1] == y[1];
    }
    return (float)a == (float)b;  /* F32, and the F8 formats (exact in float) */
}
static void dump_value(const dump_ctx *c, uint64_t i) {
    double x = c->v ? le_f64(c->v + i * 8) : 0, ax = x < 0 ? -x : x;
    char buf[48], out[64], *m, *ex;
    int p, e, o = 0, k, nd;
    if (c->dt == STS_DTYPE_I64 || c->dt == STS_DTYPE_U64) {
        uint64_t u = 0;
        for (k = 7; k >= 0; k--) u = u << 8 | c->raw[i * 8 + (uint64_t)k];
        if (c->dt == STS_DTYPE_I64) printf("%lld", (long long)(int64_t)u);
        else printf("%llu", (unsigned long long)u);
        return;
    }
    if (c->dt == STS_DTYPE_BOOL) { printf(x != 0 ? "True" : "False"); return; }
    if (c->dt == STS_DTYPE_U8 || c->dt == STS_DTYPE_I8 || c->dt == STS_DTYPE_U16 || c->dt == STS_DTYPE_I16 ||
        c->dt == STS_DTYPE_U32 || c->dt == STS_DTYPE_I32) { printf("%.0f", x); return; }
    if (x != x) { printf("nan"); return; }
    if (x > 1.7976931348623157e308 || x < -1.7976931348623157e308) { printf(x > 0 ? "inf" : "-inf"); return; }
    if (x == 0) { printf(1 / x < 0 ? "-0." : "0."); return; }
    for (p = 1; p <= 17; p++) {  /* d.ddde+XX with p significant digits */
        snprintf(buf, sizeof buf, "%.*e", p - 1, x);
        if (same_in_dtype(strtod(buf, NULL), x, c->dt)) break;
    }
    ex = strchr(buf, 'e');
    e = atoi(ex + 1);
    *ex = 0;
    m = buf;
    if (*m == '-') { out[o++] = '-'; m++; }
    {   /* the digits without the point, trailing zeros dropped */
        char dig[24];
        for (nd = 0; *m; m++) if (*m != '.') dig[nd++] = *m;
        while (nd > 1 && dig[nd - 1] == '0') nd--;
        dig[nd] = 0;
        if (ax >= 1e-4 && ax < 1e16) {
            if (e >= 0) {
                for (k = 0; k <= e || k < nd; k++) {
                    if (k == e + 1) out[o++] = '.';
                    out[o++] = k < nd ? dig[k] : '0';
                }
                if (e + 1 >= nd) out[o++] = '.';
            } else {
                out[o++] = '0'; out[o++] = '.';
                for (k = 0; k < -e - 1; k++) out[o++] = '0';
                for (k = 0; k < nd; k++) out[o++] = dig[k];
            }
            out[o] = 0;
        } else {
            out[o++] = dig[0];
            if (nd > 1) { out[o++] = '.'; for (k = 1; k < nd; k++) out[o++] = dig[k]; }
            snprintf(out + o, sizeof out - (size_t)o, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
        }
    }
    printf("%s", out);
}
static void dump_rec(const dump_ctx *c, const uint64_t *shape, uint32_t rank, uint32_t d, uint64_t base, uint64_t edge, int indent) {
    uint64_t i, n = shape[d], stride = 1;
    uint32_t k;
    for (k = d + 1; k < rank; k++) stride *= shape[k];
    printf("[");
    for (i = 0; i < n; i++) {
        if (n > 2 * edge && i == edge) { printf(d + 1 == rank ? "..., " : "...,\n%*s", d + 1 == rank ? 0 : indent + 1, ""); i = n - edge; }
        if (d + 1 == rank) dump_value(c, base + i);
        else dump_rec(c, shape, rank, d + 1, base + i * stride, edge, indent + 1);
        if (i + 1 < n) printf(d + 1 == rank ? ", " : ",\n%*s", d + 1 == rank ? 0 : indent + 1, "");
    }
    printf("]");
}
/* One tensor of the archive: its name, type and shape, then its values decoded from its little-endian
   bytes. A type the codecs do not know (blocks of a quantised format) is not supported: said on
   standard error, *unsupported set, and the other tensors still shown. 0, or EXIT_INVALID when its
   bytes cannot be had. */
static int dump_tensor(const sts_archive *a, const sts_tensor_desc *t, uint64_t edge, int *unsupported) {
    uint64_t numel = t->numel, shape[65];
    uint32_t d, rank = t->rank;
    uint8_t *v = NULL, *owned = NULL;
    sts_dtype dt = t->type->dtype;
    sts_error e;
    dump_ctx c;
    put_name(stdout, t->name, t->name_len, 0);
    printf(": %s ", t->type->name);
    put_shape(stdout, t->shape, t->rank);
    printf("\n");
    if (!t->type->plain && sts_dequantize_supported(t->type->name)) {  /* decoded to F32 first */
        printf("(%s blocks decoded to F32)\n", t->type->name);
        dt = STS_DTYPE_F32;
    } else if (!t->type->plain || dt == STS_DTYPE_COUNT) {
        fflush(stdout);
        fprintf(stderr, "%s: ", prog_cmd);
        put_name(stderr, t->name, t->name_len, 0);
        if (!t->type->plain)
            fprintf(stderr, ": %s is a block type (%u elements in %u bytes): not supported (dump decodes number types)\n",
                    t->type->name, (unsigned)t->type->block_elems, (unsigned)t->type->block_bytes);
        else
            fprintf(stderr, ": %s has no safetensors dtype: not supported (dump decodes through the codecs)\n", t->type->name);
        *unsupported = 1;
        return 0;
    }
    c.raw = NULL;
    c.dt = dt;
    c.v = NULL;
    for (d = 0; d < rank && d < 64; d++) shape[d] = t->shape[d];
    if (dt == STS_DTYPE_C64) {  /* a trailing axis of 2: (re, im) */
        if (rank >= 64) { printf("(rank %u complex values: too many axes to show)\n", rank); return 0; }
        printf("(complex values: shown as interleaved re, im)\n");
        shape[rank++] = 2;
        numel *= 2;
        c.dt = STS_DTYPE_F32;
    }
    if (dt != STS_DTYPE_I64 && dt != STS_DTYPE_U64 && numel > ((uint64_t)1 << 31)) {
        printf("(%llu elements: too many to decode here)\n", (unsigned long long)numel);
        return 0;
    }
    if (tensor_le_bytes(a, t, dt != t->type->dtype ? dt : STS_DTYPE_COUNT, &c.raw, &owned, &e) != STS_OK) {
        fflush(stdout);
        fprintf(stderr, "%s: ", prog_cmd);
        put_name(stderr, t->name, t->name_len, 0);
        fprintf(stderr, ": %s: %s\n", sts_result_name(e.code), e.message);
        return EXIT_INVALID;
    }
    if (dt != STS_DTYPE_I64 && dt != STS_DTYPE_U64) {  /* decoded through the codecs */
        if (!(v = (uint8_t *)malloc((size_t)(numel ? numel : 1) * 8))) { free(owned); fprintf(stderr, "sts dump: out of memory\n"); return EXIT_INVALID; }
        if (sts_convert(v, STS_DTYPE_F64, c.raw, dt, (size_t)(dt == STS_DTYPE_C64 ? numel / 2 : numel), STS_ROUND_NEAREST_EVEN) != STS_OK) {
            printf("(%s values cannot be decoded)\n", t->type->name);
            free(v);
            free(owned);
            return 0;
        }
        c.v = v;
    }
    if (rank == 0) dump_value(&c, 0);
    else if (numel == 0) printf("[]");
    else dump_rec(&c, shape, rank, 0, 0, edge, 0);
    printf("\n");
    free(v);
    free(owned);
    return 0;
}
static int cmd_dump(int argc, char **argv) {
    const char *path = NULL;
    uint64_t limit = 3;
    int i, names = 0, rc = 0, opts_done = 0, unsupported = 0;
    sts_archive *a;
    const sts_tensor_desc *t;
    sts_error e;
    for (i = 1; i < argc; i++) {
        if (!opts_done && strcmp(argv[i], "--") == 0) { opts_done = 1; continue; }
        if (!opts_done && strcmp(argv[i], "--limit") == 0) {
            if (i + 1 >= argc) return usage_error("--limit needs a positive number, got %s", "nothing");
            if (!parse_u64(argv[++i], &limit) || !limit) return usage_error("--limit needs a positive number, got %s", argv[i]);
        } else if (!opts_done && argv[i][0] == '-' && argv[i][1]) return usage_error("unknown option %s", argv[i]);
        else if (!path) path = argv[i];
        else names++;
    }
    if (!path) return usage_error("%s", "which FILE?");
    if (archive_open(path, NULL, &a, &e) != STS_OK) return fail(&e, path);
    if (!names) {
        size_t k;
        for (k = 0; k < sts_archive_count(a) && !rc; k++) {
            if (sts_archive_at(a, k, &t, &e) != STS_OK) { rc = fail(&e, path); break; }
            rc = dump_tensor(a, t, limit, &unsupported);
        }
    } else {
        int seen_path = 0;
        opts_done = 0;
        for (i = 1; i < argc && !rc; i++) {
            if (!opts_done && strcmp(argv[i], "--") == 0) { opts_done = 1; continue; }
            if (!opts_done && strcmp(argv[i], "--limit") == 0) { i++; continue; }
            if (!seen_path) { seen_path = 1; continue; }
            if (sts_archive_find(a, argv[i], strlen(argv[i]), &t, &e) != STS_OK) {
                if (e.code == STS_ERR_NOT_FOUND && e.rule == STS_RULE_NOT_FOUND) fprintf(stderr, "sts dump: %s has no tensor %s\n", path, argv[i]);
                else fail(&e, path);
                rc = EXIT_INVALID;
                break;
            }
            rc = dump_tensor(a, t, limit, &unsupported);
        }
    }
    sts_archive_close(a);
    return rc ? rc : unsupported ? EXIT_INVALID : 0;
}

/* ---- get -------------------------------------------------------------------------------------- */
/* The inputs of an archive: the source itself, every file of the archive and, for a folder, every
   file in it (an index the archive read is one of them). 0, or -1 when out of memory. */
static int inputs_add_archive(input_set *s, const char *path, const sts_archive *a) {
    size_t i;
    if (inputs_add(s, path)) return -1;
    for (i = 0; i < sts_archive_files(a); i++)
        if (inputs_add(s, sts_archive_file(a, i))) return -1;
    if (is_dir(path)) {
        DIR *d = opendir(path);
        struct dirent *de;
        int r = 0;
        while (d && !r && (de = readdir(d)) != NULL) {
            char *p;
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
            if (!(p = path_join(path, de->d_name))) { r = -1; break; }
            if (!is_dir(p)) r = inputs_add(s, p);
            free(p);
        }
        if (d) closedir(d);
        return r;
    }
    return 0;
}
/* get from any other archive: the tensor named KEY, streamed through a cursor (a chunk at a time,
   from the mapping where there is one) in little-endian order, as get writes a safetensors
   tensor: a big-endian source (a '>' .npy) is swapped on the way. */
static int get_archive(const char *src, const char *key, const char *out, int npy, int force_tty) {
    sts_archive *a;
    const sts_tensor_desc *d;
    sts_cursor *cur = NULL;
    sts_error e;
    input_set in;
    out_file o;
    uint8_t *head = NULL, *buf = NULL;
    size_t head_len = 0, len;
    const void *chunk;
    unsigned unit;
    int code;
    sts_result r;
    if (archive_open(src, NULL, &a, &e) != STS_OK) return fail(&e, src);
    if (sts_archive_find(a, key, strlen(key), &d, &e) != STS_OK) { sts_archive_close(a); return fail(&e, key); }
    unit = d->big_endian && d->type->plain ? d->type->swap : 0;
    if (d->big_endian && !d->type->plain && host_is_big_endian()) {
        fprintf(stderr, "%s: %s: %s blocks stored big-endian on a big-endian host: not supported\n", prog_cmd, key, d->type->name);
        sts_archive_close(a);
        return EXIT_INVALID;
    }
    if (npy) {
        char *msg = NULL;
        if (d->type->dtype == STS_DTYPE_COUNT) {
            fprintf(stderr, "%s: %s: type %s has no NumPy type (write its raw bytes without --npy)\n", prog_cmd, out, d->type->name);
            sts_archive_close(a);
            return EXIT_INVALID;
        }
        if (!(head = npy_header(d->type->dtype, d->rank, d->shape, &head_len, &msg))) {
            if (msg) fprintf(stderr, "%s: %s: %s\n", prog_cmd, out, msg);
            free(msg);
            sts_archive_close(a);
            return msg ? EXIT_INVALID : out_of_memory();
        }
    }
    if (unit > 1 && !(buf = (uint8_t *)malloc((size_t)1 << 20))) { free(head); sts_archive_close(a); return out_of_memory(); }
    memset(&in, 0, sizeof in);
    if (inputs_add_archive(&in, src, a)) { free(head); free(buf); inputs_free(&in); sts_archive_close(a); return out_of_memory(); }
    code = out_open(&o, out ? out : "-", &in, force_tty, npy ? "a .npy file is" : "the tensor's raw bytes are");
    inputs_free(&in);
    if (code) { free(head); free(buf); sts_archive_close(a); return code; }
    if (head) out_write(&o, head, head_len);
    free(head);
    if (d->big_endian && !d->type->plain) {  /* blocks: their fields swapped by materialize, to this host's (little) order */
        const uint8_t *bytes;
        uint8_t *owned = NULL;
        r = tensor_le_bytes(a, d, STS_DTYPE_COUNT, &bytes, &owned, &e);
        if (r == STS_OK) out_write(&o, bytes, (size_t)d->nbytes);
        free(owned);
        unit = 2;  /* said below: swapped */
    } else
        r = sts_cursor_open(a, d, 0, d->nbytes, (size_t)1 << 20, NULL, &cur, &e);
    while (r == STS_OK && cur && (r = sts_cursor_next(cur, &chunk, &len, &e)) == STS_OK && len) {
        if (unit > 1) {  /* every chunk but the last is 1 MiB, a whole number of units; so is the last */
            memcpy(buf, chunk, len);
            swap_units(buf, len / unit, unit);
            chunk = buf;
        }
        out_write(&o, chunk, len);
    }
    sts_cursor_close(cur);
    free(buf);
    if (r != STS_OK) { out_abort(&o); sts_archive_close(a); return fail(&e, key); }
    if ((code = out_commit(&o)) != 0) { sts_archive_close(a); return code; }
    fprintf(stderr, "%s: %s ", key, d->type->name);
    put_shape(stderr, d->shape, d->rank);
    fprintf(stderr, ", %llu bytes from %s%s\n", (unsigned long long)d->nbytes, base_name(nz(sts_archive_file(a, d->file))),
            unit > 1 ? " (big-endian there, written little-endian)" : "");
    sts_archive_close(a);
    return 0;
}
static int cmd_get(int argc, char **argv) {
    const char *dir = NULL, *key = NULL, *out = NULL;
    int i, npy = 0, literal = 0, force_tty = 0, code, no_index;
    sts_dataset *ds;
    sts_view v;
    sts_error e, why;
    input_set in;
    out_file o;
    uint8_t *head = NULL;
    size_t head_len = 0;
    /* Options go before or after DIR and KEY; -- makes the next arguments DIR and KEY even when they
       begin with '-' (options may still follow them). */
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!literal && strcmp(a, "--") == 0) { literal = 1; continue; }
        if (!literal && a[0] == '-' && a[1]) {
            if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) { if (i + 1 >= argc) return usage_error("%s needs a file (or - for standard output)", a); out = argv[++i]; }
            else if (strcmp(a, "--npy") == 0) npy = 1;
            else if (strcmp(a, "--force-tty") == 0) force_tty = 1;
            else return usage_error("unknown option %s (a key that begins with '-' goes after --)", a);
            continue;
        }
        if (!dir) dir = a;
        else if (!key) key = a;
        else return usage_error("unexpected argument %s", a);
        if (key) literal = 0;
    }
    if (!dir || !key) return usage_error("%s", "usage: sts get DIR KEY [-o FILE|-] [--npy] [--force-tty]");
    if (npy && !out) return usage_error("%s", "--npy writes a file: give -o FILE (or -o - for standard output)");
    if (which_reader(dir) == READ_ARCHIVE) return get_archive(dir, key, out, npy, force_tty);
    if (open_dataset(dir, &ds, &why, &no_index, &e) != STS_OK) return fail(&e, dir);
    if (no_index)
        fprintf(stderr, "%s: %s: the tensor index is unusable (%s); looked up through the shards' headers instead (rebuild it with: sts index %s)\n",
                prog_cmd, dir, why.message, dir);
    if (sts_dataset_get(ds, key, strlen(key), 1, &v, &e) != STS_OK) {
        sts_dataset_info info = sts_dataset_describe(ds);
        int batch = info.has_manifest && !info.kv;
        sts_dataset_close(ds);
        fail(&e, key);
        if (batch && e.code == STS_ERR_NOT_FOUND)
            fprintf(stderr, "(a batch-mode dataset keys its tensors as <shard file>/<column>, e.g. %s/<column>; sts inspect lists the shards)\n",
                    "part-00000-0000-<uuid>.safetensors");
        if (e.rule == STS_RULE_DATASET_INDEX) fprintf(stderr, "(rebuild the index from the shards' headers with: sts index %s)\n", dir);
        return EXIT_INVALID;
    }
    if (npy) {
        char *msg;
        if (!(head = npy_header(v.dtype, v.rank, v.shape, &head_len, &msg))) {
            if (msg) fprintf(stderr, "%s: %s: %s\n", prog_cmd, out, msg);
            free(msg);
            sts_dataset_close(ds);
            return msg ? EXIT_INVALID : out_of_memory();
        }
    }
    memset(&in, 0, sizeof in);
    if (inputs_add_dataset(&in, dir, ds)) { free(head); inputs_free(&in); sts_dataset_close(ds); return out_of_memory(); }
    code = out_open(&o, out ? out : "-", &in, force_tty, npy ? "a .npy file is" : "the tensor's raw bytes are");
    inputs_free(&in);
    if (code) { free(head); sts_dataset_close(ds); return code; }
    if (head) out_write(&o, head, head_len);
    if (v.nbytes) out_write(&o, v.data, (size_t)v.nbytes);
    free(head);
    if ((code = out_commit(&o)) != 0) { sts_dataset_close(ds); return code; }
    fprintf(stderr, "%s: %s ", key, sts_dtype_name(v.dtype));
    put_shape(stderr, v.shape, v.rank);
    fprintf(stderr, ", %llu bytes from %s\n", (unsigned long long)v.nbytes, sts_dataset_file(ds, v.file));
    sts_dataset_close(ds);
    return 0;
}

/* ---- conversions: one default rounding, and what did not fit -------------------------------------
   Every command that converts (pack --dtype, convert) rounds F16/BF16 to nearest even by default,
   as numpy and PyTorch do, takes --rounding truncate|nearest_even, and says in its summary which
   rounding it used and how many values did not fit the target (the library's own default stays the
   connector's truncate). */
#define CLI_ROUNDING STS_ROUND_NEAREST_EVEN
static const char *rounding_name(sts_rounding r) { return r == STS_ROUND_TRUNCATE ? "truncate" : "nearest_even"; }
static int dtype_is_int(sts_dtype d) {
    return d == STS_DTYPE_U8 || d == STS_DTYPE_I8 || d == STS_DTYPE_U16 || d == STS_DTYPE_I16 || d == STS_DTYPE_U32 ||
           d == STS_DTYPE_I32 || d == STS_DTYPE_U64 || d == STS_DTYPE_I64;
}
static int dtype_is_signed(sts_dtype d) { return d == STS_DTYPE_I8 || d == STS_DTYPE_I16 || d == STS_DTYPE_I32 || d == STS_DTYPE_I64; }
/* A value out of range for the target saturates (integers, NaN -> 0; F16/BF16 under truncate: the
   largest finite value) or becomes infinite (float targets rounding to nearest). */
static int overflow_is_inf(sts_dtype to, sts_rounding r) {
    return !dtype_is_int(to) && !(r == STS_ROUND_TRUNCATE && (to == STS_DTYPE_F16 || to == STS_DTYPE_BF16));
}
static void sb_out_of_range(sbuf *b, uint64_t n, sts_dtype to, sts_rounding r) {
    if (!n) return;
    sb_str(b, ", ");
    sb_u64(b, n);
    sb_str(b, n == 1 ? " value " : " values ");
    sb_str(b, overflow_is_inf(to, r) ? "overflowed to inf" : "saturated");
    sb_str(b, " (out of ");
    sb_str(b, sts_dtype_name(to));
    sb_str(b, "'s range)");
}
/* How many of the n values at src (little-endian, dtype from) do not fit dtype to: they saturate
   or become infinite when sts_convert encodes them (NaN into an integer counts: it becomes 0). */
static uint64_t count_out_of_range(const void *src, sts_dtype from, uint64_t n, sts_dtype to, sts_rounding rnd) {
    const uint8_t *p = (const uint8_t *)src;
    unsigned sb = sts_dtype_bits(from) / 8, db = sts_dtype_bits(to);
    int d_int = dtype_is_int(to), d_signed = dtype_is_signed(to);
    int trunc_mode = !d_int && rnd == STS_ROUND_TRUNCATE && (to == STS_DTYPE_F16 || to == STS_DTYPE_BF16);
    uint64_t hi = !d_int ? 0 : d_signed ? UINT64_MAX >> (65 - db) : UINT64_MAX >> (64 - db), count = 0, i, k;
    double fmax, finf;  /* float targets: the largest finite value, and where nearest rounding reaches inf */
    if (from == to || sb == 0) return 0;
    switch (to) {
    case STS_DTYPE_F16: fmax = 65504.0; finf = 65520.0; break;
    case STS_DTYPE_BF16: fmax = 0x1.fep127; finf = 0x1.ffp127; break;
    case STS_DTYPE_F32: fmax = 0x1.fffffep127; finf = 0x1.ffffffp127; break;
    default: if (!d_int) return 0; fmax = finf = 0; break;  /* F64 holds every source */
    }
    if (dtype_is_int(from) || from == STS_DTYPE_BOOL) {
        for (i = 0; i < n; i++) {
            uint64_t u = 0;
            int neg = 0;
            for (k = sb; k-- > 0;) u = u << 8 | p[i * sb + k];
            if (from == STS_DTYPE_BOOL) u = u != 0;
            else if (dtype_is_signed(from) && (u >> (8 * sb - 1) & 1)) {
                neg = 1;
                if (sb < 8) u |= UINT64_MAX << (8 * sb);  /* sign-extended: u is the two's complement */
            }
            if (d_int) count += neg ? (!d_signed || (int64_t)u < -(int64_t)hi - 1) : u > hi;
            else {
                double m = neg ? (double)(0 - u) : (double)u;  /* the magnitude (0 - u: 2^63 for INT64_MIN) */
                count += trunc_mode ? m > fmax : m >= finf;
            }
        }
        return count;
    }
    for (i = 0; i < n;) {  /* floats: decoded exactly to F64, a piece at a time */
        uint8_t buf[8 * 1024];
        size_t m = n - i < 1024 ? (size_t)(n - i) : 1024, j;
        if (sts_convert(buf, STS_DTYPE_F64, p + i * sb, from, m, STS_ROUND_NEAREST_EVEN) != STS_OK) return count;
        for (j = 0; j < m; j++) {
            double x = le_f64(buf + 8 * j), ax = x < 0 ? -x : x;
            if (x != x) count += d_int;
            else if (d_int) {
                if (db == 64) count += d_signed ? x < -0x1p63 || x >= 0x1p63 : x <= -1.0 || x >= 0x1p64;
                else count += x <= (d_signed ? -(double)hi - 2.0 : -1.0) || x >= (double)hi + 1.0;  /* truncation toward zero first */
            } else if (ax <= 0x1.fffffffffffffp1023) count += trunc_mode ? ax > fmax : ax >= finf;  /* Inf stays Inf */
        }
        i += m;
    }
    return count;
}

/* ---- pack ------------------------------------------------------------------------------------- */
typedef struct pack_col {
    char *name;           /* allocated */
    npy_array a;
    uint64_t row_bytes, rows;
    uint8_t *conv;        /* --dtype with an element type arrays cannot hold: the column, converted */
    sts_dtype conv_dtype;
} pack_col;

static int pack_elem_ok(sts_dtype d) {  /* element types a numeric-array cell holds (sts_column.elem) */
    return d == STS_DTYPE_F32 || d == STS_DTYPE_F64 || d == STS_DTYPE_I32 || d == STS_DTYPE_I64 ||
           d == STS_DTYPE_I16 || d == STS_DTYPE_I8 || d == STS_DTYPE_U8;
}
static void progress(uint64_t done, uint64_t total, double t0) {
    int width = 40, filled = total ? (int)(width * done / total) : width, i;
    double el = now_s() - t0;
    fprintf(stderr, "\r[");
    for (i = 0; i < width; i++) fputc(i < filled ? '#' : '.', stderr);
    fprintf(stderr, "] %llu/%llu rows %.1fs", (unsigned long long)done, (unsigned long long)total, el);
    if (done == total) fputc('\n', stderr);
}
/* A file of an existing output folder that the commit may replace or remove: its manifest, its
   index, a shard. None of them may be an input (--overwrite would destroy what is being read). */
static int pack_check_out(const char *out, const input_set *in) {
    DIR *d = opendir(out);
    struct dirent *de;
    int code = 0;
    if (!d) return 0;  /* the library reports an unusable folder */
    while (!code && (de = readdir(d)) != NULL) {
        const char *n = de->d_name;
        size_t len = strlen(n);
        struct stat st;
        char *p;
        if (strcmp(n, "dataset_manifest.json") != 0 && strcmp(n, "_tensor_index.json") != 0 && strcmp(n, "_tensor_index.csv") != 0 &&
            !(len > 12 && strcmp(n + len - 12, ".safetensors") == 0))
            continue;
        if (!(p = path_join(out, n))) { code = out_of_memory(); break; }
        if (stat(p, &st) == 0) {
            const file_id *m = inputs_match(in, &st);
            if (m) {
                fprintf(stderr, "%s: the input %s is %s, a file of the dataset in %s that this pack would replace: refused, nothing written\n",
                        prog_cmd, m->path, p, out);
                code = EXIT_INVALID;
            }
        }
        free(p);
    }
    closedir(d);
    return code;
}
static int key_dtype_ok(sts_dtype d) { return dtype_is_int(d); }

static int cmd_pack(int argc, char **argv) {
    const char *out = NULL, *keys_file = NULL, *name_col = NULL, *dtype = NULL;
    pack_col cols[64];
    size_t ncols = 0, c;
    uint64_t rows = 0, r, kept, out_of_range = 0;
    sts_write_config cfg;
    sts_column schema[65];
    sts_error e;
    char *keys_text = NULL, **keys = NULL, *msg;
    size_t msg_len, keys_len = 0;
    int i, code = 0, key_col = -1, tty = isatty(2), created = 0, literal = 0;
    sts_task_writer *w = NULL;
    sts_dataset_summary sum;
    sbuf cols_opt, shapes, line;
    input_set in;
    double t0 = now_s();
    memset(&cfg, 0, sizeof cfg);
    memset(&in, 0, sizeof in);
    memset(&cols_opt, 0, sizeof cols_opt);
    memset(&shapes, 0, sizeof shapes);
    memset(&line, 0, sizeof line);
    cfg.rounding = CLI_ROUNDING;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char *opt = NULL;
        if (!literal && strcmp(a, "--") == 0) { literal = 1; continue; }
        if (literal || a[0] != '-' || !a[1]) {
            if (out) { code = usage_error("one output folder, got another: %s", a); goto done; }
            out = a;
            literal = 0;  /* -- covers OUT_DIR; options may follow it */
            continue;
        }
        if (strcmp(a, "--column") == 0 || strcmp(a, "-c") == 0) {
            const char *eq;
            char *err;
            size_t nl;
            if (!v || !(eq = strchr(v, '=')) || eq == v) { code = usage_error("--column takes NAME=FILE.npy, got %s", v ? v : "nothing"); goto done; }
            if (ncols == 64) { code = usage_error("%s", "at most 64 columns"); goto done; }
            if (memchr(v, ',', (size_t)(eq - v))) { code = usage_error("column names cannot hold ',' (the columns option is a comma-separated list): %s", v); goto done; }
            memset(&cols[ncols], 0, sizeof cols[ncols]);
            nl = (size_t)(eq - v);
            if (!(cols[ncols].name = (char *)malloc(nl + 1))) { code = out_of_memory(); goto done; }
            memcpy(cols[ncols].name, v, nl);
            cols[ncols].name[nl] = 0;
            ncols++;
            if (npy_load(eq + 1, &cols[ncols - 1].a, &err) != 0) {
                if (err) fprintf(stderr, "sts pack: %s\n", err);
                code = err ? EXIT_INVALID : out_of_memory();
                free(err);
                goto done;
            }
            if (inputs_add(&in, eq + 1)) { code = out_of_memory(); goto done; }
            i++;
            continue;
        }
        if (strcmp(a, "--keys") == 0) { if (!v) { code = usage_error("%s", "--keys needs a text file (- for standard input)"); goto done; } keys_file = v; i++; continue; }
        if (strcmp(a, "--generate-index") == 0) { sts_write_config_set(&cfg, "generate_index", "true", &e); continue; }
        if (strcmp(a, "--overwrite") == 0) { sts_write_config_set(&cfg, "mode", "overwrite", &e); continue; }
        if (strcmp(a, "--no-fsync") == 0) { sts_write_config_set(&cfg, "durable", "false", &e); continue; }
        if (strcmp(a, "--batch-size") == 0) opt = "batch_size";
        else if (strcmp(a, "--name-col") == 0) opt = "name_col";
        else if (strcmp(a, "--kv-separator") == 0) opt = "kv_separator";
        else if (strcmp(a, "--duplicates") == 0) opt = "duplicatesStrategy";
        else if (strcmp(a, "--dtype") == 0) opt = "dtype";
        else if (strcmp(a, "--rounding") == 0) opt = "rounding";
        else if (strcmp(a, "--tail") == 0) opt = "tail_strategy";
        else if (strcmp(a, "--target-shard-size-mb") == 0) opt = "target_shard_size_mb";
        else if (strcmp(a, "--kv-layout") == 0) opt = "kv_layout";
        if (opt) {
            if (!v) { code = usage_error("%s needs a value", a); goto done; }
            if (strcmp(opt, "name_col") == 0) { name_col = v; i++; continue; }
            if (strcmp(opt, "dtype") == 0) dtype = v;
            if (sts_write_config_set(&cfg, opt, v, &e) != STS_OK) {
                fprintf(stderr, "sts pack: %s %s: %s\n(try: sts pack --help)\n", a, v, e.message);
                code = EXIT_USAGE;
                goto done;
            }
            i++;
            continue;
        }
        code = usage_error("unknown option %s", a);
        goto done;
    }
    if (!out) { code = usage_error("%s", "usage: sts pack OUT_DIR --column NAME=FILE.npy ... (--batch-size N | --keys FILE | --name-col COL)"); goto done; }
    if (!ncols) { code = usage_error("%s", "give at least one --column NAME=FILE.npy"); goto done; }
    if ((keys_file != NULL) + (name_col != NULL) + (cfg.batch_size != 0) != 1) { code = usage_error("%s", "give exactly one of --batch-size, --keys or --name-col"); goto done; }
    for (c = 0; c < ncols; c++) {  /* the first axis is rows */
        npy_array *a = &cols[c].a;
        uint32_t d;
        if (a->rank == 0) { fprintf(stderr, "sts pack: column %s is a scalar; its first axis must count rows\n", cols[c].name); code = EXIT_INVALID; goto done; }
        cols[c].rows = a->shape[0];
        for (d = 1, cols[c].row_bytes = sts_dtype_bits(a->dtype) / 8; d < a->rank; d++) cols[c].row_bytes *= a->shape[d];
        if (c && cols[c].rows != rows) { fprintf(stderr, "sts pack: column %s has %llu rows, %s has %llu\n", cols[c].name, (unsigned long long)cols[c].rows, cols[0].name, (unsigned long long)rows); code = EXIT_INVALID; goto done; }
        rows = cols[c].rows;
        if (name_col && strcmp(cols[c].name, name_col) == 0) key_col = (int)c;
    }
    if (name_col && key_col < 0) { fprintf(stderr, "sts pack: --name-col %s is not one of the columns\n", name_col); code = EXIT_USAGE; goto done; }
    if (key_col >= 0) {  /* keys come from a 1-D integer column, one value per row */
        const npy_array *a = &cols[key_col].a;
        if (!key_dtype_ok(a->dtype)) {
            fprintf(stderr, "sts pack: --name-col %s holds %s values: keys come from an integer column (int8 to int64, uint8 to uint64)\n",
                    name_col, sts_dtype_name(a->dtype));
            code = EXIT_INVALID; goto done;
        }
        if (a->rank != 1) {
            fprintf(stderr, "sts pack: --name-col %s has %u axes: keys come from a 1-D column, one integer per row\n", name_col, (unsigned)a->rank);
            code = EXIT_INVALID; goto done;
        }
    }
    kept = cfg.batch_size && cfg.tail == STS_TAIL_DROP ? rows - rows % cfg.batch_size : rows;  /* rows that will be written */
    for (c = 0; dtype && c < ncols; c++) {  /* --dtype: element types arrays cannot hold are converted first */
        npy_array *a = &cols[c].a;
        uint64_t n = a->rank ? a->nbytes / (sts_dtype_bits(a->dtype) / 8) : 0;
        sts_result cr;
        if ((int)c == key_col) continue;
        if (a->dtype != STS_DTYPE_C64 && rows)
            out_of_range += count_out_of_range(a->data, a->dtype, n / rows * kept, cfg.dtype, (sts_rounding)cfg.rounding);
        if (pack_elem_ok(a->dtype)) continue;
        if (a->dtype == STS_DTYPE_C64 || !sts_convert_supported(cfg.dtype, a->dtype)) {  /* C64 would need two values each */
            fprintf(stderr, "sts pack: --dtype %s: column %s holds %s, which cannot be converted to %s (pack it without --dtype to keep it as it is)\n",
                    dtype, cols[c].name, sts_dtype_name(a->dtype), sts_dtype_name(cfg.dtype));
            code = EXIT_USAGE; goto done;
        }
        cols[c].conv_dtype = cfg.dtype;
        cols[c].conv = (uint8_t *)malloc(n ? (size_t)n * (sts_dtype_bits(cfg.dtype) / 8) : 1);
        if (!cols[c].conv) { fprintf(stderr, "sts pack: column %s: out of memory converting it to %s\n", cols[c].name, dtype); code = EXIT_INVALID; goto done; }
        cr = sts_convert_ex(cols[c].conv, cfg.dtype, a->data, a->dtype, (size_t)n, (sts_rounding)cfg.rounding, &e);
        if (cr != STS_OK) { code = fail(&e, cols[c].name); goto done; }
        cols[c].row_bytes = cols[c].row_bytes / (sts_dtype_bits(a->dtype) / 8) * (sts_dtype_bits(cfg.dtype) / 8);
    }
    if (keys_file) {  /* one key per line (LF or CR LF; a last line without a newline counts) */
        size_t k, nkeys = 0, line_no;
        if ((code = read_whole("--keys", keys_file, &in, &keys_text, &keys_len)) != 0) goto done;
        for (k = 0, line_no = 1; k < keys_len; line_no++) {
            const char *nl = (const char *)memchr(keys_text + k, '\n', keys_len - k);
            size_t end = nl ? (size_t)(nl - keys_text) : keys_len;
            if (memchr(keys_text + k, 0, end - k)) {
                fprintf(stderr, "sts pack: --keys %s: line %zu holds a NUL byte (a key is text without NUL)\n", keys_file, line_no);
                code = EXIT_INVALID; goto done;
            }
            nkeys++;
            k = end + 1;
        }
        if (nkeys != rows) {
            fprintf(stderr, "sts pack: %s has %zu key%s, the columns have %llu row%s\n", keys_file, nkeys, nkeys == 1 ? "" : "s",
                    (unsigned long long)rows, rows == 1 ? "" : "s");
            code = EXIT_INVALID; goto done;
        }
        if (!(keys = (char **)malloc(((size_t)rows + 1) * sizeof *keys))) { code = out_of_memory(); goto done; }
        for (k = 0, nkeys = 0; k < keys_len; nkeys++) {
            char *nl = (char *)memchr(keys_text + k, '\n', keys_len - k);
            size_t end = nl ? (size_t)(nl - keys_text) : keys_len;
            keys_text[end] = 0;  /* keys_text[keys_len] is the terminator read_whole added */
            if (end > k && keys_text[end - 1] == '\r') keys_text[end - 1] = 0;
            keys[nkeys] = keys_text + k;
            k = end + 1;
        }
    }
    if (is_dir(out) && (code = pack_check_out(out, &in)) != 0) goto done;
    /* schema: the key (KV), then each column; with --dtype columns are numeric arrays encoded to it */
    {
        size_t s = 0;
        const char *kv_name = name_col ? name_col : "__key";
        if (keys_file || name_col) {
            schema[s].name = kv_name; schema[s].kind = STS_VALUE_STRING; schema[s].elem = STS_DTYPE_U8; s++;
            if (sts_write_config_set(&cfg, "name_col", kv_name, &e) != STS_OK) { fprintf(stderr, "sts pack: %s\n", e.message); code = EXIT_USAGE; goto done; }
        }
        for (c = 0; c < ncols; c++) {
            if ((int)c == key_col) continue;
            schema[s].name = cols[c].name;
            schema[s].kind = dtype && !cols[c].conv ? STS_VALUE_ARRAY : STS_VALUE_TENSOR;
            schema[s].elem = cols[c].conv ? cols[c].conv_dtype : cols[c].a.dtype;
            s++;
            if (cols_opt.n) sb_str(&cols_opt, ",");
            sb_str(&cols_opt, cols[c].name);
        }
        if (dtype) {  /* per-sample shapes of the array columns */
            int first = 1;
            sb_str(&shapes, "{");
            for (c = 0; c < ncols; c++) {
                uint32_t d;
                if ((int)c == key_col || cols[c].conv) continue;
                sb_str(&shapes, first ? "\"" : ", \"");
                first = 0;
                sb_json_body(&shapes, cols[c].name);
                sb_str(&shapes, "\": [");
                for (d = 1; d < cols[c].a.rank; d++) {
                    if (d > 1) sb_str(&shapes, ", ");
                    sb_u64(&shapes, cols[c].a.shape[d]);
                }
                sb_str(&shapes, "]");
            }
            sb_str(&shapes, "}");
            if (shapes.oom) { code = out_of_memory(); goto done; }
            if (sts_write_config_set(&cfg, "shapes", shapes.p, &e) != STS_OK) { fprintf(stderr, "sts pack: %s\n", e.message); code = EXIT_USAGE; goto done; }
        }
        if (cols_opt.oom) { code = out_of_memory(); goto done; }
        if (sts_write_config_set(&cfg, "columns", cols_opt.p ? cols_opt.p : "", &e) != STS_OK) { fprintf(stderr, "sts pack: %s\n", e.message); code = EXIT_USAGE; goto done; }
        created = !is_dir(out);
        if (sts_dataset_prepare(out, &cfg, schema, s, NULL, &e) != STS_OK) {
            code = fail(&e, out);
            if (e.code == STS_ERR_OPTION) code = EXIT_USAGE;
            if (e.code == STS_ERR_EXISTS) fprintf(stderr, "(pass --overwrite to replace what is there)\n");
            goto done;
        }
        if (sts_task_open(out, 0, &cfg, schema, s, NULL, &w, &e) != STS_OK) { code = fail(&e, out); goto done; }
        for (r = 0; r < rows; r++) {
            sts_value row[65];
            char kbuf[32];
            size_t k = 0;
            memset(row, 0, sizeof row);
            if (keys_file) { row[k].data = keys[r]; row[k].size = strlen(keys[r]); k++; }
            else if (key_col >= 0) {  /* the integer, in decimal: 1, 2, 4 or 8 little-endian bytes, signed or not */
                const uint8_t *p = cols[key_col].a.data + r * cols[key_col].row_bytes;
                unsigned long long kvv = 0;
                int b, wdt = (int)cols[key_col].row_bytes;
                for (b = wdt - 1; b >= 0; b--) kvv = kvv << 8 | p[b];
                if (dtype_is_signed(cols[key_col].a.dtype) && (kvv >> (8 * wdt - 1) & 1)) {
                    if (wdt < 8) kvv |= ~0ull << (8 * wdt);
                    snprintf(kbuf, sizeof kbuf, "-%llu", 0 - kvv);
                } else snprintf(kbuf, sizeof kbuf, "%llu", kvv);
                row[k].data = kbuf; row[k].size = strlen(kbuf); k++;
            }
            for (c = 0; c < ncols; c++) {
                const npy_array *a = &cols[c].a;
                if ((int)c == key_col) continue;
                row[k].data = (cols[c].conv ? cols[c].conv : a->data) + r * cols[c].row_bytes;
                if (dtype && !cols[c].conv) row[k].size = cols[c].row_bytes / (sts_dtype_bits(a->dtype) / 8);
                else {
                    row[k].size = cols[c].row_bytes;
                    row[k].dtype = cols[c].conv ? cols[c].conv_dtype : a->dtype;
                    row[k].rank = a->rank - 1;
                    row[k].shape = a->shape + 1;
                }
                k++;
            }
            if (sts_task_write(w, row, &e) != STS_OK) {
                char where[64];
                if (tty) fputc('\n', stderr);
                snprintf(where, sizeof where, "row %llu", (unsigned long long)r);
                code = fail(&e, where);
                sts_task_close(w);
                goto done;
            }
            if (tty && (r % 4096 == 0 || r + 1 == rows)) progress(r + 1, rows, t0);
        }
        if (sts_task_commit(w, &msg, &msg_len, &e) != STS_OK) { code = fail(&e, out); sts_task_close(w); goto done; }
        sts_task_close(w);
        if (sts_dataset_commit(out, &cfg, (const char *const *)&msg, &msg_len, 1, NULL, &sum, &e) != STS_OK) code = fail(&e, out);
        else {
            char t[64];
            sb_str(&line, out);
            sb_str(&line, ": ");
            sb_u64(&line, sum.shards);
            sb_str(&line, sum.shards == 1 ? " shard, " : " shards, ");
            sb_u64(&line, sum.samples);
            sb_str(&line, " samples, ");
            sb_u64(&line, sum.tensors);
            sb_str(&line, " tensors, ");
            sb_u64(&line, sum.bytes);
            snprintf(t, sizeof t, " bytes in %.2fs", now_s() - t0);
            sb_str(&line, t);
            if (dtype) {
                sb_str(&line, "; values encoded to ");
                sb_str(&line, sts_dtype_name(cfg.dtype));
                if (dtype_is_int(cfg.dtype)) sb_str(&line, " (floats truncated toward zero)");
                else {
                    sb_str(&line, " (rounding ");
                    sb_str(&line, cfg.dtype == STS_DTYPE_F16 || cfg.dtype == STS_DTYPE_BF16 ? rounding_name((sts_rounding)cfg.rounding) : "nearest_even");
                    sb_str(&line, ")");
                }
                sb_out_of_range(&line, out_of_range, cfg.dtype, (sts_rounding)cfg.rounding);
            }
            if (kept < rows) {
                char t2[160];
                if (kept == 0)
                    snprintf(t2, sizeof t2, "; --tail drop dropped all %llu rows (fewer than one batch of %llu): the dataset is empty",
                             (unsigned long long)rows, (unsigned long long)cfg.batch_size);
                else
                    snprintf(t2, sizeof t2, "; --tail drop dropped the last %llu row%s (a partial batch)", (unsigned long long)(rows - kept),
                             rows - kept == 1 ? "" : "s");
                sb_str(&line, t2);
            }
            if (line.oom) code = out_of_memory();
            else printf("%s\n", line.p);
            if (kept == 0 && rows)
                fprintf(stderr, "sts pack: warning: --tail drop dropped every row (%llu rows, batch size %llu): %s holds no samples\n",
                        (unsigned long long)rows, (unsigned long long)cfg.batch_size, out);
        }
        sts_free(NULL, msg, msg_len + 1);
    }
done:
    if (code && created && out) rmdir(out);  /* a folder this run created goes again when empty */
    for (c = 0; c < ncols; c++) { npy_free(&cols[c].a); free(cols[c].conv); free(cols[c].name); }
    free(keys_text);
    free(keys);
    free(cols_opt.p);
    free(shapes.p);
    free(line.p);
    inputs_free(&in);
    return code;
}

/* ---- index ------------------------------------------------------------------------------------ */
static int cmd_index(int argc, char **argv) {
    sts_error e;
    sts_dataset_summary s;
    if (argc != 2 || argv[1][0] == '-') return usage_error("%s", "usage: sts index DIR");
    if (sts_dataset_reindex(argv[1], NULL, &s, &e) != STS_OK) return fail(&e, argv[1]);
    printf("%s: _tensor_index.csv and _tensor_index.json rebuilt from %llu shards (%llu tensors)\n", argv[1],
           (unsigned long long)s.shards, (unsigned long long)s.tensors);
    return 0;
}

/* ---- check and clean ---------------------------------------------------------------------------- */
static void check_problem(void *user, const sts_error *e) {
    (void)user;
    printf("FAIL %s\n", e->message);  /* the message starts with the rule it broke */
}
static int cmd_check(int argc, char **argv) {
    const char *dir = NULL;
    sts_check_config cfg;
    sts_check_report rep;
    sts_error e;
    sts_result r;
    int k;
    memset(&cfg, 0, sizeof cfg);
    memset(&rep, 0, sizeof rep);
    for (k = 1; k < argc; k++) {
        if (strcmp(argv[k], "--data") == 0) cfg.data = 1;
        else if (argv[k][0] == '-' && argv[k][1]) return usage_error("unknown option %s", argv[k]);
        else if (dir) return usage_error("%s", "usage: sts check [--data] DIR|FILE");
        else dir = argv[k];
    }
    if (!dir) return usage_error("%s", "usage: sts check [--data] DIR|FILE");
    cfg.problem = check_problem;
    r = sts_dataset_check(dir, &cfg, NULL, &rep, &e);
    if (r == STS_ERR_DATASET) {
        printf("%s: %llu problem%s: PROBLEMS\n", dir, (unsigned long long)rep.problems, rep.problems == 1 ? "" : "s");
        return EXIT_INVALID;
    }
    if (r != STS_OK) return fail(&e, dir);
    printf("%s: %llu shard%s, %llu tensors, %llu bytes, all valid (strict)", dir, (unsigned long long)rep.shards,
           rep.shards == 1 ? "" : "s", (unsigned long long)rep.tensors, (unsigned long long)rep.bytes);
    if (cfg.data) printf(", %llu checksum%s verified", (unsigned long long)rep.checksums, rep.checksums == 1 ? "" : "s");
    printf(": OK\n");
    return 0;
}
static void clean_removed(void *user, const char *name, const char *why) {
    printf("%s %s (%s)\n", *(const int *)user ? "would remove" : "removed", name, why);
}
static int cmd_clean(int argc, char **argv) {
    const char *dir = NULL;
    sts_clean_config cfg;
    sts_error e;
    size_t count = 0;
    int k;
    memset(&cfg, 0, sizeof cfg);
    for (k = 1; k < argc; k++) {
        if (strcmp(argv[k], "--dry-run") == 0) cfg.dry_run = 1;
        else if (strcmp(argv[k], "--force") == 0) cfg.force = 1;
        else if (argv[k][0] == '-' && argv[k][1]) return usage_error("unknown option %s", argv[k]);
        else if (dir) return usage_error("%s", "usage: sts clean [--dry-run] [--force] DIR");
        else dir = argv[k];
    }
    if (!dir) return usage_error("%s", "usage: sts clean [--dry-run] [--force] DIR");
    cfg.removed = clean_removed;
    cfg.user = &cfg.dry_run;
    if (sts_dataset_clean(dir, &cfg, NULL, &count, &e) != STS_OK) return fail(&e, dir);
    printf("%s: %zu file%s %s\n", dir, count, count == 1 ? "" : "s", cfg.dry_run ? "would be removed (dry run)" : "removed");
    return 0;
}

/* ---- assign ----------------------------------------------------------------------------------- */
#define ASSIGN_SYNOPSIS "sts assign DIR --workers N [--strategy balance|round_robin] [--worker K]"
static int cmd_assign(int argc, char **argv) {
    const char *dir = NULL;
    uint64_t workers = 0, worker = UINT64_MAX, *load = NULL, total = 0, lo = UINT64_MAX, hi = 0;
    int k, have_workers = 0, literal = 0, code = 0;
    sts_assign_strategy st = STS_ASSIGN_BALANCE;
    sts_read_config rc;
    sts_dataset *ds;
    sts_error e;
    size_t i, n, *by = NULL, unknown = 0;
    uint32_t *owner = NULL;
    for (k = 1; k < argc; k++) {
        if (!literal && strcmp(argv[k], "--") == 0) { literal = 1; continue; }
        if (literal || argv[k][0] != '-' || !argv[k][1]) {
            if (dir) return usage_error("unexpected argument %s", argv[k]);
            dir = argv[k];
        } else if (strcmp(argv[k], "--workers") == 0) {
            if (k + 1 >= argc || !parse_u64(argv[k + 1], &workers) || workers > UINT32_MAX)
                return usage_error("--workers takes a number of workers, got %s", k + 1 < argc ? argv[k + 1] : "nothing");
            have_workers = 1;
            k++;
        } else if (strcmp(argv[k], "--strategy") == 0) {
            if (k + 1 >= argc) return usage_error("--strategy takes balance or round_robin, got %s", "nothing");
            if (sts_assign_strategy_parse(argv[k + 1], &st, &e) != STS_OK) {
                fprintf(stderr, "%s: %s\n", prog_cmd, e.message);
                return EXIT_USAGE;
            }
            k++;
        } else if (strcmp(argv[k], "--worker") == 0) {
            if (k + 1 >= argc || !parse_u64(argv[k + 1], &worker))
                return usage_error("--worker takes a worker id, got %s", k + 1 < argc ? argv[k + 1] : "nothing");
            k++;
        } else return usage_error("unknown option %s", argv[k]);
    }
    if (!dir || !have_workers) return usage_error("%s", "usage: " ASSIGN_SYNOPSIS);
    if (workers == 0) {  /* the connector's words */
        fprintf(stderr, "%s: num_workers must be > 0\n", prog_cmd);
        return EXIT_USAGE;
    }
    if (worker != UINT64_MAX && worker >= workers) {
        fprintf(stderr, "%s: --worker %llu: workers are 0 to %llu\n", prog_cmd, (unsigned long long)worker,
                (unsigned long long)(workers - 1));
        return EXIT_USAGE;
    }
    memset(&rc, 0, sizeof rc);
    rc.infer_schema = 1;
    rc.no_index = 1;  /* the manifest is all it needs */
    if (sts_dataset_open(dir, &rc, NULL, &ds, &e) != STS_OK) return fail(&e, dir);
    n = sts_dataset_describe(ds).files;
    owner = (uint32_t *)calloc(n ? n : 1, sizeof *owner);
    by = (size_t *)calloc(n ? n : 1, sizeof *by);
    load = (uint64_t *)calloc((size_t)workers, sizeof *load);
    if (!owner || !by || !load) { code = out_of_memory(); goto done; }
    if (sts_dataset_assign(ds, (uint32_t)workers, st, owner, &e) != STS_OK) { code = fail(&e, dir); goto done; }
    for (i = 0; i < n; i++) by[sts_dataset_file_order(ds, i)] = i;
    for (i = 0; i < n; i++) {  /* the manifest's order */
        size_t f = by[i];
        uint64_t sm = sts_dataset_file_samples(ds, f);
        if (sm != UINT64_MAX) { load[owner[f]] += sm; total += sm; }
        else unknown++;
        if (worker != UINT64_MAX && owner[f] != worker) continue;
        printf("%u\t%s\t", (unsigned)owner[f], nz(sts_dataset_file(ds, f)));
        if (sm == UINT64_MAX) printf("-\n");
        else printf("%llu\n", (unsigned long long)sm);
    }
    for (i = 0; i < (size_t)workers; i++) {
        if (load[i] < lo) lo = load[i];
        if (load[i] > hi) hi = load[i];
    }
    if (unknown)  /* no manifest: no sample counts to sum */
        fprintf(stderr, "%s: %zu shard%s to %llu worker%s (%s); samples unknown (no dataset_manifest.json)\n", dir, n,
                n == 1 ? "" : "s", (unsigned long long)workers, workers == 1 ? "" : "s", sts_assign_strategy_name(st));
    else
        fprintf(stderr, "%s: %zu shard%s, %llu samples to %llu worker%s (%s): %llu to %llu samples a worker\n", dir, n,
                n == 1 ? "" : "s", (unsigned long long)total, (unsigned long long)workers, workers == 1 ? "" : "s",
                sts_assign_strategy_name(st), (unsigned long long)lo, (unsigned long long)hi);
done:
    free(owner); free(by); free(load);
    sts_dataset_close(ds);
    return code;
}

/* ---- lineage ---------------------------------------------------------------------------------- */
#define LINEAGE_SYNOPSIS "sts lineage DIR [--name NAME] [--uri URI] [--context CONTEXT]"
static int cmd_lineage(int argc, char **argv) {
    const char *dir = NULL;
    sts_lineage_config c;
    sts_error e;
    char *rec = NULL;
    size_t len = 0;
    int k, literal = 0;
    memset(&c, 0, sizeof c);
    for (k = 1; k < argc; k++) {
        const char **to = NULL;
        if (!literal && strcmp(argv[k], "--") == 0) { literal = 1; continue; }
        if (literal || argv[k][0] != '-' || !argv[k][1]) {
            if (dir) return usage_error("unexpected argument %s", argv[k]);
            dir = argv[k];
            continue;
        }
        if (strcmp(argv[k], "--name") == 0) to = &c.name;
        else if (strcmp(argv[k], "--uri") == 0) to = &c.uri;
        else if (strcmp(argv[k], "--context") == 0) to = &c.context;
        else return usage_error("unknown option %s", argv[k]);
        if (k + 1 >= argc) return usage_error("%s takes a value", argv[k]);
        *to = argv[++k];
    }
    if (!dir) return usage_error("%s", "usage: " LINEAGE_SYNOPSIS);
    if (sts_dataset_lineage(dir, &c, NULL, &rec, &len, &e) != STS_OK) return fail(&e, dir);
    fwrite(rec, 1, len, stdout);
    putchar('\n');
    sts_free(NULL, rec, len + 1);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "%s: writing standard output: %s\n", prog_cmd, strerror(errno));
        return EXIT_INVALID;
    }
    return 0;
}

/* ---- convert ---------------------------------------------------------------------------------- */
typedef struct conv { const sts_file *f; const sts_tensor *t; sts_dtype to; sts_rounding rnd; uint64_t *out_of_range; } conv;
static sts_result conv_produce(void *user, const sts_tensor_spec *spec, sts_stream *out) {  /* streamed in 1 MiB pieces */
    const conv *c = (const conv *)user;
    static uint8_t buf[1 << 20];
    uint64_t numel = sts_tensor_numel(c->t), i = 0;
    size_t in_sz = sts_dtype_bits(c->t->dtype) / 8, out_sz = sts_dtype_bits(c->to) / 8, chunk = sizeof buf / out_sz;
    const uint8_t *src = (const uint8_t *)sts_data(c->f, c->t);
    (void)spec;
    while (i < numel) {
        size_t n = numel - i < chunk ? (size_t)(numel - i) : chunk;
        sts_result r = sts_convert(buf, c->to, src + i * in_sz, c->t->dtype, n, c->rnd);
        if (r == STS_OK) r = sts_stream_write(out, buf, n * out_sz);
        if (r != STS_OK) return r;
        *c->out_of_range += count_out_of_range(src + i * in_sz, c->t->dtype, n, c->to, c->rnd);
        i += n;
    }
    return STS_OK;
}
static sts_result stdout_sink(void *user, const void *bytes, size_t len) {
    out_file *o = (out_file *)user;
    out_write(o, bytes, len);
    return o->err ? STS_ERR_IO : STS_OK;
}
static void stdout_sink_open(out_file *o, sts_sink *sink) {  /* a writer's sink onto standard output */
    memset(o, 0, sizeof *o);
    o->name = "-";
    o->fd = 1;
    sink->write = stdout_sink;
    sink->user = o;
}
/* convert from any other archive (GGUF, .npy, sharded checkpoints, datasets), or to GGUF: each
   tensor materialised in turn (a zero-copy view where the bytes are mapped and need nothing done;
   else one tensor's converted bytes in memory at a time), block types decoded through
   sts_dequantize, big-endian sources swapped; written by sts_write or sts_gguf_write. */
#define CONVERT_SYNOPSIS "sts convert IN OUT|- [--dtype F16|BF16|F32|F64] [--rounding truncate|nearest_even] [--to safetensors|gguf] [--force-tty]"
typedef struct ar_conv {
    const sts_archive *a;
    const sts_tensor_desc *d;
    sts_materialize_options mo;
    sts_error *err;                  /* the first materialise failure, for the message */
    int *failed;
} ar_conv;
static sts_result ar_produce(void *user, const sts_tensor_spec *spec, sts_stream *out) {
    ar_conv *c = (ar_conv *)user;
    le_factory lf;
    sts_factory f;
    sts_materialized m;
    sts_result r;
    uint8_t *owned = NULL;
    const uint8_t *data;
    (void)spec;
    memset(&lf, 0, sizeof lf);
    memset(&f, 0, sizeof f);
    f.allocate = le_allocate;
    f.wrap = le_wrap;
    f.user = &lf;
    if ((r = sts_archive_materialize(c->a, c->d, &f, &c->mo, &m, c->err)) != STS_OK) {
        free(lf.mem);
        *c->failed = 1;
        return r;
    }
    data = (const uint8_t *)m.data;
    if (!m.wrapped) owned = (uint8_t *)m.data;
    if (host_is_big_endian() && m.type->plain && m.type->swap > 1) {  /* both formats are little-endian */
        if (!owned) {
            if (!(owned = (uint8_t *)malloc(m.nbytes ? (size_t)m.nbytes : 1))) return STS_ERR_NOMEM;
            memcpy(owned, m.data, (size_t)m.nbytes);
        }
        swap_units(owned, (size_t)(m.nbytes / m.type->swap), m.type->swap);
        data = owned;
    }
    r = sts_stream_write(out, data, (size_t)m.nbytes);
    free(owned);
    return r;
}
static void sb_json_str(sbuf *b, const char *s, size_t n) {  /* a JSON string, quotes included */
    size_t i;
    sb_add(b, "\"", 1);
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char t[8];
        if (c == '"') sb_str(b, "\\\"");
        else if (c == '\\') sb_str(b, "\\\\");
        else if (c < 0x20) sb_str(b, (snprintf(t, sizeof t, "\\u%04x", c), t));
        else sb_add(b, (const char *)&c, 1);
    }
    sb_add(b, "\"", 1);
}
static void sb_double(sbuf *b, double x, int json, int f32) {  /* the fewest digits that read back */
    char t[32];
    int p;
    if (x != x || x > 1.7976931348623157e308 || x < -1.7976931348623157e308) {
        sb_str(b, json ? "null" : x != x ? "nan" : x > 0 ? "inf" : "-inf");
        return;
    }
    for (p = 1; p < 17; p++) {
        snprintf(t, sizeof t, "%.*g", p, x);
        if (f32 ? (double)strtof(t, NULL) == x : strtod(t, NULL) == x) break;  /* a FLOAT32: as a float */
    }
    if (p == 17) snprintf(t, sizeof t, "%.17g", x);
    {   /* Python's repr: positional from 1e-4 up to 1e16, so 10000.0 rather than 1e+04 */
        const char *ep = strchr(t, 'e');
        int ex = ep ? atoi(ep + 1) : 0;
        if (ep && ex >= -4 && ex < 16) snprintf(t, sizeof t, "%.*f", p - 1 - ex > 0 ? p - 1 - ex : 0, x);
    }
    sb_str(b, t);
    if (!strpbrk(t, ".en")) sb_str(b, ".0");
}
/* A typed value as __metadata__ text: strings as they are, numbers in decimal, booleans as
   true/false, arrays as JSON (non-finite floats there as null). */
static void sb_meta_text(sbuf *b, const sts_meta *m, int json, int depth) {
    uint64_t k;
    char t[32];
    switch (m->type) {
    case STS_META_STRING: if (json) sb_json_str(b, m->str, m->str_len); else sb_add(b, m->str, m->str_len); break;
    case STS_META_UINT: sb_u64(b, m->u); break;
    case STS_META_INT: sb_str(b, (snprintf(t, sizeof t, "%lld", (long long)m->i), t)); break;
    case STS_META_FLOAT: sb_double(b, m->f, json, m->format_type == 6); break;
    case STS_META_BOOL: sb_str(b, m->u ? "true" : "false"); break;
    case STS_META_ARRAY:
        sb_add(b, "[", 1);
        for (k = 0; k < m->count; k++) {
            if (k) sb_add(b, ",", 1);
            if (depth < 32) sb_meta_text(b, &m->items[k], 1, depth + 1);
            else sb_str(b, "null");
        }
        sb_add(b, "]", 1);
        break;
    }
}
static int dtype_is_float4(sts_dtype d) {
    return d == STS_DTYPE_F16 || d == STS_DTYPE_BF16 || d == STS_DTYPE_F32 || d == STS_DTYPE_F64;
}
static int convert_archive(const char *in, const char *out, sts_dtype to, sts_rounding rnd, int gguf, int force_tty) {
    sts_archive *a;
    sts_error e, perr;
    sts_tensor_spec *specs = NULL;
    ar_conv *jobs = NULL;
    sts_meta *kvs = NULL;
    sts_kv *meta = NULL;
    sbuf *texts = NULL;
    input_set ins;
    char *resolved = NULL;
    size_t i, n, nm, converted = 0, decoded = 0;
    int code = 0, exists, failed = 0, oom = 0, to_stdout = strcmp(out, "-") == 0;
    sts_dtype decode_to = to == STS_DTYPE_COUNT ? STS_DTYPE_F32 : to;
    sts_result r;
    if (archive_open(in, NULL, &a, &e) != STS_OK) return fail(&e, in);
    memset(&ins, 0, sizeof ins);
    if (inputs_add_archive(&ins, in, a)) { inputs_free(&ins); sts_archive_close(a); return out_of_memory(); }
    code = to_stdout ? (out_stdout_ok(force_tty, gguf ? "a GGUF file is" : "a safetensors file is") ? 0 : EXIT_USAGE)
                     : out_check(out, &ins, NULL, &exists, &resolved);
    inputs_free(&ins);
    if (code) { sts_archive_close(a); return code; }
    n = sts_archive_count(a);
    nm = sts_archive_meta_count(a);
    specs = (sts_tensor_spec *)calloc(n ? n : 1, sizeof *specs);
    jobs = (ar_conv *)calloc(n ? n : 1, sizeof *jobs);
    kvs = (sts_meta *)calloc(nm ? nm : 1, sizeof *kvs);
    meta = (sts_kv *)calloc(nm ? nm : 1, sizeof *meta);
    texts = (sbuf *)calloc(nm ? nm : 1, sizeof *texts);
    if (!specs || !jobs || !kvs || !meta || !texts) { code = out_of_memory(); goto done; }
    for (i = 0; i < n; i++) {
        const sts_tensor_desc *d;
        sts_tensor_spec *s = &specs[i];
        ar_conv *j = &jobs[i];
        sts_dtype dt;
        if (sts_archive_at(a, i, &d, &e) != STS_OK) { code = fail(&e, in); goto done; }
        j->a = a; j->d = d; j->err = &perr; j->failed = &failed;
        j->mo.rounding = rnd;
        if (!d->type->plain) {  /* a block type: decoded, or nothing is written */
            if (!sts_dequantize_supported(d->type->name)) {
                fprintf(stderr, "%s: %s: tensor ", prog_cmd, in);
                put_name(stderr, d->name, d->name_len, 0);
                fprintf(stderr, " is %s, which this library does not decode (it decodes Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and "
                        "Q2_K to Q6_K): nothing written\n", d->type->name);
                code = EXIT_INVALID;
                goto done;
            }
            dt = decode_to;
            j->mo.convert = 1;
            j->mo.target = dt;
            decoded++;
        } else if (d->type->dtype == STS_DTYPE_COUNT) {
            fprintf(stderr, "%s: %s: tensor ", prog_cmd, in);
            put_name(stderr, d->name, d->name_len, 0);
            fprintf(stderr, " is %s, which has no safetensors dtype: nothing written\n", d->type->name);
            code = EXIT_INVALID;
            goto done;
        } else if (to != STS_DTYPE_COUNT && dtype_is_float4(d->type->dtype) && d->type->dtype != to) {
            dt = to;
            j->mo.convert = 1;
            j->mo.target = dt;
            converted++;
        } else {
            dt = d->type->dtype;
        }
        s->name = d->name; s->name_len = d->name_len; s->dtype = dt; s->rank = d->rank; s->shape = d->shape;
        if (d->numel > UINT64_MAX / 8) { fprintf(stderr, "%s: %s: tensor too large\n", prog_cmd, in); code = EXIT_INVALID; goto done; }
        s->data_size = dt == d->type->dtype ? d->nbytes : d->numel * (sts_dtype_bits(dt) / 8);
        s->produce = ar_produce;
        s->produce_user = j;
    }
    for (i = 0; i < nm; i++) {
        const sts_meta *m = sts_archive_meta_at(a, i);
        kvs[i] = *m;
        if (!gguf) {
            sb_meta_text(&texts[i], m, 0, 0);
            oom |= texts[i].oom;
            meta[i].key = m->key; meta[i].key_len = m->key_len;
            meta[i].value = texts[i].p ? texts[i].p : ""; meta[i].value_len = texts[i].n;
        }
    }
    if (oom) { code = out_of_memory(); goto done; }
    if (to_stdout) {
        out_file o;
        sts_sink sink;
        stdout_sink_open(&o, &sink);
        r = gguf ? sts_gguf_write(specs, n, kvs, nm, &sink, NULL, &e) : sts_write(specs, n, nm ? meta : NULL, nm, &sink, NULL, &e);
        code = r != STS_OK ? (o.err ? out_commit(&o) : fail(failed ? &perr : &e, "standard output")) : out_commit(&o);
    } else {
        const char *target = resolved ? resolved : out;
        r = gguf ? sts_gguf_write_path(target, specs, n, kvs, nm, NULL, &e)
                 : sts_write_path(target, specs, n, nm ? meta : NULL, nm, NULL, &e);
        code = r != STS_OK ? fail(failed ? &perr : &e, failed ? in : out) : 0;
    }
    if (!code) {
        FILE *f = to_stdout ? stderr : stdout;
        fprintf(f, "%s: %zu tensor%s and %zu metadata entr%s of %s written as %s", to_stdout ? "standard output" : out,
                n, n == 1 ? "" : "s", nm, nm == 1 ? "y" : "ies", nz(sts_archive_format(a)), gguf ? "GGUF" : "safetensors");
        if (converted) fprintf(f, "; %zu converted to %s", converted, sts_dtype_name(to));
        if (decoded) fprintf(f, "; %zu decoded from block types to %s", decoded, sts_dtype_name(decode_to));
        if (converted || decoded)
            fprintf(f, " (%s)", sts_dtype_bits(to == STS_DTYPE_COUNT ? decode_to : to) == 16 ? rounding_name(rnd) : "nearest_even");
        fputc('\n', f);
    }
done:
    for (i = 0; texts && i < nm; i++) free(texts[i].p);
    free(texts); free(meta); free(kvs); free(jobs); free(specs); free(resolved);
    sts_archive_close(a);
    return code;
}
static int cmd_convert(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    sts_dtype to = STS_DTYPE_COUNT;
    sts_rounding rnd = CLI_ROUNDING;
    sts_file *f;
    sts_error e;
    sts_tensor_spec *specs;
    conv *cv;
    sts_kv *meta = NULL;
    size_t i, n, converted = 0;
    uint64_t out_of_range = 0;
    int k, literal = 0, force_tty = 0, exists, code, gguf = -1;
    input_set ins;
    char *resolved = NULL;
    sbuf line;
    for (k = 1; k < argc; k++) {
        if (!literal && strcmp(argv[k], "--") == 0) { literal = 1; continue; }
        if (literal || argv[k][0] != '-' || !argv[k][1]) {
            if (!in) in = argv[k];
            else if (!out) out = argv[k];
            else return usage_error("unexpected argument %s", argv[k]);
            if (out) literal = 0;  /* -- covers IN and OUT; options may follow them */
        } else if (strcmp(argv[k], "--dtype") == 0) {
            static const struct { const char *n; sts_dtype d; } fl[4] = { { "F16", STS_DTYPE_F16 }, { "BF16", STS_DTYPE_BF16 }, { "F32", STS_DTYPE_F32 }, { "F64", STS_DTYPE_F64 } };
            int j;
            to = STS_DTYPE_COUNT;
            for (j = 0; k + 1 < argc && j < 4; j++) if (strcasecmp_ascii(argv[k + 1], fl[j].n)) to = fl[j].d;
            if (to == STS_DTYPE_COUNT) return usage_error("--dtype takes F16, BF16, F32 or F64, got %s", k + 1 < argc ? argv[k + 1] : "nothing");
            k++;
        } else if (strcmp(argv[k], "--rounding") == 0) {
            if (k + 1 >= argc) return usage_error("--rounding takes truncate or nearest_even, got %s", "nothing");
            if (strcmp(argv[k + 1], "truncate") == 0) rnd = STS_ROUND_TRUNCATE;
            else if (strcmp(argv[k + 1], "nearest_even") == 0) rnd = STS_ROUND_NEAREST_EVEN;
            else return usage_error("--rounding takes truncate or nearest_even, got %s", argv[k + 1]);
            k++;
        } else if (strcmp(argv[k], "--to") == 0) {
            if (k + 1 < argc && strcmp(argv[k + 1], "gguf") == 0) gguf = 1;
            else if (k + 1 < argc && strcmp(argv[k + 1], "safetensors") == 0) gguf = 0;
            else return usage_error("--to takes safetensors or gguf, got %s", k + 1 < argc ? argv[k + 1] : "nothing");
            k++;
        } else if (strcmp(argv[k], "--force-tty") == 0) force_tty = 1;
        else return usage_error("unknown option %s", argv[k]);
    }
    if (in && out && gguf < 0) {  /* the output's format: --to, else OUT's extension */
        size_t ol = strlen(out);
        gguf = ol > 5 && strcasecmp_ascii(out + ol - 5, ".gguf");
    }
    /* a GGUF output, or an input that is not one safetensors file: through the archive */
    if (in && out && (gguf || which_reader(in) != READ_FILE)) return convert_archive(in, out, to, rnd, gguf, force_tty);
    if (!in || !out || to == STS_DTYPE_COUNT) return usage_error("%s", "usage: " CONVERT_SYNOPSIS);
    /* the output: never the input (the same file under any name), never a FIFO or device */
    memset(&ins, 0, sizeof ins);
    if (inputs_add(&ins, in)) return out_of_memory();
    code = strcmp(out, "-") == 0 ? (out_stdout_ok(force_tty, "a safetensors file is") ? 0 : EXIT_USAGE)
                                 : out_check(out, &ins, NULL, &exists, &resolved);
    inputs_free(&ins);
    if (code) return code;
    if (sts_open(in, NULL, &f, &e) != STS_OK) { free(resolved); return fail(&e, in); }
    n = sts_count(f);
    specs = (sts_tensor_spec *)calloc(n ? n : 1, sizeof *specs);
    cv = (conv *)calloc(n ? n : 1, sizeof *cv);
    if (sts_has_metadata(f)) {
        meta = (sts_kv *)calloc(sts_metadata_count(f) + 1, sizeof *meta);
        for (i = 0; meta && i < sts_metadata_count(f); i++) meta[i] = *sts_metadata_at(f, i);
    }
    if (!specs || !cv || (sts_has_metadata(f) && !meta)) { free(specs); free(cv); free(meta); free(resolved); sts_close(f); return out_of_memory(); }
    for (i = 0; i < n; i++) {
        const sts_tensor *t = sts_at(f, i);
        int floating = t->dtype == STS_DTYPE_F16 || t->dtype == STS_DTYPE_BF16 || t->dtype == STS_DTYPE_F32 || t->dtype == STS_DTYPE_F64;
        specs[i].name = t->name; specs[i].name_len = t->name_len; specs[i].rank = t->rank; specs[i].shape = t->shape;
        if (floating && t->dtype != to) {
            cv[i].f = f; cv[i].t = t; cv[i].to = to; cv[i].rnd = rnd; cv[i].out_of_range = &out_of_range;
            specs[i].dtype = to;
            specs[i].data_size = sts_tensor_numel(t) * (sts_dtype_bits(to) / 8);
            specs[i].produce = conv_produce;
            specs[i].produce_user = &cv[i];
            converted++;
        } else {  /* everything else is copied as it is */
            specs[i].dtype = t->dtype;
            specs[i].data = sts_data(f, t);
            specs[i].data_size = sts_tensor_nbytes(t);
        }
    }
    if (strcmp(out, "-") == 0) {  /* standard output, through a sink */
        out_file o;
        sts_sink sink;
        stdout_sink_open(&o, &sink);
        code = sts_write(specs, n, meta, meta ? sts_metadata_count(f) : 0, &sink, NULL, &e) != STS_OK ? (o.err ? out_commit(&o) : fail(&e, "standard output")) : out_commit(&o);
    } else {  /* the library's atomic write: a temporary beside OUT (a link's target), fsync, rename */
        code = sts_write_path(resolved ? resolved : out, specs, n, meta, meta ? sts_metadata_count(f) : 0, NULL, &e) != STS_OK ? fail(&e, out) : 0;
    }
    free(specs); free(cv); free(meta); free(resolved);
    sts_close(f);
    if (code) return code;
    memset(&line, 0, sizeof line);
    sb_str(&line, strcmp(out, "-") == 0 ? "standard output" : out);
    sb_str(&line, ": ");
    sb_u64(&line, converted);
    sb_str(&line, " of ");
    sb_u64(&line, n);
    sb_str(&line, " tensors converted to ");
    sb_str(&line, sts_dtype_name(to));
    sb_str(&line, " (");
    sb_str(&line, to == STS_DTYPE_F16 || to == STS_DTYPE_BF16 ? rounding_name(rnd) : "nearest_even");
    sb_str(&line, ")");
    sb_out_of_range(&line, out_of_range, to, rnd);
    if (line.oom) return out_of_memory();
    fprintf(strcmp(out, "-") == 0 ? stderr : stdout, "%s\n", line.p);
    free(line.p);
    return 0;
}

/* ---- bench ------------------------------------------------------------------------------------ */
static int cmd_bench(int argc, char **argv) {
    enum { NT = 10000, REPS = 20 };
    size_t i, cap = (size_t)NT * 140 + 1024, len = 0;
    char *h;
    uint64_t off = 0, total;
    double best = 1e9, t;
    int rep;
    sts_file *f = NULL;
    sts_error e;
    size_t nconv = (size_t)64 << 20;
    float *src;
    uint16_t *dst;
    (void)argv;
    if (argc > 1) return usage_error("unexpected argument %s", argv[1]);
    if (!(h = (char *)malloc(cap + 8))) return out_of_memory();
    /* a writer-shaped header of 10,000 BF16 tensors */
    len += (size_t)snprintf(h + 8 + len, cap - len, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (i = 0; i < NT; i++) {
        uint64_t sz = 4096ull * 1024 * 2;
        len += (size_t)snprintf(h + 8 + len, cap - len, ",\"model.layers.%zu.mlp.experts.%zu.up_proj.weight\":{\"dtype\":\"BF16\",\"shape\":[4096,1024],\"data_offsets\":[%llu,%llu]}",
                                i / 100, i % 100, (unsigned long long)off, (unsigned long long)(off + sz));
        off += sz;
    }
    h[8 + len++] = '}';
    while (len % 8) h[8 + len++] = ' ';
    for (i = 0; i < 8; i++) h[i] = (char)((uint64_t)len >> (8 * i));
    total = 8 + len + off;
    for (rep = 0; rep < REPS; rep++) {
        double t0 = now_s();
        if (sts_parse_header(h, 8 + len, total, NULL, &f, &e) != STS_OK) { free(h); return fail(&e, "bench header"); }
        t = now_s() - t0;
        if (t < best) best = t;
        sts_close(f);
    }
    printf("header parse + validation + name index: %zu tensors, %.2f MB header: %.0f MB/s (best of %d)\n", (size_t)NT, len / 1e6, len / 1e6 / best, REPS);
    free(h);
    src = (float *)malloc(nconv * sizeof *src);
    dst = (uint16_t *)malloc(nconv * sizeof *dst);
    if (!src || !dst) { free(src); free(dst); return EXIT_INVALID; }
    for (i = 0; i < nconv; i++) src[i] = (float)i * 0.001f - 1000.0f;
    best = 1e9;
    for (rep = 0; rep < 5; rep++) {
        double t0 = now_s();
        sts_convert(dst, STS_DTYPE_BF16, src, STS_DTYPE_F32, nconv, STS_ROUND_NEAREST_EVEN);
        t = now_s() - t0;
        if (t < best) best = t;
    }
    printf("F32 -> BF16 (nearest even), %zu MiB in: %.1f GB/s of input+output (best of 5)\n", nconv * 4 >> 20, nconv * 6 / 1e9 / best);
    best = 1e9;
    for (rep = 0; rep < 5; rep++) {
        double t0 = now_s();
        memcpy(dst, src, nconv * 2);
        t = now_s() - t0;
        if (t < best) best = t;
    }
    printf("memcpy of the same output size for comparison: %.1f GB/s of input+output\n", nconv * 4 / 1e9 / best);
    free(src);
    free(dst);
    return 0;
}

/* ---- the command table ------------------------------------------------------------------------ */
typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *usage;
    const char *help;
} command;

static const command commands[] = {
    { "verify", cmd_verify, "sts verify [--strict] [--sha256 HEX] FILE...",
      "Validate each file as the Hugging Face reference does (with --strict, also what the format\n"
      "text forbids). FILE is any source the archive opens (sts inspect --probe says which): a\n"
      "safetensors file, a sharded checkpoint (model.safetensors.index.json or its folder: every\n"
      "shard is validated), a dataset folder, a .npy file. Reads the headers only, unless --sha256.\n"
      "One line per FILE (N_TENSORS: all of its tensors, every shard's):\n"
      "  FILE<TAB>OK<TAB>N_TENSORS\n"
      "  FILE<TAB>ERR<TAB>RESULT_NAME<TAB>message\n"
      "  --sha256 HEX   the FILE after it must also have this SHA-256 (64 hex digits, either case;\n"
      "                 the Hugging Face Hub lists it as the file's LFS oid), else ERR CHECKSUM. It\n"
      "                 is for one file, not a sharded checkpoint or a dataset; give it again before\n"
      "                 each FILE to check.\n"
      "Exit 0 if every file is valid, 1 if any is not, 2 on usage errors." },
    { "inspect", cmd_inspect, "sts inspect [--json] [--probe] FILE|DIR",
      "A safetensors file: a table of its tensors (name, dtype, shape, bytes, data offsets) and its\n"
      "metadata. A dataset folder: the manifest summary, the schema and per-shard counts. Any other\n"
      "source the archive opens (a .npy file, a sharded checkpoint's index or its folder): its format,\n"
      "provider, version, tensor count and bytes, files and typed metadata, and a table of its\n"
      "tensors (name, type, shape, bytes, file, offset, byte order).\n"
      "--json prints the same as one JSON object.\n"
      "--probe prints every provider's verdict on the source instead, one line each, then the one\n"
      "chosen (the most confident; - and exit 1 when none supports the source):\n"
      "  PROVIDER<TAB>FORMAT<TAB>supported|unsupported<TAB>CONFIDENCE<TAB>VERSION<TAB>reason\n"
      "  winner<TAB>PROVIDER" },
    { "dump", cmd_dump, "sts dump [--limit N] FILE [NAME...]",
      "Decode tensor values through the codecs and print them (all tensors, or the named ones).\n"
      "Each value is written as numpy's repr writes it: the fewest digits that read back to the\n"
      "same value of its own dtype (F16 and BF16 too); integers exactly. An axis longer than 2N\n"
      "shows its first and last N values (--limit N, numpy's edgeitems, default 3). -- ends the\n"
      "options. FILE is any source the archive opens: a safetensors, .npy or GGUF file, a sharded\n"
      "checkpoint (its index or folder), a dataset folder. GGUF block types that the library\n"
      "decodes (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K to Q6_K) are shown decoded to F32; other block\n"
      "types are not supported: said on standard error, the other tensors shown, exit 1." },
    { "get", cmd_get, "sts get DIR KEY [-o FILE|-] [--npy] [--force-tty]",
      "Look KEY up in a dataset (through its tensor index, else its headers) and write the tensor's\n"
      "raw bytes to FILE or standard output, or, with --npy, a .npy file numpy loads. KV datasets\n"
      "key tensors as <key><separator><column>; batch datasets as <shard file>/<column>.\n"
      "  -o FILE, --output FILE   write FILE: through a temporary beside it, renamed over it once\n"
      "                           complete (an existing FILE is untouched on failure); FILE may not\n"
      "                           be one of the dataset's files; -o - is standard output (the default)\n"
      "  --npy                    a .npy file (header, then the data) instead of raw bytes\n"
      "  --force-tty              write binary to standard output even when it is a terminal\n"
      "Options go before or after DIR and KEY. -- makes the arguments after it DIR and KEY even when\n"
      "they begin with '-' (a KEY like -40__x), and options may still follow them. An unusable tensor\n"
      "index is reported and the lookup goes through the shards' headers.\n"
      "DIR may also be a safetensors file, or any other source the archive opens: a .npy file (KEY:\n"
      "its name, w for w.npy) or a sharded checkpoint's index or folder (KEY: a tensor name). The\n"
      "bytes are written little-endian, as safetensors holds them (a big-endian .npy is swapped)." },
    { "pack", cmd_pack, "sts pack OUT_DIR --column NAME=FILE.npy ... (--batch-size N | --keys FILE | --name-col COL) [options]",
      "Build a dataset from .npy files, one per column, whose first axis is rows.\n"
      "  --batch-size N               batch mode: N rows per file\n"
      "  --keys FILE                  KV mode, one key per line of FILE (- for standard input)\n"
      "  --name-col COL               KV mode, keys from the 1-D integer column COL (int8 to int64,\n"
      "                               uint8 to uint64)\n"
      "  --kv-separator S             between key and column in tensor names (default __)\n"
      "  --duplicates fail|lastWin    KV mode duplicates (default fail)\n"
      "  --dtype D                    encode every column to D (F16 F32 F64 BF16 U8 I8 U16 I16 U32 I32 U64 I64)\n"
      "  --rounding truncate|nearest_even   F16/BF16 rounding (default nearest_even, as numpy and\n"
      "                               sts convert; the library's own default is the connector's truncate)\n"
      "  --tail drop|pad|write        batch mode: the last, partial batch (default write)\n"
      "  --target-shard-size-mb N     KV mode shard size, 50..1000 (default 300)\n"
      "  --kv-layout sorted|arrival   KV shards as the reference writer lays them out (default), or\n"
      "                               in the rows' order, each written while it fills\n"
      "  --generate-index             write _tensor_index.csv and _tensor_index.json\n"
      "  --overwrite                  replace an existing dataset in OUT_DIR\n"
      "  --no-fsync                   skip fsync (faster, not crash-safe)\n"
      "The summary line says the dtype and rounding used and how many values did not fit it\n"
      "(saturated, or overflowed to inf), and the rows --tail drop dropped. An input that is a file\n"
      "of the dataset in OUT_DIR is refused. A progress bar goes to standard error when it is a\n"
      "terminal." },
    { "assign", cmd_assign, ASSIGN_SYNOPSIS,
      "Which of N workers (DataLoader workers, DDP or MPI ranks) reads which shard of the dataset,\n"
      "the rule every consumer uses: one line per shard in dataset_manifest.json's order,\n"
      "WORKER<TAB>SHARD<TAB>SAMPLES (--worker K: only worker K's), and a summary on standard error.\n"
      "balance (the default, the connector's rule): shards in order, each to the worker with the\n"
      "fewest samples so far, a tie to the lower id; it needs the manifest's samples_count.\n"
      "round_robin: shard i to worker i mod N. Every shard goes to exactly one worker." },
    { "lineage", cmd_lineage, LINEAGE_SYNOPSIS,
      "The dataset record MLflow stores for the dataset in DIR, as one line of JSON: what\n"
      "mlflow.log_input(MetaDataset(source, name, schema)) would store, with MLflow's digest. Its\n"
      "values are JSON text: name (default safetensors_dataset), digest, source ({\"uri\": ...}: DIR\n"
      "made absolute, or --uri), source_type (local, or the URI's scheme), schema (one MLflow\n"
      "tensor spec per manifest column; batch mode's leading dim is -1), profile (num_rows,\n"
      "num_shards, total_bytes, format, mode) and, with --context, context (log_input's context).\n"
      "Needs dataset_manifest.json. The same folder gives the same bytes." },
    { "index", cmd_index, "sts index DIR",
      "Rebuild _tensor_index.csv and _tensor_index.json from the dataset's shard headers." },
    { "check", cmd_check, "sts check [--data] DIR|FILE",
      "Verify a whole dataset, one line per problem (FAIL rule: what): every shard valid (strict);\n"
      "the manifest's sizes, totals, sample counts and schema against the shards; the index against\n"
      "every header both ways; _tensor_index.csv against the JSON and its weight_map; shards the\n"
      "manifest does not name (orphans), writers' temporaries and a job's lock. --data also reads\n"
      "every shard and compares its CRC-32C with the manifest's. Exit 1 on any problem." },
    { "clean", cmd_clean, "sts clean [--dry-run] [--force] DIR",
      "Remove what jobs left behind: shards the manifest does not name, writers' temporaries, and\n"
      "the lock of a job whose process is gone (--force: also one that may live, e.g. on another\n"
      "host). Only files of this library's naming; never a shard the manifest names. Each file is\n"
      "listed; --dry-run removes nothing." },
    { "convert", cmd_convert, CONVERT_SYNOPSIS,
      "Convert every floating tensor (F16, BF16, F32, F64) of IN to the dtype and write OUT (other\n"
      "tensors and the metadata are copied). Default rounding: nearest_even, as numpy and PyTorch\n"
      "do (every sts command that converts rounds the same way). The summary line says the rounding\n"
      "used and how many values did not fit the dtype (saturated, or overflowed to inf). OUT is\n"
      "written through a temporary renamed over it once complete, and may not be IN; - is standard\n"
      "output (not a terminal, unless --force-tty; the summary then goes to standard error).\n"
      "\n"
      "IN may be any container the archive opens: a GGUF file, a .npy file, a sharded checkpoint or\n"
      "a dataset (--dtype is then optional). Block-quantised GGUF tensors (Q4_0, Q4_1, Q5_0, Q5_1,\n"
      "Q8_0, Q2_K to Q6_K) are decoded to --dtype, F32 by default; other block types are refused.\n"
      "Shapes are row-major; GGUF metadata becomes __metadata__ strings (numbers in decimal,\n"
      "arrays as JSON). OUT is GGUF when it ends in .gguf or with --to gguf: a GGUF v3 file that\n"
      "ggml loads, of the types GGUF has (F32, F16, BF16, F64, I8 to I64; others are refused),\n"
      "typed metadata kept (safetensors metadata as STRING values). One converted tensor at a time\n"
      "is held in memory." },
    { "bench", cmd_bench, "sts bench",
      "Quick benchmarks on this machine: header parsing and the F32 -> BF16 codec beside memcpy." },
    { "rules", cmd_rules, "sts rules", "Print the validation-rule table (rule, result code, reference variant)." },
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *to) {
    size_t i;
    fprintf(to, "sts %s - safetensors_spark.h command-line tool\n\nusage:\n", STS_VERSION_STRING);
    for (i = 0; i < NCOMMANDS; i++) fprintf(to, "  %s\n", commands[i].usage);
    fprintf(to, "\nsts COMMAND --help explains a command. Exit codes: 0 ok, 1 invalid input, 2 usage.\n");
}

int main(int argc, char **argv) {
    size_t i;
    if (argc < 2) { usage(stderr); return EXIT_USAGE; }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) { usage(stdout); return 0; }
    if (strcmp(argv[1], "--version") == 0) { printf("sts %s\n", STS_VERSION_STRING); return 0; }
    for (i = 0; i < NCOMMANDS; i++) {
        if (strcmp(argv[1], commands[i].name) == 0) {
            int k;
            static char name[64];
            snprintf(name, sizeof name, "sts %s", commands[i].name);
            prog_cmd = name;
            for (k = 2; k < argc && strcmp(argv[k], "--") != 0; k++)  /* after --, "-h" may be a key or a file */
                if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) { printf("usage: %s\n\n%s\n", commands[i].usage, commands[i].help); return 0; }
            return commands[i].run(argc - 1, argv + 1);
        }
    }
    fprintf(stderr, argv[1][0] == '-' ? "sts: unknown option %s\n\n" : "sts: unknown command %s\n\n", argv[1]);
    usage(stderr);
    return EXIT_USAGE;
}
