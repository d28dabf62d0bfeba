/* test_crf_drift: incident 0002: the float32 atomics' run-to-run difference detected and growing with T, the float64 and deterministic fixes reproducible and as accurate as the float32 forward allows, the drift in training (the shared kernel's own tests, the write-up's guards among them: tests/test_semicrf.c). */
#include <criterion/criterion.h>

#include "lab_test_case.h"
#include "crf_drift.h"
#include "lab_incident.h"
#include "lab_semicrf.h"

static lab_case_result run_case(const char *variant, uint64_t seed)
{
    return lab_test_run(&crf_drift_incident, variant, seed, ".");
}

/* T = 100 seeds (3, 6, 9): the cheap ones. What separates bug and fixes is the run-to-run difference of two
 * schedules: above its tolerance for the float32 atomics, below it for float64 atomics, zero for the
 * deterministic accumulation. */
Test(crf_drift, run_to_run_difference_separates_bug_and_fixes, .timeout = 120)
{
    for (uint64_t s = 3; s <= 9; s += 3) {
        lab_case_result b = run_case("bug-f32-atomic", s), f = run_case("fix-f64-atomic", s), d = run_case("fix-deterministic", s);
        cr_expect_eq(b.passed, 0, "seed %llu: %s", (unsigned long long)s, b.detail);
        cr_expect_gt(lab_result_get(&b, "r2r"), CRF_DRIFT_R2R_TOL);
        cr_expect_eq(f.passed, 1, "seed %llu: %s", (unsigned long long)s, f.detail);
        cr_expect_lt(lab_result_get(&f, "r2r"), CRF_DRIFT_R2R_TOL);
        cr_expect_eq(d.passed, 1, "seed %llu: %s", (unsigned long long)s, d.detail);
        cr_expect_eq(lab_result_get(&d, "r2r"), 0.0);
        cr_expect_eq(lab_result_get(&d, "r2r_diff_frac"), 0.0);
    }
}

/* The drift grows with T: the same seed family at T = 100 and T = 500. */
Test(crf_drift, bug_difference_grows_with_T, .timeout = 120)
{
    crf_drift_verdict v100, v500;
    cr_assert_eq(crf_drift_run(3, LAB_SEMICRF_ACC_F32_ATOMIC, NULL, NULL, &v100), LAB_OK);
    cr_assert_eq(crf_drift_run(5, LAB_SEMICRF_ACC_F32_ATOMIC, NULL, NULL, &v500), LAB_OK);
    cr_assert_eq(v100.T, 100);
    cr_assert_eq(v500.T, 500);
    cr_expect_gt(v500.r2r_measure, 2.0 * v100.r2r_measure, "T=500 %.3g, T=100 %.3g", v500.r2r_measure, v100.r2r_measure);
}

/* The fixes' errors against the float64 reference are those of the bug: the float32 forward dominates. */
Test(crf_drift, fixes_error_same_order_as_bug)
{
    crf_drift_verdict b, f, d;
    cr_assert_eq(crf_drift_run(6, LAB_SEMICRF_ACC_F32_ATOMIC, NULL, NULL, &b), LAB_OK);
    cr_assert_eq(crf_drift_run(6, LAB_SEMICRF_ACC_F64_ATOMIC, NULL, NULL, &f), LAB_OK);
    cr_assert_eq(crf_drift_run(6, LAB_SEMICRF_ACC_DETERMINISTIC, NULL, NULL, &d), LAB_OK);
    cr_expect(d.err.max < 2.0 * f.err.max && f.err.max < 2.0 * d.err.max, "det %.3g f64 %.3g", d.err.max, f.err.max);
    cr_expect(d.err.max <= d.tol);
}

Test(crf_drift, training_separation_bug_only, .timeout = 60)
{
    double sep[20];
    int nan_step;
    cr_assert_eq(crf_drift_train(7, 30, LAB_SEMICRF_ACC_F32_ATOMIC, 20, 0.5f, sep, NULL, &nan_step), LAB_OK);
    cr_expect_eq(nan_step, -1);
    cr_expect_gt(sep[19], 0.0);
    cr_expect_lt(sep[19], 1e-4);
    cr_assert_eq(crf_drift_train(7, 30, LAB_SEMICRF_ACC_DETERMINISTIC, 20, 0.5f, sep, NULL, &nan_step), LAB_OK);
    cr_expect_eq(nan_step, -1);
    for (int i = 0; i < 20; ++i) cr_expect_eq(sep[i], 0.0, "step %d", i);
}
