/* test_sha256.c - SHA-256 (FIPS 180-4): the NIST example messages ("", "abc", the 448- and 896-bit
   messages, a million 'a') on both paths; every length from 0 to 300 against a reference written
   here from the standard (its constants derived from the primes' square and cube roots), in one
   call and in random pieces; the SHA-NI path against the portable one over random data at many
   lengths and alignments (skipped with a note on a CPU without the SHA extensions); the hex form
   and its parser; and the system's sha256sum on generated files, one of them a safetensors file
   (the digest the Hugging Face Hub lists as the file's LFS oid).
   STS_TEST_LEVEL=quick (ASan, valgrind) shrinks the lengths and sizes. */
#define _POSIX_C_SOURCE 200809L
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#include "fs_util.h"

#include <math.h>

/* ---- a reference, written from FIPS 180-4 the long way: pad the whole message, then compress ---- */
static uint32_t ref_k[64], ref_iv[8];

static void ref_constants(void) {  /* fractions of the cube roots of the first 64 primes, square roots of the first 8 */
    int found = 0, c;
    for (c = 2; found < 64; c++) {
        int d, prime = 1;
        for (d = 2; d * d <= c; d++)
            if (c % d == 0) prime = 0;
        if (!prime) continue;
        ref_k[found] = (uint32_t)((cbrt((double)c) - floor(cbrt((double)c))) * 4294967296.0);
        if (found < 8) ref_iv[found] = (uint32_t)((sqrt((double)c) - floor(sqrt((double)c))) * 4294967296.0);
        found++;
    }
}
static uint32_t ref_rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void ref_sha256(const uint8_t *msg, size_t n, uint8_t out[32]) {
    size_t total = (n + 8) / 64 * 64 + 64, b;  /* room for 0x80 and the 64-bit length */
    uint8_t *m = (uint8_t *)calloc(total, 1);
    uint32_t hv[8], w[64];
    uint64_t bits = (uint64_t)n * 8;
    int t, k;
    TU_CHECK(m != NULL);
    if (n) memcpy(m, msg, n);
    m[n] = 0x80;
    for (k = 0; k < 8; k++) m[total - 1 - k] = (uint8_t)(bits >> (8 * k));
    memcpy(hv, ref_iv, sizeof hv);
    for (b = 0; b < total; b += 64) {
        uint32_t v[8];
        for (t = 0; t < 16; t++)
            w[t] = (uint32_t)m[b + 4 * t] << 24 | (uint32_t)m[b + 4 * t + 1] << 16 | (uint32_t)m[b + 4 * t + 2] << 8 |
                   m[b + 4 * t + 3];
        for (t = 16; t < 64; t++) {
            uint32_t s0 = ref_rotr(w[t - 15], 7) ^ ref_rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
            uint32_t s1 = ref_rotr(w[t - 2], 17) ^ ref_rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
            w[t] = s1 + w[t - 7] + s0 + w[t - 16];
        }
        memcpy(v, hv, sizeof v);
        for (t = 0; t < 64; t++) {  /* v = a b c d e f g h */
            uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
            uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
            uint32_t t1 = v[7] + (ref_rotr(v[4], 6) ^ ref_rotr(v[4], 11) ^ ref_rotr(v[4], 25)) + ch + ref_k[t] + w[t];
            uint32_t t2 = (ref_rotr(v[0], 2) ^ ref_rotr(v[0], 13) ^ ref_rotr(v[0], 22)) + maj;
            memmove(v + 1, v, 7 * sizeof v[0]);
            v[4] += t1;
            v[0] = t1 + t2;
        }
        for (k = 0; k < 8; k++) hv[k] += v[k];
    }
    for (k = 0; k < 32; k++) out[k] = (uint8_t)(hv[k / 4] >> (24 - 8 * (k % 4)));
    free(m);
}

/* ---- helpers ---- */
static int have_hw(void) { return strcmp(sts_sha256_isa(), "sha-ni") == 0; }

