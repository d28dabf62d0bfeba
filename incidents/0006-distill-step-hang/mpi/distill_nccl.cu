/* distill_nccl: incident 0006's protocol over NCCL, one process per GPU (MPI only starts the processes and
 * hands out the NCCL unique id): the shape is an ncclBroadcast from rank 0, the gather to the distiller
 * and the scatter back are grouped ncclSend/ncclRecv (how torch.distributed gathers over NCCL). Same
 * counters (--variant bug|fix), same trace as distill_job. Built by incident.mk where nvcc and NCCL exist.
 *
 * Usage: distill_nccl --variant bug|fix --g G --steps S --seed SEED --trace DIR --t0 T0 --deadline D
 * Run with NCCL_NVLS_ENABLE=0 (the lab's launcher sets it). */
#include <cuda_runtime.h>
#include <math.h>
#include <mpi.h>
#include <nccl.h>
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

#define DN_CUDA(call)                                                                                     \
    do {                                                                                                  \
        cudaError_t e_ = (call);                                                                          \
        if (e_ != cudaSuccess) {                                                                          \
            fprintf(stderr, "distill_nccl: %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            MPI_Abort(MPI_COMM_WORLD, 3);                                                                 \
        }                                                                                                 \
    } while (0)
#define DN_NCCL(call)                                                                                     \
    do {                                                                                                  \
        ncclResult_t e_ = (call);                                                                         \
        if (e_ != ncclSuccess) {                                                                          \
            fprintf(stderr, "distill_nccl: %s:%d: %s: %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(e_)); \
            MPI_Abort(MPI_COMM_WORLD, 3);                                                                 \
        }                                                                                                 \
    } while (0)

typedef struct {
    int bug, g, steps;
    uint64_t seed;
    const char *trace;
    double t0, deadline;
} dn_args;

typedef struct {
    ncclComm_t comm;
    cudaStream_t stream;
    int rank, world;
    dsh_trace_file *tf;
    const dn_args *a;
} dn_ctx;

static double dn_now(const dn_args *a)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec - a->t0;
}

/* Waits for the stream by querying it with a growing sleep, so a hung NCCL operation costs wall time only. */
static void dn_wait(dn_ctx *c)
{
    long ns = 50000;
    for (;;) {
        cudaError_t e = cudaStreamQuery(c->stream);
        if (e == cudaSuccess) return;
        if (e != cudaErrorNotReady) DN_CUDA(e);
        ncclResult_t async = ncclSuccess;
        DN_NCCL(ncclCommGetAsyncError(c->comm, &async));
        DN_NCCL(async);
        struct timespec ts = {0, ns};
        nanosleep(&ts, NULL);
        if (ns < 1000000) ns *= 2;
    }
}

static void dn_shape(const dn_args *a, uint64_t xid, long long shape[2])
{
    uint32_t u = lab_rng_u32(a->seed, DSH_STREAM_SHAPE, xid);
    shape[0] = 8ll << (u & 1u);
    shape[1] = 512ll << ((u >> 1) % 3u);
    if (!a->bug) shape[0] *= a->g;
}

static void dn_tokens(const dn_args *a, int rank, uint64_t xid, int32_t *tok, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        tok[i] = (int32_t)(lab_rng_u32(a->seed, DSH_STREAM_TOKENS + (uint32_t)rank * 1024u, (xid << 32) + i) %
                           DSH_VOCAB);
}

static void dn_teacher(const int32_t *row, long long cols, float *out)
{
    for (int k = 0; k < DSH_OUT_COLS; ++k) {
        uint64_t h = 1469598103934665603ull + (uint64_t)k;
        for (long long j = 0; j < cols; ++j) h = (h ^ (uint64_t)row[j]) * 1099511628211ull;
        out[k] = (float)(h >> 40) * (1.0f / 16777216.0f);
    }
}

/* One exchange on either side; xid is the trainers' exchange id (unused by the distiller). */
static void dn_exchange(dn_ctx *c, int step, int micro, uint64_t xid)
{
    const dn_args *a = c->a;
    int distiller = c->world - 1, trainers = c->world - 1, me_d = c->rank == distiller;
    long long shape[2] = {0, 0};
    if (c->rank == 0) dn_shape(a, xid, shape);
    long long *d_shape;
    DN_CUDA(cudaMalloc(&d_shape, sizeof shape));
    DN_CUDA(cudaMemcpyAsync(d_shape, shape, sizeof shape, cudaMemcpyHostToDevice, c->stream));
    dsh_record *r = dsh_trace_enter(c->tf, DSH_OP_BCAST, 0, 2, (int)shape[0], (int)shape[1], step, micro, dn_now(a));
    DN_NCCL(ncclBroadcast(d_shape, d_shape, 2, ncclInt64, 0, c->comm, c->stream));
    DN_CUDA(cudaMemcpyAsync(shape, d_shape, sizeof shape, cudaMemcpyDeviceToHost, c->stream));
    dn_wait(c);
    r->t_done = dn_now(a);
    DN_CUDA(cudaFree(d_shape));
    long long rows = shape[0], cols = shape[1];
    if (rows == 0 || cols == 0) c->tf->head.empty_shapes++;
    size_t n = (size_t)(rows * cols), nout = (size_t)rows * DSH_OUT_COLS;
    size_t nt = me_d ? n * (size_t)trainers : n, nto = me_d ? nout * (size_t)trainers : nout;
    int32_t *tok = (int32_t *)malloc(nt * sizeof(int32_t) + 4);
    float *out = (float *)malloc(nto * sizeof(float) + 4), want[DSH_OUT_COLS];
    int32_t *d_tok;
    float *d_out;
    if (!tok || !out) {
        fprintf(stderr, "distill_nccl: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    DN_CUDA(cudaMalloc(&d_tok, nt * sizeof(int32_t) + 4));
    DN_CUDA(cudaMalloc(&d_out, nto * sizeof(float) + 4));
    if (!me_d) {
        dn_tokens(a, c->rank, xid, tok, n);
        DN_CUDA(cudaMemcpyAsync(d_tok, tok, n * sizeof(int32_t), cudaMemcpyHostToDevice, c->stream));
    }
    /* gather to the distiller */
    r = dsh_trace_enter(c->tf, DSH_OP_GATHER, distiller, (int64_t)n, (int)rows, (int)cols, step, micro, dn_now(a));
    DN_NCCL(ncclGroupStart());
    if (me_d)
        for (int t = 0; t < trainers; ++t) DN_NCCL(ncclRecv(d_tok + n * (size_t)t, n, ncclInt32, t, c->comm, c->stream));
    else
        DN_NCCL(ncclSend(d_tok, n, ncclInt32, distiller, c->comm, c->stream));
    DN_NCCL(ncclGroupEnd());
    if (me_d) DN_CUDA(cudaMemcpyAsync(tok, d_tok, nt * sizeof(int32_t), cudaMemcpyDeviceToHost, c->stream));
    dn_wait(c);
    r->t_done = dn_now(a);
    if (me_d) {
        for (long long i = 0; i < rows * trainers; ++i) dn_teacher(tok + i * cols, cols, out + i * DSH_OUT_COLS);
        DN_CUDA(cudaMemcpyAsync(d_out, out, nto * sizeof(float), cudaMemcpyHostToDevice, c->stream));
    }
    /* scatter back */
    r = dsh_trace_enter(c->tf, DSH_OP_SCATTER, distiller, (int64_t)nout, (int)rows, (int)cols, step, micro, dn_now(a));
    DN_NCCL(ncclGroupStart());
    if (me_d)
        for (int t = 0; t < trainers; ++t)
            DN_NCCL(ncclSend(d_out + nout * (size_t)t, nout, ncclFloat32, t, c->comm, c->stream));
    else
        DN_NCCL(ncclRecv(d_out, nout, ncclFloat32, distiller, c->comm, c->stream));
    DN_NCCL(ncclGroupEnd());
    if (!me_d) DN_CUDA(cudaMemcpyAsync(out, d_out, nout * sizeof(float), cudaMemcpyDeviceToHost, c->stream));
    dn_wait(c);
    r->t_done = dn_now(a);
    if (!me_d)
        for (long long i = 0; i < rows; ++i) {
            dn_teacher(tok + i * cols, cols, want);
            if (memcmp(want, out + i * DSH_OUT_COLS, sizeof want) != 0) c->tf->head.outputs_bad++;
        }
    c->tf->head.exchanges++;
    DN_CUDA(cudaFree(d_tok));
    DN_CUDA(cudaFree(d_out));
    free(tok);
    free(out);
}

static int dn_parse(int argc, char **argv, dn_args *a)
{
    memset(a, 0, sizeof *a);
    a->g = -1, a->steps = -1, a->bug = -1, a->deadline = 30;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        char *end = NULL;
        if (!strcmp(k, "--variant")) { a->bug = !strcmp(v, "bug") ? 1 : !strcmp(v, "fix") ? 0 : -1; continue; }
        if (!strcmp(k, "--trace")) { a->trace = v; continue; }
        if (!strcmp(k, "--g")) a->g = (int)strtol(v, &end, 10);
        else if (!strcmp(k, "--steps")) a->steps = (int)strtol(v, &end, 10);
        else if (!strcmp(k, "--seed")) a->seed = strtoull(v, &end, 10);
        else if (!strcmp(k, "--t0")) a->t0 = strtod(v, &end);
        else if (!strcmp(k, "--deadline")) a->deadline = strtod(v, &end);
        else { fprintf(stderr, "distill_nccl: unknown flag %s\n", k); return -1; }
        if (!end || *end) { fprintf(stderr, "distill_nccl: %s %s: not a number\n", k, v); return -1; }
    }
    if (argc % 2 == 0 || a->bug < 0 || !a->trace || a->g < 1 || a->g > 64 || a->steps < 1 || a->steps > 1000) {
        fprintf(stderr, "distill_nccl: need --variant bug|fix, --trace DIR, --g in [1, 64], --steps in [1, 1000]\n");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dn_args a;
    MPI_Init(&argc, &argv);
    dn_ctx c;
    memset(&c, 0, sizeof c);
    c.a = &a;
    MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c.world);
    if (dn_parse(argc, argv, &a) != 0) MPI_Abort(MPI_COMM_WORLD, 2);
    alarm((unsigned)ceil(a.deadline) + 5u);
    int ndev = 0;
    DN_CUDA(cudaGetDeviceCount(&ndev));
    if (c.world < 2 || c.world > ndev || c.world > DSH_TRACE_MAXRANK) {
        fprintf(stderr, "distill_nccl: %d ranks on %d GPUs: need 2 or more ranks, one GPU each\n", c.world, ndev);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    DN_CUDA(cudaSetDevice(c.rank));
    DN_CUDA(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
    ncclUniqueId id;
    if (c.rank == 0) DN_NCCL(ncclGetUniqueId(&id));
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    DN_NCCL(ncclCommInitRank(&c.comm, c.world, id, c.rank));
    int distiller = c.world - 1;
    c.tf = dsh_trace_open(a.trace, c.rank, c.world, c.rank == distiller ? DSH_ROLE_DISTILLER : DSH_ROLE_TRAINER, a.t0);
    if (!c.tf) {
        fprintf(stderr, "distill_nccl: rank %d: %s\n", c.rank, lab_err_msg());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    c.tf->head.steps = a.steps;
    int step = 0, micro = -1;
    if (c.rank != distiller) {
        c.tf->head.g = a.g;
        int acc_step = 0;
        while (step < a.steps) {
            micro = acc_step;
            if (a.bug) dn_exchange(&c, step, micro, (uint64_t)step * (uint64_t)a.g + (uint64_t)micro);
            else if (micro == 0) dn_exchange(&c, step, micro, (uint64_t)step);
            acc_step = (acc_step + 1) % a.g;
            if (acc_step == 0) step++;
            c.tf->head.step = step;
        }
    } else {
        c.tf->head.g = a.bug ? 0 : a.g;
        if (!a.bug) micro = 0;
        while (step < a.steps) {
            dn_exchange(&c, step, micro, 0);
            step++;
            c.tf->head.step = step;
        }
    }
    dsh_record *r = dsh_trace_enter(c.tf, DSH_OP_FINALIZE, -1, 0, 0, 0, step, micro, dn_now(&a));
    DN_CUDA(cudaStreamSynchronize(c.stream));
    DN_NCCL(ncclCommDestroy(c.comm));
    MPI_Finalize();
    r->t_done = dn_now(&a);
    c.tf->head.finished = 1;
    dsh_trace_close(c.tf);
    return 0;
}
