/* test_metric: the error metrics on hand-computed examples and their NaN / inf / edge behaviour. */
#include <criterion/criterion.h>

#include <float.h>
#include <math.h>
#include <stdint.h>

#include "lab_metric.h"

Test(metric, census)
{
    const float x[] = {1.0f, NAN, INFINITY, -INFINITY, 2.0f, -NAN, INFINITY, FLT_MAX};
    lab_census c = lab_metric_census_f32(x, 8);
    cr_assert_eq(c.n, 8);
    cr_assert_eq(c.nan, 2);
    cr_assert_eq(c.pinf, 2);
    cr_assert_eq(c.ninf, 1);
    const double y[] = {-INFINITY, 0.0, DBL_MAX, NAN, -INFINITY};
    c = lab_metric_census_f64(y, 5);
    cr_assert_eq(c.n, 5);
    cr_assert_eq(c.nan, 1);
    cr_assert_eq(c.pinf, 0);
    cr_assert_eq(c.ninf, 2);
    c = lab_metric_census_f32(x, 0);
    cr_assert(c.n == 0 && c.nan == 0 && c.pinf == 0 && c.ninf == 0);
}

Test(metric, max_abs_err)
{
    const float a[] = {1.0f, 2.0f, 3.0f, -4.0f};
    const double r[] = {1.5, 2.0, 2.0, -4.25};
    cr_assert_eq(lab_metric_max_abs_err(a, r, 4), 1.0);
    cr_assert_eq(lab_metric_max_abs_err(a, r, 2), 0.5);
    cr_assert_eq(lab_metric_max_abs_err(a, r, 0), 0.0);
    /* the float is widened, not the reference narrowed: 0.1f vs 0.1 */
    const float b[] = {0.1f};
    const double rb[] = {0.1};
    cr_assert_eq(lab_metric_max_abs_err(b, rb, 1), fabs((double)0.1f - 0.1));
    cr_assert_gt(lab_metric_max_abs_err(b, rb, 1), 0.0);
}

Test(metric, max_abs_err_non_finite)
{
    const float a[] = {1.0f, NAN};
    const double r[] = {1.0, 0.0};
    cr_assert(isnan(lab_metric_max_abs_err(a, r, 2)));
    const float b[] = {1.0f, INFINITY};
    const double rb[] = {1.0, INFINITY};
    cr_assert(isnan(lab_metric_max_abs_err(b, rb, 2)));     /* even inf vs the same inf */
    const float c[] = {1.0f, 2.0f};
    const double rc[] = {NAN, 2.0};
    cr_assert(isnan(lab_metric_max_abs_err(c, rc, 2)));
    const double rd[] = {1.0, -INFINITY};
    cr_assert(isnan(lab_metric_max_abs_err(c, rd, 2)));
}

Test(metric, max_rel_err_and_floor)
{
    const float a[] = {1.5f, 0.75f, 3.0f};
    const double r[] = {1.0, 1.0, 4.0};
    cr_assert_eq(lab_metric_max_rel_err(a, r, 3, 1e-3), 0.5);
    const double r2[] = {2.0, 1.0, 4.0};
    cr_assert_eq(lab_metric_max_rel_err(a, r2, 3, 1e-3), 0.25);
    /* the floor replaces a small |ref| */
    const float z[] = {0.25f};
    const double rz[] = {0.0};
    cr_assert_eq(lab_metric_max_rel_err(z, rz, 1, 1.0), 0.25);
    cr_assert_eq(lab_metric_max_rel_err(z, rz, 1, 0.5), 0.5);
    const double rs[] = {0.125};
    cr_assert_eq(lab_metric_max_rel_err(z, rs, 1, 0.5), 0.25);      /* |ref| < floor: divide by floor */
    cr_assert_eq(lab_metric_max_rel_err(z, rs, 1, 0.0625), 1.0);    /* |ref| > floor: divide by |ref| */
    const double rn[] = {-0.125};
    cr_assert_eq(lab_metric_max_rel_err(z, rn, 1, 0.0625), 3.0);    /* |0.25 + 0.125| / 0.125 */
    cr_assert_eq(lab_metric_max_rel_err(z, rz, 0, 1.0), 0.0);
}

