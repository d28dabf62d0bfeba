/* lab_semicrf (CUDA): the semi-Markov CRF kernels on the GPU: forward, backward, the marginal kernel with real atomicAdd (float32, float64), the deterministic accumulation (fixed-order sums organised by destination, no atomics), and the benchmark. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "lab_cuda.h"
#include "lab_semicrf.h"

#define SG_PAD LAB_SEMICRF_C_PAD
#define SG_THREADS 256                   /* marginal kernel: 4 groups of C_PAD lanes */
#define SG_KGROUPS (SG_THREADS / SG_PAD)
#define SG_GUARD_WORDS 2048              /* guard zone each side of a guarded allocation (>= 1056 strays) */
/* Farthest a stray access of any layout reaches past its allocation: 1056 elements of up to 8 bytes (the
 * unpadded transition tile, as in the CPU emulation). A gradient guard zone is SG_GUARD_WORDS * 8 bytes,
 * so its words from this offset on are a tripwire: any change there means a write went farther than the
 * index arithmetic allows, and the case cannot vouch that it stayed inside its own memory. */
#define SG_STRAY_REACH_BYTES (1056 * 8)

/* ---- device helpers (the same arithmetic as lab_semicrf.c) ---------------------------------------- */

__device__ float sg_lse(const float *x, int n, unsigned guards)
{
    float m = x[0];
    for (int i = 1; i < n; ++i) m = x[i] > m ? x[i] : m;
    int all_neginf = m < LAB_SEMICRF_NEG_INF + 1.0f;
    float msafe = (guards & LAB_SEMICRF_GUARD_NEGINF) && all_neginf ? 0.0f : m;
    float s = 0.0f;
    for (int i = 0; i < n; ++i) s = __fadd_rn(s, expf(__fsub_rn(x[i], msafe)));
    if (guards & LAB_SEMICRF_GUARD_EPS) s = __fadd_rn(s, 1e-10f);
    float r = __fadd_rn(msafe, logf(s));
    if ((guards & LAB_SEMICRF_GUARD_NEGINF) && all_neginf) r = LAB_SEMICRF_NEG_INF;
    return r;
}

__device__ float sg_clamp(float x, float lo, float hi)
{
    if (x != x) return x;
    return x < lo ? lo : (x > hi ? hi : x);
}

__device__ float sg_marginal(float a, float edge, float b, float logZ, unsigned guards)
{
    if (guards & LAB_SEMICRF_GUARD_CLAMP_IN) {
        a = sg_clamp(a, -1e6f, 1e6f);
        edge = sg_clamp(edge, -1e6f, 1e6f);
        b = sg_clamp(b, -1e6f, 1e6f);
    }
    float lm = __fsub_rn(__fadd_rn(__fadd_rn(a, edge), b), logZ);
    if (guards & LAB_SEMICRF_GUARD_CLAMP_LOG) lm = sg_clamp(lm, -80.0f, 80.0f);
    return expf(lm);
}

/* Inputs as the kernels see them: pointers to element 0 (guard zones, where present, lie around them). */
struct sg_inputs {
    const float *cum, *trans, *dur, *ps, *pe;
    const int *len;
    int B, T, K, C, use_proj;
    long n_cum, n_trans, n_dur, n_pos;   /* elements of each input allocation */
    unsigned long long *oob;             /* [0] loads, [1] atomics outside their allocation */
    int check;                           /* count them (stray layouts only; the access happens anyway) */
};

/* A load of x[i] from an allocation of n elements; counted when outside it (the lab's instrumentation,
 * like the CPU emulation's address check; the load itself is the kernel's). */
__device__ float sg_ld(const sg_inputs &in, const float *x, long n, long i)
{
    if (in.check && (i < 0 || i >= n)) atomicAdd(&in.oob[0], 1ull);
    return x[i];
}

__device__ float sg_seg(const sg_inputs &in, int b, int s, int k, long rd)
{
    long C = in.C, T = in.T;
    float v = __fsub_rn(sg_ld(in, in.cum, in.n_cum, ((long)b * (T + 1) + s + k) * C + rd),
                        sg_ld(in, in.cum, in.n_cum, ((long)b * (T + 1) + s) * C + rd));
    v = __fadd_rn(v, sg_ld(in, in.dur, in.n_dur, (long)(k - 1) * C + rd));
    if (in.use_proj) {
        v = __fadd_rn(v, sg_ld(in, in.ps, in.n_pos, ((long)b * T + s) * C + rd));
        v = __fadd_rn(v, sg_ld(in, in.pe, in.n_pos, ((long)b * T + s + k - 1) * C + rd));
    }
    return v;
}

/* Forward and backward passes, one block of C_PAD threads per batch element; lane c owns class c. Arrays
 * alpha, ain, beta, bout are [B][T+1][C_PAD], pre-filled with NEG_INF. */
__global__ void sg_fwd_bwd(sg_inputs in, unsigned guards, float *alpha, float *ain, float *beta, float *bout, float *logZ)
{
    int b = blockIdx.x, c = threadIdx.x, C = in.C, K = in.K, L = in.len[b];
    size_t base = (size_t)b * (size_t)(in.T + 1) * SG_PAD;
    float *al = alpha + base, *ai = ain + base, *be = beta + base, *bo = bout + base;
    __shared__ float zs;
    float tmp[SG_PAD > LAB_SEMICRF_K_MAX ? SG_PAD : LAB_SEMICRF_K_MAX];
    if (c < C) al[c] = 0.0f, ai[c] = 0.0f;
    __syncthreads();
    for (int t = 1; t <= L; ++t) {
        int nk = t < K ? t : K;
        if (c < C) {
            for (int k = 1; k <= nk; ++k) tmp[k - 1] = __fadd_rn(sg_seg(in, b, t - k, k, c), ai[(size_t)(t - k) * SG_PAD + c]);
            al[(size_t)t * SG_PAD + c] = sg_lse(tmp, nk, guards);
        }
        __syncthreads();
        if (c < C) {
            for (int i = 0; i < C; ++i) tmp[i] = __fadd_rn(al[(size_t)t * SG_PAD + i], in.trans[(long)i * C + c]);
            ai[(size_t)t * SG_PAD + c] = sg_lse(tmp, C, guards);
        }
        __syncthreads();
    }
    if (c == 0) {
        zs = sg_lse(al + (size_t)L * SG_PAD, C, guards);
        logZ[b] = zs;
    }
    if (c < C) be[(size_t)L * SG_PAD + c] = 0.0f;
    __syncthreads();
    for (int t = L - 1; t >= 0; --t) {
        int nk = L - t < K ? L - t : K;
        if (c < C) {
            for (int k = 1; k <= nk; ++k) tmp[k - 1] = __fadd_rn(sg_seg(in, b, t, k, c), be[(size_t)(t + k) * SG_PAD + c]);
            bo[(size_t)t * SG_PAD + c] = sg_lse(tmp, nk, guards);
        }
        __syncthreads();
        if (c < C) {
            for (int j = 0; j < C; ++j) tmp[j] = __fadd_rn(in.trans[(long)c * C + j], bo[(size_t)t * SG_PAD + j]);
            be[(size_t)t * SG_PAD + c] = sg_lse(tmp, C, guards);
        }
        __syncthreads();
    }
}

/* Gradient destinations: float or double buffers of row width W, or the deterministic workspaces. */
struct sg_grads {
    void *cum, *trans, *dur, *ps, *pe;   /* element 0 of each (guard zones around, where guarded) */
    int f64;
    float *ws_e;                         /* [B][T][K][C_PAD] deterministic only */
    float *ws_g;                         /* [B*T][C_PAD][C_PAD] deterministic only */
    long W;
    long n_cum, n_trans, n_dur, n_pos;   /* elements of each gradient allocation */
};

__device__ void sg_atomic(const sg_inputs &in, const sg_grads &g, void *buf, long n, long i, float v)
{
    if (in.check && (i < 0 || i >= n)) atomicAdd(&in.oob[1], 1ull); /* counted; the atomic still happens */
    if (g.f64)
        atomicAdd((double *)buf + i, (double)v);
    else
        atomicAdd((float *)buf + i, v);
}

