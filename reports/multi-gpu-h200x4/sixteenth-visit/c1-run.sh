#!/bin/bash
# (It ran the summary as .visit/phases.py, the same code since committed as replay/phase_summary.py.)
# Session 20, call 1 (4-GPU host): where a replay's command spends its time outside the cases (LAB_PHASES), and main
# (h, 3ca60e3) against the build whose MPS daemons quit together (p).
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
S=s20c1; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
left() { [ $(( $(date +%s) - T0 )) -lt "$1" ]; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='results.jsonl' --exclude='plots' --exclude='cases' --exclude='traces' --exclude='*.png' --exclude='*.html' --exclude='report.json' --exclude='junit.xml' --exclude='*.tap' --exclude='*.dat' $S) 2>/dev/null; }
{ nvidia-smi -L | cut -c1-90; echo "nproc $(nproc)"; nvidia-smi --query-gpu=driver_version,persistence_mode --format=csv,noheader | head -1; } | tee $W/host.txt
I="--seeds 1000 --incident 0001 --incident 0002 --incident 0003 --incident 0004 --incident 0005 --incident 0008"
small() { local tag=$1 vis=$2 lab=$3; shift 3; el "$tag"
  /usr/bin/time -f "command wall %e s" env LAB_PHASES=1 CUDA_VISIBLE_DEVICES=$vis $lab replay --backend cuda --incident 0004 --seeds 2 --quiet --no-plots --out $W/$tag "$@" > $W/$tag.log 2>&1
  python3 replay/phase_summary.py $W/$tag.log | tee $W/$tag.phases.txt; tail -1 $W/$tag.log; }
rep() { local tag=$1 g=$2 lab=$3; shift 3
  left 420 || return; el "$tag"
  env LAB_PHASES=1 LAB_BIN=$lab timeout -s INT 75 replay/gpu_scaling.sh --gpus $g --out $W/$tag -- $I --quiet "$@" 2>&1 | grep -E "^[0-9] GPU" | head -1
  python3 replay/phase_summary.py $W/$tag/g$g.log > $W/$tag.phases.txt 2>&1; grep -v "probe\|MPS probe" $W/$tag.phases.txt | tail -8
  [ -f $W/$tag/g$g/results.jsonl ] && python3 replay/case_timeline.py $W/$tag/g$g/results.jsonl > $W/$tag.timeline.txt 2>&1 && sed -n 1,4p $W/$tag.timeline.txt
  cp $W/$tag/g$g/summary.json $W/$tag.summary.json 2>/dev/null; cp $W/$tag/g$g.util.csv $W/$tag.util.csv 2>/dev/null; pack; }
small p-small-g1 0 .visit/lab-p
small p-small-g4 0,1,2,3 .visit/lab-p
small p-small-g4-nomps 0,1,2,3 .visit/lab-p --no-mps
small h-small-g4 0,1,2,3 .visit/lab-h
rep h-g1 1 .visit/lab-h
rep p-g1 1 .visit/lab-p
for r in a b; do rep h-g4-$r 4 .visit/lab-h; rep p-g4-$r 4 .visit/lab-p; done
el "outcomes against main's 1-GPU run"
for t in p-g1:1 h-g4-a:4 p-g4-a:4 h-g4-b:4 p-g4-b:4; do IFS=: read a g <<< "$t"
  [ -f $W/$a/g$g/results.jsonl ] && echo "$a: $(python3 replay/mpi_scaling_report.py $W/h-g1/g1 $W/$a/g$g 2>&1 | head -2 | tr '\n' ' ')"; done | tee $W/compare.txt
el done; pack
