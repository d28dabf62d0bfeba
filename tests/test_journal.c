/* test_journal: every finished case of a replay is on disk the moment it finishes (lab_journal.h: journal.jsonl in the
 * set's staging folder), whatever then ends the replay, and `lab replay --resume DIR` completes the replay in place
 * from what DIR holds (lab_resume.h): after a kill -9 from outside, a kill in the middle of a case's line, an
 * interrupt, a kill of a resume itself, in memory and windowed, over several incidents and their default seeds; the set
 * it gives equals an uninterrupted replay's case by case, and the cases that had finished are kept as they were, not
 * run again. And what it refuses, naming why. A case record reads back from its line to the same line (lab_resread). */
#include <cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab_resread.h"
#include "lab_results.h"
#include "tests/lab_test_sh.h"

static char dir[64];
static void mk(void)
{
    lab_test_tmpdir(dir, sizeof dir, "journal");
}
static void rm(void)
{
    lab_test_rmtree(dir);
}

/* Starts `lab replay ARGS` in DIR after the variable assignments env (shell words; "": none), log in DIR/LOG. */
static pid_t start(const char *env, const char *args, const char *log)
{
    char *abs = realpath(lab_test_bin(), NULL);
    cr_assert_not_null(abs, "%s not built", lab_test_bin());
    char cmd[8192], path[160], root[4096];
    cr_assert_not_null(getcwd(root, sizeof root));
    snprintf(cmd, sizeof cmd, "cd '%s' && unset LAB_REPLAY_WINDOW LAB_JOURNAL_TEST_KILL; export LAB_ROOT='%s'; %s exec "
             "'%s' replay %s", dir, root, env, abs, args);
    snprintf(path, sizeof path, "%s/%s", dir, log);
    free(abs);
    return lab_test_spawn_logged(cmd, path);
}

/* Waits for p: its exit status, or 128 + the signal that ended it. */
static int reap(pid_t p)
{
    int ws;
    cr_assert_eq(waitpid(p, &ws, 0), p);
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

/* Runs `lab replay ARGS` in DIR to its end: its exit status, its output in *log (NULL: not kept). */
static int run(const char *env, const char *args, char **log)
{
    int rc = reap(start(env, args, "run.log"));
    char *text = lab_test_slurp(dir, "run.log");
    if (log) *log = text;
    else free(text);
    return rc;
}

/* The staging folder of DIR/OUT (its name under DIR, malloc'ed; "" when there is none). */
static char *stage_of(const char *out)
{
    char cmd[512], *stage = NULL;
    snprintf(cmd, sizeof cmd, "cd '%s' && ls -d '%s'.new-* 2>/dev/null | head -n 1 | tr -d '\\n'", dir, out);
    lab_test_sh(cmd, &stage);
    return stage;
}

/* How many staging folders DIR/OUT has beside it. */
static int stages(const char *out)
{
    char cmd[512], *o = NULL;
    snprintf(cmd, sizeof cmd, "cd '%s' && ls -d '%s'.new-* 2>/dev/null | wc -l", dir, out);
    lab_test_sh(cmd, &o);
    int n = atoi(o);
    free(o);
    return n;
}

/* Whole lines of the staging folder's journal (its header included), once the journal holds at least `want` or
 * after 60 s. */
static int journal_lines(const char *out, int want)
{
    int n = 0;
    for (int t = 0; t < 1200 && n < want; ++t) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
        char *stage = stage_of(out), name[256];
        snprintf(name, sizeof name, "%s/journal.jsonl", stage);
        char *text = stage[0] ? lab_test_slurp(dir, name) : strdup("");
        n = lab_test_lines(text);
        free(text), free(stage);
    }
    return n;
}

/* A result file's case lines without what a run measures (wall_s, cpu_s, done_s, worker), one a line, in file order;
 * the journal's header left out. */
