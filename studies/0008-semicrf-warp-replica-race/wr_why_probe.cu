/* wr_why_probe: why the lab's CUDA copy of 0008 is wrong on every launch at 4 and 8 warps (B = 32, T = 500, K = 30,
 * C = 39) while Triton's own forward recursion at that shape (study/triton_semicrf_probe.py) was wrong on none of
 * thousands. A standalone program (no lab library), built only on request:
 *
 *   make -C studies/0008-semicrf-warp-replica-race why      -> build/study/wr_why_probe
 *   build/study/wr_why_probe [--launches N] [--budget-s S] [--versions a,b,..] [--B 32] [--T 500] [--K 30]
 *                            [--seed 1] [--ref-programs 2] [--list] [--cpu]
 *
 * The kernels are the lab's own: this file includes incidents/0008-semicrf-warp-replica-race/wr_kernels.cu and
 * launches its wr_bwd and wr_fwd_k at what the bug and its barrier fix compile to there (index RAW, float32, buffers
 * in global memory, rematerialised loads at >= 4 warps), with the fix's barrier taken site by site through wr_bwd's
 * mask BARS (wr_cuda.h: the lab builds 0 and WR_BAR_ALL only), so that a version can leave exactly one kind of
 * store-then-load unguarded:
 *
 *   WR_BAR_INIT   after the beta ring's initialisation (the ring is next loaded in Phase 2, after many barriers)
 *   WR_BAR_CKPT   after the checkpoint copy into row 0 of the alpha buffer: the owner thread LOADS the checkpoint
 *                 from global memory and stores it; the next loads of row 0 (Phase 1, t = s0 + 1, k = 1) are by
 *                 every warp. The store has to wait for its own load (an L2 round trip) while the other warps go
 *                 straight on to their loads of the same row: the one handoff of the kernel whose store sits behind
 *                 a memory latency. Triton's forward probe has no such copy.
 *   WR_BAR_ALPHA  after each Phase-1 store of alpha[t] (the owner stores from shared memory after the step's last
 *                 barrier; the next step's k = 1 loads it): the analogue of the Triton probe's ring store
 *   WR_BAR_BETA   after each Phase-2 store of beta[t] into the ring (the next step's k = 1 loads it)
 *
 *   WR_CKPT_PRED  (not a barrier) the checkpoint copy lowered the way Triton lowers upstream's (a masked tl.load /
 *                 tl.store of a [C_PAD] vector in the blocked layout): every replica loads the row and all threads
 *                 execute one predicated st.global (inline PTX, as Triton emits it), so the other warps wait for the
 *                 load like the owner, where the lab's copy branches the non-owners around the load and the store.
 *                 It lives in wr_bwd too: a branch on a template constant, gone from every kernel the lab builds
 *                 (their SASS is the same with and without it).
 *
 * With all four barrier bits the kernel is the lab's fix-barrier (race-free), with none the lab's bug-num-warps-4 /
 * the 8-warp study row; a forward without its per-step barrier (wr_fwd_k's STEP_BAR = false) is the lab's forward
 * made racy the way Triton's probe is (one store of alpha[t] by the owner replica, every replica loads it at
 * t + 1 .. t + K). What is this file's own: the versions, the launch loop and timing, the inputs, a float64 host
 * forward-backward, the detector, Clopper-Pearson and the command line.
 *
 * Per launch, each version's output is compared with the race-free version at the same warp count (same arithmetic,
 * so any differing bit is the race: "differ"), and judged with the lab's tolerance (WR_TOL_ULPS: (K + 4) 2^-24
 * max|log Z|, per tensor max|g - ref| / max|ref|: "wrong"); the forward with the Triton probe's tolerance
 * (10 sqrt(T (K + 4)) 2^-24 relative to max|alpha_b|). The race-free references are themselves checked once against
 * a float64 host forward-backward of the same CRF on --ref-programs programs (program 0 has length T). Rates get 95%
 * Clopper-Pearson intervals. A version stops early once its first 16 launches are all wrong (rate decided: the
 * interval's lower end is 0.79); otherwise it runs until --launches or its share of the time budget (the budget left
 * divided by the versions left, counted from the program's start, so the whole run takes about --budget-s plus the
 * last launch).
 *
 * --cpu (no GPU): the float64 host reference against central finite differences of its own log Z at tiny shapes,
 * the error/differ detector on planted perturbations, and Clopper-Pearson against closed forms. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* the product kernels, compiled here with the study's barrier masks (the Makefile's include path is the lab's) */
#include "incidents/0008-semicrf-warp-replica-race/wr_kernels.cu"

