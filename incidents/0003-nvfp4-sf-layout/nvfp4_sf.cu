/* nvfp4_sf (CUDA): incident 0003's workload on the GPU (stale layout memory left by a freed block, CUDA remap and GEMM) and the remap benchmark. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "lab_cuda.h"
#include "lab_devmem.h"
#include "nvfp4_sf.h"

__thread int nvfp4_sf_cuda_stale_reused = 0, nvfp4_sf_cuda_stale_buffers = 0;

/* A GPU run of a workload keeps its buffers on one stream: allocated (lab_devmem_alloc_async, from the thread's pool),
 * filled, used and freed (cudaFreeAsync) in stream order, so the run waits once, for its output. On a GPU that other
 * processes' contexts share, every wait costs a time slice: a case made of one wait per call (allocations, copies,
 * launches, frees; about a hundred per case) spent most of a loaded replay waiting. */
static lab_status nv_dev_upload(uint8_t **dst, const void *host, size_t len, cudaStream_t s)
{
    LAB_CUDA_CHECK(lab_devmem_alloc_async((void **)dst, len, s));
    LAB_CUDA_CHECK(cudaMemcpyAsync(*dst, host, len, cudaMemcpyHostToDevice, s)); /* pageable: staged before return */
    return LAB_OK;
}

extern "C" lab_status nvfp4_sf_cuda_operands(const nvfp4_sf_work *w, void *stream, nvfp4_sf_cuda_ops *o)
{
    cudaStream_t s = (cudaStream_t)stream;
    size_t m = w->shape.m, n = w->shape.n, k = w->shape.k;
    lab_status st = nv_dev_upload(&o->qa, w->qa, m * k / 2, s);
    if (st == LAB_OK) st = nv_dev_upload(&o->qb, w->qb, n * k / 2, s);
    if (st == LAB_OK) st = nv_dev_upload(&o->sfa, w->sfa, m * w->k_sf, s);
    if (st == LAB_OK) st = nv_dev_upload(&o->sfb, w->sfb, n * w->k_sf, s);
    return st;
}

extern "C" lab_status nvfp4_sf_cuda_finish(lab_status st, void *stream, const float *dout, float *out, size_t n,
                                           void *const *bufs, size_t nbufs)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (st == LAB_OK) {
        /* to pageable memory: returns when the copy is done, the run's one wait (and where its errors surface) */
        cudaError_t e = cudaMemcpyAsync(out, dout, n * sizeof(float), cudaMemcpyDeviceToHost, s);
        if (e != cudaSuccess) st = lab_cuda_fail(__FILE__, __LINE__, "cudaMemcpyAsync", cudaGetErrorString(e));
    }
    return lab_cuda_stream_release(st, s, bufs, nbufs);
}

/* A layout buffer whose contents are the stale bytes without this allocation ever being written: a block of a
 * stream-ordered pool is filled with the stale bytes, freed, and allocated again on the same stream, so the new
 * allocation gets the freed block back with its bytes (as a caching allocator hands a tensor the memory of a
 * dead one), while compute-sanitizer initcheck sees a fresh, unwritten allocation. If the pool hands out a
 * different block, the stale bytes are copied in (then initcheck cannot see the fault) and reused stays 0. The
 * addresses are known when the calls return: nothing waits for the GPU. */
static lab_status nv_stale_alloc(const uint8_t *host_stale, size_t len, cudaStream_t s, uint8_t **out, int *reused)
{
    uint8_t *prev = NULL;
    *reused = 0;
    lab_status st = nv_dev_upload(&prev, host_stale, len, s);
    if (st != LAB_OK) return st;
    LAB_CUDA_CHECK(cudaFreeAsync(prev, s));
    LAB_CUDA_CHECK(lab_devmem_alloc_async((void **)out, len, s));
    if (*out == prev) *reused = 1;
    else LAB_CUDA_CHECK(cudaMemcpyAsync(*out, host_stale, len, cudaMemcpyHostToDevice, s));
    return LAB_OK;
}

