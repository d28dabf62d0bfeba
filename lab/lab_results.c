/* lab_results: a replay's output files: results.jsonl, summary.json, TAP and JUnit, each written from the one verdict (lab_verdict). */
#include "lab_results.h"

#include <cJSON.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_binom.h"
#include "lab_fs.h"
#include "lab_json.h"

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

void lab_results_spell(const lab_results_cmd *cmd, const lab_case_record *c, char *buf, size_t len)
{
    if (len) buf[0] = 0;
    if (cmd && cmd->spell) cmd->spell(cmd->ctx, c, buf, len);
}

static cJSON *lab_results_case_json(const lab_case_record *c, const lab_results_cmd *cmd)
{
    char line[512];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "incident", c->incident->id);
    cJSON_AddStringToObject(o, "variant", c->variant->name);
    cJSON_AddStringToObject(o, "role", lab_role_name(c->variant->role));
    char seed[24]; /* exact decimal: cJSON prints doubles above 1e15 with 15 significant digits */
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)c->seed);
    cJSON_AddRawToObject(o, "seed", seed);
    cJSON_AddStringToObject(o, "backend", lab_backend_name(c->backend));
    cJSON_AddStringToObject(o, "outcome", lab_outcome_name(c->o.outcome));
    int ok = lab_verdict_case_ok(c);
    if (ok < 0) cJSON_AddNullToObject(o, "ok");
    else cJSON_AddBoolToObject(o, "ok", ok);
    if (c->o.outcome == LAB_OUT_CRASH) cJSON_AddNumberToObject(o, "signal", c->o.signal);
    if (c->o.outcome == LAB_OUT_SKIP)
        cJSON_AddStringToObject(o, "skip_class", lab_skip_class_name((lab_skip_class)c->o.r.skip_class));
    cJSON_AddNumberToObject(o, "wall_s", c->o.wall_s);
    if (isfinite(c->o.cpu_s)) cJSON_AddNumberToObject(o, "cpu_s", c->o.cpu_s);
    if (c->o.done_s > 0) cJSON_AddNumberToObject(o, "done_s", c->o.done_s), cJSON_AddNumberToObject(o, "worker", c->o.worker);
    cJSON_AddStringToObject(o, "detail", c->o.r.detail);
    if (c->o.error[0]) cJSON_AddStringToObject(o, "error", c->o.error);
    if (c->first_run[0]) cJSON_AddStringToObject(o, "first_run", c->first_run);
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
    lab_results_spell(cmd, c, line, sizeof line);
    cJSON_AddStringToObject(o, "replay", line);
    return o;
}

int lab_results_jsonl_line(FILE *f, const lab_case_record *c, const lab_results_cmd *cmd)
{
    cJSON *o = lab_results_case_json(c, cmd);
    int good = o && lab_json_fput(f, o, LAB_JSON_COMPACT);
    cJSON_Delete(o);
    return good;
}

char *lab_results_case_line(const lab_case_record *c, const lab_results_cmd *cmd, size_t *len)
{
    cJSON *o = lab_results_case_json(c, cmd);
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text) return NULL;
    size_t n = strlen(text);
    char *line = malloc(n + 2);
    if (line) memcpy(line, text, n), line[n] = '\n', line[n + 1] = 0, *len = n + 1;
    cJSON_free(text);
    return line;
}

lab_status lab_results_write_jsonl(const char *path, const lab_case_record *recs, size_t n, const lab_results_cmd *cmd)
{
    lab_json_buf b = {0};
    for (size_t i = 0; i < n && !b.oom; ++i) {
        cJSON *o = lab_results_case_json(&recs[i], cmd);
        if (!o || !lab_json_buf_add(&b, o, LAB_JSON_COMPACT)) b.oom = 1;
        cJSON_Delete(o);
    }
    lab_status st = lab_json_write_atomic(path, &b);
    lab_json_buf_free(&b);
    return st;
}

