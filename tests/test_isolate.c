/* test_isolate: every outcome of an isolated job (PASS, FAIL, CRASH, HANG, SKIP, ERROR), parallelism, orphans. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <math.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lab_isolate.h"

enum { J_PASS, J_FAIL, J_SEGV, J_ABORT, J_HANG, J_SKIP, J_ERROR, J_EXIT1, J_EXIT0, J_NOVERDICT, J_COUNT };

static lab_status job(void *ctx, size_t i, lab_case_result *r)
{
    switch (i % J_COUNT) {
    case J_PASS: lab_result_metric(r, "x", 1.5); lab_result_verdict(r, 1, "fine"); return LAB_OK;
    case J_FAIL: lab_result_verdict(r, 0, "too far"); return LAB_OK;
    case J_SEGV: raise(SIGSEGV); return LAB_OK;
    case J_ABORT: abort();
    case J_HANG: for (;;) pause();
    case J_SKIP: lab_result_skip(r, "no widget"); return LAB_OK;
    case J_ERROR: return lab_err_set(LAB_ERR_IO, "golden/x.npy: missing");
    case J_EXIT1: exit(1);
    case J_EXIT0: _exit(0);
    default: return LAB_OK; /* J_NOVERDICT */
    }
}

Test(isolate, every_outcome_and_the_run_goes_on)
{
    lab_job_outcome out[J_COUNT];
    lab_status st = lab_isolate_run(J_COUNT, job, NULL, 4, 1.0, NULL, out);
    cr_assert_eq(st, LAB_OK);
    cr_expect_eq(out[J_PASS].outcome, LAB_OUT_PASS);
    cr_expect_eq(out[J_PASS].r.n_metrics, 1);
    cr_expect_float_eq(out[J_PASS].r.metrics[0].value, 1.5, 0);
    cr_expect_eq(out[J_FAIL].outcome, LAB_OUT_FAIL);
    cr_expect_str_eq(out[J_FAIL].r.detail, "too far");
    cr_expect_eq(out[J_SEGV].outcome, LAB_OUT_CRASH);
    cr_expect_eq(out[J_SEGV].signal, SIGSEGV);
    cr_expect(strstr(out[J_SEGV].error, "signal 11") != NULL, "%s", out[J_SEGV].error);
    cr_expect_eq(out[J_ABORT].outcome, LAB_OUT_CRASH);
    cr_expect_eq(out[J_ABORT].signal, SIGABRT);
    cr_expect_eq(out[J_HANG].outcome, LAB_OUT_HANG);
    cr_expect(out[J_HANG].wall_s >= 1.0 && out[J_HANG].wall_s < 3.0, "hang noticed after %.2f s", out[J_HANG].wall_s);
    cr_expect_eq(out[J_SKIP].outcome, LAB_OUT_SKIP);
    cr_expect_str_eq(out[J_SKIP].r.detail, "no widget");
    cr_expect_eq(out[J_ERROR].outcome, LAB_OUT_ERROR);
    cr_expect(strstr(out[J_ERROR].error, "golden/x.npy: missing") != NULL, "%s", out[J_ERROR].error);
    cr_expect_eq(out[J_EXIT1].outcome, LAB_OUT_CRASH);
    cr_expect_eq(out[J_EXIT0].outcome, LAB_OUT_ERROR);
    cr_expect_eq(out[J_NOVERDICT].outcome, LAB_OUT_ERROR);
}

/* Job 0 dies by SIGTERM; with `with_runner` a process of its own (out of the job's group) sends the runner SIGTERM 0.1 s
 * later, as a batch system that stops a job signals every process of it (Slurm's scancel, a time limit). */
static lab_status termed(void *ctx, size_t i, lab_case_result *r)
{
    if (i == 0) {
        pid_t runner = getppid();
        if (ctx && fork() == 0) {
            setpgid(0, 0);
            usleep(100000);
            kill(runner, SIGTERM);
            _exit(0);
        }
        raise(SIGTERM);
    }
    usleep(300000);
    lab_result_verdict(r, 1, "fine");
    return LAB_OK;
}

