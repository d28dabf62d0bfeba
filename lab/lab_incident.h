/* lab_incident: the incident contract in C: variants with roles, case context and results, and the registry. */
#ifndef LAB_INCIDENT_H
#define LAB_INCIDENT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lab_err.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { LAB_ROLE_FIX, LAB_ROLE_BUG } lab_role;
typedef enum { LAB_BACKEND_CPU, LAB_BACKEND_CUDA } lab_backend;

const char *lab_role_name(lab_role r);       /* "fix" / "bug" */
const char *lab_backend_name(lab_backend b); /* "cpu" / "cuda" */
lab_status lab_backend_parse(const char *s, lab_backend *out); /* LAB_ERR_ARG naming s */

#define LAB_MAX_METRICS 20
#define LAB_METRIC_NAME 32
/* Room for a case's detail line, its terminating NUL included: enough for the longest an incident writes (0006's
 * hang: the job's state, the step-counter finding and the first unmatched collective). Longer text is fitted at a
 * word boundary and marked (lab_text_fit), never cut mid-word. */
#define LAB_DETAIL_MAX 1024

/* Why a case was skipped. All but LAB_SKIP_MISSING are expected where the machine lacks them; LAB_SKIP_MISSING
 * (not built, a dependency missing) is an error: the replay is NOT OK and says what to install. */
typedef enum {
    LAB_SKIP_MISSING = 0,            /* not built / dependency missing (the default of lab_result_skip) */
    LAB_SKIP_NEEDS_GPU,              /* no usable GPU here (the probe's reason in detail) */
    LAB_SKIP_NEEDS_GPUS,             /* needs more GPUs than this host (or rank) has */
    LAB_SKIP_NO_VERSION,             /* the variant has no version for this backend */
    LAB_SKIP_NEEDS_ARCH              /* the variant needs a newer GPU than this one (the capability it needs and
                                        why in detail: lab_cuda_skip_below, kernels/lab_cuda.h); never an ERROR */
} lab_skip_class;
const char *lab_skip_class_name(lab_skip_class k); /* "missing", "needs-gpu", "needs-gpus", "no-version", "needs-arch" */
/* 1 when a skip of this class is expected where the resource is absent; 0 when it is an error. */
int lab_skip_expected(lab_skip_class k);

/* What a case reports from inside its isolated process. */
typedef struct {
    int verdict_set;                 /* the criterion ran */
    int passed;                      /* criterion verdict: 1 pass, 0 fail */
    int skipped;                     /* not run: skip_class and detail say why */
    int skip_class;                  /* lab_skip_class, when skipped */
    int retire_worker;               /* this process must run no further case (a device error, state the
                                        case may have corrupted): the runner gives the next case a fresh one */
    int memory_contained;            /* a memory-bug case (variant.sanitizer) vouches that its stray accesses
                                        stayed in memory it allocated fresh and freed: stray reads saw only
                                        guard zones of seeded contents, stray writes only guard zones that
                                        it read back intact past the kernel's farthest reach. Its worker then
                                        runs further cases; without it, the worker retires. */
    char detail[LAB_DETAIL_MAX];     /* one line: why it passed/failed/skipped (lab_result_verdict) */
    int n_metrics;
    struct { char name[LAB_METRIC_NAME]; double value; } metrics[LAB_MAX_METRICS];
} lab_case_result;

struct lab_incident;
struct lab_variant;
struct lab_figure_ctx;

/* One case: an (incident, variant, seed, backend), and what the runner knows about it. */
typedef struct {
    const struct lab_incident *incident;
    const struct lab_variant *variant;
    uint64_t seed;
    lab_backend backend;
    const char *root;                /* repository root (for golden/ and plots) */
    const char *golden_dir;          /* <root>/incidents/<id>/golden (lab_case_init fills it) */
    const char *sanitizer;           /* the compute-sanitizer tool watching this process, or NULL */
    int exact_alloc;                 /* buffers at their exact size: a memory checker watches (compute-
                                        sanitizer on CUDA; on the CPU an AddressSanitizer build's replay
                                        workers, lab_asan.h), so any stray access is its finding */
    const void *group;               /* the seed's shared state made by incident->setup, read-only; NULL
                                        when the incident has no setup */
} lab_case;

