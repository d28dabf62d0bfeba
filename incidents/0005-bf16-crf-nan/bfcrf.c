/* bfcrf: the BIO linear-chain CRF in bf16 mixed precision (the bug) and float32 (the fix), a float64 reference, and the tagger training loop of incident 0005. */
#include "bfcrf.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lab_format.h"
#include "lab_rng.h"

/* ---------------------------------------------------------------------------------------------- */
/* Rounding model                                                                                  */

/* The result of one elementwise op as stored: bf16 in the bug, float32 in the fix. */
static inline float bfcrf_r(int bf, float x) { return bf ? lab_bf16_round(x) : x; }
/* exp and log of float32 values through double, rounded to float32: the CPU and the GPU (bfcrf.cu) agree on
 * these bit for bit (double exp/log within an ulp of double, then one rounding to float32). */
static inline float bfcrf_exp(float x) { return (float)exp((double)x); }
static inline float bfcrf_log(float x) { return (float)log((double)x); }

/* In the bf16 path the inputs of exp and log are bf16 values, so bf16(exp(d)) and bf16(log(S)) are two
 * tables over the 65536 bf16 codes, filled from bfcrf_exp/bfcrf_log: the same values, at a lookup's cost. */
static float bfcrf_tab_exp[65536], bfcrf_tab_log[65536];
static pthread_once_t bfcrf_tab_once = PTHREAD_ONCE_INIT; /* filled once, whatever thread asks first */

static void bfcrf_tab_fill(void)
{
    for (uint32_t c = 0; c < 65536; ++c) {
        float v = lab_bf16_to_float((uint16_t)c);
        bfcrf_tab_exp[c] = lab_bf16_round(bfcrf_exp(v));
        bfcrf_tab_log[c] = lab_bf16_round(bfcrf_log(v));
    }
}

static void bfcrf_tab_init(void) { pthread_once(&bfcrf_tab_once, bfcrf_tab_fill); }

/* r(exp(r(x))) and r(log(r(x))): bf16 through the tables, float32 with expf/logf (the fix is a float32 CRF as
 * a GPU runs it; its exp need not match the bf16 emulation's). */
static inline float bfcrf_rexp(int bf, float x)
{
    return bf ? bfcrf_tab_exp[lab_bf16_from_float(x)] : expf(x);
}
static inline float bfcrf_rlog(int bf, float x)
{
    return bf ? bfcrf_tab_log[lab_bf16_from_float(x)] : logf(x);
}

lab_status bfcrf_batch_init(bfcrf_batch *cb, int batch)
{
    memset(cb, 0, sizeof *cb);
    if (batch < 1 || batch > 4096) return lab_err_set(LAB_ERR_ARG, "crf: batch %d: need 1..4096", batch);
    size_t n = (size_t)batch * BFCRF_TMAX;
    cb->batch = batch;
    cb->len = calloc((size_t)batch, sizeof *cb->len);
    cb->tags = calloc(n, sizeof *cb->tags);
    cb->emis = calloc(n * BFCRF_TAGS, sizeof *cb->emis);
    cb->demis = calloc(n * BFCRF_TAGS, sizeof *cb->demis);
    cb->logz = calloc((size_t)batch, sizeof *cb->logz);
    cb->gold = calloc((size_t)batch, sizeof *cb->gold);
    cb->msum = calloc(n, sizeof *cb->msum);
    cb->mmax = calloc(n, sizeof *cb->mmax);
    if (!cb->len || !cb->tags || !cb->emis || !cb->demis || !cb->logz || !cb->gold || !cb->msum || !cb->mmax) {
        bfcrf_batch_free(cb);
        return lab_err_set(LAB_ERR_NOMEM, "crf: out of memory for a batch of %d", batch);
    }
    return LAB_OK;
}

void bfcrf_batch_free(bfcrf_batch *cb)
{
    free(cb->len);
    free(cb->tags);
    free(cb->emis);
    free(cb->demis);
    free(cb->logz);
    free(cb->gold);
    free(cb->msum);
    free(cb->mmax);
    memset(cb, 0, sizeof *cb);
}

