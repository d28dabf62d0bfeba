/* crf_oob: incident 0001, the semi-Markov CRF backward whose C_PAD padding lanes reached past C-sized gradient buffers: variants, criterion, goldens. */
#ifndef CRF_OOB_H
#define CRF_OOB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "lab_err.h"
#include "lab_incident.h"
#include "lab_semicrf.h"

/* Golden seeds: T = 200 and T = 500 (lab_semicrf_T_of_seed). */
#define CRF_OOB_GOLDEN_SEED_A 1u
#define CRF_OOB_GOLDEN_SEED_B 2u

/* What one case measured. */
typedef struct {
    int T;
    lab_semicrf_guard_kind guard_kind;
    lab_semicrf_err err;      /* against the float64 reference */
    double tol;               /* lab_semicrf_tolerance */
    size_t oob_reads, oob_writes, cross_row_writes, same_addr_lanes, n_atomics, guard_nonfinite_reads;
    size_t pad_nonzero;       /* padded layout: non-zero values left in the dropped padding columns */
    int golden_checked;
    double golden_err;
    int passed;
} crf_oob_verdict;

/* Runs the emulated backward of case `seed` under `layout` (float32 atomics, the case's schedule and
 * guard contents, guards as given), compares with the float64 reference and, at a golden seed with
 * golden_dir non-NULL, with the golden. The criterion: no load or atomic outside an allocation, nothing but
 * zeros written into the padded layout's padding columns (the masked lanes' writes, which the slice drops),
 * every gradient finite, normalised error within lab_semicrf_tolerance, golden within the same tolerance.
 * Records metrics and verdict in r (may be NULL); v may be NULL. Errors: the kernel's, golden loading. */
lab_status crf_oob_run(uint64_t seed, lab_semicrf_layout layout, unsigned guards, const char *golden_dir,
                       lab_case_result *r, crf_oob_verdict *v);

lab_status crf_oob_golden_bless(const char *dir);

extern const lab_incident crf_oob_incident;

#ifdef __cplusplus
}
#endif

#endif