/* The marginal kernel: block (s, b), SG_THREADS threads = SG_KGROUPS groups of C_PAD lanes. Layout 0
 * unpadded, 1 clamped, 2 padded (lab_semicrf_layout); det: write workspaces instead of atomics. */
__global__ void sg_marginals(sg_inputs in, unsigned guards, int layout, int det, const float *alpha, const float *ain,
                             const float *beta, const float *bout, const float *logZ, sg_grads g)
{
    int s = blockIdx.x, b = blockIdx.y, L = in.len[b];
    int C = in.C, K = in.K, T = in.T;
    if (s >= L) {
        /* no segment starts here; the deterministic workspaces get zeros (they are not cleared) */
        if (det) {
            for (int i = threadIdx.x; i < K * SG_PAD; i += SG_THREADS) g.ws_e[((size_t)b * T + s) * K * SG_PAD + i] = 0.0f;
            for (int i = threadIdx.x; i < SG_PAD * SG_PAD; i += SG_THREADS) g.ws_g[((size_t)b * T + s) * SG_PAD * SG_PAD + i] = 0.0f;
        }
        return;
    }
    int padded = layout == LAB_SEMICRF_LAYOUT_PADDED, clamped = layout == LAB_SEMICRF_LAYOUT_CLAMPED;
    long W = g.W;
    size_t base = (size_t)b * (size_t)(T + 1) * SG_PAD;
    const float *al = alpha + base, *ai = ain + base, *be = beta + base, *bo = bout + base;
    float z = logZ[b];
    int lane = threadIdx.x % SG_PAD, kg = threadIdx.x / SG_PAD;
    int nk = L - s < K ? L - s : K;
    __shared__ float part[SG_KGROUPS][SG_PAD];
    int real = lane < C;
    long rd = padded || clamped ? (real ? lane : C - 1) : lane;
    long li = clamped ? rd : lane, wi = clamped ? rd : lane;
    float mysum = 0.0f;
    for (int k = 1 + kg; k <= nk; k += SG_KGROUPS) {
        float seg = sg_seg(in, b, s, k, rd);
        float e = sg_marginal(ai[(size_t)s * SG_PAD + li], seg, be[(size_t)(s + k) * SG_PAD + li], z, guards);
        float v = padded ? (real ? e : 0.0f) : e * (float)real;
        mysum = __fadd_rn(mysum, v);
        if (det) {
            g.ws_e[(((size_t)b * T + s) * K + (k - 1)) * SG_PAD + lane] = v;
            continue;
        }
        sg_atomic(in, g, g.cum, g.n_cum, ((long)b * (T + 1) + s + k) * W + wi, v);
        sg_atomic(in, g, g.dur, g.n_dur, (long)(k - 1) * W + wi, v);
        if (in.use_proj) sg_atomic(in, g, g.pe, g.n_pos, ((long)b * T + s + k - 1) * W + wi, v);
    }
    if (det)
        for (int k = 1 + kg; k <= K; k += SG_KGROUPS)
            if (k > nk) g.ws_e[(((size_t)b * T + s) * K + (k - 1)) * SG_PAD + lane] = 0.0f;
    part[kg][lane] = mysum;
    __syncthreads();
    if (kg == 0 && !det) {
        float S = part[0][lane];
        for (int q = 1; q < SG_KGROUPS; ++q) S = __fadd_rn(S, part[q][lane]);
        sg_atomic(in, g, g.cum, g.n_cum, ((long)b * (T + 1) + s) * W + wi, -S);
        if (in.use_proj) sg_atomic(in, g, g.ps, g.n_pos, ((long)b * T + s) * W + wi, S);
    }
    if (s == 0) {
        if (det)
            for (int i = threadIdx.x; i < SG_PAD * SG_PAD; i += SG_THREADS) g.ws_g[(size_t)b * T * SG_PAD * SG_PAD + i] = 0.0f;
        return;
    }
    for (int e = threadIdx.x; e < SG_PAD * SG_PAD; e += SG_THREADS) {
        int c = e / SG_PAD, c2 = e % SG_PAD;
        int rc = c < C, r2 = c2 < C, both = rc && r2;
        long ri = padded || clamped ? (rc ? c : C - 1) : c, rj = padded || clamped ? (r2 ? c2 : C - 1) : c2;
        long lci = clamped ? ri : c, lcj = clamped ? rj : c2;
        float m = sg_marginal(al[(size_t)s * SG_PAD + lci], sg_ld(in, in.trans, in.n_trans, ri * C + rj),
                              bo[(size_t)s * SG_PAD + lcj], z, guards);
        float v = padded ? (both ? m : 0.0f) : m * (float)both;
        if (det) {
            g.ws_g[((size_t)b * T + s) * SG_PAD * SG_PAD + e] = v;
            continue;
        }
        long wix = clamped ? ri * W + rj : (long)c * W + c2;
        sg_atomic(in, g, g.trans, g.n_trans, wix, v);
    }
}

/* ---- the deterministic accumulation as it was (sg_det_v1: the bench's "before") ----------------------
 * The marginal kernel writes per-block workspaces (ws_e, ws_g: 385 MB at B = 32, T = 500), then these reduce
 * them: a pairwise tree over blocks, per-position sums in k order (the CPU emulation's order). */

/* One level of the fixed pairwise tree over n rows of w floats: row i += row i + h for i % 2h == 0. */
__global__ void sg_tree_level(float *rows, size_t n, size_t w, size_t h)
{
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t pairs = (n + 2 * h - 1) / (2 * h);
    if (idx >= pairs * w) return;
    size_t i = (idx / w) * 2 * h, j = idx % w;
    if (i + h < n) rows[i * w + j] = __fadd_rn(rows[i * w + j], rows[(i + h) * w + j]);
}

/* Deterministic per-position sums from the end-marginal workspace, in k order (as lab_semicrf.c). */
__global__ void sg_det_positions(const float *ws_e, int B, int T, int K, int use_proj, float *gcum, float *gps, float *gpe)
{
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t total = (size_t)B * (size_t)(T + 1) * SG_PAD;
    if (idx >= total) return;
    int c = (int)(idx % SG_PAD), t = (int)((idx / SG_PAD) % (size_t)(T + 1)), b = (int)(idx / SG_PAD / (size_t)(T + 1));
    float end = 0.0f, start = 0.0f, pe = 0.0f;
    for (int k = 1; k <= K && k <= t; ++k) end = __fadd_rn(end, ws_e[(((size_t)b * T + (t - k)) * K + (k - 1)) * SG_PAD + c]);
    if (t < T) {
        for (int k = 1; k <= K; ++k) start = __fadd_rn(start, ws_e[(((size_t)b * T + t) * K + (k - 1)) * SG_PAD + c]);
        for (int k = 1; k <= K && k <= t + 1; ++k) pe = __fadd_rn(pe, ws_e[(((size_t)b * T + (t + 1 - k)) * K + (k - 1)) * SG_PAD + c]);
    }
    gcum[idx] = __fsub_rn(end, start);
    if (t < T && use_proj) {
        gps[((size_t)b * T + t) * SG_PAD + c] = start;
        gpe[((size_t)b * T + t) * SG_PAD + c] = pe;
    }
}

