/* hld_incident: incident 0007's judge, its case (the seed's group, the run), goldens, the figures and the registration. */
#define _GNU_SOURCE
#include "hld.h"

#include <math.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_fs.h"
#include "lab_gnuplot.h"
#include "lab_golden.h"
#include "lab_tensor.h"

/* ---------------------------------------------------------------------------------------------- */
/* The judge                                                                                       */

static void hld_sha(const void *p, size_t n, unsigned char out[32])
{
    SHA256((const unsigned char *)p, n, out);
}

/* First index where a and b differ, or min(na, nb) when one is a prefix of the other. */
static size_t hld_first_diff(const char *a, size_t na, const char *b, size_t nb)
{
    size_t n = na < nb ? na : nb, i = 0;
    while (i < n && a[i] == b[i]) ++i;
    return i;
}

lab_status hld_judge(const hld_case *cs, hld_variant v, const hld_obs *o, lab_case_result *r)
{
    if (o->orphans > 0)
        return lab_err_set(LAB_ERR_IO, "0007: %d worker process(es) with tag %s alive 2 s after SIGKILL", o->orphans,
                           o->tag);
    char *want = NULL;
    size_t want_len = hld_ref_log_line(v, cs->message, cs->message_len, cs->pad, &want);
    if (!want_len) return lab_err_set(LAB_ERR_NOMEM, "0007: out of memory for the reference log line");

    lab_result_metric(r, "payload_bytes", (double)cs->payload_bytes);
    lab_result_metric(r, "log_bytes", (double)want_len);
    lab_result_metric(r, "pipe_capacity", (double)o->pipe_capacity);
    lab_result_metric(r, "pipe_fill_bytes", (double)o->pipe_fill);
    lab_result_metric(r, "parent_read_bytes", (double)o->parent_read_at_end);
    lab_result_metric(r, "reply_bytes", (double)o->reply_len);
    lab_result_metric(r, "hung", o->hung);
    lab_result_metric(r, "time_to_detect_s", o->hung ? o->detect_s : NAN);
    lab_result_metric(r, "exchange_s", o->exchange_s);
    lab_result_metric(r, "blocked_in_write", o->hung ? o->blocked_in_write : 0);
    lab_result_metric(r, "blocked_syscall", o->hung ? (double)o->blocked_nr : NAN);
    lab_result_metric(r, "max_quiet_s", o->max_quiet_s);

    double ratio = (double)want_len / (double)o->pipe_capacity;
    if (o->hung && !strcmp(o->why, "deadlock")) {
        lab_result_verdict(r, 0, "HANG (deadlock, %.2f s): worker blocked in write(%lld, _, %lld) [syscall %ld, wchan %s], "
                           "pipe %zu/%zu bytes; parent on the socket, %zu bytes read; log %zu bytes (%.2fx pipe); killed",
                           o->detect_s, o->blocked_args[0], o->blocked_args[2], o->blocked_nr,
                           o->wchan[0] ? o->wchan : "?", o->pipe_fill, o->pipe_capacity, o->parent_read_at_end, want_len,
                           ratio);
    } else if (o->hung) {
        lab_result_verdict(r, 0, "HANG (no reply by the %.2f s deadline): worker in syscall %ld [wchan %s, state %c], "
                           "not blocked on its stdout; %zu bytes read; killed",
                           o->detect_s, o->blocked_nr, o->wchan[0] ? o->wchan : "?", o->state, o->parent_read_at_end);
    } else if (o->exit_code != 0) {
        lab_result_verdict(r, 0, "worker exited with status %d (reply %zu of %zu bytes)", o->exit_code, o->reply_len,
                           o->reply_expected);
    } else if (!o->reply_complete || o->reply_len != cs->message_len || memcmp(o->reply, cs->message, cs->message_len)) {
        size_t d = o->reply ? hld_first_diff(o->reply, o->reply_len, cs->message, cs->message_len) : 0;
        lab_result_verdict(r, 0, "reply is not the reference message: %zu bytes for %zu, first difference at byte %zu",
                           o->reply_len, cs->message_len, d);
    } else if (o->stdout_read != want_len || memcmp(o->log, want, want_len)) {
        size_t d = hld_first_diff(o->log, o->stdout_read, want, want_len);
        lab_result_verdict(r, 0, "stdout is not the expected log line: %zu bytes for %zu, first difference at byte %zu",
                           o->stdout_read, want_len, d);
    } else {
        int golden_ok = 1;
        if (cs->have_golden) {
            unsigned char h[32];
            hld_sha(o->reply, o->reply_len, h);
            golden_ok = !memcmp(h, cs->golden_msg_sha, 32);
            if (hld_variant_get(v).log_full || hld_variant_get(v).verbose) {
                hld_sha(o->log, o->stdout_read, h);
                golden_ok &= !memcmp(h, cs->golden_full_sha, 32);
            } else {
                golden_ok &= o->stdout_read == cs->golden_preview_len &&
                             !memcmp(o->log, cs->golden_preview, cs->golden_preview_len);
            }
        }
        if (!golden_ok)
            lab_result_verdict(r, 0, "reply and log match the reference but not the goldens of seed %u", HLD_GOLDEN_SEED);
        else
            lab_result_verdict(r, 1, "reply of %zu bytes and log line of %zu bytes (%.2fx the %zu-byte pipe) in %.1f ms, "
                               "longest quiet %.1f ms%s",
                               o->reply_len, want_len, ratio, o->pipe_capacity, 1e3 * o->exchange_s, 1e3 * o->max_quiet_s,
                               cs->have_golden ? "; goldens agree"
                               : cs->golden_payload ? "; goldens not applicable (another default pipe size)" : "");
    }
    free(want);
    return LAB_OK;
}

