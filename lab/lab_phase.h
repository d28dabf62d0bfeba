/* lab_phase: where a lab command's time goes before, around and after its cases, on request. */
#ifndef LAB_PHASE_H
#define LAB_PHASE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Why: on a host of several GPUs a replay's command spent 3.7 s outside the replay's own clock where one GPU spent
 * 1.4 s (docs/performance.md): the device probe, the MPS daemons and their probes, the end. The case timeline
 * (tools/measure/case_timeline.py) sees only the cases; these marks see the rest.
 *
 * Contract: with LAB_PHASES set and not empty when lab_phase_begin runs (first thing in main), each lab_phase(what)
 * writes one line "lab phase +S.SSS s [pid P]: what" to stderr, S the seconds since lab_phase_begin, and the process
 * marks "exit" when it ends through exit(); a child forked later marks on the same clock with its own pid. Without it
 * every call is a no-op of one branch. Marks are single writes of one line, so lines of several processes do not
 * interleave. */
void lab_phase_begin(void);
void lab_phase(const char *what);

#ifdef __cplusplus
}
#endif

#endif
