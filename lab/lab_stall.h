/* lab_stall: a test's way to hold a command in one of its phases, so that an interrupt can be delivered there
 * deterministically. Inert unless the environment variable LAB_STALL names the phase. */
#ifndef LAB_STALL_H
#define LAB_STALL_H

#ifdef __cplusplus
extern "C" {
#endif

/* The phases a command passes through, as LAB_STALL names them. */
#define LAB_STALL_PLANNING   "planning"    /* lab replay: the cases and their order, before any case starts */
#define LAB_STALL_COLLECTING "collecting"  /* lab replay: every case ended, before the tally and the verdict */
#define LAB_STALL_WRITING    "writing"     /* lab replay: results, summary, JUnit, TAP into the staged set */
#define LAB_STALL_PLOTTING   "plotting"    /* lab replay, lab plots, lab compare --out: the figures */
#define LAB_STALL_HTML       "html"        /* lab report: report.json and index.html */
#define LAB_STALL_READING    "reading"     /* lab report --from, lab plots, lab compare, lab trend: reading the result
                                              set (results.jsonl, streamed by lab_resread) or the reports */

/* When LAB_STALL equals phase: says so on stderr ("lab: stalled in PHASE (LAB_STALL)") and waits, in 10 ms steps,
 * until an interrupt caught by lab_isolate_catch_signals arrives (a process that has not installed the handlers
 * dies of the signal meanwhile) or 60 s pass; then returns. Otherwise returns at once. Never fails. */
void lab_stall_point(const char *phase);

#ifdef __cplusplus
}
#endif

#endif
