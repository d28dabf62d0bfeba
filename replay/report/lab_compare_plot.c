/* lab_compare_plot: the pictures of drift across GPUs and builds: `lab compare A B --out DIR` draws, per
 * incident, both reports' distributions over seeds with the tolerance and the moved statistics marked;
 * `lab trend REPORT...` draws each fix's margin to its tolerance across reports in time order. */
#include "lab_compare_plot.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_compare.h"
#include "lab_fs.h"
#include "lab_gnuplot.h"
#include "lab_incident.h"
#include "lab_isolate.h"
#include "lab_json.h"
#include "lab_stall.h"
#include "lab_plot.h"
#include "lab_report.h"

#define LAB_CP_MAX_SPECS 16

static const char *lab_cp_str(const cJSON *o, const char *key)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(s) ? s->valuestring : "";
}

static const cJSON *lab_cp_find(const cJSON *arr, const char *key, const char *name)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, arr)
        if (!strcmp(lab_cp_str(x, key), name)) return x;
    return NULL;
}

static lab_status lab_cp_load(const char *dir, cJSON **out)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/report.json", dir);
    lab_status st = lab_json_read_file(path, out);
    if (st != LAB_OK) return st;
    if (strcmp(lab_cp_str(*out, "schema"), LAB_REPORT_SCHEMA) ||
        !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(*out, "incidents"))) {
        cJSON_Delete(*out);
        *out = NULL;
        return lab_err_set(LAB_ERR_FORMAT, "%s: not a lab report (schema %s with an array 'incidents')", path, LAB_REPORT_SCHEMA);
    }
    return LAB_OK;
}

/* "cuda on NVIDIA H200, 05e2a53" for a legend. */
static void lab_cp_describe(const cJSON *r, char *buf, size_t len)
{
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(r, "device");
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(dev, "gpu");
    const cJSON *host = cJSON_GetObjectItemCaseSensitive(dev, "host");
    const char *name = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(gpu, "available")) ? lab_cp_str(gpu, "name")
                       : *lab_cp_str(host, "cpu_model")                                   ? lab_cp_str(host, "cpu_model")
                                                                                         : "device not recorded";
    const cJSON *sum = cJSON_GetObjectItemCaseSensitive(r, "summary");
    snprintf(buf, len, "%s on %s, %.7s", *lab_cp_str(sum, "backend") ? lab_cp_str(sum, "backend") : "?", name,
             lab_cp_str(cJSON_GetObjectItemCaseSensitive(r, "build"), "commit"));
}

/* The metric specs of an incident: report.json's own, else this build's. Returns the count. */
static int lab_cp_specs(const cJSON *inc_a, const cJSON *inc_b, const char *id, lab_metric_spec *out)
{
    const cJSON *js = cJSON_GetObjectItemCaseSensitive(inc_b, "metric_specs");
    if (!cJSON_IsArray(js)) js = cJSON_GetObjectItemCaseSensitive(inc_a, "metric_specs");
    int n = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, js) {
        if (n == LAB_CP_MAX_SPECS || !*lab_cp_str(m, "name")) continue;
        const cJSON *tol = cJSON_GetObjectItemCaseSensitive(m, "tolerance");
        out[n++] = (lab_metric_spec){lab_cp_str(m, "name"), cJSON_IsNumber(tol) ? tol->valuedouble : NAN,
                                     !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(m, "higher_is_worse")),
                                     *lab_cp_str(m, "tolerance_metric") ? lab_cp_str(m, "tolerance_metric") : NULL,
                                     *lab_cp_str(m, "caption") ? lab_cp_str(m, "caption") : NULL};
    }
    if (n > 0) return n;
    const lab_incident *inc = lab_incident_find(id);
    for (int k = 0; inc && k < inc->plots.n_specs && k < LAB_CP_MAX_SPECS; ++k) out[n++] = inc->plots.specs[k];
    if (n == 0 && *lab_cp_str(inc_a, "plot_metric"))
        out[n++] = (lab_metric_spec){lab_cp_str(inc_a, "plot_metric"), NAN, 1, NULL, NULL};
    return n;
}

