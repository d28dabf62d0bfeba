/* lab_mpi: replay scale-out across MPI ranks (Open MPI), the transport: a rank a host driving its GPUs, seed groups
 * dealt by rank 0 on demand (lab_deal), results streamed to rank 0, a rank that dies or hangs reported instead of lost. */
#include "lab_mpi.h"

#include <string.h>

#include "lab_verdict.h"

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
#include <math.h>
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "lab_deal.h"
#include "lab_device.h"
#include "lab_fs.h"
#include "lab_mps_replay.h"
#include "lab_replay_fed.h"
#include "lab_sched.h"
#include "lab_window.h"

#define LAB_MPI_STR2(x) #x
#define LAB_MPI_STR(x) LAB_MPI_STR2(x)

lab_status lab_mpi_check(void) { return LAB_OK; }

/* The exit status the end-of-job deadline uses when MPI_Finalize or MPI_Abort does not return in time. */
static volatile sig_atomic_t lab_mpi_end_code;

static void lab_mpi_deadline_hit(int sig)
{
    (void)sig;
    static const char msg[] = "lab replay --mpi: MPI did not end within its end grace (" LAB_MPI_STR(LAB_MPI_END_GRACE_S)
                              " s unless a test set LAB_MPI_TEST_END_GRACE_S); exiting without it\n";
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
    const char *t = getenv("LAB_MPI_TEST_END_GRACE_S"); /* tests only: a short grace */
    int grace = t && atoi(t) > 0 ? atoi(t) : LAB_MPI_END_GRACE_S;
    alarm((unsigned)grace);
}

/* Ends MPI within LAB_MPI_END_GRACE_S (see lab_mpi_deadline_arm), everything flushed before. */
static void lab_mpi_finalize(int code)
{
    fflush(NULL);
    /* Interrupted: mpirun is ending the job (it signalled every rank and kills them a second later). MPI_Finalize would
     * wait for that kill; everything is written, so the process leaves at once. */
    if (lab_isolate_interrupted()) _exit(code);
    lab_mpi_deadline_arm(code);
    MPI_Finalize();
    alarm(0);
}

/* mpirun's end of a job (Open MPI 4.1, measured): on SIGINT or SIGTERM it sends every rank SIGCONT at once, SIGTERM
 * odls_base_sigkill_timeout (1 s) later, SIGKILL another second later; the ranks sit in process groups of their own, so
 * a Ctrl-C at a terminal reaches mpirun alone. So the SIGCONT is the ranks' first word of the end, a second before the
 * SIGTERM: a rank that was not stopped (job control: mpirun stops ranks with SIGSTOP and resumes them with SIGCONT)
 * takes it as the interrupt. "Not stopped": its run's loop turned less than LAB_MPI_CONT_GAP_MS before the SIGCONT
 * (the loop turns every 20 ms at most; a stop leaves a gap as long as the stop). A rank busy elsewhere at that moment
 * (writing the set) waits for the SIGTERM as before. */
#define LAB_MPI_CONT_GAP_MS 250
static _Atomic long long lab_mpi_turned_ms; /* the last turn of this rank's loop (monotonic ms; 0: none yet) */

static long long lab_mpi_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void lab_mpi_turned(void) { lab_mpi_turned_ms = lab_mpi_now_ms(); }

static void lab_mpi_on_cont(int sig)
{
    (void)sig;
    long long t = lab_mpi_turned_ms;
    if (t && lab_mpi_now_ms() - t < LAB_MPI_CONT_GAP_MS) lab_isolate_interrupt(SIGTERM); /* what mpirun sends next */
}

/* Takes mpirun's SIGCONT as the interrupt (above). */
static void lab_mpi_catch_cont(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = lab_mpi_on_cont;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGCONT, &sa, NULL);
}

/* A rank never outlives its launcher (mpirun, orted, srun's step daemon): killed with it. The parent is
 * compared before and after, so a launcher that died in between is caught too. */
static void lab_mpi_die_with_launcher(void)
{
    pid_t parent = getppid();
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return;
    if (getppid() != parent) raise(SIGKILL);
}

enum { LAB_MPI_TAG_HELLO = 7101, LAB_MPI_TAG_CASE, LAB_MPI_TAG_DONE, LAB_MPI_TAG_ASK, LAB_MPI_TAG_DEAL, LAB_MPI_TAG_ALIVE,
       LAB_MPI_TAG_RELEASE };

/* A rank other than 0 whose cases run but that has sent nothing for this long says it is alive (its workers may all be
 * in long cases or seed batches): silence then means the rank process itself is stuck. */
#define LAB_MPI_ALIVE_S (LAB_MPI_GRACE_S / 2)

/* The most incidents (parts of the case list) a request for work can name: as many as `--incident` flags. */
#define LAB_MPI_MAX_PARTS LAB_REQUEST_IDS_MAX

/* What a rank tells rank 0 first: who and where it is. Sent as bytes: every rank runs the same binary. */
typedef struct {
    int32_t rank, local_rank, local_size, jobs;
    int64_t pid;
    uint64_t n_total, n_groups;    /* cases and seed groups in the whole list as this rank built it (windowed: the
                                      cases planned and the cases a window) */
    char host[128];
    char device[224];
} lab_mpi_hello;

/* One finished case (or its rerun after a device error): its index in the canonical list and its outcome. */
typedef struct {
    uint64_t index;
    uint32_t window;               /* the window it belongs to (windowed replays; 0 otherwise) */
    lab_job_outcome o;
    char first_run[sizeof ((lab_case_record *)0)->first_run];
} lab_mpi_case_msg;

/* A rank's last word: how many cases it sent and whether its own harness failed. */
typedef struct {
    uint64_t n_sent;
    double wall_s;
    int32_t status;
    int32_t interrupted;           /* the signal that stopped it (its unfinished cases were not sent), or 0 */
    char error[240];
} lab_mpi_done_msg;

/* A rank's word that it is alive (LAB_MPI_ALIVE_S). */
typedef struct {
    uint32_t n_reported;
} lab_mpi_alive_msg;

/* A rank's request for work: the incidents its lane in progress runs (lab_replay_feed_fn). */
typedef struct {
    uint32_t seq;
    uint32_t window;               /* the window it asks in (windowed replays; 0 otherwise) */
    uint32_t nparts;
    unsigned char accept[LAB_MPI_MAX_PARTS];
} lab_mpi_ask_msg;

/* Rank 0's answer: seed groups [first, end) (more = 1), none left for those incidents in this window (more = 0), not
 * yet: rank 0 has not reached the window asked in and the request stays open (more = 2, sent every LAB_MPI_ALIVE_S),
 * or the run is over: start nothing more (more = -1). */
