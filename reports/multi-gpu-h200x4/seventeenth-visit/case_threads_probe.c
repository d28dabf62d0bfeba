/* case_threads_probe: the same CUDA cases run by T workers of one GPU, either T threads of one process (one context)
 * or T processes (a context each), to measure what sharing a context costs a case (seventeenth visit).
 *
 *   case_threads_probe threads|procs T SEEDS OUT INCIDENT...
 *
 * The work: every (incident, seed) of seeds 1..SEEDS, seed by seed, each running all of its incident's one-GPU variants
 * with a CUDA version except the memory bugs (whose stray device writes a shared context would not contain), through
 * lab_case_run as a replay worker does (the seed's group made once, reused by its variants). Workers take the next
 * (incident, seed) as they finish one. OUT gets one line a case, "incident variant seed outcome" (P pass, F fail, S
 * skip, E error), sorted, to compare modes; stdout the summary. Run from the repository root (goldens). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab_clock.h"
#include "lab_cuda.h"
#include "lab_incident.h"

typedef struct {
    const lab_incident *inc;
    uint64_t seed;
    double t0, t1; /* seconds since the start */
    int worker, ncases, first; /* first: index of its first case in the case table */
} item;

typedef struct {
    const lab_incident *inc;
    const lab_variant *v;
    uint64_t seed;
    char outcome;
} kase;

static item *items;
static kase *cases;
static size_t n_items, n_cases;
static long *next_item;      /* shared */
static double *ready_at;     /* shared, per worker */
static double t_start;

static int runnable(const lab_variant *v) { return !v->cpu_only && !v->sanitizer && v->gpus == 0; }

static void run_worker(int w)
{
    char why[256];
    lab_status st = lab_cuda_ready(why, sizeof why);
    ready_at[w] = lab_clock_now() - t_start;
    if (st != LAB_OK) {
        fprintf(stderr, "worker %d: no context: %s\n", w, why);
        return;
    }
    char gdir[4096];
    for (;;) {
        long k = __atomic_fetch_add(next_item, 1, __ATOMIC_RELAXED);
        if (k >= (long)n_items) break;
        item *it = &items[k];
        it->worker = w;
        it->t0 = lab_clock_now() - t_start;
        for (int j = 0; j < it->ncases; ++j) {
            kase *c = &cases[it->first + j];
            lab_case lc;
            lab_case_init(&lc, c->inc, c->v, c->seed, LAB_BACKEND_CUDA, ".", gdir, sizeof gdir);
            lab_case_result r;
            memset(&r, 0, sizeof r);
            lab_status s = lab_case_run(&lc, &r);
            c->outcome = s != LAB_OK ? 'E' : r.skipped ? 'S' : r.passed ? 'P' : 'F';
            if (s != LAB_OK) fprintf(stderr, "%s %s seed %llu: %s\n", c->inc->id, c->v->name, (unsigned long long)c->seed, lab_err_msg());
        }
        it->t1 = lab_clock_now() - t_start;
    }
    lab_case_release();
}

static void *thread_main(void *arg)
{
    run_worker((int)(long)arg);
    return NULL;
}

