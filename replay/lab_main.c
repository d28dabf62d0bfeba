/* lab_main: the `lab` command: list, replay, explain, golden verify|bless, plots, bench, report, compare. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lab_compare.h"
#include "lab_compare_plot.h"
#include "lab_fs.h"
#include "lab_golden.h"
#include "lab_incident.h"
#include "lab_isolate.h"
#include "lab_mpi.h"
#include "lab_plot.h"
#include "lab_sanitize.h"
#include "lab_replay.h"
#include "lab_report.h"
#include "lab_results.h"

#define LAB_EXIT_USAGE 2

static const char *lab_usage =
    "usage: lab COMMAND [options]\n"
    "  list                               incidents, their variants and roles\n"
    "  replay [--incident ID]... [--variant NAME] [--seeds N | --seed S] [--first-seed S0]\n"
    "         [--backend cpu|cuda|auto] [-j JOBS] [--timeout SEC] [--out DIR] [--tap] [--no-plots] [--quiet]\n"
    "         [--sanitize memcheck|initcheck|racecheck] [--mpi]\n"
    "                                     run cases isolated on all cores; exit 1 if a fix fails or a bug\n"
    "                                     is not detected (XPASS); --sanitize runs every CUDA case under\n"
    "                                     compute-sanitizer, and its findings join the outcome. --mpi: under\n"
    "                                     mpirun, split the cases across ranks (one GPU each), rank 0 writes\n"
    "                                     the merged report\n"    "  explain ID [--seeds N] [--backend cpu|cuda]\n"
    "                                     the story in short, then bug and fix side by side, live\n"
    "  golden verify|bless [ID]           check goldens against their MANIFEST / regenerate them\n"
    "  plots [--out DIR]                  redraw the plots of a replay from DIR/results.jsonl\n"
    "  case ID VARIANT SEED [--backend B] one case in this process (for gdb, and what --sanitize runs)\n"
    "  bench [ID]...                      the incidents' benchmarks (GPU kernels against device ceilings)\n"
    "  report [--out DIR] [replay flags]  replay (same flags as replay), then write a self-contained report\n"
    "                                     folder (default build/report): report.json, index.html (plots inline),\n"
    "                                     the device and build, results files; exit status as replay\n"
    "  report --replot DIR                render a report's plots here (made where gnuplot was missing)\n"
    "  compare A B [--factor F] [--strict] [--out DIR]\n"
    "                                     compare two report folders: changed outcomes, metrics moved by more\n"
    "                                     than F times (default 10), new or missing incidents and variants;\n"
    "                                     exit 1 if an outcome regressed (--strict: also moves and missing ones)\n"
    "                                     --out DIR: also per incident both distributions against the tolerance\n"
    "                                     (DIR/<id>.png, DIR/index.html)\n"
    "  trend [--out DIR] REPORT...        each fix's margin to its tolerance across reports in time order\n"
    "                                     (DIR/trend.png, default build/trend)\n"
    "  help                               this text\n"
    "The repository root is the current directory, or LAB_ROOT.\n";

/* Prints "lab: <message>" and a pointer to the usage text; returns the usage exit status. */
static int lab_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int lab_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "lab: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(run `lab help` for usage)\n");
    return LAB_EXIT_USAGE;
}

/* Parses a non-negative integer flag value; 0 on success. */
static int lab_parse_u64(const char *flag, const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!s || !*s || *s == '-') return lab_usage_error("%s needs a non-negative integer, got '%s'", flag, s ? s : "");
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return lab_usage_error("%s needs a non-negative integer, got '%s'", flag, s);
    *out = (uint64_t)v;
    return 0;
}

static void lab_list_known(FILE *f)
{
    size_t n;
    const lab_incident *const *all = lab_incident_all(&n);
    fprintf(f, "known incidents:");
    for (size_t i = 0; i < n; ++i) fprintf(f, " %s", all[i]->id);
    fprintf(f, "\n");
}

static const lab_incident *lab_find_or_complain(const char *id)
{
    const lab_incident *inc = lab_incident_find(id);
    if (!inc) {
        fprintf(stderr, "lab: unknown incident '%s'\n", id);
        lab_list_known(stderr);
    }
    return inc;
}

static const char *lab_root(void)
{
    const char *r = getenv("LAB_ROOT");
    return r && *r ? r : ".";
}

