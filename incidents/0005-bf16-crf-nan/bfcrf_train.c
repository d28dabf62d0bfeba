/* bfcrf_train: the synthetic BIO tagger of incident 0005 (linear bf16 emissions over token features + the CRF) and its Adam training loop with warm-up and gradient clipping. */
#include "bfcrf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lab_format.h"
#include "lab_rng.h"

#define NT BFCRF_TAGS
#define NTT (BFCRF_TAGS * BFCRF_TAGS)
#define NF BFCRF_FEAT

/* Parameter layout in one float32 master vector. */
#define OFF_W 0                    /* W[f * NT + j] */
#define OFF_B (OFF_W + NF * NT)    /* bias[j] */
#define OFF_T (OFF_B + NT)         /* learned transitions [i * NT + j] (forbidden entries masked) */
#define OFF_S (OFF_T + NTT)        /* start */
#define OFF_E (OFF_S + NT)         /* end */
#define NPARAM (OFF_E + NT)

/* Feature noise: token features are the tag's prototype plus BFCRF_NOISE * standard normal. */
#define BFCRF_NOISE 1.5f
/* Initial logits' standard deviation, about a freshly initialised BERT tagger's head. */
#define BFCRF_INIT_LOGIT_STD 0.5
/* Adam as torch.optim.Adam's defaults. */
#define ADAM_B1 0.9
#define ADAM_B2 0.999
#define ADAM_EPS 1e-8

/* Next tag of the synthetic BIO chain from uniform u in [0, 1): from O: O 0.6, B-k 0.4/16 each; from B-k
 * or I-k: I-k 0.6, O 0.25, B-m 0.15/16 each; the first tag as after O. Only grammatical sequences. */
static int bfcrf_next_tag(int prev, float u)
{
    int inside = prev != 0;
    float p_stay = inside ? 0.6f : 0.6f;
    if (u < p_stay) return inside ? (prev & 1 ? prev + 1 : prev) : 0;
    if (inside && u < 0.85f) return 0;
    float lo = inside ? 0.85f : 0.6f;
    int k = (int)((u - lo) / (1.0f - lo) * BFCRF_TYPES);
    if (k >= BFCRF_TYPES) k = BFCRF_TYPES - 1;
    return 1 + 2 * k;
}

/* Sequence q of a run: length in [BFCRF_TMIN, BFCRF_TMAX] from word q * (BFCRF_TMAX + 1) of the label stream, the
 * tags from the uniforms that follow, features x[t * NF + f] = proto[tag] + noise (word (q * BFCRF_TMAX + t) *
 * NF + f of the noise stream), rounded to bf16 as the model's input activations. Padding: tag 0, x 0. */
static void bfcrf_make_seq(uint64_t seed, uint64_t q, const float *proto, float scale, int *len, int *tags, float *x)
{
    uint64_t base = q * (BFCRF_TMAX + 1);
    /* Lengths skewed short, as in text corpora: L = TMIN + floor((TMAX - TMIN + 1) u^2), mean about 53. */
    float ul = lab_rng_uniform(seed, BFCRF_STREAM_LABEL, base);
    int L = BFCRF_TMIN + (int)((float)(BFCRF_TMAX - BFCRF_TMIN + 1) * (ul * ul));
    if (L > BFCRF_TMAX) L = BFCRF_TMAX;
    float u[BFCRF_TMAX];
    lab_rng_fill_uniform(u, (uint64_t)L, seed, BFCRF_STREAM_LABEL, base + 1);
    int prev = 0;
    for (int t = 0; t < BFCRF_TMAX; ++t) {
        if (t < L) prev = bfcrf_next_tag(prev, u[t]);
        tags[t] = t < L ? prev : 0;
    }
    lab_rng_fill_normal(x, (uint64_t)L * NF, seed, BFCRF_STREAM_NOISE, q * BFCRF_TMAX * NF);
    for (int t = 0; t < L; ++t)
        for (int f = 0; f < NF; ++f)
            x[t * NF + f] = lab_bf16_round(scale * (proto[tags[t] * NF + f] + BFCRF_NOISE * x[t * NF + f]));
    memset(x + (size_t)L * NF, 0, (size_t)(BFCRF_TMAX - L) * NF * sizeof *x);
    *len = L;
}

