/* lab_sched: the scheduler's model of the machine (cores, GPUs) and of what an incident's cases need, and the plan that fills them. */
#include "lab_sched.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab_cpus.h"
#include "lab_isolate.h"

static int lab_sched_cmp(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

/* "<model> (pci <bus>)" from the driver's /proc/driver/nvidia/gpus/<bus>/information, "pci <bus>" without it; the
 * GPU's UUID from the same file into uuid ("" without it). */
static void lab_sched_model(const char *bus, char *out, size_t len, char *uuid, size_t ulen)
{
    char path[256], line[256], model[96] = "";
    snprintf(path, sizeof path, "/proc/driver/nvidia/gpus/%s/information", bus);
    FILE *f = fopen(path, "r");
    uuid[0] = 0;
    while (f && fgets(line, sizeof line, f)) {
        char *v = strchr(line, ':');
        if (!v) continue;
        for (++v; *v == ' ' || *v == '\t'; ++v) {
        }
        v[strcspn(v, "\n")] = 0;
        if (!strncmp(line, "Model:", 6)) snprintf(model, sizeof model, "%s", v);
        else if (!strncmp(line, "GPU UUID:", 9)) snprintf(uuid, ulen, "%s", v);
    }
    if (f) fclose(f);
    snprintf(out, len, "%s%spci %s%s", model, model[0] ? " (" : "", bus, model[0] ? ")" : "");
}

/* The GPUs `nvidia-smi -L` lists ("GPU <i>: <name> (UUID: ...)", in PCI order): a separate process, so still no
 * CUDA call here. Nothing listed (or no nvidia-smi): no GPU. */
static void lab_sched_probe_smi(lab_sched_machine *m)
{
    char *argv[] = {"nvidia-smi", "-L", NULL};
    FILE *p;
    pid_t pid;
    if (lab_isolate_spawn_read(argv, &p, &pid) == LAB_OK) { /* an argv: no shell */
        char line[256];
        while (fgets(line, sizeof line, p))
            if (m->ngpu < LAB_SCHED_MAX_GPUS && !strncmp(line, "GPU ", 4)) {
                line[strcspn(line, "\n")] = 0;
                snprintf(m->gpu[m->ngpu], sizeof m->gpu[0], "%d", m->ngpu);
                snprintf(m->what[m->ngpu], sizeof m->what[0], "%s", line);
                char *u = strstr(line, "UUID: ");
                if (u) snprintf(m->uuid[m->ngpu], sizeof m->uuid[0], "%.*s", (int)strcspn(u + 6, ")"), u + 6);
                m->ngpu++;
            }
        int ws;
        lab_isolate_spawn_wait(p, pid, &ws);
    }
    snprintf(m->source, sizeof m->source, "%s", m->ngpu ? "nvidia-smi -L" : "no GPU listed by the driver or nvidia-smi");
}

/* The driver's GPUs in PCI order (the listing, else nvidia-smi -L) into *m, source set. */
static void lab_sched_probe_driver(lab_sched_machine *m)
{
    char bus[LAB_SCHED_MAX_GPUS][32];
    int n = 0;
    DIR *d = opendir("/proc/driver/nvidia/gpus");
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) && n < LAB_SCHED_MAX_GPUS)
            if (e->d_name[0] != '.') snprintf(bus[n++], sizeof bus[0], "%s", e->d_name);
        closedir(d);
    }
    qsort(bus, (size_t)n, sizeof bus[0], lab_sched_cmp);
    for (int i = 0; i < n; ++i) {
        snprintf(m->gpu[i], sizeof m->gpu[0], "%d", i); /* PCI order, as the driver lists */
        lab_sched_model(bus[i], m->what[i], sizeof m->what[0], m->uuid[i], sizeof m->uuid[0]);
    }
    m->ngpu = n;
    if (n == 0 && access("/dev/nvidiactl", F_OK) == 0) {
        lab_sched_probe_smi(m);
        return;
    }
    snprintf(m->source, sizeof m->source, "%s", n ? "/proc/driver/nvidia/gpus" : "no GPU listed by the driver");
}

