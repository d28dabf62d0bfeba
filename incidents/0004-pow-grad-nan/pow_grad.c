/* pow_grad: the VJP of y = base^exp as it was (exp/log lowering, NaN for negative bases) and as fixed, plus the workloads and criterion of incident 0004. */
#include "pow_grad.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_fs.h"
#include "lab_golden.h"
#include "lab_metric.h"
#include "lab_rng.h"
#include "lab_tensor.h"

#ifdef LAB_HAVE_CUDA
#include "lab_cuda.h"
#endif


/* ---------------------------------------------------------------------------------------------- */
/* Case storage                                                                                    */

void pow_grad_case_free(pow_grad_case *pc)
{
    free(pc->x);
    free(pc->w);
    free(pc->c);
    free(pc->y);
    free(pc->r);
    free(pc->g);
    free(pc->dx_sq);
    free(pc->dx_rms);
    memset(pc, 0, sizeof *pc);
}

lab_status pow_grad_case_init(pow_grad_case *pc, size_t rows, size_t cols)
{
    memset(pc, 0, sizeof *pc);
    if (rows == 0 || cols == 0 || cols % POW_GRAD_LANES != 0 || (cols & (cols - 1)) != 0 || cols > (1u << 24))
        return lab_err_set(LAB_ERR_ARG, "pow_grad: shape %zu x %zu: need rows > 0 and cols a power of two, "
                           "a multiple of %d", rows, cols, POW_GRAD_LANES);
    if (rows > ((size_t)-1) / sizeof(float) / cols)
        return lab_err_set(LAB_ERR_ARG, "pow_grad: shape %zu x %zu overflows", rows, cols);
    size_t n = rows * cols;
    /* The exponent reaches the kernels as a value read at run time, as in the generated gradient
     * graph: the compiler cannot fold e - 1 into a constant. */
    volatile float exponent = POW_GRAD_EXPONENT;
    pc->rows = rows;
    pc->cols = cols;
    pc->e = exponent;
    pc->eps = POW_GRAD_EPS;
    pc->x = calloc(n, sizeof(float));
    pc->w = calloc(n, sizeof(float));
    pc->y = calloc(n, sizeof(float));
    pc->dx_sq = calloc(n, sizeof(float));
    pc->dx_rms = calloc(n, sizeof(float));
    pc->c = calloc(rows, sizeof(float));
    pc->r = calloc(rows, sizeof(float));
    pc->g = calloc(rows, sizeof(float));
    if (!pc->x || !pc->w || !pc->y || !pc->dx_sq || !pc->dx_rms || !pc->c || !pc->r || !pc->g) {
        pow_grad_case_free(pc);
        return lab_err_set(LAB_ERR_NOMEM, "pow_grad: out of memory for a %zu x %zu case", rows, cols);
    }
    return LAB_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* Inputs: the lab's RNG fills (batched, bit for bit lab_rng_normal / lab_rng_uniform).            */

/* w[i] = pow_grad_upstream_w(lab_rng_uniform(seed, stream, i)) for i < n. */
static void pg_fill_upstream_w(float *w, size_t n, uint64_t seed, uint32_t stream)
{
    lab_rng_fill_uniform(w, n, seed, stream, 0);
    for (size_t i = 0; i < n; ++i) w[i] = pow_grad_upstream_w(w[i]);
}

void pow_grad_inputs(pow_grad_case *pc, uint64_t seed)
{
    size_t n = pc->rows * pc->cols;
    lab_rng_fill_normal(pc->x, n, seed, POW_GRAD_STREAM_X, 0);
    for (size_t i = (pc->rows - 1) * pc->cols; i < n; ++i)
        if (pow_grad_is_padding(i, pc->rows, pc->cols)) pc->x[i] = 0.0f; /* the padding token */
    pg_fill_upstream_w(pc->w, n, seed, POW_GRAD_STREAM_W);
    lab_rng_fill_normal(pc->c, pc->rows, seed, POW_GRAD_STREAM_C, 0);
}

/* ---------------------------------------------------------------------------------------------- */
/* Kernels (float32, as the GPU runs them)                                                         */

float pow_grad_row_sum(const float *y, size_t cols)
{
    float lane[POW_GRAD_LANES];
    for (size_t t = 0; t < POW_GRAD_LANES; ++t) {
        float s = y[t];
        for (size_t j = t + POW_GRAD_LANES; j < cols; j += POW_GRAD_LANES) s = s + y[j];
        lane[t] = s;
    }
    for (size_t st = POW_GRAD_LANES / 2; st > 0; st >>= 1)
        for (size_t t = 0; t < st; ++t) lane[t] = lane[t] + lane[t + st];
    return lane[0];
}

void pow_grad_forward(pow_grad_case *pc)
{
    size_t n = pc->rows * pc->cols;
    float e = pc->e;
    for (size_t i = 0; i < n; ++i) pc->y[i] = powf(pc->x[i], e);
    for (size_t i = 0; i < pc->rows; ++i) {
        float sum = pow_grad_row_sum(pc->y + i * pc->cols, pc->cols);
        pc->g[i] = pow_grad_rms_upstream(pc->c[i], sum, (float)pc->cols, pc->eps, &pc->r[i]);
    }
}

void pow_grad_backward(pow_grad_case *pc, pow_grad_rule rule)
{
    size_t rows = pc->rows, cols = pc->cols, n = rows * cols;
    float e = pc->e;
    const float *x = pc->x, *y = pc->y, *w = pc->w;
    if (rule == POW_GRAD_RULE_FIX) {
        for (size_t i = 0; i < n; ++i) pc->dx_sq[i] = pow_grad_vjp_fix(w[i], x[i], y[i], e);
        for (size_t i = 0; i < rows; ++i)
            for (size_t j = 0; j < cols; ++j) {
                size_t k = i * cols + j;
                pc->dx_rms[k] = pow_grad_vjp_fix(pc->g[i], x[k], y[k], e);
            }
    } else {
        for (size_t i = 0; i < n; ++i) pc->dx_sq[i] = pow_grad_vjp_bug_exp_log(w[i], x[i], e);
        for (size_t i = 0; i < rows; ++i)
            for (size_t j = 0; j < cols; ++j) {
                size_t k = i * cols + j;
                pc->dx_rms[k] = pow_grad_vjp_bug_exp_log(pc->g[i], x[k], e);
            }
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* Float64 reference                                                                               */

void pow_grad_reference(const float *x, const float *w, const float *c, size_t nrows, size_t cols, double e,
                        double eps, double *ref_sq, double *ref_rms)
{
    int sq = e == 2.0; /* x^2 and x^1 of a float are exact in double: no pow() needed */
    for (size_t i = 0; i < nrows; ++i) {
        const float *xr = x + i * cols;
        double sum = 0.0;
        for (size_t j = 0; j < cols; ++j) {
            double xd = xr[j];
            sum += sq ? xd * xd : pow(xd, e);
        }
        double r = sqrt(sum / (double)cols + eps);
        double g = (double)c[i] / (2.0 * r * (double)cols);
        for (size_t j = 0; j < cols; ++j) {
            double xd = xr[j];
            double d = e * (sq ? xd : pow(xd, e - 1.0)); /* dy/dx = e x^(e-1) */
            ref_sq[i * cols + j] = (double)w[i * cols + j] * d;
            ref_rms[i * cols + j] = g * d;
        }
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* Criterion                                                                                       */

/* Max that keeps NaN once seen (a NaN error is never hidden by a later finite one). */
static double pg_max(double acc, double v)
{
    if (isnan(acc) || isnan(v)) return NAN;
    return v > acc ? v : acc;
}

static double pg_ulp(uint64_t u) { return u == UINT64_MAX ? NAN : (double)u; }

void pow_grad_golden_names(uint64_t seed, char *sq, char *rms, size_t len)
{
    snprintf(sq, len, "ref_square_seed%llu.npy", (unsigned long long)seed);
    snprintf(rms, len, "ref_rms_seed%llu.npy", (unsigned long long)seed);
}

static int pg_is_golden_seed(uint64_t seed)
{
    return seed == POW_GRAD_GOLDEN_SEED_A || seed == POW_GRAD_GOLDEN_SEED_B;
}

/* Loads one golden of the seed through the manifest: sha256, dtype and shape verified, and the shape
 * must be [POW_GRAD_GOLDEN_ROWS, cols] of f8. */
static lab_status pg_golden_load(const char *dir, const lab_golden_manifest *m, const char *file, size_t cols,
                                 lab_tensor *t)
{
    const lab_golden_entry *e = lab_golden_find(m, file);
    if (!e)
        return lab_err_set(LAB_ERR_NOTFOUND, "%s/%s: not listed in %s (run `lab golden bless 0004`)", dir, file,
                           LAB_GOLDEN_MANIFEST);
    lab_status st = lab_golden_load(dir, e, t);
    if (st != LAB_OK) return st;
    if (t->dtype != LAB_DT_F8 || t->ndim != 2 || t->shape[0] != POW_GRAD_GOLDEN_ROWS || t->shape[1] != cols) {
        lab_tensor_free(t);
        return lab_err_set(LAB_ERR_MISMATCH, "%s/%s: expected f8 [%d, %zu], manifest says %s with %d dims", dir,
                           file, POW_GRAD_GOLDEN_ROWS, cols, lab_dtype_name(e->dtype), e->ndim);
    }
    return LAB_OK;
}

/* Rows of reference computed at once while comparing. */
#define PG_REF_ROWS 64

lab_status pow_grad_check(const pow_grad_case *pc, uint64_t seed, const char *golden_dir, lab_case_result *r,
                          pow_grad_verdict *vout)
{
    return pow_grad_check_ref(pc, NULL, NULL, seed, golden_dir, r, vout);
}

lab_status pow_grad_check_ref(const pow_grad_case *pc, const double *full_sq, const double *full_rms, uint64_t seed,
                              const char *golden_dir, lab_case_result *r, pow_grad_verdict *vout)
{
    pow_grad_verdict v;
    memset(&v, 0, sizeof v);
    size_t rows = pc->rows, cols = pc->cols, n = rows * cols;
    v.n = n;
    v.golden_max_rel_err = NAN;

    /* At a golden seed, load the goldens first: a bad golden is a harness error, whatever the kernel. */
    lab_tensor gsq = {0}, grms = {0};
    int use_golden = golden_dir && pg_is_golden_seed(seed) && rows >= POW_GRAD_GOLDEN_ROWS;
    if (use_golden) {
        lab_golden_manifest m;
        memset(&m, 0, sizeof m);
        lab_status st = lab_golden_manifest_read(golden_dir, &m);
        if (st != LAB_OK) return st;
        char fsq[64], frms[64];
        pow_grad_golden_names(seed, fsq, frms, sizeof fsq);
        st = pg_golden_load(golden_dir, &m, fsq, cols, &gsq);
        if (st == LAB_OK) st = pg_golden_load(golden_dir, &m, frms, cols, &grms);
        lab_golden_manifest_free(&m);
        if (st != LAB_OK) {
            lab_tensor_free(&gsq);
            return st;
        }
    }

    lab_census csq = lab_metric_census_f32(pc->dx_sq, n), crms = lab_metric_census_f32(pc->dx_rms, n);
    v.nonfinite_sq = csq.nan + csq.pinf + csq.ninf;
    v.nonfinite_rms = crms.nan + crms.pinf + crms.ninf;
    v.nan_sq = csq.nan;
    v.nan_rms = crms.nan;
    v.nonfinite_frac = (double)(v.nonfinite_sq + v.nonfinite_rms) / (2.0 * (double)n);
    for (size_t i = 0; i < n; ++i) v.negative += pc->x[i] < 0.0f;

    double *ref = full_sq ? NULL : malloc(2 * PG_REF_ROWS * cols * sizeof *ref);
    if (!full_sq && !ref) {
        lab_tensor_free(&gsq);
        lab_tensor_free(&grms);
        return lab_err_set(LAB_ERR_NOMEM, "pow_grad: out of memory for the reference");
    }
    for (size_t i = 0; i < rows; i += PG_REF_ROWS) {
        size_t nr = rows - i < PG_REF_ROWS ? rows - i : PG_REF_ROWS, off = i * cols, m = nr * cols;
        const double *ref_sq, *ref_rms;
        if (full_sq) {
            ref_sq = full_sq + off;
            ref_rms = full_rms + off;
        } else {
            pow_grad_reference(pc->x + off, pc->w + off, pc->c + i, nr, cols, (double)pc->e, (double)pc->eps, ref,
                               ref + PG_REF_ROWS * cols);
            ref_sq = ref;
            ref_rms = ref + PG_REF_ROWS * cols;
        }
        v.max_rel_err_square = pg_max(v.max_rel_err_square,
                                      lab_metric_max_rel_err(pc->dx_sq + off, ref_sq, m, POW_GRAD_REL_FLOOR));
        v.max_rel_err_rms = pg_max(v.max_rel_err_rms,
                                   lab_metric_max_rel_err(pc->dx_rms + off, ref_rms, m, POW_GRAD_REL_FLOOR));
        v.max_ulp_square = pg_max(v.max_ulp_square, pg_ulp(lab_metric_max_ulp(pc->dx_sq + off, ref_sq, m)));
        v.max_ulp_rms = pg_max(v.max_ulp_rms, pg_ulp(lab_metric_max_ulp(pc->dx_rms + off, ref_rms, m)));
    }
    free(ref);

    int golden_ok = 1;
    if (use_golden) {
        size_t m = (size_t)POW_GRAD_GOLDEN_ROWS * cols;
        double esq = lab_metric_max_rel_err(pc->dx_sq, gsq.data, m, POW_GRAD_REL_FLOOR);
        double erms = lab_metric_max_rel_err(pc->dx_rms, grms.data, m, POW_GRAD_REL_FLOOR);
        v.golden_checked = 1;
        v.golden_max_rel_err = pg_max(esq, erms);
        golden_ok = esq <= POW_GRAD_TOL_SQUARE && erms <= POW_GRAD_TOL_RMS; /* false for NaN */
        lab_tensor_free(&gsq);
        lab_tensor_free(&grms);
    }

    int finite = v.nonfinite_sq == 0 && v.nonfinite_rms == 0;
    int within = v.max_rel_err_square <= POW_GRAD_TOL_SQUARE && v.max_rel_err_rms <= POW_GRAD_TOL_RMS;
    v.passed = finite && within && golden_ok;

    lab_result_metric(r, "nonfinite_frac", v.nonfinite_frac);
    lab_result_metric(r, "nonfinite_square", (double)v.nonfinite_sq);
    lab_result_metric(r, "nonfinite_rms", (double)v.nonfinite_rms);
    lab_result_metric(r, "negative_bases", (double)v.negative);
    lab_result_metric(r, "max_rel_err_square", v.max_rel_err_square);
    lab_result_metric(r, "max_rel_err_rms", v.max_rel_err_rms);
    lab_result_metric(r, "max_ulp_square", v.max_ulp_square);
    lab_result_metric(r, "max_ulp_rms", v.max_ulp_rms);
    if (v.golden_checked) lab_result_metric(r, "golden_max_rel_err", v.golden_max_rel_err);

    if (!finite) {
        if (v.nan_sq == v.negative && v.nan_rms == v.negative && v.nonfinite_sq == v.nan_sq &&
            v.nonfinite_rms == v.nan_rms)
            lab_result_verdict(r, 0, "%zu of %zu gradients NaN in each workload (every negative base)", v.nan_sq, n);
        else
            lab_result_verdict(r, 0, "non-finite gradients: square %zu (%zu NaN), rms %zu (%zu NaN) of %zu; "
                               "%zu negative bases", v.nonfinite_sq, v.nan_sq, v.nonfinite_rms, v.nan_rms, n,
                               v.negative);
    } else if (!within) {
        lab_result_verdict(r, 0, "max rel err square %.3g (tol %.3g), rms %.3g (tol %.3g): over tolerance",
                           v.max_rel_err_square, POW_GRAD_TOL_SQUARE, v.max_rel_err_rms, POW_GRAD_TOL_RMS);
    } else if (!golden_ok) {
        lab_result_verdict(r, 0, "first %d rows off the golden of seed %llu: max rel err %.3g", POW_GRAD_GOLDEN_ROWS,
                           (unsigned long long)seed, v.golden_max_rel_err);
    } else {
        lab_result_verdict(r, 1, "no NaN/Inf; max rel err square %.3g (tol %.3g), rms %.3g (tol %.3g)%s",
                           v.max_rel_err_square, POW_GRAD_TOL_SQUARE, v.max_rel_err_rms, POW_GRAD_TOL_RMS,
                           v.golden_checked ? "; golden rows agree" : "");
    }
    if (vout) *vout = v;
    return LAB_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* Goldens                                                                                         */

lab_status pow_grad_golden_bless(const char *dir)
{
    lab_status st = lab_fs_mkdirs(dir);
    if (st != LAB_OK) return st;
    const size_t rows = POW_GRAD_GOLDEN_ROWS, cols = POW_GRAD_COLS, n = rows * cols;
    const uint64_t seeds[2] = {POW_GRAD_GOLDEN_SEED_A, POW_GRAD_GOLDEN_SEED_B};
    lab_golden_manifest m;
    memset(&m, 0, sizeof m);
    snprintf(m.incident, sizeof m.incident, "%s", LAB_INCIDENT_ID);
    float *x = malloc(n * sizeof *x), *w = malloc(n * sizeof *w), *c = malloc(rows * sizeof *c);
    lab_tensor tsq = {0}, trms = {0};
    size_t shape[2] = {rows, cols};
    if (!x || !w || !c) {
        st = lab_err_set(LAB_ERR_NOMEM, "%s: out of memory blessing goldens", dir);
        goto done;
    }
    if ((st = lab_tensor_create(&tsq, LAB_DT_F8, 2, shape)) != LAB_OK) goto done;
    if ((st = lab_tensor_create(&trms, LAB_DT_F8, 2, shape)) != LAB_OK) goto done;
    for (int k = 0; k < 2; ++k) {
        /* The first rows of the full case: same (seed, stream, index) as pow_grad_inputs, and rows are
         * independent (the RMS is per row), so these rows equal those of the full-size reference. */
        lab_rng_fill_normal(x, n, seeds[k], POW_GRAD_STREAM_X, 0);
        pg_fill_upstream_w(w, n, seeds[k], POW_GRAD_STREAM_W);
        lab_rng_fill_normal(c, rows, seeds[k], POW_GRAD_STREAM_C, 0);
        pow_grad_reference(x, w, c, rows, cols, (double)POW_GRAD_EXPONENT, (double)POW_GRAD_EPS, tsq.data,
                           trms.data);
        char fsq[64], frms[64];
        pow_grad_golden_names(seeds[k], fsq, frms, sizeof fsq);
        st = lab_golden_add(&m, dir, fsq, &tsq, LAB_DT_F8, seeds[k],
                            "float64 reference pow_grad_reference v1: w*e*x^(e-1), rows 0-63 of 4096x1024");
        if (st == LAB_OK)
            st = lab_golden_add(&m, dir, frms, &trms, LAB_DT_F8, seeds[k],
                                "float64 reference pow_grad_reference v1: c*e*x^(e-1)/(2rn), rows 0-63 of 4096x1024");
        if (st != LAB_OK) goto done;
    }
    st = lab_golden_manifest_write(dir, &m);
done:
    free(x);
    free(w);
    free(c);
    lab_tensor_free(&tsq);
    lab_tensor_free(&trms);
    lab_golden_manifest_free(&m);
    return st;
}

/* ---------------------------------------------------------------------------------------------- */
/* The seed's group: inputs, forward and float64 reference, shared by both variants                */

typedef struct {
    pow_grad_case in;      /* inputs and forward on the CPU (dx buffers unused) */
    double *ref_sq, *ref_rms;
} pow_grad_group;

static void pg_teardown(void *vg)
{
    pow_grad_group *g = vg;
    if (!g) return;
    pow_grad_case_free(&g->in);
    free(g->ref_sq);
    free(g->ref_rms);
    free(g);
}

/* Inputs from the lab RNG, the forward pass, and the float64 reference of both workloads (the reference
 * needs only the inputs: the same on both backends). */
static lab_status pg_setup(const lab_case *c, void **out)
{
    pow_grad_group *g = calloc(1, sizeof *g);
    if (!g) return lab_err_set(LAB_ERR_NOMEM, "pow_grad: out of memory for a seed group");
    lab_status st = pow_grad_case_init(&g->in, POW_GRAD_ROWS, POW_GRAD_COLS);
    size_t n = (size_t)POW_GRAD_ROWS * POW_GRAD_COLS;
    if (st == LAB_OK && (!(g->ref_sq = malloc(n * sizeof(double))) || !(g->ref_rms = malloc(n * sizeof(double)))))
        st = lab_err_set(LAB_ERR_NOMEM, "pow_grad: out of memory for the reference");
    if (st != LAB_OK) {
        pg_teardown(g);
        return st;
    }
    pow_grad_inputs(&g->in, c->seed);
    pow_grad_forward(&g->in);
    pow_grad_reference(g->in.x, g->in.w, g->in.c, g->in.rows, g->in.cols, (double)g->in.e, (double)g->in.eps,
                       g->ref_sq, g->ref_rms);
    *out = g;
    return LAB_OK;
}

/* A case over the group's inputs with its own gradient buffers (the shared ones are not written). */
static lab_status pg_case_over(const pow_grad_group *g, pow_grad_case *pc)
{
    *pc = g->in;
    size_t n = pc->rows * pc->cols;
    pc->dx_sq = malloc(n * sizeof(float));
    pc->dx_rms = malloc(n * sizeof(float));
    if (pc->dx_sq && pc->dx_rms) return LAB_OK;
    free(pc->dx_sq);
    free(pc->dx_rms);
    return lab_err_set(LAB_ERR_NOMEM, "pow_grad: out of memory for the gradients");
}

static lab_status pg_run_cpu(const lab_case *c, lab_case_result *r)
{
    const pow_grad_group *g = c->group;
    pow_grad_case pc;
    lab_status st = pg_case_over(g, &pc);
    if (st != LAB_OK) return st;
    pow_grad_backward(&pc, (pow_grad_rule)c->variant->param);
    st = pow_grad_check_ref(&pc, g->ref_sq, g->ref_rms, c->seed, c->golden_dir, r, NULL);
    free(pc.dx_sq);
    free(pc.dx_rms);
    return st;
}

#ifdef LAB_HAVE_CUDA
static size_t pg_count_mismatch(const float *a, const float *b, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) k += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return k;
}

/* Cross-backend agreement: the largest relative difference between the GPU's and the CPU kernel's
 * gradients (floor FLT_MIN; elements non-finite in both, as the bug's NaNs are, agree), its element in
 * *worst, and in *class_mismatch the elements finite on one backend and not on the other. */
static double pg_cross_diff(const float *gpu, const float *cpu, size_t n, size_t *worst, size_t *class_mismatch)
{
    double m = 0;
    for (size_t i = 0; i < n; ++i) {
        int fg = isfinite(gpu[i]), fc = isfinite(cpu[i]);
        if (fg != fc) *class_mismatch += 1;
        if (!fg || !fc) continue;
        double d = fabs((double)gpu[i] - (double)cpu[i]) / fmax(fabs((double)cpu[i]), POW_GRAD_REL_FLOOR);
        if (d > m) {
            m = d;
            *worst = i;
        }
    }
    return m;
}

static lab_status pg_run_cuda(const lab_case *c, lab_case_result *r)
{
    const pow_grad_group *g = c->group;
    pow_grad_rule rule = (pow_grad_rule)c->variant->param;
    lab_cuda_info info;
    lab_status st = lab_cuda_device_info(0, &info);
    if (st != LAB_OK) return st;

    pow_grad_case gpu, cpu;
    if ((st = pow_grad_case_init(&gpu, POW_GRAD_ROWS, POW_GRAD_COLS)) != LAB_OK) return st;
    if ((st = pg_case_over(g, &cpu)) != LAB_OK) {
        pow_grad_case_free(&gpu);
        return st;
    }
    if ((st = pow_grad_cuda_case(&gpu, c->seed, rule)) != LAB_OK) goto done;
    /* The GPU made its inputs with the lab's RNG: they must be the CPU's (the group's), bit for bit. */
    size_t n = gpu.rows * gpu.cols;
    size_t mismatch = pg_count_mismatch(gpu.x, cpu.x, n) + pg_count_mismatch(gpu.w, cpu.w, n) +
                      pg_count_mismatch(gpu.c, cpu.c, gpu.rows);
    /* The reference comes from the CPU-generated inputs; the GPU's gradients are judged against it. */
    memcpy(gpu.x, cpu.x, n * sizeof(float));
    memcpy(gpu.w, cpu.w, n * sizeof(float));
    memcpy(gpu.c, cpu.c, gpu.rows * sizeof(float));
    st = pow_grad_check_ref(&gpu, g->ref_sq, g->ref_rms, c->seed, c->golden_dir, r, NULL);
    lab_result_metric(r, "input_mismatch", (double)mismatch);
    if (st == LAB_OK && mismatch > 0)
        lab_result_verdict(r, 0, "%zu GPU-generated inputs differ from the CPU's (x, w, c): RNG not shared on %s",
                           mismatch, info.name);
    /* At the cross-check seeds (lab_case_xcheck), the CPU kernel on the same inputs (the group's forward): the
     * fix must agree across backends within its tolerance. */
    size_t w_sq = 0, w_rms = 0, cls = 0;
    double d_sq = 0.0, d_rms = 0.0;
    int xcheck = lab_case_xcheck(c);
    if (xcheck) {
        pow_grad_backward(&cpu, rule);
        d_sq = pg_cross_diff(gpu.dx_sq, cpu.dx_sq, n, &w_sq, &cls);
        d_rms = pg_cross_diff(gpu.dx_rms, cpu.dx_rms, n, &w_rms, &cls);
        lab_result_metric(r, "cpu_gpu_max_rel_diff", fmax(d_sq, d_rms));
        lab_result_metric(r, "cpu_gpu_class_mismatch", (double)cls);
    }
    int disagree = xcheck && rule == POW_GRAD_RULE_FIX && (d_sq > POW_GRAD_TOL_SQUARE || d_rms > POW_GRAD_TOL_RMS || cls > 0);
    if (st == LAB_OK && mismatch == 0 && disagree) {
        int sq = d_sq / POW_GRAD_TOL_SQUARE >= d_rms / POW_GRAD_TOL_RMS;
        size_t i = sq ? w_sq : w_rms;
        lab_result_verdict(r, 0, "CPU and GPU disagree: %s[%zu] gpu %.9g cpu %.9g (rel %.3g > tol %.3g), %zu finite on one only",
                           sq ? "dx_square" : "dx_rms", i, sq ? gpu.dx_sq[i] : gpu.dx_rms[i], sq ? cpu.dx_sq[i] : cpu.dx_rms[i],
                           sq ? d_sq : d_rms, sq ? POW_GRAD_TOL_SQUARE : POW_GRAD_TOL_RMS, cls);
    } else if (st == LAB_OK && r->passed) {
        char detail[sizeof r->detail];
        snprintf(detail, sizeof detail, "%s", r->detail);
        lab_result_verdict(r, 1, "%s [%s sm_%d%d]", detail, info.name, info.cc_major, info.cc_minor);
    }
done:
    pow_grad_case_free(&gpu);
    free(cpu.dx_sq);
    free(cpu.dx_rms);
    return st;
}
#endif

static const lab_variant pow_grad_variants[] = {
    {.name = "fix", .role = LAB_ROLE_FIX, .param = POW_GRAD_RULE_FIX,
     .what = "d/dbase = g * e * (y / base), y/base selected as 0 where base == 0"},
    {.name = "bug-exp-log", .role = LAB_ROLE_BUG, .param = POW_GRAD_RULE_BUG_EXP_LOG, .detect = LAB_DETECT_FAIL,
     .what = "d/dbase = g * e * pow(base, e - 1), pow with a runtime exponent lowered as exp((e - 1) * log(base))"},
};

/* What the criterion compares, for plots (lab_metric_spec): the first separates bug and fix. */
static const lab_metric_spec pg_metric_specs[] = {
    {"nonfinite_frac", 0, 1, NULL, "share of NaN gradients: the bug's (every negative base) in the NaN band or above 0, the fix on the 0 floor"},
    {"max_rel_err_square", POW_GRAD_TOL_SQUARE, 1, NULL, "x^2 gradient error against its rounding bound: below 1 passes"},
    {"max_rel_err_rms", POW_GRAD_TOL_RMS, 1, NULL, "rms-norm gradient error against its rounding bound: below 1 passes"},
};

/* The scheduler's rough cost of a case (lab_incident.seed_cost): the same for every seed; 0.045 s per case in the loaded 1000-seed H100 replay of 2026-11-24. */
static double pg_seed_cost(uint64_t seed)
{
    (void)seed;
    return 0.045;
}

const lab_incident pow_grad_incident = {
    .id = LAB_INCIDENT_ID,
    .title = "pow() gradient NaN for negative bases",
    .variants = pow_grad_variants,
    .n_variants = (int)(sizeof pow_grad_variants / sizeof pow_grad_variants[0]),
    .setup = pg_setup,
    .teardown = pg_teardown,
    .run_cpu = pg_run_cpu,
    .run_cuda = LAB_IF_CUDA(pg_run_cuda),
    .timeout_s = 60,
    .golden_bless = pow_grad_golden_bless,
    .seed_cost = pg_seed_cost,
    .plots = {
        .metric = "nonfinite_frac",
        .drift_metric = "max_rel_err_rms",
        .specs = pg_metric_specs,
        .n_specs = (int)(sizeof pg_metric_specs / sizeof pg_metric_specs[0]),
    },
};

LAB_INCIDENT_REGISTER(pow_grad_incident);
