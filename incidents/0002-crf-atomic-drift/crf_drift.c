/* crf_drift: incident 0002, float32 atomic accumulation in the semi-Markov CRF backward, whose order (and so whose bits) changed from run to run: variants, criterion, goldens, training drift. */
#include "crf_drift.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_gnuplot.h"
#include "lab_par.h"
#include "lab_rng.h"

#ifdef LAB_HAVE_CUDA
#include "lab_cuda.h"
#endif

uint64_t crf_drift_schedule_seed(uint64_t seed, int which)
{
    /* two unrelated 64-bit keys per case seed */
    uint64_t hi = lab_rng_u32(seed, LAB_SEMICRF_STREAM_SCHED ^ 0x5000u, 2 * (uint64_t)which);
    uint64_t lo = lab_rng_u32(seed, LAB_SEMICRF_STREAM_SCHED ^ 0x5000u, 2 * (uint64_t)which + 1);
    return (hi << 32 | lo) & ((1ull << 53) - 1);
}

lab_status crf_drift_golden_bless(const char *dir)
{
    const uint64_t seeds[2] = {CRF_DRIFT_GOLDEN_SEED_A, CRF_DRIFT_GOLDEN_SEED_B};
    return lab_semicrf_golden_bless(dir, LAB_INCIDENT_ID, seeds, 2);
}

static const char *cd_accum_name(lab_semicrf_accum a)
{
    return a == LAB_SEMICRF_ACC_F32_ATOMIC ? "float32 atomics" : a == LAB_SEMICRF_ACC_F64_ATOMIC ? "float64 atomics"
                                                                                                 : "deterministic";
}

/* The criterion over two runs of one problem (CPU or CUDA) and the reference. */
static lab_status cd_judge(uint64_t seed, lab_semicrf_accum accum, const lab_semicrf_problem *p, const lab_semicrf_out *a,
                           const lab_semicrf_out *b, const lab_semicrf_ref *ref, const char *golden_dir,
                           lab_case_result *r, crf_drift_verdict *vout)
{
    crf_drift_verdict v;
    memset(&v, 0, sizeof v);
    v.T = p->T;
    lab_semicrf_compare(p, a, ref, &v.err);
    v.tol = lab_semicrf_tolerance(ref, p->B);
    lab_semicrf_run_to_run(p, a, b, &v.r2r);
    v.r2r_measure = accum == LAB_SEMICRF_ACC_F64_ATOMIC && !isnan(v.r2r.acc_max) ? v.r2r.acc_max : v.r2r.max;
    v.golden_err = NAN;
    if (golden_dir && (seed == CRF_DRIFT_GOLDEN_SEED_A || seed == CRF_DRIFT_GOLDEN_SEED_B)) {
        lab_status st = lab_semicrf_golden_compare(golden_dir, seed, p, a, &v.golden_err);
        if (st != LAB_OK) return st;
        v.golden_checked = 1;
    }
    int finite = v.err.nonfinite == 0;
    /* log Z on the tolerance's own scale: absolute error against tol (0001's crf_oob.c says why not relative). */
    double logz_abs = 0.0;
    for (int bb = 0; bb < p->B; ++bb)
        logz_abs = lab_semicrf_max_nan(logz_abs, isfinite(a->logZ[bb]) ? fabs((double)a->logZ[bb] - ref->logZ[bb]) : NAN);
    int within = v.err.max <= v.tol && logz_abs <= v.tol;
    int reproducible = accum == LAB_SEMICRF_ACC_DETERMINISTIC ? v.r2r.n_diff == 0 : v.r2r_measure <= CRF_DRIFT_R2R_TOL;
    int golden_ok = !v.golden_checked || v.golden_err <= v.tol;
    v.passed = finite && within && reproducible && golden_ok;
    if (r) {
        lab_result_metric(r, "r2r", v.r2r_measure);
        lab_result_metric(r, "r2r_out_max", v.r2r.max);
        lab_result_metric(r, "r2r_trans", v.r2r.trans);
        lab_result_metric(r, "r2r_dur", v.r2r.dur);
        lab_result_metric(r, "r2r_cum", v.r2r.cum);
        lab_result_metric(r, "r2r_diff_frac", (double)v.r2r.n_diff / (double)v.r2r.n);
        lab_result_metric(r, "max_rel_err", v.err.max);
        lab_result_metric(r, "logz_abs_err", logz_abs);
        lab_result_metric(r, "tol", v.tol);
        lab_result_metric(r, "T", (double)v.T);
        if (v.golden_checked) lab_result_metric(r, "golden_rel_err", v.golden_err);
        if (!finite)
            lab_result_verdict(r, 0, "%zu non-finite gradients", v.err.nonfinite);
        else if (!reproducible)
            lab_result_verdict(r, 0, "two schedules disagree (%s, T=%d): max |dA - dB| %.3g (trans %.3g, dur %.3g, cum %.3g), "
                               "%zu of %zu values differ", cd_accum_name(accum), v.T, v.r2r_measure, v.r2r.trans, v.r2r.dur,
                               v.r2r.cum, v.r2r.n_diff, v.r2r.n);
        else if (!within)
            lab_result_verdict(r, 0, "normalised error %.3g (log Z off by %.3g) over tolerance %.3g", v.err.max, logz_abs, v.tol);
        else if (!golden_ok)
            lab_result_verdict(r, 0, "off the golden of seed %llu: %.3g (tol %.3g)", (unsigned long long)seed, v.golden_err, v.tol);
        else
            lab_result_verdict(r, 1, "%s: two schedules differ by %.3g%s; normalised error %.3g <= %.3g (T=%d)%s",
                               cd_accum_name(accum), v.r2r_measure,
                               accum == LAB_SEMICRF_ACC_F64_ATOMIC ? " before rounding" : " (bitwise equal)", v.err.max,
                               v.tol, v.T, v.golden_checked ? "; golden agrees" : "");
    }
    if (vout) *vout = v;
    return LAB_OK;
}

