#!/bin/bash
# Session 19, call 1 (4-GPU host): why case threads were slow. Main (.visit/lab-h) against the case-threads branch merged
# with main (.visit/lab-ct), memory-bug cases alone in their process (as the branch had it) or beside the others
# (LAB_CT_SHARE_MEMBUGS=1); 4 GPUs then 1; wall, GPUs busy, timeline, outcomes case by case against main's one GPU.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
S=s19c1; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
left() { [ $(( $(date +%s) - T0 )) -lt "$1" ]; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='results.jsonl' --exclude='plots' --exclude='cases' --exclude='traces' --exclude='*.png' --exclude='*.html' --exclude='report.json' --exclude='junit.xml' --exclude='*.tap' --exclude='*.dat' $S) 2>/dev/null; }
{ nvidia-smi -L | cut -c1-90; echo "nproc $(nproc)"; nvidia-smi --query-gpu=driver_version,persistence_mode --format=csv,noheader | head -1; } | tee $W/host.txt
I="--seeds 1000 --incident 0001 --incident 0002 --incident 0003 --incident 0004 --incident 0005 --incident 0008"
# rep TAG GPUS BINARY [ENV=VAL ...] [-- extra lab args]
rep() { local tag=$1 g=$2 lab=$3; shift 3; local envs=() ; while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done; [ "${1:-}" = "--" ] && shift
  left 500 || return; el "$tag"
  env "${envs[@]}" LAB_BIN=$lab timeout -s INT 75 replay/gpu_scaling.sh --gpus $g --out $W/$tag -- $I --quiet "$@" 2>&1 | grep -E "^[0-9] GPU" | head -1
  grep -m1 -E "^scheduler|workers" $W/$tag/g$g.log | cut -c1-220
  [ -f $W/$tag/g$g/results.jsonl ] && python3 replay/case_timeline.py $W/$tag/g$g/results.jsonl > $W/$tag.timeline.txt 2>&1 && sed -n 1,4p $W/$tag.timeline.txt
  cp $W/$tag/g$g/summary.json $W/$tag.summary.json 2>/dev/null; cp $W/$tag/g$g.util.csv $W/$tag.util.csv 2>/dev/null; pack; }
rep h-g4-a 4 .visit/lab-h X=1
rep ct4-g4 4 .visit/lab-ct X=1 -- --case-threads 4
rep ct4s-g4 4 .visit/lab-ct LAB_CT_SHARE_MEMBUGS=1 -- --case-threads 4
rep ct8s-g4 4 .visit/lab-ct LAB_CT_SHARE_MEMBUGS=1 -- --case-threads 8
rep ct16s-g4 4 .visit/lab-ct LAB_CT_SHARE_MEMBUGS=1 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 -- --case-threads 16
rep h-g4-b 4 .visit/lab-h X=1
rep h-g1 1 .visit/lab-h X=1
rep ct8s-g1 1 .visit/lab-ct LAB_CT_SHARE_MEMBUGS=1 -- --case-threads 8
rep ct4s-g1 1 .visit/lab-ct LAB_CT_SHARE_MEMBUGS=1 -- --case-threads 4
el "outcomes against main's one GPU"
for t in h-g4-a:4 ct4-g4:4 ct4s-g4:4 ct8s-g4:4 ct16s-g4:4 h-g4-b:4 ct8s-g1:1 ct4s-g1:1; do IFS=: read a g <<< "$t"
  [ -f $W/$a/g$g/results.jsonl ] && echo "$a: $(python3 replay/mpi_scaling_report.py $W/h-g1/g1 $W/$a/g$g 2>&1 | head -3 | tr '\n' ' ')"; done | tee $W/compare.txt
for t in ct4-g4:4 ct4s-g4:4 ct8s-g4:4 ct16s-g4:4 ct8s-g1:1 ct4s-g1:1; do IFS=: read a g <<< "$t"; echo "$a first_run: $(grep -c first_run $W/$a/g$g/results.jsonl 2>/dev/null)"; done | tee -a $W/compare.txt
el done; pack