/* The seed's group: payload size, reference message and goldens, shared by the four variants. */
static lab_status hld_group_setup(const lab_case *c, void **group)
{
    hld_case *cs = malloc(sizeof *cs);
    if (!cs) return lab_err_set(LAB_ERR_NOMEM, LAB_INCIDENT_ID ": out of memory for the group of seed %llu",
                                (unsigned long long)c->seed);
    lab_status st = hld_setup(c->seed, c->golden_dir, cs);
    if (st != LAB_OK) {
        free(cs);
        return st;
    }
    *group = cs;
    return LAB_OK;
}

static void hld_group_teardown(void *group)
{
    if (!group) return;
    hld_case_free(group);
    free(group);
}

lab_status hld_run_case(const lab_case *c, lab_case_result *r)
{
    const hld_case *cs = c->group;
    hld_variant v = (hld_variant)c->variant->param;
    char bin[4096];
    hld_worker_path(c->root, bin, sizeof bin);
    static const hld_watch w = {HLD_STALL_S, HLD_DEADLINE_S};
    hld_obs o;
    lab_status st = hld_run(cs, v, &w, bin, &o);
    if (st == LAB_OK) st = hld_judge(cs, v, &o, r);
    hld_obs_free(&o);
    return st;
}

/* ---------------------------------------------------------------------------------------------- */
/* Goldens                                                                                         */

