/* test_nvfp4_fold: incident 0003's folded-global-scale variant: the fold by hand, the census at the E4M3 limits, the loss by magnitude, the bug caught and the fix passing, the production-shape study (opt-in) and CUDA. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_test_case.h"
#include "lab_format.h"
#include "lab_incident.h"
#include "nvfp4_fold.h"
#include "nvfp4_sf.h"

static lab_case_result fold_case(const char *variant, uint64_t seed)
{
    return lab_test_run(&nvfp4_sf_incident, variant, seed, ".");
}

/* The fold by hand: 448 / 448 is 1 exactly; a quotient below 2^-10 flushes to 0; above 448 saturates; a
 * quotient in the subnormal range keeps fewer bits (448 / 2^15 = 0.01367 -> 7 * 2^-9 = 0.01367, 448 / 3e4 =
 * 0.014933 -> 8 * 2^-9 = 2^-6, a 4.6% error where a normal E4M3 value errs at most 6.25%/2 relative). */
Test(nvfp4_fold, fold_by_hand_at_the_e4m3_limits)
{
    uint8_t s448 = lab_e4m3_from_float(448.0f);
    cr_expect_eq(s448, 0x7E);
    cr_expect_eq(lab_e4m3_to_float(nvfp4_fold_scale(s448, 448.0f)), 1.0f);
    cr_expect_eq(nvfp4_fold_scale(s448, 1e6f), 0x00, "448 / 1e6 = 4.5e-4 < 2^-10 flushes");
    cr_expect_eq(nvfp4_fold_scale(s448, 0.5f), 0x7E, "896 saturates to 448");
    cr_expect_eq(lab_e4m3_to_float(nvfp4_fold_scale(s448, 32768.0f)), 7.0f / 512.0f);
    cr_expect_eq(lab_e4m3_to_float(nvfp4_fold_scale(s448, 30000.0f)), 1.0f / 64.0f);
    /* The global scale of a typical tensor is not a power of two: a normal-range scale moves by one rounding. */
    float g = 2688.0f / 7.3f;
    uint8_t sf = lab_e4m3_from_float(200.0f);
    float exact = lab_e4m3_to_float(sf) / g, folded = lab_e4m3_to_float(nvfp4_fold_scale(sf, g));
    cr_expect_neq(folded, exact);
    cr_expect_leq(fabsf(folded - exact) / exact, 1.0f / 16.0f);
    uint8_t out[3], in[3] = {s448, s448, s448};
    nvfp4_fold_census c = {0, 0, 0, 0};
    nvfp4_fold_scales(in, 1, 1e6f, out, &c);
    nvfp4_fold_scales(in + 1, 1, 0.5f, out + 1, &c);
    nvfp4_fold_scales(in + 2, 1, 32768.0f, out + 2, &c);
    cr_expect_eq(c.n, 3);
    cr_expect_eq(c.flushed, 1);
    cr_expect_eq(c.saturated, 1);
    cr_expect_eq(c.subnormal, 1);
}

/* The loss by magnitude on the ragged workload of seed 1 (README table): the alpha path is within its float32
 * bound at every magnitude; folding costs about 4% rel L2 in E4M3's normal range, more as scales go
 * subnormal and flush, and saturation takes over from e = 9 (block amax above 6 * 448). */
Test(nvfp4_fold, loss_by_magnitude_and_the_e4m3_limits, .timeout = 60)
{
    const int e[] = {-11, -6, 0, 8, 9};
    nvfp4_fold_point p[5];
    cr_assert_eq(nvfp4_fold_study(NVFP4_SF_RAGGED, NULL, 1, e, e, 5, p), LAB_OK, "%s", lab_err_msg());
    for (int i = 0; i < 5; ++i) cr_expect_leq(p[i].fix_err_over_bound, 1.0, "fix at e=%d", e[i]);
    cr_expect_eq(p[0].census.flushed, p[0].census.n, "every scale flushes at e=-11");
    cr_expect_eq(p[0].fold_rel_l2, 1.0, "an all-zero product");
    cr_expect(p[1].census.flushed > 0 && p[1].census.subnormal > 0);
    cr_expect(p[1].fold_rel_l2 > 0.08 && p[1].fold_rel_l2 < 0.12, "e=-6: %g", p[1].fold_rel_l2);
    double ratio = p[1].fold_x_rel_l2 / p[1].quant_rel_l2;
    cr_expect(ratio > 1.2 && ratio < 1.26, "e=-6: folded/unfolded error against the data %g", ratio);
    for (int i = 2; i < 4; ++i) {
        cr_expect_eq(p[i].census.flushed + p[i].census.saturated, 0, "e=%d", e[i]);
        cr_expect(p[i].fold_rel_l2 > 0.03 && p[i].fold_rel_l2 < 0.06, "e=%d: %g", e[i], p[i].fold_rel_l2);
    }
    cr_expect_gt(p[4].census.saturated, 0);
    cr_expect_gt(p[4].fold_rel_l2, 0.3);
}

