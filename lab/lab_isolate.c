/* lab_isolate: run jobs in child processes under a watchdog, several at a time; crash and hang are outcomes. */
#include "lab_isolate.h"

#include "lab_clock.h"
#include "lab_cpus.h"
#include "lab_text.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab_asan.h"

const char *lab_outcome_name(lab_outcome o)
{
    static const char *names[LAB_OUT_COUNT] = {"PASS", "FAIL", "CRASH", "HANG", "SKIP", "ERROR"};
    return (unsigned)o < LAB_OUT_COUNT ? names[o] : "?";
}

extern char **environ;

lab_status lab_isolate_spawn_read(char *const argv[], FILE **out, pid_t *pid)
{
    *out = NULL;
    *pid = -1;
    int p[2];
    if (pipe(p) != 0) return lab_err_set(LAB_ERR_IO, "%s: pipe: %s", argv[0], strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, p[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&fa, p[0]);
    posix_spawn_file_actions_addclose(&fa, p[1]);
    fflush(NULL);
    int e = posix_spawnp(pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    if (e != 0) {
        close(p[0]);
        if (e == ENOENT) return lab_err_set(LAB_ERR_UNSUPPORTED, "%s not found on PATH", argv[0]);
        return lab_err_set(LAB_ERR_IO, "cannot start %s: %s", argv[0], strerror(e));
    }
    *out = fdopen(p[0], "r");
    if (!*out) {
        close(p[0]);
        waitpid(*pid, NULL, 0);
        return lab_err_set(LAB_ERR_IO, "%s: fdopen: %s", argv[0], strerror(errno));
    }
    return LAB_OK;
}

lab_status lab_isolate_spawn_wait(FILE *out, pid_t pid, int *wstatus)
{
    if (out) fclose(out);
    for (;;) {
        if (waitpid(pid, wstatus, 0) == pid) return LAB_OK;
        if (errno != EINTR) return lab_err_set(LAB_ERR_IO, "waitpid %ld: %s", (long)pid, strerror(errno));
    }
}

int lab_isolate_ncpu(void) { return lab_cpus_usable(); }

static volatile sig_atomic_t lab_isolate_sig;

static void lab_isolate_on_signal(int sig)
{
    if (!lab_isolate_sig) lab_isolate_sig = sig;
}

lab_status lab_isolate_catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = lab_isolate_on_signal;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0)
        return lab_err_set(LAB_ERR_IO, "isolate: sigaction: %s", strerror(errno));
    return LAB_OK;
}

int lab_isolate_interrupted(void) { return (int)lab_isolate_sig; }

void lab_isolate_interrupt(int sig) { lab_isolate_on_signal(sig); }

/* What a child sends back through its pipe, once per finished job: one fixed-size record (the same
 * binary on both ends). A record with job == LAB_ISOLATE_END says the child stopped on purpose. */
typedef struct {
    size_t job;
    int status;                /* lab_status of the job function */
    double cpu_s;              /* the child's CPU seconds since its previous report (lab_job_outcome.cpu_s) */
    char error[240];           /* lab_err_msg() when status != LAB_OK */
    lab_case_result r;
} lab_isolate_msg;

#define LAB_ISOLATE_END ((size_t)-1)
/* A long-lived child (lab_isolate_run_pool) finished its range and waits for another on its command socket. */
#define LAB_ISOLATE_MORE ((size_t)-2)

/* In a child: the slot it runs in; -1 in the parent. */
static int lab_isolate_my_slot = -1;

int lab_isolate_worker_slot(void) { return lab_isolate_my_slot; }

typedef struct {
    pid_t pid;                 /* 0: slot free */
    int fd;
    size_t first, end;         /* the child's jobs not yet reported: [first, end) */
    double start;              /* start of the job in progress (the watchdog's clock) */
    double delay0;             /* the child's run-queue wait (s) when that job started */
    int ended;                 /* the child said it stopped on purpose */
    int cmd;                   /* long-lived children: the runner's end of the child's command socket (-1: none, or
                                  closed to tell the child to end) */
    int idle;                  /* the long-lived child finished its range and waits for the next */
    int asked;                 /* the long-lived child has asked for work at least once (its init is done) */
    int no_init;               /* this slot's child died in init: the next one starts with a range, without init */
    size_t got;
    lab_isolate_msg msg;
} lab_isolate_slot;

