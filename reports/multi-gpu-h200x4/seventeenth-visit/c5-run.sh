#!/bin/bash
# Call 5 (one GPU): ctx_ops_probe, the CUDA calls of a case one kind at a time, 16 threads of one context against 16
# processes under MPS (half the SMs each, one work queue a context, as the lab's workers), and one worker alone.
set -u
for f in .visit-x/*.gz; do b=$(basename $f .gz); [ -x .visit/$b ] || { mkdir -p .visit; gzip -dc $f > .visit/$b; chmod +x .visit/$b; }; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
P=.visit/ctx_ops_probe
mps_on()  { export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-p CUDA_MPS_LOG_DIRECTORY=/tmp/mps-l; mkdir -p /tmp/mps-p /tmp/mps-l; nvidia-cuda-mps-control -d; sleep 0.5; }
mps_off() { echo quit | nvidia-cuda-mps-control; sleep 1; unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY; }
$P threads 1 50 > /dev/null   # warm-up
for round in a b; do
  echo "== round $round"
  $P threads 1 200
  CUDA_DEVICE_MAX_CONNECTIONS=16 $P threads 16 200
  mps_on
  CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 $P procs 16 200
  mps_off
  $P procs 16 200
done
