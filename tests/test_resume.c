/* test_resume: what an interrupted replay says to resume it: the console's one `resume:` line and summary.json's
 * "resume", the command that completes its set in place (`lab replay --resume OUT`, test_journal.c runs it), and
 * underneath, summary.json's "resume_commands": exactly the seeds that have unfinished cases, incident by incident: an
 * incident that finished is not named, each incident resumes from its own lowest unfinished seed over its own seeds
 * (its default_seeds when the seeds were not given), incidents that differ go to commands of their own, each into a
 * folder of its own, and every command is written however long their text; the windowed replay too. */
#include <cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lab_fs.h"
#include "lab_isolate.h"
#include "lab_replay.h"
#include "tests/lab_test_sh.h"

static pid_t runner;              /* the replay's process: a case interrupts it (windowed test) */
static const char *stop_id;       /* ... when it is this incident's */
static uint64_t stop_seed;        /* ... at this seed */

static lab_status run_pass(const lab_case *c, lab_case_result *r)
{
    if (stop_id && !strcmp(c->incident->id, stop_id) && c->seed == stop_seed) kill(runner, SIGINT);
    lab_result_verdict(r, 1, "holds");
    return LAB_OK;
}

static const lab_variant fix_only[] = {{.name = "fix", .role = LAB_ROLE_FIX, .what = "holds"}};
static const lab_incident inc_a = {.id = "9101-a", .title = "a", .variants = fix_only,
                                   .n_variants = 1, .run_cpu = run_pass, .timeout_s = 5};
static const lab_incident inc_b = {.id = "9102-b", .title = "b", .variants = fix_only,
                                   .n_variants = 1, .run_cpu = run_pass, .timeout_s = 5, .default_seeds = 16};
static const lab_incident inc_c = {.id = "9103-c", .title = "c", .variants = fix_only,
                                   .n_variants = 1, .run_cpu = run_pass, .timeout_s = 5, .default_seeds = 16};

static char dir[64], out[1024];
static void mk(void)
{
    lab_test_tmpdir(dir, sizeof dir, "resume");
    snprintf(out, sizeof out, "%s/out", dir);
}
static void rm(void)
{
    lab_test_rmtree(dir);
}

static uint64_t seeds[512];

/* Options of a replay of incs over seeds first.. (n of them; seeds_default: not given, as `lab replay` without
 * --seeds, n then being its default 256), into --out DIR/out. */
static lab_replay_opts opts_of(const lab_incident *const *incs, size_t n_incs, uint64_t first, size_t n, int dflt)
{
    for (size_t s = 0; s < n; ++s) seeds[s] = first + s;
    return (lab_replay_opts){
        .what = {.incidents = incs, .n_incidents = n_incs, .seeds = seeds, .n_seeds = n, .seeds_default = dflt,
                 .backend = LAB_BACKEND_CPU},
        .how = {.jobs = 1, .out_dir = out, .lab_bin = "build/lab", .root = "."}};
}

/* What an interrupted replay wrote: its console text and summary.json. */
typedef struct {
    char *console;
    cJSON *summary;
} said;

/* The replay of o interrupted (SIGINT) with the cases of incident k at seed indexes [from[k], its seeds) unfinished,
 * but for the seed indexes listed in done_too (one incident's, k_done; -1 ends) that finished out of order, as the
 * pool's interleaving leaves them: reported through lab_replay_report, as a replay ends. */
static said interrupted(const lab_replay_opts *o, const size_t *from, size_t k_done, const int *done_too)
{
    lab_case_record *recs;
    size_t n;
    cr_assert_eq(lab_replay_cases(o, &recs, &n), LAB_OK);
    for (size_t j = 0; j < n; ++j) {
        size_t k = 0, s = (size_t)(recs[j].seed - o->what.seeds[0]);
        while (o->what.incidents[k] != recs[j].incident) ++k;
        int finished = s < from[k];
        for (const int *d = done_too; d && k == k_done && *d >= 0; ++d) finished |= (size_t)*d == s;
        recs[j].o.outcome = finished ? LAB_OUT_PASS : LAB_OUT_ERROR;
        recs[j].o.not_run = !finished;
        if (finished) lab_result_verdict(&recs[j].o.r, 1, "holds");
    }
    lab_isolate_interrupt(SIGINT);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    lab_verdict v;
    cr_assert_eq(lab_replay_report(o, f, recs, n, 1.0, NULL, &v), LAB_OK, "%s", lab_err_msg());
    fclose(f);
    free(recs);
    cr_expect_eq(v.exit_status, 130);
    char *sum = lab_test_slurp(out, "summary.json");
    said r = {text, cJSON_Parse(sum)};
    cr_assert_not_null(r.summary, "summary.json: %s", sum);
    free(sum);
    return r;
}

