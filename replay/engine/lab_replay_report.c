/* lab_replay_report: a replay's report from its finished records (lab_replay_report, lab_replay.h): the table, the
 * failing cases and their replay commands, the resume commands of an interrupted replay, and the result set written
 * to a staging folder and swapped in (lab_resultset.h). The windowed replay (lab_window.c) reuses its table, resume
 * commands and summary extras (lab_replay_int.h). */
#define _GNU_SOURCE
#include "lab_replay.h"

#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "lab_command.h"
#include "lab_device.h"
#include "lab_journal.h"
#include "lab_json.h"
#include "lab_plot.h"
#include "lab_replay_int.h"
#include "lab_resultset.h"
#include "lab_resume.h"
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

void lab_replay_resume_unfinished(const lab_replay_opts *opts, const lab_case_record *recs, size_t n, size_t *from)
{
    for (size_t i = 0; i < opts->what.n_incidents; ++i) from[i] = lab_replay_n_seeds(opts, opts->what.incidents[i]);
    for (size_t j = 0; j < n; ++j) {
        if (!recs[j].o.not_run) continue;
        size_t i = 0;
        while (i < opts->what.n_incidents && opts->what.incidents[i] != recs[j].incident) ++i;
        if (i == opts->what.n_incidents) continue;
        /* the seeds are consecutive (--first-seed on): the index at once, else looked for */
        size_t s = (size_t)(recs[j].seed - opts->what.seeds[0]);
        if (recs[j].seed < opts->what.seeds[0] || s >= opts->what.n_seeds || opts->what.seeds[s] != recs[j].seed)
            for (s = 0; s < opts->what.n_seeds && opts->what.seeds[s] != recs[j].seed; ++s) {}
        if (s < from[i]) from[i] = s;
    }
}

/* How incident i resumes, in the words of its command: *first the seed index it resumes from, *count the seeds from
 * there, *dflt 1 when it resumes from its start over its default count (--seeds left out). Returns 0 when nothing of
 * it is left. */
static int lab_replay_resume_key(const lab_replay_opts *opts, const size_t *from, size_t i, size_t *first,
                                 size_t *count, int *dflt)
{
    const lab_incident *inc = opts->what.incidents[i];
    size_t ns = lab_replay_n_seeds(opts, inc);
    if (!lab_replay_n_variants(opts, inc) || from[i] >= ns) return 0;
    *first = from[i];
    *count = ns - from[i];
    /* without --seeds every incident runs its own default count of LAB_REQUEST_SEEDS_DEFAULT: one command for all that
     * start again, as the replay was asked for */
    *dflt = opts->what.seeds_default && from[i] == 0 && opts->what.n_seeds == LAB_REQUEST_SEEDS_DEFAULT;
    if (*dflt) *count = 0;
    return 1;
}

/* Incident i resumes as incident j does (both have something left). */
static int lab_replay_resume_alike(const lab_replay_opts *opts, const size_t *from, size_t i, size_t j)
{
    size_t fi, ci, fj, cj;
    int di, dj;
    return lab_replay_resume_key(opts, from, i, &fi, &ci, &di) && lab_replay_resume_key(opts, from, j, &fj, &cj, &dj) &&
           di == dj && ci == cj && opts->what.seeds[fi] == opts->what.seeds[fj];
}

lab_status lab_replay_resume_cmds(const lab_replay_opts *opts, const size_t *from, char **cmds, size_t *n_cmds)
{
    *cmds = NULL;
    *n_cmds = 0;
    /* the text grows as the commands come (each measured first): however many and long, none is cut or left out */
    size_t cap = 1024, at = 0;
    char *buf = malloc(cap);
    const char **ids = malloc((opts->what.n_incidents ? opts->what.n_incidents : 1) * sizeof *ids);
    if (!buf || !ids) goto nomem;
    buf[0] = 0;
    /* the groups: led by the first incident of each key, in the incidents' order (n_incidents is at most
     * LAB_REQUEST_IDS_MAX from the command line, so the quadratic look-back is small) */
    size_t groups = 0, first, count;
    int dflt;
    for (int pass = 0; pass < 2; ++pass) {
        size_t part = 0;
        for (size_t i = 0; i < opts->what.n_incidents; ++i) {
            if (!lab_replay_resume_key(opts, from, i, &first, &count, &dflt)) continue;
            size_t j = 0;
            while (j < i && !lab_replay_resume_alike(opts, from, i, j)) ++j;
            if (j < i) continue; /* in an earlier incident's command */
            ++part;
            if (pass == 0) continue;
            size_t n_ids = 0;
            for (size_t k = i; k < opts->what.n_incidents; ++k)
                if (k == i || lab_replay_resume_alike(opts, from, i, k)) ids[n_ids++] = opts->what.incidents[k]->id;
            lab_command_resume r = {opts->how.lab_bin,
                                    ids,
                                    n_ids,
                                    opts->what.variant,
                                    opts->what.n_seeds == 1,
                                    dflt,
                                    opts->what.seeds[first],
                                    count,
                                    lab_backend_name(opts->what.backend),
                                    opts->how.out_dir,
                                    groups > 1 ? (int)part : 0};
            size_t need = at + lab_command_resume_line(&r, NULL, 0) + 2; /* the command, its '\n' and the end */
            if (need > cap) {
                while (cap < need) cap *= 2;
                char *grown = realloc(buf, cap);
                if (!grown) goto nomem;
                buf = grown;
            }
            lab_command_resume_line(&r, buf + at, cap - at - 1);
            at += strlen(buf + at);
            buf[at++] = '\n';
            buf[at] = 0;
        }
        groups = part;
    }
    free(ids);
    *cmds = buf;
    *n_cmds = groups;
    return LAB_OK;
nomem:
    free(buf);
    free(ids);
    return lab_err_set(LAB_ERR_NOMEM, "replay: out of memory: the resume commands could not be written");
}

