/* lab_replay_fed: a fed execution of a replay's cases (lab_replay_fed.h), over lab_isolate_run_fed. */
#define _GNU_SOURCE
#include "lab_replay_fed.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lab_replay_int.h"
#include "lab_seedbatch.h"

/* A fed execution's lane: the parts that run under one plan (lab_replay_execute_fed), and the answer it is handing out. */
typedef struct {
    lab_replay_ctx *ctx;
    const lab_replay_groups *groups;
    const lab_replay_part *parts;
    const lab_sched_plan *plans; /* per part */
    unsigned char *accept;      /* per part: in this lane */
    int pool;                   /* the lane is the pool: an answer is laid out in runs (lab_replay_pool_layout) */
    lab_replay_feed_fn feed;
    void *feed_ctx;
    size_t *fill;               /* the execution's next unused position of its order (its lanes share it) */
    int ended;                  /* the feed said -1 */
    lab_status st;              /* an answer that could not be laid out, or was not this lane's */
    lab_replay_span *spans;     /* the answer in hand (room for one a part) */
    size_t *place;              /* where each of its spans' jobs sit in the execution's order */
    size_t ns, si;              /* its spans; outside the pool, the next one to cut */
    size_t *bounds, nr, next;   /* the pool's answer: runs [bounds[r], bounds[r + 1]) from next on */
    size_t at, end, grp, gend;  /* otherwise: the span being cut: its jobs [at, end) (positions in groups->order) not
                                   handed out yet, at in group grp of its groups [.., gend) */
    size_t from, batch;         /* and the position its jobs start at in groups->order, the jobs a child runs (its
                                   incident's plan.batch) */
} lab_replay_lane;

/* The next range of a span outside the pool: as the plain execution cuts its runs, plan.batch jobs a child (a seed
 * group on the CPU, one case under compute-sanitizer, a worker's share of groups where its incident says so), here cut
 * from the span: whole groups where the batch holds one or more, else batch cases at a time. */
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
    *first = l->place[l->si - 1] + (l->at - l->from);
    *end = l->place[l->si - 1] + (stop - l->from);
    l->at = stop;
}

/* Checks the feed's answer spans[0..ns) against the lane and puts its jobs at the execution's next unused positions of
 * its order, span after span (place[k]: where span k starts). The pool lays them out in runs there. */
static lab_status lab_replay_lane_place(lab_replay_lane *l)
{
    lab_replay_ctx *ctx = l->ctx;
    const lab_replay_groups *g = l->groups;
    for (size_t k = 0; k < l->ns; ++k) {
        size_t g0 = l->spans[k].g0, g1 = l->spans[k].g1, p = g0 < g->ng ? g->part[g0] : 0;
        if (!(g0 < g1 && g1 <= g->ng && g->part[g1 - 1] == p && l->accept[p] && (k == 0 || p > g->part[l->spans[k - 1].g0])))
            return lab_err_set(LAB_ERR_ARG, "replay: the feed gave seed groups [%zu, %zu), not a span of this lane's "
                               "incidents (%zu groups), each at most once an answer", g0, g1, g->ng);
        size_t len = g->start[g1] - g->start[g0];
        if (len > ctx->n - *l->fill)
            return lab_err_set(LAB_ERR_ARG, "replay: the feed gave seed groups [%zu, %zu) beyond the %zu cases (given "
                               "twice?)", g0, g1, ctx->n);
        memcpy(ctx->order + *l->fill, g->order + g->start[g0], len * sizeof *ctx->order);
        l->place[k] = *l->fill;
        *l->fill += len;
    }
    if (!l->pool) return LAB_OK;
    lab_replay_part *pt = malloc(l->ns * sizeof *pt);
    if (!pt) return lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
    for (size_t k = 0; k < l->ns; ++k) {
        size_t g0 = l->spans[k].g0, g1 = l->spans[k].g1;
        pt[k] = (lab_replay_part){l->place[k], l->place[k] + g->start[g1] - g->start[g0], l->parts[g->part[g0]].group_size,
                                  g1 - g0};
    }
    size_t *bounds = NULL, nr = 0, base = l->place[0];
    lab_status st = lab_replay_pool_layout(ctx, base, pt, l->ns, ctx->plan.workers, &bounds, &nr);
    free(pt);
    if (st != LAB_OK) return st;
    for (size_t r = 0; r <= nr; ++r) bounds[r] += base;
    free(l->bounds);
    l->bounds = bounds, l->nr = nr, l->next = 0;
    return LAB_OK;
}

