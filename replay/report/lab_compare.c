/* lab_compare: compares two report folders (lab report): outcomes that changed per incident and variant,
 * metrics that moved beyond a factor, incidents and variants new or missing. */
#include "lab_compare.h"
#include "lab_bench.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_isolate.h"
#include "lab_json.h"
#include "lab_report.h"
#include "lab_results.h"

int lab_compare_moved(double a, double b, double factor)
{
    if (a == b) return 0;
    if (isnan(a) || isnan(b) || isinf(a) || isinf(b)) return 1;
    if (a == 0 || b == 0) return 1;
    if ((a < 0) != (b < 0)) return 1;
    double r = fabs(b) / fabs(a);
    return r > factor || r < 1.0 / factor;
}

static const char *lab_compare_str(const cJSON *o, const char *key)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(s) ? s->valuestring : "";
}

static double lab_compare_num(const cJSON *o, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

/* Strict reading of report.json, apart from the comparison: is x a JSON integer in [lo, 2^53]? */
static int lab_compare_int_in(const cJSON *x, double lo)
{
    return cJSON_IsNumber(x) && isfinite(x->valuedouble) && x->valuedouble == floor(x->valuedouble) &&
           x->valuedouble >= lo && x->valuedouble <= 9007199254740992.0;
}

/* Validates the contents of a parsed report.json r (path for messages) beyond its shape: at least one
 * incident; per variant a role fix|bug, seeds an integer >= 1, counts only of known outcomes
 * (PASS FAIL CRASH HANG SKIP ERROR), each a non-negative integer, summing to seeds; seed_first/seed_last
 * (when present) integers >= 1; per metric n and nonfinite non-negative integers and min/median/max a
 * finite number or null (explicitly non-finite); summary.cases (when present) a non-negative integer.
 * LAB_ERR_FORMAT naming the file and the field (e.g. "incidents[0].variants[1].counts.PASS: -3 is not a
 * non-negative integer"). */
static lab_status lab_compare_validate(const cJSON *r, const char *path)
{
    char where[256];
    const cJSON *sum = cJSON_GetObjectItemCaseSensitive(r, "summary");
    const cJSON *cases = sum ? cJSON_GetObjectItemCaseSensitive(sum, "cases") : NULL;
    if (cases && !lab_compare_int_in(cases, 0))
        return lab_err_set(LAB_ERR_FORMAT, "%s: summary.cases: not a non-negative integer", path);
    const cJSON *incs = cJSON_GetObjectItemCaseSensitive(r, "incidents");
    if (cJSON_GetArraySize(incs) == 0) return lab_err_set(LAB_ERR_FORMAT, "%s: incidents: empty (an empty report)", path);
    int i = 0;
    const cJSON *inc, *v;
    cJSON_ArrayForEach(inc, incs) {
        int k = 0;
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(inc, "variants")) {
            snprintf(where, sizeof where, "incidents[%d].variants[%d]", i, k);
            const char *role = lab_compare_str(v, "role");
            if (strcmp(role, "fix") && strcmp(role, "bug"))
                return lab_err_set(LAB_ERR_FORMAT, "%s: %s.role: '%.32s' is not fix or bug", path, where, role);
            const cJSON *seeds = cJSON_GetObjectItemCaseSensitive(v, "seeds");
            if (!lab_compare_int_in(seeds, 1))
                return lab_err_set(LAB_ERR_FORMAT, "%s: %s.seeds: not an integer >= 1", path, where);
            static const char *const ends[] = {"seed_first", "seed_last"};
            for (int e = 0; e < 2; ++e) {
                const cJSON *x = cJSON_GetObjectItemCaseSensitive(v, ends[e]);
                if (x && !lab_compare_int_in(x, 1))
                    return lab_err_set(LAB_ERR_FORMAT, "%s: %s.%s: not a seed (an integer >= 1)", path, where, ends[e]);
            }
            double total = 0;
            const cJSON *c;
            cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(v, "counts")) {
                int known = 0;
                for (int o = 0; o < LAB_OUT_COUNT; ++o) known |= c->string && !strcmp(c->string, lab_outcome_name((lab_outcome)o));
                if (!known)
                    return lab_err_set(LAB_ERR_FORMAT, "%s: %s.counts.%.32s: not a known outcome", path, where,
                                       c->string ? c->string : "?");
                if (!lab_compare_int_in(c, 0))
                    return lab_err_set(LAB_ERR_FORMAT, "%s: %s.counts.%s: %.6g is not a non-negative integer", path, where,
                                       c->string, cJSON_IsNumber(c) ? c->valuedouble : NAN);
                total += c->valuedouble;
            }
            if (total != seeds->valuedouble)
                return lab_err_set(LAB_ERR_FORMAT, "%s: %s.counts: sum %.0f, but seeds %.0f", path, where, total,
                                   seeds->valuedouble);
            const cJSON *m;
            cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(v, "metrics")) {
                static const char *const ints[] = {"n", "nonfinite"}, *const vals[] = {"min", "median", "max"};
                for (int q = 0; q < 2; ++q) {
                    const cJSON *x = cJSON_GetObjectItemCaseSensitive(m, ints[q]);
                    if (x && !lab_compare_int_in(x, 0))
                        return lab_err_set(LAB_ERR_FORMAT, "%s: %s.metrics.%.48s.%s: not a non-negative integer", path,
                                           where, m->string, ints[q]);
                }
                for (int q = 0; q < 3; ++q) {
                    const cJSON *x = cJSON_GetObjectItemCaseSensitive(m, vals[q]);
                    if (x && !cJSON_IsNull(x) && !(cJSON_IsNumber(x) && isfinite(x->valuedouble)))
                        return lab_err_set(LAB_ERR_FORMAT,
                                           "%s: %s.metrics.%.48s.%s: neither a finite number nor null (non-finite)", path,
                                           where, m->string, vals[q]);
                }
            }
            k++;
        }
        i++;
    }
    return LAB_OK;
}