enum { LAB_MPI_DEAL_OVER = -1, LAB_MPI_DEAL_NONE = 0, LAB_MPI_DEAL_SOME = 1, LAB_MPI_DEAL_HOLD = 2 };
typedef struct {
    uint32_t seq;
    int32_t more;
    uint64_t first, end;
} lab_mpi_deal_msg;

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
    size_t n_dealt, n_got, chunks;  /* cases dealt to it, cases it reported, chunks it was dealt */
    double last_heard;
    double wall_s;                  /* the rank's own run time (from its DONE) */
    char why[240];                  /* crash / hang / error explanation */
} lab_mpi_peer;

static double lab_mpi_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* This rank's share of its host, without any CUDA call: the host's GPUs as the machine probe sees them (a
 * CUDA_VISIBLE_DEVICES list already set by a scheduler, else the driver's listing in PCI order), split among the ranks
 * on the host (lab_sched_host_share); the rank's set becomes the only visible one (CUDA_VISIBLE_DEVICES, "-1" for none;
 * CUDA_DEVICE_ORDER=PCI_BUS_ID for the driver's listing, unless already set) and is described into desc. *m gets the
 * share (its CPUs too); *host_gpus the host's GPU count. */
static void lab_mpi_take_share(int local_rank, int local_size, lab_sched_machine *m, int *host_gpus, char *desc,
                               size_t len)
{
    lab_device_machine(m);
    *host_gpus = m->ngpu;
    int first = lab_sched_host_share(m, local_rank, local_size);
    if (*host_gpus == 0) {
        snprintf(desc, len, "none (%s)", m->source);
        return;
    }
    char mine[LAB_SCHED_MAX_GPUS * 33];
    lab_sched_visible(m, 0, m->ngpu, mine, sizeof mine);
    if (!getenv("CUDA_VISIBLE_DEVICES")) setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0); /* the listing's order */
    setenv("CUDA_VISIBLE_DEVICES", m->ngpu ? mine : "-1", 1);
    if (m->ngpu == 0)
        snprintf(desc, len, "none (the host's %d GPU%s from %s went to its other %d local ranks)", *host_gpus,
                 *host_gpus == 1 ? "" : "s", m->source, local_size - 1);
    else
        snprintf(desc, len, "cuda:%s%s%s (GPUs %d-%d of %d from %s)", mine, m->what[0][0] ? " " : "", m->what[0],
                 first, first + m->ngpu - 1, *host_gpus, m->source);
}

/* LAB_MPI_TEST_FAULT=crash:R | hang:R | slow:R, for the tests of rank failure and of dealing. */
typedef enum { LAB_MPI_FAULT_NONE, LAB_MPI_FAULT_CRASH, LAB_MPI_FAULT_HANG, LAB_MPI_FAULT_SLOW, LAB_MPI_FAULT_LATE } lab_mpi_fault_kind;
typedef struct {
    lab_mpi_fault_kind kind;
    int rank;
} lab_mpi_fault;

static lab_status lab_mpi_fault_parse(lab_mpi_fault *f, int size)
{
    f->kind = LAB_MPI_FAULT_NONE;
    f->rank = -1;
    const char *s = getenv("LAB_MPI_TEST_FAULT");
    if (!s || !*s) return LAB_OK;
    char *end;
    if (!strncmp(s, "crash:", 6)) f->kind = LAB_MPI_FAULT_CRASH;
    else if (!strncmp(s, "hang:", 5)) f->kind = LAB_MPI_FAULT_HANG;
    else if (!strncmp(s, "slow:", 5)) f->kind = LAB_MPI_FAULT_SLOW;
    else if (!strncmp(s, "late:", 5)) f->kind = LAB_MPI_FAULT_LATE;
    else return lab_err_set(LAB_ERR_ARG, "LAB_MPI_TEST_FAULT='%s': want crash:RANK, hang:RANK, slow:RANK or late:0", s);
    const char *num = strchr(s, ':') + 1;
    int lowest = f->kind == LAB_MPI_FAULT_SLOW || f->kind == LAB_MPI_FAULT_LATE ? 0 : 1; /* rank 0 gathers: it may be
                                                                                        slow or late, not die */
    errno = 0;
    long r = strtol(num, &end, 10);
    if (errno || !*num || *end || r < lowest || r >= size)
        return lab_err_set(LAB_ERR_ARG, "LAB_MPI_TEST_FAULT='%s': the rank must be %d..%d%s", s, lowest, size - 1,
                           lowest ? " (rank 0 gathers)" : "");
    f->rank = (int)r;
    return LAB_OK;
}

/* Everything a rank needs while its cases run (the feed's and the done callback's context). */
typedef struct {
    const lab_replay_opts *opts;
    int rank, size;
    lab_case_record *all;           /* the whole list (rank 0 fills the outcomes) */
    size_t n_all;
    lab_replay_groups groups;       /* its seed groups, as every rank makes them */
    size_t n_dealt, n_reported;     /* this rank: cases dealt to it, cases it reported (first reports) */
    unsigned char *reported;        /* this rank: per case, reported once already */
    lab_mpi_fault fault;
    double patience;                /* seconds a rank waits for rank 0's answer (and rank 0 for a silent rank) */
    size_t check_total, check_groups; /* what every rank's hello must say (n_total, n_groups) */
    /* a windowed replay (lab_window_run_by): every rank walks the same windows, rank 0 deals each window's groups */
    int windowed;
    uint32_t window;                /* the window in progress or last run (1 the first; 0 before) */
    int in_window;                  /* rank 0: dealing window `window` now */
    int over;                       /* rank 0: no window starts any more; another rank: rank 0 said so */
    size_t groups_total;            /* seed groups over every window */
    /* a rank other than 0: its request in flight */
    int asking;
    uint32_t seq;
    double asked_at, said_at;       /* when it asked, and when it last sent anything */
    char fail[240];                 /* why this rank stopped asking ("" while fine) */
    /* rank 0 only */
    lab_mpi_peer *ranks;
    unsigned char *got;             /* per canonical case: its outcome is in */
    int *dealt_to;                  /* per canonical case: the rank it was dealt to, -1 none yet */
    lab_deal *dealer;
    size_t chunks;
    double judged_at;
    double t0;                      /* when the run started (after the ranks agreed) */
    const char *host;
    lab_mpi_ask_msg *pending;       /* per rank: a request for a window rank 0 has not reached (has_pending) */
    unsigned char *has_pending;
    double held_at;                 /* when the open requests were last told to hold */
    int rank_failed;                /* a case went unreported for a reason other than an interrupt */
} lab_mpi_ctx;