/* The digest of n bytes with the path asked for (1 = SHA-NI where present), in one update. */
static void digest_with(int use_hw, const void *p, size_t n, uint8_t out[32]) {
    sts_sha256 s;
    sts__sha256_init_with(&s, use_hw);
    sts_sha256_update(&s, p, n);
    sts_sha256_final(&s, out);
}
/* The same in random pieces, zero-length ones among them. */
static void digest_pieces(int use_hw, const uint8_t *p, size_t n, tu_rng *r, uint8_t out[32]) {
    sts_sha256 s;
    size_t at = 0;
    sts__sha256_init_with(&s, use_hw);
    while (at < n) {
        size_t left = n - at, len;
        switch (tu_below(r, 4)) {
        case 0: len = 0; break;
        case 1: len = tu_below(r, 8); break;
        case 2: len = tu_below(r, 200); break;
        default: len = tu_below(r, (uint32_t)(left < 100000 ? left + 1 : 100001)); break;
        }
        if (len > left) len = left;
        sts_sha256_update(&s, len ? p + at : NULL, len);
        at += len;
    }
    sts_sha256_final(&s, out);
}
static void fill_random(uint8_t *p, size_t n, uint64_t seed) {
    tu_rng r;
    size_t i;
    r.s = seed;
    for (i = 0; i < n; i++) p[i] = (uint8_t)(tu_next(&r) >> 32);
}
static void expect_hex(const uint8_t d[32], const char *want, const char *what) {
    char hex[65];
    sts_sha256_hex(d, hex);
    if (strcmp(hex, want) != 0) TU_FAIL("%s: got %s, want %s", what, hex, want);
}

/* ---- tests ---- */
static void test_constants(void **state) {
    uint8_t d[32], r[32];
    int i;
    (void)state;
    for (i = 0; i < 64; i++)
        if (ref_k[i] != sts__sha256_k[i]) TU_FAIL("K[%d]: header %08x, cube root %08x", i, sts__sha256_k[i], ref_k[i]);
    sts_sha256_memory("", 0, d);
    ref_sha256((const uint8_t *)"", 0, r);
    assert_memory_equal(d, r, 32);
    print_message("SHA-256 path: %s\n", sts_sha256_isa());
}

