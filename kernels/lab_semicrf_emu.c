/* lab_semicrf_emu: the semi-CRF's GPU kernel emulated on the CPU: the float32 primitives, the forward and backward passes on C_PAD lanes, and the marginal kernel's blocks in a seeded order with their atomics (or workspaces) on a guard-zoned heap, per layout and accumulation. */
#include "lab_semicrf.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "lab_rng.h"
#include "lab_semicrf_arena.h"

#define SC_PAD LAB_SEMICRF_C_PAD

/* ---------------------------------------------------------------------------------------------- */
/* float32 primitives of the kernels                                                               */

float lab_semicrf_lse_f32(const float *x, int n, unsigned guards)
{
    float m = x[0];
    for (int i = 1; i < n; ++i) m = x[i] > m ? x[i] : m;
    int all_neginf = m < LAB_SEMICRF_NEG_INF + 1.0f;
    float msafe = (guards & LAB_SEMICRF_GUARD_NEGINF) && all_neginf ? 0.0f : m;
    float s = 0.0f;
    for (int i = 0; i < n; ++i) s = s + expf(x[i] - msafe);
    if (guards & LAB_SEMICRF_GUARD_EPS) s = s + 1e-10f;
    float r = msafe + logf(s);
    if ((guards & LAB_SEMICRF_GUARD_NEGINF) && all_neginf) r = LAB_SEMICRF_NEG_INF;
    return r;
}

/* torch.clamp semantics: NaN stays NaN. */
static inline float sc_clamp(float x, float lo, float hi)
{
    if (x != x) return x;
    return x < lo ? lo : (x > hi ? hi : x);
}

float lab_semicrf_marginal_f32(float a, float edge, float b, float logZ, unsigned guards)
{
    if (guards & LAB_SEMICRF_GUARD_CLAMP_IN) {
        a = sc_clamp(a, -1e6f, 1e6f);
        edge = sc_clamp(edge, -1e6f, 1e6f);
        b = sc_clamp(b, -1e6f, 1e6f);
    }
    float lm = a + edge + b - logZ;
    if (guards & LAB_SEMICRF_GUARD_CLAMP_LOG) lm = sc_clamp(lm, -80.0f, 80.0f);
    return expf(lm);
}

/* ---------------------------------------------------------------------------------------------- */
/* The emulated kernel                                                                             */

void lab_semicrf_out_free(lab_semicrf_out *o)
{
    free(o->logZ);
    free(o->g_cum);
    free(o->g_trans);
    free(o->g_dur);
    free(o->g_ps);
    free(o->g_pe);
    free(o->acc_trans);
    free(o->acc_dur);
    free(o->acc_cum);
    memset(o, 0, sizeof *o);
}

enum { A_CUM, A_TRANS, A_DUR, A_PS, A_PE, A_GCUM, A_GTRANS, A_GDUR, A_GPS, A_GPE, A_N };

/* Segment score in float32 as the kernel evaluates it (left to right, no fused operations). */
static inline float sc_seg_f(lab_semicrf_arena *ar, const lab_semicrf_problem *p, int b, int s, int k, long rd, long C)
{
    long T = p->T;
    float v = lab_semicrf_arena_ld(ar, A_CUM, ((long)b * (T + 1) + s + k) * C + rd) -
              lab_semicrf_arena_ld(ar, A_CUM, ((long)b * (T + 1) + s) * C + rd);
    v = v + lab_semicrf_arena_ld(ar, A_DUR, (long)(k - 1) * C + rd);
    if (p->use_proj) {
        v = v + lab_semicrf_arena_ld(ar, A_PS, ((long)b * T + s) * C + rd);
        v = v + lab_semicrf_arena_ld(ar, A_PE, ((long)b * T + s + k - 1) * C + rd);
    }
    return v;
}

/* The production forward and backward passes on C_PAD lanes (padding lanes NEG_INF by selection), for
 * element b: alpha, ain, beta, bout are [T+1][C_PAD]; returns the float32 log Z. */
