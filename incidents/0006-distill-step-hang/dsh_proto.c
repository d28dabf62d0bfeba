/* dsh_proto: incident 0006's protocol over a transport, and the long-lived job's serve loop (dsh_proto.h). Linked
 * into both job binaries and into the lab (which uses the control file and the shape draw only). */
#define _GNU_SOURCE
#include "dsh_proto.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "lab_rng.h"

uint64_t dsh_ld64(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
void dsh_st64(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
int32_t dsh_ld32(const int32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
void dsh_st32(int32_t *p, int32_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

dsh_ctrl *dsh_ctrl_map(const char *path, int create, int world)
{
    void *p = dsh_map_shared(path, sizeof(dsh_ctrl), create, "control file");
    if (!p) return NULL;
    dsh_ctrl *c = (dsh_ctrl *)p;
    if (create) {
        memset(c, 0, sizeof *c);
        c->world = world;
        c->crash_rank = -1;
        dsh_st64(&c->magic, DSH_CTRL_MAGIC);
    } else if (dsh_ld64(&c->magic) != DSH_CTRL_MAGIC) {
        munmap(p, sizeof(dsh_ctrl));
        lab_err_set(LAB_ERR_FORMAT, "control file %s: bad magic", path);
        return NULL;
    }
    return c;
}

void dsh_ctrl_unmap(dsh_ctrl *c)
{
    if (c) munmap(c, sizeof *c);
}

int dsh_g_at(int variant, int g, int step)
{
    return variant == DSH_VAR_LOGGED && step < DSH_LOGGED_RAMP ? 1 : g;
}

void dsh_shape(int variant, int g, uint64_t seed, uint64_t xid, long long shape[2])
{
    uint32_t u = lab_rng_u32(seed, DSH_STREAM_SHAPE, xid);
    shape[0] = 8ll << (u & 1u);
    shape[1] = 512ll << ((u >> 1) % 3u);
    if (variant == DSH_VAR_FIX) shape[0] *= g;
}

/* Tokens of trainer `rank` for exchange xid: Philox words below DSH_VOCAB. */
static void dp_tokens(uint64_t seed, int rank, uint64_t xid, int32_t *tok, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        tok[i] = (int32_t)(lab_rng_u32(seed, DSH_STREAM_TOKENS + (uint32_t)rank * 1024u, (xid << 32) + i) % DSH_VOCAB);
}

/* The teacher's outputs for one row of tokens: DSH_OUT_COLS values, exact integer arithmetic then one rounding,
 * so trainers can check them bit for bit. */
static void dp_teacher(const int32_t *row, long long cols, float *out)
{
    for (int k = 0; k < DSH_OUT_COLS; ++k) {
        uint64_t h = 1469598103934665603ull + (uint64_t)k;
        for (long long j = 0; j < cols; ++j) h = (h ^ (uint64_t)row[j]) * 1099511628211ull;
        out[k] = (float)(h >> 40) * (1.0f / 16777216.0f);
    }
}

static double dp_now(double t0)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec - t0;
}

static void dp_nap(long ns)
{
    struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
    nanosleep(&ts, NULL);
}

/* One rank's view of an epoch. */
typedef struct {
    dsh_xport *x;
    dsh_ctrl *ctrl;
    dsh_trace_file *tf;
    uint64_t epoch, seed;
    int variant, g, rank, trainers, jrank, crash;
    double t0;
} dp_epoch;

enum { DP_OK = 0, DP_ABANDONED = 1, DP_ERROR = 2 };

/* Waits for what was posted: tests with a growing sleep (50 us to 1 ms), counting polls in the trace, until it
 * completes (DP_OK), the lab abandons the epoch or ends the job (DP_ABANDONED), or the transport fails. */
static int dp_wait(dp_epoch *e)
{
    long ns = 50000;
    int how = DP_OK;
    __atomic_store_n(&e->tf->head.waiting, 1, __ATOMIC_RELEASE);
    for (;;) {
        int t = e->x->test(e->x);
        __atomic_add_fetch(&e->tf->head.polls, 1, __ATOMIC_RELEASE);
        if (t > 0) break;
        if (t < 0) {
            e->tf->head.errors++;
            how = DP_ERROR;
            break;
        }
        if (dsh_ld64(&e->ctrl->abort_epoch) == e->epoch || dsh_ld32(&e->ctrl->quit)) {
            how = DP_ABANDONED;
            break;
        }
        dp_nap(ns);
        if (ns < 1000000) ns *= 2;
    }
    __atomic_store_n(&e->tf->head.waiting, 0, __ATOMIC_RELEASE);
    return how;
}

/* Enters a collective in the trace; the test fault (a rank killed at its first collective) fires here. */
static dsh_record *dp_enter(dp_epoch *e, int op, int root, int64_t count, long long rows, long long cols, int step,
                            int micro)
{
    if (e->crash) raise(SIGKILL);
    return dsh_trace_enter(e->tf, op, root, count, (int)rows, (int)cols, step, micro, dp_now(e->t0));
}

/* One exchange on either side. fill: rank 0 draws a shape for xid (else it broadcasts its zeroed shape tensor);
 * data: the gather and scatter follow the broadcast. On DP_ABANDONED / DP_ERROR the buffers are left to the
 * abandoned communicator (not freed). */
static int dp_exchange(dp_epoch *e, int step, int micro, uint64_t xid, int fill, int data)
{
    int distiller = e->trainers, me_d = e->rank == distiller;
    long long *shape = calloc(2, sizeof *shape); /* like torch.zeros(2): only rank 0 fills it in */
    if (!shape) return DP_ERROR;
    if (e->rank == 0 && fill) dsh_shape(e->variant, e->g, e->seed, xid, shape);
    dsh_record *r = dp_enter(e, DSH_OP_BCAST, 0, 2, shape[0], shape[1], step, micro);
    int how = e->x->post_bcast(e->x, shape) ? DP_ERROR : dp_wait(e);
    if (how != DP_OK) return how;
    r->t_done = dp_now(e->t0);
    long long rows = shape[0], cols = shape[1];
    free(shape);
    if (rows == 0 || cols == 0) e->tf->head.empty_shapes++;
    if (!data) {
        e->tf->head.exchanges++;
        return DP_OK;
    }
    size_t n = (size_t)(rows * cols), nout = (size_t)rows * DSH_OUT_COLS;
    size_t nt = me_d ? n * (size_t)e->trainers : n, nto = me_d ? nout * (size_t)e->trainers : nout;
    int32_t *tok = malloc(nt * sizeof *tok + 4);
    float *out = malloc(nto * sizeof *out + 4);
    if (!tok || !out) {
        free(tok), free(out);
        return DP_ERROR;
    }
    if (!me_d) dp_tokens(e->seed, e->rank, xid, tok, n);
    r = dp_enter(e, DSH_OP_GATHER, distiller, (int64_t)n, rows, cols, step, micro);
    how = e->x->post_gather(e->x, tok, tok, n) ? DP_ERROR : dp_wait(e);
    if (how != DP_OK) return how;
    r->t_done = dp_now(e->t0);
    if (me_d)
        for (long long i = 0; i < rows * e->trainers; ++i) dp_teacher(tok + i * cols, cols, out + i * DSH_OUT_COLS);
    r = dp_enter(e, DSH_OP_SCATTER, distiller, (int64_t)nout, rows, cols, step, micro);
    how = e->x->post_scatter(e->x, out, out, nout) ? DP_ERROR : dp_wait(e);
    if (how != DP_OK) return how;
    r->t_done = dp_now(e->t0);
    if (!me_d) {
        float want[DSH_OUT_COLS];
        for (long long i = 0; i < rows; ++i) {
            dp_teacher(tok + i * cols, cols, want);
            if (memcmp(want, out + i * DSH_OUT_COLS, sizeof want) != 0) e->tf->head.outputs_bad++;
        }
    }
    e->tf->head.exchanges++;
    free(tok);
    free(out);
    return DP_OK;
}

/* The epoch's protocol on one rank; DP_OK when its loop ran to the end (then it enters the finalize fence). */
static int dp_run(dp_epoch *e, int steps)
{
    dsh_trace_file *tf = e->tf;
    tf->head.steps = steps;
    int step = 0, micro = -1, how = DP_OK;
    if (e->rank != e->trainers) {
        tf->head.g = e->g;
        int acc = 0;
        while (step < steps && how == DP_OK) {
            int g = dsh_g_at(e->variant, e->g, step);
            micro = acc;
            switch (e->variant) {
            case DSH_VAR_FIX: /* one exchange per cycle, on its first micro-step, the G micro-batches at once */
                if (micro == 0) how = dp_exchange(e, step, micro, (uint64_t)step, 1, 1);
                break;
            case DSH_VAR_LOGGED: /* the shape every micro-step (rank 0 fills it on the first); the batch on the first */
                how = dp_exchange(e, step, micro, (uint64_t)step, micro == 0, micro == 0);
                break;
            default: /* as it was: an exchange on every micro-step */
                how = dp_exchange(e, step, micro, (uint64_t)step * (uint64_t)e->g + (uint64_t)micro, 1, 1);
            }
            /* The student's forward/backward on this micro-batch would run here; the optimizer steps once per
             * cycle, and so does the trainers' step counter. */
            acc = (acc + 1) % g;
            if (acc == 0) step++;
            tf->head.step = step;
        }
    } else {
        /* As it was, the distiller knows nothing of G: one step per exchange. Fixed, it knows that an exchange
         * is the first micro-step of a cycle; its loop is then one step per cycle. */
        tf->head.g = e->variant == DSH_VAR_FIX ? e->g : 0;
        if (e->variant == DSH_VAR_FIX) micro = 0;
        while (step < steps && how == DP_OK) {
            how = dp_exchange(e, step, micro, 0, 0, 1);
            if (how == DP_OK) tf->head.step = ++step;
        }
    }
    if (how == DP_OK) {
        dsh_record *r = dp_enter(e, DSH_OP_FINALIZE, -1, 0, 0, 0, step, micro);
        r->t_done = dp_now(e->t0);
        __atomic_store_n(&tf->head.finished, 1, __ATOMIC_RELEASE);
    }
    return how;
}

int dsh_serve(dsh_xport *x, dsh_ctrl *ctrl, int jrank, int jworld)
{
    uint64_t seen = 0, beat = 0, retired = 0;
    for (;;) {
        long ns = 50000;
        uint64_t ep;
        for (;;) {
            if (dsh_ld32(&ctrl->quit)) return 0;
            if (seen && retired != seen && dsh_ld64(&ctrl->abort_epoch) == seen) {
                /* the lab said the epoch's communicator must not serve again: every rank retires it now */
                if (ctrl->retire_delay_s > 0) dp_nap((long)(ctrl->retire_delay_s * 1e9));
                if (x->retire(x) != 0) {
                    fprintf(stderr, "%s: rank %d: cannot retire the communicator of epoch %llu\n", x->name, jrank,
                            (unsigned long long)seen);
                    return -1;
                }
                retired = seen;
                dsh_st64(&ctrl->ready_epoch[jrank], seen);
                ns = 50000;
            }
            ep = dsh_ld64(&ctrl->epoch);
            if (ep > seen) break;
            dsh_st64(&ctrl->alive[jrank], ++beat);
            dp_nap(ns);
            if (ns < 2000000) ns *= 2;
        }
        seen = ep;
        dp_epoch e;
        memset(&e, 0, sizeof e);
        e.x = x, e.ctrl = ctrl, e.epoch = ep, e.jrank = jrank;
        e.variant = ctrl->variant, e.g = ctrl->g, e.trainers = ctrl->trainers, e.seed = ctrl->seed, e.t0 = ctrl->t0;
        e.crash = ctrl->crash_rank == jrank;
        int steps = ctrl->steps, member = 0, how = DP_OK;
        double b0 = dp_now(0);
        int bad = e.trainers < 1 || e.trainers > jworld - 1 || x->begin(x, e.trainers, &member, &e.rank) != 0;
        ctrl->begin_s[jrank] = dp_now(0) - b0;
        if (bad) {
            fprintf(stderr, "%s: rank %d: cannot make the communicator of %d trainers + 1 (job of %d)\n", x->name,
                    jrank, e.trainers, jworld);
            dsh_st32(&ctrl->done_how[jrank], DSH_DONE_ERROR);
            dsh_st64(&ctrl->done_epoch[jrank], ep);
            return -1;
        }
        if (member) {
            e.tf = dsh_trace_open(ctrl->trace_dir, e.rank, e.trainers + 1,
                                  e.rank == e.trainers ? DSH_ROLE_DISTILLER : DSH_ROLE_TRAINER, e.t0);
            if (!e.tf) {
                fprintf(stderr, "%s: rank %d: %s\n", x->name, jrank, lab_err_msg());
                how = DP_ERROR;
            } else {
                how = dp_run(&e, steps);
                dsh_trace_close(e.tf);
            }
        }
        dsh_st32(&ctrl->done_how[jrank], how == DP_OK ? DSH_DONE_OK : how == DP_ABANDONED ? DSH_DONE_ABANDONED
                                                                                             : DSH_DONE_ERROR);
        dsh_st64(&ctrl->done_epoch[jrank], ep);
    }
}
