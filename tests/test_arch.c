/* test_arch: the build's architecture rule (mk/cuda_arch.sh with a stand-in nvidia-smi and nvcc on PATH), the driver's
 * rule of what a GPU runs of a build (lab_arch_code_for), the one refusal message and its exit 3 before any case under
 * --backend cuda and auto (a stand-in probe, LAB_DEVICE_TEST_PROBE), the report's record of the GPU code, and lab
 * compare's warnings about JIT against native code, toolkits and a baseline older than its kernels. */
#include <cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lab_arch.h"
#include "lab_compare.h"
#include "lab_device.h"
#include "lab_fs.h"
#include "lab_incident.h"
#include "lab_json.h"
#include "lab_report.h"
#include "tests/lab_test_sh.h"

#define EXPECT_IN(out, s) cr_expect(strstr(out, s) != NULL, "expected \"%s\" in:\n%.4000s", s, out)

static char dir[96];

static void mk(void) { lab_test_tmpdir(dir, sizeof dir, "arch"); }
static void rm(void) { lab_test_rmtree(dir); }

/* Writes an executable shell script dir/bin/name with body. */
static void stand_in(const char *name, const char *body)
{
    char path[256];
    snprintf(path, sizeof path, "%s/bin", dir);
    cr_assert_eq(lab_fs_mkdirs(path), LAB_OK);
    snprintf(path, sizeof path, "%s/bin/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "#!/bin/sh\n%s\n", body);
    fclose(f);
    cr_assert_eq(chmod(path, 0755), 0);
}

/* A toolkit that builds sm_75 .. sm_120 (no sm_89: the fat list drops what the toolkit lacks). */
#define NVCC_BODY                                                                                                       \
    "case \"$1\" in --list-gpu-code) printf 'sm_75\\nsm_80\\nsm_86\\nsm_90\\nsm_100\\nsm_120\\n';; "                       \
    "--list-gpu-arch) printf 'compute_75\\ncompute_80\\ncompute_86\\ncompute_90\\ncompute_100\\ncompute_120\\n';; "      \
    "*) exit 1;; esac"

/* mk/cuda_arch.sh under PATH=dir/bin (the stand-ins first) with CUDA_ARCH=arch; its stdout (stderr too) in *out. */
static int rule(const char *arch, char **out)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "PATH='%s/bin':/usr/bin:/bin NVCC='%s/bin/nvcc' CUDA_ARCH='%s' mk/cuda_arch.sh", dir, dir, arch);
    int rc = lab_test_sh(cmd, out);
    char *nl = strrchr(*out, '\n');
    if (nl && !nl[1]) *nl = 0;
    return rc;
}

/* A GPU visible: its capabilities; none: the fat binary without what the toolkit lacks; CUDA_ARCH overrides. */
Test(arch, rule_fits_the_machine, .init = mk, .fini = rm)
{
    stand_in("nvcc", NVCC_BODY);
    char *out;
    stand_in("nvidia-smi", "echo 9.0");
    cr_expect_eq(rule("", &out), 0);
    cr_expect_str_eq(out, "sm_90 compute_90", "an H100 visible");
    free(out);
    stand_in("nvidia-smi", "echo 8.6; echo 9.0; echo 8.6");
    cr_expect_eq(rule("auto", &out), 0);
    cr_expect_str_eq(out, "sm_86 sm_90 compute_90", "an A10 and an H100: each once, PTX of the newest");
    free(out);
    stand_in("nvidia-smi", "echo 13.0");
    cr_expect_eq(rule("", &out), 0);
    cr_expect_str_eq(out, "compute_120", "a GPU newer than the toolkit: the newest PTX below it, JIT-compiled");
    free(out);
    stand_in("nvidia-smi", "echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver'; exit 9");
    cr_expect_eq(rule("", &out), 0);
    cr_expect_str_eq(out, "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120 compute_120", "no GPU: the fat binary, sm_89 dropped");
    free(out);
    cr_expect_eq(rule("sm_80", &out), 0);
    cr_expect_str_eq(out, "sm_80 compute_80", "CUDA_ARCH overrides, with its PTX as -arch= does");
    free(out);
    cr_expect_eq(rule("compute_80", &out), 0);
    cr_expect_str_eq(out, "compute_80", "PTX only");
    free(out);
    cr_expect_eq(rule("sm_75,sm_90", &out), 0);
    cr_expect_str_eq(out, "sm_75 sm_90 compute_90");
    free(out);
    cr_expect_eq(rule("sm_89", &out), 1);
    EXPECT_IN(out, "CUDA_ARCH: this toolkit");
    EXPECT_IN(out, "has no sm_89");
    free(out);
    cr_expect_eq(rule("hopper", &out), 1);
    EXPECT_IN(out, "CUDA_ARCH: 'hopper' is not sm_XY");
    free(out);
    cr_expect_eq(lab_test_sh("mk/cuda_arch.sh --flags sm_90 compute_80", &out), 0);
    EXPECT_IN(out, "-gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_80,code=compute_80");
    free(out);
}

