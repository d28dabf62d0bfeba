/* hld_worker: incident 0007's worker process: builds a JSON message with a base64 payload, logs it to stdout
 * (whole, or a bounded preview unless verbose) and then sends it on a socket, as the test worker did.
 *
 * Usage: hld_worker --sock FD --seed S --payload BYTES --log full|preview [--verbose] [--pad N]
 *                   [--chunk BYTES --pause-ms MS] [--think-ms MS] [--tag TAG]
 * --chunk/--pause-ms write the log line in pieces with pauses (a slow worker that keeps making progress);
 * --think-ms sleeps before logging (a slow worker that makes no progress for a while but is not blocked).
 * --tag is ignored: it marks the process's command line so the lab can find it in /proc.
 * Exit status: 0 sent, HLD_WORKER_EXIT_USAGE bad arguments, HLD_WORKER_EXIT_SYS a failed call (named). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hld_proto.h"
#include "lab_rng.h"

static void hw_die(int code, const char *what)
{
    fprintf(stderr, "hld_worker: %s: %s\n", what, errno ? strerror(errno) : "bad value");
    exit(code);
}

/* Parses a decimal unsigned integer in [0, max]; exits with the usage code naming the flag otherwise. */
static unsigned long long hw_num(const char *flag, const char *s, unsigned long long max)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || errno || v > max || s[0] == '-') {
        fprintf(stderr, "hld_worker: %s: '%s' is not an integer in 0..%llu\n", flag, s, max);
        exit(HLD_WORKER_EXIT_USAGE);
    }
    return v;
}

static void hw_sleep_ms(unsigned long long ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Writes all n bytes to fd (retrying short writes and EINTR); exits naming `what` on failure. */
static void hw_write_all(int fd, const char *p, size_t n, const char *what)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0) {
            if (errno == EINTR) continue;
            hw_die(HLD_WORKER_EXIT_SYS, what);
        }
        p += k;
        n -= (size_t)k;
    }
}

/* The worker's own base64 (RFC 4648, '=' padding), as a logging library would carry it; the lab checks it
 * against OpenSSL's encoder. out holds 4 * ceil(n / 3) + 1 bytes. */
static void hw_base64(const unsigned char *in, size_t n, char *out)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0, i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = tab[v >> 18 & 63], out[o++] = tab[v >> 12 & 63], out[o++] = tab[v >> 6 & 63], out[o++] = tab[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)in[i] << 16;
        out[o++] = tab[v >> 18 & 63], out[o++] = tab[v >> 12 & 63], out[o++] = '=', out[o++] = '=';
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
        out[o++] = tab[v >> 18 & 63], out[o++] = tab[v >> 12 & 63], out[o++] = tab[v >> 6 & 63], out[o++] = '=';
    }
    out[o] = 0;
}

