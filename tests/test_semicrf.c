/* test_semicrf: the shared semi-Markov CRF kernel (kernels/lab_semicrf*): the float64 reference against finite differences, the emulated GPU kernel (schedules, accumulations, the guard-zoned heap), the float32 guards of the write-up, the golden compare, and the CUDA kernel's determinism. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab_fs.h"
#include "lab_golden.h"
#include "lab_rng.h"
#include "lab_semicrf.h"
#include "lab_semicrf_arena.h"
#include "lab_test_case.h"

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

/* Deterministic: the same bits under many schedules. */
Test(semicrf, emulation_deterministic_accumulation_is_bitwise_over_schedules)
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

/* ---- the emulated device heap ----------------------------------------------------------------- */

/* Inside an allocation: plain. Past it, within the guard zone: the neighbour's bytes, counted (and a non-finite
 * one counted as such). Beyond the guard zone: not done, the first such access recorded, naming the buffer. */
Test(semicrf, arena_counts_strays_and_names_a_buffer_overrun)
{
    uint64_t seed = 0;
    while (lab_semicrf_guard_kind_of(++seed) != LAB_SEMICRF_GUARD_STALE) {} /* neighbours of raw bits */
    lab_semicrf_out o;
    memset(&o, 0, sizeof o);
    lab_semicrf_arena ar;
    const size_t n[2] = {5, 3}, esz[2] = {4, 8};
    const char *const names[2] = {"five_floats", "three_doubles"};
    cr_assert_eq(lab_semicrf_arena_init(&ar, n, esz, names, 2, seed, &o), LAB_OK, "%s", lab_err_msg());
    lab_semicrf_arena_atomic_add(&ar, 0, 4, 1.5f);
    lab_semicrf_arena_atomic_add(&ar, 0, 4, 2.0f);
    cr_expect_eq(lab_semicrf_arena_ld(&ar, 0, 4), 3.5f, "the allocation starts zeroed");
    lab_semicrf_arena_atomic_add(&ar, 1, 2, 0.25f);
    cr_expect_eq(lab_semicrf_arena_get(&ar, 1, 2), 0.25, "a float64 allocation adds in double");
    cr_expect_eq(o.oob_reads + o.oob_writes, 0u);
    cr_expect_eq(o.n_atomics, 3u);
    /* One element past each end: the neighbour's bytes. Past the end they are the rounding tail's first word,
     * as the seed's guard fill draws it (the zone before the allocation, then the tail). */
    float past = lab_semicrf_arena_ld(&ar, 0, 5);
    lab_semicrf_arena_ld(&ar, 0, -1);
    cr_expect_eq(o.oob_reads, 2u);
    unsigned char expect[16];
    lab_semicrf_guard_fill(expect, 3, seed, LAB_SEMICRF_ARENA_GUARD_BYTES / 4);
    cr_expect(memcmp(&past, expect, 4) == 0, "element 5 of five is the first word of the rounding tail");
    size_t before = o.guard_nonfinite_read, nonfinite = 0;
    for (long i = 5; i < 4000; ++i) nonfinite += !isfinite(lab_semicrf_arena_ld(&ar, 0, i));
    cr_expect_gt(nonfinite, 0u, "stale bits hold NaN and Inf patterns");
    cr_expect_eq(o.guard_nonfinite_read - before, nonfinite, "every non-finite stray load counted");
    lab_semicrf_arena_atomic_row(&ar, 0, 6, 1.0f, 1);
    cr_expect_eq(o.oob_writes, 1u);
    cr_expect_eq(o.cross_row_writes, 0u, "outside the allocation it is an OOB write, not a cross-row one");
    lab_semicrf_arena_atomic_row(&ar, 0, 2, 1.0f, 1);
    cr_expect_eq(o.cross_row_writes, 1u);
    cr_expect_eq(ar.err, LAB_OK);
    long beyond = 5 + (long)(LAB_SEMICRF_ARENA_GUARD_BYTES / 4); /* a guard zone's worth past the end */
    lab_semicrf_arena_ld(&ar, 0, beyond - 1);
    cr_expect_eq(ar.err, LAB_OK, "a guard zone's worth past the end is still neighbour memory");
    cr_expect_eq(lab_semicrf_arena_ld(&ar, 0, beyond), 0.0f);
    cr_expect_eq(ar.err, LAB_ERR_UNSUPPORTED);
    cr_expect(strstr(lab_err_msg(), "five_floats[") != NULL, "%s", lab_err_msg());
    lab_semicrf_arena_free(&ar);
    const size_t many[LAB_SEMICRF_ARENA_MAX + 1] = {0};
    cr_expect_eq(lab_semicrf_arena_init(&ar, many, many, NULL, LAB_SEMICRF_ARENA_MAX + 1, 1, &o), LAB_ERR_ARG);
}

