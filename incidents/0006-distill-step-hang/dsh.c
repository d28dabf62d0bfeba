/* dsh: incident 0006, the distillation step-counter hang: parameters, the mpirun launcher with watchdog and
 * orphan check, the criterion over the ranks' collective traces, and the registration. */
#define _GNU_SOURCE
#include "dsh.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lab_fs.h"
#include "lab_golden.h"
#include "lab_rng.h"
#include "lab_tensor.h"

#ifndef DSH_NCCL_BIN
#define DSH_NCCL_BIN "build/incidents/" LAB_INCIDENT_ID "/distill_nccl"
#endif
#ifndef DSH_JOB_BIN
#define DSH_JOB_BIN "build/incidents/" LAB_INCIDENT_ID "/distill_job"
#endif

void dsh_params_from_seed(uint64_t seed, int variant, dsh_params *p)
{
    uint32_t u0 = lab_rng_u32(seed, DSH_STREAM_PARAMS, 0), u1 = lab_rng_u32(seed, DSH_STREAM_PARAMS, 1),
             u2 = lab_rng_u32(seed, DSH_STREAM_PARAMS, 2);
    memset(p, 0, sizeof *p);
    p->variant = variant;
    p->trainers = 2 + (int)(u0 % 3u);
    p->g = variant == DSH_VAR_BUG ? 2 + (int)(u1 % 3u) : variant == DSH_VAR_FIX ? 1 + (int)(u1 % 4u)
         : variant == DSH_VAR_LOGGED ? 3 + (int)(u1 % 2u) : 1;
    /* the logged state needs the distiller to reach step DSH_LOGGED_RAMP + 1 inside its loop */
    p->steps = variant == DSH_VAR_LOGGED ? DSH_LOGGED_RAMP + 2 + (int)(u2 % 3u) : 3 + (int)(u2 % 4u);
    p->job_world = 5;
    p->transport_leaks = 1;
    p->jobs = 1;
    p->crash_rank = -1;
}

void dsh_job_path(const char *root, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s", root && root[0] ? root : ".", DSH_JOB_BIN);
}

