/* distill_job: incident 0006's MPI program: N training ranks and one distillation rank exchange a batch
 * shape (bcast from rank 0), the batch (gather to the distiller) and teacher outputs (scatter back) under
 * gradient accumulation, with the step counters as they were (--variant bug) or as fixed (--variant fix).
 * Every collective is recorded in a per-rank trace (dsh_trace). Started by the lab with mpirun.
 *
 * Usage: distill_job --variant bug|fix --g G --steps S --seed SEED --trace DIR --t0 T0 --deadline D
 * The last rank is the distiller; the others train. Exit status 0 when every step completed. */
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "dsh_trace.h"
#include "lab_rng.h"

typedef struct {
    int bug, g, steps;
    uint64_t seed;
    const char *trace;
    double t0, deadline;
    double startup_delay;   /* tests: sleep this long before the first trace (a slow start-up) */
} dj_args;

static double dj_now(const dj_args *a)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec - a->t0;
}

/* Waits for a request by testing it with a growing sleep (50 us to 1 ms) in between: a rank blocked in
 * a collective that never completes then sleeps instead of spinning a core, so a hang costs wall time,
 * not CPU time. Aborts the job if MPI reports an error. */
static void dj_wait(MPI_Request *req)
{
    long ns = 50000;
    for (;;) {
        int done = 0;
        int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            fprintf(stderr, "distill_job: MPI_Test failed (%d)\n", rc);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        if (done) return;
        struct timespec ts = {0, ns};
        nanosleep(&ts, NULL);
        if (ns < 1000000) ns *= 2;
    }
}

/* The batch shape rank 0 draws for exchange xid: rows in {8, 16} (times G in the fix, where one exchange
 * carries the whole accumulation cycle), cols in {512, 1024, 2048} tokens. */
static void dj_shape(const dj_args *a, uint64_t xid, long long shape[2])
{
    uint32_t u = lab_rng_u32(a->seed, DSH_STREAM_SHAPE, xid);
    shape[0] = 8ll << (u & 1u);
    shape[1] = 512ll << ((u >> 1) % 3u);
    if (!a->bug) shape[0] *= a->g;
}

/* Tokens of trainer `rank` for exchange xid: Philox words below DSH_VOCAB. */
static void dj_tokens(const dj_args *a, int rank, uint64_t xid, int32_t *tok, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        tok[i] = (int32_t)(lab_rng_u32(a->seed, DSH_STREAM_TOKENS + (uint32_t)rank * 1024u, (xid << 32) + i) %
                           DSH_VOCAB);
}

/* The teacher's outputs for one row of tokens: DSH_OUT_COLS values, exact integer arithmetic then one
 * rounding, so trainers can check them bit for bit. */
static void dj_teacher(const int32_t *row, long long cols, float *out)
{
    for (int k = 0; k < DSH_OUT_COLS; ++k) {
        uint64_t h = 1469598103934665603ull + (uint64_t)k;
        for (long long j = 0; j < cols; ++j) h = (h ^ (uint64_t)row[j]) * 1099511628211ull;
        out[k] = (float)(h >> 40) * (1.0f / 16777216.0f);
    }
}

static void *dj_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "distill_job: out of memory (%zu bytes)\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* One exchange as a trainer: receive the shape, send the batch, get the teacher outputs and check them. */
static void dj_trainer_exchange(const dj_args *a, dsh_trace_file *tf, int rank, int world, int step, int micro,
                                uint64_t xid)
{
    int distiller = world - 1;
    long long shape[2] = {0, 0}; /* like torch.zeros(2): only rank 0 fills it in */
    if (rank == 0) dj_shape(a, xid, shape);
    MPI_Request req;
    dsh_record *r = dsh_trace_enter(tf, DSH_OP_BCAST, 0, 2, (int)shape[0], (int)shape[1], step, micro, dj_now(a));
    MPI_Ibcast(shape, 2, MPI_LONG_LONG, 0, MPI_COMM_WORLD, &req);
    dj_wait(&req);
    r->t_done = dj_now(a);
    long long rows = shape[0], cols = shape[1];
    if (rows == 0 || cols == 0) tf->head.empty_shapes++;
    size_t n = (size_t)(rows * cols), nout = (size_t)rows * DSH_OUT_COLS;
    int32_t *tok = dj_alloc(n * sizeof *tok);
    float *out = dj_alloc(nout * sizeof *out), *want = dj_alloc(DSH_OUT_COLS * sizeof *want);
    dj_tokens(a, rank, xid, tok, n);
    r = dsh_trace_enter(tf, DSH_OP_GATHER, distiller, (int64_t)n, (int)rows, (int)cols, step, micro, dj_now(a));
    MPI_Igatherv(tok, (int)n, MPI_INT32_T, NULL, NULL, NULL, MPI_INT32_T, distiller, MPI_COMM_WORLD, &req);
    dj_wait(&req);
    r->t_done = dj_now(a);
    r = dsh_trace_enter(tf, DSH_OP_SCATTER, distiller, (int64_t)nout, (int)rows, (int)cols, step, micro, dj_now(a));
    MPI_Iscatterv(NULL, NULL, NULL, MPI_FLOAT, out, (int)nout, MPI_FLOAT, distiller, MPI_COMM_WORLD, &req);
    dj_wait(&req);
    r->t_done = dj_now(a);
    for (long long i = 0; i < rows; ++i) {
        dj_teacher(tok + i * cols, cols, want);
        if (memcmp(want, out + i * DSH_OUT_COLS, DSH_OUT_COLS * sizeof *want) != 0) tf->head.outputs_bad++;
    }
    tf->head.exchanges++;
    free(tok);
    free(out);
    free(want);
}

