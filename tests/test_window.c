/* test_window: a windowed replay (lab_window.h: more cases than its window, here $LAB_REPLAY_WINDOW) holds a
 * window's records, not the run's: its peak RSS does not grow with the cases; it writes the same result set as an
 * unwindowed replay; SIGINT mid-run keeps every finished case, in canonical order, within 1 s; incidents that fit in a
 * window whole share it. What a kill -9 keeps, windowed or not, and --resume: test_journal.c. The million-seed
 * measurement itself is in docs/exit-codes.md (it takes hours to finish; its targets are checked by stopping it). */
#include <cJSON.h>
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/lab_test_sh.h"

static char dir[64];
static void mk(void)
{
    lab_test_tmpdir(dir, sizeof dir, "win");
}
static void rm(void)
{
    lab_test_rmtree(dir);
}

/* Starts `lab replay ARGS --out DIR/OUT` after the variable assignments env (shell words, "": none) with
 * $LAB_REPLAY_WINDOW = window (0: unset), log in DIR/OUT.log. */
static pid_t start_env(const char *env, const char *args, const char *out, unsigned window)
{
    char *abs = realpath(lab_test_bin(), NULL);
    cr_assert_not_null(abs, "%s not built", lab_test_bin());
    char cmd[4096], log[160], w[48] = "unset LAB_REPLAY_WINDOW;";
    if (window) snprintf(w, sizeof w, "export LAB_REPLAY_WINDOW=%u;", window);
    snprintf(cmd, sizeof cmd, "%s %s exec '%s' replay %s --backend cpu --no-plots --out '%s/%s'", w, env, abs, args,
             dir, out);
    snprintf(log, sizeof log, "%s/%s.log", dir, out);
    free(abs);
    return lab_test_spawn_logged(cmd, log);
}
static pid_t start(const char *args, const char *out, unsigned window)
{
    return start_env("", args, out, window);
}

/* Runs it to its end: exit status, peak RSS (KiB) of the lab process and its cases. */
static int run(const char *args, const char *out, unsigned window, long *maxrss_kb)
{
    pid_t p = start(args, out, window);
    int ws;
    struct rusage ru;
    cr_assert_eq(wait4(p, &ws, 0, &ru), p);
    if (maxrss_kb) *maxrss_kb = ru.ru_maxrss;
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

/* results.jsonl without its per-run fields (wall_s, cpu_s, done_s, worker), one line per case. */
static char *canon(const char *name)
{
    char *text = lab_test_slurp(dir, name), *save = NULL, *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        cJSON *o = cJSON_Parse(line);
        cr_assert_not_null(o, "%s: %s", name, line);
        const char *drop[] = {"wall_s", "cpu_s", "done_s", "worker"};
        for (size_t i = 0; i < 4; ++i) cJSON_DeleteItemFromObject(o, drop[i]);
        char *s = cJSON_PrintUnformatted(o);
        fprintf(f, "%s\n", s);
        cJSON_free(s);
        cJSON_Delete(o);
    }
    fclose(f);
    free(text);
    return out;
}

/* Eight times the cases through 16-case windows: the peak RSS grows by less than 0.8 KiB a case (an unwindowed
 * replay holds about 3 KiB a case: a record and an outcome, measured 1.8 KiB a case of peak RSS). */
Test(window, memory_does_not_grow_per_case, .init = mk, .fini = rm, .timeout = 240)
{
    long small = 0, large = 0;
    cr_assert_eq(run("--incident 0004 --variant fix --seeds 96 --quiet", "a", 16, &small), 0);
    cr_assert_eq(run("--incident 0004 --variant fix --seeds 768 --quiet", "b", 16, &large), 0);
    char *res = lab_test_slurp(dir, "b/results.jsonl");
    cr_expect_eq(lab_test_lines(res), 768);
    free(res);
    cr_expect_lt(large - small, (768 - 96) * 8 / 10, "peak RSS %ld KiB for 96 cases, %ld KiB for 768", small, large);
}

/* The same result set, case by case (apart from per-run fields), TAP and verdict, windowed or not. */
Test(window, windowed_set_is_the_unwindowed_one, .init = mk, .fini = rm, .timeout = 240)
{
    cr_assert_eq(run("--incident 0004 --seeds 24 --tap --quiet", "whole", 0, NULL), 0);
    cr_assert_eq(run("--incident 0004 --seeds 24 --tap --quiet", "win", 5, NULL), 0);
    char *wlog = lab_test_slurp(dir, "win.log");
    cr_expect(strstr(wlog, "48 cases in ") != NULL, "%s", wlog);
    free(wlog);
    char *a = canon("whole/results.jsonl"), *b = canon("win/results.jsonl");
    cr_expect_eq(lab_test_lines(a), 48);
    cr_expect_str_eq(a, b);
    free(a), free(b);
    a = lab_test_slurp(dir, "whole/results.tap"), b = lab_test_slurp(dir, "win/results.tap");
    cr_expect_str_eq(a, b);
    free(a), free(b);
    cJSON *x = cJSON_Parse(a = lab_test_slurp(dir, "whole/summary.json")), *y = cJSON_Parse(b = lab_test_slurp(dir, "win/summary.json"));
    cr_assert(x && y);
    const char *keys[] = {"ok", "verdict", "exit_status", "cases"};
    for (size_t i = 0; i < 4; ++i) {
        char *s = cJSON_PrintUnformatted(cJSON_GetObjectItem(x, keys[i])), *t = cJSON_PrintUnformatted(cJSON_GetObjectItem(y, keys[i]));
        cr_expect_str_eq(s, t, "summary.json %s", keys[i]);
        cJSON_free(s), cJSON_free(t);
    }
    cJSON_Delete(x), cJSON_Delete(y);
    free(a), free(b);
}

