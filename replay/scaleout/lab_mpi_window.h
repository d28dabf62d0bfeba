/* lab_mpi_window: the hooks by which lab_window_run_by runs an `--mpi` replay of more cases than a window
 * (lab_window_runner): every rank walks the same windows, rank 0 deals each window's seed groups on demand and gathers
 * every case of the window before the next; after the last, rank 0 gathers the ranks' last words, and the others stop
 * once rank 0 says the run is over. */
#ifndef LAB_MPI_WINDOW_H
#define LAB_MPI_WINDOW_H

#include <stddef.h>

#include "lab_mpi_int.h"

/* A windowed replay's window on any rank (lab_window_runner.run): its seed groups dealt by rank 0 on demand as a whole
 * run's are; rank 0 returns once every case of the window is reported (or its rank judged: lab_mpi_settle), so the
 * window's records are complete; a rank other than 0 once rank 0 has nothing more of the window for it. */
lab_status lab_mpi_window_run(void *vctx, lab_case_record *recs, size_t n);

/* Rank 0, after the last window (lab_window_runner.finish): the run is over for every rank; gathers their last words
 * and says whether one failed. */
int lab_mpi_window_finish(void *vctx);

/* A rank other than 0 (lab_window_runner.stop): rank 0 said the run is over. */
int lab_mpi_window_over(void *vctx);

#endif
