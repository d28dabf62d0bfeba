/* test_noshell: no user text reaches a shell: compute-sanitizer gets an argv with hostile strings intact
 * and nothing in them runs; no popen/system in the lab's own sources. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lab_fs.h"
#include "lab_incident.h"
#include "lab_sanitize.h"
#include "tests/lab_test_sh.h"

static char dir[64];
static void mk(void)
{
    lab_test_tmpdir(dir, sizeof dir, "noshell");
}
static void rm(void)
{
    lab_test_rmtree(dir);
}

/* A stand-in compute-sanitizer on PATH: writes its arguments NUL-separated to $FAKE_ARGS and answers as the
 * tool and a clean case would. */
static const char *fake_tool =
    "#!/bin/sh\n"
    "for a in \"$@\"; do printf '%s\\0' \"$a\"; done > \"$FAKE_ARGS\"\n"
    "echo 'LAB-CASE {\"status\":0,\"error\":\"\",\"verdict_set\":true,\"passed\":true,\"skipped\":false,"
    "\"detail\":\"fake\",\"metrics\":{}}'\n"
    "echo '========= ERROR SUMMARY: 0 errors'\n";

Test(noshell, sanitizer_gets_hostile_strings_as_arguments_and_runs_none, .init = mk, .fini = rm)
{
    char tool[128], args[128], path[8192];
    snprintf(tool, sizeof tool, "%s/compute-sanitizer", dir);
    cr_assert_eq(lab_fs_write_atomic(tool, fake_tool, strlen(fake_tool)), LAB_OK);
    cr_assert_eq(chmod(tool, 0755), 0);
    snprintf(args, sizeof args, "%s/args", dir);
    snprintf(path, sizeof path, "%s:%s", dir, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    setenv("PATH", path, 1);
    setenv("FAKE_ARGS", args, 1);
    const char *hostile[] = {
        "lab with spaces", "it's \"quoted\"", "$(touch %s/PWNED1)", "`touch %s/PWNED2`", "x;touch %s/PWNED3",
        "line\nbreak && touch %s/PWNED4", "| touch %s/PWNED5 #",
    };
    const lab_incident *inc = lab_incident_find("0004");
    cr_assert_not_null(inc);
    for (size_t i = 0; i < sizeof hostile / sizeof *hostile; ++i) {
        char bin[256];
        snprintf(bin, sizeof bin, hostile[i], dir);
        lab_case c = {inc, &inc->variants[0], 7, LAB_BACKEND_CUDA, "."};
        lab_case_result r;
        lab_status st = lab_sanitize_case(&c, "memcheck", bin, &r);
        cr_expect_eq(st, LAB_OK, "%s: %s", bin, lab_err_msg());
        /* The lab's path arrived as one argument, byte for byte. */
        char *text;
        size_t len;
        cr_assert_eq(lab_fs_read_all(args, &text, &len), LAB_OK);
        const char *a = text;
        int found = 0;
        while (a < text + len) {
            found |= !strcmp(a, bin);
            a += strlen(a) + 1;
        }
        cr_expect(found, "'%s' did not reach the tool as one argument", bin);
        free(text);
    }
    char cmd[256], *o;
    snprintf(cmd, sizeof cmd, "ls %s | grep -c PWNED", dir);
    lab_test_sh(cmd, &o);
    cr_expect_eq(atoi(o), 0, "a hostile string ran as a command");
    free(o);
}

/* The lab's sources start no shell: no popen or system in lab/, kernels/, replay/ and the incidents' own
 * code (their tests may use a shell for set-up). */
Test(noshell, no_popen_or_system_in_the_sources)
{
    char *o;
    int st = lab_test_sh("grep -nE '\\b(popen|system) *\\(' lab/*.c kernels/*.c replay/*.c "
                         "$(ls incidents/*/*.c | grep -v /test_)", &o);
    cr_expect_neq(st, 0, "a shell is started from the lab's sources:\n%s", o);
    free(o);
}