static char *canon(const char *name)
{
    char *text = lab_test_slurp(dir, name), *save = NULL, *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        cJSON *o = cJSON_Parse(line);
        if (!o || cJSON_GetObjectItem(o, "journal")) {
            cJSON_Delete(o);
            continue;
        }
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

/* Every whole case line of `kept` (a journal, or an interrupted set's results.jsonl) appears as it is, byte for byte,
 * in DIR/OUT/results.jsonl: the case was kept, not run again. Returns how many were checked. */
static int expect_kept_verbatim(const char *kept, const char *out)
{
    char name[256];
    snprintf(name, sizeof name, "%s/results.jsonl", out);
    char *set = lab_test_slurp(dir, name), *copy = strdup(kept), *save = NULL;
    int n = 0;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strstr(line, "\"journal\"") == line + 1) continue; /* the journal's header */
        if (line[strlen(line) - 1] != '}') continue;              /* a line a kill cut short */
        char *whole = malloc(strlen(line) + 3);
        sprintf(whole, "%s\n", line);
        cr_expect(strstr(set, whole) != NULL, "a case that had finished was not kept as it was:\n%s", line);
        free(whole);
        n++;
    }
    free(copy), free(set);
    return n;
}

/* DIR/OUT after `--resume` equals DIR/FULL, an uninterrupted replay of the same, case by case (what a run measures
 * aside), and neither a staging folder nor a journal is left. */
static void expect_whole(const char *out, const char *full, int cases)
{
    char a_name[256], b_name[256];
    snprintf(a_name, sizeof a_name, "%s/results.jsonl", out);
    snprintf(b_name, sizeof b_name, "%s/results.jsonl", full);
    char *a = canon(a_name), *b = canon(b_name);
    cr_expect_eq(lab_test_lines(b), cases, "the uninterrupted replay has %d cases", lab_test_lines(b));
    cr_expect_eq(lab_test_lines(a), cases, "the resumed set has %d cases, not %d", lab_test_lines(a), cases);
    cr_expect_str_eq(a, b, "the resumed set differs from an uninterrupted replay");
    free(a), free(b);
    cr_expect_eq(stages(out), 0, "a staging folder is left beside %s", out);
    snprintf(a_name, sizeof a_name, "%s/%s/journal.jsonl", dir, out);
    cr_expect(access(a_name, F_OK) != 0, "%s is left", a_name);
    snprintf(a_name, sizeof a_name, "%s/summary.json", out);
    char *sum = lab_test_slurp(dir, a_name);
    cJSON *o = cJSON_Parse(sum);
    cr_expect(o && !cJSON_GetObjectItem(o, "interrupted") && cJSON_IsTrue(cJSON_GetObjectItem(o, "ok")), "%s", sum);
    cJSON_Delete(o);
    free(sum);
}

/* The journal of the staging folder of DIR/OUT (malloc'ed; "" when none). */
static char *journal_of(const char *out)
{
    char *stage = stage_of(out), name[256];
    snprintf(name, sizeof name, "%s/journal.jsonl", stage);
    char *text = stage[0] ? lab_test_slurp(dir, name) : strdup("");
    free(stage);
    return text;
}

/* kill -9 of a replay held in memory (600 cases) from outside once 40 cases finished: the set it was to replace stays
 * as it was; the staging folder keeps the journal, its header saying what the replay runs, every case line whole;
 * --resume keeps those cases as they were, runs the rest, and the set equals an uninterrupted replay's. */
Test(journal, a_killed_replay_keeps_its_finished_cases_and_resume_completes_it, .init = mk, .fini = rm, .timeout = 300)
{
    const char *args = "--incident 0004 --seeds 300 --backend cpu --no-plots --quiet";
    char a[256];
    cr_assert_eq(run("", "--incident 0004 --seeds 3 --backend cpu --no-plots --quiet --out out", NULL), 0);
    char *old = lab_test_slurp(dir, "out/results.jsonl");
    snprintf(a, sizeof a, "%s --out out", args);
    pid_t p = start("", a, "killed.log");
    int lines = journal_lines("out", 41);
    cr_assert_eq(kill(p, SIGKILL), 0);
    cr_assert_eq(reap(p), 128 + SIGKILL, "the replay ended before the kill");
    cr_assert_geq(lines, 41, "no 40 cases in the journal in 60 s");
    char *now = lab_test_slurp(dir, "out/results.jsonl");
    cr_expect_str_eq(now, old, "the set the replay was to replace changed");
    free(now), free(old);
    char *journal = journal_of("out");
    cr_expect(strncmp(journal, "{\"journal\":", 11) == 0 && strstr(journal, "\"incidents\":[\"0004-pow-grad-nan\"]") &&
                  strstr(journal, "\"first_seed\":1,\"seeds\":300,"), "the journal's header: %.300s", journal);
    cr_expect(strstr(journal, "interrupted") == NULL, "a case that did not finish is in the journal");

    char *log;
    cr_assert_eq(run("", "--resume out --quiet", &log), 0, "%s", log);
    int kept = lab_test_lines(journal) - 1;
    char said[128];
    snprintf(said, sizeof said, ": %d of 600 cases finished before and are kept", kept);
    cr_expect(strstr(log, said) != NULL, "%s\n(want %s)", log, said);
    cr_expect_eq(expect_kept_verbatim(journal, "out"), kept);
    snprintf(a, sizeof a, "%s --out full", args);
    cr_assert_eq(run("", a, NULL), 0);
    expect_whole("out", "full", 600);
    free(log), free(journal);
}

