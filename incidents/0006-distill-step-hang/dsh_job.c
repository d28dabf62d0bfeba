/* dsh_job: incident 0006's launcher: the long-lived MPI or NCCL jobs of this process (each started with mpirun when
 * a seed needs it, reused for the next seeds; several take turns while one retires a given-up communicator), one seed
 * at a time through the control file, the hang rule, the abort of a stalled seed and the orphan check (dsh.h). */
#define _GNU_SOURCE
#include "dsh.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* One of this process's jobs. */
typedef struct {
    pid_t pid;                 /* mpirun, leader of the job's session; 0: no job */
    int reaped;                /* mpirun exited (and was waited for): only what it left behind can remain */
    dsh_ctrl *ctrl;
    char dir[512];             /* the job's directory: control file and mpirun.log */
    char bin[1024];
    int world;
    double delay;              /* --startup-delay it was started with */
    uint64_t epoch;
    uint64_t retiring;         /* the epoch whose communicator its ranks retire (abort_epoch); 0: none */
    int abandoned;             /* epochs abandoned since it started */
    int exit_code;             /* mpirun's status once it exited (-1 killed) */
} dsh_job_state;

static dsh_job_state dsh_jobs[DSH_JOBS_MAX];
static dsh_job_state *dsh_last; /* the job of the last seed */

static double dsh_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double dsh_real(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void dsh_sleep(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* 1 when an executable named `name` is on PATH. */
static int dsh_on_path(const char *name)
{
    const char *path = getenv("PATH");
    if (!path) return 0;
    char buf[4096];
    for (const char *p = path; *p;) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        snprintf(buf, sizeof buf, "%.*s/%s", (int)n, p, name);
        if (n && access(buf, X_OK) == 0) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

int dsh_orphans(pid_t sid, const char *tag, int kill_them)
{
    DIR *d = opendir("/proc");
    if (!d) return 0;
    int count = 0;
    pid_t self = getpid();
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0 || pid == self) continue;
        char path[64], buf[1024];
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        char *rp = strrchr(buf, ')');
        char state = 0;
        int ppid = 0, pgrp = 0, session = 0;
        if (!rp || sscanf(rp + 1, " %c %d %d %d", &state, &ppid, &pgrp, &session) != 4) continue;
        if (state == 'Z' || state == 'X') continue; /* a zombie runs nothing; its parent or init reaps it */
        int match = sid > 0 && session == sid;
        if (!match && tag && tag[0]) {
            snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
            int fd = open(path, O_RDONLY);
            if (fd >= 0) {
                ssize_t m = read(fd, buf, sizeof buf - 1);
                close(fd);
                if (m > 0) {
                    for (ssize_t i = 0; i < m; ++i)
                        if (!buf[i]) buf[i] = ' ';
                    buf[m] = 0;
                    match = strstr(buf, tag) != NULL;
                }
            }
        }
        if (!match) continue;
        count++;
        if (kill_them) kill((pid_t)pid, SIGKILL);
    }
    closedir(d);
    return count;
}

/* In the child about to exec mpirun: the variables of an MPI job this case runs inside (a `lab replay --mpi` rank:
 * OMPI_*, PMIX_*, OPAL_*, ORTE_*) are removed, so that the reproducer's mpirun starts a job of its own, as from a plain
 * shell; inherited, they make it refuse to start (it takes itself for a rank of the outer job). The user's own settings
 * of how to launch and connect stay (OMPI_MCA_ plm, btl, pml, mtl, osc, rmaps, hwloc; OMPI_ALLOW_RUN_AS_ROOT*): a host
 * whose environment names the launch agent needs it (GPU images without ssh set OMPI_MCA_plm_rsh_agent). Where no
 * agent is named and neither ssh nor rsh is on PATH, the agent is named /bin/false: the job is always local to this host,
 * so Open MPI never calls it, but without one Open MPI 4 refuses to start ("plm_rsh_agent ... could not be found"). */
static void dsh_leave_outer_job(void)
{
    static const char *const prefixes[] = {"OMPI_", "PMIX_", "OPAL_", "ORTE_"};
    static const char *const keep[] = {"OMPI_MCA_plm_", "OMPI_MCA_btl", "OMPI_MCA_pml", "OMPI_MCA_mtl", "OMPI_MCA_osc",
                                       "OMPI_MCA_rmaps_", "OMPI_MCA_hwloc_", "OMPI_ALLOW_RUN_AS_ROOT"};
    for (size_t i = 0; environ[i];) {
        int outer = 0;
        for (size_t p = 0; p < sizeof prefixes / sizeof *prefixes; ++p)
            outer |= !strncmp(environ[i], prefixes[p], strlen(prefixes[p]));
        for (size_t k = 0; k < sizeof keep / sizeof *keep; ++k)
            outer &= strncmp(environ[i], keep[k], strlen(keep[k])) != 0;
        if (!outer) {
            ++i;
            continue;
        }
        char name[256];
        const char *was = environ[i];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(was, "="), was);
        unsetenv(name); /* environ shifts down: the same index is looked at again */
        if (environ[i] == was) ++i; /* a name too long to copy stays */
    }
    if (!getenv("OMPI_MCA_plm_rsh_agent") && !dsh_on_path("ssh") && !dsh_on_path("rsh"))
        setenv("OMPI_MCA_plm_rsh_agent", access("/bin/false", X_OK) == 0 ? "/bin/false" : "false", 1);
}

