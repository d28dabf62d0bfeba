/* lab_report: turns a replay folder into a self-contained device report: report.json (device, build,
 * per-incident outcome tables, metric statistics and per-seed values of the criterion's metrics) and, through
 * lab_html, index.html. */
#define _GNU_SOURCE
#include "lab_report.h"
#include "lab_bench.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lab_arch.h"
#include "lab_card.h"
#include "lab_device.h"
#include "lab_fs.h"
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

/* ------------------------------------------------------------------------------------------------ */
/* What report.json needs of the case records, gathered one record at a time (the records themselves are not kept):
 * per incident and variant its metric statistics (the finite values of each metric, 8 bytes a value, for the exact
 * median), per case one compact per-seed entry (seed, variant, outcome, the per-seed columns' values) and the first
 * LAB_REPORT_MAX_FAILURES cases that missed their role. So a set of any size costs O(n log n) time and a small
 * constant of memory per case, where the records in memory cost a few KB each. */

#define LAB_REPORT_MAX_NAMES 64
#define LAB_REPORT_MAX_COLS (2 + 2 * 16)

typedef struct {
    char name[LAB_METRIC_NAME];
    size_t n, nonfinite, cap;
    double *v; /* the finite values */
} lab_rep_stat;

typedef struct {
    const char *name; /* summary.json's */
    size_t nrec;
    double lo, hi;
    int nn;
    lab_rep_stat *st; /* LAB_REPORT_MAX_NAMES, in first-seen order */
} lab_rep_var;

/* A per-seed entry: its header, then kinds[nm] (0 absent, 1 finite, 2 non-finite), then values[nm] (8-aligned). */
typedef struct {
    uint64_t seed;
    uint64_t seq;   /* its place among the incident's records: the first record of a (variant, seed) wins */
    uint32_t vidx;  /* the variant's index in summary.json, nv for a variant it does not list */
    uint32_t outcome;
} lab_rep_ent;

typedef struct {
    const char *id;
    const lab_incident *known;
    const char *pm, *dm;
    const cJSON *vars;
    size_t nv;
    lab_rep_var *v;
    const char *metrics[LAB_REPORT_MAX_COLS];
    int nm;
    size_t stride, koff, voff;
    unsigned char *ent;
    size_t n_ent, cap_ent;
    cJSON *fail;
    size_t n_fail;
} lab_rep_inc;

typedef struct {
    lab_rep_inc *inc;
    size_t ni;
} lab_rep_build;

static const lab_rep_ent *lab_rep_at(const lab_rep_inc *c, size_t i)
{
    return (const lab_rep_ent *)(c->ent + i * c->stride);
}

static void lab_rep_free(lab_rep_build *b)
{
    for (size_t i = 0; i < b->ni; ++i) {
        lab_rep_inc *c = &b->inc[i];
        for (size_t v = 0; v < c->nv; ++v) {
            for (int k = 0; k < c->v[v].nn; ++k) free(c->v[v].st[k].v);
            free(c->v[v].st);
        }
        free(c->v);
        free(c->ent);
        cJSON_Delete(c->fail);
    }
    free(b->inc);
    b->inc = NULL;
    b->ni = 0;
}

/* The per-seed columns of an incident: the separating and drift metrics, then every metric of its specs and their
 * per-case bounds, each once. */
static int lab_rep_columns(const lab_incident *inc, const char *plot_metric, const char *drift_metric, const char **metrics)
{
    const char *cand[LAB_REPORT_MAX_COLS];
    int nc = 0, nm = 0;
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
    return nm;
}

