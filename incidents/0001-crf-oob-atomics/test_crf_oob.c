/* test_crf_oob: incident 0001: the bug's stray loads and atomics and the fixes' none, the NaN that depends on what neighbouring memory holds, the write-up's contention belief as a model check of the CPU emulation, and the CUDA kernel against the emulation (the shared kernel's own tests: tests/test_semicrf.c). */
#include <criterion/criterion.h>

#include <string.h>

#include "lab_test_case.h"
#include "crf_oob.h"
#include "lab_incident.h"
#include "lab_semicrf.h"

static lab_case_result run_case(const char *variant, uint64_t seed)
{
    return lab_test_run(&crf_oob_incident, variant, seed, ".");
}

/* Seeds 3..7 (every T): the bug loads and writes outside its allocations, both fixes do not, and the clamp makes
 * lanes of one atomic share an address (what the write-up feared). */
Test(crf_oob, bug_strays_out_of_bounds_and_the_fixes_do_not, .timeout = 120)
{
    for (uint64_t s = 3; s <= 7; ++s) {
        lab_case_result b = run_case("bug-unpadded", s), f = run_case("fix", s), k = run_case("clamp-first-fix", s);
        cr_expect_eq(b.passed, 0, "seed %llu bug: %s", (unsigned long long)s, b.detail);
        cr_expect_gt(lab_result_get(&b, "oob_writes"), 0.0, "seed %llu", (unsigned long long)s);
        cr_expect_gt(lab_result_get(&b, "oob_reads"), 0.0, "seed %llu", (unsigned long long)s);
        cr_expect_eq(f.passed, 1, "seed %llu fix: %s", (unsigned long long)s, f.detail);
        cr_expect_eq(k.passed, 1, "seed %llu clamp: %s", (unsigned long long)s, k.detail);
        cr_expect_eq(lab_result_get(&f, "oob_writes"), 0.0);
        cr_expect_eq(lab_result_get(&k, "oob_writes"), 0.0);
        cr_expect_gt(lab_result_get(&k, "same_addr_lanes"), 0.0, "the clamp makes lanes share addresses");
    }
}

/* Whether the bug's NaN appears depends on the neighbours: stale bits and sentinel-holding tensors give
 * NaN (inf * 0, NaN * 0), zeros and finite activations do not, though the OOB happens on all of them. */
Test(crf_oob, nan_depends_on_the_neighbouring_memory, .timeout = 120)
{
    int seen[4] = {0, 0, 0, 0};
    for (uint64_t s = 1; s <= 40 && !(seen[0] && seen[1] && seen[2] && seen[3]); ++s) {
        lab_semicrf_guard_kind k = lab_semicrf_guard_kind_of(s);
        if (seen[k] || lab_semicrf_T_of_seed(s) != 100) continue;
        seen[k] = 1;
        crf_oob_verdict v;
        cr_assert_eq(crf_oob_run(s, LAB_SEMICRF_LAYOUT_UNPADDED, 0, NULL, NULL, &v), LAB_OK, "%s", lab_err_msg());
        cr_expect_gt(v.oob_writes, 0u);
        if (k == LAB_SEMICRF_GUARD_ZEROS || k == LAB_SEMICRF_GUARD_FINITE)
            cr_expect_eq(v.err.nonfinite, 0u, "seed %llu (%s)", (unsigned long long)s, lab_semicrf_guard_kind_name(k));
        else
            cr_expect_gt(v.err.nonfinite, 0u, "seed %llu (%s)", (unsigned long long)s, lab_semicrf_guard_kind_name(k));
    }
    cr_expect(seen[0] && seen[1] && seen[2] && seen[3], "all four neighbour kinds met");
}

/* The write-up's belief: 25 lanes atomically adding to one address corrupt the sum. This is a check of the CPU
 * emulation's model, not evidence about a GPU: the emulation applies every atomic as a serialised
 * read-modify-write (lab_semicrf_arena_atomic_add), so it cannot lose an update by construction; what this test
 * pins is that, under one schedule, the clamped layout's extra atomics add exact zeros, so its gradients are bit
 * for bit the padded layout's (same guards). Whether real hardware atomics lose nothing under that contention is
 * a question for a GPU run (`lab replay --incident 0001 --backend cuda`: the clamp-first-fix variant against
 * the float64 reference), not for this test. */
