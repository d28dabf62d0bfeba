/* test_cuda: how the lab's host threads wait for the GPU (lab_cuda_event_create, lab_cuda_wait_probe); skips without a GPU. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "lab_cuda.h"

#ifdef LAB_HAVE_CUDA
static void cuda_or_skip(void)
{
    char why[240];
    lab_status st = lab_cuda_ready(why, sizeof why);
    if (st == LAB_ERR_UNSUPPORTED) cr_skip_test("needs a CUDA GPU: %s", why);
    cr_assert_eq(st, LAB_OK, "%s", why);
}

/* A worker that waits on a timed kernel must give its core to the others' CPU work: cudaEventSynchronize on an event
 * without cudaEventBlockingSync spins for the kernel's whole length. The probe's kernel runs 300 ms; a spinning wait
 * costs about 1 CPU second per wall second, a sleeping one next to nothing, so 0.5 parts them whatever the load. */
Test(cuda, a_timed_wait_sleeps_instead_of_spinning, .timeout = 60)
{
    cuda_or_skip();
    double frac = -1, ms = 0;
    cr_assert_eq(lab_cuda_wait_probe(300, &frac, &ms), LAB_OK, "%s", lab_err_msg());
    cr_expect_gt(ms, 100, "the wait lasted %.1f ms: the probe's kernel did not run long enough to judge", ms);
    cr_expect_lt(frac, 0.5, "the host spent %.2f CPU s per wall s waiting %.0f ms for a kernel", frac, ms);
}

/* The probe can tell: with LAB_CUDA_SYNC=auto the lab's events are the default ones, and the wait spins. */
Test(cuda, the_default_event_spins_and_the_probe_sees_it, .timeout = 60)
{
    cuda_or_skip();
    setenv("LAB_CUDA_SYNC", "auto", 1);
    double frac = -1, ms = 0;
    lab_status st = lab_cuda_wait_probe(300, &frac, &ms);
    unsetenv("LAB_CUDA_SYNC");
    cr_assert_eq(st, LAB_OK, "%s", lab_err_msg());
    cr_expect_gt(frac, 0.5, "a default event's wait of %.0f ms cost only %.2f CPU s per wall s", ms, frac);
}

Test(cuda, the_probe_refuses_a_bad_length)
{
    double frac = 0;
    cr_expect_eq(lab_cuda_wait_probe(0, &frac, NULL), LAB_ERR_ARG);
    cr_expect_eq(lab_cuda_wait_probe(1e9, &frac, NULL), LAB_ERR_ARG);
}
#else
Test(cuda, a_timed_wait_sleeps_instead_of_spinning)
{
    cr_skip_test("this build has no CUDA (nvcc missing or CUDA=0)");
}
#endif