static int lab_cmd_list(void)
{
    size_t n;
    const lab_incident *const *all = lab_incident_all(&n);
    for (size_t i = 0; i < n; ++i) {
        printf("%s  %s\n", all[i]->id, all[i]->title);
        for (int v = 0; v < all[i]->n_variants; ++v) {
            const lab_variant *var = &all[i]->variants[v];
            printf("    %-18s %-3s %s%s\n", var->name, lab_role_name(var->role), var->what,
                   var->run_cuda ? "  [cpu, cuda]" : "  [cpu]");
        }
    }
    return 0;
}

#ifdef LAB_HAVE_CUDA
#include "lab_cuda.h"
static lab_status lab_probe_job(void *ctx, size_t job, lab_case_result *r)
{
    char why[200];
    if (lab_cuda_ready(why, sizeof why) == LAB_OK) lab_result_verdict(r, 1, "CUDA device ready");
    else lab_result_skip(r, "%s", why);
    return LAB_OK;
}
#endif

/* --backend auto: cuda when this build has CUDA and a device is usable, else cpu. The probe runs in a
 * child process: a CUDA context made in this one would not survive the fork of every case. *why says
 * why the CPU was chosen. */
static lab_backend lab_backend_auto(char *why, size_t len)
{
#ifdef LAB_HAVE_CUDA
    lab_job_outcome o;
    if (lab_isolate_run(1, lab_probe_job, NULL, 1, 60, NULL, &o) == LAB_OK && o.outcome == LAB_OUT_PASS)
        return LAB_BACKEND_CUDA;
    snprintf(why, len, "%s", o.r.detail[0] ? o.r.detail : o.error);
#else
    snprintf(why, len, "this build has no CUDA");
#endif
    return LAB_BACKEND_CPU;
}

