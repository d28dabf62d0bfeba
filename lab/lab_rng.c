/* lab_rng: Philox4x32-10 counter-based RNG and the (seed, stream, index) -> value helpers shared by CPU and GPU.
 *
 * The fills below are the batched host versions of lab_rng_uniform and lab_rng_normal (lab_rng.h), which
 * stay the definition (CUDA device code calls them as they are). They give the same bits, for any first
 * and n, and are what every incident uses to make its inputs on the CPU. */
#include "lab_rng.h"

#include <stddef.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------- */
/* Why the batched normals are bit-identical to lab_rng_normal                                     */

/* lab_rng_normal spends most of its time on work that does not depend on the value: the Taylor
 * coefficient tables of its cosine (a chain of divisions per call), 1/k of its log series, and a full
 * Philox call for each of its two words, where one call yields the four words of two normals.
 * lab_rng_fill_normal computes the same IEEE double operations, in the same order, on the same
 * operands: the tables once per call (by the same divisions), both normals of a Philox block from one
 * call, and the series run across a batch so that independent values overlap (and vectorize). Every
 * operation is a single correctly rounded IEEE-754 double +, -, *, / or sqrt, and the build passes
 * -ffp-contract=off (mk/config.mk), so no multiply-add is fused into an FMA here or in the header's
 * scalars: both round after every operation. Vector instructions round each lane exactly as the
 * scalar instruction does. Branches on random data became exact bit operations: scaling by 2 is an
 * exponent increment, negation a sign flip, and selects pick one of two already rounded values.
 * tests/test_rng.c compares the fills with the scalar functions bit for bit (odd and unaligned starts,
 * offsets past 2^32 and the 2^64 wrap, edge words), and the CUDA cross-check of incident 0004
 * (input_mismatch) compares them with the device.
 *
 * Speed: the fills are most of what making an incident's inputs costs (a profile of a 1000-seed CUDA replay put 15%
 * of the host's samples in them), so the batch loops are built for wide vectors: this file is compiled at -O3
 * (mk/targets.mk), and each fill is cloned for AVX-512 and AVX2 with the plain x86-64 build as the fallback, picked
 * once at load time by the CPU (target_clones). A clone runs the same IEEE operations on more lanes at once; none of
 * the three may contract a multiply and an add (-ffp-contract=off), so every clone gives the scalar functions' bits
 * (tests/test_rng.c checks each clone, built alone by tests/rng_clone.h, where the CPU can run it). On one core of the
 * dev machine, 2^22 values: normals 15.9 -> 5.5 ns, uniforms 2.6 -> 0.6 ns. */
#ifdef LAB_RNG_CLONES
/* set by tests/rng_clone.h: one clone alone */
#elif defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define LAB_RNG_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define LAB_RNG_CLONES
#endif

#define LAB_RNG_BATCH 256 /* normals per batch (even); uniforms per batch: 2 * LAB_RNG_BATCH */

/* Counters are block numbers of 62 bits: word index i (mod 2^64) lies in block i >> 2 < 2^62, and a
 * fill that runs past index 2^64 - 1 wraps to block 0 as the scalar index arithmetic does. */
#define LAB_RNG_BLOCK_MASK ((UINT64_C(1) << 62) - 1)

/* The coefficient tables of lab_rng_cos2pi_exact and lab_rng_log_exact, made by the same operations. */
typedef struct {
    double cos_coef[11], sin_coef[11]; /* sg * fc[k], sg * fs[k]: sg = -1 for odd k, an exact negation */
    double inv_odd[26];                /* 1.0 / k for odd k */
} lab_rng_tables;

static void lab_rng_tables_make(lab_rng_tables *tb)
{
    double fc[11], fs[11];
    fc[0] = 1.0;
    fs[0] = 1.0;
    for (int k = 1; k <= 10; ++k) { /* as lab_rng_cos2pi_exact builds them */
        fc[k] = fc[k - 1] / (double)((2 * k - 1) * (2 * k));
        fs[k] = fs[k - 1] / (double)((2 * k) * (2 * k + 1));
    }
    for (int k = 0; k <= 10; ++k) {
        tb->cos_coef[k] = (k & 1) ? -fc[k] : fc[k];
        tb->sin_coef[k] = (k & 1) ? -fs[k] : fs[k];
    }
    for (int k = 0; k < 26; ++k) tb->inv_odd[k] = 0.0;
    for (int k = 1; k <= 25; k += 2) tb->inv_odd[k] = 1.0 / k; /* as lab_rng_log_exact's 1.0 / k */
}

