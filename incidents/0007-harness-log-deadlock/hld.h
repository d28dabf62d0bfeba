/* hld: incident 0007, the test harness that deadlocked on its own logging: case setup, the parent
 * protocols around a real worker process (pipe + socket), the progress watch (hld.c), the judge, goldens
 * (hld_incident.c). */
#ifndef HLD_H
#define HLD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hld_proto.h"
#include "lab_err.h"
#include "lab_incident.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The variants, as one parameter: which parent protocol and which logger the worker runs. */
typedef enum {
    HLD_BUG_FULL_LOG = 0,     /* parent waits for the reply before reading stdout; worker logs the whole message */
    HLD_BUG_PREVIEW_VERBOSE,  /* same parent; the preview logger with verbose on (logs the whole message again) */
    HLD_FIX_BOUNDED_PREVIEW,  /* same parent; the preview logger, verbose off (the historical fix) */
    HLD_FIX_DRAIN,            /* the parent drains stdout while it waits (poll on both); verbose full log */
    HLD_N_VARIANTS
} hld_variant;

/* What a variant means: the parent protocol and the worker's logger. */
typedef struct {
    int drain;       /* 1: poll socket and stdout together; 0: the socket alone until the reply is complete */
    int log_full;    /* worker flag --log full (the old logger) vs --log preview (the new one) */
    int verbose;     /* worker flag --verbose */
} hld_variant_spec;
/* The spec of v (v < HLD_N_VARIANTS; anything else gives the first variant's). Never fails. */
hld_variant_spec hld_variant_get(hld_variant v);

/* The watch: a deadlock is declared when nothing progressed for stall_s while the worker sits in a
 * write() to its stdout pipe; any other lack of an answer only at deadline_s after launch. */
typedef struct { double stall_s, deadline_s; } hld_watch;
#define HLD_STALL_S 0.25
#define HLD_DEADLINE_S 3.0
/* Range of the log line drawn per seed, in multiples of the smallest payload whose full log overflows the pipe. */
#define HLD_SIZE_SPAN 16.0
/* Golden seed (digests of the reference message and logs, and the preview line). */
#define HLD_GOLDEN_SEED 1u
/* The goldens of HLD_GOLDEN_SEED (hld_setup loads them, hld_golden_bless writes them). */
#define HLD_GOLDEN_DIGESTS "digests_seed1.npy"
#define HLD_GOLDEN_PREVIEW "preview_seed1.npy"
#define HLD_GOLDEN_CASE "case_seed1.npy"

/* A case: everything a seed fixes, shared by the variants (inputs, expected bytes from the reference). */
typedef struct {
    uint64_t seed;
    size_t pipe_capacity;      /* F_GETPIPE_SZ of a fresh pipe (or the one set below) */
    size_t set_capacity;       /* 0: the kernel's default pipe; else F_SETPIPE_SZ to this (studies) */
    size_t payload_bytes;      /* raw payload bytes before base64 */
    size_t pad;                /* '.' appended to the log line (studies; 0 in replays) */
    /* Slow-worker knobs (tests): write the log in chunks with pauses, or sleep before logging. */
    size_t chunk;
    unsigned pause_ms, think_ms;
    /* The reference (OpenSSL base64, independent of the worker's encoder). */
    char *message;             /* the JSON message, NUL-terminated */
    size_t message_len;
    /* Goldens of this seed, loaded in setup at the golden seed (have_golden). */
    int have_golden;           /* loaded and applicable (the golden's payload is this case's) */
    size_t golden_payload, golden_capacity;
    unsigned char golden_msg_sha[32], golden_full_sha[32];
    char golden_preview[HLD_PREVIEW_CHARS + 128];
    size_t golden_preview_len;
} hld_case;

/* Setup of a seed: reads the default pipe capacity, draws the payload size (Philox word 0 of
 * HLD_STREAM_SIZE: log-uniform from hld_threshold_predict(seed, capacity) to HLD_SIZE_SPAN times that, so the
 * whole-message log always overflows the pipe), builds the reference message and, at HLD_GOLDEN_SEED
 * with golden_dir non-NULL, loads the goldens (sha256, dtype, shape verified). Errors: LAB_ERR_IO (pipe,
 * fcntl), LAB_ERR_NOMEM, and the golden's load errors (message naming the file). On error *cs is freed. */
lab_status hld_setup(uint64_t seed, const char *golden_dir, hld_case *cs);
/* Rebuilds the reference message after a test or study changed cs->payload_bytes. LAB_ERR_NOMEM. */
lab_status hld_case_resize(hld_case *cs, size_t payload_bytes);
/* Frees the case; safe on a zeroed or freed case. */
void hld_case_free(hld_case *cs);

/* The reference: the JSON message of (seed, payload bytes), base64 by OpenSSL's EVP_EncodeBlock. *out is
 * malloc'd and NUL-terminated. LAB_ERR_NOMEM. */
