/* lab_semicrf: a semi-Markov CRF (cumulative-score segments) with a float64 reference and a CPU emulation of its GPU backward kernel (padded lanes, guard-zoned memory, seeded atomic schedules). */
#ifndef LAB_SEMICRF_H
#define LAB_SEMICRF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "lab_err.h"
#include "lab_incident.h"

/* The incidents' shapes: 39 real classes on 64 lanes, durations 1..K, sequences up to T. */
#define LAB_SEMICRF_C 39
#define LAB_SEMICRF_C_PAD 64
#define LAB_SEMICRF_K_MAX 30
#define LAB_SEMICRF_T_MAX 500
/* The finite "minus infinity" of the kernels (the write-up's NEG_INF), used for padding lanes and
 * positions past a sequence's end. */
#define LAB_SEMICRF_NEG_INF (-1e9f)

/* Philox streams of the inputs (index = flat element index of the tensor). */
#define LAB_SEMICRF_STREAM_EMIT 0x000c0001u  /* per-position emission scores, normal * 0.5 */
#define LAB_SEMICRF_STREAM_TRANS 0x000c0002u /* transitions, normal * 0.3 */
#define LAB_SEMICRF_STREAM_DUR 0x000c0003u   /* duration bias, normal * 0.3 */
#define LAB_SEMICRF_STREAM_PS 0x000c0004u    /* proj_start, normal * 0.1 */
#define LAB_SEMICRF_STREAM_PE 0x000c0005u    /* proj_end, normal * 0.1 */
#define LAB_SEMICRF_STREAM_LEN 0x000c0006u   /* lengths: uniform */
#define LAB_SEMICRF_STREAM_GUARD 0x000c0007u /* guard-zone contents */
#define LAB_SEMICRF_STREAM_SCHED 0x000c0008u /* atomic schedules (block order) */

/* A problem: inputs in float32 as the model hands them to the kernel. Arrays are C order. */
typedef struct {
    int B, T, K, C;
    int use_proj;        /* proj_start / proj_end present */
    int *len;            /* [B] sequence lengths, 1..T */
    float *cum;          /* [B][T+1][C] cumulative emission scores, cum[b][0][c] = 0 */
    float *trans;        /* [C][C] transition score from class i (previous segment) to j */
    float *dur;          /* [K][C] duration bias of a segment of duration k+1 and class c */
    float *proj_start;   /* [B][T][C] score of a segment starting at t (NULL when !use_proj) */
    float *proj_end;     /* [B][T][C] score of a segment ending at t (last position t) */
} lab_semicrf_problem;

/* Allocates a zeroed problem. LAB_ERR_ARG unless 1 <= B, 1 <= K <= LAB_SEMICRF_K_MAX, 1 <= T <=
 * LAB_SEMICRF_T_MAX, 1 <= C <= LAB_SEMICRF_C_PAD (message names the field); LAB_ERR_NOMEM. On error *p is
 * freed and zeroed. Lengths start at T. */
lab_status lab_semicrf_problem_init(lab_semicrf_problem *p, int B, int T, int K, int C, int use_proj);
void lab_semicrf_problem_free(lab_semicrf_problem *p);
/* LAB_OK when every len[b] lies in 1..T, else LAB_ERR_ARG naming b and the length (the reference, the
 * emulation and the gold segmentation check their problem with it first). */
lab_status lab_semicrf_problem_check(const lab_semicrf_problem *p);

/* Fills a problem from (seed, streams above): emissions e[b][t][c] = 0.5 normal, cum = running sum of e
 * in double rounded to float; trans, dur 0.3 normal; proj 0.1 normal; len[0] = T and len[b > 0]
 * uniform in [T/2, T] (the batch's longest sequence first, as a length-sorted batch has it). Same
 * values on every backend (lab_rng). Never fails. */
void lab_semicrf_problem_fill(lab_semicrf_problem *p, uint64_t seed);

