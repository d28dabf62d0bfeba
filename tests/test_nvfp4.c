/* test_nvfp4: the shared NVFP4 kernel (kernels/lab_nvfp4*): the scale-factor layout against a reshape/permute formulation, the remap kinds, quantization by hand, and the fault namer on a workload of its own. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_format.h"
#include "lab_metric.h"
#include "lab_nvfp4.h"
#include "lab_rng.h"

/* ---- the layout ------------------------------------------------------------------------------ */

/* The independent formulation: pad the (M, K_sf) matrix to (Mp, Kp), view it as a 5-D array
 * (Mp/128, 4, 32, Kp/4, 4) (m = mt*128 + m4*32 + m32, k = kt*4 + k4), permute the axes to (0, 3, 2, 1, 4) and
 * read it out contiguously; done with a generic strided permute, not the offset formula. */
static void reshape_permute(const uint32_t *padded, size_t mp, size_t kp, uint32_t *out)
{
    size_t shape[5] = {mp / 128, 4, 32, kp / 4, 4};
    size_t stride[5] = {128 * kp, 32 * kp, kp, 4, 1};
    const int perm[5] = {0, 3, 2, 1, 4};
    size_t pshape[5], pstride[5], idx[5] = {0, 0, 0, 0, 0}, total = mp * kp;
    for (int d = 0; d < 5; ++d) pshape[d] = shape[perm[d]], pstride[d] = stride[perm[d]];
    for (size_t o = 0; o < total; ++o) {
        size_t src = 0;
        for (int d = 0; d < 5; ++d) src += idx[d] * pstride[d];
        out[o] = padded[src];
        for (int d = 4; d >= 0; --d) { /* row-major increment of the permuted index */
            if (++idx[d] < pshape[d]) break;
            idx[d] = 0;
        }
    }
}

Test(nvfp4_layout, offset_matches_reshape_permute_on_many_shapes)
{
    const size_t rows[] = {1, 2, 31, 32, 33, 96, 127, 128, 129, 200, 255, 256, 257, 384, 1000};
    const size_t ksf[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 37, 64, 448};
    size_t shapes = 0;
    for (size_t a = 0; a < sizeof rows / sizeof rows[0]; ++a)
        for (size_t b = 0; b < sizeof ksf / sizeof ksf[0]; ++b) {
            size_t m = rows[a], k = ksf[b], mp = (m + 127) / 128 * 128, kp = (k + 3) / 4 * 4;
            cr_assert_eq(lab_nvfp4_sf_cosize(m, k), mp * kp);
            uint32_t *padded = malloc(mp * kp * 4), *perm = malloc(mp * kp * 4);
            unsigned char *hit = calloc(mp * kp, 1);
            cr_assert(padded && perm && hit);
            for (size_t i = 0; i < mp * kp; ++i) padded[i] = (uint32_t)i;
            reshape_permute(padded, mp, kp, perm);
            for (size_t mm = 0; mm < mp; ++mm)
                for (size_t kk = 0; kk < kp; ++kk) {
                    size_t o = lab_nvfp4_sf_offset(mm, kk, k);
                    cr_assert_lt(o, mp * kp, "(%zu, %zu) of (%zu, %zu): offset %zu", mm, kk, m, k, o);
                    cr_assert_eq(perm[o], mm * kp + kk, "(%zu, %zu) of (%zu, %zu): offset %zu holds %u", mm, kk, m, k,
                                 o, perm[o]);
                    cr_assert_eq(hit[o], 0, "offset %zu hit twice", o);
                    hit[o] = 1;
                }
            free(padded), free(perm), free(hit);
            ++shapes;
        }
    cr_expect_eq(shapes, 180);
}

/* The brief's formula by hand at a few points, and the write-up's small case: K_sf = 2 is padded to 4. */
Test(nvfp4_layout, offsets_by_hand)
{
    cr_expect_eq(lab_nvfp4_sf_offset(0, 0, 2), 0);
    cr_expect_eq(lab_nvfp4_sf_offset(0, 1, 2), 1);
    cr_expect_eq(lab_nvfp4_sf_offset(1, 0, 2), 16);
    cr_expect_eq(lab_nvfp4_sf_offset(32, 0, 2), 4);
    cr_expect_eq(lab_nvfp4_sf_offset(127, 3, 2), 31 * 16 + 3 * 4 + 3);
    cr_expect_eq(lab_nvfp4_sf_offset(128, 0, 2), 512);
    cr_expect_eq(lab_nvfp4_sf_offset(0, 4, 37), 512, "next K tile");
    cr_expect_eq(lab_nvfp4_sf_offset(128, 0, 37), 10 * 512, "next M tile after ceil(37/4) = 10 K tiles");
    cr_expect_eq(lab_nvfp4_sf_cosize(1, 2), 512);
    cr_expect_eq(lab_nvfp4_sf_cosize(200, 37), 256 * 40);
    cr_expect_eq(lab_nvfp4_sf_cosize(0, 4), 0);
}

