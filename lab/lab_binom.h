/* lab_binom: the exact one-sided binomial test that judges a stated detection rate, its power, and the seed counts it needs. */
#ifndef LAB_BINOM_H
#define LAB_BINOM_H

/* Contract. A bug variant that states a detection rate r (0 < r < 1) is judged on its n judged seeds, of
 * which x detected it, by the exact one-sided binomial test of H0 "the detection rate is at least r" at
 * level LAB_BINOM_ALPHA: H0 is rejected (the reproducer has lost power) when P(X <= x | n, r) < alpha. The
 * test is trusted to have seen a loss only when its power against the rate at which the allowed misses
 * double, r' = 1 - 2 (1 - r), is at least LAB_BINOM_POWER; below that power a count that the test does not
 * reject is no evidence (the verdict is refused, with the seeds it needs). A rate of 1 has no such test: a
 * variant detected on every seed is judged by "every seed detects" (one miss fails), and a replay's seeds
 * must be enough for that rule to see the rate fall to LAB_BINOM_DROP_RATE with LAB_BINOM_POWER.
 * Everything is exact in double (log space, no normal approximation); no function here fails or allocates. */

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LAB_BINOM_ALPHA 0.05      /* level of the one-sided test */
#define LAB_BINOM_POWER 0.8       /* power the test must have before a non-rejection is trusted */
#define LAB_BINOM_DROP_RATE 0.9   /* "every seed detects" must see a fall from 100% to this rate */
#define LAB_BINOM_SEARCH_MAX ((size_t)1 << 20) /* seed counts are searched up to this (--seeds' maximum) */

/* P(X <= x) for X ~ Binomial(n, p), 0 <= p <= 1 (p clamped into [0, 1]); 1 when x >= n. */
double lab_binom_cdf(size_t x, size_t n, double p);

/* The critical count of the test at n seeds: the largest x with P(X <= x | n, r) < alpha, or -1 when no
 * count is rare enough (n too small for the test to ever reject). */
long lab_binom_critical(size_t n, double r, double alpha);

/* The rate at which the misses a stated rate allows have doubled: 1 - 2 (1 - r), at least 0. */
double lab_binom_doubled_misses(double r);

/* Power at n seeds of the test of stated rate r against the true rate r_alt: P(X <= critical | n, r_alt)
 * (0 when the critical count is -1). */
double lab_binom_power(size_t n, double r, double r_alt, double alpha);

/* The smallest seed count m >= from (from >= 1) at which the test of rate r has at least `power` against
 * lab_binom_doubled_misses(r); 0 when none up to LAB_BINOM_SEARCH_MAX. Power is not monotone in m (the
 * critical count moves in steps), so m is exact for the count it names, not a promise for every larger one. */
size_t lab_binom_seeds_needed(double r, double alpha, double power, size_t from);

/* The smallest n for which "every seed detects" catches a true rate p_alt (< 1) with at least `power`:
 * 1 - p_alt^n >= power. */
size_t lab_binom_seeds_for_drop(double p_alt, double power);

#ifdef __cplusplus
}
#endif

#endif
