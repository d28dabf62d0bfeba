/* crf_guards: incident 0001's study of the write-up's defensive guards under stress: each guard removed in turn from the fixed kernel under drifted CRF parameters, and from the logsumexp and marginal over padded lanes. */
#ifndef CRF_GUARDS_H
#define CRF_GUARDS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "lab_err.h"
#include "lab_semicrf.h"

/* What removing one guard did, against the same computation with every guard on. */
typedef struct {
    unsigned removed;          /* the LAB_SEMICRF_GUARD_* flag taken out (0: none, the baseline) */
    size_t n;                  /* values compared */
    size_t bits_changed;       /* values whose bits differ from the all-guards run */
    size_t nan, inf;           /* non-finite values in the run without the guard */
    double max_change;         /* largest |with - without| where both are finite */
    double max_rel_err;        /* kernel study: max over tensors of max|g - ref| / max|ref| against the float64
                                  reference of the drifted problem (NaN when anything is non-finite) */
} crf_guards_row;

/* Kernel study: the fixed kernel (padded layout, float32 atomics, the seed's schedule) on case `seed`'s problem
 * with the transitions and duration biases scaled so that their largest magnitude is `drift` (the write-up warns
 * above 20), run with every guard and without `removed`; gradients and log Z compared bit for bit. LAB_ERR_ARG for
 * drift <= 0; the emulator's and reference's errors. */
lab_status crf_guards_kernel(uint64_t seed, double drift, unsigned removed, crf_guards_row *row);

/* Inputs of the padded-lane study. */
typedef enum {
    CRF_GUARDS_LSE_PADDED = 0,   /* logsumexp over C_PAD = 64 lanes: 39 real scores (drifted: normal * drift * 10)
                                    and 25 padding lanes at NEG_INF = -1e9, as the kernel's tl.max/tl.sum see them */
    CRF_GUARDS_LSE_ALL_PAD,      /* every lane NEG_INF: a position past the sequence's end */
    CRF_GUARDS_LSE_ALL_MINUS_INF,/* every lane a true -inf (a mask filled with -inf instead of -1e9) */
    CRF_GUARDS_MARG_PADDED,      /* marginals of padding lanes: alpha = beta = NEG_INF with drifted edges */
    CRF_GUARDS_MARG_REAL,        /* marginals of real lanes with drifted alpha, edge, beta, and log Z off by up to
                                    +-100 (a log Z from a stale or reordered forward) */
    CRF_GUARDS_NKIND
} crf_guards_kind;
const char *crf_guards_kind_name(crf_guards_kind k);

/* Padded-lane study: 4096 inputs of kind k from (seed, drift) through lab_semicrf_lse_f32 /
 * lab_semicrf_marginal_f32 with every guard and without `removed`. max_rel_err is unused (NaN). Never fails
 * for a valid kind (LAB_ERR_ARG otherwise). */
lab_status crf_guards_padded(crf_guards_kind k, uint64_t seed, double drift, unsigned removed, crf_guards_row *row);

/* Name of one guard flag ("neginf", "eps", "clamp-in", "clamp-log"; "none" for 0). */
const char *crf_guards_name(unsigned flag);

#ifdef __cplusplus
}
#endif

#endif
