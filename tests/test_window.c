/* test_window: a windowed replay (lab_window.h: more cases than its window, here $LAB_REPLAY_WINDOW) holds a
 * window's records, not the run's: its peak RSS does not grow with the cases; it writes the same result set as an
 * unwindowed replay; SIGINT mid-run keeps every finished case, in canonical order, within 1 s; after a kill -9 at any
 * instant its journal and the command in journal.resume give back the whole replay, no case lost, none twice. The
 * million-seed measurement itself is in the README (it takes hours to finish; its targets are checked by stopping
 * it). */
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

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The lines of text sorted (a set of cases compared whatever order it was written in); text is consumed. */
static char *sorted_lines(char *text)
{
    size_t n = 0, cap = 16;
    char **v = malloc(cap * sizeof *v), *save = NULL, *out = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (n == cap) v = realloc(v, (cap *= 2) * sizeof *v);
        v[n++] = line;
    }
    qsort(v, n, sizeof *v, cmp_str);
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    for (size_t i = 0; i < n; ++i) fprintf(f, "%s\n", v[i]);
    fclose(f);
    free(v);
    return out;
}

/* The staging folder of --out DIR/OUT (its name under DIR, malloc'ed; "" when there is none). */
static char *stage_of(const char *out)
{
    char cmd[512], *stage = NULL;
    snprintf(cmd, sizeof cmd, "cd '%s' && ls -d '%s'.new-* 2>/dev/null | head -n 1 | tr -d '\\n'", dir, out);
    lab_test_sh(cmd, &stage);
    return stage;
}

/* The documented recovery after a kill -9 of `lab replay ARGS --out DIR/OUT`, whose staging folder is stage: the
 * command in its journal.resume as written (into OUT-resumed); then journal.jsonl and the resumed set together must be
 * the whole replay of ARGS (run here to its end), case by case, none missing and none twice. Returns journal.jsonl
 * after the recovery (canon) and journal.resume's text in *resume (both malloc'ed). */
static char *recover(const char *stage, const char *out, const char *args, char **resume)
{
    char name[256], cmd[4096], *o;
    snprintf(name, sizeof name, "%s/journal.resume", stage);
    *resume = lab_test_slurp(dir, name);
    size_t len = strlen(*resume);
    cr_assert(len > 1 && (*resume)[len - 1] == '\n', "no journal.resume in %s", stage);
    snprintf(cmd, sizeof cmd, "unset LAB_REPLAY_WINDOW; %.*s --no-plots --quiet", (int)len - 1, *resume);
    cr_expect_eq(lab_test_sh(cmd, &o), 0, "%s:\n%s", cmd, o);
    free(o);
    snprintf(name, sizeof name, "%s/journal.jsonl", stage);
    char *journal = canon(name);
    cr_assert_eq(run(args, "full", 0, NULL), 0);
    snprintf(name, sizeof name, "%s-resumed/results.jsonl", out);
    char *rest = canon(name), *full = canon("full/results.jsonl");
    size_t lj = strlen(journal), lr = strlen(rest);
    char *both = malloc(lj + lr + 1);
    memcpy(both, journal, lj);
    memcpy(both + lj, rest, lr + 1);
    int cases = lab_test_lines(full);
    char *a = sorted_lines(both), *b = sorted_lines(full);
    cr_expect_eq(lab_test_lines(a), cases, "journal %d + resumed %d cases, the whole replay %d",
                 lab_test_lines(journal), lab_test_lines(rest), cases);
    cr_expect_str_eq(a, b, "journal + resumed set differ from the whole replay");
    free(a), free(b), free(both), free(rest);
    snprintf(cmd, sizeof cmd, "rm -rf '%s/%s-resumed' '%s/full'", dir, out, dir);
    lab_test_sh(cmd, &o);
    free(o);
    return journal;
}

