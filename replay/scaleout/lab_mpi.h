/* lab_mpi: replay scale-out across MPI ranks (Open MPI), the transport: a rank a host driving its GPUs, seed groups
 * dealt by rank 0 on demand (lab_deal), results streamed to rank 0, a rank that dies or hangs reported instead of lost. */
#ifndef LAB_MPI_H
#define LAB_MPI_H

#include <stddef.h>
#include <stdio.h>

#include "lab_mpi_limits.h"
#include "lab_replay.h"

/* LAB_OK when this build of the lab has MPI (built with MPI=1; sanitizer builds leave it out), else
 * LAB_ERR_UNSUPPORTED with a message that says how to get it. */
lab_status lab_mpi_check(void);

/* This process's rank in the last lab_mpi_replay (0 before one, and in a build without MPI). A command
 * that follows a replay with more work on its files (a report) does that work on rank 0 only. */
int lab_mpi_rank(void);

/* Runs a replay under mpirun, one call per rank (it calls MPI_Init and MPI_Finalize itself, so call it once per process
 * and use no MPI elsewhere). One rank a host is the intended shape: it drives every GPU of its host through the same
 * scheduler a plain replay uses (lab_replay_execute_fed: the pool, lanes, seed batches). With k ranks on a host (from
 * MPI_Comm_split_type, so mpirun, srun and others all work) the host's GPUs, as lab_device_machine sees them, are split
 * into k disjoint sets (lab_sched_host_share: consecutive entries, as even as possible) and its CPUs divided by k; a rank
 * makes its set the only visible one through CUDA_VISIBLE_DEVICES before any case runs (no CUDA call in the rank
 * process: cases run in forked children, and CUDA does not survive fork). A rank left without a GPU on a CUDA replay
 * of a host that has some (more ranks than GPUs there) is an error at the start, naming the rank and the host: no rank
 * starts. A rank's workers: lab_sched_workers on its share (opts->how.jobs, when > 0, as asked, per rank).
 *
 * Every rank builds the same case list (lab_replay_cases) and seed groups (lab_replay_groups_make). Rank 0 deals the
 * groups on demand (lab_deal: chunks of consecutive groups of one incident, a seed's variants together, big first and
 * smaller toward the end, sized by the incidents' declared costs and the asking rank's workers); a rank asks for its
 * next chunk when fewer runs wait in its queue than it has workers, so its workers do not idle while rank 0 has work.
 * Rank 0 runs cases too, and answers requests from its run's loop (lab_isolate_on_tick), 20 ms apart at most while its
 * own cases run. A rank waits at most the longest case watchdog plus LAB_MPI_GRACE_S for an answer, then stops asking
 * (its harness failed). Each finished case (and a rerun's outcome after a device error) goes to rank 0 at once.
 *
 * Rank 0 merges them into the canonical order and reports exactly as lab_replay_run does (table, results.jsonl,
 * summary.json, junit.xml, plots); summary.json also gets "mpi" (ranks, split, seed_groups, chunks, rank_failed) and
 * "ranks" (rank, host, pid, local rank and size, jobs, device, chunks, cases dealt, reported, wall_s: the rank's own
 * run time, status, why), added from memory to the summary's tree before it is written
 * (lab_replay_opts.summary_fields). A rank whose process is gone (same host: /proc says so) has its dealt and
 * unreported cases CRASH; one silent for longer than the longest case watchdog of the run plus LAB_MPI_GRACE_S has
 * them HANG (a rank whose cases run says it is alive every LAB_MPI_GRACE_S / 2 seconds, so silence means the rank
 * process is stuck, not its workers busy with long cases); the error of each such case names the rank, host and pid. Either rank is dealt nothing more: the groups
 * not yet dealt go to the others. The replay is then NOT OK whatever the roles, summary.json's "ok" is false, and
 * rank 0 ends a hung job with MPI_Abort(1) after writing every file. A rank dying only leaves rank 0 running when
 * mpirun was started with --enable-recovery (Open MPI 4; otherwise mpirun kills the job).
 *
 * The job always ends: a rank that died or hung makes rank 0 end the job with MPI_Abort (status 1, or 3
 * when a file could not be written) after writing every file, and MPI_Finalize / MPI_Abort are bounded by
 * LAB_MPI_END_GRACE_S (then _exit with the same status). A rank other than 0 enters MPI_Finalize only once rank 0
 * has written every file and released it (or LAB_MPI_RELEASE_WAIT_S after its last case): Open MPI's finalize waits
 * for every rank, and a rank that ran out of its grace there would take rank 0 down before it wrote anything. Every rank dies with its launcher
 * (PR_SET_PDEATHSIG): a killed mpirun leaves no rank behind.
 *
 * Returns like lab_replay_run on rank 0 (*verdict the merged run's, a failed rank counted in it); on the other ranks
 * *recs is NULL, *n_recs 0 and *verdict ok (exit 0) unless their own harness failed (exit 3). LAB_ERR_UNSUPPORTED when
 * the build has no MPI; LAB_ERR_IO when MPI cannot start (the message says which call) or another rank could not
 * start; LAB_ERR_ARG for a rank without a GPU (above) or a bad LAB_MPI_TEST_FAULT. LAB_MPI_TEST_FAULT (tests only):
 * crash:R or hang:R makes rank R (1 ..) die (SIGKILL) or stall once it has reported half of the cases it has received so
 * far while one of them is still unreported; slow:R makes rank R (0 ..) sleep LAB_MPI_TEST_SLOW_MS after each case it
 * reports; late:0 makes rank 0 wait 3 s, every other rank done, before it writes the merged files (with
 * LAB_MPI_TEST_END_GRACE_S, tests only, a shorter end grace than LAB_MPI_END_GRACE_S). */
lab_status lab_mpi_replay(const lab_replay_opts *opts, FILE *report, lab_verdict *verdict, lab_case_record **recs,
                          size_t *n_recs);
/* A replay of more cases than lab_replay_window_at() runs windowed on every rank (lab_window_run_by): the same windows
 * in the same order, rank 0 dealing each window's seed groups as above and gathering every case of the window (or
 * settling it as above) before the next; a rank asking for a window rank 0 has not reached is told to hold on (every
 * LAB_MPI_GRACE_S / 2 seconds) and answered when it gets there. No rank holds more than a window's records; rank 0
 * writes the set as lab_window_run does (journal included), *recs NULL and *n_recs 0; summary.json's "mpi" says
 * "window" (cases a window; 0 when not windowed). */

#endif
