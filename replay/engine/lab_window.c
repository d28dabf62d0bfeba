/* lab_window: windowed replays (lab_window.h). */
#define _GNU_SOURCE
#include "lab_window.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lab_command.h"
#include "lab_clock.h"
#include "lab_fs.h"
#include "lab_journal.h"
#include "lab_phase.h"
#include "lab_plot.h"
#include "lab_replay_int.h"
#include "lab_resultset.h"
#include "lab_stall.h"
#include "lab_testknobs.h"

/* ---- Windowed replays: a replay of more cases than LAB_REPLAY_WINDOW_AT (or $LAB_REPLAY_WINDOW) runs its cases a
 * window at a time (lab_window.h), holding records and outcomes only for the window's cases. ---- */

/* $LAB_REPLAY_WINDOW as a positive count of cases, else 0. */
static size_t lab_replay_window_env(void)
{
    const char *e = getenv(LAB_TESTKNOB_REPLAY_WINDOW);
    if (!e || !*e) return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(e, &end, 10);
    return errno == 0 && *end == 0 && v > 0 ? (size_t)v : 0;
}

size_t lab_replay_window_at(void)
{
    size_t w = lab_replay_window_env();
    return w ? w : LAB_REPLAY_WINDOW_AT;
}

size_t lab_replay_window(const lab_replay_opts *opts)
{
    size_t w = lab_replay_window_env();
    if (w) return w;
    return opts->what.backend == LAB_BACKEND_CUDA ? LAB_REPLAY_WINDOW_CUDA : LAB_REPLAY_WINDOW_CPU;
}

/* What a windowed replay keeps of its finished cases: the running tallies, the failing cases the console shows
 * (at most LAB_REPLAY_SHOWN a variant, its first in canonical order) and per variant (tally) spool files that hold
 * its results.jsonl lines, TAP points and JUnit testcases in canonical order (unlinked at once: they live while
 * open). */
#define LAB_REPLAY_SHOWN 20
typedef struct {
    const lab_replay_opts *opts;
    lab_verdict_tally *t;
    size_t nt, cap, nf;
    FILE **jl, **tp, **ju;
    lab_case_record **fail;
    size_t *nfail;
    size_t n_done;
    size_t *from;                   /* per incident, the lowest seed index with an unfinished case (an interrupt's
                                       resume: lab_replay_resume_cmds); 0 for one not started */
    char stage[PATH_MAX];           /* the set's staging folder: the journal's (opts->how.journal), or its own */
    int staged;                     /* its own: removed when the set is not swapped in */
} lab_replay_win;

static FILE *lab_replay_spool(const lab_replay_win *w, size_t k, const char *what)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/.spool-%zu.%s", w->stage, k, what);
    FILE *f = fopen(path, "w+");
    if (f) unlink(path);
    else lab_err_set(LAB_ERR_IO, "%s: %s", path, strerror(errno));
    return f;
}

