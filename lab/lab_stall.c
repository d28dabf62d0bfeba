/* lab_stall: a test's way to hold a command in one of its phases (LAB_STALL=PHASE), so that an interrupt can be
 * delivered there deterministically. */
#include "lab_stall.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lab_isolate.h"
#include "lab_testknobs.h"

void lab_stall_point(const char *phase)
{
    const char *want = getenv(LAB_TESTKNOB_STALL);
    if (!want || !phase || strcmp(want, phase) != 0) return;
    fprintf(stderr, "lab: stalled in %s (LAB_STALL)\n", phase);
    fflush(stderr);
    struct timespec step = {0, 10 * 1000 * 1000};
    for (int i = 0; i < 6000 && !lab_isolate_interrupted(); ++i) nanosleep(&step, NULL);
}
