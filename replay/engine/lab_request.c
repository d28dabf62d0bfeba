/* lab_request: what one replay is asked to do (lab_request.h). */
#include "lab_request.h"

lab_status lab_request_seed_bytes(const lab_request *r, size_t *n, size_t *bytes)
{
    uint64_t ns = r->have_seed ? 1 : r->n_seeds;
    if (ns > SIZE_MAX) return lab_err_set(LAB_ERR_ARG, "--seeds %llu does not fit in memory sizes", (unsigned long long)ns);
    *n = (size_t)ns;
    if (*n > SIZE_MAX / sizeof(uint64_t)) return lab_err_set(LAB_ERR_ARG, "--seeds: %zu x %zu does not fit in memory sizes", *n, sizeof(uint64_t));
    *bytes = *n * sizeof(uint64_t);
    return LAB_OK;
}
