/* test_bench: benchmarks as data: record lines parsed, the regression rule, `lab compare` on report folders whose bench sections differ (a planted performance regression is reported with exit 1, identical reports are quiet), bench.json attached to a report, `lab bench --json`; on a GPU, the deterministic CRF kernels give the same bits under any launch configuration and the fast NVFP4 remap the CPU's bytes on ragged shapes. */
#include <cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab_bench.h"
#include "lab_fs.h"
#include "tests/lab_test_sh.h"
#include "lab_test_case.h"
#ifdef LAB_HAVE_CUDA
#include "lab_nvfp4.h"
#include "lab_semicrf.h"
#endif

#define EXPECT_IN(out, s) cr_expect(strstr(out, s) != NULL, "expected \"%s\" in:\n%.4000s", s, out)

Test(bench, record_lines_parse)
{
    int is;
    cJSON *r = lab_bench_parse_line("lab-bench-record {\"name\":\"x B=1\",\"baseline\":\"copy\",\"fix\":\"f\",\"ratio\":1.1,"
                                    "\"ratio_lo\":1.0,\"ratio_hi\":1.2,\"target\":1.15,\"device\":\"d\"}", "0009-x", &is);
    cr_assert_not_null(r, "%s", lab_err_msg());
    cr_expect_eq(is, 1);
    cr_expect_str_eq(cJSON_GetObjectItem(r, "incident")->valuestring, "0009-x");
    cr_expect_float_eq(cJSON_GetObjectItem(r, "spread")->valuedouble, 0.2 / 2.2, 1e-12);
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(r, "target_met")));
    cJSON_Delete(r);
    cr_expect_null(lab_bench_parse_line("0002 remap: 1.0 ms", "0009-x", &is));
    cr_expect_eq(is, 0, "free text is not a record");
    cr_expect_null(lab_bench_parse_line("lab-bench-record {\"name\":\"x\",\"baseline\":\"b\",\"ratio\":-1}", "0009-x", &is));
    cr_expect_eq(is, 1);
    EXPECT_IN(lab_err_msg(), "ratio");
    cr_expect_null(lab_bench_parse_line("lab-bench-record {\"name\":", "0009-x", &is));
    cr_expect_eq(is, 1);
}

Test(bench, regression_rule)
{
    double thr;
    cr_expect_eq(lab_bench_judge(1.0, 0.01, 1.0, 0.01, &thr), 0);
    cr_expect_float_eq(thr, LAB_BENCH_NOISE_FLOOR, 1e-15, "small spreads: the noise floor");
    cr_expect_eq(lab_bench_judge(1.0, 0.0, 1.0 + LAB_BENCH_NOISE_FLOOR / 2, 0.0, NULL), 0, "within the floor");
    cr_expect_eq(lab_bench_judge(1.0, 0.0, 1.5, 0.0, NULL), 1);
    cr_expect_eq(lab_bench_judge(1.5, 0.0, 1.0, 0.0, NULL), -1);
    cr_expect_eq(lab_bench_judge(1.0, 0.2, 1.3, 0.2, &thr), 0, "a wide spread absorbs 30%%");
    cr_expect_float_eq(thr, 0.4, 1e-12);
    cr_expect_eq(lab_bench_judge(NAN, 0, 1.0, 0, NULL), 0);
}

/* A minimal report folder: one incident, one fix variant that passed, and a bench section of two records
 * (ratios r1, r2 with relative half-spreads; device dev). bench NULL-less: with_bench 0 leaves it out. */
