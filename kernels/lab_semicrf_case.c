/* lab_semicrf_case: what incidents 0001 and 0002 share around the semi-CRF: a seed's case shape and group (problem and float64 reference, made once), the comparisons against the reference and between runs, the goldens. */
#include "lab_semicrf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_fs.h"
#include "lab_golden.h"
#include "lab_tensor.h"

lab_status lab_semicrf_case_reference(const lab_case *c, const lab_semicrf_problem *p, lab_semicrf_ref_convention conv,
                                      lab_status (*cpu_ref)(const lab_semicrf_problem *, lab_semicrf_ref *),
                                      lab_semicrf_ref *r, double *check)
{
    *check = NAN;
    if (c->backend != LAB_BACKEND_CUDA) return cpu_ref(p, r);
#ifdef LAB_HAVE_CUDA
    lab_status st = lab_semicrf_reference_cuda(p, conv, r);
    if (st != LAB_OK || !lab_case_xcheck(c)) return st;
    lab_semicrf_ref cpu;
    if ((st = cpu_ref(p, &cpu)) != LAB_OK) {
        lab_semicrf_ref_free(r);
        return st;
    }
    *check = lab_semicrf_ref_disagreement(p, &cpu, r);
    lab_semicrf_ref_free(&cpu);
    if (!(*check <= 1.0)) {
        lab_semicrf_ref_free(r);
        return lab_err_set(LAB_ERR_MISMATCH, "%s seed %llu: the device's float64 reference is %.3g of the rounding bound "
                           "away from the CPU's", c->incident->id, (unsigned long long)c->seed, *check);
    }
    return LAB_OK;
#else
    (void)conv;
    return lab_err_set(LAB_ERR_UNSUPPORTED, "%s: this build has no CUDA", c->incident->id);
#endif
}

lab_status lab_semicrf_group_setup(const lab_case *c, void **group)
{
    lab_semicrf_group *g = calloc(1, sizeof *g);
    if (!g) return lab_err_set(LAB_ERR_NOMEM, "semicrf: out of memory for the group of seed %llu",
                               (unsigned long long)c->seed);
    lab_status st = lab_semicrf_case_problem(&g->p, c->seed);
    if (st != LAB_OK) {
        free(g);
        return st;
    }
    if ((st = lab_semicrf_case_reference(c, &g->p, LAB_SEMICRF_REF_FIRST_FREE, lab_semicrf_reference, &g->ref, &g->ref_check)) != LAB_OK) {
        lab_semicrf_problem_free(&g->p);
        free(g);
        return st;
    }
    *group = g;
    return LAB_OK;
}

void lab_semicrf_group_teardown(void *group)
{
    lab_semicrf_group *g = group;
    if (!g) return;
    lab_semicrf_ref_free(&g->ref);
    lab_semicrf_problem_free(&g->p);
    free(g);
}

/* ---------------------------------------------------------------------------------------------- */
/* Comparisons and goldens                                                                         */

int lab_semicrf_T_of_seed(uint64_t seed)
{
    static const int Ts[3] = {100, 200, 500};
    return Ts[seed % 3];
}

uint64_t lab_semicrf_batch_key(uint64_t seed) { return (uint64_t)lab_semicrf_T_of_seed(seed); }

double lab_semicrf_seed_cost(uint64_t seed) { return 0.005 + 1e-4 * lab_semicrf_T_of_seed(seed); }

lab_status lab_semicrf_case_problem(lab_semicrf_problem *p, uint64_t seed)
{
    lab_status st = lab_semicrf_problem_init(p, 2, lab_semicrf_T_of_seed(seed), LAB_SEMICRF_K_MAX, LAB_SEMICRF_C, 1);
    if (st != LAB_OK) return st;
    lab_semicrf_problem_fill(p, seed);
    return LAB_OK;
}

/* max|a - r| / max|r| over n values; NaN if any value is non-finite; counts non-finite a into *nf. */
double lab_semicrf_norm_err(const float *a, const double *r, size_t n, size_t *nf)
{
    double m = 0.0, s = 0.0;
    int bad = 0;
    for (size_t i = 0; i < n; ++i) {
        if (!isfinite(a[i])) {
            ++*nf;
            bad = 1;
            continue;
        }
        double d = fabs((double)a[i] - r[i]);
        m = d > m ? d : m;
        s = fabs(r[i]) > s ? fabs(r[i]) : s;
    }
    if (bad) return NAN;
    return s > 0.0 ? m / s : m;
}

