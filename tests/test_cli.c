/* test_cli: the `lab` command as a user meets it: listing, bad input with clear messages, one-case replay,
 * explain, and golden verification of a corrupted copy. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab_cli.h"
#include "lab_command.h"
#include "lab_fs.h"
#include "tests/lab_test_sh.h"

/* Runs `env LAB args 2>&1` (tests/lab_test_sh.h: own session, deadline), returns the exit status and the
 * output (malloc'ed). */
static int run(const char *env, const char *args, char **out) { return lab_test_lab(env, args, out); }

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
        {"replay --seeds x", "--seeds needs an integer 1..1048576, got 'x'"},
        {"replay --seeds 0", "--seeds must be 1..1048576, got 0"},
        {"replay --seed 1 --seeds 4", "--seed and --seeds exclude each other"},
        {"replay --backend tpu", "--backend needs cpu, cuda or auto, got 'tpu'"},
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

/* Every line of text fits `width` columns (UTF-8 code points); the first that does not is named. */
static void expect_width(const char *text, int width, const char *what)
{
    int line = 1;
    for (const char *p = text; *p; ++line) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p), cols = 0;
        for (size_t i = 0; i < n; ++i) cols += ((unsigned char)p[i] & 0xC0) != 0x80;
        cr_expect(cols <= (size_t)width, "%s: line %d has %zu columns: %.*s", what, line, cols, (int)n, p);
        if (!e) break;
        p = e + 1;
    }
}

/* explain: the card (its headings, the variant's class), then bug and fix live with the bound each case crossed, then
 * what to try next; every line within 100 columns. */
Test(cli, explain_runs_bug_and_fix_side_by_side, .timeout = 120)
{
    char *out;
    int st = run(NULL, "explain 0004-pow-grad-nan --seeds 2", &out);
    cr_expect_eq(st, 0, "%s", out);
    EXPECT_IN(out, "(the card at the top of incidents/0004-pow-grad-nan/README.md; the story goes on below it)");
    EXPECT_IN(out, "\nRoot cause\n  ");
    EXPECT_IN(out, "bug-exp-log  bug  history: ");
    EXPECT_IN(out, "bug-exp-log (bug, history): detected on 2 of 2 seeds, as a bug variant must be");
    EXPECT_IN(out, "  seed 1    FAIL nonfinite_frac = 0.");
    EXPECT_IN(out, "  seed 1    PASS nonfinite_frac = 0 (passes at <= 0)");
    EXPECT_IN(out, "The bug happens and the fix holds.");
    EXPECT_IN(out, "Try next:\n  ");
    EXPECT_IN(out, "lab case 0004 bug-exp-log 1\n");
    EXPECT_IN(out, "read incidents/0004-pow-grad-nan/README.md below the card");
    expect_width(out, 100, "lab explain 0004");
    free(out);
}