/* Outcomes that detect a bug variant (lab_variant.detect). */
#define LAB_DETECT_FAIL  1u          /* its criterion failed */
#define LAB_DETECT_CRASH 2u          /* the case died by a signal */
#define LAB_DETECT_HANG  4u          /* the runner's watchdog killed it */

/* A variant is data: the incident's run functions read `param` to pick the kernel, rule or layout. */
typedef struct lab_variant {
    const char *name;                /* "fix", "bug-exp-log", ... */
    lab_role role;
    const char *what;                /* one line: what this variant is */
    int param;                       /* the incident's own: which kernel/rule/layout this variant runs */
    int cpu_only;                    /* 1: no CUDA version (CUDA cases SKIP as no-version) */
    double min_detect_rate;          /* bug only: 0 means 1.0 (every seed); else the stated rate that the
                                        observed rate is tested against (one-sided binomial, lab_results) */
    const char *sanitizer;           /* bug only: the compute-sanitizer tool that flags this variant's CUDA
                                        run ("memcheck", "initcheck", "racecheck"); NULL: none expected.
                                        Fix variants must be clean under every tool. A variant with a
                                        sanitizer is a memory bug: its worker runs no case after it unless
                                        the case reports memory_contained. */
    unsigned detect;                 /* bug only: the outcomes that detect it (LAB_DETECT_*); 0 means
                                        LAB_DETECT_FAIL. Any other outcome is inconclusive (NOT OK). */
    int gpus;                        /* GPUs a CUDA case needs, given to it alone; 0: one GPU, shared
                                        with other cases' workers */
    int asan;                        /* bug only: 1 when AddressSanitizer flags its CPU run once allocations
                                        are exact (its stray accesses leave their buffers): in an ASan build
                                        (SANITIZE=address) it is detected only by that report, which the runner
                                        makes its FAIL (lab_asan.h); elsewhere by its own criterion. Needs
                                        `detect` to include FAIL. */
} lab_variant;

/* One metric of an incident's criterion, as plots draw it: its name as recorded with lab_result_metric,
 * the bound the criterion applies and on which side a case passes. A plot draws the bound as a line and,
 * for a bound above zero, the metric as a fraction of it (1.0 is the line). A census metric that must be
 * exactly 0 (non-finite count, out-of-bounds writes, hung) has tolerance 0 and higher_is_worse 1. */
typedef struct {
    const char *name;             /* metric name as recorded ("max_rel_err", "oob_writes") */
    double tolerance;             /* the criterion's bound: the same #define the criterion compares with */
    int higher_is_worse;          /* 1: value <= tolerance passes (errors, counts); 0: value >= tolerance passes
                                     (a cosine) */
    const char *tolerance_metric; /* NULL, or a metric of the same case holding that case's own bound (the bound
                                     depends on the case, e.g. 0001's "tol" from T); then tolerance is unused */
    const char *caption;          /* one line under the figure: what to look for */
    int model;                    /* 1: a count the lab's CPU model makes of the mechanism itself (e.g. unsynchronised
                                     accesses), not an effect on the outputs. A bug case that crosses only such bounds
                                     shows the mechanism without its damage: `lab explain` says the mechanism did not
                                     fire on that backend and shows this count as the evidence it has instead. */
} lab_metric_spec;

/* Whether value passes spec m's bound `bound` (the tolerance, or the case's tolerance_metric): value <= bound when
 * higher is worse, value >= bound otherwise; a NaN value or bound never passes. */
int lab_metric_spec_passes(const lab_metric_spec *m, double value, double bound);

/* Makes the state every variant of one (seed, backend) shares: inputs, the float64 reference. The runner
 * owns it (one per worker process, reused while consecutive cases have the same incident, seed and
 * backend) and frees it with teardown. c->variant is the first variant of the group; the state must not
 * depend on it. Returns LAB_OK, or an error status (every case of the group is then ERROR). */
