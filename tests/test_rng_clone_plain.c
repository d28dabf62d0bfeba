/* test_rng_clone_plain: lab_rng.c's fills as its plain clone alone (rng_clone.h); checked in test_rng.c. */
#define LAB_RNG_CLONE_SUFFIX plain
#define LAB_RNG_CLONES
#include "rng_clone.h"
