/* test_alloc: the replay's size follows the allocation Slurm states (lab/lab_alloc.c), read from stand-in environments:
 * the task's CPUs in a job step (SLURM_CPUS_PER_TASK, else the step's CPUs on the node over its tasks there) and
 * outside one, its GPU list and whether Slurm bound GPUs per task; the smaller of that and the affinity mask is the
 * count (lab_cpus), a share Slurm already split among a host's ranks is not split again (lab_sched_host_share), and
 * `lab replay` says and records where its worker count came from (summary.json "workers"; `lab report`'s report.json
 * too), under taskset too. */
#define _GNU_SOURCE
#include <cJSON.h>
#include <criterion/criterion.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab_alloc.h"
#include "lab_cpus.h"
#include "lab_sched.h"
#include "tests/lab_test_sh.h"

/* A stand-in environment: "NAME=VALUE" entries, NULL-terminated. */
static const char *stand_in(void *ctx, const char *name)
{
    size_t n = strlen(name);
    for (const char *const *e = ctx; *e; ++e)
        if (!strncmp(*e, name, n) && (*e)[n] == '=') return *e + n + 1;
    return NULL;
}

static lab_alloc read_env(const char *const *env)
{
    lab_alloc a;
    lab_alloc_read_from(stand_in, (void *)env, &a);
    return a;
}

Test(alloc, outside_slurm_nothing_is_stated)
{
    const char *env[] = {"SLURM_CPUS_ON_NODE=4", "CUDA_VISIBLE_DEVICES=0", NULL};
    lab_alloc a = read_env(env);
    cr_expect(!a.slurm && a.cpus == 0 && a.tasks == 0 && !a.cpus_from[0] && !a.gpus[0], "no SLURM_JOB_ID: nothing");
}

/* In a job step: SLURM_CPUS_PER_TASK when given, else the step's CPUs on this node over its tasks here (this node's
 * entry of "2(x3),1"); never below 1. */
Test(alloc, a_step_task_gets_its_own_cpus)
{
    const char *per_task[] = {"SLURM_JOB_ID=7", "SLURM_STEP_ID=0", "SLURM_CPUS_PER_TASK=3", "SLURM_CPUS_ON_NODE=12",
                              "SLURM_STEP_TASKS_PER_NODE=4", "SLURM_NODEID=0", NULL};
    lab_alloc a = read_env(per_task);
    cr_expect(a.slurm && a.cpus == 3 && a.tasks == 4, "cpus %d tasks %d", a.cpus, a.tasks);
    cr_expect_str_eq(a.cpus_from, "SLURM_CPUS_PER_TASK=3");
    const char *split[] = {"SLURM_JOB_ID=7",        "SLURM_STEP_ID=1",
                           "SLURM_CPUS_ON_NODE=16", "SLURM_STEP_TASKS_PER_NODE=4(x2),1",
                           "SLURM_NODEID=2",        NULL};
    a = read_env(split);
    cr_expect(a.cpus == 16 && a.tasks == 1, "node 2 runs one task: cpus %d tasks %d", a.cpus, a.tasks);
    const char *node1[] = {"SLURM_JOB_ID=7",        "SLURM_STEP_ID=1",
                           "SLURM_CPUS_ON_NODE=16", "SLURM_STEP_TASKS_PER_NODE=4(x2),1",
                           "SLURM_NODEID=1",        NULL};
    a = read_env(node1);
    cr_expect(a.cpus == 4 && a.tasks == 4, "node 1 runs four: cpus %d tasks %d", a.cpus, a.tasks);
    cr_expect(strstr(a.cpus_from, "SLURM_CPUS_ON_NODE=16 over 4 tasks") != NULL, "%s", a.cpus_from);
    const char *few[] = {"SLURM_JOB_ID=7", "SLURM_STEP_ID=0", "SLURM_CPUS_ON_NODE=2", "SLURM_STEP_TASKS_PER_NODE=4",
                         "SLURM_NODEID=0", NULL};
    cr_expect_eq(read_env(few).cpus, 1, "more tasks than CPUs: 1 each");
    const char *bad[] = {"SLURM_JOB_ID=7", "SLURM_STEP_ID=0", "SLURM_CPUS_PER_TASK=two", "SLURM_CPUS_ON_NODE=-4",
                         "SLURM_STEP_TASKS_PER_NODE=x", NULL};
    a = read_env(bad);
    cr_expect(a.slurm && a.cpus == 0 && a.tasks == 1, "what is not a count is ignored: cpus %d tasks %d", a.cpus,
              a.tasks);
}

/* Outside a step (a batch script, an salloc shell) the process holds the node's allocation, whatever the tasks the
 * job asked for. */
