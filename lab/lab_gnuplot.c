/* lab_gnuplot: draws the lab's figures with gnuplot, one script per kind of figure (plots/<kind>.gp), started from
 * an argv in the figure's folder so that no file name or other user text is ever gnuplot script text. */
#include "lab_gnuplot.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab_fs.h"

int lab_gnuplot_available(void)
{
    static int cached = -1;
    if (cached >= 0) return cached;
    cached = 0;
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    char dir[4096];
    for (const char *p = path; *p && !cached;) {
        size_t l = strcspn(p, ":");
        if (l > 0 && l < sizeof dir - 16) {
            memcpy(dir, p, l);
            snprintf(dir + l, sizeof dir - l, "/gnuplot");
            cached = access(dir, X_OK) == 0;
        }
        p += l + (p[l] == ':');
    }
    return cached;
}

int lab_gnuplot_stem_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 200 || s[0] == '.' || s[0] == '-') return 0;
    for (size_t i = 0; i < n; ++i) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-' || c == '+'))
            return 0;
    }
    return 1;
}

FILE *lab_gnuplot_par_open(const char *dir, const char *stem)
{
    if (!lab_gnuplot_stem_ok(stem)) {
        lab_err_set(LAB_ERR_ARG, "figure stem '%s' is not [A-Za-z0-9._+-]", stem ? stem : "");
        return NULL;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.par", dir, stem);
    FILE *f = fopen(path, "w");
    if (!f) lab_err_set(LAB_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    else fprintf(f, "# %s.par: figure settings written by the lab (gnuplot variables), loaded by the script\n", stem);
    return f;
}

void lab_gnuplot_par_str(FILE *f, const char *var, const char *value)
{
    fprintf(f, "%s = \"", var);
    for (const char *s = value ? value : ""; *s; ++s)
        if (*s != '"' && *s != '\\' && *s != '`' && *s != '@' && (unsigned char)*s >= 0x20) fputc(*s, f);
    fputs("\"\n", f);
}

void lab_gnuplot_par_num(FILE *f, const char *var, double v)
{
    if (isnan(v)) fprintf(f, "%s = NaN\n", var);
    else if (isinf(v)) fprintf(f, "%s = %s1e308\n", var, v > 0 ? "" : "-");
    else fprintf(f, "%s = %.17g\n", var, v);
}

lab_status lab_gnuplot_par_close(FILE *f, const char *what)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) return lab_err_set(LAB_ERR_IO, "%s: write failed", what);
    return LAB_OK;
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
    return lab_gnuplot_par_close(f, path);
}

/* Copies <root>/plots/<script> into dir (the figure's folder), so the folder is self-contained. */
static lab_status lab_gnuplot_copy_script(const char *root, const char *script, const char *dir)
{
    char src[4096], dst[4096];
    snprintf(src, sizeof src, "%s/plots/%s", root, script);
    snprintf(dst, sizeof dst, "%s/%s", dir, script);
    char *text;
    size_t len;
    lab_status st = lab_fs_read_all(src, &text, &len);
    if (st != LAB_OK) return lab_err_set(LAB_ERR_IO, "plot script %s cannot be read (%s)", src, lab_err_msg());
    char *old;
    size_t olen;
    int same = lab_fs_read_all(dst, &old, &olen) == LAB_OK && olen == len && memcmp(old, text, len) == 0;
    if (same) free(old);
    else lab_err_clear();
    st = same ? LAB_OK : lab_fs_write_atomic(dst, text, len);
    free(text);
    return st;
}

/* Runs argv[0] found on PATH with dir as working directory, stdin from /dev/null, stdout and stderr into
 * msg (truncated). Returns the wait status, or -1 when it could not start (msg says why). */