lab_status hld_golden_bless(const char *dir)
{
    lab_status st = lab_fs_mkdirs(dir);
    if (st != LAB_OK) return st;
    /* The seed's case as the setup makes it (size draw on the default pipe), reference only. */
    hld_case cs;
    if ((st = hld_setup(HLD_GOLDEN_SEED, NULL, &cs)) != LAB_OK) return st;
    char *full = NULL, *prev = NULL;
    size_t nf = hld_ref_log_line(HLD_BUG_FULL_LOG, cs.message, cs.message_len, 0, &full);
    size_t np = hld_ref_log_line(HLD_FIX_BOUNDED_PREVIEW, cs.message, cs.message_len, 0, &prev);
    lab_golden_manifest m;
    memset(&m, 0, sizeof m);
    snprintf(m.incident, sizeof m.incident, "%s", LAB_INCIDENT_ID);
    lab_tensor d = {0}, p = {0}, k = {0};
    size_t sd[2] = {2, 32}, sp[1] = {np}, sk[1] = {2};
    if (!nf || !np) {
        st = lab_err_set(LAB_ERR_NOMEM, "%s: out of memory blessing goldens", dir);
        goto done;
    }
    if ((st = lab_tensor_create(&d, LAB_DT_U1, 2, sd)) != LAB_OK) goto done;
    if ((st = lab_tensor_create(&p, LAB_DT_U1, 1, sp)) != LAB_OK) goto done;
    if ((st = lab_tensor_create(&k, LAB_DT_F8, 1, sk)) != LAB_OK) goto done;
    ((double *)k.data)[0] = (double)cs.payload_bytes;
    ((double *)k.data)[1] = (double)cs.pipe_capacity;
    hld_sha(cs.message, cs.message_len, d.data);
    hld_sha(full, nf, (unsigned char *)d.data + 32);
    memcpy(p.data, prev, np);
    char producer[128];
    snprintf(producer, sizeof producer, "reference hld_ref_message v1 (OpenSSL base64), payload %zu B: sha256 of msg, full log",
             cs.payload_bytes);
    st = lab_golden_add(&m, dir, HLD_GOLDEN_DIGESTS, &d, LAB_DT_U1, HLD_GOLDEN_SEED, producer);
    if (st == LAB_OK)
        st = lab_golden_add(&m, dir, HLD_GOLDEN_PREVIEW, &p, LAB_DT_U1, HLD_GOLDEN_SEED,
                            "reference hld_ref_log_line v1: the bounded-preview log line of seed 1");
    if (st == LAB_OK)
        st = lab_golden_add(&m, dir, HLD_GOLDEN_CASE, &k, LAB_DT_F8, HLD_GOLDEN_SEED,
                            "hld_setup v1 at seed 1: payload bytes drawn, default pipe capacity read");
    if (st == LAB_OK) st = lab_golden_manifest_write(dir, &m);
done:
    free(full);
    free(prev);
    lab_tensor_free(&d);
    lab_tensor_free(&p);
    lab_tensor_free(&k);
    lab_golden_manifest_free(&m);
    hld_case_free(&cs);
    return st;
}

/* ---------------------------------------------------------------------------------------------- */
/* Figures: the sweep across the pipe capacity and the measured threshold                          */

/* Points of the sweep: full log lines from 0.5x to 1.5x the pipe, bug-full-log and fix-drain. */
#define HLD_FIG_POINTS 21