/* Rank 0: groups [c->first, c->end) go to rank r: its cases are r's from now on. */
static void lab_mpi_deal_to(lab_mpi_ctx *x, int r, const lab_deal_chunk *c)
{
    const lab_replay_groups *g = &x->groups;
    for (size_t p = g->start[c->first]; p < g->start[c->end]; ++p) x->dealt_to[g->order[p]] = r;
    x->ranks[r].n_dealt += g->start[c->end] - g->start[c->first];
    x->ranks[r].chunks++;
    x->chunks++;
}

/* Rank 0: rank r is out of the dealing (the window's, if one is being dealt; a windowed replay's next windows leave
 * out every rank no longer running). */
static void lab_mpi_retire(lab_mpi_ctx *x, int r)
{
    if (x->dealer) lab_deal_retire(x->dealer, r);
}

/* Rank 0: a finished case from rank src (itself included); a rerun after a device error replaces the first report. */
static void lab_mpi_take(lab_mpi_ctx *x, int src, size_t i, const lab_job_outcome *o, const char *first_run)
{
    if (!x->dealt_to || i >= x->n_all || x->dealt_to[i] != src) return;
    if (!x->got[i]) x->ranks[src].n_got++;
    x->got[i] = 1;
    x->all[i].o = *o;
    snprintf(x->all[i].first_run, sizeof x->all[i].first_run, "%s", first_run);
}

/* Rank 0: answers rank src's request for work. */
static void lab_mpi_answer(lab_mpi_ctx *x, int src, const lab_mpi_ask_msg *q)
{
    lab_mpi_deal_msg d;
    memset(&d, 0, sizeof d);
    d.seq = q->seq;
    if (x->windowed && !x->over && q->window > x->window) { /* a window rank 0 has not reached: kept open */
        x->pending[src] = *q;
        x->has_pending[src] = 1;
        return;
    }
    lab_deal_chunk c;
    if (x->over) d.more = LAB_MPI_DEAL_OVER;
    else if ((!x->windowed || (q->window == x->window && x->in_window)) && x->ranks[src].status == LAB_RANK_RUNNING &&
             q->nparts == x->groups.nparts && lab_deal_next(x->dealer, src, q->accept, &c)) {
        lab_mpi_deal_to(x, src, &c);
        d.more = 1;
        d.first = c.first;
        d.end = c.end;
    }
    MPI_Send(&d, (int)sizeof d, MPI_BYTE, src, LAB_MPI_TAG_DEAL, MPI_COMM_WORLD);
}

/* Rank 0: takes every message that has arrived, without waiting: hellos, cases, requests for work (answered at once),
 * last words. */
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
            lab_mpi_ask_msg q;
            lab_mpi_alive_msg a;
        } m;
        memset(&m, 0, sizeof m);
        size_t want = tag == LAB_MPI_TAG_HELLO ? sizeof m.h : tag == LAB_MPI_TAG_CASE ? sizeof m.c
                    : tag == LAB_MPI_TAG_ASK   ? sizeof m.q : tag == LAB_MPI_TAG_ALIVE ? sizeof m.a : sizeof m.d;
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
                lab_mpi_retire(x, src);
                snprintf(rk->why, sizeof rk->why, "sent a %d-byte message with tag %d (want %zu): not the same lab build",
                         count, tag, want);
            }
            continue;
        }
        if (tag == LAB_MPI_TAG_ASK) { /* answered whatever the rank's state: a rank judged already gets "none" */
            lab_mpi_answer(x, src, &m.q);
            continue;
        }
        if (tag == LAB_MPI_TAG_ALIVE) continue; /* heard: that is all */
        if (rk->status != LAB_RANK_RUNNING) continue; /* judged already (e.g. a late word from a hung rank) */
        if (tag == LAB_MPI_TAG_HELLO) {
            rk->hello = m.h;
            rk->have_hello = 1;
            if (x->dealer) lab_deal_weight(x->dealer, src, m.h.jobs);
            if (m.h.n_total != x->check_total || m.h.n_groups != x->check_groups) {
                rk->status = LAB_RANK_BAD;
                lab_mpi_retire(x, src);
                snprintf(rk->why, sizeof rk->why,
                         "built %llu cases in %llu %s, rank 0 built %zu in %zu: ranks must run the same lab "
                         "build with the same arguments%s",
                         (unsigned long long)m.h.n_total, (unsigned long long)m.h.n_groups,
                         x->windowed ? "-case windows" : "seed groups", x->check_total, x->check_groups,
                         x->windowed ? " and LAB_REPLAY_WINDOW" : "");
            }
        } else if (tag == LAB_MPI_TAG_CASE) {
            m.c.first_run[sizeof m.c.first_run - 1] = 0;
            if (!x->windowed || (m.c.window == x->window && x->in_window))
                lab_mpi_take(x, src, (size_t)m.c.index, &m.c.o, m.c.first_run);
        } else if (tag == LAB_MPI_TAG_DONE) {
            rk->wall_s = m.d.wall_s;
            rk->status = LAB_RANK_DONE;
            m.d.error[sizeof m.d.error - 1] = 0;
            if (m.d.status != LAB_OK) snprintf(rk->why, sizeof rk->why, "its harness failed: %s", m.d.error);
            else if (rk->n_got != rk->n_dealt && !m.d.interrupted)
                snprintf(rk->why, sizeof rk->why, "finished having reported %zu of %zu cases", rk->n_got, rk->n_dealt);
        }
    }
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

/* Rank 0: judges the ranks still running: one whose process is gone (same host) crashed, one silent for longer than
 * x->patience hung; either is retired from the dealing (what it was not dealt goes to the others). Returns how many
 * still run. */
