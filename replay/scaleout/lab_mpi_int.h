/* lab_mpi_int: what the modules of an `--mpi` replay share (lab_mpi.c, lab_mpi_serve.c, lab_mpi_feed.c,
 * lab_mpi_window.c) and nothing else includes: the messages between ranks, rank 0's view of a rank, the test faults and
 * the context of a rank's run. Internal to those modules; the lab's contract is lab_mpi.h. No MPI type appears here:
 * the messages are sent as bytes (every rank runs the same binary). */
#ifndef LAB_MPI_INT_H
#define LAB_MPI_INT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "lab_clock.h"
#include "lab_deal.h"
#include "lab_mpi_limits.h"
#include "lab_replay.h"
#include "lab_replay_fed.h"

enum { LAB_MPI_TAG_HELLO = 7101, LAB_MPI_TAG_CASE, LAB_MPI_TAG_DONE, LAB_MPI_TAG_ASK, LAB_MPI_TAG_DEAL, LAB_MPI_TAG_ALIVE,
       LAB_MPI_TAG_RELEASE };

/* A rank other than 0 whose cases run but that has sent nothing for this long says it is alive (its workers may all be
 * in long cases or seed batches): silence then means the rank process itself is stuck. */
#define LAB_MPI_ALIVE_S (LAB_MPI_GRACE_S / 2)

/* The most incidents (parts of the case list) a request for work can name: as many as `--incident` flags. */
#define LAB_MPI_MAX_PARTS LAB_REQUEST_IDS_MAX

/* What a rank tells rank 0 first: who and where it is. Sent as bytes: every rank runs the same binary. */
typedef struct {
    int32_t rank, local_rank, local_size, jobs;
    int64_t pid;
    uint64_t n_total, n_groups;    /* cases and seed groups in the whole list as this rank built it (windowed: the
                                      cases planned and the cases a window) */
    char host[128];
    char device[224];
    char jobs_from[320];           /* where its worker count came from (lab_replay_workers) */
} lab_mpi_hello;

/* One finished case (or its rerun after a device error): its index in the canonical list and its outcome. */
typedef struct {
    uint64_t index;
    uint32_t window;               /* the window it belongs to (windowed replays; 0 otherwise) */
    lab_job_outcome o;
    char first_run[sizeof ((lab_case_record *)0)->first_run];
} lab_mpi_case_msg;

/* A rank's last word: how many cases it sent and whether its own harness failed. */
typedef struct {
    uint64_t n_sent;
    double wall_s;
    int32_t status;
    int32_t interrupted;           /* the signal that stopped it (its unfinished cases were not sent), or 0 */
    char error[240];
} lab_mpi_done_msg;

/* A rank's word that it is alive (LAB_MPI_ALIVE_S). */
typedef struct {
    uint32_t n_reported;
} lab_mpi_alive_msg;

/* A rank's request for work: the incidents its lane in progress runs (lab_replay_feed_fn). */
typedef struct {
    uint32_t seq;
    uint32_t window;               /* the window it asks in (windowed replays; 0 otherwise) */
    uint32_t nparts;
    unsigned char accept[LAB_MPI_MAX_PARTS];
} lab_mpi_ask_msg;

/* Rank 0's answer: a deal (more = 1): seed groups [first[k], end[k]) for k < n, a chunk of each incident asked for that
 * has groups left (lab_deal_next); none left for those incidents in this window (more = 0); not yet: rank 0 has not
 * reached the window asked in and the request stays open (more = 2, sent every LAB_MPI_ALIVE_S); or the run is over:
 * start nothing more (more = -1). */
enum { LAB_MPI_DEAL_OVER = -1, LAB_MPI_DEAL_NONE = 0, LAB_MPI_DEAL_SOME = 1, LAB_MPI_DEAL_HOLD = 2 };
typedef struct {
    uint32_t seq;
    int32_t more;
    uint32_t n;
    struct {
        uint64_t first, end;
    } c[LAB_MPI_MAX_PARTS];         /* sent: its first n (lab_mpi_deal_len), a deal as short as one chunk's was */
} lab_mpi_deal_msg;

/* The bytes of a deal message with n chunks. */
static inline size_t lab_mpi_deal_len(uint32_t n)
{
    return offsetof(lab_mpi_deal_msg, c) + n * sizeof ((lab_mpi_deal_msg *)0)->c[0];
}

