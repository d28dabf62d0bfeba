/* test_tensor: lab_tensor's .npy writer and parser: round trips, numpy's exact layout, errors, numpy interop. */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab_fs.h"
#include "lab_tensor.h"

/* Debian's interpreter with python3-numpy; the first python3 on PATH may lack numpy. */
#define TT_PY "/usr/bin/python3"

static const lab_dtype tt_all_dtypes[] = {LAB_DT_F4, LAB_DT_F8, LAB_DT_U1, LAB_DT_U2, LAB_DT_I4, LAB_DT_BF16};
#define TT_NDT (sizeof tt_all_dtypes / sizeof tt_all_dtypes[0])

/* Message check that shows the message on failure. */
#define tt_assert_msg_has(needle)                                                                        \
    cr_assert(strstr(lab_err_msg(), (needle)) != NULL, "message \"%s\" lacks \"%s\"", lab_err_msg(), (needle))
#define tt_assert_msg_starts(prefix)                                                                     \
    cr_assert(strncmp(lab_err_msg(), (prefix), strlen(prefix)) == 0, "message \"%s\" does not start with \"%s\"", \
              lab_err_msg(), (prefix))

/* Element i of the test pattern, as numpy computes it in tt_py_values (all values exact in the dtype). */
static void tt_fill(lab_tensor *t)
{
    for (size_t i = 0; i < t->numel; ++i) {
        switch (t->dtype) {
        case LAB_DT_F4: ((float *)t->data)[i] = (float)(i % 97) * 0.25f - 7.0f; break;
        case LAB_DT_F8: ((double *)t->data)[i] = (double)(i % 1009) * 0.125 - 60.5; break;
        case LAB_DT_U1: ((uint8_t *)t->data)[i] = (uint8_t)((i * 7 + 3) % 256); break;
        case LAB_DT_U2:
        case LAB_DT_BF16: ((uint16_t *)t->data)[i] = (uint16_t)((i * 257 + 11) % 65536); break;
        case LAB_DT_I4: ((int32_t *)t->data)[i] = (int32_t)((int64_t)(i % 1000) * 100003 - 50000000); break;
        }
    }
}

/* The same pattern as a Python expression of the flat index array `i` (numpy int64). */
static const char *tt_py_values(lab_dtype dt)
{
    switch (dt) {
    case LAB_DT_F4: return "((i % 97).astype(np.float32) * np.float32(0.25) - np.float32(7.0)).astype('<f4')";
    case LAB_DT_F8: return "((i % 1009).astype(np.float64) * 0.125 - 60.5).astype('<f8')";
    case LAB_DT_U1: return "((i * 7 + 3) % 256).astype('|u1')";
    case LAB_DT_U2:
    case LAB_DT_BF16: return "((i * 257 + 11) % 65536).astype('<u2')";
    case LAB_DT_I4: return "((i % 1000) * 100003 - 50000000).astype('<i4')";
    }
    return "None";
}

/* Creates a filled tensor; asserts on failure. */
static void tt_make(lab_tensor *t, lab_dtype dt, int ndim, const size_t *shape)
{
    cr_assert_eq(lab_tensor_create(t, dt, ndim, shape), LAB_OK, "create: %s", lab_err_msg());
    tt_fill(t);
}

/* Asserts a and b have the same stored dtype, shape and bytes. */
static void tt_assert_same(const lab_tensor *a, const lab_tensor *b, lab_dtype stored)
{
    cr_assert_eq(b->dtype, stored, "dtype %s, expected %s", lab_dtype_name(b->dtype), lab_dtype_name(stored));
    cr_assert_eq(a->ndim, b->ndim);
    for (int d = 0; d < a->ndim; ++d) cr_assert_eq(a->shape[d], b->shape[d], "dim %d", d);
    cr_assert_eq(a->numel, b->numel);
    size_t nb = a->numel * lab_dtype_size(a->dtype);
    cr_assert(nb == 0 || memcmp(a->data, b->data, nb) == 0, "data differs");
}

static int tt_rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    return remove(p);
}

/* Removes a directory tree made by tt_tmpdir. */
static void tt_rmrf(const char *dir) { nftw(dir, tt_rm_cb, 16, FTW_DEPTH | FTW_PHYS); }

