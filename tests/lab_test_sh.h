/* lab_test_sh: what tests that run the `lab` command share: the binary under test and a shell runner that
 * never leaves a process behind (its own session, killed as a whole on a deadline or when the test dies). */
#ifndef LAB_TEST_SH_H
#define LAB_TEST_SH_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab_fs.h"

/* Default deadline of lab_test_sh, seconds: longer than any command of the suite takes. */
#define LAB_TEST_SH_DEADLINE_S 300.0
/* Exit status lab_test_sh_deadline returns for a command it killed at its deadline (as timeout(1)). */
#define LAB_TEST_SH_TIMED_OUT 124

/* The lab binary under test: $LAB_BIN (set by `make test`), else build/lab. */
static inline const char *lab_test_bin(void)
{
    const char *b = getenv("LAB_BIN");
    return b && *b ? b : "build/lab";
}

static inline double lab_test_sh_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Sends sig to every process of session sid but `except` (found through /proc: a member that moved to a
 * process group of its own, as mpirun's ranks do, is still in the session). Returns how many it signalled. */
static inline int lab_test_sh_kill_session(pid_t sid, pid_t except, int sig)
{
    DIR *d = opendir("/proc");
    if (!d) return 0;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0 || pid == except) continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t r = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[r] = 0;
        const char *p = strrchr(buf, ')');
        char state;
        long ppid, pgrp, session;
        if (!p || sscanf(p + 1, " %c %ld %ld %ld", &state, &ppid, &pgrp, &session) != 4) continue;
        if (session == sid && state != 'Z' && kill((pid_t)pid, sig) == 0) n++;
    }
    closedir(d);
    return n;
}

/* How many live processes (zombies not counted, this one excepted) have `needle` in their command line. */
static inline int lab_test_count_procs(const char *needle)
{
    DIR *d = opendir("/proc");
    if (!d) return -1;
    struct dirent *e;
    int n = 0;
    size_t nl = strlen(needle);
    while ((e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0 || pid == (long)getpid()) continue;
        char path[64], buf[8192];
        snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t r = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        if (r == 0) continue; /* a zombie or a kernel thread */
        for (size_t i = 0; i < r; ++i)
            if (!buf[i]) buf[i] = ' ';
        buf[r] = 0;
        if (nl && strstr(buf, needle)) n++;
    }
    closedir(d);
    return n;
}

static volatile sig_atomic_t lab_test_sh_stop;
static inline void lab_test_sh_on_term(int sig) { lab_test_sh_stop = sig; }

/* The guard: leader of a new session, runs `sh -c cmd` in it, and kills the whole session (SIGTERM, then
 * SIGKILL 2 s later) when told to stop (SIGTERM from the test at its deadline, or the parent-death signal
 * when the test process dies) and after the command ends (nothing it started outlives it). Never returns. */
static inline void lab_test_sh_guard(const char *cmd, pid_t test_pid, int out_fd)
{
    setsid();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = lab_test_sh_on_term;
    sigaction(SIGTERM, &sa, NULL);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != test_pid) lab_test_sh_stop = SIGTERM; /* the test died before the prctl */
    dup2(out_fd, STDOUT_FILENO);
    dup2(out_fd, STDERR_FILENO);
    if (out_fd > STDERR_FILENO) close(out_fd);
    int code = LAB_TEST_SH_TIMED_OUT;
    pid_t sh = lab_test_sh_stop ? -1 : fork();
    if (sh == 0) {
        signal(SIGTERM, SIG_DFL);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    while (sh > 0 && !lab_test_sh_stop) {
        int ws;
        pid_t w = waitpid(sh, &ws, 0);
        if (w == sh) {
            code = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
            break;
        }
        if (w < 0 && errno != EINTR) break;
    }
    pid_t me = getpid();
    if (lab_test_sh_kill_session(me, me, SIGTERM) > 0) {
        for (int i = 0; i < 200 && lab_test_sh_kill_session(me, me, 0) > 0; ++i) usleep(10000);
        lab_test_sh_kill_session(me, me, SIGKILL);
    }
    while (waitpid(-1, NULL, WNOHANG) > 0) {}
    _exit(code);
}

/* Runs a shell command line with 2>&1 in a session of its own; returns its exit status (128 + signal if
 * killed; LAB_TEST_SH_TIMED_OUT if still running after deadline_s, when the whole session is killed) and
 * its output in *out (malloc'ed, NUL-terminated). Whatever the command leaves running when it ends, or
 * when the test process dies, is killed too. */
