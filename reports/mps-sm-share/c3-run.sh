#!/bin/bash
# Session 17, call 3 (2-GPU host): the build with each MPS client capped to a share of its GPU's SMs (.visit/lab-m,
# default 25%) on 1 and 2 GPUs, against the whole GPU (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100, as before) and 50% / 12%,
# rounds interleaved; outcomes compared case by case; then make replay's command on 2 GPUs.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
S=s17c3; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s); LAB=.visit/lab-m
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
left() { [ $(( $(date +%s) - T0 )) -lt "$1" ]; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='results.jsonl' --exclude='plots' --exclude='cases' --exclude='traces' --exclude='*.png' --exclude='*.html' --exclude='report.json' --exclude='junit.xml' --exclude='*.tap' --exclude='*.dat' $S) 2>/dev/null; }
nvidia-smi -L | cut -c1-90 | tee $W/host.txt; nproc | tee -a $W/host.txt
I="--seeds 1000 --incident 0001 --incident 0002 --incident 0003 --incident 0004 --incident 0005 --incident 0008"
rep() { local tag=$1 g=$2; shift 2; left 500 || return; el "$tag"
  env "$@" LAB_BIN=$LAB timeout -s INT 60 replay/gpu_scaling.sh --gpus $g --out $W/$tag -- $I --quiet 2>&1 | grep -E "^[0-9] GPU" | head -1
  grep -m1 "each client may use" $W/$tag/g$g.log | cut -c1-220
  [ -f $W/$tag/g$g/results.jsonl ] && python3 replay/case_timeline.py $W/$tag/g$g/results.jsonl 2>&1 | sed -n 2,4p; pack; }
for r in a b; do
  rep g1-s25-$r 1 X=1
  rep g1-s100-$r 1 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100
  rep g2-s25-$r 2 X=1
  rep g2-s100-$r 2 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100
done
rep g1-s50-a 1 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50
rep g1-s12-a 1 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=12
rep g2-s50-a 2 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50
el "outcomes against the whole GPU"
for t in g1-s25-a:g1-s100-a g2-s25-a:g1-s100-a g1-s50-a:g1-s100-a g1-s12-a:g1-s100-a; do a=${t%%:*}; b=${t##*:}
  [ -f $W/$a/g${a:1:1}/results.jsonl ] && [ -f $W/$b/g1/results.jsonl ] && echo "$a vs $b: $(python3 replay/mpi_scaling_report.py $W/$b/g1 $W/$a/g${a:1:1} 2>&1 | head -1)"; done | tee $W/compare.txt
if left 540; then el make-replay-2gpu; s=$(date +%s%N)
  timeout -s INT 55 $LAB replay --backend auto --out $W/make-replay-2gpu > $W/make-replay-2gpu.log 2>&1; rc=$?
  e=$(date +%s%N); echo "exit $rc, command $(( (e - s) / 1000000 )) ms; $(grep -E 'cases in' $W/make-replay-2gpu.log | tail -1)"
  grep -m1 "each client may use" $W/make-replay-2gpu.log | cut -c1-220
  cp $W/make-replay-2gpu/summary.json $W/make-replay-2gpu.summary.json 2>/dev/null; fi
el done; pack
