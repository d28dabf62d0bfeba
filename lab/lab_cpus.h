/* lab_cpus: how many CPUs this process may use: its affinity mask and its cgroup's CPU quota, not the machine's
 * online count. */
#ifndef LAB_CPUS_H
#define LAB_CPUS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Why: a GPU host has 64 to 200 cores, but a job there runs under `taskset`, a batch scheduler's affinity mask or a
 * container's cgroup quota. A replay sized from the online count starts four times the workers it may run (seen:
 * 64 workers under `taskset -c 0-15`, each a CUDA client of one GPU).
 *
 * Contract: lab_cpus_usable() is the smallest of
 *   - the CPUs in this process's affinity mask (sched_getaffinity; the online count where that fails),
 *   - the cgroup CPU quota rounded up (cgroup v2 `cpu.max` "QUOTA PERIOD", v1 `cpu.cfs_quota_us` over
 *     `cpu.cfs_period_us`), the tightest of this process's cgroup and every cgroup above it; "max" or -1: none,
 *   - under Slurm, the CPUs it states for this task (lab_alloc.h: SLURM_CPUS_PER_TASK, or the node's allocation over
 *     the step's tasks on it), which it enforces only where configured to (task/affinity, cgroups),
 * and at least 1. LAB_CPUS overrides it (a positive integer: the count, used as it is); nothing is cached, so a
 * process that changes its mask sees the change. Never fails. */
int lab_cpus_usable(void);

/* The same rule on given inputs, for tests and stand-ins: affinity CPUs `affinity` (<= 0: unknown, the quota alone
 * decides, or 1), this process's cgroup listing as /proc/self/cgroup gives it (`proc_cgroup`, the file's text; NULL:
 * none) and the cgroup file system mounted at `cgroup_root` (e.g. "/sys/fs/cgroup"). */
int lab_cpus_usable_from(int affinity, const char *proc_cgroup, const char *cgroup_root);

/* Where the count came from, for progress lines and reports: "affinity 16 of 64 online", "cgroup CPU quota 8 (affinity
 * 64 of 64 online)", "Slurm's SLURM_CPUS_PER_TASK=1 (affinity 2 of 2 online)", "LAB_CPUS=4", at most len bytes into
 * buf. Returns the count. */
int lab_cpus_describe(char *buf, unsigned len);

#ifdef __cplusplus
}
#endif

#endif
