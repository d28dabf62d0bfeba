/* lab_cli: the lab's command-line grammar: the checked number parsers, the option table of `lab replay` and `lab
 * report` (one parser filling one lab_request), (the commands the lab prints for a user to type are lab_command's). */
#include "lab_cli.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* At most this many characters of a bad value are quoted back (a hostile argument can be huge). */
#define LAB_CLI_QUOTE 64

lab_status lab_cli_u64(const char *flag, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    if (!s) return lab_err_set(LAB_ERR_ARG, "%s needs a value (an integer %llu..%llu)", flag, (unsigned long long)lo,
                               (unsigned long long)hi);
    uint64_t v = 0;
    int ok = *s != 0, big = 0;
    for (const char *p = s; *p && ok; ++p) {
        if (*p < '0' || *p > '9') {
            ok = 0;
            break;
        }
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) big = 1;
        else v = v * 10 + d;
    }
    if (!ok)
        return lab_err_set(LAB_ERR_ARG, "%s needs an integer %llu..%llu, got '%.*s'", flag, (unsigned long long)lo,
                           (unsigned long long)hi, LAB_CLI_QUOTE, s);
    if (big || v < lo || v > hi)
        return lab_err_set(LAB_ERR_ARG, "%s must be %llu..%llu, got %.*s", flag, (unsigned long long)lo,
                           (unsigned long long)hi, LAB_CLI_QUOTE, s);
    *out = v;
    return LAB_OK;
}

lab_status lab_cli_double_above(const char *flag, const char *s, double lo, double hi, double *out)
{
    if (!s) return lab_err_set(LAB_ERR_ARG, "%s needs a number above %g", flag, lo);
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !isfinite(v) || !(v > lo) || v > hi)
        return lab_err_set(LAB_ERR_ARG, "%s needs a number above %g, got '%.*s' (finite, at most %g)", flag, lo,
                           LAB_CLI_QUOTE, s, hi);
    *out = v;
    return LAB_OK;
}

lab_status lab_cli_mul_size(size_t a, size_t b, const char *what, size_t *out)
{
    if (b != 0 && a > SIZE_MAX / b)
        return lab_err_set(LAB_ERR_ARG, "%s: %zu x %zu does not fit in memory sizes", what, a, b);
    *out = a * b;
    return LAB_OK;
}

/* ------------------------------------------------------------------------------------------------ */
/* The option table */

/* What an option does with its value. */
typedef enum {
    LAB_CLI_SET,      /* no value: the int field gets `val` */
    LAB_CLI_NUMBER,   /* a range-checked integer into the uint64_t field; `have` (if >= 0) gets 1 */
    LAB_CLI_TEXT,     /* a non-empty string into the const char * field; `need` names what it needs */
    LAB_CLI_INCIDENT, /* appended to req.ids */
    LAB_CLI_BACKEND,  /* cpu, cuda or auto into req.backend */
} lab_cli_kind;

typedef struct {
    const char *name, *alias; /* "--seeds"; another spelling or NULL */
    lab_cli_kind kind;
    unsigned cmds;            /* the commands that take it: bits 1 << lab_cli_cmd */
    ptrdiff_t field;          /* offset in lab_cli_replay */
    ptrdiff_t have;           /* NUMBER: offset of its "given" flag, or -1 */
    uint64_t lo, hi;          /* NUMBER: the range; SET: the value (lo) */
    const char *need;         /* TEXT: what the message says it needs */
    const char *arg;          /* the value as the usage names it ("N", "DIR"), or NULL for none */
    const char *help;         /* what the usage says of it; "{range}" stands for a NUMBER's range, lo..hi */
    int defines;              /* 1: it says what the replay runs or writes, which --resume takes from the folder */
} lab_cli_option;

#define LAB_CLI_BOTH ((1u << LAB_CLI_REPLAY) | (1u << LAB_CLI_REPORT))
#define LAB_CLI_F(f) offsetof(lab_cli_replay, req.f)

