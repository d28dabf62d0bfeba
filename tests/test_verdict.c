/* test_verdict: the exact binomial rule for stated detection rates, and the one verdict: every output of a replay (exit status, summary.json's ok, the console, JUnit, TAP) agrees, for crashing, hanging, erroring and skipping fixes, an XPASS, a bug below its rate and one with too few seeds. */
#include <cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab_cli.h"
#include "lab_command.h"
#include "lab_binom.h"
#include "lab_fs.h"
#include "lab_replay.h"
#include "lab_verdict.h"

/* ---- the binomial rule, against an independent computation ------------------------------------- */

/* P(X <= x | n, p) by the pmf recurrence in long double from the mode-free end (no lgamma): an
 * implementation independent of lab_binom's log-space sum. Exact enough for n <= 2000 when p^n and
 * (1-p)^n do not underflow long double. */
static long double ref_cdf(size_t x, size_t n, long double p)
{
    if (x >= n) return 1.0L;
    long double q = 1.0L - p, term = powl(q, (long double)n), s = 0;
    for (size_t k = 0; k <= x; ++k) {
        s += term;
        term = term * (long double)(n - k) / (long double)(k + 1) * p / q;
    }
    return s;
}

Test(binom, cdf_matches_an_independent_recurrence)
{
    const double ps[] = {0.05, 0.3, 0.5, 0.8, 0.9, 0.95, 0.99};
    const size_t ns[] = {1, 7, 16, 78, 169, 500};
    for (size_t i = 0; i < sizeof ps / sizeof *ps; ++i)
        for (size_t j = 0; j < sizeof ns / sizeof *ns; ++j)
            for (size_t x = 0; x <= ns[j]; x += 1 + ns[j] / 23) {
                double got = lab_binom_cdf(x, ns[j], ps[i]);
                long double want = ref_cdf(x, ns[j], ps[i]);
                cr_expect(fabsl((long double)got - want) <= 1e-12L + 1e-9L * want,
                          "P(X <= %zu | %zu, %g) = %.17g, independent %.17Lg", x, ns[j], ps[i], got, want);
            }
    cr_expect_eq(lab_binom_cdf(3, 3, 0.9), 1.0);
    cr_expect_eq(lab_binom_cdf(2, 3, 1.0), 0.0, "rate 1: a miss has probability 0");
    cr_expect_eq(lab_binom_cdf(0, 3, 0.0), 1.0);
}

/* The critical count is the largest x whose tail is below alpha: checked against its definition. */
Test(binom, critical_count_is_the_definition)
{
    for (size_t n = 1; n <= 120; ++n)
        for (int ri = 0; ri < 3; ++ri) {
            double r = (double[]){0.9, 0.95, 0.6}[ri];
            long c = lab_binom_critical(n, r, 0.05);
            if (c >= 0) cr_expect(ref_cdf((size_t)c, n, r) < 0.05L, "n %zu r %g: c %ld not rare", n, r, c);
            if (c + 1 < (long)n)
                cr_expect(ref_cdf((size_t)(c + 1), n, r) >= 0.05L, "n %zu r %g: c %ld not the largest", n, r, c);
        }
    cr_expect_eq(lab_binom_critical(16, 0.95, 0.05), 13, "P(X <= 13 | 16, 0.95) = 0.043, P(X <= 14) = 0.189");
    cr_expect_eq(lab_binom_critical(16, 1.0, 0.05), 15, "rate 1: any miss is rejected");
    cr_expect_eq(lab_binom_critical(1, 0.9, 0.05), -1, "0 of 1 at 0.9 has probability 0.1: not rare");
}

/* The seed counts docs/verdict.md states, found by a loop here over the independent cdf; the values were also
 * checked with 60-digit decimal arithmetic (78/65/0.80818, 169/155/0.80626, 905/890/0.80105). */