static void write_report(const char *dir, int with_bench, double r1, double r2, const char *dev)
{
    cr_assert_eq(lab_fs_mkdirs(dir), LAB_OK);
    char path[4096], text[4096];
    char bench[2048] = "";
    if (with_bench)
        snprintf(bench, sizeof bench,
                 ",\"bench\":{\"schema\":\"" LAB_BENCH_SCHEMA "\",\"records\":["
                 "{\"incident\":\"0002-crf-atomic-drift\",\"name\":\"backward accumulation B=32\",\"fix\":\"deterministic\","
                 "\"baseline\":\"f32-atomic\",\"device\":\"%s\",\"ratio\":%.6g,\"ratio_lo\":%.6g,\"ratio_hi\":%.6g,\"spread\":0.01,"
                 "\"target\":1.15},"
                 "{\"incident\":\"0003-nvfp4-sf-layout\",\"name\":\"remap 294912x448\",\"fix\":\"remap\",\"baseline\":\"D2D cudaMemcpy\","
                 "\"device\":\"%s\",\"ratio\":%.6g,\"ratio_lo\":%.6g,\"ratio_hi\":%.6g,\"spread\":0.01,\"target\":1.25}]}",
                 dev, r1, r1 * 0.99, r1 * 1.01, dev, r2, r2 * 0.99, r2 * 1.01);
    snprintf(text, sizeof text,
             "{\"schema\":\"lab-report/1\",\"created\":\"2026-11-23T00:00:00Z\",\"summary\":{\"backend\":\"cuda\",\"cases\":4},"
             "\"incidents\":[{\"id\":\"0002-crf-atomic-drift\",\"variants\":[{\"name\":\"fix-deterministic\",\"role\":\"fix\","
             "\"seeds\":4,\"seed_first\":1,\"counts\":{\"PASS\":4},\"ok\":true,\"metrics\":{}}]}]%s}\n",
             bench);
    snprintf(path, sizeof path, "%s/report.json", dir);
    cr_assert_eq(lab_fs_write_atomic(path, text, strlen(text)), LAB_OK);
}

static char tmp_root[] = "/tmp/lab-test-bench-XXXXXX";

static void setup_tmp(void) { cr_assert_not_null(mkdtemp(tmp_root)); }
static void teardown_tmp(void)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
    cr_expect_eq(system(cmd), 0);
}

static int compare(const char *a, const char *b, char **out)
{
    char cmd[8192];
    char *abs = realpath(lab_test_bin(), NULL);
    cr_assert_not_null(abs, "%s not built (make builds it)", lab_test_bin());
    snprintf(cmd, sizeof cmd, "'%s' compare '%s/%s' '%s/%s'", abs, tmp_root, a, tmp_root, b);
    free(abs);
    return lab_test_sh(cmd, out);
}

Test(bench_compare, identical_reports_are_quiet, .init = setup_tmp, .fini = teardown_tmp)
{
    char a[4200], b[4200], *out;
    snprintf(a, sizeof a, "%s/a", tmp_root);
    snprintf(b, sizeof b, "%s/b", tmp_root);
    write_report(a, 1, 0.30, 1.10, "NVIDIA H100 80GB HBM3");
    write_report(b, 1, 0.30, 1.10, "NVIDIA H100 80GB HBM3");
    cr_expect_eq(compare("a", "b", &out), 0, "%s", out);
    EXPECT_IN(out, "benchmarks: 0 performance regressions, 0 faster, 2 same within spread");
    cr_expect_null(strstr(out, "PERF REGRESSION"), "%s", out);
    free(out);
}

Test(bench_compare, planted_regression_exits_1_with_ratios_side_by_side, .init = setup_tmp, .fini = teardown_tmp)
{
    char a[4200], b[4200], *out;
    snprintf(a, sizeof a, "%s/a", tmp_root);
    snprintf(b, sizeof b, "%s/b", tmp_root);
    write_report(a, 1, 0.30, 1.10, "NVIDIA H100 80GB HBM3");
    write_report(b, 1, 0.60, 1.12, "NVIDIA H100 80GB HBM3"); /* the deterministic fix got 2x slower */
    cr_expect_eq(compare("a", "b", &out), 1, "%s", out);
    EXPECT_IN(out, "PERF REGRESSION (+100.0%)");
    EXPECT_IN(out, "0.300 [0.297..0.303]");
    EXPECT_IN(out, "0.600 [0.594..0.606]");
    EXPECT_IN(out, "2.000");
    EXPECT_IN(out, "benchmarks: 1 performance regressions, 0 faster, 1 same within spread");
    EXPECT_IN(out, "REGRESSED");
    free(out);
    /* the other way round it is an improvement, exit 0 */
    cr_expect_eq(compare("b", "a", &out), 0, "%s", out);
    EXPECT_IN(out, "faster");
    free(out);
}

