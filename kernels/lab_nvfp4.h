/* lab_nvfp4: NVFP4 quantization along K, the 128x4 block-scale-factor layout and its remap, a block-scaled GEMM (CPU; CUDA in lab_nvfp4.cu), its float64 reference and a namer of layout faults. */
#ifndef LAB_NVFP4_H
#define LAB_NVFP4_H

#include <stddef.h>
#include <stdint.h>

#include "lab_hd.h"

#ifdef __cplusplus
extern "C" {
#endif

#include "lab_err.h"

/* Elements per scale block (one E4M3 scale factor per 16 consecutive elements along K). */
#define LAB_NVFP4_BLOCK 16
/* The scale-factor tile: 128 rows x 4 scale columns, 512 bytes. */
#define LAB_NVFP4_TILE_ROWS 128
#define LAB_NVFP4_TILE_COLS 4
#define LAB_NVFP4_TILE_BYTES 512
/* Largest E2M1 and E4M3 magnitudes: the common recipe maps a tensor's amax to 6 * 448. */
#define LAB_NVFP4_E2M1_MAX 6.0f
#define LAB_NVFP4_E4M3_MAX 448.0f

/* Byte offset of scale factor (m, k) (row m, scale column k) in the block-scaled layout of CUTLASS's
 * Sm1xxBlockScaledConfig / cuBLAS for 16-element vectors, with k_sf scale columns in all:
 * ((m/128)*ceil(k_sf/4) + k/4)*512 + (m%32)*16 + ((m%128)/32)*4 + k%4. Pure; no bounds check (m, k may lie
 * in the padding). */
static inline LAB_HD size_t lab_nvfp4_sf_offset(size_t m, size_t k, size_t k_sf)
{
    size_t k_tiles = (k_sf + 3) / 4;
    return ((m / 128) * k_tiles + k / 4) * 512 + (m % 32) * 16 + ((m % 128) / 32) * 4 + k % 4;
}

/* CuTe's view of the same layout: CUTLASS's Sm1xxBlockScaledConfig<16> builds it as
 * tile_to_shape(SfKMajorAtom, (M, K, L), Step<_2,_1,_3>) with the atom ((32,4),(16,4)):((16,4),(0,1)). Tiling keeps
 * the atom's modes: mode 0 is M, (32, 4, m_tiles):(16, 4, 512*k_tiles), mode 1 is K in elements,
 * (16, 4, k_tiles):(0, 1, 512); Step<_2,_1> only puts the K tiles inner in memory. Flattened (L = 1 dropped):
 * shape (32, 4, m_tiles, 16, 4, k_tiles), stride (16, 4, 512*k_tiles, 0, 1, 512). */
#define LAB_NVFP4_CUTE_MODES 6
/* The layout function: byte offset of flat coordinate c (each c[i] below its mode's extent). */
size_t lab_nvfp4_sf_cute_offset(const size_t c[LAB_NVFP4_CUTE_MODES], size_t rows, size_t k_sf);
/* The flat coordinate of byte offset o < cosize, as CuTe's idx2crd(o, shape, stride) gives it mode by mode,
 * (o / stride) % shape, with the stride-0 mode (the 16 elements that share a scale) at 0. */
void lab_nvfp4_sf_cute_coord(size_t o, size_t rows, size_t k_sf, size_t c[LAB_NVFP4_CUTE_MODES]);
/* The two extractions of the write-up's remap from a flat coordinate. mfirst (its code before commit deb6b32):
 * m = c0 + 32 c1 + 128 c2, k_sf = c4 + 4 c5. kfirst (its "fix"): k_sf = c0 + 32 c1 + 128 c2,
 * m = c3 + 16 c4 + 64 c5. */
void lab_nvfp4_sf_extract_mfirst(const size_t c[LAB_NVFP4_CUTE_MODES], size_t *m, size_t *k);
void lab_nvfp4_sf_extract_kfirst(const size_t c[LAB_NVFP4_CUTE_MODES], size_t *m, size_t *k);

/* Rows padded to 128 and scale columns padded to 4: the physical size (cosize) in bytes of the layout of
 * a (rows, k_sf) scale matrix; 0 when either is 0. */
size_t lab_nvfp4_sf_cosize(size_t rows, size_t k_sf);

/* What the remap does. FIX is the correct remap; the others are faults, frozen as they were (the
 * incident's variants) or candidates for the fault namer. */
typedef enum {
    LAB_NVFP4_REMAP_FIX = 0,        /* one pass over every physical byte (cosize), coordinates from the
                                       byte offset, padding written as E4M3 +0 */
    LAB_NVFP4_REMAP_SIZE_NOT_COSIZE,/* loop bound the logical size rows*k_sf: a pass over the logical
                                       entries only; every real scale placed, padding never written */
    LAB_NVFP4_REMAP_MK_SWAP,        /* cosize pass, but the source coordinate takes M and K the wrong way
                                       round: reads src[k*rows + m] instead of src[m*k_sf + k] */
    LAB_NVFP4_REMAP_TILE_SWAP,      /* cosize pass, tiles in K-outer order: tile (mt, kt) at kt*m_tiles+mt */
    LAB_NVFP4_REMAP_COUNT,          /* the kinds the CUDA remap implements (lab_nvfp4.cu refuses the rest) */
    /* CPU only (the CUDA remap answers LAB_ERR_ARG): */
    LAB_NVFP4_REMAP_MK_COORD = LAB_NVFP4_REMAP_COUNT,
                                    /* cosize pass through CuTe's flattened coordinate of the position
                                       (lab_nvfp4_sf_cute_coord) with the write-up's "fixed" extraction
                                       (lab_nvfp4_sf_extract_kfirst: k_sf from modes 0..2, m from 3..5); the
                                       source read only where that (m, k_sf) is in range, else E4M3 +0 */
    LAB_NVFP4_REMAP_CPU_COUNT
} lab_nvfp4_remap_kind;

/* Name of a remap kind ("fix", "size-not-cosize", "mk-swap", "tile-swap", "mk-coord"); "?" outside the enum. */
const char *lab_nvfp4_remap_name(lab_nvfp4_remap_kind kind);

/* Remaps row-major (rows, k_sf) E4M3 scales src into dst (dst_len bytes, at least
 * lab_nvfp4_sf_cosize(rows, k_sf)) as `kind` does. Bytes of dst that the kind does not write keep what
 * was there (stale memory is the caller's, seeded). LAB_ERR_ARG for a zero or overflowing shape, a dst
 * too small, NULL buffers or an unknown kind. */
lab_status lab_nvfp4_sf_remap(const uint8_t *src, size_t rows, size_t k_sf, uint8_t *dst, size_t dst_len,
                              lab_nvfp4_remap_kind kind);

/* NVFP4 quantization of a row-major (rows, k) float matrix along k (k a positive multiple of 16), the common
 * recipe: global = 448*6/amax (float32; amax over the whole matrix), per 16-element block
 * sf = e4m3(global * amax_block / 6), q = e2m1(x * global / sf) (q = 0 where sf decodes to 0), two codes per
 * byte with the even element in the low nibble. q: rows*k/2 bytes; sf: rows*(k/16) bytes row-major;
 * *global receives the global scale. LAB_ERR_ARG for a bad shape, NULL buffers, a non-finite input or an
 * all-zero matrix (amax 0 has no global scale). */
lab_status lab_nvfp4_quantize(const float *x, size_t rows, size_t k, uint8_t *q, uint8_t *sf, float *global);

/* Dequantization of the above: x(r, c) = e2m1(q) * e4m3(sf[r][c/16]) / global, in float32 (the product of an
 * E2M1 and an E4M3 value is exact; the division rounds once). LAB_ERR_ARG for a bad shape, NULL buffers or a
 * global scale that is not finite and positive. */
lab_status lab_nvfp4_dequantize(const uint8_t *q, const uint8_t *sf, size_t rows, size_t k, float global, float *x);

/* alpha = 1 / (global_a * global_b) in float32, as the GEMM is given it. */
float lab_nvfp4_alpha(float global_a, float global_b);

/* The block-scaled GEMM as the tensor cores compute it, on the CPU: out (m x n, row-major) =
 * alpha * A * B^T with A (m x k) and B (n x k) packed E2M1 (lab_nvfp4_quantize's packing) and their scales
 * read through the layout (sfa_layout, sfb_layout: cosize bytes each). K runs in tiles of 64 elements
 * (4 scales): K is padded to a multiple of 64 with zero data, and the padded blocks' scales are read from the
 * layout's padding like any other (0 * a NaN scale is NaN). Per output: for each block b in order, the
 * 16-element dot of E2M1 values s_b (exact in float32), t_b = s_b * (sfa * sfb) (exact), acc = acc + t_b in
 * float32; out = alpha * acc. No fused multiply-add. Bit-identical to the CUDA kernel. LAB_ERR_ARG for a bad
 * shape (k not a positive multiple of 16) or NULL buffers; LAB_ERR_NOMEM. */
lab_status lab_nvfp4_gemm(const uint8_t *qa, const uint8_t *sfa_layout, const uint8_t *qb, const uint8_t *sfb_layout,
                          size_t m, size_t n, size_t k, float alpha, float *out);
/* A GEMM of lab_nvfp4_gemm's signature and bits (host buffers): lab_nvfp4_gemm, or lab_nvfp4_cuda_gemm_host. */
typedef lab_status (*lab_nvfp4_gemm_fn)(const uint8_t *qa, const uint8_t *sfa_layout, const uint8_t *qb,
                                        const uint8_t *sfb_layout, size_t m, size_t n, size_t k, float alpha, float *out);

/* The float64 reference: ref = A_deq * B_deq^T with A_deq(i, c) = e2m1 * e4m3(sfa[i][c/16]) / global_a from
 * the row-major scales (no layout), in double; abs (may be NULL) receives sum_c |A_deq B_deq| per output,
 * the scale of the rounding bound. LAB_ERR_ARG / LAB_ERR_NOMEM as above. */
lab_status lab_nvfp4_gemm_ref(const uint8_t *qa, const uint8_t *sfa, float global_a, const uint8_t *qb,
                              const uint8_t *sfb, float global_b, size_t m, size_t n, size_t k, double *ref,
                              double *abs);

/* The rounding bound of one output of lab_nvfp4_gemm against the reference, relative to sum |a b|:
 * gamma_{k/16 + 4} = n u / (1 - n u) with u = 2^-24 (k/16 - 1 float32 additions, alpha's two roundings, the
 * final product, and one for the double reference). */
double lab_nvfp4_gemm_gamma(size_t k);

/* How far a second float64 reference (ref2, abs2; the device's, lab_nvfp4_gemm_ref_cuda) is from the first (ref,
 * abs; lab_nvfp4_gemm_ref) over m*n outputs, as a fraction of what two correct ones may differ by: each sums k
 * products of exactly decoded values (one rounding each) in its own order, so each is within gamma_{k+2} sum|a b|
 * of the exact value (u = 2^-53), and the two within twice that. Returns the largest |ref2 - ref| and |abs2 - abs|
 * over 2 gamma_{k+2} abs (NaN if any value is non-finite or an abs is 0 where they differ): at most 1 when both are
 * right. */
double lab_nvfp4_ref_disagreement(const double *ref, const double *abs, const double *ref2, const double *abs2, size_t mn,
                                  size_t k);

/* One block-scaled GEMM problem with its operands, for the fault namer. */
typedef struct {
    size_t m, n, k;
    const uint8_t *qa, *qb;          /* packed E2M1, m*k/2 and n*k/2 bytes */
    const uint8_t *sfa, *sfb;        /* row-major scales, m*(k/16) and n*(k/16) bytes */
    float global_a, global_b;
} lab_nvfp4_problem;

/* Candidate faults the namer knows. */
typedef enum {
    LAB_NVFP4_FAULT_NONE = 0,        /* the correct layout explains the output */
    LAB_NVFP4_FAULT_MK_SWAP,         /* M/K-swapped layout (remap reads src[k*rows + m]) */
    LAB_NVFP4_FAULT_TILE_SWAP,       /* tile order swapped (K-outer tiles) */
    LAB_NVFP4_FAULT_PADDING,         /* padding unwritten: stale NaN scale codes read in the K padding */
    LAB_NVFP4_FAULT_NIBBLE,          /* nibble order swapped (odd element in the low nibble) in one operand: A
                                        or B, which give the same products (a0 b1 + a1 b0 either way), so the
                                        namer cannot tell which; in both, nothing changes */
    LAB_NVFP4_FAULT_UNKNOWN,         /* none of the above explains it */
    LAB_NVFP4_FAULT_COUNT
} lab_nvfp4_fault;

/* Short name of a fault, as the namer writes it ("the M/K-swapped layout", ...). */
const char *lab_nvfp4_fault_name(lab_nvfp4_fault f);

/* Cosine an explanation must reach (the fix's own criterion). */
#define LAB_NVFP4_NAMER_MATCH 0.9999

/* What the namer found. */
typedef struct {
    lab_nvfp4_fault fault;           /* the best explanation; UNKNOWN when none reaches the match cosine */
    double cosine;                   /* its cosine with the observed output (over the finite entries) */
    lab_nvfp4_fault runner_up;       /* the next best candidate */
    double runner_up_cosine;
    double cosine_of[LAB_NVFP4_FAULT_UNKNOWN]; /* every candidate's cosine (NaN: not applicable) */
    char text[200];                  /* "matches the M/K-swapped layout, cosine 0.99998" / "no known fault ..." */
} lab_nvfp4_diagnosis;

/* Names the layout fault that explains `observed` (m x n) of a block-scaled GEMM of problem p: recomputes the
 * GEMM under the correct layout and under each candidate fault and compares. Padding: explains outputs that
 * equal the correct ones except for NaN in whole rows and columns, when k/16 is not a multiple of 4 (padding
 * is read). Other candidates: cosine over all entries, every entry finite. LAB_ERR_ARG for a bad problem;
 * LAB_ERR_NOMEM. */
lab_status lab_nvfp4_name_fault(const lab_nvfp4_problem *p, const float *observed, lab_nvfp4_diagnosis *d);
/* The same with the candidates' GEMMs computed by `gemm` (a CUDA replay passes lab_nvfp4_cuda_gemm_host: the same
 * bits, so the same diagnosis, without four CPU GEMMs per failing case). */
lab_status lab_nvfp4_name_fault_with(const lab_nvfp4_problem *p, const float *observed, lab_nvfp4_gemm_fn gemm,
                                     lab_nvfp4_diagnosis *d);

#ifdef LAB_HAVE_CUDA
/* CUDA (lab_nvfp4.cu). Device pointers unless named host_. Every CUDA call is checked: LAB_ERR_DEVICE with
 * "file:line: cudaXxx: <error>"; kernel launch and execution errors alike. */

/* The remap on the device, launched on `stream` (a cudaStream_t; NULL: the default stream) without waiting: same
 * kinds and semantics as lab_nvfp4_sf_remap (dst bytes a kind does not write are left untouched). LAB_ERR_ARG for
 * a bad shape or kind, LAB_ERR_DEVICE on a launch error; execution errors surface at the stream's next wait. */
lab_status lab_nvfp4_cuda_sf_remap_async(const uint8_t *src, size_t rows, size_t k_sf, uint8_t *dst,
                                         lab_nvfp4_remap_kind kind, void *stream);
/* The fixed remap as it was before the tiled kernel (one 32-bit word per thread), on `stream`, not
 * synchronized: the bench's reference for bit identity and its "before" timing. */
lab_status lab_nvfp4_cuda_sf_remap_words_async(const uint8_t *src, size_t rows, size_t k_sf, uint8_t *dst,
                                               void *stream);
/* Test hook: uploads host_src, remaps its rows x k_sf scales starting at byte src_offset (words_only 1: the
 * one-word-per-thread kernel, else the tiled one where alignment allows) and copies the layout into
 * host_dst. LAB_ERR_ARG for a bad shape, LAB_ERR_DEVICE. Synchronous. */
lab_status lab_nvfp4_cuda_sf_remap_host(const uint8_t *host_src, size_t rows, size_t k_sf, size_t src_offset,
                                        uint8_t *host_dst, int words_only);
/* The block-scaled GEMM on CUDA cores, one thread per output, bit-identical to lab_nvfp4_gemm; launched on `stream`
 * without waiting (as lab_nvfp4_cuda_sf_remap_async). */
lab_status lab_nvfp4_cuda_gemm_async(const uint8_t *qa, const uint8_t *sfa_layout, const uint8_t *qb,
                                     const uint8_t *sfb_layout, size_t m, size_t n, size_t k, float alpha, float *out,
                                     void *stream);

/* lab_nvfp4_cuda_gemm_async on host buffers (layouts of lab_nvfp4_sf_cosize(rows, k / 16) bytes): uploads, runs and
 * downloads on a stream of its own, one wait; lab_nvfp4_gemm's bits (a lab_nvfp4_gemm_fn). LAB_ERR_ARG, LAB_ERR_DEVICE. */
lab_status lab_nvfp4_cuda_gemm_host(const uint8_t *qa, const uint8_t *sfa_layout, const uint8_t *qb, const uint8_t *sfb_layout,
                                    size_t m, size_t n, size_t k, float alpha, float *out);

/* One float64 reference GEMM for lab_nvfp4_gemm_ref_cuda: host operands in lab_nvfp4_gemm_ref's form, host outputs. */
typedef struct {
    const uint8_t *qa, *sfa, *qb, *sfb; /* packed E2M1 (m*k/2, n*k/2 bytes), row-major scales (m*k/16, n*k/16) */
    float global_a, global_b;
    size_t m, n, k;
    double *ref, *abs;                  /* m*n each (abs may be NULL) */
} lab_nvfp4_ref_job;

/* lab_nvfp4_gemm_ref on the device for n jobs (kernels/lab_nvfp4_ref.cu): the same decoding (lab_format.h's codecs)
 * and sums in float64, one warp per output striding over k, its lanes' partial sums added in a fixed tree, so the
 * result is deterministic; written apart from the kernels under test, as plainly as the CPU reference. Uploads,
 * computes and downloads on one stream, one wait for all jobs. Differs from the CPU reference by rounding only:
 * lab_nvfp4_ref_disagreement <= 1 (test nvfp4_ref::device_reference_agrees_with_the_cpu_reference). LAB_ERR_ARG for a
 * bad shape, LAB_ERR_DEVICE. */
lab_status lab_nvfp4_gemm_ref_cuda(const lab_nvfp4_ref_job *jobs, size_t n);
#endif

#ifdef __cplusplus
}
#endif

#endif