/* mkdtemp under /tmp; asserts on failure. */
static void tt_tmpdir(char out[64])
{
    snprintf(out, 64, "/tmp/lab-test-npy-XXXXXX");
    cr_assert_not_null(mkdtemp(out), "mkdtemp failed");
}

/* 1 if /usr/bin/python3 imports numpy. */
static int tt_have_numpy(void)
{
    return access(TT_PY, X_OK) == 0 && system(TT_PY " -c 'import numpy' >/dev/null 2>&1") == 0;
}

/* Writes script into dir/name.py and runs it with dir as argv[1]; returns its exit status. */
static int tt_run_py(const char *dir, const char *script)
{
    char path[256], cmd[512];
    snprintf(path, sizeof path, "%s/check.py", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(script, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, TT_PY " %s %s", path, dir);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

/* Builds a .npy image: magic, version major.0, header `dict` padded with spaces plus '\n' to a multiple
 * of 64 (as numpy does), then `payload` bytes of 0xAB. Caller frees. */
static uint8_t *tt_build(int major, const char *dict, size_t payload, size_t *len)
{
    size_t pre = major == 1 ? 10 : 12, dl = strlen(dict);
    size_t hl = dl + 1;
    size_t pad = (64 - (pre + hl) % 64) % 64;
    size_t total = pre + hl + pad + payload;
    uint8_t *b = malloc(total);
    cr_assert_not_null(b);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (uint8_t)major;
    b[7] = 0;
    size_t h = hl + pad;
    b[8] = h & 0xFF;
    b[9] = (h >> 8) & 0xFF;
    if (major != 1) {
        b[10] = (h >> 16) & 0xFF;
        b[11] = (h >> 24) & 0xFF;
    }
    memcpy(b + pre, dict, dl);
    memset(b + pre + dl, ' ', pad);
    b[pre + dl + pad] = '\n';
    memset(b + pre + hl + pad, 0xAB, payload);
    *len = total;
    return b;
}

/* Parses a built image and expects LAB_ERR_FORMAT with a message starting "t.npy: " and holding needle. */
static void tt_expect_bad(const uint8_t *b, size_t len, const char *needle)
{
    lab_tensor t;
    lab_status st = lab_npy_parse(b, len, "t.npy", &t);
    cr_assert_eq(st, LAB_ERR_FORMAT, "expected format error with \"%s\", got %s (%s)", needle,
                 lab_status_name(st), lab_err_msg());
    tt_assert_msg_starts("t.npy: ");
    tt_assert_msg_has(needle);
    cr_assert_null(t.data, "failed parse left data allocated");
    lab_tensor_free(&t);
}

/* Builds from a dict and expects the failure. */
static void tt_expect_bad_dict(const char *dict, size_t payload, const char *needle)
{
    size_t len;
    uint8_t *b = tt_build(1, dict, payload, &len);
    tt_expect_bad(b, len, needle);
    free(b);
}

/* --------------------------------------------------------------------------------- round trips */

Test(npy, dtype_names)
{
    for (size_t k = 0; k < TT_NDT; ++k) {
        lab_dtype dt;
        cr_assert_eq(lab_dtype_parse(lab_dtype_name(tt_all_dtypes[k]), &dt), LAB_OK);
        cr_assert_eq(dt, tt_all_dtypes[k]);
    }
    cr_assert_eq(lab_dtype_size(LAB_DT_F8), 8);
    cr_assert_eq(lab_dtype_size(LAB_DT_BF16), 2);
    cr_assert_str_eq(lab_dtype_npy_descr(LAB_DT_BF16), "<u2");
    cr_assert_str_eq(lab_dtype_npy_descr(LAB_DT_U1), "|u1");
    lab_dtype dt;
    cr_assert_eq(lab_dtype_parse("f16", &dt), LAB_ERR_FORMAT);
    tt_assert_msg_has("'f16'");
}

Test(npy, create_rejects_bad_args)
{
    lab_tensor t;
    size_t sh[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    cr_assert_eq(lab_tensor_create(&t, LAB_DT_F4, 9, sh), LAB_ERR_ARG);
    cr_assert_eq(lab_tensor_create(&t, LAB_DT_F4, -1, sh), LAB_ERR_ARG);
    size_t huge[2] = {(size_t)1 << 40, (size_t)1 << 30};
    cr_assert_eq(lab_tensor_create(&t, LAB_DT_F8, 2, huge), LAB_ERR_ARG);
    cr_assert_null(t.data);
    cr_assert_eq(lab_tensor_create(&t, LAB_DT_F4, 0, NULL), LAB_OK);
    cr_assert_eq(t.numel, 1);
    lab_tensor_free(&t);
    lab_tensor_free(&t); /* twice is fine */
}

Test(npy, round_trip_every_dtype_and_rank)
{
    const size_t shapes[][3] = {{0, 0, 0}, {7, 0, 0}, {3, 5, 0}, {2, 0, 4}, {2, 3, 4}};
    const int ndims[] = {0, 1, 2, 3, 3};
    for (size_t k = 0; k < TT_NDT; ++k) {
        for (size_t s = 0; s < sizeof ndims / sizeof ndims[0]; ++s) {
            lab_tensor a, b;
            tt_make(&a, tt_all_dtypes[k], ndims[s], shapes[s]);
            uint8_t *buf;
            size_t len;
            cr_assert_eq(lab_npy_encode(&a, &buf, &len), LAB_OK, "%s", lab_err_msg());
            cr_assert_eq(lab_npy_parse(buf, len, "rt.npy", &b), LAB_OK, "%s", lab_err_msg());
            lab_dtype stored = tt_all_dtypes[k] == LAB_DT_BF16 ? LAB_DT_U2 : tt_all_dtypes[k];
            tt_assert_same(&a, &b, stored);
            free(buf);
            lab_tensor_free(&a);
            lab_tensor_free(&b);
        }
    }
}

Test(npy, write_read_file)
{
    char dir[64], path[128];
    tt_tmpdir(dir);
    snprintf(path, sizeof path, "%s/a.npy", dir);
    size_t sh[2] = {33, 17};
    lab_tensor a, b;
    tt_make(&a, LAB_DT_F8, 2, sh);
    cr_assert_eq(lab_npy_write(path, &a), LAB_OK, "%s", lab_err_msg());
    cr_assert_eq(lab_npy_read(path, &b), LAB_OK, "%s", lab_err_msg());
    tt_assert_same(&a, &b, LAB_DT_F8);
    lab_tensor_free(&b);
    snprintf(path, sizeof path, "%s/none.npy", dir);
    cr_assert_eq(lab_npy_read(path, &b), LAB_ERR_IO);
    tt_assert_msg_has(path);
    lab_tensor_free(&a);
    tt_rmrf(dir);
}

/* ------------------------------------------------------------------------------ numpy's layout */

Test(npy, header_layout_matches_numpy_4096x1024)
{
    /* What numpy 1.24+ writes for np.zeros((4096, 1024), '<f4'): the dict, 21 - len("4096") spare
     * spaces, padding to 128 bytes, '\n'. */
    static const char dict[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (4096, 1024), }";
    lab_tensor t;
    size_t sh[2] = {4096, 1024};
    cr_assert_eq(lab_tensor_create(&t, LAB_DT_F4, 2, sh), LAB_OK);
    uint8_t *b;
    size_t len;
    cr_assert_eq(lab_npy_encode(&t, &b, &len), LAB_OK);
    cr_assert_eq(len, 128 + 4096 * 1024 * 4);
    cr_assert(memcmp(b, "\x93NUMPY\x01\x00", 8) == 0);
    cr_assert_eq(b[8] | b[9] << 8, 118, "header length field %d", b[8] | b[9] << 8);
    cr_assert(memcmp(b + 10, dict, sizeof dict - 1) == 0, "dict differs: %.70s", (const char *)b + 10);
    for (size_t i = 10 + sizeof dict - 1; i < 127; ++i) cr_assert_eq(b[i], ' ', "byte %zu is 0x%02x", i, b[i]);
    cr_assert_eq(b[127], '\n');
    free(b);
    lab_tensor_free(&t);
}

Test(npy, header_layout_1d_0d_and_alignment)
{
    lab_tensor t;
    uint8_t *b;
    size_t len;
    size_t five = 5;
    cr_assert_eq(lab_tensor_create(&t, LAB_DT_U1, 1, &five), LAB_OK);
    cr_assert_eq(lab_npy_encode(&t, &b, &len), LAB_OK);
    static const char d1[] = "{'descr': '|u1', 'fortran_order': False, 'shape': (5,), }";
    cr_assert(memcmp(b + 10, d1, sizeof d1 - 1) == 0, "1-d dict: %.60s", (const char *)b + 10);
    cr_assert_eq(len, 128 + 5);
    free(b);
    lab_tensor_free(&t);

    cr_assert_eq(lab_tensor_create(&t, LAB_DT_F8, 0, NULL), LAB_OK);
    cr_assert_eq(lab_npy_encode(&t, &b, &len), LAB_OK);
    static const char d0[] = "{'descr': '<f8', 'fortran_order': False, 'shape': (), }";
    cr_assert(memcmp(b + 10, d0, sizeof d0 - 1) == 0, "0-d dict: %.60s", (const char *)b + 10);
    cr_assert_eq(len, 128 + 8);
    free(b);
    lab_tensor_free(&t);

    /* Ranks 1..8 with dimensions of growing width (zero-size, so no data): the header is a multiple of
     * 64 bytes, ends in '\n' and parses back to the same shape. */
    static const size_t widths[] = {1, 12345, (size_t)1 << 40, 1000000000000ull};
    for (int nd = 1; nd <= LAB_TENSOR_MAXDIM; ++nd) {
        for (size_t w = 0; w < sizeof widths / sizeof widths[0]; ++w) {
            lab_tensor z = {.dtype = LAB_DT_F4, .ndim = nd, .numel = 0, .data = NULL};
            for (int d = 0; d < nd; ++d) z.shape[d] = d == 0 ? widths[w] : 2; /* numpy's size limit */
            z.shape[nd - 1] = 0;
            cr_assert_eq(lab_npy_encode(&z, &b, &len), LAB_OK, "%s", lab_err_msg());
            size_t h = (size_t)b[8] | (size_t)b[9] << 8;
            cr_assert_eq((10 + h) % 64, 0, "nd %d w %zu: header %zu not aligned", nd, w, h);
            cr_assert_eq(len, 10 + h);
            cr_assert_eq(b[10 + h - 1], '\n');
            lab_tensor back;
            cr_assert_eq(lab_npy_parse(b, len, "z.npy", &back), LAB_OK, "%s", lab_err_msg());
            cr_assert_eq(back.ndim, nd);
            for (int d = 0; d < nd; ++d) cr_assert_eq(back.shape[d], z.shape[d]);
            lab_tensor_free(&back);
            free(b);
        }
    }
}

Test(npy, encode_rejects_inconsistent_tensor)
{
    size_t sh[1] = {4};
    lab_tensor t;
    cr_assert_eq(lab_tensor_create(&t, LAB_DT_F4, 1, sh), LAB_OK);
    t.numel = 5;
    uint8_t *b;
    size_t len;
    cr_assert_eq(lab_npy_encode(&t, &b, &len), LAB_ERR_ARG);
    tt_assert_msg_has("numel");
    t.numel = 4;
    lab_tensor_free(&t);
}

/* ------------------------------------------------------------------------------------- errors */

Test(npy, error_bad_magic)
{
    static const uint8_t png[] = "\x89PNG\r\n\x1a\n0000000000000000";
    tt_expect_bad(png, sizeof png - 1, "bad magic");
    tt_expect_bad(png, 0, "bad magic");
    tt_expect_bad((const uint8_t *)"\x93NUMP", 5, "bad magic");
}

Test(npy, error_bad_version)
{
    size_t len;
    uint8_t *b = tt_build(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 4, &len);
    b[6] = 3;
    tt_expect_bad(b, len, "unsupported .npy version 3.0");
    b[6] = 1;
    b[7] = 1;
    tt_expect_bad(b, len, "version 1.1");
    free(b);
    tt_expect_bad((const uint8_t *)"\x93NUMPY\x01", 7, "truncated");
    tt_expect_bad((const uint8_t *)"\x93NUMPY\x02\x00\x10\x00\x00", 11, "truncated");
}

Test(npy, error_header_length_past_buffer)
{
    size_t len;
    uint8_t *b = tt_build(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 4, &len);
    b[8] = 0xFF;
    b[9] = 0xFF;
    tt_expect_bad(b, len, "header length 65535 runs past the end");
    free(b);
    b = tt_build(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 4, &len);
    b[11] = 0x80;
    tt_expect_bad(b, len, "runs past the end");
    free(b);
}

Test(npy, error_truncated_payload)
{
    tt_expect_bad_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", 12,
                       "truncated: expected 16 bytes of data, got 12");
    tt_expect_bad_dict("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 0,
                       "truncated: expected 8 bytes of data, got 0");
    /* A real file cut short by one byte. */
    size_t sh[1] = {3};
    lab_tensor t;
    tt_make(&t, LAB_DT_I4, 1, sh);
    uint8_t *b;
    size_t len;
    cr_assert_eq(lab_npy_encode(&t, &b, &len), LAB_OK);
    tt_expect_bad(b, len - 1, "truncated: expected 12 bytes of data, got 11");
    tt_expect_bad(b, 100, "header length 118 runs past the end");
    free(b);
    lab_tensor_free(&t);
}

Test(npy, error_trailing_bytes)
{
    tt_expect_bad_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", 17,
                       "trailing bytes: expected 16 bytes of data, got 17");
    tt_expect_bad_dict("{'descr': '|u1', 'fortran_order': False, 'shape': (0,), }", 1, "trailing bytes");
}

Test(npy, error_fortran_order)
{
    tt_expect_bad_dict("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16, "fortran_order True");
    tt_expect_bad_dict("{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 2), }", 16, "fortran_order must be");
}

Test(npy, error_unknown_descr)
{
    tt_expect_bad_dict("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16, "unsupported descr '<c8'");
    tt_expect_bad_dict("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8, "big-endian descr '>f4'");
    tt_expect_bad_dict("{'descr': '|i1', 'fortran_order': False, 'shape': (2,), }", 2, "unsupported descr '|i1'");
    tt_expect_bad_dict("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8,
                       "expected a quoted string for 'descr'");
}

Test(npy, error_shape_overflow_and_bad_shapes)
{
    tt_expect_bad_dict("{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }", 0,
                       "shape overflows");
    tt_expect_bad_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }", 0,
                       "shape overflows");
    /* numpy refuses these too: the non-zero dimensions overflow even though the array is empty */
    tt_expect_bad_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4611686018427387904, 4), }", 0,
                       "shape overflows");
    tt_expect_bad_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }", 0,
                       "dimension 0 overflows size_t");
    tt_expect_bad_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (3, -1), }", 0, "negative dimension");
    tt_expect_bad_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (3), }", 12, "not a tuple");
    tt_expect_bad_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", 4,
                       "more than 8 dimensions");
    tt_expect_bad_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (3,,), }", 12, "expected a dimension");
    tt_expect_bad_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (3.5,), }", 12, "expected ',' or ')'");
}

