/* nvfp4_sf: incident 0003's workloads (shapes, Philox inputs, stale memory), the case runner on CPU and CUDA and the criterion of the NVFP4 scale-factor layout incident. */
#include "nvfp4_sf.h"
#include "nvfp4_fold.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_fs.h"
#include "lab_gnuplot.h"
#include "lab_golden.h"
#include "lab_metric.h"
#include "lab_rng.h"
#include "lab_tensor.h"

#ifdef LAB_HAVE_CUDA
#include "lab_cuda.h"
#endif

const nvfp4_sf_shape nvfp4_sf_shapes[NVFP4_SF_NSHAPES] = {
    {"small", 1, 32, 32},
    {"ragged", 200, 96, 592},
    {"large", 128, 64, 7168},
};
const nvfp4_sf_shape nvfp4_sf_production = {"production", 128, 6144, 7168};

static uint32_t nv_stream(int shape_index, int tensor)
{
    return NVFP4_SF_STREAM + 16u * (uint32_t)shape_index + (uint32_t)tensor;
}

uint8_t nvfp4_sf_stale_byte(uint64_t seed, uint32_t stream, uint64_t o)
{
    return (uint8_t)(lab_rng_u32(seed, stream, o) >> 24);
}

void nvfp4_sf_work_free(nvfp4_sf_work *w)
{
    free(w->qa), free(w->qb), free(w->sfa), free(w->sfb), free(w->stale_a), free(w->stale_b);
    memset(w, 0, sizeof *w);
}

/* Values of one operand (rows x k): all ones, or uniform in [-1, 1) times 2^e per 16-element block. */
static lab_status nv_values(float *x, size_t rows, size_t k, nvfp4_sf_data data, uint64_t seed, int shape_index,
                            int t_val, int t_exp)
{
    size_t n = rows * k;
    if (data == NVFP4_SF_ONES) {
        for (size_t i = 0; i < n; ++i) x[i] = 1.0f;
        return LAB_OK;
    }
    size_t nb = n / LAB_NVFP4_BLOCK;
    float *u = malloc(nb * sizeof *u);
    if (!u) return lab_err_set(LAB_ERR_NOMEM, NVFP4_SF_ID ": out of memory for block exponents");
    lab_rng_fill_uniform(x, n, seed, nv_stream(shape_index, t_val), 0);
    lab_rng_fill_uniform(u, nb, seed, nv_stream(shape_index, t_exp), 0);
    for (size_t b = 0; b < nb; ++b) {
        float s = nvfp4_sf_block_scale(u[b]);
        for (size_t j = 0; j < LAB_NVFP4_BLOCK; ++j) {
            size_t i = b * LAB_NVFP4_BLOCK + j;
            x[i] = nvfp4_sf_value(x[i], s);
        }
    }
    free(u);
    return LAB_OK;
}

lab_status nvfp4_sf_values(const nvfp4_sf_work *w, int operand, uint64_t seed, float *x)
{
    size_t rows = operand ? w->shape.n : w->shape.m;
    return nv_values(x, rows, w->shape.k, w->data, seed, w->shape_index, operand ? NVFP4_SF_T_B : NVFP4_SF_T_A,
                     operand ? NVFP4_SF_T_B_EXP : NVFP4_SF_T_A_EXP);
}

/* Stale bytes: the top 8 bits of each word, through the batched uniform fill (u = (word >> 8) * 2^-24, so
 * u * 256 truncated is word >> 24, bit for bit nvfp4_sf_stale_byte). */
static void nv_stale(uint8_t *out, size_t len, uint64_t seed, uint32_t stream, float *tmp)
{
    lab_rng_fill_uniform(tmp, len, seed, stream, 0);
    for (size_t o = 0; o < len; ++o) out[o] = (uint8_t)(tmp[o] * 256.0f);
}

