/* hld: incident 0007, the test harness that deadlocked on its own logging: seed setup, the parent protocols
 * around a real worker (stdout pipe + socketpair), the progress watch and the threshold study (the case, the
 * goldens, the figures and the registration are hld_incident.c's). */
#define _GNU_SOURCE
#include "hld.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <openssl/evp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab_golden.h"
#include "lab_rng.h"
#include "lab_tensor.h"

#ifndef HLD_WORKER_BIN
#define HLD_WORKER_BIN "build/incidents/" LAB_INCIDENT_ID "/hld_worker"
#endif
/* The parent's poll slice: how often the watch samples progress while it waits. */
#define HLD_SLICE_MS 5

static const hld_variant_spec hld_specs[HLD_N_VARIANTS] = {
    [HLD_BUG_FULL_LOG] = {0, 1, 0},
    [HLD_BUG_PREVIEW_VERBOSE] = {0, 0, 1},
    [HLD_FIX_BOUNDED_PREVIEW] = {0, 0, 0},
    [HLD_FIX_DRAIN] = {1, 0, 1},
};

hld_variant_spec hld_variant_get(hld_variant v)
{
    return hld_specs[(unsigned)v < HLD_N_VARIANTS ? v : 0];
}

static double hld_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void hld_sleep(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* Reference and setup                                                                             */

/* Length of the message for (seed, p). */
static size_t hld_message_len(uint64_t seed, size_t p)
{
    return (size_t)snprintf(NULL, 0, HLD_MSG_FMT, (unsigned long long)seed, p, "") + 4 * ((p + 2) / 3);
}

/* Length of the whole-message log line for a message of m bytes (pad 0). */
static size_t hld_full_line_len(size_t m)
{
    return (size_t)snprintf(NULL, 0, HLD_LOG_PREFIX_FMT, m) + m + 1;
}

size_t hld_full_log_bytes(uint64_t seed, size_t p)
{
    return hld_full_line_len(hld_message_len(seed, p));
}

size_t hld_threshold_predict(uint64_t seed, size_t capacity)
{
    /* The log line grows with p (never shrinks): the first p whose line exceeds capacity. */
    size_t lo = 0, hi = 2 * capacity + 16;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (hld_full_log_bytes(seed, mid) > capacity) hi = mid;
        else lo = mid;
    }
    return hi;
}

lab_status hld_pipe_default_capacity(size_t *cap)
{
    int fd[2];
    if (pipe2(fd, O_CLOEXEC) != 0) return lab_err_set(LAB_ERR_IO, "0007: pipe2: %s", strerror(errno));
    int c = fcntl(fd[1], F_GETPIPE_SZ);
    int e = errno;
    close(fd[0]);
    close(fd[1]);
    if (c <= 0) return lab_err_set(LAB_ERR_IO, "0007: fcntl(F_GETPIPE_SZ): %s", strerror(e));
    *cap = (size_t)c;
    return LAB_OK;
}

/* Payload byte i of seed: byte i % 4 of Philox word i / 4. */
static void hld_payload(uint64_t seed, size_t p, unsigned char *out)
{
    uint32_t w = 0;
    for (size_t i = 0; i < p; ++i) {
        if (i % 4 == 0) w = lab_rng_u32(seed, HLD_STREAM_PAYLOAD, i / 4);
        out[i] = (unsigned char)(w >> (8 * (i % 4)));
    }
}

