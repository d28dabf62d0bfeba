/* cuda_codec_xcheck: cross-checks the lab bf16/E4M3/E2M1 codecs against the CUDA toolkit's host-side conversions. */
/*
 * Host code only (no GPU needed): nvcc -O2 -Ilab tests/cuda_codec_xcheck.cu -o /tmp/xcheck && /tmp/xcheck
 * Prints one line per check and a final line "N passed, M failed"; exits 1 on any mismatch.
 *
 * Intentional, documented differences between the lab codecs and CUDA's (checked as such below,
 * not counted as mismatches):
 *  - bf16 encode of NaN: CUDA's __float2bfloat16_rn gives the canonical 0x7FFF for every NaN (sign
 *    and payload dropped); the lab keeps sign and top payload and sets the quiet bit, (u>>16)|0x40.
 *    Both are NaN; the check requires that and the lab's exact pattern.
 *  - E4M3 encode of a negative NaN: CUDA canonicalises every NaN input to 0x7FFFFFFF first, so gives
 *    0x7F; the lab keeps the sign (0xFF). Both are the E4M3 NaN S.1111.111.
 *  - E2M1 encode of NaN: E2M1 has no NaN; CUDA (cvt.rn.satfinite.e2m1x2 semantics) gives +6 (0x7),
 *    the lab gives +0 (0x0), as lab_format.h documents.
 * Everything else (all finite values, +-inf under __NV_SATFINITE, +-0, subnormals, ties) must agree
 * bit for bit.
 */
#include <cuda_bf16.h>
#include <cuda_fp4.h>
#include <cuda_fp8.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "lab_format.h"
/* lab_e2m1_pack is the one non-inline codec function: compiled in here so the checker stays a single
 * translation unit built by one nvcc command (lab_format.h gives it C linkage). */
#include "lab_format.c"

static int xc_passed = 0, xc_failed = 0;

/* Records one check's outcome and prints its line. */
static void xc_report(const char *name, unsigned long n, unsigned long bad, const char *first)
{
    if (bad == 0) {
        ++xc_passed;
        printf("PASS %-52s %10lu values\n", name, n);
    } else {
        ++xc_failed;
        printf("FAIL %-52s %10lu of %lu differ; first: %s\n", name, bad, n, first);
    }
}

