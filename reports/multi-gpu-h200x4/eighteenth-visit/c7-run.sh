#!/bin/bash
# Call 7 (4-GPU host): the build of call 2 on three times the seeds (3000 of the one-GPU incidents, 69000 cases) on 4,
# 1 and 2 GPUs, so that the start-up weighs a third as much: how far the scaling goes once it is paid.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
for f in .visit-x/*.gz; do b=$(basename $f .gz); [ -x .visit/$b ] || { mkdir -p .visit; gzip -dc $f > .visit/$b; chmod +x .visit/$b; }; done
S=c7; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s); L=.visit/lab-h
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
left() { [ $(( $(date +%s) - T0 )) -lt "$1" ]; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='results.jsonl' --exclude='plots' --exclude='cases' --exclude='traces' --exclude='*.png' --exclude='*.html' --exclude='report.json' --exclude='junit.xml' --exclude='*.tap' --exclude='*.dat' $S) 2>/dev/null; }
{ nvidia-smi -L | cut -c1-90; echo "nproc $(nproc)"; nvidia-smi --query-gpu=driver_version,persistence_mode --format=csv,noheader | head -1; mpirun --version 2>&1 | head -1; } | tee $W/host.txt
I="--seeds 3000 --incident 0001 --incident 0002 --incident 0003 --incident 0004 --incident 0005 --incident 0008"
rep() { local tag=$1 g=$2; shift 2
  left 500 || return; el "$tag"
  env LAB_PHASES=1 LAB_BIN=$L timeout -s INT 150 replay/gpu_scaling.sh --gpus $g --out $W/$tag -- $I --quiet "$@" 2>&1 | grep -E "^[0-9] GPU" | head -1
  python3 replay/phase_summary.py $W/$tag/g$g.log > $W/$tag.phases.txt 2>&1; grep -E "daemons|clock|cases done|exit|workers" $W/$tag.phases.txt | tr '\n' ';' | cut -c1-400; echo
  [ -f $W/$tag/g$g/results.jsonl ] && python3 replay/case_timeline.py $W/$tag/g$g/results.jsonl > $W/$tag.timeline.txt 2>&1
  cp $W/$tag/g$g/summary.json $W/$tag.summary.json 2>/dev/null; cp $W/$tag/g$g.util.csv $W/$tag.util.csv 2>/dev/null; pack; }
rep g4 4
rep g1 1
rep g2 2
el "outcomes against the 1-GPU run"
for t in g4:4 g2:2; do IFS=: read a g <<< "$t"
  [ -f $W/$a/g$g/results.jsonl ] && echo "$a: $(python3 replay/mpi_scaling_report.py $W/g1/g1 $W/$a/g$g 2>&1 | head -1)"; done | tee $W/compare.txt
el done; pack
