/* lab_main: the `lab` command: list, replay, explain, golden verify|bless, plots, bench, report, compare. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lab_bench.h"
#include "lab_cli.h"
#include "lab_command.h"
#include "lab_compare.h"
#include "lab_compare_plot.h"
#include "lab_fs.h"
#include "lab_golden.h"
#include "lab_incident.h"
#include "lab_isolate.h"
#include "lab_json.h"
#include "lab_mpi.h"
#include "lab_new.h"
#include "lab_phase.h"
#include "lab_plot.h"
#include "lab_sanitize.h"
#include "lab_stall.h"
#include "lab_replay.h"
#include "lab_resultset.h"
#include "lab_report.h"
#include "lab_results.h"

/* Per command: its usage lines; `lab help` prints them all, `lab COMMAND --help` its own. replay and report take the
 * option table's options (lab_cli): their lines come from the table (lab_cli_usage), between the command's text and
 * its tail, so that the usage names every option the parser takes and no other. */
#define LAB_USAGE_OPTIONS(cmd) ((cmd) + 1)
static const struct {
    const char *name, *text;
    int options;      /* LAB_USAGE_OPTIONS(cmd): the options of lab_cli_cmd cmd follow the text; 0: none */
    const char *tail; /* after the options, or NULL */
} lab_usage_cmds[] = {
    {"list", "  list                               incidents, their variants and roles\n"},
    {"replay",
     "  replay [OPTION]...                 run cases isolated on all cores; exit 1 if a fix fails or a bug is not\n"
     "                                     detected (XPASS). SIGINT/SIGTERM stop the run: the finished cases are\n"
     "                                     written, marked interrupted, exit 130/143, and the commands that resume\n"
     "                                     what is left are printed. Options:\n",
     LAB_USAGE_OPTIONS(LAB_CLI_REPLAY), NULL},
    {"explain",
     "  explain ID [--seeds N] [--backend cpu|cuda]\n"
     "                                     the story in short, then bug and fix side by side, live (--seeds 1..4096)\n"},
    {"golden", "  golden verify|bless [ID]           check goldens against their MANIFEST / regenerate them\n"},
    {"plots", "  plots [--out DIR]                  redraw the plots of a replay from DIR/results.jsonl\n"},
    {"case",
     "  case ID VARIANT SEED [--backend B] [--sanitizer TOOL]\n"
     "                                     one case in this process (for gdb, and what --sanitize runs; TOOL:\n"
     "                                     the compute-sanitizer tool watching it, buffers then exact-size)\n"},
    {"bench",
     "  bench [ID]... [--json] [--study]   the incidents' benchmarks (GPU kernels against device ceilings; seconds,\n"
     "                                     what `lab report` includes); --json: their records (ratios, times,\n"
     "                                     spreads) as JSON on stdout; --study: the incidents' longer studies\n"
     "                                     instead (0008: every num_warps configuration, 16 runs each, minutes)\n"},
    {"report",
     "  report [OPTION]...                 replay as `lab replay` does, then write a self-contained report folder\n"
     "                                     (default build/report): report.json, index.html (plots inline), the\n"
     "                                     device and build, results files; exit status as replay. Options:\n",
     LAB_USAGE_OPTIONS(LAB_CLI_REPORT),
     "  report --replot DIR                render a report's plots here (made where gnuplot was missing)\n"
     "  report --from DIR                  the report of a replay already in DIR (`lab replay --out DIR`), on the\n"
     "                                     machine and build that ran it: report.json and index.html there; exit 2\n"
     "                                     when DIR is not a finished replay (the file is named)\n"},
    {"compare",
     "  compare A B [--factor F] [--strict] [--out DIR]\n"
     "                                     compare two report folders: changed outcomes, metrics moved by more\n"
     "                                     than F times (default 10), new or missing incidents and variants;\n"
     "                                     exit 1 if an outcome regressed (--strict: also moves and missing ones),\n"
     "                                     2 if a report cannot be read or is invalid (the field is named).\n"
     "                                     Benchmarks (both reports' bench sections, same device): each fix's\n"
     "                                     cost ratio side by side; a fix that got slower (ratio up by more than\n"
     "                                     max(5%, the two spreads)) is flagged PERF REGRESSION and exits 1\n"
     "                                     --out DIR: also per incident both distributions against the tolerance\n"
     "                                     (DIR/<id>.png, DIR/index.html); 3 when they cannot be drawn. DIR may\n"
     "                                     be missing, empty or an earlier compare folder; anything else (a file,\n"
     "                                     a folder of other things, a replay or report folder) is refused, exit 2\n"},
    {"trend",
     "  trend [--out DIR] REPORT...        each fix's margin to its tolerance across reports in time order\n"
     "                                     (DIR/trend.png, default build/trend). DIR may be missing, empty or\n"
     "                                     an earlier trend folder; anything else is refused, exit 2\n"},
    {"new", "  new NNNN-slug                      a new incident directory from incidents/_template\n"},
    {"help", "  help                               this text (`lab COMMAND --help`: one command's)\n"},
};

