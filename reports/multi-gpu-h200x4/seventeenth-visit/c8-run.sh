#!/bin/bash
# Call 8 (one GPU): is the threads' remaining cost the device pool? Its release threshold (LAB_DEVMEM_KEEP_MB, 512 MiB)
# is a process's: 16 processes keep 16 x 512 MiB between synchronisations, 16 threads 512 MiB in all, so the threads'
# pool may give memory back at every wait and map it again for the next case. Here it is raised to 16 GiB.
set -u
for f in .visit-x/*.gz; do b=$(basename $f .gz); [ -x .visit/$b ] || { mkdir -p .visit; gzip -dc $f > .visit/$b; chmod +x .visit/$b; }; done
export LD_LIBRARY_PATH=$PWD/.gpu/lib
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/host.txt
S=200; INC="0001 0002 0003 0004 0005"
KEEP="LAB_DEVMEM_KEEP_MB=16384"
probe() { # name mode T [env...]
    local name=$1 mode=$2 T=$3; shift 3
    echo "== $name: $mode T=$T $*" | tee -a $R/probe.txt
    env "$@" timeout 60 .visit/ctp-pt2 $mode $T $S $R/$name.cases $INC >> $R/probe.txt 2> $R/$name.err
    echo "rc=$? $(wc -l < $R/$name.err) stderr lines" >> $R/probe.txt
}
mps_on()  { export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-p CUDA_MPS_LOG_DIRECTORY=/tmp/mps-l; mkdir -p /tmp/mps-p /tmp/mps-l; nvidia-cuda-mps-control -d; sleep 0.5; }
mps_off() { echo quit | nvidia-cuda-mps-control; sleep 1; unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY; }
S=20 probe warm threads 4
probe thr16-keep-a threads 16 CUDA_DEVICE_MAX_CONNECTIONS=16 $KEEP
probe thr16 threads 16 CUDA_DEVICE_MAX_CONNECTIONS=16
probe thr16-keep-b threads 16 CUDA_DEVICE_MAX_CONNECTIONS=16 $KEEP
mps_on
probe proc16 procs 16 CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50
mps_off
for f in $R/*.cases; do cmp -s $f $R/proc16.cases && echo "same outcomes: $(basename $f)" || echo "DIFFERENT: $(basename $f) $(diff $f $R/proc16.cases | grep -c '^<')"; done >> $R/probe.txt
grep -v "^incident" $R/probe.txt