Test(npy, error_bad_dict)
{
    tt_expect_bad_dict("{'descr': '<f4', 'shape': (2,), }", 8, "missing key 'fortran_order'");
    tt_expect_bad_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'shape': (2,)}", 8,
                       "duplicate key 'shape'");
    tt_expect_bad_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8, "unexpected key 'x'");
    tt_expect_bad_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", 8, "expected ',' or '}'");
    tt_expect_bad_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x", 8, "after the dict");
    tt_expect_bad_dict("['descr']", 8, "expected '{'");
    tt_expect_bad_dict("{'descr\\'': '<f4'}", 8, "escape");
}

Test(npy, lenient_header_forms)
{
    /* keys in any order, extra whitespace, double quotes, '<u1', no trailing comma, v2.0 prefix */
    static const char *dicts[] = {
        "{'shape': (2, 3), 'fortran_order': False, 'descr': '<u1'}",
        "{  \"descr\" :\t'|u1' ,\n 'shape':(  2 ,3 ) ,'fortran_order':False , }",
        "{'fortran_order': False, 'descr': '<u1', 'shape': (2, 3,)}",
    };
    for (int major = 1; major <= 2; ++major) {
        for (size_t k = 0; k < sizeof dicts / sizeof dicts[0]; ++k) {
            size_t len;
            uint8_t *b = tt_build(major, dicts[k], 6, &len);
            lab_tensor t;
            cr_assert_eq(lab_npy_parse(b, len, "ok.npy", &t), LAB_OK, "v%d dict %zu: %s", major, k, lab_err_msg());
            cr_assert_eq(t.dtype, LAB_DT_U1);
            cr_assert_eq(t.ndim, 2);
            cr_assert_eq(t.shape[0], 2);
            cr_assert_eq(t.shape[1], 3);
            cr_assert_eq(((uint8_t *)t.data)[5], 0xAB);
            lab_tensor_free(&t);
            free(b);
        }
    }
}

