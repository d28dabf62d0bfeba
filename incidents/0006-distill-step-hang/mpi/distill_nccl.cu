/* distill_nccl: incident 0006's long-lived job over NCCL (dsh_proto.h), one process per GPU: MPI only starts the
 * processes and hands out NCCL unique ids. The shape is an ncclBroadcast from rank 0; the gather to the distiller
 * and the scatter back are grouped ncclSend/ncclRecv (how torch.distributed gathers over NCCL). One communicator
 * serves seed after seed; when the lab gives a seed up, every rank retires its communicator as soon as it has left
 * the seed (ncclCommAbort, which ends the hung kernels, then its stream drains) and makes a new one, between epochs.
 * Built by incident.mk where nvcc and NCCL exist.
 *
 * One communicator at a time, and nothing beside a seed in this process: NCCL's kernels wait for their peers, and
 * any CUDA call that allocates or frees (an abort, a communicator's set-up, growing a buffer) can wait for every
 * kernel of the context, so a rank doing such a thing while its seed has a collective in flight can wait on a peer
 * that waits on it (NCCL's guide: communicators used at different epochs, not side by side). A pool of spare
 * communicators made and connected by a helper thread while seeds ran (and aborts on threads of their own) was
 * measured faster and gave false alarms with 3 trainers: fix seeds judged stalls, a rank stuck in a call for 1.5 s
 * (docs/performance.md). The lab instead keeps several such jobs, processes of their own with a
 * context each, and runs the next seed on another job while this one retires (dsh_job.c). The stream and the
 * staging, sized for the largest exchange of any seed, are made once before the first communicator, so a seed
 * allocates nothing.
 *
 * DSH_NCCL_TIMES=PREFIX: each rank appends what its communicators cost to PREFIX.rankN (abort_s, init_s), for the
 * report's cost figures.
 *
 * Usage: distill_nccl --ctrl FILE      (every seed uses all ranks: trainers = ranks - 1)
 * Run with NCCL_NVLS_ENABLE=0 (the lab's launcher sets it). */
#include <cuda_runtime.h>
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

#include "dsh_proto.h"

typedef struct {
    int rank, world;
    ncclComm_t comm;     /* the communicator seeds run on */
    cudaStream_t stream;
    void *dbuf;          /* device staging, for the largest exchange of any seed */
    void *hbuf;          /* pinned host staging: a copy from pageable memory would block the host until the stream
                            reaches it, behind a hung collective, where the rank could not see the abort word */
    size_t cap;
    void *out_dst;       /* what the posted operation brings back: copied out of hbuf once the stream is done */
    size_t out_bytes;
    FILE *times;
} dn_nccl;

static double dn_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void dn_time(dn_nccl *n, const char *what, double s)
{
    if (!n->times) return;
    fprintf(n->times, "%s %.6f\n", what, s);
    fflush(n->times);
}

