/* test_dsh: incident 0006: the analyzer on hand-made traces (each match state), the trace ring, and the real
 * MPI job: the fix completes, the bug hangs and is named, G = 1 completes, the watchdog leaves nothing behind. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab_test_case.h"
#include "dsh.h"
#include "dsh_trace.h"
#include "lab_golden.h"
#include "lab_incident.h"
#include "lab_isolate.h"
#include "lab_tensor.h"

/* ---------------------------------------------------------------------------------------------- */
/* Hand-made traces                                                                                */

static dsh_rank_trace T[5];

/* world ranks, the last one the distiller, each with no records yet. */
static void tr_init(int world)
{
    memset(T, 0, sizeof T);
    for (int r = 0; r < world; ++r) {
        T[r].present = 1;
        T[r].head.magic = DSH_TRACE_MAGIC;
        T[r].head.rank = r;
        T[r].head.world = world;
        T[r].head.role = r == world - 1 ? DSH_ROLE_DISTILLER : DSH_ROLE_TRAINER;
        T[r].head.ring = DSH_TRACE_RING;
    }
}

static void tr_add(int r, int op, int root, long long count, int rows, int cols, int step, int micro)
{
    dsh_record x = {T[r].n, op, root, count, rows, cols, step, micro, 0.1 * (double)T[r].n, 0};
    T[r].rec[T[r].n++] = x;
}

/* One exchange (bcast, gather, scatter) as every rank of a 5-rank job enters it; the distiller at dstep. */
static void tr_exchange(int world, int tstep, int tmicro, int dstep, int rows, int cols)
{
    for (int r = 0; r < world; ++r) {
        int d = r == world - 1;
        int step = d ? dstep : tstep, micro = d ? -1 : tmicro;
        tr_add(r, DSH_OP_BCAST, 0, 2, 0, 0, step, micro);
        tr_add(r, DSH_OP_GATHER, world - 1, (long long)rows * cols, rows, cols, step, micro);
        tr_add(r, DSH_OP_SCATTER, world - 1, (long long)rows * DSH_OUT_COLS, rows, cols, step, micro);
    }
}

static dsh_analysis analyze(int world)
{
    dsh_analysis a;
    cr_assert_eq(dsh_trace_analyze(T, world, &a), LAB_OK, "%s", lab_err_msg());
    return a;
}

Test(dsh_trace, fully_matched)
{
    tr_init(5);
    for (int s = 0; s < 3; ++s) tr_exchange(5, s, 0, s, 16, 2048);
    for (int r = 0; r < 5; ++r) tr_add(r, DSH_OP_FINALIZE, -1, 0, 0, 0, 3, r == 4 ? -1 : 0);
    dsh_analysis a = analyze(5);
    cr_assert_eq(a.state, DSH_MATCH_FULL);
    cr_assert_eq(a.first_bad_seq, -1);
    cr_assert_eq(a.first_step_seq, -1);
    cr_assert_eq(a.empty_shape_seq, -1);
    cr_assert_eq(a.n_matched, 10);
    cr_assert_str_eq(a.verdict, "all 10 collectives fully matched (seq 0-9)");
}

/* The incident's pattern: trainers at step 2 micro 0 enter the bcast while the distiller, its step counter
 * at 3 = steps, has left its loop and entered finalize. */
Test(dsh_trace, type_mismatch_names_distiller_and_counters)
{
    tr_init(5);
    int g = 2;
    for (int e = 0; e < 3; ++e) tr_exchange(5, e / g, e % g, e, 16, 2048);
    for (int r = 0; r < 4; ++r) tr_add(r, DSH_OP_BCAST, 0, 2, 0, 0, 1, 1);
    tr_add(4, DSH_OP_FINALIZE, -1, 0, 0, 0, 3, -1);
    dsh_analysis a = analyze(5);
    cr_assert_eq(a.state, DSH_MATCH_TYPE);
    cr_assert_eq(a.first_bad_seq, 9);
    cr_assert_eq(a.culprit, 4);
    cr_assert_eq(a.first_step_seq, 3, "the second exchange: trainers at step 0 micro 1, distiller at step 1");
    cr_assert_eq(a.step_distiller, 1);
    cr_assert_eq(a.step_trainer, 0);
    cr_assert_eq(a.micro_trainer, 1);
    cr_assert(strstr(a.verdict, "seq 9 (collective type mismatch): ranks 0-3 in bcast at step 1 micro 1, rank 4 "
                                "(distiller) in finalize at step 3"),
              "%s", a.verdict);
    cr_assert(strstr(a.counters, "the distiller's step counter runs ahead from seq 3 (step 1; trainers at step 0 "
                                 "micro 1)"),
              "%s", a.counters);
}

