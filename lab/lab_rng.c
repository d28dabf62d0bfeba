/* lab_rng: Philox4x32-10 counter-based RNG and the (seed, stream, index) -> value helpers shared by CPU and GPU. */
#include "lab_rng.h"

void lab_rng_fill_uniform(float *out, uint64_t n, uint64_t seed, uint32_t stream, uint64_t first)
{
    for (uint64_t i = 0; i < n; ++i) out[i] = lab_rng_uniform(seed, stream, first + i);
}

void lab_rng_fill_normal(float *out, uint64_t n, uint64_t seed, uint32_t stream, uint64_t first)
{
    for (uint64_t i = 0; i < n; ++i) out[i] = lab_rng_normal(seed, stream, first + i);
}
