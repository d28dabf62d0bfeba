#!/bin/bash
# Session 19, call 5 (4-GPU host): main against case threads (lab_hcopy; a work queue a case thread in the workers
# only, the probes keeping one), rounds interleaved; outcomes against main's first 4-GPU run.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
S=s19c5; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
left() { [ $(( $(date +%s) - T0 )) -lt "$1" ]; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='results.jsonl' --exclude='plots' --exclude='cases' --exclude='traces' --exclude='*.png' --exclude='*.html' --exclude='report.json' --exclude='junit.xml' --exclude='*.tap' --exclude='*.dat' $S) 2>/dev/null; }
{ nvidia-smi -L | cut -c1-90; echo "nproc $(nproc)"; nvidia-smi --query-gpu=driver_version,persistence_mode --format=csv,noheader | head -1; } | tee $W/host.txt
I="--seeds 1000 --incident 0001 --incident 0002 --incident 0003 --incident 0004 --incident 0005 --incident 0008"
# rep TAG GPUS BINARY [ENV=VAL ...] [-- extra lab args]
rep() { local tag=$1 g=$2 lab=$3; shift 3; local envs=() ; while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done; [ "${1:-}" = "--" ] && shift
  left 330 || return; el "$tag"
  env "${envs[@]}" LAB_BIN=$lab timeout -s INT 75 replay/gpu_scaling.sh --gpus $g --out $W/$tag -- $I --quiet "$@" 2>&1 | grep -E "^[0-9] GPU" | head -1
  grep -m1 -E "^scheduler|workers" $W/$tag/g$g.log | cut -c1-220
  [ -f $W/$tag/g$g/results.jsonl ] && python3 replay/case_timeline.py $W/$tag/g$g/results.jsonl > $W/$tag.timeline.txt 2>&1 && sed -n 1,4p $W/$tag.timeline.txt
  cp $W/$tag/g$g/summary.json $W/$tag.summary.json 2>/dev/null; cp $W/$tag/g$g.util.csv $W/$tag.util.csv 2>/dev/null; pack; }
for r in a b c; do
rep h-g4-$r 4 .visit/lab-h X=1
rep c4-g4-$r 4 .visit/lab-ct3 LAB_CT_SHARE_MEMBUGS=1 -- --case-threads 4
done
rep c8-g4-a 4 .visit/lab-ct3 LAB_CT_SHARE_MEMBUGS=1 -- --case-threads 8
el "outcomes against main's first 4-GPU run"
for t in h-g4-b:4 h-g4-c:4 c4-g4-a:4 c4-g4-b:4 c4-g4-c:4 c8-g4-a:4; do IFS=: read a g <<< "$t"
  [ -f $W/$a/g$g/results.jsonl ] && echo "$a: $(python3 replay/mpi_scaling_report.py $W/h-g4-a/g4 $W/$a/g$g 2>&1 | head -3 | tr '\n' ' ')"; done | tee $W/compare.txt
for t in c4-g4-a:4 c4-g4-b:4 c4-g4-c:4 c8-g4-a:4; do IFS=: read a g <<< "$t"; echo "$a first_run: $(grep -c first_run $W/$a/g$g/results.jsonl 2>/dev/null)"; done | tee -a $W/compare.txt
el done; pack
