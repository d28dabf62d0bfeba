#!/bin/bash
# Session 15, call 1 (2-GPU host), build 3f6a1a5 (.visit/lab-h): 1000 seeds of the one-GPU incidents on 1 and 2 GPUs
# (default -j, and -j 48), --mpi with 1 and 2 ranks against the plain 2-GPU replay, make replay's command on 2 and 1
# GPUs, lab report --seeds 1000 on 1 GPU; then a second round of the scalings as time allows.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
S=s15c1; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s); LAB=.visit/lab-h
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
left() { [ $(( $(date +%s) - T0 )) -lt "$1" ]; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='*.png' --exclude='*.svg' --exclude='*.html' --exclude='report.json' --exclude='cases' --exclude='*.dat' --exclude='junit.xml' --exclude='traces' --exclude='results.jsonl' --exclude='*.tap' --exclude='plots' $S) 2>/dev/null; }
{ nvidia-smi -L | cut -c1-90; echo "nproc $(nproc)"; cat /sys/fs/cgroup/cpu.max 2>/dev/null; nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1; nvidia-smi topo -m | head -4; mpirun --version 2>&1 | head -1; } | tee $W/host.txt
I="--seeds 1000 --incident 0001 --incident 0002 --incident 0003 --incident 0004 --incident 0005 --incident 0008"
sc() { local name=$1 gp=$2; shift 2; el "$name"
  LAB_BIN=$LAB timeout -s INT 130 replay/gpu_scaling.sh --gpus "$gp" --out $W/$name -- $I --quiet "$@" > $W/$name.txt 2>&1
  grep -E "^[0-9] GPU|^scheduler" $W/$name.txt | sort -u
  for g in $gp; do [ -f $W/$name/g$g/results.jsonl ] && python3 replay/case_timeline.py $W/$name/g$g/results.jsonl > $W/$name/g$g.timeline.txt 2>&1 && sed -n 2p $W/$name/g$g.timeline.txt; done
  pack; }
mpi() { local name=$1 base=$2; el "$name"
  LAB_BIN=$LAB timeout -s INT 150 replay/mpi_scaling.sh --ranks "1 2" --out $W/$name -- --backend cuda $I > $W/$name.txt 2>&1
  tail -12 $W/$name.txt
  for np in 1 2; do echo "  np$np: mpirun wall $(cut -d' ' -f1 $W/$name/time-np$np | tail -1) s; vs plain 2 GPUs: $(python3 replay/mpi_scaling_report.py $base $W/$name/np$np 2>&1 | head -1)"; done
  pack; }
t() { local name=$1; shift; el "$name"; local s=$(date +%s%N); "$@" > $W/$name.log 2>&1; local rc=$?; local e=$(date +%s%N)
  echo "$name: exit $rc, command $(( (e - s) / 1000000 )) ms; $(grep -E 'cases in|OK|NOT OK' $W/$name.log | tail -2 | tr '\n' ' ')"
  grep -E "^scheduler|SKIP|ERROR" $W/$name.log | head -8
  [ -f $W/$name/summary.json ] && cp $W/$name/summary.json $W/$name.summary.json; pack; }
sc sc-a "1 2"
sc j48-a "1 2" -j 48
mpi mpi-a $W/sc-a/g2
CUDA_VISIBLE_DEVICES=0,1 t make-replay-2gpu timeout -s INT 100 $LAB replay --backend auto --out $W/make-replay-2gpu
CUDA_VISIBLE_DEVICES=0 t make-replay-1gpu timeout -s INT 60 $LAB replay --backend auto --out $W/make-replay-1gpu
CUDA_VISIBLE_DEVICES=0 t report-1000-1gpu timeout -s INT 120 $LAB report --backend cuda --seeds 1000 --out $W/report-1000-1gpu
left 420 && sc sc-b "1 2"
left 470 && mpi mpi-b $W/sc-b/g2
left 500 && sc j48-b "2" -j 48
el done; pack