/* ---- float64 reference ------------------------------------------------------------------------ */

/* Gradients of sum_b log Z_b with respect to every input, and the log-partitions. */
typedef struct {
    double *logZ;       /* [B] */
    double *g_cum;      /* [B][T+1][C] */
    double *g_trans;    /* [C][C] */
    double *g_dur;      /* [K][C] */
    double *g_ps;       /* [B][T][C] (zeros without proj) */
    double *g_pe;       /* [B][T][C] */
    double *abs_cum;    /* [B][T+1][C] sum of |contributions| to g_cum (scale of the summation error) */
} lab_semicrf_ref;

/* The float64 sequential reference: forward alpha, log Z, backward beta and segment marginals, gradients
 * as sums of marginals in sequential order. A segment (s, k, c), s + k <= len, scores cum[s+k][c] -
 * cum[s][c] + dur[k-1][c] (+ proj_start[s][c] + proj_end[s+k-1][c]); a segment after another of class i
 * adds trans[i][c]; the first segment has no transition. LAB_ERR_NOMEM; LAB_ERR_ARG for a length outside
 * 1..T (naming b). On error *r is freed and zeroed. */
lab_status lab_semicrf_reference(const lab_semicrf_problem *p, lab_semicrf_ref *r);
void lab_semicrf_ref_free(lab_semicrf_ref *r);
/* Which recurrence a reference follows: incidents 0001/0002's (the first segment takes no transition, abs_cum made)
 * or 0008's upstream one (alpha[0] = 0 and the first segment also takes a transition, from a uniform start, counted
 * in g_trans; abs_cum NULL; 0008's wr_reference). */
typedef enum { LAB_SEMICRF_REF_FIRST_FREE = 0, LAB_SEMICRF_REF_UNIFORM_START = 1 } lab_semicrf_ref_convention;
/* How far reference b (the device's) is from reference a (the CPU's) over every tensor, as a fraction of what two
 * float64 computations of the recurrences may differ by: per tensor max|b - a| / max|a| (log Z: the relative error of
 * each), over 2 (K + 4) 2^-53 max|log Z| (the float32 tolerance's account, lab_semicrf_tolerance, at float64's unit
 * roundoff, for each of the two). At most 1 when both are right; NaN when a value is non-finite. */
double lab_semicrf_ref_disagreement(const lab_semicrf_problem *p, const lab_semicrf_ref *a, const lab_semicrf_ref *b);
/* log Z of batch element b alone in float64 (the forward only), for finite differences. NaN on bad b. */
double lab_semicrf_logz(const lab_semicrf_problem *p, int b);

/* ---- the GPU kernel, emulated on the CPU -------------------------------------------------------- */

/* How the backward's gradient buffers are laid out and indexed by the C_PAD lanes. */
typedef enum {
    LAB_SEMICRF_LAYOUT_UNPADDED, /* bug: buffers sized C, lanes 0..C_PAD-1 index them raw, loads of inputs
                                    raw, masking by multiplication, atomics unmasked */
    LAB_SEMICRF_LAYOUT_CLAMPED,  /* first fix: every index clamped to C-1 (loads and atomics), buffers sized
                                    C, masking by multiplication */
    LAB_SEMICRF_LAYOUT_PADDED    /* fix: gradient buffers padded to C_PAD, writes unclamped into the padding,
                                    loads of unpadded inputs clamped, masking by selection, slice back to C */
} lab_semicrf_layout;

/* How the gradient contributions are accumulated. */
typedef enum {
    LAB_SEMICRF_ACC_F32_ATOMIC,   /* float32 atomics, applied in the schedule's block order */
    LAB_SEMICRF_ACC_F64_ATOMIC,   /* float64 atomics in the schedule's order, rounded to float32 at the end */
    LAB_SEMICRF_ACC_DETERMINISTIC /* no atomics: float32 sums in an order fixed by the shape alone (the CPU
                                     emulation: per-block workspaces and pairwise trees; CUDA: sums organised by
                                     destination, chunk partials and a fixed tree) */
} lab_semicrf_accum;

