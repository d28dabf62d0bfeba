/* dsh_cuda: incident 0006's device query for the NCCL version of the job (the lab side only counts GPUs). */
#include <cuda_runtime.h>
#include <stdio.h>

#include "dsh.h"
#include "lab_cuda.h"

int dsh_cuda_gpus(char *why, size_t len)
{
    if (lab_cuda_ready(why, len) != LAB_OK) return 0;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(why, len, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
        return 0;
    }
    return n;
}