/* The last non-empty line of file path into buf ("" if none). */
static void dsh_last_line(const char *path, char *buf, size_t cap)
{
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        if (n) snprintf(buf, cap, "%s", line);
    }
    fclose(f);
}

/* Removes a directory's files and the directory. */
void dsh_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char path[1200];
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* Ends the job: the quit word, `grace` seconds for mpirun to exit, then SIGKILL to its session and to every process
 * with the job's directory on its command line, checked until none is left (2 s at most). The counts go to
 * *found and *left (may be NULL). */
static void dsh_job_end(dsh_job_state *j, double grace, int *found, int *left)
{
    int f = 0, l = 0;
    if (j->pid > 0) {
        if (!j->reaped) {
            if (j->ctrl) dsh_st32(&j->ctrl->quit, 1);
            int status = 0;
            double until = dsh_mono() + grace;
            pid_t r = 0;
            while ((r = waitpid(j->pid, &status, WNOHANG)) == 0 && dsh_mono() < until) dsh_sleep(0.005);
            if (r == 0) {
                kill(-j->pid, SIGKILL);
                kill(j->pid, SIGKILL);
                waitpid(j->pid, &status, 0);
            }
        }
        f = dsh_orphans(j->pid, j->dir, 1);
        double until = dsh_mono() + 2.0;
        do {
            l = dsh_orphans(j->pid, j->dir, 1);
            if (!l) break;
            dsh_sleep(0.02);
        } while (dsh_mono() < until);
    }
    dsh_ctrl_unmap(j->ctrl);
    if (j->dir[0]) dsh_rmdir(j->dir);
    memset(j, 0, sizeof *j);
    if (j == dsh_last) dsh_last = NULL;
    if (found) *found = f;
    if (left) *left = l;
}

/* The job's ranks retire the communicator of its last epoch (they see abort_epoch between epochs, dsh_proto.h). */
static void dsh_job_retire(dsh_job_state *j)
{
    if (j->retiring == j->epoch) return;
    dsh_st64(&j->ctrl->abort_epoch, j->epoch);
    j->retiring = j->epoch;
    j->abandoned++;
}

void dsh_job_retire_comm(void)
{
    if (dsh_last && dsh_last->pid > 0 && !dsh_last->reaped) dsh_job_retire(dsh_last);
}

/* 1 when the job's mpirun has exited (reaped now or before). */
static int dsh_job_gone(dsh_job_state *j)
{
    int status = 0;
    if (!j->reaped && waitpid(j->pid, &status, WNOHANG) == j->pid) j->reaped = 1;
    return j->reaped;
}

/* 1 when every rank of the job has retired what it was told to (or nothing was), -1 when mpirun is gone, else 0. */
static int dsh_job_ready(dsh_job_state *j)
{
    if (dsh_job_gone(j)) return -1;
    for (int r = 0; r < j->world; ++r)
        if (dsh_ld64(&j->ctrl->ready_epoch[r]) < j->retiring) return 0;
    return 1;
}

static pid_t dsh_job_owner; /* the process whose atexit ends the jobs (a forked child must not) */

void dsh_job_stop(void)
{
    if (getpid() != dsh_job_owner) return;
    for (int k = 0; k < DSH_JOBS_MAX; ++k) dsh_job_end(&dsh_jobs[k], 1.0, NULL, NULL);
}

/* Starts job *j: world ranks of bin under mpirun in a session of its own, and waits until every rank is serving
 * (startup_s at most). LAB_OK with *started 0 when it did not come up in time (it is then ended). */
