#!/bin/bash
# Call 1 (one GPU): does a device pool of each thread's own take the threads' remaining cost away? ctp-pt2 is the
# seventeenth visit's probe (main, per-thread default stream: one process-wide pool), ctp-pt3 the same with
# lab_devmem's pools a thread (every stream-ordered allocation of a case from its thread's pool). Then main's replay
# against this build's (lab-tp, the lab's own legacy-stream build), interleaved; compute-sanitizer over the memory-bug
# incidents with lab-tp; the test suite with a GPU (lab-tests of lab-tp).
set -u
for f in .visit-x/*.gz; do b=$(basename $f .gz); [ -x .visit/$b ] || { mkdir -p .visit; gzip -dc $f > .visit/$b; chmod +x .visit/$b; }; done
export LD_LIBRARY_PATH=$PWD/.gpu/lib NCCL_NVLS_ENABLE=0
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,uuid --format=csv,noheader | tee $R/host.txt; nproc >> $R/host.txt
S=200; INC="0001 0002 0003 0004 0005"
probe() { # name build mode T [env...]
    local name=$1 b=$2 mode=$3 T=$4; shift 4
    echo "== $name: $b $mode T=$T $*" | tee -a $R/probe.txt
    env "$@" timeout 60 .visit/ctp-$b $mode $T $S $R/$name.cases $INC >> $R/probe.txt 2> $R/$name.err
    echo "rc=$? $(wc -l < $R/$name.err) stderr lines" >> $R/probe.txt
}
mps_on()  { export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-p CUDA_MPS_LOG_DIRECTORY=/tmp/mps-l; mkdir -p /tmp/mps-p /tmp/mps-l; nvidia-cuda-mps-control -d; sleep 0.5; }
mps_off() { echo quit | nvidia-cuda-mps-control; sleep 1; unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY; }
S=20 probe warm pt3 threads 4
for round in a b; do
  probe thr16-pt2-$round pt2 threads 16 CUDA_DEVICE_MAX_CONNECTIONS=16
  probe thr16-pt3-$round pt3 threads 16 CUDA_DEVICE_MAX_CONNECTIONS=16
  mps_on
  probe proc16-pt3-$round pt3 procs 16 CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50
  probe proc16-pt2-$round pt2 procs 16 CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50
  mps_off
done
for f in $R/*.cases; do cmp -s $f $R/proc16-pt2-a.cases && echo "same outcomes: $(basename $f)" || echo "DIFFERENT: $(basename $f) $(diff $f $R/proc16-pt2-a.cases | grep -c '^<')"; done >> $R/probe.txt
grep -v "^incident" $R/probe.txt
I="--seeds 300 --incident 0001 --incident 0002 --incident 0003 --incident 0004 --incident 0005 --incident 0008"
for round in a b; do
  for b in main tp; do
    s=$(date +%s%N); timeout 90 .visit/lab-$b replay --backend cuda $I --no-plots --out $R/rep-$b-$round > $R/rep-$b-$round.log 2>&1; rc=$?; e=$(date +%s%N)
    echo "$b $round exit $rc, command $(( (e - s) / 1000000 )) ms; $(grep -E 'cases in' $R/rep-$b-$round.log | tail -1)" >> $R/replays.txt
    grep -E "NOT OK|ERROR|SKIP" $R/rep-$b-$round.log | head -3 >> $R/replays.txt
    cp $R/rep-$b-$round/summary.json $R/rep-$b-$round.summary.json 2>/dev/null
  done
done
for x in tp-a main-b tp-b; do echo "== main-a vs $x"; python3 replay/mpi_scaling_report.py $R/rep-main-a $R/rep-$x 2>&1 | tail -4; done >> $R/replays.txt
cat $R/replays.txt
mkdir -p build && cp .visit/lab-tp build/lab && cp .visit/lab-tests-tp build/lab-tests
STEPS=sanitize timeout 150 replay/gpu_check.sh > $R/sanitize.txt 2>&1; echo "sanitize exit $?" >> $R/sanitize.txt
timeout 90 build/lab replay --backend cuda --incident 0008 --seeds 20 --no-plots --out $R/rep-0008 > $R/rep-0008.log 2>&1; echo "0008 20 seeds exit $?" >> $R/sanitize.txt
grep -E "racecheck|NOT OK|ERROR|cases in" $R/rep-0008.log | head -8 >> $R/sanitize.txt
tail -30 $R/sanitize.txt
LAB_BIN=build/lab timeout 220 build/lab-tests --jobs 16 > $R/suite.txt 2>&1; echo "suite exit $?" >> $R/suite.txt
grep -E "^\[FAIL\]|Synthesis|suite exit" $R/suite.txt > $R/suite-summary.txt
LAB_BIN=build/lab timeout 60 build/lab-tests --filter 'incidents/a_case_on_a_thread*' --verbose > $R/threads-test.txt 2>&1; echo "threads test exit $?" >> $R/threads-test.txt
LAB_BIN=build/lab timeout 60 build/lab-tests --filter 'mpi/a_hosts_gpus*' --verbose > $R/mpi-test.txt 2>&1; echo "mpi test exit $?" >> $R/mpi-test.txt
cat $R/suite-summary.txt; tail -5 $R/threads-test.txt $R/mpi-test.txt
tar czf $OUT/c1.tgz -C $OUT --exclude='results.jsonl' --exclude='cases' --exclude='traces' --exclude='report.json' --exclude='*.html' r
