/* wr_model: incident 0008 on the CPU: the float32 forward, the float64 reference, and the backward kernel's programs run in program order with a census of its thread ownership (who stores, who loads, which barrier lies between). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wr.h"

/* ---- float32 primitives of the kernel (upstream's guards: NEG_INF guard, epsilon, clamps) ---------------- */

static inline float wr_clampf(float x, float lo, float hi)
{
    if (x != x) return x; /* torch/triton clamp keeps NaN */
    return x < lo ? lo : (x > hi ? hi : x);
}

/* logsumexp over n float32 values (masked entries already NEG_INF), with the NEG_INF guard and epsilon. */
static float wr_lse_f(const float *v, int n, int stride)
{
    float m = v[0];
    for (int i = 1; i < n; ++i) m = v[(size_t)i * stride] > m ? v[(size_t)i * stride] : m;
    int all = m < WR_NEG_INF + 1.0f;
    float ms = all ? 0.0f : m, s = 0.0f;
    for (int i = 0; i < n; ++i) s = s + expf(v[(size_t)i * stride] - ms);
    float r = logf(s + 1e-10f);
    return all ? WR_NEG_INF : m + r;
}

/* Online logsumexp accumulation of x into a (both-NEG_INF guard), float32 and float64. */
static inline float wr_acc_f(float a, float x)
{
    float mx = a > x ? a : x;
    int both = a < WR_NEG_INF + 1.0f && x < WR_NEG_INF + 1.0f;
    float ms = both ? 0.0f : mx;
    float r = logf(expf(a - ms) + expf(x - ms) + 1e-10f);
    return both ? WR_NEG_INF : mx + r;
}

static inline double wr_acc_d(double a, float xf)
{
    double x = (double)xf;
    double mx = a > x ? a : x;
    int both = a < (double)WR_NEG_INF + 1.0 && x < (double)WR_NEG_INF + 1.0;
    double ms = both ? 0.0 : mx;
    double r = log(exp(a - ms) + exp(x - ms) + 1e-10);
    return both ? (double)WR_NEG_INF : mx + r;
}

/* Segment score in float32 as the kernel adds it: (cum_end - cum_start) + dur, + proj_start, + proj_end. */
static inline float wr_seg_f(const lab_semicrf_problem *p, int b, int s, int k, int c)
{
    size_t C = (size_t)p->C, T = (size_t)p->T;
    const float *cb = p->cum + (size_t)b * (T + 1) * C;
    float v = cb[(size_t)(s + k) * C + (size_t)c] - cb[(size_t)s * C + (size_t)c];
    v = v + p->dur[(size_t)(k - 1) * C + (size_t)c];
    if (p->use_proj) {
        v = v + p->proj_start[((size_t)b * T + (size_t)s) * C + (size_t)c];
        v = v + p->proj_end[((size_t)b * T + (size_t)(s + k - 1)) * C + (size_t)c];
    }
    return v;
}

/* Score of duration k for every class d at position t: logsumexp over src s of alpha_prev[s] + (seg[d] +
 * trans[s][d]), masked; sfk[d] for d < C. v is scratch [C]. */
static void wr_score_k(const lab_semicrf_problem *p, int b, int t, int k, const float *ap, float *sfk, float *v)
{
    int C = p->C;
    for (int d = 0; d < C; ++d) {
        float sg = wr_seg_f(p, b, t - k, k, d);
        for (int s = 0; s < C; ++s) v[s] = ap[s] + (sg + p->trans[(size_t)s * C + (size_t)d]);
        sfk[d] = wr_lse_f(v, C, 1);
    }
}

/* ---- forward ----------------------------------------------------------------------------------------- */

void wr_fwd_free(wr_fwd *f)
{
    free(f->logZ);
    free(f->ckpt);
    memset(f, 0, sizeof *f);
}

lab_status wr_forward_shapes(const lab_semicrf_problem *p, wr_fwd *f)
{
    memset(f, 0, sizeof *f);
    int B = p->B, T = p->T, K = p->K, C = p->C;
    if (C > WR_C_PAD || K < 1 || T < 1) return lab_err_set(LAB_ERR_ARG, LAB_INCIDENT_ID ": forward: C %d (max %d), K %d, T %d", C, WR_C_PAD, K, T);
    f->B = B, f->T = T, f->K = K, f->C = C;
    f->I = wr_ckpt_interval(T, K);
    f->NCK = wr_num_ckpts(T, K);
    f->SEG = f->I + K;
    size_t nck = (size_t)B * (size_t)f->NCK * (size_t)K * WR_C_PAD;
    f->logZ = malloc((size_t)B * sizeof *f->logZ);
    f->ckpt = malloc(nck * sizeof *f->ckpt);
    if (!f->logZ || !f->ckpt) {
        wr_fwd_free(f);
        return lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": forward: out of memory");
    }
    for (int b = 0; b < B; ++b) f->logZ[b] = NAN;
    for (size_t i = 0; i < nck; ++i) f->ckpt[i] = NAN;
    return LAB_OK;
}

