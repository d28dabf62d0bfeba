/* distill_nccl: incident 0006's long-lived job over NCCL (dsh_proto.h), one process per GPU: MPI only starts the
 * processes and hands out NCCL unique ids. The shape is an ncclBroadcast from rank 0; the gather to the distiller
 * and the scatter back are grouped ncclSend/ncclRecv (how torch.distributed gathers over NCCL). One communicator
 * serves seed after seed; when the lab abandons a stalled seed, every rank aborts it (ncclCommAbort, which ends
 * the hung kernels) and the next seed makes a new one. Built by incident.mk where nvcc and NCCL exist.
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
#include <unistd.h>

#include "dsh_proto.h"

typedef struct {
    int rank, world;
    ncclComm_t comm;
    cudaStream_t stream;
    void *dbuf;          /* device staging, grown as needed */
    size_t dcap;
    void *hbuf;          /* pinned host staging: a copy from pageable memory would block the host until the stream
                            reaches it, behind a hung collective, where the rank could not see the abort word */
    size_t hcap;
    void *out_dst;       /* what the posted operation brings back: copied out of hbuf once the stream is done */
    size_t out_bytes;
} dn_nccl;

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

static void *dn_dev(dn_nccl *n, size_t bytes)
{
    if (bytes > n->dcap) {
        if (n->dbuf) cudaFree(n->dbuf);
        n->dbuf = NULL;
        n->dcap = 0;
        if (cudaMalloc(&n->dbuf, bytes) != cudaSuccess) return NULL;
        n->dcap = bytes;
    }
    return n->dbuf;
}

/* Pinned host staging of at least `bytes` (grown only between operations: the stream is idle then). */
static void *dn_host(dn_nccl *n, size_t bytes)
{
    if (bytes > n->hcap) {
        if (n->hbuf) cudaFreeHost(n->hbuf);
        n->hbuf = NULL;
        n->hcap = 0;
        if (cudaMallocHost(&n->hbuf, bytes) != cudaSuccess) return NULL;
        n->hcap = bytes;
    }
    return n->hbuf;
}

static int dn_begin(dsh_xport *x, int trainers, int fresh, int *member, int *rank)
{
    dn_nccl *n = (dn_nccl *)x->ctx;
    if (trainers != n->world - 1) {
        fprintf(stderr, "distill_nccl: a seed of %d trainers on a job of %d ranks: the NCCL job runs every rank\n",
                trainers, n->world);
        return -1;
    }
    *member = 1;
    *rank = n->rank;
    if (n->comm && !fresh) return 0;
    if (n->comm) {
        /* The abandoned seed's communicator: aborting it ends its hung kernels; then the stream drains. */
        ncclCommAbort(n->comm);
        n->comm = NULL;
        DN_TRY(cudaStreamSynchronize(n->stream));
        n->out_bytes = 0; /* what the abandoned operation would have brought back is nobody's */
    }
    /* A new communicator. Measured on 4 x H200 (comm_s): abort and new communicator about 0.5 s on 2 GPUs, and the
     * seed on it about 0.4 s more (not measured apart: lazy connection on first use is a guess). Sixteen
     * communicators made ahead in one grouped init saved nothing, so the abort is the cost (reports/0006-nccl-h200x4). */
    ncclUniqueId id;
    if (n->rank == 0) DN_TRY(ncclGetUniqueId(&id));
    if (MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS) return -1;
    DN_TRY(ncclCommInitRank(&n->comm, n->world, id, n->rank));
    return 0;
}

static int dn_bcast(dsh_xport *x, long long shape[2])
{
    dn_nccl *n = (dn_nccl *)x->ctx;
    long long *d = (long long *)dn_dev(n, 2 * sizeof(long long)), *h = (long long *)dn_host(n, 2 * sizeof(long long));
    if (!d || !h) return -1;
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
    char *d = (char *)dn_dev(n, bytes + 16), *h = (char *)dn_host(n, bytes + 16);
    if (!d || !h) return -1;
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
    dn_nccl n;
    memset(&n, 0, sizeof n);
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
    dsh_ctrl *ctrl = dsh_ctrl_map(ctrl_path, 0, 0);
    if (!ctrl || cudaSetDevice(n.rank) != cudaSuccess ||
        cudaStreamCreateWithFlags(&n.stream, cudaStreamNonBlocking) != cudaSuccess) {
        fprintf(stderr, "distill_nccl: rank %d: %s\n", n.rank, ctrl ? "no CUDA device or stream" : lab_err_msg());
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    dsh_xport x = {&n, dn_begin, dn_bcast, dn_gather, dn_scatter, dn_test, "distill_nccl"};
    int rc = dsh_serve(&x, ctrl, n.rank, n.world);
    if (n.comm) ncclCommAbort(n.comm);
    fflush(NULL);
    _exit(rc == 0 ? 0 : 3);
}
