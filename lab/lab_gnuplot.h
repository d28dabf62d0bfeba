/* lab_gnuplot: draws the lab's figures with gnuplot, one script per kind of figure (plots/<kind>.gp), started from
 * an argv in the figure's folder so that no file name or other user text is ever gnuplot script text. */
#ifndef LAB_GNUPLOT_H
#define LAB_GNUPLOT_H

#include <stddef.h>
#include <stdio.h>

#include "lab_err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How every figure is drawn: in <dir> the lab writes <stem>.dat (the data), <stem>.par (gnuplot variables:
 * numbers and strings the lab made, with quotes, backslashes, backquotes and '@' removed), copies the
 * kind's script <root>/plots/<script> into <dir>, and runs, with <dir> as the working directory,
 *     gnuplot -c <script> <stem>.dat <stem>.png <stem>.par
 * (gnuplot's ARG1..ARG3: data, never script text). <stem>.cmd holds that line, so a user can restyle a
 * figure without the lab; <stem>.caption holds its one-line caption. Stems are made of [A-Za-z0-9._+-]. */

/* Kinds of figure (their scripts under plots/). */
#define LAB_GNUPLOT_ECDF     "ecdf.gp"     /* distribution over seeds per variant and backend, with the criterion */
#define LAB_GNUPLOT_MARGIN   "margin.gp"   /* error metrics as a fraction of their tolerance (1.0 is the line) */
#define LAB_GNUPLOT_COMPARE  "compare.gp"  /* two reports' distributions, the tolerance, moved metrics marked */
#define LAB_GNUPLOT_TREND    "trend.gp"    /* each fix's margin across reports in time order */
#define LAB_GNUPLOT_CURVES   "curves.gp"   /* series over x with lines (training curves, studies) */
#define LAB_GNUPLOT_XY       "xy.gp"       /* series against x as points (scatter) */
#define LAB_GNUPLOT_TIMELINE "timeline.gp" /* per-rank Gantt of collectives (0006) */

/* 1 when a gnuplot executable is on PATH (searched here, no shell). */
int lab_gnuplot_available(void);

/* 1 when stem is a valid figure stem (non-empty, at most 200 characters of [A-Za-z0-9._+-], not starting
 * with '.' or '-'). */
int lab_gnuplot_stem_ok(const char *stem);

/* Opens <dir>/<stem>.par for writing. NULL with lab_err set (LAB_ERR_ARG for a bad stem, LAB_ERR_IO
 * naming the path). */
FILE *lab_gnuplot_par_open(const char *dir, const char *stem);
/* Writes `var = "value"` with value sanitised (quotes, backslashes, backquotes, '@', control characters
 * dropped) so it is a plain gnuplot string (no substitution happens in it); var must be an identifier the caller chose. */
void lab_gnuplot_par_str(FILE *f, const char *var, const char *value);
/* Writes `var = <number>` (NaN as NaN, infinities as +/-1e308). */
void lab_gnuplot_par_num(FILE *f, const char *var, double value);
/* Closes a parameter or data file; LAB_ERR_IO naming what if a write failed. */
lab_status lab_gnuplot_par_close(FILE *f, const char *what);

/* Renders <dir>/<stem>.png with the kind's script as described above, and writes <stem>.cmd and
 * <stem>.caption (caption may be NULL). LAB_ERR_UNSUPPORTED when gnuplot is missing; LAB_ERR_ARG for a bad
 * stem or script name; LAB_ERR_IO naming the script when it cannot be copied, or the PNG with gnuplot's
 * own message when gnuplot fails or writes no image. */
lab_status lab_gnuplot_render(const char *root, const char *script, const char *dir, const char *stem,
                              const char *caption);

/* ---- Distribution figures (ECDF, margin, comparison) ---- */

/* One series of an ECDF: its values over seeds (NaN, +Inf, -Inf and exact zeros allowed). */
typedef struct {
    const char *name;     /* legend text before the counts, e.g. "fix (cpu)" */
    const double *v;
    size_t n;
    int color;            /* 1.. : line colour index (same for a variant across backends/reports) */
    int dash;             /* 1: solid, 2..: dashed (backend or second report) */
} lab_gnuplot_series;

typedef struct {
    const char *title;    /* figure title */
    const char *xlabel;
    const char *caption;  /* one line: what to look for */
    int has_threshold;    /* draw the criterion's bound at `threshold` */
    double threshold;
    int pass_below;       /* 1: values <= threshold pass (shaded pass side left), 0: values >= threshold pass */
    const char *threshold_label; /* e.g. "tolerance 1e-10" */
    int linear;           /* 1: linear x axis; 0: log x when every finite value is >= 0 and the positive
                             ones span at least two decades (zeros then sit on a marked floor) */
    const char *note;     /* optional extra line in the legend (e.g. "moved: median x12") */
} lab_gnuplot_ecdf_spec;

/* Writes <dir>/<stem>.dat (one block per series with values: x = the value, or its band position, and y =
 * the ECDF fraction; "# series i: legend" before each block) and <stem>.par (titles with each series'
 * counts: seeds, exact zeros, NaN, +Inf, -Inf; band positions and counts; threshold), then renders with
 * script (LAB_GNUPLOT_ECDF, _MARGIN or _COMPARE). Non-finite values are drawn in marked bands ("NaN",
 * "+Inf", "-Inf") and, on a log axis, exact zeros on a marked floor, so no value is left out. A series with
 * no value is kept in the legend ("no cases"). Errors as lab_gnuplot_render; LAB_ERR_NOMEM. When gnuplot
 * is missing the .dat and .par files are still written and LAB_ERR_UNSUPPORTED is returned. */
lab_status lab_gnuplot_ecdf(const char *root, const char *script, const char *dir, const char *stem,
                            const lab_gnuplot_ecdf_spec *spec, const lab_gnuplot_series *series, int n_series);

/* ---- Column data files (incidents' own figures) ---- */

/* A data file is whitespace-separated columns: a header line naming them (x first, then one series per
 * column), then rows; "NaN" is a missing value. Series are drawn against column 1. */
typedef struct {
    const char *dat;      /* input data file <dir>/<stem>.dat */
    const char *png;      /* output image <dir>/<stem>.png: same folder and stem as dat */
    const char *title;
    const char *xlabel;
    const char *ylabel;
    int logx, logy;       /* log scales (values <= 0 are not drawn) */
    int lines;            /* 1: lines (series over x, e.g. a loss curve: curves.gp); 0: points (xy.gp) */
} lab_gnuplot_spec;

/* Opens spec-style data file `path` for writing and writes the header line "x s1 s2 ..." (names must
 * not contain spaces). Returns NULL with lab_err set naming the path. */
FILE *lab_gnuplot_dat_open(const char *path, const char *x_name, const char *const *series, int n_series);
/* Closes a data file, LAB_ERR_IO naming path if any write failed. */
lab_status lab_gnuplot_dat_close(FILE *f, const char *path);

/* Renders spec->dat into spec->png with curves.gp (lines) or xy.gp (points) through lab_gnuplot_render
 * (the number of series is read from the header; the title becomes the caption). LAB_ERR_ARG when dat and
 * png are not <dir>/<stem>.dat and <dir>/<stem>.png; LAB_ERR_UNSUPPORTED when gnuplot is missing or the
 * file holds no finite value to draw; LAB_ERR_IO with gnuplot's own message when it fails; LAB_ERR_IO
 * naming the data file when it cannot be read. */
lab_status lab_gnuplot_xy(const char *root, const lab_gnuplot_spec *spec);

#ifdef __cplusplus
}
#endif

#endif