/* ---- remap kinds ------------------------------------------------------------------------------- */

static uint8_t *scales(size_t rows, size_t k_sf, uint64_t seed)
{
    uint8_t *s = malloc(rows * k_sf);
    for (size_t i = 0; i < rows * k_sf; ++i) s[i] = (uint8_t)(0x20 + lab_rng_u32(seed, 77, i) % 0x50); /* finite */
    return s;
}

Test(nvfp4_remap, fix_places_every_scale_and_zeroes_padding)
{
    size_t rows = 200, k_sf = 37, cos = lab_nvfp4_sf_cosize(rows, k_sf);
    uint8_t *src = scales(rows, k_sf, 3), *dst = malloc(cos);
    memset(dst, 0xFF, cos);
    cr_assert_eq(lab_nvfp4_sf_remap(src, rows, k_sf, dst, cos, LAB_NVFP4_REMAP_FIX), LAB_OK);
    size_t real = 0;
    for (size_t m = 0; m < 256; ++m)
        for (size_t k = 0; k < 40; ++k) {
            uint8_t v = dst[lab_nvfp4_sf_offset(m, k, k_sf)];
            if (m < rows && k < k_sf) {
                cr_assert_eq(v, src[m * k_sf + k]);
                ++real;
            } else {
                cr_assert_eq(v, 0, "padding (%zu, %zu) written as +0", m, k);
            }
        }
    cr_expect_eq(real, rows * k_sf);
    free(src), free(dst);
}

Test(nvfp4_remap, size_not_cosize_leaves_padding_stale)
{
    size_t rows = 200, k_sf = 37, cos = lab_nvfp4_sf_cosize(rows, k_sf);
    uint8_t *src = scales(rows, k_sf, 4), *dst = malloc(cos);
    memset(dst, 0x7F, cos); /* stale E4M3 NaN codes */
    cr_assert_eq(lab_nvfp4_sf_remap(src, rows, k_sf, dst, cos, LAB_NVFP4_REMAP_SIZE_NOT_COSIZE), LAB_OK);
    size_t stale = 0;
    for (size_t m = 0; m < 256; ++m)
        for (size_t k = 0; k < 40; ++k) {
            uint8_t v = dst[lab_nvfp4_sf_offset(m, k, k_sf)];
            if (m < rows && k < k_sf) cr_assert_eq(v, src[m * k_sf + k], "every real scale lands");
            else stale += v == 0x7F;
        }
    cr_expect_eq(stale, cos - rows * k_sf, "every padding byte untouched");
    free(src), free(dst);
}

/* M/K swapped: (m, k) takes src[k*M + m]. With all scales equal the layout is byte for byte the fix's. */
Test(nvfp4_remap, mk_swap_permutes_and_is_invisible_on_uniform_scales)
{
    size_t rows = 96, k_sf = 37, cos = lab_nvfp4_sf_cosize(rows, k_sf);
    uint8_t *src = scales(rows, k_sf, 5), *a = calloc(cos, 1), *b = calloc(cos, 1);
    cr_assert_eq(lab_nvfp4_sf_remap(src, rows, k_sf, a, cos, LAB_NVFP4_REMAP_MK_SWAP), LAB_OK);
    size_t moved = 0;
    for (size_t m = 0; m < rows; ++m)
        for (size_t k = 0; k < k_sf; ++k) {
            cr_assert_eq(a[lab_nvfp4_sf_offset(m, k, k_sf)], src[k * rows + m]);
            moved += src[k * rows + m] != src[m * k_sf + k];
        }
    cr_expect_gt(moved, rows * k_sf / 2, "most scales land on another block");
    memset(src, 0x7E, rows * k_sf);
    cr_assert_eq(lab_nvfp4_sf_remap(src, rows, k_sf, a, cos, LAB_NVFP4_REMAP_MK_SWAP), LAB_OK);
    cr_assert_eq(lab_nvfp4_sf_remap(src, rows, k_sf, b, cos, LAB_NVFP4_REMAP_FIX), LAB_OK);
    cr_expect(memcmp(a, b, cos) == 0, "uniform scales: the swapped layout equals the right one");
    /* M = 1 (the write-up's activation): the swap is the identity on A. */
    uint8_t one[2] = {0x30, 0x41};
    memset(a, 0, 512), memset(b, 0, 512);
    lab_nvfp4_sf_remap(one, 1, 2, a, 512, LAB_NVFP4_REMAP_MK_SWAP);
    lab_nvfp4_sf_remap(one, 1, 2, b, 512, LAB_NVFP4_REMAP_FIX);
    cr_expect(memcmp(a, b, 512) == 0);
    free(src), free(a), free(b);
}

