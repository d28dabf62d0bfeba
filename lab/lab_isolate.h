/* lab_isolate: run jobs in child processes under a watchdog, several at a time; crash and hang are outcomes. */
#ifndef LAB_ISOLATE_H
#define LAB_ISOLATE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "lab_incident.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    LAB_OUT_PASS, LAB_OUT_FAIL, LAB_OUT_CRASH, LAB_OUT_HANG, LAB_OUT_SKIP, LAB_OUT_ERROR
} lab_outcome;
#define LAB_OUT_COUNT 6

const char *lab_outcome_name(lab_outcome o); /* "PASS", "FAIL", ... */

typedef struct {
    lab_outcome outcome;
    int signal;                 /* CRASH: the signal that ended the child */
    double wall_s;              /* child wall time */
    double cpu_s;               /* CPU seconds (user + sys, every thread) the child spent on this job: its
                                   getrusage(RUSAGE_SELF) since its previous report, so a worker's start-up
                                   (fork, a CUDA context) counts to its first job and a seed batch's to the job
                                   that ran it; NaN when the child died before reporting */
    double done_s;              /* when the job ended, in seconds since this process started its first job run
                                   (the runner's clock): with wall_s and worker, the replay's timeline */
    int worker;                 /* the slot (0 .. jobs-1) whose child ran it */
    char error[240];            /* ERROR / CRASH / HANG: what happened */
    int not_run;                /* 1: the run was interrupted (SIGINT/SIGTERM) before this job finished:
                                   not a result (outcome ERROR), to be left out of a result set */
    lab_case_result r;          /* what the child reported (zeroed if it reported nothing) */
} lab_job_outcome;

/* User + system CPU seconds this process has spent so far, every thread (getrusage RUSAGE_SELF); NaN if it fails.
 * The clock of lab_job_outcome.cpu_s. */
double lab_isolate_cpu_seconds(void);

/* Runs in the child: fill r; return LAB_OK, or a status that becomes ERROR with lab_err_msg(). */
typedef lab_status (*lab_job_fn)(void *ctx, size_t job, lab_case_result *r);
/* Called in the parent as each job finishes (in completion order). */
typedef void (*lab_job_done_fn)(void *ctx, size_t job, const lab_job_outcome *o);

/* Runs jobs 0..n-1, each in its own forked process (its own process group, so a job's own children die
 * with it; the child also gets PR_SET_PDEATHSIG SIGKILL, so no job outlives the runner, even a runner
 * killed by SIGKILL), at most `jobs` at once. A child that has had timeout_s seconds of wall time in which
 * it was not waiting for a CPU (run-queue wait from /proc/PID/schedstat is not counted, so a case slowed by
 * a loaded machine is not a hang; 10 x timeout_s of plain wall time ends any job) is killed (SIGKILL to its
 * group) and is HANG; one ended by a signal is CRASH (signal named); one that exits without reporting is
 * ERROR. The mapping from the reported result: skipped -> SKIP, verdict passed -> PASS, else FAIL, no
 * verdict -> ERROR. Fills out[0..n) and calls done() for each. Returns LAB_ERR_IO only if fork/pipe
 * fails in the parent (the remaining jobs are then ERROR). */
lab_status lab_isolate_run(size_t n, lab_job_fn fn, void *ctx, int jobs, double timeout_s,
                           lab_job_done_fn done, lab_job_outcome *out);

/* Interrupts: after lab_isolate_catch_signals, a SIGINT or SIGTERM makes every run (this one and any later
 * one) start nothing more and kill the running children's process groups; every job that had not finished
 * gets outcome ERROR with not_run = 1 ("interrupted"), done() is called for it, and the run returns LAB_OK
 * (the finished jobs keep their outcomes). lab_isolate_interrupted() then says which signal. */

/* Installs the SIGINT/SIGTERM handlers described above (SA_RESTART off, so waits wake up). LAB_ERR_IO if
 * sigaction fails. */
lab_status lab_isolate_catch_signals(void);

/* The signal that interrupted the runs (SIGINT, SIGTERM), or 0. */
int lab_isolate_interrupted(void);

/* Interrupts the runs as signal sig would (a caller that learns of an interrupt another way: lab_mpi). Async-signal
 * safe; the first interrupt's signal is the one kept. */
void lab_isolate_interrupt(int sig);

/* The running job (of the run in progress in this process) that has run longest: 1 and *job, *elapsed_s
 * (seconds) set, or 0 when none runs. For progress lines from a done() callback. */
int lab_isolate_slowest(size_t *job, double *elapsed_s);

/* Like lab_isolate_run, but a child runs up to `batch` consecutive jobs one after another, so costly
 * per-process set-up (a CUDA context) is paid once per batch. Each job is still judged alone: the
 * watchdog's clock restarts at every reported job; a child that dies or hangs gives that outcome to the
 * job it was running, and the rest of its batch is rerun in a fresh child. A job that returns an error
 * status, reports neither a verdict nor a skip, or sets r.retire_worker ends its child's batch for the same
 * reason (the next job starts in a fresh child). batch 1 is lab_isolate_run. */
lab_status lab_isolate_run_batched(size_t n, lab_job_fn fn, void *ctx, int jobs, size_t batch, double timeout_s,
                                   lab_job_done_fn done, lab_job_outcome *out);

/* The watchdog of one job, in seconds (called in the parent). */
typedef double (*lab_job_timeout_fn)(void *ctx, size_t job);

