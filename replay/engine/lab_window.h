/* lab_window: a replay of more cases than lab_replay_window_at() runs windowed (lab_replay_run hands it to
 * lab_window_run). */
#ifndef LAB_WINDOW_H
#define LAB_WINDOW_H

#include <stddef.h>
#include <stdio.h>

#include "lab_replay.h"

/* A replay of more cases than lab_replay_window_at() runs windowed: its cases a window (lab_replay_window) at a
 * time, so that only the window's records and outcomes are held. A window holds the next incidents that fit in it
 * whole, run together as one replay (one pool, whose CUDA workers make their contexts once for all of them), or else
 * every selected variant of a range of seeds of one incident; with LAB_PHASES each window marks "window starts".
 * Each window's finished cases go to spool files in the staging folder (in canonical order per variant) and into
 * running tallies (lab_verdict_tally_add); the result set is written from those, identical in form to an
 * unwindowed one (results.jsonl, summary.json, junit.xml, results.tap, the verdict); its plots are drawn from a
 * sample when it holds more than LAB_REPLAY_PLOT_MAX cases (the report says so). Such a run returns *recs NULL and
 * *n_recs 0 (the records are in results.jsonl). $LAB_REPLAY_WINDOW (cases) sets both the threshold and the window
 * (tests). Across windows the scheduler's plan is made per window: a window's pool drains before the next starts.
 * What a kill -9 cannot take: every case goes to the replay's journal as it finishes (opts->how.journal, lab_journal.h:
 * the set is staged in the journal's folder), and `lab replay --resume` walks the same windows, running in each only
 * the cases that had not finished (opts->how.carry, lab_resume.h); once the run is over (an interrupt, a failed
 * window) a resume still walks every window without starting a case, so that its set holds every case it was given.
 * An interrupt's resume names only what is left (lab_replay_resume_cmds, underneath the one --resume command): the
 * incident it stopped from its lowest unfinished seed, the later ones from their first, never an incident that
 * finished. */
#define LAB_REPLAY_WINDOW_AT 65536   /* windowed above this many cases */
#define LAB_REPLAY_WINDOW_CPU 4096   /* cases a window on the CPU (a small parent forks its workers fast) */
#define LAB_REPLAY_WINDOW_CUDA 65536 /* on CUDA: a pool's workers start their contexts once a window */
#define LAB_REPLAY_PLOT_MAX 65536    /* plots of more cases are drawn from a sample */
size_t lab_replay_window_at(void);
size_t lab_replay_window(const lab_replay_opts *opts);
/* lab_replay_run for a replay of `planned` (lab_replay_cases's n) cases, windowed as above: the report, the result set
 * and *verdict as lab_replay_run makes them. Returns as lab_replay_run. */
lab_status lab_window_run(const lab_replay_opts *opts, FILE *report, lab_verdict *verdict, size_t planned);

/* How a windowed run's windows are run when not by this process alone (an `--mpi` replay, lab_mpi): every process
 * walks the same windows in the same order, each made of the same records. */
typedef struct {
    /* Runs one window's records recs[0..n) (every process gets the same), filling their outcomes (o.not_run for a
     * case that did not finish); a status other than LAB_OK stops the run after this window, as a failed harness. */
    lab_status (*run)(void *ctx, lab_case_record *recs, size_t n);
    /* Called after the last window run (or the first that stopped the run), before the verdict: returns nonzero when
     * the run must count as NOT OK beyond its cases (an MPI rank failed). NULL: never. */
    int (*finish)(void *ctx);
    /* Nonzero: no further window starts (another process ended the run). NULL: never. */
    int (*stop)(void *ctx);
    void *ctx;
    int drive_only; /* 1: run the windows and nothing else: no report, no file, *verdict untouched (a rank other than
                       the one that writes the set) */
} lab_window_runner;

/* lab_window_run with every window run by runner->run instead of this process's own execution (no progress line:
 * opts->how.progress is ignored for the windows). Returns as lab_window_run; with drive_only, runner->run's first
 * failure (LAB_OK when none). */
lab_status lab_window_run_by(const lab_replay_opts *opts, FILE *report, lab_verdict *verdict, size_t planned,
                             const lab_window_runner *runner);

#endif