Test(bench_compare, small_moves_other_devices_and_missing_sections_do_not_fail, .init = setup_tmp, .fini = teardown_tmp)
{
    char a[4200], b[4200], c[4200], d[4200], *out;
    snprintf(a, sizeof a, "%s/a", tmp_root);
    snprintf(b, sizeof b, "%s/b", tmp_root);
    snprintf(c, sizeof c, "%s/c", tmp_root);
    snprintf(d, sizeof d, "%s/d", tmp_root);
    write_report(a, 1, 0.30, 1.10, "NVIDIA H100 80GB HBM3");
    write_report(b, 1, 0.31, 1.11, "NVIDIA H100 80GB HBM3"); /* +3%: under the noise floor */
    write_report(c, 1, 0.90, 2.00, "NVIDIA H200");            /* another GPU: shown, not judged */
    write_report(d, 0, 0, 0, "");                               /* a CPU report: no bench section */
    cr_expect_eq(compare("a", "b", &out), 0, "%s", out);
    EXPECT_IN(out, "same within spread");
    free(out);
    cr_expect_eq(compare("a", "c", &out), 0, "%s", out);
    EXPECT_IN(out, "not judged: devices differ");
    free(out);
    cr_expect_eq(compare("a", "d", &out), 0, "%s", out);
    EXPECT_IN(out, "only A has a bench section");
    free(out);
}

Test(bench_compare, bench_json_is_read_for_a_report_from_files, .init = setup_tmp, .fini = teardown_tmp)
{
    char path[4200];
    const char *text = "{\"schema\":\"" LAB_BENCH_SCHEMA "\",\"records\":[{\"incident\":\"0003-nvfp4-sf-layout\",\"name\":\"n\","
                       "\"baseline\":\"b\",\"ratio\":1.2}]}";
    snprintf(path, sizeof path, "%s/%s", tmp_root, LAB_BENCH_FILE);
    cr_assert_eq(lab_fs_write_atomic(path, text, strlen(text)), LAB_OK);
    cJSON *b = NULL;
    cr_expect_eq(lab_bench_read(tmp_root, 0, &b), LAB_OK, "%s", lab_err_msg());
    cr_assert_not_null(b);
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(b, "records")), 1);
    cJSON_Delete(b);
    /* an earlier run's file is left out */
    cr_expect_eq(lab_bench_read(tmp_root, time(NULL) + 3600, &b), LAB_OK);
    cr_expect_null(b);
    /* a malformed one is an error naming the file */
    cr_assert_eq(lab_fs_write_atomic(path, "{\"records\":3}", 13), LAB_OK);
    cr_expect_eq(lab_bench_read(tmp_root, 0, &b), LAB_ERR_FORMAT);
    cr_expect_null(b);
    EXPECT_IN(lab_err_msg(), LAB_BENCH_FILE);
}

/* `lab bench --json` prints a bench section that parses, whatever the machine (skips without a GPU; a build without
 * CUDA has no benchmarks: the section lists none, and the human output says why). */
Test(bench_cli, json_section, .timeout = 600)
{
    char cmd[4200], *out;
    char *abs = realpath(lab_test_bin(), NULL);
    cr_assert_not_null(abs);
    snprintf(cmd, sizeof cmd, "('%s' bench 0003 --json 2>/dev/null)", abs);
    char human[4200];
    snprintf(human, sizeof human, "('%s' bench 0003 2>&1)", abs);
    free(abs);
    int rc = lab_test_sh(cmd, &out);
    cJSON *s = cJSON_Parse(out);
    cr_assert_not_null(s, "not JSON:\n%s", out);
    cr_expect_str_eq(cJSON_GetObjectItem(s, "schema")->valuestring, LAB_BENCH_SCHEMA);
    cJSON *inc = cJSON_GetArrayItem(cJSON_GetObjectItem(s, "incidents"), 0);
#ifndef LAB_HAVE_CUDA
    cr_expect_null(inc, "%s", out);
    cr_expect_eq(rc, 0);
    cJSON_Delete(s);
    free(out);
    cr_expect_eq(lab_test_sh(human, &out), 0);
    EXPECT_IN(out, "this build has no CUDA");
    free(out);
    return;
#endif
    cr_assert_not_null(inc);
    const char *status = cJSON_GetObjectItem(inc, "status")->valuestring;
    if (!strcmp(status, "ok")) {
        cr_expect_eq(rc, 0);
        cr_expect_geq(cJSON_GetArraySize(cJSON_GetObjectItem(s, "records")), 1);
    } else {
        cr_expect_str_eq(status, "skipped", "%s", out);
        cr_expect_eq(rc, 0);
    }
    cJSON_Delete(s);
    free(out);
}