Test(nvfp4_remap, bad_arguments_are_named)
{
    uint8_t src[8] = {0}, dst[512];
    cr_expect_eq(lab_nvfp4_sf_remap(src, 1, 2, dst, 511, LAB_NVFP4_REMAP_FIX), LAB_ERR_ARG);
    cr_expect(strstr(lab_err_msg(), "needs 512") != NULL, "%s", lab_err_msg());
    cr_expect_eq(lab_nvfp4_sf_remap(src, 0, 2, dst, 512, LAB_NVFP4_REMAP_FIX), LAB_ERR_ARG);
    cr_expect_eq(lab_nvfp4_sf_remap(src, 1, 2, dst, 512, (lab_nvfp4_remap_kind)9), LAB_ERR_ARG);
    cr_expect(strstr(lab_err_msg(), "unknown remap kind 9") != NULL, "%s", lab_err_msg());
    cr_expect_eq(lab_nvfp4_sf_remap(NULL, 1, 2, dst, 512, LAB_NVFP4_REMAP_FIX), LAB_ERR_ARG);
}

/* ---- quantization ------------------------------------------------------------------------------ */

/* All ones: amax 1, global 2688, block scale e4m3(448) = 0x7E, code e2m1(6) = 7, two per byte: 0x77. */
Test(nvfp4_quant, all_ones_by_hand)
{
    float x[32];
    for (int i = 0; i < 32; ++i) x[i] = 1.0f;
    uint8_t q[16], sf[2];
    float g = 0, back[32];
    cr_assert_eq(lab_nvfp4_quantize(x, 1, 32, q, sf, &g), LAB_OK);
    cr_expect_eq(g, 2688.0f);
    cr_expect_eq(sf[0], 0x7E);
    cr_expect_eq(sf[1], 0x7E);
    for (int i = 0; i < 16; ++i) cr_expect_eq(q[i], 0x77);
    cr_assert_eq(lab_nvfp4_dequantize(q, sf, 1, 32, g, back), LAB_OK);
    for (int i = 0; i < 32; ++i) cr_expect_eq(back[i], 1.0f);
}

/* One block by hand: amax 6 -> global 448, block scale e4m3(448 * 6 / 6) = 448; x * 448 / 448 = x, so codes are
 * e2m1(x); even element in the low nibble. A second block with amax 3 gets scale 224 (0x76) and x * 2. */
Test(nvfp4_quant, block_by_hand_and_nibble_order)
{
    float x[32] = {0.5f, -1.0f, 6.0f, 1.5f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2.0f,
                   3.0f, 0.25f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -0.75f};
    uint8_t q[16], sf[2];
    float g;
    cr_assert_eq(lab_nvfp4_quantize(x, 1, 32, q, sf, &g), LAB_OK);
    cr_expect_eq(g, 448.0f);
    cr_expect_eq(sf[0], 0x7E);
    cr_expect_eq(lab_e4m3_to_float(sf[1]), 224.0f);
    cr_expect_eq(q[0], (uint8_t)(0x1 | (0xA << 4)), "0.5 low, -1 high: %#x", q[0]);
    cr_expect_eq(q[1], (uint8_t)(0x7 | (0x3 << 4)), "6 low, 1.5 high: %#x", q[1]);
    cr_expect_eq(q[7], (uint8_t)(0x4 << 4), "2.0 in the high nibble of byte 7");
    cr_expect_eq(q[8], (uint8_t)(0x7 | (0x1 << 4)), "3*2 = 6 and 0.25*2 = 0.5: %#x", q[8]);
    cr_expect_eq(q[15] >> 4, 0xB, "-0.75*2 = -1.5");
    float back[32];
    cr_assert_eq(lab_nvfp4_dequantize(q, sf, 1, 32, g, back), LAB_OK);
    for (int i = 0; i < 32; ++i) cr_expect_eq(back[i], x[i], "element %d", i);
}

