/* distill_nccl: incident 0006's long-lived job over NCCL (dsh_proto.h), one process per GPU: MPI only starts the
 * processes and hands out NCCL unique ids. The shape is an ncclBroadcast from rank 0; the gather to the distiller
 * and the scatter back are grouped ncclSend/ncclRecv (how torch.distributed gathers over NCCL). One communicator
 * serves seed after seed; when the lab abandons a stalled seed, every rank retires it (ncclCommAbort, which ends
 * the hung kernels) and the next seed runs on a new one. Built by incident.mk where nvcc and NCCL exist.
 *
 * Communicators live in slots, each with its own stream and staging buffers (an aborted communicator's stream
 * may still run the copies queued behind its hung collective, so nothing of it is reused until that stream has
 * drained). Every slot's stream and staging, sized for the largest exchange of any seed, is made before the first
 * communicator: a cudaFree or cudaMalloc while a seed runs waits for the whole device, the spares' connecting
 * collectives included, and those need every rank, one of which may be waiting the same way (a fix seed on 4 x
 * H200 was judged a stall so: reports/multi-gpu-h200x4). With DSH_NCCL_SPARES=n (default DN_SPARES_DEFAULT) a helper thread keeps n spare communicators made
 * and connected ahead (a broadcast and a send/recv each way between the distiller and every trainer, so the
 * seed's first collectives pay no connection set-up), and every retired one is aborted on a thread of its own:
 * a seed after a hung one starts on a spare at once. DSH_NCCL_SPARES=0: abort and a new communicator inline, at
 * the next seed's start. MPI is then called by one thread at a time (the helper, or the main thread with no
 * helper), so MPI_THREAD_SERIALIZED is enough.
 *
 * DSH_NCCL_TIMES=PREFIX: each rank appends what its communicators cost to PREFIX.rankN (abort, init, warm-up,
 * waiting for a spare), for the report's cost figures.
 *
 * Usage: distill_nccl --ctrl FILE      (every seed uses all ranks: trainers = ranks - 1)
 * Run with NCCL_NVLS_ENABLE=0 (the lab's launcher sets it). */
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "dsh_proto.h"

#define DN_SLOTS 8
#define DN_SPARES_DEFAULT 2

enum { DN_FREE = 0, DN_MAKING, DN_READY, DN_LIVE, DN_DYING };

typedef struct {
    ncclComm_t comm;
    cudaStream_t stream;
    void *dbuf;          /* device staging, grown as needed */
    size_t dcap;
    void *hbuf;          /* pinned host staging: a copy from pageable memory would block the host until the stream
                            reaches it, behind a hung collective, where the rank could not see the abort word */
    size_t hcap;
    int state;           /* DN_*, under the job's mutex */
    unsigned long made;  /* which communicator of the job this is (0: the first): the same number on every rank */
} dn_slot;

typedef struct {
    int rank, world, spares;
    dn_slot slot[DN_SLOTS];
    dn_slot *live;       /* the communicator seeds run on */
    void *out_dst;       /* what the posted operation brings back: copied out of the live hbuf once its stream is done */
    size_t out_bytes;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int failed;          /* the helper could not make a spare (and ended) */
    unsigned long made;  /* communicators begun so far */
    FILE *times;
} dn_nccl;

typedef struct {
    dn_nccl *n;
    dn_slot *s;
} dn_retire;

