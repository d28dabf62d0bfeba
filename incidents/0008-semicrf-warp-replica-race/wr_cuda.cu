/* wr_cuda: incident 0008's backward on the GPU with the thread ownership of the upstream Triton kernel at 1..8 warps (one store per element, loads replicated across warps where Triton rematerialises them, no barrier between a store and the next loads unless the fix adds one), and the study of how often that race fires. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>

#include "lab_cuda.h"
#include "lab_devmem.h"
#include "wr.h"

#define WR_FULL 0xffffffffu

/* Everything the backward kernel reads and writes. */
struct wr_args {
    const float *cum, *trans, *dur, *ps, *pe; /* inputs, C wide */
    const int *len;
    const float *logZ, *ckpt;                  /* the forward's: [B], [B][NCK][K][C_PAD] */
    float *abuf, *ring;                        /* [B][SEG][C_PAD], [B][K][C_PAD] (global unless SMEM) */
    void *gcum, *gtr, *gdb, *gps, *gpe;        /* per-batch workspaces, widths of the index variant */
    int B, T, K, C, I, NCK, SEG, use_proj;
    int SPB;                                   /* sequences per problem: a seed batch is B / SPB problems side by
                                                  side, problem q's trans and dur at q C C and q K C */
};

/* The arguments as block b's sequence sees them: its problem's transitions and duration biases. */
__device__ __forceinline__ wr_args wr_for_block(wr_args a, int b)
{
    int q = b / a.SPB;
    a.trans += (size_t)q * a.C * a.C;
    a.dur += (size_t)q * a.K * a.C;
    return a;
}

__device__ __forceinline__ float wr_clampf(float x, float lo, float hi)
{
    if (x != x) return x;
    return x < lo ? lo : (x > hi ? hi : x);
}

template <typename A>
__device__ __forceinline__ A wr_acc(A a, float xf)
{
    A x = (A)xf, neg = (A)WR_NEG_INF;
    A mx = a > x ? a : x;
    bool both = a < neg + (A)1 && x < neg + (A)1;
    A ms = both ? (A)0 : mx;
    A r = log(exp(a - ms) + exp(x - ms) + (A)1e-10);
    return both ? neg : mx + r;
}
template <>
__device__ __forceinline__ float wr_acc<float>(float a, float x)
{
    float mx = a > x ? a : x;
    bool both = a < WR_NEG_INF + 1.0f && x < WR_NEG_INF + 1.0f;
    float ms = both ? 0.0f : mx;
    float r = logf(expf(a - ms) + expf(x - ms) + 1e-10f);
    return both ? WR_NEG_INF : mx + r;
}

/* Segment score of class c (index ci, the variant's read index) starting at s with duration k. */
__device__ __forceinline__ float wr_seg(const wr_args &a, const float *cum, const float *ps, const float *pe, int s, int k,
                                        int ci)
{
    int C = a.C;
    float v = cum[(size_t)(s + k) * C + ci] - cum[(size_t)s * C + ci];
    v = v + a.dur[(size_t)(k - 1) * C + ci];
    if (a.use_proj) {
        v = v + ps[(size_t)s * C + ci];
        v = v + pe[(size_t)(s + k - 1) * C + ci];
    }
    return v;
}

/* alpha[t][r] for this thread's rows (Phase 1 of the backward, and the forward): online logsumexp over durations
 * k of the row logsumexp over src columns of alpha[t - k][s] + (seg(t - k, k, r) + trans[s][r]). The source row of
 * alpha[t - k]: full = 1, abuf holds every position (the forward); full = 0, abuf holds positions s0.. and the
 * checkpoint ring ck[n] the ones before (the backward). */
template <int NW, bool REMAT, int INDEX, typename acc_t>
__device__ __forceinline__ void wr_alpha_at(const wr_args &a, const float *cum, const float *ps, const float *pe,
                                            const float (&trb)[WR_C_PAD / (NW >= 2 ? NW / 2 : 1)][NW >= 2 ? 1 : 2],
                                            const int (&col)[NW >= 2 ? 1 : 2], int t, int s0, int n, const float *abuf,
                                            const float *ck, int full, float (*s_x)[WR_C_PAD],
                                            acc_t (&at)[WR_C_PAD / (NW >= 2 ? NW / 2 : 1)])
{
    constexpr int WC = NW >= 2 ? 2 : 1, WRW = NW >= 2 ? NW / 2 : 1, NR = WR_C_PAD / WRW, NC = WC == 1 ? 2 : 1;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wc = warp % WC, wrow = warp / WC;
    const int C = a.C, K = a.K, SEG = a.SEG;
    const bool owner = tid < WR_C_PAD;
#define WR_RIDX(c) (INDEX == WR_INDEX_RAW ? (c) : min((c), C - 1))
#pragma unroll
    for (int i = 0; i < NR; ++i) at[i] = (acc_t)WR_NEG_INF;
    for (int k = 1; k <= K; ++k) {
        const int sp = t - k;
        if (sp < 0) break;
        const int ls = sp - s0;
        const float *src = full ? abuf + (size_t)sp * WR_C_PAD
                                : (ls >= 0 && ls < SEG) ? abuf + (size_t)ls * WR_C_PAD
                                                        : ck + ((size_t)n * K + (size_t)(sp % K)) * WR_C_PAD;
        float ap[NC];
        if (REMAT || NW <= 2) { /* each thread loads the columns it uses (owner's own at <= 2 warps) */
#pragma unroll
            for (int j = 0; j < NC; ++j) ap[j] = col[j] < C ? src[col[j]] : WR_NEG_INF;
        } else { /* no replicated load: owner loads, shared-memory broadcast */
            __syncthreads();
            if (owner) s_x[0][tid] = tid < C ? src[tid] : WR_NEG_INF;
            __syncthreads();
#pragma unroll
            for (int j = 0; j < NC; ++j) ap[j] = s_x[0][col[j]];
        }
        float v[NR][NC], mx[NR], sm[NR];
#pragma unroll
        for (int i = 0; i < NR; ++i) {
            int r = wrow + i * WRW;
            float sg = r < C ? wr_seg(a, cum, ps, pe, sp, k, WR_RIDX(r)) : 0.0f;
            float m = WR_NEG_INF;
#pragma unroll
            for (int j = 0; j < NC; ++j) {
                v[i][j] = (r < C && col[j] < C) ? ap[j] + (sg + trb[i][j]) : WR_NEG_INF;
                m = j == 0 || v[i][j] > m ? v[i][j] : m;
            }
#pragma unroll
            for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(WR_FULL, m, off));
            mx[i] = m;
        }
        if (WC == 2) { /* row max across the two column warps */
            __syncthreads();
            if (lane == 0)
#pragma unroll
                for (int i = 0; i < NR; ++i) s_x[wc][wrow + i * WRW] = mx[i];
            __syncthreads();
#pragma unroll
            for (int i = 0; i < NR; ++i) mx[i] = fmaxf(s_x[0][wrow + i * WRW], s_x[1][wrow + i * WRW]);
        }
#pragma unroll
        for (int i = 0; i < NR; ++i) {
            float ms = mx[i] < WR_NEG_INF + 1.0f ? 0.0f : mx[i], s = 0.0f;
#pragma unroll
            for (int j = 0; j < NC; ++j) s = s + expf(v[i][j] - ms);
#pragma unroll
            for (int off = 16; off > 0; off >>= 1) s = s + __shfl_xor_sync(WR_FULL, s, off);
            sm[i] = s;
        }
        if (WC == 2) {
            __syncthreads();
            if (lane == 0)
#pragma unroll
                for (int i = 0; i < NR; ++i) s_x[wc][wrow + i * WRW] = sm[i];
            __syncthreads();
#pragma unroll
            for (int i = 0; i < NR; ++i) sm[i] = s_x[0][wrow + i * WRW] + s_x[1][wrow + i * WRW];
        }
#pragma unroll
        for (int i = 0; i < NR; ++i) {
            int r = wrow + i * WRW;
            bool all = mx[i] < WR_NEG_INF + 1.0f;
            float sfk = all ? WR_NEG_INF : mx[i] + logf(sm[i] + 1e-10f);
            sfk = r < C ? sfk : WR_NEG_INF;
            at[i] = wr_acc<acc_t>(at[i], sfk);
        }
    }