lab_status crf_drift_run(uint64_t seed, lab_semicrf_accum accum, const char *golden_dir, lab_case_result *r,
                         crf_drift_verdict *v)
{
    lab_semicrf_problem p;
    lab_semicrf_ref ref;
    lab_semicrf_out a, b;
    lab_status st = lab_semicrf_case_problem(&p, seed);
    if (st != LAB_OK) return st;
    if ((st = lab_semicrf_reference(&p, &ref)) != LAB_OK) {
        lab_semicrf_problem_free(&p);
        return st;
    }
    lab_semicrf_config ca = {LAB_SEMICRF_LAYOUT_PADDED, accum, LAB_SEMICRF_GUARDS_ALL, seed, crf_drift_schedule_seed(seed, 0)};
    lab_semicrf_config cb = ca;
    cb.schedule_seed = crf_drift_schedule_seed(seed, 1);
    if ((st = lab_semicrf_emulate(&p, &ca, &a)) == LAB_OK) {
        if ((st = lab_semicrf_emulate(&p, &cb, &b)) == LAB_OK) {
            st = cd_judge(seed, accum, &p, &a, &b, &ref, golden_dir, r, v);
            lab_semicrf_out_free(&b);
        }
        lab_semicrf_out_free(&a);
    }
    lab_semicrf_ref_free(&ref);
    lab_semicrf_problem_free(&p);
    return st;
}

/* Two emulated runs of the variant (param: its accumulation) under the seed's two schedules, judged. */
static lab_status cd_run_cpu(const lab_case *c, lab_case_result *r)
{
    const lab_semicrf_group *g = c->group;
    lab_semicrf_accum accum = (lab_semicrf_accum)c->variant->param;
    lab_semicrf_config ca = {LAB_SEMICRF_LAYOUT_PADDED, accum, LAB_SEMICRF_GUARDS_ALL, c->seed,
                             crf_drift_schedule_seed(c->seed, 0), c->exact_alloc};
    lab_semicrf_config cb = ca;
    cb.schedule_seed = crf_drift_schedule_seed(c->seed, 1);
    lab_semicrf_out a, b;
    lab_status st = lab_semicrf_emulate(&g->p, &ca, &a);
    if (st != LAB_OK) return st;
    if ((st = lab_semicrf_emulate(&g->p, &cb, &b)) == LAB_OK) {
        st = cd_judge(c->seed, accum, &g->p, &a, &b, &g->ref, c->golden_dir, r, NULL);
        lab_semicrf_out_free(&b);
    }
    lab_semicrf_out_free(&a);
    return st;
}