/* SIGINT in the middle of a windowed replay: exit 130 within 1 s, every finished case in results.jsonl (a real
 * outcome each, canonical order: variant by variant, seeds ascending), the TAP plan and points numbered for them,
 * summary.json marked interrupted with the cases planned. */
Test(window, sigint_keeps_every_finished_case, .init = mk, .fini = rm, .timeout = 120)
{
    pid_t p = start("--incident 0004 --seeds 3000 --tap", "out", 16);
    sleep(3);
    double t0 = lab_test_sh_now();
    cr_assert_eq(kill(p, SIGINT), 0);
    int ws;
    cr_assert_eq(waitpid(p, &ws, 0), p);
    double secs = lab_test_sh_now() - t0;
    char *log = lab_test_slurp(dir, "out.log");
    cr_expect(WIFEXITED(ws) && WEXITSTATUS(ws) == 130, "status 0x%x:\n%s", ws, log);
    cr_expect_lt(secs, 1.0, "SIGINT to exit took %.2f s", secs);
    size_t kept = 0, planned = 0;
    const char *m = strstr(log, "INTERRUPTED by SIGINT: ");
    cr_assert(m && sscanf(m, "INTERRUPTED by SIGINT: %zu of %zu", &kept, &planned) == 2, "%s", log);
    cr_expect_eq(planned, 6000);
    cr_expect_gt(kept, 0, "no case finished in 3 s?");
    cr_expect(strstr(log, "run 16 at a time") != NULL, "not windowed:\n%s", log);
    char *res = lab_test_slurp(dir, "out/results.jsonl"), *save = NULL;
    cr_expect_eq((size_t)lab_test_lines(res), kept, "the finished cases (%zu) must all be in results.jsonl (%d)", kept, lab_test_lines(res));
    cr_expect(strstr(res, "interrupted") == NULL, "an unfinished case was written as a result");
    cr_expect(strstr(res, "\"ERROR\"") == NULL, "an unfinished case was written as ERROR");
    char prev_var[64] = "";
    unsigned long long prev_seed = 0;
    for (char *line = strtok_r(res, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        cJSON *o = cJSON_Parse(line);
        cr_assert_not_null(o);
        const char *var = cJSON_GetObjectItem(o, "variant")->valuestring;
        unsigned long long seed = (unsigned long long)cJSON_GetObjectItem(o, "seed")->valuedouble;
        if (!strcmp(var, prev_var)) cr_expect_gt(seed, prev_seed, "%s seed %llu after %llu", var, seed, prev_seed);
        snprintf(prev_var, sizeof prev_var, "%s", var);
        prev_seed = seed;
        cJSON_Delete(o);
    }
    char *tap = lab_test_slurp(dir, "out/results.tap"), plan[64], last[64];
    snprintf(plan, sizeof plan, "\n1..%zu\n", kept + 3); /* 2 variants and the run */
    cr_expect(strstr(tap, plan) != NULL, "no plan %s", plan + 1);
    snprintf(last, sizeof last, "not ok %zu - replay verdict", kept + 3);
    cr_expect(strstr(tap, last) != NULL, "no %s", last);
    snprintf(last, sizeof last, "ok %zu - 0004", kept);
    cr_expect(strstr(tap, last) != NULL, "the last case point is not numbered %zu", kept);
    cr_expect(strchr(tap, '\001') == NULL, "a spool mark left in results.tap");
    char *sum = lab_test_slurp(dir, "out/summary.json");
    cJSON *o = cJSON_Parse(sum);
    cr_assert_not_null(o, "%s", sum);
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(o, "interrupted")));
    cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(o, "ok")));
    cr_expect_eq(cJSON_GetObjectItem(o, "cases")->valuedouble, (double)kept);
    cr_expect_eq(cJSON_GetObjectItem(o, "cases_planned")->valuedouble, (double)planned);
    cJSON_Delete(o);
    free(sum), free(tap), free(res), free(log);
}

/* Incidents that fit in a window whole share it (one pool: on CUDA its workers make their contexts once for all of
 * them, where a window an incident made them again for each): 0004 (8 cases) and 0001 (12) in one window of 20, 0005
 * (8) in a second, two windows where there were three; the set is the unwindowed one, case by case. */
Test(window, incidents_that_fit_together_share_a_window, .init = mk, .fini = rm, .timeout = 240)
{
    const char *args = "--incident 0004 --incident 0001 --incident 0005 --seeds 4 --quiet";
    cr_assert_eq(run(args, "whole", 0, NULL), 0);
    pid_t p = start_env("LAB_PHASES=1", args, "win", 20);
    int ws;
    cr_assert_eq(waitpid(p, &ws, 0), p);
    cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "status 0x%x", ws);
    char *log = lab_test_slurp(dir, "win.log");
    int windows = 0;
    for (const char *m = log; (m = strstr(m, "]: window starts")); ++m) ++windows;
    cr_expect_eq(windows, 2, "%d windows, not 2:\n%s", windows, log);
    free(log);
    char *a = canon("whole/results.jsonl"), *b = canon("win/results.jsonl");
    cr_expect_eq(lab_test_lines(a), 28);
    cr_expect_str_eq(a, b);
    free(a), free(b);
}
