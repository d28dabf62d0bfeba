/* lab_resread: the one reader of results.jsonl (the writer is lab_results): case records back in memory. */
#include "lab_resread.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_fs.h"
#include "lab_isolate.h"
#include "lab_results.h"

static void lab_resread_str(const cJSON *o, const char *key, char *dst, size_t len)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, key);
    snprintf(dst, len, "%s", cJSON_IsString(s) ? s->valuestring : "");
}

/* Fills r from one parsed line; returns NULL or what is missing. */
static const char *lab_resread_fill(const cJSON *o, lab_resread_rec *r)
{
    if (!cJSON_IsObject(o)) return "not a JSON object";
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "incident");
    const cJSON *var = cJSON_GetObjectItemCaseSensitive(o, "variant");
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(o, "seed");
    if (!cJSON_IsString(id)) return "no string 'incident'";
    if (!cJSON_IsString(var)) return "no string 'variant'";
    if (!cJSON_IsNumber(seed) || seed->valuedouble < 0) return "no number 'seed'";
    memset(r, 0, sizeof *r);
    snprintf(r->incident, sizeof r->incident, "%s", id->valuestring);
    snprintf(r->variant, sizeof r->variant, "%s", var->valuestring);
    r->seed = (uint64_t)seed->valuedouble;
    lab_resread_str(o, "role", r->role, sizeof r->role);
    const cJSON *be = cJSON_GetObjectItemCaseSensitive(o, "backend");
    if (!cJSON_IsString(be) || lab_backend_parse(be->valuestring, &r->backend) != LAB_OK) r->backend = LAB_BACKEND_CPU;
    const cJSON *out = cJSON_GetObjectItemCaseSensitive(o, "outcome");
    r->outcome = LAB_OUT_ERROR;
    for (int k = 0; k < LAB_OUT_COUNT && cJSON_IsString(out); ++k)
        if (strcmp(out->valuestring, lab_outcome_name((lab_outcome)k)) == 0) r->outcome = k;
    const cJSON *ok = cJSON_GetObjectItemCaseSensitive(o, "ok");
    r->ok = cJSON_IsBool(ok) ? cJSON_IsTrue(ok) : -1;
    const cJSON *wall = cJSON_GetObjectItemCaseSensitive(o, "wall_s");
    r->wall_s = cJSON_IsNumber(wall) ? wall->valuedouble : NAN;
    lab_resread_str(o, "detail", r->detail, sizeof r->detail);
    lab_resread_str(o, "error", r->error, sizeof r->error);
    lab_resread_str(o, "replay", r->replay, sizeof r->replay);
    const cJSON *nf = cJSON_GetObjectItemCaseSensitive(o, "nonfinite_metrics");
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(o, "metrics")) {
        if (r->n_metrics == LAB_RESREAD_MAX_METRICS || !m->string) break;
        double v = NAN;
        if (cJSON_IsNumber(m)) v = m->valuedouble;
        else {
            const cJSON *how = cJSON_GetObjectItemCaseSensitive(nf, m->string);
            const char *h = cJSON_IsString(how) ? how->valuestring : "nan";
            v = !strcmp(h, "inf") ? INFINITY : !strcmp(h, "-inf") ? -INFINITY : NAN;
        }
        snprintf(r->metrics[r->n_metrics].name, LAB_METRIC_NAME, "%s", m->string);
        r->metrics[r->n_metrics++].value = v;
    }
    r->inc = lab_incident_find(r->incident);
    /* lab_incident_find accepts a unique prefix: a record must name the incident exactly. */
    if (r->inc && strcmp(r->inc->id, r->incident)) r->inc = NULL;
    r->var = r->inc ? lab_incident_variant(r->inc, r->variant) : NULL;
    return NULL;
}

