/* lab_sched: the scheduler's model of the machine (cores, GPUs) and of what an incident's cases need, and the plan that fills them. */
#include "lab_sched.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab_device.h"
#include "lab_isolate.h"

/* GPUs one CUDA case of the incident needs: the largest of its variants' (0 counts as 1). */
/* Seed groups per worker when n_groups are shared equally among workers (at least 1). */
static size_t lab_sched_share(size_t n_groups, int workers)
{
    size_t w = workers > 0 ? (size_t)workers : 1, g = (n_groups + w - 1) / w;
    return g ? g : 1;
}

static int lab_sched_gpus_needed(const lab_incident *inc)
{
    int need = 1;
    for (int v = 0; v < inc->n_variants; ++v)
        if (inc->variants[v].gpus > need) need = inc->variants[v].gpus;
    return need;
}

lab_sched_plan lab_sched_plan_incident(const lab_machine *m, const lab_incident *inc, lab_backend b,
                                       size_t n_groups, size_t group_size, int jobs_cap)
{
    lab_sched_plan p;
    memset(&p, 0, sizeof p);
    if (group_size < 1) group_size = 1;
    int cap = lab_sched_workers(m, b, jobs_cap, NULL, 0);
    /* Incidents whose workers start a long-lived job: an equal share of the groups per worker. */
    int share = inc->worker_setup_s > 0;
    if (b != LAB_BACKEND_CUDA) {
        p.workers = cap;
        if (share && (size_t)p.workers > n_groups && n_groups > 0) p.workers = (int)n_groups;
        p.batch = share ? lab_sched_share(n_groups, p.workers) * group_size : group_size;
        snprintf(p.why, sizeof p.why, "cpu: %d workers, %zu cases per worker run%s", p.workers, p.batch,
                 share ? " (one long-lived job each)" : "");
        return p;
    }
    int need = lab_sched_gpus_needed(inc);
    if (m->ngpu > 0 && need > m->ngpu) {
        /* Nothing runs: the runner gives every case SKIP needs-gpus with the count, without a worker. */
        p.gpus_missing = 1;
        p.workers = 1;
        p.batch = group_size;
        snprintf(p.why, sizeof p.why, "cuda: cases need %d GPUs, %d visible (%s)", need, m->ngpu, m->source);
        return p;
    }
    if (need > 1) {
        if (inc->gpus_all && m->ngpu > need) need = m->ngpu;
        p.workers = m->ngpu / need;
        if (p.workers > cap) p.workers = cap;
        if (p.workers < 1) p.workers = 1;
        p.batch = share ? lab_sched_share(n_groups, p.workers) * group_size : group_size;
        p.gpus_per_worker = need;
        p.exclusive = 1;
        snprintf(p.why, sizeof p.why, "cuda: %d workers, %d GPUs each alone%s", p.workers, need,
                 share ? ", one long-lived job each" : "");
        return p;
    }
    /* Single-GPU cases: one context per worker, started once. Every worker takes an equal share of the
     * groups in one run: a context start costs about 0.2 s and the driver serialises them, so a worker
     * that restarted every few groups would spend the replay starting contexts. A case that crashes costs
     * only a restart for the rest of its share (lab_isolate reruns what was left). */
    p.workers = cap;
    if ((size_t)p.workers > n_groups && n_groups > 0) p.workers = (int)n_groups;
    if (p.workers < 1) p.workers = 1;
    size_t groups = (n_groups + (size_t)p.workers - 1) / (size_t)p.workers;
    if (groups < 1) groups = 1;
    p.batch = groups * group_size;
    p.gpus_per_worker = m->ngpu > 0 ? 1 : 0;
    snprintf(p.why, sizeof p.why, "cuda: %d workers over %d GPU%s, %zu cases per worker run", p.workers, m->ngpu,
             m->ngpu == 1 ? "" : "s", p.batch);
    return p;
}

double lab_sched_case_cost(const lab_incident *inc, lab_backend b, uint64_t seed)
{
    if (b == LAB_BACKEND_CUDA && !inc->run_cuda) return 0.0;
    double c = inc->seed_cost ? inc->seed_cost(seed) : LAB_SCHED_CASE_COST;
    return isfinite(c) && c >= 0.0 ? c : LAB_SCHED_CASE_COST;
}

int lab_sched_workers(const lab_machine *m, lab_backend b, int asked, char *note, size_t len)
{
    if (note && len) note[0] = 0;
    int ncpu = m->ncpu > 0 ? m->ncpu : 1;
    if (b != LAB_BACKEND_CUDA || m->ngpu <= 0) return asked > 0 ? asked : ncpu;
    int most = m->ngpu * LAB_SCHED_GPU_WORKERS_MAX;
    if (asked <= 0) {
        int w = m->ngpu * LAB_SCHED_GPU_WORKERS;
        if (w < LAB_SCHED_HOST_WORKERS) w = LAB_SCHED_HOST_WORKERS < most ? LAB_SCHED_HOST_WORKERS : most;
        return w < ncpu ? w : ncpu;
    }
    if (asked > most) {
        if (note && len)
            snprintf(note, len, "-j %d capped to %d: %d GPU%s x %d workers (MPS serves %d clients a GPU; the rest "
                     "queue)", asked, most, m->ngpu, m->ngpu == 1 ? "" : "s", LAB_SCHED_GPU_WORKERS_MAX,
                     LAB_SCHED_MPS_CLIENTS);
        return most;
    }
    return asked;
}

