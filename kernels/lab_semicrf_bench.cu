/* lab_semicrf_bench (CUDA): the benchmark of the semi-CRF backward's accumulation (float32 and float64 atomics, the deterministic fix and its previous kernels) against the device's copy bandwidth (lab_semicrf_cuda_bench). */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "lab_cuda.h"
#include "lab_semicrf_cuda.h"


/* Device-to-device copy bandwidth (GB/s, read + write counted) over `bytes`, median of 10. */
static lab_status sg_d2d_bandwidth(size_t bytes, double *gbs)
{
    void *a = nullptr, *b = nullptr;
    LAB_CUDA_CHECK(cudaMalloc(&a, bytes));
    cudaError_t e = cudaMalloc(&b, bytes);
    if (e != cudaSuccess) {
        cudaFree(a);
        return lab_cuda_fail(__FILE__, __LINE__, "cudaMalloc", cudaGetErrorString(e));
    }
    cudaEvent_t e0, e1;
    LAB_CUDA_CHECK(lab_cuda_event_create(&e0));
    LAB_CUDA_CHECK(lab_cuda_event_create(&e1));
    std::vector<float> t;
    for (int i = 0; i < 12; ++i) {
        LAB_CUDA_CHECK(cudaEventRecord(e0));
        LAB_CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice));
        LAB_CUDA_CHECK(cudaEventRecord(e1));
        LAB_CUDA_CHECK(cudaEventSynchronize(e1));
        float ms;
        LAB_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (i >= 2) t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    *gbs = 2.0 * (double)bytes / (t[t.size() / 2] * 1e-3) / 1e9;
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);
    return LAB_OK;
}

/* Sorted copy's q-quantile (nearest rank). */
static double sg_quantile(std::vector<double> v, double q)
{
    std::sort(v.begin(), v.end());
    size_t i = (size_t)(q * (double)(v.size() - 1) + 0.5);
    return v[std::min(i, v.size() - 1)];
}

#define SG_BENCH_WARMUP 3
#define SG_BENCH_REPS 21

/* The benchmark: the accumulation stage of the float32-atomic bug, the float64-atomic fix, the production
 * deterministic fix (sg_det_spread, sg_det_finish) and the previous deterministic kernels, on one problem; each
 * prepared once, then SG_BENCH_WARMUP warm-up rounds and
 * SG_BENCH_REPS timed rounds, a round timing every variant once in turn with CUDA events (so drifting clocks hit
 * all alike); per-round ratios give the spread. Prints lines and two `lab-bench-record` lines (replay/report/lab_bench.h):
 * deterministic / f32-atomic (target 1.15) and deterministic / f64-atomic (target 1: faster). The production and
 * the previous deterministic kernels' gradients are compared byte for byte after the rounds: LAB_ERR_MISMATCH if
 * they differ. */