/* Loads dir/report.json and checks the fields the comparison reads; errors name the file and field. */
static lab_status lab_compare_load(const char *dir, cJSON **out)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/report.json", dir);
    cJSON *r;
    lab_status st = lab_json_read_file(path, &r);
    if (st != LAB_OK) return st;
    const char *bad = NULL;
    char where[128] = "";
    const char *schema = lab_compare_str(r, "schema");
    const cJSON *incs = cJSON_GetObjectItemCaseSensitive(r, "incidents");
    if (strcmp(schema, LAB_REPORT_SCHEMA)) bad = "'schema' is not \"" LAB_REPORT_SCHEMA "\" (not a lab report?)";
    else if (!cJSON_IsArray(incs)) bad = "no array 'incidents'";
    int i = 0;
    const cJSON *inc;
    cJSON_ArrayForEach(inc, (bad ? NULL : incs)) {
        const cJSON *vars = cJSON_GetObjectItemCaseSensitive(inc, "variants"), *v;
        if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(inc, "id"))) bad = "no string 'id'";
        else if (!cJSON_IsArray(vars)) bad = "no array 'variants'";
        snprintf(where, sizeof where, "incidents[%d]: ", i);
        int k = 0;
        cJSON_ArrayForEach(v, (bad ? NULL : vars)) {
            snprintf(where, sizeof where, "incidents[%d].variants[%d]: ", i, k);
            if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(v, "name"))) bad = "no string 'name'";
            else if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(v, "role"))) bad = "no string 'role'";
            else if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(v, "seeds"))) bad = "no number 'seeds'";
            else if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(v, "counts"))) bad = "no object 'counts'";
            if (bad) break;
            k++;
        }
        if (bad) break;
        i++;
    }
    if (bad) {
        cJSON_Delete(r);
        return lab_err_set(LAB_ERR_FORMAT, "%s: %s%s", path, where, bad);
    }
    if ((st = lab_compare_validate(r, path)) != LAB_OK) {
        cJSON_Delete(r);
        return st;
    }
    *out = r;
    return LAB_OK;
}

static const cJSON *lab_compare_find(const cJSON *arr, const char *key, const char *name)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, arr)
        if (!strcmp(lab_compare_str(x, key), name)) return x;
    return NULL;
}

/* A variant's outcomes in numbers. */
typedef struct {
    int is_bug;
    double counts[LAB_OUT_COUNT];
    double seeds, ran, judged, good; /* good: PASS for a fix, FAIL+CRASH+HANG for a bug */
    double rate, lo, hi;             /* good / ran (fix) or good / judged (bug); Wilson 95% interval */
    int ok;
    int stochastic;                  /* a bug with a stated detection rate below 1 */
} lab_compare_state;

