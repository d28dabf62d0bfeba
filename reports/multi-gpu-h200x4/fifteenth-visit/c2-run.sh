#!/bin/bash
# Session 19, call 2 (one GPU): do a process's case threads serialise on synchronous pageable copies? copyprobe (T
# threads of one context: pageable, pinned, staged through pinned), then where case threads wait: a wall-clock profile
# (sampler.so, LAB_PROF_CLOCK=wall) of the case-threads build, T = 4, beside main's pool unprofiled.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
S=s19c2; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='results.jsonl' --exclude='plots' --exclude='cases' --exclude='*.png' --exclude='*.html' --exclude='report.json' --exclude='junit.xml' $S) 2>/dev/null; }
{ nvidia-smi -L | cut -c1-90; echo "nproc $(nproc)"; nvidia-smi --query-gpu=driver_version,persistence_mode --format=csv,noheader | head -1; } | tee $W/host.txt
{ for sz in "4096 200" "256 2000"; do set -- $sz
  for t in 1 4 8 16; do for m in 0 1 2; do timeout 60 .visit/copyprobe $t $m $1 $2; done; done; done; } 2>&1 | tee $W/copyprobe.txt
pack
I="--seeds 200 --incident 0001 --incident 0002 --incident 0008"
el "main -j 16"; /usr/bin/time -f "%e s wall" timeout -s INT 120 .visit/lab-h replay --backend cuda --no-plots -j 16 --quiet --out $W/h $I 2>&1 | tail -2
el "ct T=4 -j 16"; LAB_CT_SHARE_MEMBUGS=1 /usr/bin/time -f "%e s wall" timeout -s INT 120 .visit/lab-ct replay --backend cuda --no-plots -j 16 --case-threads 4 --quiet --out $W/ct4 $I 2>&1 | tail -2
mkdir -p $W/prof
el "ct T=4 -j 16, wall profile"; LAB_PROF_CLOCK=wall LAB_PROF_US=2000 LAB_PROF_DIR=$W/prof LD_PRELOAD=$PWD/.visit/sampler.so LAB_CT_SHARE_MEMBUGS=1 /usr/bin/time -f "%e s wall" timeout -s INT 150 .visit/lab-ct replay --backend cuda --no-plots -j 16 --case-threads 4 --quiet --out $W/ct4p $I 2>&1 | tail -2
for d in h ct4 ct4p; do python3 replay/case_timeline.py $W/$d/results.jsonl > $W/$d.timeline.txt 2>&1; cp $W/$d/summary.json $W/$d.summary.json; sed -n 1,3p $W/$d.timeline.txt; done
du -sh $W/prof; el done; pack
