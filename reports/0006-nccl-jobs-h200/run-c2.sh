#!/bin/bash
# Session 16, call 2 (same kind): 0006 on NCCL over every GPU, a82bafd (one job, .visit/old) against this tree's
# build (jobs that take turns, .visit/lab-n), 100 seeds each, same host; then make replay's command with the new build.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
S=s16c2; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='*.png' --exclude='*.svg' --exclude='*.html' --exclude='report.json' --exclude='cases' --exclude='*.dat' --exclude='junit.xml' --exclude='traces' --exclude='*.tap' --exclude='plots' $S) 2>/dev/null; }
{ nvidia-smi -L | cut -c1-90; echo "nproc $(nproc)"; } | tee $W/host.txt
t() { local name=$1; shift; el "$name"; local s=$(date +%s%N); "$@" > $W/$name.log 2>&1; local rc=$?; local e=$(date +%s%N)
  echo "$name: exit $rc, command $(( (e - s) / 1000000 )) ms"; grep -vE "trace of this|^progress|^0006 seed|^\[" $W/$name.log | grep -E "^0006|^0007|cases in|^scheduler" | head -12
  pack; }
t old-0006-100 env LAB_ROOT=.visit/old timeout -s INT 200 .visit/old/build/lab replay --backend cuda --incident 0006 --seeds 100 --out $W/old-0006-100
t new-0006-100 timeout -s INT 120 .visit/lab-n replay --backend cuda --incident 0006 --seeds 100 --out $W/new-0006-100
t make-replay timeout -s INT 120 .visit/lab-n replay --backend auto --out $W/make-replay
el done; pack