/* Defensive guards of the write-up (bit flags). */
#define LAB_SEMICRF_GUARD_NEGINF 1u   /* logsumexp: all-NEG_INF input gives NEG_INF (max taken as 0) */
#define LAB_SEMICRF_GUARD_EPS 2u      /* logsumexp: log(sum + 1e-10) */
#define LAB_SEMICRF_GUARD_CLAMP_IN 4u /* clamp alpha, beta and segment+edge scores to [-1e6, 1e6] before the
                                         marginal (NaN stays NaN, as torch.clamp) */
#define LAB_SEMICRF_GUARD_CLAMP_LOG 8u /* clamp the log-marginal to [-80, 80] before exp */
#define LAB_SEMICRF_GUARDS_ALL 15u

/* What neighbouring memory holds, drawn per seed by lab_semicrf_guard_kind. */
typedef enum {
    LAB_SEMICRF_GUARD_ZEROS,     /* freshly cleared memory */
    LAB_SEMICRF_GUARD_FINITE,    /* another tensor's activations: normal values */
    LAB_SEMICRF_GUARD_STALE,     /* stale memory: raw random 32-bit patterns (NaN, Inf, huge values) */
    LAB_SEMICRF_GUARD_SENTINELS  /* a masked tensor: normal values with -inf, +inf and NaN entries */
} lab_semicrf_guard_kind;
/* The guard kind of a seed: uniform over the four kinds (lab_rng stream GUARD, word 0). */
lab_semicrf_guard_kind lab_semicrf_guard_kind_of(uint64_t seed);
const char *lab_semicrf_guard_kind_name(lab_semicrf_guard_kind k);

/* Fills nwords 32-bit words of neighbouring memory with the seed's guard kind; `first` numbers the words
 * in the seed's guard stream (different zones take different ranges). Never fails. */
void lab_semicrf_guard_fill(void *dst, size_t nwords, uint64_t seed, uint64_t first);

typedef struct {
    lab_semicrf_layout layout;
    lab_semicrf_accum accum;
    unsigned guards;          /* LAB_SEMICRF_GUARD_* flags */
    uint64_t guard_seed;      /* seeds the guard-zone contents */
    uint64_t schedule_seed;   /* seeds the block order of the atomics */
    int exact_alloc;          /* a memory checker watches (lab_case.exact_alloc). CUDA: stray layouts' inputs
                                 at their exact size, no guard zones; CPU: the guard zones poisoned for
                                 AddressSanitizer (lab_asan.h), so the first stray access is its report.
                                 0: between guard zones, every stray access counted */
} lab_semicrf_config;

/* The emulated backward's outputs, sliced back to C, and what the memory checker saw. */
typedef struct {
    float *logZ;              /* [B] from the float32 forward */
    float *g_cum;             /* [B][T+1][C] */
    float *g_trans;           /* [C][C] */
    float *g_dur;             /* [K][C] */
    float *g_ps, *g_pe;       /* [B][T][C] */
    double *acc_trans;        /* [C][C] the float64 accumulator before rounding (ACC_F64 only, else NULL) */
    double *acc_dur;          /* [K][C] idem */
    double *acc_cum;          /* [B][T+1][C] idem */
    size_t oob_reads;         /* loads outside their allocation (into guard zones) */
    size_t oob_writes;        /* atomics outside their allocation */
    size_t cross_row_writes;  /* atomics inside the allocation but past the lane's own row */
    size_t same_addr_lanes;   /* lanes of one atomic instruction that share an address with another lane */
    size_t n_atomics;         /* atomic additions issued (all lanes) */
    size_t guard_nonfinite_read; /* OOB loads that returned a non-finite value */
    size_t guard_breach;      /* CUDA, guarded: guard-zone words changed where no stray may reach */
    int contained;            /* CUDA: every gradient buffer between guard zones and guard_breach == 0, so
                                 every access of the run stayed in memory it allocated (and freed) */
    size_t pad_nonzero;       /* padded layout: values of the gradient buffers' padding columns (class >= C,
                                 which the slice back to C drops) that are not 0 after the run (NaN counts);
                                 0 in the other layouts, which have no padding columns */
} lab_semicrf_out;

