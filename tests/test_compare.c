/* test_compare: `lab compare` on hand-written report folders that differ in one way each (a fix that
 * regressed, a bug detected less often, deterministically or beyond noise, an improvement, metrics that
 * moved, incidents and variants new or missing, unreadable reports), on identical reports, and on two
 * real reports made by `lab report`. */
#include <cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_compare.h"
#include "lab_fs.h"
#include "lab_json.h"
#include "lab_report.h"
#include "tests/lab_test_sh.h"

/* Runs the lab with args (from the repository root) through tests/lab_test_sh.h (own session, deadline, stderr
 * with stdout); returns its exit status and its output. */
static int lab(const char *args, char **out) { return lab_test_lab(NULL, args, out); }

#define EXPECT_IN(out, s) cr_expect(strstr(out, s) != NULL, "expected \"%s\" in:\n%.4000s", s, out)

static char root[64], dir_a[128], dir_b[128];

static void mk(void)
{
    snprintf(root, sizeof root, "/tmp/lab-compare-XXXXXX");
    cr_assert(mkdtemp(root));
    snprintf(dir_a, sizeof dir_a, "%s/a", root);
    snprintf(dir_b, sizeof dir_b, "%s/b", root);
    cr_assert_eq(lab_fs_mkdirs(dir_a), LAB_OK);
    cr_assert_eq(lab_fs_mkdirs(dir_b), LAB_OK);
}

static void rm(void)
{
    lab_test_rmtree(root);
}

/* A variant as a report lists it. */
typedef struct {
    const char *name, *role;
    int pass, fail, crash, skip, error;
    double min_detect_rate; /* bug: 0 means 1 */
    int ok;
    double err_median, err_max; /* the metric "err" (NaN: absent) */
    int err_nonfinite;
} variant;

static cJSON *variant_json(const variant *v)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", v->name);
    cJSON_AddStringToObject(o, "role", v->role);
    int seeds = v->pass + v->fail + v->crash + v->skip + v->error;
    cJSON_AddNumberToObject(o, "seeds", seeds);
    cJSON *c = cJSON_AddObjectToObject(o, "counts");
    cJSON_AddNumberToObject(c, "PASS", v->pass);
    cJSON_AddNumberToObject(c, "FAIL", v->fail);
    cJSON_AddNumberToObject(c, "CRASH", v->crash);
    cJSON_AddNumberToObject(c, "HANG", 0);
    cJSON_AddNumberToObject(c, "SKIP", v->skip);
    cJSON_AddNumberToObject(c, "ERROR", v->error);
    if (!strcmp(v->role, "bug")) cJSON_AddNumberToObject(o, "min_detect_rate", v->min_detect_rate > 0 ? v->min_detect_rate : 1);
    cJSON_AddBoolToObject(o, "ok", v->ok);
    cJSON_AddNumberToObject(o, "seed_first", 1);
    cJSON *m = cJSON_AddObjectToObject(o, "metrics");
    if (!isnan(v->err_median)) {
        cJSON *e = cJSON_AddObjectToObject(m, "err");
        cJSON_AddNumberToObject(e, "n", seeds - v->err_nonfinite);
        cJSON_AddNumberToObject(e, "nonfinite", v->err_nonfinite);
        cJSON_AddNumberToObject(e, "median", v->err_median);
        cJSON_AddNumberToObject(e, "max", v->err_max);
    }
    return o;
}

/* Writes dir/report.json: incident ids[i] with its variants (n_v[i] of them, consecutive in vs). */
static void write_report(const char *dir, const char *const *ids, const int *n_v, int n_inc, const variant *vs)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "schema", LAB_REPORT_SCHEMA);
    cJSON_AddStringToObject(r, "created", "2026-11-21T07:00:00Z");
    cJSON *s = cJSON_AddObjectToObject(r, "summary");
    cJSON_AddStringToObject(s, "backend", "cpu");
    cJSON_AddNumberToObject(s, "cases", 8);
    cJSON *incs = cJSON_AddArrayToObject(r, "incidents");
    int k = 0;
    for (int i = 0; i < n_inc; ++i) {
        cJSON *inc = cJSON_CreateObject();
        cJSON_AddStringToObject(inc, "id", ids[i]);
        cJSON *vars = cJSON_AddArrayToObject(inc, "variants");
        for (int j = 0; j < n_v[i]; ++j) cJSON_AddItemToArray(vars, variant_json(&vs[k++]));
        cJSON_AddItemToArray(incs, inc);
    }
    char path[256];
    snprintf(path, sizeof path, "%s/report.json", dir);
    cr_assert_eq(lab_json_write_file(path, r, LAB_JSON_PRETTY), LAB_OK, "%s", lab_err_msg());
    cJSON_Delete(r);
}