Test(dsh_trace, size_mismatch)
{
    tr_init(3);
    tr_exchange(3, 0, 0, 0, 16, 2048);
    /* seq 3..5: rank 1 gathers a batch of another shape. */
    for (int r = 0; r < 3; ++r) tr_add(r, DSH_OP_BCAST, 0, 2, 0, 0, 1, r == 2 ? -1 : 0);
    tr_add(0, DSH_OP_GATHER, 2, 16 * 1024, 16, 1024, 1, 0);
    tr_add(1, DSH_OP_GATHER, 2, 8 * 1024, 8, 1024, 1, 0);
    tr_add(2, DSH_OP_GATHER, 2, 16 * 1024, 16, 1024, 1, -1);
    dsh_analysis a = analyze(3);
    cr_assert_eq(a.state, DSH_MATCH_SIZE);
    cr_assert_eq(a.first_bad_seq, 4);
    cr_assert_eq(a.culprit, 1);
    cr_assert(strstr(a.verdict, "rank 1 in gather at step 1 micro 0 with 8192 elements"), "%s", a.verdict);
}

Test(dsh_trace, rank_never_arrived)
{
    tr_init(4);
    tr_exchange(4, 0, 0, 0, 8, 512);
    tr_add(0, DSH_OP_BCAST, 0, 2, 0, 0, 1, 0);
    tr_add(1, DSH_OP_BCAST, 0, 2, 0, 0, 1, 0);
    tr_add(3, DSH_OP_BCAST, 0, 2, 0, 0, 1, -1);
    dsh_analysis a = analyze(4);
    cr_assert_eq(a.state, DSH_MATCH_MISSING);
    cr_assert_eq(a.first_bad_seq, 3);
    cr_assert_eq(a.culprit, 2);
    cr_assert(strstr(a.verdict, "rank 2 never arrived (last seen at seq 2 in scatter at step 0 micro 0)"), "%s",
              a.verdict);
    /* A rank without any trace at all. */
    tr_init(3);
    tr_add(0, DSH_OP_BCAST, 0, 2, 0, 0, 0, 0);
    tr_add(1, DSH_OP_BCAST, 0, 2, 0, 0, 0, 0);
    T[2].present = 0;
    a = analyze(3);
    cr_assert_eq(a.state, DSH_MATCH_MISSING);
    cr_assert_eq(a.culprit, 2);
    cr_assert(strstr(a.verdict, "rank 2 never arrived (no trace)"), "%s", a.verdict);
}

Test(dsh_trace, empty_shape_flagged)
{
    tr_init(3);
    tr_exchange(3, 0, 0, 0, 0, 0); /* a (0, 0) shape went through the bcast */
    dsh_analysis a = analyze(3);
    cr_assert_eq(a.state, DSH_MATCH_FULL);
    cr_assert_eq(a.empty_shape_seq, 1);
    cr_assert_eq(a.empty_shape_rank, 0);
    cr_assert(strstr(a.verdict, "rank 0 holds an empty (0, 0) shape at seq 1"), "%s", a.verdict);
}

Test(dsh_trace, ranks_str_and_bad_world)
{
    char buf[64];
    int a[] = {0, 1, 2, 3, 5, 7, 8};
    dsh_trace_ranks_str(a, 7, buf, sizeof buf);
    cr_assert_str_eq(buf, "ranks 0-3,5,7-8");
    dsh_trace_ranks_str(a + 5, 1, buf, sizeof buf);
    cr_assert_str_eq(buf, "rank 7");
    dsh_analysis an;
    cr_assert_eq(dsh_trace_analyze(T, 1, &an), LAB_ERR_ARG);
    cr_assert_eq(dsh_trace_analyze(T, DSH_TRACE_MAXRANK + 1, &an), LAB_ERR_ARG);
}

/* The writer's ring keeps the newest DSH_TRACE_RING records, in the file as written; the reader returns
 * them in seq order, and rejects a corrupted file naming it. */
