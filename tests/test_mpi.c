/* test_mpi: `lab replay --mpi` under `mpirun -np 2` (subprocesses): the merged report equals a single-process
 * replay case by case, and a rank that dies or hangs is reported with its rank named, the files still written. */
#include <cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab_fs.h"
#include "tests/lab_test_sh.h"

/* A fresh temporary directory (malloc'ed path). */
static char *tmpdir(void)
{
    char *d = strdup("/tmp/lab-test-mpi-XXXXXX");
    cr_assert_not_null(mkdtemp(d));
    return d;
}

/* Skips the test unless mpirun exists and the lab was built with MPI. */
static void need_mpi(void)
{
    char *out;
    if (lab_test_sh("command -v mpirun", &out) != 0) {
        free(out);
        cr_skip_test("mpirun not found: Open MPI is not installed (mk/deps.sh installs openmpi-bin)");
    }
    free(out);
}

#define MPIRUN "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 mpirun"

/* The deadline of one mpirun in these tests (below every test's .timeout, so the helper, not Criterion,
 * ends a hung job and kills its whole session). */
#define MPI_DEADLINE_S 150.0

static double mpi_wall_s; /* wall time of the last mpi_replay */

/* Runs `mpirun [flags] -np 2 LAB replay --mpi ARGS --out DIR` in a session of its own under
 * MPI_DEADLINE_S, with Open MPI's session files under DIR.ompi (checked empty afterwards, then removed);
 * expects no process of the run left behind. Skips the test when the lab has no MPI. */
static int mpi_replay(const char *env, const char *mpirun_flags, const char *args, const char *dir, char **out)
{
    char cmd[4096], base[4200];
    cr_assert(access(lab_test_bin(), X_OK) == 0, "%s not built (make builds it)", lab_test_bin());
    snprintf(base, sizeof base, "%s.ompi", dir);
    cr_assert_eq(mkdir(base, 0700), 0, "mkdir %s", base);
    /* The same lab path as the single-process run: it is part of every case's replay command. */
    snprintf(cmd, sizeof cmd, "%s OMPI_MCA_orte_tmpdir_base='%s' " MPIRUN " %s -np 2 '%s' replay --mpi %s --out '%s'",
             env ? env : "", base, mpirun_flags, lab_test_bin(), args, dir);
    double t0 = lab_test_sh_now();
    int st = lab_test_sh_deadline(cmd, MPI_DEADLINE_S, out);
    mpi_wall_s = lab_test_sh_now() - t0;
    if (strstr(*out, "has no MPI")) cr_skip_test("this lab build has no MPI (MPI=0 or a sanitizer build): %s", lab_test_bin());
    cr_expect_neq(st, LAB_TEST_SH_TIMED_OUT, "mpirun still running after %.0f s: killed:\n%s", MPI_DEADLINE_S, *out);
    /* Nothing of the run is left (the helper would have killed it: count what it missed), and Open MPI
     * removed its session files. */
    cr_expect_eq(lab_test_count_procs(dir), 0, "processes of the run left behind (%s)", dir);
    char chk[8600], *left;
    snprintf(chk, sizeof chk, "find '%s' -mindepth 1 -type f | head -n 5; rm -rf '%s'", base, base);
    lab_test_sh(chk, &left);
    cr_expect_str_eq(left, "", "Open MPI session files left under %s:\n%s", base, left);
    free(left);
    return st;
}

static int plain_replay(const char *args, const char *dir, char **out)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' replay %s --out '%s'", lab_test_bin(), args, dir);
    return lab_test_sh(cmd, out);
}

/* Reads DIR/results.jsonl into a cJSON array of its lines. */
static cJSON *read_jsonl(const char *dir)
{
    char path[4096], *text;
    size_t len;
    snprintf(path, sizeof path, "%s/results.jsonl", dir);
    cr_assert_eq(lab_fs_read_all(path, &text, &len), LAB_OK, "%s not written", path);
    cJSON *arr = cJSON_CreateArray();
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *o = cJSON_Parse(line);
        cr_assert_not_null(o, "%s: bad line %s", path, line);
        cJSON_AddItemToArray(arr, o);
    }
    free(text);
    return arr;
}

