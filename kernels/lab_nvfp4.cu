/* lab_nvfp4 (CUDA): the scale-factor remap (fix at copy speed, fault kinds) and the block-scaled GEMM on CUDA cores, bit-identical to the CPU versions in lab_nvfp4.c. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "lab_cuda.h"
#include "lab_devmem.h"
#include "lab_nvfp4.h"

extern "C" {
#include "lab_format.h"
}

#define NV_THREADS 256

/* Cosize pass, one thread per 4-byte word of the layout (the 4 scale columns k4 = 0..3 of one row m of one tile):
 * the coordinate comes from the word's offset; real coordinates take their scale, padding takes 0. kind picks the
 * fix or a cosize fault (MK_SWAP: src[k*rows + m]; TILE_SWAP: tiles in K-outer order). */
__global__ void nv_remap_words(const uint8_t *__restrict__ src, size_t rows, size_t k_sf, size_t m_tiles,
                               size_t k_tiles, size_t words, int kind, uint32_t *__restrict__ dst)
{
    for (size_t w = (size_t)blockIdx.x * blockDim.x + threadIdx.x; w < words; w += (size_t)gridDim.x * blockDim.x) {
        size_t o = w * 4, tile = o / 512, r = o % 512;
        size_t m32 = r / 16, m4 = (r / 4) % 4;
        size_t mt, kt;
        if (kind == LAB_NVFP4_REMAP_TILE_SWAP) {
            kt = tile / m_tiles;
            mt = tile % m_tiles;
        } else {
            mt = tile / k_tiles;
            kt = tile % k_tiles;
        }
        size_t m = mt * 128 + m4 * 32 + m32, k0 = kt * 4;
        uint32_t v = 0;
        if (m < rows) {
            if (kind != LAB_NVFP4_REMAP_MK_SWAP && k0 + 4 <= k_sf && (k_sf & 3u) == 0 &&
                ((uintptr_t)src & 3u) == 0) {
                v = *(const uint32_t *)(src + m * k_sf + k0); /* aligned: four real scales at once */
            } else {
                for (unsigned j = 0; j < 4; ++j) {
                    size_t k = k0 + j;
                    if (k >= k_sf) break;
                    uint8_t b = kind == LAB_NVFP4_REMAP_MK_SWAP ? src[k * rows + m] : src[m * k_sf + k];
                    v |= (uint32_t)b << (8 * j);
                }
            }
        }
        dst[w] = v;
    }
}

/* As it was: one thread per logical entry i < rows * k_sf, scattered to its offset; padding never visited. */
__global__ void nv_remap_logical(const uint8_t *__restrict__ src, size_t rows, size_t k_sf, uint8_t *__restrict__ dst)
{
    size_t size = rows * k_sf;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < size; i += (size_t)gridDim.x * blockDim.x)
        dst[lab_nvfp4_sf_offset(i / k_sf, i % k_sf, k_sf)] = src[i];
}

/* Twice the E2M1 value of a code (see lab_nvfp4.c). */
__device__ __forceinline__ int nv_x2(unsigned code)
{
    const int mag[8] = {0, 1, 2, 3, 4, 6, 8, 12};
    int v = mag[code & 7u];
    return (code & 8u) ? -v : v;
}

/* One thread per output (i, j): blocks in order, the 16-element dot as an exact integer (4x the E2M1 dot),
 * t = s * (sa * sb) and acc = acc + t rounded as on the CPU (no FMA), out = alpha * acc. Blocks past K read zero
 * data and the padding scales of the layout. */
