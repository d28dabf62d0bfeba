/* lab_semicrf_ref (CUDA): the semi-CRF's float64 reference on the device, the CPU reference's loops (lab_semicrf_ref.c, and 0008's convention) one block per sequence, apart from the kernels under test. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lab_cuda.h"
#include "lab_devmem.h"
#include "lab_semicrf.h"

#define SR_THREADS 64 /* >= C: thread d owns class d */

typedef struct {
    const float *cum, *trans, *dur, *ps, *pe;
    const int *len;
    int T, K, C, use_proj, uniform_start;
    double *alpha, *ain, *beta, *bout;      /* [B][T+1][C] work */
    double *logZ;                           /* [B] */
    double *g_cum, *abs_cum;                /* [B][T+1][C] */
    double *g_ps, *g_pe;                    /* [B][T][C] */
    double *g_trans, *g_dur;                /* per sequence: [B][C][C], [B][K][C] (the host adds them in b order) */
} sr_args;

/* lab_semicrf_seg_d, the same operations in the same order. */
__device__ static double sr_seg(const sr_args &a, int b, int s, int k, int c)
{
    size_t C = (size_t)a.C, T = (size_t)a.T;
    const float *cb = a.cum + (size_t)b * (T + 1) * C;
    double v = (double)cb[(size_t)(s + k) * C + (size_t)c] - (double)cb[(size_t)s * C + (size_t)c] +
               (double)a.dur[(size_t)(k - 1) * C + (size_t)c];
    if (a.use_proj)
        v += (double)a.ps[((size_t)b * T + (size_t)s) * C + (size_t)c] +
             (double)a.pe[((size_t)b * T + (size_t)(s + k - 1)) * C + (size_t)c];
    return v;
}

/* lab_semicrf_lse_d over n terms term(i) (max, then the sum of exp(x - max), then max + log). */
template <typename F> __device__ static double sr_lse(int n, F term)
{
    double m = -INFINITY;
    for (int i = 0; i < n; ++i) m = fmax(m, term(i));
    if (m == -INFINITY) return -INFINITY;
    double s = 0.0;
    for (int i = 0; i < n; ++i) s += exp(term(i) - m);
    return m + log(s);
}

__global__ void __launch_bounds__(SR_THREADS) sr_reference(sr_args a)
{
    const int b = blockIdx.x, d = threadIdx.x, C = a.C, K = a.K, L = a.len[b];
    const size_t nrow = (size_t)(a.T + 1) * (size_t)C, npos = (size_t)a.T * (size_t)C;
    double *al = a.alpha + b * nrow, *ai = a.ain + b * nrow, *be = a.beta + b * nrow, *bo = a.bout + b * nrow;
    const bool own = d < C;
    /* forward: alpha[t][d] over the segments ending at t; ain[t][d] the transitions into d (at t = 0 none, or from
     * the uniform start alpha[0] = 0) */
    if (own) al[d] = 0.0;
    __syncthreads();
    for (int t = 0; t <= L; ++t) {
        if (t > 0 && own) {
            int nk = t < K ? t : K;
            al[(size_t)t * C + d] = sr_lse(nk, [&](int i) { return sr_seg(a, b, t - (i + 1), i + 1, d) + ai[(size_t)(t - (i + 1)) * C + d]; });
        }
        __syncthreads();
        if (own) {
            if (t == 0 && !a.uniform_start) ai[d] = 0.0;
            else ai[(size_t)t * C + d] = sr_lse(C, [&](int s) { return al[(size_t)t * C + s] + (double)a.trans[(size_t)s * C + d]; });
        }
        __syncthreads();
    }
    const double z = sr_lse(C, [&](int c) { return al[(size_t)L * C + c]; });
    if (d == 0) a.logZ[b] = z;
    /* backward: bout[t][d] the segments of class d starting at t; beta[t][s] the continuations after s ends at t */
    if (own) be[(size_t)L * C + d] = 0.0;
    __syncthreads();
    for (int t = L - 1; t >= 0; --t) {
        if (own) {
            int nk = L - t < K ? L - t : K;
            bo[(size_t)t * C + d] = sr_lse(nk, [&](int i) { return sr_seg(a, b, t, i + 1, d) + be[(size_t)(t + i + 1) * C + d]; });
        }
        __syncthreads();
        if (own) be[(size_t)t * C + d] = sr_lse(C, [&](int c2) { return (double)a.trans[(size_t)d * C + c2] + bo[(size_t)t * C + c2]; });
        __syncthreads();
    }
    /* segment marginals, summed per class d by its own thread in the CPU's order (t, then k) */
    if (own) {
        double *gc = a.g_cum + b * nrow, *ac = a.abs_cum + b * nrow, *gps = a.g_ps + b * npos, *gpe = a.g_pe + b * npos;
        double *gd = a.g_dur + (size_t)b * (size_t)K * C;
        for (int t = 0; t < L; ++t) {
            int nk = L - t < K ? L - t : K;
            double ain_t = ai[(size_t)t * C + d], sum = 0.0;
            for (int k = 1; k <= nk; ++k) {
                double e = exp(ain_t + sr_seg(a, b, t, k, d) + be[(size_t)(t + k) * C + d] - z);
                gc[(size_t)(t + k) * C + d] += e;
                ac[(size_t)(t + k) * C + d] += e;
                gd[(size_t)(k - 1) * C + d] += e;
                gpe[(size_t)(t + k - 1) * C + d] += e;
                sum += e;
            }
            gc[(size_t)t * C + d] -= sum;
            ac[(size_t)t * C + d] += sum;
            gps[(size_t)t * C + d] += sum;
        }
    }
    /* transition marginals: pair (c, c2) by one thread, t ascending (from 1 without a start transition) */
    double *gt = a.g_trans + (size_t)b * C * C;
    for (int q = d; q < C * C; q += blockDim.x) {
        int c = q / C, c2 = q % C;
        double acc = 0.0;
        for (int t = a.uniform_start ? 0 : 1; t < L; ++t)
            acc += exp(al[(size_t)t * C + c] + (double)a.trans[(size_t)c * C + c2] + bo[(size_t)t * C + c2] - z);
        gt[q] = acc;
    }
}

