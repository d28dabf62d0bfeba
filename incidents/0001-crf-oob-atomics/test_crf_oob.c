/* test_crf_oob: the shared semi-Markov CRF kernel (reference vs finite differences, emulation) and incident 0001 (OOB detected, fixes pass, contention belief tested, goldens). */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_test_case.h"
#include "crf_oob.h"
#include "lab_fs.h"
#include "lab_golden.h"
#include "lab_incident.h"
#include "lab_semicrf.h"

#define GOLDEN_DIR "incidents/0001-crf-oob-atomics/golden"

static lab_case_result run_case(const char *variant, uint64_t seed)
{
    return lab_test_run(&crf_oob_incident, variant, seed, ".");
}

/* ---- the kernel: reference against finite differences of log Z ------------------------------- */

static double sum_logz(const lab_semicrf_problem *p)
{
    double z = 0.0;
    for (int b = 0; b < p->B; ++b) z += lab_semicrf_logz(p, b);
    return z;
}

/* Central difference of sum_b log Z in x[i] with the step actually representable in float32. */
static double fd(lab_semicrf_problem *p, float *x, double h)
{
    float x0 = *x, xp = (float)(x0 + h), xm = (float)(x0 - h);
    *x = xp;
    double zp = sum_logz(p);
    *x = xm;
    double zm = sum_logz(p);
    *x = x0;
    return (zp - zm) / ((double)xp - (double)xm);
}

static void check_fd(int use_proj, uint64_t seed)
{
    lab_semicrf_problem p;
    cr_assert_eq(lab_semicrf_problem_init(&p, 3, 13, 5, 6, use_proj), LAB_OK, "%s", lab_err_msg());
    lab_semicrf_problem_fill(&p, seed);
    p.len[1] = 9;
    p.len[2] = 4; /* shorter than K: segments of every duration cannot fit */
    lab_semicrf_ref r;
    cr_assert_eq(lab_semicrf_reference(&p, &r), LAB_OK, "%s", lab_err_msg());
    const double h = 1e-3, tol = 2e-6;
    size_t C = 6, T = 13;
    for (int b = 0; b < 3; ++b) {
        for (int t = 0; t <= 13; t += 3)
            for (int c = 0; c < 6; c += 2) {
                size_t i = ((size_t)b * (T + 1) + (size_t)t) * C + (size_t)c;
                double g = fd(&p, &p.cum[i], h);
                cr_expect(fabs(g - r.g_cum[i]) < tol, "cum[%d][%d][%d]: fd %.9f analytic %.9f", b, t, c, g, r.g_cum[i]);
            }
        if (use_proj)
            for (int t = 0; t < 13; t += 2) {
                size_t i = ((size_t)b * T + (size_t)t) * C + 1;
                double g = fd(&p, &p.proj_start[i], h), ge = fd(&p, &p.proj_end[i], h);
                cr_expect(fabs(g - r.g_ps[i]) < tol, "proj_start[%d][%d]: fd %.9f analytic %.9f", b, t, g, r.g_ps[i]);
                cr_expect(fabs(ge - r.g_pe[i]) < tol, "proj_end[%d][%d]: fd %.9f analytic %.9f", b, t, ge, r.g_pe[i]);
            }
    }
    for (size_t i = 0; i < C * C; i += 5) {
        double g = fd(&p, &p.trans[i], h);
        cr_expect(fabs(g - r.g_trans[i]) < tol, "trans[%zu]: fd %.9f analytic %.9f", i, g, r.g_trans[i]);
    }
    for (size_t i = 0; i < 5 * C; i += 4) {
        double g = fd(&p, &p.dur[i], h);
        cr_expect(fabs(g - r.g_dur[i]) < tol, "dur[%zu]: fd %.9f analytic %.9f", i, g, r.g_dur[i]);
    }
    lab_semicrf_ref_free(&r);
    lab_semicrf_problem_free(&p);
}

Test(semicrf, reference_matches_finite_differences_with_proj) { check_fd(1, 5); }
Test(semicrf, reference_matches_finite_differences_without_proj) { check_fd(0, 6); }

/* Marginal identities: the segment marginals of one sequence cover every position once on average, so
 * sum over (t, c) of the end-gradient counts equals the expected number of segments; and the expected
 * number of transitions is that minus one. */