static float sc_fwd_bwd_f(lab_semicrf_arena *ar, const lab_semicrf_problem *p, int b, unsigned guards, float *alpha,
                          float *ain, float *beta, float *bout)
{
    int C = p->C, K = p->K, L = p->len[b], T = p->T;
    float tmp[SC_PAD > LAB_SEMICRF_K_MAX ? SC_PAD : LAB_SEMICRF_K_MAX];
    for (size_t i = 0; i < (size_t)(T + 1) * SC_PAD; ++i)
        alpha[i] = ain[i] = beta[i] = bout[i] = LAB_SEMICRF_NEG_INF;
    for (int c = 0; c < C; ++c) alpha[c] = 0.0f, ain[c] = 0.0f;
    for (int t = 1; t <= L; ++t) {
        int nk = t < K ? t : K;
        for (int c = 0; c < C; ++c) {
            for (int k = 1; k <= nk; ++k)
                tmp[k - 1] = sc_seg_f(ar, p, b, t - k, k, c, C) + ain[(size_t)(t - k) * SC_PAD + (size_t)c];
            alpha[(size_t)t * SC_PAD + (size_t)c] = lab_semicrf_lse_f32(tmp, nk, guards);
        }
        for (int c2 = 0; c2 < C; ++c2) {
            for (int c = 0; c < C; ++c)
                tmp[c] = alpha[(size_t)t * SC_PAD + (size_t)c] + lab_semicrf_arena_ld(ar, A_TRANS, (long)c * C + c2);
            ain[(size_t)t * SC_PAD + (size_t)c2] = lab_semicrf_lse_f32(tmp, C, guards);
        }
    }
    float z = lab_semicrf_lse_f32(alpha + (size_t)L * SC_PAD, C, guards);
    for (int c = 0; c < C; ++c) beta[(size_t)L * SC_PAD + (size_t)c] = 0.0f;
    for (int t = L - 1; t >= 0; --t) {
        int nk = L - t < K ? L - t : K;
        for (int c2 = 0; c2 < C; ++c2) {
            for (int k = 1; k <= nk; ++k)
                tmp[k - 1] = sc_seg_f(ar, p, b, t, k, c2, C) + beta[(size_t)(t + k) * SC_PAD + (size_t)c2];
            bout[(size_t)t * SC_PAD + (size_t)c2] = lab_semicrf_lse_f32(tmp, nk, guards);
        }
        for (int c = 0; c < C; ++c) {
            for (int c2 = 0; c2 < C; ++c2)
                tmp[c2] = lab_semicrf_arena_ld(ar, A_TRANS, (long)c * C + c2) + bout[(size_t)t * SC_PAD + (size_t)c2];
            beta[(size_t)t * SC_PAD + (size_t)c] = lab_semicrf_lse_f32(tmp, C, guards);
        }
    }
    return z;
}

/* Pairwise (fixed binary tree) reduction of n rows of w floats, in place: row 0 gets the sum. The tree
 * pairs rows i and i + h for h = 1, 2, 4, ..., whatever the schedule; the CUDA reduction uses the same. */
static void sc_tree_reduce(float *rows, size_t n, size_t w)
{
    for (size_t h = 1; h < n; h <<= 1)
        for (size_t i = 0; i + h < n; i += 2 * h) {
            float *a = rows + i * w, *bb = rows + (i + h) * w;
            for (size_t j = 0; j < w; ++j) a[j] = a[j] + bb[j];
        }
}

/* Lanes of one atomic instruction whose address another lane of it shares (n lanes, addresses addr). */
static size_t sc_shared_lanes(const long *addr, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j)
            if (j != i && addr[j] == addr[i]) {
                ++k;
                break;
            }
    return k;
}

/* ---------------------------------------------------------------------------------------------- */
/* One emulated launch, step by step                                                               */

/* The state of one emulated launch: the problem and config, the heap, the forward/backward rows of every
 * batch element, the block schedule and (deterministic accumulation) the per-block workspaces. */
