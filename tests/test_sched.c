/* test_sched: the scheduler's cost model and the policy the pool follows with it (replay/engine/lab_sched.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lab_device.h"
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

/* A seed-batch chunk is cut to a worker's fair share, never below bmax / (2 x GPUs) (nor a batch of 2), never above
 * bmax. */
Test(sched, chunks_are_cut_to_a_fair_share)
{
    cr_expect_eq(lab_sched_chunk_seeds(256, 0.5, 1000.0, 1), 256u, "within the fair share: as the incident allows");
    cr_expect_eq(lab_sched_chunk_seeds(256, 0.5, 66.5, 1), 133u, "66.5 s fair at 0.5 s a seed: 133 seeds");
    cr_expect_eq(lab_sched_chunk_seeds(256, 0.5, 17.8, 1), 128u, "a 16th of 0008 alone: half of bmax, not 35 seeds");
    cr_expect_eq(lab_sched_chunk_seeds(256, 0.5, 17.8, 0), 128u, "no GPU listed counts as one");
    cr_expect_eq(lab_sched_chunk_seeds(256, 0.5, 17.8, 4), 35u, "four GPUs: the floor is an eighth of bmax (32)");
    cr_expect_eq(lab_sched_chunk_seeds(256, 0.5, 4.0, 4), 32u, "four GPUs: never below an eighth of bmax");
    cr_expect_eq(lab_sched_chunk_seeds(3, 10.0, 5.0, 1), 2u, "a seed costlier than the share: still a batch of 2");
    cr_expect_eq(lab_sched_chunk_seeds(1, 10.0, 5.0, 1), 1u, "no batching stays no batching");
    cr_expect_eq(lab_sched_chunk_seeds(64, 0.0, 5.0, 1), 64u, "no cost known: bmax");
}

/* Runs go costliest first, equal costs in their given order; with kinds, the kinds take turns. */
Test(sched, runs_are_ordered_costliest_first)
{
    double cost[6] = {1.0, 5.0, 0.5, 5.0, 2.0, 0.0};
    size_t idx[6];
    cr_assert_eq(lab_sched_order_runs(cost, NULL, 0, 6, 0.0, idx), LAB_OK);
    size_t want[6] = {1, 3, 4, 0, 2, 5};
    for (int i = 0; i < 6; ++i) cr_expect_eq(idx[i], want[i], "position %d: run %zu, want %zu", i, idx[i], want[i]);
    /* kinds take turns, the kind of the costliest run first, each kind costliest first: kind 1 holds runs 1, 3 and 5
     * (5, 5, 0), kind 0 runs 0 and 4 (1, 2), kind 2 run 2 (0.5) */
    size_t kind[6] = {0, 1, 2, 1, 0, 1}, mixed[6] = {1, 4, 2, 3, 0, 5};
    cr_assert_eq(lab_sched_order_runs(cost, kind, 3, 6, 0.0, idx), LAB_OK);
    for (int i = 0; i < 6; ++i) cr_expect_eq(idx[i], mixed[i], "with kinds, position %d: run %zu, want %zu", i, idx[i], mixed[i]);
}

/* The runs costing at least lead_at go first, taking turns among themselves; the rest follow in turns of their own. The
 * replay's shape: one incident's six long seed batches (kind 0) come every fourth place in turns of four kinds, the
 * last of them 16th; leading, they take the first places beside the one long run of kind 1. */
Test(sched, runs_costing_a_fair_share_lead_in_turns)
{
    enum { N = 16 };
    double cost[N];
    size_t kind[N], idx[N];
    for (int i = 0; i < N; ++i) cost[i] = 1.0, kind[i] = (size_t)i % 4;
    cost[0] = 10.0, cost[4] = 9.0, cost[8] = 8.0, cost[12] = 7.0; /* kind 0 */
    kind[1] = 0, cost[1] = 6.0, kind[2] = 0, cost[2] = 5.0;       /* two more of kind 0 */
    cost[5] = 9.5;                                                /* kind 1's long run */
    size_t lead[N] = {0, 5, 4, 8, 12, 1, 2, 9, 3, 6, 13, 7, 10, 11, 14, 15};
    size_t turns[N] = {0, 5, 3, 6, 4, 9, 7, 10, 8, 13, 11, 14, 12, 15, 1, 2};
    cr_assert_eq(lab_sched_order_runs(cost, kind, 4, N, 5.0, idx), LAB_OK);
    for (int i = 0; i < N; ++i) cr_expect_eq(idx[i], lead[i], "leading at 5, position %d: run %zu, want %zu", i, idx[i], lead[i]);
    cr_assert_eq(lab_sched_order_runs(cost, kind, 4, N, 0.0, idx), LAB_OK);
    for (int i = 0; i < N; ++i) cr_expect_eq(idx[i], turns[i], "no lead, position %d: run %zu, want %zu", i, idx[i], turns[i]);
}