static cJSON *read_json(const char *dir, const char *name)
{
    char path[4096], *text;
    size_t len;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_eq(lab_fs_read_all(path, &text, &len), LAB_OK, "%s not written", path);
    cJSON *o = cJSON_Parse(text);
    free(text);
    cr_assert_not_null(o, "%s does not parse", path);
    return o;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* Expects two case lines to be the same case with the same result: everything but wall_s. */
static void expect_same_case(const cJSON *a, const cJSON *b, size_t i)
{
    static const char *keys[] = {"incident", "variant", "role", "seed", "backend", "outcome", "ok", "signal",
                                 "detail", "error", "metrics", "nonfinite_metrics", "replay"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; ++k) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(a, keys[k]);
        const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, keys[k]);
        char *sx = x ? cJSON_PrintUnformatted(x) : strdup("(absent)");
        char *sy = y ? cJSON_PrintUnformatted(y) : strdup("(absent)");
        cr_expect_str_eq(sx, sy, "case %zu field %s: single process %s, merged %s", i, keys[k], sx, sy);
        free(sx);
        free(sy);
    }
}

/* Removes what a summary.json variant measured (case_wall_s, cpu_s) from every variant of `incidents`. */
static void untime_variants(cJSON *incidents)
{
    const cJSON *inc;
    cJSON_ArrayForEach(inc, incidents) {
        cJSON *v;
        cJSON_ArrayForEach(v, cJSON_GetObjectItem(inc, "variants")) {
            cJSON_DeleteItemFromObject(v, "case_wall_s");
            cJSON_DeleteItemFromObject(v, "cpu_s");
        }
    }
}

/* DIR/junit.xml with every time="..." attribute removed (malloc'ed). */
static char *read_junit_untimed(const char *dir)
{
    char path[4096], *text;
    size_t len;
    snprintf(path, sizeof path, "%s/junit.xml", dir);
    cr_assert_eq(lab_fs_read_all(path, &text, &len), LAB_OK, "%s not written", path);
    char *w = text;
    for (const char *r = text; *r;) {
        if (!strncmp(r, " time=\"", 7)) {
            const char *q = strchr(r + 7, '"');
            if (q) {
                r = q + 1;
                continue;
            }
        }
        *w++ = *r++;
    }
    *w = 0;
    return text;
}

/* rm -rf a temporary directory of a test. */
static void rmrf(char *dir)
{
    char cmd[4200], *o;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    lab_test_sh(cmd, &o);
    free(o);
    free(dir);
}

#define EXPECT_IN(out, s) cr_expect(strstr(out, s) != NULL, "expected \"%s\" in:\n%s", s, out)

/* Which rank ran case i of the canonical list (the documented split). */
static int owner(size_t i) { return (int)(i % 2); }

