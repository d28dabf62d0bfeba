/* dsh_proto: incident 0006's protocol as the ranks run it, over a transport (Open MPI in distill_job, NCCL in
 * distill_nccl), and the long-lived job around it: one job serves many seeds, posted one at a time by the lab
 * through a shared control file; a seed that stalls is abandoned on the lab's word and the job goes on.
 *
 * The control file (dsh_ctrl, a shared file mapping) is the only channel between the lab and the ranks:
 *   lab:   writes the case (variant, trainers, G, steps, seed, trace directory), then bumps `epoch`;
 *          to abandon a stalled seed sets `abort_epoch` = epoch; to end the job sets `quit`. A seed whose
 *          communicator must not serve again (abandoned, or its collectives did not pair up) gets `abort_epoch`
 *          too, after it ended.
 *   ranks: each waits for a new epoch (sleeping, a heartbeat in `alive`), makes the seed's communicator
 *          (all ranks of the job take part; ranks the seed does not use idle through it), runs the protocol,
 *          tracing every collective (dsh_trace), and stores `done_epoch` and `done_how` (release order).
 *          Waiting for the next epoch, a rank that sees `abort_epoch` equal to the epoch it served retires that
 *          epoch's communicator together with the other ranks (the transport's `retire`: NCCL aborts it and
 *          makes the next one) and stores `ready_epoch`; the lab posts no epoch to the job before every rank
 *          has, and runs other seeds on other jobs meanwhile (dsh_job.c).
 * A rank waits on a collective by testing it with a growing sleep; each test bumps its trace's `polls`, and
 * `waiting` is 1 while it waits, so the lab can tell a rank that is blocked (testing, getting nowhere) from
 * one that is not running. A rank that sees abort_epoch == its epoch leaves the wait: the transport abandons
 * the communicator when it retires it (NCCL: ncclCommAbort; MPI: the seed's communicator is left with its pending
 * requests and never used again, its buffers leaked, which is why the lab restarts an MPI job after
 * DSH_MPI_ABANDON_MAX abandoned seeds). */
#ifndef DSH_PROTO_H
#define DSH_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "dsh_trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which code the ranks run. */
typedef enum {
    DSH_VAR_BUG = 0,  /* the counters as they were: exchange every micro-step, the distiller counts exchanges */
    DSH_VAR_FIX,      /* one exchange per accumulation cycle, a G-aware distiller */
    DSH_VAR_OLD_G1,   /* the old counters with G = 1 */
    DSH_VAR_LOGGED    /* as the incident's log shows it: the shape broadcast made every micro-step, the batch
                         exchange only on the cycle's first (a half-applied fix), G = 1 for the first
                         DSH_LOGGED_RAMP steps (a batch-size ramp-up), then G = 3 or 4 */
} dsh_variant;
#define DSH_LOGGED_RAMP 2

#define DSH_CTRL_MAGIC 0x324c525443485344ull /* "DSHCTRL2" */
#define DSH_MPI_ABANDON_MAX 32               /* abandoned seeds an MPI job carries before the lab restarts it */

/* How a rank left an epoch. */
enum { DSH_DONE_OK = 0, DSH_DONE_ABANDONED = 1, DSH_DONE_ERROR = 2 };

typedef struct {
    uint64_t magic;
    int32_t world;                        /* ranks of the job */
    int32_t quit;                         /* lab: end the job */
    uint64_t epoch;                       /* lab: the seed to run (0: none yet) */
    uint64_t abort_epoch;                 /* lab: abandon this epoch */
    /* the case of the epoch, written before epoch is bumped */
    int32_t variant, trainers, g, steps;
    int32_t crash_rank;                   /* tests: this job rank dies (SIGKILL) at its first collective; -1 none */
    double retire_delay_s;                /* tests: ranks take this long more to retire a communicator */
    uint64_t seed;
    double t0;                            /* the epoch's start (CLOCK_REALTIME seconds) */
    char trace_dir[512];
    /* written by the ranks */
    uint64_t alive[DSH_TRACE_MAXRANK];    /* heartbeat while waiting for an epoch (0: not started yet) */
    uint64_t done_epoch[DSH_TRACE_MAXRANK];
    int32_t done_how[DSH_TRACE_MAXRANK];  /* DSH_DONE_* of done_epoch */
    double begin_s[DSH_TRACE_MAXRANK];    /* seconds the epoch's communicator took, written before the rank traces */
    uint64_t ready_epoch[DSH_TRACE_MAXRANK]; /* the latest abort_epoch whose communicator this rank has retired */
} dsh_ctrl;