/* The same through windows (LAB_REPLAY_WINDOW=20) over two incidents, killed inside the second: the journal holds
 * cases of both, the resumed set (windowed too) equals the uninterrupted one. */
Test(journal, a_killed_windowed_replay_of_two_incidents_resumes, .init = mk, .fini = rm, .timeout = 300)
{
    const char *env = "LAB_REPLAY_WINDOW=20", *args = "--incident 0004 --incident 0001 --seeds 30 --backend cpu "
                                                      "--no-plots --quiet";
    char a[256], *log;
    snprintf(a, sizeof a, "%s --out out", args);
    pid_t p = start(env, a, "killed.log");
    journal_lines("out", 1 + 60 + 10); /* into 0001 (0004: 60 cases) */
    cr_assert_eq(kill(p, SIGKILL), 0);
    cr_assert_eq(reap(p), 128 + SIGKILL, "the replay ended before the kill");
    char *journal = journal_of("out");
    cr_expect(strstr(journal, "\"0001-crf-oob-atomics\"") && strstr(journal, "\"incident\":\"0004-pow-grad-nan\""),
              "the journal holds cases of both incidents");
    cr_assert_eq(run(env, "--resume out --quiet", &log), 0, "%s", log);
    cr_expect(strstr(log, " of 150 cases finished before and are kept") != NULL, "%s", log);
    expect_kept_verbatim(journal, "out");
    snprintf(a, sizeof a, "%s --out full", args);
    cr_assert_eq(run("", a, NULL), 0);
    expect_whole("out", "full", 150);
    free(log), free(journal);
}

/* A kill in the middle of a case's line (LAB_JOURNAL_TEST_KILL: half the 5th line written): the journal ends in part
 * of a line; --resume keeps the 4 whole cases before it and runs the rest, the 5th again. */
Test(journal, a_kill_in_the_middle_of_a_line_loses_only_that_case, .init = mk, .fini = rm, .timeout = 300)
{
    const char *args = "--incident 0004 --seeds 20 --backend cpu --no-plots --quiet";
    char a[256], *log;
    snprintf(a, sizeof a, "%s --out out", args);
    cr_assert_eq(run("LAB_JOURNAL_TEST_KILL=5", a, &log), 128 + SIGKILL, "%s", log);
    free(log);
    char *journal = journal_of("out");
    size_t len = strlen(journal);
    cr_expect_eq(lab_test_lines(journal), 5, "header and 4 cases whole");
    cr_expect(len && journal[len - 1] != '\n', "the journal ends in a whole line");
    cr_assert_eq(run("", "--resume out --quiet", &log), 0, "%s", log);
    cr_expect(strstr(log, ": 4 of 40 cases finished before and are kept") != NULL, "%s", log);
    snprintf(a, sizeof a, "%s --out full", args);
    cr_assert_eq(run("", a, NULL), 0);
    expect_whole("out", "full", 40);
    free(log), free(journal);
}

/* SIGINT: the set of the finished cases, marked interrupted, says one command that completes it (the console's
 * `resume:` line and summary.json's "resume"), and that command gives the whole replay, the interrupted set's cases
 * kept as they were. */