/* ---- the deterministic accumulation (production) ---------------------------------------------------
 * No atomics and no per-block workspace: every gradient entry is computed by one thread in an order fixed
 * by the data and three compile-time constants, whatever the grid, the block size or the schedule:
 * - start sums (g_ps, and g_cum's minus part) and end sums (g_cum's plus part, g_pe): organised by
 *   destination. The thread of (b, s, c) sums e(b, s, k, c) over k = 1..nk ascending; the thread of
 *   (b, t, c) recomputes the marginals of the segments ending at t, e(b, t - k, k, c), and sums them over k
 *   ascending. g_pe[t - 1] is that end sum, g_cum[t] = end - start.
 * - duration bias: the rows (b, s) in flat order i = b * T + s are cut into chunks of SG_DET_ROWS_D rows;
 *   per chunk and (k, c) one thread sums its rows in ascending i (registers), giving a partial; then
 *   sg_det_reduce sums the partials of an entry in SG_DET_STRANDS strands (strand j: partials j, j + S,
 *   j + 2S, ... ascending) and adds the strands in a fixed pairwise tree (h = 1, 2, 4, 8).
 * - transitions: the same over chunks of SG_DET_ROWS_T rows, one thread per (chunk, c, 4 columns c2).
 * Rows past a sequence's end and s = 0 (no transition) contribute nothing; padding lanes get zeros. The
 * marginals are sg_marginal of the same operands as the atomic kernels (recomputed ones are bitwise the same
 * value). Workspace: the partials, P_D x K x C_PAD + P_T x C_PAD x C_PAD floats (15.6 MB at B = 32, T = 500,
 * against 385 MB for the per-block workspaces of sg_det_v1). Bitwise reproducible because no sum depends
 * on which thread or block computes it, nor on when: there is no atomic and no cross-thread accumulation
 * except the fixed tree. tests/test_bench.c checks identical bits across launch configurations. */
#define SG_DET_ROWS_D 16
#define SG_DET_ROWS_T 32
#define SG_DET_STRANDS 16

/* Grid-stride index over n work items. */
#define SG_FOR(w, n) for (long w = (long)blockIdx.x * blockDim.x + threadIdx.x; w < (n); w += (long)gridDim.x * blockDim.x)

/* Start sums into start[B*T][C_PAD] and duration-bias partials dur_part[P_D][K][C_PAD]: work item (chunk p, c). */
__global__ void __launch_bounds__(512) sg_det_starts_dur(sg_inputs in, unsigned guards, const float *__restrict__ ain, const float *__restrict__ beta,
                                  const float *__restrict__ logZ, float *__restrict__ start, float *__restrict__ dur_part, long n_chunks)
{
    const int C = in.C, K = in.K, T = in.T;
    const long BT = (long)in.B * T;
    SG_FOR(w, n_chunks * C)
    {
        long p = w / C;
        int c = (int)(w % C);
        float acc[LAB_SEMICRF_K_MAX];
#pragma unroll
        for (int k = 0; k < LAB_SEMICRF_K_MAX; ++k) acc[k] = 0.0f;
        for (long i = p * SG_DET_ROWS_D; i < (p + 1) * SG_DET_ROWS_D && i < BT; ++i) {
            int b = (int)(i / T), s = (int)(i % T), L = in.len[b];
            float st = 0.0f;
            if (s < L) {
                int nk = L - s < K ? L - s : K;
                size_t base = (size_t)b * (size_t)(T + 1) * SG_PAD;
                long crow = (long)b * (T + 1);
                float a = ain[base + (size_t)s * SG_PAD + c], z = logZ[b];
                float cs = in.cum[(crow + s) * C + c];
                float ps = in.use_proj ? in.ps[((long)b * T + s) * C + c] : 0.0f;
#pragma unroll
                for (int k = 1; k <= LAB_SEMICRF_K_MAX; ++k) {
                    if (k <= nk) {
                        /* sg_seg's arithmetic, its s-terms hoisted */
                        float v = __fsub_rn(in.cum[(crow + s + k) * C + c], cs);
                        v = __fadd_rn(v, in.dur[(long)(k - 1) * C + c]);
                        if (in.use_proj) {
                            v = __fadd_rn(v, ps);
                            v = __fadd_rn(v, in.pe[((long)b * T + s + k - 1) * C + c]);
                        }
                        float e = sg_marginal(a, v, beta[base + (size_t)(s + k) * SG_PAD + c], z, guards);
                        st = __fadd_rn(st, e);
                        acc[k - 1] = __fadd_rn(acc[k - 1], e);
                    }
                }
            }
            start[(size_t)i * SG_PAD + c] = st;
            for (int pl = C + c; pl < SG_PAD; pl += C) start[(size_t)i * SG_PAD + pl] = 0.0f;
        }
#pragma unroll
        for (int k = 0; k < LAB_SEMICRF_K_MAX; ++k)
            if (k < K) dur_part[((size_t)p * K + k) * SG_PAD + c] = acc[k];
    }
}

/* End sums: work item (b, t, c), t = 0..T: g_cum[b][t] = end - start, g_pe[b][t - 1] = end (padding lanes 0). */
__global__ void sg_det_ends(sg_inputs in, unsigned guards, const float *__restrict__ ain, const float *__restrict__ beta,
                            const float *__restrict__ logZ, const float *__restrict__ start, float *__restrict__ gcum,
                            float *__restrict__ gpe)
{
    const int C = in.C, K = in.K, T = in.T;
    SG_FOR(w, (long)in.B * (T + 1) * C)
    {
        int c = (int)(w % C);
        long bt = w / C;
        int t = (int)(bt % (T + 1)), b = (int)(bt / (T + 1)), L = in.len[b];
        long crow = (long)b * (T + 1);
        float end = 0.0f;
        if (t <= L) {
            int nk = t < K ? t : K;
            size_t base = (size_t)b * (size_t)(T + 1) * SG_PAD;
            float z = logZ[b], be = beta[base + (size_t)t * SG_PAD + c], ct = in.cum[(crow + t) * C + c];
            float pe = in.use_proj && t >= 1 ? in.pe[((long)b * T + t - 1) * C + c] : 0.0f;
#pragma unroll
            for (int k = 1; k <= LAB_SEMICRF_K_MAX; ++k) {
                if (k <= nk) {
                    int s = t - k;
                    float v = __fsub_rn(ct, in.cum[(crow + s) * C + c]);
                    v = __fadd_rn(v, in.dur[(long)(k - 1) * C + c]);
                    if (in.use_proj) {
                        v = __fadd_rn(v, in.ps[((long)b * T + s) * C + c]);
                        v = __fadd_rn(v, pe);
                    }
                    end = __fadd_rn(end, sg_marginal(ain[base + (size_t)s * SG_PAD + c], v, be, z, guards));
                }
            }
        }
        float st = t < T ? start[((size_t)b * T + t) * SG_PAD + c] : 0.0f;
        size_t row = (size_t)bt * SG_PAD;
        gcum[row + c] = __fsub_rn(end, st);
        for (int pl = C + c; pl < SG_PAD; pl += C) gcum[row + pl] = 0.0f;
        if (t >= 1) {
            size_t prow = ((size_t)b * T + t - 1) * SG_PAD;
            gpe[prow + c] = end;
            for (int pl = C + c; pl < SG_PAD; pl += C) gpe[prow + pl] = 0.0f;
        }
    }
}

/* Transition partials trans_part[P_T][C_PAD][C_PAD] (real entries only): work item (chunk p, c, columns 4q..4q+3). */
__global__ void sg_det_trans_part(sg_inputs in, unsigned guards, const float *__restrict__ alpha, const float *__restrict__ bout,
                                  const float *__restrict__ logZ, float *__restrict__ part, long n_chunks)
{
    const int C = in.C, T = in.T, Q = (C + 3) / 4;
    const long BT = (long)in.B * T;
    SG_FOR(w, n_chunks * C * Q)
    {
        int q = (int)(w % Q), c = (int)((w / Q) % C);
        long p = w / ((long)Q * C);
        float tr[4], acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int j = 0; j < 4; ++j) tr[j] = 4 * q + j < C ? in.trans[(long)c * C + 4 * q + j] : 0.0f;
        for (long i = p * SG_DET_ROWS_T; i < (p + 1) * SG_DET_ROWS_T && i < BT; ++i) {
            int b = (int)(i / T), s = (int)(i % T);
            if (s == 0 || s >= in.len[b]) continue; /* no transition into the first segment; no segment starts */
            size_t row = ((size_t)b * (size_t)(T + 1) + s) * SG_PAD;
            float a = alpha[row + c], z = logZ[b];
            float4 bo = *(const float4 *)(bout + row + 4 * q);
            float bv[4] = {bo.x, bo.y, bo.z, bo.w};
#pragma unroll
            for (int j = 0; j < 4; ++j)
                if (4 * q + j < C) acc[j] = __fadd_rn(acc[j], sg_marginal(a, tr[j], bv[j], z, guards));
        }
#pragma unroll
        for (int j = 0; j < 4; ++j)
            if (4 * q + j < C) part[(size_t)p * SG_PAD * SG_PAD + (size_t)c * SG_PAD + 4 * q + j] = acc[j];
    }
}

