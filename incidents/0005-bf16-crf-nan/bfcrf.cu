/* bfcrf (CUDA): incident 0005's CRF forward on the GPU, in __nv_bfloat16 (the bug, checked bit for bit against the CPU emulation) and float32 (the fix), its run functions and benchmark. */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_cuda.h" /* first: it brings lab_err.h in with C linkage (bfcrf.h includes it outside extern "C") */
#include "bfcrf.h"
#include "lab_devmem.h"

extern "C" {
#include "lab_format.h"
#include "lab_rng.h"
}

#define NT BFCRF_TAGS
#define BFCRF_THREADS 64 /* one thread per target tag (33 active), one block per sequence */

/* Launch check: the launch itself (configuration errors) and then the kernel's execution. */
#define BFCRF_LAUNCHED(st, label)                                                                    \
    do {                                                                                           \
        LAB_CUDA_CHECK_GOTO(st, cudaGetLastError(), label);                                        \
        LAB_CUDA_CHECK_GOTO(st, lab_cuda_sync(), label);                                           \
    } while (0)

/* exp and log of a bf16 value, rounded to bf16. EXACT: through double, rounded to float and then to bf16, as the
 * CPU emulation's tables (bfcrf.c) do, so the two agree bit for bit. Otherwise float expf/logf as a framework's bf16
 * kernel computes them (used by the benchmark only). */
template <bool EXACT> __device__ __forceinline__ __nv_bfloat16 bfcrf_bexp(__nv_bfloat16 v)
{
    float f = __bfloat162float(v);
    return __float2bfloat16_rn(EXACT ? (float)exp((double)f) : expf(f));
}
template <bool EXACT> __device__ __forceinline__ __nv_bfloat16 bfcrf_blog(__nv_bfloat16 v)
{
    float f = __bfloat162float(v);
    return __float2bfloat16_rn(EXACT ? (float)log((double)f) : logf(f));
}

/* logsumexp of n bf16 values as bfcrf.c's bfcrf_lse with bf16 rounding: m = max (0 if infinite), the float32 sum of
 * bf16(exp(bf16(x - m))) in index order, rounded, its log rounded, plus m rounded. bf16 + and - are the native
 * __hadd/__hsub (one rounding of the exact result, which for bf16 operands equals the CPU's float32 result rounded
 * to bf16: float32 has 24 >= 2 * 8 + 2 bits, so the double rounding is innocuous). */
template <bool EXACT> __device__ __nv_bfloat16 bfcrf_blse(const __nv_bfloat16 *x, int n)
{
    float m = -INFINITY;
    for (int i = 0; i < n; ++i) {
        float v = __bfloat162float(x[i]);
        m = v > m ? v : m;
    }
    if (isinf(m)) m = 0.0f;
    __nv_bfloat16 mb = __float2bfloat16_rn(m); /* exact: m is a bf16 value or 0 */
    float sum = 0.0f;
    for (int i = 0; i < n; ++i) sum = __fadd_rn(sum, __bfloat162float(bfcrf_bexp<EXACT>(__hsub(x[i], mb))));
    return __hadd(bfcrf_blog<EXACT>(__float2bfloat16_rn(sum)), mb);
}

/* bf16 forward, dense over all 33 sources (forbidden ones -inf, adding exactly 0 as in the CPU's sparse loop).
 * emis [B][T][NT] floats holding bf16 values; alpha [B][T][NT] (may be NULL); logz [B]. */