extern "C" lab_status nvfp4_sf_run_cuda(const nvfp4_sf_work *w, lab_nvfp4_remap_kind kind, float *out)
{
    size_t m = w->shape.m, n = w->shape.n, k = w->shape.k;
    nvfp4_sf_cuda_ops o = {NULL, NULL, NULL, NULL};
    uint8_t *la = NULL, *lb = NULL;
    float *dout = NULL;
    cudaStream_t s = NULL;
    int ra = 0, rb = 0;
    lab_status st = LAB_OK;
    LAB_CUDA_CHECK_GOTO(st, cudaStreamCreate(&s), done);
    /* The layouts first, so that their stale blocks are the pool's most recently freed. */
    if ((st = nv_stale_alloc(w->stale_a, w->cosize_a, s, &la, &ra)) != LAB_OK) goto done;
    if ((st = nv_stale_alloc(w->stale_b, w->cosize_b, s, &lb, &rb)) != LAB_OK) goto done;
    nvfp4_sf_cuda_stale_reused += ra + rb;
    nvfp4_sf_cuda_stale_buffers += 2;
    if ((st = nvfp4_sf_cuda_operands(w, s, &o)) != LAB_OK) goto done;
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc_async((void **)&dout, m * n * sizeof(float), s), done);
    if ((st = lab_nvfp4_cuda_sf_remap_async(o.sfa, m, w->k_sf, la, kind, s)) != LAB_OK) goto done;
    if ((st = lab_nvfp4_cuda_sf_remap_async(o.sfb, n, w->k_sf, lb, kind, s)) != LAB_OK) goto done;
    st = lab_nvfp4_cuda_gemm_async(o.qa, la, o.qb, lb, m, n, k, lab_nvfp4_alpha(w->global_a, w->global_b), dout, s);