void lab_semicrf_out_free(lab_semicrf_out *o);

/* Pieces of the float64 reference and of the judge that other semi-CRF models reuse: a logsumexp of n
 * doubles (-inf when all are -inf); the segment score in double of (batch b, start s, duration k, class c);
 * max|a - r| / max|r| over n values (NaN when any a is non-finite, each counted into *nf); the larger of two
 * values, NaN when either is. */
double lab_semicrf_lse_d(const double *x, int n);
double lab_semicrf_seg_d(const lab_semicrf_problem *p, int b, int s, int k, int c);
double lab_semicrf_norm_err(const float *a, const double *r, size_t n, size_t *nf);
double lab_semicrf_max_nan(double a, double b);

/* Runs the kernel as the GPU does, on the CPU: the float32 forward (alpha, log Z) and backward (beta) of
 * the production kernel on C_PAD lanes (padding NEG_INF), then the marginal kernel: one program per
 * (batch element, segment start s), programs taken in the order drawn from cfg->schedule_seed (a seeded
 * permutation: the order in which blocks reach their atomics); each program computes, for k = 1..min(K,
 * len - s), the segment marginals of its C_PAD lanes and, for s > 0, the C_PAD x C_PAD transition tile,
 * and issues its atomics (or, ACC_DETERMINISTIC, writes its workspace). Every buffer lives in an arena
 * with guard zones of seeded contents (cfg->guard_seed), so a load past an allocation returns the
 * neighbour's contents and an atomic past it changes them; both are counted. LAB_ERR_ARG for a bad
 * config or length; LAB_ERR_NOMEM; LAB_ERR_UNSUPPORTED if an access would leave the guard zones (the
 * message names the buffer). On error *o is freed and zeroed. */
lab_status lab_semicrf_emulate(const lab_semicrf_problem *p, const lab_semicrf_config *cfg, lab_semicrf_out *o);

/* The float32 logsumexp of the kernels over x[0..n) with the given guard flags (n >= 1). */
float lab_semicrf_lse_f32(const float *x, int n, unsigned guards);
/* The marginal of the kernels: exp(clamp(a) + clamp(e) + clamp(b) - logZ) with the guard flags. */
float lab_semicrf_marginal_f32(float a, float edge, float b, float logZ, unsigned guards);

/* ---- training (SGD on the CRF parameters) ------------------------------------------------------- */

/* Gold segmentation of a problem from (seed): segments of durations uniform in 1..min(K, 8) and classes
 * uniform, covering each sequence; count features for the NLL gradient. */
typedef struct {
    double *cnt_cum;    /* [B][T+1][C] gold counts (gradient of the gold score w.r.t. cum) */
    double *cnt_trans;  /* [C][C] */
    double *cnt_dur;    /* [K][C] */
    double *cnt_ps, *cnt_pe;
} lab_semicrf_gold;
lab_status lab_semicrf_gold_make(const lab_semicrf_problem *p, uint64_t seed, lab_semicrf_gold *g);
void lab_semicrf_gold_free(lab_semicrf_gold *g);

/* One SGD step on trans and dur of p (float32) for the mean NLL per position: grad = (marginals -
 * gold counts) / positions, from the emulated backward under cfg (its schedule seed as given). *nll gets
 * the mean NLL from the float32 log Z. Errors of lab_semicrf_emulate. */
lab_status lab_semicrf_sgd_step(lab_semicrf_problem *p, const lab_semicrf_gold *g, const lab_semicrf_config *cfg,
                                float lr, double *nll);