#ifdef LAB_HAVE_CUDA
/* The deterministic CRF accumulation does not depend on the launch configuration: the same bits with the
 * default grid, a tiny grid (grid-stride loops do most of the work), and other block sizes. */
Test(bench_gpu, semicrf_deterministic_same_bits_under_any_launch, .timeout = 300)
{
    lab_test_need_gpu();
    lab_semicrf_problem p;
    cr_assert_eq(lab_semicrf_problem_init(&p, 8, 200, LAB_SEMICRF_K_MAX, LAB_SEMICRF_C, 1), LAB_OK);
    lab_semicrf_problem_fill(&p, 7);
    lab_semicrf_config cfg = {LAB_SEMICRF_LAYOUT_PADDED, LAB_SEMICRF_ACC_DETERMINISTIC, LAB_SEMICRF_GUARDS_ALL, 7, 0};
    static const char *const launches[] = {"256,0", "64,3", "512,0", "96,1", "32,1000"};
    lab_semicrf_out first;
    unsetenv("LAB_SEMICRF_DET_LAUNCH");
    cr_assert_eq(lab_semicrf_cuda_run(&p, &cfg, 1, &first, NULL), LAB_OK, "%s", lab_err_msg());
    for (size_t i = 0; i < sizeof launches / sizeof *launches; ++i) {
        setenv("LAB_SEMICRF_DET_LAUNCH", launches[i], 1);
        lab_semicrf_out o;
        cr_assert_eq(lab_semicrf_cuda_run(&p, &cfg, 2, &o, NULL), LAB_OK, "%s: %s", launches[i], lab_err_msg());
        lab_semicrf_r2r d;
        lab_semicrf_run_to_run(&p, &first, &o, &d);
        cr_expect_eq(d.n_diff, 0u, "launch %s: %zu values differ (max %.3g)", launches[i], d.n_diff, d.max);
        lab_semicrf_out_free(&o);
    }
    setenv("LAB_SEMICRF_DET_LAUNCH", "100,0", 1);
    lab_semicrf_out bad;
    cr_expect_eq(lab_semicrf_cuda_run(&p, &cfg, 1, &bad, NULL), LAB_ERR_ARG, "threads not a multiple of 32");
    unsetenv("LAB_SEMICRF_DET_LAUNCH");
    lab_semicrf_out_free(&first);
    lab_semicrf_problem_free(&p);
}

/* The tiled NVFP4 remap writes the CPU remap's bytes, and the one-word-per-thread kernel's, on ragged shapes (M
 * not a multiple of 128, K_sf not a multiple of 4 or 16, one row, a misaligned source), every byte of a
 * poisoned layout. */
Test(bench_gpu, nvfp4_tiled_remap_equals_cpu_on_ragged_shapes, .timeout = 300)
{
    lab_test_need_gpu();
    static const size_t shapes[][3] = {{1, 1, 0},    {1, 37, 0},   {127, 4, 0},   {129, 16, 0}, {200, 37, 0},
                                       {257, 450, 0}, {300, 64, 0}, {1000, 448, 0}, {131, 3, 0},  {513, 452, 0},
                                       {1000, 448, 1}, {200, 37, 1}, {129, 68, 0},  {4097, 80, 0}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; ++i) {
        size_t rows = shapes[i][0], k_sf = shapes[i][1], off = shapes[i][2], n = rows * k_sf;
        size_t cos = lab_nvfp4_sf_cosize(rows, k_sf);
        uint8_t *src = malloc(n + 1), *want = malloc(cos), *got = malloc(cos), *words = malloc(cos);
        cr_assert(src && want && got && words);
        for (size_t j = 0; j < n + 1; ++j) src[j] = (uint8_t)(j * 2654435761u >> 24);
        memset(want, 0xEE, cos);
        cr_assert_eq(lab_nvfp4_sf_remap(src + off, rows, k_sf, want, cos, LAB_NVFP4_REMAP_FIX), LAB_OK, "%s", lab_err_msg());
        cr_assert_eq(lab_nvfp4_cuda_sf_remap_host(src, rows, k_sf, off, got, 0), LAB_OK, "%s", lab_err_msg());
        cr_assert_eq(lab_nvfp4_cuda_sf_remap_host(src, rows, k_sf, off, words, 1), LAB_OK, "%s", lab_err_msg());
        size_t differ = 0, differ_words = 0;
        for (size_t j = 0; j < cos; ++j) differ += got[j] != want[j], differ_words += got[j] != words[j];
        cr_expect_eq(differ, 0u, "(%zu, %zu) src offset %zu: %zu of %zu layout bytes differ from the CPU remap", rows, k_sf, off,
                     differ, cos);
        cr_expect_eq(differ_words, 0u, "(%zu, %zu) src offset %zu: %zu of %zu layout bytes differ from the word kernel", rows,
                     k_sf, off, differ_words, cos);
        free(src);
        free(want);
        free(got);
        free(words);
    }
}
#endif