static const char *const one_id[] = {"9200-synthetic"};
static const int two_variants[] = {2};

/* A good pair: the fix passes 8 of 8, the bug is detected on 8 of 8. */
#define FIX_OK {"fix", "fix", 8, 0, 0, 0, 0, 0, 1, 1e-7, 2e-7, 0}
#define BUG_OK {"bug", "bug", 0, 8, 0, 0, 0, 0, 1, 0.5, 0.6, 0}

/* Compares dir_a and dir_b in process; prints to a string that the caller frees. */
static lab_compare_result compare(double factor, int strict, char **text)
{
    lab_compare_opts o = {factor, strict};
    lab_compare_result res;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(lab_compare_reports(dir_a, dir_b, &o, f, &res), LAB_OK, "%s", lab_err_msg());
    fclose(f);
    *text = buf;
    return res;
}

Test(compare, moved_rule)
{
    cr_expect_not(lab_compare_moved(1, 1, 10));
    cr_expect_not(lab_compare_moved(0, 0, 10));
    cr_expect_not(lab_compare_moved(1e-7, 9.9e-7, 10));
    cr_expect(lab_compare_moved(1e-7, 1.01e-6, 10));
    cr_expect(lab_compare_moved(1e-6, 0.99e-7, 10));
    cr_expect_not(lab_compare_moved(-2, -19, 10));
    cr_expect(lab_compare_moved(-2, 2, 10), "sign change");
    cr_expect(lab_compare_moved(0, 1e-30, 10), "exact to inexact");
    cr_expect(lab_compare_moved(1, NAN, 10));
    cr_expect(lab_compare_moved(1, INFINITY, 10));
    cr_expect_not(lab_compare_moved(1, 50, 100));
}

Test(compare, identical_reports_exit_0, .init = mk, .fini = rm)
{
    variant v[] = {FIX_OK, BUG_OK};
    write_report(dir_a, one_id, two_variants, 1, v);
    write_report(dir_b, one_id, two_variants, 1, v);
    char *out;
    lab_compare_result r = compare(10, 1, &out);
    cr_expect_eq(r.rows, 2);
    cr_expect_eq(r.regressions + r.improvements + r.changes + r.moves + r.added + r.missing, 0, "%s", out);
    cr_expect_not(r.failed);
    free(out);
    char args[512];
    snprintf(args, sizeof args, "compare %s %s --strict", dir_a, dir_b);
    cr_expect_eq(lab(args, &out), 0, "%s", out);
    EXPECT_IN(out, "no regression");
    EXPECT_IN(out, "same");
    free(out);
}

/* A fix that passed on every seed and now fails on two is a regression: exit 1. */
Test(compare, fix_pass_to_fail_regresses, .init = mk, .fini = rm)
{
    variant a[] = {FIX_OK, BUG_OK};
    variant b[] = {{"fix", "fix", 6, 2, 0, 0, 0, 0, 0, 1e-7, 0.3, 0}, BUG_OK};
    write_report(dir_a, one_id, two_variants, 1, a);
    write_report(dir_b, one_id, two_variants, 1, b);
    char *out;
    lab_compare_result r = compare(10, 0, &out);
    cr_expect_eq(r.regressions, 1, "%s", out);
    cr_expect(r.failed);
    free(out);
    char args[512];
    snprintf(args, sizeof args, "compare %s %s", dir_a, dir_b);
    cr_expect_eq(lab(args, &out), 1, "%s", out);
    EXPECT_IN(out, "PASS 8 of 8");
    EXPECT_IN(out, "PASS 6 FAIL 2 of 8");
    EXPECT_IN(out, "REGRESSED");
    EXPECT_IN(out, "met its role, no longer does");
    /* The fix's max error moved from 2e-7 to 0.3: shown, beyond 10x. */
    EXPECT_IN(out, "metrics that moved beyond 10x");
    free(out);
    /* The other way round it is an improvement, and nothing regressed. */
    snprintf(args, sizeof args, "compare %s %s", dir_b, dir_a);
    cr_expect_eq(lab(args, &out), 0, "%s", out);
    EXPECT_IN(out, "improved");
    free(out);
}

