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
#include "lab_explain.h"
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
#include "lab_text.h"
#include "lab_replay.h"
#include "lab_resultset.h"
#include "lab_report.h"
#include "lab_results.h"

/* Per command: its usage; `lab help` leads with the five everyday commands (an example each) and lists the others
 * under "More", `lab COMMAND --help` prints one command's usage and its own exit status. replay and report take the
 * option table's options (lab_cli): their lines come from the table (lab_cli_usage), after the command's text, so that
 * the usage names every option the parser takes and no other. */
#define LAB_USAGE_OPTIONS(cmd) ((cmd) + 1)
static const struct {
    const char *name;
    const char *synopsis; /* after "usage: lab "; further forms on lines of their own ("lab " added) */
    const char *line;     /* one line for `lab help` */
    const char *example;  /* the everyday commands: an example for `lab help`; NULL: listed under "More" */
    const char *about;    /* what it does, wrapped */
    int options;          /* LAB_USAGE_OPTIONS(cmd): the options of lab_cli_cmd cmd follow; 0: none */
    const char *exits;    /* its exit status, wrapped */
} lab_usage_cmds[] = {
    {"replay", "replay [OPTION]...", "run every incident's cases, each in its own process, and give the one verdict",
     "build/lab replay --incident 0004 --variant bug-exp-log --seed 7",
     "Runs the selected cases isolated on all cores and prints a table per incident and variant, then the verdict: a "
     "fix must pass on every seed, a bug variant must be detected (one that passes is an XPASS). Every case that "
     "misses its role is printed with the one command that replays it. SIGINT/SIGTERM stop the run: the finished cases "
     "are written, marked interrupted, and the commands that resume what is left are printed.",
     LAB_USAGE_OPTIONS(LAB_CLI_REPLAY),
     "0 every fix holds and every bug is detected; 1 the verdict is NOT OK (a fix failed, a bug was not detected, or "
     "too few seeds for a stated rate); 2 bad usage (the flag is named); 3 the lab could not do the job (I/O error, "
     "missing dependency or build product, a requested backend that is not usable); 130/143 interrupted by "
     "SIGINT/SIGTERM (the finished cases are kept)."},
    {"explain", "explain ID [--seeds N] [--backend cpu|cuda]",
     "an incident's story in short (its card), then its bug and fix side by side, live", "build/lab explain 0004",
     "Prints the card at the top of the incident's story (incidents/ID/README.md): what you see, the trigger, the root "
     "cause, the fix, how to spot it, the commands, and each variant with its class (history, hypothesis, "
     "construction). Then runs every variant on seeds 1..N (default 4, at most 4096), each case in its own process, "
     "and shows per seed the outcome and the bound of the criterion the case crossed, and what to try next.",
     0,
     "0 every case met its role (the bug detected, the fix held); 1 one did not; 2 bad usage; 3 the lab could not do "
     "the job (the story has no readable card: the file and line are named)."},
    {"case", "case ID VARIANT SEED [--backend cpu|cuda] [--sanitize TOOL]",
     "one case in this process: its finding in words, then as JSON (for a debugger)",
     "build/lab case 0004 bug-exp-log 7",
     "Runs one case without isolation, for gdb or cuda-gdb, and prints first a line for people (\"bug-exp-log seed 7: "
     "FAIL, so the bug is detected, as a bug variant must be\") and the case's detail, then its result as one JSON "
     "line after \"LAB-CASE \". --sanitize TOOL: the compute-sanitizer tool (memcheck, initcheck, racecheck) that "
     "watches this process, so the case allocates every buffer at its exact size (what `lab replay --sanitize` runs; "
     "--sanitizer, the old spelling, is still accepted).",
     0,
     "0 the case met its role (a fix passed, a bug variant was detected) or skipped where that is expected (no GPU); "
     "1 it did not; 2 bad usage; 3 the case could not run (an ERROR, or a SKIP for something missing from the build)."},
    {"report", "report [OPTION]...\nreport --from DIR\nreport --replot DIR",
     "replay, then write a self-contained report folder (report.json, index.html)",
     "build/lab report --backend cuda --seeds 1000 --out build/report-gpu",
     "Replays as `lab replay` does, then writes a self-contained report folder (default build/report): report.json, "
     "index.html (plots and the stories' pictures inline), the device and build, the results files. --from DIR: the "
     "report of a replay already in DIR (`lab replay --out DIR`), on the machine and build that ran it. --replot DIR: "
     "render a report's plots here (made where gnuplot was missing).",
     LAB_USAGE_OPTIONS(LAB_CLI_REPORT),
     "0 every fix holds and every bug is detected; 1 the verdict is NOT OK; 2 bad usage, or --from DIR that is not a "
     "finished replay (the file is named); 3 the lab could not do the job or write the report; 130/143 interrupted "
     "(the replay's result set is kept)."},
    {"compare", "compare A B [--factor F] [--strict] [--out DIR]", "what changed between two report folders",
     "build/lab compare baselines/h200 build/report-gpu",
     "Compares two report folders: changed outcomes, metrics moved by more than F times (default 10), new or missing "
     "incidents and variants. Benchmarks (both reports' bench sections, same device): each fix's cost ratio side by "
     "side; a fix that got slower (ratio up by more than max(5%, the two spreads)) is flagged PERF REGRESSION. --out "
     "DIR: also per incident both distributions against the tolerance (DIR/<id>.png, DIR/index.html); DIR may be "
     "missing, empty or an earlier compare folder, anything else (a file, a folder of other things, a replay or report "
     "folder) is refused.",
     0,
     "0 nothing regressed; 1 an outcome regressed or a PERF REGRESSION (--strict: also moves and missing ones); 2 a "
     "report cannot be read or is invalid (the field is named), or --out is refused; 3 the figures cannot be drawn."},
    {"list", "list", "incidents, their variants and roles", NULL, "Lists every incident, its variants, their roles "
     "and the backends each runs on.", 0, "0; 2 when the repository root has no incidents/."},
    {"golden", "golden verify|bless [ID]", "check the goldens against their MANIFEST, or regenerate them", NULL,
     "verify: checks every golden file against its MANIFEST (sha256, dtype, shape). bless: regenerates them from the "
     "float64 reference (opt-in, `make golden`).", 0,
     "0 every golden verified (or regenerated); 1 a golden does not match its MANIFEST; 2 bad usage; 3 a bless "
     "failed."},
    {"plots", "plots [--out DIR]", "redraw the plots of a replay from DIR/results.jsonl", NULL,
     "Redraws the plots of the replay in DIR (default build/replay) from its results.jsonl, into DIR/plots.", 0,
     "0 drawn; 2 bad usage; 3 they cannot be drawn (the reason named); 130/143 interrupted."},
    {"bench", "bench [ID]... [--json] [--study]", "the incidents' GPU benchmarks, against the device's ceilings", NULL,
     "Runs the incidents' benchmarks (GPU kernels against device ceilings; seconds, what `lab report` includes), one "
     "after another, each in its own process. --json: their records (ratios, times, spreads) as JSON on stdout. "
     "--study: the incidents' longer studies instead (0008: every num_warps configuration, 16 runs each, minutes).",
     0, "0 every benchmark ran or skipped (no GPU); 1 a benchmark failed; 2 bad usage; 3 the lab could not run them."},
    {"trend", "trend [--out DIR] REPORT...", "each fix's margin to its tolerance across reports in time order", NULL,
     "Draws each fix's margin to its tolerance across the reports in time order (DIR/trend.png, default build/trend). "
     "DIR may be missing, empty or an earlier trend folder; anything else is refused.", 0,
     "0 drawn; 2 bad usage, a report that cannot be read, or --out refused; 3 the figure cannot be drawn."},
    {"new", "new NNNN-slug", "a new incident directory from incidents/_template", NULL,
     "Makes incidents/NNNN-slug from incidents/_template, for a new incident's reproducer, fix and story.", 0,
     "0 made; 2 bad usage (the name is named); 3 it cannot be made."},
    {"help", "help [COMMAND]", "this text; `lab COMMAND --help`: one command's usage and exit status", NULL,
     "Prints the everyday commands with an example each and lists the others; with COMMAND, that command's usage.", 0,
     "0."},
};
#define LAB_USAGE_N (sizeof lab_usage_cmds / sizeof *lab_usage_cmds)

