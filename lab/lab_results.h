/* lab_results: case records of a replay, their verdicts, and results.jsonl / summary.json / TAP / JUnit output. */
#ifndef LAB_RESULTS_H
#define LAB_RESULTS_H

#include <stddef.h>
#include <stdint.h>

#include "lab_incident.h"
#include "lab_isolate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One (incident, variant, seed, backend) case and what happened to it. */
typedef struct {
    const lab_incident *incident;
    const lab_variant *variant;
    uint64_t seed;
    lab_backend backend;
    lab_job_outcome o;
} lab_case_record;

/* Whether one case meets its role: a fix must PASS; a bug must be detected by its own stated failure
 * (lab_variant.detect: FAIL by default); any other failing outcome is inconclusive (0). A SKIP of an
 * expected class (needs a GPU, needs N GPUs, no version) is neither good nor bad (-1); a SKIP because
 * something is not built or missing is bad (0); ERROR is always bad; a bug that PASSes is an XPASS. */
int lab_results_case_ok(const lab_case_record *c);

/* 1 when outcome o detects bug variant v (one of the outcomes its `detect` mask names; FAIL by default). */
int lab_results_detected(const lab_variant *v, lab_outcome o);

/* Per-variant tally over a replay. */
typedef struct {
    const lab_incident *incident;
    const lab_variant *variant;
    size_t seeds;                     /* cases run */
    size_t counts[LAB_OUT_COUNT];
    size_t detected;                  /* bug: cases its own stated failure detected */
    size_t inconclusive;              /* bug: FAIL/CRASH/HANG that is not its stated failure */
    size_t skip_missing;              /* SKIPs because something is not built or missing (an error) */
    double detect_rate;               /* detected / (seeds - skipped), NaN if none ran */
    double detect_lo, detect_hi;      /* Wilson 95% interval of the detection rate */
    int ok;                           /* the variant met its role */
    char verdict[96];                 /* "ok", "XPASS on 3 seeds", "FAIL on 2 seeds", ... */
} lab_variant_tally;

/* Wilson score interval (z = 1.96) for k successes in n trials; [0, 1] when n = 0. */
void lab_results_wilson(size_t k, size_t n, double *lo, double *hi);

/* Tallies records by (incident, variant) in first-seen order into a malloc'ed array (*n entries).
 * A fix is ok when no case failed its role (SKIPs allowed, all-SKIP is ok). A bug with
 * min_detect_rate 0 is ok when every non-skipped case was detected; with a stated rate r, when the
 * Wilson upper bound of the observed rate is at least r (the reproducer has not lost its power). ERROR
 * anywhere makes the variant not ok. */
lab_status lab_results_tally(const lab_case_record *recs, size_t n, lab_variant_tally **tallies, size_t *n_tallies);

/* The one command that replays exactly this case, e.g.
 * "build/lab replay --incident 0004-pow-grad-nan --variant fix --seed 7 --backend cpu". */
void lab_results_replay_cmd(const lab_case_record *c, const char *lab_bin, char *buf, size_t len);

/* Writes one JSON object per case (incident, variant, role, seed, backend, outcome, ok, signal,
 * wall_s, detail, error, metrics{}, replay) to path, atomically. Non-finite metrics are written as null
 * with their names listed under "nonfinite_metrics". */
lab_status lab_results_write_jsonl(const char *path, const lab_case_record *recs, size_t n, const char *lab_bin);

/* Writes summary.json atomically: {"ok", "backend", "cases", "wall_s", "cases_per_s", "incidents":
 * [{"id", "title", "variants": [{"name", "role", "seeds", "counts"{}, "detected", "detect_rate",
 * "detect_ci95", "min_detect_rate", "ok", "verdict"}]}]}. *ok receives the top-level verdict. */
lab_status lab_results_write_summary(const char *path, const lab_variant_tally *t, size_t nt, const char *backend,
                                     size_t n_cases, double wall_s, int *ok);

/* TAP version 13 (one test point per case; an XPASS or failing fix is "not ok") and JUnit XML. */
lab_status lab_results_write_tap(const char *path, const lab_case_record *recs, size_t n, const char *lab_bin);
lab_status lab_results_write_junit(const char *path, const lab_case_record *recs, size_t n, const char *lab_bin);

#ifdef __cplusplus
}
#endif

#endif
