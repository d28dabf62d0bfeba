/* lab_devmem: a case's device memory, from a pool its worker process keeps between cases (lab_devmem.h). */
#include "lab_devmem.h"

#include <cuda_runtime.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LAB_DEVMEM_KEEP_MB_DEFAULT 512

/* -1: not decided yet; 0: the pool; 1: exact (plain cudaMalloc). */
static int lab_devmem_mode = -1;
static thread_local int lab_devmem_pool_device = -1; /* the device whose pool threshold this thread has set */

extern "C" void lab_devmem_exact(void) { __atomic_store_n(&lab_devmem_mode, 1, __ATOMIC_RELEASE); }

cudaError_t lab_devmem_init(void)
{
    int mode = __atomic_load_n(&lab_devmem_mode, __ATOMIC_ACQUIRE);
    if (mode < 0) { /* threads that decide at once decide the same */
        const char *m = getenv("LAB_DEVMEM");
        mode = m && !strcmp(m, "exact") ? 1 : 0;
        if (m && *m && !mode) fprintf(stderr, "lab: LAB_DEVMEM='%s': only 'exact' is known; the pool is used\n", m);
        __atomic_store_n(&lab_devmem_mode, mode, __ATOMIC_RELEASE);
    }
    if (mode) return cudaSuccess;
    int dev;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess || dev == lab_devmem_pool_device) return e;
    uint64_t keep = (uint64_t)LAB_DEVMEM_KEEP_MB_DEFAULT << 20;
    const char *k = getenv("LAB_DEVMEM_KEEP_MB");
    if (k && *k) {
        char *end;
        errno = 0;
        unsigned long long mb = strtoull(k, &end, 10);
        if (errno || *end || *k == '-' || mb > (UINT64_MAX >> 20))
            fprintf(stderr, "lab: LAB_DEVMEM_KEEP_MB='%s' is not a number of MiB (0 .. %llu): %d MiB kept\n", k,
                    (unsigned long long)(UINT64_MAX >> 20), LAB_DEVMEM_KEEP_MB_DEFAULT);
        else
            keep = (uint64_t)mb << 20;
    }
    cudaMemPool_t pool;
    if ((e = cudaDeviceGetDefaultMemPool(&pool, dev)) != cudaSuccess) return e;
    if ((e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep)) != cudaSuccess) return e;
    lab_devmem_pool_device = dev;
    return cudaSuccess;
}

cudaError_t lab_devmem_alloc(void **p, size_t bytes)
{
    cudaError_t e = lab_devmem_init();
    if (e != cudaSuccess) return e;
    return __atomic_load_n(&lab_devmem_mode, __ATOMIC_ACQUIRE) ? cudaMalloc(p, bytes) : cudaMallocAsync(p, bytes, 0);
}

cudaError_t lab_devmem_free(void *p)
{
    if (!p) return cudaSuccess;
    return __atomic_load_n(&lab_devmem_mode, __ATOMIC_ACQUIRE) == 0 ? cudaFreeAsync(p, 0) : cudaFree(p);
}
