/* lab_card: an incident's card, the top of its story (incidents/<id>/README.md between "<!-- card -->" and
 * "<!-- end card -->"): its sections under fixed headings in a fixed order, and its variants each with its class. What
 * the lab says of an incident (`lab explain`, the report's one-line summary) comes from here and nowhere else. */
#include "lab_card.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_fs.h"
#include "lab_text.h"

static const char *const lab_card_headings[LAB_CARD_N] = {
    "What you see", "The trigger", "Root cause", "The fix", "Spot it in your own code", "See it live", "Variants",
};

const char *lab_card_heading(lab_card_section s)
{
    return (unsigned)s < LAB_CARD_N ? lab_card_headings[s] : "?";
}

const char *lab_card_class_name(lab_card_class c)
{
    switch (c) {
    case LAB_CARD_CLASS_HISTORY: return "history";
    case LAB_CARD_CLASS_HYPOTHESIS: return "hypothesis";
    case LAB_CARD_CLASS_CONSTRUCTION: return "construction";
    default: return "";
    }
}

void lab_card_free(lab_card *c)
{
    free(c->title);
    for (int s = 0; s < LAB_CARD_N; ++s) free(c->text[s]);
    for (size_t i = 0; i < c->n_variants; ++i) free(c->variants[i].name), free(c->variants[i].why);
    free(c->variants);
    free(c->core_headings);
    for (size_t i = 0; i < c->n_pictures; ++i) free(c->pictures[i].file), free(c->pictures[i].caption);
    free(c->pictures);
    memset(c, 0, sizeof *c);
}

char *lab_card_plain(const char *md)
{
    size_t n = strlen(md);
    char *out = malloc(n + 1);
    if (!out) return NULL;
    size_t j = 0;
    for (size_t i = 0; i < n; ++i) {
        if (md[i] == '*' && md[i + 1] == '*') {
            ++i;
            continue;
        }
        out[j++] = md[i];
    }
    out[j] = '\0';
    return out;
}

/* A copy of s[0..n) with leading and trailing blanks removed; NULL when out of memory. */
static char *lab_card_strip(const char *s, size_t n)
{
    while (n && isspace((unsigned char)*s)) ++s, --n;
    while (n && isspace((unsigned char)s[n - 1])) --n;
    char *out = malloc(n + 1);
    if (out) memcpy(out, s, n), out[n] = '\0';
    return out;
}

#define LAB_CARD_NAMES_MAX 8

/* One backquoted variant name at item[i]: 1 with its span [*n0, *n1) and *end just past the closing backquote. */
static int lab_card_name_at(const char *item, size_t i, size_t *n0, size_t *n1, size_t *end)
{
    if (item[i] != '`') return 0;
    size_t j = i + 1;
    while (item[j] && (islower((unsigned char)item[j]) || isdigit((unsigned char)item[j]) || item[j] == '-')) ++j;
    if (item[j] != '`' || j == i + 1) return 0;
    *n0 = i + 1, *n1 = j, *end = j + 1;
    return 1;
}

/* Where an entry of the Variants section starts at item[i] (a backquote at the item's start or after ". " / "; "):
 * "`a`: text", "`a`, `b`: text" or "`a` (note): text". Returns how many names it has (0: no entry starts there), their
 * spans in n0[], n1[] and *text the index just past its colon. */
static int lab_card_entry_at(const char *item, size_t i, size_t n0[LAB_CARD_NAMES_MAX], size_t n1[LAB_CARD_NAMES_MAX],
                             size_t *text)
{
    if (i > 0 && !(i >= 2 && item[i - 1] == ' ' && (item[i - 2] == '.' || item[i - 2] == ';'))) return 0;
    int n = 0;
    size_t k = i, end;
    while (n < LAB_CARD_NAMES_MAX && lab_card_name_at(item, k, &n0[n], &n1[n], &end)) {
        ++n;
        k = end;
        if (item[k] == ',' && item[k + 1] == ' ' && item[k + 2] == '`') k += 2;
        else break;
    }
    if (!n) return 0;
    while (item[k] == ' ') ++k;
    if (item[k] == '(') { /* a note: "`clamp-first-fix` (fix role):" */
        while (item[k] && item[k] != ')') ++k;
        if (!item[k]) return 0;
        ++k;
    }
    if (item[k] != ':') return 0;
    *text = k + 1;
    return n;
}