lab_status nvfp4_sf_work_init(nvfp4_sf_work *w, int shape_index, const nvfp4_sf_shape *shape, nvfp4_sf_data data,
                              uint64_t seed)
{
    memset(w, 0, sizeof *w);
    if (shape_index < 0 || shape_index >= NVFP4_SF_NSHAPES)
        return lab_err_set(LAB_ERR_ARG, NVFP4_SF_ID ": shape index %d out of range", shape_index);
    w->shape = shape ? *shape : nvfp4_sf_shapes[shape_index];
    w->shape_index = shape_index;
    w->data = data;
    size_t m = w->shape.m, n = w->shape.n, k = w->shape.k;
    if (m == 0 || n == 0 || k == 0 || k % LAB_NVFP4_BLOCK != 0)
        return lab_err_set(LAB_ERR_ARG, NVFP4_SF_ID ": shape (%zu, %zu, %zu): k must be a positive multiple of 16", m,
                           n, k);
    w->k_sf = k / LAB_NVFP4_BLOCK;
    w->cosize_a = lab_nvfp4_sf_cosize(m, w->k_sf);
    w->cosize_b = lab_nvfp4_sf_cosize(n, w->k_sf);
    size_t xlen = (m > n ? m : n) * k, clen = w->cosize_a > w->cosize_b ? w->cosize_a : w->cosize_b;
    float *x = malloc((xlen > clen ? xlen : clen) * sizeof *x);
    w->qa = malloc(m * k / 2), w->qb = malloc(n * k / 2);
    w->sfa = malloc(m * w->k_sf), w->sfb = malloc(n * w->k_sf);
    w->stale_a = malloc(w->cosize_a), w->stale_b = malloc(w->cosize_b);
    lab_status st = LAB_OK;
    if (!x || !w->qa || !w->qb || !w->sfa || !w->sfb || !w->stale_a || !w->stale_b) {
        st = lab_err_set(LAB_ERR_NOMEM, NVFP4_SF_ID ": out of memory for shape (%zu, %zu, %zu)", m, n, k);
        goto done;
    }
    if ((st = nv_values(x, m, k, data, seed, shape_index, NVFP4_SF_T_A, NVFP4_SF_T_A_EXP)) != LAB_OK) goto done;
    if ((st = lab_nvfp4_quantize(x, m, k, w->qa, w->sfa, &w->global_a)) != LAB_OK) goto done;
    if ((st = nv_values(x, n, k, data, seed, shape_index, NVFP4_SF_T_B, NVFP4_SF_T_B_EXP)) != LAB_OK) goto done;
    if ((st = lab_nvfp4_quantize(x, n, k, w->qb, w->sfb, &w->global_b)) != LAB_OK) goto done;
    nv_stale(w->stale_a, w->cosize_a, seed, nv_stream(shape_index, NVFP4_SF_T_STALE_A), x);
    nv_stale(w->stale_b, w->cosize_b, seed, nv_stream(shape_index, NVFP4_SF_T_STALE_B), x);
done:
    free(x);
    if (st != LAB_OK) nvfp4_sf_work_free(w);
    return st;
}

lab_status nvfp4_sf_run_cpu(const nvfp4_sf_work *w, lab_nvfp4_remap_kind kind, float *out)
{
    uint8_t *la = malloc(w->cosize_a), *lb = malloc(w->cosize_b);
    if (!la || !lb) {
        free(la), free(lb);
        return lab_err_set(LAB_ERR_NOMEM, NVFP4_SF_ID ": out of memory for the layouts");
    }
    /* The layout buffers hold what the memory held before: the seeded stale bytes. */
    memcpy(la, w->stale_a, w->cosize_a);
    memcpy(lb, w->stale_b, w->cosize_b);
    lab_status st = lab_nvfp4_sf_remap(w->sfa, w->shape.m, w->k_sf, la, w->cosize_a, kind);
    if (st == LAB_OK) st = lab_nvfp4_sf_remap(w->sfb, w->shape.n, w->k_sf, lb, w->cosize_b, kind);
    if (st == LAB_OK)
        st = lab_nvfp4_gemm(w->qa, la, w->qb, lb, w->shape.m, w->shape.n, w->shape.k,
                            lab_nvfp4_alpha(w->global_a, w->global_b), out);
    free(la), free(lb);
    return st;
}

static size_t nv_nan_in_padding(const uint8_t *stale, size_t rows, size_t k_sf)
{
    size_t kb = (k_sf + 3) / 4 * 4, c = 0;
    for (size_t r = 0; r < rows; ++r)
        for (size_t k = k_sf; k < kb; ++k) c += (stale[lab_nvfp4_sf_offset(r, k, k_sf)] & 0x7Fu) == 0x7Fu;
    return c;
}

size_t nvfp4_sf_stale_nan_reads(const nvfp4_sf_work *w)
{
    return nv_nan_in_padding(w->stale_a, w->shape.m, w->k_sf) + nv_nan_in_padding(w->stale_b, w->shape.n, w->k_sf);
}

