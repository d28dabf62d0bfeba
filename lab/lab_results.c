/* lab_results: case records of a replay, their verdicts, and results.jsonl / summary.json / TAP / JUnit output. */
#include "lab_results.h"

#include <cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_fs.h"

int lab_results_detected(const lab_variant *v, lab_outcome o)
{
    unsigned mask = v->detect ? v->detect : LAB_DETECT_FAIL;
    return (o == LAB_OUT_FAIL && (mask & LAB_DETECT_FAIL)) || (o == LAB_OUT_CRASH && (mask & LAB_DETECT_CRASH)) ||
           (o == LAB_OUT_HANG && (mask & LAB_DETECT_HANG));
}

int lab_results_case_ok(const lab_case_record *c)
{
    lab_outcome o = c->o.outcome;
    if (o == LAB_OUT_SKIP) return lab_skip_expected((lab_skip_class)c->o.r.skip_class) ? -1 : 0;
    if (o == LAB_OUT_ERROR) return 0;
    if (c->variant->role == LAB_ROLE_FIX) return o == LAB_OUT_PASS;
    if (lab_results_detected(c->variant, o)) return 1;
    /* A bug with a stated detection rate below 1 may pass on some seeds; the tally judges the rate. Any
     * other outcome than its own failure is inconclusive (a NaN bug killed by the watchdog proves nothing). */
    if (o == LAB_OUT_PASS && c->variant->min_detect_rate > 0 && c->variant->min_detect_rate < 1) return 1;
    return 0;
}

void lab_results_wilson(size_t k, size_t n, double *lo, double *hi)
{
    if (n == 0) {
        *lo = 0;
        *hi = 1;
        return;
    }
    const double z = 1.96;
    double p = (double)k / (double)n, nn = (double)n;
    double den = 1 + z * z / nn;
    double centre = (p + z * z / (2 * nn)) / den;
    double half = z * sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn)) / den;
    *lo = centre - half < 0 ? 0 : centre - half;
    *hi = centre + half > 1 ? 1 : centre + half;
}

static void lab_results_judge(lab_variant_tally *t)
{
    size_t ran = t->seeds - t->counts[LAB_OUT_SKIP];
    size_t errors = t->counts[LAB_OUT_ERROR];
    size_t judged = ran - errors - t->inconclusive; /* cases with a real outcome */
    t->detect_rate = judged ? (double)t->detected / (double)judged : NAN;
    lab_results_wilson(t->detected, judged, &t->detect_lo, &t->detect_hi);
    t->ok = 1;
    snprintf(t->verdict, sizeof t->verdict, "ok");
    if (t->variant->role == LAB_ROLE_FIX) {
        size_t bad = ran - t->counts[LAB_OUT_PASS];
        if (bad) {
            t->ok = 0;
            snprintf(t->verdict, sizeof t->verdict, "REGRESSED: %zu of %zu seeds not PASS", bad, ran);
        }
    } else {
        double want = t->variant->min_detect_rate;
        size_t xpass = t->counts[LAB_OUT_PASS];
        if (want <= 0 || want >= 1) {
            if (xpass) {
                t->ok = 0;
                snprintf(t->verdict, sizeof t->verdict, "XPASS on %zu of %zu seeds", xpass, ran);
            }
        } else if (judged > 0 && t->detect_hi < want) {
            t->ok = 0;
            snprintf(t->verdict, sizeof t->verdict, "detection %.3f (95%% CI %.3f-%.3f) below stated %.3f",
                     t->detect_rate, t->detect_lo, t->detect_hi, want);
        }
    }
    if (t->inconclusive) {
        t->ok = 0;
        snprintf(t->verdict, sizeof t->verdict, "INCONCLUSIVE on %zu of %zu seeds (not its own failure)",
                 t->inconclusive, ran);
    }
    if (errors) {
        t->ok = 0;
        snprintf(t->verdict, sizeof t->verdict, "ERROR on %zu of %zu seeds", errors, t->seeds);
    }
    if (t->skip_missing) {
        t->ok = 0;
        snprintf(t->verdict, sizeof t->verdict, "SKIP (not built / dependency missing) on %zu of %zu seeds",
                 t->skip_missing, t->seeds);
    }
    if (t->ok && ran == 0) snprintf(t->verdict, sizeof t->verdict, "skipped");
}

