/* lab_html: the report page (index.html) from report.json: self-contained, figures at reading size (full
 * width, text at least 12 px), grouped per incident with its one-line summary. */
#include "lab_html.h"

#include <math.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_fs.h"

#define LAB_HTML_MAX_PLOT_BYTES (8u << 20)
#define LAB_HTML_STR(x) #x
#define LAB_HTML_XSTR(x) LAB_HTML_STR(x)

static const char *lab_html_str(const cJSON *o, const char *key)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(s) ? s->valuestring : "";
}

/* ------------------------------------------------------------------------------------------------ */
/* HTML */

/* Appends a string literal (its length known at compile time). */
#define LAB_HTML_LIT(b, lit) lab_html_put((b), lit, sizeof(lit) - 1)

typedef struct {
    char *buf;
    size_t len, cap;
    int oom;
} lab_html_buf;

static void lab_html_put(lab_html_buf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (b->len + n + 1 > cap) cap *= 2;
        char *nb = realloc(b->buf, cap);
        if (!nb) {
            b->oom = 1;
            return;
        }
        b->buf = nb;
        b->cap = cap;
    }
    memcpy(b->buf + b->len, s, n);
    b->len += n;
    b->buf[b->len] = '\0';
}

static void lab_html_printf(lab_html_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void lab_html_printf(lab_html_buf *b, const char *fmt, ...)
{
    char small[1024];
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (w < 0) return;
    if ((size_t)w < sizeof small) {
        lab_html_put(b, small, (size_t)w);
        return;
    }
    char *big = malloc((size_t)w + 1);
    if (!big) {
        b->oom = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)w + 1, fmt, ap);
    va_end(ap);
    lab_html_put(b, big, (size_t)w);
    free(big);
}

/* Appends s HTML-escaped (text and attribute values alike); control characters are dropped. */
static void lab_html_esc(lab_html_buf *b, const char *s)
{
    for (; s && *s; ++s) {
        switch (*s) {
        case '&': LAB_HTML_LIT(b, "&amp;"); break;
        case '<': LAB_HTML_LIT(b, "&lt;"); break;
        case '>': LAB_HTML_LIT(b, "&gt;"); break;
        case '"': LAB_HTML_LIT(b, "&quot;"); break;
        case '\'': LAB_HTML_LIT(b, "&#39;"); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\n' || *s == '\t') lab_html_put(b, s, 1);
        }
    }
}

/* A JSON scalar as display text: strings as is, numbers with %.6g (integers exactly), booleans, "-". */
static void lab_html_scalar(const cJSON *x, char *buf, size_t len)
{
    if (cJSON_IsString(x)) snprintf(buf, len, "%s", x->valuestring);
    else if (cJSON_IsNumber(x)) {
        double v = x->valuedouble;
        if (v == floor(v) && fabs(v) < 1e15) snprintf(buf, len, "%.0f", v);
        else snprintf(buf, len, "%.6g", v);
    } else if (cJSON_IsBool(x)) snprintf(buf, len, "%s", cJSON_IsTrue(x) ? "yes" : "no");
    else snprintf(buf, len, "-");
}

/* A two-column table of an object's scalar members (nested objects are flattened as "key.sub"). */
static void lab_html_kv_rows(lab_html_buf *b, const cJSON *o, const char *prefix)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, o) {
        char key[256], val[4096];
        snprintf(key, sizeof key, "%s%s%s", prefix, *prefix ? "." : "", x->string ? x->string : "");
        if (cJSON_IsObject(x)) {
            lab_html_kv_rows(b, x, key);
            continue;
        }
        if (x->string && strstr(x->string, "bytes") && cJSON_IsNumber(x))
            snprintf(val, sizeof val, "%.0f (%.1f GiB)", x->valuedouble, x->valuedouble / (1024.0 * 1024 * 1024));
        else lab_html_scalar(x, val, sizeof val);
        LAB_HTML_LIT(b, "<tr><th>");
        lab_html_esc(b, key);
        LAB_HTML_LIT(b, "</th><td>");
        lab_html_esc(b, val);
        LAB_HTML_LIT(b, "</td></tr>\n");
    }
}

