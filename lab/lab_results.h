/* lab_results: a replay's output files: results.jsonl, summary.json, TAP and JUnit, each written from the one verdict (lab_verdict). */
#ifndef LAB_RESULTS_H
#define LAB_RESULTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lab_incident.h"
#include "lab_isolate.h"
#include "lab_verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Wilson score interval (z = 1.96) for k successes in n trials; [0, 1] when n = 0. (Shown beside a
 * detection rate; the verdict on a stated rate is lab_verdict's exact binomial test.) */
void lab_results_wilson(size_t k, size_t n, double *lo, double *hi);

/* How a case's replay command is spelled (the one command that replays exactly that case): the command layer's words
 * (replay/engine/lab_command.h), handed to the writers so that the core spells no command line. spell writes the command for c
 * into buf (cut at len); the writers call it through lab_results_spell. */
typedef struct {
    void (*spell)(const void *ctx, const lab_case_record *c, char *buf, size_t len);
    const void *ctx;
} lab_results_cmd;

/* The replay command of case c into buf through cmd; "" when cmd (or its spell) is NULL. */
void lab_results_spell(const lab_results_cmd *cmd, const lab_case_record *c, char *buf, size_t len);

/* Writes one JSON object per case (incident, variant, role, seed, backend, outcome, ok, signal,
 * wall_s, cpu_s (when known), done_s and worker (when run by a worker), detail, error, metrics{}, replay) to path, atomically. Non-finite metrics are written as null
 * with their names listed under "nonfinite_metrics". */
lab_status lab_results_write_jsonl(const char *path, const lab_case_record *recs, size_t n, const lab_results_cmd *cmd);

/* The commands cmds (one a line, '\n' after each) as one shell line that runs them in turn, "; " between them, as
 * summary.json's "resume" says it where the replay writes no set: malloc'ed ("" for none), NULL when out of memory. */
char *lab_results_join_cmds(const char *cmds);

struct cJSON;
/* Adds a caller's own fields to summary.json's tree before it is written (lab_mpi: the ranks): summary is the
 * tree, to change in place (it may replace "ok"). An error stops the writing (nothing is written) and is
 * returned. */
typedef lab_status (*lab_results_fields_fn)(void *ctx, struct cJSON *summary);

/* What summary.json says beyond the tallies and the verdict, known before it is written (so the file is
 * written once, never read back and patched). */
typedef struct {
    int signal;                   /* the interrupt that stopped the replay (SIGINT, SIGTERM; 0: none) */
    size_t cases_planned;         /* an interrupted replay: the cases it planned */
    const char *resume;           /* an interrupted replay: the commands that resume it, one a line ('\n' after
                                     each); NULL or "": none, every case finished */
    lab_results_fields_fn fields; /* the caller's own fields, added last (NULL: none) */
    void *fields_ctx;             /* their context */
} lab_results_summary_extra;

/* Writes summary.json atomically: {"ok", "verdict", "exit_status", "backend", "cases", "wall_s",
 * "cases_per_s", "rate_test": {"alpha", "power", "drop_rate"}, "incidents": [{"id", "title", "variants":
 * [{"name", "role", "seeds", "case_wall_s", "cpu_s" (the tally's sums), "counts"{}, "ok", "verdict", "verdict_kind", and for a bug "detected",
 * "judged", "detect_rate", "detect_ci95", "min_detect_rate" (1: every seed), and for a stated rate below 1
 * "p_value", "power", "seeds_needed" (refused only)}]}]}, then what extra holds (NULL: nothing): for an
 * interrupted replay (extra->signal != 0) "interrupted": true, "signal" ("SIGINT", "SIGTERM"; "?" for another),
 * "cases_planned", "resume_commands" (extra->resume's commands, an array of strings, [] when none) and "resume" (one
 * shell line that runs them in turn, "; " between them; "(none: every case finished)" when there is none) ("ok" is
 * already false: the verdict counts an interrupted run NOT OK), then the caller's fields (extra->fields). "ok" and every variant's "ok" are the verdict's (lab_verdict.h), written as
 * they are. Errors: the caller's, LAB_ERR_NOMEM, or the write's (naming path). */
lab_status lab_results_write_summary(const char *path, const lab_verdict_tally *t, size_t nt, const char *backend,
                                     size_t n_cases, double wall_s, const lab_verdict *v,
                                     const lab_results_summary_extra *extra);

/* The tree lab_results_write_summary writes, for a writer that keeps it too: *out (the caller deletes it; NULL on
 * error). Errors: the caller's fields' or LAB_ERR_NOMEM. */
lab_status lab_results_summary_json(const lab_verdict_tally *t, size_t nt, const char *backend, size_t n_cases,
                                    double wall_s, const lab_verdict *v, const lab_results_summary_extra *extra,
                                    struct cJSON **out);

/* TAP version 13 and JUnit XML: one test point per case (lab_verdict_case_ok: "not ok" / <failure> when 0,
 * SKIP / <skipped> when -1), then one per variant (its tally's ok and verdict: a stated rate below 1, a
 * refused verdict), then one for the run (the verdict's ok and line). So a CI system sees a failure in
 * either exactly when the run is NOT OK. */
lab_status lab_results_write_tap(const char *path, const lab_case_record *recs, size_t n, const lab_verdict_tally *t,
                                 size_t nt, const lab_verdict *v, const lab_results_cmd *cmd);
lab_status lab_results_write_junit(const char *path, const lab_case_record *recs, size_t n,
                                   const lab_verdict_tally *t, size_t nt, const lab_verdict *v, const lab_results_cmd *cmd);

/* The pieces of those files, for a replay that writes its cases as they come (lab_replay's windows): one case's
 * results.jsonl line, TAP point (numbered `number`) and JUnit testcase; the TAP plan and the JUnit header (its
 * counts: case_failures cases with lab_verdict_case_ok 0, case_skipped with -1, of n) and the per-variant and run
 * points that end each file. Written to f exactly as the write_* functions write them; 1, or 0 on a write error. */
int lab_results_jsonl_line(FILE *f, const lab_case_record *c, const lab_results_cmd *cmd);
/* One case's results.jsonl line, its '\n' included, malloc'ed (the caller frees it), its length in *len: what a journal
 * writes with one write(2) (lab_journal). NULL when out of memory. */
char *lab_results_case_line(const lab_case_record *c, const lab_results_cmd *cmd, size_t *len);
int lab_results_tap_case(FILE *f, const lab_case_record *c, size_t number, const lab_results_cmd *cmd);
int lab_results_tap_head(FILE *f, size_t n, size_t nt);
int lab_results_tap_tail(FILE *f, size_t n, const lab_verdict_tally *t, size_t nt, const lab_verdict *v);
int lab_results_junit_case(FILE *f, const lab_case_record *c, const lab_results_cmd *cmd);
int lab_results_junit_head(FILE *f, size_t n, size_t case_failures, size_t case_skipped, const lab_verdict_tally *t,
                           size_t nt, const lab_verdict *v);
int lab_results_junit_tail(FILE *f, const lab_verdict_tally *t, size_t nt, const lab_verdict *v);

#ifdef __cplusplus
}
#endif

#endif