template <bool EXACT>
__global__ void bfcrf_fwd_bf16(const float *trans, const float *start, const float *end, const float *emis, int len,
                             float *alpha, float *logz)
{
    __shared__ __nv_bfloat16 T[NT * NT], s[NT], nx[NT];
    int b = blockIdx.x, j = threadIdx.x;
    const float *e = emis + (size_t)b * BFCRF_TMAX * NT;
    for (int k = j; k < NT * NT; k += blockDim.x) T[k] = __float2bfloat16_rn(trans[k]);
    if (j < NT) s[j] = __hadd(__float2bfloat16_rn(start[j]), __float2bfloat16_rn(e[j]));
    __syncthreads();
    if (alpha && j < NT) alpha[(size_t)b * BFCRF_TMAX * NT + j] = __bfloat162float(s[j]);
    for (int t = 1; t < len; ++t) {
        if (j < NT) {
            __nv_bfloat16 x[NT], ej = __float2bfloat16_rn(e[(size_t)t * NT + j]);
            for (int i = 0; i < NT; ++i) x[i] = __hadd(__hadd(s[i], T[i * NT + j]), ej);
            nx[j] = bfcrf_blse<EXACT>(x, NT);
        }
        __syncthreads();
        if (j < NT) {
            s[j] = nx[j];
            if (alpha) alpha[((size_t)b * BFCRF_TMAX + t) * NT + j] = __bfloat162float(s[j]);
        }
        __syncthreads();
    }
    if (j == 0) {
        __nv_bfloat16 z[NT];
        for (int i = 0; i < NT; ++i) z[i] = __hadd(s[i], __float2bfloat16_rn(end[i]));
        logz[b] = __bfloat162float(bfcrf_blse<EXACT>(z, NT));
    }
}

/* Elementwise ops for the bit-for-bit check: pairs (add, sub) and every bf16 code (exp, log). */
__global__ void bfcrf_ew_pairs(const float *a, const float *b, size_t n, float *add, float *sub)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __nv_bfloat16 x = __float2bfloat16_rn(a[i]), y = __float2bfloat16_rn(b[i]);
    add[i] = __bfloat162float(__hadd(x, y));
    sub[i] = __bfloat162float(__hsub(x, y));
}

__global__ void bfcrf_ew_codes(float *exp_all, float *log_all)
{
    unsigned c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= 65536u) return;
    __nv_bfloat16 v = __ushort_as_bfloat16((unsigned short)c);
    exp_all[c] = __bfloat162float(bfcrf_bexp<true>(v));
    log_all[c] = __bfloat162float(bfcrf_blog<true>(v));
}

/* float32 forward (the fix): the same recursion without rounding to bf16, expf/logf. */
__device__ float bfcrf_flse(const float *x, int n)
{
    float m = -INFINITY;
    for (int i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
    if (isinf(m)) m = 0.0f;
    float sum = 0.0f;
    for (int i = 0; i < n; ++i) sum = __fadd_rn(sum, expf(__fsub_rn(x[i], m)));
    return __fadd_rn(logf(sum), m);
}

__global__ void bfcrf_fwd_f32(const float *trans, const float *start, const float *end, const float *emis, int len,
                            float *logz)
{
    __shared__ float T[NT * NT], s[NT], nx[NT];
    int b = blockIdx.x, j = threadIdx.x;
    const float *e = emis + (size_t)b * BFCRF_TMAX * NT;
    for (int k = j; k < NT * NT; k += blockDim.x) T[k] = trans[k];
    if (j < NT) s[j] = __fadd_rn(start[j], e[j]);
    __syncthreads();
    for (int t = 1; t < len; ++t) {
        if (j < NT) {
            float x[NT], ej = e[(size_t)t * NT + j];
            for (int i = 0; i < NT; ++i) x[i] = __fadd_rn(__fadd_rn(s[i], T[i * NT + j]), ej);
            nx[j] = bfcrf_flse(x, NT);
        }
        __syncthreads();
        if (j < NT) s[j] = nx[j];
        __syncthreads();
    }
    if (j == 0) {
        float z[NT];
        for (int i = 0; i < NT; ++i) z[i] = __fadd_rn(s[i], end[i]);
        logz[b] = bfcrf_flse(z, NT);
    }
}

/* Device copies of the parameters and emissions. */
typedef struct {
    float *trans, *start, *end, *emis, *alpha, *logz;
} bfcrf_dev;

static lab_status bfcrf_dev_free(bfcrf_dev *d, lab_status st)
{
    float *bufs[] = {d->trans, d->start, d->end, d->emis, d->alpha, d->logz};
    for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; ++k) {
        if (!bufs[k]) continue;
        cudaError_t e = lab_devmem_free(bufs[k]);
        if (e != cudaSuccess && st == LAB_OK) st = lab_cuda_fail(__FILE__, __LINE__, "lab_devmem_free", cudaGetErrorString(e));
    }
    memset(d, 0, sizeof *d);
    return st;
}

