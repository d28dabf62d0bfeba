/* lab_cli: the lab's command-line grammar: the checked number parsers, the option table of `lab replay` and `lab
 * report` (one parser filling one lab_request), and the commands the lab prints for a user to type (a case's replay,
 * the resume of an interrupted replay, the command line a report records). */
#ifndef LAB_CLI_H
#define LAB_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lab_err.h"
#include "lab_request.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Contract. Nothing here runs a case, reads a file, writes anywhere but the stream it is given (lab_cli_usage) or
 * allocates beyond the split "--name=value" arguments kept for the process's life: the parser is pure, so the fuzz
 * target (fuzz/fuzz_args.c) links it with lab_err alone. Every number from a user is range-checked before it sizes
 * anything, and an error names the flag (LAB_ERR_ARG, which the commands turn into exit status 2, lab_verdict_exit). */

/* The ranges `lab help` states. Seeds are 1..2^53, so that every seed is exact as a JSON number. */
#define LAB_CLI_SEED_MAX ((uint64_t)1 << 53)  /* 9007199254740992 */
#define LAB_CLI_SEEDS_MAX ((uint64_t)1 << 20) /* seeds per replay: 1048576 */
#define LAB_CLI_SEEDS_DEFAULT 256             /* seeds of a replay without --seeds (an incident's default_seeds
                                                 caps it) */
#define LAB_CLI_EXPLAIN_SEEDS_MAX 4096
#define LAB_CLI_JOBS_MAX 1024
#define LAB_CLI_BATCH_MAX 256                 /* --batch-seeds: LAB_CASE_GROUPS_MAX */
#define LAB_CLI_TIMEOUT_MAX 86400             /* seconds */

/* Parses s as a plain decimal integer (digits only: no sign, space, hex or exponent) in [lo, hi].
 * LAB_ERR_ARG, the message naming flag, the text and the range, when s is NULL, empty, not such an
 * integer, or out of range (overflow included). *out is set only on success. */
lab_status lab_cli_u64(const char *flag, const char *s, uint64_t lo, uint64_t hi, uint64_t *out);

/* Parses s as a finite decimal number in (lo, hi] (strtod syntax, the whole string). LAB_ERR_ARG naming
 * flag, the text and the range otherwise. */
lab_status lab_cli_double_above(const char *flag, const char *s, double lo, double hi, double *out);

/* *out = a * b; LAB_ERR_ARG naming `what` when the product does not fit a size_t. */
lab_status lab_cli_mul_size(size_t a, size_t b, const char *what, size_t *out);

/* The command whose options are parsed: `lab replay`, or `lab report` (the replay's options, its --out defaulting to
 * build/report, and --bench / --no-bench). */
typedef enum { LAB_CLI_REPLAY, LAB_CLI_REPORT } lab_cli_cmd;

/* What the parser gives a command: the request, and what is the command's own. */
typedef struct {
    lab_request req;
    int help;  /* --help / -h: parsing stopped there */
    int bench; /* report: 1 --bench, 0 --no-bench, -1 neither (benchmarks when the replay ran on cuda) */
} lab_cli_replay;

/* Parses the options argv[0..argc) of command cmd into *o, defaults first (seeds 256 from seed 1, backend cpu, out
 * build/replay or build/report, plots on; req.lab_bin and req.root NULL: the caller's). Options as getopt users write
 * them: "--name=value" is "--name" "value", "-jN" is "-j" "N", and "--" ends them (the command takes no operands,
 * so anything after it is refused). Every number is range-checked: --seeds 1..LAB_CLI_SEEDS_MAX, --seed and
 * --first-seed 1..LAB_CLI_SEED_MAX with first seed + seeds - 1 within LAB_CLI_SEED_MAX; -j 1..LAB_CLI_JOBS_MAX;
 * --batch-seeds 1..LAB_CLI_BATCH_MAX; --timeout 1..LAB_CLI_TIMEOUT_MAX. LAB_ERR_ARG with a message naming the flag on
 * an unknown flag (or one of the other command), a missing value, a bad number, --seed with --seeds or --first-seed,
 * more than LAB_REQUEST_IDS_MAX --incident flags, a backend other than cpu|cuda|auto, or --sanitize without
 * --backend cuda. LAB_ERR_NOMEM when the split arguments cannot be kept. */