/* Prints `lab help`: the everyday commands, each with an example, then the others. */
static void lab_usage_overview(FILE *f)
{
    fprintf(f, "usage: lab COMMAND [options]      (`lab COMMAND --help`: its options and exit status)\n\n"
               "Every day:\n");
    for (size_t i = 0; i < LAB_USAGE_N; ++i)
        if (lab_usage_cmds[i].example)
            fprintf(f, "  %-9s %s\n            %s\n", lab_usage_cmds[i].name, lab_usage_cmds[i].line,
                    lab_usage_cmds[i].example);
    fprintf(f, "\nMore:\n");
    for (size_t i = 0; i < LAB_USAGE_N; ++i)
        if (!lab_usage_cmds[i].example) fprintf(f, "  %-9s %s\n", lab_usage_cmds[i].name, lab_usage_cmds[i].line);
    fprintf(f, "\nExit status: 0 ok (every fix holds, every bug detected); 1 the verdict is NOT OK; 2 bad usage;\n"
               "3 the lab could not do the job; each command's --help states its own.\n"
               "The repository root is the current directory, or LAB_ROOT.\n");
}

/* Prints one command's usage: "usage: lab NAME ...", what it does, its options, its exit status. 0, or -1 when no
 * command has that name. */
static int lab_usage_print(FILE *f, const char *name)
{
    for (size_t i = 0; i < LAB_USAGE_N; ++i) {
        if (strcmp(name, lab_usage_cmds[i].name)) continue;
        const char *syn = lab_usage_cmds[i].synopsis;
        fprintf(f, "usage: lab ");
        for (const char *p = syn; *p; ++p) {
            fputc(*p, f);
            if (*p == '\n') fprintf(f, "       lab ");
        }
        fputc('\n', f);
        lab_text_wrap(f, lab_usage_cmds[i].about, LAB_TEXT_WIDTH, "  ", "  ");
        if (lab_usage_cmds[i].options) {
            fprintf(f, "Options:\n");
            lab_cli_usage(f, (lab_cli_cmd)(lab_usage_cmds[i].options - 1), 0);
        }
        lab_text_wrap(f, lab_usage_cmds[i].exits, LAB_TEXT_WIDTH, "Exit status: ", "  ");
        fprintf(f, "The repository root is the current directory, or LAB_ROOT.\n");
        return 0;
    }
    return -1;
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
    lab_replay_entry how = {.scale_out = lab_mpi_replay, .keep_set = keep_set, .report = stdout, .diag = stderr};
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
            printf("%s %s seed %llu %s: %s%s%s%s%s\n", r->incident->id, r->variant->name, (unsigned long long)r->seed,
                   lab_backend_name(r->backend), lab_outcome_name(r->o.outcome), r->o.r.detail[0] ? " " : "",
                   r->o.r.detail, r->o.error[0] ? " " : "", r->o.error);
            for (int m = 0; m < r->o.r.n_metrics; ++m)
                printf("    %-24s %.9g\n", r->o.r.metrics[m].name, r->o.r.metrics[m].value);
        }
    }
    rc = res.verdict.exit_status; /* the one verdict's (lab_verdict.h): 0, 1, 3, or 130/143 when interrupted */
    lab_replay_result_free(&res);
    return rc;
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

