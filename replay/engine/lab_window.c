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
    return opts->backend == LAB_BACKEND_CUDA ? LAB_REPLAY_WINDOW_CUDA : LAB_REPLAY_WINDOW_CPU;
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
    size_t n_done, lowest;          /* the lowest seed index with an unfinished case (the journal's windows) */
    size_t *from;                   /* per incident, the lowest seed index with an unfinished case (an interrupt's
                                       resume: lab_replay_resume_cmds); 0 for one not started */
    size_t *commit_from;            /* the same for what journal.resume accounts for (lab_replay_win_commit) */
    char stage[PATH_MAX];
    int staged;
    FILE *journal;                  /* the staging folder's journal.jsonl (lab_window.h): survives a kill */
    char journal_path[PATH_MAX + 32]; /* its absolute path, as journal.resume names it */
    size_t windows;                 /* windows the journal took so far */
    int gap;                        /* an incident before the last left a case unfinished (lab_replay_win_journal) */
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
        if (w->opts->out_dir) {
            if (!(w->jl[k] = lab_replay_spool(w, k, "jsonl")) || !(w->ju[k] = lab_replay_spool(w, k, "xml")) ||
                (w->opts->tap && !(w->tp[k] = lab_replay_spool(w, k, "tap"))))
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
    free(w->jl), free(w->tp), free(w->ju), free(w->fail), free(w->nfail), free(w->t), free(w->from), free(w->commit_from);
    if (w->journal) fclose(w->journal);
}

/* The journal's names in the staging folder: the finished windows' cases, and the command that replays the rest. */
#define LAB_WINDOW_JOURNAL "journal.jsonl"
#define LAB_WINDOW_JOURNAL_RESUME "journal.resume"

/* Why journal.resume carries the journal's length: it and journal.jsonl are two files, and no step updates both, so a
 * kill -9 between a window's lines and the resume command that accounts for them would leave the window in the
 * journal and in the command's set. Nor does the journal alone hold whole windows at every instant: a window's lines
 * take several write(2)s, and a kill can end even one write(2) part way (Linux stops a write between pages when a
 * fatal signal is pending). So journal.resume, replaced by one rename after the lines it accounts for are synced, is
 * the one commit point, and it says `truncate -s BYTES JOURNAL && COMMAND`: the journal's first BYTES are the whole
 * windows it accounts for, COMMAND replays every case not among them. Running it first cuts away whatever a kill left
 * beyond them (a window not yet accounted for, whole or in part), then replays the rest; after that the journal and
 * the resumed set are the whole replay, no case missing and none twice, whatever the instant of the kill. What is not
 * guaranteed: before journal.resume first exists (a kill between the journal's creation and its first rename: no
 * case has finished) there is nothing to run, and the recovery must be run from the replay's directory when --out
 * was relative (COMMAND's --out is as given; JOURNAL is absolute). */

/* Tests only: $LAB_WINDOW_TEST_KILL=POINT:K stops the run with SIGKILL, as a kill -9 could, at POINT of the K-th
 * window the journal takes (from 1): "lines" half way through its lines, in the middle of one; "synced" after the
 * lines journal.resume is to account for are synced, before it does. Inert unless set. */
static int lab_window_test_kill(const char *point, size_t window)
{
    const char *e = getenv(LAB_TESTKNOB_WINDOW_KILL);
    size_t n = strlen(point);
    return e && !strncmp(e, point, n) && e[n] == ':' && strtoull(e + n + 1, NULL, 10) == window;
}

/* The "lines" point: the first half of rec's line goes to the journal's file, then SIGKILL. */
static void lab_window_test_cut(FILE *journal, const lab_case_record *rec, const lab_results_cmd *spell)
{
    char *line = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&line, &len);
    if (m) lab_results_jsonl_line(m, rec, spell), fclose(m), fwrite(line, 1, len / 2, journal);
    fflush(journal);
    raise(SIGKILL);
}

