/* lab_verdict: the one verdict of a replay: each case against its role, each variant's tally and judgement, and the run's ok, console words and exit status, decided in one place. */
#ifndef LAB_VERDICT_H
#define LAB_VERDICT_H

/* Contract. Every output of a replay takes its verdict from here and from nowhere else: the console's
 * table and last line, summary.json ("ok" and each variant's "ok", "verdict", "verdict_kind"), JUnit and
 * TAP (one point per case from lab_verdict_case_ok, one per variant from its tally, one for the run from
 * lab_verdict_decide), and the exit status of `lab replay` / `lab report` (lab_verdict.exit_status), under
 * --mpi too. The rules:
 *   - a case: a fix must PASS; a bug must be detected by its own stated failure (lab_variant.detect, FAIL
 *     by default); another failing outcome is inconclusive; a SKIP of an expected class is neutral, a SKIP
 *     of class LAB_SKIP_MISSING and an ERROR are bad; a bug that PASSes is an XPASS, except for a bug with
 *     a stated rate below 1, whose passes are judged by its tally;
 *   - a variant (lab_verdict_tally): a fix is ok when every case that ran PASSed; a bug with no stated rate
 *     (or a stated rate of 1: the same claim) is ok when every judged seed detected it; a bug with a stated
 *     rate r < 1 by the exact one-sided binomial test of lab_binom.h: rejected (RATE BELOW) when
 *     P(X <= detected | judged, r) < LAB_BINOM_ALPHA, else refused (TOO FEW SEEDS, with the seeds it
 *     needs) when the test's power against 1 - 2 (1 - r) is below LAB_BINOM_POWER, else ok. A rejection
 *     stands at any power; only a non-rejection needs power to mean anything. Cases run under the
 *     compute-sanitizer tool the variant names (metric "sanitizer_expected" 1, lab_sanitize) are detected by
 *     the tool's finding, on every seed: there the rate is 1. Inconclusive cases, ERRORs
 *     and missing-dependency SKIPs make any variant not ok; all-skipped (expected) is ok ("skipped");
 *   - the run (lab_verdict_decide): ok when every variant is ok, every case that is not ok belongs to a
 *     variant that is not ok (checked: a disagreement is itself NOT OK), the harness ran every case, no
 *     MPI rank failed and the run was not interrupted. Exit status: 3 when the harness failed, 128 + the
 *     signal when interrupted, else 0 ok / 1 NOT OK. */

#include <stddef.h>
#include <stdint.h>

#include "lab_incident.h"
#include "lab_isolate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Exit codes of every `lab` command (docs/exit-codes.md), each meaning one thing; a replay's comes from its verdict
 * (lab_verdict.exit_status), a command that stops before any verdict takes lab_verdict_exit's. */
#define LAB_EXIT_OK 0      /* every fix holds and every bug is detected (or the command did its job) */
#define LAB_EXIT_NOT_OK 1  /* the verdict is NOT OK (a fix regressed, a bug undetected, a golden differs) */
#define LAB_EXIT_USAGE 2   /* bad usage: unknown flag, a number out of range, an unknown incident */
#define LAB_EXIT_FAILED 3  /* the lab could not do the job: I/O error, missing dependency or build product,
                              a requested backend that is not usable */
#define LAB_EXIT_SIGNAL 128 /* interrupted: 128 + the signal (130 SIGINT, 143 SIGTERM), the finished cases kept */

/* The exit status of a command that stopped on st before a verdict: LAB_EXIT_OK for LAB_OK, LAB_EXIT_USAGE for
 * LAB_ERR_ARG and LAB_ERR_NOTFOUND (what the user typed is wrong), LAB_EXIT_FAILED for any other status. */
int lab_verdict_exit(lab_status st);

/* One (incident, variant, seed, backend) case and what happened to it. */
typedef struct {
    const lab_incident *incident;
    const lab_variant *variant;
    uint64_t seed;
    lab_backend backend;
    lab_job_outcome o;
    char first_run[300];        /* "" when the case ran once; else its first run ("ERROR: ...") before the
                                   replay ran it again alone (a device error, lab_replay.h), o being the second */
} lab_case_record;

/* 1 when outcome o detects bug variant v (one of the outcomes its `detect` mask names; FAIL by default). */
int lab_verdict_detected(const lab_variant *v, lab_outcome o);

/* Whether one case meets its role (the rules above): 1 yes, 0 no, -1 an expected SKIP (neutral). */
int lab_verdict_case_ok(const lab_case_record *c);

/* The detection rate a bug variant is judged against: its min_detect_rate when strictly between 0 and 1,
 * else 1 (every seed). */
double lab_verdict_stated_rate(const lab_variant *v);