/* The driver's rule: SASS of the same major up to the GPU's minor, else PTX at or below it, else nothing. */
Test(arch, what_a_gpu_runs)
{
    lab_arch_list l;
    int from;
    cr_assert_eq(lab_arch_parse("sm_75 sm_80 sm_86 sm_89 sm_90 sm_100 sm_120 compute_120", &l), LAB_OK);
    cr_expect_eq(lab_arch_code_for(&l, 90, &from), LAB_ARCH_NATIVE);
    cr_expect_eq(from, 90);
    cr_expect_eq(lab_arch_code_for(&l, 87, &from), LAB_ARCH_NATIVE, "an Orin runs sm_86");
    cr_expect_eq(from, 86);
    cr_expect_eq(lab_arch_code_for(&l, 103, &from), LAB_ARCH_NATIVE);
    cr_expect_eq(from, 100);
    cr_expect_eq(lab_arch_code_for(&l, 121, &from), LAB_ARCH_NATIVE);
    cr_expect_eq(lab_arch_code_for(&l, 130, &from), LAB_ARCH_JIT, "newer than the build: the PTX");
    cr_expect_eq(from, 120);
    cr_expect_eq(lab_arch_code_for(&l, 70, &from), LAB_ARCH_NONE, "older than Turing");

    cr_assert_eq(lab_arch_parse("sm_100 compute_100", &l), LAB_OK);
    cr_expect_eq(lab_arch_code_for(&l, 90, &from), LAB_ARCH_NONE, "a Blackwell build on an H100");
    cr_expect_eq(from, 0);
    cr_assert_eq(lab_arch_parse("compute_80", &l), LAB_OK);
    cr_expect_eq(lab_arch_code_for(&l, 90, &from), LAB_ARCH_JIT);
    cr_expect_eq(from, 80);
    cr_assert_eq(lab_arch_parse("sm_86", &l), LAB_OK);
    cr_expect_eq(lab_arch_code_for(&l, 80, NULL), LAB_ARCH_NONE, "SASS does not run on an older minor");
    cr_assert_eq(lab_arch_parse("sm_90a,compute_90a", &l), LAB_OK);
    cr_expect_eq(lab_arch_code_for(&l, 90, NULL), LAB_ARCH_NATIVE);
    cr_expect_eq(lab_arch_code_for(&l, 100, NULL), LAB_ARCH_NONE, "an architecture-specific target runs on its own only");
    cr_assert_eq(lab_arch_parse("", &l), LAB_OK);
    cr_expect_eq(l.n_sass + l.n_ptx, 0);
    cr_expect_eq(lab_arch_parse("sm_90 volta", &l), LAB_ERR_ARG);
    cr_expect(strstr(lab_err_msg(), "'volta'") != NULL, "%s", lab_err_msg());
    cr_expect_eq(lab_arch_parse("sm_9x", &l), LAB_ERR_ARG);
    cr_expect_str_eq(lab_arch_code_name(LAB_ARCH_JIT), "jit");
}

/* One message: the GPU, its capability, why, what the binary carries, the rebuild command. */
Test(arch, refusal_message)
{
    char m[1000];
    lab_arch_refusal(m, sizeof m, "0", "NVIDIA H100 80GB HBM3", 90, "sm_100 compute_100",
                     "no kernel image is available for execution on the device");
    EXPECT_IN(m, "GPU 0 (NVIDIA H100 80GB HBM3, compute capability 9.0)");
    EXPECT_IN(m, "no kernel image is available");
    EXPECT_IN(m, "The binary carries sm_100 compute_100");
    EXPECT_IN(m, "make clean && make CUDA_ARCH=sm_90");
    cr_expect_null(strchr(m, '\n'), "one line");
    lab_arch_refusal(m, sizeof m, "GPU-1234", "Tesla T4", 75, "", NULL);
    EXPECT_IN(m, "GPU GPU-1234 (Tesla T4, compute capability 7.5)");
    EXPECT_IN(m, "CUDA_ARCH=sm_75");
}