typedef struct {
    const lab_semicrf_problem *p;
    const lab_semicrf_config *cfg;
    lab_semicrf_out *o;
    lab_semicrf_arena ar;
    int padded, clamped, det; /* the layout and whether the accumulation is the deterministic one */
    long W;                   /* row width of the gradient buffers: C_PAD padded, else C */
    size_t gsz;               /* gradient element size: 8 for the float64 atomics, else 4 */
    size_t nrowp;             /* (T + 1) * C_PAD: one element's rows of alpha (or ain, beta, bout) */
    float *fb;                /* alpha, ain, beta, bout of every element, one allocation */
    float *alpha, *ain, *beta, *bout;
    size_t *order;            /* the blocks b * T + s in the order they reach their atomics */
    size_t nblocks;
    float *ws_e;              /* deterministic: per block (b, s) its end marginals [K][C_PAD] */
    float *ws_g;              /* deterministic: per block its transition tile [C_PAD][C_PAD] */
    size_t shared_row;        /* lanes of a row atomic (C_PAD lanes) that share an address */
    size_t shared_tile;       /* lanes of the tile atomic (C_PAD x C_PAD) that share an address */
} sc_launch;

/* LAB_ERR_ARG for a bad length, an unknown layout or accumulation, or a deterministic accumulation on
 * another layout than the padded one. */
static lab_status sc_check_config(const lab_semicrf_problem *p, const lab_semicrf_config *cfg)
{
    lab_status st = lab_semicrf_problem_check(p);
    if (st != LAB_OK) return st;
    if (cfg->layout > LAB_SEMICRF_LAYOUT_PADDED || cfg->accum > LAB_SEMICRF_ACC_DETERMINISTIC)
        return lab_err_set(LAB_ERR_ARG, "semicrf: config: unknown layout %d or accumulation %d", (int)cfg->layout,
                           (int)cfg->accum);
    if (cfg->accum == LAB_SEMICRF_ACC_DETERMINISTIC && cfg->layout != LAB_SEMICRF_LAYOUT_PADDED)
        return lab_err_set(LAB_ERR_ARG, "semicrf: config: the deterministic accumulation needs the padded layout");
    return LAB_OK;
}

/* The device heap: the inputs (at their exact, unpadded sizes) and the gradient buffers (rows of W, float32
 * or float64) between guard zones, inputs copied in. Errors of lab_semicrf_arena_init. */
static lab_status sc_heap_init(sc_launch *L)
{
    const lab_semicrf_problem *p = L->p;
    const int B = p->B, T = p->T, K = p->K, C = p->C;
    const size_t W = (size_t)L->W, gsz = L->gsz;
    size_t n[A_N] = {(size_t)B * (size_t)(T + 1) * (size_t)C, (size_t)C * (size_t)C, (size_t)K * (size_t)C,
                     p->use_proj ? (size_t)B * (size_t)T * (size_t)C : 1, p->use_proj ? (size_t)B * (size_t)T * (size_t)C : 1,
                     (size_t)B * (size_t)(T + 1) * W, W * W, (size_t)K * W,
                     (size_t)B * (size_t)T * W, (size_t)B * (size_t)T * W};
    size_t esz[A_N] = {4, 4, 4, 4, 4, gsz, gsz, gsz, gsz, gsz};
    static const char *const names[A_N] = {"cum_scores", "transitions", "duration_bias", "proj_start", "proj_end",
                                           "grad_cum_scores", "grad_transitions", "grad_duration_bias",
                                           "grad_proj_start", "grad_proj_end"};
    lab_semicrf_arena *ar = &L->ar;
    lab_status st = lab_semicrf_arena_init(ar, n, esz, names, A_N, L->cfg->guard_seed, L->o);
    if (st != LAB_OK) return st;
    if (L->cfg->exact_alloc) lab_semicrf_arena_exact(ar);
    memcpy(ar->mem + ar->a[A_CUM].off, p->cum, n[A_CUM] * 4);
    memcpy(ar->mem + ar->a[A_TRANS].off, p->trans, n[A_TRANS] * 4);
    memcpy(ar->mem + ar->a[A_DUR].off, p->dur, n[A_DUR] * 4);
    if (p->use_proj) {
        memcpy(ar->mem + ar->a[A_PS].off, p->proj_start, n[A_PS] * 4);
        memcpy(ar->mem + ar->a[A_PE].off, p->proj_end, n[A_PE] * 4);
    }
    return LAB_OK;
}

