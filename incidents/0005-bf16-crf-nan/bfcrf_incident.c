/* bfcrf_incident: incident 0005's variants, criterion, probe check against the float64 reference and goldens, figures and registration. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfcrf.h"
#include "lab_fs.h"
#include "lab_gnuplot.h"
#include "lab_golden.h"
#include "lab_tensor.h"
#ifdef LAB_HAVE_CUDA
#include "lab_cuda.h"
#endif

#define NT BFCRF_TAGS

const double bfcrf_lrs[BFCRF_N_LRS] = {1.5e-4, 2.0e-4, 3.0e-4};

bfcrf_train_cfg bfcrf_case_cfg(uint64_t seed, bfcrf_prec p)
{
    bfcrf_train_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.lr = bfcrf_lrs[seed == 0 ? 0 : (seed - 1) % BFCRF_N_LRS];
    cfg.warmup = BFCRF_DEFAULT_WARMUP;
    cfg.steps = BFCRF_DEFAULT_STEPS;
    cfg.batch = BFCRF_DEFAULT_BATCH;
    cfg.prec = p;
    cfg.stop_at_nonfinite = 1;
    cfg.clip = BFCRF_DEFAULT_CLIP;
    cfg.feat_scale = BFCRF_DEFAULT_FEAT_SCALE;
    cfg.dual_loss = 1;
    cfg.crf_weight = BFCRF_CFG1_CRF_WEIGHT;
    if (seed != 0 && seed % BFCRF_DUAL_EVERY == 0) {
        cfg.lr = BFCRF_DUAL_LR;
        cfg.steps = BFCRF_DUAL_STEPS;
        cfg.dual_loss = 1;
        cfg.crf_weight = BFCRF_DUAL_CRF_WEIGHT;
    }
    return cfg;
}

/* ---------------------------------------------------------------------------------------------- */
/* Probe: the CRF alone on fixed large-score inputs, against the float64 reference (and the golden) */

/* The probe's tags: a grammatical chain from the label stream (every sequence full length). */
static void bfcrf_probe_tags(uint64_t seed, int *tags)
{
    for (int b = 0; b < BFCRF_PROBE_BATCH; ++b) {
        int prev = 0;
        for (int t = 0; t < BFCRF_TMAX; ++t) {
            /* B-k every 8th token, I-k after it, O otherwise: all transitions allowed. */
            int k = (int)((seed + (uint64_t)b + (uint64_t)t / 8) % BFCRF_TYPES);
            int tag = t % 8 == 0 ? 1 + 2 * k : (t % 8 < 3 ? 2 + 2 * k : 0);
            if (tag != 0 && !(tag & 1) && !bfcrf_allowed(prev, tag)) tag = 0;
            tags[b * BFCRF_TMAX + t] = tag;
            prev = tag;
        }
    }
}

lab_status bfcrf_probe_reference(uint64_t seed, double *logz, double *marg)
{
    bfcrf_params P;
    float *emis = malloc((size_t)BFCRF_PROBE_BATCH * BFCRF_TMAX * NT * sizeof *emis);
    int tags[BFCRF_PROBE_BATCH * BFCRF_TMAX];
    if (!emis) return lab_err_set(LAB_ERR_NOMEM, "crf: out of memory for the probe");
    bfcrf_probe_inputs(seed, BFCRF_PROBE_BATCH, BFCRF_PROBE_SCALE, &P, emis);
    bfcrf_probe_tags(seed, tags);
    for (int b = 0; b < BFCRF_PROBE_BATCH; ++b) {
        double gold;
        bfcrf_reference(&P, emis + (size_t)b * BFCRF_TMAX * NT, tags + b * BFCRF_TMAX, BFCRF_TMAX, &logz[b], &gold,
                      marg + (size_t)b * BFCRF_TMAX * NT);
    }
    free(emis);
    return LAB_OK;
}

/* The seed's probe group (bfcrf_probe_group): made on the CUDA backend only, where both variants judge the probe
 * against it; the CPU backend's cases train and get an empty group. */
