/* test_rng: Philox4x32-10 known answers, the (seed, stream, index) word mapping and the derived distributions. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lab_rng.h"

/* Random123 tests/kat_vectors, the three "philox4x32 10" lines: counter[4] key[2] -> output[4]. */
static const struct {
    uint32_t ctr[4], key[2], out[4];
} tr_kat[] = {
    {{0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u}, {0x00000000u, 0x00000000u},
     {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
    {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu},
     {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
    {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u},
     {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
};

Test(rng, philox_known_answers)
{
    for (size_t i = 0; i < sizeof tr_kat / sizeof tr_kat[0]; ++i) {
        lab_philox_ctr c;
        lab_philox_key k;
        memcpy(c.v, tr_kat[i].ctr, sizeof c.v);
        memcpy(k.v, tr_kat[i].key, sizeof k.v);
        lab_philox_ctr r = lab_rng_philox(c, k);
        for (int w = 0; w < 4; ++w)
            cr_assert_eq(r.v[w], tr_kat[i].out[w], "vector %zu word %d: %08x, want %08x", i, w,
                         r.v[w], tr_kat[i].out[w]);
    }
}

/* The zero vector through the public word function: seed 0, stream 0, words 0..3. */
Test(rng, u32_zero_vector)
{
    for (uint64_t i = 0; i < 4; ++i)
        cr_assert_eq(lab_rng_u32(0, 0, i), tr_kat[0].out[i], "word %llu", (unsigned long long)i);
}

/* Word `index` is lane index%4 of Philox(counter = (index/4 lo, index/4 hi, stream, 0),
 * key = (seed lo, seed hi)). */
Test(rng, word_mapping)
{
    static const struct { uint64_t seed; uint32_t stream; uint64_t index; } p[] = {
        {0, 0, 0}, {1, 0, 5}, {0x0123456789ABCDEFull, 7, 123456789ull},
        {0xFFFFFFFF00000001ull, 0xFFFFFFFFu, (1ull << 34) + 3}, {42, 3, 0xFFFFFFFFFFFFFFFFull},
        {0x100000000ull, 1, (0xDEADBEEFull << 2) | 2},
    };
    for (size_t i = 0; i < sizeof p / sizeof p[0]; ++i) {
        uint64_t b = p[i].index / 4;
        lab_philox_ctr c = {{(uint32_t)b, (uint32_t)(b >> 32), p[i].stream, 0}};
        lab_philox_key k = {{(uint32_t)p[i].seed, (uint32_t)(p[i].seed >> 32)}};
        lab_philox_ctr r = lab_rng_philox(c, k);
        for (uint64_t lane = 0; lane < 4; ++lane) {
            uint64_t idx = b * 4 + lane;
            cr_assert_eq(lab_rng_u32(p[i].seed, p[i].stream, idx), r.v[lane], "case %zu lane %llu", i,
                         (unsigned long long)lane);
        }
    }
}

Test(rng, deterministic)
{
    enum { N = 4096 };
    float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    cr_assert(a && b);
    lab_rng_fill_normal(a, N, 77, 3, 1000);
    lab_rng_fill_normal(b, N, 77, 3, 1000);
    cr_assert_eq(memcmp(a, b, N * sizeof *a), 0);
    for (uint64_t i = 0; i < 64; ++i) {
        cr_assert_eq(lab_rng_u32(99, 1, i), lab_rng_u32(99, 1, i));
        cr_assert_eq(lab_rng_uniform(99, 1, i), lab_rng_uniform(99, 1, i));
    }
    free(a);
    free(b);
}

Test(rng, fill_equals_scalar_calls)
{
    enum { N = 1031 };
    float u[N], z[N];
    const uint64_t seed = 0xC0FFEE1234ull, first = (1ull << 33) + 17;
    memset(u, 0xFF, sizeof u);
    memset(z, 0xFF, sizeof z);
    lab_rng_fill_uniform(u, N, seed, 9, first);
    lab_rng_fill_normal(z, N, seed, 9, first);
    for (uint64_t i = 0; i < N; ++i) {
        float us = lab_rng_uniform(seed, 9, first + i), zs = lab_rng_normal(seed, 9, first + i);
        cr_assert_eq(memcmp(&u[i], &us, sizeof us), 0, "uniform %llu", (unsigned long long)i);
        cr_assert_eq(memcmp(&z[i], &zs, sizeof zs), 0, "normal %llu", (unsigned long long)i);
    }
    /* n = 0 writes nothing */
    lab_rng_fill_uniform(u, 0, seed, 9, first);
    lab_rng_fill_normal(u + 1, 0, seed, 9, first);
    float us = lab_rng_uniform(seed, 9, first);
    cr_assert_eq(memcmp(&u[0], &us, sizeof us), 0);
}

Test(rng, uniform_in_unit_interval)
{
    enum { N = 1000000 };
    float *u = malloc(N * sizeof *u);
    cr_assert(u);
    lab_rng_fill_uniform(u, N, 2024, 0, 0);
    double sum = 0.0;
    float lo = 1.0f, hi = 0.0f;
    for (size_t i = 0; i < N; ++i) {
        cr_assert(u[i] >= 0.0f && u[i] < 1.0f, "u[%zu] = %a", i, (double)u[i]);
        sum += u[i];
        if (u[i] < lo) lo = u[i];
        if (u[i] > hi) hi = u[i];
    }
    double mean = sum / N, sd = sqrt(1.0 / 12.0 / N);
    cr_assert(fabs(mean - 0.5) < 4 * sd, "mean %g", mean);
    cr_assert(lo < 1e-4f && hi > 1.0f - 1e-4f, "range [%g, %g]", (double)lo, (double)hi);
    /* the documented construction: top 24 bits of the word times 2^-24 */
    for (uint64_t i = 0; i < 1000; ++i) {
        uint32_t w = lab_rng_u32(5, 6, i);
        cr_assert_eq((double)lab_rng_uniform(5, 6, i), (double)(w >> 8) / 16777216.0);
    }
    free(u);
}

Test(rng, log_exact_matches_libm)
{
    double worst = 0.0, at = 0.0;
    /* geometric sweep over (2^-40, 1] and the Box-Muller inputs (k+1) * 2^-32 */
    for (int i = 0; i <= 200000; ++i) {
        double x = exp(-40.0 * M_LN2 * i / 200000.0);
        double d = fabs(lab_rng_log_exact(x) - log(x));
        if (d > worst) { worst = d; at = x; }
    }
    uint64_t s = 88172645463325252ull;
    for (int i = 0; i < 200000; ++i) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        double x = ((double)(uint32_t)s + 1.0) / 4294967296.0;
        double d = fabs(lab_rng_log_exact(x) - log(x));
        if (d > worst) { worst = d; at = x; }
    }
    static const double pts[] = {1.0, 0.5, 0x1p-32, 0.70710678118654752, 0.70710678118654746,
                                 1.0 - 0x1p-53, 1.0 - 0x1p-32, 0.1, 0.9999};
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; ++i) {
        double d = fabs(lab_rng_log_exact(pts[i]) - log(pts[i]));
        if (d > worst) { worst = d; at = pts[i]; }
    }
    cr_assert(worst <= 1e-14, "worst |log error| %g at x = %a", worst, at);
    cr_assert_eq(lab_rng_log_exact(1.0), 0.0);
}

Test(rng, cos2pi_exact_matches_libm)
{
    double worst = 0.0, at = 0.0;
    for (uint32_t k = 0; k < (1u << 18); ++k) { /* u = k * 2^-18, all quadrant boundaries included */
        double u = k / 262144.0;
        double d = fabs(lab_rng_cos2pi_exact(u) - cos(2.0 * M_PI * u));
        if (d > worst) { worst = d; at = u; }
    }
    uint64_t s = 0x2545F4914F6CDD1Dull;
    for (int i = 0; i < 200000; ++i) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        double u = (double)(uint32_t)s / 4294967296.0;
        double d = fabs(lab_rng_cos2pi_exact(u) - cos(2.0 * M_PI * u));
        if (d > worst) { worst = d; at = u; }
    }
    cr_assert(worst <= 1e-14, "worst |cos error| %g at u = %a", worst, at);
    cr_assert_eq(lab_rng_cos2pi_exact(0.0), 1.0);
    cr_assert_eq(lab_rng_cos2pi_exact(0.5), -1.0);
    cr_assert(fabs(lab_rng_cos2pi_exact(0.25)) < 1e-16);
    cr_assert(fabs(lab_rng_cos2pi_exact(0.75)) < 1e-16);
}

/* Box-Muller over words 2i and 2i+1, recomputed with libm: agrees to float rounding. */
Test(rng, normal_uses_documented_words)
{
    for (uint64_t i = 0; i < 2000; ++i) {
        double u1 = ((double)lab_rng_u32(11, 2, 2 * i) + 1.0) / 4294967296.0;
        double u2 = (double)lab_rng_u32(11, 2, 2 * i + 1) / 4294967296.0;
        double want = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
        double got = lab_rng_normal(11, 2, i);
        cr_assert(fabs(got - want) <= 1e-6 * fmax(1.0, fabs(want)), "i %llu: %.9g vs %.9g",
                  (unsigned long long)i, got, want);
    }
}

Test(rng, normal_moments)
{
    enum { N = 1000000 };
    float *z = malloc(N * sizeof *z);
    cr_assert(z);
    lab_rng_fill_normal(z, N, 31337, 4, 0);
    double s1 = 0.0, s2 = 0.0;
    size_t within1 = 0;
    for (size_t i = 0; i < N; ++i) {
        cr_assert(isfinite(z[i]) && fabsf(z[i]) < 6.7f, "z[%zu] = %g", i, (double)z[i]);
        s1 += z[i];
        s2 += (double)z[i] * z[i];
        within1 += fabsf(z[i]) < 1.0f;
    }
    double mean = s1 / N, var = s2 / N - mean * mean;
    /* 4 sigma: sd(mean) = 1/sqrt(N), sd(var) = sqrt(2/N), sd(P(|z|<1)) = sqrt(p(1-p)/N) */
    cr_assert(fabs(mean) < 4.0 / sqrt(N), "mean %g", mean);
    cr_assert(fabs(var - 1.0) < 4.0 * sqrt(2.0 / N), "variance %g", var);
    double p = 0.6826894921370859, frac = (double)within1 / N;
    cr_assert(fabs(frac - p) < 4.0 * sqrt(p * (1 - p) / N), "P(|z|<1) = %g", frac);
    free(z);
}

/* Number of equal words among the first n of two (seed, stream) pairs. */
static int tr_equal_words(uint64_t s1, uint32_t t1, uint64_t s2, uint32_t t2, int n)
{
    int eq = 0;
    for (int i = 0; i < n; ++i) eq += lab_rng_u32(s1, t1, (uint64_t)i) == lab_rng_u32(s2, t2, (uint64_t)i);
    return eq;
}

Test(rng, seeds_and_streams_differ)
{
    cr_assert_leq(tr_equal_words(1, 0, 2, 0, 1024), 1);
    cr_assert_leq(tr_equal_words(1, 0, 1 | (1ull << 32), 0, 1024), 1); /* the seed's high word counts */
    cr_assert_leq(tr_equal_words(1, 0, 1, 1, 1024), 1);
    cr_assert_leq(tr_equal_words(1, 0, 1, 0x80000000u, 1024), 1);
    cr_assert_leq(tr_equal_words(0, 1, 1, 0, 1024), 1);                 /* seed and stream not swapped */
    /* a stream is not a shifted copy of another stream */
    int eq = 0;
    for (uint64_t i = 0; i < 1024; ++i) eq += lab_rng_u32(3, 0, i + 4) == lab_rng_u32(3, 1, i);
    cr_assert_leq(eq, 1);
    /* the four lanes of one block differ */
    cr_assert_neq(lab_rng_u32(3, 0, 0), lab_rng_u32(3, 0, 1));
    cr_assert_neq(lab_rng_u32(3, 0, 2), lab_rng_u32(3, 0, 3));
}

/* ---- the batched fills against the scalar definition, bit for bit ----------------------------- */

/* Count of i < n where out[i] differs in bits from the scalar value at first + i (mod 2^64); the index
 * of the first such i in *at. */
static size_t tr_normal_mismatch(const float *out, size_t n, uint64_t seed, uint32_t stream, uint64_t first,
                                 size_t *at)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
        float s = lab_rng_normal(seed, stream, first + i);
        if (memcmp(&out[i], &s, sizeof s) != 0 && bad++ == 0) *at = i;
    }
    return bad;
}

