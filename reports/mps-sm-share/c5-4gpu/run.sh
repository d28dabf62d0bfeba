#!/bin/bash
# Session 18, call 5 (4-GPU host): the MPS SM share on 4 GPUs, A/B: HEAD (.visit/lab-h, each client 50% of its GPU's
# SMs) against the whole GPU (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100), rounds interleaved, 4 GPUs then 1; wall, GPUs
# busy, outcomes case by case.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
S=s18c5; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s); LAB=.visit/lab-h
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
left() { [ $(( $(date +%s) - T0 )) -lt "$1" ]; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='results.jsonl' --exclude='plots' --exclude='cases' --exclude='traces' --exclude='*.png' --exclude='*.html' --exclude='report.json' --exclude='junit.xml' --exclude='*.tap' --exclude='*.dat' $S) 2>/dev/null; }
{ nvidia-smi -L | cut -c1-90; echo "nproc $(nproc)"; nvidia-smi --query-gpu=driver_version,persistence_mode --format=csv,noheader | head -1; } | tee $W/host.txt
I="--seeds 1000 --incident 0001 --incident 0002 --incident 0003 --incident 0004 --incident 0005 --incident 0008"
rep() { local tag=$1 g=$2; shift 2; left 420 || return; el "$tag"
  env "$@" LAB_BIN=$LAB timeout -s INT 60 replay/gpu_scaling.sh --gpus $g --out $W/$tag -- $I --quiet 2>&1 | grep -E "^[0-9] GPU" | head -1
  grep -m1 "each client may use" $W/$tag/g$g.log | cut -c1-200
  [ -f $W/$tag/g$g/results.jsonl ] && python3 replay/case_timeline.py $W/$tag/g$g/results.jsonl > $W/$tag.timeline.txt 2>&1 && sed -n 1,3p $W/$tag.timeline.txt
  cp $W/$tag/g$g/summary.json $W/$tag.summary.json 2>/dev/null; cp $W/$tag/g$g.util.csv $W/$tag.util.csv 2>/dev/null; pack; }
for r in a b; do
  rep g4-s50-$r 4 X=1
  rep g4-s100-$r 4 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100
done
rep g1-s50-a 1 X=1
rep g1-s100-a 1 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100
rep g4-s50-c 4 X=1
rep g4-s100-c 4 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100
el "outcomes"
for t in g4-s100-a:g4-s50-a:4 g1-s100-a:g4-s50-a:4 g1-s50-a:g1-s100-a:1; do IFS=: read a b g <<< "$t"
  ga=$([ ${a:1:1} = 4 ] && echo g4 || echo g1); gb=$([ ${b:1:1} = 4 ] && echo g4 || echo g1)
  [ -f $W/$a/$ga/results.jsonl ] && [ -f $W/$b/$gb/results.jsonl ] && echo "$a vs $b: $(python3 replay/mpi_scaling_report.py $W/$b/$gb $W/$a/$ga 2>&1 | head -1)"; done | tee $W/compare.txt
el done; pack