Test(dsh_trace, ring_roundtrip_and_corrupt_file)
{
    char dir[] = "/tmp/lab-0006-test-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    dsh_trace_file *tf = dsh_trace_open(dir, 0, 1, DSH_ROLE_TRAINER, 0.0);
    cr_assert_not_null(tf, "%s", lab_err_msg());
    for (int i = 0; i < 300; ++i) dsh_trace_enter(tf, DSH_OP_BCAST, 0, 2, 0, 0, i / 3, i % 3, (double)i);
    dsh_trace_close(tf);
    dsh_rank_trace *rt = calloc(1, sizeof *rt);
    cr_assert_eq(dsh_trace_read(dir, 1, rt), LAB_OK, "%s", lab_err_msg());
    cr_assert(rt->present);
    cr_assert_eq(rt->n, DSH_TRACE_RING);
    cr_assert_eq(rt->rec[0].seq, 300 - DSH_TRACE_RING);
    cr_assert_eq(rt->rec[DSH_TRACE_RING - 1].seq, 299);
    cr_assert_eq(rt->rec[DSH_TRACE_RING - 1].step, 99);
    char path[256];
    snprintf(path, sizeof path, "%s/rank0.trace", dir);
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    fputc('X', f); /* the magic's first byte */
    fclose(f);
    cr_assert_eq(dsh_trace_read(dir, 1, rt), LAB_ERR_FORMAT);
    cr_assert(strstr(lab_err_msg(), "rank0.trace"), "%s", lab_err_msg());
    free(rt);
    unlink(path);
    rmdir(dir);
}

/* ---------------------------------------------------------------------------------------------- */
/* The real job (Open MPI)                                                                         */

/* 1 when mpirun and the job binary are there; otherwise the test skips, saying why. */
static int have_mpi(void)
{
    char job[1024];
    dsh_job_path(".", job, sizeof job);
    if (system("command -v mpirun >/dev/null 2>&1") != 0) {
        cr_skip_test("mpirun not on PATH: the MPI reproducer cannot run here");
        return 0;
    }
    if (access(job, X_OK) != 0) {
        cr_skip_test("%s not built (needs mpicc)", job);
        return 0;
    }
    return 1;
}

static lab_case_result run_case(const char *variant, uint64_t seed)
{
    return lab_test_run(&dsh_incident, variant, seed, ".");
}

/* The case's Perfetto trace (dsh_trace_export) has every rank of the job: its name, and its collectives as complete
 * events on tid 1, the first a broadcast (each exchange starts with the shape's). */
static void assert_trace_has_every_rank(const char *variant, const char *backend, uint64_t seed, int world)
{
    char stem[1200], path[1300];
    dsh_trace_export_stem(".", variant, backend, seed, stem, sizeof stem);
    snprintf(path, sizeof path, "%s.trace.json", stem);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "no trace %s", path);
    char *text = malloc(1 << 22);
    size_t n = fread(text, 1, (1 << 22) - 1, f);
    fclose(f);
    text[n] = 0;
    cJSON *doc = cJSON_Parse(text);
    free(text);
    cr_assert_not_null(doc, "%s: not JSON", path);
    int named[DSH_TRACE_MAXRANK] = {0}, colls[DSH_TRACE_MAXRANK] = {0}, first_bcast[DSH_TRACE_MAXRANK] = {0};
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "traceEvents"))
    {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "name"));
        const char *ph = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "ph"));
        int pid = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "pid"));
        int tid = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "tid"));
        cr_assert(name && ph && pid >= 0 && pid < world, "%s: an event of no rank of %d", path, world);
        if (!strcmp(ph, "M") && !strcmp(name, "process_name")) named[pid] = 1;
        if (!strcmp(ph, "X") && tid == 1 && colls[pid]++ == 0) first_bcast[pid] = !strncmp(name, "bcast", 5);
    }
    cJSON_Delete(doc);
    for (int r = 0; r < world; ++r)
        cr_assert(named[r] && colls[r] > 0 && first_bcast[r], "%s: rank %d: named %d, %d collectives, first a bcast %d",
                  path, r, named[r], colls[r], first_bcast[r]);
}

/* No case draws a shape beyond DSH_ROWS_MAX x DSH_COLS_MAX (the NCCL job sizes its staging by them once), and the fix
 * with G = 4 reaches both. */