/* The seed journal.resume of the staging folder says the replay resumes from (its --first-seed; 0: none yet). */
static int resume_seed(const char *stage)
{
    char name[256];
    snprintf(name, sizeof name, "%s/journal.resume", stage);
    char *text = lab_test_slurp(dir, name);
    const char *m = strstr(text, " --first-seed ");
    int seed = m ? atoi(m + strlen(" --first-seed ")) : 0;
    free(text);
    return seed;
}

/* kill -9 of the runner in the middle of a windowed replay, from outside at whatever moment the test gets to it once
 * journal.resume counts two windows: the --out set it was to replace stays as it was; the staging folder beside it
 * keeps journal.jsonl, every case of every finished window (results.jsonl's lines, synced after each window), and
 * journal.resume, the command that replays the rest; after that command the journal holds whole windows and journal
 * and resumed set together are the whole uninterrupted replay, case by case. */
Test(window, kill_9_keeps_the_finished_windows_on_disk, .init = mk, .fini = rm, .timeout = 240)
{
    cr_assert_eq(run("--incident 0004 --seeds 3 --quiet", "out", 0, NULL), 0);
    char *old = lab_test_slurp(dir, "out/results.jsonl");
    pid_t p = start("--incident 0004 --seeds 200 --quiet", "out", 20);
    char *stage = NULL;
    int seed = 0;
    for (int t = 0; t < 600 && seed < 21; ++t) { /* two windows of seeds 1..10, 11..20 accounted for */
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
        free(stage);
        stage = stage_of("out");
        seed = stage[0] ? resume_seed(stage) : 0;
    }
    cr_assert_eq(kill(p, SIGKILL), 0);
    int ws;
    cr_assert_eq(waitpid(p, &ws, 0), p);
    cr_assert(stage && stage[0], "no staging folder beside out");
    cr_assert(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL, "the replay ended (status 0x%x) before the kill", ws);
    char *now = lab_test_slurp(dir, "out/results.jsonl");
    cr_expect_str_eq(now, old, "the old set changed");
    free(now), free(old);

    char *resume, *journal = recover(stage, "out", "--incident 0004 --seeds 200 --quiet", &resume);
    int kept = lab_test_lines(journal);
    cr_expect(kept >= 40 && kept % 20 == 0 && kept < 400, "%d cases journaled: not whole windows of 20", kept);
    char want[128];
    snprintf(want, sizeof want, " --first-seed %d --seeds %d --backend cpu --out %s/out-resumed\n", kept / 2 + 1,
             200 - kept / 2, dir);
    cr_expect(strstr(resume, want) != NULL, "journal.resume: %s (want ...%s)", resume, want);
    free(journal), free(resume), free(stage);
}

/* Runs `lab replay ARGS --out DIR/OUT` (windows of 20 cases) killing itself with SIGKILL at `point`
 * ($LAB_WINDOW_TEST_KILL, lab_window.c): returns its staging folder (malloc'ed) and journal.jsonl as the kill left
 * it. */
static char *killed_at(const char *point, const char *args, const char *out, char **journal)
{
    char env[64], name[256];
    snprintf(env, sizeof env, "LAB_WINDOW_TEST_KILL=%s", point);
    pid_t p = start_env(env, args, out, 20);
    int ws;
    cr_assert_eq(waitpid(p, &ws, 0), p);
    snprintf(name, sizeof name, "%s.log", out);
    char *log = lab_test_slurp(dir, name), *stage = stage_of(out);
    cr_assert(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL, "%s: status 0x%x, not killed:\n%s", point, ws, log);
    cr_assert(stage[0], "%s: no staging folder", point);
    free(log);
    snprintf(name, sizeof name, "%s/journal.jsonl", stage);
    *journal = lab_test_slurp(dir, name);
    return stage;
}