typedef lab_status (*lab_setup_fn)(const lab_case *c, void **group);
typedef void (*lab_teardown_fn)(void *group);
/* Runs c->variant (its param) on the group's inputs, applies the incident's one judge, and records
 * verdict and metrics in r. Returns LAB_OK when the case ran (whatever the verdict) and an error status
 * when the harness failed (outcome ERROR with lab_err_msg()). */
typedef lab_status (*lab_run_fn)(const lab_case *c, lab_case_result *r);

/* The GPU side of an incident as data: x in a build with CUDA, NULL in one without (nvcc missing or CUDA=0), so
 * that `.run_cuda = LAB_IF_CUDA(my_run_cuda)` names a function that exists only where CUDA is built. A field left
 * NULL this way reads as "no such thing in this build": CUDA cases SKIP as missing, `lab bench` lists no bench. */
#ifdef LAB_HAVE_CUDA
#define LAB_IF_CUDA(x) (x)
#else
#define LAB_IF_CUDA(x) NULL
#endif

/* Seed batches (CUDA), optional: one variant run for n cases of different seeds at once, in one launch per
 * kernel where the kernel takes a batch dimension, so that one launch fills the GPU instead of a few of its SMs. */
typedef struct {
    /* cases[i] carry their own seed's group (setup); results[i] must be what run_cuda gives cases[i] run alone
     * (bit for bit for deterministic variants; timings excepted, test seedbatch::wr_batches_equal_cases_alone).
     * Called only on the CUDA backend, without a sanitizer, for variants that are not memory bugs
     * (variant.sanitizer NULL) unless memory_bugs, with 1 <= n <= max cases whose seeds have the same key.
     * Returns LAB_OK when every case ran; an error status (a device error) leaves the results unset: the runner
     * then runs the cases one by one. With it, setup must be thread-safe: a batch's missing groups are made on
     * several threads at once (lab_case_run_batch, lab_par.h). NULL: no batching. */
    lab_status (*run_cuda)(const lab_case *cases, size_t n, lab_case_result *results);
    unsigned max;                    /* most cases in one run_cuda call (required with it) */
    /* Seeds that may share a batch have the same key (e.g. the same problem shape); NULL: any seeds. */
    uint64_t (*key)(uint64_t seed);
    /* 1: memory-bug variants (variant.sanitizer) batch too, because every case of theirs reports memory_contained
     * by construction; a batch in which one does not gives its leader retire_worker and the others run alone in
     * a fresh worker. 0: they always run alone. */
    int memory_bugs;
} lab_incident_batch;

/* What plots draw of an incident (from results.jsonl) and what `lab compare` judges by. */
typedef struct {
    const char *metric;              /* the metric that separates bug and fix, plotted per seed */
    int log;                         /* plot it on a log scale */
    const char *drift_metric;        /* optional: an error metric drawn per seed on a log scale (e.g. the fix's
                                        max error), so drift across seeds is seen; NULL: none */
    /* The criterion's metrics with their bounds, for plots and `lab compare`; specs[0] is the metric that
     * separates bug and fix (drawn with its threshold in <id>.png). NULL / 0: none (plots fall back to metric
     * without a threshold). */
    const lab_metric_spec *specs;
    int n_specs;
    /* Optional: the incident's own figures beyond the per-seed plots (a study against T, loss curves, a scatter
     * of two metrics). Called after a replay with plots on and by `lab plots`, in its own process under a
     * watchdog; it may compute (small studies), writes <plots_dir>/<id>-<name>.dat and renders each with
     * lab_gnuplot_xy; a .dat without a PNG is the data of a picture the story draws (the incident's story.py, `make
     * stories`). NULL: none. A failing figure is reported (with its reason), never fails the replay. */
    lab_status (*figures)(const struct lab_figure_ctx *fx);
} lab_incident_plots;

