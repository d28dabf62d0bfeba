/* wr: incident 0008's semi-Markov CRF backward in the structure of the upstream Triton kernel (one program per batch element, masked per-class accesses, per-batch workspaces, alpha recomputed from checkpoints into a buffer, beta in a ring), its thread ownership at 1..8 warps, and the CPU model that counts the unsynchronised cross-thread accesses of that ownership. */
#ifndef WR_H
#define WR_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "lab_err.h"
#include "lab_semicrf.h"

#ifdef __CUDACC__
#define WR_HD __host__ __device__ __forceinline__
#else
#define WR_HD static inline
#endif

#define WR_C_PAD 64            /* next power of two of C = 39: the lanes of every per-class vector */
#define WR_NEG_INF (-1e9f)     /* the kernels' finite minus infinity */
#define WR_MAX_WARPS 8
#define WR_MAX_THREADS (32 * WR_MAX_WARPS)

/* How padding lanes index the buffers (the three upstream versions; every access stays masked c < C). */
enum {
    WR_INDEX_RAW = 0,   /* before the OOB fix: addresses row * C + lane for all 64 lanes, gradient buffers C wide */
    WR_INDEX_CLAMP = 1, /* the clamp commit: every index min(lane, C-1); transition/duration workspaces C_PAD wide */
    WR_INDEX_PAD = 2    /* pad + slice: every gradient buffer C_PAD wide, writes unclamped, input reads clamped */
};

/* What a variant runs: the kernel's launch shape and the lowering of its buffer accesses. */
typedef struct {
    int num_warps;  /* 1, 2, 4 or 8 warps per program (block of 32 * num_warps threads) */
    int remat;      /* 1: loads of the alpha buffer and beta ring in the consumer's layout, every thread that uses an
                       element loads it (Triton's choice when C_PAD < 32 * num_warps); 0: only the owner thread
                       loads, then a shared-memory broadcast behind a barrier (no replicated global load) */
    int barrier;    /* 1: a block-wide barrier right after each store to the alpha buffer / beta ring
                       (tl.debug_barrier) */
    int index;      /* WR_INDEX_* */
    int f64;        /* 1: alpha/beta recurrences and gradient workspaces in float64 (the float64 commit) */
    int smem_bufs;  /* study only (CUDA): alpha buffer and beta ring in shared memory, same ownership, so that
                       compute-sanitizer racecheck (shared memory only) can see the hazards */
} wr_cfg;

/* Triton's rule (isExpensiveLoadOrStore): a load of a tensor with fewer elements than threads is cheap to
 * rematerialise in its consumer's layout. For C_PAD = 64 that is num_warps >= 4. */
WR_HD int wr_triton_remat(int num_warps) { return WR_C_PAD < 32 * num_warps; }

/* The 2-D (C_PAD dst rows x C_PAD src columns) blocked layout Triton chose for the upstream kernel
 * (sizePerThread [1,1], threadsPerWarp [1,32], order [1,0]; warpsPerCTA [1,1], [1,2], [2,2], [4,2] at 1, 2, 4,
 * 8 warps): warps along columns (WC) and along rows (WR). */
WR_HD int wr_wc(int nw) { return nw >= 2 ? 2 : 1; }
WR_HD int wr_wrows(int nw) { return nw >= 2 ? nw / 2 : 1; }
/* The j-th column (src class) held by thread tid: lane + 32 * (warp % WC), and + 32 when WC = 1 (j = 1). */
WR_HD int wr_col(int tid, int nw, int j) { return (tid & 31) + 32 * ((tid >> 5) % wr_wc(nw)) + 32 * j; }
WR_HD int wr_ncols(int nw) { return wr_wc(nw) == 1 ? 2 : 1; }
/* Rows (dst classes) of thread tid: r with r % WR == warp / WC: rows wr_row0 + i * WR, i < 64 / WR. */
WR_HD int wr_row0(int tid, int nw) { return (tid >> 5) / wr_wc(nw); }
WR_HD int wr_nrows(int nw) { return WR_C_PAD / wr_wrows(nw); }
/* The 1-D owner layout (Triton's blocked [32] x num_warps): element e is owned by thread e % (32 nw) when
 * 32 nw <= 64, else by thread e (threads 64.. are replicas that never store). */