static inline int lab_test_sh_deadline(const char *cmd, double deadline_s, char **out)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    fflush(NULL);
    pid_t test_pid = getpid();
    pid_t g = fork();
    cr_assert_geq(g, 0, "fork: %s", strerror(errno));
    if (g == 0) {
        close(p[0]);
        lab_test_sh_guard(cmd, test_pid, p[1]);
    }
    close(p[1]);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    cr_assert_not_null(buf);
    double end = lab_test_sh_now() + deadline_s;
    int timed_out = 0;
    for (;;) {
        double left = end - lab_test_sh_now();
        if (left <= 0 && !timed_out) {
            timed_out = 1;
            kill(g, SIGTERM); /* the guard kills the session; the pipe then reaches EOF */
        }
        struct pollfd pfd = {p[0], POLLIN, 0};
        int pr = poll(&pfd, 1, timed_out ? 1000 : (int)(left * 1000) + 1);
        if (pr < 0 && errno == EINTR) continue;
        if (pr == 0) continue;
        if (n + 1 >= cap) {
            buf = realloc(buf, cap *= 2);
            cr_assert_not_null(buf);
        }
        ssize_t r = read(p[0], buf + n, cap - n - 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        n += (size_t)r;
    }
    close(p[0]);
    buf[n] = 0;
    int ws = 0;
    while (waitpid(g, &ws, 0) < 0 && errno == EINTR) {}
    *out = buf;
    if (timed_out) return LAB_TEST_SH_TIMED_OUT;
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

/* lab_test_sh_deadline with LAB_TEST_SH_DEADLINE_S. */
static inline int lab_test_sh(const char *cmd, char **out)
{
    return lab_test_sh_deadline(cmd, LAB_TEST_SH_DEADLINE_S, out);
}

/* A test's own folder: a fresh /tmp/lab-test-NAME-XXXXXX into dir (len bytes, at least 64); the test fails when none
 * can be made. */
static inline void lab_test_tmpdir(char *dir, size_t len, const char *name)
{
    snprintf(dir, len, "/tmp/lab-test-%s-XXXXXX", name);
    cr_assert_not_null(mkdtemp(dir), "mkdtemp %s: %s", dir, strerror(errno));
}

/* Removes dir and everything below it (rm -rf under lab_test_sh's deadline); the test fails when it cannot. */
static inline void lab_test_rmtree(const char *dir)
{
    char cmd[4200], *o = NULL;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    int rc = lab_test_sh(cmd, &o);
    cr_expect_eq(rc, 0, "could not remove %s: %s", dir, o ? o : "");
    free(o);
}

/* Runs the lab under test (lab_test_bin(), by its absolute path) with args (shell words), after the
 * variable assignments in env (NULL: none), through lab_test_sh: its exit status, and its stdout and stderr
 * in *out (malloc'ed). Fails the test when the binary is not built. */
static inline int lab_test_lab(const char *env, const char *args, char **out)
{
    char cmd[8192];
    char *abs = realpath(lab_test_bin(), NULL);
    cr_assert_not_null(abs, "%s not built (make builds it)", lab_test_bin());
    snprintf(cmd, sizeof cmd, "%s '%s' %s", env ? env : "", abs, args);
    free(abs);
    return lab_test_sh(cmd, out);
}

/* Starts `sh -c cmd` as a child the test waits on or signals itself (write `exec` into cmd so the pid is the
 * command's), stdout and stderr to the file `log`. The child dies with the test (PR_SET_PDEATHSIG, kept across
 * the exec): a test killed at its timeout leaves no command running. Returns its pid. */
static inline pid_t lab_test_spawn_logged(const char *cmd, const char *log)
{
    pid_t test = getpid();
    fflush(NULL);
    pid_t p = fork();
    cr_assert_geq(p, 0);
    if (p == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != test) _exit(127); /* the test ended before the prctl */
        if (!freopen(log, "w", stdout)) _exit(127);
        dup2(STDOUT_FILENO, STDERR_FILENO);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return p;
}

/* The text of DIR/NAME (malloc'ed), "" when it cannot be read. */
static inline char *lab_test_slurp(const char *dir, const char *name)
{
    char path[1024], *text;
    size_t len;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (lab_fs_read_all(path, &text, &len) != LAB_OK) return strdup("");
    return text;
}

/* Newlines in s. */
static inline int lab_test_lines(const char *s)
{
    int n = 0;
    for (; *s; ++s) n += *s == '\n';
    return n;
}

#endif