__global__ void nv_gemm(const uint8_t *__restrict__ qa, const uint8_t *__restrict__ sfa, const uint8_t *__restrict__ qb,
                        const uint8_t *__restrict__ sfb, size_t m, size_t n, size_t k, float alpha, float *__restrict__ out)
{
    size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t i = (size_t)blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= m || j >= n) return;
    size_t k_sf = k / LAB_NVFP4_BLOCK, kb = (k_sf + 3) / 4 * 4, row_bytes = k / 2;
    const uint8_t *a = qa + i * row_bytes, *b = qb + j * row_bytes;
    float acc = 0.0f;
    for (size_t blk = 0; blk < kb; ++blk) {
        int dot = 0;
        if (blk < k_sf) {
            for (int e = 0; e < LAB_NVFP4_BLOCK / 2; ++e) {
                unsigned x = a[blk * 8 + e], y = b[blk * 8 + e];
                dot += nv_x2(x & 0xFu) * nv_x2(y & 0xFu);
                dot += nv_x2(x >> 4) * nv_x2(y >> 4);
            }
        }
        float s = __fmul_rn((float)dot, 0.25f);
        float sa = lab_e4m3_to_float(sfa[lab_nvfp4_sf_offset(i, blk, k_sf)]);
        float sb = lab_e4m3_to_float(sfb[lab_nvfp4_sf_offset(j, blk, k_sf)]);
        float t = __fmul_rn(s, __fmul_rn(sa, sb));
        acc = __fadd_rn(acc, t);
    }
    out[i * n + j] = __fmul_rn(alpha, acc);
}

/* The fixed remap at copy speed (kind FIX): one block per (128-row m-tile, chunk of NV_TILE_KC scale columns).
 * Each block reads its 128 rows x NV_TILE_KC source bytes coalesced with 16-byte loads (when K_sf is a multiple
 * of 16 and src 16-byte aligned: straight into 32-bit words, 4 scale columns of one row, rows padded to an odd
 * word count so the gather below hits 32 banks; otherwise the aligned vectors covering the block's bytes, copied
 * into staging words with cp.async, one contiguous run when a chunk is the whole row, else per row, each output
 * word then funnel-shifted out of the two staged words it straddles), zero where the coordinate is padding (m >= rows or
 * k >= K_sf), then writes its NV_TILE_KC / 4 whole
 * 512-byte tiles, which are contiguous in the layout, as 16-byte stores: 16 bytes at tile offset m32 * 16 are
 * the words of rows m32, m32 + 32, m32 + 64, m32 + 96. Every byte of the layout is written once, with the
 * value nv_remap_words gives it (checked bit for bit by the bench and tests/test_bench.c). dst must be 16-byte
 * aligned (nv_remap_launch falls back to nv_remap_words otherwise). */
#define NV_TILE_KC 64
#define NV_TILE_WORDS (NV_TILE_KC / 4 + 1)
#define NV_STAGE_VECS (NV_TILE_KC / 16 + 1) /* 16-byte vectors covering a row segment at any alignment */
#define NV_STAGE_WORDS (NV_STAGE_VECS * 4) /* a staging row in 32-bit words, 16-byte aligned for cp.async */

/* A 16-byte copy from global to shared memory without registers (cp.async, sm_80+): many in flight per thread;
 * completed by nv_cp16_wait. Both addresses 16-byte aligned. Turing (sm_75) has no cp.async: there the copy goes
 * through a register (one 16-byte load, one store), the same bytes, one load in flight per thread. */
__device__ __forceinline__ void nv_cp16(void *smem_dst, const void *gsrc)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    *(uint4 *)smem_dst = __ldg((const uint4 *)gsrc);
#else
    unsigned d = (unsigned)__cvta_generic_to_shared(smem_dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(gsrc) : "memory");