static lab_status bfcrf_setup(const lab_case *c, void **out)
{
    bfcrf_probe_group *g = calloc(1, sizeof *g);
    if (!g) return lab_err_set(LAB_ERR_NOMEM, "crf: out of memory for the probe of seed %llu", (unsigned long long)c->seed);
    *out = g;
    if (c->backend != LAB_BACKEND_CUDA) return LAB_OK;
    double *marg = malloc((size_t)BFCRF_PROBE_BATCH * BFCRF_TMAX * NT * sizeof *marg); /* the reference's, unused here */
    lab_status st = marg ? LAB_OK : lab_err_set(LAB_ERR_NOMEM, "crf: out of memory for the probe of seed %llu",
                                                (unsigned long long)c->seed);
    if (st == LAB_OK) {
        bfcrf_probe_inputs(c->seed, BFCRF_PROBE_BATCH, BFCRF_PROBE_SCALE, &g->P, g->emis);
        st = bfcrf_probe_reference(c->seed, g->rlogz, marg);
    }
    for (int b = 0; b < BFCRF_PROBE_BATCH && st == LAB_OK; ++b) {
        size_t off = (size_t)b * BFCRF_TMAX * NT;
        g->clogz[b] = bfcrf_forward_bf16(&g->P, g->emis + off, BFCRF_TMAX, g->calpha + off);
    }
    free(marg);
    if (st != LAB_OK) {
        free(g);
        *out = NULL;
        return st;
    }
    g->made = 1;
    return LAB_OK;
}

static void bfcrf_teardown(void *g) { free(g); }

/* Loads the probe goldens of seed into logz [B] and marg [B, T, NT] (sha256, dtype, shape verified). */
static lab_status bfcrf_golden_load(const char *dir, uint64_t seed, double *logz, double *marg)
{
    lab_golden_manifest m;
    memset(&m, 0, sizeof m);
    lab_status st = lab_golden_manifest_read(dir, &m);
    if (st != LAB_OK) return st;
    char names[2][64];
    snprintf(names[0], sizeof names[0], "probe_logz_seed%llu.npy", (unsigned long long)seed);
    snprintf(names[1], sizeof names[1], "probe_marg_seed%llu.npy", (unsigned long long)seed);
    size_t want[2] = {BFCRF_PROBE_BATCH, (size_t)BFCRF_PROBE_BATCH * BFCRF_TMAX * NT};
    double *dst[2] = {logz, marg};
    for (int k = 0; k < 2 && st == LAB_OK; ++k) {
        const lab_golden_entry *e = lab_golden_find(&m, names[k]);
        if (!e) {
            st = lab_err_set(LAB_ERR_NOTFOUND, "%s/%s: not listed in %s (run `lab golden bless 0005`)", dir, names[k],
                             LAB_GOLDEN_MANIFEST);
            break;
        }
        lab_tensor t = {0};
        if ((st = lab_golden_load(dir, e, &t)) != LAB_OK) break;
        if (t.dtype != LAB_DT_F8 || t.numel != want[k]) {
            st = lab_err_set(LAB_ERR_MISMATCH, "%s/%s: expected f8 with %zu values, manifest says %s", dir, names[k],
                             want[k], lab_dtype_name(e->dtype));
            lab_tensor_free(&t);
            break;
        }
        memcpy(dst[k], t.data, want[k] * sizeof(double));
        lab_tensor_free(&t);
    }
    lab_golden_manifest_free(&m);
    return st;
}

lab_status bfcrf_probe_check(uint64_t seed, bfcrf_prec p, const char *golden_dir, double *logz_err, double *marg_err,
                           int *golden_checked)
{
    const size_t n = (size_t)BFCRF_PROBE_BATCH * BFCRF_TMAX * NT;
    bfcrf_params P;
    bfcrf_grads G;
    bfcrf_batch cb;
    *golden_checked = 0;
    lab_status st = bfcrf_batch_init(&cb, BFCRF_PROBE_BATCH);
    if (st != LAB_OK) return st;
    double *marg = malloc(n * sizeof *marg), *rmarg = malloc(n * sizeof *rmarg), rlogz[BFCRF_PROBE_BATCH];
    if (!marg || !rmarg) {
        st = lab_err_set(LAB_ERR_NOMEM, "crf: out of memory for the probe");
        goto done;
    }
    cb.marg = marg;
    bfcrf_probe_inputs(seed, BFCRF_PROBE_BATCH, BFCRF_PROBE_SCALE, &P, cb.emis);
    bfcrf_probe_tags(seed, cb.tags);
    for (int b = 0; b < BFCRF_PROBE_BATCH; ++b) cb.len[b] = BFCRF_TMAX;
    bfcrf_loss_grad(&P, &cb, p, &G);
    if (golden_dir && seed == BFCRF_GOLDEN_SEED) {
        if ((st = bfcrf_golden_load(golden_dir, seed, rlogz, rmarg)) != LAB_OK) goto done;
        *golden_checked = 1;
    } else if ((st = bfcrf_probe_reference(seed, rlogz, rmarg)) != LAB_OK) {
        goto done;
    }
    double le = 0.0, me = 0.0;
    for (int b = 0; b < BFCRF_PROBE_BATCH; ++b) {
        double e = fabs(cb.logz[b] - rlogz[b]);
        le = isnan(e) || e > le ? e : le;
    }
    for (size_t k = 0; k < n; ++k) {
        double e = fabs(marg[k] - rmarg[k]);
        me = isnan(e) || e > me ? e : me;
    }
    *logz_err = le;
    *marg_err = me;
done:
    free(marg);
    free(rmarg);
    bfcrf_batch_free(&cb);
    return st;
}