/* Maps the control file at path (create: made and zeroed, world stored; else opened as it is). NULL with lab_err
 * set naming the path on failure or a bad magic. dsh_ctrl_unmap releases it (NULL is fine). */
dsh_ctrl *dsh_ctrl_map(const char *path, int create, int world);
void dsh_ctrl_unmap(dsh_ctrl *c);

/* Atomic access to the control fields (release stores, acquire loads). */
uint64_t dsh_ld64(const uint64_t *p);
void dsh_st64(uint64_t *p, uint64_t v);
int32_t dsh_ld32(const int32_t *p);
void dsh_st32(int32_t *p, int32_t v);

/* G of step `step` of a case: DSH_VAR_LOGGED ramps (1 for the first DSH_LOGGED_RAMP steps), the others keep g. */
int dsh_g_at(int variant, int g, int step);

/* A transport: posts the protocol's operations on the epoch's communicator and tests them. Ranks are the
 * communicator's: trainers 0 .. trainers-1, the distiller `trainers`. Each post returns 0, or -1 on an error
 * (printed). test returns 1 when everything posted has completed, 0 when not yet, -1 on an error. */
typedef struct dsh_xport {
    void *ctx;
    /* Every rank of the job, at each epoch: the epoch's communicator over job ranks 0..trainers-1 and world-1
     * (MPI: the previous one freed, this one split off; NCCL: the one the job holds); *member is 0 for a rank the
     * seed does not use, else *rank is its rank there. 0 or -1. */
    int (*begin)(struct dsh_xport *x, int trainers, int *member, int *rank);
    /* Every rank of the job, between epochs, once the lab said the last epoch's communicator must not serve again
     * (abandoned, or its collectives did not pair up): dispose of it (NCCL: abort it, which ends its hung kernels,
     * and make the next; MPI: leave it as it is, never used again). 0 or -1. */
    int (*retire)(struct dsh_xport *x);
    int (*post_bcast)(struct dsh_xport *x, long long shape[2]);      /* from trainer 0; in place */
    /* trainers send n tokens to the distiller; the distiller receives n from each trainer into all (n * trainers) */
    int (*post_gather)(struct dsh_xport *x, const int32_t *mine, int32_t *all, size_t n);
    /* the distiller sends nout outputs to each trainer from all; a trainer receives its nout into mine */
    int (*post_scatter)(struct dsh_xport *x, const float *all, float *mine, size_t nout);
    int (*test)(struct dsh_xport *x);
    const char *name;                     /* "distill_job", "distill_nccl": message prefix */
} dsh_xport;

/* The long-lived job's loop in a rank of job rank `jrank`: waits for epochs in ctrl and runs each; returns when
 * quit is set (0) or on a transport error it cannot go on from (-1: the caller aborts the job). */
int dsh_serve(dsh_xport *x, dsh_ctrl *ctrl, int jrank, int jworld);

/* The shape rank 0 draws for exchange xid of case (variant, g, seed): rows 8 or 16 (times G where one exchange
 * carries a whole accumulation cycle), cols 512, 1024 or 2048. */
void dsh_shape(int variant, int g, uint64_t seed, uint64_t xid, long long shape[2]);

/* The largest shape dsh_shape draws for any case (G is at most 4): what a transport sizes its buffers for once. */
#define DSH_ROWS_MAX (16 * 4)
#define DSH_COLS_MAX 2048

#ifdef __cplusplus
}
#endif

#endif