lab_status lab_cli_replay_parse(lab_cli_cmd cmd, int argc, char **argv, lab_cli_replay *o);

/* Writes the options of command cmd to f, one a line in the option table's order: its spellings and its value's name,
 * then from the usage's text column on its help, wrapped (a number's range as the parser checks it, from the table).
 * only_own: only the options the other command does not take (`lab help` lists report's after replay's). */
void lab_cli_usage(FILE *f, lab_cli_cmd cmd, int only_own);

/* The spellings of command cmd's options (each option's name, then its other spelling if it has one), in the table's
 * order, into names[0..max); returns how many there are (more than max: the rest left out). */
size_t lab_cli_spellings(lab_cli_cmd cmd, const char **names, size_t max);

/* The seeds a request runs: 1 for --seed, else n_seeds; their array size in bytes through lab_cli_mul_size
 * (LAB_ERR_ARG on overflow). */
lab_status lab_cli_seed_bytes(const lab_request *r, size_t *n, size_t *bytes);

/* The one command that replays exactly one case into buf (cut at len), e.g.
 * "build/lab replay --incident 0004-pow-grad-nan --variant fix --seed 7 --backend cpu". */
void lab_cli_case_cmd(const char *lab_bin, const char *incident, const char *variant, uint64_t seed,
                      const char *backend, char *buf, size_t len);

/* The command that replays a variant over `seeds` seeds (a stated rate's verdict that needs more), into buf. */
void lab_cli_variant_cmd(const char *lab_bin, const char *incident, const char *variant, size_t seeds, char *buf,
                         size_t len);

/* What one resume command of an interrupted replay says: some of its incidents, from a seed on. */
typedef struct {
    const char *lab_bin;
    const char *const *ids; /* the incidents it replays (their full ids) */
    size_t n_ids;
    const char *variant;    /* NULL: all */
    int one_seed;           /* the replay ran one seed: first_seed */
    int default_seeds;      /* the seeds were not given and these incidents resume from their start: --seeds left
                               out (each runs its own default count again), --first-seed written unless it is 1 */
    uint64_t first_seed;    /* the lowest seed of these incidents with an unfinished case */
    size_t n_seeds;         /* seeds from it on */
    const char *backend;
    const char *out;        /* the interrupted replay's folder */
    int part;               /* 0: the one command, into <out>-resumed; K >= 1: the K-th of several, <out>-resumed-K */
} lab_cli_resume;

/* The resume command into buf (cut at len; buf may be NULL when len is 0): "<lab> replay [--incident ID]...
 * [--variant V] [--seed S | --first-seed S --seeds K | --first-seed S] --backend B --out <out>-resumed[-K]" (out
 * NULL: build/replay), a shell command line: the lab's path, the variant and the folder as lab_cli_sh_word writes
 * them (a folder named `a b; rm x` stays one word). Returns the length the whole command needs, as snprintf does
 * (len must exceed it for the command to be whole), so that a caller can make room for it. */
size_t lab_cli_resume_cmd(const lab_cli_resume *r, char *buf, size_t len);

/* s as one word for sh into buf (cut at len, as lab_cli_resume_cmd cuts): as it is when it holds only letters, digits
 * and `/._-+=:,@%`, else in single quotes with a quote inside as '\''. Returns the length the whole word needs (at
 * most 4 * strlen(s) + 2). */
size_t lab_cli_sh_word(const char *s, char *buf, size_t len);

/* The command line "<lab_bin> <command> <args...>" (arguments joined by one space, as given) into buf, cut at len:
 * what a report records as the command that made it. */
void lab_cli_line(const char *lab_bin, const char *command, int argc, char *const *argv, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