static lab_machine host(int ncpu, int ngpu)
{
    lab_machine m;
    memset(&m, 0, sizeof m);
    m.ncpu = ncpu;
    m.ngpu = ngpu;
    for (int i = 0; i < ngpu; ++i) snprintf(m.gpu[i], sizeof m.gpu[i], "%d", i);
    return m;
}

/* The worker count: the usable CPUs on the CPU; on CUDA 16 a GPU and at least 32 by default (no more than the CPUs),
 * an explicit -j as asked up to 40 a GPU, beyond that capped with a note, never a 49th MPS client on one GPU. */
Test(sched, workers_per_gpu_are_capped_below_the_mps_client_limit)
{
    char note[200];
    lab_machine one = host(64, 1), four = host(64, 4), small = host(16, 4), cpu = host(64, 0);
    cr_expect_eq(lab_sched_workers(&cpu, LAB_BACKEND_CPU, 0, note, sizeof note), 64);
    cr_expect_eq(lab_sched_workers(&one, LAB_BACKEND_CPU, 0, note, sizeof note), 64, "the CPU backend ignores GPUs");
    cr_expect_eq(lab_sched_workers(&one, LAB_BACKEND_CUDA, 0, note, sizeof note), 32, "one GPU of a 64-core host: 32");
    cr_expect_str_empty(note);
    lab_machine two = host(64, 2), one16 = host(16, 1), one24 = host(24, 1);
    cr_expect_eq(lab_sched_workers(&two, LAB_BACKEND_CUDA, 0, note, sizeof note), 32, "two GPUs: 16 each");
    cr_expect_eq(lab_sched_workers(&one16, LAB_BACKEND_CUDA, 0, note, sizeof note), 16, "one GPU of a 16-core host");
    cr_expect_eq(lab_sched_workers(&one24, LAB_BACKEND_CUDA, 0, note, sizeof note), 24, "no more workers than CPUs");
    cr_expect_eq(lab_sched_workers(&four, LAB_BACKEND_CUDA, 0, note, sizeof note), 64);
    cr_expect_eq(lab_sched_workers(&small, LAB_BACKEND_CUDA, 0, note, sizeof note), 16, "no more workers than CPUs");
    cr_expect_eq(lab_sched_workers(&one, LAB_BACKEND_CUDA, 48, note, sizeof note), 40, "-j 48 on one GPU");
    cr_expect(strstr(note, "-j 48 capped to 40") != NULL, "%s", note);
    cr_expect_eq(lab_sched_workers(&one, LAB_BACKEND_CUDA, 64, note, sizeof note), 40, "-j 64 on one GPU");
    cr_expect_eq(lab_sched_workers(&four, LAB_BACKEND_CUDA, 64, note, sizeof note), 64, "-j 64 on four GPUs: 16 each");
    cr_expect_str_empty(note);
    cr_expect_eq(lab_sched_workers(&one, LAB_BACKEND_CUDA, 3, note, sizeof note), 3, "below the cap: as asked");
    cr_expect_leq(LAB_SCHED_GPU_WORKERS_MAX, LAB_SCHED_MPS_CLIENTS - 1);
}

