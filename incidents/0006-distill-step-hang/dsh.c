/* dsh: incident 0006, the distillation step-counter hang: parameters, the mpirun launcher with watchdog and
 * orphan check, the criterion over the ranks' collective traces, and the registration. */
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

#include "lab_fs.h"
#include "lab_golden.h"
#include "lab_rng.h"
#include "lab_tensor.h"

#ifndef DSH_NCCL_BIN
#define DSH_NCCL_BIN "build/incidents/0006-distill-step-hang/distill_nccl"
#endif
#ifndef DSH_JOB_BIN
#define DSH_JOB_BIN "build/incidents/0006-distill-step-hang/distill_job"
#endif

void dsh_params_from_seed(uint64_t seed, int variant, dsh_params *p)
{
    uint32_t u0 = lab_rng_u32(seed, DSH_STREAM_PARAMS, 0), u1 = lab_rng_u32(seed, DSH_STREAM_PARAMS, 1),
             u2 = lab_rng_u32(seed, DSH_STREAM_PARAMS, 2);
    memset(p, 0, sizeof *p);
    p->variant = variant;
    p->trainers = 2 + (int)(u0 % 3u);
    p->g = variant == DSH_VAR_BUG ? 2 + (int)(u1 % 3u) : variant == DSH_VAR_FIX ? 1 + (int)(u1 % 4u) : 1;
    p->steps = 3 + (int)(u2 % 4u);
}

void dsh_job_path(const char *root, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s", root && root[0] ? root : ".", DSH_JOB_BIN);
}

void dsh_nccl_path(const char *root, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s", root && root[0] ? root : ".", DSH_NCCL_BIN);
}

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

/* Progress of the job as the traces show it: the sum of records written and finished flags, and whether
 * every rank has a trace and is in (or past) finalize. */
static uint64_t dsh_progress(const char *dir, int world, int *all_present, int *all_final)
{
    uint64_t sum = 0;
    *all_present = 1;
    *all_final = 1;
    for (int r = 0; r < world; ++r) {
        char path[1024];
        snprintf(path, sizeof path, "%s/rank%d.trace", dir, r);
        int fd = open(path, O_RDONLY);
        dsh_trace_head h;
        if (fd < 0 || pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h || h.magic != DSH_TRACE_MAGIC) {
            if (fd >= 0) close(fd);
            *all_present = 0;
            *all_final = 0;
            continue;
        }
        dsh_record last;
        memset(&last, 0, sizeof last);
        if (h.n > 0)
            (void)!pread(fd, &last, sizeof last,
                         (off_t)(offsetof(dsh_trace_file, rec) + ((h.n - 1) % DSH_TRACE_RING) * sizeof last));
        close(fd);
        sum += h.n + (uint64_t)h.finished + (uint64_t)h.exchanges;
        if (!(h.n > 0 && last.op == DSH_OP_FINALIZE)) *all_final = 0;
    }
    return sum;
}

/* In the child about to exec mpirun: the variables of an MPI job this case runs inside (a `lab replay --mpi` rank:
 * OMPI_*, PMIX_*, OPAL_*, ORTE_*) are removed, so that the reproducer's mpirun starts a job of its own, as from a plain
 * shell; inherited, they make it refuse to start (it takes itself for a rank of the outer job). */
