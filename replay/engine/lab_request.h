/* lab_request: what one replay is asked to do, as the command layer (lab_cli) fills it from `lab replay` or `lab
 * report` options and the replay's entry (lab_replay_request_run, lab_replay.h) carries it out. Data, and the size of its seeds. */
#ifndef LAB_REQUEST_H
#define LAB_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "lab_err.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LAB_REQUEST_IDS_MAX 64
#define LAB_REQUEST_SEEDS_MAX ((uint64_t)1 << 20) /* seeds per replay (--seeds; a --resume's record) */
#define LAB_REQUEST_TIMEOUT_MAX 86400             /* seconds: the watchdog's cap (--timeout; a --resume's record) */
#define LAB_REQUEST_SEEDS_DEFAULT 256 /* seeds of a replay without --seeds (an incident's default_seeds caps it) */ /* --incident flags; also the most incidents one replay selects */

/* One replay. Strings are borrowed (argv, the environment): they must outlive the replay. */
typedef struct {
    const char *ids[LAB_REQUEST_IDS_MAX]; /* --incident, in order (a unique prefix each); none: every incident */
    size_t n_ids;
    const char *variant;                 /* --variant, or NULL: all */
    uint64_t n_seeds;                    /* --seeds */
    uint64_t seed;                       /* --seed: the one seed (have_seed) */
    uint64_t first_seed;                 /* --first-seed */
    int have_seed, have_seeds, have_first; /* which of those were given (no --seeds: an incident's default_seeds
                                              caps n_seeds) */
    const char *backend;                 /* "cpu", "cuda" or "auto" */
    int gpu_optional;                    /* cuda without a usable device: every CUDA case SKIP, not exit 3 */
    int no_mps;                          /* CUDA workers' contexts time-sliced, no private MPS (lab_mps.h) */
    uint64_t jobs;                       /* -j; 0: the scheduler's default */
    uint64_t batch_seeds;                /* most seeds a CUDA launch batches; 0: each incident's own */
    uint64_t timeout_s;                  /* watchdog cap per case; 0: the incidents' own */
    const char *out;                     /* the result set's folder */
    const char *sanitize;                /* compute-sanitizer tool every CUDA case runs under, or NULL */
    int tap, plots, quiet, mpi;          /* also results.tap; draw plots; no progress; one rank a host under mpirun */
    const char *resume;                  /* --resume DIR: complete the replay DIR holds, as it was asked (lab_resume.h);
                                            NULL: a fresh replay */
    const char *lab_bin;                 /* how commands name the lab (argv[0]): the replay's case processes and the
                                            replay commands it prints */
    const char *root;                    /* repository root (goldens, plot scripts) */
} lab_request;

/* The seeds a request runs: 1 for --seed, else n_seeds; their array size in bytes
 * (LAB_ERR_ARG, naming --seeds, when it does not fit a size_t). */
lab_status lab_request_seed_bytes(const lab_request *r, size_t *n, size_t *bytes);

#ifdef __cplusplus
}
#endif

#endif
