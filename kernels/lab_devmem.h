/* lab_devmem: a case's device memory, from a pool its worker process keeps between cases. */
#ifndef LAB_DEVMEM_H
#define LAB_DEVMEM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Why: cudaMalloc and cudaFree go through the driver's resource manager, which serialises them across every process
 * and GPU of the host. Alone, a pair costs about 0.1 ms; with 64 worker processes on four H200s starting at once it
 * cost 35 ms (tools/measure/cuda_start_probe.sh, docs/performance.md), and a case makes 4 to 16 of them, so the
 * replay's workers waited on each other whatever GPU they used. Memory taken from the device's stream-ordered pool
 * (cudaMallocAsync) with a release threshold stays with the process when freed and is handed out again without a
 * driver call.
 *
 * Contract: the memory comes from a pool of the calling thread's own on the current device (made on its first use,
 * destroyed when the thread ends), so that the threads of one process never take each other's freed blocks. A block
 * one thread freed on its stream and another took on its own would make the second wait for the first's work (the
 * pool's internal dependencies), and 0003's stale layout block would be another case's. lab_devmem_alloc(&p, bytes)
 * gives device memory ordered on the calling thread's default stream (lab_cuda_sync's: the legacy one in the lab's
 * build, so after all earlier work of the process's blocking streams); lab_devmem_alloc_async(&p, bytes, s) the same
 * on stream s, for a run that keeps its work on a stream of its own. lab_devmem_free(p) gives memory of
 * lab_devmem_alloc back in the same order, after the work issued before it, without waiting for that work (cudaFree
 * waits for the whole device); memory of lab_devmem_alloc_async goes back with cudaFreeAsync on its stream
 * (lab_cuda_stream_release). NULL is ignored. Up to LAB_DEVMEM_KEEP_MB MiB (default 512; a value that is not a
 * number is named on stderr and the default kept) of freed memory stays with each pool between synchronisations;
 * beyond, the pool returns memory to the driver.
 *
 * lab_devmem_exact() (for compute-sanitizer's runs: `lab case --sanitize`), or LAB_DEVMEM=exact in the environment,
 * makes every later lab_devmem_alloc / lab_devmem_free a plain cudaMalloc / cudaFree: each buffer an allocation of
 * its exact size, so a memory checker sees a stray access leave it. Only call it before the process's first
 * lab_devmem_alloc. lab_devmem_alloc_async stays on the pool: 0003's stale block needs one. */
void lab_devmem_exact(void);

#ifdef __cplusplus
}
#endif

#ifdef __CUDACC__
#include <cuda_runtime.h>
/* Decides the mode (once a process) and makes the calling thread's pool on the current device (once a thread and
 * device). lab_cuda_ready calls it when it has made the context, so the pool keeps memory from a worker's first case
 * on; lab_devmem_alloc calls it too. */
cudaError_t lab_devmem_init(void);
cudaError_t lab_devmem_alloc(void **p, size_t bytes);
cudaError_t lab_devmem_alloc_async(void **p, size_t bytes, cudaStream_t s);
cudaError_t lab_devmem_free(void *p);
#endif

#endif