static int lab_cmd_replay(int argc, char **argv, const char *lab_bin)
{
    const char *ids[64];
    size_t n_ids = 0;
    const char *variant = NULL, *out = "build/replay", *sanitize = NULL;
    uint64_t n_seeds = 256, one_seed = 0, first = 1, jobs = 0, timeout = 0;
    int have_seed = 0, have_seeds = 0, tap = 0, plots = 1, quiet = 0, mpi = 0;
    lab_backend backend = LAB_BACKEND_CPU;
    for (int i = 0; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1;
        if (!strcmp(a, "--incident")) {
            if (!v) return lab_usage_error("%s needs an incident id", a);
            if (n_ids == 64) return lab_usage_error("too many %s flags", a);
            ids[n_ids++] = v;
        } else if (!strcmp(a, "--variant")) {
            if (!v) return lab_usage_error("%s needs a variant name", a);
            variant = v;
        } else if (!strcmp(a, "--seeds")) {
            if (lab_parse_u64(a, v, &n_seeds)) return LAB_EXIT_USAGE;
            if (n_seeds == 0) return lab_usage_error("%s must be at least 1", a);
            have_seeds = 1;
        } else if (!strcmp(a, "--seed")) {
            if (lab_parse_u64(a, v, &one_seed)) return LAB_EXIT_USAGE;
            have_seed = 1;
        } else if (!strcmp(a, "--first-seed")) {
            if (lab_parse_u64(a, v, &first)) return LAB_EXIT_USAGE;
        } else if (!strcmp(a, "--backend")) {
            if (!v) return lab_usage_error("%s needs cpu, cuda or auto", a);
            if (!strcmp(v, "auto")) {
                char why[240];
                backend = lab_backend_auto(why, sizeof why);
                if (backend == LAB_BACKEND_CPU) fprintf(stderr, "backend auto: cpu (%s)\n", why);
                else fprintf(stderr, "backend auto: cuda\n");
            } else if (lab_backend_parse(v, &backend) != LAB_OK) {
                return lab_usage_error("%s", lab_err_msg());
            }
        } else if (!strcmp(a, "-j") || !strcmp(a, "--jobs")) {
            if (lab_parse_u64(a, v, &jobs)) return LAB_EXIT_USAGE;
        } else if (!strcmp(a, "--timeout")) {
            if (lab_parse_u64(a, v, &timeout)) return LAB_EXIT_USAGE;
        } else if (!strcmp(a, "--out")) {
            if (!v) return lab_usage_error("%s needs a directory", a);
            out = v;
        } else if (!strcmp(a, "--sanitize")) {
            if (lab_sanitize_tool_check(v) != LAB_OK) return lab_usage_error("%s: %s", a, lab_err_msg());
            sanitize = v;
        } else {
            takes = 0;
            if (!strcmp(a, "--tap")) tap = 1;
            else if (!strcmp(a, "--no-plots")) plots = 0;
            else if (!strcmp(a, "--quiet")) quiet = 1;
            else if (!strcmp(a, "--mpi")) mpi = 1;
            else return lab_usage_error("replay: unknown flag '%s'", a);
        }
        i += takes;
    }
    if (have_seed && have_seeds) return lab_usage_error("--seed and --seeds exclude each other");
    if (sanitize && backend != LAB_BACKEND_CUDA) return lab_usage_error("--sanitize needs --backend cuda");
    if (mpi && lab_mpi_check() != LAB_OK) return lab_usage_error("%s", lab_err_msg());

    size_t n_all;
    const lab_incident *const *all = lab_incident_all(&n_all);
    const lab_incident *sel[64];
    size_t n_sel = 0;
    if (n_ids == 0) {
        for (size_t i = 0; i < n_all && n_sel < 64; ++i) sel[n_sel++] = all[i];
    } else {
        for (size_t i = 0; i < n_ids; ++i) {
            const lab_incident *inc = lab_find_or_complain(ids[i]);
            if (!inc) return LAB_EXIT_USAGE;
            sel[n_sel++] = inc;
        }
    }
    if (variant) {
        int found = 0;
        for (size_t i = 0; i < n_sel; ++i) found |= lab_incident_variant(sel[i], variant) != NULL;
        if (!found) {
            fprintf(stderr, "lab: unknown variant '%s'; known:", variant);
            for (size_t i = 0; i < n_sel; ++i)
                for (int v = 0; v < sel[i]->n_variants; ++v) fprintf(stderr, " %s/%s", sel[i]->id, sel[i]->variants[v].name);
            fprintf(stderr, "\n");
            return LAB_EXIT_USAGE;
        }
    }
    size_t ns = have_seed ? 1 : (size_t)n_seeds;
    uint64_t *seeds = malloc(ns * sizeof *seeds);
    if (!seeds) return 1;
    for (size_t s = 0; s < ns; ++s) seeds[s] = have_seed ? one_seed : first + s;

    lab_replay_opts o = {sel, n_sel, variant, seeds, ns, !have_seed && !have_seeds, backend, (int)jobs, (double)timeout,
                         out, tap, plots, !quiet && isatty(STDERR_FILENO), lab_bin, lab_root(), sanitize};
    int ok = 0;
    lab_case_record *recs;
    size_t nrec;
    lab_status st = mpi ? lab_mpi_replay(&o, stdout, &ok, &recs, &nrec) : lab_replay_run(&o, stdout, &ok, &recs, &nrec);
    if (st == LAB_OK && have_seed) {
        /* One case: show everything it reported. */
        for (size_t i = 0; i < nrec; ++i) {
            printf("%s %s seed %llu %s: %s %s %s\n", recs[i].incident->id, recs[i].variant->name,
                   (unsigned long long)recs[i].seed, lab_backend_name(recs[i].backend),
                   lab_outcome_name(recs[i].o.outcome), recs[i].o.r.detail, recs[i].o.error);
            for (int m = 0; m < recs[i].o.r.n_metrics; ++m)
                printf("    %-24s %.9g\n", recs[i].o.r.metrics[m].name, recs[i].o.r.metrics[m].value);
        }
    }
    free(recs);
    free(seeds);
    if (st != LAB_OK) {
        fprintf(stderr, "lab replay: %s\n", lab_err_msg());
        return 1;
    }
    return ok ? 0 : 1;
}

/* explain: one job per (seed, variant) pair. */
typedef struct {
    const lab_incident *inc;
    lab_backend backend;
    size_t n_seeds;
} lab_explain_ctx;

static lab_status lab_explain_job(void *vctx, size_t job, lab_case_result *r)
{
    lab_explain_ctx *x = vctx;
    lab_case c = {x->inc, &x->inc->variants[job % (size_t)x->inc->n_variants], 1 + job / (size_t)x->inc->n_variants,
                  x->backend, lab_root()};
    return lab_replay_case(&c, r);
}

