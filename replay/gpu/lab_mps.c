/* lab_mps: a private CUDA Multi-Process Service for one CUDA replay (contract in lab_mps.h). */
#define _GNU_SOURCE
#include "lab_mps.h"

#include "lab_clock.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define LAB_MPS_CONTROL "nvidia-cuda-mps-control"
#define LAB_MPS_WAIT_S 5 /* longest wait for the control program, and for the daemon's exit */
#define LAB_MPS_SM_VAR "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"

static int lab_mps_confirmed;

void lab_mps_confirm(const lab_mps *m) { lab_mps_confirmed |= m->running; }

int lab_mps_served(void) { return lab_mps_confirmed || getenv("CUDA_MPS_PIPE_DIRECTORY") != NULL; }

/* The control program's path on PATH into out; 0 when absent. */
static int lab_mps_find(char *out, size_t len)
{
    const char *path = getenv("PATH");
    if (!path) return 0;
    const char *p = path;
    while (*p) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n > 0 && (size_t)snprintf(out, len, "%.*s/%s", (int)n, p, LAB_MPS_CONTROL) < len && access(out, X_OK) == 0)
            return 1;
        p += n + (e != NULL);
    }
    return 0;
}

/* Starts the control program with arg, stdin from `input` (NULL: /dev/null), stdout and stderr to /dev/null, in the
 * environment envp: its pid, or -1 when it could not be started. */
static pid_t lab_mps_spawn(const char *exe, const char *arg, const char *input, char **envp)
{
    int fd[2] = {-1, -1};
    if (input && pipe(fd) != 0) return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (input) posix_spawn_file_actions_adddup2(&fa, fd[0], 0), posix_spawn_file_actions_addclose(&fa, fd[1]);
    else posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    char *argv[3] = {(char *)LAB_MPS_CONTROL, (char *)arg, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, exe, &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    if (input) {
        close(fd[0]);
        if (rc == 0) {
            size_t n = strlen(input);
            if (write(fd[1], input, n) != (ssize_t)n) { /* the control program's own exit status says the rest */
            }
        }
        close(fd[1]);
    }
    return rc == 0 ? pid : -1;
}

/* Waits for the control program pid until `deadline` (lab_clock_now's clock), killing it past that: a control program
 * that does not answer is never waited for forever. Its exit status, or -1 when it was not started, died by a signal
 * or was killed. */
static int lab_mps_reap(pid_t pid, double deadline)
{
    if (pid < 0) return -1;
    int status;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) return -1;
        if (lab_clock_now() >= deadline) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            return -1;
        }
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The control program run to its end (at most LAB_MPS_WAIT_S): its exit status, or -1 (lab_mps_reap). */
static int lab_mps_control(const char *exe, const char *arg, const char *input)
{
    return lab_mps_reap(lab_mps_spawn(exe, arg, input, environ), lab_clock_now() + LAB_MPS_WAIT_S);
}

static int lab_mps_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void lab_mps_clear(lab_mps *m)
{
    if (m->dir[0]) nftw(m->dir, lab_mps_rm_one, 8, FTW_DEPTH | FTW_PHYS);
    for (int k = 0; k < m->ngpu; ++k)
        if (m->gpu_dir[k][0]) nftw(m->gpu_dir[k], lab_mps_rm_one, 8, FTW_DEPTH | FTW_PHYS);
    unsetenv("CUDA_MPS_PIPE_DIRECTORY");
    unsetenv("CUDA_MPS_LOG_DIRECTORY");
    if (m->sm_share_set) unsetenv(LAB_MPS_SM_VAR);
    memset(m, 0, sizeof *m);
}

/* The user's own share (the variable set and not empty), or NULL. */
static const char *lab_mps_sm_user(void)
{
    const char *v = getenv(LAB_MPS_SM_VAR);
    return v && *v ? v : NULL;
}

