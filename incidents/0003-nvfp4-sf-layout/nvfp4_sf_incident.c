/* nvfp4_sf_incident: incident 0003 on the contract: its variants (the layout remaps and the folded global scale), the
 * case of each on CPU and CUDA, the figures and the registration. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "lab_gnuplot.h"
#include "nvfp4_fold.h"
#include "nvfp4_sf.h"

#ifdef LAB_HAVE_CUDA
#include "lab_cuda.h"
#endif

/* ---------------------------------------------------------------------------------------------- */
/* Variants                                                                                        */

/* The fold workloads of a group: its ragged and large random workloads (0 and 2 of NVFP4_SF_NWORK; nvfp4_fold_case
 * scales them). */
static const size_t nv_fold_wi[] = {0, 2};
#define NV_NFOLD (sizeof nv_fold_wi / sizeof nv_fold_wi[0])

/* The fold case of a group: folded (bug) or with the global scales as alpha (the fix's own check). */
static lab_status nv_fold_group(const nvfp4_sf_group *g, uint64_t seed, int fold, nvfp4_fold_gemm_fn gemm,
                                nvfp4_fold_gemm_fn cpu_check, lab_case_result *r)
{
    nvfp4_sf_work ws[NV_NFOLD];
    const double *refs[NV_NFOLD], *abss[NV_NFOLD];
    for (size_t i = 0; i < NV_NFOLD; ++i) ws[i] = g->w[nv_fold_wi[i]], refs[i] = g->ref[nv_fold_wi[i]], abss[i] = g->abs[nv_fold_wi[i]];
    return nvfp4_fold_case(ws, refs, abss, NV_NFOLD, seed, fold, gemm, cpu_check, r);
}

/* A variant's case: the fold variant runs the fold case alone; every other one runs the layout case, and the
 * fix also the fold workloads at the seed's magnitudes with alpha (it must pass there too). */
static lab_status nv_run(const lab_case *c, lab_case_result *r, nvfp4_sf_gemm_fn gemm, nvfp4_sf_gemm_fn cpu_check,
                         nvfp4_fold_gemm_fn fgemm, nvfp4_fold_gemm_fn fcheck,
                         lab_nvfp4_gemm_fn namer)
{
    int param = c->variant->param;
    if (param & NVFP4_FOLD_FLAG) return nv_fold_group(c->group, c->seed, 1, fgemm, fcheck, r);
    lab_nvfp4_remap_kind kind = (lab_nvfp4_remap_kind)(param & 0xff);
    lab_status st = nvfp4_sf_case_group(c->group, c->seed, kind, gemm, cpu_check, namer, c->golden_dir, r);
    if (st != LAB_OK || kind != LAB_NVFP4_REMAP_FIX) return st;
    lab_case_result m;
    memset(&m, 0, sizeof m);
    if ((st = nv_fold_group(c->group, c->seed, 0, fgemm, fcheck, &m)) != LAB_OK) return st;
    lab_result_metric(r, "mag_err_over_bound", lab_result_get(&m, "err_over_bound"));
    if (r->passed && !m.passed) lab_result_verdict(r, 0, "at other magnitudes, %s", m.detail);
    return LAB_OK;
}

static lab_status nv_run_cpu(const lab_case *c, lab_case_result *r)
{
    r->memory_contained = 1; /* as on the GPU (nv_run_cuda): every access inside the case's own buffers */
    return nv_run(c, r, nvfp4_sf_run_cpu, NULL, nvfp4_fold_run_cpu, NULL, lab_nvfp4_gemm);
}