/* ---- goldens ------------------------------------------------------------------------------------- */

/* The golden compare loads through the MANIFEST: a payload byte changed is a sha256 mismatch naming the file,
 * a seed without goldens is NOTFOUND. */
Test(semicrf, golden_compare_passes_then_rejects_a_corrupted_golden_by_name)
{
    char tmp[] = "/tmp/lab-semicrf-golden-XXXXXX";
    cr_assert_not_null(mkdtemp(tmp));
    const uint64_t seeds[1] = {1};
    cr_assert_eq(lab_semicrf_golden_bless(tmp, "semicrf-test", seeds, 1), LAB_OK, "%s", lab_err_msg());
    lab_semicrf_problem p;
    cr_assert_eq(lab_semicrf_case_problem(&p, 1), LAB_OK);
    lab_semicrf_ref r;
    cr_assert_eq(lab_semicrf_reference(&p, &r), LAB_OK);
    lab_semicrf_out o;
    lab_semicrf_config cfg = {LAB_SEMICRF_LAYOUT_PADDED, LAB_SEMICRF_ACC_F32_ATOMIC, LAB_SEMICRF_GUARDS_ALL, 1, 1};
    cr_assert_eq(lab_semicrf_emulate(&p, &cfg, &o), LAB_OK);
    double e = -1.0;
    cr_expect_eq(lab_semicrf_golden_compare(tmp, 1, &p, &o, &e), LAB_OK, "%s", lab_err_msg());
    cr_expect(e >= 0.0 && e <= lab_semicrf_tolerance(&r, p.B), "the fixed kernel against its golden: %g", e);
    char path[256];
    snprintf(path, sizeof path, "%s/ref_trans_seed1.npy", tmp);
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    fseek(f, 200, SEEK_SET);
    fputc(0x5a, f);
    fclose(f);
    cr_expect_eq(lab_semicrf_golden_compare(tmp, 1, &p, &o, &e), LAB_ERR_MISMATCH);
    cr_expect(strstr(lab_err_msg(), "ref_trans_seed1.npy") && strstr(lab_err_msg(), "sha256"), "%s", lab_err_msg());
    cr_expect_eq(lab_semicrf_golden_compare(tmp, 5, &p, &o, &e), LAB_ERR_NOTFOUND);
    cr_expect(strstr(lab_err_msg(), "ref_trans_seed5.npy") != NULL, "%s", lab_err_msg());
    const char *files[] = {"MANIFEST.json", "ref_trans_seed1.npy", "ref_dur_seed1.npy", "ref_logz_seed1.npy"};
    for (int k = 0; k < 4; ++k) {
        snprintf(path, sizeof path, "%s/%s", tmp, files[k]);
        cr_expect_eq(unlink(path), 0, "%s", path);
    }
    cr_expect_eq(rmdir(tmp), 0);
    lab_semicrf_out_free(&o);
    lab_semicrf_ref_free(&r);
    lab_semicrf_problem_free(&p);
}

/* The check a CUDA replay applies to its device reference: equal references agree exactly; a gradient off by half the
 * float64 account reads about 0.5, by twice it beyond 1; log Z and abs_cum are checked too; NaN is never agreement. */
