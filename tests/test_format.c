/* test_format: the bf16, E4M3 and E2M1 codecs against independent reference implementations. */
#include <criterion/criterion.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "lab_format.h"

/* ---- helpers (test-local; independent of lab_format's bit tricks) ---------------------------- */

/* Float32 <-> bits. */
static uint32_t tf_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float tf_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* xorshift64: the test's own pseudo-random source. */
static uint64_t tf_xs(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* The value of a non-negative bf16 magnitude code 0..0x7F80 as a double, from its fields; 0x7F80
 * (+inf) stands for 2^128, where IEEE RNE with an unbounded exponent would put it. */
static double tf_bf16_mag_value(uint32_t code)
{
    int e = (int)(code >> 7) & 0xFF, m = (int)(code & 0x7F);
    if (e == 0) return ldexp((double)m, -133);   /* 0.m * 2^-126 */
    return ldexp((double)(128 + m), e - 134);     /* 1.m * 2^(e-127) */
}

/* Reference float32 -> bf16: the nearer of the two bf16 neighbours by exact double arithmetic,
 * ties to the even code; NaN -> sign | top payload | quiet bit. *ok is cleared if the neighbours do
 * not bracket the value (a broken reference must not pass silently). */
static uint16_t tf_bf16_ref(float f, int *ok)
{
    uint32_t u = tf_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    if (isnan(f)) return (uint16_t)((u >> 16) | 0x40u);
    if (isinf(f)) return (uint16_t)(sign | 0x7F80u);
    double ax = fabs((double)f);
    uint32_t lo = (u >> 16) & 0x7FFFu;           /* candidate lower neighbour */
    double vlo = tf_bf16_mag_value(lo), vhi = tf_bf16_mag_value(lo + 1);
    if (!(vlo <= ax && ax < vhi)) *ok = 0;
    double dlo = ax - vlo, dhi = vhi - ax;       /* both exact */
    uint32_t r;
    if (dlo < dhi) r = lo;
    else if (dhi < dlo) r = lo + 1;
    else r = (lo & 1u) ? lo + 1 : lo;
    return (uint16_t)(sign | r);
}

/* E4M3 value of code c from the format's definition (bias 7, 3 mantissa bits, no inf); NaN for
 * S.1111.111. */
static double tf_e4m3_value(unsigned c)
{
    int s = (c >> 7) & 1, e = (c >> 3) & 15, m = c & 7;
    if (e == 15 && m == 7) return NAN;
    double v = e == 0 ? (m / 8.0) * pow(2.0, -6) : (1.0 + m / 8.0) * pow(2.0, e - 7);
    return s ? -v : v;
}

/* Reference E4M3 encode: nearest of the 127 non-negative finite values (codes 0..0x7E, increasing),
 * ties to the even code; anything past 448 is nearest to 448, which is the saturation. */
static uint8_t tf_e4m3_ref(float f)
{
    uint32_t u = tf_bits(f);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    if (isnan(f)) return (uint8_t)(0x7Fu | sign);
    if (isinf(f)) return (uint8_t)(0x7Eu | sign);
    double ax = fabs((double)f);
    unsigned lo = 0, hi = 0x7E;                 /* largest c with value(c) <= ax */
    while (lo < hi) {
        unsigned mid = (lo + hi + 1) / 2;
        if (tf_e4m3_value(mid) <= ax) lo = mid; else hi = mid - 1;
    }
    unsigned c = lo;
    if (c < 0x7E) {
        double dlo = ax - tf_e4m3_value(c), dhi = tf_e4m3_value(c + 1) - ax;
        if (dhi < dlo || (dhi == dlo && (c & 1u))) c = c + 1;
    }
    return (uint8_t)(c | sign);
}

static const double tf_e2m1_mag[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};

/* Reference E2M1 encode: of the two magnitudes around |f|, the nearer (exact double distances),
 * ties to the even code; from 6 up (inf too) the nearest is 6, the saturation; NaN -> +0. */
static uint8_t tf_e2m1_ref(float f)
{
    if (isnan(f)) return 0;
    uint8_t sign = signbit(f) ? 8 : 0;
    double ax = fabs((double)f);
    unsigned c = 0;
    while (c < 7 && tf_e2m1_mag[c + 1] <= ax) ++c;
    if (c < 7) {
        double dlo = ax - tf_e2m1_mag[c], dhi = tf_e2m1_mag[c + 1] - ax;
        if (dhi < dlo || (dhi == dlo && (c & 1u))) ++c;
    }
    return (uint8_t)(c | sign);
}

/* ---- bf16 --------------------------------------------------------------------------------- */

Test(format_bf16, all_codes_round_trip)
{
    unsigned bad = 0, first = 0;
    for (uint32_t b = 0; b < 65536; ++b) {
        float f = lab_bf16_to_float((uint16_t)b);
        uint16_t back = lab_bf16_from_float(f);
        int isn = ((b & 0x7F80u) == 0x7F80u) && (b & 0x7Fu);
        int good;
        if (isn) /* NaN: stays NaN with its sign; quiet ones exactly, signalling ones quietened */
            good = isnan(f) && back == (uint16_t)(b | 0x40u);
        else
            good = back == b && !isnan(f);
        if (!good && bad++ == 0) first = b;
    }
    cr_assert_eq(bad, 0, "%u bf16 codes fail to round-trip, first 0x%04x", bad, first);
}

Test(format_bf16, decode_matches_field_formula)
{
    for (uint32_t b = 0; b < 65536; ++b) {
        float f = lab_bf16_to_float((uint16_t)b);
        uint32_t mag = b & 0x7FFFu;
        int neg = (b >> 15) & 1;
        if (mag > 0x7F80u) { cr_assert(isnan(f), "0x%04x", b); continue; }
        if (mag == 0x7F80u) { cr_assert(isinf(f) && (f < 0) == neg, "0x%04x", b); continue; }
        double want = tf_bf16_mag_value(mag);
        cr_assert_eq((double)fabsf(f), want, "0x%04x", b);
        cr_assert_eq(!!signbit(f), neg, "sign of 0x%04x", b);
    }
}

Test(format_bf16, random_floats_match_reference)
{
    uint64_t s = 0x9E3779B97F4A7C15ull;
    unsigned long bad = 0;
    uint32_t first = 0;
    int ok = 1;
    for (long i = 0; i < 10000000; ++i) {
        uint32_t u = (uint32_t)(tf_xs(&s) >> 32);
        float f = tf_float(u);
        if (lab_bf16_from_float(f) != tf_bf16_ref(f, &ok) && bad++ == 0) first = u;
    }
    cr_assert(ok, "reference neighbours did not bracket a value");
    cr_assert_eq(bad, 0, "%lu mismatches, first float bits 0x%08x: lab 0x%04x ref 0x%04x", bad, first,
                 lab_bf16_from_float(tf_float(first)), tf_bf16_ref(tf_float(first), &ok));
}

/* Every upper half with the low halves that decide rounding: exact, just above/below the tie, the tie. */
Test(format_bf16, every_tie_and_neighbour_matches_reference)
{
    static const uint32_t lows[] = {0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF};
    unsigned long bad = 0;
    uint32_t first = 0;
    int ok = 1;
    for (uint32_t hi = 0; hi < 65536; ++hi)
        for (size_t k = 0; k < sizeof lows / sizeof lows[0]; ++k) {
            uint32_t u = (hi << 16) | lows[k];
            float f = tf_float(u);
            if (lab_bf16_from_float(f) != tf_bf16_ref(f, &ok) && bad++ == 0) first = u;
        }
    cr_assert(ok, "reference neighbours did not bracket a value");
    cr_assert_eq(bad, 0, "%lu mismatches, first float bits 0x%08x", bad, first);
}

Test(format_bf16, hand_picked_ties_and_overflow)
{
    /* 1 + 2^-8: halfway between 0x3F80 (even) and 0x3F81 -> 0x3F80 */
    cr_assert_eq(lab_bf16_from_float(tf_float(0x3F808000u)), 0x3F80);
    /* halfway between 0x3F81 (odd) and 0x3F82 -> 0x3F82 */
    cr_assert_eq(lab_bf16_from_float(tf_float(0x3F818000u)), 0x3F82);
    cr_assert_eq(lab_bf16_from_float(tf_float(0x3F808001u)), 0x3F81);
    cr_assert_eq(lab_bf16_from_float(tf_float(0x3F807FFFu)), 0x3F80);
    cr_assert_eq(lab_bf16_from_float(tf_float(0xBF818000u)), 0xBF82);
    /* carry into the exponent: 0x3FFF8000 is halfway between 0x3FFF and 0x4000 (2.0) */
    cr_assert_eq(lab_bf16_from_float(tf_float(0x3FFF8000u)), 0x4000);
    cr_assert_eq(lab_bf16_from_float(1.0f), 0x3F80);
    cr_assert_eq(lab_bf16_from_float(-2.0f), 0xC000);
    cr_assert_eq(lab_bf16_from_float(0.0f), 0x0000);
    cr_assert_eq(lab_bf16_from_float(-0.0f), 0x8000);
    /* overflow: FLT_MAX and the tie above the largest bf16 go to inf; just below stays finite */
    cr_assert_eq(lab_bf16_from_float(FLT_MAX), 0x7F80);
    cr_assert_eq(lab_bf16_from_float(-FLT_MAX), 0xFF80);
    cr_assert_eq(lab_bf16_from_float(tf_float(0x7F7F8000u)), 0x7F80);
    cr_assert_eq(lab_bf16_from_float(tf_float(0x7F7F7FFFu)), 0x7F7F);
    cr_assert_eq(lab_bf16_from_float(INFINITY), 0x7F80);
    cr_assert_eq(lab_bf16_from_float(-INFINITY), 0xFF80);
    /* subnormals round like everything else; the smallest float rounds to 0 */
    cr_assert_eq(lab_bf16_from_float(FLT_TRUE_MIN), 0x0000);
    cr_assert_eq(lab_bf16_from_float(tf_float(0x00008000u)), 0x0000); /* tie, even is 0 */
    cr_assert_eq(lab_bf16_from_float(tf_float(0x00018000u)), 0x0002);
    /* value-level rounding */
    cr_assert_eq(lab_bf16_round(3.14159265f), 3.140625f);
    cr_assert_eq(lab_bf16_round(tf_float(0x3F808000u)), 1.0f);
    cr_assert_eq(lab_bf16_to_float(0x4049), 3.140625f);
}

Test(format_bf16, nan_stays_nan_with_sign)
{
    cr_assert_eq(lab_bf16_from_float(tf_float(0x7FC00000u)), 0x7FC0);
    cr_assert_eq(lab_bf16_from_float(tf_float(0xFFC00000u)), 0xFFC0);
    /* signalling NaN whose payload is all in the dropped half: must not become inf */
    cr_assert_eq(lab_bf16_from_float(tf_float(0x7F800001u)), 0x7FC0);
    cr_assert_eq(lab_bf16_from_float(tf_float(0xFF800001u)), 0xFFC0);
    cr_assert_eq(lab_bf16_from_float(tf_float(0x7F810000u)), 0x7FC1);
    /* all-ones payload must not carry into the sign */
    cr_assert_eq(lab_bf16_from_float(tf_float(0x7FFFFFFFu)), 0x7FFF);
    cr_assert(isnan(lab_bf16_round(NAN)));
}

/* ---- E4M3 --------------------------------------------------------------------------------- */

Test(format_e4m3, all_codes_decode_to_formula)
{
    for (unsigned c = 0; c < 256; ++c) {
        float f = lab_e4m3_to_float((uint8_t)c);
        double want = tf_e4m3_value(c);
        if (isnan(want)) { cr_assert(isnan(f), "code 0x%02x", c); continue; }
        cr_assert_eq((double)f, want, "code 0x%02x: %a vs %a", c, (double)f, want);
        cr_assert_eq(!!signbit(f), (c >> 7) & 1, "sign of 0x%02x", c);
    }
    cr_assert_eq(lab_e4m3_to_float(0x7E), 448.0f);
    cr_assert_eq(lab_e4m3_to_float(0x01), 0x1p-9f);
    cr_assert_eq(lab_e4m3_to_float(0x08), 0x1p-6f);
    cr_assert_eq(lab_e4m3_to_float(0x38), 1.0f);
}

Test(format_e4m3, encode_decode_round_trip)
{
    for (unsigned c = 0; c < 256; ++c) {
        if ((c & 0x7F) == 0x7F) continue;
        cr_assert_eq(lab_e4m3_from_float(lab_e4m3_to_float((uint8_t)c)), c, "code 0x%02x", c);
    }
    cr_assert_eq(lab_e4m3_from_float(-0.0f), 0x80);
    cr_assert_eq(lab_e4m3_from_float(0.0f), 0x00);
}

Test(format_e4m3, saturation)
{
    cr_assert_eq(lab_e4m3_from_float(500.0f), 0x7E);
    cr_assert_eq(lab_e4m3_from_float(449.0f), 0x7E);
    cr_assert_eq(lab_e4m3_from_float(464.0f), 0x7E);   /* tie with the would-be 480: even is 448 */
    cr_assert_eq(lab_e4m3_from_float(465.0f), 0x7E);
    cr_assert_eq(lab_e4m3_from_float(FLT_MAX), 0x7E);
    cr_assert_eq(lab_e4m3_from_float(INFINITY), 0x7E);
    cr_assert_eq(lab_e4m3_from_float(-INFINITY), 0xFE);
    cr_assert_eq(lab_e4m3_from_float(-1e9f), 0xFE);
    cr_assert_eq(lab_e4m3_to_float(lab_e4m3_from_float(500.0f)), 448.0f);
    cr_assert_eq(lab_e4m3_to_float(lab_e4m3_from_float(-1e9f)), -448.0f);
    cr_assert_eq(lab_e4m3_from_float(447.0f), 0x7E);   /* nearer 448 than 416 */
    cr_assert_eq(lab_e4m3_from_float(431.0f), 0x7D);   /* nearer 416 */
}

Test(format_e4m3, nan)
{
    cr_assert_eq(lab_e4m3_from_float(tf_float(0x7FC00000u)), 0x7F);
    cr_assert_eq(lab_e4m3_from_float(tf_float(0xFFC00000u)), 0xFF);
    cr_assert_eq(lab_e4m3_from_float(tf_float(0x7F800001u)), 0x7F);
    cr_assert_eq(lab_e4m3_from_float(tf_float(0xFFFFFFFFu)), 0xFF);
    cr_assert(isnan(lab_e4m3_to_float(0x7F)));
    cr_assert(isnan(lab_e4m3_to_float(0xFF)));
    cr_assert(!isnan(lab_e4m3_to_float(0x7E)));
    cr_assert(isinf(lab_e4m3_to_float(0x7E)) == 0);
}

Test(format_e4m3, ties_to_even_at_several_exponents)
{
    /* exponent 0: 1.0 (0x38) | 1.125 (0x39) | 1.25 (0x3A) */
    cr_assert_eq(lab_e4m3_from_float(1.0625f), 0x38);
    cr_assert_eq(lab_e4m3_from_float(1.1875f), 0x3A);
    cr_assert_eq(lab_e4m3_from_float(-1.0625f), 0xB8);
    cr_assert_eq(lab_e4m3_from_float(nextafterf(1.0625f, 2.0f)), 0x39);
    /* 1.875 (0x3F, odd) | 2.0 (0x40): the tie 1.9375 carries into the exponent */
    cr_assert_eq(lab_e4m3_from_float(1.9375f), 0x40);
    /* exponent 8: 256 (0x78) | 288 (0x79) | 320 (0x7A) */
    cr_assert_eq(lab_e4m3_from_float(272.0f), 0x78);
    cr_assert_eq(lab_e4m3_from_float(304.0f), 0x7A);
    /* exponent -6: 2^-6 (0x08) | 1.125*2^-6 (0x09) */
    cr_assert_eq(lab_e4m3_from_float(1.0625f * 0x1p-6f), 0x08);
    cr_assert_eq(lab_e4m3_from_float(1.1875f * 0x1p-6f), 0x0A);
    /* exponent 3: 8 (0x50) | 9 (0x51) | 10 (0x52) */
    cr_assert_eq(lab_e4m3_from_float(8.5f), 0x50);
    cr_assert_eq(lab_e4m3_from_float(9.5f), 0x52);
}

Test(format_e4m3, subnormals)
{
    cr_assert_eq(lab_e4m3_from_float(0x1p-9f), 0x01);
    cr_assert_eq(lab_e4m3_from_float(-0x1p-9f), 0x81);
    cr_assert_eq(lab_e4m3_from_float(0x1p-10f), 0x00);          /* tie 0 | 2^-9: even is 0 */
    cr_assert_eq(lab_e4m3_from_float(-0x1p-10f), 0x80);
    cr_assert_eq(lab_e4m3_from_float(nextafterf(0x1p-10f, 1.0f)), 0x01);
    cr_assert_eq(lab_e4m3_from_float(3.0f * 0x1p-10f), 0x02);   /* tie 1 | 2 */
    cr_assert_eq(lab_e4m3_from_float(5.0f * 0x1p-10f), 0x02);   /* tie 2 | 3 */
    cr_assert_eq(lab_e4m3_from_float(7.0f * 0x1p-9f), 0x07);
    cr_assert_eq(lab_e4m3_from_float(7.5f * 0x1p-9f), 0x08);    /* tie 7 | 2^-6: even is 8 */
    cr_assert_eq(lab_e4m3_from_float(6.5f * 0x1p-9f), 0x06);    /* tie 6 | 7 */
    cr_assert_eq(lab_e4m3_from_float(0x1p-6f), 0x08);
    cr_assert_eq(lab_e4m3_from_float(0x1p-20f), 0x00);
    cr_assert_eq(lab_e4m3_from_float(FLT_TRUE_MIN), 0x00);
    cr_assert_eq(lab_e4m3_from_float(-FLT_TRUE_MIN), 0x80);
    cr_assert_eq(lab_e4m3_to_float(0x03), 3.0f * 0x1p-9f);
    cr_assert_eq(lab_e4m3_to_float(0x87), -7.0f * 0x1p-9f);
}

/* Every midpoint between adjacent codes, one float either side of it, and each code's float
 * neighbours, both signs. */
Test(format_e4m3, boundaries_match_reference)
{
    for (unsigned c = 0; c <= 0x7E; ++c) {
        float v = (float)tf_e4m3_value(c);
        float next = c < 0x7E ? (float)tf_e4m3_value(c + 1) : 480.0f; /* 480: the would-be next */
        float mid = (float)(((double)v + next) / 2);                 /* exact */
        float pts[] = {v, nextafterf(v, 0.0f), nextafterf(v, INFINITY), mid, nextafterf(mid, 0.0f),
                       nextafterf(mid, INFINITY)};
        for (size_t k = 0; k < sizeof pts / sizeof pts[0]; ++k)
            for (int sg = 0; sg < 2; ++sg) {
                float x = sg ? -pts[k] : pts[k];
                cr_assert_eq(lab_e4m3_from_float(x), tf_e4m3_ref(x), "x = %a: lab 0x%02x ref 0x%02x",
                             (double)x, lab_e4m3_from_float(x), tf_e4m3_ref(x));
            }
    }
}

Test(format_e4m3, random_floats_match_reference)
{
    uint64_t s = 0x243F6A8885A308D3ull;
    unsigned long bad = 0;
    uint32_t first = 0;
    for (long i = 0; i < 2000000; ++i) {
        uint64_t r = tf_xs(&s);
        uint32_t u = (uint32_t)(r >> 32);
        if (i & 1) { /* exponent within [2^-12, 2^10): the range that matters */
            uint32_t e = 115u + (uint32_t)(r % 22u);
            u = (u & 0x807FFFFFu) | (e << 23);
        }
        float f = tf_float(u);
        if (lab_e4m3_from_float(f) != tf_e4m3_ref(f) && bad++ == 0) first = u;
    }
    cr_assert_eq(bad, 0, "%lu mismatches, first float bits 0x%08x: lab 0x%02x ref 0x%02x", bad, first,
                 lab_e4m3_from_float(tf_float(first)), tf_e4m3_ref(tf_float(first)));
}

/* ---- E2M1 --------------------------------------------------------------------------------- */

Test(format_e2m1, all_codes_decode)
{
    for (unsigned c = 0; c < 16; ++c) {
        float f = lab_e2m1_to_float((uint8_t)c);
        double want = (c & 8) ? -tf_e2m1_mag[c & 7] : tf_e2m1_mag[c & 7];
        cr_assert_eq((double)f, want, "code %u", c);
        cr_assert_eq(!!signbit(f), (c >> 3) & 1, "sign of code %u", c);
        /* only the low 4 bits are read */
        for (unsigned hi = 1; hi < 16; ++hi) {
            float g = lab_e2m1_to_float((uint8_t)(c | (hi << 4)));
            cr_assert_eq(tf_bits(g), tf_bits(f), "code 0x%02x", c | (hi << 4));
        }
    }
}

Test(format_e2m1, encode_decode_round_trip)
{
    for (unsigned c = 0; c < 16; ++c)
        cr_assert_eq(lab_e2m1_from_float(lab_e2m1_to_float((uint8_t)c)), c, "code %u", c);
}

Test(format_e2m1, ties_to_even)
{
    /* magnitudes by code: 0:0 1:0.5 2:1 3:1.5 4:2 5:3 6:4 7:6; ties go to the even code */
    static const struct { float x; uint8_t code; } t[] = {
        {0.25f, 0}, {0.75f, 2}, {1.25f, 2}, {1.75f, 4}, {2.5f, 4}, {3.5f, 6}, {5.0f, 6},
        {0.26f, 1}, {0.74f, 1}, {0.76f, 2}, {1.26f, 3}, {2.49f, 4}, {2.51f, 5}, {3.49f, 5},
        {3.51f, 6}, {4.99f, 6}, {5.01f, 7}, {0.1f, 0}, {0.5f, 1}, {3.0f, 5}, {6.0f, 7},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; ++i) {
        cr_assert_eq(lab_e2m1_from_float(t[i].x), t[i].code, "%g", (double)t[i].x);
        cr_assert_eq(lab_e2m1_from_float(-t[i].x), t[i].code | 8, "-%g", (double)t[i].x);
        cr_assert_eq(tf_e2m1_ref(t[i].x), t[i].code, "reference disagrees at %g", (double)t[i].x);
    }
    cr_assert_eq(lab_e2m1_from_float(nextafterf(0.25f, 1.0f)), 1);
    cr_assert_eq(lab_e2m1_from_float(nextafterf(5.0f, 6.0f)), 7);
    cr_assert_eq(lab_e2m1_from_float(-0.0f), 8);
    cr_assert_eq(lab_e2m1_from_float(FLT_TRUE_MIN), 0);
}

Test(format_e2m1, saturation_and_nan)
{
    cr_assert_eq(lab_e2m1_from_float(6.5f), 7);
    cr_assert_eq(lab_e2m1_from_float(7.0f), 7);
    cr_assert_eq(lab_e2m1_from_float(100.0f), 7);
    cr_assert_eq(lab_e2m1_from_float(FLT_MAX), 7);
    cr_assert_eq(lab_e2m1_from_float(INFINITY), 7);
    cr_assert_eq(lab_e2m1_from_float(-INFINITY), 15);
    cr_assert_eq(lab_e2m1_from_float(-1e30f), 15);
    cr_assert_eq(lab_e2m1_from_float(tf_float(0x7FC00000u)), 0);
    cr_assert_eq(lab_e2m1_from_float(tf_float(0xFFC00000u)), 0);
    cr_assert_eq(lab_e2m1_from_float(tf_float(0x7F800001u)), 0);
}

Test(format_e2m1, random_floats_match_reference)
{
    uint64_t s = 0x13198A2E03707344ull;
    unsigned long bad = 0;
    uint32_t first = 0;
    for (long i = 0; i < 1000000; ++i) {
        uint64_t r = tf_xs(&s);
        uint32_t u = (uint32_t)(r >> 32);
        if (i & 1) { /* exponent within [2^-4, 2^4) */
            uint32_t e = 123u + (uint32_t)(r % 8u);
            u = (u & 0x807FFFFFu) | (e << 23);
        }
        float f = tf_float(u);
        if (lab_e2m1_from_float(f) != tf_e2m1_ref(f) && bad++ == 0) first = u;
    }
    cr_assert_eq(bad, 0, "%lu mismatches, first float bits 0x%08x: lab %u ref %u", bad, first,
                 lab_e2m1_from_float(tf_float(first)), tf_e2m1_ref(tf_float(first)));
}

Test(format_e2m1, pack_and_get)
{
    uint8_t codes[7] = {0x1, 0x2, 0x3, 0x4, 0xF, 0xE, 0x9};
    uint8_t bytes[6];
    memset(bytes, 0xAA, sizeof bytes);
    lab_e2m1_pack(codes, 7, bytes);
    cr_assert_eq(bytes[0], 0x21);
    cr_assert_eq(bytes[1], 0x43);
    cr_assert_eq(bytes[2], 0xEF);
    cr_assert_eq(bytes[3], 0x09);   /* odd n: the last high nibble is zero */
    cr_assert_eq(bytes[4], 0xAA);   /* nothing written past (n+1)/2 bytes */
    for (size_t i = 0; i < 7; ++i) cr_assert_eq(lab_e2m1_get(bytes, i), codes[i], "element %zu", i);

    /* even n, and codes with junk in the high bits */
    uint8_t junk[4] = {0xF5, 0x3A, 0x80, 0x17};
    memset(bytes, 0xAA, sizeof bytes);
    lab_e2m1_pack(junk, 4, bytes);
    cr_assert_eq(bytes[0], 0xA5);
    cr_assert_eq(bytes[1], 0x70);
    cr_assert_eq(bytes[2], 0xAA);
    /* n = 1 and n = 0 */
    memset(bytes, 0xAA, sizeof bytes);
    lab_e2m1_pack(codes, 1, bytes);
    cr_assert_eq(bytes[0], 0x01);
    cr_assert_eq(bytes[1], 0xAA);
    lab_e2m1_pack(codes, 0, bytes + 1);
    cr_assert_eq(bytes[1], 0xAA);
}

Test(format_e2m1, pack_get_round_trip_random)
{
    enum { N = 1001 };
    uint8_t codes[N], bytes[(N + 1) / 2];
    uint64_t s = 12345;
    for (size_t i = 0; i < N; ++i) codes[i] = (uint8_t)(tf_xs(&s) & 0xF);
    lab_e2m1_pack(codes, N, bytes);
    for (size_t i = 0; i < N; ++i) cr_assert_eq(lab_e2m1_get(bytes, i), codes[i], "element %zu", i);
    cr_assert_eq(bytes[N / 2] >> 4, 0);
}
