/* test_golden: golden MANIFEST parsing/writing, sha256, and the checks of lab_golden_load/verify. */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab_fs.h"
#include "lab_golden.h"

#define tg_assert_msg_has(needle)                                                                        \
    cr_assert(strstr(lab_err_msg(), (needle)) != NULL, "message \"%s\" lacks \"%s\"", lab_err_msg(), (needle))

static int tg_rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw) { return remove(p); }

/* Removes a directory tree made by tg_tmpdir. */
static void tg_rmrf(const char *dir) { nftw(dir, tg_rm_cb, 16, FTW_DEPTH | FTW_PHYS); }

/* mkdtemp under /tmp; asserts on failure. */
static void tg_tmpdir(char out[64])
{
    snprintf(out, 64, "/tmp/lab-test-golden-XXXXXX");
    cr_assert_not_null(mkdtemp(out), "mkdtemp failed");
}

/* A filled tensor: element i is i * 0.5 (f4/f8), i (ints, wrapped). */
static void tg_make(lab_tensor *t, lab_dtype dt, int ndim, const size_t *shape)
{
    cr_assert_eq(lab_tensor_create(t, dt, ndim, shape), LAB_OK, "%s", lab_err_msg());
    for (size_t i = 0; i < t->numel; ++i) {
        switch (dt) {
        case LAB_DT_F4: ((float *)t->data)[i] = (float)i * 0.5f; break;
        case LAB_DT_F8: ((double *)t->data)[i] = (double)i * 0.5; break;
        case LAB_DT_U1: ((uint8_t *)t->data)[i] = (uint8_t)i; break;
        case LAB_DT_U2:
        case LAB_DT_BF16: ((uint16_t *)t->data)[i] = (uint16_t)(0x3F80 + i); break;
        case LAB_DT_I4: ((int32_t *)t->data)[i] = (int32_t)i - 100; break;
        }
    }
}

/* A golden dir with three entries: a.npy f4 (4, 3), b.npy bf16 stored <u2 (5,), c.npy i4 scalar; the
 * manifest written. Returns the manifest in *m. */
static void tg_setup(char dir[64], lab_golden_manifest *m)
{
    tg_tmpdir(dir);
    memset(m, 0, sizeof *m);
    snprintf(m->incident, sizeof m->incident, "pow-grad-nan");
    lab_tensor a, b, c;
    size_t sa[2] = {4, 3}, sb[1] = {5};
    tg_make(&a, LAB_DT_F4, 2, sa);
    tg_make(&b, LAB_DT_U2, 1, sb);
    tg_make(&c, LAB_DT_I4, 0, NULL);
    /* added out of order on purpose: the manifest is written sorted */
    cr_assert_eq(lab_golden_add(m, dir, "c.npy", &c, LAB_DT_I4, 9007199254740992ull, "scalar"), LAB_OK, "%s",
                 lab_err_msg());
    cr_assert_eq(lab_golden_add(m, dir, "a.npy", &a, LAB_DT_F4, 42, "float64 reference pow_ref_grad v1"), LAB_OK,
                 "%s", lab_err_msg());
    cr_assert_eq(lab_golden_add(m, dir, "b.npy", &b, LAB_DT_BF16, 0, "bf16 bits"), LAB_OK, "%s", lab_err_msg());
    cr_assert_eq(lab_golden_manifest_write(dir, m), LAB_OK, "%s", lab_err_msg());
    lab_tensor_free(&a);
    lab_tensor_free(&b);
    lab_tensor_free(&c);
}

/* dir/file into out. */
static void tg_path(char out[256], const char *dir, const char *file) { snprintf(out, 256, "%s/%s", dir, file); }

/* Parses json as manifest "M.json" and expects LAB_ERR_FORMAT whose message names M.json and has every
 * needle (NULL-terminated list). */
static void tg_expect_bad_json(const char *json, ...)
{
    lab_golden_manifest m;
    lab_status st = lab_golden_manifest_parse(json, strlen(json), "M.json", &m);
    cr_assert_eq(st, LAB_ERR_FORMAT, "expected a format error for %s, got %s (%s)", json, lab_status_name(st),
                 lab_err_msg());
    cr_assert(strncmp(lab_err_msg(), "M.json: ", 8) == 0, "message \"%s\" does not start with the name",
              lab_err_msg());
    cr_assert_eq(m.n, 0);
    cr_assert_null(m.entries);
    va_list ap;
    va_start(ap, json);
    for (const char *n; (n = va_arg(ap, const char *)) != NULL;) tg_assert_msg_has(n);
    va_end(ap);
}

