/* rng_clone.h: lab/lab_rng.c built again for one instruction set, its fills renamed with the suffix
 * LAB_RNG_CLONE_SUFFIX (tests/test_rng_clone_*.c): the clones target_clones makes of each fill, one per translation
 * unit, so that test_rng.c checks every clone against the scalar functions, not only the one this CPU picks. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define RC_CAT2(a, b) a##_##b
#define RC_CAT(a, b) RC_CAT2(a, b)
#define lab_rng_fill_uniform RC_CAT(lab_rng_fill_uniform, LAB_RNG_CLONE_SUFFIX)
#define lab_rng_fill_u32 RC_CAT(lab_rng_fill_u32, LAB_RNG_CLONE_SUFFIX)
#define lab_rng_fill_normal RC_CAT(lab_rng_fill_normal, LAB_RNG_CLONE_SUFFIX)
#include "../lab/lab_rng.c"
#endif
