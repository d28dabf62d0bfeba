/* lab_incident: the incident contract in C: variants with roles, case context and results, and the registry. */
#include "lab_incident.h"
#include "lab_par.h"
#include "lab_text.h"

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
    if (r->n_metrics >= LAB_MAX_METRICS) {
        /* A programming error in an incident: say which metric, never drop it silently. */
        fprintf(stderr, "lab_result_metric: more than %d metrics, '%s' has no room\n", LAB_MAX_METRICS, name);
        abort();
    }
    snprintf(r->metrics[r->n_metrics].name, LAB_METRIC_NAME, "%s", name);
    r->metrics[r->n_metrics].value = value;
    r->n_metrics++;
}

/* The detail line from fmt and ap, fitted into r->detail at a word boundary when longer (lab_text_fit). */
static void lab_result_detail(lab_case_result *r, const char *fmt, va_list ap)
{
    char full[4 * LAB_DETAIL_MAX];
    vsnprintf(full, sizeof full, fmt, ap);
    lab_text_fit(r->detail, sizeof r->detail, full);
}

void lab_result_verdict(lab_case_result *r, int passed, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lab_result_detail(r, fmt, ap);
    va_end(ap);
    r->verdict_set = 1;
    r->passed = passed ? 1 : 0;
}

void lab_result_skip(lab_case_result *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lab_result_detail(r, fmt, ap);
    va_end(ap);
    r->skipped = 1;
    r->skip_class = LAB_SKIP_MISSING;
}

void lab_result_skip_as(lab_case_result *r, lab_skip_class k, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lab_result_detail(r, fmt, ap);
    va_end(ap);
    r->skipped = 1;
    r->skip_class = (int)k;
}

const char *lab_skip_class_name(lab_skip_class k)
{
    switch (k) {
    case LAB_SKIP_NEEDS_GPU: return "needs-gpu";
    case LAB_SKIP_NEEDS_GPUS: return "needs-gpus";
    case LAB_SKIP_NO_VERSION: return "no-version";
    case LAB_SKIP_NEEDS_ARCH: return "needs-arch";
    default: return "missing";
    }
}

int lab_skip_expected(lab_skip_class k) { return k != LAB_SKIP_MISSING; }

void lab_case_init(lab_case *c, const lab_incident *inc, const lab_variant *v, uint64_t seed, lab_backend backend,
                   const char *root, char *gdir, size_t len)
{
    memset(c, 0, sizeof *c);
    c->incident = inc;
    c->variant = v;
    c->seed = seed;
    c->backend = backend;
    c->root = root && *root ? root : ".";
    snprintf(gdir, len, "%s/incidents/%s/golden", c->root, inc->id);
    c->golden_dir = gdir;
    /* exact_alloc stays 0: the runner sets it where a memory checker watches the case (lab_replay's workers in
     * an AddressSanitizer build, `lab case --sanitize`), so that a case run in a test's own process keeps its
     * guard zones and counts its stray accesses instead of being ended by the first one. */
}

/* This thread's groups (a case may run on any thread of its process; each keeps its own): the states of the last
 * (incident, seed, backend) set up, least recently used first; all of one incident and backend. */
static _Thread_local struct {
    const lab_incident *inc;
    lab_backend backend;
    size_t n;
    struct {
        uint64_t seed;
        void *group;
    } e[LAB_CASE_GROUPS_MAX];
} lab_case_cache;

void lab_case_release(void)
{
    for (size_t i = 0; i < lab_case_cache.n; ++i)
        if (lab_case_cache.e[i].group && lab_case_cache.inc->teardown) lab_case_cache.inc->teardown(lab_case_cache.e[i].group);
    memset(&lab_case_cache, 0, sizeof lab_case_cache);
}

/* The cached group of c's seed, now the most recent (so a batch never drops its own groups), or NULL. The cache
 * holds one incident and backend: another empties it first. */