static const lab_cli_option lab_cli_options[] = {
    {"--incident", NULL, LAB_CLI_INCIDENT, LAB_CLI_BOTH, 0, -1, 0, 0, "an incident id",
     "ID", "an incident to replay, its id or a unique prefix (0004); again for more; default: every incident", 1},
    {"--variant", NULL, LAB_CLI_TEXT, LAB_CLI_BOTH, LAB_CLI_F(variant), -1, 0, 0, "a variant name",
     "NAME", "only the variants of this name; default: all", 1},
    {"--seeds", NULL, LAB_CLI_NUMBER, LAB_CLI_BOTH, LAB_CLI_F(n_seeds), LAB_CLI_F(have_seeds), 1, LAB_CLI_SEEDS_MAX, NULL,
     "N", "{range}: the seeds of each variant (default 256, or an incident's own)", 1},
    {"--seed", NULL, LAB_CLI_NUMBER, LAB_CLI_BOTH, LAB_CLI_F(seed), LAB_CLI_F(have_seed), 1, LAB_CLI_SEED_MAX, NULL,
     "S", "{range} (2^53): one seed alone (not with --seeds or --first-seed)", 1},
    {"--first-seed", NULL, LAB_CLI_NUMBER, LAB_CLI_BOTH, LAB_CLI_F(first_seed), LAB_CLI_F(have_first), 1, LAB_CLI_SEED_MAX,
     NULL, "S0", "{range} (2^53): the first seed (default 1); the last seed, first + seeds - 1, at most 2^53", 1},
    {"--backend", NULL, LAB_CLI_BACKEND, LAB_CLI_BOTH, LAB_CLI_F(backend), -1, 0, 0, NULL,
     "cpu|cuda|auto", "where the cases run (default cpu); cuda without a usable device is exit 3, auto falls back "
     "to cpu", 1},
    {"--gpu-optional", NULL, LAB_CLI_SET, LAB_CLI_BOTH, LAB_CLI_F(gpu_optional), -1, 1, 0, NULL,
     NULL, "--backend cuda without a usable device: every case SKIP instead of exit 3"},
    {"--no-mps", NULL, LAB_CLI_SET, LAB_CLI_BOTH, LAB_CLI_F(no_mps), -1, 1, 0, NULL,
     NULL, "no private MPS daemon on cuda: the workers' contexts time-sliced (by default they share the GPU through "
     "one when nvidia-cuda-mps-control is on PATH)"},
    {"-j", "--jobs", LAB_CLI_NUMBER, LAB_CLI_BOTH, LAB_CLI_F(jobs), -1, 1, LAB_CLI_JOBS_MAX, NULL,
     "JOBS", "{range}: worker processes (default: all cores)"},
    {"--batch-seeds", NULL, LAB_CLI_NUMBER, LAB_CLI_BOTH, LAB_CLI_F(batch_seeds), -1, 1, LAB_CLI_BATCH_MAX, NULL,
     "N", "{range}: most seeds a CUDA launch batches (default: each incident's own; 1: one case per launch)"},
    {"--timeout", NULL, LAB_CLI_NUMBER, LAB_CLI_BOTH, LAB_CLI_F(timeout_s), -1, 1, LAB_CLI_TIMEOUT_MAX, NULL,
     "SEC", "{range} s: the watchdog's cap per case (default: the incidents' own)", 1},
    {"--out", NULL, LAB_CLI_TEXT, LAB_CLI_BOTH, LAB_CLI_F(out), -1, 0, 0, "a directory",
     "DIR", "the result set's folder (default build/replay; report: build/report): missing, empty or an earlier "
     "result set of the lab; a file or a folder of other things is refused, exit 2", 1},
    {"--tap", NULL, LAB_CLI_SET, LAB_CLI_BOTH, LAB_CLI_F(tap), -1, 1, 0, NULL,
     NULL, "also results.tap (TAP)", 1},
    {"--no-plots", NULL, LAB_CLI_SET, LAB_CLI_BOTH, LAB_CLI_F(plots), -1, 0, 0, NULL,
     NULL, "draw no plots", 1},
    {"--quiet", NULL, LAB_CLI_SET, LAB_CLI_BOTH, LAB_CLI_F(quiet), -1, 1, 0, NULL,
     NULL, "no progress (otherwise on stderr, a line at most every 10 s outside a terminal)"},
    {"--sanitize", NULL, LAB_CLI_TEXT, LAB_CLI_BOTH, LAB_CLI_F(sanitize), -1, 0, 0, "memcheck, initcheck or racecheck",
     "memcheck|initcheck|racecheck", "every CUDA case under compute-sanitizer, its findings joining the outcome "
     "(needs --backend cuda)", 1},
    {"--resume", NULL, LAB_CLI_TEXT, 1u << LAB_CLI_REPLAY, LAB_CLI_F(resume), -1, 0, 0, "a result folder",
     "DIR", "complete the replay DIR holds in place, as it was asked (its set, finished or interrupted, or the journal "
     "of one killed before its set was written, DIR.new-*/journal.jsonl); with none of the flags that say what to "
     "replay"},
    {"--mpi", NULL, LAB_CLI_SET, LAB_CLI_BOTH, LAB_CLI_F(mpi), -1, 1, 0, NULL,
     NULL, "under mpirun, one rank a host drives its GPUs, rank 0 deals seed groups on demand and writes the merged "
     "report (docs/scale-out.md)"},
    {"--bench", NULL, LAB_CLI_SET, 1u << LAB_CLI_REPORT, offsetof(lab_cli_replay, bench), -1, 1, 0, NULL,
     NULL, "the benchmarks go into the report (by default on --backend cuda)"},
    {"--no-bench", NULL, LAB_CLI_SET, 1u << LAB_CLI_REPORT, offsetof(lab_cli_replay, bench), -1, 0, 0, NULL,
     NULL, "no benchmarks, whatever the backend"},
    {"--help", "-h", LAB_CLI_SET, LAB_CLI_BOTH, offsetof(lab_cli_replay, help), -1, 1, 0, NULL,
     NULL, "this text"},
};

