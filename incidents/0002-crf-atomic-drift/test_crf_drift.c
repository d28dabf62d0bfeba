/* test_crf_drift: incident 0002 (float32 atomic drift detected, float64 and deterministic fixes reproducible and accurate, training drift) and the write-up's defensive guards (which change anything, and where). */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_test_case.h"
#include "crf_drift.h"
#include "lab_golden.h"
#include "lab_incident.h"
#include "lab_semicrf.h"
#ifdef LAB_HAVE_CUDA
#include "lab_cuda.h"
#endif

#define GOLDEN_DIR "incidents/0002-crf-atomic-drift/golden"

static lab_case_result run_case(const char *variant, uint64_t seed)
{
    return lab_test_run(&crf_drift_incident, variant, seed, ".");
}

Test(crf_drift, registered)
{
    const lab_incident *inc = lab_incident_find("0002");
    cr_assert_eq(inc, &crf_drift_incident);
    cr_expect_eq(lab_incident_variant(inc, "bug-f32-atomic")->role, LAB_ROLE_BUG);
    cr_expect_eq(lab_incident_variant(inc, "fix-f64-atomic")->role, LAB_ROLE_FIX);
    cr_expect_eq(lab_incident_variant(inc, "fix-deterministic")->role, LAB_ROLE_FIX);
    cr_expect_not_null(inc->figures);
    cr_expect_not_null(inc->bench);
#ifndef LAB_HAVE_CUDA
    cr_expect_eq(inc->bench(stdout), LAB_ERR_UNSUPPORTED, "no CUDA in this build: the bench is a skip");
#else
    if (lab_cuda_ready(NULL, 0) == LAB_ERR_UNSUPPORTED)
        cr_expect_eq(inc->bench(stdout), LAB_ERR_UNSUPPORTED, "no GPU: the bench is a skip");
#endif
}

/* T = 100 seeds (3, 6, 9): the cheap ones. */
Test(crf_drift, bug_detected_and_fixes_pass, .timeout = 120)
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