static size_t tr_uniform_mismatch(const float *out, size_t n, uint64_t seed, uint32_t stream, uint64_t first,
                                  size_t *at)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
        float s = lab_rng_uniform(seed, stream, first + i);
        if (memcmp(&out[i], &s, sizeof s) != 0 && bad++ == 0) *at = i;
    }
    return bad;
}

/* Starts: aligned, odd, not a multiple of 4, past 2^32 (the counter's high word), and across the 2^64
 * wrap of the index (the scalar's first + i wraps, and so does the fill). */
static const uint64_t tr_firsts[] = {0, 1, 2, 3, 5, (1ull << 32) - 1, (1ull << 40) + 3, UINT64_MAX - 150000};
static const struct { uint64_t seed; uint32_t stream; } tr_pairs[] = {
    {1, 0x0004a001u}, {0xdeadbeefcafef00dull, 7}, {0xFFFFFFFFFFFFFFFFull, 0xFFFFFFFFu}};
#define TR_NFIRSTS (sizeof tr_firsts / sizeof tr_firsts[0])
#define TR_NPAIRS (sizeof tr_pairs / sizeof tr_pairs[0])

/* 300k values (a partial last batch) from each start, the (seed, stream) pairs taking turns; the
 * element after the last is a guard the fill must not touch. */