Test(binom, seeds_needed_per_stated_rate)
{
    struct { double r; size_t n; } want[] = {{0.9, 78}, {0.95, 169}, {0.99, 905}};
    for (size_t i = 0; i < 3; ++i) {
        double r = want[i].r, alt = lab_binom_doubled_misses(r);
        cr_expect_eq(lab_binom_seeds_needed(r, LAB_BINOM_ALPHA, LAB_BINOM_POWER, 1), want[i].n, "rate %g", r);
        /* At the count: power >= 0.8 by the independent cdf; one fewer: below. */
        for (size_t m = want[i].n - 1; m <= want[i].n; ++m) {
            long c = lab_binom_critical(m, r, LAB_BINOM_ALPHA);
            long double pw = c < 0 ? 0 : ref_cdf((size_t)c, m, alt);
            cr_expect((pw >= 0.8L) == (m == want[i].n), "rate %g, %zu seeds: power %.6Lf", r, m, pw);
        }
    }
    /* Power is a sawtooth: at 0.9 it is 0.808 at 78 seeds, 0.753 at 80, and 0.8 again from 83. */
    cr_expect(lab_binom_power(80, 0.9, 0.8, 0.05) < 0.8);
    cr_expect_eq(lab_binom_seeds_needed(0.9, LAB_BINOM_ALPHA, LAB_BINOM_POWER, 80), 83);
    /* A rate of 0.5 allows every miss to double (r' = 0): its test has full power once it can reject. */
    cr_expect_eq(lab_binom_doubled_misses(0.5), 0.0);
    cr_expect_eq(lab_binom_seeds_needed(0.5, 0.05, 0.8, 1), 5, "0.5^5 = 0.031 < 0.05");
}

Test(binom, every_seed_rule_needs_16_seeds_to_see_90_percent)
{
    cr_expect_eq(lab_binom_seeds_for_drop(LAB_BINOM_DROP_RATE, LAB_BINOM_POWER), 16);
    cr_expect(1 - pow(0.9, 16) >= 0.8 && 1 - pow(0.9, 15) < 0.8, "0.815 at 16, 0.794 at 15");
}

/* ---- one verdict: every output agrees ------------------------------------------------------------ */

static const lab_variant vfix[] = {{.name = "fix", .role = LAB_ROLE_FIX, .what = "holds"}};
static const lab_variant vbug[] = {{.name = "bug", .role = LAB_ROLE_BUG, .what = "detected on every seed"}};
static const lab_variant vrate[] = {{.name = "bug-rate", .role = LAB_ROLE_BUG, .what = "stated 0.9",
                                     .min_detect_rate = 0.9}};
static const lab_incident ifix = {.id = "9101-fix", .title = "t", .variants = vfix, .n_variants = 1};
static const lab_incident ibug = {.id = "9102-bug", .title = "t", .variants = vbug, .n_variants = 1};
static const lab_incident irate = {.id = "9103-rate", .title = "t", .variants = vrate, .n_variants = 1};

static char outdir[64];
static void mkout(void)
{
    snprintf(outdir, sizeof outdir, "/tmp/lab-verdict-XXXXXX");
    cr_assert(mkdtemp(outdir));
}
static void rmout(void)
{
    char path[256];
    const char *names[] = {"results.jsonl", "summary.json", "junit.xml", "results.tap"};
    for (size_t i = 0; i < 4; ++i) {
        snprintf(path, sizeof path, "%s/%s", outdir, names[i]);
        unlink(path);
    }
    rmdir(outdir);
}

/* n records of one variant: the first k with outcome `a`, the rest with `b` (a skip's class given). */
static lab_case_record *records(const lab_incident *inc, size_t n, size_t k, lab_outcome a, lab_outcome b, int skip_class)
{
    lab_case_record *r = calloc(n, sizeof *r);
    cr_assert_not_null(r);
    for (size_t i = 0; i < n; ++i) {
        r[i].incident = inc;
        r[i].variant = &inc->variants[0];
        r[i].seed = i + 1;
        r[i].backend = LAB_BACKEND_CPU;
        r[i].o.outcome = i < k ? a : b;
        if (r[i].o.outcome == LAB_OUT_SKIP) {
            r[i].o.r.skipped = 1;
            r[i].o.r.skip_class = skip_class;
            snprintf(r[i].o.r.detail, sizeof r[i].o.r.detail, "skipped: %s", lab_skip_class_name((lab_skip_class)skip_class));
        } else if (r[i].o.outcome == LAB_OUT_PASS || r[i].o.outcome == LAB_OUT_FAIL) {
            r[i].o.r.verdict_set = 1;
            r[i].o.r.passed = r[i].o.outcome == LAB_OUT_PASS;
        }
        if (r[i].o.outcome == LAB_OUT_CRASH) r[i].o.signal = 11;
    }
    return r;
}

