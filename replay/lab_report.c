/* lab_report: turns a replay folder into a self-contained device report: report.json (device, build,
 * per-incident outcome tables, metric statistics and per-seed values of the criterion's metrics) and, through
 * lab_html, index.html. */
#define _GNU_SOURCE
#include "lab_report.h"
#include "lab_bench.h" /* [issue 14] */

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lab_device.h"
#include "lab_html.h"
#include "lab_isolate.h"
#include "lab_json.h"
#include "lab_plot.h"
#include "lab_resread.h"

#define LAB_REPORT_MAX_FAILURES 20

/* ------------------------------------------------------------------------------------------------ */
/* Small helpers */

/* ISO 8601 UTC time of t into buf. */
static void lab_report_iso(time_t t, char *buf, size_t len)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Modification time of path, or -1 when it cannot be stat'ed. */
static time_t lab_report_mtime(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? sb.st_mtime : (time_t)-1;
}

/* ------------------------------------------------------------------------------------------------ */
/* Reading the replay's files */

/* Checks summary.json's shape; LAB_ERR_FORMAT names path and the field. */
static lab_status lab_report_check_summary(const char *path, const cJSON *s)
{
    const cJSON *incs = cJSON_GetObjectItemCaseSensitive(s, "incidents");
    if (!cJSON_IsObject(s)) return lab_err_set(LAB_ERR_FORMAT, "%s: not a JSON object", path);
    if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(s, "backend")))
        return lab_err_set(LAB_ERR_FORMAT, "%s: no string 'backend'", path);
    if (!cJSON_IsArray(incs)) return lab_err_set(LAB_ERR_FORMAT, "%s: no array 'incidents'", path);
    int i = 0;
    const cJSON *inc;
    cJSON_ArrayForEach(inc, incs) {
        if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(inc, "id")))
            return lab_err_set(LAB_ERR_FORMAT, "%s: incidents[%d]: no string 'id'", path, i);
        const cJSON *vars = cJSON_GetObjectItemCaseSensitive(inc, "variants"), *v;
        if (!cJSON_IsArray(vars)) return lab_err_set(LAB_ERR_FORMAT, "%s: incidents[%d]: no array 'variants'", path, i);
        int k = 0;
        cJSON_ArrayForEach(v, vars) {
            if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(v, "name")) ||
                !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(v, "role")) ||
                !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(v, "counts")))
                return lab_err_set(LAB_ERR_FORMAT, "%s: incidents[%d].variants[%d]: needs 'name', 'role' and 'counts'",
                                   path, i, k);
            k++;
        }
        i++;
    }
    return LAB_OK;
}

static const char *lab_report_str(const cJSON *o, const char *key)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(s) ? s->valuestring : "";
}

/* JSON for a per-seed value: a number rounded to 6 significant digits (keeps report.json small at
 * thousands of seeds; the statistics keep full precision), "nan"/"inf"/"-inf", or null when absent. */
