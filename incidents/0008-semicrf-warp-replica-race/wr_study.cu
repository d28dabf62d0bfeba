/* wr_study: incident 0008's study on the GPU (`lab bench --study 0008`, and its record configurations as the bench): how often the race fires per configuration of the backward, and what each fix and historical change costs against the bug. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_cuda.h"
#include "wr_cuda.h"

/* Max over the gradient tensors of max|a - b| / max|b| (NaN when a has a non-finite value); *nf counts them. */
static double wr_rel_diff(const lab_semicrf_problem *p, const wr_out *a, const wr_out *b, size_t *nf)
{
    const float *x[5] = {a->g_trans, a->g_dur, a->g_cum, a->g_ps, a->g_pe}, *y[5] = {b->g_trans, b->g_dur, b->g_cum, b->g_ps, b->g_pe};
    size_t C = (size_t)p->C, n[5] = {C * C, (size_t)p->K * C, (size_t)p->B * (p->T + 1) * C, (size_t)p->B * p->T * C,
                                     (size_t)p->B * p->T * C};
    double worst = 0.0;
    int bad = 0;
    for (int t = 0; t < 5; ++t) {
        double m = 0.0, s = 0.0;
        for (size_t i = 0; i < n[t]; ++i) {
            if (!isfinite(x[t][i])) {
                ++*nf;
                bad = 1;
                continue;
            }
            double dd = fabs((double)x[t][i] - (double)y[t][i]);
            m = dd > m ? dd : m;
            s = fabs((double)y[t][i]) > s ? fabs((double)y[t][i]) : s;
        }
        double r = s > 0 ? m / s : m;
        worst = r > worst ? r : worst;
    }
    return bad ? NAN : worst;
}

/* Runs of each configuration in the bench (the study: 16). */
#define WR_BENCH_RUNS 3

/* The study's rows the cost records use (pairs below): the bench runs these only. */
static int wr_study_recorded(int row) { return row == 1 || row == 2 || row == 4 || (row >= 6 && row <= 9); }

struct wr_study_row {
    const char *name;
    wr_cfg cfg;
    int minb;
};