WR_HD int wr_owner(int e, int nw) { return 32 * nw < WR_C_PAD ? e % (32 * nw) : e; }

/* Checkpoint interval of the upstream forward: max(K, floor(sqrt(T K))); checkpoints ceil(T / I) + 1. Inline here
 * so that the "why" study (studies/0008-semicrf-warp-replica-race), which has no lab library, shapes its buffers by
 * the same rule. */
WR_HD int wr_ckpt_interval(int T, int K)
{
    int s = (int)floor(sqrt((double)T * (double)K));
    return s > K ? s : K;
}
WR_HD int wr_num_ckpts(int T, int K)
{
    int I = wr_ckpt_interval(T, K);
    return (T + I - 1) / I + 1;
}

/* The forward pass the backward consumes (float32, upstream's recurrence: alpha[0][c] = 0, every segment's
 * score includes the transition from the previous class), for every batch element: log Z and the ring
 * checkpoints ckpt[b][n][slot][c] (C_PAD lanes, NEG_INF where unset): at checkpoint n, slot p % K holds
 * alpha[p] for p in (n I - K, n I]. */
typedef struct {
    int B, T, K, C, I, NCK, SEG;   /* SEG = I + K: rows of the alpha buffer */
    float *logZ;                   /* [B] */
    float *ckpt;                   /* [B][NCK][K][C_PAD] */
} wr_fwd;
lab_status wr_forward(const lab_semicrf_problem *p, wr_fwd *f);
/* The forward's shapes only (B .. SEG), logZ and ckpt allocated and NaN: what the CUDA backward needs from the host
 * (it runs its own forward on the GPU) and what a census-only wr_model reads; arithmetic on it gives NaN, never a
 * plausible value. Costs nothing next to wr_forward (0.3 s at T = 500 on the CPU). LAB_ERR_ARG, LAB_ERR_NOMEM. */
lab_status wr_forward_shapes(const lab_semicrf_problem *p, wr_fwd *f);
void wr_fwd_free(wr_fwd *f);

/* The float64 reference of the same CRF (upstream's convention: alpha[0] = 0, transitions from a uniform
 * start), gradients of sum_b log Z_b, in lab_semicrf_ref's layout (abs_cum unused, NULL). */
lab_status wr_reference(const lab_semicrf_problem *p, lab_semicrf_ref *r);

/* What the kernel returns, sliced to C, and what the CPU model's census saw. */
typedef struct {
    float *g_cum, *g_trans, *g_dur, *g_ps, *g_pe;  /* [B][T+1][C], [C][C], [K][C], [B][T][C] x 2 */
    float *logZ;                                    /* [B] (the forward's) */
    /* census (CPU model only; the CUDA run leaves them 0) */
    size_t raw_cross_warp;   /* loads of an element another warp stored with no barrier since */
    size_t raw_intra_warp;   /* the same within one warp (another lane) */
    size_t war_hazards;      /* stores to an element another thread loaded since the last barrier */
    size_t replicated_loads; /* element loads issued by more than one thread (per instruction and element) */
    size_t barriers;         /* block-wide barriers executed (all programs) */
    size_t masked_stray_addrs; /* addresses computed by masked padding lanes that are not their own element (the
                                  next row, class C-1, past the end); never dereferenced */
    size_t masked_oob_addrs;   /* of those, outside the whole allocation */
} wr_out;
lab_status wr_out_alloc(wr_out *o, int B, int T, int K, int C);
void wr_out_free(wr_out *o);

/* The CPU model: the kernel's programs one after another in the order `order` (a permutation of 0..B-1,
 * NULL: 0..B-1), each in program order, then the batch reduction of the workspaces (b ascending). Arithmetic
 * as the kernel (float32, or float64 where cfg->f64), every load sees the latest store: the race cannot happen
 * here. With census = 1 it also walks the kernel's thread ownership (cfg->num_warps, remat, barrier) and
 * counts the unsynchronised cross-thread accesses; census_only = 1 skips the arithmetic (outputs unset).
 * LAB_ERR_ARG for a bad config; LAB_ERR_NOMEM. */