const char *lab_mps_sm_share(void)
{
    const char *v = lab_mps_sm_user();
    return v ? v : LAB_MPS_SM_PERCENT;
}

/* The why line's note on the share of a GPU each client may use; lab_set: the share is the lab's, not the user's. */
static void lab_mps_say_share(char *why, size_t len, int lab_set)
{
    size_t n = strlen(why);
    if (n < len)
        snprintf(why + n, len - n, "; each client may use %s%% of its GPU's SMs (%s%s)", lab_mps_sm_share(),
                 LAB_MPS_SM_VAR, lab_set ? " unset: the lab's" : " as set");
}

/* A fresh private folder with pipe/ and log/ under TMPDIR into dir. */
static lab_status lab_mps_folder(char *dir, size_t dlen, char *why, size_t len)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, dlen, "%s/lab-mps-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        snprintf(why, len, "cannot make a folder for the MPS pipes (%s): %s", dir, strerror(errno));
        dir[0] = 0;
        return lab_err_set(LAB_ERR_IO, "%s", why);
    }
    static const char *names[2] = {"pipe", "log"};
    for (int i = 0; i < 2; ++i) {
        char sub[300];
        snprintf(sub, sizeof sub, "%s/%s", dir, names[i]);
        if (mkdir(sub, 0700) != 0) {
            snprintf(why, len, "cannot make %s: %s", sub, strerror(errno));
            return lab_err_set(LAB_ERR_IO, "%s", why);
        }
    }
    return LAB_OK;
}

/* Whether a private daemon may be started: none of the user's own (CUDA_MPS_PIPE_DIRECTORY) and the control program on
 * PATH (into exe). LAB_ERR_UNSUPPORTED with why otherwise. */
static lab_status lab_mps_can_start(char *exe, size_t elen, char *why, size_t len)
{
    if (getenv("CUDA_MPS_PIPE_DIRECTORY")) {
        snprintf(why, len, "CUDA_MPS_PIPE_DIRECTORY is set: the workers use that MPS as it is");
        return lab_err_set(LAB_ERR_UNSUPPORTED, "%s", why);
    }
    if (!lab_mps_find(exe, elen)) {
        snprintf(why, len, LAB_MPS_CONTROL " not found on PATH: the workers' contexts take turns on the GPU");
        return lab_err_set(LAB_ERR_UNSUPPORTED, "%s", why);
    }
    return LAB_OK;
}

lab_status lab_mps_start(lab_mps *m, char *why, size_t len)
{
    memset(m, 0, sizeof *m);
    char exe[1024], sub[300];
    lab_status st = lab_mps_can_start(exe, sizeof exe, why, len);
    if (st != LAB_OK) return st; /* the user's own MPS, or none: the environment stays as it is */
    if ((st = lab_mps_folder(m->dir, sizeof m->dir, why, len)) != LAB_OK) {
        lab_mps_clear(m);
        return st;
    }
    snprintf(sub, sizeof sub, "%s/pipe", m->dir);
    setenv("CUDA_MPS_PIPE_DIRECTORY", sub, 1);
    snprintf(sub, sizeof sub, "%s/log", m->dir);
    setenv("CUDA_MPS_LOG_DIRECTORY", sub, 1);
    m->sm_share_set = !lab_mps_sm_user();
    setenv(LAB_MPS_SM_VAR, lab_mps_sm_share(), 1);
    int rc = lab_mps_control(exe, "-d", NULL);
    if (rc != 0) {
        snprintf(why, len, LAB_MPS_CONTROL " -d failed (exit status %d)", rc);
        lab_mps_clear(m);
        return lab_err_set(LAB_ERR_IO, "%s", why);
    }
    m->running = 1;
    snprintf(why, len, "workers share the GPU through a private MPS daemon (%s)", m->dir);
    lab_mps_say_share(why, len, m->sm_share_set);
    return LAB_OK;
}