static int lab_mpi_judge(lab_mpi_ctx *x)
{
    int running = 0;
    double now = lab_mpi_now();
    for (int r = 1; r < x->size; ++r) {
        lab_mpi_peer *rk = &x->ranks[r];
        if (rk->status != LAB_RANK_RUNNING) continue;
        const char *host = rk->have_hello ? rk->hello.host : "?";
        long pid = rk->have_hello ? (long)rk->hello.pid : -1;
        if (rk->have_hello && !strcmp(rk->hello.host, x->host) && lab_mpi_pid_gone(pid)) {
            lab_mpi_drain(x); /* its last words, if any, are in by now */
            if (rk->status != LAB_RANK_RUNNING) continue;
            rk->status = LAB_RANK_CRASHED;
            snprintf(rk->why, sizeof rk->why, "rank %d (host %s, pid %ld) died after reporting %zu of %zu cases", r, host,
                     pid, rk->n_got, rk->n_dealt);
        } else if (now - rk->last_heard > x->patience) {
            rk->status = LAB_RANK_HUNG;
            snprintf(rk->why, sizeof rk->why,
                     "rank %d (host %s, pid %ld) silent for %.0f s (longest case watchdog %.0f s + %.0f s grace) after "
                     "reporting %zu of %zu cases: hung%s",
                     r, host, pid, now - rk->last_heard, x->patience - LAB_MPI_GRACE_S, LAB_MPI_GRACE_S, rk->n_got,
                     rk->n_dealt, rk->have_hello && !strcmp(host, x->host) ? "" : ", or died on another host");
        } else {
            running++;
            continue;
        }
        lab_mpi_retire(x, r);
    }
    x->judged_at = now;
    return running;
}

/* Rank 0: tells the ranks whose request waits for a window it has not reached to hold on (every LAB_MPI_ALIVE_S), so
 * that they wait for it however long it takes to end the window in progress. */
static void lab_mpi_hold(lab_mpi_ctx *x)
{
    if (!x->has_pending || lab_mpi_now() - x->held_at < LAB_MPI_ALIVE_S) return;
    x->held_at = lab_mpi_now();
    for (int r = 1; r < x->size; ++r)
        if (x->has_pending[r]) {
            lab_mpi_deal_msg d = {x->pending[r].seq, LAB_MPI_DEAL_HOLD, 0, 0};
            MPI_Send(&d, (int)sizeof d, MPI_BYTE, r, LAB_MPI_TAG_DEAL, MPI_COMM_WORLD);
        }
}

/* Rank 0: answers the requests kept open for the window it has now reached (or every one, the run over). */
static void lab_mpi_answer_pending(lab_mpi_ctx *x)
{
    for (int r = 1; x->has_pending && r < x->size; ++r)
        if (x->has_pending[r] && (x->over || x->pending[r].window <= x->window)) {
            x->has_pending[r] = 0;
            lab_mpi_answer(x, r, &x->pending[r]);
        }
}

/* Rank 0's turn while its own cases run (lab_isolate_on_tick): every message answered, the ranks judged once a
 * second. */
static void lab_mpi_serve(void *vctx)
{
    lab_mpi_ctx *x = vctx;
    lab_mpi_turned();
    lab_mpi_drain(x);
    lab_mpi_hold(x);
    if (lab_mpi_now() - x->judged_at >= 1.0) lab_mpi_judge(x);
}

