#!/bin/bash
# Call 6 (one GPU): with lab_hcopy (copies staged through pinned memory of the thread), threads (per-thread default
# stream) against processes (MPS, half the SMs each) with the probe as in call 2; main's replay against this build's
# (.visit/lab-hc), interleaved; the test suite with a GPU.
set -u
for f in .visit-x/*.gz; do b=$(basename $f .gz); [ -x .visit/$b ] || { mkdir -p .visit; gzip -dc $f > .visit/$b; chmod +x .visit/$b; }; done
export LD_LIBRARY_PATH=$PWD/.gpu/lib NCCL_NVLS_ENABLE=0
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/host.txt; nproc >> $R/host.txt
S=200; INC="0001 0002 0003 0004 0005"
probe() { # name build mode T [env...]
    local name=$1 b=$2 mode=$3 T=$4; shift 4
    echo "== $name: $b $mode T=$T $*" | tee -a $R/probe.txt
    env "$@" timeout 60 .visit/ctp-$b $mode $T $S $R/$name.cases $INC >> $R/probe.txt 2> $R/$name.err
    echo "rc=$? $(wc -l < $R/$name.err) stderr lines" >> $R/probe.txt
}
mps_on()  { export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-p CUDA_MPS_LOG_DIRECTORY=/tmp/mps-l; mkdir -p /tmp/mps-p /tmp/mps-l; nvidia-cuda-mps-control -d; sleep 0.5; }
mps_off() { echo quit | nvidia-cuda-mps-control; sleep 1; unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY; }
S=20 probe warm pt2 threads 4
for round in a b; do
  probe thr16-pt2-$round pt2 threads 16 CUDA_DEVICE_MAX_CONNECTIONS=16
  mps_on
  probe proc16-pt2-$round pt2 procs 16 CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50
  probe proc16-legacy2-$round legacy2 procs 16 CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50
  mps_off
done
for f in $R/*.cases; do cmp -s $f $R/proc16-pt2-a.cases && echo "same outcomes: $(basename $f)" || echo "DIFFERENT: $(basename $f) $(diff $f $R/proc16-pt2-a.cases | grep -c '^<')"; done >> $R/probe.txt
I="--seeds 300 --incident 0001 --incident 0002 --incident 0003 --incident 0004 --incident 0005 --incident 0008"
for round in a b; do
  for b in base hc; do
    s=$(date +%s%N); timeout 90 .visit/lab-$b replay --backend cuda $I --no-plots --out $R/rep-$b-$round > $R/rep-$b-$round.log 2>&1; rc=$?; e=$(date +%s%N)
    echo "$b $round exit $rc, command $(( (e - s) / 1000000 )) ms; $(grep -E 'cases in' $R/rep-$b-$round.log | tail -1)" >> $R/replays.txt
    grep -E "NOT OK|ERROR|SKIP" $R/rep-$b-$round.log | head -3 >> $R/replays.txt
    cp $R/rep-$b-$round/summary.json $R/rep-$b-$round.summary.json 2>/dev/null
  done
done
for x in hc-a base-b hc-b; do echo "== base-a vs $x"; python3 replay/mpi_scaling_report.py $R/rep-base-a $R/rep-$x 2>&1 | tail -4; done >> $R/replays.txt
mkdir -p build && cp .visit/lab-hc build/lab
LAB_BIN=build/lab timeout 200 .visit/lab-tests --jobs 16 > $R/suite.txt 2>&1; echo "suite exit $?" >> $R/replays.txt
grep -E "^\[FAIL\]|Synthesis" $R/suite.txt > $R/suite-summary.txt
cat $R/probe.txt | grep -v "^incident"; cat $R/replays.txt $R/suite-summary.txt
tar czf $OUT/c6.tgz -C $OUT --exclude='results.jsonl' --exclude='cases' --exclude='traces' --exclude='report.json' --exclude='*.html' r
