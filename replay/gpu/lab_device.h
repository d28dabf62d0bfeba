/* lab_device: the one probe of this machine (its CPUs, its GPUs and their UUIDs, whether CUDA can use them or why
 * not), shared by the scheduler, MPS, MPI and the report, and its description with the build's for report.json. */
#ifndef LAB_DEVICE_H
#define LAB_DEVICE_H

#include <cJSON.h>
#include <stddef.h>

#include "lab_err.h"
#include "lab_incident.h"
#include "lab_machine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Contract. Nothing here makes a CUDA context in the calling process (a context does not survive the fork of every
 * case): the GPU list comes from the driver's files or `nvidia-smi -L`, the CUDA check runs in a child. The costly
 * facts are probed once per process: the driver's GPU listing, and the CUDA check once for each CUDA_VISIBLE_DEVICES
 * value (an MPI rank narrows it to its share). The CPUs and CUDA_VISIBLE_DEVICES are read at every call: cheap, and
 * a process may change them. */

/* Fills *m with the machine as this process sees it now: CPUs from lab_cpus_describe (affinity, cgroup quota); GPUs
 * from CUDA_VISIBLE_DEVICES when set (an allocation made by a scheduler or by `--mpi`, "-1" or empty meaning none; an
 * index entry is the driver's k-th GPU in PCI order, a "GPU-" entry a UUID), else from the driver's
 * /proc/driver/nvidia/gpus listing (indices in PCI order), else, where the driver's device node /dev/nvidiactl exists
 * without that listing (some containers), from `nvidia-smi -L` (started from an argv, in PCI order). Each GPU named
 * and its UUID given where the listing has them. Never fails: no listing means no GPU. */
void lab_device_machine(lab_machine *m);

/* Whether a CUDA context can be made on this process's GPUs: LAB_OK, or LAB_ERR_DEVICE with why saying why not
 * ("this build has no CUDA" in a build without it; the probe's words where no device is usable). What `--backend
 * auto` and `--backend cuda` decide on. */
lab_status lab_device_usable(char *why, size_t len);

/* The CUDA_VISIBLE_DEVICES value of that probe's child, from this process's value vis (NULL: unset), into buf: device 0
 * alone, the only one the probe reads (the first entry of a list, "0" when unset). Making the driver set up every GPU
 * cost 1.34 s on a host of 4 H200s against 0.44 s for one; the other GPUs are checked by their MPS daemons' probes
 * (lab_mps_replay.h) or their workers' cases (a GPU that fails there is ERROR). 1 when buf is the value to set, 0 when
 * vis stays as it is (one entry, or "": no device). */
int lab_device_probe_visible(const char *vis, char *buf, size_t len);

/* What one GPU's probe child found (lab_device_gpu_first, lab_device_probe_one). */
typedef struct {
    int usable;              /* a CUDA context was made */
    char why[240];           /* when not: why (no device, the CUDA error, the probe's failure) */
    char name[128];          /* the device's name, e.g. "NVIDIA H100 80GB HBM3" */
    int cc;                  /* compute capability as 10 * major + minor (90 for 9.0); 0 unknown */
    int load_checked;        /* the kernels' load was checked (lab_cuda_modules_check) */
    int load_error;          /* its cudaError_t, 0 when every module loaded */
    long load_module;        /* the module that did not load (lab_cuda_module_at), -1 none */
    double load_s;           /* the loads' wall seconds (JIT compilation included) */
    int binary_version;      /* the first module's SASS and PTX architectures as loaded (lab_cuda_load) */
    int ptx_version;
} lab_device_gpu_facts;

/* The facts of the probe of this process's first GPU (the one lab_device_usable makes, made once per
 * CUDA_VISIBLE_DEVICES value). Tests stand in for the child with LAB_DEVICE_TEST_PROBE="<name>;<major>.<minor>;<CUDA
 * error of the load, 0 none>": a usable GPU of that name and capability, no CUDA call. Never fails: an unusable GPU
 * has usable 0 and why. */
void lab_device_gpu_first(lab_device_gpu_facts *f);

/* A probe child for one GPU, not cached: CUDA_VISIBLE_DEVICES=visible in the child (an entry of this process's list:
 * an index or a UUID), and with eager set every kernel loaded when the context is made (CUDA_MODULE_LOADING=EAGER:
 * where the driver JIT-compiles, all of the binary's PTX then, into the JIT cache of CUDA_CACHE_PATH). Fills *f; returns
 * the runner's status (LAB_ERR_IO when the child cannot be started, f->why saying so). */
lab_status lab_device_probe_one(const char *visible, int eager, lab_device_gpu_facts *f);

/* This machine as a JSON object: "backend", "host" (CPU model, logical CPUs, CPUs usable by this process as the
 * scheduler counts them, memory, kernel from /proc and uname; unknown facts are null) and, when backend is cuda,
 * "gpu": name, compute capability, multiprocessors, memory, driver and runtime versions from the CUDA check (device
 * 0). Without a usable GPU, "gpu" is {"available": false, "reason" (or "error"): "..."}. Returns NULL only when out of
 * memory. */
cJSON *lab_device_json(lab_backend backend);

/* The build as a JSON object: git commit (and "dirty" when the tree had changes), "sources_digest" (of kernels/ and
 * incidents/, what a report measures), C compiler and its version, CFLAGS, whether CUDA was compiled in, nvcc's version,
 * NVCCFLAGS and "cuda_arch", every GPU architecture the binary carries ("sm_90 compute_90"; from the header
 * mk/buildinfo.sh generates), and when the lab binary was linked (its mtime). NULL when out of memory. */
cJSON *lab_device_build_json(void);

/* In a process that has made no CUDA call yet: its context will have one hardware work queue
 * (CUDA_DEVICE_MAX_CONNECTIONS=1, the driver's default is 8), unless the environment already sets the count.
 * Why: the driver makes contexts one at a time across the whole host, and a replay makes one a worker (64 on a host of
 * 4 GPUs and 64 cores); with one queue a context is made in half the time: 64 of them on 4 x H200 under MPS, four at a
 * time, 20.6 s -> 9.0 s, 16 on one GPU 5.4 s -> 2.7 s (tools/measure/cuda_start_probe.sh, docs/performance.md). A case
 * issues its GPU work in order on one stream at a time, so one queue takes no concurrency from it; the work of the
 * workers on one GPU still runs side by side (each worker is a process of its own, an MPS client). Multi-GPU cases
 * (NCCL, their own streams) keep the default. */
void lab_device_one_queue(void);

#ifdef __cplusplus
}
#endif

#endif
