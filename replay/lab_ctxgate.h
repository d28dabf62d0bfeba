/* lab_ctxgate: a replay's CUDA workers make their contexts a few at a time, so the first ones start work at once. */
#ifndef LAB_CTXGATE_H
#define LAB_CTXGATE_H

#include "lab_err.h"

/* Why: the driver makes contexts one at a time across the whole host, whatever GPU they are on: about 0.2 s each
 * under MPS, 0.3 s without (replay/cuda_start_probe.sh on 4 x H200). When 64 workers all ask at once, every one of
 * them waits until nearly all are done (the first of 64 was ready after 12.4 s, the last after 13.2 s); when at
 * most 4 ask at a time the same 64 contexts take as long in all, but worker i is ready after about i x 0.2 s, so
 * half of the pool's start-up wait is work instead.
 *
 * Contract: lab_ctxgate_open (in the parent, before the workers are forked) makes a gate of `width` tokens: a
 * pipe the workers inherit (close-on-exec, so nothing the workers start keeps it). In a worker, lab_ctxgate_enter
 * takes a token, waiting at most wait_s seconds (a worker that died holding one costs the others that long, once,
 * never a hang): 1 when it took one, 0 when it gave up waiting or the gate is closed; lab_ctxgate_leave(g, took)
 * gives the token back when took is 1. lab_ctxgate_close (parent, after the pool) closes both ends; a closed or
 * never opened gate lets everyone through at once. */
#define LAB_CTXGATE_WIDTH 4

typedef struct {
    int rfd, wfd; /* -1: closed */
} lab_ctxgate;

#define LAB_CTXGATE_CLOSED {-1, -1}

/* LAB_ERR_IO (pipe or write failed; the gate is left closed). */
lab_status lab_ctxgate_open(lab_ctxgate *g, int width);
int lab_ctxgate_enter(const lab_ctxgate *g, double wait_s);
void lab_ctxgate_leave(const lab_ctxgate *g, int took);
void lab_ctxgate_close(lab_ctxgate *g);

#endif