/* The class an entry's text names first in bold. When the entry opens with it, *after is where its text starts after
 * it and *sep how to join the two for people (": " where a colon followed the class, else " "); otherwise *after is the
 * whole text and *sep NULL. */
static lab_card_class lab_card_class_of(const char *raw, const char **after, const char **sep)
{
    static const struct { const char *bold; lab_card_class cls; } classes[] = {
        {"**history**", LAB_CARD_CLASS_HISTORY},
        {"**hypothesis**", LAB_CARD_CLASS_HYPOTHESIS},
        {"**construction**", LAB_CARD_CLASS_CONSTRUCTION},
    };
    lab_card_class cls = LAB_CARD_CLASS_NONE;
    const char *best = NULL;
    size_t bl = 0;
    for (size_t k = 0; k < sizeof classes / sizeof *classes; ++k) {
        const char *at = strstr(raw, classes[k].bold);
        if (at && (!best || at < best)) best = at, cls = classes[k].cls, bl = strlen(classes[k].bold);
    }
    *after = raw;
    *sep = NULL;
    if (best == raw) { /* the entry opens with its class: what follows is its why */
        const char *p = raw + bl;
        while (*p == ' ') ++p;
        *sep = " ";
        if (*p == ':') {
            ++p;
            *sep = ": ";
        }
        while (*p == ' ') ++p;
        *after = p;
    }
    return cls;
}

/* Adds one variant to c: its why is the class's name, sep and the text (text alone when sep is NULL), emphasis
 * removed and a trailing ';' or ',' dropped. LAB_ERR_FORMAT naming path:line for a variant named twice. */
static lab_status lab_card_add(lab_card *c, const char *name, size_t nl, lab_card_class cls, const char *sep,
                               const char *text, size_t tl, const char *path, int line)
{
    while (tl && (text[tl - 1] == ';' || text[tl - 1] == ',' || text[tl - 1] == ' ')) --tl;
    char *nm = lab_card_strip(name, nl), *raw = lab_card_strip(text, tl);
    char *plain = raw ? lab_card_plain(raw) : NULL;
    size_t wl = (plain ? strlen(plain) : 0) + 32;
    char *why = plain ? malloc(wl) : NULL;
    if (why) snprintf(why, wl, "%s%s%s", sep ? lab_card_class_name(cls) : "", sep && *plain ? sep : "", plain);
    free(raw), free(plain);
    if (!nm || !why) {
        free(nm), free(why);
        return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
    }
    if (lab_card_variant_of(c, nm)) {
        lab_status st = lab_err_set(LAB_ERR_FORMAT, "%s:%d: the card's Variants name `%s` twice", path, line, nm);
        free(nm), free(why);
        return st;
    }
    lab_card_variant *v = realloc(c->variants, (c->n_variants + 1) * sizeof *v);
    if (!v) {
        free(nm), free(why);
        return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
    }
    c->variants = v;
    c->variants[c->n_variants++] = (lab_card_variant){nm, cls, why};
    return LAB_OK;
}

/* Adds the entries of one list item (its lines joined by spaces) to c. An entry of several names gives each the
 * entry's class; its text goes to each name in turn when it has as many parts separated by "; " as names, else the
 * whole text to every name. LAB_ERR_FORMAT naming path:line for a variant named twice. */