void dsh_nccl_path(const char *root, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s", root && root[0] ? root : ".", DSH_NCCL_BIN);
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

/* The incident's log, as the lab reproduces it (variant bug-as-logged): the distiller's shape broadcast of its step
 * DSH_LOGGED_RAMP + 1 is the trainers' broadcast of step DSH_LOGGED_RAMP, micro-step 1, and carries (0, 0): the
 * distiller at step 3 with a (0, 0) batch while the trainers are at step 2. Where the job then stops depends on the
 * transport (the README says how). 1 when the traces show it, with a description in buf. */
static int dsh_logged_state(const dsh_rank_trace *tr, int world, char *buf, size_t cap)
{
    const dsh_rank_trace *d = &tr[world - 1];
    buf[0] = 0;
    const dsh_record *g = NULL;
    for (size_t k = 0; d->present && k < d->n && !g; ++k) {
        const dsh_record *x = &d->rec[k];
        if (x->op == DSH_OP_GATHER && x->step == DSH_LOGGED_RAMP + 1 && x->rows == 0 && x->cols == 0) g = x;
    }
    if (!g || g->seq == 0) return 0;
    uint64_t bseq = g->seq - 1; /* its shape broadcast */
    for (int t = 0; t < world - 1; ++t) {
        const dsh_record *b = NULL;
        for (size_t k = 0; tr[t].present && k < tr[t].n && !b; ++k)
            if (tr[t].rec[k].seq == bseq) b = &tr[t].rec[k];
        if (!b || b->op != DSH_OP_BCAST || b->step != DSH_LOGGED_RAMP || b->micro != 1) return 0;
    }
    const dsh_record *dl = &d->rec[d->n - 1];
    snprintf(buf, cap, "distiller at step %d holds a (0, 0) batch from the trainers' step %d micro 1 broadcast; it "
             "ends at step %d in %s holding (%d, %d)%s", g->step, DSH_LOGGED_RAMP, dl->step, dsh_op_name(dl->op),
             dl->rows, dl->cols, d->head.errors ? ", its receive truncated" : "");
    return 1;
}

lab_status dsh_run_case(const lab_case *c, lab_case_result *r, int variant, const dsh_watch *w)
{
    dsh_params p;
    dsh_params_from_seed(c->seed, variant, &p);
    char job[1024];
    dsh_job_path(c->root, job, sizeof job);
    if (c->backend == LAB_BACKEND_CUDA) {
        /* The NCCL job: one process per GPU, as many trainers as the GPUs allow (one GPU is the distiller's). */
#ifdef LAB_HAVE_CUDA
        char why[200] = "";
        int gpus = dsh_cuda_gpus(why, sizeof why);
        if (gpus < 2) {
            lab_result_skip_as(r, LAB_SKIP_NEEDS_GPUS, "the NCCL job needs 2 GPUs, found %d%s%s", gpus, why[0] ? ": " : "",
                               why);
            return LAB_OK;
        }
        if (gpus > DSH_TRACE_MAXRANK) gpus = DSH_TRACE_MAXRANK;
        p.trainers = gpus - 1;
        p.job_world = gpus;
        p.transport_leaks = 0; /* ncclCommAbort frees an abandoned seed's communicator */
        p.jobs = DSH_NCCL_JOBS;
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
        return lab_err_set(LAB_ERR_IO, "0006: the job did not start within %.0f s (not every rank traced)%s%s: a harness "
                           "failure, not a hang", w->startup_s, jr.log_tail[0] ? "; " : "", jr.log_tail);
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
    int finished = 1, steps_ok = 1, outputs_bad = 0, empty = 0, dstep = -1, tstep = 1 << 30;
    for (int k = 0; k < world; ++k) {
        finished &= tr[k].present && tr[k].head.finished;
        if (tr[k].present) {
            steps_ok &= tr[k].head.step == p.steps;
            outputs_bad += tr[k].head.outputs_bad;
            empty += tr[k].head.empty_shapes;
            if (k == world - 1) dstep = tr[k].head.step;
            else if (tr[k].head.step < tstep) tstep = tr[k].head.step;
        } else {
            steps_ok = 0;
        }
    }
    char logged[200] = "";
    int as_logged = dsh_logged_state(tr, world, logged, sizeof logged);
    free(tr);
    dsh_rmdir(dir);
    if (jr.orphans_left > 0)
        return lab_err_set(LAB_ERR_IO, "0006: %d process(es) of the job still alive 2 s after SIGKILL", jr.orphans_left);
    /* The logged variant reproduces the incident only if it hangs where the log left it: a hang elsewhere means the
     * reproducer drifted, which no verdict may hide. */
    if (variant == DSH_VAR_LOGGED && jr.hung && !as_logged)
        return lab_err_set(LAB_ERR_MISMATCH, "0006 N=%d G=%d: hung (%s), but not in the logged state: %s; %s", p.trainers,
                           p.g, jr.why, logged, a.verdict);

    lab_result_metric(r, "n_trainers", p.trainers);
    lab_result_metric(r, "G", p.g);
    lab_result_metric(r, "steps", p.steps);
    lab_result_metric(r, "hung", jr.hung);
    lab_result_metric(r, "time_to_detect_s", jr.hung ? jr.end_s : NAN);
    lab_result_metric(r, "detect_latency_s", jr.hung ? jr.detect_s : NAN);
    lab_result_metric(r, "job_s", jr.end_s);
    lab_result_metric(r, "startup_s", jr.startup_s);
    lab_result_metric(r, "comm_s", jr.comm_s);
    lab_result_metric(r, "job", jr.job);
    lab_result_metric(r, "job_wait_s", jr.wait_s);
    lab_result_metric(r, "first_bad_seq", (double)a.first_bad_seq);
    lab_result_metric(r, "first_step_seq", (double)a.first_step_seq);
    lab_result_metric(r, "collectives_matched", (double)a.n_matched);
    lab_result_metric(r, "empty_shapes", empty);
    lab_result_metric(r, "outputs_bad", outputs_bad);
    lab_result_metric(r, "distiller_step", dstep);
    lab_result_metric(r, "trainer_step", tstep == 1 << 30 ? -1 : tstep);
    if (variant == DSH_VAR_LOGGED) lab_result_metric(r, "as_logged", as_logged);
    if (isnan(golden_bad)) lab_result_metric(r, "orphans_found", jr.orphans_found);
    else lab_result_metric(r, "golden_mismatch", golden_bad);

    int clean = !jr.hung && jr.completed && finished && steps_ok && a.first_bad_seq < 0 && a.first_step_seq < 0 &&
                a.empty_shape_seq < 0 && empty == 0 && outputs_bad == 0 && !(golden_bad > 0);
    /* A seed whose collectives did not pair up may leave messages behind on its communicator: the next seed gets a
     * new one. */
    if (!(jr.completed && a.first_bad_seq < 0)) dsh_job_retire_comm();
    char what[200];
    if (jr.hung)
        snprintf(what, sizeof what, "HANG (%s, %.2f s after the last collective)", jr.why, jr.detect_s);
    else if (jr.exited)
        snprintf(what, sizeof what, "the job ended: mpirun exited with status %d (%s)", jr.exit_code, jr.log_tail);
    else if (!jr.completed)
        snprintf(what, sizeof what, "%d rank(s) failed a collective", jr.ranks_error);
    else
        snprintf(what, sizeof what, "completed %d steps%s%s", p.steps,
                 outputs_bad ? ", teacher outputs mismatched" : "", finished && steps_ok ? "" : ", steps incomplete");
    if (golden_bad > 0)
        snprintf(what + strlen(what), sizeof what - strlen(what), ", %.0f records off the golden schedule", golden_bad);
    if (!clean && traced) fprintf(stderr, "0006 seed %llu: trace of this case (Perfetto):\n    %s.trace.json\n",
                                  (unsigned long long)c->seed, trace_stem);
    /* The logged state or the first collective that did not pair up, then the step-counter finding (once: the
     * analyzer's verdict may end with it already). */
    if (as_logged)
        lab_result_verdict(r, clean, "N=%d G=%d: %s; as logged: %s; %s", p.trainers, p.g, what, logged, a.counters);
    else if (a.counters[0] && !strstr(a.verdict, a.counters))
        lab_result_verdict(r, clean, "N=%d G=%d steps=%d: %s; %s; %s", p.trainers, p.g, p.steps, what, a.counters,
                           a.verdict);
    else
        lab_result_verdict(r, clean, "N=%d G=%d steps=%d: %s; %s", p.trainers, p.g, p.steps, what, a.verdict);
    return LAB_OK;
}

static const dsh_watch dsh_default_watch = {DSH_STALL_S, DSH_DEADLINE_S, DSH_STARTUP_S, DSH_QUIET_S};

/* The variant's run (param: DSH_VAR_*), on Open MPI for the CPU backend and NCCL for CUDA. */
static lab_status dsh_run(const lab_case *c, lab_case_result *r)
{
    return dsh_run_case(c, r, c->variant->param, &dsh_default_watch);
}

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
    {.name = "bug-as-logged", .role = LAB_ROLE_BUG, .param = DSH_VAR_LOGGED, .gpus = 2, .detect = LAB_DETECT_FAIL,
     .what = "as the incident's log shows it: the shape broadcast every micro-step, the batch only on a cycle's first, "
             "G = 1 for two steps then 3..4: the distiller hangs at step 3 holding a (0, 0) batch"},
};

/* What the criterion compares, for plots (lab_metric_spec): the first separates bug and fix. */
static const lab_metric_spec dsh_metric_specs[] = {
    {"hung", 0, 1, NULL, "the job hung (1) or completed (0): every bug seed hangs, the fixes complete"},
    {"job_s", DSH_DEADLINE_S, 1, NULL, "wall time of the job against the deadline: a stalled job is killed after the stall window"},
};

const lab_incident dsh_incident = {
    .id = LAB_INCIDENT_ID,
    .title = "distillation step-counter hang under gradient accumulation (Open MPI)",
    .variants = dsh_variants,
    .n_variants = (int)(sizeof dsh_variants / sizeof dsh_variants[0]),
    .run_cpu = dsh_run,
    .run_cuda = LAB_IF_CUDA(dsh_run),
    .timeout_s = 90, /* the runner's watchdog: above start-up (60 s) plus the run's deadline (8 s) */
    .golden_bless = dsh_golden_bless,
    .default_seeds = 16,
    .worker_setup_s = 1.0, /* mpirun and the ranks' MPI (or NCCL) start-up, paid once per worker: its job serves every
                              later seed */
    .gpus_all = 1,         /* the NCCL job: one trainer per GPU beyond the distiller's */
    .plots = {
        .metric = "time_to_detect_s",
        .specs = dsh_metric_specs,
        .n_specs = (int)(sizeof dsh_metric_specs / sizeof dsh_metric_specs[0]),
        .figures = dsh_trace_figures,
    },
};
LAB_INCIDENT_REGISTER(dsh_incident);
