/* crf: a 33-tag BIO linear-chain CRF (forward, gold score, autograd-style backward) in bf16 mixed precision, float32 and float64, its tagger training loop and the criterion of incident 0005. */
#ifndef CRF_H
#define CRF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lab_err.h"
#include "lab_hd.h"
#include "lab_incident.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Tags: 0 = O, 1 + 2k = B-k, 2 + 2k = I-k for the CRF_TYPES entity types. */
#define CRF_TYPES 16
#define CRF_TAGS (1 + 2 * CRF_TYPES) /* 33 */
#define CRF_TMAX 128                 /* longest sequence; shorter ones are padded and masked */
#define CRF_TMIN 16                  /* shortest sequence */
#define CRF_FEAT 32                  /* token features of the linear emission model */

/* Philox streams (index conventions in crf.c next to each use). */
#define CRF_STREAM_PROTO 0x0005c001u  /* per-tag feature prototypes */
#define CRF_STREAM_NOISE 0x0005c002u  /* per-token feature noise */
#define CRF_STREAM_LABEL 0x0005c003u  /* label chain and lengths */
#define CRF_STREAM_INIT 0x0005c004u   /* parameter initialisation */
#define CRF_STREAM_PROBE 0x0005c005u  /* hand-made probe inputs (tests, CUDA check, goldens) */

/* Precision of the CRF (everything else is the same in both trainings). */
typedef enum {
    CRF_PREC_BF16 = 0, /* the bug: every elementwise result rounded to bf16, sums in float32 rounded to bf16 */
    CRF_PREC_F32 = 1   /* the fix: the CRF in float32 from upcast bf16 emissions */
} crf_prec;

/* 1 when the transition i -> j is allowed by the BIO grammar (I-k only after B-k or I-k). */
static inline LAB_HD int crf_allowed(int i, int j)
{
    if (j == 0 || (j & 1)) return 1;    /* O or B-k: from anything */
    return i == j || i == j - 1;        /* I-k: from B-k (j - 1) or I-k */
}
/* 1 when a sequence may start with tag j (not with an I-k). */
static inline LAB_HD int crf_start_allowed(int j) { return j == 0 || (j & 1); }

/* CRF parameters as the CRF sees them: forbidden entries are -inf (a constant mask added to the
 * learned table), allowed ones the learned values. Row-major trans[i * CRF_TAGS + j] for i -> j. */
typedef struct {
    float trans[CRF_TAGS * CRF_TAGS];
    float start[CRF_TAGS];
    float end[CRF_TAGS];
} crf_params;

/* Gradients of the CRF loss (already divided as the loss is: mean over the batch). */
typedef struct {
    float trans[CRF_TAGS * CRF_TAGS];
    float start[CRF_TAGS];
    float end[CRF_TAGS];
} crf_grads;

/* A batch of padded sequences. emis[(b * CRF_TMAX + t) * CRF_TAGS + j], tags[b * CRF_TMAX + t], len[b]
 * (positions t >= len[b] are padding: mask 0, tag 0 as labels.clamp(min=0) gives). */
typedef struct {
    int batch;
    int *len;
    int *tags;
    float *emis;     /* bf16 values (the tagger's bf16 logits) */
    float *demis;    /* out: dLoss/demis, same layout, zero on padding */
    double *logz;    /* out: per sequence log-partition as computed (bf16/f32 value widened) */
    double *gold;    /* out: per sequence gold-path score as computed */
    double *msum;    /* out: per valid position, sum_j dlogZ/demis (the marginals' sum; 1 exactly) */
    double *mmax;    /* out: per valid position, max_j dlogZ/demis (a marginal: in [0, 1] exactly) */
    double *marg;    /* optional out (caller-allocated, batch * CRF_TMAX * CRF_TAGS): dlogZ/demis, the marginals */
} crf_batch;

/* Allocates a batch of `batch` sequences (zeroed). LAB_ERR_ARG for batch < 1, LAB_ERR_NOMEM. */
lab_status crf_batch_init(crf_batch *cb, int batch);
void crf_batch_free(crf_batch *cb);

/* Loss of the batch, mean over sequences of logZ - gold, computed in precision p, with gradients:
 * g (zeroed here) for the CRF parameters and cb->demis for the emissions; cb->logz/gold/msum/mmax
 * filled. The bf16 path rounds as an autograd framework running the CRF in bf16 does: see crf.c.
 * Returns the loss as a float (bf16 value in CRF_PREC_BF16). Never fails. */
float crf_loss_grad(const crf_params *P, crf_batch *cb, crf_prec p, crf_grads *g);

