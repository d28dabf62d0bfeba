/* wr_cuda: what incident 0008's CUDA files share (wr_kernels.cu: the kernels and their launches; wr_cuda.cu: device
 * buffers, the cached inputs and forwards, a configuration's runs; wr_study.cu: the study): the kernels' arguments,
 * the compiled configurations and the launch functions. C++, CUDA only; internal to those files and to the "why"
 * study outside the lab's build (studies/0008-semicrf-warp-replica-race), which compiles wr_kernels.cu itself. */
#ifndef WR_CUDA_H
#define WR_CUDA_H

#include <cuda_runtime.h>
#include <stddef.h>

#include "wr.h"

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

typedef void (*wr_kernel_fn)(wr_args);

/* The backward's barrier sites (its template argument BARS, a mask): a block barrier right after the store to the
 * buffers at that site. The fix is WR_BAR_ALL, the bug 0; the lab builds only those two, and the single sites exist
 * so that the "why" study (studies/0008-semicrf-warp-replica-race) can leave one handoff unguarded in these very
 * kernels. WR_CKPT_PRED is no barrier: that study's lowering of the checkpoint copy the way Triton lowers it (every
 * replica loads the row, all threads execute one predicated store), buffers in global memory only. */
enum {
    WR_BAR_INIT = 1,  /* after the beta ring's initialisation */
    WR_BAR_CKPT = 2,  /* after the checkpoint copy into row 0 of the alpha buffer */
    WR_BAR_ALPHA = 4, /* after each Phase-1 store of alpha[t] */
    WR_BAR_BETA = 8,  /* after each Phase-2 store of beta[t] into the ring */
    WR_BAR_ALL = 15,
    WR_CKPT_PRED = 16
};

/* One compiled configuration of the backward kernel (the variants' and the study's, wr_kernels.cu). */
struct wr_kdesc {
    wr_cfg cfg;
    int minb;
    wr_kernel_fn fn;
};

/* The compiled kernel of configuration c at `minb` blocks per SM (__launch_bounds__), or NULL when none is built. */
const wr_kdesc *wr_find_kernel(const wr_cfg *c, int minb);

/* The launches, asynchronous on the default stream; each is checked by the caller (cudaGetLastError).
 * wr_launch_fill: x[0..n) = v. wr_launch_fwd: the forward of a's B sequences at num_warps 1, 2, 4 or 8 (any other: 8)
 * into alpha, ckpt and logZ. wr_bwd_smem: lets kd's kernel use dyn bytes of dynamic shared memory (its status).
 * wr_launch_bwd: kd's backward over a's B sequences with dyn bytes of dynamic shared memory. wr_launch_reduce: the
 * batch reduction of a's workspaces (accumulated in float64 when f64, of widths Wt and Wc) into the float32 outputs,
 * nmax threads' work. */
void wr_launch_fill(float *x, size_t n, float v);
void wr_launch_fwd(int num_warps, const wr_args &a, float *alpha, float *ckpt, float *logZ);
cudaError_t wr_bwd_smem(const wr_kdesc *kd, size_t dyn);
/* The registers a thread of kd's kernel holds on this GPU (cudaFuncGetAttributes), -1 when the query fails. A register
 * cap written as __launch_bounds__(threads, minb) holds only where minb blocks of those threads fit an SM (2048 threads:
 * sm_80, sm_90, sm_100); elsewhere ptxas ignores it ("minnctapersm will be ignored") and the kernel keeps its own count. */
int wr_bwd_regs(const wr_kdesc *kd);
void wr_launch_bwd(const wr_kdesc *kd, const wr_args &a, size_t dyn);
void wr_launch_reduce(int f64, const wr_args &a, size_t nmax, int Wt, int Wc, float *g_trans, float *g_dur, float *g_cum,
                      float *g_ps, float *g_pe);

/* Runs configuration cfg (at minb) `runs` times on a seed batch of nq problems of one shape (outs[q * runs + i],
 * allocated here, gets problem q's run i); *ms_med (NULL: not wanted) gets the median time of one backward of the
 * whole batch. LAB_ERR_ARG for a configuration not built, runs outside 1..4096 or problems of different shapes;
 * LAB_ERR_NOMEM; LAB_ERR_DEVICE from the GPU. On an error outs holds nothing. (wr_cuda.cu) */
lab_status wr_run_kernel(const lab_semicrf_problem *const *pp, const wr_fwd *f, int nq, const wr_cfg *cfg, int minb,
                         int runs, wr_out *outs, double *ms_med);

#endif