static const char *const lab_cli_names[] = {"replay", "report"};

/* Options as getopt users write them: "--name=value" is "--name" "value", "-jN" is "-j" "N", and "--" ends the
 * options. The split arguments live as long as the process (reachable from here: the parsed values point into
 * them). */
static void **lab_cli_kept;
static size_t lab_cli_nkept, lab_cli_capkept;

/* Keeps p reachable for the process's life (the parsed values point into it). 0 when out of memory. */
static int lab_cli_keep(void *p)
{
    if (lab_cli_nkept == lab_cli_capkept) {
        size_t cap = lab_cli_capkept ? 2 * lab_cli_capkept : 64;
        void **k = realloc(lab_cli_kept, cap * sizeof *k);
        if (!k) return 0;
        lab_cli_kept = k, lab_cli_capkept = cap;
    }
    lab_cli_kept[lab_cli_nkept++] = p;
    return 1;
}

static lab_status lab_cli_normalise(const char *cmd, int argc, char **argv, int *nargc, char ***nargv)
{
    char **v = malloc((size_t)(2 * argc + 1) * sizeof *v);
    if (!v) return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory for its arguments", cmd);
    int n = 0;
    for (int i = 0; i < argc; ++i) {
        const char *a = argv[i];
        if (!a) return free(v), lab_err_set(LAB_ERR_ARG, "%s: argument %d is missing", cmd, i);
        if (!strcmp(a, "--")) {
            if (i + 1 < argc)
                return free(v), lab_err_set(LAB_ERR_ARG, "%s: takes no operands, '%.*s' follows '--'", cmd,
                                            LAB_CLI_QUOTE, argv[i + 1]);
            break;
        }
        const char *eq = !strncmp(a, "--", 2) ? strchr(a, '=') : NULL;
        if (eq || (a[0] == '-' && a[1] == 'j' && a[2])) {
            size_t k = eq ? (size_t)(eq - a) : 2;
            char *name = strndup(a, k), *val = strdup(a + k + (eq != NULL));
            if (!name || !val || !lab_cli_keep(name) || !lab_cli_keep(val))
                return free(v), lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", cmd);
            v[n++] = name, v[n++] = val;
            continue;
        }
        v[n++] = (char *)a;
    }
    v[n] = NULL;
    if (!lab_cli_keep(v)) return free(v), lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", cmd);
    *nargc = n, *nargv = v;
    return LAB_OK;
}