/* Seconds process pid has spent runnable but waiting for a CPU (the second field of /proc/PID/schedstat);
 * 0 where that file cannot be read (the watchdog then counts plain wall time). */
static double lab_isolate_run_delay(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/schedstat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    unsigned long long run = 0, wait = 0;
    int n = fscanf(f, "%llu %llu", &run, &wait);
    fclose(f);
    return n == 2 ? 1e-9 * (double)wait : 0;
}

/* Whether the job in slot s is hung: it has had timeout_s seconds of wall time in which it was not
 * waiting for a CPU, so a case starved by a loaded machine is not judged hung for being slow (a deadlock
 * sleeps and accrues no wait; a busy loop runs). LAB_ISOLATE_WALL_CAP times the timeout in plain wall time
 * ends any job. */
#define LAB_ISOLATE_WALL_CAP 10.0
static int lab_isolate_overdue(const lab_isolate_slot *s, double now, double timeout_s)
{
    double wall = now - s->start;
    if (wall <= timeout_s) return 0;
    if (wall > LAB_ISOLATE_WALL_CAP * timeout_s) return 1;
    return wall - (lab_isolate_run_delay(s->pid) - s->delay0) > timeout_s;
}

/* The slots of the run in progress (for lab_isolate_slowest). */
static lab_isolate_slot *lab_isolate_cur_slots;
static int lab_isolate_cur_jobs;

/* When this process started its first run of jobs (lab_job_outcome.done_s counts from it); 0 before. */
static double lab_isolate_epoch;

/* Stamps a finished job's outcome with its end and its slot. */
static void lab_isolate_stamp(lab_job_outcome *o, const lab_isolate_slot *s, double now)
{
    o->done_s = now - lab_isolate_epoch;
    o->worker = lab_isolate_cur_slots ? (int)(s - lab_isolate_cur_slots) : -1;
}

static void lab_isolate_send(int fd, const lab_isolate_msg *msg)
{
    const char *p = (const char *)msg;
    size_t left = sizeof *msg;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) _exit(3);
        p += w;
        left -= (size_t)w;
    }
}

double lab_isolate_cpu_seconds(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return NAN;
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)ru.ru_stime.tv_usec;
}

/* The job a child is running, for an AddressSanitizer report in the middle of it. */
typedef struct {
    int fd;
    lab_isolate_msg *msg;
} lab_isolate_asan_ctx;

/* An ASan report ends the job: it is reported as FAIL with the report's summary (any report fails a fix; a
 * bug variant that declares `asan` is detected by it), the batch ends, and the child exits cleanly so that the
 * report is the job's outcome, not a crash (lab_asan.h). Does not return. */
static void lab_isolate_asan_report(void *vctx, const char *summary)
{
    lab_isolate_asan_ctx *x = vctx;
    lab_isolate_msg *msg = x->msg;
    char own[96]; /* the case's detail so far, its first words whole */
    lab_text_fit(own, sizeof own, msg->r.detail);
    msg->status = LAB_OK;
    msg->r.skipped = 0;
    lab_result_verdict(&msg->r, 0, "%s%s%s", summary, own[0] ? "; before it: " : "", own);
    lab_result_metric(&msg->r, "asan_reports", 1);
    msg->r.retire_worker = 1;
    lab_isolate_send(x->fd, msg);
    lab_isolate_msg end;
    memset(&end, 0, sizeof end);
    end.job = LAB_ISOLATE_END;
    lab_isolate_send(x->fd, &end);
    _exit(0);
}

/* A long-lived child's next range from its command socket: 1 and [*first, *end), or 0 when the runner closed the socket
 * (nothing left to hand out) or it cannot be read. */
