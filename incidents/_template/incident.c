/* NNNN-slug: the reproducer (bug variants, frozen as they were), the fixed kernel and the criterion. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lab_fs.h"
#include "lab_golden.h"
#include "lab_incident.h"
#include "lab_metric.h"
#include "lab_rng.h"
#include "lab_tensor.h"

/* LAB_INCIDENT_ID, the id as a string ("NNNN-slug"), comes from the build (incident.mk): written once. */
/* Streams of the case's Philox inputs: fixed numbers, so CPU and GPU draw the same tensors. */
enum { NNNN_STREAM_X = 1 };
/* Tolerances: named, with the derivation in README.md. */
#define NNNN_TOL 1e-6
#define NNNN_N (1u << 16)
/* What a variant's param selects. */
enum { NNNN_KERNEL_FIX, NNNN_KERNEL_BUG };

/* The seed's group, made once and shared by every variant: the inputs and the float64 reference. */
typedef struct {
    float *x;
    double *ref;
} nnnn_group;

static void nnnn_teardown(void *vg)
{
    nnnn_group *g = vg;
    if (!g) return;
    free(g->x);
    free(g->ref);
    free(g);
}

static lab_status nnnn_setup(const lab_case *c, void **out)
{
    nnnn_group *g = calloc(1, sizeof *g);
    if (!g || !(g->x = malloc(NNNN_N * sizeof *g->x)) || !(g->ref = malloc(NNNN_N * sizeof *g->ref))) {
        nnnn_teardown(g);
        return lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": out of memory for seed %llu", (unsigned long long)c->seed);
    }
    lab_rng_fill_normal(g->x, NNNN_N, c->seed, NNNN_STREAM_X, 0);
    for (size_t i = 0; i < NNNN_N; ++i) g->ref[i] = (double)g->x[i]; /* the float64 reference goes here */
    *out = g;
    return LAB_OK;
}

/* The one judge: census and error against the reference; records metrics and the verdict. */
static void nnnn_judge(const float *out, const double *ref, size_t n, lab_case_result *r)
{
    lab_census cen = lab_metric_census_f32(out, n);
    double err = lab_metric_max_rel_err(out, ref, n, 1e-30);
    lab_result_metric(r, "max_rel_err", err);
    lab_result_metric(r, "nonfinite", (double)(cen.nan + cen.pinf + cen.ninf));
    int pass = cen.nan + cen.pinf + cen.ninf == 0 && err <= NNNN_TOL;
    lab_result_verdict(r, pass, "max_rel_err %.3g (tolerance %.3g)", err, NNNN_TOL);
}

/* The variant's kernel (param) on the group's inputs, then the judge. */
static lab_status nnnn_run_cpu(const lab_case *c, lab_case_result *r)
{
    const nnnn_group *g = c->group;
    float *out = malloc(NNNN_N * sizeof *out);
    if (!out) return lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": out of memory");
    for (size_t i = 0; i < NNNN_N; ++i) /* the kernels under test go here */
        out[i] = c->variant->param == NNNN_KERNEL_FIX ? g->x[i] : g->x[i] * (1.0f + 1e-3f);
    nnnn_judge(out, g->ref, NNNN_N, r);
    free(out);
    return LAB_OK;
}

/* Goldens from the float64 reference only (`make golden`): the first 64 values of seeds 1 and 2. */
static lab_status nnnn_golden_bless(const char *dir)
{
    lab_status st = lab_fs_mkdirs(dir);
    if (st != LAB_OK) return st;
    lab_golden_manifest m;
    memset(&m, 0, sizeof m);
    snprintf(m.incident, sizeof m.incident, "%s", LAB_INCIDENT_ID);
    size_t shape[1] = {64};
    lab_tensor t = {0};
    if ((st = lab_tensor_create(&t, LAB_DT_F8, 1, shape)) != LAB_OK) return st;
    for (uint64_t seed = 1; seed <= 2 && st == LAB_OK; ++seed) {
        float x[64];
        lab_rng_fill_normal(x, 64, seed, NNNN_STREAM_X, 0);
        for (size_t i = 0; i < 64; ++i) ((double *)t.data)[i] = (double)x[i];
        char name[64];
        snprintf(name, sizeof name, "ref_seed%llu.npy", (unsigned long long)seed);
        st = lab_golden_add(&m, dir, name, &t, LAB_DT_F8, seed, "float64 reference v1: first 64 values");
    }
    if (st == LAB_OK) st = lab_golden_manifest_write(dir, &m);
    lab_tensor_free(&t);
    lab_golden_manifest_free(&m);
    return st;
}

static const lab_variant nnnn_variants[] = {
    {.name = "fix", .role = LAB_ROLE_FIX, .param = NNNN_KERNEL_FIX, .what = "the production kernel"},
    {.name = "bug-what", .role = LAB_ROLE_BUG, .param = NNNN_KERNEL_BUG, .detect = LAB_DETECT_FAIL,
     .what = "the kernel as it was"},
};

/* What the criterion compares, for plots and `lab compare`: the first separates bug and fix. */
static const lab_metric_spec nnnn_metric_specs[] = {
    {"max_rel_err", NNNN_TOL, 1, NULL, "the fix stays under the tolerance, the bug above it"},
    {"nonfinite", 0, 1, NULL, "non-finite outputs: none for the fix"},
};

const lab_incident nnnn_incident = {
    .id = LAB_INCIDENT_ID,
    .title = "what broke",
    .variants = nnnn_variants,
    .n_variants = (int)(sizeof nnnn_variants / sizeof nnnn_variants[0]),
    .setup = nnnn_setup,
    .teardown = nnnn_teardown,
    .run_cpu = nnnn_run_cpu,
    /* A GPU incident adds its CUDA run in a .cu file and names it as data, NULL in a build without CUDA:
     * .run_cuda = LAB_IF_CUDA(nnnn_run_cuda), and so .bench, .study and .batch.run_cuda. */
    .timeout_s = 60,
    .golden_bless = nnnn_golden_bless,
    .plots = {
        .metric = "max_rel_err",
        .log = 1,
        .specs = nnnn_metric_specs,
        .n_specs = (int)(sizeof nnnn_metric_specs / sizeof nnnn_metric_specs[0]),
    },
};
LAB_INCIDENT_REGISTER(nnnn_incident);