/* A number, or null when it is not finite. */
static void lab_results_num_or_null(cJSON *o, const char *name, double x)
{
    if (isfinite(x)) cJSON_AddNumberToObject(o, name, x);
    else cJSON_AddNullToObject(o, name);
}

lab_status lab_results_write_summary(const char *path, const lab_verdict_tally *t, size_t nt, const char *backend,
                                     size_t n_cases, double wall_s, const lab_verdict *verdict,
                                     const lab_results_summary_extra *extra)
{
    cJSON *root;
    lab_status st = lab_results_summary_json(t, nt, backend, n_cases, wall_s, verdict, extra, &root);
    if (st == LAB_OK) st = lab_json_write_file(path, root, LAB_JSON_PRETTY);
    cJSON_Delete(root);
    return st;
}

char *lab_results_join_cmds(const char *cmds)
{
    char *line = malloc(2 * strlen(cmds) + 1);
    size_t k = 0;
    if (!line) return NULL;
    for (const char *c = cmds; *c;) {
        size_t n = strcspn(c, "\n");
        if (k) memcpy(line + k, "; ", 2), k += 2;
        memcpy(line + k, c, n);
        k += n;
        c += n + (c[n] == '\n');
    }
    line[k] = 0;
    return line;
}

/* An interrupted replay's "resume_commands" (cmds: one a line) and "resume" (lab_results_join_cmds; none: "(none:
 * every case finished)") added to root. Errors: LAB_ERR_NOMEM. */
static lab_status lab_results_add_resume(cJSON *root, const char *cmds)
{
    cJSON *list = cJSON_AddArrayToObject(root, "resume_commands");
    char *line = lab_results_join_cmds(cmds);
    if (!list || !line) {
        free(line);
        return lab_err_set(LAB_ERR_NOMEM, "summary: out of memory");
    }
    for (const char *c = cmds; *c;) {
        size_t n = strcspn(c, "\n");
        char *one = strndup(c, n);
        cJSON *item = one ? cJSON_CreateString(one) : NULL;
        free(one);
        if (!item) {
            free(line);
            return lab_err_set(LAB_ERR_NOMEM, "summary: out of memory");
        }
        cJSON_AddItemToArray(list, item);
        c += n + (c[n] == '\n');
    }
    cJSON_AddStringToObject(root, "resume", line[0] ? line : "(none: every case finished)");
    free(line);
    return LAB_OK;
}

