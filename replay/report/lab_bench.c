/* lab_bench: the incidents' benchmarks as data: runs them (each in its own process), turns their record lines into a JSON bench section (bench.json, `lab bench --json`, report.json's "bench"), and compares two reports' bench sections for performance regressions. */
#include "lab_bench.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lab_incident.h"
#include "lab_isolate.h"
#include "lab_json.h"

static double lab_bench_num(const cJSON *o, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

static const char *lab_bench_str(const cJSON *o, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(x) ? x->valuestring : "";
}

static void lab_bench_iso(time_t t, char *buf, size_t len)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

cJSON *lab_bench_parse_line(const char *line, const char *incident, int *is_record)
{
    size_t tl = strlen(LAB_BENCH_RECORD_TAG);
    *is_record = strncmp(line, LAB_BENCH_RECORD_TAG, tl) == 0;
    if (!*is_record) return NULL;
    cJSON *r = cJSON_Parse(line + tl);
    const char *bad = NULL;
    if (!r || !cJSON_IsObject(r)) bad = "not a JSON object";
    else if (!*lab_bench_str(r, "name")) bad = "no string 'name'";
    else if (!*lab_bench_str(r, "baseline")) bad = "no string 'baseline'";
    else if (!(lab_bench_num(r, "ratio") > 0) || !isfinite(lab_bench_num(r, "ratio"))) bad = "no finite positive 'ratio'";
    if (bad) {
        cJSON_Delete(r);
        lab_err_set(LAB_ERR_FORMAT, "%s: bench record: %s", incident, bad);
        return NULL;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(r, "incident");
    cJSON_AddStringToObject(r, "incident", incident);
    double ratio = lab_bench_num(r, "ratio"), lo = lab_bench_num(r, "ratio_lo"), hi = lab_bench_num(r, "ratio_hi");
    double spread = isfinite(lo) && isfinite(hi) && hi >= lo ? (hi - lo) / (2.0 * ratio) : 0.0;
    cJSON_DeleteItemFromObjectCaseSensitive(r, "spread");
    cJSON_AddNumberToObject(r, "spread", spread);
    double target = lab_bench_num(r, "target");
    if (isfinite(target) && target > 0) {
        cJSON_DeleteItemFromObjectCaseSensitive(r, "target_met");
        cJSON_AddBoolToObject(r, "target_met", ratio <= target);
    }
    return r;
}

/* ---- running the benchmarks ------------------------------------------------------------------------ */

typedef struct {
    const lab_incident *const *incs;
    const char *tmpdir;
    int study;
} lab_bench_ctx;

/* In the child: the incident's benchmark into <tmpdir>/<job>.txt. */
static lab_status lab_bench_job(void *ctxv, size_t job, lab_case_result *r)
{
    const lab_bench_ctx *ctx = ctxv;
    char path[4096];
    snprintf(path, sizeof path, "%s/%zu.txt", ctx->tmpdir, job);
    FILE *f = fopen(path, "w");
    if (!f) return lab_err_set(LAB_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    setvbuf(f, NULL, _IOLBF, 0); /* what was printed before a crash or hang still counts */
    lab_status st = ctx->study ? ctx->incs[job]->study(f) : ctx->incs[job]->bench(f);
    fclose(f);
    if (st == LAB_ERR_UNSUPPORTED) {
        lab_result_skip(r, "%s", lab_err_msg());
        return LAB_OK;
    }
    if (st != LAB_OK) return st;
    lab_result_verdict(r, 1, "ok");
    return LAB_OK;
}

/* Reads the benchmark's output file: free lines to human, records into records; returns malformed ones. */
static int lab_bench_collect(const char *path, const char *id, FILE *human, cJSON *records, char *why, size_t len)
{
    FILE *f = fopen(path, "r");
    int bad = 0;
    if (!f) return 0;
    char line[8192];
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
        int is_record;
        cJSON *rec = lab_bench_parse_line(line, id, &is_record);
        if (rec) cJSON_AddItemToArray(records, rec);
        else if (is_record) {
            if (!bad++) snprintf(why, len, "%s", lab_err_msg());
            if (human) fprintf(human, "%s: malformed record line: %s\n", id, lab_err_msg());
        } else if (human) {
            fprintf(human, "%s\n", line);
        }
    }
    fclose(f);
    return bad;
}

lab_status lab_bench_run(const char *const *ids, size_t n_ids, FILE *human, cJSON **section, int *failed)
{
    return lab_bench_run_kind(ids, n_ids, 0, human, section, failed);
}

lab_status lab_bench_run_kind(const char *const *ids, size_t n_ids, int study, FILE *human, cJSON **section, int *failed)
{
    *section = NULL;
    *failed = 0;
    size_t n_all;
    const lab_incident *const *all = lab_incident_all(&n_all);
    for (size_t a = 0; a < n_ids; ++a)
        if (!lab_incident_find(ids[a])) return lab_err_set(LAB_ERR_ARG, "unknown incident '%s'", ids[a]);
    const lab_incident **sel = calloc(n_all ? n_all : 1, sizeof *sel);
    if (!sel) return lab_err_set(LAB_ERR_NOMEM, "bench: out of memory");
    size_t n = 0;
    for (size_t i = 0; i < n_all; ++i) {
        int chosen = n_ids == 0;
        for (size_t a = 0; a < n_ids; ++a) chosen |= lab_incident_find(ids[a]) == all[i];
        if (chosen && (study ? all[i]->study != NULL : all[i]->bench != NULL)) sel[n++] = all[i];
    }
    char tmpdir[] = "/tmp/lab-bench-XXXXXX";
    if (!mkdtemp(tmpdir)) {
        free(sel);
        return lab_err_set(LAB_ERR_IO, "bench: cannot make a temporary folder: %s", strerror(errno));
    }
    cJSON *s = cJSON_CreateObject();
    char iso[32];
    lab_bench_iso(time(NULL), iso, sizeof iso);
    cJSON_AddStringToObject(s, "schema", LAB_BENCH_SCHEMA);
    cJSON_AddStringToObject(s, "created", iso);
    cJSON_AddNumberToObject(s, "noise_floor", LAB_BENCH_NOISE_FLOOR);
    cJSON *incs = cJSON_AddArrayToObject(s, "incidents");
    cJSON *records = cJSON_AddArrayToObject(s, "records");
    lab_status st = LAB_OK;
    for (size_t j = 0; j < n && st == LAB_OK; ++j) {
        if (human) {
            fprintf(human, "== %s\n", sel[j]->id);
            fflush(human);
        }
        /* one job per call, so its output file can be numbered by the job and the others never wait */
        lab_job_outcome o;
        lab_bench_ctx one = {sel + j, tmpdir, study};
        st = lab_isolate_run(1, lab_bench_job, &one, 1, LAB_BENCH_TIMEOUT_S, NULL, &o);
        if (st != LAB_OK) break;
        char path[4096], why[512] = "";
        snprintf(path, sizeof path, "%s/0.txt", tmpdir);
        int bad = lab_bench_collect(path, sel[j]->id, human, records, why, sizeof why);
        unlink(path);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "id", sel[j]->id);
        const char *status = o.outcome == LAB_OUT_SKIP ? "skipped" : o.outcome == LAB_OUT_PASS && !bad ? "ok" : "failed";
        const char *msg = o.outcome == LAB_OUT_SKIP || o.outcome == LAB_OUT_PASS ? o.r.detail : o.error;
        if (o.outcome == LAB_OUT_PASS && bad) msg = why;
        cJSON_AddStringToObject(e, "status", status);
        cJSON_AddStringToObject(e, "message", msg);
        cJSON_AddNumberToObject(e, "wall_s", o.wall_s);
        cJSON_AddItemToArray(incs, e);
        if (!strcmp(status, "failed")) (*failed)++;
        if (human) {
            if (!strcmp(status, "skipped")) fprintf(human, "%s: bench skipped: %s\n", sel[j]->id, msg);
            else if (!strcmp(status, "failed")) fprintf(human, "%s: bench failed (%s): %s\n", sel[j]->id, lab_outcome_name(o.outcome), msg);
            fflush(human);
        }
    }
    rmdir(tmpdir);
    free(sel);
    if (st != LAB_OK) {
        cJSON_Delete(s);
        return st;
    }
#ifdef LAB_HAVE_CUDA
    if (human && n == 0) fprintf(human, "no %s among the selected incidents\n", study ? "study" : "benchmark");
#else
    /* benchmarks and studies are GPU code, absent from this build (LAB_IF_CUDA in lab_incident.h) */
    if (human && n == 0)
        fprintf(human, "no %s among the selected incidents: this build has no CUDA (nvcc missing or CUDA=0)\n",
                study ? "study" : "benchmark");
#endif
    *section = s;
    return LAB_OK;
}

lab_status lab_bench_report_step(const char *dir, int want, int replay_cuda, FILE *log, cJSON **section)
{
    *section = NULL;
    if (want == 0 || (want < 0 && !replay_cuda)) return LAB_OK;
    int failed = 0;
    if (log) fprintf(log, "benchmarks (lab bench) into %s/%s\n", dir, LAB_BENCH_FILE);
    lab_status st = lab_bench_run(NULL, 0, log, section, &failed);
    if (st != LAB_OK) return st;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, LAB_BENCH_FILE);
    return lab_json_write_file(path, *section, LAB_JSON_PRETTY);
}