#endif
}
__device__ __forceinline__ void nv_cp16_wait(void)
{
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}
template <int vec> /* a template argument: each path gets its own registers (the ragged one needs more) */
__global__ void __launch_bounds__(NV_THREADS) nv_remap_tiles(const uint8_t *__restrict__ src, size_t rows, size_t k_sf,
                                                             size_t k_tiles, size_t k_chunks, size_t blocks,
                                                             uint8_t *__restrict__ dst)
{
    /* one buffer, two views: a block uses sm (K_sf % 16 == 0) or stage (any other), never both */
    __shared__ __align__(16) uint32_t smem[128 * (NV_STAGE_WORDS > NV_TILE_WORDS ? NV_STAGE_WORDS : NV_TILE_WORDS)];
    uint32_t(*sm)[NV_TILE_WORDS] = (uint32_t(*)[NV_TILE_WORDS])smem;
    uint32_t(*stage)[NV_STAGE_WORDS] = (uint32_t(*)[NV_STAGE_WORDS])smem;
    const size_t kp = k_tiles * 4;
    for (size_t blk = blockIdx.x; blk < blocks; blk += gridDim.x) {
        size_t mt = blk / k_chunks, kc = blk % k_chunks, m0 = mt * 128, k0 = kc * NV_TILE_KC;
        unsigned ncol = (unsigned)(kp - k0 < NV_TILE_KC ? kp - k0 : NV_TILE_KC); /* multiple of 4 */
        if (vec == 16) {
            /* K_sf % 16 == 0: kp == K_sf and every chunk is whole 16-byte vectors of real scales */
            unsigned per_row = ncol / 16;
            for (unsigned i = threadIdx.x; i < 128 * per_row; i += blockDim.x) {
                unsigned r = i / per_row, v = i % per_row;
                size_t m = m0 + r;
                uint4 x = make_uint4(0, 0, 0, 0);
                if (m < rows) x = __ldg((const uint4 *)(src + m * k_sf + k0) + v);
                sm[r][4 * v] = x.x;
                sm[r][4 * v + 1] = x.y;
                sm[r][4 * v + 2] = x.z;
                sm[r][4 * v + 3] = x.w;
            }
        } else {
            /* any K_sf, any src alignment, staged as 32-bit words, then each output word made from the two staged
             * words it straddles (a funnel shift), bytes past the row's real scales masked to 0. Staging: when the
             * chunk is the whole row (k_chunks == 1, K_sf <= NV_TILE_KC) the block's rows are one contiguous run of
             * source bytes, read as the 16-byte aligned vectors that cover it (flat, no byte read twice); otherwise
             * each row's segment of this chunk (at most NV_TILE_KC real bytes) is read as the aligned vectors that
             * cover it into a staging row of NV_STAGE_WORDS words. In both, a vector that would leave [src, src +
             * rows * K_sf) is read byte by byte, and `lead` is the address % 16 where the staged bytes begin. */
            unsigned nreal = (unsigned)(k_sf > k0 ? (k_sf - k0 < ncol ? k_sf - k0 : ncol) : 0);
            const uint8_t *end = src + rows * k_sf;
            uint32_t *W = &stage[0][0];
            const int flat = k_chunks == 1;
            const unsigned nrows = (unsigned)(rows - m0 < 128 ? rows - m0 : 128);
            const uint8_t *fa = src + m0 * k_sf; /* flat: the block's first byte */
            const unsigned flead = (unsigned)((uintptr_t)fa & 15u);
            const unsigned nitems = flat ? (unsigned)((flead + nrows * k_sf + 15) / 16) : 128 * NV_STAGE_VECS;
            /* asynchronous 16-byte copies (a thread's copies all in flight at once, no registers held; tried before:
             * one load in flight per thread, 0.831 / 0.783 of copy on the H100; all of a thread's loads into
             * registers first, 54 registers, 4 blocks an SM: 0.761 / 0.759) */
            for (unsigned i = threadIdx.x; i < nitems; i += blockDim.x) {
                const uint8_t *q;
                uint32_t *to;
                if (flat) {
                    q = fa - flead + 16 * (size_t)i;
                    to = W + 4 * i;
                } else {
                    unsigned r = i / NV_STAGE_VECS, v = i % NV_STAGE_VECS;
                    if (r >= nrows || nreal == 0) continue;
                    const uint8_t *a = src + (m0 + r) * k_sf + k0;
                    unsigned lead = (unsigned)((uintptr_t)a & 15u);
                    if (v * 16 >= lead + nreal) continue;
                    q = a - lead + 16 * v;
                    to = &stage[r][4 * v];
                }
                if (q >= src && q + 16 <= end) {
                    nv_cp16(to, q);
                } else {
                    uint8_t b[16];
                    for (int j = 0; j < 16; ++j) b[j] = q + j >= src && q + j < end ? __ldg(q + j) : (uint8_t)0;
                    uint4 x;
                    memcpy(&x, b, 16);
                    *(uint4 *)to = x;
                }
            }
            nv_cp16_wait();
            __syncthreads();
            uint4 *out = (uint4 *)(dst + (mt * k_tiles + k0 / 4) * 512);
            /* the low 4 bits of a row's first address: 32-bit arithmetic is exact modulo 16 */
            const unsigned a0 = (unsigned)(uintptr_t)src + (unsigned)k0, ks = (unsigned)k_sf;
            for (unsigned i = threadIdx.x; i < (ncol / 4) * 32; i += blockDim.x) {
                unsigned t = i / 32, m32 = i % 32;
                /* real bytes of output word t: 4, fewer at the row's end, none past it */
                uint32_t keep = 4 * t >= nreal ? 0u : nreal - 4 * t >= 4 ? 0xffffffffu : (1u << (8 * (nreal - 4 * t))) - 1u;
                uint32_t w[4];
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    unsigned r = m32 + 32 * j;
                    uint32_t word = 0;
                    if (r < nrows && keep) {
                        /* byte offset of (row r, column 4 t) in the staging words */
                        unsigned off = flat ? flead + r * ks + 4 * t
                                            : r * (NV_STAGE_WORDS * 4) + ((a0 + (unsigned)(m0 + r) * ks) & 15u) + 4 * t;
                        word = __funnelshift_r(W[off / 4], W[off / 4 + 1], 8 * (off & 3u)) & keep;
                    }
                    w[j] = word;
                }
                out[i] = make_uint4(w[0], w[1], w[2], w[3]);
            }
            __syncthreads();
            continue;
        }
        __syncthreads();
        uint4 *out = (uint4 *)(dst + (mt * k_tiles + k0 / 4) * 512);
        for (unsigned i = threadIdx.x; i < (ncol / 4) * 32; i += blockDim.x) {
            unsigned t = i / 32, m32 = i % 32;
            out[i] = make_uint4(sm[m32][t], sm[m32 + 32][t], sm[m32 + 64][t], sm[m32 + 96][t]);
        }
        __syncthreads();
    }
}

