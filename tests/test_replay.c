/* test_replay: the runner over a synthetic incident: verdicts per role, XPASS, crash/hang as outcomes, output files. */
#include <cJSON.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab_fs.h"
#include "tests/lab_test_sh.h"
#include "lab_gnuplot.h"
#include "lab_plot.h"
#include "lab_replay.h"
#include "lab_replay_fed.h"
#include "lab_sched.h"
#include "lab_results.h"
#ifdef LAB_HAVE_CUDA
#include "lab_cuda.h"
#endif

static lab_status run_pass(const lab_case *c, lab_case_result *r)
{
    lab_result_metric(r, "err", 1e-7 * (double)c->seed);
    lab_result_verdict(r, 1, "within tolerance");
    return LAB_OK;
}
static lab_status run_fail(const lab_case *c, lab_case_result *r)
{
    lab_result_metric(r, "err", 0.5);
    lab_result_verdict(r, 0, "err 0.5 > 1e-6");
    return LAB_OK;
}
static lab_status run_crash(const lab_case *c, lab_case_result *r)
{
    raise(SIGSEGV);
    return LAB_OK;
}
static lab_status run_hang(const lab_case *c, lab_case_result *r)
{
    for (;;) pause();
    return LAB_OK;
}
/* Detected on odd seeds only: a stochastic reproducer. */
static lab_status run_half(const lab_case *c, lab_case_result *r)
{
    lab_result_verdict(r, !(c->seed & 1), "seed parity");
    return LAB_OK;
}

/* The synthetic incidents' one run function: the variant's param picks the behaviour. */
enum { P_PASS, P_FAIL, P_CRASH, P_HANG, P_HALF };
static lab_status run_param(const lab_case *c, lab_case_result *r)
{
    switch (c->variant->param) {
    case P_FAIL: return run_fail(c, r);
    case P_CRASH: return run_crash(c, r);
    case P_HANG: return run_hang(c, r);
    case P_HALF: return run_half(c, r);
    default: return run_pass(c, r);
    }
}

static const lab_variant good_variants[] = {
    {.name = "fix", .role = LAB_ROLE_FIX, .what = "holds", .param = P_PASS},
    {.name = "bug-fail", .role = LAB_ROLE_BUG, .what = "caught by the criterion", .param = P_FAIL},
    {.name = "bug-crash", .role = LAB_ROLE_BUG, .what = "crashes", .param = P_CRASH, .detect = LAB_DETECT_CRASH},
    {.name = "bug-hang", .role = LAB_ROLE_BUG, .what = "hangs", .param = P_HANG, .detect = LAB_DETECT_HANG},
    {.name = "bug-half", .role = LAB_ROLE_BUG, .what = "caught on about half the seeds", .param = P_HALF,
     .min_detect_rate = 0.4},
};
static const lab_incident good = {.id = "9001-good", .title = "all roles met",
                                  .variants = good_variants, .n_variants = 5, .run_cpu = run_param,
                                  .plots = {.metric = "err", .log = 1, .drift_metric = "err"}, .timeout_s = 0.5};

static const lab_variant bad_variants[] = {
    {.name = "fix", .role = LAB_ROLE_FIX, .what = "regressed", .param = P_FAIL},
    {.name = "bug-xpass", .role = LAB_ROLE_BUG, .what = "no longer caught", .param = P_PASS},
    {.name = "bug-rare", .role = LAB_ROLE_BUG, .what = "caught on half, stated 0.95", .param = P_HALF,
     .min_detect_rate = 0.95},
};
static const lab_incident bad = {.id = "9002-bad", .title = "roles not met",
                                 .variants = bad_variants, .n_variants = 3, .run_cpu = run_param,
                                 .plots = {.metric = "err", .log = 1}, .timeout_s = 0.5};

static char outdir[64];

static void mkout(void)
{
    lab_test_tmpdir(outdir, sizeof outdir, "replay");
}

static void rmout(void)
{
    lab_test_rmtree(outdir);
}

static cJSON *read_json(const char *name)
{
    char path[256], *text;
    size_t len;
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    cr_assert_eq(lab_fs_read_all(path, &text, &len), LAB_OK, "%s", lab_err_msg());
    cJSON *j = cJSON_Parse(text);
    free(text);
    cr_assert_not_null(j, "%s is not JSON", name);
    return j;
}

static lab_status replay(const lab_incident *inc, size_t nseeds, int *ok, lab_case_record **recs, size_t *n)
{
    static const lab_incident *incs[1];
    static uint64_t seeds[64];
    incs[0] = inc;
    for (size_t i = 0; i < nseeds; ++i) seeds[i] = i + 1;
    lab_replay_opts o = {
        .what = {.incidents = incs, .n_incidents = 1, .seeds = seeds, .n_seeds = nseeds, .backend = LAB_BACKEND_CPU},
        .how = {.jobs = 4, .out_dir = outdir, .tap = 1, .lab_bin = "build/lab", .root = "."}};
    FILE *devnull = fopen("/dev/null", "w");
    lab_verdict v;
    lab_status st = lab_replay_run(&o, devnull, &v, recs, n);
    *ok = v.ok;
    fclose(devnull);
    return st;
}

