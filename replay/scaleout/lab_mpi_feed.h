/* lab_mpi_feed: an `--mpi` rank's hooks into its replay engine (lab_replay_execute_fed), on every rank: the lanes'
 * feed (rank 0 deals to itself; another rank asks rank 0 and takes its answer), each finished case sent to rank 0
 * (taken in place on rank 0), a rank's word that it is alive, and its messages to rank 0. */
#ifndef LAB_MPI_FEED_H
#define LAB_MPI_FEED_H

#include <stddef.h>

#include "lab_mpi_int.h"

/* A rank other than 0: sends a message to rank 0, noting when (LAB_MPI_ALIVE_S). MPI_SUCCESS or MPI's error. */
int lab_mpi_tell(lab_mpi_ctx *x, const void *msg, size_t len, int tag);

/* A rank other than 0, at every turn of its run's loop (lab_isolate_on_tick): says it is alive when it has said
 * nothing for LAB_MPI_ALIVE_S. */
void lab_mpi_alive(void *vctx);

/* The lanes' feed (lab_replay_feed_fn): rank 0 deals to itself (serving the others first); another rank asks rank 0
 * once and takes its answer when it comes. */
int lab_mpi_feed(void *vctx, const unsigned char *accept, lab_replay_span *spans);

/* Called as each of this rank's cases finishes (and again for a rerun after a device error). */
void lab_mpi_case_done(void *vctx, size_t i, const lab_case_record *rec);

#endif