static lab_status dsh_job_start(dsh_job_state *j, const char *bin, int world, double delay, double startup_s,
                                int *started, double *took, char *tail, size_t tail_cap, char *dir_out, size_t dir_cap)
{
    *started = 0;
    const char *tmp = getenv("TMPDIR");
    snprintf(j->dir, sizeof j->dir, "%s/lab-0006-job-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(j->dir)) {
        lab_status st = lab_err_set(LAB_ERR_IO, "0006: mkdtemp %s: %s", j->dir, strerror(errno));
        j->dir[0] = 0;
        return st;
    }
    snprintf(dir_out, dir_cap, "%s", j->dir);
    char ctrl[600], log[600], np[16], dl[32];
    snprintf(ctrl, sizeof ctrl, "%s/ctrl", j->dir);
    snprintf(log, sizeof log, "%s/mpirun.log", j->dir);
    snprintf(np, sizeof np, "%d", world);
    snprintf(dl, sizeof dl, "%.3f", delay);
    j->ctrl = dsh_ctrl_map(ctrl, 1, world);
    if (!j->ctrl) {
        lab_status st = lab_err_set(LAB_ERR_IO, "0006: %s", lab_err_msg());
        dsh_job_end(j, 0, NULL, NULL);
        return st;
    }
    snprintf(j->bin, sizeof j->bin, "%s", bin);
    j->world = world;
    j->delay = delay;
    const char *argv[] = {"mpirun", "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader", "--mca",
                          "btl_vader_single_copy_mechanism", "none", "-np", np, bin, "--ctrl", ctrl,
                          delay > 0 ? "--startup-delay" : NULL, dl, NULL};
    fflush(NULL);
    double m0 = dsh_mono();
    pid_t pid = fork();
    if (pid < 0) {
        lab_status st = lab_err_set(LAB_ERR_IO, "0006: fork: %s", strerror(errno));
        dsh_job_end(j, 0, NULL, NULL);
        return st;
    }
    if (pid == 0) {
        /* mpirun in a session of its own: its ranks (each in a process group of its own) keep the session id,
         * which is how the orphan check finds them. It dies with this process. */
        setsid();
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int nul = open("/dev/null", O_RDONLY);
        if (fd >= 0) dup2(fd, STDOUT_FILENO), dup2(fd, STDERR_FILENO);
        if (nul >= 0) dup2(nul, STDIN_FILENO);
        dsh_leave_outer_job();
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
        setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
        setenv("NCCL_NVLS_ENABLE", "0", 1); /* the NCCL job: no NVLink multicast */
        execvp("mpirun", (char *const *)argv);
        fprintf(stderr, "exec mpirun: %s\n", strerror(errno));
        _exit(127);
    }
    j->pid = pid;
    if (dsh_job_owner != getpid()) {
        dsh_job_owner = getpid();
        atexit(dsh_job_stop);
    }
    for (;;) {
        int up = 0, status = 0;
        for (int r = 0; r < world; ++r) up += dsh_ld64(&j->ctrl->alive[r]) > 0;
        if (up == world) break;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            dsh_last_line(log, tail, tail_cap);
            j->reaped = 1;
            dsh_job_end(j, 0, NULL, NULL);
            return LAB_OK;
        }
        if (dsh_mono() - m0 > startup_s) {
            dsh_last_line(log, tail, tail_cap);
            dsh_job_end(j, 0, NULL, NULL);
            return LAB_OK;
        }
        dsh_sleep(0.005);
    }
    *took = dsh_mono() - m0;
    *started = 1;
    return LAB_OK;
}

/* One rank's trace head as the lab polls it. */
typedef struct {
    int present, finished, waiting;
    uint64_t n, polls;
    int32_t exchanges;
    double last_t; /* the latest record's entry or completion, seconds since the epoch's t0 */
} dsh_snap;

static void dsh_snap_read(const char *dir, int world, dsh_snap *s)
{
    for (int r = 0; r < world; ++r) {
        char path[1024];
        snprintf(path, sizeof path, "%s/rank%d.trace", dir, r);
        memset(&s[r], 0, sizeof s[r]);
        int fd = open(path, O_RDONLY);
        dsh_trace_head h;
        if (fd < 0 || pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h || h.magic != DSH_TRACE_MAGIC) {
            if (fd >= 0) close(fd);
            continue;
        }
        dsh_record last;
        memset(&last, 0, sizeof last);
        if (h.n > 0)
            (void)!pread(fd, &last, sizeof last,
                         (off_t)(offsetof(dsh_trace_file, rec) + ((h.n - 1) % DSH_TRACE_RING) * sizeof last));
        close(fd);
        s[r].present = 1;
        s[r].finished = h.finished;
        s[r].waiting = h.waiting;
        s[r].n = h.n;
        s[r].polls = h.polls;
        s[r].exchanges = h.exchanges;
        s[r].last_t = last.t_done > last.t_enter ? last.t_done : last.t_enter;
    }
}

