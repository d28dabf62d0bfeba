/* lab_deal: rank 0's dealer of seed groups to the ranks of an `--mpi` replay, on demand (guided self-scheduling); pure:
 * no MPI, no clock, no I/O, so it is tested alone. */
#ifndef LAB_DEAL_H
#define LAB_DEAL_H

#include <stddef.h>

#include "lab_err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One seed group: every selected variant of one seed of one incident, the unit a replay keeps together (one worker runs
 * it, the seed's inputs and reference made once). */
typedef struct {
    size_t part;   /* the incident (part of the case list) it belongs to: parts in increasing order, a part's groups
                      together */
    double cost;   /* its rough wall seconds (lab_sched_case_cost summed over its cases); negative or NaN count as 0 */
} lab_deal_group;

/* One chunk of a deal: groups [first, end), consecutive groups of one part in their order, costing `cost`. */
typedef struct {
    size_t first, end;
    double cost;
} lab_deal_chunk;

/* A deal is a 1/LAB_DEAL_FACTOR of the requester's share (its weight over the weights of the ranks still in) of the
 * cost not yet dealt: big while much is left, smaller toward the end, so that a rank that asked last finishes near the
 * others (factoring, the guided self-scheduling that hands out half of what is left per round; with a factor of 1 the
 * first requester would take its whole share at once, and a slow one would then be the run's tail). */
#define LAB_DEAL_FACTOR 2

typedef struct lab_deal lab_deal;

/* A dealer of groups[0..n) (copied) to ranks 0..ranks-1, every rank in with an unknown weight. A deal mixes the parts:
 * it holds a chunk of every part the requester accepts that has groups left, each part's chunk its share of that part,
 * so that a rank runs its incidents side by side as a plain replay's pool does. Dealt one part a request, 1000 seeds of
 * the GPU incidents on 2 ranks of 2 x H200 (32 workers each) took 27-34 s against the plain replay's 21-22 s: a rank
 * ran one incident's large chunk with nothing beside it while the pool interleaves them on every GPU. LAB_ERR_ARG when
 * ranks < 1 or the parts are out of order (a part's groups not together); LAB_ERR_NOMEM. */
lab_status lab_deal_create(const lab_deal_group *groups, size_t n, int ranks, lab_deal **out);

void lab_deal_free(lab_deal *d);

/* Rank r's weight: the workers it runs at once (lab_sched_workers on its share of its host). Until a rank's weight is
 * known it counts as the mean of the known ones (1 when none is). Out-of-range r or weight < 1: ignored. */
void lab_deal_weight(lab_deal *d, int rank, int weight);

/* Part p's chunks hold at least `groups` groups (but its last, when fewer are left), and a requester gets its share of
 * the part's whole cost at once (not a factor of its share of what is left): an incident whose cases run in seed
 * batches is dealt no less than one batch run (lab_replay_run_seeds; smaller chunks would cut its batches smaller,
 * each costlier a case), and since such runs are long and cannot be split later they start first on every rank, as
 * the plain pool starts its costliest runs first; the incidents of small groups then even out the ranks' ends. (Dealt
 * by factoring, 0008's batch runs reached a rank as late as its later answers and ran alone for 5-6 s at the end of a
 * 2-rank replay on 2 x H200.) What the shares' rounding leaves over (fewer groups than the floor, costing less than a
 * quarter of the share) goes with the share: 3 seeds of 0008 left so were dealt 9.8 s into a 4-rank replay, and one
 * seed's nine variants, one after another as in any batch run, took 5.9 s and were the replay's last cases
 * (docs/performance.md).
 * Out-of-range p: ignored. */
void lab_deal_floor(lab_deal *d, size_t part, size_t groups);

/* Rank r is out (it died or hung): it is dealt nothing more and no longer counts among the ranks that share what is
 * left, so the work it had not been dealt goes to the others. */
void lab_deal_retire(lab_deal *d, int rank);

/* The next deal for rank r among the parts it accepts (accept[part] != 0; NULL: every part): for each of them with
 * groups left, in part order (the first `max` of them; the others wait for the next request), its next groups, as many
 * as keep the chunk's cost within r's share of that part's cost left divided by LAB_DEAL_FACTOR (a part with a floor:
 * r's share of its whole cost, lab_deal_floor), but never fewer than
 * the part's share of r's weight in groups (weight x the part's groups left over the accepted parts' groups left,
 * rounded up: one a worker over the deal, a smaller deal would leave workers waiting for the next answer) or the
 * part's floor (lab_deal_floor), nor more than the part has left. Writes c[0..k) and returns k, 0 when nothing it accepts is left (or r is retired or out of range,
 * or max is 0). */
size_t lab_deal_next(lab_deal *d, int rank, const unsigned char *accept, lab_deal_chunk *c, size_t max);

/* Groups not dealt yet. */
size_t lab_deal_left(const lab_deal *d);

#ifdef __cplusplus
}
#endif

#endif
