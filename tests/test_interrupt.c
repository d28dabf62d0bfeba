/* test_interrupt: the lab under interrupts and bad output folders: SIGINT keeps the finished cases as a
 * complete set marked interrupted, kill -9 of the runner leaves no case process, a result set is replaced
 * as a whole, a read-only --out is exit 3 naming it, progress outside a terminal, ERROR never printed as
 * XPASS. */
#include <cJSON.h>
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab_fs.h"
#include "lab_incident.h"
#include "lab_replay.h"
#include "tests/lab_test_sh.h"

#define EXPECT_IN(out, s) cr_expect(strstr(out, s) != NULL, "expected \"%s\" in:\n%s", s, out)

static char dir[64];
static void mk(void)
{
    snprintf(dir, sizeof dir, "/tmp/lab-test-int-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}
static void rm(void)
{
    char cmd[128], *o;
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s' 2>/dev/null; rm -rf '%s' '%s'.new-*", dir, dir, dir);
    lab_test_sh(cmd, &o);
    free(o);
}

/* Starts `lab replay ARGS --out DIR/out` as a child (stdout+stderr to DIR/log); returns its pid. */
static pid_t start_lab(const char *args)
{
    char *abs = realpath(lab_test_bin(), NULL);
    cr_assert_not_null(abs, "%s not built", lab_test_bin());
    char cmd[4096], log[128];
    snprintf(cmd, sizeof cmd, "exec '%s' replay %s --out '%s/out'", abs, args, dir);
    snprintf(log, sizeof log, "%s/log", dir);
    free(abs);
    return lab_test_spawn_logged(cmd, log);
}

/* SIGINT in the middle: exit 130, every finished case written (a real outcome each), summary.json marked
 * interrupted and not ok, the resume command printed. */
Test(interrupt, sigint_keeps_the_finished_cases, .init = mk, .fini = rm, .timeout = 120)
{
    pid_t p = start_lab("--incident 0004 --seeds 3000 -j 2 --no-plots");
    sleep(4);
    cr_assert_eq(kill(p, SIGINT), 0);
    int ws;
    cr_assert_eq(waitpid(p, &ws, 0), p);
    char *log = lab_test_slurp(dir, "log");
    cr_expect(WIFEXITED(ws) && WEXITSTATUS(ws) == 130, "status 0x%x:\n%s", ws, log);
    EXPECT_IN(log, "INTERRUPTED by SIGINT: ");
    EXPECT_IN(log, "resume: ");
    EXPECT_IN(log, " replay --resume ");
    size_t kept = 0, planned = 0;
    const char *m = strstr(log, "INTERRUPTED by SIGINT: ");
    cr_assert(m && sscanf(m, "INTERRUPTED by SIGINT: %zu of %zu", &kept, &planned) == 2, "%s", log);
    cr_expect_gt(kept, 0, "no case finished in 4 s?");
    cr_expect_lt(kept, planned);
    char *res = lab_test_slurp(dir, "out/results.jsonl");
    cr_expect_eq((size_t)lab_test_lines(res), kept, "the finished cases (%zu) must all be in results.jsonl (%d)", kept, lab_test_lines(res));
    cr_expect(strstr(res, "interrupted") == NULL, "an unfinished case was written as a result");
    cr_expect(strstr(res, "\"ERROR\"") == NULL, "an unfinished case was written as ERROR");
    char *sum = lab_test_slurp(dir, "out/summary.json");
    cJSON *o = cJSON_Parse(sum);
    cr_assert_not_null(o, "%s", sum);
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(o, "interrupted")));
    cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(o, "ok")));
    cr_expect_eq(cJSON_GetObjectItem(o, "cases")->valuedouble, (double)kept);
    cr_expect_eq(cJSON_GetObjectItem(o, "cases_planned")->valuedouble, (double)planned);
    cJSON_Delete(o);
    free(sum);
    free(res);
    free(log);
}

/* kill -9 of the runner while cases run: 5 s later no process of the run is left (the cases are forks of
 * the runner: their command line holds the run's folder). */
Test(interrupt, kill_9_of_the_runner_leaves_no_case_process, .init = mk, .fini = rm, .timeout = 60)
{
    /* 0005's cases take seconds each: two are surely running after 2 s. */
    pid_t p = start_lab("--incident 0005 --seeds 8 -j 2 --no-plots");
    sleep(2);
    int before = lab_test_count_procs(dir);
    cr_expect_geq(before, 2, "runner and cases expected, found %d processes", before);
    cr_assert_eq(kill(p, SIGKILL), 0);
    waitpid(p, NULL, 0);
    sleep(5);
    int after = lab_test_count_procs(dir);
    cr_expect_eq(after, 0, "%d case processes outlived the runner by 5 s", after);
}