/* A build whose kernels do not load on the GPU: exit 3 before any case, within 5 s, with the one message, under
 * --backend cuda and auto (auto does not fall back to the CPU: it is a build to redo); --out is not made. */
Test(arch, refusal_exit_3_before_any_case, .init = mk, .fini = rm)
{
#ifndef LAB_HAVE_CUDA
    cr_skip("a build without CUDA has no GPU code to refuse");
#else
    static const char *const backends[] = {"cuda", "auto"};
    for (int i = 0; i < 2; ++i) {
        char cmd[1024], *out;
        snprintf(cmd, sizeof cmd,
                 "LAB_DEVICE_TEST_PROBE='NVIDIA H100 80GB HBM3;9.0;209' %s replay --backend %s --seeds 2 --out %s/out-%s",
                 lab_test_bin(), backends[i], dir, backends[i]);
        double t0 = lab_test_sh_now();
        int rc = lab_test_sh(cmd, &out);
        double t = lab_test_sh_now() - t0;
        cr_expect_eq(rc, 3, "--backend %s: %s", backends[i], out);
        cr_expect_lt(t, 5.0, "--backend %s took %.1f s", backends[i], t);
        EXPECT_IN(out, "this build cannot run on GPU 0 (NVIDIA H100 80GB HBM3, compute capability 9.0)");
        EXPECT_IN(out, "no kernel image is available for execution on the device");
        EXPECT_IN(out, "The binary carries ");
        EXPECT_IN(out, lab_arch_built());
        EXPECT_IN(out, "make clean && make CUDA_ARCH=sm_90");
        cr_expect_null(strstr(out, "backend auto: cpu"), "auto must not fall back: %s", out);
        char *second = strstr(out, "\n");
        cr_expect(second && !second[1], "one message, one line:\n%s", out);
        snprintf(cmd, sizeof cmd, "%s/out-%s", dir, backends[i]);
        struct stat sb;
        cr_expect_neq(stat(cmd, &sb), 0, "no result set for a refused replay");
        free(out);
    }
#endif
}

/* report.json's device.gpu.code: what the GPU ran of the carried architectures, toolkit and driver; build: the list and
 * the sources' digest. */
Test(arch, report_records_the_code)
{
#ifndef LAB_HAVE_CUDA
    cr_skip("a build without CUDA has no GPU code");
#else
    setenv("LAB_DEVICE_TEST_PROBE", "NVIDIA H100 80GB HBM3;9.0;0", 1);
    cJSON *c = lab_arch_json();
    cr_assert_not_null(c);
    lab_arch_list l;
    cr_assert_eq(lab_arch_parse(lab_arch_built(), &l), LAB_OK);
    int from;
    lab_arch_code want = lab_arch_code_for(&l, 90, &from);
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(c, "carried")), lab_arch_built());
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(c, "runs")), lab_arch_code_name(want));
    cr_expect(cJSON_IsString(cJSON_GetObjectItem(c, "toolkit")));
    cr_expect_neq(strlen(cJSON_GetStringValue(cJSON_GetObjectItem(c, "toolkit"))), 0, "nvcc's version");
    cr_expect(cJSON_HasObjectItem(c, "driver") && cJSON_HasObjectItem(c, "jit_warmup_s") && cJSON_HasObjectItem(c, "jit_cache"));
    cJSON_Delete(c);
    setenv("LAB_DEVICE_TEST_PROBE", "NVIDIA H100 80GB HBM3;9.0;209", 1);
    lab_device_gpu_facts f;
    lab_device_gpu_first(&f);
    cr_expect(f.usable && f.cc == 90 && f.load_error == 209, "the stand-in as the probe would report it");
    cJSON *b = lab_device_build_json();
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(b, "cuda_arch")), lab_arch_built());
    const char *dg = cJSON_GetStringValue(cJSON_GetObjectItem(b, "sources_digest"));
    cr_expect(dg && strlen(dg) == 16, "a digest of kernels/ and incidents/: '%s'", dg ? dg : "(none)");
    cJSON_Delete(b);
#endif
}

