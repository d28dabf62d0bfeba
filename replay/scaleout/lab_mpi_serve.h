/* lab_mpi_serve: rank 0 of an `--mpi` replay: the dealing of seed groups to the ranks (lab_deal), every message of
 * theirs taken and answered, the ranks judged (a rank whose process is gone crashed, one silent too long hung), every
 * case gathered and the unreported ones settled, and the account of the ranks (summary.json's "mpi" and "ranks", the
 * table after the report). Called on rank 0 only, from its run's loop (lab_isolate_on_tick) and after its own cases. */
#ifndef LAB_MPI_SERVE_H
#define LAB_MPI_SERVE_H

#include <stdio.h>

#include "lab_mpi_int.h"

struct cJSON;

/* Rank 0: the dealing of x->all's seed groups (x->groups): who got which case, and the dealer, every rank's weight as
 * its hello said, the ranks no longer running left out. LAB_ERR_NOMEM or lab_deal_create's error. */
lab_status lab_mpi_dealer_make(lab_mpi_ctx *x);

/* Rank 0: the deal c[0..k) goes to rank r: its chunks' cases are r's from now on. */
void lab_mpi_deal_to(lab_mpi_ctx *x, int r, const lab_deal_chunk *c, size_t k);

/* Rank 0's turn while its own cases run (lab_isolate_on_tick): every message answered, the ranks judged once a
 * second. */
void lab_mpi_serve(void *vctx);

/* Rank 0: takes every message that has arrived, without waiting: hellos, cases, requests for work (answered at once),
 * last words. */
void lab_mpi_drain(lab_mpi_ctx *x);

/* Rank 0: a finished case from rank src (itself included); a rerun after a device error replaces the first report. */
void lab_mpi_take(lab_mpi_ctx *x, int src, size_t i, const lab_job_outcome *o, const char *first_run);

/* Rank 0: answers the requests kept open for the window it has now reached (or every one, the run over). */
void lab_mpi_answer_pending(lab_mpi_ctx *x);

/* Rank 0, after its own cases: serves and judges until every other rank said its last word or was judged. */
void lab_mpi_gather(lab_mpi_ctx *x);

/* Rank 0, its own cases of the window run: serves and judges until every case of the window dealt to another rank is
 * reported (or its rank judged) and nothing is left to deal (or no rank is left to take it); interrupted, it waits
 * LAB_MPI_INTERRUPT_WAIT_S for the others' word. */
void lab_mpi_gather_window(lab_mpi_ctx *x);

/* Rank 0, done gathering x->all's cases: each one no one reported gets its outcome (interrupted: not run, left out of
 * the set and named by the resume command; else CRASH, HANG or ERROR naming the rank it was dealt to, and the run
 * counts a failed rank). */
void lab_mpi_settle(lab_mpi_ctx *x, int interrupted);

/* Rank 0, every rank heard from or judged: whether a rank failed (x->rank_failed too; a rank still running after an
 * interrupt was stopped by it, not failed) and whether one died or hung (*lost: the job must end with MPI_Abort). */
int lab_mpi_failed(lab_mpi_ctx *x, int interrupted, int *lost);

/* What the merged summary.json says of the ranks (lab_results_fields_fn over the run's lab_mpi_ctx): adds "mpi" and
 * "ranks" to the tree of the summary rank 0 writes from the merged records, before it is written ("ok" is the
 * verdict's: a failed rank already made it false). LAB_ERR_NOMEM. */
lab_status lab_mpi_summary_fields(void *vctx, struct cJSON *root);

/* Rank 0's table of the ranks, after the merged report. */
void lab_mpi_print_ranks(const lab_mpi_ctx *x, FILE *report, int rank_failed);

#endif