static uint32_t xc_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float xc_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* xorshift64 */
static uint64_t xc_xs(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* Random float bits: every other one fully random, the rest with an exponent in [lo, lo+span). */
static uint32_t xc_rand_float_bits(uint64_t *s, unsigned long i, uint32_t lo, uint32_t span)
{
    uint64_t r = xc_xs(s);
    uint32_t u = (uint32_t)(r >> 32);
    if (i & 1) u = (u & 0x807FFFFFu) | ((lo + (uint32_t)(r % span)) << 23);
    return u;
}

/* ---- bf16 ---------------------------------------------------------------------------------- */

static uint16_t xc_cuda_bf16_bits(float f)
{
    __nv_bfloat16 h = __float2bfloat16_rn(f);
    __nv_bfloat16_raw raw = h;
    return raw.x;
}

static float xc_cuda_bf16_to_float(uint16_t b)
{
    __nv_bfloat16_raw raw;
    raw.x = b;
    return __bfloat162float(__nv_bfloat16(raw));
}

/* bf16 encode agreement: identical bits, or both NaN with the lab's documented NaN pattern. */
static int xc_bf16_encode_agrees(float f, char *why, size_t len)
{
    uint16_t lab = lab_bf16_from_float(f), cu = xc_cuda_bf16_bits(f);
    if (std::isnan(f)) {
        int ok = (cu & 0x7FFFu) > 0x7F80u && lab == (uint16_t)((xc_bits(f) >> 16) | 0x40u);
        if (!ok) snprintf(why, len, "NaN 0x%08x: lab 0x%04x cuda 0x%04x", xc_bits(f), lab, cu);
        return ok;
    }
    if (lab != cu) snprintf(why, len, "0x%08x: lab 0x%04x cuda 0x%04x", xc_bits(f), lab, cu);
    return lab == cu;
}

static void xc_bf16(void)
{
    char first[160] = "";
    unsigned long bad = 0;
    for (uint32_t b = 0; b < 65536; ++b) {
        float lab = lab_bf16_to_float((uint16_t)b), cu = xc_cuda_bf16_to_float((uint16_t)b);
        int ok = std::isnan(lab) ? std::isnan(cu) : xc_bits(lab) == xc_bits(cu);
        if (!ok && bad++ == 0) snprintf(first, sizeof first, "0x%04x: lab %a cuda %a", b, lab, cu);
    }
    xc_report("bf16 decode, all 65536 codes", 65536, bad, first);

    bad = 0;
    for (uint32_t b = 0; b < 65536; ++b) {
        char why[160];
        if (!xc_bf16_encode_agrees(xc_cuda_bf16_to_float((uint16_t)b), why, sizeof why) && bad++ == 0)
            snprintf(first, sizeof first, "%s", why);
    }
    xc_report("bf16 encode of every bf16 value", 65536, bad, first);

    static const uint32_t lows[] = {0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF};
    bad = 0;
    unsigned long n = 0;
    for (uint32_t hi = 0; hi < 65536; ++hi)
        for (size_t k = 0; k < sizeof lows / sizeof lows[0]; ++k, ++n) {
            char why[160];
            if (!xc_bf16_encode_agrees(xc_float((hi << 16) | lows[k]), why, sizeof why) && bad++ == 0)
                snprintf(first, sizeof first, "%s", why);
        }
    xc_report("bf16 encode, every tie and its neighbours", n, bad, first);

    uint64_t s = 0x9E3779B97F4A7C15ull;
    bad = 0;
    n = 4000000;
    for (unsigned long i = 0; i < n; ++i) {
        char why[160];
        if (!xc_bf16_encode_agrees(xc_float((uint32_t)(xc_xs(&s) >> 32)), why, sizeof why) && bad++ == 0)
            snprintf(first, sizeof first, "%s", why);
    }
    xc_report("bf16 encode, random float32 bit patterns", n, bad, first);
}

/* ---- E4M3 ---------------------------------------------------------------------------------- */

static uint8_t xc_cuda_e4m3(float f)
{
    return (uint8_t)__nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E4M3);
}

static float xc_cuda_e4m3_to_float(uint8_t b)
{
    __nv_fp8_e4m3 v;
    v.__x = b;
    return float(v);
}

/* E4M3 encode agreement: identical codes, except a negative NaN (lab 0xFF, CUDA 0x7F). */
static int xc_e4m3_encode_agrees(float f, char *why, size_t len)
{
    uint8_t lab = lab_e4m3_from_float(f), cu = xc_cuda_e4m3(f);
    int ok;
    if (std::isnan(f)) ok = cu == 0x7F && lab == (std::signbit(f) ? 0xFF : 0x7F);
    else ok = lab == cu;
    if (!ok) snprintf(why, len, "0x%08x (%a): lab 0x%02x cuda 0x%02x", xc_bits(f), f, lab, cu);
    return ok;
}

