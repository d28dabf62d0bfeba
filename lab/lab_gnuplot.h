/* lab_gnuplot: renders a column data file into a PNG with gnuplot (plots/xy.gp), for the replay's plots
 * and for incidents' own figures. */
#ifndef LAB_GNUPLOT_H
#define LAB_GNUPLOT_H

#include <stdio.h>

#include "lab_err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A data file is whitespace-separated columns: a header line naming them (x first, then one series per
 * column), then rows; "NaN" is a missing value. Series are drawn against column 1. */
typedef struct {
    const char *dat;      /* input data file */
    const char *png;      /* output image */
    const char *title;
    const char *xlabel;
    const char *ylabel;
    int logx, logy;       /* log scales (values <= 0 are not drawn) */
    int lines;            /* 1: lines (series over x, e.g. a loss curve); 0: points (per seed) */
} lab_gnuplot_spec;

/* 1 when a gnuplot executable is on PATH. */
int lab_gnuplot_available(void);

/* Opens spec-style data file `path` for writing and writes the header line "x s1 s2 ..." (names must
 * not contain spaces). Returns NULL with lab_err set naming the path. */
FILE *lab_gnuplot_dat_open(const char *path, const char *x_name, const char *const *series, int n_series);
/* Closes a data file, LAB_ERR_IO naming path if any write failed. */
lab_status lab_gnuplot_dat_close(FILE *f, const char *path);

/* Renders spec->dat into spec->png with <root>/plots/xy.gp (the number of series is read from the
 * header). LAB_ERR_UNSUPPORTED when gnuplot is missing or the file holds no finite value to draw; LAB_ERR_IO with gnuplot's own message when it
 * fails; LAB_ERR_IO naming the data file when it cannot be read. */
lab_status lab_gnuplot_xy(const char *root, const lab_gnuplot_spec *spec);

#ifdef __cplusplus
}
#endif

#endif