static lab_status lab_card_item(lab_card *c, const char *item, const char *path, int line)
{
    size_t n = strlen(item);
    lab_status st = LAB_OK;
    for (size_t i = 0; i < n && st == LAB_OK; ++i) {
        size_t n0[LAB_CARD_NAMES_MAX], n1[LAB_CARD_NAMES_MAX], t;
        int names = lab_card_entry_at(item, i, n0, n1, &t);
        if (!names) continue;
        size_t e = t; /* the entry runs to the next entry's start */
        size_t m0[LAB_CARD_NAMES_MAX], m1[LAB_CARD_NAMES_MAX], mt;
        while (e < n && !lab_card_entry_at(item, e, m0, m1, &mt)) ++e;
        size_t tl = e - t;
        char *raw = lab_card_strip(item + t, tl);
        if (!raw) return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
        const char *after, *sep;
        lab_card_class cls = lab_card_class_of(raw, &after, &sep);
        /* the parts of the text after the class, one a name when there are as many */
        const char *part[LAB_CARD_NAMES_MAX + 1];
        int parts = 0;
        for (const char *p = after; parts <= LAB_CARD_NAMES_MAX;) {
            part[parts++] = p;
            const char *q = strstr(p, "; ");
            if (!q) break;
            p = q + 2;
        }
        for (int k = 0; k < names && st == LAB_OK; ++k) {
            const char *from = after, *to = after + strlen(after);
            if (names > 1 && parts == names) {
                from = part[k];
                to = k + 1 < parts ? part[k + 1] - 2 : after + strlen(after);
            }
            st = lab_card_add(c, item + n0[k], n1[k] - n0[k], cls, sep, from, (size_t)(to - from), path, line);
        }
        free(raw);
        i = e - 1;
    }
    return st;
}

/* Splits the Variants section's text into list items ("- " starts one, a non-blank line continues it) and adds
 * their entries. */
static lab_status lab_card_variants(lab_card *c, const char *text, const char *path, int first_line)
{
    char *item = malloc(strlen(text) + 1);
    if (!item) return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
    lab_status st = LAB_OK;
    size_t len = 0;
    int line = first_line, item_line = first_line;
    for (const char *p = text; st == LAB_OK; ++line) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        while (n && p[n - 1] == ' ') --n;
        const char *q = p;
        while (q < p + n && *q == ' ') ++q;
        size_t qn = (size_t)(p + n - q);
        if (qn >= 2 && q == p && q[0] == '-' && q[1] == ' ') { /* a new item: the one before it is whole */
            if (len) item[len] = '\0', st = lab_card_item(c, item, path, item_line);
            len = 0;
            item_line = line;
            memcpy(item, q + 2, qn - 2), len = qn - 2;
        } else if (len && qn) {
            item[len++] = ' ';
            memcpy(item + len, q, qn), len += qn;
        }
        if (!e) break;
        p = e + 1;
    }
    if (st == LAB_OK && len) item[len] = '\0', st = lab_card_item(c, item, path, item_line);
    free(item);
    return st;
}

static size_t lab_card_words(const char *s, size_t n)
{
    size_t w = 0;
    int in = 0;
    for (size_t i = 0; i < n; ++i) {
        int sp = isspace((unsigned char)s[i]);
        if (!sp && !in) ++w;
        in = !sp;
    }
    return w;
}