lab_status hld_ref_message(uint64_t seed, size_t p, char **out, size_t *len)
{
    *out = NULL;
    unsigned char *bytes = malloc(p ? p : 1);
    char *b64 = malloc(4 * ((p + 2) / 3) + 1);
    size_t m = hld_message_len(seed, p);
    char *msg = malloc(m + 1);
    if (!bytes || !b64 || !msg) {
        free(bytes), free(b64), free(msg);
        return lab_err_set(LAB_ERR_NOMEM, "0007: out of memory for a %zu-byte reference message", p);
    }
    hld_payload(seed, p, bytes);
    /* OpenSSL's encoder, not the worker's: EVP_EncodeBlock takes an int length, so feed it in blocks of a
     * multiple of 3 bytes (each block encodes to whole quads, the concatenation is the base64 of the whole). */
    size_t o = 0;
    for (size_t i = 0; i < p; i += 3u << 20) {
        size_t k = p - i < (3u << 20) ? p - i : (3u << 20);
        o += (size_t)EVP_EncodeBlock((unsigned char *)b64 + o, bytes + i, (int)k);
    }
    b64[o] = 0;
    snprintf(msg, m + 1, HLD_MSG_FMT, (unsigned long long)seed, p, b64);
    free(bytes);
    free(b64);
    *out = msg;
    *len = m;
    return LAB_OK;
}

size_t hld_ref_log_line(hld_variant v, const char *msg, size_t m, size_t pad, char **out)
{
    hld_variant_spec s = hld_variant_get(v);
    int whole = s.log_full || s.verbose || m <= HLD_PREVIEW_CHARS;
    size_t shown = whole ? m : HLD_PREVIEW_CHARS;
    const char *tail = whole ? "" : HLD_PREVIEW_TAIL;
    size_t plen = (size_t)snprintf(NULL, 0, HLD_LOG_PREFIX_FMT, m);
    size_t len = plen + shown + strlen(tail) + pad + 1;
    if (!out) return len;
    char *line = malloc(len + 1);
    if (!line) return 0;
    snprintf(line, plen + 1, HLD_LOG_PREFIX_FMT, m);
    memcpy(line + plen, msg, shown);
    memcpy(line + plen + shown, tail, strlen(tail));
    memset(line + plen + shown + strlen(tail), '.', pad);
    line[len - 1] = '\n';
    line[len] = 0;
    *out = line;
    return len;
}

void hld_case_free(hld_case *cs)
{
    free(cs->message);
    memset(cs, 0, sizeof *cs);
}

lab_status hld_case_resize(hld_case *cs, size_t p)
{
    free(cs->message);
    cs->message = NULL;
    cs->payload_bytes = p;
    return hld_ref_message(cs->seed, p, &cs->message, &cs->message_len);
}

/* Loads one golden of the manifest: sha256, dtype and shape checked, dtype dt. */
static lab_status hld_golden_get(const char *dir, const lab_golden_manifest *m, const char *file, lab_tensor *t,
                                 lab_dtype dt)
{
    const lab_golden_entry *e = lab_golden_find(m, file);
    if (!e)
        return lab_err_set(LAB_ERR_NOTFOUND, "%s/%s: not listed in %s (run `lab golden bless 0007`)", dir, file,
                           LAB_GOLDEN_MANIFEST);
    lab_status st = lab_golden_load(dir, e, t);
    if (st == LAB_OK && t->dtype != dt) {
        lab_tensor_free(t);
        st = lab_err_set(LAB_ERR_MISMATCH, "%s/%s: expected %s, found %s", dir, file, lab_dtype_name(dt),
                         lab_dtype_name(e->dtype));
    }
    return st;
}