/* Float64 reference of one sequence: log-partition, gold score and the marginals
 * marg[t * CRF_TAGS + j] = P(y_t = j) (exact forward-backward in log space) from the same float
 * inputs. marg may be NULL. Never fails. */
void crf_reference(const crf_params *P, const float *emis, const int *tags, int len, double *logz, double *gold,
                   double *marg);

/* The bf16 forward of one sequence alone, as crf_loss_grad computes it, storing every step's scores
 * alpha[t * CRF_TAGS + j] (bf16 values) and returning the bf16 log-partition. The CPU side of the GPU
 * bit-for-bit check. Never fails. */
float crf_forward_bf16(const crf_params *P, const float *emis, int len, float *alpha);

/* Training ------------------------------------------------------------------------------------- */

typedef struct {
    double lr;          /* peak learning rate */
    int warmup;         /* linear warm-up steps */
    int steps;          /* full run */
    int batch;          /* sequences per step */
    crf_prec prec;
    int stop_at_nonfinite; /* stop at the first step with a non-finite loss, gradient or parameter */
    double clip;        /* max gradient norm (0: none) */
    double feat_scale;  /* scale of the token features (the hidden states' size) */
} crf_train_cfg;

/* What one training run measured. Steps are 1-based; 0 means "never". */
typedef struct {
    int steps_run;
    int first_nonfinite_step;   /* loss, a gradient or a parameter non-finite */
    int first_neg_loss_step;    /* batch loss below -CRF_TOL_NEG_LOSS */
    int first_marg_step;        /* a marginal sum off 1 by more than CRF_TOL_MARG_SUM, or a marginal > 1 + tol */
    int first_grad_overflow_step; /* first step with a gradient of magnitude > CRF_GRAD_HUGE */
    double min_loss;            /* over steps (finite ones) */
    double max_marg_sum_err;    /* max |sum_j marg - 1| over every valid position of every step (finite ones) */
    double max_marg;            /* largest finite marginal seen */
    double max_abs_logit;       /* largest |emission| seen */
    double max_abs_score;       /* largest |logZ| or |gold score| seen */
    double final_loss;          /* mean loss of the last 50 steps run (NaN if any non-finite) */
    double nonfinite_count;     /* non-finite parameter gradients at the first non-finite step (before clipping) */
    int nf_loss;                /* at that step: the loss was non-finite */
    int nf_grad_nan;            /*   parameter gradients that were NaN (the rest of nonfinite_count were inf) */
    int nf_emis_inf;            /*   emission gradients (dLoss/demis) that were inf */
    int nf_params;              /*   parameters non-finite after the update */
    float *loss_curve;          /* optional: caller-provided [steps] buffer of batch losses */
    float *logit_curve;         /* optional: caller-provided [steps] max |emission| per step */
    double cpu_s;               /* process CPU seconds the run took */
} crf_train_stats;

/* Gradient clipping as torch.nn.utils.clip_grad_norm_ does it: the float32 norm of all n gradients, and where
 * max_norm / (norm + 1e-6) is below 1 every gradient is multiplied by it. An inf gradient makes the norm inf and
 * the coefficient 0, and inf * 0 = NaN; a NaN one makes every gradient NaN. Never fails. */
void crf_clip_grads(float *g, size_t n, double max_norm);

/* Trains the tagger (linear emissions + CRF) from seed for cfg->steps steps; see crf.c for the data
 * and optimizer. LAB_ERR_ARG for a bad config, LAB_ERR_NOMEM. */
lab_status crf_train(uint64_t seed, const crf_train_cfg *cfg, crf_train_stats *st);

/* Tolerances of the criterion (README "What the criterion checks" justifies them). */
#define CRF_SCORE_BOUND 4096.0 /* the bounds below hold while every |score| < 2^12 (float32 spacing <= 2^-11) */
#define CRF_TOL_NEG_LOSS 0.125  /* loss below zero / loss off the float64 reference: 2 x 128 roundings of 2^-12 */
#define CRF_TOL_MARG_SUM 0.1    /* |sum_j marginal - 1|, |marginal - reference|: (1 + 3 * 2^-12)^127 - 1 */
#define CRF_GRAD_HUGE 1e6       /* a gradient element far beyond what the true CRF gives (|d/demis| <= 1/B) */