static void *shared(size_t bytes)
{
    void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    return p;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmp_line(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv)
{
    if (argc < 6 || (strcmp(argv[1], "threads") && strcmp(argv[1], "procs"))) {
        fprintf(stderr, "usage: %s threads|procs T SEEDS OUT INCIDENT...\n", argv[0]);
        return 2;
    }
    int threads = !strcmp(argv[1], "threads"), T = atoi(argv[2]);
    long seeds = atol(argv[3]);
    const char *out = argv[4];
    if (T < 1 || seeds < 1) {
        fprintf(stderr, "T and SEEDS must be at least 1\n");
        return 2;
    }
    size_t n_inc = (size_t)(argc - 5), per_seed = 0;
    const lab_incident **incs = calloc(n_inc, sizeof *incs);
    for (size_t i = 0; i < n_inc; ++i) {
        if (!(incs[i] = lab_incident_find(argv[5 + i]))) {
            fprintf(stderr, "no incident %s\n", argv[5 + i]);
            return 2;
        }
        for (int v = 0; v < incs[i]->n_variants; ++v) per_seed += runnable(&incs[i]->variants[v]);
    }
    n_items = (size_t)seeds * n_inc;
    items = shared(n_items * sizeof *items);
    cases = shared((size_t)seeds * per_seed * sizeof *cases);
    next_item = shared(sizeof *next_item);
    ready_at = shared((size_t)T * sizeof *ready_at);
    size_t k = 0;
    for (long s = 1; s <= seeds; ++s)
        for (size_t i = 0; i < n_inc; ++i) {
            item *it = &items[k++];
            it->inc = incs[i], it->seed = (uint64_t)s, it->first = (int)n_cases, it->worker = -1;
            for (int v = 0; v < incs[i]->n_variants; ++v)
                if (runnable(&incs[i]->variants[v])) {
                    cases[n_cases].inc = incs[i], cases[n_cases].v = &incs[i]->variants[v];
                    cases[n_cases].seed = (uint64_t)s, cases[n_cases].outcome = '?';
                    n_cases++, it->ncases++;
                }
        }
    t_start = lab_clock_now();
    if (threads) {
        pthread_t *tid = calloc((size_t)T, sizeof *tid);
        for (int w = 0; w < T; ++w) pthread_create(&tid[w], NULL, thread_main, (void *)(long)w);
        for (int w = 0; w < T; ++w) pthread_join(tid[w], NULL);
    } else {
        fflush(NULL);
        for (int w = 0; w < T; ++w) {
            pid_t p = fork();
            if (p == 0) {
                run_worker(w);
                fflush(NULL);
                _exit(0);
            }
            if (p < 0) {
                perror("fork");
                return 2;
            }
        }
        int status;
        while (wait(&status) > 0)
            if (!WIFEXITED(status) || WEXITSTATUS(status)) fprintf(stderr, "a worker ended with status %d\n", status);
    }
    double wall = lab_clock_now() - t_start;

    /* the summary */
    double *r = malloc((size_t)T * sizeof *r);
    memcpy(r, ready_at, (size_t)T * sizeof *r);
    qsort(r, (size_t)T, sizeof *r, cmp_double);
    printf("mode %s, T %d, %zu items, %zu cases, wall %.2f s\n", argv[1], T, n_items, n_cases, wall);
    printf("contexts ready: first %.2f s, median %.2f s, last %.2f s\n", r[0], r[T / 2], r[T - 1]);
    size_t after = 0, notrun = 0;
    double last_end = 0;
    for (size_t i = 0; i < n_items; ++i) {
        if (items[i].worker < 0) notrun++;
        if (items[i].t0 >= r[T - 1]) after++;
        if (items[i].t1 > last_end) last_end = items[i].t1;
    }
    if (last_end > r[T - 1])
        printf("items started after the last context: %zu in %.2f s (%.1f items/s)\n", after, last_end - r[T - 1],
               (double)after / (last_end - r[T - 1]));
    if (notrun) printf("items not run: %zu\n", notrun);
    printf("%-28s %6s %10s %10s  outcomes (P F S E)\n", "incident", "items", "wall sum", "per item");
    for (size_t i = 0; i < n_inc; ++i) {
        double sum = 0;
        size_t n = 0, cnt[4] = {0};
        for (size_t j = 0; j < n_items; ++j)
            if (items[j].inc == incs[i] && items[j].worker >= 0) sum += items[j].t1 - items[j].t0, n++;
        for (size_t j = 0; j < n_cases; ++j)
            if (cases[j].inc == incs[i]) {
                const char *o = strchr("PFSE", cases[j].outcome);
                if (o) cnt[o - "PFSE"]++;
            }
        printf("%-28s %6zu %9.2fs %8.1fms  %zu %zu %zu %zu\n", incs[i]->id, n, sum, n ? 1e3 * sum / (double)n : 0, cnt[0],
               cnt[1], cnt[2], cnt[3]);
    }
    FILE *f = fopen(out, "w");
    if (!f) {
        perror(out);
        return 2;
    }
    char **lines = calloc(n_cases, sizeof *lines);
    for (size_t j = 0; j < n_cases; ++j)
        if (asprintf(&lines[j], "%s %s %llu %c", cases[j].inc->id, cases[j].v->name, (unsigned long long)cases[j].seed,
                     cases[j].outcome) < 0)
            return 2;
    qsort(lines, n_cases, sizeof *lines, cmp_line);
    for (size_t j = 0; j < n_cases; ++j) fprintf(f, "%s\n", lines[j]);
    fclose(f);
    return 0;
}
