#!/bin/bash
# Call 8 (4-GPU host): 3000 seeds of the one-GPU incidents (69000 cases, a windowed replay) on 4 GPUs with the build
# whose windows hold the incidents that fit in them whole (w) against call 7's build (h, a window an incident).
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
for f in .visit-x/*.gz; do b=$(basename $f .gz); [ -x .visit/$b ] || { mkdir -p .visit; gzip -dc $f > .visit/$b; chmod +x .visit/$b; }; done
S=c8; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s); L=.visit/lab-h
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
left() { [ $(( $(date +%s) - T0 )) -lt "$1" ]; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='results.jsonl' --exclude='plots' --exclude='cases' --exclude='traces' --exclude='*.png' --exclude='*.html' --exclude='report.json' --exclude='junit.xml' --exclude='*.tap' --exclude='*.dat' $S) 2>/dev/null; }
{ nvidia-smi -L | cut -c1-90; echo "nproc $(nproc)"; nvidia-smi --query-gpu=driver_version,persistence_mode --format=csv,noheader | head -1; mpirun --version 2>&1 | head -1; } | tee $W/host.txt
I="--seeds 3000 --incident 0001 --incident 0002 --incident 0003 --incident 0004 --incident 0005 --incident 0008"
rep() { local tag=$1 g=$2; shift 2
  left 500 || return; el "$tag"
  env LAB_PHASES=1 LAB_BIN=$LB timeout -s INT 120 replay/gpu_scaling.sh --gpus $g --out $W/$tag -- $I --quiet "$@" 2>&1 | grep -E "^[0-9] GPU" | head -1
  python3 replay/phase_summary.py $W/$tag/g$g.log > $W/$tag.phases.txt 2>&1; grep -E "daemons|clock|cases done|exit|workers" $W/$tag.phases.txt | tr '\n' ';' | cut -c1-400; echo
  [ -f $W/$tag/g$g/results.jsonl ] && python3 replay/case_timeline.py $W/$tag/g$g/results.jsonl > $W/$tag.timeline.txt 2>&1
  cp $W/$tag/g$g/summary.json $W/$tag.summary.json 2>/dev/null; cp $W/$tag/g$g.util.csv $W/$tag.util.csv 2>/dev/null; pack; }
LB=.visit/lab-w; rep w-g4 4
LB=.visit/lab-h; rep h-g4 4
el "outcomes: the new build against main"
[ -f $W/h-g4/g4/results.jsonl ] && echo "w-g4: $(python3 replay/mpi_scaling_report.py $W/h-g4/g4 $W/w-g4/g4 2>&1 | head -1)" | tee $W/compare.txt
el done; pack