Test(rng, fill_normal_bitwise_equals_scalar, .timeout = 120)
{
    const size_t n = 300000;
    float *z = malloc((n + 1) * sizeof *z);
    cr_assert(z);
    for (size_t f = 0; f < TR_NFIRSTS; ++f) {
        uint64_t seed = tr_pairs[f % TR_NPAIRS].seed, first = tr_firsts[f];
        uint32_t stream = tr_pairs[f % TR_NPAIRS].stream;
        memset(z, 0xA5, (n + 1) * sizeof *z);
        lab_rng_fill_normal(z, n, seed, stream, first);
        size_t at = 0, bad = tr_normal_mismatch(z, n, seed, stream, first, &at);
        cr_expect_eq(bad, 0, "first %#llx: %zu of %zu differ, first at i = %zu", (unsigned long long)first, bad, n,
                     at);
        uint32_t guard;
        memcpy(&guard, &z[n], sizeof guard);
        cr_expect_eq(guard, 0xA5A5A5A5u, "first %#llx: wrote past n", (unsigned long long)first);
    }
    free(z);
}

Test(rng, fill_uniform_bitwise_equals_scalar, .timeout = 120)
{
    const size_t n = 300000;
    float *u = malloc((n + 1) * sizeof *u);
    cr_assert(u);
    for (size_t p = 0; p < TR_NPAIRS; ++p)
        for (size_t f = 0; f < TR_NFIRSTS; ++f) {
            uint64_t seed = tr_pairs[p].seed, first = tr_firsts[f];
            uint32_t stream = tr_pairs[p].stream;
            memset(u, 0xA5, (n + 1) * sizeof *u);
            lab_rng_fill_uniform(u, n, seed, stream, first);
            size_t at = 0, bad = tr_uniform_mismatch(u, n, seed, stream, first, &at);
            cr_expect_eq(bad, 0, "pair %zu first %#llx: %zu of %zu differ, first at i = %zu", p,
                         (unsigned long long)first, bad, n, at);
            uint32_t guard;
            memcpy(&guard, &u[n], sizeof guard);
            cr_expect_eq(guard, 0xA5A5A5A5u, "pair %zu first %#llx: wrote past n", p, (unsigned long long)first);
        }
    free(u);
}