/* 1 when the daemon's log says it exited. */
static int lab_mps_exited(const char *log)
{
    FILE *f = fopen(log, "r");
    char line[512];
    int done = 0;
    while (f && fgets(line, sizeof line, f)) done |= strstr(line, "Exit with status") != NULL;
    if (f) fclose(f);
    return done;
}

/* The variables by which a control program or a client finds its daemon, and what that daemon's clients may use. */
static const char *const lab_mps_vars[] = {"CUDA_MPS_PIPE_DIRECTORY=", "CUDA_MPS_LOG_DIRECTORY=", "CUDA_VISIBLE_DEVICES=",
                                           LAB_MPS_SM_VAR "="};

/* Starts the control program with arg and input (lab_mps_spawn) for the daemon of folder dir: in this process's
 * environment with lab_mps_vars replaced by that folder's pipe and log, and when uuid is not NULL (a daemon being
 * started) by that GPU and the clients' share of it. Its pid, or -1. */
static pid_t lab_mps_spawn_in(const char *exe, const char *dir, const char *uuid, const char *arg, const char *input)
{
    char e1[320], e2[320], e3[96], e4[64];
    snprintf(e1, sizeof e1, "CUDA_MPS_PIPE_DIRECTORY=%s/pipe", dir);
    snprintf(e2, sizeof e2, "CUDA_MPS_LOG_DIRECTORY=%s/log", dir);
    snprintf(e3, sizeof e3, "CUDA_VISIBLE_DEVICES=%s", uuid ? uuid : "");
    snprintf(e4, sizeof e4, "%s=%.32s", LAB_MPS_SM_VAR, lab_mps_sm_share());
    char *add[4] = {e1, e2, e3, e4};
    size_t nadd = uuid ? 4 : 2, nvar = sizeof lab_mps_vars / sizeof *lab_mps_vars, ne = 0, j = 0;
    while (environ[ne]) ++ne;
    char **envp = malloc((ne + nadd + 1) * sizeof *envp);
    if (!envp) return -1;
    for (size_t i = 0; i < ne; ++i) {
        int keep = 1;
        for (size_t v = 0; v < nvar; ++v) keep &= strncmp(environ[i], lab_mps_vars[v], strlen(lab_mps_vars[v])) != 0;
        if (keep) envp[j++] = environ[i];
    }
    for (size_t i = 0; i < nadd; ++i) envp[j++] = add[i];
    envp[j] = NULL;
    pid_t pid = lab_mps_spawn(exe, arg, input, envp);
    free(envp);
    return pid;
}

/* Asks the daemons of the n folders dirs[0..n) to quit ("quit" on each control pipe, all at once) and waits until
 * every one has logged its exit ("Exit with status N", once its server is down), at most about 2 x LAB_MPS_WAIT_S in
 * all. Why all at once: a server's exit takes its GPU's context down, and daemons quit one after another add those
 * up at the end of every replay of several GPUs. */
