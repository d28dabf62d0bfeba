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

#define POW_GRAD_ID "0004-pow-grad-nan"

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
/* Inputs: lab_rng_normal, bit for bit, a Philox block and a batch at a time.                      */

/* lab_rng_normal spends most of its time on work that does not depend on the value: the Taylor
 * coefficient tables of its cosine (a chain of divisions per call), 1/k of its log series, and a full
 * Philox call for each of its two words, where one call yields the four words of two normals. The code
 * below computes the same IEEE operations in the same order on the same operands, with the tables made
 * once per batch, both normals of a Philox block from one call, and the series run across a batch so
 * that independent values overlap. Branches on random data became exact bit operations (scaling by 2
 * and negation are exact). The tests and the CUDA cross-check (input_mismatch) compare it with
 * lab_rng_normal bit for bit. */

#define PG_BATCH 256 /* normals per batch (even) */

/* The coefficient tables of lab_rng_cos2pi_exact and lab_rng_log_exact, made by the same operations. */
typedef struct {
    double cos_coef[11], sin_coef[11]; /* sg * fc[k], sg * fs[k]: sg = -1 for odd k, an exact negation */
    double inv_odd[26];                /* 1.0 / k for odd k */
} pg_tables;

static void pg_tables_make(pg_tables *tb)
{
    double fc[11], fs[11];
    fc[0] = 1.0;
    fs[0] = 1.0;
    for (int k = 1; k <= 10; ++k) {
        fc[k] = fc[k - 1] / (double)((2 * k - 1) * (2 * k));
        fs[k] = fs[k - 1] / (double)((2 * k) * (2 * k + 1));
    }
    for (int k = 0; k <= 10; ++k) {
        tb->cos_coef[k] = (k & 1) ? -fc[k] : fc[k];
        tb->sin_coef[k] = (k & 1) ? -fs[k] : fs[k];
    }
    for (int k = 1; k <= 25; k += 2) tb->inv_odd[k] = 1.0 / k;
}

