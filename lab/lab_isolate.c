/* lab_isolate: run jobs in child processes under a watchdog, several at a time; crash and hang are outcomes. */
#include "lab_isolate.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *lab_outcome_name(lab_outcome o)
{
    static const char *names[LAB_OUT_COUNT] = {"PASS", "FAIL", "CRASH", "HANG", "SKIP", "ERROR"};
    return (unsigned)o < LAB_OUT_COUNT ? names[o] : "?";
}

int lab_isolate_ncpu(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* What a child sends back through its pipe: one fixed-size record (the same binary on both ends). */
typedef struct {
    int status;                /* lab_status of the job function */
    char error[240];           /* lab_err_msg() when status != LAB_OK */
    lab_case_result r;
} lab_isolate_msg;

typedef struct {
    pid_t pid;                 /* 0: slot free */
    int fd;
    size_t job;
    double start;
    size_t got;
    lab_isolate_msg msg;
} lab_isolate_slot;

static double lab_isolate_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Child side: run the job and report; never returns. */
static void lab_isolate_child(int fd, lab_job_fn fn, void *ctx, size_t job)
{
    setpgid(0, 0); /* own process group: the watchdog kills the job's descendants too */
    signal(SIGPIPE, SIG_DFL);
    /* Cases print nothing on stdout; whatever they do print goes to stderr with the parent's. */
    dup2(STDERR_FILENO, STDOUT_FILENO);
    lab_isolate_msg msg;
    memset(&msg, 0, sizeof msg);
    lab_err_clear();
    lab_status st = fn(ctx, job, &msg.r);
    msg.status = (int)st;
    if (st != LAB_OK)
        snprintf(msg.error, sizeof msg.error, "%s: %s", lab_status_name(st),
                 lab_err_msg()[0] ? lab_err_msg() : "(no message)");
    const char *p = (const char *)&msg;
    size_t left = sizeof msg;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) _exit(3);
        p += w;
        left -= (size_t)w;
    }
    close(fd);
    _exit(0); /* _exit: no atexit handlers or stdio flushes inherited from the parent */
}

static void lab_isolate_drain(lab_isolate_slot *s)
{
    for (;;) {
        if (s->got >= sizeof s->msg) return;
        ssize_t r = read(s->fd, (char *)&s->msg + s->got, sizeof s->msg - s->got);
        if (r > 0) { s->got += (size_t)r; continue; }
        if (r < 0 && errno == EINTR) continue;
        return; /* EOF, EAGAIN or error */
    }
}

/* Turns a finished child's wait status and report into an outcome. */
static void lab_isolate_finish(lab_isolate_slot *s, int wstatus, int hung, double timeout_s, lab_job_outcome *o)
{
    memset(o, 0, sizeof *o);
    o->wall_s = lab_isolate_now() - s->start;
    int complete = s->got == sizeof s->msg;
    if (complete) o->r = s->msg.r;
    if (hung) {
        o->outcome = LAB_OUT_HANG;
        snprintf(o->error, sizeof o->error, "no result after %.1f s: killed by the watchdog", timeout_s);
    } else if (WIFSIGNALED(wstatus)) {
        o->outcome = LAB_OUT_CRASH;
        o->signal = WTERMSIG(wstatus);
        snprintf(o->error, sizeof o->error, "killed by signal %d (%s)", o->signal, strsignal(o->signal));
    } else if (!complete) {
        int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
        if (code != 0) {
            o->outcome = LAB_OUT_CRASH; /* died before reporting: abort by a sanitizer, exit() in a kernel... */
            snprintf(o->error, sizeof o->error, "exited with status %d before reporting a result", code);
        } else {
            o->outcome = LAB_OUT_ERROR;
            snprintf(o->error, sizeof o->error, "exited without reporting a result");
        }
    } else if (s->msg.status != LAB_OK) {
        o->outcome = LAB_OUT_ERROR;
        snprintf(o->error, sizeof o->error, "%s", s->msg.error);
    } else if (s->msg.r.skipped) {
        o->outcome = LAB_OUT_SKIP;
    } else if (!s->msg.r.verdict_set) {
        o->outcome = LAB_OUT_ERROR;
        snprintf(o->error, sizeof o->error, "the case reported no verdict");
    } else {
        o->outcome = s->msg.r.passed ? LAB_OUT_PASS : LAB_OUT_FAIL;
    }
}

