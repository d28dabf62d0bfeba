/* test_hld: incident 0007: the log deadlock is caught and located, both fixes hold, a slow worker is not a
 * hang, no worker outlives a case, the threshold is the pipe capacity, the goldens are the reference. */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/sha.h>

#include "lab_test_case.h"
#include "hld.h"
#include "lab_golden.h"
#include "lab_incident.h"

#define GOLDEN_DIR "incidents/" LAB_INCIDENT_ID "/golden"

static const hld_watch default_watch = {HLD_STALL_S, HLD_DEADLINE_S};

static void worker_bin(char *buf, size_t cap) { hld_worker_path(".", buf, cap); }

/* 1 when a process pid exists and is not a zombie. */
static int alive(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *rp = strrchr(buf, ')');
    return rp && rp[2] != 'Z' && rp[2] != 'X';
}

/* Runs variant v on cs with watch w, judges it; the observation is kept in *o (free it). */
static lab_case_result run_judge(hld_case *cs, hld_variant v, const hld_watch *w, hld_obs *o)
{
    char bin[1024];
    worker_bin(bin, sizeof bin);
    cr_assert_eq(hld_run(cs, v, w, bin, o), LAB_OK, "%s", lab_err_msg());
    lab_case_result r;
    memset(&r, 0, sizeof r);
    cr_assert_eq(hld_judge(cs, v, o, &r), LAB_OK, "%s", lab_err_msg());
    cr_assert(r.verdict_set);
    /* Whatever the outcome, the worker is gone and nothing with the run's tag is left. */
    cr_expect(!alive(o->pid), "worker %d still alive", (int)o->pid);
    cr_expect_eq(hld_orphans(o->tag, 0), 0, "processes with tag %s remain", o->tag);
    return r;
}

static lab_case_result run_variant(const char *name, uint64_t seed)
{
    return lab_test_run(&hld_incident, name, seed, ".");
}

/* ---- the seeds' sizes ----------------------------------------------------- */

/* Every seed's payload makes a whole-message log line longer than the pipe, by 1x to 16x the threshold. */
Test(hld, seed_sizes_straddle_nothing_always_overflow)
{
    size_t cap;
    cr_assert_eq(hld_pipe_default_capacity(&cap), LAB_OK, "%s", lab_err_msg());
    size_t lo = (size_t)-1, hi = 0;
    for (uint64_t seed = 1; seed <= 256; ++seed) {
        hld_case cs;
        cr_assert_eq(hld_setup(seed, NULL, &cs), LAB_OK, "%s", lab_err_msg());
        size_t p0 = hld_threshold_predict(seed, cap);
        cr_expect_geq(cs.payload_bytes, p0, "seed %llu", (unsigned long long)seed);
        cr_expect_leq(cs.payload_bytes, (size_t)ceil(p0 * HLD_SIZE_SPAN), "seed %llu", (unsigned long long)seed);
        cr_expect_gt(hld_full_log_bytes(seed, cs.payload_bytes), cap);
        cr_expect_leq(hld_full_log_bytes(seed, p0 - 1), cap, "p0 - 1 fits");
        cr_expect_eq(cs.message_len, hld_full_log_bytes(seed, cs.payload_bytes) - 1 -
                                         (size_t)snprintf(NULL, 0, HLD_LOG_PREFIX_FMT, cs.message_len));
        char *line = NULL;
        size_t n = hld_ref_log_line(HLD_FIX_BOUNDED_PREVIEW, cs.message, cs.message_len, 0, &line);
        cr_expect_lt(n, 300, "the preview is bounded: %zu", n);
        free(line);
        lo = cs.payload_bytes < lo ? cs.payload_bytes : lo;
        hi = cs.payload_bytes > hi ? cs.payload_bytes : hi;
        hld_case_free(&cs);
    }
    cr_expect_lt(lo, 2 * hld_threshold_predict(1, cap), "some seeds near the threshold: %zu", lo);
    cr_expect_gt(hi, 8 * hld_threshold_predict(1, cap), "some far above: %zu", hi);
}

/* ---- the bug ----------------------------------------------------------------------------------- */

