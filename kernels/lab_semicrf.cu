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
#include "lab_devmem.h"
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

/* Gradient destinations: float or double buffers of row width W, or the deterministic workspaces. */
struct sg_grads {
    void *cum, *trans, *dur, *ps, *pe;   /* element 0 of each (guard zones around, where guarded) */
    int f64;
    float *ws_e;                         /* [B][T][K][C_PAD] deterministic only */
    float *ws_g;                         /* [B*T][C_PAD][C_PAD] deterministic only */
    long W;
    long n_cum, n_trans, n_dur, n_pos;   /* elements of each gradient allocation */
};

/* What the kernels need of one problem of a batch (a device array, one entry per problem: the kernels take the
 * problem from blockIdx.y, or blockIdx.z for the marginal kernel). */
struct sg_prob {
    sg_inputs in;
    sg_grads g;
    float *alpha, *ain, *beta, *bout, *logz; /* [B][T+1][C_PAD] passes, [B] log Z */
    float *dpart, *tpart;                   /* the deterministic kernels' partials */
};

/* Forward and backward passes, one block of C_PAD threads per batch element; lane c owns class c. Arrays
 * alpha, ain, beta, bout are [B][T+1][C_PAD], pre-filled with NEG_INF. */
__global__ void sg_fwd_bwd(const sg_prob *P, unsigned guards)
{
    const sg_prob &X = P[blockIdx.y];
    const sg_inputs in = X.in;
    float *alpha = X.alpha, *ain = X.ain, *beta = X.beta, *bout = X.bout, *logZ = X.logz;
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

__device__ void sg_atomic(const sg_inputs &in, const sg_grads &g, void *buf, long n, long i, float v)
{
    if (in.check && (i < 0 || i >= n)) atomicAdd(&in.oob[1], 1ull); /* counted; the atomic still happens */
    if (g.f64)
        atomicAdd((double *)buf + i, (double)v);
    else
        atomicAdd((float *)buf + i, v);
}

/* The marginal kernel: block (s, b), SG_THREADS threads = SG_KGROUPS groups of C_PAD lanes. Layout 0
 * unpadded, 1 clamped, 2 padded (lab_semicrf_layout); det: write workspaces instead of atomics (the first
 * deterministic version's path, no longer launched: det is always 0. Kept so that the atomic variants, the
 * bench's baselines, run the very code they ran when the ratios in kernels/PERF_NOTES.md were first measured;
 * removing it changed the register allocation, 114 -> 104). */
__global__ void sg_marginals(const sg_prob *P, unsigned guards, int layout, int det)
{
    const sg_prob &X = P[blockIdx.z];
    const sg_inputs in = X.in;
    const sg_grads g = X.g;
    const float *alpha = X.alpha, *ain = X.ain, *beta = X.beta, *bout = X.bout, *logZ = X.logz;
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

/* ---- the deterministic accumulation as it was (the previous kernels: the reference for bits) ------------
 * (A first version, before these, had the marginal kernel write per-block workspaces, 385 MB at B = 32,
 * T = 500, reduced by pairwise trees: kernels/PERF_NOTES.md has its times; git history its code.)
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
 * against 385 MB for the per-block workspaces of the first version). Bitwise reproducible because no sum depends
 * on which thread or block computes it, nor on when: there is no atomic and no cross-thread accumulation
 * except the fixed tree. tests/test_bench.c checks identical bits across launch configurations. These kernels
 * give a thread a whole chunk and every duration: too few threads at small batches (3900 at B = 8, T = 200);
 * sg_det_spread below computes the same sums with more threads. */
#define SG_DET_ROWS_D 16
#define SG_DET_ROWS_T 32
#define SG_DET_STRANDS 16

/* Grid-stride index over n work items. */
#define SG_FOR(w, n) for (long w = (long)blockIdx.x * blockDim.x + threadIdx.x; w < (n); w += (long)gridDim.x * blockDim.x)

/* Start sums into start[B*T][C_PAD] and duration-bias partials dur_part[P_D][K][C_PAD]: work item (chunk p, c). */
__global__ void __launch_bounds__(512) sg_det_starts_dur(const sg_prob *P, unsigned guards, long n_chunks)
{
    const sg_prob &X = P[blockIdx.y];
    const sg_inputs in = X.in;
    const float *__restrict__ ain = X.ain, *__restrict__ beta = X.beta, *__restrict__ logZ = X.logz;
    float *__restrict__ start = (float *)X.g.ps, *__restrict__ dur_part = X.dpart;
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
__global__ void sg_det_ends(const sg_prob *P, unsigned guards)
{
    const sg_prob &X = P[blockIdx.y];
    const sg_inputs in = X.in;
    const float *__restrict__ ain = X.ain, *__restrict__ beta = X.beta, *__restrict__ logZ = X.logz;
    const float *__restrict__ start = (const float *)X.g.ps;
    float *__restrict__ gcum = (float *)X.g.cum, *__restrict__ gpe = (float *)X.g.pe;
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
__global__ void sg_det_trans_part(const sg_prob *P, unsigned guards, long n_chunks)
{
    const sg_prob &X = P[blockIdx.y];
    const sg_inputs in = X.in;
    const float *__restrict__ alpha = X.alpha, *__restrict__ bout = X.bout, *__restrict__ logZ = X.logz;
    float *__restrict__ part = X.tpart;
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
 * column < C), zero elsewhere; of problem blockIdx.y: its transition partials into g_trans (dur 0) or its duration
 * partials into g_dur (dur 1). Block (32, SG_DET_STRANDS): strand j sums partials j, j + S, ... ascending, then
 * a fixed pairwise tree over the strands. Any grid. */
__global__ void sg_det_reduce(const sg_prob *P, int dur, long n_part, size_t stride, int rows, int real_rows, int C)
{
    const sg_prob &X = P[blockIdx.y];
    const float *__restrict__ part = dur ? X.dpart : X.tpart;
    float *__restrict__ out = (float *)(dur ? X.g.dur : X.g.trans);
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

/* ---- the deterministic accumulation, spread over the GPU (production) ------------------------------
 * The same sums as the kernels above, in the same order, so the same bits (tests/test_bench.c compares them on
 * the shapes of every incident and the bench on its own): only who computes them changed. The kernels above give
 * one thread a whole chunk of 16 rows and every duration (starts and durations together): at B = 8, T = 200 that
 * is 3900 threads, too few for 132 SMs. Here, two launches:
 * - sg_det_spread: four kinds of work item in one grid (block ranges, each a grid-stride loop over its items):
 *   start sums, one thread per (b, s, c), k ascending (into g_ps); end sums, one thread per (b, t, c), t >= 1, k
 *   ascending (into g_pe[t - 1]); duration partials, one thread per (chunk of SG_DET_ROWS_D rows, k, c), rows
 *   ascending; transition partials, one thread per (chunk of SG_DET_ROWS_T rows, c, 4 columns c2), rows
 *   ascending (one column a thread was slower at C = 64: the per-row work outweighed one marginal). The marginal
 *   of a segment is computed by up to three threads (start, end, duration): the same operands in the same
 *   operations, so the same value each time. Item indices are 32-bit (sg_accumulate refuses larger problems).
 * - sg_det_finish: the two fixed-order reductions of the partials (sg_det_reduce's strands and tree) and g_cum
 *   = end - start per (b, t, c) from g_pe and g_ps, in block ranges of one grid.
 * Every sum is a function of the data and the compile-time constants only, not of the grid or the block size. */

/* The block ranges of a grid of several kinds of work: kind j owns blocks [first[j], first[j + 1]). */
struct sg_det_split {
    long n[4];          /* work items of each kind */
    unsigned first[5];  /* first block of each kind; first[4]: the grid */
};

/* Kind of this block, its index within the kind's range, the range's block count and the kind's work items
 * (unrolled: the split stays in registers). */
template <int KINDS>
__device__ __forceinline__ int sg_det_kind(const sg_det_split &S, unsigned *rb, unsigned *nb, long *n)
{
    int j = 0;
    unsigned lo = S.first[0], hi = S.first[1];
    long nn = S.n[0];
#pragma unroll
    for (int q = 1; q < KINDS; ++q)
        if (blockIdx.x >= S.first[q]) j = q, lo = S.first[q], hi = S.first[q + 1], nn = S.n[q];
    *rb = blockIdx.x - lo;
    *nb = hi - lo;
    *n = nn;
    return j;
}

/* The marginal of segment (b, s, k) at lane c: sg_seg's arithmetic as sg_det_starts_dur does it (s-terms first,
 * the same operations in the same order), then sg_marginal. */
__device__ __forceinline__ float sg_det_e(const sg_inputs &in, const float *__restrict__ ain, const float *__restrict__ beta,
                                          float z, int b, int s, int k, int c, unsigned guards)
{
    const int C = in.C, T = in.T;
    long crow = (long)b * (T + 1);
    size_t base = (size_t)b * (size_t)(T + 1) * SG_PAD;
    float v = __fsub_rn(in.cum[(crow + s + k) * C + c], in.cum[(crow + s) * C + c]);
    v = __fadd_rn(v, in.dur[(long)(k - 1) * C + c]);
    if (in.use_proj) {
        v = __fadd_rn(v, in.ps[((long)b * T + s) * C + c]);
        v = __fadd_rn(v, in.pe[((long)b * T + s + k - 1) * C + c]);
    }
    return sg_marginal(ain[base + (size_t)s * SG_PAD + c], v, beta[base + (size_t)(s + k) * SG_PAD + c], z, guards);
}

__global__ void __launch_bounds__(512) sg_det_spread(const sg_prob *P, unsigned guards, sg_det_split S)
{
    const sg_prob &X = P[blockIdx.y];
    const sg_inputs in = X.in;
    const float *__restrict__ ain = X.ain, *__restrict__ beta = X.beta, *__restrict__ logZ = X.logz;
    const int C = in.C, K = in.K, T = in.T, Q = (C + 3) / 4;
    const unsigned BT = (unsigned)in.B * (unsigned)T;
    unsigned rb, nb;
    long n;
    const int kind = sg_det_kind<4>(S, &rb, &nb, &n);
    const unsigned stride = nb * blockDim.x; /* every kind's item count < 2^31 (sg_accumulate checks) */
    for (unsigned w = rb * blockDim.x + threadIdx.x; w < (unsigned)n; w += stride) {
        if (kind <= 1) {
            unsigned i = w / (unsigned)C;
            int c = (int)(w % (unsigned)C), b = (int)(i / (unsigned)T), L = in.len[b];
            float sum = 0.0f, z = logZ[b];
            if (kind == 0) { /* start sum of (b, s, c) into g_ps (the workspace of g_cum's minus part) */
                int s = (int)(i % (unsigned)T), nk = L - s < K ? L - s : K;
#pragma unroll 6
                for (int k = 1; k <= nk; ++k) sum = __fadd_rn(sum, sg_det_e(in, ain, beta, z, b, s, k, c, guards));
            } else { /* end sum of (b, t, c), t = 1..T, into g_pe[b][t - 1] */
                int t = (int)(i % (unsigned)T) + 1, nk = t <= L ? (t < K ? t : K) : 0;
#pragma unroll 6
                for (int k = 1; k <= nk; ++k) sum = __fadd_rn(sum, sg_det_e(in, ain, beta, z, b, t - k, k, c, guards));
            }
            float *row = (float *)(kind == 0 ? X.g.ps : X.g.pe) + (size_t)i * SG_PAD;
            row[c] = sum;
            for (int pl = C + c; pl < SG_PAD; pl += C) row[pl] = 0.0f;
        } else if (kind == 2) { /* duration partial of (chunk p, k, c): its rows ascending */
            int c = (int)(w % (unsigned)C), k = (int)((w / (unsigned)C) % (unsigned)K) + 1;
            unsigned p = w / ((unsigned)C * (unsigned)K), i0 = p * SG_DET_ROWS_D;
            unsigned i1 = i0 + SG_DET_ROWS_D < BT ? i0 + SG_DET_ROWS_D : BT;
            int b = (int)(i0 / (unsigned)T), s = (int)(i0 % (unsigned)T);
            float acc = 0.0f;
            for (unsigned i = i0; i < i1; ++i) {
                int L = in.len[b];
                if (k <= L - s) acc = __fadd_rn(acc, sg_det_e(in, ain, beta, logZ[b], b, s, k, c, guards));
                if (++s == T) s = 0, ++b;
            }
            X.dpart[((size_t)p * K + (k - 1)) * SG_PAD + c] = acc;
        } else { /* transition partials of (chunk p, c, columns 4q..4q+3): its rows ascending */
            int q = (int)(w % (unsigned)Q), c = (int)((w / (unsigned)Q) % (unsigned)C);
            unsigned p = w / ((unsigned)Q * (unsigned)C), i0 = p * SG_DET_ROWS_T;
            unsigned i1 = i0 + SG_DET_ROWS_T < BT ? i0 + SG_DET_ROWS_T : BT;
            int b = (int)(i0 / (unsigned)T), s = (int)(i0 % (unsigned)T);
            float tr[4], acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
            for (int j = 0; j < 4; ++j) tr[j] = 4 * q + j < C ? in.trans[(long)c * C + 4 * q + j] : 0.0f;
            for (unsigned i = i0; i < i1; ++i) {
                if (s != 0 && s < in.len[b]) { /* no transition into the first segment; no segment starts past L */
                    size_t row = ((size_t)b * (size_t)(T + 1) + s) * SG_PAD;
                    float a = X.alpha[row + c], z = logZ[b];
                    float4 bo = *(const float4 *)(X.bout + row + 4 * q);
                    float bv[4] = {bo.x, bo.y, bo.z, bo.w};
#pragma unroll
                    for (int j = 0; j < 4; ++j)
                        if (4 * q + j < C) acc[j] = __fadd_rn(acc[j], sg_marginal(a, tr[j], bv[j], z, guards));
                }
                if (++s == T) s = 0, ++b;
            }
#pragma unroll
            for (int j = 0; j < 4; ++j)
                if (4 * q + j < C) X.tpart[(size_t)p * SG_PAD * SG_PAD + (size_t)c * SG_PAD + 4 * q + j] = acc[j];
        }
    }
}

/* Blocks of (32, SG_DET_STRANDS) threads: kind 0 reduces the transition partials into g_trans, kind 1 the duration
 * partials into g_dur (sg_det_reduce's strands and tree, the same order), kind 2 writes g_cum[b][t] = end - start
 * (end: g_pe[b][t - 1], 0 at t = 0; start: g_ps[b][t], 0 at t = T), padding lanes 0. */
__global__ void __launch_bounds__(32 * SG_DET_STRANDS) sg_det_finish(const sg_prob *P, long n_dchunks, long n_tchunks, sg_det_split S)
{
    const sg_prob &X = P[blockIdx.y];
    const int C = X.in.C, K = X.in.K, T = X.in.T;
    unsigned rb, nb;
    long n;
    const int kind = sg_det_kind<3>(S, &rb, &nb, &n);
    const int x = threadIdx.x, y = threadIdx.y;
    if (kind == 2) {
        const float *__restrict__ gps = (const float *)X.g.ps, *__restrict__ gpe = (const float *)X.g.pe;
        float *__restrict__ gcum = (float *)X.g.cum;
        long stride = (long)nb * 32 * SG_DET_STRANDS;
        for (long w = (long)rb * 32 * SG_DET_STRANDS + y * 32 + x; w < n; w += stride) {
            int c = (int)(w % SG_PAD);
            long bt = w / SG_PAD;
            int t = (int)(bt % (T + 1)), b = (int)(bt / (T + 1));
            float v = 0.0f;
            if (c < C) {
                float end = t >= 1 ? gpe[((size_t)b * T + t - 1) * SG_PAD + c] : 0.0f;
                float st = t < T ? gps[((size_t)b * T + t) * SG_PAD + c] : 0.0f;
                v = __fsub_rn(end, st);
            }
            gcum[w] = v;
        }
        return;
    }
    const int dur = kind == 1;
    const float *__restrict__ part = dur ? X.dpart : X.tpart;
    float *__restrict__ out = (float *)(dur ? X.g.dur : X.g.trans);
    const long n_part = dur ? n_dchunks : n_tchunks;
    const size_t stride = dur ? (size_t)K * SG_PAD : (size_t)SG_PAD * SG_PAD;
    const int rows = dur ? K : SG_PAD, real_rows = dur ? K : C;
    __shared__ float sm[SG_DET_STRANDS][32];
    for (long e0 = (long)rb * 32; e0 < (long)rows * SG_PAD; e0 += (long)nb * 32) {
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

/* ---- host side -------------------------------------------------------------------------------------
 * A run is a batch of n problems of one shape (one problem: a batch of one). Its memory is three sections: the
 * inputs (uploaded from a host image in one copy), the outputs (every problem's log Z, then the stray counters,
 * then per problem its gradient buffers: reset before each accumulation and read back in one copy) and the work
 * buffers (device only). Sections live in one allocation, the arena; under a memory checker (cfg->exact_alloc)
 * every buffer is a cudaMalloc of its exact size instead, so that a stray access leaves its allocation. A
 * stray layout's inputs and gradients sit between guard zones of the seed's neighbour contents either way, each
 * buffer its own zones. The kernels take every problem's pointers from a device array of sg_prob: one launch per
 * kernel for the whole batch, each problem computed exactly as alone. */

/* One buffer: element 0 lies `off` bytes into section `sec` (the same offset in the host image and on the device),
 * `bytes` long, between guard zones of `zone` bytes. p: its device address; own: its own cudaMalloc (exact). */
struct sg_buf {
    int sec = 0;
    size_t off = 0, bytes = 0, zone = 0;
    void *p = nullptr;
    void *own = nullptr;
};

enum { SG_SEC_IN, SG_SEC_OUT, SG_SEC_WORK, SG_NSEC };

/* One problem's buffers. */
struct sg_pbufs {
    sg_buf cum, trans, dur, ps, pe, len;                   /* inputs */
    sg_buf logz, oob, gtrans, gcum, gdur, gps, gpe;         /* outputs */
    sg_buf alpha, ain, beta, bout, dpart, tpart;            /* work */
};

__global__ void sg_fill_passes(const sg_prob *P, size_t n)
{
    const sg_prob &X = P[blockIdx.y];
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) X.alpha[i] = X.ain[i] = X.beta[i] = X.bout[i] = LAB_SEMICRF_NEG_INF;
}

static unsigned sg_blocks(size_t n, unsigned threads) { return (unsigned)((n + threads - 1) / threads); }

/* How the accumulation is done: atomics (cfg->accum F32/F64), the production deterministic kernels (sg_det_spread,
 * sg_det_finish), or the previous ones (sg_det_starts_dur ..., the same bits: the reference the bench and the tests
 * hold the production to). */
enum { SG_ATOMIC = 0, SG_DET = 2, SG_DET_PREV = 3 };

/* One prepared batch: inputs on the device, the forward and backward passes done, gradient buffers ready. */
struct sg_ctx {
    size_t n = 0;
    int mode = SG_ATOMIC, B = 0, T = 0, K = 0, C = 0, use_proj = 0, guarded = 0, exact = 0;
    lab_semicrf_config cfg;        /* what the batch's configs share (layout, accumulation, guards, exact_alloc) */
    long W = 0;
    size_t esz = 0, ncum = 0, npos = 0, ncum_in = 0, npos_in = 0, nrowp = 0;
    int maxL = 0;                  /* the longest sequence of the batch */
    long n_dchunks = 0, n_tchunks = 0;
    unsigned det_threads = 256, det_blocks = 0; /* launch configuration of the SG_DET kernels (blocks 0: one item per thread) */
    std::vector<sg_pbufs> pb;      /* per problem */
    sg_buf desc;                   /* the sg_prob array (inputs section) */
    size_t sec[SG_NSEC] = {0, 0, 0};
    size_t oob_off = 0, grad_off = 0; /* outputs section: where the counters and where the gradient buffers begin */
    std::vector<unsigned char> img_in, img_out, back; /* host images: inputs; outputs as reset; outputs read back */
    unsigned char *arena = nullptr, *base[SG_NSEC] = {nullptr, nullptr, nullptr};
    std::vector<sg_buf *> bufs;    /* every placed buffer */
    ~sg_ctx()
    {
        if (arena) lab_devmem_free(arena);
        for (sg_buf *b : bufs)
            if (b->own) cudaFree(b->own);
    }
};

/* Places b (bytes, zones of `zone` bytes each side) at the end of section sec, element 0 256-byte aligned. */
static void sg_place(sg_ctx &x, int sec, sg_buf &b, size_t bytes, size_t zone)
{
    b.sec = sec, b.bytes = bytes, b.zone = zone;
    b.off = ((x.sec[sec] + zone + 255) / 256) * 256;
    x.sec[sec] = b.off + bytes + zone;
    x.bufs.push_back(&b);
}

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

/* Grid of a deterministic kernel over n work items per problem: x blocks per problem, y the problems. */
static dim3 sg_det_grid(const sg_ctx &x, long n)
{
    unsigned bx;
    if (x.det_blocks) bx = x.det_blocks;
    else {
        long b = (n + x.det_threads - 1) / x.det_threads;
        bx = b < 1 ? 1u : b > 0x7fffffffL ? 0x7fffffffu : (unsigned)b;
    }
    return dim3(bx, (unsigned)x.n);
}

static const sg_prob *sg_dev_probs(const sg_ctx &x) { return (const sg_prob *)x.desc.p; }

/* The forward and backward passes (alpha, log Z, beta) of every problem of x. */
static lab_status sg_fwd_bwd_launch(sg_ctx &x)
{
    sg_fwd_bwd<<<dim3((unsigned)x.B, (unsigned)x.n), SG_PAD>>>(sg_dev_probs(x), x.cfg.guards);
    LAB_CUDA_CHECK(cudaGetLastError());
    return LAB_OK;
}

/* Resets bytes [from, to) of the outputs section: as the host image has them (zeros, and the guard zones' contents
 * where there are zones) or zeros; one call for the batch except under exact allocations. */
static lab_status sg_reset_outputs(sg_ctx &x, size_t from, size_t to)
{
    if (!x.exact) {
        if (x.guarded)
            LAB_CUDA_CHECK(cudaMemcpyAsync(x.base[SG_SEC_OUT] + from, x.img_out.data() + from, to - from, cudaMemcpyHostToDevice));
        else
            LAB_CUDA_CHECK(cudaMemsetAsync(x.base[SG_SEC_OUT] + from, 0, to - from));
        return LAB_OK;
    }
    for (sg_buf *b : x.bufs)
        if (b->sec == SG_SEC_OUT && b->off >= from && b->off < to) LAB_CUDA_CHECK(cudaMemsetAsync(b->p, 0, b->bytes));
    return LAB_OK;
}

/* The accumulation stage (resetting what it accumulates into, marginals, reductions), enqueued on the default
 * stream. */
static lab_status sg_accumulate(sg_ctx &x)
{
    const sg_prob *P = sg_dev_probs(x);
    const int B = x.B, T = x.T, K = x.K, C = x.C;
    if (x.mode == SG_DET) {
        /* every entry of every gradient buffer is written: only the counters are reset */
        lab_status st = sg_reset_outputs(x, x.oob_off, x.grad_off);
        if (st != LAB_OK) return st;
        sg_det_split a, f;
        memset(&a, 0, sizeof a);
        memset(&f, 0, sizeof f);
        a.n[0] = (long)B * T * C, a.n[1] = (long)B * T * C, a.n[2] = x.n_dchunks * K * C, a.n[3] = x.n_tchunks * C * ((C + 3) / 4);
        unsigned th = x.det_threads;
        for (int j = 0; j < 4; ++j) {
            /* 32-bit indices in sg_det_spread: items and grid-stride steps stay below 2^31 */
            long bx = sg_det_grid(x, a.n[j]).x;
            if (a.n[j] >= 0x40000000L || bx * (long)th >= 0x40000000L)
                return lab_err_set(LAB_ERR_ARG, "semicrf cuda: B=%d T=%d K=%d C=%d is too large for the deterministic kernels' "
                                                "32-bit indices", B, T, K, C);
            a.first[j + 1] = a.first[j] + (unsigned)bx;
        }
        sg_det_spread<<<dim3(a.first[4], (unsigned)x.n), th>>>(P, x.cfg.guards, a);
        LAB_CUDA_CHECK(cudaGetLastError());
        /* finish: the reductions' grids as sg_det_reduce's, then g_cum over blocks of 32 x SG_DET_STRANDS */
        f.n[0] = (long)SG_PAD * SG_PAD, f.n[1] = (long)K * SG_PAD, f.n[2] = (long)B * (T + 1) * SG_PAD;
        unsigned fb[3] = {SG_PAD * SG_PAD / 32, (unsigned)K * SG_PAD / 32,
                          x.det_blocks ? x.det_blocks : (unsigned)((f.n[2] + 32 * SG_DET_STRANDS - 1) / (32 * SG_DET_STRANDS))};
        for (int j = 0; j < 3; ++j) f.first[j + 1] = f.first[j] + fb[j];
        f.first[4] = f.first[3];
        sg_det_finish<<<dim3(f.first[3], (unsigned)x.n), dim3(32, SG_DET_STRANDS)>>>(P, x.n_dchunks, x.n_tchunks, f);
        LAB_CUDA_CHECK(cudaGetLastError());
        return LAB_OK;
    }
    if (x.mode == SG_DET_PREV) {
        lab_status st = sg_reset_outputs(x, x.oob_off, x.grad_off);
        if (st != LAB_OK) return st;
        unsigned th = x.det_threads;
        long n1 = x.n_dchunks * C, n2 = (long)B * (T + 1) * C, n3 = x.n_tchunks * C * ((C + 3) / 4);
        sg_det_starts_dur<<<sg_det_grid(x, n1), th>>>(P, x.cfg.guards, x.n_dchunks);
        LAB_CUDA_CHECK(cudaGetLastError());
        sg_det_ends<<<sg_det_grid(x, n2), th>>>(P, x.cfg.guards);
        LAB_CUDA_CHECK(cudaGetLastError());
        sg_det_trans_part<<<sg_det_grid(x, n3), th>>>(P, x.cfg.guards, x.n_tchunks);
        LAB_CUDA_CHECK(cudaGetLastError());
        dim3 rb(32, SG_DET_STRANDS);
        sg_det_reduce<<<dim3(SG_PAD * SG_PAD / 32, (unsigned)x.n), rb>>>(P, 0, x.n_tchunks, (size_t)SG_PAD * SG_PAD, SG_PAD, C, C);
        LAB_CUDA_CHECK(cudaGetLastError());
        sg_det_reduce<<<dim3((unsigned)K * SG_PAD / 32, (unsigned)x.n), rb>>>(P, 1, x.n_dchunks, (size_t)K * SG_PAD, K, K, C);
        LAB_CUDA_CHECK(cudaGetLastError());
        return LAB_OK;
    }
    lab_status st = sg_reset_outputs(x, x.oob_off, x.sec[SG_SEC_OUT]);
    if (st != LAB_OK) return st;
    dim3 grid((unsigned)x.maxL, (unsigned)B, (unsigned)x.n);
    sg_marginals<<<grid, SG_THREADS>>>(P, x.cfg.guards, (int)x.cfg.layout, 0);
    LAB_CUDA_CHECK(cudaGetLastError());
    return LAB_OK;
}

/* Writes n floats of x and the guard zones around b (zone ids as the CPU emulation's arena numbers them) into
 * the host image img. */
static void sg_image_input(std::vector<unsigned char> &img, const sg_buf &b, const float *x, size_t n, uint64_t seed,
                           uint64_t zone)
{
    if (b.zone) {
        lab_semicrf_guard_fill(img.data() + b.off - b.zone, b.zone / 4, seed, 0x40000000ull * zone);
        lab_semicrf_guard_fill(img.data() + b.off + b.bytes, b.zone / 4, seed, 0x40000000ull * zone + 0x20000000ull);
    }
    if (x) memcpy(img.data() + b.off, x, n * 4);
}

/* Copies a section's host image to the device: one copy (arena), or one per buffer (exact allocations). */
static lab_status sg_upload(sg_ctx &x, int sec, const std::vector<unsigned char> &img)
{
    if (!x.exact) {
        LAB_CUDA_CHECK(cudaMemcpy(x.base[sec], img.data(), x.sec[sec], cudaMemcpyHostToDevice));
        return LAB_OK;
    }
    for (sg_buf *b : x.bufs)
        if (b->sec == sec) LAB_CUDA_CHECK(cudaMemcpy(b->p, img.data() + b->off, b->bytes, cudaMemcpyHostToDevice));
    return LAB_OK;
}

/* Prepares the batch p[0..n) under cfgs[0..n) (configs alike but for their guard and schedule seeds; problems of
 * one shape) for `mode`: buffers placed and allocated, inputs uploaded, the forward and backward passes run (x is
 * ready for sg_accumulate). LAB_ERR_ARG for a bad config, shape, length or launch variable; LAB_ERR_NOMEM;
 * LAB_ERR_DEVICE. */
static lab_status sg_prepare(const lab_semicrf_problem *const *p, const lab_semicrf_config *cfgs, size_t n, int mode, sg_ctx &x)
{
    if (n < 1 || n > 65535) return lab_err_set(LAB_ERR_ARG, "semicrf cuda: a batch of %zu problems: need 1..65535", n);
    const lab_semicrf_config *cfg = &cfgs[0];
    const int B = p[0]->B, T = p[0]->T, K = p[0]->K, C = p[0]->C;
    if (cfg->accum == LAB_SEMICRF_ACC_DETERMINISTIC && cfg->layout != LAB_SEMICRF_LAYOUT_PADDED)
        return lab_err_set(LAB_ERR_ARG, "semicrf cuda: config: the deterministic accumulation needs the padded layout");
    for (size_t q = 0; q < n; ++q) {
        const lab_semicrf_config *c = &cfgs[q];
        if (p[q]->B != B || p[q]->T != T || p[q]->K != K || p[q]->C != C || p[q]->use_proj != p[0]->use_proj)
            return lab_err_set(LAB_ERR_ARG, "semicrf cuda: batch problem %zu is B=%d T=%d K=%d C=%d, not the first's B=%d T=%d K=%d C=%d",
                               q, p[q]->B, p[q]->T, p[q]->K, p[q]->C, B, T, K, C);
        if (c->layout != cfg->layout || c->accum != cfg->accum || c->guards != cfg->guards || c->exact_alloc != cfg->exact_alloc)
            return lab_err_set(LAB_ERR_ARG, "semicrf cuda: batch config %zu differs from the first in more than its seeds", q);
        for (int b = 0; b < B; ++b)
            if (p[q]->len[b] < 1 || p[q]->len[b] > T)
                return lab_err_set(LAB_ERR_ARG, "semicrf cuda: len[%d] = %d: need 1..T = %d%s", b, p[q]->len[b], T,
                                   n > 1 ? " (a batch problem)" : "");
    }
    lab_status st = sg_det_launch(&x.det_threads, &x.det_blocks);
    if (st != LAB_OK) return st;
    x.n = n, x.cfg = *cfg, x.mode = mode, x.B = B, x.T = T, x.K = K, x.C = C, x.use_proj = p[0]->use_proj;
    /* Under a memory checker (the case says so: cfg->exact_alloc) allocations are exact: guard zones would
     * absorb the stray loads the tool is there to see. */
    x.exact = cfg->exact_alloc;
    int padded = cfg->layout == LAB_SEMICRF_LAYOUT_PADDED;
    /* Stray layouts: inputs and gradients between guard zones of the seed's neighbour contents (what a stray load
     * reads, where a stray atomic lands), unless exact allocations let memcheck see them. */
    x.guarded = !padded && !x.exact;
    x.W = padded ? SG_PAD : C;
    x.esz = cfg->accum == LAB_SEMICRF_ACC_F64_ATOMIC ? 8 : 4;
    x.ncum_in = (size_t)B * (T + 1) * C, x.npos_in = (size_t)B * T * C;
    x.ncum = (size_t)B * (T + 1) * x.W, x.npos = (size_t)B * T * x.W, x.nrowp = (size_t)B * (T + 1) * SG_PAD;
    x.n_dchunks = ((long)B * T + SG_DET_ROWS_D - 1) / SG_DET_ROWS_D;
    x.n_tchunks = ((long)B * T + SG_DET_ROWS_T - 1) / SG_DET_ROWS_T;
    size_t izone = x.guarded ? SG_GUARD_WORDS * 4 : 0, gzone = x.guarded ? SG_GUARD_WORDS * 8 : 0, esz = x.esz;
    long W = x.W;
    x.pb.resize(n); /* never resized again: x.bufs points into it */
    for (size_t q = 0; q < n; ++q) {
        sg_pbufs &b = x.pb[q];
        sg_place(x, SG_SEC_IN, b.cum, x.ncum_in * 4, izone);
        sg_place(x, SG_SEC_IN, b.trans, (size_t)C * C * 4, izone);
        sg_place(x, SG_SEC_IN, b.dur, (size_t)K * C * 4, izone);
        sg_place(x, SG_SEC_IN, b.ps, x.npos_in * 4, izone);
        sg_place(x, SG_SEC_IN, b.pe, x.npos_in * 4, izone);
        sg_place(x, SG_SEC_IN, b.len, (size_t)B * sizeof(int), 0);
        sg_place(x, SG_SEC_WORK, b.alpha, x.nrowp * 4, 0);
        sg_place(x, SG_SEC_WORK, b.ain, x.nrowp * 4, 0);
        sg_place(x, SG_SEC_WORK, b.beta, x.nrowp * 4, 0);
        sg_place(x, SG_SEC_WORK, b.bout, x.nrowp * 4, 0);
        if (mode == SG_DET || mode == SG_DET_PREV) {
            sg_place(x, SG_SEC_WORK, b.dpart, (size_t)x.n_dchunks * K * SG_PAD * 4, 0);
            sg_place(x, SG_SEC_WORK, b.tpart, (size_t)x.n_tchunks * SG_PAD * SG_PAD * 4, 0);
        }
        for (int i = 0; i < B; ++i) x.maxL = std::max(x.maxL, p[q]->len[i]);
    }
    sg_place(x, SG_SEC_IN, x.desc, n * sizeof(sg_prob), 0);
    /* outputs: every log Z, every counter pair, then the gradient buffers (zones 6..10 around a stray layout's) */
    for (size_t q = 0; q < n; ++q) sg_place(x, SG_SEC_OUT, x.pb[q].logz, (size_t)B * 4, 0);
    x.oob_off = ((x.sec[SG_SEC_OUT] + 255) / 256) * 256;
    for (size_t q = 0; q < n; ++q) sg_place(x, SG_SEC_OUT, x.pb[q].oob, 2 * sizeof(unsigned long long), 0);
    x.grad_off = ((x.sec[SG_SEC_OUT] + 255) / 256) * 256;
    for (size_t q = 0; q < n; ++q) {
        sg_pbufs &b = x.pb[q];
        sg_place(x, SG_SEC_OUT, b.gtrans, (size_t)W * W * esz, gzone);
        sg_place(x, SG_SEC_OUT, b.gcum, x.ncum * esz, gzone);
        sg_place(x, SG_SEC_OUT, b.gdur, (size_t)K * W * esz, gzone);
        sg_place(x, SG_SEC_OUT, b.gps, x.npos * esz, gzone);
        sg_place(x, SG_SEC_OUT, b.gpe, x.npos * esz, gzone);
    }
    /* memory: one arena from the worker's pool (lab_devmem.h), or one exact cudaMalloc per buffer */
    if (!x.exact) {
        size_t at[SG_NSEC], total = 0;
        for (int s = 0; s < SG_NSEC; ++s) at[s] = total, total += ((x.sec[s] + 255) / 256) * 256;
        LAB_CUDA_CHECK(lab_devmem_alloc((void **)&x.arena, total + 16));
        for (int s = 0; s < SG_NSEC; ++s) x.base[s] = x.arena + at[s];
        for (sg_buf *b : x.bufs) b->p = x.base[b->sec] + b->off;
    } else {
        for (sg_buf *b : x.bufs) {
            LAB_CUDA_CHECK(cudaMalloc(&b->own, b->bytes ? b->bytes : 1));
            b->p = b->own;
        }
    }
    /* the inputs' image: contents, zones, lengths, the problems' descriptors */
    try {
        x.img_in.assign(x.sec[SG_SEC_IN], 0);
        x.img_out.assign(x.sec[SG_SEC_OUT], 0);
    } catch (...) {
        return lab_err_set(LAB_ERR_NOMEM, "semicrf cuda: out of memory for the host images of a batch of %zu", n);
    }
    std::vector<sg_prob> dp(n);
    for (size_t q = 0; q < n; ++q) {
        const lab_semicrf_problem *pq = p[q];
        sg_pbufs &b = x.pb[q];
        uint64_t gs = cfgs[q].guard_seed;
        sg_image_input(x.img_in, b.cum, pq->cum, x.ncum_in, gs, 1);
        sg_image_input(x.img_in, b.trans, pq->trans, (size_t)C * C, gs, 2);
        sg_image_input(x.img_in, b.dur, pq->dur, (size_t)K * C, gs, 3);
        sg_image_input(x.img_in, b.ps, pq->use_proj ? pq->proj_start : NULL, x.npos_in, gs, 4); /* zeros without proj */
        sg_image_input(x.img_in, b.pe, pq->use_proj ? pq->proj_end : NULL, x.npos_in, gs, 5);
        memcpy(x.img_in.data() + b.len.off, pq->len, (size_t)B * sizeof(int));
        const sg_buf *gz[5] = {&b.gtrans, &b.gcum, &b.gdur, &b.gps, &b.gpe};
        for (int i = 0; i < 5 && x.guarded; ++i) {
            const sg_buf &g = *gz[i];
            lab_semicrf_guard_fill(x.img_out.data() + g.off - g.zone, g.zone / 4, gs, 0x40000000ull * (uint64_t)(6 + i));
            lab_semicrf_guard_fill(x.img_out.data() + g.off + g.bytes, g.zone / 4, gs, 0x40000000ull * (uint64_t)(6 + i) + 0x20000000ull);
        }
        dp[q].in = {(const float *)b.cum.p, (const float *)b.trans.p, (const float *)b.dur.p, (const float *)b.ps.p,
                    (const float *)b.pe.p, (const int *)b.len.p, B, T, K, C, pq->use_proj,
                    (long)x.ncum_in, (long)C * C, (long)K * C, (long)x.npos_in,
                    (unsigned long long *)b.oob.p, !padded};
        dp[q].g = {b.gcum.p, b.gtrans.p, b.gdur.p, b.gps.p, b.gpe.p, esz == 8, nullptr, nullptr, W,
                   (long)x.ncum, (long)W * W, (long)K * W, (long)x.npos};
        dp[q].alpha = (float *)b.alpha.p, dp[q].ain = (float *)b.ain.p, dp[q].beta = (float *)b.beta.p;
        dp[q].bout = (float *)b.bout.p, dp[q].logz = (float *)b.logz.p;
        dp[q].dpart = (float *)b.dpart.p, dp[q].tpart = (float *)b.tpart.p;
    }
    memcpy(x.img_in.data() + x.desc.off, dp.data(), n * sizeof(sg_prob));
    if ((st = sg_upload(x, SG_SEC_IN, x.img_in)) != LAB_OK) return st;
    sg_fill_passes<<<dim3(sg_blocks(x.nrowp, 256), (unsigned)n), 256>>>(sg_dev_probs(x), x.nrowp);
    LAB_CUDA_CHECK(cudaGetLastError());
    if ((st = sg_fwd_bwd_launch(x)) != LAB_OK) return st;
    LAB_CUDA_CHECK(cudaDeviceSynchronize());
    return LAB_OK;
}

/* Reads the outputs section back (one copy, or one per buffer under exact allocations) into x.back. */
static lab_status sg_download(sg_ctx &x)
{
    try {
        x.back.assign(x.sec[SG_SEC_OUT], 0);
    } catch (...) {
        return lab_err_set(LAB_ERR_NOMEM, "semicrf cuda: out of memory for the outputs of a batch of %zu", x.n);
    }
    if (!x.exact) {
        LAB_CUDA_CHECK(cudaMemcpy(x.back.data(), x.base[SG_SEC_OUT], x.sec[SG_SEC_OUT], cudaMemcpyDeviceToHost));
        return LAB_OK;
    }
    for (sg_buf *b : x.bufs)
        if (b->sec == SG_SEC_OUT) LAB_CUDA_CHECK(cudaMemcpy(x.back.data() + b->off, b->p, b->bytes, cudaMemcpyDeviceToHost));
    return LAB_OK;
}

/* Words of a guarded gradient buffer's zones changed where no stray may reach: the whole head zone (no index is
 * negative) and the tail zone from SG_STRAY_REACH_BYTES on. 0 for an unguarded buffer. */
static size_t sg_guard_breach(const sg_ctx &x, const sg_buf &b)
{
    if (!b.zone) return 0;
    size_t breach = 0;
    const unsigned char *was = x.img_out.data(), *now = x.back.data();
    for (size_t i = b.off - b.zone; i < b.off; i += 4) breach += memcmp(was + i, now + i, 4) != 0;
    for (size_t i = b.off + b.bytes + SG_STRAY_REACH_BYTES; i < b.off + b.bytes + b.zone; i += 4) breach += memcmp(was + i, now + i, 4) != 0;
    return breach;
}

/* Problem q's gradients from x.back (sg_download) into o (allocated here), sliced to C. LAB_ERR_NOMEM. */
static lab_status sg_readback(const lab_semicrf_problem *p, const sg_ctx &x, size_t q, lab_semicrf_out *o)
{
    const int B = p->B, T = p->T, K = p->K, C = p->C;
    const size_t esz = x.esz, ncum_in = x.ncum_in, npos_in = x.npos_in;
    const long W = x.W;
    const sg_pbufs &b = x.pb[q];
    memset(o, 0, sizeof *o);
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
    const unsigned char *h = x.back.data();
    auto get = [esz, h](const sg_buf &g, size_t i) -> double {
        if (esz == 8) {
            double d;
            memcpy(&d, h + g.off + 8 * i, 8);
            return d;
        }
        float f;
        memcpy(&f, h + g.off + 4 * i, 4);
        return (double)f;
    };
    memcpy(o->logZ, h + b.logz.off, (size_t)B * sizeof(float));
    for (size_t r = 0; r < (size_t)B * (T + 1); ++r)
        for (int c = 0; c < C; ++c) {
            double v = get(b.gcum, r * W + c);
            o->g_cum[r * C + c] = (float)v;
            if (o->acc_cum) o->acc_cum[r * C + c] = v;
        }
    for (int i = 0; i < C; ++i)
        for (int j = 0; j < C; ++j) {
            double v = get(b.gtrans, (size_t)i * W + j);
            o->g_trans[(size_t)i * C + j] = (float)v;
            if (o->acc_trans) o->acc_trans[(size_t)i * C + j] = v;
        }
    for (int k = 0; k < K; ++k)
        for (int c = 0; c < C; ++c) {
            double v = get(b.gdur, (size_t)k * W + c);
            o->g_dur[(size_t)k * C + c] = (float)v;
            if (o->acc_dur) o->acc_dur[(size_t)k * C + c] = v;
        }
    for (size_t r = 0; r < (size_t)B * T; ++r)
        for (int c = 0; c < C; ++c) {
            o->g_ps[r * C + c] = p->use_proj ? (float)get(b.gps, r * W + c) : 0.0f;
            o->g_pe[r * C + c] = p->use_proj ? (float)get(b.gpe, r * W + c) : 0.0f;
        }
    if (W > C) { /* padded layout: padding-column values that are not 0 (the slice drops them; NaN counts) */
        size_t nz = 0;
        const sg_buf *hv[5] = {&b.gcum, &b.gtrans, &b.gdur, &b.gps, &b.gpe};
        const size_t rows[5] = {(size_t)B * (T + 1), (size_t)W, (size_t)K, p->use_proj ? (size_t)B * T : 0,
                                p->use_proj ? (size_t)B * T : 0};
        for (int k = 0; k < 5; ++k)
            for (size_t r = 0; r < rows[k]; ++r)
                for (long c = 0; c < W; ++c)
                    if (c >= C || (k == 1 && r >= (size_t)C)) nz += get(*hv[k], r * W + c) != 0.0;
        o->pad_nonzero = nz;
    }
    unsigned long long oob[2];
    memcpy(oob, h + b.oob.off, sizeof oob);
    o->oob_reads = (size_t)oob[0]; /* loads and atomics outside their allocation, counted by the kernel */
    o->oob_writes = (size_t)oob[1];
    /* Contained: guard zones around every gradient buffer, and none changed beyond the strays' reach. */
    o->guard_breach = sg_guard_breach(x, b.gtrans) + sg_guard_breach(x, b.gcum) + sg_guard_breach(x, b.gdur) +
                      sg_guard_breach(x, b.gps) + sg_guard_breach(x, b.gpe);
    o->contained = x.guarded && o->guard_breach == 0;
    return LAB_OK;
}

static int sg_mode_of(const lab_semicrf_config *cfg) { return cfg->accum == LAB_SEMICRF_ACC_DETERMINISTIC ? SG_DET : SG_ATOMIC; }

static lab_status sg_run(const lab_semicrf_problem *p, const lab_semicrf_config *cfg, int mode, int reps, lab_semicrf_out *o,
                         double *ms_backward)
{
    if (o) memset(o, 0, sizeof *o);
    if (reps < 1) return lab_err_set(LAB_ERR_ARG, "semicrf cuda: reps = %d: need >= 1", reps);
    sg_ctx x;
    lab_status st = sg_prepare(&p, cfg, 1, mode, x);
    if (st != LAB_OK) return st;
    cudaEvent_t e1, e2;
    LAB_CUDA_CHECK(lab_cuda_event_create(&e1));
    LAB_CUDA_CHECK(lab_cuda_event_create(&e2));
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
    if (!o) return LAB_OK;
    if ((st = sg_download(x)) != LAB_OK) return st;
    return sg_readback(p, x, 0, o);
}

extern "C" lab_status lab_semicrf_cuda_run(const lab_semicrf_problem *p, const lab_semicrf_config *cfg, int reps,
                                           lab_semicrf_out *o, double *ms_backward)
{
    return sg_run(p, cfg, sg_mode_of(cfg), reps, o, ms_backward);
}

extern "C" lab_status lab_semicrf_cuda_run_det_previous(const lab_semicrf_problem *p, const lab_semicrf_config *cfg,
                                                        lab_semicrf_out *o)
{
    if (cfg->accum != LAB_SEMICRF_ACC_DETERMINISTIC) {
        if (o) memset(o, 0, sizeof *o);
        return lab_err_set(LAB_ERR_ARG, "semicrf cuda: the previous deterministic kernels need the deterministic accumulation");
    }
    return sg_run(p, cfg, SG_DET_PREV, 1, o, NULL);
}

extern "C" lab_status lab_semicrf_cuda_run_batch(const lab_semicrf_problem *const *p, const lab_semicrf_config *cfgs, size_t n,
                                                 lab_semicrf_out *outs)
{
    for (size_t q = 0; q < n; ++q) memset(&outs[q], 0, sizeof outs[q]);
    if (n < 1) return lab_err_set(LAB_ERR_ARG, "semicrf cuda: an empty batch");
    sg_ctx x;
    lab_status st = sg_prepare(p, cfgs, n, sg_mode_of(&cfgs[0]), x);
    if (st == LAB_OK) st = sg_accumulate(x);
    cudaError_t e = st == LAB_OK ? cudaDeviceSynchronize() : cudaSuccess;
    if (e != cudaSuccess) st = lab_cuda_fail(__FILE__, __LINE__, "cudaDeviceSynchronize", cudaGetErrorString(e));
    if (st == LAB_OK) st = sg_download(x);
    for (size_t q = 0; q < n && st == LAB_OK; ++q) st = sg_readback(p[q], x, q, &outs[q]);
    if (st != LAB_OK)
        for (size_t q = 0; q < n; ++q) lab_semicrf_out_free(&outs[q]);
    return st;
}

extern "C" lab_status lab_semicrf_cuda_run_cases(const lab_case *cases, size_t n, lab_semicrf_config (*config)(const lab_case *),
                                                 lab_semicrf_out *outs)
{
    std::vector<const lab_semicrf_problem *> pp;
    std::vector<lab_semicrf_config> cfgs;
    try {
        pp.resize(n);
        cfgs.resize(n);
    } catch (...) {
        return lab_err_set(LAB_ERR_NOMEM, "semicrf cuda: out of memory for a seed batch of %zu", n);
    }
    for (size_t i = 0; i < n; ++i) {
        pp[i] = &((const lab_semicrf_group *)cases[i].group)->p;
        cfgs[i] = config(&cases[i]);
    }
    return lab_semicrf_cuda_run_batch(pp.data(), cfgs.data(), n, outs);
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
    LAB_CUDA_CHECK(lab_cuda_event_create(&e0));
    LAB_CUDA_CHECK(lab_cuda_event_create(&e1));
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
 * deterministic fix (sg_det_spread, sg_det_finish) and the previous deterministic kernels, on one problem; each
 * prepared once, then SG_BENCH_WARMUP warm-up rounds and
 * SG_BENCH_REPS timed rounds, a round timing every variant once in turn with CUDA events (so drifting clocks hit
 * all alike); per-round ratios give the spread. Prints lines and two `lab-bench-record` lines (replay/lab_bench.h):
 * deterministic / f32-atomic (target 1.15) and deterministic / f64-atomic (target 1: faster). The production and
 * the previous deterministic kernels' gradients are compared byte for byte after the rounds: LAB_ERR_MISMATCH if
 * they differ. */
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
    static const char *const names[NV] = {"f32-atomic (bug)", "f64-atomic (fix)", "deterministic (fix)", "deterministic previous"};
    static const lab_semicrf_accum acc[NV] = {LAB_SEMICRF_ACC_F32_ATOMIC, LAB_SEMICRF_ACC_F64_ATOMIC,
                                              LAB_SEMICRF_ACC_DETERMINISTIC, LAB_SEMICRF_ACC_DETERMINISTIC};
    static const int mode[NV] = {SG_ATOMIC, SG_ATOMIC, SG_DET, SG_DET_PREV};
    const int nv = NV;
    cudaError_t ce = cudaSuccess;
    std::vector<sg_ctx *> x(NV, nullptr);
    std::vector<std::vector<double>> t(NV);
    std::vector<double> fb;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    for (int i = 0; i < nv && st == LAB_OK; ++i) {
        lab_semicrf_config cfg = {LAB_SEMICRF_LAYOUT_PADDED, acc[i], LAB_SEMICRF_GUARDS_ALL, 1, 0};
        x[i] = new sg_ctx();
        const lab_semicrf_problem *pp = &p;
        st = sg_prepare(&pp, &cfg, 1, mode[i], *x[i]);
    }
    if (st == LAB_OK && (ce = lab_cuda_event_create(&e0)) == cudaSuccess) ce = lab_cuda_event_create(&e1);
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
    /* the production kernels' gradients against the previous kernels', every byte (both wrote them last round) */
    size_t differ = 0;
    if (st == LAB_OK && (st = sg_download(*x[2])) == LAB_OK && (st = sg_download(*x[3])) == LAB_OK)
        for (size_t i = x[2]->grad_off; i < x[2]->back.size() && i < x[3]->back.size(); ++i) differ += x[2]->back[i] != x[3]->back[i];
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
        fprintf(f, "deterministic previous / now = %.2f; gradients of the two: %s (%zu of %zu output bytes differ)\n",
                med[3] / med[2], differ ? "DIFFERENT BITS" : "the same bits", differ, x[2]->back.size() - x[2]->grad_off);
        fprintf(f, "whole backward (forward+beta included): deterministic / f32-atomic = %.3f, / f64-atomic = %.3f\n",
                (med[2] + mfb) / (med[0] + mfb), (med[2] + mfb) / (med[1] + mfb));
        fprintf(f, "device ceiling: D2D cudaMemcpy %.0f GB/s (1 GiB, read+write); the deterministic stage moves >= %.1f MB: "
                   ">= %.4f ms at that bandwidth\n", gbs, (in_bytes + out_bytes) / 1e6, floor_ms);
        if (differ)
            st = lab_err_set(LAB_ERR_MISMATCH, "semicrf bench B=%d T=%d K=%d C=%d: the deterministic kernels' gradients differ from "
                             "the previous kernels' in %zu bytes", B, T, K, C, differ);
    }
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    for (sg_ctx *c : x) delete c;
    lab_semicrf_problem_free(&p);
    return st;
}
