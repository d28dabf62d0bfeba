/* lab_metric: error metrics of float32 outputs against float64 references; criteria are built from these. */
#ifndef LAB_METRIC_H
#define LAB_METRIC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Count of non-finite values. */
typedef struct { size_t n, nan, pinf, ninf; } lab_census;

lab_census lab_metric_census_f32(const float *x, size_t n);
lab_census lab_metric_census_f64(const double *x, size_t n);

/* max_i |a_i - ref_i|. NaN if any a_i or ref_i is non-finite (a NaN never hides as "small"). 0 for n = 0. */
double lab_metric_max_abs_err(const float *a, const double *ref, size_t n);

/* max_i |a_i - ref_i| / max(|ref_i|, floor), floor > 0 keeps near-zero references from dominating.
 * NaN if any value is non-finite. */
double lab_metric_max_rel_err(const float *a, const double *ref, size_t n, double floor);

/* Distance in units in the last place between float32 values: the count of representable floats
 * between a and b (+0 and -0 are 0 apart). UINT64_MAX if either is NaN. */
uint64_t lab_metric_ulp_f32(float a, float b);
/* max_i ulp(a_i, (float)ref_i), UINT64_MAX if any is NaN. */
uint64_t lab_metric_max_ulp(const float *a, const double *ref, size_t n);

/* ||a - ref||_2 / ||ref||_2 (accumulated in double); NaN if non-finite; +inf if ||ref|| = 0 and a != ref. */
double lab_metric_rel_l2(const float *a, const double *ref, size_t n);

/* <a, ref> / (||a|| ||ref||) in double; NaN if non-finite or either norm is 0. */
double lab_metric_cosine(const float *a, const double *ref, size_t n);

#ifdef __cplusplus
}
#endif

#endif
