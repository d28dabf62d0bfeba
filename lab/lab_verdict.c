/* lab_verdict: the one verdict of a replay: each case against its role, each variant's tally and judgement, and the run's ok, console words and exit status, decided in one place. */
#include "lab_verdict.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_binom.h"

int lab_verdict_detected(const lab_variant *v, lab_outcome o)
{
    unsigned mask = v->detect ? v->detect : LAB_DETECT_FAIL;
    return (o == LAB_OUT_FAIL && (mask & LAB_DETECT_FAIL)) || (o == LAB_OUT_CRASH && (mask & LAB_DETECT_CRASH)) ||
           (o == LAB_OUT_HANG && (mask & LAB_DETECT_HANG));
}

double lab_verdict_stated_rate(const lab_variant *v)
{
    double r = v->min_detect_rate;
    return r > 0 && r < 1 ? r : 1.0;
}

/* The rate a case of a bug is judged against: under the compute-sanitizer tool the variant names, the tool's
 * finding detects it, on every seed (lab_sanitize marks such a case "sanitizer_expected" 1); else its
 * stated rate. */
static double lab_verdict_case_rate(const lab_case_record *c)
{
    return lab_result_get(&c->o.r, "sanitizer_expected") == 1.0 ? 1.0 : lab_verdict_stated_rate(c->variant);
}

int lab_verdict_case_ok(const lab_case_record *c)
{
    lab_outcome o = c->o.outcome;
    if (o == LAB_OUT_SKIP) return lab_skip_expected((lab_skip_class)c->o.r.skip_class) ? -1 : 0;
    if (o == LAB_OUT_ERROR) return 0;
    if (c->variant->role == LAB_ROLE_FIX) return o == LAB_OUT_PASS;
    if (lab_verdict_detected(c->variant, o)) return 1;
    /* A bug with a stated detection rate below 1 may pass on some seeds; its tally judges the rate. Any
     * other outcome than its own failure is inconclusive (a NaN bug killed by the watchdog proves nothing). */
    if (o == LAB_OUT_PASS && lab_verdict_case_rate(c) < 1) return 1;
    return 0;
}

const char *lab_verdict_kind_name(lab_verdict_kind k)
{
    switch (k) {
    case LAB_VERDICT_OK: return "ok";
    case LAB_VERDICT_SKIPPED: return "skipped";
    case LAB_VERDICT_REGRESSED: return "regressed";
    case LAB_VERDICT_XPASS: return "xpass";
    case LAB_VERDICT_RATE_BELOW: return "rate-below";
    case LAB_VERDICT_TOO_FEW_SEEDS: return "too-few-seeds";
    case LAB_VERDICT_INCONCLUSIVE: return "inconclusive";
    case LAB_VERDICT_ERROR: return "error";
    case LAB_VERDICT_SKIP_MISSING: return "skip-missing";
    case LAB_VERDICT_KIND_COUNT: break;
    }
    return "?";
}

/* Sets a variant's judgement (a later, graver finding replaces an earlier one). */
static void lab_verdict_set(lab_verdict_tally *t, lab_verdict_kind k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void lab_verdict_set(lab_verdict_tally *t, lab_verdict_kind k, const char *fmt, ...)
{
    t->kind = k;
    t->ok = k == LAB_VERDICT_OK || k == LAB_VERDICT_SKIPPED;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->verdict, sizeof t->verdict, fmt, ap);
    va_end(ap);
}