/* Replaces journal.resume (tmp, fdatasync, rename; then the folder synced, so that after a crash of the machine it
 * names no more than is on disk): the journal's first `bytes` hold every case of the incidents before `incident` and
 * of its seed indexes below `lowest` (0 unless it is the last); the command replays the rest (lab_replay_resume_cmds,
 * every one of them however long; several, should the incidents left resume differently, in braces; when nothing is
 * left it only says so, so that the recovery is the same at every instant). Errors: LAB_ERR_NOMEM naming the file
 * when the commands cannot be made (the journal.resume before stays), LAB_ERR_IO naming it when it cannot be
 * written. */
static lab_status lab_replay_win_commit(lab_replay_win *w, size_t incident, size_t lowest, off_t bytes)
{
    char path[PATH_MAX + 64], tmp[PATH_MAX + 64], quoted[4 * sizeof w->journal_path + 3], *resume;
    const lab_replay_opts *opts = w->opts;
    for (size_t i = 0; i < opts->n_incidents; ++i) w->commit_from[i] = i < incident ? SIZE_MAX : i == incident ? lowest : 0;
    snprintf(path, sizeof path, "%s/" LAB_WINDOW_JOURNAL_RESUME, w->stage);
    size_t n_cmds;
    if (lab_replay_resume_cmds(opts, w->commit_from, &resume, &n_cmds) != LAB_OK)
        return lab_err_set(LAB_ERR_NOMEM, "%s: cannot write: out of memory for its resume commands", path);
    lab_command_sh_word(w->journal_path, quoted, sizeof quoted);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    char *line = lab_results_join_cmds(resume);
    free(resume);
    if (!line) return lab_err_set(LAB_ERR_NOMEM, "%s: cannot write: out of memory for its resume commands", path);
    FILE *f = fopen(tmp, "w");
    int good = f && fprintf(f, "truncate -s %lld %s && %s%s%s\n", (long long)bytes, quoted, n_cmds > 1 ? "{ " : "",
                            n_cmds ? line : "echo 'nothing to replay: every case finished'", n_cmds > 1 ? "; }" : "") >= 0;
    free(line);
    if (f) good &= fflush(f) == 0 && fdatasync(fileno(f)) == 0, good &= fclose(f) == 0;
    if (!good || rename(tmp, path) != 0) return lab_err_set(LAB_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    int dir = open(w->stage, O_RDONLY | O_DIRECTORY);
    if (dir >= 0) fsync(dir), close(dir);
    return LAB_OK;
}

/* After a window of incident i (of n_incidents; its seed indexes [s0, s1) of ns, recs[0..n) variant by variant): its
 * cases below the lowest unfinished seed index go to the journal (the others the resume command replays), and then,
 * synced, journal.resume accounts for them. In a replay of several incidents only the last is accounted for window
 * by window; an earlier one once it has finished in full: one resume command names one seed range for every incident
 * it lists, so until then it replays that incident from its first seed and the journal's windows of it lie beyond
 * the length journal.resume names. A journal that cannot be written is an error (LAB_ERR_IO naming it): the run's
 * promise to keep what finished would be broken silently otherwise. */
static lab_status lab_replay_win_journal(lab_replay_win *w, size_t i, const lab_case_record *recs, size_t n, size_t s0,
                                         size_t s1, size_t ns)
{
    size_t upto = w->lowest < s1 ? w->lowest : s1, window = ++w->windows;
    int last = i + 1 >= w->opts->n_incidents, good = 1;
    lab_results_cmd spell = lab_replay_cmd(w->opts);
    for (size_t j = 0; good && j < n; ++j) {
        if (j == n / 2 && lab_window_test_kill("lines", window)) lab_window_test_cut(w->journal, &recs[j], &spell);
        if (s0 + j % (s1 - s0) < upto) good = lab_results_jsonl_line(w->journal, &recs[j], &spell);
    }
    good = good && fflush(w->journal) == 0;
    /* an unfinished case of an incident before the last (only an interrupt leaves one, and then no window follows):
     * the journal never holds that incident whole, so nothing after it is accounted for */
    if (!last && upto < s1) w->gap = 1;
    int whole = upto >= ns, commit = !w->gap && (whole || last);
    if (good && commit) good = fdatasync(fileno(w->journal)) == 0;
    if (!good) return lab_err_set(LAB_ERR_IO, "%s: cannot write: %s", w->journal_path, strerror(errno));
    if (!commit) return LAB_OK;
    if (lab_window_test_kill("synced", window)) raise(SIGKILL);
    off_t bytes = ftello(w->journal);
    return whole ? lab_replay_win_commit(w, i + 1, 0, bytes) : lab_replay_win_commit(w, i, upto, bytes);
}

/* Opens the staging folder's journal.jsonl and the first journal.resume (nothing kept: it replays every case). */
static lab_status lab_replay_win_journal_open(lab_replay_win *w)
{
    char path[PATH_MAX + 32], *abs = realpath(w->stage, NULL);
    snprintf(w->journal_path, sizeof w->journal_path, "%s/" LAB_WINDOW_JOURNAL, abs ? abs : w->stage);
    free(abs);
    snprintf(path, sizeof path, "%s/" LAB_WINDOW_JOURNAL, w->stage);
    if (!(w->journal = fopen(path, "w"))) return lab_err_set(LAB_ERR_IO, "%s: %s", path, strerror(errno));
    return lab_replay_win_commit(w, 0, 0, 0);
}

/* The set is written in full: the journal, not part of it, goes just before the swap (until then a kill -9 leaves it
 * to recover from), journal.resume first, so that a kill between the two and the swap leaves the staging folder with
 * the whole set and no command to run. */
static void lab_replay_win_journal_drop(const lab_replay_win *w)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/" LAB_WINDOW_JOURNAL_RESUME, w->stage);
    unlink(path);
    snprintf(path, sizeof path, "%s/" LAB_WINDOW_JOURNAL, w->stage);
    unlink(path);
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
        if (lab_plot_results(w->stage, opts->root, report, &npng) == LAB_OK)
            fprintf(report, "plots: %d PNG in %s/plots\n", npng, opts->out_dir);
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
    if (good && lab_plot_results(dir, opts->root, report, &npng) == LAB_OK && rename(from, to) == 0)
        fprintf(report, "plots: %d PNG in %s/plots, drawn from a sample: every %zu-th case of each variant, %zu of %zu "
                        "cases (the plots are decimated; results.jsonl holds every case)\n",
                npng, opts->out_dir, step, kept, w->n_done);
    else
        fprintf(report, "plots: %s\n", good ? lab_err_msg() : "cannot write the sample of results.jsonl to plot");
    lab_resultset_rmrf(dir);
}

