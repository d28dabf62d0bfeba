#!/bin/bash
# Session 15, call 3 (2-GPU host): a fed answer's mixed runs cut for the whole run (.visit/lab-x) against 3f6a1a5
# (.visit/lab-h): plain 2 GPUs (lab-h), 2 ranks (lab-h), 2 ranks (lab-x), three rounds; then 1 rank (lab-x) and make
# replay's command on 2 GPUs (lab-x).
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
S=s15c3; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
left() { [ $(( $(date +%s) - T0 )) -lt "$1" ]; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='*.png' --exclude='*.svg' --exclude='*.html' --exclude='report.json' --exclude='cases' --exclude='*.dat' --exclude='junit.xml' --exclude='traces' --exclude='results.jsonl' --exclude='*.tap' --exclude='plots' $S) 2>/dev/null; }
nvidia-smi -L | cut -c1-90; nproc
I="--seeds 1000 --incident 0001 --incident 0002 --incident 0003 --incident 0004 --incident 0005 --incident 0008"
ranks() { grep -A3 "^rank  host" $1 | awk 'NR>1{printf " r%s %s chunks %s cases %ss;", $1, $6, $7, $9} END{print ""}'; }
plain() { local name=$1; el "$name"
  LAB_BIN=.visit/lab-h timeout -s INT 60 replay/gpu_scaling.sh --gpus 2 --out $W/$name -- $I --quiet 2>&1 | grep -E "^[0-9] GPU" | head -1
  python3 .visit/rank_tl.py $W/$name/g2/results.jsonl | head -2 > $W/$name.tl; cat $W/$name.tl; pack; }
mpi() { local name=$1 bin=$2 np=$3 base=$4; el "$name"
  LAB_BIN=$bin timeout -s INT 70 replay/mpi_scaling.sh --ranks "$np" --out $W/$name -- --backend cuda $I >/dev/null 2>&1
  echo "  mpirun wall $(cut -d' ' -f1 $W/$name/time-np$np | tail -1) s; clock $(grep -o 'in [0-9.]* s' $W/$name/log-np$np | head -1);$(ranks $W/$name/log-np$np)"
  echo "  vs plain: $(python3 replay/mpi_scaling_report.py $base $W/$name/np$np 2>&1 | head -1)"
  python3 .visit/rank_tl.py $W/$name/np$np/results.jsonl > $W/$name.tl; head -2 $W/$name.tl; pack; }
for r in a b c; do
  plain plain-$r
  mpi np2h-$r .visit/lab-h 2 $W/plain-$r/g2
  mpi np2x-$r .visit/lab-x 2 $W/plain-$r/g2
done
left 420 && mpi np1x .visit/lab-x 1 $W/plain-c/g2
if left 470; then el make-replay-2gpu-x; s=$(date +%s%N)
  CUDA_VISIBLE_DEVICES=0,1 timeout -s INT 80 .visit/lab-x replay --backend auto --out $W/make-replay-2gpu-x > $W/make-replay-2gpu-x.log 2>&1; rc=$?
  e=$(date +%s%N); echo "exit $rc, command $(( (e - s) / 1000000 )) ms; $(grep -E 'cases in' $W/make-replay-2gpu-x.log | tail -1)"
  cp $W/make-replay-2gpu-x/summary.json $W/make-replay-2gpu-x.summary.json 2>/dev/null; fi
el done; pack