/* A story without a card: explain names the file and exits 3 (the lab could not do its job), running nothing. */
Test(cli, explain_without_a_card_names_the_file)
{
    char dir[] = "/tmp/lab-cli-XXXXXX", cmd[1024], *out;
    cr_assert(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, "mkdir -p %s/incidents/0004-pow-grad-nan && printf '# 0004\\n\\n## Symptom\\n' > "
             "%s/incidents/0004-pow-grad-nan/README.md", dir, dir);
    cr_assert_eq(system(cmd), 0);
    char env[256];
    snprintf(env, sizeof env, "LAB_ROOT=%s", dir);
    cr_expect_eq(run(env, "explain 0004", &out), 3, "%s", out);
    EXPECT_IN(out, "/incidents/0004-pow-grad-nan/README.md: no card");
    free(out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

/* case: a line for people first (the outcome and what it means for the variant's role), its detail, then the JSON;
 * exit 0 when the case met its role; the old spelling --sanitizer is still taken. */
Test(cli, case_says_what_its_outcome_means, .timeout = 120)
{
    char *out;
    cr_expect_eq(run(NULL, "case 0004 bug-exp-log 7", &out), 0, "%s", out);
    cr_expect(!strncmp(out, "bug-exp-log seed 7: FAIL, so the bug is detected, as a bug variant must be\n", 75),
              "%s", out);
    EXPECT_IN(out, "\n  ");
    EXPECT_IN(out, "gradients NaN");
    EXPECT_IN(out, "\nLAB-CASE {");
    free(out);
    cr_expect_eq(run(NULL, "case 0004 fix 7", &out), 0, "%s", out);
    cr_expect(!strncmp(out, "fix seed 7: PASS, so the fix holds, as a fix must\n", 50), "%s", out);
    free(out);
    cr_expect_eq(run(NULL, "case 0004 fix 7 --sanitize nope", &out), 2, "%s", out);
    EXPECT_IN(out, "unknown compute-sanitizer tool 'nope'");
    free(out);
    cr_expect_eq(run(NULL, "case 0004 fix 7 --sanitizer nope", &out), 2, "%s", out);
    EXPECT_IN(out, "unknown compute-sanitizer tool 'nope'");
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

/* Numbers that once crashed the lab, wrapped or were taken silently: each is a usage error naming the flag
 * and the range. */
Test(cli, huge_and_wrapping_numbers_are_usage_errors_naming_the_flag)
{
    struct { const char *args, *want; } cases[] = {
        {"replay --seeds 2305843009213693952", "--seeds must be 1..1048576, got 2305843009213693952"},
        {"replay --seeds 1099511627776", "--seeds must be 1..1048576, got 1099511627776"},
        {"replay --seeds 99999999999999999999999", "--seeds must be 1..1048576"},
        {"replay --seeds -1", "--seeds needs an integer 1..1048576, got '-1'"},
        {"replay --seeds ' 4'", "--seeds needs an integer"},
        {"replay --seeds 0x10", "--seeds needs an integer"},
        {"replay -j 4294967297", "-j must be 1..1024, got 4294967297"},
        {"replay --jobs 0", "--jobs must be 1..1024, got 0"},
        {"replay --timeout 18446744073709551616", "--timeout must be 1..86400"},
        {"replay --batch-seeds 0", "--batch-seeds must be 1..256, got 0"},
        {"replay --batch-seeds 257", "--batch-seeds must be 1..256, got 257"},
        {"replay --seed 9007199254740993", "--seed must be 1..9007199254740992"},
        {"replay --seed 0", "--seed must be 1..9007199254740992, got 0"},
        {"replay --first-seed 18446744073709551615 --seeds 2", "--first-seed must be 1..9007199254740992"},
        {"replay --first-seed 9007199254740990 --seeds 4", "--first-seed 9007199254740990 with --seeds 4 passes the seed space"},
        {"replay --seed 3 --first-seed 2", "--seed and --first-seed exclude each other"},
        {"replay --seeds", "--seeds needs a value"},
        {"explain 0004-pow-grad-nan --seeds 9223372036854775808", "--seeds must be 1..4096, got 9223372036854775808"},
        {"case 0004 fix 18446744073709551616", "SEED must be 1..9007199254740992"},
        {"compare a b --factor inf", "--factor needs a number above 1, got 'inf' (finite"},
        {"compare a b --factor 1", "--factor needs a number above 1, got '1'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
        char *out;
        int st = run(NULL, cases[i].args, &out);
        cr_expect_eq(st, 2, "lab %s exited %d:\n%s", cases[i].args, st, out);
        EXPECT_IN(out, cases[i].want);
        free(out);
    }
}

/* The last seed of the seed space runs and is written to JSON exactly (not as a rounded double). */
Test(cli, largest_seed_is_exact_in_json, .timeout = 60)
{
    char *out;
    int st = run(NULL, "replay --incident 0004-pow-grad-nan --variant fix --first-seed 9007199254740991 --seeds 2 "
                       "--no-plots --quiet --out build/test-cli-bigseed", &out);
    cr_expect_eq(st, 0, "%s", out);
    free(out);
    char *text;
    size_t len;
    cr_assert_eq(lab_fs_read_all("build/test-cli-bigseed/results.jsonl", &text, &len), LAB_OK);
    cr_expect(strstr(text, "\"seed\":9007199254740991,") != NULL, "%s", text);
    cr_expect(strstr(text, "\"seed\":9007199254740992,") != NULL, "%s", text);
    free(text);
}

/* `lab COMMAND --help` is usage, exit 0, for every command: it begins "usage: lab COMMAND" and states its own exit
 * status; `lab help` leads with the five everyday commands, an example each, and lists the others under "More". */
Test(cli, every_command_has_help_with_exit_0)
{
    const char *cmds[] = {"list", "replay", "explain", "golden", "plots", "case", "bench", "report", "compare",
                          "trend", "new", "help"};
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; ++i) {
        char args[64], *out, want[64];
        snprintf(args, sizeof args, "%s --help", cmds[i]);
        int st = run("LAB_ROOT=/nonexistent", args, &out);
        cr_expect_eq(st, 0, "lab %s exited %d:\n%s", args, st, out);
        snprintf(want, sizeof want, "usage: lab %s", cmds[i]);
        if (strcmp(cmds[i], "help")) {
            cr_expect(!strncmp(out, want, strlen(want)), "lab %s begins:\n%.80s", args, out);
            EXPECT_IN(out, "\nExit status: 0");
        }
        expect_width(out, 100, args);
        free(out);
    }
    char *out;
    cr_expect_eq(run(NULL, "replay -h", &out), 0);
    cr_expect(!strncmp(out, "usage: lab replay [OPTION]...\n", 30), "%s", out);
    free(out);
    cr_expect_eq(run(NULL, "help", &out), 0);
    cr_expect(!strncmp(out, "usage: lab COMMAND", 18), "%s", out);
    /* the five everyday commands first, each with an example, then the others under "More" */
    const char *every[] = {"replay", "explain", "case", "report", "compare"};
    const char *more = strstr(out, "\nMore:\n");
    cr_assert(more, "%s", out);
    for (size_t i = 0; i < 5; ++i) {
        char want[64];
        snprintf(want, sizeof want, "\n  %-9s ", every[i]);
        const char *at = strstr(out, want);
        cr_expect(at && at < more, "lab help: %s is not among the everyday commands:\n%s", every[i], out);
        snprintf(want, sizeof want, "            build/lab %s ", every[i]);
        cr_expect(strstr(out, want) && strstr(out, want) < more, "lab help: no example of %s", every[i]);
    }
    EXPECT_IN(more, "\n  bench     ");
    EXPECT_IN(more, "\n  list      ");
    EXPECT_IN(out, "Exit status: 0 ok");
    EXPECT_IN(out, "1 the verdict is NOT OK; 2 bad usage;");
    EXPECT_IN(out, "3 the lab could not do the job");
    expect_width(out, 100, "lab help");
    free(out);
    /* the ranges the parser checks, stated beside their options (from the option table: lab_cli_usage) */
    cr_expect_eq(run(NULL, "help replay", &out), 0);
    EXPECT_IN(out, "    --seeds N                        1..1048576:");
    EXPECT_IN(out, "    --seed S                         1..9007199254740992 (2^53):");
    EXPECT_IN(out, "    -j, --jobs JOBS                  1..1024:");
    EXPECT_IN(out, "    --timeout SEC                    1..86400 s:");
    EXPECT_IN(out, "Exit status: 0 every fix holds and every bug is detected; 1 the verdict is NOT OK");
    free(out);
    /* each command states its own exit status */
    cr_expect_eq(run("LAB_ROOT=/nonexistent", "case --help", &out), 0);
    EXPECT_IN(out, "Exit status: 0 the case met its role");
    EXPECT_IN(out, "--sanitize TOOL");
    EXPECT_IN(out, "--sanitizer, the old spelling");
    free(out);
    cr_expect_eq(run("LAB_ROOT=/nonexistent", "explain --help", &out), 0);
    EXPECT_IN(out, "Exit status: 0 every case met its role");
    free(out);
    cr_expect_eq(run(NULL, "help frob", &out), 2);
    EXPECT_IN(out, "help: unknown command 'frob'");
    free(out);
    /* compare says it flags a fix that got slower (its bench records), and bench names its --study */
    cr_expect_eq(run("LAB_ROOT=/nonexistent", "compare --help", &out), 0);
    EXPECT_IN(out, "a fix that got slower");
    EXPECT_IN(out, "PERF REGRESSION");
    free(out);
    cr_expect_eq(run("LAB_ROOT=/nonexistent", "bench --help", &out), 0);
    EXPECT_IN(out, "--study");
    free(out);
}

/* The flags a usage text names: each word that starts with '-' and a letter or a second '-', at the start of a line or
 * after a space, bracket, parenthesis, bar, comma or backquote, up to the first character that is not a letter, digit
 * or '-'. Into names[0..max) (pointers into text, which is cut at each flag's end); returns how many. */
static size_t usage_flags(char *text, char **names, size_t max)
{
    size_t n = 0;
    for (char *p = text; *p; ++p) {
        int starts = *p == '-' && (p == text || strchr(" \n[(|,`", p[-1])) && (p[1] == '-' || (p[1] >= 'a' && p[1] <= 'z'));
        if (!starts) continue;
        char *e = p + 1;
        while ((*e >= 'a' && *e <= 'z') || (*e >= '0' && *e <= '9') || *e == '-') ++e;
        char end = *e;
        *e = 0;
        if (n < max) names[n++] = p;
        if (!end) break;
        p = e;
    }
    return n;
}

/* Whether s is one of names[0..n). */
static int among(const char *s, const char *const *names, size_t n)
{
    for (size_t k = 0; k < n; ++k)
        if (!strcmp(s, names[k])) return 1;
    return 0;
}

/* `lab replay --help` and `lab report --help` name every spelling of every option of the table (lab_cli_spellings)
 * and no flag the table does not have: the option lines come from the table (lab_cli_usage), and the text around them
 * may name only flags that exist. report's other forms (--replot DIR, --from DIR: lab_cmd_report takes them before the
 * table) are the one exception. */
Test(cli, help_names_every_option_of_the_table_and_no_other)
{
    const struct {
        const char *name;
        lab_cli_cmd cmd;
        const char *forms[2];
    } cmds[] = {{"replay", LAB_CLI_REPLAY, {NULL, NULL}}, {"report", LAB_CLI_REPORT, {"--replot", "--from"}}};
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; ++i) {
        char args[64], *out, *flags[512];
        const char *spelled[64];
        snprintf(args, sizeof args, "%s --help", cmds[i].name);
        cr_assert_eq(run("LAB_ROOT=/nonexistent", args, &out), 0, "lab %s:\n%s", args, out);
        size_t ns = lab_cli_spellings(cmds[i].cmd, spelled, 64);
        cr_assert(ns > 0 && ns <= 64, "%zu spellings", ns);
        size_t nf = usage_flags(out, flags, 512);
        cr_assert(nf < 512, "lab %s names %zu flags", args, nf);
        for (size_t k = 0; k < ns; ++k)
            cr_expect(among(spelled[k], (const char *const *)flags, nf), "lab %s does not name %s, an option of the table",
                      args, spelled[k]);
        for (size_t k = 0; k < nf; ++k)
            cr_expect(among(flags[k], spelled, ns) || among(flags[k], cmds[i].forms, cmds[i].forms[0] ? 2 : 0),
                      "lab %s names %s, which is no option of the table", args, flags[k]);
        free(out);
    }
}

/* --backend cuda without a usable device: exit 3 with the probe's reason; auto falls back and says so;
 * --gpu-optional asks for the skip. */
Test(cli, cuda_backend_without_a_device_is_exit_3_with_the_reason, .timeout = 120)
{
    char *out;
    int st = run(NULL, "replay --incident 0004 --seeds 1 --backend cuda --no-plots --quiet --out build/test-cli-cuda", &out);
    if (st == 0 || st == 1) {
        free(out);
        cr_skip_test("a CUDA device is usable here: nothing to refuse");
    }
    cr_expect_eq(st, 3, "exit %d:\n%s", st, out);
    EXPECT_IN(out, "--backend cuda: no usable CUDA device: ");
    EXPECT_IN(out, "CUDA");
    free(out);
    st = run(NULL, "replay --incident 0004 --seeds 1 --backend auto --no-plots --quiet --out build/test-cli-cuda", &out);
    cr_expect_eq(st, 0, "exit %d:\n%s", st, out);
    EXPECT_IN(out, "backend auto: cpu (");
    free(out);
    st = run(NULL, "replay --incident 0004 --seeds 1 --backend cuda --gpu-optional --no-plots --quiet --out build/test-cli-cuda",
             &out);
    cr_expect_eq(st, 0, "exit %d:\n%s", st, out);
    EXPECT_IN(out, "cases SKIP (--gpu-optional)");
    free(out);
}

/* Exit 3: the lab could not do the job (here: no results to draw from). */
Test(cli, a_job_the_lab_cannot_do_is_exit_3)
{
    char *out;
    int st = run(NULL, "plots --out /nonexistent/replay", &out);
    cr_expect_eq(st, 3, "exit %d:\n%s", st, out);
    free(out);
}

/* Options as getopt users write them: -j2, --seeds=2, --backend=cpu and a closing "--" are what -j 2, --seeds 2 and
 * --backend cpu are; an operand after "--" is refused, exit 2. */
Test(cli, getopt_spellings_are_accepted, .timeout = 120)
{
    char *out;
    int rc = run("", "replay --incident 0004 -j2 --seeds=2 --backend=cpu --no-plots --out=build/test-getopt --", &out);
    cr_expect_eq(rc, 0, "%s", out);
    cr_expect(strstr(out, "2 workers") || strstr(out, "(-j"), "the -j2 was not taken as -j 2: %s", out);
    cr_expect(strstr(out, "8 cases") != NULL || strstr(out, "cases in") != NULL, "%s", out);
    free(out);
    rc = run("", "replay --incident 0004 --seeds 2 -- stray", &out);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "stray") != NULL, "%s", out);
    free(out);
}

