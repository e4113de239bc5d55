/* codec_ref.h - an independent reference for sts_convert, used only by the tests.

   Written apart from the header's codec layer and on purpose in a different style: source values are turned
   into doubles with ldexp (exact for every format but the 64-bit integers), rounding is decided
   by comparing a scaled value against 0.5 or against the midpoint of two neighbouring target
   values, F32 targets use the C cast (the FPU's round-to-nearest), and 64-bit integers are
   handled with exact integer arithmetic. No field-twiddling tricks are shared with the library.

   Every function returns the expected output bits; a NaN result is reported through *nan (the
   tests then accept any NaN of the target: NaNs are judged by class). */
#ifndef CODEC_REF_H
#define CODEC_REF_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---- describing the float formats ---- */
enum { REF_IEEE, REF_FN, REF_FNUZ, REF_E8M0 };
typedef struct ref_fmt { int ebits, mbits, bias, kind; } ref_fmt;

static int ref_is_float(sts_dtype t) {
    switch (t) {
    case STS_DTYPE_F16: case STS_DTYPE_BF16: case STS_DTYPE_F32: case STS_DTYPE_F64:
    case STS_DTYPE_F8_E5M2: case STS_DTYPE_F8_E4M3: case STS_DTYPE_F8_E8M0:
    case STS_DTYPE_F8_E4M3FNUZ: case STS_DTYPE_F8_E5M2FNUZ: return 1;
    default: return 0;
    }
}
static ref_fmt ref_format(sts_dtype t) {
    ref_fmt f = {0, 0, 0, REF_IEEE};
    switch (t) {
    case STS_DTYPE_F16: f.ebits = 5; f.mbits = 10; f.bias = 15; break;
    case STS_DTYPE_BF16: f.ebits = 8; f.mbits = 7; f.bias = 127; break;
    case STS_DTYPE_F32: f.ebits = 8; f.mbits = 23; f.bias = 127; break;
    case STS_DTYPE_F64: f.ebits = 11; f.mbits = 52; f.bias = 1023; break;
    case STS_DTYPE_F8_E5M2: f.ebits = 5; f.mbits = 2; f.bias = 15; break;
    case STS_DTYPE_F8_E4M3: f.ebits = 4; f.mbits = 3; f.bias = 7; f.kind = REF_FN; break;
    case STS_DTYPE_F8_E4M3FNUZ: f.ebits = 4; f.mbits = 3; f.bias = 8; f.kind = REF_FNUZ; break;
    case STS_DTYPE_F8_E5M2FNUZ: f.ebits = 5; f.mbits = 2; f.bias = 16; f.kind = REF_FNUZ; break;
    case STS_DTYPE_F8_E8M0: f.ebits = 8; f.mbits = 0; f.bias = 127; f.kind = REF_E8M0; break;
    default: break;
    }
    return f;
}

/* The exact value of a float bit pattern (any width up to 64), NaN flagged. */
static double ref_value(uint64_t bits, sts_dtype t, int *nan) {
    ref_fmt f = ref_format(t);
    int width = f.kind == REF_E8M0 ? 8 : 1 + f.ebits + f.mbits;
    uint64_t sign = f.kind == REF_E8M0 ? 0 : bits >> (width - 1) & 1;
    uint64_t ef = bits >> f.mbits & ((1ull << f.ebits) - 1);
    uint64_t mf = bits & ((1ull << f.mbits) - 1);
    double v;
    *nan = 0;
    if (f.kind == REF_E8M0) {
        if (bits == 0xff) { *nan = 1; return 0; }
        return ldexp(1.0, (int)bits - 127);
    }
    if (f.kind == REF_FNUZ && bits == 0x80) { *nan = 1; return 0; }
    if (f.kind == REF_FN && ef == 15 && mf == 7) { *nan = 1; return 0; }
    if (f.kind == REF_IEEE && ef == (1ull << f.ebits) - 1) {
        if (mf) { *nan = 1; return 0; }
        return sign ? -HUGE_VAL : HUGE_VAL;
    }
    if (ef == 0) v = ldexp((double)mf, 1 - f.bias - f.mbits);
    else v = ldexp((double)(mf + (1ull << f.mbits)), (int)ef - f.bias - f.mbits);
    return sign ? -v : v;
}

/* ---- float targets ---- */
/* Largest finite value of an IEEE format. */
static double ref_maxfinite(ref_fmt f) {
    return ldexp(2.0 - ldexp(1.0, -f.mbits), f.bias);
}
/* Bits of a value known to be exactly representable in IEEE format f (or infinite). */
static uint64_t ref_pack(double r, ref_fmt f) {
    uint64_t sign = signbit(r) ? 1ull << (f.ebits + f.mbits) : 0;
    double a = fabs(r);
    int e, emin = 1 - f.bias;
    if (isinf(a)) return sign | ((1ull << f.ebits) - 1) << f.mbits;
    if (a == 0) return sign;
    frexp(a, &e);
    e -= 1;                                   /* a in [2^e, 2^(e+1)) */
    if (e < emin) return sign | (uint64_t)ldexp(a, f.mbits - emin);   /* subnormal: count of units */
    return sign | (uint64_t)(e + f.bias) << f.mbits | ((uint64_t)ldexp(a, f.mbits - e) - (1ull << f.mbits));
}
/* Round the exact value v to IEEE format f: toward zero (overflow to the largest finite value)
   or to nearest with ties to the even significand (overflow to Inf). Returns the bits. */
