/* lab_compare: compares two report folders (lab report): outcomes that changed per incident and variant,
 * metrics that moved beyond a factor, incidents and variants new or missing. */
#ifndef LAB_COMPARE_H
#define LAB_COMPARE_H

#include <stddef.h>
#include <stdio.h>

#include "lab_err.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    double factor;   /* a metric statistic "moved" when B/A (by magnitude) is above factor or below 1/factor;
                        must be > 1 (lab compare's default: 10) */
    int strict;      /* 1: metric moves and missing incidents/variants also fail the comparison */
} lab_compare_opts;

typedef struct {
    size_t rows;         /* (incident, variant) pairs present in both reports */
    size_t regressions;  /* a fix passing on fewer seeds, a bug detected on fewer (beyond noise where the
                            detection is stochastic), a variant that met its role and no longer does */
    size_t improvements; /* the reverse */
    size_t changes;      /* other outcome changes: counts moved between FAIL/CRASH/HANG, a variant now
                            skipped or now run, a role that changed, a drop within noise */
    size_t moves;        /* metric statistics (median, max, non-finite count) that moved beyond the factor */
    size_t added;        /* incidents and variants only in B */
    size_t missing;      /* incidents and variants only in A */
    int failed;          /* regressions > 0, or with strict: moves or missing too */
} lab_compare_result;

/* A metric statistic moved beyond factor between a and b: one is zero and the other not, their signs
 * differ, or |b|/|a| is above factor or below 1/factor. Equal values never move. */
int lab_compare_moved(double a, double b, double factor);

/* Reads <dir_a>/report.json and <dir_b>/report.json (schema LAB_REPORT_SCHEMA), prints to out a header
 * naming both reports (backend, device, commit, cases), warnings when one GPU ran native code and the other JIT-compiled
 * PTX, when other CUDA toolkits built them, and when their kernels' and incidents' sources differ (build.sources_digest:
 * the older report, a baseline to remake, measures other kernels; warnings never change the exit status), a table with one row per (incident, variant)
 * (A's outcomes, B's outcomes, what changed), the metric statistics that moved beyond o->factor, the
 * incidents and variants new or missing, and a closing verdict line; fills *res. Returns LAB_ERR_IO
 * naming the file that cannot be read, LAB_ERR_FORMAT naming the file and the field that is malformed,
 * LAB_ERR_ARG for a factor not above 1; nothing is printed then. */
lab_status lab_compare_reports(const char *dir_a, const char *dir_b, const lab_compare_opts *o, FILE *out,
                               lab_compare_result *res);

#ifdef __cplusplus
}
#endif

#endif