/* A plan never puts more than 40 workers on one GPU: -j 64 with one GPU listed gives 40 workers, each bound to it. */
Test(sched, a_plan_never_exceeds_the_gpu_cap)
{
    lab_incident inc = {.id = "9102-plan", .variants = one_fix, .n_variants = 1};
    lab_machine one = host(64, 1), two = host(64, 2);
    lab_sched_plan p = lab_sched_plan_incident(&one, &inc, LAB_BACKEND_CUDA, 1000, 1, 64);
    cr_expect_eq(p.workers, 40, "%s", p.why);
    p = lab_sched_plan_incident(&one, &inc, LAB_BACKEND_CUDA, 1000, 1, 0);
    cr_expect_eq(p.workers, 32, "%s", p.why);
    p = lab_sched_plan_incident(&two, &inc, LAB_BACKEND_CUDA, 1000, 1, 0);
    cr_expect_eq(p.workers, 32, "%s", p.why);
    p = lab_sched_plan_incident(&one, &inc, LAB_BACKEND_CPU, 1000, 1, 0);
    cr_expect_eq(p.workers, 64, "%s", p.why);
}

/* A host shared by local ranks: its GPUs in disjoint sets of consecutive entries, as even as possible, the CPUs divided;
 * the rank's worker count is then lab_sched_workers on its share (here 64 CPUs and 4 GPUs: 2 ranks get 32 workers each,
 * 16 a GPU; 4 ranks 16 each). A rank beyond the GPUs keeps none. */
Test(sched, a_host_is_shared_by_its_local_ranks)
{
    static const char *want2[2][2] = {{"0", "1"}, {"2", "3"}};
    for (int r = 0; r < 2; ++r) {
        lab_machine m = host(64, 4);
        snprintf(m.uuid[2 * r], sizeof m.uuid[0], "GPU-%d", 2 * r);
        cr_expect_eq(lab_sched_host_share(&m, r, 2), 2 * r);
        cr_expect_eq(m.ngpu, 2);
        cr_expect_eq(m.ncpu, 32);
        cr_expect(strstr(m.cpu_source, "shared by 2 local ranks") != NULL, "%s", m.cpu_source);
        for (int k = 0; k < 2; ++k) cr_expect_str_eq(m.gpu[k], want2[r][k], "rank %d, GPU %d", r, k);
        char uuid[16];
        snprintf(uuid, sizeof uuid, "GPU-%d", 2 * r);
        cr_expect_str_eq(m.uuid[0], uuid, "the names and UUIDs move with their GPUs");
        char vis[64];
        lab_sched_visible(&m, 0, m.ngpu, vis, sizeof vis);
        cr_expect_str_eq(vis, r ? "2,3" : "0,1");
        cr_expect_eq(lab_sched_workers(&m, LAB_BACKEND_CUDA, 0, NULL, 0), 32);
    }
    int sizes[3], firsts[3];
    for (int r = 0; r < 3; ++r) {
        lab_machine m = host(64, 4);
        firsts[r] = lab_sched_host_share(&m, r, 3);
        sizes[r] = m.ngpu;
        cr_expect_eq(m.ncpu, 21);
    }
    cr_expect(sizes[0] == 2 && sizes[1] == 1 && sizes[2] == 1, "4 GPUs, 3 ranks: %d %d %d", sizes[0], sizes[1], sizes[2]);
    cr_expect(firsts[0] == 0 && firsts[1] == 2 && firsts[2] == 3, "first GPUs %d %d %d", firsts[0], firsts[1], firsts[2]);
    lab_machine m = host(2, 1);
    cr_expect_eq(lab_sched_host_share(&m, 1, 2), 1);
    cr_expect_eq(m.ngpu, 0, "a second rank on a host of one GPU keeps none");
    cr_expect_eq(m.ncpu, 1);
    m = host(1, 0);
    cr_expect_eq(lab_sched_host_share(&m, 0, 4), 0);
    cr_expect_eq(m.ncpu, 1, "never below one CPU");
    cr_expect_eq(lab_sched_host_share(&m, 4, 4), -1, "a rank outside the host");
    lab_machine one = host(64, 1);
    char vis[8];
    lab_sched_visible(&one, 0, 1, vis, sizeof vis);
    cr_expect_str_eq(vis, "0");
}

/* An incident whose workers start a long-lived job (worker_setup_s) gets one equal share of the seed groups per
 * worker instead of a worker per group; with gpus_all, a multi-GPU case takes every GPU of the host, one at a time. */
