#!/bin/bash
# i15 device run: 0008 on CUDA (Triton probe, study, replay, sanitizers). Logs to $OUT.
set -u
D=$PWD/.devwork/i15
export LD_LIBRARY_PATH=$D/gpu/lib:${LD_LIBRARY_PATH:-}
export LAB_ROOT=$D/root
L=$D/lab
t0=$SECONDS
left() { echo $(( ${1} - (SECONDS - t0) )); }
{ nvidia-smi -L; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv; which compute-sanitizer; ls /usr/local/cuda/bin | tr '\n' ' '; echo; python3 -c 'import triton, torch; print(triton.__version__, torch.__version__)'; } > $OUT/device.txt 2>&1
echo "== probe $(date +%T)"
WR_PROBE_RUNS=100 timeout 130 python3 $D/triton_probe.py $OUT > $OUT/triton_probe.txt 2>&1; echo "probe rc=$? at $((SECONDS-t0)) s" | tee -a $OUT/triton_probe.txt
echo "== study $(date +%T)"
timeout 150 $L bench 0008 > $OUT/study.txt 2>&1; echo "study rc=$? at $((SECONDS-t0)) s" | tee -a $OUT/study.txt
echo "== replay $(date +%T)"
timeout 170 $L replay --incident 0008 --backend cuda --seeds 32 -j 8 --no-plots --out /tmp/wr_rep > $OUT/replay.txt 2>&1; echo "replay rc=$? at $((SECONDS-t0)) s" | tee -a $OUT/replay.txt
cp /tmp/wr_rep/results.jsonl /tmp/wr_rep/summary.json $OUT/ 2>/dev/null
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tv in racecheck:bug-smem-buffers racecheck:fix-barrier synccheck:fix-barrier memcheck:bug-num-warps-4 racecheck:bug-num-warps-4 synccheck:fix-owner-loads racecheck:fix-owner-loads; do
  tool=${tv%%:*}; v=${tv#*:}
  if [ $(left 560) -lt 30 ]; then echo "skip $tool $v (time)" >> $OUT/sanitizers.txt; continue; fi
  echo "== $tool $v seed 3 $(date +%T)" >> $OUT/sanitizers.txt
  timeout $(( $(left 575) < 60 ? $(left 575) : 60 )) $CS --tool $tool --print-limit 20 $L case 0008 $v 3 --backend cuda --sanitizer $tool >> $OUT/sanitizers.txt 2>&1
  echo "rc=$? at $((SECONDS-t0)) s" >> $OUT/sanitizers.txt
done
tail -5 $OUT/sanitizers.txt
echo "total $((SECONDS-t0)) s"