/* ---------------------------------------------------------------------------------------------- */
/* The CRF, as an autograd framework runs a pytorch-crf style module                               */

#define NT BFCRF_TAGS
#define NTT (BFCRF_TAGS * BFCRF_TAGS)

/* logsumexp over n values (stride 1) the way torch.logsumexp does it: m = max (0 where m is +-inf),
 * log(sum(exp(x - m))) + m, each elementwise result rounded, the sum accumulated in float32 in index order. */
static inline float bfcrf_lse(int bf, const float *x, int n)
{
    float m = -INFINITY;
    for (int i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
    if (isinf(m)) m = 0.0f;
    float sum = 0.0f;
    for (int i = 0; i < n; ++i)
        if (x[i] != -INFINITY) sum += bfcrf_rexp(bf, x[i] - m); /* exp(-inf - m) is exactly 0 */
    return bfcrf_r(bf, bfcrf_rlog(bf, sum) + m);
}

/* The allowed transitions as source lists per target: bfcrf_src[j][0..bfcrf_nsrc[j]) are the i with i -> j
 * allowed, ascending. A forbidden entry is -inf, and for finite scores it adds exactly nothing anywhere
 * (exp(-inf) = 0 in the sum, 0 weight in the backward), so the CRF visits the allowed ones only; the backward
 * restores the one effect a forbidden entry can have, inf * 0 = NaN, where an upstream gradient is not finite. */
static int bfcrf_src[NT][NT], bfcrf_nsrc[NT];
static pthread_once_t bfcrf_src_once = PTHREAD_ONCE_INIT;

static void bfcrf_src_fill(void)
{
    for (int j = 0; j < NT; ++j) {
        bfcrf_nsrc[j] = 0;
        for (int i = 0; i < NT; ++i)
            if (bfcrf_allowed(i, j)) bfcrf_src[j][bfcrf_nsrc[j]++] = i;
    }
}

static void bfcrf_src_init(void) { pthread_once(&bfcrf_src_once, bfcrf_src_fill); }

/* One forward step of one sequence: next[j] = logsumexp_i(s[i] + T[i][j] + e[j]) over the allowed i, with the
 * backward weights w[i * NT + j] = exp(x_ij - next[j]) as logsumexp's backward computes them (rounded alike;
 * written for allowed entries only). Scores s finite or -inf. */
static inline void bfcrf_step(int bf, const float *T, const float *s, const float *e, float *next, float *w)
{
    float x[NT];
    for (int j = 0; j < NT; ++j) {
        const int n = bfcrf_nsrc[j], *src = bfcrf_src[j];
        for (int k = 0; k < n; ++k) {
            int i = src[k];
            x[k] = bfcrf_r(bf, bfcrf_r(bf, s[i] + T[i * NT + j]) + e[j]);
        }
        float out = bfcrf_lse(bf, x, n);
        next[j] = out;
        if (w)
            for (int k = 0; k < n; ++k) w[src[k] * NT + j] = bfcrf_rexp(bf, x[k] - out);
    }
}

float bfcrf_bf16_exp(float x)
{
    bfcrf_tab_init();
    return bfcrf_rexp(1, x);
}

float bfcrf_bf16_log(float x)
{
    bfcrf_tab_init();
    return bfcrf_rlog(1, x);
}

float bfcrf_forward_bf16(const bfcrf_params *P, const float *emis, int len, float *alpha)
{
    bfcrf_tab_init();
    bfcrf_src_init();
    float s[NT], next[NT];
    for (int j = 0; j < NT; ++j) s[j] = bfcrf_r(1, P->start[j] + emis[j]);
    if (alpha) memcpy(alpha, s, sizeof s);
    for (int t = 1; t < len; ++t) {
        bfcrf_step(1, P->trans, s, emis + (size_t)t * NT, next, NULL);
        memcpy(s, next, sizeof s);
        if (alpha) memcpy(alpha + (size_t)t * NT, s, sizeof s);
    }
    float z[NT];
    for (int j = 0; j < NT; ++j) z[j] = bfcrf_r(1, s[j] + P->end[j]);
    return bfcrf_lse(1, z, NT);
}

float bfcrf_loss_grad(const bfcrf_params *P, bfcrf_batch *cb, bfcrf_prec p, bfcrf_grads *g)
{
    const int bf = p == BFCRF_PREC_BF16, B = cb->batch;
    if (bf) bfcrf_tab_init();
    bfcrf_src_init();
    memset(g, 0, sizeof *g);
    size_t nall = (size_t)B * BFCRF_TMAX;
    memset(cb->demis, 0, nall * NT * sizeof *cb->demis);
    /* Backward weights of every step of every sequence, and the per-sequence state. */
    float *w = malloc(nall * NTT * sizeof *w);
    float *s = malloc((size_t)B * NT * sizeof *s), *gs = malloc((size_t)B * NT * sizeof *gs);
    float *wend = malloc((size_t)B * NT * sizeof *wend);
    float *nll = malloc((size_t)B * sizeof *nll);
    if (!w || !s || !gs || !wend || !nll) abort(); /* small, fixed sizes: out of memory is fatal here */
    float loss_sum = 0.0f;

    /* Forward: log-partition and gold score of each sequence. */
    for (int b = 0; b < B; ++b) {
        const float *e = cb->emis + (size_t)b * BFCRF_TMAX * NT;
        const int *y = cb->tags + (size_t)b * BFCRF_TMAX;
        int L = cb->len[b];
        float *sb = s + (size_t)b * NT, next[NT];
        for (int j = 0; j < NT; ++j) sb[j] = bfcrf_r(bf, P->start[j] + e[j]);
        for (int t = 1; t < L; ++t) {
            bfcrf_step(bf, P->trans, sb, e + (size_t)t * NT, next, w + ((size_t)b * BFCRF_TMAX + t) * NTT);
            memcpy(sb, next, sizeof next);
        }
        float z[NT];
        for (int j = 0; j < NT; ++j) z[j] = bfcrf_r(bf, sb[j] + P->end[j]);
        float logz = bfcrf_lse(bf, z, NT);
        for (int j = 0; j < NT; ++j) wend[b * NT + j] = bfcrf_rexp(bf, z[j] - logz);
        /* Gold score as pytorch-crf's _compute_score accumulates it: one running score, each addition
         * rounded (start + emission, then transition and emission per step, then the end). */
        float gold = bfcrf_r(bf, P->start[y[0]] + e[y[0]]);
        for (int t = 1; t < L; ++t) {
            gold = bfcrf_r(bf, gold + P->trans[y[t - 1] * NT + y[t]]);
            gold = bfcrf_r(bf, gold + e[(size_t)t * NT + y[t]]);
        }
        gold = bfcrf_r(bf, gold + P->end[y[L - 1]]);
        cb->logz[b] = logz;
        cb->gold[b] = gold;
        nll[b] = bfcrf_r(bf, logz - gold);
        loss_sum += nll[b];
    }
    float loss = bfcrf_r(bf, loss_sum / (float)B);

    /* Backward. The mean's gradient reaches each sequence as 1/B (rounded), into logZ with +, into gold with -. */
    float gup = bfcrf_r(bf, 1.0f / (float)B);
    int tlast = 0;
    for (int b = 0; b < B; ++b) {
        int L = cb->len[b];
        if (L - 1 > tlast) tlast = L - 1;
        for (int j = 0; j < NT; ++j) gs[b * NT + j] = bfcrf_r(bf, gup * wend[b * NT + j]);
    }
    /* End transitions: one use, its gradient reduced over the batch. */
    for (int j = 0; j < NT; ++j) {
        float acc = 0.0f;
        for (int b = 0; b < B; ++b) acc += gs[b * NT + j];
        g->end[j] = bfcrf_r(bf, acc);
    }
    float gT_t[NTT];
    float *gTacc = calloc(NTT, sizeof *gTacc);
    if (!gTacc) abort();
    for (int t = tlast; t >= 1; --t) {
        memset(gT_t, 0, sizeof gT_t);
        int used = 0;
        for (int b = 0; b < B; ++b) {
            if (t >= cb->len[b]) continue;
            used = 1;
            const float *wb = w + ((size_t)b * BFCRF_TMAX + t) * NTT;
            float *gb = gs + (size_t)b * NT;
            float gprev_acc[NT] = {0}, gprev[NT];
            float *de = cb->demis + ((size_t)b * BFCRF_TMAX + t) * NT;
            for (int j = 0; j < NT; ++j) {
                const int n = bfcrf_nsrc[j], *src = bfcrf_src[j];
                float gj = gb[j], acc = 0.0f;
                for (int k = 0; k < n; ++k) {
                    int i = src[k];
                    float v = bfcrf_r(bf, gj * wb[i * NT + j]);
                    gprev_acc[i] += v;
                    acc += v;
                    gT_t[i * NT + j] += v;
                }
                if (!isfinite(gj) && n < NT) { /* inf or NaN times a forbidden entry's 0 weight: NaN */
                    acc = NAN;
                    for (int i = 0; i < NT; ++i)
                        if (!bfcrf_allowed(i, j)) gT_t[i * NT + j] = gprev_acc[i] = NAN;
                }
                de[j] = bfcrf_r(bf, acc);
            }
            for (int i = 0; i < NT; ++i) gprev[i] = bfcrf_r(bf, gprev_acc[i]);
            memcpy(gb, gprev, sizeof gprev);
        }
        /* This step's use of the transition table: gradient reduced over the batch, rounded, then
         * accumulated into the float32 parameter gradient. */
        if (used)
            for (int k = 0; k < NTT; ++k) gTacc[k] += bfcrf_r(bf, gT_t[k]);
    }
    for (int b = 0; b < B; ++b) {
        float *de = cb->demis + (size_t)b * BFCRF_TMAX * NT;
        for (int j = 0; j < NT; ++j) de[j] = gs[b * NT + j];
    }
    for (int j = 0; j < NT; ++j) {
        float acc = 0.0f;
        for (int b = 0; b < B; ++b) acc += gs[b * NT + j];
        g->start[j] = bfcrf_r(bf, acc);
    }
    /* Marginals: the denominator's emission gradient divided by the upstream 1/B. */
    for (int b = 0; b < B; ++b)
        for (int t = 0; t < BFCRF_TMAX; ++t) {
            size_t pos = (size_t)b * BFCRF_TMAX + t;
            if (t >= cb->len[b]) {
                cb->msum[pos] = 0.0;
                cb->mmax[pos] = 0.0;
                if (cb->marg)
                    for (int j = 0; j < NT; ++j) cb->marg[pos * NT + j] = 0.0;
                continue;
            }
            double sum = 0.0, mx = -INFINITY;
            for (int j = 0; j < NT; ++j) {
                double m = (double)cb->demis[pos * NT + j] / (double)gup;
                sum += m;
                if (!(m <= mx)) mx = m;
            }
            cb->msum[pos] = sum;
            cb->mmax[pos] = mx;
            if (cb->marg)
                for (int j = 0; j < NT; ++j) cb->marg[pos * NT + j] = (double)cb->demis[pos * NT + j] / (double)gup;
        }
    /* Gold path: -1/B at each gold emission, transition, start and end (index backward); added to the
     * denominator's gradient, one rounding per element. Transitions and start/end in float32. */
    float gneg = -gup;
    for (int b = 0; b < B; ++b) {
        const int *y = cb->tags + (size_t)b * BFCRF_TMAX;
        int L = cb->len[b];
        float *de = cb->demis + (size_t)b * BFCRF_TMAX * NT;
        for (int t = 0; t < L; ++t) de[(size_t)t * NT + y[t]] = bfcrf_r(bf, de[(size_t)t * NT + y[t]] + gneg);
        for (int t = 1; t < L; ++t) gTacc[y[t - 1] * NT + y[t]] += gneg;
        g->start[y[0]] += gneg;
        g->end[y[L - 1]] += gneg;
    }
    memcpy(g->trans, gTacc, sizeof g->trans);
    free(gTacc);
    free(w);
    free(s);
    free(gs);
    free(wend);
    free(nll);
    return loss;
}

/* ---------------------------------------------------------------------------------------------- */
/* Float64 reference                                                                               */

static double bfcrf_lse64(const double *x, int n)
{
    double m = -INFINITY;
    for (int i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
    if (isinf(m)) return m;
    double sum = 0.0;
    for (int i = 0; i < n; ++i) sum += exp(x[i] - m);
    return m + log(sum);
}

void bfcrf_reference(const bfcrf_params *P, const float *emis, const int *tags, int len, double *logz, double *gold,
                   double *marg)
{
    double *a = malloc((size_t)len * NT * sizeof *a), *be = malloc((size_t)len * NT * sizeof *be);
    if (!a || !be) abort();
    double x[NT];
    for (int j = 0; j < NT; ++j) a[j] = (double)P->start[j] + emis[j];
    for (int t = 1; t < len; ++t)
        for (int j = 0; j < NT; ++j) {
            for (int i = 0; i < NT; ++i) x[i] = a[(t - 1) * NT + i] + P->trans[i * NT + j];
            a[t * NT + j] = bfcrf_lse64(x, NT) + emis[(size_t)t * NT + j];
        }
    for (int j = 0; j < NT; ++j) x[j] = a[(len - 1) * NT + j] + P->end[j];
    double lz = bfcrf_lse64(x, NT);
    *logz = lz;
    double gs = (double)P->start[tags[0]] + emis[tags[0]];
    for (int t = 1; t < len; ++t) gs += (double)P->trans[tags[t - 1] * NT + tags[t]] + emis[(size_t)t * NT + tags[t]];
    gs += P->end[tags[len - 1]];
    *gold = gs;
    if (marg) {
        for (int j = 0; j < NT; ++j) be[(len - 1) * NT + j] = P->end[j];
        for (int t = len - 2; t >= 0; --t)
            for (int i = 0; i < NT; ++i) {
                for (int j = 0; j < NT; ++j)
                    x[j] = (double)P->trans[i * NT + j] + emis[(size_t)(t + 1) * NT + j] + be[(t + 1) * NT + j];
                be[t * NT + i] = bfcrf_lse64(x, NT);
            }
        for (int k = 0; k < len * NT; ++k) marg[k] = exp(a[k] + be[k] - lz);
    }
    free(a);
    free(be);
}

/* ---------------------------------------------------------------------------------------------- */
/* Probe inputs                                                                                    */

void bfcrf_probe_inputs(uint64_t seed, int batch, float scale, bfcrf_params *P, float *emis)
{
    float tr[NTT];
    lab_rng_fill_normal(tr, NTT, seed, BFCRF_STREAM_PROBE, 0);
    for (int i = 0; i < NT; ++i)
        for (int j = 0; j < NT; ++j)
            P->trans[i * NT + j] = bfcrf_allowed(i, j) ? lab_bf16_round(0.5f * tr[i * NT + j]) : -INFINITY;
    for (int j = 0; j < NT; ++j) {
        P->start[j] = bfcrf_start_allowed(j) ? lab_bf16_round(0.5f * tr[j]) : -INFINITY;
        P->end[j] = lab_bf16_round(0.25f * tr[NT + j]);
    }
    size_t n = (size_t)batch * BFCRF_TMAX * NT;
    lab_rng_fill_normal(emis, n, seed, BFCRF_STREAM_PROBE, NTT);
    for (size_t k = 0; k < n; ++k) emis[k] = lab_bf16_round(scale * emis[k]);
}
