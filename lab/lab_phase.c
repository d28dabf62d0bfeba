/* lab_phase: marks of a command's phases on stderr (contract in lab_phase.h). */
#include "lab_phase.h"

#include "lab_clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int lab_phase_on;
static double lab_phase_t0;

static void lab_phase_exit(void) { lab_phase("exit"); }

void lab_phase_begin(void)
{
    const char *v = getenv("LAB_PHASES");
    if (lab_phase_on || !v || !*v) return;
    lab_phase_on = 1;
    lab_phase_t0 = lab_clock_now();
    atexit(lab_phase_exit);
}

void lab_phase(const char *what)
{
    if (!lab_phase_on) return;
    char line[256];
    int n = snprintf(line, sizeof line, "lab phase +%.3f s [pid %ld]: %s\n", lab_clock_now() - lab_phase_t0,
                     (long)getpid(), what);
    if (n > (int)sizeof line - 1) n = (int)sizeof line - 1, line[n - 1] = '\n';
    if (write(2, line, (size_t)n) < 0) { /* a mark that cannot be written is lost, nothing else */
    }
}
