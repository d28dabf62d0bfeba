/* lab_mps_replay: the MPS daemons of one CUDA replay, started for the GPUs the machine probe (lab_device) finds. */
#ifndef LAB_MPS_REPLAY_H
#define LAB_MPS_REPLAY_H

#include <stddef.h>
#include <stdio.h>

#include "lab_err.h"
#include "lab_mps.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Starts the replay's MPS for the GPUs this process sees: one daemon a GPU wherever each one's UUID is known (lab_mps.h
 * says why; also for one GPU, since a daemon started for a GPU chosen by index numbers it 0 for its clients), else one
 * for all (the GPUs and their UUIDs from lab_device_machine); then probes a context through every daemon (each in a
 * child process). LAB_OK: *m runs, confirmed
 * (lab_mps_confirm). Otherwise nothing is left running: LAB_ERR_UNSUPPORTED where MPS is not installed or the user runs
 * an MPS of their own (lab_mps_start), LAB_ERR_DEVICE where no context came through a daemon (the workers' contexts then
 * take turns on the GPUs), LAB_ERR_IO where a daemon could not be started. What was done, or why not, goes to `say`
 * as one line "<prefix>cuda: ..." (say NULL: quiet), except where MPS is simply not installed. Called by `lab replay`
 * before its workers start, and under --mpi by each rank once it has taken its share of its host's GPUs (ranks of one
 * host hold disjoint GPUs, so their daemons serve disjoint GPUs). */
lab_status lab_mps_replay_start(lab_mps *m, FILE *say, const char *prefix);

#ifdef __cplusplus
}
#endif

#endif