static void lab_mps_quit_all(const char *exe, char (*dirs)[256], int n)
{
    pid_t pid[LAB_MPS_MAX_GPUS];
    for (int k = 0; k < n; ++k) pid[k] = lab_mps_spawn_in(exe, dirs[k], NULL, NULL, "quit\n");
    double deadline = lab_clock_now() + LAB_MPS_WAIT_S;
    for (int k = 0; k < n; ++k) (void)lab_mps_reap(pid[k], deadline);
    int left = n;
    char done[LAB_MPS_MAX_GPUS] = {0};
    for (deadline = lab_clock_now() + LAB_MPS_WAIT_S; left > 0; ) {
        for (int k = 0; k < n; ++k) {
            char log[300];
            snprintf(log, sizeof log, "%s/log/control.log", dirs[k]);
            if (!done[k] && lab_mps_exited(log)) done[k] = 1, --left;
        }
        if (left == 0 || lab_clock_now() >= deadline) break;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

void lab_mps_stop(lab_mps *m)
{
    if (!m->running) {
        if (m->dir[0] || m->ngpu) lab_mps_clear(m); /* a failed start's folders; never the user's own MPS */
        return;
    }
    char exe[1024];
    if (lab_mps_find(exe, sizeof exe)) {
        if (m->ngpu == 0) lab_mps_quit_all(exe, &m->dir, 1);
        else lab_mps_quit_all(exe, m->gpu_dir, m->ngpu);
    }
    lab_mps_clear(m);
}

/* Why the daemons start all at once: `nvidia-cuda-mps-control -d` took about 0.11 s, so four of them one after
 * another took 0.45 s before the first probe on a host of 4 H200s, and 0.26 s all at once (LAB_PHASES,
 * docs/performance.md). */
lab_status lab_mps_start_per_gpu(lab_mps *m, const char *const *uuids, int n, char *why, size_t len)
{
    memset(m, 0, sizeof *m);
    char exe[1024];
    lab_status cs = lab_mps_can_start(exe, sizeof exe, why, len);
    if (cs != LAB_OK) return cs;
    if (n < 1 || n > LAB_MPS_MAX_GPUS) {
        snprintf(why, len, "%d GPUs: one MPS daemon a GPU serves 1 to %d", n, LAB_MPS_MAX_GPUS);
        return lab_err_set(LAB_ERR_ARG, "%s", why);
    }
    lab_status st = LAB_OK;
    pid_t pid[LAB_MPS_MAX_GPUS];
    for (int k = 0; k < n && st == LAB_OK; ++k) {
        m->ngpu = k + 1;
        pid[k] = -1;
        snprintf(m->gpu_uuid[k], sizeof m->gpu_uuid[k], "%s", uuids[k]);
        if ((st = lab_mps_folder(m->gpu_dir[k], sizeof m->gpu_dir[k], why, len)) != LAB_OK) break;
        pid[k] = lab_mps_spawn_in(exe, m->gpu_dir[k], uuids[k], "-d", NULL);
        m->running = 1;
    }
    double deadline = lab_clock_now() + LAB_MPS_WAIT_S;
    for (int k = 0; k < m->ngpu; ++k) {
        int rc = lab_mps_reap(pid[k], deadline);
        if (rc != 0 && st == LAB_OK) {
            snprintf(why, len, LAB_MPS_CONTROL " -d for GPU %s failed (exit status %d)", uuids[k], rc);
            st = lab_err_set(LAB_ERR_IO, "%s", why);
        }
    }
    if (st != LAB_OK) {
        char keep[320];
        snprintf(keep, sizeof keep, "%s", why);
        if (m->running) lab_mps_stop(m);
        else lab_mps_clear(m);
        snprintf(why, len, "%s", keep);
        return lab_err_set(st, "%s", keep);
    }
    snprintf(why, len, "workers share each GPU through a private MPS daemon of its own (%d daemons, %s ...)", n, m->gpu_dir[0]);
    lab_mps_say_share(why, len, !lab_mps_sm_user());
    return LAB_OK;
}

void lab_mps_client(const lab_mps *m, int k)
{
    if (!m || !m->running || m->ngpu == 0) return;
    if (k < 0) {
        unsetenv("CUDA_MPS_PIPE_DIRECTORY");
        unsetenv("CUDA_MPS_LOG_DIRECTORY");
        return;
    }
    k %= m->ngpu;
    char v[300];
    snprintf(v, sizeof v, "%s/pipe", m->gpu_dir[k]);
    setenv("CUDA_MPS_PIPE_DIRECTORY", v, 1);
    snprintf(v, sizeof v, "%s/log", m->gpu_dir[k]);
    setenv("CUDA_MPS_LOG_DIRECTORY", v, 1);
    setenv("CUDA_VISIBLE_DEVICES", m->gpu_uuid[k], 1);
    setenv(LAB_MPS_SM_VAR, lab_mps_sm_share(), 1);
}