static lab_status lab_rep_begin(lab_rep_build *b, const cJSON *summary)
{
    const cJSON *sincs = cJSON_GetObjectItemCaseSensitive(summary, "incidents"), *sinc;
    b->ni = 0;
    b->inc = calloc((size_t)cJSON_GetArraySize(sincs) + 1, sizeof *b->inc);
    if (!b->inc) return lab_err_set(LAB_ERR_NOMEM, "report: out of memory");
    cJSON_ArrayForEach(sinc, sincs) {
        lab_rep_inc *c = &b->inc[b->ni++];
        c->id = lab_report_str(sinc, "id");
        c->known = lab_incident_find(c->id);
        c->pm = c->known && c->known->plots.metric ? c->known->plots.metric : NULL;
        c->dm = c->known && c->known->plots.drift_metric ? c->known->plots.drift_metric : NULL;
        c->vars = cJSON_GetObjectItemCaseSensitive(sinc, "variants");
        c->nv = (size_t)cJSON_GetArraySize(c->vars);
        c->nm = lab_rep_columns(c->known, c->pm, c->dm, c->metrics);
        c->koff = sizeof(lab_rep_ent);
        c->voff = (c->koff + (size_t)c->nm + 7) / 8 * 8;
        c->stride = c->voff + (size_t)c->nm * sizeof(double);
        c->fail = cJSON_CreateArray();
        c->v = calloc(c->nv + 1, sizeof *c->v);
        if (!c->fail || !c->v) return lab_err_set(LAB_ERR_NOMEM, "report: out of memory");
        const cJSON *v;
        size_t k = 0;
        cJSON_ArrayForEach(v, c->vars) {
            c->v[k].name = lab_report_str(v, "name");
            c->v[k].lo = INFINITY, c->v[k].hi = -INFINITY;
            k++;
        }
    }
    return LAB_OK;
}

static lab_status lab_rep_push(double **v, size_t *n, size_t *cap, double x)
{
    if (*n == *cap) {
        size_t nc = *cap ? 2 * *cap : 64;
        double *nv = realloc(*v, nc * sizeof *nv);
        if (!nv) return lab_err_set(LAB_ERR_NOMEM, "report: out of memory");
        *v = nv, *cap = nc;
    }
    (*v)[(*n)++] = x;
    return LAB_OK;
}

/* One record into its variant's statistics. */
static lab_status lab_rep_stats_add(lab_rep_var *var, const lab_resread_rec *r)
{
    if (!var->st && !(var->st = calloc(LAB_REPORT_MAX_NAMES, sizeof *var->st)))
        return lab_err_set(LAB_ERR_NOMEM, "report: out of memory");
    var->nrec++;
    double seed = (double)r->seed;
    var->lo = seed < var->lo ? seed : var->lo;
    var->hi = seed > var->hi ? seed : var->hi;
    for (int j = 0; j < r->n_metrics; ++j) {
        const char *name = r->metrics[j].name;
        int first = 1; /* a name recorded twice counts once, its first value (lab_resread_metric) */
        for (int i = 0; i < j && first; ++i) first = strcmp(r->metrics[i].name, name) != 0;
        if (!first) continue;
        int k = 0;
        while (k < var->nn && strcmp(var->st[k].name, name)) ++k;
        if (k == var->nn) {
            if (var->nn == LAB_REPORT_MAX_NAMES) continue;
            snprintf(var->st[k].name, sizeof var->st[k].name, "%s", name);
            var->nn++;
        }
        lab_rep_stat *s = &var->st[k];
        double x = r->metrics[j].value;
        if (!isfinite(x)) s->nonfinite++;
        else if (lab_rep_push(&s->v, &s->n, &s->cap, x) != LAB_OK) return LAB_ERR_NOMEM;
    }
    return LAB_OK;
}

/* The first LAB_REPORT_MAX_FAILURES cases of an incident that missed their role. */
static void lab_rep_failure_add(lab_rep_inc *c, const lab_resread_rec *rec)
{
    if (rec->ok != 0) return;
    if (c->n_fail++ >= LAB_REPORT_MAX_FAILURES) return;
    cJSON *f = cJSON_CreateObject();
    cJSON_AddStringToObject(f, "variant", rec->variant);
    cJSON_AddNumberToObject(f, "seed", (double)rec->seed);
    cJSON_AddStringToObject(f, "outcome", lab_outcome_name((lab_outcome)rec->outcome));
    cJSON_AddStringToObject(f, "detail", rec->detail);
    cJSON_AddStringToObject(f, "error", rec->error);
    cJSON_AddStringToObject(f, "replay", rec->replay);
    cJSON_AddItemToArray(c->fail, f);
}

