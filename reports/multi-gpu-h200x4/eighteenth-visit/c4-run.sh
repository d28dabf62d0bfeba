#!/bin/bash
# Call 4 (one GPU): where do threads of one process lose time in 0003 (and 0001)? The probe of call 1 (ctp-pt3: a
# stream and a device pool a thread), 16 workers, with the process's CPU time split user / system and its page faults
# and context switches (/usr/bin/time): as it is; with glibc's heap kept (no mmap/munmap a large buffer, no trimming:
# the largest mmap threshold glibc accepts, 32 MiB); with spinning waits (LAB_CUDA_SYNC=auto); and 16 processes.
set -u
for f in .visit-x/*.gz; do b=$(basename $f .gz); [ -x .visit/$b ] || { mkdir -p .visit; gzip -dc $f > .visit/$b; chmod +x .visit/$b; }; done
export LD_LIBRARY_PATH=$PWD/.gpu/lib
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,uuid --format=csv,noheader | tee $R/host.txt; nproc >> $R/host.txt
S=200
HEAP="MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=17179869184 MALLOC_TOP_PAD_=67108864"
probe() { # name incidents mode T [env...]
    local name=$1 inc=$2 mode=$3 T=$4; shift 4
    echo "== $name: $inc $mode T=$T $*" | tee -a $R/probe.txt
    env "$@" /usr/bin/time -f "time: %e s wall, %U s user, %S s sys, %R minor faults, %w voluntary / %c involuntary switches" \
        timeout 60 .visit/ctp-pt3 $mode $T $S $R/$name.cases $inc >> $R/probe.txt 2> $R/$name.err
    echo "rc=$? $(grep -c . $R/$name.err) stderr lines; $(grep '^time:' $R/$name.err)" >> $R/probe.txt
}
mps_on()  { export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-p CUDA_MPS_LOG_DIRECTORY=/tmp/mps-l; mkdir -p /tmp/mps-p /tmp/mps-l; nvidia-cuda-mps-control -d; sleep 0.5; }
mps_off() { echo quit | nvidia-cuda-mps-control; sleep 1; unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY; }
S=20 probe warm "0003" threads 4
for inc in 0003 0001; do
  for round in a b; do
    probe thr-$inc-$round "$inc" threads 16 CUDA_DEVICE_MAX_CONNECTIONS=16
    probe thr-heap-$inc-$round "$inc" threads 16 CUDA_DEVICE_MAX_CONNECTIONS=16 $HEAP
    probe thr-spin-$inc-$round "$inc" threads 16 CUDA_DEVICE_MAX_CONNECTIONS=16 LAB_CUDA_SYNC=auto
    mps_on
    probe proc-$inc-$round "$inc" procs 16 CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50
    mps_off
  done
done
for inc in 0003 0001; do for f in $R/*-$inc-*.cases; do cmp -s $f $R/proc-$inc-a.cases && echo "same outcomes: $(basename $f)" || echo "DIFFERENT: $(basename $f)"; done; done >> $R/probe.txt
grep -v "^incident" $R/probe.txt | grep -E "^==|^mode|^contexts|^00|^rc"
tar czf $OUT/c4.tgz -C $OUT r && rm -rf $R
