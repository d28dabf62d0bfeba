/* lab_semicrf_cuda: what the semi-CRF's CUDA files share (lab_semicrf.cu: the kernels and their launches;
 * lab_semicrf_run.cu: a batch's buffers, upload, runs and read-back; lab_semicrf_bench.cu: the benchmark): the
 * problem as the kernels see it, a prepared batch and the stages that run it. C++, CUDA only; internal to those
 * files (the lab's interface is lab_semicrf.h). */
#ifndef LAB_SEMICRF_CUDA_H
#define LAB_SEMICRF_CUDA_H

#include <cuda_runtime.h>
#include <stddef.h>

#include <vector>

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

/* Inputs as the kernels see them: pointers to element 0 (guard zones, where present, lie around them). */
struct sg_inputs {
    const float *cum, *trans, *dur, *ps, *pe;
    const int *len;
    int B, T, K, C, use_proj;
    long n_cum, n_trans, n_dur, n_pos;   /* elements of each input allocation */
    unsigned long long *oob;             /* [0] loads, [1] atomics outside their allocation */
    int check;                           /* count them (stray layouts only; the access happens anyway) */
};

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

#define SG_DET_ROWS_D 16
#define SG_DET_ROWS_T 32
#define SG_DET_STRANDS 16

/* The block ranges of a grid of several kinds of work: kind j owns blocks [first[j], first[j + 1]). */
struct sg_det_split {
    long n[4];          /* work items of each kind */
    unsigned first[5];  /* first block of each kind; first[4]: the grid */
};

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

/* The stages of a batch, enqueued on the default stream (lab_semicrf.cu). fill_passes: the forward and backward
 * passes' arrays of x's n problems set to minus infinity (launch checked by the caller); fwd_bwd: the forward and
 * backward passes (alpha, log Z, beta) of every problem; accumulate: the accumulation stage of x.mode (resetting
 * what it accumulates into, marginals, reductions). LAB_ERR_DEVICE from the GPU; LAB_ERR_ARG for a deterministic
 * problem past the kernels' 32-bit item indices. */
void lab_semicrf_cu_fill_passes(const sg_ctx &x, size_t n);
lab_status lab_semicrf_cu_fwd_bwd(sg_ctx &x);
lab_status lab_semicrf_cu_accumulate(sg_ctx &x);
/* Prepares the batch p[0..n) under cfgs[0..n) for `mode` into x, and reads x's outputs section back into x.back
 * (lab_semicrf_run.cu; their comments there give the contracts). */
lab_status lab_semicrf_cu_prepare(const lab_semicrf_problem *const *p, const lab_semicrf_config *cfgs, size_t n, int mode,
                                  sg_ctx &x);
lab_status lab_semicrf_cu_download(sg_ctx &x);

#endif