lab_status lab_resread_load(const char *path, lab_resread_set *out)
{
    out->recs = NULL;
    out->n = 0;
    char *text;
    size_t len;
    lab_status st = lab_fs_read_all(path, &text, &len);
    if (st != LAB_OK) return st;
    size_t cap = 0, n = 0, line = 0;
    lab_resread_rec *recs = NULL;
    for (char *s = text, *e; *s; s = e + (*e != '\0')) {
        e = strchr(s, '\n');
        if (!e) e = s + strlen(s);
        line++;
        if (e == s) continue;
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 256;
            lab_resread_rec *nr = realloc(recs, nc * sizeof *nr);
            if (!nr) {
                free(recs);
                free(text);
                return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
            }
            recs = nr;
            cap = nc;
        }
        cJSON *o = cJSON_ParseWithLength(s, (size_t)(e - s));
        const char *bad = o ? lab_resread_fill(o, &recs[n]) : "not valid JSON";
        cJSON_Delete(o);
        if (bad) {
            free(recs);
            free(text);
            return lab_err_set(LAB_ERR_FORMAT, "%s:%zu: %s", path, line, bad);
        }
        n++;
    }
    free(text);
    out->recs = recs;
    out->n = n;
    return LAB_OK;
}

/* v as results.jsonl gives it back: cJSON writes a number with 15 significant digits wherever those read back within
 * its own tolerance, so a value read back can differ from the one written in its last digit; the records in memory
 * take the same round trip, so that what is built from them equals what is built from the file. */
static double lab_resread_as_written(double v)
{
    if (!isfinite(v)) return v;
    cJSON *n = cJSON_CreateNumber(v);
    char *text = n ? cJSON_PrintUnformatted(n) : NULL;
    double back = text ? strtod(text, NULL) : v;
    free(text);
    cJSON_Delete(n);
    return back;
}

lab_status lab_resread_from_records(const lab_case_record *recs, size_t n, const lab_results_cmd *cmd, lab_resread_set *out)
{
    out->n = 0;
    out->recs = malloc((n ? n : 1) * sizeof *out->recs);
    if (!out->recs) return lab_err_set(LAB_ERR_NOMEM, "results: out of memory");
    for (size_t i = 0; i < n; ++i) {
        const lab_case_record *c = &recs[i];
        lab_resread_rec *r = &out->recs[i];
        memset(r, 0, sizeof *r);
        snprintf(r->incident, sizeof r->incident, "%s", c->incident->id);
        snprintf(r->variant, sizeof r->variant, "%s", c->variant->name);
        snprintf(r->role, sizeof r->role, "%s", lab_role_name(c->variant->role));
        r->seed = c->seed;
        r->backend = c->backend;
        r->outcome = c->o.outcome;
        r->ok = lab_verdict_case_ok(c);
        r->wall_s = lab_resread_as_written(c->o.wall_s);
        snprintf(r->detail, sizeof r->detail, "%s", c->o.r.detail);
        snprintf(r->error, sizeof r->error, "%s", c->o.error);
        lab_results_spell(cmd, c, r->replay, sizeof r->replay);
        for (int k = 0; k < c->o.r.n_metrics && k < LAB_RESREAD_MAX_METRICS; ++k) {
            snprintf(r->metrics[k].name, LAB_METRIC_NAME, "%s", c->o.r.metrics[k].name);
            r->metrics[k].value = lab_resread_as_written(c->o.r.metrics[k].value);
            r->n_metrics++;
        }
        r->inc = c->incident;
        r->var = c->variant;
    }
    out->n = n;
    return LAB_OK;
}

void lab_resread_free(lab_resread_set *s)
{
    free(s->recs);
    s->recs = NULL;
    s->n = 0;
}

int lab_resread_metric(const lab_resread_rec *r, const char *name, double *v)
{
    *v = NAN;
    for (int i = 0; i < r->n_metrics; ++i)
        if (!strcmp(r->metrics[i].name, name)) {
            *v = r->metrics[i].value;
            return isfinite(*v) ? 1 : 2;
        }
    return 0;
}

int lab_resread_figure_case(const lab_resread_rec *r, lab_figure_case *out)
{
    if (!r->var) return 0;
    memset(out, 0, sizeof *out);
    out->variant = r->var;
    out->seed = r->seed;
    out->backend = r->backend;
    out->outcome = r->outcome;
    out->r.verdict_set = r->outcome == LAB_OUT_PASS || r->outcome == LAB_OUT_FAIL;
    out->r.passed = r->outcome == LAB_OUT_PASS;
    out->r.skipped = r->outcome == LAB_OUT_SKIP;
    snprintf(out->r.detail, sizeof out->r.detail, "%s", r->detail);
    for (int i = 0; i < r->n_metrics && i < LAB_MAX_METRICS; ++i) lab_result_metric(&out->r, r->metrics[i].name, r->metrics[i].value);
    return 1;
}