lab_status crf_drift_train(uint64_t seed, int T, lab_semicrf_accum accum, int steps, float lr, double *sep,
                           double *nll_a, int *nan_step)
{
    lab_semicrf_problem pa, pb;
    lab_semicrf_gold g;
    lab_status st = lab_semicrf_problem_init(&pa, 1, T, LAB_SEMICRF_K_MAX, LAB_SEMICRF_C, 1);
    if (st != LAB_OK) return st;
    if ((st = lab_semicrf_problem_init(&pb, 1, T, LAB_SEMICRF_K_MAX, LAB_SEMICRF_C, 1)) != LAB_OK) {
        lab_semicrf_problem_free(&pa);
        return st;
    }
    lab_semicrf_problem_fill(&pa, seed);
    lab_semicrf_problem_fill(&pb, seed);
    if ((st = lab_semicrf_gold_make(&pa, seed, &g)) != LAB_OK) goto done;
    *nan_step = -1;
    size_t nt = (size_t)LAB_SEMICRF_C * LAB_SEMICRF_C, nd = (size_t)LAB_SEMICRF_K_MAX * LAB_SEMICRF_C;
    for (int i = 0; i < steps; ++i) {
        lab_semicrf_config ca = {LAB_SEMICRF_LAYOUT_PADDED, accum, LAB_SEMICRF_GUARDS_ALL, seed,
                                 crf_drift_schedule_seed(seed * 1000003u + (uint64_t)i, 0)};
        lab_semicrf_config cb = ca;
        cb.schedule_seed = crf_drift_schedule_seed(seed * 1000003u + (uint64_t)i, 1);
        double nll = 0.0;
        if ((st = lab_semicrf_sgd_step(&pa, &g, &ca, lr, &nll)) != LAB_OK) goto done;
        if ((st = lab_semicrf_sgd_step(&pb, &g, &cb, lr, NULL)) != LAB_OK) goto done;
        double m = 0.0;
        int bad = 0;
        for (size_t j = 0; j < nt; ++j) {
            double d = fabs((double)pa.trans[j] - (double)pb.trans[j]);
            bad |= !isfinite(pa.trans[j]) || !isfinite(pb.trans[j]);
            m = d > m ? d : m;
        }
        for (size_t j = 0; j < nd; ++j) {
            double d = fabs((double)pa.dur[j] - (double)pb.dur[j]);
            bad |= !isfinite(pa.dur[j]) || !isfinite(pb.dur[j]);
            m = d > m ? d : m;
        }
        if (bad && *nan_step < 0) *nan_step = i;
        if (sep) sep[i] = m;
        if (nll_a) nll_a[i] = nll;
    }
done:
    lab_semicrf_gold_free(&g);
    lab_semicrf_problem_free(&pa);
    lab_semicrf_problem_free(&pb);
    return st;
}

/* ---- figures ------------------------------------------------------------------------------------- */

#define CD_TRAIN_STEPS 200
#define CD_TRAIN_T 60
#define CD_TRAIN_LR 0.5f
#define CD_TRAIN_SEED 7u

static int cd_variant_index(const char *name)
{
    static const char *const names[3] = {"bug-f32-atomic", "fix-f64-atomic", "fix-deterministic"};
    for (int i = 0; i < 3; ++i)
        if (strcmp(name, names[i]) == 0) return i;
    return -1;
}