/* out[rows][C_PAD] = sum over the n_part partials (stride floats apart) of each real entry (row < real_rows,
 * column < C), zero elsewhere. Block (32, SG_DET_STRANDS): strand j sums partials j, j + S, ... ascending, then
 * a fixed pairwise tree over the strands. Any grid. */
__global__ void sg_det_reduce(const float *__restrict__ part, long n_part, size_t stride, int rows, int real_rows, int C,
                              float *__restrict__ out)
{
    __shared__ float sm[SG_DET_STRANDS][32];
    const int x = threadIdx.x, y = threadIdx.y;
    for (long e0 = (long)blockIdx.x * 32; e0 < (long)rows * SG_PAD; e0 += (long)gridDim.x * 32) {
        long e = e0 + x;
        int r = (int)(e / SG_PAD), col = (int)(e % SG_PAD);
        int real = e < (long)rows * SG_PAD && r < real_rows && col < C;
        float sum = 0.0f;
        if (real) {
#pragma unroll 4
            for (long p = y; p < n_part; p += SG_DET_STRANDS) sum = __fadd_rn(sum, part[(size_t)p * stride + e]);
        }
        sm[y][x] = sum;
        __syncthreads();
        for (int h = 1; h < SG_DET_STRANDS; h <<= 1) {
            if (y % (2 * h) == 0) sm[y][x] = __fadd_rn(sm[y][x], sm[y + h][x]);
            __syncthreads();
        }
        if (y == 0 && e < (long)rows * SG_PAD) out[e] = real ? sm[0][x] : 0.0f;
        __syncthreads();
    }
}

/* ---- host side ------------------------------------------------------------------------------------- */

/* A device allocation with optional guard zones; `p` points at element 0. */
struct sg_buf {
    unsigned char *base = nullptr;
    void *p = nullptr;
    size_t bytes = 0, guard_bytes = 0;
    std::vector<uint32_t> head, tail; /* a guarded gradient buffer: its guard zones as written */
};

static lab_status sg_alloc(sg_buf *b, size_t bytes, size_t guard_bytes)
{
    b->bytes = bytes;
    b->guard_bytes = guard_bytes;
    LAB_CUDA_CHECK(cudaMalloc((void **)&b->base, bytes + 2 * guard_bytes + 16));
    b->p = b->base + guard_bytes;
    return LAB_OK;
}

static void sg_free(sg_buf *b)
{
    if (b->base) cudaFree(b->base);
    b->base = nullptr;
    b->p = nullptr;
}

/* Uploads an input of n floats; guarded: the zones hold the seed's neighbour contents. */
static lab_status sg_upload_input(sg_buf *b, const float *x, size_t n, int guarded, uint64_t seed, uint64_t zone)
{
    size_t gb = guarded ? SG_GUARD_WORDS * 4 : 0;
    lab_status st = sg_alloc(b, n * 4, gb);
    if (st != LAB_OK) return st;
    if (guarded) {
        std::vector<float> g(SG_GUARD_WORDS);
        lab_semicrf_guard_fill(g.data(), SG_GUARD_WORDS, seed, 0x40000000ull * zone);
        LAB_CUDA_CHECK(cudaMemcpy(b->base, g.data(), gb, cudaMemcpyHostToDevice));
        lab_semicrf_guard_fill(g.data(), SG_GUARD_WORDS, seed, 0x40000000ull * zone + 0x20000000ull);
        LAB_CUDA_CHECK(cudaMemcpy((unsigned char *)b->p + n * 4, g.data(), gb, cudaMemcpyHostToDevice));
    }
    LAB_CUDA_CHECK(cudaMemcpy(b->p, x, n * 4, cudaMemcpyHostToDevice));
    return LAB_OK;
}

/* Gradient buffer of n elements of esz bytes, zeroed. Unguarded: exactly n elements, so an atomic past it
 * is outside its cudaMalloc, where compute-sanitizer memcheck reports it. Guarded: between guard zones of
 * the seed's neighbour contents (as the CPU emulation's arena), kept on the host for sg_guard_breach. */
static lab_status sg_alloc_grad(sg_buf *b, size_t n, size_t esz, int guarded, uint64_t seed, uint64_t zone)
{
    size_t gb = guarded ? SG_GUARD_WORDS * 8 : 0;
    lab_status st = sg_alloc(b, n * esz, gb);
    if (st != LAB_OK) return st;
    LAB_CUDA_CHECK(cudaMemset(b->p, 0, n * esz));
    if (guarded) {
        b->head.resize(gb / 4);
        b->tail.resize(gb / 4);
        lab_semicrf_guard_fill(b->head.data(), gb / 4, seed, 0x40000000ull * zone);
        lab_semicrf_guard_fill(b->tail.data(), gb / 4, seed, 0x40000000ull * zone + 0x20000000ull);
        LAB_CUDA_CHECK(cudaMemcpy(b->base, b->head.data(), gb, cudaMemcpyHostToDevice));
        LAB_CUDA_CHECK(cudaMemcpy((unsigned char *)b->p + n * esz, b->tail.data(), gb, cudaMemcpyHostToDevice));
    }
    return LAB_OK;
}

/* Words of a guarded gradient buffer's zones changed where no stray may reach: the whole head zone (no
 * index is negative) and the tail zone from SG_STRAY_REACH_BYTES on. 0 for an unguarded buffer. */
static lab_status sg_guard_breach(const sg_buf *b, size_t *breach)
{
    if (b->tail.empty()) return LAB_OK;
    std::vector<uint32_t> h(b->head.size()), t(b->tail.size());
    LAB_CUDA_CHECK(cudaMemcpy(h.data(), b->base, h.size() * 4, cudaMemcpyDeviceToHost));
    LAB_CUDA_CHECK(cudaMemcpy(t.data(), (unsigned char *)b->p + b->bytes, t.size() * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < h.size(); ++i) *breach += h[i] != b->head[i];
    for (size_t i = SG_STRAY_REACH_BYTES / 4; i < t.size(); ++i) *breach += t[i] != b->tail[i];
    return LAB_OK;
}

/* Everything one run needs on the device. */
struct sg_state {
    sg_buf cum, trans, dur, ps, pe, len;
    sg_buf alpha, ain, beta, bout, logz;
    sg_buf gcum, gtrans, gdur, gps, gpe, wse, wsg, oob, dpart, tpart;
    ~sg_state()
    {
        sg_buf *all[] = {&cum, &trans, &dur, &ps, &pe, &len, &alpha, &ain, &beta, &bout, &logz,
                         &gcum, &gtrans, &gdur, &gps, &gpe, &wse, &wsg, &oob, &dpart, &tpart};
        for (sg_buf *b : all) sg_free(b);
    }
};

__global__ void sg_fill(float *x, size_t n, float v)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = v;
}

static unsigned sg_blocks(size_t n, unsigned threads) { return (unsigned)((n + threads - 1) / threads); }

/* How the accumulation is done: atomics (cfg->accum F32/F64), the per-block workspaces and trees as they
 * were (the bench's "before"), or the production deterministic kernels. */
enum { SG_ATOMIC = 0, SG_DET_V1 = 1, SG_DET = 2 };

/* One prepared run: inputs on the device, the forward and backward passes done, gradient buffers ready. */
struct sg_ctx {
    sg_state S;
    sg_inputs in;
    sg_grads g;
    lab_semicrf_config cfg;
    int mode;
    long W;
    size_t esz, ncum, npos, ncum_in, npos_in;
    int maxL;
    long n_dchunks, n_tchunks;
    unsigned det_threads, det_blocks; /* launch configuration of the SG_DET kernels (blocks 0: one item per thread) */
};

