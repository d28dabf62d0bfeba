/* test_deal: the dealer of seed groups to `--mpi` ranks (replay/lab_deal.c) alone: every group dealt once, in order per
 * incident, the incident with the most cost left first, chunks that shrink, a slow requester that gets fewer of them
 * and finishes near the fast one. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lab_deal.h"

/* Groups of parts with the given group counts, group g of a part costing cost_of(part, g). */
static lab_deal_group *make_groups(const size_t *counts, size_t nparts, double (*cost_of)(size_t, size_t), size_t *n)
{
    size_t total = 0;
    for (size_t p = 0; p < nparts; ++p) total += counts[p];
    lab_deal_group *g = malloc(total * sizeof *g);
    cr_assert_not_null(g);
    size_t k = 0;
    for (size_t p = 0; p < nparts; ++p)
        for (size_t i = 0; i < counts[p]; ++i) g[k++] = (lab_deal_group){p, cost_of(p, i)};
    *n = total;
    return g;
}

/* A dealer of those groups to `ranks` ranks (*g and *n as make_groups). */
static lab_deal *make_dealer(const size_t *counts, size_t nparts, double (*cost_of)(size_t, size_t), int ranks,
                             lab_deal_group **g, size_t *n)
{
    *g = make_groups(counts, nparts, cost_of, n);
    lab_deal *d;
    cr_assert_eq(lab_deal_create(*g, *n, ranks, &d), LAB_OK, "%s", lab_err_msg());
    return d;
}

static double mixed_cost(size_t part, size_t i) { return part == 1 ? 0.0 : part == 2 ? 0.5 + 0.01 * (double)(i % 7) : 0.1; }
static double flat_cost(size_t part, size_t i) { (void)part, (void)i; return 0.1; }

/* Three ranks ask in turn: every group is dealt exactly once, a chunk never spans two parts, each part's chunks come in
 * its order (the next one starts where the last ended), and a rank's chunk is never fewer groups than its weight unless
 * its part ran out. */
Test(deal, chunks_cover_every_group_once_in_order_per_part)
{
    size_t counts[] = {40, 13, 57, 1}, n;
    lab_deal_group *g;
    lab_deal *d = make_dealer(counts, 4, mixed_cost, 3, &g, &n);
    lab_deal_weight(d, 0, 1);
    lab_deal_weight(d, 1, 2);
    lab_deal_weight(d, 2, 3);
    unsigned char *seen = calloc(n, 1);
    size_t next_of_part[4] = {0, 40, 53, 110}, chunks = 0;
    lab_deal_chunk c;
    for (int r = 0; lab_deal_next(d, r, NULL, &c); r = (r + 1) % 3, ++chunks) {
        cr_assert_lt(c.first, c.end, "an empty chunk");
        cr_assert_leq(c.end, n);
        size_t p = g[c.first].part;
        cr_expect_eq(g[c.end - 1].part, p, "chunk [%zu, %zu) spans two parts", c.first, c.end);
        cr_expect_eq(c.first, next_of_part[p], "part %zu: chunk at %zu, its next group is %zu", p, c.first, next_of_part[p]);
        next_of_part[p] = c.end;
        size_t part_end = 0;
        for (size_t q = 0; q <= p; ++q) part_end += counts[q];
        cr_expect(c.end - c.first >= (size_t)(r + 1) || c.end == part_end, "rank %d (weight %d) got %zu groups mid-part",
                  r, r + 1, c.end - c.first);
        double cost = 0.0;
        for (size_t i = c.first; i < c.end; ++i) {
            cr_expect_eq(seen[i], 0, "group %zu dealt twice", i);
            seen[i] = 1;
            cost += g[i].cost;
        }
        cr_expect_float_eq(c.cost, cost, 1e-9);
    }
    for (size_t i = 0; i < n; ++i) cr_expect_eq(seen[i], 1, "group %zu never dealt", i);
    cr_expect_eq(lab_deal_left(d), 0u);
    cr_expect_gt(chunks, 4u, "dealt in more chunks than parts");
    cr_expect_eq(lab_deal_next(d, 0, NULL, &c), 0, "nothing left");
    free(seen);
    free(g);
    lab_deal_free(d);
}