static void lab_compare_state_of(const cJSON *v, lab_compare_state *s)
{
    memset(s, 0, sizeof *s);
    s->is_bug = !strcmp(lab_compare_str(v, "role"), "bug");
    const cJSON *counts = cJSON_GetObjectItemCaseSensitive(v, "counts");
    for (int k = 0; k < LAB_OUT_COUNT; ++k) {
        double c = lab_compare_num(counts, lab_outcome_name((lab_outcome)k));
        s->counts[k] = isfinite(c) && c > 0 ? c : 0;
    }
    s->seeds = lab_compare_num(v, "seeds");
    s->ran = s->seeds - s->counts[LAB_OUT_SKIP];
    s->judged = s->ran - s->counts[LAB_OUT_ERROR];
    s->good = s->is_bug ? s->counts[LAB_OUT_FAIL] + s->counts[LAB_OUT_CRASH] + s->counts[LAB_OUT_HANG]
                        : s->counts[LAB_OUT_PASS];
    double denom = s->is_bug ? s->judged : s->ran;
    s->rate = denom > 0 ? s->good / denom : NAN;
    lab_results_wilson((size_t)s->good, denom > 0 ? (size_t)denom : 0, &s->lo, &s->hi);
    s->ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "ok"));
    double want = lab_compare_num(v, "min_detect_rate");
    s->stochastic = s->is_bug && isfinite(want) && want > 0 && want < 1;
}

/* "PASS 250 FAIL 6 of 256" style: the non-zero counts. */
static void lab_compare_cell(const lab_compare_state *s, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int k = 0; k < LAB_OUT_COUNT && n < len; ++k)
        if (s->counts[k] > 0)
            n += (size_t)snprintf(buf + n, len - n, "%s%s %.0f", n ? " " : "", lab_outcome_name((lab_outcome)k), s->counts[k]);
    if (n < len) snprintf(buf + n, len - n, "%sof %.0f", n ? " " : "", s->seeds);
}

typedef enum { LAB_CMP_SAME, LAB_CMP_CHANGED, LAB_CMP_IMPROVED, LAB_CMP_REGRESSED } lab_compare_kind;

/* Judges one variant present in both reports; why receives the reason. */
static lab_compare_kind lab_compare_judge(const lab_compare_state *a, const lab_compare_state *b, char *why, size_t len)
{
    const char *what = b->is_bug ? "detected" : "PASS";
    int counts_same = 1;
    for (int k = 0; k < LAB_OUT_COUNT; ++k) counts_same &= a->counts[k] == b->counts[k];
    if (a->is_bug != b->is_bug) {
        snprintf(why, len, "role changed from %s to %s", a->is_bug ? "bug" : "fix", b->is_bug ? "bug" : "fix");
        return LAB_CMP_CHANGED;
    }
    if (a->ran > 0 && b->ran == 0) {
        snprintf(why, len, "now skipped on every seed (no longer runs)");
        return LAB_CMP_CHANGED;
    }
    if (a->ran == 0 && b->ran > 0) {
        if (!b->ok) {
            snprintf(why, len, "now runs and misses its role");
            return LAB_CMP_REGRESSED;
        }
        snprintf(why, len, "now runs (was skipped)");
        return LAB_CMP_CHANGED;
    }
    if (a->ran == 0 && b->ran == 0) {
        snprintf(why, len, "skipped in both");
        return counts_same ? LAB_CMP_SAME : LAB_CMP_CHANGED;
    }
    if (a->ok && !b->ok) {
        snprintf(why, len, "met its role, no longer does (%s rate %.3f -> %.3f)", what, a->rate, b->rate);
        return LAB_CMP_REGRESSED;
    }
    int a_nan = isnan(a->rate), b_nan = isnan(b->rate);
    if (!a_nan && !b_nan && b->rate < a->rate) {
        /* Deterministic roles: any drop. A stated (stochastic) detection rate: a drop beyond noise, the
         * two Wilson 95% intervals apart. */
        if (!b->stochastic || b->hi < a->lo) {
            snprintf(why, len, "%s rate fell %.3f -> %.3f", what, a->rate, b->rate);
            return LAB_CMP_REGRESSED;
        }
        snprintf(why, len, "%s rate %.3f -> %.3f, within noise (95%% CIs overlap)", what, a->rate, b->rate);
        return LAB_CMP_CHANGED;
    }
    if (!a->ok && b->ok) {
        snprintf(why, len, "now meets its role (%s rate %.3f -> %.3f)", what, a->rate, b->rate);
        return LAB_CMP_IMPROVED;
    }
    if (!a_nan && !b_nan && b->rate > a->rate && (!b->stochastic || b->lo > a->hi)) {
        snprintf(why, len, "%s rate rose %.3f -> %.3f", what, a->rate, b->rate);
        return LAB_CMP_IMPROVED;
    }
    if (!counts_same) {
        int same_mix = 1; /* same counts up to the number of seeds? */
        for (int k = 0; k < LAB_OUT_COUNT; ++k)
            same_mix &= (a->counts[k] > 0) == (b->counts[k] > 0) && fabs(a->counts[k] / a->seeds - b->counts[k] / b->seeds) < 1e-12;
        if (same_mix) {
            snprintf(why, len, "same outcomes, %.0f -> %.0f seeds", a->seeds, b->seeds);
            return LAB_CMP_SAME;
        }
        snprintf(why, len, "outcome mix changed (%s rate %.3f -> %.3f)", what, a->rate, b->rate);
        return LAB_CMP_CHANGED;
    }
    snprintf(why, len, "same");
    return LAB_CMP_SAME;
}

