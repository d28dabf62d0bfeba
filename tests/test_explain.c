/* test_explain: `lab explain` says what the story's card says and no more: every section of every incident's card, as
 * its README holds it, within 100 columns; each case shown with the bound of the criterion it crossed; a mechanism that
 * cannot fire on the backend (its bug cases fail only on the CPU model's count, their outputs pass like the fixes')
 * said so, with the count as the evidence; a long detail wrapped whole. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_card.h"
#include "lab_explain.h"
#include "lab_fs.h"
#include "lab_text.h"

#define EXPECT_IN(out, s) cr_expect(strstr(out, s) != NULL, "expected \"%s\" in:\n%s", s, out)

/* s with markdown emphasis removed, list markers and runs of blanks made one space. */
static char *squash(const char *s)
{
    char *p = lab_card_plain(s), *o = malloc(strlen(s) + 1);
    size_t j = 0;
    int sp = 1;
    for (const char *q = p; *q; ++q) {
        if (isspace((unsigned char)*q)) {
            if (!sp) o[j++] = ' ';
            sp = 1;
            continue;
        }
        o[j++] = *q;
        sp = 0;
    }
    while (j && o[j - 1] == ' ') --j;
    o[j] = '\0';
    free(p);
    return o;
}

static void expect_width(const char *text, const char *what)
{
    int line = 1;
    for (const char *p = text; *p; ++line) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        cr_expect(lab_text_cols(p, n) <= LAB_TEXT_WIDTH, "%s: line %d has %zu columns: %.*s", what, line,
                  lab_text_cols(p, n), (int)n, p);
        if (!e) break;
        p = e + 1;
    }
}

/* What the card print writes for every incident holds every section of its card and every bug variant's class and
 * text, and nothing longer than 100 columns. */
Test(explain, the_card_as_the_story_has_it_for_every_incident)
{
    size_t n;
    const lab_incident *const *all = lab_incident_all(&n);
    for (size_t i = 0; i < n; ++i) {
        const lab_incident *inc = all[i];
        char dir[512];
        snprintf(dir, sizeof dir, "incidents/%s", inc->id);
        if (!lab_fs_exists(dir)) continue; /* a test's own incident */
        lab_card c;
        cr_assert_eq(lab_card_load(".", inc->id, &c), LAB_OK, "%s", lab_err_msg());
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        cr_assert_eq(lab_explain_card_print(f, inc, &c, "R.md"), 0);
        fclose(f);
        expect_width(buf, inc->id);
        char *out = squash(buf);
        for (int s = 0; s < LAB_CARD_VARIANTS; ++s) {
            char *want = squash(c.text[s]);
            cr_expect(strstr(out, want) != NULL, "%s: the card's '%s' is not what explain prints:\n%s\n--- printed:\n%s",
                      inc->id, lab_card_heading(s), want, buf);
            free(want);
        }
        for (int v = 0; v < inc->n_variants; ++v) {
            const lab_card_variant *cv = lab_card_variant_of(&c, inc->variants[v].name);
            if (!cv) continue;
            char *want = squash(cv->why);
            cr_expect(strstr(out, want) != NULL, "%s: variant %s: '%s' not printed", inc->id, cv->name, want);
            free(want);
        }
        free(out), free(buf);
        lab_card_free(&c);
    }
}

/* A made-up incident: a model count (the mechanism), an output error and a census, and two variants. */
static const lab_metric_spec specs[] = {
    {"hazards", 0, 1, NULL, "unsynchronised accesses the model counts", 1},
    {"err", 1.0, 1, NULL, "error against the tolerance"},
    {"nonfinite", 0, 1, NULL, "non-finite values"},
};
static const lab_variant vars[] = {
    {.name = "bug", .role = LAB_ROLE_BUG, .what = "the bug"},
    {.name = "fix", .role = LAB_ROLE_FIX, .what = "the fix"},
};
static lab_status no_run(const lab_case *c, lab_case_result *r) { return LAB_OK; }
static const lab_incident made_up = {.id = "9300-explain", .title = "made up", .variants = vars, .n_variants = 2,
                                     .run_cpu = no_run, .default_seeds = 8,
                                     .plots = {.metric = "hazards", .specs = specs, .n_specs = 3}};

