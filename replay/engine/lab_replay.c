/* lab_replay: runs (incident, variant, seed) cases in isolation on all cores and reports them. The fed execution is
 * lab_replay_fed.c, the windowed replay lab_window.c, the report lab_replay_report.c, the result set's staging and
 * swap lab_resultset.c; what they share with this file is lab_replay_int.h. */
#define _GNU_SOURCE
#include "lab_replay.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lab_asan.h"
#include "lab_clock.h"
#include "lab_ctxgate.h"
#include "lab_device.h"
#include "lab_fs.h"
#include "lab_journal.h"
#include "lab_phase.h"
#include "lab_replay_int.h"
#include "lab_resume.h"
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
int lab_replay_poolable(const lab_replay_opts *opts, const lab_sched_plan *p)
{
    return !opts->what.sanitize && p->gpus_per_worker == 1 && !p->exclusive && !p->gpus_missing;
}

/* The health rule: once the replay's probe made a context on the GPU (opts->how.device_ok), a CUDA case that finds no
 * usable device lost it mid-replay (an MPS server that will not serve, a device that fell off the bus): ERROR with
 * the cause, never the neutral SKIP that would let a fix pass unjudged. */
static lab_status lab_replay_health(const lab_replay_opts *opts, const lab_case *c, lab_case_result *r)
{
    if (!opts->how.device_ok || c->backend != LAB_BACKEND_CUDA || !r->skipped || r->skip_class != LAB_SKIP_NEEDS_GPU)
        return LAB_OK;
    return lab_err_set(LAB_ERR_DEVICE, "device lost: the replay's probe used a CUDA device, this case found none (%s)",
                       r->detail);
}

/* A pool worker's first CUDA job: its context, made through the replay's gate (lab_ctxgate.h) before the case runs.
 * What the probe says is not used here: the case's own probe, a moment later, judges it. */
static void lab_replay_warm(const lab_ctxgate *gate, int lane)
{
    if (gate->lanes < 1) return;
    char why[240];
    int took = lab_ctxgate_enter(gate, lane, 10.0);
#ifdef LAB_HAVE_CUDA
    (void)(lab_replay_probe ? lab_replay_probe(why, sizeof why) : lab_cuda_ready(why, sizeof why));
#else
    if (lab_replay_probe) (void)lab_replay_probe(why, sizeof why);
#endif
    lab_ctxgate_leave(gate, lane, took);
}

/* A worker's start: its GPU (lab_sched_bind), its MPS daemon or none, the replay's device probe, and in a pool of
 * CUDA workers its context, made through its GPU's lane of the gate. The pool runs it before the worker takes any work
 * (lab_isolate_run_pool's init); elsewhere the worker's first job does. */
void lab_replay_worker_init(void *vctx)
{
    lab_replay_ctx *ctx = vctx;
    int slot = lab_isolate_worker_slot(), gpu = ctx->machine.ngpu > 0 ? slot % ctx->machine.ngpu : 0;
    lab_sched_bind(&ctx->machine, &ctx->plan, slot);
    if (ctx->plan.gpus_per_worker > 0) /* a client of its GPU's MPS daemon, or (multi-GPU cases) of none */
        lab_mps_client(ctx->opts->how.mps,
                       lab_replay_poolable(ctx->opts, &ctx->plan) && ctx->machine.ngpu > 0 ? gpu : -1);
    lab_replay_probe = ctx->opts->how.device_probe;
    ctx->bound = 1;
    if (ctx->opts->what.backend == LAB_BACKEND_CUDA) lab_replay_warm(&ctx->gate, gpu);
    lab_phase("worker ready");
}