/* An --out that holds an older set: the new set replaces it whole (old report and plots gone), files that
 * are not part of a result set are kept, and no staging folder is left. */
Test(interrupt, result_set_is_replaced_as_a_whole, .init = mk, .fini = rm, .timeout = 60)
{
    char cmd[1024], *o;
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/out/plots && echo old > %s/out/report.json && echo old > %s/out/plots/9999-old.png && "
             "echo mine > %s/out/notes.txt && echo old > %s/out/summary.json",
             dir, dir, dir, dir, dir);
    cr_assert_eq(lab_test_sh(cmd, &o), 0, "%s", o);
    free(o);
    pid_t p = start_lab("--incident 0004 --seeds 2 --no-plots --quiet");
    int ws;
    waitpid(p, &ws, 0);
    char *log = lab_test_slurp(dir, "log");
    cr_expect(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "status 0x%x:\n%s", ws, log);
    free(log);
    char path[256];
    snprintf(path, sizeof path, "%s/out/report.json", dir);
    cr_expect(!lab_fs_exists(path), "the old report.json survived beside the new results");
    snprintf(path, sizeof path, "%s/out/plots/9999-old.png", dir);
    cr_expect(!lab_fs_exists(path), "an old plot survived beside the new results");
    char *notes = lab_test_slurp(dir, "out/notes.txt");
    cr_expect_str_eq(notes, "mine\n", "a file that is not part of a result set was lost");
    free(notes);
    char *sum = lab_test_slurp(dir, "out/summary.json");
    cr_expect(strstr(sum, "\"incidents\"") != NULL, "summary.json not replaced: %s", sum);
    free(sum);
    snprintf(cmd, sizeof cmd, "ls -d %s/out.new-* 2>/dev/null | wc -l", dir);
    cr_assert_eq(lab_test_sh(cmd, &o), 0);
    cr_expect_eq(atoi(o), 0, "a staging folder was left behind");
    free(o);
}

/* An --out that cannot be written: exit 3 (the lab could not do the job), the path named. As root
 * permissions do not stop writes, so a path under /proc stands in for a read-only folder there. */
Test(interrupt, read_only_out_is_exit_3_naming_the_path, .init = mk, .fini = rm, .timeout = 60)
{
    char out[128], cmd[512], *o;
    if (geteuid() == 0) {
        snprintf(out, sizeof out, "/proc/lab-test-readonly/out");
    } else {
        snprintf(out, sizeof out, "%s/ro/out", dir);
        snprintf(cmd, sizeof cmd, "mkdir -p %s/ro && chmod 555 %s/ro", dir, dir);
        cr_assert_eq(lab_test_sh(cmd, &o), 0);
        free(o);
    }
    snprintf(cmd, sizeof cmd, "'%s' replay --incident 0004 --seeds 1 --no-plots --quiet --out '%s'", lab_test_bin(), out);
    int st = lab_test_sh(cmd, &o);
    cr_expect_eq(st, 3, "exit %d:\n%s", st, o);
    *strrchr(out, '/') = 0; /* the folder that cannot be written: out's parent here */
    EXPECT_IN(o, out);
    free(o);
}

/* Outside a terminal a replay prints progress lines on stderr (done/total, rate, ETA, slowest running);
 * --quiet silences them. */
Test(interrupt, progress_lines_outside_a_terminal, .timeout = 60)
{
    char cmd[512], *o;
    snprintf(cmd, sizeof cmd, "'%s' replay --incident 0004 --seeds 2 --no-plots --out build/test-int-progress 2>&1 >/dev/null",
             lab_test_bin());
    cr_expect_eq(lab_test_sh(cmd, &o), 0, "%s", o);
    EXPECT_IN(o, "progress: 4/4 cases, ");
    EXPECT_IN(o, "cases/s, ETA ");
    EXPECT_IN(o, "slowest running: ");
    free(o);
    snprintf(cmd, sizeof cmd, "'%s' replay --incident 0004 --seeds 2 --no-plots --quiet --out build/test-int-progress 2>&1 >/dev/null",
             lab_test_bin());
    cr_expect_eq(lab_test_sh(cmd, &o), 0, "%s", o);
    cr_expect(strstr(o, "progress:") == NULL, "--quiet printed progress:\n%s", o);
    free(o);
}