lab_status lab_bench_read(const char *dir, time_t since, cJSON **section)
{
    *section = NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, LAB_BENCH_FILE);
    struct stat sb;
    if (stat(path, &sb) != 0) return LAB_OK;
    if (since && sb.st_mtime < since) return LAB_OK; /* an earlier run's: not this report's */
    cJSON *b = NULL;
    lab_status st = lab_json_read_file(path, &b);
    if (st != LAB_OK) return st;
    if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(b, "records"))) {
        cJSON_Delete(b);
        return lab_err_set(LAB_ERR_FORMAT, "%s: no array 'records'", path);
    }
    *section = b;
    return LAB_OK;
}

/* ---- comparing ------------------------------------------------------------------------------------- */

int lab_bench_judge(double ratio_a, double spread_a, double ratio_b, double spread_b, double *threshold)
{
    double sa = isfinite(spread_a) && spread_a > 0 ? spread_a : 0, sb = isfinite(spread_b) && spread_b > 0 ? spread_b : 0;
    double thr = sa + sb > LAB_BENCH_NOISE_FLOOR ? sa + sb : LAB_BENCH_NOISE_FLOOR;
    if (threshold) *threshold = thr;
    if (!(ratio_a > 0) || !(ratio_b > 0)) return 0;
    if (ratio_b / ratio_a - 1.0 > thr) return 1;
    if (ratio_a / ratio_b - 1.0 > thr) return -1;
    return 0;
}