Test(sched, long_lived_jobs_get_shares_and_gpus_all_takes_the_host)
{
    static const lab_variant two_gpus[] = {{.name = "fix", .role = LAB_ROLE_FIX, .what = "-", .gpus = 2}};
    lab_incident plain = {.id = "9103-plain", .variants = two_gpus, .n_variants = 1};
    lab_incident lived = {.id = "9104-lived", .variants = two_gpus, .n_variants = 1, .worker_setup_s = 1.0};
    lab_incident all = {.id = "9105-all", .variants = two_gpus, .n_variants = 1, .worker_setup_s = 1.0, .gpus_all = 1};
    lab_machine cpu8 = host(8, 0), four = host(64, 4);
    lab_sched_plan p = lab_sched_plan_incident(&cpu8, &plain, LAB_BACKEND_CPU, 100, 4, 0);
    cr_expect_eq(p.batch, 4, "one group a worker run: %s", p.why);
    p = lab_sched_plan_incident(&cpu8, &lived, LAB_BACKEND_CPU, 100, 4, 0);
    cr_expect_eq(p.workers, 8);
    cr_expect_eq(p.batch, 13 * 4, "ceil(100 / 8) groups a worker: %s", p.why);
    p = lab_sched_plan_incident(&cpu8, &lived, LAB_BACKEND_CPU, 3, 4, 0);
    cr_expect_eq(p.workers, 3, "no worker without a group: %s", p.why);
    p = lab_sched_plan_incident(&four, &lived, LAB_BACKEND_CUDA, 100, 4, 0);
    cr_expect(p.workers == 2 && p.gpus_per_worker == 2 && p.exclusive && p.batch == 50 * 4, "%s", p.why);
    p = lab_sched_plan_incident(&four, &all, LAB_BACKEND_CUDA, 100, 4, 0);
    cr_expect(p.workers == 1 && p.gpus_per_worker == 4 && p.exclusive && p.batch == 100 * 4, "%s", p.why);
}

/* A worker of one GPU makes its context with one hardware work queue (lab_device_one_queue: the driver makes contexts
 * one at a time across the host, and one queue halves each); a count the user set stays; a worker of several GPUs
 * (NCCL, streams of its own) keeps the driver's default; the CPU backend binds nothing. */
Test(sched, a_one_gpu_worker_gets_one_work_queue)
{
    lab_machine m = host(64, 4);
    lab_sched_plan one = {.workers = 64, .gpus_per_worker = 1}, two = {.workers = 2, .gpus_per_worker = 2, .exclusive = 1},
                   cpu = {.workers = 64};
    unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
    lab_sched_bind(&m, &cpu, 5);
    cr_expect_null(getenv("CUDA_DEVICE_MAX_CONNECTIONS"), "the CPU backend");
    lab_sched_bind(&m, &two, 1);
    cr_expect_str_eq(getenv("CUDA_VISIBLE_DEVICES"), "2,3");
    cr_expect_null(getenv("CUDA_DEVICE_MAX_CONNECTIONS"), "a worker of two GPUs keeps the default");
    lab_sched_bind(&m, &one, 6);
    cr_expect_str_eq(getenv("CUDA_VISIBLE_DEVICES"), "2");
    cr_expect_str_eq(getenv("CUDA_DEVICE_MAX_CONNECTIONS"), "1");
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", "4", 1);
    lab_sched_bind(&m, &one, 7);
    cr_expect_str_eq(getenv("CUDA_DEVICE_MAX_CONNECTIONS"), "4", "the user's count stays");
    unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
}

/* The device probe's child sees device 0 alone, the one it reads: the first entry of a list, index 0 when nothing is
 * set; a single entry, or an empty list (no device), stays as it is. */
Test(sched, the_device_probe_sees_device_0_alone)
{
    char buf[64] = "";
    cr_expect_eq(lab_device_probe_visible(NULL, buf, sizeof buf), 1);
    cr_expect_str_eq(buf, "0");
    cr_expect_eq(lab_device_probe_visible("2,3", buf, sizeof buf), 1);
    cr_expect_str_eq(buf, "2");
    cr_expect_eq(lab_device_probe_visible("GPU-aaaa-1,GPU-bbbb-2", buf, sizeof buf), 1);
    cr_expect_str_eq(buf, "GPU-aaaa-1");
    snprintf(buf, sizeof buf, "untouched");
    cr_expect_eq(lab_device_probe_visible("3", buf, sizeof buf), 0);
    cr_expect_eq(lab_device_probe_visible("", buf, sizeof buf), 0);
    cr_expect_str_eq(buf, "untouched");
}
