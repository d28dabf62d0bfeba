/* test_card: the card at the top of every story (lab_card): its fixed headings in order, at most 30 lines, a rule
 * before its end, every variant of the incident named with a class where it is a bug; the core story within its
 * words; and the parser's errors, each naming the file and line. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_card.h"
#include "lab_fs.h"
#include "lab_incident.h"

static const char *card_md =
    "# 9999 A title\n"
    "\n"
    "<!-- card -->\n"
    "## What you see\n"
    "NaN in the **gradients**. Only there.\n"
    "## The trigger\n"
    "A negative base.\n"
    "## Root cause\n"
    "A rule that logs a negative number.\n"
    "## The fix\n"
    "Reuse the output.\n"
    "## Spot it in your own code\n"
    "Masks applied by multiplying.\n"
    "## See it live\n"
    "- `build/lab explain 9999`\n"
    "## Variants\n"
    "- `bug-a`: **history**: the rule as it ran,\n"
    "  over two lines.\n"
    "- `bug-b` (the write-up's): **hypothesis**: believed. `fix`: the fix.\n"
    "- `bug-c`, `bug-d`: **construction** (the lab's): one; two\n"
    "\n"
    "---\n"
    "<!-- end card -->\n"
    "\n"
    "## Symptom\n"
    "one two three four five\n"
    "\n"
    "![the layout](figures/tile.svg)\n"
    "## Root cause\n"
    "six\n";

Test(card, sections_variants_and_the_core)
{
    lab_card c;
    cr_assert_eq(lab_card_parse(card_md, "R.md", &c), LAB_OK, "%s", lab_err_msg());
    cr_expect_str_eq(c.title, "9999 A title");
    cr_expect_eq(c.begin_line, 3);
    cr_expect_eq(c.end_line, 23);
    cr_expect_str_eq(c.text[LAB_CARD_SEE], "NaN in the **gradients**. Only there.");
    cr_expect_str_eq(c.text[LAB_CARD_LIVE], "- `build/lab explain 9999`");
    cr_assert_eq(c.n_variants, 5);
    cr_expect_str_eq(c.variants[0].name, "bug-a");
    cr_expect_eq(c.variants[0].cls, LAB_CARD_CLASS_HISTORY);
    cr_expect_str_eq(c.variants[0].why, "history: the rule as it ran, over two lines.");
    cr_expect_str_eq(c.variants[1].name, "bug-b");
    cr_expect_eq(c.variants[1].cls, LAB_CARD_CLASS_HYPOTHESIS);
    cr_expect_str_eq(c.variants[1].why, "hypothesis: believed.");
    cr_expect_str_eq(c.variants[2].name, "fix");
    cr_expect_eq(c.variants[2].cls, LAB_CARD_CLASS_NONE);
    cr_expect_str_eq(c.variants[2].why, "the fix.");
    /* several names, one class: the parts of the text between "; " go to each name in turn */
    cr_expect_str_eq(c.variants[3].name, "bug-c");
    cr_expect_eq(c.variants[3].cls, LAB_CARD_CLASS_CONSTRUCTION);
    cr_expect_str_eq(c.variants[3].why, "construction (the lab's): one");
    cr_expect_str_eq(c.variants[4].name, "bug-d");
    cr_expect_str_eq(c.variants[4].why, "construction two");
    char first[64];
    lab_card_first_sentence(&c, LAB_CARD_SEE, first, sizeof first);
    cr_expect_str_eq(first, "NaN in the gradients.");
    cr_expect(lab_card_core_has(&c, "Root cause"));
    cr_expect(!lab_card_core_has(&c, "Fix"));
    /* "# 9999 A title" (4) + "## Symptom", "one .. five", the picture's line, "## Root cause", "six" (2 + 5 + 2 + 3 + 1) */
    cr_expect_eq(c.core_words, 17, "core words %zu", c.core_words);
    cr_assert_eq(c.n_pictures, 1);
    cr_expect_str_eq(c.pictures[0].file, "figures/tile.svg");
    cr_expect_str_eq(c.pictures[0].caption, "the layout");
    lab_card_free(&c);
}

/* card_md with the first occurrence of `from` replaced by `to`. */
static char *edited(const char *from, const char *to)
{
    const char *at = strstr(card_md, from);
    cr_assert(at, "%s", from);
    size_t n = strlen(card_md) + strlen(to) + 1;
    char *s = malloc(n);
    snprintf(s, n, "%.*s%s%s", (int)(at - card_md), card_md, to, at + strlen(from));
    return s;
}

