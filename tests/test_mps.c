/* test_mps: the private MPS daemon of a CUDA replay (lab_mps.h) against a stand-in nvidia-cuda-mps-control on PATH: its folder, environment, the calls it makes, and when it declines. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lab_clock.h"
#include "lab_mps.h"
#include "tests/lab_test_sh.h"

static char dir[64], old_path[8192];

/* The stand-in: appends its arguments and its stdin to $FAKE_LOG (a daemon's start as one write, since daemons start
 * together); on "quit" logs its exit where the real daemon does. */
static const char *fake_control =
    "#!/bin/sh\n"
    "if [ \"$1\" = -d ]; then printf 'args:%s\\npipe:%s\\nvis:%s\\nsm:%s\\n' \"$*\" \"$CUDA_MPS_PIPE_DIRECTORY\" \"$CUDA_VISIBLE_DEVICES\" \\\n"
    "  \"$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE\" >> \"$FAKE_LOG\"; exit 0; fi\n"
    "echo \"args:$*\" >> \"$FAKE_LOG\"\n"
    "while read -r line; do echo \"stdin:$line\" >> \"$FAKE_LOG\";\n"
    "  [ \"$line\" = quit ] && echo 'Control 1] Exit with status 0' >> \"$CUDA_MPS_LOG_DIRECTORY/control.log\"; done\n"
    "exit 0\n";