/* A per-seed JSON value as a double: numbers, "nan"/"inf"/"-inf"; 0 for null or absent. */
static int lab_cp_value(const cJSON *x, double *v)
{
    if (cJSON_IsNumber(x)) {
        *v = x->valuedouble;
        return 1;
    }
    if (!cJSON_IsString(x)) return 0;
    *v = !strcmp(x->valuestring, "inf") ? INFINITY : !strcmp(x->valuestring, "-inf") ? -INFINITY : NAN;
    return 1;
}

/* The values of one variant's metric column (divided by the per-seed bound column when the spec names one
 * and it is there; *scaled says whether it was). Returns the count; *v malloc'ed (NULL when no column). */
static size_t lab_cp_column(const cJSON *inc, const char *var, const lab_metric_spec *m, double **v, int *scaled)
{
    const cJSON *pv = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(inc, "per_seed"), "variants"), var);
    const cJSON *col = cJSON_GetObjectItemCaseSensitive(pv, m->name);
    const cJSON *tol = m->tolerance_metric ? cJSON_GetObjectItemCaseSensitive(pv, m->tolerance_metric) : NULL;
    *v = NULL;
    *scaled = tol != NULL;
    if (!cJSON_IsArray(col)) return 0;
    int n = cJSON_GetArraySize(col);
    *v = malloc((n > 0 ? (size_t)n : 1) * sizeof **v);
    if (!*v) return 0;
    size_t k = 0;
    /* both columns walked side by side: cJSON_GetArrayItem(col, i) walks from the start each time (n^2) */
    const cJSON *xi = col->child, *ti = tol && cJSON_IsArray(tol) ? tol->child : NULL;
    for (; xi; xi = xi->next, ti = ti ? ti->next : NULL) {
        double x, t;
        if (!lab_cp_value(xi, &x)) continue;
        if (tol) {
            if (!lab_cp_value(ti, &t) || !(t > 0)) continue;
            x /= t;
        }
        (*v)[k++] = x;
    }
    return k;
}

/* Appends to note the statistics of metric that moved beyond factor for the variant. */
static void lab_cp_moves(const cJSON *va, const cJSON *vb, const char *vname, const char *metric, double factor,
                         char *note, size_t len, int *moves)
{
    const cJSON *ma = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(va, "metrics"), metric);
    const cJSON *mb = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(vb, "metrics"), metric);
    if (!ma || !mb) return;
    static const char *const stats[] = {"median", "max", "nonfinite"};
    for (int k = 0; k < 3; ++k) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(ma, stats[k]), *b = cJSON_GetObjectItemCaseSensitive(mb, stats[k]);
        if (!cJSON_IsNumber(a) || !cJSON_IsNumber(b)) continue;
        int moved = k == 2 ? (a->valuedouble == 0) != (b->valuedouble == 0) : lab_compare_moved(a->valuedouble, b->valuedouble, factor);
        if (!moved) continue;
        size_t l = strlen(note);
        snprintf(note + l, len - l, "%s%s %s %.3g -> %.3g", *moves ? "; " : "moved: ", vname, stats[k], a->valuedouble,
                 b->valuedouble);
        (*moves)++;
    }
}

/* The compare page: the figures in order with their captions. */
static lab_status lab_cp_html(const char *out_dir, const char *desc_a, const char *desc_b, char (*stems)[256],
                              char (*notes)[600], int n)
{
    size_t cap = 8192 + (size_t)n * 2048, len = 0;
    char *h = malloc(cap);
    if (!h) return lab_err_set(LAB_ERR_NOMEM, "compare page: out of memory");
    len += (size_t)snprintf(h + len, cap - len,
                            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>lab compare</title>\n"
                            "<style>body{font-family:system-ui,sans-serif;font-size:16px;max-width:1240px;margin:1.5em auto;padding:0 1em}"
                            "figure{margin:1em 0 1.6em 0}figure img{display:block;width:1200px;border:1px solid #ddd}"
                            "figcaption{font-size:16px}.moved{color:#b00020;font-weight:600}</style></head><body>\n"
                            "<h1>Drift between two reports</h1>\n<p>A (solid): %s<br>B (dashed): %s</p>\n", desc_a, desc_b);
    for (int i = 0; i < n && len < cap; ++i) {
        char cpath[4096], *c = NULL;
        size_t cl = 0;
        snprintf(cpath, sizeof cpath, "%s/%s.caption", out_dir, stems[i]);
        if (lab_fs_read_all(cpath, &c, &cl) != LAB_OK) lab_err_clear(), c = NULL;
        len += (size_t)snprintf(h + len, cap - len,
                                "<figure id=\"%s\"><img src=\"%s.png\" alt=\"%s\"><figcaption>%s%s%s%s</figcaption></figure>\n",
                                stems[i], stems[i], stems[i], c ? c : stems[i], notes[i][0] ? "<br><span class=\"moved\">" : "",
                                notes[i], notes[i][0] ? "</span>" : "");
        free(c);
    }
    if (len < cap) len += (size_t)snprintf(h + len, cap - len, "</body></html>\n");
    char path[4096];
    snprintf(path, sizeof path, "%s/index.html", out_dir);
    lab_status st = len < cap ? lab_fs_write_atomic(path, h, len) : lab_err_set(LAB_ERR_NOMEM, "%s: page too large", path);
    free(h);
    return st;
}