/* --out naming a regular file, or a folder of other things, is refused (exit 2, named) and left as it was; an empty
 * folder is taken. */
Test(cli, out_never_costs_a_file, .timeout = 120)
{
    char *out;
    cr_assert_eq(system("rm -rf build/test-out && mkdir -p build/test-out/foreign && echo keep > build/test-out/file "
                        "&& echo mine > build/test-out/foreign/notes.txt && mkdir -p build/test-out/empty"), 0);
    int rc = run("", "replay --incident 0004 --seeds 1 --backend cpu --no-plots --out build/test-out/file", &out);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "build/test-out/file is not a folder") != NULL, "%s", out);
    free(out);
    rc = run("", "replay --incident 0004 --seeds 1 --backend cpu --no-plots --out build/test-out/foreign", &out);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "holds other things (notes.txt") != NULL, "%s", out);
    free(out);
    char *text;
    size_t len;
    cr_assert_eq(lab_fs_read_all("build/test-out/file", &text, &len), LAB_OK, "the file is gone");
    cr_expect_str_eq(text, "keep\n");
    free(text);
    cr_assert_eq(lab_fs_read_all("build/test-out/foreign/notes.txt", &text, &len), LAB_OK, "the foreign file is gone");
    free(text);
    rc = run("", "replay --incident 0004 --seeds 1 --backend cpu --no-plots --out build/test-out/empty", &out);
    cr_expect_eq(rc, 0, "an empty folder is taken: %s", out);
    free(out);
    rc = run("", "replay --incident 0004 --seeds 1 --backend cpu --no-plots --out build/test-out/empty", &out);
    cr_expect_eq(rc, 0, "a previous result set is replaced: %s", out);
    free(out);
    cr_expect_eq(system("rm -rf build/test-out build/test-getopt"), 0);
}

