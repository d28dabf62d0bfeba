/* lab_json: the lab's one way of turning JSON trees into bytes and bytes into a file: a growable buffer that trees
 * are serialised into, the atomic write of that buffer, and the reading of a whole JSON file back into a tree. */
#ifndef LAB_JSON_H
#define LAB_JSON_H

#include <cJSON.h>
#include <stddef.h>
#include <stdio.h>

#include "lab_err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The contract.
 *  - Serialising is cJSON's, in one of two forms: LAB_JSON_PRETTY (cJSON_Print: tab-indented, one member a line:
 *    summary.json, report.json, bench.json, MANIFEST.json) or LAB_JSON_COMPACT (cJSON_PrintUnformatted: one line:
 *    a results.jsonl record). Strings are escaped by cJSON (quote, backslash and control characters); a number is
 *    written with 15 significant digits when that reads back within one part in 2^52, else with 17; a non-finite
 *    number is written as null (a writer that must tell NaN from infinity says so in a field of its own).
 *  - Every serialised tree ends with one newline: a JSON file is one pretty tree and its newline, a JSON Lines file
 *    one compact tree a line.
 *  - A file is written atomically (lab_fs_write_atomic: "path.tmp.PID", fsync, rename over path): a reader sees the
 *    old file or the whole new one.
 *  - Out of memory while appending marks the buffer; every later append does nothing, and the write refuses it
 *    (LAB_ERR_NOMEM naming the path), so a caller may append many trees and check once. */

#define LAB_JSON_COMPACT 0
#define LAB_JSON_PRETTY 1

typedef struct {
    char *data;  /* the bytes so far, NUL-terminated (not counted in len); NULL while empty */
    size_t len, cap;
    int oom;     /* an append ran out of memory */
} lab_json_buf;

/* Appends item serialised in form (LAB_JSON_COMPACT or LAB_JSON_PRETTY) and a newline. 1, or 0 out of memory
 * (b->oom set). */
int lab_json_buf_add(lab_json_buf *b, const cJSON *item, int form);

/* Releases the buffer and empties it (an empty one is fine). */
void lab_json_buf_free(lab_json_buf *b);

/* Writes the buffer's bytes to path atomically. LAB_ERR_NOMEM naming path when an append ran out of memory (nothing
 * is written); else lab_fs_write_atomic's errors (LAB_ERR_IO naming the file). */
lab_status lab_json_write_atomic(const char *path, const lab_json_buf *b);

/* One tree as one file: item serialised in form, a newline, written atomically. Errors as lab_json_write_atomic. */
lab_status lab_json_write_file(const char *path, const cJSON *item, int form);

/* Writes item serialised in form and a newline to the stream f (a record line, standard output). 1, or 0 on a
 * write error or out of memory. */
int lab_json_fput(FILE *f, const cJSON *item, int form);

/* Reads and parses a whole JSON file (report.json, summary.json, bench.json) into *out (cJSON_Delete; NULL on
 * error). LAB_ERR_IO names the path when it cannot be read, LAB_ERR_FORMAT names it with the position of a syntax
 * error ("PATH: not valid JSON (syntax error near byte N)"). */
lab_status lab_json_read_file(const char *path, cJSON **out);

#ifdef __cplusplus
}
#endif

#endif
