/* lab_format: exact bf16, fp8 E4M3 and fp4 E2M1 codecs, shared by host C and CUDA device code. */
#ifndef LAB_FORMAT_H
#define LAB_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lab_hd.h"

/* The codecs below are defined here, static inline and LAB_HD, so that host C and CUDA device code
 * compile the very same source. They use integer operations on the float32 bit pattern only (no
 * libm, no float arithmetic that could be contracted or flushed), and memcpy for bit casts. */

/* Bits of a float32, and the float32 with given bits. Pure. */
static inline LAB_HD uint32_t lab_format_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline LAB_HD float lab_format_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* m * 2^-s rounded to the nearest integer, ties to even, for 1 <= s <= 31. Pure. */
static inline LAB_HD uint32_t lab_format_rne_shift(uint32_t m, unsigned s)
{
    uint32_t q = m >> s;
    uint32_t rem = m & ((1u << s) - 1u);
    uint32_t half = 1u << (s - 1u);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return q;
}

/* bf16 ------------------------------------------------------------------------------------------
 * float32 -> bf16 with round-to-nearest-even on the dropped 16 bits, as PyTorch's c10::BFloat16
 * does; NaN stays NaN (quiet bit set, sign kept); overflow rounds to +-inf as RNE does.
 * Exactly: a NaN with bits u gives (u >> 16) | 0x0040 (sign and top payload bits kept, quiet bit
 * set), so every quiet bf16 NaN round-trips bit for bit. (PyTorch's scalar round_to_nearest_even
 * returns 0x7FC0 for every NaN and CUDA's __float2bfloat16_rn 0x7FFF; both drop the sign.) */