Test(hld, bug_full_log_deadlocks_and_names_the_write, .timeout = 60)
{
    for (uint64_t seed = 1; seed <= 4; ++seed) {
        hld_case cs;
        cr_assert_eq(hld_setup(seed, GOLDEN_DIR, &cs), LAB_OK, "%s", lab_err_msg());
        hld_obs o;
        lab_case_result r = run_judge(&cs, HLD_BUG_FULL_LOG, &default_watch, &o);
        cr_expect_eq(r.passed, 0, "seed %llu: %s", (unsigned long long)seed, r.detail);
        cr_expect(strstr(r.detail, "HANG (deadlock"), "%s", r.detail);
        cr_expect_eq(o.hung, 1);
        cr_expect_str_eq(o.why, "deadlock");
        cr_expect_eq(o.blocked_in_write, 1);
        cr_expect_eq(o.blocked_nr, SYS_write, "syscall %ld", o.blocked_nr);
        cr_expect_eq(o.blocked_args[0], 1, "write to fd 1");
        cr_expect_eq((size_t)o.blocked_args[2], hld_full_log_bytes(seed, cs.payload_bytes), "the whole log line in one write");
        cr_expect(strstr(o.wchan, "pipe_write"), "wchan %s", o.wchan);
        cr_expect_eq(o.pipe_fill, o.pipe_capacity, "the pipe is full");
        cr_expect_eq(o.parent_read_at_end, 0, "the parent read nothing");
        cr_expect_eq(o.reply_len, 0);
        /* Killed by the case: SIGKILL, or SIGPIPE where the case's clean-up closed the pipe first (seen on a
         * 16-core GPU host). Either way not an exit of its own. */
        cr_expect(o.exit_code == 128 + SIGKILL || o.exit_code == 128 + SIGPIPE, "killed by the case: exit %d",
                  o.exit_code);
        cr_expect_geq(o.detect_s, HLD_STALL_S);
        cr_expect_lt(o.detect_s, HLD_STALL_S + 0.5, "detected by the stall window, not a deadline: %.3f s", o.detect_s);
        cr_expect_eq(lab_result_get(&r, "blocked_syscall"), (double)SYS_write);
        hld_obs_free(&o);
        hld_case_free(&cs);
    }
}

/* The historical fix is not enough with verbose on: the whole message is logged again. */
Test(hld, preview_with_verbose_deadlocks_again, .timeout = 60)
{
    for (uint64_t seed = 1; seed <= 3; ++seed) {
        lab_case_result r = run_variant("bug-preview-verbose", seed);
        cr_expect_eq(r.passed, 0, "%s", r.detail);
        cr_expect(strstr(r.detail, "HANG (deadlock") && strstr(r.detail, "pipe_write"), "%s", r.detail);
        cr_expect_eq(lab_result_get(&r, "pipe_fill_bytes"), lab_result_get(&r, "pipe_capacity"));
    }
}

/* ---- the fixes ---------------------------------------------------------------------------------- */

Test(hld, both_fixes_pass, .timeout = 60)
{
    for (uint64_t seed = 1; seed <= 4; ++seed) {
        const char *names[] = {"fix-bounded-preview", "fix-drain"};
        for (int k = 0; k < 2; ++k) {
            lab_case_result r = run_variant(names[k], seed);
            cr_expect_eq(r.passed, 1, "%s seed %llu: %s", names[k], (unsigned long long)seed, r.detail);
            cr_expect_eq(lab_result_get(&r, "hung"), 0.0);
            cr_expect_eq(lab_result_get(&r, "reply_bytes"), lab_result_get(&r, "parent_read_bytes") -
                                                                 lab_result_get(&r, "log_bytes") - HLD_FRAME_HEADER);
            if (seed == HLD_GOLDEN_SEED) cr_expect(strstr(r.detail, "goldens agree"), "%s", r.detail);
            if (k == 1) cr_expect_gt(lab_result_get(&r, "log_bytes"), lab_result_get(&r, "pipe_capacity"));
        }
    }
}

/* Draining holds far above the pipe: a verbose whole-message log of 16x and 64x the capacity. */
Test(hld, drain_holds_far_above_capacity, .timeout = 60)
{
    hld_case cs;
    cr_assert_eq(hld_setup(7, NULL, &cs), LAB_OK, "%s", lab_err_msg());
    size_t factors[] = {16, 64};
    for (int k = 0; k < 2; ++k) {
        cr_assert_eq(hld_case_resize(&cs, factors[k] * hld_threshold_predict(7, cs.pipe_capacity)), LAB_OK);
        hld_obs o;
        lab_case_result r = run_judge(&cs, HLD_FIX_DRAIN, &default_watch, &o);
        cr_expect_eq(r.passed, 1, "%zux: %s", factors[k], r.detail);
        cr_expect_gt(o.stdout_read, factors[k] * cs.pipe_capacity * 9 / 10, "%zu", o.stdout_read);
        hld_obs_free(&o);
    }
    hld_case_free(&cs);
}

