/* lab_cpus: how many CPUs this process may use (affinity mask, cgroup CPU quota). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "lab_cpus.h"

#include "lab_alloc.h"

#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The first line of a small file, or 0 when it cannot be read. */
static int lab_cpus_read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    return ok;
}

/* The quota in CPUs of one cgroup folder (v2 cpu.max, or v1 cfs files), or +inf when it sets none. */
static double lab_cpus_quota_of(const char *dir, int v2)
{
    char path[4200], a[128], b[128];
    if (v2) {
        snprintf(path, sizeof path, "%s/cpu.max", dir);
        if (!lab_cpus_read_line(path, a, sizeof a)) return INFINITY;
        char q[64] = "";
        double period = 0;
        if (sscanf(a, "%63s %lf", q, &period) < 1 || !strcmp(q, "max")) return INFINITY;
        double quota = atof(q);
        if (!(period > 0)) period = 100000; /* the kernel's default period */
        return quota > 0 ? quota / period : INFINITY;
    }
    snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir);
    if (!lab_cpus_read_line(path, a, sizeof a)) return INFINITY;
    snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
    if (!lab_cpus_read_line(path, b, sizeof b)) return INFINITY;
    double quota = atof(a), period = atof(b);
    return quota > 0 && period > 0 ? quota / period : INFINITY;
}

/* The tightest quota from base/rel up to base (rel "/a/b": base/a/b, base/a, base). */
static double lab_cpus_quota_walk(const char *base, const char *rel, int v2)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s%s", base, rel[0] == '/' || !rel[0] ? rel : "/");
    size_t blen = strlen(base);
    double best = INFINITY;
    for (;;) {
        size_t n = strlen(dir);
        while (n > blen && dir[n - 1] == '/') dir[--n] = 0;
        double q = lab_cpus_quota_of(dir, v2);
        if (q < best) best = q;
        if (n <= blen) break;
        char *slash = strrchr(dir + blen, '/');
        if (!slash) break;
        *slash = 0;
    }
    return best;
}

/* The cgroup quota in CPUs (+inf: none) for a /proc/self/cgroup text and a cgroup mount. */
static double lab_cpus_quota(const char *proc_cgroup, const char *root)
{
    if (!proc_cgroup || !root) return INFINITY;
    double best = INFINITY;
    const char *line = proc_cgroup;
    while (line && *line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[4096];
        snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), line);
        /* "ID:CONTROLLERS:PATH" */
        char *c1 = strchr(buf, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (c1 && c2) {
            *c2 = 0;
            const char *ctl = c1 + 1, *path = c2 + 1;
            char base[4096];
            double q = INFINITY;
            if (!*ctl) { /* v2: the unified hierarchy */
                snprintf(base, sizeof base, "%s", root);
                q = lab_cpus_quota_walk(base, path, 1);
                /* a hybrid host mounts it at root/unified */
                snprintf(base, sizeof base, "%s/unified", root);
                double u = lab_cpus_quota_walk(base, path, 1);
                if (u < q) q = u;
            } else {
                /* v1: the controller list names "cpu" (as "cpu" or "cpu,cpuacct") */
                char list[256];
                snprintf(list, sizeof list, ",%s,", ctl);
                if (strstr(list, ",cpu,")) {
                    snprintf(base, sizeof base, "%s/%s", root, ctl);
                    q = lab_cpus_quota_walk(base, path, 0);
                    snprintf(base, sizeof base, "%s/cpu", root);
                    double u = lab_cpus_quota_walk(base, path, 0);
                    if (u < q) q = u;
                }
            }
            if (q < best) best = q;
        }
        line = end ? end + 1 : NULL;
    }
    return best;
}

int lab_cpus_usable_from(int affinity, const char *proc_cgroup, const char *cgroup_root)
{
    double q = lab_cpus_quota(proc_cgroup, cgroup_root);
    int n = affinity > 0 ? affinity : 0;
    if (isfinite(q)) {
        int qc = (int)ceil(q - 1e-9);
        if (qc < 1) qc = 1;
        if (n == 0 || qc < n) n = qc;
    }
    return n > 0 ? n : 1;
}

static int lab_cpus_affinity(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static char *lab_cpus_proc_cgroup(void)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return NULL;
    size_t cap = 8192;
    char *buf = malloc(cap);
    if (buf) {
        size_t n = fread(buf, 1, cap - 1, f);
        buf[n] = 0;
    }
    fclose(f);
    return buf;
}

/* The count and, when desc is given, where it came from. */
static int lab_cpus_count(char *desc, unsigned len)
{
    const char *env = getenv("LAB_CPUS");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end == 0 && v > 0 && v < 1 << 20) {
            if (desc) snprintf(desc, len, "LAB_CPUS=%ld", v);
            return (int)v;
        }
    }
    int aff = lab_cpus_affinity();
    char *cg = lab_cpus_proc_cgroup();
    int n = lab_cpus_usable_from(aff, cg, "/sys/fs/cgroup");
    free(cg);
    lab_alloc alloc;
    lab_alloc_read(&alloc);
    int slurm = alloc.cpus > 0 && alloc.cpus < n;
    if (desc) {
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        char own[96];
        if (n < aff) snprintf(own, sizeof own, "cgroup CPU quota %d (affinity %d of %ld online)", n, aff, online);
        else snprintf(own, sizeof own, "affinity %d of %ld online", aff, online);
        if (slurm) snprintf(desc, len, "Slurm's %s (%s)", alloc.cpus_from, own);
        else if (alloc.cpus > 0) snprintf(desc, len, "%s (Slurm's %s)", own, alloc.cpus_from);
        else snprintf(desc, len, "%s", own);
    }
    return slurm ? alloc.cpus : n;
}

int lab_cpus_usable(void) { return lab_cpus_count(NULL, 0); }

int lab_cpus_describe(char *buf, unsigned len) { return lab_cpus_count(buf, len); }
