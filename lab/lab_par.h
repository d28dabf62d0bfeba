/* lab_par: a parallel loop over independent items on POSIX threads of one process (a worker's seed batch: making
 * its seeds' groups, judging its cases), with the lab's error contract. */
#ifndef LAB_PAR_H
#define LAB_PAR_H

#include <stddef.h>

#include "lab_err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One item: LAB_OK, or an error status with its message set through lab_err_set (the message is per thread). */
typedef lab_status (*lab_par_fn)(void *ctx, size_t i);

/* Calls fn(ctx, i) once for every i in [0, n) on up to `threads` threads, the calling thread one of them; items are
 * handed out one at a time in index order, so a slow item does not hold back a fixed share. After an item fails no
 * further item starts; the return is the error of the lowest-numbered failing item, and its message becomes the
 * calling thread's lab error. Items that did not run leave whatever they would have written untouched. threads <= 1
 * or n <= 1: the plain loop on the calling thread, stopping at the first error. fn must be safe to run concurrently
 * for different i. LAB_ERR_NOMEM if no thread can be made (then nothing ran). */
lab_status lab_par_for(size_t n, int threads, lab_par_fn fn, void *ctx);

/* Threads a replay worker may give one parallel loop: a quarter of the usable CPUs (lab_cpus_usable) from 8 on, else 1 (a replay runs
 * one worker per core, and only the few that lead a seed batch run such loops). */
int lab_par_threads(void);

#ifdef __cplusplus
}
#endif

#endif
