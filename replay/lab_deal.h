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

/* What a requester gets: groups [first, end), consecutive groups of one part in their order, costing `cost`. */
typedef struct {
    size_t first, end;
    double cost;
} lab_deal_chunk;

/* A chunk is a 1/LAB_DEAL_FACTOR of the requester's share (its weight over the weights of the ranks still in) of the
 * cost not yet dealt: big while much is left, smaller toward the end, so that a rank that asked last finishes near the
 * others (factoring, the guided self-scheduling that hands out half of what is left per round; with a factor of 1 the
 * first requester would take its whole share at once, and a slow one would then be the run's tail). */
#define LAB_DEAL_FACTOR 2

typedef struct lab_deal lab_deal;

/* A dealer of groups[0..n) (copied) to ranks 0..ranks-1, every rank in with an unknown weight. Each chunk comes from the
 * part with the most cost not yet dealt (the lowest index among equals), each part's groups in their order: the costliest
 * incident starts first and its last groups are dealt beside the others' instead of alone at the end (dealt part after
 * part, 1000 seeds of the GPU incidents on 2 ranks of a 2 x H200 host ended with one rank running 0008's last chunks on
 * its GPU alone, 25 s after the other rank). LAB_ERR_ARG when ranks < 1 or the parts are out of order (a part's groups not
 * together); LAB_ERR_NOMEM. */
lab_status lab_deal_create(const lab_deal_group *groups, size_t n, int ranks, lab_deal **out);

void lab_deal_free(lab_deal *d);

/* Rank r's weight: the workers it runs at once (lab_sched_workers on its share of its host). Until a rank's weight is
 * known it counts as the mean of the known ones (1 when none is). Out-of-range r or weight < 1: ignored. */
void lab_deal_weight(lab_deal *d, int rank, int weight);

/* Rank r is out (it died or hung): it is dealt nothing more and no longer counts among the ranks that share what is
 * left, so the work it had not been dealt goes to the others. */
void lab_deal_retire(lab_deal *d, int rank);

/* The next chunk for rank r among the parts it accepts (accept[part] != 0; NULL: every part): from the one of them with
 * the most cost left (lab_deal_create), its next groups, as many as keep the chunk's cost within r's share of what is left
 * divided by LAB_DEAL_FACTOR, but never fewer than r's weight in groups (one a worker: a smaller chunk would leave
 * workers waiting for the next answer) nor more than the part has left. Returns 1 and *c, or 0 when nothing it accepts
 * is left (or r is retired or out of range). */
int lab_deal_next(lab_deal *d, int rank, const unsigned char *accept, lab_deal_chunk *c);

/* Groups not dealt yet. */
size_t lab_deal_left(const lab_deal *d);

#ifdef __cplusplus
}
#endif

#endif