static lab_status hld_load_goldens(const char *dir, hld_case *cs)
{
    lab_golden_manifest m;
    memset(&m, 0, sizeof m);
    lab_status st = lab_golden_manifest_read(dir, &m);
    if (st != LAB_OK) return st;
    lab_tensor d = {0}, p = {0}, k = {0};
    st = hld_golden_get(dir, &m, HLD_GOLDEN_CASE, &k, LAB_DT_F8);
    if (st == LAB_OK && (k.ndim != 1 || k.shape[0] != 2))
        st = lab_err_set(LAB_ERR_MISMATCH, "%s/%s: expected f8 [2]", dir, HLD_GOLDEN_CASE);
    if (st == LAB_OK) st = hld_golden_get(dir, &m, HLD_GOLDEN_DIGESTS, &d, LAB_DT_U1);
    if (st == LAB_OK) st = hld_golden_get(dir, &m, HLD_GOLDEN_PREVIEW, &p, LAB_DT_U1);
    if (st == LAB_OK && (d.ndim != 2 || d.shape[0] != 2 || d.shape[1] != 32))
        st = lab_err_set(LAB_ERR_MISMATCH, "%s/%s: expected u1 [2, 32]", dir, HLD_GOLDEN_DIGESTS);
    if (st == LAB_OK && (p.ndim != 1 || p.shape[0] >= sizeof cs->golden_preview))
        st = lab_err_set(LAB_ERR_MISMATCH, "%s/%s: expected u1 [n < %zu]", dir, HLD_GOLDEN_PREVIEW,
                         sizeof cs->golden_preview);
    if (st == LAB_OK) {
        const double *kv = k.data;
        cs->golden_payload = (size_t)kv[0];
        cs->golden_capacity = (size_t)kv[1];
        memcpy(cs->golden_msg_sha, d.data, 32);
        memcpy(cs->golden_full_sha, (const unsigned char *)d.data + 32, 32);
        memcpy(cs->golden_preview, p.data, p.shape[0]);
        cs->golden_preview_len = p.shape[0];
        /* The goldens hold the case of a 64 KiB default pipe; where the default differs, the seed draws another
         * size and the goldens do not apply (the README says so; the reference is still checked). */
        cs->have_golden = cs->golden_payload == cs->payload_bytes;
    }
    lab_tensor_free(&k);
    lab_tensor_free(&d);
    lab_tensor_free(&p);
    lab_golden_manifest_free(&m);
    return st;
}

lab_status hld_setup(uint64_t seed, const char *golden_dir, hld_case *cs)
{
    memset(cs, 0, sizeof *cs);
    cs->seed = seed;
    lab_status st = hld_pipe_default_capacity(&cs->pipe_capacity);
    if (st != LAB_OK) return st;
    /* Log-uniform over [P0, SPAN * P0]: more seeds near the threshold, where a wrong capacity model would
     * first let a bug case slip; up to 16x the capacity, where only draining keeps the full log safe.
     * P0 is the seed's own predicted threshold. */
    size_t p0 = hld_threshold_predict(seed, cs->pipe_capacity);
    double u = (double)lab_rng_u32(seed, HLD_STREAM_SIZE, 0) / 4294967296.0;
    size_t p = (size_t)ceil((double)p0 * pow(HLD_SIZE_SPAN, u));
    if (p < p0) p = p0;
    if ((st = hld_case_resize(cs, p)) != LAB_OK) {
        hld_case_free(cs);
        return st;
    }
    if (golden_dir && seed == HLD_GOLDEN_SEED && (st = hld_load_goldens(golden_dir, cs)) != LAB_OK) {
        hld_case_free(cs);
        return st;
    }
    return LAB_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* The worker's state, from /proc                                                                  */

/* Reads /proc/<pid>/<name> into buf (NUL-terminated); returns the length, -1 if unreadable. */
static ssize_t hld_proc_read(pid_t pid, const char *name, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n < 0) return -1;
    buf[n] = 0;
    return n;
}

