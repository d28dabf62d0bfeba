/* test_deal: the dealer of seed groups to `--mpi` ranks (replay/scaleout/lab_deal.c) alone: every group dealt once, in order per
 * incident, a deal mixing every incident by its share, chunks that shrink, a slow requester that gets fewer deals and
 * finishes near the fast one. */
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

/* Deals of at most one chunk a part (room for 8). */
#define ROOM 8

/* Three ranks ask in turn: every group is dealt exactly once, a chunk never spans two parts, a deal holds a chunk of
 * every part with groups left in part order, each part's chunks come in its order (the next one starts where the last
 * ended), and a deal is never fewer groups than the rank's weight unless fewer are left. */
Test(deal, deals_cover_every_group_once_in_order_per_part)
{
    size_t counts[] = {40, 13, 57, 1}, n;
    lab_deal_group *g;
    lab_deal *d = make_dealer(counts, 4, mixed_cost, 3, &g, &n);
    lab_deal_weight(d, 0, 1);
    lab_deal_weight(d, 1, 2);
    lab_deal_weight(d, 2, 3);
    unsigned char *seen = calloc(n, 1);
    size_t next_of_part[4] = {0, 40, 53, 110}, part_end[4] = {40, 53, 110, 111}, deals = 0, k;
    lab_deal_chunk c[ROOM];
    for (int r = 0; (k = lab_deal_next(d, r, NULL, c, ROOM)) > 0; r = (r + 1) % 3, ++deals) {
        size_t with_left = 0, left = 0, got = 0;
        for (size_t p = 0; p < 4; ++p) with_left += next_of_part[p] < part_end[p], left += part_end[p] - next_of_part[p];
        cr_expect_eq(k, with_left, "deal %zu: %zu chunks, %zu parts have groups left", deals, k, with_left);
        for (size_t j = 0; j < k; ++j) {
            cr_assert_lt(c[j].first, c[j].end, "an empty chunk");
            cr_assert_leq(c[j].end, n);
            size_t p = g[c[j].first].part;
            cr_expect(j == 0 || p > g[c[j - 1].first].part, "deal %zu: part %zu after part %zu", deals, p,
                      g[c[j - 1].first].part);
            cr_expect_eq(g[c[j].end - 1].part, p, "chunk [%zu, %zu) spans two parts", c[j].first, c[j].end);
            cr_expect_eq(c[j].first, next_of_part[p], "part %zu: chunk at %zu, its next group is %zu", p, c[j].first,
                         next_of_part[p]);
            next_of_part[p] = c[j].end;
            got += c[j].end - c[j].first;
            double cost = 0.0;
            for (size_t i = c[j].first; i < c[j].end; ++i) {
                cr_expect_eq(seen[i], 0, "group %zu dealt twice", i);
                seen[i] = 1;
                cost += g[i].cost;
            }
            cr_expect_float_eq(c[j].cost, cost, 1e-9);
        }
        cr_expect(got >= (size_t)(r + 1) || got == left, "rank %d (weight %d) got %zu groups of %zu left", r, r + 1, got, left);
    }
    for (size_t i = 0; i < n; ++i) cr_expect_eq(seen[i], 1, "group %zu never dealt", i);
    cr_expect_eq(lab_deal_left(d), 0u);
    cr_expect_gt(deals, 4u, "dealt in more deals than parts");
    cr_expect_eq(lab_deal_next(d, 0, NULL, c, ROOM), 0u, "nothing left");
    free(seen);
    free(g);
    lab_deal_free(d);
}

/* A deal mixes the parts, each by its own share: with two ranks of weight 1 the first deal holds a quarter of every part
 * (half of one rank's share), rounded down to whole groups, so the rank runs every incident side by side; a requester
 * with room for fewer chunks gets the first parts, the others left for its next request. */
