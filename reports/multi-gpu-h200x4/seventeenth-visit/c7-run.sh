#!/bin/bash
# Call 7 (one GPU): is the threads' remaining cost the process's page faults? glibc returns a freed block above its
# mmap threshold to the kernel (munmap) and the next case faults its pages in again, and the faults of one process's
# threads take turns on its memory map. With the thresholds raised, freed memory stays in the heap and is reused.
set -u
for f in .visit-x/*.gz; do b=$(basename $f .gz); [ -x .visit/$b ] || { mkdir -p .visit; gzip -dc $f > .visit/$b; chmod +x .visit/$b; }; done
export LD_LIBRARY_PATH=$PWD/.gpu/lib
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/host.txt
S=200; INC="0001 0002 0003 0004 0005"
HEAP="MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=4294967296 MALLOC_TOP_PAD_=268435456"
probe() { # name mode T [env...]
    local name=$1 mode=$2 T=$3; shift 3
    echo "== $name: $mode T=$T $*" | tee -a $R/probe.txt
    env "$@" timeout 60 .visit/ctp-pt2 $mode $T $S $R/$name.cases $INC >> $R/probe.txt 2> $R/$name.err
    echo "rc=$? $(wc -l < $R/$name.err) stderr lines" >> $R/probe.txt
}
mps_on()  { export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-p CUDA_MPS_LOG_DIRECTORY=/tmp/mps-l; mkdir -p /tmp/mps-p /tmp/mps-l; nvidia-cuda-mps-control -d; sleep 0.5; }
mps_off() { echo quit | nvidia-cuda-mps-control; sleep 1; unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY; }
S=20 probe warm threads 4
probe thr16 threads 16 CUDA_DEVICE_MAX_CONNECTIONS=16
probe thr16-heap-a threads 16 CUDA_DEVICE_MAX_CONNECTIONS=16 $HEAP
mps_on
probe proc16 procs 16 CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50
probe proc16-heap procs 16 CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 $HEAP
mps_off
probe thr16-heap-b threads 16 CUDA_DEVICE_MAX_CONNECTIONS=16 $HEAP
for f in $R/*.cases; do cmp -s $f $R/proc16.cases && echo "same outcomes: $(basename $f)" || echo "DIFFERENT: $(basename $f) $(diff $f $R/proc16.cases | grep -c '^<')"; done >> $R/probe.txt
grep -v "^incident" $R/probe.txt