Test(nvfp4_quant, bad_input_is_named)
{
    float x[16] = {0};
    uint8_t q[8], sf[1];
    float g;
    cr_expect_eq(lab_nvfp4_quantize(x, 1, 16, q, sf, &g), LAB_ERR_ARG);
    cr_expect(strstr(lab_err_msg(), "all-zero") != NULL, "%s", lab_err_msg());
    x[3] = NAN;
    cr_expect_eq(lab_nvfp4_quantize(x, 1, 16, q, sf, &g), LAB_ERR_ARG);
    cr_expect(strstr(lab_err_msg(), "input 3 is not finite") != NULL, "%s", lab_err_msg());
    cr_expect_eq(lab_nvfp4_quantize(x, 1, 24, q, sf, &g), LAB_ERR_ARG);
    cr_expect(strstr(lab_err_msg(), "multiple of 16") != NULL, "%s", lab_err_msg());
    cr_expect_eq(lab_nvfp4_dequantize(q, sf, 1, 16, 0.0f, x), LAB_ERR_ARG);
}

/* ---- the fault namer ------------------------------------------------------------------------------ */

/* A GEMM workload of the tests' own (no incident's): A (m x k) and B (n x k) uniform in [-1, 1) times a power of
 * two 2^e per 16-element block, e uniform in -3..3 (scales that differ, so a misplaced scale shows), quantized
 * with lab_nvfp4_quantize; the layout buffers start as `stale` bytes (what memory held before the remap). */
#define NV_STREAM 0x7e57f400u
typedef struct {
    size_t m, n, k, k_sf, cosize_a, cosize_b;
    uint8_t *qa, *qb, *sfa, *sfb, *stale_a, *stale_b;
    float global_a, global_b;
} nv_work;

static void nv_values(float *x, size_t rows, size_t k, uint64_t seed, uint32_t stream)
{
    for (size_t r = 0; r < rows; ++r)
        for (size_t b = 0; b < k / LAB_NVFP4_BLOCK; ++b) {
            int e = (int)(lab_rng_u32(seed, stream + 1u, r * (k / LAB_NVFP4_BLOCK) + b) % 7u) - 3;
            for (size_t j = 0; j < LAB_NVFP4_BLOCK; ++j) {
                size_t i = r * k + b * LAB_NVFP4_BLOCK + j;
                x[i] = ldexpf(lab_rng_uniform(seed, stream, i) * 2.0f - 1.0f, e);
            }
        }
}

static void nv_work_init(nv_work *w, size_t m, size_t n, size_t k, uint64_t seed, uint8_t stale)
{
    memset(w, 0, sizeof *w);
    w->m = m, w->n = n, w->k = k, w->k_sf = k / LAB_NVFP4_BLOCK;
    w->cosize_a = lab_nvfp4_sf_cosize(m, w->k_sf), w->cosize_b = lab_nvfp4_sf_cosize(n, w->k_sf);
    float *x = malloc((m > n ? m : n) * k * sizeof *x);
    w->qa = malloc(m * k / 2), w->qb = malloc(n * k / 2), w->sfa = malloc(m * w->k_sf), w->sfb = malloc(n * w->k_sf);
    w->stale_a = malloc(w->cosize_a), w->stale_b = malloc(w->cosize_b);
    cr_assert(x && w->qa && w->qb && w->sfa && w->sfb && w->stale_a && w->stale_b);
    nv_values(x, m, k, seed, NV_STREAM);
    cr_assert_eq(lab_nvfp4_quantize(x, m, k, w->qa, w->sfa, &w->global_a), LAB_OK, "%s", lab_err_msg());
    nv_values(x, n, k, seed, NV_STREAM + 2u);
    cr_assert_eq(lab_nvfp4_quantize(x, n, k, w->qb, w->sfb, &w->global_b), LAB_OK, "%s", lab_err_msg());
    memset(w->stale_a, stale, w->cosize_a);
    memset(w->stale_b, stale, w->cosize_b);
    free(x);
}

static void nv_work_free(nv_work *w)
{
    free(w->qa), free(w->qb), free(w->sfa), free(w->sfb), free(w->stale_a), free(w->stale_b);
    memset(w, 0, sizeof *w);
}

