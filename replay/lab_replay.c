/* lab_replay: runs (incident, variant, seed) cases in isolation on all cores and reports them. */
#define _GNU_SOURCE /* nftw, renameat2 flags */
#include "lab_replay.h"

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

#include "lab_args.h"
#include "lab_asan.h"
#include "lab_ctxgate.h"
#include "lab_fs.h"
#include "lab_plot.h"
#include "lab_sanitize.h"
#include "lab_sched.h"
#include "lab_seedbatch.h"
#include "lab_stall.h"

#ifdef LAB_HAVE_CUDA
#include "lab_cuda.h"
#endif

/* A device error may have taken the context down, and a memory bug may have written where nothing checks unless
 * the case vouches it did not (memory_contained): either way this worker judges no further case. */
static void lab_replay_retire_rule(const lab_case *c, lab_status st, lab_case_result *r)
{
    if (st == LAB_ERR_DEVICE || (c->variant->sanitizer && !r->memory_contained) || lab_result_get(r, "device_error") > 0)
        r->retire_worker = 1;
}

/* The device probe of this process's CUDA cases (lab_replay_opts.device_probe): set in a worker from its replay's
 * options, NULL for lab_cuda_ready. */
static lab_status (*lab_replay_probe)(char *why, size_t len);

lab_status lab_replay_case(const lab_case *c, lab_case_result *r)
{
    memset(r, 0, sizeof *r);
    const lab_variant *v = c->variant;
    if (c->backend == LAB_BACKEND_CUDA && c->incident->run_cuda && !v->cpu_only) {
        char why[240];
#ifdef LAB_HAVE_CUDA
        lab_status st = lab_replay_probe ? lab_replay_probe(why, sizeof why) : lab_cuda_ready(why, sizeof why);
#else
        if (!lab_replay_probe) {
            lab_result_skip(r, "this build has no CUDA (nvcc was not found at build time)");
            return LAB_OK;
        }
        lab_status st = lab_replay_probe(why, sizeof why);
#endif
        if (st == LAB_ERR_UNSUPPORTED) {
            lab_result_skip_as(r, LAB_SKIP_NEEDS_GPU, "%s", why);
            return LAB_OK;
        }
        if (st != LAB_OK) return st; /* a listed GPU that cannot be used is an error, not a skip */
    }
    lab_status st = lab_case_run(c, r);
    if (st == LAB_OK) lab_asan_judge_unflagged(c, r); /* an ASan build's `asan` bug that ran to its end unflagged */
    lab_replay_retire_rule(c, st, r);
    return st;
}

typedef struct {
    const lab_replay_opts *opts;
    lab_case_record *recs;
    size_t n, done;
    double t0;
    size_t bad;
    size_t base, total, base_bad; /* a windowed replay: cases done in earlier windows, in all, failing there */
    int quiet_sched;              /* a later window: the scheduler lines were printed already */
    size_t *order;     /* execution order: job j of the incident being run is recs[order[offset + j]] */
    unsigned *lead;    /* per execution position: n >= 1 starts a seed batch of n jobs (1: alone), 0 follows one
                          (lab_seedbatch.h) */
    size_t offset;
    lab_sched_machine machine;
    lab_sched_plan plan;        /* the plan of the incident being run */
    int bound;                  /* in a worker: its GPUs are bound (the parent never sets it) */
    lab_ctxgate gate;           /* the pool's CUDA workers make their contexts through it (closed: no pool) */
    lab_replay_done_fn on_done; /* optional: told of each finished case (scale-out streams it) */
    void *on_done_ctx;
} lab_replay_ctx;

/* Runs the seed batch led by execution position pos (its first case c) in this worker, keeping the followers'
 * results (lab_seedbatch_run). An error status when the GPU is not ready or the batch failed: the caller then runs
 * each case alone, so a skip or a device error is judged per case as always. */
static lab_status lab_replay_batch(lab_replay_ctx *ctx, size_t pos, const lab_case *c, lab_case_result *r)
{
#ifdef LAB_HAVE_CUDA
    char why[240];
    if (lab_cuda_ready(why, sizeof why) != LAB_OK) return lab_err_set(LAB_ERR_UNSUPPORTED, "%s", why);
    size_t n = ctx->lead[pos];
    lab_case *cases = malloc(n * sizeof *cases);
    if (!cases) return lab_err_set(LAB_ERR_NOMEM, "seed batch: out of memory");
    for (size_t i = 0; i < n; ++i) {
        const lab_case_record *rec = &ctx->recs[ctx->order[pos + i]];
        cases[i] = *c; /* the same incident, variant, backend and golden folder */
        cases[i].seed = rec->seed;
    }
    lab_status st = lab_seedbatch_run(cases, n, pos, r);
    free(cases);
    return st;
#else
    (void)ctx, (void)pos, (void)c, (void)r;
    return lab_err_set(LAB_ERR_UNSUPPORTED, "this build has no CUDA");
#endif
}

/* Whether an incident's plan lets its workers run other incidents' cases too: single-GPU CUDA cases,
 * one context per worker, GPUs shared. Those incidents run as one pool, so a worker starts its context
 * once for all of them (the driver serialises context starts: about 0.2 s each). */
static int lab_replay_poolable(const lab_replay_opts *opts, const lab_sched_plan *p)
{
    return !opts->sanitize && p->gpus_per_worker == 1 && !p->exclusive && !p->gpus_missing;
}

/* The health rule: once the replay's probe made a context on the GPU (opts->device_ok), a CUDA case that finds no
 * usable device lost it mid-replay (an MPS server that will not serve, a device that fell off the bus): ERROR with
 * the cause, never the neutral SKIP that would let a fix pass unjudged. */
static lab_status lab_replay_health(const lab_replay_opts *opts, const lab_case *c, lab_case_result *r)
{
    if (!opts->device_ok || c->backend != LAB_BACKEND_CUDA || !r->skipped || r->skip_class != LAB_SKIP_NEEDS_GPU)
        return LAB_OK;
    return lab_err_set(LAB_ERR_DEVICE, "device lost: the replay's probe used a CUDA device, this case found none (%s)",
                       r->detail);
}

/* A pool worker's first CUDA job: its context, made through the replay's gate (lab_ctxgate.h) before the case runs.
 * What the probe says is not used here: the case's own probe, a moment later, judges it. */
static void lab_replay_warm(const lab_ctxgate *gate)
{
    if (gate->rfd < 0) return;
    char why[240];
    int took = lab_ctxgate_enter(gate, 10.0);
#ifdef LAB_HAVE_CUDA
    (void)(lab_replay_probe ? lab_replay_probe(why, sizeof why) : lab_cuda_ready(why, sizeof why));
#else
    if (lab_replay_probe) (void)lab_replay_probe(why, sizeof why);
#endif
    lab_ctxgate_leave(gate, took);
}

/* A worker's start: its GPU (lab_sched_bind), its MPS daemon or none, the replay's device probe, and in a pool of
 * CUDA workers its context, made through the gate. The pool runs it before the worker takes any work
 * (lab_isolate_run_pool's init); elsewhere the worker's first job does. */
static void lab_replay_worker_init(void *vctx)
{
    lab_replay_ctx *ctx = vctx;
    lab_sched_bind(&ctx->machine, &ctx->plan, lab_isolate_worker_slot());
    if (ctx->plan.gpus_per_worker > 0) /* a client of its GPU's MPS daemon, or (multi-GPU cases) of none */
        lab_mps_client(ctx->opts->mps, lab_replay_poolable(ctx->opts, &ctx->plan) && ctx->machine.ngpu > 0
                                            ? lab_isolate_worker_slot() % ctx->machine.ngpu : -1);
    lab_replay_probe = ctx->opts->device_probe;
    ctx->bound = 1;
    if (ctx->opts->backend == LAB_BACKEND_CUDA) lab_replay_warm(&ctx->gate);
}

static lab_status lab_replay_job(void *vctx, size_t job, lab_case_result *r)
{
    lab_replay_ctx *ctx = vctx;
    const lab_case_record *rec = &ctx->recs[ctx->order[ctx->offset + job]];
    memset(r, 0, sizeof *r);
    if (!ctx->bound) lab_replay_worker_init(ctx);
    lab_case c;
    char gdir[4096];
    lab_case_init(&c, rec->incident, rec->variant, rec->seed, rec->backend, ctx->opts->root, gdir, sizeof gdir);
    /* In an AddressSanitizer build this worker makes an ASan report its case's result: allocate exactly. */
    c.exact_alloc = lab_asan_active();
    if (ctx->opts->sanitize) {
        lab_status st = lab_sanitize_case(&c, ctx->opts->sanitize, ctx->opts->lab_bin, r);
        if (st == LAB_ERR_UNSUPPORTED) lab_result_skip(r, "%s", lab_err_msg());
        return st == LAB_ERR_UNSUPPORTED ? LAB_OK : st;
    }
    size_t pos = ctx->offset + job;
    if (ctx->lead && ctx->lead[pos] != 1) {
        if (lab_seedbatch_take(pos, r) || (ctx->lead[pos] > 1 && lab_replay_batch(ctx, pos, &c, r) == LAB_OK)) {
            lab_replay_retire_rule(&c, LAB_OK, r); /* a follower whose batch ran in this process, or its leader */
            return LAB_OK;
        }
        memset(r, 0, sizeof *r); /* a follower whose leader ran elsewhere, or a batch that failed: alone */
    }
    lab_status st = lab_replay_case(&c, r);
    return st == LAB_OK ? lab_replay_health(ctx->opts, &c, r) : st;
}

static double lab_replay_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Outside a terminal, the least time between two progress lines. */
#define LAB_REPLAY_PROGRESS_S 10.0