lab_status wr_forward(const lab_semicrf_problem *p, wr_fwd *f)
{
    lab_status st = wr_forward_shapes(p, f);
    if (st != LAB_OK) return st;
    int B = p->B, T = p->T, K = p->K, C = p->C;
    size_t nck = (size_t)B * (size_t)f->NCK * (size_t)K * WR_C_PAD;
    float *alpha = malloc((size_t)(T + 1) * WR_C_PAD * sizeof *alpha);
    float *v = malloc((size_t)(C + 1) * 2 * sizeof *v);
    if (!alpha || !v) {
        free(alpha);
        free(v);
        wr_fwd_free(f);
        return lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": forward: out of memory");
    }
    for (size_t i = 0; i < nck; ++i) f->ckpt[i] = WR_NEG_INF;
    float *sfk = v + C + 1;
    for (int b = 0; b < B; ++b) {
        int L = p->len[b];
        if (L < 1 || L > T) {
            free(alpha);
            free(v);
            wr_fwd_free(f);
            return lab_err_set(LAB_ERR_ARG, LAB_INCIDENT_ID ": forward: len[%d] = %d outside 1..%d", b, L, T);
        }
        for (size_t i = 0; i < (size_t)(T + 1) * WR_C_PAD; ++i) alpha[i] = WR_NEG_INF;
        for (int c = 0; c < C; ++c) alpha[c] = 0.0f;
        for (int t = 1; t <= L; ++t) {
            float *at = alpha + (size_t)t * WR_C_PAD;
            for (int k = 1; k <= K && t - k >= 0; ++k) {
                wr_score_k(p, b, t, k, alpha + (size_t)(t - k) * WR_C_PAD, sfk, v);
                for (int d = 0; d < C; ++d) at[d] = wr_acc_f(at[d], sfk[d]);
            }
        }
        f->logZ[b] = wr_lse_f(alpha + (size_t)L * WR_C_PAD, C, 1);
        for (int n = 0; n < f->NCK; ++n)
            for (int q = n * f->I - K + 1; q <= n * f->I; ++q)
                if (q >= 0 && q <= L)
                    for (int c = 0; c < C; ++c)
                        f->ckpt[(((size_t)b * f->NCK + (size_t)n) * K + (size_t)(q % K)) * WR_C_PAD + (size_t)c] =
                            alpha[(size_t)q * WR_C_PAD + (size_t)c];
    }
    free(alpha);
    free(v);
    return LAB_OK;
}

/* ---- float64 reference (factorised: O(L (K C + C^2)) per element) -------------------------------------- */

lab_status wr_reference(const lab_semicrf_problem *p, lab_semicrf_ref *r)
{
    memset(r, 0, sizeof *r);
    int B = p->B, T = p->T, K = p->K, C = p->C;
    size_t nrow = (size_t)(T + 1) * (size_t)C, npos = (size_t)T * (size_t)C;
    r->logZ = calloc((size_t)B, sizeof(double));
    r->g_cum = calloc((size_t)B * nrow, sizeof(double));
    r->g_trans = calloc((size_t)C * (size_t)C, sizeof(double));
    r->g_dur = calloc((size_t)K * (size_t)C, sizeof(double));
    r->g_ps = calloc((size_t)B * npos, sizeof(double));
    r->g_pe = calloc((size_t)B * npos, sizeof(double));
    double *w = malloc(4 * nrow * sizeof(double));
    if (!r->logZ || !r->g_cum || !r->g_trans || !r->g_dur || !r->g_ps || !r->g_pe || !w) {
        free(w);
        lab_semicrf_ref_free(r);
        return lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": reference: out of memory");
    }
    /* alpha[t][d]: segment of class d ends at t; ain[t][d] = lse_s alpha[t][s] + trans[s][d] (alpha[0] = 0: the
     * first segment also takes a transition, from a uniform start); beta[t][s] continuation after class s ends at
     * t; bout[t][d] = lse_k seg(t, k, d) + beta[t + k][d]. */
    double *alpha = w, *ain = w + nrow, *beta = w + 2 * nrow, *bout = w + 3 * nrow;
    double tmp[WR_C_PAD > LAB_SEMICRF_K_MAX ? WR_C_PAD : LAB_SEMICRF_K_MAX];
    for (int b = 0; b < B; ++b) {
        int L = p->len[b];
        if (L < 1 || L > T) {
            free(w);
            lab_semicrf_ref_free(r);
            return lab_err_set(LAB_ERR_ARG, LAB_INCIDENT_ID ": reference: len[%d] = %d outside 1..%d", b, L, T);
        }
        for (int c = 0; c < C; ++c) alpha[c] = 0.0;
        for (int t = 0; t <= L; ++t) {
            if (t > 0)
                for (int d = 0; d < C; ++d) {
                    int nk = t < K ? t : K;
                    for (int k = 1; k <= nk; ++k) tmp[k - 1] = lab_semicrf_seg_d(p, b, t - k, k, d) + ain[(size_t)(t - k) * C + d];
                    alpha[(size_t)t * C + d] = lab_semicrf_lse_d(tmp, nk);
                }
            for (int d = 0; d < C; ++d) {
                for (int s = 0; s < C; ++s) tmp[s] = alpha[(size_t)t * C + s] + (double)p->trans[(size_t)s * C + d];
                ain[(size_t)t * C + d] = lab_semicrf_lse_d(tmp, C);
            }
        }
        double z = lab_semicrf_lse_d(alpha + (size_t)L * C, C);
        r->logZ[b] = z;
        for (int c = 0; c < C; ++c) beta[(size_t)L * C + c] = 0.0;
        for (int t = L - 1; t >= 0; --t) {
            int nk = L - t < K ? L - t : K;
            for (int d = 0; d < C; ++d) {
                for (int k = 1; k <= nk; ++k) tmp[k - 1] = lab_semicrf_seg_d(p, b, t, k, d) + beta[(size_t)(t + k) * C + d];
                bout[(size_t)t * C + d] = lab_semicrf_lse_d(tmp, nk);
            }
            for (int s = 0; s < C; ++s) {
                for (int d = 0; d < C; ++d) tmp[d] = (double)p->trans[(size_t)s * C + d] + bout[(size_t)t * C + d];
                beta[(size_t)t * C + s] = lab_semicrf_lse_d(tmp, C);
            }
        }
        double *gc = r->g_cum + (size_t)b * nrow, *gps = r->g_ps + (size_t)b * npos, *gpe = r->g_pe + (size_t)b * npos;
        for (int t = 0; t < L; ++t) {
            int nk = L - t < K ? L - t : K;
            for (int d = 0; d < C; ++d) {
                double a = ain[(size_t)t * C + d], sum = 0.0;
                for (int k = 1; k <= nk; ++k) {
                    double e = exp(a + lab_semicrf_seg_d(p, b, t, k, d) + beta[(size_t)(t + k) * C + d] - z);
                    gc[(size_t)(t + k) * C + d] += e;
                    r->g_dur[(size_t)(k - 1) * C + d] += e;
                    gpe[(size_t)(t + k - 1) * C + d] += e;
                    sum += e;
                }
                gc[(size_t)t * C + d] -= sum;
                gps[(size_t)t * C + d] += sum;
            }
            for (int s = 0; s < C; ++s)
                for (int d = 0; d < C; ++d)
                    r->g_trans[(size_t)s * C + d] +=
                        exp(alpha[(size_t)t * C + s] + (double)p->trans[(size_t)s * C + d] + bout[(size_t)t * C + d] - z);
        }
        if (!p->use_proj) {
            memset(gps, 0, npos * sizeof *gps);
            memset(gpe, 0, npos * sizeof *gpe);
        }
    }
    free(w);
    return LAB_OK;
}