/* A bug that must be detected on every seed and is missed on one: its detection rate fell. A crash
 * turning into a FAIL is a change, not a regression. */
Test(compare, bug_detection_falls, .init = mk, .fini = rm)
{
    variant a[] = {FIX_OK, BUG_OK};
    variant b[] = {FIX_OK, {"bug", "bug", 1, 7, 0, 0, 0, 0, 0, 0.5, 0.6, 0}};
    write_report(dir_a, one_id, two_variants, 1, a);
    write_report(dir_b, one_id, two_variants, 1, b);
    char *out;
    lab_compare_result r = compare(10, 0, &out);
    cr_expect_eq(r.regressions, 1, "%s", out);
    EXPECT_IN(out, "REGRESSED");
    free(out);

    variant c[] = {FIX_OK, {"bug", "bug", 0, 5, 3, 0, 0, 0, 1, 0.5, 0.6, 0}};
    write_report(dir_b, one_id, two_variants, 1, c);
    r = compare(10, 0, &out);
    cr_expect_eq(r.regressions, 0, "%s", out);
    cr_expect_eq(r.changes, 1, "%s", out);
    EXPECT_IN(out, "outcome mix changed");
    free(out);
}

/* A bug detected at a stated rate (stochastic): a small drop is noise, a drop with the 95% intervals
 * apart is a regression even while the variant still meets its stated rate. */
Test(compare, stochastic_detection_beyond_noise, .init = mk, .fini = rm)
{
    variant a[] = {FIX_OK, {"bug", "bug", 50, 50, 0, 0, 0, 0.05, 1, 0.5, 0.6, 0}};
    variant b[] = {FIX_OK, {"bug", "bug", 55, 45, 0, 0, 0, 0.05, 1, 0.5, 0.6, 0}};
    write_report(dir_a, one_id, two_variants, 1, a);
    write_report(dir_b, one_id, two_variants, 1, b);
    char *out;
    lab_compare_result r = compare(10, 0, &out);
    cr_expect_eq(r.regressions, 0, "%s", out);
    cr_expect_eq(r.changes, 1, "%s", out);
    EXPECT_IN(out, "within noise");
    free(out);

    variant c[] = {FIX_OK, {"bug", "bug", 90, 10, 0, 0, 0, 0.05, 1, 0.5, 0.6, 0}};
    write_report(dir_b, one_id, two_variants, 1, c);
    r = compare(10, 0, &out);
    cr_expect_eq(r.regressions, 1, "%s", out);
    EXPECT_IN(out, "detected rate fell 0.500 -> 0.100");
    free(out);
}

/* A variant that ran and now skips everywhere (e.g. a CPU report against a GPU one where it has no CUDA
 * version) is a change; one that now runs and fails is a regression. */
Test(compare, skipped_and_now_running, .init = mk, .fini = rm)
{
    variant a[] = {FIX_OK, BUG_OK};
    variant b[] = {{"fix", "fix", 0, 0, 0, 8, 0, 0, 1, NAN, NAN, 0}, BUG_OK};
    write_report(dir_a, one_id, two_variants, 1, a);
    write_report(dir_b, one_id, two_variants, 1, b);
    char *out;
    lab_compare_result r = compare(10, 0, &out);
    cr_expect_eq(r.regressions, 0, "%s", out);
    cr_expect_eq(r.changes, 1);
    EXPECT_IN(out, "now skipped on every seed");
    free(out);

    variant c[] = {{"fix", "fix", 0, 0, 0, 0, 8, 0, 0, NAN, NAN, 0}, BUG_OK};
    write_report(dir_a, one_id, two_variants, 1, b);
    write_report(dir_b, one_id, two_variants, 1, c);
    r = compare(10, 0, &out);
    cr_expect_eq(r.regressions, 1, "an ERROR on every seed where it skipped before:\n%s", out);
    EXPECT_IN(out, "now runs and misses its role");
    free(out);
}

