/* test_stream: result sets of any size: `lab report --from`, `lab plots`, `lab compare` and `lab trend`
 * stream results.jsonl (lab_resread_each) and keep per case only a small constant; their results are the ones the
 * records in memory gave (a fixture's report.json as the lab wrote it before the change, tests/data/stream), with
 * the per-seed columns and the plots drawn from a stated sample above lab_resread_sample_at() ($LAB_SAMPLE_AT here);
 * peak RSS does not grow with the cases. The interrupts of these commands: test_interrupt.c. */
#include <cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab_fs.h"
#include "lab_json.h"
#include "lab_report.h"
#include "lab_resread.h"
#include "tests/lab_test_sh.h"

#define FIXTURE "tests/data/stream"

static char dir[64];
static void mk(void)
{
    lab_test_tmpdir(dir, sizeof dir, "stream");
}
static void rm(void)
{
    lab_test_rmtree(dir);
    unsetenv("LAB_SAMPLE_AT");
}

/* DIR/sub holding the fixture's results.jsonl and summary.json. */
static void fixture_copy(const char *sub)
{
    char cmd[512], *o;
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/%s' && cp " FIXTURE "/results.jsonl " FIXTURE "/summary.json '%s/%s/'", dir, sub,
             dir, sub);
    cr_assert_eq(lab_test_sh(cmd, &o), 0, "%s", o);
    free(o);
}

static cJSON *read_json(const char *path)
{
    cJSON *j = NULL;
    cr_assert_eq(lab_json_read_file(path, &j), LAB_OK, "%s", lab_err_msg());
    return j;
}

/* report.json of DIR/sub written by lab_report_write (streamed from results.jsonl) */
static cJSON *report_from(const char *sub)
{
    char d[256], p[300];
    snprintf(d, sizeof d, "%s/%s", dir, sub);
    lab_report_opts ro = {0, NULL, 0};
    cr_assert_eq(lab_report_write(d, &ro), LAB_OK, "%s", lab_err_msg());
    snprintf(p, sizeof p, "%s/report.json", d);
    return read_json(p);
}

/* The streamed report equals, in its summary and every incident (statistics, medians, per-seed columns, the first
 * cases that missed their role, duplicates and a variant summary.json does not list), the report the lab wrote from
 * the records in memory before it streamed (committed as report.expected.json: its summary and incidents). */
Test(stream, report_from_a_stream_equals_the_in_memory_report, .init = mk, .fini = rm)
{
    fixture_copy("a");
    cJSON *got = report_from("a"), *want = read_json(FIXTURE "/report.expected.json");
    static const char *const keys[] = {"summary", "incidents"};
    for (int k = 0; k < 2; ++k) {
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(got, keys[k]), *w = cJSON_GetObjectItemCaseSensitive(want, keys[k]);
        cr_assert_not_null(w);
        char *gs = cJSON_Print(g), *ws = cJSON_Print(w);
        cr_expect(cJSON_Compare(g, w, 1), "%s differs:\n%.3000s\n--- want ---\n%.3000s", keys[k], gs, ws);
        free(gs), free(ws);
    }
    /* and the same from the records in memory (a replay's own report: lab_report_write_set) */
    lab_resread_set rs;
    char path[256], d[256];
    snprintf(path, sizeof path, "%s/a/results.jsonl", dir);
    cr_assert_eq(lab_resread_load(path, &rs), LAB_OK, "%s", lab_err_msg());
    cr_assert_eq(rs.n, 86);
    snprintf(path, sizeof path, "%s/a/summary.json", dir);
    cJSON *summary = read_json(path);
    snprintf(d, sizeof d, "%s/a", dir);
    lab_report_opts ro = {0, NULL, 0};
    lab_plot_list plots;
    snprintf(path, sizeof path, "%s/a/plots", dir);
    cr_assert_eq(lab_plot_list_dir(path, &plots), LAB_OK, "%s", lab_err_msg());
    cr_assert_eq(lab_report_write_set(d, &ro, summary, &rs, NULL, &plots), LAB_OK, "%s", lab_err_msg());
    lab_plot_list_free(&plots);
    snprintf(path, sizeof path, "%s/a/report.json", dir);
    cJSON *mem = read_json(path);
    cr_expect(cJSON_Compare(cJSON_GetObjectItemCaseSensitive(mem, "incidents"), cJSON_GetObjectItemCaseSensitive(want, "incidents"), 1));
    lab_resread_free(&rs);
    cJSON_Delete(summary), cJSON_Delete(mem), cJSON_Delete(got), cJSON_Delete(want);
}