/* kill -9 at the two moments a window's journaling passes through, held there by the test hook: in the middle of the
 * window's lines (the file ends in part of a line: a kill can end even one write(2) part way) and after the lines are
 * synced but before journal.resume accounts for them. Either way the recovery (journal.resume's command) leaves the
 * journal with the two windows before (40 cases), and journal + resumed set are the whole replay, none lost, none
 * twice. */
Test(window, kill_9_in_a_windows_journaling_loses_and_repeats_nothing, .init = mk, .fini = rm, .timeout = 240)
{
    const char *points[] = {"lines:3", "synced:3"}, *args = "--incident 0004 --seeds 100 --quiet";
    for (size_t i = 0; i < 2; ++i) {
        char *before, *resume;
        char *stage = killed_at(points[i], args, "k", &before);
        size_t len = strlen(before);
        if (i == 0) cr_expect(len && before[len - 1] != '\n', "lines:3: the journal ends in a whole line");
        else cr_expect_eq(lab_test_lines(before), 60, "synced:3: %d lines journaled, not 3 windows",
                          lab_test_lines(before));
        char *journal = recover(stage, "k", args, &resume);
        cr_expect_eq(lab_test_lines(journal), 40, "%s: %d cases kept, not the 2 windows before", points[i],
                     lab_test_lines(journal));
        cr_expect(strstr(resume, " --first-seed 21 --seeds 80 ") != NULL, "%s: journal.resume: %s", points[i], resume);
        char cmd[512], *o;
        snprintf(cmd, sizeof cmd, "rm -rf '%s/%s'", dir, stage);
        lab_test_sh(cmd, &o);
        free(o), free(journal), free(resume), free(stage), free(before);
    }
}

/* A replay of two incidents, the journal's windows one incident after the other: killed in the first incident, the
 * recovery replays both from their first seed (the journal keeps nothing: a resume command names one seed range for
 * every incident it lists); killed in the second (its second window synced, not accounted for), it keeps the first
 * incident whole and the second's first window, and replays the second alone from there. Journal + resumed set are the
 * whole replay either way. */
Test(window, kill_9_of_a_replay_of_two_incidents, .init = mk, .fini = rm, .timeout = 240)
{
    /* 0004: 2 variants, windows of 10 seeds (20 cases), windows 1-3; 0001: 3 variants, 6 seeds (18 cases), 4-8 */
    const char *args = "--incident 0004 --incident 0001 --seeds 30 --quiet";
    char *before, *resume, cmd[512], *o;
    char *stage = killed_at("lines:2", args, "k", &before);
    char *journal = recover(stage, "k", args, &resume);
    cr_expect_eq(lab_test_lines(journal), 0, "killed in the first incident: %d cases kept", lab_test_lines(journal));
    const char *both = "--incident 0004-pow-grad-nan --incident 0001-crf-oob-atomics --first-seed 1 --seeds 30 ";
    cr_expect(strstr(resume, both) != NULL, "journal.resume: %s", resume);
    snprintf(cmd, sizeof cmd, "rm -rf '%s/%s'", dir, stage);
    lab_test_sh(cmd, &o);
    free(o), free(journal), free(resume), free(stage), free(before);

    stage = killed_at("synced:5", args, "k", &before);
    cr_expect_eq(lab_test_lines(before), 60 + 36, "synced:5: %d lines journaled", lab_test_lines(before));
    journal = recover(stage, "k", args, &resume);
    cr_expect_eq(lab_test_lines(journal), 60 + 18, "killed in the second incident: %d cases kept",
                 lab_test_lines(journal));
    cr_expect(strstr(resume, " replay --incident 0001-crf-oob-atomics --first-seed 7 --seeds 24 ") != NULL,
              "journal.resume: %s", resume);
    free(journal), free(resume), free(stage), free(before);
}

/* Seeds not given: each incident runs its own default count (0004 256, 0001 24). Killed in 0001's second window (synced,
 * not accounted for), the recovery replays 0001 from seed 7 over the 18 seeds left of its own 24, not over 256 less 6:
 * journal + resumed set are the whole default replay, no seed it never ran. */
