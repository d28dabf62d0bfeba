/* lab_sched: the scheduler's model of the machine (cores, GPUs) and of what an incident's cases need, and the plan that fills them. */
#ifndef LAB_SCHED_H
#define LAB_SCHED_H

#include <stddef.h>

#include "lab_incident.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LAB_SCHED_MAX_GPUS 64

/* What this host offers the replay. Probed without any CUDA call (the runner never holds a context: a
 * context does not survive fork). */
typedef struct {
    int ncpu;                                 /* online CPUs */
    int ngpu;                                 /* GPUs visible to this process */
    char gpu[LAB_SCHED_MAX_GPUS][32];         /* the CUDA_VISIBLE_DEVICES entry of each */
    char source[96];                          /* where the GPU list came from, for messages */
    char what[LAB_SCHED_MAX_GPUS][128];       /* how the driver names each GPU (its model and PCI bus, or the
                                                 line of `nvidia-smi -L`); "" when unknown (an entry of
                                                 CUDA_VISIBLE_DEVICES) */
} lab_sched_machine;

/* Fills *m: CPUs from sysconf; GPUs from CUDA_VISIBLE_DEVICES when set (an allocation made by a
 * scheduler or by `--mpi`, "-1" or empty meaning none), else from the driver's /proc/driver/nvidia/gpus
 * listing (indices in PCI order), else, where the driver's device node /dev/nvidiactl exists without that
 * listing (some containers), from `nvidia-smi -L` (started from an argv, in PCI order). No CUDA call either
 * way. Never fails: no listing means no GPU. */
void lab_sched_probe(lab_sched_machine *m);

/* How one incident's cases run. Cases come in groups (one seed, every selected variant), run in this
 * order by one worker so the seed's inputs and reference are made once. */
typedef struct {
    int workers;                              /* worker processes at once */
    size_t batch;                             /* cases a worker runs (a multiple of the group size) */
    int gpus_per_worker;                      /* GPUs a worker is given (0: none bound, the CPU backend) */
    int exclusive;                            /* the worker's GPUs are its alone (multi-GPU cases) */
    int gpus_missing;                         /* the cases need more GPUs than the host has: they SKIP */
    char why[160];                            /* one line: the plan and its reason */
} lab_sched_plan;

/* Plans n_groups groups of group_size cases of incident inc on backend b, with at most jobs_cap workers
 * (<= 0: no cap beyond the machine). CPU: one worker per core, one group per worker run. CUDA: every
 * worker holds one context; single-GPU cases share the GPUs (worker k on GPU k mod ngpu), each worker one
 * equal share of the groups (one context start per worker and incident); a case that needs N > 1 GPUs gets N GPUs alone, floor(ngpu / N) workers.
 * Memory-bug variants are handled by the runner (their worker retires after them unless the case reports
 * its strays contained), not here. */
lab_sched_plan lab_sched_plan_incident(const lab_sched_machine *m, const lab_incident *inc, lab_backend b,
                                       size_t n_groups, size_t group_size, int jobs_cap);

/* In a worker process, before any CUDA call: makes the worker's GPUs the only visible ones
 * (CUDA_VISIBLE_DEVICES), worker `slot` of the plan (lab_isolate_worker_slot()). Does nothing on the CPU
 * backend or when the plan binds no GPU. */
void lab_sched_bind(const lab_sched_machine *m, const lab_sched_plan *p, int slot);

#ifdef __cplusplus
}
#endif

#endif