static lab_status bfcrf_dev_upload(bfcrf_dev *d, const bfcrf_params *P, const float *emis, int batch, int with_alpha)
{
    lab_status st = LAB_OK;
    size_t eb = (size_t)batch * BFCRF_TMAX * NT * sizeof(float);
    memset(d, 0, sizeof *d);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&d->trans, sizeof P->trans), fail);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&d->start, sizeof P->start), fail);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&d->end, sizeof P->end), fail);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&d->emis, eb), fail);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&d->logz, (size_t)batch * sizeof(float)), fail);
    if (with_alpha) LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&d->alpha, eb), fail);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(d->trans, P->trans, sizeof P->trans, cudaMemcpyHostToDevice), fail);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(d->start, P->start, sizeof P->start, cudaMemcpyHostToDevice), fail);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(d->end, P->end, sizeof P->end, cudaMemcpyHostToDevice), fail);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(d->emis, emis, eb, cudaMemcpyHostToDevice), fail);
    return LAB_OK;
fail:
    return bfcrf_dev_free(d, st);
}

extern "C" lab_status bfcrf_cuda_forward_bf16(const bfcrf_params *P, const float *emis, int batch, float *alpha, float *logz)
{
    if (batch < 1 || batch > 65535) return lab_err_set(LAB_ERR_ARG, "bfcrf_cuda_forward_bf16: batch %d: need 1..65535", batch);
    bfcrf_dev d;
    lab_status st = bfcrf_dev_upload(&d, P, emis, batch, alpha != NULL);
    if (st != LAB_OK) return st;
    size_t eb = (size_t)batch * BFCRF_TMAX * NT * sizeof(float);
    bfcrf_fwd_bf16<true><<<batch, BFCRF_THREADS>>>(d.trans, d.start, d.end, d.emis, BFCRF_TMAX, d.alpha, d.logz);
    BFCRF_LAUNCHED(st, done);
    if (alpha) LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(alpha, d.alpha, eb, cudaMemcpyDeviceToHost), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(logz, d.logz, (size_t)batch * sizeof(float), cudaMemcpyDeviceToHost), done);
done:
    return bfcrf_dev_free(&d, st);
}

extern "C" lab_status bfcrf_cuda_forward_f32(const bfcrf_params *P, const float *emis, int batch, float *logz)
{
    if (batch < 1 || batch > 65535) return lab_err_set(LAB_ERR_ARG, "bfcrf_cuda_forward_f32: batch %d: need 1..65535", batch);
    bfcrf_dev d;
    lab_status st = bfcrf_dev_upload(&d, P, emis, batch, 0);
    if (st != LAB_OK) return st;
    bfcrf_fwd_f32<<<batch, BFCRF_THREADS>>>(d.trans, d.start, d.end, d.emis, BFCRF_TMAX, d.logz);
    BFCRF_LAUNCHED(st, done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(logz, d.logz, (size_t)batch * sizeof(float), cudaMemcpyDeviceToHost), done);
done:
    return bfcrf_dev_free(&d, st);
}

extern "C" lab_status bfcrf_cuda_elementwise(const float *a, const float *b, size_t n, float *add, float *sub,
                                             float *exp_all, float *log_all)
{
    lab_status st = LAB_OK;
    float *da = NULL, *db = NULL, *dadd = NULL, *dsub = NULL, *dexp = NULL, *dlog = NULL;
    size_t nb = n * sizeof(float), cb = 65536 * sizeof(float);
    if (n == 0 || (n + 255) / 256 > 0x7fffffffu) return lab_err_set(LAB_ERR_ARG, "bfcrf_cuda_elementwise: n %zu", n);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&da, nb), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&db, nb), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&dadd, nb), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&dsub, nb), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&dexp, cb), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&dlog, cb), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(da, a, nb, cudaMemcpyHostToDevice), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(db, b, nb, cudaMemcpyHostToDevice), done);
    bfcrf_ew_pairs<<<(unsigned)((n + 255) / 256), 256>>>(da, db, n, dadd, dsub);
    BFCRF_LAUNCHED(st, done);
    bfcrf_ew_codes<<<65536 / 256, 256>>>(dexp, dlog);
    BFCRF_LAUNCHED(st, done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(add, dadd, nb, cudaMemcpyDeviceToHost), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(sub, dsub, nb, cudaMemcpyDeviceToHost), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(exp_all, dexp, cb, cudaMemcpyDeviceToHost), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(log_all, dlog, cb, cudaMemcpyDeviceToHost), done);
