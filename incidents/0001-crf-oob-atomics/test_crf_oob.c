/* test_crf_oob: incident 0001: the bug's stray loads and atomics and the fixes' none, the NaN that depends on what neighbouring memory holds, the padding columns the fix must leave at zero, the write-up's contention belief as a model check of the CPU emulation and as a GPU test with real atomicAdd, and the CUDA kernel against the emulation (the shared kernel's own tests: tests/test_semicrf.c). */
#include <criterion/criterion.h>

#include <float.h>
#include <math.h>
#include <string.h>

#include "lab_test_case.h"
#include "crf_contention.h"
#include "crf_oob.h"
#include "lab_incident.h"
#include "lab_rng.h"
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
        /* the fix's masked lanes leave its padding columns at exactly 0 (the criterion judges it on every seed) */
        cr_expect_eq(lab_result_get(&f, "pad_nonzero"), 0.0, "seed %llu", (unsigned long long)s);
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

#ifdef LAB_HAVE_CUDA
/* ---- the contention claim on a real GPU ------------------------------------------------------------ */
/* The write-up believed that 25 masked lanes atomically adding to one address corrupt the sum. The CPU emulation
 * cannot test that (its atomics are serialised). These tests can fail on a GPU: every value added is an exact
 * zero or a multiple of 1/4 with every partial sum below 2^22 (cc_premise checks it), so float32 addition is exact
 * in any order and each address must end at init + blocks * reps * (its lanes' values) bit for bit. A lost or
 * duplicated update changes that sum by a whole value; a zero that changed a value would change its bits. The
 * control with a plain read-modify-write shows the same check failing where updates really are lost. */

#define CC_QUANTUM 0.25

/* Exact expectation of a launch: init[a] + blocks * reps * sum of the lane values at a, in double. Checks the
 * premise that makes it order-independent: init and values multiples of CC_QUANTUM (or init anything, where only
 * zeros are added: x + 0 = x for every x but -0, and no init here is -0 or subnormal, which PTX's atom.add.f32
 * flushes to zero), and every partial sum within 2^24 quanta. */
static void cc_expect(const float *init, int n_addr, const int *addr, const float *val, int lanes, int blocks, int reps,
                      double *exp)
{
    static double bound[4096]; /* per address: |init| + the sum of |every value added there| */
    cr_assert_leq(n_addr, 4096);
    for (int a = 0; a < n_addr; ++a) {
        exp[a] = init[a];
        bound[a] = 0.0;
        cr_assert(!(init[a] == 0.0f && signbit(init[a])), "init[%d] is -0", a);
        cr_assert(init[a] == 0.0f || fabsf(init[a]) >= FLT_MIN, "init[%d] is subnormal", a);
    }
    int nonzero_at[4096];
    memset(nonzero_at, 0, sizeof nonzero_at);
    for (int t = 0; t < lanes; ++t) {
        double v = (double)val[t] * blocks * reps;
        exp[addr[t]] += v;
        if (val[t] != 0.0f) {
            nonzero_at[addr[t]] = 1;
            cr_assert_eq(fmod(val[t], CC_QUANTUM), 0.0, "lane %d: value %g not a multiple of %g", t, val[t], CC_QUANTUM);
        }
        bound[addr[t]] += fabs(v);
    }
    /* exactness is per address: every partial sum at a is at most |init[a]| + bound[a] in magnitude */
    for (int a = 0; a < n_addr; ++a) {
        if (!nonzero_at[a]) continue; /* only zeros added: x + 0 = x */
        cr_assert_eq(fmod(init[a], CC_QUANTUM), 0.0, "init[%d] = %g", a, init[a]);
        cr_assert_lt(fabs(init[a]) + bound[a], 16777216.0 * CC_QUANTUM, "address %d: partial sums could leave the exact range", a);
    }
}

/* Runs a launch and counts the addresses whose bits differ from the exact expectation. */
static int cc_mismatches(const float *init, int n_addr, const int *addr, const float *val, int lanes, int blocks,
                         int reps, crf_cont_op op, int *first)
{
    double exp[4096];
    float out[4096];
    cc_expect(init, n_addr, addr, val, lanes, blocks, reps, exp);
    cr_assert_eq(crf_contention_cuda(init, n_addr, addr, val, lanes, blocks, reps, op, out), LAB_OK, "%s", lab_err_msg());
    int bad = 0;
    *first = -1;
    for (int a = 0; a < n_addr; ++a) {
        float e = (float)exp[a];
        cr_assert_eq((double)e, exp[a], "expectation of address %d not representable", a);
        if (memcmp(&e, &out[a], sizeof e) != 0) {
            if (*first < 0) *first = a;
            ++bad;
        }
    }
    return bad;
}