Test(metric, max_rel_err_non_finite_and_bad_floor)
{
    const float a[] = {1.0f, NAN};
    const double r[] = {1.0, 1.0};
    cr_assert(isnan(lab_metric_max_rel_err(a, r, 2, 1e-6)));
    const float b[] = {1.0f, 1.0f};
    const double rb[] = {1.0, -INFINITY};
    cr_assert(isnan(lab_metric_max_rel_err(b, rb, 2, 1e-6)));
    /* a NaN must not hide behind an earlier large error */
    const float c[] = {100.0f, -INFINITY};
    const double rc[] = {1.0, 1.0};
    cr_assert(isnan(lab_metric_max_rel_err(c, rc, 2, 1e-6)));
    cr_assert(isnan(lab_metric_max_rel_err(b, r, 2, 0.0)));
    cr_assert(isnan(lab_metric_max_rel_err(b, r, 2, -1.0)));
    cr_assert(isnan(lab_metric_max_rel_err(b, r, 2, NAN)));
}

Test(metric, ulp_distance)
{
    cr_assert_eq(lab_metric_ulp_f32(1.0f, 1.0f), 0);
    cr_assert_eq(lab_metric_ulp_f32(1.0f, nextafterf(1.0f, 2.0f)), 1);
    cr_assert_eq(lab_metric_ulp_f32(1.0f, nextafterf(1.0f, 0.0f)), 1);
    cr_assert_eq(lab_metric_ulp_f32(nextafterf(1.0f, 0.0f), nextafterf(1.0f, 2.0f)), 2);
    cr_assert_eq(lab_metric_ulp_f32(1.0f, 2.0f), 1u << 23);
    cr_assert_eq(lab_metric_ulp_f32(2.0f, 1.0f), 1u << 23);
    cr_assert_eq(lab_metric_ulp_f32(-1.0f, -2.0f), 1u << 23);
    /* across zero */
    cr_assert_eq(lab_metric_ulp_f32(0.0f, -0.0f), 0);
    cr_assert_eq(lab_metric_ulp_f32(-0.0f, FLT_TRUE_MIN), 1);
    cr_assert_eq(lab_metric_ulp_f32(0.0f, -FLT_TRUE_MIN), 1);
    cr_assert_eq(lab_metric_ulp_f32(FLT_TRUE_MIN, -FLT_TRUE_MIN), 2);
    cr_assert_eq(lab_metric_ulp_f32(-1.0f, 1.0f), 2ull * 0x3F800000u);
    cr_assert_eq(lab_metric_ulp_f32(FLT_MIN, -FLT_MIN), 2ull * 0x00800000u);
    /* infinities are one step past FLT_MAX */
    cr_assert_eq(lab_metric_ulp_f32(FLT_MAX, INFINITY), 1);
    cr_assert_eq(lab_metric_ulp_f32(-INFINITY, INFINITY), 2ull * 0x7F800000u);
    /* NaN */
    cr_assert_eq(lab_metric_ulp_f32(NAN, 1.0f), UINT64_MAX);
    cr_assert_eq(lab_metric_ulp_f32(1.0f, -NAN), UINT64_MAX);
    cr_assert_eq(lab_metric_ulp_f32(NAN, NAN), UINT64_MAX);
}

Test(metric, max_ulp)
{
    const float a[] = {1.0f, 2.0f, -3.0f};
    const double r[] = {1.0 + 0x1p-23, 2.0 + 0x1p-21, -3.0};
    cr_assert_eq(lab_metric_max_ulp(a, r, 3), 2);        /* 2^-21 is two float ulps at 2 */
    cr_assert_eq(lab_metric_max_ulp(a, r, 1), 1);
    cr_assert_eq(lab_metric_max_ulp(a, r, 0), 0);
    /* the reference is rounded to float first: 1 + 2^-25 rounds to 1 */
    const double r1[] = {1.0 + 0x1p-25};
    cr_assert_eq(lab_metric_max_ulp(a, r1, 1), 0);
    /* a reference beyond float range becomes inf, one step past FLT_MAX */
    const float m[] = {FLT_MAX};
    const double rm[] = {1e300};
    cr_assert_eq(lab_metric_max_ulp(m, rm, 1), 1);
    const double rn[] = {1.0, NAN, -3.0};
    cr_assert_eq(lab_metric_max_ulp(a, rn, 3), UINT64_MAX);
    const float an[] = {1.0f, 2.0f, NAN};
    cr_assert_eq(lab_metric_max_ulp(an, r, 3), UINT64_MAX);
}

