/* lab_plot: turns a replay's results.jsonl into per-incident figures: each criterion metric's distribution
 * over seeds per variant and backend with its bound, the error metrics as fractions of their tolerances,
 * and the incidents' own figures. */
#include "lab_plot.h"

#include <math.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_fs.h"
#include "lab_gnuplot.h"
#include "lab_isolate.h"
#include "lab_stall.h"

int lab_plot_spec_value(const lab_metric_spec *m, const lab_resread_rec *r, double *v)
{
    if (!lab_resread_metric(r, m->name, v)) return 0;
    if (m->tolerance_metric) {
        double tol;
        if (lab_resread_metric(r, m->tolerance_metric, &tol) != 1 || tol <= 0) return 0;
        *v = *v / tol;
    }
    return 1;
}

int lab_plot_margin(const lab_metric_spec *m, double value, double *margin)
{
    if (m->tolerance_metric) return 0;
    if (m->higher_is_worse && m->tolerance > 0) {
        *margin = value / m->tolerance;
        return 1;
    }
    if (!m->higher_is_worse && m->tolerance < 1) {
        *margin = (1.0 - value) / (1.0 - m->tolerance);
        return 1;
    }
    return 0;
}

/* The series of one figure: one per variant (in the incident's order) and backend present. */
typedef struct {
    char name[160];
    double *v;
    size_t n, missing;
    int color, dash;
} lab_plot_ser;

static void lab_plot_free(lab_plot_ser *s, int n)
{
    for (int i = 0; i < n; ++i) free(s[i].v);
}

/* The incident's records, backends present (bit 0 cpu, bit 1 cuda). */
static int lab_plot_backends(const lab_resread_set *rs, const lab_incident *inc)
{
    int b = 0;
    for (size_t i = 0; i < rs->n; ++i)
        if (rs->recs[i].inc == inc) b |= 1 << (rs->recs[i].backend == LAB_BACKEND_CUDA);
    return b;
}

/* Builds the series of one metric spec: per variant and backend, value (or margin when as_margin). */
static lab_status lab_plot_series(const lab_resread_set *rs, const lab_incident *inc, const lab_metric_spec *m,
                                  int as_margin, int dash, const char *suffix, lab_plot_ser *out, int *n_out, int cap)
{
    int be = lab_plot_backends(rs, inc);
    int ns = 0;
    for (int v = 0; v < inc->n_variants; ++v)
        for (int b = 0; b < 2; ++b) {
            if (!(be & (1 << b)) || ns == cap) continue;
            lab_plot_ser *s = &out[ns];
            memset(s, 0, sizeof *s);
            size_t cnt = 0;
            for (size_t i = 0; i < rs->n; ++i)
                cnt += rs->recs[i].var == &inc->variants[v] && (int)(rs->recs[i].backend == LAB_BACKEND_CUDA) == b;
            s->v = malloc((cnt ? cnt : 1) * sizeof *s->v);
            if (!s->v) {
                lab_plot_free(out, ns);
                return lab_err_set(LAB_ERR_NOMEM, "plots: out of memory");
            }
            for (size_t i = 0; i < rs->n; ++i) {
                const lab_resread_rec *r = &rs->recs[i];
                if (r->var != &inc->variants[v] || (int)(r->backend == LAB_BACKEND_CUDA) != b) continue;
                double x;
                if (!lab_plot_spec_value(m, r, &x) || (as_margin && !lab_plot_margin(m, x, &x))) {
                    s->missing++;
                    continue;
                }
                s->v[s->n++] = x;
            }
            int l = snprintf(s->name, sizeof s->name, "%s%s (%s, %s)", inc->variants[v].name, suffix,
                             lab_role_name(inc->variants[v].role), b ? "cuda" : "cpu");
            if (s->missing)
                snprintf(s->name + l, sizeof s->name - (size_t)l, "; %zu case%s without it (skipped, crashed, hung)",
                         s->missing, s->missing == 1 ? "" : "s");
            s->color = v + 1;
            s->dash = dash + b;
            ns++;
        }
    *n_out = ns;
    return LAB_OK;
}

