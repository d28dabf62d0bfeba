/* lab_mpi_limits: the time limits of an `--mpi` replay (graces and waits, in seconds unless named otherwise), part of
 * lab_mpi.h's contract (it includes this header); the modules of lab_mpi read them from here, so that none of them
 * includes lab_mpi.h, the entry's own header. */
#ifndef LAB_MPI_LIMITS_H
#define LAB_MPI_LIMITS_H

/* Grace added to the longest case watchdog of the run before a rank's silence counts as a hang (and before a rank stops
 * waiting for rank 0's answer): covers fork, reporting and MPI latency, never a case's own run time (the watchdog
 * bounds that). */
#define LAB_MPI_GRACE_S 10.0

/* How long MPI_Finalize (or MPI_Abort, when a rank died or hung) may take once the merged files are
 * written: past it the process exits on its own with the status it would have returned. Open MPI's
 * finalize can wait for ever on a dead peer; an integer literal (seconds), it is also printed. */
#define LAB_MPI_END_GRACE_S 20

/* How long a rank whose cases are all reported waits for rank 0 to write the merged files and release it before it
 * enters MPI_Finalize on its own (seconds; rank 0 runs at most its last chunk and the report meanwhile). */
#define LAB_MPI_RELEASE_WAIT_S 900

/* An interrupt (SIGINT or SIGTERM to mpirun, which sends every rank SIGCONT at once, SIGTERM a second later and SIGKILL
 * a second after that; a rank that was not stopped takes the SIGCONT as the interrupt, lab_mpi_signal.c): every rank
 * stops starting cases and reports what finished; rank 0 waits this long (seconds) at most for the others' word, then
 * writes the result set of the finished cases with the resume command, as a plain replay does; every rank then exits
 * without MPI_Finalize (which would wait for mpirun's kill). */
#define LAB_MPI_INTERRUPT_WAIT_S 0.3

/* LAB_MPI_TEST_FAULT=slow:R (tests only) makes rank R sleep this long after each case it reports: a stand-in for a
 * slow host, to show that dealing on demand gives it less work. */
#define LAB_MPI_TEST_SLOW_MS 250

#endif
