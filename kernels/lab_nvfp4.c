/* lab_nvfp4: NVFP4 quantization along K, the 128x4 block-scale-factor layout and its remap, a block-scaled GEMM (CPU), its float64 reference and a namer of layout faults. */
#include "lab_nvfp4.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_format.h"
#include "lab_metric.h"

size_t lab_nvfp4_sf_cosize(size_t rows, size_t k_sf)
{
    if (rows == 0 || k_sf == 0) return 0;
    return ((rows + 127) / 128) * 128 * ((k_sf + 3) / 4) * 4;
}

const char *lab_nvfp4_remap_name(lab_nvfp4_remap_kind kind)
{
    switch (kind) {
    case LAB_NVFP4_REMAP_FIX: return "fix";
    case LAB_NVFP4_REMAP_SIZE_NOT_COSIZE: return "size-not-cosize";
    case LAB_NVFP4_REMAP_MK_SWAP: return "mk-swap";
    case LAB_NVFP4_REMAP_TILE_SWAP: return "tile-swap";
    case LAB_NVFP4_REMAP_MK_COORD: return "mk-coord";
    default: return "?";
    }
}

/* The flat shape and stride of CuTe's layout (the header's comment). */
static void nv_cute_shape(size_t rows, size_t k_sf, size_t shape[LAB_NVFP4_CUTE_MODES], size_t stride[LAB_NVFP4_CUTE_MODES])
{
    size_t mt = (rows + 127) / 128, kt = (k_sf + 3) / 4;
    const size_t sh[LAB_NVFP4_CUTE_MODES] = {32, 4, mt, 16, 4, kt};
    const size_t st[LAB_NVFP4_CUTE_MODES] = {16, 4, 512 * kt, 0, 1, 512};
    memcpy(shape, sh, sizeof sh);
    memcpy(stride, st, sizeof st);
}

size_t lab_nvfp4_sf_cute_offset(const size_t c[LAB_NVFP4_CUTE_MODES], size_t rows, size_t k_sf)
{
    size_t shape[LAB_NVFP4_CUTE_MODES], stride[LAB_NVFP4_CUTE_MODES], o = 0;
    nv_cute_shape(rows, k_sf, shape, stride);
    for (int i = 0; i < LAB_NVFP4_CUTE_MODES; ++i) o += c[i] * stride[i];
    return o;
}

void lab_nvfp4_sf_cute_coord(size_t o, size_t rows, size_t k_sf, size_t c[LAB_NVFP4_CUTE_MODES])
{
    size_t shape[LAB_NVFP4_CUTE_MODES], stride[LAB_NVFP4_CUTE_MODES];
    nv_cute_shape(rows, k_sf, shape, stride);
    for (int i = 0; i < LAB_NVFP4_CUTE_MODES; ++i) c[i] = stride[i] ? (o / stride[i]) % shape[i] : 0;
}

void lab_nvfp4_sf_extract_mfirst(const size_t c[LAB_NVFP4_CUTE_MODES], size_t *m, size_t *k)
{
    *m = c[0] + c[1] * 32 + c[2] * 128;
    *k = c[4] + c[5] * 4;
}

void lab_nvfp4_sf_extract_kfirst(const size_t c[LAB_NVFP4_CUTE_MODES], size_t *m, size_t *k)
{
    *k = c[0] + c[1] * 32 + c[2] * 128;
    *m = c[3] + c[4] * LAB_NVFP4_BLOCK + c[5] * (LAB_NVFP4_BLOCK * 4);
}

/* Shape checks shared by the entry points: rows, cols > 0 and rows * cols * extra representable. */
static int nv_shape_ok(size_t rows, size_t cols, size_t extra)
{
    if (rows == 0 || cols == 0 || extra == 0) return 0;
    if (rows > ((size_t)1 << 31) || cols > ((size_t)1 << 31)) return 0;
    return rows <= ((size_t)-1) / cols / extra;
}