/* One exchange as the distiller: receive the shape, gather every trainer's batch, send the outputs. */
static void dj_distiller_exchange(const dj_args *a, dsh_trace_file *tf, int world, int step, int micro)
{
    int trainers = world - 1;
    long long shape[2] = {0, 0};
    MPI_Request req;
    dsh_record *r = dsh_trace_enter(tf, DSH_OP_BCAST, 0, 2, 0, 0, step, micro, dj_now(a));
    MPI_Ibcast(shape, 2, MPI_LONG_LONG, 0, MPI_COMM_WORLD, &req);
    dj_wait(&req);
    r->t_done = dj_now(a);
    long long rows = shape[0], cols = shape[1];
    if (rows == 0 || cols == 0) tf->head.empty_shapes++;
    size_t n = (size_t)(rows * cols), nout = (size_t)rows * DSH_OUT_COLS;
    int *counts = dj_alloc((size_t)world * sizeof *counts), *displs = dj_alloc((size_t)world * sizeof *displs);
    int *ocounts = dj_alloc((size_t)world * sizeof *ocounts), *odispls = dj_alloc((size_t)world * sizeof *odispls);
    for (int t = 0; t < world; ++t) {
        counts[t] = t < trainers ? (int)n : 0;
        displs[t] = t < trainers ? (int)(n * (size_t)t) : 0;
        ocounts[t] = t < trainers ? (int)nout : 0;
        odispls[t] = t < trainers ? (int)(nout * (size_t)t) : 0;
    }
    int32_t *tok = dj_alloc(n * (size_t)trainers * sizeof *tok);
    float *out = dj_alloc(nout * (size_t)trainers * sizeof *out);
    int32_t none = 0;
    r = dsh_trace_enter(tf, DSH_OP_GATHER, world - 1, (int64_t)n, (int)rows, (int)cols, step, micro, dj_now(a));
    MPI_Igatherv(&none, 0, MPI_INT32_T, tok, counts, displs, MPI_INT32_T, world - 1, MPI_COMM_WORLD, &req);
    dj_wait(&req);
    r->t_done = dj_now(a);
    for (long long i = 0; i < rows * trainers; ++i) dj_teacher(tok + i * cols, cols, out + i * DSH_OUT_COLS);
    float fnone = 0;
    r = dsh_trace_enter(tf, DSH_OP_SCATTER, world - 1, (int64_t)nout, (int)rows, (int)cols, step, micro, dj_now(a));
    MPI_Iscatterv(out, ocounts, odispls, MPI_FLOAT, &fnone, 0, MPI_FLOAT, world - 1, MPI_COMM_WORLD, &req);
    dj_wait(&req);
    r->t_done = dj_now(a);
    tf->head.exchanges++;
    free(counts), free(displs), free(ocounts), free(odispls), free(tok), free(out);
}