Test(semicrf, reference_marginals_are_consistent)
{
    lab_semicrf_problem p;
    cr_assert_eq(lab_semicrf_problem_init(&p, 1, 40, 6, 5, 1), LAB_OK);
    lab_semicrf_problem_fill(&p, 9);
    lab_semicrf_ref r;
    cr_assert_eq(lab_semicrf_reference(&p, &r), LAB_OK);
    double segs = 0.0, trans = 0.0, cum_total = 0.0;
    for (size_t i = 0; i < 6 * 5; ++i) segs += r.g_dur[i];
    for (size_t i = 0; i < 25; ++i) trans += r.g_trans[i];
    for (size_t i = 0; i < 41 * 5; ++i) cum_total += r.g_cum[i];
    cr_expect(fabs(trans - (segs - 1.0)) < 1e-9, "transitions %.12f segments %.12f", trans, segs);
    cr_expect(fabs(cum_total) < 1e-9, "each segment adds +1 at its end and -1 at its start: %.3g", cum_total);
    lab_semicrf_ref_free(&r);
    lab_semicrf_problem_free(&p);
}

Test(semicrf, bad_shapes_and_lengths_are_named)
{
    lab_semicrf_problem p;
    cr_expect_eq(lab_semicrf_problem_init(&p, 1, 501, 30, 39, 1), LAB_ERR_ARG);
    cr_expect(strstr(lab_err_msg(), "T = 501") != NULL, "%s", lab_err_msg());
    cr_expect_eq(lab_semicrf_problem_init(&p, 1, 10, 31, 39, 1), LAB_ERR_ARG);
    cr_expect(strstr(lab_err_msg(), "K = 31") != NULL, "%s", lab_err_msg());
    cr_expect_eq(lab_semicrf_problem_init(&p, 1, 10, 3, 65, 1), LAB_ERR_ARG);
    cr_expect(strstr(lab_err_msg(), "C = 65") != NULL, "%s", lab_err_msg());
    cr_assert_eq(lab_semicrf_problem_init(&p, 2, 10, 3, 4, 0), LAB_OK);
    lab_semicrf_problem_fill(&p, 1);
    p.len[1] = 11;
    lab_semicrf_ref r;
    cr_expect_eq(lab_semicrf_reference(&p, &r), LAB_ERR_ARG);
    cr_expect(strstr(lab_err_msg(), "len[1] = 11") != NULL, "%s", lab_err_msg());
    lab_semicrf_out o;
    lab_semicrf_config cfg = {LAB_SEMICRF_LAYOUT_CLAMPED, LAB_SEMICRF_ACC_DETERMINISTIC, 0, 1, 1};
    p.len[1] = 10;
    cr_expect_eq(lab_semicrf_emulate(&p, &cfg, &o), LAB_ERR_ARG);
    cr_expect(strstr(lab_err_msg(), "deterministic") != NULL, "%s", lab_err_msg());
    lab_semicrf_problem_free(&p);
}

/* The emulation: same schedule, same bits; another schedule, other float32 bits (order is real). */
Test(semicrf, emulation_schedule_decides_the_bits)
{
    lab_semicrf_problem p;
    cr_assert_eq(lab_semicrf_case_problem(&p, 4), LAB_OK);
    lab_semicrf_out a, b, c;
    lab_semicrf_config cfg = {LAB_SEMICRF_LAYOUT_PADDED, LAB_SEMICRF_ACC_F32_ATOMIC, LAB_SEMICRF_GUARDS_ALL, 4, 100};
    cr_assert_eq(lab_semicrf_emulate(&p, &cfg, &a), LAB_OK, "%s", lab_err_msg());
    cr_assert_eq(lab_semicrf_emulate(&p, &cfg, &b), LAB_OK);
    cfg.schedule_seed = 101;
    cr_assert_eq(lab_semicrf_emulate(&p, &cfg, &c), LAB_OK);
    lab_semicrf_r2r same, other;
    lab_semicrf_run_to_run(&p, &a, &b, &same);
    lab_semicrf_run_to_run(&p, &a, &c, &other);
    cr_expect_eq(same.n_diff, 0u);
    cr_expect_gt(other.n_diff, 0u, "a different block order must change some float32 sums");
    cr_expect(other.max > 0.0 && other.max < 1e-3, "%.3g", other.max);
    lab_semicrf_out_free(&a);
    lab_semicrf_out_free(&b);
    lab_semicrf_out_free(&c);
    lab_semicrf_problem_free(&p);
}