lab_status lab_results_tally(const lab_case_record *recs, size_t n, lab_variant_tally **tallies, size_t *n_tallies)
{
    lab_variant_tally *t = calloc(n ? n : 1, sizeof *t);
    if (!t) return lab_err_set(LAB_ERR_NOMEM, "tally: out of memory");
    size_t nt = 0;
    for (size_t i = 0; i < n; ++i) {
        size_t k = 0;
        while (k < nt && !(t[k].incident == recs[i].incident && t[k].variant == recs[i].variant)) ++k;
        if (k == nt) {
            t[nt].incident = recs[i].incident;
            t[nt].variant = recs[i].variant;
            nt++;
        }
        t[k].seeds++;
        t[k].counts[recs[i].o.outcome]++;
        lab_outcome o = recs[i].o.outcome;
        if (recs[i].variant->role == LAB_ROLE_BUG) {
            if (lab_results_detected(recs[i].variant, o)) t[k].detected++;
            else if (o == LAB_OUT_FAIL || o == LAB_OUT_CRASH || o == LAB_OUT_HANG) t[k].inconclusive++;
        }
        if (o == LAB_OUT_SKIP && !lab_skip_expected((lab_skip_class)recs[i].o.r.skip_class)) t[k].skip_missing++;
    }
    for (size_t k = 0; k < nt; ++k) lab_results_judge(&t[k]);
    *tallies = t;
    *n_tallies = nt;
    return LAB_OK;
}

void lab_results_replay_cmd(const lab_case_record *c, const char *lab_bin, char *buf, size_t len)
{
    snprintf(buf, len, "%s replay --incident %s --variant %s --seed %llu --backend %s", lab_bin, c->incident->id,
             c->variant->name, (unsigned long long)c->seed, lab_backend_name(c->backend));
}

/* Serialises a cJSON tree (unformatted or pretty) and writes it atomically, plus a newline. */
static lab_status lab_results_write_json(const char *path, cJSON *root, int pretty)
{
    char *s = pretty ? cJSON_Print(root) : cJSON_PrintUnformatted(root);
    if (!s) return lab_err_set(LAB_ERR_NOMEM, "%s: cannot serialise JSON", path);
    size_t n = strlen(s);
    char *buf = malloc(n + 2);
    if (!buf) {
        cJSON_free(s);
        return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
    }
    memcpy(buf, s, n);
    buf[n] = '\n';
    cJSON_free(s);
    lab_status st = lab_fs_write_atomic(path, buf, n + 1);
    free(buf);
    return st;
}

static cJSON *lab_results_case_json(const lab_case_record *c, const char *lab_bin)
{
    char cmd[512];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "incident", c->incident->id);
    cJSON_AddStringToObject(o, "variant", c->variant->name);
    cJSON_AddStringToObject(o, "role", lab_role_name(c->variant->role));
    char seed[24]; /* exact decimal: cJSON prints doubles above 1e15 with 15 significant digits */
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)c->seed);
    cJSON_AddRawToObject(o, "seed", seed);
    cJSON_AddStringToObject(o, "backend", lab_backend_name(c->backend));
    cJSON_AddStringToObject(o, "outcome", lab_outcome_name(c->o.outcome));
    int ok = lab_results_case_ok(c);
    if (ok < 0) cJSON_AddNullToObject(o, "ok");
    else cJSON_AddBoolToObject(o, "ok", ok);
    if (c->o.outcome == LAB_OUT_CRASH) cJSON_AddNumberToObject(o, "signal", c->o.signal);
    if (c->o.outcome == LAB_OUT_SKIP)
        cJSON_AddStringToObject(o, "skip_class", lab_skip_class_name((lab_skip_class)c->o.r.skip_class));
    cJSON_AddNumberToObject(o, "wall_s", c->o.wall_s);
    cJSON_AddStringToObject(o, "detail", c->o.r.detail);
    if (c->o.error[0]) cJSON_AddStringToObject(o, "error", c->o.error);
    cJSON *m = cJSON_AddObjectToObject(o, "metrics");
    cJSON *bad = NULL;
    for (int i = 0; i < c->o.r.n_metrics; ++i) {
        double v = c->o.r.metrics[i].value;
        if (isfinite(v)) {
            cJSON_AddNumberToObject(m, c->o.r.metrics[i].name, v);
        } else {
            cJSON_AddNullToObject(m, c->o.r.metrics[i].name);
            if (!bad) bad = cJSON_AddObjectToObject(o, "nonfinite_metrics");
            cJSON_AddStringToObject(bad, c->o.r.metrics[i].name, isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
        }
    }
    lab_results_replay_cmd(c, lab_bin, cmd, sizeof cmd);
    cJSON_AddStringToObject(o, "replay", cmd);
    return o;
}