lab_status lab_nvfp4_sf_remap(const uint8_t *src, size_t rows, size_t k_sf, uint8_t *dst, size_t dst_len,
                              lab_nvfp4_remap_kind kind)
{
    if (!src || !dst) return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_sf_remap: NULL buffer");
    if (!nv_shape_ok(rows, k_sf, 512))
        return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_sf_remap: bad scale shape (%zu, %zu)", rows, k_sf);
    if ((unsigned)kind >= LAB_NVFP4_REMAP_CPU_COUNT)
        return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_sf_remap: unknown remap kind %d", (int)kind);
    size_t cosize = lab_nvfp4_sf_cosize(rows, k_sf);
    if (dst_len < cosize)
        return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_sf_remap: dst holds %zu bytes, the layout of (%zu, %zu) needs %zu",
                           dst_len, rows, k_sf, cosize);
    if (kind == LAB_NVFP4_REMAP_SIZE_NOT_COSIZE) {
        /* As it was: the loop runs to the layout's logical size, one pass over the logical entries; each is
         * scattered to its offset. Every real scale lands, the padding bytes are never visited. */
        size_t size = rows * k_sf;
        for (size_t i = 0; i < size; ++i) {
            size_t m = i / k_sf, k = i % k_sf;
            dst[lab_nvfp4_sf_offset(m, k, k_sf)] = src[i];
        }
        return LAB_OK;
    }
    if (kind == LAB_NVFP4_REMAP_MK_COORD) {
        /* The write-up's remap as its "fix" wrote it: every physical byte, CuTe's flat coordinate of it, (m, k_sf)
         * extracted with K taken from modes 0..2 and M from modes 3..5, and the kernel's own guard on what it
         * extracted (a padding position's coordinate is out of range, so the guard is what keeps the correct
         * remap in bounds too): in range, src[m*k_sf + k]; out of range, E4M3 +0. Every read lies inside src. */
        for (size_t o = 0; o < cosize; ++o) {
            size_t c[LAB_NVFP4_CUTE_MODES], m, k;
            lab_nvfp4_sf_cute_coord(o, rows, k_sf, c);
            lab_nvfp4_sf_extract_kfirst(c, &m, &k);
            dst[o] = m < rows && k < k_sf ? src[m * k_sf + k] : 0;
        }
        return LAB_OK;
    }
    /* One pass over every physical byte (cosize): the coordinate (m, k) is extracted from the byte offset,
     * real coordinates take their scale, padding coordinates take E4M3 +0. */
    size_t k_tiles = (k_sf + 3) / 4, m_tiles = (rows + 127) / 128;
    for (size_t o = 0; o < cosize; ++o) {
        size_t tile = o / 512, r = o % 512;
        size_t m32 = r / 16, m4 = (r / 4) % 4, k4 = r % 4;
        size_t mt, kt;
        if (kind == LAB_NVFP4_REMAP_TILE_SWAP) {
            kt = tile / m_tiles;
            mt = tile % m_tiles;
        } else {
            mt = tile / k_tiles;
            kt = tile % k_tiles;
        }
        size_t m = mt * 128 + m4 * 32 + m32, k = kt * 4 + k4;
        uint8_t v = 0;
        if (m < rows && k < k_sf) v = kind == LAB_NVFP4_REMAP_MK_SWAP ? src[k * rows + m] : src[m * k_sf + k];
        dst[o] = v;
    }
    return LAB_OK;
}

