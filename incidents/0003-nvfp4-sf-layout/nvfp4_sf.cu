/* nvfp4_sf (CUDA): incident 0003's workload on the GPU (stale layout memory left by a freed block, CUDA remap and GEMM) and the remap benchmark. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "lab_cuda.h"
#include "nvfp4_sf.h"

int nvfp4_sf_cuda_stale_reused = 0, nvfp4_sf_cuda_stale_buffers = 0;

/* A layout buffer whose contents are the stale bytes without this allocation ever being written: a block of a
 * stream-ordered pool is filled with the stale bytes, freed, and allocated again on the same stream, so the new
 * allocation gets the freed block back with its bytes (as a caching allocator hands a tensor the memory of a
 * dead one), while compute-sanitizer initcheck sees a fresh, unwritten allocation. If the pool hands out a
 * different block, the stale bytes are copied in (then initcheck cannot see the fault) and reused stays 0. */
static lab_status nv_stale_alloc(const uint8_t *host_stale, size_t len, cudaStream_t s, uint8_t **out, int *reused)
{
    uint8_t *prev = NULL, *buf = NULL;
    *out = NULL;
    *reused = 0;
    LAB_CUDA_CHECK(cudaMallocAsync((void **)&prev, len, s));
    LAB_CUDA_CHECK(cudaMemcpyAsync(prev, host_stale, len, cudaMemcpyHostToDevice, s));
    LAB_CUDA_CHECK(cudaFreeAsync(prev, s));
    LAB_CUDA_CHECK(cudaMallocAsync((void **)&buf, len, s));
    LAB_CUDA_CHECK(cudaStreamSynchronize(s));
    *out = buf;
    if (buf == prev) {
        *reused = 1;
    } else {
        LAB_CUDA_CHECK(cudaMemcpy(buf, host_stale, len, cudaMemcpyHostToDevice));
    }
    return LAB_OK;
}

extern "C" lab_status nvfp4_sf_run_cuda(const nvfp4_sf_work *w, lab_nvfp4_remap_kind kind, float *out)
{
    lab_status st = LAB_OK;
    size_t m = w->shape.m, n = w->shape.n, k = w->shape.k;
    uint8_t *qa = NULL, *qb = NULL, *sfa = NULL, *sfb = NULL, *la = NULL, *lb = NULL;
    float *dout = NULL;
    cudaStream_t s = NULL;
    int ra = 0, rb = 0;
    LAB_CUDA_CHECK_GOTO(st, cudaStreamCreate(&s), done);
    /* The layouts first, so that their stale blocks are the pool's most recently freed. */
    if ((st = nv_stale_alloc(w->stale_a, w->cosize_a, s, &la, &ra)) != LAB_OK) goto done;
    if ((st = nv_stale_alloc(w->stale_b, w->cosize_b, s, &lb, &rb)) != LAB_OK) goto done;
    nvfp4_sf_cuda_stale_reused += ra + rb;
    nvfp4_sf_cuda_stale_buffers += 2;
    LAB_CUDA_CHECK_GOTO(st, cudaMalloc((void **)&qa, m * k / 2), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMalloc((void **)&qb, n * k / 2), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMalloc((void **)&sfa, m * w->k_sf), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMalloc((void **)&sfb, n * w->k_sf), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMalloc((void **)&dout, m * n * sizeof(float)), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(qa, w->qa, m * k / 2, cudaMemcpyHostToDevice), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(qb, w->qb, n * k / 2, cudaMemcpyHostToDevice), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(sfa, w->sfa, m * w->k_sf, cudaMemcpyHostToDevice), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(sfb, w->sfb, n * w->k_sf, cudaMemcpyHostToDevice), done);
    if ((st = lab_nvfp4_cuda_sf_remap(sfa, m, w->k_sf, la, kind)) != LAB_OK) goto done;
    if ((st = lab_nvfp4_cuda_sf_remap(sfb, n, w->k_sf, lb, kind)) != LAB_OK) goto done;
    if ((st = lab_nvfp4_cuda_gemm(qa, la, qb, lb, m, n, k, lab_nvfp4_alpha(w->global_a, w->global_b), dout)) != LAB_OK)
        goto done;
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(out, dout, m * n * sizeof(float), cudaMemcpyDeviceToHost), done);
done:
    {
        void *bufs[] = {qa, qb, sfa, sfb, dout};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; ++i) {
            if (!bufs[i]) continue;
            cudaError_t e = cudaFree(bufs[i]);
            if (e != cudaSuccess && st == LAB_OK) st = lab_cuda_fail(__FILE__, __LINE__, "cudaFree", cudaGetErrorString(e));
        }
        void *pooled[] = {la, lb};
        for (size_t i = 0; i < 2; ++i) {
            if (!pooled[i]) continue;
            cudaError_t e = cudaFreeAsync(pooled[i], s);
            if (e != cudaSuccess && st == LAB_OK) st = lab_cuda_fail(__FILE__, __LINE__, "cudaFreeAsync", cudaGetErrorString(e));
        }
        if (s) {
            cudaError_t e = cudaStreamSynchronize(s);
            if (e != cudaSuccess && st == LAB_OK) st = lab_cuda_fail(__FILE__, __LINE__, "cudaStreamSynchronize", cudaGetErrorString(e));
            e = cudaStreamDestroy(s);
            if (e != cudaSuccess && st == LAB_OK) st = lab_cuda_fail(__FILE__, __LINE__, "cudaStreamDestroy", cudaGetErrorString(e));
        }
    }
    return st;
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
/* The scales of 48 experts' (6144 x 7168) NVFP4 weights stacked: 294912 rows of 448 scale columns (132 MB). */
#define NV_BENCH_ROWS (48u * 6144u)
#define NV_BENCH_KSF 448u

