/* lab_sched: what an incident's cases need of the machine (lab_machine.h, the probe's model) and the plan that fills it. */
#ifndef LAB_SCHED_H
#define LAB_SCHED_H

#include <stddef.h>

#include "lab_incident.h"
#include "lab_machine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Workers a GPU admits at once. MPS (Volta and later) serves at most 48 client contexts a device: a 49th
 * client's context fails with "busy or unavailable", and a neighbour that holds a context for a probe or a
 * background thread counts too. The lab keeps a margin of 8 and queues the rest: a case never meets the limit.
 * Without MPS the contexts take turns on the GPU, so more than this would only wait longer. */
#define LAB_SCHED_MPS_CLIENTS 48
#define LAB_SCHED_GPU_WORKERS_MAX 40

/* Workers per GPU when -j is not given: what served best on one H100/H200 of a 16-core host (1000 seeds of
 * every GPU incident: -j 16 in 21.6 s, -j 48 in 29.8 s at 256 seeds on an H200; beyond 16 the workers wait on
 * the GPU and on each other's host work). */
#define LAB_SCHED_GPU_WORKERS 16

/* Workers a host gets at least when -j is not given (its CPUs allowing): a case spends about half its time on the
 * host, so one GPU keeps more than 16 busy where the cores are there. 1000 seeds of every GPU incident on one H200
 * of a 64-core host: 32 workers 33.9 and 35.1 s against 16 workers 37.5 and 38.0 s (one call; another host: 33.5
 * against 36.1 s). Not more a GPU where there are several: contexts are made one after another across the host, and
 * on 2 of those GPUs 64 workers took 27.1 s against 23.2 s for 32 (docs/performance.md). */
#define LAB_SCHED_HOST_WORKERS 32

/* The worker count of a replay on backend b: `asked` (-j) when given (> 0), else the default: on the CPU one
 * per usable CPU; on CUDA LAB_SCHED_GPU_WORKERS per GPU and at least LAB_SCHED_HOST_WORKERS, no more than the
 * usable CPUs. On CUDA it is never more than LAB_SCHED_GPU_WORKERS_MAX per GPU: an -j beyond that is capped and
 * *note (when given) says so, "" when nothing was capped. At least 1. */
int lab_sched_workers(const lab_machine *m, lab_backend b, int asked, char *note, size_t len);

/* How one incident's cases run. Cases come in groups (one seed, every selected variant), run in this
 * order by one worker so the seed's inputs and reference are made once. */
typedef struct {
    int workers;                              /* worker processes at once */
    size_t batch;                             /* cases a worker runs (a multiple of the group size) */
    int gpus_per_worker;                      /* GPUs a worker is given (0: none bound, the CPU backend) */
    int exclusive;                            /* the worker's GPUs are its alone (multi-GPU cases) */
    int gpus_missing;                         /* the cases need more GPUs than the host has: they SKIP */
    char why[160];                            /* one line: the plan and its reason */
} lab_sched_plan;

/* Plans n_groups groups of group_size cases of incident inc on backend b, with at most
 * lab_sched_workers(m, b, jobs_cap) workers. CPU: one worker per core, one group per worker run. CUDA: every
 * worker holds one context; single-GPU cases share the GPUs (worker k on GPU k mod ngpu), each worker one
 * equal share of the groups (one context start per worker and incident; incidents that run as one pool are
 * cut into runs by the replay's pool instead, with lab_sched_chunk_seeds and lab_sched_order_runs); a case that needs N > 1 GPUs gets N GPUs alone (every GPU of the host when the incident sets gpus_all), floor(ngpu / N) workers. An incident with worker_setup_s > 0 (a long-lived job per worker) gets one equal share of the seed groups per worker, on either backend, never more workers than groups.
 * Memory-bug variants are handled by the runner (their worker retires after them unless the case reports
 * its strays contained), not here. */
lab_sched_plan lab_sched_plan_incident(const lab_machine *m, const lab_incident *inc, lab_backend b,
                                       size_t n_groups, size_t group_size, int jobs_cap);

/* Rough wall seconds of one case of an incident that declares none (lab_incident.seed_cost). */
#define LAB_SCHED_CASE_COST 0.05

/* The rough cost of one case of inc at seed on backend b: inc->seed_cost(seed), or LAB_SCHED_CASE_COST without one; a
 * negative or non-finite declaration counts as LAB_SCHED_CASE_COST; 0 for a CUDA case of an incident without a CUDA
 * version (it skips). */
double lab_sched_case_cost(const lab_incident *inc, lab_backend b, uint64_t seed);

/* How a pool of workers shares its runs (lab_replay's pool): the groups of the incidents that do not batch seeds are
 * dealt into this many runs per worker, so a run is short enough to fill in behind the long ones. The pool's workers
 * are long-lived (lab_isolate_run_pool: a run costs no context start), so the runs can be short: at 4, a slice of a
 * 1000-seed H100 replay took 6-10 s, and the last ones left workers idle for that long. */