/* Runs recs[0..n) of one window, its progress counted among `total` from `base` on. */
static lab_status lab_replay_execute_window(const lab_replay_opts *opts, lab_case_record *recs, size_t n, size_t base,
                                            size_t total, size_t *bad, double t0, int quiet)
{
    lab_replay_ctx ctx;
    lab_replay_ctx_init(&ctx, opts, recs, n, t0);
    ctx.base = base;
    ctx.total = total;
    ctx.base_bad = *bad;
    ctx.quiet_sched = quiet;
    lab_status st = lab_replay_execute(&ctx);
    *bad += ctx.bad;
    return st;
}

/* Nonzero when no further window may start: an interrupt, or another process ended the run. */
static int lab_window_stopping(const lab_window_runner *runner)
{
    return lab_isolate_interrupted() || (runner && runner->stop && runner->stop(runner->ctx));
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
        if (opts->variant && strcmp(opts->variant, var->name) != 0) continue;
        for (size_t s = s0; s < s1; ++s) {
            recs[*m].incident = inc;
            recs[*m].variant = var;
            recs[*m].seed = opts->seeds[s];
            recs[*m].backend = opts->backend;
            (*m)++;
        }
    }
}

/* After a window ran: incident i's part of it, recs[0..m) (its seed indexes [s0, s1) of ns, variant by variant), goes
 * to the running tallies and spools, what did not finish lowers the resume points, and the journal takes the part. */
