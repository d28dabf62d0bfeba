/* wr_incident: incident 0008: the upstream semi-CRF backward's structure at 4 warps (a replicated load of a value one thread of another warp stored, no barrier between), the historical changes, the fixes, and the one judge. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lab_bg.h"
#include "lab_fs.h"
#include "lab_golden.h"
#include "lab_incident.h"
#include "lab_par.h"
#include "lab_tensor.h"
#include "wr.h"

#ifdef LAB_HAVE_CUDA
#include "lab_cuda.h"
#endif

/* GPU launches per CUDA case: a bug is caught when a launch is wrong or the two differ; a fix must be right and give
 * the same bits in both. Two, not the four of the first replays: in a 1000-seed H100 replay
 * (docs/performance.md) every one of the 24000 launches of the 6000 bug cases (1000 seeds per bug
 * variant, 4 launches each) was wrong on its own, so the third and fourth launch never decided a case, and they cost
 * half of 0008's GPU time in a 1000-seed replay. A bug case's
 * second launch runs only when its first was right (the race did not fire): a wrong launch has already decided it,
 * and on an H100 that is every bug case (6000 of 6000 at 1000 seeds, both launches wrong, 2026-11-24), so the bugs
 * cost one launch each; a GPU where the race fires less often gets its second chance as before, shows it in
 * runs_wrong (recorded per case), and a seed missed by both launches is an XPASS. */
#define WR_CUDA_RUNS 2
/* A bug case's launches at most: each further one only while every launch before it was right. The firing depends on
 * how the GPU is shared, not only on the GPU: at the default seed batches every first launch was wrong in the
 * 1000-seed replays of one GPU, but on a 2 x H200 host 2 of 1000 bug-clamp cases had both launches right under
 * `--mpi` with one rank a GPU, and 1 to 3 of a variant's 1000 with `--batch-seeds 32` or 16 (the replay NOT OK, a bug
 * "not detected" that the next launch would have caught; with 8, 0 escaped there). Launches after the second cost only
 * the cases that escaped. */
#define WR_BUG_RUNS 8
#define WR_RUNS_MAX WR_BUG_RUNS
/* The GPU/CPU cross-check of a fix: the same float32 arithmetic in the same order on both, differing by the GPU's
 * exp and log roundings only, so far closer than the reference's tol. It was 2 tol (what two results each within tol
 * of the reference may differ by), which only a CPU model off by more than tol could fail; measured at most 0.067 tol
 * over the 378 cross-checked fix cases of a 1000-seed H100 replay (docs/performance.md), so half of tol, 7x that, is a bound a GPU that computes something else (or a CPU model that drifted from
 * the kernel) fails. */
#define WR_XCHECK_TOL 0.5

/* What a variant runs (variant param indexes wr_variant_cfgs). */
enum {
    WR_V_BUG,       /* 62b87b3: num_warps 4 (Triton's default), masked, unpadded, no barrier */
    WR_V_BUG8,      /* the same at num_warps 8 */
    WR_V_CLAMP,     /* 4df6af0: indices clamped to C-1 */
    WR_V_PAD,       /* d096430: gradient buffers padded to C_PAD, writes unclamped, reads clamped, sliced */
    WR_V_F64,       /* 4e488c4's float64 accumulation, still at 4 warps */
    WR_V_SMEM,      /* the bug with its buffers in shared memory (what racecheck can see) */
    WR_V_NW2,       /* 4e488c4's num_warps 2 */
    WR_V_BARRIER,   /* the right fix: a barrier after every store to the buffers */
    WR_V_OWNER,     /* the other right fix: no replicated load (the owner loads, shares through shared memory) */
    WR_V_N
};
static const wr_cfg wr_variant_cfgs[WR_V_N] = {
    [WR_V_BUG] = {4, 1, 0, WR_INDEX_RAW, 0, 0},     [WR_V_BUG8] = {8, 1, 0, WR_INDEX_RAW, 0, 0},
    [WR_V_CLAMP] = {4, 1, 0, WR_INDEX_CLAMP, 0, 0}, [WR_V_PAD] = {4, 1, 0, WR_INDEX_PAD, 0, 0},
    [WR_V_F64] = {4, 1, 0, WR_INDEX_RAW, 1, 0},     [WR_V_SMEM] = {4, 1, 0, WR_INDEX_RAW, 0, 1},
    [WR_V_NW2] = {2, 0, 0, WR_INDEX_RAW, 0, 0},     [WR_V_BARRIER] = {4, 1, 1, WR_INDEX_RAW, 0, 0},
    [WR_V_OWNER] = {4, 0, 0, WR_INDEX_RAW, 0, 0},
};

/* The seed's group: the case problem (lab_semicrf_case_problem: B = 2, T from the seed, K = 30, C = 39, boundary
 * projections), the forward's shapes, the float64 reference; and, made on first use (wr_group_cpu), the float32 CPU
 * forward and kernel. */
typedef struct {
    lab_semicrf_problem p;
    wr_fwd f;     /* the forward's shapes only (wr_forward_shapes): what the census and the CUDA launches need (the
                     GPU runs its own forward) */
    lab_semicrf_ref ref; /* on CUDA the device's, checked against wr_reference at the cross-check seeds */
    double ref_check;    /* that check (lab_semicrf_case_reference), NaN elsewhere */
    /* Made once, by the first case that needs them, under `lock` (the group stays read-only to its cases: these are
     * a memo of what setup could have made, kept out of setup so that a CUDA seed batch reaches the GPU without
     * waiting for CPU work most of its cases never use): */
    pthread_mutex_t lock;
    lab_bg_job *cpu_job; /* on CUDA at a cross-check seed: the two made ahead on the background thread (wr_cpu_ahead) */
    int cpu_tried;
    lab_status cpu_st;
    char cpu_msg[512];   /* cpu_st's message */
    wr_fwd fwd;   /* the float32 CPU forward (log Z, checkpoints) */
    wr_out cpu;   /* the float32 kernel on the CPU, the same for every float32 variant (test
                     semicrf_wr::cpu_arithmetic_is_the_same_for_every_float32_variant): the CPU backend's result, and on
                     CUDA what every fix is compared with at the cross-check seeds */
} wr_group;

static void wr_teardown(void *vg)
{
    wr_group *g = vg;
    if (!g) return;
    lab_bg_cancel(g->cpu_job);
    lab_semicrf_problem_free(&g->p);
    wr_fwd_free(&g->f);
    lab_semicrf_ref_free(&g->ref);
    wr_fwd_free(&g->fwd);
    wr_out_free(&g->cpu);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

/* The group's CPU forward and float32 kernel, made on the first call (every later call gets the same, or the same
 * error). On the CPU every load sees the latest store, so the float32 arithmetic does not depend on the warp count,
 * the barrier or the index variant (masked lanes never reach memory): once per seed serves every float32 variant;
 * each variant adds its census. */
static lab_status wr_group_cpu_make(wr_group *g)
{
    pthread_mutex_lock(&g->lock);
    if (!g->cpu_tried) {
        static const wr_cfg any_f32 = {4, 1, 1, WR_INDEX_RAW, 0, 0};
        g->cpu_tried = 1;
        g->cpu_st = wr_forward(&g->p, &g->fwd);
        if (g->cpu_st == LAB_OK) g->cpu_st = wr_out_alloc(&g->cpu, g->p.B, g->p.T, g->p.K, g->p.C);
        if (g->cpu_st == LAB_OK) g->cpu_st = wr_model(&g->p, &g->fwd, &any_f32, NULL, 0, 0, &g->cpu);
        if (g->cpu_st != LAB_OK) snprintf(g->cpu_msg, sizeof g->cpu_msg, "%s", lab_err_msg());
    }
    lab_status st = g->cpu_st;
    pthread_mutex_unlock(&g->lock);
    return st == LAB_OK ? LAB_OK : lab_err_set(st, "%s", g->cpu_msg);
}

#ifdef LAB_HAVE_CUDA
static lab_status wr_group_cpu_job(void *g) { return wr_group_cpu_make(g); }

/* Starts the group's CPU forward and kernel on this process's background thread (lab_bg), if nothing has made or
 * started them yet: a CUDA seed batch calls it for its cross-check seeds, so the fixes that compare with them (the last
 * variants) find them made instead of making them between their GPU launches (at T = 500 that was about 1 s of CPU per
 * seed, with the worker's GPU work waiting). Same result either way. Never waits: a group whose lock is held is being
 * made (wr_group_cpu_make holds it throughout) or collected, so there is nothing to start. It waited, and every batch
 * calls it, so a chunk's second variant waited until the background thread had made every cross-check seed: 201 seeds
 * on one worker took 26.5 s, 13.4 s without (2 x H200). With the pool's incidents taking turns (lab_sched_order_runs),
 * 1000 seeds of the GPU incidents on one 2 x H200 host: under `--mpi` with a GPU a rank 69.0 s -> 25.1 s (the rank
 * dealt most of 0008 ran its chunks' waits one after another), the plain replay on two GPUs 21.5 s -> 20.9-22.0 s, but
 * on one GPU 32.8-33.2 s -> 35.2-35.3 s: the waiting had left the GPU to the other incidents' seed batches
 * (docs/performance.md). */
static void wr_cpu_ahead(const wr_group *cg)
{
    wr_group *g = (wr_group *)cg; /* the memo only (see wr_group) */
    if (pthread_mutex_trylock(&g->lock) != 0) return;
    if (!g->cpu_tried && !g->cpu_job) g->cpu_job = lab_bg_start(wr_group_cpu_job, g);
    pthread_mutex_unlock(&g->lock);
}
#endif

/* The group's CPU forward and kernel: collected from the background thread where wr_cpu_ahead started them, else
 * made here. */
static lab_status wr_group_cpu(const wr_group *cg, const wr_fwd **fwd, const wr_out **cpu)
{
    wr_group *g = (wr_group *)cg; /* the memo only (see wr_group) */
    pthread_mutex_lock(&g->lock);
    lab_bg_job *job = g->cpu_job;
    g->cpu_job = NULL;
    pthread_mutex_unlock(&g->lock);
    (void)lab_bg_wait(job); /* the job is wr_group_cpu_make: its status is the memo's, read next */
    lab_status st = wr_group_cpu_make(g);
    if (st != LAB_OK) return st;
    *fwd = &g->fwd, *cpu = &g->cpu;
    return LAB_OK;
}

static lab_status wr_setup(const lab_case *c, void **out)
{
    wr_group *g = calloc(1, sizeof *g);
    if (!g) return lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": out of memory for seed %llu", (unsigned long long)c->seed);
    pthread_mutex_init(&g->lock, NULL);
    lab_status st = lab_semicrf_case_problem(&g->p, c->seed);
    /* the CPU forward and kernel are made on first use (wr_group_cpu): on CUDA only the fixes' cross-check seeds use
     * them, after the GPU has run */
    if (st == LAB_OK) st = wr_forward_shapes(&g->p, &g->f);
    if (st == LAB_OK) st = lab_semicrf_case_reference(c, &g->p, LAB_SEMICRF_REF_UNIFORM_START, wr_reference, &g->ref, &g->ref_check);
    if (st != LAB_OK) {
        wr_teardown(g);
        return st;
    }
    *out = g;
    return LAB_OK;
}

/* ---- the census, once per program shape ------------------------------------------------------------------ */

/* A case's census is the sum of its programs' (wr_census_program), and a program's depends only on the variant's
 * ownership, the shapes, its index b and its length, never on the values: every program of one T with len = T (b = 0
 * of every seed) has the same census. Each is walked once per process and kept here, so a 1000-seed replay walks a
 * few hundred programs instead of 18000 (at T = 500 a case's census took 18.6 ms on one core, most of 0008's CPU
 * time on the CUDA backend). Shared by the judge's threads under a lock; a full table only stops keeping. */
typedef struct {
    int used, b, L;
    wr_cfg cfg;
    int B, T, K, C, I, NCK, SEG;
    wr_out counts; /* counters only (no tensors) */
} wr_cen_memo;
#define WR_CEN_MEMO 4096
static wr_cen_memo wr_cen_table[WR_CEN_MEMO];
static pthread_mutex_t wr_cen_lock = PTHREAD_MUTEX_INITIALIZER;

static int wr_cen_same(const wr_cen_memo *m, const wr_fwd *f, const wr_cfg *cfg, int b, int L)
{
    const wr_cfg *c = &m->cfg;
    return m->used && m->b == b && m->L == L && m->B == f->B && m->T == f->T && m->K == f->K && m->I == f->I &&
           m->NCK == f->NCK && m->SEG == f->SEG && c->num_warps == cfg->num_warps && c->remat == cfg->remat &&
           c->barrier == cfg->barrier && c->index == cfg->index && c->f64 == cfg->f64 && c->smem_bufs == cfg->smem_bufs;
}

/* The census of g's problem under cfg into cen's counters (cen zeroed by the caller). */
static lab_status wr_census(const wr_group *g, const wr_cfg *cfg, wr_out *cen)
{
    const wr_fwd *f = &g->f;
    for (int b = 0; b < g->p.B; ++b) {
        int L = g->p.len[b];
        uint64_t h = ((((uint64_t)(unsigned)f->T * 131u + (unsigned)b) * 1009u + (unsigned)L) * 31u + (unsigned)cfg->num_warps) * 7u +
                     (unsigned)(cfg->index * 16 + cfg->remat * 8 + cfg->barrier * 4 + cfg->f64 * 2 + cfg->smem_bufs);
        size_t slot = (size_t)(h % WR_CEN_MEMO), probe;
        wr_out one;
        int found = 0;
        pthread_mutex_lock(&wr_cen_lock);
        for (probe = 0; probe < 8; ++probe) {
            wr_cen_memo *m = &wr_cen_table[(slot + probe) % WR_CEN_MEMO];
            if (!m->used) break;
            if (m->C == g->p.C && wr_cen_same(m, f, cfg, b, L)) {
                one = m->counts, found = 1;
                break;
            }
        }
        pthread_mutex_unlock(&wr_cen_lock);
        if (!found) {
            memset(&one, 0, sizeof one);
            lab_status st = wr_census_program(&g->p, f, cfg, b, &one);
            if (st != LAB_OK) return st;
            pthread_mutex_lock(&wr_cen_lock);
            for (probe = 0; probe < 8; ++probe) {
                wr_cen_memo *m = &wr_cen_table[(slot + probe) % WR_CEN_MEMO];
                if (m->used) continue;
                *m = (wr_cen_memo){.used = 1, .b = b, .L = L, .cfg = *cfg, .B = f->B, .T = f->T, .K = f->K, .C = g->p.C,
                                   .I = f->I, .NCK = f->NCK, .SEG = f->SEG, .counts = one};
                break;
            }
            pthread_mutex_unlock(&wr_cen_lock);
        }
        cen->raw_cross_warp += one.raw_cross_warp, cen->raw_intra_warp += one.raw_intra_warp;
        cen->war_hazards += one.war_hazards, cen->replicated_loads += one.replicated_loads;
        cen->barriers += one.barriers, cen->masked_stray_addrs += one.masked_stray_addrs;
        cen->masked_oob_addrs += one.masked_oob_addrs;
    }
    return LAB_OK;
}

/* ---- goldens (float64 reference only) ------------------------------------------------------------------- */

static lab_status wr_golden_bless(const char *dir)
{
    lab_status st = lab_fs_mkdirs(dir);
    if (st != LAB_OK) return st;
    lab_golden_manifest m;
    memset(&m, 0, sizeof m);
    snprintf(m.incident, sizeof m.incident, "%s", LAB_INCIDENT_ID);
    for (uint64_t seed = 1; seed <= 2 && st == LAB_OK; ++seed) {
        lab_semicrf_problem p;
        lab_semicrf_ref r;
        if ((st = lab_semicrf_case_problem(&p, seed)) != LAB_OK) break;
        if ((st = wr_reference(&p, &r)) != LAB_OK) {
            lab_semicrf_problem_free(&p);
            break;
        }
        const double *src[3] = {r.g_trans, r.g_dur, r.logZ};
        const char *stem[3] = {"ref_trans", "ref_dur", "ref_logz"};
        size_t sh[3][2] = {{(size_t)p.C, (size_t)p.C}, {(size_t)p.K, (size_t)p.C}, {(size_t)p.B, 0}};
        int nd[3] = {2, 2, 1};
        char prod[160];
        snprintf(prod, sizeof prod, "float64 reference wr_reference v1 (upstream convention), B=%d T=%d K=%d C=%d proj", p.B, p.T,
                 p.K, p.C);
        for (int i = 0; i < 3 && st == LAB_OK; ++i) {
            lab_tensor t = {0};
            if ((st = lab_tensor_create(&t, LAB_DT_F8, nd[i], sh[i])) != LAB_OK) break;
            memcpy(t.data, src[i], t.numel * sizeof(double));
            char f[64];
            snprintf(f, sizeof f, "%s_seed%llu.npy", stem[i], (unsigned long long)seed);
            st = lab_golden_add(&m, dir, f, &t, LAB_DT_F8, seed, prod);
            lab_tensor_free(&t);
        }
        lab_semicrf_ref_free(&r);
        lab_semicrf_problem_free(&p);
    }
    if (st == LAB_OK) st = lab_golden_manifest_write(dir, &m);
    lab_golden_manifest_free(&m);
    return st;
}

/* Max over g_trans, g_dur (per tensor max|g - golden| / max|golden|) and log Z's relative error against the
 * goldens of seed. LAB_ERR_NOTFOUND when the manifest lists none for it. */
static lab_status wr_golden_err(const char *dir, uint64_t seed, const lab_semicrf_problem *p, const wr_out *o, double *err)
{
    lab_golden_manifest m;
    memset(&m, 0, sizeof m);
    lab_status st = lab_golden_manifest_read(dir, &m);
    if (st != LAB_OK) return st;
    const char *stem[3] = {"ref_trans", "ref_dur", "ref_logz"};
    const float *got[3] = {o->g_trans, o->g_dur, o->logZ};
    size_t n[3] = {(size_t)p->C * p->C, (size_t)p->K * p->C, (size_t)p->B};
    double worst = 0.0;
    for (int i = 0; i < 3 && st == LAB_OK; ++i) {
        char f[64];
        snprintf(f, sizeof f, "%s_seed%llu.npy", stem[i], (unsigned long long)seed);
        const lab_golden_entry *e = lab_golden_find(&m, f);
        if (!e) {
            st = lab_err_set(LAB_ERR_NOTFOUND, "%s/%s: not in the MANIFEST (run `lab golden bless`)", dir, f);
            break;
        }
        lab_tensor t = {0};
        if ((st = lab_golden_load(dir, e, &t)) != LAB_OK) break;
        if (t.dtype != LAB_DT_F8 || t.numel != n[i]) {
            lab_tensor_free(&t);
            st = lab_err_set(LAB_ERR_MISMATCH, "%s/%s: expected f8 with %zu values", dir, f, n[i]);
            break;
        }
        const double *g = t.data;
        double mx = 0.0, sc = 0.0;
        for (size_t j = 0; j < n[i]; ++j) {
            double d = fabs((double)got[i][j] - g[j]);
            if (isnan(d)) mx = NAN;
            else if (!isnan(mx) && d > mx) mx = d;
            sc = fabs(g[j]) > sc ? fabs(g[j]) : sc;
        }
        double e2 = sc > 0 ? mx / sc : mx; /* log Z too: relative, as wr_compare (wr.h says why) */
        worst = isnan(e2) || isnan(worst) ? NAN : (e2 > worst ? e2 : worst);
        lab_tensor_free(&t);
    }
    lab_golden_manifest_free(&m);
    if (st == LAB_OK) *err = worst;
    return st;
}

/* ---- the one judge ------------------------------------------------------------------------------------------ */

/* What a case measured, on either backend. */
typedef struct {
    int cuda;
    size_t hazards;           /* unsynchronised cross-thread RAW + WAR of the ownership (census, either backend) */
    const wr_out *census;     /* the census counts */
    double err;               /* worst over runs of the max normalised error against the reference */
    double tol;
    size_t nonfinite;         /* worst over runs */
    int runs, runs_wrong, runs_differ;
    double r2r_max;           /* largest |run i - run 0| (CUDA) */
    int golden_checked;
    double golden_err;
    double xcheck;            /* CUDA fixes at lab_case_xcheck seeds: GPU run 0 vs the CPU model, in tol; else NaN */
    double ms;                /* CUDA: median backward time */
} wr_verdict;

static void wr_judge(const wr_verdict *v, lab_case_result *r)
{
    lab_result_metric(r, "hazards", (double)v->hazards);
    lab_result_metric(r, "raw_cross_warp", (double)v->census->raw_cross_warp);
    lab_result_metric(r, "raw_intra_warp", (double)v->census->raw_intra_warp);
    lab_result_metric(r, "war_hazards", (double)v->census->war_hazards);
    lab_result_metric(r, "replicated_loads", (double)v->census->replicated_loads);
    lab_result_metric(r, "masked_stray_addrs", (double)v->census->masked_stray_addrs);
    lab_result_metric(r, "masked_oob_addrs", (double)v->census->masked_oob_addrs);
    lab_result_metric(r, "err_over_tol", v->err / v->tol);
    lab_result_metric(r, "tol", v->tol);
    lab_result_metric(r, "nonfinite", (double)v->nonfinite);
    if (v->golden_checked) lab_result_metric(r, "golden_err_over_tol", v->golden_err / v->tol);
    int ok_num = v->nonfinite == 0 && v->err <= v->tol && (!v->golden_checked || v->golden_err <= v->tol);
    if (!v->cuda) {
        /* The CPU cannot make the race happen (every load sees the latest store); it proves the hazard in the
         * ownership and checks the arithmetic, the masking and the goldens. */
        int pass = ok_num && v->hazards == 0;
        lab_result_verdict(r, pass,
                           "cpu: %zu unsynchronised cross-thread accesses (%zu cross-warp RAW, %zu intra-warp RAW, %zu WAR); "
                           "err %.3g of tol; %zu non-finite%s",
                           v->hazards, v->census->raw_cross_warp, v->census->raw_intra_warp, v->census->war_hazards,
                           v->err / v->tol, v->nonfinite, v->golden_checked ? "; goldens checked" : "");
        return;
    }
    lab_result_metric(r, "runs_wrong", (double)v->runs_wrong);
    lab_result_metric(r, "runs_differ", (double)v->runs_differ);
    lab_result_metric(r, "r2r_max_abs", v->r2r_max);
    lab_result_metric(r, "ms_backward", v->ms);
    if (!isnan(v->xcheck)) lab_result_metric(r, "xcheck_over_tol", v->xcheck);
    /* On the GPU the race must fire to be seen: a wrong or non-finite run, or runs whose bits differ. */
    int pass = ok_num && v->runs_wrong == 0 && v->runs_differ == 0 && (isnan(v->xcheck) || v->xcheck <= WR_XCHECK_TOL);
    lab_result_verdict(r, pass, "cuda: %d of %d runs wrong, %d differ from run 0; worst err %.3g of tol; %zu non-finite%s",
                       v->runs_wrong, v->runs, v->runs_differ, v->err / v->tol, v->nonfinite,
                       isnan(v->xcheck) ? "" : (v->xcheck <= WR_XCHECK_TOL ? "; CPU cross-check ok" : "; CPU cross-check FAILED"));
}

/* err of one output against the reference (NaN when non-finite) and its non-finite count. */
static double wr_err_of(const wr_group *g, const wr_out *o, size_t *nf)
{
    wr_err e;
    wr_compare(&g->p, o, &g->ref, &e);
    *nf = e.nonfinite;
    double x = e.max;
    if (!isnan(x) && !isnan(e.logz) && e.logz > x) x = e.logz;
    return isnan(e.logz) ? NAN : x;
}

static lab_status wr_run_cpu(const lab_case *c, lab_case_result *r)
{
    const wr_group *g = c->group;
    const wr_cfg *cfg = &wr_variant_cfgs[c->variant->param];
    wr_out o, cen;
    memset(&cen, 0, sizeof cen);
    /* the census of this variant's ownership; the arithmetic: the group's, or its own for float64 */
    const wr_fwd *fwd;
    const wr_out *num;
    lab_status st = wr_census(g, cfg, &cen);
    if (st == LAB_OK) st = wr_group_cpu(g, &fwd, &num);
    if (st != LAB_OK) return st;
    memset(&o, 0, sizeof o);
    if (cfg->f64) {
        if ((st = wr_out_alloc(&o, g->p.B, g->p.T, g->p.K, g->p.C)) != LAB_OK) return st;
        if ((st = wr_model(&g->p, fwd, cfg, NULL, 0, 0, &o)) != LAB_OK) {
            wr_out_free(&o);
            return st;
        }
        num = &o;
    }
    wr_verdict v = {.cuda = 0, .census = &cen, .tol = wr_tolerance(&g->ref, g->p.B, g->p.K), .xcheck = NAN, .runs = 1};
    v.hazards = cen.raw_cross_warp + cen.raw_intra_warp + cen.war_hazards;
    v.err = wr_err_of(g, num, &v.nonfinite);
    if (c->seed == 1 || c->seed == 2) {
        st = wr_golden_err(c->golden_dir, c->seed, &g->p, num, &v.golden_err);
        if (st != LAB_OK) {
            wr_out_free(&o);
            return st;
        }
        v.golden_checked = 1;
    }
    wr_judge(&v, r);
    wr_out_free(&o);
    return LAB_OK;
}

#ifdef LAB_HAVE_CUDA
/* Judges one CUDA case from its runs (outs[0..runs), the backward's median ms) with the one judge. */
static lab_status wr_judge_cuda(const lab_case *c, const wr_out *outs, int runs, double ms, lab_case_result *r)
{
    const wr_group *g = c->group;
    const wr_cfg *cfg = &wr_variant_cfgs[c->variant->param];
    wr_out cen;
    memset(&cen, 0, sizeof cen);
    /* the census of the ownership this launch had (integer work only) */
    lab_status st = wr_census(g, cfg, &cen);
    wr_verdict v = {.cuda = 1, .census = &cen, .tol = wr_tolerance(&g->ref, g->p.B, g->p.K), .xcheck = NAN, .runs = runs, .ms = ms};
    v.hazards = cen.raw_cross_warp + cen.raw_intra_warp + cen.war_hazards;
    for (int i = 0; i < runs && st == LAB_OK; ++i) {
        size_t nf = 0;
        double e = wr_err_of(g, &outs[i], &nf);
        if (nf > v.nonfinite) v.nonfinite = nf;
        if (!(e <= v.tol)) v.runs_wrong++;
        v.err = isnan(e) || isnan(v.err) ? NAN : (e > v.err ? e : v.err);
        if (i > 0) {
            double mx = 0.0;
            if (wr_bits_differ(&g->p, &outs[i], &outs[0], &mx)) v.runs_differ++;
            v.r2r_max = isnan(mx) || isnan(v.r2r_max) ? NAN : (mx > v.r2r_max ? mx : v.r2r_max);
        }
    }
    if (st == LAB_OK && (c->seed == 1 || c->seed == 2)) {
        st = wr_golden_err(c->golden_dir, c->seed, &g->p, &outs[0], &v.golden_err);
        v.golden_checked = st == LAB_OK;
    }
    if (st == LAB_OK && c->variant->role == LAB_ROLE_FIX && lab_case_xcheck(c)) {
        /* the fix on the GPU against the same kernel on the CPU (the bug's CPU result is race-free: no test): the
         * group's float32 result (wr_group_cpu), or a float64 variant's own */
        wr_out own;
        memset(&own, 0, sizeof own);
        const wr_fwd *fwd;
        const wr_out *cpu;
        st = wr_group_cpu(g, &fwd, &cpu);
        if (st == LAB_OK && cfg->f64) {
            st = wr_out_alloc(&own, g->p.B, g->p.T, g->p.K, g->p.C);
            if (st == LAB_OK) st = wr_model(&g->p, fwd, cfg, NULL, 0, 0, &own);
            cpu = &own;
        }
        if (st == LAB_OK) {
            wr_err e;
            /* normalised difference of the two float32 results: reuse the reference comparison on a float64 copy */
            lab_semicrf_ref cref;
            memset(&cref, 0, sizeof cref);
            size_t C = (size_t)g->p.C, nc = (size_t)g->p.B * (g->p.T + 1) * C, np = (size_t)g->p.B * g->p.T * C;
            cref.g_trans = malloc(C * C * sizeof(double)), cref.g_dur = malloc((size_t)g->p.K * C * sizeof(double));
            cref.g_cum = malloc(nc * sizeof(double)), cref.g_ps = malloc(np * sizeof(double)), cref.g_pe = malloc(np * sizeof(double));
            cref.logZ = malloc((size_t)g->p.B * sizeof(double));
            if (!cref.g_trans || !cref.g_dur || !cref.g_cum || !cref.g_ps || !cref.g_pe || !cref.logZ)
                st = lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": out of memory for the cross-check");
            else {
                for (size_t i = 0; i < C * C; ++i) cref.g_trans[i] = cpu->g_trans[i];
                for (size_t i = 0; i < (size_t)g->p.K * C; ++i) cref.g_dur[i] = cpu->g_dur[i];
                for (size_t i = 0; i < nc; ++i) cref.g_cum[i] = cpu->g_cum[i];
                for (size_t i = 0; i < np; ++i) cref.g_ps[i] = cpu->g_ps[i], cref.g_pe[i] = cpu->g_pe[i];
                for (int b = 0; b < g->p.B; ++b) cref.logZ[b] = cpu->logZ[b];
                wr_compare(&g->p, &outs[0], &cref, &e);
                v.xcheck = e.max / v.tol;
            }
            lab_semicrf_ref_free(&cref);
        }
        wr_out_free(&own);
    }
    if (st == LAB_OK) wr_judge(&v, r);
    if (!isnan(g->ref_check)) lab_result_metric(r, "ref_device_vs_cpu", g->ref_check);
    /* bug-smem-buffers is a memory bug only for racecheck's sake: its race is between in-bounds accesses to its
     * own block's shared memory, the same elements the global-buffer kernel touches (memcheck found 0 errors on
     * bug-num-warps-4, studies/0008-semicrf-warp-replica-race/h100/sanitizers.txt), and masked lanes never dereference their stray addresses; so
     * no case of this incident touches memory it did not allocate, and its worker goes on
     * (lab_case_result.memory_contained). */
    r->memory_contained = 1;
    return st;
}

typedef struct {
    const lab_case *cases;
    const wr_out *outs;   /* case i's runs at outs[i * WR_RUNS_MAX ..] */
    const int *runs;      /* launches case i had */
    const double *ms;     /* the median backward time of the launches case i had */
    lab_case_result *results;
} wr_judge_job;

static lab_status wr_judge_one(void *ctx, size_t i)
{
    wr_judge_job *j = ctx;
    return wr_judge_cuda(&j->cases[i], j->outs + i * WR_RUNS_MAX, j->runs[i], j->ms[i], &j->results[i]);
}

/* Launches runs run0 .. run0 + runs - 1 of the seed batch cases[idx[0..m)] on one upload and one forward (the forward is
 * race-free and deterministic, so a forward per launch would give the same bits; wr_cuda_run): problem idx[k]'s run
 * run0 + i into outs[idx[k] * WR_RUNS_MAX + run0 + i], *ms the median time of one backward. */
static lab_status wr_launch(const lab_case *cases, const size_t *idx, size_t m, const wr_cfg *cfg, int run0, int runs,
                            wr_out *outs, double *ms)
{
    const lab_semicrf_problem **pp = calloc(m, sizeof *pp);
    wr_out *o = calloc(m * (size_t)runs, sizeof *o);
    lab_status st = pp && o ? LAB_OK : lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": out of memory for a seed batch of %zu", m);
    for (size_t k = 0; k < m && st == LAB_OK; ++k) pp[k] = &((const wr_group *)cases[idx[k]].group)->p;
    if (st == LAB_OK) st = wr_cuda_run(pp, &((const wr_group *)cases[idx[0]].group)->f, (int)m, cfg, runs, o, ms);
    for (size_t k = 0; k < m && st == LAB_OK; ++k)
        for (int i = 0; i < runs; ++i) outs[idx[k] * WR_RUNS_MAX + (size_t)(run0 + i)] = o[k * (size_t)runs + (size_t)i];
    free(pp), free(o);
    return st;
}

/* A seed batch of one variant (lab_incident.run_cuda_batch): every seed's problem in one launch per run (the
 * seeds share their T: lab_semicrf_batch_key), each case judged alone. A fix's cases all get WR_CUDA_RUNS launches
 * of the backward after one forward; a bug's get a further launch (with its own forward) only where every one before
 * was right, up to WR_BUG_RUNS (WR_CUDA_RUNS and WR_BUG_RUNS say why). run_cuda is this with one case. */
static lab_status wr_run_cuda_batch(const lab_case *cases, size_t n, lab_case_result *results)
{
    const wr_cfg *cfg = &wr_variant_cfgs[cases[0].variant->param];
    /* under compute-sanitizer one launch is enough for the tool (and ten to a hundred times slower) */
    const int bug = cases[0].variant->role == LAB_ROLE_BUG;
    const int runs = cases[0].sanitizer ? 1 : bug ? WR_BUG_RUNS : WR_CUDA_RUNS;
    wr_out *outs = calloc(n * WR_RUNS_MAX, sizeof *outs);
    size_t *idx = calloc(n, sizeof *idx);
    int *nr = calloc(n, sizeof *nr);
    double *ms = calloc(n, sizeof *ms), t[WR_RUNS_MAX];
    lab_status st = outs && idx && nr && ms ? LAB_OK : lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": out of memory for a seed batch of %zu", n);
    size_t m = n;
    for (size_t i = 0; i < n; ++i) idx[i] = i;
    /* a seed batch's cross-check seeds: their CPU forward and kernel start now, in the background, for the fixes */
    for (size_t i = 0; n > 1 && !cases[0].sanitizer && i < n; ++i)
        if (lab_case_xcheck(&cases[i])) wr_cpu_ahead(cases[i].group);
    if (!bug) { /* a fix: every case gets every launch */
        st = wr_launch(cases, idx, n, cfg, 0, runs, outs, &t[0]);
        for (size_t i = 0; i < n && st == LAB_OK; ++i) nr[i] = runs, ms[i] = t[0];
        m = 0;
    }
    for (int run = 0; run < runs && m > 0 && st == LAB_OK; ++run) {
        if ((st = wr_launch(cases, idx, m, cfg, run, 1, outs, &t[run])) != LAB_OK) break;
        size_t keep = 0;
        for (size_t k = 0; k < m; ++k) {
            size_t i = idx[k], nf = 0;
            nr[i] = run + 1;
            /* the slower of this case's first and latest launch (the judge's ms_backward: the upper median of two) */
            ms[i] = run == 0 || t[0] > t[run] ? t[0] : t[run];
            const wr_group *g = cases[i].group;
            double e = wr_err_of(g, &outs[i * WR_RUNS_MAX + (size_t)run], &nf);
            if (nf == 0 && e <= wr_tolerance(&g->ref, g->p.B, g->p.K)) idx[keep++] = i;
        }
        m = keep;
    }
    if (st == LAB_OK) {
        /* each case judged alone, the batch's cases on several threads (wr_judge_cuda reads its own group and outputs
         * and writes its own result) */
        wr_judge_job job = {cases, outs, nr, ms, results};
        st = lab_par_for(n, lab_par_threads(), wr_judge_one, &job);
    }
    for (size_t i = 0; outs && i < n * WR_RUNS_MAX; ++i) wr_out_free(&outs[i]);
    free(outs), free(idx), free(nr), free(ms);
    return st;
}

static lab_status wr_run_cuda(const lab_case *c, lab_case_result *r)
{
    lab_status st = wr_run_cuda_batch(c, 1, r);
    if (st == LAB_ERR_DEVICE) lab_result_metric(r, "device_error", 1);
    return st;
}

static lab_status wr_bench_or_study(FILE *out, int full)
{
    char why[240];
    lab_status st = lab_cuda_ready(why, sizeof why);
    if (st != LAB_OK) return st == LAB_ERR_UNSUPPORTED ? lab_err_set(LAB_ERR_UNSUPPORTED, "%s", why) : st;
    return wr_cuda_study(out, full);
}
static lab_status wr_bench(FILE *out) { return wr_bench_or_study(out, 0); }
static lab_status wr_study(FILE *out) { return wr_bench_or_study(out, 1); }
#endif


/* Detection: on the CPU every bug variant is detected on every seed by its census (a structural hazard, as a race
 * detector reports it); on the GPU only when the race fires, which depends on how the GPU schedules the warps. On an
 * H100 the race fired in every one of 428 launches of 107 cases (4 per case, 13 to 20 seeds per variant). So the
 * rule is every seed: a stated rate of 0.9 would need 78 seeds before the replay's binomial test may judge it
 * (lab_verdict), and a GPU where the race fires less often is a finding the replay should report, as an XPASS
 * naming the seed (README.md: "What the criterion checks"). */
#define WR_GPU_RATE 0.0
static const lab_variant wr_variants[] = {
    {.name = "bug-num-warps-4", .role = LAB_ROLE_BUG, .param = WR_V_BUG, .detect = LAB_DETECT_FAIL, .min_detect_rate = WR_GPU_RATE,
     .what = "upstream before the OOB fix (62b87b3): one program per batch element at Triton's default 4 warps; the "
             "[64] alpha/beta vectors over 128 threads are stored by one replica and loaded by both, no barrier"},
    {.name = "bug-num-warps-8", .role = LAB_ROLE_BUG, .param = WR_V_BUG8, .detect = LAB_DETECT_FAIL, .min_detect_rate = WR_GPU_RATE,
     .what = "the same kernel at 8 warps: four replicas load what one stored"},
    {.name = "bug-clamp", .role = LAB_ROLE_BUG, .param = WR_V_CLAMP, .detect = LAB_DETECT_FAIL, .min_detect_rate = WR_GPU_RATE,
     .what = "the clamp commit (4df6af0): masked padding lanes compute min(lane, C-1) addresses instead; still 4 warps"},
    {.name = "bug-pad-slice", .role = LAB_ROLE_BUG, .param = WR_V_PAD, .detect = LAB_DETECT_FAIL, .min_detect_rate = WR_GPU_RATE,
     .what = "pad + slice (d096430): gradient buffers C_PAD wide, unclamped writes, clamped reads; still 4 warps"},
    {.name = "bug-f64", .role = LAB_ROLE_BUG, .param = WR_V_F64, .detect = LAB_DETECT_FAIL, .min_detect_rate = WR_GPU_RATE,
     .what = "float64 recurrences and workspaces (the float64 half of 4e488c4) without its num_warps = 2"},
    {.name = "bug-smem-buffers", .role = LAB_ROLE_BUG, .param = WR_V_SMEM, .detect = LAB_DETECT_FAIL, .min_detect_rate = WR_GPU_RATE,
     .sanitizer = "racecheck",
     .what = "the bug with the alpha buffer and beta ring in shared memory, same ownership: what compute-sanitizer "
             "racecheck (shared memory only) can see"},
    {.name = "fix-num-warps-2", .role = LAB_ROLE_FIX, .param = WR_V_NW2,
     .what = "upstream's fix (num_warps = 2 in 4e488c4): 64 threads for 64 lanes, each element stored and loaded by "
             "the same thread"},
    {.name = "fix-barrier", .role = LAB_ROLE_FIX, .param = WR_V_BARRIER,
     .what = "4 warps with a block barrier after every store to the alpha buffer and beta ring (tl.debug_barrier)"},
    {.name = "fix-owner-loads", .role = LAB_ROLE_FIX, .param = WR_V_OWNER,
     .what = "4 warps without replicated loads: the owner thread loads, shares through shared memory behind a barrier"},
};

/* The data of the story's picture of the replicated threads (story.py draws it): at 2, 4 and 8 warps, which element
 * of one [C_PAD] row each thread stores (wr_owner) and which it loads (wr_col), the kernel's own ownership. Writes
 * <plots_dir>/<id>-replicas.dat, one row per (num_warps, thread): num_warps, thread, warp, the element it stores (-1:
 * none, a replica) and the elements it loads (-1: none). No gnuplot: the picture is the story's. LAB_ERR_IO naming the
 * file. */
static lab_status wr_figures(const lab_figure_ctx *fx)
{
    char dat[4096];
    snprintf(dat, sizeof dat, "%s/%s-replicas.dat", fx->plots_dir, fx->incident->id);
    FILE *f = fopen(dat, "w");
    if (!f) return lab_err_set(LAB_ERR_IO, "%s: cannot write", dat);
    fprintf(f, "num_warps thread warp stores load0 load1\n");
    static const int warps[] = {2, 4, 8}; /* at 1 warp a thread holds two elements: left out */
    for (size_t w = 0; w < sizeof warps / sizeof *warps; ++w) {
        int nw = warps[w];
        for (int tid = 0; tid < 32 * nw; ++tid) {
            int stores = -1, load[2] = {-1, -1};
            for (int e = 0; e < WR_C_PAD && stores < 0; ++e)
                if (wr_owner(e, nw) == tid) stores = e;
            for (int j = 0; j < wr_ncols(nw) && j < 2; ++j) load[j] = wr_col(tid, nw, j);
            fprintf(f, "%d %d %d %d %d %d\n", nw, tid, tid >> 5, stores, load[0], load[1]);
        }
    }
    return fclose(f) == 0 ? LAB_OK : lab_err_set(LAB_ERR_IO, "%s: write failed", dat);
}

static const lab_metric_spec wr_metric_specs[] = {
    {.name = "hazards", .tolerance = 0, .higher_is_worse = 1, .model = 1,
     .caption = "unsynchronised cross-thread accesses (CPU criterion; CUDA: recorded, judged by the race firing)"},
    {.name = "err_over_tol", .tolerance = 1.0, .higher_is_worse = 1,
     .caption = "worst gradient error against the float64 reference, in units of (K + 4) x 2^-24 x max|log Z| (README: the derivation)"},
    {.name = "runs_differ", .tolerance = 0, .higher_is_worse = 1,
     .caption = "CUDA: runs of the same inputs whose bits differ from the first run (a race that fired)"},
    {.name = "nonfinite", .tolerance = 0, .higher_is_worse = 1, .caption = "non-finite gradient values"},
};

const lab_incident wr_incident = {
    .id = LAB_INCIDENT_ID,
    .title = "semi-CRF backward at num_warps > 2: a [64] vector replicated over 128 threads, stored by one replica, "
             "loaded by all, no barrier",
    .variants = wr_variants,
    .n_variants = (int)(sizeof wr_variants / sizeof wr_variants[0]),
    .setup = wr_setup,
    .teardown = wr_teardown,
    .run_cpu = wr_run_cpu,
    .run_cuda = LAB_IF_CUDA(wr_run_cuda),
    .timeout_s = 120,
    .golden_bless = wr_golden_bless,
    .default_seeds = 16,
    .bench = LAB_IF_CUDA(wr_bench),
    .study = LAB_IF_CUDA(wr_study),
    .seed_cost = lab_semicrf_seed_cost,
    .batch = {
        .run_cuda = LAB_IF_CUDA(wr_run_cuda_batch),
        .max = 256,
        .key = lab_semicrf_batch_key, /* the kernel's grid holds sequences of one T: its checkpoint interval is T's */
        .memory_bugs = 1, /* bug-smem-buffers: contained by construction (wr_judge_cuda) */
    },
    .plots = {
        .metric = "hazards",
        .drift_metric = "err_over_tol",
        .specs = wr_metric_specs,
        .n_specs = (int)(sizeof wr_metric_specs / sizeof wr_metric_specs[0]),
        .figures = wr_figures,
    },
};
LAB_INCIDENT_REGISTER(wr_incident);
