/* lab_mpi: replay scale-out across MPI ranks (Open MPI), the entry and a rank's life: MPI started, the rank's share of
 * its host taken, the ranks agreed on the start, its cases run (lab_mpi_feed; rank 0 serving the others, lab_mpi_serve;
 * windowed, lab_mpi_window), the merged report on rank 0, the ranks released and MPI ended (lab_mpi_signal). A build
 * without MPI gets the stubs below. */
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

#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lab_ctxgate.h"
#include "lab_device.h"
#include "lab_fs.h"
#include "lab_isolate.h"
#include "lab_journal.h"
#include "lab_mpi_feed.h"
#include "lab_mpi_int.h"
#include "lab_mpi_serve.h"
#include "lab_mpi_signal.h"
#include "lab_mpi_window.h"
#include "lab_mps_replay.h"
#include "lab_sched.h"
#include "lab_window.h"
#include "lab_testknobs.h"

lab_status lab_mpi_check(void) { return LAB_OK; }

/* This rank's share of its host, without any CUDA call: the host's GPUs as the machine probe sees them (a
 * CUDA_VISIBLE_DEVICES list already set by a scheduler, else the driver's listing in PCI order), split among the ranks
 * on the host (lab_sched_host_share); the rank's set becomes the only visible one (CUDA_VISIBLE_DEVICES, "-1" for none;
 * CUDA_DEVICE_ORDER=PCI_BUS_ID for the driver's listing, unless already set) and is described into desc. *m gets the
 * share (its CPUs too); *host_gpus the host's GPU count. */
static void lab_mpi_take_share(int local_rank, int local_size, lab_machine *m, int *host_gpus, char *desc,
                               size_t len)
{
    lab_device_machine(m);
    *host_gpus = m->ngpu;
    int first = lab_sched_host_share(m, local_rank, local_size);
    if (*host_gpus == 0) {
        snprintf(desc, len, "none (%s)", m->source);
        return;
    }
    char mine[LAB_MACHINE_MAX_GPUS * 33];
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

/* Reads LAB_MPI_TEST_FAULT (tests only) into *f: kind NONE and rank -1 when unset. LAB_ERR_ARG naming the variable when
 * it is not crash:R, hang:R (R 1 .. size-1), slow:R or late:R (R 0 .. size-1). */
static lab_status lab_mpi_fault_parse(lab_mpi_fault *f, int size)
{
    f->kind = LAB_MPI_FAULT_NONE;
    f->rank = -1;
    const char *s = getenv(LAB_TESTKNOB_MPI_FAULT);
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
    double until = lab_clock_now() + (lab_isolate_interrupted() ? 3 * LAB_MPI_INTERRUPT_WAIT_S : LAB_MPI_RELEASE_WAIT_S);
    long ns = 1000000;
    while (MPI_Test(&req, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && !flag) {
        if (lab_clock_now() > until) {
            fprintf(stderr, "lab replay --mpi: rank %d: rank 0 did not end the run within %d s of this rank's last case\n",
                    rank, LAB_MPI_RELEASE_WAIT_S);
            return;
        }
        struct timespec ts = {0, ns};
        nanosleep(&ts, NULL);
        if (ns < 50000000) ns *= 2;
    }
}

/* A rank's own verdict where rank 0 reports the run: ok unless its harness failed. */
static void lab_mpi_share_verdict(lab_verdict *v, lab_status st, int rank)
{
    memset(v, 0, sizeof *v);
    v->ok = st == LAB_OK;
    v->exit_status = st == LAB_OK ? LAB_EXIT_OK : LAB_EXIT_FAILED;
    snprintf(v->line, sizeof v->line, "rank %d: %s", rank, st == LAB_OK ? "its cases went to rank 0" : "its harness failed");
}

/* Frees what the context holds (NULL after). */
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
    free(x->log);
    x->log = NULL, x->n_log = x->cap_log = 0;
    x->all = NULL, x->reported = NULL, x->ranks = NULL, x->got = NULL, x->dealt_to = NULL, x->dealer = NULL;
    x->pending = NULL, x->has_pending = NULL;
}

/* MPI started (unless the caller did) with errors returned as codes (a failed peer must not take rank 0 down with it),
 * this rank dying with its launcher and taking mpirun's SIGCONT as the interrupt (lab_mpi_signal.h): me gets its rank,
 * the ranks on its host and where it runs. LAB_ERR_IO when MPI_Init fails. */
static lab_status lab_mpi_start(lab_mpi_hello *me, int *size)
{
    int inited = 0;
    MPI_Initialized(&inited);
    /* hwloc's GPU plugins make every MPI process scan the GPUs for its topology, and no rank binds by it (lab_sched
     * sizes from the CPUs it may use): off unless the user set them. On 4 x H200 they were most of mpirun's start (`mpirun
     * -np 4 true` 1.20 s with them, 0.07 s without); the same setting for mpirun itself is the launcher's (mpi_scaling.sh,
     * lab_fleet.py, docs/scale-out.md). */
    if (!inited) setenv("HWLOC_COMPONENTS", "-gl,-cuda,-nvml,-opencl,-rsmi", 0);
    if (!inited && MPI_Init(NULL, NULL) != MPI_SUCCESS) return lab_err_set(LAB_ERR_IO, "--mpi: MPI_Init failed");
    lab_mpi_die_with_launcher();
    lab_mpi_catch_cont();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank = 0, local_rank = 0, local_size = 1;
    *size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    lab_mpi_my_rank = rank;
    MPI_Comm local;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local) == MPI_SUCCESS) {
        MPI_Comm_rank(local, &local_rank);
        MPI_Comm_size(local, &local_size);
        MPI_Comm_free(&local);
    }
    memset(me, 0, sizeof *me);
    me->rank = rank;
    me->local_rank = local_rank;
    me->local_size = local_size;
    me->pid = (int64_t)getpid();
    gethostname(me->host, sizeof me->host - 1);
    return LAB_OK;
}

