/* lab_cli: the lab's command-line grammar: the checked number parsers and the option table of `lab replay` and `lab
 * report` (one parser filling one lab_request). The commands the lab prints for a user to type are lab_command.h's. */
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
#define LAB_CLI_SEEDS_MAX LAB_REQUEST_SEEDS_MAX /* seeds per replay: 1048576 */
#define LAB_CLI_EXPLAIN_SEEDS_MAX 4096
#define LAB_CLI_JOBS_MAX 1024
#define LAB_CLI_BATCH_MAX 256                 /* --batch-seeds: LAB_CASE_GROUPS_MAX */
#define LAB_CLI_TIMEOUT_MAX LAB_REQUEST_TIMEOUT_MAX /* seconds */

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

#ifdef __cplusplus
}
#endif

#endif