static void lab_replay_done(void *vctx, size_t job, const lab_job_outcome *o)
{
    lab_replay_ctx *ctx = vctx;
    size_t index = ctx->order[ctx->offset + job];
    lab_case_record *c = &ctx->recs[index];
    c->o = *o;
    unsigned lead = ctx->lead ? ctx->lead[ctx->offset + job] : 1;
    if (lead > 1 && (o->outcome == LAB_OUT_CRASH || o->outcome == LAB_OUT_HANG) && !o->not_run) {
        /* its process died inside the batch: the outcome may be another seed's; the others rerun alone */
        size_t len = strlen(c->o.error);
        snprintf(c->o.error + len, sizeof c->o.error - len, " (while running a seed batch of %u cases it led; its "
                 "other cases rerun alone; replay this one alone to confirm)", lead);
    }
    ctx->done++;
    if (lab_verdict_case_ok(c) == 0) ctx->bad++;
    if (ctx->opts->progress && !o->not_run) {
        static int tty = -1;
        static double last_line = 0;
        if (tty < 0) tty = isatty(STDERR_FILENO);
        double now = lab_replay_now(), el = now - ctx->t0;
        if (tty) {
            fprintf(stderr, "\r\033[K[%zu/%zu] %.1fs %.0f cases/s %zu failing | %s %s seed %llu: %s", ctx->base + ctx->done, ctx->total,
                    el, el > 0 ? (double)(ctx->base + ctx->done) / el : 0.0, ctx->base_bad + ctx->bad, c->incident->id, c->variant->name,
                    (unsigned long long)c->seed, lab_outcome_name(o->outcome));
            if (ctx->base + ctx->done == ctx->total) fprintf(stderr, "\n");
        } else if (now - last_line >= LAB_REPLAY_PROGRESS_S || ctx->base + ctx->done == ctx->total) {
            /* Not a terminal (CI log, pipe): a whole line at most every LAB_REPLAY_PROGRESS_S seconds. */
            last_line = now;
            double rate = el > 0 ? (double)(ctx->base + ctx->done) / el : 0;
            char slow[200] = "none";
            size_t sj;
            double se;
            if (lab_isolate_slowest(&sj, &se)) {
                const lab_case_record *r = &ctx->recs[ctx->order[ctx->offset + sj]];
                snprintf(slow, sizeof slow, "%s %s seed %llu (%.0f s)", r->incident->id, r->variant->name,
                         (unsigned long long)r->seed, se);
            }
            fprintf(stderr, "progress: %zu/%zu cases, %.1f cases/s, ETA %.0f s, %zu failing, slowest running: %s\n",
                    ctx->base + ctx->done, ctx->total, rate, rate > 0 ? (double)(ctx->total - ctx->base - ctx->done) / rate : 0.0, ctx->base_bad + ctx->bad, slow);
        }
    }
    if (ctx->on_done) ctx->on_done(ctx->on_done_ctx, index, c);
}

double lab_replay_watchdog(const lab_replay_opts *opts, const lab_incident *inc)
{
    double timeout = inc->timeout_s > 0 ? inc->timeout_s : opts->timeout_s;
    if (opts->timeout_s > 0 && opts->timeout_s < timeout) timeout = opts->timeout_s; /* --timeout caps */
    if (timeout <= 0) timeout = 60; /* lab_isolate_run's own default */
    return opts->sanitize ? 20 * timeout : timeout; /* instrumented kernels run far slower */
}

/* Execution order of recs[start, end) (one incident) into order[start, end): by seed (in first-seen
 * order), then variant, memory bugs (a sanitizer flags them) last since their worker retires after them.
 * So every seed's cases are consecutive and share the seed's inputs and reference. Returns the largest
 * number of cases of one seed (the group size); out of memory, the canonical order and 1. */
/* A record's sort key for lab_replay_order: the first position of its seed, whether it is a memory bug, its position. */
typedef struct {
    uint64_t seed;
    size_t first, pos;
    int memory_bug;
} lab_replay_key;