static uint64_t ref_round(double v, ref_fmt f, int nearest) {
    double a = fabs(v), unit, q, whole, frac, r;
    int e, emin = 1 - f.bias;
    if (isinf(a) || a == 0) return ref_pack(v, f);
    frexp(a, &e);
    e -= 1;
    if (e < emin) e = emin;
    unit = ldexp(1.0, e - f.mbits);           /* spacing of the target's values near a */
    q = a / unit;                             /* exact: a power-of-two scaling */
    whole = floor(q);
    frac = q - whole;
    if (nearest && (frac > 0.5 || (frac == 0.5 && fmod(whole, 2.0) == 1.0))) whole += 1.0;
    r = whole * unit;
    if (r > ref_maxfinite(f)) r = nearest ? HUGE_VAL : ref_maxfinite(f);
    return ref_pack(v < 0 ? -r : r, f);
}

/* ---- integer targets ---- */
static int ref_int_target(sts_dtype t, int *bits, int *is_signed) {
    switch (t) {
    case STS_DTYPE_U8: *bits = 8; *is_signed = 0; return 1;
    case STS_DTYPE_I8: *bits = 8; *is_signed = 1; return 1;
    case STS_DTYPE_U16: *bits = 16; *is_signed = 0; return 1;
    case STS_DTYPE_I16: *bits = 16; *is_signed = 1; return 1;
    case STS_DTYPE_U32: *bits = 32; *is_signed = 0; return 1;
    case STS_DTYPE_I32: *bits = 32; *is_signed = 1; return 1;
    case STS_DTYPE_U64: *bits = 64; *is_signed = 0; return 1;
    case STS_DTYPE_I64: *bits = 64; *is_signed = 1; return 1;
    default: return 0;
    }
}
static uint64_t ref_mask(int bits) { return bits == 64 ? ~0ull : (1ull << bits) - 1; }

/* A double to an integer: truncate toward zero, saturate, NaN -> 0. Two's complement bits. */
static uint64_t ref_double_to_int(double v, int bits, int is_signed) {
    double t, lo, top;   /* top = one past the largest value, a power of two, exact */
    if (isnan(v)) return 0;
    t = v < 0 ? ceil(v) : floor(v);
    if (is_signed) { lo = -ldexp(1.0, bits - 1); top = ldexp(1.0, bits - 1); }
    else { lo = 0; top = ldexp(1.0, bits); }
    if (t >= top) return is_signed ? ref_mask(bits) >> 1 : ref_mask(bits);
    if (t < lo) return is_signed ? (1ull << (bits - 1)) : 0;
    if (t < 0) return (0 - (uint64_t)(-t)) & ref_mask(bits);   /* -t <= 2^63: exact as uint64 */
    return (uint64_t)t;
}
/* An exact integer (sign, magnitude) to an integer target, saturating. */
static uint64_t ref_int_to_int(int neg, uint64_t mag, int bits, int is_signed) {
    uint64_t max = is_signed ? ref_mask(bits) >> 1 : ref_mask(bits);
    if (!is_signed) return neg ? 0 : (mag > max ? max : mag);
    if (neg) {
        if (mag > max + 1) return (max + 1) & ref_mask(bits);     /* the minimum, two's complement */
        return (0 - mag) & ref_mask(bits);
    }
    return mag > max ? max : mag;
}

/* ---- the whole reference: a source element to a target element ---- */
typedef struct ref_src {
    int is_float;
    double v;           /* float sources: the exact value */
    int nan;
    int neg;            /* integer sources: sign and magnitude, exact */
    uint64_t mag;
} ref_src;

static uint64_t ref_load(const uint8_t *p, int bytes) {
    uint64_t u = 0;
    int i;
    for (i = bytes - 1; i >= 0; i--) u = u << 8 | p[i];
    return u;
}
static void ref_store(uint8_t *p, uint64_t u, int bytes) {
    int i;
    for (i = 0; i < bytes; i++) { p[i] = (uint8_t)u; u >>= 8; }
}

/* Read one element of dtype t from little-endian bytes. */
static ref_src ref_read(const uint8_t *p, sts_dtype t) {
    ref_src s;
    int bits, sg;
    memset(&s, 0, sizeof s);
    if (t == STS_DTYPE_BOOL) { s.mag = p[0] != 0; return s; }
    if (ref_is_float(t)) {
        int width = (int)sts_dtype_bits(t);
        s.is_float = 1;
        s.v = ref_value(ref_load(p, width / 8), t, &s.nan);
        return s;
    }
    ref_int_target(t, &bits, &sg);
    s.mag = ref_load(p, bits / 8);
    if (sg && (s.mag >> (bits - 1) & 1)) {     /* negative: magnitude = 2^bits - pattern */
        s.neg = 1;
        s.mag = bits == 64 ? (~s.mag + 1) : ((1ull << bits) - s.mag);
    }
    return s;
}