static void mk(void)
{
    snprintf(dir, sizeof dir, "/tmp/lab-test-mps-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    char tool[128], log[128], path[8300];
    snprintf(tool, sizeof tool, "%s/nvidia-cuda-mps-control", dir);
    FILE *f = fopen(tool, "w");
    cr_assert_not_null(f);
    fputs(fake_control, f);
    fclose(f);
    chmod(tool, 0755);
    snprintf(log, sizeof log, "%s/calls.log", dir);
    setenv("FAKE_LOG", log, 1);
    snprintf(old_path, sizeof old_path, "%s", getenv("PATH") ? getenv("PATH") : "");
    snprintf(path, sizeof path, "%s:%s", dir, old_path);
    setenv("PATH", path, 1);
    setenv("TMPDIR", dir, 1);
    unsetenv("CUDA_MPS_PIPE_DIRECTORY");
    unsetenv("CUDA_MPS_LOG_DIRECTORY");
    unsetenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
}

static void rm(void)
{
    char cmd[128], *o;
    setenv("PATH", old_path, 1);
    unsetenv("TMPDIR");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    lab_test_sh(cmd, &o);
    free(o);
}

static char *calls(void)
{
    static char buf[4096];
    char log[128];
    snprintf(log, sizeof log, "%s/calls.log", dir);
    FILE *f = fopen(log, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    return buf;
}

/* Start: a private folder under TMPDIR, the workers' environment pointed at it, the daemon started with -d in that
 * environment. Stop: "quit" on the control program's stdin, the folder removed, the environment as before. */
Test(mps, starts_a_private_daemon_and_stops_it_without_a_trace, .init = mk, .fini = rm)
{
    lab_mps m;
    char why[320];
    cr_assert_eq(lab_mps_start(&m, why, sizeof why), LAB_OK, "%s", why);
    cr_expect(m.running);
    cr_expect_eq(strncmp(m.dir, dir, strlen(dir)), 0, "folder %s not under TMPDIR %s", m.dir, dir);
    const char *pipe = getenv("CUDA_MPS_PIPE_DIRECTORY"), *log = getenv("CUDA_MPS_LOG_DIRECTORY");
    cr_assert(pipe && log);
    struct stat sb;
    cr_expect(stat(pipe, &sb) == 0 && S_ISDIR(sb.st_mode), "%s", pipe);
    char want[400];
    snprintf(want, sizeof want, "args:-d\npipe:%s\n", pipe);
    cr_expect(strstr(calls(), want) != NULL, "calls:\n%s", calls());
    cr_expect(strstr(calls(), "sm:" LAB_MPS_SM_PERCENT "\n") != NULL, "the daemon's share: calls:\n%s", calls());
    cr_expect_str_eq(getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), LAB_MPS_SM_PERCENT, "the workers' share");
    cr_expect(strstr(why, "each client may use " LAB_MPS_SM_PERCENT "% of its GPU's SMs") != NULL, "%s", why);
    char folder[256];
    snprintf(folder, sizeof folder, "%s", m.dir);
    lab_mps_stop(&m);
    cr_expect(strstr(calls(), "stdin:quit") != NULL, "calls:\n%s", calls());
    cr_expect_null(getenv("CUDA_MPS_PIPE_DIRECTORY"));
    cr_expect_null(getenv("CUDA_MPS_LOG_DIRECTORY"));
    cr_expect_null(getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "the share the lab set is gone");
    cr_expect_neq(stat(folder, &sb), 0, "%s still exists", folder);
    lab_mps_stop(&m); /* twice: nothing */
}

/* The user's own MPS is used as it is: nothing started, the environment untouched. */
Test(mps, an_mps_of_the_users_own_is_left_alone, .init = mk, .fini = rm)
{
    setenv("CUDA_MPS_PIPE_DIRECTORY", "/somewhere/else", 1);
    lab_mps m;
    char why[320];
    cr_expect_eq(lab_mps_start(&m, why, sizeof why), LAB_ERR_UNSUPPORTED);
    cr_expect(strstr(why, "CUDA_MPS_PIPE_DIRECTORY is set") != NULL, "%s", why);
    cr_expect_str_eq(getenv("CUDA_MPS_PIPE_DIRECTORY"), "/somewhere/else");
    cr_expect_eq(calls()[0], 0, "the control program ran: %s", calls());
    lab_mps_stop(&m);
    cr_expect_str_eq(getenv("CUDA_MPS_PIPE_DIRECTORY"), "/somewhere/else");
    unsetenv("CUDA_MPS_PIPE_DIRECTORY");
}

/* No control program on PATH: declined with the reason, nothing left behind; a daemon that fails to start is an
 * error naming its exit status, its folder removed and the environment restored. */
Test(mps, declines_without_the_program_and_cleans_up_after_a_failed_start, .init = mk, .fini = rm)
{
    lab_mps m;
    char why[320], tool[128];
    setenv("PATH", "/nonexistent", 1);
    cr_expect_eq(lab_mps_start(&m, why, sizeof why), LAB_ERR_UNSUPPORTED);
    cr_expect(strstr(why, "not found on PATH") != NULL, "%s", why);
    cr_expect_null(getenv("CUDA_MPS_PIPE_DIRECTORY"));
    char path[8300];
    snprintf(path, sizeof path, "%s:%s", dir, old_path);
    setenv("PATH", path, 1);
    snprintf(tool, sizeof tool, "%s/nvidia-cuda-mps-control", dir);
    FILE *f = fopen(tool, "w");
    cr_assert_not_null(f);
    fputs("#!/bin/sh\nexit 7\n", f);
    fclose(f);
    cr_expect_eq(lab_mps_start(&m, why, sizeof why), LAB_ERR_IO);
    cr_expect(strstr(why, "exit status 7") != NULL, "%s", why);
    cr_expect_null(getenv("CUDA_MPS_PIPE_DIRECTORY"));
    cr_expect_eq(m.running, 0);
    char *o;
    char cmd[160];
    snprintf(cmd, sizeof cmd, "ls -d '%s'/lab-mps-* 2>/dev/null | wc -l", dir);
    lab_test_sh(cmd, &o);
    cr_expect_eq(atoi(o), 0, "private folders left: %s", o);
    free(o);
}

/* What the report says: served once a probe went through the daemon, still after the daemon is gone. */
Test(mps, a_confirmed_daemon_is_reported_after_it_stopped, .init = mk, .fini = rm)
{
    lab_mps m;
    char why[320];
    cr_assert_eq(lab_mps_start(&m, why, sizeof why), LAB_OK, "%s", why);
    lab_mps_confirm(&m);
    lab_mps_stop(&m);
    cr_expect_null(getenv("CUDA_MPS_PIPE_DIRECTORY"));
    cr_expect_eq(lab_mps_served(), 1);
}

/* A daemon that does not answer never hangs the replay: a control program stuck on `quit` is killed after its wait,
 * and the folder and environment are cleared all the same. */
Test(mps, a_control_program_that_hangs_is_killed_and_the_stop_returns, .init = mk, .fini = rm, .timeout = 60)
{
    lab_mps m;
    char why[320], tool[128];
    cr_assert_eq(lab_mps_start(&m, why, sizeof why), LAB_OK, "%s", why);
    snprintf(tool, sizeof tool, "%s/nvidia-cuda-mps-control", dir);
    FILE *f = fopen(tool, "w");
    cr_assert_not_null(f);
    fputs("#!/bin/sh\nexec sleep 300\n", f);
    fclose(f);
    char folder[256];
    snprintf(folder, sizeof folder, "%s", m.dir);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    lab_mps_stop(&m);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    cr_expect_lt(s, 30.0, "stop took %.1f s", s);
    cr_expect_null(getenv("CUDA_MPS_PIPE_DIRECTORY"));
    struct stat sb;
    cr_expect_neq(stat(folder, &sb), 0, "%s still exists", folder);
}

/* One daemon a GPU: each started in a folder of its own with CUDA_VISIBLE_DEVICES = its GPU's UUID, this process's
 * environment untouched; a worker becomes the client of its GPU's daemon (pipe, log, the UUID) or of none (k < 0);
 * stop quits every daemon and removes every folder. */
Test(mps, one_daemon_a_gpu_each_with_its_gpu_and_clients_pick_theirs, .init = mk, .fini = rm)
{
    static lab_mps m;
    char why[320];
    const char *uuids[2] = {"GPU-aaaa-0", "GPU-bbbb-1"};
    setenv("CUDA_VISIBLE_DEVICES", "0,1", 1);
    cr_assert_eq(lab_mps_start_per_gpu(&m, uuids, 2, why, sizeof why), LAB_OK, "%s", why);
    cr_expect(m.running);
    cr_expect_eq(m.ngpu, 2);
    cr_expect_null(getenv("CUDA_MPS_PIPE_DIRECTORY"), "the runner itself is no client");
    cr_expect_str_eq(getenv("CUDA_VISIBLE_DEVICES"), "0,1", "the runner's own list is untouched");
    char want[700];
    for (int k = 0; k < 2; ++k) {
        snprintf(want, sizeof want, "args:-d\npipe:%s/pipe\nvis:%s\nsm:" LAB_MPS_SM_PERCENT "\n", m.gpu_dir[k], uuids[k]);
        cr_expect(strstr(calls(), want) != NULL, "daemon %d: calls:\n%s", k, calls());
    }
    cr_expect_str_neq(m.gpu_dir[0], m.gpu_dir[1]);
    lab_mps_client(&m, 1);
    snprintf(want, sizeof want, "%s/pipe", m.gpu_dir[1]);
    cr_expect_str_eq(getenv("CUDA_MPS_PIPE_DIRECTORY"), want);
    cr_expect_str_eq(getenv("CUDA_VISIBLE_DEVICES"), "GPU-bbbb-1");
    cr_expect_str_eq(getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), LAB_MPS_SM_PERCENT, "a client's share");
    unsetenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
    lab_mps_client(&m, -1);
    cr_expect_null(getenv("CUDA_MPS_PIPE_DIRECTORY"), "a multi-GPU worker is no client");
    char f0[256], f1[256];
    snprintf(f0, sizeof f0, "%s", m.gpu_dir[0]);
    snprintf(f1, sizeof f1, "%s", m.gpu_dir[1]);
    lab_mps_stop(&m);
    const char *c = calls(), *q1 = strstr(c, "stdin:quit"), *q2 = q1 ? strstr(q1 + 1, "stdin:quit") : NULL;
    cr_expect(q1 && q2, "both daemons asked to quit:\n%s", c);
    struct stat sb;
    cr_expect_neq(stat(f0, &sb), 0, "%s still exists", f0);
    cr_expect_neq(stat(f1, &sb), 0, "%s still exists", f1);
    unsetenv("CUDA_VISIBLE_DEVICES");
}