/* A valid one-entry manifest with `field` replaced by `value` (raw JSON), or dropped if value is NULL. */
static void tg_entry_json(char *out, size_t cap, const char *field, const char *value)
{
    static const char *const fields[] = {"file", "sha256", "dtype", "shape", "seed", "producer"};
    static const char *const values[] = {"\"x.npy\"",
                                         "\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"",
                                         "\"f4\"", "[2, 3]", "7", "\"test\""};
    size_t p = (size_t)snprintf(out, cap, "{\"incident\": \"i\", \"files\": [{");
    int first = 1;
    for (int k = 0; k < 6; ++k) {
        const char *v = strcmp(fields[k], field) == 0 ? value : values[k];
        if (!v) continue;
        p += (size_t)snprintf(out + p, cap - p, "%s\"%s\": %s", first ? "" : ", ", fields[k], v);
        first = 0;
    }
    snprintf(out + p, cap - p, "}]}");
}

/* ---------------------------------------------------------------------------------------- sha256 */

Test(golden, sha256_known_answers)
{
    char hex[65];
    cr_assert_eq(lab_golden_sha256("", 0, hex), LAB_OK);
    cr_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    cr_assert_eq(lab_golden_sha256("abc", 3, hex), LAB_OK);
    cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    cr_assert_eq(lab_golden_sha256(NULL, 0, hex), LAB_OK);
    cr_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");

    char dir[64], path[256];
    tg_tmpdir(dir);
    tg_path(path, dir, "abc.txt");
    cr_assert_eq(lab_fs_write_atomic(path, "abc", 3), LAB_OK);
    cr_assert_eq(lab_golden_sha256_file(path, hex), LAB_OK);
    cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    /* a file larger than the read chunk: 200000 'a' */
    char *big = malloc(200000);
    memset(big, 'a', 200000);
    char want[65];
    cr_assert_eq(lab_golden_sha256(big, 200000, want), LAB_OK);
    cr_assert_eq(lab_fs_write_atomic(path, big, 200000), LAB_OK);
    cr_assert_eq(lab_golden_sha256_file(path, hex), LAB_OK);
    cr_assert_str_eq(hex, want);
    free(big);
    tg_path(path, dir, "none");
    cr_assert_eq(lab_golden_sha256_file(path, hex), LAB_ERR_IO);
    tg_assert_msg_has(path);
    tg_rmrf(dir);
}

/* ------------------------------------------------------------------------------- round trip */

Test(golden, manifest_round_trip_sorted)
{
    char dir[64], path[256];
    lab_golden_manifest m, r;
    tg_setup(dir, &m);
    cr_assert_eq(lab_golden_manifest_read(dir, &r), LAB_OK, "%s", lab_err_msg());
    cr_assert_str_eq(r.incident, "pow-grad-nan");
    cr_assert_eq(r.n, 3);
    for (size_t i = 0; i < m.n; ++i) {
        const lab_golden_entry *x = &m.entries[i], *y = lab_golden_find(&r, x->file);
        cr_assert_not_null(y, "%s lost", x->file);
        cr_assert_str_eq(x->sha256, y->sha256);
        cr_assert_eq(x->dtype, y->dtype, "%s dtype", x->file);
        cr_assert_eq(x->ndim, y->ndim);
        for (int d = 0; d < x->ndim; ++d) cr_assert_eq(x->shape[d], y->shape[d]);
        cr_assert_eq(x->seed, y->seed, "%s seed %llu vs %llu", x->file, (unsigned long long)x->seed,
                     (unsigned long long)y->seed);
        cr_assert_str_eq(x->producer, y->producer);
    }
    /* sorted by file name, pretty-printed, the seed as a number */
    cr_assert_str_eq(r.entries[0].file, "a.npy");
    cr_assert_str_eq(r.entries[1].file, "b.npy");
    cr_assert_str_eq(r.entries[2].file, "c.npy");
    char *text;
    size_t len;
    tg_path(path, dir, LAB_GOLDEN_MANIFEST);
    cr_assert_eq(lab_fs_read_all(path, &text, &len), LAB_OK);
    cr_assert(strchr(text, '\n') != NULL && text[len - 1] == '\n', "not pretty-printed:\n%s", text);
    cr_assert(strstr(text, "\"seed\":\t9007199254740992") || strstr(text, "\"seed\": 9007199254740992"),
              "seed not a plain number:\n%s", text);
    cr_assert(strstr(text, "\"dtype\":\t\"bf16\"") || strstr(text, "\"dtype\": \"bf16\""), "%s", text);
    cr_assert(strstr(text, "a.npy") < strstr(text, "b.npy") && strstr(text, "b.npy") < strstr(text, "c.npy"));
    free(text);

    size_t n_ok = 99;
    cr_assert_eq(lab_golden_verify(dir, &r, &n_ok), LAB_OK, "%s", lab_err_msg());
    cr_assert_eq(n_ok, 3);
    /* replacing an entry keeps one entry per file */
    lab_tensor t;
    size_t s2[1] = {2};
    tg_make(&t, LAB_DT_F8, 1, s2);
    cr_assert_eq(lab_golden_add(&r, dir, "a.npy", &t, LAB_DT_F8, 1, "again"), LAB_OK);
    cr_assert_eq(r.n, 3);
    cr_assert_eq(lab_golden_find(&r, "a.npy")->dtype, LAB_DT_F8);
    lab_tensor_free(&t);
    lab_golden_manifest_free(&r);
    lab_golden_manifest_free(&m);
    tg_rmrf(dir);
}

