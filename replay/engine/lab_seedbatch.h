/* lab_seedbatch: seed batches of a CUDA replay: which cases run together (one variant over several seeds of one batch key, lab_incident.batch.run_cuda), the execution order that puts them side by side, and in a worker the batch run once with its results handed out case by case. */
#ifndef LAB_SEEDBATCH_H
#define LAB_SEEDBATCH_H

#include <stddef.h>

#include "lab_incident.h"
#include "lab_results.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most seeds one batch of inc holds on backend b: 1 (no batching) on the CPU, under a sanitizer (every case
 * is its own compute-sanitizer process) or when inc has no batch.run_cuda; else inc->batch.max, capped by cap
 * (0: no cap) and by LAB_CASE_GROUPS_MAX. */
unsigned lab_seedbatch_size(const lab_incident *inc, lab_backend b, int sanitize, unsigned cap);

/* One incident's cases laid out as seed batches. Its seeds are cut, batch key by batch key (seeds in order),
 * into chunks of at most bmax seeds, as equal as they can be; a chunk's cases run in one worker: every variant
 * that is not CPU-only nor a memory bug (unless the incident batches its memory bugs, batch.memory_bugs) over the
 * chunk's seeds (one batch: lead > 1, or 1 for a chunk of one seed), then the rest seed by seed (lead 1, alone
 * as always: a memory bug's worker may retire after it). */
typedef struct {
    size_t *jobs;          /* record indices, chunk after chunk, in execution order */
    unsigned *lead;        /* per entry of jobs: n >= 1 starts a batch of the n entries from it (1: a case alone);
                              0 follows the batch before it */
    size_t *chunk_start;   /* chunk c is jobs[chunk_start[c], chunk_start[c + 1]) */
    size_t n_chunks;
} lab_seedbatch_plan;

/* Makes *p for the records order[start, end) of one incident, grouped by seed (every case of a seed
 * consecutive, as the runner orders them), batches of at most bmax seeds (bmax >= 1). LAB_ERR_NOMEM (p
 * zeroed). */
lab_status lab_seedbatch_plan_make(const lab_case_record *recs, const size_t *order, size_t start, size_t end,
                                   unsigned bmax, lab_seedbatch_plan *p);
void lab_seedbatch_plan_free(lab_seedbatch_plan *p);

/* ---- in a worker process ---- */

/* Runs the batch cases[0..n) (n >= 2; one incident, variant, backend CUDA) through lab_case_run_batch, keeps the
 * results of cases[1..n) in this process for lab_seedbatch_take under keys key0 + 1 .. key0 + n - 1, and gives
 * cases[0]'s in *r. On an error status nothing is kept and *r is untouched: the caller runs the leader alone and
 * the others run alone as they come. A memory-bug batch with a case that does not report memory_contained keeps
 * nothing either and gives the leader retire_worker: its worker ends, and the others run alone elsewhere. */
lab_status lab_seedbatch_run(const lab_case *cases, size_t n, size_t key0, lab_case_result *r);

/* 1 and *r filled when a batch run earlier in this process holds the result of key (each is handed out once);
 * 0 otherwise (the batch's leader ran in another process that ended: run the case alone). */
int lab_seedbatch_take(size_t key, lab_case_result *r);

#ifdef __cplusplus
}
#endif

#endif
