/* nvfp4_fold: incident 0003's folded-global-scale variant (the float32 global scales multiplied into the E4M3 block scales instead of passed as the GEMM's per-expert alpha): the fold, its census, the case and the magnitude study. */
#ifndef NVFP4_FOLD_H
#define NVFP4_FOLD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lab_format.h"
#include "lab_hd.h"
#include "nvfp4_sf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A variant's param bit: fold the global scales into the block scales (the remap kind is param & 0xff). */
#define NVFP4_FOLD_FLAG 0x100

/* Magnitudes of a case's fold workloads: each operand's data is scaled by 2^e (exactly: the E2M1 codes and
 * E4M3 block scales stay the same bytes, the global scale becomes global * 2^-e), e drawn per seed and operand
 * uniformly in NVFP4_FOLD_EMIN..NVFP4_FOLD_EMAX (README "What the criterion checks" says why this range). */
#define NVFP4_FOLD_EMIN (-8)
#define NVFP4_FOLD_EMAX 8
/* Philox stream of the magnitude draws (word 2 * workload + operand). */
#define NVFP4_FOLD_STREAM 0x0003a100u

/* The folded scale as the folding code made it: the block scale decoded, divided by the float32 global
 * scale (dequantised = e2m1 * e4m3 / global in this lab's convention) and rounded back to E4M3 (nearest even,
 * saturating at 448, flushing below 2^-10 to 0: lab_e4m3_from_float). Pure. */
static inline LAB_HD uint8_t nvfp4_fold_scale(uint8_t sf, float global)
{
#ifdef __CUDA_ARCH__
    return lab_e4m3_from_float(__fdiv_rn(lab_e4m3_to_float(sf), global));
#else
    return lab_e4m3_from_float(lab_e4m3_to_float(sf) / global);
#endif
}

/* What folding did to n block scales: how many nonzero scales flushed to 0, landed in E4M3's subnormal
 * range (below 2^-6: fewer than 4 significant bits), or saturated (the exact quotient above 448). */
typedef struct {
    size_t n, flushed, subnormal, saturated;
} nvfp4_fold_census;

/* Folds n row-major scales (out[i] = nvfp4_fold_scale(sf[i], global)) and adds what happened to *c (may be
 * NULL). Never fails. */
void nvfp4_fold_scales(const uint8_t *sf, size_t n, float global, uint8_t *out, nvfp4_fold_census *c);

/* A workload at other magnitudes: the same codes and scales with the global scales given. */
typedef struct {
    const nvfp4_sf_work *w;
    float global_a, global_b;
} nvfp4_fold_work;

/* The GEMM of a workload at its magnitudes, with the fixed remap: fold = 0, alpha = 1 / (global_a * global_b)
 * (the fix: per-expert alpha); fold = 1, both operands' scales folded, alpha = 1 (the bug). out: m * n floats.
 * CPU: nvfp4_fold_run_cpu; CUDA: nvfp4_fold_run_cuda (nvfp4_fold.cu, bit-identical). LAB_ERR_NOMEM, the
 * remap's and GEMM's errors (CUDA: LAB_ERR_DEVICE with the CUDA error). */
typedef lab_status (*nvfp4_fold_gemm_fn)(const nvfp4_fold_work *fw, int fold, float *out);
lab_status nvfp4_fold_run_cpu(const nvfp4_fold_work *fw, int fold, float *out);
#ifdef LAB_HAVE_CUDA
lab_status nvfp4_fold_run_cuda(const nvfp4_fold_work *fw, int fold, float *out);
#endif

/* Magnitude exponent of operand (0: A, 1: B) of fold workload wi for a seed: uniform in EMIN..EMAX. Pure. */
int nvfp4_fold_exponent(uint64_t seed, int wi, int operand);

/* One fold case over the given workloads (ws[i], with refs and abs at the original magnitudes): each at the
 * seed's magnitudes, through `gemm` (fold as given), judged by nvfp4_sf_judge against the float64 reference
 * scaled exactly by 2^(ea + eb); cpu_check (may be NULL) re-runs on the CPU and counts bitwise mismatches.
 * Records metrics (fold_rel_l2, err_over_bound, cos_random, mag_a, mag_b, flushed, subnormal, saturated,
 * nonfinite, gpu_cpu_mismatch) and the verdict. LAB_ERR_NOMEM and the gemm's errors. */
lab_status nvfp4_fold_case(const nvfp4_sf_work *ws, const double *const *refs, const double *const *abss, size_t nw,
                           uint64_t seed, int fold, nvfp4_fold_gemm_fn gemm, nvfp4_fold_gemm_fn cpu_check,
                           lab_case_result *r);

/* Loss of folding at one magnitude pair on one workload. */
typedef struct {
    int ea, eb;
    double fold_rel_l2;        /* ||C_fold - C_ref|| / ||C_ref||: against the float64 product of the operands
                                  dequantised as intended */
    double fold_cos;           /* cosine of C_fold with C_ref */
    double quant_rel_l2;       /* ||C_ref - C_x|| / ||C_x||: NVFP4's own error against the unquantised data */
    double fold_x_rel_l2;      /* ||C_fold - C_x|| / ||C_x|| */
    double fix_err_over_bound; /* the fix at these magnitudes against its float32 bound (<= 1) */
    nvfp4_fold_census census;  /* both operands' scales */
} nvfp4_fold_point;

/* The study: for workload (shape_index, shape override or NULL, random data, seed), the folded and unfolded
 * GEMMs at magnitude pairs (ea[i], eb[i]), i < n, on the CPU; the unquantised data's float64 product C_x is
 * computed once. out[i] receives each point. LAB_ERR_NOMEM / the workload's errors. Cost: 3 GEMM-sized passes
 * plus 2 per point. */
lab_status nvfp4_fold_study(int shape_index, const nvfp4_sf_shape *shape, uint64_t seed, const int *ea, const int *eb,
                            size_t n, nvfp4_fold_point *out);

/* Figure (incident figures hook): fold loss and scale census against the magnitude exponent (both operands
 * at 2^e), on the ragged and large workloads of seed 1; writes <plots>/<id>-fold-loss.dat and .png. */
lab_status nvfp4_fold_figure(const lab_figure_ctx *fx);

#ifdef __cplusplus
}
#endif

#endif