extern "C" lab_status nvfp4_sf_bench(FILE *fout)
{
    char why[240];
    lab_status st = lab_cuda_ready(why, sizeof why);
    if (st != LAB_OK) return st == LAB_ERR_UNSUPPORTED ? lab_err_set(LAB_ERR_UNSUPPORTED, "%s", why) : st;
    lab_cuda_info info;
    if ((st = lab_cuda_device_info(0, &info)) != LAB_OK) return st;
    size_t rows = NV_BENCH_ROWS, k_sf = NV_BENCH_KSF, src_bytes = rows * k_sf;
    size_t cosize = lab_nvfp4_sf_cosize(rows, k_sf);
    uint8_t *src = NULL, *dst = NULL, *copy = NULL, *host = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    cudaStream_t s = NULL;
    float t_remap[NV_BENCH_REPS], t_copy[NV_BENCH_REPS];
    size_t bad = 0;
    LAB_CUDA_CHECK_GOTO(st, cudaStreamCreate(&s), done);
    LAB_CUDA_CHECK_GOTO(st, cudaEventCreate(&e0), done);
    LAB_CUDA_CHECK_GOTO(st, cudaEventCreate(&e1), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMalloc((void **)&src, src_bytes), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMalloc((void **)&dst, cosize), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMalloc((void **)&copy, cosize), done);
    host = (uint8_t *)malloc(cosize);
    if (!host) {
        st = lab_err_set(LAB_ERR_NOMEM, "nvfp4_sf_bench: out of host memory");
        goto done;
    }
    for (size_t i = 0; i < src_bytes; ++i) host[i] = (uint8_t)(0x30u + (i * 2654435761u >> 28)); /* E4M3 0.5 .. 14 */
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(src, host, src_bytes, cudaMemcpyHostToDevice), done);
    for (int rep = 0; rep < NV_BENCH_WARMUP + NV_BENCH_REPS; ++rep) {
        LAB_CUDA_CHECK_GOTO(st, cudaEventRecord(e0, s), done);
        if ((st = lab_nvfp4_cuda_sf_remap_async(src, rows, k_sf, dst, s)) != LAB_OK) goto done;
        LAB_CUDA_CHECK_GOTO(st, cudaEventRecord(e1, s), done);
        LAB_CUDA_CHECK_GOTO(st, cudaEventSynchronize(e1), done);
        float ms = 0;
        LAB_CUDA_CHECK_GOTO(st, cudaEventElapsedTime(&ms, e0, e1), done);
        if (rep >= NV_BENCH_WARMUP) t_remap[rep - NV_BENCH_WARMUP] = ms;
        LAB_CUDA_CHECK_GOTO(st, cudaEventRecord(e0, s), done);
        LAB_CUDA_CHECK_GOTO(st, cudaMemcpyAsync(copy, dst, cosize, cudaMemcpyDeviceToDevice, s), done);
        LAB_CUDA_CHECK_GOTO(st, cudaEventRecord(e1, s), done);
        LAB_CUDA_CHECK_GOTO(st, cudaEventSynchronize(e1), done);
        LAB_CUDA_CHECK_GOTO(st, cudaEventElapsedTime(&ms, e0, e1), done);
        if (rep >= NV_BENCH_WARMUP) t_copy[rep - NV_BENCH_WARMUP] = ms;
    }
    /* The timed remap must be right: every byte against the offset formula. */
    {
        uint8_t *back = (uint8_t *)malloc(cosize);
        if (!back) {
            st = lab_err_set(LAB_ERR_NOMEM, "nvfp4_sf_bench: out of host memory");
            goto done;
        }
        cudaError_t e = cudaMemcpy(back, dst, cosize, cudaMemcpyDeviceToHost);
        if (e != cudaSuccess) {
            free(back);
            st = lab_cuda_fail(__FILE__, __LINE__, "cudaMemcpy", cudaGetErrorString(e));
            goto done;
        }
        for (size_t m = 0; m < rows; ++m)
            for (size_t k = 0; k < k_sf; ++k) bad += back[lab_nvfp4_sf_offset(m, k, k_sf)] != host[m * k_sf + k];
        free(back);
    }
    qsort(t_remap, NV_BENCH_REPS, sizeof(float), nv_cmp_float);
    qsort(t_copy, NV_BENCH_REPS, sizeof(float), nv_cmp_float);
    {
        double tr = t_remap[NV_BENCH_REPS / 2] * 1e-3, tc = t_copy[NV_BENCH_REPS / 2] * 1e-3;
        double bw_remap = (double)(src_bytes + cosize) / tr, bw_copy = 2.0 * (double)cosize / tc;
        fprintf(fout, "0003 remap (fix): %.1f GB/s = %.3f of device-to-device cudaMemcpy %.1f GB/s (median of %d, %.3f ms vs "
                "%.3f ms; (%zu, %zu) scales, %.1f MB read + %.1f MB written; copy counts read + write) [%s sm_%d%d]%s\n",
                bw_remap * 1e-9, bw_remap / bw_copy, bw_copy * 1e-9, NV_BENCH_REPS, tr * 1e3, tc * 1e3, rows, k_sf,
                src_bytes * 1e-6, cosize * 1e-6, info.name, info.cc_major, info.cc_minor,
                bad ? " WRONG OUTPUT" : "");
        fprintf(fout, "0003 remap target: ratio >= 0.70: %s\n", bw_remap / bw_copy >= 0.70 ? "met" : "NOT met");
        if (bad) st = lab_err_set(LAB_ERR_MISMATCH, "nvfp4_sf_bench: %zu remapped scales misplaced", bad);
    }
done:
    free(host);
    if (src) cudaFree(src);
    if (dst) cudaFree(dst);
    if (copy) cudaFree(copy);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (s) cudaStreamDestroy(s);
    return st;
}
