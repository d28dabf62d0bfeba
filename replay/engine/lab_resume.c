/* lab_resume: what an earlier replay into a folder left, read back for `lab replay --resume` (lab_resume.h). */
#define _GNU_SOURCE
#include "lab_resume.h"

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lab_fs.h"
#include "lab_journal.h"
#include "lab_json.h"
#include "lab_resread.h"
#include "lab_resultset.h"

/* One place a finished case can be read from: dir's results.jsonl, or a staging folder's journal. */
typedef struct {
    char path[PATH_MAX + 32]; /* the file of case lines */
    char stage[PATH_MAX];     /* a journal's staging folder ("" for dir's own set) */
    double mtime;             /* when the file was last written */
    char *replay;             /* what its replay ran (lab_resume_describe's text) */
    int interrupted;          /* dir's set: summary.json says "interrupted" */
    int exit_status;          /* dir's set: its summary's exit status */
    FILE *f;                  /* open while indexed */
} lab_resume_src;

struct lab_resume {
    char dir[PATH_MAX];
    lab_resume_src *src;       /* the sources of the replay resumed, oldest first */
    size_t nsrc;
    int newest_is_set;         /* the newest source is dir's own result set */
    cJSON *replay;             /* the replay resumed */
    uint64_t *at;              /* per planned case: (source + 1) << 48 | the offset of its line; 0: not finished */
    size_t n_at, found;
};

#define LAB_RESUME_OFFSET_BITS 48

cJSON *lab_resume_describe(const lab_replay_opts *opts)
{
    const lab_replay_what *w = &opts->what;
    for (size_t s = 1; s < w->n_seeds; ++s)
        if (w->seeds[s] != w->seeds[0] + s) return NULL;
    cJSON *o = cJSON_CreateObject(), *ids = o ? cJSON_AddArrayToObject(o, "incidents") : NULL;
    if (!ids) {
        cJSON_Delete(o);
        return NULL;
    }
    for (size_t i = 0; i < w->n_incidents; ++i) cJSON_AddItemToArray(ids, cJSON_CreateString(w->incidents[i]->id));
    if (w->variant) cJSON_AddStringToObject(o, "variant", w->variant);
    else cJSON_AddNullToObject(o, "variant");
    char num[24]; /* exact decimal: seeds reach 2^53 */
    snprintf(num, sizeof num, "%llu", (unsigned long long)(w->n_seeds ? w->seeds[0] : 1));
    cJSON_AddRawToObject(o, "first_seed", num);
    cJSON_AddNumberToObject(o, "seeds", (double)w->n_seeds);
    cJSON_AddBoolToObject(o, "seeds_default", w->seeds_default);
    cJSON_AddStringToObject(o, "backend", lab_backend_name(w->backend));
    cJSON_AddNumberToObject(o, "timeout_s", w->timeout_s);
    if (w->sanitize) cJSON_AddStringToObject(o, "sanitize", w->sanitize);
    else cJSON_AddNullToObject(o, "sanitize");
    cJSON_AddBoolToObject(o, "tap", opts->how.tap);
    cJSON_AddBoolToObject(o, "plots", opts->how.plots);
    return o;
}

static double lab_resume_mtime(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (double)st.st_mtim.tv_sec + 1e-9 * (double)st.st_mtim.tv_nsec : -1.0;
}

/* The first line of a journal: its header's "replay" as text (malloc'ed), or NULL when it has none whole. */
static char *lab_resume_journal_replay(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char *line = NULL, *text = NULL;
    size_t cap = 0;
    ssize_t len = getline(&line, &cap, f);
    fclose(f);
    if (len > 0 && line[len - 1] == '\n') {
        cJSON *h = cJSON_ParseWithLength(line, (size_t)len - 1);
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(h, "replay");
        if (cJSON_IsObject(r)) text = cJSON_PrintUnformatted(r);
        cJSON_Delete(h);
    }
    free(line);
    return text;
}

/* Adds a source (its replay text taken over); LAB_ERR_NOMEM. */
static lab_status lab_resume_add(lab_resume_src **src, size_t *n, const lab_resume_src *s)
{
    lab_resume_src *grown = realloc(*src, (*n + 1) * sizeof **src);
    if (!grown) return lab_err_set(LAB_ERR_NOMEM, "--resume: out of memory");
    *src = grown;
    (*src)[(*n)++] = *s;
    return LAB_OK;
}

/* dir's own result set as a source, when it has one: *added 1. An older lab's set (no "replay" in its summary) is a
 * source whose replay is "" (it matches no other). */
