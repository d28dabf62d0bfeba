/* test_ctxgate: the gate a replay's CUDA workers make their contexts through (replay/gpu/lab_ctxgate.c), with forked
 * stand-in workers that count who is inside at once. */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab_ctxgate.h"

#define LANES 4

typedef struct {
    atomic_int inside, most, through;
    atomic_int lane_inside[LANES], lane_most[LANES];
    double done[64];                       /* when each worker left the gate, from the start */
} gate_tally;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void raise_to(atomic_int *most, int in)
{
    int m = atomic_load(most);
    while (in > m && !atomic_compare_exchange_weak(most, &m, in)) {
    }
}

/* n workers (at most 64) each hold the gate for hold_us, worker i in lane lane_of[i] (NULL: lane 0); returns the tally
 * (shared memory). */
static gate_tally *run_workers(lab_ctxgate *g, int n, const int *lane_of, int hold_us, double wait_s)
{
    gate_tally *t = mmap(NULL, sizeof *t, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cr_assert(t != MAP_FAILED);
    memset(t, 0, sizeof *t);
    double t0 = now_s();
    for (int i = 0; i < n; ++i) {
        pid_t p = fork();
        cr_assert(p >= 0);
        if (p == 0) {
            int lane = lane_of ? lane_of[i] : 0;
            int took = lab_ctxgate_enter(g, lane, wait_s);
            raise_to(&t->most, atomic_fetch_add(&t->inside, 1) + 1);
            raise_to(&t->lane_most[lane % LANES], atomic_fetch_add(&t->lane_inside[lane % LANES], 1) + 1);
            usleep(hold_us);
            atomic_fetch_sub(&t->lane_inside[lane % LANES], 1);
            atomic_fetch_sub(&t->inside, 1);
            atomic_fetch_add(&t->through, took);
            t->done[i] = now_s() - t0;
            lab_ctxgate_leave(g, lane, took);
            _exit(0);
        }
    }
    for (int i = 0; i < n; ++i) cr_assert(wait(NULL) > 0);
    return t;
}

Test(ctxgate, at_most_width_inside_and_everyone_through)
{
    lab_ctxgate g;
    cr_assert_eq(lab_ctxgate_open(&g, 2, 1), LAB_OK);
    gate_tally *t = run_workers(&g, 8, NULL, 30000, 10.0);
    cr_expect_leq(atomic_load(&t->most), 2, "at most 2 workers inside at once, saw %d", atomic_load(&t->most));
    cr_expect_eq(atomic_load(&t->through), 8, "every worker took a token");
    /* and every token came back: the next round gets in at once */
    cr_expect_eq(lab_ctxgate_enter(&g, 0, 0.0), 1);
    cr_expect_eq(lab_ctxgate_enter(&g, 0, 0.0), 1);
    cr_expect_eq(lab_ctxgate_enter(&g, 0, 0.0), 0, "only 2 tokens");
    lab_ctxgate_close(&g);
    munmap(t, sizeof *t);
}

Test(ctxgate, a_worker_that_dies_holding_a_token_costs_a_wait_not_a_hang)
{
    lab_ctxgate g;
    cr_assert_eq(lab_ctxgate_open(&g, 1, 1), LAB_OK);
    pid_t p = fork();
    if (p == 0) {
        (void)lab_ctxgate_enter(&g, 0, 1.0);
        _exit(0); /* dies without giving it back */
    }
    cr_assert(waitpid(p, NULL, 0) == p);
    double t0 = now_s();
    cr_expect_eq(lab_ctxgate_enter(&g, 0, 0.3), 0, "nobody gives the token back: the wait ends");
    double dt = now_s() - t0;
    cr_expect(dt >= 0.25 && dt < 2.0, "waited %.2f s for a 0.3 s limit", dt);
    lab_ctxgate_close(&g);
}

Test(ctxgate, a_closed_gate_lets_everyone_through_at_once)
{
    lab_ctxgate g = LAB_CTXGATE_CLOSED;
    cr_expect_eq(lab_ctxgate_enter(&g, 0, 5.0), 0);
    lab_ctxgate_leave(&g, 0, 0);
    gate_tally *t = run_workers(&g, 4, NULL, 300000, 5.0);
    cr_expect_eq(atomic_load(&t->most), 4, "all 4 inside at once, saw %d", atomic_load(&t->most));
    munmap(t, sizeof *t);
}

/* A lane a GPU: width 4 over 2 lanes is 2 tokens a lane, never more inside a lane. Twelve workers of lane 0 ask before
 * three of lane 1, which go through in two rounds (0.4 s), not behind lane 0's queue of six (1.2 s); the bound leaves
 * half a second for a loaded machine's forks. */
Test(ctxgate, every_lane_has_its_share_of_the_width)
{
    lab_ctxgate g;
    cr_assert_eq(lab_ctxgate_open(&g, 4, 2), LAB_OK);
    cr_expect_eq(g.lanes, 2);
    int lane_of[15];
    for (int i = 0; i < 15; ++i) lane_of[i] = i < 12 ? 0 : 1;
    gate_tally *t = run_workers(&g, 15, lane_of, 200000, 10.0);
    cr_expect_leq(atomic_load(&t->lane_most[0]), 2, "lane 0: at most 2 inside, saw %d", atomic_load(&t->lane_most[0]));
    cr_expect_leq(atomic_load(&t->lane_most[1]), 2, "lane 1: at most 2 inside, saw %d", atomic_load(&t->lane_most[1]));
    cr_expect_eq(atomic_load(&t->through), 15);
    double last0 = 0.0, last1 = 0.0;
    for (int i = 0; i < 15; ++i) *(i < 12 ? &last0 : &last1) = fmax(*(i < 12 ? &last0 : &last1), t->done[i]);
    cr_expect_lt(last1, 0.9, "lane 1's three went through in two rounds of 0.2 s (%.2f s), not behind lane 0", last1);
    cr_expect_geq(last0, 1.15, "lane 0's twelve took six rounds (%.2f s)", last0);
    /* more lanes than the width: a token each */
    lab_ctxgate_close(&g);
    cr_assert_eq(lab_ctxgate_open(&g, 4, 8), LAB_OK);
    for (int l = 0; l < 8; ++l) cr_expect_eq(lab_ctxgate_enter(&g, l, 0.0), 1, "lane %d", l);
    for (int l = 0; l < 8; ++l) cr_expect_eq(lab_ctxgate_enter(&g, l, 0.0), 0, "lane %d has one token", l);
    lab_ctxgate_close(&g);
    cr_expect_eq(g.lanes, 0, "closed");
    munmap(t, sizeof *t);
}

/* Ranks sharing a host share its width: 4 for one process, 2 each for 2, 1 each for 4 or more, never 0. */
Test(ctxgate, ranks_on_one_host_divide_its_width)
{
    cr_expect_eq(lab_ctxgate_share(LAB_CTXGATE_WIDTH, 1), 4);
    cr_expect_eq(lab_ctxgate_share(LAB_CTXGATE_WIDTH, 0), 4, "no rank count: the process alone");
    cr_expect_eq(lab_ctxgate_share(LAB_CTXGATE_WIDTH, 2), 2);
    cr_expect_eq(lab_ctxgate_share(LAB_CTXGATE_WIDTH, 3), 1);
    cr_expect_eq(lab_ctxgate_share(LAB_CTXGATE_WIDTH, 8), 1, "more ranks than tokens: one each");
}
