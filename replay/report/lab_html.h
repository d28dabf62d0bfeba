/* lab_html: the report page (index.html) from report.json: self-contained, figures at reading size (full
 * width, text at least 12 px), grouped per incident with its one-line summary. */
#ifndef LAB_HTML_H
#define LAB_HTML_H

#include <cJSON.h>

#include "lab_err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Rows of the per-seed table shown per incident (report.json keeps every seed). */
#define LAB_HTML_SEED_ROWS 256

/* Displayed width of every figure on the page, in CSS pixels (the PNGs are drawn 1200 px wide with 14-17 pt
 * text, so text shows at 12 px or more). */
#define LAB_HTML_FIGURE_PX 1200

/* Writes <dir>/index.html from report, the tree of <dir>/report.json (lab_report: the tree it has just written,
 * never read back): one self-contained page (inline CSS, figures as base64
 * data: URIs, no external resource) with the verdict, device (table#device), build (table#build), the
 * outcome table (table#incidents, one row per incident and variant, with data-incident/data-variant
 * attributes), and per incident (section#inc-<id>): its one-line summary, the figures at full width, each
 * with its caption (plots/<stem>.caption), its metric statistics, per-seed separating metric
 * (table#seeds-<id>, at most LAB_HTML_SEED_ROWS rows) and failing cases. A figure that cannot be read is
 * named on the page instead of shown. Errors: LAB_ERR_FORMAT naming report.json when report has no array
 * "incidents", LAB_ERR_IO naming index.html if it cannot be written, LAB_ERR_NOMEM. */
lab_status lab_html_write(const char *dir, const cJSON *report);

#ifdef __cplusplus
}
#endif

#endif