lab_status lab_replay_job(void *vctx, size_t job, lab_case_result *r)
{
    lab_replay_ctx *ctx = vctx;
    const lab_case_record *rec = &ctx->recs[ctx->order[ctx->offset + job]];
    memset(r, 0, sizeof *r);
    if (!ctx->bound) lab_replay_worker_init(ctx);
    lab_case c;
    char gdir[4096];
    lab_case_init(&c, rec->incident, rec->variant, rec->seed, rec->backend, ctx->opts->how.root, gdir, sizeof gdir);
    /* In an AddressSanitizer build this worker makes an ASan report its case's result: allocate exactly. */
    c.exact_alloc = lab_asan_active();
    if (ctx->opts->what.sanitize) {
        lab_status st = lab_sanitize_case(&c, ctx->opts->what.sanitize, ctx->opts->how.lab_bin, r);
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

/* Outside a terminal, the least time between two progress lines. */
#define LAB_REPLAY_PROGRESS_S 10.0

void lab_replay_done(void *vctx, size_t job, const lab_job_outcome *o)
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
    if (ctx->opts->how.progress && !o->not_run) {
        static int tty = -1;
        static double last_line = 0;
        if (tty < 0) tty = isatty(STDERR_FILENO);
        double now = lab_clock_now(), el = now - ctx->t0;
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
    lab_replay_kept(ctx, index, c);
}

double lab_replay_watchdog(const lab_replay_opts *opts, const lab_incident *inc)
{
    double timeout = inc->timeout_s > 0 ? inc->timeout_s : opts->what.timeout_s;
    if (opts->what.timeout_s > 0 && opts->what.timeout_s < timeout) timeout = opts->what.timeout_s; /* --timeout caps */
    if (timeout <= 0) timeout = 60; /* lab_isolate_run's own default */
    return opts->what.sanitize ? 20 * timeout : timeout; /* instrumented kernels run far slower */
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

size_t lab_replay_order(const lab_case_record *recs, size_t start, size_t end, size_t *order)
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
double lab_replay_job_timeout(void *vctx, size_t job)
{
    lab_replay_ctx *ctx = vctx;
    size_t pos = ctx->offset + job;
    double t = lab_replay_watchdog(ctx->opts, ctx->recs[ctx->order[pos]].incident);
    /* a seed batch's leader runs the whole batch: the time its cases would have had one by one */
    return ctx->lead && ctx->lead[pos] > 1 ? t * ctx->lead[pos] : t;
}


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
 * that no chunk is the replay's long pole (a fed share of a larger run: the whole run's share and GPU count, so that
 * its chunks are a plain replay's of that run, not cut smaller for each smaller answer of its feed). A chunk's variants stay one run: their batches share the seeds' groups
 * (made once in the worker); a run per batch made every worker remake them, and 1000 seeds of the GPU incidents took
 * 4.4x the CPU for 0008 (591 s against 135 s) and 66 s on one H200 where 33-34 s was the rule on hosts of that kind
 * (docs/performance.md). The other parts' groups are dealt into LAB_SCHED_SHARES_PER_WORKER x workers runs, run
 * k holding the k-th slice of every such part, so one process runs its slice of every incident in one CUDA context.
 * The runs are laid out with the incidents taking turns, each one's runs costliest first, the runs costing half a
 * worker's fair share or more (LAB_SCHED_LEAD_SHARE) ahead of the rest (lab_sched_order_runs on the incidents' declared costs,
 * lab_sched_case_cost; a part's chunks one kind, the shares another): lab_isolate_run_ranges hands them to workers as
 * they free up, so the long runs start first, beside other incidents' work, and the short ones fill in behind, instead
 * of each worker owning a fixed share whatever the others have left. */
lab_status lab_replay_pool_layout(lab_replay_ctx *ctx, size_t base, const lab_replay_part *parts, size_t np,
                                  int workers, size_t **bounds_out, size_t *nranges)
{
    if (workers < 1) workers = 1;
    size_t total = parts[np - 1].end - base, k = 0, nr = 0, shares = LAB_SCHED_SHARES_PER_WORKER * (size_t)workers;
    size_t cap_r = total + shares + 1; /* every run holds at least one job, but the shares may be empty */
    size_t *tmp = malloc((total ? total : 1) * sizeof *tmp);
    unsigned *tlead = malloc((total ? total : 1) * sizeof *tlead);
    lab_seedbatch_plan *sp = calloc(np, sizeof *sp);
    size_t *rs = malloc(cap_r * sizeof *rs), *rl = malloc(cap_r * sizeof *rl), *ri = malloc(cap_r * sizeof *ri);
    double *rc = malloc(cap_r * sizeof *rc); /* run r: tmp[rs[r] .. + rl[r]), cost rc[r], of kind rk[r] */
    size_t *rk = malloc(cap_r * sizeof *rk);
    size_t *bounds = malloc((cap_r + 1) * sizeof *bounds);
    lab_status st = tmp && tlead && sp && rs && rl && ri && rc && rk && bounds ? LAB_OK : lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
    double fair = ctx->run_fair > 0.0 ? ctx->run_fair : st == LAB_OK ? lab_replay_cost(ctx, ctx->order + base, total) / workers : 0.0;
    int gpus = ctx->run_fair > 0.0 && ctx->opts->how.run_gpus > 0 ? ctx->opts->how.run_gpus : ctx->machine.ngpu;
    for (size_t i = 0; i < np && st == LAB_OK; ++i) {
        const lab_replay_opts *o = ctx->opts;
        const lab_replay_part *pt = &parts[i];
        unsigned bmax = lab_seedbatch_size(ctx->recs[ctx->order[pt->start]].incident, o->what.backend,
                                           o->what.sanitize != NULL, o->how.batch_seeds);
        if (bmax < 2) continue;
        /* a chunk of bmax seeds costs at most bmax of the part's costliest group: no more than `fair` */
        double group = 0.0;
        for (size_t g = pt->start; g < pt->end; g += pt->group_size) {
            double c = lab_replay_cost(ctx, ctx->order + g, g + pt->group_size <= pt->end ? pt->group_size : pt->end - g);
            group = c > group ? c : group;
        }
        st = lab_seedbatch_plan_make(ctx->recs, ctx->order, pt->start, pt->end, lab_sched_chunk_seeds(bmax, group, fair, gpus), &sp[i]);
        for (size_t c = 0; c < sp[i].n_chunks && st == LAB_OK; ++c) {
            size_t a = sp[i].chunk_start[c], e = sp[i].chunk_start[c + 1];
            rs[nr] = k, rl[nr] = e - a, rk[nr] = i, rc[nr++] = lab_replay_cost(ctx, sp[i].jobs + a, e - a);
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
        if (k > from) rs[nr] = from, rl[nr] = k - from, rk[nr] = np, rc[nr++] = lab_replay_cost(ctx, tmp + from, k - from);
    }
    if (st == LAB_OK) st = lab_sched_order_runs(rc, rk, np + 1, nr, fair * LAB_SCHED_LEAD_SHARE, ri);
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
    free(tmp), free(tlead), free(sp), free(rs), free(rl), free(ri), free(rc), free(rk), free(bounds);
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

/* Opens the pool's context gate (lab_ctxgate.h) for its CUDA workers, a lane a GPU; when it cannot, says so and lets
 * them make their contexts all at once. */
void lab_replay_gate_open(lab_replay_ctx *ctx)
{
    int width = ctx->opts->how.ctx_gate > 0 ? ctx->opts->how.ctx_gate : LAB_CTXGATE_WIDTH;
    int lanes = ctx->machine.ngpu > 0 ? ctx->machine.ngpu : 1;
    if (ctx->opts->what.backend == LAB_BACKEND_CUDA && lab_ctxgate_open(&ctx->gate, width, lanes) != LAB_OK)
        fprintf(stderr, "replay: %s; the workers make their contexts all at once\n", lab_err_msg());
}

/* Stops the replay's MPS daemon (opts->how.mps) before cases that must not be its clients: from here on workers make
 * plain contexts. Says so once, on the progress stream. */
void lab_replay_leave_mps(lab_replay_ctx *ctx, const char *who)
{
    lab_mps *m = ctx->opts->how.mps;
    if (!m || !m->running) return;
    lab_mps_stop(m);
    if (ctx->opts->how.progress)
        fprintf(stderr, "cuda: MPS daemon stopped: %s run outside it, each on GPUs of its own\n", who);
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
    lab_replay_kept(ctx, ctx->order[job], c);
}

/* The cases of a CUDA replay whose device was usable (opts->how.device_ok) that ended ERROR with a device cause are run
 * once more, after the pool, outside MPS, one case at a time on each GPU (a multi-GPU case on GPUs of its own), so
 * that a fault of a neighbour, or an MPS server that stopped serving, never decides a case: the rerun's outcome is
 * the case's, the first run recorded beside it. A case that fails alone too keeps its ERROR. */
lab_status lab_replay_rerun(lab_replay_ctx *ctx, lab_job_outcome *out)
{
    const lab_replay_opts *opts = ctx->opts;
    if (opts->what.backend != LAB_BACKEND_CUDA || !opts->how.device_ok || opts->what.sanitize ||
        lab_isolate_interrupted())
        return LAB_OK;
    size_t m = 0;
    for (size_t i = 0; i < ctx->n; ++i) {
        const lab_case_record *r = &ctx->recs[i];
        m += r->o.outcome == LAB_OUT_ERROR && !r->o.not_run && lab_replay_device_cause(r->o.error);
    }
    if (m == 0) return LAB_OK;
    lab_replay_leave_mps(ctx, "cases that met a device error");
    if (opts->how.progress)
        fprintf(stderr, "rerunning %zu case%s that met a device error, alone on their GPUs\n", m, m == 1 ? "" : "s");
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
            ctx->plan = lab_sched_plan_incident(&ctx->machine, inc, opts->what.backend, k, 1, opts->how.jobs);
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
void lab_replay_ctx_init(lab_replay_ctx *ctx, const lab_replay_opts *opts, lab_case_record *recs, size_t n,
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
void lab_replay_ctx_told(lab_replay_ctx *ctx, const lab_replay_opts *opts, lab_case_record *recs, size_t n,
                         lab_replay_done_fn done, void *done_ctx)
{
    lab_replay_ctx_init(ctx, opts, recs, n, lab_clock_now());
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

void lab_replay_setup_free(lab_replay_ctx *ctx, lab_replay_setup *s)
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
lab_status lab_replay_setup_make(lab_replay_ctx *ctx, int shared, lab_replay_setup *s)
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
    lab_device_machine(&ctx->machine);
    if (opts->how.progress && !ctx->quiet_sched) {
        char said[320];
        int w = lab_replay_workers(opts, &ctx->machine, said, sizeof said);
        fprintf(stderr, "scheduler: %d workers (%s)\n", w, said);
        if (opts->what.backend == LAB_BACKEND_CUDA)
            fprintf(stderr, "scheduler: %d GPU%s from %s\n", ctx->machine.ngpu, ctx->machine.ngpu == 1 ? "" : "s", ctx->machine.source);
    }
    for (size_t i = 0, start = 0; i < s->np; ++i) {
        const lab_incident *inc = ctx->recs[start].incident;
        size_t end = start;
        while (end < ctx->n && ctx->recs[end].incident == inc) ++end;
        size_t gs = lab_replay_order(ctx->recs, start, end, ctx->order);
        s->parts[i] = (lab_replay_part){start, end, gs, (end - start + gs - 1) / gs};
        s->plans[i] =
            lab_sched_plan_incident(&ctx->machine, inc, opts->what.backend, s->parts[i].n_groups, gs, opts->how.jobs);
        if (opts->what.sanitize) s->plans[i].batch = 1; /* each case is its own compute-sanitizer process anyway */
        start = end;
    }
    return LAB_OK;
}

int lab_replay_workers(const lab_replay_opts *opts, const lab_machine *m, char *said, size_t len)
{
    char note[200], rule[80] = "";
    int w = lab_sched_workers(m, opts->what.backend, opts->how.jobs, note, sizeof note);
    if (opts->how.jobs > 0) snprintf(rule, sizeof rule, "-j %d", opts->how.jobs);
    else if (opts->what.backend == LAB_BACKEND_CUDA && m->ngpu > 0)
        snprintf(rule, sizeof rule, "default: %d a GPU and at least %d, at most the CPUs", LAB_SCHED_GPU_WORKERS,
                 LAB_SCHED_HOST_WORKERS);
    else snprintf(rule, sizeof rule, "default: one a CPU");
    snprintf(said, len, "%s; %d CPUs: %s%s%s", rule, m->ncpu, m->cpu_source, note[0] ? "; " : "", note);
    return w;
}

/* Jobs [a, b) of the run in progress SKIP in the runner, without a worker: their cases need more GPUs than the host
 * has (a worker per case spent 3 s on 0006's 3000 cases of a 1000-seed replay on one GPU, after the pool). */
void lab_replay_skip_missing(lab_replay_ctx *ctx, size_t a, size_t b, lab_job_outcome *out)
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
lab_status lab_replay_execute(lab_replay_ctx *ctx)
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

/* Seeds replayed for one incident: all given, or its default_seeds when the seeds were not given. */
size_t lab_replay_n_seeds(const lab_replay_opts *opts, const lab_incident *inc)
{
    if (opts->what.seeds_default && inc->default_seeds > 0 && inc->default_seeds < opts->what.n_seeds)
        return inc->default_seeds;
    return opts->what.n_seeds;
}

/* Selected variants of one incident. */
size_t lab_replay_n_variants(const lab_replay_opts *opts, const lab_incident *inc)
{
    size_t k = 0;
    for (int v = 0; v < inc->n_variants; ++v)
        k += !opts->what.variant || strcmp(opts->what.variant, inc->variants[v].name) == 0;
    return k;
}

size_t lab_replay_count(const lab_replay_opts *opts)
{
    size_t n = 0;
    for (size_t i = 0; i < opts->what.n_incidents; ++i)
        n += lab_replay_n_variants(opts, opts->what.incidents[i]) * lab_replay_n_seeds(opts, opts->what.incidents[i]);
    return n;
}

int lab_replay_case_index(const lab_replay_opts *opts, const lab_incident *inc, const lab_variant *var, uint64_t seed,
                          size_t *index)
{
    const lab_replay_what *w = &opts->what;
    size_t base = 0;
    for (size_t i = 0; i < w->n_incidents; ++i) {
        const lab_incident *c = w->incidents[i];
        size_t ns = lab_replay_n_seeds(opts, c);
        if (c != inc) {
            base += lab_replay_n_variants(opts, c) * ns;
            continue;
        }
        size_t v = 0;
        int k = 0;
        for (; k < c->n_variants && &c->variants[k] != var; ++k)
            v += !w->variant || !strcmp(w->variant, c->variants[k].name);
        if (k == c->n_variants || (w->variant && strcmp(w->variant, var->name))) return 0;
        size_t s = (size_t)(seed - w->seeds[0]); /* consecutive seeds: the index at once, else looked for */
        if (seed < w->seeds[0] || s >= ns || w->seeds[s] != seed)
            for (s = 0; s < ns && w->seeds[s] != seed; ++s) {}
        if (s >= ns) return 0;
        *index = base + v * ns + s;
        return 1;
    }
    return 0;
}

lab_status lab_replay_cases(const lab_replay_opts *opts, lab_case_record **recs_out, size_t *n_recs)
{
    *recs_out = NULL;
    *n_recs = 0;
    size_t n = lab_replay_count(opts);
    lab_case_record *recs = calloc(n ? n : 1, sizeof *recs);
    if (!recs) return lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
    size_t k = 0;
    for (size_t i = 0; i < opts->what.n_incidents; ++i)
        for (int v = 0; v < opts->what.incidents[i]->n_variants; ++v) {
            const lab_variant *var = &opts->what.incidents[i]->variants[v];
            if (opts->what.variant && strcmp(opts->what.variant, var->name) != 0) continue;
            for (size_t s = 0; s < lab_replay_n_seeds(opts, opts->what.incidents[i]); ++s) {
                recs[k].incident = opts->what.incidents[i];
                recs[k].variant = var;
                recs[k].seed = opts->what.seeds[s];
                recs[k].backend = opts->what.backend;
                k++;
            }
        }
    *recs_out = recs;
    *n_recs = n;
    return LAB_OK;
}

void lab_replay_kept(lab_replay_ctx *ctx, size_t index, const lab_case_record *rec)
{
    lab_results_cmd spell = lab_replay_cmd(ctx->opts);
    lab_journal_case(ctx->opts->how.journal, rec, &spell);
    if (ctx->on_done) ctx->on_done(ctx->on_done_ctx, index, rec);
}

lab_status lab_replay_run_rest(const lab_replay_opts *opts, lab_case_record *recs, size_t n,
                               lab_status (*run)(void *run_ctx, lab_case_record *recs, size_t n), void *run_ctx,
                               size_t *carried)
{
    if (carried) *carried = 0;
    if (!opts->how.carry) return run(run_ctx, recs, n);
    unsigned char *done = calloc(n ? n : 1, 1);
    if (!done) return lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
    size_t m = 0;
    for (size_t j = 0; j < n; ++j) {
        int got = lab_resume_fill(opts->how.carry, opts, &recs[j]);
        if (got < 0) {
            free(done);
            return LAB_ERR_IO;
        }
        done[j] = (unsigned char)got;
        m += !got;
    }
    if (carried) *carried = n - m;
    /* the rest, in their order, run as a replay of them alone would run them */
    lab_case_record *rest = m == n ? recs : malloc((m ? m : 1) * sizeof *rest);
    lab_status st = rest ? LAB_OK : lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
    for (size_t j = 0, k = 0; st == LAB_OK && rest != recs && j < n; ++j)
        if (!done[j]) rest[k++] = recs[j];
    if (st == LAB_OK && m) st = run(run_ctx, rest, m);
    for (size_t j = 0, k = 0; rest && rest != recs && j < n; ++j)
        if (!done[j]) recs[j] = rest[k++];
    if (rest != recs) free(rest);
    free(done);
    return st;
}

lab_status lab_replay_not_started(void *unused, lab_case_record *recs, size_t n)
{
    (void)unused;
    for (size_t j = 0; j < n; ++j) {
        recs[j].o.outcome = LAB_OUT_ERROR;
        recs[j].o.not_run = 1;
        snprintf(recs[j].o.error, sizeof recs[j].o.error, "interrupted");
    }
    return LAB_OK;
}

lab_status lab_replay_journal_open(const lab_replay_opts *opts, lab_journal **out)
{
    *out = NULL;
    cJSON *replay = lab_resume_describe(opts), *head = cJSON_CreateObject();
    lab_status st = head ? LAB_OK : lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
    if (st == LAB_OK) {
        cJSON_AddStringToObject(head, "journal", "lab replay: one line a finished case, as results.jsonl holds it");
        if (replay) cJSON_AddItemToObject(head, "replay", replay), replay = NULL;
        if ((st = lab_fs_mkdirs(opts->how.out_dir)) == LAB_OK) st = lab_journal_open(opts->how.out_dir, head, out);
    }
    cJSON_Delete(replay);
    cJSON_Delete(head);
    return st;
}

lab_status lab_replay_journal_begin(const lab_replay_opts *opts, lab_replay_opts *copy, lab_journal **owned)
{
    *copy = *opts;
    *owned = NULL;
    if (!opts->how.out_dir || opts->how.journal) return LAB_OK;
    lab_status st = lab_replay_journal_open(opts, owned);
    copy->how.journal = *owned;
    return st;
}

lab_status lab_replay_execute_records(const lab_replay_opts *opts, lab_case_record *recs, size_t n,
                                      lab_replay_done_fn done, void *done_ctx)
{
    lab_replay_ctx ctx;
    lab_replay_ctx_told(&ctx, opts, recs, n, done, done_ctx);
    return lab_replay_execute(&ctx);
}