static int lab_cmd_explain(int argc, char **argv, const char *lab_bin)
{
    if (argc < 1) return lab_usage_error("explain needs an incident id");
    const lab_incident *inc = lab_find_or_complain(argv[0]);
    if (!inc) return LAB_EXIT_USAGE;
    uint64_t seeds = 4;
    lab_backend backend = LAB_BACKEND_CPU;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--seeds") && i + 1 < argc) {
            if (lab_parse_u64("--seeds", argv[++i], &seeds) || seeds == 0) return LAB_EXIT_USAGE;
        } else if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
            if (lab_backend_parse(argv[++i], &backend) != LAB_OK) return lab_usage_error("%s", lab_err_msg());
        } else {
            return lab_usage_error("explain: unknown flag '%s'", argv[i]);
        }
    }
    printf("%s: %s\n\n%s\n\nThe full story: %s/incidents/%s/README.md\n\n", inc->id, inc->title, inc->summary,
           lab_root(), inc->id);
    for (int v = 0; v < inc->n_variants; ++v)
        printf("  %-18s %s  %s\n", inc->variants[v].name, lab_role_name(inc->variants[v].role), inc->variants[v].what);
    printf("\nLive, %llu seeds on %s; separating metric: %s\n\n", (unsigned long long)seeds, lab_backend_name(backend),
           inc->plot_metric);
    size_t nv = (size_t)inc->n_variants, n = (size_t)seeds * nv;
    lab_job_outcome *out = calloc(n, sizeof *out);
    if (!out) return 1;
    lab_explain_ctx x = {inc, backend, (size_t)seeds};
    lab_status st = lab_isolate_run(n, lab_explain_job, &x, lab_isolate_ncpu(), inc->timeout_s > 0 ? inc->timeout_s : 60,
                                    NULL, out);
    printf("%-6s", "seed");
    for (size_t v = 0; v < nv; ++v) printf(" | %-34s", inc->variants[v].name);
    printf("\n");
    int all_ok = st == LAB_OK;
    for (size_t s = 0; s < seeds; ++s) {
        printf("%-6zu", s + 1);
        for (size_t v = 0; v < nv; ++v) {
            const lab_job_outcome *o = &out[s * nv + v];
            double m = lab_result_get(&o->r, inc->plot_metric);
            char cell[64];
            snprintf(cell, sizeof cell, "%s %s=%.3g", lab_outcome_name(o->outcome), inc->plot_metric, m);
            printf(" | %-34s", cell);
            lab_case_record rec = {inc, &inc->variants[v], s + 1, backend, *o};
            all_ok &= lab_results_case_ok(&rec) != 0;
        }
        printf("\n");
    }
    printf("\n");
    for (size_t v = 0; v < nv; ++v) {
        const lab_job_outcome *o = &out[v];
        printf("%s (seed 1): %s%s%s\n", inc->variants[v].name, o->r.detail, o->error[0] ? " " : "", o->error);
    }
    printf("\n%s\nReplay all seeds: %s replay --incident %s\n",
           all_ok ? "The bug happens and the fix holds." : "NOT OK: a fix failed or a bug was not detected.", lab_bin,
           inc->id);
    free(out);
    return all_ok ? 0 : 1;
}

static int lab_cmd_golden(int argc, char **argv)
{
    if (argc < 1 || (strcmp(argv[0], "verify") && strcmp(argv[0], "bless")))
        return lab_usage_error("golden needs verify or bless, got '%s'", argc ? argv[0] : "");
    int bless = !strcmp(argv[0], "bless");
    size_t n;
    const lab_incident *const *all = lab_incident_all(&n);
    const lab_incident *one = NULL;
    if (argc > 2) return lab_usage_error("golden: unexpected argument '%s'", argv[2]);
    if (argc == 2 && !(one = lab_find_or_complain(argv[1]))) return LAB_EXIT_USAGE;
    int bad = 0;
    for (size_t i = 0; i < n; ++i) {
        const lab_incident *inc = all[i];
        if (one && inc != one) continue;
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/incidents/%s/golden", lab_root(), inc->id);
        if (bless) {
            if (!inc->golden_bless) {
                printf("%s: no golden generator\n", inc->id);
                continue;
            }
            lab_status st = lab_fs_mkdirs(dir);
            if (st == LAB_OK) st = inc->golden_bless(dir);
            printf("%s: %s%s\n", inc->id, st == LAB_OK ? "goldens regenerated in " : "bless FAILED: ",
                   st == LAB_OK ? dir : lab_err_msg());
            bad |= st != LAB_OK;
            continue;
        }
        lab_golden_manifest m;
        lab_status st = lab_golden_manifest_read(dir, &m);
        if (st != LAB_OK) {
            printf("%s: FAIL: %s\n", inc->id, lab_err_msg());
            bad = 1;
            continue;
        }
        size_t good = 0;
        st = lab_golden_verify(dir, &m, &good);
        if (st == LAB_OK) printf("%s: %zu golden files verified (sha256, dtype, shape)\n", inc->id, good);
        else printf("%s: FAIL: %s\n", inc->id, lab_err_msg());
        bad |= st != LAB_OK;
        lab_golden_manifest_free(&m);
    }
    return bad ? 1 : 0;
}