lab_status lab_compare_plot_run(const char *dir_a, const char *dir_b, const char *out_dir, double factor,
                                const char *root, FILE *log, int *n_png)
{
    *n_png = 0;
    cJSON *ra = NULL, *rb = NULL;
    lab_status st = lab_cp_load(dir_a, &ra);
    if (st == LAB_OK) st = lab_cp_load(dir_b, &rb);
    if (st == LAB_OK) st = lab_fs_mkdirs(out_dir);
    if (st != LAB_OK) {
        cJSON_Delete(ra);
        cJSON_Delete(rb);
        return st;
    }
    lab_stall_point(LAB_STALL_PLOTTING);
    char desc_a[256], desc_b[256];
    lab_cp_describe(ra, desc_a, sizeof desc_a);
    lab_cp_describe(rb, desc_b, sizeof desc_b);
    static char stems[256][256];
    static char notes[256][600];
    int nfig = 0, missing_gnuplot = 0;
    const cJSON *inc;
    cJSON_ArrayForEach(inc, cJSON_GetObjectItemCaseSensitive(ra, "incidents")) {
        if (st != LAB_OK) break;
        if (lab_isolate_interrupted()) {
            st = lab_err_set(LAB_ERR_IO, "compare: interrupted while drawing");
            break;
        }
        const char *id = lab_cp_str(inc, "id");
        const cJSON *incb = lab_cp_find(cJSON_GetObjectItemCaseSensitive(rb, "incidents"), "id", id);
        if (!incb || !lab_gnuplot_stem_ok(id)) continue;
        lab_metric_spec specs[LAB_CP_MAX_SPECS];
        int ns = lab_cp_specs(inc, incb, id, specs);
        int first = 1;
        for (int k = 0; k < ns && st == LAB_OK && nfig < 256; ++k) {
            const lab_metric_spec *m = &specs[k];
            lab_gnuplot_series ser[64];
            double *vals[64];
            char names[64][200];
            int n = 0, scaled_all = 1, any = 0, moves = 0;
            char note[600] = "";
            const cJSON *va;
            int vi = 0;
            cJSON_ArrayForEach(va, cJSON_GetObjectItemCaseSensitive(inc, "variants")) {
                vi++;
                const char *vname = lab_cp_str(va, "name");
                const cJSON *vb = lab_cp_find(cJSON_GetObjectItemCaseSensitive(incb, "variants"), "name", vname);
                if (!vb || n + 2 > 64) continue;
                for (int side = 0; side < 2; ++side) {
                    int scaled;
                    size_t cnt = lab_cp_column(side ? incb : inc, vname, m, &vals[n], &scaled);
                    if (!vals[n]) continue;
                    any |= cnt > 0;
                    scaled_all &= scaled || !m->tolerance_metric;
                    snprintf(names[n], sizeof names[n], "%s %s (%s)", side ? "B" : "A", vname, lab_cp_str(va, "role"));
                    ser[n] = (lab_gnuplot_series){names[n], vals[n], cnt, vi, side ? 2 : 1};
                    n++;
                }
                lab_cp_moves(va, vb, vname, m->name, factor, note, sizeof note, &moves);
            }
            if (any) {
                char stem[256], title[300], xlab[200], thr[160];
                if (first) snprintf(stem, sizeof stem, "%s", id);
                else snprintf(stem, sizeof stem, "%s-%s", id, m->name);
                if (!lab_gnuplot_stem_ok(stem)) snprintf(stem, sizeof stem, "%s-%d", id, k);
                snprintf(title, sizeof title, "%s: %s, A against B", id, m->name);
                lab_gnuplot_ecdf_spec sp = {title, xlab, m->caption ? m->caption : "both reports' distributions over seeds",
                                            1, m->tolerance, m->higher_is_worse, thr, 0, note};
                if (m->tolerance_metric && scaled_all) {
                    snprintf(xlab, sizeof xlab, "%s / %s (the case's own tolerance)", m->name, m->tolerance_metric);
                    snprintf(thr, sizeof thr, "tolerance (1.0)");
                    sp.threshold = 1.0;
                } else if (m->tolerance_metric || isnan(m->tolerance)) {
                    snprintf(xlab, sizeof xlab, "%s (no per-seed bound in a report: no line)", m->name);
                    sp.has_threshold = 0;
                    thr[0] = '\0';
                } else {
                    snprintf(xlab, sizeof xlab, "%s", m->name);
                    if (m->tolerance == 0 && m->higher_is_worse) snprintf(thr, sizeof thr, "must be 0");
                    else snprintf(thr, sizeof thr, "bound %.4g: %s passes", m->tolerance, m->higher_is_worse ? "left" : "right");
                }
                st = lab_gnuplot_ecdf(root, LAB_GNUPLOT_COMPARE, out_dir, stem, &sp, ser, n);
                if (st == LAB_ERR_UNSUPPORTED) missing_gnuplot = 1, st = LAB_OK;
                else if (st == LAB_OK) *n_png += 1;
                snprintf(stems[nfig], sizeof stems[nfig], "%s", stem);
                snprintf(notes[nfig], sizeof notes[nfig], "%s", note);
                nfig++;
                first = 0;
                if (log && moves) fprintf(log, "compare figure %s: %s\n", stem, note);
            }
            for (int i = 0; i < n; ++i) free(vals[i]);
        }
    }
    if (st == LAB_OK) st = lab_cp_html(out_dir, desc_a, desc_b, stems, notes, nfig);
    cJSON_Delete(ra);
    cJSON_Delete(rb);
    if (st == LAB_OK && log) fprintf(log, "compare: %d figures in %s (index.html)\n", *n_png, out_dir);
    if (st == LAB_OK && missing_gnuplot) return lab_err_set(LAB_ERR_UNSUPPORTED, "gnuplot not found: data in %s, no PNG", out_dir);
    return st;
}

