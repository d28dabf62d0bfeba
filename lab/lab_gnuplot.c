/* lab_gnuplot: renders a column data file into a PNG with gnuplot (plots/xy.gp). */
#include "lab_gnuplot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int lab_gnuplot_available(void)
{
    static int cached = -1;
    if (cached < 0) cached = system("command -v gnuplot >/dev/null 2>&1") == 0;
    return cached;
}

FILE *lab_gnuplot_dat_open(const char *path, const char *x_name, const char *const *series, int n_series)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        lab_err_set(LAB_ERR_IO, "%s: cannot write plot data", path);
        return NULL;
    }
    fprintf(f, "%s", x_name);
    for (int i = 0; i < n_series; ++i) fprintf(f, " %s", series[i]);
    fprintf(f, "\n");
    return f;
}

lab_status lab_gnuplot_dat_close(FILE *f, const char *path)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) return lab_err_set(LAB_ERR_IO, "%s: write failed", path);
    return LAB_OK;
}

/* Number of columns named in the data file's header line, or -1; *points receives the finite values in
 * the series columns (every column but the first) of the rows below it. */
static int lab_gnuplot_columns(const char *dat, size_t *points)
{
    FILE *f = fopen(dat, "r");
    *points = 0;
    if (!f) return -1;
    char line[8192];
    int n = -1;
    if (fgets(line, sizeof line, f)) {
        n = 0;
        for (char *t = strtok(line, " \t\r\n"); t; t = strtok(NULL, " \t\r\n")) n++;
    }
    while (n > 0 && fgets(line, sizeof line, f)) {
        int col = 0;
        for (char *t = strtok(line, " \t\r\n"); t; t = strtok(NULL, " \t\r\n"), ++col) {
            char *end;
            double v = strtod(t, &end);
            if (col > 0 && end != t && *end == '\0' && isfinite(v)) *points += 1;
        }
    }
    fclose(f);
    return n;
}

/* Copies s into a single-quoted gnuplot string: quotes become backquotes. */
static void lab_gnuplot_quote(char *dst, size_t len, const char *s)
{
    size_t k = 0;
    for (; s && *s && k + 1 < len; ++s) dst[k++] = *s == '\'' || *s == '"' ? '`' : *s;
    dst[k] = '\0';
}

lab_status lab_gnuplot_xy(const char *root, const lab_gnuplot_spec *s)
{
    size_t points;
    int cols = lab_gnuplot_columns(s->dat, &points);
    if (cols < 2) return lab_err_set(LAB_ERR_IO, "%s: cannot read the plot data's header", s->dat);
    if (points == 0) return lab_err_set(LAB_ERR_UNSUPPORTED, "%s: no finite value to draw, %s not drawn", s->dat, s->png);
    if (!lab_gnuplot_available()) return lab_err_set(LAB_ERR_UNSUPPORTED, "gnuplot not found: %s not drawn", s->png);
    char title[512], xl[128], yl[128], cmd[12288];
    lab_gnuplot_quote(title, sizeof title, s->title);
    lab_gnuplot_quote(xl, sizeof xl, s->xlabel);
    lab_gnuplot_quote(yl, sizeof yl, s->ylabel);
    snprintf(cmd, sizeof cmd,
             "gnuplot -e \"datafile='%s'; outfile='%s'; plottitle='%s'; xlab='%s'; ylab='%s'; logx=%d; logy=%d; "
             "uselines=%d; ncols=%d\" '%s/plots/xy.gp' 2>&1",
             s->dat, s->png, title, xl, yl, s->logx, s->logy, s->lines, cols, root);
    FILE *gp = popen(cmd, "r");
    char msg[1024] = "";
    size_t got = gp ? fread(msg, 1, sizeof msg - 1, gp) : 0;
    msg[got] = '\0';
    int rc = gp ? pclose(gp) : -1;
    if (rc != 0) return lab_err_set(LAB_ERR_IO, "%s: gnuplot failed (status %d): %s", s->png, rc, msg);
    return LAB_OK;
}