Test(golden, bf16_stored_as_u2)
{
    char dir[64], path[256];
    lab_golden_manifest m;
    tg_setup(dir, &m);
    const lab_golden_entry *e = lab_golden_find(&m, "b.npy");
    cr_assert_not_null(e);
    cr_assert_eq(e->dtype, LAB_DT_BF16);
    /* the file itself says <u2 */
    tg_path(path, dir, "b.npy");
    char *raw;
    size_t len;
    cr_assert_eq(lab_fs_read_all(path, &raw, &len), LAB_OK);
    cr_assert(strstr(raw + 10, "'descr': '<u2'") != NULL, "header: %.80s", raw + 10);
    free(raw);
    lab_tensor t;
    cr_assert_eq(lab_golden_load(dir, e, &t), LAB_OK, "%s", lab_err_msg());
    cr_assert_eq(t.dtype, LAB_DT_BF16, "load gives %s", lab_dtype_name(t.dtype));
    cr_assert_eq(t.numel, 5);
    cr_assert_eq(((uint16_t *)t.data)[4], 0x3F84);
    lab_tensor_free(&t);
    /* a u2 manifest entry for the same file also loads, as u2 */
    lab_golden_entry u = *e;
    u.dtype = LAB_DT_U2;
    cr_assert_eq(lab_golden_load(dir, &u, &t), LAB_OK, "%s", lab_err_msg());
    cr_assert_eq(t.dtype, LAB_DT_U2);
    lab_tensor_free(&t);
    /* a bf16 true dtype cannot come from an f4 tensor */
    lab_tensor f;
    size_t s1[1] = {1};
    tg_make(&f, LAB_DT_F4, 1, s1);
    cr_assert_eq(lab_golden_add(&m, dir, "d.npy", &f, LAB_DT_BF16, 0, "x"), LAB_ERR_ARG);
    tg_assert_msg_has("d.npy");
    tg_assert_msg_has("bf16");
    lab_tensor_free(&f);
    lab_golden_manifest_free(&m);
    tg_rmrf(dir);
}

/* ------------------------------------------------------------------------------ load failures */

Test(golden, load_missing_file)
{
    char dir[64], path[256];
    lab_golden_manifest m;
    tg_setup(dir, &m);
    tg_path(path, dir, "a.npy");
    cr_assert_eq(unlink(path), 0);
    lab_tensor t;
    cr_assert_eq(lab_golden_load(dir, lab_golden_find(&m, "a.npy"), &t), LAB_ERR_IO);
    tg_assert_msg_has(path);
    tg_assert_msg_has("missing");
    cr_assert_null(t.data);
    size_t n_ok = 0;
    cr_assert_eq(lab_golden_verify(dir, &m, &n_ok), LAB_ERR_IO);
    cr_assert_eq(n_ok, 2);
    tg_assert_msg_has("a.npy: missing");
    lab_golden_manifest_free(&m);
    tg_rmrf(dir);
}