lab_status wr_model(const lab_semicrf_problem *p, const wr_fwd *f, const wr_cfg *cfg, const int *order, int census,
                    int census_only, wr_out *o);
/* The census of program b alone (wr_model with census_only, counts only): it depends on the configuration, the
 * shapes (B, T, K, C and f's checkpointing), b and len[b], never on the values, and the census of wr_model is the
 * sum of its programs' (test semicrf_wr::census_is_the_sum_of_its_programs). LAB_ERR_ARG for b outside 0..B-1. */
lab_status wr_census_program(const lab_semicrf_problem *p, const wr_fwd *f, const wr_cfg *cfg, int b, wr_out *o);

/* Tolerance of the float32 backward against the float64 reference, relative to each tensor's largest value:
 * WR_TOL_ULPS(K) * 2^-24 * max_b |log Z_b|. A marginal is exp(alpha + edge + beta - log Z); upstream's recurrences
 * fold the K durations into alpha and beta one at a time (an online logsumexp), so each of alpha and beta carries up
 * to K roundings of half an ulp at a magnitude up to |log Z|, plus the inner logsumexp, the edge sums and log Z
 * itself: (K + 4) ulps of |log Z| on the log-marginal, i.e. on the marginal's relative error, which sums of
 * marginals keep. log Z is judged by its relative error against the same tol, which admits |log Z| times more than
 * its absolute error would (wr_compare says why the absolute error is not judged yet). The count is per position
 * (README.md: "What the criterion checks"). Measured: the fixes reach 0.571 of tol at worst (seed 70) over CPU
 * seeds 1-256 (tools/dev/margins.py), 0.666 (seed 643) over 1000 H100 seeds of each fix (docs/performance.md). */
#define WR_TOL_ULPS(K) ((double)(K) + 4.0)
double wr_tolerance(const lab_semicrf_ref *r, int B, int K);

/* Errors against the reference: per tensor max|g - ref| / max|ref|, and log Z's max relative error (NaN where
 * anything is non-finite). */
typedef struct {
    double max, trans, dur, cum, ps, pe, logz;
    size_t nonfinite, n;
} wr_err;
void wr_compare(const lab_semicrf_problem *p, const wr_out *o, const lab_semicrf_ref *r, wr_err *e);
/* Values whose bits differ between two outputs, and the largest |a - b| (NaN when a NaN differs). */
size_t wr_bits_differ(const lab_semicrf_problem *p, const wr_out *a, const wr_out *b, double *max_abs);

#ifdef LAB_HAVE_CUDA
/* The kernel on the GPU (wr_cuda.cu) for a seed batch of n problems of one shape (same B, T, K, C, use_proj; f:
 * the forward shapes of that T, from any of them): their sequences side by side in one grid (n B blocks of
 * 32 * num_warps threads, each reading its own problem's parameters), inputs and the GPU forward's checkpoints
 * made once, then `runs` launches of the backward, each followed by the reduction per problem (its B sequences,
 * b ascending). outs[q * runs + i] (allocated here, wr_out_alloc) gets problem q's run i: the same bits as a
 * batch of that problem alone wherever the configuration is race-free. The inputs and the forward at the
 * configuration's warp count stay on the device for the next call, which reuses them when its staged inputs are the
 * same bytes (a seed batch's variants one after another). *ms (may be NULL) receives the median
 * time of one backward launch of the whole batch. LAB_ERR_DEVICE with the CUDA error text; LAB_ERR_ARG for a
 * bad config or problems of different shapes. */
lab_status wr_cuda_run(const lab_semicrf_problem *const *p, const wr_fwd *f, int n, const wr_cfg *cfg, int runs,
                       wr_out *outs, double *ms);
/* Drops the inputs and forwards wr_cuda_run keeps on the device between launches (the next launch makes them afresh). */
void wr_cuda_forget(void);
/* The study (`lab bench --study`, full 1): prints, per configuration, how often the GPU produced wrong, non-finite
 * or run-to-run different gradients over 16 runs at the training shape, and the cost of every variant; full 0 (`lab
 * bench`): the same for the configurations of the cost records only, a few runs each (seconds, not minutes), and the
 * cost records. */
lab_status wr_cuda_study(FILE *out, int full);
#endif

#ifdef __cplusplus
}
#endif

#endif
