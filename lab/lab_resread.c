#define _GNU_SOURCE
/* lab_resread: the one reader of results.jsonl (the writer is lab_results): case records back in memory. */
#include "lab_resread.h"
#include "lab_text.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_fs.h"
#include "lab_isolate.h"
#include "lab_results.h"
#include "lab_stall.h"
#include "lab_testknobs.h"

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
    const cJSON *detail = cJSON_GetObjectItemCaseSensitive(o, "detail");
    lab_text_fit(r->detail, sizeof r->detail, cJSON_IsString(detail) ? detail->valuestring : "");
    lab_resread_str(o, "error", r->error, sizeof r->error);
    lab_resread_str(o, "replay", r->replay, sizeof r->replay);
    lab_resread_str(o, "first_run", r->first_run, sizeof r->first_run);
    const cJSON *sig = cJSON_GetObjectItemCaseSensitive(o, "signal");
    r->signal = cJSON_IsNumber(sig) ? sig->valueint : 0;
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(o, "skip_class");
    r->skip_class = -1;
    for (int k = LAB_SKIP_MISSING; k <= LAB_SKIP_NO_VERSION && cJSON_IsString(sc); ++k)
        if (!strcmp(sc->valuestring, lab_skip_class_name((lab_skip_class)k))) r->skip_class = k;
    const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(o, "cpu_s");
    r->cpu_s = cJSON_IsNumber(cpu) ? cpu->valuedouble : NAN;
    const cJSON *done = cJSON_GetObjectItemCaseSensitive(o, "done_s");
    r->done_s = cJSON_IsNumber(done) ? done->valuedouble : 0.0;
    const cJSON *worker = cJSON_GetObjectItemCaseSensitive(o, "worker");
    r->worker = cJSON_IsNumber(worker) ? worker->valueint : 0;
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

/* Calls line(ctx, text, len, lineno) for each line of path (without its newline), looking at the interrupt flag
 * before the first and every 1024 lines. */
