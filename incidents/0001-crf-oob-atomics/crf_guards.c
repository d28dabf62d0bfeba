/* crf_guards: incident 0001's guards-under-stress study: each defensive guard removed in turn, under drifted parameters (the kernel emulation) and on padded lanes (logsumexp and marginal). */
#include "crf_guards.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lab_rng.h"

/* Philox stream of the padded-lane study's inputs. */
#define CRF_GUARDS_STREAM 0x000c0101u
#define CRF_GUARDS_N 4096

const char *crf_guards_name(unsigned flag)
{
    switch (flag) {
    case 0: return "none";
    case LAB_SEMICRF_GUARD_NEGINF: return "neginf";
    case LAB_SEMICRF_GUARD_EPS: return "eps";
    case LAB_SEMICRF_GUARD_CLAMP_IN: return "clamp-in";
    case LAB_SEMICRF_GUARD_CLAMP_LOG: return "clamp-log";
    default: return "?";
    }
}

const char *crf_guards_kind_name(crf_guards_kind k)
{
    switch (k) {
    case CRF_GUARDS_LSE_PADDED: return "lse, 39 real + 25 padding lanes";
    case CRF_GUARDS_LSE_ALL_PAD: return "lse, all 64 lanes NEG_INF";
    case CRF_GUARDS_LSE_ALL_MINUS_INF: return "lse, all lanes -inf";
    case CRF_GUARDS_MARG_PADDED: return "marginal, padding lanes";
    case CRF_GUARDS_MARG_REAL: return "marginal, real lanes, log Z off";
    default: return "?";
    }
}

/* Compares n floats bit for bit and counts the non-finite ones of b. */
static void cg_cmp(const float *a, const float *b, size_t n, crf_guards_row *row)
{
    for (size_t i = 0; i < n; ++i) {
        row->n++;
        row->bits_changed += memcmp(&a[i], &b[i], sizeof(float)) != 0;
        row->nan += isnan(b[i]) != 0;
        row->inf += isinf(b[i]) != 0;
        double d = fabs((double)a[i] - (double)b[i]);
        if (isfinite(a[i]) && isfinite(b[i]) && d > row->max_change) row->max_change = d;
    }
}

lab_status crf_guards_kernel(uint64_t seed, double drift, unsigned removed, crf_guards_row *row)
{
    memset(row, 0, sizeof *row);
    row->removed = removed;
    if (!(drift > 0)) return lab_err_set(LAB_ERR_ARG, "crf_guards_kernel: drift %g must be positive", drift);
    lab_semicrf_problem p;
    lab_semicrf_ref ref;
    lab_semicrf_out all, less;
    lab_status st = lab_semicrf_case_problem(&p, seed);
    if (st != LAB_OK) return st;
    /* Drift: the transitions and duration biases as a long run with too little regularisation leaves them,
     * their largest magnitude `drift` (scaled in float32 from the seed's draws). */
    float mx = 0.0f;
    for (int i = 0; i < p.C * p.C; ++i) mx = fabsf(p.trans[i]) > mx ? fabsf(p.trans[i]) : mx;
    for (int i = 0; i < p.K * p.C; ++i) mx = fabsf(p.dur[i]) > mx ? fabsf(p.dur[i]) : mx;
    float f = (float)drift / mx;
    for (int i = 0; i < p.C * p.C; ++i) p.trans[i] *= f;
    for (int i = 0; i < p.K * p.C; ++i) p.dur[i] *= f;
    if ((st = lab_semicrf_reference(&p, &ref)) != LAB_OK) {
        lab_semicrf_problem_free(&p);
        return st;
    }
    lab_semicrf_config ca = {LAB_SEMICRF_LAYOUT_PADDED, LAB_SEMICRF_ACC_F32_ATOMIC, LAB_SEMICRF_GUARDS_ALL, seed, seed, 0};
    lab_semicrf_config cl = ca;
    cl.guards = LAB_SEMICRF_GUARDS_ALL & ~removed;
    if ((st = lab_semicrf_emulate(&p, &ca, &all)) == LAB_OK) {
        if ((st = lab_semicrf_emulate(&p, &cl, &less)) == LAB_OK) {
            size_t B = (size_t)p.B, T = (size_t)p.T, C = (size_t)p.C, K = (size_t)p.K;
            cg_cmp(all.logZ, less.logZ, B, row);
            cg_cmp(all.g_cum, less.g_cum, B * (T + 1) * C, row);
            cg_cmp(all.g_trans, less.g_trans, C * C, row);
            cg_cmp(all.g_dur, less.g_dur, K * C, row);
            cg_cmp(all.g_ps, less.g_ps, B * T * C, row);
            cg_cmp(all.g_pe, less.g_pe, B * T * C, row);
            lab_semicrf_err e;
            lab_semicrf_compare(&p, &less, &ref, &e);
            row->max_rel_err = e.max;
            lab_semicrf_out_free(&less);
        }
        lab_semicrf_out_free(&all);
    }
    lab_semicrf_ref_free(&ref);
    lab_semicrf_problem_free(&p);
    return st;
}

