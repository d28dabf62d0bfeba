/* lab_plot: turns a replay's results.jsonl into per-incident data files and gnuplot PNGs. */
#include "lab_plot.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "lab_fs.h"
#include "lab_incident.h"

/* One parsed line of results.jsonl, reduced to what a plot needs. */
typedef struct {
    const lab_incident *inc;
    int variant;       /* index in inc->variants */
    double seed;
    double value[2];   /* plot_metric and drift_metric, NaN if absent or non-finite */
} lab_plot_point;

/* The k-th plotted metric of an incident (0: the separating metric, 1: the drift metric), or NULL. */
static const char *lab_plot_metric(const lab_incident *inc, int k, int *use_log)
{
    *use_log = k == 0 ? inc->plot_log : 1;
    return k == 0 ? inc->plot_metric : inc->drift_metric;
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
        cJSON *o = cJSON_ParseWithLength(s, (size_t)(e - s));
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "incident");
        const cJSON *var = cJSON_GetObjectItemCaseSensitive(o, "variant");
        const cJSON *seed = cJSON_GetObjectItemCaseSensitive(o, "seed");
        if (!o || !cJSON_IsString(id) || !cJSON_IsString(var) || !cJSON_IsNumber(seed)) {
            cJSON_Delete(o);
            free(p);
            free(text);
            return lab_err_set(LAB_ERR_FORMAT, "%s:%zu: not a case record (needs incident, variant, seed)", path, line);
        }
        const lab_incident *inc = lab_incident_find(id->valuestring);
        int vi = -1;
        for (int k = 0; inc && k < inc->n_variants; ++k)
            if (strcmp(inc->variants[k].name, var->valuestring) == 0) vi = k;
        if (inc && vi >= 0 && inc->plot_metric) { /* records of incidents this build lacks are left out */
            if (cnt == cap) {
                lab_plot_point *np = realloc(p, 2 * cap * sizeof *p);
                if (!np) {
                    cJSON_Delete(o);
                    free(p);
                    free(text);
                    return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
                }
                p = np;
                cap *= 2;
            }
            p[cnt].inc = inc;
            p[cnt].variant = vi;
            p[cnt].seed = seed->valuedouble;
            for (int k = 0; k < 2; ++k) {
                int lg;
                const char *name = lab_plot_metric(inc, k, &lg);
                const cJSON *m = name ? cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "metrics"), name)
                                      : NULL;
                p[cnt].value[k] = cJSON_IsNumber(m) ? m->valuedouble : NAN;
            }
            cnt++;
        }
        cJSON_Delete(o);
    }
    free(text);
    *pts = p;
    *n = cnt;
    return LAB_OK;
}

static int lab_plot_seed_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Writes the .dat of one incident's k-th metric; returns the number of columns (1 + variants) or -1. */
static int lab_plot_write_dat(const char *path, const lab_incident *inc, int k, int use_log, const lab_plot_point *p,
                              size_t n, size_t *n_hidden)
{
    double *seeds = malloc((n ? n : 1) * sizeof *seeds);
    if (!seeds) return -1;
    size_t ns = 0;
    for (size_t i = 0; i < n; ++i)
        if (p[i].inc == inc) seeds[ns++] = p[i].seed;
    qsort(seeds, ns, sizeof *seeds, lab_plot_seed_cmp);
    size_t u = 0;
    for (size_t i = 0; i < ns; ++i)
        if (u == 0 || seeds[u - 1] != seeds[i]) seeds[u++] = seeds[i];
    FILE *f = fopen(path, "w");
    if (!f) {
        free(seeds);
        return -1;
    }
    fprintf(f, "seed");
    for (int v = 0; v < inc->n_variants; ++v) fprintf(f, " %s(%s)", inc->variants[v].name, lab_role_name(inc->variants[v].role));
    fprintf(f, "\n");
    *n_hidden = 0;
    for (size_t s = 0; s < u; ++s) {
        fprintf(f, "%.0f", seeds[s]);
        for (int v = 0; v < inc->n_variants; ++v) {
            double val = NAN;
            for (size_t i = 0; i < n; ++i)
                if (p[i].inc == inc && p[i].variant == v && p[i].seed == seeds[s]) val = p[i].value[k];
            if (!isfinite(val) || (use_log && val <= 0)) {
                fprintf(f, " NaN");
                *n_hidden += 1;
            } else {
                fprintf(f, " %.9g", val);
            }
        }
        fprintf(f, "\n");
    }
    free(seeds);
    int bad = ferror(f);
    return fclose(f) == 0 && !bad ? inc->n_variants + 1 : -1;
}

lab_status lab_plot_results(const char *out_dir, const char *root, int *n_png)
{
    char path[4096], dir[4096];
    *n_png = 0;
    snprintf(path, sizeof path, "%s/results.jsonl", out_dir);
    lab_plot_point *p = NULL;
    size_t n = 0;
    lab_status st = lab_plot_parse(path, &p, &n);
    if (st != LAB_OK) return st;
    snprintf(dir, sizeof dir, "%s/plots", out_dir);
    if ((st = lab_fs_mkdirs(dir)) != LAB_OK) {
        free(p);
        return st;
    }
    int have_gnuplot = system("command -v gnuplot >/dev/null 2>&1") == 0;
    for (size_t i = 0; i < n; ++i) {
        const lab_incident *inc = p[i].inc;
        int seen = 0;
        for (size_t k = 0; k < i; ++k) seen |= p[k].inc == inc;
        if (seen) continue;
        for (int k = 0; k < 2; ++k) {
            int use_log;
            const char *metric = lab_plot_metric(inc, k, &use_log);
            if (!metric) continue;
            char dat[4096], png[4096], cmd[12288], title[512];
            size_t hidden;
            const char *suffix = k == 0 ? "" : "-drift";
            snprintf(dat, sizeof dat, "%s/%s%s.dat", dir, inc->id, suffix);
            snprintf(png, sizeof png, "%s/%s%s.png", dir, inc->id, suffix);
            int cols = lab_plot_write_dat(dat, inc, k, use_log, p, n, &hidden);
            if (cols < 0) {
                free(p);
                return lab_err_set(LAB_ERR_IO, "%s: cannot write plot data", dat);
            }
            if (!have_gnuplot) continue;
            snprintf(title, sizeof title, "%s: %s%s", inc->id, metric,
                     hidden ? (use_log ? " (non-finite or <= 0 values not drawn)" : " (non-finite values not drawn)") : "");
            snprintf(cmd, sizeof cmd,
                     "gnuplot -e \"datafile='%s'; outfile='%s'; plottitle='%s'; metric='%s'; uselog=%d; ncols=%d\" "
                     "'%s/plots/separation.gp' 2>&1",
                     dat, png, title, metric, use_log, cols, root);
            FILE *gp = popen(cmd, "r");
            char msg[1024] = "";
            size_t got = gp ? fread(msg, 1, sizeof msg - 1, gp) : 0;
            msg[got] = '\0';
            int rc = gp ? pclose(gp) : -1;
            if (rc != 0) {
                free(p);
                return lab_err_set(LAB_ERR_IO, "%s: gnuplot failed (status %d): %s", png, rc, msg);
            }
            *n_png += 1;
        }
    }
    free(p);
    if (!have_gnuplot) return lab_err_set(LAB_ERR_UNSUPPORTED, "gnuplot not found: plot data written to %s, no PNG", dir);
    return LAB_OK;
}