static inline double lab_rng_bits_to_double(uint64_t b)
{
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

static inline uint64_t lab_rng_double_to_bits(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

/* Philox4x32-10 of blocks blk0 .. blk0+nb-1 (mod 2^62) of a stream, words into v0..v3: the rounds of
 * lab_rng_philox run over the whole batch at once, so the multiplies of different blocks overlap. */
static inline __attribute__((always_inline)) void lab_rng_philox_batch(uint64_t blk0, size_t nb, uint32_t stream, uint64_t seed, uint32_t *v0,
                                 uint32_t *v1, uint32_t *v2, uint32_t *v3)
{
    for (size_t j = 0; j < nb; ++j) {
        uint64_t blk = (blk0 + j) & LAB_RNG_BLOCK_MASK;
        v0[j] = (uint32_t)blk;
        v1[j] = (uint32_t)(blk >> 32);
        v2[j] = stream;
        v3[j] = 0u;
    }
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k0 += LAB_PHILOX_W0;
            k1 += LAB_PHILOX_W1;
        }
        for (size_t j = 0; j < nb; ++j) {
            uint64_t p0 = (uint64_t)LAB_PHILOX_M0 * v0[j];
            uint64_t p1 = (uint64_t)LAB_PHILOX_M1 * v2[j];
            uint32_t n0 = (uint32_t)(p1 >> 32) ^ v1[j] ^ k0;
            uint32_t n2 = (uint32_t)(p0 >> 32) ^ v3[j] ^ k1;
            v0[j] = n0;
            v1[j] = (uint32_t)p1;
            v2[j] = n2;
            v3[j] = (uint32_t)p0;
        }
    }
}

/* The Box-Muller step of lab_rng_normal from its two Philox words, for m <= LAB_RNG_BATCH normals:
 * out[i] from (a[i], b[i]). */