#undef WR_RIDX
}

/* The backward: one block per batch element, 32 NW threads. Template: warps, rematerialised loads, barrier after
 * the buffer stores (the fix), index variant, float64 accumulation, buffers in shared memory (racecheck study),
 * minimum blocks per SM (a register cap for the spill study). */
template <int NW, bool REMAT, bool BAR, int INDEX, bool F64, bool SMEM, int MINB>
__global__ void __launch_bounds__(32 * NW, MINB) wr_bwd(wr_args a_all)
{
    const wr_args a = wr_for_block(a_all, blockIdx.x);
    constexpr int NT = 32 * NW;
    constexpr int WC = NW >= 2 ? 2 : 1, WRW = NW >= 2 ? NW / 2 : 1, NR = WR_C_PAD / WRW, NC = WC == 1 ? 2 : 1;
    typedef typename std::conditional<F64, double, float>::type acc_t;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wc = warp % WC, wrow = warp / WC;
    const int b = blockIdx.x;
    const int C = a.C, K = a.K, T = a.T, I = a.I, NCK = a.NCK, SEG = a.SEG;
    const int L = a.len[b];
    const float logZ = a.logZ[b];
    const int Wc = INDEX == WR_INDEX_PAD ? WR_C_PAD : C, Wt = INDEX == WR_INDEX_RAW ? C : WR_C_PAD;
    __shared__ float s_x[2][WR_C_PAD];   /* row partials per column warp; owner-layout exchange */
    __shared__ float s_c[WRW][WR_C_PAD]; /* column partials per warp-row */
    extern __shared__ float s_dyn[];
    float *abuf = SMEM ? s_dyn : a.abuf + (size_t)b * SEG * WR_C_PAD;
    float *ring = SMEM ? s_dyn + (size_t)SEG * WR_C_PAD : a.ring + (size_t)b * K * WR_C_PAD;
    if (SMEM) {
        for (int i = tid; i < (SEG + K) * WR_C_PAD; i += NT) s_dyn[i] = WR_NEG_INF;
        __syncthreads();
    }
    const float *cum = a.cum + (size_t)b * (T + 1) * C;
    const float *ps = a.ps + (size_t)b * T * C, *pe = a.pe + (size_t)b * T * C;
    const float *ck = a.ckpt + (size_t)b * NCK * K * WR_C_PAD;
    acc_t *gcum = (acc_t *)a.gcum + (size_t)b * (T + 1) * Wc;
    acc_t *gps = (acc_t *)a.gps + (size_t)b * T * Wc, *gpe = (acc_t *)a.gpe + (size_t)b * T * Wc;
    acc_t *gtr = (acc_t *)a.gtr + (size_t)b * Wt * Wt, *gdb = (acc_t *)a.gdb + (size_t)b * K * Wt;
    /* read index (inputs) and write index (gradients) of a lane, per the index variant */
#define WR_RIDX(c) (INDEX == WR_INDEX_RAW ? (c) : min((c), C - 1))
#define WR_WIDX(c) (INDEX == WR_INDEX_CLAMP ? min((c), C - 1) : (c))
    /* owner-layout elements of this thread: e = tid (tid < 64), or lane and lane + 32 with one warp */
    constexpr int NOWN = NT < WR_C_PAD ? WR_C_PAD / NT : 1;
    const bool owner = tid < WR_C_PAD;
    int col[NC];
#pragma unroll
    for (int j = 0; j < NC; ++j) col[j] = lane + 32 * wc + 32 * j;
    /* the transition tile of this thread (loaded once, masked): trb[i][j] = trans[s][r] */
    float trb[NR][NC];
#pragma unroll
    for (int i = 0; i < NR; ++i)
#pragma unroll
        for (int j = 0; j < NC; ++j) {
            int r = wrow + i * WRW, s = col[j];
            const float *ptr = a.trans + (size_t)WR_RIDX(s) * C + WR_RIDX(r);
            trb[i][j] = (r < C && s < C) ? *ptr : 0.0f;
        }
    /* beta ring: 0 in the final position's slot, NEG_INF elsewhere (owner stores) */
    for (int ki = 0; ki < K; ++ki)
#pragma unroll
        for (int o = 0; o < NOWN; ++o) {
            int e = tid + o * NT;
            if (owner && e < C) ring[(size_t)ki * WR_C_PAD + e] = ki == L % K ? 0.0f : WR_NEG_INF;
        }
    if (BAR) __syncthreads(); /* the fix: every store to the buffers is followed by a barrier */

    for (int n = NCK - 1; n >= 0; --n) {
        const int s0 = n * I, s1 = s0 + I < T ? s0 + I : T;
        if (s0 >= L) continue;
        /* alpha buffer row 0 from the checkpoint slot of s0 (owner load and store) */
#pragma unroll
        for (int o = 0; o < NOWN; ++o) {
            int e = tid + o * NT;
            if (owner && e < C) abuf[e] = ck[((size_t)n * K + (size_t)(s0 % K)) * WR_C_PAD + e];
        }
        if (BAR) __syncthreads();
        /* ---- Phase 1: recompute alpha into the buffer ---- */
        for (int lt = 1; lt < SEG; ++lt) {
            const int t = s0 + lt;
            if (!(t < s1 && t < L)) break;
            acc_t at[NR];
            wr_alpha_at<NW, REMAT, INDEX, acc_t>(a, cum, ps, pe, trb, col, t, s0, n, abuf, ck, 0, s_x, at);
            /* rows to the owner layout through shared memory; the owner stores alpha[t] */
            __syncthreads();
            if (lane == 0 && wc == 0)
#pragma unroll
                for (int i = 0; i < NR; ++i) {
                    int r = wrow + i * WRW;
                    s_x[0][r] = r < C ? (float)at[i] : WR_NEG_INF;
                }
            __syncthreads();
#pragma unroll
            for (int o = 0; o < NOWN; ++o) {
                int e = tid + o * NT;
                if (owner && e < C) abuf[(size_t)lt * WR_C_PAD + e] = s_x[0][e];
            }
            if (BAR) __syncthreads(); /* the fix: tl.debug_barrier() after the store */
        }

        /* ---- Phase 2: beta backward and the marginals ---- */
        for (int to = 0; to < I; ++to) {
            const int t = s1 - 1 - to;
            if (!(t >= s0 && t < L && t >= 0)) continue;
            const float *arow = abuf + (size_t)(t - s0) * WR_C_PAD;
            float al[NC];
            if (REMAT || NW <= 2) {
#pragma unroll
                for (int j = 0; j < NC; ++j) al[j] = col[j] < C ? arow[col[j]] : WR_NEG_INF;
            } else {
                __syncthreads();
                if (owner) s_x[0][tid] = tid < C ? arow[tid] : WR_NEG_INF;
                __syncthreads();
#pragma unroll
                for (int j = 0; j < NC; ++j) al[j] = s_x[0][col[j]];
            }
#pragma unroll
            for (int j = 0; j < NC; ++j) al[j] = wr_clampf(al[j], -1e6f, 1e6f);
            acc_t nb[NC];
#pragma unroll
            for (int j = 0; j < NC; ++j) nb[j] = (acc_t)WR_NEG_INF;
            for (int k = 1; k <= K; ++k) {
                const int end = t + k;
                if (!(end <= L && end <= T)) break;
                const float *brow = ring + (size_t)(end % K) * WR_C_PAD;
                float bn[NR];
                if (REMAT) { /* every lane of the row's warps loads it */
#pragma unroll
                    for (int i = 0; i < NR; ++i) {
                        int r = wrow + i * WRW;
                        bn[i] = r < C ? brow[r] : WR_NEG_INF;
                    }
                } else { /* owner loads, shared-memory broadcast (Triton's layout conversion) */
                    __syncthreads();
#pragma unroll
                    for (int o = 0; o < NOWN; ++o) {
                        int e = tid + o * NT;
                        if (owner) s_x[0][e] = e < C ? brow[e] : WR_NEG_INF;
                    }
                    __syncthreads();
#pragma unroll
                    for (int i = 0; i < NR; ++i) bn[i] = s_x[0][wrow + i * WRW];
                }
                const float hi = F64 ? 700.0f : 80.0f, lo = -hi;
                float rs[NR], sb[NR][NC];
#pragma unroll
                for (int i = 0; i < NR; ++i) {
                    int r = wrow + i * WRW;
                    float sg = r < C ? wr_seg(a, cum, ps, pe, t, k, WR_RIDX(r)) : 0.0f;
                    float bs = wr_clampf(bn[i], -1e6f, 1e6f), sum = 0.0f;
#pragma unroll
                    for (int j = 0; j < NC; ++j) {
                        int s = col[j];
                        bool m2 = r < C && s < C;
                        float edge = sg + trb[i][j];
                        float lm = al[j] + wr_clampf(edge, -1e6f, 1e6f) + bs - logZ;
                        float m = m2 ? expf(wr_clampf(lm, lo, hi)) : 0.0f;
                        acc_t *ptr = gtr + (size_t)WR_WIDX(s) * Wt + WR_WIDX(r);
                        if (m2) atomicAdd(ptr, (acc_t)m);
                        sum = sum + m;
                        sb[i][j] = m2 ? edge + bn[i] : WR_NEG_INF;
                    }
#pragma unroll
                    for (int off = 16; off > 0; off >>= 1) sum = sum + __shfl_xor_sync(WR_FULL, sum, off);
                    rs[i] = sum;
                }
                /* row sums to the owner layout; the owner's 1-D atomics into the per-batch workspaces */
                float msv[NOWN];
                if (WC == 2) {
                    __syncthreads();
                    if (lane == 0)
#pragma unroll
                        for (int i = 0; i < NR; ++i) s_x[wc][wrow + i * WRW] = rs[i];
                    __syncthreads();
                    msv[0] = owner ? s_x[0][tid] + s_x[1][tid] : 0.0f;
                } else {
#pragma unroll
                    for (int o = 0; o < NOWN; ++o) msv[o] = rs[tid + o * NT]; /* one warp holds every row */
                }
#pragma unroll
                for (int o = 0; o < NOWN; ++o) {
                    int e = tid + o * NT;
                    if (owner && e < C) {
                        float m = msv[o]; /* grad_output = 1 */
                        atomicAdd(gcum + (size_t)end * Wc + WR_WIDX(e), (acc_t)m);
                        atomicAdd(gcum + (size_t)t * Wc + WR_WIDX(e), (acc_t)(-m));
                        atomicAdd(gdb + (size_t)(k - 1) * Wt + WR_WIDX(e), (acc_t)m);
                        atomicAdd(gps + (size_t)t * Wc + WR_WIDX(e), (acc_t)m);
                        atomicAdd(gpe + (size_t)(end - 1) * Wc + WR_WIDX(e), (acc_t)m);
                    }
                }
                /* beta update: logsumexp over dst (rows) per src column, across warp-rows */
                float cmx[NC], csm[NC];
#pragma unroll
                for (int j = 0; j < NC; ++j) {
                    float m = sb[0][j];
#pragma unroll
                    for (int i = 1; i < NR; ++i) m = sb[i][j] > m ? sb[i][j] : m;
                    cmx[j] = m;
                }
                if (WRW > 1) {
                    __syncthreads();
                    s_c[wrow][col[0]] = cmx[0];
                    __syncthreads();
                    float m = s_c[0][col[0]];
#pragma unroll
                    for (int w = 1; w < WRW; ++w) m = fmaxf(m, s_c[w][col[0]]);
                    cmx[0] = m;
                }
#pragma unroll
                for (int j = 0; j < NC; ++j) {
                    float ms = cmx[j] < WR_NEG_INF + 1.0f ? 0.0f : cmx[j], s = 0.0f;
#pragma unroll
                    for (int i = 0; i < NR; ++i) s = s + expf(sb[i][j] - ms);
                    csm[j] = s;
                }
                if (WRW > 1) {
                    __syncthreads();
                    s_c[wrow][col[0]] = csm[0];
                    __syncthreads();
                    float s = s_c[0][col[0]];
#pragma unroll
                    for (int w = 1; w < WRW; ++w) s = s + s_c[w][col[0]];
                    csm[0] = s;
                }
#pragma unroll
                for (int j = 0; j < NC; ++j) {
                    bool all = cmx[j] < WR_NEG_INF + 1.0f;
                    float bk = all ? WR_NEG_INF : cmx[j] + logf(csm[j] + 1e-10f);
                    bk = col[j] < C ? bk : WR_NEG_INF;
                    nb[j] = wr_acc<acc_t>(nb[j], bk);
                }
            }
            /* the owner (thread tid < 64 holds column tid; one warp: lanes hold l and l + 32) stores beta[t] */
            if (owner)
#pragma unroll
                for (int j = 0; j < NC; ++j) {
                    int e = col[j];
                    if (e < C) ring[(size_t)(t % K) * WR_C_PAD + e] = (float)nb[j];
                }
            if (BAR) __syncthreads(); /* the fix */
        }
    }
#undef WR_RIDX
#undef WR_WIDX
}

