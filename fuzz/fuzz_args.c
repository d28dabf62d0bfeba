/* fuzz_args: libFuzzer target for the command-line parser (lab_cli): the input, split at NUL bytes, is
 * the argv of `lab replay` and of `lab report`; whatever it holds, parsing must not crash, and a parse that succeeds must give
 * numbers within the ranges `lab help` states and a seed array size computed without overflow. The legal
 * extremes (--seeds 1048576, -j1024, the last first seed, ...) must parse to exactly those values, and one
 * past each must be refused (fuzz_args_check_extremes); the corpus holds them too, for mutation around them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lab_cli.h"

/* The legal extremes, each spelling the parser takes: every limit `lab help` states parses to exactly that value, and
 * one past it is refused. Checked once per fuzzing process (an abort is a finding), before any fuzzed input. */
typedef struct {
    const char *argv[6];
    int ok;                    /* 1: must parse; 0: must be refused */
    uint64_t seeds, first, jobs, timeout, seed;
} fuzz_args_extreme;

static const fuzz_args_extreme fuzz_args_extremes[] = {
    {{"--seeds", "1048576"}, 1, LAB_CLI_SEEDS_MAX, 1, 0, 0, 0},
    {{"--seeds=1048576"}, 1, LAB_CLI_SEEDS_MAX, 1, 0, 0, 0},
    {{"--incident", "0004", "--seeds", "1048576", "-j2"}, 1, LAB_CLI_SEEDS_MAX, 1, 2, 0, 0},
    {{"--seeds", "1048576", "--first-seed", "9007199253692417"}, 1, LAB_CLI_SEEDS_MAX, LAB_CLI_SEED_MAX - LAB_CLI_SEEDS_MAX + 1, 0, 0, 0},
    {{"--seed", "9007199254740992"}, 1, LAB_REQUEST_SEEDS_DEFAULT, 1, 0, 0, LAB_CLI_SEED_MAX},
    {{"-j1024", "--timeout=86400"}, 1, LAB_REQUEST_SEEDS_DEFAULT, 1, LAB_CLI_JOBS_MAX, LAB_CLI_TIMEOUT_MAX, 0},
    {{"-j", "1", "--timeout", "1", "--"}, 1, LAB_REQUEST_SEEDS_DEFAULT, 1, 1, 1, 0},
    {{"--seeds", "1048577"}, 0},
    {{"--seeds", "1048576", "--first-seed", "9007199253692418"}, 0},
    {{"--seed", "9007199254740993"}, 0},
    {{"-j1025"}, 0},
    {{"-j0"}, 0},
    {{"--timeout", "86401"}, 0},
};

static void fuzz_args_check_extremes(void)
{
    for (size_t i = 0; i < sizeof fuzz_args_extremes / sizeof *fuzz_args_extremes; ++i) {
        const fuzz_args_extreme *e = &fuzz_args_extremes[i];
        char *argv[7];
        int argc = 0;
        while (argc < 6 && e->argv[argc]) argv[argc] = (char *)e->argv[argc], argc++;
        argv[argc] = NULL;
        lab_cli_replay c;
        const lab_request *o = &c.req;
        int ok = lab_cli_replay_parse(LAB_CLI_REPLAY, argc, argv, &c) == LAB_OK;
        if (ok != e->ok) abort();
        if (!ok) continue;
        if (o->n_seeds != e->seeds || o->first_seed != e->first || o->jobs != e->jobs || o->timeout_s != e->timeout) abort();
        if (e->seed && (!o->have_seed || o->seed != e->seed)) abort();
        size_t n, bytes;
        if (lab_request_seed_bytes(o, &n, &bytes) != LAB_OK || bytes != n * sizeof(uint64_t)) abort();
        if (n != (o->have_seed ? 1 : o->n_seeds)) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int extremes_checked;
    if (!extremes_checked) fuzz_args_check_extremes(), extremes_checked = 1;
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = 0;
    char *argv[256];
    int argc = 0;
    for (size_t i = 0, start = 0; i <= size && argc < 256; ++i)
        if (i == size || buf[i] == 0) {
            if (i > start || i < size) argv[argc++] = buf + start;
            start = i + 1;
        }
    /* both commands' option tables: the first byte picks which */
    lab_cli_replay c;
    const lab_request *o = &c.req;
    lab_cli_cmd cmd = size && (data[0] & 1) ? LAB_CLI_REPORT : LAB_CLI_REPLAY;
    if (lab_cli_replay_parse(cmd, argc, argv, &c) == LAB_OK && !c.help) {
        size_t n, bytes;
        if (o->n_seeds < 1 || o->n_seeds > LAB_CLI_SEEDS_MAX) abort();
        if (o->first_seed < 1 || o->first_seed - 1 > LAB_CLI_SEED_MAX - o->n_seeds) abort();
        if (o->have_seed && (o->seed < 1 || o->seed > LAB_CLI_SEED_MAX)) abort();
        if (o->jobs > LAB_CLI_JOBS_MAX || o->timeout_s > LAB_CLI_TIMEOUT_MAX || o->n_ids > LAB_REQUEST_IDS_MAX) abort();
        if (o->batch_seeds > LAB_CLI_BATCH_MAX || (cmd == LAB_CLI_REPLAY && c.bench != -1)) abort();
        if (!o->out || !*o->out || !o->backend) abort();
        if (lab_request_seed_bytes(o, &n, &bytes) != LAB_OK || bytes != n * sizeof(uint64_t)) abort();
    }
    /* The number parser alone, over the whole input as one string. */
    uint64_t v;
    if (lab_cli_u64("--x", buf, 3, 1000000007, &v) == LAB_OK && (v < 3 || v > 1000000007)) abort();
    double d;
    if (lab_cli_double_above("--f", buf, 1.0, 1e300, &d) == LAB_OK && !(d > 1.0 && d <= 1e300)) abort();
    free(buf);
    return 0;
}
