/* lab_nvfp4_ref (CUDA): the float64 reference of the block-scaled GEMM on the device, as plain as lab_nvfp4_gemm_ref and apart from the kernels under test. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "lab_cuda.h"
#include "lab_devmem.h"
#include "lab_nvfp4.h"

extern "C" {
#include "lab_format.h"
}

#define NR_WARPS 8 /* outputs per block of 256 threads */

/* One value of a dequantized operand, as lab_nvfp4_gemm_ref makes it: e2m1 * e4m3 / global, in double. */
__device__ static double nr_value(const uint8_t *q, const uint8_t *sf, double global, size_t k, size_t k_sf, size_t row,
                                  size_t c)
{
    return (double)lab_e2m1_to_float(lab_e2m1_get(q, row * k + c)) *
           (double)lab_e4m3_to_float(sf[row * k_sf + c / LAB_NVFP4_BLOCK]) / global;
}

/* One warp per output (i, j): lane l sums products c = l, l + 32, ...; the 32 partial sums are added in a fixed
 * tree (shuffles), so every launch gives the same bits. */
__global__ void nr_gemm_ref(const uint8_t *qa, const uint8_t *sfa, double global_a, const uint8_t *qb, const uint8_t *sfb,
                            double global_b, size_t m, size_t n, size_t k, double *ref, double *abs)
{
    size_t o = (size_t)blockIdx.x * NR_WARPS + threadIdx.x / 32;
    unsigned lane = threadIdx.x % 32;
    if (o >= m * n) return; /* the whole warp leaves together */
    size_t i = o / n, j = o % n, k_sf = k / LAB_NVFP4_BLOCK;
    double s = 0.0, t = 0.0;
    for (size_t c = lane; c < k; c += 32) {
        double p = nr_value(qa, sfa, global_a, k, k_sf, i, c) * nr_value(qb, sfb, global_b, k, k_sf, j, c);
        s += p;
        t += fabs(p);
    }
    for (int d = 16; d > 0; d /= 2) {
        s += __shfl_down_sync(0xffffffffu, s, d);
        t += __shfl_down_sync(0xffffffffu, t, d);
    }
    if (lane == 0) {
        ref[o] = s;
        if (abs) abs[o] = t;
    }
}

extern "C" lab_status lab_nvfp4_gemm_ref_cuda(const lab_nvfp4_ref_job *jobs, size_t n)
{
    if (!jobs && n) return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_gemm_ref_cuda: NULL jobs");
    for (size_t q = 0; q < n; ++q) {
        const lab_nvfp4_ref_job *j = &jobs[q];
        if (!j->qa || !j->sfa || !j->qb || !j->sfb || !j->ref)
            return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_gemm_ref_cuda: job %zu: NULL buffer", q);
        if (j->m == 0 || j->n == 0 || j->k == 0 || j->k % LAB_NVFP4_BLOCK != 0 || (j->m * j->n + NR_WARPS - 1) / NR_WARPS > 0x7fffffffu)
            return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_gemm_ref_cuda: job %zu: shape (%zu, %zu, %zu) not supported", q,
                               j->m, j->n, j->k);
    }
    lab_status st = LAB_OK;
    cudaStream_t s = NULL;
    /* per job: qa, sfa, qb, sfb, ref, abs */
    void **bufs = (void **)calloc(6 * (n ? n : 1), sizeof *bufs);
    if (!bufs) return lab_err_set(LAB_ERR_NOMEM, "lab_nvfp4_gemm_ref_cuda: out of memory");
    LAB_CUDA_CHECK_GOTO(st, cudaStreamCreate(&s), done);
    for (size_t q = 0; q < n; ++q) {
        const lab_nvfp4_ref_job *j = &jobs[q];
        size_t k_sf = j->k / LAB_NVFP4_BLOCK, mn = j->m * j->n;
        const void *host[4] = {j->qa, j->sfa, j->qb, j->sfb};
        size_t len[4] = {j->m * j->k / 2, j->m * k_sf, j->n * j->k / 2, j->n * k_sf};
        void **b = bufs + 6 * q;
        for (int t = 0; t < 4; ++t) {
            LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc_async(&b[t], len[t], s), done);
            LAB_CUDA_CHECK_GOTO(st, cudaMemcpyAsync(b[t], host[t], len[t], cudaMemcpyHostToDevice, s), done);
        }
        LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc_async(&b[4], mn * sizeof(double), s), done);
        LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc_async(&b[5], mn * sizeof(double), s), done);
        nr_gemm_ref<<<(unsigned)((mn + NR_WARPS - 1) / NR_WARPS), 32 * NR_WARPS, 0, s>>>(
            (const uint8_t *)b[0], (const uint8_t *)b[1], (double)j->global_a, (const uint8_t *)b[2], (const uint8_t *)b[3],
            (double)j->global_b, j->m, j->n, j->k, (double *)b[4], (double *)b[5]);
        LAB_CUDA_CHECK_GOTO(st, cudaGetLastError(), done);
    }
    /* the downloads after every launch: a copy to pageable memory returns when it is done, so the first is the wait */
    for (size_t q = 0; q < n; ++q) {
        const lab_nvfp4_ref_job *j = &jobs[q];
        size_t mn = j->m * j->n;
        LAB_CUDA_CHECK_GOTO(st, cudaMemcpyAsync(j->ref, bufs[6 * q + 4], mn * sizeof(double), cudaMemcpyDeviceToHost, s), done);
        if (j->abs)
            LAB_CUDA_CHECK_GOTO(st, cudaMemcpyAsync(j->abs, bufs[6 * q + 5], mn * sizeof(double), cudaMemcpyDeviceToHost, s), done);
    }
    LAB_CUDA_CHECK_GOTO(st, cudaStreamSynchronize(s), done);
done:
    st = lab_cuda_stream_release(st, s, bufs, 6 * n);
    free(bufs);
    return st;
}

/* this module in the load check that runs before any case (lab_cuda.h) */
LAB_CUDA_MODULE(nr_gemm_ref);