lab_status lab_results_summary_json(const lab_verdict_tally *t, size_t nt, const char *backend, size_t n_cases,
                                    double wall_s, const lab_verdict *verdict, const lab_results_summary_extra *extra,
                                    cJSON **out)
{
    *out = NULL;
    cJSON *root = cJSON_CreateObject();
    if (!root) return lab_err_set(LAB_ERR_NOMEM, "summary: out of memory");
    cJSON_AddBoolToObject(root, "ok", verdict->ok);
    cJSON_AddStringToObject(root, "verdict", verdict->line);
    cJSON_AddNumberToObject(root, "exit_status", verdict->exit_status);
    cJSON_AddStringToObject(root, "backend", backend);
    cJSON_AddNumberToObject(root, "cases", (double)n_cases);
    cJSON_AddNumberToObject(root, "wall_s", wall_s);
    cJSON_AddNumberToObject(root, "cases_per_s", wall_s > 0 ? (double)n_cases / wall_s : 0);
    cJSON *rt = cJSON_AddObjectToObject(root, "rate_test");
    cJSON_AddStringToObject(rt, "test", "exact one-sided binomial: NOT OK when P(X <= detected | judged, stated rate) < alpha; "
                                        "refused when its power against 1 - 2 (1 - rate) is below power");
    cJSON_AddNumberToObject(rt, "alpha", LAB_BINOM_ALPHA);
    cJSON_AddNumberToObject(rt, "power", LAB_BINOM_POWER);
    cJSON_AddNumberToObject(rt, "drop_rate", LAB_BINOM_DROP_RATE);
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
        cJSON_AddNumberToObject(v, "case_wall_s", t[k].wall_s);
        cJSON_AddNumberToObject(v, "cpu_s", t[k].cpu_s);
        cJSON *cnt = cJSON_AddObjectToObject(v, "counts");
        for (int o = 0; o < LAB_OUT_COUNT; ++o)
            cJSON_AddNumberToObject(cnt, lab_outcome_name((lab_outcome)o), (double)t[k].counts[o]);
        if (t[k].variant->role == LAB_ROLE_BUG) {
            double lo, hi;
            lab_results_wilson(t[k].detected, t[k].judged, &lo, &hi);
            cJSON_AddNumberToObject(v, "detected", (double)t[k].detected);
            cJSON_AddNumberToObject(v, "judged", (double)t[k].judged);
            lab_results_num_or_null(v, "detect_rate", t[k].detect_rate);
            cJSON *ci = cJSON_AddArrayToObject(v, "detect_ci95");
            cJSON_AddItemToArray(ci, cJSON_CreateNumber(lo));
            cJSON_AddItemToArray(ci, cJSON_CreateNumber(hi));
            cJSON_AddNumberToObject(v, "min_detect_rate", t[k].stated_rate);
            if (t[k].stated_rate < 1) {
                lab_results_num_or_null(v, "p_value", t[k].p_value);
                lab_results_num_or_null(v, "power", t[k].power);
                if (t[k].seeds_needed) cJSON_AddNumberToObject(v, "seeds_needed", (double)t[k].seeds_needed);
            }
        }
        cJSON_AddBoolToObject(v, "ok", t[k].ok);
        cJSON_AddStringToObject(v, "verdict", t[k].verdict);
        cJSON_AddStringToObject(v, "verdict_kind", lab_verdict_kind_name(t[k].kind));
        cJSON_AddItemToArray(vars, v);
    }
    lab_status st = LAB_OK;
    if (extra && extra->signal) {
        int sig = extra->signal;
        cJSON_AddBoolToObject(root, "interrupted", 1);
        cJSON_AddStringToObject(root, "signal", sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "?");
        cJSON_AddNumberToObject(root, "cases_planned", (double)extra->cases_planned);
        st = lab_results_add_resume(root, extra->resume ? extra->resume : "");
    }
    if (st == LAB_OK && extra && extra->fields) st = extra->fields(extra->fields_ctx, root);
    if (st != LAB_OK) cJSON_Delete(root);
    else *out = root;
    return st;
}

/* What a case line says about its role: "PASS", "detected (FAIL)", "XPASS", ... */
static const char *lab_results_role_word(const lab_case_record *c)
{
    lab_outcome o = c->o.outcome;
    if (o == LAB_OUT_SKIP) return "SKIP";
    if (o == LAB_OUT_ERROR) return "ERROR";
    if (c->variant->role == LAB_ROLE_FIX) return o == LAB_OUT_PASS ? "fix holds" : "fix REGRESSED";
    if (lab_verdict_detected(c->variant, o)) return "bug detected";
    if (o == LAB_OUT_PASS && lab_verdict_stated_rate(c->variant) < 1) return "bug missed (its stated rate is judged per variant)";
    return o == LAB_OUT_PASS ? "XPASS (bug not detected)" : "INCONCLUSIVE (not the bug's own failure)";
}

/* Writes s as a YAML double-quoted scalar (TAP 13's diagnostics are YAML): quotes, backslashes and control characters
 * escaped, so a detail that holds a quote keeps the block parseable. Returns 0 when the write failed. */