Test(nvfp4_fold, bug_detected_fix_passes_on_several_seeds, .timeout = 120)
{
    for (uint64_t seed = 1; seed <= 4; ++seed) {
        lab_case_result b = fold_case("bug-fold-global-scale", seed);
        cr_expect_eq(b.passed, 0, "seed %llu: %s", (unsigned long long)seed, b.detail);
        cr_expect_gt(lab_result_get(&b, "err_over_bound"), 100.0, "%s", b.detail);
        cr_expect_gt(lab_result_get(&b, "fold_rel_l2"), 0.03, "%s", b.detail);
        int ea = (int)lab_result_get(&b, "mag_a"), eb = (int)lab_result_get(&b, "mag_b");
        cr_expect(ea >= NVFP4_FOLD_EMIN && ea <= NVFP4_FOLD_EMAX && eb >= NVFP4_FOLD_EMIN && eb <= NVFP4_FOLD_EMAX);
        lab_case_result f = fold_case("fix", seed);
        cr_expect_eq(f.passed, 1, "fix seed %llu: %s", (unsigned long long)seed, f.detail);
        cr_expect_leq(lab_result_get(&f, "mag_err_over_bound"), 1.0);
    }
    const lab_variant *v = lab_incident_variant(&nvfp4_sf_incident, "bug-fold-global-scale");
    cr_assert_not_null(v);
    cr_expect_eq(v->role, LAB_ROLE_BUG);
    cr_expect_eq(v->min_detect_rate, 0.0);
}

/* The alpha path's magnitudes do not change the answer beyond the exact power of two. */
Test(nvfp4_fold, alpha_path_scales_exactly)
{
    nvfp4_sf_work w;
    cr_assert_eq(nvfp4_sf_work_init(&w, NVFP4_SF_SMALL, NULL, NVFP4_SF_RANDOM, 3), LAB_OK);
    float a[32], b[32];
    nvfp4_fold_work f0 = {&w, w.global_a, w.global_b}, f1 = {&w, ldexpf(w.global_a, -3), ldexpf(w.global_b, 2)};
    cr_assert_eq(nvfp4_fold_run_cpu(&f0, 0, a), LAB_OK);
    cr_assert_eq(nvfp4_fold_run_cpu(&f1, 0, b), LAB_OK);
    for (int i = 0; i < 32; ++i) cr_expect_eq(b[i], ldexpf(a[i], 1), "output %d", i);
    nvfp4_sf_work_free(&w);
}

/* The production shape, once (about a minute of CPU): opt-in with NVFP4_FOLD_STUDY=1. Prints the table the
 * README records. */
Test(nvfp4_fold, production_shape_study, .timeout = 600)
{
    if (!getenv("NVFP4_FOLD_STUDY")) cr_skip_test("set NVFP4_FOLD_STUDY=1 to run the (128, 6144, 7168) study");
    const int e[] = {-10, -8, -7, -6, -5, -4, 0, 8, 9, 10};
    enum { NE = sizeof e / sizeof e[0] };
    nvfp4_fold_point p[NE];
    cr_assert_eq(nvfp4_fold_study(NVFP4_SF_LARGE, &nvfp4_sf_production, 1, e, e, NE, p), LAB_OK, "%s", lab_err_msg());
    for (int i = 0; i < NE; ++i) {
        printf("fold study (128, 6144, 7168) e=%d: fold rel L2 %.4g cosine %.6f; vs data: nvfp4 %.4g folded %.4g "
               "(x%.3f); scales flushed %zu subnormal %zu saturated %zu of %zu; fix %.3g of its bound\n",
               e[i], p[i].fold_rel_l2, p[i].fold_cos, p[i].quant_rel_l2, p[i].fold_x_rel_l2,
               p[i].fold_x_rel_l2 / p[i].quant_rel_l2, p[i].census.flushed, p[i].census.subnormal,
               p[i].census.saturated, p[i].census.n, p[i].fix_err_over_bound);
        cr_expect_leq(p[i].fix_err_over_bound, 1.0);
    }
}

#ifdef LAB_HAVE_CUDA
/* Without a GPU: skips, saying why. With one: the folded and the alpha GEMMs bit-identical to the CPU's. */
Test(nvfp4_fold, cuda_matches_the_cpu_or_skips, .timeout = 300)
{
    lab_test_need_gpu();
    for (uint64_t seed = 1; seed <= 2; ++seed) {
        const char *names[] = {"fix", "bug-fold-global-scale"};
        for (int k = 0; k < 2; ++k) {
            lab_case_result r;
            memset(&r, 0, sizeof r);
            lab_status st = lab_case_run_named(&nvfp4_sf_incident, names[k], seed, LAB_BACKEND_CUDA, ".", &r);
            cr_assert_eq(st, LAB_OK, "%s", lab_err_msg());
            cr_expect_eq(r.passed, k == 0, "%s seed %llu: %s", names[k], (unsigned long long)seed, r.detail);
            if (k == 1) cr_expect_eq(lab_result_get(&r, "gpu_cpu_mismatch"), 0.0, "%s", r.detail);
        }
    }
}
#endif