extern "C" lab_status lab_semicrf_reference_cuda(const lab_semicrf_problem *p, lab_semicrf_ref_convention conv, lab_semicrf_ref *r)
{
    memset(r, 0, sizeof *r);
    lab_status st = lab_semicrf_problem_check(p);
    if (st != LAB_OK) return st;
    if (p->C > SR_THREADS) return lab_err_set(LAB_ERR_ARG, "semicrf: device reference: C = %d above %d", p->C, SR_THREADS);
    int B = p->B, T = p->T, K = p->K, C = p->C;
    size_t nrow = (size_t)(T + 1) * C, npos = (size_t)T * C, cc = (size_t)C * C, kc = (size_t)K * C;
    r->logZ = (double *)calloc((size_t)B, sizeof(double));
    r->g_cum = (double *)calloc((size_t)B * nrow, sizeof(double));
    r->abs_cum = conv == LAB_SEMICRF_REF_FIRST_FREE ? (double *)calloc((size_t)B * nrow, sizeof(double)) : NULL;
    r->g_trans = (double *)calloc(cc, sizeof(double));
    r->g_dur = (double *)calloc(kc, sizeof(double));
    r->g_ps = (double *)calloc((size_t)B * npos, sizeof(double));
    r->g_pe = (double *)calloc((size_t)B * npos, sizeof(double));
    double *gt = (double *)malloc((size_t)B * (cc + kc) * sizeof(double)), *gd = gt ? gt + (size_t)B * cc : NULL;
    if (!r->logZ || !r->g_cum || (conv == LAB_SEMICRF_REF_FIRST_FREE && !r->abs_cum) || !r->g_trans || !r->g_dur ||
        !r->g_ps || !r->g_pe || !gt) {
        free(gt);
        lab_semicrf_ref_free(r);
        return lab_err_set(LAB_ERR_NOMEM, "semicrf: out of memory for the device reference");
    }
    /* one device allocation: inputs (floats, lengths) then outputs and work (doubles) */
    size_t f_in = (size_t)B * nrow + cc + kc + (p->use_proj ? 2 * (size_t)B * npos : 0);
    size_t d_out = (size_t)B * (1 + 7 * nrow + 2 * npos + cc + kc); /* logZ, 4 work + g_cum + abs_cum (+1 spare), ps, pe */
    size_t off_d = ((f_in * sizeof(float) + (size_t)B * sizeof(int)) + 255) & ~(size_t)255;
    char *dev = NULL;
    cudaStream_t s = NULL;
    sr_args a;
    LAB_CUDA_CHECK_GOTO(st, cudaStreamCreate(&s), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc_async((void **)&dev, off_d + d_out * sizeof(double), s), done);
    {
        float *f = (float *)dev;
        const float *src[5] = {p->cum, p->trans, p->dur, p->proj_start, p->proj_end};
        size_t len[5] = {(size_t)B * nrow, cc, kc, p->use_proj ? (size_t)B * npos : 0, p->use_proj ? (size_t)B * npos : 0};
        const float *at[5];
        for (int i = 0; i < 5; ++i) {
            at[i] = len[i] ? f : NULL;
            if (len[i]) LAB_CUDA_CHECK_GOTO(st, cudaMemcpyAsync(f, src[i], len[i] * sizeof(float), cudaMemcpyHostToDevice, s), done);
            f += len[i];
        }
        int *ln = (int *)f;
        LAB_CUDA_CHECK_GOTO(st, cudaMemcpyAsync(ln, p->len, (size_t)B * sizeof(int), cudaMemcpyHostToDevice, s), done);
        double *o = (double *)(dev + off_d);
        LAB_CUDA_CHECK_GOTO(st, cudaMemsetAsync(o, 0, d_out * sizeof(double), s), done);
        a = (sr_args){at[0], at[1], at[2], at[3], at[4], ln, T, K, C, p->use_proj, conv == LAB_SEMICRF_REF_UNIFORM_START,
                      o, o + B * nrow, o + 2 * B * nrow, o + 3 * B * nrow, o + 4 * B * nrow, o + 4 * B * nrow + B,
                      o + 5 * B * nrow + B, o + 6 * B * nrow + B, o + 6 * B * nrow + B + B * npos,
                      o + 6 * B * nrow + B + 2 * B * npos, o + 6 * B * nrow + B + 2 * B * npos + B * cc};
    }
    sr_reference<<<B, SR_THREADS, 0, s>>>(a);
    LAB_CUDA_CHECK_GOTO(st, cudaGetLastError(), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpyAsync(r->logZ, a.logZ, (size_t)B * sizeof(double), cudaMemcpyDeviceToHost, s), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpyAsync(r->g_cum, a.g_cum, (size_t)B * nrow * sizeof(double), cudaMemcpyDeviceToHost, s), done);
    if (r->abs_cum)
        LAB_CUDA_CHECK_GOTO(st, cudaMemcpyAsync(r->abs_cum, a.abs_cum, (size_t)B * nrow * sizeof(double), cudaMemcpyDeviceToHost, s), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpyAsync(r->g_ps, a.g_ps, (size_t)B * npos * sizeof(double), cudaMemcpyDeviceToHost, s), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpyAsync(r->g_pe, a.g_pe, (size_t)B * npos * sizeof(double), cudaMemcpyDeviceToHost, s), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpyAsync(gt, a.g_trans, (size_t)B * (cc + kc) * sizeof(double), cudaMemcpyDeviceToHost, s), done);
    LAB_CUDA_CHECK_GOTO(st, cudaStreamSynchronize(s), done);
    /* the batch sums in b order */
    for (int b = 0; b < B; ++b) {
        for (size_t i = 0; i < cc; ++i) r->g_trans[i] += gt[(size_t)b * cc + i];
        for (size_t i = 0; i < kc; ++i) r->g_dur[i] += gd[(size_t)b * kc + i];
    }
    if (!p->use_proj) {
        memset(r->g_ps, 0, (size_t)B * npos * sizeof(double));
        memset(r->g_pe, 0, (size_t)B * npos * sizeof(double));
    }
done:
    {
        void *bufs[] = {dev};
        st = lab_cuda_stream_release(st, s, bufs, 1);
    }
    free(gt);
    if (st != LAB_OK) lab_semicrf_ref_free(r);
    return st;
}

/* this module in the load check that runs before any case (lab_cuda.h) */
LAB_CUDA_MODULE(sr_reference);
