#!/bin/bash
# Session 15, call 2 (same 2-GPU host, warm): per-case sums of call 1's plain 2-GPU and --mpi runs; then lab report
# --backend cuda --seeds 1000 on both GPUs, 0006 on NCCL included.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
S=s15c2; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s); LAB=.visit/lab-h
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='*.png' --exclude='*.svg' --exclude='*.html' --exclude='report.json' --exclude='cases' --exclude='*.dat' --exclude='junit.xml' --exclude='traces' --exclude='results.jsonl' --exclude='*.tap' --exclude='plots' $S) 2>/dev/null; }
nvidia-smi -L | cut -c1-90
P=/tmp/w/s15c1
[ -d $P ] && python3 .visit/rank_tl.py $P/sc-a/g2/results.jsonl $P/mpi-a/np1/results.jsonl $P/mpi-a/np2/results.jsonl $P/j48-a/g2/results.jsonl > $W/rank-tl.txt 2>&1; head -3 $W/rank-tl.txt; pack
el report
s=$(date +%s%N)
CUDA_VISIBLE_DEVICES=0,1 timeout -s INT 540 $LAB report --backend cuda --seeds 1000 --out $W/report-1000-2gpu > $W/report-1000-2gpu.log 2>&1; rc=$?
e=$(date +%s%N); echo "report: exit $rc, command $(( (e - s) / 1000000 )) ms"
cp $W/report-1000-2gpu/summary.json $W/report-1000-2gpu.summary.json 2>/dev/null
grep -vE "^\s*$" $W/report-1000-2gpu.log | tail -45
el done; pack