/* The same --out rule for `lab report`, `lab compare` and `lab trend`: a regular file or a folder of other things is
 * refused (exit 2, named) and left as it was; compare also refuses a report folder (its page would replace the
 * report's index.html); an empty folder is taken, and each command's own earlier folder is replaced. */
static void expect_file(const char *path, const char *want)
{
    char *text;
    size_t len;
    cr_assert_eq(lab_fs_read_all(path, &text, &len), LAB_OK, "%s is gone", path);
    cr_expect_str_eq(text, want, "%s changed", path);
    free(text);
}

Test(cli, report_compare_trend_out_never_cost_a_file, .timeout = 300)
{
    const char *d = "build/test-out2";
    char args[1024], *out, *page;
    size_t page_len;
    cr_assert_eq(system("rm -rf build/test-out2 && mkdir -p build/test-out2/foreign build/test-out2/empty "
                        "build/test-out2/empty2 && echo keep > build/test-out2/file && echo mine > build/test-out2/foreign/notes.txt"), 0);
    const char *rep = "report --incident 0004 --seeds 1 --backend cpu --no-plots --quiet --out";
    struct { const char *fmt, *target, *want; } refused[] = {
        {"%s %s/file", "file", "build/test-out2/file is not a folder"},
        {"%s %s/foreign", "foreign", "holds other things (notes.txt"},
    };
    for (size_t i = 0; i < 2; ++i) {
        snprintf(args, sizeof args, refused[i].fmt, rep, d);
        cr_expect_eq(run("", args, &out), 2, "report --out %s: %s", refused[i].target, out);
        EXPECT_IN(out, refused[i].want);
        free(out);
    }
    snprintf(args, sizeof args, "%s %s/rep", rep, d);
    cr_assert_eq(run("", args, &out), 0, "%s", out);
    free(out);
    cr_assert_eq(run("", args, &out), 0, "a previous report is replaced: %s", out);
    free(out);
    cr_assert_eq(lab_fs_read_all("build/test-out2/rep/index.html", &page, &page_len), LAB_OK);

    const char *targets[] = {"file", "foreign", "rep"};
    const char *want_compare[] = {"build/test-out2/file is not a folder", "holds other things (notes.txt",
                                  "build/test-out2/rep is a replay or report result set"};
    const char *want_trend[] = {"build/test-out2/file is not a folder", "holds other things (notes.txt",
                                "build/test-out2/rep holds other things"};
    for (size_t i = 0; i < 3; ++i) {
        snprintf(args, sizeof args, "compare %s/rep %s/rep --out %s/%s", d, d, d, targets[i]);
        cr_expect_eq(run("", args, &out), 2, "%s: %s", args, out);
        EXPECT_IN(out, want_compare[i]);
        free(out);
        snprintf(args, sizeof args, "trend --out %s/%s %s/rep", d, targets[i], d);
        cr_expect_eq(run("", args, &out), 2, "%s: %s", args, out);
        EXPECT_IN(out, want_trend[i]);
        free(out);
    }
    expect_file("build/test-out2/file", "keep\n");
    expect_file("build/test-out2/foreign/notes.txt", "mine\n");
    expect_file("build/test-out2/rep/index.html", page);
    free(page);
    /* empty folders are taken, and an earlier folder of the same command replaced; trend refuses compare's folder */
    for (int again = 0; again < 2; ++again) {
        snprintf(args, sizeof args, "compare %s/rep %s/rep --out %s/empty", d, d, d);
        cr_expect_eq(run("", args, &out), 0, "%s: %s", args, out);
        free(out);
        snprintf(args, sizeof args, "trend --out %s/empty2 %s/rep", d, d);
        cr_expect_eq(run("", args, &out), 0, "%s: %s", args, out);
        free(out);
    }
    cr_expect(lab_fs_exists("build/test-out2/empty/index.html"));
    cr_expect(lab_fs_exists("build/test-out2/empty2/trend.dat"));
    snprintf(args, sizeof args, "trend --out %s/empty %s/rep", d, d);
    cr_expect_eq(run("", args, &out), 2, "%s: %s", args, out);
    free(out);
    cr_expect_eq(system("rm -rf build/test-out2"), 0);
}

