/* lab_semicrf: a semi-Markov CRF (cumulative-score segments) with a float64 reference and a CPU emulation of its GPU backward kernel (padded lanes, guard-zoned memory, seeded atomic schedules). */
#include "lab_semicrf.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_fs.h"
#include "lab_golden.h"
#include "lab_asan.h"
#include "lab_rng.h"
#include "lab_tensor.h"

#define SC_PAD LAB_SEMICRF_C_PAD

/* ---------------------------------------------------------------------------------------------- */
/* Problems                                                                                        */

void lab_semicrf_problem_free(lab_semicrf_problem *p)
{
    free(p->len);
    free(p->cum);
    free(p->trans);
    free(p->dur);
    free(p->proj_start);
    free(p->proj_end);
    memset(p, 0, sizeof *p);
}

lab_status lab_semicrf_problem_init(lab_semicrf_problem *p, int B, int T, int K, int C, int use_proj)
{
    memset(p, 0, sizeof *p);
    if (B < 1 || B > 4096) return lab_err_set(LAB_ERR_ARG, "semicrf: B = %d: need 1..4096", B);
    if (T < 1 || T > LAB_SEMICRF_T_MAX) return lab_err_set(LAB_ERR_ARG, "semicrf: T = %d: need 1..%d", T, LAB_SEMICRF_T_MAX);
    if (K < 1 || K > LAB_SEMICRF_K_MAX) return lab_err_set(LAB_ERR_ARG, "semicrf: K = %d: need 1..%d", K, LAB_SEMICRF_K_MAX);
    if (C < 1 || C > SC_PAD) return lab_err_set(LAB_ERR_ARG, "semicrf: C = %d: need 1..%d", C, SC_PAD);
    p->B = B, p->T = T, p->K = K, p->C = C, p->use_proj = use_proj != 0;
    size_t nb = (size_t)B;
    p->len = calloc(nb, sizeof *p->len);
    p->cum = calloc(nb * (size_t)(T + 1) * (size_t)C, sizeof(float));
    p->trans = calloc((size_t)C * (size_t)C, sizeof(float));
    p->dur = calloc((size_t)K * (size_t)C, sizeof(float));
    if (use_proj) {
        p->proj_start = calloc(nb * (size_t)T * (size_t)C, sizeof(float));
        p->proj_end = calloc(nb * (size_t)T * (size_t)C, sizeof(float));
    }
    if (!p->len || !p->cum || !p->trans || !p->dur || (use_proj && (!p->proj_start || !p->proj_end))) {
        lab_semicrf_problem_free(p);
        return lab_err_set(LAB_ERR_NOMEM, "semicrf: out of memory for a problem B=%d T=%d", B, T);
    }
    for (int b = 0; b < B; ++b) p->len[b] = T;
    return LAB_OK;
}

static void sc_fill_scaled(float *x, size_t n, uint64_t seed, uint32_t stream, float scale)
{
    lab_rng_fill_normal(x, n, seed, stream, 0);
    for (size_t i = 0; i < n; ++i) x[i] = x[i] * scale;
}

void lab_semicrf_problem_fill(lab_semicrf_problem *p, uint64_t seed)
{
    int B = p->B, T = p->T, K = p->K, C = p->C;
    size_t row = (size_t)C;
    float *e = malloc((size_t)T * row * sizeof *e);
    for (int b = 0; b < B; ++b) {
        float *cb = p->cum + (size_t)b * (size_t)(T + 1) * row;
        if (e) lab_rng_fill_normal(e, (size_t)T * row, seed, LAB_SEMICRF_STREAM_EMIT, (uint64_t)b * (uint64_t)T * row);
        for (int c = 0; c < C; ++c) {
            double acc = 0.0;
            cb[c] = 0.0f;
            for (int t = 0; t < T; ++t) {
                acc += e ? 0.5 * (double)e[(size_t)t * row + (size_t)c]
                         : 0.5 * (double)lab_rng_normal(seed, LAB_SEMICRF_STREAM_EMIT,
                                                        ((uint64_t)b * (uint64_t)T + (uint64_t)t) * row + (uint64_t)c);
                cb[(size_t)(t + 1) * row + (size_t)c] = (float)acc;
            }
        }
        if (b == 0)
            p->len[b] = T;
        else {
            uint32_t u = lab_rng_u32(seed, LAB_SEMICRF_STREAM_LEN, (uint64_t)b);
            int lo = T / 2 > 0 ? T / 2 : 1;
            p->len[b] = lo + (int)(u % (uint32_t)(T - lo + 1));
        }
    }
    free(e);
    sc_fill_scaled(p->trans, row * row, seed, LAB_SEMICRF_STREAM_TRANS, 0.3f);
    sc_fill_scaled(p->dur, (size_t)K * row, seed, LAB_SEMICRF_STREAM_DUR, 0.3f);
    if (p->use_proj) {
        sc_fill_scaled(p->proj_start, (size_t)B * (size_t)T * row, seed, LAB_SEMICRF_STREAM_PS, 0.1f);
        sc_fill_scaled(p->proj_end, (size_t)B * (size_t)T * row, seed, LAB_SEMICRF_STREAM_PE, 0.1f);
    }
}

