/* lab_replay_report: a replay's report from its finished records (lab_replay_report, lab_replay.h): the table, the
 * failing cases and their replay commands, the resume command of an interrupted replay, and the result set written
 * to a staging folder and swapped in (lab_resultset.h). The windowed replay (lab_window.c) reuses its table, resume
 * command and summary extras (lab_replay_int.h). */
#define _GNU_SOURCE
#include "lab_replay.h"

#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "lab_args.h"
#include "lab_plot.h"
#include "lab_replay_int.h"
#include "lab_resultset.h"
#include "lab_sched.h"
#include "lab_stall.h"

/* Prints the per-variant table. */
void lab_replay_table(FILE *f, const lab_verdict_tally *t, size_t nt)
{
    fprintf(f, "\n%-28s %-16s %-4s %5s %5s %5s %5s %5s %5s %5s  %s\n", "incident", "variant", "role", "seeds", "PASS",
            "FAIL", "CRASH", "HANG", "SKIP", "ERROR", "verdict");
    for (size_t k = 0; k < nt; ++k) {
        fprintf(f, "%-28s %-16s %-4s %5zu %5zu %5zu %5zu %5zu %5zu %5zu  %s\n", t[k].incident->id, t[k].variant->name,
                lab_role_name(t[k].variant->role), t[k].seeds, t[k].counts[LAB_OUT_PASS], t[k].counts[LAB_OUT_FAIL],
                t[k].counts[LAB_OUT_CRASH], t[k].counts[LAB_OUT_HANG], t[k].counts[LAB_OUT_SKIP],
                t[k].counts[LAB_OUT_ERROR], t[k].verdict);
    }
}

/* The command that resumes an interrupted replay: the same selection from the lowest seed that has an
 * unfinished case on (written into buf). */
static void lab_replay_resume_cmd(const lab_replay_opts *opts, const lab_case_record *recs, size_t n, char *buf,
                                  size_t len)
{
    size_t lowest = opts->n_seeds;
    for (size_t j = 0; j < n; ++j) {
        if (!recs[j].o.not_run) continue;
        for (size_t s = 0; s < lowest; ++s)
            if (opts->seeds[s] == recs[j].seed) {
                lowest = s;
                break;
            }
    }
    lab_replay_resume_at(opts, lowest, buf, len);
}

/* The resume command from the lowest seed index with an unfinished case (>= n_seeds: none). */
void lab_replay_resume_at(const lab_replay_opts *opts, size_t lowest, char *buf, size_t len)
{
    if (lowest >= opts->n_seeds) lowest = 0;
    int k = snprintf(buf, len, "%s replay", opts->lab_bin);
    for (size_t i = 0; i < opts->n_incidents && k > 0 && (size_t)k < len; ++i)
        k += snprintf(buf + k, len - (size_t)k, " --incident %s", opts->incidents[i]->id);
    if (k > 0 && (size_t)k < len && opts->variant) k += snprintf(buf + k, len - (size_t)k, " --variant %s", opts->variant);
    if (k > 0 && (size_t)k < len) {
        if (opts->n_seeds == 1) k += snprintf(buf + k, len - (size_t)k, " --seed %llu", (unsigned long long)opts->seeds[0]);
        else if (!opts->seeds_default || lowest > 0)
            k += snprintf(buf + k, len - (size_t)k, " --first-seed %llu --seeds %zu", (unsigned long long)opts->seeds[lowest],
                          opts->n_seeds - lowest);
    }
    if (k > 0 && (size_t)k < len)
        snprintf(buf + k, len - (size_t)k, " --backend %s --out %s-resumed", lab_backend_name(opts->backend),
                 opts->out_dir ? opts->out_dir : "build/replay");
}

/* What summary.json says beyond the tallies, handed to its writer (lab_results_write_summary) so the file is
 * written once: for an interrupted replay (sig != 0) the signal, the cases planned and the resume command; then
 * the caller's fields (opts->summary_fields, when set). */
