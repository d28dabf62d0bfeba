/* lab_replay: runs (incident, variant, seed) cases in isolation on all cores and reports them. */
#ifndef LAB_REPLAY_H
#define LAB_REPLAY_H

#include <stdint.h>
#include <stdio.h>

#include "lab_incident.h"
#include "lab_machine.h"
#include "lab_mps.h"
#include "lab_plot.h"
#include "lab_request.h"
#include "lab_resread.h"
#include "lab_results.h"

/* What a replay runs: its cases and what judges them. The same in every process of a run (each builds the same case
 * list from it), and what a result set and its journal record, so that `lab replay --resume` runs the same. */
typedef struct {
    const lab_incident *const *incidents;  /* the incidents to replay */
    size_t n_incidents;
    const char *variant;                   /* only this variant (NULL: all) */
    const uint64_t *seeds;
    size_t n_seeds;
    int seeds_default;                     /* seeds were not given: an incident's default_seeds caps them */
    lab_backend backend;
    double timeout_s;                      /* watchdog per case when the incident sets none */
    const char *sanitize;                  /* compute-sanitizer tool every case runs under (lab_sanitize.h);
                                              NULL: none */
} lab_replay_what;

struct lab_journal;
struct lab_resume;

/* How a replay runs what it runs: this process's workers and devices, where the result set goes and what it holds,
 * and the hooks of the callers built on the engine (scale-out, lab report). */
typedef struct {
    int jobs;                              /* parallel cases (<= 0: all cores) */
    const char *out_dir;                   /* results, summary, plots; NULL writes no files */
    int tap;                               /* also write results.tap */
    int plots;                             /* render plots after the run */
    int progress;                          /* live progress line on stderr */
    const char *lab_bin;                   /* how to name the lab in replay commands */
    const char *root;                      /* repository root (goldens, plot scripts) */
    lab_results_fields_fn summary_fields;  /* fields added to summary.json's tree before it is written (lab_mpi:
                                              the ranks; lab_results_summary_extra); an error stops the writing:
                                              the set is not swapped in. NULL: none */
    void *summary_ctx;                     /* its context */
    unsigned batch_seeds;                  /* most seeds one CUDA seed batch runs (lab_seedbatch.h); 0: each
                                              incident's batch.max; 1: no batching */
    int run_workers, run_gpus;             /* a fed execution that is a share of a larger run (--mpi): the
                                              workers and GPUs of all its processes together; its pool cuts seed
                                              batches as a plain replay of the whole run would (0: its own) */
    int ctx_gate;                          /* contexts the pool's CUDA workers ask the driver for at once (0:
                                              LAB_CTXGATE_WIDTH; under --mpi the host's divided among its ranks,
                                              lab_ctxgate_share) */
    int device_ok;                         /* the replay's probe made a context on the GPU: from then on a CUDA
                                              case that finds no usable device is ERROR (device lost), never a
                                              neutral SKIP, and a case that met a device error is run again */
    lab_status (*device_probe)(char *why, size_t len); /* what a CUDA case calls first to see that its GPU is
                                              usable (LAB_OK; LAB_ERR_UNSUPPORTED: none; another status: unusable),
                                              NULL: lab_cuda_ready; tests give a stand-in */
    lab_mps *mps;                          /* the replay's MPS daemon (lab_mps.h), or NULL: stopped once the
                                              single-GPU pool is done, before cases that must not be its clients
                                              (multi-GPU cases, reruns after a device error) */
    int want_mps;                          /* under --mpi: each rank starts *mps for its share of the GPUs
                                              (lab_mps_replay_start) once it has taken it */
    struct cJSON **summary_out;            /* when set: gets the summary.json tree as written (the caller deletes
                                              it; NULL when none was written) */
    lab_resread_set *set_out;              /* when set: gets the finished cases as results.jsonl holds them, the set
                                              the plots were drawn from (lab_resread_free; empty when none) */
    lab_plot_list *plots_out;              /* when set: gets the PNG files drawn (lab_plot_list_free) */
    struct lab_journal *journal;           /* the journal every finished case goes to as it finishes, in the staging
                                              folder the set is written in (lab_journal.h); NULL with out_dir set:
                                              lab_replay_run opens one itself */
    const struct lab_resume *carry;        /* `--resume`: the cases that finished before (lab_resume.h) are kept as
                                              they are and only the others run; NULL: every case runs */
} lab_replay_how;