static const char *const lab_compare_kind_name[] = {"same", "changed", "improved", "REGRESSED"};

/* One line naming a report: backend, device, commit, cases. */
static void lab_compare_describe(FILE *out, const char *label, const char *dir, const cJSON *r)
{
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(r, "device");
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(dev, "gpu");
    const cJSON *host = cJSON_GetObjectItemCaseSensitive(dev, "host");
    const cJSON *sum = cJSON_GetObjectItemCaseSensitive(r, "summary");
    const cJSON *build = cJSON_GetObjectItemCaseSensitive(r, "build");
    const char *name = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(gpu, "available")) ? lab_compare_str(gpu, "name")
                       : gpu                                                              ? "no usable GPU"
                       : *lab_compare_str(host, "cpu_model")                              ? lab_compare_str(host, "cpu_model")
                                                                                        : "device not recorded";
    const char *commit = lab_compare_str(build, "commit");
    fprintf(out, "%s: %s: backend %s on %s, commit %.12s%s, %.0f cases, created %s\n", label, dir,
            *lab_compare_str(sum, "backend") ? lab_compare_str(sum, "backend") : "?", name, *commit ? commit : "?",
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(build, "dirty")) ? " (dirty)" : "",
            isfinite(lab_compare_num(sum, "cases")) ? lab_compare_num(sum, "cases") : 0.0,
            *lab_compare_str(r, "created") ? lab_compare_str(r, "created") : "?");
}

/* "runs" of a report's GPU code (device.gpu.code: native, jit or none), "" where not recorded (a CPU report, a report
 * made before the lab recorded it). */
static const char *lab_compare_code(const cJSON *r, const char *key)
{
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "device"), "gpu");
    return lab_compare_str(cJSON_GetObjectItemCaseSensitive(gpu, "code"), key);
}

/* Warnings about what the two reports ran, before the table: GPU code JIT-compiled on one side and native on the other,
 * other CUDA toolkits, and other kernels or incidents (build.sources_digest, the digest of kernels/ and incidents/):
 * the older report no longer measures what the newer one does (a baseline to remake). Returns how many. */