Test(window, kill_9_in_a_default_seed_incident_resumes_its_own_seeds, .init = mk, .fini = rm, .timeout = 240)
{
    /* 0004: 2 variants, windows of 10 seeds, 26 windows; 0001: 3 variants, windows of 6 seeds, 27-30 */
    const char *args = "--incident 0004 --incident 0001 --quiet";
    char *before, *resume;
    char *stage = killed_at("synced:28", args, "k", &before);
    cr_expect_eq(lab_test_lines(before), 512 + 36, "synced:28: %d lines journaled", lab_test_lines(before));
    char *journal = recover(stage, "k", args, &resume);
    cr_expect_eq(lab_test_lines(journal), 512 + 18, "%d cases kept", lab_test_lines(journal));
    cr_expect(strstr(resume, " replay --incident 0001-crf-oob-atomics --first-seed 7 --seeds 18 ") != NULL,
              "journal.resume: %s", resume);
    free(journal), free(resume), free(stage), free(before);
}

/* Incidents that fit in a window whole share it (one pool: on CUDA its workers make their contexts once for all of
 * them, where a window an incident made them again for each): 0004 (8 cases) and 0001 (12) in one window of 20, 0005
 * (8) in a second, two windows where there were three; the set is the unwindowed one, case by case. Then kill -9
 * inside the shared window's journaling: after 0004's part was accounted for and 0001's synced, the recovery keeps 0004
 * whole and replays 0001 and 0005 from their first seed; in the middle of 0004's lines, it replays all three. Journal
 * and resumed set are the whole replay either way. */
Test(window, incidents_that_fit_together_share_a_window, .init = mk, .fini = rm, .timeout = 240)
{
    const char *args = "--incident 0004 --incident 0001 --incident 0005 --seeds 4 --quiet";
    cr_assert_eq(run(args, "whole", 0, NULL), 0);
    pid_t p = start_env("LAB_PHASES=1", args, "win", 20);
    int ws;
    cr_assert_eq(waitpid(p, &ws, 0), p);
    cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "status 0x%x", ws);
    char *log = lab_test_slurp(dir, "win.log"), *o;
    int windows = 0;
    for (const char *m = log; (m = strstr(m, "]: window starts")); ++m) ++windows;
    cr_expect_eq(windows, 2, "%d windows, not 2:\n%s", windows, log);
    free(log);
    char *a = canon("whole/results.jsonl"), *b = canon("win/results.jsonl");
    cr_expect_eq(lab_test_lines(a), 28);
    cr_expect_str_eq(a, b);
    free(a), free(b);

    char *before, *resume;
    char *stage = killed_at("synced:2", args, "k", &before);
    cr_expect_eq(lab_test_lines(before), 20, "synced:2: %d lines journaled", lab_test_lines(before));
    char *journal = recover(stage, "k", args, &resume);
    cr_expect_eq(lab_test_lines(journal), 8, "%d cases kept, not 0004's 8", lab_test_lines(journal));
    cr_expect(strstr(resume, " replay --incident 0001-crf-oob-atomics --incident 0005-bf16-crf-nan --first-seed 1 --seeds 4 ")
                  != NULL, "journal.resume: %s", resume);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/%s'", dir, stage);
    lab_test_sh(cmd, &o);
    free(o), free(journal), free(resume), free(stage), free(before);

    stage = killed_at("lines:1", args, "k", &before);
    journal = recover(stage, "k", args, &resume);
    cr_expect_eq(lab_test_lines(journal), 0, "lines:1: %d cases kept", lab_test_lines(journal));
    cr_expect(strstr(resume, " --incident 0004-pow-grad-nan --incident 0001-crf-oob-atomics --incident 0005-bf16-crf-nan "
                             "--first-seed 1 --seeds 4 ") != NULL, "journal.resume: %s", resume);
    free(journal), free(resume), free(stage), free(before);
}