/* ---- outputs ------------------------------------------------------------------------------------------ */

void wr_out_free(wr_out *o)
{
    free(o->g_cum);
    free(o->g_trans);
    free(o->g_dur);
    free(o->g_ps);
    free(o->g_pe);
    free(o->logZ);
    memset(o, 0, sizeof *o);
}

lab_status wr_out_alloc(wr_out *o, int B, int T, int K, int C)
{
    memset(o, 0, sizeof *o);
    size_t nc = (size_t)B * (size_t)(T + 1) * (size_t)C, np = (size_t)B * (size_t)T * (size_t)C;
    o->g_cum = calloc(nc, sizeof(float));
    o->g_trans = calloc((size_t)C * (size_t)C, sizeof(float));
    o->g_dur = calloc((size_t)K * (size_t)C, sizeof(float));
    o->g_ps = calloc(np, sizeof(float));
    o->g_pe = calloc(np, sizeof(float));
    o->logZ = calloc((size_t)B, sizeof(float));
    if (!o->g_cum || !o->g_trans || !o->g_dur || !o->g_ps || !o->g_pe || !o->logZ) {
        wr_out_free(o);
        return lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": out of memory for the outputs");
    }
    return LAB_OK;
}

/* ---- the census of the kernel's thread ownership -------------------------------------------------------- */

/* Shadow of one buffer element of one program: its last store and the loads since the last barrier. */
typedef struct {
    int writer;          /* thread of the last store, -1: none in this program (the launcher's NEG_INF fill) */
    uint64_t wepoch;     /* barrier epoch of that store */
    uint64_t repoch;     /* epoch of the loads recorded in rother */
    int rother;          /* a thread other than the element's owner (its only writer) loaded it in repoch */
} wr_shadow;

typedef struct {
    int nw, remat, barrier;
    uint64_t epoch;
    wr_shadow *sa, *sb;  /* alpha buffer [SEG][C_PAD], beta ring [K][C_PAD] */
    wr_out *o;
} wr_census;

static void wr_cen_reset(wr_census *cs, int nsa, int nsb)
{
    for (int i = 0; i < nsa; ++i) cs->sa[i] = (wr_shadow){.writer = -1, .repoch = UINT64_MAX};
    for (int i = 0; i < nsb; ++i) cs->sb[i] = (wr_shadow){.writer = -1, .repoch = UINT64_MAX};
}

static inline void wr_cen_barrier(wr_census *cs)
{
    if (!cs) return;
    cs->epoch++;
    cs->o->barriers++;
}

/* The owner (thread wr_owner(e)) stores element e. */
static inline void wr_cen_store(wr_census *cs, wr_shadow *sh, int e)
{
    if (!cs) return;
    if (sh->repoch == cs->epoch && sh->rother) cs->o->war_hazards++;
    sh->writer = wr_owner(e, cs->nw);
    sh->wepoch = cs->epoch;
    sh->repoch = UINT64_MAX;
    sh->rother = 0;
}