static void test_nist_vectors(void **state) {
    static const struct { const char *msg, *hex; } v[] = {
        { "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
        { "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
        { "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
        { "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrst"
          "nopqrstu", "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1" },
    };
    const char *million = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
    uint8_t d[32], *a = (uint8_t *)malloc(1000000);
    size_t i;
    int hw;
    (void)state;
    TU_CHECK(a != NULL);
    memset(a, 'a', 1000000);
    for (hw = 0; hw < 2; hw++) {
        for (i = 0; i < sizeof v / sizeof v[0]; i++) {
            digest_with(hw, v[i].msg, strlen(v[i].msg), d);
            expect_hex(d, v[i].hex, hw ? "default path" : "portable path");
        }
        digest_with(hw, a, 1000000, d);
        expect_hex(d, million, "a million 'a' in one update");
        {   /* in 1000 updates of 1000 and in 1-byte updates for the first 10,000 */
            sts_sha256 s;
            sts__sha256_init_with(&s, hw);
            for (i = 0; i < 10000; i++) sts_sha256_update(&s, a, 1);
            for (i = 0; i < 990; i++) sts_sha256_update(&s, a, 1000);
            sts_sha256_final(&s, d);
            expect_hex(d, million, "a million 'a' in pieces");
        }
    }
    for (i = 0; i < sizeof v / sizeof v[0]; i++) {
        sts_sha256_memory(v[i].msg, strlen(v[i].msg), d);
        expect_hex(d, v[i].hex, "sts_sha256_memory");
    }
    free(a);
}

static void test_every_length(void **state) {
    uint8_t buf[300], want[32], got[32];
    size_t n;
    int hw, rep;
    tu_rng r;
    (void)state;
    r.s = 7;
    fill_random(buf, sizeof buf, 1);
    for (n = 0; n <= 300; n++) {
        ref_sha256(buf, n, want);
        for (hw = 0; hw < 2; hw++) {
            digest_with(hw, buf, n, got);
            if (memcmp(got, want, 32) != 0) TU_FAIL("length %zu, %s path, one update", n, hw ? "default" : "portable");
            for (rep = 0; rep < 4; rep++) {
                digest_pieces(hw, buf, n, &r, got);
                if (memcmp(got, want, 32) != 0)
                    TU_FAIL("length %zu, %s path, in pieces", n, hw ? "default" : "portable");
            }
        }
        sts_sha256_memory(buf, n, got);
        if (memcmp(got, want, 32) != 0) TU_FAIL("length %zu, sts_sha256_memory", n);
    }
}

static void test_hw_matches_portable(void **state) {
    const int quick = tu_quick();
    const size_t max = quick ? 20000 : 200000, step = quick ? 997 : 37;
    const size_t big = quick ? ((size_t)1 << 20) : ((size_t)48 << 20);
    uint8_t *buf = (uint8_t *)malloc(big + 64), hw[32], sw[32];
    size_t n, off;
    tu_rng r;
    sts_sha256 s;
    (void)state;
    sts_sha256_init(&s);
    assert_int_equal(s.use_hw, have_hw());
    if (!have_hw()) {
        print_message("note: no SHA-NI path here (a CPU without the SHA extensions, or STS_NO_SIMD); "
                      "only the portable path is tested\n");
        free(buf);
        skip();
        return;
    }
    TU_CHECK(buf != NULL);
    r.s = 11;
    fill_random(buf, big + 64, 2);
    for (off = 0; off < 16; off += quick ? 5 : 1) {  /* every alignment of the caller's bytes */
        for (n = 0; n <= max; n += n < 300 ? 1 : (n < 20000 ? step : 4099)) {
            const uint8_t *p = buf + off;
            digest_with(1, p, n, hw);
            digest_with(0, p, n, sw);
            if (memcmp(hw, sw, 32) != 0) TU_FAIL("length %zu at offset %zu: SHA-NI and portable differ", n, off);
            if (n % 7 == 0) {
                digest_pieces(1, p, n, &r, hw);
                if (memcmp(hw, sw, 32) != 0) TU_FAIL("length %zu at offset %zu: SHA-NI in pieces differs", n, off);
            }
        }
    }
    digest_with(0, buf + 3, big, sw);  /* large: one pass, pieces, and the portable path in pieces */
    digest_with(1, buf + 3, big, hw);
    assert_memory_equal(hw, sw, 32);
    digest_pieces(1, buf + 3, big, &r, hw);
    assert_memory_equal(hw, sw, 32);
    digest_pieces(0, buf + 3, big, &r, hw);
    assert_memory_equal(hw, sw, 32);
    free(buf);
}

static void test_state(void **state) {  /* final re-initialises; a copied state forks the digest */
    uint8_t a[32], b[32], want_ab[32], want_ac[32];
    sts_sha256 s, fork;
    int hw;
    (void)state;
    sts_sha256_memory("hello, world", 12, want_ab);
    sts_sha256_memory("hello, there", 12, want_ac);
    for (hw = 0; hw < 2; hw++) {
        sts__sha256_init_with(&s, hw);
        sts_sha256_update(&s, "junk", 4);
        sts_sha256_final(&s, a);
        sts_sha256_update(&s, "hello, ", 7);
        fork = s;
        sts_sha256_update(&s, "world", 5);
        sts_sha256_update(&fork, "there", 5);
        sts_sha256_final(&s, a);
        sts_sha256_final(&fork, b);
        assert_memory_equal(a, want_ab, 32);
        assert_memory_equal(b, want_ac, 32);
        assert_int_equal(s.len, 0);
        assert_int_equal(s.fill, 0);
    }
}

static void test_hex(void **state) {
    const char *abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    uint8_t d[32], back[32], keep[32];
    char hex[65], bad[65];
    int i;
    size_t k;
    (void)state;
    sts_sha256_memory("abc", 3, d);
    memset(hex, 'x', sizeof hex);
    sts_sha256_hex(d, hex);
    assert_int_equal(hex[64], 0);
    assert_string_equal(hex, abc);
    assert_int_equal(sts_sha256_parse_hex(hex, 64, back), 1);
    assert_memory_equal(back, d, 32);
    for (i = 0; i < 64; i++) bad[i] = (char)(hex[i] >= 'a' ? hex[i] - 'a' + 'A' : hex[i]);  /* uppercase */
    bad[64] = 0;
    memset(back, 0, sizeof back);
    assert_int_equal(sts_sha256_parse_hex(bad, 64, back), 1);
    assert_memory_equal(back, d, 32);
    for (i = 0; i < 64; i += 2) bad[i] = hex[i];  /* mixed case */
    assert_int_equal(sts_sha256_parse_hex(bad, 64, back), 1);
    assert_memory_equal(back, d, 32);
    {   /* every byte value formats as two lowercase digits and parses back */
        uint8_t all[32];
        int start;
        for (start = 0; start < 256; start += 32) {
            for (i = 0; i < 32; i++) all[i] = (uint8_t)(start + i);
            sts_sha256_hex(all, hex);
            for (i = 0; i < 64; i++) TU_CHECK((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f'));
            assert_int_equal(sts_sha256_parse_hex(hex, 64, back), 1);
            assert_memory_equal(back, all, 32);
        }
    }
    sts_sha256_hex(d, hex);
    memset(keep, 0xA5, sizeof keep);
    memcpy(back, keep, sizeof back);
    /* wrong lengths: the first 63 digits, 65 (one more digit), none, and NULL */
    assert_int_equal(sts_sha256_parse_hex(hex, 63, back), 0);
    memcpy(bad, hex, 64);
    bad[64] = '0';
    assert_int_equal(sts_sha256_parse_hex(bad, 65, back), 0);
    assert_int_equal(sts_sha256_parse_hex(hex, 0, back), 0);
    assert_int_equal(sts_sha256_parse_hex(NULL, 64, back), 0);
    /* a bad character at every position: 'g', 'G', space, '-', NUL, '/' and ':' (beside the digits), 0xff */
    for (k = 0; k < 8; k++) {
        static const char bads[8] = { 'g', 'G', ' ', '-', '\0', '/', ':', (char)0xff };
        for (i = 0; i < 64; i++) {
            memcpy(bad, hex, 65);
            bad[i] = bads[k];
            if (sts_sha256_parse_hex(bad, 64, back) != 0)
                TU_FAIL("bad character %#x at %d accepted", (unsigned char)bads[k], i);
        }
    }
    assert_memory_equal(back, keep, 32);  /* untouched by every refusal */
}

/* sha256sum's digest of a file, parsed; 0 when it could not be run. */
static int system_sha256sum(const char *path, uint8_t out[32]) {
    char cmd[4200], line[4400];
    FILE *p;
    int ok;
    snprintf(cmd, sizeof cmd, "sha256sum '%s'", path);
    if (!(p = popen(cmd, "r"))) return 0;
    ok = fgets(line, sizeof line, p) != NULL && strlen(line) > 64 && line[64] == ' ' &&
         sts_sha256_parse_hex(line, 64, out);
    while (fgets(line, sizeof line, p)) {}
    return pclose(p) == 0 && ok;
}

static void test_sha256sum(void **state) {
    const size_t sizes[] = { 0, 1, 3, 55, 56, 63, 64, 65, 119, 120, 1000, 4096, 65536 + 17, (1u << 20) + 17, 5u << 20 };
    const size_t count = tu_quick() ? 13 : sizeof sizes / sizeof sizes[0];
    char dir[4096], path[4200];
    size_t i;
    uint8_t ours[32], theirs[32];
    (void)state;
    tf_tmpdir(dir, sizeof dir);
    for (i = 0; i < count; i++) {
        uint8_t *b = (uint8_t *)malloc(sizes[i] + 1);
        TU_CHECK(b != NULL);
        fill_random(b, sizes[i], 100 + i);
        tf_join(path, sizeof path, dir, "data.bin");
        tf_write(path, b, sizes[i]);
        sts_sha256_memory(b, sizes[i], ours);
        if (!system_sha256sum(path, theirs)) TU_FAIL("sha256sum could not be run on %s", path);
        if (memcmp(ours, theirs, 32) != 0) TU_FAIL("%zu bytes: our digest differs from sha256sum's", sizes[i]);
        digest_with(0, b, sizes[i], ours);
        if (memcmp(ours, theirs, 32) != 0) TU_FAIL("%zu bytes: the portable digest differs from sha256sum's", sizes[i]);
        free(b);
    }
    {   /* a safetensors file: its digest is what the Hub lists as the file's LFS oid */
        float w[1000];
        uint64_t shape[2] = { 10, 100 };
        sts_tensor_spec spec;
        sts_error err;
        void *bytes = NULL;
        size_t size = 0;
        int k;
        for (k = 0; k < 1000; k++) w[k] = (float)k * 0.25f;
        memset(&spec, 0, sizeof spec);
        spec.name = "weight";
        spec.name_len = 6;
        spec.dtype = STS_DTYPE_F32;
        spec.rank = 2;
        spec.shape = shape;
        spec.data = w;
        spec.data_size = sizeof w;
        assert_int_equal(sts_write_memory(&spec, 1, NULL, 0, NULL, &bytes, &size, &err), STS_OK);
        tf_join(path, sizeof path, dir, "model.safetensors");
        tf_write(path, bytes, size);
        sts_sha256_memory(bytes, size, ours);
        sts_free(NULL, bytes, size);
        TU_CHECK(system_sha256sum(path, theirs));
        assert_memory_equal(ours, theirs, 32);
    }
    tf_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_constants),
        cmocka_unit_test(test_nist_vectors),
        cmocka_unit_test(test_every_length),
        cmocka_unit_test(test_hw_matches_portable),
        cmocka_unit_test(test_state),
        cmocka_unit_test(test_hex),
        cmocka_unit_test(test_sha256sum),
    };
    ref_constants();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
