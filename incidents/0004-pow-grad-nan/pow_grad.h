/* pow_grad: the VJP of y = base^exp as it was (exp/log lowering, NaN for negative bases) and as fixed, plus the workloads and criterion of incident 0004. */
#ifndef POW_GRAD_H
#define POW_GRAD_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "lab_err.h"
#include "lab_hd.h"
#include "lab_incident.h"

/* Shape of one case: rows x features of activations (a batch of token vectors). */
#define POW_GRAD_ROWS 256
#define POW_GRAD_COLS 1024
/* The exponent of the forward op: squares, as in sum-of-squares losses and RMS norms. */
#define POW_GRAD_EXPONENT 2.0f
/* The RMS-norm epsilon, as float32 (the float64 reference uses the same value widened). */
#define POW_GRAD_EPS 1e-6f
/* The RMS reduction: POW_GRAD_LANES lanes per row (one CUDA block of that many threads). */
#define POW_GRAD_LANES 256

/* Philox streams of the inputs (index = row * cols + col for per-element inputs, row for per-row). */
#define POW_GRAD_STREAM_X 0x0004a001u /* activations x: standard normal, half of them negative */
#define POW_GRAD_STREAM_W 0x0004a002u /* upstream w of L = sum(w * x^2): uniform in [-1, 1) */
#define POW_GRAD_STREAM_C 0x0004a003u /* upstream c of L = sum_i c_i r_i: standard normal per row */

/* Goldens: the first POW_GRAD_GOLDEN_ROWS rows of the float64 reference at these seeds. */
#define POW_GRAD_GOLDEN_ROWS 64
#define POW_GRAD_GOLDEN_SEED_A 1u
#define POW_GRAD_GOLDEN_SEED_B 2u

/* Unit roundoff of float32: half an ulp of 1, the bound on the relative error of one rounding. */
#define POW_GRAD_U (1.0 / 16777216.0)
/* Tolerances of the criterion (relative, justified in README.md "What the criterion checks"):
 * squares: powf 9u (CUDA documents 4 ulp from the correctly rounded result, + 0.5 ulp; glibc 0.82 ulp)
 *          + y/x u + g*e u + product u = 12u.
 * rms:     per-row upstream 12.5u (sum of 1024 positive powf values, depth 11: 9u + 11u; + eps u;
 *          sqrt halves it, + u; c / (r * 2n) + u) + g*e u + y/x 10u + product u = 24.5u -> 25u. */
/* Measured (README "Measured margins", tools/dev/margins.py): max 0.201 / 0.207 of TOL_SQUARE / TOL_RMS on the CPU
 * (seeds 1-256), 0.246 / 0.229 on an H100 (seeds 1-1000, docs/performance.md). */
#define POW_GRAD_TOL_SQUARE (12.0 * POW_GRAD_U)
#define POW_GRAD_TOL_RMS (25.0 * POW_GRAD_U)
/* Floor of the relative error: every step is a product, quotient, square root or sum of positive
 * terms, so the bound above is relative per element down to the normal range; below FLT_MIN the
 * comparison becomes absolute at subnormal spacing. */
#define POW_GRAD_REL_FLOOR 1.17549435082228750797e-38

/* Which VJP rule computes d/dbase. */
typedef enum {
    POW_GRAD_RULE_FIX,         /* g * e * (y / x), y/x taken as 0 where x == 0 (a select) */
    POW_GRAD_RULE_BUG_EXP_LOG  /* g * e * pow(x, e - 1) with pow lowered as exp((e - 1) * log(x)) */
} pow_grad_rule;

/* The rule as it was, frozen: d/dbase = g * e * pow(x, e - 1) where the exponent e - 1 is a runtime
 * value, so the backend lowered pow as exp(exponent * log(base)). log of a negative base is NaN, hence
 * NaN for every x < 0, although (-2)^1 = -2 is fine. */
static inline LAB_HD float pow_grad_vjp_bug_exp_log(float g, float x, float e)
{
    return g * e * expf((e - 1.0f) * logf(x));
}