static void *lab_case_lookup(const lab_case *c)
{
    if (lab_case_cache.inc != c->incident || lab_case_cache.backend != c->backend) lab_case_release();
    for (size_t i = 0; i < lab_case_cache.n; ++i)
        if (lab_case_cache.e[i].seed == c->seed) {
            void *hit = lab_case_cache.e[i].group;
            memmove(&lab_case_cache.e[i], &lab_case_cache.e[i + 1], (lab_case_cache.n - i - 1) * sizeof lab_case_cache.e[0]);
            lab_case_cache.e[lab_case_cache.n - 1].seed = c->seed;
            lab_case_cache.e[lab_case_cache.n - 1].group = hit;
            return hit;
        }
    return NULL;
}

/* Caches made as c's seed's group, the most recent; a full cache drops the least recently used first. */
static void lab_case_insert(const lab_case *c, void *made)
{
    const lab_incident *inc = c->incident;
    if (lab_case_cache.inc != inc || lab_case_cache.backend != c->backend) lab_case_release();
    if (lab_case_cache.n == LAB_CASE_GROUPS_MAX) {
        inc->teardown(lab_case_cache.e[0].group);
        memmove(&lab_case_cache.e[0], &lab_case_cache.e[1], (LAB_CASE_GROUPS_MAX - 1) * sizeof lab_case_cache.e[0]);
        lab_case_cache.n--;
    }
    lab_case_cache.inc = inc;
    lab_case_cache.backend = c->backend;
    lab_case_cache.e[lab_case_cache.n].seed = c->seed;
    lab_case_cache.e[lab_case_cache.n].group = made;
    lab_case_cache.n++;
}

/* The group of c's seed from the cache, made by setup when missing (a miss empties the cache first, so one case at
 * a time holds one group as it always did); *g NULL for an incident without setup. */
static lab_status lab_case_group(const lab_case *c, const void **g)
{
    *g = NULL;
    if (!c->incident->setup) return LAB_OK;
    void *made = lab_case_lookup(c);
    if (!made) {
        lab_case_release();
        lab_status st = c->incident->setup(c, &made);
        if (st != LAB_OK) return st;
        lab_case_insert(c, made);
    }
    *g = made;
    return LAB_OK;
}

/* One missing group of a batch, made on a thread of lab_par_for (the incident's setup is thread-safe: lab_incident.h). */
typedef struct {
    lab_case *cases;
    size_t *miss;
    void **made;
} lab_case_setup_job;

static lab_status lab_case_setup_one(void *ctx, size_t k)
{
    lab_case_setup_job *j = ctx;
    const lab_case *c = &j->cases[j->miss[k]];
    return c->incident->setup(c, &j->made[k]);
}

/* Every seed's group of the batch cases[0..n) (one incident and backend, n <= LAB_CASE_GROUPS_MAX) into
 * cases[i].group: the cached ones looked up, the missing ones made in parallel (lab_par_for) and cached; a seed met
 * twice is made once. Cached groups of other seeds make room, never this batch's (they are the most recent). */
static lab_status lab_case_groups(lab_case *cases, size_t n)
{
    const lab_incident *inc = cases[0].incident;
    if (!inc->setup) return LAB_OK;
    size_t *miss = malloc(n * sizeof *miss);
    void **made = calloc(n, sizeof *made);
    lab_status st = miss && made ? LAB_OK : lab_err_set(LAB_ERR_NOMEM, "seed batch: out of memory");
    size_t nm = 0;
    for (size_t i = 0; i < n && st == LAB_OK; ++i) {
        cases[i].group = NULL;
        int dup = 0;
        for (size_t k = 0; k < nm && !dup; ++k) dup = cases[miss[k]].seed == cases[i].seed;
        if (dup) continue;
        cases[i].group = lab_case_lookup(&cases[i]);
        if (!cases[i].group) miss[nm++] = i;
    }
    if (st == LAB_OK && nm) {
        lab_case_setup_job job = {cases, miss, made};
        st = lab_par_for(nm, lab_par_threads(), lab_case_setup_one, &job);
    }
    for (size_t k = 0; made && k < nm; ++k) {
        if (st == LAB_OK) lab_case_insert(&cases[miss[k]], made[k]);
        else if (made[k]) inc->teardown(made[k]); /* a failed batch: the groups made before the error */
    }
    /* the missing seeds' cases and their duplicates: from the cache now */
    for (size_t i = 0; i < n && st == LAB_OK; ++i)
        if (!cases[i].group) cases[i].group = lab_case_lookup(&cases[i]);
    free(miss);
    free(made);
    return st;
}