/* ---------------------------------------------------------------------------- numpy interop */

/* One tensor per dtype and a few ranks, written by lab_npy_write and checked by numpy: dtype, shape,
 * values, and that np.save of the loaded array gives the very same bytes. */
Test(npy, numpy_loads_our_files, .timeout = 120)
{
    if (!tt_have_numpy()) cr_skip_test(TT_PY " cannot import numpy (install python3-numpy)");
    char dir[64];
    tt_tmpdir(dir);
    static const struct {
        lab_dtype dt;
        int ndim;
        size_t shape[LAB_TENSOR_MAXDIM];
    } cases[] = {
        {LAB_DT_F4, 2, {4096, 1024}}, {LAB_DT_F8, 1, {1000}},          {LAB_DT_U1, 3, {2, 3, 4}},
        {LAB_DT_U2, 2, {65, 3}},      {LAB_DT_I4, 0, {0}},             {LAB_DT_BF16, 2, {8, 16}},
        {LAB_DT_F4, 8, {1, 2, 1, 3, 1, 2, 1, 2}}, {LAB_DT_I4, 2, {0, 5}},
        {LAB_DT_F8, 3, {1234567890123456ull, 0, 99}}, {LAB_DT_U1, 8, {0, 10000000, 1, 2, 3, 4, 5, 6}},
    };
    size_t nc = sizeof cases / sizeof cases[0];
    char script[16384];
    size_t p = (size_t)snprintf(script, sizeof script,
                                "import sys, io, numpy as np\nd = sys.argv[1]\nbad = 0\n"
                                "def check(name, descr, shape, expr):\n"
                                "    global bad\n"
                                "    path = d + '/' + name\n"
                                "    a = np.load(path)\n"
                                "    i = np.arange(int(np.prod(shape)), dtype=np.int64)\n"
                                "    want = eval(expr).reshape(shape)\n"
                                "    if a.dtype.str != descr or a.shape != shape or not np.array_equal(a, want) "
                                "or not a.flags.c_contiguous:\n"
                                "        print('numpy: %%s: dtype %%s shape %%s differs'\n"
                                "              %% (name, a.dtype.str, a.shape)); bad = 1\n"
                                "    b = io.BytesIO(); np.save(b, a)\n"
                                "    if b.getvalue() != open(path, 'rb').read():\n"
                                "        print('numpy: %%s: np.save writes different bytes' %% name); bad = 1\n");
    for (size_t c = 0; c < nc; ++c) {
        lab_tensor t;
        tt_make(&t, cases[c].dt, cases[c].ndim, cases[c].shape);
        char path[128], shp[256];
        snprintf(path, sizeof path, "%s/t%zu.npy", dir, c);
        cr_assert_eq(lab_npy_write(path, &t), LAB_OK, "%s", lab_err_msg());
        size_t q = (size_t)snprintf(shp, sizeof shp, "(");
        for (int d = 0; d < t.ndim; ++d) q += (size_t)snprintf(shp + q, sizeof shp - q, "%zu,", t.shape[d]);
        snprintf(shp + q, sizeof shp - q, ")");
        p += (size_t)snprintf(script + p, sizeof script - p, "check('t%zu.npy', '%s', %s, \"%s\")\n", c,
                              lab_dtype_npy_descr(t.dtype), shp, tt_py_values(t.dtype));
        lab_tensor_free(&t);
    }
    snprintf(script + p, sizeof script - p, "sys.exit(bad)\n");
    cr_assert_eq(tt_run_py(dir, script), 0, "numpy rejected a file written by lab_npy_write (see stdout)");
    tt_rmrf(dir);
}

