/* lab_plot: turns a replay's results.jsonl into per-incident data files and gnuplot PNGs. */
#include "lab_plot.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_fs.h"
#include "lab_gnuplot.h"
#include "lab_incident.h"
#include "lab_isolate.h"

/* One parsed line of results.jsonl. */
typedef struct {
    const lab_incident *inc;
    lab_figure_case c;
} lab_plot_point;

/* The k-th per-seed metric of an incident (0: the separating metric, 1: the drift metric), or NULL. */
static const char *lab_plot_metric(const lab_incident *inc, int k, int *use_log)
{
    *use_log = k == 0 ? inc->plot_log : 1;
    return k == 0 ? inc->plot_metric : inc->drift_metric;
}

/* Fills one record from a parsed JSON object; 0 if it is not a case record. */
static int lab_plot_record(const cJSON *o, lab_plot_point *p)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "incident");
    const cJSON *var = cJSON_GetObjectItemCaseSensitive(o, "variant");
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(o, "seed");
    if (!cJSON_IsString(id) || !cJSON_IsString(var) || !cJSON_IsNumber(seed)) return 0;
    memset(p, 0, sizeof *p);
    p->inc = lab_incident_find(id->valuestring);
    p->c.variant = p->inc ? lab_incident_variant(p->inc, var->valuestring) : NULL;
    p->c.seed = (uint64_t)seed->valuedouble;
    const cJSON *be = cJSON_GetObjectItemCaseSensitive(o, "backend");
    if (!cJSON_IsString(be) || lab_backend_parse(be->valuestring, &p->c.backend) != LAB_OK) p->c.backend = LAB_BACKEND_CPU;
    const cJSON *out = cJSON_GetObjectItemCaseSensitive(o, "outcome");
    p->c.outcome = LAB_OUT_ERROR;
    for (int k = 0; k < LAB_OUT_COUNT && cJSON_IsString(out); ++k)
        if (strcmp(out->valuestring, lab_outcome_name((lab_outcome)k)) == 0) p->c.outcome = k;
    p->c.r.verdict_set = p->c.outcome == LAB_OUT_PASS || p->c.outcome == LAB_OUT_FAIL;
    p->c.r.passed = p->c.outcome == LAB_OUT_PASS;
    p->c.r.skipped = p->c.outcome == LAB_OUT_SKIP;
    const cJSON *det = cJSON_GetObjectItemCaseSensitive(o, "detail");
    if (cJSON_IsString(det)) snprintf(p->c.r.detail, sizeof p->c.r.detail, "%s", det->valuestring);
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(o, "metrics"))
        lab_result_metric(&p->c.r, m->string, cJSON_IsNumber(m) ? m->valuedouble : NAN);
    return 1;
}

static lab_status lab_plot_parse(const char *path, lab_plot_point **pts, size_t *n)
{
    char *text;
    size_t len;
    lab_status st = lab_fs_read_all(path, &text, &len);
    if (st != LAB_OK) return st;
    size_t cap = 1024, cnt = 0, line = 0;
    lab_plot_point *p = malloc(cap * sizeof *p);
    if (!p) {
        free(text);
        return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
    }
    for (char *s = text, *e; *s; s = e + (*e != '\0')) {
        e = strchr(s, '\n');
        if (!e) e = s + strlen(s);
        line++;
        if (e == s) continue;
        if (cnt == cap) {
            lab_plot_point *np = realloc(p, 2 * cap * sizeof *p);
            if (!np) {
                free(p);
                free(text);
                return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
            }
            p = np;
            cap *= 2;
        }
        cJSON *o = cJSON_ParseWithLength(s, (size_t)(e - s));
        int is_case = o && lab_plot_record(o, &p[cnt]);
        cJSON_Delete(o);
        if (!is_case) {
            free(p);
            free(text);
            return lab_err_set(LAB_ERR_FORMAT, "%s:%zu: not a case record (needs incident, variant, seed)", path, line);
        }
        if (p[cnt].inc && p[cnt].c.variant) cnt++; /* records of incidents this build lacks are left out */
    }
    free(text);
    *pts = p;
    *n = cnt;
    return LAB_OK;
}

static int lab_plot_seed_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Writes the .dat of one incident's k-th per-seed metric (seed, then one column per variant). */
static lab_status lab_plot_write_dat(const char *path, const lab_incident *inc, const char *metric, int use_log,
                                     const lab_plot_point *p, size_t n, size_t *n_hidden, size_t *n_drawn)
{
    uint64_t *seeds = malloc((n ? n : 1) * sizeof *seeds);
    const char *names[64];
    char namebuf[64][96];
    if (!seeds) return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
    size_t ns = 0;
    for (size_t i = 0; i < n; ++i)
        if (p[i].inc == inc) seeds[ns++] = p[i].c.seed;
    qsort(seeds, ns, sizeof *seeds, lab_plot_seed_cmp);
    size_t u = 0;
    for (size_t i = 0; i < ns; ++i)
        if (u == 0 || seeds[u - 1] != seeds[i]) seeds[u++] = seeds[i];
    int nv = inc->n_variants < 64 ? inc->n_variants : 64;
    for (int v = 0; v < nv; ++v) {
        snprintf(namebuf[v], sizeof namebuf[v], "%s(%s)", inc->variants[v].name, lab_role_name(inc->variants[v].role));
        names[v] = namebuf[v];
    }
    FILE *f = lab_gnuplot_dat_open(path, "seed", names, nv);
    if (!f) {
        free(seeds);
        return LAB_ERR_IO;
    }
    *n_hidden = 0;
    *n_drawn = 0;
    for (size_t s = 0; s < u; ++s) {
        fprintf(f, "%llu", (unsigned long long)seeds[s]);
        for (int v = 0; v < nv; ++v) {
            double val = NAN;
            for (size_t i = 0; i < n; ++i)
                if (p[i].inc == inc && p[i].c.variant == &inc->variants[v] && p[i].c.seed == seeds[s])
                    val = lab_result_get(&p[i].c.r, metric);
            if (!isfinite(val) || (use_log && val <= 0)) {
                fprintf(f, " NaN");
                *n_hidden += 1;
            } else {
                fprintf(f, " %.9g", val);
                *n_drawn += 1;
            }
        }
        fprintf(f, "\n");
    }
    free(seeds);
    return lab_gnuplot_dat_close(f, path);
}