static const char *lab_usage_tail =
    "Exit status: 0 ok (every fix holds, every bug detected); 1 the verdict is NOT OK; 2 bad usage;\n"
    "3 the lab could not do the job (I/O error, missing dependency or build product, a requested backend\n"
    "that is not usable); 130/143 a replay interrupted by SIGINT/SIGTERM (finished cases kept).\n"
    "The repository root is the current directory, or LAB_ROOT.\n";

/* Prints the usage of one command (name NULL: all of them, report's options after replay's as the ones it adds) and
 * the exit codes. */
static void lab_usage_print(FILE *f, const char *name)
{
    fprintf(f, "usage: lab COMMAND [options]\n");
    for (size_t i = 0; i < sizeof lab_usage_cmds / sizeof *lab_usage_cmds; ++i) {
        if (name && strcmp(name, lab_usage_cmds[i].name)) continue;
        fputs(lab_usage_cmds[i].text, f);
        if (lab_usage_cmds[i].options) {
            lab_cli_cmd cmd = (lab_cli_cmd)(lab_usage_cmds[i].options - 1);
            int own = !name && cmd == LAB_CLI_REPORT;
            if (own) fprintf(f, "    replay's (above), and:\n");
            lab_cli_usage(f, cmd, own);
        }
        if (lab_usage_cmds[i].tail) fputs(lab_usage_cmds[i].tail, f);
    }
    fputs(lab_usage_tail, f);
}

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

/* Parses an integer flag value in [lo, hi] with lab_cli_u64; 0 on success, else prints the error and
 * returns the usage exit status. */
static int lab_parse_u64(const char *flag, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    if (lab_cli_u64(flag, s, lo, hi, out) != LAB_OK) return lab_usage_error("%s", lab_err_msg());
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
                   all[i]->run_cuda && !var->cpu_only ? "  [cpu, cuda]" : "  [cpu]");
        }
    }
    return 0;
}

#ifdef LAB_HAVE_CUDA
#include "lab_devmem.h"
#endif

/* Runs the request a command's options filled (lab_replay_request_run), keeping its result set in memory when
 * keep_set; *rc gets the exit status when the replay did not get to a verdict (0 otherwise). */
static lab_status lab_run_request(lab_request *req, const char *lab_bin, int keep_set, lab_replay_result *res, int *rc)
{
    req->lab_bin = lab_bin;
    req->root = lab_root();
    lab_replay_how how = {lab_mpi_replay, keep_set, stdout, stderr};
    *rc = 0;
    lab_status st = lab_replay_request_run(req, &how, res);
    if (st == LAB_OK) return st;
    if (st == LAB_ERR_ARG) *rc = lab_usage_error("%s", lab_err_msg());
    else if (res->said) *rc = lab_verdict_exit(st);
    else { /* the result set could not be written (or the harness failed): nothing claims a verdict */
        fprintf(stderr, "lab replay: %s\n", lab_err_msg());
        *rc = LAB_EXIT_FAILED;
    }
    return st;
}

/* The options of `lab replay` or `lab report` into *o: -1 to go on, else the exit status (its usage printed for
 * --help, a usage error for a bad option or --mpi in a build without MPI). */