static unsigned nv_blocks(size_t n)
{
    size_t b = (n + NV_THREADS - 1) / NV_THREADS;
    if (b > 65535u * 16u) b = 65535u * 16u; /* grid-stride loops cover the rest */
    return b ? (unsigned)b : 1u;
}

/* words: 1 forces the one-word-per-thread kernel for the fix too (the reference the bench times against). */
static lab_status nv_remap_launch(const uint8_t *src, size_t rows, size_t k_sf, uint8_t *dst, lab_nvfp4_remap_kind kind,
                                  cudaStream_t stream, int words_only)
{
    if (!src || !dst || rows == 0 || k_sf == 0)
        return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_cuda_sf_remap: NULL buffer or empty shape (%zu, %zu)", rows, k_sf);
    if ((unsigned)kind >= LAB_NVFP4_REMAP_COUNT)
        return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_cuda_sf_remap: unknown remap kind %d", (int)kind);
    if (((uintptr_t)dst & 3u) != 0) return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_cuda_sf_remap: dst not 4-byte aligned");
    if (kind == LAB_NVFP4_REMAP_SIZE_NOT_COSIZE) {
        nv_remap_logical<<<nv_blocks(rows * k_sf), NV_THREADS, 0, stream>>>(src, rows, k_sf, dst);
    } else if (kind == LAB_NVFP4_REMAP_FIX && !words_only && ((uintptr_t)dst & 15u) == 0) {
        size_t m_tiles = (rows + 127) / 128, k_tiles = (k_sf + 3) / 4;
        size_t k_chunks = (k_tiles * 4 + NV_TILE_KC - 1) / NV_TILE_KC, blocks = m_tiles * k_chunks;
        int vec = (k_sf % 16 == 0 && ((uintptr_t)src & 15u) == 0) ? 16 : 1;
        unsigned grid = blocks > 0x7fffffffu ? 0x7fffffffu : (unsigned)blocks;
        if (vec == 16) nv_remap_tiles<16><<<grid, NV_THREADS, 0, stream>>>(src, rows, k_sf, k_tiles, k_chunks, blocks, dst);
        else nv_remap_tiles<1><<<grid, NV_THREADS, 0, stream>>>(src, rows, k_sf, k_tiles, k_chunks, blocks, dst);
    } else {
        size_t words = lab_nvfp4_sf_cosize(rows, k_sf) / 4;
        nv_remap_words<<<nv_blocks(words), NV_THREADS, 0, stream>>>(src, rows, k_sf, (rows + 127) / 128, (k_sf + 3) / 4,
                                                                   words, (int)kind, (uint32_t *)dst);
    }
    LAB_CUDA_CHECK(cudaGetLastError());
    return LAB_OK;
}