/* A load of element e by the threads of `warp` (all 32 lanes when lane < 0, else that lane). */
static inline void wr_cen_load1(wr_census *cs, wr_shadow *sh, int e, int warp, int lane)
{
    int own = wr_owner(e, cs->nw);
    if (sh->writer >= 0 && sh->wepoch == cs->epoch) {
        int w = sh->writer;
        if (lane < 0) {
            if (warp != w >> 5) cs->o->raw_cross_warp++;
            else cs->o->raw_intra_warp++; /* the other 31 lanes of the writer's warp */
        } else if (32 * warp + lane != w) {
            if (warp != w >> 5) cs->o->raw_cross_warp++;
            else cs->o->raw_intra_warp++;
        }
    }
    if (sh->repoch != cs->epoch) {
        sh->repoch = cs->epoch;
        sh->rother = 0;
    }
    if (lane < 0 || 32 * warp + lane != own) sh->rother = 1;
}

/* A load of column element s (alpha: consumed along src): rematerialised, every thread holding column s loads
 * it (one lane in each warp-row); else its owner loads it and shares it behind barriers. */
static inline void wr_cen_load_col(wr_census *cs, wr_shadow *sh, int s)
{
    if (!cs) return;
    if (cs->remat) {
        int WC = wr_wc(cs->nw), WR = wr_wrows(cs->nw);
        for (int i = 0; i < WR; ++i) wr_cen_load1(cs, sh, s, i * WC + (s >> 5) % WC, s & 31);
        if (WR > 1) cs->o->replicated_loads++;
    } else {
        int own = wr_owner(s, cs->nw);
        wr_cen_load1(cs, sh, s, own >> 5, own & 31);
    }
}

/* A load of row element r (beta: consumed along dst): rematerialised, every lane of the WC warps of r's
 * warp-row loads it; else its owner. */
static inline void wr_cen_load_row(wr_census *cs, wr_shadow *sh, int r)
{
    if (!cs) return;
    if (cs->remat) {
        int WC = wr_wc(cs->nw), WR = wr_wrows(cs->nw);
        for (int c = 0; c < WC; ++c) wr_cen_load1(cs, sh, r, (r % WR) * WC + c, -1);
        cs->o->replicated_loads++;
    } else {
        int own = wr_owner(r, cs->nw);
        wr_cen_load1(cs, sh, r, own >> 5, own & 31);
    }
}

/* The barrier pairs of the kernel's shared-memory exchanges (bar; write; bar; read), as wr_kernels.cu has them. */
static inline void wr_cen_exchange(wr_census *cs)
{
    wr_cen_barrier(cs);
    wr_cen_barrier(cs);
}

/* ---- masked padding-lane addresses ------------------------------------------------------------------------ */

/* Per execution of a 1-D site over a buffer [rows_total][W] at flat row `frow`: how many of the C_PAD - C padding
 * lanes compute an address that is not their own element (stray), and how many fall past the allocation. `clamp`:
 * the index is min(lane, C - 1). */
static inline void wr_mask_1d(wr_out *o, size_t frow, int W, size_t rows_total, int C, int clamp)
{
    /* Counted in closed form (it runs per input load of every position and duration: a loop over the lanes was 5% of
     * a CUDA replay's host time). Lane c in [C, C_PAD) addresses idx = c (or C - 1 clamped): stray when idx >= W or
     * idx != c, past the allocation when frow W + idx >= rows_total W. */
    if (C >= WR_C_PAD) return;
    size_t n = (size_t)(WR_C_PAD - C), total = rows_total * (size_t)W, at = frow * (size_t)W;
    if (clamp) { /* every padding lane addresses C - 1, not its own element */
        o->masked_stray_addrs += n;
        if (at + (size_t)(C - 1) >= total) o->masked_oob_addrs += n;
        return;
    }
    size_t stray_from = (size_t)(C > W ? C : W), oob_from = total > at ? total - at : 0;
    if (oob_from < (size_t)C) oob_from = (size_t)C;
    o->masked_stray_addrs += stray_from < WR_C_PAD ? WR_C_PAD - stray_from : 0;
    o->masked_oob_addrs += oob_from < WR_C_PAD ? WR_C_PAD - oob_from : 0;
}

/* The same for a 2-D tile [C_PAD][C_PAD] over a [slices][W][W] buffer at slice `sl`: padding pairs (s, d). */
static void wr_mask_2d(size_t *stray, size_t *oob, size_t sl, int W, size_t slices, int C, int clamp)
{
    *stray = *oob = 0;
    size_t total = slices * (size_t)W * (size_t)W;
    for (int s = 0; s < WR_C_PAD; ++s)
        for (int d = 0; d < WR_C_PAD; ++d) {
            if (s < C && d < C) continue;
            int is = clamp ? (s < C ? s : C - 1) : s, id = clamp ? (d < C ? d : C - 1) : d;
            size_t flat = (sl * (size_t)W + (size_t)is) * (size_t)W + (size_t)id;
            if (is >= W || id >= W || is != s || id != d) ++*stray;
            if (flat >= total) ++*oob;
        }
}

/* ---- the backward, program by program ---------------------------------------------------------------------- */

/* wr_model over the nb programs order[0..nb) (NULL: 0..nb-1): wr_model is nb = B; wr_census_program one program's
 * census (the census state starts afresh with every program, so a census is the sum of its programs'). */