/* ---- comparisons and goldens shared by the CRF incidents ------------------------------------------ */

/* The shape of a case from its seed: B = 2, T = {100, 200, 500}[seed % 3], K = 30, C = 39, with proj. */
int lab_semicrf_T_of_seed(uint64_t seed);
/* The seed-batch key of the semi-CRF incidents (lab_incident.batch.key): seeds of one T share a batch. */
uint64_t lab_semicrf_batch_key(uint64_t seed);
/* The scheduler's rough cost of one case of a semi-CRF incident (lab_incident.seed_cost): 0.005 s + 0.1 ms per
 * position of T, from the loaded 1000-seed H100 replays of 0001, 0002 and 0008 (0.014-0.068 s per case, T = 100..500). */
double lab_semicrf_seed_cost(uint64_t seed);
/* Allocates and fills the problem of a case (lab_semicrf_problem_init + fill). Errors of init. */
lab_status lab_semicrf_case_problem(lab_semicrf_problem *p, uint64_t seed);

/* A seed's case group (lab_incident setup/teardown of 0001 and 0002): the case problem of the seed and its
 * float64 reference, made once and shared read-only by every variant of the seed. */
typedef struct {
    lab_semicrf_problem p;
    lab_semicrf_ref ref;      /* on CUDA the device's (lab_semicrf_reference_cuda), else the CPU's */
    double ref_check;         /* CUDA, at lab_case_xcheck seeds: lab_semicrf_ref_disagreement of the device's reference
                                 with the CPU's (beyond 1 the setup fails: the device reference is wrong); else NaN */
} lab_semicrf_group;
/* A case group's float64 reference of p: cpu_ref's (lab_semicrf_reference or 0008's wr_reference, following conv) on
 * the CPU backend; on CUDA the device's (lab_semicrf_reference_cuda), and at lab_case_xcheck seeds also cpu_ref's, with
 * *check (else NaN) their lab_semicrf_ref_disagreement: beyond 1 it is LAB_ERR_MISMATCH naming the seed (the device
 * reference is wrong; the CPU's stays the authority, and the goldens its). Errors of either reference. */
lab_status lab_semicrf_case_reference(const lab_case *c, const lab_semicrf_problem *p, lab_semicrf_ref_convention conv,
                                      lab_status (*cpu_ref)(const lab_semicrf_problem *, lab_semicrf_ref *),
                                      lab_semicrf_ref *r, double *check);
/* lab_setup_fn: *group receives a malloc'ed lab_semicrf_group for c->seed (its reference by
 * lab_semicrf_case_reference). LAB_ERR_NOMEM / the problem's or reference's error. */
lab_status lab_semicrf_group_setup(const lab_case *c, void **group);
/* lab_teardown_fn: frees a group made by lab_semicrf_group_setup (NULL is ignored). */
void lab_semicrf_group_teardown(void *group);

/* Tolerance of the float32 kernel against the float64 reference: tol = LAB_SEMICRF_TOL_ULPS units, a unit being
 * 2^-24 * max_b |log Z_b|; judged on each gradient tensor's max|g - ref| / max|ref| and on log Z's absolute error.
 * The account (0001's README "What the criterion checks" gives it in full, with the commands):
 * - derived: a marginal is exp(alpha + s + beta - log Z); that float32 sum rounds twice at up to |log Z| (2 units),
 *   expf adds 2 ulps (0.005 units); a gradient entry sums n <= B T marginals in any order, (n - 1) 2^-24 relative,
 *   and |log Z| >= 3.76 T at these shapes: 0.53 units. About 2.5 units in all.
 * - not derived: what alpha, beta and log Z carry from their recursions (about 4 roundings per position at up to
 *   |log Z|, passed on as convex combinations): the worst case grows like 2 T units; measured, log Z's own error
 *   is at most 7.1 units at T = 500.
 * So 16 is a chosen margin, not a bound. Measured (tools/dev/margins.py): the fix's worst gradient error is 0.525 of
 * tol (8.4 units, seed 65, T = 500; median 0.116) on the CPU over seeds 1-256 and on an H100 over seeds 1-1000;
 * log Z's absolute error at most 0.444 of tol on the CPU (seed 65) and 0.608 on the H100 (seed 761, seeds 1-1000,
 * docs/performance.md). */