lab_status crf_guards_padded(crf_guards_kind k, uint64_t seed, double drift, unsigned removed, crf_guards_row *row)
{
    memset(row, 0, sizeof *row);
    row->removed = removed;
    row->max_rel_err = NAN;
    if ((unsigned)k >= CRF_GUARDS_NKIND) return lab_err_set(LAB_ERR_ARG, "crf_guards_padded: unknown kind %d", (int)k);
    unsigned ga = LAB_SEMICRF_GUARDS_ALL, gl = LAB_SEMICRF_GUARDS_ALL & ~removed;
    float x[LAB_SEMICRF_C_PAD];
    for (uint64_t v = 0; v < CRF_GUARDS_N; ++v) {
        uint64_t base = v * 4 * LAB_SEMICRF_C_PAD;
        float a, b;
        switch (k) {
        case CRF_GUARDS_LSE_PADDED:
        case CRF_GUARDS_LSE_ALL_PAD:
        case CRF_GUARDS_LSE_ALL_MINUS_INF:
            for (int i = 0; i < LAB_SEMICRF_C_PAD; ++i) {
                float real = (float)(drift * 10.0) * lab_rng_normal(seed, CRF_GUARDS_STREAM, base + (uint64_t)i);
                x[i] = k == CRF_GUARDS_LSE_ALL_MINUS_INF ? -INFINITY
                       : (k == CRF_GUARDS_LSE_ALL_PAD || i >= LAB_SEMICRF_C) ? LAB_SEMICRF_NEG_INF : real;
            }
            a = lab_semicrf_lse_f32(x, LAB_SEMICRF_C_PAD, ga);
            b = lab_semicrf_lse_f32(x, LAB_SEMICRF_C_PAD, gl);
            break;
        default: {
            /* Scores of a drifted model: alpha and beta partial sums of ~T/2 segments of magnitude up to drift,
             * edges of a few drift; log Z consistent up to an offset. */
            float n0 = lab_rng_normal(seed, CRF_GUARDS_STREAM, base), n1 = lab_rng_normal(seed, CRF_GUARDS_STREAM, base + 1);
            float n2 = lab_rng_normal(seed, CRF_GUARDS_STREAM, base + 2);
            float u = lab_rng_uniform(seed, CRF_GUARDS_STREAM, base + 3);
            float edge = (float)drift * 3.0f * n2;
            float al = k == CRF_GUARDS_MARG_PADDED ? LAB_SEMICRF_NEG_INF : (float)drift * 50.0f * (1.0f + 0.1f * n0);
            float be = k == CRF_GUARDS_MARG_PADDED ? LAB_SEMICRF_NEG_INF : (float)drift * 50.0f * (1.0f + 0.1f * n1);
            float off = k == CRF_GUARDS_MARG_REAL ? 200.0f * u - 100.0f : 0.0f;
            float logz = (k == CRF_GUARDS_MARG_PADDED ? (float)drift * 100.0f : al + edge + be) + off;
            a = lab_semicrf_marginal_f32(al, edge, be, logz, ga);
            b = lab_semicrf_marginal_f32(al, edge, be, logz, gl);
            break;
        }
        }
        cg_cmp(&a, &b, 1, row);
    }
    return LAB_OK;
}