/* A job stopped by SIGTERM with its whole run (the runner's own SIGTERM a moment later) did not finish: no result, not
 * a CRASH a resume would keep (it was one, seen under Slurm's scancel: "killed by signal 15"); a job that died by
 * SIGTERM alone is a CRASH, judged after the runner's short wait for its own signal. */
Test(isolate, a_job_stopped_with_its_run_did_not_finish, .timeout = 30)
{
    cr_assert_eq(lab_isolate_catch_signals(), LAB_OK);
    lab_job_outcome out[3];
    cr_assert_eq(lab_isolate_run(3, termed, (void *)1, 1, 10.0, NULL, out), LAB_OK);
    cr_expect_eq(lab_isolate_interrupted(), SIGTERM);
    cr_expect(out[0].not_run && out[0].outcome == LAB_OUT_ERROR, "job 0: %s %s", lab_outcome_name(out[0].outcome),
              out[0].error);
    cr_expect(out[1].not_run && out[2].not_run, "the jobs after it did not start");
}

Test(isolate, a_job_killed_by_sigterm_alone_is_a_crash, .timeout = 30)
{
    cr_assert_eq(lab_isolate_catch_signals(), LAB_OK);
    lab_job_outcome out[2];
    cr_assert_eq(lab_isolate_run(2, termed, NULL, 1, 10.0, NULL, out), LAB_OK);
    cr_expect_eq(lab_isolate_interrupted(), 0);
    cr_expect(!out[0].not_run && out[0].outcome == LAB_OUT_CRASH && out[0].signal == SIGTERM, "job 0: %s %s",
              lab_outcome_name(out[0].outcome), out[0].error);
    cr_expect_eq(out[1].outcome, LAB_OUT_PASS);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static lab_status sleeper(void *ctx, size_t i, lab_case_result *r)
{
    usleep(200000);
    lab_result_verdict(r, 1, "slept");
    return LAB_OK;
}

Test(isolate, runs_jobs_in_parallel)
{
    lab_job_outcome out[8];
    double t0 = now();
    cr_assert_eq(lab_isolate_run(8, sleeper, NULL, 8, 5, NULL, out), LAB_OK);
    double t = now() - t0;
    for (int i = 0; i < 8; ++i) cr_expect_eq(out[i].outcome, LAB_OUT_PASS);
    cr_expect_lt(t, 1.0, "8 x 0.2 s jobs at 8 wide took %.2f s", t); /* serial would be 1.6 s */
}

/* A hanging job that started a grandchild: the watchdog must take the grandchild too (no orphans). */
static lab_status spawner(void *ctx, size_t i, lab_case_result *r)
{
    const char *pidfile = ctx;
    pid_t g = fork();
    if (g == 0) {
        for (;;) pause();
    }
    FILE *f = fopen(pidfile, "w");
    fprintf(f, "%d\n", (int)g);
    fclose(f);
    for (;;) pause();
    return LAB_OK;
}

Test(isolate, watchdog_leaves_no_orphans)
{
    char pidfile[] = "/tmp/lab-orphan-XXXXXX";
    int fd = mkstemp(pidfile);
    cr_assert(fd >= 0);
    close(fd);
    lab_job_outcome out[1];
    cr_assert_eq(lab_isolate_run(1, spawner, pidfile, 1, 0.5, NULL, out), LAB_OK);
    cr_expect_eq(out[0].outcome, LAB_OUT_HANG);
    FILE *f = fopen(pidfile, "r");
    int g = 0;
    cr_assert(f && fscanf(f, "%d", &g) == 1);
    fclose(f);
    unlink(pidfile);
    usleep(50000);
    /* The grandchild was reparented and killed; once reaped by init it no longer exists. A zombie
     * awaiting reaping shows state Z. */
    char path[64], buf[512] = "";
    snprintf(path, sizeof path, "/proc/%d/stat", g);
    FILE *s = fopen(path, "r");
    if (s) {
        size_t got = fread(buf, 1, sizeof buf - 1, s);
        buf[got] = 0;
        fclose(s);
        char *p = strrchr(buf, ')');
        cr_expect(p && p[2] == 'Z', "grandchild %d still alive: %s", g, buf);
    }
}

/* Batches: the same outcomes job by job when several jobs share a child, in batches that mix every kind;
 * jobs that pass share a process (the point of batching), and a batch cut short by a crash, hang, error
 * or exit goes on in a fresh child. */
static lab_status job_pid(void *ctx, size_t i, lab_case_result *r)
{
    lab_result_metric(r, "pid", (double)getpid());
    return job(ctx, i, r);
}

Test(isolate, batched_outcomes_match_one_job_per_process)
{
    enum { N = 2 * J_COUNT };
    lab_job_outcome one[N], many[N];
    cr_assert_eq(lab_isolate_run(N, job, NULL, 4, 1.0, NULL, one), LAB_OK);
    cr_assert_eq(lab_isolate_run_batched(N, job_pid, NULL, 2, 7, 1.0, NULL, many), LAB_OK);
    for (size_t i = 0; i < N; ++i) {
        cr_expect_eq(many[i].outcome, one[i].outcome, "job %zu: %s batched, %s alone", i,
                     lab_outcome_name(many[i].outcome), lab_outcome_name(one[i].outcome));
        cr_expect_eq(many[i].signal, one[i].signal, "job %zu", i);
    }
    cr_expect(many[J_HANG].wall_s >= 1.0 && many[J_HANG].wall_s < 3.0, "hang noticed after %.2f s", many[J_HANG].wall_s);
    /* Jobs 0 (PASS) and 1 (FAIL) ran in the same child; job 5 (SKIP) ran in a fresh one after the hang. */
    double p0 = lab_result_get(&many[J_PASS].r, "pid"), p1 = lab_result_get(&many[J_FAIL].r, "pid");
    cr_expect(p0 == p1 && p0 > 0, "pid %g vs %g", p0, p1);
    cr_expect_neq(lab_result_get(&many[J_SKIP].r, "pid"), p0);
}

/* A hang is judged per job, not per batch: ten 0.3 s jobs in one child under a 1 s watchdog all pass. */
static lab_status job_slow(void *ctx, size_t i, lab_case_result *r)
{
    usleep(300000);
    lab_result_verdict(r, 1, "slow but steady");
    return LAB_OK;
}

Test(isolate, batched_watchdog_restarts_per_job)
{
    lab_job_outcome out[10];
    cr_assert_eq(lab_isolate_run_batched(10, job_slow, NULL, 1, 10, 1.0, NULL, out), LAB_OK);
    for (int i = 0; i < 10; ++i) cr_expect_eq(out[i].outcome, LAB_OUT_PASS, "job %d: %s", i, lab_outcome_name(out[i].outcome));
}

/* A job starved of CPU by a loaded machine is slow, not hung; one that sleeps forever is hung. Four busy
 * processes share one CPU with the job (affinity), so a job that needs 0.4 CPU-seconds takes about 2 s of
 * wall time under a 0.6 s watchdog: a wall-clock watchdog would kill it (the false alarm this test pins). */
static lab_status job_cpu(void *ctx, size_t i, lab_case_result *r)
{
    if (i == 1) {
        for (;;) pause(); /* a deadlock: no CPU wanted, none waited for */
    }
    struct timespec t;
    double used = 0;
    volatile double x = 0;
    while (used < 0.4) {
        for (int k = 0; k < 100000; ++k) x += k;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
        used = (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
    }
    lab_result_verdict(r, 1, "0.4 CPU-seconds of work done");
    return LAB_OK;
}

Test(isolate, a_starved_job_is_slow_not_hung, .timeout = 60)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    cr_assert_eq(sched_getaffinity(0, sizeof one, &one), 0);
    int cpu = 0;
    while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &one)) ++cpu;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    cr_assert_eq(sched_setaffinity(0, sizeof one, &one), 0);
    pid_t hogs[4];
    for (int h = 0; h < 4; ++h) {
        hogs[h] = fork();
        cr_assert_geq(hogs[h], 0);
        if (hogs[h] == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            for (volatile unsigned long k = 0;; ++k) {}
        }
    }
    lab_job_outcome out[2];
    lab_status st = lab_isolate_run(2, job_cpu, NULL, 2, 0.6, NULL, out);
    for (int h = 0; h < 4; ++h) {
        kill(hogs[h], SIGKILL);
        waitpid(hogs[h], NULL, 0);
    }
    cr_assert_eq(st, LAB_OK);
    cr_expect_eq(out[0].outcome, LAB_OUT_PASS, "starved job: %s after %.2f s (%s)", lab_outcome_name(out[0].outcome),
                 out[0].wall_s, out[0].error);
    cr_expect_gt(out[0].wall_s, 0.6, "the job was starved (%.2f s wall): the test shows nothing otherwise",
                 out[0].wall_s);
    cr_expect_eq(out[1].outcome, LAB_OUT_HANG, "sleeping job: %s", lab_outcome_name(out[1].outcome));
    cr_expect_lt(out[1].wall_s, 3.0, "a deadlock is still caught within its timeout: %.2f s", out[1].wall_s);
}

