/* wr_kernels: incident 0008's backward kernel on the GPU with the thread ownership of the upstream Triton kernel at 1..8 warps (one store per element, loads replicated across warps where Triton rematerialises them, no barrier between a store and the next loads unless the fix adds one), its forward and reduction, the compiled configurations and their launches. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>

#include "lab_cuda.h"
#include "wr_cuda.h"

#define WR_FULL 0xffffffffu

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

/* The backward: one block per batch element, 32 NW threads. Template: warps, rematerialised loads, barrier sites
 * after the buffer stores (WR_BAR_*, wr_cuda.h: the fix is all of them), index variant, float64 accumulation, buffers
 * in shared memory (racecheck study), minimum blocks per SM (a register cap for the spill study). */
template <int NW, bool REMAT, int BARS, int INDEX, bool F64, bool SMEM, int MINB>
__global__ void __launch_bounds__(32 * NW, MINB) wr_bwd(wr_args a_all)
{
    static_assert(!(SMEM && (BARS & WR_CKPT_PRED)), "the predicated checkpoint copy stores with st.global");
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
    if (BARS & WR_BAR_INIT) __syncthreads(); /* the fix: every store to the buffers is followed by a barrier */

    for (int n = NCK - 1; n >= 0; --n) {
        const int s0 = n * I, s1 = s0 + I < T ? s0 + I : T;
        if (s0 >= L) continue;
        /* alpha buffer row 0 from the checkpoint slot of s0 (owner load and store: the store waits for the load) */
        if (BARS & WR_CKPT_PRED) { /* Triton's lowering: every replica loads, one predicated store all execute */
#pragma unroll
            for (int o = 0; o < NOWN; ++o) {
                int e = (tid + o * NT) % WR_C_PAD;
                float cv = e < C ? ck[((size_t)n * K + (size_t)(s0 % K)) * WR_C_PAD + e] : WR_NEG_INF;
                asm volatile("{ .reg .pred p; setp.ne.b32 p, %2, 0; @p st.global.b32 [%0], %1; }" ::"l"(abuf + e),
                             "r"(__float_as_uint(cv)), "r"((int)(owner && e < C))
                             : "memory");
            }
        } else {
#pragma unroll
            for (int o = 0; o < NOWN; ++o) {
                int e = tid + o * NT;
                if (owner && e < C) abuf[e] = ck[((size_t)n * K + (size_t)(s0 % K)) * WR_C_PAD + e];
            }
        }
        if (BARS & WR_BAR_CKPT) __syncthreads();
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
            if (BARS & WR_BAR_ALPHA) __syncthreads(); /* the fix: tl.debug_barrier() after the store */
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
            if (BARS & WR_BAR_BETA) __syncthreads(); /* the fix */
        }
    }
#undef WR_RIDX
#undef WR_WIDX
}

/* The forward on the GPU with the same row arithmetic as the backward's Phase 1 at the same warp count (so the
 * recomputed alpha equals the forward's bit for bit, as upstream's recompute relies on), race-free (a barrier after
 * every store): alpha[0..L] into alpha_all [B][T+1][C_PAD] (NEG_INF-filled), then the checkpoints and log Z.
 * STEP_BAR = false (the "why" study only) drops the barrier between a step's store of alpha[t] and the next step's
 * loads, the store-then-load of Triton's forward; one barrier after the loop still orders the checkpoints and log Z. */
template <int NW, bool STEP_BAR = true>
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
        if (STEP_BAR) __syncthreads();
    }
    if (!STEP_BAR) __syncthreads();
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

/* The compiled configurations: variants of the incident and the study's extra shapes. */

#define WR_K(nw, remat, bar, index, f64, smem, minb)                                                                   \
    {{nw, remat, bar, index, f64, smem}, minb,                                                                         \
     wr_bwd<nw, remat, (bar) ? WR_BAR_ALL : 0, index, f64, smem, minb>}
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

const wr_kdesc *wr_find_kernel(const wr_cfg *c, int minb)
{
    for (int i = 0; i < WR_NKERNELS; ++i) {
        const wr_cfg *k = &wr_kernels[i].cfg;
        if (k->num_warps == c->num_warps && k->remat == c->remat && k->barrier == c->barrier && k->index == c->index &&
            k->f64 == c->f64 && k->smem_bufs == c->smem_bufs && wr_kernels[i].minb == minb)
            return &wr_kernels[i];
    }
    return NULL;
}


/* ---- launches (wr_cuda.h) ---------------------------------------------------------------------------------- */

void wr_launch_fill(float *x, size_t n, float v) { wr_fill<<<(unsigned)((n + 255) / 256), 256>>>(x, n, v); }

void wr_launch_fwd(int num_warps, const wr_args &a, float *alpha, float *ckpt, float *logZ)
{
    switch (num_warps) {
    case 1: wr_fwd_k<1><<<(unsigned)a.B, 32>>>(a, alpha, ckpt, logZ); break;
    case 2: wr_fwd_k<2><<<(unsigned)a.B, 64>>>(a, alpha, ckpt, logZ); break;
    case 4: wr_fwd_k<4><<<(unsigned)a.B, 128>>>(a, alpha, ckpt, logZ); break;
    default: wr_fwd_k<8><<<(unsigned)a.B, 256>>>(a, alpha, ckpt, logZ); break;
    }
}

cudaError_t wr_bwd_smem(const wr_kdesc *kd, size_t dyn)
{
    return cudaFuncSetAttribute(kd->fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn);
}

int wr_bwd_regs(const wr_kdesc *kd)
{
    cudaFuncAttributes a;
    if (cudaFuncGetAttributes(&a, kd->fn) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    return a.numRegs;
}

void wr_launch_bwd(const wr_kdesc *kd, const wr_args &a, size_t dyn) { kd->fn<<<(unsigned)a.B, 32 * kd->cfg.num_warps, dyn>>>(a); }

void wr_launch_reduce(int f64, const wr_args &a, size_t nmax, int Wt, int Wc, float *g_trans, float *g_dur, float *g_cum,
                      float *g_ps, float *g_pe)
{
    if (f64)
        wr_reduce<true><<<(unsigned)((nmax + 255) / 256), 256>>>(a.gtr, a.gdb, a.gcum, a.gps, a.gpe, a.B, a.SPB, a.T, a.K, a.C,
                                                                  Wt, Wc, g_trans, g_dur, g_cum, g_ps, g_pe);
    else
        wr_reduce<false><<<(unsigned)((nmax + 255) / 256), 256>>>(a.gtr, a.gdb, a.gcum, a.gps, a.gpe, a.B, a.SPB, a.T, a.K, a.C,
                                                                   Wt, Wc, g_trans, g_dur, g_cum, g_ps, g_pe);
}

/* this module in the load check that runs before any case (lab_cuda.h) */
LAB_CUDA_MODULE(wr_fill);
