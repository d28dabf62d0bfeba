/* lab_mpi: replay scale-out across MPI ranks (Open MPI): a deterministic split of the cases, one GPU per
 * local rank, results streamed to rank 0, and a rank that dies or hangs reported instead of lost. */
#include "lab_mpi.h"

#include <string.h>

#include "lab_args.h"

static int lab_mpi_my_rank;

int lab_mpi_rank(void) { return lab_mpi_my_rank; }

#ifndef LAB_HAVE_MPI

lab_status lab_mpi_check(void)
{
    return lab_err_set(LAB_ERR_UNSUPPORTED, "--mpi: this build of the lab has no MPI (built with MPI=0, or a "
                                            "sanitizer build); rebuild with `make MPI=1`");
}

lab_status lab_mpi_replay(const lab_replay_opts *opts, FILE *report, lab_verdict *verdict, lab_case_record **recs,
                          size_t *n_recs)
{
    (void)opts;
    (void)report;
    memset(verdict, 0, sizeof *verdict);
    verdict->exit_status = LAB_EXIT_FAILED;
    *recs = NULL;
    *n_recs = 0;
    return lab_mpi_check();
}

#else

#include <cJSON.h>
#include <errno.h>
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "lab_args.h"
#include "lab_fs.h"
#include "lab_sched.h"

#define LAB_MPI_STR2(x) #x
#define LAB_MPI_STR(x) LAB_MPI_STR2(x)

lab_status lab_mpi_check(void) { return LAB_OK; }

/* The exit status the end-of-job deadline uses when MPI_Finalize or MPI_Abort does not return in time. */
static volatile sig_atomic_t lab_mpi_end_code;

static void lab_mpi_deadline_hit(int sig)
{
    (void)sig;
    static const char msg[] = "lab replay --mpi: MPI did not end within its grace of " LAB_MPI_STR(LAB_MPI_END_GRACE_S)
                              " s; exiting without it (the files are written)\n";
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
    _exit(lab_mpi_end_code);
}

/* Bounds what follows (MPI_Finalize, MPI_Abort) by LAB_MPI_END_GRACE_S: when it does not return in time,
 * the process exits with `code` from a SIGALRM handler. Everything the caller wants kept must be written
 * and flushed before. */
static void lab_mpi_deadline_arm(int code)
{
    lab_mpi_end_code = code;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = lab_mpi_deadline_hit;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    alarm((unsigned)LAB_MPI_END_GRACE_S);
}

/* A rank never outlives its launcher (mpirun, orted, srun's step daemon): killed with it. The parent is
 * compared before and after, so a launcher that died in between is caught too. */
static void lab_mpi_die_with_launcher(void)
{
    pid_t parent = getppid();
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return;
    if (getppid() != parent) raise(SIGKILL);
}

enum { LAB_MPI_TAG_HELLO = 7101, LAB_MPI_TAG_CASE, LAB_MPI_TAG_DONE };

/* What a rank tells rank 0 first: who and where it is. Sent as bytes: every rank runs the same binary. */
typedef struct {
    int32_t rank, local_rank, local_size, jobs;
    int64_t pid;
    uint64_t n_total, n_mine;      /* cases in the whole list as this rank built it, cases of this rank */
    char host[128];
    char device[224];
} lab_mpi_hello;

/* One finished case: its index in the canonical list and its outcome. */
typedef struct {
    uint64_t index;
    lab_job_outcome o;
} lab_mpi_case_msg;

/* A rank's last word: how many cases it sent and whether its own harness failed. */
typedef struct {
    uint64_t n_sent;
    double wall_s;
    int32_t status;
    char error[240];
} lab_mpi_done_msg;

typedef enum { LAB_RANK_RUNNING, LAB_RANK_DONE, LAB_RANK_CRASHED, LAB_RANK_HUNG, LAB_RANK_BAD } lab_mpi_rank_status;

