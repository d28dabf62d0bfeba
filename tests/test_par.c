/* test_par: lab_par_for runs every item once on several threads, stops handing out items after a failure and
 * reports the lowest failing item with its message; one thread is the plain loop. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <string.h>

#include "lab_par.h"

typedef struct {
    atomic_int runs[1000];
    size_t fail_from;          /* items >= this fail (n: none) */
    atomic_size_t ran;
} par_t;

static lab_status par_item(void *ctx, size_t i)
{
    par_t *p = ctx;
    atomic_fetch_add(&p->runs[i], 1);
    atomic_fetch_add(&p->ran, 1);
    if (i >= p->fail_from) return lab_err_set(LAB_ERR_MISMATCH, "item %zu failed", i);
    return LAB_OK;
}

Test(par, every_item_runs_once_on_threads)
{
    for (int threads = 1; threads <= 8; threads *= 2) {
        static par_t p;
        memset(&p, 0, sizeof p);
        p.fail_from = 1000;
        cr_assert_eq(lab_par_for(1000, threads, par_item, &p), LAB_OK, "%s", lab_err_msg());
        for (size_t i = 0; i < 1000; ++i) cr_expect_eq(p.runs[i], 1, "%d threads: item %zu ran %d times", threads, i, (int)p.runs[i]);
    }
}

Test(par, lowest_failure_is_reported_and_no_item_starts_after_it)
{
    for (int threads = 1; threads <= 8; threads *= 2) {
        static par_t p;
        memset(&p, 0, sizeof p);
        p.fail_from = 300;
        lab_err_clear();
        cr_assert_eq(lab_par_for(1000, threads, par_item, &p), LAB_ERR_MISMATCH);
        cr_expect_str_eq(lab_err_msg(), "item 300 failed", "%d threads", threads);
        /* items are handed out in order and none after the failure is seen: at most one in flight per thread ran */
        cr_expect_leq(p.ran, 301 + (size_t)threads, "%d threads: %zu items ran", threads, (size_t)p.ran);
        for (size_t i = 0; i < 300; ++i) cr_expect_eq(p.runs[i], 1, "%d threads: item %zu", threads, i);
    }
}

Test(par, one_thread_is_the_plain_loop)
{
    static par_t p;
    memset(&p, 0, sizeof p);
    p.fail_from = 5;
    cr_assert_eq(lab_par_for(10, 1, par_item, &p), LAB_ERR_MISMATCH);
    cr_expect_eq(p.ran, 6, "the plain loop stops at the first error");
    cr_expect_eq(lab_par_for(0, 4, par_item, &p), LAB_OK);
    cr_expect_geq(lab_par_threads(), 1);
}