/* ---------------------------------------------------------------------------------------------- */
/* The criterion                                                                                   */

void bfcrf_criterion(const bfcrf_train_cfg *cfg, const bfcrf_train_stats *s, double probe_logz_err, double probe_marg_err,
                   int golden_checked, lab_case_result *r)
{
    lab_result_metric(r, "first_nan_step", (double)s->first_nonfinite_step);
    lab_result_metric(r, "lr", cfg->lr);
    lab_result_metric(r, "crf_weight", cfg->dual_loss ? cfg->crf_weight : 0.0); /* 0: the CRF loss alone */
    lab_result_metric(r, "final_ce", s->final_ce);
    lab_result_metric(r, "steps_run", (double)s->steps_run);
    lab_result_metric(r, "min_loss", s->min_loss);
    lab_result_metric(r, "final_loss", s->final_loss);
    lab_result_metric(r, "max_marg_sum_err", s->max_marg_sum_err);
    lab_result_metric(r, "max_marg", s->max_marg);
    lab_result_metric(r, "max_abs_score", s->max_abs_score);
    lab_result_metric(r, "first_marg_step", (double)s->first_marg_step);
    lab_result_metric(r, "first_grad_overflow_step", (double)s->first_grad_overflow_step);
    lab_result_metric(r, "probe_logz_err", probe_logz_err);
    lab_result_metric(r, "probe_marg_err", probe_marg_err);
    lab_result_metric(r, "crf_params_bf16_frac", s->crf_view_bf16_frac);
    const char *g = golden_checked ? " (against the golden)" : "";
    char loss[48] = "";
    if (cfg->dual_loss) snprintf(loss, sizeof loss, "dual loss CE + %g CRF", cfg->crf_weight);
    if (s->first_nonfinite_step)
        lab_result_verdict(r, 0, "non-finite at step %d of %d (lr %.2g): %.0f non-finite gradients; marginals off "
                           "since step %d (max %.3g), gradient > %.0e since step %d%s%s%s", s->first_nonfinite_step,
                           cfg->steps, cfg->lr, s->nonfinite_count, s->first_marg_step, s->max_marg, BFCRF_GRAD_HUGE,
                           s->first_grad_overflow_step, loss[0] ? " [" : "", loss, loss[0] ? "]" : "");
    else if (!(s->max_abs_score < BFCRF_SCORE_BOUND))
        lab_result_verdict(r, 0, "a score reached %.4g, beyond %g where the tolerances hold", s->max_abs_score,
                           BFCRF_SCORE_BOUND);
    else if (s->first_marg_step)
        lab_result_verdict(r, 0, "marginals off from step %d: max |sum - 1| %.3g, max marginal %.3g (tol %g)",
                           s->first_marg_step, s->max_marg_sum_err, s->max_marg, BFCRF_TOL_MARG_SUM);
    else if (s->first_neg_loss_step || !(s->min_loss >= -BFCRF_TOL_NEG_LOSS))
        lab_result_verdict(r, 0, "loss below zero at step %d: min %.4g (tol %g)", s->first_neg_loss_step, s->min_loss,
                           BFCRF_TOL_NEG_LOSS);
    else if (!(probe_logz_err <= BFCRF_TOL_NEG_LOSS) || !(probe_marg_err <= BFCRF_TOL_MARG_SUM))
        lab_result_verdict(r, 0, "probe off the float64 reference%s: logZ err %.3g (tol %g), marginal err %.3g (tol %g)",
                           g, probe_logz_err, BFCRF_TOL_NEG_LOSS, probe_marg_err, BFCRF_TOL_MARG_SUM);
    else if (cfg->prec == BFCRF_PREC_F32 && s->steps_run > 0 && !(s->crf_view_bf16_frac <= BFCRF_MAX_VIEW_BF16_FRAC))
        lab_result_verdict(r, 0, "the fix's CRF used bf16 parameters: %.0f%% of its transitions, start and end scores are "
                           "bf16 values (at most %.0f%%: the fix keeps them in float32)", 100 * s->crf_view_bf16_frac,
                           100 * BFCRF_MAX_VIEW_BF16_FRAC);
    else
        lab_result_verdict(r, 1, "%d steps at lr %.2g finite%s%s%s; min CRF loss %.3g, max |marg sum - 1| %.2g, max score "
                           "%.0f; probe logZ err %.2g, marg err %.2g%s", s->steps_run, cfg->lr,
                           loss[0] ? " (" : "", loss, loss[0] ? ")" : "", s->min_loss, s->max_marg_sum_err,
                           s->max_abs_score, probe_logz_err, probe_marg_err, g);
}

