/* lab_err: status codes and the process-wide last-error message every lab module reports through. */
#include "lab_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* One buffer per thread: a case runs in its own process, and the threads of a parallel loop (lab_par.h) each keep
 * their own message until the loop hands the failing one to its caller. */
static _Thread_local char lab_err_buf[1024];

const char *lab_status_name(lab_status st)
{
    switch (st) {
    case LAB_OK: return "ok";
    case LAB_ERR_ARG: return "argument";
    case LAB_ERR_IO: return "io";
    case LAB_ERR_FORMAT: return "format";
    case LAB_ERR_MISMATCH: return "mismatch";
    case LAB_ERR_NOMEM: return "nomem";
    case LAB_ERR_UNSUPPORTED: return "unsupported";
    case LAB_ERR_NOTFOUND: return "notfound";
    case LAB_ERR_DEVICE: return "device";
    }
    return "unknown";
}

lab_status lab_err_set(lab_status st, const char *fmt, ...)
{
    char msg[sizeof lab_err_buf]; /* formatted aside: an argument may be lab_err_msg() itself */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(lab_err_buf, msg, sizeof msg);
    return st;
}

const char *lab_err_msg(void) { return lab_err_buf; }

void lab_err_clear(void) { lab_err_buf[0] = '\0'; }
