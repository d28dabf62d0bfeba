/* test_bg: lab_bg runs a started job on its background thread without being asked, in start order; collecting a job
 * no thread has begun runs it on the collector (so a busy background thread never blocks it), cancelling one drops
 * it; the job's status and message reach the collector; a forked child runs its parent's queued jobs itself; a
 * signal sent to the process is never handled on the background thread. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab_bg.h"

typedef struct {
    atomic_int started, ran;
    atomic_int *gate;     /* NULL, or spin until it is set */
    pthread_t thread;     /* the thread that ran it */
    int fail;             /* return an error naming `id` */
    int id;
    int *log, *nlog;      /* append id (the background thread alone writes these) */
} bg_t;

static lab_status bg_job(void *arg)
{
    bg_t *b = arg;
    atomic_store(&b->started, 1);
    while (b->gate && !atomic_load(b->gate)) usleep(1000);
    b->thread = pthread_self();
    if (b->log) b->log[(*b->nlog)++] = b->id;
    atomic_fetch_add(&b->ran, 1);
    return b->fail ? lab_err_set(LAB_ERR_MISMATCH, "job %d failed", b->id) : LAB_OK;
}

/* Waits up to 10 s for *flag to reach want. */
static int bg_until(atomic_int *flag, int want)
{
    for (int i = 0; i < 10000 && atomic_load(flag) < want; ++i) usleep(1000);
    return atomic_load(flag) >= want;
}

/* Starts a, held at *gate (closed here) on the background thread, and returns once it has begun: jobs started after
 * it stay queued until the gate opens. */
static lab_bg_job *bg_held(atomic_int *gate, bg_t *a)
{
    atomic_store(gate, 0);
    a->gate = gate;
    lab_bg_job *j = lab_bg_start(bg_job, a);
    cr_assert_not_null(j);
    cr_assert(bg_until(&a->started, 1), "the held job did not start");
    return j;
}

Test(bg, a_started_job_runs_in_the_background_and_is_collected_once, .timeout = 20)
{
    static bg_t b;
    memset(&b, 0, sizeof b);
    lab_bg_job *j = lab_bg_start(bg_job, &b);
    cr_assert_not_null(j);
    cr_assert(bg_until(&b.ran, 1), "the job did not run within 10 s without being collected");
    cr_expect(!pthread_equal(b.thread, pthread_self()), "it ran on the background thread");
    cr_expect_eq(lab_bg_wait(j), LAB_OK);
    cr_expect_eq(b.ran, 1);
    cr_expect_eq(lab_bg_wait(NULL), LAB_OK);
    lab_bg_cancel(NULL);
}

Test(bg, a_job_no_thread_has_begun_runs_on_the_collector, .timeout = 20)
{
    static atomic_int gate;
    static bg_t a, b;
    memset(&a, 0, sizeof a), memset(&b, 0, sizeof b);
    lab_bg_job *ja = bg_held(&gate, &a), *jb = lab_bg_start(bg_job, &b);
    cr_assert_not_null(jb);
    /* the background thread is held by a: b is collected here, now, and runs on this thread */
    cr_expect_eq(lab_bg_wait(jb), LAB_OK);
    cr_expect_eq(b.ran, 1);
    cr_expect(pthread_equal(b.thread, pthread_self()), "the queued job ran on the collecting thread");
    cr_expect_eq(a.ran, 0, "the running job is still held");
    atomic_store(&gate, 1);
    cr_expect_eq(lab_bg_wait(ja), LAB_OK, "a running job is waited for");
    cr_expect_eq(a.ran, 1);
}

Test(bg, a_cancelled_job_that_has_not_begun_never_runs, .timeout = 20)
{
    static atomic_int gate;
    static bg_t a, b, c;
    memset(&a, 0, sizeof a), memset(&b, 0, sizeof b), memset(&c, 0, sizeof c);
    lab_bg_job *ja = bg_held(&gate, &a), *jb = lab_bg_start(bg_job, &b), *jc = lab_bg_start(bg_job, &c);
    cr_assert(jb && jc);
    lab_bg_cancel(jb);
    atomic_store(&gate, 1);
    /* jobs run in start order: once c has run in the background, b would have run before it */
    cr_assert(bg_until(&c.ran, 1), "the job after the cancelled one did not run");
    cr_expect_eq(b.ran, 0, "the cancelled job ran");
    cr_expect_eq(lab_bg_wait(jc), LAB_OK);
    lab_bg_cancel(ja); /* a running or finished job: waited for, freed */
    cr_expect_eq(a.ran, 1);
}

