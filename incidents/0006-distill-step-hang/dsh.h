/* dsh: incident 0006, the distillation step-counter hang: case parameters, the mpirun launcher with its
 * watchdog and orphan check, the criterion and the incident's registration. */
#ifndef DSH_H
#define DSH_H

#include <stdint.h>
#include <sys/types.h>

#include "dsh_trace.h"
#include "lab_incident.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which code the ranks run: the counters as they were, as fixed, or as they were with G = 1. */
typedef enum { DSH_VAR_BUG = 0, DSH_VAR_FIX, DSH_VAR_OLD_G1 } dsh_variant;

typedef struct {
    int variant;      /* dsh_variant */
    int trainers;     /* training ranks, 2..4 (plus one distiller) */
    int g;            /* gradient-accumulation micro-steps: bug 2..4, fix 1..4, old-g1 1 */
    int steps;        /* optimizer steps, 3..6 */
    double startup_delay_s; /* tests: every rank sleeps this long before its first trace (a slow NCCL init);
                               0 in replays (dsh_params_from_seed) */
} dsh_params;

/* Draws a case's parameters from Philox (seed, DSH_STREAM_PARAMS). Never fails. */
void dsh_params_from_seed(uint64_t seed, int variant, dsh_params *p);

/* The watchdog. A hang is no progress, never a slow start: start-up (launch until every rank has written
 * its trace: mpirun, MPI or NCCL init, a CUDA context) is measured apart and bounded by startup_s only;
 * a job that never starts is a harness error (the case is ERROR), not a hang. Once every rank traces,
 * the job is hung when no rank's trace advanced for stall_s seconds while some rank is still outside
 * finalize, or when it runs deadline_s past its start-up. The figures are in the README. */
typedef struct { double stall_s, deadline_s, startup_s; } dsh_watch;
#define DSH_STALL_S    1.5
#define DSH_DEADLINE_S 8.0
#define DSH_STARTUP_S  60.0

typedef struct {
    pid_t sid;             /* the job's session id (mpirun's pid) */
    int exited;            /* mpirun exited by itself */
    int exit_code;         /* its status (-1: killed) */
    int hung;              /* the watchdog fired */
    const char *why;       /* "stall" / "deadline" when hung, "startup" when it never started */
    int never_started;     /* killed at startup_s with some rank not yet traced */
    double startup_s;      /* launch until every rank traced (NaN: never) */
    double end_s;          /* seconds from launch to the exit or to the watchdog firing */
    int orphans_found;     /* processes of the job still alive after mpirun was gone (then killed) */
    int orphans_left;      /* still alive 2 s after being killed: the case is an ERROR */
    char log_tail[200];    /* last line mpirun or a rank printed */
} dsh_job_result;

/* Runs the job of p on world = p->trainers + 1 ranks with mpirun (its own session, oversubscribed,
 * allowed as root), writing traces into dir (which must exist), under watchdog w; kills the whole job on
 * a hang and checks that no process of it survives. LAB_ERR_UNSUPPORTED when mpirun or the job binary
 * is missing (message says which), LAB_ERR_IO when fork fails. */
lab_status dsh_job_run(const char *job_bin, const dsh_params *p, uint64_t seed, const dsh_watch *w, const char *dir,
                       dsh_job_result *jr);

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
