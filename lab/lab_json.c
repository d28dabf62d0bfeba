/* lab_json: the lab's one way of turning JSON trees into bytes and bytes into a file: a growable buffer that trees
 * are serialised into, the atomic write of that buffer, and the reading of a whole JSON file back into a tree. */
#include "lab_json.h"

#include <stdlib.h>
#include <string.h>

#include "lab_fs.h"

/* item serialised in form (cJSON's allocation: cJSON_free), or NULL out of memory. */
static char *lab_json_text(const cJSON *item, int form)
{
    return form == LAB_JSON_PRETTY ? cJSON_Print(item) : cJSON_PrintUnformatted(item);
}

int lab_json_buf_add(lab_json_buf *b, const cJSON *item, int form)
{
    if (b->oom) return 0;
    char *s = lab_json_text(item, form);
    size_t n = s ? strlen(s) : 0;
    if (s && b->len + n + 2 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (b->len + n + 2 > cap) cap *= 2;
        char *nb = realloc(b->data, cap);
        if (nb) b->data = nb, b->cap = cap;
        else cJSON_free(s), s = NULL;
    }
    if (!s) {
        b->oom = 1;
        return 0;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len++] = '\n';
    b->data[b->len] = '\0';
    cJSON_free(s);
    return 1;
}

void lab_json_buf_free(lab_json_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

lab_status lab_json_write_atomic(const char *path, const lab_json_buf *b)
{
    if (b->oom) return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory serialising JSON", path);
    return lab_fs_write_atomic(path, b->data ? b->data : "", b->len);
}

lab_status lab_json_write_file(const char *path, const cJSON *item, int form)
{
    lab_json_buf b = {0};
    lab_json_buf_add(&b, item, form);
    lab_status st = lab_json_write_atomic(path, &b);
    lab_json_buf_free(&b);
    return st;
}

int lab_json_fput(FILE *f, const cJSON *item, int form)
{
    char *s = lab_json_text(item, form);
    if (!s) return 0;
    int good = fputs(s, f) >= 0 && fputc('\n', f) != EOF;
    cJSON_free(s);
    return good;
}

lab_status lab_json_read_file(const char *path, cJSON **out)
{
    char *text;
    size_t len;
    *out = NULL;
    lab_status st = lab_fs_read_all(path, &text, &len);
    if (st != LAB_OK) return st;
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!j) {
        size_t off = end && end >= text ? (size_t)(end - text) : 0;
        free(text);
        return lab_err_set(LAB_ERR_FORMAT, "%s: not valid JSON (syntax error near byte %zu)", path, off);
    }
    free(text);
    *out = j;
    return LAB_OK;
}