Test(crf_oob, emulation_model_clamped_contention_adds_exact_zeros)
{
    lab_semicrf_problem p;
    cr_assert_eq(lab_semicrf_case_problem(&p, 10), LAB_OK);
    lab_semicrf_out a, b;
    lab_semicrf_config cp = {LAB_SEMICRF_LAYOUT_PADDED, LAB_SEMICRF_ACC_F32_ATOMIC, 0, 10, 77};
    lab_semicrf_config cc = {LAB_SEMICRF_LAYOUT_CLAMPED, LAB_SEMICRF_ACC_F32_ATOMIC, 0, 10, 77};
    cr_assert_eq(lab_semicrf_emulate(&p, &cp, &a), LAB_OK);
    cr_assert_eq(lab_semicrf_emulate(&p, &cc, &b), LAB_OK);
    cr_expect_gt(b.same_addr_lanes, 1000000u);
    size_t n = (size_t)p.B * (size_t)(p.T + 1) * (size_t)p.C, bad = 0;
    for (size_t i = 0; i < n; ++i) bad += a.g_cum[i] != b.g_cum[i]; /* == treats -0 and +0 alike */
    for (size_t i = 0; i < (size_t)p.C * (size_t)p.C; ++i) bad += a.g_trans[i] != b.g_trans[i];
    for (size_t i = 0; i < (size_t)p.K * (size_t)p.C; ++i) bad += a.g_dur[i] != b.g_dur[i];
    cr_expect_eq(bad, 0u, "%zu values differ", bad);
    lab_semicrf_out_free(&a);
    lab_semicrf_out_free(&b);
    lab_semicrf_problem_free(&p);
}

#ifdef LAB_HAVE_CUDA
/* On a GPU: the CUDA fix agrees with the float64 reference; the unpadded layout strays exactly as often
 * as the CPU emulation counts for the same seed; the clamp has no strays. */
Test(crf_oob, cuda_fix_agrees_and_bug_strays_as_on_cpu, .timeout = 300)
{
    lab_test_need_gpu();
    const lab_variant *fix = lab_incident_variant(&crf_oob_incident, "fix");
    const lab_variant *bug = lab_incident_variant(&crf_oob_incident, "bug-unpadded");
    const lab_variant *clamp = lab_incident_variant(&crf_oob_incident, "clamp-first-fix");
    for (uint64_t s = 1; s <= 3; ++s) {
        lab_case cf;
        char cf_gdir[4096];
        lab_case_init(&cf, &crf_oob_incident, fix, s, LAB_BACKEND_CUDA, ".", cf_gdir, sizeof cf_gdir);
        lab_case cb = cf, cc = cf;
        cb.variant = bug;
        cc.variant = clamp;
        lab_case_result rf, rb, rc;
        memset(&rf, 0, sizeof rf);
        memset(&rb, 0, sizeof rb);
        memset(&rc, 0, sizeof rc);
        cr_assert_eq(lab_case_run(&cf, &rf), LAB_OK, "%s", lab_err_msg());
        cr_assert_eq(lab_case_run(&cb, &rb), LAB_OK, "%s", lab_err_msg());
        cr_assert_eq(lab_case_run(&cc, &rc), LAB_OK, "%s", lab_err_msg());
        cr_expect_eq(rf.passed, 1, "seed %llu fix: %s", (unsigned long long)s, rf.detail);
        cr_expect_eq(rc.passed, 1, "seed %llu clamp: %s", (unsigned long long)s, rc.detail);
        cr_expect_eq(rb.passed, 0, "seed %llu bug: %s", (unsigned long long)s, rb.detail);
        crf_oob_verdict cpu;
        cr_assert_eq(crf_oob_run(s, LAB_SEMICRF_LAYOUT_UNPADDED, 0, NULL, NULL, &cpu), LAB_OK, "%s", lab_err_msg());
        cr_expect_gt(lab_result_get(&rb, "oob_writes"), 0.0);
        cr_expect_eq(lab_result_get(&rb, "oob_writes"), (double)cpu.oob_writes, "seed %llu", (unsigned long long)s);
        cr_expect_eq(lab_result_get(&rb, "oob_reads"), (double)cpu.oob_reads, "seed %llu", (unsigned long long)s);
        cr_expect_eq(lab_result_get(&rc, "oob_writes"), 0.0);
    }
}
#endif