static int lab_parse_request(lab_cli_cmd cmd, int argc, char **argv, lab_cli_replay *o)
{
    if (lab_cli_replay_parse(cmd, argc, argv, o) != LAB_OK) return lab_usage_error("%s", lab_err_msg());
    if (o->help) {
        lab_usage_print(stdout, cmd == LAB_CLI_REPORT ? "report" : "replay");
        return LAB_EXIT_OK;
    }
    if (o->req.mpi && lab_mpi_check() != LAB_OK) return lab_usage_error("%s", lab_err_msg());
    return -1;
}

static int lab_cmd_replay(int argc, char **argv, const char *lab_bin)
{
    lab_cli_replay ra;
    int rc = lab_parse_request(LAB_CLI_REPLAY, argc, argv, &ra);
    if (rc >= 0) return rc;
    lab_replay_result res;
    if (lab_run_request(&ra.req, lab_bin, 0, &res, &rc) != LAB_OK) {
        lab_replay_result_free(&res);
        return rc;
    }
    if (ra.req.have_seed) {
        /* One case: show everything it reported. */
        for (size_t i = 0; i < res.n_recs; ++i) {
            const lab_case_record *r = &res.recs[i];
            printf("%s %s seed %llu %s: %s %s %s\n", r->incident->id, r->variant->name, (unsigned long long)r->seed,
                   lab_backend_name(r->backend), lab_outcome_name(r->o.outcome), r->o.r.detail, r->o.error);
            for (int m = 0; m < r->o.r.n_metrics; ++m)
                printf("    %-24s %.9g\n", r->o.r.metrics[m].name, r->o.r.metrics[m].value);
        }
    }
    rc = res.verdict.exit_status; /* the one verdict's (lab_verdict.h): 0, 1, 3, or 130/143 when interrupted */
    lab_replay_result_free(&res);
    return rc;
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
    lab_case c;
    char gdir[4096];
    lab_case_init(&c, x->inc, &x->inc->variants[job % (size_t)x->inc->n_variants], 1 + job / (size_t)x->inc->n_variants,
                  x->backend, lab_root(), gdir, sizeof gdir);
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
            if (lab_parse_u64("--seeds", argv[++i], 1, LAB_CLI_EXPLAIN_SEEDS_MAX, &seeds)) return LAB_EXIT_USAGE;
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
           inc->plots.metric);
    size_t nv = (size_t)inc->n_variants, n;
    if (lab_cli_mul_size((size_t)seeds, nv, "explain --seeds", &n) != LAB_OK) return lab_usage_error("%s", lab_err_msg());
    lab_job_outcome *out = calloc(n ? n : 1, sizeof *out);
    if (!out) {
        fprintf(stderr, "lab explain: out of memory\n");
        return LAB_EXIT_FAILED;
    }
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
            double m = lab_result_get(&o->r, inc->plots.metric);
            char cell[64];
            snprintf(cell, sizeof cell, "%s %s=%.3g", lab_outcome_name(o->outcome), inc->plots.metric, m);
            printf(" | %-34s", cell);
            lab_case_record rec = {inc, &inc->variants[v], s + 1, backend, *o};
            all_ok &= lab_verdict_case_ok(&rec) != 0;
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
    if (st != LAB_OK) {
        fprintf(stderr, "lab explain: %s\n", lab_err_msg());
        return LAB_EXIT_FAILED;
    }
    return all_ok ? LAB_EXIT_OK : LAB_EXIT_NOT_OK;
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
    int bad = 0, failed = 0;
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
            failed |= st != LAB_OK;
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
        st = lab_golden_verify_strict(dir, inc->id, &m, &good);
        if (st == LAB_OK) printf("%s: %zu golden files verified (sha256, dtype, shape)\n", inc->id, good);
        else printf("%s: FAIL: %s\n", inc->id, lab_err_msg());
        bad |= st != LAB_OK;
        lab_golden_manifest_free(&m);
    }
    return failed ? LAB_EXIT_FAILED : bad ? LAB_EXIT_NOT_OK : LAB_EXIT_OK;
}

