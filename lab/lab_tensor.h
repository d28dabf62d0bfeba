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

/* Bytes per element. */
size_t lab_dtype_size(lab_dtype dt);
/* Lab name: "f4", "f8", "u1", "u2", "i4", "bf16". */
const char *lab_dtype_name(lab_dtype dt);
/* Parses a lab name; LAB_ERR_FORMAT naming the string if unknown. */
lab_status lab_dtype_parse(const char *name, lab_dtype *out);
/* numpy descr written to .npy: "<f4", "<f8", "|u1", "<u2", "<i4"; bf16 -> "<u2". */
const char *lab_dtype_npy_descr(lab_dtype dt);

/* Allocates a zeroed tensor. LAB_ERR_ARG for ndim out of range or an overflowing size, LAB_ERR_NOMEM. */
lab_status lab_tensor_create(lab_tensor *t, lab_dtype dt, int ndim, const size_t *shape);
/* Frees data and zeroes *t; safe on a zeroed or already freed tensor. */
void lab_tensor_free(lab_tensor *t);

/* Serialises t as .npy v1.0 (header padded to a multiple of 64 bytes, ending in '\n') into a malloc'ed
 * buffer. */
lab_status lab_npy_encode(const lab_tensor *t, uint8_t **buf, size_t *len);
/* Writes t to path as .npy v1.0, atomically. bf16 is written as "<u2". */
lab_status lab_npy_write(const char *path, const lab_tensor *t);

/* Parses a .npy v1.0/v2.0 image: magic, version, header dict ('descr', 'fortran_order' False,
 * 'shape'), and a payload of exactly the declared size. Accepts the dtypes above (bf16 comes back as
 * LAB_DT_U2). Every failure is LAB_ERR_FORMAT with a message starting with `name` and saying what is
 * wrong (bad magic, unsupported descr, fortran order, truncated payload: expected N bytes, got M...).
 * Never reads outside buf[0..len). */
lab_status lab_npy_parse(const uint8_t *buf, size_t len, const char *name, lab_tensor *t);
/* Reads path and parses it as above; LAB_ERR_IO if unreadable. */
lab_status lab_npy_read(const char *path, lab_tensor *t);

#ifdef __cplusplus
}
#endif

#endif