Test(dsh_job, shapes_stay_within_the_declared_largest)
{
    int reached = 0;
    for (uint64_t seed = 1; seed <= 2000; ++seed)
        for (int v = 0; v < 4; ++v) {
            static const int variants[4] = {DSH_VAR_FIX, DSH_VAR_BUG, DSH_VAR_OLD_G1, DSH_VAR_LOGGED};
            dsh_params p;
            dsh_params_from_seed(seed, variants[v], &p);
            for (int step = 0; step <= p.steps; ++step) {
                long long shape[2];
                dsh_shape(p.variant, dsh_g_at(p.variant, p.g, step), seed, (uint64_t)step, shape);
                cr_assert(shape[0] >= 1 && shape[0] <= DSH_ROWS_MAX && shape[1] >= 1 && shape[1] <= DSH_COLS_MAX,
                          "seed %llu variant %d: %lld x %lld", (unsigned long long)seed, variants[v], shape[0], shape[1]);
                reached |= shape[0] == DSH_ROWS_MAX && shape[1] == DSH_COLS_MAX;
            }
        }
    cr_expect(reached, "the largest shape is drawn");
}

Test(dsh_job, params_cover_the_ranges)
{
    int seen_n[5] = {0}, seen_g[5] = {0}, seen_s[7] = {0};
    for (uint64_t s = 1; s <= 64; ++s) {
        dsh_params p;
        dsh_params_from_seed(s, DSH_VAR_FIX, &p);
        cr_assert(p.trainers >= 2 && p.trainers <= 4 && p.g >= 1 && p.g <= 4 && p.steps >= 3 && p.steps <= 6);
        seen_n[p.trainers]++, seen_g[p.g]++, seen_s[p.steps]++;
        dsh_params_from_seed(s, DSH_VAR_BUG, &p);
        cr_assert(p.g >= 2 && p.g <= 4, "the bug variant draws G >= 2");
        dsh_params_from_seed(s, DSH_VAR_OLD_G1, &p);
        cr_assert_eq(p.g, 1);
        dsh_params_from_seed(s, DSH_VAR_LOGGED, &p);
        cr_assert(p.g >= 3 && p.g <= 4 && p.steps >= DSH_LOGGED_RAMP + 2 && p.steps <= 6,
                  "the logged variant: G 3..4 after the ramp, and steps past it");
    }
    for (int i = 2; i <= 4; ++i) cr_assert(seen_n[i], "N=%d drawn", i);
    for (int i = 1; i <= 4; ++i) cr_assert(seen_g[i], "G=%d drawn", i);
    for (int i = 3; i <= 6; ++i) cr_assert(seen_s[i], "steps=%d drawn", i);
}

Test(dsh_job, fix_completes_every_collective_matched, .timeout = 120)
{
    if (!have_mpi()) return;
    for (uint64_t s = 1; s <= 4; ++s) {
        lab_case_result r = run_case("fix", s);
        cr_assert(r.passed, "seed %llu: %s", (unsigned long long)s, r.detail);
        cr_assert_eq(lab_result_get(&r, "hung"), 0);
        cr_assert_eq(lab_result_get(&r, "first_bad_seq"), -1);
        cr_assert_eq(lab_result_get(&r, "first_step_seq"), -1);
        cr_assert_eq(lab_result_get(&r, "empty_shapes"), 0);
        cr_assert_eq(lab_result_get(&r, "outputs_bad"), 0);
        /* 3 collectives per step, plus finalize, all fully matched */
        cr_assert_eq(lab_result_get(&r, "collectives_matched"), 3 * lab_result_get(&r, "steps") + 1);
        assert_trace_has_every_rank("fix", "cpu", s, (int)lab_result_get(&r, "n_trainers") + 1);
    }
}

Test(dsh_job, bug_hangs_and_names_the_distiller_step_counter, .timeout = 120)
{
    if (!have_mpi()) return;
    for (uint64_t s = 1; s <= 3; ++s) {
        lab_case_result r = run_case("bug-step-counter", s);
        cr_assert(!r.passed, "seed %llu: the bug completed: %s", (unsigned long long)s, r.detail);
        cr_assert_eq(lab_result_get(&r, "hung"), 1, "%s", r.detail);
        cr_assert(lab_result_get(&r, "G") >= 2);
        double steps = lab_result_get(&r, "steps");
        /* The distiller leaves after `steps` exchanges: the trainers' next bcast meets its finalize. */
        cr_assert_eq(lab_result_get(&r, "first_bad_seq"), 3 * steps, "%s", r.detail);
        cr_assert_eq(lab_result_get(&r, "first_step_seq"), 3, "%s", r.detail);
        cr_assert(strstr(r.detail, "the distiller's step counter runs ahead from seq 3"), "%s", r.detail);
        cr_assert(lab_result_get(&r, "time_to_detect_s") < DSH_DEADLINE_S + 1.0);
    }
}

/* The logged variant hangs after the state the incident's log shows: the distiller at step 3 holding a (0, 0) batch
 * from the trainers' step-2 broadcast (the criterion makes a hang without it an ERROR). */