/* The rank's share of its host (lab_mpi_take_share: *share, *host_gpus, me->device), its MPS daemons for its own GPUs,
 * and its workers: opts->how.jobs and me->jobs, where they came from in me->jobs_from. opts is the rank's copy. */
static void lab_mpi_size_rank(lab_mpi_hello *me, lab_replay_opts *opts, lab_machine *share, int *host_gpus)
{
    lab_mpi_take_share(me->local_rank, me->local_size, share, host_gpus, me->device, sizeof me->device);
    opts->how.progress = 0;                                                   /* one line per rank would interleave */
    opts->how.ctx_gate =
        lab_ctxgate_share(LAB_CTXGATE_WIDTH, me->local_size); /* the host's contexts, not each rank's */
    if (opts->how.want_mps && opts->how.mps && share->ngpu > 0) {
        char who[64];
        snprintf(who, sizeof who, "lab replay --mpi: rank %d: ", me->rank);
        lab_mps_replay_start(opts->how.mps, stderr, who);
    }
    opts->how.jobs = me->jobs = lab_replay_workers(opts, share, me->jobs_from, sizeof me->jobs_from);
}

/* What every rank plans alike: the case list and its seed groups (or, windowed, the windows' sizes), the test fault,
 * the patience; a CUDA rank left without a GPU is refused (LAB_ERR_ARG naming it). */
static lab_status lab_mpi_plan(lab_mpi_ctx *x, const lab_mpi_hello *me, const lab_machine *share, int host_gpus,
                               size_t planned)
{
    const lab_replay_opts *opts = x->opts;
    x->windowed = planned > lab_replay_window_at();
    lab_status st = lab_mpi_fault_parse(&x->fault, x->size);
    if (st == LAB_OK && opts->what.backend == LAB_BACKEND_CUDA && host_gpus > 0 && share->ngpu == 0)
        st = lab_err_set(LAB_ERR_ARG, "--mpi: rank %d (local rank %d of %d on host %s) has no GPU: its host has %d GPU%s "
                         "(%s) for %d ranks; start at most %d rank%s there (one rank drives all of a host's GPUs)",
                         me->rank, me->local_rank, me->local_size, me->host, host_gpus, host_gpus == 1 ? "" : "s",
                         share->source, me->local_size, host_gpus, host_gpus == 1 ? "" : "s");
    if (x->windowed) {
        x->check_total = planned;
        x->check_groups = lab_replay_window(opts);
    } else {
        if (st == LAB_OK) st = lab_replay_cases(opts, &x->all, &x->n_all);
        if (st == LAB_OK) st = lab_replay_groups_make(x->all, x->n_all, &x->groups);
        if (st == LAB_OK && x->groups.nparts > LAB_MPI_MAX_PARTS)
            st = lab_err_set(LAB_ERR_ARG, "--mpi: %zu incidents, at most %d", x->groups.nparts, LAB_MPI_MAX_PARTS);
        if (st == LAB_OK && !(x->reported = calloc(x->n_all ? x->n_all : 1, 1)))
            st = lab_err_set(LAB_ERR_NOMEM, "--mpi: out of memory");
        x->check_total = x->n_all;
        x->check_groups = x->groups_total = x->groups.ng;
    }
    double longest = 0.0;
    for (size_t i = 0; i < opts->what.n_incidents; ++i)
        longest = fmax(longest, lab_replay_watchdog(opts, opts->what.incidents[i]));
    x->patience = longest + LAB_MPI_GRACE_S;
    return st;
}

/* Rank 0's own state: its view of every rank, the dealer, --out and the journal every finished case goes to as rank 0
 * gets it (lab_journal.h: opts->how.journal). */