Test(journal, an_interrupted_set_resumes_in_place, .init = mk, .fini = rm, .timeout = 300)
{
    const char *args = "--incident 0004 --seeds 200 --backend cpu --no-plots";
    char a[256], *log;
    snprintf(a, sizeof a, "%s --out out", args);
    pid_t p = start("", a, "int.log");
    journal_lines("out", 21);
    cr_assert_eq(kill(p, SIGINT), 0);
    cr_assert_eq(reap(p), 130);
    log = lab_test_slurp(dir, "int.log");
    char *abs = realpath(lab_test_bin(), NULL), want[1024];
    snprintf(want, sizeof want, "\nresume: %s replay --resume out\n", abs);
    cr_expect(strstr(log, want) != NULL, "%s\n(want %s)", log, want);
    cr_expect(strstr(log, "merge:") == NULL, "a merge step is still said:\n%s", log);
    const char *first = strstr(log, "\nresume: ");
    cr_expect(first && !strstr(first + 1, "\nresume: "), "not one resume line:\n%s", log);
    char *sum = lab_test_slurp(dir, "out/summary.json"), *set = lab_test_slurp(dir, "out/results.jsonl");
    cJSON *o = cJSON_Parse(sum);
    cr_expect(o && cJSON_IsTrue(cJSON_GetObjectItem(o, "interrupted")), "%s", sum);
    const cJSON *r = cJSON_GetObjectItem(o, "resume");
    snprintf(want, sizeof want, "%s replay --resume out", abs);
    cr_expect(cJSON_IsString(r) && !strcmp(r->valuestring, want), "summary.json resume: %s", sum);
    cr_expect(cJSON_IsObject(cJSON_GetObjectItem(o, "replay")), "summary.json does not say what its replay ran");
    cJSON_Delete(o);
    free(log), free(sum), free(abs);
    cr_assert_eq(run("", "--resume out --quiet", &log), 0, "%s", log);
    cr_expect_eq(expect_kept_verbatim(set, "out"), lab_test_lines(set));
    snprintf(a, sizeof a, "%s --quiet --out full", args);
    cr_assert_eq(run("", a, NULL), 0);
    expect_whole("out", "full", 400);
    free(log), free(set);
}

/* A finished set: --resume runs nothing, says so, exits as its summary.json says and leaves the set as it was. */
Test(journal, a_finished_set_resumes_to_nothing, .init = mk, .fini = rm, .timeout = 120)
{
    char *log;
    cr_assert_eq(run("", "--incident 0004 --seeds 3 --backend cpu --no-plots --quiet --out out", NULL), 0);
    char *before = lab_test_slurp(dir, "out/results.jsonl"), *sum = lab_test_slurp(dir, "out/summary.json");
    cr_assert_eq(run("", "--resume out", &log), 0, "%s", log);
    cr_expect(strstr(log, "its replay finished: nothing to run") != NULL, "%s", log);
    char *after = lab_test_slurp(dir, "out/results.jsonl"), *sum2 = lab_test_slurp(dir, "out/summary.json");
    cr_expect_str_eq(after, before);
    cr_expect_str_eq(sum2, sum);
    free(log), free(before), free(after), free(sum), free(sum2);
}

/* A resume killed in turn: the second --resume gathers the first replay's journal and the first resume's, and gives
 * the whole replay; every staging folder read goes once the set is in. Seeds not given: each incident its own default
 * count (0004 256, 0001 24). */
Test(journal, a_killed_resume_resumes_again, .init = mk, .fini = rm, .timeout = 300)
{
    const char *args = "--incident 0004 --incident 0001 --backend cpu --no-plots --quiet";
    char a[256], *log;
    snprintf(a, sizeof a, "%s --out out", args);
    pid_t p = start("", a, "k1.log");
    journal_lines("out", 31);
    kill(p, SIGKILL);
    cr_assert_eq(reap(p), 128 + SIGKILL);
    char *first = journal_of("out");
    p = start("", "--resume out --quiet", "k2.log");
    for (int t = 0; t < 1200 && stages("out") < 2; ++t) usleep(50000);
    usleep(1500000);
    kill(p, SIGKILL);
    cr_assert_eq(reap(p), 128 + SIGKILL, "the first resume ended before the kill");
    cr_expect_eq(stages("out"), 2, "two journals beside out");
    cr_assert_eq(run("", "--resume out --quiet", &log), 0, "%s", log);
    cr_expect(strstr(log, " of 584 cases finished before and are kept") != NULL, "%s", log);
    expect_kept_verbatim(first, "out");
    snprintf(a, sizeof a, "%s --out full", args);
    cr_assert_eq(run("", a, NULL), 0);
    expect_whole("out", "full", 584);
    free(log), free(first);
}