/* Given ranges: uneven ones each run in one child (an empty range starts none), every job reports once,
 * and each job has its own watchdog: a 0.3 s job passes under 1 s and hangs under 0.1 s. */
static double timeout_by_job(void *ctx, size_t job)
{
    (void)ctx;
    return job == 4 ? 0.1 : 1.0;
}
static lab_status job_slow_pid(void *ctx, size_t i, lab_case_result *r)
{
    lab_result_metric(r, "pid", (double)getpid());
    return job_slow(ctx, i, r);
}
Test(isolate, ranges_run_each_in_one_child_with_per_job_watchdogs)
{
    size_t bounds[] = {0, 3, 3, 7};
    lab_job_outcome out[7];
    cr_assert_eq(lab_isolate_run_ranges(7, job_slow_pid, NULL, 3, bounds, 3, 5.0, timeout_by_job, NULL, out), LAB_OK);
    for (size_t i = 0; i < 7; ++i)
        cr_expect_eq(out[i].outcome, i == 4 ? LAB_OUT_HANG : LAB_OUT_PASS, "job %zu: %s", i, lab_outcome_name(out[i].outcome));
    double a = lab_result_get(&out[0].r, "pid");
    cr_expect(a > 0 && lab_result_get(&out[1].r, "pid") == a && lab_result_get(&out[2].r, "pid") == a);
    cr_expect(lab_result_get(&out[3].r, "pid") != a, "the second range has a child of its own");
    size_t bad[] = {0, 5, 4, 7};
    cr_expect_eq(lab_isolate_run_ranges(7, job_slow_pid, NULL, 3, bad, 3, 5.0, NULL, NULL, out), LAB_ERR_ARG);
}