static double dn_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void dn_time(dn_nccl *n, const char *what, double s)
{
    if (!n->times) return;
    pthread_mutex_lock(&n->mu);
    fprintf(n->times, "%s %.6f\n", what, s);
    fflush(n->times);
    pthread_mutex_unlock(&n->mu);
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

/* Device and pinned host staging of a slot, at least `bytes` each: made once by dn_slots; grown here only for an
 * exchange beyond the largest of dsh_shape (none: test_dsh holds it to DSH_ROWS_MAX x DSH_COLS_MAX). */
static int dn_stage(dn_slot *s, size_t bytes)
{
    if (bytes > s->dcap) {
        if (s->dbuf) cudaFree(s->dbuf);
        s->dbuf = NULL, s->dcap = 0;
        if (cudaMalloc(&s->dbuf, bytes) != cudaSuccess) return -1;
        s->dcap = bytes;
    }
    if (bytes > s->hcap) {
        if (s->hbuf) cudaFreeHost(s->hbuf);
        s->hbuf = NULL, s->hcap = 0;
        if (cudaMallocHost(&s->hbuf, bytes) != cudaSuccess) return -1;
        s->hcap = bytes;
    }
    return 0;
}

/* Every slot's stream and staging for the largest exchange of any seed (the distiller's gather from every trainer),
 * before the first communicator and the helper: nothing allocates while a seed runs. */
static int dn_slots(dn_nccl *n)
{
    size_t most = (size_t)(n->world - 1) * DSH_ROWS_MAX * DSH_COLS_MAX * sizeof(int32_t) + 16;
    for (int i = 0; i < DN_SLOTS; ++i) {
        dn_slot *s = &n->slot[i];
        DN_TRY(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
        if (dn_stage(s, most)) {
            fprintf(stderr, "distill_nccl: rank %d: no memory for a communicator's staging (%zu bytes)\n", n->rank,
                    most);
            return -1;
        }
    }
    return 0;
}

/* Makes slot s's communicator over every rank (collective: every rank makes its slots in the same order), and with
 * connect, runs one broadcast and a send/recv each way between the distiller and every trainer on it. */
static int dn_make(dn_nccl *n, dn_slot *s, int connect)
{
    double t0 = dn_now();
    ncclUniqueId id;
    if (n->rank == 0) DN_TRY(ncclGetUniqueId(&id));
    if (MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS) return -1;
    DN_TRY(ncclCommInitRank(&s->comm, n->world, id, n->rank));
    double t1 = dn_now();
    dn_time(n, "init_s", t1 - t0);
    if (!connect) return 0;
    int distiller = n->world - 1;
    char *d = (char *)s->dbuf;
    DN_TRY(ncclBroadcast(d, d, 2, ncclInt64, 0, s->comm, s->stream));
    for (int dir = 0; dir < 2; ++dir) {
        DN_TRY(ncclGroupStart());
        for (int k = 0; k < distiller; ++k) {
            int me_d = n->rank == distiller, peer = me_d ? k : distiller;
            if (!me_d && k != n->rank) continue;
            if (me_d == (dir == 0)) DN_TRY(ncclRecv(d + 64 + 16 * k, 4, ncclInt32, peer, s->comm, s->stream));
            else DN_TRY(ncclSend(d + 64 + 16 * k, 4, ncclInt32, peer, s->comm, s->stream));
        }
        DN_TRY(ncclGroupEnd());
    }
    DN_TRY(cudaStreamSynchronize(s->stream));
    dn_time(n, "connect_s", dn_now() - t1);
    return 0;
}

/* Ends a retired slot's communicator and waits for its stream; the slot is then free for a new one. */
static void dn_abort(dn_nccl *n, dn_slot *s)
{
    double t0 = dn_now();
    ncclCommAbort(s->comm);
    s->comm = NULL;
    cudaStreamSynchronize(s->stream);
    dn_time(n, "abort_s", dn_now() - t0);
    pthread_mutex_lock(&n->mu);
    s->state = DN_FREE;
    pthread_cond_broadcast(&n->cv);
    pthread_mutex_unlock(&n->mu);
}

static void *dn_abort_thread(void *arg)
{
    dn_retire *r = (dn_retire *)arg;
    cudaSetDevice(r->n->rank);
    dn_abort(r->n, r->s);
    free(r);
    return NULL;
}

static int dn_count(dn_nccl *n, int state)
{
    int c = 0;
    for (int i = 0; i < DN_SLOTS; ++i) c += n->slot[i].state == state;
    return c;
}

/* The helper: keeps n->spares communicators made. Every rank's helper makes them in the same order (the k-th
 * spare of every rank is one communicator); a rank whose free slots are all still draining waits, and so do the
 * others, inside the collective init. */
static void *dn_spare_thread(void *arg)
{
    dn_nccl *n = (dn_nccl *)arg;
    cudaSetDevice(n->rank);
    pthread_mutex_lock(&n->mu);
    for (;;) {
        dn_slot *s = NULL;
        for (;;) {
            if (dn_count(n, DN_READY) + dn_count(n, DN_MAKING) < n->spares)
                for (int i = 0; i < DN_SLOTS && !s; ++i)
                    if (n->slot[i].state == DN_FREE) s = &n->slot[i];
            if (s) break;
            pthread_cond_wait(&n->cv, &n->mu);
        }
        s->state = DN_MAKING;
        s->made = n->made++;
        pthread_mutex_unlock(&n->mu);
        int rc = dn_make(n, s, 1);
        pthread_mutex_lock(&n->mu);
        s->state = rc ? DN_FREE : DN_READY;
        if (rc) n->failed = 1;
        pthread_cond_broadcast(&n->cv);
        if (rc) break;
    }
    pthread_mutex_unlock(&n->mu);
    return NULL;
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
    if (!fresh) return 0;
    n->out_bytes = 0; /* what the abandoned operation would have brought back is nobody's */
    dn_slot *old = n->live;
    if (!n->spares) {
        /* Inline: abort the abandoned seed's communicator, let its stream drain, make a new one in the slot. */
        dn_abort(n, old);
        old->state = DN_LIVE;
        return dn_make(n, old, 0);
    }
    /* The abandoned communicator is aborted on a thread of its own; the seed starts on a spare. */
    double t0 = dn_now();
    pthread_mutex_lock(&n->mu);
    old->state = DN_DYING;
    pthread_cond_broadcast(&n->cv);
    pthread_mutex_unlock(&n->mu);
    dn_retire *r = (dn_retire *)malloc(sizeof *r);
    pthread_t t;
    if (!r) return -1;
    r->n = n, r->s = old;
    if (pthread_create(&t, NULL, dn_abort_thread, r) != 0) {
        free(r);
        dn_abort(n, old);
    } else {
        pthread_detach(t);
    }
    /* The oldest ready spare: the k-th spare taken on every rank is then the k-th made, one communicator. Slots
     * are reused in whatever order their aborts end, so the first ready slot by index can be a newer spare on one
     * rank than on another, and their collectives would pair with another seed's. */
    pthread_mutex_lock(&n->mu);
    dn_slot *s = NULL;
    while (!s && !n->failed) {
        for (int i = 0; i < DN_SLOTS; ++i)
            if (n->slot[i].state == DN_READY && (!s || n->slot[i].made < s->made)) s = &n->slot[i];
        if (!s && !n->failed) pthread_cond_wait(&n->cv, &n->mu);
    }
    if (s) s->state = DN_LIVE;
    pthread_cond_broadcast(&n->cv);
    pthread_mutex_unlock(&n->mu);
    if (!s) {
        fprintf(stderr, "distill_nccl: rank %d: no spare communicator could be made\n", n->rank);
        return -1;
    }
    n->live = s;
    dn_time(n, "spare_wait_s", dn_now() - t0);
    return 0;
}

static int dn_bcast(dsh_xport *x, long long shape[2])
{
    dn_nccl *n = (dn_nccl *)x->ctx;
    dn_slot *s = n->live;
    if (dn_stage(s, 2 * sizeof(long long))) return -1;
    long long *d = (long long *)s->dbuf, *h = (long long *)s->hbuf;
    memcpy(h, shape, 2 * sizeof(long long));
    DN_TRY(cudaMemcpyAsync(d, h, 2 * sizeof(long long), cudaMemcpyHostToDevice, s->stream));
    DN_TRY(ncclBroadcast(d, d, 2, ncclInt64, 0, s->comm, s->stream));
    DN_TRY(cudaMemcpyAsync(h, d, 2 * sizeof(long long), cudaMemcpyDeviceToHost, s->stream));
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
    dn_slot *s = n->live;
    if (dn_stage(s, bytes + 16)) return -1;
    char *d = (char *)s->dbuf, *h = (char *)s->hbuf;
    if (!(to_distiller ? me_d : !me_d) && bytes) {
        memcpy(h, buf, bytes);
        DN_TRY(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s->stream));
    }
    DN_TRY(ncclGroupStart());
    if (me_d) {
        for (int k = 0; k < distiller; ++k) {
            char *p = d + (size_t)k * count * esz;
            if (to_distiller) DN_TRY(ncclRecv(p, count, t, k, s->comm, s->stream));
            else DN_TRY(ncclSend(p, count, t, k, s->comm, s->stream));
        }
    } else if (to_distiller) {
        DN_TRY(ncclSend(d, count, t, distiller, s->comm, s->stream));
    } else {
        DN_TRY(ncclRecv(d, count, t, distiller, s->comm, s->stream));
    }
    DN_TRY(ncclGroupEnd());
    if ((to_distiller ? me_d : !me_d) && bytes) {
        DN_TRY(cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, s->stream));
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
    dn_slot *s = n->live;
    cudaError_t e = cudaStreamQuery(s->stream);
    if (e == cudaSuccess) {
        if (n->out_bytes) memcpy(n->out_dst, s->hbuf, n->out_bytes);
        n->out_bytes = 0;
        return 1;
    }
    if (e != cudaErrorNotReady) return dn_ok(n, e, "cudaStreamQuery") ? 0 : -1;
    ncclResult_t async = ncclSuccess;
    if (!dn_ok(n, ncclCommGetAsyncError(s->comm, &async), "ncclCommGetAsyncError") || !dn_ok(n, async, "NCCL"))
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    static dn_nccl n;
    MPI_Comm_rank(MPI_COMM_WORLD, &n.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n.world);
    const char *ctrl_path = argc == 3 && !strcmp(argv[1], "--ctrl") ? argv[2] : NULL;
    const char *sp = getenv("DSH_NCCL_SPARES");
    n.spares = sp && *sp ? atoi(sp) : DN_SPARES_DEFAULT;
    if (n.spares < 0) n.spares = 0;
    if (n.spares > DN_SLOTS - 4) n.spares = DN_SLOTS - 4; /* room for the live one and two still draining */
    if (provided < MPI_THREAD_SERIALIZED) n.spares = 0;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess) ndev = 0;
    if (!ctrl_path || n.world < 2 || n.world > ndev || n.world > DSH_TRACE_MAXRANK) {
        fprintf(stderr, "distill_nccl: usage: distill_nccl --ctrl FILE; %d ranks on %d GPUs: need 2 or more ranks, "
                        "one GPU each\n", n.world, ndev);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* Lean communicators (DSH_NCCL_LEAN=0 turns this off): two channels and 1 MiB buffers (NCCL_MAX_NCHANNELS,
     * NCCL_MAX_P2P_NCHANNELS, NCCL_BUFFSIZE, where the user set none). The protocol moves a few hundred bytes a
     * collective, so two channels carry it as fast as NCCL's default 16 or more, and a spare's connection costs 0.11 s
     * instead of 0.48 on 2 x H200 (reports/0006-nccl-h200x4). */
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
    pthread_mutex_init(&n.mu, NULL);
    pthread_cond_init(&n.cv, NULL);
    dsh_ctrl *ctrl = dsh_ctrl_map(ctrl_path, 0, 0);
    if (!ctrl || cudaSetDevice(n.rank) != cudaSuccess) {
        fprintf(stderr, "distill_nccl: rank %d: %s\n", n.rank, ctrl ? "no CUDA device" : lab_err_msg());
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    /* The first communicator, made before any seed; then the helper makes the spares. */
    n.live = &n.slot[0];
    n.live->state = DN_LIVE;
    n.made = 1;
    if (dn_slots(&n) || dn_make(&n, n.live, 0)) MPI_Abort(MPI_COMM_WORLD, 3);
    pthread_t helper;
    if (n.spares && pthread_create(&helper, NULL, dn_spare_thread, &n) != 0) n.spares = 0;
    dsh_xport x = {&n, dn_begin, dn_bcast, dn_gather, dn_scatter, dn_test, "distill_nccl"};
    int rc = dsh_serve(&x, ctrl, n.rank, n.world);
    if (n.live->comm) ncclCommAbort(n.live->comm);
    if (n.times) fclose(n.times);
    fflush(NULL);
    _exit(rc == 0 ? 0 : 3);
}