static int lab_results_yaml_str(FILE *f, const char *s)
{
    int good = fputc('"', f) != EOF;
    for (const unsigned char *p = (const unsigned char *)s; good && *p; ++p) {
        if (*p == '"' || *p == '\\') good = fprintf(f, "\\%c", *p) >= 0;
        else if (*p < 0x20 || *p == 0x7f) good = fprintf(f, "\\x%02x", *p) >= 0;
        else good = fputc(*p, f) != EOF;
    }
    return good && fputc('"', f) != EOF;
}

int lab_results_tap_case(FILE *f, const lab_case_record *c, size_t number, const lab_results_cmd *cmd)
{
    int ok = lab_verdict_case_ok(c);
    char line[512];
    lab_results_spell(cmd, c, line, sizeof line);
    int good = fprintf(f, "%s %zu - %s %s seed=%llu %s: %s %s%s\n", ok == 0 ? "not ok" : "ok", number, c->incident->id,
                       c->variant->name, (unsigned long long)c->seed, lab_backend_name(c->backend),
                       lab_outcome_name(c->o.outcome), lab_results_role_word(c), ok < 0 ? " # SKIP" : "") >= 0;
    if (good && ok <= 0)
        good = fputs("  ---\n  detail: ", f) >= 0 && lab_results_yaml_str(f, c->o.r.detail) &&
               fputs("\n  error: ", f) >= 0 && lab_results_yaml_str(f, c->o.error) && fputs("\n  replay: ", f) >= 0 &&
               lab_results_yaml_str(f, line) && fputs("\n  ...\n", f) >= 0;
    return good;
}

int lab_results_tap_head(FILE *f, size_t n, size_t nt)
{
    return fprintf(f, "TAP version 13\n1..%zu\n", n + nt + 1) >= 0;
}

int lab_results_tap_tail(FILE *f, size_t n, const lab_verdict_tally *t, size_t nt, const lab_verdict *v)
{
    int good = 1;
    /* The variants' verdicts (a stated rate is judged here, not per case), then the run's. */
    for (size_t k = 0; good && k < nt; ++k)
        good = fprintf(f, "%s %zu - %s %s verdict: %s%s\n", t[k].ok ? "ok" : "not ok", n + k + 1, t[k].incident->id,
                       t[k].variant->name, t[k].verdict, t[k].kind == LAB_VERDICT_SKIPPED ? " # SKIP" : "") >= 0;
    if (good) good = fprintf(f, "%s %zu - replay verdict: %s\n", v->ok ? "ok" : "not ok", n + nt + 1, v->line) >= 0;
    return good;
}

/* Writes what an open_memstream f holds (closed here) to path atomically. */
static lab_status lab_results_flush_mem(const char *path, FILE *f, char **buf, size_t *len, int good)
{
    good &= fclose(f) == 0;
    lab_status st = good ? lab_fs_write_atomic(path, *buf, *len) : lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
    free(*buf);
    return st;
}

lab_status lab_results_write_tap(const char *path, const lab_case_record *recs, size_t n, const lab_verdict_tally *t,
                                 size_t nt, const lab_verdict *v, const lab_results_cmd *cmd)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
    int good = lab_results_tap_head(f, n, nt);
    for (size_t i = 0; good && i < n; ++i) good = lab_results_tap_case(f, &recs[i], i + 1, cmd);
    if (good) good = lab_results_tap_tail(f, n, t, nt, v);
    return lab_results_flush_mem(path, f, &buf, &len, good);
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

