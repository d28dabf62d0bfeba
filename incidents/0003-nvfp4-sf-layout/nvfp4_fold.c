/* nvfp4_fold: incident 0003's folded-global-scale variant: the fold, its census, the CPU GEMM at other magnitudes, the case, the magnitude study and its figure. */
#include "nvfp4_fold.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_gnuplot.h"
#include "lab_metric.h"
#include "lab_rng.h"

void nvfp4_fold_scales(const uint8_t *sf, size_t n, float global, uint8_t *out, nvfp4_fold_census *c)
{
    for (size_t i = 0; i < n; ++i) {
        uint8_t f = nvfp4_fold_scale(sf[i], global);
        out[i] = f;
        if (!c) continue;
        float q = lab_e4m3_to_float(sf[i]) / global, v = lab_e4m3_to_float(f);
        c->n++;
        if (q != 0.0f && v == 0.0f) c->flushed++;
        else if (v != 0.0f && v < 0.015625f) c->subnormal++;
        if (q > LAB_NVFP4_E4M3_MAX) c->saturated++;
    }
}

lab_status nvfp4_fold_run_cpu(const nvfp4_fold_work *fw, int fold, float *out)
{
    const nvfp4_sf_work *w = fw->w;
    size_t m = w->shape.m, n = w->shape.n;
    uint8_t *la = malloc(w->cosize_a), *lb = malloc(w->cosize_b);
    uint8_t *fa = fold ? malloc(m * w->k_sf) : NULL, *fb = fold ? malloc(n * w->k_sf) : NULL;
    lab_status st = LAB_OK;
    if (!la || !lb || (fold && (!fa || !fb))) {
        st = lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": out of memory for the folded scales of %s", w->shape.name);
        goto done;
    }
    const uint8_t *sa = w->sfa, *sb = w->sfb;
    float alpha = lab_nvfp4_alpha(fw->global_a, fw->global_b);
    if (fold) {
        nvfp4_fold_scales(w->sfa, m * w->k_sf, fw->global_a, fa, NULL);
        nvfp4_fold_scales(w->sfb, n * w->k_sf, fw->global_b, fb, NULL);
        sa = fa, sb = fb, alpha = 1.0f;
    }
    /* The fixed remap writes every byte of the layouts: no stale memory is involved here. */
    if ((st = lab_nvfp4_sf_remap(sa, m, w->k_sf, la, w->cosize_a, LAB_NVFP4_REMAP_FIX)) != LAB_OK) goto done;
    if ((st = lab_nvfp4_sf_remap(sb, n, w->k_sf, lb, w->cosize_b, LAB_NVFP4_REMAP_FIX)) != LAB_OK) goto done;
    st = lab_nvfp4_gemm(w->qa, la, w->qb, lb, m, n, w->shape.k, alpha, out);
done:
    free(la), free(lb), free(fa), free(fb);
    return st;
}

int nvfp4_fold_exponent(uint64_t seed, int wi, int operand)
{
    uint32_t u = lab_rng_u32(seed, NVFP4_FOLD_STREAM, (uint64_t)(2 * wi + operand));
    return NVFP4_FOLD_EMIN + (int)(u % (uint32_t)(NVFP4_FOLD_EMAX - NVFP4_FOLD_EMIN + 1));
}

static double fd_max(double acc, double v) { return isnan(acc) || isnan(v) ? NAN : (v > acc ? v : acc); }
static double fd_min(double acc, double v) { return isnan(acc) || isnan(v) ? NAN : (v < acc ? v : acc); }

