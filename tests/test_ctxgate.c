/* test_ctxgate: the gate a replay's CUDA workers make their contexts through (replay/lab_ctxgate.c), with forked
 * stand-in workers that count who is inside at once. */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab_ctxgate.h"

typedef struct {
    atomic_int inside, most, through;
} gate_tally;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* n workers each hold the gate for hold_us; returns the tally (shared memory). */
static gate_tally *run_workers(lab_ctxgate *g, int n, int hold_us, double wait_s)
{
    gate_tally *t = mmap(NULL, sizeof *t, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cr_assert(t != MAP_FAILED);
    memset(t, 0, sizeof *t);
    for (int i = 0; i < n; ++i) {
        pid_t p = fork();
        cr_assert(p >= 0);
        if (p == 0) {
            int took = lab_ctxgate_enter(g, wait_s);
            int in = atomic_fetch_add(&t->inside, 1) + 1;
            int m = atomic_load(&t->most);
            while (in > m && !atomic_compare_exchange_weak(&t->most, &m, in)) {
            }
            usleep(hold_us);
            atomic_fetch_sub(&t->inside, 1);
            atomic_fetch_add(&t->through, took);
            lab_ctxgate_leave(g, took);
            _exit(0);
        }
    }
    for (int i = 0; i < n; ++i) cr_assert(wait(NULL) > 0);
    return t;
}

Test(ctxgate, at_most_width_inside_and_everyone_through)
{
    lab_ctxgate g;
    cr_assert_eq(lab_ctxgate_open(&g, 2), LAB_OK);
    gate_tally *t = run_workers(&g, 8, 30000, 10.0);
    cr_expect_leq(atomic_load(&t->most), 2, "at most 2 workers inside at once, saw %d", atomic_load(&t->most));
    cr_expect_eq(atomic_load(&t->through), 8, "every worker took a token");
    /* and every token came back: the next round gets in at once */
    cr_expect_eq(lab_ctxgate_enter(&g, 0.0), 1);
    cr_expect_eq(lab_ctxgate_enter(&g, 0.0), 1);
    cr_expect_eq(lab_ctxgate_enter(&g, 0.0), 0, "only 2 tokens");
    lab_ctxgate_close(&g);
    munmap(t, sizeof *t);
}

Test(ctxgate, a_worker_that_dies_holding_a_token_costs_a_wait_not_a_hang)
{
    lab_ctxgate g;
    cr_assert_eq(lab_ctxgate_open(&g, 1), LAB_OK);
    pid_t p = fork();
    if (p == 0) {
        (void)lab_ctxgate_enter(&g, 1.0);
        _exit(0); /* dies without giving it back */
    }
    cr_assert(waitpid(p, NULL, 0) == p);
    double t0 = now_s();
    cr_expect_eq(lab_ctxgate_enter(&g, 0.3), 0, "nobody gives the token back: the wait ends");
    double dt = now_s() - t0;
    cr_expect(dt >= 0.25 && dt < 2.0, "waited %.2f s for a 0.3 s limit", dt);
    lab_ctxgate_close(&g);
}

Test(ctxgate, a_closed_gate_lets_everyone_through_at_once)
{
    lab_ctxgate g = LAB_CTXGATE_CLOSED;
    cr_expect_eq(lab_ctxgate_enter(&g, 5.0), 0);
    lab_ctxgate_leave(&g, 0);
    gate_tally *t = run_workers(&g, 4, 300000, 5.0);
    cr_expect_eq(atomic_load(&t->most), 4, "all 4 inside at once, saw %d", atomic_load(&t->most));
    munmap(t, sizeof *t);
}