/* The job for the next seed, among the first njobs slots, looked at from the last seed's on (so it keeps serving while
 * it is ready, and the others take turns after it): the first ready one, else a free slot (pid 0: the caller starts a
 * job there), else the first to become ready. A job found gone is ended and its slot taken; jobs still not ready after
 * startup_s (ranks that cannot retire their communicator) are all ended. *waited: the seconds spent waiting. */
static dsh_job_state *dsh_job_pick(int njobs, double startup_s, double *waited)
{
    double m0 = dsh_mono();
    int first = dsh_last && dsh_last < dsh_jobs + njobs ? (int)(dsh_last - dsh_jobs) : 0;
    dsh_job_state *j = NULL;
    for (;;) {
        dsh_job_state *free_slot = NULL;
        for (int i = 0; i < njobs && !j; ++i) {
            dsh_job_state *o = &dsh_jobs[(first + i) % njobs];
            int ready = o->pid > 0 ? dsh_job_ready(o) : 0;
            if (ready < 0) dsh_job_end(o, 0, NULL, NULL);
            if (o->pid <= 0) free_slot = free_slot ? free_slot : o;
            else if (ready == 1) j = o;
        }
        if (!j) j = free_slot;
        if (j) break;
        if (dsh_mono() - m0 > startup_s) {
            for (int k = 0; k < njobs; ++k) dsh_job_end(&dsh_jobs[k], 1.0, NULL, NULL);
            j = &dsh_jobs[0];
            break;
        }
        dsh_sleep(0.002);
    }
    *waited = dsh_mono() - m0;
    return j;
}