lab_status nvfp4_fold_case(const nvfp4_sf_work *ws, const double *const *refs, const double *const *abss, size_t nw,
                           uint64_t seed, int fold, nvfp4_fold_gemm_fn gemm, nvfp4_fold_gemm_fn cpu_check,
                           lab_case_result *r)
{
    lab_status st = LAB_OK;
    double rel = 0.0, eob = 0.0, cosmin = 1.0;
    size_t nonfinite = 0, mismatch = 0;
    nvfp4_fold_census cen = {0, 0, 0, 0};
    int passed = 1, ea0 = 0, eb0 = 0;
    char failed_on[96] = "";
    for (size_t wi = 0; wi < nw && st == LAB_OK; ++wi) {
        const nvfp4_sf_work *w = &ws[wi];
        size_t mn = w->shape.m * w->shape.n;
        int ea = nvfp4_fold_exponent(seed, (int)wi, 0), eb = nvfp4_fold_exponent(seed, (int)wi, 1);
        if (wi == 0) ea0 = ea, eb0 = eb;
        /* Data times 2^ea (A) and 2^eb (B): the same codes and scales, global scales times 2^-e (exact), the
         * reference and its scale times 2^(ea + eb) (exact in double). */
        nvfp4_fold_work fw = {w, ldexpf(w->global_a, -ea), ldexpf(w->global_b, -eb)};
        float *out = malloc(mn * sizeof *out), *chk = cpu_check ? malloc(mn * sizeof *chk) : NULL;
        double *ref = malloc(mn * sizeof *ref), *abs = malloc(mn * sizeof *abs);
        if (!out || !ref || !abs || (cpu_check && !chk)) {
            st = lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": out of memory for the fold case of %s", w->shape.name);
            goto next;
        }
        for (size_t i = 0; i < mn; ++i) ref[i] = ldexp(refs[wi][i], ea + eb), abs[i] = ldexp(abss[wi][i], ea + eb);
        if (fold) {
            uint8_t *tmp = malloc((w->shape.m > w->shape.n ? w->shape.m : w->shape.n) * w->k_sf);
            if (!tmp) {
                st = lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": out of memory for the fold census");
                goto next;
            }
            nvfp4_fold_scales(w->sfa, w->shape.m * w->k_sf, fw.global_a, tmp, &cen);
            nvfp4_fold_scales(w->sfb, w->shape.n * w->k_sf, fw.global_b, tmp, &cen);
            free(tmp);
        }
        if ((st = gemm(&fw, fold, out)) != LAB_OK) goto next;
        if (cpu_check) {
            if ((st = cpu_check(&fw, fold, chk)) != LAB_OK) goto next;
            for (size_t i = 0; i < mn; ++i)
                mismatch += isnan(out[i]) ? !isnan(chk[i]) : memcmp(&out[i], &chk[i], sizeof(float)) != 0;
        }
        nvfp4_sf_judgement j = nvfp4_sf_judge(w, out, ref, abs);
        nonfinite += j.nonfinite;
        rel = fd_max(rel, j.rel_l2);
        eob = fd_max(eob, j.err_over_bound);
        cosmin = fd_min(cosmin, j.cosine);
        if (!j.passed && passed) {
            passed = 0;
            snprintf(failed_on, sizeof failed_on, "%s at A x 2^%d, B x 2^%d", w->shape.name, ea, eb);
        }
    next:
        free(out), free(chk), free(ref), free(abs);
    }
    if (st != LAB_OK) return st;
    lab_result_metric(r, "fold_rel_l2", rel);
    lab_result_metric(r, "err_over_bound", eob);
    lab_result_metric(r, "cos_random", cosmin);
    lab_result_metric(r, "mag_a", (double)ea0);
    lab_result_metric(r, "mag_b", (double)eb0);
    lab_result_metric(r, "nonfinite", (double)nonfinite);
    if (fold) {
        lab_result_metric(r, "scales_flushed", (double)cen.flushed);
        lab_result_metric(r, "scales_subnormal", (double)cen.subnormal);
        lab_result_metric(r, "scales_saturated", (double)cen.saturated);
    }
    if (cpu_check) lab_result_metric(r, "gpu_cpu_mismatch", (double)mismatch);
    passed = passed && mismatch == 0;
    if (passed)
        lab_result_verdict(r, 1, "%s: rel L2 %.3g, error <= %.3g of the float32 bound, cosine %.9f",
                           fold ? "folded" : "alpha", rel, eob, cosmin);
    else if (mismatch)
        lab_result_verdict(r, 0, "%zu GPU outputs differ bit for bit from the CPU's on the same inputs", mismatch);
    else
        lab_result_verdict(r, 0, "%s: product off the float64 reference by rel L2 %.3g (%.3g x the float32 bound), "
                           "cosine %.6f, first on %s; scales flushed %zu, subnormal %zu, saturated %zu of %zu",
                           fold ? "global scale folded into E4M3" : "alpha", rel, eob, cosmin, failed_on, cen.flushed,
                           cen.subnormal, cen.saturated, cen.n);
    return LAB_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* Study                                                                                           */