Test(golden, load_corrupted_byte)
{
    char dir[64], path[256];
    lab_golden_manifest m;
    tg_setup(dir, &m);
    tg_path(path, dir, "a.npy");
    char *raw;
    size_t len;
    cr_assert_eq(lab_fs_read_all(path, &raw, &len), LAB_OK);
    raw[len - 3] ^= 0x01; /* one bit of one float */
    cr_assert_eq(lab_fs_write_atomic(path, raw, len), LAB_OK);
    char hex[65];
    cr_assert_eq(lab_golden_sha256(raw, len, hex), LAB_OK);
    free(raw);
    lab_tensor t;
    const lab_golden_entry *e = lab_golden_find(&m, "a.npy");
    cr_assert_eq(lab_golden_load(dir, e, &t), LAB_ERR_MISMATCH);
    tg_assert_msg_has(path);
    tg_assert_msg_has("sha256 mismatch");
    tg_assert_msg_has(e->sha256);
    tg_assert_msg_has(hex);
    cr_assert_null(t.data);
    lab_golden_manifest_free(&m);
    tg_rmrf(dir);
}

Test(golden, load_truncated_with_matching_sha)
{
    char dir[64], path[256];
    lab_golden_manifest m;
    tg_setup(dir, &m);
    tg_path(path, dir, "a.npy");
    char *raw;
    size_t len;
    cr_assert_eq(lab_fs_read_all(path, &raw, &len), LAB_OK);
    cr_assert_eq(lab_fs_write_atomic(path, raw, len - 4), LAB_OK);
    lab_golden_entry e = *lab_golden_find(&m, "a.npy");
    cr_assert_eq(lab_golden_sha256(raw, len - 4, e.sha256), LAB_OK);
    free(raw);
    lab_tensor t;
    cr_assert_eq(lab_golden_load(dir, &e, &t), LAB_ERR_FORMAT);
    tg_assert_msg_has(path);
    tg_assert_msg_has("truncated: expected 48 bytes of data, got 44");
    lab_golden_manifest_free(&m);
    tg_rmrf(dir);
}

Test(golden, load_dtype_mismatch)
{
    char dir[64], path[256];
    lab_golden_manifest m;
    tg_setup(dir, &m);
    tg_path(path, dir, "a.npy");
    lab_golden_entry e = *lab_golden_find(&m, "a.npy");
    e.dtype = LAB_DT_BF16;
    lab_tensor t;
    cr_assert_eq(lab_golden_load(dir, &e, &t), LAB_ERR_MISMATCH);
    tg_assert_msg_has(path);
    tg_assert_msg_has("dtype mismatch: manifest bf16, file <f4");
    cr_assert_null(t.data);
    e.dtype = LAB_DT_I4;
    cr_assert_eq(lab_golden_load(dir, &e, &t), LAB_ERR_MISMATCH);
    tg_assert_msg_has("dtype mismatch: manifest i4, file <f4");
    lab_golden_manifest_free(&m);
    tg_rmrf(dir);
}

Test(golden, load_shape_mismatch)
{
    char dir[64], path[256];
    lab_golden_manifest m;
    tg_setup(dir, &m);
    tg_path(path, dir, "a.npy");
    lab_golden_entry e = *lab_golden_find(&m, "a.npy");
    e.shape[1] = 4;
    lab_tensor t;
    cr_assert_eq(lab_golden_load(dir, &e, &t), LAB_ERR_MISMATCH);
    tg_assert_msg_has(path);
    tg_assert_msg_has("shape mismatch: manifest (4, 4), file (4, 3)");
    cr_assert_null(t.data);
    e.ndim = 1;
    e.shape[0] = 12;
    cr_assert_eq(lab_golden_load(dir, &e, &t), LAB_ERR_MISMATCH);
    tg_assert_msg_has("shape mismatch: manifest (12,), file (4, 3)");
    lab_golden_manifest_free(&m);
    tg_rmrf(dir);
}

Test(golden, load_rejects_bad_entry_name)
{
    char dir[64];
    lab_golden_manifest m;
    tg_setup(dir, &m);
    lab_golden_entry e = *lab_golden_find(&m, "a.npy");
    snprintf(e.file, sizeof e.file, "../a.npy");
    lab_tensor t;
    cr_assert_eq(lab_golden_load(dir, &e, &t), LAB_ERR_ARG);
    tg_assert_msg_has("../a.npy");
    tg_assert_msg_has("not a plain file name");
    lab_golden_manifest_free(&m);
    tg_rmrf(dir);
}

/* ----------------------------------------------------------------------------- manifest errors */

Test(golden, manifest_missing_is_io)
{
    char dir[64], path[256];
    tg_tmpdir(dir);
    lab_golden_manifest m;
    cr_assert_eq(lab_golden_manifest_read(dir, &m), LAB_ERR_IO);
    tg_path(path, dir, LAB_GOLDEN_MANIFEST);
    tg_assert_msg_has(path);
    tg_rmrf(dir);
}