static char *slurp(const char *name)
{
    char path[256], *text;
    size_t len;
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    cr_assert_eq(lab_fs_read_all(path, &text, &len), LAB_OK, "%s", lab_err_msg());
    return text;
}

typedef struct {
    lab_verdict v;
    int summary_ok;
    char summary_kind[32];
    double seeds_needed;
    size_t junit_failures;
    int junit_run_failed;
    size_t tap_not_ok;
    int tap_run_not_ok;
    int console_not_ok;
} outputs;

/* Reports recs through lab_replay_report (as a replay does) and reads every output back. */
static outputs report(lab_case_record *recs, size_t n, const lab_verdict_run *run)
{
    outputs out;
    memset(&out, 0, sizeof out);
    lab_replay_opts o = {
        .what = {.backend = LAB_BACKEND_CPU},
        .how = {.jobs = 1, .out_dir = outdir, .tap = 1, .lab_bin = "build/lab", .root = "."}};
    char *con = NULL;
    size_t conlen = 0;
    FILE *f = open_memstream(&con, &conlen);
    cr_assert_eq(lab_replay_report(&o, f, recs, n, 0.5, run, &out.v), LAB_OK, "%s", lab_err_msg());
    fclose(f);
    /* The console's last line is the verdict's. */
    out.console_not_ok = strstr(con, "NOT OK") != NULL;
    cr_expect(strstr(con, out.v.line) != NULL, "console lacks the verdict line '%s':\n%s", out.v.line, con);
    free(con);

    char *text = slurp("summary.json");
    cJSON *s = cJSON_Parse(text);
    free(text);
    cr_assert_not_null(s);
    cr_assert(cJSON_IsBool(cJSON_GetObjectItem(s, "ok")));
    out.summary_ok = cJSON_IsTrue(cJSON_GetObjectItem(s, "ok"));
    cr_expect_eq(cJSON_GetObjectItem(s, "exit_status")->valueint, out.v.exit_status);
    cr_expect_str_eq(cJSON_GetObjectItem(s, "verdict")->valuestring, out.v.line);
    cJSON *var = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(s, "incidents"), 0), "variants"), 0);
    snprintf(out.summary_kind, sizeof out.summary_kind, "%s", cJSON_GetObjectItem(var, "verdict_kind")->valuestring);
    cJSON *need = cJSON_GetObjectItem(var, "seeds_needed");
    out.seeds_needed = need ? need->valuedouble : 0;
    cJSON_Delete(s);

    text = slurp("junit.xml");
    const char *p = strstr(text, "failures=\"");
    cr_assert_not_null(p);
    out.junit_failures = strtoul(p + 10, NULL, 10);
    const char *runcase = strstr(text, "<testcase classname=\"lab replay\" name=\"verdict\"");
    cr_assert_not_null(runcase, "JUnit has no testcase for the run");
    out.junit_run_failed = strncmp(strchr(runcase, '>') + 1, "<failure", 8) == 0;
    size_t fails = 0;
    for (const char *q = text; (q = strstr(q, "<failure ")); ++q) fails++;
    cr_expect_eq(fails, out.junit_failures, "JUnit's failures attribute counts its <failure> elements");
    free(text);

    text = slurp("results.tap");
    for (const char *q = text; (q = strstr(q, "\nnot ok ")); ++q) out.tap_not_ok++;
    const char *last = strstr(text, " - replay verdict: ");
    cr_assert_not_null(last, "TAP has no point for the run");
    while (last > text && last[-1] != '\n') --last;
    out.tap_run_not_ok = !strncmp(last, "not ok", 6);
    free(text);
    return out;
}

