/* test_asan: AddressSanitizer as the second witness: a report's summary, and, in an ASan build (make test SANITIZE=address), a replay worker turning a report into its case's FAIL, 0001's bug flagged and its fixes clean, an `asan` bug that strays nowhere an XPASS. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_asan.h"
#include "lab_replay.h"

Test(asan, summary_of_a_report_has_no_addresses)
{
    static char buf[64];
    lab_asan_poison(buf + 32, 32, "the test's buffer");
    char report[1024], out[240];
    snprintf(report, sizeof report,
             "=================================================================\n"
             "==4242==ERROR: AddressSanitizer: use-after-poison on address %p at pc 0x55 bp 0x7f sp 0x7e\n"
             "WRITE of size 4 at %p thread T0\n"
             "    #0 0x55a4f085ac3d in sc_atomic_add kernels/lab_semicrf.c:431\n"
             "    #1 0x55a4f085b000 in lab_semicrf_emulate kernels/lab_semicrf.c:700\n",
             (void *)(buf + 40), (void *)(buf + 40));
    lab_asan_summarize(report, out, sizeof out);
    if (lab_asan_active())
        cr_expect_str_eq(out, "AddressSanitizer: use-after-poison: WRITE of size 4 in sc_atomic_add (8 bytes past the "
                              "end of the test's buffer)");
    else /* outside an ASan build nothing is poisoned or named */
        cr_expect_str_eq(out, "AddressSanitizer: use-after-poison: WRITE of size 4 in sc_atomic_add");
    lab_asan_unpoison(buf + 32, 32);
    lab_asan_summarize("==1==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6020 at pc 0x1\n"
                       "READ of size 8 at 0x6020 thread T0\n    #0 0x4 in main x.c:3\n", out, sizeof out);
    cr_expect_str_eq(out, "AddressSanitizer: heap-buffer-overflow: READ of size 8 in main");
}

/* A synthetic incident whose variants read one float past a buffer made exact (poisoned) when the case is told
 * a memory checker watches, or read inside it. */
static lab_status run_stray(const lab_case *c, lab_case_result *r)
{
    float *buf = calloc(16, sizeof *buf);
    if (!buf) return lab_err_set(LAB_ERR_NOMEM, "test");
    if (c->exact_alloc) lab_asan_poison(buf + 8, 8 * sizeof *buf, "buf[8]");
    volatile float *p = buf;
    float v = p[c->variant->param]; /* param 8: one past the exact size */
    lab_asan_unpoison(buf, 16 * sizeof *buf);
    free(buf);
    lab_result_metric(r, "v", v);
    lab_result_verdict(r, c->variant->role == LAB_ROLE_FIX, "own verdict");
    return LAB_OK;
}
static const lab_variant stray_variants[] = {
    {.name = "fix-inside", .role = LAB_ROLE_FIX, .what = "reads inside", .param = 3},
    {.name = "fix-stray", .role = LAB_ROLE_FIX, .what = "reads one past", .param = 8},
    {.name = "bug-stray", .role = LAB_ROLE_BUG, .what = "reads one past", .param = 8, .asan = 1},
    {.name = "bug-inside", .role = LAB_ROLE_BUG, .what = "claims ASan flags it, reads inside", .param = 3, .asan = 1},
};
static const lab_incident stray = {.id = "9201-stray", .title = "t", .variants = stray_variants,
                                   .n_variants = 4, .run_cpu = run_stray, .timeout_s = 30};

static const lab_case_record *find(const lab_case_record *recs, size_t n, const char *variant)
{
    for (size_t i = 0; i < n; ++i)
        if (!strcmp(recs[i].variant->name, variant)) return &recs[i];
    cr_assert_fail("no case of %s", variant);
    return NULL;
}

