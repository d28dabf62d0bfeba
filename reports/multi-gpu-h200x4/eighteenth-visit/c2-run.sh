#!/bin/bash
# Call 2 (4-GPU host): main with the pools a thread (532f9fc, stripped) through `make replay`'s command on 4, 2 and 1
# GPUs (0006 on NCCL where 2 GPUs exist), the 1/2/4-GPU scaling (1000 seeds of the one-GPU incidents) and --mpi
# -np 2 / -np 4 against the plain 4-GPU replay, all with LAB_PHASES.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
for f in .visit-x/*.gz; do b=$(basename $f .gz); [ -x .visit/$b ] || { mkdir -p .visit; gzip -dc $f > .visit/$b; chmod +x .visit/$b; }; done
S=c2; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s); L=.visit/lab-h
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
left() { [ $(( $(date +%s) - T0 )) -lt "$1" ]; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='results.jsonl' --exclude='plots' --exclude='cases' --exclude='traces' --exclude='*.png' --exclude='*.html' --exclude='report.json' --exclude='junit.xml' --exclude='*.tap' --exclude='*.dat' $S) 2>/dev/null; }
{ nvidia-smi -L | cut -c1-90; echo "nproc $(nproc)"; nvidia-smi --query-gpu=driver_version,persistence_mode --format=csv,noheader | head -1; mpirun --version 2>&1 | head -1; } | tee $W/host.txt
for g in 0,1,2,3 0,1 0; do n=$(( $(echo $g | tr -cd , | wc -c) + 1 )); el "make replay's command, $n GPU(s)"
  s=$(date +%s%N); LAB_PHASES=1 CUDA_VISIBLE_DEVICES=$g timeout -s INT 120 $L replay --backend auto --no-plots --out $W/mr-g$n > $W/mr-g$n.log 2>&1; rc=$?; e=$(date +%s%N)
  echo "  exit $rc, command $(( (e - s) / 1000000 )) ms; $(grep -E 'cases in' $W/mr-g$n.log | tail -1)"
  grep -E "SKIP|ERROR|NOT OK|rerunning|cuda:" $W/mr-g$n.log | grep -v "trace of this\|lab phase" | head -8
  python3 replay/phase_summary.py $W/mr-g$n.log | grep -v "probe:" > $W/mr-g$n.phases.txt
  cp $W/mr-g$n/summary.json $W/mr-g$n.summary.json 2>/dev/null; pack; done
I="--seeds 1000 --incident 0001 --incident 0002 --incident 0003 --incident 0004 --incident 0005 --incident 0008"
rep() { local tag=$1 g=$2; shift 2
  left 420 || return; el "$tag"
  env LAB_PHASES=1 LAB_BIN=$L timeout -s INT 75 replay/gpu_scaling.sh --gpus $g --out $W/$tag -- $I --quiet "$@" 2>&1 | grep -E "^[0-9] GPU" | head -1
  python3 replay/phase_summary.py $W/$tag/g$g.log > $W/$tag.phases.txt 2>&1; grep -E "daemons|clock|cases done|exit|workers" $W/$tag.phases.txt | tr '\n' ';' | cut -c1-400; echo
  [ -f $W/$tag/g$g/results.jsonl ] && python3 replay/case_timeline.py $W/$tag/g$g/results.jsonl > $W/$tag.timeline.txt 2>&1
  cp $W/$tag/g$g/summary.json $W/$tag.summary.json 2>/dev/null; cp $W/$tag/g$g.util.csv $W/$tag.util.csv 2>/dev/null; pack; }
ranks() { grep -A5 "^rank  host" $1 | awk 'NR>1 && NF>5{printf " r%s %s chunks %s cases %ss;", $1, $6, $7, $9} END{print ""}'; }
mpi() { local name=$1 np=$2 base=$3; left 470 || return; el "$name"
  LAB_PHASES=1 LAB_BIN=$L timeout -s INT 70 replay/mpi_scaling.sh --ranks "$np" --out $W/$name -- --backend cuda $I >/dev/null 2>&1
  echo "  mpirun wall $(cut -d' ' -f1 $W/$name/time-np$np | tail -1) s; clock $(grep -o 'in [0-9.]* s' $W/$name/log-np$np | head -1);$(ranks $W/$name/log-np$np)"
  python3 replay/phase_summary.py $W/$name/log-np$np > $W/$name.phases.txt 2>&1
  echo "  vs plain: $(python3 replay/mpi_scaling_report.py $base $W/$name/np$np 2>&1 | head -1)"; pack; }
rep g1 1
rep g4-a 4
rep g2 2
mpi np2 2 $W/g4-a/g4
mpi np4 4 $W/g4-a/g4
rep g4-b 4
el "outcomes against the 1-GPU run"
for t in g4-a:4 g2:2 g4-b:4; do IFS=: read a g <<< "$t"
  [ -f $W/$a/g$g/results.jsonl ] && echo "$a: $(python3 replay/mpi_scaling_report.py $W/g1/g1 $W/$a/g$g 2>&1 | head -1)"; done | tee $W/compare.txt
el done; pack