lab_status lab_case_run(const lab_case *c, lab_case_result *r)
{
    const lab_incident *inc = c->incident;
    lab_run_fn run = c->backend == LAB_BACKEND_CUDA ? inc->run_cuda : inc->run_cpu;
    if (!run || (c->backend == LAB_BACKEND_CUDA && c->variant->cpu_only)) {
        lab_result_skip_as(r, LAB_SKIP_NO_VERSION, "no %s version of %s/%s", lab_backend_name(c->backend), inc->id,
                           c->variant->name);
        return LAB_OK;
    }
    lab_case cc = *c;
    lab_status st = lab_case_group(c, &cc.group);
    return st == LAB_OK ? run(&cc, r) : st;
}

lab_status lab_case_run_batch(const lab_case *cases, size_t n, lab_case_result *results)
{
    const lab_incident *inc = n ? cases[0].incident : NULL;
    if (!inc || !inc->batch.run_cuda || n > inc->batch.max || n > LAB_CASE_GROUPS_MAX)
        return lab_err_set(LAB_ERR_ARG, "seed batch: %zu cases of %s, which batches at most %u", n, inc ? inc->id : "no incident",
                           inc && inc->batch.run_cuda ? inc->batch.max : 0u);
    lab_case *cc = malloc(n * sizeof *cc);
    if (!cc) return lab_err_set(LAB_ERR_NOMEM, "seed batch: out of memory");
    lab_status st = LAB_OK;
    for (size_t i = 0; i < n && st == LAB_OK; ++i) {
        memset(&results[i], 0, sizeof results[i]);
        cc[i] = cases[i];
        if (cases[i].incident != inc || cases[i].variant != cases[0].variant || cases[i].backend != LAB_BACKEND_CUDA)
            st = lab_err_set(LAB_ERR_ARG, "seed batch: case %zu is not %s/%s on cuda", i, inc->id, cases[0].variant->name);
    }
    if (st == LAB_OK) st = lab_case_groups(cc, n);
    if (st == LAB_OK) st = inc->batch.run_cuda(cc, n, results);
    free(cc);
    return st;
}

double lab_result_get(const lab_case_result *r, const char *name)
{
    for (int i = 0; i < r->n_metrics; ++i)
        if (strcmp(r->metrics[i].name, name) == 0) return r->metrics[i].value;
    return NAN;
}

int lab_result_has(const lab_case_result *r, const char *name)
{
    for (int i = 0; i < r->n_metrics; ++i)
        if (strcmp(r->metrics[i].name, name) == 0) return 1;
    return 0;
}

int lab_metric_spec_passes(const lab_metric_spec *m, double value, double bound)
{
    if (isnan(value) || isnan(bound)) return 0;
    return m->higher_is_worse ? value <= bound : value >= bound;
}

const lab_metric_spec *lab_incident_crossed(const lab_incident *inc, const lab_case_result *r, double *value,
                                            double *bound)
{
    for (int model = 0; model < 2; ++model)
        for (int k = 0; k < inc->plots.n_specs; ++k) {
            const lab_metric_spec *m = &inc->plots.specs[k];
            if ((m->model != 0) != model || !lab_result_has(r, m->name)) continue;
            double v = lab_result_get(r, m->name);
            double b = m->tolerance_metric ? lab_result_get(r, m->tolerance_metric) : m->tolerance;
            if (lab_metric_spec_passes(m, v, b)) continue;
            *value = v, *bound = b;
            return m;
        }
    return NULL;
}

lab_status lab_case_run_named(const lab_incident *inc, const char *variant, uint64_t seed, lab_backend backend,
                              const char *root, lab_case_result *r)
{
    memset(r, 0, sizeof *r);
    const lab_variant *v = lab_incident_variant(inc, variant);
    if (!v) return lab_err_set(LAB_ERR_ARG, "%s has no variant '%s'", inc->id, variant);
    lab_case c;
    char gdir[4096];
    lab_case_init(&c, inc, v, seed, backend, root, gdir, sizeof gdir);
    return lab_case_run(&c, r);
}

int lab_case_xcheck(const lab_case *c) { return c->seed <= 2 || c->seed % LAB_XCHECK_EVERY == 1; }
