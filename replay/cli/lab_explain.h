/* lab_explain: `lab explain ID`: the incident's card as its story opens, then its bug and fix variants live on a few
 * seeds, each case isolated, with the bound each case crossed, and what to try next. Everything it says of the
 * incident comes from the card (lab_card) or from the cases it runs. */
#ifndef LAB_EXPLAIN_H
#define LAB_EXPLAIN_H

#include <stdio.h>

#include "lab_card.h"
#include "lab_incident.h"
#include "lab_isolate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Prints the card c of incident inc to f, wrapped at LAB_TEXT_WIDTH: its title, where it comes from (readme, the path
 * as the user reads it; NULL: not said), each section under its heading, and the Variants section as one row per
 * variant of inc (name, role, the card's class and text; a variant the card does not name says so). Returns 0, or -1
 * on a write error. */
int lab_explain_card_print(FILE *f, const lab_incident *inc, const lab_card *c, const char *readme);

/* What one explain run measured: out[seed_index * inc->n_variants + variant_index] for seeds 1..n_seeds. */
typedef struct {
    const lab_incident *inc;
    const lab_card *card;
    lab_backend backend;
    size_t n_seeds;
    const lab_job_outcome *out;
    const char *lab_bin;      /* the command as the user typed it ("build/lab") */
    const char *root;         /* the repository root ("." prints paths relative to it) */
} lab_explain_live;

/* Prints the live part of x to f, wrapped at LAB_TEXT_WIDTH: per variant its role, the card's class and how many
 * seeds met the role; per seed the outcome and the bound of the criterion the case crossed (a pass: the incident's
 * separating metric, plots.specs[0]); the first seed's detail in full. When every bug case that failed crossed only
 * `model` bounds (lab_metric_spec.model), it says that the mechanism cannot fire on this backend and shows the model's
 * count as the evidence instead. Ends with the verdict and what to try next (`lab case`, `lab replay`, the story's
 * sections). Returns 1 when every case met its role, 0 when one did not, -1 on a write error. */
int lab_explain_live_print(FILE *f, const lab_explain_live *x);

/* `lab explain ID [--seeds N] [--backend cpu|cuda]` with argv the words after "explain"; root the repository root,
 * lab_bin argv[0]. Returns the exit status: 0 every case met its role, 1 one did not, 2 bad usage (the flag named),
 * 3 the lab could not do the job (the story's card unreadable or malformed, naming the file and line; fork failed). */
int lab_explain_cmd(int argc, char **argv, const char *lab_bin, const char *root);

#ifdef __cplusplus
}
#endif

#endif