#ifdef LAB_HAVE_CUDA
static lab_status nv_run_cuda(const lab_case *c, lab_case_result *r)
{
    lab_cuda_info info;
    lab_status st = lab_cuda_device_info(0, &info);
    if (st != LAB_OK) return st;
    nvfp4_sf_cuda_stale_reused = nvfp4_sf_cuda_stale_buffers = 0;
    /* The bit-for-bit comparisons with the CPU kernels on a sample of seeds (lab_case_xcheck). */
    int x = lab_case_xcheck(c);
    /* a failing workload's fault is named with the candidates' GEMMs on the GPU (the same bits as the CPU's) */
    st = nv_run(c, r, nvfp4_sf_run_cuda, x ? nvfp4_sf_run_cpu : NULL, nvfp4_fold_run_cuda, x ? nvfp4_fold_run_cpu : NULL,
                lab_nvfp4_cuda_gemm_host);
    if (st != LAB_OK) return st;
    const nvfp4_sf_group *g = c->group;
    if (!isnan(g->ref_check)) lab_result_metric(r, "ref_device_vs_cpu", g->ref_check);
    /* Contained by construction: the memory bug reads bytes of its own fresh layout allocation that nothing
     * wrote (stale pool contents the case itself put there, nv_stale_alloc), and every remap writes below
     * the layout's cosize and reads below rows * k_sf of its source (kernels/lab_nvfp4.cu); every buffer is
     * allocated and freed by the case. So its worker may run further cases. */
    r->memory_contained = 1;
    char detail[sizeof r->detail];
    snprintf(detail, sizeof detail, "%s", r->detail);
    lab_result_verdict(r, r->passed, "%s [%s sm_%d%d; stale blocks reused %d/%d]", detail, info.name, info.cc_major,
                       info.cc_minor, nvfp4_sf_cuda_stale_reused, nvfp4_sf_cuda_stale_buffers);
    return LAB_OK;
}
#endif

/* ---------------------------------------------------------------------------------------------- */
/* Figure: cosine per seed, bug and fix, all-ones and random data                                   */

static const char *const nv_fig_variants[] = {"fix", "bug-size-not-cosize", "bug-mk-swap"};
#define NV_FIG_NAN_Y (-0.5)

/* The data of the story's picture of the 128x4 tile (story.py draws it): where each scale (m, k) of a problem of
 * NV_TILE_ROWS rows and NV_TILE_KSF scale columns lands in the layout's bytes under the fix, the M/K swap and the
 * size-vs-cosize loop, through the lab's own remap (lab_nvfp4_sf_remap) of scales labelled by their m and k.
 * <plots_dir>/<id>-sf-tile.dat: one row per byte offset, then per kind the m and k of the scale written there; -2 -2
 * where the kind writes the padding's zero, -1 -1 where it leaves the byte as it was (stale). LAB_ERR_IO naming the
 * file; the remap's status. */
#define NV_TILE_ROWS 100
#define NV_TILE_KSF 3
static lab_status nv_tile_figure(const lab_figure_ctx *fx)
{
    static const lab_nvfp4_remap_kind kinds[] = {LAB_NVFP4_REMAP_FIX, LAB_NVFP4_REMAP_MK_SWAP,
                                                 LAB_NVFP4_REMAP_SIZE_NOT_COSIZE};
    enum { NK = 3, NSRC = NV_TILE_ROWS * NV_TILE_KSF };
    size_t cos = lab_nvfp4_sf_cosize(NV_TILE_ROWS, NV_TILE_KSF);
    uint8_t src_m[NSRC], src_k[NSRC];
    /* labels from 1: a 0 in the tile is the padding the remap writes, 0xFF a byte it left alone */
    for (size_t i = 0; i < NSRC; ++i)
        src_m[i] = (uint8_t)(1 + i / NV_TILE_KSF), src_k[i] = (uint8_t)(1 + i % NV_TILE_KSF);
    uint8_t *dst = malloc(2 * NK * cos);
    if (!dst) return lab_err_set(LAB_ERR_NOMEM, "0003 tile figure: out of memory");
    memset(dst, 0xFF, 2 * NK * cos); /* 0xFF: nothing written (the labels stay below it) */
    lab_status st = LAB_OK;
    for (int k = 0; k < NK && st == LAB_OK; ++k) {
        st = lab_nvfp4_sf_remap(src_m, NV_TILE_ROWS, NV_TILE_KSF, dst + (size_t)(2 * k) * cos, cos, kinds[k]);
        if (st == LAB_OK)
            st = lab_nvfp4_sf_remap(src_k, NV_TILE_ROWS, NV_TILE_KSF, dst + (size_t)(2 * k + 1) * cos, cos, kinds[k]);
    }
    char dat[4096];
    snprintf(dat, sizeof dat, "%s/%s-sf-tile.dat", fx->plots_dir, fx->incident->id);
    const char *series[] = {"fix-m", "fix-k", "mk-swap-m", "mk-swap-k", "size-not-cosize-m", "size-not-cosize-k"};
    FILE *f = st == LAB_OK ? lab_gnuplot_dat_open(dat, "byte", series, 2 * NK) : NULL;
    if (st == LAB_OK && !f) st = LAB_ERR_IO;
    for (size_t o = 0; f && o < cos; ++o) {
        fprintf(f, "%zu", o);
        for (int k = 0; k < 2 * NK; ++k) {
            uint8_t b = dst[(size_t)k * cos + o];
            fprintf(f, " %d", b == 0xFF ? -1 : b == 0 ? -2 : (int)b - 1);
        }
        fputc('\n', f);
    }
    if (f) st = lab_gnuplot_dat_close(f, dat);
    free(dst);
    return st;
}

