/* lab_plot: turns a replay's results.jsonl into per-incident figures: each criterion metric's distribution
 * over seeds per variant and backend with its bound, the error metrics as fractions of their tolerances,
 * and the incidents' own figures. */
#ifndef LAB_PLOT_H
#define LAB_PLOT_H

#include <stdio.h>

#include "lab_err.h"
#include "lab_incident.h"
#include "lab_resread.h"

/* Reads <out_dir>/results.jsonl (lab_resread) and for each incident in it draws into <out_dir>/plots/
 * (each figure as <stem>.dat, .par, .cmd, .caption and .png, the kind's script copied beside them):
 *  - <id>.png: the distribution (ECDF) of the separating metric (plots.specs[0], else plots.metric) per
 *    variant and backend, with the criterion's bound; NaN/Inf in marked bands, zeros on a marked floor;
 *  - <id>-<metric>.png: the same for every other metric of plots.specs;
 *  - <id>-margin.png: every metric with a bound above zero as a fraction of it (1.0 is the line);
 * then runs each incident's figures() in its own process under a watchdog; a figure that fails is printed
 * to `report` and does not fail the call. *n_png receives the PNG files in the plots folder. LAB_ERR_IO /
 * LAB_ERR_FORMAT name the results file and line; LAB_ERR_UNSUPPORTED if gnuplot is missing (the .dat and
 * .par files are still written). A file of more than lab_resread_sample_at() cases (65536) is read as a sample:
 * every step-th case of each variant (lab_resread_load_sample, the sample a windowed replay draws from), said on
 * `report`; the file is streamed, so memory stays within the sample's. */
lab_status lab_plot_results(const char *out_dir, const char *root, FILE *report, int *n_png);

/* As lab_plot_results, from the records in rs (a replay's, still in memory: lab_resread_from_records) instead of
 * <out_dir>/results.jsonl; the figures go to <out_dir>/plots. Records of an incident this build lacks are left
 * out. */
lab_status lab_plot_set(const lab_resread_set *rs, const char *out_dir, const char *root, FILE *report, int *n_png);

/* The PNG files a drawing left in its plots folder (names without the folder, sorted by name): what a report lists
 * from the replay that drew them, handed over in memory. */
typedef struct {
    char **names;
    size_t n;
} lab_plot_list;

/* As lab_plot_set, and *drawn (when not NULL) gets the PNG files in <out_dir>/plots after the drawing (also after a
 * failure: what is there); lab_plot_list_free releases it. LAB_ERR_NOMEM when the list cannot be made. */
lab_status lab_plot_set_listed(const lab_resread_set *rs, const char *out_dir, const char *root, FILE *report,
                               int *n_png, lab_plot_list *drawn);

/* Fills *l with the PNG files of folder dir, sorted by name (none: an empty list, not an error). LAB_ERR_NOMEM. */
lab_status lab_plot_list_dir(const char *dir, lab_plot_list *l);

/* Releases a list (and empties it); an empty one is fine. */
void lab_plot_list_free(lab_plot_list *l);

/* The value a figure draws for metric spec m of record r: the metric itself, or, when the spec's bound
 * comes from a per-case metric (tolerance_metric), the metric as a fraction of that bound. 0 when r lacks
 * the metric (or its bound), else 1 with *v set (possibly NaN/Inf). */
int lab_plot_spec_value(const lab_metric_spec *m, const lab_resread_rec *r, double *v);

/* The margin of a value against its spec: value / tolerance for an upper bound above zero, (1 - value) /
 * (1 - tolerance) for a lower bound below 1 (a cosine); 1.0 is the line, below passes. NaN stays NaN.
 * Returns 0 when the spec has no such scale (a bound of exactly 0, a per-case bound: use
 * lab_plot_spec_value, which is already a fraction). */
int lab_plot_margin(const lab_metric_spec *m, double value, double *margin);

#endif
