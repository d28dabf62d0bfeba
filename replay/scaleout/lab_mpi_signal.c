/* lab_mpi_signal: how an `--mpi` rank's process meets its end: mpirun's interrupt, its launcher's death, MPI's end
 * bounded by a deadline (lab_mpi_signal.h). */
#include "lab_mpi_signal.h"

#ifdef LAB_HAVE_MPI

#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "lab_clock.h"
#include "lab_isolate.h"
#include "lab_mpi_limits.h"
#include "lab_testknobs.h"

#define LAB_MPI_STR2(x) #x
#define LAB_MPI_STR(x) LAB_MPI_STR2(x)

/* The exit status the end-of-job deadline uses when MPI_Finalize or MPI_Abort does not return in time. */
static volatile sig_atomic_t lab_mpi_end_code;

static void lab_mpi_deadline_hit(int sig)
{
    (void)sig;
    static const char msg[] = "lab replay --mpi: MPI did not end within its end grace (" LAB_MPI_STR(LAB_MPI_END_GRACE_S)
                              " s unless a test set LAB_MPI_TEST_END_GRACE_S); exiting without it\n";
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
    _exit(lab_mpi_end_code);
}

void lab_mpi_deadline_arm(int code)
{
    lab_mpi_end_code = code;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = lab_mpi_deadline_hit;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    const char *t = getenv(LAB_TESTKNOB_MPI_END_GRACE); /* tests only: a short grace */
    int grace = t && atoi(t) > 0 ? atoi(t) : LAB_MPI_END_GRACE_S;
    alarm((unsigned)grace);
}

void lab_mpi_finalize(int code)
{
    fflush(NULL);
    /* Interrupted: mpirun is ending the job (it signalled every rank and kills them a second later). MPI_Finalize would
     * wait for that kill; everything is written, so the process leaves at once. */
    if (lab_isolate_interrupted()) _exit(code);
    lab_mpi_deadline_arm(code);
    MPI_Finalize();
    alarm(0);
}

/* mpirun's end of a job (Open MPI 4.1, measured): on SIGINT or SIGTERM it sends every rank SIGCONT at once, SIGTERM
 * odls_base_sigkill_timeout (1 s) later, SIGKILL another second later; the ranks sit in process groups of their own, so
 * a Ctrl-C at a terminal reaches mpirun alone. So the SIGCONT is the ranks' first word of the end, a second before the
 * SIGTERM: a rank that was not stopped (job control: mpirun stops ranks with SIGSTOP and resumes them with SIGCONT)
 * takes it as the interrupt. "Not stopped": its ticker (below) noted the time less than LAB_MPI_CONT_GAP_MS before the
 * SIGCONT (a stop stops the ticker with the rest of the process and leaves a gap as long as the stop). The gap is 1 s:
 * a busy host can keep a thread off its core for a few hundred ms (an interrupt took 1.1 s with a 250 ms gap on the
 * run loop's clock on a 2-core machine at load 3.7), while a job-control stop a person makes and ends (Ctrl-Z, fg) lasts
 * longer. Without a ticker (no thread could be made) every rank waits for mpirun's SIGTERM, a second later. */
#define LAB_MPI_CONT_GAP_MS 1000
static _Atomic long long lab_mpi_turned_ms; /* the ticker's last note (monotonic ms; 0: no ticker) */

static long long lab_mpi_now_ms(void) { return (long long)(lab_clock_now() * 1000.0); }

static void lab_mpi_turned(void) { lab_mpi_turned_ms = lab_mpi_now_ms(); }

static void lab_mpi_on_cont(int sig)
{
    (void)sig;
    long long t = lab_mpi_turned_ms;
    if (t && lab_mpi_now_ms() - t < LAB_MPI_CONT_GAP_MS) lab_isolate_interrupt(SIGTERM); /* what mpirun sends next */
}

/* The clock of "not stopped": a thread that only sleeps 20 ms and notes the time. A sleeper gets its core back at once
 * on a busy host, where the run loop can wait behind its own workers for longer than the gap; a SIGSTOP stops it with
 * the rest of the process. */
static void *lab_mpi_ticker(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 20 * 1000000L};
    for (;;) {
        lab_mpi_turned();
        nanosleep(&ts, NULL);
    }
    return NULL;
}

void lab_mpi_catch_cont(void)
{
    pthread_t t;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* the ticker takes no signal: the handlers run on the rank's own thread */
    if (pthread_create(&t, NULL, lab_mpi_ticker, NULL) == 0) pthread_detach(t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = lab_mpi_on_cont;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGCONT, &sa, NULL);
}

void lab_mpi_die_with_launcher(void)
{
    pid_t parent = getppid();
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return;
    if (getppid() != parent) raise(SIGKILL);
}

#endif