static int lab_replay_by_seed(const void *a, const void *b)
{
    const lab_replay_key *x = a, *y = b;
    if (x->seed != y->seed) return x->seed < y->seed ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int lab_replay_by_group(const void *a, const void *b)
{
    const lab_replay_key *x = a, *y = b;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    if (x->memory_bug != y->memory_bug) return x->memory_bug - y->memory_bug;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static size_t lab_replay_order(const lab_case_record *recs, size_t start, size_t end, size_t *order)
{
    size_t n = end - start, gmax = 1;
    lab_replay_key *k = malloc((n ? n : 1) * sizeof *k);
    if (!k) {
        for (size_t i = start; i < end; ++i) order[i] = i;
        return 1;
    }
    /* two sorts, O(n log n): by seed to find each seed's first position, then by (that position, memory bug, position) */
    for (size_t i = 0; i < n; ++i) k[i] = (lab_replay_key){recs[start + i].seed, 0, start + i, recs[start + i].variant->sanitizer != NULL};
    qsort(k, n, sizeof *k, lab_replay_by_seed);
    for (size_t i = 0, g = 0; i < n; ++i) {
        if (i == 0 || k[i].seed != k[i - 1].seed) g = i;
        k[i].first = k[g].pos;
        if (i + 1 - g > gmax) gmax = i + 1 - g;
    }
    qsort(k, n, sizeof *k, lab_replay_by_group);
    for (size_t i = 0; i < n; ++i) order[start + i] = k[i].pos;
    free(k);
    return gmax;
}

/* The watchdog of job `job` of the run in progress: its incident's. */
static double lab_replay_job_timeout(void *vctx, size_t job)
{
    lab_replay_ctx *ctx = vctx;
    size_t pos = ctx->offset + job;
    double t = lab_replay_watchdog(ctx->opts, ctx->recs[ctx->order[pos]].incident);
    /* a seed batch's leader runs the whole batch: the time its cases would have had one by one */
    return ctx->lead && ctx->lead[pos] > 1 ? t * ctx->lead[pos] : t;
}


/* One incident of a run: its records [start, end) in execution order in ctx->order, its group size. */
typedef struct {
    size_t start, end, group_size, n_groups;
} lab_replay_part;

/* The rough cost of the records recs[jobs[0..n)] (lab_sched_case_cost). */
static double lab_replay_cost(const lab_replay_ctx *ctx, const size_t *jobs, size_t n)
{
    double c = 0.0;
    for (size_t i = 0; i < n; ++i) {
        const lab_case_record *r = &ctx->recs[jobs[i]];
        c += lab_sched_case_cost(r->incident, r->backend, r->seed);
    }
    return c;
}

/* Lays the parts' jobs out as worker runs into ctx->order[base ..] and ctx->lead[base ..], and their bounds into
 * *bounds_out (malloc'd, *nranges + 1 entries, relative to base). A part whose incident batches seeds
 * (lab_seedbatch_size > 1) gives one run per chunk of its seed batches (lab_seedbatch_plan), its chunks cut no
 * costlier than one worker's fair share of the pool (the pool's cost over `workers`, lab_sched_chunk_seeds) so
 * that no chunk is the replay's long pole; the other parts' groups are dealt into LAB_SCHED_SHARES_PER_WORKER x
 * workers runs, run k holding the k-th slice of every such part, so one process runs its slice of every incident
 * in one CUDA context. The runs are laid out costliest first (lab_sched_order_runs on the incidents' declared
 * costs, lab_sched_case_cost): lab_isolate_run_ranges hands them to workers as they free up, so the long runs
 * start first and the short ones fill in behind, instead of each worker owning a fixed share whatever the others
 * have left. */
static lab_status lab_replay_pool_layout(lab_replay_ctx *ctx, size_t base, const lab_replay_part *parts, size_t np,
                                         int workers, size_t **bounds_out, size_t *nranges)
{
    if (workers < 1) workers = 1;
    size_t total = parts[np - 1].end - base, k = 0, nr = 0, shares = LAB_SCHED_SHARES_PER_WORKER * (size_t)workers;
    size_t cap_r = total + shares + 1; /* every run holds at least one job, but the shares may be empty */
    size_t *tmp = malloc((total ? total : 1) * sizeof *tmp);
    unsigned *tlead = malloc((total ? total : 1) * sizeof *tlead);
    lab_seedbatch_plan *sp = calloc(np, sizeof *sp);
    size_t *rs = malloc(cap_r * sizeof *rs), *rl = malloc(cap_r * sizeof *rl), *ri = malloc(cap_r * sizeof *ri);
    double *rc = malloc(cap_r * sizeof *rc); /* run r: tmp[rs[r] .. + rl[r]), cost rc[r] */
    size_t *bounds = malloc((cap_r + 1) * sizeof *bounds);
    lab_status st = tmp && tlead && sp && rs && rl && ri && rc && bounds ? LAB_OK : lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
    double fair = st == LAB_OK ? lab_replay_cost(ctx, ctx->order + base, total) / workers : 0.0;
    for (size_t i = 0; i < np && st == LAB_OK; ++i) {
        const lab_replay_opts *o = ctx->opts;
        const lab_replay_part *pt = &parts[i];
        unsigned bmax = lab_seedbatch_size(ctx->recs[ctx->order[pt->start]].incident, o->backend, o->sanitize != NULL, o->batch_seeds);
        if (bmax < 2) continue;
        /* a chunk of bmax seeds costs at most bmax of the part's costliest group: no more than `fair` */
        double group = 0.0;
        for (size_t g = pt->start; g < pt->end; g += pt->group_size) {
            double c = lab_replay_cost(ctx, ctx->order + g, g + pt->group_size <= pt->end ? pt->group_size : pt->end - g);
            group = c > group ? c : group;
        }
        st = lab_seedbatch_plan_make(ctx->recs, ctx->order, pt->start, pt->end, lab_sched_chunk_seeds(bmax, group, fair, ctx->machine.ngpu), &sp[i]);
        for (size_t c = 0; c < sp[i].n_chunks && st == LAB_OK; ++c) {
            size_t a = sp[i].chunk_start[c], e = sp[i].chunk_start[c + 1];
            rs[nr] = k, rl[nr] = e - a, rc[nr++] = lab_replay_cost(ctx, sp[i].jobs + a, e - a);
            for (size_t j = a; j < e; ++j) {
                tlead[k] = sp[i].lead[j];
                tmp[k++] = sp[i].jobs[j];
            }
        }
    }
    for (size_t w = 0; w < shares && st == LAB_OK; ++w) {
        size_t from = k;
        for (size_t i = 0; i < np; ++i) {
            const lab_replay_part *pt = &parts[i];
            if (sp[i].jobs) continue;
            size_t per = (pt->n_groups + shares - 1) / shares * pt->group_size;
            size_t a = pt->start + w * per, e = a + per;
            if (a > pt->end) a = pt->end;
            if (e > pt->end) e = pt->end;
            for (size_t j = a; j < e; ++j) {
                tlead[k] = 1;
                tmp[k++] = ctx->order[j];
            }
        }
        if (k > from) rs[nr] = from, rl[nr] = k - from, rc[nr++] = lab_replay_cost(ctx, tmp + from, k - from);
    }
    if (st == LAB_OK) st = lab_sched_order_runs(rc, nr, ri);
    if (st == LAB_OK) {
        size_t at = 0;
        for (size_t r = 0; r < nr; ++r) {
            bounds[r] = at;
            memcpy(ctx->order + base + at, tmp + rs[ri[r]], rl[ri[r]] * sizeof *tmp);
            memcpy(ctx->lead + base + at, tlead + rs[ri[r]], rl[ri[r]] * sizeof *tlead);
            at += rl[ri[r]];
        }
        bounds[nr] = at;
        *bounds_out = bounds, *nranges = nr;
        bounds = NULL;
    }
    for (size_t i = 0; sp && i < np; ++i) lab_seedbatch_plan_free(&sp[i]);
    free(tmp), free(tlead), free(sp), free(rs), free(rl), free(ri), free(rc), free(bounds);
    return st;
}

/* Moves the parts with poolable plans ahead of the others (their jobs' positions in ctx->order too, keeping each
 * part's order), so that they run as one pool whatever lies between them on the command line: an incident that
 * cannot join (its cases need more GPUs than there are, or GPUs of their own) no longer splits the pool in two,
 * the second half waiting for the first to finish. parts[i] start/end become positions in ctx->order. */
static lab_status lab_replay_pool_first(lab_replay_ctx *ctx, lab_replay_part *parts, lab_sched_plan *plans, size_t np)
{
    size_t *order = malloc((ctx->n ? ctx->n : 1) * sizeof *order);
    lab_replay_part *pt = malloc((np ? np : 1) * sizeof *pt);
    lab_sched_plan *pl = malloc((np ? np : 1) * sizeof *pl);
    lab_status st = order && pt && pl ? LAB_OK : lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
    for (size_t pass = 0, pos = 0, k = 0; pass < 2 && st == LAB_OK; ++pass)
        for (size_t i = 0; i < np; ++i) {
            if (lab_replay_poolable(ctx->opts, &plans[i]) != (pass == 0)) continue;
            size_t len = parts[i].end - parts[i].start;
            memcpy(order + pos, ctx->order + parts[i].start, len * sizeof *order);
            pt[k] = parts[i], pt[k].start = pos, pt[k].end = pos + len;
            pl[k++] = plans[i];
            pos += len;
        }
    if (st == LAB_OK) {
        memcpy(ctx->order, order, ctx->n * sizeof *order);
        memcpy(parts, pt, np * sizeof *pt);
        memcpy(plans, pl, np * sizeof *pl);
    }
    free(order), free(pt), free(pl);
    return st;
}

/* Opens the pool's context gate (lab_ctxgate.h) for its CUDA workers; when it cannot, says so and lets them make their
 * contexts all at once. */
static void lab_replay_gate_open(lab_replay_ctx *ctx)
{
    if (ctx->opts->backend == LAB_BACKEND_CUDA && lab_ctxgate_open(&ctx->gate, LAB_CTXGATE_WIDTH) != LAB_OK)
        fprintf(stderr, "replay: %s; the workers make their contexts all at once\n", lab_err_msg());
}

/* Stops the replay's MPS daemon (opts->mps) before cases that must not be its clients: from here on workers make
 * plain contexts. Says so once, on the progress stream. */
static void lab_replay_leave_mps(lab_replay_ctx *ctx, const char *who)
{
    lab_mps *m = ctx->opts->mps;
    if (!m || !m->running) return;
    lab_mps_stop(m);
    if (ctx->opts->progress) fprintf(stderr, "cuda: MPS daemon stopped: %s run outside it, each on GPUs of its own\n", who);
}

/* 1 when a job's error names the device (CUDA, MPS, a device fault): what a neighbour's fault or a server that
 * stopped serving does to a case. */
static int lab_replay_device_cause(const char *error)
{
    static const char *marks[] = {"cuda", "mps", "device"};
    char low[sizeof ((lab_job_outcome *)0)->error];
    size_t i = 0;
    for (; error[i] && i + 1 < sizeof low; ++i) low[i] = (char)(error[i] >= 'A' && error[i] <= 'Z' ? error[i] + 32 : error[i]);
    low[i] = 0;
    for (size_t k = 0; k < sizeof marks / sizeof *marks; ++k)
        if (strstr(low, marks[k])) return 1;
    return 0;
}

/* A rerun's outcome: the first run is kept beside it (lab_case_record.first_run). */
static void lab_replay_rerun_done(void *vctx, size_t job, const lab_job_outcome *o)
{
    lab_replay_ctx *ctx = vctx;
    lab_case_record *c = &ctx->recs[ctx->order[job]];
    if (o->not_run) return; /* interrupted before its rerun ended: the first run stands */
    snprintf(c->first_run, sizeof c->first_run, "%s: %s", lab_outcome_name(c->o.outcome), c->o.error);
    c->o = *o;
    if (ctx->on_done) ctx->on_done(ctx->on_done_ctx, ctx->order[job], c);
}

/* The cases of a CUDA replay whose device was usable (opts->device_ok) that ended ERROR with a device cause are run
 * once more, after the pool, outside MPS, one case at a time on each GPU (a multi-GPU case on GPUs of its own), so
 * that a fault of a neighbour, or an MPS server that stopped serving, never decides a case: the rerun's outcome is
 * the case's, the first run recorded beside it. A case that fails alone too keeps its ERROR. */
static lab_status lab_replay_rerun(lab_replay_ctx *ctx, lab_job_outcome *out)
{
    const lab_replay_opts *opts = ctx->opts;
    if (opts->backend != LAB_BACKEND_CUDA || !opts->device_ok || opts->sanitize || lab_isolate_interrupted()) return LAB_OK;
    size_t m = 0;
    for (size_t i = 0; i < ctx->n; ++i) {
        const lab_case_record *r = &ctx->recs[i];
        m += r->o.outcome == LAB_OUT_ERROR && !r->o.not_run && lab_replay_device_cause(r->o.error);
    }
    if (m == 0) return LAB_OK;
    lab_replay_leave_mps(ctx, "cases that met a device error");
    if (opts->progress) fprintf(stderr, "rerunning %zu case%s that met a device error, alone on their GPUs\n", m, m == 1 ? "" : "s");
    size_t *order = malloc(m * sizeof *order);
    if (!order) return lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
    lab_status st = LAB_OK;
    unsigned *lead = ctx->lead;
    size_t *saved = ctx->order;
    ctx->lead = NULL;
    ctx->order = order;
    ctx->offset = 0;
    for (size_t i = 0; i < ctx->n && st == LAB_OK;) {
        /* one incident's cases to rerun, under its plan with one worker per GPU (or per GPU set) */
        const lab_incident *inc = ctx->recs[i].incident;
        size_t k = 0, end = i;
        for (; end < ctx->n && ctx->recs[end].incident == inc; ++end) {
            const lab_case_record *r = &ctx->recs[end];
            if (r->o.outcome == LAB_OUT_ERROR && !r->o.not_run && lab_replay_device_cause(r->o.error)) order[k++] = end;
        }
        if (k) {
            ctx->plan = lab_sched_plan_incident(&ctx->machine, inc, opts->backend, k, 1, opts->jobs);
            int per = ctx->plan.gpus_per_worker > 0 ? ctx->plan.gpus_per_worker : 1;
            int alone = ctx->machine.ngpu / per > 0 ? ctx->machine.ngpu / per : 1;
            if (ctx->plan.workers > alone) ctx->plan.workers = alone;
            st = lab_isolate_run_batched(k, lab_replay_job, ctx, ctx->plan.workers, 1, lab_replay_watchdog(opts, inc),
                                         lab_replay_rerun_done, out);
        }
        i = end;
    }
    ctx->order = saved;
    ctx->lead = lead;
    free(order);
    return st;
}

/* A run's context over recs[0..n): nothing bound, no gate, its clock started at t0. */
static void lab_replay_ctx_init(lab_replay_ctx *ctx, const lab_replay_opts *opts, lab_case_record *recs, size_t n,
                                double t0)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->opts = opts;
    ctx->recs = recs;
    ctx->n = n;
    ctx->gate = (lab_ctxgate)LAB_CTXGATE_CLOSED;
    ctx->t0 = t0;
}

/* The context of a run of all of recs[0..n) (its progress counted over n), done (NULL: none) told of each case. */
static void lab_replay_ctx_told(lab_replay_ctx *ctx, const lab_replay_opts *opts, lab_case_record *recs, size_t n,
                                lab_replay_done_fn done, void *done_ctx)
{
    lab_replay_ctx_init(ctx, opts, recs, n, lab_replay_now());
    ctx->total = n;
    ctx->on_done = done;
    ctx->on_done_ctx = done_ctx;
}

/* An array of n elements of size sz, zeroed: shared with the children forked later (MAP_SHARED, so that a fed run's
 * layout of a chunk reaches the pool's workers already running), or private (calloc). NULL when out of memory. */
static void *lab_replay_alloc(size_t n, size_t sz, int shared)
{
    if (!shared) return calloc(n ? n : 1, sz);
    void *p = mmap(NULL, (n ? n : 1) * sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void lab_replay_release(void *p, size_t n, size_t sz, int shared)
{
    if (!shared) free(p);
    else if (p) munmap(p, (n ? n : 1) * sz);
}

/* What an execution holds from its set-up to its end: the outcomes, each incident's part of ctx->order and its plan. */
typedef struct {
    lab_job_outcome *out;
    lab_replay_part *parts;
    lab_sched_plan *plans;
    size_t np;
    int shared;                 /* ctx->order and ctx->lead are shared with the children (a fed run) */
} lab_replay_setup;

static void lab_replay_setup_free(lab_replay_ctx *ctx, lab_replay_setup *s)
{
    free(s->out);
    free(s->parts);
    free(s->plans);
    lab_replay_release(ctx->order, ctx->n, sizeof *ctx->order, s->shared);
    lab_replay_release(ctx->lead, ctx->n, sizeof *ctx->lead, s->shared);
    ctx->order = NULL;
    ctx->lead = NULL;
}

/* The set-up of an execution: the machine (printed with the progress), every incident's execution order (a part of
 * ctx->order: its seed groups one after another, lab_replay_order) and its plan. */
static lab_status lab_replay_setup_make(lab_replay_ctx *ctx, int shared, lab_replay_setup *s)
{
    const lab_replay_opts *opts = ctx->opts;
    memset(s, 0, sizeof *s);
    s->shared = shared;
    for (size_t i = 0; i < ctx->n; ++i) s->np += i == 0 || ctx->recs[i].incident != ctx->recs[i - 1].incident;
    s->out = calloc(ctx->n ? ctx->n : 1, sizeof *s->out);
    s->parts = calloc(s->np ? s->np : 1, sizeof *s->parts);
    s->plans = calloc(s->np ? s->np : 1, sizeof *s->plans);
    ctx->order = lab_replay_alloc(ctx->n, sizeof *ctx->order, shared);
    ctx->lead = lab_replay_alloc(ctx->n, sizeof *ctx->lead, shared);
    if (!s->out || !s->parts || !s->plans || !ctx->order || !ctx->lead) {
        lab_replay_setup_free(ctx, s);
        return lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
    }
    for (size_t i = 0; i < ctx->n; ++i) ctx->lead[i] = 1;
    lab_sched_probe(&ctx->machine);
    if (opts->progress && !ctx->quiet_sched) {
        char note[200];
        int w = lab_sched_workers(&ctx->machine, opts->backend, opts->jobs, note, sizeof note);
        fprintf(stderr, "scheduler: %d workers (%s%s; %s)%s%s\n", w, opts->jobs > 0 ? "-j" : "default: ",
                opts->jobs > 0 ? "" : opts->backend == LAB_BACKEND_CUDA && ctx->machine.ngpu > 0 ? "16 a GPU, at most the CPUs" : "one a CPU",
                ctx->machine.cpu_source, note[0] ? "; " : "", note);
        if (opts->backend == LAB_BACKEND_CUDA)
            fprintf(stderr, "scheduler: %d GPU%s from %s\n", ctx->machine.ngpu, ctx->machine.ngpu == 1 ? "" : "s", ctx->machine.source);
    }
    for (size_t i = 0, start = 0; i < s->np; ++i) {
        const lab_incident *inc = ctx->recs[start].incident;
        size_t end = start;
        while (end < ctx->n && ctx->recs[end].incident == inc) ++end;
        size_t gs = lab_replay_order(ctx->recs, start, end, ctx->order);
        s->parts[i] = (lab_replay_part){start, end, gs, (end - start + gs - 1) / gs};
        s->plans[i] = lab_sched_plan_incident(&ctx->machine, inc, opts->backend, s->parts[i].n_groups, gs, opts->jobs);
        if (opts->sanitize) s->plans[i].batch = 1; /* each case is its own compute-sanitizer process anyway */
        start = end;
    }
    return LAB_OK;
}

/* Jobs [a, b) of the run in progress SKIP in the runner, without a worker: their cases need more GPUs than the host
 * has (a worker per case spent 3 s on 0006's 3000 cases of a 1000-seed replay on one GPU, after the pool). */
static void lab_replay_skip_missing(lab_replay_ctx *ctx, size_t a, size_t b, lab_job_outcome *out)
{
    for (size_t k = a; k < b; ++k) {
        lab_job_outcome o;
        memset(&o, 0, sizeof o);
        o.outcome = LAB_OUT_SKIP;
        o.worker = -1;
        lab_result_skip_as(&o.r, LAB_SKIP_NEEDS_GPUS, "%s", ctx->plan.why);
        out[k] = o;
        lab_replay_done(ctx, k, &o);
    }
}

/* Runs the cases (records are grouped by incident): an incident at a time under its plan, except that the
 * incidents with poolable plans run first, as one pool; every job under its incident's watchdog. Then the cases
 * that met a device error run again (lab_replay_rerun). */
static lab_status lab_replay_execute(lab_replay_ctx *ctx)
{
    const lab_replay_opts *opts = ctx->opts;
    lab_replay_setup su;
    lab_status st = lab_replay_setup_make(ctx, 0, &su);
    if (st != LAB_OK) return st;
    lab_replay_part *parts = su.parts;
    lab_sched_plan *plans = su.plans;
    lab_job_outcome *out = su.out;
    size_t n_inc = su.np, *bounds = NULL;
    st = lab_replay_pool_first(ctx, parts, plans, n_inc);
    for (size_t i = 0; i < n_inc && st == LAB_OK;) {
        size_t j = i + 1;
        ctx->plan = plans[i];
        ctx->offset = parts[i].start;
        if (lab_replay_poolable(opts, &plans[i])) {
            for (; j < n_inc && lab_replay_poolable(opts, &plans[j]); ++j)
                if (plans[j].workers > ctx->plan.workers) ctx->plan.workers = plans[j].workers;
            size_t nr = 0;
            free(bounds), bounds = NULL;
            st = lab_replay_pool_layout(ctx, parts[i].start, parts + i, j - i, ctx->plan.workers, &bounds, &nr);
            if (st == LAB_OK) lab_replay_gate_open(ctx);
            if (st == LAB_OK)
                st = lab_isolate_run_pool(parts[j - 1].end - parts[i].start, lab_replay_job, ctx, ctx->plan.workers,
                                          bounds, nr, 0, lab_replay_job_timeout, lab_replay_done, out + parts[i].start,
                                          lab_replay_worker_init);
            lab_ctxgate_close(&ctx->gate);
        } else if (ctx->plan.gpus_missing) {
            lab_replay_skip_missing(ctx, 0, parts[i].end - parts[i].start, out + parts[i].start);
        } else {
            lab_replay_leave_mps(ctx, "multi-GPU and sanitizer cases");
            st = lab_isolate_run_batched(parts[i].end - parts[i].start, lab_replay_job, ctx, ctx->plan.workers,
                                         ctx->plan.batch, lab_replay_watchdog(opts, ctx->recs[ctx->order[parts[i].start]].incident),
                                         lab_replay_done, out + parts[i].start);
        }
        i = j;
    }
    if (st == LAB_OK) st = lab_replay_rerun(ctx, out);
    free(bounds);
    lab_replay_setup_free(ctx, &su);
    return st;
}

/* A fed execution's lane: the parts that run under one plan (lab_replay_execute_fed), and the chunk it is handing out. */
typedef struct {
    lab_replay_ctx *ctx;
    const lab_replay_groups *groups;
    const lab_replay_part *parts;
    const lab_sched_plan *plans; /* per part */
    unsigned char *accept;      /* per part: in this lane */
    int pool;                   /* the lane is the pool: a chunk is laid out in runs (lab_replay_pool_layout) */
    lab_replay_feed_fn feed;
    void *feed_ctx;
    int ended;                  /* the feed said -1 */
    lab_status st;              /* a chunk that could not be laid out, or was not one of this lane's */
    size_t *bounds, nr, next;   /* the pool's chunk: runs [bounds[r], bounds[r + 1]) from next on */
    size_t at, end, grp, gend;  /* otherwise: its jobs [at, end) not handed out yet, at in group grp of its groups
                                   [.., gend) */
    size_t batch;               /* and the jobs a child runs (its incident's plan.batch) */
} lab_replay_lane;

/* The next range of a chunk outside the pool: as the plain execution cuts its runs, plan.batch jobs a child (a seed
 * group on the CPU, one case under compute-sanitizer, a worker's share of groups where its incident says so), here cut
 * from the chunk: whole groups where the batch holds one or more, else batch cases at a time. */
static void lab_replay_lane_cut(lab_replay_lane *l, size_t *first, size_t *end)
{
    const size_t *start = l->groups->start;
    size_t stop, want = l->batch ? l->batch : 1;
    if (want < start[l->grp + 1] - start[l->grp]) {
        stop = l->at + want < start[l->grp + 1] ? l->at + want : start[l->grp + 1];
        if (stop == start[l->grp + 1]) l->grp++;
    } else {
        size_t k = l->grp + 1;
        while (k < l->gend && start[k + 1] - l->at <= want) ++k;
        stop = start[k];
        l->grp = k;
    }
    *first = l->at;
    *end = l->at = stop;
}

/* The lane's next range (lab_job_feed_fn): the next run of the chunk in hand; when there is none and fewer ranges wait
 * than the lane has workers, the next chunk from the caller's feed, laid out. */
static int lab_replay_lane_next(void *vl, size_t waiting, size_t *first, size_t *end)
{
    lab_replay_lane *l = vl;
    lab_replay_ctx *ctx = l->ctx;
    const lab_replay_groups *g = l->groups;
    for (;;) {
        if (l->pool && l->next < l->nr) {
            *first = l->bounds[l->next];
            *end = l->bounds[++l->next];
            return 1;
        }
        if (!l->pool && l->at < l->end) {
            lab_replay_lane_cut(l, first, end);
            return 1;
        }
        if (l->ended || waiting >= (size_t)ctx->plan.workers) return l->ended ? -1 : 0;
        size_t g0 = 0, g1 = 0;
        int r = l->feed(l->feed_ctx, l->accept, &g0, &g1);
        if (r <= 0) {
            l->ended = r < 0;
            return r;
        }
        size_t p = g0 < g->ng ? g->part[g0] : 0;
        if (!(g0 < g1 && g1 <= g->ng && g->part[g1 - 1] == p && l->accept[p])) {
            l->st = lab_err_set(LAB_ERR_ARG, "replay: the feed gave seed groups [%zu, %zu), not a chunk of this lane's "
                                "incidents (%zu groups)", g0, g1, g->ng);
            l->ended = 1;
            return -1;
        }
        l->at = g->start[g0];
        l->end = g->start[g1];
        l->grp = g0;
        l->gend = g1;
        l->batch = l->plans[p].batch;
        if (l->pool) {
            lab_replay_part pt = {l->at, l->end, l->parts[p].group_size, g1 - g0};
            size_t *bounds = NULL, nr = 0;
            lab_status st = lab_replay_pool_layout(ctx, l->at, &pt, 1, ctx->plan.workers, &bounds, &nr);
            if (st != LAB_OK) {
                l->st = st;
                l->ended = 1;
                return -1;
            }
            for (size_t k = 0; k <= nr; ++k) bounds[k] += l->at;
            free(l->bounds);
            l->bounds = bounds, l->nr = nr, l->next = 0;
        }
    }
}

/* Whether two plans run their cases alike (the same workers bound the same way): their incidents share a lane. Cases
 * that SKIP for want of GPUs do not: each incident's SKIP says what it needs. */
static int lab_replay_same_plan(const lab_sched_plan *a, const lab_sched_plan *b)
{
    return a->workers == b->workers && a->gpus_per_worker == b->gpus_per_worker && a->exclusive == b->exclusive &&
           !a->gpus_missing && !b->gpus_missing;
}

lab_status lab_replay_execute_fed(const lab_replay_opts *opts, lab_case_record *recs, size_t n,
                                  const lab_replay_groups *groups, lab_replay_feed_fn feed, void *feed_ctx,
                                  lab_replay_done_fn done, void *done_ctx)
{
    lab_replay_ctx ctx;
    lab_replay_ctx_told(&ctx, opts, recs, n, done, done_ctx);
    lab_replay_setup su;
    lab_status st = lab_replay_setup_make(&ctx, 1, &su);
    if (st != LAB_OK) return st;
    if (su.np != groups->nparts || memcmp(ctx.order, groups->order, n * sizeof *ctx.order) != 0)
        st = lab_err_set(LAB_ERR_ARG, "replay: the seed groups given are not those of these cases (lab_replay_groups_make)");
    /* lanes: the pool first (its lane number 0), then one a distinct plan, in the incidents' order */
    int *lane = calloc(su.np ? su.np : 1, sizeof *lane), nl = 1;
    unsigned char *accept = calloc(su.np ? su.np : 1, 1);
    if (st == LAB_OK && (!lane || !accept)) st = lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
    for (size_t i = 0; st == LAB_OK && i < su.np; ++i) {
        if (lab_replay_poolable(opts, &su.plans[i])) continue;
        lane[i] = nl++;
        for (size_t k = 0; k < i; ++k)
            if (lane[k] && lab_replay_same_plan(&su.plans[k], &su.plans[i])) {
                lane[i] = lane[k];
                nl--;
                break;
            }
    }
    for (int ln = 0; ln < nl && st == LAB_OK && !lab_isolate_interrupted(); ++ln) {
        lab_replay_lane l = {&ctx, groups, su.parts, su.plans, accept, ln == 0, feed, feed_ctx};
        int members = 0;
        for (size_t i = 0; i < su.np; ++i) {
            accept[i] = lane[i] == ln;
            if (!accept[i]) continue;
            if (members++ == 0) ctx.plan = su.plans[i];
            else if (su.plans[i].workers > ctx.plan.workers) ctx.plan.workers = su.plans[i].workers;
        }
        if (!members) continue;
        ctx.offset = 0;
        if (l.pool) {
            lab_replay_gate_open(&ctx);
            st = lab_isolate_run_fed(n, lab_replay_job, &ctx, ctx.plan.workers, lab_replay_lane_next, &l, 0,
                                     lab_replay_job_timeout, lab_replay_done, su.out, 1, lab_replay_worker_init);
            lab_ctxgate_close(&ctx.gate);
        } else if (ctx.plan.gpus_missing) {
            size_t a, b;
            for (int r; !lab_isolate_interrupted() && (r = lab_replay_lane_next(&l, 0, &a, &b)) >= 0;) {
                if (r) lab_replay_skip_missing(&ctx, a, b, su.out);
                else nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
            }
        } else {
            lab_replay_leave_mps(&ctx, "multi-GPU and sanitizer cases");
            st = lab_isolate_run_fed(n, lab_replay_job, &ctx, ctx.plan.workers, lab_replay_lane_next, &l, 0,
                                     lab_replay_job_timeout, lab_replay_done, su.out, 0, NULL);
        }
        free(l.bounds);
        if (st == LAB_OK) st = l.st;
    }
    if (st == LAB_OK) st = lab_replay_rerun(&ctx, su.out);
    free(lane);
    free(accept);
    lab_replay_setup_free(&ctx, &su);
    return st;
}

lab_status lab_replay_groups_make(const lab_case_record *recs, size_t n, lab_replay_groups *g)
{
    memset(g, 0, sizeof *g);
    g->order = malloc((n ? n : 1) * sizeof *g->order);
    g->start = malloc((n + 1) * sizeof *g->start);
    g->part = malloc((n ? n : 1) * sizeof *g->part);
    g->cost = malloc((n ? n : 1) * sizeof *g->cost);
    if (!g->order || !g->start || !g->part || !g->cost) {
        lab_replay_groups_free(g);
        return lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
    }
    for (size_t start = 0, end; start < n; start = end, g->nparts++) {
        for (end = start; end < n && recs[end].incident == recs[start].incident; ++end) {
        }
        lab_replay_order(recs, start, end, g->order);
        for (size_t p = start; p < end; ++p) {
            const lab_case_record *r = &recs[g->order[p]];
            if (p == start || r->seed != recs[g->order[p - 1]].seed) {
                g->start[g->ng] = p;
                g->part[g->ng] = g->nparts;
                g->cost[g->ng++] = 0.0;
            }
            g->cost[g->ng - 1] += lab_sched_case_cost(r->incident, r->backend, r->seed);
        }
    }
    g->start[g->ng] = n;
    return LAB_OK;
}

void lab_replay_groups_free(lab_replay_groups *g)
{
    free(g->order);
    free(g->start);
    free(g->part);
    free(g->cost);
    memset(g, 0, sizeof *g);
}

/* Prints the per-variant table. */
static void lab_replay_table(FILE *f, const lab_verdict_tally *t, size_t nt)
{
    fprintf(f, "\n%-28s %-16s %-4s %5s %5s %5s %5s %5s %5s %5s  %s\n", "incident", "variant", "role", "seeds", "PASS",
            "FAIL", "CRASH", "HANG", "SKIP", "ERROR", "verdict");
    for (size_t k = 0; k < nt; ++k) {
        fprintf(f, "%-28s %-16s %-4s %5zu %5zu %5zu %5zu %5zu %5zu %5zu  %s\n", t[k].incident->id, t[k].variant->name,
                lab_role_name(t[k].variant->role), t[k].seeds, t[k].counts[LAB_OUT_PASS], t[k].counts[LAB_OUT_FAIL],
                t[k].counts[LAB_OUT_CRASH], t[k].counts[LAB_OUT_HANG], t[k].counts[LAB_OUT_SKIP],
                t[k].counts[LAB_OUT_ERROR], t[k].verdict);
    }
}

/* Seeds replayed for one incident: all given, or its default_seeds when the seeds were not given. */
static size_t lab_replay_n_seeds(const lab_replay_opts *opts, const lab_incident *inc)
{
    if (opts->seeds_default && inc->default_seeds > 0 && inc->default_seeds < opts->n_seeds) return inc->default_seeds;
    return opts->n_seeds;
}

/* Selected variants of one incident. */
static size_t lab_replay_n_variants(const lab_replay_opts *opts, const lab_incident *inc)
{
    size_t k = 0;
    for (int v = 0; v < inc->n_variants; ++v) k += !opts->variant || strcmp(opts->variant, inc->variants[v].name) == 0;
    return k;
}

/* The cases a replay plans (lab_replay_cases's n), without making them. */
static size_t lab_replay_count(const lab_replay_opts *opts)
{
    size_t n = 0;
    for (size_t i = 0; i < opts->n_incidents; ++i)
        n += lab_replay_n_variants(opts, opts->incidents[i]) * lab_replay_n_seeds(opts, opts->incidents[i]);
    return n;
}

static lab_status lab_replay_run_windowed(const lab_replay_opts *opts, FILE *report, lab_verdict *verdict,
                                          size_t planned);

lab_status lab_replay_cases(const lab_replay_opts *opts, lab_case_record **recs_out, size_t *n_recs)
{
    *recs_out = NULL;
    *n_recs = 0;
    size_t n = lab_replay_count(opts);
    lab_case_record *recs = calloc(n ? n : 1, sizeof *recs);
    if (!recs) return lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
    size_t k = 0;
    for (size_t i = 0; i < opts->n_incidents; ++i)
        for (int v = 0; v < opts->incidents[i]->n_variants; ++v) {
            const lab_variant *var = &opts->incidents[i]->variants[v];
            if (opts->variant && strcmp(opts->variant, var->name) != 0) continue;
            for (size_t s = 0; s < lab_replay_n_seeds(opts, opts->incidents[i]); ++s) {
                recs[k].incident = opts->incidents[i];
                recs[k].variant = var;
                recs[k].seed = opts->seeds[s];
                recs[k].backend = opts->backend;
                k++;
            }
        }
    *recs_out = recs;
    *n_recs = n;
    return LAB_OK;
}

lab_status lab_replay_execute_records(const lab_replay_opts *opts, lab_case_record *recs, size_t n,
                                      lab_replay_done_fn done, void *done_ctx)
{
    lab_replay_ctx ctx;
    lab_replay_ctx_told(&ctx, opts, recs, n, done, done_ctx);
    return lab_replay_execute(&ctx);
}

lab_status lab_replay_run(const lab_replay_opts *opts, FILE *report, lab_verdict *verdict, lab_case_record **recs_out,
                          size_t *n_recs)
{
    memset(verdict, 0, sizeof *verdict);
    verdict->exit_status = LAB_EXIT_FAILED;
    *recs_out = NULL;
    *n_recs = 0;
    size_t planned = lab_replay_count(opts);
    if (planned > lab_replay_window_at()) return lab_replay_run_windowed(opts, report, verdict, planned);
    lab_case_record *recs;
    size_t n;
    lab_status st = lab_replay_cases(opts, &recs, &n);
    if (st != LAB_OK) return st;
    if (opts->out_dir && (st = lab_fs_mkdirs(opts->out_dir)) != LAB_OK) {
        free(recs);
        return st;
    }
    double t0 = lab_replay_now();
    lab_stall_point(LAB_STALL_PLANNING);
    if (lab_isolate_interrupted()) /* interrupted while planning: no case starts */
        for (size_t j = 0; j < n; ++j) {
            recs[j].o.outcome = LAB_OUT_ERROR;
            recs[j].o.not_run = 1;
            snprintf(recs[j].o.error, sizeof recs[j].o.error, "interrupted");
        }
    else
        st = lab_replay_execute_records(opts, recs, n, NULL, NULL);
    if (st != LAB_OK) fprintf(report, "replay: %s (the cases not started are ERROR)\n", lab_err_msg());
    lab_verdict_run run = {.harness_failed = st != LAB_OK};
    lab_status st2 = lab_replay_report(opts, report, recs, n, lab_replay_now() - t0, &run, verdict);
    *recs_out = recs;
    *n_recs = n;
    return st2 != LAB_OK ? st2 : st;
}

/* The files of a result set in an --out folder: the swap replaces these; anything else there is moved
 * into the new set untouched. */
const char *const lab_replay_set_names[] = {"results.jsonl", "summary.json", "junit.xml", "results.tap", "plots",
                                           "report.json", "index.html", NULL};

static int lab_replay_set_member(const char *name)
{
    for (size_t i = 0; lab_replay_set_names[i]; ++i)
        if (!strcmp(name, lab_replay_set_names[i])) return 1;
    return 0;
}

static int lab_replay_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path) != 0 && errno != ENOENT ? -1 : 0;
}

/* rm -rf path (no symlink followed). */
static void lab_replay_rmrf(const char *path) { nftw(path, lab_replay_rm_one, 16, FTW_DEPTH | FTW_PHYS); }

/* Makes a fresh folder beside out_dir (same file system, so it can be swapped in): *stage. LAB_ERR_IO
 * naming the path when it cannot be made. */
static lab_status lab_replay_stage(const char *out_dir, char *stage, size_t len)
{
    size_t n = strlen(out_dir);
    while (n > 1 && out_dir[n - 1] == '/') --n;
    if (snprintf(stage, len, "%.*s.new-XXXXXX", (int)n, out_dir) >= (int)len)
        return lab_err_set(LAB_ERR_ARG, "%s: path too long", out_dir);
    if (!mkdtemp(stage))
        return lab_err_set(LAB_ERR_IO, "%s: cannot make the new result folder %s beside it: %s", out_dir, stage,
                           strerror(errno));
    return LAB_OK;
}

/* Replaces out_dir by stage as a whole: entries of out_dir that are not part of a result set move into
 * stage first, then the two folders are exchanged in one renameat2(RENAME_EXCHANGE) (or, where the file
 * system lacks it, out_dir is renamed aside and stage renamed in), and the old set is removed. A reader
 * sees the old set or the new one, never a mix. Refuses (LAB_ERR_ARG) an out_dir that holds the current
 * directory. LAB_ERR_IO naming the path on a failed rename. */
static lab_status lab_replay_swap(const char *stage, const char *out_dir)
{
    char rout[PATH_MAX], rcwd[PATH_MAX];
    if (realpath(out_dir, rout) && getcwd(rcwd, sizeof rcwd)) {
        size_t k = strlen(rout);
        if (!strncmp(rcwd, rout, k) && (rcwd[k] == 0 || rcwd[k] == '/' || k == 1))
            return lab_err_set(LAB_ERR_ARG, "--out %s holds the current directory: choose a folder for results",
                               out_dir);
    }
    DIR *d = opendir(out_dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || lab_replay_set_member(e->d_name)) continue;
            char from[PATH_MAX], to[PATH_MAX];
            snprintf(from, sizeof from, "%s/%s", out_dir, e->d_name);
            snprintf(to, sizeof to, "%s/%s", stage, e->d_name);
            if (rename(from, to) != 0) {
                int er = errno;
                closedir(d);
                return lab_err_set(LAB_ERR_IO, "%s: cannot keep %s in the new result set: %s", out_dir, from,
                                   strerror(er));
            }
        }
        closedir(d);
    }
    if (syscall(SYS_renameat2, AT_FDCWD, stage, AT_FDCWD, out_dir, RENAME_EXCHANGE) == 0) {
        lab_replay_rmrf(stage); /* now the old set */
        return LAB_OK;
    }
    if (errno == ENOENT && !lab_fs_exists(out_dir)) {
        if (rename(stage, out_dir) == 0) return LAB_OK;
        return lab_err_set(LAB_ERR_IO, "%s: cannot move the new result set in from %s: %s", out_dir, stage,
                           strerror(errno));
    }
    if (errno != EINVAL && errno != ENOSYS)
        return lab_err_set(LAB_ERR_IO, "%s: cannot swap in the new result set from %s: %s", out_dir, stage,
                           strerror(errno));
    char old[PATH_MAX];
    snprintf(old, sizeof old, "%s.old-XXXXXX", stage);
    if (!mkdtemp(old) || rmdir(old) != 0 || rename(out_dir, old) != 0)
        return lab_err_set(LAB_ERR_IO, "%s: cannot move the old result set aside: %s", out_dir, strerror(errno));
    if (rename(stage, out_dir) != 0) {
        int er = errno;
        rename(old, out_dir);
        return lab_err_set(LAB_ERR_IO, "%s: cannot move the new result set in from %s: %s", out_dir, stage,
                           strerror(er));
    }
    lab_replay_rmrf(old);
    return LAB_OK;
}