void lab_semicrf_compare(const lab_semicrf_problem *p, const lab_semicrf_out *o, const lab_semicrf_ref *r,
                         lab_semicrf_err *e)
{
    memset(e, 0, sizeof *e);
    size_t C = (size_t)p->C, ncum = (size_t)p->B * (size_t)(p->T + 1) * C, npos = (size_t)p->B * (size_t)p->T * C;
    e->trans = lab_semicrf_norm_err(o->g_trans, r->g_trans, C * C, &e->nonfinite);
    e->dur = lab_semicrf_norm_err(o->g_dur, r->g_dur, (size_t)p->K * C, &e->nonfinite);
    e->cum = lab_semicrf_norm_err(o->g_cum, r->g_cum, ncum, &e->nonfinite);
    e->ps = p->use_proj ? lab_semicrf_norm_err(o->g_ps, r->g_ps, npos, &e->nonfinite) : 0.0;
    e->pe = p->use_proj ? lab_semicrf_norm_err(o->g_pe, r->g_pe, npos, &e->nonfinite) : 0.0;
    e->n = C * C + (size_t)p->K * C + ncum + (p->use_proj ? 2 * npos : 0);
    e->max = lab_semicrf_max_nan(lab_semicrf_max_nan(lab_semicrf_max_nan(e->trans, e->dur), lab_semicrf_max_nan(e->cum, e->ps)), e->pe);
    e->logz = 0.0;
    for (int b = 0; b < p->B; ++b) {
        double d = fabs((double)o->logZ[b] - r->logZ[b]) / fabs(r->logZ[b]);
        e->logz = lab_semicrf_max_nan(e->logz, isfinite(o->logZ[b]) ? d : NAN);
    }
}

static double sc_diff(const float *a, const float *b, size_t n, size_t *nd)
{
    double m = 0.0;
    int bad = 0;
    for (size_t i = 0; i < n; ++i) {
        if (memcmp(&a[i], &b[i], sizeof(float)) == 0) continue;
        ++*nd;
        double d = fabs((double)a[i] - (double)b[i]);
        if (isnan(d)) bad = 1;
        else m = d > m ? d : m;
    }
    return bad ? NAN : m;
}

static double sc_diff_d(const double *a, const double *b, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; ++i) {
        double d = fabs(a[i] - b[i]);
        if (isnan(d)) return NAN;
        m = d > m ? d : m;
    }
    return m;
}

void lab_semicrf_run_to_run(const lab_semicrf_problem *p, const lab_semicrf_out *a, const lab_semicrf_out *b,
                            lab_semicrf_r2r *d)
{
    memset(d, 0, sizeof *d);
    size_t C = (size_t)p->C, ncum = (size_t)p->B * (size_t)(p->T + 1) * C, npos = (size_t)p->B * (size_t)p->T * C;
    d->trans = sc_diff(a->g_trans, b->g_trans, C * C, &d->n_diff);
    d->dur = sc_diff(a->g_dur, b->g_dur, (size_t)p->K * C, &d->n_diff);
    d->cum = sc_diff(a->g_cum, b->g_cum, ncum, &d->n_diff);
    d->ps = sc_diff(a->g_ps, b->g_ps, npos, &d->n_diff);
    d->pe = sc_diff(a->g_pe, b->g_pe, npos, &d->n_diff);
    d->n = C * C + (size_t)p->K * C + ncum + 2 * npos;
    d->max = lab_semicrf_max_nan(lab_semicrf_max_nan(lab_semicrf_max_nan(d->trans, d->dur), lab_semicrf_max_nan(d->cum, d->ps)), d->pe);
    if (a->acc_trans && b->acc_trans && a->acc_dur && b->acc_dur && a->acc_cum && b->acc_cum)
        d->acc_max = lab_semicrf_max_nan(lab_semicrf_max_nan(sc_diff_d(a->acc_trans, b->acc_trans, C * C),
                                           sc_diff_d(a->acc_dur, b->acc_dur, (size_t)p->K * C)),
                                sc_diff_d(a->acc_cum, b->acc_cum, ncum));
    else
        d->acc_max = NAN;
}

