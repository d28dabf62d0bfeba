/* crf_drift: incident 0002, float32 atomic accumulation in the semi-Markov CRF backward, whose order (and so whose bits) changed from run to run: variants, criterion, goldens, training drift. */
#ifndef CRF_DRIFT_H
#define CRF_DRIFT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "lab_err.h"
#include "lab_incident.h"
#include "lab_semicrf.h"

#define CRF_DRIFT_GOLDEN_SEED_A 1u
#define CRF_DRIFT_GOLDEN_SEED_B 2u
/* Run-to-run threshold: two runs of one problem under two schedules may differ by at most this (absolute,
 * on gradients of magnitude 0.1..50): the write-up's float64 target. The deterministic fix must be 0. */
#define CRF_DRIFT_R2R_TOL 1e-10

/* The two schedules of a case: block orders seeded by these. */
uint64_t crf_drift_schedule_seed(uint64_t seed, int which);

typedef struct {
    int T;
    lab_semicrf_err err;       /* run A against the float64 reference */
    double tol;
    lab_semicrf_r2r r2r;       /* run A against run B */
    double r2r_measure;        /* what the criterion compares: float64 accumulators for ACC_F64, else outputs */
    int golden_checked;
    double golden_err;
    int passed;
} crf_drift_verdict;

/* Runs case `seed` under `accum` (padded layout, guards on) with the two schedules, compares. Records
 * metrics/verdict in r (may be NULL); v may be NULL. Errors of the kernel and the goldens. */
lab_status crf_drift_run(uint64_t seed, lab_semicrf_accum accum, const char *golden_dir, lab_case_result *r,
                         crf_drift_verdict *v);

/* Training drift: `steps` SGD steps (lr) of trans and dur on a problem of (seed, T, B = 1), twice, with the
 * schedules of step i seeded differently in the two runs; sep[i] = max |theta_A - theta_B| after step i,
 * nll_a[i] the loss of run A (either may be NULL). *nan_step gets the first step where a parameter is
 * non-finite, or -1. Errors of the kernel. */
lab_status crf_drift_train(uint64_t seed, int T, lab_semicrf_accum accum, int steps, float lr, double *sep,
                           double *nll_a, int *nan_step);

lab_status crf_drift_golden_bless(const char *dir);
lab_status crf_drift_figures(const struct lab_figure_ctx *fx);


extern const lab_incident crf_drift_incident;

#ifdef __cplusplus
}
#endif

#endif
