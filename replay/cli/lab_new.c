/* lab_new: `lab new NNNN-slug`: a new incident directory made from incidents/_template, placeholders replaced. */
#include "lab_new.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lab_fs.h"

/* s with every occurrence of `from` replaced by `to` (malloc'ed), or NULL when out of memory. */
static char *lab_new_replace(const char *s, const char *from, const char *to)
{
    size_t nf = strlen(from), nt = strlen(to), count = 0;
    for (const char *p = strstr(s, from); p; p = strstr(p + nf, from)) count++;
    char *out = malloc(strlen(s) + count * (nt > nf ? nt - nf : 0) + 1), *o = out;
    if (!out) return NULL;
    for (const char *p = s, *q; ; p = q + nf) {
        q = strstr(p, from);
        size_t n = q ? (size_t)(q - p) : strlen(p);
        memcpy(o, p, n);
        o += n;
        if (!q) break;
        memcpy(o, to, nt);
        o += nt;
    }
    *o = '\0';
    return out;
}

static int lab_new_valid(const char *id)
{
    size_t n = strlen(id);
    if (n < 6 || n > 60 || id[4] != '-') return 0;
    for (size_t i = 0; i < 4; ++i)
        if (id[i] < '0' || id[i] > '9') return 0;
    for (size_t i = 5; i < n; ++i)
        if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= '0' && id[i] <= '9') || id[i] == '-')) return 0;
    return id[5] != '-' && id[n - 1] != '-';
}

lab_status lab_new_incident(const char *root, const char *id)
{
    if (!lab_new_valid(id))
        return lab_err_set(LAB_ERR_ARG, "new: '%s' is not an incident id: four digits, '-', then a slug of a-z, "
                           "0-9 and '-' (e.g. 0008-fp8-amax-overflow)", id);
    char num[5], prefix[64], upper[80], dir[4096], tdir[4096];
    memcpy(num, id, 4);
    num[4] = '\0';
    snprintf(prefix, sizeof prefix, "%s", id + 5);
    for (char *p = prefix; *p; ++p)
        if (*p == '-') *p = '_';
    size_t k0 = 0;
    for (; prefix[k0]; ++k0) upper[k0] = (char)(prefix[k0] >= 'a' && prefix[k0] <= 'z' ? prefix[k0] - 32 : prefix[k0]);
    upper[k0++] = '_';
    upper[k0] = '\0';
    snprintf(tdir, sizeof tdir, "%s/incidents/_template", root);
    snprintf(dir, sizeof dir, "%s/incidents/%s", root, id);
    if (access(dir, F_OK) == 0) return lab_err_set(LAB_ERR_ARG, "new: %s exists: nothing overwritten", dir);
    if (mkdir(dir, 0777) != 0) return lab_err_set(LAB_ERR_IO, "new: mkdir %s: %s", dir, strerror(errno));
    char cfile[128], tfile[128];
    snprintf(cfile, sizeof cfile, "%s.c", prefix);
    snprintf(tfile, sizeof tfile, "test_%s.c", prefix);
    const char *files[][2] = {{"README.md", "README.md"}, {"incident.mk.in", "incident.mk"},
                              {"incident.c", cfile}, {"test_incident.c", tfile}};
    lab_status st = LAB_OK;
    size_t made = 0;
    for (size_t k = 0; k < sizeof files / sizeof files[0] && st == LAB_OK; ++k) {
        char src[4400], dst[4400];
        snprintf(src, sizeof src, "%s/%s", tdir, files[k][0]);
        snprintf(dst, sizeof dst, "%s/%s", dir, files[k][1]);
        char *text;
        size_t len;
        if ((st = lab_fs_read_all(src, &text, &len)) != LAB_OK) break;
        char *a = lab_new_replace(text, "NNNN-slug", id), *a2 = a ? lab_new_replace(a, "NNNN_", upper) : NULL,
             *b = a2 ? lab_new_replace(a2, "NNNN", num) : NULL, *c = b ? lab_new_replace(b, "nnnn", prefix) : NULL;
        free(text);
        free(a2);
        if (!c) st = lab_err_set(LAB_ERR_NOMEM, "new: out of memory");
        else if ((st = lab_fs_write_atomic(dst, c, strlen(c))) == LAB_OK) made++;
        free(a);
        free(b);
        free(c);
    }
    if (st != LAB_OK) { /* leave nothing half made */
        for (size_t k = 0; k < made; ++k) {
            char dst[4400];
            snprintf(dst, sizeof dst, "%s/%s", dir, files[k][1]);
            unlink(dst);
        }
        rmdir(dir);
    }
    return st;
}
