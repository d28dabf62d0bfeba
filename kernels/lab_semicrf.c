/* lab_semicrf: the semi-CRF's problems: allocation, the seeded inputs every backend draws alike, the length check (the reference is in lab_semicrf_ref.c, the GPU emulation in lab_semicrf_emu.c, training in lab_semicrf_train.c, the incidents' case part in lab_semicrf_case.c). */
#include "lab_semicrf.h"

#include <stdlib.h>
#include <string.h>

#include "lab_rng.h"

#define SC_PAD LAB_SEMICRF_C_PAD

/* ---------------------------------------------------------------------------------------------- */
/* Problems                                                                                        */

void lab_semicrf_problem_free(lab_semicrf_problem *p)
{
    free(p->len);
    free(p->cum);
    free(p->trans);
    free(p->dur);
    free(p->proj_start);
    free(p->proj_end);
    memset(p, 0, sizeof *p);
}

lab_status lab_semicrf_problem_init(lab_semicrf_problem *p, int B, int T, int K, int C, int use_proj)
{
    memset(p, 0, sizeof *p);
    if (B < 1 || B > 4096) return lab_err_set(LAB_ERR_ARG, "semicrf: B = %d: need 1..4096", B);
    if (T < 1 || T > LAB_SEMICRF_T_MAX) return lab_err_set(LAB_ERR_ARG, "semicrf: T = %d: need 1..%d", T, LAB_SEMICRF_T_MAX);
    if (K < 1 || K > LAB_SEMICRF_K_MAX) return lab_err_set(LAB_ERR_ARG, "semicrf: K = %d: need 1..%d", K, LAB_SEMICRF_K_MAX);
    if (C < 1 || C > SC_PAD) return lab_err_set(LAB_ERR_ARG, "semicrf: C = %d: need 1..%d", C, SC_PAD);
    p->B = B, p->T = T, p->K = K, p->C = C, p->use_proj = use_proj != 0;
    size_t nb = (size_t)B;
    p->len = calloc(nb, sizeof *p->len);
    p->cum = calloc(nb * (size_t)(T + 1) * (size_t)C, sizeof(float));
    p->trans = calloc((size_t)C * (size_t)C, sizeof(float));
    p->dur = calloc((size_t)K * (size_t)C, sizeof(float));
    if (use_proj) {
        p->proj_start = calloc(nb * (size_t)T * (size_t)C, sizeof(float));
        p->proj_end = calloc(nb * (size_t)T * (size_t)C, sizeof(float));
    }
    if (!p->len || !p->cum || !p->trans || !p->dur || (use_proj && (!p->proj_start || !p->proj_end))) {
        lab_semicrf_problem_free(p);
        return lab_err_set(LAB_ERR_NOMEM, "semicrf: out of memory for a problem B=%d T=%d", B, T);
    }
    for (int b = 0; b < B; ++b) p->len[b] = T;
    return LAB_OK;
}

static void sc_fill_scaled(float *x, size_t n, uint64_t seed, uint32_t stream, float scale)
{
    lab_rng_fill_normal(x, n, seed, stream, 0);
    for (size_t i = 0; i < n; ++i) x[i] = x[i] * scale;
}

void lab_semicrf_problem_fill(lab_semicrf_problem *p, uint64_t seed)
{
    int B = p->B, T = p->T, K = p->K, C = p->C;
    size_t row = (size_t)C;
    float *e = malloc((size_t)T * row * sizeof *e);
    for (int b = 0; b < B; ++b) {
        float *cb = p->cum + (size_t)b * (size_t)(T + 1) * row;
        if (e) lab_rng_fill_normal(e, (size_t)T * row, seed, LAB_SEMICRF_STREAM_EMIT, (uint64_t)b * (uint64_t)T * row);
        for (int c = 0; c < C; ++c) {
            double acc = 0.0;
            cb[c] = 0.0f;
            for (int t = 0; t < T; ++t) {
                acc += e ? 0.5 * (double)e[(size_t)t * row + (size_t)c]
                         : 0.5 * (double)lab_rng_normal(seed, LAB_SEMICRF_STREAM_EMIT,
                                                        ((uint64_t)b * (uint64_t)T + (uint64_t)t) * row + (uint64_t)c);
                cb[(size_t)(t + 1) * row + (size_t)c] = (float)acc;
            }
        }
        if (b == 0)
            p->len[b] = T;
        else {
            uint32_t u = lab_rng_u32(seed, LAB_SEMICRF_STREAM_LEN, (uint64_t)b);
            int lo = T / 2 > 0 ? T / 2 : 1;
            p->len[b] = lo + (int)(u % (uint32_t)(T - lo + 1));
        }
    }
    free(e);
    sc_fill_scaled(p->trans, row * row, seed, LAB_SEMICRF_STREAM_TRANS, 0.3f);
    sc_fill_scaled(p->dur, (size_t)K * row, seed, LAB_SEMICRF_STREAM_DUR, 0.3f);
    if (p->use_proj) {
        sc_fill_scaled(p->proj_start, (size_t)B * (size_t)T * row, seed, LAB_SEMICRF_STREAM_PS, 0.1f);
        sc_fill_scaled(p->proj_end, (size_t)B * (size_t)T * row, seed, LAB_SEMICRF_STREAM_PE, 0.1f);
    }
}

lab_status lab_semicrf_problem_check(const lab_semicrf_problem *p)
{
    for (int b = 0; b < p->B; ++b)
        if (p->len[b] < 1 || p->len[b] > p->T)
            return lab_err_set(LAB_ERR_ARG, "semicrf: len[%d] = %d: need 1..T = %d", b, p->len[b], p->T);
    return LAB_OK;
}