/* ||x - y|| / ||y|| over n (x float or double through xd). */
static double fd_rel_l2(const float *xf, const double *xd, const double *y, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; ++i) {
        double x = xf ? (double)xf[i] : xd[i], d = x - y[i];
        num += d * d;
        den += y[i] * y[i];
    }
    return den > 0.0 ? sqrt(num / den) : (num > 0.0 ? INFINITY : 0.0);
}

/* C = X_A X_B^T in double from float operands (m x k, n x k). */
static void fd_gemm_f64(const float *a, const float *b, size_t m, size_t n, size_t k, double *c)
{
    for (size_t i = 0; i < m; ++i)
        for (size_t j = 0; j < n; ++j) {
            const float *ai = a + i * k, *bj = b + j * k;
            double s0 = 0, s1 = 0;
            size_t t = 0;
            for (; t + 1 < k; t += 2) s0 += (double)ai[t] * bj[t], s1 += (double)ai[t + 1] * bj[t + 1];
            for (; t < k; ++t) s0 += (double)ai[t] * bj[t];
            c[i * n + j] = s0 + s1;
        }
}

lab_status nvfp4_fold_study(int shape_index, const nvfp4_sf_shape *shape, uint64_t seed, const int *ea, const int *eb,
                            size_t n, nvfp4_fold_point *out)
{
    nvfp4_sf_work w;
    lab_status st = nvfp4_sf_work_init(&w, shape_index, shape, NVFP4_SF_RANDOM, seed);
    if (st != LAB_OK) return st;
    size_t m = w.shape.m, nn = w.shape.n, k = w.shape.k, mn = m * nn;
    float *xa = malloc(m * k * sizeof *xa), *xb = malloc(nn * k * sizeof *xb), *cf = malloc(mn * sizeof *cf);
    double *cx = malloc(mn * sizeof *cx), *ref = malloc(mn * sizeof *ref), *abs = malloc(mn * sizeof *abs);
    double *tmp = malloc(mn * sizeof *tmp), *cxs = malloc(mn * sizeof *cxs), *as = malloc(mn * sizeof *as);
    uint8_t *junk = malloc((m > nn ? m : nn) * w.k_sf);
    if (!xa || !xb || !cf || !cx || !ref || !abs || !tmp || !cxs || !as || !junk) {
        st = lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": out of memory for the fold study of (%zu, %zu, %zu)", m, nn, k);
        goto done;
    }
    if ((st = nvfp4_sf_values(&w, 0, seed, xa)) != LAB_OK) goto done;
    if ((st = nvfp4_sf_values(&w, 1, seed, xb)) != LAB_OK) goto done;
    fd_gemm_f64(xa, xb, m, nn, k, cx);
    if ((st = nvfp4_sf_reference(&w, ref, abs)) != LAB_OK) goto done;
    for (size_t i = 0; i < n; ++i) {
        nvfp4_fold_point *p = &out[i];
        memset(p, 0, sizeof *p);
        p->ea = ea[i], p->eb = eb[i];
        int e = ea[i] + eb[i];
        nvfp4_fold_work fw = {&w, ldexpf(w.global_a, -ea[i]), ldexpf(w.global_b, -eb[i])};
        nvfp4_fold_scales(w.sfa, m * w.k_sf, fw.global_a, junk, &p->census);
        nvfp4_fold_scales(w.sfb, nn * w.k_sf, fw.global_b, junk, &p->census);
        for (size_t t = 0; t < mn; ++t) tmp[t] = ldexp(ref[t], e), cxs[t] = ldexp(cx[t], e);
        /* The fix at these magnitudes, against its float32 bound. */
        if ((st = nvfp4_fold_run_cpu(&fw, 0, cf)) != LAB_OK) goto done;
        for (size_t t = 0; t < mn; ++t) as[t] = ldexp(abs[t], e);
        p->fix_err_over_bound = nvfp4_sf_judge(&w, cf, tmp, as).err_over_bound;
        if ((st = nvfp4_fold_run_cpu(&fw, 1, cf)) != LAB_OK) goto done;
        p->fold_rel_l2 = fd_rel_l2(cf, NULL, tmp, mn);
        p->fold_cos = lab_metric_cosine(cf, tmp, mn);
        p->quant_rel_l2 = fd_rel_l2(NULL, tmp, cxs, mn);
        p->fold_x_rel_l2 = fd_rel_l2(cf, NULL, cxs, mn);
    }