static lab_status wr_model_programs(const lab_semicrf_problem *p, const wr_fwd *f, const wr_cfg *cfg, const int *order,
                                    int nb, int census, int census_only, wr_out *o)
{
    int B = p->B, T = p->T, K = p->K, C = p->C;
    if (!(cfg->num_warps == 1 || cfg->num_warps == 2 || cfg->num_warps == 4 || cfg->num_warps == 8) ||
        cfg->index < WR_INDEX_RAW || cfg->index > WR_INDEX_PAD || C > WR_C_PAD || f->B != B || f->T != T || f->K != K)
        return lab_err_set(LAB_ERR_ARG, LAB_INCIDENT_ID ": model: bad configuration (num_warps %d, index %d, C %d)", cfg->num_warps,
                           cfg->index, C);
    const int I = f->I, NCK = f->NCK, SEG = f->SEG, f64 = cfg->f64;
    /* gradient buffer widths of the index variant: g_cum/g_ps/g_pe, transition workspace, duration workspace */
    const int Wc = cfg->index == WR_INDEX_PAD ? WR_C_PAD : C;
    const int Wt = cfg->index == WR_INDEX_RAW ? C : WR_C_PAD;
    const int clamp_in = cfg->index != WR_INDEX_RAW, clamp_out = cfg->index == WR_INDEX_CLAMP;
    size_t nc = (size_t)B * (size_t)(T + 1) * (size_t)C, np = (size_t)B * (size_t)T * (size_t)C;
    size_t nrow = (size_t)(T + 1) * (size_t)C, npos = (size_t)T * (size_t)C;
    /* per-batch workspaces (float32, or float64), real classes only: the padding is never written */
    double *acc = NULL;
    float *accf = NULL;
    size_t nacc = nc + 2 * np + (size_t)B * (size_t)C * (size_t)C + (size_t)B * (size_t)K * (size_t)C;
    float *abuf = malloc((size_t)SEG * WR_C_PAD * sizeof *abuf), *ring = malloc((size_t)K * WR_C_PAD * sizeof *ring);
    float *v = malloc((size_t)C * (size_t)C * 2 * sizeof *v);
    wr_shadow *sh = census ? malloc((size_t)(SEG + K) * WR_C_PAD * sizeof *sh) : NULL;
    if (f64) acc = census_only ? NULL : calloc(nacc, sizeof *acc);
    else accf = census_only ? NULL : calloc(nacc, sizeof *accf);
    if (!abuf || !ring || !v || (census && !sh) || (!census_only && !acc && !accf)) {
        free(abuf), free(ring), free(v), free(sh), free(acc), free(accf);
        return lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": model: out of memory");
    }
    wr_census cs0 = {.nw = cfg->num_warps, .remat = cfg->remat, .barrier = cfg->barrier, .o = o}, *cs = census ? &cs0 : NULL;
    if (cs) cs->sa = sh, cs->sb = sh + (size_t)SEG * WR_C_PAD;
    o->raw_cross_warp = o->raw_intra_warp = o->war_hazards = o->replicated_loads = o->barriers = 0;
    o->masked_stray_addrs = o->masked_oob_addrs = 0;
    /* workspace views: cum [B][T+1][C], ps, pe [B][T][C], tr [B][C][C], db [B][K][C] */
    size_t off_ps = nc, off_pe = nc + np, off_tr = nc + 2 * np, off_db = off_tr + (size_t)B * C * C;
    float *sfk = v + (size_t)C * C; /* [C] */
    float *ms = sfk + C;            /* [C] */
    float *bk = ms + C;             /* [C] */
    float *sb = v;                  /* [C dst][C src] beta scores */
    float ap[WR_C_PAD], al[WR_C_PAD], bn[WR_C_PAD], sg[WR_C_PAD];
    double atd[WR_C_PAD], nbd[WR_C_PAD];
    float atf[WR_C_PAD], nbf[WR_C_PAD];
    for (int bi = 0; bi < nb; ++bi) {
        int b = order ? order[bi] : bi;
        int L = p->len[b];
        float logZ = f->logZ[b];
        const float *ck = f->ckpt + (size_t)b * NCK * K * WR_C_PAD;
        if (cs) {
            wr_cen_reset(cs, SEG * WR_C_PAD, K * WR_C_PAD);
            cs->epoch = 0;
        }
        /* the launcher fills both buffers with NEG_INF */
        for (size_t i = 0; i < (size_t)SEG * WR_C_PAD; ++i) abuf[i] = WR_NEG_INF;
        for (size_t i = 0; i < (size_t)K * WR_C_PAD; ++i) ring[i] = WR_NEG_INF;
        /* masked addresses of the transition load (once per program) and the workspace tile (per execution) */
        size_t tr_stray, tr_oob, ws_stray, ws_oob;
        wr_mask_2d(&tr_stray, &tr_oob, 0, C, 1, C, clamp_in);
        wr_mask_2d(&ws_stray, &ws_oob, (size_t)b, Wt, (size_t)B, C, clamp_out);
        o->masked_stray_addrs += tr_stray;
        o->masked_oob_addrs += tr_oob;
        /* beta ring: 0 at the final position's slot, NEG_INF elsewhere (owner stores) */
        for (int ki = 0; ki < K; ++ki)
            for (int e = 0; e < C; ++e) {
                ring[(size_t)ki * WR_C_PAD + e] = ki == L % K ? 0.0f : WR_NEG_INF;
                if (cs) wr_cen_store(cs, &cs->sb[(size_t)ki * WR_C_PAD + e], e);
            }
        if (cs && cs->barrier) wr_cen_barrier(cs);
        for (int n = NCK - 1; n >= 0; --n) {
            int s0 = n * I, s1 = s0 + I < T ? s0 + I : T;
            if (s0 >= L) continue;
            /* alpha buffer row 0 from the checkpoint's slot of s0 (owner load and store) */
            for (int e = 0; e < C; ++e) {
                abuf[e] = ck[((size_t)n * K + (size_t)(s0 % K)) * WR_C_PAD + e];
                if (cs) wr_cen_store(cs, &cs->sa[e], e);
            }
            if (cs && cs->barrier) wr_cen_barrier(cs);
            /* Phase 1: recompute alpha[s0 + 1 .. min(s1, L) - 1] into the buffer */
            for (int lt = 1; lt < SEG; ++lt) {
                int t = s0 + lt;
                if (!(t < s1 && t < L)) break;
                for (int d = 0; d < C; ++d) atf[d] = WR_NEG_INF, atd[d] = (double)WR_NEG_INF;
                for (int k = 1; k <= K; ++k) {
                    int sp = t - k;
                    if (sp < 0) break;
                    int ls = sp - s0;
                    int inbuf = ls >= 0 && ls < SEG;
                    const float *src = inbuf ? abuf + (size_t)ls * WR_C_PAD : ck + ((size_t)n * K + (size_t)(sp % K)) * WR_C_PAD;
                    if (cs) {
                        if (inbuf)
                            for (int s = 0; s < C; ++s) wr_cen_load_col(cs, &cs->sa[(size_t)ls * WR_C_PAD + s], s);
                        if (!cs->remat && cs->nw > 2) wr_cen_exchange(cs); /* owner load, shared-memory broadcast */
                        /* masked 1-D input loads: cum_end (t), cum_start (sp), dur (k-1), ps (sp), pe (t-1) */
                        wr_mask_1d(o, (size_t)b * (T + 1) + t, C, (size_t)B * (T + 1), C, clamp_in);
                        wr_mask_1d(o, (size_t)b * (T + 1) + sp, C, (size_t)B * (T + 1), C, clamp_in);
                        wr_mask_1d(o, (size_t)k - 1, C, (size_t)K, C, clamp_in);
                        wr_mask_1d(o, (size_t)b * T + sp, C, (size_t)B * T, C, clamp_in);
                        wr_mask_1d(o, (size_t)b * T + t - 1, C, (size_t)B * T, C, clamp_in);
                        if (wr_wc(cs->nw) == 2) {
                            wr_cen_exchange(cs); /* row max across the two column warps */
                            wr_cen_exchange(cs); /* row sum */
                        }
                    }
                    if (census_only) continue;
                    for (int s = 0; s < C; ++s) ap[s] = src[s];
                    wr_score_k(p, b, t, k, ap, sfk, v);
                    for (int d = 0; d < C; ++d) {
                        if (f64) atd[d] = wr_acc_d(atd[d], sfk[d]);
                        else atf[d] = wr_acc_f(atf[d], sfk[d]);
                    }
                }
                /* rows to the owner layout (shared memory), owner stores; the fix: a barrier after the store */
                if (cs) wr_cen_exchange(cs);
                for (int e = 0; e < C; ++e) {
                    if (!census_only) abuf[(size_t)lt * WR_C_PAD + e] = f64 ? (float)atd[e] : atf[e];
                    if (cs) wr_cen_store(cs, &cs->sa[(size_t)lt * WR_C_PAD + e], e);
                }
                if (cs && cs->barrier) wr_cen_barrier(cs);
            }
            /* Phase 2: beta backward over [s0, s1) with the marginals */
            for (int to = 0; to < I; ++to) {
                int t = s1 - 1 - to;
                if (!(t >= s0 && t < L && t >= 0)) continue;
                const float *arow = abuf + (size_t)(t - s0) * WR_C_PAD;
                if (cs) {
                    for (int s = 0; s < C; ++s) wr_cen_load_col(cs, &cs->sa[(size_t)(t - s0) * WR_C_PAD + s], s);
                    if (!cs->remat && cs->nw > 2) wr_cen_exchange(cs);
                }
                for (int s = 0; s < C; ++s) al[s] = wr_clampf(arow[s], -1e6f, 1e6f), nbf[s] = WR_NEG_INF, nbd[s] = (double)WR_NEG_INF;
                for (int k = 1; k <= K; ++k) {
                    int end = t + k;
                    if (!(end <= L && end <= T)) break;
                    const float *brow = ring + (size_t)(end % K) * WR_C_PAD;
                    if (cs) {
                        for (int r = 0; r < C; ++r) wr_cen_load_row(cs, &cs->sb[(size_t)(end % K) * WR_C_PAD + r], r);
                        if (!cs->remat) wr_cen_exchange(cs); /* owner load, broadcast of the rows */
                        wr_mask_1d(o, (size_t)b * (T + 1) + end, C, (size_t)B * (T + 1), C, clamp_in);
                        wr_mask_1d(o, (size_t)b * (T + 1) + t, C, (size_t)B * (T + 1), C, clamp_in);
                        wr_mask_1d(o, (size_t)k - 1, C, (size_t)K, C, clamp_in);
                        wr_mask_1d(o, (size_t)b * T + t, C, (size_t)B * T, C, clamp_in);
                        wr_mask_1d(o, (size_t)b * T + end - 1, C, (size_t)B * T, C, clamp_in);
                        o->masked_stray_addrs += ws_stray;
                        o->masked_oob_addrs += ws_oob;
                        if (wr_wc(cs->nw) == 2) wr_cen_exchange(cs); /* row sums to the owner layout */
                        /* 1-D atomics: g_cum[end], g_cum[t], duration workspace [k-1], g_ps[t], g_pe[end-1] */
                        wr_mask_1d(o, (size_t)b * (T + 1) + end, Wc, (size_t)B * (T + 1), C, clamp_out);
                        wr_mask_1d(o, (size_t)b * (T + 1) + t, Wc, (size_t)B * (T + 1), C, clamp_out);
                        wr_mask_1d(o, (size_t)b * K + k - 1, Wt, (size_t)B * K, C, clamp_out);
                        wr_mask_1d(o, (size_t)b * T + t, Wc, (size_t)B * T, C, clamp_out);
                        wr_mask_1d(o, (size_t)b * T + end - 1, Wc, (size_t)B * T, C, clamp_out);
                        if (wr_wrows(cs->nw) > 1) {
                            wr_cen_exchange(cs); /* column max across warp-rows */
                            wr_cen_exchange(cs); /* column sum */
                        }
                    }
                    if (census_only) continue;
                    for (int d = 0; d < C; ++d) bn[d] = brow[d], sg[d] = wr_seg_f(p, b, t, k, d);
                    float hi = f64 ? 700.0f : 80.0f, lo = -hi;
                    for (int d = 0; d < C; ++d) {
                        float bsafe = wr_clampf(bn[d], -1e6f, 1e6f), sum = 0.0f;
                        for (int s = 0; s < C; ++s) {
                            float edge = sg[d] + p->trans[(size_t)s * C + d];
                            float lm = al[s] + wr_clampf(edge, -1e6f, 1e6f) + bsafe - logZ;
                            float m = expf(wr_clampf(lm, lo, hi));
                            size_t itr = off_tr + ((size_t)b * C + (size_t)s) * C + (size_t)d;
                            if (f64) acc[itr] += (double)m;
                            else accf[itr] = accf[itr] + m;
                            sum = sum + m;
                            sb[(size_t)d * C + s] = edge + bn[d];
                        }
                        ms[d] = sum;
                    }
                    for (int d = 0; d < C; ++d) {
                        float m = ms[d]; /* grad_output = 1 */
                        size_t ie = (size_t)b * nrow + (size_t)end * C + d, it = (size_t)b * nrow + (size_t)t * C + d;
                        size_t idb = off_db + ((size_t)b * K + (size_t)(k - 1)) * C + d;
                        size_t ips = off_ps + (size_t)b * npos + (size_t)t * C + d;
                        size_t ipe = off_pe + (size_t)b * npos + (size_t)(end - 1) * C + d;
                        if (f64) {
                            acc[ie] += (double)m, acc[it] += (double)(-m), acc[idb] += (double)m;
                            acc[ips] += (double)m, acc[ipe] += (double)m;
                        } else {
                            accf[ie] = accf[ie] + m, accf[it] = accf[it] + (-m), accf[idb] = accf[idb] + m;
                            accf[ips] = accf[ips] + m, accf[ipe] = accf[ipe] + m;
                        }
                    }
                    for (int s = 0; s < C; ++s) bk[s] = wr_lse_f(sb + s, C, C);
                    for (int s = 0; s < C; ++s) {
                        if (f64) nbd[s] = wr_acc_d(nbd[s], bk[s]);
                        else nbf[s] = wr_acc_f(nbf[s], bk[s]);
                    }
                }
                for (int e = 0; e < C; ++e) {
                    if (!census_only) ring[(size_t)(t % K) * WR_C_PAD + e] = f64 ? (float)nbd[e] : nbf[e];
                    if (cs) wr_cen_store(cs, &cs->sb[(size_t)(t % K) * WR_C_PAD + e], e);
                }
                if (cs && cs->barrier) wr_cen_barrier(cs);
            }
        }
    }
    if (!census_only) {
        /* the batch reduction (einsum over b with grad_output = 1, b ascending) and the slices back to C */
        for (size_t i = 0; i < (size_t)C * C; ++i) {
            double sd = 0.0;
            float sf = 0.0f;
            for (int b = 0; b < B; ++b) {
                if (f64) sd += acc[off_tr + (size_t)b * C * C + i];
                else sf = sf + accf[off_tr + (size_t)b * C * C + i];
            }
            o->g_trans[i] = f64 ? (float)sd : sf;
        }
        for (size_t i = 0; i < (size_t)K * C; ++i) {
            double sd = 0.0;
            float sf = 0.0f;
            for (int b = 0; b < B; ++b) {
                if (f64) sd += acc[off_db + (size_t)b * K * C + i];
                else sf = sf + accf[off_db + (size_t)b * K * C + i];
            }
            o->g_dur[i] = f64 ? (float)sd : sf;
        }
        for (size_t i = 0; i < nc; ++i) o->g_cum[i] = f64 ? (float)acc[i] : accf[i];
        for (size_t i = 0; i < np; ++i) {
            o->g_ps[i] = f64 ? (float)acc[off_ps + i] : accf[off_ps + i];
            o->g_pe[i] = f64 ? (float)acc[off_pe + i] : accf[off_pe + i];
        }
        if (!p->use_proj) {
            memset(o->g_ps, 0, np * sizeof(float));
            memset(o->g_pe, 0, np * sizeof(float));
        }
        for (int b = 0; b < B; ++b) o->logZ[b] = f->logZ[b];
    }
    free(abuf), free(ring), free(v), free(sh), free(acc), free(accf);
    return LAB_OK;
}