/* A per-seed value of report.json as a double (lab_compare_plot's reading): 0 for null. */
static int value_of(const cJSON *x, double *v)
{
    if (cJSON_IsNumber(x)) return *v = x->valuedouble, 1;
    if (!cJSON_IsString(x)) return 0;
    *v = !strcmp(x->valuestring, "inf") ? INFINITY : !strcmp(x->valuestring, "-inf") ? -INFINITY : NAN;
    return 1;
}

/* Above the threshold the per-seed columns are every k-th seed of the full ones (said in per_seed.sample), their values
 * those of the full report; the worst value / per-case bound (0001's specs) is stated over every seed; the statistics
 * are the full set's. */
Test(stream, per_seed_above_the_threshold_is_a_stated_sample, .init = mk, .fini = rm)
{
    fixture_copy("full");
    fixture_copy("sampled");
    cJSON *full = report_from("full");
    setenv("LAB_SAMPLE_AT", "5", 1);
    cJSON *smp = report_from("sampled");
    unsetenv("LAB_SAMPLE_AT");
    const cJSON *fi, *si = cJSON_GetObjectItemCaseSensitive(smp, "incidents")->child;
    int worst_seen = 0;
    cJSON_ArrayForEach(fi, cJSON_GetObjectItemCaseSensitive(full, "incidents")) {
        cr_assert_not_null(si);
        cr_expect(cJSON_Compare(cJSON_GetObjectItemCaseSensitive(fi, "variants"), cJSON_GetObjectItemCaseSensitive(si, "variants"), 1),
                  "statistics differ");
        cr_expect(cJSON_Compare(cJSON_GetObjectItemCaseSensitive(fi, "failures"), cJSON_GetObjectItemCaseSensitive(si, "failures"), 1));
        const cJSON *fps = cJSON_GetObjectItemCaseSensitive(fi, "per_seed"), *sps = cJSON_GetObjectItemCaseSensitive(si, "per_seed");
        const cJSON *fs = cJSON_GetObjectItemCaseSensitive(fps, "seeds"), *ss = cJSON_GetObjectItemCaseSensitive(sps, "seeds");
        int u = cJSON_GetArraySize(fs), every = (u + 4) / 5;
        const cJSON *sample = cJSON_GetObjectItemCaseSensitive(sps, "sample");
        cr_assert_not_null(sample, "no per_seed.sample above the threshold");
        cr_expect_eq(cJSON_GetObjectItemCaseSensitive(sample, "every")->valuedouble, every);
        cr_expect_eq(cJSON_GetObjectItemCaseSensitive(sample, "of")->valuedouble, u);
        cr_expect_eq(cJSON_GetArraySize(ss), (u + every - 1) / every);
        const cJSON *fv;
        cJSON_ArrayForEach(fv, cJSON_GetObjectItemCaseSensitive(fps, "variants")) {
            const cJSON *sv = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(sps, "variants"), fv->string);
            cr_assert_not_null(sv, "%s", fv->string);
            const cJSON *col;
            cJSON_ArrayForEach(col, fv) {
                const cJSON *scol = cJSON_GetObjectItemCaseSensitive(sv, col->string);
                for (int i = 0; i < cJSON_GetArraySize(ss); ++i) {
                    cr_expect_eq(cJSON_GetArrayItem(ss, i)->valuedouble, cJSON_GetArrayItem(fs, i * every)->valuedouble);
                    cr_expect(cJSON_Compare(cJSON_GetArrayItem(scol, i), cJSON_GetArrayItem(col, i * every), 1), "%s %s [%d]",
                              fv->string, col->string, i);
                }
            }
            /* the worst value / bound over every seed, as lab trend takes it from full columns */
            const cJSON *spec;
            cJSON_ArrayForEach(spec, cJSON_GetObjectItemCaseSensitive(fi, "metric_specs")) {
                const cJSON *tm = cJSON_GetObjectItemCaseSensitive(spec, "tolerance_metric");
                if (!cJSON_IsString(tm)) continue;
                const char *name = cJSON_GetObjectItemCaseSensitive(spec, "name")->valuestring;
                const cJSON *xs = cJSON_GetObjectItemCaseSensitive(fv, name)->child, *ts = cJSON_GetObjectItemCaseSensitive(fv, tm->valuestring)->child;
                double w = -INFINITY, x, t;
                int n = 0;
                for (; xs; xs = xs->next, ts = ts->next) {
                    if (!value_of(xs, &x) || !value_of(ts, &t) || !(t > 0)) continue;
                    x /= t;
                    w = isnan(x) ? INFINITY : fmax(w, x);
                    n++;
                }
                const cJSON *got = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(sv, "worst"), name);
                if (n == 0) {
                    cr_expect_null(got);
                    continue;
                }
                double g;
                cr_assert(value_of(got, &g), "%s %s: no worst", fv->string, name);
                cr_expect(g == w || (isinf(w) && isnan(g)), "%s %s: worst %g, full columns %g", fv->string, name, g, w);
                worst_seen++;
            }
        }
        si = si->next;
    }
    cr_expect_gt(worst_seen, 0, "0001's per-case bounds gave no worst value");
    cJSON_Delete(full), cJSON_Delete(smp);
    /* lab trend draws the same margins from the sampled report as from the full one */
    char args[512], *out, *dat[2];
    for (int i = 0; i < 2; ++i) {
        snprintf(args, sizeof args, "trend --out '%s/trend-%d' '%s/%s'", dir, i, dir, i ? "sampled" : "full");
        cr_assert_eq(lab_test_lab("", args, &out), 0, "%s", out);
        free(out);
        snprintf(args, sizeof args, "trend-%d/trend.dat", i);
        dat[i] = lab_test_slurp(dir, args);
    }
    cr_expect(strstr(dat[0], "0001-crf-oob-atomics") != NULL, "%s", dat[0]);
    cr_expect_str_eq(dat[1], dat[0]);
    free(dat[0]), free(dat[1]);
}

