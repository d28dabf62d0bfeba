#!/bin/bash
# Call 1 (one GPU): case threads against case processes with the same cases (case_threads_probe), in the build with
# the lab's default stream (.visit/ctp-legacy, legacy stream) and in one built with --default-stream per-thread
# (.visit/ctp-pt); then main's replay against the new build's (the sync change), interleaved.
set -u
for f in .visit-x/*.gz; do b=$(basename $f .gz); [ -x .visit/$b ] || { mkdir -p .visit; gzip -dc $f > .visit/$b; chmod +x .visit/$b; }; done
export LD_LIBRARY_PATH=$PWD/.gpu/lib NCCL_NVLS_ENABLE=0
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv > $R/host.txt; nproc >> $R/host.txt
S=${S:-200}
INC="0001 0002 0003 0004 0005 0008"
probe() { # name build mode T [env...]
    local name=$1 b=$2 mode=$3 T=$4; shift 4
    echo "== $name: $b $mode T=$T $*" | tee -a $R/probe.txt
    env "$@" timeout 240 .visit/ctp-$b $mode $T $S $R/$name.cases $INC >> $R/probe.txt 2> $R/$name.err
    echo "rc=$? $(wc -l < $R/$name.err) stderr lines" >> $R/probe.txt
}
mps_on()  { export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-p CUDA_MPS_LOG_DIRECTORY=/tmp/mps-l; mkdir -p /tmp/mps-p /tmp/mps-l; nvidia-cuda-mps-control -d; sleep 0.5; }
mps_off() { echo quit | nvidia-cuda-mps-control; sleep 1; unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY; }

# warm-up: one short run of each build (module loading, page cache)
S=20 probe warm-legacy legacy threads 4
S=20 probe warm-pt pt threads 4
probe thr16-legacy legacy threads 16 CUDA_DEVICE_MAX_CONNECTIONS=16
probe thr16-pt pt threads 16 CUDA_DEVICE_MAX_CONNECTIONS=16
mps_on
probe proc16-legacy legacy procs 16 CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50
probe proc16-pt pt procs 16 CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50
mps_off
probe thr16-pt-b pt threads 16 CUDA_DEVICE_MAX_CONNECTIONS=16
probe thr16-legacy-b legacy threads 16 CUDA_DEVICE_MAX_CONNECTIONS=16
probe thr4-pt pt threads 4 CUDA_DEVICE_MAX_CONNECTIONS=4
mps_on
probe proc4-legacy legacy procs 4 CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50
probe proc16-legacy-b legacy procs 16 CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50
mps_off
for f in $R/*.cases; do cmp -s $f $R/proc16-legacy.cases && echo "same outcomes: $(basename $f)" || echo "DIFFERENT: $(basename $f) $(diff $f $R/proc16-legacy.cases | grep -c '^<')"; done >> $R/probe.txt

# the lab's replay: main (5dc65a9) and the new build, 300 seeds of the one-GPU incidents, interleaved
I="--seeds 300 --incident 0001 --incident 0002 --incident 0003 --incident 0004 --incident 0005 --incident 0008"
for round in a b; do
  for b in base new; do
    s=$(date +%s%N); timeout 120 .visit/lab-$b replay --backend cuda $I --no-plots --out $R/rep-$b-$round > $R/rep-$b-$round.log 2>&1; rc=$?; e=$(date +%s%N)
    echo "$b $round exit $rc, command $(( (e - s) / 1000000 )) ms; $(grep -E 'cases in' $R/rep-$b-$round.log | tail -1)" >> $R/replays.txt
  done
done
tar czf $OUT/c1.tgz -C $OUT --exclude='results.jsonl' --exclude='cases' --exclude='traces' --exclude='report.json' --exclude='*.html' r