static int lab_cmd_plots(int argc, char **argv)
{
    const char *out = "build/replay";
    for (int i = 0; i < argc; ++i) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
        else return lab_usage_error("plots: unknown flag '%s'", argv[i]);
    }
    int n = 0;
    /* SIGINT/SIGTERM end the drawing between figures (caught even where the shell left them ignored) */
    if (lab_isolate_catch_signals() != LAB_OK) fprintf(stderr, "lab plots: %s\n", lab_err_msg());
    lab_status st = lab_plot_results(out, lab_root(), stdout, &n);
    if (lab_isolate_interrupted()) {
        printf("INTERRUPTED: the figures drawn so far are in %s/plots\n", out);
        return 128 + lab_isolate_interrupted();
    }
    if (st != LAB_OK) {
        fprintf(stderr, "lab plots: %s\n", lab_err_msg());
        return LAB_EXIT_FAILED;
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
    if (lab_parse_u64("SEED", argv[2], 1, LAB_CLI_SEED_MAX, &seed)) return LAB_EXIT_USAGE;
    lab_backend backend = LAB_BACKEND_CPU;
    const char *sanitizer = NULL;
    for (int i = 3; i < argc; ++i) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
            if (lab_backend_parse(argv[++i], &backend) != LAB_OK) return lab_usage_error("%s", lab_err_msg());
        } else if (!strcmp(argv[i], "--sanitizer") && i + 1 < argc) {
            sanitizer = argv[++i]; /* the tool this process runs under (set by replay --sanitize) */
        } else {
            return lab_usage_error("case: unknown flag '%s'", argv[i]);
        }
    }
    lab_case c;
    char gdir[4096];
    lab_case_init(&c, inc, v, seed, backend, lab_root(), gdir, sizeof gdir);
    c.sanitizer = sanitizer;
    if (sanitizer) c.exact_alloc = 1;
#ifdef LAB_HAVE_CUDA
    if (sanitizer) lab_devmem_exact(); /* every device buffer its own allocation, for the memory checker */
#endif
    lab_case_result r;
    lab_status st = lab_replay_case(&c, &r);
    lab_sanitize_print_result(stdout, st, &r);
    return 0;
}

/* bench: each selected incident's benchmark, one after another (never two at once: they time the device), each in
 * its own process (lab_bench). --json: the bench section (records) on stdout, the free text on stderr. */
static int lab_cmd_bench(int argc, char **argv)
{
    int json = 0, n = 0, study = 0;
    const char **ids = malloc(((size_t)argc + 1) * sizeof *ids);
    if (!ids) return 1;
    for (int a = 0; a < argc; ++a) {
        if (!strcmp(argv[a], "--json")) {
            json = 1;
            continue;
        }
        if (!strcmp(argv[a], "--study")) {
            study = 1;
            continue;
        }
        const lab_incident *inc = lab_find_or_complain(argv[a]);
        if (!inc) {
            free(ids);
            return LAB_EXIT_USAGE;
        }
        ids[n++] = inc->id;
    }
    cJSON *section = NULL;
    int failed = 0;
    lab_status st = lab_bench_run_kind(ids, (size_t)n, study, json ? stderr : stdout, &section, &failed);
    free(ids);
    if (st != LAB_OK) {
        fprintf(stderr, "lab bench: %s\n", lab_err_msg());
        return LAB_EXIT_FAILED;
    }
    if (json) lab_json_fput(stdout, section, LAB_JSON_PRETTY);
    cJSON_Delete(section);
    return failed ? LAB_EXIT_NOT_OK : LAB_EXIT_OK;
}

/* report: the replay with the given flags into the report folder, then report.json and index.html there.
 * The exit status is the replay's (0 ok, 1 not ok, 2 usage); 1 when the report cannot be written. */
