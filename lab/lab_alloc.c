/* lab_alloc: what Slurm allocated to this task, from the environment it sets (lab_alloc.h). */
#include "lab_alloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A positive integer (digits only, below 2^20), else 0. */
static int lab_alloc_count(const char *s)
{
    if (!s || !*s) return 0;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    return errno == 0 && *end == 0 && s[0] >= '0' && s[0] <= '9' && v > 0 && v < (1L << 20) ? (int)v : 0;
}

/* The tasks on node `node` of a "2(x3),1" list (Slurm's tasks-per-node form: counts, each repeated "(xN)" times), or 0
 * when the list does not say. */
static int lab_alloc_tasks_on(const char *spec, int node)
{
    if (!spec || node < 0) return 0;
    const char *p = spec;
    long at = 0;
    while (*p) {
        char *end;
        long n = strtol(p, &end, 10), rep = 1;
        if (end == p || n < 1) return 0;
        p = end;
        if (!strncmp(p, "(x", 2)) {
            rep = strtol(p + 2, &end, 10);
            if (end == p + 2 || rep < 1 || *end != ')') return 0;
            p = end + 1;
        }
        if (node < at + rep) return n < (1L << 20) ? (int)n : 0;
        at += rep;
        if (*p == ',') ++p;
        else if (*p) return 0;
    }
    return 0;
}

/* The entries of a GPU list ("0,1", "GPU-...,GPU-..."), up to CUDA's first invalid one ("-1" or empty). */
static int lab_alloc_list_len(const char *list)
{
    int n = 0;
    for (const char *p = list; p && *p;) {
        size_t k = strcspn(p, ",");
        if (k == 0 || (k == 2 && !strncmp(p, "-1", 2))) break;
        ++n;
        p += k + (p[k] == ',');
    }
    return n;
}

void lab_alloc_read_from(lab_alloc_getenv_fn get, void *ctx, lab_alloc *a)
{
    memset(a, 0, sizeof *a);
    const char *job = get(ctx, "SLURM_JOB_ID");
    if (!job || !*job) return;
    a->slurm = 1;
    int step = get(ctx, "SLURM_STEP_ID") != NULL;
    int on_node = lab_alloc_count(get(ctx, "SLURM_CPUS_ON_NODE"));
    int per_task = lab_alloc_count(get(ctx, "SLURM_CPUS_PER_TASK"));
    const char *nodeid = get(ctx, "SLURM_NODEID");
    int node = nodeid && *nodeid ? atoi(nodeid) : 0;
    int tasks = step ? lab_alloc_tasks_on(get(ctx, "SLURM_STEP_TASKS_PER_NODE"), node) : 1;
    a->tasks = tasks > 0 ? tasks : 1;
    if (step && per_task) {
        a->cpus = per_task;
        snprintf(a->cpus_from, sizeof a->cpus_from, "SLURM_CPUS_PER_TASK=%d", per_task);
    } else if (step && on_node) {
        a->cpus = on_node / a->tasks > 0 ? on_node / a->tasks : 1;
        snprintf(a->cpus_from, sizeof a->cpus_from, "SLURM_CPUS_ON_NODE=%d over %d task%s of the step on this node",
                 on_node, a->tasks, a->tasks == 1 ? "" : "s");
    } else if (on_node) {
        a->cpus = on_node;
        snprintf(a->cpus_from, sizeof a->cpus_from, "SLURM_CPUS_ON_NODE=%d (the job's, outside a step)", on_node);
    }
    const char *listed = get(ctx, step ? "SLURM_STEP_GPUS" : "SLURM_JOB_GPUS");
    const char *visible = get(ctx, "CUDA_VISIBLE_DEVICES");
    if (!visible && listed && lab_alloc_list_len(listed) > 0) {
        snprintf(a->gpus, sizeof a->gpus, "%s", listed);
        snprintf(a->gpus_from, sizeof a->gpus_from, "%s", step ? "SLURM_STEP_GPUS" : "SLURM_JOB_GPUS");
    }
    a->gpus_per_task = step && ((get(ctx, "SLURM_GPUS_PER_TASK") && *get(ctx, "SLURM_GPUS_PER_TASK")) ||
                                (visible && listed && lab_alloc_list_len(visible) < lab_alloc_list_len(listed)));
}

static const char *lab_alloc_getenv(void *ctx, const char *name)
{
    (void)ctx;
    return getenv(name);
}

void lab_alloc_read(lab_alloc *a) { lab_alloc_read_from(lab_alloc_getenv, NULL, a); }
