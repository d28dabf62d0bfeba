/* lab_replay_fed: a replay's cases run as a feed hands them out (an `--mpi` rank's share, lab_mpi), under the same
 * scheduler as lab_replay_execute_records: the pool, lanes, seed batches. */
#ifndef LAB_REPLAY_FED_H
#define LAB_REPLAY_FED_H

#include <stddef.h>

#include "lab_replay.h"

/* The seed groups of a case list made by lab_replay_cases, in the order a replay runs them: part by part (a part: the
 * consecutive records of one incident), within a part its seed groups in seed order, each group every selected variant
 * of one seed (memory bugs last: their worker retires after them). order[0..n) holds the records' indices in that
 * order; group g is order[start[g] .. start[g + 1]), of part part[g], its rough cost cost[g] (lab_sched_case_cost summed
 * over its cases). Deterministic: every process makes the same from the same list. */
typedef struct {
    size_t *order;   /* n */
    size_t *start;   /* ng + 1 */
    size_t *part;    /* ng */
    double *cost;    /* ng */
    size_t ng, nparts;
} lab_replay_groups;

/* Fills *g for recs[0..n) (free with lab_replay_groups_free). LAB_ERR_NOMEM (*g then empty). */
lab_status lab_replay_groups_make(const lab_case_record *recs, size_t n, lab_replay_groups *g);
void lab_replay_groups_free(lab_replay_groups *g);

/* Seed groups [g0, g1) of one part: a piece of what a feed hands out. */
typedef struct {
    size_t g0, g1;
} lab_replay_span;

/* Where a fed execution gets its work (lab_replay_execute_fed): called in the parent when the queue of the lane in
 * progress runs low (fewer runs wait than the lane has workers), and then at every turn of its run (20 ms apart at
 * most) until it answers. accept[part] (one entry a part) says which parts the lane runs. Returns k > 0 with spans[0..k)
 * (room for one a part): each consecutive groups of one accepted part, a part at most once, none given before; 0 when
 * it has nothing yet; -1 when nothing the lane accepts will ever come. */
typedef int (*lab_replay_feed_fn)(void *ctx, const unsigned char *accept, lab_replay_span *spans);

/* A worker's fair share of the whole run's cost (the groups' cost over opts->how.run_workers), 0 without run_workers:
 * what a fed execution's pool cuts seed batches for. */
double lab_replay_run_fair(const lab_replay_opts *opts, const lab_replay_groups *g);

/* The seeds (seed groups) one run of part `part` holds in a fed execution's pool when its incident batches seeds: as
 * a plain replay of the whole run cuts them (lab_sched_chunk_seeds over the run's fair share and opts->how.run_gpus); 0
 * when it does not batch, or without run_workers. A feed that hands out fewer of its groups at once (but the last)
 * makes the pool run smaller batches, each costlier a case. */
size_t lab_replay_run_seeds(const lab_replay_opts *opts, const lab_case_record *recs, const lab_replay_groups *g, size_t part);

/* lab_replay_execute_records for the cases a feed hands out as the run goes (an `--mpi` rank's share, dealt by rank 0
 * on demand): recs[0..n) is the whole list and groups its seed groups (lab_replay_groups_make), the same in every
 * process; only the groups the feed gives run, and only their records get outcomes and done() calls. The cases run
 * in lanes, as lab_replay_execute_records runs them: first one pool of the incidents whose plans share their workers
 * (single-GPU CUDA cases; each answer's spans laid out together as that pool lays out its runs: seed batches cut to a
 * worker's share, the incidents taking turns, runs costliest first), its long-lived workers kept across answers; then
 * one lane for each other plan, in the incidents' order (the CPU backend: every incident in one lane; cases that need
 * GPUs of their own; each incident whose cases SKIP for want of GPUs), a span cut into runs of the incident's
 * plan.batch jobs (whole seed groups where the batch holds one). Each answer's jobs take the next unused positions of
 * the execution's order, so the spans of one answer are laid out as one stretch whatever their places in the list. A
 * lane asks the feed for spans of its incidents until it answers -1, and its workers take the runs as they free up,
 * so none waits while the feed has work. Then the cases that met a
 * device error run again, as there. Returns as lab_replay_execute_records; LAB_ERR_ARG when groups are not those of
 * recs or the feed gave a span that is not a lane's (the message says which). */
lab_status lab_replay_execute_fed(const lab_replay_opts *opts, lab_case_record *recs, size_t n,
                                  const lab_replay_groups *groups, lab_replay_feed_fn feed, void *feed_ctx,
                                  lab_replay_done_fn done, void *done_ctx);

#endif
