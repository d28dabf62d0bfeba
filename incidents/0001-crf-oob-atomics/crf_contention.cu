/* crf_contention (CUDA): incident 0001's contention check on the GPU: blocks of threads adding known values onto shared float32 addresses with real atomicAdd, or, as a control, with a plain read-modify-write. */
#include <cuda_runtime.h>

#include "crf_contention.h"
#include "lab_cuda.h"
#include "lab_devmem.h"

/* Thread t of every block adds val[t] to buf[addr[t]], reps times. */
__global__ void cc_add(float *buf, const int *addr, const float *val, int lanes, int reps, int op)
{
    int t = threadIdx.x;
    if (t >= lanes) return;
    float v = val[t];
    float *p = buf + addr[t];
    for (int r = 0; r < reps; ++r) {
        if (op == CRF_CONT_ATOMIC) {
            atomicAdd(p, v);
        } else {
            volatile float *q = p; /* a load and a store the compiler must issue as written */
            *q = *q + v;
        }
    }
}

extern "C" lab_status crf_contention_cuda(const float *init, int n_addr, const int *lane_addr, const float *lane_val,
                                          int lanes, int blocks, int reps, crf_cont_op op, float *out)
{
    if (!init || !lane_addr || !lane_val || !out)
        return lab_err_set(LAB_ERR_ARG, "crf_contention_cuda: init, lane_addr, lane_val and out must not be NULL");
    if (n_addr < 1 || n_addr > CRF_CONT_MAX_ADDR)
        return lab_err_set(LAB_ERR_ARG, "crf_contention_cuda: n_addr = %d: need 1..%d", n_addr, CRF_CONT_MAX_ADDR);
    if (lanes < 1 || lanes > CRF_CONT_MAX_LANES)
        return lab_err_set(LAB_ERR_ARG, "crf_contention_cuda: lanes = %d: need 1..%d", lanes, CRF_CONT_MAX_LANES);
    if (blocks < 1 || blocks > CRF_CONT_MAX_BLOCKS)
        return lab_err_set(LAB_ERR_ARG, "crf_contention_cuda: blocks = %d: need 1..%d", blocks, CRF_CONT_MAX_BLOCKS);
    if (reps < 1 || reps > CRF_CONT_MAX_REPS)
        return lab_err_set(LAB_ERR_ARG, "crf_contention_cuda: reps = %d: need 1..%d", reps, CRF_CONT_MAX_REPS);
    if (op != CRF_CONT_ATOMIC && op != CRF_CONT_PLAIN_RMW)
        return lab_err_set(LAB_ERR_ARG, "crf_contention_cuda: op = %d: need CRF_CONT_ATOMIC or CRF_CONT_PLAIN_RMW", (int)op);
    for (int t = 0; t < lanes; ++t)
        if (lane_addr[t] < 0 || lane_addr[t] >= n_addr)
            return lab_err_set(LAB_ERR_ARG, "crf_contention_cuda: lane_addr[%d] = %d: need 0..%d", t, lane_addr[t],
                               n_addr - 1);
    lab_status st = LAB_OK;
    float *buf = NULL, *val = NULL;
    int *addr = NULL;
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&buf, (size_t)n_addr * sizeof(float)), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&val, (size_t)lanes * sizeof(float)), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&addr, (size_t)lanes * sizeof(int)), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(buf, init, (size_t)n_addr * sizeof(float), cudaMemcpyHostToDevice), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(val, lane_val, (size_t)lanes * sizeof(float), cudaMemcpyHostToDevice), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(addr, lane_addr, (size_t)lanes * sizeof(int), cudaMemcpyHostToDevice), done);
    cc_add<<<(unsigned)blocks, (unsigned)lanes>>>(buf, addr, val, lanes, reps, (int)op);
    LAB_CUDA_CHECK_GOTO(st, cudaGetLastError(), done);
    LAB_CUDA_CHECK_GOTO(st, lab_cuda_sync(), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(out, buf, (size_t)n_addr * sizeof(float), cudaMemcpyDeviceToHost), done);
done:
    lab_devmem_free(buf);
    lab_devmem_free(val);
    lab_devmem_free(addr);
    return st;
}

/* this module in the load check that runs before any case (lab_cuda.h) */
LAB_CUDA_MODULE(cc_add);