/* An incident's default_seeds caps a default replay, and explicit seeds override it. */
Test(replay, default_seeds_cap, .init = mkout, .fini = rmout)
{
    lab_incident few = good;
    few.n_variants = 1;
    few.default_seeds = 3;
    const lab_incident *incs[] = {&few};
    uint64_t seeds[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    lab_replay_opts o = {
        .what = {.incidents = incs, .n_incidents = 1, .seeds = seeds, .n_seeds = 8, .seeds_default = 1,
                 .backend = LAB_BACKEND_CPU},
        .how = {.jobs = 2, .lab_bin = "build/lab", .root = "."}};
    FILE *devnull = fopen("/dev/null", "w");
    lab_verdict v;
    lab_case_record *recs;
    size_t n;
    cr_assert_eq(lab_replay_run(&o, devnull, &v, &recs, &n), LAB_OK);
    cr_expect_eq(n, 3);
    free(recs);
    o.what.seeds_default = 0;
    cr_assert_eq(lab_replay_run(&o, devnull, &v, &recs, &n), LAB_OK);
    cr_expect_eq(n, 8);
    free(recs);
    fclose(devnull);
}


Test(replay, roles_met_with_crash_and_hang_as_outcomes, .init = mkout, .fini = rmout)
{
    int ok = 0;
    lab_case_record *recs;
    size_t n;
    cr_assert_eq(replay(&good, 8, &ok, &recs, &n), LAB_OK, "%s", lab_err_msg());
    cr_assert_eq(n, 40);
    cr_expect(ok, "a good incident must replay ok");
    size_t crash = 0, hang = 0;
    for (size_t i = 0; i < n; ++i) {
        crash += recs[i].o.outcome == LAB_OUT_CRASH;
        hang += recs[i].o.outcome == LAB_OUT_HANG;
    }
    cr_expect_eq(crash, 8);
    cr_expect_eq(hang, 8);
    free(recs);

    cJSON *s = read_json("summary.json");
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(s, "ok")));
    cJSON *vars = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(s, "incidents"), 0), "variants");
    cr_assert_eq(cJSON_GetArraySize(vars), 5);
    cJSON *hv = cJSON_GetArrayItem(vars, 3);
    cr_expect_str_eq(cJSON_GetObjectItem(hv, "name")->valuestring, "bug-hang");
    cr_expect_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(hv, "counts"), "HANG")->valueint, 8);
    cJSON *half = cJSON_GetArrayItem(vars, 4);
    cr_expect_float_eq(cJSON_GetObjectItem(half, "detect_rate")->valuedouble, 0.5, 1e-12);
    cJSON_Delete(s);

    /* One JSON line per case, each with the fields CI tools key on. */
    char path[256], *text;
    size_t len;
    snprintf(path, sizeof path, "%s/results.jsonl", outdir);
    cr_assert_eq(lab_fs_read_all(path, &text, &len), LAB_OK);
    size_t lines = 0;
    for (char *p = text; *p; ++p) lines += *p == '\n';
    cr_expect_eq(lines, 40);
    cJSON *first = cJSON_ParseWithLength(text, strchr(text, '\n') - text);
    const char *keys[] = {"incident", "variant", "role", "seed", "backend", "outcome", "metrics", "replay"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; ++k)
        cr_expect_not_null(cJSON_GetObjectItem(first, keys[k]), "results.jsonl lacks %s", keys[k]);
    cr_expect_str_eq(cJSON_GetObjectItem(first, "replay")->valuestring,
                     "build/lab replay --incident 9001-good --variant fix --seed 1 --backend cpu");
    cJSON_Delete(first);
    free(text);

    /* Atomic writes leave no temporary files behind. */
    DIR *d = opendir(outdir);
    struct dirent *e;
    while ((e = readdir(d))) cr_expect(strstr(e->d_name, ".tmp.") == NULL, "left over: %s", e->d_name);
    closedir(d);
}

Test(replay, regression_xpass_and_lost_rate_fail_the_run, .init = mkout, .fini = rmout)
{
    int ok = 1;
    lab_case_record *recs;
    size_t n;
    cr_assert_eq(replay(&bad, 16, &ok, &recs, &n), LAB_OK);
    cr_expect(!ok, "a regressed fix and an XPASS must fail the replay");
    free(recs);
    cJSON *s = read_json("summary.json");
    cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(s, "ok")));
    cJSON *vars = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(s, "incidents"), 0), "variants");
    for (int i = 0; i < 3; ++i)
        cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetArrayItem(vars, i), "ok")), "variant %d judged ok", i);
    cr_expect(strstr(cJSON_GetObjectItem(cJSON_GetArrayItem(vars, 1), "verdict")->valuestring, "XPASS on 16") != NULL);
    cJSON_Delete(s);

    char path[256], *tap;
    size_t len;
    snprintf(path, sizeof path, "%s/results.tap", outdir);
    cr_assert_eq(lab_fs_read_all(path, &tap, &len), LAB_OK);
    cr_expect(strncmp(tap, "TAP version 13\n1..52\n", 21) == 0, "48 cases, 3 variants and the run");
    cr_expect(strstr(tap, "not ok 17 - 9002-bad bug-xpass seed=1 cpu: PASS XPASS") != NULL);
    free(tap);
}

Test(results, wilson_interval)
{
    double lo, hi;
    lab_results_wilson(50, 100, &lo, &hi);
    cr_expect(lo > 0.40 && lo < 0.41 && hi > 0.59 && hi < 0.60, "[%f, %f]", lo, hi);
    lab_results_wilson(0, 0, &lo, &hi);
    cr_expect(lo == 0 && hi == 1);
    lab_results_wilson(256, 256, &lo, &hi);
    cr_expect(hi == 1 && lo > 0.98);
}

Test(results, skip_is_neutral_and_error_is_bad)
{
    lab_case_record r = {&good, &good_variants[0], 1, LAB_BACKEND_CPU, {0}};
    r.o.outcome = LAB_OUT_SKIP;
    r.o.r.skipped = 1;
    r.o.r.skip_class = LAB_SKIP_NEEDS_GPU; /* expected where absent: neutral */
    cr_expect_eq(lab_verdict_case_ok(&r), -1);
    r.o.r.skip_class = LAB_SKIP_NEEDS_GPUS;
    cr_expect_eq(lab_verdict_case_ok(&r), -1);
    r.o.r.skip_class = LAB_SKIP_MISSING; /* not built / dependency missing: an error */
    cr_expect_eq(lab_verdict_case_ok(&r), 0);
    r.o.outcome = LAB_OUT_ERROR;
    cr_expect_eq(lab_verdict_case_ok(&r), 0);
    r.variant = &good_variants[1]; /* bug-fail: detected by its criterion's FAIL only */
    r.o.outcome = LAB_OUT_FAIL;
    cr_expect_eq(lab_verdict_case_ok(&r), 1);
    r.o.outcome = LAB_OUT_HANG; /* killed by the watchdog: inconclusive, not detection */
    cr_expect_eq(lab_verdict_case_ok(&r), 0);
    r.o.outcome = LAB_OUT_CRASH;
    cr_expect_eq(lab_verdict_case_ok(&r), 0);
    r.o.outcome = LAB_OUT_PASS;
    cr_expect_eq(lab_verdict_case_ok(&r), 0);
    r.variant = &good_variants[3]; /* bug-hang: its stated failure is a HANG */
    r.o.outcome = LAB_OUT_HANG;
    cr_expect_eq(lab_verdict_case_ok(&r), 1);
    r.o.outcome = LAB_OUT_FAIL;
    cr_expect_eq(lab_verdict_case_ok(&r), 0);
}

/* Plots come from results.jsonl: a data file per plotted metric with one column per variant, NaN where
 * a case has no value (crash, hang), and a PNG per data file where gnuplot is installed. */
