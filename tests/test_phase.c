/* test_phase: the marks of a command's phases (lab_phase.h): one line each on stderr when LAB_PHASES is set, on one
 * clock for the process and its children, nothing otherwise. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab_phase.h"

static void quiet_on(void)
{
    cr_redirect_stderr();
    setenv("LAB_PHASES", "1", 1);
}

static void quiet_off(void)
{
    cr_redirect_stderr();
    unsetenv("LAB_PHASES");
}

Test(phase, marks_a_line_each_with_the_time_and_pid_when_asked, .init = quiet_on)
{
    lab_phase("before begin: not marked");
    lab_phase_begin();
    lab_phase("replay clock starts");
    pid_t pid = fork();
    if (pid == 0) {
        lab_phase("worker ready");
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    fflush(stderr);
    FILE *f = cr_get_redirected_stderr();
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    char want[128];
    snprintf(want, sizeof want, " s [pid %ld]: replay clock starts\n", (long)getpid());
    cr_expect(strstr(buf, want) != NULL, "stderr:\n%s", buf);
    snprintf(want, sizeof want, " s [pid %ld]: worker ready\n", (long)pid);
    cr_expect(strstr(buf, want) != NULL, "the child's mark: stderr:\n%s", buf);
    cr_expect(strncmp(buf, "lab phase +0.0", 14) == 0, "seconds since the begin: %s", buf);
    cr_expect_null(strstr(buf, "not marked"), "%s", buf);
}

Test(phase, marks_nothing_unless_asked, .init = quiet_off)
{
    lab_phase_begin();
    lab_phase("replay clock starts");
    cr_assert_stderr_eq_str("");
}
