/* lab_bg: background jobs of one process (lab_bg.h). */
#define _GNU_SOURCE
#include "lab_bg.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { LAB_BG_QUEUED, LAB_BG_RUNNING, LAB_BG_DONE };

struct lab_bg_job {
    lab_bg_fn fn;
    void *arg;
    int state;           /* LAB_BG_*, under lab_bg_mu */
    pid_t pid;           /* the process that started it (fork: lab_bg.h) */
    lab_status st;       /* fn's, once DONE */
    char msg[1024];      /* its message */
    lab_bg_job *next;    /* the queue */
};

static pthread_mutex_t lab_bg_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lab_bg_queued = PTHREAD_COND_INITIALIZER; /* a job was queued */
static pthread_cond_t lab_bg_done = PTHREAD_COND_INITIALIZER;   /* a job finished */
static lab_bg_job *lab_bg_head, *lab_bg_tail;
static int lab_bg_nthreads;
static pthread_once_t lab_bg_once = PTHREAD_ONCE_INIT;

/* fork(): the child gets the lock free, no threads and an empty queue (its copies of queued jobs run when collected) */
static void lab_bg_prepare(void) { pthread_mutex_lock(&lab_bg_mu); }
static void lab_bg_parent(void) { pthread_mutex_unlock(&lab_bg_mu); }
static void lab_bg_child(void)
{
    pthread_mutex_init(&lab_bg_mu, NULL);
    pthread_cond_init(&lab_bg_queued, NULL);
    pthread_cond_init(&lab_bg_done, NULL);
    lab_bg_head = lab_bg_tail = NULL;
    lab_bg_nthreads = 0;
}
static void lab_bg_init(void) { pthread_atfork(lab_bg_prepare, lab_bg_parent, lab_bg_child); }

/* Takes j out of the queue if it is there (under lab_bg_mu). */
static void lab_bg_unlink(lab_bg_job *j)
{
    lab_bg_job **p = &lab_bg_head, *prev = NULL;
    while (*p && *p != j) prev = *p, p = &(*p)->next;
    if (!*p) return;
    *p = j->next;
    if (lab_bg_tail == j) lab_bg_tail = prev;
    j->next = NULL;
}

static void *lab_bg_main(void *unused)
{
    (void)unused;
    /* Linux: nice is per thread; where it cannot be raised the thread keeps the process's */
    id_t tid = (id_t)syscall(SYS_gettid);
    int nice_now = getpriority(PRIO_PROCESS, tid);
    (void)setpriority(PRIO_PROCESS, tid, nice_now + LAB_BG_NICE);
    pthread_mutex_lock(&lab_bg_mu);
    for (;;) {
        while (!lab_bg_head) pthread_cond_wait(&lab_bg_queued, &lab_bg_mu);
        lab_bg_job *j = lab_bg_head;
        lab_bg_unlink(j);
        j->state = LAB_BG_RUNNING;
        pthread_mutex_unlock(&lab_bg_mu);
        lab_status st = j->fn(j->arg);
        pthread_mutex_lock(&lab_bg_mu);
        j->st = st;
        if (st != LAB_OK) snprintf(j->msg, sizeof j->msg, "%s", lab_err_msg());
        j->state = LAB_BG_DONE;
        pthread_cond_broadcast(&lab_bg_done);
    }
    return NULL;
}

lab_bg_job *lab_bg_start(lab_bg_fn fn, void *arg)
{
    if (!fn) return NULL;
    pthread_once(&lab_bg_once, lab_bg_init);
    lab_bg_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    j->fn = fn, j->arg = arg, j->state = LAB_BG_QUEUED, j->pid = getpid();
    pthread_mutex_lock(&lab_bg_mu);
    if (lab_bg_nthreads < LAB_BG_THREADS) {
        /* the threads start with every signal blocked: a signal sent to the process (an interrupt, a watchdog's
         * SIGTERM, a profiler's tick) is handled by the threads that expect it, never by a background job */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        while (lab_bg_nthreads < LAB_BG_THREADS) {
            pthread_t t;
            pthread_attr_t at;
            if (pthread_attr_init(&at) != 0) break;
            pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
            int rc = pthread_create(&t, &at, lab_bg_main, NULL);
            pthread_attr_destroy(&at);
            if (rc != 0) break;
            ++lab_bg_nthreads;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    if (lab_bg_nthreads == 0) {
        pthread_mutex_unlock(&lab_bg_mu);
        free(j);
        return NULL;
    }
    if (lab_bg_tail) lab_bg_tail->next = j;
    else lab_bg_head = j;
    lab_bg_tail = j;
    pthread_cond_signal(&lab_bg_queued);
    pthread_mutex_unlock(&lab_bg_mu);
    return j;
}

/* Takes j for this thread: 1 when it was queued (now out of the queue, this thread's to run or drop), 0 when it has
 * finished (waited for if it was running), -1 when it was running in the parent of this forked process. */
static int lab_bg_claim(lab_bg_job *j)
{
    pthread_mutex_lock(&lab_bg_mu);
    if (j->state == LAB_BG_QUEUED) {
        lab_bg_unlink(j);
        j->state = LAB_BG_RUNNING;
        pthread_mutex_unlock(&lab_bg_mu);
        return 1;
    }
    if (j->state == LAB_BG_RUNNING && j->pid != getpid()) {
        pthread_mutex_unlock(&lab_bg_mu);
        return -1;
    }
    while (j->state != LAB_BG_DONE) pthread_cond_wait(&lab_bg_done, &lab_bg_mu);
    pthread_mutex_unlock(&lab_bg_mu);
    return 0;
}

lab_status lab_bg_wait(lab_bg_job *j)
{
    if (!j) return LAB_OK;
    int c = lab_bg_claim(j);
    lab_status st;
    if (c == 1) st = j->fn(j->arg); /* its message, if any, is already this thread's */
    else if (c < 0)
        st = lab_err_set(LAB_ERR_ARG, "lab_bg: a job its parent process was running when it forked cannot be collected in the child");
    else if ((st = j->st) != LAB_OK)
        lab_err_set(st, "%s", j->msg);
    free(j);
    return st;
}

void lab_bg_cancel(lab_bg_job *j)
{
    if (!j) return;
    (void)lab_bg_claim(j); /* queued: out of the queue, and not run; running: waited for */
    free(j);
}