lab_status lab_card_parse(const char *md, const char *path, lab_card *out)
{
    memset(out, 0, sizeof *out);
    /* the lines, by their starts */
    size_t nl = 1;
    for (const char *p = md; *p; ++p) nl += *p == '\n';
    const char **ls = malloc(nl * sizeof *ls);
    size_t *ll = malloc(nl * sizeof *ll);
    if (!ls || !ll) {
        free(ls), free(ll);
        return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
    }
    size_t k = 0;
    for (const char *p = md;;) {
        const char *e = strchr(p, '\n');
        ls[k] = p, ll[k] = e ? (size_t)(e - p) : strlen(p);
        ++k;
        if (!e) break;
        p = e + 1;
    }
    nl = k;
#define LINE_IS(i, s) (ll[i] == strlen(s) && !strncmp(ls[i], s, ll[i]))
    lab_status st = LAB_OK;
    long b = -1, e = -1;
    for (size_t i = 0; i < nl && st == LAB_OK; ++i) {
        if (LINE_IS(i, LAB_CARD_BEGIN)) {
            if (b >= 0) st = lab_err_set(LAB_ERR_FORMAT, "%s:%zu: a second '%s'", path, i + 1, LAB_CARD_BEGIN);
            b = (long)i;
        } else if (LINE_IS(i, LAB_CARD_END)) {
            if (e >= 0 || b < 0)
                st = lab_err_set(LAB_ERR_FORMAT, "%s:%zu: '%s' %s", path, i + 1, LAB_CARD_END,
                                 b < 0 ? "before the card's start" : "a second time");
            e = (long)i;
        }
    }
    if (st == LAB_OK && (b < 0 || e < 0))
        st = lab_err_set(LAB_ERR_FORMAT, "%s: no card: the story opens with '%s' ... '%s' (%d lines at most)", path,
                         LAB_CARD_BEGIN, LAB_CARD_END, LAB_CARD_MAX_LINES);
    if (st == LAB_OK && e - b - 1 > LAB_CARD_MAX_LINES)
        st = lab_err_set(LAB_ERR_FORMAT, "%s:%ld: the card holds %ld lines, %d at most", path, b + 1, e - b - 1,
                         LAB_CARD_MAX_LINES);
    if (st == LAB_OK) {
        out->begin_line = (int)b + 1, out->end_line = (int)e + 1;
        if (nl && ll[0] > 2 && !strncmp(ls[0], "# ", 2)) out->title = lab_card_strip(ls[0] + 2, ll[0] - 2);
        else out->title = lab_card_strip("", 0);
        /* the last non-blank line of the card is its rule */
        long last = e - 1;
        while (last > b && ll[last] == 0) --last;
        if (last <= b || !LINE_IS(last, "---"))
            st = lab_err_set(LAB_ERR_FORMAT, "%s:%ld: the card ends with a line '---' before '%s'", path, last + 1,
                             LAB_CARD_END);
        int sec = -1;
        long sec_start = -1;
        int var_line = 0;
        for (long i = b + 1; i <= last && st == LAB_OK; ++i) {
            int heading = ll[i] >= 3 && !strncmp(ls[i], "## ", 3);
            if (heading || i == last) {
                if (sec >= 0) { /* the section that ends here */
                    const char *s0 = ls[sec_start];
                    const char *s1 = ls[i];
                    out->text[sec] = lab_card_strip(s0, (size_t)(s1 - s0));
                    if (!out->text[sec]) st = lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
                }
                if (i == last) break;
                int want = sec + 1;
                if (want >= LAB_CARD_N || ll[i] - 3 != strlen(lab_card_headings[want]) ||
                    strncmp(ls[i] + 3, lab_card_headings[want], ll[i] - 3))
                    st = lab_err_set(LAB_ERR_FORMAT, "%s:%ld: the card's heading '%.*s' where '## %s' belongs (its "
                                     "headings, in order: What you see, The trigger, Root cause, The fix, Spot it in "
                                     "your own code, See it live, Variants)", path, i + 1, (int)ll[i], ls[i],
                                     want < LAB_CARD_N ? lab_card_headings[want] : "---");
                sec = want;
                sec_start = i + 1;
                if (sec == LAB_CARD_VARIANTS) var_line = (int)i + 2;
            } else if (sec < 0 && ll[i] > 0) {
                st = lab_err_set(LAB_ERR_FORMAT, "%s:%ld: text before the card's first heading '## %s'", path, i + 1,
                                 lab_card_headings[0]);
            }
        }
        if (st == LAB_OK && sec != LAB_CARD_N - 1)
            st = lab_err_set(LAB_ERR_FORMAT, "%s:%ld: the card has no '## %s'", path, last + 1,
                             lab_card_headings[sec + 1]);
        if (st == LAB_OK) st = lab_card_variants(out, out->text[LAB_CARD_VARIANTS], path, var_line);
        if (st == LAB_OK) {
            const char *card0 = ls[b], *card1 = e + 1 < (long)nl ? ls[e + 1] : md + strlen(md);
            out->core_words = lab_card_words(md, (size_t)(card0 - md)) + lab_card_words(card1, strlen(card1));
            size_t hl = 0;
            for (size_t i = (size_t)e + 1; i < nl; ++i) hl += ll[i] + 1;
            out->core_headings = malloc(hl + 1);
            if (!out->core_headings) st = lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
            else out->core_headings[0] = '\0';
            for (size_t i = (size_t)e + 1, j = 0; out->core_headings && i < nl; ++i) {
                if (ll[i] > 3 && !strncmp(ls[i], "## ", 3)) {
                    memcpy(out->core_headings + j, ls[i] + 3, ll[i] - 3);
                    j += ll[i] - 3;
                    out->core_headings[j++] = '\n';
                }
                out->core_headings[j] = '\0';
            }
        }
    }
    /* the pictures: "![caption](figures/NAME.svg)" lines anywhere in the story */
    for (size_t i = 0; i < nl && st == LAB_OK; ++i) {
        const char *p = ls[i];
        size_t n = ll[i];
        if (n < 20 || strncmp(p, "![", 2) || p[n - 1] != ')') continue;
        const char *mid = strstr(p, "](figures/");
        if (!mid || mid > p + n || n - (size_t)(mid - p) < 15 || strncmp(p + n - 5, ".svg)", 5)) continue;
        lab_card_picture *pic = realloc(out->pictures, (out->n_pictures + 1) * sizeof *pic);
        if (!pic) {
            st = lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
            break;
        }
        out->pictures = pic;
        char *cap = lab_card_strip(p + 2, (size_t)(mid - p) - 2);
        char *plain = cap ? lab_card_plain(cap) : NULL;
        char *file = lab_card_strip(mid + 2, (size_t)(p + n - 1 - (mid + 2)));
        free(cap);
        if (!plain || !file) {
            free(plain), free(file);
            st = lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
            break;
        }
        out->pictures[out->n_pictures++] = (lab_card_picture){file, plain};
    }
#undef LINE_IS
    free(ls), free(ll);
    if (st != LAB_OK) lab_card_free(out);
    return st;
}