/* Metric statistics: beyond the factor they are listed; --factor changes the threshold; non-finite
 * values appearing count; only --strict makes moves fail. */
Test(compare, metrics_moved_beyond_factor, .init = mk, .fini = rm)
{
    variant a[] = {FIX_OK, BUG_OK};
    variant b[] = {{"fix", "fix", 8, 0, 0, 0, 0, 0, 1, 3e-6, 5e-6, 0}, {"bug", "bug", 0, 8, 0, 0, 0, 0, 1, 0.5, 0.6, 3}};
    write_report(dir_a, one_id, two_variants, 1, a);
    write_report(dir_b, one_id, two_variants, 1, b);
    char *out;
    lab_compare_result r = compare(10, 0, &out);
    cr_expect_eq(r.regressions, 0, "%s", out);
    cr_expect_eq(r.moves, 3, "fix median (x30), fix max (x25), bug non-finite appeared:\n%s", out);
    cr_expect_not(r.failed, "moves alone do not fail without --strict");
    EXPECT_IN(out, "x30");
    EXPECT_IN(out, "appeared");
    free(out);
    r = compare(100, 0, &out);
    cr_expect_eq(r.moves, 1, "only the non-finite count moves at 100x:\n%s", out);
    free(out);
    char args[512];
    snprintf(args, sizeof args, "compare %s %s --factor 20", dir_a, dir_b);
    cr_expect_eq(lab(args, &out), 0, "%s", out);
    EXPECT_IN(out, "beyond 20x");
    free(out);
    snprintf(args, sizeof args, "compare %s %s --strict", dir_a, dir_b);
    cr_expect_eq(lab(args, &out), 1, "%s", out);
    EXPECT_IN(out, "FAILED (--strict)");
    free(out);
}

/* Incidents and variants only in one report are listed; --strict fails on missing ones. */
Test(compare, new_and_missing, .init = mk, .fini = rm)
{
    variant a[] = {FIX_OK, BUG_OK};
    write_report(dir_a, one_id, two_variants, 1, a);
    const char *ids[] = {"9200-synthetic", "9300-new"};
    const int nv[] = {1, 1};
    variant b[] = {FIX_OK, FIX_OK};
    write_report(dir_b, ids, nv, 2, b);
    char *out;
    lab_compare_result r = compare(10, 0, &out);
    cr_expect_eq(r.rows, 1);
    cr_expect_eq(r.missing, 1, "%s", out);
    cr_expect_eq(r.added, 1, "%s", out);
    cr_expect_not(r.failed);
    EXPECT_IN(out, "variant 9200-synthetic/bug: missing in B");
    EXPECT_IN(out, "incident 9300-new: new in B");
    free(out);
    r = compare(10, 1, &out);
    cr_expect(r.failed, "--strict fails on a missing variant");
    free(out);
}