typedef struct lab_incident {
    const char *id;                  /* directory name, "0004-pow-grad-nan": LAB_INCIDENT_ID, which the build
                                        passes to the incident's own files from its incident.mk */
    const char *title;               /* one line for `lab list` and reports; what the incident is, its story told by
                                        the card at the top of incidents/<id>/README.md (lab_card, `lab explain`) */
    const lab_variant *variants;
    int n_variants;
    lab_setup_fn setup;              /* optional: the per-seed shared state (NULL: c->group is NULL) */
    lab_teardown_fn teardown;        /* frees what setup made (required with setup) */
    lab_run_fn run_cpu;              /* required */
    lab_run_fn run_cuda;             /* LAB_IF_CUDA(fn); NULL: no CUDA version (CUDA cases SKIP). The runner
                                        checks that a GPU is usable before calling it. */
    double timeout_s;                /* watchdog per case (0: runner default) */
    /* Regenerates golden/ from the float64 reference into dir (opt-in `make golden`). */
    lab_status (*golden_bless)(const char *dir);
    /* Seeds a default replay runs (0: the runner's default, 256). An incident whose cases are costly by
     * nature (several processes per case, hangs that cost their deadline) states a smaller count; an
     * explicit --seeds/--seed on the command line overrides it. */
    unsigned default_seeds;
    /* Optional, LAB_IF_CUDA(fn): a benchmark (`lab bench`), run in its own process: prints one line per
     * measurement to out, ratios measured in one run (e.g. "backward: deterministic / f32-atomic = 1.07
     * (0.81 ms / 0.76 ms, B=32 T=500)"), and the device ceilings it compares against. LAB_ERR_UNSUPPORTED
     * (no usable GPU, say why with lab_err_set) is a skip. NULL: none. */
    lab_status (*bench)(FILE *out);
    /* Optional, LAB_IF_CUDA(fn): a study too long for every bench (`lab bench --study`; minutes, not seconds),
     * printing as bench does (free lines, record lines). `lab bench` and the bench of `lab report` run bench
     * only, so that every report can afford its benchmarks. NULL: none. */
    lab_status (*study)(FILE *out);
    lab_incident_batch batch;        /* seed batches on CUDA (all zero: none) */
    lab_incident_plots plots;        /* what plots draw */
    /* Optional: the rough wall seconds one case of this seed takes in a loaded CUDA replay (its share of a seed
     * batch where it batches), the scheduler's cost model (lab_sched_case_cost): the runner starts the costliest
     * runs first and cuts no seed batch chunk costlier than a worker's fair share. Only the ratios between
     * incidents and seeds matter; a wrong guess costs balance, never a verdict. NULL: LAB_SCHED_CASE_COST. */
    double (*seed_cost)(uint64_t seed);
    /* Optional: the wall seconds a worker pays once before its first case (a long-lived job it starts and
     * keeps for its later cases). When > 0 the scheduler gives each worker one equal share of the seed groups
     * (lab_sched_plan_incident) instead of a fresh worker per seed group, so the set-up is paid once per worker. */
    double worker_setup_s;
    /* Optional, with variants that need N > 1 GPUs: 1 when a case grows with the GPUs it is given (a job of one
     * rank per GPU): it then gets every GPU of the host (at least N), one case at a time. */
    int gpus_all;
} lab_incident;

/* One case of a replay as read back from results.jsonl (outcome, verdict, detail, metrics). */
typedef struct {
    const lab_variant *variant;
    uint64_t seed;
    lab_backend backend;
    int outcome;                     /* lab_outcome (lab_isolate.h) */
    lab_case_result r;               /* metrics whose value was non-finite come back as NaN */
} lab_figure_case;

/* What an incident's figures() gets: its own cases of the replay, where to write, the repository root. */
typedef struct lab_figure_ctx {
    const lab_incident *incident;
    const char *root;                /* repository root */
    const char *plots_dir;           /* <out>/plots, exists */
    const lab_figure_case *cases;    /* this incident's cases in results order */
    size_t n_cases;
} lab_figure_ctx;

/* Registers an incident: place at file scope in the incident's C file. Incidents are found through a
 * linker section, so adding one edits nothing outside its directory. */
#define LAB_INCIDENT_REGISTER(inc)                                                                   \
    __attribute__((used, section("lab_incidents"))) static const lab_incident *const lab_reg_##inc = &inc

/* All registered incidents, sorted by id. *n receives the count. */
const lab_incident *const *lab_incident_all(size_t *n);
/* Incident by id (exact, or unique prefix such as "0004"); NULL if none. */
const lab_incident *lab_incident_find(const char *id);
/* Variant by name; NULL if none. */
const lab_variant *lab_incident_variant(const lab_incident *inc, const char *name);