static int dj_parse(int argc, char **argv, dj_args *a)
{
    memset(a, 0, sizeof *a);
    a->g = -1;
    a->steps = -1;
    a->bug = -1;
    a->deadline = 30;
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc) {
            fprintf(stderr, "distill_job: flag %s needs a value\n", argv[i]);
            return -1;
        }
        const char *k = argv[i], *v = argv[i + 1];
        char *end = NULL;
        errno = 0;
        if (!strcmp(k, "--variant")) {
            if (!strcmp(v, "bug")) a->bug = 1;
            else if (!strcmp(v, "fix")) a->bug = 0;
            else { fprintf(stderr, "distill_job: --variant %s: expected bug or fix\n", v); return -1; }
            continue;
        }
        if (!strcmp(k, "--trace")) { a->trace = v; continue; }
        if (!strcmp(k, "--g")) a->g = (int)strtol(v, &end, 10);
        else if (!strcmp(k, "--steps")) a->steps = (int)strtol(v, &end, 10);
        else if (!strcmp(k, "--seed")) a->seed = strtoull(v, &end, 10);
        else if (!strcmp(k, "--t0")) a->t0 = strtod(v, &end);
        else if (!strcmp(k, "--deadline")) a->deadline = strtod(v, &end);
        else if (!strcmp(k, "--startup-delay")) a->startup_delay = strtod(v, &end);
        else { fprintf(stderr, "distill_job: unknown flag %s\n", k); return -1; }
        if (errno || !end || *end) { fprintf(stderr, "distill_job: %s %s: not a number\n", k, v); return -1; }
    }
    if (a->bug < 0 || !a->trace || a->g < 1 || a->g > 64 || a->steps < 1 || a->steps > 1000 || a->deadline <= 0) {
        fprintf(stderr, "distill_job: need --variant bug|fix, --trace DIR, --g in [1, 64], --steps in [1, 1000], "
                        "--deadline > 0\n");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    /* Dies with mpirun (which dies with the lab's case): a killed case leaves no rank behind. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dj_args a;
    MPI_Init(&argc, &argv);
    int rank = 0, world = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (dj_parse(argc, argv, &a) != 0) MPI_Abort(MPI_COMM_WORLD, 2);
    if (world < 2 || world > DSH_TRACE_MAXRANK) {
        fprintf(stderr, "distill_job: %d ranks: need 2 to %d (trainers + 1 distiller)\n", world, DSH_TRACE_MAXRANK);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* Last resort: a rank outlives the job's deadline by no more than a few seconds, even if every
     * watchdog above it failed. */
    alarm((unsigned)ceil(a.deadline + a.startup_delay) + 5u);
    if (a.startup_delay > 0) {
        struct timespec d = {(time_t)a.startup_delay, (long)((a.startup_delay - floor(a.startup_delay)) * 1e9)};
        while (nanosleep(&d, &d) != 0 && errno == EINTR) {}
    }
    int distiller = world - 1;
    dsh_trace_file *tf = dsh_trace_open(a.trace, rank, world, rank == distiller ? DSH_ROLE_DISTILLER : DSH_ROLE_TRAINER,
                                        a.t0);
    if (!tf) {
        fprintf(stderr, "distill_job: rank %d: %s\n", rank, lab_err_msg());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    tf->head.steps = a.steps;
    int step = 0, micro = -1;
    if (rank != distiller) {
        tf->head.g = a.g;
        int acc_step = 0;
        while (step < a.steps) {
            micro = acc_step;
            if (a.bug) {
                /* As it was: an exchange on every micro-step. */
                dj_trainer_exchange(&a, tf, rank, world, step, micro, (uint64_t)step * (uint64_t)a.g + (uint64_t)micro);
            } else if (micro == 0) {
                /* Fixed: one exchange per accumulation cycle, on its first micro-step, carrying the G
                 * micro-batches at once (rows = G * micro-batch rows). */
                dj_trainer_exchange(&a, tf, rank, world, step, micro, (uint64_t)step);
            }
            /* The student's forward/backward on this micro-batch would run here; the gradient is
             * accumulated, and the optimizer steps once per G micro-steps. */
            acc_step = (acc_step + 1) % a.g;
            if (acc_step == 0) step++; /* the trainers' step counter: completed accumulation cycles */
            tf->head.step = step;
        }
    } else {
        /* As it was, the distiller knows nothing of G: one step per exchange. Fixed, it knows that an
         * exchange is the first micro-step of a G-step cycle; its loop is then one step per cycle. */
        tf->head.g = a.bug ? 0 : a.g;
        if (!a.bug) micro = 0;
        while (step < a.steps) {
            dj_distiller_exchange(&a, tf, world, step, micro);
            step++; /* the distiller's step counter: one per exchange */
            tf->head.step = step;
        }
    }
    dsh_record *r = dsh_trace_enter(tf, DSH_OP_FINALIZE, -1, 0, 0, 0, step, micro, dj_now(&a));
    MPI_Finalize();
    r->t_done = dj_now(&a);
    tf->head.finished = 1;
    dsh_trace_close(tf);
    return 0;
}