void lab_sched_probe(lab_sched_machine *m)
{
    memset(m, 0, sizeof *m);
    m->ncpu = lab_cpus_describe(m->cpu_source, sizeof m->cpu_source);
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    if (!vis) {
        lab_sched_probe_driver(m);
        return;
    }
    /* an allocation: its entries, each named by the driver's listing where it has it */
    static lab_sched_machine all; /* large: not on the stack */
    memset(&all, 0, sizeof all);
    int listed = 0;
    char list[1024], *save = NULL;
    snprintf(list, sizeof list, "%s", vis);
    for (char *t = strtok_r(list, ",", &save); t && m->ngpu < LAB_SCHED_MAX_GPUS; t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ') ++t;
        if (!*t || !strcmp(t, "-1")) break; /* CUDA stops at the first invalid entry */
        int k = m->ngpu++;
        snprintf(m->gpu[k], sizeof m->gpu[0], "%s", t);
        if (!strncmp(t, "GPU-", 4)) {
            snprintf(m->uuid[k], sizeof m->uuid[0], "%s", t);
            continue;
        }
        char *end;
        long idx = strtol(t, &end, 10);
        if (*end || idx < 0) continue;
        if (!listed) lab_sched_probe_driver(&all), listed = 1;
        if (idx < all.ngpu) {
            snprintf(m->uuid[k], sizeof m->uuid[0], "%s", all.uuid[idx]);
            snprintf(m->what[k], sizeof m->what[0], "%s", all.what[idx]);
        }
    }
    snprintf(m->source, sizeof m->source, "CUDA_VISIBLE_DEVICES='%.64s'", vis);
}

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

lab_sched_plan lab_sched_plan_incident(const lab_sched_machine *m, const lab_incident *inc, lab_backend b,
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

int lab_sched_workers(const lab_sched_machine *m, lab_backend b, int asked, char *note, size_t len)
{
    if (note && len) note[0] = 0;
    int ncpu = m->ncpu > 0 ? m->ncpu : 1;
    if (b != LAB_BACKEND_CUDA || m->ngpu <= 0) return asked > 0 ? asked : ncpu;
    int most = m->ngpu * LAB_SCHED_GPU_WORKERS_MAX;
    if (asked <= 0) {
        int w = m->ngpu * LAB_SCHED_GPU_WORKERS;
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

/* A run's cost and index, sorted together (qsort takes no context). */
typedef struct {
    double cost;
    size_t idx;
} lab_sched_run;

static int lab_sched_run_cmp(const void *a, const void *b)
{
    const lab_sched_run *x = a, *y = b;
    if (x->cost != y->cost) return x->cost > y->cost ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

lab_status lab_sched_order_runs(const double *cost, size_t n, size_t *idx)
{
    lab_sched_run *r = malloc((n ? n : 1) * sizeof *r);
    if (!r) return lab_err_set(LAB_ERR_NOMEM, "scheduler: out of memory ordering %zu runs", n);
    for (size_t i = 0; i < n; ++i) r[i] = (lab_sched_run){cost[i], i};
    qsort(r, n, sizeof *r, lab_sched_run_cmp);
    for (size_t i = 0; i < n; ++i) idx[i] = r[i].idx;
    free(r);
    return LAB_OK;
}

void lab_sched_visible(const lab_sched_machine *m, int first, int count, char *buf, size_t len)
{
    size_t at = 0;
    if (len) buf[0] = 0;
    for (int k = 0; k < count && first + k < m->ngpu && at < len; ++k)
        at += (size_t)snprintf(buf + at, len - at, "%s%s", k ? "," : "", m->gpu[first + k]);
}

void lab_sched_bind(const lab_sched_machine *m, const lab_sched_plan *p, int slot)
{
    if (p->gpus_per_worker <= 0 || m->ngpu <= 0 || slot < 0) return;
    char val[LAB_SCHED_MAX_GPUS * 33];
    int sets = m->ngpu / p->gpus_per_worker;
    int first = p->exclusive ? (slot % (sets > 0 ? sets : 1)) * p->gpus_per_worker : slot % m->ngpu;
    lab_sched_visible(m, first, p->gpus_per_worker, val, sizeof val);
    setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0); /* the driver's listing is in PCI order */
    setenv("CUDA_VISIBLE_DEVICES", val, 1);
}

int lab_sched_host_share(lab_sched_machine *m, int rank, int size)
{
    if (size < 1 || rank < 0 || rank >= size) return -1;
    int ncpu = m->ncpu / size;
    m->ncpu = ncpu > 0 ? ncpu : 1;
    if (size > 1) {
        size_t at = strlen(m->cpu_source);
        snprintf(m->cpu_source + at, sizeof m->cpu_source - at, ", shared by %d local ranks", size);
    }
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