lab_status lab_nvfp4_quantize(const float *x, size_t rows, size_t k, uint8_t *q, uint8_t *sf, float *global)
{
    if (!x || !q || !sf || !global) return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_quantize: NULL buffer");
    if (!nv_shape_ok(rows, k, 1) || k % LAB_NVFP4_BLOCK != 0)
        return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_quantize: shape (%zu, %zu): k must be a positive multiple of %d",
                           rows, k, LAB_NVFP4_BLOCK);
    size_t n = rows * k;
    float amax = 0.0f;
    for (size_t i = 0; i < n; ++i) {
        if (!isfinite(x[i])) return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_quantize: input %zu is not finite", i);
        float a = fabsf(x[i]);
        if (a > amax) amax = a;
    }
    if (amax == 0.0f) return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_quantize: all-zero input has no global scale");
    float g = (LAB_NVFP4_E4M3_MAX * LAB_NVFP4_E2M1_MAX) / amax;
    *global = g;
    size_t k_sf = k / LAB_NVFP4_BLOCK;
    memset(q, 0, n / 2);
    for (size_t r = 0; r < rows; ++r)
        for (size_t b = 0; b < k_sf; ++b) {
            const float *xb = x + r * k + b * LAB_NVFP4_BLOCK;
            float bmax = 0.0f;
            for (int e = 0; e < LAB_NVFP4_BLOCK; ++e)
                if (fabsf(xb[e]) > bmax) bmax = fabsf(xb[e]);
            uint8_t s = lab_e4m3_from_float((g * bmax) / LAB_NVFP4_E2M1_MAX);
            sf[r * k_sf + b] = s;
            float sv = lab_e4m3_to_float(s);
            for (int e = 0; e < LAB_NVFP4_BLOCK; ++e) {
                size_t i = r * k + b * LAB_NVFP4_BLOCK + (size_t)e;
                uint8_t c = sv > 0.0f ? lab_e2m1_from_float((xb[e] * g) / sv) : 0u;
                q[i >> 1] |= (uint8_t)((c & 0xFu) << ((i & 1u) * 4u));
            }
        }
    return LAB_OK;
}

lab_status lab_nvfp4_dequantize(const uint8_t *q, const uint8_t *sf, size_t rows, size_t k, float global, float *x)
{
    if (!x || !q || !sf) return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_dequantize: NULL buffer");
    if (!nv_shape_ok(rows, k, 1) || k % LAB_NVFP4_BLOCK != 0)
        return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_dequantize: shape (%zu, %zu): k must be a positive multiple of %d",
                           rows, k, LAB_NVFP4_BLOCK);
    if (!(global > 0.0f) || !isfinite(global))
        return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_dequantize: global scale %g is not finite and positive", global);
    size_t k_sf = k / LAB_NVFP4_BLOCK;
    for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < k; ++c) {
            size_t i = r * k + c;
            float v = lab_e2m1_to_float(lab_e2m1_get(q, i)) * lab_e4m3_to_float(sf[r * k_sf + c / LAB_NVFP4_BLOCK]);
            x[i] = v / global;
        }
    return LAB_OK;
}

float lab_nvfp4_alpha(float global_a, float global_b)
{
    float p = global_a * global_b;
    return 1.0f / p;
}

/* Twice the E2M1 value of each code: integers {0, 1, 2, 3, 4, 6, 8, 12} with the sign, so that a block's dot
 * product is an exact integer (4x the E2M1 dot). */
static const int8_t nv_e2m1_x2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* Decodes packed E2M1 rows (rows x k) into twice-values, padded with zeros to kp columns. */
static void nv_unpack_x2(const uint8_t *q, size_t rows, size_t k, size_t kp, int8_t *out)
{
    for (size_t r = 0; r < rows; ++r) {
        int8_t *o = out + r * kp;
        for (size_t c = 0; c < k; ++c) o[c] = nv_e2m1_x2[lab_e2m1_get(q, r * k + c)];
        for (size_t c = k; c < kp; ++c) o[c] = 0;
    }
}

/* Scales of rows x kb blocks read through the layout of k_sf scale columns, as float32 (NaN codes give NaN). */
static void nv_scales_from_layout(const uint8_t *layout, size_t rows, size_t k_sf, size_t kb, float *out)
{
    for (size_t r = 0; r < rows; ++r)
        for (size_t b = 0; b < kb; ++b) out[r * kb + b] = lab_e4m3_to_float(layout[lab_nvfp4_sf_offset(r, b, k_sf)]);
}