/* The launch's working memory: forward/backward rows, the schedule, the workspaces, o->logZ. LAB_ERR_NOMEM. */
static lab_status sc_work_alloc(sc_launch *L)
{
    const lab_semicrf_problem *p = L->p;
    const int B = p->B, T = p->T, K = p->K;
    L->nrowp = (size_t)(T + 1) * SC_PAD;
    L->fb = malloc(4 * (size_t)B * L->nrowp * sizeof(float));
    L->nblocks = 0;
    for (int b = 0; b < B; ++b) L->nblocks += (size_t)p->len[b];
    L->order = malloc(L->nblocks * sizeof *L->order);
    L->ws_e = L->det ? calloc((size_t)B * (size_t)T * (size_t)K * SC_PAD, sizeof(float)) : NULL;
    L->ws_g = L->det ? calloc((size_t)B * (size_t)T * SC_PAD * SC_PAD, sizeof(float)) : NULL;
    L->o->logZ = calloc((size_t)B, sizeof(float));
    if (!L->fb || !L->order || !L->o->logZ || (L->det && (!L->ws_e || !L->ws_g)))
        return lab_err_set(LAB_ERR_NOMEM, "semicrf: out of memory for the emulated kernel");
    L->alpha = L->fb;
    L->ain = L->fb + (size_t)B * L->nrowp;
    L->beta = L->fb + 2 * (size_t)B * L->nrowp;
    L->bout = L->fb + 3 * (size_t)B * L->nrowp;
    return LAB_OK;
}

/* The forward and backward kernels: alpha, ain, beta, bout and the float32 log Z of every element. */
static void sc_forward_backward(sc_launch *L)
{
    for (int b = 0; b < L->p->B; ++b) {
        size_t at = (size_t)b * L->nrowp;
        L->o->logZ[b] = sc_fwd_bwd_f(&L->ar, L->p, b, L->cfg->guards, L->alpha + at, L->ain + at, L->beta + at,
                                     L->bout + at);
    }
}

/* The schedule: blocks (b, s) in a seeded order (Fisher-Yates over lab_rng words of cfg->schedule_seed). */
static void sc_schedule(sc_launch *L)
{
    const lab_semicrf_problem *p = L->p;
    size_t *order = L->order, i = 0;
    for (int b = 0; b < p->B; ++b)
        for (int s = 0; s < p->len[b]; ++s) order[i++] = (size_t)b * (size_t)p->T + (size_t)s;
    for (size_t j = L->nblocks; j > 1; --j) {
        uint64_t u = ((uint64_t)lab_rng_u32(L->cfg->schedule_seed, LAB_SEMICRF_STREAM_SCHED, 2 * j) << 32) |
                     lab_rng_u32(L->cfg->schedule_seed, LAB_SEMICRF_STREAM_SCHED, 2 * j + 1);
        size_t r = (size_t)(u % j), t = order[j - 1];
        order[j - 1] = order[r];
        order[r] = t;
    }
}

/* Lanes sharing an address within one instruction (the contention the write-up worried about): in a row
 * atomic of C_PAD lanes and in the C_PAD x C_PAD transition tile's atomic. LAB_ERR_NOMEM. */
static lab_status sc_contention(sc_launch *L)
{
    const int C = L->p->C, clamped = L->clamped;
    const long W = L->W;
    long lane_addr[SC_PAD * SC_PAD];
    for (int c = 0; c < SC_PAD; ++c) lane_addr[c] = clamped ? (c < C ? c : C - 1) : c;
    L->shared_row = sc_shared_lanes(lane_addr, SC_PAD);
    for (int c = 0; c < SC_PAD; ++c)
        for (int c2 = 0; c2 < SC_PAD; ++c2) {
            long i = clamped ? (c < C ? c : C - 1) : c, j = clamped ? (c2 < C ? c2 : C - 1) : c2;
            lane_addr[c * SC_PAD + c2] = i * W + j;
        }
    L->shared_tile = 0;
    /* count by multiplicity of each address (W*W addresses at most) */
    size_t *mult = calloc((size_t)(SC_PAD * SC_PAD * 2), sizeof *mult);
    if (!mult) return lab_err_set(LAB_ERR_NOMEM, "semicrf: out of memory");
    for (int i = 0; i < SC_PAD * SC_PAD; ++i) mult[lane_addr[i]]++;
    for (int i = 0; i < SC_PAD * SC_PAD; ++i) L->shared_tile += mult[lane_addr[i]] > 1;
    free(mult);
    return LAB_OK;
}