/* `lab report` parses its options through the same table as `lab replay` (lab_cli), so "--out=DIR" names the report
 * folder as "--out DIR" does. */
Test(cli, report_out_with_equals_is_the_report_folder, .timeout = 120)
{
    char dir[] = "/tmp/lab-cli-report-XXXXXX", args[256], path[300], *out;
    cr_assert(mkdtemp(dir));
    snprintf(args, sizeof args, "report --incident 0004 --seeds 1 --no-plots --quiet --out=%s/rep", dir);
    int st = run(NULL, args, &out);
    cr_expect_eq(st, 0, "lab %s exited %d:\n%s", args, st, out);
    free(out);
    snprintf(path, sizeof path, "%s/rep/report.json", dir);
    cr_expect(lab_fs_exists(path), "no %s", path);
    snprintf(path, sizeof path, "rm -rf '%s'", dir);
    cr_expect_eq(system(path), 0);
}

/* One option table for both commands: the replay's options in both, --bench and --no-bench in report's alone. */
Test(cli, one_option_table_for_replay_and_report)
{
    char *argv[] = {"--bench", "--out=x", "-j2", "--seeds=8", "--incident", "0004", "--"};
    lab_cli_replay o;
    cr_assert_eq(lab_cli_replay_parse(LAB_CLI_REPORT, 7, argv, &o), LAB_OK, "%s", lab_err_msg());
    cr_expect_eq(o.bench, 1);
    cr_expect_str_eq(o.req.out, "x");
    cr_expect_eq(o.req.jobs, 2);
    cr_expect_eq(o.req.n_seeds, 8);
    cr_expect(o.req.have_seeds);
    cr_expect_eq(o.req.n_ids, 1);
    cr_expect_eq(lab_cli_replay_parse(LAB_CLI_REPORT, 0, argv, &o), LAB_OK);
    cr_expect_str_eq(o.req.out, "build/report");
    cr_expect_eq(o.bench, -1);
    cr_expect_eq(lab_cli_replay_parse(LAB_CLI_REPLAY, 0, argv, &o), LAB_OK);
    cr_expect_str_eq(o.req.out, "build/replay");
    cr_expect_eq(lab_cli_replay_parse(LAB_CLI_REPLAY, 1, argv, &o), LAB_ERR_ARG);
    cr_expect(strstr(lab_err_msg(), "replay: unknown flag '--bench'") != NULL, "%s", lab_err_msg());
}

