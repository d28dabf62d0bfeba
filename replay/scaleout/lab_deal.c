/* lab_deal: rank 0's dealer of seed groups to the ranks of an `--mpi` replay, on demand (guided self-scheduling); pure:
 * no MPI, no clock, no I/O, so it is tested alone. */
#include "lab_deal.h"

#include <math.h>
#include <stdlib.h>

struct lab_deal {
    double *cost;            /* per group, cleaned (>= 0) */
    size_t n, left;          /* groups; groups not dealt */
    size_t nparts;
    size_t *part_next;       /* per part: its next group to deal */
    size_t *part_end;        /* per part: one past its last group */
    size_t *part_floor;      /* per part: the least groups of a chunk (lab_deal_floor) */
    double *part_left;       /* per part: its cost not dealt */
    double *part_cost;       /* per part: its whole cost */
    int ranks;
    int *weight;             /* per rank: 0 unknown */
    unsigned char *retired;  /* per rank */
};

lab_status lab_deal_create(const lab_deal_group *groups, size_t n, int ranks, lab_deal **out)
{
    *out = NULL;
    if (ranks < 1) return lab_err_set(LAB_ERR_ARG, "dealer: %d ranks", ranks);
    size_t nparts = 0;
    for (size_t g = 0; g < n; ++g) {
        if (g > 0 && groups[g].part != groups[g - 1].part && groups[g].part < nparts)
            return lab_err_set(LAB_ERR_ARG, "dealer: group %zu of part %zu: the parts must come in increasing order, "
                               "each part's groups together", g, groups[g].part);
        if (groups[g].part + 1 > nparts) nparts = groups[g].part + 1;
    }
    lab_deal *d = calloc(1, sizeof *d);
    if (!d) return lab_err_set(LAB_ERR_NOMEM, "dealer: out of memory");
    d->cost = malloc((n ? n : 1) * sizeof *d->cost);
    d->part_next = calloc(nparts ? nparts : 1, sizeof *d->part_next);
    d->part_end = calloc(nparts ? nparts : 1, sizeof *d->part_end);
    d->part_left = calloc(nparts ? nparts : 1, sizeof *d->part_left);
    d->part_floor = calloc(nparts ? nparts : 1, sizeof *d->part_floor);
    d->part_cost = calloc(nparts ? nparts : 1, sizeof *d->part_cost);
    d->weight = calloc((size_t)ranks, sizeof *d->weight);
    d->retired = calloc((size_t)ranks, 1);
    if (!d->cost || !d->part_next || !d->part_end || !d->part_left || !d->part_floor || !d->part_cost || !d->weight || !d->retired) {
        lab_deal_free(d);
        return lab_err_set(LAB_ERR_NOMEM, "dealer: out of memory");
    }
    d->n = d->left = n;
    d->nparts = nparts;
    d->ranks = ranks;
    for (size_t g = 0; g < n; ++g) {
        double c = groups[g].cost;
        d->cost[g] = isfinite(c) && c > 0.0 ? c : 0.0;
        size_t p = groups[g].part;
        if (g == 0 || groups[g - 1].part != p) d->part_next[p] = g;
        d->part_end[p] = g + 1;
        d->part_left[p] += d->cost[g];
        d->part_cost[p] += d->cost[g];
    }
    *out = d;
    return LAB_OK;
}

void lab_deal_free(lab_deal *d)
{
    if (!d) return;
    free(d->cost);
    free(d->part_next);
    free(d->part_end);
    free(d->part_left);
    free(d->part_floor);
    free(d->part_cost);
    free(d->weight);
    free(d->retired);
    free(d);
}

void lab_deal_weight(lab_deal *d, int rank, int weight)
{
    if (rank >= 0 && rank < d->ranks && weight >= 1) d->weight[rank] = weight;
}

void lab_deal_floor(lab_deal *d, size_t part, size_t groups)
{
    if (part < d->nparts) d->part_floor[part] = groups;
}

void lab_deal_retire(lab_deal *d, int rank)
{
    if (rank >= 0 && rank < d->ranks) d->retired[rank] = 1;
}

size_t lab_deal_left(const lab_deal *d) { return d->left; }

/* A rank's weight, an unknown one as the mean of the known ones (1 when none is). */
static double lab_deal_weight_of(const lab_deal *d, int rank)
{
    if (d->weight[rank] > 0) return d->weight[rank];
    double sum = 0.0;
    int known = 0;
    for (int r = 0; r < d->ranks; ++r)
        if (d->weight[r] > 0) sum += d->weight[r], known++;
    return known ? sum / known : 1.0;
}

size_t lab_deal_next(lab_deal *d, int rank, const unsigned char *accept, lab_deal_chunk *c, size_t max)
{
    if (rank < 0 || rank >= d->ranks || d->retired[rank]) return 0;
    size_t groups_left = 0;
    for (size_t p = 0; p < d->nparts; ++p)
        if (!accept || accept[p]) groups_left += d->part_end[p] - d->part_next[p];
    if (groups_left == 0) return 0;
    double all = 0.0, mine = lab_deal_weight_of(d, rank);
    for (int r = 0; r < d->ranks; ++r)
        if (!d->retired[r]) all += lab_deal_weight_of(d, r);
    size_t k = 0;
    for (size_t p = 0; p < d->nparts && k < max; ++p) {
        size_t g = d->part_next[p], end = d->part_end[p], taken = 0;
        if ((accept && !accept[p]) || g == end) continue;
        /* a part with a floor at once by r's share of its whole cost; a sum of equal costs that should meet the target
         * exactly does */
        double target = d->part_floor[p] ? d->part_cost[p] * mine / all : d->part_left[p] * mine / (LAB_DEAL_FACTOR * all);
        double acc = 0.0;
        target *= 1.0 + 1e-9;
        size_t floor = (size_t)ceil(mine * (double)(end - g) / (double)groups_left);
        if (floor < d->part_floor[p]) floor = d->part_floor[p];
        for (; g < end && (taken < floor || acc + d->cost[g] <= target); ++g, ++taken) acc += d->cost[g];
        if (d->part_floor[p] && end - g < d->part_floor[p] && d->part_left[p] - acc < target / 4.0)
            for (; g < end; ++g, ++taken) acc += d->cost[g]; /* the shares' rounding: no late batch run of its own */
        c[k++] = (lab_deal_chunk){d->part_next[p], g, acc};
        d->part_next[p] = g;
        d->part_left[p] = g < end ? fmax(0.0, d->part_left[p] - acc) : 0.0;
        d->left -= taken;
    }
    return k;
}