lab_status hld_ref_message(uint64_t seed, size_t payload_bytes, char **out, size_t *len);
/* The log line a worker of variant v writes for a message of m bytes (content msg), with pad dots:
 * into out (malloc'd; may be NULL to get only the length). Returns the length; 0 on allocation failure. */
size_t hld_ref_log_line(hld_variant v, const char *msg, size_t m, size_t pad, char **out);
/* Bytes of the whole-message log line of seed for a payload of p bytes (pad 0). Never fails. */
size_t hld_full_log_bytes(uint64_t seed, size_t payload_bytes);
/* The smallest payload of seed whose whole-message log line exceeds `capacity` bytes: the threshold a
 * pipe of that capacity predicts. Never fails. */
size_t hld_threshold_predict(uint64_t seed, size_t capacity);
/* The default capacity of a new pipe (F_GETPIPE_SZ). LAB_ERR_IO naming the call. */
lab_status hld_pipe_default_capacity(size_t *cap);

/* What a run observed. */
typedef struct {
    int launched;              /* the worker was started */
    pid_t pid;
    int hung;                  /* the watch fired */
    const char *why;           /* "deadlock" (stall while blocked in write to the pipe) / "deadline" */
    double detect_s;           /* launch to the watch firing */
    double exchange_s;         /* launch to the reply complete, or to the watch firing */
    double max_quiet_s;        /* longest stretch without progress seen */
    size_t pipe_capacity;      /* F_GETPIPE_SZ of this run's pipe */
    size_t pipe_fill;          /* bytes in the pipe (FIONREAD) when the watch fired / at the reply */
    size_t stdout_read;        /* bytes the parent read from the worker's stdout (all of it, after a reply) */
    size_t parent_read_at_end; /* bytes read from both fds when the watch fired (or in total) */
    char *log;                 /* what the parent read from stdout (malloc'd) */
    char *reply;               /* the message read from the socket (malloc'd) */
    size_t reply_len, reply_expected;
    int reply_complete;
    int exit_code;             /* the worker's exit status; 128+signal when killed; -1 unknown */
    /* Where the worker was when the watch fired (from /proc/PID/syscall and /proc/PID/wchan). */
    long blocked_nr;           /* syscall number, -1 running or unknown */
    long long blocked_args[3];
    int blocked_in_write;      /* write() to its fd 1, or wchan pipe_write */
    char wchan[64];
    char state;                /* /proc/PID/stat state */
    int orphans;               /* processes with this run's tag alive after the reap (killed; then ERROR) */
    char tag[64];
} hld_obs;

/* Runs variant v on case cs: starts the worker (fork + exec of worker_bin) with its stdout on a pipe
 * and a socketpair, runs the parent protocol of v under watch w, kills the worker if the watch fires,
 * reaps it and scans /proc for anything left with the run's tag. Fills *obs (free with hld_obs_free).
 * Errors: LAB_ERR_IO when the worker binary is missing or pipe/socketpair/fork/poll/read fail (named);
 * LAB_ERR_FORMAT for a frame header above HLD_MAX_MESSAGE; LAB_ERR_NOMEM. The worker is dead and reaped
 * whatever the return. */
lab_status hld_run(const hld_case *cs, hld_variant v, const hld_watch *w, const char *worker_bin, hld_obs *obs);
void hld_obs_free(hld_obs *obs);

/* The judge, one for every variant: PASS when the watch did not fire, the worker exited 0, the reply is
 * the reference message byte for byte, the parent's stdout is the variant's reference log line, and at
 * the golden seed the reply and log agree with the goldens. A fired watch is a HANG verdict naming where
 * the worker blocked. Records the metrics (see README). Returns LAB_ERR_IO when processes were left
 * behind (the case is an ERROR), else LAB_OK. */
lab_status hld_judge(const hld_case *cs, hld_variant v, const hld_obs *obs, lab_case_result *r);

/* lab_run_fn: the variant (param) over the seed's group (hld_setup made once per seed): run, judge. Errors
 * of those pass through. */
lab_status hld_run_case(const lab_case *c, lab_case_result *r);

/* The worker's path under root (the build's hld_worker). */
void hld_worker_path(const char *root, char *buf, size_t cap);
/* Live processes whose command line holds tag; with kill_them, SIGKILL each. Never fails. */
int hld_orphans(const char *tag, int kill_them);

/* The threshold measured on the real mechanism: the smallest payload whose bug-full-log run hangs, by
 * bisection over [1, 2 * capacity] payload bytes, on pipes of capacity set_capacity (0: default), with
 * watch w. *capacity gets F_GETPIPE_SZ. Errors of the runs pass through; LAB_ERR_MISMATCH when the
 * bracket does not hold (the largest size does not hang or the smallest does). */
lab_status hld_threshold_measure(const char *worker_bin, size_t set_capacity, const hld_watch *w, size_t *capacity,
                                 size_t *threshold, int *probes);

/* Writes golden/ into dir from the reference only. Errors of the writes pass through. */
lab_status hld_golden_bless(const char *dir);

extern const lab_incident hld_incident;

#ifdef __cplusplus
}
#endif

#endif