/* The CRF's view of the parameters: learned values (bf16-rounded in the bug) with -inf where forbidden. */
static void bfcrf_view(const float *p, bfcrf_prec prec, bfcrf_params *P)
{
    int bf = prec == BFCRF_PREC_BF16;
    for (int i = 0; i < NT; ++i)
        for (int j = 0; j < NT; ++j) {
            float v = p[OFF_T + i * NT + j];
            P->trans[i * NT + j] = bfcrf_allowed(i, j) ? (bf ? lab_bf16_round(v) : v) : -INFINITY;
        }
    for (int j = 0; j < NT; ++j) {
        float s = p[OFF_S + j], e = p[OFF_E + j];
        P->start[j] = bfcrf_start_allowed(j) ? (bf ? lab_bf16_round(s) : s) : -INFINITY;
        P->end[j] = bf ? lab_bf16_round(e) : e;
    }
}

/* The share of the view's finite parameters that are bf16 values (the precision the CRF used them in). */
static double bfcrf_view_bf16_frac(const bfcrf_params *P)
{
    size_t n = 0, bf = 0;
    for (int k = 0; k < NT * NT + 2 * NT; ++k) {
        float v = k < NT * NT ? P->trans[k] : k < NT * NT + NT ? P->start[k - NT * NT] : P->end[k - NT * NT - NT];
        if (!isfinite(v)) continue;
        n++;
        bf += lab_bf16_round(v) == v;
    }
    return n ? (double)bf / (double)n : 0.0;
}

void bfcrf_clip_grads(float *g, size_t n, double max_norm)
{
    float sq = 0.0f;
    for (size_t k = 0; k < n; ++k) sq += g[k] * g[k];
    float norm = sqrtf(sq);
    float coef = (float)max_norm / (norm + 1e-6f);
    if (!(coef >= 1.0f))
        for (size_t k = 0; k < n; ++k) g[k] *= coef;
}

static int bfcrf_finite(float v) { return !isnan(v) && !isinf(v); }

/* The dual loss's token cross-entropy and the weighting of the CRF term, in place on one step's outputs:
 * returns the mean cross-entropy over the batch's valid tokens, log-softmax over the 33 bf16 logits in float32
 * (autocast runs cross_entropy in float32); cb->demis becomes bf16(bf16(dCE) + bf16(w * dCRF)) (each gradient
 * reaches the bf16 logits in bf16, and autograd adds the two there), w = bf16(crf_weight) in the bug (the
 * loss sum is bf16) and crf_weight in the fix; the CRF parameter gradients g are scaled by w (rounded to bf16
 * in the bug). Never fails. */
static double bfcrf_dual_loss(bfcrf_batch *cb, bfcrf_prec prec, double crf_weight, bfcrf_grads *g)
{
    int bf = prec == BFCRF_PREC_BF16;
    float w = bf ? lab_bf16_round((float)crf_weight) : (float)crf_weight;
    int ntok = 0;
    for (int b = 0; b < cb->batch; ++b) ntok += cb->len[b];
    double ce = 0.0;
    for (int b = 0; b < cb->batch; ++b)
        for (int t = 0; t < cb->len[b]; ++t) {
            size_t o = ((size_t)b * BFCRF_TMAX + t) * NT;
            const float *e = cb->emis + o;
            float m = e[0];
            for (int j = 1; j < NT; ++j) m = e[j] > m ? e[j] : m;
            float s = 0.0f;
            for (int j = 0; j < NT; ++j) s += expf(e[j] - m);
            float lse = m + logf(s);
            int y = cb->tags[(size_t)b * BFCRF_TMAX + t];
            ce += (double)(lse - e[y]);
            for (int j = 0; j < NT; ++j) {
                float d = (expf(e[j] - lse) - (j == y ? 1.0f : 0.0f)) / (float)ntok;
                float dc = w * cb->demis[o + j];
                cb->demis[o + j] = lab_bf16_round(lab_bf16_round(d) + lab_bf16_round(dc));
            }
        }
    for (int k = 0; k < NT * NT; ++k) g->trans[k] = bf ? lab_bf16_round(w * g->trans[k]) : w * g->trans[k];
    for (int j = 0; j < NT; ++j) {
        g->start[j] = bf ? lab_bf16_round(w * g->start[j]) : w * g->start[j];
        g->end[j] = bf ? lab_bf16_round(w * g->end[j]) : w * g->end[j];
    }
    return ntok > 0 ? ce / ntok : 0.0;
}

