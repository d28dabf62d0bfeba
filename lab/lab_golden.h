/* lab_golden: an incident's golden MANIFEST (file, sha256, dtype, shape, seed, producer) and verified loading. */
#ifndef LAB_GOLDEN_H
#define LAB_GOLDEN_H

#include <stddef.h>
#include <stdint.h>

#include "lab_err.h"
#include "lab_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* File name of the manifest inside an incident's golden/ directory. */
#define LAB_GOLDEN_MANIFEST "MANIFEST.json"

typedef struct {
    char file[128];       /* plain file name inside golden/, no '/' */
    char sha256[65];      /* lowercase hex of the whole .npy file */
    lab_dtype dtype;      /* true dtype (bf16 is stored as <u2) */
    int ndim;
    size_t shape[LAB_TENSOR_MAXDIM];
    uint64_t seed;
    char producer[128];   /* what made it, e.g. "float64 reference pow_ref_grad v1" */
} lab_golden_entry;

typedef struct {
    char incident[96];
    size_t n;
    lab_golden_entry *entries;
} lab_golden_manifest;

/* SHA-256 (OpenSSL libcrypto) of a buffer / of a file, as 64 lowercase hex chars + NUL. */
lab_status lab_golden_sha256(const void *data, size_t len, char hex[65]);
lab_status lab_golden_sha256_file(const char *path, char hex[65]);

/* Parses manifest JSON (cJSON): {"incident": str, "files": [{"file","sha256","dtype","shape":[..],
 * "seed","producer"}...]}. LAB_ERR_FORMAT with a message naming `name`, the entry index and the field
 * that is missing or wrong. Never reads outside json[0..len). */
lab_status lab_golden_manifest_parse(const char *json, size_t len, const char *name, lab_golden_manifest *m);
/* Reads <dir>/MANIFEST.json. LAB_ERR_IO if missing. */
lab_status lab_golden_manifest_read(const char *dir, lab_golden_manifest *m);
/* Writes <dir>/MANIFEST.json atomically. */
lab_status lab_golden_manifest_write(const char *dir, const lab_golden_manifest *m);
void lab_golden_manifest_free(lab_golden_manifest *m);

/* Writes t as <dir>/<file> (.npy) and adds or replaces its manifest entry (sha256 of the written
 * file, dtype = true_dtype, which may be LAB_DT_BF16 for a LAB_DT_U2 tensor). */
lab_status lab_golden_add(lab_golden_manifest *m, const char *dir, const char *file, const lab_tensor *t,
                          lab_dtype true_dtype, uint64_t seed, const char *producer);

/* Finds the entry for `file`, or NULL. */
const lab_golden_entry *lab_golden_find(const lab_golden_manifest *m, const char *file);

/* Loads <dir>/<e->file> and checks it: present (LAB_ERR_IO "missing"), sha256 matches
 * (LAB_ERR_MISMATCH "sha256 mismatch: manifest X, file Y"), parses (LAB_ERR_FORMAT, e.g. truncated),
 * stored dtype matches the manifest (bf16 <-> u2), shape matches. The message names the file. */
lab_status lab_golden_load(const char *dir, const lab_golden_entry *e, lab_tensor *t);

/* Verifies every entry as lab_golden_load does. Returns the first failure; *n_ok counts the good ones. */
lab_status lab_golden_verify(const char *dir, const lab_golden_manifest *m, size_t *n_ok);

#ifdef __cplusplus
}
#endif

#endif