/* A bug with a stated rate r < 1: the exact one-sided binomial test, then its power. */
static void lab_verdict_judge_rate(lab_verdict_tally *t, double r)
{
    size_t n = t->judged, x = t->detected;
    double alt = lab_binom_doubled_misses(r);
    t->p_value = lab_binom_cdf(x, n, r);
    t->power = lab_binom_power(n, r, alt, LAB_BINOM_ALPHA);
    if (n > 0 && t->p_value < LAB_BINOM_ALPHA) {
        lab_verdict_set(t, LAB_VERDICT_RATE_BELOW,
                        "RATE BELOW: detected on %zu of %zu seeds, below the stated %.3g (one-sided binomial p = %.2g < %.2g)",
                        x, n, r, t->p_value, LAB_BINOM_ALPHA);
    } else if (t->power < LAB_BINOM_POWER) {
        t->seeds_needed = lab_binom_seeds_needed(r, LAB_BINOM_ALPHA, LAB_BINOM_POWER, n + 1);
        lab_verdict_set(t, LAB_VERDICT_TOO_FEW_SEEDS,
                        "TOO FEW SEEDS: %zu of %zu detected, but %zu seeds see the stated %.3g fall to %.3g with power "
                        "%.2f < %.2g; needs %zu seeds",
                        x, n, n, r, alt, t->power, LAB_BINOM_POWER, t->seeds_needed);
    } else {
        lab_verdict_set(t, LAB_VERDICT_OK, "ok: %zu of %zu detected, stated %.3g (p = %.2g, power %.2f)", x, n, r,
                        t->p_value, t->power);
    }
}

static void lab_verdict_judge(lab_verdict_tally *t)
{
    size_t ran = t->seeds - t->counts[LAB_OUT_SKIP];
    size_t errors = t->counts[LAB_OUT_ERROR];
    t->judged = ran - errors - t->inconclusive;
    t->detect_rate = t->judged ? (double)t->detected / (double)t->judged : NAN;
    /* A bug's rate: its stated one, or 1 where every case ran under the tool that names it (tally_records). */
    t->stated_rate = t->variant->role == LAB_ROLE_BUG ? (t->stated_rate <= 1 ? t->stated_rate : 1.0) : NAN;
    t->p_value = t->power = NAN;
    t->seeds_needed = 0;
    lab_verdict_set(t, LAB_VERDICT_OK, "ok");
    if (t->variant->role == LAB_ROLE_FIX) {
        size_t bad = ran - t->counts[LAB_OUT_PASS];
        if (bad) lab_verdict_set(t, LAB_VERDICT_REGRESSED, "REGRESSED: %zu of %zu seeds not PASS", bad, ran);
    } else if (t->stated_rate >= 1) {
        size_t xpass = t->counts[LAB_OUT_PASS];
        if (xpass) lab_verdict_set(t, LAB_VERDICT_XPASS, "XPASS on %zu of %zu seeds", xpass, ran);
    } else if (t->judged > 0 || ran > 0) {
        lab_verdict_judge_rate(t, t->stated_rate);
    }
    if (t->inconclusive)
        lab_verdict_set(t, LAB_VERDICT_INCONCLUSIVE, "INCONCLUSIVE on %zu of %zu seeds (not its own failure)",
                        t->inconclusive, ran);
    if (errors) lab_verdict_set(t, LAB_VERDICT_ERROR, "ERROR on %zu of %zu seeds", errors, t->seeds);
    if (t->skip_missing)
        lab_verdict_set(t, LAB_VERDICT_SKIP_MISSING, "SKIP (not built / dependency missing) on %zu of %zu seeds",
                        t->skip_missing, t->seeds);
    if (t->ok && ran == 0) lab_verdict_set(t, LAB_VERDICT_SKIPPED, "skipped");
}

/* Counts one record into tally t (the per-case half of tally_records). */
static void lab_verdict_count(lab_verdict_tally *t, const lab_case_record *rec)
{
    lab_outcome o = rec->o.outcome;
    if (!t->seeds) t->stated_rate = 2; /* not yet known: the lowest of its cases' rates */
    double cr = rec->variant->role == LAB_ROLE_BUG ? lab_verdict_case_rate(rec) : NAN;
    if (cr < t->stated_rate) t->stated_rate = cr;
    t->seeds++;
    t->counts[o]++;
    if (isfinite(rec->o.wall_s)) t->wall_s += rec->o.wall_s;
    if (isfinite(rec->o.cpu_s)) t->cpu_s += rec->o.cpu_s;
    if (rec->variant->role == LAB_ROLE_BUG) {
        if (lab_verdict_detected(rec->variant, o)) t->detected++;
        else if (o == LAB_OUT_FAIL || o == LAB_OUT_CRASH || o == LAB_OUT_HANG) t->inconclusive++;
    }
    if (o == LAB_OUT_SKIP && !lab_skip_expected((lab_skip_class)rec->o.r.skip_class)) t->skip_missing++;
    int ok = lab_verdict_case_ok(rec);
    t->cases_not_ok += ok == 0;
    t->cases_neutral += ok < 0;
}