/* ------------------------------------------------------------------------------------------------ */
/* Trend */

typedef struct {
    cJSON *r;
    const char *dir;
    char created[32];
} lab_cp_rep;

static int lab_cp_rep_cmp(const void *a, const void *b)
{
    return strcmp(((const lab_cp_rep *)a)->created, ((const lab_cp_rep *)b)->created);
}

/* The worst margin of a variant's metric in a report: from the per-seed column when the spec's bound is per
 * case, else from the statistics (max, or min for a lower bound); +Inf when values were non-finite. */
static int lab_cp_margin(const cJSON *inc, const cJSON *var, const lab_metric_spec *m, double *out)
{
    if (m->tolerance_metric) {
        /* a report whose per-seed columns are a sample (lab_report: per_seed.sample) states the worst over every seed */
        const cJSON *ps = cJSON_GetObjectItemCaseSensitive(inc, "per_seed");
        const cJSON *pv = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ps, "variants"), lab_cp_str(var, "name"));
        if (cJSON_GetObjectItemCaseSensitive(ps, "sample")) {
            double w;
            if (!lab_cp_value(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pv, "worst"), m->name), &w)) return 0;
            *out = isnan(w) ? INFINITY : w;
            return 1;
        }
        double *v;
        int scaled;
        size_t n = lab_cp_column(inc, lab_cp_str(var, "name"), m, &v, &scaled);
        double worst = -INFINITY;
        for (size_t i = 0; i < n; ++i) worst = isnan(v[i]) ? INFINITY : fmax(worst, v[i]);
        free(v);
        if (!scaled || n == 0) return 0;
        *out = worst;
        return 1;
    }
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(var, "metrics"), m->name);
    const cJSON *nf = cJSON_GetObjectItemCaseSensitive(st, "nonfinite");
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(st, m->higher_is_worse ? "max" : "min");
    if (cJSON_IsNumber(nf) && nf->valuedouble > 0) {
        *out = INFINITY;
        return 1;
    }
    if (!cJSON_IsNumber(x)) return 0;
    return lab_plot_margin(m, x->valuedouble, out);
}