extern "C" lab_status lab_semicrf_cuda_bench(void *fv, int B, int T, int K, int C)
{
    FILE *f = (FILE *)fv;
    lab_semicrf_problem p;
    lab_status st = lab_semicrf_problem_init(&p, B, T, K, C, 1);
    if (st != LAB_OK) return st;
    lab_semicrf_problem_fill(&p, 1);
    lab_cuda_info info;
    if ((st = lab_cuda_device_info(0, &info)) != LAB_OK) {
        lab_semicrf_problem_free(&p);
        return st;
    }
    enum { NV = 4 };
    static const char *const names[NV] = {"f32-atomic (bug)", "f64-atomic (fix)", "deterministic (fix)", "deterministic previous"};
    static const lab_semicrf_accum acc[NV] = {LAB_SEMICRF_ACC_F32_ATOMIC, LAB_SEMICRF_ACC_F64_ATOMIC,
                                              LAB_SEMICRF_ACC_DETERMINISTIC, LAB_SEMICRF_ACC_DETERMINISTIC};
    static const int mode[NV] = {SG_ATOMIC, SG_ATOMIC, SG_DET, SG_DET_PREV};
    const int nv = NV;
    cudaError_t ce = cudaSuccess;
    std::vector<sg_ctx *> x(NV, nullptr);
    std::vector<std::vector<double>> t(NV);
    std::vector<double> fb;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    for (int i = 0; i < nv && st == LAB_OK; ++i) {
        lab_semicrf_config cfg = {LAB_SEMICRF_LAYOUT_PADDED, acc[i], LAB_SEMICRF_GUARDS_ALL, 1, 0};
        x[i] = new sg_ctx();
        const lab_semicrf_problem *pp = &p;
        st = lab_semicrf_cu_prepare(&pp, &cfg, 1, mode[i], *x[i]);
    }
    if (st == LAB_OK && (ce = lab_cuda_event_create(&e0)) == cudaSuccess) ce = lab_cuda_event_create(&e1);
    if (st == LAB_OK && ce != cudaSuccess) st = lab_cuda_fail(__FILE__, __LINE__, "cudaEventCreate", cudaGetErrorString(ce));
    for (int r = 0; r < SG_BENCH_WARMUP + SG_BENCH_REPS && st == LAB_OK; ++r) {
        for (int i = -1; i < nv && st == LAB_OK; ++i) {
            float ms = 0.0f;
            if ((ce = cudaEventRecord(e0)) != cudaSuccess) break;
            st = i < 0 ? lab_semicrf_cu_fwd_bwd(*x[0]) : lab_semicrf_cu_accumulate(*x[i]); /* i = -1: the shared forward + beta */
            if (st != LAB_OK) break;
            if ((ce = cudaEventRecord(e1)) != cudaSuccess || (ce = cudaEventSynchronize(e1)) != cudaSuccess ||
                (ce = cudaEventElapsedTime(&ms, e0, e1)) != cudaSuccess)
                break;
            if (r >= SG_BENCH_WARMUP) (i < 0 ? fb : t[i]).push_back(ms);
        }
        if (st == LAB_OK && ce != cudaSuccess) st = lab_cuda_fail(__FILE__, __LINE__, "cudaEvent*", cudaGetErrorString(ce));
    }
    /* the production kernels' gradients against the previous kernels', every byte (both wrote them last round) */
    size_t differ = 0;
    if (st == LAB_OK && (st = lab_semicrf_cu_download(*x[2])) == LAB_OK && (st = lab_semicrf_cu_download(*x[3])) == LAB_OK)
        for (size_t i = x[2]->grad_off; i < x[2]->back.size() && i < x[3]->back.size(); ++i) differ += x[2]->back[i] != x[3]->back[i];
    double gbs = 0.0;
    if (st == LAB_OK) st = sg_d2d_bandwidth((size_t)1 << 30, &gbs);
    if (st == LAB_OK) {
        int maxlen = 0;
        long positions = 0;
        for (int b = 0; b < B; ++b) maxlen = std::max(maxlen, p.len[b]), positions += p.len[b];
        double med[NV];
        for (int i = 0; i < nv; ++i) med[i] = sg_quantile(t[i], 0.5);
        double mfb = sg_quantile(fb, 0.5);
        fprintf(f, "device: %s sm_%d%d, %d SMs; B=%d T=%d K=%d C=%d (C_PAD=%d), %ld positions (lengths T/2..T), "
                   "median of %d rounds after %d warm-up rounds\n",
                info.name, info.cc_major, info.cc_minor, info.multiprocessors, B, T, K, C, SG_PAD, positions, SG_BENCH_REPS,
                SG_BENCH_WARMUP);
        for (int i = 0; i < nv; ++i)
            fprintf(f, "backward accumulation %-22s %.4f ms (min %.4f, max %.4f)\n", names[i], med[i], sg_quantile(t[i], 0),
                    sg_quantile(t[i], 1));
        fprintf(f, "forward+beta (shared by all) %.4f ms\n", mfb);
        /* Bytes the production deterministic stage must move at least: the inputs it reads (cum, ps, pe, the
         * four [B][T+1][C_PAD] passes) and the gradients it writes (g_cum, g_ps, g_pe padded). */
        double in_bytes = 4.0 * ((double)B * (T + 1) * C + 2.0 * B * T * C + 4.0 * B * (T + 1) * SG_PAD);
        double out_bytes = 4.0 * 3.0 * B * (T + 1) * SG_PAD;
        double floor_ms = (in_bytes + out_bytes) / (gbs * 1e9) * 1e3;
        for (int base = 0; base < 2; ++base) {
            std::vector<double> r;
            for (size_t k = 0; k < t[2].size(); ++k) r.push_back(t[2][k] / t[base][k]);
            double ratio = sg_quantile(r, 0.5), lo = sg_quantile(r, 0.1), hi = sg_quantile(r, 0.9);
            double target = base == 0 ? 1.15 : 1.0;
            fprintf(f, "ratio deterministic / %s = %.3f (per-round p10..p90 %.3f..%.3f; target <= %.2f: %s)\n", names[base],
                    ratio, lo, hi, target, ratio <= target ? "met" : "NOT met");
            fprintf(f, "lab-bench-record {\"name\":\"backward accumulation B=%d T=%d K=%d C=%d\",\"fix\":\"deterministic\","
                       "\"baseline\":\"%s\",\"device\":\"%s\",\"fix_ms\":%.6g,\"baseline_ms\":%.6g,\"ratio\":%.6g,\"ratio_lo\":%.6g,\"ratio_hi\":%.6g,"
                       "\"reps\":%d,\"warmup\":%d,\"target\":%.6g,\"ceiling_gbs\":%.6g,\"floor_ms\":%.6g,\"bytes\":%.0f}\n",
                    B, T, K, C, base == 0 ? "f32-atomic" : "f64-atomic", info.name, med[2], med[base], ratio, lo, hi, SG_BENCH_REPS,
                    SG_BENCH_WARMUP, target, gbs, floor_ms, in_bytes + out_bytes);
        }
        fprintf(f, "deterministic previous / now = %.2f; gradients of the two: %s (%zu of %zu output bytes differ)\n",
                med[3] / med[2], differ ? "DIFFERENT BITS" : "the same bits", differ, x[2]->back.size() - x[2]->grad_off);
        fprintf(f, "whole backward (forward+beta included): deterministic / f32-atomic = %.3f, / f64-atomic = %.3f\n",
                (med[2] + mfb) / (med[0] + mfb), (med[2] + mfb) / (med[1] + mfb));
        fprintf(f, "device ceiling: D2D cudaMemcpy %.0f GB/s (1 GiB, read+write); the deterministic stage moves >= %.1f MB: "
                   ">= %.4f ms at that bandwidth\n", gbs, (in_bytes + out_bytes) / 1e6, floor_ms);
        if (differ)
            st = lab_err_set(LAB_ERR_MISMATCH, "semicrf bench B=%d T=%d K=%d C=%d: the deterministic kernels' gradients differ from "
                             "the previous kernels' in %zu bytes", B, T, K, C, differ);
    }
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    for (sg_ctx *c : x) delete c;
    lab_semicrf_problem_free(&p);
    return st;
}
