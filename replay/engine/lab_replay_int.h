/* lab_replay_int: what the replay modules share (lab_replay.c, lab_replay_fed.c, lab_replay_report.c, lab_window.c)
 * and nothing else includes: the context of a run in progress and the pieces of lab_replay.c and lab_replay_report.c
 * that the others reuse. Internal to those modules; the lab's contract is lab_replay.h. Each function's full comment
 * stands at its definition. */
#ifndef LAB_REPLAY_INT_H
#define LAB_REPLAY_INT_H

#include <stddef.h>
#include <stdio.h>

#include "lab_ctxgate.h"
#include "lab_isolate.h"
#include "lab_replay.h"
#include "lab_sched.h"

/* The context of a run in progress: the records, their execution order and seed batches, the plan, the progress. */
typedef struct {
    const lab_replay_opts *opts;
    lab_case_record *recs;
    size_t n, done;
    double t0;
    size_t bad;
    size_t base, total, base_bad; /* a windowed replay: cases done in earlier windows, in all, failing there */
    int quiet_sched;              /* a later window: the scheduler lines were printed already */
    size_t *order;     /* execution order: job j of the incident being run is recs[order[offset + j]] */
    unsigned *lead;    /* per execution position: n >= 1 starts a seed batch of n jobs (1: alone), 0 follows one
                          (lab_seedbatch.h) */
    size_t offset;
    lab_machine machine;
    lab_sched_plan plan;        /* the plan of the incident being run */
    int bound;                  /* in a worker: its GPUs are bound (the parent never sets it) */
    lab_ctxgate gate;           /* the pool's CUDA workers make their contexts through it (closed: no pool) */
    double run_fair;            /* > 0: a worker's fair share of the whole run's cost, which the pool cuts seed batches
                                   for with opts->how.run_gpus (a fed share of a larger run); else the pool's own */
    lab_replay_done_fn on_done; /* optional: told of each finished case (scale-out streams it) */
    void *on_done_ctx;
} lab_replay_ctx;

/* One incident of a run: its records [start, end) in execution order in ctx->order, its group size. */
typedef struct {
    size_t start, end, group_size, n_groups;
} lab_replay_part;

/* What an execution holds from its set-up to its end: the outcomes, each incident's part of ctx->order and its plan. */
typedef struct {
    lab_job_outcome *out;
    lab_replay_part *parts;
    lab_sched_plan *plans;
    size_t np;
    int shared;                 /* ctx->order and ctx->lead are shared with the children (a fed run) */
} lab_replay_setup;

/* A run's context over recs[0..n): nothing bound, no gate, its clock started at t0. */
void lab_replay_ctx_init(lab_replay_ctx *ctx, const lab_replay_opts *opts, lab_case_record *recs, size_t n, double t0);
/* The context of a run of all of recs[0..n) (its progress counted over n), done (NULL: none) told of each case. */
void lab_replay_ctx_told(lab_replay_ctx *ctx, const lab_replay_opts *opts, lab_case_record *recs, size_t n,
                         lab_replay_done_fn done, void *done_ctx);
/* The set-up of an execution (the machine, every incident's execution order and plan; shared: ctx->order and
 * ctx->lead shared with the children) and its release. LAB_ERR_NOMEM. */
lab_status lab_replay_setup_make(lab_replay_ctx *ctx, int shared, lab_replay_setup *s);
void lab_replay_setup_free(lab_replay_ctx *ctx, lab_replay_setup *s);
/* Runs the cases of ctx (records grouped by incident): the poolable incidents first as one pool, then the others
 * under their plans, then the reruns of the cases that met a device error. */
lab_status lab_replay_execute(lab_replay_ctx *ctx);

/* A case of the run finished (or ran again), recs[index] its record: into the journal (opts->how.journal), then told to
 * ctx->on_done. */
void lab_replay_kept(lab_replay_ctx *ctx, size_t index, const lab_case_record *rec);
/* Runs the records of recs[0..n) that did not finish before, run(run_ctx, their records in order, their count), the
 * others getting their outcome from opts->how.carry (lab_resume_fill); without a carry run gets recs[0..n) itself.
 * *carried (may be NULL) gets how many were carried. Returns run's status, or the carry's error (LAB_ERR_IO,
 * LAB_ERR_FORMAT naming the file; nothing run then) or LAB_ERR_NOMEM. */
lab_status lab_replay_run_rest(const lab_replay_opts *opts, lab_case_record *recs, size_t n,
                               lab_status (*run)(void *run_ctx, lab_case_record *recs, size_t n), void *run_ctx,
                               size_t *carried);
/* lab_replay_run_rest's run for cases that are not to start (an interrupt came first): each is left unfinished
 * (o.not_run, ERROR "interrupted"), out of the set. Returns LAB_OK. */
lab_status lab_replay_not_started(void *unused, lab_case_record *recs, size_t n);
/* The journal a runner keeps its cases in: opts->how.journal, or when the replay writes a set and has none, one opened
 * here (*owned: the runner closes it, lab_journal_close), set into *copy (a copy of opts the runner then runs on).
 * Errors: lab_journal_open's. */
lab_status lab_replay_journal_begin(const lab_replay_opts *opts, lab_replay_opts *copy, struct lab_journal **owned);