/* Progress counters of the worker: bytes written by its finished syscalls (wchar), and CPU ticks. */
static void hld_worker_counters(pid_t pid, unsigned long long *wchar, unsigned long long *ticks, char *state)
{
    char buf[1024];
    *wchar = *ticks = 0;
    *state = '?';
    if (hld_proc_read(pid, "io", buf, sizeof buf) > 0) {
        const char *w = strstr(buf, "wchar:");
        if (w) *wchar = strtoull(w + 6, NULL, 10);
    }
    if (hld_proc_read(pid, "stat", buf, sizeof buf) > 0) {
        char *rp = strrchr(buf, ')');
        unsigned long ut = 0, stt = 0;
        /* after ')': state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
        if (rp && sscanf(rp + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", state, &ut, &stt) == 3)
            *ticks = ut + stt;
    }
}

/* Where the worker is: syscall number and first arguments, wchan, state. */
static void hld_worker_where(pid_t pid, hld_obs *o)
{
    char buf[512];
    o->blocked_nr = -1;
    o->wchan[0] = 0;
    if (hld_proc_read(pid, "syscall", buf, sizeof buf) > 0) {
        long nr;
        unsigned long long a0, a1, a2;
        if (sscanf(buf, "%ld %llx %llx %llx", &nr, &a0, &a1, &a2) == 4) {
            o->blocked_nr = nr;
            o->blocked_args[0] = (long long)a0, o->blocked_args[1] = (long long)a1, o->blocked_args[2] = (long long)a2;
        }
    }
    if (hld_proc_read(pid, "wchan", buf, sizeof buf) > 0) snprintf(o->wchan, sizeof o->wchan, "%s", buf);
    unsigned long long w, t;
    hld_worker_counters(pid, &w, &t, &o->state);
    o->blocked_in_write = (o->blocked_nr == SYS_write && o->blocked_args[0] == STDOUT_FILENO) ||
                          (o->blocked_nr < 0 && strstr(o->wchan, "pipe_write"));
}

int hld_orphans(const char *tag, int kill_them)
{
    DIR *d = opendir("/proc");
    if (!d || !tag || !tag[0]) {
        if (d) closedir(d);
        return 0;
    }
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0 || pid == getpid()) continue;
        char buf[2048];
        ssize_t n = hld_proc_read((pid_t)pid, "cmdline", buf, sizeof buf);
        if (n <= 0) continue;
        for (ssize_t i = 0; i < n; ++i)
            if (!buf[i]) buf[i] = ' ';
        if (!strstr(buf, tag)) continue;
        char st[512];
        if (hld_proc_read((pid_t)pid, "stat", st, sizeof st) > 0) {
            char *rp = strrchr(st, ')');
            if (rp && (rp[2] == 'Z' || rp[2] == 'X')) continue; /* a zombie runs nothing */
        }
        count++;
        if (kill_them) kill((pid_t)pid, SIGKILL);
    }
    closedir(d);
    return count;
}

void hld_worker_path(const char *root, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s", root && root[0] ? root : ".", HLD_WORKER_BIN);
}

/* ---------------------------------------------------------------------------------------------- */
/* The run: a worker, a parent protocol, the watch                                                 */

void hld_obs_free(hld_obs *o)
{
    free(o->log);
    free(o->reply);
    o->log = o->reply = NULL;
}

/* A growable byte buffer. */
typedef struct { char *p; size_t n, cap; } hld_buf;

