/* wr_cuda: incident 0008's backward on the GPU, the host side: a seed batch's device buffers and workspaces, the inputs and forwards kept for the next variant of the same batch, and a configuration's timed runs (the kernels are wr_kernels.cu's, the study wr_study.cu's). */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_cuda.h"
#include "lab_devmem.h"
#include "wr_cuda.h"

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
static thread_local wr_cache wr_cached; /* a thread's own, as a case may run on any thread */

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
static thread_local unsigned char *wr_stage_buf;
static thread_local size_t wr_stage_cap;

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
        wr_launch_fill(d->alpha, nal, WR_NEG_INF);
        LAB_CUDA_CHECK(cudaGetLastError());
        wr_launch_fill(ckpt, nck, WR_NEG_INF);
        LAB_CUDA_CHECK(cudaGetLastError());
        wr_launch_fwd(cfg->num_warps, a, d->alpha, ckpt, logZ);
        cudaError_t e = cudaGetLastError();
        if (e == cudaSuccess) e = lab_cuda_sync();
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
    wr_launch_fill(a.abuf, nab, WR_NEG_INF);
    WR_LAUNCHED();
    wr_launch_fill(a.ring, nri, WR_NEG_INF);
    WR_LAUNCHED();
    void *ws[5] = {a.gcum, a.gtr, a.gdb, a.gps, a.gpe};
    for (int i = 0; i < 5; ++i) LAB_CUDA_CHECK(cudaMemset(ws[i], 0, d->nws_bytes[i]));
    size_t dyn = kd->cfg.smem_bufs ? (size_t)(a.SEG + a.K) * WR_C_PAD * sizeof(float) : 0;
    if (dyn) LAB_CUDA_CHECK(wr_bwd_smem(kd, dyn));
    LAB_CUDA_CHECK(cudaEventRecord(e0));
    wr_launch_bwd(kd, a, dyn);
    WR_LAUNCHED();
    LAB_CUDA_CHECK(cudaEventRecord(e1));
    LAB_CUDA_CHECK(cudaEventSynchronize(e1));
    LAB_CUDA_CHECK(cudaEventElapsedTime(ms, e0, e1));
    size_t nq = (size_t)d->nq;
    float *o_tr = d->out, *o_db = o_tr + nq * d->ntr, *o_cum = o_db + nq * d->ndb, *o_ps = o_cum + d->ncum, *o_pe = o_ps + d->npos;
    size_t nmax = d->ncum > d->npos ? d->ncum : d->npos;
    if (nq * d->ntr > nmax) nmax = nq * d->ntr;
    if (nq * d->ndb > nmax) nmax = nq * d->ndb;
    wr_launch_reduce(d->f64, a, nmax, d->Wt, d->Wc, o_tr, o_db, o_cum, o_ps, o_pe);
    WR_LAUNCHED();
    LAB_CUDA_CHECK(lab_cuda_sync());
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

/* Runs one configuration `runs` times on a seed batch (wr_cuda.h). */
lab_status wr_run_kernel(const lab_semicrf_problem *const *pp, const wr_fwd *f, int nq, const wr_cfg *cfg, int minb,
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