static void xc_e4m3(void)
{
    char first[160] = "";
    unsigned long bad = 0;
    for (unsigned c = 0; c < 256; ++c) {
        float lab = lab_e4m3_to_float((uint8_t)c), cu = xc_cuda_e4m3_to_float((uint8_t)c);
        int ok = std::isnan(lab) ? std::isnan(cu) : xc_bits(lab) == xc_bits(cu);
        if (!ok && bad++ == 0) snprintf(first, sizeof first, "0x%02x: lab %a cuda %a", c, lab, cu);
    }
    xc_report("e4m3 decode, all 256 codes", 256, bad, first);

    /* every code's value, midpoints to the next code, and one float either side of both */
    bad = 0;
    unsigned long n = 0;
    for (unsigned c = 0; c < 256; ++c) {
        if ((c & 0x7F) == 0x7F) continue;
        float v = xc_cuda_e4m3_to_float((uint8_t)c);
        float nx = (c & 0x7F) == 0x7E ? std::copysign(480.0f, v)
                                      : xc_cuda_e4m3_to_float((uint8_t)(c + 1));
        float mid = (float)(((double)v + nx) / 2);
        float pts[] = {v, std::nextafter(v, 0.0f), std::nextafter(v, v < 0 ? -INFINITY : INFINITY),
                       mid, std::nextafter(mid, 0.0f), std::nextafter(mid, mid < 0 ? -INFINITY : INFINITY)};
        for (size_t k = 0; k < sizeof pts / sizeof pts[0]; ++k, ++n) {
            char why[160];
            if (!xc_e4m3_encode_agrees(pts[k], why, sizeof why) && bad++ == 0)
                snprintf(first, sizeof first, "%s", why);
        }
    }
    xc_report("e4m3 encode, every code, midpoint and neighbour", n, bad, first);

    static const float special[] = {INFINITY, -INFINITY, 448.0f, 464.0f, 465.0f, 500.0f, -1e9f,
                                    3.4028235e38f, 0.0f, -0.0f, 1.4e-45f, -1.4e-45f, 0x1p-10f};
    bad = 0;
    for (size_t k = 0; k < sizeof special / sizeof special[0]; ++k) {
        char why[160];
        if (!xc_e4m3_encode_agrees(special[k], why, sizeof why) && bad++ == 0)
            snprintf(first, sizeof first, "%s", why);
    }
    xc_report("e4m3 encode, inf / saturation / zero / tiny (SATFINITE)",
              sizeof special / sizeof special[0], bad, first);

    /* NaN: both give an E4M3 NaN; sign differs as documented at the top */
    static const uint32_t nans[] = {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu,
                                    0xFFFFFFFFu};
    bad = 0;
    for (size_t k = 0; k < sizeof nans / sizeof nans[0]; ++k) {
        char why[160];
        if (!xc_e4m3_encode_agrees(xc_float(nans[k]), why, sizeof why) && bad++ == 0)
            snprintf(first, sizeof first, "%s", why);
    }
    xc_report("e4m3 encode NaN (lab keeps sign 0xFF, CUDA 0x7F)", sizeof nans / sizeof nans[0], bad, first);

    uint64_t s = 0x243F6A8885A308D3ull;
    bad = 0;
    n = 4000000;
    for (unsigned long i = 0; i < n; ++i) {
        char why[160];
        if (!xc_e4m3_encode_agrees(xc_float(xc_rand_float_bits(&s, i, 115u, 22u)), why, sizeof why) &&
            bad++ == 0)
            snprintf(first, sizeof first, "%s", why);
    }
    xc_report("e4m3 encode, random floats", n, bad, first);
}

/* ---- E2M1 ---------------------------------------------------------------------------------- */

static uint8_t xc_cuda_e2m1(float f)
{
    return (uint8_t)(__nv_cvt_float_to_fp4(f, __NV_E2M1, cudaRoundNearest) & 0xFu);
}

static float xc_cuda_e2m1_to_float(uint8_t c)
{
    __nv_fp4_e2m1 v;
    v.__x = (__nv_fp4_storage_t)c;
    return float(v);
}

/* E2M1 encode agreement: identical codes, except NaN (lab +0, CUDA +6). */
static int xc_e2m1_encode_agrees(float f, char *why, size_t len)
{
    uint8_t lab = lab_e2m1_from_float(f), cu = xc_cuda_e2m1(f);
    int ok = std::isnan(f) ? (lab == 0x0 && cu == 0x7) : lab == cu;
    if (!ok) snprintf(why, len, "0x%08x (%a): lab 0x%x cuda 0x%x", xc_bits(f), f, lab, cu);
    return ok;
}

