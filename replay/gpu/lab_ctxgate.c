/* lab_ctxgate: a replay's CUDA workers make their contexts a few at a time (lab_ctxgate.h). */
#define _GNU_SOURCE /* pipe2 */
#include "lab_ctxgate.h"

#include "lab_clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

lab_status lab_ctxgate_open(lab_ctxgate *g, int width, int lanes)
{
    g->lanes = 0;
    if (lanes < 1) lanes = 1;
    if (lanes > LAB_CTXGATE_LANES) lanes = LAB_CTXGATE_LANES;
    int tokens = width / lanes > 0 ? width / lanes : 1;
    for (int l = 0; l < lanes; ++l) {
        int p[2];
        if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
            lab_ctxgate_close(g);
            return lab_err_set(LAB_ERR_IO, "context gate: pipe: %s", strerror(errno));
        }
        g->rfd[l] = p[0], g->wfd[l] = p[1], g->lanes = l + 1;
        for (int i = 0; i < tokens; ++i)
            if (write(p[1], "t", 1) != 1) {
                lab_ctxgate_close(g);
                return lab_err_set(LAB_ERR_IO, "context gate: write: %s", strerror(errno));
            }
    }
    return LAB_OK;
}

/* Lane `lane` of an open gate, taken modulo its lanes. */
static int lab_ctxgate_lane(const lab_ctxgate *g, int lane) { return (lane < 0 ? -lane : lane) % g->lanes; }

int lab_ctxgate_enter(const lab_ctxgate *g, int lane, double wait_s)
{
    if (g->lanes < 1) return 0;
    int fd = g->rfd[lab_ctxgate_lane(g, lane)];
    double end = lab_clock_now() + wait_s;
    for (;;) {
        char t;
        ssize_t k = read(fd, &t, 1); /* non-blocking: another worker may take the token poll saw */
        if (k == 1) return 1;
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) return 0;
        double left = end - lab_clock_now();
        if (left <= 0) return 0;
        struct pollfd pf = {fd, POLLIN, 0};
        (void)poll(&pf, 1, (int)(left * 1000) + 1);
    }
}

void lab_ctxgate_leave(const lab_ctxgate *g, int lane, int took)
{
    if (took && g->lanes > 0 && write(g->wfd[lab_ctxgate_lane(g, lane)], "t", 1) != 1) {
        /* a full or closed pipe: the gate is gone, and nobody waits on it for longer than their wait_s */
    }
}

void lab_ctxgate_close(lab_ctxgate *g)
{
    for (int l = 0; l < g->lanes; ++l) close(g->rfd[l]), close(g->wfd[l]);
    g->lanes = 0;
}

int lab_ctxgate_share(int width, int procs)
{
    int w = procs > 1 ? width / procs : width;
    return w > 0 ? w : 1;
}