/* Rank 0, after its own cases: serves and judges until every other rank said its last word or was judged. */
static void lab_mpi_gather(lab_mpi_ctx *x)
{
    double until = 0;
    for (;;) {
        lab_mpi_turned();
        lab_mpi_drain(x);
        lab_mpi_answer_pending(x);
        if (!lab_mpi_judge(x)) return;
        if (lab_isolate_interrupted()) {
            /* mpirun signalled every rank: their word comes at once or not at all, and mpirun's kill follows */
            if (until == 0) until = lab_mpi_now() + LAB_MPI_INTERRUPT_WAIT_S;
            else if (lab_mpi_now() > until) return;
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* A rank other than 0: sends a message to rank 0, noting when (LAB_MPI_ALIVE_S). MPI_SUCCESS or MPI's error. */
static int lab_mpi_tell(lab_mpi_ctx *x, const void *msg, size_t len, int tag)
{
    x->said_at = lab_mpi_now();
    return MPI_Send(msg, (int)len, MPI_BYTE, 0, tag, MPI_COMM_WORLD);
}

/* A rank other than 0, its cases reported: waits (sleeping) until rank 0 has written every file and releases it, or
 * LAB_MPI_RELEASE_WAIT_S. Open MPI's finalize waits for every rank, so a rank that entered it while rank 0 still ran
 * its last chunk and wrote the report ran out of its end grace, left without finalize, and mpirun then killed rank 0
 * before it wrote anything (4 ranks on 4 GPUs, 2026-11-27). */
static void lab_mpi_await_release(int rank)
{
    int flag = 0, token = 0;
    MPI_Request req;
    if (MPI_Irecv(&token, 1, MPI_INT, 0, LAB_MPI_TAG_RELEASE, MPI_COMM_WORLD, &req) != MPI_SUCCESS) return;
    /* interrupted, mpirun kills every rank shortly: no use waiting longer than rank 0's own wait for the others */
    double until = lab_mpi_now() + (lab_isolate_interrupted() ? 3 * LAB_MPI_INTERRUPT_WAIT_S : LAB_MPI_RELEASE_WAIT_S);
    long ns = 1000000;
    while (MPI_Test(&req, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && !flag) {
        if (lab_mpi_now() > until) {
            fprintf(stderr, "lab replay --mpi: rank %d: rank 0 did not end the run within %d s of this rank's last case\n",
                    rank, LAB_MPI_RELEASE_WAIT_S);
            return;
        }
        struct timespec ts = {0, ns};
        nanosleep(&ts, NULL);
        if (ns < 50000000) ns *= 2;
    }
}

/* A rank other than 0, at every turn of its run's loop (lab_isolate_on_tick): says it is alive when it has said
 * nothing for LAB_MPI_ALIVE_S. */
static void lab_mpi_alive(void *vctx)
{
    lab_mpi_ctx *x = vctx;
    lab_mpi_turned();
    if (lab_mpi_now() - x->said_at < LAB_MPI_ALIVE_S) return;
    lab_mpi_alive_msg a = {(uint32_t)x->n_reported};
    lab_mpi_tell(x, &a, sizeof a, LAB_MPI_TAG_ALIVE);
}

/* The lanes' feed (lab_replay_feed_fn): rank 0 deals to itself (serving the others first); another rank asks rank 0
 * once and takes its answer when it comes. */
static int lab_mpi_feed(void *vctx, const unsigned char *accept, size_t *g0, size_t *g1)
{
    lab_mpi_ctx *x = vctx;
    lab_deal_chunk c;
    if (x->rank == 0) {
        lab_mpi_drain(x);
        if (!lab_deal_next(x->dealer, 0, accept, &c)) return -1;
        lab_mpi_deal_to(x, 0, &c);
        *g0 = c.first;
        *g1 = c.end;
        return 1;
    }
    if (x->fail[0] || x->over) return -1;
    if (!x->asking) {
        lab_mpi_ask_msg q;
        memset(&q, 0, sizeof q);
        q.seq = ++x->seq;
        q.window = x->window;
        q.nparts = (uint32_t)x->groups.nparts;
        memcpy(q.accept, accept, x->groups.nparts);
        if (lab_mpi_tell(x, &q, sizeof q, LAB_MPI_TAG_ASK) != MPI_SUCCESS) {
            snprintf(x->fail, sizeof x->fail, "rank %d could not ask rank 0 for work (MPI_Send failed)", x->rank);
            return -1;
        }
        x->asking = 1;
        x->asked_at = lab_mpi_now();
    }
    int flag = 0;
    if (MPI_Iprobe(0, LAB_MPI_TAG_DEAL, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || !flag) {
        if (lab_mpi_now() - x->asked_at <= x->patience) return 0;
        snprintf(x->fail, sizeof x->fail, "rank 0 did not answer a request for work in %.0f s", x->patience);
        return -1;
    }
    lab_mpi_deal_msg d;
    if (MPI_Recv(&d, (int)sizeof d, MPI_BYTE, 0, LAB_MPI_TAG_DEAL, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS ||
        d.seq != x->seq) {
        snprintf(x->fail, sizeof x->fail, "rank 0's answer to request %u could not be read", x->seq);
        return -1;
    }
    if (d.more == LAB_MPI_DEAL_HOLD) { /* rank 0 is still in an earlier window: the request stays open */
        x->asked_at = lab_mpi_now();
        return 0;
    }
    x->asking = 0;
    if (d.more == LAB_MPI_DEAL_OVER) x->over = 1;
    if (d.more != LAB_MPI_DEAL_SOME) return -1;
    if (d.first >= d.end || d.end > x->groups.ng) {
        snprintf(x->fail, sizeof x->fail, "rank 0 dealt seed groups [%llu, %llu) of %zu", (unsigned long long)d.first,
                 (unsigned long long)d.end, x->groups.ng);
        return -1;
    }
    x->n_dealt += x->groups.start[d.end] - x->groups.start[d.first];
    *g0 = (size_t)d.first;
    *g1 = (size_t)d.end;
    return 1;
}

/* Called as each of this rank's cases finishes (and again for a rerun after a device error). */
static void lab_mpi_case_done(void *vctx, size_t i, const lab_case_record *rec)
{
    lab_mpi_ctx *x = vctx;
    /* A case the interrupt stopped is no result: rank 0 marks every case it did not get so itself. Not sent: after an
     * interrupt rank 0 stops receiving within LAB_MPI_INTERRUPT_WAIT_S, and a queue's worth of such messages would
     * block this rank's sends until mpirun kills it, its last word unsaid. */
    if (rec->o.not_run) return;
    if (x->rank == 0) {
        lab_mpi_take(x, 0, i, &rec->o, rec->first_run);
        lab_mpi_drain(x);
    } else {
        lab_mpi_case_msg m;
        memset(&m, 0, sizeof m);
        m.index = i;
        m.window = x->window;
        m.o = rec->o;
        snprintf(m.first_run, sizeof m.first_run, "%s", rec->first_run);
        lab_mpi_tell(x, &m, sizeof m, LAB_MPI_TAG_CASE);
    }
    if (!x->reported[i]) x->n_reported++;
    x->reported[i] = 1;
    if (x->fault.rank != x->rank) return;
    if (x->fault.kind == LAB_MPI_FAULT_SLOW) {
        struct timespec ts = {LAB_MPI_TEST_SLOW_MS / 1000, (LAB_MPI_TEST_SLOW_MS % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    } else if (x->n_reported * 2 >= x->n_dealt && x->n_reported < x->n_dealt) {
        /* half of what it was dealt is reported, and a case it was dealt is not */
        if (x->fault.kind == LAB_MPI_FAULT_CRASH) raise(SIGKILL);
        for (;;) pause(); /* a stalled rank: alive, silent */
    }
}


#define LAB_MPI_SPLIT "dealt on demand: rank 0 hands out seed groups of one incident, a chunk half of the asking " \
                      "rank's share of the cost left (guided self-scheduling)"

/* What the merged summary.json says of the ranks (lab_results_fields_fn over the run's lab_mpi_ctx). Adds "mpi" and "ranks" to the tree of the summary rank 0 writes from the merged records, before it is written
 * ("ok" is the verdict's: a failed rank already made it false). */
static lab_status lab_mpi_summary_fields(void *vctx, struct cJSON *root)
{
    const lab_mpi_ctx *x = vctx;
    cJSON *mpi = cJSON_AddObjectToObject(root, "mpi");
    cJSON *arr = cJSON_AddArrayToObject(root, "ranks");
    if (!mpi || !arr) return lab_err_set(LAB_ERR_NOMEM, "--mpi: out of memory for the summary's ranks");
    cJSON_AddNumberToObject(mpi, "ranks", x->size);
    cJSON_AddStringToObject(mpi, "split", LAB_MPI_SPLIT);
    cJSON_AddNumberToObject(mpi, "seed_groups", (double)x->groups_total);
    cJSON_AddNumberToObject(mpi, "chunks", (double)x->chunks);
    cJSON_AddNumberToObject(mpi, "window", x->windowed ? (double)x->check_groups : 0); /* cases a window; 0: none */
    cJSON_AddBoolToObject(mpi, "rank_failed", x->rank_failed);
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
        cJSON_AddNumberToObject(o, "chunks", (double)rk->chunks);
        cJSON_AddNumberToObject(o, "cases", (double)rk->n_dealt);
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
    snprintf(v->line, sizeof v->line, "rank %d: %s", rank, st == LAB_OK ? "its cases went to rank 0" : "its harness failed");
}

static void lab_mpi_ctx_free(lab_mpi_ctx *x)
{
    free(x->all);
    lab_replay_groups_free(&x->groups);
    free(x->reported);
    free(x->ranks);
    free(x->got);
    free(x->dealt_to);
    lab_deal_free(x->dealer);
    free(x->pending);
    free(x->has_pending);
    x->all = NULL, x->reported = NULL, x->ranks = NULL, x->got = NULL, x->dealt_to = NULL, x->dealer = NULL;
    x->pending = NULL, x->has_pending = NULL;
}

/* Rank 0's table of the ranks, after the merged report. */
static void lab_mpi_print_ranks(const lab_mpi_ctx *x, FILE *report, int rank_failed)
{
    int hosts = 0;
    for (int r = 0; r < x->size; ++r) {
        int seen = 0;
        for (int q = 0; q < r; ++q)
            seen |= x->ranks[q].have_hello && x->ranks[r].have_hello && !strcmp(x->ranks[q].hello.host, x->ranks[r].hello.host);
        hosts += x->ranks[r].have_hello && !seen;
    }
    fprintf(report, "mpi: %d ranks on %d host%s, %zu seed groups dealt on demand in %zu chunks", x->size, hosts,
            hosts == 1 ? "" : "s", x->groups_total, x->chunks);
    if (x->windowed) fprintf(report, ", in %u windows of at most %zu cases", x->window, x->check_groups);
    fprintf(report, "\n");
    fprintf(report, "%-5s %-20s %-8s %-5s %-4s %6s %6s %8s %8s  %-8s %s\n", "rank", "host", "pid", "local", "jobs", "chunks",
            "cases", "reported", "wall_s", "status", "device");
    for (int r = 0; r < x->size; ++r) {
        const lab_mpi_peer *rk = &x->ranks[r];
        fprintf(report, "%-5d %-20s %-8lld %-5d %-4d %6zu %6zu %8zu %8.2f  %-8s %s\n", r,
                rk->have_hello ? rk->hello.host : "?", rk->have_hello ? (long long)rk->hello.pid : -1LL,
                rk->have_hello ? rk->hello.local_rank : -1, rk->have_hello ? rk->hello.jobs : -1, rk->chunks, rk->n_dealt,
                rk->n_got, rk->wall_s, lab_mpi_status_name(rk->status), rk->have_hello ? rk->hello.device : "?");
        if (rk->why[0]) fprintf(report, "      %s\n", rk->why);
    }
    if (rank_failed) fprintf(report, "NOT OK: a rank failed (see above); the merged files are written\n");
    fflush(report);
    fflush(stdout);
    fflush(stderr);
}

/* Rank 0: the dealing of x->all's seed groups (x->groups): who got which case, and the dealer, every rank's weight as
 * its hello said, the ranks no longer running left out. LAB_ERR_NOMEM or lab_deal_create's error. */
static lab_status lab_mpi_dealer_make(lab_mpi_ctx *x)
{
    size_t n = x->n_all, ng = x->groups.ng;
    x->got = calloc(n ? n : 1, 1);
    x->dealt_to = malloc((n ? n : 1) * sizeof *x->dealt_to);
    lab_deal_group *dg = malloc((ng ? ng : 1) * sizeof *dg);
    lab_status st = x->got && x->dealt_to && dg ? LAB_OK : lab_err_set(LAB_ERR_NOMEM, "--mpi: out of memory");
    for (size_t k = 0; st == LAB_OK && k < ng; ++k) dg[k] = (lab_deal_group){x->groups.part[k], x->groups.cost[k]};
    if (st == LAB_OK) st = lab_deal_create(dg, ng, x->size, &x->dealer);
    free(dg);
    for (size_t i = 0; st == LAB_OK && i < n; ++i) x->dealt_to[i] = -1;
    for (int r = 0; st == LAB_OK && r < x->size; ++r) {
        if (x->ranks[r].have_hello) lab_deal_weight(x->dealer, r, x->ranks[r].hello.jobs);
        if (x->ranks[r].status != LAB_RANK_RUNNING) lab_deal_retire(x->dealer, r);
    }
    return st;
}

/* Rank 0, done gathering x->all's cases: each one no one reported gets its outcome (interrupted: not run, left out of
 * the set and named by the resume command; else CRASH, HANG or ERROR naming the rank it was dealt to, and the run
 * counts a failed rank). */
static void lab_mpi_settle(lab_mpi_ctx *x, int interrupted)
{
    for (size_t i = 0; i < x->n_all; ++i) {
        if (x->got[i]) continue;
        int r = x->dealt_to[i];
        lab_job_outcome *o = &x->all[i].o;
        memset(o, 0, sizeof *o);
        if (interrupted) {
            o->outcome = LAB_OUT_ERROR;
            o->not_run = 1;
            snprintf(o->error, sizeof o->error, "interrupted");
            continue;
        }
        x->rank_failed = 1;
        if (r < 0) {
            o->outcome = LAB_OUT_ERROR;
            snprintf(o->error, sizeof o->error, "not dealt to any MPI rank: no rank was left to take it");
            continue;
        }
        lab_mpi_peer *rk = &x->ranks[r];
        o->outcome = rk->status == LAB_RANK_CRASHED ? LAB_OUT_CRASH : rk->status == LAB_RANK_HUNG ? LAB_OUT_HANG
                                                                                                  : LAB_OUT_ERROR;
        snprintf(o->error, sizeof o->error, "not reported by MPI rank %d: %s", r, rk->why[0] ? rk->why : "no reason known");
    }
}

/* Rank 0, every rank heard from or judged: whether a rank failed (x->rank_failed too; a rank still running after an
 * interrupt was stopped by it, not failed) and whether one died or hung (*lost: the job must end with MPI_Abort). */
static int lab_mpi_failed(lab_mpi_ctx *x, int interrupted, int *lost)
{
    *lost = 0;
    for (int r = 0; r < x->size; ++r) {
        lab_mpi_peer *rk = &x->ranks[r];
        if (interrupted && rk->status == LAB_RANK_RUNNING) continue; /* stopped by the interrupt */
        x->rank_failed |= rk->status != LAB_RANK_DONE || rk->why[0];
        *lost |= rk->status == LAB_RANK_HUNG || rk->status == LAB_RANK_CRASHED;
    }
    return x->rank_failed;
}

/* Rank 0, its own cases of the window run: serves and judges until every case of the window dealt to another rank is
 * reported (or its rank judged) and nothing is left to deal (or no rank is left to take it); interrupted, it waits
 * LAB_MPI_INTERRUPT_WAIT_S for the others' word. */
static void lab_mpi_gather_window(lab_mpi_ctx *x)
{
    double until = 0;
    for (;;) {
        lab_mpi_turned();
        lab_mpi_drain(x);
        lab_mpi_hold(x);
        int running = lab_mpi_judge(x), open = 0;
        for (size_t i = 0; i < x->n_all && !open; ++i) {
            int r = x->dealt_to[i];
            open = r > 0 && !x->got[i] && x->ranks[r].status == LAB_RANK_RUNNING;
        }
        if (!open && (running == 0 || lab_deal_left(x->dealer) == 0)) return;
        if (lab_isolate_interrupted()) {
            if (until == 0) until = lab_mpi_now() + LAB_MPI_INTERRUPT_WAIT_S;
            else if (lab_mpi_now() > until) return;
        }
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* A windowed replay's window on any rank (lab_window_runner.run): its seed groups dealt by rank 0 on demand as a whole
 * run's are; rank 0 returns once every case of the window is reported (or its rank judged: lab_mpi_settle), so the
 * window's records are complete; a rank other than 0 once rank 0 has nothing more of the window for it. */
static lab_status lab_mpi_window_run(void *vctx, lab_case_record *recs, size_t n)
{
    lab_mpi_ctx *x = vctx;
    x->all = recs;
    x->n_all = n;
    x->window++;
    lab_status st = lab_replay_groups_make(recs, n, &x->groups);
    if (st == LAB_OK && !(x->reported = calloc(n ? n : 1, 1))) st = lab_err_set(LAB_ERR_NOMEM, "--mpi: out of memory");
    if (st == LAB_OK && x->rank == 0) st = lab_mpi_dealer_make(x);
    if (st == LAB_OK) {
        x->groups_total += x->groups.ng;
        if (x->rank == 0) {
            x->in_window = 1;
            lab_mpi_answer_pending(x);
        }
        st = lab_replay_execute_fed(x->opts, recs, n, &x->groups, lab_mpi_feed, x, lab_mpi_case_done, x);
        if (st == LAB_OK && x->fail[0]) st = lab_err_set(LAB_ERR_IO, "%s", x->fail);
        if (x->rank == 0) {
            if (st != LAB_OK) { /* what is left of the window goes to the others; no window starts after it */
                x->ranks[0].status = LAB_RANK_BAD;
                snprintf(x->ranks[0].why, sizeof x->ranks[0].why, "its harness failed: %s", lab_err_msg());
                lab_deal_retire(x->dealer, 0);
            }
            lab_mpi_gather_window(x);
            lab_mpi_settle(x, lab_isolate_interrupted());
            x->in_window = 0;
        }
    }
    lab_replay_groups_free(&x->groups);
    free(x->reported), free(x->got), free(x->dealt_to);
    lab_deal_free(x->dealer);
    x->reported = NULL, x->got = NULL, x->dealt_to = NULL, x->dealer = NULL, x->all = NULL, x->n_all = 0;
    return st;
}

/* Rank 0, after the last window (lab_window_runner.finish): the run is over for every rank; gathers their last words
 * and says whether one failed. */
static int lab_mpi_window_finish(void *vctx)
{
    lab_mpi_ctx *x = vctx;
    x->over = 1;
    if (x->ranks[0].status == LAB_RANK_RUNNING) x->ranks[0].status = LAB_RANK_DONE;
    x->ranks[0].wall_s = lab_mpi_now() - x->t0;
    lab_mpi_gather(x);
    int lost;
    return lab_mpi_failed(x, lab_isolate_interrupted(), &lost);
}

/* A rank other than 0 (lab_window_runner.stop): rank 0 said the run is over. */
static int lab_mpi_window_over(void *vctx)
{
    return ((lab_mpi_ctx *)vctx)->over;
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
    lab_mpi_catch_cont();
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

    lab_mpi_hello me;
    memset(&me, 0, sizeof me);
    me.rank = rank;
    me.local_rank = local_rank;
    me.local_size = local_size;
    me.pid = (int64_t)getpid();
    gethostname(me.host, sizeof me.host - 1);
    static lab_sched_machine share; /* large: not on the stack */
    int host_gpus = 0;
    lab_mpi_take_share(local_rank, local_size, &share, &host_gpus, me.device, sizeof me.device);
    lab_replay_opts opts = *opts_in;
    opts.progress = 0; /* one progress line per rank would interleave */
    if (opts.want_mps && opts.mps && share.ngpu > 0) {
        /* The rank's own daemons, for its own GPUs (lab_mps_replay.h) */
        char who[64];
        snprintf(who, sizeof who, "lab replay --mpi: rank %d: ", rank);
        lab_mps_replay_start(opts.mps, stderr, who);
    }
    char note[200];
    opts.jobs = me.jobs = lab_sched_workers(&share, opts.backend, opts.jobs, note, sizeof note);

    lab_mpi_ctx x;
    memset(&x, 0, sizeof x);
    x.opts = &opts;
    x.rank = rank;
    x.size = size;
    x.host = me.host;
    /* More cases than a plain replay holds at once: windowed as lab_window_run windows them, every rank walking the
     * same windows, rank 0 dealing each window's seed groups and gathering its cases before the next. */
    size_t planned = lab_replay_count(&opts);
    x.windowed = planned > lab_replay_window_at();
    lab_status st = lab_mpi_fault_parse(&x.fault, size);
    if (st == LAB_OK && opts.backend == LAB_BACKEND_CUDA && host_gpus > 0 && share.ngpu == 0)
        st = lab_err_set(LAB_ERR_ARG, "--mpi: rank %d (local rank %d of %d on host %s) has no GPU: its host has %d GPU%s "
                         "(%s) for %d ranks; start at most %d rank%s there (one rank drives all of a host's GPUs)",
                         rank, local_rank, local_size, me.host, host_gpus, host_gpus == 1 ? "" : "s", share.source,
                         local_size, host_gpus, host_gpus == 1 ? "" : "s");
    if (x.windowed) {
        x.check_total = planned;
        x.check_groups = lab_replay_window(&opts);
    } else {
        if (st == LAB_OK) st = lab_replay_cases(&opts, &x.all, &x.n_all);
        if (st == LAB_OK) st = lab_replay_groups_make(x.all, x.n_all, &x.groups);
        if (st == LAB_OK && x.groups.nparts > LAB_MPI_MAX_PARTS)
            st = lab_err_set(LAB_ERR_ARG, "--mpi: %zu incidents, at most %d", x.groups.nparts, LAB_MPI_MAX_PARTS);
        if (st == LAB_OK && !(x.reported = calloc(x.n_all ? x.n_all : 1, 1)))
            st = lab_err_set(LAB_ERR_NOMEM, "--mpi: out of memory");
        x.check_total = x.n_all;
        x.check_groups = x.groups_total = x.groups.ng;
    }
    me.n_total = x.check_total;
    me.n_groups = x.check_groups;
    double longest = 0.0;
    for (size_t i = 0; i < opts.n_incidents; ++i) longest = fmax(longest, lab_replay_watchdog(&opts, opts.incidents[i]));
    x.patience = longest + LAB_MPI_GRACE_S;

    if (rank == 0 && st == LAB_OK) {
        x.ranks = calloc((size_t)size, sizeof *x.ranks);
        x.pending = calloc((size_t)size, sizeof *x.pending);
        x.has_pending = calloc((size_t)size, 1);
        if (!x.ranks || !x.pending || !x.has_pending) st = lab_err_set(LAB_ERR_NOMEM, "--mpi: out of memory");
        for (int r = 0; st == LAB_OK && r < size; ++r) x.ranks[r].status = LAB_RANK_RUNNING;
        if (st == LAB_OK) {
            x.ranks[0].hello = me;
            x.ranks[0].have_hello = 1;
        }
        if (st == LAB_OK && !x.windowed) st = lab_mpi_dealer_make(&x);
    }
    if (rank == 0 && st == LAB_OK && opts.out_dir) st = lab_fs_mkdirs(opts.out_dir);
    /* Agree on the start while every rank is surely alive: if one cannot start, none does. */
    int bad_here = st != LAB_OK, bad_any = bad_here;
    if (MPI_Allreduce(&bad_here, &bad_any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS) bad_any = 1;
    if (bad_any && st == LAB_OK) st = lab_err_set(LAB_ERR_IO, "--mpi: another rank could not start (see its message)");
    if (st != LAB_OK) {
        if (rank != 0) fprintf(stderr, "lab replay --mpi: rank %d: %s\n", rank, lab_err_msg());
        lab_mpi_ctx_free(&x);
        lab_mpi_finalize(LAB_EXIT_FAILED);
        lab_mpi_share_verdict(verdict, st, rank);
        return st;
    }

    double t0 = x.t0 = lab_mpi_now();
    if (rank == 0) {
        for (int r = 0; r < size; ++r) x.ranks[r].last_heard = t0;
        x.judged_at = t0;
        lab_isolate_on_tick(lab_mpi_serve, &x); /* answers the others while its own cases run */
    } else {
        lab_mpi_tell(&x, &me, sizeof me, LAB_MPI_TAG_HELLO);
        lab_isolate_on_tick(lab_mpi_alive, &x); /* says it is alive while its cases run */
    }

    if (x.windowed) {
        /* Rank 0 writes the set from the windows as a plain windowed replay does, the ranks' table in its summary. */
        opts.summary_fields = lab_mpi_summary_fields;
        opts.summary_ctx = &x;
        lab_window_runner wr = {lab_mpi_window_run, rank == 0 ? lab_mpi_window_finish : NULL,
                                rank == 0 ? NULL : lab_mpi_window_over, &x, rank != 0};
        st = lab_window_run_by(&opts, report, verdict, planned, &wr);
    } else {
        st = lab_replay_execute_fed(&opts, x.all, x.n_all, &x.groups, lab_mpi_feed, &x, lab_mpi_case_done, &x);
        if (st == LAB_OK && x.fail[0]) st = lab_err_set(LAB_ERR_IO, "%s", x.fail);
    }
    lab_isolate_on_tick(NULL, NULL);
    double my_wall = lab_mpi_now() - t0;

    if (rank != 0) {
        lab_mpi_done_msg d;
        memset(&d, 0, sizeof d);
        d.n_sent = x.n_reported;
        d.wall_s = my_wall;
        d.status = st;
        d.interrupted = lab_isolate_interrupted();
        if (st != LAB_OK) snprintf(d.error, sizeof d.error, "%s", lab_err_msg());
        lab_mpi_tell(&x, &d, sizeof d, LAB_MPI_TAG_DONE);
        lab_mpi_ctx_free(&x);
        lab_mpi_await_release(rank);
        lab_mpi_finalize(st == LAB_OK ? 0 : LAB_EXIT_FAILED);
        lab_mpi_share_verdict(verdict, st, rank);
        return st;
    }

    int interrupted = lab_isolate_interrupted(), lost = 0, code;
    lab_status st2 = st;
    if (x.windowed) {
        /* the set is written (or could not be: st) */
        lab_mpi_failed(&x, interrupted, &lost);
        lab_mpi_print_ranks(&x, report, x.rank_failed);
        code = st == LAB_OK ? verdict->exit_status : LAB_EXIT_FAILED;
    } else {
        /* Rank 0: its own harness status, then everyone else's results. */
        x.ranks[0].status = st == LAB_OK ? LAB_RANK_DONE : LAB_RANK_BAD;
        x.ranks[0].wall_s = my_wall;
        if (st != LAB_OK) {
            snprintf(x.ranks[0].why, sizeof x.ranks[0].why, "its harness failed: %s", lab_err_msg());
            lab_deal_retire(x.dealer, 0); /* what is left goes to the others */
        }
        lab_mpi_gather(&x);
        if (x.fault.kind == LAB_MPI_FAULT_LATE) { /* tests: a report that takes long to write, every other rank done */
            struct timespec ts = {3, 0};
            while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
        }
        double wall = lab_mpi_now() - t0;
        interrupted = lab_isolate_interrupted();
        lab_mpi_failed(&x, interrupted, &lost);
        lab_mpi_settle(&x, interrupted); /* cases no one reported: the failed rank is named in each */
        /* A failed rank is part of the one verdict (NOT OK even where its lost cases are a bug's CRASH/HANG). */
        lab_verdict_run run = {.ranks_failed = x.rank_failed};
        opts.summary_fields = lab_mpi_summary_fields;
        opts.summary_ctx = &x;
        st2 = lab_replay_report(&opts, report, x.all, x.n_all, wall, &run, verdict);
        lab_mpi_print_ranks(&x, report, x.rank_failed);
        code = st2 != LAB_OK ? LAB_EXIT_FAILED : verdict->exit_status;
    }
    /* Every file is written: the ranks that are still there may end (lab_mpi_await_release). */
    for (int r = 1; r < size; ++r)
        if (x.ranks[r].status == LAB_RANK_DONE || x.ranks[r].status == LAB_RANK_BAD ||
            (interrupted && x.ranks[r].status == LAB_RANK_RUNNING)) {
            int token = 1;
            MPI_Send(&token, 1, MPI_INT, r, LAB_MPI_TAG_RELEASE, MPI_COMM_WORLD);
        }

    lab_case_record *all = x.all;
    size_t n_all = x.n_all;
    x.all = NULL;
    lab_mpi_ctx_free(&x);
    if (lost) {
        /* A stalled rank never reaches MPI_Finalize, and Open MPI's finalize may wait for a dead one for
         * ever: end the job, the files are written. MPI_Abort itself is bounded too. */
        fprintf(stderr, "lab replay --mpi: ending the job with MPI_Abort: a rank died or is hung\n");
        fflush(NULL);
        lab_mpi_deadline_arm(code);
        MPI_Abort(MPI_COMM_WORLD, code);
        _exit(code); /* not reached: MPI_Abort does not return */
    }
    lab_mpi_finalize(code);
    *recs_out = all;
    *n_recs = n_all;
    return st2;
}

#endif