/* A share the user set (here the whole GPU) reaches the daemons and the clients as it is, and the lab leaves it set. */
Test(mps, a_share_of_the_users_own_reaches_daemons_and_clients, .init = mk, .fini = rm)
{
    static lab_mps m;
    char why[320];
    const char *uuids[1] = {"GPU-aaaa-0"};
    setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "100", 1);
    cr_assert_eq(lab_mps_start_per_gpu(&m, uuids, 1, why, sizeof why), LAB_OK, "%s", why);
    cr_expect(strstr(calls(), "sm:100\n") != NULL, "calls:\n%s", calls());
    cr_expect(strstr(why, "100% of its GPU's SMs (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE as set)") != NULL, "%s", why);
    lab_mps_client(&m, 0);
    cr_expect_str_eq(getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "100");
    lab_mps_stop(&m);
    cr_assert_eq(lab_mps_start(&m, why, sizeof why), LAB_OK, "%s", why);
    lab_mps_stop(&m);
    cr_expect_str_eq(getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "100", "the user's share stays set");
    unsetenv("CUDA_VISIBLE_DEVICES");
}

/* The daemons of several GPUs start together and quit together: with a stand-in whose start and whose quit each take
 * 0.6 s, four daemons take about 0.6 s each way, where one after another they took 2.4 s. A daemon that fails to
 * start is still named with its exit status, and every daemon started is stopped. */