lab_status nvfp4_sf_reference(const nvfp4_sf_work *w, double *ref, double *abs)
{
    return lab_nvfp4_gemm_ref(w->qa, w->sfa, w->global_a, w->qb, w->sfb, w->global_b, w->shape.m, w->shape.n,
                              w->shape.k, ref, abs);
}

nvfp4_sf_judgement nvfp4_sf_judge(const nvfp4_sf_work *w, const float *out, const double *ref, const double *abs)
{
    nvfp4_sf_judgement j;
    memset(&j, 0, sizeof j);
    size_t mn = w->shape.m * w->shape.n;
    lab_census c = lab_metric_census_f32(out, mn);
    j.nonfinite = c.nan + c.pinf + c.ninf;
    j.cosine = lab_metric_cosine(out, ref, mn);
    j.rel_l2 = lab_metric_rel_l2(out, ref, mn);
    double gamma = lab_nvfp4_gemm_gamma(w->shape.k), worst = 0.0, nb = 0.0, nr = 0.0;
    for (size_t i = 0; i < mn; ++i) {
        double bound = gamma * abs[i], err = fabs((double)out[i] - ref[i]);
        double q = err == 0.0 ? 0.0 : (bound > 0.0 ? err / bound : INFINITY);
        if (isnan(err)) q = NAN;
        if (isnan(q) || isnan(worst)) worst = NAN;
        else if (q > worst) worst = q;
        nb += bound * bound;
        nr += ref[i] * ref[i];
    }
    j.err_over_bound = worst;
    j.rel_l2_bound = nr > 0.0 ? sqrt(nb) / sqrt(nr) : 0.0;
    j.passed = j.nonfinite == 0 && j.cosine >= NVFP4_SF_MIN_COSINE && j.err_over_bound <= 1.0 &&
               j.rel_l2 <= j.rel_l2_bound && j.rel_l2 <= NVFP4_SF_TOL_REL_L2;
    return j;
}

/* ---------------------------------------------------------------------------------------------- */
/* Goldens                                                                                         */

void nvfp4_sf_golden_name(int shape_index, uint64_t seed, char *out, size_t len)
{
    snprintf(out, len, "ref_%s_seed%llu.npy", nvfp4_sf_shapes[shape_index].name, (unsigned long long)seed);
}

lab_status nvfp4_sf_golden_bless(const char *dir)
{
    lab_status st = lab_fs_mkdirs(dir);
    if (st != LAB_OK) return st;
    lab_golden_manifest m;
    memset(&m, 0, sizeof m);
    snprintf(m.incident, sizeof m.incident, "%s", NVFP4_SF_ID);
    for (int s = 0; s < NVFP4_SF_NSHAPES && st == LAB_OK; ++s) {
        nvfp4_sf_work w;
        if ((st = nvfp4_sf_work_init(&w, s, NULL, NVFP4_SF_RANDOM, NVFP4_SF_GOLDEN_SEED)) != LAB_OK) break;
        lab_tensor t;
        size_t shape[2] = {w.shape.m, w.shape.n};
        if ((st = lab_tensor_create(&t, LAB_DT_F8, 2, shape)) == LAB_OK) {
            st = nvfp4_sf_reference(&w, t.data, NULL);
            char file[64], producer[128];
            nvfp4_sf_golden_name(s, NVFP4_SF_GOLDEN_SEED, file, sizeof file);
            snprintf(producer, sizeof producer, "float64 reference lab_nvfp4_gemm_ref v1, %s (%zu, %zu, %zu), random data",
                     w.shape.name, w.shape.m, w.shape.n, w.shape.k);
            if (st == LAB_OK) st = lab_golden_add(&m, dir, file, &t, LAB_DT_F8, NVFP4_SF_GOLDEN_SEED, producer);
            lab_tensor_free(&t);
        }
        nvfp4_sf_work_free(&w);
    }
    if (st == LAB_OK) st = lab_golden_manifest_write(dir, &m);
    lab_golden_manifest_free(&m);
    return st;
}

