/* test_pow_grad: incident 0004: the exp/log bug is caught on every seed, the fix holds, its caveats are pinned, goldens verify. */
#include <criterion/criterion.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_test_case.h"
#include "lab_golden.h"
#include "lab_incident.h"
#include "lab_rng.h"
#include "lab_tensor.h"
#include "pow_grad.h"
#ifdef LAB_HAVE_CUDA
#include "lab_cuda.h"
#endif

#define GOLDEN_DIR "incidents/" LAB_INCIDENT_ID "/golden"

/* The exponent as the gradient graph had it: a value known only at run time. */
static float runtime(float v)
{
    volatile float r = v;
    return r;
}

/* Runs one CPU case of a variant from the repository root (the tests' working directory). */
static lab_case_result run_case(const char *variant, uint64_t seed, const char *root)
{
    return lab_test_run(&pow_grad_incident, variant, seed, root);
}

/* ---- the rule by hand ------------------------------------------------------------------------ */

/* The write-up's example: y = (-2)^2 = 4, dy/dbase = 2 * (-2)^1 = -4. */
Test(pow_grad, hand_example_minus_two_squared)
{
    float e = runtime(2.0f), x = -2.0f, y = powf(x, e);
    cr_assert_eq(y, 4.0f);
    cr_expect_eq(pow_grad_vjp_fix(1.0f, x, y, e), -4.0f);
    cr_expect(isnan(pow_grad_vjp_bug_exp_log(1.0f, x, e)), "log(-2) makes the old rule NaN");
    cr_expect(isnan(logf(x)), "the root of it");
    /* For a positive base the old rule is right (up to exp/log rounding). */
    float bug_pos = pow_grad_vjp_bug_exp_log(1.0f, 2.0f, e);
    cr_expect(fabsf(bug_pos - 4.0f) <= 4.0f * 4.0f * FLT_EPSILON, "old rule at +2: %a", bug_pos);
    cr_expect_eq(pow_grad_vjp_fix(1.0f, 2.0f, powf(2.0f, e), e), 4.0f);
}

/* Why a select and not a mask multiply: at base 0, y/base is 0/0 = NaN and NaN * 0 is still NaN. */
Test(pow_grad, zero_guard_is_a_select)
{
    float e = runtime(2.0f), x = runtime(0.0f), y = powf(x, e);
    float masked = (y / x) * (float)(x != 0.0f);
    cr_expect(isnan(masked));
    cr_expect_eq(pow_grad_vjp_fix(3.0f, x, y, e), 0.0f, "derivative of x^2 at 0 is 0");
    cr_expect_eq(pow_grad_vjp_fix(3.0f, -0.0f, y, e), 0.0f, "-0 is a zero base too");
    /* The old rule happens to be right here: exp(1 * log 0) = exp(-inf) = 0. */
    cr_expect_eq(pow_grad_vjp_bug_exp_log(3.0f, x, e), 0.0f);
}

/* ---- caveats of the fix: documented behaviour, not bugs to silence ---------------------------- */

/* The rule returns no exponent gradient: zero, where the true one is g * y * log(base). */
Test(pow_grad, caveat_exponent_gradient_is_zero)
{
    float g = 1.0f, x = 2.0f, e = runtime(3.0f), y = powf(x, e);
    double truth = (double)g * (double)y * log((double)x); /* 8 ln 2 = 5.545 */
    cr_expect_eq(pow_grad_vjp_exponent(g, x, y, e), 0.0f);
    cr_expect(fabs(truth - 5.545177444479562) < 1e-12, "true d/dexp %.17g", truth);
}

/* base 0, exponent 0.5: the true derivative 0.5 * 0^-0.5 is +inf; the fix says 0. (The old rule said
 * exp(-0.5 * log 0) = exp(+inf) = +inf: right, by accident.) */
Test(pow_grad, caveat_base_zero_exponent_half)
{
    float e = runtime(0.5f), x = 0.0f, y = powf(x, e);
    cr_assert_eq(y, 0.0f);
    cr_expect_eq(pow_grad_vjp_fix(1.0f, x, y, e), 0.0f, "fix: 0 where the truth is +inf");
    float bug = pow_grad_vjp_bug_exp_log(1.0f, x, e);
    cr_expect(isinf(bug) && bug > 0, "old rule: %a", bug);
}

