/* test_rng_clone_avx512: lab_rng.c's fills as its avx512 clone alone (rng_clone.h); checked in test_rng.c. */
#define LAB_RNG_CLONE_SUFFIX avx512
#define LAB_RNG_CLONES __attribute__((target("avx512f")))
#include "rng_clone.h"