static lab_status lab_rep_add_to(lab_rep_inc *c, const lab_resread_rec *r)
{
    size_t v = 0;
    while (v < c->nv && strcmp(c->v[v].name, r->variant)) ++v;
    if (v < c->nv && lab_rep_stats_add(&c->v[v], r) != LAB_OK) return LAB_ERR_NOMEM;
    if (c->n_ent == c->cap_ent) {
        size_t nc = c->cap_ent ? 2 * c->cap_ent : 256;
        unsigned char *ne = realloc(c->ent, nc * c->stride);
        if (!ne) return lab_err_set(LAB_ERR_NOMEM, "report: out of memory");
        c->ent = ne, c->cap_ent = nc;
    }
    unsigned char *e = c->ent + c->n_ent * c->stride;
    memset(e, 0, c->stride);
    lab_rep_ent *h = (lab_rep_ent *)e;
    h->seed = r->seed;
    h->seq = c->n_ent++;
    h->vidx = (uint32_t)v;
    h->outcome = (uint32_t)r->outcome;
    double *vals = (double *)(e + c->voff);
    for (int k = 0; k < c->nm && v < c->nv; ++k) e[c->koff + (size_t)k] = (unsigned char)lab_resread_metric(r, c->metrics[k], &vals[k]);
    lab_rep_failure_add(c, r);
    return LAB_OK;
}

static lab_status lab_rep_add(void *ctx, const lab_resread_rec *r)
{
    lab_rep_build *b = ctx;
    for (size_t i = 0; i < b->ni; ++i)
        if (!strcmp(b->inc[i].id, r->incident) && lab_rep_add_to(&b->inc[i], r) != LAB_OK) return LAB_ERR_NOMEM;
    return LAB_OK;
}

/* Adds "seed_first", "seed_last" and "metrics": {name: {n, nonfinite, min, median, max}} to variant object v. */
static void lab_rep_variant_stats(cJSON *v, lab_rep_var *var)
{
    if (var->nrec) {
        cJSON_AddNumberToObject(v, "seed_first", var->lo);
        cJSON_AddNumberToObject(v, "seed_last", var->hi);
    }
    cJSON *ms = cJSON_AddObjectToObject(v, "metrics");
    for (int k = 0; k < var->nn; ++k) {
        lab_rep_stat *st = &var->st[k];
        size_t n = st->n;
        cJSON *s = cJSON_AddObjectToObject(ms, st->name);
        cJSON_AddNumberToObject(s, "n", (double)n);
        cJSON_AddNumberToObject(s, "nonfinite", (double)st->nonfinite);
        if (n == 0) continue;
        double *vals = st->v;
        qsort(vals, n, sizeof *vals, lab_report_dbl_cmp);
        double med = n % 2 ? vals[n / 2] : 0.5 * (vals[n / 2 - 1] + vals[n / 2]);
        cJSON_AddNumberToObject(s, "min", vals[0]);
        cJSON_AddNumberToObject(s, "median", med);
        cJSON_AddNumberToObject(s, "max", vals[n - 1]);
        free(st->v);
        st->v = NULL, st->cap = 0;
    }
}