/* The variant's run on the CPU (param: the CRF's precision): the training run, the probe, the judge. */
static lab_status bfcrf_run_cpu(const lab_case *c, lab_case_result *r)
{
    bfcrf_prec p = (bfcrf_prec)c->variant->param;
    bfcrf_train_cfg cfg = bfcrf_case_cfg(c->seed, p);
    bfcrf_train_stats s;
    memset(&s, 0, sizeof s);
    lab_status st = bfcrf_train(c->seed, &cfg, &s);
    if (st != LAB_OK) return st;
    double le = NAN, me = NAN;
    int golden = 0;
    if ((st = bfcrf_probe_check(c->seed, p, c->golden_dir, &le, &me, &golden)) != LAB_OK) return st;
    bfcrf_criterion(&cfg, &s, le, me, golden, r);
    return LAB_OK;
}


/* ---------------------------------------------------------------------------------------------- */
/* Goldens                                                                                         */

lab_status bfcrf_golden_bless(const char *dir)
{
    lab_status st = lab_fs_mkdirs(dir);
    if (st != LAB_OK) return st;
    lab_golden_manifest m;
    memset(&m, 0, sizeof m);
    snprintf(m.incident, sizeof m.incident, "%s", LAB_INCIDENT_ID);
    lab_tensor tl = {0}, tm = {0};
    size_t sl[1] = {BFCRF_PROBE_BATCH}, sm[3] = {BFCRF_PROBE_BATCH, BFCRF_TMAX, NT};
    if ((st = lab_tensor_create(&tl, LAB_DT_F8, 1, sl)) != LAB_OK) goto done;
    if ((st = lab_tensor_create(&tm, LAB_DT_F8, 3, sm)) != LAB_OK) goto done;
    if ((st = bfcrf_probe_reference(BFCRF_GOLDEN_SEED, tl.data, tm.data)) != LAB_OK) goto done;
    char fl[64], fm[64];
    snprintf(fl, sizeof fl, "probe_logz_seed%u.npy", (unsigned)BFCRF_GOLDEN_SEED);
    snprintf(fm, sizeof fm, "probe_marg_seed%u.npy", (unsigned)BFCRF_GOLDEN_SEED);
    st = lab_golden_add(&m, dir, fl, &tl, LAB_DT_F8, BFCRF_GOLDEN_SEED,
                        "float64 reference bfcrf_reference v1: log-partition of the 2x128 probe");
    if (st == LAB_OK)
        st = lab_golden_add(&m, dir, fm, &tm, LAB_DT_F8, BFCRF_GOLDEN_SEED,
                            "float64 reference bfcrf_reference v1: forward-backward marginals of the 2x128 probe");
    if (st == LAB_OK) st = lab_golden_manifest_write(dir, &m);
done:
    lab_tensor_free(&tl);
    lab_tensor_free(&tm);
    lab_golden_manifest_free(&m);
    return st;
}

/* ---------------------------------------------------------------------------------------------- */
/* Figures                                                                                         */

