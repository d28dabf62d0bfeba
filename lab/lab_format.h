/* lab_format: exact bf16, fp8 E4M3 and fp4 E2M1 codecs, shared by host C and CUDA device code. */
#ifndef LAB_FORMAT_H
#define LAB_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "lab_hd.h"

/* bf16 ------------------------------------------------------------------------------------------
 * float32 -> bf16 with round-to-nearest-even on the dropped 16 bits, as PyTorch's c10::BFloat16
 * does; NaN stays NaN (quiet bit set, sign kept); overflow rounds to +-inf as RNE does. */
LAB_HD uint16_t lab_bf16_from_float(float f);
/* bf16 -> float32, exact (bf16 is the top half of a float32). */
LAB_HD float lab_bf16_to_float(uint16_t b);
/* Round a float32 to the nearest bf16 value, returned as a float32. */
LAB_HD float lab_bf16_round(float f);

/* fp8 E4M3 (OCP "E4M3FN", as __nv_fp8_e4m3): bias 7, no infinities, max finite 448, NaN = S.1111.111
 * (0x7F, 0xFF). Encode rounds to nearest even, saturates finite overflow and +-inf to +-448,
 * keeps NaN as 0x7F (or 0xFF with the sign). Subnormals down to 2^-9 are exact. */
LAB_HD uint8_t lab_e4m3_from_float(float f);
/* E4M3 byte -> float32, exact; 0x7F and 0xFF give NaN. */
LAB_HD float lab_e4m3_to_float(uint8_t b);

/* fp4 E2M1: codes 0..15, sign in bit 3, magnitudes {0, 0.5, 1, 1.5, 2, 3, 4, 6}. Encode rounds to
 * nearest even and saturates to +-6 (also for +-inf); NaN has no code and encodes as +0 (callers that
 * can meet NaN must check first). Only the low 4 bits of a code are read. */
LAB_HD uint8_t lab_e2m1_from_float(float f);
LAB_HD float lab_e2m1_to_float(uint8_t code);

/* Packs n E2M1 codes two per byte, element 2i in the low nibble of byte i and 2i+1 in the high
 * nibble; an odd n leaves the last high nibble zero. bytes must hold (n+1)/2 bytes. */
void lab_e2m1_pack(const uint8_t *codes, size_t n, uint8_t *bytes);
/* The code of element i of a packed E2M1 array. */
LAB_HD uint8_t lab_e2m1_get(const uint8_t *bytes, size_t i);

#endif
