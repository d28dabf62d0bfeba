#!/bin/bash
# Call 2 (the same warm H100 as call 1): the probe without 0008 (whose unbatched cases filled call 1), threads (per-thread
# default stream) against processes (MPS, half the SMs each), two rounds; then main's replay against the new build's.
set -u
for f in .visit-x/*.gz; do b=$(basename $f .gz); [ -x .visit/$b ] || { mkdir -p .visit; gzip -dc $f > .visit/$b; chmod +x .visit/$b; }; done
export LD_LIBRARY_PATH=$PWD/.gpu/lib NCCL_NVLS_ENABLE=0
R=$OUT/r; mkdir -p $R
S=200; INC="0001 0002 0003 0004 0005"
probe() { # name build mode T [env...]
    local name=$1 b=$2 mode=$3 T=$4; shift 4
    echo "== $name: $b $mode T=$T $*" | tee -a $R/probe.txt
    env "$@" timeout 60 .visit/ctp-$b $mode $T $S $R/$name.cases $INC >> $R/probe.txt 2> $R/$name.err
    echo "rc=$? $(wc -l < $R/$name.err) stderr lines" >> $R/probe.txt
}
mps_on()  { export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-p CUDA_MPS_LOG_DIRECTORY=/tmp/mps-l; mkdir -p /tmp/mps-p /tmp/mps-l; nvidia-cuda-mps-control -d; sleep 0.5; }
mps_off() { echo quit | nvidia-cuda-mps-control; sleep 1; unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY; }
for round in a b; do
  probe thr16-pt-$round pt threads 16 CUDA_DEVICE_MAX_CONNECTIONS=16
  mps_on
  probe proc16-pt-$round pt procs 16 CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50
  probe thr16-pt-mps50-$round pt threads 16 CUDA_DEVICE_MAX_CONNECTIONS=16 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50
  mps_off
done
probe thr16-legacy legacy threads 16 CUDA_DEVICE_MAX_CONNECTIONS=16
for f in $R/*.cases; do cmp -s $f $R/proc16-pt-a.cases && echo "same outcomes: $(basename $f)" || echo "DIFFERENT: $(basename $f) $(diff $f $R/proc16-pt-a.cases | grep -c '^<')"; done >> $R/probe.txt
I="--seeds 300 --incident 0001 --incident 0002 --incident 0003 --incident 0004 --incident 0005 --incident 0008"
for round in a b; do
  for b in base new; do
    s=$(date +%s%N); timeout 90 .visit/lab-$b replay --backend cuda $I --no-plots --out $R/rep-$b-$round > $R/rep-$b-$round.log 2>&1; rc=$?; e=$(date +%s%N)
    echo "$b $round exit $rc, command $(( (e - s) / 1000000 )) ms; $(grep -E 'cases in' $R/rep-$b-$round.log | tail -1)" >> $R/replays.txt
    grep -E "NOT OK|ERROR|SKIP" $R/rep-$b-$round.log | head -3 >> $R/replays.txt
    cp $R/rep-$b-$round/summary.json $R/rep-$b-$round.summary.json 2>/dev/null
  done
done
for x in new-a base-b new-b; do echo "== base-a vs $x"; python3 replay/mpi_scaling_report.py $R/rep-base-a $R/rep-$x 2>&1 | tail -4; done >> $R/replays.txt
tar czf $OUT/c2.tgz -C $OUT --exclude='results.jsonl' --exclude='cases' --exclude='traces' --exclude='report.json' --exclude='*.html' r
