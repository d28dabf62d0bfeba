/* lab_new: `lab new NNNN-slug`: a new incident directory made from incidents/_template, placeholders replaced. */
#ifndef LAB_NEW_H
#define LAB_NEW_H

#include "lab_err.h"

/* Creates <root>/incidents/<id>/ from <root>/incidents/_template: README.md, incident.mk (from
 * incident.mk.in), <prefix>.c and test_<prefix>.c, where "NNNN-slug" becomes id, "NNNN_" the upper-case C
 * prefix and '_', "NNNN" the number and "nnnn" the C prefix (the slug with '-' as '_'). id must be four digits, '-', then lower-case letters,
 * digits and '-' (at most 60 characters). LAB_ERR_ARG naming the id when it is malformed or the directory
 * exists (nothing is overwritten), LAB_ERR_IO naming the file otherwise; on an error
 * after the directory was made, what was written is removed. */
lab_status lab_new_incident(const char *root, const char *id);

#endif