/* base 0, exponent 1: y = x, the true derivative is g * 1 = g; the fix says 0 (the select zeroes it),
 * and the old rule NaN (exp(0 * log 0) = exp(0 * -inf) = exp(NaN)). Both wrong: a known gap. */
Test(pow_grad, caveat_base_zero_exponent_one)
{
    float g = 5.0f, e = runtime(1.0f), x = 0.0f, y = powf(x, e);
    cr_assert_eq(y, 0.0f);
    cr_expect_eq(pow_grad_vjp_fix(g, x, y, e), 0.0f, "fix: 0 where the truth is g = 5");
    cr_expect(isnan(pow_grad_vjp_bug_exp_log(g, x, e)));
    /* Away from 0 it is exact: y / x = 1. */
    cr_expect_eq(pow_grad_vjp_fix(g, -3.0f, powf(-3.0f, e), e), g);
}

/* base 0, negative exponent: y = 0^-1 = +inf, the true derivative -1 * 0^-2 = -inf; the fix says 0. */
Test(pow_grad, caveat_base_zero_negative_exponent)
{
    float e = runtime(-1.0f), x = 0.0f, y = powf(x, e);
    cr_assert(isinf(y) && y > 0);
    cr_expect_eq(pow_grad_vjp_fix(1.0f, x, y, e), 0.0f, "fix: 0 where the truth is -inf");
    float bug = pow_grad_vjp_bug_exp_log(1.0f, x, e);
    cr_expect(isinf(bug) && bug < 0, "old rule: %a", bug);
}

/* A negative base with a non-integer exponent has no real power: the forward is NaN and the fix passes
 * that NaN on (y / x), rather than inventing a number. */
Test(pow_grad, negative_base_fractional_exponent_follows_forward)
{
    float e = runtime(0.5f), x = -4.0f, y = powf(x, e);
    cr_assert(isnan(y));
    cr_expect(isnan(pow_grad_vjp_fix(1.0f, x, y, e)));
}

/* ---- the workloads ---------------------------------------------------------------------------- */

/* The lane-serial-then-tree order is the one documented: lane 0 adds y[0] + y[256] + y[512] in turn,
 * and 1 + 2^-24 rounds back to 1 at each step; a tree over all elements would keep 2^-23. */
Test(pow_grad, row_sum_order)
{
    float y[1024] = {0};
    y[0] = 1.0f;
    y[256] = 0x1p-24f;
    y[512] = 0x1p-24f;
    cr_expect_eq(pow_grad_row_sum(y, 1024), 1.0f);
    for (int i = 0; i < 1024; ++i) y[i] = 1.0f;
    cr_expect_eq(pow_grad_row_sum(y, 1024), 1024.0f);
}

/* The inputs come from lab_rng_fill_normal / lab_rng_fill_uniform; tests/test_rng.c holds them to the
 * scalar lab_rng_normal / lab_rng_uniform bit for bit (starts, lengths, edge words). Here: the case's
 * x, w and c are the per-value calls at (seed, stream, row * cols + col), resp. (seed, stream, row), except
 * that x's last row is the padding token, exact zeros. */
Test(pow_grad, inputs_follow_seed_stream_index)
{
    pow_grad_case pc;
    cr_assert_eq(pow_grad_case_init(&pc, 3, 512), LAB_OK);
    pow_grad_inputs(&pc, 42);
    for (size_t i = 0; i < 3 * 512; ++i) {
        float x = i >= 2 * 512 ? 0.0f : lab_rng_normal(42, POW_GRAD_STREAM_X, i);
        float w = pow_grad_upstream_w(lab_rng_uniform(42, POW_GRAD_STREAM_W, i));
        cr_assert(memcmp(&pc.x[i], &x, 4) == 0 && memcmp(&pc.w[i], &w, 4) == 0, "index %zu", i);
        cr_assert(pc.w[i] >= -1.0f && pc.w[i] < 1.0f);
    }
    for (size_t i = 0; i < 3; ++i) {
        float c = lab_rng_normal(42, POW_GRAD_STREAM_C, i);
        cr_expect(memcmp(&pc.c[i], &c, 4) == 0, "row %zu", i);
    }
    pow_grad_case_free(&pc);
    cr_expect_eq(pow_grad_case_init(&pc, 3, 300), LAB_ERR_ARG, "cols must be a multiple of the lanes");
}