#define DN_TRY(call)                                                                                   \
    do {                                                                                               \
        if (!dn_ok(n, (call), #call)) return -1;                                                       \
    } while (0)

static int dn_ok_cuda(dn_nccl *n, cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return 1;
    fprintf(stderr, "distill_nccl: rank %d: %s: %s\n", n->rank, what, cudaGetErrorString(e));
    return 0;
}
static int dn_ok_nccl(dn_nccl *n, ncclResult_t e, const char *what)
{
    if (e == ncclSuccess || e == ncclInProgress) return 1;
    fprintf(stderr, "distill_nccl: rank %d: %s: %s\n", n->rank, what, ncclGetErrorString(e));
    return 0;
}
static int dn_ok(dn_nccl *n, cudaError_t e, const char *what) { return dn_ok_cuda(n, e, what); }
static int dn_ok(dn_nccl *n, ncclResult_t e, const char *what) { return dn_ok_nccl(n, e, what); }

/* The stream and both stagings, for the distiller's gather from every trainer at the largest shape (DSH_ROWS_MAX x
 * DSH_COLS_MAX; test_dsh holds dsh_shape within them): made once, before any communicator. */
static int dn_stage(dn_nccl *n)
{
    n->cap = (size_t)(n->world - 1) * DSH_ROWS_MAX * DSH_COLS_MAX * sizeof(int32_t) + 16;
    DN_TRY(cudaStreamCreateWithFlags(&n->stream, cudaStreamNonBlocking));
    DN_TRY(cudaMalloc(&n->dbuf, n->cap));
    DN_TRY(cudaMallocHost(&n->hbuf, n->cap));
    return 0;
}

/* A new communicator over every rank (collective). */
static int dn_make(dn_nccl *n)
{
    double t0 = dn_now();
    ncclUniqueId id;
    if (n->rank == 0) DN_TRY(ncclGetUniqueId(&id));
    if (MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS) return -1;
    DN_TRY(ncclCommInitRank(&n->comm, n->world, id, n->rank));
    dn_time(n, "init_s", dn_now() - t0);
    return 0;
}

static int dn_begin(dsh_xport *x, int trainers, int *member, int *rank)
{
    dn_nccl *n = (dn_nccl *)x->ctx;
    if (trainers != n->world - 1) {
        fprintf(stderr, "distill_nccl: a seed of %d trainers on a job of %d ranks: the NCCL job runs every rank\n",
                trainers, n->world);
        return -1;
    }
    *member = 1;
    *rank = n->rank;
    return 0;
}

/* The given-up seed's communicator: abort it (its hung kernels end), let the copies queued behind them drain (what
 * they bring back is nobody's), then make the next. Between epochs, so nothing of this job runs beside it. */
static int dn_retire(dsh_xport *x)
{
    dn_nccl *n = (dn_nccl *)x->ctx;
    double t0 = dn_now();
    n->out_bytes = 0;
    ncclCommAbort(n->comm);
    n->comm = NULL;
    DN_TRY(cudaStreamSynchronize(n->stream));
    dn_time(n, "abort_s", dn_now() - t0);
    return dn_make(n);
}

static int dn_bcast(dsh_xport *x, long long shape[2])
{
    dn_nccl *n = (dn_nccl *)x->ctx;
    long long *d = (long long *)n->dbuf, *h = (long long *)n->hbuf;
    memcpy(h, shape, 2 * sizeof(long long));
    DN_TRY(cudaMemcpyAsync(d, h, 2 * sizeof(long long), cudaMemcpyHostToDevice, n->stream));
    DN_TRY(ncclBroadcast(d, d, 2, ncclInt64, 0, n->comm, n->stream));
    DN_TRY(cudaMemcpyAsync(h, d, 2 * sizeof(long long), cudaMemcpyDeviceToHost, n->stream));
    n->out_dst = shape, n->out_bytes = 2 * sizeof(long long);
    return 0;
}

/* Grouped send/recv: the distiller moves `count` elements with each trainer (buf holds one block per trainer);
 * a trainer moves its block with the distiller. to_distiller: the gather's direction. Zero counts are real,
 * synchronising messages in NCCL 2.12 and later. */
static int dn_p2p(dn_nccl *n, void *buf, size_t count, size_t esz, ncclDataType_t t, int to_distiller)
{
    int distiller = n->world - 1, me_d = n->rank == distiller;
    size_t bytes = count * esz * (me_d ? (size_t)distiller : 1);
    if (bytes + 16 > n->cap) {
        fprintf(stderr, "distill_nccl: rank %d: an exchange of %zu bytes, beyond the staging's %zu\n", n->rank, bytes,
                n->cap);
        return -1;
    }
    char *d = (char *)n->dbuf, *h = (char *)n->hbuf;
    if (!(to_distiller ? me_d : !me_d) && bytes) {
        memcpy(h, buf, bytes);
        DN_TRY(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, n->stream));
    }
    DN_TRY(ncclGroupStart());
    if (me_d) {
        for (int k = 0; k < distiller; ++k) {
            char *p = d + (size_t)k * count * esz;
            if (to_distiller) DN_TRY(ncclRecv(p, count, t, k, n->comm, n->stream));
            else DN_TRY(ncclSend(p, count, t, k, n->comm, n->stream));
        }
    } else if (to_distiller) {
        DN_TRY(ncclSend(d, count, t, distiller, n->comm, n->stream));
    } else {
        DN_TRY(ncclRecv(d, count, t, distiller, n->comm, n->stream));
    }
    DN_TRY(ncclGroupEnd());
    if ((to_distiller ? me_d : !me_d) && bytes) {
        DN_TRY(cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, n->stream));
        n->out_dst = buf, n->out_bytes = bytes;
    }
    return 0;
}