Test(plot, data_and_png_from_results, .init = mkout, .fini = rmout)
{
    int ok;
    lab_case_record *recs;
    size_t n;
    cr_assert_eq(replay(&good, 4, &ok, &recs, &n), LAB_OK);
    free(recs);
    /* The registry of the test binary does not hold 9001-good: plots skip incidents they cannot look
     * up, so this checks the data path through a registered one instead. */
    int npng = -1;
    lab_status st = lab_plot_results(outdir, ".", stderr, &npng);
    cr_expect(st == LAB_OK || st == LAB_ERR_UNSUPPORTED, "%s", lab_err_msg());
    cr_expect_eq(npng, 0, "no registered incident in these results, so no plot");

    /* Real results of the registered incident 0004, written by hand: two seeds, fix and bug. */
    char path[256];
    snprintf(path, sizeof path, "%s/results.jsonl", outdir);
    const char *lines =
        "{\"incident\":\"0004-pow-grad-nan\",\"variant\":\"fix\",\"seed\":1,\"metrics\":{\"nonfinite_frac\":0,\"max_rel_err_rms\":3e-7}}\n"
        "{\"incident\":\"0004-pow-grad-nan\",\"variant\":\"bug-exp-log\",\"seed\":1,\"metrics\":{\"nonfinite_frac\":0.5,\"max_rel_err_rms\":null}}\n"
        "{\"incident\":\"0004-pow-grad-nan\",\"variant\":\"fix\",\"seed\":2,\"metrics\":{\"nonfinite_frac\":0,\"max_rel_err_rms\":2e-7}}\n";
    cr_assert_eq(lab_fs_write_atomic(path, lines, strlen(lines)), LAB_OK);
    st = lab_plot_results(outdir, ".", stderr, &npng);
    char *dat;
    size_t len;
    /* The drift metric's distribution: both variants named with their counts, the bug's null (non-finite)
     * value counted in the NaN band. */
    snprintf(path, sizeof path, "%s/plots/0004-pow-grad-nan-max_rel_err_rms.par", outdir);
    cr_assert_eq(lab_fs_read_all(path, &dat, &len), LAB_OK, "%s", lab_err_msg());
    cr_expect(strstr(dat, "stitle[1] = \"fix (fix, cpu): 2 seeds\"") != NULL, "%s", dat);
    cr_expect(strstr(dat, "stitle[2] = \"bug-exp-log (bug, cpu): 1 seed, 1 NaN\"") != NULL, "%s", dat);
    free(dat);
    if (system("command -v gnuplot >/dev/null 2>&1") == 0) {
        cr_expect_eq(st, LAB_OK, "%s", lab_err_msg());
        cr_expect_eq(npng, 4, "separating metric, two error metrics, margin");
        snprintf(path, sizeof path, "%s/plots/0004-pow-grad-nan.png", outdir);
        cr_expect(lab_fs_exists(path));
    } else {
        cr_expect_eq(st, LAB_ERR_UNSUPPORTED);
    }

    /* A line that is not a case record is named with its line number. */
    snprintf(path, sizeof path, "%s/results.jsonl", outdir);
    cr_assert_eq(lab_fs_write_atomic(path, "{\"incident\":1}\n", 15), LAB_OK);
    cr_expect_eq(lab_plot_results(outdir, ".", stderr, &npng), LAB_ERR_FORMAT);
    cr_expect(strstr(lab_err_msg(), "results.jsonl:1: no string 'incident'") != NULL, "%s", lab_err_msg());
}

/* Incidents' own figures: figures() gets the incident's cases back from results.jsonl (metrics included)
 * and runs in its own process, so one that crashes is reported and the others are still drawn. */
static lab_status fig_ok(const lab_figure_ctx *fx)
{
    char dat[512], png[512];
    snprintf(dat, sizeof dat, "%s/%s-scatter.dat", fx->plots_dir, fx->incident->id);
    snprintf(png, sizeof png, "%s/%s-scatter.png", fx->plots_dir, fx->incident->id);
    const char *series[] = {"y"};
    FILE *f = lab_gnuplot_dat_open(dat, "x", series, 1);
    if (!f) return LAB_ERR_IO;
    for (size_t i = 0; i < fx->n_cases; ++i)
        fprintf(f, "%g %g\n", lab_result_get(&fx->cases[i].r, "x"), lab_result_get(&fx->cases[i].r, "y"));
    lab_status st = lab_gnuplot_dat_close(f, dat);
    if (st != LAB_OK) return st;
    lab_gnuplot_spec spec = {dat, png, "x against y", "x", "y", 0, 1, 1};
    return lab_gnuplot_xy(".", &spec);
}
static lab_status fig_crash(const lab_figure_ctx *fx)
{
    raise(SIGSEGV);
    return LAB_OK;
}
static const lab_variant fig_variants[] = {{.name = "fix", .role = LAB_ROLE_FIX, .what = "holds"}};
static const lab_incident fig_good = {.id = "9003-figures", .title = "figures",
                                      .variants = fig_variants, .n_variants = 1, .run_cpu = run_pass, .plots.figures = fig_ok};
static const lab_incident fig_bad = {.id = "9004-figures-crash", .title = "figures",
                                     .variants = fig_variants, .n_variants = 1, .run_cpu = run_pass, .plots.figures = fig_crash};
LAB_INCIDENT_REGISTER(fig_good);
LAB_INCIDENT_REGISTER(fig_bad);

Test(plot, incident_figures_isolated, .init = mkout, .fini = rmout)
{
    char path[256];
    snprintf(path, sizeof path, "%s/results.jsonl", outdir);
    const char *lines =
        "{\"incident\":\"9003-figures\",\"variant\":\"fix\",\"seed\":1,\"outcome\":\"PASS\",\"metrics\":{\"x\":1,\"y\":10}}\n"
        "{\"incident\":\"9003-figures\",\"variant\":\"fix\",\"seed\":2,\"outcome\":\"PASS\",\"metrics\":{\"x\":2,\"y\":null}}\n"
        "{\"incident\":\"9004-figures-crash\",\"variant\":\"fix\",\"seed\":1,\"outcome\":\"PASS\",\"metrics\":{}}\n";
    cr_assert_eq(lab_fs_write_atomic(path, lines, strlen(lines)), LAB_OK);
    char *log = NULL;
    size_t loglen = 0;
    FILE *report = open_memstream(&log, &loglen);
    int npng = -1;
    lab_status st = lab_plot_results(outdir, ".", report, &npng);
    fclose(report);
    char *dat;
    size_t len;
    snprintf(path, sizeof path, "%s/plots/9003-figures-scatter.dat", outdir);
    cr_assert_eq(lab_fs_read_all(path, &dat, &len), LAB_OK, "%s", lab_err_msg());
    cr_expect_str_eq(dat, "x y\n1 10\n2 nan\n");
    free(dat);
    cr_expect(strstr(log, "9004-figures-crash figures: CRASH") != NULL, "%s", log);
    if (lab_gnuplot_available()) {
        cr_expect_eq(st, LAB_OK, "%s", lab_err_msg());
        cr_expect_eq(npng, 1);
    }
    free(log);
}

/* Case groups: every variant of a seed runs in one worker process, after one setup of the seed's state; a
 * memory-bug variant (one a sanitizer flags) runs last in its group, whatever its declared order, and its
 * worker runs nothing after it. */
