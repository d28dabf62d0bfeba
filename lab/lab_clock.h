/* lab_clock: the one clock the lab times itself by. */
#ifndef LAB_CLOCK_H
#define LAB_CLOCK_H

#include <time.h>

/* Seconds on the monotonic clock (CLOCK_MONOTONIC): for intervals, deadlines and marks, never for dates; the same
 * clock in a process and its forked children. */
static inline double lab_clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
