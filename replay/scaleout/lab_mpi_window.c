/* lab_mpi_window: the windowed driver's hooks of an `--mpi` replay (lab_mpi_window.h). */
#include "lab_mpi_window.h"

#ifdef LAB_HAVE_MPI

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_isolate.h"
#include "lab_mpi_feed.h"
#include "lab_mpi_serve.h"

lab_status lab_mpi_window_run(void *vctx, lab_case_record *recs, size_t n)
{
    lab_mpi_ctx *x = vctx;
    x->all = recs;
    x->n_all = n;
    x->window++;
    lab_status st = lab_replay_groups_make(recs, n, &x->groups);
    if (st == LAB_OK && !(x->reported = calloc(n ? n : 1, 1))) st = lab_err_set(LAB_ERR_NOMEM, "--mpi: out of memory");
    if (st == LAB_OK && x->rank == 0) st = lab_mpi_dealer_make(x);
    if (st == LAB_OK) {
        x->groups_total += x->groups.ng;
        if (x->rank == 0) {
            x->in_window = 1;
            lab_mpi_answer_pending(x);
        }
        st = lab_replay_execute_fed(x->opts, recs, n, &x->groups, lab_mpi_feed, x, lab_mpi_case_done, x);
        if (st == LAB_OK && x->fail[0]) st = lab_err_set(LAB_ERR_IO, "%s", x->fail);
        if (x->rank == 0) {
            if (st != LAB_OK) { /* what is left of the window goes to the others; no window starts after it */
                x->ranks[0].status = LAB_RANK_BAD;
                snprintf(x->ranks[0].why, sizeof x->ranks[0].why, "its harness failed: %s", lab_err_msg());
                lab_deal_retire(x->dealer, 0);
            }
            lab_mpi_gather_window(x);
            lab_mpi_settle(x, lab_isolate_interrupted());
            x->in_window = 0;
        }
    }
    lab_replay_groups_free(&x->groups);
    free(x->reported), free(x->got), free(x->dealt_to);
    lab_deal_free(x->dealer);
    x->reported = NULL, x->got = NULL, x->dealt_to = NULL, x->dealer = NULL, x->all = NULL, x->n_all = 0;
    return st;
}

int lab_mpi_window_finish(void *vctx)
{
    lab_mpi_ctx *x = vctx;
    x->over = 1;
    if (x->ranks[0].status == LAB_RANK_RUNNING) x->ranks[0].status = LAB_RANK_DONE;
    x->ranks[0].wall_s = lab_clock_now() - x->t0;
    lab_mpi_gather(x);
    int lost;
    return lab_mpi_failed(x, lab_isolate_interrupted(), &lost);
}

int lab_mpi_window_over(void *vctx)
{
    return ((lab_mpi_ctx *)vctx)->over;
}

#endif