/* The part with the most cost left is dealt from first, whatever its place: a costly incident last on the command line
 * starts at once, and once it is down to the others' size the parts take turns. */
Test(deal, the_part_with_the_most_cost_left_comes_first)
{
    size_t counts[] = {10, 20, 60}, n;
    lab_deal_group *g;
    lab_deal *d = make_dealer(counts, 3, flat_cost, 2, &g, &n);
    lab_deal_chunk c;
    cr_assert_eq(lab_deal_next(d, 0, NULL, &c), 1);
    cr_expect_eq(g[c.first].part, 2u, "the last part holds 60 of the 90 groups: dealt first");
    cr_expect_eq(c.first, 30u);
    size_t k = 0, switches = 0, prev = 2;
    double left[3] = {1.0, 2.0, 6.0};
    left[2] -= c.cost;
    while (lab_deal_next(d, (int)(++k % 2), NULL, &c)) {
        size_t p = g[c.first].part;
        for (size_t q = 0; q < 3; ++q)
            cr_expect(q == p || left[q] <= left[p] + 1e-9, "chunk %zu from part %zu (%.1f left) while part %zu had %.1f", k, p,
                      left[p], q, left[q]);
        left[p] -= c.cost;
        switches += p != prev;
        prev = p;
    }
    cr_expect_gt(switches, 2u, "the parts took turns once the first was down to the others' size");
    free(g);
    lab_deal_free(d);
}

/* One part of equal groups, two ranks of weight 1: the chunks shrink, from a quarter of the work (half of one rank's
 * share) down to one group. */
Test(deal, chunks_shrink_toward_the_end)
{
    size_t counts[] = {200}, n;
    lab_deal_group *g;
    lab_deal *d = make_dealer(counts, 1, flat_cost, 2, &g, &n);
    lab_deal_chunk c;
    size_t prev = n, first = 0, last = 0, k = 0;
    while (lab_deal_next(d, (int)(k % 2), NULL, &c)) {
        size_t len = c.end - c.first;
        if (k++ == 0) first = len;
        cr_expect_leq(len, prev, "chunk %zu: %zu groups after %zu", k, len, prev);
        prev = last = len;
    }
    cr_expect_eq(first, 50u, "the first chunk: 200 groups / (2 x 2 ranks)");
    cr_expect_eq(last, 1u, "the last chunks are single groups");
    free(g);
    lab_deal_free(d);
}

/* A rank that accepts only some parts gets only those; when none of them is left it gets nothing, whatever is left of
 * the others. */
Test(deal, a_requester_gets_only_the_parts_it_accepts)
{
    size_t counts[] = {10, 10, 10}, n;
    lab_deal_group *g;
    lab_deal *d = make_dealer(counts, 3, flat_cost, 2, &g, &n);
    unsigned char only1[3] = {0, 1, 0};
    lab_deal_chunk c;
    size_t got = 0;
    while (lab_deal_next(d, 1, only1, &c)) {
        for (size_t i = c.first; i < c.end; ++i) cr_expect_eq(g[i].part, 1u, "group %zu of part %zu", i, g[i].part);
        got += c.end - c.first;
    }
    cr_expect_eq(got, 10u);
    cr_expect_eq(lab_deal_left(d), 20u, "the other parts are still there");
    cr_expect_eq(lab_deal_next(d, 0, NULL, &c), 1);
    cr_expect_eq(c.first, 0u, "parts 0 and 2 have as much left: the first of them");
    free(g);
    lab_deal_free(d);
}

/* A retired rank is dealt nothing more, and no longer shares what is left: the next chunk of a rank that stays is as
 * if it were alone (half of what is left, not a quarter). Bad input is refused. */