/* Unreadable reports: exit status 2 with the file (and the field) named. */
Test(compare, unreadable_reports_named, .init = mk, .fini = rm)
{
    variant a[] = {FIX_OK, BUG_OK};
    write_report(dir_a, one_id, two_variants, 1, a);
    char args[512], *out, path[256];
    snprintf(args, sizeof args, "compare %s %s/nope", dir_a, root);
    cr_expect_eq(lab(args, &out), 2, "%s", out);
    EXPECT_IN(out, "/nope/report.json");
    free(out);

    snprintf(path, sizeof path, "%s/report.json", dir_b);
    const char *bad[][2] = {
        {"{\"schema\": \"lab-report/1\", \"incidents\": [", "report.json: not valid JSON"},
        {"{\"schema\": \"other\", \"incidents\": []}", "report.json: 'schema' is not \"lab-report/1\""},
        {"{\"schema\": \"lab-report/1\"}", "report.json: no array 'incidents'"},
        {"{\"schema\": \"lab-report/1\", \"incidents\": [{\"id\": \"x\", \"variants\": [{\"name\": \"fix\", \"role\": \"fix\", "
         "\"seeds\": 1, \"counts\": {}}, {\"name\": \"bug\", \"role\": \"bug\", \"counts\": {}}]}]}",
         "report.json: incidents[0].variants[1]: no number 'seeds'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) {
        cr_assert_eq(lab_fs_write_atomic(path, bad[i][0], strlen(bad[i][0])), LAB_OK);
        snprintf(args, sizeof args, "compare %s %s", dir_a, dir_b);
        cr_expect_eq(lab(args, &out), 2, "%s", out);
        EXPECT_IN(out, bad[i][1]);
        EXPECT_IN(out, dir_b);
        free(out);
    }
}

Test(compare, usage_errors)
{
    struct { const char *args, *want; } cases[] = {
        {"compare", "compare needs two report folders"},
        {"compare /tmp", "compare needs two report folders"},
        {"compare a b c", "unexpected argument 'c'"},
        {"compare a b --factor 0.5", "--factor needs a number above 1, got '0.5'"},
        {"compare a b --factor x", "--factor needs a number above 1, got 'x'"},
        {"compare a b --factor", "--factor needs a number above 1"},
        {"compare a b --bogus", "unknown flag '--bogus'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
        char *out;
        cr_expect_eq(lab(cases[i].args, &out), 2, "lab %s", cases[i].args);
        EXPECT_IN(out, cases[i].want);
        free(out);
    }
}

/* Two real reports of the same build: the same seeds give the same outcomes and metrics (exit 0); other
 * seeds only a note; a fix made to fail in B's report.json is caught (exit 1). */
Test(compare, real_reports, .init = mk, .fini = rm, .timeout = 180)
{
    char args[512], *out;
    snprintf(args, sizeof args, "report --incident 0004 --seeds 2 --no-plots --quiet --out %s", dir_a);
    cr_assert_eq(lab(args, &out), 0, "%s", out);
    free(out);
    snprintf(args, sizeof args, "report --incident 0004 --seeds 2 --first-seed 3 --no-plots --quiet --out %s", dir_b);
    cr_assert_eq(lab(args, &out), 0, "%s", out);
    free(out);

    snprintf(args, sizeof args, "compare %s %s", dir_a, dir_a);
    cr_expect_eq(lab(args, &out), 0, "%s", out);
    EXPECT_IN(out, "2 variants in both: 0 regressed, 0 improved, 0 changed; 0 metric statistics moved");
    free(out);

    snprintf(args, sizeof args, "compare %s %s", dir_a, dir_b);
    cr_expect_eq(lab(args, &out), 0, "%s", out);
    EXPECT_IN(out, "the reports ran different seeds");
    EXPECT_IN(out, "no regression");
    free(out);

    /* B's fix made to fail on one seed, as a regressed kernel would. */
    char path[256];
    snprintf(path, sizeof path, "%s/report.json", dir_b);
    cJSON *r;
    cr_assert_eq(lab_json_read_file(path, &r), LAB_OK, "%s", lab_err_msg());
    cJSON *fix = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "incidents"), 0), "variants"), 0);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(fix, "name")), "fix");
    cJSON *counts = cJSON_GetObjectItem(fix, "counts");
    cJSON_SetNumberValue(cJSON_GetObjectItem(counts, "PASS"), 1);
    cJSON_SetNumberValue(cJSON_GetObjectItem(counts, "FAIL"), 1);
    cJSON_ReplaceItemInObject(fix, "ok", cJSON_CreateFalse());
    cr_assert_eq(lab_json_write_file(path, r, LAB_JSON_PRETTY), LAB_OK);
    cJSON_Delete(r);
    snprintf(args, sizeof args, "compare %s %s", dir_a, dir_b);
    cr_expect_eq(lab(args, &out), 1, "%s", out);
    EXPECT_IN(out, "REGRESSED");
    free(out);
}