/* ---- incident 0001 ------------------------------------------------------------------------------ */

Test(crf_oob, registered)
{
    const lab_incident *inc = lab_incident_find("0001");
    cr_assert_eq(inc, &crf_oob_incident);
    const lab_variant *bug = lab_incident_variant(inc, "bug-unpadded");
    cr_assert_not_null(bug);
    cr_expect_eq(bug->role, LAB_ROLE_BUG);
    cr_expect_str_eq(bug->sanitizer, "memcheck");
    cr_expect_eq(lab_incident_variant(inc, "fix")->role, LAB_ROLE_FIX);
    cr_expect_eq(lab_incident_variant(inc, "clamp-first-fix")->role, LAB_ROLE_FIX);
}

Test(crf_oob, bug_detected_and_fixes_pass_on_seeds, .timeout = 120)
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

/* The write-up's belief: 25 lanes atomically adding to one address corrupt the sum. Under one schedule
 * the clamped layout's gradients are bit for bit those of the padded layout (same guards): the extra
 * atomics add exact zeros. */
Test(crf_oob, contention_on_one_address_does_not_corrupt_sums)
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

/* Masking by multiplication is what turns a non-finite neighbour into a NaN: 0 * inf. */
Test(crf_oob, mask_by_multiplication_makes_nan)
{
    float inf = INFINITY, zero = 0.0f;
    cr_expect(isnan(inf * zero));
    float selected = 0 ? inf : 0.0f;
    cr_expect_eq(selected, 0.0f);
}

/* ---- goldens ------------------------------------------------------------------------------------- */

Test(crf_oob, goldens_verify)
{
    lab_golden_manifest m;
    cr_assert_eq(lab_golden_manifest_read(GOLDEN_DIR, &m), LAB_OK, "%s", lab_err_msg());
    size_t ok = 0;
    cr_expect_eq(lab_golden_verify(GOLDEN_DIR, &m, &ok), LAB_OK, "%s", lab_err_msg());
    cr_expect_eq(ok, 6u);
    lab_golden_manifest_free(&m);
}

Test(crf_oob, corrupted_golden_is_rejected)
{
    const char *tmp = "build/test-tmp/crf-oob-golden";
    cr_assert_eq(lab_fs_mkdirs(tmp), LAB_OK);
    const uint64_t seeds[1] = {CRF_OOB_GOLDEN_SEED_A};
    cr_assert_eq(lab_semicrf_golden_bless(tmp, CRF_OOB_ID, seeds, 1), LAB_OK, "%s", lab_err_msg());
    char path[256];
    snprintf(path, sizeof path, "%s/ref_trans_seed1.npy", tmp);
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    fseek(f, 200, SEEK_SET);
    fputc(0x5a, f);
    fclose(f);
    lab_semicrf_problem p;
    cr_assert_eq(lab_semicrf_case_problem(&p, 1), LAB_OK);
    lab_semicrf_out o;
    lab_semicrf_config cfg = {LAB_SEMICRF_LAYOUT_PADDED, LAB_SEMICRF_ACC_F32_ATOMIC, LAB_SEMICRF_GUARDS_ALL, 1, 1};
    cr_assert_eq(lab_semicrf_emulate(&p, &cfg, &o), LAB_OK);
    double e = 0;
    cr_expect_eq(lab_semicrf_golden_compare(tmp, 1, &p, &o, &e), LAB_ERR_MISMATCH);
    cr_expect(strstr(lab_err_msg(), "sha256") != NULL, "%s", lab_err_msg());
    cr_expect_eq(lab_semicrf_golden_compare(tmp, 5, &p, &o, &e), LAB_ERR_NOTFOUND);
    lab_semicrf_out_free(&o);
    lab_semicrf_problem_free(&p);
}

#ifdef LAB_HAVE_CUDA
#include "lab_cuda.h"
/* On a GPU: the CUDA fix agrees with the float64 reference; the unpadded layout strays exactly as often
 * as the CPU emulation counts for the same seed; the clamp has no strays. */
Test(crf_oob, cuda_fix_agrees_and_bug_strays_as_on_cpu, .timeout = 300)
{
    char why[240];
    lab_status st = lab_cuda_ready(why, sizeof why);
    if (st == LAB_ERR_UNSUPPORTED) cr_skip_test("no GPU: %s", why);
    cr_assert_eq(st, LAB_OK, "%s", lab_err_msg());
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