static cJSON *lab_report_value_json(int kind, double v)
{
    if (kind == 0) return cJSON_CreateNull();
    if (isfinite(v)) {
        char buf[32];
        snprintf(buf, sizeof buf, "%.6g", v);
        return cJSON_CreateNumber(strtod(buf, NULL));
    }
    return cJSON_CreateString(isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
}

static int lab_report_dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int lab_report_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Adds "seed_first", "seed_last" and "metrics": {name: {n, nonfinite, min, median, max}} to variant v
 * from the incident's records recs[0..n) that belong to variant var. */
static lab_status lab_report_variant_stats(cJSON *v, const lab_resread_rec *const *recs, size_t n_recs, const char *var)
{
    const char *names[64];
    int nn = 0;
    size_t nrec = 0;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n_recs; ++i) {
        if (strcmp(recs[i]->variant, var)) continue;
        nrec++;
        double seed = (double)recs[i]->seed;
        lo = seed < lo ? seed : lo;
        hi = seed > hi ? seed : hi;
        for (int j = 0; j < recs[i]->n_metrics; ++j) {
            const char *name = recs[i]->metrics[j].name;
            int k = 0;
            while (k < nn && strcmp(names[k], name)) ++k;
            if (k == nn && nn < 64) names[nn++] = name;
        }
    }
    if (nrec) {
        cJSON_AddNumberToObject(v, "seed_first", lo);
        cJSON_AddNumberToObject(v, "seed_last", hi);
    }
    cJSON *ms = cJSON_AddObjectToObject(v, "metrics");
    double *vals = malloc((nrec ? nrec : 1) * sizeof *vals);
    if (!vals || !ms) {
        free(vals);
        return lab_err_set(LAB_ERR_NOMEM, "report: out of memory");
    }
    for (int k = 0; k < nn; ++k) {
        size_t n = 0, nonfinite = 0;
        for (size_t i = 0; i < n_recs; ++i) {
            double x;
            if (strcmp(recs[i]->variant, var)) continue;
            int kind = lab_resread_metric(recs[i], names[k], &x);
            if (kind == 1) vals[n++] = x;
            else if (kind == 2) nonfinite++;
        }
        cJSON *s = cJSON_AddObjectToObject(ms, names[k]);
        cJSON_AddNumberToObject(s, "n", (double)n);
        cJSON_AddNumberToObject(s, "nonfinite", (double)nonfinite);
        if (n == 0) continue;
        qsort(vals, n, sizeof *vals, lab_report_dbl_cmp);
        double med = n % 2 ? vals[n / 2] : 0.5 * (vals[n / 2 - 1] + vals[n / 2]);
        cJSON_AddNumberToObject(s, "min", vals[0]);
        cJSON_AddNumberToObject(s, "median", med);
        cJSON_AddNumberToObject(s, "max", vals[n - 1]);
    }
    free(vals);
    return LAB_OK;
}

/* Adds "per_seed": {"seeds": [...], "variants": {name: {"outcome": [...], <plot_metric>: [...],
 * <drift_metric>: [...], <each metric of inc's plots.specs and its per-case bound>: [...]}}} to the incident
 * object from its records recs[0..n); seeds sorted, values aligned with them (null where a variant has no case
 * at a seed). inc may be NULL (an incident this build lacks). */
static lab_status lab_report_per_seed(cJSON *inc_json, const lab_resread_rec *const *recs, size_t n, const cJSON *vars,
                                      const lab_incident *inc, const char *plot_metric, const char *drift_metric)
{
    size_t nv = (size_t)cJSON_GetArraySize(vars);
    uint64_t *seeds = malloc((n ? n : 1) * sizeof *seeds);
    const lab_resread_rec **grid = NULL;
    if (!seeds) return lab_err_set(LAB_ERR_NOMEM, "report: out of memory");
    for (size_t i = 0; i < n; ++i) seeds[i] = recs[i]->seed;
    qsort(seeds, n, sizeof *seeds, lab_report_u64_cmp);
    size_t u = 0;
    for (size_t i = 0; i < n; ++i)
        if (u == 0 || seeds[u - 1] != seeds[i]) seeds[u++] = seeds[i];
    /* grid[v * u + s]: the record of variant v at seed s. */
    grid = calloc(nv * u > 0 ? nv * u : 1, sizeof *grid);
    if (!grid) {
        free(seeds);
        return lab_err_set(LAB_ERR_NOMEM, "report: out of memory");
    }
    for (size_t i = 0; i < n; ++i) {
        const char *vname = recs[i]->variant;
        size_t v = 0;
        while (v < nv && strcmp(lab_report_str(cJSON_GetArrayItem(vars, (int)v), "name"), vname)) ++v;
        if (v == nv) continue; /* a variant summary.json does not list */
        uint64_t seed = recs[i]->seed;
        const uint64_t *at = bsearch(&seed, seeds, u, sizeof *seeds, lab_report_u64_cmp);
        if (at && !grid[v * u + (size_t)(at - seeds)]) grid[v * u + (size_t)(at - seeds)] = recs[i];
    }

    cJSON *ps = cJSON_AddObjectToObject(inc_json, "per_seed");
    cJSON *sj = cJSON_AddArrayToObject(ps, "seeds");
    for (size_t i = 0; i < u; ++i) cJSON_AddItemToArray(sj, cJSON_CreateNumber((double)seeds[i]));
    cJSON *vj = cJSON_AddObjectToObject(ps, "variants");
    /* The separating and drift metrics, then every metric of the incident's specs and their per-case bounds. */
    const char *metrics[2 + 2 * 16];
    int nm = 0;
    const char *cand[2 + 2 * 16];
    int nc = 0;
    cand[nc++] = plot_metric;
    cand[nc++] = drift_metric;
    for (int k = 0; inc && k < inc->plots.n_specs && k < 16; ++k) {
        cand[nc++] = inc->plots.specs[k].name;
        cand[nc++] = inc->plots.specs[k].tolerance_metric;
    }
    for (int k = 0; k < nc; ++k) {
        int dup = !cand[k] || !*cand[k];
        for (int j = 0; j < nm && !dup; ++j) dup = !strcmp(metrics[j], cand[k]);
        if (!dup) metrics[nm++] = cand[k];
    }
    for (size_t v = 0; v < nv; ++v) {
        cJSON *one = cJSON_AddObjectToObject(vj, lab_report_str(cJSON_GetArrayItem(vars, (int)v), "name"));
        cJSON *cols[1 + 2 + 2 * 16];
        cols[0] = cJSON_AddArrayToObject(one, "outcome");
        for (int k = 0; k < nm; ++k) cols[k + 1] = cJSON_AddArrayToObject(one, metrics[k]);
        for (size_t i = 0; i < u; ++i) {
            const lab_resread_rec *hit = grid[v * u + i];
            const char *oc = hit ? lab_outcome_name((lab_outcome)hit->outcome) : NULL;
            cJSON_AddItemToArray(cols[0], oc ? cJSON_CreateString(oc) : cJSON_CreateNull());
            for (int k = 0; k < nm; ++k) {
                double x = NAN;
                int kind = hit ? lab_resread_metric(hit, metrics[k], &x) : 0;
                cJSON_AddItemToArray(cols[k + 1], lab_report_value_json(kind, x));
            }
        }
    }
    free(grid);
    free(seeds);
    return LAB_OK;
}