/* One replay: what it runs and how. Set with designated initializers: (lab_replay_opts){.what = {...}, .how = {...}}.
 */
typedef struct {
    lab_replay_what what;
    lab_replay_how how;
} lab_replay_opts;

/* Runs every selected case, prints the per-incident table and the replay command of every case that
 * failed its role to `report`, writes the output files when out_dir is set. *verdict is the run's one
 * verdict (lab_verdict.h): its ok and exit_status are what summary.json, JUnit, TAP and the console say.
 * Returns an error only when the harness itself failed (output directory not writable, fork failure); the
 * error names the path or call. On success *recs (malloc'ed, caller frees) and *n_recs hold the case
 * records. */
lab_status lab_replay_run(const lab_replay_opts *opts, FILE *report, lab_verdict *verdict, lab_case_record **recs,
                          size_t *n_recs);

/* How one process runs the cases of a replay: lab_replay_run, or under --mpi lab_mpi_replay (lab_mpi.h). */
typedef lab_status (*lab_replay_runner)(const lab_replay_opts *opts, FILE *report, lab_verdict *verdict,
                                        lab_case_record **recs, size_t *n_recs);

/* What the replay's entry needs beside the request: how to run it at scale, what to keep, where to say things. */
typedef struct {
    lab_replay_runner scale_out; /* the runner of a request with mpi set (lab_mpi_replay: only the lab binary links
                                    MPI); NULL refuses such a request (LAB_ERR_ARG) */
    int keep_set;                /* keep the result set in memory (lab_replay_result.set and .summary) */
    FILE *report;                /* the table, the failing cases and the verdict (stdout) */
    FILE *diag;                  /* the backend chosen, MPS, and why a request is refused (stderr) */
} lab_replay_entry;

/* What a replay of a request gives back, in memory. */
typedef struct {
    lab_verdict verdict;         /* the one verdict (lab_verdict.h); its exit_status is the command's */
    lab_backend backend;         /* the backend the cases ran on (auto resolved) */
    lab_case_record *recs;       /* every case planned, in canonical order (NULL for a windowed replay) */
    size_t n_recs;
    lab_resread_set set;         /* keep_set: the finished cases as results.jsonl holds them (empty for a windowed
                                    replay, whose records are not held) */
    lab_plot_list plots;         /* keep_set: the PNG files the replay drew into its plots folder */
    struct cJSON *summary;       /* keep_set: the summary.json tree written (NULL: none was, or not kept) */
    int said;                    /* the request was refused or stopped before any case, and diag says why */
} lab_replay_result;

/* The replay's entry: carries out request req as `lab replay` and `lab report` fill it (lab_cli). Checks the request
 * (the sanitizer tool, --mpi in this build, --out: LAB_ERR_ARG with the message naming the flag; an unknown incident or
 * variant: LAB_ERR_NOTFOUND, the known names listed on how->diag), picks the backend through the machine probe
 * (lab_device_usable: auto falls back to the CPU and says so; cuda without a usable device is LAB_ERR_DEVICE said on
 * diag unless gpu_optional), starts the replay's MPS daemon where it serves, catches SIGINT/SIGTERM, runs the cases
 * (lab_replay_run, or how->scale_out under --mpi) and stops the daemon. res->said is set for every refusal said on
 * diag. On LAB_OK res holds the verdict and the records (lab_replay_result_free releases them); another status after
 * the cases ran is the harness's or the result set's failure (lab_replay_run). */
lab_status lab_replay_request_run(const lab_request *req, const lab_replay_entry *how, lab_replay_result *res);

/* Opens the journal of a replay that writes a set (opts->how.out_dir, made here when missing): a staging folder beside
 * it whose journal.jsonl's first line records what the replay runs (lab_journal.h, lab_resume_describe). What a runner
 * that writes the set itself does before its first case (lab_replay_run does it for its callers; under --mpi rank 0);
 * the runner closes it (lab_journal_close). Errors: lab_journal_open's, LAB_ERR_NOMEM. */
