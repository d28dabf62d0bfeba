/* lab_bg: work a process starts now and needs later, on a background thread of its own (a CUDA seed batch's CPU
 * cross-checks, made while the batch's GPU launches run instead of after them), with the lab's error contract.
 *
 * Contract. A job is fn(arg), queued with lab_bg_start and collected exactly once, by lab_bg_wait (its status) or
 * lab_bg_cancel (not needed after all). Jobs run in the order they were started on LAB_BG_THREADS threads per
 * process, made on first use, at nice +LAB_BG_NICE, so that the work a worker needs now (its cases) comes first,
 * and with every signal blocked, so that signals sent to the process reach the threads that handle them.
 * Collecting never deadlocks on an idle or busy background thread: a job no thread has begun runs on the collecting
 * thread (lab_bg_wait) or not at all (lab_bg_cancel); a running one is waited for. So a job's result is the same
 * whichever thread made it, and the background thread only moves work earlier. fn must be safe to run on another
 * thread than the one that started it, concurrently with that thread, and must not collect jobs itself.
 * After fork() the child has no background thread and an empty queue: a job the parent had queued runs on the
 * child's collecting thread; one the parent was running cannot be collected in the child (LAB_ERR_ARG). */
#ifndef LAB_BG_H
#define LAB_BG_H

#include "lab_err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Background threads per process, and their nice increment (Linux: per thread). */
#define LAB_BG_THREADS 1
#define LAB_BG_NICE 5

typedef struct lab_bg_job lab_bg_job;
/* A job: LAB_OK, or an error status with its message set through lab_err_set on the thread that runs it. */
typedef lab_status (*lab_bg_fn)(void *arg);

/* Queues fn(arg). Returns the job, or NULL when it cannot be queued (no memory, no thread could be made): then
 * nothing runs, and the caller does the work itself when it needs it. */
lab_bg_job *lab_bg_start(lab_bg_fn fn, void *arg);

/* Collects job: runs it here if no thread has begun it, else waits until it has finished; frees it. Returns fn's
 * status, with fn's message as this thread's lab error. NULL: LAB_OK. */
lab_status lab_bg_wait(lab_bg_job *job);

/* Collects a job whose result is not needed: one no thread has begun never runs; a running one is waited for (fn
 * may use arg until then); frees it. NULL: nothing. */
void lab_bg_cancel(lab_bg_job *job);

#ifdef __cplusplus
}
#endif

#endif
