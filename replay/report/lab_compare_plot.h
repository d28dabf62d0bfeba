/* lab_compare_plot: the pictures of drift across GPUs and builds: `lab compare A B --out DIR` draws, per
 * incident, both reports' distributions over seeds with the tolerance and the moved statistics marked;
 * `lab trend REPORT...` draws each fix's margin to its tolerance across reports in time order. */
#ifndef LAB_COMPARE_PLOT_H
#define LAB_COMPARE_PLOT_H

#include <stdio.h>

#include "lab_err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads <dir_a>/report.json and <dir_b>/report.json and, for every incident in both, draws into out_dir one
 * ECDF figure per metric of the incident's specification that both reports hold per seed (the spec from
 * report.json's metric_specs, else this build's incident; a report without specs falls back to its
 * plot_metric): A solid, B dashed, per variant, the criterion's bound drawn, and the statistics (median,
 * max, non-finite count) that moved beyond factor (lab_compare_moved) noted on the figure. The first such
 * figure of an incident is <out_dir>/<id>.png. Then writes <out_dir>/index.html (the figures at reading size
 * with their captions and moves). root: the repository root (plots/compare.gp). *n_png receives the figures
 * drawn. Errors: LAB_ERR_IO / LAB_ERR_FORMAT naming the report, LAB_ERR_UNSUPPORTED when gnuplot is missing
 * (data files written), LAB_ERR_IO naming a figure gnuplot failed on. */
lab_status lab_compare_plot_run(const char *dir_a, const char *dir_b, const char *out_dir, double factor,
                                const char *root, FILE *log, int *n_png);

/* Reads n report folders, orders them by their "created" time, and draws <out_dir>/trend.png: for every fix
 * variant and every metric of its incident's specification with a tolerance scale, the worst value over
 * seeds as a fraction of the tolerance (lab_plot_margin) per report, labelled by date, commit and device;
 * 1.0 is the line. Also trend.dat (one block per series) and trend.par. Errors as lab_compare_plot_run;
 * LAB_ERR_ARG when n < 1. */
lab_status lab_compare_plot_trend(const char *const *dirs, int n, const char *out_dir, const char *root, FILE *log);

/* The --out rule of `lab compare` and `lab trend` (lab_fs_out_check's, with their own result sets): out_dir may be a
 * missing path, an empty folder or an earlier folder of the same command (compare: it holds index.html or
 * compare.gp; trend: trend.png or another trend.* file). Anything else is LAB_ERR_ARG naming it, nothing touched:
 * a regular file, a folder of other things, and for compare also a replay or report result set (results.jsonl,
 * summary.json or report.json there), whose index.html the compare page would replace. */
lab_status lab_compare_plot_out_check(const char *out_dir);
lab_status lab_compare_plot_trend_out_check(const char *out_dir);

/* `lab trend [--out DIR] REPORT...` (default DIR build/trend): the command's argument parsing and run.
 * Returns the exit status: 0 drawn, 2 usage or an unreadable report, 3 the figure could not be drawn. */
int lab_compare_plot_trend_cmd(int argc, char **argv, const char *root);

#ifdef __cplusplus
}
#endif

#endif
