/* lab_test_case: what the incidents' own tests (and the shared kernels' tests) share: one CPU case through the contract, asserted to have run; the GPU-or-skip preamble of a CUDA test. */
#ifndef LAB_TEST_CASE_H
#define LAB_TEST_CASE_H

#include <criterion/criterion.h>
#include <string.h>

#include "lab_incident.h"

/* Runs `variant` of inc at seed on the CPU in this process (lab_case_run_named: the seed's group from
 * inc->setup) and returns what it reported. Fails the test when the variant is unknown, the harness
 * returned an error, the case skipped (on the CPU only a missing dependency skips) or gave no verdict. */
static inline lab_case_result lab_test_run(const lab_incident *inc, const char *variant, uint64_t seed,
                                           const char *root)
{
    lab_case_result r;
    lab_status st = lab_case_run_named(inc, variant, seed, LAB_BACKEND_CPU, root, &r);
    cr_assert_eq(st, LAB_OK, "%s/%s seed %llu: %s", inc->id, variant, (unsigned long long)seed, lab_err_msg());
    cr_assert(r.verdict_set && !r.skipped, "%s/%s seed %llu: no verdict: %s", inc->id, variant,
              (unsigned long long)seed, r.detail);
    return r;
}

#ifdef LAB_HAVE_CUDA
#include "lab_cuda.h"
/* The preamble of a test that needs a GPU: skips the calling test, saying why, where no GPU is usable
 * (lab_cuda_ready: LAB_ERR_UNSUPPORTED); fails it on any other error of the probe (a broken driver is not a
 * missing GPU). Returns only when a GPU is usable. */
static inline void lab_test_need_gpu(void)
{
    char why[240];
    lab_status st = lab_cuda_ready(why, sizeof why);
    if (st == LAB_ERR_UNSUPPORTED) cr_skip_test("no GPU: %s", why);
    cr_assert_eq(st, LAB_OK, "%s", lab_err_msg());
}
#endif

#endif
