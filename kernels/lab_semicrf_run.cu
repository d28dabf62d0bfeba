/* lab_semicrf_run (CUDA): the semi-Markov CRF on the GPU, the host side: a batch of problems placed in sections of one arena (or exact allocations under a memory checker), with guard zones of the seed's neighbour contents, uploaded, run through the kernels of lab_semicrf.cu and read back; the run functions of lab_semicrf.h. */
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
#include "lab_testknobs.h"

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
    const char *v = getenv(LAB_TESTKNOB_DET_LAUNCH);
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
 * ready for lab_semicrf_cu_accumulate). LAB_ERR_ARG for a bad config, shape, length or launch variable; LAB_ERR_NOMEM;
 * LAB_ERR_DEVICE. */
lab_status lab_semicrf_cu_prepare(const lab_semicrf_problem *const *p, const lab_semicrf_config *cfgs, size_t n, int mode, sg_ctx &x)
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
    lab_semicrf_cu_fill_passes(x, n);
    LAB_CUDA_CHECK(cudaGetLastError());
    if ((st = lab_semicrf_cu_fwd_bwd(x)) != LAB_OK) return st;
    LAB_CUDA_CHECK(lab_cuda_sync());
    return LAB_OK;
}

/* Reads the outputs section back (one copy, or one per buffer under exact allocations) into x.back. */
lab_status lab_semicrf_cu_download(sg_ctx &x)
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

/* Problem q's gradients from x.back (lab_semicrf_cu_download) into o (allocated here), sliced to C. LAB_ERR_NOMEM. */
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
    lab_status st = lab_semicrf_cu_prepare(&p, cfg, 1, mode, x);
    if (st != LAB_OK) return st;
    cudaEvent_t e1, e2;
    LAB_CUDA_CHECK(lab_cuda_event_create(&e1));
    LAB_CUDA_CHECK(lab_cuda_event_create(&e2));
    std::vector<float> times;
    for (int r = 0; r < reps && st == LAB_OK; ++r) {
        if (r > 0 && (st = lab_semicrf_cu_fwd_bwd(x)) != LAB_OK) break;
        LAB_CUDA_CHECK(cudaEventRecord(e1));
        if ((st = lab_semicrf_cu_accumulate(x)) != LAB_OK) break;
        LAB_CUDA_CHECK(cudaEventRecord(e2));
        LAB_CUDA_CHECK(cudaEventSynchronize(e2));
        float ms = 0.0f;
        LAB_CUDA_CHECK(cudaEventElapsedTime(&ms, e1, e2));
        times.push_back(ms);
    }
    cudaEventDestroy(e1);
    cudaEventDestroy(e2);
    if (st != LAB_OK) return st;
    LAB_CUDA_CHECK(lab_cuda_sync());
    std::sort(times.begin(), times.end());
    if (ms_backward) *ms_backward = times[times.size() / 2];
    if (!o) return LAB_OK;
    if ((st = lab_semicrf_cu_download(x)) != LAB_OK) return st;
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
    lab_status st = lab_semicrf_cu_prepare(p, cfgs, n, sg_mode_of(&cfgs[0]), x);
    if (st == LAB_OK) st = lab_semicrf_cu_accumulate(x);
    cudaError_t e = st == LAB_OK ? lab_cuda_sync() : cudaSuccess;
    if (e != cudaSuccess) st = lab_cuda_fail(__FILE__, __LINE__, "cudaStreamSynchronize", cudaGetErrorString(e));
    if (st == LAB_OK) st = lab_semicrf_cu_download(x);
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