Test(asan, a_report_is_the_cases_fail_in_an_asan_build)
{
    if (!lab_asan_active()) cr_skip_test("not an AddressSanitizer build (make test SANITIZE=address runs this)");
    const lab_incident *incs[] = {&stray};
    uint64_t seeds[1] = {1};
    lab_replay_opts o = {
        .what = {.incidents = incs, .n_incidents = 1, .seeds = seeds, .n_seeds = 1, .backend = LAB_BACKEND_CPU},
        .how = {.jobs = 1, .lab_bin = "build/lab", .root = "."}};
    FILE *devnull = fopen("/dev/null", "w");
    lab_verdict v;
    lab_case_record *recs;
    size_t n;
    cr_assert_eq(lab_replay_run(&o, devnull, &v, &recs, &n), LAB_OK, "%s", lab_err_msg());
    fclose(devnull);
    cr_assert_eq(n, 4);
    const lab_case_record *r = find(recs, n, "fix-inside");
    cr_expect_eq(r->o.outcome, LAB_OUT_PASS, "%s", r->o.r.detail);
    r = find(recs, n, "fix-stray");
    cr_expect_eq(r->o.outcome, LAB_OUT_FAIL, "a report fails a fix: %s %s", lab_outcome_name(r->o.outcome), r->o.error);
    cr_expect(strstr(r->o.r.detail, "AddressSanitizer: use-after-poison: READ of size 4") != NULL, "%s", r->o.r.detail);
    cr_expect(strstr(r->o.r.detail, "(0 bytes past the end of buf[8])") != NULL, "%s", r->o.r.detail);
    cr_expect_eq(lab_result_get(&r->o.r, "asan_reports"), 1.0);
    r = find(recs, n, "bug-stray");
    cr_expect_eq(r->o.outcome, LAB_OUT_FAIL, "the report detects the bug");
    r = find(recs, n, "bug-inside");
    cr_expect_eq(r->o.outcome, LAB_OUT_PASS, "unflagged `asan` bug must PASS (an XPASS): %s", r->o.r.detail);
    cr_expect(strstr(r->o.r.detail, "AddressSanitizer found nothing") != NULL, "%s", r->o.r.detail);
    cr_expect(!v.ok, "a fix flagged by ASan and an unflagged bug: NOT OK");
    free(recs);
}

/* The lab's memory bug: 0001's unpadded layout, flagged by ASan on every seed; its fixes clean. */
Test(asan, crf_oob_bug_flagged_and_fixes_clean, .timeout = 300)
{
    if (!lab_asan_active()) cr_skip_test("not an AddressSanitizer build (make test SANITIZE=address runs this)");
    const lab_incident *inc = lab_incident_find("0001");
    cr_assert_not_null(inc);
    const lab_incident *incs[] = {inc};
    uint64_t seeds[3] = {1, 2, 3};
    lab_replay_opts o = {
        .what = {.incidents = incs, .n_incidents = 1, .seeds = seeds, .n_seeds = 3, .backend = LAB_BACKEND_CPU},
        .how = {.jobs = 2, .lab_bin = "build/lab", .root = "."}};
    FILE *devnull = fopen("/dev/null", "w");
    lab_verdict v;
    lab_case_record *recs;
    size_t n;
    cr_assert_eq(lab_replay_run(&o, devnull, &v, &recs, &n), LAB_OK, "%s", lab_err_msg());
    fclose(devnull);
    for (size_t i = 0; i < n; ++i) {
        int bug = recs[i].variant->role == LAB_ROLE_BUG;
        cr_expect_eq(recs[i].o.outcome, bug ? LAB_OUT_FAIL : LAB_OUT_PASS, "%s seed %llu: %s", recs[i].variant->name,
                     (unsigned long long)recs[i].seed, recs[i].o.r.detail);
        cr_expect_eq(strncmp(recs[i].o.r.detail, "AddressSanitizer: ", 18) == 0, bug, "%s: %s", recs[i].variant->name,
                     recs[i].o.r.detail);
    }
    cr_expect(v.ok, "%s", v.line);
    free(recs);
}

/* The contract: `asan` is a bug's claim, detected by the report made its FAIL. */
Test(asan, asan_variants_are_bugs_detected_by_fail)
{
    size_t n, claims = 0;
    const lab_incident *const *all = lab_incident_all(&n);
    for (size_t i = 0; i < n; ++i)
        for (int v = 0; v < all[i]->n_variants; ++v) {
            const lab_variant *var = &all[i]->variants[v];
            if (!var->asan) continue;
            claims++;
            cr_expect_eq(var->role, LAB_ROLE_BUG, "%s/%s: only a bug claims an ASan finding", all[i]->id, var->name);
            cr_expect(!var->detect || (var->detect & LAB_DETECT_FAIL), "%s/%s: detect must include FAIL", all[i]->id,
                      var->name);
        }
    cr_expect_geq(claims, 1, "0001 bug-unpadded claims one");
}
