/* crf_contention: incident 0001's contention claim on a real GPU: many threads atomically adding exact zeros and exactly representable values onto shared float32 addresses, with a non-atomic control (CUDA, callable from C). */
#ifndef CRF_CONTENTION_H
#define CRF_CONTENTION_H

#ifdef __cplusplus
extern "C" {
#endif

#include "lab_err.h"

/* How each thread adds its value. */
typedef enum {
    CRF_CONT_ATOMIC = 0,    /* atomicAdd on float32, as the semi-CRF kernels issue their gradient updates */
    CRF_CONT_PLAIN_RMW = 1  /* control: a plain (volatile) load, add and store, no atomic: lanes of one warp that
                               share an address all read the old value and only one store survives, so updates
                               are lost; a check that cannot see this control lose updates has no power */
} crf_cont_op;

/* Limits of crf_contention_cuda's arguments. */
#define CRF_CONT_MAX_ADDR (1 << 20)
#define CRF_CONT_MAX_LANES 1024
#define CRF_CONT_MAX_BLOCKS 65535
#define CRF_CONT_MAX_REPS 64

#ifdef LAB_HAVE_CUDA
/* One launch of `blocks` blocks of `lanes` threads on a float32 buffer of n_addr values that starts as init:
 * thread t of every block adds lane_val[t] to buf[lane_addr[t]], `reps` times, with `op`; out (n_addr floats)
 * receives the buffer afterwards. With atomics every address ends at init + blocks * reps * (the sum of its
 * lanes' values), exactly, whatever the order, when every partial sum is representable (the caller chooses
 * such values); a lost update changes that sum. LAB_ERR_ARG (naming the argument) for n_addr outside
 * 1..CRF_CONT_MAX_ADDR, lanes outside 1..CRF_CONT_MAX_LANES, blocks outside 1..CRF_CONT_MAX_BLOCKS, reps outside
 * 1..CRF_CONT_MAX_REPS, a lane address outside 0..n_addr-1, an unknown op or a NULL array; LAB_ERR_DEVICE with the
 * CUDA error text (device memory is freed on every path). */
lab_status crf_contention_cuda(const float *init, int n_addr, const int *lane_addr, const float *lane_val, int lanes,
                               int blocks, int reps, crf_cont_op op, float *out);
#endif

#ifdef __cplusplus
}
#endif

#endif
