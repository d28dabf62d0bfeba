/* pow_grad (CUDA): incident 0004's case on the GPU: inputs from the lab RNG, forward pow, the RMS reduction and both VJP rules. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "lab_cuda.h"
#include "lab_devmem.h"
#include "pow_grad.h"

extern "C" {
#include "lab_rng.h"
}

#define PG_THREADS 256

/* x, w per element and c per row, from the same (seed, stream, index) as pow_grad_inputs. */
__global__ void pg_inputs(uint64_t seed, size_t n, size_t rows, float *x, float *w, float *c)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        x[i] = pow_grad_is_padding(i, rows, n / rows) ? 0.0f : lab_rng_normal(seed, POW_GRAD_STREAM_X, i);
        w[i] = pow_grad_upstream_w(lab_rng_uniform(seed, POW_GRAD_STREAM_W, i));
    }
    if (i < rows) c[i] = lab_rng_normal(seed, POW_GRAD_STREAM_C, i);
}

/* Forward op: y = powf(x, e), e a runtime value. */
__global__ void pg_pow_forward(size_t n, float e, const float *x, float *y)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = powf(x[i], e);
}

/* RMS head, one block of POW_GRAD_LANES threads per row: lane t sums y[t], y[t+L], ... left to right,
 * then a shared-memory tree (lane t < s adds lane t+s, s = L/2 ... 1); lane 0 computes r and g. */
__global__ void pg_rms_forward(size_t cols, float eps, const float *y, const float *c, float *r, float *g)
{
    __shared__ float lane[POW_GRAD_LANES];
    size_t row = blockIdx.x;
    unsigned t = threadIdx.x;
    const float *yr = y + row * cols;
    float s = yr[t];
    for (size_t j = t + POW_GRAD_LANES; j < cols; j += POW_GRAD_LANES) s = s + yr[j];
    lane[t] = s;
    __syncthreads();
    for (unsigned st = POW_GRAD_LANES / 2; st > 0; st >>= 1) {
        if (t < st) lane[t] = lane[t] + lane[t + st];
        __syncthreads();
    }
    if (t == 0) {
        float rr;
        g[row] = pow_grad_rms_upstream(c[row], lane[0], (float)cols, eps, &rr);
        r[row] = rr;
    }
}

/* Backward through the pow VJP: upstream per element (per_row = 0) or one per row of cols (per_row = 1). */
__global__ void pg_vjp(int rule, size_t n, size_t cols, int per_row, float e, const float *up, const float *x,
                       const float *y, float *dx)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float g = per_row ? up[i / cols] : up[i];
    dx[i] = rule == POW_GRAD_RULE_FIX ? pow_grad_vjp_fix(g, x[i], y[i], e) : pow_grad_vjp_bug_exp_log(g, x[i], e);
}

/* Launch check: the launch itself (configuration errors) and then the kernel's execution. */
#define PG_LAUNCHED(st, label)                                                                     \
    do {                                                                                           \
        LAB_CUDA_CHECK_GOTO(st, cudaGetLastError(), label);                                        \
        LAB_CUDA_CHECK_GOTO(st, lab_cuda_sync(), label);                                           \
    } while (0)

extern "C" lab_status pow_grad_cuda_case(pow_grad_case *pc, uint64_t seed, pow_grad_rule rule)
{
    lab_status st = LAB_OK;
    size_t rows = pc->rows, cols = pc->cols, n = rows * cols;
    size_t fb = n * sizeof(float), rb = rows * sizeof(float);
    float *x = NULL, *w = NULL, *c = NULL, *y = NULL, *r = NULL, *g = NULL, *dsq = NULL, *drms = NULL;
    unsigned blocks = (unsigned)((n + PG_THREADS - 1) / PG_THREADS);
    if (cols % POW_GRAD_LANES != 0 || rows > 0x7fffffffu || (n + PG_THREADS - 1) / PG_THREADS > 0x7fffffffu)
        return lab_err_set(LAB_ERR_ARG, "pow_grad_cuda_case: shape %zu x %zu not supported", rows, cols);

    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&x, fb), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&w, fb), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&y, fb), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&dsq, fb), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&drms, fb), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&c, rb), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&r, rb), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&g, rb), done);

    pg_inputs<<<blocks, PG_THREADS>>>(seed, n, rows, x, w, c);
    PG_LAUNCHED(st, done);
    pg_pow_forward<<<blocks, PG_THREADS>>>(n, pc->e, x, y);
    PG_LAUNCHED(st, done);
    pg_rms_forward<<<(unsigned)rows, POW_GRAD_LANES>>>(cols, pc->eps, y, c, r, g);
    PG_LAUNCHED(st, done);
    pg_vjp<<<blocks, PG_THREADS>>>((int)rule, n, cols, 0, pc->e, w, x, y, dsq);
    PG_LAUNCHED(st, done);
    pg_vjp<<<blocks, PG_THREADS>>>((int)rule, n, cols, 1, pc->e, g, x, y, drms);
    PG_LAUNCHED(st, done);

    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(pc->x, x, fb, cudaMemcpyDeviceToHost), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(pc->w, w, fb, cudaMemcpyDeviceToHost), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(pc->y, y, fb, cudaMemcpyDeviceToHost), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(pc->dx_sq, dsq, fb, cudaMemcpyDeviceToHost), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(pc->dx_rms, drms, fb, cudaMemcpyDeviceToHost), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(pc->c, c, rb, cudaMemcpyDeviceToHost), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(pc->r, r, rb, cudaMemcpyDeviceToHost), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(pc->g, g, rb, cudaMemcpyDeviceToHost), done);

done:
    {
        /* Free everything; the first failure (if any) is the one reported. */
        float *bufs[] = {x, w, c, y, r, g, dsq, drms};
        for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; ++k) {
            if (!bufs[k]) continue;
            cudaError_t e = lab_devmem_free(bufs[k]);
            if (e != cudaSuccess && st == LAB_OK) st = lab_cuda_fail(__FILE__, __LINE__, "lab_devmem_free", cudaGetErrorString(e));
        }
    }
    return st;
}

/* this module in the load check that runs before any case (lab_cuda.h) */
LAB_CUDA_MODULE(pg_inputs);
