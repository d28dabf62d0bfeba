/* lab_binom: the exact one-sided binomial test that judges a stated detection rate, its power, and the seed counts it needs. */
#include "lab_binom.h"

#include <math.h>

/* log P(X = k) for X ~ Binomial(n, p), 0 < p < 1. */
static double lab_binom_lpmf(size_t k, size_t n, double p)
{
    double dn = (double)n, dk = (double)k;
    return lgamma(dn + 1) - lgamma(dk + 1) - lgamma(dn - dk + 1) + dk * log(p) + (dn - dk) * log1p(-p);
}

double lab_binom_cdf(size_t x, size_t n, double p)
{
    if (x >= n) return 1.0;
    if (!(p > 0)) return 1.0;  /* X = 0 surely (NaN p counts as 0) */
    if (p >= 1) return 0.0;    /* X = n > x surely */
    double s = 0;
    for (size_t k = 0; k <= x; ++k) s += exp(lab_binom_lpmf(k, n, p));
    return s < 1 ? s : 1.0;
}

long lab_binom_critical(size_t n, double r, double alpha)
{
    if (!(r > 0)) return -1;                 /* every count is likely under rate 0 */
    if (r >= 1) return n > 0 ? (long)n - 1 : -1; /* under rate 1 any miss has probability 0 */
    long c = -1;
    double s = 0;
    for (size_t k = 0; k < n; ++k) {
        s += exp(lab_binom_lpmf(k, n, r));
        if (!(s < alpha)) break;
        c = (long)k;
    }
    return c;
}

double lab_binom_doubled_misses(double r)
{
    double alt = 1 - 2 * (1 - r);
    return alt > 0 ? alt : 0.0;
}

double lab_binom_power(size_t n, double r, double r_alt, double alpha)
{
    long c = lab_binom_critical(n, r, alpha);
    return c < 0 ? 0.0 : lab_binom_cdf((size_t)c, n, r_alt);
}

size_t lab_binom_seeds_needed(double r, double alpha, double power, size_t from)
{
    if (from < 1) from = 1;
    if (!(r > 0 && r < 1)) return 0;
    double alt = lab_binom_doubled_misses(r);
    for (size_t m = from; m <= LAB_BINOM_SEARCH_MAX; ++m)
        if (lab_binom_power(m, r, alt, alpha) >= power) return m;
    return 0;
}

size_t lab_binom_seeds_for_drop(double p_alt, double power)
{
    if (!(p_alt > 0)) return 1;
    if (p_alt >= 1 || !(power < 1)) return 0;
    double est = ceil(log(1 - power) / log(p_alt));
    size_t n = est > 1 ? (size_t)est : 1;
    while (1 - pow(p_alt, (double)n) < power) ++n;
    while (n > 1 && 1 - pow(p_alt, (double)(n - 1)) >= power) --n;
    return n;
}