static lab_status lab_mpi_prepare_rank0(lab_mpi_ctx *x, lab_replay_opts *opts, const lab_mpi_hello *me)
{
    x->ranks = calloc((size_t)x->size, sizeof *x->ranks);
    x->pending = calloc((size_t)x->size, sizeof *x->pending);
    x->has_pending = calloc((size_t)x->size, 1);
    if (!x->ranks || !x->pending || !x->has_pending) return lab_err_set(LAB_ERR_NOMEM, "--mpi: out of memory");
    for (int r = 0; r < x->size; ++r) x->ranks[r].status = LAB_RANK_RUNNING;
    x->ranks[0].hello = *me;
    x->ranks[0].have_hello = 1;
    lab_status st = x->windowed ? LAB_OK : lab_mpi_dealer_make(x);
    if (st == LAB_OK && opts->how.out_dir && !opts->how.journal) st = lab_replay_journal_open(opts, &opts->how.journal);
    return st;
}

/* Agrees on the start while every rank is surely alive: if one cannot start, none does. */
static lab_status lab_mpi_agree(lab_status st)
{
    int bad_here = st != LAB_OK, bad_any = bad_here;
    if (MPI_Allreduce(&bad_here, &bad_any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS) bad_any = 1;
    if (bad_any && st == LAB_OK) st = lab_err_set(LAB_ERR_IO, "--mpi: another rank could not start (see its message)");
    return st;
}

/* Runs this rank's cases: rank 0 serving the others from its run's loop, the others telling it they are alive; windowed
 * as lab_window_run_by walks windows (rank 0 writing the set from them), else fed by rank 0's deals. */
static lab_status lab_mpi_run(lab_mpi_ctx *x, lab_replay_opts *opts, const lab_mpi_hello *me, FILE *report,
                              lab_verdict *verdict, size_t planned)
{
    x->t0 = lab_clock_now();
    if (x->rank == 0) {
        for (int r = 0; r < x->size; ++r) x->ranks[r].last_heard = x->t0;
        x->judged_at = x->t0;
        lab_isolate_on_tick(lab_mpi_serve, x); /* answers the others while its own cases run */
    } else {
        lab_mpi_tell(x, me, sizeof *me, LAB_MPI_TAG_HELLO);
        lab_isolate_on_tick(lab_mpi_alive, x); /* says it is alive while its cases run */
    }
    lab_status st;
    if (x->windowed) {
        opts->how.summary_fields = lab_mpi_summary_fields;
        opts->how.summary_ctx = x;
        lab_window_runner wr = {lab_mpi_window_run, x->rank == 0 ? lab_mpi_window_finish : NULL,
                                x->rank == 0 ? NULL : lab_mpi_window_over, x, x->rank != 0};
        st = lab_window_run_by(opts, report, verdict, planned, &wr);
    } else {
        st = lab_replay_execute_fed(opts, x->all, x->n_all, &x->groups, lab_mpi_feed, x, lab_mpi_case_done, x);
        if (st == LAB_OK && x->fail[0]) st = lab_err_set(LAB_ERR_IO, "%s", x->fail);
    }
    lab_isolate_on_tick(NULL, NULL);
    return st;
}

/* A rank other than 0, its cases run: its last word to rank 0, then it waits to be released and ends MPI. */
static lab_status lab_mpi_leave(lab_mpi_ctx *x, lab_status st, lab_verdict *verdict)
{
    lab_mpi_done_msg d;
    memset(&d, 0, sizeof d);
    d.n_sent = x->n_reported;
    d.wall_s = lab_clock_now() - x->t0;
    d.status = st;
    d.interrupted = lab_isolate_interrupted();
    if (st != LAB_OK) snprintf(d.error, sizeof d.error, "%s", lab_err_msg());
    lab_mpi_tell(x, &d, sizeof d, LAB_MPI_TAG_DONE);
    lab_mpi_ctx_free(x);
    lab_mpi_await_release(x->rank);
    lab_mpi_finalize(st == LAB_OK ? 0 : LAB_EXIT_FAILED);
    lab_mpi_share_verdict(verdict, st, x->rank);
    return st;
}

/* Rank 0, its own cases run (st its harness's status): every other rank's results gathered, the lost cases settled and
 * the merged set written (windowed: already written), the ranks' table printed, the ranks released. *lost: a rank died
 * or is hung; *code the exit status. Returns the set's status. */
static lab_status lab_mpi_conclude(lab_mpi_ctx *x, lab_replay_opts *opts, FILE *report, lab_verdict *verdict,
                                   lab_status st, int *lost, int *code)
{
    int interrupted = lab_isolate_interrupted();
    lab_status st2 = st;
    if (x->windowed) { /* the set is written (or could not be: st) */
        lab_mpi_failed(x, interrupted, lost);
        lab_mpi_print_ranks(x, report, x->rank_failed);
        *code = st == LAB_OK ? verdict->exit_status : LAB_EXIT_FAILED;
    } else {
        x->ranks[0].status = st == LAB_OK ? LAB_RANK_DONE : LAB_RANK_BAD;
        x->ranks[0].wall_s = lab_clock_now() - x->t0;
        if (st != LAB_OK) {
            snprintf(x->ranks[0].why, sizeof x->ranks[0].why, "its harness failed: %s", lab_err_msg());
            lab_deal_retire(x->dealer, 0); /* what is left goes to the others */
        }
        lab_mpi_gather(x);
        if (x->fault.kind == LAB_MPI_FAULT_LATE) { /* tests: a report that takes long to write, every other rank done */
            struct timespec ts = {3, 0};
            while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
        }
        double wall = lab_clock_now() - x->t0;
        interrupted = lab_isolate_interrupted();
        lab_mpi_failed(x, interrupted, lost);
        lab_mpi_settle(x, interrupted); /* cases no one reported: the failed rank is named in each */
        /* A failed rank is part of the one verdict (NOT OK even where its lost cases are a bug's CRASH/HANG). */
        lab_verdict_run run = {.ranks_failed = x->rank_failed};
        opts->how.summary_fields = lab_mpi_summary_fields;
        opts->how.summary_ctx = x;
        st2 = lab_replay_report(opts, report, x->all, x->n_all, wall, &run, verdict);
        lab_mpi_print_ranks(x, report, x->rank_failed);
        *code = st2 != LAB_OK ? LAB_EXIT_FAILED : verdict->exit_status;
    }
    /* Every file is written: the ranks that are still there may end (lab_mpi_await_release). */
    for (int r = 1; r < x->size; ++r)
        if (x->ranks[r].status == LAB_RANK_DONE || x->ranks[r].status == LAB_RANK_BAD ||
            (interrupted && x->ranks[r].status == LAB_RANK_RUNNING)) {
            int token = 1;
            MPI_Send(&token, 1, MPI_INT, r, LAB_MPI_TAG_RELEASE, MPI_COMM_WORLD);
        }
    return st2;
}

lab_status lab_mpi_replay(const lab_replay_opts *opts_in, FILE *report, lab_verdict *verdict,
                          lab_case_record **recs_out, size_t *n_recs)
{
    lab_mpi_share_verdict(verdict, LAB_ERR_IO, 0);
    *recs_out = NULL;
    *n_recs = 0;
    lab_mpi_hello me;
    int size;
    lab_status st = lab_mpi_start(&me, &size);
    if (st != LAB_OK) return st;
    static lab_machine share; /* large: not on the stack */
    int host_gpus = 0;
    lab_replay_opts opts = *opts_in;
    lab_mpi_size_rank(&me, &opts, &share, &host_gpus);
    lab_mpi_ctx x;
    memset(&x, 0, sizeof x);
    x.opts = &opts;
    x.rank = me.rank;
    x.size = size;
    x.host = me.host;
    size_t planned = lab_replay_count(&opts);
    st = lab_mpi_plan(&x, &me, &share, host_gpus, planned);
    me.n_total = x.check_total;
    me.n_groups = x.check_groups;
    /* The run's workers and GPUs, every rank's together: each rank's pool cuts seed batches, and rank 0 deals them, as
     * a plain replay of the whole run would (each answer's share laid out alone, its batches got smaller as the answers
     * did, and 0008's cases cost half as much again). */
    int here[2] = {opts.how.jobs, share.ngpu}, run[2] = {0, 0};
    if (MPI_Allreduce(here, run, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS)
        opts.how.run_workers = run[0], opts.how.run_gpus = run[1];
    if (me.rank == 0 && st == LAB_OK) st = lab_mpi_prepare_rank0(&x, &opts, &me);
    if ((st = lab_mpi_agree(st)) != LAB_OK) {
        if (me.rank != 0) fprintf(stderr, "lab replay --mpi: rank %d: %s\n", me.rank, lab_err_msg());
        lab_mpi_ctx_free(&x);
        if (opts.how.journal != opts_in->how.journal) lab_journal_close(opts.how.journal);
        lab_mpi_finalize(LAB_EXIT_FAILED);
        lab_mpi_share_verdict(verdict, st, me.rank);
        return st;
    }
    st = lab_mpi_run(&x, &opts, &me, report, verdict, planned);
    if (me.rank != 0) return lab_mpi_leave(&x, st, verdict);
    int lost = 0, code;
    lab_status st2 = lab_mpi_conclude(&x, &opts, report, verdict, st, &lost, &code);
    if (opts.how.journal != opts_in->how.journal) lab_journal_close(opts.how.journal);
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