/* Deterministic: the same bits under many schedules. */
Test(crf_drift, deterministic_bitwise_over_schedules)
{
    lab_semicrf_problem p;
    cr_assert_eq(lab_semicrf_case_problem(&p, 12), LAB_OK);
    lab_semicrf_out first;
    lab_semicrf_config cfg = {LAB_SEMICRF_LAYOUT_PADDED, LAB_SEMICRF_ACC_DETERMINISTIC, LAB_SEMICRF_GUARDS_ALL, 12, 1};
    cr_assert_eq(lab_semicrf_emulate(&p, &cfg, &first), LAB_OK);
    for (uint64_t k = 2; k <= 5; ++k) {
        lab_semicrf_out o;
        cfg.schedule_seed = k * 7919u;
        cr_assert_eq(lab_semicrf_emulate(&p, &cfg, &o), LAB_OK);
        lab_semicrf_r2r d;
        lab_semicrf_run_to_run(&p, &first, &o, &d);
        cr_expect_eq(d.n_diff, 0u, "schedule %llu", (unsigned long long)cfg.schedule_seed);
        lab_semicrf_out_free(&o);
    }
    lab_semicrf_out_free(&first);
    lab_semicrf_problem_free(&p);
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

Test(crf_drift, goldens_verify)
{
    lab_golden_manifest m;
    cr_assert_eq(lab_golden_manifest_read(GOLDEN_DIR, &m), LAB_OK, "%s", lab_err_msg());
    size_t ok = 0;
    cr_expect_eq(lab_golden_verify(GOLDEN_DIR, &m, &ok), LAB_OK, "%s", lab_err_msg());
    cr_expect_eq(ok, 6u);
    lab_golden_manifest_free(&m);
}

#ifdef LAB_HAVE_CUDA
/* On a GPU: the deterministic fix gives the same bits over 20 runs. */
Test(crf_drift, cuda_deterministic_bitwise_20_runs, .timeout = 300)
{
    char why[240];
    lab_status st = lab_cuda_ready(why, sizeof why);
    if (st == LAB_ERR_UNSUPPORTED) cr_skip_test("no GPU: %s", why);
    cr_assert_eq(st, LAB_OK, "%s", lab_err_msg());
    lab_semicrf_problem p;
    cr_assert_eq(lab_semicrf_case_problem(&p, 2), LAB_OK);
    lab_semicrf_config cfg = {LAB_SEMICRF_LAYOUT_PADDED, LAB_SEMICRF_ACC_DETERMINISTIC, LAB_SEMICRF_GUARDS_ALL, 2, 0};
    lab_semicrf_out first;
    cr_assert_eq(lab_semicrf_cuda_run(&p, &cfg, 1, &first, NULL), LAB_OK, "%s", lab_err_msg());
    for (int i = 1; i < 20; ++i) {
        lab_semicrf_out o;
        cr_assert_eq(lab_semicrf_cuda_run(&p, &cfg, 1, &o, NULL), LAB_OK, "%s", lab_err_msg());
        lab_semicrf_r2r d;
        lab_semicrf_run_to_run(&p, &first, &o, &d);
        cr_expect_eq(d.n_diff, 0u, "run %d: %zu values differ (max %.3g)", i, d.n_diff, d.max);
        lab_semicrf_out_free(&o);
    }
    lab_semicrf_out_free(&first);
    lab_semicrf_problem_free(&p);
}
#endif

/* ---- the defensive guards --------------------------------------------------------------------- */

static unsigned bits(float f)
{
    unsigned u;
    memcpy(&u, &f, 4);
    return u;
}

/* NEG_INF guard: with the finite sentinel -1e9 it changes nothing in float32 (log n is below half an ulp
 * of 1e9); with a true -inf it turns NaN (-inf - -inf) into NEG_INF. */
Test(guards, neginf_guard_matters_only_for_true_minus_inf)
{
    float sent[4] = {LAB_SEMICRF_NEG_INF, LAB_SEMICRF_NEG_INF, LAB_SEMICRF_NEG_INF, LAB_SEMICRF_NEG_INF};
    cr_expect_eq(bits(lab_semicrf_lse_f32(sent, 4, 0)), bits(lab_semicrf_lse_f32(sent, 4, LAB_SEMICRF_GUARD_NEGINF)));
    float ninf[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    cr_expect(isnan(lab_semicrf_lse_f32(ninf, 4, 0)));
    cr_expect_eq(lab_semicrf_lse_f32(ninf, 4, LAB_SEMICRF_GUARD_NEGINF), LAB_SEMICRF_NEG_INF);
}

/* Epsilon inside the log: the sum it is added to is >= 1 whenever the max is finite (the max term is
 * exp(0)), and 1e-10 is below half an ulp of 1; so it never changes a bit. Over 20000 random vectors,
 * including all-sentinel ones and ones with -inf entries. */
Test(guards, epsilon_never_changes_a_bit)
{
    uint64_t state = 88172645463325252ull;
    size_t changed = 0;
    for (int it = 0; it < 20000; ++it) {
        float x[30];
        int n = 1 + it % 30;
        for (int i = 0; i < n; ++i) {
            state ^= state << 13, state ^= state >> 7, state ^= state << 17;
            int kind = (int)(state % 10);
            x[i] = kind == 0 ? LAB_SEMICRF_NEG_INF : kind == 1 ? -INFINITY : (float)((double)(state >> 11) / 9007199254740992.0 * 200.0 - 100.0);
        }
        for (unsigned g = 0; g < 2; ++g) {
            unsigned base = g ? LAB_SEMICRF_GUARD_NEGINF : 0u;
            float a = lab_semicrf_lse_f32(x, n, base), b = lab_semicrf_lse_f32(x, n, base | LAB_SEMICRF_GUARD_EPS);
            changed += bits(a) != bits(b) && !(isnan(a) && isnan(b));
        }
    }
    cr_expect_eq(changed, 0u);
}

/* Input clamping: no bit changes on a realistic case (all inputs far inside +-1e6); it changes the
 * marginal where an input is beyond 1e6, and there it can make garbage look valid: -inf + +inf is NaN
 * unclamped and a finite probability clamped. */
Test(guards, input_clamp_changes_only_beyond_1e6)
{
    float nanv = lab_semicrf_marginal_f32(-INFINITY, 0.0f, INFINITY, 10.0f, 0);
    float clamped = lab_semicrf_marginal_f32(-INFINITY, 0.0f, INFINITY, 10.0f, LAB_SEMICRF_GUARD_CLAMP_IN);
    cr_expect(isnan(nanv));
    cr_expect(isfinite(clamped) && clamped > 0.0f, "clamped marginal %g", (double)clamped);
    cr_expect(isnan(lab_semicrf_marginal_f32(NAN, 0.0f, 0.0f, 0.0f, LAB_SEMICRF_GUARD_CLAMP_IN)), "NaN stays NaN");
}

/* The log-marginal clamp: the upper bound never acts (a valid log-marginal is <= 0 up to rounding); the
 * lower bound lifts marginals below e^-80 to e^-80 = 1.8e-35; it turns +inf into e^80. */
Test(guards, log_marginal_clamp_lifts_tiny_marginals)
{
    float tiny = lab_semicrf_marginal_f32(-100.0f, 0.0f, 0.0f, 0.0f, 0);
    float lifted = lab_semicrf_marginal_f32(-100.0f, 0.0f, 0.0f, 0.0f, LAB_SEMICRF_GUARD_CLAMP_LOG);
    cr_expect_lt(tiny, 1e-43f);
    cr_expect_eq(lifted, expf(-80.0f));
    cr_expect(isinf(lab_semicrf_marginal_f32(INFINITY, 0.0f, 0.0f, 0.0f, 0)));
    cr_expect(isfinite(lab_semicrf_marginal_f32(INFINITY, 0.0f, 0.0f, 0.0f, LAB_SEMICRF_GUARD_CLAMP_LOG)));
}

/* Each guard removed from the fixed kernel on realistic cases (T = 100 and 500, same schedule): the
 * count of gradient values whose bits change. Measured: none for the NEG_INF guard, the epsilon and the
 * input clamp; the log-marginal clamp changes a few hundred values, each by less than 1e-30 (gradients
 * that are themselves sums of marginals below e^-80, lifted to e^-80). */
Test(guards, no_guard_changes_the_fixed_kernel_on_realistic_inputs, .timeout = 120)
{
    static const unsigned flags[4] = {LAB_SEMICRF_GUARD_NEGINF, LAB_SEMICRF_GUARD_EPS, LAB_SEMICRF_GUARD_CLAMP_IN,
                                      LAB_SEMICRF_GUARD_CLAMP_LOG};
    const uint64_t seeds[2] = {3, 5};
    for (int si = 0; si < 2; ++si) {
        lab_semicrf_problem p;
        cr_assert_eq(lab_semicrf_case_problem(&p, seeds[si]), LAB_OK);
        lab_semicrf_out all;
        lab_semicrf_config cfg = {LAB_SEMICRF_LAYOUT_PADDED, LAB_SEMICRF_ACC_DETERMINISTIC, LAB_SEMICRF_GUARDS_ALL, 1, 1};
        cr_assert_eq(lab_semicrf_emulate(&p, &cfg, &all), LAB_OK);
        for (int g = 0; g < 4; ++g) {
            lab_semicrf_out o;
            cfg.guards = LAB_SEMICRF_GUARDS_ALL & ~flags[g];
            cr_assert_eq(lab_semicrf_emulate(&p, &cfg, &o), LAB_OK);
            lab_semicrf_r2r d;
            lab_semicrf_run_to_run(&p, &all, &o, &d);
            if (flags[g] == LAB_SEMICRF_GUARD_CLAMP_LOG) {
                cr_expect_gt(d.n_diff, 0u, "T=%d: the lower clamp lifts tiny marginals", p.T);
                cr_expect_lt(d.max, 1e-30, "T=%d: only tiny values move: %.3g", p.T, d.max);
            } else
                cr_expect_eq(d.n_diff, 0u, "T=%d without guard %u: %zu values change (max %.3g)", p.T, flags[g], d.n_diff, d.max);
            lab_semicrf_out_free(&o);
        }
        lab_semicrf_out_free(&all);
        lab_semicrf_problem_free(&p);
    }
}