static lab_status sc_check_len(const lab_semicrf_problem *p)
{
    for (int b = 0; b < p->B; ++b)
        if (p->len[b] < 1 || p->len[b] > p->T)
            return lab_err_set(LAB_ERR_ARG, "semicrf: len[%d] = %d: need 1..T = %d", b, p->len[b], p->T);
    return LAB_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* float64 reference                                                                               */

static double sc_lse_d(const double *x, int n)
{
    double m = -INFINITY;
    for (int i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
    if (m == -INFINITY) return -INFINITY;
    double s = 0.0;
    for (int i = 0; i < n; ++i) s += exp(x[i] - m);
    return m + log(s);
}

/* Segment score in double of (b, start s, duration k, class c). */
static double sc_seg_d(const lab_semicrf_problem *p, int b, int s, int k, int c)
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
            for (int k = 1; k <= nk; ++k) tmp[k - 1] = sc_seg_d(p, b, t - k, k, c) + ain[(size_t)(t - k) * C + c];
            alpha[(size_t)t * C + c] = sc_lse_d(tmp, nk);
        }
        for (int c2 = 0; c2 < C; ++c2) {
            for (int c = 0; c < C; ++c) tmp[c] = alpha[(size_t)t * C + c] + (double)p->trans[(size_t)c * C + c2];
            ain[(size_t)t * C + c2] = sc_lse_d(tmp, C);
        }
    }
    return sc_lse_d(alpha + (size_t)L * C, C);
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
    lab_status st = sc_check_len(p);
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
                for (int k = 1; k <= nk; ++k) tmp[k - 1] = sc_seg_d(p, b, t, k, c2) + beta[(size_t)(t + k) * C + c2];
                bout[(size_t)t * C + c2] = sc_lse_d(tmp, nk);
            }
            for (int c = 0; c < C; ++c) {
                for (int c2 = 0; c2 < C; ++c2) tmp[c2] = (double)p->trans[(size_t)c * C + c2] + bout[(size_t)t * C + c2];
                beta[(size_t)t * C + c] = sc_lse_d(tmp, C);
            }
        }
        double *gc = r->g_cum + (size_t)b * nrow, *ac = r->abs_cum + (size_t)b * nrow;
        double *gps = r->g_ps + (size_t)b * npos, *gpe = r->g_pe + (size_t)b * npos;
        for (int s = 0; s < L; ++s) {
            int nk = L - s < K ? L - s : K;
            for (int c2 = 0; c2 < C; ++c2) {
                double a = ain[(size_t)s * C + c2], sum = 0.0;
                for (int k = 1; k <= nk; ++k) {
                    double e = exp(a + sc_seg_d(p, b, s, k, c2) + beta[(size_t)(s + k) * C + c2] - z);
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

/* ---------------------------------------------------------------------------------------------- */
/* float32 primitives of the kernels                                                               */

float lab_semicrf_lse_f32(const float *x, int n, unsigned guards)
{
    float m = x[0];
    for (int i = 1; i < n; ++i) m = x[i] > m ? x[i] : m;
    int all_neginf = m < LAB_SEMICRF_NEG_INF + 1.0f;
    float msafe = (guards & LAB_SEMICRF_GUARD_NEGINF) && all_neginf ? 0.0f : m;
    float s = 0.0f;
    for (int i = 0; i < n; ++i) s = s + expf(x[i] - msafe);
    if (guards & LAB_SEMICRF_GUARD_EPS) s = s + 1e-10f;
    float r = msafe + logf(s);
    if ((guards & LAB_SEMICRF_GUARD_NEGINF) && all_neginf) r = LAB_SEMICRF_NEG_INF;
    return r;
}

/* torch.clamp semantics: NaN stays NaN. */
static inline float sc_clamp(float x, float lo, float hi)
{
    if (x != x) return x;
    return x < lo ? lo : (x > hi ? hi : x);
}

float lab_semicrf_marginal_f32(float a, float edge, float b, float logZ, unsigned guards)
{
    if (guards & LAB_SEMICRF_GUARD_CLAMP_IN) {
        a = sc_clamp(a, -1e6f, 1e6f);
        edge = sc_clamp(edge, -1e6f, 1e6f);
        b = sc_clamp(b, -1e6f, 1e6f);
    }
    float lm = a + edge + b - logZ;
    if (guards & LAB_SEMICRF_GUARD_CLAMP_LOG) lm = sc_clamp(lm, -80.0f, 80.0f);
    return expf(lm);
}

/* ---------------------------------------------------------------------------------------------- */
/* Guard-zoned arena: every kernel buffer the lanes index, with seeded neighbours                   */

/* Guard zone on each side of an allocation: more than the farthest stray access of any layout
 * (the unpadded transition tile reaches at most 1056 elements, of up to 8 bytes, past its end). */
#define SC_GUARD_BYTES (2048 * 8)
#define SC_MAX_ALLOC 16

typedef struct {
    const char *name;
    size_t off;   /* byte offset of element 0 */
    size_t n;     /* elements */
    size_t esz;   /* 4 (float) or 8 (double) */
} sc_alloc;

typedef struct {
    unsigned char *mem;
    size_t size;
    sc_alloc a[SC_MAX_ALLOC];
    int na;
    lab_semicrf_out *o;
    lab_status err;
} sc_arena;

lab_semicrf_guard_kind lab_semicrf_guard_kind_of(uint64_t seed)
{
    return (lab_semicrf_guard_kind)(lab_rng_u32(seed, LAB_SEMICRF_STREAM_GUARD, 0) % 4u);
}

const char *lab_semicrf_guard_kind_name(lab_semicrf_guard_kind k)
{
    switch (k) {
    case LAB_SEMICRF_GUARD_ZEROS: return "zeros";
    case LAB_SEMICRF_GUARD_FINITE: return "finite";
    case LAB_SEMICRF_GUARD_STALE: return "stale-bits";
    case LAB_SEMICRF_GUARD_SENTINELS: return "sentinels";
    }
    return "?";
}

/* Fills nwords 32-bit words of a guard zone; `first` numbers the zone's words in the seed's guard stream. */
static void sc_guard_fill(unsigned char *dst, size_t nwords, uint64_t seed, lab_semicrf_guard_kind kind, uint64_t first)
{
    for (size_t i = 0; i < nwords; ++i) {
        uint64_t idx = first + i + 1; /* word 0 picks the kind */
        uint32_t u = lab_rng_u32(seed, LAB_SEMICRF_STREAM_GUARD, idx);
        float f;
        switch (kind) {
        case LAB_SEMICRF_GUARD_ZEROS: f = 0.0f; break;
        case LAB_SEMICRF_GUARD_FINITE: f = lab_rng_normal(seed, LAB_SEMICRF_STREAM_GUARD ^ 0x100u, idx); break;
        case LAB_SEMICRF_GUARD_STALE: memcpy(&f, &u, 4); break;
        default: {
            unsigned r = u % 16u;
            f = r == 0 ? -INFINITY : r == 1 ? INFINITY : r == 2 ? NAN
                                         : lab_rng_normal(seed, LAB_SEMICRF_STREAM_GUARD ^ 0x100u, idx);
        }
        }
        memcpy(dst + 4 * i, &f, 4);
    }
}

void lab_semicrf_guard_fill(void *dst, size_t nwords, uint64_t seed, uint64_t first)
{
    sc_guard_fill(dst, nwords, seed, lab_semicrf_guard_kind_of(seed), first);
}

/* Lays out allocations: [guard][data, rounded up to 16 bytes][guard] each. */
static lab_status sc_arena_init(sc_arena *ar, const size_t *n, const size_t *esz, const char *const *names, int na,
                                uint64_t seed, lab_semicrf_out *o)
{
    memset(ar, 0, sizeof *ar);
    size_t total = 0;
    for (int i = 0; i < na; ++i) {
        size_t bytes = (n[i] * esz[i] + 15) & ~(size_t)15;
        total += 2 * SC_GUARD_BYTES + bytes;
    }
    ar->mem = malloc(total);
    if (!ar->mem) return lab_err_set(LAB_ERR_NOMEM, "semicrf: out of memory for the emulated device heap (%zu bytes)", total);
    ar->size = total;
    ar->o = o;
    lab_semicrf_guard_kind kind = lab_semicrf_guard_kind_of(seed);
    size_t pos = 0;
    uint64_t word = 0;
    for (int i = 0; i < na; ++i) {
        size_t bytes = (n[i] * esz[i] + 15) & ~(size_t)15;
        sc_guard_fill(ar->mem + pos, SC_GUARD_BYTES / 4, seed, kind, word);
        word += SC_GUARD_BYTES / 4;
        ar->a[i].name = names[i];
        ar->a[i].off = pos + SC_GUARD_BYTES;
        ar->a[i].n = n[i];
        ar->a[i].esz = esz[i];
        memset(ar->mem + ar->a[i].off, 0, bytes);
        /* the tail of the rounded data region is neighbour memory too */
        size_t tail = bytes - n[i] * esz[i];
        sc_guard_fill(ar->mem + ar->a[i].off + n[i] * esz[i], tail / 4, seed, kind, word);
        word += tail / 4;
        pos += SC_GUARD_BYTES + bytes;
        sc_guard_fill(ar->mem + pos, SC_GUARD_BYTES / 4, seed, kind, word);
        word += SC_GUARD_BYTES / 4;
        pos += SC_GUARD_BYTES;
    }
    ar->na = na;
    return LAB_OK;
}

/* A memory checker watches (cfg->exact_alloc: an AddressSanitizer build's replay worker, lab_asan.h): the
 * guard zones and rounding tails are not memory any more, so each buffer is exactly its own size to ASan and
 * the first stray load or atomic is its report ("N bytes past the end of <buffer>"). Outside an ASan build a
 * no-op. Undone by sc_arena_release. */
static void sc_arena_exact(sc_arena *ar)
{
    for (int i = 0; i < ar->na; ++i) {
        const sc_alloc *a = &ar->a[i];
        size_t bytes = (a->n * a->esz + 15) & ~(size_t)15;
        lab_asan_poison(ar->mem + a->off - SC_GUARD_BYTES, SC_GUARD_BYTES, NULL);
        lab_asan_poison(ar->mem + a->off + a->n * a->esz, bytes - a->n * a->esz + SC_GUARD_BYTES, a->name);
    }
}

static void sc_arena_release(sc_arena *ar)
{
    lab_asan_unpoison(ar->mem, ar->size);
    free(ar->mem);
    ar->mem = NULL;
}

/* Byte address of element i of allocation id, or NULL (error recorded) beyond its guard zones.
 * Counts accesses outside the allocation. */
static inline unsigned char *sc_addr(sc_arena *ar, int id, long i, int write)
{
    sc_alloc *a = &ar->a[id];
    if (i < 0 || (size_t)i >= a->n) {
        long lo = -(long)(SC_GUARD_BYTES / a->esz), hi = (long)a->n + (long)(SC_GUARD_BYTES / a->esz);
        if (i < lo || i >= hi) {
            if (ar->err == LAB_OK)
                ar->err = lab_err_set(LAB_ERR_UNSUPPORTED, "semicrf: %s[%ld] lies beyond the emulated guard zone "
                                      "(allocation of %zu)", a->name, i, a->n);
            return NULL;
        }
        if (write)
            ar->o->oob_writes++;
        else
            ar->o->oob_reads++;
    }
    return ar->mem + (ptrdiff_t)a->off + (ptrdiff_t)a->esz * (ptrdiff_t)i;
}

static inline float sc_ld(sc_arena *ar, int id, long i)
{
    unsigned char *q = sc_addr(ar, id, i, 0);
    float f = 0.0f;
    if (q) memcpy(&f, q, 4);
    if (q && (i < 0 || (size_t)i >= ar->a[id].n) && !isfinite(f)) ar->o->guard_nonfinite_read++;
    return f;
}

/* atomicAdd: read-modify-write of one element, in float32 or float64 as the allocation is. */
static inline void sc_atomic_add(sc_arena *ar, int id, long i, float v)
{
    unsigned char *q = sc_addr(ar, id, i, 1);
    ar->o->n_atomics++;
    if (!q) return;
    if (ar->a[id].esz == 4) {
        float f;
        memcpy(&f, q, 4);
        f = f + v;
        memcpy(q, &f, 4);
    } else {
        double d;
        memcpy(&d, q, 8);
        d = d + (double)v;
        memcpy(q, &d, 8);
    }
}

/* An atomic by a lane whose index runs past its row (stray): counted as a cross-row write when it still
 * lands inside the allocation (an out-of-allocation one is counted by sc_addr). */
static inline void sc_atomic_row(sc_arena *ar, int id, long i, float v, int stray)
{
    if (stray && i >= 0 && (size_t)i < ar->a[id].n) ar->o->cross_row_writes++;
    sc_atomic_add(ar, id, i, v);
}

static inline double sc_get(sc_arena *ar, int id, size_t i)
{
    const unsigned char *q = ar->mem + ar->a[id].off + ar->a[id].esz * i;
    if (ar->a[id].esz == 4) {
        float f;
        memcpy(&f, q, 4);
        return (double)f;
    }
    double d;
    memcpy(&d, q, 8);
    return d;
}

/* ---------------------------------------------------------------------------------------------- */
/* The emulated kernel                                                                             */

void lab_semicrf_out_free(lab_semicrf_out *o)
{
    free(o->logZ);
    free(o->g_cum);
    free(o->g_trans);
    free(o->g_dur);
    free(o->g_ps);
    free(o->g_pe);
    free(o->acc_trans);
    free(o->acc_dur);
    free(o->acc_cum);
    memset(o, 0, sizeof *o);
}

enum { A_CUM, A_TRANS, A_DUR, A_PS, A_PE, A_GCUM, A_GTRANS, A_GDUR, A_GPS, A_GPE, A_N };

/* Segment score in float32 as the kernel evaluates it (left to right, no fused operations). */
static inline float sc_seg_f(sc_arena *ar, const lab_semicrf_problem *p, int b, int s, int k, long rd, long C)
{
    long T = p->T;
    float v = sc_ld(ar, A_CUM, ((long)b * (T + 1) + s + k) * C + rd) - sc_ld(ar, A_CUM, ((long)b * (T + 1) + s) * C + rd);
    v = v + sc_ld(ar, A_DUR, (long)(k - 1) * C + rd);
    if (p->use_proj) {
        v = v + sc_ld(ar, A_PS, ((long)b * T + s) * C + rd);
        v = v + sc_ld(ar, A_PE, ((long)b * T + s + k - 1) * C + rd);
    }
    return v;
}

/* The production forward and backward passes on C_PAD lanes (padding lanes NEG_INF by selection), for
 * element b: alpha, ain, beta, bout are [T+1][C_PAD]; returns the float32 log Z. */
static float sc_fwd_bwd_f(sc_arena *ar, const lab_semicrf_problem *p, int b, unsigned guards, float *alpha, float *ain,
                          float *beta, float *bout)
{
    int C = p->C, K = p->K, L = p->len[b], T = p->T;
    float tmp[SC_PAD > LAB_SEMICRF_K_MAX ? SC_PAD : LAB_SEMICRF_K_MAX];
    for (size_t i = 0; i < (size_t)(T + 1) * SC_PAD; ++i)
        alpha[i] = ain[i] = beta[i] = bout[i] = LAB_SEMICRF_NEG_INF;
    for (int c = 0; c < C; ++c) alpha[c] = 0.0f, ain[c] = 0.0f;
    for (int t = 1; t <= L; ++t) {
        int nk = t < K ? t : K;
        for (int c = 0; c < C; ++c) {
            for (int k = 1; k <= nk; ++k)
                tmp[k - 1] = sc_seg_f(ar, p, b, t - k, k, c, C) + ain[(size_t)(t - k) * SC_PAD + (size_t)c];
            alpha[(size_t)t * SC_PAD + (size_t)c] = lab_semicrf_lse_f32(tmp, nk, guards);
        }
        for (int c2 = 0; c2 < C; ++c2) {
            for (int c = 0; c < C; ++c)
                tmp[c] = alpha[(size_t)t * SC_PAD + (size_t)c] + sc_ld(ar, A_TRANS, (long)c * C + c2);
            ain[(size_t)t * SC_PAD + (size_t)c2] = lab_semicrf_lse_f32(tmp, C, guards);
        }
    }
    float z = lab_semicrf_lse_f32(alpha + (size_t)L * SC_PAD, C, guards);
    for (int c = 0; c < C; ++c) beta[(size_t)L * SC_PAD + (size_t)c] = 0.0f;
    for (int t = L - 1; t >= 0; --t) {
        int nk = L - t < K ? L - t : K;
        for (int c2 = 0; c2 < C; ++c2) {
            for (int k = 1; k <= nk; ++k)
                tmp[k - 1] = sc_seg_f(ar, p, b, t, k, c2, C) + beta[(size_t)(t + k) * SC_PAD + (size_t)c2];
            bout[(size_t)t * SC_PAD + (size_t)c2] = lab_semicrf_lse_f32(tmp, nk, guards);
        }
        for (int c = 0; c < C; ++c) {
            for (int c2 = 0; c2 < C; ++c2)
                tmp[c2] = sc_ld(ar, A_TRANS, (long)c * C + c2) + bout[(size_t)t * SC_PAD + (size_t)c2];
            beta[(size_t)t * SC_PAD + (size_t)c] = lab_semicrf_lse_f32(tmp, C, guards);
        }
    }
    return z;
}

/* Pairwise (fixed binary tree) reduction of n rows of w floats, in place: row 0 gets the sum. The tree
 * pairs rows i and i + h for h = 1, 2, 4, ..., whatever the schedule; the CUDA reduction uses the same. */
static void sc_tree_reduce(float *rows, size_t n, size_t w)
{
    for (size_t h = 1; h < n; h <<= 1)
        for (size_t i = 0; i + h < n; i += 2 * h) {
            float *a = rows + i * w, *bb = rows + (i + h) * w;
            for (size_t j = 0; j < w; ++j) a[j] = a[j] + bb[j];
        }
}

/* Lanes of one atomic instruction whose address another lane of it shares (n lanes, addresses addr). */
static size_t sc_shared_lanes(const long *addr, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j)
            if (j != i && addr[j] == addr[i]) {
                ++k;
                break;
            }
    return k;
}

lab_status lab_semicrf_emulate(const lab_semicrf_problem *p, const lab_semicrf_config *cfg, lab_semicrf_out *o)
{
    memset(o, 0, sizeof *o);
    lab_status st = sc_check_len(p);
    if (st != LAB_OK) return st;
    if (cfg->layout > LAB_SEMICRF_LAYOUT_PADDED || cfg->accum > LAB_SEMICRF_ACC_DETERMINISTIC)
        return lab_err_set(LAB_ERR_ARG, "semicrf: config: unknown layout %d or accumulation %d", (int)cfg->layout,
                           (int)cfg->accum);
    if (cfg->accum == LAB_SEMICRF_ACC_DETERMINISTIC && cfg->layout != LAB_SEMICRF_LAYOUT_PADDED)
        return lab_err_set(LAB_ERR_ARG, "semicrf: config: the deterministic accumulation needs the padded layout");
    const int B = p->B, T = p->T, K = p->K, C = p->C;
    const int padded = cfg->layout == LAB_SEMICRF_LAYOUT_PADDED, clamped = cfg->layout == LAB_SEMICRF_LAYOUT_CLAMPED;
    const long W = padded ? SC_PAD : C; /* row width of the gradient buffers */
    const size_t gsz = cfg->accum == LAB_SEMICRF_ACC_F64_ATOMIC ? 8 : 4;
    const unsigned guards = cfg->guards;

    size_t n[A_N] = {(size_t)B * (size_t)(T + 1) * (size_t)C, (size_t)C * (size_t)C, (size_t)K * (size_t)C,
                     p->use_proj ? (size_t)B * (size_t)T * (size_t)C : 1, p->use_proj ? (size_t)B * (size_t)T * (size_t)C : 1,
                     (size_t)B * (size_t)(T + 1) * (size_t)W, (size_t)W * (size_t)W, (size_t)K * (size_t)W,
                     (size_t)B * (size_t)T * (size_t)W, (size_t)B * (size_t)T * (size_t)W};
    size_t esz[A_N] = {4, 4, 4, 4, 4, gsz, gsz, gsz, gsz, gsz};
    static const char *const names[A_N] = {"cum_scores", "transitions", "duration_bias", "proj_start", "proj_end",
                                           "grad_cum_scores", "grad_transitions", "grad_duration_bias",
                                           "grad_proj_start", "grad_proj_end"};
    sc_arena ar;
    if ((st = sc_arena_init(&ar, n, esz, names, A_N, cfg->guard_seed, o)) != LAB_OK) return st;
    if (cfg->exact_alloc) sc_arena_exact(&ar);
    memcpy(ar.mem + ar.a[A_CUM].off, p->cum, n[A_CUM] * 4);
    memcpy(ar.mem + ar.a[A_TRANS].off, p->trans, n[A_TRANS] * 4);
    memcpy(ar.mem + ar.a[A_DUR].off, p->dur, n[A_DUR] * 4);
    if (p->use_proj) {
        memcpy(ar.mem + ar.a[A_PS].off, p->proj_start, n[A_PS] * 4);
        memcpy(ar.mem + ar.a[A_PE].off, p->proj_end, n[A_PE] * 4);
    }

    size_t nrowp = (size_t)(T + 1) * SC_PAD;
    float *fb = malloc(4 * (size_t)B * nrowp * sizeof(float));
    size_t nblocks = 0;
    for (int b = 0; b < B; ++b) nblocks += (size_t)p->len[b];
    size_t *order = malloc(nblocks * sizeof *order);
    int det = cfg->accum == LAB_SEMICRF_ACC_DETERMINISTIC;
    /* deterministic workspaces: per block (b, s) its end marginals [K][C_PAD] and transition tile */
    float *ws_e = det ? calloc((size_t)B * (size_t)T * (size_t)K * SC_PAD, sizeof(float)) : NULL;
    float *ws_g = det ? calloc((size_t)B * (size_t)T * SC_PAD * SC_PAD, sizeof(float)) : NULL;
    o->logZ = calloc((size_t)B, sizeof(float));
    if (!fb || !order || !o->logZ || (det && (!ws_e || !ws_g))) {
        st = lab_err_set(LAB_ERR_NOMEM, "semicrf: out of memory for the emulated kernel");
        goto fail;
    }
    float *alpha = fb, *ain = fb + (size_t)B * nrowp, *beta = fb + 2 * (size_t)B * nrowp, *bout = fb + 3 * (size_t)B * nrowp;
    for (int b = 0; b < B; ++b)
        o->logZ[b] = sc_fwd_bwd_f(&ar, p, b, guards, alpha + (size_t)b * nrowp, ain + (size_t)b * nrowp,
                                  beta + (size_t)b * nrowp, bout + (size_t)b * nrowp);

    /* The schedule: blocks (b, s) in a seeded order (Fisher-Yates over lab_rng words). */
    {
        size_t i = 0;
        for (int b = 0; b < B; ++b)
            for (int s = 0; s < p->len[b]; ++s) order[i++] = (size_t)b * (size_t)T + (size_t)s;
        for (size_t j = nblocks; j > 1; --j) {
            uint64_t u = ((uint64_t)lab_rng_u32(cfg->schedule_seed, LAB_SEMICRF_STREAM_SCHED, 2 * j) << 32) |
                         lab_rng_u32(cfg->schedule_seed, LAB_SEMICRF_STREAM_SCHED, 2 * j + 1);
            size_t r = (size_t)(u % j), t = order[j - 1];
            order[j - 1] = order[r];
            order[r] = t;
        }
    }

    /* Lanes sharing an address within one instruction (the contention the write-up worried about). */
    long lane_addr[SC_PAD * SC_PAD];
    for (int c = 0; c < SC_PAD; ++c) lane_addr[c] = clamped ? (c < C ? c : C - 1) : c;
    size_t shared_row = sc_shared_lanes(lane_addr, SC_PAD);
    for (int c = 0; c < SC_PAD; ++c)
        for (int c2 = 0; c2 < SC_PAD; ++c2) {
            long i = clamped ? (c < C ? c : C - 1) : c, j = clamped ? (c2 < C ? c2 : C - 1) : c2;
            lane_addr[c * SC_PAD + c2] = i * W + j;
        }
    size_t shared_tile = 0;
    {
        /* count by multiplicity of each address (W*W addresses at most) */
        size_t *mult = calloc((size_t)(SC_PAD * SC_PAD * 2), sizeof *mult);
        if (!mult) {
            st = lab_err_set(LAB_ERR_NOMEM, "semicrf: out of memory");
            goto fail;
        }
        for (int i = 0; i < SC_PAD * SC_PAD; ++i) mult[lane_addr[i]]++;
        for (int i = 0; i < SC_PAD * SC_PAD; ++i) shared_tile += mult[lane_addr[i]] > 1;
        free(mult);
    }

    for (size_t bi = 0; bi < nblocks; ++bi) {
        int b = (int)(order[bi] / (size_t)T), s = (int)(order[bi] % (size_t)T), L = p->len[b];
        int nk = L - s < K ? L - s : K;
        const float *al = alpha + (size_t)b * nrowp, *ai = ain + (size_t)b * nrowp;
        const float *be = beta + (size_t)b * nrowp, *bo = bout + (size_t)b * nrowp;
        float z = o->logZ[b];
        float start_sum[SC_PAD];
        for (int c = 0; c < SC_PAD; ++c) start_sum[c] = 0.0f;
        for (int k = 1; k <= nk; ++k) {
            for (int c = 0; c < SC_PAD; ++c) {
                int real = c < C;
                long rd = padded || clamped ? (real ? c : C - 1) : c;     /* read index of unpadded inputs */
                long li = clamped ? rd : c;                               /* lane index into padded internals */
                long wi = clamped ? rd : c;                               /* write index */
                float seg = sc_seg_f(&ar, p, b, s, k, rd, C);
                float e = lab_semicrf_marginal_f32(ai[(size_t)s * SC_PAD + (size_t)li], seg,
                                                   be[(size_t)(s + k) * SC_PAD + (size_t)li], z, guards);
                float v = padded ? (real ? e : 0.0f) : e * (float)real;
                start_sum[c] = start_sum[c] + v;
                if (det) {
                    ws_e[(((size_t)b * (size_t)T + (size_t)s) * (size_t)K + (size_t)(k - 1)) * SC_PAD + (size_t)c] = v;
                    continue;
                }
                sc_atomic_row(&ar, A_GCUM, ((long)b * (T + 1) + s + k) * W + wi, v, !real && !padded && !clamped);
                sc_atomic_row(&ar, A_GDUR, (long)(k - 1) * W + wi, v, !real && !padded && !clamped);
                if (p->use_proj)
                    sc_atomic_row(&ar, A_GPE, ((long)b * T + s + k - 1) * W + wi, v, !real && !padded && !clamped);
            }
            o->same_addr_lanes += det ? 0 : shared_row * (p->use_proj ? 3 : 2);
        }
        if (!det) {
            for (int c = 0; c < SC_PAD; ++c) {
                long wi = clamped ? (c < C ? c : C - 1) : c;
                int stray = c >= C && !padded && !clamped;
                sc_atomic_row(&ar, A_GCUM, ((long)b * (T + 1) + s) * W + wi, -start_sum[c], stray);
                if (p->use_proj) sc_atomic_row(&ar, A_GPS, ((long)b * T + s) * W + wi, start_sum[c], stray);
            }
            o->same_addr_lanes += shared_row * (p->use_proj ? 2 : 1);
        }
        if (s == 0) continue; /* the first segment has no transition */
        for (int c = 0; c < SC_PAD; ++c) {
            int rc = c < C;
            long ri = padded || clamped ? (rc ? c : C - 1) : c, li = clamped ? ri : c;
            float a = al[(size_t)s * SC_PAD + (size_t)li];
            for (int c2 = 0; c2 < SC_PAD; ++c2) {
                int real = rc && c2 < C;
                long rj = padded || clamped ? (c2 < C ? c2 : C - 1) : c2, lj = clamped ? rj : c2;
                float g = lab_semicrf_marginal_f32(a, sc_ld(&ar, A_TRANS, ri * C + rj), bo[(size_t)s * SC_PAD + (size_t)lj],
                                                   z, guards);
                float v = padded ? (real ? g : 0.0f) : g * (float)real;
                if (det) {
                    ws_g[((size_t)b * (size_t)T + (size_t)s) * SC_PAD * SC_PAD + (size_t)c * SC_PAD + (size_t)c2] = v;
                    continue;
                }
                long wi = clamped ? ri * W + rj : (long)c * W + c2;
                sc_atomic_row(&ar, A_GTRANS, wi, v, !real && !padded && !clamped);
            }
        }
        o->same_addr_lanes += det ? 0 : shared_tile;
        if (ar.err != LAB_OK) break;
    }
    if (ar.err != LAB_OK) {
        st = ar.err;
        goto fail;
    }

    if (det) {
        /* Fixed-order reductions: every sum below has one order whatever the schedule was. */
        size_t nb = (size_t)B * (size_t)T;
        size_t we = (size_t)K * SC_PAD;
        float *tmp = malloc(nb * we * sizeof(float));
        if (!tmp) {
            st = lab_err_set(LAB_ERR_NOMEM, "semicrf: out of memory for the reductions");
            goto fail;
        }
        memcpy(tmp, ws_e, nb * we * sizeof(float));
        sc_tree_reduce(tmp, nb, we); /* duration bias: tree over blocks (b, s) */
        for (int k = 0; k < K; ++k)
            for (int c = 0; c < SC_PAD; ++c)
                memcpy(ar.mem + ar.a[A_GDUR].off + 4 * ((size_t)k * SC_PAD + (size_t)c), &tmp[(size_t)k * SC_PAD + (size_t)c], 4);
        free(tmp);
        sc_tree_reduce(ws_g, nb, SC_PAD * SC_PAD); /* transitions: tree over blocks (b, s) */
        memcpy(ar.mem + ar.a[A_GTRANS].off, ws_g, SC_PAD * SC_PAD * sizeof(float));
        for (int b = 0; b < B; ++b)
            for (int t = 0; t <= T; ++t)
                for (int c = 0; c < SC_PAD; ++c) {
                    /* ends at t: k = 1..K ascending; starts at t: its k-ordered sum */
                    float end = 0.0f, start = 0.0f, pe = 0.0f;
                    for (int k = 1; k <= K && k <= t; ++k)
                        end = end + ws_e[(((size_t)b * T + (size_t)(t - k)) * K + (size_t)(k - 1)) * SC_PAD + (size_t)c];
                    if (t < T)
                        for (int k = 1; k <= K; ++k)
                            start = start + ws_e[(((size_t)b * T + (size_t)t) * K + (size_t)(k - 1)) * SC_PAD + (size_t)c];
                    if (t < T)
                        for (int k = 1; k <= K && k <= t + 1; ++k)
                            pe = pe + ws_e[(((size_t)b * T + (size_t)(t + 1 - k)) * K + (size_t)(k - 1)) * SC_PAD + (size_t)c];
                    float gcv = end - start;
                    memcpy(ar.mem + ar.a[A_GCUM].off + 4 * (((size_t)b * (T + 1) + (size_t)t) * SC_PAD + (size_t)c), &gcv, 4);
                    if (t < T && p->use_proj) {
                        memcpy(ar.mem + ar.a[A_GPS].off + 4 * (((size_t)b * T + (size_t)t) * SC_PAD + (size_t)c), &start, 4);
                        memcpy(ar.mem + ar.a[A_GPE].off + 4 * (((size_t)b * T + (size_t)t) * SC_PAD + (size_t)c), &pe, 4);
                    }
                }
    }

    /* Slice back to C (and round float64 accumulators to float32). */
    size_t ncum = (size_t)B * (size_t)(T + 1) * (size_t)C, npos = (size_t)B * (size_t)T * (size_t)C;
    o->g_cum = malloc(ncum * sizeof(float));
    o->g_trans = malloc((size_t)C * (size_t)C * sizeof(float));
    o->g_dur = malloc((size_t)K * (size_t)C * sizeof(float));
    o->g_ps = malloc(npos * sizeof(float));
    o->g_pe = malloc(npos * sizeof(float));
    if (gsz == 8) {
        o->acc_cum = malloc(ncum * sizeof(double));
        o->acc_trans = malloc((size_t)C * (size_t)C * sizeof(double));
        o->acc_dur = malloc((size_t)K * (size_t)C * sizeof(double));
    }
    if (!o->g_cum || !o->g_trans || !o->g_dur || !o->g_ps || !o->g_pe ||
        (gsz == 8 && (!o->acc_cum || !o->acc_trans || !o->acc_dur))) {
        st = lab_err_set(LAB_ERR_NOMEM, "semicrf: out of memory for the outputs");
        goto fail;
    }
    for (size_t r = 0; r < (size_t)B * (size_t)(T + 1); ++r)
        for (int c = 0; c < C; ++c) {
            double v = sc_get(&ar, A_GCUM, r * (size_t)W + (size_t)c);
            o->g_cum[r * (size_t)C + (size_t)c] = (float)v;
            if (o->acc_cum) o->acc_cum[r * (size_t)C + (size_t)c] = v;
        }
    for (int i = 0; i < C; ++i)
        for (int j = 0; j < C; ++j) {
            double v = sc_get(&ar, A_GTRANS, (size_t)i * (size_t)W + (size_t)j);
            o->g_trans[(size_t)i * C + (size_t)j] = (float)v;
            if (o->acc_trans) o->acc_trans[(size_t)i * C + (size_t)j] = v;
        }
    for (int k = 0; k < K; ++k)
        for (int c = 0; c < C; ++c) {
            double v = sc_get(&ar, A_GDUR, (size_t)k * (size_t)W + (size_t)c);
            o->g_dur[(size_t)k * C + (size_t)c] = (float)v;
            if (o->acc_dur) o->acc_dur[(size_t)k * C + (size_t)c] = v;
        }
    for (size_t r = 0; r < (size_t)B * (size_t)T; ++r)
        for (int c = 0; c < C; ++c) {
            o->g_ps[r * (size_t)C + (size_t)c] = p->use_proj ? (float)sc_get(&ar, A_GPS, r * (size_t)W + (size_t)c) : 0.0f;
            o->g_pe[r * (size_t)C + (size_t)c] = p->use_proj ? (float)sc_get(&ar, A_GPE, r * (size_t)W + (size_t)c) : 0.0f;
        }
    free(fb);
    free(order);
    free(ws_e);
    free(ws_g);
    sc_arena_release(&ar);
    return LAB_OK;
fail:
    free(fb);
    free(order);
    free(ws_e);
    free(ws_g);
    sc_arena_release(&ar);
    lab_semicrf_out_free(o);
    return st;
}

/* ---------------------------------------------------------------------------------------------- */
/* Training                                                                                        */

void lab_semicrf_gold_free(lab_semicrf_gold *g)
{
    free(g->cnt_cum);
    free(g->cnt_trans);
    free(g->cnt_dur);
    free(g->cnt_ps);
    free(g->cnt_pe);
    memset(g, 0, sizeof *g);
}

lab_status lab_semicrf_gold_make(const lab_semicrf_problem *p, uint64_t seed, lab_semicrf_gold *g)
{
    memset(g, 0, sizeof *g);
    lab_status st = sc_check_len(p);
    if (st != LAB_OK) return st;
    int B = p->B, T = p->T, K = p->K, C = p->C;
    g->cnt_cum = calloc((size_t)B * (size_t)(T + 1) * (size_t)C, sizeof(double));
    g->cnt_trans = calloc((size_t)C * (size_t)C, sizeof(double));
    g->cnt_dur = calloc((size_t)K * (size_t)C, sizeof(double));
    g->cnt_ps = calloc((size_t)B * (size_t)T * (size_t)C, sizeof(double));
    g->cnt_pe = calloc((size_t)B * (size_t)T * (size_t)C, sizeof(double));
    if (!g->cnt_cum || !g->cnt_trans || !g->cnt_dur || !g->cnt_ps || !g->cnt_pe) {
        lab_semicrf_gold_free(g);
        return lab_err_set(LAB_ERR_NOMEM, "semicrf: out of memory for the gold segmentation");
    }
    uint64_t w = 0;
    int dmax = K < 8 ? K : 8;
    for (int b = 0; b < B; ++b) {
        int s = 0, prev = -1;
        while (s < p->len[b]) {
            int k = 1 + (int)(lab_rng_u32(seed, LAB_SEMICRF_STREAM_SCHED ^ 0x9000u, w++) % (uint32_t)dmax);
            if (s + k > p->len[b]) k = p->len[b] - s;
            int c = (int)(lab_rng_u32(seed, LAB_SEMICRF_STREAM_SCHED ^ 0x9000u, w++) % (uint32_t)C);
            g->cnt_cum[((size_t)b * (size_t)(T + 1) + (size_t)(s + k)) * (size_t)C + (size_t)c] += 1.0;
            g->cnt_cum[((size_t)b * (size_t)(T + 1) + (size_t)s) * (size_t)C + (size_t)c] -= 1.0;
            g->cnt_dur[(size_t)(k - 1) * (size_t)C + (size_t)c] += 1.0;
            g->cnt_ps[((size_t)b * (size_t)T + (size_t)s) * (size_t)C + (size_t)c] += 1.0;
            g->cnt_pe[((size_t)b * (size_t)T + (size_t)(s + k - 1)) * (size_t)C + (size_t)c] += 1.0;
            if (prev >= 0) g->cnt_trans[(size_t)prev * (size_t)C + (size_t)c] += 1.0;
            prev = c;
            s += k;
        }
    }
    return LAB_OK;
}

lab_status lab_semicrf_sgd_step(lab_semicrf_problem *p, const lab_semicrf_gold *g, const lab_semicrf_config *cfg,
                                float lr, double *nll)
{
    lab_semicrf_out o;
    lab_status st = lab_semicrf_emulate(p, cfg, &o);
    if (st != LAB_OK) return st;
    int C = p->C, K = p->K;
    double positions = 0.0, zsum = 0.0;
    for (int b = 0; b < p->B; ++b) positions += p->len[b], zsum += (double)o.logZ[b];
    /* gold score in double from the current parameters' counts (trans and dur only move) */
    double gold = 0.0;
    for (size_t i = 0; i < (size_t)C * (size_t)C; ++i) gold += g->cnt_trans[i] * (double)p->trans[i];
    for (size_t i = 0; i < (size_t)K * (size_t)C; ++i) gold += g->cnt_dur[i] * (double)p->dur[i];
    for (size_t i = 0; i < (size_t)p->B * (size_t)(p->T + 1) * (size_t)C; ++i) gold += g->cnt_cum[i] * (double)p->cum[i];
    if (p->use_proj)
        for (size_t i = 0; i < (size_t)p->B * (size_t)p->T * (size_t)C; ++i)
            gold += g->cnt_ps[i] * (double)p->proj_start[i] + g->cnt_pe[i] * (double)p->proj_end[i];
    if (nll) *nll = (zsum - gold) / positions;
    float scale = lr / (float)positions;
    for (size_t i = 0; i < (size_t)C * (size_t)C; ++i)
        p->trans[i] = p->trans[i] - scale * (o.g_trans[i] - (float)g->cnt_trans[i]);
    for (size_t i = 0; i < (size_t)K * (size_t)C; ++i)
        p->dur[i] = p->dur[i] - scale * (o.g_dur[i] - (float)g->cnt_dur[i]);
    lab_semicrf_out_free(&o);
    return LAB_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* Comparisons and goldens                                                                         */

int lab_semicrf_T_of_seed(uint64_t seed)
{
    static const int Ts[3] = {100, 200, 500};
    return Ts[seed % 3];
}

lab_status lab_semicrf_case_problem(lab_semicrf_problem *p, uint64_t seed)
{
    lab_status st = lab_semicrf_problem_init(p, 2, lab_semicrf_T_of_seed(seed), LAB_SEMICRF_K_MAX, LAB_SEMICRF_C, 1);
    if (st != LAB_OK) return st;
    lab_semicrf_problem_fill(p, seed);
    return LAB_OK;
}

/* max|a - r| / max|r| over n values; NaN if any value is non-finite; counts non-finite a into *nf. */
static double sc_norm_err(const float *a, const double *r, size_t n, size_t *nf)
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

static double sc_max_nan(double a, double b)
{
    if (isnan(a) || isnan(b)) return NAN;
    return a > b ? a : b;
}

void lab_semicrf_compare(const lab_semicrf_problem *p, const lab_semicrf_out *o, const lab_semicrf_ref *r,
                         lab_semicrf_err *e)
{
    memset(e, 0, sizeof *e);
    size_t C = (size_t)p->C, ncum = (size_t)p->B * (size_t)(p->T + 1) * C, npos = (size_t)p->B * (size_t)p->T * C;
    e->trans = sc_norm_err(o->g_trans, r->g_trans, C * C, &e->nonfinite);
    e->dur = sc_norm_err(o->g_dur, r->g_dur, (size_t)p->K * C, &e->nonfinite);
    e->cum = sc_norm_err(o->g_cum, r->g_cum, ncum, &e->nonfinite);
    e->ps = p->use_proj ? sc_norm_err(o->g_ps, r->g_ps, npos, &e->nonfinite) : 0.0;
    e->pe = p->use_proj ? sc_norm_err(o->g_pe, r->g_pe, npos, &e->nonfinite) : 0.0;
    e->n = C * C + (size_t)p->K * C + ncum + (p->use_proj ? 2 * npos : 0);
    e->max = sc_max_nan(sc_max_nan(sc_max_nan(e->trans, e->dur), sc_max_nan(e->cum, e->ps)), e->pe);
    e->logz = 0.0;
    for (int b = 0; b < p->B; ++b) {
        double d = fabs((double)o->logZ[b] - r->logZ[b]) / fabs(r->logZ[b]);
        e->logz = sc_max_nan(e->logz, isfinite(o->logZ[b]) ? d : NAN);
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
    d->max = sc_max_nan(sc_max_nan(sc_max_nan(d->trans, d->dur), sc_max_nan(d->cum, d->ps)), d->pe);
    if (a->acc_trans && b->acc_trans && a->acc_dur && b->acc_dur && a->acc_cum && b->acc_cum)
        d->acc_max = sc_max_nan(sc_max_nan(sc_diff_d(a->acc_trans, b->acc_trans, C * C),
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
        double e = sc_max_nan(sc_norm_err(o->g_trans, tt.data, C * C, &nf), sc_norm_err(o->g_dur, td.data, (size_t)p->K * C, &nf));
        const double *z = tz.data;
        for (int b = 0; b < p->B; ++b) e = sc_max_nan(e, fabs((double)o->logZ[b] - z[b]) / fabs(z[b]));
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