static const char *lab_mpi_status_name(lab_mpi_rank_status s)
{
    static const char *names[] = {"running", "done", "crashed", "hung", "bad"};
    return names[s];
}

/* Rank 0's view of one rank. */
typedef struct {
    int have_hello;
    lab_mpi_hello hello;
    lab_mpi_rank_status status;
    size_t n_expected, n_got;
    double last_heard;
    double max_watchdog;            /* longest watchdog among the rank's cases */
    double wall_s;                  /* the rank's own run time (from its DONE) */
    char why[240];                  /* crash / hang / error explanation */
} lab_mpi_peer;

static double lab_mpi_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Picks this rank's GPU by local rank, without any CUDA call, among the GPUs the scheduler's probe sees
 * (lab_sched_probe: a CUDA_VISIBLE_DEVICES list already set by a scheduler, else the driver's listing in PCI
 * order), makes it the only visible one (CUDA_VISIBLE_DEVICES; CUDA_DEVICE_ORDER=PCI_BUS_ID for the driver's
 * listing, unless already set) and describes it into desc. Without a GPU nothing is set and desc says why. */
static void lab_mpi_pick_device(int local_rank, int local_size, char *desc, size_t len)
{
    lab_sched_machine m;
    lab_sched_probe(&m);
    if (m.ngpu == 0) {
        snprintf(desc, len, "none (%s)", m.source);
        return;
    }
    int idx = local_rank % m.ngpu;
    char mine[sizeof m.gpu[0]];
    snprintf(mine, sizeof mine, "%s", m.gpu[idx]);
    if (!getenv("CUDA_VISIBLE_DEVICES")) setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0); /* the listing's order */
    setenv("CUDA_VISIBLE_DEVICES", mine, 1);
    snprintf(desc, len, "cuda:%s%s%s (of %d GPU%s from %s%s)", mine, m.what[idx][0] ? " " : "", m.what[idx], m.ngpu,
             m.ngpu > 1 ? "s" : "", m.source, local_size > m.ngpu ? ", shared with other ranks" : "");
}

/* LAB_MPI_TEST_FAULT=crash:R | hang:R, for the tests of rank failure. */
typedef struct {
    int kind;    /* 0 none, 1 crash, 2 hang */
    int rank;
} lab_mpi_fault;

static lab_status lab_mpi_fault_parse(lab_mpi_fault *f, int size)
{
    f->kind = 0;
    f->rank = -1;
    const char *s = getenv("LAB_MPI_TEST_FAULT");
    if (!s || !*s) return LAB_OK;
    char *end;
    if (!strncmp(s, "crash:", 6)) f->kind = 1;
    else if (!strncmp(s, "hang:", 5)) f->kind = 2;
    else return lab_err_set(LAB_ERR_ARG, "LAB_MPI_TEST_FAULT='%s': want crash:RANK or hang:RANK", s);
    const char *num = strchr(s, ':') + 1;
    errno = 0;
    long r = strtol(num, &end, 10);
    if (errno || !*num || *end || r < 1 || r >= size)
        return lab_err_set(LAB_ERR_ARG, "LAB_MPI_TEST_FAULT='%s': the rank must be 1..%d (rank 0 gathers)", s,
                           size - 1);
    f->rank = (int)r;
    return LAB_OK;
}

static void lab_mpi_fault_fire(const lab_mpi_fault *f)
{
    if (f->kind == 1) raise(SIGKILL);
    if (f->kind == 2)
        for (;;) pause(); /* a stalled rank: alive, silent */
}

/* Everything a rank needs while its share runs (the done callback's context). */
typedef struct {
    const lab_replay_opts *opts;
    int rank, size;
    lab_case_record *all;           /* the whole list (rank 0 fills it) */
    size_t n_all;
    size_t *share_index;            /* share position -> canonical index */
    size_t n_share, n_reported;
    lab_mpi_fault fault;
    /* rank 0 only */
    lab_mpi_peer *ranks;
    unsigned char *got;             /* per canonical case: its outcome is in */
} lab_mpi_ctx;