/* ---- a slow worker is not a hang ----------------------------------------------------------------- */

Test(hld, slow_worker_is_not_a_hang, .timeout = 60)
{
    hld_case cs;
    cr_assert_eq(hld_setup(3, NULL, &cs), LAB_OK, "%s", lab_err_msg());
    /* (a) Under the old parent, below the pipe: the log dribbles out in 2 KiB pieces every 15 ms, for
     * longer than the stall window in all. */
    cr_assert_eq(hld_case_resize(&cs, hld_threshold_predict(3, cs.pipe_capacity) - 2000), LAB_OK);
    cs.chunk = 2048, cs.pause_ms = 15;
    hld_obs o;
    lab_case_result r = run_judge(&cs, HLD_BUG_FULL_LOG, &default_watch, &o);
    cr_expect_eq(r.passed, 1, "dribbling worker: %s", r.detail);
    cr_expect_gt(o.exchange_s, HLD_STALL_S, "slower than the stall window in all: %.3f s", o.exchange_s);
    hld_obs_free(&o);
    /* (b) A worker that says nothing for 0.6 s (computing or sleeping, not blocked on its stdout): a quiet
     * stretch longer than the stall window, yet no hang. A criterion on silence alone would fail here. */
    cs.chunk = 0, cs.pause_ms = 0, cs.think_ms = 600;
    r = run_judge(&cs, HLD_BUG_FULL_LOG, &default_watch, &o);
    cr_expect_eq(r.passed, 1, "thinking worker: %s", r.detail);
    cr_expect_gt(o.max_quiet_s, 2 * HLD_STALL_S, "quiet for %.3f s", o.max_quiet_s);
    hld_obs_free(&o);
    /* (c) The draining parent with a slow worker far above the pipe. */
    cr_assert_eq(hld_case_resize(&cs, 3 * hld_threshold_predict(3, cs.pipe_capacity)), LAB_OK);
    cs.think_ms = 0, cs.chunk = 16384, cs.pause_ms = 30;
    r = run_judge(&cs, HLD_FIX_DRAIN, &default_watch, &o);
    cr_expect_eq(r.passed, 1, "slow worker, draining parent: %s", r.detail);
    cr_expect_gt(o.exchange_s, HLD_STALL_S);
    hld_obs_free(&o);
    hld_case_free(&cs);
}

/* A slow worker above the pipe under the old parent still deadlocks once the pipe is full. */
Test(hld, slow_worker_over_capacity_still_deadlocks, .timeout = 60)
{
    hld_case cs;
    cr_assert_eq(hld_setup(3, NULL, &cs), LAB_OK, "%s", lab_err_msg());
    cs.chunk = 8192, cs.pause_ms = 20;
    hld_obs o;
    lab_case_result r = run_judge(&cs, HLD_BUG_FULL_LOG, &default_watch, &o);
    cr_expect_eq(r.passed, 0, "%s", r.detail);
    cr_expect_str_eq(o.why, "deadlock");
    cr_expect_eq(o.blocked_args[2], 8192, "blocked in a chunk's write: %lld", o.blocked_args[2]);
    cr_expect_eq(o.pipe_fill, o.pipe_capacity);
    hld_obs_free(&o);
    hld_case_free(&cs);
}

/* A worker stuck somewhere other than its stdout is caught by the deadline, named, and killed. */
Test(hld, stuck_elsewhere_is_a_deadline_hang, .timeout = 60)
{
    hld_case cs;
    cr_assert_eq(hld_setup(3, NULL, &cs), LAB_OK, "%s", lab_err_msg());
    cs.think_ms = 20000;
    const hld_watch w = {HLD_STALL_S, 0.8};
    hld_obs o;
    lab_case_result r = run_judge(&cs, HLD_FIX_DRAIN, &w, &o);
    cr_expect_eq(r.passed, 0, "%s", r.detail);
    cr_expect(strstr(r.detail, "HANG (no reply by the"), "%s", r.detail);
    cr_expect_str_eq(o.why, "deadline");
    cr_expect_eq(o.blocked_in_write, 0);
    cr_expect(strstr(o.wchan, "nanosleep"), "wchan %s", o.wchan);
    cr_expect(o.detect_s >= 0.8 && o.detect_s < 1.5, "%.3f s", o.detect_s);
    hld_obs_free(&o);
    hld_case_free(&cs);
}