/* The fixed rule: base^(e-1) = y / base from the forward output y = base^e, with y/base defined as 0
 * where base == 0 (a select: y/x there is 0/0 = NaN and a multiply by a 0 mask would keep the NaN).
 * Right for e = 2 at 0 (derivative 0); wrong at 0 for e < 1 (true +inf) and e == 1 (true g). */
static inline LAB_HD float pow_grad_vjp_fix(float g, float x, float y, float e)
{
    float q = (x == 0.0f) ? 0.0f : y / x;
    return g * e * q;
}

/* The exponent's cotangent, in both rules: zero (the rule treats the exponent as a constant; the true
 * value is g * y * log(x)). */
static inline LAB_HD float pow_grad_vjp_exponent(float g, float x, float y, float e)
{
    (void)g; (void)x; (void)y; (void)e;
    return 0.0f;
}

/* d/dbase under `rule`. */
static inline LAB_HD float pow_grad_vjp(pow_grad_rule rule, float g, float x, float y, float e)
{
    return rule == POW_GRAD_RULE_FIX ? pow_grad_vjp_fix(g, x, y, e) : pow_grad_vjp_bug_exp_log(g, x, e);
}

/* The last row of every case is a padding token: x all exact zeros, drawn on purpose on every seed (CPU and
 * GPU alike), so the replay itself sees the fix at base == 0 (its select: 0/0 would be NaN) and a row whose
 * mean square is 0 (where the RMS head's eps keeps r finite). The golden rows (the first 64) are unchanged. */
static inline LAB_HD int pow_grad_is_padding(size_t i, size_t rows, size_t cols)
{
    return rows > 0 && i >= (rows - 1) * cols;
}

/* Upstream w of the squares loss from a uniform u in [0, 1): 2u - 1, exact in float32 (u is a multiple
 * of 2^-24), so host and device agree even if a compiler fuses it. */
static inline LAB_HD float pow_grad_upstream_w(float u)
{
    return u * 2.0f - 1.0f;
}

/* The RMS head of a row, from the row's float32 sum of squares: ms = sum / cols, r = sqrt(ms + eps),
 * and the upstream into the pow VJP g = c / (2 r cols) (dL/dms = c / 2r, dms/dy = 1/cols). cols a power
 * of two makes / cols and * 2cols exact. No multiply-add pairs, so no FMA contraction on the device. */
static inline LAB_HD float pow_grad_rms_upstream(float c, float sum, float cols, float eps, float *r_out)
{
    float ms = sum / cols;
    float r = sqrtf(ms + eps);
    *r_out = r;
    return c / (r * (2.0f * cols));
}

/* One case of both workloads, float32 as a GPU computes it. Arrays are rows * cols unless noted. */
typedef struct {
    size_t rows, cols;
    float e;          /* runtime exponent of the forward op (POW_GRAD_EXPONENT) */
    float eps;
    float *x;         /* activations */
    float *w;         /* upstream of the squares loss */
    float *c;         /* [rows] upstream of the RMS loss */
    float *y;         /* forward output powf(x, e) */
    float *r;         /* [rows] RMS of each row */
    float *g;         /* [rows] upstream into the pow VJP from the RMS head */
    float *dx_sq;     /* d/dx of L = sum(w * x^e) through the pow VJP */
    float *dx_rms;    /* d/dx of L = sum_i c_i r_i through the pow VJP */
} pow_grad_case;

/* Allocates a case (zeroed arrays). LAB_ERR_ARG unless cols is a positive multiple of POW_GRAD_LANES
 * and a power of two and rows > 0; LAB_ERR_NOMEM. On error *pc is left freed. */
lab_status pow_grad_case_init(pow_grad_case *pc, size_t rows, size_t cols);
/* Frees the arrays; safe on a zeroed or freed case. */
void pow_grad_case_free(pow_grad_case *pc);

/* Inputs of a case: x, w and c from (seed, streams above), rows starting at row 0, by lab_rng_fill_normal
 * and lab_rng_fill_uniform (bit for bit lab_rng_normal / lab_rng_uniform, as the GPU makes them): x[i] =
 * normal(X, i), w[i] = pow_grad_upstream_w(uniform(W, i)), c[row] = normal(C, row). Never fails. */
