/* lab_asan: AddressSanitizer as a second witness of the CPU cases' memory bugs: exact-size regions, and an ASan report turned into the case's result. */
#include "lab_asan.h"
#include "lab_text.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define LAB_ASAN 1
#else
#define LAB_ASAN 0
#endif

#define LAB_ASAN_REGIONS 64

static struct {
    const char *p;
    size_t n;
    const char *what;
} lab_asan_regions[LAB_ASAN_REGIONS];

static lab_asan_report_fn lab_asan_fn;
static void *lab_asan_ctx;

int lab_asan_active(void) { return LAB_ASAN; }

void lab_asan_poison(const void *p, size_t n, const char *what)
{
    if (!LAB_ASAN || !p || !n) return;
    for (int i = 0; i < LAB_ASAN_REGIONS; ++i)
        if (!lab_asan_regions[i].p) {
            lab_asan_regions[i].p = p;
            lab_asan_regions[i].n = n;
            lab_asan_regions[i].what = what;
            break;
        }
#if LAB_ASAN
    ASAN_POISON_MEMORY_REGION(p, n);
#endif
}

void lab_asan_unpoison(const void *p, size_t n)
{
    if (!LAB_ASAN || !p || !n) return;
    const char *a = p;
    for (int i = 0; i < LAB_ASAN_REGIONS; ++i)
        if (lab_asan_regions[i].p >= a && lab_asan_regions[i].p < a + n) lab_asan_regions[i].p = NULL;
#if LAB_ASAN
    ASAN_UNPOISON_MEMORY_REGION(p, n);
#endif
}

/* Copies the text after `key` up to (not including) any of `stops` or the end of its line. */
static void lab_asan_field(const char *text, const char *key, const char *stops, char *out, size_t len)
{
    out[0] = '\0';
    const char *s = text ? strstr(text, key) : NULL;
    if (!s) return;
    s += strlen(key);
    size_t k = 0;
    while (s[k] && s[k] != '\n' && !strchr(stops, s[k]) && k + 1 < len) ++k;
    memcpy(out, s, k);
    out[k] = '\0';
}

void lab_asan_summarize(const char *report, char *out, size_t len)
{
    char kind[64], access[64], fn[96], addr[32], where[96] = "";
    lab_asan_field(report, "ERROR: AddressSanitizer: ", " ", kind, sizeof kind);
    access[0] = '\0';
    const char *acc = report ? strstr(report, "READ of size ") : NULL;
    const char *wr = report ? strstr(report, "WRITE of size ") : NULL;
    if (wr && (!acc || wr < acc)) acc = wr;
    if (acc) {
        size_t k = 0;
        while (acc[k] && acc[k] != ' ') ++k;                       /* READ / WRITE */
        const char *sz = acc + k + strlen(" of size ");
        snprintf(access, sizeof access, "%.*s of size %ld", (int)k, acc, strtol(sz, NULL, 10));
    }
    lab_asan_field(report, "#0 ", "\n", fn, sizeof fn); /* "0x... in FUNC FILE:LINE" */
    const char *in = strstr(fn, " in ");
    char func[96] = "?";
    if (in) {
        size_t k = 0;
        in += 4;
        while (in[k] && in[k] != ' ' && k + 1 < sizeof func) ++k;
        snprintf(func, sizeof func, "%.*s", (int)k, in);
    }
    lab_asan_field(report, "on address ", " ", addr, sizeof addr);
    uintptr_t a = (uintptr_t)strtoull(addr, NULL, 16);
    for (int i = 0; a && i < LAB_ASAN_REGIONS; ++i) {
        uintptr_t p = (uintptr_t)lab_asan_regions[i].p;
        if (p && a >= p && a < p + lab_asan_regions[i].n && lab_asan_regions[i].what) {
            snprintf(where, sizeof where, " (%zu bytes past the end of %s)", (size_t)(a - p), lab_asan_regions[i].what);
            break;
        }
    }
    snprintf(out, len, "AddressSanitizer: %s: %s in %s%s", kind[0] ? kind : "report", access[0] ? access : "access",
             func, where);
}

#if LAB_ASAN
static char lab_asan_summary[240];

static void lab_asan_report_cb(const char *report)
{
    lab_asan_summarize(report, lab_asan_summary, sizeof lab_asan_summary);
}

static void lab_asan_death_cb(void)
{
    if (lab_asan_fn) lab_asan_fn(lab_asan_ctx, lab_asan_summary[0] ? lab_asan_summary : "AddressSanitizer: report");
}
#endif

void lab_asan_on_report(lab_asan_report_fn fn, void *ctx)
{
    lab_asan_fn = fn;
    lab_asan_ctx = ctx;
#if LAB_ASAN
    static int installed;
    if (!installed) {
        __asan_set_error_report_callback(lab_asan_report_cb);
        __sanitizer_set_death_callback(lab_asan_death_cb);
        installed = 1;
    }
#endif
}

void lab_asan_judge_unflagged(const lab_case *c, lab_case_result *r)
{
    if (!LAB_ASAN || !c->exact_alloc || c->backend != LAB_BACKEND_CPU || !c->variant->asan ||
        c->variant->role != LAB_ROLE_BUG || r->skipped || !r->verdict_set)
        return;
    char own[160]; /* the case's own detail, its first words whole */
    lab_text_fit(own, sizeof own, r->detail);
    lab_result_verdict(r, 1, "AddressSanitizer found nothing in a variant it should flag (own verdict %s: %s)",
                       r->passed ? "PASS" : "FAIL", own);
    lab_result_metric(r, "asan_reports", 0);
}