Test(metric, rel_l2)
{
    const float a[] = {3.0f, 5.0f};
    const double r[] = {3.0, 4.0};
    cr_assert_float_eq(lab_metric_rel_l2(a, r, 2), 0.2, 1e-15);  /* ||(0,1)|| / ||(3,4)|| */
    const float b[] = {2.0f, 2.0f, 2.0f};
    const double rb[] = {1.0, 2.0, 2.0};
    cr_assert_float_eq(lab_metric_rel_l2(b, rb, 3), 1.0 / 3.0, 1e-15);
    cr_assert_eq(lab_metric_rel_l2(a, (const double[]){3.0, 5.0}, 2), 0.0);
    /* zero reference */
    const double z[] = {0.0, 0.0};
    cr_assert(isinf(lab_metric_rel_l2(a, z, 2)) && lab_metric_rel_l2(a, z, 2) > 0);
    const float az[] = {0.0f, -0.0f};
    cr_assert_eq(lab_metric_rel_l2(az, z, 2), 0.0);
    cr_assert_eq(lab_metric_rel_l2(a, r, 0), 0.0);
    /* no overflow or underflow in the sums of squares */
    const float zero2[] = {0.0f, 0.0f};
    const double big[] = {1e200, -1e200}, tiny[] = {1e-200, 1e-200};
    cr_assert_float_eq(lab_metric_rel_l2(zero2, big, 2), 1.0, 1e-15);
    cr_assert_float_eq(lab_metric_rel_l2(zero2, tiny, 2), 1.0, 1e-15);
    const float fbig[] = {FLT_MAX, FLT_MAX};
    const double rbig[] = {FLT_MAX, (double)FLT_MAX * 0.5};
    cr_assert_float_eq(lab_metric_rel_l2(fbig, rbig, 2), 0.5 / sqrt(1.25), 1e-15);
}

Test(metric, rel_l2_non_finite)
{
    const float a[] = {1.0f, NAN};
    const double r[] = {1.0, 1.0};
    cr_assert(isnan(lab_metric_rel_l2(a, r, 2)));
    const float b[] = {1.0f, 1.0f};
    const double rb[] = {INFINITY, 1.0};
    cr_assert(isnan(lab_metric_rel_l2(b, rb, 2)));
    const double rz[] = {0.0, NAN};
    cr_assert(isnan(lab_metric_rel_l2(b, rz, 2)));
}

Test(metric, cosine)
{
    const float a[] = {1.0f, 2.0f, 3.0f};
    const double par[] = {2.0, 4.0, 6.0}, anti[] = {-0.5, -1.0, -1.5};
    cr_assert_float_eq(lab_metric_cosine(a, par, 3), 1.0, 1e-15);
    cr_assert_float_eq(lab_metric_cosine(a, anti, 3), -1.0, 1e-15);
    cr_assert_leq(lab_metric_cosine(a, par, 3), 1.0);
    cr_assert_geq(lab_metric_cosine(a, anti, 3), -1.0);
    const float e1[] = {1.0f, 0.0f};
    const double e2[] = {0.0, 5.0}, d[] = {1.0, 1.0};
    cr_assert_eq(lab_metric_cosine(e1, e2, 2), 0.0);
    cr_assert_float_eq(lab_metric_cosine(e1, d, 2), M_SQRT1_2, 1e-15);
    const double orth3[] = {3.0, 0.0, -1.0};
    cr_assert_float_eq(lab_metric_cosine(a, orth3, 3), 0.0, 1e-15);
    /* scale does not matter, even where the naive sums would overflow or underflow */
    const double pbig[] = {1e300, 2e300, 3e300}, ptiny[] = {1e-300, 2e-300, 3e-300};
    cr_assert_float_eq(lab_metric_cosine(a, pbig, 3), 1.0, 1e-15);
    cr_assert_float_eq(lab_metric_cosine(a, ptiny, 3), 1.0, 1e-15);
}

Test(metric, cosine_degenerate)
{
    const float a[] = {1.0f, 2.0f};
    const float z[] = {0.0f, 0.0f};
    const double r[] = {1.0, 2.0}, rz[] = {0.0, -0.0};
    cr_assert(isnan(lab_metric_cosine(z, r, 2)));
    cr_assert(isnan(lab_metric_cosine(a, rz, 2)));
    cr_assert(isnan(lab_metric_cosine(a, r, 0)));
    const float an[] = {1.0f, NAN};
    cr_assert(isnan(lab_metric_cosine(an, r, 2)));
    const double ri[] = {1.0, INFINITY};
    cr_assert(isnan(lab_metric_cosine(a, ri, 2)));
}
