/* lab_alloc: what a batch scheduler allocated to this task, as Slurm says it in the environment it sets: the CPUs it
 * states for the task and the task's GPU list. The machine's own limits (affinity, cgroup quota) are lab_cpus.h's. */
#ifndef LAB_ALLOC_H
#define LAB_ALLOC_H

#ifdef __cplusplus
extern "C" {
#endif

/* Why: Slurm enforces an allocation only where it is configured to (task/affinity binds a task's CPUs, cgroups
 * constrain them); with TaskPlugin=task/none a 1-CPU job sees every CPU of the node, and a replay sized from what it
 * sees starts a worker per CPU of the node. And under srun with several tasks a node, each task's allocation is
 * already its own: a rank that divided it again among the ranks of its host would get a fraction of its share.
 *
 * Contract. Under Slurm (SLURM_JOB_ID set), for this process:
 *   - in a job step (SLURM_STEP_ID set: srun, or the ranks mpirun starts through an srun of its daemons), its task's
 *     CPUs: SLURM_CPUS_PER_TASK when set, else SLURM_CPUS_ON_NODE (the step's CPUs on this node) divided among the
 *     step's tasks on this node (SLURM_STEP_TASKS_PER_NODE at this node's index SLURM_NODEID: "2(x3),1" form), at
 *     least 1; `tasks` is that count of tasks (1 when it cannot be read);
 *   - outside a step (a batch script, an salloc shell: one process holds the node's allocation), SLURM_CPUS_ON_NODE,
 *     `tasks` 1;
 *   - its GPUs: when CUDA_VISIBLE_DEVICES is unset, the step's list SLURM_STEP_GPUS (outside a step SLURM_JOB_GPUS),
 *     entries as CUDA_VISIBLE_DEVICES takes them; gpus_per_task 1 when the GPUs CUDA_VISIBLE_DEVICES lists are this
 *     task's alone (SLURM_GPUS_PER_TASK set, or fewer GPUs in it than in SLURM_STEP_GPUS: Slurm bound them per task).
 * Outside Slurm everything is 0 or "". A value that is not a positive integer (or a list Slurm would write) is
 * ignored, never guessed from. Nothing is read but the environment; nothing fails. */

/* An environment to read: the value of name, or NULL when unset (getenv's contract). */
typedef const char *(*lab_alloc_getenv_fn)(void *ctx, const char *name);

typedef struct {
    int slurm;           /* under Slurm: SLURM_JOB_ID is set */
    int cpus;            /* the CPUs Slurm states for this task; 0: none */
    int tasks;           /* the processes on this node Slurm divided the node's allocation among (cpus is each one's):
                            the step's tasks here, 1 outside a step; 0 outside Slurm */
    char cpus_from[160]; /* where cpus came from: "SLURM_CPUS_PER_TASK=1", "SLURM_CPUS_ON_NODE=4 over 2 tasks of the
                            step on this node", "SLURM_CPUS_ON_NODE=2 (the job's, outside a step)"; "" */
    char gpus[256];      /* the task's GPUs when CUDA_VISIBLE_DEVICES is unset (SLURM_STEP_GPUS or SLURM_JOB_GPUS);
                            "" */
    char gpus_from[64];  /* the variable gpus came from; "" */
    int gpus_per_task;   /* 1: the GPUs this process lists are its task's alone (Slurm bound them per task) */
} lab_alloc;

/* Reads the allocation from the environment get gives (tests: a stand-in), as the contract says, into *a. */
void lab_alloc_read_from(lab_alloc_getenv_fn get, void *ctx, lab_alloc *a);

/* The same from this process's environment. */
void lab_alloc_read(lab_alloc *a);

#ifdef __cplusplus
}
#endif

#endif
