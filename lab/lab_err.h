/* lab_err: status codes and the process-wide last-error message every lab module reports through. */
#ifndef LAB_ERR_H
#define LAB_ERR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes returned by every fallible lab function. LAB_OK is zero. */
typedef enum {
    LAB_OK = 0,
    LAB_ERR_ARG,        /* a caller passed an invalid argument or flag */
    LAB_ERR_IO,         /* open/read/write/rename failed */
    LAB_ERR_FORMAT,     /* a file's contents are malformed (npy header, manifest JSON, ...) */
    LAB_ERR_MISMATCH,   /* data is well-formed but not what was expected (sha256, dtype, shape) */
    LAB_ERR_NOMEM,      /* an allocation failed */
    LAB_ERR_UNSUPPORTED,/* a feature, dtype or backend that this build does not have */
    LAB_ERR_NOTFOUND,   /* a named thing (incident, variant, file) does not exist */
    LAB_ERR_DEVICE      /* a CUDA call failed; the message holds the CUDA error text */
} lab_status;

/* Short stable name of a status ("ok", "io", "format", ...). Never NULL. */
const char *lab_status_name(lab_status st);

/* Sets the last-error message (printf-style) and returns st, so callers can write
 * `return lab_err_set(LAB_ERR_IO, "%s: %s", path, strerror(errno));`. An argument may be lab_err_msg() itself (a
 * message put in context: `lab_err_set(st, "%s: %s", path, lab_err_msg())`). */
lab_status lab_err_set(lab_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The last message set by lab_err_set, or "" if none. Valid until the next lab_err_set. */
const char *lab_err_msg(void);

/* Clears the last-error message. */
void lab_err_clear(void);

#ifdef __cplusplus
}
#endif

#endif