static lab_status hld_figures(const lab_figure_ctx *fx)
{
    char bin[4096], dat[4096], png[4096], txt[4096];
    hld_worker_path(fx->root, bin, sizeof bin);
    snprintf(dat, sizeof dat, "%s/%s-sweep.dat", fx->plots_dir, LAB_INCIDENT_ID);
    snprintf(png, sizeof png, "%s/%s-sweep.png", fx->plots_dir, LAB_INCIDENT_ID);
    snprintf(txt, sizeof txt, "%s/%s-threshold.txt", fx->plots_dir, LAB_INCIDENT_ID);
    /* A short stall for the study: with the old parent nothing ever reads a full pipe, so the signature
     * (blocked in write, no progress) cannot clear once seen; the replay's cases keep HLD_STALL_S. */
    const hld_watch w = {0.05, HLD_DEADLINE_S};
    size_t cap = 0, thr = 0;
    int probes = 0;
    lab_status st = hld_threshold_measure(bin, 0, &w, &cap, &thr, &probes);
    if (st != LAB_OK) return st;
    char line[512];
    int n = snprintf(line, sizeof line, "pipe capacity %zu bytes (F_GETPIPE_SZ); smallest payload that hangs %zu bytes "
                     "(full log line %zu bytes), predicted %zu; %d probes\n",
                     cap, thr, hld_full_log_bytes(HLD_GOLDEN_SEED, thr), hld_threshold_predict(HLD_GOLDEN_SEED, cap), probes);
    if ((st = lab_fs_write_atomic(txt, line, (size_t)n)) != LAB_OK) return st;
    const char *series[] = {"bug_full_log_s", "fix_drain_s"};
    FILE *f = lab_gnuplot_dat_open(dat, "log_over_capacity", series, 2);
    if (!f) return LAB_ERR_IO;
    hld_case cs;
    memset(&cs, 0, sizeof cs);
    cs.seed = HLD_GOLDEN_SEED;
    for (int i = 0; i < HLD_FIG_POINTS && st == LAB_OK; ++i) {
        double x = 0.5 + (double)i / (HLD_FIG_POINTS - 1);
        cs.payload_bytes = (size_t)((double)thr * x);
        double t[2];
        hld_variant vs[2] = {HLD_BUG_FULL_LOG, HLD_FIX_DRAIN};
        for (int k = 0; k < 2 && st == LAB_OK; ++k) {
            hld_obs o;
            st = hld_run(&cs, vs[k], &w, bin, &o);
            t[k] = o.exchange_s;
            hld_obs_free(&o);
        }
        fprintf(f, "%.4f %.6f %.6f\n", (double)hld_full_log_bytes(cs.seed, cs.payload_bytes) / (double)cap,
                t[0], t[1]);
    }
    lab_status cst = lab_gnuplot_dat_close(f, dat);
    if (st != LAB_OK) return st;
    if (cst != LAB_OK) return cst;
    lab_gnuplot_spec spec = {dat, png, "0007: reply time (or time to a detected hang, stall 0.05 s) vs log line / pipe capacity",
                             "full log line bytes / pipe capacity", "seconds", 0, 1, 0};
    return lab_gnuplot_xy(fx->root, &spec);
}

/* ---------------------------------------------------------------------------------------------- */
/* Registration                                                                                    */

static const lab_variant hld_variants[] = {
    {.name = "bug-full-log", .role = LAB_ROLE_BUG, .param = HLD_BUG_FULL_LOG, .detect = LAB_DETECT_FAIL,
     .what = "as it was: the worker logs the whole message to stdout, the parent waits for the reply on the socket "
             "before reading stdout"},
    {.name = "bug-preview-verbose", .role = LAB_ROLE_BUG, .param = HLD_BUG_PREVIEW_VERBOSE, .detect = LAB_DETECT_FAIL,
     .what = "the historical fix with verbose logging on: the whole message is logged again and the same parent "
             "deadlocks"},
    {.name = "fix-bounded-preview", .role = LAB_ROLE_FIX, .param = HLD_FIX_BOUNDED_PREVIEW,
     .what = "the historical fix: a 200-character preview unless verbose (verbose off); same parent"},
    {.name = "fix-drain", .role = LAB_ROLE_FIX, .param = HLD_FIX_DRAIN,
     .what = "the structural fix: the parent polls the socket and stdout together and drains stdout while it waits; "
             "verbose full log, up to 16x the pipe"},
};

/* What the criterion compares (lab_metric_spec): the exchange deadlocked or completed. */
static const lab_metric_spec hld_metric_specs[] = {
    {"hung", 0, 1, NULL, "the exchange deadlocked (1) or completed (0): every bug seed hangs, the fixes complete"},
};

const lab_incident hld_incident = {
    .id = LAB_INCIDENT_ID,
    .title = "test harness deadlocked on its own logging (stdout pipe full, parent waiting on a socket)",
    .variants = hld_variants,
    .n_variants = (int)(sizeof hld_variants / sizeof hld_variants[0]),
    .setup = hld_group_setup,
    .teardown = hld_group_teardown,
    .run_cpu = hld_run_case,
    .timeout_s = 10,
    .golden_bless = hld_golden_bless,
    .default_seeds = 16,
    .plots = {
        .metric = "exchange_s",
        .log = 1,
        .specs = hld_metric_specs,
        .n_specs = (int)(sizeof hld_metric_specs / sizeof hld_metric_specs[0]),
        .figures = hld_figures,
    },
};
LAB_INCIDENT_REGISTER(hld_incident);
