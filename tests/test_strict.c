/* test_strict: readers that accept nothing impossible: `lab golden verify` against unlisted files, an empty
 * file list and a MANIFEST naming another incident; `lab compare` against reports with impossible counts,
 * seeds, outcomes and metrics, each error naming the field. */
#include <cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab_fs.h"
#include "tests/lab_test_sh.h"

#define EXPECT_IN(out, s) cr_expect(strstr(out, s) != NULL, "expected \"%s\" in:\n%s", s, out)

static char dir[64];
static void mk(void)
{
    lab_test_tmpdir(dir, sizeof dir, "strict");
}
static void rm(void)
{
    lab_test_rmtree(dir);
}

static int lab(const char *env, const char *args, char **out) { return lab_test_lab(env, args, out); }

/* A copy of 0004's goldens under dir, altered by `change` (a shell command run in the golden folder). */
static int golden_verify_after(const char *change, char **out)
{
    char cmd[2048], *o;
    snprintf(cmd, sizeof cmd, "rm -rf %s/incidents && mkdir -p %s/incidents && cp -r incidents/0004-pow-grad-nan %s/incidents/ "
                              "&& cd %s/incidents/0004-pow-grad-nan/golden && %s",
             dir, dir, dir, dir, change);
    cr_assert_eq(lab_test_sh(cmd, &o), 0, "%s", o);
    free(o);
    char env[128];
    snprintf(env, sizeof env, "LAB_ROOT=%s", dir);
    return lab(env, "golden verify 0004", out);
}

Test(strict, golden_verify_fails_on_unlisted_empty_and_misnamed, .init = mk, .fini = rm)
{
    char *out;
    cr_expect_eq(golden_verify_after("true", &out), 0, "the intact copy must verify:\n%s", out);
    free(out);

    cr_expect_eq(golden_verify_after("echo stray > extra.npy", &out), 1, "%s", out);
    EXPECT_IN(out, "extra.npy: not listed in the MANIFEST");
    free(out);

    cr_expect_eq(golden_verify_after("python3 -c \"import json;m=json.load(open('MANIFEST.json'));m['files']=[];"
                                     "json.dump(m,open('MANIFEST.json','w'))\" && rm -f *.npy",
                                     &out),
                 1, "%s", out);
    EXPECT_IN(out, "MANIFEST.json: lists no files");
    free(out);

    cr_expect_eq(golden_verify_after("sed -i 's/\"0004-pow-grad-nan\"/\"0005-bf16-crf-nan\"/' MANIFEST.json", &out), 1,
                 "%s", out);
    EXPECT_IN(out, "names incident '0005-bf16-crf-nan', not '0004-pow-grad-nan'");
    free(out);
}

/* Writes dir/b/report.json: the baseline report with `edit` applied (a Python statement on r; the string
 * "__INF__" becomes the number 1e999, which parses as infinity), and compares dir/a with it. */
static int compare_after(const char *edit, char **out)
{
    char cmd[2048], *o;
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/a %s/b && cp tests/data/report-h200/report.json %s/a/ && python3 -c \"import json;"
             "r=json.load(open('%s/a/report.json'));%s;open('%s/b/report.json','w').write(json.dumps(r).replace('\\\"__INF__\\\"','1e999'))\"",
             dir, dir, dir, dir, edit, dir);
    cr_assert_eq(lab_test_sh(cmd, &o), 0, "%s", o);
    free(o);
    snprintf(cmd, sizeof cmd, "compare %s/a %s/b", dir, dir);
    return lab(NULL, cmd, out);
}

Test(strict, compare_rejects_impossible_reports_naming_the_field, .init = mk, .fini = rm)
{
    struct { const char *edit, *want; } cases[] = {
        {"v=r['incidents'][0]['variants'][0];v['counts']['PASS']=1e300", "incidents[0].variants[0].counts.PASS: 1e+300 is not a non-negative integer"},
        {"v=r['incidents'][0]['variants'][0];v['counts']['PASS']=-3", "incidents[0].variants[0].counts.PASS: -3 is not"},
        {"v=r['incidents'][0]['variants'][1];v['counts']['FAIL']=2.5", "incidents[0].variants[1].counts.FAIL: 2.5 is not"},
        {"v=r['incidents'][0]['variants'][0];v['counts']['MAYBE']=0", "incidents[0].variants[0].counts.MAYBE: not a known outcome"},
        {"v=r['incidents'][1]['variants'][0];v['counts']['PASS']+=1", "incidents[1].variants[0].counts: sum"},
        {"v=r['incidents'][0]['variants'][0];v['seeds']=0", "incidents[0].variants[0].seeds: not an integer >= 1"},
        {"v=r['incidents'][0]['variants'][0];v['seed_first']=0", "incidents[0].variants[0].seed_first: not a seed"},
        {"v=r['incidents'][0]['variants'][0];v['role']='maybe'", "incidents[0].variants[0].role: 'maybe' is not fix or bug"},
        {"v=r['incidents'][0]['variants'][0];m=next(iter(v['metrics'].values()));m['max']='__INF__'",
         "metrics.oob_writes.max: neither a finite number nor null"},
        {"v=r['incidents'][0]['variants'][0];m=next(iter(v['metrics'].values()));m['nonfinite']=-1",
         "metrics.oob_writes.nonfinite: not a non-negative integer"},
        {"r['incidents']=[]", "incidents: empty (an empty report)"},
        {"r['summary']['cases']=-5", "summary.cases: not a non-negative integer"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
        char *out;
        int st = compare_after(cases[i].edit, &out);
        cr_expect_eq(st, 2, "%s: exit %d:\n%s", cases[i].edit, st, out);
        EXPECT_IN(out, cases[i].want);
        EXPECT_IN(out, "/b/report.json");
        free(out);
    }
    char *out;
    cr_expect_eq(compare_after("pass", &out), 0, "the baseline against itself:\n%s", out);
    free(out);
}