extern "C" lab_status wr_cuda_study(FILE *out, int full)
{
    lab_cuda_info info;
    lab_status st = lab_cuda_device_info(0, &info);
    if (st != LAB_OK) return st;
    /* the training shape of the write-ups: batch 32, T = 500, K = 30, C = 39 (lengths T/2..T, the first T) */
    /* full: every configuration, 16 runs each (about 2 minutes on an H100); else the bench: only the configurations
     * of the cost records below, WR_BENCH_RUNS runs each */
    const int B = 32, T = 500, K = LAB_SEMICRF_K_MAX, C = LAB_SEMICRF_C, RUNS = full ? 16 : WR_BENCH_RUNS;
    lab_semicrf_problem p;
    if ((st = lab_semicrf_problem_init(&p, B, T, K, C, 1)) != LAB_OK) return st;
    lab_semicrf_problem_fill(&p, 1);
    /* the forward runs on the GPU (wr_dev_init); the host needs only its shapes */
    wr_fwd f;
    memset(&f, 0, sizeof f);
    f.B = B, f.T = T, f.K = K, f.C = C, f.I = wr_ckpt_interval(T, K), f.NCK = wr_num_ckpts(T, K), f.SEG = f.I + K;
    double z = 0.0, tol = NAN;
    static const wr_study_row rows[] = {
        {"1 warp (no replication)", {1, 0, 0, WR_INDEX_RAW, 0, 0}, 1},
        {"2 warps (upstream's fix)", {2, 0, 0, WR_INDEX_RAW, 0, 0}, 1},
        {"4 warps (the bug)", {4, 1, 0, WR_INDEX_RAW, 0, 0}, 1},
        {"8 warps", {8, 1, 0, WR_INDEX_RAW, 0, 0}, 1},
        {"4 warps + barrier (fix)", {4, 1, 1, WR_INDEX_RAW, 0, 0}, 1},
        {"8 warps + barrier", {8, 1, 1, WR_INDEX_RAW, 0, 0}, 1},
        {"4 warps, owner loads (fix)", {4, 0, 0, WR_INDEX_RAW, 0, 0}, 1},
        {"4 warps, clamp commit", {4, 1, 0, WR_INDEX_CLAMP, 0, 0}, 1},
        {"4 warps, pad + slice", {4, 1, 0, WR_INDEX_PAD, 0, 0}, 1},
        {"4 warps, float64", {4, 1, 0, WR_INDEX_RAW, 1, 0}, 1},
        {"4 warps, smem buffers", {4, 1, 0, WR_INDEX_RAW, 0, 1}, 1},
        {"2 warps, smem buffers", {2, 0, 0, WR_INDEX_RAW, 0, 1}, 1},
        {"4 warps + barrier, smem", {4, 1, 1, WR_INDEX_RAW, 0, 1}, 1},
        {"2 warps, 32 registers", {2, 0, 0, WR_INDEX_RAW, 0, 0}, 32},
        {"4 warps, 32 registers", {4, 1, 0, WR_INDEX_RAW, 0, 0}, 16},
        {"4 warps + barrier, 32 regs", {4, 1, 1, WR_INDEX_RAW, 0, 0}, 16},
    };
    const int NROWS = (int)(sizeof rows / sizeof rows[0]);
    double med[sizeof rows / sizeof rows[0]];
    wr_out *ref = (wr_out *)calloc(1, sizeof *ref), *outs = (wr_out *)calloc((size_t)RUNS, sizeof *outs);
    if (!ref || !outs) st = lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": study: out of memory");
    /* the race-free reference of the study: the barrier fix at 4 warps, one run */
    wr_cfg fixc = {4, 1, 1, WR_INDEX_RAW, 0, 0};
    const lab_semicrf_problem *pp = &p;
    if (st == LAB_OK) st = wr_run_kernel(&pp, &f, 1, &fixc, 1, 1, ref, NULL);
    if (st == LAB_OK) {
        for (int b = 0; b < B; ++b) z = fabs((double)ref->logZ[b]) > z ? fabs((double)ref->logZ[b]) : z;
        tol = WR_TOL_ULPS(K) / 16777216.0 * z;
    }
    fprintf(out, "0008 %s on %s: B=%d T=%d K=%d C=%d, %d runs per configuration; 'wrong': max|g - g_fix| / max|g_fix| "
                 "above %.3g ((K + 4) x 2^-24 x max|log Z| = %.1f) against one run of the barrier fix\n",
            full ? "study" : "bench (the record configurations; `lab bench --study 0008`: all of them, 16 runs)", info.name, B, T,
            K, C, RUNS, tol, z);
    fprintf(out, "%-28s %6s %6s %6s %8s %11s %10s %9s\n", "configuration", "wrong", "nonfin", "differ", "distinct", "max err/tol",
            "median ms", "vs bug");
    for (int r = 0; r < NROWS; ++r) med[r] = NAN;
    for (int r = 0; r < NROWS && st == LAB_OK; ++r) {
        if (!full && !wr_study_recorded(r)) continue;
        st = wr_run_kernel(&pp, &f, 1, &rows[r].cfg, rows[r].minb, RUNS, outs, &med[r]);
        if (st != LAB_OK) break;
        int wrong = 0, nonfin = 0, differ = 0, distinct = 0;
        double worst = 0.0;
        int *cls = (int *)calloc((size_t)RUNS, sizeof(int));
        for (int i = 0; i < RUNS; ++i) {
            size_t nf = 0;
            double e = wr_rel_diff(&p, &outs[i], ref, &nf) / tol;
            if (nf) nonfin++;
            if (!(e <= 1.0)) wrong++;
            worst = isnan(e) || isnan(worst) ? NAN : (e > worst ? e : worst);
            if (i > 0 && wr_bits_differ(&p, &outs[i], &outs[0], NULL)) differ++;
            /* distinct outputs: the first earlier run with the same bits */
            cls[i] = i;
            for (int j = 0; j < i && cls && cls[i] == i; ++j)
                if (cls[j] == j && !wr_bits_differ(&p, &outs[i], &outs[j], NULL)) cls[i] = j;
            if (cls && cls[i] == i) distinct++;
        }
        free(cls);
        char vs_bug[16] = "-"; /* the bug (row 2) not yet timed: row 1 in the bench */
        if (!isnan(med[2])) snprintf(vs_bug, sizeof vs_bug, "%.3f", med[r] / med[2]);
        fprintf(out, "%-28s %3d/%-2d %3d/%-2d %3d/%-2d %8d %11.3g %10.3f %9s\n", rows[r].name, wrong, RUNS, nonfin, RUNS, differ,
                RUNS - 1, distinct, worst, med[r], vs_bug);
        if (rows[r].minb > 1) { /* the "32 registers" rows: the cap holds only where minb blocks fit an SM (wr_cuda.h) */
            int regs = wr_bwd_regs(wr_find_kernel(&rows[r].cfg, rows[r].minb));
            if (regs > 32)
                fprintf(out, "  (the 32-register cap did not apply on %s, compute capability %d.%d: %d registers, as the "
                             "uncapped kernel)\n", info.name, info.cc_major, info.cc_minor, regs);
        }
        fflush(out);
        for (int i = 0; i < RUNS; ++i) wr_out_free(&outs[i]);
    }
    if (st == LAB_OK) {
        /* cost records: each fix and each historical change against the bug (4 warps), medians of the runs above */
        static const int pairs[][2] = {{4, 2}, {1, 2}, {6, 2}, {7, 2}, {8, 2}, {9, 2}};
        static const char *names[] = {"fix-barrier", "fix-num-warps-2", "fix-owner-loads", "bug-clamp", "bug-pad-slice", "bug-f64"};
        for (int i = 0; i < 6; ++i)
            fprintf(out,
                    "lab-bench-record {\"name\":\"backward B=%d T=%d K=%d C=%d: %s\",\"fix\":\"%s\",\"baseline\":\"bug-num-warps-4\","
                    "\"device\":\"%s\",\"fix_ms\":%.6g,\"baseline_ms\":%.6g,\"ratio\":%.6g,\"reps\":%d,\"warmup\":0}\n",
                    B, T, K, C, names[i], names[i], info.name, med[pairs[i][0]], med[pairs[i][1]], med[pairs[i][0]] / med[pairs[i][1]],
                    RUNS);
    }
    if (ref) wr_out_free(ref);
    free(ref);
    free(outs);
    lab_semicrf_problem_free(&p);
    return st;
}