static lab_status lab_plot_draw(const char *root, const char *script, const char *dir, const char *stem,
                                const lab_gnuplot_ecdf_spec *sp, lab_plot_ser *s, int ns)
{
    lab_gnuplot_series gs[64];
    for (int i = 0; i < ns && i < 64; ++i) gs[i] = (lab_gnuplot_series){s[i].name, s[i].v, s[i].n, s[i].color, s[i].dash};
    return lab_gnuplot_ecdf(root, script, dir, stem, sp, gs, ns < 64 ? ns : 64);
}

/* The figure of one metric spec (k = 0: <id>.png, the separating metric). */
static lab_status lab_plot_metric_fig(const char *root, const char *dir, const lab_resread_set *rs,
                                      const lab_incident *inc, const lab_metric_spec *m, int k)
{
    lab_plot_ser s[64];
    int ns;
    lab_status st = lab_plot_series(rs, inc, m, 0, 1, "", s, &ns, 64);
    if (st != LAB_OK) return st;
    char stem[256], title[256], xlab[160], thr[160];
    if (k == 0) snprintf(stem, sizeof stem, "%s", inc->id);
    else snprintf(stem, sizeof stem, "%s-%s", inc->id, m->name);
    snprintf(title, sizeof title, "%s: %s over seeds%s", inc->id, m->name, k == 0 ? " (the metric that separates bug and fix)" : "");
    lab_gnuplot_ecdf_spec sp = {title, xlab, m->caption, 1, m->tolerance, m->higher_is_worse, thr, 0, NULL};
    if (m->tolerance_metric) {
        snprintf(xlab, sizeof xlab, "%s / %s (the case's own tolerance)", m->name, m->tolerance_metric);
        snprintf(thr, sizeof thr, "tolerance (1.0): %s passes", m->higher_is_worse ? "left" : "right");
        sp.threshold = 1.0;
    } else if (m->tolerance == 0 && m->higher_is_worse) {
        snprintf(xlab, sizeof xlab, "%s", m->name);
        snprintf(thr, sizeof thr, "must be 0");
    } else {
        snprintf(xlab, sizeof xlab, "%s", m->name);
        snprintf(thr, sizeof thr, "bound %.4g: %s passes", m->tolerance, m->higher_is_worse ? "left" : "right");
    }
    if (!m->caption) sp.caption = "distribution over seeds per variant and backend";
    if (isnan(m->tolerance) && !m->tolerance_metric) sp.has_threshold = 0;
    st = lab_plot_draw(root, LAB_GNUPLOT_ECDF, dir, stem, &sp, s, ns);
    lab_plot_free(s, ns);
    return st;
}

/* <id>-margin.png: every spec with a scale, as a fraction of its tolerance. 0 figures when none has one. */
static lab_status lab_plot_margin_fig(const char *root, const char *dir, const lab_resread_set *rs,
                                      const lab_incident *inc, int *drawn)
{
    lab_plot_ser s[64];
    int ns = 0;
    lab_status st = LAB_OK;
    *drawn = 0;
    for (int k = 0; k < inc->plots.n_specs && st == LAB_OK; ++k) {
        const lab_metric_spec *m = &inc->plots.specs[k];
        double probe;
        int scaled = m->tolerance_metric != NULL, as_margin = !scaled && lab_plot_margin(m, 0.5, &probe);
        if (!scaled && !as_margin) continue;
        char suffix[64];
        snprintf(suffix, sizeof suffix, " %s", m->name);
        int got = 0;
        st = lab_plot_series(rs, inc, m, as_margin, 1 + 2 * k, suffix, s + ns, &got, 64 - ns);
        ns += got;
    }
    if (st == LAB_OK && ns > 0) {
        char stem[256], title[256];
        snprintf(stem, sizeof stem, "%s-margin", inc->id);
        snprintf(title, sizeof title, "%s: error metrics as a fraction of their tolerance", inc->id);
        lab_gnuplot_ecdf_spec sp = {title, "metric / tolerance (a cosine: (1 - cos) / (1 - bound))",
                                    "each error metric over its tolerance: below 1.0 passes; the fix's distance to the "
                                    "line is its margin on this device",
                                    1, 1.0, 1, "tolerance (1.0): left passes", 0, NULL};
        st = lab_plot_draw(root, LAB_GNUPLOT_MARGIN, dir, stem, &sp, s, ns);
        *drawn = st == LAB_OK;
    }
    lab_plot_free(s, ns);
    return st;
}

