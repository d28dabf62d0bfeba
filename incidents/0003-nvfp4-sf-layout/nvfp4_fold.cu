/* nvfp4_fold (CUDA): incident 0003's folded-global-scale GEMM on the GPU: the fold kernel, then the fixed remap and the block-scaled GEMM of kernels/lab_nvfp4.cu. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>

#include "lab_cuda.h"
#include "nvfp4_fold.h"

/* out[i] = nvfp4_fold_scale(sf[i], global) for i < n: the same rounding as the CPU (__fdiv_rn, then the
 * shared E4M3 encoder). */
__global__ void nvfp4_fold_kernel(const uint8_t *sf, size_t n, float global, uint8_t *out)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = nvfp4_fold_scale(sf[i], global);
}

static lab_status nvfp4_fold_launch(const uint8_t *sf, size_t n, float global, uint8_t *out)
{
    unsigned threads = 256, blocks = (unsigned)((n + threads - 1) / threads);
    nvfp4_fold_kernel<<<blocks, threads>>>(sf, n, global, out);
    LAB_CUDA_CHECK(cudaGetLastError());
    LAB_CUDA_CHECK(cudaDeviceSynchronize());
    return LAB_OK;
}

extern "C" lab_status nvfp4_fold_run_cuda(const nvfp4_fold_work *fw, int fold, float *out)
{
    const nvfp4_sf_work *w = fw->w;
    size_t m = w->shape.m, n = w->shape.n, k = w->shape.k, ka = m * w->k_sf, kb = n * w->k_sf;
    lab_status st = LAB_OK;
    uint8_t *qa = NULL, *qb = NULL, *sfa = NULL, *sfb = NULL, *fa = NULL, *fb = NULL, *la = NULL, *lb = NULL;
    float *dout = NULL;
    float alpha = fold ? 1.0f : lab_nvfp4_alpha(fw->global_a, fw->global_b);
    LAB_CUDA_CHECK_GOTO(st, cudaMalloc((void **)&qa, m * k / 2), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMalloc((void **)&qb, n * k / 2), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMalloc((void **)&sfa, ka), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMalloc((void **)&sfb, kb), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMalloc((void **)&fa, ka), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMalloc((void **)&fb, kb), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMalloc((void **)&la, w->cosize_a), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMalloc((void **)&lb, w->cosize_b), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMalloc((void **)&dout, m * n * sizeof(float)), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(qa, w->qa, m * k / 2, cudaMemcpyHostToDevice), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(qb, w->qb, n * k / 2, cudaMemcpyHostToDevice), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(sfa, w->sfa, ka, cudaMemcpyHostToDevice), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(sfb, w->sfb, kb, cudaMemcpyHostToDevice), done);
    if (fold) {
        if ((st = nvfp4_fold_launch(sfa, ka, fw->global_a, fa)) != LAB_OK) goto done;
        if ((st = nvfp4_fold_launch(sfb, kb, fw->global_b, fb)) != LAB_OK) goto done;
    } else {
        LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(fa, sfa, ka, cudaMemcpyDeviceToDevice), done);
        LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(fb, sfb, kb, cudaMemcpyDeviceToDevice), done);
    }
    /* The fixed remap writes every byte of the layouts. */
    if ((st = lab_nvfp4_cuda_sf_remap(fa, m, w->k_sf, la, LAB_NVFP4_REMAP_FIX)) != LAB_OK) goto done;
    if ((st = lab_nvfp4_cuda_sf_remap(fb, n, w->k_sf, lb, LAB_NVFP4_REMAP_FIX)) != LAB_OK) goto done;
    if ((st = lab_nvfp4_cuda_gemm(qa, la, qb, lb, m, n, k, alpha, dout)) != LAB_OK) goto done;
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(out, dout, m * n * sizeof(float), cudaMemcpyDeviceToHost), done);
done:
    {
        void *bufs[] = {qa, qb, sfa, sfb, fa, fb, la, lb, dout};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; ++i) {
            if (!bufs[i]) continue;
            cudaError_t e = cudaFree(bufs[i]);
            if (e != cudaSuccess && st == LAB_OK) st = lab_cuda_fail(__FILE__, __LINE__, "cudaFree", cudaGetErrorString(e));
        }
    }
    return st;
}