static int dn_gather(dsh_xport *x, const int32_t *mine, int32_t *all, size_t count)
{
    dn_nccl *n = (dn_nccl *)x->ctx;
    return dn_p2p(n, n->rank == n->world - 1 ? (void *)all : (void *)mine, count, sizeof(int32_t), ncclInt32, 1);
}

static int dn_scatter(dsh_xport *x, const float *all, float *mine, size_t nout)
{
    dn_nccl *n = (dn_nccl *)x->ctx;
    return dn_p2p(n, n->rank == n->world - 1 ? (void *)all : (void *)mine, nout, sizeof(float), ncclFloat32, 0);
}

static int dn_test(dsh_xport *x)
{
    dn_nccl *n = (dn_nccl *)x->ctx;
    cudaError_t e = cudaStreamQuery(n->stream);
    if (e == cudaSuccess) {
        if (n->out_bytes) memcpy(n->out_dst, n->hbuf, n->out_bytes);
        n->out_bytes = 0;
        return 1;
    }
    if (e != cudaErrorNotReady) return dn_ok(n, e, "cudaStreamQuery") ? 0 : -1;
    ncclResult_t async = ncclSuccess;
    if (!dn_ok(n, ncclCommGetAsyncError(n->comm, &async), "ncclCommGetAsyncError") || !dn_ok(n, async, "NCCL"))
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    MPI_Init(&argc, &argv);
    static dn_nccl n;
    MPI_Comm_rank(MPI_COMM_WORLD, &n.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n.world);
    const char *ctrl_path = argc == 3 && !strcmp(argv[1], "--ctrl") ? argv[2] : NULL;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess) ndev = 0;
    if (!ctrl_path || n.world < 2 || n.world > ndev || n.world > DSH_TRACE_MAXRANK) {
        fprintf(stderr, "distill_nccl: usage: distill_nccl --ctrl FILE; %d ranks on %d GPUs: need 2 or more ranks, "
                        "one GPU each\n", n.world, ndev);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* Lean communicators (DSH_NCCL_LEAN=0 turns this off): two channels and 1 MiB buffers (NCCL_MAX_NCHANNELS,
     * NCCL_MAX_P2P_NCHANNELS, NCCL_BUFFSIZE, where the user set none). The protocol moves a few hundred bytes a
     * collective, so two channels carry it as fast as NCCL's default 16 or more, and a communicator's connection costs
     * 0.11 s instead of 0.48 on 2 x H200 (docs/performance.md). */
    const char *lean = getenv("DSH_NCCL_LEAN");
    if (!lean || strcmp(lean, "0")) {
        setenv("NCCL_MAX_NCHANNELS", "2", 0);
        setenv("NCCL_MAX_P2P_NCHANNELS", "2", 0);
        setenv("NCCL_BUFFSIZE", "1048576", 0);
    }
    const char *tp = getenv("DSH_NCCL_TIMES");
    if (tp && *tp) {
        char path[600];
        snprintf(path, sizeof path, "%s.rank%d", tp, n.rank);
        n.times = fopen(path, "a");
    }
    dsh_ctrl *ctrl = dsh_ctrl_map(ctrl_path, 0, 0);
    if (!ctrl || cudaSetDevice(n.rank) != cudaSuccess) {
        fprintf(stderr, "distill_nccl: rank %d: %s\n", n.rank, ctrl ? "no CUDA device" : lab_err_msg());
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    if (dn_stage(&n) || dn_make(&n)) MPI_Abort(MPI_COMM_WORLD, 3);
    dsh_xport x = {&n, dn_begin, dn_retire, dn_bcast, dn_gather, dn_scatter, dn_test, "distill_nccl"};
    int rc = dsh_serve(&x, ctrl, n.rank, n.world);
    if (n.comm) ncclCommAbort(n.comm);
    if (n.times) fclose(n.times);
    fflush(NULL);
    _exit(rc == 0 ? 0 : 3);
}