void lab_replay_resume_print(FILE *f, const lab_replay_opts *opts, int sig, size_t n, size_t planned, const char *cmds,
                             size_t n_cmds)
{
    fprintf(f, "INTERRUPTED by %s: %zu of %zu cases finished and are kept (NOT OK)\n",
            sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal", n, planned);
    if (!n_cmds) {
        fprintf(f, "resume: (none: every case finished)\n");
        return;
    }
    if (opts->how.out_dir) { /* the set it writes is completed in place */
        char line[2 * PATH_MAX];
        lab_command_resume_dir(opts->how.lab_bin, opts->how.out_dir, line, sizeof line);
        fprintf(f, "resume: %s\n", line);
        return;
    }
    for (const char *c = cmds; *c;) {
        size_t k = strcspn(c, "\n");
        fprintf(f, "resume: %.*s\n", (int)k, c);
        c += k + (c[k] == '\n');
    }
}

/* A case's replay command (lab_results_cmd's spell over the replay's options). */
static void lab_replay_spell(const void *ctx, const lab_case_record *c, char *buf, size_t len)
{
    const lab_replay_opts *opts = ctx;
    lab_command_case(opts->how.lab_bin, c->incident->id, c->variant->name, c->seed, lab_backend_name(c->backend), buf,
                     len);
}

lab_results_cmd lab_replay_cmd(const lab_replay_opts *opts)
{
    return (lab_results_cmd){lab_replay_spell, opts};
}

/* One case that missed its role, with the command that replays exactly it. A fix that failed REGRESSED; a bug that
 * passed is an XPASS; a bug whose case could not be judged is printed with its outcome (ERROR), never as XPASS. */
void lab_replay_print_failure(FILE *f, const lab_replay_opts *opts, const lab_case_record *r)
{
    char cmd[512];
    lab_results_cmd spell = lab_replay_cmd(opts);
    lab_results_spell(&spell, r, cmd, sizeof cmd);
    const char *label = r->variant->role == LAB_ROLE_FIX ? "REGRESSED"
                        : r->o.outcome == LAB_OUT_PASS   ? "XPASS"
                                                         : lab_outcome_name(r->o.outcome);
    fprintf(f, "%s %s/%s seed %llu: %s%s%s%s%s\n  replay: %s%s%s\n", label, r->incident->id, r->variant->name,
            (unsigned long long)r->seed, lab_outcome_name(r->o.outcome), r->o.r.detail[0] || r->o.error[0] ? ": " : "",
            r->o.r.detail, r->o.r.detail[0] && r->o.error[0] ? "; " : "", r->o.error, cmd,
            opts->what.sanitize ? " --sanitize " : "", opts->what.sanitize ? opts->what.sanitize : "");
}

/* The variants judged on their tally alone (a stated rate): what the table's verdict column says, in full, and the
 * command that replays them over the seeds the verdict needs. */
void lab_replay_print_rates(FILE *f, const lab_replay_opts *opts, const lab_verdict_tally *t, size_t nt)
{
    for (size_t k = 0; k < nt; ++k)
        if (t[k].kind == LAB_VERDICT_RATE_BELOW || t[k].kind == LAB_VERDICT_TOO_FEW_SEEDS) {
            char cmd[512];
            lab_command_variant(opts->how.lab_bin, t[k].incident->id, t[k].variant->name,
                                t[k].seeds_needed > t[k].seeds ? t[k].seeds_needed : t[k].seeds, cmd, sizeof cmd);
            fprintf(f, "%s/%s: %s\n  replay: %s\n", t[k].incident->id, t[k].variant->name, t[k].verdict, cmd);
        }
}

/* The closing line: the cases, the time, the workers this machine gives (lab_device_machine) and the verdict. */
void lab_replay_print_end(FILE *f, const lab_replay_opts *opts, size_t n, double wall, const char *line)
{
    lab_machine host;
    lab_device_machine(&host);
    int jobs = lab_replay_workers(opts, &host, NULL, 0);
    size_t kept = lab_resume_count(opts->how.carry), ran = n > kept ? n - kept : 0;
    if (kept) /* a --resume: the rate is the cases that ran now */
        fprintf(f, "\n%zu cases, %zu of them kept from before, %zu run in %.2f s (%.1f cases/s, %d jobs): %s\n", n,
                kept, ran, wall, wall > 0 ? ran / wall : 0.0, jobs, line);
    else
        fprintf(f, "\n%zu cases in %.2f s (%.1f cases/s, %d jobs): %s\n", n, wall, wall > 0 ? n / wall : 0.0, jobs,
                line);
}

/* The replay's own fields of summary.json: "replay" (what it ran, lab_resume_describe: what --resume reads back),
 * "workers" (how many, and where the count came from), and for an interrupted replay that writes a set "resume" as the
 * one command that completes it in place (lab_command_resume_dir; "resume_commands" stay, the seed ranges left); then
 * the caller's (opts->how.summary_fields). */
static lab_status lab_replay_summary_fields(void *ctx, cJSON *summary)
{
    const lab_replay_opts *opts = ctx;
    cJSON *replay = lab_resume_describe(opts);
    if (replay) cJSON_AddItemToObject(summary, "replay", replay);
    lab_machine host;
    lab_device_machine(&host);
    char said[320];
    int w = lab_replay_workers(opts, &host, said, sizeof said);
    cJSON *workers = cJSON_AddObjectToObject(summary, "workers");
    cJSON_AddNumberToObject(workers, "count", w);
    cJSON_AddStringToObject(workers, "from", said);
    cJSON_AddNumberToObject(workers, "cpus", host.ncpu);
    cJSON_AddStringToObject(workers, "cpus_from", host.cpu_source);
    if (opts->how.carry) /* a --resume: the cases it kept as they were ("cases_per_s" counts them too) */
        cJSON_AddNumberToObject(summary, "resumed_kept", (double)lab_resume_count(opts->how.carry));
    if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(summary, "resume_commands")) > 0 && opts->how.out_dir) {
        char line[2 * PATH_MAX];
        lab_command_resume_dir(opts->how.lab_bin, opts->how.out_dir, line, sizeof line);
        cJSON_ReplaceItemInObjectCaseSensitive(summary, "resume", cJSON_CreateString(line));
    }
    return opts->how.summary_fields ? opts->how.summary_fields(opts->how.summary_ctx, summary) : LAB_OK;
}