static inline double pg_bits_to_double(uint64_t b)
{
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

static inline uint64_t pg_double_to_bits(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

void pow_grad_normal_from_words(const uint32_t *a, const uint32_t *b, size_t n, float *out)
{
    pg_tables tb;
    pg_tables_make(&tb);
    double u2[PG_BATCH], xs[PG_BATCH], ev[PG_BATCH], acc[PG_BATCH], sq[PG_BATCH], acc2[PG_BATCH], rad[PG_BATCH];
    int quad[PG_BATCH];
    uint32_t pa[PG_BATCH], pb[PG_BATCH];
    for (size_t base = 0; base < n; base += PG_BATCH) {
        /* Every loop runs over a whole batch (a short last batch is padded with zero words), so the
         * compiler sees a fixed trip count and vectorizes; only m values are stored. */
        size_t m = n - base < PG_BATCH ? n - base : PG_BATCH;
        for (size_t i = 0; i < PG_BATCH; ++i) {
            pa[i] = i < m ? a[base + i] : 0u;
            pb[i] = i < m ? b[base + i] : 0u;
        }
        /* log of u1 = (a + 1) 2^-32 in (0, 1]: lab_rng_log_exact doubles x until x >= 0.7071..., which
         * for such u1 (at most 32 significant bits) leaves x in [0.7071..., 1.4142...) and never enters
         * its halving loop. Same x and e from the exponent field: h = mantissa / 2 in [0.5, 1). */
        for (size_t i = 0; i < PG_BATCH; ++i) {
            double u1 = ((double)pa[i] + 1.0) * (1.0 / 4294967296.0);
            uint64_t bits = pg_double_to_bits(u1);
            int ex = (int)((bits >> 52) & 0x7ff) - 1023;
            uint64_t hb = (bits & 0x000fffffffffffffull) | (1022ull << 52);
            int low = pg_bits_to_double(hb) < 0.70710678118654752;
            xs[i] = pg_bits_to_double(hb + ((uint64_t)low << 52)); /* h * 2 when low, exactly */
            ev[i] = (double)(ex + 1 - low);
        }
        for (size_t i = 0; i < PG_BATCH; ++i) {
            double s = (xs[i] - 1.0) / (xs[i] + 1.0);
            xs[i] = s;
            sq[i] = s * s;
            acc[i] = 0.0;
        }
        for (int k = 25; k >= 1; k -= 2) {
            double ik = tb.inv_odd[k];
            for (size_t i = 0; i < PG_BATCH; ++i) acc[i] = acc[i] * sq[i] + ik;
        }
        for (size_t i = 0; i < PG_BATCH; ++i) {
            double lm = (2.0 * xs[i]) * acc[i];
            double lg = lm + ev[i] * 0.69314718055994531;
            double rr = -2.0 * lg;
            rad[i] = __builtin_sqrt(rr > 0.0 ? rr : 0.0); /* sqrt(+0) = +0, as the 0.0 branch */
        }
        /* cos(2 pi u2): quadrant reduction as lab_rng_cos2pi_exact, without data-dependent branches. */
        for (size_t i = 0; i < PG_BATCH; ++i) {
            double v = ((double)pb[i] * (1.0 / 4294967296.0)) * 4.0;
            int q = (int)v;
            double r = v - (double)q;
            int up = r > 0.5;
            r = r - (double)up; /* r - 1.0 or r - 0.0 (= r) */
            quad[i] = (q + up) & 3;
            double t = r * 1.5707963267948966;
            u2[i] = t;
            sq[i] = t * t;
            acc[i] = 0.0;
            acc2[i] = 0.0;
        }
        for (int k = 10; k >= 0; --k) {
            double cc = tb.cos_coef[k], sc = tb.sin_coef[k];
            for (size_t i = 0; i < PG_BATCH; ++i) {
                acc[i] = acc[i] * sq[i] + cc;
                acc2[i] = acc2[i] * sq[i] + sc;
            }
        }
        for (size_t i = 0; i < m; ++i) {
            uint64_t sb = pg_double_to_bits(acc2[i] * u2[i]), cb = pg_double_to_bits(acc[i]);
            int q = quad[i];
            uint64_t odd = (uint64_t)0 - (uint64_t)(q & 1);               /* q odd: sine, else cosine */
            uint64_t neg = (uint64_t)(((q + 1) >> 1) & 1) << 63;           /* q = 1, 2: negated */
            out[base + i] = (float)(rad[i] * pg_bits_to_double(((sb & odd) | (cb & ~odd)) ^ neg));
        }
    }
}

/* Philox4x32-10 of blocks blk0 .. blk0+nb-1 of a stream, words into v0..v3: the rounds of
 * lab_rng_philox run over the whole batch at once, so the multiplies of different blocks overlap. */
static void pg_philox_batch(uint64_t blk0, size_t nb, uint32_t stream, uint64_t seed, uint32_t *v0, uint32_t *v1,
                            uint32_t *v2, uint32_t *v3)
{
    for (size_t j = 0; j < nb; ++j) {
        uint64_t blk = blk0 + j;
        v0[j] = (uint32_t)blk;
        v1[j] = (uint32_t)(blk >> 32);
        v2[j] = stream;
        v3[j] = 0u;
    }
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k0 += LAB_PHILOX_W0;
            k1 += LAB_PHILOX_W1;
        }
        for (size_t j = 0; j < nb; ++j) {
            uint64_t p0 = (uint64_t)LAB_PHILOX_M0 * v0[j];
            uint64_t p1 = (uint64_t)LAB_PHILOX_M1 * v2[j];
            uint32_t n0 = (uint32_t)(p1 >> 32) ^ v1[j] ^ k0;
            uint32_t n2 = (uint32_t)(p0 >> 32) ^ v3[j] ^ k1;
            v0[j] = n0;
            v1[j] = (uint32_t)p1;
            v2[j] = n2;
            v3[j] = (uint32_t)p0;
        }
    }
}

void pow_grad_fill_normal(float *out, size_t n, uint64_t seed, uint32_t stream, uint64_t first)
{
    if (n == 0) return;
    if (first & 1) { /* an odd start shares its block with the value before it */
        out[0] = lab_rng_normal(seed, stream, first);
        ++out;
        ++first;
        --n;
    }
    uint32_t v0[PG_BATCH / 2], v1[PG_BATCH / 2], v2[PG_BATCH / 2], v3[PG_BATCH / 2];
    uint32_t a[PG_BATCH], b[PG_BATCH];
    for (size_t done = 0; done < n; done += PG_BATCH) {
        size_t m = n - done < PG_BATCH ? n - done : PG_BATCH, nb = (m + 1) / 2;
        /* normal i uses words 2i and 2i+1, i.e. block i/2: words 0, 1 for even i, 2, 3 for odd i */
        pg_philox_batch((first + done) >> 1, nb, stream, seed, v0, v1, v2, v3);
        for (size_t j = 0; j < nb; ++j) {
            a[2 * j] = v0[j];
            b[2 * j] = v1[j];
            a[2 * j + 1] = v2[j];
            b[2 * j + 1] = v3[j];
        }
        pow_grad_normal_from_words(a, b, m, out + done);
    }
}

