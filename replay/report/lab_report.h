/* lab_report: turns a replay folder into a self-contained device report: report.json (device, build,
 * per-incident outcome tables, metric statistics and per-seed values of the criterion's metrics) and, through
 * lab_html, index.html. */
#ifndef LAB_REPORT_H
#define LAB_REPORT_H

#include <cJSON.h>
#include <stdio.h>
#include <time.h>

#include "lab_err.h"
#include "lab_incident.h"
#include "lab_plot.h"
#include "lab_resread.h"

#ifdef __cplusplus
extern "C" {
#endif

/* report.json's "schema" value; lab compare refuses other values. */
#define LAB_REPORT_SCHEMA "lab-report/1"

typedef struct {
    time_t since;         /* the replay started at this time: results older than it are refused and
                             plots older than it are left out (stale files of an earlier run); 0: no check */
    const char *command;  /* the command line that made the report, recorded as is (NULL: none) */
    int query_device;     /* 1: describe this machine (and its GPU for backend cuda); 0: leave "device" out
                             (tests, or a report rebuilt elsewhere) */
    const char *root;     /* the repository root: each incident's summary (the first sentence of its card's "What
                             you see", lab_card) and the story's pictures (copied into <dir>/plots as
                             <id>-story-NAME.svg with their captions) come from its stories; NULL: neither */
} lab_report_opts;

/* Reads <dir>/summary.json and <dir>/results.jsonl as lab_replay_run writes them, and writes
 * <dir>/report.json (schema LAB_REPORT_SCHEMA: created, command, device, build, summary, incidents with
 * their variants' outcome counts, verdicts and metric statistics (n, non-finite count, min, median, max
 * over seeds), the story's summary (from its card, opts->root), the incident's metric specifications (name, tolerance, higher_is_worse,
 * tolerance_metric, caption), per-seed values of the separating and drift metrics and of every spec metric and
 * its per-case bound (6 significant digits), up to 20 failing cases with their replay commands, and the plots) and then <dir>/index.html (lab_html_write). Errors: LAB_ERR_IO naming
 * the file that cannot be read or written (also when it is older than opts->since), LAB_ERR_FORMAT naming
 * the file, line and field that is malformed. */
lab_status lab_report_write(const char *dir, const lab_report_opts *opts);

/* lab_report_write from what the replay that wrote <dir> hands over in memory (lab_replay_result): its summary.json
 * tree, its records as lab_resread reads them back, the benchmarks' section it ran (bench: NULL for none) and the plots
 * it drew (plots: NULL for none). Nothing the replay wrote into <dir> is read back; only the PNG files are, to inline
 * them in index.html. The same report.json and index.html, the same errors (LAB_ERR_FORMAT naming summary.json when the
 * tree lacks a field). */
lab_status lab_report_write_set(const char *dir, const lab_report_opts *opts, const cJSON *summary,
                                const lab_resread_set *set, const cJSON *bench, const lab_plot_list *plots);

/* For a report made where gnuplot is missing (a bare GPU machine): renders <dir>/plots from
 * <dir>/results.jsonl here (lab_plot_results), lists them in report.json and rewrites index.html. The
 * device and build stay those of the machine that ran the replay; root is the repository root (plot
 * scripts). Errors as lab_plot_results and
 * lab_html_write; progress lines go to log (may be NULL). */
lab_status lab_report_replot(const char *dir, const char *root, FILE *log);

#ifdef __cplusplus
}
#endif

#endif