#define LAB_SEMICRF_TOL_ULPS 16.0
double lab_semicrf_tolerance(const lab_semicrf_ref *r, int B);

/* Errors of a kernel's gradients against the reference: per tensor max|g - ref| / max|ref| (NaN when
 * anything is non-finite), the maximum of those, and the count of non-finite gradient values. */
typedef struct {
    double trans, dur, cum, ps, pe, max;
    double logz;          /* max_b |logZ_f32 - logZ_ref| / |logZ_ref| */
    size_t nonfinite;
    size_t n;             /* gradient values compared */
} lab_semicrf_err;
void lab_semicrf_compare(const lab_semicrf_problem *p, const lab_semicrf_out *o, const lab_semicrf_ref *r,
                         lab_semicrf_err *e);

/* Run-to-run difference of two runs of one problem: max |a - b| per tensor over the float32 outputs
 * (NaN if either has a NaN where the other differs), their max, the count of values whose bits differ,
 * and, when both carry float64 accumulators, the max |a - b| of those (else NaN). */
typedef struct {
    double trans, dur, cum, ps, pe, max;
    double acc_max;
    size_t n_diff;
    size_t n;
} lab_semicrf_r2r;
void lab_semicrf_run_to_run(const lab_semicrf_problem *p, const lab_semicrf_out *a, const lab_semicrf_out *b,
                            lab_semicrf_r2r *d);

/* Goldens: ref_trans_seed<S>.npy [C][C], ref_dur_seed<S>.npy [K][C] and ref_logz_seed<S>.npy [B] of the
 * float64 reference of case seed S, for each of n seeds, into dir with a MANIFEST naming `incident`.
 * LAB_ERR_* of the writes, NOMEM. */
lab_status lab_semicrf_golden_bless(const char *dir, const char *incident, const uint64_t *seeds, int n);
/* Compares o against the goldens of seed in dir (sha256, dtype, shape verified by lab_golden_load): sets
 * *err to the max over trans and dur of max|g - golden| / max|golden| and logZ's absolute error (the
 * tolerance's own scale).
 * LAB_ERR_NOTFOUND when the manifest has no entry for the seed (message says to bless), else the golden
 * errors (IO, MISMATCH, FORMAT). */
lab_status lab_semicrf_golden_compare(const char *dir, uint64_t seed, const lab_semicrf_problem *p,
                                      const lab_semicrf_out *o, double *err);

#ifdef LAB_HAVE_CUDA
/* The float64 reference on the device (lab_semicrf_ref.cu): the CPU reference's loops (lab_semicrf_reference, or
 * 0008's convention) in float64, one block per sequence, thread d owning class d, the batch sums over b on the host in
 * b order; written apart from the kernels under test. Differs from the CPU's by the rounding of the device's exp and
 * log and the order of the batch sums only (lab_semicrf_ref_disagreement <= 1, test
 * semicrf::device_reference_agrees_with_the_cpu_reference). One wait. Errors as lab_semicrf_reference, and
 * LAB_ERR_DEVICE. */