/* The command that resumes an interrupted replay: the same selection from the lowest seed that has an
 * unfinished case on (written into buf). */
static void lab_replay_resume_at(const lab_replay_opts *opts, size_t lowest, char *buf, size_t len);

static void lab_replay_resume_cmd(const lab_replay_opts *opts, const lab_case_record *recs, size_t n, char *buf,
                                  size_t len)
{
    size_t lowest = opts->n_seeds;
    for (size_t j = 0; j < n; ++j) {
        if (!recs[j].o.not_run) continue;
        for (size_t s = 0; s < lowest; ++s)
            if (opts->seeds[s] == recs[j].seed) {
                lowest = s;
                break;
            }
    }
    lab_replay_resume_at(opts, lowest, buf, len);
}

/* The resume command from the lowest seed index with an unfinished case (>= n_seeds: none). */
static void lab_replay_resume_at(const lab_replay_opts *opts, size_t lowest, char *buf, size_t len)
{
    if (lowest >= opts->n_seeds) lowest = 0;
    int k = snprintf(buf, len, "%s replay", opts->lab_bin);
    for (size_t i = 0; i < opts->n_incidents && k > 0 && (size_t)k < len; ++i)
        k += snprintf(buf + k, len - (size_t)k, " --incident %s", opts->incidents[i]->id);
    if (k > 0 && (size_t)k < len && opts->variant) k += snprintf(buf + k, len - (size_t)k, " --variant %s", opts->variant);
    if (k > 0 && (size_t)k < len) {
        if (opts->n_seeds == 1) k += snprintf(buf + k, len - (size_t)k, " --seed %llu", (unsigned long long)opts->seeds[0]);
        else if (!opts->seeds_default || lowest > 0)
            k += snprintf(buf + k, len - (size_t)k, " --first-seed %llu --seeds %zu", (unsigned long long)opts->seeds[lowest],
                          opts->n_seeds - lowest);
    }
    if (k > 0 && (size_t)k < len)
        snprintf(buf + k, len - (size_t)k, " --backend %s --out %s-resumed", lab_backend_name(opts->backend),
                 opts->out_dir ? opts->out_dir : "build/replay");
}