Test(dsh_job, logged_variant_hangs_in_the_logged_state, .timeout = 120)
{
    if (!have_mpi()) return;
    for (uint64_t s = 1; s <= 4; ++s) {
        lab_case_result r = run_case("bug-as-logged", s);
        cr_assert(r.verdict_set && !r.passed, "seed %llu: %s", (unsigned long long)s, r.detail);
        cr_assert_eq(lab_result_get(&r, "hung"), 1, "%s", r.detail);
        cr_assert_eq(lab_result_get(&r, "as_logged"), 1, "%s", r.detail);
        cr_assert_geq(lab_result_get(&r, "distiller_step"), DSH_LOGGED_RAMP + 1, "%s", r.detail);
        cr_assert_geq(lab_result_get(&r, "empty_shapes"), 1);
        cr_assert(strstr(r.detail, "distiller at step 3 holds a (0, 0) batch from the trainers' step 2 micro 1"), "%s",
                  r.detail);
        cr_assert_lt(lab_result_get(&r, "detect_latency_s"), 1.0);
    }
}

Test(dsh_job, old_counters_with_g1_complete, .timeout = 120)
{
    if (!have_mpi()) return;
    for (uint64_t s = 1; s <= 2; ++s) {
        lab_case_result r = run_case("old-counters-g1", s);
        cr_assert(r.passed, "seed %llu: %s", (unsigned long long)s, r.detail);
        cr_assert_eq(lab_result_get(&r, "G"), 1);
    }
}

/* The long-lived job: seeds run one after another on one job; a hung seed is abandoned on the abort word and does
 * not poison the next; a rank that dies ends the job cleanly and the next seed gets a new one; nothing of a job
 * outlives its end. */
static const dsh_watch test_watch = {DSH_STALL_S, DSH_DEADLINE_S, DSH_STARTUP_S, DSH_QUIET_S};

/* Seed `seed` of variant on this process's jobs of distill_job, `jobs` of them taking turns. */
static dsh_job_result job_seed_of(int jobs, int variant, uint64_t seed, const dsh_watch *w, int crash_rank,
                                  double delay, dsh_analysis *a)
{
    char job[1024];
    dsh_job_path(".", job, sizeof job);
    char dir[] = "/tmp/lab-0006-t-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    dsh_params p;
    dsh_params_from_seed(seed, variant, &p);
    p.crash_rank = crash_rank;
    p.startup_delay_s = delay;
    p.jobs = jobs;
    p.retire_delay_s = jobs > 1 ? 0.5 : 0; /* as long as NCCL's abort can take */
    dsh_job_result jr;
    cr_assert_eq(dsh_job_run(job, &p, seed, w, dir, &jr), LAB_OK, "%s", lab_err_msg());
    if (a && !jr.never_started) {
        dsh_rank_trace *tr = calloc((size_t)p.trainers + 1, sizeof *tr);
        cr_assert_eq(dsh_trace_read(dir, p.trainers + 1, tr), LAB_OK, "%s", lab_err_msg());
        cr_assert_eq(dsh_trace_analyze(tr, p.trainers + 1, a), LAB_OK);
        free(tr);
        if (!(jr.completed && a->first_bad_seq < 0)) dsh_job_retire_comm();
    }
    dsh_rmdir(dir);
    return jr;
}

static dsh_job_result job_seed(int variant, uint64_t seed, const dsh_watch *w, int crash_rank, double delay,
                               dsh_analysis *a)
{
    return job_seed_of(1, variant, seed, w, crash_rank, delay, a);
}

/* No process of the job: not in its session, not with the job's directory on its command line. */
static void assert_job_gone(const dsh_job_result *jr)
{
    cr_assert_eq(dsh_orphans(jr->sid, jr->job_dir, 0), 0, "processes of the job remain");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "ps -eo stat=,args= | grep -v '^Z' | grep -F '%s' | grep -v grep", jr->job_dir);
    cr_assert_neq(system(cmd), 0, "ps still lists a process of %s", jr->job_dir);
}