/* Every output says the same: ok everywhere or NOT OK everywhere. */
static void agree(const outputs *o, int want_ok, int want_exit, const char *want_kind, const char *what)
{
    cr_expect_eq(o->v.ok, want_ok, "%s: verdict ok %d (%s)", what, o->v.ok, o->v.line);
    cr_expect_eq(o->v.exit_status, want_exit, "%s: exit status %d", what, o->v.exit_status);
    cr_expect_eq(o->summary_ok, want_ok, "%s: summary.json ok", what);
    cr_expect_eq(o->console_not_ok, !want_ok, "%s: console says NOT OK", what);
    cr_expect_eq(o->junit_failures == 0, want_ok, "%s: JUnit failures %zu", what, o->junit_failures);
    cr_expect_eq(o->junit_run_failed, !want_ok, "%s: JUnit run testcase", what);
    cr_expect_eq(o->tap_not_ok == 0, want_ok, "%s: TAP not ok count %zu", what, o->tap_not_ok);
    cr_expect_eq(o->tap_run_not_ok, !want_ok, "%s: TAP run point", what);
    if (want_kind) cr_expect_str_eq(o->summary_kind, want_kind, "%s: variant verdict kind", what);
}

static void scenario(const lab_incident *inc, size_t n, size_t k, lab_outcome a, lab_outcome b, int skip_class,
                     int want_ok, const char *want_kind, const char *what)
{
    lab_case_record *r = records(inc, n, k, a, b, skip_class);
    outputs o = report(r, n, NULL);
    agree(&o, want_ok, want_ok ? 0 : 1, want_kind, what);
    free(r);
}

Test(verdict, fixes_that_crash_hang_error_or_skip, .init = mkout, .fini = rmout)
{
    scenario(&ifix, 8, 8, LAB_OUT_PASS, LAB_OUT_PASS, 0, 1, "ok", "fix holds");
    scenario(&ifix, 8, 1, LAB_OUT_CRASH, LAB_OUT_PASS, 0, 0, "regressed", "fix crashes on one seed");
    scenario(&ifix, 8, 1, LAB_OUT_HANG, LAB_OUT_PASS, 0, 0, "regressed", "fix hangs on one seed");
    scenario(&ifix, 8, 1, LAB_OUT_FAIL, LAB_OUT_PASS, 0, 0, "regressed", "fix fails on one seed");
    scenario(&ifix, 8, 1, LAB_OUT_ERROR, LAB_OUT_PASS, 0, 0, "error", "fix errors on one seed");
    scenario(&ifix, 8, 8, LAB_OUT_SKIP, LAB_OUT_SKIP, LAB_SKIP_NEEDS_GPU, 1, "skipped", "fix skipped: needs a GPU");
    scenario(&ifix, 8, 8, LAB_OUT_SKIP, LAB_OUT_SKIP, LAB_SKIP_NEEDS_GPUS, 1, "skipped", "fix skipped: needs GPUs");
    scenario(&ifix, 8, 8, LAB_OUT_SKIP, LAB_OUT_SKIP, LAB_SKIP_NO_VERSION, 1, "skipped", "fix skipped: no version");
    scenario(&ifix, 8, 4, LAB_OUT_SKIP, LAB_OUT_PASS, LAB_SKIP_NEEDS_GPU, 1, "ok", "fix half skipped, half PASS");
    scenario(&ifix, 8, 1, LAB_OUT_SKIP, LAB_OUT_PASS, LAB_SKIP_MISSING, 0, "skip-missing", "fix skipped: missing");
}

