/* test_seedbatch: seed batches: the layout that puts one variant's seeds side by side, the group cache a batch reads, the runner handing a batch's results out case by case, and 0008's batched launches against its cases run alone. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab_replay.h"
#include "lab_seedbatch.h"
#include "lab_replay_fed.h"
#include "lab_semicrf.h"
#include "lab_test_case.h"

/* ---- a synthetic batching incident ---- */

static int setups; /* setup calls in this process */
static lab_status sb_setup(const lab_case *c, void **g)
{
    uint64_t *s = malloc(sizeof *s);
    if (!s) return lab_err_set(LAB_ERR_NOMEM, "oom");
    *s = c->seed;
    *g = s;
    setups++;
    return LAB_OK;
}
static void sb_teardown(void *g) { free(g); }
static uint64_t sb_key(uint64_t seed) { return seed % 3; }
/* alone: the seed its group holds, its pid, batch size 1 */
static lab_status sb_run(const lab_case *c, lab_case_result *r)
{
    lab_result_metric(r, "group_seed", (double)*(const uint64_t *)c->group);
    lab_result_metric(r, "pid", (double)getpid());
    lab_result_metric(r, "batch_n", 1);
    lab_result_verdict(r, c->variant->role == LAB_ROLE_FIX, "seed %llu", (unsigned long long)c->seed);
    return LAB_OK;
}
static lab_status sb_run_batch(const lab_case *cases, size_t n, lab_case_result *results)
{
    for (size_t i = 0; i < n; ++i) {
        sb_run(&cases[i], &results[i]);
        lab_result_metric(&results[i], "batch_n", (double)n);
        lab_result_metric(&results[i], "key", (double)sb_key(cases[i].seed));
    }
    return LAB_OK;
}
static const lab_variant sb_variants[] = {
    {.name = "bug", .role = LAB_ROLE_BUG, .what = "fails"},
    {.name = "fix", .role = LAB_ROLE_FIX, .what = "passes"},
    {.name = "bug-memory", .role = LAB_ROLE_BUG, .what = "a memory bug: never batched", .sanitizer = "memcheck"},
};
static const lab_incident sb_inc = {.id = "9010-seedbatch", .title = "seed batches",
                                    .variants = sb_variants, .n_variants = 3, .setup = sb_setup, .teardown = sb_teardown,
                                    .run_cpu = sb_run, .run_cuda = sb_run, .plots.metric = "pid",
                                    .batch = {.run_cuda = sb_run_batch, .max = 3, .key = sb_key}};

/* 10 seeds x 3 variants in seed groups (memory bug last), as the runner orders them */
static size_t sb_records(lab_case_record *recs, size_t *order)
{
    size_t n = 0;
    for (uint64_t s = 1; s <= 10; ++s)
        for (int v = 0; v < 3; ++v) {
            recs[n] = (lab_case_record){.incident = &sb_inc, .variant = &sb_variants[v], .seed = s, .backend = LAB_BACKEND_CUDA};
            order[n] = n;
            n++;
        }
    return n;
}

Test(seedbatch, size_only_where_a_cuda_batch_exists)
{
    cr_expect_eq(lab_seedbatch_size(&sb_inc, LAB_BACKEND_CUDA, 0, 0), 3u);
    cr_expect_eq(lab_seedbatch_size(&sb_inc, LAB_BACKEND_CUDA, 0, 2), 2u, "--batch-seeds caps");
    cr_expect_eq(lab_seedbatch_size(&sb_inc, LAB_BACKEND_CUDA, 0, 1), 1u, "--batch-seeds 1: none");
    cr_expect_eq(lab_seedbatch_size(&sb_inc, LAB_BACKEND_CPU, 0, 0), 1u, "never on the CPU");
    cr_expect_eq(lab_seedbatch_size(&sb_inc, LAB_BACKEND_CUDA, 1, 0), 1u, "never under a sanitizer");
    lab_incident plain = sb_inc;
    plain.batch.run_cuda = NULL;
    cr_expect_eq(lab_seedbatch_size(&plain, LAB_BACKEND_CUDA, 0, 0), 1u);
}

