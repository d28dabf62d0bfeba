#!/bin/bash
# Session 18, call 3 (2-GPU host): what the CPU-side cross-checks cost the wall. The build against one whose
# lab_case_xcheck takes seeds 1 and 2 only (.visit/lab-noxc; the judge against the reference still runs on every seed),
# 1 and 2 GPUs, rounds interleaved; then the 2-GPU replay profiled with the slot-buffer sampler.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
S=s18c3; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
left() { [ $(( $(date +%s) - T0 )) -lt "$1" ]; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='results.jsonl' --exclude='plots' --exclude='cases' --exclude='traces' --exclude='*.png' --exclude='*.html' --exclude='report.json' --exclude='junit.xml' --exclude='*.tap' --exclude='*.dat' --exclude='p-*' $S) 2>/dev/null; }
{ nvidia-smi -L | cut -c1-90; nproc; grep -m1 "model name" /proc/cpuinfo; } | tee $W/host.txt
printf '#!/bin/sh\nLD_PRELOAD=%s/.visit/sampler.so exec %s/build/lab "$@"\n' "$PWD" "$PWD" > /tmp/labprof; chmod +x /tmp/labprof
I="--seeds 1000 --incident 0001 --incident 0002 --incident 0003 --incident 0004 --incident 0005 --incident 0008"
rep() { local tag=$1 g=$2 bin=$3; left 470 || return; el "$tag"; mkdir -p $W/p-$tag
  LAB_PROF_DIR=$W/p-$tag LAB_BIN=$bin timeout -s INT 60 replay/gpu_scaling.sh --gpus $g --out $W/$tag -- $I --quiet 2>&1 | grep -E "^[0-9] GPU" | head -1
  python3 .visit/cpuv.py $W/$tag/g$g > $W/cpuv-$tag.txt; tail -1 $W/cpuv-$tag.txt
  [ -f $W/$tag/g$g/results.jsonl ] && python3 replay/case_timeline.py $W/$tag/g$g/results.jsonl 2>&1 | sed -n 2,4p; pack; }
for r in a b; do
  rep g1-base-$r 1 build/lab
  rep g1-noxc-$r 1 .visit/lab-noxc
  rep g2-base-$r 2 build/lab
  rep g2-noxc-$r 2 .visit/lab-noxc
done
rep g2-prof 2 /tmp/labprof
for t in g1-noxc-a:g1-base-a:1 g2-noxc-a:g1-base-a:2 g2-base-a:g1-base-a:2 g1-base-b:g1-base-a:1; do IFS=: read a b g <<< "$t"
  echo "$a vs $b: $(python3 replay/mpi_scaling_report.py $W/$b/g1 $W/$a/g$g 2>&1 | head -1)"; done | tee $W/compare.txt
if left 560; then el summary
  python3 reports/host-cpu-profile/prof_summary.py $W/p-g2-prof --top 40 > $W/prof-g2.txt 2>&1; head -14 $W/prof-g2.txt
  python3 reports/host-cpu-profile/prof_phases.py $W/p-g2-prof > $W/phases-g2.txt 2>&1; cat $W/phases-g2.txt; fi
(cd $W && tar czf $OUT/p-g2.tgz p-g2-prof) 2>/dev/null
el done; pack