Test(mpi, merged_report_equals_single_process_case_by_case, .timeout = 240)
{
    need_mpi();
    char *one = tmpdir(), *two = tmpdir(), *out1, *out2;
    const char *args = "--incident 0004 --seeds 4";
    int st2 = mpi_replay(NULL, "", args, two, &out2); /* first: it skips the test in a build without MPI */
    int st1 = plain_replay(args, one, &out1);
    cr_expect_eq(st1, 0, "single-process replay exited %d:\n%s", st1, out1);
    cr_expect_eq(st2, 0, "mpirun -np 2 replay exited %d:\n%s", st2, out2);
    EXPECT_IN(out2, "mpi: 2 ranks on 1 host, round-robin split");

    cJSON *a = read_jsonl(one), *b = read_jsonl(two);
    cr_assert_eq(cJSON_GetArraySize(a), 8);
    cr_assert_eq(cJSON_GetArraySize(a), cJSON_GetArraySize(b), "single %d cases, merged %d", cJSON_GetArraySize(a),
                 cJSON_GetArraySize(b));
    for (int i = 0; i < cJSON_GetArraySize(a); ++i)
        expect_same_case(cJSON_GetArrayItem(a, i), cJSON_GetArrayItem(b, i), (size_t)i);

    /* summary.json: the same verdicts (the variants' measured times aside); the merged one names both ranks, their
     * host and device. */
    cJSON *sa = read_json(one, "summary.json"), *sb = read_json(two, "summary.json");
    untime_variants(cJSON_GetObjectItem(sa, "incidents"));
    untime_variants(cJSON_GetObjectItem(sb, "incidents"));
    cr_expect(cJSON_Compare(cJSON_GetObjectItem(sa, "incidents"), cJSON_GetObjectItem(sb, "incidents"), 1),
              "summary.json incidents differ");
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(sb, "ok")));
    cJSON *ranks = cJSON_GetObjectItem(sb, "ranks");
    cr_assert_eq(cJSON_GetArraySize(ranks), 2);
    for (int r = 0; r < 2; ++r) {
        cJSON *rk = cJSON_GetArrayItem(ranks, r);
        cr_expect_eq(cJSON_GetObjectItem(rk, "rank")->valueint, r);
        cr_expect_str_eq(str(rk, "status"), "done");
        cr_expect(str(rk, "host")[0] && str(rk, "device")[0], "rank %d has no host or device", r);
        cr_expect_eq(cJSON_GetObjectItem(rk, "cases")->valueint, 4);
        cr_expect_eq(cJSON_GetObjectItem(rk, "reported")->valueint, 4);
    }

    /* junit.xml equal but for times; the same plots drawn. */
    char *ja = read_junit_untimed(one), *jb = read_junit_untimed(two);
    cr_expect_str_eq(ja, jb, "junit.xml differs beyond times");
    free(ja);
    free(jb);
    char cmd[8400], *o3;
    snprintf(cmd, sizeof cmd, "a=$(cd '%s/plots' && ls | sort) && b=$(cd '%s/plots' && ls | sort) && test -n \"$a\" && "
                              "test \"$a\" = \"$b\" || { echo \"single: $a\"; echo \"merged: $b\"; exit 1; }",
             one, two);
    cr_expect_eq(lab_test_sh(cmd, &o3), 0, "the plots differ (or none were drawn):\n%s", o3);
    free(o3);

    cJSON_Delete(a);
    cJSON_Delete(b);
    cJSON_Delete(sa);
    cJSON_Delete(sb);
    free(out1);
    free(out2);
    rmrf(one);
    rmrf(two);
}

/* Runs a replay where rank 1 fails after reporting half of its cases; checks what rank 0 still delivers.
 * (That a delivered case equals the single-process one is the merged-report test's job; here a delivered
 * case must simply be a real result: PASS for the fix, FAIL for the bug, with metrics.) */