/* The long-lived pool: ranges that run to their end keep their child (one process per slot, however many ranges);
 * a job that crashes, hangs, retires its worker or returns an error ends its child, the rest of its range runs in a
 * fresh one, and every job still gets its own outcome. The same ranges under lab_isolate_run_ranges start a child
 * each (the comparison that shows the pool is what reuses them). */
enum { P_N = 24, P_LEN = 3 };
static lab_status job_pool(void *ctx, size_t i, lab_case_result *r)
{
    (void)ctx;
    lab_result_metric(r, "pid", (double)getpid());
    switch (i) {
    case 6: raise(SIGSEGV); return LAB_OK;
    case 12: for (;;) pause();
    case 15: lab_result_verdict(r, 1, "fine, but its worker must not go on"); r->retire_worker = 1; return LAB_OK;
    case 18: return lab_err_set(LAB_ERR_DEVICE, "device lost");
    default: lab_result_verdict(r, 1, "fine"); return LAB_OK;
    }
}
/* Whether job j's process ran any job before `before`. */
static int pid_seen_before(const lab_job_outcome *out, size_t j, size_t before)
{
    double p = lab_result_get(&out[j].r, "pid");
    for (size_t i = 0; i < before; ++i)
        if (lab_result_get(&out[i].r, "pid") == p) return 1;
    return 0;
}
static size_t distinct_pids(const lab_job_outcome *out, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) {
        double p = lab_result_get(&out[i].r, "pid");
        if (isnan(p) || p <= 0) continue;
        int dup = 0;
        for (size_t j = 0; j < i && !dup; ++j) dup = lab_result_get(&out[j].r, "pid") == p;
        k += !dup;
    }
    return k;
}
Test(isolate, pool_keeps_its_children_across_ranges_and_ends_them_on_a_bad_job, .timeout = 60)
{
    size_t bounds[P_N / P_LEN + 1];
    for (size_t r = 0; r <= P_N / P_LEN; ++r) bounds[r] = P_LEN * r; /* 8 ranges of 3; jobs 6, 12, 15, 18 lead theirs */
    lab_job_outcome out[P_N], sep[P_N];
    memset(out, 0xff, sizeof out); /* no outcome: a job never reported fails below */
    memset(sep, 0xff, sizeof sep);
    cr_assert_eq(lab_isolate_run_pool(P_N, job_pool, NULL, 2, bounds, P_N / P_LEN, 0.5, NULL, NULL, out, NULL), LAB_OK, "%s", lab_err_msg());
    for (size_t i = 0; i < P_N; ++i) {
        lab_outcome want = i == 6 ? LAB_OUT_CRASH : i == 12 ? LAB_OUT_HANG : i == 18 ? LAB_OUT_ERROR : LAB_OUT_PASS;
        cr_expect_eq(out[i].outcome, want, "job %zu: %s, not %s", i, lab_outcome_name(out[i].outcome), lab_outcome_name(want));
    }
    /* two first children, and one fresh child for the rest of each of the four ranges a bad job cut short */
    size_t pool = distinct_pids(out, P_N);
    cr_expect(pool >= 2 && pool <= 6, "%zu processes ran the 24 jobs of the pool", pool);
    cr_expect(!pid_seen_before(out, 7, 6), "the rest of the crashed range ran in a fresh child");
    cr_expect(!pid_seen_before(out, 13, 12), "the rest of the hung range ran in a fresh child");
    cr_expect(lab_result_get(&out[16].r, "pid") != lab_result_get(&out[15].r, "pid"), "a retired worker took no more jobs");
    cr_expect(!pid_seen_before(out, 19, 18), "the rest of the range whose job failed ran in a fresh child");
    cr_assert_eq(lab_isolate_run_ranges(P_N, job_pool, NULL, 2, bounds, P_N / P_LEN, 0.5, NULL, NULL, sep), LAB_OK);
    cr_expect_geq(distinct_pids(sep, P_N), 8u, "run_ranges starts a child per range");
    for (size_t i = 0; i < P_N; ++i) cr_expect_eq(sep[i].outcome, out[i].outcome, "job %zu", i);
}

