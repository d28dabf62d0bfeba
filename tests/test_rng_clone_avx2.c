/* test_rng_clone_avx2: lab_rng.c's fills as its avx2 clone alone (rng_clone.h); checked in test_rng.c. */
#define LAB_RNG_CLONE_SUFFIX avx2
#define LAB_RNG_CLONES __attribute__((target("avx2")))
#include "rng_clone.h"