static lab_status nv_figures(const lab_figure_ctx *fx)
{
    lab_status tile = nv_tile_figure(fx); /* data only, no gnuplot needed */
    if (tile != LAB_OK) return tile;
    char dat[4096], png[4096];
    snprintf(dat, sizeof dat, "%s/%s-cosine.dat", fx->plots_dir, fx->incident->id);
    snprintf(png, sizeof png, "%s/%s-cosine.png", fx->plots_dir, fx->incident->id);
    const char *series[] = {"fix-ones", "fix-random", "size-not-cosize-ones", "size-not-cosize-random",
                            "mk-swap-ones", "mk-swap-random"};
    FILE *f = lab_gnuplot_dat_open(dat, "seed", series, 6);
    if (!f) return LAB_ERR_IO;
    /* One row per seed of the first backend seen, in results order. */
    lab_backend backend = fx->n_cases ? fx->cases[0].backend : LAB_BACKEND_CPU;
    for (size_t i = 0; i < fx->n_cases; ++i) {
        const lab_figure_case *ci = &fx->cases[i];
        if (ci->backend != backend) continue;
        int first = 1;
        for (size_t j = 0; j < i && first; ++j)
            if (fx->cases[j].backend == backend && fx->cases[j].seed == ci->seed) first = 0;
        if (!first) continue;
        double v[6];
        for (int k = 0; k < 6; ++k) v[k] = NAN;
        for (size_t j = i; j < fx->n_cases; ++j) {
            const lab_figure_case *cj = &fx->cases[j];
            if (cj->backend != backend || cj->seed != ci->seed) continue;
            for (int k = 0; k < 3; ++k)
                if (!strcmp(cj->variant->name, nv_fig_variants[k])) {
                    /* A case whose outputs hold NaN has no cosine: drawn at NV_FIG_NAN_Y so it is seen. */
                    int nan_out = lab_result_get(&cj->r, "nonfinite") > 0;
                    v[2 * k] = lab_result_get(&cj->r, "cos_ones");
                    v[2 * k + 1] = lab_result_get(&cj->r, "cos_random");
                    if (nan_out && isnan(v[2 * k])) v[2 * k] = NV_FIG_NAN_Y;
                    if (nan_out && isnan(v[2 * k + 1])) v[2 * k + 1] = NV_FIG_NAN_Y;
                }
        }
        fprintf(f, "%llu", (unsigned long long)ci->seed);
        for (int k = 0; k < 6; ++k) fprintf(f, isnan(v[k]) ? " NaN" : " %.9g", v[k]);
        fputc('\n', f);
    }
    lab_status st = lab_gnuplot_dat_close(f, dat);
    if (st != LAB_OK) return st;
    lab_gnuplot_spec spec = {dat, png, "0003 NVFP4 SF layout: cosine with the float64 reference per seed",
                             "seed", "cosine, min over shapes (-0.5: outputs hold NaN)", 0, 0, 0};
    st = lab_gnuplot_xy(fx->root, &spec);
    lab_status st2 = nvfp4_fold_figure(fx);
    return st != LAB_OK ? st : st2;
}