lab_status lab_replay_journal_open(const lab_replay_opts *opts, struct lab_journal **out);

/* The workers of a replay on machine m (lab_sched_workers), and where the count came from into said: "-j 4" or the
 * default's rule ("default: one a CPU"), then m's CPUs and where they came from (affinity, cgroup quota, Slurm's
 * allocation: lab_cpus.h), and what the scheduler capped. What the console's scheduler line, summary.json's "workers"
 * and, under --mpi, each rank's "jobs_from" say. */
int lab_replay_workers(const lab_replay_opts *opts, const lab_machine *m, char *said, size_t len);

/* How the replay's outputs spell a case's replay command (the command layer's words): what results.jsonl and the
 * journal write. */
lab_results_cmd lab_replay_cmd(const lab_replay_opts *opts);

/* Releases what a result holds (and empties it); an empty result is fine. */
void lab_replay_result_free(lab_replay_result *res);

/* A replay of more cases than lab_replay_window_at() runs windowed (lab_window.h): it returns *recs NULL and
 * *n_recs 0 (the records are in results.jsonl). */

/* The pieces of lab_replay_run, for scale-out (lab_mpi) that runs a share of the cases per rank. */

/* Builds the case list of a replay in its canonical order (incident, variant, seed): *recs (malloc'ed,
 * caller frees, outcomes zeroed) and *n. LAB_ERR_NOMEM on allocation failure. Deterministic: the same
 * opts give the same list in every process. */
lab_status lab_replay_cases(const lab_replay_opts *opts, lab_case_record **recs, size_t *n);
/* The cases a replay plans (lab_replay_cases's n), without making them: O(incidents). */
size_t lab_replay_count(const lab_replay_opts *opts);
/* The place in lab_replay_cases's list of the case (inc, var, seed): 1 with *index set, 0 when the replay does not plan
 * it. O(incidents + variants), and O(1) in the seeds when they are consecutive (as every request makes them). */
int lab_replay_case_index(const lab_replay_opts *opts, const lab_incident *inc, const lab_variant *var, uint64_t seed,
                          size_t *index);

/* Told in the parent of each case as it finishes; index is the record's position in recs. */
typedef void (*lab_replay_done_fn)(void *ctx, size_t index, const lab_case_record *rec);

/* Runs recs[0..n) (grouped by incident, as lab_replay_cases makes them) isolated, opts->how.jobs at once,
 * filling each record's outcome and calling done (if not NULL) as each finishes. Prints nothing but the
 * progress line when opts->how.progress. Returns LAB_ERR_IO if fork/pipe failed (cases not started are ERROR). */
lab_status lab_replay_execute_records(const lab_replay_opts *opts, lab_case_record *recs, size_t n,
                                      lab_replay_done_fn done, void *done_ctx);

/* The watchdog (seconds) a case of incident inc runs under: the incident's own timeout, else
 * opts->what.timeout_s, capped by opts->what.timeout_s when that is set; 60 when neither is. */
double lab_replay_watchdog(const lab_replay_opts *opts, const lab_incident *inc);

/* Reports finished records as lab_replay_run does: the table and the failing cases to `report`, and
 * when opts->how.out_dir is set (it must exist) results.jsonl, summary.json (wall_s = wall), junit.xml,
 * results.tap and plots. run (NULL: nothing failed) says what the runner knows beyond the records (a harness
 * failure, a failed MPI rank); the interrupt and the cases planned (n) are filled in here. *verdict gets the
 * one verdict all those outputs were written from. Returns an error only when an output file could not be
 * written (the error names it) or memory ran out (LAB_ERR_NOMEM: then an interrupted replay's resume commands are
 * neither printed nor written, rather than printed with some left out, and the error says so). */
lab_status lab_replay_report(const lab_replay_opts *opts, FILE *report, lab_case_record *recs, size_t n, double wall,
                             const lab_verdict_run *run, lab_verdict *verdict);

/* Runs one case in the current process (no isolation), as a child of the replay does. Exposed for
 * `lab explain` tests and for debugging under gdb. */
lab_status lab_replay_case(const lab_case *c, lab_case_result *r);

#endif