typedef struct {
    const lab_incident **incs;
    lab_figure_ctx *fx;
} lab_plot_fig_jobs;

static lab_status lab_plot_fig_job(void *ctx, size_t job, lab_case_result *r)
{
    lab_plot_fig_jobs *j = ctx;
    lab_status st = j->incs[job]->plots.figures(&j->fx[job]);
    if (st == LAB_OK) lab_result_verdict(r, 1, "figures drawn");
    else if (st == LAB_ERR_UNSUPPORTED) lab_result_skip(r, "%s", lab_err_msg());
    return st == LAB_ERR_UNSUPPORTED ? LAB_OK : st;
}

/* Runs every incident's figures() in its own process (all cores, 300 s watchdog each); failures are
 * printed to `report` and counted in *n_failed. */
static lab_status lab_plot_figures(const lab_incident **incs, size_t ni, const lab_resread_set *rs, const char *root,
                                   const char *dir, FILE *report, int *n_failed)
{
    *n_failed = 0;
    size_t nf = 0;
    const lab_incident *fi[256];
    lab_figure_ctx fx[256];
    lab_figure_case *cases = malloc((rs->n ? rs->n : 1) * sizeof *cases);
    if (!cases) return lab_err_set(LAB_ERR_NOMEM, "figures: out of memory");
    size_t used = 0;
    for (size_t i = 0; i < ni && nf < 256; ++i) {
        if (!incs[i]->plots.figures) continue;
        fi[nf] = incs[i];
        fx[nf] = (lab_figure_ctx){incs[i], root, dir, cases + used, 0};
        for (size_t k = 0; k < rs->n; ++k)
            if (rs->recs[k].inc == incs[i] && lab_resread_figure_case(&rs->recs[k], &cases[used])) used++;
        fx[nf].n_cases = (size_t)(cases + used - fx[nf].cases);
        nf++;
    }
    lab_status st = LAB_OK;
    if (nf > 0) {
        lab_job_outcome out[256];
        lab_plot_fig_jobs j = {fi, fx};
        st = lab_isolate_run(nf, lab_plot_fig_job, &j, 0, 300.0, NULL, out);
        for (size_t k = 0; k < nf; ++k) {
            if (out[k].outcome == LAB_OUT_PASS) continue;
            if (out[k].outcome != LAB_OUT_SKIP) *n_failed += 1;
            fprintf(report, "plots: %s figures: %s %s%s\n", fi[k]->id, lab_outcome_name(out[k].outcome), out[k].error,
                    out[k].r.detail);
        }
    }
    free(cases);
    return st;
}

lab_status lab_plot_results(const char *out_dir, const char *root, FILE *report, int *n_png)
{
    char path[4096];
    *n_png = 0;
    snprintf(path, sizeof path, "%s/results.jsonl", out_dir);
    lab_resread_set rs;
    size_t total = 0, step = 1;
    /* more cases than lab_resread_sample_at(): a sample, the one a windowed replay draws (lab_window), said below */
    lab_status st = lab_resread_load_sample(path, lab_resread_sample_at(), &rs, &total, &step);
    if (st != LAB_OK) return st;
    st = lab_plot_set(&rs, out_dir, root, report, n_png);
    if (step > 1 && report && (st == LAB_OK || st == LAB_ERR_UNSUPPORTED) && !lab_isolate_interrupted())
        fprintf(report, "plots: drawn from a sample: every %zu-th case of each variant, %zu of %zu cases (the plots are "
                        "decimated; results.jsonl holds every case)\n", step, rs.n, total);
    lab_resread_free(&rs);
    return st;
}

