/* test_sanitize: compute-sanitizer findings become case outcomes. A stand-in compute-sanitizer (a shell
 * script on PATH that runs the command and prints findings as the real tool does) and a stand-in lab
 * (prints a LAB-CASE line) exercise the logic without a GPU; the real tool runs in `make sanitize`. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lab_sanitize.h"

static char dir[64], fake_lab[128];

static void write_exec(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(text, f);
    fclose(f);
    chmod(path, 0755);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/lab-san-XXXXXX");
    cr_assert(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/compute-sanitizer", dir);
    /* Skips its own options, runs the command, then reports FAKE_SAN_ERRORS findings. */
    write_exec(path, "#!/bin/sh\n"
                     "while [ \"${1#--}\" != \"$1\" ]; do shift 2; done\n"
                     "echo '========= COMPUTE-SANITIZER'\n"
                     "\"$@\"; rc=$?\n"
                     "n=${FAKE_SAN_ERRORS:-0}\n"
                     "if [ \"$n\" -gt 0 ]; then echo '========= Invalid __global__ write of size 4 bytes'; "
                     "echo '=========     at dcrf_backward+0x120'; fi\n"
                     "if [ \"$FAKE_SAN_RACE\" = 1 ]; then echo \"========= RACECHECK SUMMARY: 5 hazards displayed ($n errors, 5 warnings)\"; "
                     "else echo \"========= ERROR SUMMARY: $n errors\"; fi\n"
                     "[ \"$n\" -gt 0 ] && exit 86; exit $rc\n");
    snprintf(fake_lab, sizeof fake_lab, "%s/lab", dir);
    write_exec(fake_lab, "#!/bin/sh\n"
                         "[ -n \"$FAKE_LAB_SIGNAL\" ] && kill -$FAKE_LAB_SIGNAL $$\n"
                         "echo 'LAB-CASE {\"status\":0,\"error\":\"\",\"verdict_set\":true,\"passed\":'$FAKE_LAB_PASSED',"
                         "\"skipped\":false,\"detail\":\"criterion says so\",\"metrics\":{\"err\":0.5}}'\n");
    char p[4096];
    snprintf(p, sizeof p, "%s:%s", dir, getenv("PATH"));
    setenv("PATH", p, 1);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    (void)system(cmd);
}

static lab_status run_none(const lab_case *c, lab_case_result *r) { return LAB_OK; }
static const lab_variant vars[] = {
    {.name = "fix", .role = LAB_ROLE_FIX, .what = "clean"},
    {.name = "bug-oob", .role = LAB_ROLE_BUG, .what = "a memory bug memcheck must flag", .sanitizer = "memcheck"},
    {.name = "bug-nan", .role = LAB_ROLE_BUG, .what = "a numerical bug"},
};
static const lab_incident inc = {.id = "9006-san", .title = "sanitize", .variants = vars,
                                 .n_variants = 3, .run_cpu = run_none, .run_cuda = run_none, .plots.metric = "err"};

static lab_case_result run(int variant, const char *errors, const char *passed)
{
    setenv("FAKE_SAN_ERRORS", errors, 1);
    setenv("FAKE_LAB_PASSED", passed, 1);
    lab_case c;
    char gdir[4096];
    lab_case_init(&c, &inc, &vars[variant], 7, LAB_BACKEND_CUDA, ".", gdir, sizeof gdir);
    lab_case_result r;
    lab_status st = lab_sanitize_case(&c, "memcheck", fake_lab, &r);
    cr_assert_eq(st, LAB_OK, "%s", lab_err_msg());
    return r;
}

Test(sanitize, findings_join_the_verdict, .init = setup, .fini = teardown)
{
    lab_case_result r = run(0, "0", "true");
    cr_expect(r.verdict_set && r.passed, "%s", r.detail);
    cr_expect_eq(lab_result_get(&r, "sanitizer_errors"), 0.0);
    cr_expect_eq(lab_result_get(&r, "err"), 0.5, "the case's own metrics come back");

    r = run(0, "3", "true"); /* a fix the tool flags fails */
    cr_expect(r.verdict_set && !r.passed);
    cr_expect_eq(lab_result_get(&r, "sanitizer_errors"), 3.0);
    cr_expect(strstr(r.detail, "memcheck: 3 errors: Invalid __global__ write of size 4 bytes") != NULL, "%s", r.detail);

    r = run(1, "2", "false"); /* the memory bug, flagged */
    cr_expect(!r.passed && strstr(r.detail, "memcheck: 2 errors") != NULL, "%s", r.detail);
    r = run(1, "0", "false"); /* the memory bug the tool missed: its criterion alone does not count here */
    cr_expect(r.passed && strstr(r.detail, "memcheck found nothing") != NULL, "%s", r.detail);

    r = run(2, "0", "false"); /* a numerical bug keeps its own verdict */
    cr_expect(!r.passed);
    cr_expect_str_eq(r.detail, "criterion says so");

    setenv("FAKE_SAN_RACE", "1", 1); /* racecheck's summary: errors count, warnings do not */
    r = run(0, "0", "true");
    cr_expect(r.passed, "%s", r.detail);
    r = run(0, "2", "true");
    cr_expect(!r.passed && lab_result_get(&r, "sanitizer_errors") == 2.0, "%s", r.detail);
    unsetenv("FAKE_SAN_RACE");
}

Test(sanitize, crash_is_reraised_and_tools_are_checked, .init = setup, .fini = teardown, .signal = SIGSEGV)
{
    cr_expect_eq(lab_sanitize_tool_check("racecheck"), LAB_OK);
    cr_expect_eq(lab_sanitize_tool_check("memchek"), LAB_ERR_ARG);
    cr_expect(strstr(lab_err_msg(), "'memchek'") != NULL);
    setenv("FAKE_LAB_SIGNAL", "SEGV", 1);
    run(0, "0", "true"); /* the lab under the tool died of SIGSEGV: so does this process */
}