Test(deal, a_deal_holds_every_part_each_by_its_share)
{
    size_t counts[] = {10, 20, 60}, n;
    lab_deal_group *g;
    lab_deal *d = make_dealer(counts, 3, flat_cost, 2, &g, &n);
    lab_deal_chunk c[ROOM];
    cr_assert_eq(lab_deal_next(d, 0, NULL, c, ROOM), 3u);
    cr_expect(c[0].first == 0 && c[0].end == 2, "part 0: [%zu, %zu), want [0, 2) (2.5 groups' cost)", c[0].first, c[0].end);
    cr_expect(c[1].first == 10 && c[1].end == 15, "part 1: [%zu, %zu), want [10, 15)", c[1].first, c[1].end);
    cr_expect(c[2].first == 30 && c[2].end == 45, "part 2: [%zu, %zu), want [30, 45)", c[2].first, c[2].end);
    cr_assert_eq(lab_deal_next(d, 1, NULL, c, 1), 1u, "room for one chunk");
    cr_expect(c[0].first == 2 && g[c[0].first].part == 0, "the first part's next chunk, at %zu", c[0].first);
    cr_assert_eq(lab_deal_next(d, 1, NULL, c, ROOM), 3u);
    cr_expect_eq(c[1].first, 15u, "part 1 untouched by the deal of one chunk");
    cr_expect_eq(lab_deal_next(d, 1, NULL, c, 0), 0u, "no room");
    free(g);
    lab_deal_free(d);
}

/* A deal is never fewer groups than the rank's weight (one a worker), shared among the parts by their groups left:
 * a rank of 8 workers asking for cheap groups of three parts gets at least 8, from every part. */
Test(deal, a_deal_has_a_group_for_every_worker)
{
    size_t counts[] = {4, 4, 100}, n;
    lab_deal_group *g;
    lab_deal *d = make_dealer(counts, 3, flat_cost, 4, &g, &n);
    lab_deal_weight(d, 0, 8);
    for (int r = 1; r < 4; ++r) lab_deal_weight(d, r, 100); /* its share alone would be 1 or 2 groups */
    lab_deal_chunk c[ROOM];
    cr_assert_eq(lab_deal_next(d, 0, NULL, c, ROOM), 3u);
    size_t got = 0;
    for (size_t j = 0; j < 3; ++j) got += c[j].end - c[j].first;
    cr_expect_geq(got, 8u, "a rank of 8 workers got %zu groups", got);
    cr_expect_geq(c[2].end - c[2].first, 7u, "the part with 100 of the 108 groups gives most: %zu", c[2].end - c[2].first);
    free(g);
    lab_deal_free(d);
}

/* A part with a floor (an incident run in seed batches) is dealt at once by each requester's share of its whole cost,
 * never below the floor (its last chunk excepted), while the other parts' chunks shrink as before. */
Test(deal, a_part_with_a_floor_is_dealt_by_shares_of_its_whole_cost)
{
    size_t counts[] = {100, 100, 100}, n;
    lab_deal_group *g;
    lab_deal *d = make_dealer(counts, 3, flat_cost, 2, &g, &n);
    lab_deal_floor(d, 1, 30);
    lab_deal_floor(d, 2, 40);
    lab_deal_floor(d, 7, 1000); /* no such part: ignored */
    lab_deal_weight(d, 0, 3);
    lab_deal_weight(d, 1, 1);
    lab_deal_chunk c[ROOM];
    size_t k, last0 = 0, sizes[3][16], ns[3] = {0, 0, 0}, r = 0;
    while ((k = lab_deal_next(d, (int)(r++ % 2), NULL, c, ROOM)) > 0)
        for (size_t j = 0; j < k; ++j) {
            size_t p = g[c[j].first].part;
            if (ns[p] < 16) sizes[p][ns[p]++] = c[j].end - c[j].first;
            if (p == 0) last0 = c[j].end - c[j].first;
        }
    cr_expect(ns[1] == 2 && sizes[1][0] == 75 && sizes[1][1] == 25, "part 1: %zu chunks, %zu then %zu groups (want the "
              "shares 75 and 25 of 100)", ns[1], sizes[1][0], sizes[1][1]);
    cr_expect(ns[2] == 2 && sizes[2][0] == 75 && sizes[2][1] == 25, "part 2: %zu chunks, %zu then %zu groups", ns[2],
              sizes[2][0], sizes[2][1]);
    cr_expect_gt(ns[0], 4u, "part 0 is dealt by factoring: %zu chunks", ns[0]);
    cr_expect_leq(last0, 3u, "part 0's chunks shrink to a group a worker: %zu", last0);
    cr_expect_eq(lab_deal_left(d), 0u);
    lab_deal_free(d);
    free(g);
    /* the floor holds where a share is smaller: 8 equal ranks, a share of 100 is 12.5 groups */
    d = make_dealer(counts, 3, flat_cost, 8, &g, &n);
    lab_deal_floor(d, 1, 30);
    cr_assert_eq(lab_deal_next(d, 0, NULL, c, ROOM), 3u);
    cr_expect_eq(c[1].end - c[1].first, 30u, "the floor, not the share of 12");
    free(g);
    lab_deal_free(d);
}