/* Keeps one finished case: its tally, its lines in the spools, and (failing) the console's list. */
static lab_status lab_replay_win_keep(lab_replay_win *w, const lab_case_record *rec)
{
    size_t k;
    lab_status st = lab_verdict_tally_add(&w->t, &w->nt, &w->cap, rec, &k);
    if (st != LAB_OK) return st;
    if (k >= w->nf) {
        size_t nf = w->nt;
        FILE **jl = realloc(w->jl, nf * sizeof *jl);
        if (jl) w->jl = jl;
        FILE **tp = realloc(w->tp, nf * sizeof *tp);
        if (tp) w->tp = tp;
        FILE **ju = realloc(w->ju, nf * sizeof *ju);
        if (ju) w->ju = ju;
        lab_case_record **fail = realloc(w->fail, nf * sizeof *fail);
        if (fail) w->fail = fail;
        size_t *nfail = realloc(w->nfail, nf * sizeof *nfail);
        if (nfail) w->nfail = nfail;
        if (!jl || !tp || !ju || !fail || !nfail) return lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
        for (; w->nf < nf; ++w->nf) {
            w->jl[w->nf] = w->tp[w->nf] = w->ju[w->nf] = NULL;
            w->fail[w->nf] = NULL;
            w->nfail[w->nf] = 0;
        }
        if (w->opts->how.out_dir) {
            if (!(w->jl[k] = lab_replay_spool(w, k, "jsonl")) || !(w->ju[k] = lab_replay_spool(w, k, "xml")) ||
                (w->opts->how.tap && !(w->tp[k] = lab_replay_spool(w, k, "tap"))))
                return LAB_ERR_IO;
        }
    }
    if (w->jl[k]) {
        lab_results_cmd spell = lab_replay_cmd(w->opts);
        int good = lab_results_jsonl_line(w->jl[k], rec, &spell) && lab_results_junit_case(w->ju[k], rec, &spell);
        /* a TAP point's number is its place among the finished cases, known when the file is written: marked here */
        if (good && w->tp[k]) good = fputc('\001', w->tp[k]) != EOF && lab_results_tap_case(w->tp[k], rec, 0, &spell);
        if (!good) return lab_err_set(LAB_ERR_IO, "%s: cannot write a spool file: %s", w->stage, strerror(errno));
    }
    if (lab_verdict_case_ok(rec) == 0 && w->nfail[k] < LAB_REPLAY_SHOWN) {
        if (!w->fail[k] && !(w->fail[k] = malloc(LAB_REPLAY_SHOWN * sizeof *w->fail[k])))
            return lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
        w->fail[k][w->nfail[k]++] = *rec;
    }
    w->n_done++;
    return LAB_OK;
}

static void lab_replay_win_free(lab_replay_win *w)
{
    for (size_t k = 0; k < w->nf; ++k) {
        if (w->jl[k]) fclose(w->jl[k]);
        if (w->tp[k]) fclose(w->tp[k]);
        if (w->ju[k]) fclose(w->ju[k]);
        free(w->fail[k]);
    }
    free(w->jl), free(w->tp), free(w->ju), free(w->fail), free(w->nfail), free(w->t), free(w->from);
}

/* Appends spool f (from its start) to out; with tap set, numbers its marked TAP points from *number on. */
static int lab_replay_unspool(FILE *f, FILE *out, size_t *number)
{
    if (fflush(f) != 0 || fseek(f, 0, SEEK_SET) != 0) return 0;
    int good = 1;
    if (!number) {
        char buf[1 << 16];
        size_t r;
        while (good && (r = fread(buf, 1, sizeof buf, f)) > 0) good = fwrite(buf, 1, r, out) == r;
        good = good && !ferror(f);
    } else {
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        while (good && (len = getline(&line, &cap, f)) > 0) {
            if (line[0] == '\001') {
                /* "\001ok 0 - ..." or "\001not ok 0 - ...": the same point with its number */
                const char *rest = strstr(line, " 0 - ");
                int ok = !strncmp(line + 1, "ok", 2);
                good = rest && fprintf(out, "%s %zu%s", ok ? "ok" : "not ok", ++*number, rest + 2) >= 0;
            } else {
                good = fwrite(line, 1, (size_t)len, out) == (size_t)len;
            }
        }
        free(line);
    }
    fseek(f, 0, SEEK_END);
    return good;
}

/* Writes one file of the staged set: a head, every tally's spool, a tail. */
typedef int (*lab_replay_part_fn)(FILE *f, const lab_replay_win *w, const lab_verdict *v);
static lab_status lab_replay_win_file(const lab_replay_win *w, const char *name, FILE **spools, int numbered,
                                      lab_replay_part_fn head, lab_replay_part_fn tail, const lab_verdict *v)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", w->stage, name);
    FILE *f = fopen(path, "w");
    if (!f) return lab_err_set(LAB_ERR_IO, "%s: %s", path, strerror(errno));
    int good = !head || head(f, w, v);
    size_t number = 0;
    for (size_t k = 0; good && k < w->nt; ++k) good = lab_replay_unspool(spools[k], f, numbered ? &number : NULL);
    if (good && tail) good = tail(f, w, v);
    good &= fclose(f) == 0;
    return good ? LAB_OK : lab_err_set(LAB_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
}

