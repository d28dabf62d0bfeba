/* lab_semicrf_arena: the emulated device heap of the semi-CRF's CPU emulation (guard zones of seeded neighbour contents) and the guard kinds of a seed. */
#include "lab_semicrf_arena.h"

#include "lab_asan.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lab_rng.h"

lab_semicrf_guard_kind lab_semicrf_guard_kind_of(uint64_t seed)
{
    return (lab_semicrf_guard_kind)(lab_rng_u32(seed, LAB_SEMICRF_STREAM_GUARD, 0) % 4u);
}

const char *lab_semicrf_guard_kind_name(lab_semicrf_guard_kind k)
{
    switch (k) {
    case LAB_SEMICRF_GUARD_ZEROS: return "zeros";
    case LAB_SEMICRF_GUARD_FINITE: return "finite";
    case LAB_SEMICRF_GUARD_STALE: return "stale-bits";
    case LAB_SEMICRF_GUARD_SENTINELS: return "sentinels";
    }
    return "?";
}

/* Fills nwords 32-bit words of a guard zone; `first` numbers the zone's words in the seed's guard stream. Word i is
 * (idx = first + i + 1; word 0 picks the kind) by kind: 0; lab_rng_normal(seed, GUARD ^ 0x100, idx); the bits of
 * u = lab_rng_u32(seed, GUARD, idx); or by u % 16, -inf, +inf, NaN or that normal. Made in batches (lab_rng_fill_u32,
 * lab_rng_fill_normal: the same bits as the per-word calls). */
static void sc_guard_fill(unsigned char *dst, size_t nwords, uint64_t seed, lab_semicrf_guard_kind kind, uint64_t first)
{
    enum { NBATCH = 512 };
    uint32_t u[NBATCH];
    float nrm[NBATCH];
    for (size_t i0 = 0; i0 < nwords; i0 += NBATCH) {
        size_t m = nwords - i0 < NBATCH ? nwords - i0 : NBATCH;
        uint64_t idx0 = first + i0 + 1;
        if (kind == LAB_SEMICRF_GUARD_STALE || kind == LAB_SEMICRF_GUARD_SENTINELS)
            lab_rng_fill_u32(u, m, seed, LAB_SEMICRF_STREAM_GUARD, idx0);
        if (kind == LAB_SEMICRF_GUARD_FINITE || kind == LAB_SEMICRF_GUARD_SENTINELS)
            lab_rng_fill_normal(nrm, m, seed, LAB_SEMICRF_STREAM_GUARD ^ 0x100u, idx0);
        for (size_t i = 0; i < m; ++i) {
            float f;
            switch (kind) {
            case LAB_SEMICRF_GUARD_ZEROS: f = 0.0f; break;
            case LAB_SEMICRF_GUARD_FINITE: f = nrm[i]; break;
            case LAB_SEMICRF_GUARD_STALE: memcpy(&f, &u[i], 4); break;
            default: {
                unsigned r = u[i] % 16u;
                f = r == 0 ? -INFINITY : r == 1 ? INFINITY : r == 2 ? NAN : nrm[i];
            }
            }
            memcpy(dst + 4 * (i0 + i), &f, 4);
        }
    }
}

void lab_semicrf_guard_fill(void *dst, size_t nwords, uint64_t seed, uint64_t first)
{
    sc_guard_fill(dst, nwords, seed, lab_semicrf_guard_kind_of(seed), first);
}

lab_status lab_semicrf_arena_init(lab_semicrf_arena *ar, const size_t *n, const size_t *esz, const char *const *names,
                                  int na, uint64_t seed, lab_semicrf_out *o)
{
    memset(ar, 0, sizeof *ar);
    if (na < 0 || na > LAB_SEMICRF_ARENA_MAX)
        return lab_err_set(LAB_ERR_ARG, "semicrf: %d allocations: the emulated heap holds 0..%d", na, LAB_SEMICRF_ARENA_MAX);
    size_t total = 0;
    for (int i = 0; i < na; ++i) {
        size_t bytes = (n[i] * esz[i] + 15) & ~(size_t)15;
        total += 2 * LAB_SEMICRF_ARENA_GUARD_BYTES + bytes;
    }
    ar->mem = malloc(total);
    if (!ar->mem) return lab_err_set(LAB_ERR_NOMEM, "semicrf: out of memory for the emulated device heap (%zu bytes)", total);
    ar->size = total;
    ar->o = o;
    lab_semicrf_guard_kind kind = lab_semicrf_guard_kind_of(seed);
    size_t pos = 0;
    uint64_t word = 0;
    for (int i = 0; i < na; ++i) {
        size_t bytes = (n[i] * esz[i] + 15) & ~(size_t)15;
        sc_guard_fill(ar->mem + pos, LAB_SEMICRF_ARENA_GUARD_BYTES / 4, seed, kind, word);
        word += LAB_SEMICRF_ARENA_GUARD_BYTES / 4;
        ar->a[i].name = names[i];
        ar->a[i].off = pos + LAB_SEMICRF_ARENA_GUARD_BYTES;
        ar->a[i].n = n[i];
        ar->a[i].esz = esz[i];
        memset(ar->mem + ar->a[i].off, 0, bytes);
        /* the tail of the rounded data region is neighbour memory too */
        size_t tail = bytes - n[i] * esz[i];
        sc_guard_fill(ar->mem + ar->a[i].off + n[i] * esz[i], tail / 4, seed, kind, word);
        word += tail / 4;
        pos += LAB_SEMICRF_ARENA_GUARD_BYTES + bytes;
        sc_guard_fill(ar->mem + pos, LAB_SEMICRF_ARENA_GUARD_BYTES / 4, seed, kind, word);
        word += LAB_SEMICRF_ARENA_GUARD_BYTES / 4;
        pos += LAB_SEMICRF_ARENA_GUARD_BYTES;
    }
    ar->na = na;
    return LAB_OK;
}

void lab_semicrf_arena_exact(lab_semicrf_arena *ar)
{
    for (int i = 0; i < ar->na; ++i) {
        const lab_semicrf_alloc *a = &ar->a[i];
        size_t bytes = (a->n * a->esz + 15) & ~(size_t)15;
        lab_asan_poison(ar->mem + a->off - LAB_SEMICRF_ARENA_GUARD_BYTES, LAB_SEMICRF_ARENA_GUARD_BYTES, NULL);
        lab_asan_poison(ar->mem + a->off + a->n * a->esz, bytes - a->n * a->esz + LAB_SEMICRF_ARENA_GUARD_BYTES, a->name);
    }
}

void lab_semicrf_arena_free(lab_semicrf_arena *ar)
{
    if (ar->mem) lab_asan_unpoison(ar->mem, ar->size);
    free(ar->mem);
    ar->mem = NULL;
    ar->size = 0;
}