/* Amends DIR/summary.json (the staged set) once, before the swap: for an interrupted replay (sig != 0)
 * "interrupted": true ("ok" is already false: the verdict counts an interrupted run NOT OK), the signal, the cases planned and the resume command; then the caller's
 * fields (opts->summary_fields, when set). Its errors, or the file's, are returned. */
static lab_status lab_replay_amend_summary(const char *dir, const lab_replay_opts *opts, int sig, size_t planned,
                                           const char *resume)
{
    char path[PATH_MAX], *text;
    size_t len;
    snprintf(path, sizeof path, "%s/summary.json", dir);
    lab_status st = lab_fs_read_all(path, &text, &len);
    if (st != LAB_OK) return st;
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root) return lab_err_set(LAB_ERR_FORMAT, "%s: cannot parse the summary just written", path);
    if (sig) {
        cJSON_AddBoolToObject(root, "interrupted", 1);
        cJSON_AddStringToObject(root, "signal", sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "?");
        cJSON_AddNumberToObject(root, "cases_planned", (double)planned);
        cJSON_AddStringToObject(root, "resume", resume);
    }
    if (opts->summary_fields && (st = opts->summary_fields(opts->summary_ctx, root)) != LAB_OK) {
        cJSON_Delete(root);
        return st;
    }
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    if (!s) return lab_err_set(LAB_ERR_NOMEM, "%s: cannot serialise JSON", path);
    size_t n = strlen(s);
    s[n - (n > 0 && s[n - 1] == '\n')] = 0;
    char *buf = malloc(strlen(s) + 2);
    if (!buf) {
        cJSON_free(s);
        return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
    }
    n = (size_t)sprintf(buf, "%s\n", s);
    cJSON_free(s);
    st = lab_fs_write_atomic(path, buf, n);
    free(buf);
    return st;
}

