/* lab_semicrf_ref: the semi-CRF's float64 sequential reference: forward alpha, log Z, backward beta, segment marginals and the gradients as their sums; the disagreement of two references, and the NaN-keeping max that the judges share. */
#include "lab_semicrf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------- */
/* float64 reference                                                                               */

double lab_semicrf_lse_d(const double *x, int n)
{
    double m = -INFINITY;
    for (int i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
    if (m == -INFINITY) return -INFINITY;
    double s = 0.0;
    for (int i = 0; i < n; ++i) s += exp(x[i] - m);
    return m + log(s);
}

/* Segment score in double of (b, start s, duration k, class c). */
double lab_semicrf_seg_d(const lab_semicrf_problem *p, int b, int s, int k, int c)
{
    size_t C = (size_t)p->C, T = (size_t)p->T;
    const float *cb = p->cum + (size_t)b * (T + 1) * C;
    double v = (double)cb[(size_t)(s + k) * C + (size_t)c] - (double)cb[(size_t)s * C + (size_t)c] +
               (double)p->dur[(size_t)(k - 1) * C + (size_t)c];
    if (p->use_proj)
        v += (double)p->proj_start[((size_t)b * T + (size_t)s) * C + (size_t)c] +
             (double)p->proj_end[((size_t)b * T + (size_t)(s + k - 1)) * C + (size_t)c];
    return v;
}

/* Forward of one element in double: alpha[0..L][C], ain[0..L][C]; returns log Z. */
static double sc_forward_d(const lab_semicrf_problem *p, int b, double *alpha, double *ain)
{
    int C = p->C, K = p->K, L = p->len[b];
    double tmp[LAB_SEMICRF_C_PAD > LAB_SEMICRF_K_MAX ? LAB_SEMICRF_C_PAD : LAB_SEMICRF_K_MAX];
    for (int c = 0; c < C; ++c) alpha[c] = 0.0, ain[c] = 0.0;
    for (int t = 1; t <= L; ++t) {
        for (int c = 0; c < C; ++c) {
            int nk = t < K ? t : K;
            for (int k = 1; k <= nk; ++k) tmp[k - 1] = lab_semicrf_seg_d(p, b, t - k, k, c) + ain[(size_t)(t - k) * C + c];
            alpha[(size_t)t * C + c] = lab_semicrf_lse_d(tmp, nk);
        }
        for (int c2 = 0; c2 < C; ++c2) {
            for (int c = 0; c < C; ++c) tmp[c] = alpha[(size_t)t * C + c] + (double)p->trans[(size_t)c * C + c2];
            ain[(size_t)t * C + c2] = lab_semicrf_lse_d(tmp, C);
        }
    }
    return lab_semicrf_lse_d(alpha + (size_t)L * C, C);
}

double lab_semicrf_logz(const lab_semicrf_problem *p, int b)
{
    if (b < 0 || b >= p->B || p->len[b] < 1 || p->len[b] > p->T) return NAN;
    size_t n = (size_t)(p->len[b] + 1) * (size_t)p->C;
    double *alpha = malloc(2 * n * sizeof *alpha);
    if (!alpha) return NAN;
    double z = sc_forward_d(p, b, alpha, alpha + n);
    free(alpha);
    return z;
}

void lab_semicrf_ref_free(lab_semicrf_ref *r)
{
    free(r->logZ);
    free(r->g_cum);
    free(r->g_trans);
    free(r->g_dur);
    free(r->g_ps);
    free(r->g_pe);
    free(r->abs_cum);
    memset(r, 0, sizeof *r);
}

lab_status lab_semicrf_reference(const lab_semicrf_problem *p, lab_semicrf_ref *r)
{
    memset(r, 0, sizeof *r);
    lab_status st = lab_semicrf_problem_check(p);
    if (st != LAB_OK) return st;
    int B = p->B, T = p->T, K = p->K, C = p->C;
    size_t nrow = (size_t)(T + 1) * (size_t)C, npos = (size_t)T * (size_t)C;
    r->logZ = calloc((size_t)B, sizeof(double));
    r->g_cum = calloc((size_t)B * nrow, sizeof(double));
    r->abs_cum = calloc((size_t)B * nrow, sizeof(double));
    r->g_trans = calloc((size_t)C * (size_t)C, sizeof(double));
    r->g_dur = calloc((size_t)K * (size_t)C, sizeof(double));
    r->g_ps = calloc((size_t)B * npos, sizeof(double));
    r->g_pe = calloc((size_t)B * npos, sizeof(double));
    double *work = malloc(4 * nrow * sizeof(double));
    if (!r->logZ || !r->g_cum || !r->abs_cum || !r->g_trans || !r->g_dur || !r->g_ps || !r->g_pe || !work) {
        free(work);
        lab_semicrf_ref_free(r);
        return lab_err_set(LAB_ERR_NOMEM, "semicrf: out of memory for the reference");
    }
    double *alpha = work, *ain = work + nrow, *beta = work + 2 * nrow, *bout = work + 3 * nrow;
    double tmp[LAB_SEMICRF_C_PAD > LAB_SEMICRF_K_MAX ? LAB_SEMICRF_C_PAD : LAB_SEMICRF_K_MAX];
    for (int b = 0; b < B; ++b) {
        int L = p->len[b];
        double z = sc_forward_d(p, b, alpha, ain);
        r->logZ[b] = z;
        /* beta[t][c]: log-sum of the continuations after a segment of class c ending at t. */
        for (int c = 0; c < C; ++c) beta[(size_t)L * C + c] = 0.0;
        for (int t = L - 1; t >= 0; --t) {
            int nk = L - t < K ? L - t : K;
            for (int c2 = 0; c2 < C; ++c2) {
                for (int k = 1; k <= nk; ++k) tmp[k - 1] = lab_semicrf_seg_d(p, b, t, k, c2) + beta[(size_t)(t + k) * C + c2];
                bout[(size_t)t * C + c2] = lab_semicrf_lse_d(tmp, nk);
            }
            for (int c = 0; c < C; ++c) {
                for (int c2 = 0; c2 < C; ++c2) tmp[c2] = (double)p->trans[(size_t)c * C + c2] + bout[(size_t)t * C + c2];
                beta[(size_t)t * C + c] = lab_semicrf_lse_d(tmp, C);
            }
        }
        double *gc = r->g_cum + (size_t)b * nrow, *ac = r->abs_cum + (size_t)b * nrow;
        double *gps = r->g_ps + (size_t)b * npos, *gpe = r->g_pe + (size_t)b * npos;
        for (int s = 0; s < L; ++s) {
            int nk = L - s < K ? L - s : K;
            for (int c2 = 0; c2 < C; ++c2) {
                double a = ain[(size_t)s * C + c2], sum = 0.0;
                for (int k = 1; k <= nk; ++k) {
                    double e = exp(a + lab_semicrf_seg_d(p, b, s, k, c2) + beta[(size_t)(s + k) * C + c2] - z);
                    gc[(size_t)(s + k) * C + c2] += e;
                    ac[(size_t)(s + k) * C + c2] += e;
                    r->g_dur[(size_t)(k - 1) * C + c2] += e;
                    gpe[(size_t)(s + k - 1) * C + c2] += e;
                    sum += e;
                }
                gc[(size_t)s * C + c2] -= sum;
                ac[(size_t)s * C + c2] += sum;
                gps[(size_t)s * C + c2] += sum;
            }
            if (s > 0)
                for (int c = 0; c < C; ++c)
                    for (int c2 = 0; c2 < C; ++c2)
                        r->g_trans[(size_t)c * C + c2] += exp(alpha[(size_t)s * C + c] + (double)p->trans[(size_t)c * C + c2] +
                                                              bout[(size_t)s * C + c2] - z);
        }
        if (!p->use_proj) {
            memset(gps, 0, npos * sizeof *gps);
            memset(gpe, 0, npos * sizeof *gpe);
        }
    }
    free(work);
    return LAB_OK;
}

/* max|b - a| / max|a| over n values (NaN when any is non-finite). */
double lab_semicrf_max_nan(double a, double b)
{
    if (isnan(a) || isnan(b)) return NAN;
    return a > b ? a : b;
}

static double sr_rel(const double *a, const double *b, size_t n)
{
    double m = 0.0, sc = 0.0;
    if (!a || !b) return a == b ? 0.0 : NAN;
    for (size_t i = 0; i < n; ++i) {
        if (!isfinite(a[i]) || !isfinite(b[i])) return NAN;
        m = fmax(m, fabs(b[i] - a[i]));
        sc = fmax(sc, fabs(a[i]));
    }
    return sc > 0.0 ? m / sc : m;
}

double lab_semicrf_ref_disagreement(const lab_semicrf_problem *p, const lab_semicrf_ref *a, const lab_semicrf_ref *b)
{
    size_t C = (size_t)p->C, nrow = (size_t)p->B * (size_t)(p->T + 1) * C, npos = (size_t)p->B * (size_t)p->T * C;
    double e = sr_rel(a->g_cum, b->g_cum, nrow), zmax = 0.0;
    e = lab_semicrf_max_nan(e, sr_rel(a->abs_cum, b->abs_cum, nrow));
    e = lab_semicrf_max_nan(e, sr_rel(a->g_trans, b->g_trans, C * C));
    e = lab_semicrf_max_nan(e, sr_rel(a->g_dur, b->g_dur, (size_t)p->K * C));
    e = lab_semicrf_max_nan(e, sr_rel(a->g_ps, b->g_ps, npos));
    e = lab_semicrf_max_nan(e, sr_rel(a->g_pe, b->g_pe, npos));
    for (int i = 0; i < p->B; ++i) {
        e = lab_semicrf_max_nan(e, isfinite(a->logZ[i]) && isfinite(b->logZ[i]) ? fabs(b->logZ[i] - a->logZ[i]) / fabs(a->logZ[i]) : NAN);
        zmax = fmax(zmax, fabs(a->logZ[i]));
    }
    return e / (2.0 * ((double)p->K + 4.0) * ldexp(1.0, -53) * zmax);
}