Test(alloc, a_batch_script_holds_the_nodes_allocation)
{
    const char *env[] = {"SLURM_JOB_ID=7", "SLURM_CPUS_ON_NODE=2", "SLURM_CPUS_PER_TASK=1", "SLURM_TASKS_PER_NODE=2",
                         NULL};
    lab_alloc a = read_env(env);
    cr_expect(a.cpus == 2 && a.tasks == 1, "cpus %d tasks %d", a.cpus, a.tasks);
    cr_expect(strstr(a.cpus_from, "outside a step") != NULL, "%s", a.cpus_from);
}

/* The GPU list: CUDA_VISIBLE_DEVICES as Slurm set it stays the probe's; without it, SLURM_STEP_GPUS (SLURM_JOB_GPUS
 * outside a step); bound per task when SLURM_GPUS_PER_TASK is given or the task sees fewer than the step holds. */
Test(alloc, the_tasks_gpu_list)
{
    const char *step[] = {"SLURM_JOB_ID=7", "SLURM_STEP_ID=0", "SLURM_STEP_GPUS=4,5", NULL};
    lab_alloc a = read_env(step);
    cr_expect_str_eq(a.gpus, "4,5");
    cr_expect_str_eq(a.gpus_from, "SLURM_STEP_GPUS");
    cr_expect_eq(a.gpus_per_task, 0);
    const char *job[] = {"SLURM_JOB_ID=7", "SLURM_JOB_GPUS=0,1,2,3", NULL};
    cr_expect_str_eq(read_env(job).gpus, "0,1,2,3");
    const char *set[] = {"SLURM_JOB_ID=7", "SLURM_STEP_ID=0", "SLURM_STEP_GPUS=0,1,2,3", "CUDA_VISIBLE_DEVICES=0,1,2,3",
                         "SLURM_STEP_TASKS_PER_NODE=2", NULL};
    a = read_env(set);
    cr_expect(!a.gpus[0] && !a.gpus_per_task, "the node's list in every task: the ranks split it");
    const char *bound[] = {"SLURM_JOB_ID=7", "SLURM_STEP_ID=0", "SLURM_STEP_GPUS=0,1,2,3", "CUDA_VISIBLE_DEVICES=2,3",
                           "SLURM_STEP_TASKS_PER_NODE=2", NULL};
    cr_expect_eq(read_env(bound).gpus_per_task, 1, "two of the step's four: bound per task");
    const char *per[] = {"SLURM_JOB_ID=7", "SLURM_STEP_ID=0", "SLURM_GPUS_PER_TASK=1", "CUDA_VISIBLE_DEVICES=0",
                         "SLURM_STEP_TASKS_PER_NODE=2", NULL};
    cr_expect_eq(read_env(per).gpus_per_task, 1);
}

/* A machine as the probe fills it. */
static lab_machine host(int ncpu, int ngpu, int cpu_tasks, int gpu_tasks)
{
    lab_machine m;
    memset(&m, 0, sizeof m);
    m.ncpu = ncpu;
    snprintf(m.cpu_source, sizeof m.cpu_source, "stand-in");
    m.ngpu = ngpu;
    for (int k = 0; k < ngpu; ++k) snprintf(m.gpu[k], sizeof m.gpu[k], "%d", k);
    m.cpu_tasks = cpu_tasks;
    m.gpu_tasks = gpu_tasks;
    return m;
}

/* Under srun with two tasks a node, each rank's CPUs and GPUs are already its own: not split again; started by one
 * task (mpirun's daemon, or outside a step) the ranks split the host as before. */
Test(alloc, a_share_slurm_split_is_not_split_again)
{
    lab_machine m = host(8, 2, 2, 2);
    cr_expect_eq(lab_sched_host_share(&m, 1, 2), 0);
    cr_expect(m.ncpu == 8 && m.ngpu == 2, "srun's task keeps its 8 CPUs and 2 GPUs: %d, %d", m.ncpu, m.ngpu);
    cr_expect(strstr(m.cpu_source, "this rank's own") != NULL, "%s", m.cpu_source);
    m = host(8, 4, 2, 1);
    cr_expect_eq(lab_sched_host_share(&m, 1, 2), 2, "CPUs per task, the node's GPU list: the GPUs split");
    cr_expect(m.ncpu == 8 && m.ngpu == 2, "%d CPUs, %d GPUs", m.ncpu, m.ngpu);
    m = host(8, 4, 1, 1);
    cr_expect_eq(lab_sched_host_share(&m, 1, 2), 2);
    cr_expect(m.ncpu == 4 && m.ngpu == 2 && strstr(m.cpu_source, "shared by 2 local ranks"), "%s", m.cpu_source);
    m = host(8, 0, 3, 1);
    lab_sched_host_share(&m, 0, 2);
    cr_expect_eq(m.ncpu, 4, "tasks that do not match the ranks divide nothing away: split as the host's");
}