extern "C" lab_status lab_nvfp4_cuda_sf_remap_async(const uint8_t *src, size_t rows, size_t k_sf, uint8_t *dst,
                                                    lab_nvfp4_remap_kind kind, void *stream)
{
    return nv_remap_launch(src, rows, k_sf, dst, kind, (cudaStream_t)stream, 0);
}

/* The fixed remap as it was before nv_remap_tiles (one 32-bit word per thread), on `stream`, not synchronized: the
 * bench's reference for bit identity and its "before" timing. */
extern "C" lab_status lab_nvfp4_cuda_sf_remap_words_async(const uint8_t *src, size_t rows, size_t k_sf, uint8_t *dst,
                                                          void *stream)
{
    return nv_remap_launch(src, rows, k_sf, dst, LAB_NVFP4_REMAP_FIX, (cudaStream_t)stream, 1);
}

extern "C" lab_status lab_nvfp4_cuda_gemm_async(const uint8_t *qa, const uint8_t *sfa_layout, const uint8_t *qb,
                                                const uint8_t *sfb_layout, size_t m, size_t n, size_t k, float alpha,
                                                float *out, void *stream)
{
    if (!qa || !sfa_layout || !qb || !sfb_layout || !out)
        return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_cuda_gemm: NULL buffer");
    if (m == 0 || n == 0 || k == 0 || k % LAB_NVFP4_BLOCK != 0 || m > 65535u * 8u || n > (1u << 30))
        return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_cuda_gemm: shape (%zu, %zu, %zu) not supported", m, n, k);
    dim3 block(32, 8);
    dim3 grid((unsigned)((n + 31) / 32), (unsigned)((m + 7) / 8));
    nv_gemm<<<grid, block, 0, (cudaStream_t)stream>>>(qa, sfa_layout, qb, sfb_layout, m, n, k, alpha, out);
    LAB_CUDA_CHECK(cudaGetLastError());
    return LAB_OK;
}

/* For tests on a host without CUDA headers: uploads host_src[0..src_offset + rows * k_sf) into a fresh device buffer,
 * poisons a device layout of lab_nvfp4_sf_cosize(rows, k_sf) bytes with 0xA5, runs the fixed remap on the source at
 * src_offset (words_only 1: the one-word-per-thread kernel, else the tiled one where dst alignment allows) and copies
 * the layout into host_dst. LAB_ERR_ARG for a bad shape, LAB_ERR_DEVICE. (Declared in lab_nvfp4.h.) */
