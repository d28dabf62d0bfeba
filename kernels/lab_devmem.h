/* lab_devmem: a case's device memory, from a pool its worker process keeps between cases. */
#ifndef LAB_DEVMEM_H
#define LAB_DEVMEM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Why: cudaMalloc and cudaFree go through the driver's resource manager, which serialises them across every process
 * and GPU of the host. Alone, a pair costs about 0.1 ms; with 64 worker processes on four H200s starting at once it
 * cost 35 ms (replay/cuda_start_probe.sh, reports/multi-gpu-h200x4), and a case makes 4 to 16 of them, so the
 * replay's workers waited on each other whatever GPU they used. Memory taken from the device's stream-ordered pool
 * (cudaMallocAsync) with a release threshold stays with the process when freed and is handed out again without a
 * driver call.
 *
 * Contract: lab_devmem_alloc(&p, bytes) gives device memory on the current device, ordered on the calling thread's
 * default stream (lab_cuda_sync's: the legacy one in the lab's build, so after all earlier work of the process's
 * blocking streams); lab_devmem_free(p) gives it back in the same order, after the work issued before it, without
 * waiting for that work (cudaFree waits for the whole device). Memory of lab_devmem_alloc goes back through
 * lab_devmem_free only, and nothing else goes there; NULL is ignored. Up to LAB_DEVMEM_KEEP_MB MiB (default 512; a
 * value that is not a number is named on stderr and the default kept) of freed memory stays with the process between
 * synchronisations; beyond, the pool returns memory to the driver as it did. The first call sets the threshold on the
 * device's default pool, so the lab's other stream-ordered allocations (cudaMallocAsync on a stream of their own) are
 * kept the same way.
 *
 * lab_devmem_exact() (for compute-sanitizer's runs: `lab case --sanitizer`), or LAB_DEVMEM=exact in the environment,
 * makes every later call a plain cudaMalloc / cudaFree: each buffer an allocation of its exact size, so a memory
 * checker sees a stray access leave it. Only call it before the process's first lab_devmem_alloc. */
void lab_devmem_exact(void);

#ifdef __cplusplus
}
#endif

#ifdef __CUDACC__
#include <cuda_runtime.h>
/* Decides the mode (once a process) and sets the current device's pool threshold (once a device). lab_cuda_ready calls
 * it when it has made the context, so the pool keeps memory from a worker's first case on; lab_devmem_alloc calls it
 * too. */
cudaError_t lab_devmem_init(void);
cudaError_t lab_devmem_alloc(void **p, size_t bytes);
cudaError_t lab_devmem_free(void *p);
#endif

#endif