lab_status wr_model(const lab_semicrf_problem *p, const wr_fwd *f, const wr_cfg *cfg, const int *order, int census,
                    int census_only, wr_out *o)
{
    return wr_model_programs(p, f, cfg, order, p->B, census, census_only, o);
}

lab_status wr_census_program(const lab_semicrf_problem *p, const wr_fwd *f, const wr_cfg *cfg, int b, wr_out *o)
{
    if (b < 0 || b >= p->B) return lab_err_set(LAB_ERR_ARG, LAB_INCIDENT_ID ": census: program %d of %d", b, p->B);
    return wr_model_programs(p, f, cfg, &b, 1, 1, 1, o);
}

/* ---- comparisons ----------------------------------------------------------------------------------------- */

double wr_tolerance(const lab_semicrf_ref *r, int B, int K)
{
    double z = 0.0;
    for (int b = 0; b < B; ++b) z = fabs(r->logZ[b]) > z ? fabs(r->logZ[b]) : z;
    return WR_TOL_ULPS(K) * (1.0 / 16777216.0) * (z > 1.0 ? z : 1.0);
}

void wr_compare(const lab_semicrf_problem *p, const wr_out *o, const lab_semicrf_ref *r, wr_err *e)
{
    memset(e, 0, sizeof *e);
    size_t C = (size_t)p->C, nc = (size_t)p->B * (size_t)(p->T + 1) * C, np = (size_t)p->B * (size_t)p->T * C;
    e->trans = lab_semicrf_norm_err(o->g_trans, r->g_trans, C * C, &e->nonfinite);
    e->dur = lab_semicrf_norm_err(o->g_dur, r->g_dur, (size_t)p->K * C, &e->nonfinite);
    e->cum = lab_semicrf_norm_err(o->g_cum, r->g_cum, nc, &e->nonfinite);
    e->ps = p->use_proj ? lab_semicrf_norm_err(o->g_ps, r->g_ps, np, &e->nonfinite) : 0.0;
    e->pe = p->use_proj ? lab_semicrf_norm_err(o->g_pe, r->g_pe, np, &e->nonfinite) : 0.0;
    e->n = C * C + (size_t)p->K * C + nc + (p->use_proj ? 2 * np : 0);
    e->max = lab_semicrf_max_nan(lab_semicrf_max_nan(lab_semicrf_max_nan(e->trans, e->dur), lab_semicrf_max_nan(e->cum, e->ps)), e->pe);
    /* log Z's relative error. Compared with tol (on log Z's own scale) it admits |log Z| times more than an
     * absolute error would; the absolute error of the float32 forward grows with T (measured 1.05 to 1.12 tol at
     * T = 500 on the CPU, seeds 2, 5, 14): the (K + 4) count is per position, and a log Z bound derived from the
     * forward's T-step recursion is not done (README: "What the criterion checks"). */
    e->logz = 0.0;
    for (int b = 0; b < p->B; ++b) {
        double d = fabs((double)o->logZ[b] - r->logZ[b]) / fabs(r->logZ[b]);
        e->logz = lab_semicrf_max_nan(e->logz, isfinite(o->logZ[b]) ? d : NAN);
    }
}

static size_t wr_diff(const float *a, const float *b, size_t n, double *mx)
{
    size_t nd = 0;
    for (size_t i = 0; i < n; ++i) {
        if (memcmp(&a[i], &b[i], sizeof(float)) == 0) continue;
        ++nd;
        double d = fabs((double)a[i] - (double)b[i]);
        *mx = isnan(d) || isnan(*mx) ? NAN : (d > *mx ? d : *mx);
    }
    return nd;
}

size_t wr_bits_differ(const lab_semicrf_problem *p, const wr_out *a, const wr_out *b, double *max_abs)
{
    size_t C = (size_t)p->C, nc = (size_t)p->B * (size_t)(p->T + 1) * C, np = (size_t)p->B * (size_t)p->T * C;
    double mx = 0.0;
    size_t nd = wr_diff(a->g_trans, b->g_trans, C * C, &mx) + wr_diff(a->g_dur, b->g_dur, (size_t)p->K * C, &mx) +
                wr_diff(a->g_cum, b->g_cum, nc, &mx) + wr_diff(a->g_ps, b->g_ps, np, &mx) + wr_diff(a->g_pe, b->g_pe, np, &mx);
    if (max_abs) *max_abs = mx;
    return nd;
}
