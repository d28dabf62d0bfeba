/* distill_job: incident 0006's long-lived MPI job (dsh_proto.h): N training ranks and one distillation rank per
 * seed, over Open MPI. The batch shape is an MPI_Ibcast from rank 0; the batch goes to the distiller and the
 * teacher outputs come back point to point (as torch.distributed gathers and scatters over NCCL), each seed on
 * a communicator split off MPI_COMM_WORLD for it. Started once by the lab with mpirun; the lab posts seeds in
 * the control file and ends the job through it.
 *
 * Usage: distill_job --ctrl FILE [--startup-delay S]
 * The last rank of the job is the distiller of every seed; seeds with fewer trainers than the job has leave the
 * other ranks idle. */
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

#include "dsh_proto.h"

enum { DJ_TAG_GATHER = 11, DJ_TAG_SCATTER = 12 };

typedef struct {
    int jrank, jworld;
    MPI_Comm data;      /* the seed's communicator (MPI_COMM_NULL: none, or this rank is idle) */
    int size;           /* its ranks: trainers + 1 */
    MPI_Request req[DSH_TRACE_MAXRANK + 1];
    int nreq;
} dj_mpi;

/* The seed's communicator, given up: left with its pending requests (MPI cannot cancel a collective), never used or
 * freed again. */
static int dj_retire(dsh_xport *x)
{
    dj_mpi *m = (dj_mpi *)x->ctx;
    m->data = MPI_COMM_NULL;
    m->nreq = 0;
    return 0;
}

static int dj_begin(dsh_xport *x, int trainers, int *member, int *rank)
{
    dj_mpi *m = (dj_mpi *)x->ctx;
    /* The previous seed's communicator, unless it was retired: it ended cleanly, so it is freed. */
    if (m->data != MPI_COMM_NULL) MPI_Comm_free(&m->data);
    m->data = MPI_COMM_NULL;
    m->nreq = 0;
    int in = m->jrank < trainers || m->jrank == m->jworld - 1;
    if (MPI_Comm_split(MPI_COMM_WORLD, in ? 0 : MPI_UNDEFINED, m->jrank, &m->data) != MPI_SUCCESS) return -1;
    *member = m->data != MPI_COMM_NULL;
    if (*member) {
        MPI_Comm_set_errhandler(m->data, MPI_ERRORS_RETURN);
        MPI_Comm_rank(m->data, rank);
        MPI_Comm_size(m->data, &m->size);
    }
    return 0;
}

static int dj_fail(const char *what, int rc)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "distill_job: %s: %s\n", what, msg);
    return -1;
}

static int dj_bcast(dsh_xport *x, long long shape[2])
{
    dj_mpi *m = (dj_mpi *)x->ctx;
    int rc = MPI_Ibcast(shape, 2, MPI_LONG_LONG, 0, m->data, &m->req[0]);
    m->nreq = 1;
    return rc == MPI_SUCCESS ? 0 : dj_fail("MPI_Ibcast", rc);
}

/* Point to point, as the distiller's gather and scatter are: `buf` holds n elements per trainer on the distiller. */
static int dj_p2p(dj_mpi *m, void *buf, size_t n, MPI_Datatype t, size_t esz, int tag, int to_distiller)
{
    int distiller = m->size - 1, rank = 0, rc = MPI_SUCCESS;
    MPI_Comm_rank(m->data, &rank);
    m->nreq = 0;
    if (rank == distiller) {
        for (int k = 0; k < distiller && rc == MPI_SUCCESS; ++k) {
            char *p = (char *)buf + (size_t)k * n * esz;
            rc = to_distiller ? MPI_Irecv(p, (int)n, t, k, tag, m->data, &m->req[m->nreq++])
                              : MPI_Isend(p, (int)n, t, k, tag, m->data, &m->req[m->nreq++]);
        }
    } else {
        rc = to_distiller ? MPI_Isend(buf, (int)n, t, distiller, tag, m->data, &m->req[m->nreq++])
                          : MPI_Irecv(buf, (int)n, t, distiller, tag, m->data, &m->req[m->nreq++]);
    }
    return rc == MPI_SUCCESS ? 0 : dj_fail(to_distiller ? "gather" : "scatter", rc);
}

static int dj_gather(dsh_xport *x, const int32_t *mine, int32_t *all, size_t n)
{
    dj_mpi *m = (dj_mpi *)x->ctx;
    int rank = 0;
    MPI_Comm_rank(m->data, &rank);
    return dj_p2p(m, rank == m->size - 1 ? (void *)all : (void *)mine, n, MPI_INT32_T, sizeof(int32_t), DJ_TAG_GATHER, 1);
}

static int dj_scatter(dsh_xport *x, const float *all, float *mine, size_t nout)
{
    dj_mpi *m = (dj_mpi *)x->ctx;
    int rank = 0;
    MPI_Comm_rank(m->data, &rank);
    return dj_p2p(m, rank == m->size - 1 ? (void *)all : (void *)mine, nout, MPI_FLOAT, sizeof(float), DJ_TAG_SCATTER, 0);
}

static int dj_test(dsh_xport *x)
{
    dj_mpi *m = (dj_mpi *)x->ctx;
    int done = 0;
    MPI_Status st[DSH_TRACE_MAXRANK + 1];
    int rc = MPI_Testall(m->nreq, m->req, &done, st);
    if (rc == MPI_ERR_IN_STATUS) {
        for (int k = 0; k < m->nreq; ++k)
            if (st[k].MPI_ERROR != MPI_SUCCESS && st[k].MPI_ERROR != MPI_ERR_PENDING) return dj_fail("request", st[k].MPI_ERROR);
    }
    if (rc != MPI_SUCCESS) return dj_fail("MPI_Testall", rc);
    return done ? 1 : 0;
}

int main(int argc, char **argv)
{
    /* Dies with mpirun (which dies with the lab's worker): a killed worker leaves no rank behind. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    MPI_Init(&argc, &argv);
    dj_mpi m;
    memset(&m, 0, sizeof m);
    m.data = MPI_COMM_NULL;
    MPI_Comm_rank(MPI_COMM_WORLD, &m.jrank);
    MPI_Comm_size(MPI_COMM_WORLD, &m.jworld);
    const char *ctrl_path = NULL;
    double delay = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--ctrl")) ctrl_path = argv[i + 1];
        else if (!strcmp(argv[i], "--startup-delay")) delay = strtod(argv[i + 1], NULL);
    }
    if (!ctrl_path || argc % 2 == 0 || m.jworld < 2 || m.jworld > DSH_TRACE_MAXRANK) {
        fprintf(stderr, "distill_job: usage: distill_job --ctrl FILE [--startup-delay S], 2 to %d ranks\n",
                DSH_TRACE_MAXRANK);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (delay > 0) { /* tests: a slow start-up */
        struct timespec d = {(time_t)delay, (long)((delay - floor(delay)) * 1e9)};
        while (nanosleep(&d, &d) != 0 && errno == EINTR) {}
    }
    dsh_ctrl *ctrl = dsh_ctrl_map(ctrl_path, 0, 0);
    if (!ctrl) {
        fprintf(stderr, "distill_job: rank %d: %s\n", m.jrank, lab_err_msg());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    dsh_xport x = {&m, dj_begin, dj_retire, dj_bcast, dj_gather, dj_scatter, dj_test, "distill_job"};
    int rc = dsh_serve(&x, ctrl, m.jrank, m.jworld);
    /* Pending requests of abandoned seeds would keep MPI_Finalize waiting: leave without it (the lab ends the
     * job's processes either way). */
    fflush(NULL);
    _exit(rc == 0 ? 0 : 3);
}