/* The forward on the GPU with the same row arithmetic as the backward's Phase 1 at the same warp count (so the
 * recomputed alpha equals the forward's bit for bit, as upstream's recompute relies on), race-free (a barrier after
 * every store): alpha[0..L] into alpha_all [B][T+1][C_PAD] (NEG_INF-filled), then the checkpoints and log Z. */
template <int NW>
__global__ void __launch_bounds__(32 * NW) wr_fwd_k(wr_args a_all, float *alpha_all, float *ckpt, float *logZ)
{
    const wr_args a = wr_for_block(a_all, blockIdx.x);
    constexpr int NT = 32 * NW;
    constexpr int WC = NW >= 2 ? 2 : 1, WRW = NW >= 2 ? NW / 2 : 1, NR = WR_C_PAD / WRW, NC = WC == 1 ? 2 : 1;
    constexpr int NOWN = NT < WR_C_PAD ? WR_C_PAD / NT : 1;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wc = warp % WC, wrow = warp / WC;
    const int b = blockIdx.x, C = a.C, K = a.K, T = a.T, I = a.I, NCK = a.NCK, L = a.len[b];
    const bool owner = tid < WR_C_PAD;
    __shared__ float s_x[2][WR_C_PAD];
    const float *cum = a.cum + (size_t)b * (T + 1) * C;
    const float *ps = a.ps + (size_t)b * T * C, *pe = a.pe + (size_t)b * T * C;
    float *al = alpha_all + (size_t)b * (T + 1) * WR_C_PAD;
    int col[NC];
#pragma unroll
    for (int j = 0; j < NC; ++j) col[j] = lane + 32 * wc + 32 * j;
    float trb[NR][NC];
#pragma unroll
    for (int i = 0; i < NR; ++i)
#pragma unroll
        for (int j = 0; j < NC; ++j) {
            int r = wrow + i * WRW, s = col[j];
            trb[i][j] = (r < C && s < C) ? a.trans[(size_t)s * C + r] : 0.0f;
        }
#pragma unroll
    for (int o = 0; o < NOWN; ++o) {
        int e = tid + o * NT;
        if (owner && e < C) al[e] = 0.0f;
    }
    __syncthreads();
    for (int t = 1; t <= L; ++t) {
        float at[NR];
        wr_alpha_at<NW, true, WR_INDEX_RAW, float>(a, cum, ps, pe, trb, col, t, 0, 0, al, al, 1, s_x, at);
        __syncthreads();
        if (lane == 0 && wc == 0)
#pragma unroll
            for (int i = 0; i < NR; ++i) {
                int r = wrow + i * WRW;
                s_x[0][r] = r < C ? at[i] : WR_NEG_INF;
            }
        __syncthreads();
#pragma unroll
        for (int o = 0; o < NOWN; ++o) {
            int e = tid + o * NT;
            if (owner && e < C) al[(size_t)t * WR_C_PAD + e] = s_x[0][e];
        }
        __syncthreads();
    }
    /* checkpoint n holds alpha[q] for q in (n I - K, n I] at slot q % K (the owner copies) */
    for (int n = 0; n < NCK; ++n)
        for (int q = n * I - K + 1; q <= n * I; ++q) {
            if (q < 0 || q > L) continue;
#pragma unroll
            for (int o = 0; o < NOWN; ++o) {
                int e = tid + o * NT;
                if (owner && e < C)
                    ckpt[(((size_t)b * NCK + n) * K + (size_t)(q % K)) * WR_C_PAD + e] = al[(size_t)q * WR_C_PAD + e];
            }
        }
    if (tid == 0) { /* log Z: the guarded logsumexp over the C classes of alpha[L], left to right */
        const float *x = al + (size_t)L * WR_C_PAD;
        float m = x[0];
        for (int c = 1; c < C; ++c) m = x[c] > m ? x[c] : m;
        bool all = m < WR_NEG_INF + 1.0f;
        float ms = all ? 0.0f : m, s = 0.0f;
        for (int c = 0; c < C; ++c) s = s + expf(x[c] - ms);
        float r = logf(s + 1e-10f);
        logZ[b] = all ? WR_NEG_INF : m + r;
    }
}

