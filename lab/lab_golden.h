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

/* SHA-256 (OpenSSL libcrypto EVP) of a buffer / of a file, as 64 lowercase hex chars + NUL.
 * LAB_ERR_IO naming the path if the file cannot be read. */
lab_status lab_golden_sha256(const void *data, size_t len, char hex[65]);
lab_status lab_golden_sha256_file(const char *path, char hex[65]);

/* Parses manifest JSON (cJSON): {"incident": str, "files": [{"file","sha256","dtype","shape":[..],
 * "seed","producer"}...]}. Every field is required; unknown or repeated fields, a file listed twice,
 * a file that is not a plain name (empty, '/', "..", too long), a sha256 that is not 64 lowercase hex,
 * an unknown dtype, a shape that is not a list of at most LAB_TENSOR_MAXDIM non-negative integers, a
 * seed that is not an integer in 0..2^53 and text after the object are LAB_ERR_FORMAT with a message
 * naming `name`, the entry index (and its file once known) and the field. *m is overwritten (not freed)
 * and zeroed on failure. Never reads outside json[0..len). */
lab_status lab_golden_manifest_parse(const char *json, size_t len, const char *name, lab_golden_manifest *m);
/* Reads <dir>/MANIFEST.json. LAB_ERR_IO if missing. */
lab_status lab_golden_manifest_read(const char *dir, lab_golden_manifest *m);
/* Writes <dir>/MANIFEST.json atomically, pretty-printed, entries sorted by file name, integers with all
 * their digits. Checks the entries first as the parser would (LAB_ERR_ARG naming the index and field,
 * e.g. a seed above 2^53 or a file listed twice), so that what is written reads back. */
lab_status lab_golden_manifest_write(const char *dir, const lab_golden_manifest *m);
void lab_golden_manifest_free(lab_golden_manifest *m);

/* Writes t as <dir>/<file> (.npy) and adds or replaces its manifest entry (sha256 of the written
 * file, dtype = true_dtype, which may be LAB_DT_BF16 for a LAB_DT_U2 tensor). LAB_ERR_ARG for a file
 * name that is not plain, a seed above 2^53, a producer too long, or a true_dtype the tensor cannot
 * carry; I/O errors of the write. On failure m is unchanged. */
lab_status lab_golden_add(lab_golden_manifest *m, const char *dir, const char *file, const lab_tensor *t,
                          lab_dtype true_dtype, uint64_t seed, const char *producer);

/* Finds the entry for `file`, or NULL. */
const lab_golden_entry *lab_golden_find(const lab_golden_manifest *m, const char *file);

/* Loads <dir>/<e->file> and checks it, in this order: present (LAB_ERR_IO "missing"), sha256 matches
 * (LAB_ERR_MISMATCH "sha256 mismatch: manifest X, file Y"), parses (LAB_ERR_FORMAT, e.g. truncated),
 * stored dtype matches the manifest (LAB_ERR_MISMATCH "dtype mismatch: manifest bf16, file <f4"; bf16
 * is stored as <u2), shape matches (LAB_ERR_MISMATCH "shape mismatch: manifest (..), file (..)"). An
 * entry with a file name that is not plain is LAB_ERR_ARG. The message starts with the file's path.
 * On success t->dtype is the manifest's true dtype (LAB_DT_BF16 for a bf16 entry); on failure *t is
 * zeroed. */
lab_status lab_golden_load(const char *dir, const lab_golden_entry *e, lab_tensor *t);

/* Verifies every entry as lab_golden_load does, trying all of them. Returns the first failure (its
 * message kept); *n_ok (may be NULL) counts the good ones. */
lab_status lab_golden_verify(const char *dir, const lab_golden_manifest *m, size_t *n_ok);

/* What `lab golden verify` checks for the incident `incident` whose goldens live in dir: the MANIFEST names
 * that incident (LAB_ERR_MISMATCH "MANIFEST names incident X, not Y"), lists at least one file
 * (LAB_ERR_FORMAT "lists no files"), and every file in dir other than MANIFEST.json is listed
 * (LAB_ERR_MISMATCH "<path>: not listed in the MANIFEST"); then lab_golden_verify. The message names the
 * directory or file. *n_ok (may be NULL) as lab_golden_verify, 0 when a check before it fails. */
lab_status lab_golden_verify_strict(const char *dir, const char *incident, const lab_golden_manifest *m, size_t *n_ok);

#ifdef __cplusplus
}
#endif

#endif