lab_status lab_replay_report(const lab_replay_opts *opts, FILE *report, lab_case_record *recs_all, size_t n_all,
                             double wall, const lab_verdict_run *run_in, lab_verdict *verdict)
{
    memset(verdict, 0, sizeof *verdict);
    verdict->exit_status = LAB_EXIT_FAILED;
    /* An interrupted run reports (and writes) the cases that finished, and only them. */
    lab_stall_point(LAB_STALL_COLLECTING);
    int sig = lab_isolate_interrupted();
    size_t n = 0;
    for (size_t j = 0; j < n_all; ++j) n += !recs_all[j].o.not_run;
    lab_case_record *recs = recs_all;
    if (n != n_all) {
        recs = malloc((n ? n : 1) * sizeof *recs);
        if (!recs) return lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
        for (size_t j = 0, k = 0; j < n_all; ++j)
            if (!recs_all[j].o.not_run) recs[k++] = recs_all[j];
    }

    lab_verdict_tally *t;
    size_t nt;
    lab_status st2 = lab_verdict_tally_records(recs, n, &t, &nt);
    if (st2 != LAB_OK) {
        if (recs != recs_all) free(recs);
        return st2;
    }
    /* The one verdict: the console, summary.json, JUnit, TAP and the exit status all take it from here. */
    lab_verdict_run run = run_in ? *run_in : (lab_verdict_run){0};
    run.interrupted = sig;
    run.cases_planned = n_all;
    lab_verdict v = lab_verdict_decide(t, nt, recs, n, &run);
    lab_replay_table(report, t, nt);

    /* Every case that failed its role, with the command that replays exactly that case. A fix that failed
     * REGRESSED; a bug that passed is an XPASS; a bug whose case could not be judged is printed with its
     * outcome (ERROR), never as XPASS. */
    size_t shown = 0;
    for (size_t j = 0; j < n; ++j) {
        if (lab_verdict_case_ok(&recs[j]) != 0) continue;
        if (shown++ >= 20) continue;
        char cmd[512];
        lab_results_replay_cmd(&recs[j], opts->lab_bin, cmd, sizeof cmd);
        const char *label = recs[j].variant->role == LAB_ROLE_FIX     ? "REGRESSED"
                            : recs[j].o.outcome == LAB_OUT_PASS       ? "XPASS"
                                                                      : lab_outcome_name(recs[j].o.outcome);
        fprintf(report, "%s %s/%s seed %llu: %s%s%s%s%s\n  replay: %s%s%s\n", label, recs[j].incident->id,
                recs[j].variant->name, (unsigned long long)recs[j].seed, lab_outcome_name(recs[j].o.outcome),
                recs[j].o.r.detail[0] || recs[j].o.error[0] ? ": " : "", recs[j].o.r.detail,
                recs[j].o.r.detail[0] && recs[j].o.error[0] ? "; " : "", recs[j].o.error, cmd,
                opts->sanitize ? " --sanitize " : "", opts->sanitize ? opts->sanitize : "");
    }
    if (shown > 20) fprintf(report, "... and %zu more (see results.jsonl)\n", shown - 20);
    /* Variants judged on their tally alone (a stated rate): what the table's verdict column says, in full. */
    for (size_t k = 0; k < nt; ++k)
        if (t[k].kind == LAB_VERDICT_RATE_BELOW || t[k].kind == LAB_VERDICT_TOO_FEW_SEEDS)
            fprintf(report, "%s/%s: %s\n  replay: %s replay --incident %s --variant %s --seeds %zu\n", t[k].incident->id,
                    t[k].variant->name, t[k].verdict, opts->lab_bin, t[k].incident->id, t[k].variant->name,
                    t[k].seeds_needed > t[k].seeds ? t[k].seeds_needed : t[k].seeds);
    lab_sched_machine host;
    lab_sched_probe(&host);
    fprintf(report, "\n%zu cases in %.2f s (%.1f cases/s, %d jobs): %s\n", n, wall, wall > 0 ? n / wall : 0.0,
            lab_sched_workers(&host, opts->backend, opts->jobs, NULL, 0), v.line);
    char resume[2048] = "";
    if (sig) {
        lab_replay_resume_cmd(opts, recs_all, n_all, resume, sizeof resume);
        fprintf(report, "INTERRUPTED by %s: %zu of %zu cases finished and are kept (NOT OK)\nresume: %s\n",
                sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal", n, n_all, resume);
    }

    if (opts->out_dir) {
        /* The whole set goes to a fresh folder beside out_dir, then replaces it in one swap. */
        char stage[PATH_MAX], path[PATH_MAX + 32];
        st2 = lab_replay_stage(opts->out_dir, stage, sizeof stage);
        int staged = st2 == LAB_OK;
        lab_stall_point(LAB_STALL_WRITING);
        /* Written twice only when an interrupt comes after the verdict (while writing or plotting): every case had
         * finished and is kept, and the set is rewritten with the verdict of an interrupted run (NOT OK, 130/143),
         * the plots left as far as they got. */
        for (int pass = 0; pass < 2 && st2 == LAB_OK; ++pass) {
            snprintf(path, sizeof path, "%s/results.jsonl", stage);
            if (st2 == LAB_OK) st2 = lab_results_write_jsonl(path, recs, n, opts->lab_bin);
            snprintf(path, sizeof path, "%s/summary.json", stage);
            if (st2 == LAB_OK) st2 = lab_results_write_summary(path, t, nt, lab_backend_name(opts->backend), n, wall, &v);
            if (st2 == LAB_OK && (sig || opts->summary_fields)) st2 = lab_replay_amend_summary(stage, opts, sig, n_all, resume);
            snprintf(path, sizeof path, "%s/junit.xml", stage);
            if (st2 == LAB_OK) st2 = lab_results_write_junit(path, recs, n, t, nt, &v, opts->lab_bin);
            snprintf(path, sizeof path, "%s/results.tap", stage);
            if (st2 == LAB_OK && opts->tap) st2 = lab_results_write_tap(path, recs, n, t, nt, &v, opts->lab_bin);
            if (st2 == LAB_OK && opts->plots && pass == 0 && !lab_isolate_interrupted()) {
                int npng = 0;
                lab_status sp = lab_plot_results(stage, opts->root, report, &npng);
                if (sp == LAB_OK) fprintf(report, "plots: %d PNG in %s/plots\n", npng, opts->out_dir);
                else fprintf(report, "plots: %s\n", lab_err_msg()); /* a missing gnuplot does not fail the replay */
                st2 = LAB_OK;
            }
            if (sig || !lab_isolate_interrupted()) break;
            sig = lab_isolate_interrupted();
            run.interrupted = sig;
            v = lab_verdict_decide(t, nt, recs, n, &run);
            snprintf(resume, sizeof resume, "(none: every case finished)");
            fprintf(report, "INTERRUPTED by %s while writing the result set: all %zu cases finished and are kept (NOT "
                            "OK)%s\n", sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal", n,
                    opts->plots ? "; the plots as far as they got" : "");
        }
        if (st2 == LAB_OK) st2 = lab_replay_swap(stage, opts->out_dir);
        if (st2 != LAB_OK && staged) {
            char keep[512];
            snprintf(keep, sizeof keep, "%s", lab_err_msg());
            lab_replay_rmrf(stage);
            lab_err_set(st2, "%s", keep);
        }
        if (st2 == LAB_OK) fprintf(report, "wrote %s/{results.jsonl,summary.json,junit.xml%s}\n", opts->out_dir, opts->tap ? ",results.tap" : "");
    }
    free(t);
    if (recs != recs_all) free(recs);
    *verdict = v;
    return st2;
}

/* ---- Windowed replays: a replay of more cases than LAB_REPLAY_WINDOW_AT (or $LAB_REPLAY_WINDOW) runs its cases a
 * window at a time (lab_replay.h), holding records and outcomes only for the window's cases. ---- */

/* $LAB_REPLAY_WINDOW as a positive count of cases, else 0. */
static size_t lab_replay_window_env(void)
{
    const char *e = getenv("LAB_REPLAY_WINDOW");
    if (!e || !*e) return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(e, &end, 10);
    return errno == 0 && *end == 0 && v > 0 ? (size_t)v : 0;
}

size_t lab_replay_window_at(void)
{
    size_t w = lab_replay_window_env();
    return w ? w : LAB_REPLAY_WINDOW_AT;
}

size_t lab_replay_window(const lab_replay_opts *opts)
{
    size_t w = lab_replay_window_env();
    if (w) return w;
    return opts->backend == LAB_BACKEND_CUDA ? LAB_REPLAY_WINDOW_CUDA : LAB_REPLAY_WINDOW_CPU;
}

/* What a windowed replay keeps of its finished cases: the running tallies, the failing cases the console shows
 * (at most LAB_REPLAY_SHOWN a variant, its first in canonical order) and per variant (tally) spool files that hold
 * its results.jsonl lines, TAP points and JUnit testcases in canonical order (unlinked at once: they live while
 * open). */
#define LAB_REPLAY_SHOWN 20
typedef struct {
    const lab_replay_opts *opts;
    lab_verdict_tally *t;
    size_t nt, cap, nf;
    FILE **jl, **tp, **ju;
    lab_case_record **fail;
    size_t *nfail;
    size_t n_done, lowest;
    char stage[PATH_MAX];
    int staged;
} lab_replay_win;

static FILE *lab_replay_spool(const lab_replay_win *w, size_t k, const char *what)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/.spool-%zu.%s", w->stage, k, what);
    FILE *f = fopen(path, "w+");
    if (f) unlink(path);
    else lab_err_set(LAB_ERR_IO, "%s: %s", path, strerror(errno));
    return f;
}