static lab_status lab_window_settle(lab_replay_win *w, size_t i, lab_case_record *recs, size_t m, size_t s0, size_t s1,
                                    size_t ns, int drive)
{
    lab_status st = LAB_OK;
    for (size_t j = 0; j < m && st == LAB_OK && !drive; ++j) {
        if (recs[j].o.not_run) {
            size_t s = s0 + j % (s1 - s0);
            if (s < w->lowest) w->lowest = s;
            if (s < w->from[i]) w->from[i] = s;
            continue;
        }
        st = lab_replay_win_keep(w, &recs[j]);
    }
    if (w->journal && st == LAB_OK && !drive) st = lab_replay_win_journal(w, i, recs, m, s0, s1, ns);
    return st;
}

/* What running a window needs of the run around it. */
typedef struct {
    lab_replay_win *w;
    const lab_window_runner *runner;
    lab_case_record **recs;
    size_t *recs_cap, *started, planned, *bad;
    double t0;
    int drive;
} lab_window_batch;

/* Runs the window's m records (*b->recs), by the runner or by this process. */
static lab_status lab_window_exec(const lab_window_batch *b, size_t m)
{
    const lab_replay_opts *opts = b->w->opts;
    lab_phase("window starts");
    lab_status st = b->runner ? b->runner->run(b->runner->ctx, *b->recs, m)
                              : lab_replay_execute_window(opts, *b->recs, m, *b->started, b->planned, b->bad, b->t0,
                                                          *b->started > 0);
    *b->started += m;
    return st;
}

/* Incidents [i0, i1), n cases in all, each whole, as one window: every seed of each, incident after incident, settled
 * incident by incident as if each had been a window of its own. */