lab_status lab_semicrf_reference_cuda(const lab_semicrf_problem *p, lab_semicrf_ref_convention conv, lab_semicrf_ref *r);
/* The CUDA kernels (lab_semicrf.cu): the same algorithm on the GPU with real atomicAdd: one block of
 * C_PAD threads per batch element for the forward and backward passes, then the marginal kernel on an
 * (s, b) grid of 4 x C_PAD threads, layout, accumulation and guards as in cfg (schedule_seed unused: the
 * GPU picks the order). Inputs are the host problem's (lab_rng) values. Unpadded and clamped layouts:
 * every input sits between guard zones holding the seed's neighbour contents (what a stray load reads),
 * and so does every gradient buffer (its zones read back after the run: o->guard_breach, o->contained),
 * unless cfg->exact_alloc asks for exact allocations, where compute-sanitizer memcheck reports every stray
 * load and atomic. The kernel counts loads and
 * atomics outside their allocation (o->oob_reads, o->oob_writes, as the CPU emulation does) without
 * preventing them. Fills o (allocated here); `reps`
 * runs (1 for a case); *ms_backward (may be NULL) gets the median time of the accumulation stage (marginal
 * kernel and atomics, or the deterministic kernels). LAB_ERR_DEVICE with the CUDA error text; LAB_ERR_ARG for
 * a bad config or length, or a deterministic accumulation of more work items than its 32-bit indices hold (about
 * 2^30 per kind: B x T x C, or the chunks' items). */
lab_status lab_semicrf_cuda_run(const lab_semicrf_problem *p, const lab_semicrf_config *cfg, int reps,
                                lab_semicrf_out *o, double *ms_backward);
/* The deterministic accumulation by the previous kernels (one thread per chunk of rows and every duration, which
 * leaves most of the GPU idle at small batches), one run: the reference the production kernels are held to bit for
 * bit (tests/test_bench.c on every incident's shapes, `lab bench` on its own). cfg->accum must be
 * LAB_SEMICRF_ACC_DETERMINISTIC (else LAB_ERR_ARG); otherwise as lab_semicrf_cuda_run with reps = 1. */
lab_status lab_semicrf_cuda_run_det_previous(const lab_semicrf_problem *p, const lab_semicrf_config *cfg,
                                             lab_semicrf_out *o);
/* A seed batch: n problems of one shape (B, T, K, C, use_proj alike) under configs alike but for their guard and
 * schedule seeds (cfgs[q] for p[q]), run once, every kernel launched once for the whole batch (a problem per grid
 * row), so that one launch fills the GPU instead of two of its SMs. Every problem keeps buffers of its own: its
 * own guard zones (contents from its guard seed), counters and gradient buffers, in one allocation for the batch
 * (under cfg->exact_alloc, exact allocations of their own), and its kernels compute exactly what a run of it alone
 * computes: outs[q] (allocated here) is lab_semicrf_cuda_run's output for p[q] with reps = 1, bitwise wherever the
 * accumulation does not depend on the hardware's order (the forward, the deterministic accumulation; atomics add in
 * whatever order the blocks reach them, in a batch as alone). Errors as lab_semicrf_cuda_run, plus LAB_ERR_ARG for
 * problems or configs that differ; on error every outs[q] is freed and zeroed. */
lab_status lab_semicrf_cuda_run_batch(const lab_semicrf_problem *const *p, const lab_semicrf_config *cfgs, size_t n,
                                      lab_semicrf_out *outs);
/* The seed batch of cases[0..n) whose groups are lab_semicrf_group (0001's and 0002's batch.run_cuda): each case's
 * problem under config(case), through lab_semicrf_cuda_run_batch into outs. Its errors; LAB_ERR_NOMEM. */
lab_status lab_semicrf_cuda_run_cases(const lab_case *cases, size_t n, lab_semicrf_config (*config)(const lab_case *),
                                      lab_semicrf_out *outs);
/* Benchmark (f is a FILE *): the accumulation stage of each accumulation at (B, T, K, C) in one process,
 * cudaEvent medians of 21 runs after 2 warm-up runs, the ratios, and the measured D2D copy bandwidth. */
lab_status lab_semicrf_cuda_bench(void *f, int B, int T, int K, int C);
#endif

#ifdef __cplusplus
}
#endif

#endif