/* Rank 0: takes every message that has arrived, without waiting. */
static void lab_mpi_drain(lab_mpi_ctx *x)
{
    for (;;) {
        int flag = 0;
        MPI_Status stt;
        if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &stt) != MPI_SUCCESS || !flag) return;
        int src = stt.MPI_SOURCE, tag = stt.MPI_TAG, count = 0;
        MPI_Get_count(&stt, MPI_BYTE, &count);
        union {
            lab_mpi_hello h;
            lab_mpi_case_msg c;
            lab_mpi_done_msg d;
        } m;
        memset(&m, 0, sizeof m);
        size_t want = tag == LAB_MPI_TAG_HELLO ? sizeof m.h : tag == LAB_MPI_TAG_CASE ? sizeof m.c : sizeof m.d;
        if (count < 0 || (size_t)count > sizeof m) {
            /* Not ours or malformed: receive it into a scratch buffer to get it out of the way. */
            char *junk = malloc(count > 0 ? (size_t)count : 1);
            if (junk) MPI_Recv(junk, count, MPI_BYTE, src, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            free(junk);
            continue;
        }
        if (MPI_Recv(&m, count, MPI_BYTE, src, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS) return;
        if (src <= 0 || src >= x->size) continue;
        lab_mpi_peer *rk = &x->ranks[src];
        rk->last_heard = lab_mpi_now();
        if ((size_t)count != want) {
            if (rk->status == LAB_RANK_RUNNING) {
                rk->status = LAB_RANK_BAD;
                snprintf(rk->why, sizeof rk->why, "sent a %d-byte message with tag %d (want %zu): not the same lab build",
                         count, tag, want);
            }
            continue;
        }
        if (rk->status != LAB_RANK_RUNNING) continue; /* judged already (e.g. a late word from a hung rank) */
        if (tag == LAB_MPI_TAG_HELLO) {
            rk->hello = m.h;
            rk->have_hello = 1;
            if (m.h.n_total != x->n_all || m.h.n_mine != rk->n_expected) {
                rk->status = LAB_RANK_BAD;
                snprintf(rk->why, sizeof rk->why,
                         "built %llu cases (%llu its own), rank 0 built %zu (%zu for it): ranks must run the same lab "
                         "build with the same arguments",
                         (unsigned long long)m.h.n_total, (unsigned long long)m.h.n_mine, x->n_all, rk->n_expected);
            }
        } else if (tag == LAB_MPI_TAG_CASE) {
            size_t i = (size_t)m.c.index;
            if (i >= x->n_all || (int)(i % (size_t)x->size) != src || x->got[i]) continue;
            x->all[i].o = m.c.o;
            x->got[i] = 1;
            rk->n_got++;
        } else if (tag == LAB_MPI_TAG_DONE) {
            rk->wall_s = m.d.wall_s;
            rk->status = LAB_RANK_DONE;
            if (m.d.status != LAB_OK) snprintf(rk->why, sizeof rk->why, "its harness failed: %s", m.d.error);
            else if (rk->n_got != rk->n_expected)
                snprintf(rk->why, sizeof rk->why, "finished having reported %zu of %zu cases", rk->n_got,
                         rk->n_expected);
        }
    }
}

/* Called as each case of this rank's share finishes. */
static void lab_mpi_case_done(void *vctx, size_t share_pos, const lab_case_record *rec)
{
    lab_mpi_ctx *x = vctx;
    size_t i = x->share_index[share_pos];
    if (x->rank == 0) {
        x->all[i].o = rec->o;
        x->got[i] = 1;
        x->ranks[0].n_got++;
        lab_mpi_drain(x);
    } else {
        lab_mpi_case_msg m;
        memset(&m, 0, sizeof m);
        m.index = i;
        m.o = rec->o;
        MPI_Send(&m, (int)sizeof m, MPI_BYTE, 0, LAB_MPI_TAG_CASE, MPI_COMM_WORLD);
    }
    x->n_reported++;
    if (x->fault.kind && x->fault.rank == x->rank && x->n_reported == x->n_share / 2) lab_mpi_fault_fire(&x->fault);
}

