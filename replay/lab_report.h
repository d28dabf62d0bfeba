/* lab_report: turns a replay folder into a self-contained device report: report.json (device, build,
 * per-incident outcome tables, per-seed separating metrics) and index.html (all of it, plots inline). */
#ifndef LAB_REPORT_H
#define LAB_REPORT_H

#include <cJSON.h>
#include <time.h>

#include "lab_err.h"
#include "lab_incident.h"

#ifdef __cplusplus
extern "C" {
#endif

/* report.json's "schema" value; lab compare refuses other values. */
#define LAB_REPORT_SCHEMA "lab-report/1"

/* Rows of the per-seed table shown in index.html per incident (report.json keeps every seed). */
#define LAB_REPORT_HTML_SEED_ROWS 256

typedef struct {
    time_t since;         /* the replay started at this time: results older than it are refused and
                             plots older than it are left out (stale files of an earlier run); 0: no check */
    const char *command;  /* the command line that made the report, recorded as is (NULL: none) */
    int query_device;     /* 1: describe this machine (and its GPU for backend cuda); 0: leave "device" out
                             (tests, or a report rebuilt elsewhere) */
} lab_report_opts;

/* This machine as a JSON object: "host" (CPU model, logical CPUs, CPUs usable by this process, memory,
 * kernel from /proc and uname; unknown facts are null) and, when backend is cuda, "gpu": name, compute
 * capability, multiprocessors, memory, driver and runtime versions through lab_cuda_device_info. The GPU
 * is queried in a child process under a 60 s watchdog, so the caller never holds a CUDA context (children
 * it forks later can still use the GPU). Without a usable GPU, "gpu" is {"available": false, "reason":
 * "..."}. Returns NULL only when out of memory. */
cJSON *lab_report_device_json(lab_backend backend);

/* The build as a JSON object: git commit (and "dirty" when the tree had changes), C compiler and its
 * version, CFLAGS, whether CUDA was compiled in, nvcc's version, NVCCFLAGS and CUDA_ARCH (from the header
 * mk/buildinfo.sh generates), and when the lab binary was linked (its mtime). NULL when out of memory. */
cJSON *lab_report_build_json(void);

/* Reads <dir>/summary.json and <dir>/results.jsonl as lab_replay_run writes them, and writes
 * <dir>/report.json (schema LAB_REPORT_SCHEMA: created, command, device, build, summary, incidents with
 * their variants' outcome counts, verdicts and metric statistics (n, non-finite count, min, median, max
 * over seeds), per-seed values of the separating and drift metrics (6 significant digits), up to 20 failing cases with their
 * replay commands, and the plots) and then <dir>/index.html (lab_report_html). Errors: LAB_ERR_IO naming
 * the file that cannot be read or written (also when it is older than opts->since), LAB_ERR_FORMAT naming
 * the file, line and field that is malformed. */
lab_status lab_report_write(const char *dir, const lab_report_opts *opts);

/* Writes <dir>/index.html from <dir>/report.json: one self-contained page (inline CSS, plots as base64
 * data: URIs, no external resource) with the verdict, device (table#device), build (table#build), the
 * outcome table (table#incidents, one row per incident and variant, with data-incident/data-variant
 * attributes), and per incident its metric statistics, per-seed separating metric (table#seeds-<id>,
 * at most LAB_REPORT_HTML_SEED_ROWS rows), failing cases and plots. A plot file that cannot be read is
 * named on the page instead of shown. Errors: LAB_ERR_IO / LAB_ERR_FORMAT naming report.json, LAB_ERR_IO
 * naming index.html if it cannot be written. */
lab_status lab_report_html(const char *dir);

/* For a report made where gnuplot is missing (a bare GPU machine): renders <dir>/plots from
 * <dir>/results.jsonl here (lab_plot_results), lists them in report.json and rewrites index.html. The
 * device and build stay those of the machine that ran the replay; root is the repository root (plot
 * scripts). Errors as lab_plot_results and
 * lab_report_html; progress lines go to log (may be NULL). */
lab_status lab_report_replot(const char *dir, const char *root, FILE *log);

/* Reads and parses a whole JSON file. LAB_ERR_IO names the path when it cannot be read, LAB_ERR_FORMAT
 * names it with the position of a syntax error. The caller frees *out with cJSON_Delete. Shared with
 * lab_compare. */
lab_status lab_report_read_json(const char *path, cJSON **out);

#ifdef __cplusplus
}
#endif

#endif