Test(semicrf, reference_disagreement_is_measured_against_the_float64_account)
{
    lab_semicrf_problem p;
    lab_semicrf_ref a, b;
    cr_assert_eq(lab_semicrf_case_problem(&p, 1), LAB_OK);
    cr_assert_eq(lab_semicrf_reference(&p, &a), LAB_OK);
    cr_assert_eq(lab_semicrf_reference(&p, &b), LAB_OK);
    cr_expect_eq(lab_semicrf_ref_disagreement(&p, &a, &b), 0.0);
    double zmax = fmax(fabs(a.logZ[0]), fabs(a.logZ[1])), acc = 2.0 * (p.K + 4) * ldexp(1.0, -53) * zmax, sc = 0.0;
    for (int i = 0; i < p.C * p.C; ++i) sc = fmax(sc, fabs(a.g_trans[i]));
    b.g_trans[7] += 0.5 * acc * sc;
    double x = lab_semicrf_ref_disagreement(&p, &a, &b);
    cr_expect(x > 0.4 && x < 0.6, "half the account read as %.3g", x);
    b.g_trans[7] = a.g_trans[7] + 2.0 * acc * sc;
    cr_expect_gt(lab_semicrf_ref_disagreement(&p, &a, &b), 1.0);
    b.g_trans[7] = a.g_trans[7], b.logZ[1] = a.logZ[1] * (1.0 + 4.0 * acc);
    cr_expect_gt(lab_semicrf_ref_disagreement(&p, &a, &b), 1.0);
    b.logZ[1] = a.logZ[1], b.abs_cum[3] = NAN;
    cr_expect(isnan(lab_semicrf_ref_disagreement(&p, &a, &b)));
    lab_semicrf_ref_free(&a), lab_semicrf_ref_free(&b), lab_semicrf_problem_free(&p);
}

#ifdef LAB_HAVE_CUDA
/* On a GPU: the device's float64 reference (what 0001 and 0002 are judged against on CUDA) agrees with the CPU's
 * within the float64 account at T = 100, 200 and 500, and gives the same bits twice. */
Test(semicrf, device_reference_agrees_with_the_cpu_reference, .timeout = 120)
{
    lab_test_need_gpu();
    for (uint64_t seed = 1; seed <= 3; ++seed) {
        lab_semicrf_problem p;
        lab_semicrf_ref cpu, dev, again;
        cr_assert_eq(lab_semicrf_case_problem(&p, seed), LAB_OK);
        cr_assert_eq(lab_semicrf_reference(&p, &cpu), LAB_OK);
        cr_assert_eq(lab_semicrf_reference_cuda(&p, LAB_SEMICRF_REF_FIRST_FREE, &dev), LAB_OK, "%s", lab_err_msg());
        cr_assert_eq(lab_semicrf_reference_cuda(&p, LAB_SEMICRF_REF_FIRST_FREE, &again), LAB_OK, "%s", lab_err_msg());
        double x = lab_semicrf_ref_disagreement(&p, &cpu, &dev);
        cr_expect_leq(x, 1.0, "T = %d: device reference %.3g of the float64 account from the CPU's", p.T, x);
        cr_expect_eq(lab_semicrf_ref_disagreement(&p, &dev, &again), 0.0, "T = %d: two device runs differ", p.T);
        lab_semicrf_ref_free(&cpu), lab_semicrf_ref_free(&dev), lab_semicrf_ref_free(&again);
        lab_semicrf_problem_free(&p);
    }
}

/* On a GPU: the deterministic accumulation gives the same bits over 20 runs (real atomics elsewhere, a real
 * scheduler). Skips without a GPU, saying why. */
