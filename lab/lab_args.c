/* lab_args: the one checked parser for the lab's command-line numbers and flags, and its exit codes. */
#include "lab_args.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* At most this many characters of a bad value are quoted back (a hostile argument can be huge). */
#define LAB_ARGS_QUOTE 64

lab_status lab_args_u64(const char *flag, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
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
                           (unsigned long long)hi, LAB_ARGS_QUOTE, s);
    if (big || v < lo || v > hi)
        return lab_err_set(LAB_ERR_ARG, "%s must be %llu..%llu, got %.*s", flag, (unsigned long long)lo,
                           (unsigned long long)hi, LAB_ARGS_QUOTE, s);
    *out = v;
    return LAB_OK;
}

lab_status lab_args_double_above(const char *flag, const char *s, double lo, double hi, double *out)
{
    if (!s) return lab_err_set(LAB_ERR_ARG, "%s needs a number above %g", flag, lo);
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !isfinite(v) || !(v > lo) || v > hi)
        return lab_err_set(LAB_ERR_ARG, "%s needs a number above %g, got '%.*s' (finite, at most %g)", flag, lo,
                           LAB_ARGS_QUOTE, s, hi);
    *out = v;
    return LAB_OK;
}

lab_status lab_args_mul_size(size_t a, size_t b, const char *what, size_t *out)
{
    if (b != 0 && a > SIZE_MAX / b)
        return lab_err_set(LAB_ERR_ARG, "%s: %zu x %zu does not fit in memory sizes", what, a, b);
    *out = a * b;
    return LAB_OK;
}

/* The value of a flag that takes one: argv[*i + 1], advancing *i; NULL when there is none. */
static const char *lab_args_value(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) return NULL;
    return argv[++*i];
}

/* Options as getopt users write them: "--name=value" is "--name" "value", "-jN" is "-j" "N", and "--" ends the
 * options (replay takes no operands, so anything after it is refused). The split arguments live as long as the
 * process (reachable from here: the parsed values point into them). */
static void **lab_args_kept;
static size_t lab_args_nkept, lab_args_capkept;

/* Keeps p reachable for the process's life (the parsed values point into it). 0 when out of memory. */
static int lab_args_keep(void *p)
{
    if (lab_args_nkept == lab_args_capkept) {
        size_t cap = lab_args_capkept ? 2 * lab_args_capkept : 64;
        void **k = realloc(lab_args_kept, cap * sizeof *k);
        if (!k) return 0;
        lab_args_kept = k, lab_args_capkept = cap;
    }
    lab_args_kept[lab_args_nkept++] = p;
    return 1;
}

static lab_status lab_args_normalise(int argc, char **argv, int *nargc, char ***nargv)
{
    char **v = malloc((size_t)(2 * argc + 1) * sizeof *v);
    if (!v) return lab_err_set(LAB_ERR_NOMEM, "replay: out of memory for its arguments");
    int n = 0;
    for (int i = 0; i < argc; ++i) {
        const char *a = argv[i];
        if (!a) return free(v), lab_err_set(LAB_ERR_ARG, "replay: argument %d is missing", i);
        if (!strcmp(a, "--")) {
            if (i + 1 < argc)
                return free(v), lab_err_set(LAB_ERR_ARG, "replay: takes no operands, '%.*s' follows '--'", LAB_ARGS_QUOTE, argv[i + 1]);
            break;
        }
        const char *eq = !strncmp(a, "--", 2) ? strchr(a, '=') : NULL;
        if (eq || (a[0] == '-' && a[1] == 'j' && a[2])) {
            size_t k = eq ? (size_t)(eq - a) : 2;
            char *name = strndup(a, k), *val = strdup(a + k + (eq != NULL));
            if (!name || !val || !lab_args_keep(name) || !lab_args_keep(val))
                return free(v), lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
            v[n++] = name, v[n++] = val;
            continue;
        }
        v[n++] = (char *)a;
    }
    v[n] = NULL;
    if (!lab_args_keep(v)) return free(v), lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
    *nargc = n, *nargv = v;
    return LAB_OK;
}

