/* lab_mpi_signal: how an `--mpi` rank's process meets its end: mpirun's interrupt (its SIGCONT taken as the interrupt
 * by a rank that was not stopped), its launcher's death (the rank dies with it), and MPI's own end bounded by
 * LAB_MPI_END_GRACE_S (a deadline that exits the process with its status when MPI_Finalize or MPI_Abort hangs). Process
 * state only (signal handlers, an alarm): no rank context, no message. */
#ifndef LAB_MPI_SIGNAL_H
#define LAB_MPI_SIGNAL_H

/* Bounds what follows (MPI_Finalize, MPI_Abort) by LAB_MPI_END_GRACE_S: when it does not return in time,
 * the process exits with `code` from a SIGALRM handler. Everything the caller wants kept must be written
 * and flushed before. */
void lab_mpi_deadline_arm(int code);

/* Ends MPI within LAB_MPI_END_GRACE_S (see lab_mpi_deadline_arm), everything flushed before. */
void lab_mpi_finalize(int code);

/* Takes mpirun's SIGCONT as the interrupt (lab_isolate_interrupt(SIGTERM), what mpirun sends next) when the rank was
 * not stopped: a ticker thread this starts (blocking every signal) noted the time less than LAB_MPI_CONT_GAP_MS
 * (lab_mpi_signal.c) before the SIGCONT. */
void lab_mpi_catch_cont(void);

/* A rank never outlives its launcher (mpirun, orted, srun's step daemon): killed with it. The parent is
 * compared before and after, so a launcher that died in between is caught too. */
void lab_mpi_die_with_launcher(void);

#endif