/* The k-th `resume: ` line of the console (from 0), malloc'ed; NULL when there are fewer. */
static char *resume_line(const char *console, int k)
{
    const char *p = console;
    for (int i = 0; (p = strstr(p, "\nresume: ")) != NULL; ++i, ++p)
        if (i == k) {
            p += strlen("\nresume: ");
            return strndup(p, strcspn(p, "\n"));
        }
    return NULL;
}

/* Expects summary.json's "resume_commands" to be want[0..n) (with OUT for the interrupted set's folder), and, when a
 * case is left (n > 0), the console's one `resume: ` line and summary.json's "resume" to be the command that completes
 * the set in place. */
static void expect_commands(const said *r, const char *const *want, size_t n)
{
    char *buf;
    for (size_t k = 0; k < n; ++k) {
        size_t need = (size_t)snprintf(NULL, 0, want[k], out) + 1;
        cr_assert_not_null(buf = malloc(need));
        snprintf(buf, need, want[k], out);
        const cJSON *a = cJSON_GetObjectItem(r->summary, "resume_commands");
        const cJSON *c = cJSON_GetArrayItem(a, (int)k);
        cr_expect(cJSON_IsString(c) && !strcmp(c->valuestring, buf), "resume_commands[%zu]: %s\nwant: %s", k,
                  cJSON_IsString(c) ? c->valuestring : "(none)", buf);
        free(buf);
    }
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(r->summary, "resume_commands")), (int)n);
    char *line = resume_line(r->console, 0), *extra = resume_line(r->console, 1), one[1200];
    cr_expect_null(extra, "more than one resume line:\n%s", r->console);
    cr_expect(strstr(r->console, "merge:") == NULL, "a merge step is still said:\n%s", r->console);
    const cJSON *whole = cJSON_GetObjectItem(r->summary, "resume");
    if (n) {
        snprintf(one, sizeof one, "build/lab replay --resume %s", out);
        cr_expect(line && !strcmp(line, one), "resume: %s\nwant: %s", line ? line : "(none)", one);
        cr_expect(cJSON_IsString(whole) && !strcmp(whole->valuestring, one), "summary.json resume: %s\nwant: %s",
                  cJSON_IsString(whole) ? whole->valuestring : "(none)", one);
    }
    free(line), free(extra);
}

static void said_free(said *r)
{
    free(r->console);
    cJSON_Delete(r->summary);
}

/* Two incidents run interleaved: A finished every seed, B only its first three. The resume replays B from seed 4 and
 * leaves A out (it used to replay A's seeds 4..10 again, as duplicates of cases the set holds). */
Test(resume, an_incident_that_finished_is_not_replayed, .init = mk, .fini = rm)
{
    const lab_incident *incs[] = {&inc_a, &inc_b};
    lab_replay_opts o = opts_of(incs, 2, 1, 10, 0);
    said r = interrupted(&o, (size_t[]){10, 3}, 0, NULL);
    const char *want[] = {"build/lab replay --incident 9102-b --first-seed 4 --seeds 7 --backend cpu --out %s-resumed"};
    expect_commands(&r, want, 1);
    said_free(&r);
}

/* Incidents stopped at different seeds: one command each group of incidents that resume alike (A and C from seed 6,
 * B from seed 3; A's seed 8 finished out of order and is replayed again by such a command), each into a folder of its
 * own. */