/* Block (b, s), its segments: for k = 1..min(K, len - s) the marginal of every lane's segment [s, s + k),
 * masked per layout, added to start_sum[lane] and issued as atomics on g_cum (end), g_dur and g_pe (or,
 * deterministic, written to the block's workspace). */
static void sc_block_segments(sc_launch *L, int b, int s, float *start_sum)
{
    const lab_semicrf_problem *p = L->p;
    const int T = p->T, K = p->K, C = p->C, len = p->len[b];
    const int padded = L->padded, clamped = L->clamped, det = L->det;
    const long W = L->W;
    const unsigned guards = L->cfg->guards;
    const int nk = len - s < K ? len - s : K;
    const float *ai = L->ain + (size_t)b * L->nrowp, *be = L->beta + (size_t)b * L->nrowp;
    const float z = L->o->logZ[b];
    lab_semicrf_arena *ar = &L->ar;
    for (int k = 1; k <= nk; ++k) {
        for (int c = 0; c < SC_PAD; ++c) {
            int real = c < C;
            long rd = padded || clamped ? (real ? c : C - 1) : c;     /* read index of unpadded inputs */
            long li = clamped ? rd : c;                               /* lane index into padded internals */
            long wi = clamped ? rd : c;                               /* write index */
            float seg = sc_seg_f(ar, p, b, s, k, rd, C);
            float e = lab_semicrf_marginal_f32(ai[(size_t)s * SC_PAD + (size_t)li], seg,
                                               be[(size_t)(s + k) * SC_PAD + (size_t)li], z, guards);
            float v = padded ? (real ? e : 0.0f) : e * (float)real;
            start_sum[c] = start_sum[c] + v;
            if (det) {
                L->ws_e[(((size_t)b * (size_t)T + (size_t)s) * (size_t)K + (size_t)(k - 1)) * SC_PAD + (size_t)c] = v;
                continue;
            }
            int stray = !real && !padded && !clamped;
            lab_semicrf_arena_atomic_row(ar, A_GCUM, ((long)b * (T + 1) + s + k) * W + wi, v, stray);
            lab_semicrf_arena_atomic_row(ar, A_GDUR, (long)(k - 1) * W + wi, v, stray);
            if (p->use_proj) lab_semicrf_arena_atomic_row(ar, A_GPE, ((long)b * T + s + k - 1) * W + wi, v, stray);
        }
        L->o->same_addr_lanes += det ? 0 : L->shared_row * (p->use_proj ? 3 : 2);
    }
}

/* Block (b, s), its start: every lane's summed marginal as atomics on g_cum (start, negated) and g_ps (the
 * deterministic accumulation reduces the workspace instead). */
static void sc_block_start(sc_launch *L, int b, int s, const float *start_sum)
{
    const lab_semicrf_problem *p = L->p;
    const int T = p->T, C = p->C;
    const long W = L->W;
    for (int c = 0; c < SC_PAD; ++c) {
        long wi = L->clamped ? (c < C ? c : C - 1) : c;
        int stray = c >= C && !L->padded && !L->clamped;
        lab_semicrf_arena_atomic_row(&L->ar, A_GCUM, ((long)b * (T + 1) + s) * W + wi, -start_sum[c], stray);
        if (p->use_proj) lab_semicrf_arena_atomic_row(&L->ar, A_GPS, ((long)b * T + s) * W + wi, start_sum[c], stray);
    }
    L->o->same_addr_lanes += L->shared_row * (p->use_proj ? 2 : 1);
}

/* Block (b, s > 0), its transition tile: the marginal of every (previous class, class) lane pair at the
 * boundary s, masked per layout, as atomics on g_trans (or into the block's workspace). */