Test(verdict, bugs_xpass_inconclusive_and_rates, .init = mkout, .fini = rmout)
{
    scenario(&ibug, 16, 16, LAB_OUT_FAIL, LAB_OUT_FAIL, 0, 1, "ok", "bug detected on every seed");
    scenario(&ibug, 16, 1, LAB_OUT_PASS, LAB_OUT_FAIL, 0, 0, "xpass", "bug passes one seed (XPASS)");
    scenario(&ibug, 16, 1, LAB_OUT_CRASH, LAB_OUT_FAIL, 0, 0, "inconclusive", "bug crashes: not its failure");
    scenario(&ibug, 16, 1, LAB_OUT_HANG, LAB_OUT_FAIL, 0, 0, "inconclusive", "bug hangs: not its failure");
    /* Stated 0.9: 70 of 100 detected is rejected (p = 2.4e-8). */
    scenario(&irate, 100, 70, LAB_OUT_FAIL, LAB_OUT_PASS, 0, 0, "rate-below", "stated 0.9, 70 of 100");
    /* 76 of 78 at the stated 0.9: not rejected, and 78 seeds have power 0.808. */
    scenario(&irate, 78, 76, LAB_OUT_FAIL, LAB_OUT_PASS, 0, 1, "ok", "stated 0.9, 76 of 78");
    /* 68 of 78: P(X <= 68 | 78, 0.9) = 0.25, not rejected: ok (a miss rate of 13% is within noise of 10%). */
    scenario(&irate, 78, 68, LAB_OUT_FAIL, LAB_OUT_PASS, 0, 1, "ok", "stated 0.9, 68 of 78");
    /* 65 of 78 is the critical count: rejected. */
    scenario(&irate, 78, 65, LAB_OUT_FAIL, LAB_OUT_PASS, 0, 0, "rate-below", "stated 0.9, 65 of 78");
    /* Too few seeds: 20 of 20 detected, yet 20 seeds cannot see 0.9 fall to 0.8: refused, needs 78. */
    lab_case_record *r = records(&irate, 20, 20, LAB_OUT_FAIL, LAB_OUT_FAIL, 0);
    outputs o = report(r, 20, NULL);
    agree(&o, 0, 1, "too-few-seeds", "stated 0.9 on 20 seeds");
    cr_expect_eq(o.seeds_needed, 78.0);
    cr_expect(strstr(o.v.line, "verdict refused (too few seeds") != NULL, "%s", o.v.line);
    free(r);
    /* A rejection stands at any power: 2 of 20 detected at the stated 0.9 is RATE BELOW, not refused. */
    scenario(&irate, 20, 2, LAB_OUT_FAIL, LAB_OUT_PASS, 0, 0, "rate-below", "stated 0.9, 2 of 20");
}

/* Under the compute-sanitizer tool that names it, a bug is detected by the tool on every seed: its stated rate
 * does not apply (2 seeds are not too few), and one seed the tool does not flag is an XPASS. */
Test(verdict, a_stated_rate_yields_to_the_tool_that_names_the_bug, .init = mkout, .fini = rmout)
{
    lab_case_record *r = records(&irate, 2, 2, LAB_OUT_FAIL, LAB_OUT_FAIL, 0);
    for (int i = 0; i < 2; ++i) lab_result_metric(&r[i].o.r, "sanitizer_expected", 1);
    outputs o = report(r, 2, NULL);
    agree(&o, 1, 0, "ok", "under its tool, 2 of 2 flagged");
    r[1].o.outcome = LAB_OUT_PASS;
    r[1].o.r.passed = 1;
    o = report(r, 2, NULL);
    agree(&o, 0, 1, "xpass", "under its tool, 1 of 2 not flagged");
    free(r);
    /* Without the tool the same 2 seeds are too few for the stated 0.9. */
    r = records(&irate, 2, 2, LAB_OUT_FAIL, LAB_OUT_FAIL, 0);
    o = report(r, 2, NULL);
    agree(&o, 0, 1, "too-few-seeds", "stated 0.9 on 2 seeds, no tool");
    free(r);
}