/* The line `lab case` prints first, for people: "bug-exp-log seed 7: FAIL, so the bug is detected, as a bug variant
 * must be", then the detail wrapped. Returns what lab_verdict_case_ok says of the case (1 met its role, 0 not, -1 a
 * neutral SKIP) and -2 for an ERROR or a SKIP for something missing. */
static int lab_case_say(FILE *f, const lab_case *c, lab_status st, const lab_case_result *r)
{
    const lab_variant *v = c->variant;
    lab_outcome oc = st != LAB_OK ? LAB_OUT_ERROR : r->skipped ? LAB_OUT_SKIP : !r->verdict_set ? LAB_OUT_ERROR
                     : r->passed ? LAB_OUT_PASS : LAB_OUT_FAIL;
    lab_case_record rec = {c->incident, v, c->seed, c->backend, {.outcome = oc, .r = *r}};
    int ok = oc == LAB_OUT_ERROR ? -2 : lab_verdict_case_ok(&rec);
    if (oc == LAB_OUT_SKIP && !lab_skip_expected((lab_skip_class)r->skip_class)) ok = -2;
    const char *so = ok == -2 && oc == LAB_OUT_ERROR ? "the case could not run"
                     : oc == LAB_OUT_SKIP ? (ok == -2 ? "not run: something the build lacks" : "not run here")
                     : v->role == LAB_ROLE_BUG ? (ok == 1 ? "so the bug is detected, as a bug variant must be"
                                                          : "so the bug is NOT detected (an XPASS): a bug variant "
                                                            "must be detected")
                     : ok == 1 ? "so the fix holds, as a fix must"
                               : "so the fix does NOT hold: a fix must pass on every seed";
    char head[512];
    snprintf(head, sizeof head, "%s seed %llu: %s, %s", v->name, (unsigned long long)c->seed, lab_outcome_name(oc), so);
    lab_text_wrap(f, head, LAB_TEXT_WIDTH, "", "  ");
    const char *why = st != LAB_OK ? lab_err_msg() : r->detail;
    if (*why) lab_text_wrap(f, why, LAB_TEXT_WIDTH, "  ", "  ");
    return ok;
}