static double cycling_cost(size_t part, size_t i) { (void)part; return i % 3 == 0 ? 0.055 : i % 3 == 1 ? 0.025 : 0.015; }

/* Shares of a part with a floor, cut where the next group would pass the share, leave a few groups over: those go
 * with the last share, never as a late chunk of their own. Four ranks, 1000 groups whose costs cycle as 0008's T
 * does: four chunks, the last ending at the part's end. */
Test(deal, a_part_with_a_floor_leaves_no_remainder_behind)
{
    size_t counts[] = {1000}, n;
    lab_deal_group *g;
    lab_deal *d = make_dealer(counts, 1, cycling_cost, 4, &g, &n);
    lab_deal_floor(d, 0, 34);
    lab_deal_chunk c[ROOM];
    size_t chunks = 0, end = 0;
    for (int r = 0; r < 8 && lab_deal_next(d, r % 4, NULL, c, ROOM) == 1; ++r) chunks++, end = c[0].end;
    cr_expect_eq(chunks, 4u, "one share a rank, no remainder dealt later: %zu chunks", chunks);
    cr_expect_eq(end, 1000u);
    cr_expect_eq(lab_deal_left(d), 0u);
    lab_deal_free(d);
    free(g);
}

/* One part of equal groups, two ranks of weight 1: the chunks shrink, from a quarter of the work (half of one rank's
 * share) down to one group. */
