/* lab_resread: the one reader of results.jsonl (the writer is lab_results): case records back in memory, all at once
 * (lab_resread_load) or one at a time (lab_resread_each: what a set of any size is read through). */
#ifndef LAB_RESREAD_H
#define LAB_RESREAD_H

#include <stddef.h>
#include <stdint.h>

#include "lab_err.h"
#include "lab_incident.h"
#include "lab_results.h"
#include "lab_verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Metrics kept per record: more than a case can record (LAB_MAX_METRICS), so a file written by another
 * build reads back whole. */
#define LAB_RESREAD_MAX_METRICS 32

/* One line of results.jsonl. Strings absent from the line are "". */
typedef struct {
    char incident[64];
    char variant[64];
    char role[8];                /* "fix" / "bug" ("" when absent) */
    uint64_t seed;
    lab_backend backend;         /* cpu when absent or unknown */
    int outcome;                 /* lab_outcome (lab_isolate.h); LAB_OUT_ERROR when absent or unknown */
    int ok;                      /* 1 met its role, 0 did not, -1 neither (SKIP) or absent */
    double wall_s;               /* NaN when absent */
    char detail[LAB_DETAIL_MAX];  /* fitted at a word boundary when the file's is longer (lab_text_fit) */
    char error[240];
    char replay[512];
    int signal;                  /* CRASH: the signal that ended it; 0 when absent */
    int skip_class;              /* SKIP: its lab_skip_class; -1 when absent or unknown */
    double cpu_s;                /* NaN when absent */
    double done_s;               /* 0 when absent */
    int worker;                  /* 0 when absent */
    char first_run[300];         /* a case run again: its first run; "" when absent */
    int n_metrics;
    struct {
        char name[LAB_METRIC_NAME];
        double value;            /* non-finite values come back as NaN, +Inf or -Inf, as recorded */
    } metrics[LAB_RESREAD_MAX_METRICS];
    const lab_incident *inc;     /* the incident in this build, NULL when this build lacks it */
    const lab_variant *var;      /* likewise the variant */
} lab_resread_rec;

typedef struct {
    lab_resread_rec *recs;       /* in file order */
    size_t n;
} lab_resread_set;

/* Reads every case record of the results.jsonl at path into *out (lab_resread_free releases it). Each
 * non-empty line must be a JSON object with a string "incident", a string "variant" and a number "seed";
 * otherwise LAB_ERR_FORMAT naming path:line and what is missing. LAB_ERR_IO naming the path when it cannot
 * be read, LAB_ERR_NOMEM when out of memory. *out is empty on error. */
lab_status lab_resread_load(const char *path, lab_resread_set *out);

/* One line of results.jsonl (text[0..len), without its newline) into *r, checked as lab_resread_load checks a line:
 * LAB_ERR_FORMAT saying what is wrong ("not valid JSON", "no string 'incident'", ...), without a place (the caller
 * names the file and line). */
lab_status lab_resread_line(const char *text, size_t len, lab_resread_rec *r);

/* The case record r was written from (lab_results_jsonl_line), back: incident and variant this build's (r->inc,
 * r->var), seed, backend, the outcome with its signal, skip class, times, worker, error, detail, metrics (at most
 * LAB_MAX_METRICS) and first run, and the criterion's verdict its outcome implies (PASS passed, FAIL failed), so that
 * lab_results_jsonl_line writes the same line of it again. LAB_ERR_NOTFOUND naming the incident and variant when this
 * build lacks them. */
lab_status lab_resread_to_record(const lab_resread_rec *r, lab_case_record *out);

/* Streams the case records of the results.jsonl at path: fn(ctx, r) for each in file order, one record in memory at
 * a time (r is valid during the call only), checked as lab_resread_load checks them. Stops at the first status of fn
 * other than LAB_OK (returned), at a malformed line (LAB_ERR_FORMAT naming path:line), or at an interrupt
 * (lab_isolate_interrupted, looked at every 1024 lines and before the first: LAB_ERR_IO "interrupted while reading").
 * LAB_ERR_IO naming the path when it cannot be read. Memory: one line and one record. */
typedef lab_status (*lab_resread_fn)(void *ctx, const lab_resread_rec *r);
lab_status lab_resread_each(const char *path, lab_resread_fn fn, void *ctx);

/* The non-empty lines of the results.jsonl at path (the case records it holds, unparsed) into *n; LAB_ERR_IO naming the
 * path, or on an interrupt as lab_resread_each. */
lab_status lab_resread_count(const char *path, size_t *n);

/* Readers of more case records (or seeds) than this draw their figures and per-seed tables from a stated sample:
 * LAB_RESREAD_SAMPLE_AT (65536, the windowed replay's LAB_REPLAY_PLOT_MAX), or $LAB_SAMPLE_AT (a positive count) in
 * tests. */
#define LAB_RESREAD_SAMPLE_AT 65536
size_t lab_resread_sample_at(void);

/* The case records of a results.jsonl that `lab plots` draws: every record when it holds at most `most` (every one
 * then, as lab_resread_load), else every step-th record of each (incident, variant) in file order, step =
 * ceil(total / most): the sample a windowed replay draws its plots from (lab_window), at most about `most` records in
 * memory. *total receives the records in the file, *step the step (1: all). Errors as lab_resread_each. */
lab_status lab_resread_load_sample(const char *path, size_t most, lab_resread_set *out, size_t *total, size_t *step);

/* The records of a replay still in memory as lab_resread_load would read them back from the results.jsonl that
 * lab_results_write_jsonl writes of them (cmd: how their replay commands are spelled), without the file: the
 * same fields, strings cut to the same sizes, each record's incident and variant those it ran. *out is empty on
 * error (LAB_ERR_NOMEM). */
lab_status lab_resread_from_records(const lab_case_record *recs, size_t n, const lab_results_cmd *cmd, lab_resread_set *out);

/* Releases a set (and empties it); an empty set is fine. */
void lab_resread_free(lab_resread_set *s);

/* The value of metric name in r: 1 with *v set when recorded finite, 2 with *v NaN/+Inf/-Inf when recorded
 * non-finite, 0 (and *v NaN) when the record has no such metric. */
int lab_resread_metric(const lab_resread_rec *r, const char *name, double *v);

/* The record as an incident's figures() sees it (lab_figure_case): variant, seed, backend, outcome,
 * verdict, detail and the first LAB_MAX_METRICS metrics. r->var must be set (NULL: returns 0). */
int lab_resread_figure_case(const lab_resread_rec *r, lab_figure_case *out);

#ifdef __cplusplus
}
#endif

#endif
