/* fuzz_manifest: libFuzzer entry point for lab_golden_manifest_parse on arbitrary bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lab_golden.h"

/* Parses arbitrary bytes as a manifest; on success checks what the parser promises (plain file names,
 * 64-hex sha256, known dtypes, ndim in range, seeds up to 2^53, lookups find every entry), abort()ing
 * on a broken promise. Always returns 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lab_golden_manifest m;
    if (lab_golden_manifest_parse((const char *)data, size, "fuzz.json", &m) != LAB_OK) {
        if (m.entries || m.n) abort();
        return 0;
    }
    for (size_t i = 0; i < m.n; ++i) {
        const lab_golden_entry *e = &m.entries[i];
        if (!e->file[0] || strchr(e->file, '/') || strcmp(e->file, "..") == 0) abort();
        if (strlen(e->sha256) != 64 || strspn(e->sha256, "0123456789abcdef") != 64) abort();
        if (lab_dtype_size(e->dtype) == 0) abort();
        if (e->ndim < 0 || e->ndim > LAB_TENSOR_MAXDIM) abort();
        if (e->seed > ((uint64_t)1 << 53)) abort();
        if (lab_golden_find(&m, e->file) != e) abort();
    }
    lab_golden_manifest_free(&m);
    return 0;
}