static void sc_block_transitions(sc_launch *L, int b, int s)
{
    const lab_semicrf_problem *p = L->p;
    const int T = p->T, C = p->C;
    const int padded = L->padded, clamped = L->clamped, det = L->det;
    const long W = L->W;
    const unsigned guards = L->cfg->guards;
    const float *al = L->alpha + (size_t)b * L->nrowp, *bo = L->bout + (size_t)b * L->nrowp;
    const float z = L->o->logZ[b];
    lab_semicrf_arena *ar = &L->ar;
    for (int c = 0; c < SC_PAD; ++c) {
        int rc = c < C;
        long ri = padded || clamped ? (rc ? c : C - 1) : c, li = clamped ? ri : c;
        float a = al[(size_t)s * SC_PAD + (size_t)li];
        for (int c2 = 0; c2 < SC_PAD; ++c2) {
            int real = rc && c2 < C;
            long rj = padded || clamped ? (c2 < C ? c2 : C - 1) : c2, lj = clamped ? rj : c2;
            float g = lab_semicrf_marginal_f32(a, lab_semicrf_arena_ld(ar, A_TRANS, ri * C + rj),
                                               bo[(size_t)s * SC_PAD + (size_t)lj], z, guards);
            float v = padded ? (real ? g : 0.0f) : g * (float)real;
            if (det) {
                L->ws_g[((size_t)b * (size_t)T + (size_t)s) * SC_PAD * SC_PAD + (size_t)c * SC_PAD + (size_t)c2] = v;
                continue;
            }
            long wi = clamped ? ri * W + rj : (long)c * W + c2;
            lab_semicrf_arena_atomic_row(ar, A_GTRANS, wi, v, !real && !padded && !clamped);
        }
    }
    L->o->same_addr_lanes += det ? 0 : L->shared_tile;
}

/* The marginal kernel: every block in the schedule's order. The first error of the heap (an access beyond
 * its guard zones) stops it and is returned. */
static lab_status sc_marginal_kernel(sc_launch *L)
{
    const int T = L->p->T;
    for (size_t bi = 0; bi < L->nblocks; ++bi) {
        int b = (int)(L->order[bi] / (size_t)T), s = (int)(L->order[bi] % (size_t)T);
        float start_sum[SC_PAD];
        for (int c = 0; c < SC_PAD; ++c) start_sum[c] = 0.0f;
        sc_block_segments(L, b, s, start_sum);
        if (!L->det) sc_block_start(L, b, s, start_sum);
        if (s > 0) sc_block_transitions(L, b, s); /* the first segment has no transition */
        if (L->ar.err != LAB_OK) return L->ar.err;
    }
    return LAB_OK;
}

/* The deterministic accumulation's reductions, in a fixed order whatever the schedule was: g_dur and g_trans
 * by a tree over the blocks (b, s), g_cum, g_ps and g_pe per position as ordered sums over k, written into
 * the gradient buffers. LAB_ERR_NOMEM. */