static int lab_replay_tap_head(FILE *f, const lab_replay_win *w, const lab_verdict *v)
{
    (void)v;
    return lab_results_tap_head(f, w->n_done, w->nt);
}
static int lab_replay_tap_tail(FILE *f, const lab_replay_win *w, const lab_verdict *v)
{
    return lab_results_tap_tail(f, w->n_done, w->t, w->nt, v);
}
static int lab_replay_junit_head(FILE *f, const lab_replay_win *w, const lab_verdict *v)
{
    size_t bad = 0, neutral = 0;
    for (size_t k = 0; k < w->nt; ++k) bad += w->t[k].cases_not_ok, neutral += w->t[k].cases_neutral;
    return lab_results_junit_head(f, w->n_done, bad, neutral, w->t, w->nt, v);
}
static int lab_replay_junit_tail(FILE *f, const lab_replay_win *w, const lab_verdict *v)
{
    return lab_results_junit_tail(f, w->t, w->nt, v);
}

/* The plots of a windowed replay: from results.jsonl itself up to LAB_REPLAY_PLOT_MAX cases, else from a sample of
 * every step-th case of each variant (said on the report), written to a folder of its own and moved in. */
static void lab_replay_win_plots(const lab_replay_win *w, FILE *report)
{
    const lab_replay_opts *opts = w->opts;
    int npng = 0;
    if (w->n_done <= LAB_REPLAY_PLOT_MAX) {
        if (lab_plot_results(w->stage, opts->how.root, report, &npng) == LAB_OK)
            fprintf(report, "plots: %d PNG in %s/plots\n", npng, opts->how.out_dir);
        else
            fprintf(report, "plots: %s\n", lab_err_msg());
        return;
    }
    size_t step = (w->n_done + LAB_REPLAY_PLOT_MAX - 1) / LAB_REPLAY_PLOT_MAX, kept = 0;
    char dir[PATH_MAX + 32], path[PATH_MAX + 64], from[PATH_MAX + 64], to[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/.plot-sample", w->stage);
    snprintf(path, sizeof path, "%s/results.jsonl", dir);
    FILE *f = mkdir(dir, 0777) == 0 ? fopen(path, "w") : NULL;
    int good = f != NULL;
    char *line = NULL;
    size_t cap = 0;
    for (size_t k = 0; good && k < w->nt; ++k) {
        FILE *s = w->jl[k];
        if (fflush(s) != 0 || fseek(s, 0, SEEK_SET) != 0) good = 0;
        ssize_t len;
        for (size_t i = 0; good && (len = getline(&line, &cap, s)) > 0; ++i)
            if (i % step == 0) good = fwrite(line, 1, (size_t)len, f) == (size_t)len, kept++;
        fseek(s, 0, SEEK_END);
    }
    free(line);
    if (f) good &= fclose(f) == 0;
    snprintf(from, sizeof from, "%s/plots", dir);
    snprintf(to, sizeof to, "%s/plots", w->stage);
    if (good && lab_plot_results(dir, opts->how.root, report, &npng) == LAB_OK && rename(from, to) == 0)
        fprintf(report, "plots: %d PNG in %s/plots, drawn from a sample: every %zu-th case of each variant, %zu of %zu "
                        "cases (the plots are decimated; results.jsonl holds every case)\n",
                npng, opts->how.out_dir, step, kept, w->n_done);
    else
        fprintf(report, "plots: %s\n", good ? lab_err_msg() : "cannot write the sample of results.jsonl to plot");
    lab_resultset_rmrf(dir);
}

/* What running the windows needs of the run around them. */
typedef struct {
    lab_replay_win *w;
    const lab_window_runner *runner;
    lab_case_record *recs;          /* the window's records (recs_cap allocated) */
    size_t recs_cap, started, planned, bad;
    double t0;
    int drive;
    lab_status run_st; /* the first window whose run failed (the harness, or the runner): no window after */
} lab_window_batch;

/* Nonzero when no further window may start: an interrupt, or another process ended the run. */
static int lab_window_stopping(const lab_window_runner *runner)
{
    return lab_isolate_interrupted() || (runner && runner->stop && runner->stop(runner->ctx));
}

/* A window's cases run by this process (lab_replay_run_rest's run), its progress counted among the run's. */
static lab_status lab_window_run_here(void *vb, lab_case_record *recs, size_t n)
{
    lab_window_batch *b = vb;
    lab_replay_ctx ctx;
    lab_replay_ctx_init(&ctx, b->w->opts, recs, n, b->t0);
    ctx.base = b->started;
    ctx.total = b->planned;
    ctx.base_bad = b->bad;
    ctx.quiet_sched = b->started > 0;
    lab_status st = lab_replay_execute(&ctx);
    b->bad += ctx.bad;
    return st;
}

/* A window's cases run by the runner (every process of it gets the same). */
static lab_status lab_window_run_by_runner(void *vb, lab_case_record *recs, size_t n)
{
    lab_window_batch *b = vb;
    return b->runner->run(b->runner->ctx, recs, n);
}

/* Nonzero when no window may start from here on: an interrupt, another process ended the run, or a window failed. */
static int lab_window_over(const lab_window_batch *b)
{
    return b->run_st != LAB_OK || lab_window_stopping(b->runner);
}

/* Runs the window's m records (b->recs): those that did not finish before (opts->how.carry), by the runner or by this
 * process; once the run is over (lab_window_over), none of them starts, and only the ones that finished before are
 * kept (a --resume walks every window so that its set holds every case it was given). */
static void lab_window_exec(lab_window_batch *b, size_t m)
{
    int over = lab_window_over(b);
    if (!over) lab_phase("window starts");
    lab_status st = lab_replay_run_rest(b->w->opts, b->recs, m,
                                        over        ? lab_replay_not_started
                                        : b->runner ? lab_window_run_by_runner
                                                    : lab_window_run_here,
                                        b, NULL);
    if (!over) b->started += m;
    if (b->run_st == LAB_OK) b->run_st = st;
}

/* *recs holds at least n records, zeroed (incidents differ in their variants: the largest window so far). */
static lab_status lab_window_room(lab_case_record **recs, size_t *cap, size_t n)
{
    if (n > *cap) {
        free(*recs);
        *cap = n;
        if (!(*recs = malloc(n * sizeof **recs))) return lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
    }
    memset(*recs, 0, n * sizeof **recs);
    return LAB_OK;
}

/* Appends incident inc's cases of seed indexes [s0, s1) at recs[*m], variant by variant (canonical order). */
static void lab_window_fill(const lab_replay_opts *opts, const lab_incident *inc, size_t s0, size_t s1,
                            lab_case_record *recs, size_t *m)
{
    for (int v = 0; v < inc->n_variants; ++v) {
        const lab_variant *var = &inc->variants[v];
        if (opts->what.variant && strcmp(opts->what.variant, var->name) != 0) continue;
        for (size_t s = s0; s < s1; ++s) {
            recs[*m].incident = inc;
            recs[*m].variant = var;
            recs[*m].seed = opts->what.seeds[s];
            recs[*m].backend = opts->what.backend;
            (*m)++;
        }
    }
}

/* After a window ran: incident i's part of it, recs[0..m) (its seed indexes [s0, s1), variant by variant), goes to the
 * running tallies and spools, and what did not finish lowers the incident's resume point. */
static lab_status lab_window_settle(lab_replay_win *w, size_t i, const lab_case_record *recs, size_t m, size_t s0,
                                    size_t s1)
{
    lab_status st = LAB_OK;
    for (size_t j = 0; j < m && st == LAB_OK; ++j) {
        if (recs[j].o.not_run) {
            size_t s = s0 + j % (s1 - s0);
            if (s < w->from[i]) w->from[i] = s;
            continue;
        }
        st = lab_replay_win_keep(w, &recs[j]);
    }
    return st;
}

/* Incidents [i0, i1), n cases in all, each whole, as one window: every seed of each, incident after incident, settled
 * incident by incident as if each had been a window of its own. */
static lab_status lab_window_whole(lab_window_batch *b, size_t i0, size_t i1, size_t n)
{
    lab_replay_win *w = b->w;
    const lab_replay_opts *opts = w->opts;
    for (size_t k = i0; k < i1; ++k)
        if (lab_replay_n_variants(opts, opts->what.incidents[k]))
            w->from[k] = lab_replay_n_seeds(opts, opts->what.incidents[k]);
    if (n == 0) return LAB_OK;
    if (lab_window_over(b) && !opts->how.carry) { /* this window and every later one did not start */
        for (size_t k = i0; k < i1; ++k) w->from[k] = 0;
        return LAB_OK;
    }
    lab_status st = lab_window_room(&b->recs, &b->recs_cap, n);
    if (st != LAB_OK) return st;
    size_t m = 0;
    for (size_t k = i0; k < i1; ++k)
        lab_window_fill(opts, opts->what.incidents[k], 0, lab_replay_n_seeds(opts, opts->what.incidents[k]), b->recs,
                        &m);
    lab_window_exec(b, m);
    for (size_t k = i0, at = 0; k < i1 && st == LAB_OK && !b->drive; ++k) {
        size_t ns = lab_replay_n_seeds(opts, opts->what.incidents[k]);
        size_t nk = lab_replay_n_variants(opts, opts->what.incidents[k]) * ns;
        if (nk) st = lab_window_settle(w, k, b->recs + at, nk, 0, ns);
        at += nk;
    }
    return st;
}

/* Incident i alone, in windows of `per` seeds a window (every selected variant of each). */
static lab_status lab_window_ranges(lab_window_batch *b, size_t i, size_t window)
{
    lab_replay_win *w = b->w;
    const lab_replay_opts *opts = w->opts;
    const lab_incident *inc = opts->what.incidents[i];
    size_t nv = lab_replay_n_variants(opts, inc), ns = lab_replay_n_seeds(opts, inc);
    size_t per = window / nv ? window / nv : 1;
    w->from[i] = ns; /* lowered by what does not finish */
    lab_status st = LAB_OK;
    for (size_t s0 = 0; s0 < ns && st == LAB_OK; s0 += per) {
        if (lab_window_over(b) && !opts->how.carry) {
            if (s0 < w->from[i]) w->from[i] = s0; /* this window and every later one did not start */
            break;
        }
        size_t s1 = s0 + per < ns ? s0 + per : ns, m = 0;
        if ((st = lab_window_room(&b->recs, &b->recs_cap, (s1 - s0) * nv)) != LAB_OK) break;
        lab_window_fill(opts, inc, s0, s1, b->recs, &m);
        lab_window_exec(b, m);
        if (!b->drive) st = lab_window_settle(w, i, b->recs, m, s0, s1);
    }
    return st;
}

/* Runs every window, in order: the incidents from i on that fit in one whole run together (one pool: its workers make
 * their contexts once for all of them), or else seed ranges of incident i alone. Returns the first failure to keep
 * what finished (memory, a spool); a window's own failure is b->run_st, and no window starts after it (a --resume still
 * walks them, keeping the cases that had finished before). */
static lab_status lab_window_walk(lab_window_batch *b)
{
    const lab_replay_opts *opts = b->w->opts;
    size_t window = lab_replay_window(opts);
    lab_status st = LAB_OK;
    for (size_t i = 0; i < opts->what.n_incidents && (b->run_st == LAB_OK || opts->how.carry) && st == LAB_OK;) {
        size_t end = i, n = 0;
        for (; end < opts->what.n_incidents; ++end) {
            const lab_incident *c = opts->what.incidents[end];
            size_t k = lab_replay_n_variants(opts, c) * lab_replay_n_seeds(opts, c);
            if (n + k > window) break;
            n += k;
        }
        st = end > i ? lab_window_whole(b, i, end, n) : lab_window_ranges(b, i, window);
        i = end > i ? end : i + 1;
    }
    return st;
}

/* Writes the set of a windowed replay in its staging folder from the spools (results.jsonl, summary.json, junit.xml,
 * results.tap, plots) and swaps it in, as lab_replay_report writes its set: twice when an interrupt comes while it is
 * written (the set then rewritten as interrupted, *v its verdict). */
static lab_status lab_window_write(lab_replay_win *w, FILE *report, lab_verdict_run *run, lab_verdict *v, double wall,
                                   char **resume)
{
    const lab_replay_opts *opts = w->opts;
    lab_stall_point(LAB_STALL_WRITING);
    char path[PATH_MAX + 32];
    int sig = run->interrupted;
    lab_status st = LAB_OK;
    for (int pass = 0; pass < 2 && st == LAB_OK; ++pass) {
        if (pass == 0) st = lab_replay_win_file(w, "results.jsonl", w->jl, 0, NULL, NULL, v);
        snprintf(path, sizeof path, "%s/summary.json", w->stage);
        lab_results_summary_extra extra = lab_replay_summary_extra(opts, sig, run->cases_planned, *resume);
        if (st == LAB_OK)
            st = lab_results_write_summary(path, w->t, w->nt, lab_backend_name(opts->what.backend), w->n_done, wall, v,
                                           &extra);
        if (st == LAB_OK)
            st = lab_replay_win_file(w, "junit.xml", w->ju, 0, lab_replay_junit_head, lab_replay_junit_tail, v);
        if (st == LAB_OK && opts->how.tap)
            st = lab_replay_win_file(w, "results.tap", w->tp, 1, lab_replay_tap_head, lab_replay_tap_tail, v);
        if (st == LAB_OK && opts->how.plots && pass == 0 && !lab_isolate_interrupted()) lab_replay_win_plots(w, report);
        if (sig || !lab_isolate_interrupted()) break;
        sig = run->interrupted = lab_isolate_interrupted();
        *v = lab_verdict_decide_tallies(w->t, w->nt, run);
        free(*resume), *resume = NULL; /* every case finished: nothing to resume */
        fprintf(report,
                "INTERRUPTED by %s while writing the result set: all %zu cases finished and are kept (NOT OK)%s\n",
                sig == SIGINT    ? "SIGINT"
                : sig == SIGTERM ? "SIGTERM"
                                 : "a signal",
                w->n_done, opts->how.plots ? "; the plots as far as they got" : "");
    }
    if (st == LAB_OK) st = lab_resultset_swap(w->stage, opts->how.out_dir);
    if (st != LAB_OK) return st;
    w->staged = 0;
    lab_journal_swapped(opts->how.journal, opts->how.out_dir);
    fprintf(report, "wrote %s/{results.jsonl,summary.json,junit.xml%s}\n", opts->how.out_dir,
            opts->how.tap ? ",results.tap" : "");
    return LAB_OK;
}

/* The report, as lab_replay_report's, from the tallies and spools: the table, the failing cases, the rates, the end
 * line, an interrupt's resume, and the set (lab_window_write). *verdict gets the verdict. */
static lab_status lab_window_report(lab_replay_win *w, FILE *report, lab_verdict_run *run, double wall,
                                    lab_verdict *verdict)
{
    const lab_replay_opts *opts = w->opts;
    lab_stall_point(LAB_STALL_COLLECTING);
    int sig = run->interrupted = lab_isolate_interrupted();
    lab_verdict_tally_judge(w->t, w->nt);
    lab_verdict v = lab_verdict_decide_tallies(w->t, w->nt, run);
    lab_replay_table(report, w->t, w->nt);
    size_t shown = 0, not_ok = 0;
    for (size_t k = 0; k < w->nt; ++k) {
        not_ok += w->t[k].cases_not_ok;
        for (size_t j = 0; j < w->nfail[k] && shown < LAB_REPLAY_SHOWN; ++j, ++shown)
            lab_replay_print_failure(report, opts, &w->fail[k][j]);
    }
    if (not_ok > LAB_REPLAY_SHOWN) fprintf(report, "... and %zu more (see results.jsonl)\n", not_ok - LAB_REPLAY_SHOWN);
    lab_replay_print_rates(report, opts, w->t, w->nt);
    lab_replay_print_end(report, opts, w->n_done, wall, v.line);
    char *resume = NULL; /* an interrupt's resume commands (NULL: none) */
    size_t n_cmds = 0;
    lab_status st = LAB_OK;
    if (sig) st = lab_replay_resume_cmds(opts, w->from, &resume, &n_cmds);
    if (sig && st == LAB_OK) lab_replay_resume_print(report, opts, sig, w->n_done, run->cases_planned, resume, n_cmds);
    if (st == LAB_OK && opts->how.out_dir) st = lab_window_write(w, report, run, &v, wall, &resume);
    free(resume);
    *verdict = v;
    return st;
}

/* The run's state: its staging folder (the journal's, else one of its own) and resume points. */
static lab_status lab_window_open(lab_replay_win *w, const lab_replay_opts *opts)
{
    memset(w, 0, sizeof *w);
    w->opts = opts;
    if (!(w->from = calloc(opts->what.n_incidents ? opts->what.n_incidents : 1, sizeof *w->from))) /* 0: not started */
        return lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
    lab_status st = LAB_OK;
    if (opts->how.out_dir && opts->how.journal)
        snprintf(w->stage, sizeof w->stage, "%s", lab_journal_stage(opts->how.journal));
    else if (opts->how.out_dir && (st = lab_fs_mkdirs(opts->how.out_dir)) == LAB_OK)
        st = lab_resultset_stage(opts->how.out_dir, w->stage, sizeof w->stage);
    w->staged = opts->how.out_dir && !opts->how.journal && st == LAB_OK;
    if (st != LAB_OK) lab_replay_win_free(w);
    return st;
}

/* Ends the run's state: a staging folder of its own that was not swapped in is removed (the error kept). */
static void lab_window_close(lab_replay_win *w, lab_status st)
{
    if (w->staged) {
        char keep[512];
        snprintf(keep, sizeof keep, "%s", lab_err_msg());
        lab_resultset_rmrf(w->stage);
        if (st != LAB_OK) lab_err_set(st, "%s", keep);
    }
    lab_replay_win_free(w);
}

lab_status lab_window_run(const lab_replay_opts *opts, FILE *report, lab_verdict *verdict, size_t planned)
{
    return lab_window_run_by(opts, report, verdict, planned, NULL);
}

lab_status lab_window_run_by(const lab_replay_opts *opts, FILE *report, lab_verdict *verdict, size_t planned,
                             const lab_window_runner *runner)
{
    int drive = runner && runner->drive_only;
    lab_replay_opts quiet_opts;
    if (drive) { /* runs the windows, writes nothing */
        quiet_opts = *opts;
        quiet_opts.how.out_dir = NULL;
        quiet_opts.how.progress = 0;
        opts = &quiet_opts;
    }
    lab_replay_win w;
    lab_status st = lab_window_open(&w, opts);
    if (st != LAB_OK) return st;
    lab_window_batch b = {.w = &w, .runner = runner, .planned = planned, .t0 = lab_clock_now(), .drive = drive};
    lab_phase("replay clock starts");
    lab_stall_point(LAB_STALL_PLANNING);
    if (opts->how.progress && !runner)
        fprintf(stderr, "replay: %zu cases, run %zu at a time (a window: only its cases are held in memory)\n", planned,
                lab_replay_window(opts));
    st = lab_window_walk(&b);
    free(b.recs);
    int ranks_failed = runner && runner->finish ? runner->finish(runner->ctx) : 0;
    if (drive) {
        lab_replay_win_free(&w);
        return b.run_st;
    }
    if (b.run_st != LAB_OK) fprintf(report, "replay: %s (the cases not started are not in the set)\n", lab_err_msg());
    double wall = lab_clock_now() - b.t0;
    lab_phase("cases done");
    lab_verdict_run run = {
        .harness_failed = b.run_st != LAB_OK, .ranks_failed = ranks_failed, .cases_planned = planned};
    if (st == LAB_OK) st = lab_window_report(&w, report, &run, wall, verdict);
    lab_window_close(&w, st);
    return st != LAB_OK ? st : b.run_st;
}