/* The launch configuration of the deterministic kernels: LAB_SEMICRF_DET_LAUNCH="THREADS,BLOCKS" (THREADS a
 * multiple of 32 in 32..512, BLOCKS >= 0, 0 = enough for one work item per thread) or the default 256,0. It
 * exists to show that the results do not depend on it (tests/test_bench.c). LAB_ERR_ARG naming the variable. */
static lab_status sg_det_launch(unsigned *threads, unsigned *blocks)
{
    *threads = 256;
    *blocks = 0;
    const char *v = getenv("LAB_SEMICRF_DET_LAUNCH");
    if (!v || !*v) return LAB_OK;
    unsigned t = 0, b = 0;
    char extra;
    if (sscanf(v, "%u,%u%c", &t, &b, &extra) != 2 || t < 32 || t > 512 || t % 32 != 0)
        return lab_err_set(LAB_ERR_ARG, "LAB_SEMICRF_DET_LAUNCH='%s': need THREADS,BLOCKS with THREADS a multiple of 32 "
                                        "in 32..512 (sg_det_starts_dur's registers allow no more) and BLOCKS >= 0", v);
    *threads = t;
    *blocks = b;
    return LAB_OK;
}

static unsigned sg_det_grid(const sg_ctx &x, long n)
{
    if (x.det_blocks) return x.det_blocks;
    long b = (n + x.det_threads - 1) / x.det_threads;
    return b < 1 ? 1u : b > 0x7fffffffL ? 0x7fffffffu : (unsigned)b;
}

/* The forward and backward passes (alpha, log Z, beta) of x's problem. */
static lab_status sg_fwd_bwd_launch(sg_ctx &x)
{
    sg_fwd_bwd<<<x.in.B, SG_PAD>>>(x.in, x.cfg.guards, (float *)x.S.alpha.p, (float *)x.S.ain.p, (float *)x.S.beta.p,
                                   (float *)x.S.bout.p, (float *)x.S.logz.p);
    LAB_CUDA_CHECK(cudaGetLastError());
    return LAB_OK;
}

/* The accumulation stage (zeroing where needed, marginals, reductions), enqueued on the default stream. */
static lab_status sg_accumulate(sg_ctx &x)
{
    sg_state &S = x.S;
    const sg_inputs &in = x.in;
    const sg_grads &g = x.g;
    LAB_CUDA_CHECK(cudaMemsetAsync(S.oob.p, 0, 2 * sizeof(unsigned long long)));
    if (x.mode == SG_DET) {
        /* every entry of every gradient buffer is written: no zeroing */
        const float *ain = (const float *)S.ain.p, *beta = (const float *)S.beta.p, *logz = (const float *)S.logz.p;
        unsigned th = x.det_threads;
        long n1 = x.n_dchunks * in.C, n2 = (long)in.B * (in.T + 1) * in.C, n3 = x.n_tchunks * in.C * ((in.C + 3) / 4);
        sg_det_starts_dur<<<sg_det_grid(x, n1), th>>>(in, x.cfg.guards, ain, beta, logz, (float *)S.gps.p,
                                                       (float *)S.dpart.p, x.n_dchunks);
        LAB_CUDA_CHECK(cudaGetLastError());
        sg_det_ends<<<sg_det_grid(x, n2), th>>>(in, x.cfg.guards, ain, beta, logz, (const float *)S.gps.p, (float *)S.gcum.p,
                                                 (float *)S.gpe.p);
        LAB_CUDA_CHECK(cudaGetLastError());
        sg_det_trans_part<<<sg_det_grid(x, n3), th>>>(in, x.cfg.guards, (const float *)S.alpha.p, (const float *)S.bout.p,
                                                       logz, (float *)S.tpart.p, x.n_tchunks);
        LAB_CUDA_CHECK(cudaGetLastError());
        dim3 rb(32, SG_DET_STRANDS);
        sg_det_reduce<<<SG_PAD * SG_PAD / 32, rb>>>((const float *)S.tpart.p, x.n_tchunks, (size_t)SG_PAD * SG_PAD, SG_PAD,
                                                    in.C, in.C, (float *)S.gtrans.p);
        LAB_CUDA_CHECK(cudaGetLastError());
        sg_det_reduce<<<(unsigned)in.K * SG_PAD / 32, rb>>>((const float *)S.dpart.p, x.n_dchunks, (size_t)in.K * SG_PAD, in.K,
                                                            in.K, in.C, (float *)S.gdur.p);
        LAB_CUDA_CHECK(cudaGetLastError());
        return LAB_OK;
    }
    int det = x.mode == SG_DET_V1;
    size_t esz = x.esz;
    long W = x.W;
    LAB_CUDA_CHECK(cudaMemsetAsync(S.gcum.p, 0, x.ncum * esz));
    LAB_CUDA_CHECK(cudaMemsetAsync(S.gtrans.p, 0, (size_t)W * W * esz));
    LAB_CUDA_CHECK(cudaMemsetAsync(S.gdur.p, 0, (size_t)in.K * W * esz));
    LAB_CUDA_CHECK(cudaMemsetAsync(S.gps.p, 0, x.npos * esz));
    LAB_CUDA_CHECK(cudaMemsetAsync(S.gpe.p, 0, x.npos * esz));
    size_t nb = (size_t)in.B * (size_t)in.T;
    /* Deterministic (v1): every workspace slot is written by the marginal kernel (zeros where no segment
     * starts or ends), so the workspaces need no clearing. The grid covers s < T for that reason. */
    dim3 grid((unsigned)(det ? in.T : x.maxL), (unsigned)in.B);
    sg_marginals<<<grid, SG_THREADS>>>(in, x.cfg.guards, (int)x.cfg.layout, det, (const float *)S.alpha.p,
                                       (const float *)S.ain.p, (const float *)S.beta.p, (const float *)S.bout.p,
                                       (const float *)S.logz.p, g);
    LAB_CUDA_CHECK(cudaGetLastError());
    if (det) {
        /* per-position sums first (they read ws_e), then the duration-bias tree reduces ws_e in place */
        size_t total = (size_t)in.B * (size_t)(in.T + 1) * SG_PAD;
        sg_det_positions<<<sg_blocks(total, 256), 256>>>(g.ws_e, in.B, in.T, in.K, in.use_proj, (float *)S.gcum.p,
                                                         (float *)S.gps.p, (float *)S.gpe.p);
        LAB_CUDA_CHECK(cudaGetLastError());
        size_t we = (size_t)in.K * SG_PAD, wg = (size_t)SG_PAD * SG_PAD;
        for (size_t h = 1; h < nb; h <<= 1) {
            size_t pairs = (nb + 2 * h - 1) / (2 * h);
            sg_tree_level<<<sg_blocks(pairs * we, 256), 256>>>(g.ws_e, nb, we, h);
            sg_tree_level<<<sg_blocks(pairs * wg, 256), 256>>>(g.ws_g, nb, wg, h);
        }
        LAB_CUDA_CHECK(cudaGetLastError());
        LAB_CUDA_CHECK(cudaMemcpyAsync(S.gdur.p, g.ws_e, we * 4, cudaMemcpyDeviceToDevice));
        LAB_CUDA_CHECK(cudaMemcpyAsync(S.gtrans.p, g.ws_g, wg * 4, cudaMemcpyDeviceToDevice));
    }
    return LAB_OK;
}

/* Uploads p, allocates everything for cfg and `mode`, and runs the forward and backward passes once (x is
 * ready for sg_accumulate). LAB_ERR_ARG for a bad config, length or launch variable; LAB_ERR_DEVICE. */