Test(deal, chunks_shrink_toward_the_end)
{
    size_t counts[] = {200}, n;
    lab_deal_group *g;
    lab_deal *d = make_dealer(counts, 1, flat_cost, 2, &g, &n);
    lab_deal_chunk c[ROOM];
    size_t prev = n, first = 0, last = 0, k = 0;
    while (lab_deal_next(d, (int)(k % 2), NULL, c, ROOM)) {
        size_t len = c[0].end - c[0].first;
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
    size_t counts[] = {10, 10, 10}, n, k;
    lab_deal_group *g;
    lab_deal *d = make_dealer(counts, 3, flat_cost, 2, &g, &n);
    unsigned char only1[3] = {0, 1, 0};
    lab_deal_chunk c[ROOM];
    size_t got = 0;
    while ((k = lab_deal_next(d, 1, only1, c, ROOM)) > 0) {
        cr_expect_eq(k, 1u);
        for (size_t i = c[0].first; i < c[0].end; ++i) cr_expect_eq(g[i].part, 1u, "group %zu of part %zu", i, g[i].part);
        got += c[0].end - c[0].first;
    }
    cr_expect_eq(got, 10u);
    cr_expect_eq(lab_deal_left(d), 20u, "the other parts are still there");
    cr_expect_eq(lab_deal_next(d, 0, NULL, c, ROOM), 2u, "parts 0 and 2");
    cr_expect(c[0].first == 0 && c[1].first == 20, "chunks at %zu and %zu", c[0].first, c[1].first);
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
    lab_deal_chunk c[ROOM];
    cr_assert_eq(lab_deal_next(d, 0, NULL, c, ROOM), 1u);
    cr_expect_eq(c[0].end - c[0].first, 25u, "two ranks: a quarter");
    lab_deal_retire(d, 1);
    cr_expect_eq(lab_deal_next(d, 1, NULL, c, ROOM), 0u, "a retired rank gets nothing");
    cr_assert_eq(lab_deal_next(d, 0, NULL, c, ROOM), 1u);
    cr_expect_eq(c[0].end - c[0].first, 37u, "alone: half of the 75 groups left (37.5 of cost: 37 groups fit)");
    cr_expect_eq(lab_deal_next(d, 5, NULL, c, ROOM), 0u, "a rank out of range");
    lab_deal_free(d);
    lab_deal_group bad[] = {{0, 1.0}, {1, 1.0}, {0, 1.0}};
    cr_expect_eq(lab_deal_create(bad, 3, 2, &d), LAB_ERR_ARG, "part 0 again after part 1");
    cr_expect_eq(lab_deal_create(g, n, 0, &d), LAB_ERR_ARG, "no ranks");
    free(g);
}

/* Two ranks that ask whenever they run out of work, one `slow` times slower than the other (the dealer knows nothing of
 * speeds, only of costs and weights): the slow one gets fewer deals and less work, and the run ends near the ideal (the
 * work divided by the two speeds), where a fixed split (each rank half) ends when the slow rank is done with its half. */
static void race(double slow, double ideal_factor)
{
    size_t counts[] = {120, 80, 200}, n;
    lab_deal_group *g;
    lab_deal *d = make_dealer(counts, 3, mixed_cost, 2, &g, &n);
    const double slowness[2] = {1.0, slow};
    double free_at[2] = {0.0, 0.0}, total = 0.0, work[2] = {0.0, 0.0};
    size_t deals[2] = {0, 0}, groups[2] = {0, 0};
    for (size_t i = 0; i < n; ++i) total += g[i].cost;
    lab_deal_chunk c[ROOM];
    for (;;) {
        int r = free_at[1] < free_at[0]; /* whoever runs out first asks first */
        size_t k = lab_deal_next(d, r, NULL, c, ROOM);
        if (!k) {
            if (!(k = lab_deal_next(d, !r, NULL, c, ROOM))) break;
            r = !r;
        }
        deals[r]++;
        for (size_t j = 0; j < k; ++j) {
            groups[r] += c[j].end - c[j].first;
            work[r] += c[j].cost;
            free_at[r] += c[j].cost * slowness[r];
        }
    }
    cr_expect_eq(groups[0] + groups[1], n);
    cr_expect_gt(deals[0], deals[1], "%.0fx slower: fast rank %zu deals, slow %zu", slow, deals[0], deals[1]);
    cr_expect(fabs(work[0] / work[1] - slow) < 0.1 * slow, "%.0fx slower: fast rank %.1f of work, slow %.1f (the ideal: %.0f to 1)",
              slow, work[0], work[1], slow);
    double end = fmax(free_at[0], free_at[1]), ideal = total / (1.0 + 1.0 / slow), fixed = total / 2 * slow;
    cr_expect_lt(end, ideal_factor * ideal, "%.0fx slower: the run took %.1f, ideal %.1f (fast done at %.1f, slow at %.1f)",
                 slow, end, ideal, free_at[0], free_at[1]);
    cr_expect_lt(end, 0.75 * fixed, "%.0fx slower: the run took %.1f, a fixed split %.1f", slow, end, fixed);
    free(g);
    lab_deal_free(d);
}

Test(deal, a_slow_requester_gets_fewer_deals_and_the_run_ends_near_the_ideal)
{
    race(2.0, 1.05);
    race(4.0, 1.15);
}
