/* lab_format: the host-only parts of the bf16 / E4M3 / E2M1 codecs (the codecs are inline in lab_format.h). */
#include "lab_format.h"

/* Packs n E2M1 codes two per byte, low nibble first; an odd n leaves the last high nibble zero. */
void lab_e2m1_pack(const uint8_t *codes, size_t n, uint8_t *bytes)
{
    for (size_t i = 0; i + 1 < n; i += 2)
        bytes[i / 2] = (uint8_t)((codes[i] & 0xFu) | ((codes[i + 1] & 0xFu) << 4));
    if (n & 1u) bytes[n / 2] = (uint8_t)(codes[n - 1] & 0xFu);
}