#ifdef LAB_HAVE_CUDA
/* The production deterministic kernels give the previous kernels' bits, every gradient value, on the shapes of
 * every incident that runs them (0002: B = 2, T = 100, 200, 500, K = 30, C = 39, with and without projections),
 * on the bench's shapes, in a seed batch, and under a launch configuration far from the default. */
Test(bench_gpu, semicrf_deterministic_same_bits_as_the_previous_kernels, .timeout = 600)
{
    lab_test_need_gpu();
    static const int shapes[][5] = {{2, 100, LAB_SEMICRF_K_MAX, LAB_SEMICRF_C, 1}, {2, 200, LAB_SEMICRF_K_MAX, LAB_SEMICRF_C, 1},
                                    {2, 500, LAB_SEMICRF_K_MAX, LAB_SEMICRF_C, 1}, {2, 200, LAB_SEMICRF_K_MAX, LAB_SEMICRF_C, 0},
                                    {8, 200, LAB_SEMICRF_K_MAX, LAB_SEMICRF_C, 1}, {32, 500, LAB_SEMICRF_K_MAX, LAB_SEMICRF_C, 1},
                                    {64, 300, 10, LAB_SEMICRF_C_PAD, 1},            {3, 7, 5, 1, 1}};
    static const char *const launches[] = {NULL, "32,1000"};
    lab_semicrf_config cfg = {LAB_SEMICRF_LAYOUT_PADDED, LAB_SEMICRF_ACC_DETERMINISTIC, LAB_SEMICRF_GUARDS_ALL, 5, 0};
    for (size_t l = 0; l < sizeof launches / sizeof *launches; ++l) {
        if (launches[l]) setenv("LAB_SEMICRF_DET_LAUNCH", launches[l], 1);
        else unsetenv("LAB_SEMICRF_DET_LAUNCH");
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; ++i) {
            lab_semicrf_problem p;
            cr_assert_eq(lab_semicrf_problem_init(&p, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], shapes[i][4]), LAB_OK);
            lab_semicrf_problem_fill(&p, 11 + i);
            lab_semicrf_out now, prev;
            cr_assert_eq(lab_semicrf_cuda_run(&p, &cfg, 1, &now, NULL), LAB_OK, "%s", lab_err_msg());
            cr_assert_eq(lab_semicrf_cuda_run_det_previous(&p, &cfg, &prev), LAB_OK, "%s", lab_err_msg());
            lab_semicrf_r2r d;
            lab_semicrf_run_to_run(&p, &now, &prev, &d);
            cr_expect_eq(d.n_diff, 0u, "B=%d T=%d K=%d C=%d proj %d, launch %s: %zu of %zu values differ (max %.3g)", p.B, p.T, p.K,
                         p.C, p.use_proj, launches[l] ? launches[l] : "default", d.n_diff, d.n, d.max);
            lab_semicrf_out_free(&now);
            lab_semicrf_out_free(&prev);
            lab_semicrf_problem_free(&p);
        }
    }
    unsetenv("LAB_SEMICRF_DET_LAUNCH");
    /* a seed batch of 0002's shape: each problem the bits it has alone under the previous kernels */
    enum { NB = 3 };
    lab_semicrf_problem ps[NB];
    const lab_semicrf_problem *pp[NB];
    lab_semicrf_config cfgs[NB];
    lab_semicrf_out outs[NB];
    for (int q = 0; q < NB; ++q) {
        cr_assert_eq(lab_semicrf_problem_init(&ps[q], 2, 200, LAB_SEMICRF_K_MAX, LAB_SEMICRF_C, 1), LAB_OK);
        lab_semicrf_problem_fill(&ps[q], 40 + (uint64_t)q);
        pp[q] = &ps[q], cfgs[q] = cfg;
    }
    cr_assert_eq(lab_semicrf_cuda_run_batch(pp, cfgs, NB, outs), LAB_OK, "%s", lab_err_msg());
    for (int q = 0; q < NB; ++q) {
        lab_semicrf_out prev;
        cr_assert_eq(lab_semicrf_cuda_run_det_previous(&ps[q], &cfg, &prev), LAB_OK, "%s", lab_err_msg());
        lab_semicrf_r2r d;
        lab_semicrf_run_to_run(&ps[q], &outs[q], &prev, &d);
        cr_expect_eq(d.n_diff, 0u, "batch problem %d: %zu values differ", q, d.n_diff);
        lab_semicrf_out_free(&prev);
        lab_semicrf_out_free(&outs[q]);
        lab_semicrf_problem_free(&ps[q]);
    }
    lab_semicrf_config bad = cfg;
    bad.accum = LAB_SEMICRF_ACC_F32_ATOMIC;
    lab_semicrf_out o;
    lab_semicrf_problem p;
    cr_assert_eq(lab_semicrf_problem_init(&p, 1, 4, 2, 3, 0), LAB_OK);
    cr_expect_eq(lab_semicrf_cuda_run_det_previous(&p, &bad, &o), LAB_ERR_ARG);
    lab_semicrf_problem_free(&p);
}