static int lab_rep_ent_cmp(const void *a, const void *b)
{
    const lab_rep_ent *x = a, *y = b;
    if (x->seed != y->seed) return x->seed < y->seed ? -1 : 1;
    if (x->vidx != y->vidx) return x->vidx < y->vidx ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* The entry of variant v in the seed group [g, end), or NULL (the first in file order: they are sorted so). */
static const lab_rep_ent *lab_rep_group_find(const lab_rep_inc *c, size_t g, size_t end, size_t v)
{
    for (size_t i = g; i < end; ++i) {
        const lab_rep_ent *e = lab_rep_at(c, i);
        if (e->vidx == v) return e;
        if (e->vidx > v) break;
    }
    return NULL;
}

/* Where the seed group that starts at g ends. */
static size_t lab_rep_group_end(const lab_rep_inc *c, size_t g)
{
    size_t e = g + 1;
    while (e < c->n_ent && lab_rep_at(c, e)->seed == lab_rep_at(c, g)->seed) ++e;
    return e;
}

/* A per-seed value as report.json holds it (6 significant digits), as a reader gets it back: 0 when absent. */
static int lab_rep_as_read(const lab_rep_inc *c, const lab_rep_ent *e, int k, double *x)
{
    int kind = e->vidx < c->nv ? ((const unsigned char *)e)[c->koff + (size_t)k] : 0;
    if (kind == 0) return 0;
    *x = ((const double *)((const unsigned char *)e + c->voff))[k];
    if (kind == 1) {
        char buf[32];
        snprintf(buf, sizeof buf, "%.6g", *x);
        *x = strtod(buf, NULL);
    }
    return 1;
}

/* Adds "per_seed": {"seeds": [...], "variants": {name: {"outcome": [...], <each per-seed column>: [...]}}} to the
 * incident object; seeds sorted, values aligned with them (null where a variant has no case at a seed). More seeds
 * than lab_resread_sample_at(): every k-th seed (k the smallest that keeps them within it), stated as "sample":
 * {"every": k, "of": seeds in all}, and per variant "worst": for each spec with a per-case bound, the largest
 * value / bound over every seed (a non-finite value: "inf"), what `lab trend` takes from the full columns. */
static lab_status lab_rep_per_seed(cJSON *inc_json, lab_rep_inc *c)
{
    if (c->n_ent > 1) qsort(c->ent, c->n_ent, c->stride, lab_rep_ent_cmp);
    size_t u = 0;
    for (size_t g = 0; g < c->n_ent; g = lab_rep_group_end(c, g)) u++;
    size_t most = lab_resread_sample_at(), every = u > most ? (u + most - 1) / most : 1;
    size_t *pick = malloc(((u + every - 1) / every + 1) * sizeof *pick), np = 0, gi = 0;
    if (!pick) return lab_err_set(LAB_ERR_NOMEM, "report: out of memory");
    for (size_t g = 0; g < c->n_ent; g = lab_rep_group_end(c, g), ++gi)
        if (gi % every == 0) pick[np++] = g;

    cJSON *ps = cJSON_AddObjectToObject(inc_json, "per_seed");
    if (every > 1) {
        cJSON *sm = cJSON_AddObjectToObject(ps, "sample");
        cJSON_AddNumberToObject(sm, "every", (double)every);
        cJSON_AddNumberToObject(sm, "of", (double)u);
    }
    cJSON *sj = cJSON_AddArrayToObject(ps, "seeds");
    for (size_t i = 0; i < np; ++i) cJSON_AddItemToArray(sj, cJSON_CreateNumber((double)lab_rep_at(c, pick[i])->seed));
    cJSON *vj = cJSON_AddObjectToObject(ps, "variants");
    for (size_t v = 0; v < c->nv; ++v) {
        cJSON *one = cJSON_AddObjectToObject(vj, c->v[v].name);
        cJSON *cols[1 + LAB_REPORT_MAX_COLS];
        cols[0] = cJSON_AddArrayToObject(one, "outcome");
        for (int k = 0; k < c->nm; ++k) cols[k + 1] = cJSON_AddArrayToObject(one, c->metrics[k]);
        for (size_t i = 0; i < np; ++i) {
            const lab_rep_ent *hit = lab_rep_group_find(c, pick[i], lab_rep_group_end(c, pick[i]), v);
            const char *oc = hit ? lab_outcome_name((lab_outcome)hit->outcome) : NULL;
            cJSON_AddItemToArray(cols[0], oc ? cJSON_CreateString(oc) : cJSON_CreateNull());
            for (int k = 0; k < c->nm; ++k) {
                int kind = hit ? ((const unsigned char *)hit)[c->koff + (size_t)k] : 0;
                double x = kind ? ((const double *)((const unsigned char *)hit + c->voff))[k] : NAN;
                cJSON_AddItemToArray(cols[k + 1], lab_report_value_json(kind, x));
            }
        }
        if (every == 1 || !c->known) continue;
        cJSON *worst = NULL;
        for (int s = 0; s < c->known->plots.n_specs && s < 16; ++s) {
            const lab_metric_spec *m = &c->known->plots.specs[s];
            if (!m->tolerance_metric) continue;
            int km = -1, kt = -1;
            for (int k = 0; k < c->nm; ++k) {
                if (!strcmp(c->metrics[k], m->name)) km = k;
                if (!strcmp(c->metrics[k], m->tolerance_metric)) kt = k;
            }
            if (km < 0 || kt < 0) continue;
            double w = -INFINITY;
            size_t n = 0;
            for (size_t g = 0; g < c->n_ent; g = lab_rep_group_end(c, g)) {
                const lab_rep_ent *hit = lab_rep_group_find(c, g, lab_rep_group_end(c, g), v);
                double x, t;
                if (!hit || !lab_rep_as_read(c, hit, km, &x) || !lab_rep_as_read(c, hit, kt, &t) || !(t > 0)) continue;
                x /= t;
                w = isnan(x) ? INFINITY : fmax(w, x);
                n++;
            }
            if (n == 0) continue;
            if (!worst) worst = cJSON_AddObjectToObject(one, "worst");
            cJSON_AddItemToObject(worst, m->name, isfinite(w) ? cJSON_CreateNumber(w) : lab_report_value_json(2, w));
        }
    }
    free(pick);
    free(c->ent);
    c->ent = NULL;
    c->n_ent = c->cap_ent = 0;
    return LAB_OK;
}

/* Adds "plots": the PNG files of list that belong to incident id (the longest incident id that prefixes the file
 * name, followed by '.' or '-'); <id>.png first, then the others by name (the list is sorted). Paths are relative to
 * the report's folder. */
static void lab_report_plots(cJSON *inc_json, const lab_plot_list *list, const char *id, const cJSON *all_incs)
{
    cJSON *arr = cJSON_AddArrayToObject(inc_json, "plots");
    char main_png[512];
    snprintf(main_png, sizeof main_png, "%s.png", id);
    for (int pass = 0; pass < 2; ++pass)
        for (size_t i = 0; list && i < list->n; ++i) {
            const char *name = list->names[i];
            if ((pass == 0) != !strcmp(name, main_png)) continue;
            /* Whose plot is it? */
            const char *best = NULL;
            const cJSON *inc;
            cJSON_ArrayForEach(inc, all_incs) {
                const char *cand = lab_report_str(inc, "id");
                size_t cl = strlen(cand);
                if (cl && !strncmp(name, cand, cl) && (name[cl] == '.' || name[cl] == '-') &&
                    (!best || cl > strlen(best)))
                    best = cand;
            }
            if (!best || strcmp(best, id)) continue;
            char rel[600];
            snprintf(rel, sizeof rel, "plots/%s", name);
            cJSON_AddItemToArray(arr, cJSON_CreateString(rel));
        }
}

/* From the story of incident id under root (its card, lab_card): with summary, "summary", the first sentence of "What
 * you see"; and the story's pictures, copied into <dir>/plots as <id>-story-NAME.svg with NAME's caption beside it
 * (<id>-story-NAME.caption, which index.html shows under it) and added to "plots" after the replay's own. A story
 * without a card or a picture that cannot be copied is reported on stderr and left out: the report is still made. */
static void lab_report_story(cJSON *inc_json, const char *dir, const char *root, const char *id, int summary)
{
    lab_card card;
    if (lab_card_load(root, id, &card) != LAB_OK) {
        fprintf(stderr, "lab report: %s: no summary or pictures from its story: %s\n", id, lab_err_msg());
        return;
    }
    if (summary) {
        char line[1024];
        lab_card_first_sentence(&card, LAB_CARD_SEE, line, sizeof line);
        cJSON_AddStringToObject(inc_json, "summary", line);
    }
    cJSON *arr = cJSON_GetObjectItemCaseSensitive(inc_json, "plots");
    if (!arr) arr = cJSON_AddArrayToObject(inc_json, "plots");
    char pdir[4096];
    snprintf(pdir, sizeof pdir, "%s/plots", dir);
    for (size_t i = 0; arr && i < card.n_pictures; ++i) {
        const char *file = card.pictures[i].file, *base = strrchr(file, '/');
        base = base ? base + 1 : file;
        char src[4096], dst[4096 + 512], cap[4096 + 512], rel[1024];
        snprintf(src, sizeof src, "%s/incidents/%s/%s", root, id, file);
        snprintf(dst, sizeof dst, "%s/%s-story-%s", pdir, id, base);
        snprintf(cap, sizeof cap, "%s/%s-story-%.*s.caption", pdir, id, (int)strlen(base) - 4, base);
        snprintf(rel, sizeof rel, "plots/%s-story-%s", id, base);
        char *data = NULL;
        size_t len = 0;
        lab_status st = lab_fs_mkdirs(pdir);
        if (st == LAB_OK) st = lab_fs_read_all(src, &data, &len);
        if (st == LAB_OK) st = lab_fs_write_atomic(dst, data, len);
        if (st == LAB_OK) st = lab_fs_write_atomic(cap, card.pictures[i].caption, strlen(card.pictures[i].caption));
        free(data);
        if (st == LAB_OK) cJSON_AddItemToArray(arr, cJSON_CreateString(rel));
        else fprintf(stderr, "lab report: %s: picture %s left out: %s\n", id, file, lab_err_msg());
    }
    lab_card_free(&card);
}

/* The PNG files of <dir>/plots at least as new as since (0: all): a report made from files (--from, --replot) lists
 * them there, leaving out an earlier run's. */
static lab_status lab_report_plots_on_disk(const char *dir, time_t since, lab_plot_list *l)
{
    char pdir[4096];
    snprintf(pdir, sizeof pdir, "%s/plots", dir);
    lab_status st = lab_plot_list_dir(pdir, l);
    size_t k = 0;
    for (size_t i = 0; st == LAB_OK && i < l->n; ++i) {
        char path[4096 + 256];
        snprintf(path, sizeof path, "%s/%s", pdir, l->names[i]);
        if (since && lab_report_mtime(path) < since) free(l->names[i]);
        else l->names[k++] = l->names[i];
    }
    if (st == LAB_OK) l->n = k;
    return st;
}

/* What a report shows beside the records: the benchmarks' section (NULL: none) and the plots drawn. */
typedef struct {
    const cJSON *bench;
    const lab_plot_list *plots;
} lab_rep_extra;

static lab_status lab_report_emit(const char *dir, const lab_report_opts *opts, const cJSON *summary, lab_rep_build *b,
                                  const lab_rep_extra *x);

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
    lab_rep_build b = {0};
    lab_status st = lab_json_read_file(sum_path, &summary);
    if (st == LAB_OK) st = lab_report_check_summary(sum_path, summary);
    if (st == LAB_OK) st = lab_rep_begin(&b, summary);
    /* the records streamed: only what the report needs of each stays (lab_rep_build) */
    if (st == LAB_OK) st = lab_resread_each(res_path, lab_rep_add, &b);
    /* the benchmarks and plots of the replay in dir: its bench.json and plots/, not older than it */
    cJSON *bench = NULL;
    lab_plot_list plots = {0};
    if (st == LAB_OK && lab_bench_read(dir, opts->since, &bench) != LAB_OK)
        fprintf(stderr, "lab report: benchmarks left out: %s\n", lab_err_msg());
    if (st == LAB_OK) st = lab_report_plots_on_disk(dir, opts->since, &plots);
    lab_rep_extra x = {bench, &plots};
    if (st == LAB_OK) st = lab_report_emit(dir, opts, summary, &b, &x);
    lab_plot_list_free(&plots);
    cJSON_Delete(bench);
    lab_rep_free(&b);
    cJSON_Delete(summary);
    return st;
}