/* One chunk of a deal as rank 0 made it, for summary.json's account of the dealing (which rank ran which seeds, when,
 * at what estimated cost): the seeds resolved when it is dealt, since a windowed replay's groups change by window. */
typedef struct {
    int rank;
    uint32_t deal;                 /* the deal it belongs to (its chunks share the number), 1 the first */
    uint32_t window;               /* windowed replays: its window; 0 otherwise */
    double at_s;                   /* when it was dealt, seconds since the run started */
    const char *incident;          /* the incident's id */
    uint64_t first_seed, last_seed;
    size_t cases;
    double cost_s;                 /* the dealer's estimate of its wall seconds (lab_sched_case_cost) */
} lab_mpi_deal_log;

typedef enum { LAB_RANK_RUNNING, LAB_RANK_DONE, LAB_RANK_CRASHED, LAB_RANK_HUNG, LAB_RANK_BAD } lab_mpi_rank_status;

/* Rank 0's view of one rank. */
typedef struct {
    int have_hello;
    lab_mpi_hello hello;
    lab_mpi_rank_status status;
    size_t n_dealt, n_got, chunks;  /* cases dealt to it, cases it reported, chunks it was dealt */
    double last_heard;
    double wall_s;                  /* the rank's own run time (from its DONE) */
    char why[240];                  /* crash / hang / error explanation */
} lab_mpi_peer;

/* LAB_MPI_TEST_FAULT=crash:R | hang:R | slow:R, for the tests of rank failure and of dealing. */
typedef enum { LAB_MPI_FAULT_NONE, LAB_MPI_FAULT_CRASH, LAB_MPI_FAULT_HANG, LAB_MPI_FAULT_SLOW, LAB_MPI_FAULT_LATE } lab_mpi_fault_kind;
typedef struct {
    lab_mpi_fault_kind kind;
    int rank;
} lab_mpi_fault;

/* Everything a rank needs while its cases run (the feed's and the done callback's context). */
typedef struct {
    const lab_replay_opts *opts;
    int rank, size;
    lab_case_record *all;           /* the whole list (rank 0 fills the outcomes) */
    size_t n_all;
    lab_replay_groups groups;       /* its seed groups, as every rank makes them */
    size_t n_dealt, n_reported;     /* this rank: cases dealt to it, cases it reported (first reports) */
    unsigned char *reported;        /* this rank: per case, reported once already */
    lab_mpi_fault fault;
    double patience;                /* seconds a rank waits for rank 0's answer (and rank 0 for a silent rank) */
    size_t check_total, check_groups; /* what every rank's hello must say (n_total, n_groups) */
    /* a windowed replay (lab_window_run_by): every rank walks the same windows, rank 0 deals each window's groups */
    int windowed;
    uint32_t window;                /* the window in progress or last run (1 the first; 0 before) */
    int in_window;                  /* rank 0: dealing window `window` now */
    int over;                       /* rank 0: no window starts any more; another rank: rank 0 said so */
    size_t groups_total;            /* seed groups over every window */
    /* a rank other than 0: its request in flight */
    int asking;
    uint32_t seq;
    double asked_at, said_at;       /* when it asked, and when it last sent anything */
    char fail[240];                 /* why this rank stopped asking ("" while fine) */
    /* rank 0 only */
    lab_mpi_peer *ranks;
    unsigned char *got;             /* per canonical case: its outcome is in */
    int *dealt_to;                  /* per canonical case: the rank it was dealt to, -1 none yet */
    lab_deal *dealer;
    size_t chunks;
    lab_mpi_deal_log *log;          /* every chunk dealt, in order (n_log; cap_log allocated) */
    size_t n_log, cap_log;
    uint32_t deals;                 /* deals made */
    int log_lost;                   /* the log could not grow (out of memory): the summary says it is incomplete */
    double judged_at;
    double t0;                      /* when the run started (after the ranks agreed) */
    const char *host;
    lab_mpi_ask_msg *pending;       /* per rank: a request for a window rank 0 has not reached (has_pending) */
    unsigned char *has_pending;
    double held_at;                 /* when the open requests were last told to hold */
    int rank_failed;                /* a case went unreported for a reason other than an interrupt */
} lab_mpi_ctx;

#endif