/* Fills *c for one case (golden_dir from root and the incident id into gdir, of length len). */
void lab_case_init(lab_case *c, const lab_incident *inc, const lab_variant *v, uint64_t seed, lab_backend backend,
                   const char *root, char *gdir, size_t len);

/* Runs one case in this process: the seed's group from this process's cache (made by incident->setup
 * when the cache holds another incident, seed or backend; the old one torn down), then the backend's run
 * function. No GPU readiness check (the runner's job). On CUDA with no run_cuda, or a cpu_only variant, the
 * case SKIPs as no-version. Returns the run's status, or the setup's error. */
lab_status lab_case_run(const lab_case *c, lab_case_result *r);
/* lab_case_init + lab_case_run for the variant named `variant` (tests and tools): r zeroed first.
 * LAB_ERR_ARG naming the variant when the incident has none of that name. */
lab_status lab_case_run_named(const lab_incident *inc, const char *variant, uint64_t seed, lab_backend backend,
                              const char *root, lab_case_result *r);
/* Whether a GPU case also runs its costly cross-checks against the CPU kernel (bit-for-bit or within
 * tolerance agreement of the two backends on the same inputs): seeds 1 and 2 (the golden seeds) and every
 * LAB_XCHECK_EVERY-th seed after (1 + k * LAB_XCHECK_EVERY), so a replay of N seeds cross-checks about
 * N / LAB_XCHECK_EVERY + 2 of them. The judge against the float64 reference runs on every seed. */
#define LAB_XCHECK_EVERY 8
int lab_case_xcheck(const lab_case *c);
/* Frees the cached groups of this process, if any. */
void lab_case_release(void);
/* The seed groups this process keeps at once (the seeds of one seed batch; lab_case_run's single seed). */
#define LAB_CASE_GROUPS_MAX 256
/* Runs the seed batch cases[0..n) of one incident, variant and backend (CUDA), with the seeds' groups from this
 * process's cache (the missing ones made by setup on lab_par_threads() threads at once; at most
 * LAB_CASE_GROUPS_MAX distinct seeds), through the
 * incident's batch.run_cuda; results[i] zeroed first. LAB_ERR_ARG when the incident has no batch.run_cuda, n is 0
 * or above its batch.max or the cases are not of one incident, variant and backend; else batch.run_cuda's or a
 * setup's status. */
lab_status lab_case_run_batch(const lab_case *cases, size_t n, lab_case_result *results);

/* Result helpers for run functions. lab_result_verdict, lab_result_skip and lab_result_skip_as format the detail line;
 * text longer than LAB_DETAIL_MAX is fitted at a word boundary and marked (lab_text_fit). */
void lab_result_metric(lab_case_result *r, const char *name, double value);
void lab_result_verdict(lab_case_result *r, int passed, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A skip of class LAB_SKIP_MISSING (an error: not built or a dependency missing). */
void lab_result_skip(lab_case_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void lab_result_skip_as(lab_case_result *r, lab_skip_class k, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* lab_result_metric keeps at most LAB_MAX_METRICS metrics; one more is a programming error that aborts
 * with its name (never silently dropped). */
/* Value of a recorded metric, or NaN if absent. */
double lab_result_get(const lab_case_result *r, const char *name);
/* 1 when r recorded a metric of that name (whatever its value), else 0. */
int lab_result_has(const lab_case_result *r, const char *name);

/* The bound of inc's criterion (inc->plots.specs) that result r crosses: the first spec in the incident's order whose
 * metric r recorded with a value that does not pass it (lab_metric_spec_passes), specs that are not `model` counts
 * before those that are. *value gets the metric's value and *bound the bound it was judged against. NULL when r
 * crosses none: a pass, or a failure the specs do not name (a golden mismatch, a hang: r's detail says which). */
const lab_metric_spec *lab_incident_crossed(const lab_incident *inc, const lab_case_result *r, double *value,
                                            double *bound);

#ifdef __cplusplus
}
#endif

#endif
