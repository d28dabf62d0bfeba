/* lab_metric: error metrics of float32 outputs against float64 references; criteria are built from these. */
#include "lab_metric.h"

#include <math.h>
#include <string.h>

/* Counts values, NaNs, +infs and -infs of a float32 array. n in the result is the number of values
 * looked at (the argument n), so the finite count is n - nan - pinf - ninf. */
lab_census lab_metric_census_f32(const float *x, size_t n)
{
    lab_census c = {n, 0, 0, 0};
    for (size_t i = 0; i < n; ++i) {
        if (isnan(x[i])) ++c.nan;
        else if (isinf(x[i])) { if (x[i] > 0) ++c.pinf; else ++c.ninf; }
    }
    return c;
}

/* The same for a float64 array. */
lab_census lab_metric_census_f64(const double *x, size_t n)
{
    lab_census c = {n, 0, 0, 0};
    for (size_t i = 0; i < n; ++i) {
        if (isnan(x[i])) ++c.nan;
        else if (isinf(x[i])) { if (x[i] > 0) ++c.pinf; else ++c.ninf; }
    }
    return c;
}

/* 1 when every a_i and ref_i is finite. */
static int lab_metric_all_finite(const float *a, const double *ref, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        if (!isfinite(a[i]) || !isfinite(ref[i])) return 0;
    return 1;
}

/* max_i |a_i - ref_i| in double; NaN if any value is non-finite; 0 for n = 0. */
double lab_metric_max_abs_err(const float *a, const double *ref, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; ++i) {
        if (!isfinite(a[i]) || !isfinite(ref[i])) return NAN;
        double d = fabs((double)a[i] - ref[i]);
        if (d > m) m = d;
    }
    return m;
}

/* max_i |a_i - ref_i| / max(|ref_i|, floor); NaN if any value is non-finite, or if floor is not a
 * positive finite number; 0 for n = 0 (with a valid floor). */
double lab_metric_max_rel_err(const float *a, const double *ref, size_t n, double floor)
{
    if (!(floor > 0.0) || isinf(floor)) return NAN;
    double m = 0.0;
    for (size_t i = 0; i < n; ++i) {
        if (!isfinite(a[i]) || !isfinite(ref[i])) return NAN;
        double den = fabs(ref[i]);
        if (den < floor) den = floor;
        double r = fabs((double)a[i] - ref[i]) / den;
        if (r > m) m = r;
    }
    return m;
}

/* Maps a float32 onto a signed integer line where adjacent floats are adjacent integers and +0 and
 * -0 both sit at 0. Not for NaN. */
static int64_t lab_metric_f32_ordinal(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    int64_t mag = (int64_t)(u & 0x7FFFFFFFu);
    return (u >> 31) ? -mag : mag;
}

/* Number of float32 steps from a to b (+0 and -0 are 0 apart, +-inf are one step past +-FLT_MAX);
 * UINT64_MAX if either is NaN. Symmetric. */
uint64_t lab_metric_ulp_f32(float a, float b)
{
    if (isnan(a) || isnan(b)) return UINT64_MAX;
    int64_t d = lab_metric_f32_ordinal(a) - lab_metric_f32_ordinal(b);
    return (uint64_t)(d < 0 ? -d : d);
}

/* max_i ulp(a_i, (float)ref_i); UINT64_MAX as soon as one pair holds a NaN; 0 for n = 0. */
uint64_t lab_metric_max_ulp(const float *a, const double *ref, size_t n)
{
    uint64_t m = 0;
    for (size_t i = 0; i < n; ++i) {
        uint64_t d = lab_metric_ulp_f32(a[i], (float)ref[i]);
        if (d == UINT64_MAX) return UINT64_MAX;
        if (d > m) m = d;
    }
    return m;
}

/* 2^k with 2^k <= x < 2^(k+1) for finite x > 0: an exact scale that keeps sums of squares of
 * values up to x from overflowing or underflowing. */
static double lab_metric_pow2_scale(double x)
{
    int e;
    (void)frexp(x, &e); /* x = f * 2^e, f in [0.5, 1) */
    return ldexp(1.0, e - 1);
}

/* ||a - ref||_2 / ||ref||_2, sums of squares in double. Both vectors are divided by one exact power
 * of two first, so the ratio is that of the naive formula without its overflow and underflow.
 * NaN if any value is non-finite; 0 if a == ref (n = 0 included); +inf if ||ref|| = 0 but a != ref. */
double lab_metric_rel_l2(const float *a, const double *ref, size_t n)
{
    if (!lab_metric_all_finite(a, ref, n)) return NAN;
    double mx = 0.0;
    for (size_t i = 0; i < n; ++i) {
        if (fabs((double)a[i]) > mx) mx = fabs((double)a[i]);
        if (fabs(ref[i]) > mx) mx = fabs(ref[i]);
    }
    if (mx == 0.0) return 0.0;               /* every a_i == ref_i == 0 */
    double sc = lab_metric_pow2_scale(mx);
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; ++i) {
        double d = (double)a[i] / sc - ref[i] / sc; /* both exact; |d| < 4 */
        double r = ref[i] / sc;
        num += d * d;
        den += r * r;
    }
    if (num == 0.0) return 0.0;
    if (den == 0.0) return INFINITY;
    return sqrt(num) / sqrt(den);
}

/* <a, ref> / (||a|| ||ref||) in double, each vector scaled by its own exact power of two first;
 * clamped to [-1, 1] (rounding can step just past). NaN if any value is non-finite or either norm
 * is 0 (n = 0 included). */
double lab_metric_cosine(const float *a, const double *ref, size_t n)
{
    if (!lab_metric_all_finite(a, ref, n)) return NAN;
    double ma = 0.0, mr = 0.0;
    for (size_t i = 0; i < n; ++i) {
        if (fabs((double)a[i]) > ma) ma = fabs((double)a[i]);
        if (fabs(ref[i]) > mr) mr = fabs(ref[i]);
    }
    if (ma == 0.0 || mr == 0.0) return NAN;
    double sa = lab_metric_pow2_scale(ma), sr = lab_metric_pow2_scale(mr);
    double dot = 0.0, na = 0.0, nr = 0.0;
    for (size_t i = 0; i < n; ++i) {
        double x = (double)a[i] / sa, y = ref[i] / sr;
        dot += x * y;
        na += x * x;
        nr += y * y;
    }
    double c = dot / (sqrt(na) * sqrt(nr));
    if (c > 1.0) c = 1.0;
    if (c < -1.0) c = -1.0;
    return c;
}
