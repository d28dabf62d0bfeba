/* dsh: incident 0006, the distillation step-counter hang: case parameters, the mpirun launcher with its
 * watchdog and orphan check, the criterion and the incident's registration. */
#ifndef DSH_H
#define DSH_H

#include <stdint.h>
#include <sys/types.h>

#include "dsh_proto.h"
#include "dsh_trace.h"
#include "lab_incident.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int variant;      /* dsh_variant (dsh_proto.h) */
    int trainers;     /* training ranks, 2..4 (plus one distiller); on NCCL every GPU but the distiller's */
    int g;            /* gradient-accumulation micro-steps: bug 2..4, fix 1..4, old-g1 1, logged 3..4 */
    int steps;        /* optimizer steps, 3..6 */
    int job_world;    /* ranks of the job to start (at least trainers + 1): one job serves seeds of any trainer
                         count up to job_world - 1 */
    int transport_leaks; /* 1 on MPI: abandoned seeds leak their buffers, so the job is restarted after
                            DSH_MPI_ABANDON_MAX of them */
    int jobs;         /* jobs of this shape a lab process keeps, taking turns (1 to DSH_JOBS_MAX): while the job of a
                         seed that was given up retires its communicator, the next seed runs on another */
    double startup_delay_s; /* tests: every rank sleeps this long before serving (a slow start-up); 0 in replays */
    int crash_rank;   /* tests: this job rank dies (SIGKILL) at its first collective of the seed; -1 none */
    double retire_delay_s; /* tests: ranks take this long more to retire a communicator (NCCL's abort: 0.3-0.5 s) */
} dsh_params;

/* Draws a case's parameters from Philox (seed, DSH_STREAM_PARAMS), for the CPU job (job_world 5). Never fails. */
void dsh_params_from_seed(uint64_t seed, int variant, dsh_params *p);

/* The hang rule. A hang is no progress, never a slow start: start-up (until every rank of the seed has opened its
 * trace: mpirun and MPI or NCCL start-up for a new job, a new communicator after an abandoned seed) is bounded by
 * startup_s only; a job that never starts is a harness error (ERROR), not a hang. Once every rank traces, the
 * seed is hung
 *   - "deadlock": every rank is blocked (waiting in a collective it keeps testing, or out of its loop) while some
 *     rank is still inside, no record has been added for quiet_s, and every waiting rank has tested its pending
 *     collective DSH_QUIET_POLLS times since: a certificate, not a timeout (a rank that is not scheduled does not
 *     poll, so a loaded machine delays the verdict instead of faking it);
 *   - "stall": no record for stall_s whatever the ranks do (a rank stuck outside a collective);
 *   - "deadline": deadline_s after its start-up.
 * The figures are in the README. */
typedef struct { double stall_s, deadline_s, startup_s, quiet_s; } dsh_watch;
#define DSH_STALL_S    1.5
#define DSH_DEADLINE_S 8.0
#define DSH_STARTUP_S  60.0
#define DSH_QUIET_S    0.2
#define DSH_QUIET_POLLS 64
#define DSH_ABORT_GRACE_S 2.0 /* a hung seed's ranks have this long to leave it on the abort word, or the job is ended */

/* Jobs a lab process keeps at most. The NCCL job keeps DSH_NCCL_JOBS: retiring a communicator (its abort and the
 * next one's set-up) takes 0.3 to 0.5 s, about two seeds' time, and a seed of each bug variant is given up, so with
 * four jobs a retired one is ready again before its turn comes (the MPI job keeps one: giving up a seed costs it
 * nothing). Each job is a process a GPU with a context of its own. */
#define DSH_JOBS_MAX 4
#define DSH_NCCL_JOBS 4

