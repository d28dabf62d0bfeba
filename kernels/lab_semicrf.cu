/* lab_semicrf (CUDA): the semi-Markov CRF kernels on the GPU: forward, backward, the marginal kernel with real atomicAdd (float32, float64), the deterministic accumulation (fixed-order sums organised by destination, no atomics), and their launches (a batch's buffers and runs: lab_semicrf_run.cu; the benchmark: lab_semicrf_bench.cu). */
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
#include "lab_semicrf_cuda.h"

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
 *   operations, so the same value each time. Item indices are 32-bit (lab_semicrf_cu_accumulate refuses larger problems).
 * - sg_det_finish: the two fixed-order reductions of the partials (sg_det_reduce's strands and tree) and g_cum
 *   = end - start per (b, t, c) from g_pe and g_ps, in block ranges of one grid.
 * Every sum is a function of the data and the compile-time constants only, not of the grid or the block size. */

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
    const unsigned stride = nb * blockDim.x; /* every kind's item count < 2^31 (lab_semicrf_cu_accumulate checks) */
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

__global__ void sg_fill_passes(const sg_prob *P, size_t n)
{
    const sg_prob &X = P[blockIdx.y];
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) X.alpha[i] = X.ain[i] = X.beta[i] = X.bout[i] = LAB_SEMICRF_NEG_INF;
}

static unsigned sg_blocks(size_t n, unsigned threads) { return (unsigned)((n + threads - 1) / threads); }

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

void lab_semicrf_cu_fill_passes(const sg_ctx &x, size_t n)
{
    sg_fill_passes<<<dim3(sg_blocks(x.nrowp, 256), (unsigned)n), 256>>>(sg_dev_probs(x), x.nrowp);
}

/* The forward and backward passes (alpha, log Z, beta) of every problem of x. */
lab_status lab_semicrf_cu_fwd_bwd(sg_ctx &x)
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
lab_status lab_semicrf_cu_accumulate(sg_ctx &x)
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

/* this module in the load check that runs before any case (lab_cuda.h) */
LAB_CUDA_MODULE(sg_fwd_bwd);