Test(deal, a_retired_rank_gets_nothing_and_leaves_its_share)
{
    size_t counts[] = {100}, n;
    lab_deal_group *g;
    lab_deal *d = make_dealer(counts, 1, flat_cost, 2, &g, &n);
    lab_deal_chunk c;
    cr_assert_eq(lab_deal_next(d, 0, NULL, &c), 1);
    cr_expect_eq(c.end - c.first, 25u, "two ranks: a quarter");
    lab_deal_retire(d, 1);
    cr_expect_eq(lab_deal_next(d, 1, NULL, &c), 0, "a retired rank gets nothing");
    cr_assert_eq(lab_deal_next(d, 0, NULL, &c), 1);
    cr_expect_eq(c.end - c.first, 37u, "alone: half of the 75 groups left (37.5 of cost: 37 groups fit)");
    cr_expect_eq(lab_deal_next(d, 5, NULL, &c), 0, "a rank out of range");
    lab_deal_free(d);
    lab_deal_group bad[] = {{0, 1.0}, {1, 1.0}, {0, 1.0}};
    cr_expect_eq(lab_deal_create(bad, 3, 2, &d), LAB_ERR_ARG, "part 0 again after part 1");
    cr_expect_eq(lab_deal_create(g, n, 0, &d), LAB_ERR_ARG, "no ranks");
    free(g);
}

/* Two ranks that ask whenever they run out of work, one `slow` times slower than the other (the dealer knows nothing of
 * speeds, only of costs and weights): the slow one gets fewer chunks and less work, and the run ends near the ideal (the
 * work divided by the two speeds), where a fixed split (each rank half) ends when the slow rank is done with its half. */
static void race(double slow, double ideal_factor)
{
    size_t counts[] = {120, 80, 200}, n;
    lab_deal_group *g;
    lab_deal *d = make_dealer(counts, 3, mixed_cost, 2, &g, &n);
    const double slowness[2] = {1.0, slow};
    double free_at[2] = {0.0, 0.0}, total = 0.0, work[2] = {0.0, 0.0};
    size_t chunks[2] = {0, 0}, groups[2] = {0, 0};
    for (size_t i = 0; i < n; ++i) total += g[i].cost;
    lab_deal_chunk c;
    for (;;) {
        int r = free_at[1] < free_at[0]; /* whoever runs out first asks first */
        if (!lab_deal_next(d, r, NULL, &c)) {
            if (!lab_deal_next(d, !r, NULL, &c)) break;
            r = !r;
        }
        chunks[r]++;
        groups[r] += c.end - c.first;
        work[r] += c.cost;
        free_at[r] += c.cost * slowness[r];
    }
    cr_expect_eq(groups[0] + groups[1], n);
    cr_expect_gt(chunks[0], chunks[1], "%.0fx slower: fast rank %zu chunks, slow %zu", slow, chunks[0], chunks[1]);
    cr_expect(fabs(work[0] / work[1] - slow) < 0.1 * slow, "%.0fx slower: fast rank %.1f of work, slow %.1f (the ideal: %.0f to 1)",
              slow, work[0], work[1], slow);
    double end = fmax(free_at[0], free_at[1]), ideal = total / (1.0 + 1.0 / slow), fixed = total / 2 * slow;
    cr_expect_lt(end, ideal_factor * ideal, "%.0fx slower: the run took %.1f, ideal %.1f (fast done at %.1f, slow at %.1f)",
                 slow, end, ideal, free_at[0], free_at[1]);
    cr_expect_lt(end, 0.75 * fixed, "%.0fx slower: the run took %.1f, a fixed split %.1f", slow, end, fixed);
    free(g);
    lab_deal_free(d);
}

Test(deal, a_slow_requester_gets_fewer_chunks_and_the_run_ends_near_the_ideal)
{
    race(2.0, 1.05);
    race(4.0, 1.15);
}