/* w[i] = pow_grad_upstream_w(lab_rng_uniform(seed, stream, i)): word i is word i % 4 of block i / 4. */
static void pg_fill_upstream_w(float *out, size_t n, uint64_t seed, uint32_t stream)
{
    uint32_t v[4][PG_BATCH / 2];
    for (size_t done = 0; done < n; done += 2 * PG_BATCH) {
        size_t m = n - done < 2 * PG_BATCH ? n - done : 2 * PG_BATCH, nb = (m + 3) / 4;
        pg_philox_batch(done >> 2, nb, stream, seed, v[0], v[1], v[2], v[3]);
        for (size_t i = 0; i < m; ++i)
            out[done + i] = pow_grad_upstream_w((float)(v[i & 3][i >> 2] >> 8) * (1.0f / 16777216.0f));
    }
}

void pow_grad_inputs(pow_grad_case *pc, uint64_t seed)
{
    size_t n = pc->rows * pc->cols;
    pow_grad_fill_normal(pc->x, n, seed, POW_GRAD_STREAM_X, 0);
    pg_fill_upstream_w(pc->w, n, seed, POW_GRAD_STREAM_W);
    pow_grad_fill_normal(pc->c, pc->rows, seed, POW_GRAD_STREAM_C, 0);
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

void pow_grad_golden_dir(const char *root, char *out, size_t len)
{
    snprintf(out, len, "%s/incidents/" POW_GRAD_ID "/golden", root && *root ? root : ".");
}

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

    double *ref = malloc(2 * PG_REF_ROWS * cols * sizeof *ref);
    if (!ref) {
        lab_tensor_free(&gsq);
        lab_tensor_free(&grms);
        return lab_err_set(LAB_ERR_NOMEM, "pow_grad: out of memory for the reference");
    }
    double *ref_sq = ref, *ref_rms = ref + PG_REF_ROWS * cols;
    for (size_t i = 0; i < rows; i += PG_REF_ROWS) {
        size_t nr = rows - i < PG_REF_ROWS ? rows - i : PG_REF_ROWS, off = i * cols, m = nr * cols;
        pow_grad_reference(pc->x + off, pc->w + off, pc->c + i, nr, cols, (double)pc->e, (double)pc->eps, ref_sq,
                           ref_rms);
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
    snprintf(m.incident, sizeof m.incident, "%s", POW_GRAD_ID);
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
         * independent (the RMS is per row), so these rows equal those of the 4096-row reference. */
        pow_grad_fill_normal(x, n, seeds[k], POW_GRAD_STREAM_X, 0);
        pg_fill_upstream_w(w, n, seeds[k], POW_GRAD_STREAM_W);
        pow_grad_fill_normal(c, rows, seeds[k], POW_GRAD_STREAM_C, 0);
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
/* Variants                                                                                        */

static lab_status pg_run_cpu(const lab_case *c, lab_case_result *r, pow_grad_rule rule)
{
    pow_grad_case pc;
    lab_status st = pow_grad_case_init(&pc, POW_GRAD_ROWS, POW_GRAD_COLS);
    if (st != LAB_OK) return st;
    pow_grad_inputs(&pc, c->seed);
    pow_grad_forward(&pc);
    pow_grad_backward(&pc, rule);
    char dir[4096];
    pow_grad_golden_dir(c->root, dir, sizeof dir);
    st = pow_grad_check(&pc, c->seed, dir, r, NULL);
    pow_grad_case_free(&pc);
    return st;
}

lab_status pow_grad_run_cpu_fix(const lab_case *c, lab_case_result *r) { return pg_run_cpu(c, r, POW_GRAD_RULE_FIX); }

lab_status pow_grad_run_cpu_bug(const lab_case *c, lab_case_result *r)
{
    return pg_run_cpu(c, r, POW_GRAD_RULE_BUG_EXP_LOG);
}

#ifdef LAB_HAVE_CUDA
static size_t pg_count_mismatch(const float *a, const float *b, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) k += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return k;
}

static lab_status pg_run_cuda(const lab_case *c, lab_case_result *r, pow_grad_rule rule)
{
    char why[240];
    lab_status st = lab_cuda_ready(why, sizeof why);
    if (st == LAB_ERR_UNSUPPORTED) {
        lab_result_skip(r, "%s", why);
        return LAB_OK;
    }
    if (st != LAB_OK) return st;
    lab_cuda_info info;
    if ((st = lab_cuda_device_info(0, &info)) != LAB_OK) return st;

    pow_grad_case gpu, cpu;
    if ((st = pow_grad_case_init(&gpu, POW_GRAD_ROWS, POW_GRAD_COLS)) != LAB_OK) return st;
    if ((st = pow_grad_case_init(&cpu, POW_GRAD_ROWS, POW_GRAD_COLS)) != LAB_OK) {
        pow_grad_case_free(&gpu);
        return st;
    }
    if ((st = pow_grad_cuda_case(&gpu, c->seed, rule)) != LAB_OK) goto done;
    /* The GPU made its inputs with the lab's RNG: they must be the CPU's, bit for bit. */
    pow_grad_inputs(&cpu, c->seed);
    size_t n = gpu.rows * gpu.cols;
    size_t mismatch = pg_count_mismatch(gpu.x, cpu.x, n) + pg_count_mismatch(gpu.w, cpu.w, n) +
                      pg_count_mismatch(gpu.c, cpu.c, gpu.rows);
    /* The reference comes from the CPU-generated inputs; the GPU's gradients are judged against it. */
    memcpy(gpu.x, cpu.x, n * sizeof(float));
    memcpy(gpu.w, cpu.w, n * sizeof(float));
    memcpy(gpu.c, cpu.c, gpu.rows * sizeof(float));
    char dir[4096];
    pow_grad_golden_dir(c->root, dir, sizeof dir);
    st = pow_grad_check(&gpu, c->seed, dir, r, NULL);
    lab_result_metric(r, "input_mismatch", (double)mismatch);
    if (st == LAB_OK && mismatch > 0)
        lab_result_verdict(r, 0, "%zu GPU-generated inputs differ from the CPU's (x, w, c): RNG not shared on %s",
                           mismatch, info.name);
    else if (st == LAB_OK && r->passed) {
        char detail[sizeof r->detail];
        snprintf(detail, sizeof detail, "%s", r->detail);
        lab_result_verdict(r, 1, "%s [%s sm_%d%d]", detail, info.name, info.cc_major, info.cc_minor);
    }
done:
    pow_grad_case_free(&gpu);
    pow_grad_case_free(&cpu);
    return st;
}

lab_status pow_grad_run_cuda_fix(const lab_case *c, lab_case_result *r)
{
    return pg_run_cuda(c, r, POW_GRAD_RULE_FIX);
}

lab_status pow_grad_run_cuda_bug(const lab_case *c, lab_case_result *r)
{
    return pg_run_cuda(c, r, POW_GRAD_RULE_BUG_EXP_LOG);
}
#define PG_CUDA_FIX pow_grad_run_cuda_fix
#define PG_CUDA_BUG pow_grad_run_cuda_bug
#else
#define PG_CUDA_FIX NULL
#define PG_CUDA_BUG NULL
#endif

static const lab_variant pow_grad_variants[] = {
    {"fix", LAB_ROLE_FIX, "d/dbase = g * e * (y / base), y/base selected as 0 where base == 0", pow_grad_run_cpu_fix,
     PG_CUDA_FIX, 0.0},
    {"bug-exp-log", LAB_ROLE_BUG,
     "d/dbase = g * e * pow(base, e - 1), pow with a runtime exponent lowered as exp((e - 1) * log(base))",
     pow_grad_run_cpu_bug, PG_CUDA_BUG, 0.0},
};

const lab_incident pow_grad_incident = {
    .id = POW_GRAD_ID,
    .title = "pow() gradient NaN for negative bases",
    .summary =
        "The autodiff rule for y = base^exp built d/dbase as g * exp * pow(base, exp - 1). The exponent "
        "exp - 1 was not a compile-time constant, so the backend lowered that pow as "
        "exp((exp - 1) * log(base)), and log of a negative base is NaN: every negative activation got a NaN "
        "gradient although (-2)^1 = -2 is fine. The fix reuses the forward output, base^(exp-1) = y / base, "
        "with y/base selected as 0 where base == 0. Replayed on 4096x1024 normal activations through a "
        "sum of squares and an RMS-norm-like mean of squares; the bug makes about half the gradients NaN.",
    .variants = pow_grad_variants,
    .n_variants = (int)(sizeof pow_grad_variants / sizeof pow_grad_variants[0]),
    .plot_metric = "nonfinite_frac",
    .plot_log = 0,
    .timeout_s = 60,
    .golden_bless = pow_grad_golden_bless,
};

LAB_INCIDENT_REGISTER(pow_grad_incident);
