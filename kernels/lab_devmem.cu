/* lab_devmem: a case's device memory, from a pool its worker process keeps between cases (lab_devmem.h). */
#include "lab_devmem.h"

#include <cuda_runtime.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LAB_DEVMEM_KEEP_MB_DEFAULT 512

/* -1: not decided yet; 0: the pool; 1: exact (plain cudaMalloc). */
static int lab_devmem_mode = -1;

/* The calling thread's pools, one a device it used (created on first use); destroyed when the thread ends (a key's
 * destructor: it runs for threads that end, not for the process's exit, where the driver frees everything). */
#define LAB_DEVMEM_DEVICES 64
typedef struct {
    cudaMemPool_t pool[LAB_DEVMEM_DEVICES];
} lab_devmem_pools;
static thread_local lab_devmem_pools lab_devmem_mine;
static pthread_key_t lab_devmem_key;
static pthread_once_t lab_devmem_key_once = PTHREAD_ONCE_INIT;

static void lab_devmem_thread_end(void *v)
{
    lab_devmem_pools *p = (lab_devmem_pools *)v;
    for (int d = 0; d < LAB_DEVMEM_DEVICES; ++d)
        if (p->pool[d]) (void)cudaMemPoolDestroy(p->pool[d]); /* outstanding blocks: released once freed */
}

static void lab_devmem_key_make(void) { (void)pthread_key_create(&lab_devmem_key, lab_devmem_thread_end); }

extern "C" void lab_devmem_exact(void) { __atomic_store_n(&lab_devmem_mode, 1, __ATOMIC_RELEASE); }

/* Bytes of freed memory a pool keeps between synchronisations (LAB_DEVMEM_KEEP_MB). */
static uint64_t lab_devmem_keep(void)
{
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
    return keep;
}

/* The calling thread's pool on the current device, made on first use. */
static cudaError_t lab_devmem_pool(cudaMemPool_t *out)
{
    int dev;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return e;
    if (dev < 0 || dev >= LAB_DEVMEM_DEVICES) return cudaErrorInvalidDevice;
    if (!lab_devmem_mine.pool[dev]) {
        cudaMemPoolProps props;
        memset(&props, 0, sizeof props);
        props.allocType = cudaMemAllocationTypePinned;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = dev;
        cudaMemPool_t pool;
        if ((e = cudaMemPoolCreate(&pool, &props)) != cudaSuccess) return e;
        uint64_t keep = lab_devmem_keep();
        if ((e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep)) != cudaSuccess) {
            (void)cudaMemPoolDestroy(pool);
            return e;
        }
        pthread_once(&lab_devmem_key_once, lab_devmem_key_make);
        (void)pthread_setspecific(lab_devmem_key, &lab_devmem_mine);
        lab_devmem_mine.pool[dev] = pool;
    }
    *out = lab_devmem_mine.pool[dev];
    return cudaSuccess;
}

cudaError_t lab_devmem_init(void)
{
    int mode = __atomic_load_n(&lab_devmem_mode, __ATOMIC_ACQUIRE);
    if (mode < 0) { /* threads that decide at once decide the same */
        const char *m = getenv("LAB_DEVMEM");
        mode = m && !strcmp(m, "exact") ? 1 : 0;
        if (m && *m && !mode) fprintf(stderr, "lab: LAB_DEVMEM='%s': only 'exact' is known; the pool is used\n", m);
        __atomic_store_n(&lab_devmem_mode, mode, __ATOMIC_RELEASE);
    }
    cudaMemPool_t pool;
    return lab_devmem_pool(&pool);
}

cudaError_t lab_devmem_alloc(void **p, size_t bytes)
{
    cudaError_t e = lab_devmem_init();
    if (e != cudaSuccess) return e;
    if (__atomic_load_n(&lab_devmem_mode, __ATOMIC_ACQUIRE)) return cudaMalloc(p, bytes);
    return lab_devmem_alloc_async(p, bytes, 0);
}

cudaError_t lab_devmem_alloc_async(void **p, size_t bytes, cudaStream_t s)
{
    cudaMemPool_t pool;
    cudaError_t e = lab_devmem_pool(&pool);
    if (e != cudaSuccess) return e;
    return cudaMallocFromPoolAsync(p, bytes, pool, s);
}

cudaError_t lab_devmem_free(void *p)
{
    if (!p) return cudaSuccess;
    return __atomic_load_n(&lab_devmem_mode, __ATOMIC_ACQUIRE) == 0 ? cudaFreeAsync(p, 0) : cudaFree(p);
}