done:
    {
        float *bufs[] = {da, db, dadd, dsub, dexp, dlog};
        for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; ++k) {
            if (!bufs[k]) continue;
            cudaError_t e = lab_devmem_free(bufs[k]);
            if (e != cudaSuccess && st == LAB_OK) st = lab_cuda_fail(__FILE__, __LINE__, "lab_devmem_free", cudaGetErrorString(e));
        }
    }
    return st;
}

/* Bit-for-bit comparison, with any NaN equal to any NaN (CUDA's canonical bf16 NaN is 0x7FFF, the lab's keeps
 * the payload). */
static int bfcrf_same(float x, float y) { return (isnan(x) && isnan(y)) || memcmp(&x, &y, sizeof x) == 0; }

/* The elementwise check of a case: BFCRF_EW_PAIRS pairs (a: scores of size about 2000 as bf16, b: emissions and
 * transitions of size about 10, both from the probe stream of seed), and all 65536 codes through exp and log.
 * Returns the number of mismatching results in *mism and of results compared in *total. */
#define BFCRF_EW_PAIRS (1u << 20)
static lab_status bfcrf_ew_check(uint64_t seed, size_t *mism, size_t *total)
{
    size_t n = BFCRF_EW_PAIRS;
    float *buf = (float *)malloc((4 * n + 2 * 65536) * sizeof(float));
    if (!buf) return lab_err_set(LAB_ERR_NOMEM, "bfcrf: out of memory for the elementwise check");
    float *a = buf, *b = a + n, *add = b + n, *sub = add + n, *ex = sub + n, *lg = ex + 65536;
    lab_rng_fill_normal(a, n, seed, BFCRF_STREAM_PROBE, 1u << 24);
    lab_rng_fill_normal(b, n, seed, BFCRF_STREAM_PROBE, 1u << 25);
    for (size_t i = 0; i < n; ++i) {
        a[i] = lab_bf16_round(2000.0f + 500.0f * a[i]);
        b[i] = lab_bf16_round(10.0f * b[i]);
    }
    lab_status st = bfcrf_cuda_elementwise(a, b, n, add, sub, ex, lg);
    size_t m = 0;
    if (st == LAB_OK) {
        for (size_t i = 0; i < n; ++i) {
            m += !bfcrf_same(add[i], lab_bf16_round(a[i] + b[i]));
            m += !bfcrf_same(sub[i], lab_bf16_round(a[i] - b[i]));
        }
        for (uint32_t c = 0; c < 65536; ++c) {
            float v = lab_bf16_to_float((uint16_t)c);
            m += !bfcrf_same(ex[c], bfcrf_bf16_exp(v));
            m += !bfcrf_same(lg[c], bfcrf_bf16_log(v));
        }
    }
    *mism = m;
    *total = 2 * n + 2 * 65536;
    free(buf);
    return st;
}

/* ---------------------------------------------------------------------------------------------- */
/* Run functions: the probe of the case's seed on the GPU                                           */

/* Runs the probe of the seed's group: the GPU's bf16 forward against the CPU emulation (mismatching values of alpha
 * and logZ), and the GPU's forward of precision p (bf16 for the bug, float32 for the fix) against the float64
 * reference. The elementwise check (2^20 pairs and every code through exp and log: a check of the device's bf16
 * arithmetic, not of the seed's probe) runs at the cross-check seeds (lab_case_xcheck). */