typedef lab_status (*lab_resread_line_fn)(void *ctx, char *text, size_t len, size_t lineno);
static lab_status lab_resread_lines(const char *path, lab_resread_line_fn fn, void *ctx)
{
    lab_stall_point(LAB_STALL_READING);
    FILE *f = fopen(path, "r");
    if (!f) return lab_err_set(LAB_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t len;
    lab_status st = LAB_OK;
    errno = 0;
    while (st == LAB_OK) {
        if (lineno % 1024 == 0 && lab_isolate_interrupted()) {
            st = lab_err_set(LAB_ERR_IO, "%s: interrupted while reading", path);
            break;
        }
        if ((len = getline(&line, &cap, f)) < 0) break;
        lineno++;
        if (len > 0 && line[len - 1] == '\n') line[--len] = '\0';
        st = fn(ctx, line, (size_t)len, lineno);
    }
    if (st == LAB_OK && ferror(f)) st = lab_err_set(LAB_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    free(line);
    fclose(f);
    return st;
}

typedef struct {
    const char *path;
    lab_resread_fn fn;
    void *ctx;
    lab_resread_rec rec;
} lab_resread_each_ctx;

static lab_status lab_resread_each_line(void *ctx, char *text, size_t len, size_t lineno)
{
    lab_resread_each_ctx *c = ctx;
    if (len == 0) return LAB_OK;
    if (lab_resread_line(text, len, &c->rec) != LAB_OK)
        return lab_err_set(LAB_ERR_FORMAT, "%s:%zu: %s", c->path, lineno, lab_err_msg());
    return c->fn(c->ctx, &c->rec);
}

lab_status lab_resread_line(const char *text, size_t len, lab_resread_rec *r)
{
    cJSON *o = cJSON_ParseWithLength(text, len);
    const char *bad = o ? lab_resread_fill(o, r) : "not valid JSON";
    cJSON_Delete(o);
    return bad ? lab_err_set(LAB_ERR_FORMAT, "%s", bad) : LAB_OK;
}

lab_status lab_resread_to_record(const lab_resread_rec *r, lab_case_record *out)
{
    if (!r->inc || !r->var)
        return lab_err_set(LAB_ERR_NOTFOUND, "%s/%s: this build has no such incident and variant", r->incident,
                           r->variant);
    memset(out, 0, sizeof *out);
    out->incident = r->inc;
    out->variant = r->var;
    out->seed = r->seed;
    out->backend = r->backend;
    lab_job_outcome *o = &out->o;
    o->outcome = (lab_outcome)r->outcome;
    o->signal = r->signal;
    o->wall_s = r->wall_s;
    o->cpu_s = r->cpu_s;
    o->done_s = r->done_s;
    o->worker = r->worker;
    snprintf(o->error, sizeof o->error, "%s", r->error);
    snprintf(o->r.detail, sizeof o->r.detail, "%s", r->detail);
    o->r.verdict_set = r->outcome == LAB_OUT_PASS || r->outcome == LAB_OUT_FAIL;
    o->r.passed = r->outcome == LAB_OUT_PASS;
    o->r.skipped = r->outcome == LAB_OUT_SKIP;
    o->r.skip_class = r->skip_class >= 0 ? r->skip_class : LAB_SKIP_MISSING;
    for (int k = 0; k < r->n_metrics && k < LAB_MAX_METRICS; ++k) {
        snprintf(o->r.metrics[k].name, sizeof o->r.metrics[k].name, "%s", r->metrics[k].name);
        o->r.metrics[k].value = r->metrics[k].value;
        o->r.n_metrics++;
    }
    snprintf(out->first_run, sizeof out->first_run, "%s", r->first_run);
    return LAB_OK;
}

lab_status lab_resread_each(const char *path, lab_resread_fn fn, void *ctx)
{
    lab_resread_each_ctx *c = malloc(sizeof *c); /* a record is a few KB: not on the stack */
    if (!c) return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
    *c = (lab_resread_each_ctx){path, fn, ctx, {{0}}};
    lab_status st = lab_resread_lines(path, lab_resread_each_line, c);
    free(c);
    return st;
}

static lab_status lab_resread_count_line(void *ctx, char *text, size_t len, size_t lineno)
{
    (void)text, (void)lineno;
    *(size_t *)ctx += len > 0;
    return LAB_OK;
}

lab_status lab_resread_count(const char *path, size_t *n)
{
    *n = 0;
    return lab_resread_lines(path, lab_resread_count_line, n);
}

size_t lab_resread_sample_at(void)
{
    const char *e = getenv(LAB_TESTKNOB_SAMPLE_AT);
    char *end;
    unsigned long long v = e && *e ? strtoull(e, &end, 10) : 0;
    return v > 0 && *end == '\0' ? (size_t)v : LAB_RESREAD_SAMPLE_AT;
}

/* Appends records to a set; with step > 1 only every step-th of each (incident, variant) in file order. */
typedef struct {
    const char *path;
    lab_resread_rec *recs;
    size_t n, cap, step;
    struct lab_resread_key {
        char incident[64], variant[64];
        size_t seen;
    } *keys;
    size_t nk, kcap;
} lab_resread_acc;

static lab_status lab_resread_append(void *ctx, const lab_resread_rec *r)
{
    lab_resread_acc *a = ctx;
    if (a->step > 1) {
        size_t k = 0;
        while (k < a->nk && (strcmp(a->keys[k].incident, r->incident) || strcmp(a->keys[k].variant, r->variant))) ++k;
        if (k == a->nk) {
            if (a->nk == a->kcap) {
                size_t nc = a->kcap ? 2 * a->kcap : 16;
                void *nk = realloc(a->keys, nc * sizeof *a->keys);
                if (!nk) return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", a->path);
                a->keys = nk, a->kcap = nc;
            }
            snprintf(a->keys[k].incident, sizeof a->keys[k].incident, "%s", r->incident);
            snprintf(a->keys[k].variant, sizeof a->keys[k].variant, "%s", r->variant);
            a->keys[k].seen = 0;
            a->nk++;
        }
        if (a->keys[k].seen++ % a->step != 0) return LAB_OK;
    }
    if (a->n == a->cap) {
        size_t nc = a->cap ? 2 * a->cap : 256;
        lab_resread_rec *nr = realloc(a->recs, nc * sizeof *nr);
        if (!nr) return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", a->path);
        a->recs = nr;
        a->cap = nc;
    }
    a->recs[a->n++] = *r;
    return LAB_OK;
}

static lab_status lab_resread_gather(const char *path, size_t step, lab_resread_set *out)
{
    lab_resread_acc a = {path, NULL, 0, 0, step, NULL, 0, 0};
    lab_status st = lab_resread_each(path, lab_resread_append, &a);
    free(a.keys);
    if (st != LAB_OK) {
        free(a.recs);
        return st;
    }
    out->recs = a.recs;
    out->n = a.n;
    return LAB_OK;
}

lab_status lab_resread_load(const char *path, lab_resread_set *out)
{
    out->recs = NULL;
    out->n = 0;
    return lab_resread_gather(path, 1, out);
}

lab_status lab_resread_load_sample(const char *path, size_t most, lab_resread_set *out, size_t *total, size_t *step)
{
    out->recs = NULL;
    out->n = 0;
    *step = 1;
    lab_status st = lab_resread_count(path, total);
    if (st != LAB_OK) return st;
    if (most > 0 && *total > most) *step = (*total + most - 1) / most;
    return lab_resread_gather(path, *step, out);
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
        snprintf(r->first_run, sizeof r->first_run, "%s", c->first_run);
        r->signal = c->o.outcome == LAB_OUT_CRASH ? c->o.signal : 0;
        r->skip_class = c->o.outcome == LAB_OUT_SKIP ? c->o.r.skip_class : -1;
        r->cpu_s = isfinite(c->o.cpu_s) ? lab_resread_as_written(c->o.cpu_s) : NAN;
        r->done_s = c->o.done_s > 0 ? lab_resread_as_written(c->o.done_s) : 0.0;
        r->worker = c->o.done_s > 0 ? c->o.worker : 0;
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