/* The resume commands are shell command lines (summary.json, the interrupt's message: the one that completes the set in
 * place, `lab replay --resume OUT`, and the seed ranges left underneath): a folder or variant the user named stays one
 * word whatever it holds, and plain words are written as they are. Run through sh with /bin/echo for the lab, the words
 * come back as given and the folder's `; touch` runs nothing. It says the length the whole command needs, so that a
 * caller can make room for it (cut at a short buffer). */
Test(cli, resume_command_keeps_every_user_word_one_shell_word)
{
    const char *ids[] = {"0004-pow-grad-nan"};
    char buf[1024], want[1024];
    lab_command_resume plain = {"build/lab", ids, 1, NULL, 0, 0, 5, 10, "cpu", "build/out"};
    size_t need = lab_command_resume_line(&plain, buf, sizeof buf);
    cr_expect_str_eq(buf, "build/lab replay --incident 0004-pow-grad-nan --first-seed 5 --seeds 10 --backend cpu "
                          "--out build/out-resumed");
    cr_expect_eq(need, strlen(buf), "the length it needs: %zu", need);
    cr_expect_eq(lab_command_resume_line(&plain, NULL, 0), need, "measured without a buffer");
    cr_expect_eq(lab_command_resume_line(&plain, buf, 20), need, "cut: the length the whole command needs");
    cr_expect_str_eq(buf, "build/lab replay --");
    char dir[256];
    lab_test_tmpdir(dir, sizeof dir, "resume");
    char out[512], marker[600];
    snprintf(out, sizeof out, "%s/a b'c; touch %s/ran #", dir, dir);
    snprintf(marker, sizeof marker, "%s/ran", dir);
    lab_command_resume odd = {"/bin/echo", ids, 1, "fix it", 0, 0, 5, 10, "cpu", out};
    lab_command_resume_line(&odd, buf, sizeof buf);
    char *got = NULL;
    cr_assert_eq(lab_test_sh(buf, &got), 0, "%s", buf);
    snprintf(want, sizeof want, "replay --incident 0004-pow-grad-nan --variant fix it --first-seed 5 --seeds 10 "
             "--backend cpu --out %s-resumed\n", out);
    cr_expect_str_eq(got, want, "the command: %s", buf);
    cr_expect_neq(access(marker, F_OK), 0, "the folder's name ran as a command: %s", buf);
    free(got);
    need = lab_command_resume_dir("/bin/echo", out, buf, sizeof buf);
    cr_expect_eq(need, strlen(buf));
    cr_assert_eq(lab_test_sh(buf, &got), 0, "%s", buf);
    snprintf(want, sizeof want, "replay --resume %s\n", out);
    cr_expect_str_eq(got, want, "the command: %s", buf);
    cr_expect_neq(access(marker, F_OK), 0, "the folder's name ran as a command: %s", buf);
    free(got);
    char q[16];
    cr_expect_eq(lab_command_sh_word("it's", q, sizeof q), 9);
    cr_expect_str_eq(q, "'it'\\''s'");
    cr_expect_eq(lab_command_sh_word("", q, sizeof q), 2, "an empty word is ''");
    cr_expect_str_eq(q, "''");
    cr_expect_eq(lab_command_sh_word("a b c d e f g h", q, 8), 17, "cut: the length the whole word needs");
    cr_expect_eq(strlen(q), 7);
    lab_test_rmtree(dir);
}