static void xc_e2m1(void)
{
    char first[160] = "";
    unsigned long bad = 0;
    for (unsigned c = 0; c < 16; ++c) {
        float lab = lab_e2m1_to_float((uint8_t)c), cu = xc_cuda_e2m1_to_float((uint8_t)c);
        if (xc_bits(lab) != xc_bits(cu) && bad++ == 0)
            snprintf(first, sizeof first, "code %u: lab %a cuda %a", c, lab, cu);
    }
    xc_report("e2m1 decode, all 16 codes", 16, bad, first);

    bad = 0;
    unsigned long n = 0;
    for (unsigned c = 0; c < 16; ++c) {
        float v = xc_cuda_e2m1_to_float((uint8_t)c);
        float nx = (c & 7) == 7 ? std::copysign(8.0f, v) : xc_cuda_e2m1_to_float((uint8_t)(c + 1));
        float mid = (float)(((double)v + nx) / 2);
        float pts[] = {v, std::nextafter(v, 0.0f), std::nextafter(v, v < 0 ? -INFINITY : INFINITY),
                       mid, std::nextafter(mid, 0.0f), std::nextafter(mid, mid < 0 ? -INFINITY : INFINITY)};
        for (size_t k = 0; k < sizeof pts / sizeof pts[0]; ++k, ++n) {
            char why[160];
            if (!xc_e2m1_encode_agrees(pts[k], why, sizeof why) && bad++ == 0)
                snprintf(first, sizeof first, "%s", why);
        }
    }
    xc_report("e2m1 encode, every code, midpoint and neighbour", n, bad, first);

    static const float special[] = {INFINITY, -INFINITY, 6.5f, 7.0f, 1e30f, -1e30f, 3.4028235e38f,
                                    0.0f, -0.0f, 1.4e-45f, -1.4e-45f, 0.25f, -0.25f};
    bad = 0;
    for (size_t k = 0; k < sizeof special / sizeof special[0]; ++k) {
        char why[160];
        if (!xc_e2m1_encode_agrees(special[k], why, sizeof why) && bad++ == 0)
            snprintf(first, sizeof first, "%s", why);
    }
    xc_report("e2m1 encode, inf / saturation / zero / tiny", sizeof special / sizeof special[0], bad, first);

    static const uint32_t nans[] = {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFFFFFFFFu};
    bad = 0;
    for (size_t k = 0; k < sizeof nans / sizeof nans[0]; ++k) {
        char why[160];
        if (!xc_e2m1_encode_agrees(xc_float(nans[k]), why, sizeof why) && bad++ == 0)
            snprintf(first, sizeof first, "%s", why);
    }
    xc_report("e2m1 encode NaN (lab +0, CUDA +6)", sizeof nans / sizeof nans[0], bad, first);

    uint64_t s = 0x13198A2E03707344ull;
    bad = 0;
    n = 4000000;
    for (unsigned long i = 0; i < n; ++i) {
        char why[160];
        if (!xc_e2m1_encode_agrees(xc_float(xc_rand_float_bits(&s, i, 121u, 12u)), why, sizeof why) &&
            bad++ == 0)
            snprintf(first, sizeof first, "%s", why);
    }
    xc_report("e2m1 encode, random floats", n, bad, first);

    /* packing order matches CUDA's fp4x2: element 0 in the low nibble */
    bad = 0;
    for (unsigned i = 0; i < 256; ++i) {
        uint8_t codes[2] = {(uint8_t)(i & 15), (uint8_t)(i >> 4)}, packed = 0xAA;
        float2 pair = make_float2(lab_e2m1_to_float(codes[0]), lab_e2m1_to_float(codes[1]));
        uint8_t cu = (uint8_t)__nv_cvt_float2_to_fp4x2(pair, __NV_E2M1, cudaRoundNearest);
        lab_e2m1_pack(codes, 2, &packed);
        int ok = packed == cu && lab_e2m1_get(&cu, 0) == codes[0] && lab_e2m1_get(&cu, 1) == codes[1];
        if (!ok && bad++ == 0) snprintf(first, sizeof first, "codes %u,%u: lab 0x%02x cuda 0x%02x",
                                        codes[0], codes[1], packed, cu);
    }
    xc_report("e2m1 pack/get nibble order vs __nv_cvt_float2_to_fp4x2", 256, bad, first);
}

int main(void)
{
    xc_bf16();
    xc_e4m3();
    xc_e2m1();
    printf("%d passed, %d failed\n", xc_passed, xc_failed);
    return xc_failed ? 1 : 0;
}
