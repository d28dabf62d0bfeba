/* lab_card: an incident's card, the top of its story (incidents/<id>/README.md between "<!-- card -->" and
 * "<!-- end card -->"): its sections under fixed headings in a fixed order, and its variants each with its class. What
 * the lab says of an incident (`lab explain`, the report's one-line summary) comes from here and nowhere else. */
#ifndef LAB_CARD_H
#define LAB_CARD_H

#include <stddef.h>

#include "lab_err.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LAB_CARD_BEGIN "<!-- card -->"
#define LAB_CARD_END "<!-- end card -->"
/* Lines a card may hold between its two markers. */
#define LAB_CARD_MAX_LINES 30
/* The core story, the README outside the card, is about 1,500 words: the tests hold it to 10% over that, counted as
 * lab_card.core_words counts (runs of non-blank characters, tables and generated blocks included). */
#define LAB_CARD_CORE_WORDS_MAX 1650

/* The card's sections, in the order the card must give them (each a level-2 heading, lab_card_heading). */
typedef enum {
    LAB_CARD_SEE = 0,  /* "What you see" */
    LAB_CARD_TRIGGER,  /* "The trigger" */
    LAB_CARD_CAUSE,    /* "Root cause" */
    LAB_CARD_FIX,      /* "The fix" */
    LAB_CARD_SPOT,     /* "Spot it in your own code" */
    LAB_CARD_LIVE,     /* "See it live" */
    LAB_CARD_VARIANTS, /* "Variants" */
    LAB_CARD_N
} lab_card_section;

/* The heading of section s as the card writes it after "## " ("What you see", ...); "?" outside the enum. */
const char *lab_card_heading(lab_card_section s);

/* What a bug variant is: the code as it ran, a belief put to the test, or something the lab built. */
typedef enum {
    LAB_CARD_CLASS_NONE = 0,     /* the entry names none (a fix needs none) */
    LAB_CARD_CLASS_HISTORY,      /* **history** */
    LAB_CARD_CLASS_HYPOTHESIS,   /* **hypothesis** */
    LAB_CARD_CLASS_CONSTRUCTION  /* **construction** */
} lab_card_class;

/* "history", "hypothesis", "construction"; "" for LAB_CARD_CLASS_NONE. */
const char *lab_card_class_name(lab_card_class c);

/* One entry of the Variants section: "`NAME`: text", "`NAME` (note): text" or "`A`, `B`: text", at the start of a list
 * item or after ". " or "; " in one. Several names share the entry's class; its text goes to each name in turn when it
 * has as many parts separated by "; ", else whole to each. */
typedef struct {
    char *name;         /* the variant's name */
    lab_card_class cls; /* the first class the entry names in bold */
    char *why;          /* the entry's text after the name and its colon, markdown emphasis (**) removed and a class
                           that opens it joined as a person reads it: "history: the write-up's old rule as it
                           computed, its exponent a run-time value.", "hypothesis (the lab's): ..." */
} lab_card_variant;

/* A picture the story shows, on a line of its own: "![CAPTION](figures/NAME.svg)". */
typedef struct {
    char *file;         /* "figures/NAME.svg", relative to the incident's directory */
    char *caption;      /* the image's text, emphasis removed */
} lab_card_picture;

typedef struct {
    char *title;                    /* the README's first line without "# " ("" when it has no title line) */
    char *text[LAB_CARD_N];         /* each section's lines joined by '\n', trimmed, emphasis kept as written */
    int begin_line, end_line;       /* 1-based lines of the two markers */
    lab_card_variant *variants;     /* in the card's order */
    size_t n_variants;
    size_t core_words;              /* words of the README outside the card (the core story and what follows it) */
    char *core_headings;            /* the level-2 headings after the card, each ended by '\n' ("Symptom\n...") */
    lab_card_picture *pictures;     /* the story's pictures drawn by the build, in the README's order */
    size_t n_pictures;
} lab_card;

/* Parses the card of the README text `md` (NUL-terminated), `path` naming it in errors, into *out (lab_card_free
 * releases it; *out is empty on error). LAB_ERR_FORMAT naming path:line when: a marker is missing or repeated; the card
 * holds more than LAB_CARD_MAX_LINES lines; a line between the markers is neither under a heading nor blank before
 * the first; a level-2 heading is not the next one of lab_card_heading's order, or one is missing; the card does not
 * end with a line "---"; a Variants entry names a variant twice. LAB_ERR_NOMEM when out of memory. */
lab_status lab_card_parse(const char *md, const char *path, lab_card *out);

/* Reads and parses <root>/incidents/<id>/README.md (lab_card_parse). LAB_ERR_IO naming the path when it cannot be
 * read; otherwise as lab_card_parse. */
lab_status lab_card_load(const char *root, const char *id, lab_card *out);

/* 1 when the story after the card has the level-2 heading `h` ("Root cause"), else 0. */
int lab_card_core_has(const lab_card *c, const char *h);

/* The entry of variant `name`; NULL when the card has none. */
const lab_card_variant *lab_card_variant_of(const lab_card *c, const char *name);

/* The first sentence of section s (up to and including the first ". " or the end), markdown emphasis removed, into buf
 * (len bytes; fitted at a word boundary when longer, lab_text_fit). */
void lab_card_first_sentence(const lab_card *c, lab_card_section s, char *buf, size_t len);

/* Text as a person reads it on a terminal: markdown emphasis (**) removed, into a malloc'ed string (NULL when out of
 * memory). Code spans keep their backquotes. */
char *lab_card_plain(const char *md);

/* Frees what lab_card_parse made and empties *c; an empty card is fine. */
void lab_card_free(lab_card *c);

#ifdef __cplusplus
}
#endif

#endif