/* Appends <img> with the PNG at dir/rel as a base64 data: URI, or a note naming the file. */
static void lab_html_img(lab_html_buf *b, const char *dir, const char *rel)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    char *data = NULL;
    size_t len = 0;
    lab_status st = lab_fs_read_all(path, &data, &len);
    LAB_HTML_LIT(b, "<figure>");
    if (st != LAB_OK || len > LAB_HTML_MAX_PLOT_BYTES || len == 0) {
        LAB_HTML_LIT(b, "<p class=\"bad\">plot not embedded: ");
        lab_html_esc(b, st != LAB_OK ? lab_err_msg() : len ? "larger than 8 MiB" : "empty file");
        LAB_HTML_LIT(b, "</p>");
    } else {
        size_t enc_len = 4 * ((len + 2) / 3) + 1;
        unsigned char *enc = malloc(enc_len);
        if (!enc) b->oom = 1;
        else {
            int w = EVP_EncodeBlock(enc, (const unsigned char *)data, (int)len);
            LAB_HTML_LIT(b, "<img alt=\"");
            lab_html_esc(b, rel);
            LAB_HTML_LIT(b, "\" src=\"data:image/");
            if (strlen(rel) > 4 && !strcmp(rel + strlen(rel) - 4, ".svg")) LAB_HTML_LIT(b, "svg+xml;base64,");
            else LAB_HTML_LIT(b, "png;base64,");
            lab_html_put(b, (const char *)enc, w > 0 ? (size_t)w : 0);
            LAB_HTML_LIT(b, "\">");
            free(enc);
        }
    }
    /* The figure's one-line caption, written beside it (plots/<stem>.caption); else its file name. */
    char cap_path[8300];
    size_t rl = strlen(rel);
    snprintf(cap_path, sizeof cap_path, "%s/%.*s.caption", dir, (int)(rl > 4 ? rl - 4 : rl), rel);
    char *cap = NULL;
    size_t cap_len = 0;
    if (lab_fs_read_all(cap_path, &cap, &cap_len) != LAB_OK) {
        lab_err_clear();
        cap = NULL;
    }
    LAB_HTML_LIT(b, "<figcaption>");
    if (cap && cap_len > 0) {
        lab_html_esc(b, cap);
        LAB_HTML_LIT(b, " <small>(");
        lab_html_esc(b, rel);
        LAB_HTML_LIT(b, ")</small>");
    } else {
        lab_html_esc(b, rel);
    }
    LAB_HTML_LIT(b, "</figcaption></figure>\n");
    free(cap);
    free(data);
}

/* The CSS class of an outcome cell. */
static const char *lab_html_outcome_class(const char *o)
{
    if (!o) return "none";
    if (!strcmp(o, "PASS")) return "pass";
    if (!strcmp(o, "SKIP")) return "skip";
    if (!strcmp(o, "ERROR")) return "error";
    return "fail"; /* FAIL, CRASH, HANG */
}

/* Reading size: 16 px text, figures shown at their drawn width (LAB_HTML_FIGURE_PX, 1200 px), one per row. */
static const char lab_html_css[] =
    "body{font-family:system-ui,sans-serif;font-size:16px;margin:1.5em auto;max-width:1240px;padding:0 1em;color:#222}"
    "h1{margin-bottom:.2em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}"
    "table{border-collapse:collapse;margin:.6em 0;font-size:15px}"
    "th,td{border:1px solid #ccc;padding:.25em .55em;text-align:left;vertical-align:top}"
    "th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}"
    "tr.ok td.verdict{color:#176b1d;font-weight:600}tr.bad td.verdict,.bad{color:#b00020;font-weight:600}"
    ".verdict-banner{padding:.5em .8em;border-radius:4px;font-weight:600}"
    ".verdict-banner.ok{background:#e3f4e4;color:#176b1d}.verdict-banner.bad{background:#fde7ea;color:#b00020}"
    "td.pass{background:#eef8ee}td.fail{background:#fdeeee}td.skip{background:#f4f4f4;color:#777}"
    "td.error{background:#f9e0a8}code{font-size:.9em}p.summary{font-size:17px;color:#333}"
    "figure{display:block;margin:1em 0 1.6em 0}"
    "figure img{display:block;width:" LAB_HTML_XSTR(LAB_HTML_FIGURE_PX) "px;max-width:none;height:auto;border:1px solid #ddd}"
    "figcaption{font-size:16px;color:#333;margin-top:.3em}"
    ".scroll{max-height:28em;overflow:auto;display:inline-block}";

/* The first sentence of s (up to ". " or the end) into buf: the story's one-line summary. */
static void lab_html_first_sentence(const char *s, char *buf, size_t len)
{
    const char *e = strstr(s, ". ");
    size_t n = e ? (size_t)(e - s) + 1 : strlen(s);
    snprintf(buf, len, "%.*s", (int)n, s);
}

