/* lab_mpi_feed: an `--mpi` rank's hooks into its replay engine (lab_mpi_feed.h). */
#include "lab_mpi_feed.h"

#ifdef LAB_HAVE_MPI

#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lab_mpi_serve.h"

int lab_mpi_tell(lab_mpi_ctx *x, const void *msg, size_t len, int tag)
{
    x->said_at = lab_clock_now();
    return MPI_Send(msg, (int)len, MPI_BYTE, 0, tag, MPI_COMM_WORLD);
}

void lab_mpi_alive(void *vctx)
{
    lab_mpi_ctx *x = vctx;
    if (lab_clock_now() - x->said_at < LAB_MPI_ALIVE_S) return;
    lab_mpi_alive_msg a = {(uint32_t)x->n_reported};
    lab_mpi_tell(x, &a, sizeof a, LAB_MPI_TAG_ALIVE);
}

int lab_mpi_feed(void *vctx, const unsigned char *accept, lab_replay_span *spans)
{
    lab_mpi_ctx *x = vctx;
    if (x->rank == 0) {
        lab_deal_chunk c[LAB_MPI_MAX_PARTS];
        lab_mpi_drain(x);
        size_t k = lab_deal_next(x->dealer, 0, accept, c, LAB_MPI_MAX_PARTS);
        if (!k) return -1;
        lab_mpi_deal_to(x, 0, c, k);
        for (size_t j = 0; j < k; ++j) spans[j] = (lab_replay_span){c[j].first, c[j].end};
        return (int)k;
    }
    if (x->fail[0] || x->over) return -1;
    if (!x->asking) {
        lab_mpi_ask_msg q;
        memset(&q, 0, sizeof q);
        q.seq = ++x->seq;
        q.window = x->window;
        q.nparts = (uint32_t)x->groups.nparts;
        memcpy(q.accept, accept, x->groups.nparts);
        if (lab_mpi_tell(x, &q, sizeof q, LAB_MPI_TAG_ASK) != MPI_SUCCESS) {
            snprintf(x->fail, sizeof x->fail, "rank %d could not ask rank 0 for work (MPI_Send failed)", x->rank);
            return -1;
        }
        x->asking = 1;
        x->asked_at = lab_clock_now();
    }
    int flag = 0;
    if (MPI_Iprobe(0, LAB_MPI_TAG_DEAL, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || !flag) {
        if (lab_clock_now() - x->asked_at <= x->patience) return 0;
        snprintf(x->fail, sizeof x->fail, "rank 0 did not answer a request for work in %.0f s", x->patience);
        return -1;
    }
    lab_mpi_deal_msg d;
    if (MPI_Recv(&d, (int)sizeof d, MPI_BYTE, 0, LAB_MPI_TAG_DEAL, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS ||
        d.seq != x->seq) {
        snprintf(x->fail, sizeof x->fail, "rank 0's answer to request %u could not be read", x->seq);
        return -1;
    }
    if (d.more == LAB_MPI_DEAL_HOLD) { /* rank 0 is still in an earlier window: the request stays open */
        x->asked_at = lab_clock_now();
        return 0;
    }
    x->asking = 0;
    if (d.more == LAB_MPI_DEAL_OVER) x->over = 1;
    if (d.more != LAB_MPI_DEAL_SOME) return -1;
    if (d.n < 1 || d.n > x->groups.nparts) {
        snprintf(x->fail, sizeof x->fail, "rank 0 dealt %u chunks (%zu incidents)", d.n, x->groups.nparts);
        return -1;
    }
    for (uint32_t j = 0; j < d.n; ++j) {
        if (d.c[j].first >= d.c[j].end || d.c[j].end > x->groups.ng) {
            snprintf(x->fail, sizeof x->fail, "rank 0 dealt seed groups [%llu, %llu) of %zu",
                     (unsigned long long)d.c[j].first, (unsigned long long)d.c[j].end, x->groups.ng);
            return -1;
        }
        x->n_dealt += x->groups.start[d.c[j].end] - x->groups.start[d.c[j].first];
        spans[j] = (lab_replay_span){(size_t)d.c[j].first, (size_t)d.c[j].end};
    }
    return (int)d.n;
}

void lab_mpi_case_done(void *vctx, size_t i, const lab_case_record *rec)
{
    lab_mpi_ctx *x = vctx;
    /* A case the interrupt stopped is no result: rank 0 marks every case it did not get so itself. Not sent: after an
     * interrupt rank 0 stops receiving within LAB_MPI_INTERRUPT_WAIT_S, and a queue's worth of such messages would
     * block this rank's sends until mpirun kills it, its last word unsaid. */
    if (rec->o.not_run) return;
    if (x->rank == 0) {
        lab_mpi_take(x, 0, i, &rec->o, rec->first_run);
        lab_mpi_drain(x);
    } else {
        lab_mpi_case_msg m;
        memset(&m, 0, sizeof m);
        m.index = i;
        m.window = x->window;
        m.o = rec->o;
        snprintf(m.first_run, sizeof m.first_run, "%s", rec->first_run);
        lab_mpi_tell(x, &m, sizeof m, LAB_MPI_TAG_CASE);
    }
    if (!x->reported[i]) x->n_reported++;
    x->reported[i] = 1;
    if (x->fault.rank != x->rank) return;
    if (x->fault.kind == LAB_MPI_FAULT_SLOW) {
        struct timespec ts = {LAB_MPI_TEST_SLOW_MS / 1000, (LAB_MPI_TEST_SLOW_MS % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    } else if (x->n_reported * 2 >= x->n_dealt && x->n_reported < x->n_dealt) {
        /* half of what it was dealt is reported, and a case it was dealt is not */
        if (x->fault.kind == LAB_MPI_FAULT_CRASH) raise(SIGKILL);
        for (;;) pause(); /* a stalled rank: alive, silent */
    }
}

#endif