/* ---- the criterion over whole cases ----------------------------------------------------------- */

Test(pow_grad, bug_detected_on_every_seed, .timeout = 60)
{
    const uint64_t seeds[] = {1, 7, 123, 987654321};
    for (size_t k = 0; k < sizeof seeds / sizeof seeds[0]; ++k) {
        lab_case_result r = run_case("bug-exp-log", seeds[k], ".");
        cr_expect_eq(r.passed, 0, "seed %llu: %s", (unsigned long long)seeds[k], r.detail);
        double neg = lab_result_get(&r, "negative_bases");
        cr_expect_eq(lab_result_get(&r, "nonfinite_square"), neg, "every negative base, no other");
        cr_expect_eq(lab_result_get(&r, "nonfinite_rms"), neg);
        double frac = lab_result_get(&r, "nonfinite_frac");
        cr_expect(frac > 0.49 && frac < 0.51, "about half NaN: %g", frac);
        cr_expect(strstr(r.detail, "NaN") && strstr(r.detail, "every negative base"), "%s", r.detail);
        cr_expect(isnan(lab_result_get(&r, "max_rel_err_square")));
    }
}

Test(pow_grad, fix_passes_on_seeds_within_tolerance, .timeout = 60)
{
    const uint64_t seeds[] = {1, 2, 7, 123, 987654321};
    for (size_t k = 0; k < sizeof seeds / sizeof seeds[0]; ++k) {
        lab_case_result r = run_case("fix", seeds[k], ".");
        cr_expect_eq(r.passed, 1, "seed %llu: %s", (unsigned long long)seeds[k], r.detail);
        cr_expect_eq(lab_result_get(&r, "nonfinite_frac"), 0.0);
        cr_expect_leq(lab_result_get(&r, "max_rel_err_square"), POW_GRAD_TOL_SQUARE);
        cr_expect_leq(lab_result_get(&r, "max_rel_err_rms"), POW_GRAD_TOL_RMS);
        cr_expect_gt(lab_result_get(&r, "negative_bases"), 0.45 * POW_GRAD_ROWS * POW_GRAD_COLS, "the workload has negative bases");
        double g = lab_result_get(&r, "golden_max_rel_err");
        if (seeds[k] <= 2)
            cr_expect(g <= POW_GRAD_TOL_RMS, "golden seed %llu compared: %g", (unsigned long long)seeds[k], g);
        else
            cr_expect(isnan(g), "no golden at seed %llu", (unsigned long long)seeds[k]);
    }
}

/* A tolerance is only worth something if it fails a gradient that is a little off: 2e-6 relative
 * (about 34 u) on one element of each workload. */
Test(pow_grad, criterion_fails_a_small_error)
{
    pow_grad_case pc;
    cr_assert_eq(pow_grad_case_init(&pc, 64, 1024), LAB_OK);
    pow_grad_inputs(&pc, 9);
    pow_grad_forward(&pc);
    pow_grad_backward(&pc, POW_GRAD_RULE_FIX);
    lab_case_result r;
    memset(&r, 0, sizeof r);
    cr_assert_eq(pow_grad_check(&pc, 9, NULL, &r, NULL), LAB_OK);
    cr_assert_eq(r.passed, 1, "%s", r.detail);
    pc.dx_sq[777] *= 1.000002f;
    memset(&r, 0, sizeof r);
    cr_assert_eq(pow_grad_check(&pc, 9, NULL, &r, NULL), LAB_OK);
    cr_expect_eq(r.passed, 0, "%s", r.detail);
    cr_expect(strstr(r.detail, "over tolerance") != NULL, "%s", r.detail);
    pow_grad_case_free(&pc);
}

/* ---- goldens ---------------------------------------------------------------------------------- */

