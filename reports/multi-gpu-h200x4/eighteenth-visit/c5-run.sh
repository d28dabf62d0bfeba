#!/bin/bash
# Call 5 (2-GPU host, 32 cores): the build of call 2 through `make replay`'s command on 2 and 1 GPUs (0006 on NCCL on
# 2) and the 1/2-GPU scaling (1000 seeds of the one-GPU incidents), two rounds interleaved, with LAB_PHASES.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
for f in .visit-x/*.gz; do b=$(basename $f .gz); [ -x .visit/$b ] || { mkdir -p .visit; gzip -dc $f > .visit/$b; chmod +x .visit/$b; }; done
S=c5; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s); L=.visit/lab-h
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
left() { [ $(( $(date +%s) - T0 )) -lt "$1" ]; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='results.jsonl' --exclude='plots' --exclude='cases' --exclude='traces' --exclude='*.png' --exclude='*.html' --exclude='report.json' --exclude='junit.xml' --exclude='*.tap' --exclude='*.dat' $S) 2>/dev/null; }
{ nvidia-smi -L | cut -c1-90; echo "nproc $(nproc)"; nvidia-smi --query-gpu=driver_version,persistence_mode --format=csv,noheader | head -1; mpirun --version 2>&1 | head -1; } | tee $W/host.txt
for g in 0,1 0; do n=$(( $(echo $g | tr -cd , | wc -c) + 1 )); el "make replay's command, $n GPU(s)"
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
rep g1-a 1
rep g2-a 2
rep g1-b 1
rep g2-b 2
el "outcomes against the first 1-GPU run"
for t in g2-a:2 g1-b:1 g2-b:2; do IFS=: read a g <<< "$t"
  [ -f $W/$a/g$g/results.jsonl ] && echo "$a: $(python3 replay/mpi_scaling_report.py $W/g1-a/g1 $W/$a/g$g 2>&1 | head -1)"; done | tee $W/compare.txt
el done; pack