Test(verdict, run_level_failures, .init = mkout, .fini = rmout)
{
    lab_case_record *r = records(&ifix, 8, 8, LAB_OUT_PASS, LAB_OUT_PASS, 0);
    lab_verdict_run harness = {.harness_failed = 1};
    outputs o = report(r, 8, &harness);
    agree(&o, 0, 3, "ok", "every case passed but the harness failed");
    lab_verdict_run ranks = {.ranks_failed = 1};
    o = report(r, 8, &ranks);
    agree(&o, 0, 1, "ok", "every case passed but an MPI rank failed");
    lab_verdict_run lost = {.cases_planned = 9};
    lab_verdict_tally *t;
    size_t nt;
    cr_assert_eq(lab_verdict_tally_records(r, 8, &t, &nt), LAB_OK);
    lab_verdict v = lab_verdict_decide(t, nt, r, 8, &lost);
    cr_expect(!v.ok && v.exit_status == 1 && strstr(v.line, "1 case not finished"), "%s", v.line);
    lab_verdict_run sig = {.interrupted = 2, .cases_planned = 9};
    v = lab_verdict_decide(t, nt, r, 8, &sig);
    cr_expect(!v.ok && v.exit_status == 130, "interrupted by SIGINT: exit %d", v.exit_status);
    /* A case judged not ok inside a variant judged ok is itself NOT OK (the two rules must agree). */
    t[0].ok = 1;
    r[0].o.outcome = LAB_OUT_CRASH;
    v = lab_verdict_decide(t, nt, r, 8, NULL);
    cr_expect(!v.ok && v.mismatch, "a disagreement between case and variant rules passed");
    free(t);
    free(r);
}

/* ---- the lab's own incidents: a default replay can judge every variant ---------------------------- */

/* Every incident's default seeds are enough for "every seed detects" (and "every seed passes") to see a
 * rate fall from 100% to 90% with power 0.8, and for every stated rate to be judged with power 0.8 against
 * doubled misses, so that a default replay never refuses a verdict. */
Test(verdict, default_seeds_have_power)
{
    size_t n, checked = 0;
    const lab_incident *const *all = lab_incident_all(&n);
    size_t floor = lab_binom_seeds_for_drop(LAB_BINOM_DROP_RATE, LAB_BINOM_POWER);
    for (size_t i = 0; i < n; ++i) {
        char path[256];
        snprintf(path, sizeof path, "incidents/%s/incident.mk", all[i]->id);
        if (access(path, R_OK) != 0) continue; /* a test's synthetic incident */
        checked++;
        size_t seeds = all[i]->default_seeds > 0 && all[i]->default_seeds < LAB_REQUEST_SEEDS_DEFAULT
                           ? all[i]->default_seeds : LAB_REQUEST_SEEDS_DEFAULT;
        cr_expect_geq(seeds, floor, "%s: %zu default seeds < %zu, too few to see detection fall to 90%%", all[i]->id,
                      seeds, floor);
        for (int v = 0; v < all[i]->n_variants; ++v) {
            const lab_variant *var = &all[i]->variants[v];
            double r = lab_verdict_stated_rate(var);
            if (var->role != LAB_ROLE_BUG || r >= 1) continue;
            double pw = lab_binom_power(seeds, r, lab_binom_doubled_misses(r), LAB_BINOM_ALPHA);
            cr_expect_geq(pw, LAB_BINOM_POWER, "%s/%s: stated %g on %zu default seeds has power %.3f; needs %zu seeds",
                          all[i]->id, var->name, r, seeds, pw,
                          lab_binom_seeds_needed(r, LAB_BINOM_ALPHA, LAB_BINOM_POWER, seeds));
        }
    }
    cr_expect_geq(checked, 7, "the lab's incidents were found");
}

/* The exit status of a command that stops before a verdict: usage for what the user typed, 3 for the rest. */
Test(verdict, exit_status_of_a_stopped_command)
{
    cr_expect_eq(lab_verdict_exit(LAB_OK), LAB_EXIT_OK);
    cr_expect_eq(lab_verdict_exit(LAB_ERR_ARG), LAB_EXIT_USAGE);
    cr_expect_eq(lab_verdict_exit(LAB_ERR_NOTFOUND), LAB_EXIT_USAGE);
    cr_expect_eq(lab_verdict_exit(LAB_ERR_IO), LAB_EXIT_FAILED);
    cr_expect_eq(lab_verdict_exit(LAB_ERR_DEVICE), LAB_EXIT_FAILED);
}