lab_status dsh_job_run(const char *job_bin, const dsh_params *p, uint64_t seed, const dsh_watch *w, const char *dir,
                       dsh_job_result *jr)
{
    memset(jr, 0, sizeof *jr);
    jr->exit_code = -1;
    jr->detect_s = NAN;
    jr->startup_s = 0;
    if (!dsh_on_path("mpirun")) return lab_err_set(LAB_ERR_UNSUPPORTED, "mpirun not found on PATH (Open MPI)");
    if (access(job_bin, X_OK) != 0)
        return lab_err_set(LAB_ERR_UNSUPPORTED, "%s: %s (not built: run make, which installs Open MPI and builds it)",
                           job_bin, strerror(errno));
    int world = p->job_world > p->trainers + 1 ? p->job_world : p->trainers + 1;
    int njobs = p->jobs < 1 ? 1 : p->jobs > DSH_JOBS_MAX ? DSH_JOBS_MAX : p->jobs;
    /* Jobs that are gone, of another shape or binary, or that carry too many abandoned MPI seeds are ended, and so are
     * those beyond the jobs p keeps. */
    for (int k = 0; k < DSH_JOBS_MAX; ++k) {
        dsh_job_state *o = &dsh_jobs[k];
        if (o->pid <= 0) continue;
        if (k >= njobs || dsh_job_gone(o) || o->world != world || strcmp(o->bin, job_bin) || o->delay != p->startup_delay_s ||
            (p->transport_leaks && o->abandoned >= DSH_MPI_ABANDON_MAX)) {
            jr->respawned = 1;
            dsh_job_end(o, 1.0, NULL, NULL);
        }
    }
    dsh_job_state *j = dsh_job_pick(njobs, w->startup_s, &jr->wait_s);
    jr->job = (int)(j - dsh_jobs);
    jr->reused = j->pid > 0;
    if (!jr->reused) {
        snprintf(jr->job_dir, sizeof jr->job_dir, "(starting)");
        int started = 0;
        double took = NAN;
        lab_status st = dsh_job_start(j, job_bin, world, p->startup_delay_s, w->startup_s, &started, &took,
                                      jr->log_tail, sizeof jr->log_tail, jr->job_dir, sizeof jr->job_dir);
        if (st != LAB_OK) return st;
        if (!started) {
            jr->never_started = 1;
            jr->why = "startup";
            return LAB_OK;
        }
        jr->startup_s = took;
    }
    dsh_last = j;
    dsh_ctrl *c = j->ctrl;
    int n = p->trainers + 1;
    jr->sid = j->pid;
    snprintf(jr->job_dir, sizeof jr->job_dir, "%s", j->dir);
    c->variant = p->variant, c->trainers = p->trainers, c->g = p->g, c->steps = p->steps, c->seed = seed;
    c->crash_rank = p->crash_rank;
    c->retire_delay_s = p->retire_delay_s;
    snprintf(c->trace_dir, sizeof c->trace_dir, "%s", dir);
    double t0 = dsh_real(), m0 = dsh_mono();
    c->t0 = t0;
    uint64_t ep = ++j->epoch;
    dsh_st64(&c->epoch, ep);

    dsh_snap *s = calloc((size_t)n, sizeof *s), *prev = calloc((size_t)n, sizeof *prev);
    uint64_t *polls0 = calloc((size_t)n, sizeof *polls0);
    if (!s || !prev || !polls0) {
        free(s), free(prev), free(polls0);
        dsh_job_end(j, 0, NULL, NULL);
        return lab_err_set(LAB_ERR_NOMEM, "0006: out of memory");
    }
    double quiet_since = m0, started = NAN;
    int job_gone = 0;
    for (;;) {
        double now = dsh_mono();
        int status = 0;
        if (waitpid(j->pid, &status, WNOHANG) == j->pid) {
            j->reaped = 1;
            jr->exited = 1;
            jr->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            jr->end_s = dsh_real() - t0;
            job_gone = 1;
            break;
        }
        int done = 0, ok = 0, err = 0;
        for (int r = 0; r < world; ++r) {
            int d = dsh_ld64(&c->done_epoch[r]) == ep, how = dsh_ld32(&c->done_how[r]);
            done += d, ok += d && how == DSH_DONE_OK, err += d && how == DSH_DONE_ERROR;
        }
        if (done == world) {
            jr->end_s = dsh_real() - t0;
            jr->completed = ok == world;
            jr->ranks_error = err;
            break;
        }
        dsh_snap_read(dir, n, s);
        int present = 1, blocked = 1, all_final = 1, polled = 1, changed = 0;
        for (int r = 0; r < n; ++r) {
            /* progress: a record, an exchange completed, the loop left */
            changed |= s[r].present != prev[r].present || s[r].n != prev[r].n || s[r].finished != prev[r].finished ||
                       s[r].exchanges != prev[r].exchanges;
            prev[r] = s[r];
            int jrank = r < p->trainers ? r : world - 1, left = dsh_ld64(&c->done_epoch[jrank]) == ep;
            present &= s[r].present;
            blocked &= s[r].finished || s[r].waiting || left;
            all_final &= s[r].finished || left;
        }
        if (changed || !present) {
            quiet_since = now;
            for (int r = 0; r < n; ++r) polls0[r] = s[r].polls;
        }
        for (int r = 0; r < n; ++r)
            if (s[r].waiting && !s[r].finished && s[r].polls - polls0[r] < DSH_QUIET_POLLS) polled = 0;
        if (present && isnan(started)) started = now;
        const char *why = NULL;
        if (isnan(started)) why = now - m0 > w->startup_s ? "startup" : NULL;
        else if (now - started > w->deadline_s) why = "deadline";
        else if (blocked && !all_final && polled && now - quiet_since >= w->quiet_s) why = "deadlock";
        else if (now - quiet_since > w->stall_s) why = "stall";
        if (why) {
            jr->never_started = isnan(started);
            jr->hung = !jr->never_started;
            jr->why = why;
            jr->end_s = dsh_real() - t0;
            double last = 0;
            for (int r = 0; r < n; ++r)
                if (s[r].last_t > last) last = s[r].last_t;
            jr->detect_s = jr->end_s - last;
            /* Abandon the seed: every rank leaves it on the abort word, or the job is ended. */
            dsh_st64(&c->abort_epoch, ep);
            double until = dsh_mono() + DSH_ABORT_GRACE_S;
            int left = 0;
            while (dsh_mono() < until) {
                left = 0;
                for (int r = 0; r < world; ++r) left += dsh_ld64(&c->done_epoch[r]) == ep;
                if (left == world) break;
                if (dsh_job_gone(j)) break;
                dsh_sleep(0.002);
            }
            jr->abandoned_clean = left == world;
            if (left != world) job_gone = 1;
            else dsh_job_retire(j); /* its ranks retire the communicator while the next seed runs elsewhere */
            break;
        }
        dsh_sleep(0.002);
    }
    for (int r = 0; r < world; ++r) /* every rank made the communicator before it traced */
        if (c->begin_s[r] > jr->comm_s) jr->comm_s = c->begin_s[r];
    free(s), free(prev), free(polls0);
    if (job_gone) {
        char log[600];
        snprintf(log, sizeof log, "%s/mpirun.log", j->dir);
        dsh_last_line(log, jr->log_tail, sizeof jr->log_tail);
        dsh_job_end(j, 0.0, &jr->orphans_found, &jr->orphans_left);
    }
    return LAB_OK;
}