/* Keeps one finished case: its tally, its lines in the spools, and (failing) the console's list. */
static lab_status lab_replay_win_keep(lab_replay_win *w, const lab_case_record *rec)
{
    size_t k;
    lab_status st = lab_verdict_tally_add(&w->t, &w->nt, &w->cap, rec, &k);
    if (st != LAB_OK) return st;
    if (k >= w->nf) {
        size_t nf = w->nt;
        FILE **jl = realloc(w->jl, nf * sizeof *jl);
        if (jl) w->jl = jl;
        FILE **tp = realloc(w->tp, nf * sizeof *tp);
        if (tp) w->tp = tp;
        FILE **ju = realloc(w->ju, nf * sizeof *ju);
        if (ju) w->ju = ju;
        lab_case_record **fail = realloc(w->fail, nf * sizeof *fail);
        if (fail) w->fail = fail;
        size_t *nfail = realloc(w->nfail, nf * sizeof *nfail);
        if (nfail) w->nfail = nfail;
        if (!jl || !tp || !ju || !fail || !nfail) return lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
        for (; w->nf < nf; ++w->nf) {
            w->jl[w->nf] = w->tp[w->nf] = w->ju[w->nf] = NULL;
            w->fail[w->nf] = NULL;
            w->nfail[w->nf] = 0;
        }
        if (w->opts->out_dir) {
            if (!(w->jl[k] = lab_replay_spool(w, k, "jsonl")) || !(w->ju[k] = lab_replay_spool(w, k, "xml")) ||
                (w->opts->tap && !(w->tp[k] = lab_replay_spool(w, k, "tap"))))
                return LAB_ERR_IO;
        }
    }
    if (w->jl[k]) {
        int good = lab_results_jsonl_line(w->jl[k], rec, w->opts->lab_bin) && lab_results_junit_case(w->ju[k], rec, w->opts->lab_bin);
        /* a TAP point's number is its place among the finished cases, known when the file is written: marked here */
        if (good && w->tp[k]) good = fputc('\001', w->tp[k]) != EOF && lab_results_tap_case(w->tp[k], rec, 0, w->opts->lab_bin);
        if (!good) return lab_err_set(LAB_ERR_IO, "%s: cannot write a spool file: %s", w->stage, strerror(errno));
    }
    if (lab_verdict_case_ok(rec) == 0 && w->nfail[k] < LAB_REPLAY_SHOWN) {
        if (!w->fail[k] && !(w->fail[k] = malloc(LAB_REPLAY_SHOWN * sizeof *w->fail[k])))
            return lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
        w->fail[k][w->nfail[k]++] = *rec;
    }
    w->n_done++;
    return LAB_OK;
}

static void lab_replay_win_free(lab_replay_win *w)
{
    for (size_t k = 0; k < w->nf; ++k) {
        if (w->jl[k]) fclose(w->jl[k]);
        if (w->tp[k]) fclose(w->tp[k]);
        if (w->ju[k]) fclose(w->ju[k]);
        free(w->fail[k]);
    }
    free(w->jl), free(w->tp), free(w->ju), free(w->fail), free(w->nfail), free(w->t);
}

/* Appends spool f (from its start) to out; with tap set, numbers its marked TAP points from *number on. */
static int lab_replay_unspool(FILE *f, FILE *out, size_t *number)
{
    if (fflush(f) != 0 || fseek(f, 0, SEEK_SET) != 0) return 0;
    int good = 1;
    if (!number) {
        char buf[1 << 16];
        size_t r;
        while (good && (r = fread(buf, 1, sizeof buf, f)) > 0) good = fwrite(buf, 1, r, out) == r;
        good = good && !ferror(f);
    } else {
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        while (good && (len = getline(&line, &cap, f)) > 0) {
            if (line[0] == '\001') {
                /* "\001ok 0 - ..." or "\001not ok 0 - ...": the same point with its number */
                const char *rest = strstr(line, " 0 - ");
                int ok = !strncmp(line + 1, "ok", 2);
                good = rest && fprintf(out, "%s %zu%s", ok ? "ok" : "not ok", ++*number, rest + 2) >= 0;
            } else {
                good = fwrite(line, 1, (size_t)len, out) == (size_t)len;
            }
        }
        free(line);
    }
    fseek(f, 0, SEEK_END);
    return good;
}

/* Writes one file of the staged set: a head, every tally's spool, a tail. */
typedef int (*lab_replay_part_fn)(FILE *f, const lab_replay_win *w, const lab_verdict *v);
static lab_status lab_replay_win_file(const lab_replay_win *w, const char *name, FILE **spools, int numbered,
                                      lab_replay_part_fn head, lab_replay_part_fn tail, const lab_verdict *v)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", w->stage, name);
    FILE *f = fopen(path, "w");
    if (!f) return lab_err_set(LAB_ERR_IO, "%s: %s", path, strerror(errno));
    int good = !head || head(f, w, v);
    size_t number = 0;
    for (size_t k = 0; good && k < w->nt; ++k) good = lab_replay_unspool(spools[k], f, numbered ? &number : NULL);
    if (good && tail) good = tail(f, w, v);
    good &= fclose(f) == 0;
    return good ? LAB_OK : lab_err_set(LAB_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
}

static int lab_replay_tap_head(FILE *f, const lab_replay_win *w, const lab_verdict *v)
{
    (void)v;
    return lab_results_tap_head(f, w->n_done, w->nt);
}
static int lab_replay_tap_tail(FILE *f, const lab_replay_win *w, const lab_verdict *v)
{
    return lab_results_tap_tail(f, w->n_done, w->t, w->nt, v);
}
static int lab_replay_junit_head(FILE *f, const lab_replay_win *w, const lab_verdict *v)
{
    size_t bad = 0, neutral = 0;
    for (size_t k = 0; k < w->nt; ++k) bad += w->t[k].cases_not_ok, neutral += w->t[k].cases_neutral;
    return lab_results_junit_head(f, w->n_done, bad, neutral, w->t, w->nt, v);
}
static int lab_replay_junit_tail(FILE *f, const lab_replay_win *w, const lab_verdict *v)
{
    return lab_results_junit_tail(f, w->t, w->nt, v);
}

/* The plots of a windowed replay: from results.jsonl itself up to LAB_REPLAY_PLOT_MAX cases, else from a sample of
 * every step-th case of each variant (said on the report), written to a folder of its own and moved in. */