static lab_status bfcrf_fig_nan_vs_lr(const lab_figure_ctx *fx)
{
    char dat[4096], png[4096];
    snprintf(dat, sizeof dat, "%s/%s-nan-step-vs-lr.dat", fx->plots_dir, LAB_INCIDENT_ID);
    snprintf(png, sizeof png, "%s/%s-nan-step-vs-lr.png", fx->plots_dir, LAB_INCIDENT_ID);
    /* A run without a NaN is drawn at the step it ended (censored: no NaN by then), so a replay of the fix alone
     * draws its runs too, and the figure shows how far each got. */
    const char *series[] = {"bf16_first_nan_step", "fp32_first_nan_step", "no_nan_by_step"};
    FILE *f = lab_gnuplot_dat_open(dat, "lr", series, 3);
    if (!f) return LAB_ERR_IO;
    for (size_t i = 0; i < fx->n_cases; ++i) {
        const lab_figure_case *k = &fx->cases[i];
        double lr = lab_result_get(&k->r, "lr"), step = lab_result_get(&k->r, "first_nan_step");
        double ran = lab_result_get(&k->r, "steps_run");
        if (isnan(lr)) continue;
        double y = step > 0 ? step : NAN; /* 0: no NaN within the run */
        int bug = k->variant && k->variant->role == LAB_ROLE_BUG;
        fprintf(f, "%g %g %g %g\n", lr, bug ? y : NAN, bug ? NAN : y, isnan(y) ? ran : NAN);
    }
    lab_status st = lab_gnuplot_dat_close(f, dat);
    if (st != LAB_OK) return st;
    lab_gnuplot_spec spec = {dat, png, "0005: training step of the first NaN against the learning rate (runs with none: the step they ended)",
                             "peak learning rate", "step of first non-finite value", 0, 0, 0};
    return lab_gnuplot_xy(fx->root, &spec);
}

/* Steps of the loss-curve figure (covers the first NaN of seed BFCRF_FIG_SEED at lr 1.5e-4). */
#define BFCRF_FIG_STEPS 1200
#define BFCRF_FIG_SEED 1u

static lab_status bfcrf_fig_loss_curves(const lab_figure_ctx *fx)
{
    float *lb = calloc(BFCRF_FIG_STEPS, sizeof *lb), *lf = calloc(BFCRF_FIG_STEPS, sizeof *lf);
    if (!lb || !lf) {
        free(lb), free(lf);
        return lab_err_set(LAB_ERR_NOMEM, "crf figures: out of memory");
    }
    bfcrf_train_cfg cb = bfcrf_case_cfg(BFCRF_FIG_SEED, BFCRF_PREC_BF16), cf = bfcrf_case_cfg(BFCRF_FIG_SEED, BFCRF_PREC_F32);
    cb.steps = cf.steps = BFCRF_FIG_STEPS;
    bfcrf_train_stats sb, sf;
    memset(&sb, 0, sizeof sb);
    memset(&sf, 0, sizeof sf);
    sb.loss_curve = lb;
    sf.loss_curve = lf;
    lab_status st = bfcrf_train(BFCRF_FIG_SEED, &cb, &sb);
    if (st == LAB_OK) st = bfcrf_train(BFCRF_FIG_SEED, &cf, &sf);
    char dat[4096], png[4096], txt[4096];
    snprintf(dat, sizeof dat, "%s/%s-loss-curves.dat", fx->plots_dir, LAB_INCIDENT_ID);
    snprintf(png, sizeof png, "%s/%s-loss-curves.png", fx->plots_dir, LAB_INCIDENT_ID);
    snprintf(txt, sizeof txt, "%s/%s-cost.txt", fx->plots_dir, LAB_INCIDENT_ID);
    FILE *f = st == LAB_OK ? lab_gnuplot_dat_open(dat, "step", (const char *[]){"bf16_crf", "fp32_crf"}, 2) : NULL;
    if (st == LAB_OK && !f) st = LAB_ERR_IO;
    if (f) {
        for (int i = 0; i < BFCRF_FIG_STEPS; ++i) {
            double b = i < sb.steps_run ? lb[i] : NAN, v = i < sf.steps_run ? lf[i] : NAN;
            fprintf(f, "%d %g %g\n", i + 1, isfinite(b) ? b : NAN, isfinite(v) ? v : NAN);
        }
        st = lab_gnuplot_dat_close(f, dat);
    }
    if (st == LAB_OK) {
        /* CPU cost per step of the two runs, measured here in one process (the bf16 CRF is an emulation on the
         * CPU; the GPU ratio is `lab bench 0005`). */
        double pb = sb.steps_run ? sb.cpu_s / sb.steps_run : NAN, pf = sf.steps_run ? sf.cpu_s / sf.steps_run : NAN;
        char line[512];
        int n = snprintf(line, sizeof line, "CPU cost per training step, seed %u lr %.2g: fp32 CRF / bf16-emulated CRF = "
                         "%.2f (%.3f ms / %.3f ms; bf16 run %d steps, first NaN at %d)\n", BFCRF_FIG_SEED, cb.lr, pf / pb,
                         1e3 * pf, 1e3 * pb, sb.steps_run, sb.first_nonfinite_step);
        st = lab_fs_write_atomic(txt, line, (size_t)n);
    }
    free(lb);
    free(lf);
    if (st != LAB_OK) return st;
    lab_gnuplot_spec spec = {dat, png, "0005: batch loss, seed 1, lr 1.5e-4 (bf16 CRF stops at its first NaN)",
                             "training step", "CRF loss (mean over the batch)", 0, 1, 1};
    return lab_gnuplot_xy(fx->root, &spec);
}

