#!/bin/bash
# (It ran the summary as .visit/phases.py, the same code since committed as replay/phase_summary.py.)
# Session 20, call 2 (4-GPU host): main (h, 3ca60e3) against the build whose MPS daemons start and quit together (n):
# small replays' phases, the 1/2/4-GPU scaling, and --mpi -np 2 / -np 4 against the plain replay, with LAB_PHASES.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
S=s20c2; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
left() { [ $(( $(date +%s) - T0 )) -lt "$1" ]; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='results.jsonl' --exclude='plots' --exclude='cases' --exclude='traces' --exclude='*.png' --exclude='*.html' --exclude='report.json' --exclude='junit.xml' --exclude='*.tap' --exclude='*.dat' $S) 2>/dev/null; }
{ nvidia-smi -L | cut -c1-90; echo "nproc $(nproc)"; nvidia-smi --query-gpu=driver_version,persistence_mode --format=csv,noheader | head -1; mpirun --version 2>&1 | head -1; } | tee $W/host.txt
I="--seeds 1000 --incident 0001 --incident 0002 --incident 0003 --incident 0004 --incident 0005 --incident 0008"
small() { local tag=$1 vis=$2 lab=$3; shift 3
  /usr/bin/time -f "%e" -o $W/$tag.time env LAB_PHASES=1 CUDA_VISIBLE_DEVICES=$vis $lab replay --backend cuda --incident 0004 --seeds 2 --quiet --no-plots --out $W/$tag "$@" > $W/$tag.log 2>&1
  python3 replay/phase_summary.py $W/$tag.log > $W/$tag.phases.txt; echo "$tag: command $(cat $W/$tag.time) s; $(grep -E 'daemons (started|probed|stopped)' $W/$tag.phases.txt | awk '{printf "%s %s %s; ", $1, $3, $4}')"; }
rep() { local tag=$1 g=$2 lab=$3; shift 3
  left 400 || return; el "$tag"
  env LAB_PHASES=1 LAB_BIN=$lab timeout -s INT 75 replay/gpu_scaling.sh --gpus $g --out $W/$tag -- $I --quiet "$@" 2>&1 | grep -E "^[0-9] GPU" | head -1
  python3 replay/phase_summary.py $W/$tag/g$g.log > $W/$tag.phases.txt 2>&1; grep -E "daemons|clock|cases done|exit|workers" $W/$tag.phases.txt | tr '\n' ';' | cut -c1-400; echo
  [ -f $W/$tag/g$g/results.jsonl ] && python3 replay/case_timeline.py $W/$tag/g$g/results.jsonl > $W/$tag.timeline.txt 2>&1
  cp $W/$tag/g$g/summary.json $W/$tag.summary.json 2>/dev/null; cp $W/$tag/g$g.util.csv $W/$tag.util.csv 2>/dev/null; pack; }
ranks() { grep -A5 "^rank  host" $1 | awk 'NR>1 && NF>5{printf " r%s %s chunks %s cases %ss;", $1, $6, $7, $9} END{print ""}'; }
mpi() { local name=$1 np=$2 base=$3; left 430 || return; el "$name"
  LAB_PHASES=1 LAB_BIN=.visit/lab-n timeout -s INT 70 replay/mpi_scaling.sh --ranks "$np" --out $W/$name -- --backend cuda $I >/dev/null 2>&1
  echo "  mpirun wall $(cut -d' ' -f1 $W/$name/time-np$np | tail -1) s; clock $(grep -o 'in [0-9.]* s' $W/$name/log-np$np | head -1);$(ranks $W/$name/log-np$np)"
  python3 replay/phase_summary.py $W/$name/log-np$np > $W/$name.phases.txt 2>&1
  echo "  vs plain: $(python3 replay/mpi_scaling_report.py $base $W/$name/np$np 2>&1 | head -1)"; pack; }
for r in a b; do small h-small-g4-$r 0,1,2,3 .visit/lab-h; small n-small-g4-$r 0,1,2,3 .visit/lab-n; done
small n-small-g1 0 .visit/lab-n
rep h-g1 1 .visit/lab-h
rep n-g1 1 .visit/lab-n
for r in a b; do rep h-g4-$r 4 .visit/lab-h; rep n-g4-$r 4 .visit/lab-n; done
rep n-g2 2 .visit/lab-n
rep h-g2 2 .visit/lab-h
mpi np2-a 2 $W/n-g4-b/g4
mpi np4-a 4 $W/n-g4-b/g4
rep n-g4-c 4 .visit/lab-n
mpi np2-b 2 $W/n-g4-c/g4
mpi np4-b 4 $W/n-g4-c/g4
el "outcomes against main's 1-GPU run"
for t in n-g1:1 h-g4-a:4 n-g4-a:4 h-g4-b:4 n-g4-b:4 n-g2:2 h-g2:2 n-g4-c:4; do IFS=: read a g <<< "$t"
  [ -f $W/$a/g$g/results.jsonl ] && echo "$a: $(python3 replay/mpi_scaling_report.py $W/h-g1/g1 $W/$a/g$g 2>&1 | head -1)"; done | tee $W/compare.txt
el done; pack