/* Known contents: normal floats with arbitrary mantissas where only zeros are added, multiples of 1/4 elsewhere. */
static void cc_fill(float *init, int n, int quantised)
{
    for (int a = 0; a < n; ++a) {
        double x = lab_rng_normal(18, 0x00c0c001u, (uint64_t)a);
        init[a] = quantised ? (float)(CC_QUANTUM * floor(x * 1000.0)) : (float)(x * pow(2.0, (a % 40) - 20));
        if (a % 17 == 0) init[a] = 0.0f; /* +0, what a cleared gradient buffer holds */
    }
}

/* Real atomicAdd under four patterns of contention, each checked bit for bit:
 * 1. the clamped kernel's row: 64 lanes, lanes 39..63 clamped onto address 38, the 39 real lanes adding 1..39
 *    and the 25 padding lanes an exact +0 (the masked marginal): 26 lanes on one address per block, 4096 blocks;
 * 2. zeros only: 1024 lanes adding +0 and -0 onto 4 addresses of arbitrary normal values (256 lanes each);
 * 3. a whole warp per address: 1024 lanes, 32 addresses, lane t adding (1 + t % 4) / 4;
 * 4. every thread of the grid on one address: 1024 lanes x 4096 blocks adding t % 3 (4,194,304 additions that
 *    sum to 4,190,208).
 * It fails if any update is lost or applied twice (an exact sum changes) or if adding a zero changes a value. */
Test(crf_oob, cuda_atomic_contention_loses_no_update, .timeout = 120)
{
    lab_test_need_gpu();
    static int addr[1024];
    static float val[1024], init[64];
    int first;
    /* 1 */
    for (int t = 0; t < 64; ++t) addr[t] = t < 39 ? t : 38, val[t] = t < 39 ? (float)(t + 1) : 0.0f;
    cc_fill(init, 39, 1);
    cr_expect_eq(cc_mismatches(init, 39, addr, val, 64, 4096, 4, CRF_CONT_ATOMIC, &first), 0,
                 "clamped row: address %d off its exact sum", first);
    /* 2 */
    for (int t = 0; t < 1024; ++t) addr[t] = t % 4, val[t] = t % 2 ? -0.0f : 0.0f;
    cc_fill(init, 4, 0);
    cr_expect_eq(cc_mismatches(init, 4, addr, val, 1024, 4096, 4, CRF_CONT_ATOMIC, &first), 0,
                 "zeros: address %d changed", first);
    /* 3 */
    for (int t = 0; t < 1024; ++t) addr[t] = t / 32, val[t] = (float)(CC_QUANTUM * (1 + t % 4));
    cc_fill(init, 32, 1);
    cr_expect_eq(cc_mismatches(init, 32, addr, val, 1024, 2048, 2, CRF_CONT_ATOMIC, &first), 0,
                 "warp per address: address %d off its exact sum", first);
    /* 4 */
    for (int t = 0; t < 1024; ++t) addr[t] = 0, val[t] = (float)(t % 3);
    cc_fill(init, 1, 1);
    cr_expect_eq(cc_mismatches(init, 1, addr, val, 1024, 4096, 1, CRF_CONT_ATOMIC, &first), 0,
                 "grid on one address: off its exact sum");
}

/* The control: the same check on a plain read-modify-write (no atomic) must see lost updates, patterns 3 and 4
 * above; if it did not, the check above would prove nothing. Both put 32 lanes of one warp adding non-zero values
 * onto one address in one instruction: every lane loads the same old value and one store survives, so the loss is
 * certain, not a matter of timing (pattern 1's shared address gets only zeros within a warp, so it is left out). */
Test(crf_oob, cuda_plain_rmw_control_loses_updates, .timeout = 120)
{
    lab_test_need_gpu();
    static int addr[1024];
    static float val[1024], init[64];
    int first;
    for (int t = 0; t < 1024; ++t) addr[t] = t / 32, val[t] = (float)(CC_QUANTUM * (1 + t % 4));
    cc_fill(init, 32, 1);
    cr_expect_gt(cc_mismatches(init, 32, addr, val, 1024, 2048, 2, CRF_CONT_PLAIN_RMW, &first), 0,
                 "a plain read-modify-write lost nothing with a warp per address");
    for (int t = 0; t < 1024; ++t) addr[t] = 0, val[t] = (float)(t % 3);
    cc_fill(init, 1, 1);
    cr_expect_gt(cc_mismatches(init, 1, addr, val, 1024, 4096, 1, CRF_CONT_PLAIN_RMW, &first), 0,
                 "a plain read-modify-write lost nothing with the grid on one address");
}