/* One incident's section: summary, figures, metric statistics, per-seed separating metric, failures. */
static void lab_html_incident(lab_html_buf *b, const char *dir, const cJSON *inc)
{
    const char *id = lab_html_str(inc, "id");
    const char *pm = lab_html_str(inc, "plot_metric");
    const cJSON *vars = cJSON_GetObjectItemCaseSensitive(inc, "variants"), *v;
    LAB_HTML_LIT(b, "<section id=\"inc-");
    lab_html_esc(b, id);
    LAB_HTML_LIT(b, "\"><h2>");
    lab_html_esc(b, id);
    LAB_HTML_LIT(b, ": ");
    lab_html_esc(b, lab_html_str(inc, "title"));
    LAB_HTML_LIT(b, "</h2>\n");
    if (*lab_html_str(inc, "summary")) {
        char line[1024];
        lab_html_first_sentence(lab_html_str(inc, "summary"), line, sizeof line);
        LAB_HTML_LIT(b, "<p class=\"summary\">");
        lab_html_esc(b, line);
        LAB_HTML_LIT(b, "</p>\n");
    }

    /* Figures first, at reading size: what a reader looks at first. */
    const cJSON *plots = cJSON_GetObjectItemCaseSensitive(inc, "plots"), *p;
    if (cJSON_GetArraySize(plots) > 0) {
        LAB_HTML_LIT(b, "<h3>Figures</h3>\n<div class=\"plots\">\n");
        cJSON_ArrayForEach(p, plots)
            if (cJSON_IsString(p)) lab_html_img(b, dir, p->valuestring);
        LAB_HTML_LIT(b, "</div>\n");
    }

    /* Metric statistics per variant. */
    LAB_HTML_LIT(b, "<h3>Metrics over seeds</h3>\n<table class=\"metrics\"><thead><tr><th>variant</th><th>metric</th>"
                      "<th>seeds</th><th>non-finite</th><th>min</th><th>median</th><th>max</th></tr></thead><tbody>\n");
    cJSON_ArrayForEach(v, vars) {
        const cJSON *m;
        cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(v, "metrics")) {
            char n[64], nf[64], lo[64], med[64], hi[64];
            lab_html_scalar(cJSON_GetObjectItemCaseSensitive(m, "n"), n, sizeof n);
            lab_html_scalar(cJSON_GetObjectItemCaseSensitive(m, "nonfinite"), nf, sizeof nf);
            lab_html_scalar(cJSON_GetObjectItemCaseSensitive(m, "min"), lo, sizeof lo);
            lab_html_scalar(cJSON_GetObjectItemCaseSensitive(m, "median"), med, sizeof med);
            lab_html_scalar(cJSON_GetObjectItemCaseSensitive(m, "max"), hi, sizeof hi);
            LAB_HTML_LIT(b, "<tr><td>");
            lab_html_esc(b, lab_html_str(v, "name"));
            LAB_HTML_LIT(b, "</td><td>");
            lab_html_esc(b, m->string);
            lab_html_printf(b, "</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td>"
                                 "<td class=\"num\">%s</td><td class=\"num\">%s</td></tr>\n", n, nf, lo, med, hi);
        }
    }
    LAB_HTML_LIT(b, "</tbody></table>\n");

    /* The separating metric per seed. */
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(inc, "per_seed");
    const cJSON *seeds = cJSON_GetObjectItemCaseSensitive(ps, "seeds");
    const cJSON *pv = cJSON_GetObjectItemCaseSensitive(ps, "variants");
    int ns = cJSON_GetArraySize(seeds);
    if (*pm && ns > 0) {
        LAB_HTML_LIT(b, "<h3>Separating metric per seed: <code>");
        lab_html_esc(b, pm);
        LAB_HTML_LIT(b, "</code></h3>\n");
        const cJSON *sample = cJSON_GetObjectItemCaseSensitive(ps, "sample"); /* more seeds than lab_resread_sample_at() */
        if (sample)
        {
            const cJSON *every = cJSON_GetObjectItemCaseSensitive(sample, "every"), *of = cJSON_GetObjectItemCaseSensitive(sample, "of");
            lab_html_printf(b, "<p>A sample: every %.0f-th of %.0f seeds, %d in report.json (results.jsonl has them all); the "
                                 "first %d here.</p>\n", cJSON_IsNumber(every) ? every->valuedouble : 0.0,
                            cJSON_IsNumber(of) ? of->valuedouble : 0.0, ns, ns < LAB_HTML_SEED_ROWS ? ns : LAB_HTML_SEED_ROWS);
        }
        else if (ns > LAB_HTML_SEED_ROWS)
            lab_html_printf(b, "<p>The first %d of %d seeds; report.json has them all.</p>\n", LAB_HTML_SEED_ROWS, ns);
        LAB_HTML_LIT(b, "<div class=\"scroll\"><table class=\"seeds\" id=\"seeds-");
        lab_html_esc(b, id);
        LAB_HTML_LIT(b, "\"><thead><tr><th>seed</th>");
        cJSON_ArrayForEach(v, vars) {
            LAB_HTML_LIT(b, "<th>");
            lab_html_esc(b, lab_html_str(v, "name"));
            LAB_HTML_LIT(b, " (");
            lab_html_esc(b, lab_html_str(v, "role"));
            LAB_HTML_LIT(b, ")</th>");
        }
        LAB_HTML_LIT(b, "</tr></thead><tbody>\n");
        for (int s = 0; s < ns && s < LAB_HTML_SEED_ROWS; ++s) {
            char seed[64];
            lab_html_scalar(cJSON_GetArrayItem(seeds, s), seed, sizeof seed);
            lab_html_printf(b, "<tr><td class=\"num\">%s</td>", seed);
            cJSON_ArrayForEach(v, vars) {
                const cJSON *col = cJSON_GetObjectItemCaseSensitive(pv, lab_html_str(v, "name"));
                const cJSON *oc = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(col, "outcome"), s);
                const cJSON *val = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(col, pm), s);
                char vs[64];
                lab_html_scalar(val, vs, sizeof vs);
                const char *ocs = cJSON_IsString(oc) ? oc->valuestring : NULL;
                lab_html_printf(b, "<td class=\"num %s\">", lab_html_outcome_class(ocs));
                lab_html_esc(b, vs);
                if (ocs) {
                    LAB_HTML_LIT(b, " <small>");
                    lab_html_esc(b, ocs);
                    LAB_HTML_LIT(b, "</small>");
                }
                LAB_HTML_LIT(b, "</td>");
            }
            LAB_HTML_LIT(b, "</tr>\n");
        }
        LAB_HTML_LIT(b, "</tbody></table></div>\n");
    }

    /* Cases that missed their role. */
    const cJSON *fails = cJSON_GetObjectItemCaseSensitive(inc, "failures"), *f;
    const cJSON *ftotal = cJSON_GetObjectItemCaseSensitive(inc, "failures_total");
    if (cJSON_GetArraySize(fails) > 0) {
        lab_html_printf(b, "<h3 class=\"bad\">Cases that missed their role (%.0f)</h3>\n<ul>\n",
                          cJSON_IsNumber(ftotal) ? ftotal->valuedouble : (double)cJSON_GetArraySize(fails));
        cJSON_ArrayForEach(f, fails) {
            char seed[64];
            lab_html_scalar(cJSON_GetObjectItemCaseSensitive(f, "seed"), seed, sizeof seed);
            LAB_HTML_LIT(b, "<li>");
            lab_html_esc(b, lab_html_str(f, "variant"));
            lab_html_printf(b, " seed %s: ", seed);
            lab_html_esc(b, lab_html_str(f, "outcome"));
            LAB_HTML_LIT(b, " ");
            lab_html_esc(b, lab_html_str(f, "detail"));
            LAB_HTML_LIT(b, " ");
            lab_html_esc(b, lab_html_str(f, "error"));
            LAB_HTML_LIT(b, "<br><code>");
            lab_html_esc(b, lab_html_str(f, "replay"));
            LAB_HTML_LIT(b, "</code></li>\n");
        }
        LAB_HTML_LIT(b, "</ul>\n");
    }

    LAB_HTML_LIT(b, "</section>\n");
}