lab_status lab_plot_set(const lab_resread_set *rs, const char *out_dir, const char *root, FILE *report, int *n_png)
{
    char dir[4096];
    *n_png = 0;
    lab_status st = LAB_OK;
    snprintf(dir, sizeof dir, "%s/plots", out_dir);
    const lab_incident **incs = malloc((rs->n ? rs->n : 1) * sizeof *incs);
    if (!incs || (st = lab_fs_mkdirs(dir)) != LAB_OK) {
        free(incs);
        return incs ? st : lab_err_set(LAB_ERR_NOMEM, "plots: out of memory");
    }
    /* The incidents present (and known to this build), each once, in first-seen order. */
    size_t ni = 0;
    for (size_t i = 0; i < rs->n; ++i) {
        int seen = !rs->recs[i].inc || !rs->recs[i].var;
        for (size_t k = 0; k < ni && !seen; ++k) seen = incs[k] == rs->recs[i].inc;
        if (!seen) incs[ni++] = rs->recs[i].inc;
    }
    int missing_gnuplot = 0;
    lab_stall_point(LAB_STALL_PLOTTING);
    /* an interrupt (lab_isolate_catch_signals) ends the drawing between figures */
    for (size_t i = 0; i < ni && st == LAB_OK && !lab_isolate_interrupted(); ++i) {
        const lab_incident *inc = incs[i];
        lab_metric_spec fallback = {inc->plots.metric, NAN, 1, NULL, "distribution over seeds per variant and backend"};
        const lab_metric_spec *specs = inc->plots.n_specs > 0 ? inc->plots.specs : inc->plots.metric ? &fallback : NULL;
        int n_specs = inc->plots.n_specs > 0 ? inc->plots.n_specs : inc->plots.metric ? 1 : 0;
        for (int k = 0; k < n_specs && st == LAB_OK && !lab_isolate_interrupted(); ++k) {
            st = lab_plot_metric_fig(root, dir, rs, inc, &specs[k], k);
            if (st == LAB_ERR_UNSUPPORTED) missing_gnuplot = 1, st = LAB_OK;
        }
        int drawn = 0;
        if (st == LAB_OK && inc->plots.n_specs > 0) st = lab_plot_margin_fig(root, dir, rs, inc, &drawn);
        if (st == LAB_ERR_UNSUPPORTED) missing_gnuplot = 1, st = LAB_OK;
    }
    if (st == LAB_OK && !missing_gnuplot && !lab_isolate_interrupted()) {
        int failed = 0;
        st = lab_plot_figures(incs, ni, rs, root, dir, report, &failed);
    }
    if (st == LAB_OK) *n_png = lab_fs_count_suffix(dir, ".png");
    free(incs);
    if (st == LAB_OK && missing_gnuplot)
        return lab_err_set(LAB_ERR_UNSUPPORTED, "gnuplot not found: plot data written to %s, no PNG", dir);
    return st;
}

static int lab_plot_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

lab_status lab_plot_list_dir(const char *dir, lab_plot_list *l)
{
    memset(l, 0, sizeof *l);
    DIR *d = opendir(dir);
    if (!d) return LAB_OK;
    size_t cap = 0;
    struct dirent *e;
    lab_status st = LAB_OK;
    while (st == LAB_OK && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".png")) continue;
        if (l->n == cap) {
            size_t nc = cap ? 2 * cap : 64;
            char **nn = realloc(l->names, nc * sizeof *nn);
            if (!nn) {
                st = lab_err_set(LAB_ERR_NOMEM, "plots: out of memory listing %s", dir);
                break;
            }
            l->names = nn, cap = nc;
        }
        if (!(l->names[l->n] = strdup(e->d_name))) st = lab_err_set(LAB_ERR_NOMEM, "plots: out of memory listing %s", dir);
        else l->n++;
    }
    closedir(d);
    if (st != LAB_OK) lab_plot_list_free(l);
    else if (l->n) qsort(l->names, l->n, sizeof *l->names, lab_plot_name_cmp);
    return st;
}

void lab_plot_list_free(lab_plot_list *l)
{
    for (size_t i = 0; i < l->n; ++i) free(l->names[i]);
    free(l->names);
    memset(l, 0, sizeof *l);
}

lab_status lab_plot_set_listed(const lab_resread_set *rs, const char *out_dir, const char *root, FILE *report,
                               int *n_png, lab_plot_list *drawn)
{
    lab_status st = lab_plot_set(rs, out_dir, root, report, n_png);
    if (!drawn) return st;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/plots", out_dir);
    char keep[512];
    snprintf(keep, sizeof keep, "%s", st != LAB_OK ? lab_err_msg() : "");
    lab_status sl = lab_plot_list_dir(dir, drawn);
    if (st != LAB_OK) return lab_err_set(st, "%s", keep);
    return sl;
}