/* One of several resume commands writes its own folder, <out>-resumed-K; seeds not given, incidents that start again
 * keep their default counts (no --seeds) and the first seed asked for (--first-seed unless it is 1). */
Test(cli, resume_command_of_several_and_default_seeds)
{
    const char *ids[] = {"0004-pow-grad-nan", "0001-crf-oob-atomics"};
    char buf[1024];
    lab_command_resume part = {"build/lab", ids, 1, NULL, 0, 0, 5, 10, "cpu", "build/out", 2};
    lab_command_resume_line(&part, buf, sizeof buf);
    cr_expect_str_eq(buf, "build/lab replay --incident 0004-pow-grad-nan --first-seed 5 --seeds 10 --backend cpu "
                          "--out build/out-resumed-2");
    lab_command_resume dflt = {"build/lab", ids, 2, NULL, 0, 1, 1, 0, "cpu", "build/out", 0};
    lab_command_resume_line(&dflt, buf, sizeof buf);
    cr_expect_str_eq(buf, "build/lab replay --incident 0004-pow-grad-nan --incident 0001-crf-oob-atomics --backend cpu "
                          "--out build/out-resumed");
    dflt.first_seed = 100;
    lab_command_resume_line(&dflt, buf, sizeof buf);
    cr_expect_str_eq(buf, "build/lab replay --incident 0004-pow-grad-nan --incident 0001-crf-oob-atomics --first-seed "
                          "100 --backend cpu --out build/out-resumed");
}