/* lab plots' sample: every step-th record of each (incident, variant) in file order, step = ceil(total / most), the
 * sample a windowed replay draws its plots from; every record at or below the threshold. */
Test(stream, plots_sample_every_step_th_case_of_each_variant)
{
    const char *path = FIXTURE "/results.jsonl";
    lab_resread_set all, s;
    size_t total, step;
    cr_assert_eq(lab_resread_load(path, &all), LAB_OK, "%s", lab_err_msg());
    cr_assert_eq(lab_resread_load_sample(path, 86, &s, &total, &step), LAB_OK);
    cr_expect_eq(total, 86);
    cr_expect_eq(step, 1);
    cr_expect_eq(s.n, 86);
    cr_expect_eq(memcmp(s.recs, all.recs, 86 * sizeof *s.recs), 0);
    lab_resread_free(&s);
    cr_assert_eq(lab_resread_load_sample(path, 10, &s, &total, &step), LAB_OK);
    cr_expect_eq(step, 9);
    size_t k = 0;
    for (size_t i = 0; i < all.n; ++i) {
        size_t before = 0; /* the record's place among its (incident, variant) */
        for (size_t j = 0; j < i; ++j)
            before += !strcmp(all.recs[j].incident, all.recs[i].incident) && !strcmp(all.recs[j].variant, all.recs[i].variant);
        if (before % step) continue;
        cr_assert_lt(k, s.n);
        cr_expect_eq(s.recs[k].seed, all.recs[i].seed);
        cr_expect_str_eq(s.recs[k].variant, all.recs[i].variant);
        k++;
    }
    cr_expect_eq(k, s.n);
    lab_resread_free(&s);
    lab_resread_free(&all);
}

/* Writes DIR/sub: a result set of 0004 with n seeds per variant (2n cases), the fixture's lines with new seeds and
 * values. */
static void big_set(const char *sub, size_t n)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    cr_assert_eq(lab_fs_mkdirs(path), LAB_OK);
    snprintf(path, sizeof path, "%s/%s/results.jsonl", dir, sub);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    for (size_t s = 1; s <= n; ++s) {
        double e = 1e-7 * (1.0 + (double)((s * 7919) % 1000) / 1000.0);
        fprintf(f,
                "{\"incident\":\"0004-pow-grad-nan\",\"variant\":\"fix\",\"role\":\"fix\",\"seed\":%zu,\"backend\":\"cpu\","
                "\"outcome\":\"PASS\",\"ok\":true,\"wall_s\":0.05,\"detail\":\"no NaN/Inf; max rel err square %.3g\","
                "\"metrics\":{\"nonfinite_frac\":0,\"nonfinite_square\":0,\"nonfinite_rms\":0,\"negative_bases\":%zu,"
                "\"max_rel_err_square\":%.17g,\"max_rel_err_rms\":%.17g,\"max_ulp_square\":2,\"max_ulp_rms\":4,"
                "\"golden_max_rel_err\":%.17g},\"replay\":\"build/lab replay --incident 0004-pow-grad-nan --variant fix "
                "--seed %zu --backend cpu\"}\n",
                s, e, 130000 + s % 1000, e, 2 * e, 2.4 * e, s);
    }
    for (size_t s = 1; s <= n; ++s)
        fprintf(f,
                "{\"incident\":\"0004-pow-grad-nan\",\"variant\":\"bug-exp-log\",\"role\":\"bug\",\"seed\":%zu,"
                "\"backend\":\"cpu\",\"outcome\":\"FAIL\",\"ok\":true,\"wall_s\":0.007,\"detail\":\"%zu of 262144 "
                "gradients NaN\",\"metrics\":{\"nonfinite_frac\":%.17g,\"nonfinite_square\":%zu,\"nonfinite_rms\":%zu,"
                "\"negative_bases\":%zu,\"max_rel_err_square\":null,\"max_rel_err_rms\":null},\"nonfinite_metrics\":"
                "{\"max_rel_err_square\":\"nan\",\"max_rel_err_rms\":\"nan\"},\"replay\":\"build/lab replay --incident "
                "0004-pow-grad-nan --variant bug-exp-log --seed %zu --backend cpu\"}\n",
                s, 131000 + s % 1000, (131000 + s % 1000) / 262144.0, 131000 + s % 1000, 131000 + s % 1000, 131000 + s % 1000, s);
    cr_assert_eq(fclose(f), 0);
    snprintf(path, sizeof path, "%s/%s/summary.json", dir, sub);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "{\"ok\":true,\"backend\":\"cpu\",\"cases\":%zu,\"wall_s\":1,\"cases_per_s\":1,\"incidents\":[{\"id\":"
            "\"0004-pow-grad-nan\",\"title\":\"pow() gradient NaN for negative bases\",\"variants\":["
            "{\"name\":\"fix\",\"role\":\"fix\",\"seeds\":%zu,\"counts\":{\"PASS\":%zu,\"FAIL\":0,\"CRASH\":0,\"HANG\":0,"
            "\"SKIP\":0,\"ERROR\":0},\"ok\":true},{\"name\":\"bug-exp-log\",\"role\":\"bug\",\"seeds\":%zu,\"counts\":"
            "{\"PASS\":0,\"FAIL\":%zu,\"CRASH\":0,\"HANG\":0,\"SKIP\":0,\"ERROR\":0},\"ok\":true}]}]}\n",
            2 * n, n, n, n, n);
    cr_assert_eq(fclose(f), 0);
}