static const cJSON *lab_bench_records(const cJSON *report, const char *label, lab_status *st)
{
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(report, "bench");
    if (!b) return NULL;
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(b, "records");
    if (!cJSON_IsObject(b) || !cJSON_IsArray(r)) {
        *st = lab_err_set(LAB_ERR_FORMAT, "report %s: 'bench' is not an object with an array 'records'", label);
        return NULL;
    }
    return r;
}

static const cJSON *lab_bench_find(const cJSON *records, const cJSON *rec)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, records)
        if (!strcmp(lab_bench_str(x, "incident"), lab_bench_str(rec, "incident")) &&
            !strcmp(lab_bench_str(x, "name"), lab_bench_str(rec, "name")) &&
            !strcmp(lab_bench_str(x, "baseline"), lab_bench_str(rec, "baseline")))
            return x;
    return NULL;
}

/* "1.234 [1.20..1.25]" */
static void lab_bench_cell(const cJSON *r, char *buf, size_t len)
{
    if (!r) {
        snprintf(buf, len, "-");
        return;
    }
    double lo = lab_bench_num(r, "ratio_lo"), hi = lab_bench_num(r, "ratio_hi");
    if (isfinite(lo) && isfinite(hi)) snprintf(buf, len, "%.3f [%.3f..%.3f]", lab_bench_num(r, "ratio"), lo, hi);
    else snprintf(buf, len, "%.3f", lab_bench_num(r, "ratio"));
}