/* Both figures, the second drawn whatever the first did; a figure that is not drawn says why (its message kept,
 * and the other's appended when both fail). */
static lab_status bfcrf_figures(const lab_figure_ctx *fx)
{
    char why[1024] = "";
    lab_status st = bfcrf_fig_nan_vs_lr(fx);
    if (st != LAB_OK) snprintf(why, sizeof why, "%s", lab_err_msg());
    lab_status st2 = bfcrf_fig_loss_curves(fx);
    if (st == LAB_OK) return st2;
    if (st2 == LAB_OK) return lab_err_set(st, "%s", why);
    char why2[1024];
    snprintf(why2, sizeof why2, "%s", lab_err_msg()); /* lab_err_set writes the buffer lab_err_msg reads */
    return lab_err_set(st, "%s; %s", why, why2);
}

/* ---------------------------------------------------------------------------------------------- */
/* Registration                                                                                    */

static const lab_variant bfcrf_variants[] = {
    {.name = "fix", .role = LAB_ROLE_FIX, .param = BFCRF_PREC_F32,
     .what = "the CRF in float32 from upcast bf16 emissions; the tagger otherwise bf16"},
    {.name = "bug-bf16-crf", .role = LAB_ROLE_BUG, .param = BFCRF_PREC_BF16,
     .detect = LAB_DETECT_FAIL,
     .what = "the CRF in bf16: every elementwise result rounded to bf16, reductions in float32 rounded to bf16"},
};

/* What the criterion compares, for plots (lab_metric_spec): the first separates bug and fix. */
static const lab_metric_spec bfcrf_metric_specs[] = {
    {"first_nan_step", 0, 1, NULL, "first training step with a non-finite value: the fix never has one (0 floor), the bf16 bug does"},
    {"max_marg_sum_err", BFCRF_TOL_MARG_SUM, 1, NULL, "worst |sum of marginals - 1| over training (finite steps): below 1 of the tolerance passes"},
    {"probe_marg_err", BFCRF_TOL_MARG_SUM, 1, NULL, "probe marginals against the float64 reference: below 1 of the tolerance passes"},
    {"probe_logz_err", BFCRF_TOL_NEG_LOSS, 1, NULL, "probe log Z against the float64 reference: below 1 of the tolerance passes"},
    {"max_abs_score", BFCRF_SCORE_BOUND, 1, NULL, "largest |score|: the tolerances hold below this bound"},
};

/* The scheduler's rough cost of a case (lab_incident.seed_cost): the same for every seed; 0.05 s per case in the loaded 1000-seed H100 replay of 2026-11-24. */
static double bfcrf_seed_cost(uint64_t seed)
{
    (void)seed;
    return 0.05;
}

const lab_incident bfcrf_incident = {
    .id = LAB_INCIDENT_ID,
    .title = "bf16 linear-chain CRF training goes NaN",
    .variants = bfcrf_variants,
    .n_variants = (int)(sizeof bfcrf_variants / sizeof bfcrf_variants[0]),
    .setup = bfcrf_setup,
    .teardown = bfcrf_teardown,
    .run_cpu = bfcrf_run_cpu,
    .run_cuda = LAB_IF_CUDA(bfcrf_run_cuda),
    .timeout_s = 120,
    .golden_bless = bfcrf_golden_bless,
    .default_seeds = BFCRF_DEFAULT_SEEDS,
    .bench = LAB_IF_CUDA(bfcrf_bench),
    .seed_cost = bfcrf_seed_cost,
    .plots = {
        .metric = "max_marg_sum_err",
        .log = 1,
        .drift_metric = "probe_marg_err",
        .specs = bfcrf_metric_specs,
        .n_specs = (int)(sizeof bfcrf_metric_specs / sizeof bfcrf_metric_specs[0]),
        .figures = bfcrf_figures,
    },
};

LAB_INCIDENT_REGISTER(bfcrf_incident);