/* The option of command cmd spelled a, or NULL. */
static const lab_cli_option *lab_cli_find(lab_cli_cmd cmd, const char *a)
{
    for (size_t k = 0; k < sizeof lab_cli_options / sizeof *lab_cli_options; ++k) {
        const lab_cli_option *op = &lab_cli_options[k];
        if ((op->cmds & (1u << cmd)) && (!strcmp(a, op->name) || (op->alias && !strcmp(a, op->alias)))) return op;
    }
    return NULL;
}

/* Applies option op (spelled a) to *o, taking its value from argv[*i + 1] (advancing *i) where it needs one. */
static lab_status lab_cli_apply(const lab_cli_option *op, const char *a, int argc, char **argv, int *i,
                                lab_cli_replay *o)
{
    char *base = (char *)o;
    const char *v = op->kind == LAB_CLI_SET || *i + 1 >= argc ? NULL : argv[++*i];
    switch (op->kind) {
    case LAB_CLI_SET:
        *(int *)(base + op->field) = (int)op->lo;
        return LAB_OK;
    case LAB_CLI_NUMBER:
        if (op->have >= 0) *(int *)(base + op->have) = 1;
        return lab_cli_u64(a, v, op->lo, op->hi, (uint64_t *)(base + op->field));
    case LAB_CLI_TEXT:
        if (!v || !*v) return lab_err_set(LAB_ERR_ARG, "%s needs %s", op->name, op->need);
        *(const char **)(base + op->field) = v;
        return LAB_OK;
    case LAB_CLI_INCIDENT:
        if (!v || !*v) return lab_err_set(LAB_ERR_ARG, "%s needs %s", op->name, op->need);
        if (o->req.n_ids == LAB_REQUEST_IDS_MAX)
            return lab_err_set(LAB_ERR_ARG, "--incident: at most %d of them", LAB_REQUEST_IDS_MAX);
        o->req.ids[o->req.n_ids++] = v;
        return LAB_OK;
    case LAB_CLI_BACKEND:
        if (!v || (strcmp(v, "cpu") && strcmp(v, "cuda") && strcmp(v, "auto")))
            return lab_err_set(LAB_ERR_ARG, "--backend needs cpu, cuda or auto, got '%.*s'", LAB_CLI_QUOTE, v ? v : "");
        o->req.backend = v;
        return LAB_OK;
    }
    return lab_err_set(LAB_ERR_ARG, "%s: not an option", a);
}

lab_status lab_cli_replay_parse(lab_cli_cmd cmd, int argc, char **argv, lab_cli_replay *o)
{
    memset(o, 0, sizeof *o);
    const char *name = lab_cli_names[cmd == LAB_CLI_REPORT];
    lab_status st = lab_cli_normalise(name, argc, argv, &argc, &argv);
    if (st != LAB_OK) return st;
    lab_request *r = &o->req;
    r->n_seeds = LAB_REQUEST_SEEDS_DEFAULT;
    r->first_seed = 1;
    r->backend = "cpu";
    r->out = cmd == LAB_CLI_REPORT ? "build/report" : "build/replay";
    r->plots = 1;
    o->bench = -1;
    const char *defining = NULL; /* the first option given that says what to replay */
    for (int i = 0; i < argc && st == LAB_OK && !o->help; ++i) {
        const lab_cli_option *op = lab_cli_find(cmd, argv[i]);
        if (!op) return lab_err_set(LAB_ERR_ARG, "%s: unknown flag '%.*s'", name, LAB_CLI_QUOTE, argv[i]);
        if (op->defines && !defining) defining = op->name;
        st = lab_cli_apply(op, argv[i], argc, argv, &i, o);
    }
    if (st != LAB_OK || o->help) return st;
    if (r->resume && defining)
        return lab_err_set(LAB_ERR_ARG, "--resume %.*s completes the replay that folder holds, as it was asked: %s "
                           "cannot change it (leave it out)", LAB_CLI_QUOTE, r->resume, defining);
    if (r->resume && r->mpi)
        return lab_err_set(LAB_ERR_ARG, "--resume with --mpi: a replay resumes in one process, on the host that holds "
                           "its folder (leave --mpi out)");
    if (r->have_seed && r->have_seeds) return lab_err_set(LAB_ERR_ARG, "--seed and --seeds exclude each other");
    if (r->have_seed && r->have_first) return lab_err_set(LAB_ERR_ARG, "--seed and --first-seed exclude each other");
    if (r->first_seed - 1 > LAB_CLI_SEED_MAX - r->n_seeds)
        return lab_err_set(LAB_ERR_ARG,
                           "--first-seed %llu with --seeds %llu passes the seed space: the last seed must be at most "
                           "%llu",
                           (unsigned long long)r->first_seed, (unsigned long long)r->n_seeds,
                           (unsigned long long)LAB_CLI_SEED_MAX);
    if (r->sanitize && strcmp(r->backend, "cuda")) return lab_err_set(LAB_ERR_ARG, "--sanitize needs --backend cuda");
    return LAB_OK;
}

