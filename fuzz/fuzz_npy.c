/* fuzz_npy: libFuzzer entry point for lab_npy_parse; a parsed tensor must re-encode and parse back identically. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lab_tensor.h"

/* Parses arbitrary bytes; on success checks the round trip encode -> parse (abort() on a difference,
 * which libFuzzer reports as a crash). Always returns 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lab_tensor t, u;
    if (lab_npy_parse(data, size, "fuzz.npy", &t) != LAB_OK) {
        if (t.data) abort(); /* a failed parse must leave nothing allocated */
        return 0;
    }
    uint8_t *buf;
    size_t len;
    if (lab_npy_encode(&t, &buf, &len) != LAB_OK) abort();
    if (lab_npy_parse(buf, len, "re.npy", &u) != LAB_OK) abort();
    size_t nb = t.numel * lab_dtype_size(t.dtype);
    if (u.dtype != t.dtype || u.ndim != t.ndim || u.numel != t.numel || memcmp(u.shape, t.shape, sizeof t.shape) ||
        (nb && memcmp(u.data, t.data, nb)))
        abort();
    /* Encoding is canonical: what we wrote encodes to the very same bytes again. */
    uint8_t *buf2;
    size_t len2;
    if (lab_npy_encode(&u, &buf2, &len2) != LAB_OK || len2 != len || memcmp(buf, buf2, len)) abort();
    free(buf2);
    free(buf);
    lab_tensor_free(&u);
    lab_tensor_free(&t);
    return 0;
}
