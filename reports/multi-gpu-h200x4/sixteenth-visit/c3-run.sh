#!/bin/bash
# Session 20, call 3 (4-GPU host): the commit's build (n) through `make replay`'s command on 4, 2 and 1 GPUs (0006 on
# NCCL where 2 GPUs exist: the daemons are stopped mid-replay for it, now all at once), with LAB_PHASES.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
S=s20c3; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='results.jsonl' --exclude='plots' --exclude='cases' --exclude='traces' --exclude='*.png' --exclude='*.html' --exclude='report.json' --exclude='junit.xml' --exclude='*.tap' --exclude='*.dat' $S) 2>/dev/null; }
{ nvidia-smi -L | cut -c1-90; echo "nproc $(nproc)"; nvidia-smi --query-gpu=driver_version,persistence_mode --format=csv,noheader | head -1; } | tee $W/host.txt
for g in 0,1,2,3 0,1 0; do n=$(( $(echo $g | tr -cd , | wc -c) + 1 )); el "make replay's command, $n GPU(s)"
  s=$(date +%s%N); LAB_PHASES=1 CUDA_VISIBLE_DEVICES=$g timeout -s INT 120 .visit/lab-n replay --backend auto --no-plots --out $W/mr-g$n > $W/mr-g$n.log 2>&1; rc=$?; e=$(date +%s%N)
  echo "  exit $rc, command $(( (e - s) / 1000000 )) ms; $(grep -E 'cases in' $W/mr-g$n.log | tail -1)"
  grep -E "SKIP|ERROR|NOT OK|rerunning|cuda:" $W/mr-g$n.log | grep -v "trace of this\|lab phase" | head -8
  python3 replay/phase_summary.py $W/mr-g$n.log | grep -v "probe:" > $W/mr-g$n.phases.txt; grep -E "daemons|exit|workers" $W/mr-g$n.phases.txt | tr '\n' ';'; echo
  cp $W/mr-g$n/summary.json $W/mr-g$n.summary.json 2>/dev/null; pack; done
el done; pack