static lab_status sc_reduce_deterministic(sc_launch *L)
{
    const lab_semicrf_problem *p = L->p;
    const int B = p->B, T = p->T, K = p->K;
    const float *ws_e = L->ws_e;
    lab_semicrf_arena *ar = &L->ar;
    size_t nb = (size_t)B * (size_t)T;
    size_t we = (size_t)K * SC_PAD;
    float *tmp = malloc(nb * we * sizeof(float));
    if (!tmp) return lab_err_set(LAB_ERR_NOMEM, "semicrf: out of memory for the reductions");
    memcpy(tmp, ws_e, nb * we * sizeof(float));
    sc_tree_reduce(tmp, nb, we); /* duration bias: tree over blocks (b, s) */
    for (int k = 0; k < K; ++k)
        for (int c = 0; c < SC_PAD; ++c)
            lab_semicrf_arena_put_f32(ar, A_GDUR, (size_t)k * SC_PAD + (size_t)c, tmp[(size_t)k * SC_PAD + (size_t)c]);
    free(tmp);
    sc_tree_reduce(L->ws_g, nb, SC_PAD * SC_PAD); /* transitions: tree over blocks (b, s) */
    memcpy(ar->mem + ar->a[A_GTRANS].off, L->ws_g, SC_PAD * SC_PAD * sizeof(float));
    for (int b = 0; b < B; ++b)
        for (int t = 0; t <= T; ++t)
            for (int c = 0; c < SC_PAD; ++c) {
                /* ends at t: k = 1..K ascending; starts at t: its k-ordered sum */
                float end = 0.0f, start = 0.0f, pe = 0.0f;
                for (int k = 1; k <= K && k <= t; ++k)
                    end = end + ws_e[(((size_t)b * T + (size_t)(t - k)) * K + (size_t)(k - 1)) * SC_PAD + (size_t)c];
                if (t < T)
                    for (int k = 1; k <= K; ++k)
                        start = start + ws_e[(((size_t)b * T + (size_t)t) * K + (size_t)(k - 1)) * SC_PAD + (size_t)c];
                if (t < T)
                    for (int k = 1; k <= K && k <= t + 1; ++k)
                        pe = pe + ws_e[(((size_t)b * T + (size_t)(t + 1 - k)) * K + (size_t)(k - 1)) * SC_PAD + (size_t)c];
                float gcv = end - start;
                lab_semicrf_arena_put_f32(ar, A_GCUM, ((size_t)b * (T + 1) + (size_t)t) * SC_PAD + (size_t)c, gcv);
                if (t < T && p->use_proj) {
                    lab_semicrf_arena_put_f32(ar, A_GPS, ((size_t)b * T + (size_t)t) * SC_PAD + (size_t)c, start);
                    lab_semicrf_arena_put_f32(ar, A_GPE, ((size_t)b * T + (size_t)t) * SC_PAD + (size_t)c, pe);
                }
            }
    return LAB_OK;
}

/* Padded layout: the values in the gradient buffers' padding columns (class >= C, rows of W = C_PAD) that are
 * not 0. The slice drops those columns, so this is the only place a padding lane's unmasked write shows. */
static size_t sc_pad_nonzero(const sc_launch *L)
{
    const lab_semicrf_problem *p = L->p;
    const size_t W = (size_t)L->W, C = (size_t)p->C, npos = (size_t)p->B * (size_t)p->T;
    const size_t rows[5] = {(size_t)p->B * (size_t)(p->T + 1), W, (size_t)p->K, p->use_proj ? npos : 0,
                            p->use_proj ? npos : 0};
    static const int bufs[5] = {A_GCUM, A_GTRANS, A_GDUR, A_GPS, A_GPE};
    size_t n = 0;
    for (int k = 0; k < 5; ++k)
        for (size_t r = 0; r < rows[k]; ++r)
            for (size_t c = 0; c < W; ++c) {
                /* every column of the transition tile's padding rows is padding too */
                if (c < C && !(bufs[k] == A_GTRANS && r >= C)) continue;
                n += lab_semicrf_arena_get(&L->ar, bufs[k], r * W + c) != 0.0;
            }
    return n;
}

/* The outputs: the gradient buffers sliced back to C (float64 accumulators rounded to float32 and kept
 * beside). LAB_ERR_NOMEM. */