Test(golden, manifest_malformed_json)
{
    tg_expect_bad_json("", "malformed JSON", NULL);
    tg_expect_bad_json("{\"incident\": \"i\", \"files\": [", "malformed JSON", NULL);
    tg_expect_bad_json("{\"incident\": \"i\", \"files\": []} x", "unexpected text", NULL);
    tg_expect_bad_json("[1, 2]", "top level", "expected an object", NULL);
    tg_expect_bad_json("{\"incident\": \"i\"}", "'files'", "missing", NULL);
    tg_expect_bad_json("{\"files\": []}", "'incident'", "missing", NULL);
    tg_expect_bad_json("{\"incident\": 3, \"files\": []}", "'incident'", "expected a string", NULL);
    tg_expect_bad_json("{\"incident\": \"i\", \"files\": {}}", "'files'", "expected an array", NULL);
    tg_expect_bad_json("{\"incident\": \"i\", \"files\": [], \"extra\": 1}", "unknown field 'extra'", NULL);
    tg_expect_bad_json("{\"incident\": \"i\", \"files\": [7]}", "files[0]", "expected an object", NULL);
    /* bytes after an embedded NUL are not ignored */
    static const char nul[] = "{\"incident\": \"i\", \"files\": []}\0junk";
    lab_golden_manifest m;
    cr_assert_eq(lab_golden_manifest_parse(nul, sizeof nul - 1, "M.json", &m), LAB_ERR_FORMAT);
    /* and the same bytes without the tail are fine, with no entries */
    cr_assert_eq(lab_golden_manifest_parse(nul, strlen(nul), "M.json", &m), LAB_OK, "%s", lab_err_msg());
    cr_assert_eq(m.n, 0);
    lab_golden_manifest_free(&m);
}

Test(golden, manifest_missing_fields)
{
    static const char *const fields[] = {"file", "sha256", "dtype", "shape", "seed", "producer"};
    char json[1024], quoted[32];
    for (int k = 0; k < 6; ++k) {
        tg_entry_json(json, sizeof json, fields[k], NULL);
        snprintf(quoted, sizeof quoted, "field '%s': missing", fields[k]);
        /* once the file name is known, the message names it too */
        tg_expect_bad_json(json, "files[0]", quoted, k == 0 ? "files[0]:" : "'x.npy'", NULL);
    }
    /* the unchanged entry parses */
    tg_entry_json(json, sizeof json, "", NULL);
    lab_golden_manifest m;
    cr_assert_eq(lab_golden_manifest_parse(json, strlen(json), "M.json", &m), LAB_OK, "%s", lab_err_msg());
    cr_assert_eq(m.n, 1);
    cr_assert_eq(m.entries[0].shape[1], 3);
    cr_assert_eq(m.entries[0].seed, 7);
    lab_golden_manifest_free(&m);
}