static lab_status bfcrf_run_cuda_prec(const lab_case *c, lab_case_result *r, bfcrf_prec p)
{
    const bfcrf_probe_group *g = (const bfcrf_probe_group *)c->group;
    lab_cuda_info info;
    lab_status st = lab_cuda_device_info(0, &info);
    if (st != LAB_OK) return st;
    if (!g || !g->made) return lab_err_set(LAB_ERR_ARG, "crf: CUDA case of seed %llu without its probe group", (unsigned long long)c->seed);
    const int B = BFCRF_PROBE_BATCH;
    const size_t n = (size_t)B * BFCRF_TMAX * NT;
    float *ga = (float *)malloc(n * sizeof(float));
    float gl[BFCRF_PROBE_BATCH], fl[BFCRF_PROBE_BATCH];
    if (!ga) return lab_err_set(LAB_ERR_NOMEM, "crf: out of memory for the CUDA probe");
    if ((st = bfcrf_cuda_forward_bf16(&g->P, g->emis, B, ga, gl)) != LAB_OK) goto done;
    if ((st = bfcrf_cuda_forward_f32(&g->P, g->emis, B, fl)) != LAB_OK) goto done;
    {
        size_t ew_mism = 0, ew_total = 0;
        int ew = lab_case_xcheck(c);
        if (ew && (st = bfcrf_ew_check(c->seed, &ew_mism, &ew_total)) != LAB_OK) goto done;
        size_t mism = 0;
        for (size_t k = 0; k < n; ++k) mism += memcmp(&g->calpha[k], &ga[k], 4) != 0;
        for (int b = 0; b < B; ++b) mism += memcmp(&g->clogz[b], &gl[b], 4) != 0;
        double err = 0.0;
        const float *mine = p == BFCRF_PREC_BF16 ? gl : fl;
        for (int b = 0; b < B; ++b) {
            double e = fabs((double)mine[b] - g->rlogz[b]);
            err = isnan(e) || e > err ? e : err;
        }
        lab_result_metric(r, "probe_logz_err", err);
        lab_result_metric(r, "bf16_mismatch", (double)mism);
        lab_result_metric(r, "bf16_values", (double)(B * (BFCRF_TMAX * NT + 1)));
        if (ew) {
            lab_result_metric(r, "ew_mismatch", (double)ew_mism);
            lab_result_metric(r, "ew_values", (double)ew_total);
        }
        int within = err <= BFCRF_TOL_NEG_LOSS;
        if (ew_mism > 0)
            lab_result_verdict(r, 0, "%zu of %zu bf16 elementwise results (add, sub of 2^20 pairs; exp, log of every "
                               "code) differ between %s and the CPU emulation", ew_mism, ew_total, info.name);
        else if (mism > 0)
            lab_result_verdict(r, 0, "%zu of %d bf16 forward values differ between %s and the CPU emulation; %s logZ "
                               "err %.3g (tol %g)", mism, B * (BFCRF_TMAX * NT + 1), info.name,
                               p == BFCRF_PREC_BF16 ? "bf16" : "f32", err, BFCRF_TOL_NEG_LOSS);
        else
            lab_result_verdict(r, within, "%s logZ err %.3g against float64 (tol %g); bf16 forward (%d values)%s bit for "
                               "bit with the CPU emulation [%s sm_%d%d]", p == BFCRF_PREC_BF16 ? "bf16" : "f32", err,
                               BFCRF_TOL_NEG_LOSS, B * (BFCRF_TMAX * NT + 1), ew ? " and elementwise ops" : "",
                               info.name, info.cc_major, info.cc_minor);
    }
done:
    free(ga);
    return st;
}

/* The variant's run on the GPU (param: the CRF's precision). The runner has checked that a GPU is usable. */
extern "C" lab_status bfcrf_run_cuda(const lab_case *c, lab_case_result *r)
{
    return bfcrf_run_cuda_prec(c, r, (bfcrf_prec)c->variant->param);
}

/* ---------------------------------------------------------------------------------------------- */
/* Benchmark                                                                                       */

#define BFCRF_BENCH_BATCH 4096
#define BFCRF_BENCH_REPS 20

