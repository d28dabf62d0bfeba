/* test_crf_guards: incident 0001's guards under stress: each defensive guard removed in turn under drifted parameters and on padded lanes; prints the README's table and checks what it claims. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>

#include "crf_guards.h"

static const unsigned cg_flags[4] = {LAB_SEMICRF_GUARD_NEGINF, LAB_SEMICRF_GUARD_EPS, LAB_SEMICRF_GUARD_CLAMP_IN,
                                     LAB_SEMICRF_GUARD_CLAMP_LOG};

/* The fixed kernel on seed 3 (T = 100) and seed 1 (T = 200), parameters drifted to 25, 50 and 100 (and the
 * benign draw, about 1.2): which guards change a bit or make a NaN. */
Test(crf_guards, kernel_under_drift_each_guard_removed, .timeout = 300)
{
    const uint64_t seeds[] = {3, 1};
    const double drifts[] = {1.2, 25, 50, 100};
    for (int si = 0; si < 2; ++si)
        for (int di = 0; di < 4; ++di)
            for (int g = 0; g < 4; ++g) {
                crf_guards_row row;
                cr_assert_eq(crf_guards_kernel(seeds[si], drifts[di], cg_flags[g], &row), LAB_OK, "%s", lab_err_msg());
                printf("guards kernel seed %llu drift %g without %-9s: %zu of %zu values changed, %zu NaN, %zu inf, "
                       "largest change %.3g, max rel err %.3g\n", (unsigned long long)seeds[si], drifts[di],
                       crf_guards_name(cg_flags[g]), row.bits_changed, row.n, row.nan, row.inf, row.max_change,
                       row.max_rel_err);
                cr_expect_lt(row.max_change, 1e-30, "a changed value is one of the tiny marginals");
                cr_expect_eq(row.nan + row.inf, 0, "drift %g without %s", drifts[di], crf_guards_name(cg_flags[g]));
                /* The NEG_INF and epsilon guards never change a bit of this kernel: its logsumexps never see an
                 * all-NEG_INF input, and 1e-10 vanishes next to a sum >= 1. */
                if (cg_flags[g] == LAB_SEMICRF_GUARD_NEGINF || cg_flags[g] == LAB_SEMICRF_GUARD_EPS ||
                    cg_flags[g] == LAB_SEMICRF_GUARD_CLAMP_IN)
                    cr_expect_eq(row.bits_changed, 0, "drift %g without %s", drifts[di], crf_guards_name(cg_flags[g]));
            }
}

/* Padded lanes: the logsumexp over 64 lanes with padding, all padding, all -inf; the marginals of padding lanes
 * and of real lanes with an inconsistent log Z. */
Test(crf_guards, padded_lanes_each_guard_removed, .timeout = 60)
{
    for (int k = 0; k < CRF_GUARDS_NKIND; ++k)
        for (int g = 0; g < 4; ++g) {
            crf_guards_row row;
            cr_assert_eq(crf_guards_padded((crf_guards_kind)k, 1, 50.0, cg_flags[g], &row), LAB_OK);
            printf("guards padded %-34s without %-9s: %4zu of %zu changed, %4zu NaN, %4zu inf\n",
                   crf_guards_kind_name((crf_guards_kind)k), crf_guards_name(cg_flags[g]), row.bits_changed, row.n,
                   row.nan, row.inf);
            int neginf = cg_flags[g] == LAB_SEMICRF_GUARD_NEGINF, clog = cg_flags[g] == LAB_SEMICRF_GUARD_CLAMP_LOG;
            if (k == CRF_GUARDS_LSE_ALL_MINUS_INF && neginf) cr_expect_eq(row.nan, row.n, "-inf - -inf is NaN");
            else if (k == CRF_GUARDS_MARG_REAL && clog) cr_expect_gt(row.inf, 0, "exp of a log-marginal above 88.7");
            else if (!(k == CRF_GUARDS_MARG_PADDED && clog) && !(k == CRF_GUARDS_MARG_REAL && clog))
                cr_expect_eq(row.nan + row.inf, 0, "kind %d without %s", k, crf_guards_name(cg_flags[g]));
            if (cg_flags[g] == LAB_SEMICRF_GUARD_EPS) cr_expect_eq(row.bits_changed, 0);
            if (k == CRF_GUARDS_LSE_ALL_PAD && neginf) cr_expect_eq(row.bits_changed, 0, "-1e9 + log 64 rounds to -1e9");
        }
    crf_guards_row bad;
    cr_expect_eq(crf_guards_padded(CRF_GUARDS_NKIND, 1, 50.0, 0, &bad), LAB_ERR_ARG);
    cr_expect_eq(crf_guards_kernel(1, 0.0, 0, &bad), LAB_ERR_ARG);
}