lab_status lab_nvfp4_gemm(const uint8_t *qa, const uint8_t *sfa_layout, const uint8_t *qb, const uint8_t *sfb_layout,
                          size_t m, size_t n, size_t k, float alpha, float *out)
{
    if (!qa || !sfa_layout || !qb || !sfb_layout || !out) return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_gemm: NULL buffer");
    if (!nv_shape_ok(m, k, 1) || !nv_shape_ok(n, k, 1) || !nv_shape_ok(m, n, 1) || k % LAB_NVFP4_BLOCK != 0)
        return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_gemm: shape (%zu, %zu, %zu): k must be a positive multiple of %d",
                           m, n, k, LAB_NVFP4_BLOCK);
    size_t k_sf = k / LAB_NVFP4_BLOCK, kb = (k_sf + 3) / 4 * 4, kp = kb * LAB_NVFP4_BLOCK;
    int8_t *a = malloc(m * kp), *b = malloc(n * kp);
    float *sa = malloc(m * kb * sizeof *sa), *sb = malloc(n * kb * sizeof *sb);
    if (!a || !b || !sa || !sb) {
        free(a), free(b), free(sa), free(sb);
        return lab_err_set(LAB_ERR_NOMEM, "lab_nvfp4_gemm: out of memory for (%zu, %zu, %zu)", m, n, k);
    }
    nv_unpack_x2(qa, m, k, kp, a);
    nv_unpack_x2(qb, n, k, kp, b);
    nv_scales_from_layout(sfa_layout, m, k_sf, kb, sa);
    nv_scales_from_layout(sfb_layout, n, k_sf, kb, sb);
    for (size_t i = 0; i < m; ++i)
        for (size_t j = 0; j < n; ++j) {
            const int8_t *ai = a + i * kp, *bj = b + j * kp;
            float acc = 0.0f;
            for (size_t blk = 0; blk < kb; ++blk) {
                int dot = 0;
                for (int e = 0; e < LAB_NVFP4_BLOCK; ++e) dot += ai[blk * 16 + e] * bj[blk * 16 + e];
                float s = (float)dot * 0.25f;               /* exact: |dot| <= 16 * 144 */
                float t = s * (sa[i * kb + blk] * sb[j * kb + blk]); /* exact: 8 + 12 significant bits */
                acc = acc + t;
            }
            out[i * n + j] = alpha * acc;
        }
    free(a), free(b), free(sa), free(sb);
    return LAB_OK;
}

lab_status lab_nvfp4_gemm_ref(const uint8_t *qa, const uint8_t *sfa, float global_a, const uint8_t *qb,
                              const uint8_t *sfb, float global_b, size_t m, size_t n, size_t k, double *ref,
                              double *abs)
{
    if (!qa || !sfa || !qb || !sfb || !ref) return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_gemm_ref: NULL buffer");
    if (!nv_shape_ok(m, k, 1) || !nv_shape_ok(n, k, 1) || !nv_shape_ok(m, n, 1) || k % LAB_NVFP4_BLOCK != 0)
        return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_gemm_ref: shape (%zu, %zu, %zu): k must be a positive multiple of %d",
                           m, n, k, LAB_NVFP4_BLOCK);
    double *a = malloc(m * k * sizeof *a), *b = malloc(n * k * sizeof *b);
    if (!a || !b) {
        free(a), free(b);
        return lab_err_set(LAB_ERR_NOMEM, "lab_nvfp4_gemm_ref: out of memory for (%zu, %zu, %zu)", m, n, k);
    }
    size_t k_sf = k / LAB_NVFP4_BLOCK;
    /* Dequantized operands in double from the row-major scales: e2m1 * e4m3 / global. */
    for (size_t i = 0; i < m * k; ++i)
        a[i] = (double)lab_e2m1_to_float(lab_e2m1_get(qa, i)) *
               (double)lab_e4m3_to_float(sfa[(i / k) * k_sf + (i % k) / LAB_NVFP4_BLOCK]) / (double)global_a;
    for (size_t i = 0; i < n * k; ++i)
        b[i] = (double)lab_e2m1_to_float(lab_e2m1_get(qb, i)) *
               (double)lab_e4m3_to_float(sfb[(i / k) * k_sf + (i % k) / LAB_NVFP4_BLOCK]) / (double)global_b;
    for (size_t i = 0; i < m; ++i)
        for (size_t j = 0; j < n; ++j) {
            const double *ai = a + i * k, *bj = b + j * k;
            /* Four partial sums: the double reference's own rounding (about k * 2^-53) is far below float32's. */
            double s0 = 0, s1 = 0, s2 = 0, s3 = 0, t0 = 0, t1 = 0, t2 = 0, t3 = 0;
            for (size_t c = 0; c < k; c += 4) {
                double p0 = ai[c] * bj[c], p1 = ai[c + 1] * bj[c + 1], p2 = ai[c + 2] * bj[c + 2],
                       p3 = ai[c + 3] * bj[c + 3];
                s0 += p0, s1 += p1, s2 += p2, s3 += p3;
                t0 += fabs(p0), t1 += fabs(p1), t2 += fabs(p2), t3 += fabs(p3);
            }
            ref[i * n + j] = (s0 + s1) + (s2 + s3);
            if (abs) abs[i * n + j] = (t0 + t1) + (t2 + t3);
        }
    free(a), free(b);
    return LAB_OK;
}