static lab_status sc_slice_out(sc_launch *L)
{
    const lab_semicrf_problem *p = L->p;
    const int B = p->B, T = p->T, K = p->K, C = p->C;
    const size_t W = (size_t)L->W;
    const lab_semicrf_arena *ar = &L->ar;
    lab_semicrf_out *o = L->o;
    size_t ncum = (size_t)B * (size_t)(T + 1) * (size_t)C, npos = (size_t)B * (size_t)T * (size_t)C;
    o->g_cum = malloc(ncum * sizeof(float));
    o->g_trans = malloc((size_t)C * (size_t)C * sizeof(float));
    o->g_dur = malloc((size_t)K * (size_t)C * sizeof(float));
    o->g_ps = malloc(npos * sizeof(float));
    o->g_pe = malloc(npos * sizeof(float));
    if (L->gsz == 8) {
        o->acc_cum = malloc(ncum * sizeof(double));
        o->acc_trans = malloc((size_t)C * (size_t)C * sizeof(double));
        o->acc_dur = malloc((size_t)K * (size_t)C * sizeof(double));
    }
    if (!o->g_cum || !o->g_trans || !o->g_dur || !o->g_ps || !o->g_pe ||
        (L->gsz == 8 && (!o->acc_cum || !o->acc_trans || !o->acc_dur)))
        return lab_err_set(LAB_ERR_NOMEM, "semicrf: out of memory for the outputs");
    for (size_t r = 0; r < (size_t)B * (size_t)(T + 1); ++r)
        for (int c = 0; c < C; ++c) {
            double v = lab_semicrf_arena_get(ar, A_GCUM, r * W + (size_t)c);
            o->g_cum[r * (size_t)C + (size_t)c] = (float)v;
            if (o->acc_cum) o->acc_cum[r * (size_t)C + (size_t)c] = v;
        }
    for (int i = 0; i < C; ++i)
        for (int j = 0; j < C; ++j) {
            double v = lab_semicrf_arena_get(ar, A_GTRANS, (size_t)i * W + (size_t)j);
            o->g_trans[(size_t)i * C + (size_t)j] = (float)v;
            if (o->acc_trans) o->acc_trans[(size_t)i * C + (size_t)j] = v;
        }
    for (int k = 0; k < K; ++k)
        for (int c = 0; c < C; ++c) {
            double v = lab_semicrf_arena_get(ar, A_GDUR, (size_t)k * W + (size_t)c);
            o->g_dur[(size_t)k * C + (size_t)c] = (float)v;
            if (o->acc_dur) o->acc_dur[(size_t)k * C + (size_t)c] = v;
        }
    for (size_t r = 0; r < (size_t)B * (size_t)T; ++r)
        for (int c = 0; c < C; ++c) {
            o->g_ps[r * (size_t)C + (size_t)c] = p->use_proj ? (float)lab_semicrf_arena_get(ar, A_GPS, r * W + (size_t)c) : 0.0f;
            o->g_pe[r * (size_t)C + (size_t)c] = p->use_proj ? (float)lab_semicrf_arena_get(ar, A_GPE, r * W + (size_t)c) : 0.0f;
        }
    if (L->padded) o->pad_nonzero = sc_pad_nonzero(L);
    return LAB_OK;
}

/* Frees the launch's working memory and heap (not the outputs). */
static void sc_launch_free(sc_launch *L)
{
    free(L->fb);
    free(L->order);
    free(L->ws_e);
    free(L->ws_g);
    lab_semicrf_arena_free(&L->ar);
}

lab_status lab_semicrf_emulate(const lab_semicrf_problem *p, const lab_semicrf_config *cfg, lab_semicrf_out *o)
{
    memset(o, 0, sizeof *o);
    lab_status st = sc_check_config(p, cfg);
    if (st != LAB_OK) return st;
    sc_launch L;
    memset(&L, 0, sizeof L);
    L.p = p, L.cfg = cfg, L.o = o;
    L.padded = cfg->layout == LAB_SEMICRF_LAYOUT_PADDED;
    L.clamped = cfg->layout == LAB_SEMICRF_LAYOUT_CLAMPED;
    L.det = cfg->accum == LAB_SEMICRF_ACC_DETERMINISTIC;
    L.W = L.padded ? SC_PAD : p->C;
    L.gsz = cfg->accum == LAB_SEMICRF_ACC_F64_ATOMIC ? 8 : 4;

    if ((st = sc_heap_init(&L)) != LAB_OK) return st;
    if ((st = sc_work_alloc(&L)) == LAB_OK) {
        sc_forward_backward(&L);
        sc_schedule(&L);
        st = sc_contention(&L);
    }
    if (st == LAB_OK) st = sc_marginal_kernel(&L);
    if (st == LAB_OK && L.det) st = sc_reduce_deterministic(&L);
    if (st == LAB_OK) st = sc_slice_out(&L);
    sc_launch_free(&L);
    if (st != LAB_OK) lab_semicrf_out_free(o);
    return st;
}