/* The workload's GEMM through `kind`'s remap, on layout buffers that start as the stale bytes. */
static float *gemm_of(const nv_work *w, lab_nvfp4_remap_kind kind)
{
    uint8_t *la = malloc(w->cosize_a), *lb = malloc(w->cosize_b);
    float *out = malloc(w->m * w->n * sizeof *out);
    cr_assert(la && lb && out);
    memcpy(la, w->stale_a, w->cosize_a);
    memcpy(lb, w->stale_b, w->cosize_b);
    cr_assert_eq(lab_nvfp4_sf_remap(w->sfa, w->m, w->k_sf, la, w->cosize_a, kind), LAB_OK, "%s", lab_err_msg());
    cr_assert_eq(lab_nvfp4_sf_remap(w->sfb, w->n, w->k_sf, lb, w->cosize_b, kind), LAB_OK, "%s", lab_err_msg());
    cr_assert_eq(lab_nvfp4_gemm(w->qa, la, w->qb, lb, w->m, w->n, w->k, lab_nvfp4_alpha(w->global_a, w->global_b), out),
                 LAB_OK, "%s", lab_err_msg());
    free(la), free(lb);
    return out;
}

/* The cosine of an output with a bit-identical candidate: 1 up to the rounding of sqrt(x.x)^2 against x.x in
 * lab_metric_cosine (an ulp or two of 1; whether it lands on 1.0 exactly depends on the data). */
#define NV_SAME_COSINE (1.0 - 4.0 * 2.220446049250313e-16)

static lab_nvfp4_problem problem_of(const nv_work *w)
{
    lab_nvfp4_problem p = {w->m, w->n, w->k, w->qa, w->qb, w->sfa, w->sfb, w->global_a, w->global_b};
    return p;
}

/* Every candidate fault, injected into a ragged random workload, is named; the correct output is "the correct
 * layout"; NaN-free outputs are never blamed on the padding. */
Test(nvfp4_namer, names_each_injected_fault, .timeout = 60)
{
    nv_work w;
    nv_work_init(&w, 200, 96, 592, 4, 0x22); /* M, N not multiples of 128; K_sf = 37 not a multiple of 4 */
    lab_nvfp4_problem p = problem_of(&w);
    size_t mn = w.m * w.n;
    lab_nvfp4_diagnosis d;
    const lab_nvfp4_remap_kind kinds[] = {LAB_NVFP4_REMAP_FIX, LAB_NVFP4_REMAP_MK_SWAP, LAB_NVFP4_REMAP_TILE_SWAP};
    const lab_nvfp4_fault want[] = {LAB_NVFP4_FAULT_NONE, LAB_NVFP4_FAULT_MK_SWAP, LAB_NVFP4_FAULT_TILE_SWAP};
    for (int i = 0; i < 3; ++i) {
        float *out = gemm_of(&w, kinds[i]);
        cr_assert_eq(lab_nvfp4_name_fault(&p, out, &d), LAB_OK, "%s", lab_err_msg());
        cr_expect_eq(d.fault, want[i], "%s: %s", lab_nvfp4_remap_name(kinds[i]), d.text);
        cr_expect_geq(d.cosine, NV_SAME_COSINE, "%s (%.17g)", d.text, d.cosine);
        cr_expect_lt(d.runner_up_cosine, 0.9, "the runner-up is far: %s %g", lab_nvfp4_fault_name(d.runner_up),
                     d.runner_up_cosine);
        free(out);
    }
    /* Nibble order swapped in A only, then in B only: one candidate explains both (a0 b1 + a1 b0 either way);
     * swapped in both, the dot products do not change at all. */
    for (int side = 0; side < 2; ++side) {
        uint8_t *q = side ? w.qb : w.qa;
        size_t len = (side ? w.n : w.m) * w.k / 2;
        for (size_t i = 0; i < len; ++i) q[i] = (uint8_t)((q[i] >> 4) | (q[i] << 4));
        float *out = gemm_of(&w, LAB_NVFP4_REMAP_FIX);
        for (size_t i = 0; i < len; ++i) q[i] = (uint8_t)((q[i] >> 4) | (q[i] << 4)); /* back */
        cr_assert_eq(lab_nvfp4_name_fault(&p, out, &d), LAB_OK);
        cr_expect_eq(d.fault, LAB_NVFP4_FAULT_NIBBLE, "side %d: %s", side, d.text);
        cr_expect_geq(d.cosine, NV_SAME_COSINE, "%s (%.17g)", d.text, d.cosine);
        free(out);
    }
    /* Padding: NaN codes in the K padding of row 7 of A and row 3 of B. */
    w.stale_a[lab_nvfp4_sf_offset(7, 38, w.k_sf)] = 0xFF;
    w.stale_b[lab_nvfp4_sf_offset(3, 39, w.k_sf)] = 0x7F;
    float *out = gemm_of(&w, LAB_NVFP4_REMAP_SIZE_NOT_COSIZE);
    cr_assert_eq(lab_nvfp4_name_fault(&p, out, &d), LAB_OK);
    cr_expect_eq(d.fault, LAB_NVFP4_FAULT_PADDING, "%s", d.text);
    cr_expect_eq(lab_metric_census_f32(out, mn).nan, w.n + w.m - 1);
    free(out);
    nv_work_free(&w);
}

