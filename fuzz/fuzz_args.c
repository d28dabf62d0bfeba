/* fuzz_args: libFuzzer target for the command-line parser (lab_args): the input, split at NUL bytes, is
 * the argv of `lab replay`; whatever it holds, parsing must not crash, and a parse that succeeds must give
 * numbers within the ranges `lab help` states and a seed array size computed without overflow. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lab_args.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
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
    lab_args_replay o;
    if (lab_args_replay_parse(argc, argv, &o) == LAB_OK && !o.help) {
        size_t n, bytes;
        if (o.n_seeds < 1 || o.n_seeds > LAB_ARGS_SEEDS_MAX) abort();
        if (o.first_seed < 1 || o.first_seed - 1 > LAB_ARGS_SEED_MAX - o.n_seeds) abort();
        if (o.have_seed && (o.seed < 1 || o.seed > LAB_ARGS_SEED_MAX)) abort();
        if (o.jobs > LAB_ARGS_JOBS_MAX || o.timeout_s > LAB_ARGS_TIMEOUT_MAX || o.n_ids > LAB_ARGS_IDS_MAX) abort();
        if (lab_args_replay_seed_bytes(&o, &n, &bytes) != LAB_OK || bytes != n * sizeof(uint64_t)) abort();
    }
    /* The number parser alone, over the whole input as one string. */
    uint64_t v;
    if (lab_args_u64("--x", buf, 3, 1000000007, &v) == LAB_OK && (v < 3 || v > 1000000007)) abort();
    double d;
    if (lab_args_double_above("--f", buf, 1.0, 1e300, &d) == LAB_OK && !(d > 1.0 && d <= 1e300)) abort();
    free(buf);
    return 0;
}