static lab_status sg_prepare(const lab_semicrf_problem *p, const lab_semicrf_config *cfg, int mode, sg_ctx &x)
{
    const int B = p->B, T = p->T, K = p->K, C = p->C;
    if (cfg->accum == LAB_SEMICRF_ACC_DETERMINISTIC && cfg->layout != LAB_SEMICRF_LAYOUT_PADDED)
        return lab_err_set(LAB_ERR_ARG, "semicrf cuda: config: the deterministic accumulation needs the padded layout");
    for (int b = 0; b < B; ++b)
        if (p->len[b] < 1 || p->len[b] > T)
            return lab_err_set(LAB_ERR_ARG, "semicrf cuda: len[%d] = %d: need 1..T = %d", b, p->len[b], T);
    lab_status st = sg_det_launch(&x.det_threads, &x.det_blocks);
    if (st != LAB_OK) return st;
    x.cfg = *cfg;
    x.mode = mode;
    /* Under a memory checker (the case says so: cfg->exact_alloc) allocations are exact: guard zones would
     * absorb the stray loads the tool is there to see. */
    int exact = cfg->exact_alloc;
    int padded = cfg->layout == LAB_SEMICRF_LAYOUT_PADDED;
    /* Stray layouts: inputs between guard zones of the seed's neighbour contents (what a stray load reads),
     * unless cfg->exact_alloc asks for exact allocations so memcheck also sees the stray loads and atomics. */
    int guarded = !padded && !exact;
    long W = padded ? SG_PAD : C;
    size_t esz = cfg->accum == LAB_SEMICRF_ACC_F64_ATOMIC ? 8 : 4;
    size_t ncum_in = (size_t)B * (T + 1) * C, npos_in = (size_t)B * T * C;
    size_t ncum = (size_t)B * (T + 1) * W, npos = (size_t)B * T * W, nrowp = (size_t)B * (T + 1) * SG_PAD;
    x.W = W, x.esz = esz, x.ncum = ncum, x.npos = npos, x.ncum_in = ncum_in, x.npos_in = npos_in;
    x.maxL = 0;
    for (int b = 0; b < B; ++b) x.maxL = std::max(x.maxL, p->len[b]);
    x.n_dchunks = ((long)B * T + SG_DET_ROWS_D - 1) / SG_DET_ROWS_D;
    x.n_tchunks = ((long)B * T + SG_DET_ROWS_T - 1) / SG_DET_ROWS_T;
    sg_state &S = x.S;
    std::vector<float> zeros(std::max<size_t>(npos_in, 1), 0.0f);
    if ((st = sg_upload_input(&S.cum, p->cum, ncum_in, guarded, cfg->guard_seed, 1)) != LAB_OK) return st;
    if ((st = sg_upload_input(&S.trans, p->trans, (size_t)C * C, guarded, cfg->guard_seed, 2)) != LAB_OK) return st;
    if ((st = sg_upload_input(&S.dur, p->dur, (size_t)K * C, guarded, cfg->guard_seed, 3)) != LAB_OK) return st;
    if ((st = sg_upload_input(&S.ps, p->use_proj ? p->proj_start : zeros.data(), npos_in, guarded, cfg->guard_seed, 4)) != LAB_OK)
        return st;
    if ((st = sg_upload_input(&S.pe, p->use_proj ? p->proj_end : zeros.data(), npos_in, guarded, cfg->guard_seed, 5)) != LAB_OK)
        return st;
    if ((st = sg_alloc(&S.len, (size_t)B * sizeof(int), 0)) != LAB_OK) return st;
    LAB_CUDA_CHECK(cudaMemcpy(S.len.p, p->len, (size_t)B * sizeof(int), cudaMemcpyHostToDevice));
    sg_buf *internal[] = {&S.alpha, &S.ain, &S.beta, &S.bout};
    for (sg_buf *b : internal) {
        if ((st = sg_alloc(b, nrowp * 4, 0)) != LAB_OK) return st;
        sg_fill<<<sg_blocks(nrowp, 256), 256>>>((float *)b->p, nrowp, LAB_SEMICRF_NEG_INF);
        LAB_CUDA_CHECK(cudaGetLastError());
    }
    if ((st = sg_alloc(&S.logz, (size_t)B * 4, 0)) != LAB_OK) return st;
    /* Gradients of a stray layout sit between guard zones too (zones 6..10): a stray atomic changes the
     * seed's neighbour contents, as in the CPU emulation, and never memory the case does not own. */
    uint64_t gs = cfg->guard_seed;
    if ((st = sg_alloc_grad(&S.gtrans, (size_t)W * W, esz, guarded, gs, 6)) != LAB_OK) return st;
    if ((st = sg_alloc_grad(&S.gcum, ncum, esz, guarded, gs, 7)) != LAB_OK) return st;
    if ((st = sg_alloc_grad(&S.gdur, (size_t)K * W, esz, guarded, gs, 8)) != LAB_OK) return st;
    if ((st = sg_alloc_grad(&S.gps, npos, esz, guarded, gs, 9)) != LAB_OK) return st;
    if ((st = sg_alloc_grad(&S.gpe, npos, esz, guarded, gs, 10)) != LAB_OK) return st;
    if ((st = sg_alloc(&S.oob, 2 * sizeof(unsigned long long), 0)) != LAB_OK) return st;
    if (mode == SG_DET_V1) {
        if ((st = sg_alloc(&S.wse, (size_t)B * T * K * SG_PAD * 4, 0)) != LAB_OK) return st;
        if ((st = sg_alloc(&S.wsg, (size_t)B * T * SG_PAD * SG_PAD * 4, 0)) != LAB_OK) return st;
    }
    if (mode == SG_DET) {
        if ((st = sg_alloc(&S.dpart, (size_t)x.n_dchunks * K * SG_PAD * 4, 0)) != LAB_OK) return st;
        if ((st = sg_alloc(&S.tpart, (size_t)x.n_tchunks * SG_PAD * SG_PAD * 4, 0)) != LAB_OK) return st;
    }
    x.in = {(const float *)S.cum.p, (const float *)S.trans.p, (const float *)S.dur.p, (const float *)S.ps.p,
            (const float *)S.pe.p, (const int *)S.len.p, B, T, K, C, p->use_proj,
            (long)ncum_in, (long)C * C, (long)K * C, (long)npos_in,
            (unsigned long long *)S.oob.p, !padded};
    x.g = {S.gcum.p, S.gtrans.p, S.gdur.p, S.gps.p, S.gpe.p, esz == 8, (float *)S.wse.p, (float *)S.wsg.p, W,
           (long)ncum, (long)W * W, (long)K * W, (long)npos};
    if ((st = sg_fwd_bwd_launch(x)) != LAB_OK) return st;
    LAB_CUDA_CHECK(cudaDeviceSynchronize());
    return LAB_OK;
}