static const lab_variant nvfp4_sf_variants[] = {
    {.name = "fix", .role = LAB_ROLE_FIX, .param = LAB_NVFP4_REMAP_FIX,
     .what = "remap over every physical byte (cosize), coordinates (m, k) the right way round, padding written"},
    {.name = "bug-size-not-cosize", .role = LAB_ROLE_BUG, .param = LAB_NVFP4_REMAP_SIZE_NOT_COSIZE,
     .min_detect_rate = 0.9, .sanitizer = "initcheck", .detect = LAB_DETECT_FAIL,
     .what = "remap loop bounded by the layout's logical size: real scales placed, tile padding left stale (E4M3 "
             "NaN codes read by the GEMM as 0 * NaN)"},
    {.name = "bug-mk-swap", .role = LAB_ROLE_BUG, .param = LAB_NVFP4_REMAP_MK_SWAP, .detect = LAB_DETECT_FAIL,
     .what = "remap over cosize with M and K swapped in the source coordinate: src[k*M + m] instead of "
             "src[m*K_sf + k] (the code after the first fix)"},
    {.name = "bug-fold-global-scale", .role = LAB_ROLE_BUG, .param = LAB_NVFP4_REMAP_FIX | NVFP4_FOLD_FLAG,
     .detect = LAB_DETECT_FAIL,
     .what = "the float32 global scales folded into the E4M3 block scales (e4m3(sf / global), alpha 1) instead of "
             "passed as the GEMM's per-expert alpha: a second E4M3 rounding, flushes and saturation by magnitude"},
};

/* What the criterion compares, for plots (lab_metric_spec): the first separates bug and fix. */
static const lab_metric_spec nv_metric_specs[] = {
    {"cos_random", NVFP4_SF_MIN_COSINE, 0, NULL, "worst cosine of the random workloads: the fix at 1, scrambled scale factors far below the line"},
    {"err_over_bound", 1.0, 1, NULL, "worst error as a fraction of its per-element rounding bound (the criterion's literal 1.0): below 1 passes"},
    {"rel_l2_random", NVFP4_SF_TOL_REL_L2, 1, NULL, "relative L2 error of the random workloads against its statistical tolerance"},
    {"nonfinite", 0, 1, NULL, "non-finite outputs: must be 0"},
};

/* The scheduler's rough cost of a case (lab_incident.seed_cost): the same for every seed; five GEMM workloads (and the fix's two fold runs) with one wait each: 0.107 s per case in the loaded 1000-seed H100 replay of 2026-11-24. */
static double nv_seed_cost(uint64_t seed)
{
    (void)seed;
    return 0.1;
}

const lab_incident nvfp4_sf_incident = {
    .id = LAB_INCIDENT_ID,
    .title = "NVFP4 block-scale-factor layout: size vs cosize, and M/K swapped in the remap",
    .variants = nvfp4_sf_variants,
    .n_variants = (int)(sizeof nvfp4_sf_variants / sizeof nvfp4_sf_variants[0]),
    .setup = nvfp4_sf_setup,
    .teardown = nvfp4_sf_teardown,
    .run_cpu = nv_run_cpu,
    .run_cuda = LAB_IF_CUDA(nv_run_cuda),
    .timeout_s = 60,
    .golden_bless = nvfp4_sf_golden_bless,
    .default_seeds = 78,
    .bench = LAB_IF_CUDA(nvfp4_sf_bench),
    .seed_cost = nv_seed_cost,
    .plots = {
        .metric = "cos_random",
        .drift_metric = "err_over_bound",
        .specs = nv_metric_specs,
        .n_specs = (int)(sizeof nv_metric_specs / sizeof nv_metric_specs[0]),
        .figures = nv_figures,
    },
};

LAB_INCIDENT_REGISTER(nvfp4_sf_incident);