lab_status lab_compare_plot_trend(const char *const *dirs, int n, const char *out_dir, const char *root, FILE *log)
{
    if (n < 1) return lab_err_set(LAB_ERR_ARG, "trend: needs at least one report folder");
    lab_cp_rep *reps = calloc((size_t)n, sizeof *reps);
    if (!reps) return lab_err_set(LAB_ERR_NOMEM, "trend: out of memory");
    lab_status st = LAB_OK;
    for (int i = 0; i < n && st == LAB_OK; ++i) {
        if (lab_isolate_interrupted()) {
            st = lab_err_set(LAB_ERR_IO, "trend: interrupted while reading the reports");
            break;
        }
        reps[i].dir = dirs[i];
        st = lab_cp_load(dirs[i], &reps[i].r);
        if (st == LAB_OK) snprintf(reps[i].created, sizeof reps[i].created, "%s", lab_cp_str(reps[i].r, "created"));
    }
    if (st == LAB_OK) st = lab_fs_mkdirs(out_dir);
    FILE *d = NULL, *p = NULL;
    char path[4096];
    if (st == LAB_OK) {
        qsort(reps, (size_t)n, sizeof *reps, lab_cp_rep_cmp);
        snprintf(path, sizeof path, "%s/trend.dat", out_dir);
        d = fopen(path, "w");
        p = lab_gnuplot_par_open(out_dir, "trend");
        if (!d || !p) st = lab_err_set(LAB_ERR_IO, "%s: cannot write the trend data", out_dir);
    }
    int nser = 0;
    if (st == LAB_OK) {
        fprintf(d, "# trend: one block per (incident, fix variant, metric): report index (time order), worst value / tolerance\n");
        fprintf(p, "nreports = %d\narray rlabel[%d]\n", n, n);
        for (int i = 0; i < n; ++i) {
            char desc[256], lab[400], var[32];
            lab_cp_describe(reps[i].r, desc, sizeof desc);
            snprintf(lab, sizeof lab, "%.10s %s", reps[i].created, desc);
            snprintf(var, sizeof var, "rlabel[%d]", i + 1);
            lab_gnuplot_par_str(p, var, lab);
        }
        /* Series from the newest report's incidents and fix variants. */
        const cJSON *inc;
        fprintf(p, "array stitle[256]\n");
        cJSON_ArrayForEach(inc, cJSON_GetObjectItemCaseSensitive(reps[n - 1].r, "incidents")) {
            const char *id = lab_cp_str(inc, "id");
            lab_metric_spec specs[LAB_CP_MAX_SPECS];
            int ns = lab_cp_specs(inc, inc, id, specs);
            const cJSON *var;
            cJSON_ArrayForEach(var, cJSON_GetObjectItemCaseSensitive(inc, "variants")) {
                if (strcmp(lab_cp_str(var, "role"), "fix")) continue;
                for (int k = 0; k < ns && nser < 256; ++k) {
                    int wrote = 0;
                    for (int i = 0; i < n; ++i) {
                        const cJSON *ii = lab_cp_find(cJSON_GetObjectItemCaseSensitive(reps[i].r, "incidents"), "id", id);
                        const cJSON *vv = lab_cp_find(cJSON_GetObjectItemCaseSensitive(ii, "variants"), "name", lab_cp_str(var, "name"));
                        double mg;
                        if (!vv || !lab_cp_margin(ii, vv, &specs[k], &mg)) continue;
                        if (!wrote) fprintf(d, "%s# %s %s %s\n", nser ? "\n\n" : "", id, lab_cp_str(var, "name"), specs[k].name);
                        fprintf(d, "%d %.9g\n", i + 1, isinf(mg) ? 1e6 : fmax(mg, 1e-12));
                        wrote = 1;
                    }
                    if (wrote) {
                        char t[300], v[32];
                        snprintf(t, sizeof t, "%.4s %s %s", id, lab_cp_str(var, "name"), specs[k].name);
                        snprintf(v, sizeof v, "stitle[%d]", ++nser);
                        lab_gnuplot_par_str(p, v, t);
                    }
                }
            }
        }
        fprintf(p, "nseries = %d\n", nser);
        lab_gnuplot_par_str(p, "plottitle", "Margin of each fix to its tolerance across reports (time order)");
    }
    if (d && fclose(d) != 0 && st == LAB_OK) st = lab_err_set(LAB_ERR_IO, "%s: write failed", path);
    if (p) {
        lab_status s2 = lab_gnuplot_par_close(p, "trend.par");
        if (st == LAB_OK) st = s2;
    }
    if (st == LAB_OK && nser == 0) st = lab_err_set(LAB_ERR_FORMAT, "trend: no fix variant with a metric specification in these reports");
    if (st == LAB_OK)
        st = lab_gnuplot_render(root, LAB_GNUPLOT_TREND, out_dir, "trend",
                                "worst value over seeds / tolerance per fix and report: a line climbing toward 1.0 is a "
                                "drift that will fail; non-finite values are drawn at 1e6");
    if (st == LAB_OK && log) fprintf(log, "trend: %d series over %d reports in %s/trend.png\n", nser, n, out_dir);
    for (int i = 0; i < n; ++i) cJSON_Delete(reps[i].r);
    free(reps);
    return st;
}