Test(golden, manifest_bad_values)
{
    char json[1024];
    static const struct {
        const char *field, *value, *needle;
    } cases[] = {
        {"sha256", "\"E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855\"", "not 64 lowercase hex"},
        {"sha256", "\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85\"", "not 64 lowercase hex"},
        {"sha256", "\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b8555\"", "not 64 lowercase hex"},
        {"sha256", "\"g3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"", "not 64 lowercase hex"},
        {"sha256", "64", "expected a string"},
        {"dtype", "\"f16\"", "unknown dtype 'f16'"},
        {"shape", "[2, -3]", "dimension 1 is not a non-negative integer"},
        {"shape", "[2.5]", "dimension 0 is not a non-negative integer"},
        {"shape", "[\"2\"]", "dimension 0 is not a non-negative integer"},
        {"shape", "[1, 1, 1, 1, 1, 1, 1, 1, 1]", "more than 8 dimensions"},
        {"shape", "[4294967296, 4294967296, 4294967296]", "overflows"},
        {"shape", "3", "expected an array"},
        {"seed", "-1", "non-negative integer"},
        {"seed", "1.5", "non-negative integer"},
        {"seed", "9007199254740994", "non-negative integer"},
        {"seed", "\"7\"", "found a string"},
        {"producer", "null", "expected a string, found null"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        char field[48];
        tg_entry_json(json, sizeof json, cases[k].field, cases[k].value);
        snprintf(field, sizeof field, "field '%s'", cases[k].field);
        tg_expect_bad_json(json, "files[0] 'x.npy'", field, cases[k].needle, NULL);
    }
    /* the largest exact seed is fine */
    tg_entry_json(json, sizeof json, "seed", "9007199254740992");
    lab_golden_manifest m;
    cr_assert_eq(lab_golden_manifest_parse(json, strlen(json), "M.json", &m), LAB_OK, "%s", lab_err_msg());
    cr_assert_eq(m.entries[0].seed, 9007199254740992ull);
    lab_golden_manifest_free(&m);
}

Test(golden, manifest_bad_file_names)
{
    char json[1024], longname[200];
    memset(longname, 'a', sizeof longname);
    longname[0] = '"';
    snprintf(longname + 140, sizeof longname - 140, ".npy\"");
    const char *bad[] = {"\"../x.npy\"", "\"..\"", "\"\"", "\"a/b.npy\"", "\"/etc/passwd\"", longname, "3"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
        tg_entry_json(json, sizeof json, "file", bad[k]);
        tg_expect_bad_json(json, "files[0]: field 'file'", k == 6 ? "expected a string" : "not a plain file name",
                           NULL);
    }
    tg_entry_json(json, sizeof json, "file", "\"../x.npy\"");
    tg_expect_bad_json(json, "'../x.npy'", NULL);
    /* a duplicate file across entries */
    static const char dup[] =
        "{\"incident\": \"i\", \"files\": ["
        "{\"file\": \"x.npy\", \"sha256\": \"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\", "
        "\"dtype\": \"f4\", \"shape\": [], \"seed\": 0, \"producer\": \"p\"},"
        "{\"file\": \"x.npy\", \"sha256\": \"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\", "
        "\"dtype\": \"f4\", \"shape\": [], \"seed\": 0, \"producer\": \"p\"}]}";
    tg_expect_bad_json(dup, "files[1] 'x.npy'", "duplicate of files[0]", NULL);
    /* unknown and duplicate fields in an entry */
    static const char unk[] = "{\"incident\": \"i\", \"files\": [{\"file\": \"x.npy\", \"sha\": \"0\"}]}";
    tg_expect_bad_json(unk, "files[0]", "unknown field 'sha'", NULL);
    static const char twice[] = "{\"incident\": \"i\", \"files\": [{\"file\": \"x.npy\", \"file\": \"y.npy\"}]}";
    tg_expect_bad_json(twice, "files[0]", "duplicate field 'file'", NULL);
}

Test(golden, write_and_add_reject_bad_entries)
{
    char dir[64];
    tg_tmpdir(dir);
    lab_golden_manifest m;
    memset(&m, 0, sizeof m);
    lab_tensor t;
    size_t s1[1] = {2};
    tg_make(&t, LAB_DT_F4, 1, s1);
    cr_assert_eq(lab_golden_add(&m, dir, "../x.npy", &t, LAB_DT_F4, 0, "p"), LAB_ERR_ARG);
    tg_assert_msg_has("'../x.npy'");
    cr_assert_eq(lab_golden_add(&m, dir, "x.npy", &t, LAB_DT_F4, 9007199254740993ull, "p"), LAB_ERR_ARG);
    tg_assert_msg_has("seed");
    cr_assert_eq(m.n, 0);
    cr_assert_eq(lab_golden_add(&m, dir, "x.npy", &t, LAB_DT_F4, 1, "p"), LAB_OK, "%s", lab_err_msg());
    m.entries[0].sha256[3] = 'Z';
    cr_assert_eq(lab_golden_manifest_write(dir, &m), LAB_ERR_ARG);
    tg_assert_msg_has("files[0] 'x.npy': field 'sha256'");
    char path[256];
    tg_path(path, dir, LAB_GOLDEN_MANIFEST);
    cr_assert(!lab_fs_exists(path), "a bad manifest was written");
    m.entries[0].sha256[3] = '0';
    lab_golden_entry two[2] = {m.entries[0], m.entries[0]};
    lab_golden_manifest dup = {.n = 2, .entries = two};
    cr_assert_eq(lab_golden_manifest_write(dir, &dup), LAB_ERR_ARG);
    tg_assert_msg_has("'x.npy' is listed twice");
    cr_assert(!lab_fs_exists(path), "a manifest with a duplicate was written");
    cr_assert_eq(lab_golden_manifest_write(dir, &m), LAB_OK, "%s", lab_err_msg());
    cr_assert(lab_fs_exists(path));
    lab_tensor_free(&t);
    lab_golden_manifest_free(&m);
    tg_rmrf(dir);
}
