/* lab_golden: an incident's golden MANIFEST (file, sha256, dtype, shape, seed, producer) and verified loading. */
#include "lab_golden.h"

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_fs.h"
#include "lab_json.h"

/* Largest integer a JSON number (an IEEE double in cJSON) holds exactly: 2^53. */
#define GOLDEN_MAX_EXACT 9007199254740992.0
#define GOLDEN_MAX_EXACT_U ((uint64_t)1 << 53)
#define GOLDEN_PATH_MAX 4096

/* Name used in messages when the caller gave none. */
static const char *nm(const char *name) { return name ? name : "<manifest>"; }

/* Lowercase hex of a 32-byte digest into hex[65]. */
static void to_hex(const unsigned char *md, char hex[65])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; ++i) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    hex[64] = '\0';
}

/* SHA-256 of data[0..len) as lowercase hex. LAB_ERR_ARG for NULL data with len > 0; LAB_ERR_NOMEM if
 * libcrypto fails. */
lab_status lab_golden_sha256(const void *data, size_t len, char hex[65])
{
    hex[0] = '\0';
    if (!data && len) return lab_err_set(LAB_ERR_ARG, "sha256: data is NULL");
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (EVP_Digest(len ? data : "", len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32)
        return lab_err_set(LAB_ERR_NOMEM, "sha256: libcrypto EVP_Digest failed");
    to_hex(md, hex);
    return LAB_OK;
}

/* SHA-256 of a whole file, streamed. LAB_ERR_IO naming path if it cannot be opened or read. */
lab_status lab_golden_sha256_file(const char *path, char hex[65])
{
    hex[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) return lab_err_set(LAB_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        fclose(f);
        return lab_err_set(LAB_ERR_NOMEM, "%s: sha256: libcrypto init failed", path);
    }
    unsigned char buf[1 << 16];
    size_t r;
    int ok = 1;
    while ((r = fread(buf, 1, sizeof buf, f)) > 0)
        if (EVP_DigestUpdate(ctx, buf, r) != 1) ok = 0;
    int bad = ferror(f);
    fclose(f);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (ok && EVP_DigestFinal_ex(ctx, md, &mdlen) != 1) ok = 0;
    EVP_MD_CTX_free(ctx);
    if (bad) return lab_err_set(LAB_ERR_IO, "%s: read error while hashing", path);
    if (!ok || mdlen != 32) return lab_err_set(LAB_ERR_NOMEM, "%s: sha256: libcrypto digest failed", path);
    to_hex(md, hex);
    return LAB_OK;
}

/* ------------------------------------------------------------------------------------ validation */

/* 1 if s is a plain file name: non-empty, shorter than cap, not "." or "..", no '/', '\\' or control
 * characters. */
static int plain_name(const char *s, size_t cap)
{
    size_t n = strlen(s);
    if (n == 0 || n >= cap || strcmp(s, ".") == 0 || strcmp(s, "..") == 0) return 0;
    for (size_t i = 0; i < n; ++i)
        if (s[i] == '/' || s[i] == '\\' || (unsigned char)s[i] < 0x20 || s[i] == 0x7F) return 0;
    return 1;
}

/* 1 if s is exactly 64 lowercase hex digits. */
static int sha_hex_ok(const char *s)
{
    size_t i = 0;
    for (; s[i]; ++i)
        if (i >= 64 || !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return i == 64;
}

/* 1 if d is an integer in 0..2^53. */
static int exact_uint(double d) { return d >= 0 && d <= GOLDEN_MAX_EXACT && d == (double)(uint64_t)d; }

/* Formats a shape as numpy does: "()", "(n,)", "(a, b)". */
static const char *shape_str(int ndim, const size_t *shape, char *out, size_t cap)
{
    size_t p = (size_t)snprintf(out, cap, "(");
    for (int i = 0; i < ndim && i < LAB_TENSOR_MAXDIM && p < cap; ++i)
        p += (size_t)snprintf(out + p, cap - p, i ? ", %zu" : "%zu", shape[i]);
    if (p < cap) snprintf(out + p, cap - p, ndim == 1 ? ",)" : ")");
    return out;
}

/* Checks an entry held in memory before it is written or used: the same rules the parser applies.
 * LAB_ERR_ARG with a message "<where>: field '<field>': <what>", where `where` names the manifest or
 * directory and the entry. */
static lab_status entry_check(const char *where, const lab_golden_entry *e)
{
    if (!memchr(e->file, '\0', sizeof e->file) || !plain_name(e->file, sizeof e->file))
        return lab_err_set(LAB_ERR_ARG, "%s: field 'file': '%.*s' is not a plain file name", where,
                           (int)strnlen(e->file, sizeof e->file - 1), e->file);
    if (!memchr(e->sha256, '\0', sizeof e->sha256) || !sha_hex_ok(e->sha256))
        return lab_err_set(LAB_ERR_ARG, "%s '%s': field 'sha256': not 64 lowercase hex digits", where, e->file);
    if (lab_dtype_size(e->dtype) == 0)
        return lab_err_set(LAB_ERR_ARG, "%s '%s': field 'dtype': unknown dtype %d", where, e->file, (int)e->dtype);
    if (e->ndim < 0 || e->ndim > LAB_TENSOR_MAXDIM)
        return lab_err_set(LAB_ERR_ARG, "%s '%s': field 'shape': ndim %d out of range 0..%d", where, e->file, e->ndim,
                           LAB_TENSOR_MAXDIM);
    for (int d = 0; d < e->ndim; ++d)
        if ((uint64_t)e->shape[d] > GOLDEN_MAX_EXACT_U)
            return lab_err_set(LAB_ERR_ARG, "%s '%s': field 'shape': dimension %d (%zu) exceeds 2^53", where, e->file,
                               d, e->shape[d]);
    if (e->seed > GOLDEN_MAX_EXACT_U)
        return lab_err_set(LAB_ERR_ARG, "%s '%s': field 'seed': %llu exceeds 2^53 (not exact in JSON)", where,
                           e->file, (unsigned long long)e->seed);
    if (!memchr(e->producer, '\0', sizeof e->producer))
        return lab_err_set(LAB_ERR_ARG, "%s '%s': field 'producer': not NUL-terminated", where, e->file);
    return LAB_OK;
}

/* --------------------------------------------------------------------------------------- parsing */

/* Sets a LAB_ERR_FORMAT message "<name>: files[i] '<file>': field '<field>': <what>". file may be NULL
 * (before the entry's file name is known). */
static lab_status ent_err(const char *name, size_t i, const char *file, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static lab_status ent_err(const char *name, size_t i, const char *file, const char *field, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (file)
        return lab_err_set(LAB_ERR_FORMAT, "%s: files[%zu] '%s': field '%s': %s", name, i, file, field, what);
    return lab_err_set(LAB_ERR_FORMAT, "%s: files[%zu]: field '%s': %s", name, i, field, what);
}

/* cJSON type name for messages. */
static const char *json_type(const cJSON *j)
{
    if (!j) return "nothing";
    if (cJSON_IsString(j)) return "a string";
    if (cJSON_IsNumber(j)) return "a number";
    if (cJSON_IsArray(j)) return "an array";
    if (cJSON_IsObject(j)) return "an object";
    if (cJSON_IsBool(j)) return "a boolean";
    if (cJSON_IsNull(j)) return "null";
    return "an invalid value";
}

/* Parses one element of "files" into *e. */
static lab_status parse_entry(const char *name, size_t i, const cJSON *obj, lab_golden_entry *e)
{
    static const char *const fields[] = {"file", "sha256", "dtype", "shape", "seed", "producer"};
    enum { NF = sizeof fields / sizeof fields[0] };
    const cJSON *v[NF] = {0};
    if (!cJSON_IsObject(obj))
        return lab_err_set(LAB_ERR_FORMAT, "%s: files[%zu]: expected an object, found %s", name, i, json_type(obj));
    for (const cJSON *c = obj->child; c; c = c->next) {
        int k = 0;
        while (k < NF && (!c->string || strcmp(c->string, fields[k]) != 0)) ++k;
        if (k == NF)
            return lab_err_set(LAB_ERR_FORMAT, "%s: files[%zu]: unknown field '%.64s'", name, i,
                               c->string ? c->string : "");
        if (v[k]) return lab_err_set(LAB_ERR_FORMAT, "%s: files[%zu]: duplicate field '%s'", name, i, fields[k]);
        v[k] = c;
    }
    memset(e, 0, sizeof *e);

    const cJSON *j = v[0];
    if (!j) return ent_err(name, i, NULL, "file", "missing");
    if (!cJSON_IsString(j)) return ent_err(name, i, NULL, "file", "expected a string, found %s", json_type(j));
    if (!plain_name(j->valuestring, sizeof e->file))
        return ent_err(name, i, NULL, "file",
                       "'%.160s' is not a plain file name (non-empty, under %zu bytes, no '/', not '..')",
                       j->valuestring, sizeof e->file);
    strcpy(e->file, j->valuestring);
    const char *f = e->file;

    if (!(j = v[1])) return ent_err(name, i, f, "sha256", "missing");
    if (!cJSON_IsString(j)) return ent_err(name, i, f, "sha256", "expected a string, found %s", json_type(j));
    if (!sha_hex_ok(j->valuestring))
        return ent_err(name, i, f, "sha256", "'%.80s' is not 64 lowercase hex digits", j->valuestring);
    strcpy(e->sha256, j->valuestring);

    if (!(j = v[2])) return ent_err(name, i, f, "dtype", "missing");
    if (!cJSON_IsString(j)) return ent_err(name, i, f, "dtype", "expected a string, found %s", json_type(j));
    if (lab_dtype_parse(j->valuestring, &e->dtype) != LAB_OK)
        return ent_err(name, i, f, "dtype", "unknown dtype '%.32s' (expected f4, f8, u1, u2, i4 or bf16)",
                       j->valuestring);

    if (!(j = v[3])) return ent_err(name, i, f, "shape", "missing");
    if (!cJSON_IsArray(j))
        return ent_err(name, i, f, "shape", "expected an array of integers, found %s", json_type(j));
    int nd = 0;
    size_t bytes = lab_dtype_size(e->dtype);
    for (const cJSON *d = j->child; d; d = d->next, ++nd) {
        if (nd >= LAB_TENSOR_MAXDIM)
            return ent_err(name, i, f, "shape", "more than %d dimensions", LAB_TENSOR_MAXDIM);
        if (!cJSON_IsNumber(d) || !exact_uint(d->valuedouble))
            return ent_err(name, i, f, "shape", "dimension %d is not a non-negative integer up to 2^53", nd);
        e->shape[nd] = (size_t)d->valuedouble;
        /* lab_tensor's (and numpy's) limit: non-zero dimensions times the element size fit 2^63-1 */
        if (e->shape[nd] && (__builtin_mul_overflow(bytes, e->shape[nd], &bytes) || bytes > (size_t)PTRDIFF_MAX))
            return ent_err(name, i, f, "shape", "overflows: the non-zero dimensions times %zu bytes exceed 2^63-1",
                           lab_dtype_size(e->dtype));
    }
    e->ndim = nd;

    if (!(j = v[4])) return ent_err(name, i, f, "seed", "missing");
    if (!cJSON_IsNumber(j) || !exact_uint(j->valuedouble))
        return ent_err(name, i, f, "seed", "expected a non-negative integer up to 2^53, found %s",
                       cJSON_IsNumber(j) ? "a number out of range or with a fraction" : json_type(j));
    e->seed = (uint64_t)j->valuedouble;

    if (!(j = v[5])) return ent_err(name, i, f, "producer", "missing");
    if (!cJSON_IsString(j)) return ent_err(name, i, f, "producer", "expected a string, found %s", json_type(j));
    if (strlen(j->valuestring) >= sizeof e->producer)
        return ent_err(name, i, f, "producer", "longer than %zu bytes", sizeof e->producer - 1);
    strcpy(e->producer, j->valuestring);
    return LAB_OK;
}

/* Parses manifest JSON json[0..len) (NULs inside are malformed) into *m, which is overwritten (not
 * freed) and zeroed on failure. LAB_ERR_FORMAT naming `name`, the entry index (and file once known) and
 * the field: JSON syntax, trailing text, unknown/duplicate/missing fields, wrong types, bad file names,
 * sha256 not 64 lowercase hex, unknown dtype, shape not a list of <= LAB_TENSOR_MAXDIM non-negative
 * integers, seed not an integer in 0..2^53, over-long strings, duplicate files. LAB_ERR_NOMEM. */
lab_status lab_golden_manifest_parse(const char *json, size_t len, const char *name, lab_golden_manifest *m)
{
    name = nm(name);
    memset(m, 0, sizeof *m);
    if (!json && len) return lab_err_set(LAB_ERR_ARG, "%s: json is NULL", name);
    /* A NUL-terminated private copy: cJSON never sees bytes past len, even if it peeks one ahead. */
    char *copy = malloc(len + 1);
    if (!copy) return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", name);
    if (len) memcpy(copy, json, len);
    copy[len] = '\0';
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(copy, len, &end, 0);
    lab_status st = LAB_OK;
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        size_t off = (at && at >= copy && at <= copy + len) ? (size_t)(at - copy) : len;
        st = lab_err_set(LAB_ERR_FORMAT, "%s: malformed JSON near byte %zu%s", name, off,
                         len == 0 ? " (empty)" : "");
        goto out;
    }
    const char *q = end ? end : copy + len;
    while (q < copy + len && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')) ++q;
    if (q < copy + len) {
        st = lab_err_set(LAB_ERR_FORMAT, "%s: malformed JSON: unexpected text at byte %zu after the top-level value",
                         name, (size_t)(q - copy));
        goto out;
    }
    if (!cJSON_IsObject(root)) {
        st = lab_err_set(LAB_ERR_FORMAT, "%s: top level: expected an object, found %s", name, json_type(root));
        goto out;
    }
    const cJSON *inc = NULL, *files = NULL;
    for (const cJSON *c = root->child; c; c = c->next) {
        const cJSON **slot = NULL;
        if (c->string && strcmp(c->string, "incident") == 0) slot = &inc;
        else if (c->string && strcmp(c->string, "files") == 0) slot = &files;
        if (!slot) {
            st = lab_err_set(LAB_ERR_FORMAT, "%s: top level: unknown field '%.64s' (expected incident, files)", name,
                             c->string ? c->string : "");
            goto out;
        }
        if (*slot) {
            st = lab_err_set(LAB_ERR_FORMAT, "%s: top level: duplicate field '%s'", name, c->string);
            goto out;
        }
        *slot = c;
    }
    if (!inc || !cJSON_IsString(inc)) {
        st = lab_err_set(LAB_ERR_FORMAT, "%s: field 'incident': %s%s", name,
                         inc ? "expected a string, found " : "missing", inc ? json_type(inc) : "");
        goto out;
    }
    if (strlen(inc->valuestring) >= sizeof m->incident) {
        st = lab_err_set(LAB_ERR_FORMAT, "%s: field 'incident': longer than %zu bytes", name, sizeof m->incident - 1);
        goto out;
    }
    if (!files || !cJSON_IsArray(files)) {
        st = lab_err_set(LAB_ERR_FORMAT, "%s: field 'files': %s%s", name,
                         files ? "expected an array, found " : "missing", files ? json_type(files) : "");
        goto out;
    }
    size_t n = (size_t)cJSON_GetArraySize(files);
    lab_golden_entry *ents = n ? calloc(n, sizeof *ents) : NULL;
    if (n && !ents) {
        st = lab_err_set(LAB_ERR_NOMEM, "%s: out of memory for %zu entries", name, n);
        goto out;
    }
    size_t i = 0;
    for (const cJSON *c = files->child; c && i < n; c = c->next, ++i) {
        if ((st = parse_entry(name, i, c, &ents[i])) != LAB_OK) break;
        for (size_t k = 0; k < i; ++k) {
            if (strcmp(ents[k].file, ents[i].file) == 0) {
                st = lab_err_set(LAB_ERR_FORMAT, "%s: files[%zu] '%s': field 'file': duplicate of files[%zu]", name, i,
                                 ents[i].file, k);
                break;
            }
        }
        if (st != LAB_OK) break;
    }
    if (st != LAB_OK) {
        free(ents);
        goto out;
    }
    strcpy(m->incident, inc->valuestring);
    m->n = n;
    m->entries = ents;
out:
    cJSON_Delete(root);
    free(copy);
    return st;
}

/* "<dir>/<file>" into out; LAB_ERR_ARG naming both if it does not fit. */
static lab_status join(const char *dir, const char *file, char out[GOLDEN_PATH_MAX])
{
    if (snprintf(out, GOLDEN_PATH_MAX, "%s/%s", dir, file) >= GOLDEN_PATH_MAX)
        return lab_err_set(LAB_ERR_ARG, "%s/%s: path too long", dir, file);
    return LAB_OK;
}

/* Reads and parses <dir>/MANIFEST.json (messages name that path). LAB_ERR_IO if missing or unreadable. */
lab_status lab_golden_manifest_read(const char *dir, lab_golden_manifest *m)
{
    memset(m, 0, sizeof *m);
    char path[GOLDEN_PATH_MAX];
    lab_status st = join(dir, LAB_GOLDEN_MANIFEST, path);
    if (st != LAB_OK) return st;
    char *data;
    size_t len;
    if ((st = lab_fs_read_all(path, &data, &len)) != LAB_OK) return st;
    st = lab_golden_manifest_parse(data, len, path, m);
    free(data);
    return st;
}

/* --------------------------------------------------------------------------------------- writing */

/* qsort order of entries by file name. */
static int entry_cmp(const void *a, const void *b)
{
    const lab_golden_entry *x = *(const lab_golden_entry *const *)a, *y = *(const lab_golden_entry *const *)b;
    return strcmp(x->file, y->file);
}

/* An integer as a JSON number written with all its digits: cJSON's own printing of doubles keeps 15
 * significant digits when they compare equal within an epsilon, which rounds 2^53 to 9.00719925474099e+15. */
static cJSON *json_uint(uint64_t v)
{
    char digits[24];
    snprintf(digits, sizeof digits, "%llu", (unsigned long long)v);
    return cJSON_CreateRaw(digits);
}

/* Builds the manifest's JSON tree (entries sorted by file) into *out (cJSON_Delete). */
static lab_status manifest_encode(const lab_golden_manifest *m, const char *name, cJSON **out)
{
    *out = NULL;
    if (!memchr(m->incident, '\0', sizeof m->incident))
        return lab_err_set(LAB_ERR_ARG, "%s: field 'incident': not NUL-terminated", name);
    if (m->n && !m->entries) return lab_err_set(LAB_ERR_ARG, "%s: %zu entries but entries is NULL", name, m->n);
    for (size_t i = 0; i < m->n; ++i) {
        char where[GOLDEN_PATH_MAX + 32];
        snprintf(where, sizeof where, "%s: files[%zu]", name, i);
        lab_status st = entry_check(where, &m->entries[i]);
        if (st != LAB_OK) return st;
    }
    const lab_golden_entry **order = malloc((m->n ? m->n : 1) * sizeof *order);
    if (!order) return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", name);
    for (size_t i = 0; i < m->n; ++i) order[i] = &m->entries[i];
    qsort(order, m->n, sizeof *order, entry_cmp);
    for (size_t i = 1; i < m->n; ++i) {
        if (strcmp(order[i - 1]->file, order[i]->file) == 0) {
            lab_status st = lab_err_set(LAB_ERR_ARG, "%s: field 'file': '%s' is listed twice", name, order[i]->file);
            free(order);
            return st;
        }
    }
    lab_status st = LAB_OK;
    cJSON *root = cJSON_CreateObject(), *files = NULL;
    if (!root || !cJSON_AddStringToObject(root, "incident", m->incident) ||
        !(files = cJSON_AddArrayToObject(root, "files")))
        goto nomem;
    for (size_t i = 0; i < m->n; ++i) {
        const lab_golden_entry *e = order[i];
        cJSON *o = cJSON_CreateObject(), *sh;
        if (!o) goto nomem;
        cJSON_AddItemToArray(files, o);
        if (!cJSON_AddStringToObject(o, "file", e->file) || !cJSON_AddStringToObject(o, "sha256", e->sha256) ||
            !cJSON_AddStringToObject(o, "dtype", lab_dtype_name(e->dtype)) ||
            !(sh = cJSON_AddArrayToObject(o, "shape")))
            goto nomem;
        for (int d = 0; d < e->ndim; ++d) {
            cJSON *num = json_uint((uint64_t)e->shape[d]);
            if (!num) goto nomem;
            cJSON_AddItemToArray(sh, num);
        }
        cJSON *seed = json_uint(e->seed);
        if (!seed) goto nomem;
        cJSON_AddItemToObject(o, "seed", seed);
        if (!cJSON_AddStringToObject(o, "producer", e->producer)) goto nomem;
    }
    *out = root;
    root = NULL;
    goto done;
nomem:
    st = lab_err_set(LAB_ERR_NOMEM, "%s: out of memory building the JSON", name);
done:
    cJSON_Delete(root);
    free(order);
    return st;
}

/* Writes <dir>/MANIFEST.json atomically, pretty-printed with entries sorted by file name. Checks every
 * entry first as the parser would (LAB_ERR_ARG naming the path, index and field, e.g. a seed above
 * 2^53 or a file listed twice), so what is written reads back. LAB_ERR_IO, LAB_ERR_NOMEM. */
lab_status lab_golden_manifest_write(const char *dir, const lab_golden_manifest *m)
{
    char path[GOLDEN_PATH_MAX];
    lab_status st = join(dir, LAB_GOLDEN_MANIFEST, path);
    if (st != LAB_OK) return st;
    cJSON *root;
    if ((st = manifest_encode(m, path, &root)) != LAB_OK) return st;
    st = lab_json_write_file(path, root, LAB_JSON_PRETTY);
    cJSON_Delete(root);
    return st;
}

/* Frees the entries and zeroes *m; safe on a zeroed manifest. */
void lab_golden_manifest_free(lab_golden_manifest *m)
{
    if (!m) return;
    free(m->entries);
    memset(m, 0, sizeof *m);
}

/* The entry whose file is `file`, or NULL. */
const lab_golden_entry *lab_golden_find(const lab_golden_manifest *m, const char *file)
{
    if (!m || !file) return NULL;
    for (size_t i = 0; i < m->n; ++i)
        if (strcmp(m->entries[i].file, file) == 0) return &m->entries[i];
    return NULL;
}

/* Writes t as <dir>/<file> and adds or replaces its entry. LAB_ERR_ARG (naming the file) for a name that
 * is not plain, a producer that does not fit, a seed above 2^53, or a true_dtype the tensor cannot
 * carry (bf16 needs a u2 or bf16 tensor; others must equal t->dtype); errors of lab_npy_write;
 * LAB_ERR_NOMEM. On failure m is unchanged (the .npy may already be written). */
lab_status lab_golden_add(lab_golden_manifest *m, const char *dir, const char *file, const lab_tensor *t,
                          lab_dtype true_dtype, uint64_t seed, const char *producer)
{
    lab_golden_entry e;
    memset(&e, 0, sizeof e);
    if (!file || !plain_name(file, sizeof e.file))
        return lab_err_set(LAB_ERR_ARG, "%s: file '%.160s' is not a plain file name", dir, file ? file : "(null)");
    if (!producer) producer = "";
    if (strlen(producer) >= sizeof e.producer)
        return lab_err_set(LAB_ERR_ARG, "%s/%s: producer longer than %zu bytes", dir, file, sizeof e.producer - 1);
    if (seed > GOLDEN_MAX_EXACT_U)
        return lab_err_set(LAB_ERR_ARG, "%s/%s: seed %llu exceeds 2^53 (not exact in JSON)", dir, file,
                           (unsigned long long)seed);
    if (!t) return lab_err_set(LAB_ERR_ARG, "%s/%s: tensor is NULL", dir, file);
    int ok = true_dtype == LAB_DT_BF16 ? (t->dtype == LAB_DT_U2 || t->dtype == LAB_DT_BF16)
                                       : (lab_dtype_size(true_dtype) != 0 && t->dtype == true_dtype);
    if (!ok)
        return lab_err_set(LAB_ERR_ARG, "%s/%s: true dtype %s cannot be stored from a %s tensor", dir, file,
                           lab_dtype_name(true_dtype), lab_dtype_name(t->dtype));
    char path[GOLDEN_PATH_MAX];
    lab_status st = join(dir, file, path);
    if (st != LAB_OK) return st;
    uint8_t *buf;
    size_t len;
    if ((st = lab_npy_encode(t, &buf, &len)) != LAB_OK) {
        char why[1024];
        snprintf(why, sizeof why, "%s", lab_err_msg());
        return lab_err_set(st, "%s: %s", path, why);
    }
    st = lab_golden_sha256(buf, len, e.sha256);
    if (st == LAB_OK) st = lab_fs_write_atomic(path, buf, len);
    free(buf);
    if (st != LAB_OK) return st;
    strcpy(e.file, file);
    e.dtype = true_dtype;
    e.ndim = t->ndim;
    for (int d = 0; d < t->ndim; ++d) e.shape[d] = t->shape[d];
    e.seed = seed;
    strcpy(e.producer, producer);
    for (size_t i = 0; i < m->n; ++i) {
        if (strcmp(m->entries[i].file, file) == 0) {
            m->entries[i] = e;
            return LAB_OK;
        }
    }
    lab_golden_entry *ne = realloc(m->entries, (m->n + 1) * sizeof *ne);
    if (!ne) return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory adding a manifest entry", path);
    ne[m->n] = e;
    m->entries = ne;
    m->n++;
    return LAB_OK;
}

/* --------------------------------------------------------------------------------------- loading */

/* Loads <dir>/<e->file> into *t (zeroed on failure) after checking, in this order: the entry is sane
 * (LAB_ERR_ARG), the file exists (LAB_ERR_IO "missing"), sha256 (LAB_ERR_MISMATCH "sha256 mismatch:
 * manifest X, file Y"), it parses (LAB_ERR_FORMAT from lab_npy_parse), dtype (LAB_ERR_MISMATCH "dtype
 * mismatch: manifest bf16, file <f4"), shape (LAB_ERR_MISMATCH "shape mismatch: manifest (..), file
 * (..)"). Every message starts with the file's path. On success t->dtype is the manifest's true dtype
 * (LAB_DT_BF16 for a bf16 entry, whose bits were stored as <u2). */
lab_status lab_golden_load(const char *dir, const lab_golden_entry *e, lab_tensor *t)
{
    memset(t, 0, sizeof *t);
    char where[GOLDEN_PATH_MAX + 32];
    snprintf(where, sizeof where, "%s: manifest entry", dir);
    lab_status st = entry_check(where, e);
    if (st != LAB_OK) return st;
    char path[GOLDEN_PATH_MAX];
    if ((st = join(dir, e->file, path)) != LAB_OK) return st;
    if (!lab_fs_exists(path))
        return lab_err_set(LAB_ERR_IO, "%s: missing (listed in %s with sha256 %.12s...)", path, LAB_GOLDEN_MANIFEST,
                           e->sha256);
    char *data;
    size_t len;
    if ((st = lab_fs_read_all(path, &data, &len)) != LAB_OK) return st;
    char hex[65];
    if ((st = lab_golden_sha256(data, len, hex)) != LAB_OK) {
        free(data);
        return lab_err_set(st, "%s: cannot hash: %s", path, "libcrypto failed");
    }
    if (strcmp(hex, e->sha256) != 0) {
        free(data);
        return lab_err_set(LAB_ERR_MISMATCH, "%s: sha256 mismatch: manifest %s, file %s", path, e->sha256, hex);
    }
    st = lab_npy_parse((const uint8_t *)data, len, path, t);
    free(data);
    if (st != LAB_OK) return st;
    lab_dtype stored = e->dtype == LAB_DT_BF16 ? LAB_DT_U2 : e->dtype;
    if (t->dtype != stored) {
        const char *fd = lab_dtype_npy_descr(t->dtype);
        lab_tensor_free(t);
        return lab_err_set(LAB_ERR_MISMATCH, "%s: dtype mismatch: manifest %s, file %s", path, lab_dtype_name(e->dtype),
                           fd);
    }
    int same = t->ndim == e->ndim;
    for (int d = 0; same && d < e->ndim; ++d) same = t->shape[d] == e->shape[d];
    if (!same) {
        char a[256], b[256];
        shape_str(e->ndim, e->shape, a, sizeof a);
        shape_str(t->ndim, t->shape, b, sizeof b);
        lab_tensor_free(t);
        return lab_err_set(LAB_ERR_MISMATCH, "%s: shape mismatch: manifest %s, file %s", path, a, b);
    }
    t->dtype = e->dtype;
    return LAB_OK;
}

/* Loads and checks every entry as lab_golden_load does, freeing each tensor. Returns LAB_OK or the first
 * failure (with its message); every entry is tried, and *n_ok (if not NULL) counts those that passed. */
lab_status lab_golden_verify(const char *dir, const lab_golden_manifest *m, size_t *n_ok)
{
    size_t ok = 0;
    lab_status first = LAB_OK;
    char msg[1024] = "";
    for (size_t i = 0; i < m->n; ++i) {
        lab_tensor t;
        lab_status st = lab_golden_load(dir, &m->entries[i], &t);
        lab_tensor_free(&t);
        if (st == LAB_OK) {
            ++ok;
        } else if (first == LAB_OK) {
            first = st;
            snprintf(msg, sizeof msg, "%s", lab_err_msg());
        }
    }
    if (n_ok) *n_ok = ok;
    if (first != LAB_OK) lab_err_set(first, "%s", msg);
    return first;
}

lab_status lab_golden_verify_strict(const char *dir, const char *incident, const lab_golden_manifest *m, size_t *n_ok)
{
    if (n_ok) *n_ok = 0;
    if (strcmp(m->incident, incident) != 0)
        return lab_err_set(LAB_ERR_MISMATCH, "%s/%s: names incident '%s', not '%s'", dir, LAB_GOLDEN_MANIFEST,
                           m->incident, incident);
    if (m->n == 0) return lab_err_set(LAB_ERR_FORMAT, "%s/%s: lists no files", dir, LAB_GOLDEN_MANIFEST);
    DIR *d = opendir(dir);
    if (!d) return lab_err_set(LAB_ERR_IO, "%s: cannot list: %s", dir, strerror(errno));
    struct dirent *e;
    lab_status st = LAB_OK;
    while ((e = readdir(d)) && st == LAB_OK) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, LAB_GOLDEN_MANIFEST)) continue;
        if (!lab_golden_find(m, e->d_name))
            st = lab_err_set(LAB_ERR_MISMATCH, "%s/%s: not listed in the MANIFEST", dir, e->d_name);
    }
    closedir(d);
    if (st != LAB_OK) return st;
    return lab_golden_verify(dir, m, n_ok);
}