/* A report.json with what compare reads of the build and the GPU code. */
static void write_report(const char *d, const char *created, const char *runs, const char *from, const char *nvcc,
                         const char *digest, const char *commit)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "schema", LAB_REPORT_SCHEMA);
    cJSON_AddStringToObject(r, "created", created);
    cJSON *gpu = cJSON_AddObjectToObject(cJSON_AddObjectToObject(r, "device"), "gpu");
    cJSON_AddBoolToObject(gpu, "available", 1);
    cJSON_AddStringToObject(gpu, "name", "NVIDIA H100 80GB HBM3");
    cJSON *code = cJSON_AddObjectToObject(gpu, "code");
    cJSON_AddStringToObject(code, "runs", runs);
    cJSON_AddStringToObject(code, "from", from);
    cJSON *b = cJSON_AddObjectToObject(r, "build");
    cJSON_AddStringToObject(b, "commit", commit);
    cJSON_AddStringToObject(b, "nvcc_version", nvcc);
    if (digest) cJSON_AddStringToObject(b, "sources_digest", digest);
    cJSON *s = cJSON_AddObjectToObject(r, "summary");
    cJSON_AddStringToObject(s, "backend", "cuda");
    cJSON_AddNumberToObject(s, "cases", 1);
    cJSON *v = cJSON_CreateObject();
    cJSON_AddStringToObject(v, "name", "fix");
    cJSON_AddStringToObject(v, "role", "fix");
    cJSON_AddNumberToObject(v, "seeds", 1);
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(v, "counts"), "PASS", 1);
    cJSON_AddBoolToObject(v, "ok", 1);
    cJSON *inc = cJSON_CreateObject();
    cJSON_AddStringToObject(inc, "id", "9200-synthetic");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(inc, "variants"), v);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(r, "incidents"), inc);
    char path[256];
    snprintf(path, sizeof path, "%s/report.json", d);
    cr_assert_eq(lab_fs_mkdirs(d), LAB_OK);
    cr_assert_eq(lab_json_write_file(path, r, LAB_JSON_PRETTY), LAB_OK, "%s", lab_err_msg());
    cJSON_Delete(r);
}

/* Compares dir/a with dir/b in process: the text (caller frees) and the result. */
static lab_compare_result compare(char **text)
{
    char a[160], b[160];
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    lab_compare_opts o = {10, 0};
    lab_compare_result res;
    size_t len = 0;
    FILE *f = open_memstream(text, &len);
    cr_assert_eq(lab_compare_reports(a, b, &o, f, &res), LAB_OK, "%s", lab_err_msg());
    fclose(f);
    return res;
}

Test(arch, compare_warns_jit_toolkit_and_old_kernels, .init = mk, .fini = rm)
{
    char a[160], b[160], *out;
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    const char *t13 = "Cuda compilation tools, release 13.0, V13.0.88", *t12 = "Cuda compilation tools, release 12.8, V12.8.93";
    write_report(a, "2026-11-21T07:00:00Z", "native", "sm_90", t13, "1111111111111111", "aaaa");
    write_report(b, "2026-12-01T07:00:00Z", "native", "sm_90", t13, "1111111111111111", "bbbb");
    lab_compare_result r = compare(&out);
    cr_expect_null(strstr(out, "warning"), "same code, toolkit and sources: no warning:\n%s", out);
    cr_expect_not(r.failed);
    free(out);
    write_report(b, "2026-12-01T07:00:00Z", "jit", "compute_80", t12, "2222222222222222", "bbbb");
    r = compare(&out);
    EXPECT_IN(out, "warning: A's GPU ran native code (sm_90), B's jit code (compute_80)");
    EXPECT_IN(out, "warning: built by different CUDA toolkits");
    EXPECT_IN(out, "warning: the kernels or incidents changed between the reports");
    EXPECT_IN(out, "A, made 2026-11-21T07:00:00Z, measures other kernels than B does; remake it (make baselines)");
    cr_expect_not(r.failed, "warnings do not fail the comparison");
    free(out);
    write_report(a, "2026-11-21T07:00:00Z", "native", "sm_90", t13, NULL, "aaaa");
    write_report(b, "2026-12-01T07:00:00Z", "native", "sm_90", t13, "2222222222222222", "bbbb");
    r = compare(&out);
    EXPECT_IN(out, "warning: A records no digest of the kernels' and incidents' sources (made by commit aaaa");
    free(out);
}

/* A variant that needs a newer GPU SKIPs as needs-arch, an expected skip (never the replay's error). */
Test(arch, needs_arch_is_an_expected_skip)
{
    cr_expect_str_eq(lab_skip_class_name(LAB_SKIP_NEEDS_ARCH), "needs-arch");
    cr_expect(lab_skip_expected(LAB_SKIP_NEEDS_ARCH));
    cr_expect_not(lab_skip_expected(LAB_SKIP_MISSING));
}