lab_status bfcrf_train(uint64_t seed, const bfcrf_train_cfg *cfg, bfcrf_train_stats *st)
{
    float *lc = st->loss_curve, *gc = st->logit_curve;
    memset(st, 0, sizeof *st);
    st->loss_curve = lc;
    st->logit_curve = gc;
    st->min_loss = INFINITY;
    st->final_loss = NAN;
    if (!(cfg->lr > 0) || cfg->warmup < 0 || cfg->steps < 1 || cfg->batch < 1 || cfg->batch > 256 ||
        (cfg->prec != BFCRF_PREC_BF16 && cfg->prec != BFCRF_PREC_F32) || !(cfg->clip >= 0) ||
        (cfg->dual_loss && !(cfg->crf_weight > 0)))
        return lab_err_set(LAB_ERR_ARG, "bfcrf_train: bad config (lr %g, warmup %d, steps %d, batch %d, clip %g)",
                           cfg->lr, cfg->warmup, cfg->steps, cfg->batch, cfg->clip);
    const int B = cfg->batch, bf = cfg->prec == BFCRF_PREC_BF16;
    clock_t c0 = clock();
    bfcrf_batch cb;
    lab_status s = bfcrf_batch_init(&cb, B);
    if (s != LAB_OK) return s;
    float *p = calloc(NPARAM, sizeof *p), *gr = calloc(NPARAM, sizeof *gr);
    double *m = calloc(NPARAM, sizeof *m), *v = calloc(NPARAM, sizeof *v);
    float *x = malloc((size_t)B * BFCRF_TMAX * NF * sizeof *x), *proto = malloc(NT * NF * sizeof *proto);
    bfcrf_params *P = malloc(sizeof *P);
    bfcrf_grads *G = malloc(sizeof *G);
    if (!p || !gr || !m || !v || !x || !proto || !P || !G) {
        s = lab_err_set(LAB_ERR_NOMEM, "bfcrf_train: out of memory");
        goto done;
    }
    /* Prototypes: normal per tag and feature. Initialisation: W normal with the std that gives initial logits of std BFCRF_INIT_LOGIT_STD, bias 0, CRF tables uniform in
     * [-0.1, 0.1) as pytorch-crf's reset_parameters. */
    lab_rng_fill_normal(proto, NT * NF, seed, BFCRF_STREAM_PROTO, 0);
    lab_rng_fill_normal(p + OFF_W, NF * NT, seed, BFCRF_STREAM_INIT, 0);
    float wstd = (float)(BFCRF_INIT_LOGIT_STD / (cfg->feat_scale * sqrt(NF * (1.0 + BFCRF_NOISE * BFCRF_NOISE))));
    for (int k = 0; k < NF * NT; ++k) p[OFF_W + k] *= wstd;
    lab_rng_fill_uniform(p + OFF_T, NTT + 2 * NT, seed, BFCRF_STREAM_INIT, NF * NT);
    for (int k = OFF_T; k < NPARAM; ++k) p[k] = p[k] * 0.2f - 0.1f;

    double tail_sum = 0.0, ce_sum = 0.0;
    int tail_n = 0, ce_n = 0;
    for (int step = 1; step <= cfg->steps; ++step) {
        /* Batch and bf16 emissions: E = bf16(sum_f x W16 + b16), float32 accumulation in f order. */
        float W16[NF * NT], b16[NT];
        for (int k = 0; k < NF * NT; ++k) W16[k] = lab_bf16_round(p[OFF_W + k]);
        for (int j = 0; j < NT; ++j) b16[j] = lab_bf16_round(p[OFF_B + j]);
        double maxlogit = 0.0;
        for (int b = 0; b < B; ++b) {
            uint64_t q = (uint64_t)(step - 1) * B + b;
            float *xb = x + (size_t)b * BFCRF_TMAX * NF;
            bfcrf_make_seq(seed, q, proto, (float)cfg->feat_scale, &cb.len[b], cb.tags + (size_t)b * BFCRF_TMAX, xb);
            float *e = cb.emis + (size_t)b * BFCRF_TMAX * NT;
            memset(e, 0, (size_t)BFCRF_TMAX * NT * sizeof *e);
            for (int t = 0; t < cb.len[b]; ++t)
                for (int j = 0; j < NT; ++j) {
                    float acc = 0.0f;
                    for (int f = 0; f < NF; ++f) acc += xb[t * NF + f] * W16[f * NT + j];
                    e[t * NT + j] = lab_bf16_round(acc + b16[j]);
                    if (fabs(e[t * NT + j]) > maxlogit) maxlogit = fabs(e[t * NT + j]);
                }
        }
        if (maxlogit > st->max_abs_logit) st->max_abs_logit = maxlogit;
        if (st->logit_curve) st->logit_curve[step - 1] = (float)maxlogit;

        bfcrf_view(p, cfg->prec, P);
        st->crf_view_bf16_frac = bfcrf_view_bf16_frac(P);
        float loss = bfcrf_loss_grad(P, &cb, cfg->prec, G);
        float total = loss;
        if (cfg->dual_loss) {
            double ce = bfcrf_dual_loss(&cb, cfg->prec, cfg->crf_weight, G);
            total = (float)ce + (bf ? lab_bf16_round((float)cfg->crf_weight) : (float)cfg->crf_weight) * loss;
            if (step > cfg->steps - 50) ce_sum += ce, ++ce_n;
        }
        if (st->loss_curve) st->loss_curve[step - 1] = total;
        st->steps_run = step;
        for (int b = 0; b < B; ++b) {
            double a = fabs(cb.logz[b]) > fabs(cb.gold[b]) ? fabs(cb.logz[b]) : fabs(cb.gold[b]);
            if (a > st->max_abs_score) st->max_abs_score = a;
        }

        /* Invariants of the true CRF, watched on what the run computed. */
        if (bfcrf_finite(loss) && loss < st->min_loss) st->min_loss = loss;
        if (!st->first_neg_loss_step && loss < -BFCRF_TOL_NEG_LOSS) st->first_neg_loss_step = step;
        for (int b = 0; b < B; ++b)
            for (int t = 0; t < cb.len[b]; ++t) {
                double ms = cb.msum[(size_t)b * BFCRF_TMAX + t], mx = cb.mmax[(size_t)b * BFCRF_TMAX + t];
                double err = fabs(ms - 1.0);
                if (isfinite(err) && err > st->max_marg_sum_err) st->max_marg_sum_err = err;
                if (isfinite(mx) && mx > st->max_marg) st->max_marg = mx;
                if (!st->first_marg_step && !(err <= BFCRF_TOL_MARG_SUM && mx <= 1.0 + BFCRF_TOL_MARG_SUM))
                    st->first_marg_step = step;
            }
        if (step > cfg->steps - 50) {
            tail_sum += total;
            ++tail_n;
        }

        /* The emission gradient enters the bf16 linear layer: the fix's float32 gradient is cast back. */
        if (!bf)
            for (size_t k = 0; k < (size_t)B * BFCRF_TMAX * NT; ++k) cb.demis[k] = lab_bf16_round(cb.demis[k]);
        /* Linear layer backward: dW = x^T dE and db = sum dE, float32 accumulation, rounded to bf16. */
        for (int f = 0; f < NF; ++f)
            for (int j = 0; j < NT; ++j) {
                float acc = 0.0f;
                for (int b = 0; b < B; ++b)
                    for (int t = 0; t < cb.len[b]; ++t)
                        acc += x[((size_t)b * BFCRF_TMAX + t) * NF + f] * cb.demis[((size_t)b * BFCRF_TMAX + t) * NT + j];
                gr[OFF_W + f * NT + j] = lab_bf16_round(acc);
            }
        for (int j = 0; j < NT; ++j) {
            float acc = 0.0f;
            for (int b = 0; b < B; ++b)
                for (int t = 0; t < cb.len[b]; ++t) acc += cb.demis[((size_t)b * BFCRF_TMAX + t) * NT + j];
            gr[OFF_B + j] = lab_bf16_round(acc);
        }
        memcpy(gr + OFF_T, G->trans, sizeof G->trans);
        memcpy(gr + OFF_S, G->start, sizeof G->start);
        memcpy(gr + OFF_E, G->end, sizeof G->end);

        int nonfinite = !bfcrf_finite(loss), nf_grads = 0, nan_grads = 0;
        double huge = 0.0;
        for (int k = 0; k < NPARAM; ++k) {
            if (!bfcrf_finite(gr[k])) {
                ++nf_grads;
                nan_grads += isnan(gr[k]) != 0;
            } else if (fabs(gr[k]) > huge) {
                huge = fabs(gr[k]);
            }
        }
        int emis_inf = 0;
        for (size_t k = 0; k < (size_t)B * BFCRF_TMAX * NT; ++k) emis_inf += isinf(cb.demis[k]) != 0;
        if (!st->first_grad_overflow_step && (nf_grads || huge > BFCRF_GRAD_HUGE)) st->first_grad_overflow_step = step;

        /* Gradient clipping as torch.nn.utils.clip_grad_norm_: total norm in float32, coefficient
         * max_norm / (norm + 1e-6) applied when below 1 (an inf norm gives 0, and inf * 0 = NaN). */
        if (cfg->clip > 0) bfcrf_clip_grads(gr, NPARAM, cfg->clip);
        /* Adam, warm-up then constant learning rate. Moments in double (torch keeps them float32; the
         * difference is far below the bf16 effects studied). */
        double lr = cfg->lr * (cfg->warmup > 0 && step < cfg->warmup ? (double)step / cfg->warmup : 1.0);
        double bc1 = 1.0 - pow(ADAM_B1, step), bc2 = 1.0 - pow(ADAM_B2, step);
        int nf_params = 0;
        for (int k = 0; k < NPARAM; ++k) {
            double gk = gr[k];
            m[k] = ADAM_B1 * m[k] + (1.0 - ADAM_B1) * gk;
            v[k] = ADAM_B2 * v[k] + (1.0 - ADAM_B2) * gk * gk;
            p[k] = (float)(p[k] - lr * (m[k] / bc1) / (sqrt(v[k] / bc2) + ADAM_EPS));
            if (!bfcrf_finite(p[k])) ++nf_params;
        }
        if (nonfinite || nf_grads || nf_params) {
            if (!st->first_nonfinite_step) {
                st->first_nonfinite_step = step;
                st->nonfinite_count = nf_grads;
                st->nf_loss = nonfinite;
                st->nf_grad_nan = nan_grads;
                st->nf_emis_inf = emis_inf;
                st->nf_params = nf_params;
            }
            if (cfg->stop_at_nonfinite) break;
        }
    }
    st->final_loss = tail_n > 0 ? tail_sum / tail_n : NAN;
    st->final_ce = ce_n > 0 ? ce_sum / ce_n : NAN;
    if (isinf(st->min_loss)) st->min_loss = NAN;
    st->cpu_s = (double)(clock() - c0) / CLOCKS_PER_SEC;
done:
    bfcrf_batch_free(&cb);
    free(p);
    free(gr);
    free(m);
    free(v);
    free(x);
    free(proto);
    free(P);
    free(G);
    return s;
}