Test(mps, the_daemons_of_several_gpus_start_and_quit_together, .init = mk, .fini = rm, .timeout = 60)
{
    char tool[128];
    snprintf(tool, sizeof tool, "%s/nvidia-cuda-mps-control", dir);
    FILE *f = fopen(tool, "w");
    cr_assert_not_null(f);
    fputs("#!/bin/sh\n"
          "echo \"args:$*\" >> \"$FAKE_LOG\"\n"
          "sleep 0.6\n"
          "if [ \"$1\" = -d ]; then [ \"$CUDA_VISIBLE_DEVICES\" = GPU-bad ] && exit 5; exit 0; fi\n"
          "read -r line; [ \"$line\" = quit ] && echo 'Control 1] Exit with status 0' >> \"$CUDA_MPS_LOG_DIRECTORY/control.log\"\n"
          "exit 0\n", f);
    fclose(f);
    static lab_mps m;
    char why[320];
    const char *uuids[4] = {"GPU-a", "GPU-b", "GPU-c", "GPU-d"};
    double t0 = lab_clock_now();
    cr_assert_eq(lab_mps_start_per_gpu(&m, uuids, 4, why, sizeof why), LAB_OK, "%s", why);
    double t1 = lab_clock_now();
    lab_mps_stop(&m);
    double t2 = lab_clock_now();
    cr_expect_lt(t1 - t0, 1.8, "4 daemons took %.2f s to start (one after another: 2.4 s)", t1 - t0);
    cr_expect_lt(t2 - t1, 1.8, "4 daemons took %.2f s to quit (one after another: 2.4 s)", t2 - t1);
    cr_expect_geq(t2 - t1, 0.55, "the stop waited for the daemons' exits: %.2f s", t2 - t1);
    const char *c = calls();
    int starts = 0, quits = 0;
    for (const char *p = c; (p = strstr(p, "args:-d")); ++p) ++starts;
    for (const char *p = c; (p = strstr(p, "args:\n")); ++p) ++quits;
    cr_expect_eq(starts, 4, "calls:\n%s", c);
    cr_expect_eq(quits, 4, "calls:\n%s", c);

    const char *bad[3] = {"GPU-a", "GPU-bad", "GPU-c"};
    cr_expect_eq(lab_mps_start_per_gpu(&m, bad, 3, why, sizeof why), LAB_ERR_IO);
    cr_expect(strstr(why, "for GPU GPU-bad failed (exit status 5)") != NULL, "%s", why);
    cr_expect_eq(m.running, 0);
    char *o, cmd[160];
    snprintf(cmd, sizeof cmd, "ls -d '%s'/lab-mps-* 2>/dev/null | wc -l", dir);
    lab_test_sh(cmd, &o);
    cr_expect_eq(atoi(o), 0, "private folders left: %s", o);
    free(o);
}
