/* dsh_trace: the collective trace of incident 0006: ring-buffer writer (shared file mapping), reader and analyzer
 * (the export is in dsh_trace_export.c: the MPI job links this file without cJSON). */
#include "dsh_trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

const char *dsh_op_name(int op)
{
    static const char *names[DSH_OP_COUNT] = {"none", "bcast", "gather", "scatter", "finalize"};
    return op >= 0 && op < DSH_OP_COUNT ? names[op] : "?";
}

const char *dsh_match_name(int m)
{
    static const char *names[] = {"fully matched", "collective type mismatch", "size mismatch",
                                  "a rank never arrived"};
    return m >= 0 && m <= DSH_MATCH_MISSING ? names[m] : "?";
}

/* ---------------------------------------------------------------------------------------------- */
/* Writer                                                                                          */

void *dsh_map_shared(const char *path, size_t size, int create, const char *what)
{
    int fd = open(path, create ? O_RDWR | O_CREAT | O_TRUNC : O_RDWR, 0644);
    if (fd < 0) {
        lab_err_set(LAB_ERR_IO, "%s: %s: %s", what, path, strerror(errno));
        return NULL;
    }
    if (create && ftruncate(fd, (off_t)size) != 0) {
        lab_err_set(LAB_ERR_IO, "%s: %s: ftruncate: %s", what, path, strerror(errno));
        close(fd);
        return NULL;
    }
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        lab_err_set(LAB_ERR_IO, "%s: %s: mmap: %s", what, path, strerror(errno));
        return NULL;
    }
    return p;
}

dsh_trace_file *dsh_trace_open(const char *dir, int rank, int world, int role, double t0)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/rank%d.trace", dir, rank);
    void *p = dsh_map_shared(path, sizeof(dsh_trace_file), 1, "trace");
    if (!p) return NULL;
    dsh_trace_file *tf = p;
    memset(tf, 0, sizeof *tf);
    tf->head.rank = rank;
    tf->head.world = world;
    tf->head.role = role;
    tf->head.ring = DSH_TRACE_RING;
    tf->head.t0 = t0;
    tf->head.micro = -1;
    __atomic_store_n(&tf->head.magic, DSH_TRACE_MAGIC, __ATOMIC_RELEASE);
    return tf;
}

dsh_record *dsh_trace_enter(dsh_trace_file *tf, int op, int root, int64_t count, int rows, int cols, int step,
                            int micro, double t)
{
    uint64_t seq = tf->head.n;
    dsh_record *r = &tf->rec[seq % DSH_TRACE_RING];
    dsh_record v = {seq, op, root, count, rows, cols, step, micro, t, 0.0};
    *r = v;
    tf->head.step = step;
    tf->head.micro = micro;
    __atomic_store_n(&tf->head.n, seq + 1, __ATOMIC_RELEASE);
    return r;
}

void dsh_trace_close(dsh_trace_file *tf)
{
    if (!tf) return;
    munmap(tf, sizeof *tf);
}

/* ---------------------------------------------------------------------------------------------- */
/* Reader                                                                                          */