/* Copies x's gradients back into o (allocated here), sliced to C. LAB_ERR_NOMEM, LAB_ERR_DEVICE. */
static lab_status sg_readback(const lab_semicrf_problem *p, sg_ctx &x, lab_semicrf_out *o)
{
    const int B = p->B, T = p->T, K = p->K, C = p->C;
    size_t esz = x.esz, ncum = x.ncum, npos = x.npos, ncum_in = x.ncum_in, npos_in = x.npos_in;
    long W = x.W;
    sg_state &S = x.S;
    memset(o, 0, sizeof *o);
    unsigned long long oob[2] = {0, 0};
    LAB_CUDA_CHECK(cudaMemcpy(oob, S.oob.p, sizeof oob, cudaMemcpyDeviceToHost));
    std::vector<unsigned char> hc(ncum * esz), ht((size_t)W * W * esz), hd((size_t)K * W * esz), hps(npos * esz), hpe(npos * esz);
    std::vector<float> hz(B);
    LAB_CUDA_CHECK(cudaMemcpy(hc.data(), S.gcum.p, hc.size(), cudaMemcpyDeviceToHost));
    LAB_CUDA_CHECK(cudaMemcpy(ht.data(), S.gtrans.p, ht.size(), cudaMemcpyDeviceToHost));
    LAB_CUDA_CHECK(cudaMemcpy(hd.data(), S.gdur.p, hd.size(), cudaMemcpyDeviceToHost));
    LAB_CUDA_CHECK(cudaMemcpy(hps.data(), S.gps.p, hps.size(), cudaMemcpyDeviceToHost));
    LAB_CUDA_CHECK(cudaMemcpy(hpe.data(), S.gpe.p, hpe.size(), cudaMemcpyDeviceToHost));
    LAB_CUDA_CHECK(cudaMemcpy(hz.data(), S.logz.p, (size_t)B * 4, cudaMemcpyDeviceToHost));
    o->logZ = (float *)malloc((size_t)B * sizeof(float));
    o->g_cum = (float *)malloc(ncum_in * sizeof(float));
    o->g_trans = (float *)malloc((size_t)C * C * sizeof(float));
    o->g_dur = (float *)malloc((size_t)K * C * sizeof(float));
    o->g_ps = (float *)malloc(npos_in * sizeof(float));
    o->g_pe = (float *)malloc(npos_in * sizeof(float));
    if (esz == 8) {
        o->acc_cum = (double *)malloc(ncum_in * sizeof(double));
        o->acc_trans = (double *)malloc((size_t)C * C * sizeof(double));
        o->acc_dur = (double *)malloc((size_t)K * C * sizeof(double));
    }
    if (!o->logZ || !o->g_cum || !o->g_trans || !o->g_dur || !o->g_ps || !o->g_pe ||
        (esz == 8 && (!o->acc_cum || !o->acc_trans || !o->acc_dur))) {
        lab_semicrf_out_free(o);
        return lab_err_set(LAB_ERR_NOMEM, "semicrf cuda: out of memory for the outputs");
    }
    auto get = [esz](const std::vector<unsigned char> &v, size_t i) -> double {
        if (esz == 8) {
            double d;
            memcpy(&d, v.data() + 8 * i, 8);
            return d;
        }
        float f;
        memcpy(&f, v.data() + 4 * i, 4);
        return (double)f;
    };
    memcpy(o->logZ, hz.data(), (size_t)B * sizeof(float));
    for (size_t r = 0; r < (size_t)B * (T + 1); ++r)
        for (int c = 0; c < C; ++c) {
            double v = get(hc, r * W + c);
            o->g_cum[r * C + c] = (float)v;
            if (o->acc_cum) o->acc_cum[r * C + c] = v;
        }
    for (int i = 0; i < C; ++i)
        for (int j = 0; j < C; ++j) {
            double v = get(ht, (size_t)i * W + j);
            o->g_trans[(size_t)i * C + j] = (float)v;
            if (o->acc_trans) o->acc_trans[(size_t)i * C + j] = v;
        }
    for (int k = 0; k < K; ++k)
        for (int c = 0; c < C; ++c) {
            double v = get(hd, (size_t)k * W + c);
            o->g_dur[(size_t)k * C + c] = (float)v;
            if (o->acc_dur) o->acc_dur[(size_t)k * C + c] = v;
        }
    for (size_t r = 0; r < (size_t)B * T; ++r)
        for (int c = 0; c < C; ++c) {
            o->g_ps[r * C + c] = p->use_proj ? (float)get(hps, r * W + c) : 0.0f;
            o->g_pe[r * C + c] = p->use_proj ? (float)get(hpe, r * W + c) : 0.0f;
        }
    if (W > C) { /* padded layout: padding-column values that are not 0 (the slice drops them; NaN counts) */
        size_t nz = 0;
        const std::vector<unsigned char> *hv[5] = {&hc, &ht, &hd, &hps, &hpe};
        const size_t rows[5] = {(size_t)B * (T + 1), (size_t)W, (size_t)K, p->use_proj ? (size_t)B * T : 0,
                                p->use_proj ? (size_t)B * T : 0};
        for (int k = 0; k < 5; ++k)
            for (size_t r = 0; r < rows[k]; ++r)
                for (long c = 0; c < W; ++c)
                    if (c >= C || (k == 1 && r >= (size_t)C)) nz += get(*hv[k], r * W + c) != 0.0;
        o->pad_nonzero = nz;
    }
    o->oob_reads = (size_t)oob[0]; /* loads and atomics outside their allocation, counted by the kernel */
    o->oob_writes = (size_t)oob[1];
    /* Contained: guard zones around every gradient buffer, and none changed beyond the strays' reach. */
    const sg_buf *grads[] = {&S.gtrans, &S.gcum, &S.gdur, &S.gps, &S.gpe};
    size_t breach = 0;
    for (const sg_buf *b : grads) {
        lab_status st = sg_guard_breach(b, &breach);
        if (st != LAB_OK) {
            lab_semicrf_out_free(o);
            return st;
        }
    }
    o->guard_breach = breach;
    o->contained = !S.gtrans.tail.empty() && breach == 0;
    return LAB_OK;
}

extern "C" lab_status lab_semicrf_cuda_run(const lab_semicrf_problem *p, const lab_semicrf_config *cfg, int reps,
                                           lab_semicrf_out *o, double *ms_backward)
{
    if (o) memset(o, 0, sizeof *o);
    if (reps < 1) return lab_err_set(LAB_ERR_ARG, "semicrf cuda: reps = %d: need >= 1", reps);
    sg_ctx x;
    lab_status st = sg_prepare(p, cfg, cfg->accum == LAB_SEMICRF_ACC_DETERMINISTIC ? SG_DET : SG_ATOMIC, x);
    if (st != LAB_OK) return st;
    cudaEvent_t e1, e2;
    LAB_CUDA_CHECK(cudaEventCreate(&e1));
    LAB_CUDA_CHECK(cudaEventCreate(&e2));
    std::vector<float> times;
    for (int r = 0; r < reps && st == LAB_OK; ++r) {
        if (r > 0 && (st = sg_fwd_bwd_launch(x)) != LAB_OK) break;
        LAB_CUDA_CHECK(cudaEventRecord(e1));
        if ((st = sg_accumulate(x)) != LAB_OK) break;
        LAB_CUDA_CHECK(cudaEventRecord(e2));
        LAB_CUDA_CHECK(cudaEventSynchronize(e2));
        float ms = 0.0f;
        LAB_CUDA_CHECK(cudaEventElapsedTime(&ms, e1, e2));
        times.push_back(ms);
    }
    cudaEventDestroy(e1);
    cudaEventDestroy(e2);
    if (st != LAB_OK) return st;
    LAB_CUDA_CHECK(cudaDeviceSynchronize());
    std::sort(times.begin(), times.end());
    if (ms_backward) *ms_backward = times[times.size() / 2];
    return o ? sg_readback(p, x, o) : LAB_OK;
}

/* Device-to-device copy bandwidth (GB/s, read + write counted) over `bytes`, median of 10. */
static lab_status sg_d2d_bandwidth(size_t bytes, double *gbs)
{
    void *a = nullptr, *b = nullptr;
    LAB_CUDA_CHECK(cudaMalloc(&a, bytes));
    cudaError_t e = cudaMalloc(&b, bytes);
    if (e != cudaSuccess) {
        cudaFree(a);
        return lab_cuda_fail(__FILE__, __LINE__, "cudaMalloc", cudaGetErrorString(e));
    }
    cudaEvent_t e0, e1;
    LAB_CUDA_CHECK(cudaEventCreate(&e0));
    LAB_CUDA_CHECK(cudaEventCreate(&e1));
    std::vector<float> t;
    for (int i = 0; i < 12; ++i) {
        LAB_CUDA_CHECK(cudaEventRecord(e0));
        LAB_CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice));
        LAB_CUDA_CHECK(cudaEventRecord(e1));
        LAB_CUDA_CHECK(cudaEventSynchronize(e1));
        float ms;
        LAB_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (i >= 2) t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    *gbs = 2.0 * (double)bytes / (t[t.size() / 2] * 1e-3) / 1e9;
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);
    return LAB_OK;
}

/* Sorted copy's q-quantile (nearest rank). */
static double sg_quantile(std::vector<double> v, double q)
{
    std::sort(v.begin(), v.end());
    size_t i = (size_t)(q * (double)(v.size() - 1) + 0.5);
    return v[std::min(i, v.size() - 1)];
}

#define SG_BENCH_WARMUP 3
#define SG_BENCH_REPS 21

/* The benchmark: the accumulation stage of the float32-atomic bug, the float64-atomic fix, the production
 * deterministic fix and (where its 385 MB-class workspaces fit in a quarter of free memory) the deterministic
 * kernels as they were, on one problem; each prepared once, then SG_BENCH_WARMUP warm-up rounds and
 * SG_BENCH_REPS timed rounds, a round timing every variant once in turn with CUDA events (so drifting clocks hit
 * all alike); per-round ratios give the spread. Prints lines and two `lab-bench-record` lines (replay/lab_bench.h):
 * deterministic / f32-atomic (target 1.15) and deterministic / f64-atomic (target 1: faster). */