/* Every case exactly once; a batch is one variant over distinct seeds of one key, at most bmax of them; memory
 * bugs alone; chunks as equal as they can be (key 1: seeds 1 4 7 10 -> 2 + 2; keys 2 and 0: 3 each). */
/* A fed share of a larger run (--mpi) cuts its seed batches for the whole run: a run of a batching incident holds as
 * many seeds as a plain replay of the run would give it (all 3 while a worker's fair share of the run holds them, 2 at
 * least when it does not), whatever share the feed hands out; nothing for a run of its own, the CPU or no batching. */
Test(seedbatch, a_fed_share_cuts_batches_for_the_whole_run)
{
    const lab_incident *incs[] = {&sb_inc};
    uint64_t seeds[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    lab_replay_opts o = {
        .what = {.incidents = incs, .n_incidents = 1, .seeds = seeds, .n_seeds = 10, .backend = LAB_BACKEND_CUDA},
        .how = {.lab_bin = "build/lab", .root = "."}};
    lab_case_record *recs;
    size_t n;
    lab_replay_groups g;
    cr_assert_eq(lab_replay_cases(&o, &recs, &n), LAB_OK, "%s", lab_err_msg());
    cr_assert_eq(lab_replay_groups_make(recs, n, &g), LAB_OK);
    cr_expect_eq(lab_replay_run_seeds(&o, recs, &g, 0), 0u, "a run of its own: the pool's own share");
    o.how.run_workers = 1, o.how.run_gpus = 1;
    cr_expect_float_eq(lab_replay_run_fair(&o, &g), 1.5, 1e-9, "10 groups of 3 cases of 0.05 s for one worker");
    cr_expect_eq(lab_replay_run_seeds(&o, recs, &g, 0), 3u, "one worker's share holds a whole batch");
    o.how.run_workers = 10;
    cr_expect_eq(lab_replay_run_seeds(&o, recs, &g, 0), 2u, "a fair share of one group: the floor of 2 seeds");
    o.how.batch_seeds = 1;
    cr_expect_eq(lab_replay_run_seeds(&o, recs, &g, 0), 0u, "--batch-seeds 1: no batches");
    o.how.batch_seeds = 0, o.what.backend = LAB_BACKEND_CPU;
    cr_expect_eq(lab_replay_run_seeds(&o, recs, &g, 0), 0u, "never on the CPU");
    lab_replay_groups_free(&g);
    free(recs);
}

Test(seedbatch, layout_batches_one_variant_over_seeds_of_one_key)
{
    lab_case_record recs[30];
    size_t order[30];
    size_t n = sb_records(recs, order);
    lab_seedbatch_plan p;
    cr_assert_eq(lab_seedbatch_plan_make(recs, order, 0, n, 3, &p), LAB_OK);
    cr_expect_eq(p.n_chunks, 4u);
    int seen[30] = {0};
    for (size_t j = 0; j < p.chunk_start[p.n_chunks]; ++j) seen[p.jobs[j]]++;
    for (size_t i = 0; i < n; ++i) cr_expect_eq(seen[i], 1, "record %zu placed %d times", i, seen[i]);
    cr_expect_eq(p.chunk_start[p.n_chunks], n);
    size_t batches = 0;
    for (size_t c = 0; c < p.n_chunks; ++c) {
        size_t a = p.chunk_start[c], e = p.chunk_start[c + 1], seeds = (e - a) / 3;
        cr_expect(seeds == 2 || seeds == 3, "chunk %zu holds %zu seeds", c, seeds);
        cr_expect_gt(p.lead[a], 0u, "a chunk starts with a leader");
        for (size_t j = a; j < e;) {
            unsigned L = p.lead[j];
            cr_assert_gt(L, 0u);
            cr_assert_leq(j + L, e, "a batch stays in its chunk");
            const lab_case_record *first = &recs[p.jobs[j]];
            if (first->variant->sanitizer) cr_expect_eq(L, 1u, "memory bugs run alone");
            else {
                cr_expect_eq(L, seeds, "one batch per variant and chunk");
                batches++;
            }
            for (size_t k = j + 1; k < j + L; ++k) {
                const lab_case_record *r = &recs[p.jobs[k]];
                cr_expect_eq(p.lead[k], 0u);
                cr_expect_eq(r->variant, first->variant);
                cr_expect_eq(sb_key(r->seed), sb_key(first->seed));
                cr_expect_neq(r->seed, recs[p.jobs[k - 1]].seed);
            }
            j += L;
        }
    }
    cr_expect_eq(batches, 8u, "2 variants x 4 chunks");
    lab_seedbatch_plan_free(&p);
    /* bmax 1: every case alone */
    cr_assert_eq(lab_seedbatch_plan_make(recs, order, 0, n, 1, &p), LAB_OK);
    for (size_t j = 0; j < n; ++j) cr_expect_eq(p.lead[j], 1u);
    lab_seedbatch_plan_free(&p);
}

/* A batch reads every case's own seed's group, made once per seed however many variants batch over it; the
 * contract's limits are errors, not silent truncation. */
Test(seedbatch, run_batch_gives_each_case_its_own_group)
{
    lab_case cs[3];
    char gdir[3][4096];
    lab_case_result r[3];
    setups = 0;
    for (int v = 0; v < 2; ++v) {
        uint64_t seeds[3] = {2, 5, 8};
        for (int i = 0; i < 3; ++i) lab_case_init(&cs[i], &sb_inc, &sb_variants[v], seeds[i], LAB_BACKEND_CUDA, ".", gdir[i], sizeof gdir[i]);
        cr_assert_eq(lab_case_run_batch(cs, 3, r), LAB_OK, "%s", lab_err_msg());
        for (int i = 0; i < 3; ++i) {
            cr_expect_eq(lab_result_get(&r[i], "group_seed"), (double)seeds[i]);
            cr_expect_eq(lab_result_get(&r[i], "batch_n"), 3.0);
        }
    }
    cr_expect_eq(setups, 3, "one setup per seed for both variants");
    /* one case alone after a batch finds its group cached */
    lab_case_result one;
    memset(&one, 0, sizeof one);
    cr_assert_eq(lab_case_run(&cs[1], &one), LAB_OK);
    cr_expect_eq(lab_result_get(&one, "group_seed"), 5.0);
    cr_expect_eq(setups, 3);
    lab_case more[4];
    char g4[4][4096];
    for (int i = 0; i < 4; ++i) lab_case_init(&more[i], &sb_inc, &sb_variants[0], 1 + 3 * (uint64_t)i, LAB_BACKEND_CUDA, ".", g4[i], sizeof g4[i]);
    lab_case_result r4[4];
    cr_expect_eq(lab_case_run_batch(more, 4, r4), LAB_ERR_ARG, "above batch.max");
    cr_expect_eq(lab_case_run_batch(more, 0, r4), LAB_ERR_ARG, "empty");
    more[1].variant = &sb_variants[1];
    cr_expect_eq(lab_case_run_batch(more, 2, r4), LAB_ERR_ARG, "two variants");
    lab_case_release();
}

/* In a worker: the leader's batch keeps the followers' results, each handed out once, nothing else. */
Test(seedbatch, worker_hands_out_each_result_once)
{
    lab_case cs[3];
    char gdir[3][4096];
    for (int i = 0; i < 3; ++i) lab_case_init(&cs[i], &sb_inc, &sb_variants[1], 3 + 3 * (uint64_t)i, LAB_BACKEND_CUDA, ".", gdir[i], sizeof gdir[i]);
    lab_case_result r;
    memset(&r, 0, sizeof r);
    cr_assert_eq(lab_seedbatch_run(cs, 3, 100, &r), LAB_OK);
    cr_expect_eq(lab_result_get(&r, "group_seed"), 3.0);
    cr_expect_eq(lab_seedbatch_take(100, &r), 0, "the leader's own is not kept");
    cr_expect_eq(lab_seedbatch_take(102, &r), 1);
    cr_expect_eq(lab_result_get(&r, "group_seed"), 9.0);
    cr_expect_eq(lab_seedbatch_take(102, &r), 0, "once");
    cr_expect_eq(lab_seedbatch_take(101, &r), 1);
    cr_expect_eq(lab_result_get(&r, "group_seed"), 6.0);
    cr_expect_eq(lab_seedbatch_take(103, &r), 0, "past the batch");
    cr_expect_eq(lab_seedbatch_take(99, &r), 0, "before it");
    lab_case_release();
}

/* An incident that batches its memory bugs (batch.memory_bugs): they batch like the rest; a batch in which one
 * case does not vouch for its strays keeps nothing and retires its worker after the leader. */
static lab_status sb_run_batch_loose(const lab_case *cases, size_t n, lab_case_result *results)
{
    sb_run_batch(cases, n, results);
    for (size_t i = 0; i < n; ++i) results[i].memory_contained = cases[i].seed != 6;
    return LAB_OK;
}
Test(seedbatch, memory_bugs_batch_only_where_contained)
{
    lab_incident inc = sb_inc;
    inc.batch.memory_bugs = 1;
    inc.batch.run_cuda = sb_run_batch_loose;
    lab_case_record recs[30];
    size_t order[30];
    size_t n = sb_records(recs, order);
    for (size_t i = 0; i < n; ++i) recs[i].incident = &inc;
    lab_seedbatch_plan p;
    cr_assert_eq(lab_seedbatch_plan_make(recs, order, 0, n, 3, &p), LAB_OK);
    size_t alone = 0;
    for (size_t j = 0; j < n; ++j) alone += p.lead[j] == 1;
    cr_expect_eq(alone, 0u, "every variant batches (no chunk of one seed)");
    lab_seedbatch_plan_free(&p);
    lab_case cs[3];
    char gdir[3][4096];
    lab_case_result r;
    for (int i = 0; i < 3; ++i) lab_case_init(&cs[i], &inc, &sb_variants[2], 3 + 3 * (uint64_t)i, LAB_BACKEND_CUDA, ".", gdir[i], sizeof gdir[i]);
    memset(&r, 0, sizeof r);
    cr_assert_eq(lab_seedbatch_run(cs, 3, 200, &r), LAB_OK);
    cr_expect_eq(r.retire_worker, 1, "seed 6 did not vouch: the worker ends");
    cr_expect_eq(lab_seedbatch_take(201, &r) + lab_seedbatch_take(202, &r), 0, "nothing kept");
    cs[1].seed = 7; /* all contained now */
    memset(&r, 0, sizeof r);
    cr_assert_eq(lab_seedbatch_run(cs, 3, 300, &r), LAB_OK);
    cr_expect_eq(r.retire_worker, 0);
    cr_expect_eq(lab_seedbatch_take(302, &r), 1);
    lab_case_release();
}

/* The runner: on a GPU, every non-memory-bug variant's cases of one key and chunk ran in one batch (batch_n
 * above 1, one worker process per batch), each case once, in canonical order; memory bugs alone. Without a
 * GPU the batch cannot start (no device), so every case falls back to running alone and SKIPs needs-gpu, each
 * exactly once: the fallback path. A build without CUDA SKIPs every case missing, saying the build has no CUDA. */
Test(seedbatch, runner_runs_batches_and_falls_back_alone)
{
    setenv("CUDA_VISIBLE_DEVICES", "0", 1);
    const lab_incident *incs[] = {&sb_inc};
    uint64_t seeds[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    lab_replay_opts o = {
        .what = {.incidents = incs, .n_incidents = 1, .seeds = seeds, .n_seeds = 10, .backend = LAB_BACKEND_CUDA},
        .how = {.jobs = 2, .lab_bin = "build/lab", .root = "."}};
    FILE *devnull = fopen("/dev/null", "w");
    lab_verdict v;
    lab_case_record *recs;
    size_t n;
    cr_assert_eq(lab_replay_run(&o, devnull, &v, &recs, &n), LAB_OK);
    fclose(devnull);
    cr_assert_eq(n, 30);
    size_t ran = 0;
    for (size_t i = 0; i < n; ++i) {
        const lab_case_record *c = &recs[i];
        cr_expect_eq(c->variant, &sb_variants[i / 10], "canonical order");
        cr_expect_eq(c->seed, seeds[i % 10]);
        if (c->o.outcome == LAB_OUT_SKIP) {
#ifdef LAB_HAVE_CUDA
            cr_expect_eq(c->o.r.skip_class, LAB_SKIP_NEEDS_GPU, "%s", c->o.r.detail);
#else
            /* a build without CUDA runs no CUDA case: SKIP missing (NOT OK: asked for, not built), saying so */
            cr_expect_eq(c->o.r.skip_class, LAB_SKIP_MISSING, "%s", c->o.r.detail);
            cr_expect(strstr(c->o.r.detail, "this build has no CUDA") != NULL, "%s", c->o.r.detail);
#endif
            continue;
        }
        ran++;
        cr_expect_eq(lab_result_get(&c->o.r, "group_seed"), (double)c->seed);
        double bn = lab_result_get(&c->o.r, "batch_n");
        if (c->variant->sanitizer) cr_expect_eq(bn, 1.0, "memory bugs alone");
        else cr_expect(bn >= 2.0 && bn <= 3.0, "%s seed %llu ran in a batch of %g", c->variant->name, (unsigned long long)c->seed, bn);
        /* the cases of its batch: same variant and key, same worker process */
        for (size_t j = 0; j < n; ++j)
            if (recs[j].variant == c->variant && !c->variant->sanitizer && sb_key(recs[j].seed) == sb_key(c->seed) &&
                lab_result_get(&recs[j].o.r, "batch_n") == bn && bn == 3.0)
                cr_expect_eq(lab_result_get(&recs[j].o.r, "pid"), lab_result_get(&c->o.r, "pid"));
    }
#ifdef LAB_HAVE_CUDA
    if (!ran) cr_log_info("no usable GPU: the fallback path only (every case SKIP needs-gpu)");
#else
    cr_expect_eq(ran, 0, "a build without CUDA ran a CUDA case");
#endif
    free(recs);
}

#ifdef LAB_HAVE_CUDA
/* 0008 on a GPU: a seed batch gives every case what it gets alone. Fix variants are race-free: outcome, detail and
 * every metric bit for bit (the launch time ms_backward excepted: it is the batch's). Bug variants race: both
 * ways detected, with the same census. Batches of two seeds of one T: (1, 4) T = 200, (2, 5) T = 500, (3, 6)
 * T = 100, for every variant that batches. */
Test(seedbatch, wr_batches_equal_cases_alone, .timeout = 600)
{
    lab_test_need_gpu();
    const lab_incident *inc = lab_incident_find("0008");
    cr_assert_not_null(inc);
    cr_assert_not_null(inc->batch.run_cuda);
    static const char *census[] = {"hazards", "raw_cross_warp", "raw_intra_warp", "war_hazards", "replicated_loads", "tol"};
    for (int v = 0; v < inc->n_variants; ++v) {
        const lab_variant *var = &inc->variants[v];
        if (var->sanitizer) continue;
        for (uint64_t first = 1; first <= 3; ++first) {
            lab_case cs[2];
            char gdir[2][4096];
            lab_case_result rb[2], ra[2];
            for (int i = 0; i < 2; ++i)
                lab_case_init(&cs[i], inc, var, first + 3 * (uint64_t)i, LAB_BACKEND_CUDA, ".", gdir[i], sizeof gdir[i]);
            cr_assert_eq(inc->batch.key(cs[0].seed), inc->batch.key(cs[1].seed));
            cr_assert_eq(lab_case_run_batch(cs, 2, rb), LAB_OK, "%s: %s", var->name, lab_err_msg());
            for (int i = 0; i < 2; ++i) {
                memset(&ra[i], 0, sizeof ra[i]);
                cr_assert_eq(lab_case_run(&cs[i], &ra[i]), LAB_OK, "%s: %s", var->name, lab_err_msg());
                char what[96];
                snprintf(what, sizeof what, "%s seed %llu", var->name, (unsigned long long)cs[i].seed);
                cr_expect_eq(rb[i].passed, ra[i].passed, "%s: batched %s, alone %s", what, rb[i].detail, ra[i].detail);
                cr_expect_eq(rb[i].passed, var->role == LAB_ROLE_FIX, "%s: %s", what, rb[i].detail);
                if (var->role == LAB_ROLE_BUG) {
                    for (size_t m = 0; m < sizeof census / sizeof census[0]; ++m)
                        cr_expect_eq(lab_result_get(&rb[i], census[m]), lab_result_get(&ra[i], census[m]), "%s: %s", what, census[m]);
                    continue;
                }
                cr_expect_str_eq(rb[i].detail, ra[i].detail, "%s", what);
                cr_expect_eq(rb[i].n_metrics, ra[i].n_metrics, "%s", what);
                for (int m = 0; m < rb[i].n_metrics && m < ra[i].n_metrics; ++m) {
                    if (!strcmp(rb[i].metrics[m].name, "ms_backward")) continue;
                    double x = rb[i].metrics[m].value, y = ra[i].metrics[m].value;
                    cr_expect((isnan(x) && isnan(y)) || memcmp(&x, &y, sizeof x) == 0, "%s: %s %.17g batched, %.17g alone",
                              what, rb[i].metrics[m].name, x, y);
                }
            }
        }
    }
    lab_case_release();
}

/* 0001 and 0002 on a GPU: a seed batch gives every case what it gets alone. Every variant batches (0001's memory
 * bug too: its strays stay in its own guard zones). Same verdict both ways, and the metrics that do not depend on
 * the order of float32 atomics bit for bit (0002's deterministic fix: every metric). Batches of two seeds of one T. */
Test(seedbatch, semicrf_batches_equal_cases_alone, .timeout = 600)
{
    lab_test_need_gpu();
    static const char *fixed[] = {"oob_writes", "oob_reads", "guard_kind", "pad_nonzero", "T", "tol", "logz_abs_err",
                                  "guard_breach", "nonfinite_grads"};
    const char *ids[2] = {"0001", "0002"};
    for (int k = 0; k < 2; ++k) {
        const lab_incident *inc = lab_incident_find(ids[k]);
        cr_assert_not_null(inc);
        cr_assert_not_null(inc->batch.run_cuda);
        for (int v = 0; v < inc->n_variants; ++v) {
            const lab_variant *var = &inc->variants[v];
            int det = k == 1 && var->param == LAB_SEMICRF_ACC_DETERMINISTIC;
            for (uint64_t first = 1; first <= 3; ++first) {
                lab_case cs[2];
                char gdir[2][4096];
                lab_case_result rb[2], ra[2];
                for (int i = 0; i < 2; ++i)
                    lab_case_init(&cs[i], inc, var, first + 3 * (uint64_t)i, LAB_BACKEND_CUDA, ".", gdir[i], sizeof gdir[i]);
                cr_assert_eq(inc->batch.key(cs[0].seed), inc->batch.key(cs[1].seed));
                cr_assert_eq(lab_case_run_batch(cs, 2, rb), LAB_OK, "%s %s: %s", ids[k], var->name, lab_err_msg());
                for (int i = 0; i < 2; ++i) {
                    memset(&ra[i], 0, sizeof ra[i]);
                    cr_assert_eq(lab_case_run(&cs[i], &ra[i]), LAB_OK, "%s: %s", var->name, lab_err_msg());
                    char what[96];
                    snprintf(what, sizeof what, "%s %s seed %llu", ids[k], var->name, (unsigned long long)cs[i].seed);
                    cr_expect_eq(rb[i].passed, ra[i].passed, "%s: batched %s, alone %s", what, rb[i].detail, ra[i].detail);
                    cr_expect_eq(rb[i].passed, var->role == LAB_ROLE_FIX, "%s: %s", what, rb[i].detail);
                    cr_expect_eq(rb[i].memory_contained, ra[i].memory_contained, "%s", what);
                    cr_expect_eq(rb[i].n_metrics, ra[i].n_metrics, "%s", what);
                    for (int m = 0; m < rb[i].n_metrics && m < ra[i].n_metrics; ++m) {
                        int check = det;
                        for (size_t f = 0; f < sizeof fixed / sizeof fixed[0]; ++f) check |= !strcmp(rb[i].metrics[m].name, fixed[f]);
                        if (!check) continue;
                        double x = rb[i].metrics[m].value, y = ra[i].metrics[m].value;
                        cr_expect((isnan(x) && isnan(y)) || memcmp(&x, &y, sizeof x) == 0, "%s: %s %.17g batched, %.17g alone",
                                  what, rb[i].metrics[m].name, x, y);
                    }
                    if (det) cr_expect_str_eq(rb[i].detail, ra[i].detail, "%s", what);
                }
            }
        }
    }
    lab_case_release();
}
#endif
