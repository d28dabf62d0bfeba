#!/bin/bash
# Call 6 (the 2-GPU host of call 5, still warm): more workers than the default (32 on this 32-core host) on 2 GPUs
# and on 1, same build, same 1000 seeds, with LAB_PHASES.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
for f in .visit-x/*.gz; do b=$(basename $f .gz); [ -x .visit/$b ] || { mkdir -p .visit; gzip -dc $f > .visit/$b; chmod +x .visit/$b; }; done
S=c6; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s); L=.visit/lab-h
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
left() { [ $(( $(date +%s) - T0 )) -lt "$1" ]; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='results.jsonl' --exclude='plots' --exclude='cases' --exclude='traces' --exclude='*.png' --exclude='*.html' --exclude='report.json' --exclude='junit.xml' --exclude='*.tap' --exclude='*.dat' $S) 2>/dev/null; }
{ nvidia-smi -L | cut -c1-90; echo "nproc $(nproc)"; nvidia-smi --query-gpu=driver_version,persistence_mode --format=csv,noheader | head -1; mpirun --version 2>&1 | head -1; } | tee $W/host.txt
I="--seeds 1000 --incident 0001 --incident 0002 --incident 0003 --incident 0004 --incident 0005 --incident 0008"
rep() { local tag=$1 g=$2; shift 2
  left 420 || return; el "$tag"
  env LAB_PHASES=1 LAB_BIN=$L timeout -s INT 75 replay/gpu_scaling.sh --gpus $g --out $W/$tag -- $I --quiet "$@" 2>&1 | grep -E "^[0-9] GPU" | head -1
  python3 replay/phase_summary.py $W/$tag/g$g.log > $W/$tag.phases.txt 2>&1; grep -E "daemons|clock|cases done|exit|workers" $W/$tag.phases.txt | tr '\n' ';' | cut -c1-400; echo
  [ -f $W/$tag/g$g/results.jsonl ] && python3 replay/case_timeline.py $W/$tag/g$g/results.jsonl > $W/$tag.timeline.txt 2>&1
  cp $W/$tag/g$g/summary.json $W/$tag.summary.json 2>/dev/null; cp $W/$tag/g$g.util.csv $W/$tag.util.csv 2>/dev/null; pack; }
rep g2-j48 2 -j 48
rep g2-j64 2 -j 64
rep g2-c 2
rep g1-j48 1 -j 48
rep g2-j48-b 2 -j 48
el done; pack
