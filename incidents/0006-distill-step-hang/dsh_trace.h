/* dsh_trace: the collective trace of incident 0006: a per-rank ring buffer of collectives in a shared file
 * mapping (it survives any kill), and the analyzer that lines the ranks up by sequence number. */
#ifndef DSH_TRACE_H
#define DSH_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "lab_err.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DSH_TRACE_MAGIC   0x32435254485344ull /* "DSHTRC2" */
#define DSH_TRACE_RING    256                 /* records kept per rank (the newest) */
#define DSH_TRACE_MAXRANK 16
#define DSH_OUT_COLS      8                   /* teacher outputs per batch row */
#define DSH_VOCAB         50257               /* token ids are drawn below this */
/* Philox streams of the job's inputs (keyed by the case seed). */
enum { DSH_STREAM_PARAMS = 61, DSH_STREAM_SHAPE = 62, DSH_STREAM_TOKENS = 63 };

/* Collectives of the protocol (and the finalize fence, which a rank enters when its loop is over). */
typedef enum {
    DSH_OP_NONE = 0, DSH_OP_BCAST, DSH_OP_GATHER, DSH_OP_SCATTER, DSH_OP_FINALIZE, DSH_OP_COUNT
} dsh_op;
const char *dsh_op_name(int op); /* "bcast", "gather", ...; "?" when out of range */

/* A rank's role in the job. */
typedef enum { DSH_ROLE_TRAINER = 0, DSH_ROLE_DISTILLER = 1 } dsh_role;

/* One collective as a rank entered it. count is the number of elements this rank expects per trainer
 * (bcast: 2, the shape; gather: the batch a trainer sends, rows*cols; scatter: the outputs a trainer
 * gets back, rows*DSH_OUT_COLS), so a size mismatch between ranks shows as different counts. */
typedef struct {
    uint64_t seq;        /* this rank's collective number, from 0 */
    int32_t op;          /* dsh_op */
    int32_t root;        /* root rank of the collective (-1: none) */
    int64_t count;       /* elements per trainer, as this rank believes */
    int32_t rows, cols;  /* the batch shape this rank holds when entering (after a bcast: as received) */
    int32_t step;        /* the rank's own step counter */
    int32_t micro;       /* its micro-step (acc_step) counter; the distiller has none: -1 */
    double t_enter;      /* seconds since the job's start (CLOCK_REALTIME based, shared by ranks) */
    double t_done;       /* when it completed; 0 while still inside */
} dsh_record;

/* The head of a trace file: who wrote it and how far it got. Written in place as the rank runs. */
typedef struct {
    uint64_t magic;
    int32_t rank, world, role, ring;
    int32_t g;           /* accumulation micro-steps the rank was told (trainers and a G-aware distiller) */
    int32_t steps;       /* steps the rank was asked to run */
    int32_t step, micro; /* counters now */
    int32_t finished;    /* 1: left its loop and finalized */
    int32_t outputs_bad; /* trainer: teacher outputs that did not match its own batch */
    int32_t empty_shapes;/* shapes of (0, 0) received */
    int32_t exchanges;   /* exchanges (bcast + gather + scatter) completed */
    int32_t waiting;     /* 1 while the rank waits for a collective to complete */
    int32_t errors;      /* collectives the transport failed (a truncated message, an NCCL error) */
    uint64_t polls;      /* tests of pending collectives so far: a waiting rank that polls is blocked, not stopped */
    uint64_t n;          /* records written so far (the ring holds the last min(n, ring)) */
    double t0;           /* the job's start (CLOCK_REALTIME seconds) */
} dsh_trace_head;

typedef struct {
    dsh_trace_head head;
    dsh_record rec[DSH_TRACE_RING];
} dsh_trace_file;

/* ---- writer (in the MPI ranks) ---- */

/* Maps `size` bytes of the file at path shared and writable (create: made or truncated to size; else opened as it
 * is). NULL with lab_err set ("<what>: <path>: ...") on failure. Release with munmap(p, size). */
void *dsh_map_shared(const char *path, size_t size, int create, const char *what);

/* Creates "<dir>/rank<rank>.trace" (truncated to the file size) and maps it shared, so each record is in
 * the file as soon as it is written, whatever ends the process. Returns NULL with lab_err set naming the
 * path on failure. */
dsh_trace_file *dsh_trace_open(const char *dir, int rank, int world, int role, double t0);
/* Appends a record (the oldest is overwritten when the ring is full) and returns it, so the caller can
 * set t_done when the collective completes. Never fails. */
dsh_record *dsh_trace_enter(dsh_trace_file *tf, int op, int root, int64_t count, int rows, int cols, int step,
                            int micro, double t);
/* Syncs and unmaps (at exit); NULL is fine. */
void dsh_trace_close(dsh_trace_file *tf);

/* ---- reader and analyzer (in the lab) ---- */