/* A bug variant's case that ended in ERROR is printed as ERROR with its reason, never as XPASS. */
Test(interrupt, bug_error_is_printed_as_error_not_xpass)
{
    const lab_incident *inc = lab_incident_find("0004");
    cr_assert_not_null(inc);
    const lab_variant *bug = NULL;
    for (int v = 0; v < inc->n_variants; ++v)
        if (inc->variants[v].role == LAB_ROLE_BUG) bug = &inc->variants[v];
    cr_assert_not_null(bug);
    lab_case_record rec;
    memset(&rec, 0, sizeof rec);
    rec.incident = inc;
    rec.variant = bug;
    rec.seed = 5;
    rec.backend = LAB_BACKEND_CPU;
    rec.o.outcome = LAB_OUT_ERROR;
    snprintf(rec.o.error, sizeof rec.o.error, "golden missing");
    uint64_t seeds[1] = {5};
    lab_replay_opts o = {
        .what = {.incidents = &inc, .n_incidents = 1, .variant = bug->name, .seeds = seeds, .n_seeds = 1,
                 .backend = LAB_BACKEND_CPU, .timeout_s = 10},
        .how = {.jobs = 1, .lab_bin = "lab", .root = "."}};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    lab_verdict v;
    cr_assert_eq(lab_replay_report(&o, f, &rec, 1, 0.1, NULL, &v), LAB_OK);
    fclose(f);
    cr_expect_eq(v.ok, 0);
    cr_expect_eq(v.exit_status, 1);
    cr_expect(strstr(buf, "XPASS") == NULL, "ERROR printed as XPASS:\n%s", buf);
    EXPECT_IN(buf, "ERROR 0004-pow-grad-nan/");
    EXPECT_IN(buf, "golden missing");
    free(buf);
}

/* Starts `LAB_STALL=phase lab ARGS` as a child (stdout+stderr to DIR/log), waits until it says it is stalled in
 * that phase (lab_stall.h), sends SIGINT and returns the wait status and the seconds from the signal to the end. */
static int interrupt_in_phase(const char *phase, const char *args, double *secs)
{
    char *abs = realpath(lab_test_bin(), NULL);
    cr_assert_not_null(abs, "%s not built", lab_test_bin());
    char cmd[4096], log[128], want[64];
    snprintf(cmd, sizeof cmd, "LAB_STALL=%s exec '%s' %s", phase, abs, args);
    snprintf(log, sizeof log, "%s/log", dir);
    snprintf(want, sizeof want, "stalled in %s", phase);
    free(abs);
    unlink(log); /* never read the previous command's log as this one's */
    pid_t p = lab_test_spawn_logged(cmd, log);
    int stalled = 0;
    for (int i = 0; i < 3000 && !stalled; ++i) {
        char *text = lab_test_slurp(dir, "log");
        stalled = strstr(text, want) != NULL;
        free(text);
        if (!stalled) usleep(10000);
    }
    cr_assert(stalled, "never stalled in %s", phase);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(kill(p, SIGINT), 0);
    int ws;
    cr_assert_eq(waitpid(p, &ws, 0), p);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    return ws;
}

/* Runs `lab ARGS` held in PHASE, interrupts it, and expects exit 130 within 1 s (`what` names the command). */
static void expect_stopped_in(const char *phase, const char *args, const char *what)
{
    double secs;
    int ws = interrupt_in_phase(phase, args, &secs);
    char *log = lab_test_slurp(dir, "log");
    cr_expect(WIFEXITED(ws) && WEXITSTATUS(ws) == 130, "%s: status 0x%x:\n%s", what, ws, log);
    cr_expect_lt(secs, 1.0, "%s: %.2f s", what, secs);
    free(log);
}

/* A replay interrupted in each phase after it starts: exit 130 within 1 s, and the set holds every finished case
 * (none while planning; all 8 afterwards), summary.json marked interrupted and not ok. (The running phase:
 * sigint_keeps_the_finished_cases.) */
Test(interrupt, every_phase_of_a_replay_ends_within_1_s, .init = mk, .fini = rm, .timeout = 240)
{
    struct { const char *phase; int kept; } phases[] = {
        {"planning", 0}, {"collecting", 8}, {"writing", 8}, {"plotting", 8}};
    for (size_t i = 0; i < sizeof phases / sizeof *phases; ++i) {
        char args[512];
        snprintf(args, sizeof args, "replay --incident 0004 --seeds 4 -j 2 --backend cpu --out '%s/out'", dir);
        double secs;
        int ws = interrupt_in_phase(phases[i].phase, args, &secs);
        char *log = lab_test_slurp(dir, "log");
        cr_expect(WIFEXITED(ws) && WEXITSTATUS(ws) == 130, "%s: status 0x%x:\n%s", phases[i].phase, ws, log);
        cr_expect_lt(secs, 1.0, "%s: %.2f s from SIGINT to the end", phases[i].phase, secs);
        cr_log_info("replay interrupted while %s: ended in %.3f s", phases[i].phase, secs);
        char *res = lab_test_slurp(dir, "out/results.jsonl");
        cr_expect_eq(lab_test_lines(res), phases[i].kept, "%s: %d cases in results.jsonl", phases[i].phase, lab_test_lines(res));
        char *sum = lab_test_slurp(dir, "out/summary.json");
        cJSON *o = cJSON_Parse(sum);
        cr_expect_not_null(o, "%s: %s", phases[i].phase, sum);
        if (o) {
            cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(o, "interrupted")), "%s", phases[i].phase);
            cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(o, "ok")), "%s", phases[i].phase);
            cr_expect_eq(cJSON_GetObjectItem(o, "exit_status")->valuedouble, 130.0, "%s", phases[i].phase);
        }
        cJSON_Delete(o);
        free(sum);
        free(res);
        free(log);
    }
}