/* Like lab_isolate_run_batched, with the batches given: a child runs the jobs of one range [bounds[r],
 * bounds[r + 1]) for r < nranges (bounds[0] = 0, bounds[nranges] = n, never decreasing; an empty range
 * starts no child), so a worker can run jobs of several kinds (incidents) in one process. The watchdog of
 * job j is timeout_of(ctx, j), or timeout_s for every job when timeout_of is NULL. LAB_ERR_ARG for ranges
 * that do not cover the n jobs in order. */
lab_status lab_isolate_run_ranges(size_t n, lab_job_fn fn, void *ctx, int jobs, const size_t *bounds, size_t nranges,
                                  double timeout_s, lab_job_timeout_fn timeout_of, lab_job_done_fn done,
                                  lab_job_outcome *out);

/* Like lab_isolate_run_ranges, but with long-lived workers: a child that ran its range to the end does not exit; it
 * waits for the next range (sent on a command socket), so a worker's per-process set-up (a CUDA context: about 1.5 s
 * of wall time and 0.5 s of CPU each under a 16-worker H100 replay) is paid once per slot instead of once per range.
 * Isolation is the same as between the jobs of one range: a job that crashes, hangs, returns an error status,
 * reports neither a verdict nor a skip, or sets r.retire_worker ends its child (the rest of its range goes to a fresh
 * child), so no job runs after one that may have left the process broken. While it waits for work a child is not
 * watched (it runs nothing); when nothing is left to hand out, the waiting children are told to end. The order ranges
 * are handed out in, and the outcomes, are those of lab_isolate_run_ranges.
 *
 * init (NULL: none) runs once in each new child before it takes any work: such a child is started without a range
 * and is handed one when it asks, so a child slow to start (a CUDA context, which the driver makes one at a time) holds
 * no work meanwhile and the first ranges go to the first children ready. init runs under the watchdog (timeout_s);
 * a child that dies or hangs in it takes no job with it, and its slot's next child starts with a range and without
 * init, so a broken start is met by a job, and reported as that job's outcome, instead of restarted forever. */
typedef void (*lab_job_init_fn)(void *ctx);
lab_status lab_isolate_run_pool(size_t n, lab_job_fn fn, void *ctx, int jobs, const size_t *bounds, size_t nranges,
                                double timeout_s, lab_job_timeout_fn timeout_of, lab_job_done_fn done,
                                lab_job_outcome *out, lab_job_init_fn init);

/* Where a fed run (lab_isolate_run_fed) gets its ranges: called in the parent at every turn of the run's loop (20 ms
 * apart at most, sooner when a child reports) and again at once after each range it gives, with `waiting`, the ranges
 * queued and not yet handed to a child (so it can tell when the queue runs low). Returns 1 with a range [*first, *end)
 * of jobs it never gave before (first < end <= n), queued behind the ranges that wait; 0 when it has nothing now (it is
 * asked again at the next turn); -1 when it will never have more. It must not start runs of its own. */
typedef int (*lab_job_feed_fn)(void *ctx, size_t waiting, size_t *first, size_t *end);

/* lab_isolate_run_pool (reuse: long-lived children, init as there) or lab_isolate_run_ranges (!reuse: a child per
 * range, init unused) with the ranges coming from `feed` while the run goes on, so a caller can hand out work it did
 * not have when the run started (lab_replay's `--mpi` ranks, dealt seed groups on demand). Jobs are numbered 0..n-1 and
 * out has n entries; only the jobs of ranges the feed gave run, and only their out entries and done() calls are made.
 * While the feed may give more, long-lived children waiting for work are kept (not watched: they run nothing), so a
 * later range runs in a process (and CUDA context) already started; the run ends once the feed said -1, the queue is
 * empty and every child is done. A range outside [0, n) stops the feed: LAB_ERR_ARG once the children are done (the
 * queued ranges are then ERROR, as after a failed fork). Interrupts as lab_isolate_run (the feed is not asked again). */
lab_status lab_isolate_run_fed(size_t n, lab_job_fn fn, void *ctx, int jobs, lab_job_feed_fn feed, void *feed_ctx,
                               double timeout_s, lab_job_timeout_fn timeout_of, lab_job_done_fn done,
                               lab_job_outcome *out, int reuse, lab_job_init_fn init);

/* fn (NULL: none) is called in the parent at every turn of every run's loop from now on, 20 ms apart at most while a
 * run is in progress (and before its feed is asked), so that a process can serve its peers while its own jobs run
 * (lab_mpi's rank 0 answers requests for work). fn must not start runs, fork or exit. */
void lab_isolate_on_tick(void (*fn)(void *ctx), void *ctx);

/* In a child of lab_isolate_run(_batched, _ranges, _pool, _fed): the slot (0 .. jobs-1) it runs in, so a worker can take the
 * resources of its slot (a GPU); -1 in the parent. */
int lab_isolate_worker_slot(void);

/* Starts argv[0] (looked up on PATH) with the arguments argv[1..] as they are: no shell, so no user text
 * is ever parsed as a command. Its stdout and stderr (both) come back through *out (read it to EOF, then
 * call lab_isolate_spawn_wait); stdin is /dev/null. LAB_ERR_UNSUPPORTED ("not found on PATH") when the
 * program does not exist, LAB_ERR_IO naming the program on another spawn or pipe failure. */
lab_status lab_isolate_spawn_read(char *const argv[], FILE **out, pid_t *pid);

/* Closes *out of lab_isolate_spawn_read and waits for the program: its wait status in *wstatus. LAB_ERR_IO
 * if waitpid fails. */
lab_status lab_isolate_spawn_wait(FILE *out, pid_t pid, int *wstatus);

/* CPUs this process may use (lab_cpus_usable: affinity mask and cgroup quota; at least 1). */
int lab_isolate_ncpu(void);

#ifdef __cplusplus
}
#endif

#endif
