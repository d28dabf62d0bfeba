/* dsh_trace_export: incident 0006's collective traces as Chrome trace JSON (Perfetto, chrome://tracing) and the
 * Gantt rows of the timeline figure (declared in dsh_trace.h; kept apart from the writer the MPI job links). */
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsh_trace.h"
#include "lab_fs.h"
#include "lab_gnuplot.h"
#include "lab_incident.h"
#include "lab_isolate.h"

/* ---------------------------------------------------------------------------------------------- */
/* Export: Chrome trace JSON and the Gantt rows                                                     */

void dsh_trace_export_stem(const char *root, const char *variant, const char *backend, uint64_t seed, char *buf,
                           size_t cap)
{
    snprintf(buf, cap, "%s/build/traces/" LAB_INCIDENT_ID "/%s-%s-seed%llu", root, variant, backend,
             (unsigned long long)seed);
}

static cJSON *dsh_ev(cJSON *arr, const char *name, const char *ph, double ts_s, int pid, int tid)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", name);
    cJSON_AddStringToObject(e, "ph", ph);
    cJSON_AddNumberToObject(e, "ts", ts_s * 1e6);
    cJSON_AddNumberToObject(e, "pid", pid);
    cJSON_AddNumberToObject(e, "tid", tid);
    cJSON_AddItemToArray(arr, e);
    return e;
}