/* Buffers filled with NEG_INF (what the launcher's torch.full did). */
__global__ void wr_fill(float *x, size_t n, float v)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = v;
}

/* The batch reduction (einsum over b, grad_output = 1, b ascending) of every problem of a seed batch (its SPB
 * sequences) and the slices back to C. */
template <bool F64>
__global__ void wr_reduce(const void *gtr_, const void *gdb_, const void *gcum_, const void *gps_, const void *gpe_, int B,
                          int SPB, int T, int K, int C, int Wt, int Wc, float *g_trans, float *g_dur, float *g_cum,
                          float *g_ps, float *g_pe)
{
    typedef typename std::conditional<F64, double, float>::type acc_t;
    const acc_t *gtr = (const acc_t *)gtr_, *gdb = (const acc_t *)gdb_, *gcum = (const acc_t *)gcum_;
    const acc_t *gps = (const acc_t *)gps_, *gpe = (const acc_t *)gpe_;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t NQ = (size_t)(B / SPB), ntr = (size_t)C * C, ndb = (size_t)K * C, ncum = (size_t)B * (T + 1) * C,
           npos = (size_t)B * T * C;
    if (i < NQ * ntr) {
        size_t q = i / ntr, e = i % ntr;
        int s = (int)(e / C), d = (int)(e % C);
        acc_t x = 0;
        for (size_t b = q * SPB; b < (q + 1) * SPB; ++b) x = x + gtr[(b * Wt + s) * Wt + d];
        g_trans[i] = (float)x;
    }
    if (i < NQ * ndb) {
        size_t q = i / ndb, e = i % ndb;
        int k = (int)(e / C), d = (int)(e % C);
        acc_t x = 0;
        for (size_t b = q * SPB; b < (q + 1) * SPB; ++b) x = x + gdb[(b * K + k) * Wt + d];
        g_dur[i] = (float)x;
    }
    if (i < ncum) {
        size_t row = i / C;
        g_cum[i] = (float)gcum[row * Wc + i % C];
    }
    if (i < npos) {
        size_t row = i / C;
        g_ps[i] = (float)gps[row * Wc + i % C];
        g_pe[i] = (float)gpe[row * Wc + i % C];
    }
}

typedef void (*wr_kernel_fn)(wr_args);

/* The compiled configurations: variants of the incident and the study's extra shapes. */
struct wr_kdesc {
    wr_cfg cfg;
    int minb;
    wr_kernel_fn fn;
};

#define WR_K(nw, remat, bar, index, f64, smem, minb)                                                                   \
    {{nw, remat, bar, index, f64, smem}, minb, wr_bwd<nw, remat, bar, index, f64, smem, minb>}
static const wr_kdesc wr_kernels[] = {
    WR_K(4, true, false, WR_INDEX_RAW, false, false, 1),   /* bug: upstream before the OOB fix, num_warps = 4 */
    WR_K(8, true, false, WR_INDEX_RAW, false, false, 1),   /* num_warps = 8 */
    WR_K(4, true, false, WR_INDEX_CLAMP, false, false, 1), /* the clamp commit */
    WR_K(4, true, false, WR_INDEX_PAD, false, false, 1),   /* pad + slice */
    WR_K(4, true, false, WR_INDEX_RAW, true, false, 1),    /* float64 accumulation */
    WR_K(4, true, false, WR_INDEX_RAW, false, true, 1),    /* buffers in shared memory (racecheck) */
    WR_K(2, false, false, WR_INDEX_RAW, false, false, 1),  /* num_warps = 2 */
    WR_K(4, true, true, WR_INDEX_RAW, false, false, 1),    /* barrier after the stores */
    WR_K(4, false, false, WR_INDEX_RAW, false, false, 1),  /* no replicated load */
    WR_K(1, false, false, WR_INDEX_RAW, false, false, 1),  /* study: one warp */
    WR_K(8, true, true, WR_INDEX_RAW, false, false, 1),    /* study: 8 warps with the barrier */
    WR_K(2, false, false, WR_INDEX_RAW, false, true, 1),   /* study: 2 warps, shared-memory buffers */
    WR_K(4, true, true, WR_INDEX_RAW, false, true, 1),     /* study: barrier, shared-memory buffers */
    WR_K(2, false, false, WR_INDEX_RAW, false, false, 32), /* study: 2 warps capped at 32 registers (spills) */
    WR_K(4, true, true, WR_INDEX_RAW, false, false, 16),   /* study: barrier fix capped at 32 registers */
    WR_K(4, true, false, WR_INDEX_RAW, false, false, 16),  /* study: the bug capped at 32 registers */
};
#define WR_NKERNELS ((int)(sizeof wr_kernels / sizeof wr_kernels[0]))

static const wr_kdesc *wr_find_kernel(const wr_cfg *c, int minb)
{
    for (int i = 0; i < WR_NKERNELS; ++i) {
        const wr_cfg *k = &wr_kernels[i].cfg;
        if (k->num_warps == c->num_warps && k->remat == c->remat && k->barrier == c->barrier && k->index == c->index &&
            k->f64 == c->f64 && k->smem_bufs == c->smem_bufs && wr_kernels[i].minb == minb)
            return &wr_kernels[i];
    }
    return NULL;
}