static inline LAB_HD uint16_t lab_bf16_from_float(float f)
{
    uint32_t u = lab_format_f32_bits(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x0040u);
    /* Adding 0x7FFF plus the kept LSB rounds to nearest even; a carry out of the mantissa bumps the
     * exponent, and from the largest finite values it lands exactly on inf (0x7F80). */
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* bf16 -> float32, exact (bf16 is the top half of a float32). */
static inline LAB_HD float lab_bf16_to_float(uint16_t b)
{
    return lab_format_f32_from_bits((uint32_t)b << 16);
}

/* Round a float32 to the nearest bf16 value, returned as a float32. */
static inline LAB_HD float lab_bf16_round(float f)
{
    return lab_bf16_to_float(lab_bf16_from_float(f));
}

/* fp8 E4M3 (OCP "E4M3FN", as __nv_fp8_e4m3): bias 7, no infinities, max finite 448, NaN = S.1111.111
 * (0x7F, 0xFF). Encode rounds to nearest even, saturates finite overflow and +-inf to +-448,
 * keeps NaN as 0x7F (or 0xFF with the sign). Subnormals down to 2^-9 are exact.
 * The sign is always kept: -0.0 and negative values that round to zero give 0x80. */
static inline LAB_HD uint8_t lab_e4m3_from_float(float f)
{
    uint32_t u = lab_format_f32_bits(f);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return (uint8_t)(0x7Fu | sign);       /* NaN */
    if (a >= 0x43E00000u) return (uint8_t)(0x7Eu | sign);      /* >= 448 (inf too): saturate; RNE
                                                                   takes (448, 464] to 448 anyway */
    uint32_t e = a >> 23;
    if (e >= 121u) {
        /* normal in E4M3 (>= 2^-6): keep 3 of 23 mantissa bits, RNE; a mantissa carry moves into
         * the exponent field, and values below 448 never round past 0x7E. Rebias 127 -> 7. */
        uint32_t r = (a + 0x7FFFFu + ((a >> 20) & 1u)) >> 20;
        return (uint8_t)((r - (120u << 3)) | sign);
    }
    /* subnormal in E4M3: code = |f| * 2^9 rounded to an integer (0..8; 8 is the smallest normal).
     * |f| = m * 2^(e-150), so code = m * 2^-(141-e); shifts of 25 or more give below one half. */
    if (e == 0u) return sign;                                  /* zero and float32 subnormals */
    uint32_t s = 141u - e;                                     /* >= 21 */
    if (s >= 25u) return sign;
    uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
    return (uint8_t)(lab_format_rne_shift(m, s) | sign);
}

/* E4M3 byte -> float32, exact; 0x7F and 0xFF give NaN (a quiet NaN with the byte's sign). */
static inline LAB_HD float lab_e4m3_to_float(uint8_t b)
{
    uint32_t sign = (uint32_t)(b & 0x80u) << 24;
    uint32_t e = (b >> 3) & 0xFu, m = b & 7u;
    if (e == 15u && m == 7u) return lab_format_f32_from_bits(sign | 0x7FC00000u);
    if (e > 0u) return lab_format_f32_from_bits(sign | ((e + 120u) << 23) | (m << 20));
    if (m == 0u) return lab_format_f32_from_bits(sign);
    /* subnormal m * 2^-9, m in 1..7: normalise so the leading 1 is implicit */
    uint32_t ex = 127u - 9u, mm = m;
    while (mm < 4u) { mm <<= 1; --ex; }       /* now mm in 4..7 = 1.xx * 4 */
    ex += 2u;
    return lab_format_f32_from_bits(sign | (ex << 23) | ((mm & 3u) << 21));
}

/* fp4 E2M1: codes 0..15, sign in bit 3, magnitudes {0, 0.5, 1, 1.5, 2, 3, 4, 6}. Encode rounds to
 * nearest even and saturates to +-6 (also for +-inf); NaN has no code and encodes as +0 (callers that
 * can meet NaN must check first). Only the low 4 bits of a code are read.
 * The sign is kept otherwise: -0.0 and negative values that round to zero give 0x8. */
static inline LAB_HD uint8_t lab_e2m1_from_float(float f)
{
    uint32_t u = lab_format_f32_bits(f);
    uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return 0u;                            /* NaN -> +0 */
    uint8_t sign = (uint8_t)((u >> 28) & 0x8u);
    if (a >= 0x40C00000u) return (uint8_t)(0x7u | sign);       /* >= 6 (inf too): saturate */
    uint32_t e = a >> 23;
    if (e >= 127u) {
        /* normal in E2M1 (>= 1): keep 1 of 23 mantissa bits, RNE; rebias 127 -> 1 */
        uint32_t r = (a + 0x1FFFFFu + ((a >> 22) & 1u)) >> 22;
        return (uint8_t)((r - (126u << 1)) | sign);
    }
    /* below 1: code = |f| * 2 rounded to an integer (0..2), |f| * 2 = m * 2^-(149-e) */
    if (e == 0u) return sign;
    uint32_t s = 149u - e;                                     /* >= 23 */
    if (s >= 25u) return sign;
    uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
    return (uint8_t)(lab_format_rne_shift(m, s) | sign);
}

/* E2M1 code (low 4 bits of `code`) -> float32, exact. */
static inline LAB_HD float lab_e2m1_to_float(uint8_t code)
{
    uint32_t sign = (uint32_t)(code & 0x8u) << 28;
    uint32_t e = (code >> 1) & 3u, m = code & 1u;
    if (e > 0u) return lab_format_f32_from_bits(sign | ((e + 126u) << 23) | (m << 22));
    return lab_format_f32_from_bits(sign | (m ? 0x3F000000u : 0u));  /* 0.5 or 0 */
}

#ifdef __cplusplus
extern "C" {
#endif
/* Packs n E2M1 codes two per byte, element 2i in the low nibble of byte i and 2i+1 in the high
 * nibble; an odd n leaves the last high nibble zero. bytes must hold (n+1)/2 bytes. Only the low
 * 4 bits of each code are used. Never fails. */
void lab_e2m1_pack(const uint8_t *codes, size_t n, uint8_t *bytes);
#ifdef __cplusplus
}
#endif

/* The code of element i of a packed E2M1 array (bytes as lab_e2m1_pack writes them). */
static inline LAB_HD uint8_t lab_e2m1_get(const uint8_t *bytes, size_t i)
{
    return (uint8_t)((bytes[i >> 1] >> ((i & 1u) * 4u)) & 0xFu);
}

#endif