double lab_nvfp4_ref_disagreement(const double *ref, const double *abs, const double *ref2, const double *abs2, size_t mn,
                                  size_t k)
{
    double u = ldexp(1.0, -53), g = 2.0 * (double)(k + 2) * u / (1.0 - (double)(k + 2) * u), worst = 0.0;
    for (size_t i = 0; i < mn; ++i) {
        double d = fmax(fabs(ref2[i] - ref[i]), fabs(abs2[i] - abs[i])), x;
        if (!isfinite(ref[i]) || !isfinite(ref2[i]) || !isfinite(abs[i]) || !isfinite(abs2[i])) return NAN;
        if (d == 0.0) continue;
        if (abs[i] == 0.0) return NAN;
        x = d / (g * abs[i]);
        worst = x > worst ? x : worst;
    }
    return worst;
}

double lab_nvfp4_gemm_gamma(size_t k)
{
    double nu = (double)(k / LAB_NVFP4_BLOCK + 4) * (1.0 / 16777216.0);
    return nu / (1.0 - nu);
}

/* ---------------------------------------------------------------------------------------------- */
/* Fault namer                                                                                     */

const char *lab_nvfp4_fault_name(lab_nvfp4_fault f)
{
    switch (f) {
    case LAB_NVFP4_FAULT_NONE: return "the correct layout";
    case LAB_NVFP4_FAULT_MK_SWAP: return "the M/K-swapped layout";
    case LAB_NVFP4_FAULT_TILE_SWAP: return "the layout with its tile order swapped";
    case LAB_NVFP4_FAULT_PADDING: return "the layout with its padding unwritten";
    case LAB_NVFP4_FAULT_NIBBLE: return "one operand with its nibble order swapped";
    case LAB_NVFP4_FAULT_UNKNOWN: return "no known fault";
    default: return "?";
    }
}

/* Swaps the two nibbles of every byte: the odd element in the low nibble. */
static void nv_swap_nibbles(const uint8_t *q, size_t len, uint8_t *out)
{
    for (size_t i = 0; i < len; ++i) out[i] = (uint8_t)((q[i] >> 4) | (q[i] << 4));
}

/* Cosine of observed and candidate over all entries: NaN if any entry of either is not finite. */
static double nv_cosine_all(const float *obs, const float *cand, size_t n, double *tmp)
{
    for (size_t i = 0; i < n; ++i) tmp[i] = (double)cand[i];
    return lab_metric_cosine(obs, tmp, n);
}

/* Padding explanation: observed equals the correct output except for NaN in whole rows and whole columns.
 * Returns the cosine over the finite entries (1 when every entry is NaN), or NaN when the NaN set is not a
 * union of rows and columns, when nothing is NaN, or when an entry is infinite. */