Test(semicrf, cuda_deterministic_accumulation_bitwise_over_20_runs, .timeout = 300)
{
    lab_test_need_gpu();
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

/* Bits of two outputs equal: log Z and every gradient (and the float64 accumulators where both have them). */
static size_t sc_bits_differ(const lab_semicrf_problem *p, const lab_semicrf_out *a, const lab_semicrf_out *b)
{
    size_t C = (size_t)p->C, ncum = (size_t)p->B * (p->T + 1) * C, npos = (size_t)p->B * p->T * C, d = 0;
    d += memcmp(a->logZ, b->logZ, (size_t)p->B * 4) != 0;
    d += memcmp(a->g_cum, b->g_cum, ncum * 4) != 0;
    d += memcmp(a->g_trans, b->g_trans, C * C * 4) != 0;
    d += memcmp(a->g_dur, b->g_dur, (size_t)p->K * C * 4) != 0;
    d += memcmp(a->g_ps, b->g_ps, npos * 4) != 0;
    d += memcmp(a->g_pe, b->g_pe, npos * 4) != 0;
    return d;
}

/* On a GPU: a seed batch computes each problem as alone. Four problems of one T (seeds 2, 5, 8, 11: T = 500) in
 * one batch against each run alone: the deterministic accumulation bit for bit; the unpadded layout (float32
 * atomics, so gradient bits may differ) with the same log Z bits, the same stray loads and atomics counted, its
 * strays in its own guard zones (contained, no breach) and the same guard kind's damage (non-finite count). */
Test(semicrf, cuda_batch_computes_each_problem_as_alone, .timeout = 300)
{
    lab_test_need_gpu();
    enum { N = 4 };
    lab_semicrf_problem p[N];
    const lab_semicrf_problem *pp[N];
    for (int q = 0; q < N; ++q) {
        cr_assert_eq(lab_semicrf_case_problem(&p[q], 2 + 3 * (uint64_t)q), LAB_OK);
        pp[q] = &p[q];
    }
    const lab_semicrf_config base[2] = {{LAB_SEMICRF_LAYOUT_PADDED, LAB_SEMICRF_ACC_DETERMINISTIC, LAB_SEMICRF_GUARDS_ALL, 0, 0},
                                        {LAB_SEMICRF_LAYOUT_UNPADDED, LAB_SEMICRF_ACC_F32_ATOMIC, 0, 0, 0}};
    for (int k = 0; k < 2; ++k) {
        lab_semicrf_config cfgs[N];
        lab_semicrf_out batch[N];
        for (int q = 0; q < N; ++q) cfgs[q] = base[k], cfgs[q].guard_seed = cfgs[q].schedule_seed = 2 + 3 * (uint64_t)q;
        cr_assert_eq(lab_semicrf_cuda_run_batch(pp, cfgs, N, batch), LAB_OK, "%s", lab_err_msg());
        for (int q = 0; q < N; ++q) {
            lab_semicrf_out alone;
            cr_assert_eq(lab_semicrf_cuda_run(pp[q], &cfgs[q], 1, &alone, NULL), LAB_OK, "%s", lab_err_msg());
            if (k == 0) {
                cr_expect_eq(sc_bits_differ(pp[q], &batch[q], &alone), 0u, "deterministic, problem %d: bits differ", q);
                cr_expect_eq(batch[q].oob_writes + batch[q].oob_reads + batch[q].pad_nonzero, 0u, "problem %d", q);
            } else {
                cr_expect_eq(memcmp(batch[q].logZ, alone.logZ, 2 * sizeof(float)), 0, "unpadded, problem %d: log Z bits", q);
                cr_expect_gt(batch[q].oob_writes, 0u, "problem %d: the unpadded layout strays", q);
                cr_expect_eq(batch[q].oob_writes, alone.oob_writes, "problem %d", q);
                cr_expect_eq(batch[q].oob_reads, alone.oob_reads, "problem %d", q);
                cr_expect(batch[q].contained && alone.contained, "problem %d: strays in its own guard zones", q);
                cr_expect_eq(batch[q].guard_breach, 0u, "problem %d", q);
                lab_semicrf_ref r;
                cr_assert_eq(lab_semicrf_reference(pp[q], &r), LAB_OK);
                lab_semicrf_err eb, ea;
                lab_semicrf_compare(pp[q], &batch[q], &r, &eb);
                lab_semicrf_compare(pp[q], &alone, &r, &ea);
                cr_expect_eq(eb.nonfinite, ea.nonfinite, "problem %d: non-finite gradients %zu batched, %zu alone", q,
                             eb.nonfinite, ea.nonfinite);
                lab_semicrf_ref_free(&r);
            }
            lab_semicrf_out_free(&alone);
            lab_semicrf_out_free(&batch[q]);
        }
    }
    for (int q = 0; q < N; ++q) lab_semicrf_problem_free(&p[q]);
}

/* A batch's problems must share their shape and their configs all but their seeds: checked before any CUDA call
 * (so this runs without a GPU), naming the problem. */
Test(semicrf, cuda_batch_refuses_mixed_shapes_and_configs)
{
    lab_semicrf_problem a, b;
    cr_assert_eq(lab_semicrf_case_problem(&a, 1), LAB_OK); /* T = 200 */
    cr_assert_eq(lab_semicrf_case_problem(&b, 2), LAB_OK); /* T = 500 */
    const lab_semicrf_problem *pp[2] = {&a, &b};
    lab_semicrf_config cfgs[2] = {{LAB_SEMICRF_LAYOUT_PADDED, LAB_SEMICRF_ACC_F32_ATOMIC, LAB_SEMICRF_GUARDS_ALL, 1, 1},
                                  {LAB_SEMICRF_LAYOUT_PADDED, LAB_SEMICRF_ACC_F32_ATOMIC, LAB_SEMICRF_GUARDS_ALL, 2, 2}};
    lab_semicrf_out o[2];
    cr_expect_eq(lab_semicrf_cuda_run_batch(pp, cfgs, 2, o), LAB_ERR_ARG);
    cr_expect(strstr(lab_err_msg(), "problem 1 is B=2 T=500") != NULL, "%s", lab_err_msg());
    pp[1] = &a;
    cfgs[1].layout = LAB_SEMICRF_LAYOUT_UNPADDED;
    cr_expect_eq(lab_semicrf_cuda_run_batch(pp, cfgs, 2, o), LAB_ERR_ARG);
    cr_expect(strstr(lab_err_msg(), "config 1 differs") != NULL, "%s", lab_err_msg());
    cr_expect_eq(lab_semicrf_cuda_run_batch(pp, cfgs, 0, o), LAB_ERR_ARG);
    lab_semicrf_problem_free(&a);
    lab_semicrf_problem_free(&b);
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
Test(semicrf_guards, neginf_guard_matters_only_for_true_minus_inf)
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
Test(semicrf_guards, epsilon_never_changes_a_bit)
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
Test(semicrf_guards, input_clamp_changes_only_beyond_1e6)
{
    float nanv = lab_semicrf_marginal_f32(-INFINITY, 0.0f, INFINITY, 10.0f, 0);
    float clamped = lab_semicrf_marginal_f32(-INFINITY, 0.0f, INFINITY, 10.0f, LAB_SEMICRF_GUARD_CLAMP_IN);
    cr_expect(isnan(nanv));
    cr_expect(isfinite(clamped) && clamped > 0.0f, "clamped marginal %g", (double)clamped);
    cr_expect(isnan(lab_semicrf_marginal_f32(NAN, 0.0f, 0.0f, 0.0f, LAB_SEMICRF_GUARD_CLAMP_IN)), "NaN stays NaN");
}

/* The log-marginal clamp: the upper bound never acts (a valid log-marginal is <= 0 up to rounding); the
 * lower bound lifts marginals below e^-80 to e^-80 = 1.8e-35; it turns +inf into e^80. */
Test(semicrf_guards, log_marginal_clamp_lifts_tiny_marginals)
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
Test(semicrf_guards, no_guard_changes_the_fixed_kernel_on_realistic_inputs, .timeout = 120)
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

/* The guard fill is made in batches: every kind, zones that start mid-stream and cross a batch edge, against the
 * per-word definition (lab_semicrf_arena.c: word i from idx = first + i + 1). */
Test(semicrf, guard_fill_matches_its_per_word_definition)
{
    enum { NW = 1300 };
    int seen[4] = {0, 0, 0, 0};
    static unsigned char got[4 * NW];
    for (uint64_t seed = 1; seed < 200 && !(seen[0] && seen[1] && seen[2] && seen[3]); ++seed) {
        lab_semicrf_guard_kind k = lab_semicrf_guard_kind_of(seed);
        if (seen[k]) continue;
        seen[k] = 1;
        const uint64_t firsts[] = {0, 511, 0x40000000ull * 7 + 0x20000000ull};
        for (size_t f = 0; f < sizeof firsts / sizeof firsts[0]; ++f) {
            lab_semicrf_guard_fill(got, NW, seed, firsts[f]);
            size_t bad = 0;
            for (size_t i = 0; i < NW; ++i) {
                uint64_t idx = firsts[f] + i + 1;
                uint32_t u = lab_rng_u32(seed, LAB_SEMICRF_STREAM_GUARD, idx);
                float nrm = lab_rng_normal(seed, LAB_SEMICRF_STREAM_GUARD ^ 0x100u, idx), want;
                switch (k) {
                case LAB_SEMICRF_GUARD_ZEROS: want = 0.0f; break;
                case LAB_SEMICRF_GUARD_FINITE: want = nrm; break;
                case LAB_SEMICRF_GUARD_STALE: memcpy(&want, &u, 4); break;
                default: want = u % 16u == 0 ? -INFINITY : u % 16u == 1 ? INFINITY : u % 16u == 2 ? NAN : nrm;
                }
                bad += memcmp(got + 4 * i, &want, 4) != 0;
            }
            cr_expect_eq(bad, 0u, "seed %llu (%s) first %#llx: %zu of %d words differ", (unsigned long long)seed,
                         lab_semicrf_guard_kind_name(k), (unsigned long long)firsts[f], bad, NW);
        }
    }
    cr_expect(seen[0] && seen[1] && seen[2] && seen[3], "seeds 1..199 give every guard kind");
}