/* Device state of a seed batch (n problems of one shape side by side; one problem is a batch of one): inputs,
 * forward, buffers and workspaces. */
struct wr_dev {
    wr_args a;
    int nq;        /* problems */
    float *out;    /* g_trans [nq][C][C], g_dur [nq][K][C], g_cum, g_ps, g_pe (all sequences) back to back */
    float *alpha;  /* the GPU forward's alpha [B][T+1][C_PAD] */
    float *h_out;  /* host copy of out, then logZ [B] */
    size_t ntr, ndb, ncum, npos, nws_bytes[5]; /* ntr, ndb per problem; ncum, npos over all sequences */
    int Wt, Wc, f64;
};

/* The inputs and forwards of the last seed batch this process ran, kept on the device: a worker runs the variants of
 * one seed batch one after another, all on the same inputs, and seven of the nine at num_warps 4, whose forwards are
 * the same bits (race-free, deterministic: wr_fwd_k). A launch reuses them when its staged inputs (shapes, then
 * every input array, back to back) equal the cached ones byte for byte, so a buffer is never another batch's; the
 * forward of a warp count is made once per batch. The backward only reads them (wr_args: const). In a 1000-seed H100
 * replay the forwards were a quarter of 0008's GPU time (ncu of one seed, 2026-11-25). */
struct wr_cache {
    unsigned char *host; /* the staged inputs of the cached batch (a former staging buffer, wr_dev_init) */
    size_t bytes, cap;   /* its bytes in use, and allocated */
    unsigned char *dev;  /* the same bytes on the device */
    float *logZ[4], *ckpt[4]; /* the forward at num_warps 1, 2, 4, 8 (NULL: not made) */
};
static wr_cache wr_cached;

static void wr_cache_clear(void)
{
    for (int i = 0; i < 4; ++i) {
        if (wr_cached.logZ[i]) lab_devmem_free(wr_cached.logZ[i]);
        if (wr_cached.ckpt[i]) lab_devmem_free(wr_cached.ckpt[i]);
    }
    if (wr_cached.dev) lab_devmem_free(wr_cached.dev);
    free(wr_cached.host);
    memset(&wr_cached, 0, sizeof wr_cached);
}

extern "C" void wr_cuda_forget(void) { wr_cache_clear(); }

static void wr_dev_free(wr_dev *d)
{
    /* the inputs, log Z and the checkpoints are wr_cached's */
    void *p[] = {d->a.abuf, d->a.ring, d->a.gcum, d->a.gtr, d->a.gdb, d->a.gps, d->a.gpe, d->out, d->alpha};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; ++i)
        if (p[i]) lab_devmem_free(p[i]);
    free(d->h_out);
    memset(d, 0, sizeof *d);
}

/* Appends n problems' field arrays (`per` elements each; zeros for NULL p or a problem without them) to the staging
 * buffer h (NULL: sizes only) at *at rounded up to 256 bytes; returns that offset. */
template <typename X>
static size_t wr_stage(unsigned char *h, size_t *at, const lab_semicrf_problem *const *p, int n, X *lab_semicrf_problem::*field,
                       size_t per)
{
    size_t off = (*at + 255) / 256 * 256;
    if (h) {
        memset(h + *at, 0, off - *at);
        for (int i = 0; i < n; ++i) {
            X *dst = (X *)(h + off) + (size_t)i * per;
            if (p && p[i]->*field) memcpy(dst, p[i]->*field, per * sizeof(X));
            else memset(dst, 0, per * sizeof(X));
        }
    }
    *at = off + (size_t)n * per * sizeof(X);
    return off;
}
template <typename X>
static lab_status wr_alloc(X **dst, size_t n)
{
    LAB_CUDA_CHECK(lab_devmem_alloc((void **)dst, n > 0 ? n * sizeof(X) : sizeof(X)));
    return LAB_OK;
}

/* The staging buffer of wr_dev_init (kept: its size is a batch's inputs; it trades places with wr_cached.host when a
 * new batch is cached). */
static unsigned char *wr_stage_buf;
static size_t wr_stage_cap;