static const char *const lab_cp_compare_names[] = {"index.html", LAB_GNUPLOT_COMPARE, NULL};
static const char *const lab_cp_trend_names[] = {"trend.png", "trend.dat", "trend.par", "trend.cmd", "trend.caption",
                                                 LAB_GNUPLOT_TREND, NULL};

lab_status lab_compare_plot_out_check(const char *out_dir)
{
    lab_status st = lab_fs_out_check("--out", out_dir, lab_cp_compare_names);
    if (st != LAB_OK) return st;
    static const char *const sets[] = {"results.jsonl", "summary.json", "report.json"};
    for (size_t i = 0; i < sizeof sets / sizeof *sets; ++i) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", out_dir, sets[i]);
        if (lab_fs_exists(path))
            return lab_err_set(LAB_ERR_ARG, "--out %s is a replay or report result set (it holds %s), whose index.html the "
                               "compare page would replace: name a missing path, an empty folder or an earlier compare "
                               "folder; nothing was touched", out_dir, sets[i]);
    }
    return LAB_OK;
}

lab_status lab_compare_plot_trend_out_check(const char *out_dir)
{
    return lab_fs_out_check("--out", out_dir, lab_cp_trend_names);
}

int lab_compare_plot_trend_cmd(int argc, char **argv, const char *root)
{
    const char *out = "build/trend";
    const char **dirs = calloc((size_t)(argc > 0 ? argc : 1), sizeof *dirs);
    int n = 0;
    if (!dirs) return 3;
    for (int i = 0; i < argc; ++i) {
        if (!strcmp(argv[i], "--out")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "lab: trend: --out needs a folder\n");
                free(dirs);
                return 2;
            }
            out = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "lab: trend: unknown flag '%s'\n", argv[i]);
            free(dirs);
            return 2;
        } else {
            dirs[n++] = argv[i];
        }
    }
    if (n < 1) {
        fprintf(stderr, "lab: trend needs report folders: lab trend [--out DIR] REPORT...\n");
        free(dirs);
        return 2;
    }
    if (lab_compare_plot_trend_out_check(out) != LAB_OK) {
        fprintf(stderr, "lab: trend: %s\n", lab_err_msg());
        free(dirs);
        return 2;
    }
    /* SIGINT/SIGTERM: exit 130/143 between reports (caught even where the shell left them ignored) */
    if (lab_isolate_catch_signals() != LAB_OK) fprintf(stderr, "lab trend: %s\n", lab_err_msg());
    lab_stall_point(LAB_STALL_READING);
    lab_status st = lab_compare_plot_trend(dirs, n, out, root, stdout);
    free(dirs);
    if (lab_isolate_interrupted()) return 128 + lab_isolate_interrupted();
    if (st == LAB_OK) return 0;
    fprintf(stderr, "lab trend: %s\n", lab_err_msg());
    return st == LAB_ERR_IO && strstr(lab_err_msg(), "report.json") ? 2 : st == LAB_ERR_FORMAT || st == LAB_ERR_ARG ? 2 : 3;
}