/* A fault the namer does not know: every row's scales read one column to the right (wrapping). */
Test(nvfp4_namer, unknown_fault_is_not_named)
{
    nv_work w;
    nv_work_init(&w, 200, 96, 592, 6, 0x22);
    size_t m = w.m, n = w.n, k_sf = w.k_sf;
    uint8_t *la = calloc(w.cosize_a, 1), *lb = calloc(w.cosize_b, 1);
    uint8_t *shifted = malloc(m * k_sf);
    for (size_t r = 0; r < m; ++r)
        for (size_t c = 0; c < k_sf; ++c) shifted[r * k_sf + c] = w.sfa[r * k_sf + (c + 1) % k_sf];
    cr_assert_eq(lab_nvfp4_sf_remap(shifted, m, k_sf, la, w.cosize_a, LAB_NVFP4_REMAP_FIX), LAB_OK);
    cr_assert_eq(lab_nvfp4_sf_remap(w.sfb, n, k_sf, lb, w.cosize_b, LAB_NVFP4_REMAP_FIX), LAB_OK);
    float *out = malloc(m * n * sizeof *out);
    cr_assert_eq(lab_nvfp4_gemm(w.qa, la, w.qb, lb, m, n, w.k, lab_nvfp4_alpha(w.global_a, w.global_b), out),
                 LAB_OK);
    lab_nvfp4_problem p = problem_of(&w);
    lab_nvfp4_diagnosis d;
    cr_assert_eq(lab_nvfp4_name_fault(&p, out, &d), LAB_OK);
    cr_expect_eq(d.fault, LAB_NVFP4_FAULT_UNKNOWN, "%s", d.text);
    cr_expect(strncmp(d.text, "no known fault", 14) == 0, "%s", d.text);
    cr_expect_lt(d.runner_up_cosine, LAB_NVFP4_NAMER_MATCH);
    /* An infinite output is never explained either. */
    out[0] = INFINITY;
    cr_assert_eq(lab_nvfp4_name_fault(&p, out, &d), LAB_OK);
    cr_expect_eq(d.fault, LAB_NVFP4_FAULT_UNKNOWN, "%s", d.text);
    free(la), free(lb), free(shifted), free(out);
    nv_work_free(&w);
}

/* ---- the GEMM reads the padding's scales ----------------------------------------------------------- */

/* The tensor cores run K in tiles of 64 (4 scales): for K = 32 the blocks 2 and 3 hold zero data, and their scales
 * come from the padding. 0 * a finite stale scale is 0 (harmless); 0 * a NaN code is NaN. */
Test(nvfp4_gemm_padding, k_padding_scale_nan_poisons_the_row)
{
    nv_work w;
    nv_work_init(&w, 1, 32, 32, 2, 0x45); /* (1, 32, 32): K_sf = 2, padded to 4; stale bytes a finite E4M3 scale */
    float *fix = gemm_of(&w, LAB_NVFP4_REMAP_FIX), *size = gemm_of(&w, LAB_NVFP4_REMAP_SIZE_NOT_COSIZE);
    cr_expect(memcmp(fix, size, 32 * sizeof(float)) == 0, "finite stale padding: same bits as the fix");
    w.stale_b[lab_nvfp4_sf_offset(5, 3, 2)] = 0xFF; /* row 5 of B, padding column 3 */
    free(size);
    size = gemm_of(&w, LAB_NVFP4_REMAP_SIZE_NOT_COSIZE);
    for (int j = 0; j < 32; ++j)
        if (j == 5) cr_expect(isnan(size[j]));
        else cr_expect_eq(size[j], fix[j], "column %d", j);
    w.stale_b[lab_nvfp4_sf_offset(100, 3, 2)] = 0xFF; /* a padding row (>= N): never read into an output */
    free(size);
    size = gemm_of(&w, LAB_NVFP4_REMAP_SIZE_NOT_COSIZE);
    cr_expect_eq(lab_metric_census_f32(size, 32).nan, 1);
    free(fix), free(size);
    nv_work_free(&w);
}

