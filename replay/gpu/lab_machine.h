/* lab_machine: the machine model, what this host offers a replay (its usable CPUs, its GPUs, their names and UUIDs), as
 * the one machine probe (lab_device_machine, lab_device.h) fills it. Data only; the scheduler (lab_sched.h) plans on it. */
#ifndef LAB_MACHINE_H
#define LAB_MACHINE_H

#ifdef __cplusplus
extern "C" {
#endif

#define LAB_MACHINE_MAX_GPUS 64

/* What this host offers the replay, as the machine probe (lab_device_machine) fills it: no CUDA call (the runner
 * never holds a context: a context does not survive fork). */
typedef struct {
    int ncpu;                                 /* CPUs this process may use (lab_cpus_usable: affinity, cgroup
                                                 quota), never the online count */
    char cpu_source[256];                     /* where ncpu came from (lab_cpus_describe), for messages */
    int cpu_tasks;                            /* the processes on this host a batch scheduler already divided the host's
                                                 CPUs among, ncpu being each one's (Slurm's tasks of the step here,
                                                 lab_alloc.h); 1: ncpu is the host's share for this whole process */
    int gpu_tasks;                            /* likewise for the GPU list: >1 when Slurm bound GPUs per task */
    int ngpu;                                 /* GPUs visible to this process */
    char gpu[LAB_MACHINE_MAX_GPUS][32];         /* the CUDA_VISIBLE_DEVICES entry of each */
    char source[96];                          /* where the GPU list came from, for messages */
    char what[LAB_MACHINE_MAX_GPUS][128];       /* how the driver names each GPU (its model and PCI bus, or the
                                                 line of `nvidia-smi -L`); "" when unknown (an entry of
                                                 CUDA_VISIBLE_DEVICES) */
    char uuid[LAB_MACHINE_MAX_GPUS][64];        /* each GPU's UUID ("GPU-..."), from the driver's listing, nvidia-smi
                                                 -L or the CUDA_VISIBLE_DEVICES entry itself; "" when unknown */
} lab_machine;

#ifdef __cplusplus
}
#endif

#endif