static int lab_isolate_next_range(int cmd, size_t *first, size_t *end)
{
    size_t r[2];
    char *p = (char *)r;
    size_t got = 0;
    while (got < sizeof r) {
        ssize_t n = read(cmd, p + got, sizeof r - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return 0;
        got += (size_t)n;
    }
    *first = r[0], *end = r[1];
    return 1;
}

/* Child side: run jobs [first, end) one after another and report each; a job that returns an error
 * status, or whose result is neither a verdict nor a skip, ends the batch (what it left behind, a
 * corrupted heap or GPU context, must not judge the next job). With a command socket (cmd >= 0, a long-lived
 * child), a range that ran to its end is followed by LAB_ISOLATE_MORE and the next range the runner sends;
 * a batch ended early, or a closed socket, ends the child. Never returns. */
static void lab_isolate_child(int fd, int cmd, lab_job_fn fn, void *ctx, size_t first, size_t end, pid_t parent,
                              lab_job_init_fn init)
{
    setpgid(0, 0); /* own process group: the watchdog kills the job's descendants too */
    /* Dies with the runner, however it ends; a runner gone before the prctl is seen by getppid. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGINT, SIG_DFL);  /* the runner's handlers are not the job's: the runner ends it */
    signal(SIGTERM, SIG_DFL);
    /* Cases print nothing on stdout; whatever they do print goes to stderr with the parent's. */
    dup2(STDERR_FILENO, STDOUT_FILENO);
    lab_isolate_msg msg;
    lab_isolate_asan_ctx asan = {fd, &msg};
    lab_asan_on_report(lab_isolate_asan_report, &asan); /* a no-op outside an AddressSanitizer build */
    if (init) init(ctx); /* a child started without a range: it asks for one below, once it is ready */
    double cpu0 = lab_isolate_cpu_seconds(); /* a job's CPU seconds are its own, not its child's start-up */
    for (;;) {
        int cut = 0;
        for (size_t job = first; job < end; ++job) {
            memset(&msg, 0, sizeof msg);
            msg.job = job;
            lab_err_clear();
            lab_status st = fn(ctx, job, &msg.r);
            msg.status = (int)st;
            double cpu = lab_isolate_cpu_seconds();
            msg.cpu_s = cpu - cpu0;
            cpu0 = cpu;
            if (st != LAB_OK)
                snprintf(msg.error, sizeof msg.error, "%s: %s", lab_status_name(st),
                         lab_err_msg()[0] ? lab_err_msg() : "(no message)");
            lab_isolate_send(fd, &msg);
            if (st != LAB_OK || !(msg.r.skipped || msg.r.verdict_set) || msg.r.retire_worker) {
                cut = 1;
                break;
            }
        }
        if (cut || cmd < 0) break;
        memset(&msg, 0, sizeof msg);
        msg.job = LAB_ISOLATE_MORE;
        lab_isolate_send(fd, &msg);
        if (!lab_isolate_next_range(cmd, &first, &end)) break;
    }
    memset(&msg, 0, sizeof msg);
    msg.job = LAB_ISOLATE_END;
    lab_isolate_send(fd, &msg);
    close(fd);
    _exit(0); /* _exit: no atexit handlers or stdio flushes inherited from the parent */
}

/* The outcome of a job from its complete report. */
static void lab_isolate_outcome(const lab_isolate_msg *m, double wall_s, lab_job_outcome *o)
{
    memset(o, 0, sizeof *o);
    o->wall_s = wall_s;
    o->cpu_s = m->cpu_s;
    o->r = m->r;
    if (m->status != LAB_OK) {
        o->outcome = LAB_OUT_ERROR;
        snprintf(o->error, sizeof o->error, "%s", m->error);
    } else if (m->r.skipped) {
        o->outcome = LAB_OUT_SKIP;
    } else if (!m->r.verdict_set) {
        o->outcome = LAB_OUT_ERROR;
        snprintf(o->error, sizeof o->error, "the case reported no verdict");
    } else {
        o->outcome = m->r.passed ? LAB_OUT_PASS : LAB_OUT_FAIL;
    }
}

/* The outcome of the job a child was running when it died or was killed. */
static void lab_isolate_died(int wstatus, int hung, double timeout_s, double wall_s, lab_job_outcome *o)
{
    memset(o, 0, sizeof *o);
    o->wall_s = wall_s;
    o->cpu_s = NAN;
    if (hung) {
        o->outcome = LAB_OUT_HANG;
        snprintf(o->error, sizeof o->error, "no result in %.1f s (not counting time spent waiting for a CPU): killed by the watchdog", timeout_s);
    } else if (WIFSIGNALED(wstatus)) {
        o->outcome = LAB_OUT_CRASH;
        o->signal = WTERMSIG(wstatus);
        snprintf(o->error, sizeof o->error, "killed by signal %d (%s)", o->signal, strsignal(o->signal));
    } else {
        int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
        if (code != 0) {
            o->outcome = LAB_OUT_CRASH; /* died before reporting: abort by a sanitizer, exit() in a kernel... */
            snprintf(o->error, sizeof o->error, "exited with status %d before reporting a result", code);
        } else {
            o->outcome = LAB_OUT_ERROR;
            snprintf(o->error, sizeof o->error, "exited without reporting a result");
        }
    }
}

/* The most seconds a runner waits for its own interrupt after a child died by SIGTERM or SIGINT. */
#define LAB_ISOLATE_STOP_GRACE_S 0.5

/* 1 when a child that died by wstatus was stopped with the whole job, not by its case: SIGTERM and SIGINT are never
 * the lab's own (its watchdog and its interrupt kill with SIGKILL), and a batch system that stops a job signals
 * every process of it at once (Slurm's scancel and time limit under proctrack/linuxproc, every task of a step), so
 * this runner's own signal comes a moment apart: it is given LAB_ISOLATE_STOP_GRACE_S to arrive. A child that died
 * so without it was killed alone, by whoever: a CRASH as any signal is. */
static int lab_isolate_stopped_with_runner(int wstatus)
{
    if (!WIFSIGNALED(wstatus) || (WTERMSIG(wstatus) != SIGTERM && WTERMSIG(wstatus) != SIGINT)) return 0;
    for (double end = lab_clock_now() + LAB_ISOLATE_STOP_GRACE_S; !lab_isolate_sig && lab_clock_now() < end;) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return lab_isolate_sig != 0;
}

/* Reads whatever the child sent; each complete record finishes a job (done() called) and restarts the
 * watchdog's clock. */
static void lab_isolate_drain(lab_isolate_slot *s, void *ctx, lab_job_done_fn done, lab_job_outcome *out)
{
    for (;;) {
        ssize_t r = read(s->fd, (char *)&s->msg + s->got, sizeof s->msg - s->got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return; /* EOF, EAGAIN or error */
        s->got += (size_t)r;
        if (s->got < sizeof s->msg) continue;
        s->got = 0;
        double now = lab_clock_now();
        if (s->msg.job == LAB_ISOLATE_END) {
            s->ended = 1;
        } else if (s->msg.job == LAB_ISOLATE_MORE) {
            s->asked = 1;
            s->idle = s->first == s->end; /* a child that asks with jobs of its range unreported is not idle: the
                                             watchdog ends it, and its jobs go to a fresh child */
        } else if (s->msg.job == s->first && s->first < s->end) {
            lab_isolate_outcome(&s->msg, now - s->start, &out[s->first]);
            lab_isolate_stamp(&out[s->first], s, now);
            if (done) done(ctx, s->first, &out[s->first]);
            s->first++;
        }
        s->start = now;
        s->delay0 = lab_isolate_run_delay(s->pid);
    }
}

/* Ranges of jobs waiting for a child: a stack, so a batch cut short resumes before new batches. */
typedef struct {
    size_t (*r)[2];
    size_t n, cap;
} lab_isolate_queue;

/* Queues [a, b) on top of the stack (handed out next), or with `last` at its bottom (after everything queued). */
static int lab_isolate_queue_add(lab_isolate_queue *q, size_t a, size_t b, int last)
{
    if (a >= b) return 0;
    if (q->n == q->cap) {
        size_t cap = q->cap ? 2 * q->cap : 64;
        void *nr = realloc(q->r, cap * sizeof *q->r);
        if (!nr) return -1;
        q->r = nr;
        q->cap = cap;
    }
    size_t at = last ? 0 : q->n;
    if (last) memmove(q->r + 1, q->r, q->n * sizeof *q->r);
    q->r[at][0] = a;
    q->r[at][1] = b;
    q->n++;
    return 0;
}

static int lab_isolate_push(lab_isolate_queue *q, size_t a, size_t b) { return lab_isolate_queue_add(q, a, b, 0); }

/* The parent's hook at every turn of a run's loop (lab_isolate_on_tick). */
static void (*lab_isolate_tick_fn)(void *ctx);
static void *lab_isolate_tick_ctx;

void lab_isolate_on_tick(void (*fn)(void *ctx), void *ctx)
{
    lab_isolate_tick_fn = fn;
    lab_isolate_tick_ctx = ctx;
}

/* Takes what the feed has now into the queue, behind what waits: 0 while it may give more, -1 once it said it never
 * will or gave a range outside [0, n) (*result then says so). */
static int lab_isolate_take_feed(lab_job_feed_fn feed, void *feed_ctx, size_t n, lab_isolate_queue *q, lab_status *result)
{
    for (;;) {
        size_t a = 0, b = 0;
        int r = feed(feed_ctx, q->n, &a, &b);
        if (r < 0) return -1;
        if (r == 0) return 0;
        if (a >= b || b > n) {
            *result = lab_err_set(LAB_ERR_ARG, "isolate: the feed gave jobs [%zu, %zu), not a range of the %zu jobs", a, b, n);
            return -1;
        }
        if (lab_isolate_queue_add(q, a, b, 1) != 0) {
            *result = lab_err_set(LAB_ERR_NOMEM, "isolate: out of memory");
            return -1;
        }
    }
}

int lab_isolate_slowest(size_t *job, double *elapsed_s)
{
    int found = 0;
    double now = lab_clock_now();
    for (int i = 0; lab_isolate_cur_slots && i < lab_isolate_cur_jobs; ++i) {
        const lab_isolate_slot *s = &lab_isolate_cur_slots[i];
        if (!s->pid || s->first >= s->end) continue;
        if (!found || now - s->start > *elapsed_s) {
            *job = s->first;
            *elapsed_s = now - s->start;
            found = 1;
        }
    }
    return found;
}

lab_status lab_isolate_run(size_t n, lab_job_fn fn, void *ctx, int jobs, double timeout_s,
                           lab_job_done_fn done, lab_job_outcome *out)
{
    return lab_isolate_run_batched(n, fn, ctx, jobs, 1, timeout_s, done, out);
}

lab_status lab_isolate_run_batched(size_t n, lab_job_fn fn, void *ctx, int jobs, size_t batch, double timeout_s,
                                   lab_job_done_fn done, lab_job_outcome *out)
{
    if (batch < 1) batch = 1;
    size_t nr = (n + batch - 1) / batch;
    size_t *bounds = malloc((nr + 1) * sizeof *bounds);
    if (!bounds) return lab_err_set(LAB_ERR_NOMEM, "isolate: out of memory");
    for (size_t b = 0; b <= nr; ++b) bounds[b] = b * batch < n ? b * batch : n;
    lab_status st = lab_isolate_run_ranges(n, fn, ctx, jobs, bounds, nr, timeout_s, NULL, done, out);
    free(bounds);
    return st;
}

/* lab_isolate_run_ranges, and with `reuse` lab_isolate_run_pool: a child that ran its range to the end takes the next
 * one through its command socket instead of exiting. */
static lab_status lab_isolate_ranges(size_t n, lab_job_fn fn, void *ctx, int jobs, const size_t *bounds, size_t nranges,
                                     double timeout_s, lab_job_timeout_fn timeout_of, lab_job_done_fn done,
                                     lab_job_outcome *out, int reuse, lab_job_init_fn init, lab_job_feed_fn feed,
                                     void *feed_ctx)
{
    if (jobs < 1) jobs = 1;
    if (timeout_s <= 0) timeout_s = 60;
    if (nranges > 0 && (bounds[0] != 0 || bounds[nranges] != n))
        return lab_err_set(LAB_ERR_ARG, "isolate: ranges cover [%zu, %zu), not the %zu jobs", bounds[0], bounds[nranges], n);
    for (size_t r = 0; r < nranges; ++r)
        if (bounds[r + 1] < bounds[r]) return lab_err_set(LAB_ERR_ARG, "isolate: range %zu ends before it starts", r);
    lab_isolate_slot *slots = calloc((size_t)jobs, sizeof *slots);
    struct pollfd *pfd = calloc((size_t)jobs, sizeof *pfd);
    lab_isolate_queue q = {0};
    int qerr = 0;
    /* Ranges in reverse, so the stack hands out job 0 first; empty ones are not runs. */
    for (size_t r = nranges; r-- > 0;)
        if (bounds[r + 1] > bounds[r]) qerr |= lab_isolate_push(&q, bounds[r], bounds[r + 1]);
    if (!slots || !pfd || qerr) {
        free(slots);
        free(pfd);
        free(q.r);
        return lab_err_set(LAB_ERR_NOMEM, "isolate: out of memory");
    }
    fflush(NULL); /* nothing buffered is written twice by a child */
    lab_status result = LAB_OK;
    size_t running = 0;
    pid_t self = getpid();
    if (lab_isolate_epoch == 0) lab_isolate_epoch = lab_clock_now();
    lab_isolate_slot *outer_slots = lab_isolate_cur_slots;
    int outer_jobs = lab_isolate_cur_jobs;
    lab_isolate_cur_slots = slots;
    lab_isolate_cur_jobs = jobs;
    int feeding = feed != NULL; /* the feed may give more ranges */
    while ((q.n > 0 || running > 0 || feeding) && !lab_isolate_sig) {
        if (lab_isolate_tick_fn) lab_isolate_tick_fn(lab_isolate_tick_ctx);
        if (feeding && result == LAB_OK && lab_isolate_take_feed(feed, feed_ctx, n, &q, &result) < 0) feeding = 0;
        /* Start batches into free slots. */
        for (int i = 0; i < jobs && q.n > 0 && result == LAB_OK && !lab_isolate_sig; ++i) {
            lab_isolate_slot *s = &slots[i];
            size_t a = q.r[q.n - 1][0], b = q.r[q.n - 1][1];
            if (s->pid) {
                if (!s->idle || s->cmd < 0) continue;
                /* a long-lived child waiting for work: the next range, on the same process (and CUDA context) */
                size_t r[2] = {a, b};
                if (send(s->cmd, r, sizeof r, MSG_NOSIGNAL) != (ssize_t)sizeof r) {
                    close(s->cmd); /* it is gone or going: its exit is handled below, the range stays queued */
                    s->cmd = -1;
                    continue;
                }
                q.n--;
                s->first = a;
                s->end = b;
                s->idle = 0;
                s->start = lab_clock_now();
                s->delay0 = lab_isolate_run_delay(s->pid);
                continue;
            }
            int p[2], c[2] = {-1, -1};
            if (pipe(p) != 0) {
                result = lab_err_set(LAB_ERR_IO, "isolate: pipe: %s", strerror(errno));
                break;
            }
            if (reuse && socketpair(AF_UNIX, SOCK_STREAM, 0, c) != 0) {
                close(p[0]);
                close(p[1]);
                result = lab_err_set(LAB_ERR_IO, "isolate: socketpair: %s", strerror(errno));
                break;
            }
            lab_job_init_fn first_init = reuse && init && !s->no_init ? init : NULL;
            if (first_init) {
                size_t starting = 0; /* children still in init: each will ask for a range */
                for (int k = 0; k < jobs; ++k) starting += slots[k].pid && !slots[k].asked && slots[k].first == slots[k].end;
                if (starting >= q.n) continue;
                a = b = 0; /* it asks for its first range when it is ready */
            }
            pid_t pid = fork();
            if (pid < 0) {
                close(p[0]);
                close(p[1]);
                if (reuse) close(c[0]), close(c[1]);
                result = lab_err_set(LAB_ERR_IO, "isolate: fork: %s", strerror(errno));
                break;
            }
            if (pid == 0) {
                lab_isolate_my_slot = i;
                close(p[0]);
                if (reuse) close(c[0]);
                for (int k = 0; k < jobs; ++k)
                    if (slots[k].pid) {
                        close(slots[k].fd);
                        if (slots[k].cmd >= 0) close(slots[k].cmd);
                    }
                lab_isolate_child(p[1], c[1], fn, ctx, a, b, self, first_init);
            }
            if (!first_init) q.n--;
            setpgid(pid, pid); /* also in the parent: no race with an early kill */
            close(p[1]);
            if (reuse) close(c[1]);
            fcntl(p[0], F_SETFL, O_NONBLOCK);
            int no_init = s->no_init;
            memset(s, 0, sizeof *s);
            s->no_init = no_init;
            s->pid = pid;
            s->fd = p[0];
            s->cmd = c[0];
            s->first = a;
            s->end = b;
            s->start = lab_clock_now();
            s->delay0 = 0; /* a new process has waited for nothing yet */
            running++;
        }
        /* Nothing left to hand out, nor to come from a feed: the long-lived children waiting for work end (a range cut
         * short later goes to a fresh child). */
        for (int i = 0; i < jobs && q.n == 0 && !feeding; ++i)
            if (slots[i].pid && slots[i].idle && slots[i].cmd >= 0) {
                close(slots[i].cmd);
                slots[i].cmd = -1;
            }
        if (result != LAB_OK && running == 0) break;

        /* Wait for output or a short tick; the tick bounds how late a hang or exit is noticed. */
        int np = 0;
        for (int i = 0; i < jobs; ++i) {
            if (!slots[i].pid) continue;
            pfd[np].fd = slots[i].fd;
            pfd[np].events = POLLIN;
            np++;
        }
        poll(pfd, (nfds_t)np, 20);

        for (int i = 0; i < jobs; ++i) {
            lab_isolate_slot *s = &slots[i];
            if (!s->pid) continue;
            lab_isolate_drain(s, ctx, done, out);
            int wstatus = 0, hung = 0;
            double job_timeout = timeout_of && s->first < s->end ? timeout_of(ctx, s->first) : timeout_s;
            pid_t w = waitpid(s->pid, &wstatus, WNOHANG);
            if (w == 0) {
                if (s->idle || !lab_isolate_overdue(s, lab_clock_now(), job_timeout)) continue;
                kill(-s->pid, SIGKILL);
                kill(s->pid, SIGKILL);
                waitpid(s->pid, &wstatus, 0);
                hung = 1;
            } else {
                lab_isolate_drain(s, ctx, done, out); /* whatever arrived between the drain and the exit */
            }
            /* Descendants left behind in the job's group go with it. */
            kill(-s->pid, SIGKILL);
            close(s->fd);
            if (s->cmd >= 0) close(s->cmd);
            s->cmd = -1;
            s->idle = 0;
            if (init && !s->asked && s->first == s->end) s->no_init = 1; /* it died or hung in init */
            if (s->first < s->end && !(s->ended && !hung && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)) {
                /* The job in progress died with its process; the rest of the batch goes back. Stopped with the
                 * whole job, it did not finish: no result, as the interrupt's unfinished jobs. */
                lab_isolate_died(wstatus, hung, job_timeout, lab_clock_now() - s->start, &out[s->first]);
                if (!hung && lab_isolate_stopped_with_runner(wstatus)) {
                    memset(&out[s->first], 0, sizeof out[s->first]);
                    out[s->first].outcome = LAB_OUT_ERROR;
                    out[s->first].not_run = 1;
                    snprintf(out[s->first].error, sizeof out[s->first].error,
                             "stopped by signal %d with the run before it finished", WTERMSIG(wstatus));
                }
                lab_isolate_stamp(&out[s->first], s, lab_clock_now());
                if (done) done(ctx, s->first, &out[s->first]);
                s->first++;
            }
            if (lab_isolate_push(&q, s->first, s->end) != 0 && result == LAB_OK)
                result = lab_err_set(LAB_ERR_NOMEM, "isolate: out of memory");
            s->pid = 0;
            running--;
        }
    }
    if (lab_isolate_sig) {
        /* Interrupted: the running jobs end with their groups, unfinished; what finished is kept. */
        for (int i = 0; i < jobs; ++i) {
            lab_isolate_slot *s = &slots[i];
            if (!s->pid) continue;
            kill(-s->pid, SIGKILL);
            kill(s->pid, SIGKILL);
            lab_isolate_drain(s, ctx, done, out); /* a job that finished just now still counts */
            while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR) {}
            close(s->fd);
            if (s->cmd >= 0) close(s->cmd);
            s->cmd = -1;
            for (size_t j = s->first; j < s->end; ++j) {
                memset(&out[j], 0, sizeof out[j]);
                out[j].outcome = LAB_OUT_ERROR;
                out[j].not_run = 1;
                snprintf(out[j].error, sizeof out[j].error, "interrupted by signal %d before it finished",
                         (int)lab_isolate_sig);
                if (done) done(ctx, j, &out[j]);
            }
            s->pid = 0;
        }
    }
    /* Jobs never started because fork/pipe failed, or because the run was interrupted. */
    for (; q.n > 0; q.n--)
        for (size_t j = q.r[q.n - 1][0]; j < q.r[q.n - 1][1]; ++j) {
            memset(&out[j], 0, sizeof out[j]);
            out[j].outcome = LAB_OUT_ERROR;
            out[j].not_run = lab_isolate_sig != 0;
            if (lab_isolate_sig)
                snprintf(out[j].error, sizeof out[j].error, "interrupted by signal %d before it started",
                         (int)lab_isolate_sig);
            else snprintf(out[j].error, sizeof out[j].error, "not started: %s", lab_err_msg());
            if (done) done(ctx, j, &out[j]);
        }
    lab_isolate_cur_slots = outer_slots;
    lab_isolate_cur_jobs = outer_jobs;
    free(slots);
    free(pfd);
    free(q.r);
    return result;
}

lab_status lab_isolate_run_ranges(size_t n, lab_job_fn fn, void *ctx, int jobs, const size_t *bounds, size_t nranges,
                                  double timeout_s, lab_job_timeout_fn timeout_of, lab_job_done_fn done,
                                  lab_job_outcome *out)
{
    return lab_isolate_ranges(n, fn, ctx, jobs, bounds, nranges, timeout_s, timeout_of, done, out, 0, NULL, NULL, NULL);
}

lab_status lab_isolate_run_pool(size_t n, lab_job_fn fn, void *ctx, int jobs, const size_t *bounds, size_t nranges,
                                double timeout_s, lab_job_timeout_fn timeout_of, lab_job_done_fn done,
                                lab_job_outcome *out, lab_job_init_fn init)
{
    return lab_isolate_ranges(n, fn, ctx, jobs, bounds, nranges, timeout_s, timeout_of, done, out, 1, init, NULL, NULL);
}

lab_status lab_isolate_run_fed(size_t n, lab_job_fn fn, void *ctx, int jobs, lab_job_feed_fn feed, void *feed_ctx,
                               double timeout_s, lab_job_timeout_fn timeout_of, lab_job_done_fn done,
                               lab_job_outcome *out, int reuse, lab_job_init_fn init)
{
    return lab_isolate_ranges(n, fn, ctx, jobs, NULL, 0, timeout_s, timeout_of, done, out, reuse, reuse ? init : NULL,
                              feed, feed_ctx);
}