/* The live count: Slurm's 1 CPU for the task binds where the affinity mask is wider (task/none), the narrower mask
 * where Slurm states more; said in the description. */
Test(alloc, the_count_is_the_smaller_of_slurm_and_the_mask)
{
    unsetenv("LAB_CPUS");
    setenv("SLURM_JOB_ID", "7", 1);
    setenv("SLURM_STEP_ID", "0", 1);
    setenv("SLURM_CPUS_PER_TASK", "1", 1);
    char d[256];
    cr_expect_eq(lab_cpus_describe(d, sizeof d), 1);
    cr_expect(strstr(d, "Slurm's SLURM_CPUS_PER_TASK=1 (affinity ") == d, "%s", d);
    setenv("SLURM_CPUS_PER_TASK", "512", 1);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(0, &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0) _exit(3);
        int n = lab_cpus_describe(d, sizeof d);
        _exit(n == 1 && strstr(d, "affinity 1 of ") == d && strstr(d, "(Slurm's SLURM_CPUS_PER_TASK=512)") ? 0 : 1);
    }
    int ws;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    cr_expect(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "the mask of one CPU is the count, Slurm's 512 said beside it");
    unsetenv("SLURM_JOB_ID"), unsetenv("SLURM_STEP_ID"), unsetenv("SLURM_CPUS_PER_TASK");
}

/* `lab replay` in a 1-CPU Slurm task without cgroups or binding (task/none: every CPU in the mask): 1 worker, said on
 * the scheduler line and in summary.json's "workers"; under `taskset -c 0` without Slurm, 1 worker from the mask. */
Test(alloc, a_replay_says_where_its_workers_came_from, .timeout = 120)
{
    char dir[64], args[256], *out;
    lab_test_tmpdir(dir, sizeof dir, "alloc");
    snprintf(args, sizeof args, "replay --incident 0004 --seeds 2 --backend cpu --no-plots --out %s/o", dir);
    cr_assert_eq(lab_test_lab("env SLURM_JOB_ID=7 SLURM_STEP_ID=0 SLURM_CPUS_PER_TASK=1 SLURM_CPUS_ON_NODE=1 "
                              "SLURM_STEP_TASKS_PER_NODE=1 SLURM_NODEID=0", args, &out), 0, "%s", out);
    cr_expect(strstr(out, "scheduler: 1 workers (default: one a CPU; 1 CPUs: Slurm's SLURM_CPUS_PER_TASK=1") != NULL,
              "%s", out);
    free(out);
    char *sum = lab_test_slurp(dir, "o/summary.json");
    cJSON *s = cJSON_Parse(sum), *w = cJSON_GetObjectItem(s, "workers");
    cr_expect(cJSON_GetObjectItem(w, "count") && cJSON_GetObjectItem(w, "count")->valueint == 1, "%s", sum);
    const cJSON *from = cJSON_GetObjectItem(w, "cpus_from");
    cr_expect(cJSON_IsString(from) && strstr(from->valuestring, "SLURM_CPUS_PER_TASK=1"), "%s", sum);
    cJSON_Delete(s);
    free(sum);
    /* lab report records it too: report.json's summary (workers) and its host (usable_cpus_from) */
    snprintf(args, sizeof args, "report --incident 0004 --seeds 2 --backend cpu --no-bench --out %s/r", dir);
    cr_assert_eq(lab_test_lab("env SLURM_JOB_ID=7 SLURM_STEP_ID=0 SLURM_CPUS_PER_TASK=1 SLURM_CPUS_ON_NODE=1 "
                              "SLURM_STEP_TASKS_PER_NODE=1 SLURM_NODEID=0", args, &out), 0, "%s", out);
    free(out);
    char *rep = lab_test_slurp(dir, "r/report.json");
    cJSON *r = cJSON_Parse(rep);
    const cJSON *rw = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "summary"), "workers");
    const cJSON *host = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "device"), "host");
    const cJSON *ufrom = cJSON_GetObjectItem(host, "usable_cpus_from");
    cr_expect(cJSON_GetObjectItem(rw, "count") && cJSON_GetObjectItem(rw, "count")->valueint == 1, "%.400s", rep);
    cr_expect(cJSON_IsString(ufrom) && strstr(ufrom->valuestring, "SLURM_CPUS_PER_TASK=1"), "%.400s", rep);
    cJSON_Delete(r);
    free(rep);
    if (system("command -v taskset >/dev/null 2>&1") == 0) {
        cr_assert_eq(lab_test_lab("env -u SLURM_JOB_ID taskset -c 0", args, &out), 0, "%s", out);
        cr_expect(strstr(out, "scheduler: 1 workers (default: one a CPU; 1 CPUs: affinity 1 of ") != NULL, "%s", out);
        free(out);
    }
    lab_test_rmtree(dir);
}
