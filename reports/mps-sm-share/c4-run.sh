#!/bin/bash
# Session 17, call 4 (2-GPU host): which share, 50% or 25% of a GPU's SMs a client (.visit/lab-m, the share set through
# CUDA_MPS_ACTIVE_THREAD_PERCENTAGE): 1 and 2 GPUs, two rounds interleaved.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
S=s17c4; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s); LAB=.visit/lab-m
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
left() { [ $(( $(date +%s) - T0 )) -lt "$1" ]; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='results.jsonl' --exclude='plots' --exclude='cases' --exclude='traces' $S) 2>/dev/null; }
nvidia-smi -L | cut -c1-90 | tee $W/host.txt; nproc | tee -a $W/host.txt
I="--seeds 1000 --incident 0001 --incident 0002 --incident 0003 --incident 0004 --incident 0005 --incident 0008"
rep() { local tag=$1 g=$2 need=$3; shift 3; left $need || return; el "$tag"
  env "$@" LAB_BIN=$LAB timeout -s INT 45 replay/gpu_scaling.sh --gpus $g --out $W/$tag -- $I --quiet 2>&1 | grep -E "^[0-9] GPU" | head -1
  [ -f $W/$tag/g$g/results.jsonl ] && python3 replay/case_timeline.py $W/$tag/g$g/results.jsonl 2>&1 | sed -n 4p; pack; }
for r in a b; do
  rep g1-s50-$r 1 210 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50
  rep g1-s25-$r 1 210 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25
  rep g2-s50-$r 2 225 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50
  rep g2-s25-$r 2 225 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25
done
el done; pack
