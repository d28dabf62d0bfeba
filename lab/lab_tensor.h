/* lab_tensor: dense host tensors of the lab's dtypes, and .npy v1.0 reading/writing numpy loads unchanged. */
#ifndef LAB_TENSOR_H
#define LAB_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "lab_err.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LAB_TENSOR_MAXDIM 8

/* Element types. bf16 is stored in .npy as raw "<u2" bits; its true dtype lives in the MANIFEST. */
typedef enum { LAB_DT_F4, LAB_DT_F8, LAB_DT_U1, LAB_DT_U2, LAB_DT_I4, LAB_DT_BF16 } lab_dtype;

typedef struct {
    lab_dtype dtype;
    int ndim;                          /* 0..LAB_TENSOR_MAXDIM; 0 is a scalar of one element */
    size_t shape[LAB_TENSOR_MAXDIM];
    size_t numel;                      /* product of shape */
    void *data;                        /* numel * lab_dtype_size(dtype) bytes, C order, little endian */
} lab_tensor;

/* Bytes per element; 0 for a value outside the enum. */
size_t lab_dtype_size(lab_dtype dt);
/* Lab name: "f4", "f8", "u1", "u2", "i4", "bf16"; "?" for a value outside the enum. */
const char *lab_dtype_name(lab_dtype dt);
/* Parses a lab name; LAB_ERR_FORMAT naming the string if unknown. */
lab_status lab_dtype_parse(const char *name, lab_dtype *out);
/* numpy descr written to .npy: "<f4", "<f8", "|u1", "<u2", "<i4"; bf16 -> "<u2". */
const char *lab_dtype_npy_descr(lab_dtype dt);

/* Allocates a zeroed tensor (shape may be NULL when ndim is 0). LAB_ERR_ARG for an unknown dtype, ndim out
 * of range or a size numpy could not hold either (the non-zero dimensions times the element size above
 * 2^63-1, even when another dimension is 0); LAB_ERR_NOMEM. On failure *t is zeroed. */
lab_status lab_tensor_create(lab_tensor *t, lab_dtype dt, int ndim, const size_t *shape);
/* Frees data and zeroes *t; safe on a zeroed or already freed tensor. */
void lab_tensor_free(lab_tensor *t);

/* Serialises t as .npy v1.0 into a malloc'ed buffer, byte for byte what numpy's np.save writes (dict with
 * sorted keys, numpy's spare spaces after it, padded with spaces to a multiple of 64 bytes, ending in
 * '\n'). LAB_ERR_ARG for an inconsistent tensor (unknown dtype, ndim out of range, numel not the
 * product of the shape, NULL data), LAB_ERR_NOMEM. */
lab_status lab_npy_encode(const lab_tensor *t, uint8_t **buf, size_t *len);
/* Writes t to path as .npy v1.0, atomically. bf16 is written as "<u2". */
lab_status lab_npy_write(const char *path, const lab_tensor *t);

/* Parses a .npy v1.0/v2.0 image: magic, version, header dict ('descr', 'fortran_order' False,
 * 'shape'; keys in any order, each once, Python whitespace, ' or " quotes), and a payload of exactly
 * the declared size. Accepts the dtypes above ("<u1" or "|u1" for u1; bf16 comes back as LAB_DT_U2).
 * Every failure is LAB_ERR_FORMAT with a message starting with `name` and saying what is wrong (bad
 * magic, unsupported version, unsupported or big-endian descr, fortran order, negative or overflowing
 * shape, header length past the end, "truncated: expected N bytes of data, got M", "trailing bytes:
 * ..."), except LAB_ERR_NOMEM. Allocates at most the payload's size. On failure *t is zeroed.
 * Never reads outside buf[0..len). */
lab_status lab_npy_parse(const uint8_t *buf, size_t len, const char *name, lab_tensor *t);
/* Reads path and parses it as above (messages start with path); LAB_ERR_IO if unreadable. */
lab_status lab_npy_read(const char *path, lab_tensor *t);

#ifdef __cplusplus
}
#endif

#endif