static lab_status lab_resume_dir_set(const char *dir, lab_resume_src **src, size_t *n, int *added)
{
    char path[PATH_MAX + 32];
    *added = 0;
    snprintf(path, sizeof path, "%s/summary.json", dir);
    if (!lab_fs_exists(path)) return LAB_OK;
    cJSON *sum;
    lab_status st = lab_json_read_file(path, &sum);
    if (st != LAB_OK) return st;
    lab_resume_src s;
    memset(&s, 0, sizeof s);
    snprintf(s.path, sizeof s.path, "%s/results.jsonl", dir);
    s.mtime = lab_resume_mtime(path);
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(sum, "replay");
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(sum, "exit_status");
    s.replay = cJSON_IsObject(r) ? cJSON_PrintUnformatted(r) : strdup("");
    s.interrupted = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sum, "interrupted"));
    s.exit_status = cJSON_IsNumber(ex) ? ex->valueint : 1;
    cJSON_Delete(sum);
    if (!s.replay) return lab_err_set(LAB_ERR_NOMEM, "--resume: out of memory");
    if ((st = lab_resume_add(src, n, &s)) != LAB_OK) free(s.replay);
    else *added = 1;
    return st;
}

/* The journals beside dir (its staging folders dir.new-XXXXXX holding journal.jsonl) as sources. */
static lab_status lab_resume_journals(const char *dir, lab_resume_src **src, size_t *n)
{
    char copy[PATH_MAX], copy2[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", dir);
    snprintf(copy2, sizeof copy2, "%s", dir);
    const char *parent = dirname(copy), *base = basename(copy2);
    size_t blen = strlen(base);
    DIR *d = opendir(parent);
    if (!d) return LAB_OK;
    lab_status st = LAB_OK;
    struct dirent *e;
    while (st == LAB_OK && (e = readdir(d))) {
        if (strncmp(e->d_name, base, blen) || strncmp(e->d_name + blen, ".new-", 5) || strlen(e->d_name + blen) != 11)
            continue;
        lab_resume_src s;
        memset(&s, 0, sizeof s);
        snprintf(s.stage, sizeof s.stage, "%s/%s", parent, e->d_name);
        snprintf(s.path, sizeof s.path, "%s/" LAB_JOURNAL_NAME, s.stage);
        if (!lab_fs_exists(s.path) || !(s.replay = lab_resume_journal_replay(s.path))) continue;
        s.mtime = lab_resume_mtime(s.path);
        if ((st = lab_resume_add(src, n, &s)) != LAB_OK) free(s.replay);
    }
    closedir(d);
    return st;
}

static int lab_resume_by_time(const void *a, const void *b)
{
    const lab_resume_src *x = a, *y = b;
    return x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
}

void lab_resume_free(lab_resume *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->nsrc; ++i) {
        free(r->src[i].replay);
        if (r->src[i].f) fclose(r->src[i].f);
    }
    free(r->src);
    free(r->at);
    cJSON_Delete(r->replay);
    free(r);
}

lab_status lab_resume_open(const char *dir, FILE *diag, lab_resume **out)
{
    *out = NULL;
    lab_resume *r = calloc(1, sizeof *r);
    if (!r) return lab_err_set(LAB_ERR_NOMEM, "--resume: out of memory");
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/') --len;
    snprintf(r->dir, sizeof r->dir, "%.*s", (int)len, dir);
    lab_resume_src *all = NULL;
    size_t n = 0;
    int has_set = 0;
    lab_status st = lab_resume_dir_set(r->dir, &all, &n, &has_set);
    if (st == LAB_OK) st = lab_resume_journals(r->dir, &all, &n);
    if (st == LAB_OK && n == 0)
        st = lab_err_set(LAB_ERR_ARG,
                         "--resume %s: nothing to resume: no result set of the lab there (%s/summary.json) "
                         "and no journal of a replay into it (%s.new-*/" LAB_JOURNAL_NAME ")",
                         r->dir, r->dir, r->dir);
    if (st == LAB_OK) qsort(all, n, sizeof *all, lab_resume_by_time);
    const lab_resume_src *newest = n ? &all[n - 1] : NULL;
    if (st == LAB_OK && !newest->replay[0])
        st = lab_err_set(LAB_ERR_FORMAT,
                         "--resume %s: %s/summary.json does not say what its replay ran (a set of a lab "
                         "before --resume): replay it afresh",
                         r->dir, r->dir);
    if (st == LAB_OK && !(r->replay = cJSON_Parse(newest->replay)))
        st = lab_err_set(LAB_ERR_NOMEM, "--resume: out of memory");
    for (size_t i = 0; i < n; ++i) {
        if (st == LAB_OK && !strcmp(all[i].replay, newest->replay)) {
            st = lab_resume_add(&r->src, &r->nsrc, &all[i]);
            if (st == LAB_OK) {
                all[i].replay = NULL; /* taken over */
                continue;
            }
        }
        if (st == LAB_OK)
            fprintf(diag, "lab replay --resume: %s left as it is: it holds another replay than the newest one here\n",
                    all[i].stage[0] ? all[i].stage : all[i].path);
        free(all[i].replay);
    }
    free(all);
    if (st != LAB_OK) {
        lab_resume_free(r);
        return st;
    }
    r->newest_is_set = has_set && !r->src[r->nsrc - 1].stage[0];
    *out = r;
    return LAB_OK;
}