Test(card, malformed_cards_are_named_by_file_and_line)
{
    char lines40[2048] = "## Variants\n";
    for (int i = 0; i < 30; ++i) strcat(lines40, "- `fix`: x\n");
    struct { const char *from, *to, *want; } cases[] = {
        {"<!-- card -->\n", "", "R.md:22: '<!-- end card -->' before the card's start"},
        {"<!-- end card -->\n", "", "R.md: no card"},
        {"## The trigger\n", "## Trigger\n", "R.md:6: the card's heading '## Trigger' where '## The trigger' belongs"},
        {"## The fix\nReuse the output.\n", "", "R.md:10: the card's heading '## Spot it in your own code' where "
                                                "'## The fix' belongs"},
        {"## Variants\n", lines40, "R.md:3: the card holds 49 lines, 30 at most"},
        {"---\n<!-- end", "<!-- end", "the card ends with a line '---'"},
        {"`fix`: the fix.", "`bug-a`: again.", "R.md:19: the card's Variants name `bug-a` twice"},
        {"## What you see\n", "Text first.\n## What you see\n", "R.md:4: text before the card's first heading"},
        {"<!-- end card -->\n", "<!-- end card -->\n<!-- card -->\n", "R.md:24: a second '<!-- card -->'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
        char *md = edited(cases[i].from, cases[i].to);
        lab_card c;
        lab_status st = lab_card_parse(md, "R.md", &c);
        cr_expect_eq(st, LAB_ERR_FORMAT, "case %zu parsed", i);
        cr_expect(strstr(lab_err_msg(), cases[i].want) != NULL, "case %zu: '%s' not in '%s'", i, cases[i].want,
                  lab_err_msg());
        cr_expect_eq(c.n_variants, 0);
        free(md);
    }
}

/* Every incident's story opens with a card: its headings in order, at most 30 lines, every bug variant named with its
 * class, no variant the incident does not have; the core story within about 1,500 words. */
Test(card, every_story_opens_with_its_card_within_the_limits)
{
    size_t n;
    const lab_incident *const *all = lab_incident_all(&n);
    cr_assert(n >= 8, "%zu incidents", n);
    for (size_t i = 0; i < n; ++i) {
        const lab_incident *inc = all[i];
        char dir[512];
        snprintf(dir, sizeof dir, "incidents/%s", inc->id);
        if (!lab_fs_exists(dir)) continue; /* a test's own incident, registered in this binary only */
        lab_card c;
        if (lab_card_load(".", inc->id, &c) != LAB_OK) {
            cr_expect(0, "%s", lab_err_msg());
            continue;
        }
        cr_expect(c.end_line - c.begin_line - 1 <= LAB_CARD_MAX_LINES, "%s: card of %d lines", inc->id,
                  c.end_line - c.begin_line - 1);
        cr_expect(c.core_words <= LAB_CARD_CORE_WORDS_MAX, "%s: the core story holds %zu words, about 1,500 at most "
                  "(%d): move tolerance accounts, studies and machinery to notes/", inc->id, c.core_words,
                  LAB_CARD_CORE_WORDS_MAX);
        for (int s = 0; s < LAB_CARD_N; ++s)
            cr_expect(c.text[s] && *c.text[s], "%s: the card's '%s' is empty", inc->id, lab_card_heading(s));
        for (int v = 0; v < inc->n_variants; ++v) {
            const lab_variant *var = &inc->variants[v];
            const lab_card_variant *cv = lab_card_variant_of(&c, var->name);
            if (var->role != LAB_ROLE_BUG) continue; /* a fix may be told under "The fix" alone */
            cr_expect(cv != NULL, "%s: the card's Variants do not name bug variant `%s`", inc->id, var->name);
            if (cv)
                cr_expect(cv->cls != LAB_CARD_CLASS_NONE, "%s: bug variant `%s` has no class (**history**, "
                          "**hypothesis** or **construction**)", inc->id, var->name);
        }
        for (size_t k = 0; k < c.n_variants; ++k)
            cr_expect(lab_incident_variant(inc, c.variants[k].name) != NULL, "%s: the card names `%s`, which is no "
                      "variant of it", inc->id, c.variants[k].name);
        lab_card_free(&c);
    }
}