lab_status lab_verdict_tally_records(const lab_case_record *recs, size_t n, lab_verdict_tally **tallies,
                                     size_t *n_tallies)
{
    lab_verdict_tally *t = calloc(n ? n : 1, sizeof *t);
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
        lab_verdict_count(&t[k], &recs[i]);
    }
    for (size_t k = 0; k < nt; ++k) lab_verdict_judge(&t[k]);
    *tallies = t;
    *n_tallies = nt;
    return LAB_OK;
}

lab_status lab_verdict_tally_add(lab_verdict_tally **tallies, size_t *n_tallies, size_t *cap,
                                 const lab_case_record *rec, size_t *index)
{
    lab_verdict_tally *t = *tallies;
    size_t nt = *n_tallies, k = 0;
    while (k < nt && !(t[k].incident == rec->incident && t[k].variant == rec->variant)) ++k;
    if (k == nt) {
        if (nt == *cap) {
            size_t nc = *cap ? 2 * *cap : 8;
            lab_verdict_tally *g = realloc(t, nc * sizeof *g);
            if (!g) return lab_err_set(LAB_ERR_NOMEM, "tally: out of memory");
            t = *tallies = g;
            *cap = nc;
        }
        memset(&t[nt], 0, sizeof t[nt]);
        t[nt].incident = rec->incident;
        t[nt].variant = rec->variant;
        *n_tallies = ++nt;
    }
    lab_verdict_count(&t[k], rec);
    if (index) *index = k;
    return LAB_OK;
}

void lab_verdict_tally_judge(lab_verdict_tally *t, size_t nt)
{
    for (size_t k = 0; k < nt; ++k) lab_verdict_judge(&t[k]);
}

/* Appends "<count> <what>" to the NOT OK line. */
static void lab_verdict_add(char *buf, size_t len, int *first, size_t count, const char *one, const char *many)
{
    if (!count) return;
    size_t k = strlen(buf);
    if (k + 1 >= len) return;
    snprintf(buf + k, len - k, "%s%zu %s", *first ? ": " : ", ", count, count == 1 ? one : many);
    *first = 0;
}

/* The run's verdict from its counts (decide and decide_tallies). */
static lab_verdict lab_verdict_decide_counts(lab_verdict v, const lab_verdict_run *run);

lab_verdict lab_verdict_decide(const lab_verdict_tally *t, size_t nt, const lab_case_record *recs, size_t n,
                               const lab_verdict_run *run)
{
    lab_verdict v;
    memset(&v, 0, sizeof v);
    v.cases = n;
    v.variants = nt;
    for (size_t k = 0; k < nt; ++k) {
        v.kinds[t[k].kind < LAB_VERDICT_KIND_COUNT ? t[k].kind : LAB_VERDICT_ERROR]++;
        v.variants_not_ok += !t[k].ok;
    }
    for (size_t i = 0; i < n; ++i) {
        v.skipped += recs[i].o.outcome == LAB_OUT_SKIP;
        if (lab_verdict_case_ok(&recs[i]) != 0) continue;
        v.cases_not_ok++;
        int variant_ok = 0;
        for (size_t k = 0; k < nt; ++k)
            if (t[k].incident == recs[i].incident && t[k].variant == recs[i].variant) variant_ok = t[k].ok;
        v.mismatch |= variant_ok;
    }
    return lab_verdict_decide_counts(v, run);
}