static lab_status wr_dev_init(wr_dev *d, const lab_semicrf_problem *const *pp, const wr_fwd *f, int nq, const wr_cfg *cfg)
{
    memset(d, 0, sizeof *d);
    const lab_semicrf_problem *p = pp[0];
    int SPB = p->B, B = nq * SPB, T = p->T, K = p->K, C = p->C;
    d->nq = nq;
    d->Wc = cfg->index == WR_INDEX_PAD ? WR_C_PAD : C;
    d->Wt = cfg->index == WR_INDEX_RAW ? C : WR_C_PAD;
    d->f64 = cfg->f64;
    size_t es = cfg->f64 ? sizeof(double) : sizeof(float);
    d->ntr = (size_t)C * C, d->ndb = (size_t)K * C, d->ncum = (size_t)B * (T + 1) * C, d->npos = (size_t)B * T * C;
    wr_args &a = d->a;
    a.B = B, a.SPB = SPB, a.T = T, a.K = K, a.C = C, a.I = f->I, a.NCK = f->NCK, a.SEG = f->SEG, a.use_proj = p->use_proj;
    size_t pcum = (size_t)SPB * (T + 1) * C, ppos = (size_t)SPB * T * C;
    lab_status st;
    /* the staged inputs: the launch's shapes, then the arrays (two passes: sizes, then bytes) */
    const int shape[10] = {nq, SPB, T, K, C, f->I, f->NCK, f->SEG, p->use_proj, 0};
    size_t off[6], bytes = sizeof shape;
    const lab_semicrf_problem *const *proj = p->use_proj ? pp : NULL;
    for (int pass = 0; pass < 2; ++pass) {
        unsigned char *h = pass ? wr_stage_buf : NULL;
        size_t at = sizeof shape;
        if (h) memcpy(h, shape, sizeof shape);
        off[0] = wr_stage(h, &at, pp, nq, &lab_semicrf_problem::cum, pcum);
        off[1] = wr_stage(h, &at, pp, nq, &lab_semicrf_problem::trans, d->ntr);
        off[2] = wr_stage(h, &at, pp, nq, &lab_semicrf_problem::dur, d->ndb);
        off[3] = wr_stage(h, &at, proj, nq, &lab_semicrf_problem::proj_start, ppos); /* zeros without projections */
        off[4] = wr_stage(h, &at, proj, nq, &lab_semicrf_problem::proj_end, ppos);
        off[5] = wr_stage(h, &at, pp, nq, &lab_semicrf_problem::len, (size_t)SPB);
        bytes = at;
        if (!pass && bytes > wr_stage_cap) {
            unsigned char *nb = (unsigned char *)realloc(wr_stage_buf, bytes);
            if (!nb) return lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": out of memory staging %zu bytes", bytes);
            wr_stage_buf = nb, wr_stage_cap = bytes;
        }
    }
    if (!(wr_cached.host && wr_cached.bytes == bytes && !memcmp(wr_cached.host, wr_stage_buf, bytes))) {
        /* another batch: its inputs replace the cached ones, in one copy (a copy per array is a synchronous call
         * each, and each waits its turn on a GPU that other processes share). The staging buffer becomes the
         * cache's host copy and the old host copy the next staging buffer: no second copy of the inputs. */
        unsigned char *old = wr_cached.host;
        size_t old_cap = wr_cached.cap;
        wr_cached.host = NULL;
        wr_cache_clear();
        wr_cached.host = wr_stage_buf, wr_cached.cap = wr_stage_cap, wr_cached.bytes = bytes;
        wr_stage_buf = old, wr_stage_cap = old_cap;
        cudaError_t e = lab_devmem_alloc((void **)&wr_cached.dev, bytes);
        if (e == cudaSuccess) e = cudaMemcpy(wr_cached.dev, wr_cached.host, bytes, cudaMemcpyHostToDevice);
        if (e != cudaSuccess) {
            wr_cache_clear();
            LAB_CUDA_CHECK(e);
        }
    }
    unsigned char *dv = wr_cached.dev;
    a.cum = (const float *)(dv + off[0]), a.trans = (const float *)(dv + off[1]), a.dur = (const float *)(dv + off[2]);
    a.ps = (const float *)(dv + off[3]), a.pe = (const float *)(dv + off[4]), a.len = (const int *)(dv + off[5]);
    if ((st = wr_alloc(&a.abuf, (size_t)B * f->SEG * WR_C_PAD)) != LAB_OK) return st;
    if ((st = wr_alloc(&a.ring, (size_t)B * K * WR_C_PAD)) != LAB_OK) return st;
    d->nws_bytes[0] = (size_t)B * (T + 1) * d->Wc * es;
    d->nws_bytes[1] = (size_t)B * d->Wt * d->Wt * es;
    d->nws_bytes[2] = (size_t)B * K * d->Wt * es;
    d->nws_bytes[3] = d->nws_bytes[4] = (size_t)B * T * d->Wc * es;
    void **ws[5] = {&a.gcum, &a.gtr, &a.gdb, &a.gps, &a.gpe};
    for (int i = 0; i < 5; ++i) LAB_CUDA_CHECK(lab_devmem_alloc(ws[i], d->nws_bytes[i]));
    size_t nout = (size_t)nq * (d->ntr + d->ndb) + d->ncum + 2 * d->npos;
    LAB_CUDA_CHECK(lab_devmem_alloc((void **)&d->out, nout * sizeof(float)));
    if (!(d->h_out = (float *)malloc((nout + (size_t)B) * sizeof(float))))
        return lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": out of memory for the host copy of %zu outputs", nout);
    /* the forward at the variant's warp count (same row arithmetic as its Phase 1), once per batch and warp count:
     * log Z and the checkpoints come from it (the host forward only gave the shapes) */
    int slot = cfg->num_warps == 1 ? 0 : cfg->num_warps == 2 ? 1 : cfg->num_warps == 4 ? 2 : cfg->num_warps == 8 ? 3 : -1;
    if (slot < 0) return lab_err_set(LAB_ERR_ARG, LAB_INCIDENT_ID ": num_warps %d not built", cfg->num_warps);
    if (!wr_cached.ckpt[slot]) {
        size_t nal = (size_t)B * (T + 1) * WR_C_PAD, nck = (size_t)B * f->NCK * K * WR_C_PAD;
        float *logZ = NULL, *ckpt = NULL;
        if ((st = wr_alloc(&logZ, (size_t)B)) != LAB_OK) return st;
        if ((st = wr_alloc(&ckpt, nck)) != LAB_OK) {
            lab_devmem_free(logZ);
            return st;
        }
        wr_cached.logZ[slot] = logZ, wr_cached.ckpt[slot] = ckpt; /* freed with the cache */
        LAB_CUDA_CHECK(lab_devmem_alloc((void **)&d->alpha, nal * sizeof(float)));
        wr_fill<<<(unsigned)((nal + 255) / 256), 256>>>(d->alpha, nal, WR_NEG_INF);
        LAB_CUDA_CHECK(cudaGetLastError());
        wr_fill<<<(unsigned)((nck + 255) / 256), 256>>>(ckpt, nck, WR_NEG_INF);
        LAB_CUDA_CHECK(cudaGetLastError());
        switch (cfg->num_warps) {
        case 1: wr_fwd_k<1><<<(unsigned)B, 32>>>(a, d->alpha, ckpt, logZ); break;
        case 2: wr_fwd_k<2><<<(unsigned)B, 64>>>(a, d->alpha, ckpt, logZ); break;
        case 4: wr_fwd_k<4><<<(unsigned)B, 128>>>(a, d->alpha, ckpt, logZ); break;
        default: wr_fwd_k<8><<<(unsigned)B, 256>>>(a, d->alpha, ckpt, logZ); break;
        }
        cudaError_t e = cudaGetLastError();
        if (e == cudaSuccess) e = cudaDeviceSynchronize();
        if (e != cudaSuccess) {
            wr_cache_clear(); /* a forward that did not finish is no forward */
            LAB_CUDA_CHECK(e);
        }
    }
    a.logZ = wr_cached.logZ[slot], a.ckpt = wr_cached.ckpt[slot];
    return LAB_OK;
}

#define WR_LAUNCHED()                                                                                                  \
    do {                                                                                                               \
        LAB_CUDA_CHECK(cudaGetLastError());                                                                            \
    } while (0)

/* One backward of the whole seed batch: buffers and workspaces reset, the kernel (timed with events into *ms),
 * the reduction, problem q's outputs copied into *o[q]. */
static lab_status wr_dev_run(wr_dev *d, const wr_kdesc *kd, int use_proj, wr_out *const *o, cudaEvent_t e0,
                             cudaEvent_t e1, float *ms)
{
    wr_args &a = d->a;
    size_t nab = (size_t)a.B * a.SEG * WR_C_PAD, nri = (size_t)a.B * a.K * WR_C_PAD;
    wr_fill<<<(unsigned)((nab + 255) / 256), 256>>>(a.abuf, nab, WR_NEG_INF);
    WR_LAUNCHED();
    wr_fill<<<(unsigned)((nri + 255) / 256), 256>>>(a.ring, nri, WR_NEG_INF);
    WR_LAUNCHED();
    void *ws[5] = {a.gcum, a.gtr, a.gdb, a.gps, a.gpe};
    for (int i = 0; i < 5; ++i) LAB_CUDA_CHECK(cudaMemset(ws[i], 0, d->nws_bytes[i]));
    size_t dyn = kd->cfg.smem_bufs ? (size_t)(a.SEG + a.K) * WR_C_PAD * sizeof(float) : 0;
    if (dyn) LAB_CUDA_CHECK(cudaFuncSetAttribute(kd->fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn));
    LAB_CUDA_CHECK(cudaEventRecord(e0));
    kd->fn<<<(unsigned)a.B, 32 * kd->cfg.num_warps, dyn>>>(a);
    WR_LAUNCHED();
    LAB_CUDA_CHECK(cudaEventRecord(e1));
    LAB_CUDA_CHECK(cudaEventSynchronize(e1));
    LAB_CUDA_CHECK(cudaEventElapsedTime(ms, e0, e1));
    size_t nq = (size_t)d->nq;
    float *o_tr = d->out, *o_db = o_tr + nq * d->ntr, *o_cum = o_db + nq * d->ndb, *o_ps = o_cum + d->ncum, *o_pe = o_ps + d->npos;
    size_t nmax = d->ncum > d->npos ? d->ncum : d->npos;
    if (nq * d->ntr > nmax) nmax = nq * d->ntr;
    if (nq * d->ndb > nmax) nmax = nq * d->ndb;
    if (d->f64)
        wr_reduce<true><<<(unsigned)((nmax + 255) / 256), 256>>>(a.gtr, a.gdb, a.gcum, a.gps, a.gpe, a.B, a.SPB, a.T, a.K, a.C,
                                                                  d->Wt, d->Wc, o_tr, o_db, o_cum, o_ps, o_pe);
    else
        wr_reduce<false><<<(unsigned)((nmax + 255) / 256), 256>>>(a.gtr, a.gdb, a.gcum, a.gps, a.gpe, a.B, a.SPB, a.T, a.K, a.C,
                                                                   d->Wt, d->Wc, o_tr, o_db, o_cum, o_ps, o_pe);
    WR_LAUNCHED();
    LAB_CUDA_CHECK(cudaDeviceSynchronize());
    /* the whole batch's outputs in two copies, then handed out per problem on the host */
    size_t pcum = d->ncum / nq, ppos = d->npos / nq, spb = (size_t)a.SPB, nout = nq * (d->ntr + d->ndb) + d->ncum + 2 * d->npos;
    LAB_CUDA_CHECK(cudaMemcpy(d->h_out, d->out, nout * sizeof(float), cudaMemcpyDeviceToHost));
    LAB_CUDA_CHECK(cudaMemcpy(d->h_out + nout, a.logZ, (size_t)a.B * sizeof(float), cudaMemcpyDeviceToHost));
    const float *h_tr = d->h_out, *h_db = h_tr + nq * d->ntr, *h_cum = h_db + nq * d->ndb, *h_ps = h_cum + d->ncum,
                *h_pe = h_ps + d->npos, *h_logz = d->h_out + nout;
    for (size_t q = 0; q < nq; ++q) {
        wr_out *oq = o[q];
        memcpy(oq->g_trans, h_tr + q * d->ntr, d->ntr * sizeof(float));
        memcpy(oq->g_dur, h_db + q * d->ndb, d->ndb * sizeof(float));
        memcpy(oq->g_cum, h_cum + q * pcum, pcum * sizeof(float));
        if (use_proj) {
            memcpy(oq->g_ps, h_ps + q * ppos, ppos * sizeof(float));
            memcpy(oq->g_pe, h_pe + q * ppos, ppos * sizeof(float));
        } else {
            memset(oq->g_ps, 0, ppos * sizeof(float));
            memset(oq->g_pe, 0, ppos * sizeof(float));
        }
        memcpy(oq->logZ, h_logz + q * spb, spb * sizeof(float));
    }
    return LAB_OK;
}