static lab_status lab_window_whole(const lab_window_batch *b, size_t i0, size_t i1, size_t n, lab_status *run_st)
{
    lab_replay_win *w = b->w;
    const lab_replay_opts *opts = w->opts;
    for (size_t k = i0; k < i1; ++k)
        if (lab_replay_n_variants(opts, opts->incidents[k])) w->from[k] = lab_replay_n_seeds(opts, opts->incidents[k]);
    if (n == 0) return LAB_OK;
    if (lab_window_stopping(b->runner)) { /* this window and every later one did not start */
        w->lowest = 0;
        for (size_t k = i0; k < i1; ++k) w->from[k] = 0;
        return LAB_OK;
    }
    lab_status st = lab_window_room(b->recs, b->recs_cap, n);
    if (st != LAB_OK) return st;
    size_t m = 0;
    for (size_t k = i0; k < i1; ++k)
        lab_window_fill(opts, opts->incidents[k], 0, lab_replay_n_seeds(opts, opts->incidents[k]), *b->recs, &m);
    *run_st = lab_window_exec(b, m);
    for (size_t k = i0, at = 0; k < i1 && st == LAB_OK; ++k) {
        size_t nk = lab_replay_n_variants(opts, opts->incidents[k]) * lab_replay_n_seeds(opts, opts->incidents[k]);
        size_t ns = lab_replay_n_seeds(opts, opts->incidents[k]);
        if (nk) st = lab_window_settle(w, k, *b->recs + at, nk, 0, ns, ns, b->drive);
        at += nk;
    }
    return st;
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
        quiet_opts.out_dir = NULL;
        quiet_opts.progress = 0;
        opts = &quiet_opts;
    }
    lab_replay_win w;
    memset(&w, 0, sizeof w);
    w.opts = opts;
    w.lowest = opts->n_seeds;
    lab_status st = LAB_OK;
    if (opts->out_dir && (st = lab_fs_mkdirs(opts->out_dir)) != LAB_OK) return st;
    /* The set is written into its staging folder as the cases finish, then swapped in as a whole (lab_resultset_swap). */
    if (opts->out_dir && (st = lab_resultset_stage(opts->out_dir, w.stage, sizeof w.stage)) != LAB_OK) return st;
    w.staged = opts->out_dir != NULL;
    w.from = calloc(opts->n_incidents ? opts->n_incidents : 1, sizeof *w.from); /* 0: not started */
    w.commit_from = calloc(opts->n_incidents ? opts->n_incidents : 1, sizeof *w.commit_from);
    if (!w.from || !w.commit_from) st = lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
    if (st == LAB_OK && w.staged) st = lab_replay_win_journal_open(&w);
    if (st != LAB_OK) {
        if (w.staged) lab_resultset_rmrf(w.stage);
        lab_replay_win_free(&w);
        return st;
    }
    size_t window = lab_replay_window(opts), bad = 0, started = 0;
    double t0 = lab_clock_now();
    lab_phase("replay clock starts");
    lab_stall_point(LAB_STALL_PLANNING);
    lab_status run_st = LAB_OK;
    lab_case_record *recs = NULL;
    size_t recs_cap = 0;
    if (opts->progress && !runner)
        fprintf(stderr, "replay: %zu cases, run %zu at a time (a window: only its cases are held in memory)\n", planned,
                window);
    lab_window_batch b = {&w, runner, &recs, &recs_cap, &started, planned, &bad, t0, drive};
    for (size_t i = 0; i < opts->n_incidents && run_st == LAB_OK && st == LAB_OK;) {
        /* A window holds the incidents from i on that fit in it whole, run together (one pool: its workers make their
         * contexts once for all of them), or else a range of seeds of incident i alone. */
        size_t end = i, n = 0;
        for (; end < opts->n_incidents; ++end) {
            const lab_incident *c = opts->incidents[end];
            size_t k = lab_replay_n_variants(opts, c) * lab_replay_n_seeds(opts, c);
            if (n + k > window) break;
            n += k;
        }
        if (end > i) {
            st = lab_window_whole(&b, i, end, n, &run_st);
            i = end;
            continue;
        }
        const lab_incident *inc = opts->incidents[i];
        size_t nv = lab_replay_n_variants(opts, inc), ns = lab_replay_n_seeds(opts, inc);
        w.from[i] = ns; /* lowered below by what does not finish */
        size_t per = window / nv ? window / nv : 1; /* seeds a window: every selected variant of each */
        for (size_t s0 = 0; s0 < ns && run_st == LAB_OK && st == LAB_OK; s0 += per) {
            if (lab_window_stopping(runner)) {
                if (s0 < w.lowest) w.lowest = s0; /* this window and every later one did not start */
                if (s0 < w.from[i]) w.from[i] = s0;
                break;
            }
            size_t s1 = s0 + per < ns ? s0 + per : ns, m = 0;
            if ((st = lab_window_room(&recs, &recs_cap, (s1 - s0) * nv)) != LAB_OK) break;
            lab_window_fill(opts, inc, s0, s1, recs, &m);
            run_st = lab_window_exec(&b, m);
            st = lab_window_settle(&w, i, recs, m, s0, s1, ns, drive);
        }
        ++i;
    }
    free(recs);
    int ranks_failed = runner && runner->finish ? runner->finish(runner->ctx) : 0;
    if (drive) {
        lab_replay_win_free(&w);
        return run_st;
    }
    if (run_st != LAB_OK) fprintf(report, "replay: %s (the cases not started are not in the set)\n", lab_err_msg());
    double wall = lab_clock_now() - t0;
    lab_phase("cases done");

    /* The report, as lab_replay_report's, from the tallies and spools. */
    if (st == LAB_OK) {
        lab_stall_point(LAB_STALL_COLLECTING);
        int sig = lab_isolate_interrupted();
        lab_verdict_tally_judge(w.t, w.nt);
        lab_verdict_run run = {.harness_failed = run_st != LAB_OK, .ranks_failed = ranks_failed, .interrupted = sig,
                               .cases_planned = planned};
        lab_verdict v = lab_verdict_decide_tallies(w.t, w.nt, &run);
        lab_replay_table(report, w.t, w.nt);
        size_t shown = 0, not_ok = 0;
        for (size_t k = 0; k < w.nt; ++k) {
            not_ok += w.t[k].cases_not_ok;
            for (size_t j = 0; j < w.nfail[k] && shown < LAB_REPLAY_SHOWN; ++j, ++shown)
                lab_replay_print_failure(report, opts, &w.fail[k][j]);
        }
        if (not_ok > LAB_REPLAY_SHOWN) fprintf(report, "... and %zu more (see results.jsonl)\n", not_ok - LAB_REPLAY_SHOWN);
        lab_replay_print_rates(report, opts, w.t, w.nt);
        size_t n = w.n_done;
        lab_replay_print_end(report, opts, n, wall, v.line);
        char *resume = NULL; /* an interrupt's resume commands (NULL: none) */
        size_t n_cmds = 0;
        if (sig) st = lab_replay_resume_cmds(opts, w.from, &resume, &n_cmds);
        if (sig && st == LAB_OK) lab_replay_resume_print(report, opts, sig, n, planned, resume, n_cmds);
        if (opts->out_dir) {
            lab_stall_point(LAB_STALL_WRITING);
            char path[PATH_MAX + 32];
            for (int pass = 0; pass < 2 && st == LAB_OK; ++pass) {
                if (pass == 0) st = lab_replay_win_file(&w, "results.jsonl", w.jl, 0, NULL, NULL, &v);
                snprintf(path, sizeof path, "%s/summary.json", w.stage);
                lab_results_summary_extra extra = lab_replay_summary_extra(opts, sig, planned, resume);
                if (st == LAB_OK)
                    st = lab_results_write_summary(path, w.t, w.nt, lab_backend_name(opts->backend), n, wall, &v, &extra);
                if (st == LAB_OK) st = lab_replay_win_file(&w, "junit.xml", w.ju, 0, lab_replay_junit_head, lab_replay_junit_tail, &v);
                if (st == LAB_OK && opts->tap)
                    st = lab_replay_win_file(&w, "results.tap", w.tp, 1, lab_replay_tap_head, lab_replay_tap_tail, &v);
                if (st == LAB_OK && opts->plots && pass == 0 && !lab_isolate_interrupted()) lab_replay_win_plots(&w, report);
                if (sig || !lab_isolate_interrupted()) break;
                sig = lab_isolate_interrupted();
                run.interrupted = sig;
                v = lab_verdict_decide_tallies(w.t, w.nt, &run);
                free(resume), resume = NULL; /* every case finished: nothing to resume */
                fprintf(report, "INTERRUPTED by %s while writing the result set: all %zu cases finished and are kept "
                                "(NOT OK)%s\n", sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal", n,
                        opts->plots ? "; the plots as far as they got" : "");
            }
            if (st == LAB_OK) lab_replay_win_journal_drop(&w);
            if (st == LAB_OK) st = lab_resultset_swap(w.stage, opts->out_dir);
            if (st == LAB_OK) {
                w.staged = 0;
                fprintf(report, "wrote %s/{results.jsonl,summary.json,junit.xml%s}\n", opts->out_dir, opts->tap ? ",results.tap" : "");
            }
        }
        free(resume);
        *verdict = v;
    }
    if (w.staged) {
        char keep[512];
        snprintf(keep, sizeof keep, "%s", lab_err_msg());
        lab_resultset_rmrf(w.stage);
        if (st != LAB_OK) lab_err_set(st, "%s", keep);
    }
    lab_replay_win_free(&w);
    return st != LAB_OK ? st : run_st;
}