/* What a variant's judgement is. */
typedef enum {
    LAB_VERDICT_OK,            /* "ok" */
    LAB_VERDICT_SKIPPED,       /* "skipped": every case skipped for an expected reason (ok) */
    LAB_VERDICT_REGRESSED,     /* "regressed": a fix that did not PASS */
    LAB_VERDICT_XPASS,         /* "xpass": a bug that must be detected on every seed PASSed */
    LAB_VERDICT_RATE_BELOW,    /* "rate-below": the binomial test rejects the stated rate */
    LAB_VERDICT_TOO_FEW_SEEDS, /* "too-few-seeds": verdict refused: the test cannot see misses double */
    LAB_VERDICT_INCONCLUSIVE,  /* "inconclusive": FAIL/CRASH/HANG that is not the bug's own failure */
    LAB_VERDICT_ERROR,         /* "error": a case the harness could not run or judge */
    LAB_VERDICT_SKIP_MISSING,  /* "skip-missing": a case skipped because something is not built or missing */
    LAB_VERDICT_KIND_COUNT
} lab_verdict_kind;
const char *lab_verdict_kind_name(lab_verdict_kind k);

/* Per-variant tally over a replay. */
typedef struct {
    const lab_incident *incident;
    const lab_variant *variant;
    size_t seeds;                     /* cases */
    double wall_s;                    /* the cases' wall seconds, summed (a seed batch's on the case that ran it) */
    double cpu_s;                     /* their CPU seconds (lab_job_outcome.cpu_s), summed where known */
    size_t counts[LAB_OUT_COUNT];
    size_t detected;                  /* bug: cases its own stated failure detected */
    size_t inconclusive;              /* bug: FAIL/CRASH/HANG that is not its stated failure */
    size_t skip_missing;              /* SKIPs because something is not built or missing (an error) */
    size_t judged;                    /* cases with a real outcome: not skipped, not ERROR, not inconclusive */
    double detect_rate;               /* detected / judged, NaN if none */
    double stated_rate;               /* bug: the rate it is judged against (1: every seed); fix: NaN */
    double p_value;                   /* stated rate < 1: P(X <= detected | judged, rate); else NaN */
    double power;                     /* stated rate < 1: power at `judged` seeds against doubled misses */
    size_t seeds_needed;              /* too-few-seeds: the judged seeds the test needs; else 0 */
    size_t cases_not_ok;              /* cases that did not meet their role (lab_verdict_case_ok 0) */
    size_t cases_neutral;             /* expected SKIPs (lab_verdict_case_ok -1) */
    lab_verdict_kind kind;
    int ok;                           /* the variant met its role */
    char verdict[200];                /* "ok", "XPASS on 3 of 16 seeds", "TOO FEW SEEDS: ...", ... */
} lab_verdict_tally;

/* Tallies records by (incident, variant) in first-seen order into a malloc'ed array (*n entries) and
 * judges each (the rules above). LAB_ERR_NOMEM. */
lab_status lab_verdict_tally_records(const lab_case_record *recs, size_t n, lab_verdict_tally **tallies,
                                     size_t *n_tallies);

/* Streaming form of lab_verdict_tally_records, for a replay that does not hold its records: counts rec into
 * *tallies (*n_tallies entries, *cap allocated; grown with realloc, the caller frees), a new (incident, variant)
 * appended in first-seen order; *index (if not NULL) gets its tally's position. Tallies made this way are judged
 * by lab_verdict_tally_judge once every record is in. LAB_ERR_NOMEM. */
lab_status lab_verdict_tally_add(lab_verdict_tally **tallies, size_t *n_tallies, size_t *cap,
                                 const lab_case_record *rec, size_t *index);
void lab_verdict_tally_judge(lab_verdict_tally *t, size_t nt);

/* What the runner knows of the run as a whole, beyond its records. */
typedef struct {
    int harness_failed;       /* the harness could not run every case (fork, pipe, out of memory): exit 3 */
    int ranks_failed;         /* --mpi: a rank died, hung or failed; its unreported cases are in the records */
    int interrupted;          /* the signal (SIGINT, SIGTERM) that stopped the run, 0: none */
    size_t cases_planned;     /* cases the run meant to finish (0: as many as the records) */
} lab_verdict_run;

/* The run's verdict. */
typedef struct {
    int ok;                   /* every fix holds, every bug is detected, the run is whole */
    int exit_status;          /* LAB_EXIT_OK, LAB_EXIT_NOT_OK, LAB_EXIT_FAILED or 128 + signal */
    size_t cases, skipped, cases_not_ok;
    size_t variants, variants_not_ok;
    size_t kinds[LAB_VERDICT_KIND_COUNT]; /* variants per judgement */
    int mismatch;             /* a case not ok inside a variant judged ok (an internal disagreement) */
    char line[240];           /* the console's last words: "every fix holds and every bug is detected", or
                                 "NOT OK: ..." with what was not ok */
} lab_verdict;

/* Decides the run's verdict from its tallies, its records and run (NULL: a whole run, nothing failed). */
lab_verdict lab_verdict_decide(const lab_verdict_tally *t, size_t nt, const lab_case_record *recs, size_t n,
                               const lab_verdict_run *run);

/* lab_verdict_decide from the tallies alone (their cases_not_ok stand in for the records): the same verdict for
 * tallies of the same records. */
lab_verdict lab_verdict_decide_tallies(const lab_verdict_tally *t, size_t nt, const lab_verdict_run *run);

#ifdef __cplusplus
}
#endif

#endif