static void rank_failure(const char *fault, const char *outcome, const char *status, const char *why, double bound_s)
{
    need_mpi();
    char *two = tmpdir(), *out2, env[128];
    const char *args = "--incident 0004 --seeds 4 --no-plots --timeout 15";
    snprintf(env, sizeof env, "LAB_MPI_TEST_FAULT=%s", fault);
    mpi_replay(env, "--enable-recovery", args, two, &out2);
    /* The job ends within its deadline plus the stated grace (lab_mpi.h), and some slack for start-up. */
    cr_expect_lt(mpi_wall_s, bound_s, "the job took %.1f s (bound %.0f s)", mpi_wall_s, bound_s);
    EXPECT_IN(out2, "NOT OK: a rank failed");
    EXPECT_IN(out2, why);

    cJSON *b = read_jsonl(two);
    cr_assert_eq(cJSON_GetArraySize(b), 8, "the merged results.jsonl lost cases");
    size_t lost = 0, rank1_kept = 0;
    for (int i = 0; i < 8; ++i) {
        cJSON *y = cJSON_GetArrayItem(b, i);
        const char *role = str(y, "role");
        cr_expect_eq(cJSON_GetObjectItem(y, "seed")->valueint, 1 + i % 4, "case %d out of order", i);
        if (strstr(str(y, "error"), "MPI rank 1")) {
            lost++;
            cr_expect_eq(owner((size_t)i), 1, "case %d of rank 0 blamed on rank 1", i);
            cr_expect_str_eq(str(y, "outcome"), outcome, "case %d", i);
            cr_expect(strstr(str(y, "error"), why) != NULL, "case %d: error '%s' lacks '%s'", i, str(y, "error"), why);
            cr_expect(strstr(str(y, "error"), "host ") != NULL, "case %d: the host is not named", i);
            continue;
        }
        rank1_kept += owner((size_t)i) == 1;
        cr_expect_str_eq(str(y, "outcome"), strcmp(role, "fix") == 0 ? "PASS" : "FAIL", "case %d (%s)", i, role);
        cr_expect_gt(cJSON_GetArraySize(cJSON_GetObjectItem(y, "metrics")), 0, "case %d has no metrics", i);
    }
    cr_expect_eq(lost, 2, "rank 1 has 4 cases and fails after reporting 2: %zu lost", lost);
    cr_expect_eq(rank1_kept, 2, "rank 1's 2 reported cases must be kept, got %zu", rank1_kept);

    cJSON *sb = read_json(two, "summary.json");
    cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(sb, "ok")), "summary.json ok must be false when a rank failed");
    cJSON *rk1 = cJSON_GetArrayItem(cJSON_GetObjectItem(sb, "ranks"), 1);
    cr_assert_not_null(rk1);
    cr_expect_str_eq(str(rk1, "status"), status);
    cr_expect_eq(cJSON_GetObjectItem(rk1, "reported")->valueint, 2);
    char path[4096];
    snprintf(path, sizeof path, "%s/junit.xml", two);
    cr_expect(lab_fs_exists(path), "junit.xml not written");

    cJSON_Delete(b);
    cJSON_Delete(sb);
    free(out2);
    rmrf(two);
}

Test(mpi, dead_rank_cases_are_crash_with_the_rank_named, .timeout = 240)
{
    /* No watchdog to wait out: MPI start-up, 8 short cases, the abort (grace 20 s), slack. */
    rank_failure("crash:1", "CRASH", "crashed", "died after reporting 2 of 4 cases", 60);
}

Test(mpi, hung_rank_cases_are_hang_with_the_rank_named, .timeout = 240)
{
    /* --timeout 15 + LAB_MPI_GRACE_S 10 before the rank is judged hung, the abort (grace 20 s), slack. */
    rank_failure("hang:1", "HANG", "hung", "after reporting 2 of 4 cases: hung", 90);
}

Test(mpi, bad_fault_spec_is_named, .timeout = 120)
{
    need_mpi();
    char *dir = tmpdir(), *out;
    int st = mpi_replay("LAB_MPI_TEST_FAULT=boom:1", "", "--incident 0004 --seeds 2 --no-plots", dir, &out);
    cr_expect_neq(st, 0);
    EXPECT_IN(out, "LAB_MPI_TEST_FAULT='boom:1': want crash:RANK or hang:RANK");
    free(out);
    rmrf(dir);
}

Test(mpi, flag_says_when_the_build_has_no_mpi)
{
    char cmd[2048], *out;
    snprintf(cmd, sizeof cmd, "'%s' replay --mpi --variant none-such", lab_test_bin());
    int st = lab_test_sh(cmd, &out);
    cr_expect_eq(st, 2, "exit %d:\n%s", st, out);
    if (strstr(out, "has no MPI")) EXPECT_IN(out, "rebuild with `make MPI=1`"); /* MPI=0 or sanitizer build */
    else EXPECT_IN(out, "unknown variant 'none-such'");                        /* parsed on, as without --mpi */
    free(out);
}
