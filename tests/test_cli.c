/* test_cli: the `lab` command as a user meets it: listing, bad input with clear messages, one-case replay,
 * explain, and golden verification of a corrupted copy. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static const char *lab_bin(void)
{
    const char *b = getenv("LAB_BIN");
    return b && *b ? b : "build/lab";
}

/* Runs `env LAB_BIN args 2>&1`, returns the exit status and the output (malloc'ed). */
static int run(const char *env, const char *args, char **out)
{
    char cmd[2048];
    char *abs = realpath(lab_bin(), NULL);
    cr_assert_not_null(abs, "%s not built (make builds it)", lab_bin());
    snprintf(cmd, sizeof cmd, "%s '%s' %s 2>&1", env ? env : "", abs, args);
    free(abs);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while ((r = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += r;
        if (n + 1 >= cap) buf = realloc(buf, cap *= 2);
    }
    buf[n] = 0;
    int st = pclose(p);
    *out = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#define EXPECT_IN(out, s) cr_expect(strstr(out, s) != NULL, "expected \"%s\" in:\n%s", s, out)

Test(cli, list_names_incidents_variants_and_roles)
{
    char *out;
    cr_expect_eq(run(NULL, "list", &out), 0);
    EXPECT_IN(out, "0004-pow-grad-nan");
    EXPECT_IN(out, "bug-exp-log");
    EXPECT_IN(out, "fix");
    free(out);
}

Test(cli, bad_input_is_named_with_usage_status)
{
    struct { const char *args, *want; } cases[] = {
        {"replay --incident nope", "unknown incident 'nope'"},
        {"replay --incident nope", "known incidents: "},
        {"replay --incident nope", " 0004-pow-grad-nan"},
        {"replay --variant nope", "unknown variant 'nope'; known: "},
        {"replay --variant nope", " 0004-pow-grad-nan/fix"},
        {"replay --bogus", "unknown flag '--bogus'"},
        {"replay --seeds x", "--seeds needs a non-negative integer, got 'x'"},
        {"replay --seeds 0", "--seeds must be at least 1"},
        {"replay --seed 1 --seeds 4", "--seed and --seeds exclude each other"},
        {"replay --backend tpu", "unknown backend 'tpu' (known: cpu, cuda)"},
        {"explain", "explain needs an incident id"},
        {"explain 9999", "unknown incident '9999'"},
        {"golden frob", "golden needs verify or bless, got 'frob'"},
        {"frob", "unknown command 'frob'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
        char *out;
        int st = run(NULL, cases[i].args, &out);
        cr_expect_eq(st, 2, "lab %s exited %d", cases[i].args, st);
        EXPECT_IN(out, cases[i].want);
        free(out);
    }
}

Test(cli, not_in_repo_root_says_so)
{
    char *out;
    cr_expect_eq(run("LAB_ROOT=/nonexistent", "list", &out), 2);
    EXPECT_IN(out, "/nonexistent/incidents not found");
    free(out);
}

Test(cli, one_case_replay_prints_outcome_and_metrics)
{
    char *out;
    int st = run(NULL, "replay --incident 0004-pow-grad-nan --variant bug-exp-log --seed 3 --out build/test-cli-one", &out);
    cr_expect_eq(st, 0, "a detected bug is a good outcome:\n%s", out);
    EXPECT_IN(out, "0004-pow-grad-nan bug-exp-log seed 3 cpu: FAIL");
    EXPECT_IN(out, "nonfinite_frac");
    free(out);
}

Test(cli, explain_runs_bug_and_fix_side_by_side, .timeout = 120)
{
    char *out;
    int st = run(NULL, "explain 0004-pow-grad-nan --seeds 2", &out);
    cr_expect_eq(st, 0, "%s", out);
    EXPECT_IN(out, "The bug happens and the fix holds.");
    EXPECT_IN(out, "README.md");
    free(out);
}

/* A copy of the golden directory with one flipped byte, another with a missing file. */
Test(cli, golden_verify_names_the_corrupt_file)
{
    char dir[] = "/tmp/lab-cli-XXXXXX", cmd[1024], *out;
    cr_assert(mkdtemp(dir));
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/incidents && cp -r incidents/0004-pow-grad-nan %s/incidents/ && "
             "f=$(ls %s/incidents/0004-pow-grad-nan/golden/*.npy | head -n1) && "
             "printf '\\x7f' | dd of=\"$f\" bs=1 seek=200 conv=notrunc status=none",
             dir, dir, dir);
    cr_assert_eq(system(cmd), 0);
    char env[256];
    snprintf(env, sizeof env, "LAB_ROOT=%s", dir);
    cr_expect_eq(run(env, "golden verify", &out), 1);
    EXPECT_IN(out, "0004-pow-grad-nan: FAIL");
    EXPECT_IN(out, ".npy");
    EXPECT_IN(out, "sha256 mismatch");
    free(out);

    snprintf(cmd, sizeof cmd, "rm -f %s/incidents/0004-pow-grad-nan/golden/*.npy", dir);
    cr_assert_eq(system(cmd), 0);
    cr_expect_eq(run(env, "golden verify 0004", &out), 1);
    EXPECT_IN(out, "missing");
    free(out);

    cr_expect_eq(run(NULL, "golden verify", &out), 0, "the repository's own goldens must verify");
    free(out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}