lab_status dsh_trace_export(const char *stem, const dsh_rank_trace *ranks, int world, const dsh_analysis *a)
{
    char path[1200], dir[1200];
    snprintf(dir, sizeof dir, "%s", stem);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        lab_status st = lab_fs_mkdirs(dir);
        if (st != LAB_OK) return st;
    }
    /* The end of the picture: the latest time any rank recorded. */
    double t_end = 0;
    for (int r = 0; r < world; ++r)
        for (size_t k = 0; ranks[r].present && k < ranks[r].n; ++k)
            t_end = fmax(t_end, fmax(ranks[r].rec[k].t_enter, ranks[r].rec[k].t_done));
    cJSON *root = cJSON_CreateObject();
    cJSON *ev = cJSON_AddArrayToObject(root, "traceEvents");
    cJSON_AddStringToObject(root, "displayTimeUnit", "ms");
    snprintf(path, sizeof path, "%s.dat", stem);
    FILE *dat = fopen(path, "w");
    if (!root || !ev || !dat) {
        if (dat) fclose(dat);
        cJSON_Delete(root);
        return lab_err_set(LAB_ERR_IO, "%s: cannot write the 0006 timeline", path);
    }
    fprintf(dat, "# rank t_enter_s t_leave_s op seq completed (op: 1 bcast 2 gather 3 scatter 4 finalize)\n");
    for (int r = 0; r < world; ++r) {
        const dsh_rank_trace *t = &ranks[r];
        char name[96];
        snprintf(name, sizeof name, "rank %d (%s)%s", r, t->present && t->head.role == DSH_ROLE_DISTILLER ? "distiller" : "trainer",
                 t->present ? "" : ": no trace");
        cJSON *m = dsh_ev(ev, "process_name", "M", 0, r, 0);
        cJSON_AddItemToObject(m, "args", cJSON_CreateObject());
        cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(m, "args"), "name", name);
        int ms_step = -2, ms_micro = -2;
        double ms_t0 = 0, ex_t0 = -1;
        for (size_t k = 0; t->present && k < t->n; ++k) {
            const dsh_record *x = &t->rec[k];
            int done = x->t_done > 0;
            double leave = done ? x->t_done : t_end;
            char nm[64];
            snprintf(nm, sizeof nm, "%s #%llu%s", dsh_op_name(x->op), (unsigned long long)x->seq, done ? "" : " (never left)");
            cJSON *e = dsh_ev(ev, nm, "X", x->t_enter, r, 1);
            cJSON_AddNumberToObject(e, "dur", fmax(0.0, leave - x->t_enter) * 1e6);
            cJSON *args = cJSON_AddObjectToObject(e, "args");
            cJSON_AddNumberToObject(args, "seq", (double)x->seq);
            cJSON_AddStringToObject(args, "op", dsh_op_name(x->op));
            cJSON_AddNumberToObject(args, "root", x->root);
            cJSON_AddNumberToObject(args, "count", (double)x->count);
            cJSON_AddNumberToObject(args, "step", x->step);
            cJSON_AddNumberToObject(args, "micro", x->micro);
            cJSON_AddBoolToObject(args, "completed", done);
            cJSON *c = dsh_ev(ev, "step counter", "C", x->t_enter, r, 0);
            cJSON_AddNumberToObject(cJSON_AddObjectToObject(c, "args"), "step", x->step);
            fprintf(dat, "%d %.9f %.9f %d %llu %d\n", r, x->t_enter, leave, x->op, (unsigned long long)x->seq, done);
            /* Micro-steps: a span per (step, micro) the rank was in. */
            if (x->step != ms_step || x->micro != ms_micro) {
                if (ms_step != -2) {
                    snprintf(nm, sizeof nm, "step %d micro %d", ms_step, ms_micro);
                    cJSON *s = dsh_ev(ev, nm, "X", ms_t0, r, 2);
                    cJSON_AddNumberToObject(s, "dur", fmax(0.0, x->t_enter - ms_t0) * 1e6);
                }
                ms_step = x->step, ms_micro = x->micro, ms_t0 = x->t_enter;
            }
            /* Exchanges: from a bcast to the scatter that closes it. */
            if (x->op == DSH_OP_BCAST) ex_t0 = x->t_enter;
            if (x->op == DSH_OP_SCATTER && ex_t0 >= 0) {
                cJSON *s = dsh_ev(ev, "exchange", "X", ex_t0, r, 3);
                cJSON_AddNumberToObject(s, "dur", fmax(0.0, leave - ex_t0) * 1e6);
                ex_t0 = -1;
            }
        }
        if (ms_step != -2) {
            char nm[64];
            snprintf(nm, sizeof nm, "step %d micro %d", ms_step, ms_micro);
            cJSON *s = dsh_ev(ev, nm, "X", ms_t0, r, 2);
            cJSON_AddNumberToObject(s, "dur", fmax(0.0, t_end - ms_t0) * 1e6);
        }
        for (int tid = 1; tid <= 3; ++tid) {
            static const char *const tn[] = {"", "collectives", "micro-steps", "exchanges"};
            cJSON *m2 = dsh_ev(ev, "thread_name", "M", 0, r, tid);
            cJSON_AddStringToObject(cJSON_AddObjectToObject(m2, "args"), "name", tn[tid]);
        }
    }
    if (a->first_bad_seq >= 0) {
        cJSON *s = dsh_ev(ev, "stall", "i", a->t_first_bad, 0, 1);
        cJSON_AddStringToObject(s, "s", "g");
        cJSON *args = cJSON_AddObjectToObject(s, "args");
        cJSON_AddNumberToObject(args, "seq", (double)a->first_bad_seq);
        cJSON_AddStringToObject(args, "state", dsh_match_name(a->state));
        cJSON_AddStringToObject(args, "verdict", a->verdict);
    }
    if (a->counters[0]) {
        double t = 0;
        for (int r = 0; r < world; ++r)
            for (size_t k = 0; ranks[r].present && k < ranks[r].n; ++k)
                if ((int64_t)ranks[r].rec[k].seq == a->first_step_seq) t = ranks[r].rec[k].t_enter;
        cJSON *s = dsh_ev(ev, "counter diverged", "i", t, 0, 1);
        cJSON_AddStringToObject(s, "s", "g");
        cJSON_AddStringToObject(cJSON_AddObjectToObject(s, "args"), "finding", a->counters);
    }
    cJSON *od = cJSON_AddObjectToObject(root, "otherData");
    cJSON_AddNumberToObject(od, "world", world);
    cJSON_AddStringToObject(od, "verdict", a->verdict);
    cJSON_AddStringToObject(od, "counters", a->counters);
    cJSON_AddNumberToObject(od, "first_bad_seq", (double)a->first_bad_seq);
    cJSON_AddNumberToObject(od, "t_stall_s", a->first_bad_seq >= 0 ? a->t_first_bad : -1);
    int bad = ferror(dat);
    bad |= fclose(dat) != 0;
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!text) return lab_err_set(LAB_ERR_NOMEM, "0006: cannot serialise the trace");
    snprintf(path, sizeof path, "%s.trace.json", stem);
    lab_status st = bad ? lab_err_set(LAB_ERR_IO, "%s.dat: write failed", stem) : lab_fs_write_atomic(path, text, strlen(text));
    cJSON_free(text);
    return st;
}