static int setups_here; /* setups made in this process */
static lab_status setup_count(const lab_case *c, void **group)
{
    setups_here++;
    *group = &setups_here;
    return LAB_OK;
}
static void teardown_none(void *group) { (void)group; }
static lab_status run_pid(const lab_case *c, lab_case_result *r)
{
    lab_result_metric(r, "pid", (double)getpid());
    lab_result_metric(r, "setups", (double)setups_here);
    lab_result_metric(r, "has_group", c->group == &setups_here);
    lab_result_verdict(r, c->variant->role == LAB_ROLE_FIX, "pid recorded");
    return LAB_OK;
}
static const lab_variant batch_variants[] = {
    {.name = "bug-oob", .role = LAB_ROLE_BUG, .what = "memory bug: its worker runs no case after it",
     .sanitizer = "memcheck"},
    {.name = "fix", .role = LAB_ROLE_FIX, .what = "shares the seed's group"},
    {.name = "fix-2", .role = LAB_ROLE_FIX, .what = "shares the seed's group"},
};
static const lab_incident batch_inc = {.id = "9005-batch", .title = "batches",
                                       .variants = batch_variants, .n_variants = 3, .setup = setup_count,
                                       .teardown = teardown_none, .run_cpu = run_pid, .plots.metric = "pid"};

