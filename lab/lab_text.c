/* lab_text: text for people: paragraphs wrapped to a width at word boundaries, and text fitted into a fixed buffer
 * without cutting a word. */
#include "lab_text.h"

#include <string.h>

size_t lab_text_cols(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; ++i)
        if (((unsigned char)s[i] & 0xC0) != 0x80) ++n;
    return n;
}

static int lab_text_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

int lab_text_wrap(FILE *f, const char *text, int width, const char *first, const char *rest)
{
    int bad = fputs(first, f) < 0;
    size_t col = lab_text_cols(first, strlen(first)), indent = lab_text_cols(rest, strlen(rest));
    int at_start = 1; /* nothing but the prefix on this line yet */
    const char *p = text ? text : "";
    while (*p) {
        while (*p && lab_text_space(*p)) ++p;
        if (!*p) break;
        const char *w = p;
        while (*p && !lab_text_space(*p)) ++p;
        size_t wl = (size_t)(p - w), wc = lab_text_cols(w, wl);
        if (!at_start && col + 1 + wc > (size_t)width) {
            bad |= fputc('\n', f) == EOF || fputs(rest, f) < 0;
            col = indent;
            at_start = 1;
        }
        if (!at_start) {
            bad |= fputc(' ', f) == EOF;
            ++col;
        }
        bad |= fwrite(w, 1, wl, f) != wl;
        col += wc;
        at_start = 0;
    }
    bad |= fputc('\n', f) == EOF;
    return bad ? -1 : 0;
}

int lab_text_fit(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n < cap) {
        memcpy(dst, src, n + 1);
        return 0;
    }
    size_t room = cap - 1 - strlen(LAB_TEXT_CUT), end = room;
    /* the last space at or before room: the words before it are whole */
    while (end > 0 && src[end] != ' ') --end;
    while (end > 0 && src[end - 1] == ' ') --end;
    if (end == 0) { /* one word longer than the room: cut it at a character boundary, the marker says so */
        end = room;
        while (end > 0 && ((unsigned char)src[end] & 0xC0) == 0x80) --end;
    }
    memcpy(dst, src, end);
    memcpy(dst + end, LAB_TEXT_CUT, strlen(LAB_TEXT_CUT) + 1);
    return 1;
}