Test(dsh_job, a_hung_seed_is_abandoned_and_the_next_runs_on_the_same_job, .timeout = 60)
{
    if (!have_mpi()) return;
    dsh_analysis a;
    dsh_job_result bug = job_seed(DSH_VAR_BUG, 5, &test_watch, -1, 0, &a);
    cr_assert(bug.hung, "the bug hangs");
    cr_assert_str_eq(bug.why, "deadlock");
    cr_assert(bug.abandoned_clean, "every rank left the hung seed on the abort word");
    cr_assert_lt(bug.detect_s, 1.0, "the hang is judged %.2f s after the last collective", bug.detect_s);
    cr_assert_geq(bug.detect_s, DSH_QUIET_S - 0.01);
    pid_t sid = bug.sid;
    for (uint64_t s = 1; s <= 3; ++s) {
        dsh_job_result fix = job_seed(DSH_VAR_FIX, s, &test_watch, -1, 0, &a);
        cr_assert(fix.reused && fix.sid == sid, "seed %llu ran on the same job", (unsigned long long)s);
        cr_assert(fix.completed && !fix.hung, "seed %llu after a hang: %s", (unsigned long long)s, a.verdict);
        cr_assert_eq(a.first_bad_seq, -1, "%s", a.verdict);
    }
    /* a seed that completes with its collectives unpaired (the logged bug on MPI leaves messages behind) */
    dsh_job_result logged = job_seed(DSH_VAR_LOGGED, 2, &test_watch, -1, 0, &a);
    cr_assert(logged.hung && logged.reused);
    dsh_job_result fix = job_seed(DSH_VAR_FIX, 4, &test_watch, -1, 0, &a);
    cr_assert(fix.completed && a.first_bad_seq < 0, "after the logged bug: %s", a.verdict);
    dsh_job_stop();
    assert_job_gone(&fix);
}

/* A host with no ssh or rsh (the GPU images): Open MPI 4 refuses to start without a launch agent even for a job on
 * this host alone; the launcher names one where none is set and the job starts. PATH here holds mpirun and what it
 * execs, nothing else. */
/* Jobs that take turns (the NCCL job keeps DSH_NCCL_JOBS; here two MPI jobs): the seed after a hung one runs on the
 * other job while the hung one's ranks retire its communicator, the next seeds stay there, and the retired job serves
 * again once its ranks are ready, its new communicator clean. */
Test(dsh_job, a_hung_seeds_job_retires_while_the_next_runs_on_another, .timeout = 90)
{
    if (!have_mpi()) return;
    dsh_analysis a;
    dsh_job_result bug = job_seed_of(2, DSH_VAR_BUG, 5, &test_watch, -1, 0, &a);
    cr_assert(bug.hung && bug.abandoned_clean, "the bug hangs and every rank leaves it");
    dsh_job_result fix = job_seed_of(2, DSH_VAR_FIX, 1, &test_watch, -1, 0, &a);
    cr_assert(fix.completed && !fix.hung, "%s", a.verdict);
    cr_assert(fix.job != bug.job && fix.sid != bug.sid, "the seed after the hang ran on the other job");
    dsh_job_result again = job_seed_of(2, DSH_VAR_FIX, 2, &test_watch, -1, 0, &a);
    cr_assert(again.completed && again.job == fix.job && again.reused, "a ready job keeps serving");
    dsh_job_result bug2 = job_seed_of(2, DSH_VAR_BUG, 6, &test_watch, -1, 0, &a);
    cr_assert(bug2.hung && bug2.job == fix.job);
    dsh_job_result back = job_seed_of(2, DSH_VAR_FIX, 3, &test_watch, -1, 0, &a);
    cr_assert(back.reused && back.job == bug.job && back.sid == bug.sid, "the first job, retired, serves again");
    cr_assert(back.completed && !back.hung && a.first_bad_seq == -1, "after its retirement: %s", a.verdict);
    dsh_job_stop();
    assert_job_gone(&bug);
    assert_job_gone(&fix);
}

Test(dsh_job, starts_on_a_host_without_ssh, .timeout = 60)
{
    if (!have_mpi()) return;
    char dir[] = "/tmp/lab-dsh-nossh-XXXXXX", cmd[512];
    cr_assert_not_null(mkdtemp(dir));
    static const char *const tools[] = {"mpirun", "mpiexec", "orterun", "orted", "prterun", "prted"};
    for (size_t i = 0; i < sizeof tools / sizeof *tools; ++i) {
        snprintf(cmd, sizeof cmd, "p=$(command -v %s) && ln -s \"$p\" %s/%s", tools[i], dir, tools[i]);
        (void)!system(cmd);
    }
    char *path = strdup(getenv("PATH")), *agent = getenv("OMPI_MCA_plm_rsh_agent");
    agent = agent ? strdup(agent) : NULL;
    setenv("PATH", dir, 1);
    unsetenv("OMPI_MCA_plm_rsh_agent");
    dsh_job_stop(); /* a job started by an earlier test would be reused */
    lab_case_result r = run_case("fix", 1);
    dsh_job_stop();
    setenv("PATH", path, 1);
    if (agent) setenv("OMPI_MCA_plm_rsh_agent", agent, 1);
    free(path), free(agent);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    (void)!system(cmd);
    cr_assert(r.passed, "%s", r.detail);
}