Test(resume, each_incident_resumes_from_its_own_lowest_unfinished_seed, .init = mk, .fini = rm)
{
    const lab_incident *incs[] = {&inc_a, &inc_b, &inc_c};
    lab_replay_opts o = opts_of(incs, 3, 1, 10, 0);
    said r = interrupted(&o, (size_t[]){5, 2, 5}, 0, (int[]){7, -1});
    const char *want[] = {
        "build/lab replay --incident 9101-a --incident 9103-c --first-seed 6 --seeds 5 --backend cpu --out %s-resumed-1",
        "build/lab replay --incident 9102-b --first-seed 3 --seeds 8 --backend cpu --out %s-resumed-2"};
    expect_commands(&r, want, 2);
    said_free(&r);
}

/* Seeds not given: A runs 256, B its default 16. Each resumes over its own seeds: A from 101 the 156 left, B from 11
 * the 6 left of its 16 (it used to be one command, both from seed 11 with 246 seeds: B's seeds 17..256 it never
 * had). */
Test(resume, default_seed_incidents_resume_over_their_own_seeds, .init = mk, .fini = rm)
{
    const lab_incident *incs[] = {&inc_a, &inc_b};
    lab_replay_opts o = opts_of(incs, 2, 1, 256, 1);
    said r = interrupted(&o, (size_t[]){100, 10}, 0, NULL);
    const char *want[] = {
        "build/lab replay --incident 9101-a --first-seed 101 --seeds 156 --backend cpu --out %s-resumed-1",
        "build/lab replay --incident 9102-b --first-seed 11 --seeds 6 --backend cpu --out %s-resumed-2"};
    expect_commands(&r, want, 2);
    said_free(&r);
}

/* Seeds not given, from --first-seed 100: the incidents that did not start resume as they were asked for, from seed
 * 100 with their own default counts, in one command; C, finished, is left out (it used to lose the first seed and
 * name C). */
Test(resume, default_seeds_from_their_start_keep_the_first_seed, .init = mk, .fini = rm)
{
    const lab_incident *incs[] = {&inc_a, &inc_b, &inc_c};
    lab_replay_opts o = opts_of(incs, 3, 100, 256, 1);
    said r = interrupted(&o, (size_t[]){0, 0, 16}, 0, NULL);
    const char *want[] = {
        "build/lab replay --incident 9101-a --incident 9102-b --first-seed 100 --backend cpu --out %s-resumed"};
    expect_commands(&r, want, 1);
    said_free(&r);
}

/* Interrupted once every case had finished (collecting): nothing to resume (it used to replay everything). */
Test(resume, every_case_finished_resumes_nothing, .init = mk, .fini = rm)
{
    const lab_incident *incs[] = {&inc_a, &inc_b};
    lab_replay_opts o = opts_of(incs, 2, 1, 10, 0);
    said r = interrupted(&o, (size_t[]){10, 10}, 0, NULL);
    cr_expect(strstr(r.console, "\nresume: (none: every case finished)\n") != NULL, "%s", r.console);
    cr_expect(strstr(r.console, " replay --incident") == NULL, "a command to resume nothing:\n%s", r.console);
    expect_commands(&r, NULL, 0);
    said_free(&r);
}

/* A windowed replay (windows of 4 cases) of three incidents, one after the other, interrupted in B's case of seed 6
 * (a real SIGINT to the runner): A finished and is not named; B resumes from its first unfinished seed (6 or 7, as the
 * interrupt found that case); C, not started, from seed 1 over its 10 (it used to be one command replaying all three
 * from seed 1). */