lab_verdict lab_verdict_decide_tallies(const lab_verdict_tally *t, size_t nt, const lab_verdict_run *run)
{
    lab_verdict v;
    memset(&v, 0, sizeof v);
    v.variants = nt;
    for (size_t k = 0; k < nt; ++k) {
        v.kinds[t[k].kind < LAB_VERDICT_KIND_COUNT ? t[k].kind : LAB_VERDICT_ERROR]++;
        v.variants_not_ok += !t[k].ok;
        v.cases += t[k].seeds;
        v.skipped += t[k].counts[LAB_OUT_SKIP];
        v.cases_not_ok += t[k].cases_not_ok;
        v.mismatch |= t[k].ok && t[k].cases_not_ok > 0;
    }
    return lab_verdict_decide_counts(v, run);
}

static lab_verdict lab_verdict_decide_counts(lab_verdict v, const lab_verdict_run *run)
{
    lab_verdict_run whole = {0, 0, 0, 0};
    if (!run) run = &whole;
    size_t n = v.cases;
    size_t planned = run->cases_planned ? run->cases_planned : n;
    int whole_run = !run->harness_failed && !run->ranks_failed && !run->interrupted && n == planned;
    v.ok = whole_run && v.variants_not_ok == 0 && v.cases_not_ok == 0 && !v.mismatch;
    if (run->harness_failed) v.exit_status = LAB_EXIT_FAILED;
    else if (run->interrupted) v.exit_status = LAB_EXIT_SIGNAL + run->interrupted;
    else v.exit_status = v.ok ? LAB_EXIT_OK : LAB_EXIT_NOT_OK;

    if (v.ok) {
        snprintf(v.line, sizeof v.line, "%s",
                 n > 0 && v.skipped == n ? "nothing ran, every case was skipped"
                 : v.skipped             ? "every fix holds and every bug is detected (some cases skipped)"
                                         : "every fix holds and every bug is detected");
        return v;
    }
    int first = 1;
    snprintf(v.line, sizeof v.line, "NOT OK");
    lab_verdict_add(v.line, sizeof v.line, &first, v.kinds[LAB_VERDICT_REGRESSED], "fix regressed", "fixes regressed");
    lab_verdict_add(v.line, sizeof v.line, &first, v.kinds[LAB_VERDICT_XPASS], "bug not detected (XPASS)",
                    "bugs not detected (XPASS)");
    lab_verdict_add(v.line, sizeof v.line, &first, v.kinds[LAB_VERDICT_RATE_BELOW], "bug below its stated rate",
                    "bugs below their stated rates");
    lab_verdict_add(v.line, sizeof v.line, &first, v.kinds[LAB_VERDICT_TOO_FEW_SEEDS],
                    "verdict refused (too few seeds for its stated rate)", "verdicts refused (too few seeds for their stated rates)");
    lab_verdict_add(v.line, sizeof v.line, &first, v.kinds[LAB_VERDICT_INCONCLUSIVE], "bug inconclusive",
                    "bugs inconclusive");
    lab_verdict_add(v.line, sizeof v.line, &first, v.kinds[LAB_VERDICT_ERROR], "variant with ERROR cases",
                    "variants with ERROR cases");
    lab_verdict_add(v.line, sizeof v.line, &first, v.kinds[LAB_VERDICT_SKIP_MISSING],
                    "variant skipped for something missing", "variants skipped for something missing");
    lab_verdict_add(v.line, sizeof v.line, &first, (size_t)(run->harness_failed != 0), "harness failure",
                    "harness failures");
    lab_verdict_add(v.line, sizeof v.line, &first, (size_t)(run->ranks_failed != 0), "MPI rank failed",
                    "MPI ranks failed");
    lab_verdict_add(v.line, sizeof v.line, &first, planned > n ? planned - n : 0, "case not finished",
                    "cases not finished");
    lab_verdict_add(v.line, sizeof v.line, &first, (size_t)(v.mismatch != 0),
                    "case not ok inside a variant judged ok (internal disagreement)", "disagreements");
    return v;
}

int lab_verdict_exit(lab_status st)
{
    if (st == LAB_OK) return LAB_EXIT_OK;
    return st == LAB_ERR_ARG || st == LAB_ERR_NOTFOUND ? LAB_EXIT_USAGE : LAB_EXIT_FAILED;
}