lab_results_summary_extra lab_replay_summary_extra(const lab_replay_opts *opts, int sig, size_t planned,
                                                   const char *resume)
{
    return (lab_results_summary_extra){sig, planned, resume, opts->summary_fields, opts->summary_ctx};
}

lab_status lab_replay_report(const lab_replay_opts *opts, FILE *report, lab_case_record *recs_all, size_t n_all,
                             double wall, const lab_verdict_run *run_in, lab_verdict *verdict)
{
    memset(verdict, 0, sizeof *verdict);
    verdict->exit_status = LAB_EXIT_FAILED;
    /* An interrupted run reports (and writes) the cases that finished, and only them. */
    lab_stall_point(LAB_STALL_COLLECTING);
    int sig = lab_isolate_interrupted();
    size_t n = 0;
    for (size_t j = 0; j < n_all; ++j) n += !recs_all[j].o.not_run;
    lab_case_record *recs = recs_all;
    if (n != n_all) {
        recs = malloc((n ? n : 1) * sizeof *recs);
        if (!recs) return lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
        for (size_t j = 0, k = 0; j < n_all; ++j)
            if (!recs_all[j].o.not_run) recs[k++] = recs_all[j];
    }

    lab_verdict_tally *t;
    size_t nt;
    lab_status st2 = lab_verdict_tally_records(recs, n, &t, &nt);
    if (st2 != LAB_OK) {
        if (recs != recs_all) free(recs);
        return st2;
    }
    /* The one verdict: the console, summary.json, JUnit, TAP and the exit status all take it from here. */
    lab_verdict_run run = run_in ? *run_in : (lab_verdict_run){0};
    run.interrupted = sig;
    run.cases_planned = n_all;
    lab_verdict v = lab_verdict_decide(t, nt, recs, n, &run);
    lab_replay_table(report, t, nt);

    /* Every case that failed its role, with the command that replays exactly that case. A fix that failed
     * REGRESSED; a bug that passed is an XPASS; a bug whose case could not be judged is printed with its
     * outcome (ERROR), never as XPASS. */
    size_t shown = 0;
    for (size_t j = 0; j < n; ++j) {
        if (lab_verdict_case_ok(&recs[j]) != 0) continue;
        if (shown++ >= 20) continue;
        char cmd[512];
        lab_results_replay_cmd(&recs[j], opts->lab_bin, cmd, sizeof cmd);
        const char *label = recs[j].variant->role == LAB_ROLE_FIX     ? "REGRESSED"
                            : recs[j].o.outcome == LAB_OUT_PASS       ? "XPASS"
                                                                      : lab_outcome_name(recs[j].o.outcome);
        fprintf(report, "%s %s/%s seed %llu: %s%s%s%s%s\n  replay: %s%s%s\n", label, recs[j].incident->id,
                recs[j].variant->name, (unsigned long long)recs[j].seed, lab_outcome_name(recs[j].o.outcome),
                recs[j].o.r.detail[0] || recs[j].o.error[0] ? ": " : "", recs[j].o.r.detail,
                recs[j].o.r.detail[0] && recs[j].o.error[0] ? "; " : "", recs[j].o.error, cmd,
                opts->sanitize ? " --sanitize " : "", opts->sanitize ? opts->sanitize : "");
    }
    if (shown > 20) fprintf(report, "... and %zu more (see results.jsonl)\n", shown - 20);
    /* Variants judged on their tally alone (a stated rate): what the table's verdict column says, in full. */
    for (size_t k = 0; k < nt; ++k)
        if (t[k].kind == LAB_VERDICT_RATE_BELOW || t[k].kind == LAB_VERDICT_TOO_FEW_SEEDS)
            fprintf(report, "%s/%s: %s\n  replay: %s replay --incident %s --variant %s --seeds %zu\n", t[k].incident->id,
                    t[k].variant->name, t[k].verdict, opts->lab_bin, t[k].incident->id, t[k].variant->name,
                    t[k].seeds_needed > t[k].seeds ? t[k].seeds_needed : t[k].seeds);
    lab_sched_machine host;
    lab_sched_probe(&host);
    fprintf(report, "\n%zu cases in %.2f s (%.1f cases/s, %d jobs): %s\n", n, wall, wall > 0 ? n / wall : 0.0,
            lab_sched_workers(&host, opts->backend, opts->jobs, NULL, 0), v.line);
    char resume[2048] = "";
    if (sig) {
        lab_replay_resume_cmd(opts, recs_all, n_all, resume, sizeof resume);
        fprintf(report, "INTERRUPTED by %s: %zu of %zu cases finished and are kept (NOT OK)\nresume: %s\n",
                sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal", n, n_all, resume);
    }

    if (opts->out_dir) {
        /* The whole set goes to a fresh folder beside out_dir, then replaces it in one swap. */
        char stage[PATH_MAX], path[PATH_MAX + 32];
        st2 = lab_resultset_stage(opts->out_dir, stage, sizeof stage);
        int staged = st2 == LAB_OK;
        lab_stall_point(LAB_STALL_WRITING);
        /* Written twice only when an interrupt comes after the verdict (while writing or plotting): every case had
         * finished and is kept, and the set is rewritten with the verdict of an interrupted run (NOT OK, 130/143),
         * the plots left as far as they got. */
        for (int pass = 0; pass < 2 && st2 == LAB_OK; ++pass) {
            snprintf(path, sizeof path, "%s/results.jsonl", stage);
            if (st2 == LAB_OK) st2 = lab_results_write_jsonl(path, recs, n, opts->lab_bin);
            snprintf(path, sizeof path, "%s/summary.json", stage);
            lab_results_summary_extra extra = lab_replay_summary_extra(opts, sig, n_all, resume);
            if (st2 == LAB_OK)
                st2 = lab_results_write_summary(path, t, nt, lab_backend_name(opts->backend), n, wall, &v, &extra);
            snprintf(path, sizeof path, "%s/junit.xml", stage);
            if (st2 == LAB_OK) st2 = lab_results_write_junit(path, recs, n, t, nt, &v, opts->lab_bin);
            snprintf(path, sizeof path, "%s/results.tap", stage);
            if (st2 == LAB_OK && opts->tap) st2 = lab_results_write_tap(path, recs, n, t, nt, &v, opts->lab_bin);
            if (st2 == LAB_OK && opts->plots && pass == 0 && !lab_isolate_interrupted()) {
                /* drawn from the records in memory, not from the results.jsonl just written */
                int npng = 0;
                lab_resread_set rs;
                lab_status sp = lab_resread_from_records(recs, n, opts->lab_bin, &rs);
                if (sp == LAB_OK) sp = lab_plot_set(&rs, stage, opts->root, report, &npng);
                lab_resread_free(&rs);
                if (sp == LAB_OK) fprintf(report, "plots: %d PNG in %s/plots\n", npng, opts->out_dir);
                else fprintf(report, "plots: %s\n", lab_err_msg()); /* a missing gnuplot does not fail the replay */
                st2 = LAB_OK;
            }
            if (sig || !lab_isolate_interrupted()) break;
            sig = lab_isolate_interrupted();
            run.interrupted = sig;
            v = lab_verdict_decide(t, nt, recs, n, &run);
            snprintf(resume, sizeof resume, "(none: every case finished)");
            fprintf(report, "INTERRUPTED by %s while writing the result set: all %zu cases finished and are kept (NOT "
                            "OK)%s\n", sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal", n,
                    opts->plots ? "; the plots as far as they got" : "");
        }
        if (st2 == LAB_OK) st2 = lab_resultset_swap(stage, opts->out_dir);
        if (st2 != LAB_OK && staged) {
            char keep[512];
            snprintf(keep, sizeof keep, "%s", lab_err_msg());
            lab_resultset_rmrf(stage);
            lab_err_set(st2, "%s", keep);
        }
        if (st2 == LAB_OK) fprintf(report, "wrote %s/{results.jsonl,summary.json,junit.xml%s}\n", opts->out_dir, opts->tap ? ",results.tap" : "");
    }
    free(t);
    if (recs != recs_all) free(recs);
    *verdict = v;
    return st2;
}