Test(dsh_job, a_crashed_rank_ends_the_job_cleanly_and_the_next_seed_starts_one, .timeout = 60)
{
    if (!have_mpi()) return;
    dsh_analysis a;
    dsh_job_result ok = job_seed(DSH_VAR_FIX, 1, &test_watch, -1, 0, &a);
    cr_assert(ok.completed);
    dsh_job_result dead = job_seed(DSH_VAR_FIX, 2, &test_watch, 1, 0, &a);
    cr_assert(dead.reused && !dead.completed, "a seed whose rank died did not complete");
    cr_assert(dead.exited || dead.hung, "the job ended or the seed was judged hung");
    cr_assert_eq(dead.orphans_left, 0);
    if (dead.exited) assert_job_gone(&dead);
    dsh_job_result next = job_seed(DSH_VAR_FIX, 3, &test_watch, -1, 0, &a);
    cr_assert(next.completed, "the next seed: %s", a.verdict);
    cr_assert(!dead.exited || !next.reused, "a new job after the crash");
    dsh_job_stop();
    assert_job_gone(&next);
}

/* An MPI job carries the buffers of its abandoned seeds: after DSH_MPI_ABANDON_MAX of them the next seed gets a new
 * job, and the old one leaves nothing behind. */
Test(dsh_job, an_mpi_job_is_restarted_after_its_abandon_limit, .timeout = 120)
{
    if (!have_mpi()) return;
    dsh_analysis a;
    dsh_job_result first = job_seed(DSH_VAR_BUG, 1, &test_watch, -1, 0, &a);
    cr_assert(first.hung && !first.reused);
    for (int k = 1; k < DSH_MPI_ABANDON_MAX; ++k) {
        dsh_job_result bug = job_seed(DSH_VAR_BUG, 1 + (uint64_t)k, &test_watch, -1, 0, &a);
        cr_assert(bug.hung && bug.reused && bug.sid == first.sid, "abandoned seed %d on the first job", k + 1);
    }
    dsh_job_result fix = job_seed(DSH_VAR_FIX, 1, &test_watch, -1, 0, &a);
    cr_assert(fix.respawned && !fix.reused && fix.sid != first.sid, "a new job after %d abandoned seeds",
              DSH_MPI_ABANDON_MAX);
    cr_assert(fix.completed && a.first_bad_seq < 0, "%s", a.verdict);
    assert_job_gone(&first);
    dsh_job_stop();
    assert_job_gone(&fix);
}

/* A start-up longer than startup_s: the job is ended while mpirun is still launching its ranks, and nothing is left. */
Test(dsh_job, a_job_killed_in_startup_leaves_no_process, .timeout = 60)
{
    if (!have_mpi()) return;
    dsh_watch w = test_watch;
    w.startup_s = 0.15;
    dsh_job_result jr = job_seed(DSH_VAR_FIX, 5, &w, -1, 1.0, NULL);
    cr_assert(jr.never_started && !jr.hung, "a job killed in start-up is not a hang");
    cr_assert_str_eq(jr.why, "startup");
    assert_job_gone(&jr);
}

/* A hang is no progress, never a slow start: ranks that take 2.5 s to start (longer than the stall window and
 * than a deadline counted from launch would allow) complete and pass; the bug's seed on that job is still judged
 * hung, from the ranks' state, and start-up is measured apart. */
Test(dsh_job, slow_start_is_not_a_hang_but_a_deadlock_is, .timeout = 90)
{
    if (!have_mpi()) return;
    dsh_watch w = {0.5, 2.0, DSH_STARTUP_S, DSH_QUIET_S}; /* stall and run deadline both shorter than the start-up */
    dsh_analysis a;
    dsh_job_result fix = job_seed(DSH_VAR_FIX, 5, &w, -1, 2.5, &a);
    cr_expect(!fix.hung && !fix.never_started && fix.completed, "slow start judged %s", fix.why ? fix.why : "?");
    cr_expect_geq(fix.startup_s, 2.5, "start-up measured: %.2f s", fix.startup_s);
    dsh_job_result bug = job_seed(DSH_VAR_BUG, 5, &w, -1, 2.5, &a);
    cr_expect(bug.reused && bug.hung, "the bug on the same job hangs");
    cr_expect(bug.why && !strcmp(bug.why, "deadlock"), "why: %s", bug.why ? bug.why : "none");
    dsh_job_stop();
}