extern "C" lab_status bfcrf_bench(FILE *out)
{
    char why[240];
    lab_status st = lab_cuda_ready(why, sizeof why);
    if (st != LAB_OK) return st; /* LAB_ERR_UNSUPPORTED with the reason set: a skip */
    lab_cuda_info info;
    if ((st = lab_cuda_device_info(0, &info)) != LAB_OK) return st;
    const int B = BFCRF_BENCH_BATCH;
    size_t n = (size_t)B * BFCRF_TMAX * NT;
    bfcrf_params P;
    float *emis = (float *)malloc(n * sizeof(float));
    bfcrf_dev d;
    memset(&d, 0, sizeof d);
    cudaEvent_t e0 = NULL, e1 = NULL;
    float ms_bf = 0, ms_f32 = 0, ms_cp = 0;
    void *cpa = NULL, *cpb = NULL;
    const size_t cpbytes = (size_t)1 << 30;
    if (!emis) return lab_err_set(LAB_ERR_NOMEM, "crf bench: out of memory");
    bfcrf_probe_inputs(1, B, BFCRF_PROBE_SCALE, &P, emis);
    if ((st = bfcrf_dev_upload(&d, &P, emis, B, 0)) != LAB_OK) goto done;
    LAB_CUDA_CHECK_GOTO(st, lab_cuda_event_create(&e0), done);
    LAB_CUDA_CHECK_GOTO(st, lab_cuda_event_create(&e1), done);
    /* warm-up of both kernels, then each timed over BFCRF_BENCH_REPS launches, alternating blocks of reps */
    bfcrf_fwd_bf16<false><<<B, BFCRF_THREADS>>>(d.trans, d.start, d.end, d.emis, BFCRF_TMAX, NULL, d.logz);
    BFCRF_LAUNCHED(st, done);
    bfcrf_fwd_f32<<<B, BFCRF_THREADS>>>(d.trans, d.start, d.end, d.emis, BFCRF_TMAX, d.logz);
    BFCRF_LAUNCHED(st, done);
    LAB_CUDA_CHECK_GOTO(st, cudaEventRecord(e0), done);
    for (int k = 0; k < BFCRF_BENCH_REPS; ++k)
        bfcrf_fwd_bf16<false><<<B, BFCRF_THREADS>>>(d.trans, d.start, d.end, d.emis, BFCRF_TMAX, NULL, d.logz);
    LAB_CUDA_CHECK_GOTO(st, cudaEventRecord(e1), done);
    BFCRF_LAUNCHED(st, done);
    LAB_CUDA_CHECK_GOTO(st, cudaEventElapsedTime(&ms_bf, e0, e1), done);
    LAB_CUDA_CHECK_GOTO(st, cudaEventRecord(e0), done);
    for (int k = 0; k < BFCRF_BENCH_REPS; ++k)
        bfcrf_fwd_f32<<<B, BFCRF_THREADS>>>(d.trans, d.start, d.end, d.emis, BFCRF_TMAX, d.logz);
    LAB_CUDA_CHECK_GOTO(st, cudaEventRecord(e1), done);
    BFCRF_LAUNCHED(st, done);
    LAB_CUDA_CHECK_GOTO(st, cudaEventElapsedTime(&ms_f32, e0, e1), done);
    /* the device ceiling: device-to-device copy bandwidth of 1 GiB */
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc(&cpa, cpbytes), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc(&cpb, cpbytes), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(cpb, cpa, cpbytes, cudaMemcpyDeviceToDevice), done);
    LAB_CUDA_CHECK_GOTO(st, cudaEventRecord(e0), done);
    for (int k = 0; k < 5; ++k) LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(cpb, cpa, cpbytes, cudaMemcpyDeviceToDevice), done);
    LAB_CUDA_CHECK_GOTO(st, cudaEventRecord(e1), done);
    LAB_CUDA_CHECK_GOTO(st, cudaEventSynchronize(e1), done);
    LAB_CUDA_CHECK_GOTO(st, cudaEventElapsedTime(&ms_cp, e0, e1), done);
    fprintf(out, "0005 CRF forward (B=%d T=%d tags=%d, %s): fp32 / bf16 = %.3f (%.3f ms / %.3f ms per launch)\n", B,
            BFCRF_TMAX, NT, info.name, ms_f32 / ms_bf, ms_f32 / BFCRF_BENCH_REPS, ms_bf / BFCRF_BENCH_REPS);
    fprintf(out, "0005 device ceiling: device-to-device copy %.1f GB/s (read + write of 1 GiB, 5 copies)\n",
            2.0 * 5.0 * (double)cpbytes / (ms_cp * 1e-3) / 1e9);
    fprintf(out, "0005 note: the CRF forward is latency-bound (a 128-step recursion per sequence), far from the copy "
                 "ceiling; its input is %.1f MB per launch\n", (double)n * 4.0 / 1e6);
done:
    if (cpa) lab_devmem_free(cpa);
    if (cpb) lab_devmem_free(cpb);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    free(emis);
    return bfcrf_dev_free(&d, st);
}

/* this module in the load check that runs before any case (lab_cuda.h) */
LAB_CUDA_MODULE(bfcrf_ew_pairs);
