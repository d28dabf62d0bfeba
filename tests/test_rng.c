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