Test(replay, seed_groups_share_a_worker_and_memory_bugs_retire_it, .init = mkout, .fini = rmout)
{
    const lab_incident *incs[] = {&batch_inc};
    uint64_t seeds[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    lab_replay_opts o = {
        .what = {.incidents = incs, .n_incidents = 1, .seeds = seeds, .n_seeds = 8, .backend = LAB_BACKEND_CPU},
        .how = {.jobs = 2, .lab_bin = "build/lab", .root = "."}};
    FILE *devnull = fopen("/dev/null", "w");
    lab_verdict v;
    lab_case_record *recs;
    size_t n;
    cr_assert_eq(lab_replay_run(&o, devnull, &v, &recs, &n), LAB_OK);
    fclose(devnull);
    cr_assert_eq(n, 24);
    cr_expect(v.ok);
    for (size_t i = 0; i < n; ++i) {
        cr_expect_eq(lab_result_get(&recs[i].o.r, "setups"), 1.0, "%s seed %llu: one setup per group",
                     recs[i].variant->name, (unsigned long long)recs[i].seed);
        cr_expect_eq(lab_result_get(&recs[i].o.r, "has_group"), 1.0);
        for (size_t j = i + 1; j < n; ++j) {
            int same_pid = lab_result_get(&recs[i].o.r, "pid") == lab_result_get(&recs[j].o.r, "pid");
            int same_seed = recs[i].seed == recs[j].seed;
            cr_expect_eq(same_pid, same_seed, "%s/%llu and %s/%llu: one worker per seed group",
                         recs[i].variant->name, (unsigned long long)recs[i].seed, recs[j].variant->name,
                         (unsigned long long)recs[j].seed);
        }
    }
    /* Records keep the canonical order (incident, variant, seed), whatever order they ran in. */
    for (size_t i = 0; i < n; ++i) {
        cr_expect_eq(recs[i].variant, &batch_variants[i / 8]);
        cr_expect_eq(recs[i].seed, seeds[i % 8]);
    }
    free(recs);
}

/* A memory-bug case that vouches for its strays (memory_contained) keeps its worker; one that does not,
 * or that saw a device error, retires it. */
static lab_status run_contained(const lab_case *c, lab_case_result *r)
{
    r->memory_contained = c->variant->param & 1;
    if (c->variant->param & 2) lab_result_metric(r, "device_error", 1.0);
    lab_result_verdict(r, 0, "detected");
    return LAB_OK;
}
Test(replay, contained_memory_bugs_keep_their_worker)
{
    static const lab_variant vs[] = {
        {.name = "bug-contained", .role = LAB_ROLE_BUG, .what = "vouches", .param = 1, .sanitizer = "memcheck"},
        {.name = "bug-loose", .role = LAB_ROLE_BUG, .what = "does not", .param = 0, .sanitizer = "memcheck"},
        {.name = "bug-device", .role = LAB_ROLE_BUG, .what = "vouches, device error", .param = 3, .sanitizer = "memcheck"},
        {.name = "bug-plain", .role = LAB_ROLE_BUG, .what = "no memory bug", .param = 0},
    };
    static const lab_incident inc = {.id = "9006-contained", .title = "contained",
                                     .variants = vs, .n_variants = 4, .run_cpu = run_contained};
    const int want_retire[] = {0, 1, 1, 0};
    for (int i = 0; i < 4; ++i) {
        lab_case c;
        char gdir[4096];
        lab_case_init(&c, &inc, &vs[i], 1, LAB_BACKEND_CPU, ".", gdir, sizeof gdir);
        lab_case_result r;
        cr_assert_eq(lab_replay_case(&c, &r), LAB_OK);
        cr_expect_eq(r.retire_worker, want_retire[i], "%s", vs[i].name);
    }
}

/* Issue 12: a worker that runs many cases gives each the result it gets in a process of its own. The
 * memory-bug incidents (0001: strays between guard zones; 0003: stale layout memory) over 3 seeds, every
 * variant, in seed groups with the memory bugs last: all in one process, then each case alone; outcome,
 * verdict, detail and every metric equal, bit for bit. On a GPU the CUDA backend (one context for all the
 * cases, and no memory bug may retire it), else the CPU. */
#define BATCH_MAX 64
typedef struct {
    lab_case c[BATCH_MAX];
    char gdir[BATCH_MAX][4096];
    size_t n;
} batch_cases;
static lab_status batch_case_job(void *vctx, size_t j, lab_case_result *r)
{
    batch_cases *b = vctx;
    return lab_replay_case(&b->c[j], r);
}
static int metric_bits_equal(double a, double b) { return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0; }

Test(replay, batched_cases_equal_one_process_each, .timeout = 900)
{
    lab_backend backend = LAB_BACKEND_CPU;
#ifdef LAB_HAVE_CUDA
    char why[240];
    if (lab_cuda_ready(why, sizeof why) == LAB_OK) backend = LAB_BACKEND_CUDA;
    else cr_log_info("no usable GPU (%s): the CPU backend only", why);
#endif
    static batch_cases b;
    b.n = 0;
    const char *ids[] = {"0001-crf-oob-atomics", "0003-nvfp4-sf-layout"};
    for (size_t i = 0; i < 2; ++i) {
        const lab_incident *inc = lab_incident_find(ids[i]);
        cr_assert_not_null(inc, "%s is registered", ids[i]);
        for (uint64_t seed = 1; seed <= 3; ++seed)
            for (int memory_bug = 0; memory_bug < 2; ++memory_bug)
                for (int v = 0; v < inc->n_variants; ++v) {
                    if ((inc->variants[v].sanitizer != NULL) != memory_bug) continue;
                    cr_assert_lt(b.n, BATCH_MAX);
                    lab_case_init(&b.c[b.n], inc, &inc->variants[v], seed, backend, ".", b.gdir[b.n], sizeof b.gdir[0]);
                    b.n++;
                }
    }
    lab_job_outcome *many = calloc(b.n, sizeof *many), *one = calloc(b.n, sizeof *one);
    cr_assert(many && one);
    cr_assert_eq(lab_isolate_run_batched(b.n, batch_case_job, &b, 1, b.n, 300, NULL, many), LAB_OK, "%s", lab_err_msg());
    cr_assert_eq(lab_isolate_run_batched(b.n, batch_case_job, &b, 2, 1, 300, NULL, one), LAB_OK, "%s", lab_err_msg());
    for (size_t j = 0; j < b.n; ++j) {
        const lab_case *c = &b.c[j];
        const lab_case_result *x = &many[j].r, *y = &one[j].r;
        char what[160];
        snprintf(what, sizeof what, "%s %s seed %llu (%s)", c->incident->id, c->variant->name,
                 (unsigned long long)c->seed, lab_backend_name(backend));
        cr_expect_eq(many[j].outcome, one[j].outcome, "%s: %s batched, %s alone", what,
                     lab_outcome_name(many[j].outcome), lab_outcome_name(one[j].outcome));
        cr_expect_eq(x->passed, y->passed, "%s", what);
        cr_expect_str_eq(x->detail, y->detail, "%s", what);
        cr_expect_eq(x->retire_worker, 0, "%s retired its worker (%s)", what, x->detail);
        cr_expect_eq(x->n_metrics, y->n_metrics, "%s", what);
        for (int m = 0; m < x->n_metrics && m < y->n_metrics; ++m) {
            cr_expect_str_eq(x->metrics[m].name, y->metrics[m].name, "%s", what);
            cr_expect(metric_bits_equal(x->metrics[m].value, y->metrics[m].value), "%s: %s %.17g batched, %.17g alone",
                      what, x->metrics[m].name, x->metrics[m].value, y->metrics[m].value);
        }
    }
    free(many);
    free(one);
}

/* Single-GPU CUDA incidents run as one pool: a worker process runs its slice of every incident (one CUDA context).
 * Two synthetic incidents, 6 seeds each, 2 workers, one GPU listed: on a GPU at most 2 worker processes (long-lived,
 * one per slot) ran all 12 cases, and each of them ran cases of both incidents; without one every case is SKIP
 * needs-gpu through the same pool (each exactly once); in a build without CUDA, SKIP missing saying so. */
static const lab_variant pool_variants[] = {{.name = "fix", .role = LAB_ROLE_FIX, .what = "records its pid"}};
static const lab_incident pool_a = {.id = "9007-pool-a", .title = "pool a",
                                    .variants = pool_variants, .n_variants = 1, .run_cpu = run_pid,
                                    .run_cuda = run_pid, .plots.metric = "pid"};
static const lab_incident pool_b = {.id = "9008-pool-b", .title = "pool b",
                                    .variants = pool_variants, .n_variants = 1, .run_cpu = run_pid,
                                    .run_cuda = run_pid, .plots.metric = "pid"};
Test(replay, single_gpu_incidents_share_one_pool, .init = mkout, .fini = rmout)
{
    setenv("CUDA_VISIBLE_DEVICES", "0", 1);
    const lab_incident *incs[] = {&pool_a, &pool_b};
    uint64_t seeds[6] = {1, 2, 3, 4, 5, 6};
    lab_replay_opts o = {
        .what = {.incidents = incs, .n_incidents = 2, .seeds = seeds, .n_seeds = 6, .backend = LAB_BACKEND_CUDA},
        .how = {.jobs = 2, .lab_bin = "build/lab", .root = "."}};
    FILE *devnull = fopen("/dev/null", "w");
    lab_verdict v;
    lab_case_record *recs;
    size_t n;
    cr_assert_eq(lab_replay_run(&o, devnull, &v, &recs, &n), LAB_OK);
    fclose(devnull);
    cr_assert_eq(n, 12);
    double pids[12];
    int both[12];
    size_t distinct = 0, ran = 0;
    for (size_t i = 0; i < n; ++i) {
        cr_expect_eq(recs[i].incident, i < 6 ? &pool_a : &pool_b, "canonical order");
        cr_expect_eq(recs[i].seed, seeds[i % 6]);
        cr_expect_eq(recs[i].o.not_run, 0);
        if (recs[i].o.outcome == LAB_OUT_SKIP) {
#ifdef LAB_HAVE_CUDA
            cr_expect_eq(recs[i].o.r.skip_class, LAB_SKIP_NEEDS_GPU, "%s", recs[i].o.r.detail);
#else
            /* a build without CUDA runs no CUDA case: SKIP missing (NOT OK: asked for, not built), saying so */
            cr_expect_eq(recs[i].o.r.skip_class, LAB_SKIP_MISSING, "%s", recs[i].o.r.detail);
            cr_expect(strstr(recs[i].o.r.detail, "this build has no CUDA") != NULL, "%s", recs[i].o.r.detail);
#endif
            continue;
        }
        cr_expect_eq(recs[i].o.outcome, LAB_OUT_PASS, "%s", recs[i].o.r.detail);
        double p = lab_result_get(&recs[i].o.r, "pid");
        size_t k = 0;
        while (k < distinct && pids[k] != p) ++k;
        if (k == distinct) pids[distinct] = p, both[distinct++] = 0;
        both[k] |= recs[i].incident == &pool_a ? 1 : 2;
        ran++;
    }
    /* the pool's workers are long-lived: one process per slot ran every run it took (lab_isolate_run_pool) */
#ifndef LAB_HAVE_CUDA
    cr_expect_eq(ran, 0, "a build without CUDA ran a CUDA case");
#endif
    if (ran) cr_expect_leq(distinct, 2, "%zu worker processes for 12 cases of two incidents at -j 2", distinct);
    for (size_t k = 0; k < distinct; ++k) cr_expect_eq(both[k], 3, "process %g ran cases of one incident only", pids[k]);
    free(recs);
}

/* Cases that need more GPUs than the host has SKIP needs-gpus in the runner: no worker process runs them (run_pid would
 * record one), and the SKIP names the count. */
static const lab_variant two_gpu_variants[] = {{.name = "fix", .role = LAB_ROLE_FIX, .what = "records its pid", .gpus = 2}};
static const lab_incident two_gpus = {.id = "9009-two-gpus", .title = "two gpus",
                                      .variants = two_gpu_variants, .n_variants = 1, .run_cpu = run_pid,
                                      .run_cuda = run_pid, .plots.metric = "pid"};
Test(replay, cases_needing_more_gpus_skip_without_a_worker, .init = mkout, .fini = rmout)
{
    setenv("CUDA_VISIBLE_DEVICES", "0", 1);
    const lab_incident *incs[] = {&two_gpus};
    uint64_t seeds[4] = {1, 2, 3, 4};
    lab_replay_opts o = {
        .what = {.incidents = incs, .n_incidents = 1, .seeds = seeds, .n_seeds = 4, .backend = LAB_BACKEND_CUDA},
        .how = {.jobs = 2, .lab_bin = "build/lab", .root = "."}};
    FILE *devnull = fopen("/dev/null", "w");
    lab_verdict v;
    lab_case_record *recs;
    size_t n;
    cr_assert_eq(lab_replay_run(&o, devnull, &v, &recs, &n), LAB_OK);
    fclose(devnull);
    cr_assert_eq(n, 4);
    for (size_t i = 0; i < n; ++i) {
        cr_expect_eq(recs[i].o.outcome, LAB_OUT_SKIP, "seed %llu: %s", (unsigned long long)recs[i].seed, lab_outcome_name(recs[i].o.outcome));
        cr_expect_eq(recs[i].o.r.skip_class, LAB_SKIP_NEEDS_GPUS, "%s", recs[i].o.r.detail);
        cr_expect(strstr(recs[i].o.r.detail, "need 2 GPUs") != NULL, "%s", recs[i].o.r.detail);
        cr_expect(isnan(lab_result_get(&recs[i].o.r, "pid")), "seed %llu ran its case", (unsigned long long)recs[i].seed);
        cr_expect_eq(recs[i].o.worker, -1, "seed %llu went to worker %d", (unsigned long long)recs[i].seed, recs[i].o.worker);
    }
    free(recs);
}

/* ---- the health rule and the rerun of cases a device error ended (stand-ins for the GPU probe and for a neighbour's
 * fault; no GPU needed) ---- */

static lab_status probe_gone(char *why, size_t len)
{
    snprintf(why, len, "no CUDA device: cudaGetDeviceCount: MPS client failed to connect to the MPS control daemon or "
                       "the MPS server (stand-in)");
    return lab_err_set(LAB_ERR_UNSUPPORTED, "%s", why);
}
static lab_status probe_ok(char *why, size_t len)
{
    if (len) why[0] = 0;
    return LAB_OK;
}

/* Even seeds meet a neighbour's fault on their first run only (a marker file remembers it); seed 3 faults every time
 * (the culprit). */
static lab_status run_collateral(const lab_case *c, lab_case_result *r)
{
    char mark[128];
    snprintf(mark, sizeof mark, "%s/ran-%llu", outdir, (unsigned long long)c->seed);
    int first = !lab_fs_exists(mark);
    if (first) {
        FILE *f = fopen(mark, "w");
        if (f) fclose(f);
    }
    if (c->seed == 3 || (first && c->seed % 2 == 0))
        return lab_err_set(LAB_ERR_DEVICE, "CUDA error at stand-in.cu:1: an illegal memory access was encountered");
    lab_result_verdict(r, 1, "holds");
    return LAB_OK;
}

static const lab_variant dev_variants[] = {{.name = "fix", .role = LAB_ROLE_FIX, .what = "holds"}};
static const lab_incident dev_gone = {.id = "9011-device-gone", .title = "device gone",
                                      .variants = dev_variants, .n_variants = 1, .run_cpu = run_pass,
                                      .run_cuda = run_pass, .plots.metric = "err"};
static const lab_incident dev_fault = {.id = "9012-neighbour-fault", .title = "neighbour's fault",
                                       .variants = dev_variants, .n_variants = 1, .run_cpu = run_collateral,
                                       .run_cuda = run_collateral, .plots.metric = "err"};

static lab_status device_replay(const lab_incident *inc, int device_ok, lab_status (*probe)(char *, size_t),
                                lab_verdict *v, lab_case_record **recs, size_t *n)
{
    setenv("CUDA_VISIBLE_DEVICES", "0", 1);
    static const lab_incident *incs[1];
    static uint64_t seeds[6] = {1, 2, 3, 4, 5, 6};
    incs[0] = inc;
    lab_replay_opts o = {
        .what = {.incidents = incs, .n_incidents = 1, .seeds = seeds, .n_seeds = 6, .backend = LAB_BACKEND_CUDA},
        .how = {.jobs = 2, .out_dir = outdir, .lab_bin = "build/lab", .root = ".", .device_ok = device_ok,
                .device_probe = probe}};
    FILE *devnull = fopen("/dev/null", "w");
    lab_status st = lab_replay_run(&o, devnull, v, recs, n);
    fclose(devnull);
    return st;
}

/* Without a usable device at the replay's start, a CUDA case that finds none is a neutral SKIP; once the replay's probe
 * used the device, the same is ERROR naming the cause (device lost), and the run is NOT OK. */
Test(replay, a_device_lost_mid_replay_is_error_not_skip, .init = mkout, .fini = rmout)
{
    lab_verdict v;
    lab_case_record *recs;
    size_t n;
    cr_assert_eq(device_replay(&dev_gone, 0, probe_gone, &v, &recs, &n), LAB_OK, "%s", lab_err_msg());
    for (size_t i = 0; i < n; ++i) {
        cr_expect_eq(recs[i].o.outcome, LAB_OUT_SKIP, "no device from the start: SKIP (%s)", recs[i].o.error);
        cr_expect_eq(recs[i].o.r.skip_class, LAB_SKIP_NEEDS_GPU);
    }
    cr_expect(v.ok, "a replay without a GPU is not a failure");
    free(recs);
    cr_assert_eq(device_replay(&dev_gone, 1, probe_gone, &v, &recs, &n), LAB_OK, "%s", lab_err_msg());
    cr_assert_eq(n, 6);
    for (size_t i = 0; i < n; ++i) {
        cr_expect_eq(recs[i].o.outcome, LAB_OUT_ERROR, "seed %llu: %s", (unsigned long long)recs[i].seed,
                     lab_outcome_name(recs[i].o.outcome));
        cr_expect(strstr(recs[i].o.error, "device lost") && strstr(recs[i].o.error, "MPS"), "%s", recs[i].o.error);
        cr_expect(!strncmp(recs[i].first_run, "ERROR: ", 7) && strstr(recs[i].first_run, "device lost") != NULL, "run again alone, both runs kept: '%s'",
                  recs[i].first_run);
    }
    cr_expect(!v.ok, "fixes that lost their device must not pass");
    free(recs);
}

/* Cases a neighbour's device fault ended run again alone after the pool: the rerun's outcome is theirs, the first run is
 * kept beside it (in results.jsonl too); the culprit, which faults alone too, stays ERROR. Without a usable device at
 * the start nothing is rerun. */
Test(replay, cases_a_neighbours_fault_ended_run_again_alone, .init = mkout, .fini = rmout)
{
    lab_verdict v;
    lab_case_record *recs;
    size_t n;
    cr_assert_eq(device_replay(&dev_fault, 1, probe_ok, &v, &recs, &n), LAB_OK, "%s", lab_err_msg());
    cr_assert_eq(n, 6);
    for (size_t i = 0; i < n; ++i) {
        uint64_t s = recs[i].seed;
        if (s == 3) {
            cr_expect_eq(recs[i].o.outcome, LAB_OUT_ERROR, "the culprit faults alone too");
            cr_expect(strstr(recs[i].first_run, "illegal memory access") != NULL, "'%s'", recs[i].first_run);
        } else {
            cr_expect_eq(recs[i].o.outcome, LAB_OUT_PASS, "seed %llu: %s %s", (unsigned long long)s,
                         lab_outcome_name(recs[i].o.outcome), recs[i].o.error);
            if (s % 2 == 0) cr_expect(!strncmp(recs[i].first_run, "ERROR: ", 7) && strstr(recs[i].first_run, "illegal memory") != NULL, "'%s'", recs[i].first_run);
            else cr_expect_str_empty(recs[i].first_run, "seed %llu ran once", (unsigned long long)s);
        }
    }
    cr_expect(!v.ok, "the culprit's ERROR still fails the run");
    free(recs);
    char path[256], *text;
    size_t len;
    snprintf(path, sizeof path, "%s/results.jsonl", outdir);
    cr_assert_eq(lab_fs_read_all(path, &text, &len), LAB_OK);
    cr_expect(strstr(text, "\"first_run\":\"ERROR: ") != NULL && strstr(text, "illegal memory access") != NULL,
              "results.jsonl keeps the first run");
    free(text);
    /* a fresh set of markers: without a usable device at the start, the even seeds' faults stand */
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -f %s/ran-*", outdir);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(device_replay(&dev_fault, 0, probe_ok, &v, &recs, &n), LAB_OK, "%s", lab_err_msg());
    for (size_t i = 0; i < n; ++i)
        if (recs[i].seed % 2 == 0) cr_expect_eq(recs[i].o.outcome, LAB_OUT_ERROR, "no rerun without device_ok");
    free(recs);
}

/* ---- a fed execution (lab_replay_execute_fed): the cases a feed deals out as the run goes, as an `--mpi` rank runs
 * them; the feed here is the dealer of lab_deal.h in this process ---- */

#include "lab_deal.h"

typedef struct {
    lab_deal *d;
    const lab_replay_groups *g;
    int *owner;          /* per group: the rank it went to (-1: none) */
    size_t calls, chunks, deals, mixed; /* answers given, their chunks, answers of several incidents */
    int rival;           /* a second rank takes a deal before each of ours */
} fed_feed;

static int fed_next(void *ctx, const unsigned char *accept, lab_replay_span *spans)
{
    fed_feed *f = ctx;
    if (f->calls++ % 3 == 1) return 0; /* not yet, as an answer still on its way */
    lab_deal_chunk c[16];
    size_t k = f->rival ? lab_deal_next(f->d, 1, accept, c, 16) : 0;
    for (size_t j = 0; j < k; ++j)
        for (size_t q = c[j].first; q < c[j].end; ++q) f->owner[q] = 1;
    if (!(k = lab_deal_next(f->d, 0, accept, c, 16))) return -1;
    for (size_t j = 0; j < k; ++j) {
        for (size_t q = c[j].first; q < c[j].end; ++q) f->owner[q] = 0;
        spans[j] = (lab_replay_span){c[j].first, c[j].end};
    }
    f->chunks += k;
    f->deals++;
    f->mixed += k > 1;
    return (int)k;
}

static void fed_count(void *ctx, size_t index, const lab_case_record *rec)
{
    (void)rec;
    ((int *)ctx)[index]++;
}

/* Runs the cases of opts fed from a dealer of two ranks (rival: the other rank takes every other chunk) and checks that
 * exactly the cases of this rank's groups ran, each reported once, with the outcome a plain execution gives. Returns
 * the records (the caller frees them and the groups). */
static lab_case_record *fed_run(const lab_replay_opts *o, int rival, lab_replay_groups *g, int **owner_out, size_t *n_out)
{
    lab_case_record *recs, *plain;
    size_t n, np;
    cr_assert_eq(lab_replay_cases(o, &recs, &n), LAB_OK);
    cr_assert_eq(lab_replay_cases(o, &plain, &np), LAB_OK);
    cr_assert_eq(lab_replay_groups_make(recs, n, g), LAB_OK);
    cr_assert_eq(lab_replay_execute_records(o, plain, np, NULL, NULL), LAB_OK, "%s", lab_err_msg());
    lab_deal_group *dg = malloc(g->ng * sizeof *dg);
    int *owner = malloc(g->ng * sizeof *owner), *told = calloc(n, sizeof *told);
    for (size_t k = 0; k < g->ng; ++k) dg[k] = (lab_deal_group){g->part[k], g->cost[k]}, owner[k] = -1;
    fed_feed f = {.g = g, .owner = owner, .rival = rival};
    cr_assert_eq(lab_deal_create(dg, g->ng, 2, &f.d), LAB_OK);
    lab_deal_weight(f.d, 0, o->how.jobs);
    lab_deal_weight(f.d, 1, o->how.jobs);
    cr_assert_eq(lab_replay_execute_fed(o, recs, n, g, fed_next, &f, fed_count, told), LAB_OK, "%s", lab_err_msg());
    cr_expect_eq(lab_deal_left(f.d), 0u, "the lanes asked until nothing was left");
    cr_expect_gt(f.chunks, 2u, "dealt in %zu chunks", f.chunks);
    cr_expect_gt(f.mixed, 0u, "%zu of %zu answers held chunks of several incidents", f.mixed, f.deals);
    for (size_t k = 0; k < g->ng; ++k)
        for (size_t p = g->start[k]; p < g->start[k + 1]; ++p) {
            size_t i = g->order[p];
            cr_expect_eq(told[i], owner[k] == 0, "case %zu (group %zu of rank %d) reported %d times", i, k, owner[k], told[i]);
            if (owner[k] != 0) continue;
            cr_expect_eq(recs[i].o.outcome, plain[i].o.outcome, "case %zu: fed %s, plain %s", i,
                         lab_outcome_name(recs[i].o.outcome), lab_outcome_name(plain[i].o.outcome));
            cr_expect_str_eq(recs[i].o.r.detail, plain[i].o.r.detail, "case %zu", i);
        }
    lab_deal_free(f.d);
    free(dg);
    free(told);
    free(plain);
    *owner_out = owner;
    *n_out = n;
    return recs;
}

/* On the CPU: one lane, a child per seed group (its variants together, the memory bug retiring it), whether this rank
 * gets every chunk or shares them with another. */
Test(replay, a_fed_execution_runs_the_groups_it_is_dealt, .init = mkout, .fini = rmout)
{
    const lab_incident *incs[] = {&batch_inc, &pool_a};
    uint64_t seeds[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    lab_replay_opts o = {
        .what = {.incidents = incs, .n_incidents = 2, .seeds = seeds, .n_seeds = 8, .backend = LAB_BACKEND_CPU},
        .how = {.jobs = 2, .lab_bin = "build/lab", .root = "."}};
    for (int rival = 0; rival < 2; ++rival) {
        lab_replay_groups g;
        int *owner;
        size_t n;
        lab_case_record *recs = fed_run(&o, rival, &g, &owner, &n);
        cr_expect_eq(g.ng, 16u, "8 seeds of 2 incidents");
        size_t mine = 0;
        for (size_t k = 0; k < g.ng; ++k) {
            mine += owner[k] == 0;
            if (owner[k] != 0 || g.part[k] != 0) continue;
            double pid = lab_result_get(&recs[g.order[g.start[k]]].o.r, "pid");
            for (size_t p = g.start[k]; p < g.start[k + 1]; ++p)
                cr_expect_eq(lab_result_get(&recs[g.order[p]].o.r, "pid"), pid, "group %zu: one worker", k);
        }
        if (rival) cr_expect(mine > 0 && mine < g.ng, "this rank ran %zu of %zu groups beside another", mine, g.ng);
        else cr_expect_eq(mine, g.ng);
        free(owner);
        free(recs);
        lab_replay_groups_free(&g);
    }
}

/* On CUDA (four GPUs listed, a stand-in probe: no GPU needed): the single-GPU incidents run as one pool whose workers
 * last across the chunks (at most -j processes for all of them), the cases that need 2 GPUs in a lane of their own, and
 * those that need more GPUs than the host has SKIP in the runner; the groups given as a chunk of another lane's incident
 * are refused. */
static const lab_variant eight_gpu_variants[] = {{.name = "fix", .role = LAB_ROLE_FIX, .what = "records its pid", .gpus = 8}};
static const lab_incident eight_gpus = {.id = "9013-eight-gpus", .title = "eight gpus",
                                        .variants = eight_gpu_variants, .n_variants = 1, .run_cpu = run_pid,
                                        .run_cuda = run_pid, .plots.metric = "pid"};
static const lab_variant sixteen_gpu_variants[] = {{.name = "fix", .role = LAB_ROLE_FIX, .what = "records its pid", .gpus = 16}};
static const lab_incident sixteen_gpus = {.id = "9014-sixteen-gpus", .title = "sixteen gpus",
                                          .variants = sixteen_gpu_variants, .n_variants = 1, .run_cpu = run_pid,
                                          .run_cuda = run_pid, .plots.metric = "pid"};
static int fed_wrong_lane(void *ctx, const unsigned char *accept, lab_replay_span *spans)
{
    const lab_replay_groups *g = ctx;
    for (size_t k = 0; k < g->ng; ++k)
        if (!accept[g->part[k]]) {
            spans[0] = (lab_replay_span){k, k + 1};
            return 1;
        }
    return -1;
}
/* An answer naming one incident twice (its first group, then its second). */
static int fed_part_twice(void *ctx, const unsigned char *accept, lab_replay_span *spans)
{
    const lab_replay_groups *g = ctx;
    for (size_t k = 0; k + 1 < g->ng; ++k)
        if (accept[g->part[k]] && g->part[k + 1] == g->part[k]) {
            spans[0] = (lab_replay_span){k, k + 1};
            spans[1] = (lab_replay_span){k + 1, k + 2};
            return 2;
        }
    return -1;
}
Test(replay, a_fed_execution_runs_its_lanes_as_a_plain_one, .init = mkout, .fini = rmout)
{
    setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3", 1);
    const lab_incident *incs[] = {&pool_a, &two_gpus, &pool_b, &eight_gpus, &sixteen_gpus};
    uint64_t seeds[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    lab_replay_opts o = {
        .what = {.incidents = incs, .n_incidents = 5, .seeds = seeds, .n_seeds = 10, .backend = LAB_BACKEND_CUDA},
        .how = {.jobs = 2, .lab_bin = "build/lab", .root = ".", .device_probe = probe_ok}};
    lab_replay_groups g;
    int *owner;
    size_t n;
    lab_case_record *recs = fed_run(&o, 0, &g, &owner, &n);
    double pids[40];
    size_t distinct = 0;
    for (size_t i = 0; i < n; ++i) {
        const lab_incident *inc = recs[i].incident;
        if (inc == &eight_gpus || inc == &sixteen_gpus) {
            char need[32];
            snprintf(need, sizeof need, "need %d GPUs", inc->variants[0].gpus);
            cr_expect_eq(recs[i].o.r.skip_class, LAB_SKIP_NEEDS_GPUS, "%s", recs[i].o.r.detail);
            cr_expect(strstr(recs[i].o.r.detail, need) != NULL, "%s: '%s' lacks '%s'", inc->id, recs[i].o.r.detail, need);
            cr_expect_eq(recs[i].o.worker, -1, "SKIP in the runner");
            continue;
        }
        cr_expect_eq(recs[i].o.outcome, LAB_OUT_PASS, "%s seed %llu: %s %s", inc->id, (unsigned long long)recs[i].seed,
                     recs[i].o.r.detail, recs[i].o.error);
        if (inc == &two_gpus) continue;
        double p = lab_result_get(&recs[i].o.r, "pid");
        size_t k = 0;
        while (k < distinct && pids[k] != p) ++k;
        if (k == distinct) pids[distinct++] = p;
    }
    cr_expect_leq(distinct, 2u, "%zu processes ran the pool's 20 cases at -j 2, across its chunks", distinct);
    free(owner);
    free(recs);
    cr_assert_eq(lab_replay_cases(&o, &recs, &n), LAB_OK);
    cr_expect_eq(lab_replay_execute_fed(&o, recs, n, &g, fed_wrong_lane, &g, NULL, NULL), LAB_ERR_ARG);
    cr_expect(strstr(lab_err_msg(), "not a span of this lane's incidents") != NULL, "%s", lab_err_msg());
    free(recs);
    cr_assert_eq(lab_replay_cases(&o, &recs, &n), LAB_OK);
    cr_expect_eq(lab_replay_execute_fed(&o, recs, n, &g, fed_part_twice, &g, NULL, NULL), LAB_ERR_ARG);
    cr_expect(strstr(lab_err_msg(), "each at most once an answer") != NULL, "%s", lab_err_msg());
    free(recs);
    lab_replay_groups_free(&g);
}