/* Peak RSS (KB) of `env lab args` (its own and its children's: wait4), which must exit 0. */
static long peak_kb(const char *env, const char *args)
{
    char *abs = realpath(lab_test_bin(), NULL), cmd[2048];
    cr_assert_not_null(abs, "%s not built", lab_test_bin());
    snprintf(cmd, sizeof cmd, "exec env %s '%s' %s >/dev/null 2>&1", env, abs, args);
    free(abs);
    fflush(NULL);
    pid_t p = fork();
    cr_assert_geq(p, 0);
    if (p == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    int ws;
    struct rusage ru;
    cr_assert_eq(wait4(p, &ws, 0, &ru), p);
    cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "%s: status 0x%x", cmd, ws);
    return ru.ru_maxrss;
}

/* Memory per case: report --from, plots, compare and trend on 10k and 50k cases (a sample above 1000 here, as above
 * 65536 by default): peak RSS grows by less than 400 bytes a case (the records in memory cost about 3 KB a case, the
 * full per-seed columns in report.json, read back by compare, about 1 KB). */
Test(stream, peak_rss_does_not_grow_per_case, .init = mk, .fini = rm, .timeout = 300)
{
    const size_t sizes[2] = {5000, 25000}; /* seeds a variant: 10k and 50k cases */
    static const char *const what[] = {"report --from", "plots", "compare", "trend"};
    long kb[2][4];
    for (int i = 0; i < 2; ++i) {
        char sub[32], args[1024];
        snprintf(sub, sizeof sub, "s%zu", sizes[i]);
        big_set(sub, sizes[i]);
        snprintf(args, sizeof args, "report --from '%s/%s'", dir, sub);
        kb[i][0] = peak_kb("LAB_SAMPLE_AT=1000", args);
        snprintf(args, sizeof args, "plots --out '%s/%s'", dir, sub);
        kb[i][1] = peak_kb("LAB_SAMPLE_AT=1000", args);
        snprintf(args, sizeof args, "compare '%s/%s' '%s/%s'", dir, sub, dir, sub);
        kb[i][2] = peak_kb("LAB_SAMPLE_AT=1000", args);
        snprintf(args, sizeof args, "trend --out '%s/trend-%s' '%s/%s' '%s/%s'", dir, sub, dir, sub, dir, sub);
        kb[i][3] = peak_kb("LAB_SAMPLE_AT=1000", args);
    }
    for (int k = 0; k < 4; ++k) {
        double per_case = (double)(kb[1][k] - kb[0][k]) * 1024.0 / (double)(2 * (sizes[1] - sizes[0]));
        cr_log_info("%s: peak RSS %ld KB at %zu cases, %ld KB at %zu: %.0f B a case", what[k], kb[0][k], 2 * sizes[0],
                    kb[1][k], 2 * sizes[1], per_case);
        cr_expect_lt(per_case, 400.0, "%s: peak RSS grows %.0f bytes a case (%ld KB at %zu cases, %ld KB at %zu)", what[k],
                     per_case, kb[0][k], 2 * sizes[0], kb[1][k], 2 * sizes[1]);
    }
}