static void lab_replay_win_plots(const lab_replay_win *w, FILE *report)
{
    const lab_replay_opts *opts = w->opts;
    int npng = 0;
    if (w->n_done <= LAB_REPLAY_PLOT_MAX) {
        if (lab_plot_results(w->stage, opts->root, report, &npng) == LAB_OK)
            fprintf(report, "plots: %d PNG in %s/plots\n", npng, opts->out_dir);
        else
            fprintf(report, "plots: %s\n", lab_err_msg());
        return;
    }
    size_t step = (w->n_done + LAB_REPLAY_PLOT_MAX - 1) / LAB_REPLAY_PLOT_MAX, kept = 0;
    char dir[PATH_MAX + 32], path[PATH_MAX + 64], from[PATH_MAX + 64], to[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/.plot-sample", w->stage);
    snprintf(path, sizeof path, "%s/results.jsonl", dir);
    FILE *f = mkdir(dir, 0777) == 0 ? fopen(path, "w") : NULL;
    int good = f != NULL;
    char *line = NULL;
    size_t cap = 0;
    for (size_t k = 0; good && k < w->nt; ++k) {
        FILE *s = w->jl[k];
        if (fflush(s) != 0 || fseek(s, 0, SEEK_SET) != 0) good = 0;
        ssize_t len;
        for (size_t i = 0; good && (len = getline(&line, &cap, s)) > 0; ++i)
            if (i % step == 0) good = fwrite(line, 1, (size_t)len, f) == (size_t)len, kept++;
        fseek(s, 0, SEEK_END);
    }
    free(line);
    if (f) good &= fclose(f) == 0;
    snprintf(from, sizeof from, "%s/plots", dir);
    snprintf(to, sizeof to, "%s/plots", w->stage);
    if (good && lab_plot_results(dir, opts->root, report, &npng) == LAB_OK && rename(from, to) == 0)
        fprintf(report, "plots: %d PNG in %s/plots, drawn from a sample: every %zu-th case of each variant, %zu of %zu "
                        "cases (the plots are decimated; results.jsonl holds every case)\n",
                npng, opts->out_dir, step, kept, w->n_done);
    else
        fprintf(report, "plots: %s\n", good ? lab_err_msg() : "cannot write the sample of results.jsonl to plot");
    lab_replay_rmrf(dir);
}

/* Runs recs[0..n) of one window, its progress counted among `total` from `base` on. */
static lab_status lab_replay_execute_window(const lab_replay_opts *opts, lab_case_record *recs, size_t n, size_t base,
                                            size_t total, size_t *bad, double t0, int quiet)
{
    lab_replay_ctx ctx;
    lab_replay_ctx_init(&ctx, opts, recs, n, t0);
    ctx.base = base;
    ctx.total = total;
    ctx.base_bad = *bad;
    ctx.quiet_sched = quiet;
    lab_status st = lab_replay_execute(&ctx);
    *bad += ctx.bad;
    return st;
}

static lab_status lab_replay_run_windowed(const lab_replay_opts *opts, FILE *report, lab_verdict *verdict,
                                          size_t planned)
{
    lab_replay_win w;
    memset(&w, 0, sizeof w);
    w.opts = opts;
    w.lowest = opts->n_seeds;
    lab_status st = LAB_OK;
    if (opts->out_dir && (st = lab_fs_mkdirs(opts->out_dir)) != LAB_OK) return st;
    /* The set is written into its staging folder as the cases finish, then swapped in as a whole (lab_replay_swap). */
    if (opts->out_dir && (st = lab_replay_stage(opts->out_dir, w.stage, sizeof w.stage)) != LAB_OK) return st;
    w.staged = opts->out_dir != NULL;
    size_t window = lab_replay_window(opts), bad = 0, started = 0;
    double t0 = lab_replay_now();
    lab_stall_point(LAB_STALL_PLANNING);
    lab_status run_st = LAB_OK;
    lab_case_record *recs = NULL;
    size_t recs_cap = 0;
    if (opts->progress)
        fprintf(stderr, "replay: %zu cases, run %zu at a time (a window: only its cases are held in memory)\n", planned,
                window);
    for (size_t i = 0; i < opts->n_incidents && run_st == LAB_OK && st == LAB_OK; ++i) {
        const lab_incident *inc = opts->incidents[i];
        size_t nv = lab_replay_n_variants(opts, inc), ns = lab_replay_n_seeds(opts, inc);
        if (!nv || !ns) continue;
        size_t per = window / nv ? window / nv : 1; /* seeds a window: every selected variant of each */
        for (size_t s0 = 0; s0 < ns && run_st == LAB_OK && st == LAB_OK; s0 += per) {
            if (lab_isolate_interrupted()) {
                if (s0 < w.lowest) w.lowest = s0; /* this window and every later one did not start */
                break;
            }
            size_t s1 = s0 + per < ns ? s0 + per : ns, m = 0;
            if ((s1 - s0) * nv > recs_cap) { /* incidents differ in their variants: the largest window so far */
                free(recs);
                recs_cap = (s1 - s0) * nv;
                if (!(recs = malloc(recs_cap * sizeof *recs))) {
                    st = lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
                    break;
                }
            }
            memset(recs, 0, (s1 - s0) * nv * sizeof *recs);
            for (int v = 0; v < inc->n_variants; ++v) {
                const lab_variant *var = &inc->variants[v];
                if (opts->variant && strcmp(opts->variant, var->name) != 0) continue;
                for (size_t s = s0; s < s1; ++s) {
                    recs[m].incident = inc;
                    recs[m].variant = var;
                    recs[m].seed = opts->seeds[s];
                    recs[m].backend = opts->backend;
                    m++;
                }
            }
            run_st = lab_replay_execute_window(opts, recs, m, started, planned, &bad, t0, started > 0);
            started += m;
            for (size_t j = 0; j < m && st == LAB_OK; ++j) {
                if (recs[j].o.not_run) {
                    size_t s = s0 + j % (s1 - s0);
                    if (s < w.lowest) w.lowest = s;
                    continue;
                }
                st = lab_replay_win_keep(&w, &recs[j]);
            }
        }
        if (lab_isolate_interrupted() && i + 1 < opts->n_incidents) w.lowest = 0; /* later incidents never ran */
    }
    free(recs);
    if (run_st != LAB_OK) fprintf(report, "replay: %s (the cases not started are not in the set)\n", lab_err_msg());
    double wall = lab_replay_now() - t0;

    /* The report, as lab_replay_report's, from the tallies and spools. */
    if (st == LAB_OK) {
        lab_stall_point(LAB_STALL_COLLECTING);
        int sig = lab_isolate_interrupted();
        lab_verdict_tally_judge(w.t, w.nt);
        lab_verdict_run run = {.harness_failed = run_st != LAB_OK, .interrupted = sig, .cases_planned = planned};
        lab_verdict v = lab_verdict_decide_tallies(w.t, w.nt, &run);
        lab_replay_table(report, w.t, w.nt);
        size_t shown = 0, not_ok = 0;
        for (size_t k = 0; k < w.nt; ++k) {
            not_ok += w.t[k].cases_not_ok;
            for (size_t j = 0; j < w.nfail[k] && shown < LAB_REPLAY_SHOWN; ++j, ++shown) {
                const lab_case_record *r = &w.fail[k][j];
                char cmd[512];
                lab_results_replay_cmd(r, opts->lab_bin, cmd, sizeof cmd);
                const char *label = r->variant->role == LAB_ROLE_FIX ? "REGRESSED"
                                    : r->o.outcome == LAB_OUT_PASS   ? "XPASS"
                                                                     : lab_outcome_name(r->o.outcome);
                fprintf(report, "%s %s/%s seed %llu: %s%s%s%s%s\n  replay: %s%s%s\n", label, r->incident->id,
                        r->variant->name, (unsigned long long)r->seed, lab_outcome_name(r->o.outcome),
                        r->o.r.detail[0] || r->o.error[0] ? ": " : "", r->o.r.detail,
                        r->o.r.detail[0] && r->o.error[0] ? "; " : "", r->o.error, cmd,
                        opts->sanitize ? " --sanitize " : "", opts->sanitize ? opts->sanitize : "");
            }
        }
        if (not_ok > LAB_REPLAY_SHOWN) fprintf(report, "... and %zu more (see results.jsonl)\n", not_ok - LAB_REPLAY_SHOWN);
        for (size_t k = 0; k < w.nt; ++k)
            if (w.t[k].kind == LAB_VERDICT_RATE_BELOW || w.t[k].kind == LAB_VERDICT_TOO_FEW_SEEDS)
                fprintf(report, "%s/%s: %s\n  replay: %s replay --incident %s --variant %s --seeds %zu\n",
                        w.t[k].incident->id, w.t[k].variant->name, w.t[k].verdict, opts->lab_bin, w.t[k].incident->id,
                        w.t[k].variant->name, w.t[k].seeds_needed > w.t[k].seeds ? w.t[k].seeds_needed : w.t[k].seeds);
        lab_sched_machine host;
        lab_sched_probe(&host);
        size_t n = w.n_done;
        fprintf(report, "\n%zu cases in %.2f s (%.1f cases/s, %d jobs): %s\n", n, wall, wall > 0 ? n / wall : 0.0,
                lab_sched_workers(&host, opts->backend, opts->jobs, NULL, 0), v.line);
        char resume[2048] = "";
        if (sig) {
            lab_replay_resume_at(opts, w.lowest, resume, sizeof resume);
            fprintf(report, "INTERRUPTED by %s: %zu of %zu cases finished and are kept (NOT OK)\nresume: %s\n",
                    sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal", n, planned, resume);
        }
        if (opts->out_dir) {
            lab_stall_point(LAB_STALL_WRITING);
            char path[PATH_MAX + 32];
            for (int pass = 0; pass < 2 && st == LAB_OK; ++pass) {
                if (pass == 0) st = lab_replay_win_file(&w, "results.jsonl", w.jl, 0, NULL, NULL, &v);
                snprintf(path, sizeof path, "%s/summary.json", w.stage);
                if (st == LAB_OK) st = lab_results_write_summary(path, w.t, w.nt, lab_backend_name(opts->backend), n, wall, &v);
                if (st == LAB_OK && (sig || opts->summary_fields)) st = lab_replay_amend_summary(w.stage, opts, sig, planned, resume);
                if (st == LAB_OK) st = lab_replay_win_file(&w, "junit.xml", w.ju, 0, lab_replay_junit_head, lab_replay_junit_tail, &v);
                if (st == LAB_OK && opts->tap)
                    st = lab_replay_win_file(&w, "results.tap", w.tp, 1, lab_replay_tap_head, lab_replay_tap_tail, &v);
                if (st == LAB_OK && opts->plots && pass == 0 && !lab_isolate_interrupted()) lab_replay_win_plots(&w, report);
                if (sig || !lab_isolate_interrupted()) break;
                sig = lab_isolate_interrupted();
                run.interrupted = sig;
                v = lab_verdict_decide_tallies(w.t, w.nt, &run);
                snprintf(resume, sizeof resume, "(none: every case finished)");
                fprintf(report, "INTERRUPTED by %s while writing the result set: all %zu cases finished and are kept "
                                "(NOT OK)%s\n", sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal", n,
                        opts->plots ? "; the plots as far as they got" : "");
            }
            if (st == LAB_OK) st = lab_replay_swap(w.stage, opts->out_dir);
            if (st == LAB_OK) {
                w.staged = 0;
                fprintf(report, "wrote %s/{results.jsonl,summary.json,junit.xml%s}\n", opts->out_dir, opts->tap ? ",results.tap" : "");
            }
        }
        *verdict = v;
    }
    if (w.staged) {
        char keep[512];
        snprintf(keep, sizeof keep, "%s", lab_err_msg());
        lab_replay_rmrf(w.stage);
        if (st != LAB_OK) lab_err_set(st, "%s", keep);
    }
    lab_replay_win_free(&w);
    return st != LAB_OK ? st : run_st;
}