lab_status lab_report_write_set(const char *dir, const lab_report_opts *opts, const cJSON *summary,
                                const lab_resread_set *set, const cJSON *bench, const lab_plot_list *plots)
{
    char sum_path[4096];
    snprintf(sum_path, sizeof sum_path, "%s/summary.json", dir);
    lab_status st = lab_report_check_summary(sum_path, summary);
    if (st != LAB_OK) return st;
    lab_rep_build b = {0};
    st = lab_rep_begin(&b, summary);
    for (size_t i = 0; i < set->n && st == LAB_OK; ++i) st = lab_rep_add(&b, &set->recs[i]);
    lab_rep_extra x = {bench, plots};
    if (st == LAB_OK) st = lab_report_emit(dir, opts, summary, &b, &x);
    lab_rep_free(&b);
    return st;
}

static lab_status lab_report_emit(const char *dir, const lab_report_opts *opts, const cJSON *summary, lab_rep_build *b,
                                  const lab_rep_extra *x)
{
    char rep_path[4096];
    snprintf(rep_path, sizeof rep_path, "%s/report.json", dir);
    lab_status st = LAB_OK;

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
        /* the code the GPU ran: architectures carried, native or JIT, warm-up, toolkit and driver (lab_arch.h) */
        cJSON *gpu = dev ? cJSON_GetObjectItemCaseSensitive(dev, "gpu") : NULL;
        cJSON *code = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(gpu, "available")) ? lab_arch_json() : NULL;
        if (code) cJSON_AddItemToObject(gpu, "code", code);
        if (dev) cJSON_AddItemToObject(root, "device", dev);
    }
    cJSON *build = lab_device_build_json();
    if (build) cJSON_AddItemToObject(root, "build", build);
    if (x->bench) cJSON_AddItemToObject(root, "bench", cJSON_Duplicate(x->bench, 1));

    cJSON *sum = cJSON_AddObjectToObject(root, "summary");
    /* "workers": how many and where the count came from; "ranks" (--mpi): each rank's, its jobs_from */
    static const char *const keys[] = {"ok", "backend", "cases", "wall_s", "cases_per_s", "workers", "ranks"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; ++k) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(summary, keys[k]);
        if (x) cJSON_AddItemToObject(sum, keys[k], cJSON_Duplicate(x, 1));
    }

    /* Per incident: summary.json's tallies, plus what the replay's records say. */
    cJSON *incs = cJSON_AddArrayToObject(root, "incidents");
    const cJSON *sincs = cJSON_GetObjectItemCaseSensitive(summary, "incidents");
    for (size_t i = 0; i < b->ni && st == LAB_OK; ++i) {
        lab_rep_inc *c = &b->inc[i];
        const cJSON *sinc = cJSON_GetArrayItem(sincs, (int)i);
        const char *id = c->id;
        const lab_incident *known = c->known;
        const char *pm = c->pm, *dm = c->dm;
        cJSON *inc = cJSON_CreateObject();
        cJSON_AddItemToArray(incs, inc);
        cJSON_AddStringToObject(inc, "id", id);
        cJSON_AddStringToObject(inc, "title", lab_report_str(sinc, "title"));
        if (pm) cJSON_AddStringToObject(inc, "plot_metric", pm);
        if (pm) cJSON_AddBoolToObject(inc, "plot_log", known->plots.log);
        if (dm) cJSON_AddStringToObject(inc, "drift_metric", dm);

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
        cJSON *vars = cJSON_Duplicate(c->vars, 1);
        cJSON_AddItemToObject(inc, "variants", vars);
        cJSON *v;
        size_t k = 0;
        cJSON_ArrayForEach(v, vars) lab_rep_variant_stats(v, &c->v[k++]);
        st = lab_rep_per_seed(inc, c);
        cJSON_AddItemToObject(inc, "failures", c->fail);
        c->fail = NULL;
        cJSON_AddNumberToObject(inc, "failures_total", (double)c->n_fail);
        lab_report_plots(inc, x->plots, id, sincs);
        if (known && opts->root) lab_report_story(inc, dir, opts->root, id, 1);
    }
    if (st == LAB_OK && lab_isolate_interrupted()) st = lab_err_set(LAB_ERR_IO, "interrupted before report.json was written");
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
    lab_plot_list plots;
    if ((st = lab_report_plots_on_disk(dir, 0, &plots)) != LAB_OK) {
        cJSON_Delete(root);
        return st;
    }
    cJSON_ArrayForEach(inc, incs) {
        cJSON_DeleteItemFromObjectCaseSensitive(inc, "plots");
        lab_report_plots(inc, &plots, lab_report_str(inc, "id"), incs);
        if (repo_root) lab_report_story(inc, dir, repo_root, lab_report_str(inc, "id"), 0);
    }
    lab_plot_list_free(&plots);
    st = lab_json_write_file(rep_path, root, LAB_JSON_PRETTY);
    if (st == LAB_OK) st = lab_html_write(dir, root);
    cJSON_Delete(root);
    if (st == LAB_OK && log) fprintf(log, "replot: %d PNG in %s/plots, index.html rewritten\n", npng, dir);
    return st;
}
