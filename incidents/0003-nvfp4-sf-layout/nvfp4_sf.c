/* nvfp4_sf: incident 0003's workloads (shapes, Philox inputs, stale memory), the seed's group, the layout case on any backend's GEMM and the criterion of the NVFP4 scale-factor layout incident. */
#include "nvfp4_sf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_fs.h"
#include "lab_golden.h"
#include "lab_metric.h"
#include "lab_rng.h"
#include "lab_tensor.h"

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
    if (!u) return lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": out of memory for block exponents");
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
        return lab_err_set(LAB_ERR_ARG, LAB_INCIDENT_ID ": shape index %d out of range", shape_index);
    w->shape = shape ? *shape : nvfp4_sf_shapes[shape_index];
    w->shape_index = shape_index;
    w->data = data;
    size_t m = w->shape.m, n = w->shape.n, k = w->shape.k;
    if (m == 0 || n == 0 || k == 0 || k % LAB_NVFP4_BLOCK != 0)
        return lab_err_set(LAB_ERR_ARG, LAB_INCIDENT_ID ": shape (%zu, %zu, %zu): k must be a positive multiple of 16", m,
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
        st = lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": out of memory for shape (%zu, %zu, %zu)", m, n, k);
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
        return lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": out of memory for the layouts");
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
    snprintf(m.incident, sizeof m.incident, "%s", LAB_INCIDENT_ID);
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

_Static_assert(NV_NWORK == NVFP4_SF_NWORK, "nvfp4_sf_group holds every workload of a case");

void nvfp4_sf_teardown(void *vg)
{
    nvfp4_sf_group *g = vg;
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
static lab_status nv_group_refs_cuda(nvfp4_sf_group *g, uint64_t seed, int check)
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
        if (!ref || !abs) st = lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": out of memory for %s", w->shape.name);
        else st = nvfp4_sf_reference(w, ref, abs);
        if (st == LAB_OK) {
            double x = lab_nvfp4_ref_disagreement(ref, abs, g->ref[wi], g->abs[wi], mn, w->shape.k);
            g->ref_check = wi == 0 ? x : nv_max(g->ref_check, x);
            if (!(x <= 1.0))
                st = lab_err_set(LAB_ERR_MISMATCH, LAB_INCIDENT_ID ": seed %llu, %s %s: the device's float64 reference is %.3g "
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
static lab_status nv_group_make(uint64_t seed, int device, int check, nvfp4_sf_group **out)
{
    nvfp4_sf_group *g = calloc(1, sizeof *g);
    if (!g) return lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": out of memory for the group of seed %llu",
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
        if (!g->ref[wi] || !g->abs[wi]) st = lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": out of memory for %s", w->shape.name);
        else if (!device) st = nvfp4_sf_reference(w, g->ref[wi], g->abs[wi]);
    }
#ifdef LAB_HAVE_CUDA
    if (st == LAB_OK && device) st = nv_group_refs_cuda(g, seed, check);
#else
    (void)check;
    if (st == LAB_OK && device) st = lab_err_set(LAB_ERR_UNSUPPORTED, LAB_INCIDENT_ID ": this build has no CUDA");
#endif
    if (st != LAB_OK) {
        nvfp4_sf_teardown(g);
        return st;
    }
    *out = g;
    return LAB_OK;
}

lab_status nvfp4_sf_setup(const lab_case *c, void **group)
{
    nvfp4_sf_group *g;
    /* on CUDA the references are the device's, and at the cross-check seeds also the CPU's, compared */
    int cuda = c->backend == LAB_BACKEND_CUDA;
    lab_status st = nv_group_make(c->seed, cuda, cuda && lab_case_xcheck(c), &g);
    if (st == LAB_OK) *group = g;
    return st;
}

lab_status nvfp4_sf_case(uint64_t seed, lab_nvfp4_remap_kind kind, nvfp4_sf_gemm_fn gemm, nvfp4_sf_gemm_fn cpu_check,
                         const char *golden_dir, lab_case_result *r)
{
    nvfp4_sf_group *g;
    lab_status st = nv_group_make(seed, 0, 0, &g);
    if (st != LAB_OK) return st;
    st = nvfp4_sf_case_group(g, seed, kind, gemm, cpu_check, lab_nvfp4_gemm, golden_dir, r);
    nvfp4_sf_teardown(g);
    return st;
}

/* One variant (kind) over the group's workloads: the kernel, then the judge against the shared reference. */
lab_status nvfp4_sf_case_group(const nvfp4_sf_group *g, uint64_t seed, lab_nvfp4_remap_kind kind, nvfp4_sf_gemm_fn gemm,
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
            st = lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": out of memory for %s", w.shape.name);
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