/* The incidents present in the results, each once, in first-seen order. */
static size_t lab_plot_incidents(const lab_plot_point *p, size_t n, const lab_incident **out)
{
    size_t m = 0;
    for (size_t i = 0; i < n; ++i) {
        int seen = 0;
        for (size_t k = 0; k < m; ++k) seen |= out[k] == p[i].inc;
        if (!seen) out[m++] = p[i].inc;
    }
    return m;
}

typedef struct {
    const lab_incident **incs;
    lab_figure_ctx *fx;
} lab_plot_fig_jobs;

static lab_status lab_plot_fig_job(void *ctx, size_t job, lab_case_result *r)
{
    lab_plot_fig_jobs *j = ctx;
    lab_status st = j->incs[job]->figures(&j->fx[job]);
    if (st == LAB_OK) lab_result_verdict(r, 1, "figures drawn");
    else if (st == LAB_ERR_UNSUPPORTED) lab_result_skip(r, "%s", lab_err_msg());
    return st == LAB_ERR_UNSUPPORTED ? LAB_OK : st;
}

/* Runs every incident's figures() in its own process (all cores, 300 s watchdog each); failures are
 * printed to `report` and counted in *n_failed. */
static lab_status lab_plot_figures(const lab_incident **incs, size_t ni, const lab_plot_point *p, size_t n,
                                   const char *root, const char *dir, FILE *report, int *n_failed)
{
    *n_failed = 0;
    size_t nf = 0;
    const lab_incident *fi[256];
    lab_figure_ctx fx[256];
    lab_figure_case *cases = malloc((n ? n : 1) * sizeof *cases);
    if (!cases) return lab_err_set(LAB_ERR_NOMEM, "figures: out of memory");
    size_t used = 0;
    for (size_t i = 0; i < ni && nf < 256; ++i) {
        if (!incs[i]->figures) continue;
        fi[nf] = incs[i];
        fx[nf] = (lab_figure_ctx){incs[i], root, dir, cases + used, 0};
        for (size_t k = 0; k < n; ++k)
            if (p[k].inc == incs[i]) cases[used++] = p[k].c;
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
    char path[4096], dir[4096];
    *n_png = 0;
    snprintf(path, sizeof path, "%s/results.jsonl", out_dir);
    lab_plot_point *p = NULL;
    size_t n = 0;
    lab_status st = lab_plot_parse(path, &p, &n);
    if (st != LAB_OK) return st;
    snprintf(dir, sizeof dir, "%s/plots", out_dir);
    const lab_incident **incs = malloc((n ? n : 1) * sizeof *incs);
    if (!incs || (st = lab_fs_mkdirs(dir)) != LAB_OK) {
        free(p);
        free(incs);
        return incs ? st : lab_err_set(LAB_ERR_NOMEM, "plots: out of memory");
    }
    size_t ni = lab_plot_incidents(p, n, incs);
    int have_gnuplot = lab_gnuplot_available();
    for (size_t i = 0; i < ni && st == LAB_OK; ++i) {
        const lab_incident *inc = incs[i];
        for (int k = 0; k < 2 && st == LAB_OK; ++k) {
            int use_log;
            const char *metric = lab_plot_metric(inc, k, &use_log);
            if (!metric) continue;
            char dat[4096], png[4096], title[512];
            size_t hidden = 0, drawn = 0;
            const char *suffix = k == 0 ? "" : "-drift";
            snprintf(dat, sizeof dat, "%s/%s%s.dat", dir, inc->id, suffix);
            snprintf(png, sizeof png, "%s/%s%s.png", dir, inc->id, suffix);
            if ((st = lab_plot_write_dat(dat, inc, metric, use_log, p, n, &hidden, &drawn)) != LAB_OK || !have_gnuplot) continue;
            if (drawn == 0) { /* nothing finite to draw (every case skipped, or the metric never recorded) */
                fprintf(report, "plots: %s: no finite %s on any case, no PNG\n", inc->id, metric);
                continue;
            }
            snprintf(title, sizeof title, "%s: %s%s", inc->id, metric,
                     hidden ? (use_log ? " (non-finite or <= 0 values not drawn)" : " (non-finite values not drawn)") : "");
            lab_gnuplot_spec spec = {dat, png, title, "seed", metric, 0, use_log, 0};
            if ((st = lab_gnuplot_xy(root, &spec)) == LAB_OK) *n_png += 1;
        }
    }
    if (st == LAB_OK) {
        int failed = 0;
        st = lab_plot_figures(incs, ni, p, n, root, dir, report, &failed);
        *n_png = lab_fs_count_suffix(dir, ".png");
    }
    free(p);
    free(incs);
    if (st == LAB_OK && !have_gnuplot)
        return lab_err_set(LAB_ERR_UNSUPPORTED, "gnuplot not found: plot data written to %s, no PNG", dir);
    return st;
}