lab_status lab_isolate_run(size_t n, lab_job_fn fn, void *ctx, int jobs, double timeout_s,
                           lab_job_done_fn done, lab_job_outcome *out)
{
    if (jobs < 1) jobs = 1;
    if (timeout_s <= 0) timeout_s = 60;
    lab_isolate_slot *slots = calloc((size_t)jobs, sizeof *slots);
    struct pollfd *pfd = calloc((size_t)jobs, sizeof *pfd);
    if (!slots || !pfd) {
        free(slots);
        free(pfd);
        return lab_err_set(LAB_ERR_NOMEM, "isolate: out of memory");
    }
    fflush(NULL); /* nothing buffered is written twice by a child */
    lab_status result = LAB_OK;
    size_t next = 0, running = 0;
    while (next < n || running > 0) {
        /* Start jobs into free slots. */
        for (int i = 0; i < jobs && next < n && result == LAB_OK; ++i) {
            if (slots[i].pid) continue;
            int p[2];
            if (pipe(p) != 0) {
                result = lab_err_set(LAB_ERR_IO, "isolate: pipe: %s", strerror(errno));
                break;
            }
            pid_t pid = fork();
            if (pid < 0) {
                close(p[0]);
                close(p[1]);
                result = lab_err_set(LAB_ERR_IO, "isolate: fork: %s", strerror(errno));
                break;
            }
            if (pid == 0) {
                close(p[0]);
                for (int k = 0; k < jobs; ++k)
                    if (slots[k].pid) close(slots[k].fd);
                lab_isolate_child(p[1], fn, ctx, next);
            }
            setpgid(pid, pid); /* also in the parent: no race with an early kill */
            close(p[1]);
            fcntl(p[0], F_SETFL, O_NONBLOCK);
            memset(&slots[i], 0, sizeof slots[i]);
            slots[i].pid = pid;
            slots[i].fd = p[0];
            slots[i].job = next++;
            slots[i].start = lab_isolate_now();
            running++;
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

        double now = lab_isolate_now();
        for (int i = 0; i < jobs; ++i) {
            lab_isolate_slot *s = &slots[i];
            if (!s->pid) continue;
            lab_isolate_drain(s);
            int wstatus = 0, hung = 0;
            pid_t w = waitpid(s->pid, &wstatus, WNOHANG);
            if (w == 0) {
                if (now - s->start <= timeout_s) continue;
                kill(-s->pid, SIGKILL);
                kill(s->pid, SIGKILL);
                waitpid(s->pid, &wstatus, 0);
                hung = 1;
            } else {
                lab_isolate_drain(s); /* whatever arrived between the drain and the exit */
            }
            /* Descendants left behind in the job's group go with it. */
            kill(-s->pid, SIGKILL);
            close(s->fd);
            lab_isolate_finish(s, wstatus, hung, timeout_s, &out[s->job]);
            if (done) done(ctx, s->job, &out[s->job]);
            s->pid = 0;
            running--;
        }
    }
    /* Jobs never started because fork/pipe failed. */
    for (; next < n; ++next) {
        memset(&out[next], 0, sizeof out[next]);
        out[next].outcome = LAB_OUT_ERROR;
        snprintf(out[next].error, sizeof out[next].error, "not started: %s", lab_err_msg());
        if (done) done(ctx, next, &out[next]);
    }
    free(slots);
    free(pfd);
    return result;
}