static double nv_padding_match(const float *obs, const float *correct, size_t m, size_t n)
{
    unsigned char *row_nan = calloc(m, 1), *col_nan = calloc(n, 1);
    if (!row_nan || !col_nan) {
        free(row_nan), free(col_nan);
        return NAN;
    }
    size_t nan_count = 0;
    for (size_t i = 0; i < m * n; ++i) {
        if (isinf(obs[i])) goto mismatch;
        nan_count += isnan(obs[i]) != 0;
    }
    if (nan_count == 0) goto mismatch;
    for (size_t i = 0; i < m; ++i) {
        size_t c = 0;
        for (size_t j = 0; j < n; ++j) c += isnan(obs[i * n + j]) != 0;
        row_nan[i] = c == n;
    }
    for (size_t j = 0; j < n; ++j) {
        size_t c = 0;
        for (size_t i = 0; i < m; ++i) c += isnan(obs[i * n + j]) != 0;
        col_nan[j] = c == m;
    }
    double dot = 0, na = 0, nb = 0;
    for (size_t i = 0; i < m; ++i)
        for (size_t j = 0; j < n; ++j) {
            int want = row_nan[i] || col_nan[j];
            float o = obs[i * n + j];
            if (want != (isnan(o) != 0)) goto mismatch;
            if (want) continue;
            if (!isfinite(correct[i * n + j])) goto mismatch;
            dot += (double)o * correct[i * n + j];
            na += (double)o * o;
            nb += (double)correct[i * n + j] * correct[i * n + j];
        }
    free(row_nan), free(col_nan);
    if (na == 0.0 && nb == 0.0) return 1.0; /* all NaN, or all zero on both sides */
    if (na == 0.0 || nb == 0.0) return 0.0;
    return dot / (sqrt(na) * sqrt(nb));
mismatch:
    free(row_nan), free(col_nan);
    return NAN;
}

lab_status lab_nvfp4_name_fault(const lab_nvfp4_problem *p, const float *observed, lab_nvfp4_diagnosis *d)
{
    return lab_nvfp4_name_fault_with(p, observed, lab_nvfp4_gemm, d);
}