lab_status lab_bench_compare(const cJSON *report_a, const cJSON *report_b, FILE *out, size_t *regressions)
{
    *regressions = 0;
    lab_status st = LAB_OK;
    const cJSON *ra = lab_bench_records(report_a, "A", &st), *rb = st == LAB_OK ? lab_bench_records(report_b, "B", &st) : NULL;
    if (st != LAB_OK) return st;
    if (!ra && !rb) return LAB_OK;
    if (!ra || !rb) {
        fprintf(out, "\nbenchmarks: only %s has a bench section (%d records): nothing to compare\n", ra ? "A" : "B",
                cJSON_GetArraySize(ra ? ra : rb));
        return LAB_OK;
    }
    fprintf(out, "\nbenchmarks: ratio = the fix's cost / the baseline's, lower is better; [p10..p90] over repetitions; a "
                 "regression is B/A - 1 above max(%.2f, spread A + spread B)\n", LAB_BENCH_NOISE_FLOOR);
    fprintf(out, "%-24s %-44s %-16s %-24s %-24s %7s %6s  %s\n", "incident", "measurement", "vs", "A", "B", "B/A", "thr",
            "verdict");
    size_t same = 0, better = 0, notjudged = 0, only = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, ra) {
        const cJSON *y = lab_bench_find(rb, x);
        char ca[64], cb[64], q[16] = "-", t[16] = "-";
        lab_bench_cell(x, ca, sizeof ca);
        lab_bench_cell(y, cb, sizeof cb);
        const char *verdict;
        char vbuf[96];
        if (!y) {
            verdict = "missing in B";
            only++;
        } else {
            double thr, a = lab_bench_num(x, "ratio"), b = lab_bench_num(y, "ratio");
            int k = lab_bench_judge(a, lab_bench_num(x, "spread"), b, lab_bench_num(y, "spread"), &thr);
            snprintf(q, sizeof q, "%.3f", b / a);
            snprintf(t, sizeof t, "%.0f%%", thr * 100);
            if (strcmp(lab_bench_str(x, "device"), lab_bench_str(y, "device"))) {
                snprintf(vbuf, sizeof vbuf, "not judged: devices differ (%s / %s)", lab_bench_str(x, "device"), lab_bench_str(y, "device"));
                verdict = vbuf;
                notjudged++;
            } else if (k > 0) {
                snprintf(vbuf, sizeof vbuf, "PERF REGRESSION (+%.1f%%)", (b / a - 1) * 100);
                verdict = vbuf;
                (*regressions)++;
            } else if (k < 0) {
                verdict = "faster";
                better++;
            } else {
                verdict = "same within spread";
                same++;
            }
        }
        fprintf(out, "%-24s %-44s %-16s %-24s %-24s %7s %6s  %s%s\n", lab_bench_str(x, "incident"), lab_bench_str(x, "name"),
                lab_bench_str(x, "baseline"), ca, cb, q, t, verdict,
                y && cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(y, "target_met")) ? " (B misses its target)" : "");
    }
    cJSON_ArrayForEach(x, rb) {
        if (lab_bench_find(ra, x)) continue;
        char cb[64];
        lab_bench_cell(x, cb, sizeof cb);
        fprintf(out, "%-24s %-44s %-16s %-24s %-24s %7s %6s  %s\n", lab_bench_str(x, "incident"), lab_bench_str(x, "name"),
                lab_bench_str(x, "baseline"), "-", cb, "-", "-", "new in B");
        only++;
    }
    fprintf(out, "benchmarks: %zu performance regressions, %zu faster, %zu same within spread, %zu not judged, %zu in one "
                 "report only\n", *regressions, better, same, notjudged, only);
    return LAB_OK;
}
