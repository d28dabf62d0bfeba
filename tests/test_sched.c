/* test_sched: the scheduler's cost model and the policy the pool follows with it (replay/lab_sched.c). */
#include <criterion/criterion.h>
#include <math.h>

#include "lab_sched.h"

static double cost_by_seed(uint64_t seed) { return seed == 7 ? -1.0 : seed == 8 ? NAN : 0.25 * (double)seed; }

static const lab_variant one_fix[] = {{.name = "fix", .role = LAB_ROLE_FIX, .what = "-"}};

/* An incident's declared cost is used as given; without one, or with a negative or NaN one, the default; a CUDA case of
 * an incident without a CUDA version costs nothing. */
Test(sched, case_cost_is_the_declared_one_or_the_default)
{
    lab_incident with = {.id = "9100-cost", .variants = one_fix, .n_variants = 1, .seed_cost = cost_by_seed};
    lab_incident without = {.id = "9101-nocost", .variants = one_fix, .n_variants = 1};
    cr_expect_eq(lab_sched_case_cost(&with, LAB_BACKEND_CPU, 4), 1.0);
    cr_expect_eq(lab_sched_case_cost(&with, LAB_BACKEND_CPU, 7), LAB_SCHED_CASE_COST, "negative: the default");
    cr_expect_eq(lab_sched_case_cost(&with, LAB_BACKEND_CPU, 8), LAB_SCHED_CASE_COST, "NaN: the default");
    cr_expect_eq(lab_sched_case_cost(&without, LAB_BACKEND_CPU, 4), LAB_SCHED_CASE_COST);
    cr_expect_eq(lab_sched_case_cost(&with, LAB_BACKEND_CUDA, 4), 0.0, "no CUDA version: it skips, it costs nothing");
}

/* A seed-batch chunk is cut to a worker's fair share, never below half the incident's bmax (nor a batch of 2), never
 * above bmax. */
Test(sched, chunks_are_cut_to_a_fair_share)
{
    cr_expect_eq(lab_sched_chunk_seeds(256, 0.5, 1000.0), 256u, "within the fair share: as the incident allows");
    cr_expect_eq(lab_sched_chunk_seeds(256, 0.5, 66.5), 133u, "66.5 s fair at 0.5 s a seed: 133 seeds");
    cr_expect_eq(lab_sched_chunk_seeds(256, 0.5, 17.8), 128u, "a 16th of 0008 alone: half of bmax, not 35 seeds");
    cr_expect_eq(lab_sched_chunk_seeds(3, 10.0, 5.0), 2u, "a seed costlier than the share: still a batch of 2");
    cr_expect_eq(lab_sched_chunk_seeds(1, 10.0, 5.0), 1u, "no batching stays no batching");
    cr_expect_eq(lab_sched_chunk_seeds(64, 0.0, 5.0), 64u, "no cost known: bmax");
}

/* Runs go costliest first, equal costs in their given order. */
Test(sched, runs_are_ordered_costliest_first)
{
    double cost[6] = {1.0, 5.0, 0.5, 5.0, 2.0, 0.0};
    size_t idx[6];
    cr_assert_eq(lab_sched_order_runs(cost, 6, idx), LAB_OK);
    size_t want[6] = {1, 3, 4, 0, 2, 5};
    for (int i = 0; i < 6; ++i) cr_expect_eq(idx[i], want[i], "position %d: run %zu, want %zu", i, idx[i], want[i]);
}