/* The callbacks of lab_isolate's runners over a lab_replay_ctx: a job, its watchdog, its outcome, a worker's start. */
lab_status lab_replay_job(void *vctx, size_t job, lab_case_result *r);
double lab_replay_job_timeout(void *vctx, size_t job);
void lab_replay_done(void *vctx, size_t job, const lab_job_outcome *o);
void lab_replay_worker_init(void *vctx);

/* Whether an incident's plan lets its workers run other incidents' cases too (they run as one pool). */
int lab_replay_poolable(const lab_replay_opts *opts, const lab_sched_plan *p);
/* Execution order of recs[start, end) (one incident) into order[start, end): seed groups, memory bugs last. Returns
 * the group size. */
size_t lab_replay_order(const lab_case_record *recs, size_t start, size_t end, size_t *order);
/* Lays the parts' jobs out as a pool's worker runs into ctx->order[base ..] and ctx->lead[base ..]: *bounds_out
 * (malloc'd, *nranges + 1 entries, relative to base). */
lab_status lab_replay_pool_layout(lab_replay_ctx *ctx, size_t base, const lab_replay_part *parts, size_t np,
                                  int workers, size_t **bounds_out, size_t *nranges);
/* Opens the pool's context gate for its CUDA workers (or says why not). */
void lab_replay_gate_open(lab_replay_ctx *ctx);
/* Stops the replay's MPS daemon before cases (`who`) that must not be its clients. */
void lab_replay_leave_mps(lab_replay_ctx *ctx, const char *who);
/* Jobs [a, b) of the run in progress SKIP without a worker: their cases need more GPUs than the host has. */
void lab_replay_skip_missing(lab_replay_ctx *ctx, size_t a, size_t b, lab_job_outcome *out);
/* Runs once more, alone on their GPUs, the cases of a CUDA replay that ended ERROR with a device cause. */
lab_status lab_replay_rerun(lab_replay_ctx *ctx, lab_job_outcome *out);

/* Seeds replayed for one incident; selected variants of one incident. */
size_t lab_replay_n_seeds(const lab_replay_opts *opts, const lab_incident *inc);
size_t lab_replay_n_variants(const lab_replay_opts *opts, const lab_incident *inc);
/* lab_replay_report.c: prints the per-variant table. */
void lab_replay_table(FILE *f, const lab_verdict_tally *t, size_t nt);
/* The console's words after the table: a case that missed its role, the variants judged on a stated rate, the closing
 * line (its worker count from the machine probe). */
void lab_replay_print_failure(FILE *f, const lab_replay_opts *opts, const lab_case_record *r);
void lab_replay_print_rates(FILE *f, const lab_replay_opts *opts, const lab_verdict_tally *t, size_t nt);
void lab_replay_print_end(FILE *f, const lab_replay_opts *opts, size_t n, double wall, const char *line);
/* The resume of an interrupted replay, incident by incident: from[i] is the lowest seed index of
 * opts->what.incidents[i] with an unfinished case (lab_replay_n_seeds(opts, incident) or more: every case of it
 * finished). */
/* Fills from[0..opts->what.n_incidents) from the records recs[0..n) (an unfinished one: o.not_run). */
void lab_replay_resume_unfinished(const lab_replay_opts *opts, const lab_case_record *recs, size_t n, size_t *from);
/* The commands that replay exactly the seeds from[] leaves, one a line ('\n' after each), into *cmds (malloc'ed, the
 * caller frees it; "" when nothing is left), and how many into *n_cmds (0: nothing is left). The text is as long as
 * the commands are, every command whole: none is cut or left out, however many incidents and however long the folder.
 * An incident every case of which finished (or that has no selected variant) is named by none; the others, in their
 * order, share a command when they resume from the same seed over the same count (when the seeds were not given,
 * those from their start share one that leaves --seeds out: each runs its own default count again); each command
 * writes its own folder: <out>-resumed when there is one, <out>-resumed-K for the K-th of several
 * (lab_command_resume_line). The command line cannot name holes: an incident's cases that finished above its lowest
 * unfinished seed (the pool interleaves) are run again. Errors: LAB_ERR_NOMEM saying the resume commands could not be
 * written (*cmds NULL, *n_cmds 0): the caller reports it rather than a resume that leaves cases out. */
lab_status lab_replay_resume_cmds(const lab_replay_opts *opts, const size_t *from, char **cmds, size_t *n_cmds);
/* Prints the interrupt's lines after the table: "INTERRUPTED by SIG: N of M cases finished and are kept (NOT OK)",
 * then, when a case is left (n_cmds > 0), "resume: LAB replay --resume OUT" for a replay that writes a set (it
 * completes that set in place), else "resume: COMMAND" for each of cmds (one a line, as lab_replay_resume_cmds writes
 * them); none left: "resume: (none: every case finished)". */
void lab_replay_resume_print(FILE *f, const lab_replay_opts *opts, int sig, size_t n, size_t planned, const char *cmds,
                             size_t n_cmds);
/* What summary.json says beyond the tallies: the interrupt (sig != 0: the signal, the cases planned, the resume
 * commands, one a line as lab_replay_resume_cmds writes them; "resume" then the --resume command when the replay writes
 * a set), the replay's own fields ("replay": what it ran; "workers") and opts->how.summary_fields. */
lab_results_summary_extra lab_replay_summary_extra(const lab_replay_opts *opts, int sig, size_t planned,
                                                   const char *resume);

#endif