static int lab_compare_warn_builds(FILE *out, const cJSON *ra, const cJSON *rb)
{
    int n = 0;
    const char *ca = lab_compare_code(ra, "runs"), *cb = lab_compare_code(rb, "runs");
    if (*ca && *cb && strcmp(ca, cb)) {
        fprintf(out, "warning: A's GPU ran %s code (%s), B's %s code (%s): the same kernels compiled apart (by nvcc, or by "
                     "the driver's JIT from PTX); timings differ and results may differ in the last bits\n",
                ca, *lab_compare_code(ra, "from") ? lab_compare_code(ra, "from") : "?", cb,
                *lab_compare_code(rb, "from") ? lab_compare_code(rb, "from") : "?");
        n++;
    }
    const cJSON *ba = cJSON_GetObjectItemCaseSensitive(ra, "build"), *bb = cJSON_GetObjectItemCaseSensitive(rb, "build");
    const char *ta = lab_compare_str(ba, "nvcc_version"), *tb = lab_compare_str(bb, "nvcc_version");
    if (*ta && *tb && strcmp(ta, tb)) {
        fprintf(out, "warning: built by different CUDA toolkits: A '%s', B '%s'\n", ta, tb);
        n++;
    }
    const char *da = lab_compare_str(ba, "sources_digest"), *db = lab_compare_str(bb, "sources_digest");
    const char *wa = lab_compare_str(ra, "created"), *wb = lab_compare_str(rb, "created");
    int a_older = strcmp(wa, wb) <= 0; /* ISO 8601 UTC: the string order is the time order */
    if (*da && *db && strcmp(da, "unknown") && strcmp(db, "unknown") && strcmp(da, db)) {
        fprintf(out, "warning: the kernels or incidents changed between the reports (sources digest A %s at commit %.12s, B "
                     "%s at commit %.12s): %s, made %s, measures other kernels than %s does; remake it (make baselines)\n",
                da, lab_compare_str(ba, "commit"), db, lab_compare_str(bb, "commit"), a_older ? "A" : "B", a_older ? wa : wb,
                a_older ? "B" : "A");
        n++;
    } else if (!*da != !*db) {
        const char *which = *da ? "B" : "A";
        const cJSON *bw = *da ? bb : ba;
        fprintf(out, "warning: %s records no digest of the kernels' and incidents' sources (made by commit %.12s, before the "
                     "lab recorded one): it may measure other kernels than %s; remake it (make baselines)\n",
                which, lab_compare_str(bw, "commit"), *da ? "A" : "B");
        n++;
    }
    return n;
}

/* Prints and counts the metric statistics of one variant that moved beyond the factor. */
static void lab_compare_metrics(FILE *out, const char *inc, const char *var, const cJSON *va, const cJSON *vb,
                                double factor, lab_compare_result *res, int *header)
{
    const cJSON *ma = cJSON_GetObjectItemCaseSensitive(va, "metrics");
    const cJSON *mb = cJSON_GetObjectItemCaseSensitive(vb, "metrics");
    const cJSON *m;
    cJSON_ArrayForEach(m, ma) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(mb, m->string);
        if (!n) continue;
        static const char *const stats[] = {"median", "max", "nonfinite"};
        for (int k = 0; k < 3; ++k) {
            double a = lab_compare_num(m, stats[k]), b = lab_compare_num(n, stats[k]);
            int moved;
            char ratio[32];
            if (k == 2) {
                /* Non-finite values appearing or vanishing is a move whatever the factor. */
                if (isnan(a) || isnan(b)) continue;
                moved = (a == 0) != (b == 0);
                snprintf(ratio, sizeof ratio, "%s", b > 0 ? "appeared" : "vanished");
            } else {
                if (isnan(a) && isnan(b)) continue;
                moved = lab_compare_moved(a, b, factor);
                if (a != 0 && b != 0 && isfinite(a) && isfinite(b)) snprintf(ratio, sizeof ratio, "x%.3g", b / a);
                else snprintf(ratio, sizeof ratio, "-");
            }
            if (!moved) continue;
            if (!*header) {
                fprintf(out, "\nmetrics that moved beyond %gx (median, max over seeds; non-finite count):\n", factor);
                fprintf(out, "%-28s %-18s %-24s %-9s %13s %13s  %s\n", "incident", "variant", "metric", "stat", "A", "B",
                        "B/A");
                *header = 1;
            }
            fprintf(out, "%-28s %-18s %-24s %-9s %13.6g %13.6g  %s\n", inc, var, m->string, stats[k], a, b, ratio);
            res->moves++;
        }
    }
}