#define LAB_SCHED_SHARES_PER_WORKER 8

/* A pool's runs that cost at least this part of one worker's fair share lead its order (lab_sched_order_runs): they
 * need most of the pool's time, so they go to the first workers that come up. */
#define LAB_SCHED_LEAD_SHARE 0.5

/* The most seeds one seed-batch chunk may hold: bmax, cut so that a chunk of the incident's costliest seed group
 * (group_cost, lab_sched_case_cost summed over its cases) costs no more than `fair` (one worker's share of the pool),
 * but never below bmax / (2 ngpu) (and 2). On one GPU that floor is half of bmax: a batch is there to fill the GPU,
 * and a launch of a few blocks holds SMs for its latency (0008 at T = 500 on an H100: 1.5 ms of GPU a block in a
 * 334-block launch, 2.1 ms in a 132-block one; cut to a 16th of a 1000-seed replay of 0008 alone, its chunks took
 * 139.8 s where 6 chunks took 60.2 s). With ngpu GPUs each GPU gets an ngpu-th of the chunks, so chunks an ngpu-th
 * the size keep each GPU as many chunks as one GPU had: without that, one chunk of 111 T = 500 seeds (about 33 s on
 * its GPU, its nine variants one after another) was the whole replay's wall on four GPUs as on one. */
unsigned lab_sched_chunk_seeds(unsigned bmax, double group_cost, double fair, int ngpu);

/* Orders n runs for a pool whose workers take them in that order as they free up: idx[0..n) gets the run indices. The
 * runs costing at least lead_at (> 0; 0: none) lead, the rest follow; within each of the two, with kinds (kind[r] <
 * nkinds; the replay's pool: each incident's seed-batch chunks one kind, the runs that mix the incidents that do not
 * batch another) the kinds take turns, the kind of the costliest run first, each kind's runs costliest first; kind
 * NULL: costliest first. Ties keep their order. The workers that start together hold different incidents: costliest
 * first alone gave the first workers every seed batch of 0001, 0002 and 0008 at once (GPU-bound; 0001's cases took 4.8
 * times as long as beside other work) and left the CPU-bound incidents for the end (1000 seeds of the GPU incidents on
 * one 2 x H200 host: one GPU 36.4 -> 35.2 s, two 22.7 -> 20.9 s with turns, docs/performance.md). Why the long
 * runs lead: a pool's workers come up one after another (their contexts are made one at a time on the host), so a run's
 * place is its start; in turns of four kinds the sixth T = 500 seed batch of 0008 came 21st and started on a worker
 * ready 4 s after the first, and ended 4 s after every other run. Leading, 1000 seeds of the GPU incidents on the 4
 * GPUs of a 4 x H200 host took 18.5 s instead of 20.6 s and 18.8 s instead of 19.4 s on two hosts (means of 2 and 3 rounds,
 * docs/performance.md; a one-GPU replay was not measured with it). LAB_ERR_NOMEM (idx unset). */
lab_status lab_sched_order_runs(const double *cost, const size_t *kind, size_t nkinds, size_t n, double lead_at,
                                size_t *idx);

/* The GPUs m->gpu[first .. first + count) (as many as m has) as a CUDA_VISIBLE_DEVICES value ("0,1", or UUIDs), into buf
 * ("" for none; cut at len). */
void lab_sched_visible(const lab_machine *m, int first, int count, char *buf, size_t len);

/* The part of a host that local rank `rank` of `size` ranks on it gets (lab_mpi: one rank per host by default, or
 * several sharing it): the host's GPUs split into `size` disjoint sets of consecutive entries, as even as possible (the
 * first ngpu % size ranks one more: 4 GPUs, 2 ranks: {0,1} {2,3}; 3 GPUs: {0,1} {2}), the rank's set moved to the
 * front of *m (entries, names, UUIDs) with m->ngpu its size; and the CPUs divided (ncpu / size, at least 1; cpu_source
 * says so). A share a batch scheduler already divided among the ranks is not divided again: with m->cpu_tasks ==
 * size (Slurm's tasks on this host are the ranks: srun) each rank keeps its ncpu, and with m->gpu_tasks == size its
 * GPUs (cpu_source says it is the rank's own); a count of tasks that does not divide size divides nothing away. A rank
 * beyond the GPUs (size > ngpu) keeps none. Returns the host index of the rank's first GPU (its count: m->ngpu), or -1
 * with *m unchanged when rank is not in [0, size). No CUDA call, nothing in the environment. */
int lab_sched_host_share(lab_machine *m, int rank, int size);

/* In a worker process, before any CUDA call: makes the worker's GPUs the only visible ones
 * (CUDA_VISIBLE_DEVICES), worker `slot` of the plan (lab_isolate_worker_slot()), and a worker of one GPU a context of
 * one work queue (lab_device_one_queue). Does nothing on the CPU backend or when the plan binds no GPU. */
void lab_sched_bind(const lab_machine *m, const lab_sched_plan *p, int slot);

#ifdef __cplusplus
}
#endif

#endif