const cJSON *lab_resume_replay(const lab_resume *r) { return r->replay; }

int lab_resume_finished_set(const lab_resume *r, int *exit_status)
{
    const lab_resume_src *s = &r->src[r->nsrc - 1];
    if (!r->newest_is_set || s->interrupted) return 0;
    *exit_status = s->exit_status;
    return 1;
}

size_t lab_resume_count(const lab_resume *r) { return r ? r->found : 0; }

/* Indexes the case lines of source k: journals skip their header, and a last line without its newline. */
static lab_status lab_resume_index_src(lab_resume *r, const lab_replay_opts *opts, size_t k, lab_resread_rec *rec)
{
    lab_resume_src *s = &r->src[k];
    if (!(s->f = fopen(s->path, "r"))) {
        if (errno == ENOENT && !s->stage[0]) return LAB_OK; /* a set without results.jsonl: no case finished */
        return lab_err_set(LAB_ERR_IO, "%s: cannot read: %s", s->path, strerror(errno));
    }
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    uint64_t off = 0;
    ssize_t len;
    lab_status st = LAB_OK;
    while (st == LAB_OK && (len = getline(&line, &cap, s->f)) > 0) {
        uint64_t at = off;
        off += (uint64_t)len;
        if (++lineno == 1 && s->stage[0]) continue; /* the journal's header */
        if (line[len - 1] != '\n') break;           /* cut short by a kill */
        if (len == 1) continue;
        size_t idx;
        if (lab_resread_line(line, (size_t)len - 1, rec) != LAB_OK)
            st = lab_err_set(LAB_ERR_FORMAT, "%s:%zu: %s", s->path, lineno, lab_err_msg());
        else if (!rec->inc || !rec->var || !lab_replay_case_index(opts, rec->inc, rec->var, rec->seed, &idx))
            st = lab_err_set(LAB_ERR_FORMAT, "%s:%zu: %s/%s seed %llu is not a case of the replay resumed", s->path,
                             lineno, rec->incident, rec->variant, (unsigned long long)rec->seed);
        else if (at >= (uint64_t)1 << LAB_RESUME_OFFSET_BITS)
            st = lab_err_set(LAB_ERR_FORMAT, "%s: larger than a journal can be", s->path);
        else {
            r->found += r->at[idx] == 0;
            r->at[idx] = (uint64_t)(k + 1) << LAB_RESUME_OFFSET_BITS | at;
        }
    }
    if (st == LAB_OK && ferror(s->f)) st = lab_err_set(LAB_ERR_IO, "%s: cannot read: %s", s->path, strerror(errno));
    free(line);
    return st;
}

lab_status lab_resume_index(lab_resume *r, const lab_replay_opts *opts)
{
    r->n_at = lab_replay_count(opts);
    free(r->at);
    r->found = 0;
    r->at = calloc(r->n_at ? r->n_at : 1, sizeof *r->at);
    lab_resread_rec *rec = malloc(sizeof *rec); /* a few KB: not on the stack */
    lab_status st = r->at && rec ? LAB_OK : lab_err_set(LAB_ERR_NOMEM, "--resume: out of memory");
    for (size_t k = 0; k < r->nsrc && st == LAB_OK; ++k) st = lab_resume_index_src(r, opts, k, rec);
    free(rec);
    return st;
}

int lab_resume_fill(const lab_resume *r, const lab_replay_opts *opts, lab_case_record *rec)
{
    size_t idx;
    if (!r || !r->at || !lab_replay_case_index(opts, rec->incident, rec->variant, rec->seed, &idx) || idx >= r->n_at ||
        !r->at[idx])
        return 0;
    const lab_resume_src *s = &r->src[(r->at[idx] >> LAB_RESUME_OFFSET_BITS) - 1];
    off_t at = (off_t)(r->at[idx] & (((uint64_t)1 << LAB_RESUME_OFFSET_BITS) - 1));
    char *line = NULL;
    size_t cap = 0;
    ssize_t len = fseeko(s->f, at, SEEK_SET) == 0 ? getline(&line, &cap, s->f) : -1;
    lab_resread_rec *rr = len > 0 ? malloc(sizeof *rr) : NULL;
    int got = rr && lab_resread_line(line, (size_t)len - 1, rr) == LAB_OK && lab_resread_to_record(rr, rec) == LAB_OK;
    if (!got) lab_err_set(len > 0 && rr ? LAB_ERR_FORMAT : LAB_ERR_IO, "%s: cannot read a finished case back", s->path);
    free(rr);
    free(line);
    return got ? 1 : -1;
}

void lab_resume_drop(lab_resume *r)
{
    for (size_t i = 0; r && i < r->nsrc; ++i)
        if (r->src[i].stage[0]) lab_resultset_rmrf(r->src[i].stage);
}
