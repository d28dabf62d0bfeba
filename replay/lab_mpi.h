/* lab_mpi: replay scale-out across MPI ranks (Open MPI): a deterministic split of the cases, one GPU per
 * local rank, results streamed to rank 0, and a rank that dies or hangs reported instead of lost. */
#ifndef LAB_MPI_H
#define LAB_MPI_H

#include <stddef.h>
#include <stdio.h>

#include "lab_replay.h"

/* Grace added to the longest case watchdog of a rank's unreported cases before its silence counts as a
 * hang: covers fork, reporting and MPI latency, never a case's own run time (the watchdog bounds that). */
#define LAB_MPI_GRACE_S 10.0

/* How long MPI_Finalize (or MPI_Abort, when a rank died or hung) may take once the merged files are
 * written: past it the process exits on its own with the status it would have returned. Open MPI's
 * finalize can wait for ever on a dead peer; an integer literal (seconds), it is also printed. */
#define LAB_MPI_END_GRACE_S 20

/* LAB_OK when this build of the lab has MPI (built with MPI=1; sanitizer builds leave it out), else
 * LAB_ERR_UNSUPPORTED with a message that says how to get it. */
lab_status lab_mpi_check(void);

/* This process's rank in the last lab_mpi_replay (0 before one, and in a build without MPI). A command
 * that follows a replay with more work on its files (a report) does that work on rank 0 only. */
int lab_mpi_rank(void);

/* Runs a replay under mpirun, one call per rank (it calls MPI_Init and MPI_Finalize itself, so call it
 * once per process and use no MPI elsewhere). Every rank builds the same case list with
 * lab_replay_cases; case i belongs to rank i % size (round-robin keeps the incident grouping and spreads
 * each incident's cost). A rank runs its share isolated with opts->jobs cases at once, or, when
 * opts->jobs <= 0, (online CPUs / ranks on its host) at least 1. Before any case runs, a rank picks its
 * GPU by local rank among those lab_sched_probe sees, through CUDA_VISIBLE_DEVICES (no CUDA call in the
 * rank process: cases run in forked children, and CUDA does not survive fork). Each finished case goes to
 * rank 0 at once.
 *
 * Rank 0 merges them into the canonical order and reports exactly as lab_replay_run does (table,
 * results.jsonl, summary.json, junit.xml, plots); summary.json also gets "mpi" (ranks, split) and
 * "ranks" (rank, host, pid, local rank, jobs, device, cases, reported, status), added from memory in the
 * staged result set before it replaces the output folder (lab_replay_opts.summary_fields). A rank whose
 * process is gone (same host: /proc says so) has its unreported cases CRASH; one silent for longer than
 * the longest watchdog of its unreported cases plus LAB_MPI_GRACE_S has them HANG; the error of each such case names
 * the rank, host and pid. The replay is then NOT OK whatever the roles, summary.json's "ok" is false, and
 * rank 0 ends a hung job with MPI_Abort(1) after writing every file. A rank dying only leaves rank 0
 * running when mpirun was started with --enable-recovery (Open MPI 4; otherwise mpirun kills the job).
 *
 * The job always ends: a rank that died or hung makes rank 0 end the job with MPI_Abort (status 1, or 3
 * when a file could not be written) after writing every file, and MPI_Finalize / MPI_Abort are bounded by
 * LAB_MPI_END_GRACE_S (then _exit with the same status). Every rank dies with its launcher
 * (PR_SET_PDEATHSIG): a killed mpirun leaves no rank behind.
 *
 * Returns like lab_replay_run on rank 0 (*verdict the merged run's, a failed rank counted in it); on the
 * other ranks *recs is NULL, *n_recs 0 and *verdict ok (exit 0) unless their own harness failed (exit 3). LAB_ERR_UNSUPPORTED when the build has no MPI; LAB_ERR_IO when MPI cannot
 * start (the message says which call) or the ranks disagree on the case list. LAB_MPI_TEST_FAULT=crash:R
 * or hang:R (tests only) makes rank R die (SIGKILL) or stall after reporting half of its cases. */
lab_status lab_mpi_replay(const lab_replay_opts *opts, FILE *report, lab_verdict *verdict, lab_case_record **recs,
                          size_t *n_recs);

#endif