/* The deadlock rule does not mistake a loaded machine for a hang: fix seeds pass with every core busy. */
Test(dsh_job, no_false_hang_with_every_core_busy, .timeout = 120)
{
    if (!have_mpi()) return;
    int n = lab_isolate_ncpu(); /* the CPUs this process may use (affinity, cgroup quota) */
    if (n > 64) n = 64;
    pid_t hogs[128];
    int nh = 0;
    for (int k = 0; k < 2 * n; ++k) {
        pid_t p = fork();
        if (p == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL); /* dies with the test, even one killed at its timeout */
            for (volatile unsigned long x = 0;; ++x) {}
        }
        if (p > 0) hogs[nh++] = p;
    }
    int failed = 0;
    char first[300] = "";
    for (uint64_t s = 1; s <= 12; ++s) {
        lab_case_result r = run_case("fix", s);
        if (!r.passed && !failed++) snprintf(first, sizeof first, "seed %llu: %s", (unsigned long long)s, r.detail);
    }
    for (int k = 0; k < nh; ++k) kill(hogs[k], SIGKILL), waitpid(hogs[k], NULL, 0);
    cr_assert_eq(failed, 0, "%d fix seeds failed under load; %s", failed, first);
}

/* The golden schedule equals the protocol model's (that it verifies, and that a corrupted copy stops the case,
 * tests/test_incidents.c checks for every incident). */
Test(dsh_golden, is_the_protocol_model)
{
    const char *dir = "incidents/" LAB_INCIDENT_ID "/golden";
    lab_golden_manifest m;
    memset(&m, 0, sizeof m);
    cr_assert_eq(lab_golden_manifest_read(dir, &m), LAB_OK, "%s", lab_err_msg());
    const lab_golden_entry *e = lab_golden_find(&m, "schedule_fix_seed1.npy");
    cr_assert_not_null(e);
    lab_tensor t = {0};
    cr_assert_eq(lab_golden_load(dir, e, &t), LAB_OK, "%s", lab_err_msg());
    dsh_params p;
    dsh_params_from_seed(1, DSH_VAR_FIX, &p);
    size_t n = dsh_schedule_fix(&p, 1, NULL, 0);
    cr_assert_eq(n, (size_t)(p.trainers + 1) * (3 * (size_t)p.steps + 1));
    cr_assert_eq(t.shape[0], n);
    double *model = calloc(n * 7, sizeof *model);
    dsh_schedule_fix(&p, 1, model, n);
    cr_assert_eq(memcmp(model, t.data, n * 7 * sizeof *model), 0);
    free(model);
    lab_tensor_free(&t);
    lab_golden_manifest_free(&m);
}

/* The NCCL job (CUDA backend): with fewer than 2 GPUs every variant SKIPs and says why; on a host with 2 or
 * more GPUs the fix passes and the bug is detected, as on the CPU. */
Test(dsh_job, nccl_backend_skips_or_runs, .timeout = 120)
{
    const char *names[] = {"fix", "bug-step-counter", "old-counters-g1", "bug-as-logged"};
    for (int i = 0; i < 4; ++i) {
        const lab_variant *v = lab_incident_variant(&dsh_incident, names[i]);
        cr_assert_not_null(v);
        if (!dsh_incident.run_cuda) {
            cr_log_info("%s: built without CUDA, no NCCL job", names[i]);
            continue;
        }
        lab_case c;
        char c_gdir[4096];
        lab_case_init(&c, &dsh_incident, v, 1, LAB_BACKEND_CUDA, ".", c_gdir, sizeof c_gdir);
        lab_case_result r;
        memset(&r, 0, sizeof r);
        cr_assert_eq(lab_case_run(&c, &r), LAB_OK, "%s", lab_err_msg());
        if (r.skipped) {
            cr_assert(strstr(r.detail, "GPU") || strstr(r.detail, "mpirun") || strstr(r.detail, "distill_nccl"),
                      "a skip says why: %s", r.detail);
            continue;
        }
        cr_assert(r.verdict_set);
        cr_assert_eq(r.passed, v->role == LAB_ROLE_FIX, "%s: %s", names[i], r.detail);
        assert_trace_has_every_rank(names[i], "cuda", 1, (int)lab_result_get(&r, "n_trainers") + 1);
    }
}