static int lab_cmd_plots(int argc, char **argv)
{
    const char *out = "build/replay";
    for (int i = 0; i < argc; ++i) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
        else return lab_usage_error("plots: unknown flag '%s'", argv[i]);
    }
    int n = 0;
    lab_status st = lab_plot_results(out, lab_root(), stdout, &n);
    if (st != LAB_OK) {
        fprintf(stderr, "lab plots: %s\n", lab_err_msg());
        return 1;
    }
    printf("plots: %d PNG in %s/plots\n", n, out);
    return 0;
}

/* case: one case in this process (no isolation), its result printed as a LAB-CASE line: what `replay
 * --sanitize` runs under compute-sanitizer, and a handle for gdb / cuda-gdb. */
static int lab_cmd_case(int argc, char **argv)
{
    if (argc < 3) return lab_usage_error("case needs ID VARIANT SEED");
    const lab_incident *inc = lab_find_or_complain(argv[0]);
    if (!inc) return LAB_EXIT_USAGE;
    const lab_variant *v = lab_incident_variant(inc, argv[1]);
    if (!v) return lab_usage_error("case: %s has no variant '%s'", inc->id, argv[1]);
    uint64_t seed;
    if (lab_parse_u64("SEED", argv[2], &seed)) return LAB_EXIT_USAGE;
    lab_backend backend = LAB_BACKEND_CPU;
    for (int i = 3; i < argc; ++i) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
            if (lab_backend_parse(argv[++i], &backend) != LAB_OK) return lab_usage_error("%s", lab_err_msg());
        } else {
            return lab_usage_error("case: unknown flag '%s'", argv[i]);
        }
    }
    lab_case c = {inc, v, seed, backend, lab_root()};
    lab_case_result r;
    lab_status st = lab_replay_case(&c, &r);
    lab_sanitize_print_result(stdout, st, &r);
    return 0;
}

/* bench: each selected incident's benchmark, one after another (never two at once: they time the device). */
static int lab_cmd_bench(int argc, char **argv)
{
    size_t n_all;
    const lab_incident *const *all = lab_incident_all(&n_all);
    int bad = 0, ran = 0;
    for (size_t i = 0; i < n_all; ++i) {
        const lab_incident *inc = all[i];
        int chosen = argc == 0;
        for (int a = 0; a < argc; ++a) {
            const lab_incident *want = lab_find_or_complain(argv[a]);
            if (!want) return LAB_EXIT_USAGE;
            chosen |= want == inc;
        }
        if (!chosen || !inc->bench) continue;
        ran++;
        printf("== %s\n", inc->id);
        fflush(stdout);
        lab_status st = inc->bench(stdout);
        if (st == LAB_ERR_UNSUPPORTED) printf("%s: bench skipped: %s\n", inc->id, lab_err_msg());
        else if (st != LAB_OK) printf("%s: bench failed: %s\n", inc->id, lab_err_msg());
        bad |= st != LAB_OK && st != LAB_ERR_UNSUPPORTED;
        fflush(stdout);
    }
    if (!ran) printf("no benchmark among the selected incidents\n");
    return bad;
}

/* report: the replay with the given flags into the report folder, then report.json and index.html there.
 * The exit status is the replay's (0 ok, 1 not ok, 2 usage); 1 when the report cannot be written. */
static int lab_cmd_report(int argc, char **argv, const char *lab_bin)
{
    if (argc >= 1 && !strcmp(argv[0], "--replot")) {
        if (argc != 2) return lab_usage_error("report --replot needs exactly one report folder");
        if (lab_report_replot(argv[1], lab_root(), stdout) != LAB_OK) {
            fprintf(stderr, "lab report: %s\n", lab_err_msg());
            return 1;
        }
        return 0;
    }
    const char *out = "build/report";
    char **rargv = malloc(((size_t)argc + 2) * sizeof *rargv);
    if (!rargv) return 1;
    int rn = 0;
    char command[4096];
    int cl = snprintf(command, sizeof command, "%s report", lab_bin);
    for (int i = 0; i < argc; ++i) {
        if (cl > 0 && (size_t)cl < sizeof command) cl += snprintf(command + cl, sizeof command - (size_t)cl, " %s", argv[i]);
        if (!strcmp(argv[i], "--out")) {
            if (i + 1 >= argc) {
                free(rargv);
                return lab_usage_error("report: --out needs a directory");
            }
            out = argv[++i];
            if (cl > 0 && (size_t)cl < sizeof command) cl += snprintf(command + cl, sizeof command - (size_t)cl, " %s", out);
            continue;
        }
        rargv[rn++] = argv[i];
    }
    rargv[rn++] = "--out";
    rargv[rn++] = (char *)out;
    time_t t0 = time(NULL);
    int rc = lab_cmd_replay(rn, rargv, lab_bin);
    free(rargv);
    if (rc == LAB_EXIT_USAGE || lab_mpi_rank() != 0) return rc; /* under --mpi, rank 0 writes the report */
    lab_report_opts ro = {t0, command, 1};
    if (lab_report_write(out, &ro) != LAB_OK) {
        fprintf(stderr, "lab report: %s\n", lab_err_msg());
        return 1;
    }
    printf("report: %s/index.html (and report.json)\n", out);
    return rc;
}