lab_status dsh_trace_read(const char *dir, int world, dsh_rank_trace *out)
{
    if (world < 1 || world > DSH_TRACE_MAXRANK)
        return lab_err_set(LAB_ERR_ARG, "trace: world size %d outside [1, %d]", world, DSH_TRACE_MAXRANK);
    for (int r = 0; r < world; ++r) {
        dsh_rank_trace *t = &out[r];
        memset(t, 0, sizeof *t);
        char path[1024];
        snprintf(path, sizeof path, "%s/rank%d.trace", dir, r);
        FILE *f = fopen(path, "rb");
        if (!f) {
            if (errno == ENOENT) continue;
            return lab_err_set(LAB_ERR_IO, "trace: %s: %s", path, strerror(errno));
        }
        static dsh_trace_file buf; /* one file at a time; 14 KiB kept off the stack */
        size_t got = fread(&buf, 1, sizeof buf, f);
        int extra = fgetc(f) != EOF;
        fclose(f);
        if (got != sizeof buf || extra)
            return lab_err_set(LAB_ERR_FORMAT, "trace: %s: size is not %zu bytes", path, sizeof buf);
        if (buf.head.magic == 0) continue; /* created, never initialised: as if absent */
        if (buf.head.magic != DSH_TRACE_MAGIC)
            return lab_err_set(LAB_ERR_FORMAT, "trace: %s: bad magic", path);
        if (buf.head.rank != r || buf.head.ring != DSH_TRACE_RING)
            return lab_err_set(LAB_ERR_FORMAT, "trace: %s: claims rank %d ring %d, expected rank %d ring %d", path,
                               buf.head.rank, buf.head.ring, r, DSH_TRACE_RING);
        t->present = 1;
        t->head = buf.head;
        uint64_t n = buf.head.n;
        uint64_t first = n > DSH_TRACE_RING ? n - DSH_TRACE_RING : 0;
        t->n = (size_t)(n - first);
        for (uint64_t s = first; s < n; ++s) {
            t->rec[s - first] = buf.rec[s % DSH_TRACE_RING];
            if (t->rec[s - first].seq != s)
                return lab_err_set(LAB_ERR_FORMAT, "trace: %s: record %llu holds seq %llu", path,
                                   (unsigned long long)s, (unsigned long long)t->rec[s - first].seq);
        }
    }
    return LAB_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* Analyzer                                                                                        */

void dsh_trace_ranks_str(const int *ranks, int n, char *buf, size_t cap)
{
    size_t len = (size_t)snprintf(buf, cap, "%s", n == 1 ? "rank " : "ranks ");
    for (int i = 0; i < n && len < cap;) {
        int j = i;
        while (j + 1 < n && ranks[j + 1] == ranks[j] + 1) ++j;
        if (j == i) len += (size_t)snprintf(buf + len, cap - len, "%s%d", i ? "," : "", ranks[i]);
        else len += (size_t)snprintf(buf + len, cap - len, "%s%d-%d", i ? "," : "", ranks[i], ranks[j]);
        i = j + 1;
    }
}

/* The record of rank t at seq s, or NULL when its ring does not hold it. */
static const dsh_record *dsh_at(const dsh_rank_trace *t, uint64_t s)
{
    if (!t->present || t->n == 0) return NULL;
    uint64_t first = t->rec[0].seq;
    if (s < first || s >= first + t->n) return NULL;
    return &t->rec[s - first];
}

static int dsh_same_call(const dsh_record *a, const dsh_record *b)
{
    return a->op == b->op && a->root == b->root;
}

/* "in bcast at step 2 micro 1" for a record. */
static void dsh_where(const dsh_record *r, char *buf, size_t cap)
{
    if (r->micro >= 0)
        snprintf(buf, cap, "in %s at step %d micro %d", dsh_op_name(r->op), r->step, r->micro);
    else
        snprintf(buf, cap, "in %s at step %d", dsh_op_name(r->op), r->step);
}

lab_status dsh_trace_analyze(const dsh_rank_trace *ranks, int world, dsh_analysis *a)
{
    memset(a, 0, sizeof *a);
    a->world = world;
    a->first_bad_seq = -1;
    a->culprit = -1;
    a->first_step_seq = -1;
    a->empty_shape_seq = -1;
    a->empty_shape_rank = -1;
    if (world < 2 || world > DSH_TRACE_MAXRANK)
        return lab_err_set(LAB_ERR_ARG, "trace: world size %d outside [2, %d]", world, DSH_TRACE_MAXRANK);
    int distiller = -1;
    uint64_t lo = 0, hi = 0;
    for (int r = 0; r < world; ++r) {
        const dsh_rank_trace *t = &ranks[r];
        if (!t->present) continue;
        if (t->head.role == DSH_ROLE_DISTILLER) distiller = r;
        if (t->n == 0) continue;
        if (t->rec[0].seq > lo) lo = t->rec[0].seq;
        if (t->rec[t->n - 1].seq + 1 > hi) hi = t->rec[t->n - 1].seq + 1;
        for (size_t i = 0; i < t->n; ++i) {
            const dsh_record *x = &t->rec[i];
            if ((x->op == DSH_OP_GATHER || x->op == DSH_OP_SCATTER) && (x->rows == 0 || x->cols == 0) &&
                (a->empty_shape_seq < 0 || (int64_t)x->seq < a->empty_shape_seq)) {
                a->empty_shape_seq = (int64_t)x->seq;
                a->empty_shape_rank = r;
            }
        }
    }
    a->seq_lo = lo;
    a->seq_hi = hi > lo ? hi : lo;

    char lines[4][200];
    for (uint64_t s = a->seq_lo; s < a->seq_hi; ++s) {
        const dsh_record *at[DSH_TRACE_MAXRANK];
        int n_have = 0;
        for (int r = 0; r < world; ++r) {
            at[r] = dsh_at(&ranks[r], s);
            n_have += at[r] != NULL;
        }
        /* The majority call among the ranks that arrived (ties: the lowest rank's). */
        int best = -1, best_votes = 0;
        for (int r = 0; r < world; ++r) {
            if (!at[r]) continue;
            int votes = 0;
            for (int q = 0; q < world; ++q) votes += at[q] && dsh_same_call(at[q], at[r]);
            if (votes > best_votes) best = r, best_votes = votes;
        }
        int state = DSH_MATCH_FULL, culprit = -1;
        if (n_have < world) {
            state = DSH_MATCH_MISSING;
            for (int r = 0; r < world && culprit < 0; ++r)
                if (!at[r]) culprit = r;
        } else if (best_votes < world) {
            state = DSH_MATCH_TYPE;
            for (int r = 0; r < world && culprit < 0; ++r)
                if (!dsh_same_call(at[r], at[best])) culprit = r;
        } else {
            /* Same call everywhere: compare the sizes (the majority size again). */
            int bs = -1, bv = 0;
            for (int r = 0; r < world; ++r) {
                int v = 0;
                for (int q = 0; q < world; ++q) v += at[q]->count == at[r]->count;
                if (v > bv) bs = r, bv = v;
            }
            if (bv < world) {
                state = DSH_MATCH_SIZE;
                for (int r = 0; r < world && culprit < 0; ++r)
                    if (at[r]->count != at[bs]->count) culprit = r;
            }
        }
        if (state == DSH_MATCH_FULL) {
            a->n_matched++;
            if (distiller >= 0 && a->first_step_seq < 0) {
                for (int r = 0; r < world; ++r) {
                    if (r == distiller || at[r]->step == at[distiller]->step) continue;
                    a->first_step_seq = (int64_t)s;
                    a->step_trainer = at[r]->step;
                    a->micro_trainer = at[r]->micro;
                    a->step_distiller = at[distiller]->step;
                    break;
                }
            }
            continue;
        }
        a->state = state;
        a->first_bad_seq = (int64_t)s;
        a->culprit = culprit;
        for (int r = 0; r < world; ++r)
            if (at[r] && at[r]->t_enter > a->t_first_bad) a->t_first_bad = at[r]->t_enter;
        /* Describe: groups of ranks in the same place, then the ranks that never arrived. */
        int done[DSH_TRACE_MAXRANK] = {0};
        size_t len = (size_t)snprintf(a->verdict, sizeof a->verdict, "seq %llu (%s):", (unsigned long long)s,
                                      dsh_match_name(state));
        int n_groups = 0;
        for (int r = 0; r < world; ++r) {
            if (done[r] || !at[r]) continue;
            int members[DSH_TRACE_MAXRANK], nm = 0;
            for (int q = r; q < world; ++q) {
                if (done[q] || !at[q]) continue;
                if (!dsh_same_call(at[q], at[r]) || at[q]->count != at[r]->count || at[q]->step != at[r]->step ||
                    at[q]->micro != at[r]->micro)
                    continue;
                members[nm++] = q;
                done[q] = 1;
            }
            char who[96], where[96];
            dsh_trace_ranks_str(members, nm, who, sizeof who);
            dsh_where(at[r], where, sizeof where);
            snprintf(lines[0], sizeof lines[0], "%s %s%s", who,
                     nm == 1 && members[0] == distiller ? "(distiller) " : "", where);
            if (state == DSH_MATCH_SIZE)
                snprintf(lines[0] + strlen(lines[0]), sizeof lines[0] - strlen(lines[0]), " with %lld elements",
                         (long long)at[r]->count);
            len += (size_t)snprintf(a->verdict + len, len < sizeof a->verdict ? sizeof a->verdict - len : 0, "%s %s",
                                    n_groups ? "," : "", lines[0]);
            n_groups++;
        }
        for (int r = 0; r < world; ++r) {
            if (at[r]) continue;
            const dsh_rank_trace *t = &ranks[r];
            if (!t->present || t->n == 0)
                snprintf(lines[1], sizeof lines[1], "rank %d%s never arrived (no trace)", r,
                         r == distiller ? " (distiller)" : "");
            else {
                char where[96];
                dsh_where(&t->rec[t->n - 1], where, sizeof where);
                snprintf(lines[1], sizeof lines[1], "rank %d%s never arrived (last seen at seq %llu %s)", r,
                         r == distiller ? " (distiller)" : "", (unsigned long long)t->rec[t->n - 1].seq, where);
            }
            len += (size_t)snprintf(a->verdict + len, len < sizeof a->verdict ? sizeof a->verdict - len : 0, "%s %s",
                                    n_groups ? "," : "", lines[1]);
            n_groups++;
        }
        break;
    }
    if (a->first_bad_seq < 0)
        snprintf(a->verdict, sizeof a->verdict, "all %llu collectives fully matched (seq %llu-%llu)",
                 (unsigned long long)a->n_matched, (unsigned long long)a->seq_lo,
                 (unsigned long long)(a->seq_hi ? a->seq_hi - 1 : 0));
    size_t len = strlen(a->verdict);
    if (a->first_step_seq >= 0) {
        snprintf(a->counters, sizeof a->counters,
                 "the distiller's step counter %s from seq %lld (step %d; trainers at step %d micro %d)",
                 a->step_distiller > a->step_trainer ? "runs ahead" : "lags", (long long)a->first_step_seq,
                 a->step_distiller, a->step_trainer, a->micro_trainer);
        snprintf(a->verdict + len, sizeof a->verdict - len, "; %s", a->counters);
    }
    len = strlen(a->verdict);
    if (a->empty_shape_seq >= 0)
        snprintf(a->verdict + len, sizeof a->verdict - len, "; rank %d holds an empty (0, 0) shape at seq %lld",
                 a->empty_shape_rank, (long long)a->empty_shape_seq);
    return LAB_OK;
}