static int hld_buf_reserve(hld_buf *b, size_t extra)
{
    if (b->n + extra + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 65536;
    while (cap < b->n + extra + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p, b->cap = cap;
    return 0;
}

/* Reads what fd has now (non-blocking) into b; *eof set at end of file. 0 ok, -1 with errno on error. */
static int hld_drain_fd(int fd, hld_buf *b, int *eof, size_t *got)
{
    for (;;) {
        if (hld_buf_reserve(b, 65536) != 0) {
            errno = ENOMEM;
            return -1;
        }
        ssize_t k = read(fd, b->p + b->n, b->cap - b->n - 1);
        if (k > 0) {
            b->n += (size_t)k, *got += (size_t)k;
            continue;
        }
        if (k == 0) {
            *eof = 1;
            return 0;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
        return -1;
    }
}

static lab_status hld_spawn(const hld_case *cs, hld_variant v, const char *worker_bin, int out_w, int sock_child,
                            const char *tag, pid_t *pid_out)
{
    hld_variant_spec s = hld_variant_get(v);
    char sock[16], seed[32], payload[32], pad[32], chunk[32], pause[32], think[32];
    snprintf(sock, sizeof sock, "%d", sock_child);
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)cs->seed);
    snprintf(payload, sizeof payload, "%zu", cs->payload_bytes);
    snprintf(pad, sizeof pad, "%zu", cs->pad);
    snprintf(chunk, sizeof chunk, "%zu", cs->chunk);
    snprintf(pause, sizeof pause, "%u", cs->pause_ms);
    snprintf(think, sizeof think, "%u", cs->think_ms);
    const char *argv[32];
    int k = 0;
    argv[k++] = worker_bin;
    argv[k++] = "--sock", argv[k++] = sock;
    argv[k++] = "--seed", argv[k++] = seed;
    argv[k++] = "--payload", argv[k++] = payload;
    argv[k++] = "--log", argv[k++] = s.log_full ? "full" : "preview";
    if (s.verbose) argv[k++] = "--verbose";
    argv[k++] = "--pad", argv[k++] = pad;
    argv[k++] = "--chunk", argv[k++] = chunk;
    argv[k++] = "--pause-ms", argv[k++] = pause;
    argv[k++] = "--think-ms", argv[k++] = think;
    argv[k++] = "--tag", argv[k++] = tag;
    argv[k] = NULL;
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return lab_err_set(LAB_ERR_IO, "0007: fork: %s", strerror(errno));
    if (pid == 0) {
        /* The worker dies with the case process (a runner's kill of the case leaves nothing behind). It stays
         * in the case's process group, so the runner's group kill reaches it too. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);
        int nul = open("/dev/null", O_RDONLY);
        if (nul < 0 || dup2(nul, STDIN_FILENO) < 0 || dup2(out_w, STDOUT_FILENO) < 0 || fcntl(sock_child, F_SETFD, 0) != 0) {
            dprintf(STDERR_FILENO, "hld: worker fd setup: %s\n", strerror(errno));
            _exit(127);
        }
        execv(worker_bin, (char *const *)argv);
        dprintf(STDERR_FILENO, "hld: exec %s: %s\n", worker_bin, strerror(errno));
        _exit(127);
    }
    *pid_out = pid;
    return LAB_OK;
}

/* Kills and reaps the worker; its status into o->exit_code. */
static void hld_kill_reap(hld_obs *o)
{
    int status = 0;
    kill(o->pid, SIGKILL);
    while (waitpid(o->pid, &status, 0) < 0 && errno == EINTR) {
    }
    o->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

lab_status hld_run(const hld_case *cs, hld_variant v, const hld_watch *w, const char *worker_bin, hld_obs *o)
{
    static unsigned run_counter;
    memset(o, 0, sizeof *o);
    o->exit_code = -1;
    o->blocked_nr = -1;
    o->detect_s = NAN;
    if (access(worker_bin, X_OK) != 0)
        return lab_err_set(LAB_ERR_IO, "0007: worker %s: %s (built by make)", worker_bin, strerror(errno));
    hld_variant_spec s = hld_variant_get(v);
    int out[2] = {-1, -1}, sk[2] = {-1, -1};
    if (pipe2(out, O_CLOEXEC) != 0) return lab_err_set(LAB_ERR_IO, "0007: pipe2: %s", strerror(errno));
    if (cs->set_capacity && fcntl(out[1], F_SETPIPE_SZ, (int)cs->set_capacity) < 0) {
        int e = errno;
        close(out[0]), close(out[1]);
        return lab_err_set(LAB_ERR_IO, "0007: fcntl(F_SETPIPE_SZ, %zu): %s", cs->set_capacity, strerror(e));
    }
    int capi = fcntl(out[1], F_GETPIPE_SZ);
    if (capi <= 0) {
        int e = errno;
        close(out[0]), close(out[1]);
        return lab_err_set(LAB_ERR_IO, "0007: fcntl(F_GETPIPE_SZ): %s", strerror(e));
    }
    o->pipe_capacity = (size_t)capi;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sk) != 0) {
        int e = errno;
        close(out[0]), close(out[1]);
        return lab_err_set(LAB_ERR_IO, "0007: socketpair: %s", strerror(e));
    }
    snprintf(o->tag, sizeof o->tag, "hld-%d-%u-%ld", (int)getpid(), ++run_counter, (long)(hld_mono() * 1e6));
    double t0 = hld_mono();
    lab_status st = hld_spawn(cs, v, worker_bin, out[1], sk[1], o->tag, &o->pid);
    close(out[1]);
    close(sk[1]);
    if (st != LAB_OK) {
        close(out[0]), close(sk[0]);
        return st;
    }
    o->launched = 1;
    if (fcntl(out[0], F_SETFL, O_NONBLOCK) != 0 || fcntl(sk[0], F_SETFL, O_NONBLOCK) != 0) {
        st = lab_err_set(LAB_ERR_IO, "0007: fcntl(O_NONBLOCK): %s", strerror(errno));
        goto end;
    }

    hld_buf logb = {0}, rx = {0};
    int out_eof = 0, sock_eof = 0, waiting = 1; /* waiting: the reply is not complete and the socket is open */
    size_t sock_read = 0, out_read = 0;
    unsigned long long last_w = 0, last_t = 0;
    size_t last_parent = 0, last_fill = (size_t)-1;
    double last_change = t0;
    for (;;) {
        /* The protocol: the old parent listens to the socket alone until the reply is in; the fixed one
         * listens to both. Either reads stdout to its end once the reply is in. */
        struct pollfd pf[2];
        int n = 0, i_sock = -1, i_out = -1;
        if (waiting) pf[i_sock = n++] = (struct pollfd){sk[0], POLLIN, 0};
        if ((s.drain || !waiting) && !out_eof) pf[i_out = n++] = (struct pollfd){out[0], POLLIN, 0};
        if (n == 0) break;
        int pr = poll(pf, (nfds_t)n, HLD_SLICE_MS);
        if (pr < 0 && errno != EINTR) {
            st = lab_err_set(LAB_ERR_IO, "0007: poll: %s", strerror(errno));
            break;
        }
        if (pr > 0 && i_out >= 0 && pf[i_out].revents) {
            if (hld_drain_fd(out[0], &logb, &out_eof, &out_read) != 0) {
                st = lab_err_set(LAB_ERR_IO, "0007: read worker stdout: %s", strerror(errno));
                break;
            }
        }
        if (pr > 0 && i_sock >= 0 && pf[i_sock].revents) {
            if (hld_drain_fd(sk[0], &rx, &sock_eof, &sock_read) != 0) {
                st = lab_err_set(LAB_ERR_IO, "0007: read worker socket: %s", strerror(errno));
                break;
            }
            if (rx.n >= HLD_FRAME_HEADER && !o->reply_expected) {
                uint64_t m = 0;
                for (int i = 0; i < HLD_FRAME_HEADER; ++i) m |= (uint64_t)(unsigned char)rx.p[i] << (8 * i);
                if (m > HLD_MAX_MESSAGE) {
                    st = lab_err_set(LAB_ERR_FORMAT, "0007: frame header says %llu bytes (limit %u)",
                                     (unsigned long long)m, HLD_MAX_MESSAGE);
                    break;
                }
                o->reply_expected = (size_t)m;
            }
            o->reply_complete = o->reply_expected && rx.n >= HLD_FRAME_HEADER + o->reply_expected;
            if (o->reply_complete || sock_eof) {
                waiting = 0;
                o->exchange_s = hld_mono() - t0;
                int fill = 0;
                if (ioctl(out[0], FIONREAD, &fill) == 0) o->pipe_fill = (size_t)fill;
            }
        }
        /* The watch: progress is any change of the bytes the parent read, the bytes in the pipe, the
         * worker's finished writes or its CPU time. */
        double now = hld_mono();
        unsigned long long wc, tk;
        char state;
        hld_worker_counters(o->pid, &wc, &tk, &state);
        int fill = 0;
        if (ioctl(out[0], FIONREAD, &fill) != 0) fill = -1;
        size_t parent = sock_read + out_read;
        if (parent != last_parent || (size_t)fill != last_fill || wc != last_w || tk != last_t) {
            last_parent = parent, last_fill = (size_t)fill, last_w = wc, last_t = tk;
            last_change = now;
        }
        double quiet = now - last_change;
        if (quiet > o->max_quiet_s) o->max_quiet_s = quiet;
        const char *why = NULL;
        if (quiet >= w->stall_s) {
            hld_worker_where(o->pid, o);
            if (o->blocked_in_write) why = "deadlock";
        }
        if (!why && now - t0 >= w->deadline_s) why = "deadline";
        if (why) {
            if (!o->blocked_in_write) hld_worker_where(o->pid, o);
            o->hung = 1;
            o->why = why;
            o->detect_s = now - t0;
            o->exchange_s = o->detect_s;
            o->pipe_fill = fill >= 0 ? (size_t)fill : 0;
            o->parent_read_at_end = parent;
            break;
        }
    }
    if (!o->hung) o->parent_read_at_end = sock_read + out_read;
    o->stdout_read = out_read;
    if (rx.n > HLD_FRAME_HEADER) {
        o->reply_len = rx.n - HLD_FRAME_HEADER;
        o->reply = malloc(o->reply_len + 1);
        if (o->reply) memcpy(o->reply, rx.p + HLD_FRAME_HEADER, o->reply_len), o->reply[o->reply_len] = 0;
    }
    o->log = logb.p ? logb.p : calloc(1, 1);
    if (o->log) o->log[logb.n] = 0;
    free(rx.p);
    if ((rx.n > HLD_FRAME_HEADER && !o->reply) || !o->log)
        if (st == LAB_OK) st = lab_err_set(LAB_ERR_NOMEM, "0007: out of memory for the worker's output");
end:
    close(out[0]);
    close(sk[0]);
    if (o->hung || st != LAB_OK) {
        hld_kill_reap(o);
    } else {
        /* Both streams ended: the worker is exiting. Reap it, within the deadline. */
        int status = 0;
        pid_t r;
        while ((r = waitpid(o->pid, &status, WNOHANG)) == 0 && hld_mono() - t0 < w->deadline_s) hld_sleep(0.001);
        if (r == o->pid)
            o->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
        else {
            hld_kill_reap(o);
            o->hung = 1;
            o->why = "deadline";
            o->detect_s = hld_mono() - t0;
        }
    }
    /* Nothing with this run's tag may outlive it. */
    hld_orphans(o->tag, 1);
    double until = hld_mono() + 2.0;
    while ((o->orphans = hld_orphans(o->tag, 1)) > 0 && hld_mono() < until) hld_sleep(0.01);
    return st;
}

/* ---------------------------------------------------------------------------------------------- */
/* Threshold study                                                                                 */

lab_status hld_threshold_measure(const char *worker_bin, size_t set_capacity, const hld_watch *w, size_t *capacity,
                                 size_t *threshold, int *probes)
{
    hld_case cs;
    memset(&cs, 0, sizeof cs);
    cs.seed = HLD_GOLDEN_SEED;
    cs.set_capacity = set_capacity;
    *probes = 0;
    size_t cap = set_capacity;
    if (!cap && hld_pipe_default_capacity(&cap) != LAB_OK) return LAB_ERR_IO;
    size_t lo = 1, hi = 2 * cap;
    hld_obs o;
    lab_status st;
    /* The bracket: the smallest size must complete, the largest must hang. */
    size_t ends[2] = {lo, hi};
    for (int k = 0; k < 2; ++k) {
        cs.payload_bytes = ends[k];
        if ((st = hld_run(&cs, HLD_BUG_FULL_LOG, w, worker_bin, &o)) != LAB_OK) return st;
        (*probes)++;
        *capacity = o.pipe_capacity;
        int hung = o.hung, ok = o.exit_code == 0 || o.hung;
        hld_obs_free(&o);
        if (!ok || hung != k)
            return lab_err_set(LAB_ERR_MISMATCH, "0007: threshold bracket: payload %zu %s on a %zu-byte pipe", ends[k],
                               hung ? "hung" : "did not hang", *capacity);
    }
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        cs.payload_bytes = mid;
        if ((st = hld_run(&cs, HLD_BUG_FULL_LOG, w, worker_bin, &o)) != LAB_OK) return st;
        (*probes)++;
        if (o.hung) hi = mid;
        else if (o.exit_code == 0) lo = mid;
        else {
            int ec = o.exit_code;
            hld_obs_free(&o);
            return lab_err_set(LAB_ERR_MISMATCH, "0007: worker exited %d at payload %zu", ec, mid);
        }
        hld_obs_free(&o);
    }
    *threshold = hi;
    return LAB_OK;
}