lab_status lab_html_write(const char *dir, const cJSON *rep)
{
    char html_path[4096];
    snprintf(html_path, sizeof html_path, "%s/index.html", dir);
    const cJSON *incs = cJSON_GetObjectItemCaseSensitive(rep, "incidents");
    if (!cJSON_IsArray(incs)) return lab_err_set(LAB_ERR_FORMAT, "%s/report.json: no array 'incidents'", dir);
    const cJSON *sum = cJSON_GetObjectItemCaseSensitive(rep, "summary");
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(rep, "device");
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(dev, "gpu");
    const cJSON *host = cJSON_GetObjectItemCaseSensitive(dev, "host");
    const char *backend = lab_html_str(sum, "backend");
    const char *devname = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(gpu, "available")) ? lab_html_str(gpu, "name")
                          : gpu                                                               ? "no usable GPU"
                          : *lab_html_str(host, "cpu_model")                               ? lab_html_str(host, "cpu_model")
                                                                                           : "unknown device";
    int ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sum, "ok"));

    lab_html_buf b = {0};
    LAB_HTML_LIT(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>Incident lab report: ");
    lab_html_esc(&b, backend);
    LAB_HTML_LIT(&b, " on ");
    lab_html_esc(&b, devname);
    lab_html_printf(&b, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>Incident lab report</h1>\n", lab_html_css);
    lab_html_printf(&b, "<p id=\"verdict\" class=\"verdict-banner %s\">%s</p>\n", ok ? "ok" : "bad",
                      ok ? "Every fix holds and every bug is detected."
                         : "NOT OK: a fix failed, a bug was not detected, or a case had an ERROR.");
    char cases[64], wall[64];
    lab_html_scalar(cJSON_GetObjectItemCaseSensitive(sum, "cases"), cases, sizeof cases);
    const cJSON *wall_s = cJSON_GetObjectItemCaseSensitive(sum, "wall_s");
    if (cJSON_IsNumber(wall_s)) snprintf(wall, sizeof wall, "%.2f", wall_s->valuedouble);
    else snprintf(wall, sizeof wall, "?");
    lab_html_printf(&b, "<p>%s cases on backend <b>", cases);
    lab_html_esc(&b, backend);
    LAB_HTML_LIT(&b, "</b> (");
    lab_html_esc(&b, devname);
    lab_html_printf(&b, ") in %s s; report created ", wall);
    lab_html_esc(&b, lab_html_str(rep, "created"));
    if (*lab_html_str(rep, "command")) {
        LAB_HTML_LIT(&b, " by <code>");
        lab_html_esc(&b, lab_html_str(rep, "command"));
        LAB_HTML_LIT(&b, "</code>");
    }
    LAB_HTML_LIT(&b, ".</p>\n");
    /* What code the GPU ran (device.gpu.code, lab_arch.h): native or JIT-compiled, the architectures carried, toolkit,
     * driver, the JIT warm-up. */
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(gpu, "code");
    if (cJSON_IsObject(code)) {
        const char *runs = lab_html_str(code, "runs");
        LAB_HTML_LIT(&b, "<p id=\"gpu-code\">GPU code: <b>");
        lab_html_esc(&b, !strcmp(runs, "jit") ? "PTX JIT-compiled by the driver" : !strcmp(runs, "native") ? "native" : runs);
        LAB_HTML_LIT(&b, "</b> (");
        lab_html_esc(&b, lab_html_str(code, "from"));
        LAB_HTML_LIT(&b, " of the carried ");
        lab_html_esc(&b, lab_html_str(code, "carried"));
        LAB_HTML_LIT(&b, "); CUDA toolkit ");
        lab_html_esc(&b, *lab_html_str(code, "toolkit") ? lab_html_str(code, "toolkit") : "?");
        LAB_HTML_LIT(&b, ", driver ");
        lab_html_esc(&b, *lab_html_str(code, "driver") ? lab_html_str(code, "driver") : "?");
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(code, "jit_warmup_s");
        if (cJSON_IsNumber(w)) lab_html_printf(&b, "; JIT warm-up before the workers %.1f s", w->valuedouble);
        LAB_HTML_LIT(&b, ".</p>\n");
    }

    LAB_HTML_LIT(&b, "<h2>Device</h2>\n<table id=\"device\"><tbody>\n");
    if (dev) lab_html_kv_rows(&b, dev, "");
    else LAB_HTML_LIT(&b, "<tr><td>not recorded</td></tr>\n");
    LAB_HTML_LIT(&b, "</tbody></table>\n<h2>Build</h2>\n<table id=\"build\"><tbody>\n");
    lab_html_kv_rows(&b, cJSON_GetObjectItemCaseSensitive(rep, "build"), "");
    LAB_HTML_LIT(&b, "</tbody></table>\n");

    /* Outcome table: one row per incident and variant. */
    LAB_HTML_LIT(&b, "<h2>Outcomes</h2>\n<table id=\"incidents\"><thead><tr><th>incident</th><th>variant</th><th>role</th>"
                       "<th>seeds</th>");
    static const char *const outs[] = {"PASS", "FAIL", "CRASH", "HANG", "SKIP", "ERROR"};
    for (size_t k = 0; k < 6; ++k) lab_html_printf(&b, "<th>%s</th>", outs[k]);
    LAB_HTML_LIT(&b, "<th>detection (95% CI)</th><th>verdict</th></tr></thead><tbody>\n");
    const cJSON *inc;
    cJSON_ArrayForEach(inc, incs) {
        const char *id = lab_html_str(inc, "id");
        const cJSON *v;
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(inc, "variants")) {
            int vok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "ok"));
            char seeds[64];
            lab_html_scalar(cJSON_GetObjectItemCaseSensitive(v, "seeds"), seeds, sizeof seeds);
            lab_html_printf(&b, "<tr class=\"%s\" data-incident=\"", vok ? "ok" : "bad");
            lab_html_esc(&b, id);
            LAB_HTML_LIT(&b, "\" data-variant=\"");
            lab_html_esc(&b, lab_html_str(v, "name"));
            LAB_HTML_LIT(&b, "\"><td><a href=\"#inc-");
            lab_html_esc(&b, id);
            LAB_HTML_LIT(&b, "\">");
            lab_html_esc(&b, id);
            LAB_HTML_LIT(&b, "</a></td><td>");
            lab_html_esc(&b, lab_html_str(v, "name"));
            LAB_HTML_LIT(&b, "</td><td>");
            lab_html_esc(&b, lab_html_str(v, "role"));
            lab_html_printf(&b, "</td><td class=\"num\">%s</td>", seeds);
            const cJSON *counts = cJSON_GetObjectItemCaseSensitive(v, "counts");
            for (size_t k = 0; k < 6; ++k) {
                char c[64];
                lab_html_scalar(cJSON_GetObjectItemCaseSensitive(counts, outs[k]), c, sizeof c);
                lab_html_printf(&b, "<td class=\"num\">%s</td>", c);
            }
            const cJSON *rate = cJSON_GetObjectItemCaseSensitive(v, "detect_rate");
            const cJSON *ci = cJSON_GetObjectItemCaseSensitive(v, "detect_ci95");
            if (cJSON_IsNumber(rate) && cJSON_GetArraySize(ci) == 2)
                lab_html_printf(&b, "<td class=\"num\">%.3f (%.3f-%.3f)</td>", rate->valuedouble,
                                  cJSON_GetArrayItem(ci, 0)->valuedouble, cJSON_GetArrayItem(ci, 1)->valuedouble);
            else LAB_HTML_LIT(&b, "<td>-</td>");
            LAB_HTML_LIT(&b, "<td class=\"verdict\">");
            lab_html_esc(&b, lab_html_str(v, "verdict"));
            LAB_HTML_LIT(&b, "</td></tr>\n");
        }
    }
    LAB_HTML_LIT(&b, "</tbody></table>\n");

    cJSON_ArrayForEach(inc, incs) lab_html_incident(&b, dir, inc);

    /* For headless-browser checks: how many of the inline images the browser decoded, how many show at
     * reading size (drawn and displayed at least 1000 px wide), and the smallest computed font size of any
     * element holding text. The page reads the same without scripts. */
    LAB_HTML_LIT(&b, "<script>window.addEventListener('load',function(){var n=0,w=0,im=document.images;"
                       "for(var i=0;i<im.length;i++){if(im[i].complete&&im[i].naturalWidth>0)n++;"
                       "if(im[i].naturalWidth>=1000&&im[i].getBoundingClientRect().width>=1000)w++;}"
                       "var f=1e9,all=document.body.getElementsByTagName('*');"
                       "for(var k=0;k<all.length;k++){var e=all[k],t=false;"
                       "for(var c=e.firstChild;c;c=c.nextSibling)if(c.nodeType==3&&c.nodeValue.trim().length)t=true;"
                       "if(t&&e.tagName!='SCRIPT'&&e.tagName!='STYLE')f=Math.min(f,parseFloat(getComputedStyle(e).fontSize));}"
                       "document.body.setAttribute('data-images-decoded',n+'/'+im.length);"
                       "document.body.setAttribute('data-images-wide',w+'/'+im.length);"
                       "document.body.setAttribute('data-min-font-px',String(f));});</script>\n"
                       "</body></html>\n");
    if (b.oom) {
        free(b.buf);
        return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", html_path);
    }
    lab_status st = lab_fs_write_atomic(html_path, b.buf, b.len);
    free(b.buf);
    return st;
}