/* compare: two report folders; 0 nothing regressed, 1 a regression, 2 usage or an unreadable report. */
static int lab_cmd_compare(int argc, char **argv)
{
    const char *dirs[2];
    int nd = 0;
    lab_compare_opts co = {10.0, 0};
    const char *plot_dir = NULL;
    for (int i = 0; i < argc; ++i) {
        if (!strcmp(argv[i], "--factor")) {
            char *end;
            if (i + 1 >= argc) return lab_usage_error("compare: --factor needs a number above 1");
            errno = 0;
            co.factor = strtod(argv[++i], &end);
            if (errno || *end || !(co.factor > 1) || !isfinite(co.factor))
                return lab_usage_error("compare: --factor needs a number above 1, got '%s'", argv[i]);
        } else if (!strcmp(argv[i], "--strict")) {
            co.strict = 1;
        } else if (!strcmp(argv[i], "--out")) { /* drift figures (lab_compare_plot) */
            if (i + 1 >= argc) return lab_usage_error("compare: --out needs a folder");
            plot_dir = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return lab_usage_error("compare: unknown flag '%s'", argv[i]);
        } else if (nd == 2) {
            return lab_usage_error("compare: unexpected argument '%s' (needs two report folders)", argv[i]);
        } else {
            dirs[nd++] = argv[i];
        }
    }
    if (nd != 2) return lab_usage_error("compare needs two report folders: lab compare A B");
    lab_compare_result res;
    lab_status st = lab_compare_reports(dirs[0], dirs[1], &co, stdout, &res);
    if (st != LAB_OK) {
        fprintf(stderr, "lab compare: %s\n", lab_err_msg());
        return LAB_EXIT_USAGE;
    }
    int npng = 0;
    if (plot_dir && lab_compare_plot_run(dirs[0], dirs[1], plot_dir, co.factor, lab_root(), stdout, &npng) != LAB_OK) {
        fprintf(stderr, "lab compare: figures: %s\n", lab_err_msg());
        return 3;
    }
    return res.failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *lab_bin = argv[0];
    if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(lab_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? LAB_EXIT_USAGE : 0;
    }
    /* compare reads only the two report folders: it runs anywhere. */
    if (!strcmp(argv[1], "compare")) return lab_cmd_compare(argc - 2, argv + 2);
    if (!strcmp(argv[1], "trend")) return lab_compare_plot_trend_cmd(argc - 2, argv + 2, lab_root());
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/incidents", lab_root());
    if (!lab_fs_exists(probe)) {
        fprintf(stderr, "lab: %s not found: run from the repository root or set LAB_ROOT\n", probe);
        return LAB_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "list")) return lab_cmd_list();
    if (!strcmp(cmd, "replay")) return lab_cmd_replay(argc - 2, argv + 2, lab_bin);
    if (!strcmp(cmd, "explain")) return lab_cmd_explain(argc - 2, argv + 2, lab_bin);
    if (!strcmp(cmd, "golden")) return lab_cmd_golden(argc - 2, argv + 2);
    if (!strcmp(cmd, "plots")) return lab_cmd_plots(argc - 2, argv + 2);
    if (!strcmp(cmd, "bench")) return lab_cmd_bench(argc - 2, argv + 2);
    if (!strcmp(cmd, "case")) return lab_cmd_case(argc - 2, argv + 2);
    if (!strcmp(cmd, "report")) return lab_cmd_report(argc - 2, argv + 2, lab_bin);
    return lab_usage_error("unknown command '%s'", cmd);
}