int lab_results_junit_case(FILE *f, const lab_case_record *c, const lab_results_cmd *cmd)
{
    /* XML escapes take up to 6 bytes a character ("&quot;"): room for the whole detail line, escaped */
    char line[512], detail[6 * LAB_DETAIL_MAX], err[6 * 240];
    lab_results_spell(cmd, c, line, sizeof line);
    lab_results_xml(c->o.r.detail, detail, sizeof detail);
    lab_results_xml(c->o.error, err, sizeof err);
    int ok = lab_verdict_case_ok(c);
    int good = fprintf(f, "  <testcase classname=\"%s.%s\" name=\"seed %llu %s\" time=\"%.3f\">", c->incident->id,
                       c->variant->name, (unsigned long long)c->seed, lab_backend_name(c->backend), c->o.wall_s) >= 0;
    if (good && ok == 0)
        good = fprintf(f, "<failure message=\"%s: %s\">%s %s&#10;replay: %s</failure>", lab_outcome_name(c->o.outcome),
                       lab_results_role_word(c), detail, err, line) >= 0;
    else if (good && ok < 0)
        good = fprintf(f, "<skipped message=\"%s\"/>", detail) >= 0;
    if (good) good = fprintf(f, "</testcase>\n") >= 0;
    return good;
}

int lab_results_junit_head(FILE *f, size_t n, size_t case_failures, size_t case_skipped, const lab_verdict_tally *t,
                           size_t nt, const lab_verdict *v)
{
    size_t failures = case_failures, skipped = case_skipped;
    for (size_t k = 0; k < nt; ++k) {
        failures += !t[k].ok;
        skipped += t[k].kind == LAB_VERDICT_SKIPPED;
    }
    failures += !v->ok;
    size_t tests = n + nt + 1;
    return fprintf(f,
                   "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                   "<testsuites name=\"lab replay\" tests=\"%zu\" failures=\"%zu\" skipped=\"%zu\">\n"
                   "<testsuite name=\"lab replay\" tests=\"%zu\" failures=\"%zu\" skipped=\"%zu\">\n",
                   tests, failures, skipped, tests, failures, skipped) >= 0;
}

int lab_results_junit_tail(FILE *f, const lab_verdict_tally *t, size_t nt, const lab_verdict *v)
{
    int good = 1;
    /* The variants' verdicts (a stated rate is judged here, not per case), then the run's. */
    for (size_t k = 0; good && k < nt; ++k) {
        char verdict[512];
        lab_results_xml(t[k].verdict, verdict, sizeof verdict);
        good = fprintf(f, "  <testcase classname=\"%s.%s\" name=\"verdict\" time=\"0\">", t[k].incident->id,
                       t[k].variant->name) >= 0;
        if (good && !t[k].ok)
            good = fprintf(f, "<failure message=\"%s: %s\">%s</failure>", lab_verdict_kind_name(t[k].kind), verdict,
                           verdict) >= 0;
        else if (good && t[k].kind == LAB_VERDICT_SKIPPED)
            good = fprintf(f, "<skipped message=\"every case skipped\"/>") >= 0;
        if (good) good = fprintf(f, "</testcase>\n") >= 0;
    }
    if (good) {
        char line[512];
        lab_results_xml(v->line, line, sizeof line);
        good = fprintf(f, "  <testcase classname=\"lab replay\" name=\"verdict\" time=\"0\">") >= 0;
        if (good && !v->ok) good = fprintf(f, "<failure message=\"%s\">%s</failure>", line, line) >= 0;
        if (good) good = fprintf(f, "</testcase>\n") >= 0;
    }
    if (good) good = fprintf(f, "</testsuite>\n</testsuites>\n") >= 0;
    return good;
}

lab_status lab_results_write_junit(const char *path, const lab_case_record *recs, size_t n,
                                   const lab_verdict_tally *t, size_t nt, const lab_verdict *v, const lab_results_cmd *cmd)
{
    size_t failures = 0, skipped = 0;
    for (size_t i = 0; i < n; ++i) {
        int ok = lab_verdict_case_ok(&recs[i]);
        failures += ok == 0;
        skipped += ok < 0;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
    int good = lab_results_junit_head(f, n, failures, skipped, t, nt, v);
    for (size_t i = 0; good && i < n; ++i) good = lab_results_junit_case(f, &recs[i], cmd);
    if (good) good = lab_results_junit_tail(f, t, nt, v);
    return lab_results_flush_mem(path, f, &buf, &len, good);
}