lab_status crf_drift_figures(const struct lab_figure_ctx *fx)
{
    static const char *const series[3] = {"bug-f32-atomic", "fix-f64-atomic", "fix-deterministic"};
    static const int Ts[3] = {100, 200, 500};
    char dat[4096], png[4096];
    /* 1. run-to-run difference against T: the largest over the replay's seeds, per variant */
    double worst[3][3];
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) worst[i][j] = -1.0;
    for (size_t i = 0; i < fx->n_cases; ++i) {
        const lab_figure_case *fc = &fx->cases[i];
        int vi = cd_variant_index(fc->variant->name);
        double T = lab_result_get(&fc->r, "T"), d = lab_result_get(&fc->r, "r2r");
        if (vi < 0 || isnan(T) || isnan(d)) continue;
        for (int j = 0; j < 3; ++j)
            if ((int)T == Ts[j] && d > worst[vi][j]) worst[vi][j] = d;
    }
    snprintf(dat, sizeof dat, "%s/%s-r2r-vs-T.dat", fx->plots_dir, fx->incident->id);
    snprintf(png, sizeof png, "%s/%s-r2r-vs-T.png", fx->plots_dir, fx->incident->id);
    FILE *f = lab_gnuplot_dat_open(dat, "T", series, 3);
    if (!f) return LAB_ERR_IO;
    for (int j = 0; j < 3; ++j) {
        fprintf(f, "%d", Ts[j]);
        for (int vi = 0; vi < 3; ++vi) {
            if (worst[vi][j] < 0.0) fprintf(f, " NaN");
            else fprintf(f, " %.6g", worst[vi][j]);
        }
        fprintf(f, "\n");
    }
    lab_status st = lab_gnuplot_dat_close(f, dat);
    if (st != LAB_OK) return st;
    lab_gnuplot_spec spec = {dat, png, "worst run-to-run difference per T (f64 fix: its accumulators); fix-deterministic 0 at "
                             "every T, off the log axis",
                             "T", "max abs run-to-run difference (f64 fix: its accumulators)", 0, 1, 1};
    if ((st = lab_gnuplot_xy(fx->root, &spec)) != LAB_OK && st != LAB_ERR_UNSUPPORTED) return st;

    /* 2. training drift: two SGD runs per variant with different schedules */
    double *sep = calloc(3 * CD_TRAIN_STEPS, sizeof(double));
    if (!sep) return lab_err_set(LAB_ERR_NOMEM, "crf_drift: out of memory for the training figure");
    int nan_step[3];
    static const lab_semicrf_accum acc[3] = {LAB_SEMICRF_ACC_F32_ATOMIC, LAB_SEMICRF_ACC_F64_ATOMIC,
                                             LAB_SEMICRF_ACC_DETERMINISTIC};
    for (int vi = 0; vi < 3 && st == LAB_OK; ++vi)
        st = crf_drift_train(CD_TRAIN_SEED, CD_TRAIN_T, acc[vi], CD_TRAIN_STEPS, CD_TRAIN_LR, sep + vi * CD_TRAIN_STEPS, NULL,
                             &nan_step[vi]);
    if (st == LAB_OK) {
        snprintf(dat, sizeof dat, "%s/%s-training-drift.dat", fx->plots_dir, fx->incident->id);
        snprintf(png, sizeof png, "%s/%s-training-drift.png", fx->plots_dir, fx->incident->id);
        f = lab_gnuplot_dat_open(dat, "step", series, 3);
        if (!f) st = LAB_ERR_IO;
    }
    if (st == LAB_OK) {
        for (int i = 0; i < CD_TRAIN_STEPS; ++i) {
            fprintf(f, "%d", i + 1);
            for (int vi = 0; vi < 3; ++vi) fprintf(f, " %.6g", sep[vi * CD_TRAIN_STEPS + i]);
            fprintf(f, "\n");
        }
        st = lab_gnuplot_dat_close(f, dat);
    }
    /* the title says what the figure cannot show: separations of exactly 0 (no place on a log axis) and NaN steps */
    char zero[64] = "", nans[96] = "no NaN";
    for (int vi = 0, nz = 0, nn = 0; vi < 3 && st == LAB_OK; ++vi) {
        int all0 = 1;
        for (int i = 0; i < CD_TRAIN_STEPS && all0; ++i) all0 = sep[vi * CD_TRAIN_STEPS + i] == 0.0;
        static const char *const shortname[3] = {"bug", "f64 fix", "det. fix"};
        if (all0) snprintf(zero + strlen(zero), sizeof zero - strlen(zero), "%s%s", nz++ ? ", " : "", shortname[vi]);
        if (nan_step[vi] < 0) continue;
        size_t at = nn++ ? strlen(nans) : 0;
        snprintf(nans + at, sizeof nans - at, "%s%s NaN at step %d", at ? ", " : "", shortname[vi], nan_step[vi] + 1);
    }
    free(sep);
    if (st != LAB_OK) return st;
    char title[256];
    snprintf(title, sizeof title, "separation of two SGD runs, T=%d lr=%.2g; %s%s%s", CD_TRAIN_T, (double)CD_TRAIN_LR, zero,
             zero[0] ? " 0 at every step (off the log axis); " : "", nans);
    lab_gnuplot_spec spec2 = {dat, png, title, "step", "max |theta_A - theta_B|", 0, 1, 1};
    st = lab_gnuplot_xy(fx->root, &spec2);
    return st == LAB_ERR_UNSUPPORTED ? LAB_OK : st;
}