/* Reads the stall time, verdict and counter finding back from an exported trace's otherData. */
static lab_status dsh_trace_other(const char *json_path, double *t_stall, char *verdict, size_t vcap, char *counters,
                                  size_t ccap)
{
    char *text;
    size_t len;
    lab_status st = lab_fs_read_all(json_path, &text, &len);
    if (st != LAB_OK) return st;
    cJSON *j = cJSON_ParseWithLength(text, len);
    free(text);
    if (!j) return lab_err_set(LAB_ERR_FORMAT, "%s: not valid JSON", json_path);
    const cJSON *od = cJSON_GetObjectItemCaseSensitive(j, "otherData");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(od, "t_stall_s");
    *t_stall = cJSON_IsNumber(t) ? t->valuedouble : -1;
    snprintf(verdict, vcap, "%s", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(od, "verdict")) ?: "");
    snprintf(counters, ccap, "%s", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(od, "counters")) ?: "");
    cJSON_Delete(j);
    return LAB_OK;
}

lab_status dsh_trace_figures(const struct lab_figure_ctx *fx)
{
    int drawn = 0;
    lab_status st = LAB_OK;
    for (int want = 0; want < 2 && st == LAB_OK; ++want) { /* 0: a fix, 1: a bug */
        for (size_t i = 0; i < fx->n_cases; ++i) {
            const lab_figure_case *c = &fx->cases[i];
            if ((c->variant->role == LAB_ROLE_BUG) != want || c->outcome == LAB_OUT_SKIP) continue;
            char stem[1200], json[1300], src[1300], dst[1300], fstem[256];
            dsh_trace_export_stem(fx->root, c->variant->name, lab_backend_name(c->backend), c->seed, stem, sizeof stem);
            snprintf(json, sizeof json, "%s.trace.json", stem);
            snprintf(src, sizeof src, "%s.dat", stem);
            if (!lab_fs_exists(json) || !lab_fs_exists(src)) continue;
            snprintf(fstem, sizeof fstem, "%s-timeline-%s", fx->incident->id, c->variant->name);
            char *data;
            size_t len;
            if ((st = lab_fs_read_all(src, &data, &len)) != LAB_OK) break;
            snprintf(dst, sizeof dst, "%s/%s.dat", fx->plots_dir, fstem);
            st = lab_fs_write_atomic(dst, data, len);
            free(data);
            double t_stall = -1;
            char verdict[480], counters[160];
            if (st == LAB_OK) st = dsh_trace_other(json, &t_stall, verdict, sizeof verdict, counters, sizeof counters);
            if (st != LAB_OK) break;
            int world = (int)lab_result_get(&c->r, "n_trainers") + 1;
            FILE *p = lab_gnuplot_par_open(fx->plots_dir, fstem);
            if (!p) return LAB_ERR_IO;
            char title[300], caption[600];
            snprintf(title, sizeof title, "0006 %s, seed %llu (%s): collectives per rank over time", c->variant->name,
                     (unsigned long long)c->seed, lab_backend_name(c->backend));
            /* One line: the diverged counter, else the analyzer's verdict (the trace JSON has both in full). */
            snprintf(caption, sizeof caption, "%.200s", counters[0] ? counters : t_stall >= 0 ? verdict : "every rank completed every collective");
            lab_gnuplot_par_str(p, "plottitle", title);
            lab_gnuplot_par_str(p, "caption", caption);
            fprintf(p, "world = %d\n", world > 1 ? world : 2);
            lab_gnuplot_par_num(p, "t_stall", t_stall);
            if ((st = lab_gnuplot_par_close(p, fstem)) != LAB_OK) break;
            st = lab_gnuplot_render(fx->root, LAB_GNUPLOT_TIMELINE, fx->plots_dir, fstem, caption);
            drawn += st == LAB_OK;
            break;
        }
    }
    if (st != LAB_OK) return st;
    return drawn ? LAB_OK : lab_err_set(LAB_ERR_UNSUPPORTED, "0006: no case with a trace to draw");
}