/* ---- the float64 reference on the device ------------------------------------------------------------ */

/* The check the CUDA replay applies at its cross-check seeds: equal references agree exactly, a difference within
 * rounding passes, one of twice the bound does not, and a non-finite value is never agreement. */
Test(nvfp4_ref, disagreement_is_measured_against_the_rounding_bound)
{
    double ref[3] = {1.0, -2.0, 0.5}, abs[3] = {3.0, 4.0, 0.5}, ref2[3], abs2[3];
    memcpy(ref2, ref, sizeof ref), memcpy(abs2, abs, sizeof abs);
    cr_expect_eq(lab_nvfp4_ref_disagreement(ref, abs, ref2, abs2, 3, 592), 0.0);
    double u = ldexp(1.0, -53), bound = 2.0 * 594.0 * u / (1.0 - 594.0 * u) * abs[1];
    ref2[1] = ref[1] + 0.5 * bound;
    double x = lab_nvfp4_ref_disagreement(ref, abs, ref2, abs2, 3, 592);
    cr_expect(x > 0.4 && x < 0.6, "half the bound read as %.3g", x);
    ref2[1] = ref[1] + 2.0 * bound;
    cr_expect_gt(lab_nvfp4_ref_disagreement(ref, abs, ref2, abs2, 3, 592), 1.0);
    ref2[1] = ref[1], abs2[2] = abs[2] * (1.0 + 1e-9); /* the abs sums are checked too */
    cr_expect_gt(lab_nvfp4_ref_disagreement(ref, abs, ref2, abs2, 3, 592), 1.0);
    abs2[2] = abs[2], ref2[0] = NAN;
    cr_expect(isnan(lab_nvfp4_ref_disagreement(ref, abs, ref2, abs2, 3, 592)));
}

#ifdef LAB_HAVE_CUDA
#include "lab_cuda.h"
/* The device reference (what the CUDA replay judges 0003 against) agrees with the CPU reference within rounding on
 * the tests' own workloads (ragged, k = 7168 and one row), and gives the same bits twice. */
Test(nvfp4_ref, device_reference_agrees_with_the_cpu_reference, .timeout = 60)
{
    char why[240];
    lab_status st = lab_cuda_ready(why, sizeof why);
    if (st == LAB_ERR_UNSUPPORTED) cr_skip_test("needs a CUDA GPU: %s", why);
    cr_assert_eq(st, LAB_OK, "%s", why);
    static const size_t shapes[3][3] = {{200, 96, 592}, {128, 64, 7168}, {1, 32, 32}};
    nv_work w[3];
    lab_nvfp4_ref_job jobs[3];
    double *cref[3], *cabs[3], *again[3];
    for (int i = 0; i < 3; ++i) {
        nv_work_init(&w[i], shapes[i][0], shapes[i][1], shapes[i][2], 11 + (uint64_t)i, 0);
        size_t mn = w[i].m * w[i].n;
        cref[i] = malloc(mn * sizeof(double)), cabs[i] = malloc(mn * sizeof(double)), again[i] = malloc(mn * sizeof(double));
        jobs[i] = (lab_nvfp4_ref_job){w[i].qa, w[i].sfa, w[i].qb, w[i].sfb, w[i].global_a, w[i].global_b, w[i].m, w[i].n,
                                      w[i].k, malloc(mn * sizeof(double)), malloc(mn * sizeof(double))};
        cr_assert(cref[i] && cabs[i] && again[i] && jobs[i].ref && jobs[i].abs);
        cr_assert_eq(lab_nvfp4_gemm_ref(w[i].qa, w[i].sfa, w[i].global_a, w[i].qb, w[i].sfb, w[i].global_b, w[i].m, w[i].n,
                                        w[i].k, cref[i], cabs[i]), LAB_OK, "%s", lab_err_msg());
    }
    cr_assert_eq(lab_nvfp4_gemm_ref_cuda(jobs, 3), LAB_OK, "%s", lab_err_msg());
    for (int i = 0; i < 3; ++i) {
        size_t mn = w[i].m * w[i].n;
        double x = lab_nvfp4_ref_disagreement(cref[i], cabs[i], jobs[i].ref, jobs[i].abs, mn, w[i].k);
        cr_expect_leq(x, 1.0, "shape %zu x %zu x %zu: device reference %.3g of the rounding bound from the CPU's", w[i].m,
                      w[i].n, w[i].k, x);
        memcpy(again[i], jobs[i].ref, mn * sizeof(double));
    }
    cr_assert_eq(lab_nvfp4_gemm_ref_cuda(jobs, 3), LAB_OK, "%s", lab_err_msg());
    for (int i = 0; i < 3; ++i) {
        cr_expect_eq(memcmp(again[i], jobs[i].ref, w[i].m * w[i].n * sizeof(double)), 0, "shape %d: bits differ between runs", i);
        free(cref[i]), free(cabs[i]), free(again[i]), free(jobs[i].ref), free(jobs[i].abs);
        nv_work_free(&w[i]);
    }
    lab_nvfp4_ref_job bad = jobs[0];
    bad.k = 600; /* not a multiple of 16 */
    cr_expect_eq(lab_nvfp4_gemm_ref_cuda(&bad, 1), LAB_ERR_ARG);
}
/* The namer's GEMM on the GPU (what a CUDA replay uses) gives the CPU GEMM's bits, so the same diagnosis: each
 * injected fault of the namer test, named the same through both. */