/* Adds "failures": the first LAB_REPORT_MAX_FAILURES cases of the incident that missed their role. */
static void lab_report_failures(cJSON *inc_json, const lab_resread_rec *const *recs, size_t n)
{
    cJSON *f = cJSON_AddArrayToObject(inc_json, "failures");
    size_t total = 0;
    for (size_t i = 0; i < n; ++i) {
        const lab_resread_rec *rec = recs[i];
        if (rec->ok != 0) continue;
        if (total++ >= LAB_REPORT_MAX_FAILURES) continue;
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "variant", rec->variant);
        cJSON_AddNumberToObject(c, "seed", (double)rec->seed);
        cJSON_AddStringToObject(c, "outcome", lab_outcome_name((lab_outcome)rec->outcome));
        cJSON_AddStringToObject(c, "detail", rec->detail);
        cJSON_AddStringToObject(c, "error", rec->error);
        cJSON_AddStringToObject(c, "replay", rec->replay);
        cJSON_AddItemToArray(f, c);
    }
    cJSON_AddNumberToObject(inc_json, "failures_total", (double)total);
}

static int lab_report_str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds "plots": the PNG files of <dir>/plots that belong to incident id (the longest incident id that
 * prefixes the file name, followed by '.' or '-'), at least as new as since; <id>.png first, then the
 * others by name. Paths are relative to dir. */
static void lab_report_plots(cJSON *inc_json, const char *dir, const char *id, const cJSON *all_incs, time_t since)
{
    cJSON *arr = cJSON_AddArrayToObject(inc_json, "plots");
    char pdir[4096];
    snprintf(pdir, sizeof pdir, "%s/plots", dir);
    DIR *d = opendir(pdir);
    if (!d) return;
    char *names[512];
    size_t nn = 0;
    struct dirent *e;
    while ((e = readdir(d)) && nn < 512) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".png")) continue;
        /* Whose plot is it? */
        const char *best = NULL;
        const cJSON *inc;
        cJSON_ArrayForEach(inc, all_incs) {
            const char *cand = lab_report_str(inc, "id");
            size_t cl = strlen(cand);
            if (cl && !strncmp(e->d_name, cand, cl) && (e->d_name[cl] == '.' || e->d_name[cl] == '-') &&
                (!best || cl > strlen(best)))
                best = cand;
        }
        if (!best || strcmp(best, id)) continue;
        char path[4096 + 256];
        snprintf(path, sizeof path, "%s/%s", pdir, e->d_name);
        if (since && lab_report_mtime(path) < since) continue;
        names[nn++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, nn, sizeof *names, lab_report_str_cmp);
    char main_png[512];
    snprintf(main_png, sizeof main_png, "%s.png", id);
    for (int pass = 0; pass < 2; ++pass)
        for (size_t i = 0; i < nn; ++i) {
            if (!names[i] || (pass == 0) != !strcmp(names[i], main_png)) continue;
            char rel[600];
            snprintf(rel, sizeof rel, "plots/%s", names[i]);
            cJSON_AddItemToArray(arr, cJSON_CreateString(rel));
        }
    for (size_t i = 0; i < nn; ++i) free(names[i]);
}