/* ---- no orphan ---------------------------------------------------------------------------------- */

/* The case process killed in the middle of a deadlock (as the runner's watchdog would): its worker dies
 * with it (PR_SET_PDEATHSIG), nothing is left. */
Test(hld, worker_dies_with_a_killed_case, .timeout = 60)
{
    char bin[1024];
    worker_bin(bin, sizeof bin);
    pid_t kid = fork();
    cr_assert_geq(kid, 0);
    if (kid == 0) {
        hld_case cs;
        if (hld_setup(2, NULL, &cs) != LAB_OK) _exit(3);
        const hld_watch w = {100, 100};
        hld_obs o;
        hld_run(&cs, HLD_BUG_FULL_LOG, &w, bin, &o);
        _exit(0);
    }
    /* Find the worker: a process whose parent is kid. */
    pid_t worker = 0;
    for (int tries = 0; tries < 200 && !worker; ++tries) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
        DIR *d = opendir("/proc");
        cr_assert_not_null(d);
        struct dirent *e;
        while ((e = readdir(d)) && !worker) {
            char path[300], buf[512];
            snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
            FILE *f = fopen(path, "r");
            if (!f) continue;
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            fclose(f);
            buf[n] = 0;
            char *rp = strrchr(buf, ')');
            int ppid = 0;
            if (rp && sscanf(rp + 2, "%*c %d", &ppid) == 1 && ppid == kid && strstr(buf, "(hld_worker)")) worker = atoi(e->d_name);
        }
        closedir(d);
    }
    cr_assert_gt(worker, 0, "worker of case %d not found", (int)kid);
    struct timespec ts = {0, 300000000};
    nanosleep(&ts, NULL); /* deadlocked by now */
    cr_assert_eq(kill(kid, SIGKILL), 0);
    cr_assert_eq(waitpid(kid, NULL, 0), kid);
    int gone = 0;
    for (int tries = 0; tries < 200 && !gone; ++tries) {
        gone = !alive(worker);
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    cr_expect(gone, "worker %d outlived its killed case", (int)worker);
}

/* ---- the threshold is the pipe capacity ---------------------------------------------------------- */

/* Bisection on the real mechanism finds the smallest payload that hangs; it is exactly the one whose log
 * line first exceeds F_GETPIPE_SZ, on the default pipe and on pipes set to 4 KiB and 256 KiB. Then, byte
 * for byte: a log line of exactly the capacity completes, one byte more deadlocks. */
Test(hld, threshold_is_the_pipe_capacity, .timeout = 120)
{
    char bin[1024];
    worker_bin(bin, sizeof bin);
    const hld_watch w = {0.05, HLD_DEADLINE_S};
    size_t sets[] = {4096, 0, 262144};
    for (int k = 0; k < 3; ++k) {
        size_t cap = 0, thr = 0;
        int probes = 0;
        cr_assert_eq(hld_threshold_measure(bin, sets[k], &w, &cap, &thr, &probes), LAB_OK, "%s", lab_err_msg());
        if (sets[k]) cr_expect_eq(cap, sets[k]);
        cr_expect_eq(thr, hld_threshold_predict(1, cap), "capacity %zu: measured %zu, predicted %zu", cap, thr,
                     hld_threshold_predict(1, cap));
        cr_expect_gt(hld_full_log_bytes(1, thr), cap);
        cr_expect_leq(hld_full_log_bytes(1, thr - 1), cap);
        /* Byte-exact: pad the line below the threshold up to cap, then cap + 1. */
        hld_case cs;
        memset(&cs, 0, sizeof cs);
        cs.seed = 1;
        cs.set_capacity = sets[k];
        cr_assert_eq(hld_case_resize(&cs, thr - 1), LAB_OK);
        size_t base = hld_full_log_bytes(1, thr - 1);
        for (size_t extra = 0; extra < 2; ++extra) {
            cs.pad = cap - base + extra;
            hld_obs o;
            lab_case_result r = run_judge(&cs, HLD_BUG_FULL_LOG, &w, &o);
            cr_expect_eq(hld_ref_log_line(HLD_BUG_FULL_LOG, cs.message, cs.message_len, cs.pad, NULL), cap + extra);
            cr_expect_eq(o.hung, (int)extra, "line of %zu bytes on a %zu-byte pipe: %s", cap + extra, cap, r.detail);
            cr_expect_eq(r.passed, extra == 0, "%s", r.detail);
            hld_obs_free(&o);
        }
        hld_case_free(&cs);
    }
}

