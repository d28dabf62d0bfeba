/* lab_semicrf_arena: the emulated device heap of the semi-CRF's CPU emulation: buffers between guard zones of seeded contents, loads and atomics that count every access past an allocation. */
#ifndef LAB_SEMICRF_ARENA_H
#define LAB_SEMICRF_ARENA_H

/* Contract. An arena lays out up to LAB_SEMICRF_ARENA_MAX allocations, each as [guard zone][data, rounded up
 * to 16 bytes][guard zone]; the data starts zeroed, the guard zones (and the rounding tail) hold the seed's
 * neighbour contents (lab_semicrf_guard_kind_of). A load or an atomic at element i of an allocation:
 *   - inside the allocation: plain;
 *   - past it but within its guard zones: done on the neighbour's bytes (as on a GPU), and counted in the
 *     arena's lab_semicrf_out (oob_reads, oob_writes; a non-finite value read there in guard_nonfinite_read);
 *   - beyond the guard zones: not done (a load returns 0), and the arena's err records LAB_ERR_UNSUPPORTED
 *     naming the buffer (the first such error only). The caller checks ar->err.
 * Every atomic counts in o->n_atomics. Only the semi-CRF emulation (lab_semicrf_emu.c) uses it. */

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "lab_semicrf.h"

/* Guard zone on each side of an allocation: more than the farthest stray access of any layout
 * (the unpadded transition tile reaches at most 1056 elements, of up to 8 bytes, past its end). */
#define LAB_SEMICRF_ARENA_GUARD_BYTES (2048 * 8)
#define LAB_SEMICRF_ARENA_MAX 16

typedef struct {
    const char *name;
    size_t off;   /* byte offset of element 0 */
    size_t n;     /* elements */
    size_t esz;   /* 4 (float) or 8 (double) */
} lab_semicrf_alloc;

typedef struct {
    unsigned char *mem;
    size_t size;
    lab_semicrf_alloc a[LAB_SEMICRF_ARENA_MAX];
    int na;
    lab_semicrf_out *o;   /* where accesses are counted */
    lab_status err;       /* the first access beyond a guard zone, else LAB_OK */
} lab_semicrf_arena;

/* Lays out na (<= LAB_SEMICRF_ARENA_MAX) allocations of n[i] elements of esz[i] bytes named names[i] (names
 * are kept, not copied), guard zones filled from `seed`, counting into o. LAB_ERR_ARG for na outside
 * 0..LAB_SEMICRF_ARENA_MAX, LAB_ERR_NOMEM (ar->mem NULL either way). */
lab_status lab_semicrf_arena_init(lab_semicrf_arena *ar, const size_t *n, const size_t *esz, const char *const *names,
                                  int na, uint64_t seed, lab_semicrf_out *o);
/* A memory checker watches (cfg->exact_alloc: an AddressSanitizer build's replay worker, lab_asan.h): the
 * guard zones and rounding tails stop being memory, so each buffer is exactly its own size to ASan and the
 * first stray load or atomic is its report ("N bytes past the end of <buffer>"). Outside an ASan build a
 * no-op. Undone by lab_semicrf_arena_free. */
void lab_semicrf_arena_exact(lab_semicrf_arena *ar);
/* Frees the heap (ar->mem NULL is fine). */
void lab_semicrf_arena_free(lab_semicrf_arena *ar);

/* Byte address of element i of allocation id, or NULL (error recorded) beyond its guard zones.
 * Counts accesses outside the allocation. */
static inline unsigned char *lab_semicrf_arena_addr(lab_semicrf_arena *ar, int id, long i, int write)
{
    lab_semicrf_alloc *a = &ar->a[id];
    if (i < 0 || (size_t)i >= a->n) {
        long lo = -(long)(LAB_SEMICRF_ARENA_GUARD_BYTES / a->esz), hi = (long)a->n + (long)(LAB_SEMICRF_ARENA_GUARD_BYTES / a->esz);
        if (i < lo || i >= hi) {
            if (ar->err == LAB_OK)
                ar->err = lab_err_set(LAB_ERR_UNSUPPORTED, "semicrf: %s[%ld] lies beyond the emulated guard zone "
                                      "(allocation of %zu)", a->name, i, a->n);
            return NULL;
        }
        if (write)
            ar->o->oob_writes++;
        else
            ar->o->oob_reads++;
    }
    return ar->mem + (ptrdiff_t)a->off + (ptrdiff_t)a->esz * (ptrdiff_t)i;
}

/* A float32 load of element i of allocation id (0 beyond the guard zones). */
static inline float lab_semicrf_arena_ld(lab_semicrf_arena *ar, int id, long i)
{
    unsigned char *q = lab_semicrf_arena_addr(ar, id, i, 0);
    float f = 0.0f;
    if (q) memcpy(&f, q, 4);
    if (q && (i < 0 || (size_t)i >= ar->a[id].n) && !isfinite(f)) ar->o->guard_nonfinite_read++;
    return f;
}

/* atomicAdd: read-modify-write of one element, in float32 or float64 as the allocation is. */
static inline void lab_semicrf_arena_atomic_add(lab_semicrf_arena *ar, int id, long i, float v)
{
    unsigned char *q = lab_semicrf_arena_addr(ar, id, i, 1);
    ar->o->n_atomics++;
    if (!q) return;
    if (ar->a[id].esz == 4) {
        float f;
        memcpy(&f, q, 4);
        f = f + v;
        memcpy(q, &f, 4);
    } else {
        double d;
        memcpy(&d, q, 8);
        d = d + (double)v;
        memcpy(q, &d, 8);
    }
}

/* An atomic by a lane whose index runs past its row (stray): counted as a cross-row write when it still
 * lands inside the allocation (an out-of-allocation one is counted by lab_semicrf_arena_addr). */
static inline void lab_semicrf_arena_atomic_row(lab_semicrf_arena *ar, int id, long i, float v, int stray)
{
    if (stray && i >= 0 && (size_t)i < ar->a[id].n) ar->o->cross_row_writes++;
    lab_semicrf_arena_atomic_add(ar, id, i, v);
}

/* Element i (inside the allocation) of allocation id, widened to double. */
static inline double lab_semicrf_arena_get(const lab_semicrf_arena *ar, int id, size_t i)
{
    const unsigned char *q = ar->mem + ar->a[id].off + ar->a[id].esz * i;
    if (ar->a[id].esz == 4) {
        float f;
        memcpy(&f, q, 4);
        return (double)f;
    }
    double d;
    memcpy(&d, q, 8);
    return d;
}

/* Stores float32 v at element i (inside the allocation) of allocation id (a plain store, not counted). */
static inline void lab_semicrf_arena_put_f32(lab_semicrf_arena *ar, int id, size_t i, float v)
{
    memcpy(ar->mem + ar->a[id].off + 4 * i, &v, 4);
}

#endif
