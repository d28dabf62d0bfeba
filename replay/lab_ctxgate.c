/* lab_ctxgate: a replay's CUDA workers make their contexts a few at a time (lab_ctxgate.h). */
#define _GNU_SOURCE /* pipe2 */
#include "lab_ctxgate.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

lab_status lab_ctxgate_open(lab_ctxgate *g, int width)
{
    int p[2];
    g->rfd = g->wfd = -1;
    if (width < 1) width = 1;
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) return lab_err_set(LAB_ERR_IO, "context gate: pipe: %s", strerror(errno));
    for (int i = 0; i < width; ++i)
        if (write(p[1], "t", 1) != 1) {
            close(p[0]), close(p[1]);
            return lab_err_set(LAB_ERR_IO, "context gate: write: %s", strerror(errno));
        }
    g->rfd = p[0], g->wfd = p[1];
    return LAB_OK;
}

static double lab_ctxgate_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int lab_ctxgate_enter(const lab_ctxgate *g, double wait_s)
{
    if (g->rfd < 0) return 0;
    double end = lab_ctxgate_now() + wait_s;
    for (;;) {
        char t;
        ssize_t k = read(g->rfd, &t, 1); /* non-blocking: another worker may take the token poll saw */
        if (k == 1) return 1;
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) return 0;
        double left = end - lab_ctxgate_now();
        if (left <= 0) return 0;
        struct pollfd pf = {g->rfd, POLLIN, 0};
        (void)poll(&pf, 1, (int)(left * 1000) + 1);
    }
}

void lab_ctxgate_leave(const lab_ctxgate *g, int took)
{
    if (took && g->wfd >= 0 && write(g->wfd, "t", 1) != 1) {
        /* a full or closed pipe: the gate is gone, and nobody waits on it for longer than their wait_s */
    }
}

void lab_ctxgate_close(lab_ctxgate *g)
{
    if (g->rfd >= 0) close(g->rfd);
    if (g->wfd >= 0) close(g->wfd);
    g->rfd = g->wfd = -1;
}