static int lab_cmd_report(int argc, char **argv, const char *lab_bin)
{
    if (argc >= 1 && !strcmp(argv[0], "--replot")) {
        if (argc != 2) return lab_usage_error("report --replot needs exactly one report folder");
        if (lab_report_replot(argv[1], lab_root(), stdout) != LAB_OK) {
            fprintf(stderr, "lab report: %s\n", lab_err_msg());
            return LAB_EXIT_FAILED;
        }
        return LAB_EXIT_OK;
    }
    if (argc >= 1 && !strcmp(argv[0], "--from")) {
        /* a replay that ran without the report (a `lab replay` whose report was not asked for, or lost): the report
         * of that folder, describing this machine and build, which must be the ones that ran it */
        if (argc != 2) return lab_usage_error("report --from needs exactly one replay folder");
        char command[4096];
        lab_command_line(lab_bin, "report", argc, argv, command, sizeof command);
        lab_report_opts ro = {0, command, 1};
        /* the set is streamed (lab_report): SIGINT/SIGTERM end the reading within 1 s, no report written */
        if (lab_isolate_catch_signals() != LAB_OK) fprintf(stderr, "lab report: %s\n", lab_err_msg());
        if (lab_report_write(argv[1], &ro) != LAB_OK) {
            if (lab_isolate_interrupted()) {
                int sig = lab_isolate_interrupted();
                printf("INTERRUPTED by %s: no report.json or index.html written in %s\n",
                       sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal", argv[1]);
                return LAB_EXIT_SIGNAL + sig;
            }
            fprintf(stderr, "lab report: %s\n", lab_err_msg());
            return LAB_EXIT_USAGE;
        }
        printf("report: %s/index.html (and report.json)\n", argv[1]);
        return LAB_EXIT_OK;
    }
    lab_cli_replay ra;
    int rc = lab_parse_request(LAB_CLI_REPORT, argc, argv, &ra);
    if (rc >= 0) return rc;
    const char *out = ra.req.out;
    int bench = ra.bench;
    char command[4096];
    lab_command_line(lab_bin, "report", argc, argv, command, sizeof command);
    time_t t0 = time(NULL);
    lab_replay_result res;
    if (lab_run_request(&ra.req, lab_bin, 1, &res, &rc) != LAB_OK) {
        lab_replay_result_free(&res);
        return rc;
    }
    rc = res.verdict.exit_status;
    /* Under --mpi, rank 0 writes the report; no report for bad usage, a lab failure or an interrupt (one that comes
     * after the replay's set was written, or while the report would be written, too: that set is kept as it is). */
    if (rc == LAB_EXIT_USAGE || rc == LAB_EXIT_FAILED || rc >= LAB_EXIT_SIGNAL || lab_mpi_rank() != 0) {
        lab_replay_result_free(&res);
        return rc;
    }
    cJSON *bench_section = NULL; /* into report.json, from memory; bench.json beside the set */
    if (lab_bench_report_step(out, bench, res.backend == LAB_BACKEND_CUDA, stdout, &bench_section) != LAB_OK)
        fprintf(stderr, "lab report: benchmarks: %s\n", lab_err_msg());
    lab_stall_point(LAB_STALL_HTML);
    if (lab_isolate_interrupted()) {
        int sig = lab_isolate_interrupted();
        printf("INTERRUPTED by %s before the report was written: the replay's result set in %s is kept, no "
               "report.json or index.html\n", sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal", out);
        lab_replay_result_free(&res);
        cJSON_Delete(bench_section);
        return LAB_EXIT_SIGNAL + sig;
    }
    lab_report_opts ro = {t0, command, 1};
    /* from what the replay holds in memory; a windowed replay holds no records (bounded memory): its files, streamed */
    lab_status st = res.summary && res.recs
                        ? lab_report_write_set(out, &ro, res.summary, &res.set, bench_section, &res.plots)
                        : lab_report_write(out, &ro);
    lab_replay_result_free(&res);
    cJSON_Delete(bench_section);
    if (st != LAB_OK && lab_isolate_interrupted()) { /* while reading a windowed replay's set, or before writing */
        int sig = lab_isolate_interrupted();
        printf("INTERRUPTED by %s before the report was written: the replay's result set in %s is kept, no "
               "report.json or index.html\n", sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal", out);
        return LAB_EXIT_SIGNAL + sig;
    }
    if (st != LAB_OK) {
        fprintf(stderr, "lab report: %s\n", lab_err_msg());
        return LAB_EXIT_FAILED;
    }
    printf("report: %s/index.html (and report.json)\n", out);
    return rc;
}

/* compare: two report folders; 0 nothing regressed, 1 a regression, 2 usage or an unreadable or invalid
 * report (strictly validated: lab_compare.c). */
static int lab_cmd_compare(int argc, char **argv)
{
    const char *dirs[2];
    int nd = 0;
    lab_compare_opts co = {10.0, 0};
    const char *plot_dir = NULL;
    for (int i = 0; i < argc; ++i) {
        if (!strcmp(argv[i], "--factor")) {
            const char *v = i + 1 < argc ? argv[++i] : NULL;
            if (lab_cli_double_above("compare: --factor", v, 1.0, 1e300, &co.factor) != LAB_OK)
                return lab_usage_error("%s", lab_err_msg());
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
    if (plot_dir && lab_compare_plot_out_check(plot_dir) != LAB_OK) return lab_usage_error("compare: %s", lab_err_msg());
    lab_compare_result res;
    /* SIGINT/SIGTERM: exit 130/143 within 1 s, between reading and drawing and between figures (caught even where the
     * shell left them ignored) */
    if (lab_isolate_catch_signals() != LAB_OK) fprintf(stderr, "lab compare: %s\n", lab_err_msg());
    lab_stall_point(LAB_STALL_READING);
    if (lab_isolate_interrupted()) return 128 + lab_isolate_interrupted();
    lab_status st = lab_compare_reports(dirs[0], dirs[1], &co, stdout, &res);
    if (lab_isolate_interrupted()) return 128 + lab_isolate_interrupted();
    if (st != LAB_OK) {
        /* A folder that is not a valid report is bad input given on the command line. */
        fprintf(stderr, "lab compare: %s\n", lab_err_msg());
        return LAB_EXIT_USAGE;
    }
    int npng = 0;
    if (plot_dir && lab_compare_plot_run(dirs[0], dirs[1], plot_dir, co.factor, lab_root(), stdout, &npng) != LAB_OK) {
        if (lab_isolate_interrupted()) return 128 + lab_isolate_interrupted();
        fprintf(stderr, "lab compare: figures: %s\n", lab_err_msg());
        return LAB_EXIT_FAILED;
    }
    if (lab_isolate_interrupted()) return 128 + lab_isolate_interrupted();
    return res.failed ? LAB_EXIT_NOT_OK : LAB_EXIT_OK;
}

int main(int argc, char **argv)
{
    lab_phase_begin();
    const char *lab_bin = argv[0];
    if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        const char *one = NULL;
        for (size_t i = 0; argc > 2 && !strcmp(argv[1], "help") && i < sizeof lab_usage_cmds / sizeof *lab_usage_cmds; ++i)
            if (!strcmp(argv[2], lab_usage_cmds[i].name)) one = argv[2];
        lab_usage_print(argc < 2 ? stderr : stdout, one);
        return argc < 2 ? LAB_EXIT_USAGE : LAB_EXIT_OK;
    }
    /* `lab COMMAND --help`: that command's usage, exit 0, for every command (no repository needed). */
    if (argc >= 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
        for (size_t i = 0; i < sizeof lab_usage_cmds / sizeof *lab_usage_cmds; ++i)
            if (!strcmp(argv[1], lab_usage_cmds[i].name)) {
                lab_usage_print(stdout, argv[1]);
                return LAB_EXIT_OK;
            }
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
    if (!strcmp(cmd, "new")) {
        if (argc != 3) return lab_usage_error("new needs one incident id, e.g. 0008-fp8-amax-overflow");
        lab_status st = lab_new_incident(lab_root(), argv[2]);
        if (st == LAB_ERR_ARG) return lab_usage_error("%s", lab_err_msg());
        if (st != LAB_OK) {
            fprintf(stderr, "lab new: %s\n", lab_err_msg());
            return LAB_EXIT_FAILED;
        }
        printf("made incidents/%s from incidents/_template: write the reproducer, the fix and the story, then\n"
               "  make && build/lab golden bless %.4s && build/lab replay --incident %.4s && make test\n",
               argv[2], argv[2], argv[2]);
        return 0;
    }
    if (!strcmp(cmd, "report")) return lab_cmd_report(argc - 2, argv + 2, lab_bin);
    return lab_usage_error("unknown command '%s'", cmd);
}
