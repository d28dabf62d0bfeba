/* lab_plot: turns a replay's results.jsonl into per-incident data files and gnuplot PNGs. */
#ifndef LAB_PLOT_H
#define LAB_PLOT_H

#include <stdio.h>

#include "lab_err.h"

/* Reads <out_dir>/results.jsonl, and for each incident in it writes <out_dir>/plots/<id>.dat (seed, then
 * the incident's plot_metric per variant; NaN where a case has no finite value) and renders
 * <out_dir>/plots/<id>.png with <root>/plots/xy.gp; likewise <id>-drift.{dat,png} for the incident's
 * drift_metric (log scale) where it has one. Then runs each incident's figures() in its own process under
 * a watchdog; a figure that fails is printed to `report` and does not fail the call. *n_png receives the
 * PNG files in the plots folder. LAB_ERR_IO / LAB_ERR_FORMAT name the results file and line;
 * LAB_ERR_UNSUPPORTED if gnuplot is missing (the .dat files are still written). */
lab_status lab_plot_results(const char *out_dir, const char *root, FILE *report, int *n_png);

#endif