Test(resume, a_windowed_replay_resumes_only_what_is_left, .init = mk, .fini = rm, .timeout = 60)
{
    setenv("LAB_REPLAY_WINDOW", "4", 1);
    cr_assert_eq(lab_isolate_catch_signals(), LAB_OK);
    runner = getpid(), stop_id = "9102-b", stop_seed = 6;
    const lab_incident *incs[] = {&inc_a, &inc_b, &inc_c};
    lab_replay_opts o = opts_of(incs, 3, 1, 10, 0);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    lab_verdict v;
    lab_case_record *recs;
    size_t n;
    cr_assert_eq(lab_replay_run(&o, f, &v, &recs, &n), LAB_OK, "%s", lab_err_msg());
    fclose(f);
    free(recs);
    cr_expect_eq(v.exit_status, 130, "%s", text);
    char *sum = lab_test_slurp(out, "summary.json"), want[512];
    cJSON *sj = cJSON_Parse(sum);
    const cJSON *cmds = cJSON_GetObjectItem(sj, "resume_commands");
    const cJSON *first = cJSON_GetArrayItem(cmds, 0), *second = cJSON_GetArrayItem(cmds, 1);
    cr_assert(cJSON_IsString(first) && cJSON_IsString(second), "%s", sum);
    int b_from = strstr(first->valuestring, "--first-seed 7 ") ? 7 : 6;
    snprintf(want, sizeof want, "build/lab replay --incident 9102-b --first-seed %d --seeds %d --backend cpu --out %s-resumed-1",
             b_from, 11 - b_from, out);
    cr_expect_str_eq(first->valuestring, want);
    snprintf(want, sizeof want, "build/lab replay --incident 9103-c --first-seed 1 --seeds 10 --backend cpu --out %s-resumed-2",
             out);
    cr_expect_str_eq(second->valuestring, want);
    cr_expect_eq(cJSON_GetArraySize(cmds), 2, "%s", sum);
    snprintf(want, sizeof want, "\nresume: build/lab replay --resume %s\n", out);
    cr_expect(strstr(text, want) != NULL, "%s", text);
    cJSON_Delete(sj);
    free(sum), free(text);
}

/* The most incidents one replay selects (LAB_REQUEST_IDS_MAX), each stopped at a seed of its own, into a folder of a
 * long name: one command each, some 37 KB of them in all, and every one is said, the last too (they used to be built
 * in 16 KB, and the commands past it were dropped without a word, the one at the edge cut short). */
#define MANY 64
static lab_incident many[MANY];
static char many_ids[MANY][16];

static void mk_long(void)
{
    mk();
    size_t k = strlen(dir);
    snprintf(out, sizeof out, "%s", dir);
    for (int level = 0; level < 3; ++level) {
        k += (size_t)snprintf(out + k, sizeof out - k, "/a-folder-of-a-long-name-%d-", level);
        while (k % 160) out[k++] = 'x';
        out[k] = 0;
        cr_assert_eq(mkdir(out, 0755), 0, "mkdir %s: %s", out, strerror(errno));
    }
    snprintf(out + k, sizeof out - k, "/out");
}

Test(resume, commands_past_16_kib_are_all_written, .init = mk_long, .fini = rm)
{
    const lab_incident *incs[MANY];
    size_t from[MANY];
    for (size_t k = 0; k < MANY; ++k) {
        snprintf(many_ids[k], sizeof many_ids[k], "9200-many-%02zu", k);
        many[k] = (lab_incident){.id = many_ids[k], .title = "many", .variants = fix_only,
                                 .n_variants = 1, .run_cpu = run_pass, .timeout_s = 5};
        incs[k] = &many[k];
        from[k] = k; /* incident k resumes from seed k + 1: no two alike */
    }
    lab_replay_opts o = opts_of(incs, MANY, 1, 70, 0);
    said r = interrupted(&o, from, 0, NULL);
    static char want_buf[MANY][128];
    const char *want[MANY];
    for (size_t k = 0; k < MANY; ++k) {
        snprintf(want_buf[k], sizeof want_buf[k],
                 "build/lab replay --incident 9200-many-%02zu --first-seed %zu --seeds %zu --backend cpu --out "
                 "%%s-resumed-%zu", k, k + 1, 70 - k, k + 1);
        want[k] = want_buf[k];
    }
    char last[1024];
    size_t text = 0; /* the commands' text, one a line */
    for (size_t k = 0; k < MANY; ++k) text += (size_t)snprintf(last, sizeof last, want[k], out) + 1;
    cr_assert_gt(text, 16384, "the commands' text is only %zu bytes", text);
    /* the count and the last command first, in few words (the list is long) */
    const cJSON *cmds = cJSON_GetObjectItem(r.summary, "resume_commands");
    cr_assert_eq(cJSON_GetArraySize(cmds), MANY, "%d resume_commands, not %d", cJSON_GetArraySize(cmds), MANY);
    const cJSON *got = cJSON_GetArrayItem(cmds, MANY - 1);
    cr_assert(cJSON_IsString(got) && !strcmp(got->valuestring, last), "the last command: %s\nwant: %s",
              cJSON_IsString(got) ? got->valuestring : "(none)", last);
    expect_commands(&r, want, MANY);
    said_free(&r);
}