/* Round a magnitude to p significant bits (nearest-even or toward zero); returns the rounded
   value as a double (exact: at most 53 significant bits after rounding to p <= 53). */
static double ref_round_int(uint64_t mag, int p, int nearest) {
    int len = 0, k;
    uint64_t m, rem, half;
    while (len < 64 && (mag >> len) != 0) len++;
    if (len <= p) return (double)mag;
    k = len - p;
    m = mag >> k;
    rem = mag - (m << k);
    half = 1ull << (k - 1);
    if (nearest && (rem > half || (rem == half && (m & 1)))) m++;
    return ldexp((double)m, k);
}

/* The expected bits of converting element s into dtype t. nearest = the rounding argument;
   it applies to F16 and BF16 only, every other float target rounds to nearest. */
static uint64_t ref_convert(ref_src s, sts_dtype t, int nearest, int *nan) {
    int bits, sg;
    *nan = 0;
    if (ref_int_target(t, &bits, &sg)) {
        if (s.is_float) return ref_double_to_int(s.nan ? NAN : s.v, bits, sg);
        return ref_int_to_int(s.neg, s.mag, bits, sg);
    }
    if (t != STS_DTYPE_F16 && t != STS_DTYPE_BF16) nearest = 1;
    if (s.is_float && s.nan) { *nan = 1; return 0; }
    if (s.is_float) {
        if (t == STS_DTYPE_F64) return ref_pack(s.v, ref_format(t));
        if (t == STS_DTYPE_F32) {             /* the C cast: the FPU rounds to nearest even */
            float f = (float)s.v;
            return ref_pack((double)f, ref_format(t));
        }
        return ref_round(s.v, ref_format(t), nearest);
    } else {
        ref_fmt f = ref_format(t);
        double r = ref_round_int(s.mag, f.mbits + 1, nearest);
        if (s.mag == 0) return 0;             /* integer zero is +0 */
        return ref_round(s.neg ? -r : r, f, nearest);   /* exact, or the overflow rule of F16 */
    }
}

/* ---- a fast reference for sweeping every F32 pattern into a 16-bit format ----
   The target's finite non-negative values g[0] < g[1] < ... (in bit order), the overflow point
   g[n] = 2^(emax+1) (whose pattern n is Inf), and the midpoints of neighbours are all exactly
   representable in F32, and the bit patterns of non-negative F32 values are ordered like the
   values. So each is turned into its F32 pattern once, and a sweep over ascending magnitudes
   walks a pointer: toward zero gives the k with lo[k] <= a < lo[k+1]; nearest gives k or k+1 by
   comparing a with the midpoint's pattern (a tie picks the even pattern). */
typedef struct ref_grid { uint32_t *lo, *mid; uint32_t n; } ref_grid;

static uint32_t ref_f32_pattern(double v, int *exact) {   /* v >= 0 */
    float f = (float)v;
    uint32_t u;
    if ((double)f != v && !isinf(f)) *exact = 0;
    memcpy(&u, &f, 4);
    return u;
}
static int ref_grid_init(ref_grid *G, sts_dtype t) {
    ref_fmt f = ref_format(t);
    uint32_t k;
    int nan, exact = 1;
    double prev = 0, cur;
    G->n = ((1u << f.ebits) - 1) << f.mbits;  /* the pattern of +Inf = number of finite patterns */
    G->lo = (uint32_t *)malloc(((size_t)G->n + 2) * sizeof(uint32_t));
    G->mid = (uint32_t *)malloc(((size_t)G->n + 1) * sizeof(uint32_t));
    if (!G->lo || !G->mid) return 0;
    for (k = 0; k <= G->n; k++) {
        cur = k < G->n ? ref_value(k, t, &nan) : ldexp(1.0, f.bias + 1);
        G->lo[k] = ref_f32_pattern(cur, &exact);
        if (k > 0) G->mid[k - 1] = ref_f32_pattern((prev + cur) * 0.5, &exact);
        prev = cur;
    }
    G->lo[G->n + 1] = 0xffffffffu;            /* sentinel above every magnitude */
    return exact;
}
static void ref_grid_free(ref_grid *G) { free(G->lo); free(G->mid); G->lo = G->mid = NULL; }
/* The k with lo[k] <= a < lo[k+1] (k = n when a >= lo[n]); a is a magnitude pattern. */
static uint32_t ref_grid_find(const ref_grid *G, uint32_t a) {
    uint32_t lo = 0, hi = G->n + 1;
    while (hi - lo > 1) {
        uint32_t m = lo + (hi - lo) / 2;
        if (G->lo[m] <= a) lo = m; else hi = m;
    }
    return lo;
}
static uint32_t ref_grid_pick(const ref_grid *G, uint32_t k, uint32_t a, int nearest) {
    if (!nearest) return k < G->n ? k : G->n - 1;
    if (k >= G->n) return G->n;
    if (a < G->mid[k]) return k;
    if (a > G->mid[k]) return k + 1;
    return (k & 1) ? k + 1 : k;
}

#endif /* CODEC_REF_H */