/* ------------------------------------------------------------------------------------------------ */
/* The options' usage, from the table */

#define LAB_CLI_USAGE_COL 37   /* the column the help texts start at (lab_main's usage lines use it too) */
#define LAB_CLI_USAGE_WIDTH 100 /* LAB_TEXT_WIDTH: the width of the lab's output for people */

/* Writes the words of s to f from column *col on, a new line indented to LAB_CLI_USAGE_COL where the next word would
 * pass LAB_CLI_USAGE_WIDTH; *col is where it ends. */
static void lab_cli_wrap(FILE *f, const char *s, int *col)
{
    while (*s) {
        while (*s == ' ') ++s;
        int n = (int)strcspn(s, " ");
        if (!n) break;
        if (*col > LAB_CLI_USAGE_COL && *col + 1 + n > LAB_CLI_USAGE_WIDTH)
            *col = fprintf(f, "\n%*s", LAB_CLI_USAGE_COL, "") - 1;
        else if (*col > LAB_CLI_USAGE_COL) *col += fprintf(f, " ");
        *col += fprintf(f, "%.*s", n, s);
        s += n;
    }
}

void lab_cli_usage(FILE *f, lab_cli_cmd cmd, int only_own)
{
    lab_cli_cmd other = cmd == LAB_CLI_REPORT ? LAB_CLI_REPLAY : LAB_CLI_REPORT;
    for (size_t k = 0; k < sizeof lab_cli_options / sizeof *lab_cli_options; ++k) {
        const lab_cli_option *op = &lab_cli_options[k];
        if (!(op->cmds & (1u << cmd)) || (only_own && (op->cmds & (1u << other)))) continue;
        int col = fprintf(f, "    %s%s%s%s%s", op->name, op->alias ? ", " : "", op->alias ? op->alias : "",
                          op->arg ? " " : "", op->arg ? op->arg : "");
        if (col >= LAB_CLI_USAGE_COL) col = fprintf(f, "\n") - 1;
        col += fprintf(f, "%*s", LAB_CLI_USAGE_COL - col, "");
        /* "{range}" is the number's range: lo..hi from the table, as the parser checks it */
        const char *r = op->kind == LAB_CLI_NUMBER ? strstr(op->help, "{range}") : NULL;
        char text[512];
        if (r)
            snprintf(text, sizeof text, "%.*s%llu..%llu%s", (int)(r - op->help), op->help, (unsigned long long)op->lo,
                     (unsigned long long)op->hi, r + strlen("{range}"));
        else
            snprintf(text, sizeof text, "%s", op->help);
        lab_cli_wrap(f, text, &col);
        fprintf(f, "\n");
    }
}

size_t lab_cli_spellings(lab_cli_cmd cmd, const char **names, size_t max)
{
    size_t n = 0;
    for (size_t k = 0; k < sizeof lab_cli_options / sizeof *lab_cli_options; ++k) {
        const lab_cli_option *op = &lab_cli_options[k];
        if (!(op->cmds & (1u << cmd))) continue;
        if (n < max) names[n] = op->name;
        n++;
        if (!op->alias) continue;
        if (n < max) names[n] = op->alias;
        n++;
    }
    return n;
}