/* case: one case in this process (no isolation): a line for people, then its result as a LAB-CASE line: what `replay
 * --sanitize` runs under compute-sanitizer, and a handle for gdb / cuda-gdb. Exit status: 0 the case met its role or
 * skipped where that is expected, 1 it did not, 2 bad usage, 3 it could not run. */
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
        } else if ((!strcmp(argv[i], "--sanitize") || !strcmp(argv[i], "--sanitizer")) && i + 1 < argc) {
            /* the tool this process runs under (set by replay --sanitize); --sanitizer: the old spelling */
            sanitizer = argv[++i];
            if (lab_sanitize_tool_check(sanitizer) != LAB_OK) return lab_usage_error("case: --sanitize: %s", lab_err_msg());
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
    int ok = lab_case_say(stdout, &c, st, &r);
    lab_sanitize_print_result(stdout, st, &r);
    return ok == 1 || ok == -1 ? LAB_EXIT_OK : ok == 0 ? LAB_EXIT_NOT_OK : LAB_EXIT_FAILED;
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
        lab_report_opts ro = {0, command, 1, lab_root()};
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
    lab_report_opts ro = {t0, command, 1, lab_root()};
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
        /* `lab help COMMAND`: that command's usage; `lab help`, `lab --help`: the overview (on stderr, exit 2, when
         * no command was given at all) */
        if (argc > 2 && !strcmp(argv[1], "help") && strcmp(argv[2], "--help") && strcmp(argv[2], "-h")) {
            if (lab_usage_print(stdout, argv[2]) == 0) return LAB_EXIT_OK;
            return lab_usage_error("help: unknown command '%s'", argv[2]);
        }
        lab_usage_overview(argc < 2 ? stderr : stdout);
        return argc < 2 ? LAB_EXIT_USAGE : LAB_EXIT_OK;
    }
    /* `lab COMMAND --help`: that command's usage, exit 0, for every command (no repository needed). */
    if (argc >= 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")) && lab_usage_print(stdout, argv[1]) == 0)
        return LAB_EXIT_OK;
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
    if (!strcmp(cmd, "explain")) return lab_explain_cmd(argc - 2, argv + 2, lab_bin, lab_root());
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
