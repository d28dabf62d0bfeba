#!/bin/bash
# Session 18, call 2 (2-GPU host): call 1 again with the sampler on per-thread CPU clocks (call 1's process-wide timer charged
# the background thread's CPU to threads asleep in poll and futex waits). sampler.so (reports/host-cpu-profile) on
# one worker (-j 1) per backend, and on the 1000-seed replay of the GPU incidents on 1 and 2 GPUs, beside unprofiled runs.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
S=s18c2; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
left() { [ $(( $(date +%s) - T0 )) -lt "$1" ]; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='results.jsonl' --exclude='plots' --exclude='cases' --exclude='traces' --exclude='*.png' --exclude='*.html' --exclude='report.json' --exclude='junit.xml' --exclude='*.tap' --exclude='*.dat' --exclude='p-*' $S) 2>/dev/null; }
{ nvidia-smi -L | cut -c1-90; nproc; grep -m1 "model name" /proc/cpuinfo; uname -r; which nm addr2line; cat /sys/fs/cgroup/cpu.max 2>/dev/null; } | tee $W/host.txt
printf '#!/bin/sh\nLD_PRELOAD=%s/.visit/sampler.so exec %s/build/lab "$@"\n' "$PWD" "$PWD" > /tmp/labprof; chmod +x /tmp/labprof
INC="--incident 0001 --incident 0002 --incident 0003 --incident 0004 --incident 0005 --incident 0008"
I="--seeds 1000 $INC"
summ() { python3 reports/host-cpu-profile/prof_summary.py $W/p-$1 --top 40 > $W/prof-$1.txt 2>&1; head -60 $W/prof-$1.txt | cut -c1-160; }
el j1-cuda; mkdir -p $W/p-j1cuda
CUDA_VISIBLE_DEVICES=0 LAB_PROF_DIR=$W/p-j1cuda timeout -s INT 100 /tmp/labprof replay --backend cuda --seeds 40 $INC -j 1 --quiet --out $W/j1cuda > $W/j1cuda.log 2>&1; tail -2 $W/j1cuda.log
python3 .visit/cpuv.py $W/j1cuda | tee $W/cpuv-j1.txt
pack
rep() { local tag=$1 g=$2 bin=$3; left 420 || return; el "$tag"; mkdir -p $W/p-$tag
  LAB_PROF_DIR=$W/p-$tag LAB_BIN=$bin timeout -s INT 60 replay/gpu_scaling.sh --gpus $g --out $W/$tag -- $I --quiet 2>&1 | grep -E "^[0-9] GPU" | head -1
  python3 .visit/cpuv.py $W/$tag/g$g > $W/cpuv-$tag.txt; tail -1 $W/cpuv-$tag.txt; pack; }
rep g1-prof 1 /tmp/labprof
rep g2-prof 2 /tmp/labprof
rep g1-plain 1 build/lab
rep g2-plain 2 build/lab
for t in g1-prof:g1-plain g2-prof:g1-plain g2-plain:g1-plain; do a=${t%%:*}; b=${t##*:}
  echo "$a vs $b: $(python3 replay/mpi_scaling_report.py $W/$b/g1 $W/$a/g${a:1:1} 2>&1 | head -1)"; done | tee $W/compare.txt
for t in j1cuda g1-prof g2-prof; do left 560 || break; el "summary $t"; summ $t; done
(cd $W && tar czf $OUT/p-j1.tgz p-j1cuda && tar czf $OUT/p-g2.tgz p-g2-prof) 2>/dev/null; ls -la $OUT
el done; pack