/* A resume interrupted before any case starts (held in planning, LAB_STALL=planning, then SIGINT) writes a set that holds
 * every case it was given, in memory and through windows whose cases it did not reach: the journal it read can go, no
 * case is lost, and the next --resume completes the replay. */
Test(journal, an_interrupted_resume_keeps_every_case_it_was_given, .init = mk, .fini = rm, .timeout = 300)
{
    const char *windows[] = {"", "LAB_REPLAY_WINDOW=20"};
    const char *args = "--incident 0004 --seeds 100 --backend cpu --no-plots --quiet";
    char a[256], *log;
    snprintf(a, sizeof a, "%s --out full", args);
    cr_assert_eq(run("", a, NULL), 0);
    for (int k = 0; k < 2; ++k) {
        char out[16], env[64];
        snprintf(out, sizeof out, "out%d", k);
        snprintf(a, sizeof a, "%s --out %s", args, out);
        pid_t p = start(windows[k], a, "killed.log");
        journal_lines(out, 41);
        kill(p, SIGKILL);
        cr_assert_eq(reap(p), 128 + SIGKILL, "the replay ended before the kill");
        char *journal = journal_of(out);
        int kept = lab_test_lines(journal) - 1;
        snprintf(env, sizeof env, "%s LAB_STALL=planning", windows[k]);
        snprintf(a, sizeof a, "--resume %s", out);
        char stalled[32];
        snprintf(stalled, sizeof stalled, "stalled%d.log", k);
        p = start(env, a, stalled);
        for (int t = 0; t < 600; ++t) {
            char *l = lab_test_slurp(dir, stalled);
            int held = strstr(l, "stalled in planning") != NULL;
            free(l);
            if (held) break;
            usleep(50000);
        }
        cr_assert_eq(kill(p, SIGINT), 0);
        int rc = reap(p);
        log = lab_test_slurp(dir, stalled);
        cr_expect_eq(rc, 130, "%s", log);
        cr_expect(strstr(log, "INTERRUPTED by SIGINT: ") != NULL, "%s", log);
        free(log);
        char name[64];
        snprintf(name, sizeof name, "%s/results.jsonl", out);
        char *set = lab_test_slurp(dir, name);
        cr_expect_eq(lab_test_lines(set), kept, "%s: the interrupted resume's set holds %d cases, not the %d it was given",
                     windows[k], lab_test_lines(set), kept);
        cr_expect_eq(expect_kept_verbatim(journal, out), kept);
        cr_expect_eq(stages(out), 0, "the journal it read is left beside %s", out);
        snprintf(a, sizeof a, "--resume %s --quiet", out);
        cr_assert_eq(run("", a, &log), 0, "%s", log);
        expect_whole(out, "full", 200);
        free(log), free(set), free(journal);
    }
}

/* What --resume refuses, exit 2 with the reason named: a folder with nothing to resume, a flag that would change what
 * to replay, --mpi, a set whose summary does not say what its replay ran. A journal of another replay beside the folder
 * is left as it is and named. */
Test(journal, what_resume_refuses, .init = mk, .fini = rm, .timeout = 120)
{
    char *log;
    cr_expect_eq(run("", "--resume none", &log), 2, "%s", log);
    cr_expect(strstr(log, "--resume none: nothing to resume") != NULL, "%s", log);
    free(log);
    cr_expect_eq(run("", "--resume none --seeds 4", &log), 2, "%s", log);
    cr_expect(strstr(log, "--seeds cannot change it") != NULL, "%s", log);
    free(log);
    cr_expect_eq(run("", "--resume none --mpi", &log), 2, "%s", log);
    cr_expect(strstr(log, "--resume with --mpi") != NULL, "%s", log);
    free(log);
    cr_assert_eq(run("", "--incident 0004 --seeds 2 --backend cpu --no-plots --quiet --out old", NULL), 0);
    char cmd[512], *o;
    snprintf(cmd, sizeof cmd, "cd '%s' && python3 -c \"import json; p='old/summary.json'; s=json.load(open(p)); "
                              "del s['replay']; json.dump(s, open(p, 'w'))\"", dir);
    cr_assert_eq(lab_test_sh(cmd, &o), 0, "%s", o);
    free(o);
    cr_expect_eq(run("", "--resume old", &log), 2, "%s", log);
    cr_expect(strstr(log, "old/summary.json does not say what its replay ran") != NULL, "%s", log);
    free(log);

    /* a killed replay of 0004 beside a newer finished set of another replay: the set is the newest, the journal left */
    pid_t p = start("", "--incident 0004 --seeds 300 --backend cpu --no-plots --quiet --out two", "k.log");
    journal_lines("two", 6);
    kill(p, SIGKILL);
    reap(p);
    sleep(1);
    cr_assert_eq(run("", "--incident 0001 --seeds 2 --backend cpu --no-plots --quiet --out two", NULL), 0);
    cr_expect_eq(run("", "--resume two", &log), 0, "%s", log);
    cr_expect(strstr(log, "left as it is: it holds another replay than the newest one here") != NULL, "%s", log);
    cr_expect(strstr(log, "its replay finished: nothing to run") != NULL, "%s", log);
    cr_expect_eq(stages("two"), 1, "the other replay's journal was removed");
    free(log);
}