void pow_grad_inputs(pow_grad_case *pc, uint64_t seed);
/* Forward: y = powf(x, e); per row the float32 sum of y in the lane order below, then r and g.
 * Reduction order (the CUDA kernel's): lane t of POW_GRAD_LANES sums y[t], y[t+L], y[t+2L], ... left to
 * right; then a tree: for s = L/2, L/4, ..., 1, lane t < s adds lane t+s. */
void pow_grad_forward(pow_grad_case *pc);
/* The float32 row sum in that order (cols a multiple of POW_GRAD_LANES). */
float pow_grad_row_sum(const float *y, size_t cols);
/* Backward through the pow VJP under `rule`: dx_sq from w, dx_rms from g. */
void pow_grad_backward(pow_grad_case *pc, pow_grad_rule rule);

/* The float64 reference of rows [0, nrows), from the same float32 inputs: the analytic gradients
 * ref_sq = w e x^(e-1) and ref_rms = g e x^(e-1) with g = c / (2 r cols), r = sqrt(mean_j x^e + eps),
 * all in double (for e = 2 every x^e and x^(e-1) is exact). x, w: nrows * cols; c: nrows. Never fails. */
void pow_grad_reference(const float *x, const float *w, const float *c, size_t nrows, size_t cols, double e,
                        double eps, double *ref_sq, double *ref_rms);

/* What the criterion measured. */
typedef struct {
    size_t n;                    /* gradients per workload */
    size_t negative;             /* x < 0 */
    size_t nonfinite_sq, nonfinite_rms, nan_sq, nan_rms;
    double nonfinite_frac;       /* (nonfinite_sq + nonfinite_rms) / (2 n) */
    double max_rel_err_square, max_rel_err_rms;   /* NaN if anything is non-finite */
    double max_ulp_square, max_ulp_rms;           /* NaN if anything is NaN */
    int golden_checked;          /* the seed is a golden seed and the golden was compared */
    double golden_max_rel_err;   /* kernel rows vs golden, max over both workloads */
    int passed;
} pow_grad_verdict;

/* The criterion: no NaN/Inf in either gradient; max relative error (floor POW_GRAD_REL_FLOOR) against
 * the float64 reference within POW_GRAD_TOL_SQUARE / POW_GRAD_TOL_RMS; at a golden seed, the first
 * POW_GRAD_GOLDEN_ROWS rows also within those tolerances of the golden loaded (sha256, dtype and shape
 * verified) from golden_dir (NULL: skip the golden). Records metrics and verdict in r. Returns an error
 * status (LAB_ERR_IO/MISMATCH/FORMAT/NOMEM, message naming the file) when the golden cannot be loaded;
 * v may be NULL. */
lab_status pow_grad_check(const pow_grad_case *pc, uint64_t seed, const char *golden_dir, lab_case_result *r,
                          pow_grad_verdict *v);
/* pow_grad_check against a float64 reference already computed for the whole case (ref_sq, ref_rms of
 * rows x cols, from pow_grad_reference); NULL computes it here, a block of rows at a time. */
lab_status pow_grad_check_ref(const pow_grad_case *pc, const double *ref_sq, const double *ref_rms, uint64_t seed,
                              const char *golden_dir, lab_case_result *r, pow_grad_verdict *v);

/* Golden file names of a seed. */
void pow_grad_golden_names(uint64_t seed, char *sq, char *rms, size_t len);
/* Regenerates the goldens of both golden seeds into dir from the float64 reference only. */
lab_status pow_grad_golden_bless(const char *dir);

/* The incident descriptor (registered in pow_grad.c). */
extern const lab_incident pow_grad_incident;

#ifdef LAB_HAVE_CUDA
/* The case on the GPU (pow_grad.cu): inputs generated on the device by lab_rng_normal/uniform from the
 * same (seed, stream, index), forward, RMS reduction in the same lane order, backward under rule; then
 * x, w, c, y, r, g, dx_sq and dx_rms are copied back into pc (allocated by the caller). Every CUDA call
 * is checked: LAB_ERR_DEVICE with "file:line: cudaXxx: <error>". */
lab_status pow_grad_cuda_case(pow_grad_case *pc, uint64_t seed, pow_grad_rule rule);
#endif

#ifdef __cplusplus
}
#endif

#endif
