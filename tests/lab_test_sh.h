/* lab_test_sh: what tests that run the `lab` command share: the binary under test and a shell runner. */
#ifndef LAB_TEST_SH_H
#define LAB_TEST_SH_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

/* The lab binary under test: $LAB_BIN (set by `make test`), else build/lab. */
static inline const char *lab_test_bin(void)
{
    const char *b = getenv("LAB_BIN");
    return b && *b ? b : "build/lab";
}

/* Runs a shell command line with 2>&1; returns its exit status (128 + signal if killed) and its output
 * in *out (malloc'ed, NUL-terminated). */
static inline int lab_test_sh(const char *cmd, char **out)
{
    char full[8192];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    cr_assert_not_null(p);
    size_t cap = 1 << 16, n = 0, r;
    char *buf = malloc(cap);
    while ((r = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += r;
        if (n + 1 >= cap) buf = realloc(buf, cap *= 2);
    }
    buf[n] = 0;
    int st = pclose(p);
    *out = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif
