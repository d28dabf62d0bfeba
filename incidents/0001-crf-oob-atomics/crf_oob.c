/* crf_oob: incident 0001, the semi-Markov CRF backward whose C_PAD padding lanes reached past C-sized gradient buffers: variants, criterion, goldens. */
#include "crf_oob.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_par.h"

#ifdef LAB_HAVE_CUDA
#include "lab_cuda.h"
#endif

lab_status crf_oob_golden_bless(const char *dir)
{
    const uint64_t seeds[2] = {CRF_OOB_GOLDEN_SEED_A, CRF_OOB_GOLDEN_SEED_B};
    return lab_semicrf_golden_bless(dir, LAB_INCIDENT_ID, seeds, 2);
}

static int co_is_golden(uint64_t seed) { return seed == CRF_OOB_GOLDEN_SEED_A || seed == CRF_OOB_GOLDEN_SEED_B; }

/* max_b |log Z_b (float32) - log Z_b (float64)|, NaN when a log Z is not finite. */
static double co_logz_abs_err(const lab_semicrf_problem *p, const lab_semicrf_out *o, const lab_semicrf_ref *ref)
{
    double e = 0.0;
    for (int b = 0; b < p->B; ++b)
        e = lab_semicrf_max_nan(e, isfinite(o->logZ[b]) ? fabs((double)o->logZ[b] - ref->logZ[b]) : NAN);
    return e;
}

/* The criterion over a run's output (CPU or CUDA): counters, finiteness, reference, golden. */
static lab_status co_judge(uint64_t seed, const lab_semicrf_problem *p, const lab_semicrf_out *o,
                           const lab_semicrf_ref *ref, const char *golden_dir, lab_case_result *r, crf_oob_verdict *vout)
{
    crf_oob_verdict v;
    memset(&v, 0, sizeof v);
    v.T = p->T;
    v.guard_kind = lab_semicrf_guard_kind_of(seed);
    lab_semicrf_compare(p, o, ref, &v.err);
    v.tol = lab_semicrf_tolerance(ref, p->B);
    v.oob_reads = o->oob_reads;
    v.oob_writes = o->oob_writes;
    v.cross_row_writes = o->cross_row_writes;
    v.same_addr_lanes = o->same_addr_lanes;
    v.n_atomics = o->n_atomics;
    v.guard_nonfinite_reads = o->guard_nonfinite_read;
    v.pad_nonzero = o->pad_nonzero;
    v.golden_err = NAN;
    if (golden_dir && co_is_golden(seed)) {
        lab_status st = lab_semicrf_golden_compare(golden_dir, seed, p, o, &v.golden_err);
        if (st != LAB_OK) return st;
        v.golden_checked = 1;
    }
    int in_bounds = v.oob_reads == 0 && v.oob_writes == 0;
    /* A masked lane adds an exact 0 (selection): anything else in the padding columns is a padding lane's
     * unmasked marginal, which the slice back to C would hide from every other check. */
    int pads_zero = v.pad_nonzero == 0;
    int finite = v.err.nonfinite == 0;
    /* log Z is judged on the tolerance's own scale: its absolute error against tol = 16 * 2^-24 * max|log Z| (a
     * log-marginal's error is the sum of such absolute errors). lab_semicrf_err.logz is relative, a quantity
     * max|log Z| times smaller, so comparing it with tol admitted an error hundreds of times the account. */
    double logz_abs = co_logz_abs_err(p, o, ref);
    int within = v.err.max <= v.tol && logz_abs <= v.tol;
    int golden_ok = !v.golden_checked || v.golden_err <= v.tol;
    v.passed = in_bounds && pads_zero && finite && within && golden_ok;
    if (r) {
        lab_result_metric(r, "oob_writes", (double)v.oob_writes);
        lab_result_metric(r, "oob_reads", (double)v.oob_reads);
        lab_result_metric(r, "cross_row_writes", (double)v.cross_row_writes);
        lab_result_metric(r, "nonfinite_grads", (double)v.err.nonfinite);
        lab_result_metric(r, "nonfinite_frac", (double)v.err.nonfinite / (double)v.err.n);
        lab_result_metric(r, "guard_kind", (double)v.guard_kind);
        lab_result_metric(r, "guard_nonfinite_reads", (double)v.guard_nonfinite_reads);
        lab_result_metric(r, "same_addr_lanes", (double)v.same_addr_lanes);
        lab_result_metric(r, "max_rel_err", v.err.max);
        lab_result_metric(r, "logz_abs_err", logz_abs);
        lab_result_metric(r, "tol", v.tol);
        lab_result_metric(r, "pad_nonzero", (double)v.pad_nonzero);
        lab_result_metric(r, "T", (double)v.T);
        /* the classes and the lanes that run them: the story's picture of the padding lanes against C (story.py) */
        lab_result_metric(r, "C", (double)p->C);
        lab_result_metric(r, "C_PAD", (double)LAB_SEMICRF_C_PAD);
        if (v.golden_checked) lab_result_metric(r, "golden_rel_err", v.golden_err);
        if (!in_bounds)
            lab_result_verdict(r, 0, "%zu atomics and %zu loads outside their allocation (%zu more past their row); "
                               "%zu non-finite gradients; neighbours: %s", v.oob_writes, v.oob_reads, v.cross_row_writes,
                               v.err.nonfinite, lab_semicrf_guard_kind_name(v.guard_kind));
        else if (!pads_zero)
            lab_result_verdict(r, 0, "%zu values written into the padding columns are not 0 (masked lanes must add "
                               "exact zeros; the slice back to C hides them)", v.pad_nonzero);
        else if (!finite)
            lab_result_verdict(r, 0, "%zu of %zu gradients non-finite", v.err.nonfinite, v.err.n);
        else if (!within)
            lab_result_verdict(r, 0, "normalised error %.3g (log Z off by %.3g) over tolerance %.3g", v.err.max, logz_abs, v.tol);
        else if (!golden_ok)
            lab_result_verdict(r, 0, "off the golden of seed %llu: %.3g (tol %.3g)", (unsigned long long)seed, v.golden_err, v.tol);
        else
            lab_result_verdict(r, 1, "in bounds, finite; normalised error %.3g <= %.3g (T=%d)%s%s", v.err.max, v.tol, v.T,
                               v.same_addr_lanes ? "; lanes sharing addresses did not change the sums" : "",
                               v.golden_checked ? "; golden agrees" : "");
    }
    if (vout) *vout = v;
    return LAB_OK;
}

lab_status crf_oob_run(uint64_t seed, lab_semicrf_layout layout, unsigned guards, const char *golden_dir,
                       lab_case_result *r, crf_oob_verdict *v)
{
    lab_semicrf_problem p;
    lab_semicrf_ref ref;
    lab_semicrf_out o;
    lab_status st = lab_semicrf_case_problem(&p, seed);
    if (st != LAB_OK) return st;
    if ((st = lab_semicrf_reference(&p, &ref)) != LAB_OK) {
        lab_semicrf_problem_free(&p);
        return st;
    }
    lab_semicrf_config cfg = {layout, LAB_SEMICRF_ACC_F32_ATOMIC, guards, seed, seed};
    if ((st = lab_semicrf_emulate(&p, &cfg, &o)) == LAB_OK) {
        st = co_judge(seed, &p, &o, &ref, golden_dir, r, v);
        lab_semicrf_out_free(&o);
    }
    lab_semicrf_ref_free(&ref);
    lab_semicrf_problem_free(&p);
    return st;
}

/* A variant's parameter: the layout, and whether the guards added during the hunt are on. The frozen bug
 * variants predate the guards; the fix ships with them. */
#define CO_GUARDED 0x100
#define CO_PARAM(layout, guarded) ((int)(layout) | ((guarded) ? CO_GUARDED : 0))
static lab_semicrf_config co_config(const lab_case *c)
{
    int param = c->variant->param;
    lab_semicrf_config cfg = {(lab_semicrf_layout)(param & 0xff), LAB_SEMICRF_ACC_F32_ATOMIC,
                              (param & CO_GUARDED) ? LAB_SEMICRF_GUARDS_ALL : 0u, c->seed, c->seed, c->exact_alloc};
    return cfg;
}

static lab_status co_run_cpu(const lab_case *c, lab_case_result *r)
{
    const lab_semicrf_group *g = c->group;
    lab_semicrf_config cfg = co_config(c);
    lab_semicrf_out o;
    lab_status st = lab_semicrf_emulate(&g->p, &cfg, &o);
    if (st != LAB_OK) return st;
    st = co_judge(c->seed, &g->p, &o, &g->ref, c->golden_dir, r, NULL);
    /* The emulation's strays land in its own arena's guard zones, and one beyond them is an error, never
     * an access (kernels/lab_semicrf.c, sc_addr): contained by construction. */
    r->memory_contained = 1;
    lab_semicrf_out_free(&o);
    return st;
}

#ifdef LAB_HAVE_CUDA
/* A CUDA output judged: the criterion, and whether its strays stayed in its own memory. */
static lab_status co_judge_cuda(const lab_case *c, const lab_semicrf_out *o, lab_case_result *r)
{
    const lab_semicrf_group *g = c->group;
    lab_semicrf_config cfg = co_config(c);
    lab_status st = co_judge(c->seed, &g->p, o, &g->ref, c->golden_dir, r, NULL);
    /* The stray layouts' buffers sit between guard zones read back intact past the strays' reach: the worker may
     * go on (the runner retires it otherwise). */
    r->memory_contained = o->contained;
    if (cfg.layout != LAB_SEMICRF_LAYOUT_PADDED && !cfg.exact_alloc) lab_result_metric(r, "guard_breach", (double)o->guard_breach);
    if (!isnan(g->ref_check)) lab_result_metric(r, "ref_device_vs_cpu", g->ref_check);
    return st;
}

typedef struct {
    const lab_case *cases;
    const lab_semicrf_out *outs;
    lab_case_result *results;
} co_judge_job;

static lab_status co_judge_one(void *ctx, size_t i)
{
    const co_judge_job *j = ctx;
    return co_judge_cuda(&j->cases[i], &j->outs[i], &j->results[i]);
}

/* A seed batch of one variant (lab_incident.run_cuda_batch): every seed's problem in one launch per kernel (the
 * seeds share their T: lab_semicrf_batch_key), each with its own buffers and guard zones, each case judged alone
 * (on several threads). */
static lab_status co_run_cuda_batch(const lab_case *cases, size_t n, lab_case_result *results)
{
    lab_semicrf_out *outs = calloc(n, sizeof *outs);
    if (!outs) return lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": out of memory for a seed batch of %zu", n);
    lab_status st = lab_semicrf_cuda_run_cases(cases, n, co_config, outs);
    if (st == LAB_OK) {
        co_judge_job job = {cases, outs, results};
        st = lab_par_for(n, lab_par_threads(), co_judge_one, &job);
    }
    for (size_t i = 0; i < n; ++i) lab_semicrf_out_free(&outs[i]);
    free(outs);
    return st;
}

static lab_status co_run_cuda(const lab_case *c, lab_case_result *r)
{
    lab_status st = co_run_cuda_batch(c, 1, r);
    if (st == LAB_ERR_DEVICE && co_config(c).layout != LAB_SEMICRF_LAYOUT_PADDED) {
        /* A layout that strays past its buffers can take the context down: a fault on an unmapped
         * address, or compute-sanitizer memcheck destroying the context at its first finding. That is
         * the bug showing itself, a failed case, not a harness error (and its worker retires). */
        lab_result_metric(r, "device_error", 1.0);
        lab_result_verdict(r, 0, "CUDA error in a kernel that accesses memory outside its buffers: %s", lab_err_msg());
        r->retire_worker = 1;
        st = LAB_OK;
    }
    return st;
}
#endif

static const lab_variant crf_oob_variants[] = {
    {.name = "fix", .role = LAB_ROLE_FIX, .param = CO_PARAM(LAB_SEMICRF_LAYOUT_PADDED, 1),
     .what = "gradient buffers padded to C_PAD, unclamped writes into the padding, clamped reads of unpadded inputs, "
             "masking by selection, slice back to C (guards on)"},
    {.name = "bug-unpadded", .role = LAB_ROLE_BUG, .param = CO_PARAM(LAB_SEMICRF_LAYOUT_UNPADDED, 0),
     .sanitizer = "memcheck", .detect = LAB_DETECT_FAIL, .asan = 1,
     .what = "a hypothetical unmasked version, not upstream's kernel (upstream masked every per-class load and atomic; "
             "see 0008): buffers sized C, C_PAD lanes index them raw, padding lanes load neighbours, mask by "
             "multiplying (inf*0 = NaN) and atomically add past rows and past the allocation"},
    /* The write-up's first fix. It was believed insufficient because 25 lanes then hit one address; the lab
     * finds the contention harmless (the lanes add exact zeros) and the clamp sufficient against the OOB. */
    {.name = "clamp-first-fix", .role = LAB_ROLE_FIX, .param = CO_PARAM(LAB_SEMICRF_LAYOUT_CLAMPED, 0),
     .what = "the first fix: every index clamped to C-1, so the 25 padding lanes read class C-1 and atomically add "
             "their masked zeros to one address"},
};

/* What the criterion compares, for plots (lab_metric_spec): the first separates bug and fix. */
static const lab_metric_spec co_metric_specs[] = {
    {"oob_writes", 0, 1, NULL, "atomics outside their allocation: the fix has none (on the 0 floor), every bug seed has some"},
    {"nonfinite_frac", 0, 1, NULL, "share of non-finite gradients: must be 0; the bug's damage shows here only when a neighbour is non-finite"},
    {"max_rel_err", 0, 1, "tol", "normalised gradient error as a fraction of the case's tolerance (tol from T): below 1 passes"},
    {"logz_abs_err", 0, 1, "tol", "absolute error of the float32 log Z as a fraction of the same tolerance: below 1 passes"},
    {"pad_nonzero", 0, 1, NULL, "non-zero values left in the padded buffers' padding columns: must be 0 (masked lanes add exact zeros)"},
};

const lab_incident crf_oob_incident = {
    .id = LAB_INCIDENT_ID,
    .title = "semi-Markov CRF backward: padding lanes' atomics out of bounds",
    .variants = crf_oob_variants,
    .n_variants = (int)(sizeof crf_oob_variants / sizeof crf_oob_variants[0]),
    .setup = lab_semicrf_group_setup,
    .teardown = lab_semicrf_group_teardown,
    .run_cpu = co_run_cpu,
    .run_cuda = LAB_IF_CUDA(co_run_cuda),
    .timeout_s = 60,
    .golden_bless = crf_oob_golden_bless,
    .default_seeds = 24,
    .seed_cost = lab_semicrf_seed_cost,
    .batch = {
        .run_cuda = LAB_IF_CUDA(co_run_cuda_batch),
        .max = 256,
        .key = lab_semicrf_batch_key,
        .memory_bugs = 1, /* bug-unpadded: its strays land in its own guard zones, checked (co_judge_cuda) */
    },
    .plots = {
        .metric = "nonfinite_frac",
        .drift_metric = "max_rel_err",
        .specs = co_metric_specs,
        .n_specs = (int)(sizeof co_metric_specs / sizeof co_metric_specs[0]),
    },
};

LAB_INCIDENT_REGISTER(crf_oob_incident);