lab_results_summary_extra lab_replay_summary_extra(const lab_replay_opts *opts, int sig, size_t planned,
                                                   const char *resume)
{
    return (lab_results_summary_extra){.signal = sig, .cases_planned = planned, .resume = resume,
                                       .fields = lab_replay_summary_fields, .fields_ctx = (void *)opts};
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

    /* Every case that failed its role, with the command that replays exactly that case. */
    size_t shown = 0;
    for (size_t j = 0; j < n; ++j) {
        if (lab_verdict_case_ok(&recs[j]) != 0) continue;
        if (shown++ < 20) lab_replay_print_failure(report, opts, &recs[j]);
    }
    if (shown > 20) fprintf(report, "... and %zu more (see results.jsonl)\n", shown - 20);
    lab_replay_print_rates(report, opts, t, nt);
    lab_replay_print_end(report, opts, n, wall, v.line);
    char *resume = NULL; /* an interrupt's resume commands (NULL: none) */
    if (sig) {
        size_t *from = malloc((opts->what.n_incidents ? opts->what.n_incidents : 1) * sizeof *from), n_cmds = 0;
        st2 = from ? LAB_OK : lab_err_set(LAB_ERR_NOMEM, "replay: out of memory");
        if (st2 == LAB_OK) lab_replay_resume_unfinished(opts, recs_all, n_all, from);
        if (st2 == LAB_OK) st2 = lab_replay_resume_cmds(opts, from, &resume, &n_cmds);
        free(from);
        if (st2 != LAB_OK) {
            free(t);
            if (recs != recs_all) free(recs);
            return st2;
        }
        lab_replay_resume_print(report, opts, sig, n, n_all, resume, n_cmds);
    }

    if (opts->how.out_dir) {
        /* The whole set goes to a fresh folder beside out_dir (the journal's, where the finished cases already are),
         * then replaces it in one swap. */
        char stage[PATH_MAX], path[PATH_MAX + 32];
        lab_results_cmd spell = lab_replay_cmd(opts);
        /* The finished cases as results.jsonl holds them, made once: the plots are drawn from it and the caller
         * (lab report) keeps it, so that nothing written here is read back. */
        lab_resread_set rs = {0};
        int want_set = opts->how.plots || opts->how.set_out;
        st2 = want_set ? lab_resread_from_records(recs, n, &spell, &rs) : LAB_OK;
        if (st2 == LAB_OK && opts->how.journal)
            snprintf(stage, sizeof stage, "%s", lab_journal_stage(opts->how.journal));
        else if (st2 == LAB_OK)
            st2 = lab_resultset_stage(opts->how.out_dir, stage, sizeof stage);
        int staged = st2 == LAB_OK && !opts->how.journal; /* a journal's folder stays on error, for --resume */
        lab_stall_point(LAB_STALL_WRITING);
        /* Written twice only when an interrupt comes after the verdict (while writing or plotting): every case had
         * finished and is kept, and the set is rewritten with the verdict of an interrupted run (NOT OK, 130/143),
         * the plots left as far as they got. */
        for (int pass = 0; pass < 2 && st2 == LAB_OK; ++pass) {
            snprintf(path, sizeof path, "%s/results.jsonl", stage);
            if (st2 == LAB_OK) st2 = lab_results_write_jsonl(path, recs, n, &spell);
            snprintf(path, sizeof path, "%s/summary.json", stage);
            lab_results_summary_extra extra = lab_replay_summary_extra(opts, sig, n_all, resume);
            cJSON *summary = NULL;
            if (st2 == LAB_OK)
                st2 = lab_results_summary_json(t, nt, lab_backend_name(opts->what.backend), n, wall, &v, &extra,
                                               &summary);
            if (st2 == LAB_OK) st2 = lab_json_write_file(path, summary, LAB_JSON_PRETTY);
            if (st2 == LAB_OK && opts->how.summary_out) { /* the caller keeps the tree as written (lab report) */
                cJSON_Delete(*opts->how.summary_out);
                *opts->how.summary_out = summary, summary = NULL;
            }
            cJSON_Delete(summary);
            snprintf(path, sizeof path, "%s/junit.xml", stage);
            if (st2 == LAB_OK) st2 = lab_results_write_junit(path, recs, n, t, nt, &v, &spell);
            snprintf(path, sizeof path, "%s/results.tap", stage);
            if (st2 == LAB_OK && opts->how.tap) st2 = lab_results_write_tap(path, recs, n, t, nt, &v, &spell);
            if (st2 == LAB_OK && opts->how.plots && pass == 0 && !lab_isolate_interrupted()) {
                /* drawn from the records in memory, not from the results.jsonl just written */
                int npng = 0;
                lab_status sp = lab_plot_set_listed(&rs, stage, opts->how.root, report, &npng, opts->how.plots_out);
                if (sp == LAB_OK) fprintf(report, "plots: %d PNG in %s/plots\n", npng, opts->how.out_dir);
                else fprintf(report, "plots: %s\n", lab_err_msg()); /* a missing gnuplot does not fail the replay */
                st2 = LAB_OK;
            }
            if (sig || !lab_isolate_interrupted()) break;
            sig = lab_isolate_interrupted();
            run.interrupted = sig;
            v = lab_verdict_decide(t, nt, recs, n, &run);
            free(resume), resume = NULL; /* every case finished: nothing to resume */
            fprintf(report, "INTERRUPTED by %s while writing the result set: all %zu cases finished and are kept (NOT "
                            "OK)%s\n", sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal", n,
                    opts->how.plots ? "; the plots as far as they got" : "");
        }
        if (st2 == LAB_OK) st2 = lab_resultset_swap(stage, opts->how.out_dir);
        if (st2 == LAB_OK) lab_journal_swapped(opts->how.journal, opts->how.out_dir);
        if (st2 == LAB_OK && opts->how.set_out) {
            lab_resread_free(opts->how.set_out);
            *opts->how.set_out = rs;
        } else {
            lab_resread_free(&rs);
        }
        if (st2 != LAB_OK && staged) {
            char keep[512];
            snprintf(keep, sizeof keep, "%s", lab_err_msg());
            lab_resultset_rmrf(stage);
            lab_err_set(st2, "%s", keep);
        }
        if (st2 == LAB_OK)
            fprintf(report, "wrote %s/{results.jsonl,summary.json,junit.xml%s}\n", opts->how.out_dir,
                    opts->how.tap ? ",results.tap" : "");
    }
    free(resume);
    free(t);
    if (recs != recs_all) free(recs);
    *verdict = v;
    return st2;
}