lab_status lab_results_write_jsonl(const char *path, const lab_case_record *recs, size_t n, const char *lab_bin)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    if (!buf) return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
    for (size_t i = 0; i < n; ++i) {
        cJSON *o = lab_results_case_json(&recs[i], lab_bin);
        char *s = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        if (!s) {
            free(buf);
            return lab_err_set(LAB_ERR_NOMEM, "%s: cannot serialise JSON", path);
        }
        size_t sl = strlen(s);
        if (len + sl + 2 > cap) {
            while (len + sl + 2 > cap) cap *= 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                cJSON_free(s);
                free(buf);
                return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
            }
            buf = nb;
        }
        memcpy(buf + len, s, sl);
        len += sl;
        buf[len++] = '\n';
        cJSON_free(s);
    }
    lab_status st = lab_fs_write_atomic(path, buf, len);
    free(buf);
    return st;
}

lab_status lab_results_write_summary(const char *path, const lab_variant_tally *t, size_t nt, const char *backend,
                                     size_t n_cases, double wall_s, int *ok)
{
    cJSON *root = cJSON_CreateObject();
    int all_ok = 1;
    for (size_t k = 0; k < nt; ++k) all_ok &= t[k].ok;
    cJSON_AddBoolToObject(root, "ok", all_ok);
    cJSON_AddStringToObject(root, "backend", backend);
    cJSON_AddNumberToObject(root, "cases", (double)n_cases);
    cJSON_AddNumberToObject(root, "wall_s", wall_s);
    cJSON_AddNumberToObject(root, "cases_per_s", wall_s > 0 ? (double)n_cases / wall_s : 0);
    cJSON *incs = cJSON_AddArrayToObject(root, "incidents");
    cJSON *inc = NULL, *vars = NULL;
    const lab_incident *cur = NULL;
    for (size_t k = 0; k < nt; ++k) {
        if (t[k].incident != cur) {
            cur = t[k].incident;
            inc = cJSON_CreateObject();
            cJSON_AddStringToObject(inc, "id", cur->id);
            cJSON_AddStringToObject(inc, "title", cur->title);
            vars = cJSON_AddArrayToObject(inc, "variants");
            cJSON_AddItemToArray(incs, inc);
        }
        cJSON *v = cJSON_CreateObject();
        cJSON_AddStringToObject(v, "name", t[k].variant->name);
        cJSON_AddStringToObject(v, "role", lab_role_name(t[k].variant->role));
        cJSON_AddNumberToObject(v, "seeds", (double)t[k].seeds);
        cJSON *cnt = cJSON_AddObjectToObject(v, "counts");
        for (int o = 0; o < LAB_OUT_COUNT; ++o)
            cJSON_AddNumberToObject(cnt, lab_outcome_name((lab_outcome)o), (double)t[k].counts[o]);
        if (t[k].variant->role == LAB_ROLE_BUG) {
            cJSON_AddNumberToObject(v, "detected", (double)t[k].detected);
            if (isfinite(t[k].detect_rate)) cJSON_AddNumberToObject(v, "detect_rate", t[k].detect_rate);
            else cJSON_AddNullToObject(v, "detect_rate");
            cJSON *ci = cJSON_AddArrayToObject(v, "detect_ci95");
            cJSON_AddItemToArray(ci, cJSON_CreateNumber(t[k].detect_lo));
            cJSON_AddItemToArray(ci, cJSON_CreateNumber(t[k].detect_hi));
            double want = t[k].variant->min_detect_rate;
            cJSON_AddNumberToObject(v, "min_detect_rate", want > 0 && want < 1 ? want : 1.0);
        }
        cJSON_AddBoolToObject(v, "ok", t[k].ok);
        cJSON_AddStringToObject(v, "verdict", t[k].verdict);
        cJSON_AddItemToArray(vars, v);
    }
    lab_status st = lab_results_write_json(path, root, 1);
    cJSON_Delete(root);
    if (ok) *ok = all_ok;
    return st;
}

/* Appends printf output to a growing buffer; returns 0 on allocation failure. */
static int lab_results_appendf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int lab_results_appendf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(*buf + *len, *cap - *len, fmt, ap);
        va_end(ap);
        if (w < 0) return 0;
        if ((size_t)w < *cap - *len) {
            *len += (size_t)w;
            return 1;
        }
        size_t ncap = *cap * 2 + (size_t)w;
        char *nb = realloc(*buf, ncap);
        if (!nb) return 0;
        *buf = nb;
        *cap = ncap;
    }
}

/* What a case line says about its role: "PASS", "detected (FAIL)", "XPASS", ... */
static const char *lab_results_role_word(const lab_case_record *c)
{
    lab_outcome o = c->o.outcome;
    if (o == LAB_OUT_SKIP) return "SKIP";
    if (o == LAB_OUT_ERROR) return "ERROR";
    if (c->variant->role == LAB_ROLE_FIX) return o == LAB_OUT_PASS ? "fix holds" : "fix REGRESSED";
    if (lab_results_detected(c->variant, o)) return "bug detected";
    return o == LAB_OUT_PASS ? "XPASS (bug not detected)" : "INCONCLUSIVE (not the bug's own failure)";
}

