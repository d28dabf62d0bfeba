/* lab_window: a replay of more cases than lab_replay_window_at() runs windowed (lab_replay_run hands it to
 * lab_window_run). */
#ifndef LAB_WINDOW_H
#define LAB_WINDOW_H

#include <stddef.h>
#include <stdio.h>

#include "lab_replay.h"

/* A replay of more cases than lab_replay_window_at() runs windowed: its cases a window (lab_replay_window) at a
 * time, every selected variant of a range of seeds of one incident, so that only the window's records and outcomes
 * are held; each window's finished cases go to spool files in the staging folder (in canonical order per variant)
 * and into running tallies (lab_verdict_tally_add); the result set is written from those, identical in form to an
 * unwindowed one (results.jsonl, summary.json, junit.xml, results.tap, the verdict); its plots are drawn from a
 * sample when it holds more than LAB_REPLAY_PLOT_MAX cases (the report says so). Such a run returns *recs NULL and
 * *n_recs 0 (the records are in results.jsonl). $LAB_REPLAY_WINDOW (cases) sets both the threshold and the window
 * (tests). Across windows the scheduler's plan is made per window: a window's pool drains before the next starts. */
#define LAB_REPLAY_WINDOW_AT 65536   /* windowed above this many cases */
#define LAB_REPLAY_WINDOW_CPU 4096   /* cases a window on the CPU (a small parent forks its workers fast) */
#define LAB_REPLAY_WINDOW_CUDA 65536 /* on CUDA: a pool's workers start their contexts once a window */
#define LAB_REPLAY_PLOT_MAX 65536    /* plots of more cases are drawn from a sample */
size_t lab_replay_window_at(void);
size_t lab_replay_window(const lab_replay_opts *opts);
/* lab_replay_run for a replay of `planned` (lab_replay_cases's n) cases, windowed as above: the report, the result set
 * and *verdict as lab_replay_run makes them. Returns as lab_replay_run. */
lab_status lab_window_run(const lab_replay_opts *opts, FILE *report, lab_verdict *verdict, size_t planned);

#endif
