/* lab_replay: runs (incident, variant, seed) cases in isolation on all cores and reports them. */
#ifndef LAB_REPLAY_H
#define LAB_REPLAY_H

#include <stdint.h>
#include <stdio.h>

#include "lab_incident.h"
#include "lab_results.h"

typedef struct {
    const lab_incident *const *incidents;  /* the incidents to replay */
    size_t n_incidents;
    const char *variant;                   /* only this variant (NULL: all) */
    const uint64_t *seeds;
    size_t n_seeds;
    int seeds_default;                     /* seeds were not given: an incident's default_seeds caps them */
    lab_backend backend;
    int jobs;                              /* parallel cases (<= 0: all cores) */
    double timeout_s;                      /* watchdog per case when the incident sets none */
    const char *out_dir;                   /* results, summary, plots; NULL writes no files */
    int tap;                               /* also write results.tap */
    int plots;                             /* render plots after the run */
    int progress;                          /* live progress line on stderr */
    const char *lab_bin;                   /* how to name the lab in replay commands */
    const char *root;                      /* repository root (goldens, plot scripts) */
    const char *sanitize;                  /* compute-sanitizer tool every case runs under (lab_sanitize.h);
                                              NULL: none */
} lab_replay_opts;

/* Runs every selected case, prints the per-incident table and the replay command of every case that
 * failed its role to `report`, writes the output files when out_dir is set. *ok is 1 when every fix
 * passed and every bug was detected. Returns an error only when the harness itself failed (output
 * directory not writable, fork failure); the error names the path or call. On success *recs (malloc'ed,
 * caller frees) and *n_recs hold the case records. */
lab_status lab_replay_run(const lab_replay_opts *opts, FILE *report, int *ok, lab_case_record **recs, size_t *n_recs);

/* Runs one case in the current process (no isolation), as a child of the replay does. Exposed for
 * `lab explain` tests and for debugging under gdb. */
lab_status lab_replay_case(const lab_case *c, lab_case_result *r);

#endif
