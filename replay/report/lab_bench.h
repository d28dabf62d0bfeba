/* lab_bench: the incidents' benchmarks as data: runs them (each in its own process), turns their record lines into a JSON bench section (bench.json, `lab bench --json`, report.json's "bench"), and compares two reports' bench sections for performance regressions. */
#ifndef LAB_BENCH_H
#define LAB_BENCH_H

#include <cJSON.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

#include "lab_err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A benchmark (lab_incident.bench) prints free text lines and, per measurement, one record line:
 *   lab-bench-record {JSON object}
 * The object's fields: "name" (string, unique within the incident: what was measured, with its shape),
 * "fix" and "baseline" (strings: what is timed against what), "device" (string), "fix_ms" and
 * "baseline_ms" (medians), "ratio" (the median over repetitions of the per-repetition cost ratio of the fix
 * to the baseline: lower is better; a bandwidth benchmark gives time per byte over the baseline's),
 * "ratio_lo" and "ratio_hi" (10th and 90th percentiles of the per-repetition ratios), "reps" and "warmup"
 * (counts), "target" (the largest ratio accepted; absent or 0: none), "ceiling_gbs" (the device-to-device
 * copy bandwidth measured in the same run, bytes read + written), "floor_ms" (the fix's fewest bytes at that
 * bandwidth); other fields are kept as they are. Required: name, baseline, ratio (finite, > 0). */
#define LAB_BENCH_RECORD_TAG "lab-bench-record "
#define LAB_BENCH_SCHEMA "lab-bench/1"
#define LAB_BENCH_FILE "bench.json"
/* Relative change of a ratio that is never judged a regression, whatever the spreads say: the run-to-run
 * noise between two processes measured on an H100 (docs/gpu.md: benchmarks), above the within-run spread. */
#define LAB_BENCH_NOISE_FLOOR 0.05
/* Per incident, the longest a benchmark may run before it is killed (seconds). */
#define LAB_BENCH_TIMEOUT_S 300.0

/* Parses one output line of a benchmark. Returns a new JSON record (with "incident" set to incident and
 * "spread" = (ratio_hi - ratio_lo) / (2 ratio), 0 where the percentiles are missing, and "target_met" where
 * a target is given), or NULL: *is_record tells whether the line was a record line at all (then
 * lab_err_msg() says what is wrong with it: LAB_ERR_FORMAT naming the field). */
cJSON *lab_bench_parse_line(const char *line, const char *incident, int *is_record);

/* Runs the benchmarks of the incidents named in ids[0..n_ids) (n_ids 0: every incident that has one), one
 * after another, each in its own child process under LAB_BENCH_TIMEOUT_S (they time the device: never two at
 * once, and the lab never holds a CUDA context). Free text lines go to human as they are (may be NULL);
 * record lines become the section's records. *section gets {"schema", "created", "noise_floor", "incidents":
 * [{"id", "status": "ok" | "skipped" | "failed", "message", "wall_s"}], "records": [...]}; *failed counts the
 * benchmarks that failed (an error, a crash, a hang, or a malformed record line; a skip, no GPU, is not a
 * failure). LAB_ERR_ARG naming an unknown id; LAB_ERR_IO when no temporary folder can be made. */
lab_status lab_bench_run(const char *const *ids, size_t n_ids, FILE *human, cJSON **section, int *failed);
/* As lab_bench_run, study 1: the incidents' studies (lab_incident.study, `lab bench --study`) instead of their
 * benchmarks; study 0: lab_bench_run. */
lab_status lab_bench_run_kind(const char *const *ids, size_t n_ids, int study, FILE *human, cJSON **section, int *failed);

/* For `lab report`: runs every benchmark when want is 1, or when want is -1 and the replay ran on cuda (replay_cuda);
 * nothing when want is 0 (*section NULL). *section gets the benchmarks' section (the caller deletes it), also written
 * to <dir>/bench.json beside the replay's set. Progress to log (may be NULL). LAB_ERR_IO when the file cannot be
 * written (*section is still set); a failed benchmark is recorded in the section, not an error. */
lab_status lab_bench_report_step(const char *dir, int want, int replay_cuda, FILE *log, cJSON **section);

/* Reads <dir>/bench.json into *section (the caller deletes it) when that file exists and is not older than since (0:
 * no check): what a report made from files (`lab report --from`) shows. A missing or older file gives NULL and is not
 * an error; an unreadable or malformed one is LAB_ERR_IO / LAB_ERR_FORMAT naming it. */
lab_status lab_bench_read(const char *dir, time_t since, cJSON **section);

/* Whether ratio b is a performance regression against ratio a: b / a - 1 above the threshold
 * max(LAB_BENCH_NOISE_FLOOR, spread_a + spread_b) (spreads relative, as in the records). Returns 1
 * regressed, -1 improved (a / b - 1 above the threshold), 0 same; *threshold (may be NULL) gets it. */
int lab_bench_judge(double ratio_a, double spread_a, double ratio_b, double spread_b, double *threshold);

/* Compares the "bench" members of two parsed reports: one row per record (incident, name, baseline) in
 * either, ratios side by side with their p10..p90, B/A, the threshold and the verdict (a record measured
 * on different devices is shown, not judged), then a line with the counts. Prints nothing when neither
 * report has a bench section, a note when only one has. *regressions gets the number of performance
 * regressions. LAB_ERR_FORMAT when a bench section is not an object with an array "records". */
lab_status lab_bench_compare(const cJSON *report_a, const cJSON *report_b, FILE *out, size_t *regressions);

#ifdef __cplusplus
}
#endif

#endif