/* Loads the golden of shape s (seed NVFP4_SF_GOLDEN_SEED), checking it is f8 (m, n). */
static lab_status nv_golden_load(const char *dir, int s, const nvfp4_sf_work *w, lab_tensor *t)
{
    lab_golden_manifest m;
    memset(&m, 0, sizeof m);
    lab_status st = lab_golden_manifest_read(dir, &m);
    if (st != LAB_OK) return st;
    char file[64];
    nvfp4_sf_golden_name(s, NVFP4_SF_GOLDEN_SEED, file, sizeof file);
    const lab_golden_entry *e = lab_golden_find(&m, file);
    if (!e) {
        st = lab_err_set(LAB_ERR_NOTFOUND, "%s/%s: not listed in %s (run `lab golden bless 0003`)", dir, file,
                         LAB_GOLDEN_MANIFEST);
    } else if ((st = lab_golden_load(dir, e, t)) == LAB_OK &&
               (t->dtype != LAB_DT_F8 || t->ndim != 2 || t->shape[0] != w->shape.m || t->shape[1] != w->shape.n)) {
        lab_tensor_free(t);
        st = lab_err_set(LAB_ERR_MISMATCH, "%s/%s: expected f8 [%zu, %zu]", dir, file, w->shape.m, w->shape.n);
    }
    lab_golden_manifest_free(&m);
    return st;
}

/* ---------------------------------------------------------------------------------------------- */
/* The case                                                                                        */

/* Workloads of a case, in the order they are judged (the namer looks at the first that fails). */
static const struct { int shape; nvfp4_sf_data data; } nv_workloads[] = {
    {NVFP4_SF_RAGGED, NVFP4_SF_RANDOM}, {NVFP4_SF_SMALL, NVFP4_SF_RANDOM}, {NVFP4_SF_LARGE, NVFP4_SF_RANDOM},
    {NVFP4_SF_SMALL, NVFP4_SF_ONES},    {NVFP4_SF_RAGGED, NVFP4_SF_ONES},
};
#define NV_NWORK (sizeof nv_workloads / sizeof nv_workloads[0])

static double nv_min(double acc, double v) { return isnan(acc) || isnan(v) ? NAN : (v < acc ? v : acc); }
static double nv_max(double acc, double v) { return isnan(acc) || isnan(v) ? NAN : (v > acc ? v : acc); }

/* The seed's group: every workload's inputs and float64 reference, shared by the variants. */
typedef struct {
    nvfp4_sf_work w[NV_NWORK];
    double *ref[NV_NWORK], *abs[NV_NWORK];
    size_t made;                 /* workloads initialised */
    double ref_check;            /* the device reference's lab_nvfp4_ref_disagreement with the CPU's, worst over the
                                    workloads, where both were made (NaN elsewhere) */
} nv_group;

static void nv_teardown(void *vg)
{
    nv_group *g = vg;
    if (!g) return;
    for (size_t wi = 0; wi < g->made; ++wi) {
        nvfp4_sf_work_free(&g->w[wi]);
        free(g->ref[wi]);
        free(g->abs[wi]);
    }
    free(g);
}

#ifdef LAB_HAVE_CUDA
/* The group's references on the device (one wait for all workloads); where `check`, the CPU's too, and how far apart
 * they are (g->ref_check): beyond what rounding allows, the device reference is wrong, and the group an error. */
static lab_status nv_group_refs_cuda(nv_group *g, uint64_t seed, int check)
{
    lab_nvfp4_ref_job jobs[NV_NWORK];
    for (size_t wi = 0; wi < NV_NWORK; ++wi) {
        const nvfp4_sf_work *w = &g->w[wi];
        jobs[wi] = (lab_nvfp4_ref_job){w->qa, w->sfa, w->qb, w->sfb, w->global_a, w->global_b, w->shape.m, w->shape.n,
                                       w->shape.k, g->ref[wi], g->abs[wi]};
    }
    lab_status st = lab_nvfp4_gemm_ref_cuda(jobs, NV_NWORK);
    for (size_t wi = 0; wi < NV_NWORK && st == LAB_OK && check; ++wi) {
        const nvfp4_sf_work *w = &g->w[wi];
        size_t mn = w->shape.m * w->shape.n;
        double *ref = malloc(mn * sizeof *ref), *abs = malloc(mn * sizeof *abs);
        if (!ref || !abs) st = lab_err_set(LAB_ERR_NOMEM, NVFP4_SF_ID ": out of memory for %s", w->shape.name);
        else st = nvfp4_sf_reference(w, ref, abs);
        if (st == LAB_OK) {
            double x = lab_nvfp4_ref_disagreement(ref, abs, g->ref[wi], g->abs[wi], mn, w->shape.k);
            g->ref_check = wi == 0 ? x : nv_max(g->ref_check, x);
            if (!(x <= 1.0))
                st = lab_err_set(LAB_ERR_MISMATCH, NVFP4_SF_ID ": seed %llu, %s %s: the device's float64 reference is %.3g "
                                 "of the rounding bound away from the CPU's", (unsigned long long)seed, w->shape.name,
                                 nv_workloads[wi].data == NVFP4_SF_ONES ? "ones" : "random", x);
        }
        free(ref), free(abs);
    }
    return st;
}
#endif

