/* lab_ctxgate: a replay's CUDA workers make their contexts a few at a time, so the first ones start work at once. */
#ifndef LAB_CTXGATE_H
#define LAB_CTXGATE_H

#include "lab_err.h"

/* Why: the driver makes contexts one at a time across the whole host, whatever GPU they are on: about 0.2 s each
 * under MPS, 0.3 s without (tools/measure/cuda_start_probe.sh on 4 x H200). When 64 workers all ask at once, every one of
 * them waits until nearly all are done (the first of 64 was ready after 12.4 s, the last after 13.2 s); when at
 * most 4 ask at a time the same 64 contexts take as long in all, but worker i is ready after about i x 0.2 s, so
 * half of the pool's start-up wait is work instead.
 *
 * Why lanes, one a GPU: the workers that come up first take the pool's longest runs (lab_sched_order_runs), and through
 * one gate they came up in no order of GPU: in 2-rank replays on 4 x H200 a rank put 4 to 6 of its 6 long runs on one
 * of its two GPUs, its longest took 15-19 s against 11-12 s, and it ended 2.6-7.9 s after the other rank. A lane a
 * GPU, of equal width, brings the GPUs' workers up at one pace: 3 and 3 in every round, the ranks within 0.05 s
 * (docs/performance.md).
 *
 * Contract: lab_ctxgate_open (in the parent, before the workers are forked) makes a gate of `lanes` lanes (1 ..
 * LAB_CTXGATE_LANES) of max(1, width / lanes) tokens each: a pipe per lane that the workers inherit (close-on-exec, so
 * nothing the workers start keeps it). In a worker, lab_ctxgate_enter takes a token of lane `lane` (taken modulo the
 * lanes), waiting at most wait_s seconds (a worker that died holding one costs the others that long, once, never a
 * hang): 1 when it took one, 0 when it gave up waiting or the gate is closed; lab_ctxgate_leave(g, lane, took) gives
 * the token back when took is 1. lab_ctxgate_close (parent, after the pool) closes every end; a closed or never
 * opened gate lets everyone through at once. */
#define LAB_CTXGATE_WIDTH 4
#define LAB_CTXGATE_LANES 64

/* A gate's width for one of `procs` lab processes that make their contexts on one host at once (lab_mpi's local
 * ranks): the host's `width` divided among them, at least 1 each. Under --mpi each rank opens a gate of its own; with
 * LAB_CTXGATE_WIDTH each, 4 ranks asked the driver for 16 contexts at once and their first cases started 1 to 2 s
 * after a plain replay's (docs/performance.md). */
int lab_ctxgate_share(int width, int procs);

typedef struct {
    int lanes;                                 /* 0: closed */
    int rfd[LAB_CTXGATE_LANES], wfd[LAB_CTXGATE_LANES];
} lab_ctxgate;

#define LAB_CTXGATE_CLOSED {0}

/* LAB_ERR_IO (pipe or write failed; the gate is left closed). */
lab_status lab_ctxgate_open(lab_ctxgate *g, int width, int lanes);
int lab_ctxgate_enter(const lab_ctxgate *g, int lane, double wait_s);
void lab_ctxgate_leave(const lab_ctxgate *g, int lane, int took);
void lab_ctxgate_close(lab_ctxgate *g);

#endif