#define CK(x)                                                                                                          \
    do {                                                                                                               \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "wr_why_probe: %s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));          \
            exit(2);                                                                                                   \
        }                                                                                                              \
    } while (0)

/* ---- the versions ----------------------------------------------------------------------------------------- */

typedef void (*bwd_fn)(wr_args);
typedef void (*fwd_fn)(wr_args, float *, float *, float *);

struct version {
    const char *id, *what;
    int fwd;  /* 1: a forward version (the racy recursion alone, as Triton's probe) */
    int nw;   /* warps */
    int bars; /* wr_bwd's BARS (WR_BAR_*, WR_CKPT_PRED); forward: wr_fwd_k's STEP_BAR */
    int control; /* race-free by construction: must give 0 differ, 0 wrong */
    bwd_fn bf;
    fwd_fn ff;
};

/* the lab's wr_bwd at index RAW, float32, buffers in global memory, no register cap; remat as Triton at >= 4 warps */
#define BV(id, nw, bars, ctl, what)                                                                                    \
    {id, what, 0, nw, bars, ctl, wr_bwd<nw, (nw >= 4), bars, WR_INDEX_RAW, false, false, 1>, NULL}
#define FV(id, nw, bar, ctl, what) {id, what, 1, nw, bar, ctl, NULL, wr_fwd_k<nw, bar>}
static const version versions[] = {
    BV("b4-lab", 4, 0, 0, "backward, 4 warps, the lab's copy as is (bug-num-warps-4): no barrier after any store"),
    BV("b8-lab", 8, 0, 0, "backward, 8 warps, as is"),
    BV("b4-ckptbar", 4, WR_BAR_INIT | WR_BAR_CKPT, 0,
       "backward, 4 warps, barrier after the checkpoint copy (and ring init) only: the per-step alpha and beta "
       "handoffs stay unguarded, as the ring handoff of Triton's probe"),
    BV("b8-ckptbar", 8, WR_BAR_INIT | WR_BAR_CKPT, 0, "backward, 8 warps, the same"),
    BV("b4-ckpt", 4, WR_BAR_INIT | WR_BAR_ALPHA | WR_BAR_BETA, 0,
       "backward, 4 warps, only the checkpoint copy unguarded"),
    BV("b8-ckpt", 8, WR_BAR_INIT | WR_BAR_ALPHA | WR_BAR_BETA, 0,
       "backward, 8 warps, only the checkpoint copy unguarded"),
    BV("b4-ckptpred", 4, WR_CKPT_PRED, 0,
       "backward, 4 warps, no barrier, the checkpoint copy lowered as Triton does: every replica loads the row and "
       "executes one predicated store (so every warp waits for the load), instead of the lab's owner-only branch"),
    BV("b8-ckptpred", 8, WR_CKPT_PRED, 0, "backward, 8 warps, the same"),
    FV("f4-racy", 4, false, 0, "forward, 4 warps, no barrier after the store of alpha[t] (Triton probe's pattern)"),
    FV("f8-racy", 8, false, 0, "forward, 8 warps, the same"),
    BV("b4-alpha", 4, WR_BAR_INIT | WR_BAR_CKPT | WR_BAR_BETA, 0,
       "backward, 4 warps, only Phase 1's per-step alpha handoff unguarded"),
    BV("b4-beta", 4, WR_BAR_INIT | WR_BAR_CKPT | WR_BAR_ALPHA, 0,
       "backward, 4 warps, only Phase 2's per-step beta handoff unguarded"),
    BV("b4-fix", 4, WR_BAR_ALL, 1, "control: backward, 4 warps, barrier after every store (fix-barrier)"),
    BV("b8-fix", 8, WR_BAR_ALL, 1, "control: backward, 8 warps, barrier after every store"),
    FV("f4-fix", 4, true, 1, "control: forward, 4 warps, the lab's forward (barrier after each store)"),
    FV("f8-fix", 8, true, 1, "control: forward, 8 warps, the lab's forward"),
    BV("b2", 2, 0, 1, "control: backward, 2 warps (upstream's fix: owner layout, nothing replicated)"),
};
#define NVERS ((int)(sizeof versions / sizeof versions[0]))

/* ---- host: inputs, float64 reference, statistics ----------------------------------------------------------- */

struct problem {
    int B, T, K, C, I, NCK, SEG;
    float *cum, *trans, *dur, *ps, *pe; /* [B][T+1][C], [C][C], [K][C], [B][T][C] x 2 */
    int *len;
};

static uint64_t rng_s;
static uint64_t rng_u64(void)
{
    uint64_t z = (rng_s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double rng_normal(void)
{
    double u1 = ((double)(rng_u64() >> 11) + 0.5) / 9007199254740992.0, u2 = (double)(rng_u64() >> 11) / 9007199254740992.0;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* The lab's scales (lab_semicrf_problem_fill): emissions 0.5 N(0,1) summed in float64, transitions and duration
 * biases 0.3 N(0,1), boundary projections 0.1 N(0,1); length T for program 0, uniform in [T/2, T] for the others. */
static void problem_make(problem *p, int B, int T, int K, int C, uint64_t seed)
{
    p->B = B, p->T = T, p->K = K, p->C = C;
    p->I = wr_ckpt_interval(T, K);
    p->NCK = wr_num_ckpts(T, K);
    p->SEG = p->I + K;
    rng_s = seed * 0x2545f4914f6cdd1dull + 8;
    p->cum = (float *)calloc((size_t)B * (T + 1) * C, sizeof(float));
    p->trans = (float *)malloc((size_t)C * C * sizeof(float));
    p->dur = (float *)malloc((size_t)K * C * sizeof(float));
    p->ps = (float *)malloc((size_t)B * T * C * sizeof(float));
    p->pe = (float *)malloc((size_t)B * T * C * sizeof(float));
    p->len = (int *)malloc((size_t)B * sizeof(int));
    if (!p->cum || !p->trans || !p->dur || !p->ps || !p->pe || !p->len) {
        fprintf(stderr, "wr_why_probe: out of memory\n");
        exit(2);
    }
    for (int b = 0; b < B; ++b)
        for (int c = 0; c < C; ++c) {
            double acc = 0.0;
            for (int t = 0; t < T; ++t) {
                acc += 0.5 * rng_normal();
                p->cum[((size_t)b * (T + 1) + t + 1) * C + c] = (float)acc;
            }
        }
    for (int i = 0; i < C * C; ++i) p->trans[i] = (float)(0.3 * rng_normal());
    for (int i = 0; i < K * C; ++i) p->dur[i] = (float)(0.3 * rng_normal());
    for (size_t i = 0; i < (size_t)B * T * C; ++i) p->ps[i] = (float)(0.1 * rng_normal());
    for (size_t i = 0; i < (size_t)B * T * C; ++i) p->pe[i] = (float)(0.1 * rng_normal());
    for (int b = 0; b < B; ++b) {
        int lo = T / 2 > 0 ? T / 2 : 1;
        p->len[b] = b == 0 ? T : lo + (int)(rng_u64() % (uint64_t)(T - lo + 1));
    }
}

static void problem_free(problem *p)
{
    free(p->cum), free(p->trans), free(p->dur), free(p->ps), free(p->pe), free(p->len);
}

/* The backward's outputs: per-sequence workspaces, as the kernel leaves them (before the lab's batch reduction). */
struct grads {
    float *gcum, *gtr, *gdb, *gps, *gpe;
};
static size_t n_gcum(const problem *p) { return (size_t)p->B * (p->T + 1) * p->C; }
static size_t n_gtr(const problem *p) { return (size_t)p->B * p->C * p->C; }
static size_t n_gdb(const problem *p) { return (size_t)p->B * p->K * p->C; }
static size_t n_gpos(const problem *p) { return (size_t)p->B * p->T * p->C; }

static void grads_alloc(grads *g, const problem *p)
{
    g->gcum = (float *)calloc(n_gcum(p), sizeof(float));
    g->gtr = (float *)calloc(n_gtr(p), sizeof(float));
    g->gdb = (float *)calloc(n_gdb(p), sizeof(float));
    g->gps = (float *)calloc(n_gpos(p), sizeof(float));
    g->gpe = (float *)calloc(n_gpos(p), sizeof(float));
    if (!g->gcum || !g->gtr || !g->gdb || !g->gps || !g->gpe) {
        fprintf(stderr, "wr_why_probe: out of memory\n");
        exit(2);
    }
}
static void grads_free(grads *g) { free(g->gcum), free(g->gtr), free(g->gdb), free(g->gps), free(g->gpe); }

static double lse2(double a, double b)
{
    if (a == -INFINITY) return b;
    if (b == -INFINITY) return a;
    double m = a > b ? a : b;
    return m + log(exp(a - m) + exp(b - m));
}

static double seg64(const problem *p, int b, int s, int k, int c)
{
    const int C = p->C, T = p->T;
    const float *cum = p->cum + (size_t)b * (T + 1) * C, *ps = p->ps + (size_t)b * T * C, *pe = p->pe + (size_t)b * T * C;
    return (double)cum[(size_t)(s + k) * C + c] - (double)cum[(size_t)s * C + c] + (double)p->dur[(size_t)(k - 1) * C + c] +
           (double)ps[(size_t)s * C + c] + (double)pe[(size_t)(s + k - 1) * C + c];
}

/* float64 forward-backward of program b (the kernels' CRF without their guards: alpha[0] = 0, every segment takes
 * a transition, log Z = logsumexp alpha[L]): alpha [T+1][C] (if wanted), log Z, and the gradient of log Z into
 * program b's slots of g (g_cum at the segment's end +, start -; g_ps at its start, g_pe at its last frame). */
static double ref64(const problem *p, int b, double *alpha_out, double *gcum, double *gtr, double *gdb, double *gps, double *gpe)
{
    const int C = p->C, K = p->K, L = p->len[b];
    double *al = (double *)malloc((size_t)(L + 1) * C * sizeof(double)), *be = (double *)malloc((size_t)(L + 1) * C * sizeof(double));
    double *sg = (double *)malloc((size_t)K * C * sizeof(double));
    if (!al || !be || !sg) exit(2);
    for (int c = 0; c < C; ++c) al[c] = 0.0;
    for (int t = 1; t <= L; ++t)
        for (int c = 0; c < C; ++c) {
            double acc = -INFINITY;
            for (int k = 1; k <= K && k <= t; ++k) {
                double s = seg64(p, b, t - k, k, c);
                for (int q = 0; q < C; ++q) acc = lse2(acc, al[(size_t)(t - k) * C + q] + (double)p->trans[q * C + c] + s);
            }
            al[(size_t)t * C + c] = acc;
        }
    double lz = -INFINITY;
    for (int c = 0; c < C; ++c) lz = lse2(lz, al[(size_t)L * C + c]);
    for (int c = 0; c < C; ++c) be[(size_t)L * C + c] = 0.0;
    for (int t = L - 1; t >= 0; --t) {
        for (int k = 1; k <= K && t + k <= L; ++k)
            for (int c = 0; c < C; ++c) sg[(size_t)(k - 1) * C + c] = seg64(p, b, t, k, c);
        for (int q = 0; q < C; ++q) {
            double acc = -INFINITY;
            for (int k = 1; k <= K && t + k <= L; ++k)
                for (int c = 0; c < C; ++c)
                    acc = lse2(acc, (double)p->trans[q * C + c] + sg[(size_t)(k - 1) * C + c] + be[(size_t)(t + k) * C + c]);
            be[(size_t)t * C + q] = acc;
        }
        for (int k = 1; k <= K && t + k <= L; ++k)
            for (int c = 0; c < C; ++c) {
                double M = 0.0;
                for (int q = 0; q < C; ++q) {
                    double m = exp(al[(size_t)t * C + q] + (double)p->trans[q * C + c] + sg[(size_t)(k - 1) * C + c] +
                                   be[(size_t)(t + k) * C + c] - lz);
                    gtr[q * C + c] += m;
                    M += m;
                }
                gdb[(size_t)(k - 1) * C + c] += M;
                gcum[(size_t)(t + k) * C + c] += M;
                gcum[(size_t)t * C + c] -= M;
                gps[(size_t)t * C + c] += M;
                gpe[(size_t)(t + k - 1) * C + c] += M;
            }
    }
    if (alpha_out) memcpy(alpha_out, al, (size_t)(L + 1) * C * sizeof(double));
    free(al), free(be), free(sg);
    return lz;
}

/* Regularized incomplete beta (continued fraction, modified Lentz) and its quantile by bisection: Clopper-Pearson. */
static double betacf(double a, double b, double x)
{
    const double tiny = 1e-300;
    double qab = a + b, qap = a + 1.0, qam = a - 1.0, c = 1.0, d = 1.0 - qab * x / qap;
    d = fabs(d) < tiny ? tiny : d;
    d = 1.0 / d;
    double h = d;
    for (int m = 1; m < 100000; ++m) {
        int m2 = 2 * m;
        double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d, d = fabs(d) < tiny ? tiny : d;
        c = 1.0 + aa / c, c = fabs(c) < tiny ? tiny : c;
        d = 1.0 / d, h *= d * c;
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d, d = fabs(d) < tiny ? tiny : d;
        c = 1.0 + aa / c, c = fabs(c) < tiny ? tiny : c;
        d = 1.0 / d;
        double de = d * c;
        h *= de;
        if (fabs(de - 1.0) < 1e-15) break;
    }
    return h;
}
static double betainc(double a, double b, double x)
{
    if (x <= 0.0) return 0.0;
    if (x >= 1.0) return 1.0;
    double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
    if (x < (a + 1.0) / (a + b + 2.0)) return exp(lbt) * betacf(a, b, x) / a;
    return 1.0 - exp(lbt) * betacf(b, a, 1.0 - x) / b;
}
static double beta_ppf(double q, double a, double b)
{
    double lo = 0.0, hi = 1.0;
    for (int i = 0; i < 200 && hi - lo > 1e-15; ++i) {
        double mid = 0.5 * (lo + hi);
        if (betainc(a, b, mid) < q) lo = mid;
        else hi = mid;
    }
    return 0.5 * (lo + hi);
}
static void clopper_pearson(int k, int n, double *lo, double *hi)
{
    if (n <= 0) {
        *lo = *hi = NAN;
        return;
    }
    *lo = k == 0 ? 0.0 : beta_ppf(0.025, k, n - k + 1);
    *hi = k == n ? 1.0 : beta_ppf(0.975, k + 1, n - k);
}

/* Error of one float tensor against a reference: max|x - r| / max|r| over [B][per], and per program the same with
 * the tensor's max|r| (hit[b] |= err_b > tol); non-finite x counts (*nf) and sets the error to +inf. */
static double tensor_err(const float *x, const float *r, int B, size_t per, double tol, int *hit, size_t *nf)
{
    double mr = 0.0, worst = 0.0;
    for (size_t i = 0; i < (size_t)B * per; ++i) mr = fabs((double)r[i]) > mr ? fabs((double)r[i]) : mr;
    if (mr == 0.0) mr = 1.0;
    for (int b = 0; b < B; ++b) {
        double m = 0.0;
        for (size_t i = 0; i < per; ++i) {
            double xv = x[(size_t)b * per + i];
            if (!isfinite(xv)) {
                ++*nf;
                m = INFINITY;
                continue;
            }
            double d = fabs(xv - (double)r[(size_t)b * per + i]);
            m = d > m ? d : m;
        }
        m /= mr;
        if (hit && m > tol) hit[b] = 1;
        worst = m > worst ? m : worst;
    }
    return worst;
}

static double grads_err(const problem *p, const grads *x, const grads *r, double tol, int *hit, size_t *nf)
{
    const int B = p->B, T = p->T, K = p->K, C = p->C;
    double e[5] = {tensor_err(x->gtr, r->gtr, B, (size_t)C * C, tol, hit, nf), tensor_err(x->gdb, r->gdb, B, (size_t)K * C, tol, hit, nf),
                   tensor_err(x->gcum, r->gcum, B, (size_t)(T + 1) * C, tol, hit, nf),
                   tensor_err(x->gps, r->gps, B, (size_t)T * C, tol, hit, nf), tensor_err(x->gpe, r->gpe, B, (size_t)T * C, tol, hit, nf)};
    double w = 0.0;
    for (int i = 0; i < 5; ++i) w = e[i] > w ? e[i] : w;
    return w;
}

static int grads_differ(const problem *p, const grads *x, const grads *r)
{
    return memcmp(x->gcum, r->gcum, n_gcum(p) * 4) || memcmp(x->gtr, r->gtr, n_gtr(p) * 4) || memcmp(x->gdb, r->gdb, n_gdb(p) * 4) ||
           memcmp(x->gps, r->gps, n_gpos(p) * 4) || memcmp(x->gpe, r->gpe, n_gpos(p) * 4);
}

/* Forward: per program max_{t <= L, c < C} |alpha - ref| / max|ref_b| (inf where non-finite); hit[b] |= err_b > tol. */
static double alpha_err(const problem *p, const float *x, const float *r, double tol, int *hit, size_t *nf)
{
    double worst = 0.0;
    for (int b = 0; b < p->B; ++b) {
        const float *xb = x + (size_t)b * (p->T + 1) * WR_C_PAD, *rb = r + (size_t)b * (p->T + 1) * WR_C_PAD;
        double mr = 0.0, m = 0.0;
        for (int t = 0; t <= p->len[b]; ++t)
            for (int c = 0; c < p->C; ++c) mr = fabs((double)rb[(size_t)t * WR_C_PAD + c]) > mr ? fabs((double)rb[(size_t)t * WR_C_PAD + c]) : mr;
        if (mr == 0.0) mr = 1.0;
        for (int t = 0; t <= p->len[b]; ++t)
            for (int c = 0; c < p->C; ++c) {
                double xv = xb[(size_t)t * WR_C_PAD + c];
                if (!isfinite(xv)) {
                    ++*nf;
                    m = INFINITY;
                    continue;
                }
                double d = fabs(xv - (double)rb[(size_t)t * WR_C_PAD + c]) / mr;
                m = d > m ? d : m;
            }
        if (hit && m > tol) hit[b] = 1;
        worst = m > worst ? m : worst;
    }
    return worst;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- --cpu: checks of the host paths at tiny shapes --------------------------------------------------------- */

static int cpu_check(void)
{
    int ok = 1;
    /* the float64 reference's gradient against central differences of its own log Z */
    const int B = 2, T = 9, K = 4, C = 5;
    problem p;
    problem_make(&p, B, T, K, C, 3);
    for (int b = 0; b < B; ++b) {
        size_t ncum = (size_t)(T + 1) * C, npos = (size_t)T * C;
        double *gcum = (double *)calloc(ncum, 8), *gtr = (double *)calloc((size_t)C * C, 8), *gdb = (double *)calloc((size_t)K * C, 8);
        double *gps = (double *)calloc(npos, 8), *gpe = (double *)calloc(npos, 8);
        ref64(&p, b, NULL, gcum, gtr, gdb, gps, gpe);
        struct {
            const char *name;
            float *base;
            double *g;
            size_t n;
        } ts[5] = {{"trans", p.trans, gtr, (size_t)C * C},
                   {"dur", p.dur, gdb, (size_t)K * C},
                   {"cum", p.cum + (size_t)b * ncum, gcum, ncum},
                   {"ps", p.ps + (size_t)b * npos, gps, npos},
                   {"pe", p.pe + (size_t)b * npos, gpe, npos}};
        double worst = 0.0;
        for (int i = 0; i < 5; ++i)
            for (size_t j = 0; j < ts[i].n; j += 3) {
                float keep = ts[i].base[j];
                const float h = 1.0f / 4096.0f; /* exact in float: x +- h is representable for |x| < 2^11 */
                size_t d0 = ncum, d1 = npos;
                double *z0 = (double *)calloc(d0, 8), *z1 = (double *)calloc((size_t)C * C, 8), *z2 = (double *)calloc((size_t)K * C, 8),
                       *z3 = (double *)calloc(d1, 8), *z4 = (double *)calloc(d1, 8);
                ts[i].base[j] = keep + h;
                double lp = ref64(&p, b, NULL, z0, z1, z2, z3, z4);
                ts[i].base[j] = keep - h;
                double lm = ref64(&p, b, NULL, z0, z1, z2, z3, z4);
                ts[i].base[j] = keep;
                free(z0), free(z1), free(z2), free(z3), free(z4);
                double fd = (lp - lm) / (2.0 * (double)h), e = fabs(fd - ts[i].g[j]);
                worst = e > worst ? e : worst;
                if (e > 1e-6) {
                    printf("  FAIL fd %s[%zu] program %d: analytic %.9g, central difference %.9g\n", ts[i].name, j, b, ts[i].g[j], fd);
                    ok = 0;
                }
            }
        printf("cpu: float64 reference, program %d (L = %d): gradient vs central differences of log Z, worst |diff| %.2g (limit 1e-6)\n",
               b, p.len[b], worst);
        free(gcum), free(gtr), free(gdb), free(gps), free(gpe);
    }
    /* the detector: an exact copy is neither wrong nor differs; one planted ulp differs and is not wrong; a planted
     * error above tol in program 1 is wrong and hits program 1 only; a NaN is wrong and non-finite */
    {
        grads r, x;
        grads_alloc(&r, &p), grads_alloc(&x, &p);
        for (int b = 0; b < B; ++b) {
            size_t ncum = (size_t)(T + 1) * C, npos = (size_t)T * C;
            double *gcum = (double *)calloc(ncum, 8), *gtr = (double *)calloc((size_t)C * C, 8), *gdb = (double *)calloc((size_t)K * C, 8);
            double *gps = (double *)calloc(npos, 8), *gpe = (double *)calloc(npos, 8);
            ref64(&p, b, NULL, gcum, gtr, gdb, gps, gpe);
            for (size_t i = 0; i < ncum; ++i) r.gcum[(size_t)b * ncum + i] = (float)gcum[i];
            for (size_t i = 0; i < (size_t)C * C; ++i) r.gtr[(size_t)b * C * C + i] = (float)gtr[i];
            for (size_t i = 0; i < (size_t)K * C; ++i) r.gdb[(size_t)b * K * C + i] = (float)gdb[i];
            for (size_t i = 0; i < npos; ++i) r.gps[(size_t)b * npos + i] = (float)gps[i], r.gpe[(size_t)b * npos + i] = (float)gpe[i];
            free(gcum), free(gtr), free(gdb), free(gps), free(gpe);
        }
        const double tol = 1e-4;
        int hit[2];
        size_t nf;
        struct {
            const char *what;
            int plant; /* 0 none, 1 one ulp, 2 above tol in program 1, 3 NaN */
            int want_differ, want_wrong, want_hit0, want_hit1, want_nf;
        } cs[4] = {{"exact copy", 0, 0, 0, 0, 0, 0},
                   {"one ulp in program 0's g_trans", 1, 1, 0, 0, 0, 0},
                   {"1e-3 max|ref| in program 1's g_cum", 2, 1, 1, 0, 1, 0},
                   {"NaN in program 0's g_pe", 3, 1, 1, 1, 0, 1}};
        for (int i = 0; i < 4; ++i) {
            memcpy(x.gcum, r.gcum, n_gcum(&p) * 4), memcpy(x.gtr, r.gtr, n_gtr(&p) * 4), memcpy(x.gdb, r.gdb, n_gdb(&p) * 4);
            memcpy(x.gps, r.gps, n_gpos(&p) * 4), memcpy(x.gpe, r.gpe, n_gpos(&p) * 4);
            if (cs[i].plant == 1) x.gtr[3] = nextafterf(x.gtr[3], INFINITY);
            if (cs[i].plant == 2) {
                double mr = 0.0;
                for (size_t j = 0; j < n_gcum(&p); ++j) mr = fabs((double)r.gcum[j]) > mr ? fabs((double)r.gcum[j]) : mr;
                x.gcum[(size_t)(T + 1) * C + 7] += (float)(1e-3 * mr);
            }
            if (cs[i].plant == 3) x.gpe[2] = NAN;
            hit[0] = hit[1] = 0, nf = 0;
            double e = grads_err(&p, &x, &r, tol, hit, &nf);
            int differ = grads_differ(&p, &x, &r), wrong = !(e <= tol);
            int good = differ == cs[i].want_differ && wrong == cs[i].want_wrong && hit[0] == cs[i].want_hit0 &&
                       hit[1] == cs[i].want_hit1 && (nf > 0) == cs[i].want_nf;
            printf("cpu: detector, %s: differ %d wrong %d (err %.3g, tol %.3g) programs hit %d%d non-finite %zu: %s\n", cs[i].what,
                   differ, wrong, e, tol, hit[0], hit[1], nf, good ? "ok" : "FAIL");
            ok &= good;
        }
        grads_free(&r), grads_free(&x);
    }
    problem_free(&p);
    /* Clopper-Pearson against closed forms: 0 of n -> upper 1 - 0.025^(1/n); n of n -> lower 0.025^(1/n) */
    for (int n = 1; n <= 10000; n *= 10) {
        double lo, hi, lo2, hi2;
        clopper_pearson(0, n, &lo, &hi);
        clopper_pearson(n, n, &lo2, &hi2);
        int good = lo == 0.0 && fabs(hi - (1.0 - pow(0.025, 1.0 / n))) < 1e-9 && hi2 == 1.0 && fabs(lo2 - pow(0.025, 1.0 / n)) < 1e-9;
        printf("cpu: Clopper-Pearson n = %d: 0/n upper %.6g, n/n lower %.6g: %s\n", n, hi, lo2, good ? "ok" : "FAIL");
        ok &= good;
    }
    {
        double lo, hi; /* symmetric case: k = n/2 gives an interval symmetric about 1/2 */
        clopper_pearson(50, 100, &lo, &hi);
        int good = fabs(lo + hi - 1.0) < 1e-9 && lo > 0.39 && lo < 0.41;
        printf("cpu: Clopper-Pearson 50/100: [%.6f, %.6f] (symmetric about 0.5): %s\n", lo, hi, good ? "ok" : "FAIL");
        ok &= good;
    }
    printf("cpu checks: %s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}

/* ---- the GPU run ------------------------------------------------------------------------------------------- */

struct dev {
    wr_args a;
    float *alpha, *ckpt[9], *logZ[9], *fwd_ckpt_scratch, *fwd_logz_scratch;
    size_t nab, nri, nalpha, nck;
};

static void usage(void)
{
    fprintf(stderr, "usage: wr_why_probe [--launches N] [--budget-s S] [--versions id,id,..] [--B n] [--T n] [--K n] [--seed n]\n"
                    "                    [--ref-programs n] [--list] [--cpu]\n");
    exit(2);
}

static int wanted(const char *list, const char *id)
{
    if (!list) return 1;
    size_t n = strlen(id);
    for (const char *s = list; *s;) {
        const char *e = strchr(s, ',');
        size_t m = e ? (size_t)(e - s) : strlen(s);
        if (m == n && !strncmp(s, id, n)) return 1;
        if (!e) break;
        s = e + 1;
    }
    return 0;
}

/* one backward launch of version v: buffers reset (NEG_INF, as the lab's launcher), workspaces zeroed, the kernel
 * timed with events, workspaces copied back into g */
static float bwd_launch(dev *d, const problem *p, const version *v, const grads *g, cudaEvent_t e0, cudaEvent_t e1)
{
    wr_args a = d->a;
    a.ckpt = d->ckpt[v->nw], a.logZ = d->logZ[v->nw];
    wr_launch_fill(a.abuf, d->nab, WR_NEG_INF);
    wr_launch_fill(a.ring, d->nri, WR_NEG_INF);
    CK(cudaGetLastError());
    CK(cudaMemset(a.gcum, 0, n_gcum(p) * 4));
    CK(cudaMemset(a.gtr, 0, n_gtr(p) * 4));
    CK(cudaMemset(a.gdb, 0, n_gdb(p) * 4));
    CK(cudaMemset(a.gps, 0, n_gpos(p) * 4));
    CK(cudaMemset(a.gpe, 0, n_gpos(p) * 4));
    CK(cudaEventRecord(e0));
    v->bf<<<(unsigned)p->B, 32 * v->nw>>>(a);
    CK(cudaGetLastError());
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms = 0.0f;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    CK(cudaMemcpy(g->gcum, a.gcum, n_gcum(p) * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(g->gtr, a.gtr, n_gtr(p) * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(g->gdb, a.gdb, n_gdb(p) * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(g->gps, a.gps, n_gpos(p) * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(g->gpe, a.gpe, n_gpos(p) * 4, cudaMemcpyDeviceToHost));
    return ms;
}

/* one forward launch: alpha NEG_INF-filled, the kernel timed, alpha [B][T+1][C_PAD] and log Z copied back; ckpt and
 * logZ go to the given device buffers */
static float fwd_launch(dev *d, const problem *p, fwd_fn f, int nw, float *ckpt, float *logz, float *h_alpha, float *h_logz,
                        cudaEvent_t e0, cudaEvent_t e1)
{
    wr_launch_fill(d->alpha, d->nalpha, WR_NEG_INF);
    wr_launch_fill(ckpt, d->nck, WR_NEG_INF);
    CK(cudaGetLastError());
    CK(cudaEventRecord(e0));
    f<<<(unsigned)p->B, 32 * nw>>>(d->a, d->alpha, ckpt, logz);
    CK(cudaGetLastError());
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms = 0.0f;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (h_alpha) CK(cudaMemcpy(h_alpha, d->alpha, d->nalpha * 4, cudaMemcpyDeviceToHost));
    if (h_logz) CK(cudaMemcpy(h_logz, logz, (size_t)p->B * 4, cudaMemcpyDeviceToHost));
    return ms;
}

static fwd_fn fwd_fix(int nw)
{
    return nw == 2 ? wr_fwd_k<2, true> : nw == 4 ? wr_fwd_k<4, true> : wr_fwd_k<8, true>;
}

int main(int argc, char **argv)
{
    const double t_start = now_s();
    int N = 400, B = 32, T = 500, K = 30, C = 39, refp = 2, cpu = 0, list = 0;
    double budget = 150.0;
    uint64_t seed = 1;
    const char *only = NULL;
    for (int i = 1; i < argc; ++i) {
        const char *s = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "--cpu")) cpu = 1;
        else if (!strcmp(s, "--list")) list = 1;
        else if (!v) usage();
        else if (!strcmp(s, "--launches")) N = atoi(v), ++i;
        else if (!strcmp(s, "--budget-s")) budget = atof(v), ++i;
        else if (!strcmp(s, "--versions")) only = v, ++i;
        else if (!strcmp(s, "--B")) B = atoi(v), ++i;
        else if (!strcmp(s, "--T")) T = atoi(v), ++i;
        else if (!strcmp(s, "--K")) K = atoi(v), ++i;
        else if (!strcmp(s, "--seed")) seed = (uint64_t)atoll(v), ++i;
        else if (!strcmp(s, "--ref-programs")) refp = atoi(v), ++i;
        else usage();
    }
    if (list) {
        for (int i = 0; i < NVERS; ++i) printf("%-11s %s\n", versions[i].id, versions[i].what);
        return 0;
    }
    if (cpu) return cpu_check();
    if (N < 1 || B < 1 || T < 2 || K < 1 || K > T || budget <= 0 || refp < 0 || refp > B) usage();
    int nsel = 0;
    for (int i = 0; i < NVERS; ++i) nsel += wanted(only, versions[i].id);
    if (!nsel) {
        fprintf(stderr, "wr_why_probe: --versions %s names no version (--list shows them)\n", only);
        return 2;
    }

    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    problem p;
    problem_make(&p, B, T, K, C, seed);
    const double tol_b = WR_TOL_ULPS(K) / 16777216.0; /* times max|log Z| below */
    const double tol_f = 10.0 * sqrt((double)T * (K + 4)) / 16777216.0;
    printf("wr_why_probe on %s (%d SMs, sm_%d%d): B=%d T=%d K=%d C=%d (C_PAD %d), checkpoint interval %d, %d checkpoints, "
           "seed %llu; up to %d launches a version, budget %.0f s\n",
           prop.name, prop.multiProcessorCount, prop.major, prop.minor, B, T, K, C, WR_C_PAD, p.I, p.NCK,
           (unsigned long long)seed, N, budget);

    dev d;
    memset(&d, 0, sizeof d);
    wr_args &a = d.a;
    a.B = B, a.T = T, a.K = K, a.C = C, a.I = p.I, a.NCK = p.NCK, a.SEG = p.SEG, a.use_proj = 1, a.SPB = B;
    float *dcum, *dtr, *ddur, *dps, *dpe;
    int *dlen;
    CK(cudaMalloc(&dcum, n_gcum(&p) * 4));
    CK(cudaMalloc(&dtr, (size_t)C * C * 4));
    CK(cudaMalloc(&ddur, (size_t)K * C * 4));
    CK(cudaMalloc(&dps, n_gpos(&p) * 4));
    CK(cudaMalloc(&dpe, n_gpos(&p) * 4));
    CK(cudaMalloc(&dlen, (size_t)B * 4));
    CK(cudaMemcpy(dcum, p.cum, n_gcum(&p) * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dtr, p.trans, (size_t)C * C * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(ddur, p.dur, (size_t)K * C * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dps, p.ps, n_gpos(&p) * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dpe, p.pe, n_gpos(&p) * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dlen, p.len, (size_t)B * 4, cudaMemcpyHostToDevice));
    a.cum = dcum, a.trans = dtr, a.dur = ddur, a.ps = dps, a.pe = dpe, a.len = dlen;
    d.nab = (size_t)B * p.SEG * WR_C_PAD, d.nri = (size_t)B * K * WR_C_PAD, d.nalpha = (size_t)B * (T + 1) * WR_C_PAD;
    d.nck = (size_t)B * p.NCK * K * WR_C_PAD;
    CK(cudaMalloc(&a.abuf, d.nab * 4));
    CK(cudaMalloc(&a.ring, d.nri * 4));
    CK(cudaMalloc(&a.gcum, n_gcum(&p) * 4));
    CK(cudaMalloc(&a.gtr, n_gtr(&p) * 4));
    CK(cudaMalloc(&a.gdb, n_gdb(&p) * 4));
    CK(cudaMalloc(&a.gps, n_gpos(&p) * 4));
    CK(cudaMalloc(&a.gpe, n_gpos(&p) * 4));
    CK(cudaMalloc(&d.alpha, d.nalpha * 4));
    CK(cudaMalloc(&d.fwd_ckpt_scratch, d.nck * 4));
    CK(cudaMalloc(&d.fwd_logz_scratch, (size_t)B * 4));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));

    /* the race-free references at each warp count the selection needs: the lab's forward (ckpt, log Z, alpha) and
     * the backward with every barrier */
    int need[9] = {0};
    for (int i = 0; i < NVERS; ++i)
        if (wanted(only, versions[i].id)) need[versions[i].nw] = 1;
    need[4] = 1; /* the float64 check is made on the 4-warp reference */
    float *ref_alpha[9] = {0}, ref_logz_max[9] = {0};
    grads ref_g[9];
    memset(ref_g, 0, sizeof ref_g);
    int ok = 1;
    for (int nw = 2; nw <= 8; nw *= 2) {
        if (!need[nw]) continue;
        CK(cudaMalloc(&d.ckpt[nw], d.nck * 4));
        CK(cudaMalloc(&d.logZ[nw], (size_t)B * 4));
        ref_alpha[nw] = (float *)malloc(d.nalpha * 4);
        float *hz = (float *)malloc((size_t)B * 4);
        float ms = fwd_launch(&d, &p, fwd_fix(nw), nw, d.ckpt[nw], d.logZ[nw], ref_alpha[nw], hz, e0, e1);
        double z = 0.0;
        for (int b = 0; b < B; ++b) z = fabs((double)hz[b]) > z ? fabs((double)hz[b]) : z;
        ref_logz_max[nw] = (float)z;
        free(hz);
        const version *rv = NULL;
        for (int i = 0; i < NVERS; ++i)
            if (!versions[i].fwd && versions[i].nw == nw && (nw == 2 || versions[i].bars == WR_BAR_ALL))
                rv = &versions[i];
        grads_alloc(&ref_g[nw], &p);
        float msb = bwd_launch(&d, &p, rv, &ref_g[nw], e0, e1);
        printf("reference at %d warps: race-free forward %.2f ms (max|log Z| %.2f), race-free backward (%s) %.2f ms\n", nw, ms, z,
               rv->id, msb);
    }
    /* the references agree across warp counts (within tol: their float32 sums are ordered differently) */
    for (int nw = 2; nw <= 8; nw *= 2) {
        if (!need[nw] || nw == 4) continue;
        size_t nf = 0;
        double tb = tol_b * ref_logz_max[4], e = grads_err(&p, &ref_g[nw], &ref_g[4], tb, NULL, &nf);
        double ef = alpha_err(&p, ref_alpha[nw], ref_alpha[4], tol_f, NULL, &nf);
        int good = e <= tb && ef <= tol_f && nf == 0;
        printf("check: race-free %d warps vs 4 warps: backward %.3g tol (tol %.3g), forward %.3g of its tol: %s\n", nw, e / tb, tb,
               ef / tol_f, good ? "ok" : "FAIL");
        ok &= good;
    }
    /* the 4-warp references against the float64 host forward-backward, programs 0..refp-1 */
    if (refp > 0) {
        double t0 = now_s(), wg = 0.0, wa = 0.0;
        grads r;
        grads_alloc(&r, &p);
        size_t ncum = (size_t)(T + 1) * C, npos = (size_t)T * C;
        double *gcum = (double *)calloc(ncum, 8), *gtr = (double *)calloc((size_t)C * C, 8), *gdb = (double *)calloc((size_t)K * C, 8);
        double *gps = (double *)calloc(npos, 8), *gpe = (double *)calloc(npos, 8), *al = (double *)malloc((size_t)(T + 1) * C * 8);
        double zmax = 0.0;
        for (int b = 0; b < refp; ++b) {
            memset(gcum, 0, ncum * 8), memset(gtr, 0, (size_t)C * C * 8), memset(gdb, 0, (size_t)K * C * 8);
            memset(gps, 0, npos * 8), memset(gpe, 0, npos * 8);
            double lz = ref64(&p, b, al, gcum, gtr, gdb, gps, gpe);
            zmax = fabs(lz) > zmax ? fabs(lz) : zmax;
            for (size_t i = 0; i < ncum; ++i) r.gcum[(size_t)b * ncum + i] = (float)gcum[i];
            for (size_t i = 0; i < (size_t)C * C; ++i) r.gtr[(size_t)b * C * C + i] = (float)gtr[i];
            for (size_t i = 0; i < (size_t)K * C; ++i) r.gdb[(size_t)b * K * C + i] = (float)gdb[i];
            for (size_t i = 0; i < npos; ++i) r.gps[(size_t)b * npos + i] = (float)gps[i], r.gpe[(size_t)b * npos + i] = (float)gpe[i];
            double mr = 0.0, m = 0.0;
            for (int t = 0; t <= p.len[b]; ++t)
                for (int c = 0; c < C; ++c) mr = fabs(al[(size_t)t * C + c]) > mr ? fabs(al[(size_t)t * C + c]) : mr;
            for (int t = 0; t <= p.len[b]; ++t)
                for (int c = 0; c < C; ++c) {
                    double dd = fabs((double)ref_alpha[4][((size_t)b * (T + 1) + t) * WR_C_PAD + c] - al[(size_t)t * C + c]);
                    m = dd > m ? dd : m;
                }
            wa = m / mr > wa ? m / mr : wa;
        }
        /* compare only the checked programs: a problem view of refp programs over the same storage */
        problem q = p;
        q.B = refp;
        size_t nf = 0;
        double tb = tol_b * zmax;
        wg = grads_err(&q, &ref_g[4], &r, tb, NULL, &nf);
        int good = wg <= tb && wa <= tol_f && nf == 0;
        printf("check: race-free 4-warp backward vs float64 host on programs 0..%d: %.3g tol (tol %.3g = (K+4) 2^-24 max|log Z|); "
               "forward alpha %.3g of its tol %.3g; %.1f s: %s\n",
               refp - 1, wg / tb, tb, wa / tol_f, tol_f, now_s() - t0, good ? "ok" : "FAIL");
        ok &= good;
        free(gcum), free(gtr), free(gdb), free(gps), free(gpe), free(al);
        grads_free(&r);
    }
    if (!ok) printf("WARNING: a reference check failed: the rates below are not to be trusted\n");

    printf("%-11s %4s %8s %6s %6s %6s %-26s %-26s %6s %10s %9s\n", "version", "nw", "launches", "wrong", "differ", "nonfin",
           "wrong rate [95% CI]", "differ rate [95% CI]", "progs", "worst/tol", "ms/launch");
    int left = nsel, control_bad = 0;
    grads g;
    grads_alloc(&g, &p);
    float *h_alpha = (float *)malloc(d.nalpha * 4), *h_logz = (float *)malloc((size_t)B * 4);
    for (int vi = 0; vi < NVERS; ++vi) {
        const version *v = &versions[vi];
        if (!wanted(only, v->id)) continue;
        double share = (budget - (now_s() - t_start)) / left--;
        double vstart = now_s(), ms_sum = 0.0, worst = 0.0;
        int n = 0, wrong = 0, differ = 0, nonfin = 0, hitmax = 0;
        const double tol = v->fwd ? tol_f : tol_b * ref_logz_max[4];
        int *hit = (int *)calloc((size_t)B, sizeof(int));
        while (n < N) {
            memset(hit, 0, (size_t)B * sizeof(int));
            size_t nf = 0;
            double e;
            int df;
            if (v->fwd) {
                ms_sum += fwd_launch(&d, &p, v->ff, v->nw, d.fwd_ckpt_scratch, d.fwd_logz_scratch, h_alpha, h_logz, e0, e1);
                e = alpha_err(&p, h_alpha, ref_alpha[v->nw], tol, hit, &nf);
                df = memcmp(h_alpha, ref_alpha[v->nw], d.nalpha * 4) != 0;
            } else {
                ms_sum += bwd_launch(&d, &p, v, &g, e0, e1);
                e = grads_err(&p, &g, &ref_g[v->nw], tol, hit, &nf);
                df = grads_differ(&p, &g, &ref_g[v->nw]);
            }
            ++n;
            int h = 0;
            for (int b = 0; b < B; ++b) h += hit[b];
            hitmax = h > hitmax ? h : hitmax;
            wrong += !(e <= tol);
            differ += df;
            nonfin += nf > 0;
            worst = (isnan(e) || e > worst) ? e : worst;
            if (n >= 16 && wrong == n) break; /* rate decided at 1 (95% lower end 0.79) */
            double el = now_s() - vstart;
            if (el + el / n > share) break; /* the next launch would overrun this version's share */
        }
        free(hit);
        double wl, wh, dl, dh;
        clopper_pearson(wrong, n, &wl, &wh);
        clopper_pearson(differ, n, &dl, &dh);
        char wr[40], dr[40];
        snprintf(wr, sizeof wr, "%.4f [%.4f, %.4f]", (double)wrong / n, wl, wh);
        snprintf(dr, sizeof dr, "%.4f [%.4f, %.4f]", (double)differ / n, dl, dh);
        printf("%-11s %4d %8d %6d %6d %6d %-26s %-26s %6d %10.3g %9.2f\n", v->id, v->nw, n, wrong, differ, nonfin, wr, dr, hitmax,
               worst / tol, ms_sum / n);
        fflush(stdout);
        if (v->control && (wrong || differ)) control_bad = 1;
    }
    printf("columns: wrong = some value beyond tol of the race-free run at the same warp count (backward: (K+4) 2^-24 max|log Z| "
           "per tensor relative to max|ref|; forward: 10 sqrt(T (K+4)) 2^-24 relative to max|alpha_b|) or non-finite; differ = "
           "any bit differs from it; progs = most programs (of %d) beyond tol in one launch; worst/tol over the launches\n",
           B);
    printf("total %.1f s%s\n", now_s() - t_start,
           control_bad ? "; CONTROL FAILED: a race-free version differed from its reference" : ok ? "" : "; REFERENCE CHECK FAILED");
    grads_free(&g);
    free(h_alpha), free(h_logz);
    for (int nw = 2; nw <= 8; nw *= 2)
        if (need[nw]) grads_free(&ref_g[nw]), free(ref_alpha[nw]);
    problem_free(&p);
    return control_bad || !ok ? 1 : 0;
}