Test(rng, fill_u32_bitwise_equals_scalar, .timeout = 120)
{
    enum { N = 5000 };
    uint32_t *u = malloc((N + 1) * sizeof *u);
    cr_assert(u);
    for (size_t p = 0; p < TR_NPAIRS; ++p)
        for (size_t f = 0; f < TR_NFIRSTS; ++f)
            for (size_t n = N - 3; n <= N; ++n) {
                uint64_t seed = tr_pairs[p].seed, first = tr_firsts[f];
                uint32_t stream = tr_pairs[p].stream;
                memset(u, 0xA5, (N + 1) * sizeof *u);
                lab_rng_fill_u32(u, n, seed, stream, first);
                size_t bad = 0;
                for (size_t i = 0; i < n; ++i) bad += u[i] != lab_rng_u32(seed, stream, first + i);
                cr_expect_eq(bad, 0, "pair %zu first %#llx n %zu: %zu differ", p, (unsigned long long)first, n, bad);
                cr_expect_eq(u[n], 0xA5A5A5A5u, "pair %zu first %#llx n %zu: wrote past n", p, (unsigned long long)first, n);
            }
    free(u);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
/* Every clone of the fills (tests/rng_clone.h builds each alone), not only the one this CPU picks: AVX-512, AVX2 and
 * the plain x86-64 build give the scalar functions' bits. A clone whose instructions this CPU lacks cannot run here
 * (and target_clones never picks it here either): it is named in the log. */
#define TR_CLONE_DECL(sfx)                                                                                  \
    void lab_rng_fill_uniform_##sfx(float *, uint64_t, uint64_t, uint32_t, uint64_t);                        \
    void lab_rng_fill_u32_##sfx(uint32_t *, uint64_t, uint64_t, uint32_t, uint64_t);                         \
    void lab_rng_fill_normal_##sfx(float *, uint64_t, uint64_t, uint32_t, uint64_t);
TR_CLONE_DECL(avx512)
TR_CLONE_DECL(avx2)
TR_CLONE_DECL(plain)
Test(rng, every_clone_gives_the_scalar_bits, .timeout = 120)
{
    enum { N = 2053 };
    static const struct {
        const char *name;
        void (*uniform)(float *, uint64_t, uint64_t, uint32_t, uint64_t);
        void (*u32)(uint32_t *, uint64_t, uint64_t, uint32_t, uint64_t);
        void (*normal)(float *, uint64_t, uint64_t, uint32_t, uint64_t);
    } clones[] = {{"avx512f", lab_rng_fill_uniform_avx512, lab_rng_fill_u32_avx512, lab_rng_fill_normal_avx512},
                  {"avx2", lab_rng_fill_uniform_avx2, lab_rng_fill_u32_avx2, lab_rng_fill_normal_avx2},
                  {"plain", lab_rng_fill_uniform_plain, lab_rng_fill_u32_plain, lab_rng_fill_normal_plain}};
    __builtin_cpu_init();
    int supported[3] = {__builtin_cpu_supports("avx512f"), __builtin_cpu_supports("avx2"), 1}, ran = 0;
    float *z = malloc(N * sizeof *z);
    uint32_t *w = malloc(N * sizeof *w);
    cr_assert(z && w);
    for (size_t c = 0; c < 3; ++c) {
        if (!supported[c]) {
            cr_log_info("the %s clone cannot run on this CPU (nor would it be picked here)", clones[c].name);
            continue;
        }
        ran++;
        for (size_t p = 0; p < TR_NPAIRS; ++p)
            for (size_t f = 0; f < TR_NFIRSTS; ++f) {
                uint64_t seed = tr_pairs[p].seed, first = tr_firsts[f];
                uint32_t stream = tr_pairs[p].stream;
                size_t at = 0, bad = 0;
                clones[c].normal(z, N, seed, stream, first);
                cr_expect_eq(tr_normal_mismatch(z, N, seed, stream, first, &at), 0, "%s normals, pair %zu first %#llx, at %zu",
                             clones[c].name, p, (unsigned long long)first, at);
                clones[c].uniform(z, N, seed, stream, first);
                cr_expect_eq(tr_uniform_mismatch(z, N, seed, stream, first, &at), 0, "%s uniforms, pair %zu first %#llx, at %zu",
                             clones[c].name, p, (unsigned long long)first, at);
                clones[c].u32(w, N, seed, stream, first);
                for (size_t i = 0; i < N; ++i) bad += w[i] != lab_rng_u32(seed, stream, first + i);
                cr_expect_eq(bad, 0, "%s words, pair %zu first %#llx: %zu differ", clones[c].name, p, (unsigned long long)first, bad);
            }
    }
    cr_expect_geq(ran, 1, "the plain clone runs everywhere");
    free(z), free(w);
}
#endif

/* Every (seed, stream) pair at every start, shorter; and every length 0..600 (batch edges at 256 normals
 * and 512 uniforms, with and without a skipped lead) from starts 0..3, guard checked. */
Test(rng, fill_all_pairs_starts_and_lengths, .timeout = 120)
{
    enum { N = 4099, L = 600 };
    float *z = malloc((N + 1) * sizeof *z), *u = malloc((N + 1) * sizeof *u);
    cr_assert(z && u);
    for (size_t p = 0; p < TR_NPAIRS; ++p)
        for (size_t f = 0; f < TR_NFIRSTS; ++f) {
            uint64_t seed = tr_pairs[p].seed, first = tr_firsts[f];
            uint32_t stream = tr_pairs[p].stream;
            lab_rng_fill_normal(z, N, seed, stream, first);
            lab_rng_fill_uniform(u, N, seed, stream, first);
            size_t at = 0;
            cr_expect_eq(tr_normal_mismatch(z, N, seed, stream, first, &at), 0, "normal pair %zu first %#llx at %zu",
                         p, (unsigned long long)first, at);
            cr_expect_eq(tr_uniform_mismatch(u, N, seed, stream, first, &at), 0,
                         "uniform pair %zu first %#llx at %zu", p, (unsigned long long)first, at);
        }
    for (uint64_t first = 0; first < 4; ++first)
        for (size_t n = 0; n <= L; ++n) {
            memset(z, 0xA5, (n + 1) * sizeof *z);
            memset(u, 0xA5, (n + 1) * sizeof *u);
            lab_rng_fill_normal(z, n, 5, 6, first);
            lab_rng_fill_uniform(u, n, 5, 6, first);
            size_t at = 0;
            cr_assert_eq(tr_normal_mismatch(z, n, 5, 6, first, &at), 0, "normal n %zu first %llu at %zu", n,
                         (unsigned long long)first, at);
            cr_assert_eq(tr_uniform_mismatch(u, n, 5, 6, first, &at), 0, "uniform n %zu first %llu at %zu", n,
                         (unsigned long long)first, at);
            uint32_t gz, gu;
            memcpy(&gz, &z[n], sizeof gz);
            memcpy(&gu, &u[n], sizeof gu);
            cr_assert(gz == 0xA5A5A5A5u && gu == 0xA5A5A5A5u, "n %zu first %llu: wrote past n", n,
                      (unsigned long long)first);
        }
    free(z);
    free(u);
}

/* Edge words, at real positions of seed 2024, stream 77 (found by a scan of its first 2^34 blocks): for
 * the first word a of a normal (u1 = (a + 1) 2^-32), a = 0xffffffff (u1 = 1: log 0, radius +0),
 * 0xfffffffe, 0 and 1 (the smallest u1), 2^31 +- 1, and both sides of the sqrt(1/2) threshold of the log
 * reduction (0xb504f332..4 for u1, 0x5a827999/a for u1 near sqrt(1/2)/2); for the second word b (u2 = b
 * 2^-32), the quadrant boundaries 0, 1/4, 1/2, 3/4 of the cosine and the words beside them, and 1/8, 3/8
 * (r = 0.5 exactly: not folded). The batched code takes the log from a alone and the cosine from b
 * alone, so each edge word is reached with whatever its partner is. Each position is filled at several
 * places of a batch (first, middle, last, after an odd lead) and compared with the scalar definition. */
Test(rng, fill_edge_words)
{
    static const struct { uint32_t word; uint64_t index; } edges[] = {
        {0x00000000u, 3539642304ull},  {0x00000001u, 32805742150ull}, {0x7fffffffu, 5983950066ull},
        {0x80000000u, 3555739576ull},  {0xb504f332u, 4678407132ull},  {0xb504f333u, 17610129856ull},
        {0xb504f334u, 17188805822ull}, {0xfffffffeu, 1702601464ull},  {0xffffffffu, 2764330038ull},
        {0x5a827999u, 8963676502ull},  {0x5a82799au, 11158187234ull}, /* a: even word indices */
        {0x00000000u, 2634199981ull},  {0x00000001u, 23929257749ull}, {0x3fffffffu, 2996853453ull},
        {0x40000000u, 6414160389ull},  {0x40000001u, 4352794245ull},  {0x7fffffffu, 1013907213ull},
        {0x80000000u, 10430844279ull}, {0xbfffffffu, 6162359003ull},  {0xc0000000u, 5076051939ull},
        {0xc0000001u, 5600708231ull},  {0xffffffffu, 12608521189ull}, {0x20000000u, 3156107601ull},
        {0x60000000u, 7621564463ull}, /* b: odd word indices */
    };
    const uint64_t seed = 2024;
    const uint32_t stream = 77;
    const uint64_t leads[] = {0, 1, 2, 3, 128, 255, 256, 257, 511};
    enum { N = 1024 };
    float z[N], u[N];
    for (size_t e = 0; e < sizeof edges / sizeof edges[0]; ++e) {
        uint64_t w = edges[e].index, k = w / 2; /* normal k uses words 2k (a) and 2k + 1 (b) */
        cr_assert_eq(lab_rng_u32(seed, stream, w), edges[e].word, "edge %zu: word %llu", e, (unsigned long long)w);
        for (size_t l = 0; l < sizeof leads / sizeof leads[0]; ++l) {
            uint64_t first = k - leads[l];
            size_t at = 0;
            lab_rng_fill_normal(z, N, seed, stream, first);
            cr_expect_eq(tr_normal_mismatch(z, N, seed, stream, first, &at), 0, "edge %#x (word %llu) lead %llu: at %zu",
                         edges[e].word, (unsigned long long)w, (unsigned long long)leads[l], at);
            float one;
            lab_rng_fill_normal(&one, 1, seed, stream, k);
            float s = lab_rng_normal(seed, stream, k);
            cr_expect(memcmp(&one, &s, sizeof s) == 0, "edge %#x alone: %a vs %a", edges[e].word, (double)one,
                      (double)s);
            first = w - leads[l];
            lab_rng_fill_uniform(u, N, seed, stream, first);
            cr_expect_eq(tr_uniform_mismatch(u, N, seed, stream, first, &at), 0, "uniform word %llu lead %llu: at %zu",
                         (unsigned long long)w, (unsigned long long)leads[l], at);
        }
    }
    /* u1 = 1 gives radius +0: the normal is a signed zero, and the sign must match too (memcmp above). */
    float z0 = lab_rng_normal(seed, stream, 2764330038ull / 2);
    cr_expect(z0 == 0.0f, "a = 0xffffffff: %a", (double)z0);
}
