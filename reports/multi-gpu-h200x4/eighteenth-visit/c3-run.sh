#!/bin/bash
# Call 3 (the same 4-GPU host as call 2, still warm): two more rounds of --mpi -np 2 / -np 4 against a plain 4-GPU
# replay just before them (1000 seeds of the one-GPU incidents), with LAB_PHASES; same build.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
for f in .visit-x/*.gz; do b=$(basename $f .gz); [ -x .visit/$b ] || { mkdir -p .visit; gzip -dc $f > .visit/$b; chmod +x .visit/$b; }; done
S=c3; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s); L=.visit/lab-h
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
ranks() { grep -A5 "^rank  host" $1 | awk 'NR>1 && NF>5{printf " r%s %s chunks %s cases %ss;", $1, $6, $7, $9} END{print ""}'; }
mpi() { local name=$1 np=$2 base=$3; left 470 || return; el "$name"
  LAB_PHASES=1 LAB_BIN=$L timeout -s INT 70 replay/mpi_scaling.sh --ranks "$np" --out $W/$name -- --backend cuda $I >/dev/null 2>&1
  echo "  mpirun wall $(cut -d' ' -f1 $W/$name/time-np$np | tail -1) s; clock $(grep -o 'in [0-9.]* s' $W/$name/log-np$np | head -1);$(ranks $W/$name/log-np$np)"
  python3 replay/phase_summary.py $W/$name/log-np$np > $W/$name.phases.txt 2>&1
  echo "  vs plain: $(python3 replay/mpi_scaling_report.py $base $W/$name/np$np 2>&1 | head -1)"; pack; }
for r in b c; do
  rep g4-$r 4
  mpi np2-$r 2 $W/g4-$r/g4
  mpi np4-$r 4 $W/g4-$r/g4
done
el done; pack