unsigned lab_sched_chunk_seeds(unsigned bmax, double group_cost, double fair, int ngpu)
{
    if (bmax < 2 || !(group_cost > 0.0) || !(fair > 0.0) || (double)bmax * group_cost <= fair) return bmax;
    unsigned low = bmax / (2u * (unsigned)(ngpu > 1 ? ngpu : 1));
    double k = fair / group_cost, floor = low > 2 ? (double)low : 2.0;
    return k >= floor ? (unsigned)k : (unsigned)floor;
}

/* A run's sort keys and index, sorted together (qsort takes no context): its tier (0: it leads, costing at least
 * lead_at; 1: the rest), its turn (its place among its kind's runs of its tier, costliest first; 0 for every run
 * without kinds), its kind's place (the kinds by their costliest run), its cost. */
typedef struct {
    size_t tier, turn, place;
    double cost;
    size_t idx;
} lab_sched_run;

static int lab_sched_run_cmp(const void *a, const void *b)
{
    const lab_sched_run *x = a, *y = b;
    if (x->tier != y->tier) return x->tier < y->tier ? -1 : 1;
    if (x->turn != y->turn) return x->turn < y->turn ? -1 : 1;
    if (x->place != y->place) return x->place < y->place ? -1 : 1;
    if (x->cost != y->cost) return x->cost > y->cost ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

lab_status lab_sched_order_runs(const double *cost, const size_t *kind, size_t nkinds, size_t n, double lead_at,
                                size_t *idx)
{
    size_t nk = nkinds ? nkinds : 1;
    lab_sched_run *r = malloc((n ? n : 1) * sizeof *r);
    size_t *seen = calloc(2 * nk, sizeof *seen), *place = calloc(nk, sizeof *place);
    if (!r || !seen || !place) {
        free(r), free(seen), free(place);
        return lab_err_set(LAB_ERR_NOMEM, "scheduler: out of memory ordering %zu runs", n);
    }
    for (size_t i = 0; i < n; ++i) r[i] = (lab_sched_run){lead_at > 0.0 && !(cost[i] >= lead_at), 0, 0, cost[i], i};
    qsort(r, n, sizeof *r, lab_sched_run_cmp);
    if (kind) { /* the costliest-first order gives each run its turn within its kind and tier, each kind its place */
        size_t kinds = 0;
        for (size_t i = 0; i < n; ++i) {
            size_t k = kind[r[i].idx] < nkinds ? kind[r[i].idx] : 0;
            if (seen[k] + seen[nk + k] == 0) place[k] = kinds++;
            r[i].turn = seen[r[i].tier * nk + k]++, r[i].place = place[k];
        }
        qsort(r, n, sizeof *r, lab_sched_run_cmp);
    }
    for (size_t i = 0; i < n; ++i) idx[i] = r[i].idx;
    free(r), free(seen), free(place);
    return LAB_OK;
}

void lab_sched_visible(const lab_machine *m, int first, int count, char *buf, size_t len)
{
    size_t at = 0;
    if (len) buf[0] = 0;
    for (int k = 0; k < count && first + k < m->ngpu && at < len; ++k)
        at += (size_t)snprintf(buf + at, len - at, "%s%s", k ? "," : "", m->gpu[first + k]);
}

void lab_sched_bind(const lab_machine *m, const lab_sched_plan *p, int slot)
{
    if (p->gpus_per_worker <= 0 || m->ngpu <= 0 || slot < 0) return;
    char val[LAB_MACHINE_MAX_GPUS * 33];
    int sets = m->ngpu / p->gpus_per_worker;
    int first = p->exclusive ? (slot % (sets > 0 ? sets : 1)) * p->gpus_per_worker : slot % m->ngpu;
    lab_sched_visible(m, first, p->gpus_per_worker, val, sizeof val);
    setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0); /* the driver's listing is in PCI order */
    setenv("CUDA_VISIBLE_DEVICES", val, 1);
    if (p->gpus_per_worker == 1) lab_device_one_queue();
}


/* The ranks among which a share already divided among `tasks` of them is to be divided again: 1 when each rank is one
 * of those tasks (size of them), else all `size` (the share is the host's, or tasks does not fit the ranks). */
static int lab_sched_split(int size, int tasks)
{
    return tasks > 1 && size % tasks == 0 ? size / tasks : size;
}

int lab_sched_host_share(lab_machine *m, int rank, int size)
{
    if (size < 1 || rank < 0 || rank >= size) return -1;
    int split = lab_sched_split(size, m->cpu_tasks), ncpu = m->ncpu / split;
    m->ncpu = ncpu > 0 ? ncpu : 1;
    size_t at = strlen(m->cpu_source);
    if (split > 1)
        snprintf(m->cpu_source + at, sizeof m->cpu_source - at, ", shared by %d local ranks", split);
    else if (size > 1)
        snprintf(m->cpu_source + at, sizeof m->cpu_source - at, ", this rank's own (Slurm's share of its task)");
    int gsplit = lab_sched_split(size, m->gpu_tasks);
    rank %= gsplit, size = gsplit; /* GPUs Slurm bound to this rank's task are its own */
    int base = m->ngpu / size, extra = m->ngpu % size;
    int first = rank * base + (rank < extra ? rank : extra), count = base + (rank < extra);
    for (int k = 0; k < count; ++k) {
        memmove(m->gpu[k], m->gpu[first + k], sizeof m->gpu[0]);
        memmove(m->what[k], m->what[first + k], sizeof m->what[0]);
        memmove(m->uuid[k], m->uuid[first + k], sizeof m->uuid[0]);
    }
    m->ngpu = count;
    return first;
}