extern "C" lab_status lab_nvfp4_cuda_sf_remap_host(const uint8_t *host_src, size_t rows, size_t k_sf, size_t src_offset,
                                                   uint8_t *host_dst, int words_only)
{
    if (!host_src || !host_dst || rows == 0 || k_sf == 0)
        return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_cuda_sf_remap_host: NULL buffer or empty shape");
    size_t n = src_offset + rows * k_sf, cos = lab_nvfp4_sf_cosize(rows, k_sf);
    uint8_t *src = NULL, *dst = NULL;
    lab_status st = LAB_OK;
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&src, n), done);
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc((void **)&dst, cos), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(src, host_src, n, cudaMemcpyHostToDevice), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemset(dst, 0xA5, cos), done);
    if ((st = nv_remap_launch(src + src_offset, rows, k_sf, dst, LAB_NVFP4_REMAP_FIX, 0, words_only)) != LAB_OK) goto done;
    LAB_CUDA_CHECK_GOTO(st, lab_cuda_sync(), done);
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpy(host_dst, dst, cos, cudaMemcpyDeviceToHost), done);
done:
    if (src) lab_devmem_free(src);
    if (dst) lab_devmem_free(dst);
    return st;
}

extern "C" lab_status lab_nvfp4_cuda_gemm_host(const uint8_t *qa, const uint8_t *sfa_layout, const uint8_t *qb,
                                               const uint8_t *sfb_layout, size_t m, size_t n, size_t k, float alpha,
                                               float *out)
{
    if (!qa || !sfa_layout || !qb || !sfb_layout || !out) return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_cuda_gemm_host: NULL buffer");
    if (m == 0 || n == 0 || k == 0 || k % LAB_NVFP4_BLOCK != 0)
        return lab_err_set(LAB_ERR_ARG, "lab_nvfp4_cuda_gemm_host: shape (%zu, %zu, %zu) not supported", m, n, k);
    size_t k_sf = k / LAB_NVFP4_BLOCK;
    const void *host[4] = {qa, sfa_layout, qb, sfb_layout};
    size_t len[4] = {m * k / 2, lab_nvfp4_sf_cosize(m, k_sf), n * k / 2, lab_nvfp4_sf_cosize(n, k_sf)};
    void *dev[5] = {NULL, NULL, NULL, NULL, NULL};
    cudaStream_t s = NULL;
    lab_status st = LAB_OK;
    LAB_CUDA_CHECK_GOTO(st, cudaStreamCreate(&s), done);
    for (int i = 0; i < 4; ++i) {
        LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc_async(&dev[i], len[i], s), done);
        LAB_CUDA_CHECK_GOTO(st, cudaMemcpyAsync(dev[i], host[i], len[i], cudaMemcpyHostToDevice, s), done);
    }
    LAB_CUDA_CHECK_GOTO(st, lab_devmem_alloc_async(&dev[4], m * n * sizeof(float), s), done);
    st = lab_nvfp4_cuda_gemm_async((const uint8_t *)dev[0], (const uint8_t *)dev[1], (const uint8_t *)dev[2],
                                   (const uint8_t *)dev[3], m, n, k, alpha, (float *)dev[4], s);
    if (st != LAB_OK) goto done;
    /* to pageable memory: returns when the copy is done (the one wait) */
    LAB_CUDA_CHECK_GOTO(st, cudaMemcpyAsync(out, dev[4], m * n * sizeof(float), cudaMemcpyDeviceToHost, s), done);
    LAB_CUDA_CHECK_GOTO(st, cudaStreamSynchronize(s), done);
done:
    return lab_cuda_stream_release(st, s, dev, 5);
}

/* this module in the load check that runs before any case (lab_cuda.h) */
LAB_CUDA_MODULE(nv_remap_words);