int main(int argc, char **argv)
{
    long long sock = -1;
    unsigned long long seed = 0, payload = 0, pad = 0, chunk = 0, pause_ms = 0, think_ms = 0;
    int have_seed = 0, have_payload = 0, full = -1, verbose = 0;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (!strcmp(a, "--verbose")) {
            verbose = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "hld_worker: %s needs a value\n", a);
            return HLD_WORKER_EXIT_USAGE;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--sock")) sock = (long long)hw_num(a, v, 1 << 20);
        else if (!strcmp(a, "--seed")) seed = hw_num(a, v, UINT64_MAX), have_seed = 1;
        else if (!strcmp(a, "--payload")) payload = hw_num(a, v, HLD_MAX_MESSAGE / 2), have_payload = 1;
        else if (!strcmp(a, "--pad")) pad = hw_num(a, v, 1 << 24);
        else if (!strcmp(a, "--chunk")) chunk = hw_num(a, v, 1 << 24);
        else if (!strcmp(a, "--pause-ms")) pause_ms = hw_num(a, v, 60000);
        else if (!strcmp(a, "--think-ms")) think_ms = hw_num(a, v, 600000);
        else if (!strcmp(a, "--tag")) continue;
        else if (!strcmp(a, "--log")) {
            if (!strcmp(v, "full")) full = 1;
            else if (!strcmp(v, "preview")) full = 0;
            else {
                fprintf(stderr, "hld_worker: --log: '%s' is not full or preview\n", v);
                return HLD_WORKER_EXIT_USAGE;
            }
        } else {
            fprintf(stderr, "hld_worker: unknown flag %s\n", a);
            return HLD_WORKER_EXIT_USAGE;
        }
    }
    if (sock < 0 || !have_seed || !have_payload || full < 0) {
        fprintf(stderr, "hld_worker: --sock, --seed, --payload and --log are required\n");
        return HLD_WORKER_EXIT_USAGE;
    }

    /* The message: JSON around the base64 of the seed's payload. */
    unsigned char *bytes = malloc(payload ? payload : 1);
    size_t b64_len = 4 * ((payload + 2) / 3);
    char *b64 = malloc(b64_len + 1);
    if (!bytes || !b64) hw_die(HLD_WORKER_EXIT_SYS, "malloc payload");
    /* Byte i is byte i % 4 of lab_rng_u32(seed, stream, i / 4): one Philox call gives words 4b .. 4b+3. */
    lab_philox_key key = {{(uint32_t)seed, (uint32_t)(seed >> 32)}};
    for (size_t b = 0; 16 * b < payload; ++b) {
        lab_philox_ctr r = lab_rng_philox((lab_philox_ctr){{(uint32_t)b, (uint32_t)((uint64_t)b >> 32), HLD_STREAM_PAYLOAD, 0u}}, key);
        for (size_t i = 16 * b; i < 16 * b + 16 && i < payload; ++i) bytes[i] = (unsigned char)(r.v[(i / 4) & 3] >> (8 * (i % 4)));
    }
    hw_base64(bytes, payload, b64);
    int mlen = snprintf(NULL, 0, HLD_MSG_FMT, seed, (size_t)payload, b64);
    char *msg = mlen >= 0 ? malloc((size_t)mlen + 1) : NULL;
    if (!msg) hw_die(HLD_WORKER_EXIT_SYS, "malloc message");
    snprintf(msg, (size_t)mlen + 1, HLD_MSG_FMT, seed, (size_t)payload, b64);
    size_t m = (size_t)mlen;

    if (think_ms) hw_sleep_ms(think_ms);

    /* The log line, written before the send: the whole message when the logger logs it whole. */
    int whole = full || verbose;
    size_t shown = whole || m <= HLD_PREVIEW_CHARS ? m : HLD_PREVIEW_CHARS;
    const char *tail = whole || m <= HLD_PREVIEW_CHARS ? "" : HLD_PREVIEW_TAIL;
    int plen = snprintf(NULL, 0, HLD_LOG_PREFIX_FMT, m);
    size_t llen = (size_t)plen + shown + strlen(tail) + pad + 1;
    char *line = malloc(llen + 1);
    if (!line) hw_die(HLD_WORKER_EXIT_SYS, "malloc log line");
    snprintf(line, (size_t)plen + 1, HLD_LOG_PREFIX_FMT, m);
    memcpy(line + plen, msg, shown);
    memcpy(line + plen + shown, tail, strlen(tail));
    memset(line + plen + shown + strlen(tail), '.', pad);
    line[llen - 1] = '\n';
    if (chunk == 0) {
        hw_write_all(STDOUT_FILENO, line, llen, "write log line to stdout");
    } else {
        for (size_t off = 0; off < llen; off += chunk) {
            size_t k = llen - off < chunk ? llen - off : chunk;
            hw_write_all(STDOUT_FILENO, line + off, k, "write log chunk to stdout");
            if (off + k < llen) hw_sleep_ms(pause_ms);
        }
    }

    /* Then the message the parent waits for. */
    unsigned char hdr[HLD_FRAME_HEADER];
    for (int i = 0; i < HLD_FRAME_HEADER; ++i) hdr[i] = (unsigned char)((uint64_t)m >> (8 * i));
    hw_write_all((int)sock, (const char *)hdr, sizeof hdr, "send frame header on the socket");
    hw_write_all((int)sock, msg, m, "send message on the socket");
    if (close((int)sock) != 0) hw_die(HLD_WORKER_EXIT_SYS, "close socket");
    free(line);
    free(msg);
    free(b64);
    free(bytes);
    return 0;
}
