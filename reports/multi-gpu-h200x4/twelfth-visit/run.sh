#!/bin/bash
# Session 15, call 4 (4-GPU host, the last of the device budget): the scaling table with build 3f6a1a5 (.visit/lab-h):
# 1000 seeds of the one-GPU incidents on 1, 2 and 4 GPUs, default -j, twice.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
S=s15c4; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
left() { [ $(( $(date +%s) - T0 )) -lt "$1" ]; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='*.png' --exclude='*.svg' --exclude='*.html' --exclude='report.json' --exclude='cases' --exclude='*.dat' --exclude='junit.xml' --exclude='traces' --exclude='results.jsonl' --exclude='*.tap' --exclude='plots' $S) 2>/dev/null; }
{ nvidia-smi -L | cut -c1-90; echo "nproc $(nproc)"; nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1; } | tee $W/host.txt
I="--seeds 1000 --incident 0001 --incident 0002 --incident 0003 --incident 0004 --incident 0005 --incident 0008"
for r in a b; do
  left 200 || break
  el "scaling $r"
  LAB_BIN=.visit/lab-h timeout -s INT 140 replay/gpu_scaling.sh --gpus "1 2 4" --out $W/sc-$r -- $I --quiet > $W/sc-$r.txt 2>&1
  grep -E "^[0-9] GPU" $W/sc-$r.txt | sort -u
  for g in 1 2 4; do [ -f $W/sc-$r/g$g/results.jsonl ] && python3 replay/case_timeline.py $W/sc-$r/g$g/results.jsonl > $W/sc-$r/g$g.timeline.txt 2>&1 && sed -n 2p $W/sc-$r/g$g.timeline.txt; done
  pack
done
el done; pack