/* Is the process pid on this host gone (no /proc entry, or a zombie)? */
static int lab_mpi_pid_gone(long pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return errno == ENOENT;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/* Rank 0, after its own share: waits for every other rank's DONE, judging a dead or silent rank. */
static void lab_mpi_gather(lab_mpi_ctx *x, const char *my_host)
{
    for (;;) {
        lab_mpi_drain(x);
        int running = 0;
        double now = lab_mpi_now();
        for (int r = 1; r < x->size; ++r) {
            lab_mpi_peer *rk = &x->ranks[r];
            if (rk->status != LAB_RANK_RUNNING) continue;
            const char *host = rk->have_hello ? rk->hello.host : "?";
            long pid = rk->have_hello ? (long)rk->hello.pid : -1;
            if (rk->have_hello && !strcmp(rk->hello.host, my_host) && lab_mpi_pid_gone(pid)) {
                lab_mpi_drain(x); /* its last words, if any, are in by now */
                if (rk->status != LAB_RANK_RUNNING) continue;
                rk->status = LAB_RANK_CRASHED;
                snprintf(rk->why, sizeof rk->why, "rank %d (host %s, pid %ld) died after reporting %zu of %zu cases", r,
                         host, pid, rk->n_got, rk->n_expected);
            } else if (now - rk->last_heard > rk->max_watchdog + LAB_MPI_GRACE_S) {
                rk->status = LAB_RANK_HUNG;
                snprintf(rk->why, sizeof rk->why,
                         "rank %d (host %s, pid %ld) silent for %.0f s (longest case watchdog %.0f s + %.0f s grace) "
                         "after reporting %zu of %zu cases: hung%s",
                         r, host, pid, now - rk->last_heard, rk->max_watchdog, LAB_MPI_GRACE_S, rk->n_got,
                         rk->n_expected, rk->have_hello && !strcmp(host, my_host) ? "" : ", or died on another host");
            } else {
                running++;
            }
        }
        if (!running) return;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* What the merged summary.json says of the ranks (lab_replay_summary_fn). */
typedef struct {
    const lab_mpi_ctx *x;
    int rank_failed;
} lab_mpi_summary;

/* Adds "mpi" and "ranks" to the summary rank 0 writes from the merged records, in the staged result set
 * before it is swapped in: no file is read back ("ok" is the verdict's: a failed rank already made it false). */
static lab_status lab_mpi_summary_fields(void *vctx, struct cJSON *root)
{
    const lab_mpi_summary *ms = vctx;
    const lab_mpi_ctx *x = ms->x;
    cJSON *mpi = cJSON_AddObjectToObject(root, "mpi");
    cJSON *arr = cJSON_AddArrayToObject(root, "ranks");
    if (!mpi || !arr) return lab_err_set(LAB_ERR_NOMEM, "--mpi: out of memory for the summary's ranks");
    cJSON_AddNumberToObject(mpi, "ranks", x->size);
    cJSON_AddStringToObject(mpi, "split", "round-robin: case i of the canonical list runs on rank i % ranks");
    cJSON_AddBoolToObject(mpi, "rank_failed", ms->rank_failed);
    for (int r = 0; r < x->size; ++r) {
        const lab_mpi_peer *rk = &x->ranks[r];
        cJSON *o = cJSON_CreateObject();
        if (!o) return lab_err_set(LAB_ERR_NOMEM, "--mpi: out of memory for the summary's ranks");
        cJSON_AddNumberToObject(o, "rank", r);
        if (rk->have_hello) {
            cJSON_AddStringToObject(o, "host", rk->hello.host);
            cJSON_AddNumberToObject(o, "pid", (double)rk->hello.pid);
            cJSON_AddNumberToObject(o, "local_rank", rk->hello.local_rank);
            cJSON_AddNumberToObject(o, "local_size", rk->hello.local_size);
            cJSON_AddNumberToObject(o, "jobs", rk->hello.jobs);
            cJSON_AddStringToObject(o, "device", rk->hello.device);
        } else {
            cJSON_AddNullToObject(o, "host");
        }
        cJSON_AddNumberToObject(o, "cases", (double)rk->n_expected);
        cJSON_AddNumberToObject(o, "reported", (double)rk->n_got);
        cJSON_AddNumberToObject(o, "wall_s", rk->wall_s);
        cJSON_AddStringToObject(o, "status", lab_mpi_status_name(rk->status));
        if (rk->why[0]) cJSON_AddStringToObject(o, "why", rk->why);
        cJSON_AddItemToArray(arr, o);
    }
    return LAB_OK;
}

/* A rank's own verdict where rank 0 reports the run: ok unless its harness failed. */
static void lab_mpi_share_verdict(lab_verdict *v, lab_status st, int rank)
{
    memset(v, 0, sizeof *v);
    v->ok = st == LAB_OK;
    v->exit_status = st == LAB_OK ? LAB_EXIT_OK : LAB_EXIT_FAILED;
    snprintf(v->line, sizeof v->line, "rank %d: %s", rank, st == LAB_OK ? "its share went to rank 0" : "its harness failed");
}

lab_status lab_mpi_replay(const lab_replay_opts *opts_in, FILE *report, lab_verdict *verdict,
                          lab_case_record **recs_out, size_t *n_recs)
{
    lab_mpi_share_verdict(verdict, LAB_ERR_IO, 0);
    *recs_out = NULL;
    *n_recs = 0;
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init(NULL, NULL) != MPI_SUCCESS) return lab_err_set(LAB_ERR_IO, "--mpi: MPI_Init failed");
    lab_mpi_die_with_launcher();
    /* Errors come back as codes: a failed peer must not take rank 0 down with it. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank = 0, size = 1, local_rank = 0, local_size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    lab_mpi_my_rank = rank;
    MPI_Comm local;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local) == MPI_SUCCESS) {
        MPI_Comm_rank(local, &local_rank);
        MPI_Comm_size(local, &local_size);
        MPI_Comm_free(&local);
    }

    lab_replay_opts opts = *opts_in;
    opts.progress = 0; /* one progress line per rank would interleave */
    if (opts.jobs <= 0) {
        opts.jobs = lab_isolate_ncpu() / local_size;
        if (opts.jobs < 1) opts.jobs = 1;
    }

    lab_mpi_hello me;
    memset(&me, 0, sizeof me);
    me.rank = rank;
    me.local_rank = local_rank;
    me.local_size = local_size;
    me.jobs = opts.jobs;
    me.pid = (int64_t)getpid();
    gethostname(me.host, sizeof me.host - 1);
    lab_mpi_pick_device(local_rank, local_size, me.device, sizeof me.device);

    lab_mpi_ctx x;
    memset(&x, 0, sizeof x);
    x.opts = &opts;
    x.rank = rank;
    x.size = size;
    lab_status st = lab_mpi_fault_parse(&x.fault, size);
    if (st == LAB_OK) st = lab_replay_cases(&opts, &x.all, &x.n_all);
    lab_case_record *share = NULL;
    if (st == LAB_OK) {
        x.share_index = calloc(x.n_all / (size_t)size + 1, sizeof *x.share_index);
        share = calloc(x.n_all / (size_t)size + 1, sizeof *share);
        if (!x.share_index || !share) st = lab_err_set(LAB_ERR_NOMEM, "--mpi: out of memory");
    }
    if (st == LAB_OK)
        for (size_t i = (size_t)rank; i < x.n_all; i += (size_t)size) {
            share[x.n_share] = x.all[i];
            x.share_index[x.n_share++] = i;
        }
    me.n_total = x.n_all;
    me.n_mine = x.n_share;

    if (rank == 0 && st == LAB_OK) {
        x.ranks = calloc((size_t)size, sizeof *x.ranks);
        x.got = calloc(x.n_all ? x.n_all : 1, 1);
        if (!x.ranks || !x.got) st = lab_err_set(LAB_ERR_NOMEM, "--mpi: out of memory");
    }
    if (rank == 0 && st == LAB_OK && opts.out_dir) st = lab_fs_mkdirs(opts.out_dir);
    /* Agree on the start while every rank is surely alive: if one cannot start, none does. */
    int bad_here = st != LAB_OK, bad_any = bad_here;
    if (MPI_Allreduce(&bad_here, &bad_any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS) bad_any = 1;
    if (bad_any && st == LAB_OK) st = lab_err_set(LAB_ERR_IO, "--mpi: another rank could not start (see its message)");
    if (st != LAB_OK) {
        if (rank != 0) fprintf(stderr, "lab replay --mpi: rank %d: %s\n", rank, lab_err_msg());
        free(x.all);
        free(x.share_index);
        free(share);
        free(x.ranks);
        free(x.got);
        fflush(NULL);
        lab_mpi_deadline_arm(LAB_EXIT_FAILED);
        MPI_Finalize();
        alarm(0);
        lab_mpi_share_verdict(verdict, st, rank);
        return st;
    }

    double t0 = lab_mpi_now();
    if (rank == 0) {
        for (int r = 0; r < size; ++r) {
            x.ranks[r].status = LAB_RANK_RUNNING;
            x.ranks[r].last_heard = t0;
            x.ranks[r].n_expected = x.n_all / (size_t)size + ((size_t)r < x.n_all % (size_t)size);
        }
        for (size_t i = 0; i < x.n_all; ++i) {
            double w = lab_replay_watchdog(&opts, x.all[i].incident);
            lab_mpi_peer *rk = &x.ranks[i % (size_t)size];
            if (w > rk->max_watchdog) rk->max_watchdog = w;
        }
        x.ranks[0].hello = me;
        x.ranks[0].have_hello = 1;
    } else {
        MPI_Send(&me, (int)sizeof me, MPI_BYTE, 0, LAB_MPI_TAG_HELLO, MPI_COMM_WORLD);
        if (x.fault.kind && x.fault.rank == rank && x.n_share / 2 == 0) lab_mpi_fault_fire(&x.fault);
    }

    st = lab_replay_execute_records(&opts, share, x.n_share, lab_mpi_case_done, &x);
    double my_wall = lab_mpi_now() - t0;

    if (rank != 0) {
        lab_mpi_done_msg d;
        memset(&d, 0, sizeof d);
        d.n_sent = x.n_reported;
        d.wall_s = my_wall;
        d.status = st;
        if (st != LAB_OK) snprintf(d.error, sizeof d.error, "%s", lab_err_msg());
        MPI_Send(&d, (int)sizeof d, MPI_BYTE, 0, LAB_MPI_TAG_DONE, MPI_COMM_WORLD);
        free(x.all);
        free(x.share_index);
        free(share);
        fflush(NULL);
        lab_mpi_deadline_arm(st == LAB_OK ? 0 : LAB_EXIT_FAILED);
        MPI_Finalize();
        alarm(0);
        lab_mpi_share_verdict(verdict, st, rank);
        return st;
    }

    /* Rank 0: its own harness status, then everyone else's results. */
    x.ranks[0].status = st == LAB_OK ? LAB_RANK_DONE : LAB_RANK_BAD;
    x.ranks[0].wall_s = my_wall;
    if (st != LAB_OK) snprintf(x.ranks[0].why, sizeof x.ranks[0].why, "its harness failed: %s", lab_err_msg());
    lab_mpi_gather(&x, me.host);
    double wall = lab_mpi_now() - t0;

    /* Cases no one reported: the failed rank is named in each. */
    int rank_failed = 0, lost = 0;
    for (int r = 0; r < size; ++r) {
        lab_mpi_peer *rk = &x.ranks[r];
        rank_failed |= rk->status != LAB_RANK_DONE || rk->why[0];
        lost |= rk->status == LAB_RANK_HUNG || rk->status == LAB_RANK_CRASHED;
    }
    for (size_t i = 0; i < x.n_all; ++i) {
        if (x.got[i]) continue;
        lab_mpi_peer *rk = &x.ranks[i % (size_t)size];
        lab_job_outcome *o = &x.all[i].o;
        memset(o, 0, sizeof *o);
        o->outcome = rk->status == LAB_RANK_CRASHED ? LAB_OUT_CRASH : rk->status == LAB_RANK_HUNG ? LAB_OUT_HANG
                                                                                                  : LAB_OUT_ERROR;
        snprintf(o->error, sizeof o->error, "not reported by MPI rank %d: %s", (int)(i % (size_t)size),
                 rk->why[0] ? rk->why : "no reason known");
    }

    /* A failed rank is part of the one verdict (NOT OK even where its lost cases are a bug's CRASH/HANG). */
    lab_verdict_run run = {.ranks_failed = rank_failed};
    lab_mpi_summary ms = {&x, rank_failed};
    opts.summary_fields = lab_mpi_summary_fields;
    opts.summary_ctx = &ms;
    lab_status st2 = lab_replay_report(&opts, report, x.all, x.n_all, wall, &run, verdict);

    int hosts = 0;
    for (int r = 0; r < size; ++r) {
        int seen = 0;
        for (int q = 0; q < r; ++q)
            seen |= x.ranks[q].have_hello && x.ranks[r].have_hello && !strcmp(x.ranks[q].hello.host, x.ranks[r].hello.host);
        hosts += x.ranks[r].have_hello && !seen;
    }
    fprintf(report, "mpi: %d ranks on %d host%s, round-robin split\n", size, hosts, hosts == 1 ? "" : "s");
    fprintf(report, "%-5s %-20s %-8s %-5s %-4s %6s %8s %8s  %-8s %s\n", "rank", "host", "pid", "local", "jobs", "cases",
            "reported", "wall_s", "status", "device");
    for (int r = 0; r < size; ++r) {
        const lab_mpi_peer *rk = &x.ranks[r];
        fprintf(report, "%-5d %-20s %-8lld %-5d %-4d %6zu %8zu %8.2f  %-8s %s\n", r, rk->have_hello ? rk->hello.host : "?",
                rk->have_hello ? (long long)rk->hello.pid : -1LL, rk->have_hello ? rk->hello.local_rank : -1,
                rk->have_hello ? rk->hello.jobs : -1, rk->n_expected, rk->n_got, rk->wall_s,
                lab_mpi_status_name(rk->status), rk->have_hello ? rk->hello.device : "?");
        if (rk->why[0]) fprintf(report, "      %s\n", rk->why);
    }
    if (rank_failed) fprintf(report, "NOT OK: a rank failed (see above); the merged files are written\n");
    fflush(report);
    fflush(stdout);
    fflush(stderr);

    free(x.share_index);
    free(share);
    free(x.ranks);
    free(x.got);
    int code = st2 != LAB_OK ? LAB_EXIT_FAILED : verdict->exit_status;
    if (lost) {
        /* A stalled rank never reaches MPI_Finalize, and Open MPI's finalize may wait for a dead one for
         * ever: end the job, the files are written. MPI_Abort itself is bounded too. */
        fprintf(stderr, "lab replay --mpi: ending the job with MPI_Abort: a rank died or is hung\n");
        fflush(NULL);
        lab_mpi_deadline_arm(code);
        MPI_Abort(MPI_COMM_WORLD, code);
        _exit(code); /* not reached: MPI_Abort does not return */
    }
    fflush(NULL);
    lab_mpi_deadline_arm(code);
    MPI_Finalize();
    alarm(0);
    *recs_out = x.all;
    *n_recs = x.n_all;
    return st2;
}

#endif