/* The pool's init: a child starts without a range and takes one when its init is done, so a slow start holds no work;
 * a child that dies or hangs in init loses no job, and its slot's next child starts with a range, without init. */
static int init_mode; /* 0: slot 1 slow; 1: slot 1 crashes; 2: slot 1 hangs */
static void init_slots(void *ctx)
{
    (void)ctx;
    if (lab_isolate_worker_slot() != 1) return;
    if (init_mode == 0) usleep(600000);
    else if (init_mode == 1) raise(SIGSEGV);
    else for (;;) pause();
}
static lab_status job_quick_pid(void *ctx, size_t i, lab_case_result *r)
{
    (void)ctx, (void)i;
    usleep(10000);
    lab_result_metric(r, "pid", (double)getpid());
    lab_result_verdict(r, 1, "fine");
    return LAB_OK;
}
Test(isolate, pool_init_runs_before_any_work_and_a_broken_init_loses_no_job, .timeout = 60)
{
    enum { N = 12 };
    size_t bounds[N + 1];
    for (size_t r = 0; r <= N; ++r) bounds[r] = r; /* 12 ranges of one job, 10 ms each */
    for (init_mode = 0; init_mode < 3; ++init_mode) {
        lab_job_outcome out[N];
        memset(out, 0xff, sizeof out);
        cr_assert_eq(lab_isolate_run_pool(N, job_quick_pid, NULL, 2, bounds, N, 0.4, NULL, NULL, out, init_slots), LAB_OK,
                     "%s", lab_err_msg());
        for (size_t i = 0; i < N; ++i)
            cr_expect_eq(out[i].outcome, LAB_OUT_PASS, "init mode %d, job %zu: %s", init_mode, i, lab_outcome_name(out[i].outcome));
        double p0 = lab_result_get(&out[0].r, "pid");
        if (init_mode == 1) { /* died at once: its slot's next child, without init, shares the work */
            int other = 0;
            for (size_t i = 1; i < N; ++i) other |= lab_result_get(&out[i].r, "pid") != p0;
            cr_expect(other, "a child without init took work in slot 1");
            continue;
        }
        /* while slot 1 starts (0.6 s) or hangs until the watchdog (0.4 s), slot 0 takes the work: the first jobs all
         * ran in one process */
        for (size_t i = 1; i < 8; ++i)
            cr_expect_eq(lab_result_get(&out[i].r, "pid"), p0, "init mode %d: job %zu ran beside a child still starting", init_mode, i);
    }
}