Test(bg, the_status_and_message_reach_the_collector, .timeout = 20)
{
    static atomic_int gate;
    static bg_t a, b;
    memset(&a, 0, sizeof a), memset(&b, 0, sizeof b);
    a.fail = 1, a.id = 7, b.fail = 1, b.id = 8;
    lab_bg_job *ja = bg_held(&gate, &a), *jb = lab_bg_start(bg_job, &b);
    cr_assert_not_null(jb);
    lab_err_clear();
    cr_expect_eq(lab_bg_wait(jb), LAB_ERR_MISMATCH, "run here");
    cr_expect_str_eq(lab_err_msg(), "job 8 failed");
    atomic_store(&gate, 1);
    cr_assert(bg_until(&a.ran, 1));
    lab_err_clear();
    cr_expect_eq(lab_bg_wait(ja), LAB_ERR_MISMATCH, "run in the background");
    cr_expect_str_eq(lab_err_msg(), "job 7 failed", "the background thread's message, on the collecting thread");
}

Test(bg, jobs_run_in_the_order_they_were_started, .timeout = 20)
{
    enum { N = 50 };
    static atomic_int gate;
    static bg_t g, b[N];
    static int log[N], nlog;
    memset(&g, 0, sizeof g), memset(b, 0, sizeof b), nlog = 0;
    atomic_store(&gate, 0);
    g.gate = &gate;
    lab_bg_job *jg = lab_bg_start(bg_job, &g), *j[N];
    cr_assert_not_null(jg);
    for (int i = 0; i < N; ++i) {
        b[i].id = i, b[i].log = log, b[i].nlog = &nlog;
        cr_assert_not_null(j[i] = lab_bg_start(bg_job, &b[i]));
    }
    atomic_store(&gate, 1);
    cr_assert(bg_until(&b[N - 1].ran, 1), "the last job did not run in the background");
    for (int i = 0; i < N; ++i) cr_expect_eq(log[i], i, "position %d ran job %d", i, log[i]);
    for (int i = N - 1; i >= 0; --i) cr_expect_eq(lab_bg_wait(j[i]), LAB_OK);
    cr_expect_eq(lab_bg_wait(jg), LAB_OK);
}

Test(bg, a_forked_child_runs_its_parents_queued_jobs_itself, .timeout = 20)
{
    static atomic_int gate;
    static bg_t a, b;
    memset(&a, 0, sizeof a), memset(&b, 0, sizeof b);
    lab_bg_job *ja = bg_held(&gate, &a), *jb = lab_bg_start(bg_job, &b);
    cr_assert_not_null(jb);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        alarm(10); /* a child that hangs must not outlive the test */
        /* no background thread here: b runs on this thread; a was the parent's thread's, not collectable; a new job
         * gets a thread of the child's own */
        int rc = 0;
        if (lab_bg_wait(jb) != LAB_OK || b.ran != 1 || !pthread_equal(b.thread, pthread_self())) rc |= 1;
        if (lab_bg_wait(ja) != LAB_ERR_ARG) rc |= 2;
        static bg_t c;
        lab_bg_job *jc = lab_bg_start(bg_job, &c);
        if (!jc || !bg_until(&c.ran, 1) || lab_bg_wait(jc) != LAB_OK) rc |= 4;
        _exit(rc);
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: status %d (1: queued job, 2: running job, 4: new job)",
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    atomic_store(&gate, 1);
    cr_expect_eq(lab_bg_wait(ja), LAB_OK);
    cr_expect_eq(lab_bg_wait(jb), LAB_OK);
    cr_expect_eq(a.ran, 1);
    cr_expect_eq(b.ran, 1, "the parent's copy of the queued job ran once, here");
}

static volatile sig_atomic_t bg_sig_seen;
static pthread_t bg_sig_thread;
static void bg_on_usr1(int sig)
{
    (void)sig;
    bg_sig_thread = pthread_self();
    bg_sig_seen = 1;
}

Test(bg, a_signal_to_the_process_is_never_handled_by_the_background_thread, .timeout = 20)
{
    static atomic_int gate;
    static bg_t a;
    memset(&a, 0, sizeof a);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = bg_on_usr1;
    cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
    lab_bg_job *ja = bg_held(&gate, &a);
    /* this thread blocks the signal: a background thread that did not would take it */
    sigset_t one, old;
    sigemptyset(&one);
    sigaddset(&one, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &one, &old);
    bg_sig_seen = 0;
    kill(getpid(), SIGUSR1);
    usleep(100 * 1000);
    cr_expect_eq(bg_sig_seen, 0, "the background thread handled a signal sent to the process");
    pthread_sigmask(SIG_SETMASK, &old, NULL); /* pending: delivered here now */
    for (int i = 0; i < 1000 && !bg_sig_seen; ++i) usleep(1000);
    cr_expect_eq(bg_sig_seen, 1);
    cr_expect(pthread_equal(bg_sig_thread, pthread_self()), "the signal was handled by this thread");
    atomic_store(&gate, 1);
    cr_expect_eq(lab_bg_wait(ja), LAB_OK);
}