/* A case record written as a results.jsonl line and read back (lab_resread_line, lab_resread_to_record) writes the
 * same line again: what --resume keeps of a case is what the set would have held. */
Test(journal, a_case_record_reads_back_to_the_same_line)
{
    size_t n_all;
    const lab_incident *const *all = lab_incident_all(&n_all);
    cr_assert_gt(n_all, 0);
    lab_case_record recs[4];
    memset(recs, 0, sizeof recs);
    for (int k = 0; k < 4; ++k) {
        recs[k].incident = all[0];
        recs[k].variant = &all[0]->variants[0];
        recs[k].seed = 9007199254740992ull - (uint64_t)k;
        recs[k].backend = LAB_BACKEND_CPU;
        recs[k].o.wall_s = 0.1 + k / 3.0;
        recs[k].o.cpu_s = k ? 1.0 / 7.0 : NAN;
        recs[k].o.done_s = k * 1.2345678901234567;
        recs[k].o.worker = k;
    }
    recs[0].o.outcome = LAB_OUT_PASS;
    recs[0].o.r.verdict_set = recs[0].o.r.passed = 1;
    snprintf(recs[0].o.r.detail, sizeof recs[0].o.r.detail, "max_rel_err 1.2e-7 <= 1e-6 \"quoted\"\ttab");
    lab_result_metric(&recs[0].o.r, "max_rel_err", 1.2345678901234567e-7);
    lab_result_metric(&recs[0].o.r, "nan_count", NAN);
    lab_result_metric(&recs[0].o.r, "up", INFINITY);
    lab_result_metric(&recs[0].o.r, "down", -INFINITY);
    lab_result_metric(&recs[0].o.r, "third", 1.0 / 3.0);
    recs[1].o.outcome = LAB_OUT_CRASH;
    recs[1].o.signal = SIGSEGV;
    snprintf(recs[1].o.error, sizeof recs[1].o.error, "killed by SIGSEGV");
    snprintf(recs[1].first_run, sizeof recs[1].first_run, "ERROR: cuda device lost");
    recs[2].o.outcome = LAB_OUT_SKIP;
    lab_result_skip_as(&recs[2].o.r, LAB_SKIP_NEEDS_GPU, "no GPU here");
    recs[3].o.outcome = LAB_OUT_HANG;
    snprintf(recs[3].o.error, sizeof recs[3].o.error, "watchdog: 10 s");
    for (int k = 0; k < 4; ++k) {
        size_t len, len2;
        char *line = lab_results_case_line(&recs[k], NULL, &len);
        cr_assert(line && len > 1 && line[len - 1] == '\n');
        lab_resread_rec r;
        lab_case_record back;
        cr_assert_eq(lab_resread_line(line, len - 1, &r), LAB_OK, "%s: %s", line, lab_err_msg());
        cr_assert_eq(lab_resread_to_record(&r, &back), LAB_OK, "%s", lab_err_msg());
        char *again = lab_results_case_line(&back, NULL, &len2);
        cr_expect_str_eq(again, line, "case %d", k);
        cr_expect_eq(lab_verdict_case_ok(&back), lab_verdict_case_ok(&recs[k]), "case %d", k);
        free(line), free(again);
    }
}