lab_status lab_args_replay_parse(int argc, char **argv, lab_args_replay *o)
{
    memset(o, 0, sizeof *o);
    lab_status nst = lab_args_normalise(argc, argv, &argc, &argv);
    if (nst != LAB_OK) return nst;
    o->n_seeds = LAB_ARGS_SEEDS_DEFAULT;
    o->first_seed = 1;
    o->backend = "cpu";
    o->out = "build/replay";
    o->plots = 1;
    lab_status st = LAB_OK;
    for (int i = 0; i < argc && st == LAB_OK; ++i) {
        const char *a = argv[i];
        if (!a) return lab_err_set(LAB_ERR_ARG, "replay: argument %d is missing", i);
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            o->help = 1;
            return LAB_OK;
        } else if (!strcmp(a, "--incident")) {
            const char *v = lab_args_value(argc, argv, &i);
            if (!v || !*v) return lab_err_set(LAB_ERR_ARG, "--incident needs an incident id");
            if (o->n_ids == LAB_ARGS_IDS_MAX)
                return lab_err_set(LAB_ERR_ARG, "--incident: at most %d of them", LAB_ARGS_IDS_MAX);
            o->ids[o->n_ids++] = v;
        } else if (!strcmp(a, "--variant")) {
            const char *v = lab_args_value(argc, argv, &i);
            if (!v || !*v) return lab_err_set(LAB_ERR_ARG, "--variant needs a variant name");
            o->variant = v;
        } else if (!strcmp(a, "--seeds")) {
            st = lab_args_u64(a, lab_args_value(argc, argv, &i), 1, LAB_ARGS_SEEDS_MAX, &o->n_seeds);
            o->have_seeds = 1;
        } else if (!strcmp(a, "--seed")) {
            st = lab_args_u64(a, lab_args_value(argc, argv, &i), 1, LAB_ARGS_SEED_MAX, &o->seed);
            o->have_seed = 1;
        } else if (!strcmp(a, "--first-seed")) {
            st = lab_args_u64(a, lab_args_value(argc, argv, &i), 1, LAB_ARGS_SEED_MAX, &o->first_seed);
            o->have_first = 1;
        } else if (!strcmp(a, "--backend")) {
            const char *v = lab_args_value(argc, argv, &i);
            if (!v || (strcmp(v, "cpu") && strcmp(v, "cuda") && strcmp(v, "auto")))
                return lab_err_set(LAB_ERR_ARG, "--backend needs cpu, cuda or auto, got '%.*s'", LAB_ARGS_QUOTE,
                                   v ? v : "");
            o->backend = v;
        } else if (!strcmp(a, "-j") || !strcmp(a, "--jobs")) {
            st = lab_args_u64(a, lab_args_value(argc, argv, &i), 1, LAB_ARGS_JOBS_MAX, &o->jobs);
        } else if (!strcmp(a, "--batch-seeds")) {
            st = lab_args_u64(a, lab_args_value(argc, argv, &i), 1, LAB_ARGS_BATCH_MAX, &o->batch_seeds);
        } else if (!strcmp(a, "--timeout")) {
            st = lab_args_u64(a, lab_args_value(argc, argv, &i), 1, LAB_ARGS_TIMEOUT_MAX, &o->timeout_s);
        } else if (!strcmp(a, "--out")) {
            const char *v = lab_args_value(argc, argv, &i);
            if (!v || !*v) return lab_err_set(LAB_ERR_ARG, "--out needs a directory");
            o->out = v;
        } else if (!strcmp(a, "--sanitize")) {
            const char *v = lab_args_value(argc, argv, &i);
            if (!v || !*v) return lab_err_set(LAB_ERR_ARG, "--sanitize needs memcheck, initcheck or racecheck");
            o->sanitize = v;
        } else if (!strcmp(a, "--tap")) {
            o->tap = 1;
        } else if (!strcmp(a, "--no-plots")) {
            o->plots = 0;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (!strcmp(a, "--mpi")) {
            o->mpi = 1;
        } else if (!strcmp(a, "--gpu-optional")) {
            o->gpu_optional = 1;
        } else if (!strcmp(a, "--no-mps")) {
            o->no_mps = 1;
        } else {
            return lab_err_set(LAB_ERR_ARG, "replay: unknown flag '%.*s'", LAB_ARGS_QUOTE, a);
        }
    }
    if (st != LAB_OK) return st;
    if (o->have_seed && o->have_seeds) return lab_err_set(LAB_ERR_ARG, "--seed and --seeds exclude each other");
    if (o->have_seed && o->have_first) return lab_err_set(LAB_ERR_ARG, "--seed and --first-seed exclude each other");
    if (o->first_seed - 1 > LAB_ARGS_SEED_MAX - o->n_seeds)
        return lab_err_set(LAB_ERR_ARG,
                           "--first-seed %llu with --seeds %llu passes the seed space: the last seed must be at most "
                           "%llu",
                           (unsigned long long)o->first_seed, (unsigned long long)o->n_seeds,
                           (unsigned long long)LAB_ARGS_SEED_MAX);
    if (o->sanitize && strcmp(o->backend, "cuda")) return lab_err_set(LAB_ERR_ARG, "--sanitize needs --backend cuda");
    return LAB_OK;
}

lab_status lab_args_replay_seed_bytes(const lab_args_replay *o, size_t *n, size_t *bytes)
{
    uint64_t ns = o->have_seed ? 1 : o->n_seeds;
    if (ns > SIZE_MAX) return lab_err_set(LAB_ERR_ARG, "--seeds %llu does not fit in memory sizes", (unsigned long long)ns);
    *n = (size_t)ns;
    return lab_args_mul_size(*n, sizeof(uint64_t), "--seeds", bytes);
}