/* The lane's next range (lab_job_feed_fn): the next run of the answer in hand; when there is none and fewer ranges
 * wait than the lane has workers, the feed's next answer, placed. */
static int lab_replay_lane_next(void *vl, size_t waiting, size_t *first, size_t *end)
{
    lab_replay_lane *l = vl;
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
        if (!l->pool && l->si < l->ns) { /* the answer's next span */
            const lab_replay_span *sp = &l->spans[l->si++];
            l->at = l->from = g->start[sp->g0];
            l->end = g->start[sp->g1];
            l->grp = sp->g0;
            l->gend = sp->g1;
            l->batch = l->plans[g->part[sp->g0]].batch;
            continue;
        }
        if (l->ended || waiting >= (size_t)l->ctx->plan.workers) return l->ended ? -1 : 0;
        int r = l->feed(l->feed_ctx, l->accept, l->spans);
        if (r <= 0) {
            l->ended = r < 0;
            return r;
        }
        l->ns = (size_t)r < g->nparts ? (size_t)r : g->nparts;
        l->si = 0;
        l->st = lab_replay_lane_place(l);
        if (l->st != LAB_OK) {
            l->ended = 1;
            return -1;
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
    ctx.run_fair = lab_replay_run_fair(opts, groups);
    /* lanes: the pool first (its lane number 0), then one a distinct plan, in the incidents' order */
    int *lane = calloc(su.np ? su.np : 1, sizeof *lane), nl = 1;
    unsigned char *accept = calloc(su.np ? su.np : 1, 1);
    lab_replay_span *spans = calloc(su.np ? su.np : 1, sizeof *spans);
    size_t *place = calloc(su.np ? su.np : 1, sizeof *place), fill = 0;
    if (st == LAB_OK && (!lane || !accept || !spans || !place)) st = lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
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
        lab_replay_lane l = {&ctx, groups, su.parts, su.plans, accept, ln == 0, feed, feed_ctx, &fill};
        l.spans = spans, l.place = place;
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
    free(spans);
    free(place);
    lab_replay_setup_free(&ctx, &su);
    return st;
}

double lab_replay_run_fair(const lab_replay_opts *opts, const lab_replay_groups *g)
{
    if (opts->how.run_workers <= 0) return 0.0;
    double all = 0.0;
    for (size_t k = 0; k < g->ng; ++k) all += g->cost[k];
    return all / opts->how.run_workers;
}

size_t lab_replay_run_seeds(const lab_replay_opts *opts, const lab_case_record *recs, const lab_replay_groups *g, size_t part)
{
    double fair = lab_replay_run_fair(opts, g), group = 0.0;
    size_t first = g->ng;
    for (size_t k = 0; k < g->ng; ++k)
        if (g->part[k] == part) {
            first = first < k ? first : k;
            group = g->cost[k] > group ? g->cost[k] : group;
        }
    if (first == g->ng || fair <= 0.0) return 0;
    unsigned bmax = lab_seedbatch_size(recs[g->order[g->start[first]]].incident, opts->what.backend,
                                       opts->what.sanitize != NULL, opts->how.batch_seeds);
    return bmax < 2 ? 0 : lab_sched_chunk_seeds(bmax, group, fair, opts->how.run_gpus);
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
