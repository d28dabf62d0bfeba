/* lab_text: text for people: paragraphs wrapped to a width at word boundaries, and text fitted into a fixed buffer
 * without cutting a word. */
#ifndef LAB_TEXT_H
#define LAB_TEXT_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The width the lab's output for people fits (explain, case, help). */
#define LAB_TEXT_WIDTH 100

/* The columns s takes on a terminal: its UTF-8 code points (continuation bytes do not count). */
size_t lab_text_cols(const char *s, size_t len);

/* Writes text to f as one paragraph wrapped at width columns: the first line starts with `first`, every other line
 * with `rest` (both may be ""), runs of spaces and line breaks become one space, and a line ends with a newline.
 * Words are never split: a word longer than the room a line has gets a line of its own. Empty text writes `first`
 * alone and a newline. Returns 0, or -1 when f reports a write error. */
int lab_text_wrap(FILE *f, const char *text, int width, const char *first, const char *rest);

/* Copies src into dst (cap bytes, cap >= 8) whole when it fits. When it does not, dst gets the longest prefix that
 * ends at a word boundary (before a space) and leaves room for LAB_TEXT_CUT, then LAB_TEXT_CUT: never a cut word, never
 * a cut UTF-8 character, and the reader sees that text is missing. Returns 1 when it cut, 0 when src fits. */
#define LAB_TEXT_CUT " [...]"
int lab_text_fit(char *dst, size_t cap, const char *src);

#ifdef __cplusplus
}
#endif

#endif
