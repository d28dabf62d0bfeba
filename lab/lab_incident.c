/* lab_incident: the incident contract in C: variants with roles, case context and results, and the registry. */
#include "lab_incident.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *lab_role_name(lab_role r) { return r == LAB_ROLE_BUG ? "bug" : "fix"; }

const char *lab_backend_name(lab_backend b) { return b == LAB_BACKEND_CUDA ? "cuda" : "cpu"; }

lab_status lab_backend_parse(const char *s, lab_backend *out)
{
    if (strcmp(s, "cpu") == 0) *out = LAB_BACKEND_CPU;
    else if (strcmp(s, "cuda") == 0) *out = LAB_BACKEND_CUDA;
    else return lab_err_set(LAB_ERR_ARG, "--backend: unknown backend '%s' (known: cpu, cuda)", s);
    return LAB_OK;
}

/* The linker gathers every LAB_INCIDENT_REGISTER pointer into section "lab_incidents" and defines
 * these bounds. Weak, so a binary with no incident at all still links (an empty registry). */
extern const lab_incident *const __start_lab_incidents[] __attribute__((weak));
extern const lab_incident *const __stop_lab_incidents[] __attribute__((weak));

static int lab_incident_cmp(const void *a, const void *b)
{
    const lab_incident *x = *(const lab_incident *const *)a, *y = *(const lab_incident *const *)b;
    return strcmp(x->id, y->id);
}

const lab_incident *const *lab_incident_all(size_t *n)
{
    static const lab_incident **sorted;
    static size_t count;
    if (!sorted) {
        count = (__start_lab_incidents && __stop_lab_incidents)
                    ? (size_t)(__stop_lab_incidents - __start_lab_incidents) : 0;
        sorted = calloc(count + 1, sizeof *sorted);
        if (!sorted) { *n = 0; return NULL; }
        for (size_t i = 0; i < count; ++i) sorted[i] = __start_lab_incidents[i];
        qsort(sorted, count, sizeof *sorted, lab_incident_cmp);
    }
    *n = count;
    return sorted;
}

const lab_incident *lab_incident_find(const char *id)
{
    size_t n;
    const lab_incident *const *all = lab_incident_all(&n);
    const lab_incident *hit = NULL;
    size_t len = strlen(id);
    if (len == 0) return NULL;
    for (size_t i = 0; i < n; ++i) {
        if (strcmp(all[i]->id, id) == 0) return all[i];
        if (strncmp(all[i]->id, id, len) == 0) {
            if (hit) return NULL; /* ambiguous prefix */
            hit = all[i];
        }
    }
    return hit;
}

const lab_variant *lab_incident_variant(const lab_incident *inc, const char *name)
{
    for (int i = 0; i < inc->n_variants; ++i)
        if (strcmp(inc->variants[i].name, name) == 0) return &inc->variants[i];
    return NULL;
}

void lab_result_metric(lab_case_result *r, const char *name, double value)
{
    for (int i = 0; i < r->n_metrics; ++i) {
        if (strcmp(r->metrics[i].name, name) == 0) {
            r->metrics[i].value = value;
            return;
        }
    }
    if (r->n_metrics >= LAB_MAX_METRICS) return; /* bounded by design; incidents record a handful */
    snprintf(r->metrics[r->n_metrics].name, LAB_METRIC_NAME, "%s", name);
    r->metrics[r->n_metrics].value = value;
    r->n_metrics++;
}

void lab_result_verdict(lab_case_result *r, int passed, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->detail, sizeof r->detail, fmt, ap);
    va_end(ap);
    r->verdict_set = 1;
    r->passed = passed ? 1 : 0;
}

void lab_result_skip(lab_case_result *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->detail, sizeof r->detail, fmt, ap);
    va_end(ap);
    r->skipped = 1;
}

double lab_result_get(const lab_case_result *r, const char *name)
{
    for (int i = 0; i < r->n_metrics; ++i)
        if (strcmp(r->metrics[i].name, name) == 0) return r->metrics[i].value;
    return NAN;
}
