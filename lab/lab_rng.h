/* lab_rng: Philox4x32-10 counter-based RNG and the (seed, stream, index) -> value helpers shared by CPU and GPU. */
#ifndef LAB_RNG_H
#define LAB_RNG_H

#include <stdint.h>

#include "lab_hd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Philox4x32 round constants (Salmon et al., SC'11; the values Random123 and cuRAND use). */
#define LAB_PHILOX_M0 0xD2511F53u
#define LAB_PHILOX_M1 0xCD9E8D57u
#define LAB_PHILOX_W0 0x9E3779B9u
#define LAB_PHILOX_W1 0xBB67AE85u

typedef struct { uint32_t v[4]; } lab_philox_ctr;
typedef struct { uint32_t v[2]; } lab_philox_key;

/* Philox4x32 with 10 rounds: a bijection of the 128-bit counter under the 64-bit key. Pure; never fails. */
static inline LAB_HD lab_philox_ctr lab_rng_philox(lab_philox_ctr c, lab_philox_key k)
{
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k.v[0] += LAB_PHILOX_W0;
            k.v[1] += LAB_PHILOX_W1;
        }
        uint64_t p0 = (uint64_t)LAB_PHILOX_M0 * c.v[0];
        uint64_t p1 = (uint64_t)LAB_PHILOX_M1 * c.v[2];
        lab_philox_ctr n;
        n.v[0] = (uint32_t)(p1 >> 32) ^ c.v[1] ^ k.v[0];
        n.v[1] = (uint32_t)p1;
        n.v[2] = (uint32_t)(p0 >> 32) ^ c.v[3] ^ k.v[1];
        n.v[3] = (uint32_t)p0;
        c = n;
    }
    return c;
}

/* The 32-bit word number `index` of stream `stream` under `seed`. Words come four per Philox call:
 * counter = (index/4 low, index/4 high, stream, 0), key = (seed low, seed high). */
static inline LAB_HD uint32_t lab_rng_u32(uint64_t seed, uint32_t stream, uint64_t index)
{
    uint64_t block = index >> 2;
    lab_philox_ctr c = {{(uint32_t)block, (uint32_t)(block >> 32), stream, 0u}};
    lab_philox_key k = {{(uint32_t)seed, (uint32_t)(seed >> 32)}};
    lab_philox_ctr r = lab_rng_philox(c, k);
    return r.v[index & 3];
}

/* Uniform float in [0, 1): the top 24 bits of the word times 2^-24, exact on every backend. */
static inline LAB_HD float lab_rng_uniform(uint64_t seed, uint32_t stream, uint64_t index)
{
    return (float)(lab_rng_u32(seed, stream, index) >> 8) * (1.0f / 16777216.0f);
}

/* Natural log of x in (0, 1] (-inf at 0, NaN outside), from +, * and / alone (no libm), so host and device agree bit for bit.
 * x = m * 2^e with m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(s), s = (m-1)/(m+1), series to s^25. */
static inline LAB_HD double lab_rng_log_exact(double x)
{
    if (!(x > 0.0) || !(x <= 1.0)) return x == 0.0 ? -__builtin_inf() : __builtin_nan(""); /* outside (0, 1] */
    int e = 0;
    while (x < 0.70710678118654752) { x = LAB_DMUL(x, 2.0); --e; }
    while (x >= 1.4142135623730950) { x = LAB_DMUL(x, 0.5); ++e; }
    double s = (x - 1.0) / (x + 1.0);
    double s2 = LAB_DMUL(s, s);
    double sum = 0.0;
    for (int k = 25; k >= 1; k -= 2) sum = LAB_DADD(LAB_DMUL(sum, s2), 1.0 / k);
    double lm = LAB_DMUL(LAB_DMUL(2.0, s), sum);
    return LAB_DADD(lm, LAB_DMUL((double)e, 0.69314718055994531));
}

/* cos(2*pi*u) for u in [0, 1), from +, * and / alone: exact quadrant reduction of u, then Taylor series. */
static inline LAB_HD double lab_rng_cos2pi_exact(double u)
{
    double v = LAB_DMUL(u, 4.0);
    int q = (int)v;                 /* quadrant 0..3, exact: u is a dyadic rational */
    double r = v - (double)q;       /* in [0, 1), exact */
    if (r > 0.5) { r = r - 1.0; q = (q + 1) & 3; } /* r in (-0.5, 0.5]: angle in (-pi/4, pi/4] */
    double t = LAB_DMUL(r, 1.5707963267948966);
    double t2 = LAB_DMUL(t, t);
    double c = 0.0, s = 0.0;
    /* cos t = sum (-1)^k t^2k/(2k)!, sin t = t sum (-1)^k t^2k/(2k+1)!, Horner from k = 10 */
    double fc[11], fs[11];
    fc[0] = 1.0; fs[0] = 1.0;
    for (int k = 1; k <= 10; ++k) {
        fc[k] = fc[k - 1] / (double)((2 * k - 1) * (2 * k));
        fs[k] = fs[k - 1] / (double)((2 * k) * (2 * k + 1));
    }
    for (int k = 10; k >= 0; --k) {
        double sg = (k & 1) ? -1.0 : 1.0;
        c = LAB_DADD(LAB_DMUL(c, t2), LAB_DMUL(sg, fc[k]));
        s = LAB_DADD(LAB_DMUL(s, t2), LAB_DMUL(sg, fs[k]));
    }
    s = LAB_DMUL(s, t);
    switch (q) {
    case 0: return c;
    case 1: return -s;
    case 2: return -c;
    default: return s;
    }
}

/* Standard normal float number `index` of `stream` under `seed`, by Box-Muller over words 2*index and
 * 2*index+1: sqrt(-2 log u1) cos(2 pi u2) with u1 in (0, 1]. Computed in double with lab's own log/cos
 * and IEEE sqrt, then rounded to float: identical bits on CPU and GPU. */
static inline LAB_HD float lab_rng_normal(uint64_t seed, uint32_t stream, uint64_t index)
{
    uint32_t a = lab_rng_u32(seed, stream, 2 * index);
    uint32_t b = lab_rng_u32(seed, stream, 2 * index + 1);
    double u1 = ((double)a + 1.0) * (1.0 / 4294967296.0); /* (0, 1] */
    double u2 = (double)b * (1.0 / 4294967296.0);         /* [0, 1) */
    double rad = -2.0 * lab_rng_log_exact(u1);
    double r = rad > 0.0 ? __builtin_sqrt(rad) : 0.0;
    return (float)LAB_DMUL(r, lab_rng_cos2pi_exact(u2));
}

/* Fills out[0..n) with lab_rng_uniform(seed, stream, first + i), bit for bit, for any first and n (n = 0
 * writes nothing); host only, a Philox block (four values) per call and in batches. Never fails. */
void lab_rng_fill_uniform(float *out, uint64_t n, uint64_t seed, uint32_t stream, uint64_t first);

/* Fills out[0..n) with lab_rng_u32(seed, stream, first + i), bit for bit, for any first and n; host only, batched as
 * lab_rng_fill_uniform. Never fails. */
void lab_rng_fill_u32(uint32_t *out, uint64_t n, uint64_t seed, uint32_t stream, uint64_t first);

/* Fills out[0..n) with lab_rng_normal(seed, stream, first + i), bit for bit, for any first and n (n = 0
 * writes nothing); host only, batched: one Philox call per two normals, several times faster than the
 * per-value call (lab_rng.c says why the bits are the same). Never fails. */
void lab_rng_fill_normal(float *out, uint64_t n, uint64_t seed, uint32_t stream, uint64_t first);

#ifdef __cplusplus
}
#endif

#endif
