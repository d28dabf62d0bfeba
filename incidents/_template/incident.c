/* NNNN-slug: the reproducer (bug variants, frozen as they were), the fixed kernel and the criterion. */
#include <math.h>
#include <stdlib.h>

#include "lab_incident.h"
#include "lab_metric.h"
#include "lab_rng.h"

/* Streams of the case's Philox inputs: fixed numbers, so CPU and GPU draw the same tensors. */
enum { NNNN_STREAM_X = 1 };
/* Tolerances: named, with the derivation in README.md. */
#define NNNN_TOL 1e-6

/* Runs one case: inputs from (seed, stream, index), the kernel of `fixed` or the bug, a float64
 * reference, then the criterion. Returns an error status only when the harness fails. */
static lab_status nnnn_run(const lab_case *c, lab_case_result *r, int fixed)
{
    size_t n = 1 << 20;
    float *x = malloc(n * sizeof *x), *out = malloc(n * sizeof *out);
    double *ref = malloc(n * sizeof *ref);
    if (!x || !out || !ref) {
        free(x), free(out), free(ref);
        return lab_err_set(LAB_ERR_NOMEM, "NNNN: out of memory");
    }
    lab_rng_fill_normal(x, n, c->seed, NNNN_STREAM_X, 0);
    for (size_t i = 0; i < n; ++i) {
        out[i] = fixed ? x[i] : x[i]; /* the kernel under test goes here */
        ref[i] = (double)x[i];        /* the float64 reference goes here */
    }
    lab_census cen = lab_metric_census_f32(out, n);
    double err = lab_metric_max_rel_err(out, ref, n, 1e-30);
    lab_result_metric(r, "max_rel_err", err);
    int pass = cen.nan + cen.pinf + cen.ninf == 0 && err <= NNNN_TOL;
    lab_result_verdict(r, pass, "max_rel_err %.3g (tolerance %.3g)", err, NNNN_TOL);
    free(x), free(out), free(ref);
    return LAB_OK;
}

static lab_status nnnn_fix(const lab_case *c, lab_case_result *r) { return nnnn_run(c, r, 1); }
static lab_status nnnn_bug(const lab_case *c, lab_case_result *r) { return nnnn_run(c, r, 0); }

static const lab_variant nnnn_variants[] = {
    {"fix", LAB_ROLE_FIX, "the production kernel", nnnn_fix, NULL, 0},
    {"bug-what", LAB_ROLE_BUG, "the kernel as it was", nnnn_bug, NULL, 0},
};

static const lab_incident nnnn_incident = {
    .id = "NNNN-slug",
    .title = "what broke",
    .summary = "Two or three sentences for `lab explain`.",
    .variants = nnnn_variants,
    .n_variants = 2,
    .plot_metric = "max_rel_err",
    .plot_log = 1,
    .timeout_s = 60,
    .golden_bless = NULL, /* required before the incident lands: see CONTRIBUTING.md */
};
LAB_INCIDENT_REGISTER(nnnn_incident);