lab_status lab_report_write(const char *dir, const lab_report_opts *opts)
{
    char sum_path[4096], res_path[4096];
    snprintf(sum_path, sizeof sum_path, "%s/summary.json", dir);
    snprintf(res_path, sizeof res_path, "%s/results.jsonl", dir);
    const char *fresh[2] = {sum_path, res_path};
    for (int i = 0; i < 2 && opts->since; ++i) {
        time_t t = lab_report_mtime(fresh[i]);
        if (t == (time_t)-1) return lab_err_set(LAB_ERR_IO, "%s: cannot read: %s", fresh[i], strerror(errno));
        if (t < opts->since)
            return lab_err_set(LAB_ERR_IO, "%s: older than this replay (the replay did not write it)", fresh[i]);
    }
    cJSON *summary = NULL;
    lab_resread_set rs = {0};
    lab_status st = lab_json_read_file(sum_path, &summary);
    if (st == LAB_OK) st = lab_report_check_summary(sum_path, summary);
    if (st == LAB_OK) st = lab_resread_load(res_path, &rs);
    if (st == LAB_OK) st = lab_report_write_set(dir, opts, summary, &rs);
    cJSON_Delete(summary);
    lab_resread_free(&rs);
    return st;
}

lab_status lab_report_write_set(const char *dir, const lab_report_opts *opts, const cJSON *summary,
                                const lab_resread_set *set)
{
    char sum_path[4096], rep_path[4096];
    snprintf(sum_path, sizeof sum_path, "%s/summary.json", dir);
    snprintf(rep_path, sizeof rep_path, "%s/report.json", dir);
    lab_status st = lab_report_check_summary(sum_path, summary);
    if (st != LAB_OK) return st;
    const lab_resread_set rs = *set;

    cJSON *root = cJSON_CreateObject();
    char iso[32];
    lab_report_iso(time(NULL), iso, sizeof iso);
    cJSON_AddStringToObject(root, "schema", LAB_REPORT_SCHEMA);
    cJSON_AddStringToObject(root, "created", iso);
    if (opts->command) cJSON_AddStringToObject(root, "command", opts->command);
    const char *backend = lab_report_str(summary, "backend");
    if (opts->query_device) {
        lab_backend be = LAB_BACKEND_CPU;
        if (lab_backend_parse(backend, &be) != LAB_OK) be = LAB_BACKEND_CPU;
        cJSON *dev = lab_device_json(be);
        if (dev) cJSON_AddItemToObject(root, "device", dev);
    }
    cJSON *build = lab_device_build_json();
    if (build) cJSON_AddItemToObject(root, "build", build);
    lab_status bst = lab_bench_attach(root, dir, opts->since); /* [issue 14] <dir>/bench.json as "bench" */
    if (bst != LAB_OK) fprintf(stderr, "lab report: benchmarks left out: %s\n", lab_err_msg());

    cJSON *sum = cJSON_AddObjectToObject(root, "summary");
    static const char *const keys[] = {"ok", "backend", "cases", "wall_s", "cases_per_s"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; ++k) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(summary, keys[k]);
        if (x) cJSON_AddItemToObject(sum, keys[k], cJSON_Duplicate(x, 1));
    }

    /* Per incident: summary.json's tallies, plus what the replay's records say. */
    const lab_resread_rec **mine = malloc((rs.n > 0 ? rs.n : 1) * sizeof *mine);
    if (!mine) st = lab_err_set(LAB_ERR_NOMEM, "report: out of memory");
    cJSON *incs = cJSON_AddArrayToObject(root, "incidents");
    const cJSON *sinc, *sincs = cJSON_GetObjectItemCaseSensitive(summary, "incidents");
    cJSON_ArrayForEach(sinc, sincs) {
        if (st != LAB_OK) break;
        const char *id = lab_report_str(sinc, "id");
        cJSON *inc = cJSON_CreateObject();
        cJSON_AddItemToArray(incs, inc);
        cJSON_AddStringToObject(inc, "id", id);
        cJSON_AddStringToObject(inc, "title", lab_report_str(sinc, "title"));
        const lab_incident *known = lab_incident_find(id);
        const char *pm = known && known->plots.metric ? known->plots.metric : NULL;
        const char *dm = known && known->plots.drift_metric ? known->plots.drift_metric : NULL;
        if (pm) cJSON_AddStringToObject(inc, "plot_metric", pm);
        if (pm) cJSON_AddBoolToObject(inc, "plot_log", known->plots.log);
        if (dm) cJSON_AddStringToObject(inc, "drift_metric", dm);
        if (known && known->summary) cJSON_AddStringToObject(inc, "summary", known->summary);
        if (known && known->plots.n_specs > 0) {
            cJSON *specs = cJSON_AddArrayToObject(inc, "metric_specs");
            for (int k = 0; k < known->plots.n_specs; ++k) {
                const lab_metric_spec *m = &known->plots.specs[k];
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "name", m->name);
                cJSON_AddNumberToObject(o, "tolerance", m->tolerance);
                cJSON_AddBoolToObject(o, "higher_is_worse", m->higher_is_worse);
                if (m->tolerance_metric) cJSON_AddStringToObject(o, "tolerance_metric", m->tolerance_metric);
                if (m->caption) cJSON_AddStringToObject(o, "caption", m->caption);
                cJSON_AddItemToArray(specs, o);
            }
        }
        cJSON *vars = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(sinc, "variants"), 1);
        cJSON_AddItemToObject(inc, "variants", vars);
        /* This incident's records, in results order. */
        size_t n_mine = 0;
        for (size_t i = 0; i < rs.n; ++i)
            if (!strcmp(rs.recs[i].incident, id)) mine[n_mine++] = &rs.recs[i];
        cJSON *v;
        cJSON_ArrayForEach(v, vars) {
            if (st != LAB_OK) break;
            st = lab_report_variant_stats(v, mine, n_mine, lab_report_str(v, "name"));
        }
        if (st == LAB_OK) st = lab_report_per_seed(inc, mine, n_mine, vars, known, pm, dm);
        lab_report_failures(inc, mine, n_mine);
        lab_report_plots(inc, dir, id, sincs, opts->since);
    }
    free(mine);
    if (st == LAB_OK) st = lab_json_write_file(rep_path, root, LAB_JSON_PRETTY);
    if (st == LAB_OK) st = lab_html_write(dir, root);
    cJSON_Delete(root);
    return st;
}

lab_status lab_report_replot(const char *dir, const char *repo_root, FILE *log)
{
    int npng = 0;
    lab_status st = lab_plot_results(dir, repo_root, log, &npng);
    if (st != LAB_OK) return st;
    char rep_path[4096];
    snprintf(rep_path, sizeof rep_path, "%s/report.json", dir);
    cJSON *root;
    if ((st = lab_json_read_file(rep_path, &root)) != LAB_OK) return st;
    cJSON *incs = cJSON_GetObjectItemCaseSensitive(root, "incidents"), *inc;
    cJSON_ArrayForEach(inc, incs) {
        cJSON_DeleteItemFromObjectCaseSensitive(inc, "plots");
        lab_report_plots(inc, dir, lab_report_str(inc, "id"), incs, 0);
    }
    st = lab_json_write_file(rep_path, root, LAB_JSON_PRETTY);
    if (st == LAB_OK) st = lab_html_write(dir, root);
    cJSON_Delete(root);
    if (st == LAB_OK && log) fprintf(log, "replot: %d PNG in %s/plots, index.html rewritten\n", npng, dir);
    return st;
}