/* Files numpy itself wrote (np.save, and write_array with version (2, 0)) parse to the right dtype,
 * shape and values; fortran-ordered and big-endian ones are refused. */
Test(npy, we_parse_numpy_files, .timeout = 120)
{
    if (!tt_have_numpy()) cr_skip_test(TT_PY " cannot import numpy (install python3-numpy)");
    char dir[64];
    tt_tmpdir(dir);
    static const struct {
        lab_dtype dt;
        int ndim;
        size_t shape[3];
        int v2;
    } cases[] = {
        {LAB_DT_F4, 2, {31, 7}, 0}, {LAB_DT_F8, 1, {5}, 0},    {LAB_DT_U1, 3, {2, 3, 4}, 0},
        {LAB_DT_U2, 1, {300}, 0},   {LAB_DT_I4, 0, {0}, 0},    {LAB_DT_F4, 2, {0, 3}, 0},
        {LAB_DT_I4, 2, {3, 4}, 1},  {LAB_DT_F8, 0, {0}, 1},    {LAB_DT_U1, 1, {1}, 1},
    };
    size_t nc = sizeof cases / sizeof cases[0];
    char script[8192];
    size_t p = (size_t)snprintf(script, sizeof script,
                                "import sys, numpy as np\nd = sys.argv[1]\n"
                                "def put(name, shape, expr, v2):\n"
                                "    i = np.arange(int(np.prod(shape)), dtype=np.int64)\n"
                                "    a = eval(expr).reshape(shape)\n"
                                "    if v2:\n"
                                "        with open(d + '/' + name, 'wb') as f:\n"
                                "            np.lib.format.write_array(f, a, version=(2, 0))\n"
                                "    else:\n"
                                "        np.save(d + '/' + name, a)\n"
                                "np.save(d + '/fortran.npy',\n"
                                "        np.asfortranarray(np.arange(6, dtype='<f4').reshape(2, 3)))\n"
                                "np.save(d + '/big.npy', np.arange(4, dtype='>f4'))\n");
    for (size_t c = 0; c < nc; ++c) {
        char shp[128];
        size_t q = (size_t)snprintf(shp, sizeof shp, "(");
        for (int dd = 0; dd < cases[c].ndim; ++dd)
            q += (size_t)snprintf(shp + q, sizeof shp - q, "%zu,", cases[c].shape[dd]);
        snprintf(shp + q, sizeof shp - q, ")");
        p += (size_t)snprintf(script + p, sizeof script - p, "put('n%zu.npy', %s, \"%s\", %d)\n", c, shp,
                              tt_py_values(cases[c].dt), cases[c].v2);
    }
    cr_assert_eq(tt_run_py(dir, script), 0, "numpy could not write the files");
    for (size_t c = 0; c < nc; ++c) {
        char path[128];
        snprintf(path, sizeof path, "%s/n%zu.npy", dir, c);
        char *raw;
        size_t rawlen;
        cr_assert_eq(lab_fs_read_all(path, &raw, &rawlen), LAB_OK);
        cr_assert_eq((uint8_t)raw[6], cases[c].v2 ? 2 : 1, "n%zu.npy: numpy wrote version %d", c, raw[6]);
        lab_tensor got, want;
        cr_assert_eq(lab_npy_read(path, &got), LAB_OK, "%s", lab_err_msg());
        tt_make(&want, cases[c].dt, cases[c].ndim, cases[c].shape);
        tt_assert_same(&want, &got, cases[c].dt);
        /* Our own encoding of a v1.0 file is byte-identical to numpy's. */
        if (!cases[c].v2) {
            uint8_t *mine;
            size_t mlen;
            cr_assert_eq(lab_npy_encode(&got, &mine, &mlen), LAB_OK);
            cr_assert_eq(mlen, rawlen, "n%zu.npy: %zu bytes vs numpy's %zu", c, mlen, rawlen);
            cr_assert(memcmp(mine, raw, mlen) == 0, "n%zu.npy: bytes differ from numpy's", c);
            free(mine);
        }
        free(raw);
        lab_tensor_free(&got);
        lab_tensor_free(&want);
    }
    char path[128];
    lab_tensor t;
    snprintf(path, sizeof path, "%s/fortran.npy", dir);
    cr_assert_eq(lab_npy_read(path, &t), LAB_ERR_FORMAT);
    tt_assert_msg_starts(path);
    tt_assert_msg_has("fortran_order True");
    snprintf(path, sizeof path, "%s/big.npy", dir);
    cr_assert_eq(lab_npy_read(path, &t), LAB_ERR_FORMAT);
    tt_assert_msg_starts(path);
    tt_assert_msg_has("big-endian descr '>f4'");
    tt_rmrf(dir);
}