lab_status lab_results_write_tap(const char *path, const lab_case_record *recs, size_t n, const char *lab_bin)
{
    size_t cap = 8192, len = 0;
    char *buf = malloc(cap);
    if (!buf) return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
    buf[0] = '\0';
    int good = lab_results_appendf(&buf, &len, &cap, "TAP version 13\n1..%zu\n", n);
    for (size_t i = 0; good && i < n; ++i) {
        const lab_case_record *c = &recs[i];
        int ok = lab_results_case_ok(c);
        char cmd[512];
        lab_results_replay_cmd(c, lab_bin, cmd, sizeof cmd);
        good = lab_results_appendf(&buf, &len, &cap, "%s %zu - %s %s seed=%llu %s: %s %s%s\n",
                                   ok == 0 ? "not ok" : "ok", i + 1, c->incident->id, c->variant->name,
                                   (unsigned long long)c->seed, lab_backend_name(c->backend),
                                   lab_outcome_name(c->o.outcome), lab_results_role_word(c),
                                   ok < 0 ? " # SKIP" : "");
        if (good && ok <= 0)
            good = lab_results_appendf(&buf, &len, &cap, "  ---\n  detail: \"%s\"\n  error: \"%s\"\n  replay: \"%s\"\n  ...\n",
                                       c->o.r.detail, c->o.error, cmd);
    }
    lab_status st = good ? lab_fs_write_atomic(path, buf, len) : lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
    free(buf);
    return st;
}

/* XML-escapes s into out (truncating). */
static void lab_results_xml(const char *s, char *out, size_t len)
{
    size_t j = 0;
    for (; *s && j + 7 < len; ++s) {
        const char *rep = NULL;
        switch (*s) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        default: break;
        }
        if (rep) {
            size_t rl = strlen(rep);
            memcpy(out + j, rep, rl);
            j += rl;
        } else if ((unsigned char)*s >= 0x20 || *s == '\n' || *s == '\t') {
            out[j++] = *s;
        }
    }
    out[j] = '\0';
}

lab_status lab_results_write_junit(const char *path, const lab_case_record *recs, size_t n, const char *lab_bin)
{
    size_t cap = 8192, len = 0, failures = 0, skipped = 0;
    char *buf = malloc(cap);
    if (!buf) return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
    for (size_t i = 0; i < n; ++i) {
        int ok = lab_results_case_ok(&recs[i]);
        failures += ok == 0;
        skipped += ok < 0;
    }
    int good = lab_results_appendf(&buf, &len, &cap,
                                   "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                                   "<testsuites name=\"lab replay\" tests=\"%zu\" failures=\"%zu\" skipped=\"%zu\">\n"
                                   "<testsuite name=\"lab replay\" tests=\"%zu\" failures=\"%zu\" skipped=\"%zu\">\n",
                                   n, failures, skipped, n, failures, skipped);
    for (size_t i = 0; good && i < n; ++i) {
        const lab_case_record *c = &recs[i];
        char cmd[512], detail[512], err[512];
        lab_results_replay_cmd(c, lab_bin, cmd, sizeof cmd);
        lab_results_xml(c->o.r.detail, detail, sizeof detail);
        lab_results_xml(c->o.error, err, sizeof err);
        int ok = lab_results_case_ok(c);
        good = lab_results_appendf(&buf, &len, &cap,
                                   "  <testcase classname=\"%s.%s\" name=\"seed %llu %s\" time=\"%.3f\">",
                                   c->incident->id, c->variant->name, (unsigned long long)c->seed,
                                   lab_backend_name(c->backend), c->o.wall_s);
        if (good && ok == 0)
            good = lab_results_appendf(&buf, &len, &cap, "<failure message=\"%s: %s\">%s %s&#10;replay: %s</failure>",
                                       lab_outcome_name(c->o.outcome), lab_results_role_word(c), detail, err, cmd);
        else if (good && ok < 0)
            good = lab_results_appendf(&buf, &len, &cap, "<skipped message=\"%s\"/>", detail);
        if (good) good = lab_results_appendf(&buf, &len, &cap, "</testcase>\n");
    }
    if (good) good = lab_results_appendf(&buf, &len, &cap, "</testsuite>\n</testsuites>\n");
    lab_status st = good ? lab_fs_write_atomic(path, buf, len) : lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
    free(buf);
    return st;
}
