/* test_plot: the replay's figures: every variant on the figure with its counts, non-finite values in bands,
 * zeros on the floor, the criterion's bound drawn (read back from the .dat/.par files the lab writes), and an
 * --out folder full of shell and gnuplot metacharacters that is drawn into and runs nothing. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab_fs.h"
#include "lab_gnuplot.h"
#include "tests/lab_test_sh.h"

#define EXPECT_IN(text, s) cr_expect(strstr(text, s) != NULL, "expected \"%s\" in:\n%.3000s", s, text)

static char tmp[64];

static void mk(void)
{
    lab_test_tmpdir(tmp, sizeof tmp, "plot");
}

static void rm(void)
{
    lab_test_rmtree(tmp);
}

static char *slurp(const char *dir, const char *name)
{
    char path[4096], *text;
    size_t len;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_eq(lab_fs_read_all(path, &text, &len), LAB_OK, "%s", lab_err_msg());
    return text;
}

/* Runs the lab from an argv (no shell), stdout and stderr to /dev/null; returns its exit status. */
static int lab_argv(char *const argv[])
{
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        freopen("/dev/null", "w", stdout);
        freopen("/dev/null", "w", stderr);
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

Test(plot, ecdf_bands_counts_and_threshold, .init = mk, .fini = rm)
{
    const double bug[] = {NAN, NAN, INFINITY, 3e-3, 1e-2};
    const double fix[] = {0.0, 0.0, 1e-7, 2e-7};
    lab_gnuplot_series s[3] = {{"fix (fix, cpu)", fix, 4, 1, 1}, {"bug (bug, cpu)", bug, 5, 2, 1}, {"never-ran (fix, cpu)", NULL, 0, 3, 1}};
    lab_gnuplot_ecdf_spec sp = {"t", "x", "what to look for", 1, 1e-6, 1, "bound 1e-06: left passes", 0, NULL};
    lab_status st = lab_gnuplot_ecdf(".", LAB_GNUPLOT_ECDF, tmp, "fig", &sp, s, 3);
    if (lab_gnuplot_available()) cr_assert_eq(st, LAB_OK, "%s", lab_err_msg());
    else cr_assert_eq(st, LAB_ERR_UNSUPPORTED);
    char *par = slurp(tmp, "fig.par");
    EXPECT_IN(par, "stitle[1] = \"fix (fix, cpu): 4 seeds, 2 at 0\"");
    EXPECT_IN(par, "stitle[2] = \"bug (bug, cpu): 5 seeds, 2 NaN, 1 +Inf\"");
    EXPECT_IN(par, "stitle[3] = \"never-ran (fix, cpu): 0 seeds (no cases)\"");
    EXPECT_IN(par, "n_zero = 2\nn_nan = 2\nn_pinf = 1\nn_ninf = 0");
    EXPECT_IN(par, "logx = 1");   /* 1e-7 .. 1e-2: five decades */
    EXPECT_IN(par, "has_thr = 1");
    EXPECT_IN(par, "thr = 9.9999999999999995e-07");
    EXPECT_IN(par, "nblocks = 2");
    /* Every value is in the data: the bug's NaNs at the NaN band, its +Inf at the +Inf band, zeros on the floor. */
    char *dat = slurp(tmp, "fig.dat");
    double xnan = strtod(strstr(par, "xnan = ") + 7, NULL), xfloor = strtod(strstr(par, "xfloor = ") + 9, NULL);
    cr_expect(xfloor > 0 && xfloor < 1e-7, "floor %g below the smallest positive value", xfloor);
    cr_expect(xnan > 1e-2, "NaN band %g right of the largest value", xnan);
    char want[128];
    snprintf(want, sizeof want, "%.17g 0.5\n", xfloor); /* 2 of the fix's 4 seeds are 0 */
    EXPECT_IN(dat, want);
    snprintf(want, sizeof want, "%.17g 0.80000000000000004\n", xnan); /* 4 of the bug's 5 are <= the NaN band */
    EXPECT_IN(dat, want);
    char *cmd = slurp(tmp, "fig.cmd");
    EXPECT_IN(cmd, "gnuplot -c 'ecdf.gp' 'fig.dat' 'fig.png' 'fig.par'");
    if (lab_gnuplot_available()) {
        struct stat sb;
        char png[128];
        snprintf(png, sizeof png, "%s/fig.png", tmp);
        cr_expect(stat(png, &sb) == 0 && sb.st_size > 1000, "fig.png drawn");
    }
    free(par), free(dat), free(cmd);
    /* A stem that could be script or path text is refused. */
    cr_expect_eq(lab_gnuplot_ecdf(".", LAB_GNUPLOT_ECDF, tmp, "a'b", &sp, s, 1), LAB_ERR_ARG);
    cr_expect_eq(lab_gnuplot_render(".", "../x.gp", tmp, "ok", NULL), LAB_ERR_ARG);
}

/* The replay's figures in an --out folder named with quotes, $(), backquotes, spaces and a newline: every
 * figure is drawn there, and nothing the name spells runs. */
Test(plot, replay_figures_hostile_out_folder, .init = mk, .fini = rm, .timeout = 240)
{
    char out[512], marker1[256], marker2[256];
    snprintf(marker1, sizeof marker1, "%s/PWNED1", tmp);
    snprintf(marker2, sizeof marker2, "%s/PWNED2", tmp);
    snprintf(out, sizeof out, "%s/o ut'\"$(touch %s)`touch %s`;\nx' @y", tmp, marker1, marker2);
    char *abs = realpath(lab_test_bin(), NULL);
    cr_assert_not_null(abs, "%s not built", lab_test_bin());
    char *argv[] = {abs, "replay", "--incident", "0004", "--seeds", "3", "--backend", "cpu", "--out", out, "--quiet", NULL};
    int st = lab_argv(argv);
    free(abs);
    cr_assert_eq(st, 0, "replay exit %d", st);
    cr_expect(!lab_fs_exists(marker1) && !lab_fs_exists(marker2), "a command from the folder name ran");
    cr_expect(!lab_fs_exists("PWNED1") && !lab_fs_exists("PWNED2"));
    char plots[600];
    snprintf(plots, sizeof plots, "%s/plots", out);
    static const char *const stems[] = {"0004-pow-grad-nan", "0004-pow-grad-nan-max_rel_err_square",
                                        "0004-pow-grad-nan-max_rel_err_rms", "0004-pow-grad-nan-margin"};
    for (size_t i = 0; i < 4; ++i) {
        char name[256];
        snprintf(name, sizeof name, "%s.par", stems[i]);
        char *par = slurp(plots, name);
        /* Both variants on every figure, with their seed counts; the criterion drawn. */
        EXPECT_IN(par, "fix");
        EXPECT_IN(par, "bug-exp-log");
        EXPECT_IN(par, ": 3 seeds");
        EXPECT_IN(par, "has_thr = 1");
        cr_expect(strstr(par, "not drawn") == NULL, "%s: a 'not drawn' caveat", name);
        if (i == 0) {
            EXPECT_IN(par, "thrlab = \"must be 0\"");
            EXPECT_IN(par, "fix (fix, cpu): 3 seeds, 3 at 0");
        }
        if (i > 0) EXPECT_IN(par, "3 NaN"); /* the bug's errors are NaN: in the band, counted */
        if (i == 3) EXPECT_IN(par, "thr = 1\n");
        free(par);
        if (lab_gnuplot_available()) {
            snprintf(name, sizeof name, "%s/%s.png", plots, stems[i]);
            struct stat sb;
            cr_expect(stat(name, &sb) == 0 && sb.st_size > 1000, "%s drawn", name);
        }
    }
    /* The bound of 0004's x^2 gradient is POW_GRAD_TOL_SQUARE = 12 u. */
    char *par = slurp(plots, "0004-pow-grad-nan-max_rel_err_square.par");
    char want[64];
    snprintf(want, sizeof want, "thr = %.17g\n", 12.0 / 16777216.0);
    EXPECT_IN(par, want);
    free(par);
}