lab_status lab_card_load(const char *root, const char *id, lab_card *out)
{
    memset(out, 0, sizeof *out);
    char path[4096];
    snprintf(path, sizeof path, "%s/incidents/%s/README.md", root, id);
    char *md = NULL;
    size_t len = 0;
    lab_status st = lab_fs_read_all(path, &md, &len);
    if (st != LAB_OK) return st;
    st = lab_card_parse(md, path, out);
    free(md);
    return st;
}

int lab_card_core_has(const lab_card *c, const char *h)
{
    size_t n = strlen(h);
    for (const char *p = c->core_headings; p && *p;) {
        const char *e = strchr(p, '\n');
        if (!e) break;
        if ((size_t)(e - p) == n && !strncmp(p, h, n)) return 1;
        p = e + 1;
    }
    return 0;
}

const lab_card_variant *lab_card_variant_of(const lab_card *c, const char *name)
{
    for (size_t i = 0; i < c->n_variants; ++i)
        if (!strcmp(c->variants[i].name, name)) return &c->variants[i];
    return NULL;
}

void lab_card_first_sentence(const lab_card *c, lab_card_section s, char *buf, size_t len)
{
    const char *t = (unsigned)s < LAB_CARD_N && c->text[s] ? c->text[s] : "";
    char *one = lab_card_plain(t);
    if (!one || len < 8) {
        if (len) buf[0] = '\0';
        free(one);
        return;
    }
    for (char *q = one; *q; ++q)
        if (*q == '\n') *q = ' ';
    char *end = strstr(one, ". ");
    if (end) end[1] = '\0';
    lab_text_fit(buf, len, one);
    free(one);
}
