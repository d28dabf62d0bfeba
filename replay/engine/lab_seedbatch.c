/* lab_seedbatch: seed batches of a CUDA replay: which cases run together (one variant over several seeds of one batch key, lab_incident.batch.run_cuda), the execution order that puts them side by side, and in a worker the batch run once with its results handed out case by case. */
#include "lab_seedbatch.h"

#include <stdlib.h>
#include <string.h>

unsigned lab_seedbatch_size(const lab_incident *inc, lab_backend b, int sanitize, unsigned cap)
{
    if (b != LAB_BACKEND_CUDA || sanitize || !inc->batch.run_cuda || inc->batch.max < 2) return 1;
    unsigned n = inc->batch.max;
    if (cap && cap < n) n = cap;
    return n < LAB_CASE_GROUPS_MAX ? n : LAB_CASE_GROUPS_MAX;
}

void lab_seedbatch_plan_free(lab_seedbatch_plan *p)
{
    free(p->jobs);
    free(p->lead);
    free(p->chunk_start);
    memset(p, 0, sizeof *p);
}

static uint64_t lab_seedbatch_key(const lab_incident *inc, uint64_t seed) { return inc->batch.key ? inc->batch.key(seed) : 0; }

lab_status lab_seedbatch_plan_make(const lab_case_record *recs, const size_t *order, size_t start, size_t end,
                                   unsigned bmax, lab_seedbatch_plan *p)
{
    memset(p, 0, sizeof *p);
    size_t n = end - start, ng = 0;
    if (bmax < 1) bmax = 1;
    /* the seed groups: gfirst[g] .. gfirst[g + 1] in order[], gkey[g] their seed's batch key */
    size_t *gfirst = malloc((n + 1) * sizeof *gfirst);
    uint64_t *gkey = malloc((n ? n : 1) * sizeof *gkey);
    unsigned char *done = calloc(n ? n : 1, 1), *placed = calloc(n ? n : 1, 1); /* per group; per case */
    p->jobs = malloc((n ? n : 1) * sizeof *p->jobs);
    p->lead = calloc(n ? n : 1, sizeof *p->lead);
    p->chunk_start = malloc((n + 1) * sizeof *p->chunk_start);
    size_t *chunk = malloc((n ? n : 1) * sizeof *chunk); /* the groups of the chunk being laid out */
    if (!gfirst || !gkey || !done || !placed || !p->jobs || !p->lead || !p->chunk_start || !chunk) {
        free(gfirst), free(gkey), free(done), free(placed), free(chunk);
        lab_seedbatch_plan_free(p);
        return lab_err_set(LAB_ERR_NOMEM, "seed batches: out of memory");
    }
    const lab_incident *inc = n ? recs[order[start]].incident : NULL;
    for (size_t i = start; i < end; ++i)
        if (i == start || recs[order[i]].seed != recs[order[i - 1]].seed) {
            gkey[ng] = lab_seedbatch_key(inc, recs[order[i]].seed);
            gfirst[ng++] = i;
        }
    gfirst[ng] = end;
    size_t k = 0;
    for (size_t g = 0; g < ng; ++g) {
        if (done[g]) continue;
        /* every group of this key, in seed order, cut into chunks as equal as they can be */
        size_t cnt = 0;
        for (size_t h = g; h < ng; ++h) cnt += !done[h] && gkey[h] == gkey[g];
        size_t nch = (cnt + bmax - 1) / bmax, h = g;
        for (size_t c = 0; c < nch; ++c) {
            size_t size = cnt / nch + (c < cnt % nch), m = 0;
            for (; m < size; ++h)
                if (!done[h] && gkey[h] == gkey[g]) {
                    done[h] = 1;
                    chunk[m++] = h;
                }
            p->chunk_start[p->n_chunks++] = k;
            /* variants that batch, in their order within the first group (every group lists the same variants) */
            for (size_t v = gfirst[chunk[0]]; v < gfirst[chunk[0] + 1]; ++v) {
                const lab_variant *var = recs[order[v]].variant;
                if ((var->sanitizer && !inc->batch.memory_bugs) || var->cpu_only) continue;
                size_t lead_at = k;
                for (size_t i = 0; i < m; ++i)
                    for (size_t j = gfirst[chunk[i]]; j < gfirst[chunk[i] + 1]; ++j)
                        if (recs[order[j]].variant == var) {
                            placed[j - start] = 1;
                            p->jobs[k++] = order[j];
                        }
                if (k > lead_at) p->lead[lead_at] = (unsigned)(k - lead_at);
            }
            /* memory bugs (and any case the first group lacks) seed by seed, alone */
            for (size_t i = 0; i < m; ++i)
                for (size_t j = gfirst[chunk[i]]; j < gfirst[chunk[i] + 1]; ++j)
                    if (!placed[j - start]) {
                        p->lead[k] = 1;
                        p->jobs[k++] = order[j];
                    }
        }
    }
    p->chunk_start[p->n_chunks] = k;
    free(gfirst), free(gkey), free(done), free(placed), free(chunk);
    return LAB_OK;
}

/* ---- in a worker process ---- */

/* The results kept from the last batch this process ran. */
static struct {
    size_t key0, n;
    lab_case_result *r;
    unsigned char *taken;
} lab_seedbatch_kept;

static void lab_seedbatch_drop(void)
{
    free(lab_seedbatch_kept.r);
    free(lab_seedbatch_kept.taken);
    memset(&lab_seedbatch_kept, 0, sizeof lab_seedbatch_kept);
}

lab_status lab_seedbatch_run(const lab_case *cases, size_t n, size_t key0, lab_case_result *r)
{
    lab_seedbatch_drop();
    lab_case_result *res = calloc(n ? n : 1, sizeof *res);
    unsigned char *taken = calloc(n ? n : 1, 1);
    if (!res || !taken) {
        free(res), free(taken);
        return lab_err_set(LAB_ERR_NOMEM, "seed batch: out of memory for %zu results", n);
    }
    lab_status st = lab_case_run_batch(cases, n, res);
    if (st != LAB_OK) {
        free(res), free(taken);
        return st;
    }
    *r = res[0];
    for (size_t i = 0; i < n && cases[0].variant->sanitizer; ++i)
        if (!res[i].memory_contained) { /* one stray the batch did not vouch for: nothing it ran is trusted further */
            r->retire_worker = 1;
            free(res), free(taken);
            return LAB_OK;
        }
    taken[0] = 1;
    lab_seedbatch_kept.key0 = key0, lab_seedbatch_kept.n = n;
    lab_seedbatch_kept.r = res, lab_seedbatch_kept.taken = taken;
    return LAB_OK;
}

int lab_seedbatch_take(size_t key, lab_case_result *r)
{
    if (!lab_seedbatch_kept.r || key < lab_seedbatch_kept.key0 || key - lab_seedbatch_kept.key0 >= lab_seedbatch_kept.n) return 0;
    size_t i = key - lab_seedbatch_kept.key0;
    if (lab_seedbatch_kept.taken[i]) return 0;
    lab_seedbatch_kept.taken[i] = 1;
    *r = lab_seedbatch_kept.r[i];
    return 1;
}
