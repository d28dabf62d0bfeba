#!/bin/bash
# Session 18, call 4 (4-GPU host): HEAD 5282abb (.visit/lab-h) with the MPS SM share (50%): make replay on 4 GPUs, the
# 1/2/4-GPU scaling table, 4 and 1 GPUs without the CPU cross-checks (.visit/lab-noxc), --mpi -np 2 / -np 4 rounds.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
S=s18c4; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s); LAB=.visit/lab-h
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
left() { [ $(( $(date +%s) - T0 )) -lt "$1" ]; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='*.png' --exclude='*.svg' --exclude='*.html' --exclude='report.json' --exclude='cases' --exclude='*.dat' --exclude='junit.xml' --exclude='traces' --exclude='results.jsonl' --exclude='*.tap' --exclude='plots' $S) 2>/dev/null; }
{ nvidia-smi -L | cut -c1-90; echo "nproc $(nproc)"; cat /sys/fs/cgroup/cpu.max 2>/dev/null; nvidia-smi --query-gpu=driver_version,persistence_mode --format=csv,noheader | head -4; mpirun --version 2>&1 | head -1; } | tee $W/host.txt
I="--seeds 1000 --incident 0001 --incident 0002 --incident 0003 --incident 0004 --incident 0005 --incident 0008"
cmd() { local name=$1 lim=$2; shift 2; el "$name"; local s=$(date +%s%N)
  timeout -s INT $lim "$@" --out $W/$name > $W/$name.log 2>&1; local rc=$?; local e=$(date +%s%N)
  echo "  exit $rc, command $(( (e - s) / 1000000 )) ms; $(grep -E 'cases in' $W/$name.log | tail -1)"
  grep -E "SKIP|ERROR|NOT OK|false" $W/$name.log | grep -v "trace of this" | head -6
  cp $W/$name/summary.json $W/$name.summary.json 2>/dev/null; pack; }
ranks() { grep -A5 "^rank  host" $1 | awk 'NR>1 && NF>5{printf " r%s %s chunks %s cases %ss;", $1, $6, $7, $9} END{print ""}'; }
plain() { local name=$1; el "$name"
  LAB_BIN=$LAB timeout -s INT 60 replay/gpu_scaling.sh --gpus 4 --out $W/$name -- $I --quiet 2>&1 | grep -E "^[0-9] GPU" | head -1; pack; }
mpi() { local name=$1 np=$2 base=$3; el "$name"
  LAB_BIN=$LAB timeout -s INT 70 replay/mpi_scaling.sh --ranks "$np" --out $W/$name -- --backend cuda $I >/dev/null 2>&1
  echo "  mpirun wall $(cut -d' ' -f1 $W/$name/time-np$np | tail -1) s; clock $(grep -o 'in [0-9.]* s' $W/$name/log-np$np | head -1);$(ranks $W/$name/log-np$np)"
  echo "  vs plain: $(python3 replay/mpi_scaling_report.py $base $W/$name/np$np 2>&1 | head -1)"; pack; }
# 1. make replay's command on 4 GPUs (0006 on NCCL through 5282abb's dsh_job, never GPU-run before)
cmd make-replay-4gpu 90 $LAB replay --backend auto
# 2. the scaling table, 1 / 2 / 4 GPUs (the SM share's first 4-GPU run), and 4 GPUs without the CPU cross-checks
el scaling
LAB_BIN=$LAB timeout -s INT 140 replay/gpu_scaling.sh --gpus "1 2 4" --out $W/sc -- $I --quiet > $W/sc.txt 2>&1
grep -E "^[0-9] GPU" $W/sc.txt | sort -u
for g in 1 2 4; do [ -f $W/sc/g$g/results.jsonl ] && python3 replay/case_timeline.py $W/sc/g$g/results.jsonl > $W/sc/g$g.timeline.txt 2>&1 && sed -n 2,3p $W/sc/g$g.timeline.txt; done; pack
for g in 4 1; do left 300 || break; el "noxc g$g"
  LAB_BIN=.visit/lab-noxc timeout -s INT 60 replay/gpu_scaling.sh --gpus $g --out $W/noxc-g$g -- $I --quiet 2>&1 | grep -E "^[0-9] GPU" | head -1
  [ -f $W/noxc-g$g/g$g/results.jsonl ] && python3 replay/case_timeline.py $W/noxc-g$g/g$g/results.jsonl 2>&1 | sed -n 2,3p; pack; done
# 3. --mpi against the plain replay, rounds a, b
for r in a b; do
  left 420 || break
  plain plain-$r
  mpi np2-$r 2 $W/plain-$r/g4
  mpi np4-$r 4 $W/plain-$r/g4
done
el done; pack