lab_status lab_compare_reports(const char *dir_a, const char *dir_b, const lab_compare_opts *o, FILE *out,
                               lab_compare_result *res)
{
    memset(res, 0, sizeof *res);
    if (!(o->factor > 1) || !isfinite(o->factor))
        return lab_err_set(LAB_ERR_ARG, "--factor must be a finite number above 1, got %g", o->factor);
    cJSON *ra = NULL, *rb = NULL;
    lab_status st = lab_compare_load(dir_a, &ra);
    if (st == LAB_OK) st = lab_compare_load(dir_b, &rb);
    if (st != LAB_OK) {
        cJSON_Delete(ra);
        return st;
    }
    lab_compare_describe(out, "A", dir_a, ra);
    lab_compare_describe(out, "B", dir_b, rb);
    lab_compare_warn_builds(out, ra, rb);
    const cJSON *ia = cJSON_GetObjectItemCaseSensitive(ra, "incidents");
    const cJSON *ib = cJSON_GetObjectItemCaseSensitive(rb, "incidents");

    fprintf(out, "\n%-28s %-18s %-4s %-30s %-30s %-9s %s\n", "incident", "variant", "role", "A", "B", "change", "why");
    const cJSON *inc, *v;
    int seeds_differ = 0;
    cJSON_ArrayForEach(inc, ia) {
        const char *id = lab_compare_str(inc, "id");
        const cJSON *incb = lab_compare_find(ib, "id", id);
        if (!incb) continue;
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(inc, "variants")) {
            const char *name = lab_compare_str(v, "name");
            const cJSON *vb = lab_compare_find(cJSON_GetObjectItemCaseSensitive(incb, "variants"), "name", name);
            if (!vb) continue;
            lab_compare_state sa, sb;
            lab_compare_state_of(v, &sa);
            lab_compare_state_of(vb, &sb);
            seeds_differ |= sa.seeds != sb.seeds || lab_compare_num(v, "seed_first") != lab_compare_num(vb, "seed_first");
            char ca[64], cb[64], why[160];
            lab_compare_cell(&sa, ca, sizeof ca);
            lab_compare_cell(&sb, cb, sizeof cb);
            lab_compare_kind k = lab_compare_judge(&sa, &sb, why, sizeof why);
            res->rows++;
            res->regressions += k == LAB_CMP_REGRESSED;
            res->improvements += k == LAB_CMP_IMPROVED;
            res->changes += k == LAB_CMP_CHANGED;
            fprintf(out, "%-28s %-18s %-4s %-30s %-30s %-9s %s\n", id, name, lab_compare_str(vb, "role"), ca, cb,
                    lab_compare_kind_name[k], why);
        }
    }
    if (seeds_differ)
        fprintf(out, "note: the reports ran different seeds: rates are shares of each report's own seeds, and a max "
                     "over more seeds tends to be larger\n");

    /* Metric statistics. */
    int header = 0;
    cJSON_ArrayForEach(inc, ia) {
        const cJSON *incb = lab_compare_find(ib, "id", lab_compare_str(inc, "id"));
        if (!incb) continue;
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(inc, "variants")) {
            const cJSON *vb = lab_compare_find(cJSON_GetObjectItemCaseSensitive(incb, "variants"), "name",
                                               lab_compare_str(v, "name"));
            if (vb)
                lab_compare_metrics(out, lab_compare_str(inc, "id"), lab_compare_str(v, "name"), v, vb, o->factor, res,
                                    &header);
        }
    }

    /* New and missing incidents and variants. */
    int shown = 0;
    for (int pass = 0; pass < 2; ++pass) {
        const cJSON *from = pass == 0 ? ia : ib, *to = pass == 0 ? ib : ia;
        const char *word = pass == 0 ? "missing in B" : "new in B";
        cJSON_ArrayForEach(inc, from) {
            const char *id = lab_compare_str(inc, "id");
            const cJSON *other = lab_compare_find(to, "id", id);
            if (!other) {
                if (!shown++) fprintf(out, "\n");
                fprintf(out, "incident %s: %s\n", id, word);
                *(pass == 0 ? &res->missing : &res->added) += 1;
                continue;
            }
            cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(inc, "variants")) {
                const char *name = lab_compare_str(v, "name");
                if (lab_compare_find(cJSON_GetObjectItemCaseSensitive(other, "variants"), "name", name)) continue;
                if (!shown++) fprintf(out, "\n");
                fprintf(out, "variant %s/%s: %s\n", id, name, word);
                *(pass == 0 ? &res->missing : &res->added) += 1;
            }
        }
    }

    size_t perf_reg = 0; /* benchmarks: a fix whose ratio got worse beyond its spread is a regression */
    if ((st = lab_bench_compare(ra, rb, out, &perf_reg)) != LAB_OK) fprintf(out, "benchmarks not compared: %s\n", lab_err_msg());
    res->regressions += perf_reg;
    res->failed = res->regressions > 0 || (o->strict && (res->moves > 0 || res->missing > 0));
    fprintf(out,
            "\ncompare: %zu variants in both: %zu regressed, %zu improved, %zu changed; %zu metric statistics moved beyond %gx; "
            "%zu new, %zu missing: %s\n",
            res->rows, res->regressions, res->improvements, res->changes, res->moves, o->factor, res->added, res->missing,
            res->failed ? (res->regressions ? "REGRESSED" : "FAILED (--strict)") : "no regression");
    cJSON_Delete(ra);
    cJSON_Delete(rb);
    return LAB_OK;
}