/* The incident defaults. */
#define CRF_DEFAULT_LR 1.5e-4
#define CRF_DEFAULT_WARMUP 500
#define CRF_DEFAULT_STEPS 1500
#define CRF_DEFAULT_BATCH 2
#define CRF_DEFAULT_CLIP 1.0
#define CRF_DEFAULT_FEAT_SCALE 64.0
/* Learning rate of a case: CRF_LRS[(seed - 1) % CRF_N_LRS] (seed 0 takes the first). */
#define CRF_N_LRS 3
extern const double crf_lrs[CRF_N_LRS];
/* The training config of a case of seed `seed` in precision p (full run, stop at the first non-finite). */
crf_train_cfg crf_case_cfg(uint64_t seed, crf_prec p);

/* Seeds of a default replay: each seed trains the tagger twice (fix: the full CRF_DEFAULT_STEPS, about 2 CPU-s;
 * bug: up to its first NaN, about 1 CPU-s), so the default replay stays near 20 CPU-s (README says why). */
#define CRF_DEFAULT_SEEDS 6

/* Probe: CRF_PROBE_BATCH sequences of CRF_TMAX tokens, emissions CRF_PROBE_SCALE * normal, the CRF alone against
 * the float64 reference (scores about 2e3, as a trained tagger's). Goldens at CRF_GOLDEN_SEED. */
#define CRF_PROBE_BATCH 2
#define CRF_PROBE_SCALE 8.0f
#define CRF_GOLDEN_SEED 1u

/* "<root>/incidents/0005-bf16-crf-nan/golden". */
void crf_golden_dir(const char *root, char *out, size_t len);
/* Float64 reference of the probe of seed: logz [CRF_PROBE_BATCH], marg [CRF_PROBE_BATCH][CRF_TMAX][CRF_TAGS].
 * LAB_ERR_NOMEM. */
lab_status crf_probe_reference(uint64_t seed, double *logz, double *marg);
/* The CRF of precision p on the probe of seed: max |logZ - reference| and max |marginal - reference|; at
 * CRF_GOLDEN_SEED with golden_dir non-NULL the reference is the golden, loaded and verified (errors
 * LAB_ERR_IO/NOTFOUND/MISMATCH/FORMAT naming the file), and *golden_checked is set. */
lab_status crf_probe_check(uint64_t seed, crf_prec p, const char *golden_dir, double *logz_err, double *marg_err,
                           int *golden_checked);
/* The criterion over a training run and the probe: records the metrics and the verdict in r (see README). */
void crf_criterion(const crf_train_cfg *cfg, const crf_train_stats *s, double probe_logz_err, double probe_marg_err,
                   int golden_checked, lab_case_result *r);
/* Writes the probe goldens of CRF_GOLDEN_SEED into dir from the float64 reference. */
lab_status crf_golden_bless(const char *dir);

/* The incident descriptor (registered in crf_incident.c). */
extern const lab_incident crf_incident;

/* Run functions on the CPU. */
lab_status crf_run_cpu_fix(const lab_case *c, lab_case_result *r);
lab_status crf_run_cpu_bug(const lab_case *c, lab_case_result *r);

/* Probe inputs (CUDA check, goldens, tests): `batch` sequences of length CRF_TMAX with emissions
 * scale * normal(CRF_STREAM_PROBE) rounded to bf16 and a transition table of normal/2 values, the
 * forbidden entries -inf, all rounded to bf16. emis: batch * CRF_TMAX * CRF_TAGS. Never fails. */
void crf_probe_inputs(uint64_t seed, int batch, float scale, crf_params *P, float *emis);

#ifdef LAB_HAVE_CUDA
/* The bf16 forward on the GPU with __nv_bfloat16 (crf.cu): every sequence of `batch` (length
 * CRF_TMAX) one block; alpha (batch * CRF_TMAX * CRF_TAGS) and logz (batch) come back as floats.
 * LAB_ERR_DEVICE with the CUDA error text when a call fails. */
lab_status crf_cuda_forward_bf16(const crf_params *P, const float *emis, int batch, float *alpha, float *logz);
/* The float32 forward (the fix) on the GPU, same layout; logz only. */
lab_status crf_cuda_forward_f32(const crf_params *P, const float *emis, int batch, float *logz);
/* `lab bench 0005`: bf16 and float32 CRF forward kernels timed in one run, their ratio, and the device's
 * device-to-device copy bandwidth. LAB_ERR_UNSUPPORTED without a device. */
lab_status crf_bench(FILE *out);
lab_status crf_run_cuda_fix(const lab_case *c, lab_case_result *r);
lab_status crf_run_cuda_bug(const lab_case *c, lab_case_result *r);
#endif

#ifdef __cplusplus
}
#endif

#endif
