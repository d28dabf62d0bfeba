/* nvfp4_fold (CUDA): incident 0003's folded-global-scale GEMM on the GPU: the fold kernel, then the fixed remap and the block-scaled GEMM of kernels/lab_nvfp4.cu. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>

#include "lab_cuda.h"
#include "lab_devmem.h"
#include "nvfp4_fold.h"

/* out[i] = nvfp4_fold_scale(sf[i], global) for i < n: the same rounding as the CPU (__fdiv_rn, then the
 * shared E4M3 encoder). */
__global__ void nvfp4_fold_kernel(const uint8_t *sf, size_t n, float global, uint8_t *out)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = nvfp4_fold_scale(sf[i], global);
}

static lab_status nvfp4_fold_launch(const uint8_t *sf, size_t n, float global, uint8_t *out, cudaStream_t s)
{
    unsigned threads = 256, blocks = (unsigned)((n + threads - 1) / threads);
    nvfp4_fold_kernel<<<blocks, threads, 0, s>>>(sf, n, global, out);
    LAB_CUDA_CHECK(cudaGetLastError());
    return LAB_OK;
}

/* One wait per run, as nvfp4_sf_run_cuda: every buffer on the run's stream (nvfp4_sf_cuda_operands, _finish). */
extern "C" lab_status nvfp4_fold_run_cuda(const nvfp4_fold_work *fw, int fold, float *out)
{
    const nvfp4_sf_work *w = fw->w;
    size_t m = w->shape.m, n = w->shape.n, k = w->shape.k, ka = m * w->k_sf, kb = n * w->k_sf;
    lab_status st = LAB_OK;
    nvfp4_sf_cuda_ops o = {NULL, NULL, NULL, NULL};
    uint8_t *fa = NULL, *fb = NULL, *la = NULL, *lb = NULL;
    float *dout = NULL;
    cudaStream_t s = NULL;
    float alpha = fold ? 1.0f : lab_nvfp4_alpha(fw->global_a, fw->global_b);
    LAB_CUDA_CHECK_GOTO(st, cudaStreamCreate(&s), done);
    if ((st = nvfp4_sf_cuda_operands(w, s, &o)) != LAB_OK) goto done;
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc_async((void **)&fa, ka, s), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc_async((void **)&fb, kb, s), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc_async((void **)&la, w->cosize_a, s), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc_async((void **)&lb, w->cosize_b, s), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc_async((void **)&dout, m * n * sizeof(float), s), done);
    if (fold) {
        if ((st = nvfp4_fold_launch(o.sfa, ka, fw->global_a, fa, s)) != LAB_OK) goto done;
        if ((st = nvfp4_fold_launch(o.sfb, kb, fw->global_b, fb, s)) != LAB_OK) goto done;
    } else {
        LAB_CUDA_CHECK_GOTO(st, cudaMemcpyAsync(fa, o.sfa, ka, cudaMemcpyDeviceToDevice, s), done);
        LAB_CUDA_CHECK_GOTO(st, cudaMemcpyAsync(fb, o.sfb, kb, cudaMemcpyDeviceToDevice, s), done);
    }
    /* The fixed remap writes every byte of the layouts. */
    if ((st = lab_nvfp4_cuda_sf_remap_async(fa, m, w->k_sf, la, LAB_NVFP4_REMAP_FIX, s)) != LAB_OK) goto done;
    if ((st = lab_nvfp4_cuda_sf_remap_async(fb, n, w->k_sf, lb, LAB_NVFP4_REMAP_FIX, s)) != LAB_OK) goto done;
    st = lab_nvfp4_cuda_gemm_async(o.qa, la, o.qb, lb, m, n, k, alpha, dout, s);
done:
    {
        void *bufs[] = {o.qa, o.qb, o.sfa, o.sfb, fa, fb, la, lb, dout};
        return nvfp4_sf_cuda_finish(st, s, dout, out, m * n, bufs, sizeof bufs / sizeof bufs[0]);
    }
}

/* this module in the load check that runs before any case (lab_cuda.h) */
LAB_CUDA_MODULE(nvfp4_fold_kernel);