/* The group of seed: inputs and references, on the CPU, or where `device` on the GPU (checked against the CPU's
 * where `check`). */
static lab_status nv_group_make(uint64_t seed, int device, int check, nv_group **out)
{
    nv_group *g = calloc(1, sizeof *g);
    if (!g) return lab_err_set(LAB_ERR_NOMEM, NVFP4_SF_ID ": out of memory for the group of seed %llu",
                               (unsigned long long)seed);
    lab_status st = LAB_OK;
    g->ref_check = NAN;
    for (size_t wi = 0; wi < NV_NWORK && st == LAB_OK; ++wi) {
        nvfp4_sf_work *w = &g->w[wi];
        if ((st = nvfp4_sf_work_init(w, nv_workloads[wi].shape, NULL, nv_workloads[wi].data, seed)) != LAB_OK) break;
        g->made++;
        size_t mn = w->shape.m * w->shape.n;
        g->ref[wi] = malloc(mn * sizeof(double));
        g->abs[wi] = malloc(mn * sizeof(double));
        if (!g->ref[wi] || !g->abs[wi]) st = lab_err_set(LAB_ERR_NOMEM, NVFP4_SF_ID ": out of memory for %s", w->shape.name);
        else if (!device) st = nvfp4_sf_reference(w, g->ref[wi], g->abs[wi]);
    }
#ifdef LAB_HAVE_CUDA
    if (st == LAB_OK && device) st = nv_group_refs_cuda(g, seed, check);
#else
    (void)check;
    if (st == LAB_OK && device) st = lab_err_set(LAB_ERR_UNSUPPORTED, NVFP4_SF_ID ": this build has no CUDA");
#endif
    if (st != LAB_OK) {
        nv_teardown(g);
        return st;
    }
    *out = g;
    return LAB_OK;
}

static lab_status nv_setup(const lab_case *c, void **group)
{
    nv_group *g;
    /* on CUDA the references are the device's, and at the cross-check seeds also the CPU's, compared */
    int cuda = c->backend == LAB_BACKEND_CUDA;
    lab_status st = nv_group_make(c->seed, cuda, cuda && lab_case_xcheck(c), &g);
    if (st == LAB_OK) *group = g;
    return st;
}

static lab_status nv_case_group(const nv_group *g, uint64_t seed, lab_nvfp4_remap_kind kind, nvfp4_sf_gemm_fn gemm,
                                nvfp4_sf_gemm_fn cpu_check, lab_nvfp4_gemm_fn namer, const char *golden_dir,
                                lab_case_result *r);

lab_status nvfp4_sf_case(uint64_t seed, lab_nvfp4_remap_kind kind, nvfp4_sf_gemm_fn gemm, nvfp4_sf_gemm_fn cpu_check,
                         const char *golden_dir, lab_case_result *r)
{
    nv_group *g;
    lab_status st = nv_group_make(seed, 0, 0, &g);
    if (st != LAB_OK) return st;
    st = nv_case_group(g, seed, kind, gemm, cpu_check, lab_nvfp4_gemm, golden_dir, r);
    nv_teardown(g);
    return st;
}