done:
    free(xa), free(xb), free(cf), free(cx), free(ref), free(abs), free(tmp), free(cxs), free(as), free(junk);
    nvfp4_sf_work_free(&w);
    return st;
}

/* ---------------------------------------------------------------------------------------------- */
/* Figure                                                                                          */

#define FD_FIG_EMIN (-14)
#define FD_FIG_EMAX 12

lab_status nvfp4_fold_figure(const lab_figure_ctx *fx)
{
    enum { NE = FD_FIG_EMAX - FD_FIG_EMIN + 1 };
    int ea[NE];
    for (int i = 0; i < NE; ++i) ea[i] = FD_FIG_EMIN + i;
    nvfp4_fold_point pr[NE], pl[NE];
    lab_status st = nvfp4_fold_study(NVFP4_SF_RAGGED, NULL, 1, ea, ea, NE, pr);
    if (st == LAB_OK) st = nvfp4_fold_study(NVFP4_SF_LARGE, NULL, 1, ea, ea, NE, pl);
    if (st != LAB_OK) return st;
    char dat[4096], png[4096];
    snprintf(dat, sizeof dat, "%s/%s-fold-loss.dat", fx->plots_dir, fx->incident->id);
    snprintf(png, sizeof png, "%s/%s-fold-loss.png", fx->plots_dir, fx->incident->id);
    const char *series[] = {"fold_rel_l2_ragged", "fold_rel_l2_large", "nvfp4_quant_rel_l2_large",
                            "folded_vs_data_rel_l2_large", "frac_scales_flushed_large", "frac_scales_saturated_large"};
    FILE *f = lab_gnuplot_dat_open(dat, "data_exponent_e", series, 6);
    if (!f) return LAB_ERR_IO;
    for (int i = 0; i < NE; ++i) {
        double nn = (double)pl[i].census.n;
        fprintf(f, "%d %.6g %.6g %.6g %.6g %.6g %.6g\n", ea[i], pr[i].fold_rel_l2, pl[i].fold_rel_l2,
                pl[i].quant_rel_l2, pl[i].fold_x_rel_l2, (double)pl[i].census.flushed / nn,
                (double)pl[i].census.saturated / nn);
    }
    if ((st = lab_gnuplot_dat_close(f, dat)) != LAB_OK) return st;
    lab_gnuplot_spec spec = {dat, png,
                             "0003: loss of folding the global scale into E4M3 (both operands data times 2^e, seed 1)",
                             "e: data magnitude 2^e times the replay default", "relative L2 error / fraction of scales", 0, 0, 0};
    return lab_gnuplot_xy(fx->root, &spec);
}
