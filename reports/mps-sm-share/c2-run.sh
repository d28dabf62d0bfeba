#!/bin/bash
# Session 17, call 2 (the host's GPUs, 2 or 4): does an MPS client's context come up faster with fewer SMs
# (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE)? build/cuda_start_probe, 16 processes a GPU, one MPS daemon a GPU, gate 4, one
# work queue (as the lab's workers); then the lab's replays on every GPU and on one with and without the setting.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1 CUDA_DEVICE_MAX_CONNECTIONS=1
S=s17c2; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s); LAB=.visit/lab-n
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
left() { [ $(( $(date +%s) - T0 )) -lt "$1" ]; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='results.jsonl' --exclude='plots' $S) 2>/dev/null; }
nvidia-smi -L | cut -c1-90 | tee $W/host.txt
mapfile -t uuids < <(nvidia-smi -L | sed -n 's/.*UUID: \(GPU-[^)]*\)).*/\1/p'); n=${#uuids[@]}
mpsdir=$(mktemp -d)
for ((g = 0; g < n; g++)); do mkdir -p $mpsdir/$g/pipe $mpsdir/$g/log
  CUDA_VISIBLE_DEVICES=${uuids[$g]} CUDA_MPS_PIPE_DIRECTORY=$mpsdir/$g/pipe CUDA_MPS_LOG_DIRECTORY=$mpsdir/$g/log nvidia-cuda-mps-control -d; done
list=$(IFS=,; echo "${uuids[*]}")
probe() { local tag=$1; shift
  env "$@" PROBE_MPS=$mpsdir PROBE_GPUS=$list build/cuda_start_probe $((16 * n)) 4 > $W/probe-$tag.raw 2>&1
  awk -v t="$tag" '/^child/{n++; if($6>ctx)ctx=$6; s+=$6-$4; cpu+=$16} /^procs/{d=$0} END{printf "%-8s last ctx ready %.2f s, mean ctx %.3f s, cpu %.2f s a child; %s\n", t, ctx, s/n, cpu/n, d}' $W/probe-$tag.raw | tee -a $W/probe.txt; }
probe warm X=1
for r in a b; do
  probe base-$r X=1
  probe atp50-$r CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50
  probe atp25-$r CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25
  probe atp12-$r CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=12
done
for ((g = 0; g < n; g++)); do echo quit | CUDA_MPS_PIPE_DIRECTORY=$mpsdir/$g/pipe nvidia-cuda-mps-control; done; sleep 2
pack
I="--seeds 1000 --incident 0001 --incident 0002 --incident 0003 --incident 0004 --incident 0005 --incident 0008"
rep() { local tag=$1 g=$2; shift 2; left 540 || return; el "$tag"
  env "$@" LAB_BIN=$LAB timeout -s INT 60 replay/gpu_scaling.sh --gpus $g --out $W/$tag -- $I --quiet 2>&1 | grep -E "^[0-9] GPU" | head -1
  [ -f $W/$tag/g$g/results.jsonl ] && python3 replay/case_timeline.py $W/$tag/g$g/results.jsonl 2>&1 | sed -n 2,4p; pack; }
for r in a b; do
  rep g$n-base-$r $n X=1
  rep g$n-atp25-$r $n CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25
  rep g1-base-$r 1 X=1
  rep g1-atp25-$r 1 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25
done
el done; pack