/* ---- CUDA ------------------------------------------------------------------------------------------ */

#ifdef LAB_HAVE_CUDA
/* The configuration of a CUDA case: two real runs on the GPU, the hardware picks the order of the atomics. */
static lab_semicrf_config cd_cuda_config(const lab_case *c)
{
    lab_semicrf_config cfg = {LAB_SEMICRF_LAYOUT_PADDED, (lab_semicrf_accum)c->variant->param, LAB_SEMICRF_GUARDS_ALL,
                              c->seed, 0, c->exact_alloc};
    return cfg;
}

/* A case's two GPU runs judged, and on a sample of seeds the GPU against the CPU emulation of the same variant on
 * the same inputs (informative: expf, logf and the order differ, so agreement is within the tolerance, not bitwise). */
static lab_status cd_judge_cuda(const lab_case *c, const lab_semicrf_out *a, const lab_semicrf_out *b, lab_case_result *r)
{
    const lab_semicrf_group *g = c->group;
    lab_semicrf_config cc = cd_cuda_config(c);
    lab_status st = cd_judge(c->seed, cc.accum, &g->p, a, b, &g->ref, c->golden_dir, r, NULL);
    lab_semicrf_out cpu;
    cc.schedule_seed = crf_drift_schedule_seed(c->seed, 0);
    if (st == LAB_OK && lab_case_xcheck(c) && (st = lab_semicrf_emulate(&g->p, &cc, &cpu)) == LAB_OK) {
        lab_semicrf_r2r d;
        lab_semicrf_run_to_run(&g->p, a, &cpu, &d);
        lab_result_metric(r, "gpu_vs_cpu_max_abs", d.max);
        lab_semicrf_out_free(&cpu);
    }
    if (st == LAB_OK && !isnan(g->ref_check)) lab_result_metric(r, "ref_device_vs_cpu", g->ref_check);
    return st;
}

typedef struct {
    const lab_case *cases;
    const lab_semicrf_out *a, *b;
    lab_case_result *results;
} cd_judge_job;

static lab_status cd_judge_one(void *ctx, size_t i)
{
    const cd_judge_job *j = ctx;
    return cd_judge_cuda(&j->cases[i], &j->a[i], &j->b[i], &j->results[i]);
}

/* A seed batch of one variant (lab_incident.run_cuda_batch): the batch run twice, each run one launch per kernel
 * for every seed's problem (the seeds share their T), each case judged alone on several threads. run_cuda is this
 * with one case. */
static lab_status cd_run_cuda_batch(const lab_case *cases, size_t n, lab_case_result *results)
{
    lab_semicrf_out *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b);
    lab_status st = a && b ? LAB_OK : lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": out of memory for a seed batch of %zu", n);
    if (st == LAB_OK) st = lab_semicrf_cuda_run_cases(cases, n, cd_cuda_config, a);
    if (st == LAB_OK) st = lab_semicrf_cuda_run_cases(cases, n, cd_cuda_config, b);
    if (st == LAB_OK) {
        cd_judge_job job = {cases, a, b, results};
        st = lab_par_for(n, lab_par_threads(), cd_judge_one, &job);
    }
    for (size_t i = 0; i < n && a && b; ++i) lab_semicrf_out_free(&a[i]), lab_semicrf_out_free(&b[i]);
    free(a), free(b);
    return st;
}

static lab_status cd_run_cuda(const lab_case *c, lab_case_result *r) { return cd_run_cuda_batch(c, 1, r); }

