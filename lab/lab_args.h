/* lab_args: the one checked parser for the lab's command-line numbers and flags, and its exit codes. */
#ifndef LAB_ARGS_H
#define LAB_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "lab_err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Exit codes of every `lab` command; each means one thing. */
#define LAB_EXIT_OK 0      /* every fix holds and every bug is detected (or the command did its job) */
#define LAB_EXIT_NOT_OK 1  /* the verdict is NOT OK (a fix regressed, a bug undetected, a golden differs) */
#define LAB_EXIT_USAGE 2   /* bad usage: unknown flag, a number out of range, an unknown incident */
#define LAB_EXIT_FAILED 3  /* the lab could not do the job: I/O error, missing dependency or build product,
                              a requested backend that is not usable */

/* The ranges `lab help` states. Seeds are 1..2^53, so that every seed is exact as a JSON number. */
#define LAB_ARGS_SEED_MAX ((uint64_t)1 << 53)     /* 9007199254740992 */
#define LAB_ARGS_SEEDS_MAX ((uint64_t)1 << 20)    /* seeds per replay: 1048576 */
#define LAB_ARGS_SEEDS_DEFAULT 256                /* seeds of a replay without --seeds (an incident's
                                                     default_seeds caps it) */
#define LAB_ARGS_EXPLAIN_SEEDS_MAX 4096
#define LAB_ARGS_JOBS_MAX 1024
#define LAB_ARGS_BATCH_MAX 256    /* --batch-seeds: LAB_CASE_GROUPS_MAX */
#define LAB_ARGS_TIMEOUT_MAX 86400                /* seconds */
#define LAB_ARGS_IDS_MAX 64                       /* --incident flags */

/* Parses s as a plain decimal integer (digits only: no sign, space, hex or exponent) in [lo, hi].
 * LAB_ERR_ARG, the message naming flag, the text and the range, when s is NULL, empty, not such an
 * integer, or out of range (overflow included). *out is set only on success. */
lab_status lab_args_u64(const char *flag, const char *s, uint64_t lo, uint64_t hi, uint64_t *out);

/* Parses s as a finite decimal number in (lo, hi] (strtod syntax, the whole string). LAB_ERR_ARG naming
 * flag, the text and the range otherwise. */
lab_status lab_args_double_above(const char *flag, const char *s, double lo, double hi, double *out);

/* *out = a * b; LAB_ERR_ARG naming `what` when the product does not fit a size_t. */
lab_status lab_args_mul_size(size_t a, size_t b, const char *what, size_t *out);

/* The options of `lab replay` (and of `lab report`, which passes its replay flags on), as parsed. Strings
 * point into argv. */
typedef struct {
    const char *ids[LAB_ARGS_IDS_MAX];   /* --incident, in order */
    size_t n_ids;
    const char *variant;                 /* --variant, or NULL */
    uint64_t n_seeds;                    /* --seeds (default 256) */
    uint64_t seed;                       /* --seed */
    uint64_t first_seed;                 /* --first-seed (default 1) */
    int have_seed, have_seeds, have_first;
    const char *backend;                 /* "cpu" (default), "cuda" or "auto" */
    int gpu_optional;                    /* --gpu-optional: cuda without a usable device is SKIP, not exit 3 */
    int no_mps;                          /* --no-mps: CUDA workers' contexts time-sliced, no private MPS (lab_mps.h) */
    uint64_t jobs;                       /* -j/--jobs; 0: not given (all cores) */
    uint64_t batch_seeds;                /* --batch-seeds; 0: not given (each incident's batch_max) */
    uint64_t timeout_s;                  /* --timeout; 0: not given */
    const char *out;                     /* --out (default build/replay) */
    const char *sanitize;                /* --sanitize TOOL (not checked against the tool list here) */
    int tap, plots, quiet, mpi, help;    /* --tap, !--no-plots, --quiet, --mpi, --help/-h */
} lab_args_replay;

/* Parses `lab replay` flags argv[0..argc) into *o (defaults first). Every number is range-checked: --seeds
 * 1..LAB_ARGS_SEEDS_MAX, --seed and --first-seed 1..LAB_ARGS_SEED_MAX, and first seed + seeds - 1 within
 * LAB_ARGS_SEED_MAX; -j 1..LAB_ARGS_JOBS_MAX; --batch-seeds 1..LAB_ARGS_BATCH_MAX; --timeout 1..LAB_ARGS_TIMEOUT_MAX. --help stops parsing
 * (o->help = 1, LAB_OK). LAB_ERR_ARG with a message naming the flag on an unknown flag, a missing value,
 * a bad number, --seed with --seeds or --first-seed, too many --incident flags, a backend other than
 * cpu|cuda|auto, or --sanitize without --backend cuda. Never allocates. */
lab_status lab_args_replay_parse(int argc, char **argv, lab_args_replay *o);

/* The seeds a parsed replay runs: 1 for --seed, else n_seeds; their array size in bytes through
 * lab_args_mul_size (LAB_ERR_ARG on overflow). */
lab_status lab_args_replay_seed_bytes(const lab_args_replay *o, size_t *n, size_t *bytes);

#ifdef __cplusplus
}
#endif

#endif