static lab_job_outcome outcome(int pass, double hazards, double err, double nonfinite, const char *detail)
{
    lab_job_outcome o;
    memset(&o, 0, sizeof o);
    o.outcome = pass ? LAB_OUT_PASS : LAB_OUT_FAIL;
    lab_result_metric(&o.r, "hazards", hazards);
    lab_result_metric(&o.r, "err", err);
    lab_result_metric(&o.r, "nonfinite", nonfinite);
    lab_result_verdict(&o.r, pass, "%s", detail);
    return o;
}

static char *live(const lab_job_outcome *out, size_t seeds, int *ok)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    lab_explain_live x = {&made_up, NULL, LAB_BACKEND_CPU, seeds, out, "build/lab", "."};
    *ok = lab_explain_live_print(f, &x);
    fclose(f);
    return buf;
}

/* Each case shows the bound it crossed, not the separating metric: here the error, while hazards stays 0. */
Test(explain, a_case_shows_the_bound_it_crossed)
{
    lab_job_outcome out[2] = {outcome(0, 0, 3.5, 0, "error 3.5 of the tolerance"), outcome(1, 0, 0.2, 0, "within")};
    int ok;
    char *buf = live(out, 1, &ok);
    cr_expect_eq(ok, 1);
    EXPECT_IN(buf, "  seed 1    FAIL err = 3.5 (passes at <= 1)");
    EXPECT_IN(buf, "  seed 1    PASS hazards = 0 (passes at <= 0)");
    EXPECT_IN(buf, "bug (bug): detected on 1 of 1 seeds, as a bug variant must be");
    EXPECT_IN(buf, "The bug happens and the fix holds.");
    cr_expect(strstr(buf, "cannot fire") == NULL, "%s", buf);
    EXPECT_IN(buf, "build/lab case 9300 bug 1\n");
    EXPECT_IN(buf, "every seed of the default replay (8)");
    expect_width(buf, "live");
    free(buf);
}

/* Bugs that fail only on the model's count, outputs like the fixes': the mechanism cannot fire here, said so with the
 * outputs side by side and the count as the evidence. */
Test(explain, a_mechanism_that_cannot_fire_is_said_so)
{
    lab_job_outcome out[4] = {outcome(0, 39624, 0.282, 0, "39624 hazards"), outcome(1, 0, 0.282, 0, "no hazard"),
                              outcome(0, 103896, 0.3, 0, "103896 hazards"), outcome(1, 0, 0.3, 0, "no hazard")};
    int ok;
    char *buf = live(out, 2, &ok);
    cr_expect_eq(ok, 1);
    EXPECT_IN(buf, "  seed 1    FAIL hazards = 39624 (passes at <= 0)");
    EXPECT_IN(buf, "by the CPU model's count alone");
    char *flat = squash(buf);
    EXPECT_IN(flat, "On cpu the mechanism cannot fire: the bug cases fail only on the count the lab's CPU model makes of "
                    "it, and their outputs pass every other bound of the criterion, as the fixes' do (seed 1: err 0.282 "
                    "for bug, 0.282 for fix; nonfinite 0 for bug, 0 for fix). The evidence here is hazards: "
                    "unsynchronised accesses the model counts.");
    EXPECT_IN(flat, "The fixes hold; the bugs are detected by the CPU model's count alone");
    free(flat);
    expect_width(buf, "live");
    free(buf);
}

/* A detail of 900 bytes is printed whole, wrapped within 100 columns, its words unbroken. */
Test(explain, a_long_detail_is_wrapped_whole)
{
    char detail[901];
    for (int i = 0; i < 900; ++i) detail[i] = i % 9 == 8 ? ' ' : (char)('a' + i % 7);
    detail[900] = '\0';
    lab_job_outcome out[2] = {outcome(0, 0, 3.5, 0, detail), outcome(1, 0, 0.2, 0, "within")};
    int ok;
    char *buf = live(out, 1, &ok);
    expect_width(buf, "live");
    char *flat = squash(buf), *want = squash(detail);
    EXPECT_IN(flat, want);
    free(flat), free(want), free(buf);
}