done:
    {
        void *bufs[] = {o.qa, o.qb, o.sfa, o.sfb, dout, la, lb};
        return nvfp4_sf_cuda_finish(st, s, dout, out, m * n, bufs, sizeof bufs / sizeof bufs[0]);
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* Benchmark                                                                                       */

static int nv_cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

#define NV_BENCH_WARMUP 3
#define NV_BENCH_REPS 21


/* Bench shapes: the scales of 48 experts' (6144 x 7168) NVFP4 weights stacked (294912 rows of 448 scale
 * columns, 132 MB), and ragged ones: M not a multiple of 128 (294911 x 448), K_sf not a multiple of 4 with
 * short rows (2097155 x 37: byte loads) and long rows (200003 x 450). Each moves several times the L2. */
static const struct {
    size_t rows, k_sf;
} nv_bench_shapes[] = {{48u * 6144u, 448u}, {48u * 6144u - 1u, 448u}, {2097155u, 37u}, {200003u, 450u}};

/* One timed region on stream s: ms of whatever `launch` enqueues between two events. */
#define NV_TIME(st, e0, e1, s, ms, launch, label)                                                   \
    do {                                                                                             \
        LAB_CUDA_CHECK_GOTO(st, cudaEventRecord(e0, s), label);                                      \
        launch;                                                                                      \
        LAB_CUDA_CHECK_GOTO(st, cudaEventRecord(e1, s), label);                                      \
        LAB_CUDA_CHECK_GOTO(st, cudaEventSynchronize(e1), label);                                    \
        LAB_CUDA_CHECK_GOTO(st, cudaEventElapsedTime(&(ms), e0, e1), label);                         \
    } while (0)

/* Median of n floats (sorts them). */
static double nv_median(float *t, int n)
{
    qsort(t, (size_t)n, sizeof(float), nv_cmp_float);
    return t[n / 2];
}

/* One shape: the fixed remap (nv_remap_tiles), the remap as it was (nv_remap_words) and a device-to-device
 * cudaMemcpy of the layout's size, interleaved repetition by repetition after warm-ups; the new remap's
 * layout checked bit for bit against the old kernel's and against the offset formula (CPU). Prints a line
 * and a `lab-bench-record` (replay/report/lab_bench.h: ratio = the remap's time per byte over the copy's, so 1 /
 * the fraction of copy bandwidth; target 1 / 0.8). */
static lab_status nv_bench_shape(FILE *fout, const lab_cuda_info *info, size_t rows, size_t k_sf)
{
    lab_status st = LAB_OK;
    size_t src_bytes = rows * k_sf, cosize = lab_nvfp4_sf_cosize(rows, k_sf);
    uint8_t *src = NULL, *dst = NULL, *ref = NULL, *copy = NULL, *host = NULL, *back = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    cudaStream_t s = NULL;
    float t_new[NV_BENCH_REPS], t_old[NV_BENCH_REPS], t_copy[NV_BENCH_REPS], r_new[NV_BENCH_REPS];
    size_t bad = 0, differ = 0;
    LAB_CUDA_CHECK_GOTO(st, cudaStreamCreate(&s), done);
    LAB_CUDA_CHECK_GOTO(st, lab_cuda_event_create(&e0), done);
    LAB_CUDA_CHECK_GOTO(st, lab_cuda_event_create(&e1), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&src, src_bytes), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&dst, cosize), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&ref, cosize), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&copy, cosize), done);
    host = (uint8_t *)malloc(src_bytes);
    back = (uint8_t *)malloc(2 * cosize);
    if (!host || !back) {
        st = lab_err_set(LAB_ERR_NOMEM, "nvfp4_sf_bench: out of host memory");
        goto done;
    }
    for (size_t i = 0; i < src_bytes; ++i) host[i] = (uint8_t)(0x30u + (i * 2654435761u >> 28)); /* E4M3 0.5 .. 14 */
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(src, host, src_bytes, cudaMemcpyHostToDevice), done);
    /* poison both layouts: every byte must be written */
    LAB_CUDA_CHECK_GOTO(st, cudaMemset(dst, 0xA5, cosize), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemset(ref, 0x5A, cosize), done);
    for (int rep = 0; rep < NV_BENCH_WARMUP + NV_BENCH_REPS; ++rep) {
        float a = 0, b = 0, c = 0;
        NV_TIME(st, e0, e1, s, a, if ((st = lab_nvfp4_cuda_sf_remap_async(src, rows, k_sf, dst, LAB_NVFP4_REMAP_FIX, s)) != LAB_OK) goto done, done);
        NV_TIME(st, e0, e1, s, b, if ((st = lab_nvfp4_cuda_sf_remap_words_async(src, rows, k_sf, ref, s)) != LAB_OK) goto done, done);
        NV_TIME(st, e0, e1, s, c, LAB_CUDA_CHECK_GOTO(st, cudaMemcpyAsync(copy, dst, cosize, cudaMemcpyDeviceToDevice, s), done), done);
        if (rep < NV_BENCH_WARMUP) continue;
        int i = rep - NV_BENCH_WARMUP;
        t_new[i] = a, t_old[i] = b, t_copy[i] = c;
        /* cost per byte relative to the copy's, this repetition */
        r_new[i] = (float)((a / (double)(src_bytes + cosize)) / (c / (2.0 * (double)cosize)));
    }
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(back, dst, cosize, cudaMemcpyDeviceToHost), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(back + cosize, ref, cosize, cudaMemcpyDeviceToHost), done);
    for (size_t i = 0; i < cosize; ++i) differ += back[i] != back[cosize + i];
    for (size_t m = 0; m < rows; ++m)
        for (size_t k = 0; k < k_sf; ++k) bad += back[lab_nvfp4_sf_offset(m, k, k_sf)] != host[m * k_sf + k];
    {
        double tn = nv_median(t_new, NV_BENCH_REPS), to = nv_median(t_old, NV_BENCH_REPS), tc = nv_median(t_copy, NV_BENCH_REPS);
        qsort(r_new, NV_BENCH_REPS, sizeof(float), nv_cmp_float);
        double ratio = r_new[NV_BENCH_REPS / 2], lo = r_new[NV_BENCH_REPS / 10], hi = r_new[NV_BENCH_REPS - 1 - NV_BENCH_REPS / 10];
        double moved = (double)(src_bytes + cosize), bw_new = moved / (tn * 1e-3), bw_old = moved / (to * 1e-3);
        double bw_copy = 2.0 * (double)cosize / (tc * 1e-3);
        fprintf(fout, "0003 remap (%zu, %zu): fix %.4f ms = %.0f GB/s = %.3f of D2D copy (%.0f GB/s, %.4f ms for %.1f MB); "
                "before (one word per thread) %.4f ms = %.3f; per-rep ratio p10..p90 %.3f..%.3f; median of %d [%s sm_%d%d]%s%s\n",
                rows, k_sf, tn, bw_new * 1e-9, bw_new / bw_copy, bw_copy * 1e-9, tc, cosize * 1e-6, to, bw_old / bw_copy,
                1.0 / hi, 1.0 / lo, NV_BENCH_REPS, info->name, info->cc_major, info->cc_minor,
                bad ? " WRONG OUTPUT" : "", differ ? " DIFFERS FROM THE WORD KERNEL" : "");
        fprintf(fout, "lab-bench-record {\"name\":\"remap %zux%zu\",\"fix\":\"remap (tiles)\",\"baseline\":\"D2D cudaMemcpy\",\"device\":\"%s\","
                "\"fix_ms\":%.6g,\"baseline_ms\":%.6g,\"ratio\":%.6g,\"ratio_lo\":%.6g,\"ratio_hi\":%.6g,\"reps\":%d,\"warmup\":%d,"
                "\"target\":%.6g,\"ceiling_gbs\":%.6g,\"floor_ms\":%.6g,\"fraction\":%.6g,\"before_fraction\":%.6g,\"bytes\":%.0f}\n",
                rows, k_sf, info->name, tn, tc, ratio, lo, hi, NV_BENCH_REPS, NV_BENCH_WARMUP, 1.0 / 0.8, bw_copy * 1e-9,
                moved / bw_copy * 1e3, bw_new / bw_copy, bw_old / bw_copy, moved);
        if (bad || differ)
            st = lab_err_set(LAB_ERR_MISMATCH, "nvfp4_sf_bench: (%zu, %zu): %zu scales misplaced, %zu layout bytes differ from "
                             "the one-word-per-thread remap", rows, k_sf, bad, differ);
    }
done:
    free(host);
    free(back);
    if (src) lab_devmem_free(src);
    if (dst) lab_devmem_free(dst);
    if (ref) lab_devmem_free(ref);
    if (copy) lab_devmem_free(copy);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (s) cudaStreamDestroy(s);
    return st;
}

extern "C" lab_status nvfp4_sf_bench(FILE *fout)
{
    char why[240];
    lab_status st = lab_cuda_ready(why, sizeof why);
    if (st != LAB_OK) return st == LAB_ERR_UNSUPPORTED ? lab_err_set(LAB_ERR_UNSUPPORTED, "%s", why) : st;
    lab_cuda_info info;
    if ((st = lab_cuda_device_info(0, &info)) != LAB_OK) return st;
    for (size_t i = 0; i < sizeof nv_bench_shapes / sizeof nv_bench_shapes[0] && st == LAB_OK; ++i)
        st = nv_bench_shape(fout, &info, nv_bench_shapes[i].rows, nv_bench_shapes[i].k_sf);
    if (st == LAB_OK) fprintf(fout, "0003 remap target: >= 0.8 of D2D copy bandwidth (goal 0.9) on every shape\n");
    return st;
}
