/* lab_mps: a private CUDA Multi-Process Service for one CUDA replay, so that the workers' kernels share the GPU's SMs instead of taking turns. */
#ifndef LAB_MPS_H
#define LAB_MPS_H

#include <stddef.h>

#include "lab_err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Why: a CUDA replay runs one worker process per core, each with its own context on the same GPU. Without MPS the GPU
 * time-slices between contexts, one context's kernels at a time, so a worker's small launches (a float64 reference of
 * two sequences, a GEMM of 128 x 64) hold the whole GPU for their slice while its SMs idle; with the references on the
 * device a 1000-seed replay on an H100 took 93 s so, and 56 s under MPS, where kernels of different workers run side
 * by side (docs/performance.md).
 *
 * Contract: lab_mps_start starts `nvidia-cuda-mps-control -d` (found on PATH, run without a shell) with its pipe and
 * log directories in a fresh private folder under TMPDIR (or /tmp), and points this process's environment at them
 * (CUDA_MPS_PIPE_DIRECTORY, CUDA_MPS_LOG_DIRECTORY), so every worker started afterwards is an MPS client of this
 * daemon and of no other; nothing outside the folder is touched, and another MPS on the machine is left alone. It
 * does not check that clients can connect: the caller probes the device afterwards (a context made through the
 * daemon) and calls lab_mps_stop if that fails. LAB_ERR_UNSUPPORTED (why says why: no nvidia-cuda-mps-control, or
 * CUDA_MPS_PIPE_DIRECTORY already set, i.e. the user runs an MPS of their own, which is then used as it is) leaves
 * nothing started and the environment as it was; LAB_ERR_IO when the folder or the daemon cannot be made.
 *
 * lab_mps_stop asks the daemon to quit (`quit` on its control pipe; it stops its server once the clients are gone),
 * waits for it (at most 5 s for the control program, killed past that, and 5 s reading the daemon's log for its
 * exit; the daemons of lab_mps_start_per_gpu are asked all at once and waited for together), removes the folder and
 * restores the environment: a daemon that does not answer never hangs the replay. Safe on a stopped or never started
 * *m. A replay stopped by SIGINT or SIGTERM stops its daemon; one killed outright (SIGKILL) leaves it running with its
 * folder: `echo quit | CUDA_MPS_PIPE_DIRECTORY=DIR/pipe nvidia-cuda-mps-control`
 * ends it.
 *
 * What MPS changes for isolation: each worker keeps its own address space (Volta and later), so a stray access stays
 * a fault of its own context; but a fatal device fault in one client is reported to every client of the GPU, and the
 * server takes no new client until they have all exited. The lab's memory-bug variants are contained by construction
 * (their strays land in guard zones they allocated, lab_case_result.memory_contained), so a replay has no device
 * fault to share; one that does happen shows as ERROR in the cases running beside it, and `--no-mps` replays them
 * with the contexts time-sliced again. compute-sanitizer does not run MPS clients: `--sanitize` replays without it.
 *
 * The share of a GPU a client may use: every client of the lab's daemons (the daemons themselves, the probe, the
 * workers) runs with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE = LAB_MPS_SM_PERCENT, or the value the environment already
 * holds (100 gives a client the whole GPU again). Why: a client may otherwise fill every SM with one long kernel (0001's
 * contention run, 0002's atomics, 0003's GEMMs) while the 15 to 31 other workers of its GPU wait with small launches.
 * Half the SMs measured fastest (docs/performance.md): 1000 seeds of the one-GPU incidents 13% faster on one GPU and
 * 9-14% on two than with whole GPUs, within the rounds' spread on four; a quarter was no faster and an eighth slower;
 * every outcome the same case by case. The user's own MPS is left as it is, this variable included. */
#define LAB_MPS_MAX_GPUS 64
#define LAB_MPS_SM_PERCENT "50"

typedef struct {
    int running;
    char dir[256];      /* the private folder: dir/pipe, dir/log (one daemon for every GPU) */
    int ngpu;           /* lab_mps_start_per_gpu: daemons, one a GPU (0: the one daemon of dir) */
    char gpu_dir[LAB_MPS_MAX_GPUS][256];  /* daemon k's folder */
    char gpu_uuid[LAB_MPS_MAX_GPUS][64];  /* the GPU daemon k serves, by UUID */
    int sm_share_set;   /* lab_mps_start put the share in this process's environment (removed at the stop) */
} lab_mps;

/* The share in per cent of a GPU's SMs each client of the lab's daemons may use: the environment's
 * CUDA_MPS_ACTIVE_THREAD_PERCENTAGE where set and not empty, else LAB_MPS_SM_PERCENT. */
const char *lab_mps_sm_share(void);

lab_status lab_mps_start(lab_mps *m, char *why, size_t len);

/* One daemon per GPU, all started at once: daemon k is started with CUDA_VISIBLE_DEVICES=uuids[k] (a UUID: the MPS
 * server remaps indices, UUIDs it does not), in a private folder of its own; this process's environment is left as it is, and a
 * worker picks its GPU's daemon with lab_mps_client. Why one a GPU: one daemon's server serves every GPU it sees,
 * and a 1000-seed replay on four H200s was no faster than on one through one daemon (40.7 s on one GPU, 31.8 s on
 * two, 37.9 s on four, every case about four times slower on four GPUs: docs/performance.md); and a fault or a
 * server that stops serving then holds up the clients of that GPU only. Errors as lab_mps_start; on an error every
 * daemon started is stopped. */
lab_status lab_mps_start_per_gpu(lab_mps *m, const char *const *uuids, int n, char *why, size_t len);

/* In a worker: makes this process a client of the daemon of GPU k (CUDA_MPS_PIPE_DIRECTORY, CUDA_MPS_LOG_DIRECTORY,
 * and CUDA_VISIBLE_DEVICES = that GPU's UUID), or of none (k < 0: both MPS variables unset, so its contexts are
 * plain ones), with the share of lab_mps_sm_share. Does nothing for a single daemon (its variables are already in the
 * environment) or none. */
void lab_mps_client(const lab_mps *m, int k);

void lab_mps_stop(lab_mps *m);
/* The caller's probe made a context through the daemon of *m: from now on lab_mps_served() is 1 for this process (the
 * report written after the replay, when the daemon is gone, says the replay ran under MPS). */
void lab_mps_confirm(const lab_mps *m);
/* 1 when this process's workers are or were MPS clients: a daemon of lab_mps_confirm, or the user's own
 * (CUDA_MPS_PIPE_DIRECTORY set). */
int lab_mps_served(void);

#ifdef __cplusplus
}
#endif

#endif