/* One rank's trace, read back: its head and its records in seq order. */
typedef struct {
    int present;          /* 0: the file is missing (the rank never started tracing) */
    dsh_trace_head head;
    size_t n;             /* records held (<= ring) */
    dsh_record rec[DSH_TRACE_RING];
} dsh_rank_trace;

/* Reads "<dir>/rank<r>.trace" for r in [0, world): a missing file leaves present = 0; a file of the wrong
 * size or magic, or claiming another rank, is LAB_ERR_FORMAT naming it. out[world] must be allocated. */
lab_status dsh_trace_read(const char *dir, int world, dsh_rank_trace *out);

/* Match states, after PyTorch's Flight Recorder. */
typedef enum {
    DSH_MATCH_FULL = 0,     /* every rank entered the same op, root and size at this seq */
    DSH_MATCH_TYPE,         /* collective type (or root) mismatch */
    DSH_MATCH_SIZE,         /* same op, different element counts */
    DSH_MATCH_MISSING       /* some rank never arrived at this seq */
} dsh_match;
const char *dsh_match_name(int m); /* "fully matched", "collective type mismatch", ... */

typedef struct {
    int world;
    uint64_t seq_lo, seq_hi;   /* the seqs compared: [lo, hi) (window every rank's ring still holds) */
    uint64_t n_matched;        /* seqs fully matched */
    int state;                 /* dsh_match of the first bad seq (DSH_MATCH_FULL when none) */
    int64_t first_bad_seq;     /* -1: none */
    int culprit;               /* the odd rank out at first_bad_seq (-1: none) */
    int64_t first_step_seq;    /* first fully matched seq whose trainers and distiller disagree on the step
                                  (the trainers' step differs from the distiller's); -1: none */
    int step_trainer, step_distiller; /* the two step counters at first_step_seq */
    int micro_trainer;
    int64_t empty_shape_seq;   /* first record holding a (0, 0) shape after a bcast; -1: none */
    int empty_shape_rank;
    double t_first_bad;        /* time of the latest entry among the ranks at first_bad_seq (s since start) */
    char counters[160];        /* the step-counter finding ("" when none): "the distiller's step counter runs
                                  ahead from seq 3 (step 1; trainers at step 0 micro 1)" */
    char verdict[480];         /* one line, e.g. "seq 7: ranks 0-3 in bcast at step 2 micro 1, rank 4
                                  (distiller) in finalize at step 3" */
} dsh_analysis;

/* Lines the ranks up by seq and fills a. Ranks without a file count as never arrived. The distiller is
 * the rank whose head says DSH_ROLE_DISTILLER. LAB_ERR_ARG if world is out of [2, DSH_TRACE_MAXRANK]. */
lab_status dsh_trace_analyze(const dsh_rank_trace *ranks, int world, dsh_analysis *a);

/* Writes "a-b" or "a" for a sorted set of ranks into buf (e.g. "ranks 0-3", "rank 4"). */
void dsh_trace_ranks_str(const int *ranks, int n, char *buf, size_t cap);

/* ---- export: Chrome trace JSON (Perfetto, chrome://tracing) and the timeline figure ---- */

/* Where a case's exported trace goes: <root>/build/traces/0006-distill-step-hang/<variant>-<backend>-seed<S>
 * (suffixes .trace.json, .dat, .png are added by the functions below). */
void dsh_trace_export_stem(const char *root, const char *variant, const char *backend, uint64_t seed, char *buf,
                           size_t cap);

/* Writes <stem>.trace.json: {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}} with, per rank
 * (pid = rank, named by a "process_name" metadata event), every collective it entered as a complete event
 * ("ph": "X", ts/dur in microseconds since the job's start; tid 1; args: seq, op, root, count, step, micro,
 * completed), its micro-steps (tid 2, "step S micro M") and exchanges (tid 3, bcast to scatter), a "C"
 * counter event of its step counter at each collective, an instant event ("ph": "i") "stall" at the first
 * unmatched sequence number with the analyzer's verdict, and one "counter diverged" where the step counters
 * part (a->counters); and <stem>.dat, the Gantt rows (rank, enter, leave, op, seq, completed) that
 * plots/timeline.gp draws. Errors: LAB_ERR_IO naming the file, LAB_ERR_NOMEM. */
lab_status dsh_trace_export(const char *stem, const dsh_rank_trace *ranks, int world, const dsh_analysis *a);

struct lab_figure_ctx;
/* The incident's figures() (lab_incident.figures): for the first fix case and the first bug case of the
 * replay that ran (and exported a trace), a per-rank Gantt of collectives <plots_dir>/<id>-timeline-<variant>.png
 * with plots/timeline.gp, from the exported Gantt rows; the stall and the diverged counter are marked.
 * LAB_ERR_UNSUPPORTED when no case has a trace (every case skipped) or gnuplot is missing; errors as
 * lab_gnuplot_render. */
lab_status dsh_trace_figures(const struct lab_figure_ctx *fx);

#ifdef __cplusplus
}
#endif

#endif