static lab_status cd_bench(FILE *out)
{
    char why[240];
    lab_status st = lab_cuda_ready(why, sizeof why);
    if (st != LAB_OK) return st == LAB_ERR_UNSUPPORTED ? lab_err_set(LAB_ERR_UNSUPPORTED, "%s", why) : st;
    /* bench shapes: the training shape, a small batch of short sequences (launch and reduction
     * overheads weigh most), and every lane real with short durations */
    static const int shapes[3][4] = {{32, 500, LAB_SEMICRF_K_MAX, LAB_SEMICRF_C}, {8, 200, LAB_SEMICRF_K_MAX, LAB_SEMICRF_C},
                                     {64, 300, 10, LAB_SEMICRF_C_PAD}};
    for (int i = 0; i < 3 && st == LAB_OK; ++i) st = lab_semicrf_cuda_bench(out, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3]);
    return st;
}
#endif

/* The bug is detected on every seed: on the CPU the two schedules are two seeded permutations and differ on
 * every seed (30 of 30 measured); on the GPU two runs of real atomics differed on 256 of 256 seeds (H100) and
 * 64 of 64 (H200). Two GPU runs could in principle meet the same order; a stated rate below 1 would need 169
 * seeds (0.95) to be judged with power (lab_binom.h), so the claim is every seed, and a seed where it fails is
 * printed with its replay command. */
static const lab_variant crf_drift_variants[] = {
    {.name = "bug-f32-atomic", .role = LAB_ROLE_BUG, .param = LAB_SEMICRF_ACC_F32_ATOMIC,
     .detect = LAB_DETECT_FAIL,
     .what = "gradients accumulated with float32 atomics in the order the blocks reach them (a seeded schedule on "
             "the CPU)"},
    {.name = "fix-f64-atomic", .role = LAB_ROLE_FIX, .param = LAB_SEMICRF_ACC_F64_ATOMIC,
     .what = "the write-up's fix: float64 atomics, rounded to float32 once at the end"},
    {.name = "fix-deterministic", .role = LAB_ROLE_FIX, .param = LAB_SEMICRF_ACC_DETERMINISTIC,
     .what = "per-block float32 workspaces (no atomics), then reductions in one fixed order (a pairwise tree over "
             "blocks)"},
};

/* What the criterion compares, for plots (lab_metric_spec): the first separates bug and fix. */
static const lab_metric_spec cd_metric_specs[] = {
    {"r2r", CRF_DRIFT_R2R_TOL, 1, NULL, "run-to-run difference of two schedules: float32 atomics far above the line, the deterministic fix at exactly 0"},
    {"max_rel_err", 0, 1, "tol", "normalised gradient error as a fraction of the case's tolerance (tol from T): below 1 passes"},
    {"logz_abs_err", 0, 1, "tol", "absolute error of the float32 log Z as a fraction of the same tolerance: below 1 passes"},
};

const lab_incident crf_drift_incident = {
    .id = LAB_INCIDENT_ID,
    .title = "semi-Markov CRF backward: float32 atomics make gradients differ run to run",
    .variants = crf_drift_variants,
    .n_variants = (int)(sizeof crf_drift_variants / sizeof crf_drift_variants[0]),
    .setup = lab_semicrf_group_setup,
    .teardown = lab_semicrf_group_teardown,
    .run_cpu = cd_run_cpu,
    .run_cuda = LAB_IF_CUDA(cd_run_cuda),
    .timeout_s = 60,
    .golden_bless = crf_drift_golden_bless,
    .default_seeds = 16,
    .bench = LAB_IF_CUDA(cd_bench),
    .seed_cost = lab_semicrf_seed_cost,
    .batch = {
        .run_cuda = LAB_IF_CUDA(cd_run_cuda_batch),
        .max = 256,
        .key = lab_semicrf_batch_key,
    },
    .plots = {
        .metric = "r2r",
        .log = 1,
        .drift_metric = "max_rel_err",
        .specs = cd_metric_specs,
        .n_specs = (int)(sizeof cd_metric_specs / sizeof cd_metric_specs[0]),
        .figures = crf_drift_figures,
    },
};

LAB_INCIDENT_REGISTER(crf_drift_incident);