/* Bad arguments are errors naming the argument, with or without a GPU (checked before any CUDA call). */
Test(crf_oob, cuda_contention_rejects_bad_arguments)
{
    int addr[2] = {0, 5};
    float val[2] = {1.0f, 1.0f}, init[4] = {0}, out[4];
    cr_expect_eq(crf_contention_cuda(init, 4, addr, val, 2, 1, 1, CRF_CONT_ATOMIC, out), LAB_ERR_ARG);
    cr_expect(strstr(lab_err_msg(), "lane_addr[1] = 5") != NULL, "%s", lab_err_msg());
    addr[1] = 1;
    cr_expect_eq(crf_contention_cuda(init, 4, addr, val, 2, 0, 1, CRF_CONT_ATOMIC, out), LAB_ERR_ARG);
    cr_expect(strstr(lab_err_msg(), "blocks = 0") != NULL, "%s", lab_err_msg());
    cr_expect_eq(crf_contention_cuda(init, 4, addr, val, 2, 1, 65, CRF_CONT_ATOMIC, out), LAB_ERR_ARG);
    cr_expect(strstr(lab_err_msg(), "reps = 65") != NULL, "%s", lab_err_msg());
}

/* The real kernel (kernels/lab_semicrf.cu) in the clamped layout, where up to 26 x 26 lanes of one block add onto
 * one transition address (25 of each 26 an exact zero), against the padded layout, where every lane owns its
 * address: with float64 atomics both sums are the same set of marginals in different orders, so they agree to
 * rounding (0002 measured run-to-run differences of float64 accumulators near 1e-17). A lost update of any marginal
 * above 1e-10 in the clamped run fails the bound (1e-10, 0002's float64 run-to-run target). Seeds 3 and 10 (T =
 * 100 and 200). */
Test(crf_oob, cuda_clamped_kernel_loses_no_update_f64, .timeout = 300)
{
    lab_test_need_gpu();
    for (uint64_t s = 3; s <= 10; s += 7) {
        lab_semicrf_problem p;
        cr_assert_eq(lab_semicrf_case_problem(&p, s), LAB_OK, "%s", lab_err_msg());
        lab_semicrf_config cp = {LAB_SEMICRF_LAYOUT_PADDED, LAB_SEMICRF_ACC_F64_ATOMIC, 0, s, s};
        lab_semicrf_config cc = {LAB_SEMICRF_LAYOUT_CLAMPED, LAB_SEMICRF_ACC_F64_ATOMIC, 0, s, s};
        lab_semicrf_out a, b;
        cr_assert_eq(lab_semicrf_cuda_run(&p, &cp, 1, &a, NULL), LAB_OK, "%s", lab_err_msg());
        cr_assert_eq(lab_semicrf_cuda_run(&p, &cc, 1, &b, NULL), LAB_OK, "%s", lab_err_msg());
        cr_assert(a.acc_trans && b.acc_trans && a.acc_dur && b.acc_dur && a.acc_cum && b.acc_cum);
        double d = 0.0;
        size_t nc = (size_t)p.B * (size_t)(p.T + 1) * (size_t)p.C;
        for (size_t i = 0; i < (size_t)p.C * (size_t)p.C; ++i) d = fmax(d, fabs(a.acc_trans[i] - b.acc_trans[i]));
        for (size_t i = 0; i < (size_t)p.K * (size_t)p.C; ++i) d = fmax(d, fabs(a.acc_dur[i] - b.acc_dur[i]));
        for (size_t i = 0; i < nc; ++i) d = fmax(d, fabs(a.acc_cum[i] - b.acc_cum[i]));
        cr_expect_leq(d, 1e-10, "seed %llu: clamped and padded float64 sums differ by %g", (unsigned long long)s, d);
        cr_expect_eq(b.oob_writes, 0u);
        cr_expect_eq(a.pad_nonzero, 0u, "seed %llu: the padded kernel left %zu non-zero padding values",
                     (unsigned long long)s, a.pad_nonzero);
        lab_semicrf_out_free(&a);
        lab_semicrf_out_free(&b);
        lab_semicrf_problem_free(&p);
    }
}
#endif