lab_status lab_semicrf_golden_bless(const char *dir, const char *incident, const uint64_t *seeds, int n)
{
    lab_status st = lab_fs_mkdirs(dir);
    if (st != LAB_OK) return st;
    lab_golden_manifest m;
    memset(&m, 0, sizeof m);
    snprintf(m.incident, sizeof m.incident, "%s", incident);
    for (int i = 0; i < n && st == LAB_OK; ++i) {
        lab_semicrf_problem p;
        lab_semicrf_ref r;
        if ((st = lab_semicrf_case_problem(&p, seeds[i])) != LAB_OK) break;
        if ((st = lab_semicrf_reference(&p, &r)) != LAB_OK) {
            lab_semicrf_problem_free(&p);
            break;
        }
        lab_tensor tt = {0}, td = {0}, tz = {0};
        size_t sh_t[2] = {(size_t)p.C, (size_t)p.C}, sh_d[2] = {(size_t)p.K, (size_t)p.C}, sh_z[1] = {(size_t)p.B};
        char f[96], prod[128];
        snprintf(prod, sizeof prod, "float64 reference lab_semicrf_reference v1, B=%d T=%d K=%d C=%d proj", p.B, p.T, p.K, p.C);
        st = lab_tensor_create(&tt, LAB_DT_F8, 2, sh_t);
        if (st == LAB_OK) st = lab_tensor_create(&td, LAB_DT_F8, 2, sh_d);
        if (st == LAB_OK) st = lab_tensor_create(&tz, LAB_DT_F8, 1, sh_z);
        if (st == LAB_OK) {
            memcpy(tt.data, r.g_trans, tt.numel * sizeof(double));
            memcpy(td.data, r.g_dur, td.numel * sizeof(double));
            memcpy(tz.data, r.logZ, tz.numel * sizeof(double));
            snprintf(f, sizeof f, "ref_trans_seed%llu.npy", (unsigned long long)seeds[i]);
            st = lab_golden_add(&m, dir, f, &tt, LAB_DT_F8, seeds[i], prod);
        }
        if (st == LAB_OK) {
            snprintf(f, sizeof f, "ref_dur_seed%llu.npy", (unsigned long long)seeds[i]);
            st = lab_golden_add(&m, dir, f, &td, LAB_DT_F8, seeds[i], prod);
        }
        if (st == LAB_OK) {
            snprintf(f, sizeof f, "ref_logz_seed%llu.npy", (unsigned long long)seeds[i]);
            st = lab_golden_add(&m, dir, f, &tz, LAB_DT_F8, seeds[i], prod);
        }
        lab_tensor_free(&tt);
        lab_tensor_free(&td);
        lab_tensor_free(&tz);
        lab_semicrf_ref_free(&r);
        lab_semicrf_problem_free(&p);
    }
    if (st == LAB_OK) st = lab_golden_manifest_write(dir, &m);
    lab_golden_manifest_free(&m);
    return st;
}

/* Loads golden `file` of the manifest and checks it is f8 with n elements. */
static lab_status sc_golden_get(const char *dir, const lab_golden_manifest *m, const char *file, size_t n, lab_tensor *t)
{
    const lab_golden_entry *e = lab_golden_find(m, file);
    if (!e) return lab_err_set(LAB_ERR_NOTFOUND, "%s/%s: not listed in %s (run `lab golden bless`)", dir, file, LAB_GOLDEN_MANIFEST);
    lab_status st = lab_golden_load(dir, e, t);
    if (st != LAB_OK) return st;
    if (t->dtype != LAB_DT_F8 || t->numel != n) {
        lab_tensor_free(t);
        return lab_err_set(LAB_ERR_MISMATCH, "%s/%s: expected f8 with %zu values", dir, file, n);
    }
    return LAB_OK;
}

lab_status lab_semicrf_golden_compare(const char *dir, uint64_t seed, const lab_semicrf_problem *p,
                                      const lab_semicrf_out *o, double *err)
{
    lab_golden_manifest m;
    memset(&m, 0, sizeof m);
    lab_status st = lab_golden_manifest_read(dir, &m);
    if (st != LAB_OK) return st;
    char ft[96], fd[96], fz[96];
    snprintf(ft, sizeof ft, "ref_trans_seed%llu.npy", (unsigned long long)seed);
    snprintf(fd, sizeof fd, "ref_dur_seed%llu.npy", (unsigned long long)seed);
    snprintf(fz, sizeof fz, "ref_logz_seed%llu.npy", (unsigned long long)seed);
    lab_tensor tt = {0}, td = {0}, tz = {0};
    size_t C = (size_t)p->C;
    st = sc_golden_get(dir, &m, ft, C * C, &tt);
    if (st == LAB_OK) st = sc_golden_get(dir, &m, fd, (size_t)p->K * C, &td);
    if (st == LAB_OK) st = sc_golden_get(dir, &m, fz, (size_t)p->B, &tz);
    if (st == LAB_OK) {
        size_t nf = 0;
        double e = lab_semicrf_max_nan(lab_semicrf_norm_err(o->g_trans, tt.data, C * C, &nf), lab_semicrf_norm_err(o->g_dur, td.data, (size_t)p->K * C, &nf));
        const double *z = tz.data;
        /* log Z: absolute error, on the tolerance's own scale (16 ulps of |log Z|), as the criteria judge it */
        for (int b = 0; b < p->B; ++b) e = lab_semicrf_max_nan(e, fabs((double)o->logZ[b] - z[b]));
        *err = e;
    }
    lab_tensor_free(&tt);
    lab_tensor_free(&td);
    lab_tensor_free(&tz);
    lab_golden_manifest_free(&m);
    return st;
}

double lab_semicrf_tolerance(const lab_semicrf_ref *r, int B)
{
    double z = 0.0;
    for (int b = 0; b < B; ++b) z = fabs(r->logZ[b]) > z ? fabs(r->logZ[b]) : z;
    return LAB_SEMICRF_TOL_ULPS * (1.0 / 16777216.0) * (z > 1.0 ? z : 1.0);
}