/* One variant (kind) over the group's workloads: the kernel, then the judge against the shared reference. */
static lab_status nv_case_group(const nv_group *g, uint64_t seed, lab_nvfp4_remap_kind kind, nvfp4_sf_gemm_fn gemm,
                                nvfp4_sf_gemm_fn cpu_check, lab_nvfp4_gemm_fn namer, const char *golden_dir,
                                lab_case_result *r)
{
    lab_status st = LAB_OK;
    double cos_random = 1.0, cos_ones = 1.0, rel_l2_random = 0.0, eob = 0.0, golden_eob = 0.0;
    double cos_shape[NVFP4_SF_NSHAPES] = {NAN, NAN, NAN};
    size_t nonfinite = 0, stale_nan = 0, mismatch = 0;
    int passed = 1, named = 0, golden_checked = 0, golden_ok = 1;
    lab_nvfp4_diagnosis diag;
    memset(&diag, 0, sizeof diag);
    char failed_on[48] = "";
    for (size_t wi = 0; wi < NV_NWORK && st == LAB_OK; ++wi) {
        int s = nv_workloads[wi].shape;
        nvfp4_sf_data data = nv_workloads[wi].data;
        const nvfp4_sf_work w = g->w[wi];
        const double *ref = g->ref[wi], *abs = g->abs[wi];
        size_t mn = w.shape.m * w.shape.n;
        float *out = malloc(mn * sizeof *out), *chk = cpu_check ? malloc(mn * sizeof *chk) : NULL;
        lab_tensor golden = {0};
        if (!out || (cpu_check && !chk)) {
            st = lab_err_set(LAB_ERR_NOMEM, NVFP4_SF_ID ": out of memory for %s", w.shape.name);
            goto next;
        }
        int use_golden = golden_dir && seed == NVFP4_SF_GOLDEN_SEED && data == NVFP4_SF_RANDOM;
        if (use_golden && (st = nv_golden_load(golden_dir, s, &w, &golden)) != LAB_OK) goto next;
        if ((st = gemm(&w, kind, out)) != LAB_OK) goto next;
        if (cpu_check) {
            if ((st = cpu_check(&w, kind, chk)) != LAB_OK) goto next;
            /* Bit for bit, except that any NaN equals any NaN: the GPU's arithmetic returns its canonical NaN
             * where the CPU's keeps the operand's payload and sign. */
            for (size_t i = 0; i < mn; ++i)
                mismatch += isnan(out[i]) ? !isnan(chk[i]) : memcmp(&out[i], &chk[i], sizeof(float)) != 0;
        }
        if (data == NVFP4_SF_RANDOM) stale_nan += nvfp4_sf_stale_nan_reads(&w);
        nvfp4_sf_judgement j = nvfp4_sf_judge(&w, out, ref, abs);
        nonfinite += j.nonfinite;
        if (data == NVFP4_SF_RANDOM) {
            cos_shape[s] = j.cosine;
            cos_random = nv_min(cos_random, j.cosine);
            rel_l2_random = nv_max(rel_l2_random, j.rel_l2);
            eob = nv_max(eob, j.err_over_bound);
        } else {
            cos_ones = nv_min(cos_ones, j.cosine);
        }
        if (use_golden) {
            nvfp4_sf_judgement g = nvfp4_sf_judge(&w, out, golden.data, abs);
            golden_checked = 1;
            golden_eob = nv_max(golden_eob, g.err_over_bound);
            golden_ok = golden_ok && g.passed;
        }
        if (!j.passed) {
            passed = 0;
            if (!named) {
                lab_nvfp4_problem p = {w.shape.m, w.shape.n, w.shape.k, w.qa, w.qb, w.sfa, w.sfb, w.global_a, w.global_b};
                if ((st = lab_nvfp4_name_fault_with(&p, out, namer, &diag)) != LAB_OK) goto next;
                named = 1;
                snprintf(failed_on, sizeof failed_on, "%s %s", w.shape.name, data == NVFP4_SF_ONES ? "ones" : "random");
            }
        }
    next:
        free(out), free(chk);
        lab_tensor_free(&golden);
    }
    if (st != LAB_OK) return st;
    lab_result_metric(r, "cos_random", cos_random);
    lab_result_metric(r, "cos_ones", cos_ones);
    lab_result_metric(r, "cos_small", cos_shape[NVFP4_SF_SMALL]);
    lab_result_metric(r, "cos_ragged", cos_shape[NVFP4_SF_RAGGED]);
    lab_result_metric(r, "cos_large", cos_shape[NVFP4_SF_LARGE]);
    lab_result_metric(r, "rel_l2_random", rel_l2_random);
    lab_result_metric(r, "err_over_bound", eob);
    lab_result_metric(r, "nonfinite", (double)nonfinite);
    lab_result_metric(r, "stale_nan_reads", (double)stale_nan);
    if (named) lab_result_metric(r, "fault", (double)diag.fault);
    if (golden_checked) lab_result_metric(r, "golden_err_over_bound", golden_eob);
    if (cpu_check) lab_result_metric(r, "gpu_cpu_mismatch", (double)mismatch);
    passed = passed && golden_ok && mismatch == 0;
    if (passed) {
        lab_result_verdict(r, 1, "random: cosine >= %.7f on small/ragged/large, rel L2 <= %.2g, error <= %.3g of its "
                           "bound; all-ones cosine %.7f%s", cos_random, rel_l2_random, eob, cos_ones,
                           golden_checked ? "; golden agrees" : "");
    } else if (named) {
        lab_result_verdict(r, 0, "random cosine small %.4f ragged %.4f large %.4f, all-ones %.6f, %zu non-finite; "
                           "on %s: %s", cos_shape[0], cos_shape[1], cos_shape[2], cos_ones, nonfinite, failed_on,
                           diag.text);
    } else if (mismatch) {
        lab_result_verdict(r, 0, "%zu GPU outputs differ bit for bit from the CPU's on the same inputs", mismatch);
    } else {
        lab_result_verdict(r, 0, "outputs off the golden of seed %llu: error %.3g of the bound",
                           (unsigned long long)seed, golden_eob);
    }
    return LAB_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* Variants                                                                                        */

/* The fold workloads of a group: its ragged and large random workloads (nvfp4_fold_case scales them). */
static const size_t nv_fold_wi[] = {0, 2};
#define NV_NFOLD (sizeof nv_fold_wi / sizeof nv_fold_wi[0])

/* The fold case of a group: folded (bug) or with the global scales as alpha (the fix's own check). */
static lab_status nv_fold_group(const nv_group *g, uint64_t seed, int fold, nvfp4_fold_gemm_fn gemm,
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
    lab_status st = nv_case_group(c->group, c->seed, kind, gemm, cpu_check, namer, c->golden_dir, r);
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
    const nv_group *g = c->group;
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
#define NV_RUN_CUDA nv_run_cuda
#define NV_BENCH nvfp4_sf_bench
#else
#define NV_RUN_CUDA NULL
/* Without CUDA the bench is still listed and says why it cannot run, as 0002's and 0008's do. */
static lab_status nv_bench_no_cuda(FILE *out)
{
    (void)out;
    return lab_err_set(LAB_ERR_UNSUPPORTED, "0003 bench: this build has no CUDA (nvcc missing or CUDA=0)");
}
#define NV_BENCH nv_bench_no_cuda
#endif

/* ---------------------------------------------------------------------------------------------- */
/* Figure: cosine per seed, bug and fix, all-ones and random data                                   */

static const char *const nv_fig_variants[] = {"fix", "bug-size-not-cosize", "bug-mk-swap"};
#define NV_FIG_NAN_Y (-0.5)

static lab_status nv_figures(const lab_figure_ctx *fx)
{
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
    .id = NVFP4_SF_ID,
    .title = "NVFP4 block-scale-factor layout: size vs cosize, and M/K swapped in the remap",
    .summary =
        "An NVFP4 mixture-of-experts GEMM gave outputs uncorrelated with a dequantized reference. The E4M3 block "
        "scales were remapped from row-major (M, K/16) into the 128x4-tile layout the block-scaled tensor-core "
        "GEMM reads, and the remap had two faults: its loop ran to the layout's logical size, not its physical "
        "cosize, so tile padding stayed stale; and it took M and K the wrong way round when locating a scale in "
        "the source. All-ones test data hid both (every scale is the same byte). The lab replays the write-up's "
        "(1, 32, 32) case, a ragged (200, 96, 592) and a (128, 64, 7168) slice of the production shape on random "
        "data with block magnitudes over 7 binades, and names the layout fault behind a failing output.",
    .variants = nvfp4_sf_variants,
    .n_variants = (int)(sizeof nvfp4_sf_variants / sizeof nvfp4_sf_variants[0]),
    .setup = nv_setup,
    .teardown = nv_teardown,
    .run_cpu = nv_run_cpu,
    .run_cuda = NV_RUN_CUDA,
    .plot_metric = "cos_random",
    .plot_log = 0,
    .timeout_s = 60,
    .golden_bless = nvfp4_sf_golden_bless,
    .drift_metric = "err_over_bound",
    .figures = nv_figures,
    .default_seeds = 78,
    .bench = NV_BENCH,
    .metric_specs = nv_metric_specs,
    .n_metric_specs = (int)(sizeof nv_metric_specs / sizeof nv_metric_specs[0]),
    .seed_cost = nv_seed_cost,
};

LAB_INCIDENT_REGISTER(nvfp4_sf_incident);