typedef struct {
    pid_t sid;             /* the job's session id (mpirun's pid) */
    int job;               /* which of the process's jobs ran the seed (0 .. jobs-1) */
    double wait_s;         /* seconds the seed waited for a job to finish retiring a communicator */
    int reused;            /* the job was already running: its start-up was paid by an earlier case */
    int respawned;         /* an earlier job of this process was ended first (gone, another shape, too many leaks) */
    int completed;         /* every rank reported its loop complete */
    int ranks_error;       /* ranks that reported a transport error */
    int exited;            /* mpirun exited during the seed */
    int exit_code;         /* its status (-1: not exited) */
    int hung;              /* the hang rule fired */
    const char *why;       /* "deadlock" / "stall" / "deadline" when hung, "startup" when it never started */
    int never_started;     /* not every rank traced within startup_s */
    int abandoned_clean;   /* hung: every rank left the seed on the abort word (else the job was ended) */
    double startup_s;      /* a new job: launch until every rank served (0 when reused) */
    double end_s;          /* seconds from the seed's post to its end or to the verdict */
    double detect_s;       /* hung: the latest collective record (entry or completion, any rank) to the verdict */
    double comm_s;         /* the seed's communicator: the longest any rank took to begin it (MPI: split it off;
                              NCCL: the job's, made when the job started or when it retired the last one) */
    int orphans_found;     /* processes of an ended job still alive after mpirun was gone (then killed) */
    int orphans_left;      /* still alive 2 s after being killed: the case is an ERROR */
    char log_tail[200];    /* last line mpirun or a rank printed, when the job ended */
    char job_dir[512];     /* the job's directory (control file, log): on every rank's command line */
} dsh_job_result;

/* Runs seed `seed` of p on one of this process's long-lived jobs of job_bin (distill_job or distill_nccl; mpirun in
 * a session of its own, oversubscribed, allowed as root), with traces in dir (which must exist), under watchdog w.
 * The job: the one of the last seed when it is ready, else the next ready one after it, else a new one while fewer
 * than p->jobs run, else the first to become ready (a job is ready unless it is still retiring the communicator of a
 * seed given up; none ready within w->startup_s: all are ended and a new one starts); jobs that are gone, of another
 * shape or binary, or have leaked enough are ended first. A hung seed is
 * abandoned: its ranks leave it on the abort word and retire its communicator while the next seed runs; ranks that
 * do not leave within DSH_ABORT_GRACE_S end the job, and its processes are checked gone. LAB_ERR_UNSUPPORTED when
 * mpirun or the job binary is missing (message says which), LAB_ERR_IO when fork fails. */
lab_status dsh_job_run(const char *job_bin, const dsh_params *p, uint64_t seed, const dsh_watch *w, const char *dir,
                       dsh_job_result *jr);
/* The last seed's communicator must not serve the next (its collectives did not pair up: messages may be left on
 * it): its job retires it, as after a hang. */
void dsh_job_retire_comm(void);
/* Ends this process's jobs, if any (the quit word, then SIGKILL to what is left); registered with atexit. */
void dsh_job_stop(void);
/* Removes a directory's files and the directory (a case's traces, a job's control directory). */
void dsh_rmdir(const char *dir);

/* Counts live (non-zombie) processes in session sid or whose command line contains tag (tag may be
 * NULL); with kill_them, sends each SIGKILL. Never fails (an unreadable /proc counts nothing). */
int dsh_orphans(pid_t sid, const char *tag, int kill_them);

/* A whole case: parameters from the seed, the job, the traces, the analyzer, the criterion. */
lab_status dsh_run_case(const lab_case *c, lab_case_result *r, int variant, const dsh_watch *w);

/* The job binary's path under root (the build's distill_job). */
void dsh_job_path(const char *root, char *buf, size_t cap);
/* The NCCL job binary's path under root (the build's distill_nccl, built where nvcc and NCCL exist). */
void dsh_nccl_path(const char *root, char *buf, size_t cap);
/* CUDA builds only (dsh_cuda.cu): the number of GPUs, 0 with the reason in why when none is usable. */
int dsh_cuda_gpus(char *why, size_t len);

/* The fixed job's schedule as a model of the protocol predicts it: one row (rank, seq, op, root, count,
 * step, micro) per collective of every rank, ranks in order. Writes min(n, cap) rows to out (may be NULL
 * with cap 0) and returns n. Never fails. */
size_t dsh_schedule_fix(const dsh_params *p, uint64_t seed, double *out, size_t cap);
/* Writes golden/ (the schedule at seed 1, from the model) into dir; errors of the writes pass through. */
lab_status dsh_golden_bless(const char *dir);

extern const lab_incident dsh_incident;

#ifdef __cplusplus
}
#endif

#endif