static int wr_cmp_float(const void *x, const void *y)
{
    float a = *(const float *)x, b = *(const float *)y;
    return a < b ? -1 : a > b;
}

/* Runs one configuration `runs` times on a seed batch of nq problems of one shape (outs[q * runs + i], allocated
 * here, gets problem q's run i); ms_med gets the median time of one backward of the whole batch. */
static lab_status wr_run_kernel(const lab_semicrf_problem *const *pp, const wr_fwd *f, int nq, const wr_cfg *cfg, int minb,
                                int runs, wr_out *outs, double *ms_med)
{
    const wr_kdesc *kd = wr_find_kernel(cfg, minb);
    if (!kd)
        return lab_err_set(LAB_ERR_ARG, LAB_INCIDENT_ID ": no compiled kernel for num_warps %d remat %d barrier %d index %d f64 %d smem %d minb %d",
                           cfg->num_warps, cfg->remat, cfg->barrier, cfg->index, cfg->f64, cfg->smem_bufs, minb);
    if (runs < 1 || runs > 4096) return lab_err_set(LAB_ERR_ARG, LAB_INCIDENT_ID ": runs %d outside 1..4096", runs);
    if (nq < 1) return lab_err_set(LAB_ERR_ARG, LAB_INCIDENT_ID ": a seed batch of %d problems", nq);
    for (int q = 1; q < nq; ++q)
        if (pp[q]->B != pp[0]->B || pp[q]->T != pp[0]->T || pp[q]->K != pp[0]->K || pp[q]->C != pp[0]->C ||
            pp[q]->use_proj != pp[0]->use_proj)
            return lab_err_set(LAB_ERR_ARG, LAB_INCIDENT_ID ": seed batch problem %d is B=%d T=%d, not B=%d T=%d like the first", q,
                               pp[q]->B, pp[q]->T, pp[0]->B, pp[0]->T);
    for (int i = 0; i < nq * runs; ++i) memset(&outs[i], 0, sizeof outs[i]);
    wr_dev d;
    cudaEvent_t e0 = NULL, e1 = NULL;
    float *ms = (float *)calloc((size_t)runs, sizeof(float));
    wr_out **o = (wr_out **)calloc((size_t)nq, sizeof *o);
    lab_status st = ms && o ? wr_dev_init(&d, pp, f, nq, cfg) : lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": out of memory");
    if (st == LAB_OK && lab_cuda_event_create(&e0) != cudaSuccess) st = lab_cuda_fail(__FILE__, __LINE__, "cudaEventCreate", "event");
    if (st == LAB_OK && lab_cuda_event_create(&e1) != cudaSuccess) st = lab_cuda_fail(__FILE__, __LINE__, "cudaEventCreate", "event");
    for (int i = 0; i < runs && st == LAB_OK; ++i) {
        for (int q = 0; q < nq && st == LAB_OK; ++q) {
            o[q] = &outs[q * runs + i];
            st = wr_out_alloc(o[q], pp[q]->B, pp[q]->T, pp[q]->K, pp[q]->C);
        }
        if (st == LAB_OK) st = wr_dev_run(&d, kd, pp[0]->use_proj, o, e0, e1, &ms[i]);
    }
    if (st == LAB_OK && ms_med) {
        qsort(ms, (size_t)runs, sizeof *ms, wr_cmp_float);
        *ms_med = ms[runs / 2];
    }
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (ms && o) wr_dev_free(&d);
    free(ms);
    free(o);
    if (st != LAB_OK)
        for (int i = 0; i < nq * runs; ++i) wr_out_free(&outs[i]);
    return st;
}

extern "C" lab_status wr_cuda_run(const lab_semicrf_problem *const *p, const wr_fwd *f, int n, const wr_cfg *cfg, int runs,
                                  wr_out *outs, double *ms)
{
    return wr_run_kernel(p, f, n, cfg, 1, runs, outs, ms);
}

/* ---- the study --------------------------------------------------------------------------------------------- */

/* Max over the gradient tensors of max|a - b| / max|b| (NaN when a has a non-finite value); *nf counts them. */
static double wr_rel_diff(const lab_semicrf_problem *p, const wr_out *a, const wr_out *b, size_t *nf)
{
    const float *x[5] = {a->g_trans, a->g_dur, a->g_cum, a->g_ps, a->g_pe}, *y[5] = {b->g_trans, b->g_dur, b->g_cum, b->g_ps, b->g_pe};
    size_t C = (size_t)p->C, n[5] = {C * C, (size_t)p->K * C, (size_t)p->B * (p->T + 1) * C, (size_t)p->B * p->T * C,
                                     (size_t)p->B * p->T * C};
    double worst = 0.0;
    int bad = 0;
    for (int t = 0; t < 5; ++t) {
        double m = 0.0, s = 0.0;
        for (size_t i = 0; i < n[t]; ++i) {
            if (!isfinite(x[t][i])) {
                ++*nf;
                bad = 1;
                continue;
            }
            double dd = fabs((double)x[t][i] - (double)y[t][i]);
            m = dd > m ? dd : m;
            s = fabs((double)y[t][i]) > s ? fabs((double)y[t][i]) : s;
        }
        double r = s > 0 ? m / s : m;
        worst = r > worst ? r : worst;
    }
    return bad ? NAN : worst;
}

/* Runs of each configuration in the bench (the study: 16). */
#define WR_BENCH_RUNS 3

/* The study's rows the cost records use (pairs below): the bench runs these only. */
static int wr_study_recorded(int row) { return row == 1 || row == 2 || row == 4 || (row >= 6 && row <= 9); }

struct wr_study_row {
    const char *name;
    wr_cfg cfg;
    int minb;
};