/* The goldens are the first 64 rows of the full 4096-row reference, bit for bit (rows are independent;
 * that blessing again reproduces them, tests/test_incidents.c checks for every incident). */
Test(pow_grad, goldens_are_the_reference_rows, .timeout = 60)
{
    pow_grad_case pc;
    cr_assert_eq(pow_grad_case_init(&pc, POW_GRAD_ROWS, POW_GRAD_COLS), LAB_OK);
    pow_grad_inputs(&pc, 2);
    size_t n = (size_t)POW_GRAD_GOLDEN_ROWS * POW_GRAD_COLS;
    double *rsq = malloc(n * sizeof *rsq), *rrms = malloc(n * sizeof *rrms);
    cr_assert(rsq && rrms);
    pow_grad_reference(pc.x, pc.w, pc.c, POW_GRAD_GOLDEN_ROWS, POW_GRAD_COLS, (double)pc.e, (double)pc.eps, rsq, rrms);
    lab_golden_manifest m;
    cr_assert_eq(lab_golden_manifest_read(GOLDEN_DIR, &m), LAB_OK, "%s", lab_err_msg());
    lab_tensor t;
    cr_assert_eq(lab_golden_load(GOLDEN_DIR, lab_golden_find(&m, "ref_square_seed2.npy"), &t), LAB_OK, "%s",
                 lab_err_msg());
    cr_expect(memcmp(t.data, rsq, n * sizeof *rsq) == 0);
    lab_tensor_free(&t);
    cr_assert_eq(lab_golden_load(GOLDEN_DIR, lab_golden_find(&m, "ref_rms_seed2.npy"), &t), LAB_OK, "%s",
                 lab_err_msg());
    cr_expect(memcmp(t.data, rrms, n * sizeof *rrms) == 0);
    lab_tensor_free(&t);

    lab_golden_manifest_free(&m);
    free(rsq);
    free(rrms);
    pow_grad_case_free(&pc);
}

/* ---- CUDA ------------------------------------------------------------------------------------- */

#ifdef LAB_HAVE_CUDA
Test(pow_grad, cuda_error_text_names_file_line_and_call)
{
    cr_expect_eq(lab_cuda_fail("k.cu", 12, "cudaMalloc((void **)&p, 4)", "out of memory"), LAB_ERR_DEVICE);
    cr_expect_str_eq(lab_err_msg(), "k.cu:12: cudaMalloc: out of memory");
}

/* Without a usable GPU (this machine, CI) the CUDA cases skip with the reason; with one they must pass
 * (fix) or be caught (bug), on GPU-made inputs identical to the CPU's. */
Test(pow_grad, cuda_skips_cleanly_or_runs, .timeout = 120)
{
    char why[240];
    lab_status ready = lab_cuda_ready(why, sizeof why);
    if (ready == LAB_ERR_UNSUPPORTED) {
        cr_expect(strncmp(why, "no CUDA device: ", 16) == 0, "reason: %s", why);
        cr_skip_test("no GPU: %s", why); /* the runner's skip is tested in tests/test_replay.c */
    }
    const char *names[] = {"fix", "bug-exp-log"};
    for (int k = 0; k < 2; ++k) {
        const lab_variant *v = lab_incident_variant(&pow_grad_incident, names[k]);
        lab_case c;
        char c_gdir[4096];
        lab_case_init(&c, &pow_grad_incident, v, 1, LAB_BACKEND_CUDA, ".", c_gdir, sizeof c_gdir);
        lab_case_result r;
        memset(&r, 0, sizeof r);
        lab_status st = lab_case_run(&c, &r);
        {
            cr_assert_eq(ready, LAB_OK, "%s", why);
            cr_assert_eq(st, LAB_OK, "%s", lab_err_msg());
            cr_expect_eq(lab_result_get(&r, "input_mismatch"), 0.0, "%s", r.detail);
            cr_expect_eq(r.passed, k == 0, "%s: %s", names[k], r.detail);
            if (k == 1) cr_expect(lab_result_get(&r, "nonfinite_frac") > 0.49, "%s", r.detail);
        }
    }
}
#endif
