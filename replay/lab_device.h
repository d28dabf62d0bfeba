/* lab_device: describes the machine a report ran on (CPU, memory, kernel, the GPU through a child process)
 * and the build (commit, compilers, flags), as JSON for report.json. */
#ifndef LAB_DEVICE_H
#define LAB_DEVICE_H

#include <cJSON.h>

#include "lab_incident.h"

#ifdef __cplusplus
extern "C" {
#endif

/* This machine as a JSON object: "backend", "host" (CPU model, logical CPUs, CPUs usable by this process,
 * memory, kernel from /proc and uname; unknown facts are null) and, when backend is cuda, "gpu": name,
 * compute capability, multiprocessors, memory, driver and runtime versions through lab_cuda_device_info. The
 * GPU is queried in a child process under a 60 s watchdog, so the caller never holds a CUDA context (children
 * it forks later can still use the GPU). Without a usable GPU, "gpu" is {"available": false, "reason":
 * "..."}. Returns NULL only when out of memory. */
cJSON *lab_device_json(lab_backend backend);

/* The build as a JSON object: git commit (and "dirty" when the tree had changes), C compiler and its
 * version, CFLAGS, whether CUDA was compiled in, nvcc's version, NVCCFLAGS and CUDA_ARCH (from the header
 * mk/buildinfo.sh generates), and when the lab binary was linked (its mtime). NULL when out of memory. */
cJSON *lab_device_build_json(void);

#ifdef __cplusplus
}
#endif

#endif