extern "C" lab_status wr_cuda_study(FILE *out, int full)
{
    lab_cuda_info info;
    lab_status st = lab_cuda_device_info(0, &info);
    if (st != LAB_OK) return st;
    /* the training shape of the write-ups: batch 32, T = 500, K = 30, C = 39 (lengths T/2..T, the first T) */
    /* full: every configuration, 16 runs each (about 2 minutes on an H100); else the bench: only the configurations
     * of the cost records below, WR_BENCH_RUNS runs each */
    const int B = 32, T = 500, K = LAB_SEMICRF_K_MAX, C = LAB_SEMICRF_C, RUNS = full ? 16 : WR_BENCH_RUNS;
    lab_semicrf_problem p;
    if ((st = lab_semicrf_problem_init(&p, B, T, K, C, 1)) != LAB_OK) return st;
    lab_semicrf_problem_fill(&p, 1);
    /* the forward runs on the GPU (wr_dev_init); the host needs only its shapes */
    wr_fwd f;
    memset(&f, 0, sizeof f);
    f.B = B, f.T = T, f.K = K, f.C = C, f.I = wr_ckpt_interval(T, K), f.NCK = wr_num_ckpts(T, K), f.SEG = f.I + K;
    double z = 0.0, tol = NAN;
    static const wr_study_row rows[] = {
        {"1 warp (no replication)", {1, 0, 0, WR_INDEX_RAW, 0, 0}, 1},
        {"2 warps (upstream's fix)", {2, 0, 0, WR_INDEX_RAW, 0, 0}, 1},
        {"4 warps (the bug)", {4, 1, 0, WR_INDEX_RAW, 0, 0}, 1},
        {"8 warps", {8, 1, 0, WR_INDEX_RAW, 0, 0}, 1},
        {"4 warps + barrier (fix)", {4, 1, 1, WR_INDEX_RAW, 0, 0}, 1},
        {"8 warps + barrier", {8, 1, 1, WR_INDEX_RAW, 0, 0}, 1},
        {"4 warps, owner loads (fix)", {4, 0, 0, WR_INDEX_RAW, 0, 0}, 1},
        {"4 warps, clamp commit", {4, 1, 0, WR_INDEX_CLAMP, 0, 0}, 1},
        {"4 warps, pad + slice", {4, 1, 0, WR_INDEX_PAD, 0, 0}, 1},
        {"4 warps, float64", {4, 1, 0, WR_INDEX_RAW, 1, 0}, 1},
        {"4 warps, smem buffers", {4, 1, 0, WR_INDEX_RAW, 0, 1}, 1},
        {"2 warps, smem buffers", {2, 0, 0, WR_INDEX_RAW, 0, 1}, 1},
        {"4 warps + barrier, smem", {4, 1, 1, WR_INDEX_RAW, 0, 1}, 1},
        {"2 warps, 32 registers", {2, 0, 0, WR_INDEX_RAW, 0, 0}, 32},
        {"4 warps, 32 registers", {4, 1, 0, WR_INDEX_RAW, 0, 0}, 16},
        {"4 warps + barrier, 32 regs", {4, 1, 1, WR_INDEX_RAW, 0, 0}, 16},
    };
    const int NROWS = (int)(sizeof rows / sizeof rows[0]);
    double med[sizeof rows / sizeof rows[0]];
    wr_out *ref = (wr_out *)calloc(1, sizeof *ref), *outs = (wr_out *)calloc((size_t)RUNS, sizeof *outs);
    if (!ref || !outs) st = lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": study: out of memory");
    /* the race-free reference of the study: the barrier fix at 4 warps, one run */
    wr_cfg fixc = {4, 1, 1, WR_INDEX_RAW, 0, 0};
    const lab_semicrf_problem *pp = &p;
    if (st == LAB_OK) st = wr_run_kernel(&pp, &f, 1, &fixc, 1, 1, ref, NULL);
    if (st == LAB_OK) {
        for (int b = 0; b < B; ++b) z = fabs((double)ref->logZ[b]) > z ? fabs((double)ref->logZ[b]) : z;
        tol = WR_TOL_ULPS(K) / 16777216.0 * z;
    }
    fprintf(out, "0008 %s on %s: B=%d T=%d K=%d C=%d, %d runs per configuration; 'wrong': max|g - g_fix| / max|g_fix| "
                 "above %.3g ((K + 4) x 2^-24 x max|log Z| = %.1f) against one run of the barrier fix\n",
            full ? "study" : "bench (the record configurations; `lab bench --study 0008`: all of them, 16 runs)", info.name, B, T,
            K, C, RUNS, tol, z);
    fprintf(out, "%-28s %6s %6s %6s %8s %11s %10s %9s\n", "configuration", "wrong", "nonfin", "differ", "distinct", "max err/tol",
            "median ms", "vs bug");
    for (int r = 0; r < NROWS; ++r) med[r] = NAN;
    for (int r = 0; r < NROWS && st == LAB_OK; ++r) {
        if (!full && !wr_study_recorded(r)) continue;
        st = wr_run_kernel(&pp, &f, 1, &rows[r].cfg, rows[r].minb, RUNS, outs, &med[r]);
        if (st != LAB_OK) break;
        int wrong = 0, nonfin = 0, differ = 0, distinct = 0;
        double worst = 0.0;
        int *cls = (int *)calloc((size_t)RUNS, sizeof(int));
        for (int i = 0; i < RUNS; ++i) {
            size_t nf = 0;
            double e = wr_rel_diff(&p, &outs[i], ref, &nf) / tol;
            if (nf) nonfin++;
            if (!(e <= 1.0)) wrong++;
            worst = isnan(e) || isnan(worst) ? NAN : (e > worst ? e : worst);
            if (i > 0 && wr_bits_differ(&p, &outs[i], &outs[0], NULL)) differ++;
            /* distinct outputs: the first earlier run with the same bits */
            cls[i] = i;
            for (int j = 0; j < i && cls && cls[i] == i; ++j)
                if (cls[j] == j && !wr_bits_differ(&p, &outs[i], &outs[j], NULL)) cls[i] = j;
            if (cls && cls[i] == i) distinct++;
        }
        free(cls);
        char vs_bug[16] = "-"; /* the bug (row 2) not yet timed: row 1 in the bench */
        if (!isnan(med[2])) snprintf(vs_bug, sizeof vs_bug, "%.3f", med[r] / med[2]);
        fprintf(out, "%-28s %3d/%-2d %3d/%-2d %3d/%-2d %8d %11.3g %10.3f %9s\n", rows[r].name, wrong, RUNS, nonfin, RUNS, differ,
                RUNS - 1, distinct, worst, med[r], vs_bug);
        fflush(out);
        for (int i = 0; i < RUNS; ++i) wr_out_free(&outs[i]);
    }
    if (st == LAB_OK) {
        /* cost records: each fix and each historical change against the bug (4 warps), medians of the runs above */
        static const int pairs[][2] = {{4, 2}, {1, 2}, {6, 2}, {7, 2}, {8, 2}, {9, 2}};
        static const char *names[] = {"fix-barrier", "fix-num-warps-2", "fix-owner-loads", "bug-clamp", "bug-pad-slice", "bug-f64"};
        for (int i = 0; i < 6; ++i)
            fprintf(out,
                    "lab-bench-record {\"name\":\"backward B=%d T=%d K=%d C=%d: %s\",\"fix\":\"%s\",\"baseline\":\"bug-num-warps-4\","
                    "\"device\":\"%s\",\"fix_ms\":%.6g,\"baseline_ms\":%.6g,\"ratio\":%.6g,\"reps\":%d,\"warmup\":0}\n",
                    B, T, K, C, names[i], names[i], info.name, med[pairs[i][0]], med[pairs[i][1]], med[pairs[i][0]] / med[pairs[i][1]],
                    RUNS);
    }
    if (ref) wr_out_free(ref);
    free(ref);
    free(outs);
    lab_semicrf_problem_free(&p);
    return st;
}