static void dsh_leave_outer_job(void)
{
    static const char *const prefixes[] = {"OMPI_", "PMIX_", "OPAL_", "ORTE_"};
    for (size_t i = 0; environ[i];) {
        int outer = 0;
        for (size_t p = 0; p < sizeof prefixes / sizeof *prefixes; ++p)
            outer |= !strncmp(environ[i], prefixes[p], strlen(prefixes[p]));
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

lab_status dsh_job_run(const char *job_bin, const dsh_params *p, uint64_t seed, const dsh_watch *w, const char *dir,
                       dsh_job_result *jr)
{
    memset(jr, 0, sizeof *jr);
    jr->exit_code = -1;
    if (!dsh_on_path("mpirun")) return lab_err_set(LAB_ERR_UNSUPPORTED, "mpirun not found on PATH (Open MPI)");
    if (access(job_bin, X_OK) != 0)
        return lab_err_set(LAB_ERR_UNSUPPORTED, "%s: %s (not built: run make, which installs Open MPI and builds it)", job_bin, strerror(errno));
    int world = p->trainers + 1;
    char np[16], g[16], steps[16], sd[32], t0s[64], dl[32], log[1100];
    snprintf(np, sizeof np, "%d", world);
    snprintf(g, sizeof g, "%d", p->g);
    snprintf(steps, sizeof steps, "%d", p->steps);
    snprintf(sd, sizeof sd, "%llu", (unsigned long long)seed);
    /* The ranks' own last-resort alarm: start-up and the run together. */
    snprintf(dl, sizeof dl, "%.3f", w->startup_s + w->deadline_s);
    snprintf(log, sizeof log, "%s/mpirun.log", dir);
    const char *variant = p->variant == DSH_VAR_FIX ? "fix" : "bug";
    double t0 = dsh_real(), m0 = dsh_mono();
    snprintf(t0s, sizeof t0s, "%.6f", t0);
    const char *argv[40];
    int k = 0;
    argv[k++] = "mpirun";
    argv[k++] = "--oversubscribe";
    argv[k++] = "--bind-to";
    argv[k++] = "none";
    argv[k++] = "--mca";
    argv[k++] = "btl";
    argv[k++] = "self,vader";
    argv[k++] = "--mca";
    argv[k++] = "btl_vader_single_copy_mechanism";
    argv[k++] = "none";
    argv[k++] = "-np";
    argv[k++] = np;
    argv[k++] = job_bin;
    argv[k++] = "--variant";
    argv[k++] = variant;
    argv[k++] = "--g";
    argv[k++] = g;
    argv[k++] = "--steps";
    argv[k++] = steps;
    argv[k++] = "--seed";
    argv[k++] = sd;
    argv[k++] = "--trace";
    argv[k++] = dir;
    argv[k++] = "--t0";
    argv[k++] = t0s;
    argv[k++] = "--deadline";
    argv[k++] = dl;
    char delay[32];
    if (p->startup_delay_s > 0) {
        snprintf(delay, sizeof delay, "%.3f", p->startup_delay_s);
        argv[k++] = "--startup-delay";
        argv[k++] = delay;
    }
    argv[k] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return lab_err_set(LAB_ERR_IO, "0006: fork: %s", strerror(errno));
    if (pid == 0) {
        /* mpirun in a session of its own: its ranks (each in a process group of its own) keep the session
         * id, which is how the orphan check finds them. It dies with this case's process. */
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
    jr->sid = pid;
    uint64_t last = 0;
    double last_change = dsh_mono(), started = NAN;
    jr->startup_s = NAN;
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        double now = dsh_mono();
        if (r == pid) {
            jr->exited = 1;
            jr->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            jr->end_s = dsh_real() - t0;
            break;
        }
        int all_present = 0, all_final = 0;
        uint64_t prog = dsh_progress(dir, world, &all_present, &all_final);
        if (prog != last || !all_present || all_final) {
            /* Start-up (not every rank traced yet) and shutdown (every rank in finalize) are not stalls:
             * only the deadline bounds them. */
            if (prog != last) last = prog;
            last_change = now;
        }
        if (all_present && isnan(started)) {
            started = now;
            jr->startup_s = now - m0;
        }
        const char *why = NULL;
        if (isnan(started)) why = now - m0 > w->startup_s ? "startup" : NULL;
        else if (now - started > w->deadline_s) why = "deadline";
        else if (now - last_change > w->stall_s) why = "stall";
        if (why) {
            jr->never_started = isnan(started);
            jr->hung = !jr->never_started;
            jr->why = why;
            jr->end_s = dsh_real() - t0;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        dsh_sleep(0.01);
    }
    /* Whatever of the job outlived mpirun: same session, or the trace directory (unique per case) on its
     * command line. Killed, then checked again until gone (2 s at most). */
    jr->orphans_found = dsh_orphans(pid, dir, 1);
    double until = dsh_mono() + 2.0;
    do {
        jr->orphans_left = dsh_orphans(pid, dir, 1);
        if (!jr->orphans_left) break;
        dsh_sleep(0.02);
    } while (dsh_mono() < until);
    dsh_last_line(log, jr->log_tail, sizeof jr->log_tail);
    return LAB_OK;
}


/* ---------------------------------------------------------------------------------------------- */
/* The fixed protocol's schedule, from a model of the protocol (not from the job): golden source.   */

#define DSH_GOLDEN_SEED 1
#define DSH_GOLDEN_FILE "schedule_fix_seed1.npy"
#define DSH_SCHED_COLS 7 /* rank, seq, op, root, count, step, micro */

size_t dsh_schedule_fix(const dsh_params *p, uint64_t seed, double *out, size_t cap)
{
    int world = p->trainers + 1;
    size_t n = 0;
    for (int r = 0; r < world; ++r) {
        int d = r == world - 1;
        uint64_t seq = 0;
        for (int s = 0; s <= p->steps; ++s) {
            uint32_t u = lab_rng_u32(seed, DSH_STREAM_SHAPE, (uint64_t)s);
            double rows = (double)((8 << (u & 1u)) * p->g), cols = (double)(512 << ((u >> 1) % 3u));
            double rec[4][5] = {{DSH_OP_BCAST, 0, 2, s, 0},
                                {DSH_OP_GATHER, world - 1, rows * cols, s, 0},
                                {DSH_OP_SCATTER, world - 1, rows * DSH_OUT_COLS, s, 0},
                                {DSH_OP_FINALIZE, -1, 0, p->steps, d ? 0 : p->g - 1}};
            for (int k = s < p->steps ? 0 : 3; k < (s < p->steps ? 3 : 4); ++k) {
                if (n < cap) {
                    double *o = out + n * DSH_SCHED_COLS;
                    o[0] = r, o[1] = (double)seq;
                    memcpy(o + 2, rec[k], sizeof rec[k]);
                }
                n++, seq++;
            }
        }
    }
    return n;
}

lab_status dsh_golden_bless(const char *dir)
{
    lab_status st = lab_fs_mkdirs(dir);
    if (st != LAB_OK) return st;
    dsh_params p;
    dsh_params_from_seed(DSH_GOLDEN_SEED, DSH_VAR_FIX, &p);
    size_t n = dsh_schedule_fix(&p, DSH_GOLDEN_SEED, NULL, 0);
    lab_tensor t = {0};
    size_t shape[2] = {n, DSH_SCHED_COLS};
    lab_golden_manifest m;
    memset(&m, 0, sizeof m);
    snprintf(m.incident, sizeof m.incident, "%s", dsh_incident.id);
    if ((st = lab_tensor_create(&t, LAB_DT_F8, 2, shape)) != LAB_OK) goto done;
    dsh_schedule_fix(&p, DSH_GOLDEN_SEED, t.data, n);
    st = lab_golden_add(&m, dir, DSH_GOLDEN_FILE, &t, LAB_DT_F8, DSH_GOLDEN_SEED,
                        "protocol model dsh_schedule_fix v1: rank,seq,op,root,count,step,micro of the fixed job");
    if (st == LAB_OK) st = lab_golden_manifest_write(dir, &m);
done:
    lab_tensor_free(&t);
    lab_golden_manifest_free(&m);
    return st;
}

/* Compares the ranks' traces with the golden schedule in dir (the case's golden_dir): the number of rows
 * that differ (records missing or extra count too) into *bad. Errors of the golden's load pass through. */
static lab_status dsh_golden_compare(const char *dir, const dsh_rank_trace *tr, int world, size_t *bad)
{
    lab_golden_manifest m;
    memset(&m, 0, sizeof m);
    lab_status st = lab_golden_manifest_read(dir, &m);
    if (st != LAB_OK) return st;
    const lab_golden_entry *e = lab_golden_find(&m, DSH_GOLDEN_FILE);
    lab_tensor t = {0};
    if (!e) st = lab_err_set(LAB_ERR_NOTFOUND, "%s: no %s in MANIFEST.json", dir, DSH_GOLDEN_FILE);
    else st = lab_golden_load(dir, e, &t);
    if (st == LAB_OK && (t.ndim != 2 || t.shape[1] != DSH_SCHED_COLS))
        st = lab_err_set(LAB_ERR_MISMATCH, "%s/%s: expected (n, %d) rows", dir, DSH_GOLDEN_FILE, DSH_SCHED_COLS);
    if (st == LAB_OK) {
        const double *g = t.data;
        size_t n = t.shape[0], held = 0;
        *bad = 0;
        for (int r = 0; r < world; ++r) held += tr[r].present ? tr[r].n : 0;
        for (size_t i = 0; i < n; ++i) {
            const double *o = g + i * DSH_SCHED_COLS;
            int r = (int)o[0];
            const dsh_record *x = NULL;
            if (r >= 0 && r < world && tr[r].present)
                for (size_t k = 0; k < tr[r].n && !x; ++k)
                    if ((double)tr[r].rec[k].seq == o[1]) x = &tr[r].rec[k];
            if (!x || x->op != o[2] || x->root != o[3] || (double)x->count != o[4] || x->step != o[5] ||
                x->micro != o[6])
                (*bad)++;
        }
        if (held > n) *bad += held - n;
    }
    lab_tensor_free(&t);
    lab_golden_manifest_free(&m);
    return st;
}

/* Removes the case's trace directory (its rank*.trace files and mpirun.log). */
static void dsh_rmdir(const char *dir)
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

lab_status dsh_run_case(const lab_case *c, lab_case_result *r, int variant, const dsh_watch *w)
{
    dsh_params p;
    dsh_params_from_seed(c->seed, variant, &p);
    char job[1024];
    dsh_job_path(c->root, job, sizeof job);
    if (c->backend == LAB_BACKEND_CUDA) {
        /* The NCCL job: one process per GPU, so as many trainers as GPUs allow (one GPU is the distiller). */
#ifdef LAB_HAVE_CUDA
        char why[200] = "";
        int gpus = dsh_cuda_gpus(why, sizeof why);
        if (gpus < 2) {
            lab_result_skip_as(r, LAB_SKIP_NEEDS_GPUS, "the NCCL job needs 2 GPUs, found %d%s%s", gpus, why[0] ? ": " : "",
                               why);
            return LAB_OK;
        }
        if (p.trainers > gpus - 1) p.trainers = gpus - 1;
        dsh_nccl_path(c->root, job, sizeof job);
#else
        lab_result_skip(r, "built without CUDA: no NCCL job");
        return LAB_OK;
#endif
    }
    const char *tmp = getenv("TMPDIR");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/lab-0006-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(dir)) return lab_err_set(LAB_ERR_IO, "0006: mkdtemp %s: %s", dir, strerror(errno));
    dsh_job_result jr;
    lab_status st = dsh_job_run(job, &p, c->seed, w, dir, &jr);
    if (st == LAB_ERR_UNSUPPORTED) {
        dsh_rmdir(dir);
        lab_result_skip(r, "%s", lab_err_msg());
        return LAB_OK;
    }
    if (st != LAB_OK) {
        dsh_rmdir(dir);
        return st;
    }
    if (jr.never_started) {
        dsh_rmdir(dir);
        return lab_err_set(LAB_ERR_IO, "0006: the job did not start within %.0f s (not every rank traced): a harness "
                           "failure, not a hang", w->startup_s);
    }
    int world = p.trainers + 1;
    dsh_rank_trace *tr = calloc((size_t)world, sizeof *tr);
    if (!tr) {
        dsh_rmdir(dir);
        return lab_err_set(LAB_ERR_NOMEM, "0006: out of memory for traces");
    }
    dsh_analysis a;
    st = dsh_trace_read(dir, world, tr);
    if (st == LAB_OK) st = dsh_trace_analyze(tr, world, &a);
    if (st != LAB_OK) {
        free(tr);
        dsh_rmdir(dir);
        return st;
    }
    /* The case's trace for Perfetto and the timeline figure (dsh_trace_export); a failure to write it is not the case's. */
    char trace_stem[1200];
    dsh_trace_export_stem(c->root, c->variant ? c->variant->name : "case", lab_backend_name(c->backend), c->seed,
                          trace_stem, sizeof trace_stem);
    int traced = dsh_trace_export(trace_stem, tr, world, &a) == LAB_OK;
    /* At the golden seed the fixed job must follow the modelled schedule record for record. */
    double golden_bad = NAN;
    if (variant == DSH_VAR_FIX && c->seed == DSH_GOLDEN_SEED && c->backend == LAB_BACKEND_CPU && c->golden_dir) {
        size_t bad = 0;
        st = dsh_golden_compare(c->golden_dir, tr, world, &bad);
        if (st != LAB_OK) {
            free(tr);
            dsh_rmdir(dir);
            return st;
        }
        golden_bad = (double)bad;
    }
    int finished = 1, steps_ok = 1, outputs_bad = 0, empty = 0;
    for (int k = 0; k < world; ++k) {
        finished &= tr[k].present && tr[k].head.finished;
        if (tr[k].present) {
            steps_ok &= tr[k].head.step == p.steps;
            outputs_bad += tr[k].head.outputs_bad;
            empty += tr[k].head.empty_shapes;
        } else {
            steps_ok = 0;
        }
    }
    free(tr);
    dsh_rmdir(dir);
    if (jr.orphans_left > 0)
        return lab_err_set(LAB_ERR_IO, "0006: %d process(es) of the job still alive 2 s after SIGKILL", jr.orphans_left);

    lab_result_metric(r, "n_trainers", p.trainers);
    lab_result_metric(r, "G", p.g);
    lab_result_metric(r, "steps", p.steps);
    lab_result_metric(r, "hung", jr.hung);
    lab_result_metric(r, "time_to_detect_s", jr.hung ? jr.end_s : NAN);
    lab_result_metric(r, "job_s", jr.end_s);
    lab_result_metric(r, "startup_s", jr.startup_s);
    lab_result_metric(r, "first_bad_seq", (double)a.first_bad_seq);
    lab_result_metric(r, "first_step_seq", (double)a.first_step_seq);
    lab_result_metric(r, "collectives_matched", (double)a.n_matched);
    lab_result_metric(r, "empty_shapes", empty);
    lab_result_metric(r, "outputs_bad", outputs_bad);
    if (isnan(golden_bad)) lab_result_metric(r, "orphans_found", jr.orphans_found);
    else lab_result_metric(r, "golden_mismatch", golden_bad); /* 12 metrics at most: orphans_found is 0 or an ERROR here */

    int clean = !jr.hung && jr.exited && jr.exit_code == 0 && finished && steps_ok && a.first_bad_seq < 0 &&
                a.first_step_seq < 0 && a.empty_shape_seq < 0 && empty == 0 && outputs_bad == 0 && !(golden_bad > 0);
    char what[160];
    if (jr.hung)
        snprintf(what, sizeof what, "HANG (%s, killed)", jr.why); /* the times are metrics: details repeat */
    else if (!jr.exited || jr.exit_code != 0)
        snprintf(what, sizeof what, "mpirun exited with status %d (%s)", jr.exit_code, jr.log_tail);
    else
        snprintf(what, sizeof what, "completed %d steps%s%s", p.steps,
                 outputs_bad ? ", teacher outputs mismatched" : "", finished && steps_ok ? "" : ", steps incomplete");
    if (golden_bad > 0)
        snprintf(what + strlen(what), sizeof what - strlen(what), ", %.0f records off the golden schedule", golden_bad);
    if (!clean && traced) fprintf(stderr, "0006 seed %llu: trace of this case (Perfetto): %s.trace.json\n",
                                  (unsigned long long)c->seed, trace_stem);
    /* The step-counter finding first: the case's detail line holds 240 characters. */
    if (a.counters[0])
        lab_result_verdict(r, clean, "N=%d G=%d steps=%d: %s; %s; %s", p.trainers, p.g, p.steps, what, a.counters,
                           a.verdict);
    else
        lab_result_verdict(r, clean, "N=%d G=%d steps=%d: %s; %s", p.trainers, p.g, p.steps, what, a.verdict);
    return LAB_OK;
}

static const dsh_watch dsh_default_watch = {DSH_STALL_S, DSH_DEADLINE_S, DSH_STARTUP_S};

/* The variant's run (param: DSH_VAR_*), on Open MPI for the CPU backend and NCCL for CUDA. */
static lab_status dsh_run(const lab_case *c, lab_case_result *r)
{
    return dsh_run_case(c, r, c->variant->param, &dsh_default_watch);
}

#ifdef LAB_HAVE_CUDA
#define DSH_RUN_CUDA dsh_run
#else
#define DSH_RUN_CUDA NULL
#endif

/* On CUDA every case is an NCCL job over two GPUs (trainer and distiller), given to it alone. */
static const lab_variant dsh_variants[] = {
    {.name = "fix", .role = LAB_ROLE_FIX, .param = DSH_VAR_FIX, .gpus = 2,
     .what = "trainers exchange once per accumulation cycle (first micro-step, G micro-batches at once); the G-aware "
             "distiller steps once per cycle (G 1..4)"},
    {.name = "bug-step-counter", .role = LAB_ROLE_BUG, .param = DSH_VAR_BUG, .gpus = 2, .detect = LAB_DETECT_FAIL,
     .what = "as it was: trainers exchange every micro-step and count a step per G, the distiller counts a step per "
             "exchange (G 2..4): it finishes early, the job hangs"},
    {.name = "old-counters-g1", .role = LAB_ROLE_FIX, .param = DSH_VAR_OLD_G1, .gpus = 2,
     .what = "the old counters without accumulation (G = 1): both sides count the same, so the job completes (the "
             "bug needs G > 1)"},
};

/* What the criterion compares, for plots (lab_metric_spec): the first separates bug and fix. */
static const lab_metric_spec dsh_metric_specs[] = {
    {"hung", 0, 1, NULL, "the job hung (1) or completed (0): every bug seed hangs, the fixes complete"},
    {"job_s", DSH_DEADLINE_S, 1, NULL, "wall time of the job against the deadline: a stalled job is killed after the stall window"},
};

const lab_incident dsh_incident = {
    .id = "0006-distill-step-hang",
    .title = "distillation step-counter hang under gradient accumulation (Open MPI)",
    .summary = "Training ranks and a distillation rank exchange a batch shape, the batch and teacher outputs every "
               "step. Under gradient accumulation the trainers counted a step per G micro-steps but exchanged on "
               "every micro-step, while the distiller counted a step per exchange: it ran out of steps after 1/G of "
               "the exchanges and the trainers hung in the next broadcast. Real ranks on Open MPI; a watchdog kills "
               "the job, and the ranks' collective traces name the distiller's step counter.",
    .variants = dsh_variants,
    .n_variants = (int)(sizeof dsh_variants / sizeof dsh_variants[0]),
    .run_cpu = dsh_run,
    .run_cuda = DSH_RUN_CUDA,
    .plot_metric = "time_to_detect_s",
    .plot_log = 0,
    .timeout_s = 90, /* the runner's watchdog: above start-up (60 s) plus the run's deadline (8 s) */
    .golden_bless = dsh_golden_bless,
    .drift_metric = NULL,
    .figures = dsh_trace_figures,
    .default_seeds = 16,
    .bench = NULL,
    .metric_specs = dsh_metric_specs,
    .n_metric_specs = (int)(sizeof dsh_metric_specs / sizeof dsh_metric_specs[0]),
};
LAB_INCIDENT_REGISTER(dsh_incident);
