/* test_detail: a case's detail line reaches every output whole: up to LAB_DETAIL_MAX bytes as written, longer text cut
 * only between words and marked; 0006's hang detail (the job's state, the step-counter finding and the first
 * collective that did not pair up, over 240 bytes) whole in the console, results.jsonl, TAP, JUnit and the HTML
 * report. */
#include <criterion/criterion.h>
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_fs.h"
#include "lab_html.h"
#include "lab_incident.h"
#include "lab_resread.h"
#include "lab_results.h"
#include "lab_text.h"
#include "tests/lab_test_sh.h"

#define EXPECT_IN(out, s) cr_expect(strstr(out, s) != NULL, "expected \"%s\" in:\n%s", s, out)

/* n bytes of words "wNNNN " */
static char *words(size_t n)
{
    char *s = malloc(n + 1);
    for (size_t i = 0; i < n; ++i) s[i] = i % 6 == 5 ? ' ' : (char)('a' + (i / 6) % 26);
    s[n] = '\0';
    return s;
}

Test(detail, whole_up_to_its_room_and_cut_only_between_words)
{
    lab_case_result r;
    memset(&r, 0, sizeof r);
    char *fits = words(LAB_DETAIL_MAX - 1);
    lab_result_verdict(&r, 0, "%s", fits);
    cr_expect_str_eq(r.detail, fits, "a detail of %d bytes is kept whole", LAB_DETAIL_MAX - 1);
    char *longer = words(3 * LAB_DETAIL_MAX);
    lab_result_verdict(&r, 0, "%s", longer);
    size_t n = strlen(r.detail), cut = strlen(LAB_TEXT_CUT);
    cr_assert(n < LAB_DETAIL_MAX && n > cut);
    cr_expect_str_eq(r.detail + n - cut, LAB_TEXT_CUT, "the cut is marked: %s", r.detail + n - 20);
    cr_expect(!strncmp(r.detail, longer, n - cut), "the kept text is the start of the detail");
    cr_expect_eq(longer[n - cut], ' ', "cut between words, not inside one: '%.12s'", longer + n - cut - 6);
    free(fits), free(longer);
}

/* The one 0006 case, replayed by the lab: its detail in the console, results.jsonl and TAP (a bug detected: TAP
 * carries no detail for it, so TAP is checked with the same detail on a case that missed its role, as JUnit and the
 * HTML report are). */
Test(detail, a_long_0006_detail_whole_everywhere, .timeout = 180)
{
    const char *out_dir = "build/test-detail-0006";
    char cmd[512], *out;
    snprintf(cmd, sizeof cmd, "replay --incident 0006 --variant bug-step-counter --seed 1 --backend cpu --out %s "
             "--no-plots --tap", out_dir);
    int st = lab_test_lab(NULL, cmd, &out);
    cr_assert_eq(st, 0, "%s", out);
    const char *tail = "rank 2 (distiller) in finalize at step 3";
    EXPECT_IN(out, tail);
    char path[512];
    snprintf(path, sizeof path, "%s/results.jsonl", out_dir);
    lab_resread_set set;
    cr_assert_eq(lab_resread_load(path, &set), LAB_OK, "%s", lab_err_msg());
    cr_assert_eq(set.n, 1);
    const char *detail = set.recs[0].detail;
    cr_expect(strlen(detail) > 240, "0006's hang detail is long: %zu bytes", strlen(detail));
    cr_expect(strstr(detail, tail) != NULL, "results.jsonl: %s", detail);
    cr_expect(strstr(out, detail) != NULL, "the console has the detail whole:\n%s\n%s", detail, out);

    /* the same detail on a case that missed its role (an XPASS): TAP, JUnit */
    const lab_incident *inc = lab_incident_find("0006");
    cr_assert_not_null(inc);
    lab_case_record rec = {inc, lab_incident_variant(inc, "bug-step-counter"), 1, LAB_BACKEND_CPU,
                           {.outcome = LAB_OUT_PASS}};
    snprintf(rec.o.r.detail, sizeof rec.o.r.detail, "%s", detail);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert(lab_results_junit_case(f, &rec, NULL));
    cr_assert(lab_results_tap_case(f, &rec, 1, NULL));
    fclose(f);
    /* the detail's end, as it stands in each output after it (none of these escape its last words) */
    const char *end = detail + strlen(detail) - 24;
    char want[256];
    snprintf(want, sizeof want, "%s &#10;replay: ", end); /* JUnit: the detail whole, then the replay line */
    EXPECT_IN(buf, want);
    EXPECT_IN(buf, tail);
    snprintf(want, sizeof want, "  detail: \"%s\"\n", detail); /* TAP: as it is (it holds no quote to escape) */
    EXPECT_IN(buf, want);
    free(buf);

    /* the HTML report: a case that missed its role with that detail */
    cJSON *rep = cJSON_CreateObject(), *incs = cJSON_AddArrayToObject(rep, "incidents"), *i = cJSON_CreateObject();
    cJSON_AddObjectToObject(rep, "summary");
    cJSON_AddItemToArray(incs, i);
    cJSON_AddStringToObject(i, "id", inc->id);
    cJSON_AddStringToObject(i, "title", inc->title);
    cJSON_AddArrayToObject(i, "variants");
    cJSON *fails = cJSON_AddArrayToObject(i, "failures"), *one = cJSON_CreateObject();
    cJSON_AddItemToArray(fails, one);
    cJSON_AddStringToObject(one, "variant", "bug-step-counter");
    cJSON_AddNumberToObject(one, "seed", 1);
    cJSON_AddStringToObject(one, "outcome", "PASS");
    cJSON_AddStringToObject(one, "detail", detail);
    cJSON_AddStringToObject(one, "replay", "build/lab replay --seed 1");
    cr_assert_eq(lab_html_write(out_dir, rep), LAB_OK, "%s", lab_err_msg());
    cJSON_Delete(rep);
    char *html = NULL;
    snprintf(path, sizeof path, "%s/index.html", out_dir);
    cr_assert_eq(lab_fs_read_all(path, &html, &len), LAB_OK);
    EXPECT_IN(html, tail);
    char want_html[256];
    snprintf(want_html, sizeof want_html, "%s <br><code>", end);
    EXPECT_IN(html, want_html);
    free(html);
    lab_resread_free(&set);
    free(out);
}

/* TAP 13's diagnostics are a YAML block: a detail holding a quote, a backslash or a tab stays one double-quoted
 * scalar (escaped), so a TAP consumer reads the block instead of stopping at the first quote. */
Test(detail, tap_diagnostics_escape_quotes)
{
    const lab_incident *inc = lab_incident_find("0004");
    cr_assert_not_null(inc);
    lab_case_record rec = {inc, lab_incident_variant(inc, "fix"), 2, LAB_BACKEND_CPU, {.outcome = LAB_OUT_FAIL}};
    snprintf(rec.o.r.detail, sizeof rec.o.r.detail, "max rel err \"square\" 2.1e-06\tover C:\\tol");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert(lab_results_tap_case(f, &rec, 1, NULL));
    fclose(f);
    cr_expect(strstr(buf, "  detail: \"max rel err \\\"square\\\" 2.1e-06\\x09over C:\\\\tol\"\n") != NULL,
              "the detail escaped as a YAML scalar:\n%s", buf);
    free(buf);
}