static inline __attribute__((always_inline)) void lab_rng_normal_from_words(const lab_rng_tables *tb, const uint32_t *a, const uint32_t *b, size_t m,
                                      float *out)
{
    double u2[LAB_RNG_BATCH], xs[LAB_RNG_BATCH], ev[LAB_RNG_BATCH], acc[LAB_RNG_BATCH], sq[LAB_RNG_BATCH],
        acc2[LAB_RNG_BATCH], rad[LAB_RNG_BATCH];
    int quad[LAB_RNG_BATCH];
    uint32_t pa[LAB_RNG_BATCH], pb[LAB_RNG_BATCH];
    /* Every loop but the last runs over a whole batch (a short batch is padded with zero words), so the
     * compiler sees a fixed trip count and vectorizes; only m values are stored. */
    for (size_t i = 0; i < LAB_RNG_BATCH; ++i) {
        pa[i] = i < m ? a[i] : 0u;
        pb[i] = i < m ? b[i] : 0u;
    }
    /* log of u1 = (a + 1) 2^-32 in (0, 1]: lab_rng_log_exact doubles x until x >= 0.7071..., which for
     * such u1 (at most 32 significant bits, exponent >= -32) leaves x in [0.7071..., 1.4142...) and never
     * enters its halving loop. Same x and e from the exponent field: h = mantissa / 2 in [0.5, 1), then
     * x = h or 2h and e to match; every doubling of the loop was exact, so x is the same double. */
    for (size_t i = 0; i < LAB_RNG_BATCH; ++i) {
        double u1 = ((double)pa[i] + 1.0) * (1.0 / 4294967296.0);
        uint64_t bits = lab_rng_double_to_bits(u1);
        int ex = (int)((bits >> 52) & 0x7ff) - 1023;
        uint64_t hb = (bits & UINT64_C(0x000fffffffffffff)) | (UINT64_C(1022) << 52);
        int low = lab_rng_bits_to_double(hb) < 0.70710678118654752;
        xs[i] = lab_rng_bits_to_double(hb + ((uint64_t)low << 52)); /* h * 2 when low, exactly */
        ev[i] = (double)(ex + 1 - low);
    }
    for (size_t i = 0; i < LAB_RNG_BATCH; ++i) {
        double s = (xs[i] - 1.0) / (xs[i] + 1.0);
        xs[i] = s;
        sq[i] = s * s;
        acc[i] = 0.0;
    }
    for (int k = 25; k >= 1; k -= 2) { /* sum = sum * s2 + 1/k, k = 25, 23, ..., 1 */
        double ik = tb->inv_odd[k];
        for (size_t i = 0; i < LAB_RNG_BATCH; ++i) acc[i] = acc[i] * sq[i] + ik;
    }
    for (size_t i = 0; i < LAB_RNG_BATCH; ++i) {
        double lm = (2.0 * xs[i]) * acc[i];
        double lg = lm + ev[i] * 0.69314718055994531;
        double rr = -2.0 * lg;
        rad[i] = __builtin_sqrt(rr > 0.0 ? rr : 0.0); /* sqrt(+0) = +0, as the 0.0 branch */
    }
    /* cos(2 pi u2): quadrant reduction as lab_rng_cos2pi_exact, without data-dependent branches. */
    for (size_t i = 0; i < LAB_RNG_BATCH; ++i) {
        double v = ((double)pb[i] * (1.0 / 4294967296.0)) * 4.0;
        int q = (int)v;
        double r = v - (double)q;
        int up = r > 0.5;
        r = r - (double)up; /* r - 1.0 or r - 0.0 (= r, exactly) */
        quad[i] = (q + up) & 3;
        double t = r * 1.5707963267948966;
        u2[i] = t;
        sq[i] = t * t;
        acc[i] = 0.0;
        acc2[i] = 0.0;
    }
    for (int k = 10; k >= 0; --k) {
        double cc = tb->cos_coef[k], sc = tb->sin_coef[k];
        for (size_t i = 0; i < LAB_RNG_BATCH; ++i) {
            acc[i] = acc[i] * sq[i] + cc;
            acc2[i] = acc2[i] * sq[i] + sc;
        }
    }
    for (size_t i = 0; i < m; ++i) {
        uint64_t sb = lab_rng_double_to_bits(acc2[i] * u2[i]), cb = lab_rng_double_to_bits(acc[i]);
        int q = quad[i];
        uint64_t odd = (uint64_t)0 - (uint64_t)(q & 1);              /* q odd: sine, else cosine */
        uint64_t neg = (uint64_t)(((q + 1) >> 1) & 1) << 63;          /* q = 1, 2: negated */
        out[i] = (float)(rad[i] * lab_rng_bits_to_double(((sb & odd) | (cb & ~odd)) ^ neg));
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* Fills                                                                                           */

/* Word i of the stream is lane (i & 3) of block i >> 2: a batch runs from block first >> 2 and skips the
 * first (first & 3) words of it. Words go to out32, or as lab_rng_uniform's (float)(w >> 8) * 2^-24 (exact) to
 * outf. */
static inline __attribute__((always_inline)) void lab_rng_fill_words(uint32_t *out32, float *outf, uint64_t n,
                                                                     uint64_t seed, uint32_t stream, uint64_t first)
{
    enum { NB = LAB_RNG_BATCH / 2, NW = 4 * NB };
    uint32_t v[4][NB], w[NW];
    size_t skip = (size_t)(first & 3);
    uint64_t blk = first >> 2;
    for (uint64_t done = 0; done < n;) {
        size_t m = n - done < (uint64_t)(NW - skip) ? (size_t)(n - done) : NW - skip, nb = (skip + m + 3) / 4;
        lab_rng_philox_batch(blk, nb, stream, seed, v[0], v[1], v[2], v[3]);
        for (size_t j = 0; j < nb; ++j) {
            w[4 * j] = v[0][j];
            w[4 * j + 1] = v[1][j];
            w[4 * j + 2] = v[2][j];
            w[4 * j + 3] = v[3][j];
        }
        if (out32)
            for (size_t i = 0; i < m; ++i) out32[done + i] = w[skip + i];
        else
            for (size_t i = 0; i < m; ++i) outf[done + i] = (float)(w[skip + i] >> 8) * (1.0f / 16777216.0f);
        done += m;
        blk += nb;
        skip = 0;
    }
}

LAB_RNG_CLONES void lab_rng_fill_uniform(float *out, uint64_t n, uint64_t seed, uint32_t stream, uint64_t first)
{
    lab_rng_fill_words(NULL, out, n, seed, stream, first);
}

LAB_RNG_CLONES void lab_rng_fill_u32(uint32_t *out, uint64_t n, uint64_t seed, uint32_t stream, uint64_t first)
{
    lab_rng_fill_words(out, NULL, n, seed, stream, first);
}

/* Normal i uses words 2i and 2i+1 (mod 2^64): lanes 0, 1 of block i >> 1 for even i, lanes 2, 3 for odd
 * i. A batch runs from block first >> 1 and skips the first normal of it when first is odd. */
LAB_RNG_CLONES void lab_rng_fill_normal(float *out, uint64_t n, uint64_t seed, uint32_t stream, uint64_t first)
{
    enum { NB = LAB_RNG_BATCH / 2 };
    lab_rng_tables tb;
    lab_rng_tables_make(&tb);
    uint32_t v0[NB], v1[NB], v2[NB], v3[NB], a[LAB_RNG_BATCH], b[LAB_RNG_BATCH];
    size_t skip = (size_t)(first & 1);
    uint64_t blk = first >> 1;
    for (uint64_t done = 0; done < n;) {
        size_t m = n - done < (uint64_t)(LAB_RNG_BATCH - skip) ? (size_t)(n - done) : LAB_RNG_BATCH - skip,
               nb = (skip + m + 1) / 2;
        lab_rng_philox_batch(blk, nb, stream, seed, v0, v1, v2, v3);
        for (size_t j = 0; j < nb; ++j) {
            a[2 * j] = v0[j];
            b[2 * j] = v1[j];
            a[2 * j + 1] = v2[j];
            b[2 * j + 1] = v3[j];
        }
        lab_rng_normal_from_words(&tb, a + skip, b + skip, m, out + done);
        done += m;
        blk += nb;
        skip = 0;
    }
}