static int lab_gnuplot_spawn(const char *dir, char *const argv[], char *msg, size_t cap)
{
    int fd[2];
    msg[0] = '\0';
    if (pipe(fd) != 0) {
        snprintf(msg, cap, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(msg, cap, "fork: %s", strerror(errno));
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0) dup2(nul, 0);
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        close(fd[0]);
        if (chdir(dir) != 0) {
            dprintf(2, "cannot enter %s: %s", dir, strerror(errno));
            _exit(126);
        }
        execvp(argv[0], argv);
        dprintf(2, "cannot run %s: %s", argv[0], strerror(errno));
        _exit(127);
    }
    close(fd[1]);
    size_t got = 0;
    char buf[512];
    for (;;) {
        ssize_t r = read(fd[0], buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        for (ssize_t i = 0; i < r && got + 1 < cap; ++i) msg[got++] = buf[i] == '\n' ? ' ' : buf[i];
    }
    msg[got] = '\0';
    close(fd[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return status;
}

/* Single-quotes s for a POSIX shell (for the .cmd file a user may run; the lab itself never uses a shell). */
static void lab_gnuplot_shq(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; ++s) {
        if (*s == '\'') fputs("'\\''", f);
        else fputc(*s, f);
    }
    fputc('\'', f);
}

lab_status lab_gnuplot_render(const char *root, const char *script, const char *dir, const char *stem,
                              const char *caption)
{
    if (!lab_gnuplot_stem_ok(stem)) return lab_err_set(LAB_ERR_ARG, "figure stem '%s' is not [A-Za-z0-9._+-]", stem ? stem : "");
    if (!lab_gnuplot_stem_ok(script)) return lab_err_set(LAB_ERR_ARG, "plot script name '%s' is not a plain file name", script);
    char path[4096], dat[256], png[256], par[256];
    snprintf(dat, sizeof dat, "%s.dat", stem);
    snprintf(png, sizeof png, "%s.png", stem);
    snprintf(par, sizeof par, "%s.par", stem);
    /* The caption and the command beside the data. */
    snprintf(path, sizeof path, "%s/%s.caption", dir, stem);
    if (caption) {
        lab_status st = lab_fs_write_atomic(path, caption, strlen(caption));
        if (st != LAB_OK) return st;
    }
    snprintf(path, sizeof path, "%s/%s.cmd", dir, stem);
    FILE *cf = fopen(path, "w");
    if (!cf) return lab_err_set(LAB_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    fprintf(cf, "# Redraws %s from its data in this folder (edit %s to restyle):\ngnuplot -c ", png, script);
    lab_gnuplot_shq(cf, script);
    const char *args[3] = {dat, png, par};
    for (int i = 0; i < 3; ++i) {
        fputc(' ', cf);
        lab_gnuplot_shq(cf, args[i]);
    }
    fputc('\n', cf);
    lab_status st = lab_gnuplot_par_close(cf, path);
    if (st != LAB_OK) return st;
    if ((st = lab_gnuplot_copy_script(root, script, dir)) != LAB_OK) return st;
    /* margin.gp and compare.gp load ecdf.gp from the same folder. */
    if (strcmp(script, LAB_GNUPLOT_ECDF) && (!strcmp(script, LAB_GNUPLOT_MARGIN) || !strcmp(script, LAB_GNUPLOT_COMPARE)) &&
        (st = lab_gnuplot_copy_script(root, LAB_GNUPLOT_ECDF, dir)) != LAB_OK)
        return st;
    if (!lab_gnuplot_available()) return lab_err_set(LAB_ERR_UNSUPPORTED, "gnuplot not found: %s not drawn", png);
    snprintf(path, sizeof path, "%s/%s", dir, png);
    unlink(path); /* a stale image must not pass for a new one */
    char *argv[] = {"gnuplot", "-c", (char *)script, dat, png, par, NULL};
    char msg[1024];
    int status = lab_gnuplot_spawn(dir, argv, msg, sizeof msg);
    struct stat sb;
    if (status != 0 || stat(path, &sb) != 0 || sb.st_size == 0) {
        unlink(path);
        return lab_err_set(LAB_ERR_IO, "%s: gnuplot failed (status %d): %s", path, status, msg[0] ? msg : "no image written");
    }
    return LAB_OK;
}

/* ------------------------------------------------------------------------------------------------ */
/* ECDF figures */

static int lab_gnuplot_dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    size_t n, zeros, nan, pinf, ninf;
} lab_gnuplot_counts;

lab_status lab_gnuplot_ecdf(const char *root, const char *script, const char *dir, const char *stem,
                            const lab_gnuplot_ecdf_spec *sp, const lab_gnuplot_series *s, int ns)
{
    if (!lab_gnuplot_stem_ok(stem)) return lab_err_set(LAB_ERR_ARG, "figure stem '%s' is not [A-Za-z0-9._+-]", stem ? stem : "");
    /* The axis: log when every finite value is >= 0 and the positive ones span two decades or more. */
    double lo = INFINITY, hi = -INFINITY, plo = INFINITY, phi = -INFINITY;
    int negative = 0;
    lab_gnuplot_counts tot = {0};
    for (int i = 0; i < ns; ++i)
        for (size_t k = 0; k < s[i].n; ++k) {
            double v = s[i].v[k];
            tot.n++;
            if (isnan(v)) { tot.nan++; continue; }
            if (isinf(v)) { *(v > 0 ? &tot.pinf : &tot.ninf) += 1; continue; }
            if (v == 0) tot.zeros++;
            lo = fmin(lo, v);
            hi = fmax(hi, v);
            if (v < 0) negative = 1;
            if (v > 0) { plo = fmin(plo, v); phi = fmax(phi, v); }
        }
    double thr = sp->has_threshold ? sp->threshold : NAN;
    if (isfinite(thr)) {
        lo = fmin(lo, thr);
        hi = fmax(hi, thr);
        if (thr > 0) { plo = fmin(plo, thr); phi = fmax(phi, thr); }
        if (thr < 0) negative = 1;
    }
    int logx = !sp->linear && !negative && isfinite(plo) && phi / plo >= 100.0;
    double xmin, xmax, xfloor = NAN, xnan, xpinf, xninf, w;
    if (logx) {
        double a = log10(plo), b = log10(phi), span = fmax(1.0, b - a);
        xfloor = pow(10, a - 0.12 * span);
        xninf = pow(10, a - 0.24 * span);
        xnan = pow(10, b + 0.12 * span);
        xpinf = pow(10, b + 0.24 * span);
        xmin = pow(10, a - (tot.ninf ? 0.32 : tot.zeros || (isfinite(thr) && thr == 0) ? 0.2 : 0.05) * span);
        xmax = pow(10, b + (tot.pinf ? 0.32 : tot.nan ? 0.2 : 0.05) * span);
        w = 0.04 * span; /* band half-width in decades */
    } else {
        if (!isfinite(lo)) lo = 0, hi = 1;
        double span = hi - lo > 0 ? hi - lo : fmax(fabs(hi), 1.0);
        xninf = lo - 0.24 * span;
        xnan = hi + 0.12 * span;
        xpinf = hi + 0.24 * span;
        xmin = lo - (tot.ninf ? 0.32 : 0.05) * span;
        xmax = hi + (tot.pinf ? 0.32 : tot.nan ? 0.2 : 0.05) * span;
        w = 0.02 * span;
        xfloor = 0.0; /* exact zeros: a marked band at 0 on a linear axis too */
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.dat", dir, stem);
    FILE *d = fopen(path, "w");
    if (!d) return lab_err_set(LAB_ERR_IO, "%s: cannot write plot data", path);
    FILE *p = lab_gnuplot_par_open(dir, stem);
    if (!p) {
        fclose(d);
        return LAB_ERR_IO;
    }
    fprintf(d, "# %s: ECDF per series; x = value (NaN, +Inf, -Inf at their band, 0 on the floor on a log axis), "
               "y = share of the series' seeds <= x\n", stem);
    lab_gnuplot_par_str(p, "plottitle", sp->title);
    lab_gnuplot_par_str(p, "xlab", sp->xlabel);
    lab_gnuplot_par_str(p, "caption", sp->caption);
    lab_gnuplot_par_str(p, "note", sp->note ? sp->note : "");
    fprintf(p, "logx = %d\n", logx);
    lab_gnuplot_par_num(p, "xmin", xmin);
    lab_gnuplot_par_num(p, "xmax", xmax);
    lab_gnuplot_par_num(p, "bandw", w);
    lab_gnuplot_par_num(p, "xfloor", xfloor);
    lab_gnuplot_par_num(p, "xnan", xnan);
    lab_gnuplot_par_num(p, "xpinf", xpinf);
    lab_gnuplot_par_num(p, "xninf", xninf);
    fprintf(p, "n_zero = %zu\nn_nan = %zu\nn_pinf = %zu\nn_ninf = %zu\n", tot.zeros, tot.nan, tot.pinf, tot.ninf);
    fprintf(p, "has_thr = %d\n", isfinite(thr));
    lab_gnuplot_par_num(p, "thr", isfinite(thr) ? (logx && thr == 0 ? xfloor : thr) : 0);
    fprintf(p, "pass_below = %d\n", sp->pass_below);
    lab_gnuplot_par_str(p, "thrlab", sp->threshold_label);
    /* Series: blocks in the data file (index i), legend texts with their counts. */
    int nblock = 0;
    fprintf(p, "array stitle[%d]\narray scolor[%d]\narray sdash[%d]\narray sblock[%d]\nnseries = %d\n", ns > 0 ? ns : 1,
            ns > 0 ? ns : 1, ns > 0 ? ns : 1, ns > 0 ? ns : 1, ns);
    lab_status st = LAB_OK;
    for (int i = 0; i < ns && st == LAB_OK; ++i) {
        lab_gnuplot_counts c = {0};
        double *x = malloc((s[i].n ? s[i].n : 1) * sizeof *x);
        if (!x) {
            st = lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
            break;
        }
        for (size_t k = 0; k < s[i].n; ++k) {
            double v = s[i].v[k];
            c.n++;
            if (isnan(v)) c.nan++, x[k] = xnan;
            else if (isinf(v)) *(v > 0 ? &c.pinf : &c.ninf) += 1, x[k] = v > 0 ? xpinf : xninf;
            else if (v == 0) c.zeros++, x[k] = logx ? xfloor : 0.0;
            else x[k] = v;
        }
        qsort(x, s[i].n, sizeof *x, lab_gnuplot_dbl_cmp);
        char legend[512];
        int l = snprintf(legend, sizeof legend, "%s: %zu seed%s", s[i].name, c.n, c.n == 1 ? "" : "s");
        if (c.n == 0) snprintf(legend + l, sizeof legend - (size_t)l, " (no cases)");
        if (c.zeros) l += snprintf(legend + l, sizeof legend - (size_t)l, ", %zu at 0", c.zeros);
        if (c.nan) l += snprintf(legend + l, sizeof legend - (size_t)l, ", %zu NaN", c.nan);
        if (c.pinf) l += snprintf(legend + l, sizeof legend - (size_t)l, ", %zu +Inf", c.pinf);
        if (c.ninf) l += snprintf(legend + l, sizeof legend - (size_t)l, ", %zu -Inf", c.ninf);
        char var[32];
        snprintf(var, sizeof var, "stitle[%d]", i + 1);
        lab_gnuplot_par_str(p, var, legend);
        fprintf(p, "scolor[%d] = %d\nsdash[%d] = %d\nsblock[%d] = %d\n", i + 1, s[i].color > 0 ? s[i].color : i + 1,
                i + 1, s[i].dash > 0 ? s[i].dash : 1, i + 1, s[i].n ? nblock : -1);
        if (s[i].n) {
            fprintf(d, "%s# series %d: %s\n", nblock ? "\n\n" : "", i + 1, legend);
            /* A step function: the share rises at each value (ties collapse to the last share). */
            fprintf(d, "%.17g 0\n", x[0]);
            for (size_t k = 0; k < s[i].n; ++k)
                if (k + 1 == s[i].n || x[k + 1] != x[k]) fprintf(d, "%.17g %.17g\n", x[k], (double)(k + 1) / (double)s[i].n);
            nblock++;
        }
        free(x);
    }
    fprintf(p, "nblocks = %d\n", nblock);
    int bad_d = ferror(d);
    if (fclose(d) != 0 || bad_d) st = st == LAB_OK ? lab_err_set(LAB_ERR_IO, "%s: write failed", path) : st;
    lab_status st2 = lab_gnuplot_par_close(p, stem);
    if (st != LAB_OK) return st;
    if (st2 != LAB_OK) return st2;
    return lab_gnuplot_render(root, script, dir, stem, sp->caption);
}

/* ------------------------------------------------------------------------------------------------ */
/* Column data files */

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

/* Splits "<dir>/<stem><suffix>" into dir and stem; 0 when path does not end in suffix. */
static int lab_gnuplot_split(const char *path, const char *suffix, char *dir, size_t dlen, char *stem, size_t slen)
{
    size_t n = strlen(path), sl = strlen(suffix);
    if (n <= sl || strcmp(path + n - sl, suffix)) return 0;
    const char *slash = strrchr(path, '/');
    if (slash) snprintf(dir, dlen, "%.*s", (int)(slash - path), path);
    else snprintf(dir, dlen, ".");
    const char *b = slash ? slash + 1 : path;
    snprintf(stem, slen, "%.*s", (int)(strlen(b) - sl), b);
    return 1;
}

lab_status lab_gnuplot_xy(const char *root, const lab_gnuplot_spec *s)
{
    char ddir[4096], pdir[4096], dstem[256], pstem[256];
    if (!lab_gnuplot_split(s->dat, ".dat", ddir, sizeof ddir, dstem, sizeof dstem) ||
        !lab_gnuplot_split(s->png, ".png", pdir, sizeof pdir, pstem, sizeof pstem) || strcmp(ddir, pdir) ||
        strcmp(dstem, pstem))
        return lab_err_set(LAB_ERR_ARG, "%s and %s: a figure's data and image must be <dir>/<stem>.dat and .png", s->dat,
                           s->png);
    size_t points;
    int cols = lab_gnuplot_columns(s->dat, &points);
    if (cols < 2) return lab_err_set(LAB_ERR_IO, "%s: cannot read the plot data's header", s->dat);
    if (points == 0) return lab_err_set(LAB_ERR_UNSUPPORTED, "%s: no finite value to draw, %s not drawn", s->dat, s->png);
    FILE *p = lab_gnuplot_par_open(ddir, dstem);
    if (!p) return LAB_ERR_IO;
    lab_gnuplot_par_str(p, "plottitle", s->title);
    lab_gnuplot_par_str(p, "xlab", s->xlabel);
    lab_gnuplot_par_str(p, "ylab", s->ylabel);
    fprintf(p, "logx = %d\nlogy = %d\nncols = %d\n", s->logx, s->logy, cols);
    lab_status st = lab_gnuplot_par_close(p, s->dat);
    if (st != LAB_OK) return st;
    return lab_gnuplot_render(root, s->lines ? LAB_GNUPLOT_CURVES : LAB_GNUPLOT_XY, ddir, dstem, s->title);
}