lab_status lab_nvfp4_name_fault_with(const lab_nvfp4_problem *p, const float *observed, lab_nvfp4_gemm_fn gemm,
                                     lab_nvfp4_diagnosis *d)
{
    if (!p || !observed || !d || !gemm || !p->qa || !p->qb || !p->sfa || !p->sfb)
        return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_name_fault: NULL argument");
    size_t m = p->m, n = p->n, k = p->k;
    if (!nv_shape_ok(m, k, 1) || !nv_shape_ok(n, k, 1) || !nv_shape_ok(m, n, 1) || k % LAB_NVFP4_BLOCK != 0)
        return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_name_fault: shape (%zu, %zu, %zu): k must be a positive multiple of %d",
                           m, n, k, LAB_NVFP4_BLOCK);
    memset(d, 0, sizeof *d);
    size_t k_sf = k / LAB_NVFP4_BLOCK, mn = m * n;
    size_t ca = lab_nvfp4_sf_cosize(m, k_sf), cb = lab_nvfp4_sf_cosize(n, k_sf);
    uint8_t *la = malloc(ca), *lb = malloc(cb), *fa = malloc(ca), *fb = malloc(cb);
    uint8_t *swq = malloc(m * k / 2);
    float *correct = malloc(mn * sizeof *correct), *cand = malloc(mn * sizeof *cand);
    double *tmp = malloc(mn * sizeof *tmp);
    lab_status st = LAB_OK;
    if (!la || !lb || !fa || !fb || !swq || !correct || !cand || !tmp) {
        st = lab_err_set(LAB_ERR_NOMEM, "lab_nvfp4_name_fault: out of memory for (%zu, %zu, %zu)", m, n, k);
        goto done;
    }
    float alpha = lab_nvfp4_alpha(p->global_a, p->global_b);
    /* The correct layouts, and the correct output. */
    if ((st = lab_nvfp4_sf_remap(p->sfa, m, k_sf, la, ca, LAB_NVFP4_REMAP_FIX)) != LAB_OK) goto done;
    if ((st = lab_nvfp4_sf_remap(p->sfb, n, k_sf, lb, cb, LAB_NVFP4_REMAP_FIX)) != LAB_OK) goto done;
    if ((st = gemm(p->qa, la, p->qb, lb, m, n, k, alpha, correct)) != LAB_OK) goto done;

    for (int f = 0; f < LAB_NVFP4_FAULT_UNKNOWN; ++f) {
        double cs = NAN;
        switch ((lab_nvfp4_fault)f) {
        case LAB_NVFP4_FAULT_NONE:
            cs = nv_cosine_all(observed, correct, mn, tmp);
            break;
        case LAB_NVFP4_FAULT_MK_SWAP:
        case LAB_NVFP4_FAULT_TILE_SWAP: {
            lab_nvfp4_remap_kind kind = f == LAB_NVFP4_FAULT_MK_SWAP ? LAB_NVFP4_REMAP_MK_SWAP : LAB_NVFP4_REMAP_TILE_SWAP;
            if ((st = lab_nvfp4_sf_remap(p->sfa, m, k_sf, fa, ca, kind)) != LAB_OK) goto done;
            if ((st = lab_nvfp4_sf_remap(p->sfb, n, k_sf, fb, cb, kind)) != LAB_OK) goto done;
            if ((st = gemm(p->qa, fa, p->qb, fb, m, n, k, alpha, cand)) != LAB_OK) goto done;
            cs = nv_cosine_all(observed, cand, mn, tmp);
            break;
        }
        case LAB_NVFP4_FAULT_PADDING:
            /* Only a layout with padding columns that the GEMM reads can show it. */
            if (k_sf % 4 != 0) cs = nv_padding_match(observed, correct, m, n);
            break;
        case LAB_NVFP4_FAULT_NIBBLE:
            /* Swapped in A; swapped in B gives the very same output (see the header). */
            nv_swap_nibbles(p->qa, m * k / 2, swq);
            if ((st = gemm(swq, la, p->qb, lb, m, n, k, alpha, cand)) != LAB_OK) goto done;
            cs = nv_cosine_all(observed, cand, mn, tmp);
            break;
        default:
            break;
        }
        d->cosine_of[f] = cs;
    }
    /* Best and runner-up by cosine (NaN never wins). Ties keep the earlier candidate (NONE first: a candidate
     * that changes nothing on this problem does not claim the output). */
    d->fault = LAB_NVFP4_FAULT_UNKNOWN;
    d->runner_up = LAB_NVFP4_FAULT_UNKNOWN;
    d->cosine = NAN;
    d->runner_up_cosine = NAN;
    for (int f = 0; f < LAB_NVFP4_FAULT_UNKNOWN; ++f) {
        double cs = d->cosine_of[f];
        if (isnan(cs)) continue;
        if (isnan(d->cosine) || cs > d->cosine) {
            d->runner_up = d->fault, d->runner_up_cosine = d->cosine;
            d->fault = (lab_nvfp4_fault)f, d->cosine = cs;
        } else if (isnan(d->runner_up_cosine) || cs > d->runner_up_cosine) {
            d->runner_up = (lab_nvfp4_fault)f, d->runner_up_cosine = cs;
        }
    }
    if (isnan(d->cosine) || d->cosine < LAB_NVFP4_NAMER_MATCH) {
        lab_nvfp4_fault best = d->fault;
        double bc = d->cosine;
        d->runner_up = best, d->runner_up_cosine = bc;
        d->fault = LAB_NVFP4_FAULT_UNKNOWN;
        if (isnan(bc))
            snprintf(d->text, sizeof d->text, "no known fault explains it (no candidate comparable)");
        else
            snprintf(d->text, sizeof d->text, "no known fault explains it (closest: %s, cosine %.5f)",
                     lab_nvfp4_fault_name(best), bc);
    } else {
        snprintf(d->text, sizeof d->text, "matches %s, cosine %.5f", lab_nvfp4_fault_name(d->fault), d->cosine);
    }
done:
    free(la), free(lb), free(fa), free(fb), free(swq), free(correct), free(cand), free(tmp);
    return st;
}