/* lab report interrupted before its page (the html phase): exit 130 within 1 s, the replay's set kept, no report.
 * lab plots and lab compare --out interrupted while drawing: exit 130 within 1 s (caught even where the shell that
 * started the suite left SIGINT ignored, as a background job's is). */
Test(interrupt, report_plots_and_compare_end_within_1_s, .init = mk, .fini = rm, .timeout = 240)
{
    char args[1024];
    double secs;
    snprintf(args, sizeof args, "report --incident 0004 --seeds 2 --backend cpu --no-plots --out '%s/rep'", dir);
    int ws = interrupt_in_phase("html", args, &secs);
    char *log = lab_test_slurp(dir, "log");
    cr_expect(WIFEXITED(ws) && WEXITSTATUS(ws) == 130, "report: status 0x%x:\n%s", ws, log);
    cr_expect_lt(secs, 1.0, "report: %.2f s", secs);
    EXPECT_IN(log, "before the report was written");
    free(log);
    char *res = lab_test_slurp(dir, "rep/results.jsonl");
    cr_expect_eq(lab_test_lines(res), 4, "the replay's 4 cases kept");
    free(res);
    char path[256];
    snprintf(path, sizeof path, "%s/rep/report.json", dir);
    cr_expect(!lab_fs_exists(path), "a report was written after the interrupt");

    snprintf(args, sizeof args, "plots --out '%s/rep'", dir);
    expect_stopped_in("plotting", args, "plots");

    /* two report folders for compare */
    snprintf(args, sizeof args, "report --incident 0004 --seeds 2 --backend cpu --no-plots --quiet --out '%s/rep'", dir);
    char *out;
    cr_assert_eq(lab_test_lab("", args, &out), 0, "%s", out);
    free(out);
    snprintf(args, sizeof args, "compare '%s/rep' '%s/rep' --out '%s/cmp'", dir, dir, dir);
    expect_stopped_in("plotting", args, "compare");
}

/* lab report --from, lab plots, lab compare (without --out) and lab trend interrupted while reading (the result set
 * streamed through lab_resread, the reports): exit 130 within 1 s; report --from writes no report. */
Test(interrupt, reading_a_set_or_reports_ends_within_1_s, .init = mk, .fini = rm, .timeout = 120)
{
    char args[1024], *out;
    double secs;
    snprintf(args, sizeof args, "mkdir -p '%s/rep' && cp tests/data/stream/results.jsonl tests/data/stream/summary.json '%s/rep/'",
             dir, dir);
    cr_assert_eq(lab_test_sh(args, &out), 0, "%s", out);
    free(out);
    snprintf(args, sizeof args, "report --from '%s/rep'", dir);
    int ws = interrupt_in_phase("reading", args, &secs);
    char *log = lab_test_slurp(dir, "log");
    cr_expect(WIFEXITED(ws) && WEXITSTATUS(ws) == 130, "report --from: status 0x%x:\n%s", ws, log);
    cr_expect_lt(secs, 1.0, "report --from: %.2f s", secs);
    EXPECT_IN(log, "INTERRUPTED by SIGINT");
    free(log);
    char path[256];
    snprintf(path, sizeof path, "%s/rep/report.json", dir);
    cr_expect(!lab_fs_exists(path), "a report was written after the interrupt");

    snprintf(args, sizeof args, "plots --out '%s/rep'", dir);
    expect_stopped_in("reading", args, "plots");

    snprintf(args, sizeof args, "report --from '%s/rep'", dir);
    cr_assert_eq(lab_test_lab("", args, &out), 0, "%s", out);
    free(out);
    snprintf(args, sizeof args, "compare '%s/rep' '%s/rep'", dir, dir);
    expect_stopped_in("reading", args, "compare");

    snprintf(args, sizeof args, "trend --out '%s/trend' '%s/rep'", dir, dir);
    expect_stopped_in("reading", args, "trend");
}
