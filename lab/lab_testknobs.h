/* lab_testknobs: the environment variables that exist for the lab's tests, named in one place. Each is inert unless
 * set, and none is meant for users: a test sets one to reach a state a real run reaches only by chance or at scale (an
 * interrupt in a given phase, a rank that dies, a window of 20 cases instead of 65536). Product files read them through
 * these names only. (The variables a user may set, LAB_ROOT, LAB_CPUS, LAB_PHASES, LAB_CUDA_SYNC, LAB_DEVMEM and
 * LAB_DEVMEM_KEEP_MB, are documented with their modules and in docs/.) */
#ifndef LAB_TESTKNOBS_H
#define LAB_TESTKNOBS_H

/* PHASE: a command holds in that phase (planning, collecting, writing, plotting, html, reading) until an interrupt
 * arrives, so a test delivers its signal there (lab_stall.h). */
#define LAB_TESTKNOB_STALL "LAB_STALL"
/* N: reports and plots read a stated sample of the cases above N instead of LAB_RESREAD_SAMPLE_AT (lab_resread.h). */
#define LAB_TESTKNOB_SAMPLE_AT "LAB_SAMPLE_AT"
/* N: a replay of more than N cases runs a window at a time instead of above LAB_REPLAY_WINDOW_AT (lab_window.h). */
#define LAB_TESTKNOB_REPLAY_WINDOW "LAB_REPLAY_WINDOW"
/* K: a replay kills itself with SIGKILL half way through the K-th case's line of its journal (lab_journal.h). */
#define LAB_TESTKNOB_JOURNAL_KILL "LAB_JOURNAL_TEST_KILL"
/* crash:R, hang:R, slow:R or late:R: `--mpi` rank R misbehaves so (lab_mpi.c). */
#define LAB_TESTKNOB_MPI_FAULT "LAB_MPI_TEST_FAULT"
/* S: the grace MPI's end is given before the rank exits anyway, instead of LAB_MPI_END_GRACE_S (lab_mpi_signal.c). */
#define LAB_TESTKNOB_MPI_END_GRACE "LAB_MPI_TEST_END_GRACE_S"
/* THREADS,BLOCKS: the launch shape of the deterministic semi-CRF reduction, to show that its results do not depend on
 * it (lab_semicrf_run.cu, tests/test_bench.c). */
#define LAB_TESTKNOB_DET_LAUNCH "LAB_SEMICRF_DET_LAUNCH"

#endif