/* A fed run: ranges come from the feed as the run goes (here one range of 3 jobs every other call, "nothing now" in
 * between, up to job 18 of 24, then "never more"). Every fed job runs once; the jobs never fed are left untouched; a
 * pool's children wait across the feed's pauses instead of ending (one process per slot for all of it); the tick is
 * called at every turn. */
typedef struct {
    size_t next, calls, ticks;
} fed_src;
static int feed_threes(void *ctx, size_t waiting, size_t *first, size_t *end)
{
    fed_src *f = ctx;
    if (f->next >= 18) return -1;
    if (f->calls++ % 2) return 0;
    if (waiting >= 2) return 0; /* a queue that is not low: nothing more yet */
    *first = f->next;
    *end = f->next += 3;
    return 1;
}
static void count_tick(void *ctx) { ((fed_src *)ctx)->ticks++; }
static lab_status job_fed_pid(void *ctx, size_t i, lab_case_result *r)
{
    (void)ctx, (void)i;
    lab_result_metric(r, "pid", (double)getpid());
    usleep(20000);
    lab_result_verdict(r, 1, "fine");
    return LAB_OK;
}
Test(isolate, fed_run_takes_ranges_as_they_come, .timeout = 60)
{
    for (int reuse = 0; reuse < 2; ++reuse) {
        lab_job_outcome out[24];
        memset(out, 0xff, sizeof out);
        fed_src f = {0};
        lab_isolate_on_tick(count_tick, &f);
        cr_assert_eq(lab_isolate_run_fed(24, job_fed_pid, NULL, 2, feed_threes, &f, 5.0, NULL, NULL, out, reuse, NULL), LAB_OK,
                     "%s", lab_err_msg());
        lab_isolate_on_tick(NULL, NULL);
        for (size_t i = 0; i < 18; ++i) cr_expect_eq(out[i].outcome, LAB_OUT_PASS, "reuse %d, job %zu", reuse, i);
        for (size_t i = 18; i < 24; ++i) cr_expect_eq((unsigned)out[i].outcome, 0xffffffffu, "job %zu was never fed", i);
        cr_expect_gt(f.ticks, f.calls / 2, "the tick runs at every turn (%zu ticks, %zu feed calls)", f.ticks, f.calls);
        size_t procs = distinct_pids(out, 18);
        if (reuse) cr_expect_leq(procs, 2u, "a pool of 2 ran the 6 fed ranges in %zu processes", procs);
        else cr_expect_eq(procs, 6u, "a child per range: %zu processes for 6 ranges", procs);
    }
}

static int feed_bad(void *ctx, size_t waiting, size_t *first, size_t *end)
{
    (void)ctx, (void)waiting;
    *first = 4;
    *end = 9; /* past the 8 jobs */
    return 1;
}
Test(isolate, fed_range_outside_the_jobs_is_an_error)
{
    lab_job_outcome out[8];
    cr_expect_eq(lab_isolate_run_fed(8, job_fed_pid, NULL, 2, feed_bad, NULL, 5.0, NULL, NULL, out, 1, NULL), LAB_ERR_ARG);
    cr_expect(strstr(lab_err_msg(), "[4, 9)") != NULL, "%s", lab_err_msg());
}