/* ---- the judge can fail a finished exchange ------------------------------------------------------ */

Test(hld, judge_rejects_wrong_bytes_and_golden_mismatch, .timeout = 60)
{
    hld_case cs;
    cr_assert_eq(hld_setup(HLD_GOLDEN_SEED, GOLDEN_DIR, &cs), LAB_OK, "%s", lab_err_msg());
    cr_assert(cs.have_golden, "goldens apply on this machine's default pipe (%zu)", cs.pipe_capacity);
    hld_obs o;
    lab_case_result r = run_judge(&cs, HLD_FIX_DRAIN, &default_watch, &o);
    cr_assert_eq(r.passed, 1, "%s", r.detail);
    o.log[o.stdout_read / 2] ^= 1;
    memset(&r, 0, sizeof r);
    cr_assert_eq(hld_judge(&cs, HLD_FIX_DRAIN, &o, &r), LAB_OK);
    cr_expect_eq(r.passed, 0);
    cr_expect(strstr(r.detail, "stdout is not the expected log line"), "%s", r.detail);
    o.log[o.stdout_read / 2] ^= 1;
    o.reply[7] ^= 1;
    memset(&r, 0, sizeof r);
    cr_assert_eq(hld_judge(&cs, HLD_FIX_DRAIN, &o, &r), LAB_OK);
    cr_expect_eq(r.passed, 0);
    cr_expect(strstr(r.detail, "reply is not the reference message"), "%s", r.detail);
    o.reply[7] ^= 1;
    cs.golden_msg_sha[0] ^= 1; /* a reference that drifted from the golden */
    memset(&r, 0, sizeof r);
    cr_assert_eq(hld_judge(&cs, HLD_FIX_DRAIN, &o, &r), LAB_OK);
    cr_expect_eq(r.passed, 0);
    cr_expect(strstr(r.detail, "not the goldens"), "%s", r.detail);
    o.orphans = 1;
    memset(&r, 0, sizeof r);
    cr_expect_eq(hld_judge(&cs, HLD_FIX_DRAIN, &o, &r), LAB_ERR_IO, "a process left behind is an ERROR");
    hld_obs_free(&o);
    hld_case_free(&cs);
}

/* ---- goldens ------------------------------------------------------------------------------------- */

/* The goldens are the reference's (that they verify, that a corrupted one stops the case and that blessing
 * again reproduces them, tests/test_incidents.c checks for every incident). */
Test(hld, goldens_come_from_the_reference)
{
    /* The digests are the reference's: OpenSSL base64 of the seed's payload, framed. */
    hld_case cs;
    cr_assert_eq(hld_setup(HLD_GOLDEN_SEED, GOLDEN_DIR, &cs), LAB_OK, "%s", lab_err_msg());
    unsigned char h[32];
    SHA256((const unsigned char *)cs.message, cs.message_len, h);
    cr_expect(!memcmp(h, cs.golden_msg_sha, 32));
    char *line = NULL;
    size_t n = hld_ref_log_line(HLD_FIX_BOUNDED_PREVIEW, cs.message, cs.message_len, 0, &line);
    cr_expect_eq(n, cs.golden_preview_len);
    cr_expect(!memcmp(line, cs.golden_preview, n));
    free(line);
    hld_case_free(&cs);
}

/* A missing worker binary is an error naming it, not a skip or a pass. */
Test(hld, missing_worker_is_an_error)
{
    hld_case cs;
    cr_assert_eq(hld_setup(2, NULL, &cs), LAB_OK);
    hld_obs o;
    cr_expect_eq(hld_run(&cs, HLD_FIX_DRAIN, &default_watch, "/nonexistent/hld_worker", &o), LAB_ERR_IO);
    cr_expect(strstr(lab_err_msg(), "/nonexistent/hld_worker"), "%s", lab_err_msg());
    hld_case_free(&cs);
}