Test(nvfp4_namer, the_gpu_gemm_names_what_the_cpu_gemm_names, .timeout = 60)
{
    char why[240];
    lab_status st = lab_cuda_ready(why, sizeof why);
    if (st == LAB_ERR_UNSUPPORTED) cr_skip_test("needs a CUDA GPU: %s", why);
    cr_assert_eq(st, LAB_OK, "%s", why);
    nv_work w;
    nv_work_init(&w, 200, 96, 592, 4, 0x22);
    lab_nvfp4_problem p = problem_of(&w);
    const lab_nvfp4_remap_kind kinds[3] = {LAB_NVFP4_REMAP_FIX, LAB_NVFP4_REMAP_MK_SWAP, LAB_NVFP4_REMAP_SIZE_NOT_COSIZE};
    for (int i = 0; i < 3; ++i) {
        float *out = gemm_of(&w, kinds[i]);
        uint8_t *la = malloc(w.cosize_a), *lb = malloc(w.cosize_b);
        float *gpu = malloc(w.m * w.n * sizeof *gpu);
        cr_assert(la && lb && gpu);
        memcpy(la, w.stale_a, w.cosize_a), memcpy(lb, w.stale_b, w.cosize_b);
        cr_assert_eq(lab_nvfp4_sf_remap(w.sfa, w.m, w.k_sf, la, w.cosize_a, kinds[i]), LAB_OK);
        cr_assert_eq(lab_nvfp4_sf_remap(w.sfb, w.n, w.k_sf, lb, w.cosize_b, kinds[i]), LAB_OK);
        cr_assert_eq(lab_nvfp4_cuda_gemm_host(w.qa, la, w.qb, lb, w.m, w.n, w.k, lab_nvfp4_alpha(w.global_a, w.global_b), gpu),
                     LAB_OK, "%s", lab_err_msg());
        size_t differ = 0;
        for (size_t j = 0; j < w.m * w.n; ++j) differ += isnan(out[j]) ? !isnan(gpu[j]) : memcmp(&out[j], &gpu[j], 4) != 0;
        cr_expect_eq(differ, 0u, "kind %d: %zu outputs differ from the CPU GEMM", i, differ);
        lab_nvfp4_diagnosis dc, dg;
        cr_assert_eq(lab_nvfp4_name_fault(&p, out, &dc), LAB_OK, "%s", lab_err_msg());
        cr_assert_eq(lab_nvfp4_name_fault_with(&p, out, lab_nvfp4_cuda_gemm_host, &dg), LAB_OK, "%s", lab_err_msg());
        cr_expect_eq(dg.fault, dc.fault, "kind %d: GPU names %s, CPU %s", i, lab_nvfp4_fault_name(dg.fault), lab_nvfp4_fault_name(dc.fault));
        free(out), free(la), free(lb), free(gpu);
    }
    nv_work_free(&w);
}
#else
Test(nvfp4_ref, device_reference_agrees_with_the_cpu_reference)
{
    cr_skip_test("this build has no CUDA (nvcc missing or CUDA=0)");
}
#endif