extern "C" lab_status lab_semicrf_cuda_bench(void *fv, int B, int T, int K, int C)
{
    FILE *f = (FILE *)fv;
    lab_semicrf_problem p;
    lab_status st = lab_semicrf_problem_init(&p, B, T, K, C, 1);
    if (st != LAB_OK) return st;
    lab_semicrf_problem_fill(&p, 1);
    lab_cuda_info info;
    if ((st = lab_cuda_device_info(0, &info)) != LAB_OK) {
        lab_semicrf_problem_free(&p);
        return st;
    }
    enum { NV = 4 };
    static const char *const names[NV] = {"f32-atomic (bug)", "f64-atomic (fix)", "deterministic (fix)", "deterministic before"};
    static const lab_semicrf_accum acc[NV] = {LAB_SEMICRF_ACC_F32_ATOMIC, LAB_SEMICRF_ACC_F64_ATOMIC,
                                              LAB_SEMICRF_ACC_DETERMINISTIC, LAB_SEMICRF_ACC_DETERMINISTIC};
    static const int mode[NV] = {SG_ATOMIC, SG_ATOMIC, SG_DET, SG_DET_V1};
    double ws_bytes = (double)B * T * ((double)K * SG_PAD + SG_PAD * SG_PAD) * 4.0;
    size_t free_b = 0, total_b = 0;
    cudaError_t ce = cudaMemGetInfo(&free_b, &total_b);
    if (ce != cudaSuccess) {
        lab_semicrf_problem_free(&p);
        return lab_cuda_fail(__FILE__, __LINE__, "cudaMemGetInfo", cudaGetErrorString(ce));
    }
    int nv = ws_bytes < (double)free_b / 4 ? NV : NV - 1;
    std::vector<sg_ctx *> x(NV, nullptr);
    std::vector<std::vector<double>> t(NV);
    std::vector<double> fb;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    for (int i = 0; i < nv && st == LAB_OK; ++i) {
        lab_semicrf_config cfg = {LAB_SEMICRF_LAYOUT_PADDED, acc[i], LAB_SEMICRF_GUARDS_ALL, 1, 0};
        x[i] = new sg_ctx();
        st = sg_prepare(&p, &cfg, mode[i], *x[i]);
    }
    if (st == LAB_OK && (ce = cudaEventCreate(&e0)) == cudaSuccess) ce = cudaEventCreate(&e1);
    if (st == LAB_OK && ce != cudaSuccess) st = lab_cuda_fail(__FILE__, __LINE__, "cudaEventCreate", cudaGetErrorString(ce));
    for (int r = 0; r < SG_BENCH_WARMUP + SG_BENCH_REPS && st == LAB_OK; ++r) {
        for (int i = -1; i < nv && st == LAB_OK; ++i) {
            float ms = 0.0f;
            if ((ce = cudaEventRecord(e0)) != cudaSuccess) break;
            st = i < 0 ? sg_fwd_bwd_launch(*x[0]) : sg_accumulate(*x[i]); /* i = -1: the shared forward + beta */
            if (st != LAB_OK) break;
            if ((ce = cudaEventRecord(e1)) != cudaSuccess || (ce = cudaEventSynchronize(e1)) != cudaSuccess ||
                (ce = cudaEventElapsedTime(&ms, e0, e1)) != cudaSuccess)
                break;
            if (r >= SG_BENCH_WARMUP) (i < 0 ? fb : t[i]).push_back(ms);
        }
        if (st == LAB_OK && ce != cudaSuccess) st = lab_cuda_fail(__FILE__, __LINE__, "cudaEvent*", cudaGetErrorString(ce));
    }
    double gbs = 0.0;
    if (st == LAB_OK) st = sg_d2d_bandwidth((size_t)1 << 30, &gbs);
    if (st == LAB_OK) {
        int maxlen = 0;
        long positions = 0;
        for (int b = 0; b < B; ++b) maxlen = std::max(maxlen, p.len[b]), positions += p.len[b];
        double med[NV];
        for (int i = 0; i < nv; ++i) med[i] = sg_quantile(t[i], 0.5);
        double mfb = sg_quantile(fb, 0.5);
        fprintf(f, "device: %s sm_%d%d, %d SMs; B=%d T=%d K=%d C=%d (C_PAD=%d), %ld positions (lengths T/2..T), "
                   "median of %d rounds after %d warm-up rounds\n",
                info.name, info.cc_major, info.cc_minor, info.multiprocessors, B, T, K, C, SG_PAD, positions, SG_BENCH_REPS,
                SG_BENCH_WARMUP);
        for (int i = 0; i < nv; ++i)
            fprintf(f, "backward accumulation %-22s %.4f ms (min %.4f, max %.4f)\n", names[i], med[i], sg_quantile(t[i], 0),
                    sg_quantile(t[i], 1));
        fprintf(f, "forward+beta (shared by all) %.4f ms\n", mfb);
        /* Bytes the production deterministic stage must move at least: the inputs it reads (cum, ps, pe, the
         * four [B][T+1][C_PAD] passes) and the gradients it writes (g_cum, g_ps, g_pe padded). */
        double in_bytes = 4.0 * ((double)B * (T + 1) * C + 2.0 * B * T * C + 4.0 * B * (T + 1) * SG_PAD);
        double out_bytes = 4.0 * 3.0 * B * (T + 1) * SG_PAD;
        double floor_ms = (in_bytes + out_bytes) / (gbs * 1e9) * 1e3;
        for (int base = 0; base < 2; ++base) {
            std::vector<double> r;
            for (size_t k = 0; k < t[2].size(); ++k) r.push_back(t[2][k] / t[base][k]);
            double ratio = sg_quantile(r, 0.5), lo = sg_quantile(r, 0.1), hi = sg_quantile(r, 0.9);
            double target = base == 0 ? 1.15 : 1.0;
            fprintf(f, "ratio deterministic / %s = %.3f (per-round p10..p90 %.3f..%.3f; target <= %.2f: %s)\n", names[base],
                    ratio, lo, hi, target, ratio <= target ? "met" : "NOT met");
            fprintf(f, "lab-bench-record {\"name\":\"backward accumulation B=%d T=%d K=%d C=%d\",\"fix\":\"deterministic\","
                       "\"baseline\":\"%s\",\"device\":\"%s\",\"fix_ms\":%.6g,\"baseline_ms\":%.6g,\"ratio\":%.6g,\"ratio_lo\":%.6g,\"ratio_hi\":%.6g,"
                       "\"reps\":%d,\"warmup\":%d,\"target\":%.6g,\"ceiling_gbs\":%.6g,\"floor_ms\":%.6g,\"bytes\":%.0f}\n",
                    B, T, K, C, base == 0 ? "f32-atomic" : "f64-atomic", info.name, med[2], med[base], ratio, lo, hi, SG_BENCH_REPS,
                    SG_BENCH_WARMUP, target, gbs, floor_ms, in_bytes + out_bytes);
        }
        if (nv == NV)
            fprintf(f, "deterministic before / now = %.2f (workspaces %.0f MB then, %.1f MB of partials now)\n", med[3] / med[2],
                    ws_bytes / 1e6, (double)(x[2]->n_dchunks * K * SG_PAD + x[2]->n_tchunks * SG_PAD * SG_PAD) * 4.0 / 1e6);
        fprintf(f, "whole backward (forward+beta included): deterministic / f32-atomic = %.3f, / f64-atomic = %.3f\n",
                (med[2] + mfb) / (med[0] + mfb), (med[2] + mfb) / (med[1] + mfb));
        fprintf(f, "device ceiling: D2D cudaMemcpy %.0f GB/s (1 GiB, read+write); the deterministic stage moves >= %.1f MB: "
                   ">= %.4f ms at that bandwidth\n", gbs, (in_bytes + out_bytes) / 1e6, floor_ms);
    }
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    for (sg_ctx *c : x) delete c;
    lab_semicrf_problem_free(&p);
    return st;
}