/* The tiled remap gives the previous kernel's bytes (one word per thread) and the CPU remap's on the shapes of
 * every incident that remaps scales (0003: the A and B scales of its small, ragged, large and production GEMMs)
 * and on the bench's shapes, every byte of a poisoned layout. */
Test(bench_gpu, nvfp4_tiled_remap_same_bytes_on_incident_and_bench_shapes, .timeout = 600)
{
    lab_test_need_gpu();
    static const size_t shapes[][2] = {{1, 2},      {32, 2},     {200, 37},     {96, 37},      {128, 448},  {64, 448},
                                       {6144, 448}, {294912, 448}, {294911, 448}, {2097155, 37}, {200003, 450}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; ++i) {
        size_t rows = shapes[i][0], k_sf = shapes[i][1], n = rows * k_sf, cos = lab_nvfp4_sf_cosize(rows, k_sf);
        uint8_t *src = malloc(n), *want = malloc(cos), *got = malloc(cos), *words = malloc(cos);
        cr_assert(src && want && got && words);
        for (size_t j = 0; j < n; ++j) src[j] = (uint8_t)(j * 2654435761u >> 24);
        memset(want, 0xEE, cos);
        cr_assert_eq(lab_nvfp4_sf_remap(src, rows, k_sf, want, cos, LAB_NVFP4_REMAP_FIX), LAB_OK, "%s", lab_err_msg());
        cr_assert_eq(lab_nvfp4_cuda_sf_remap_host(src, rows, k_sf, 0, got, 0), LAB_OK, "%s", lab_err_msg());
        cr_assert_eq(lab_nvfp4_cuda_sf_remap_host(src, rows, k_sf, 0, words, 1), LAB_OK, "%s", lab_err_msg());
        size_t differ = 0, differ_words = 0;
        for (size_t j = 0; j < cos; ++j) differ += got[j] != want[j], differ_words += got[j] != words[j];
        cr_expect_eq(differ, 0u, "(%zu, %zu): %zu of %zu layout bytes differ from the CPU remap", rows, k_sf, differ, cos);
        cr_expect_eq(differ_words, 0u, "(%zu, %zu): %zu of %zu layout bytes differ from the word kernel", rows, k_sf, differ_words, cos);
        free(src);
        free(want);
        free(got);
        free(words);
    }
}
#endif
