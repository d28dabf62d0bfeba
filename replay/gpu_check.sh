#!/usr/bin/env bash
# replay/gpu_check.sh: runs on a GPU machine over the bundle of replay/gpu_bundle.sh: device facts, the
# CUDA and CPU replays, the incident tests, and compute-sanitizer over CUDA cases. Writes logs under
# build/gpu-check, and copies the summaries, a plot and the logs to $OUT when it is set. Usage: replay/gpu_check.sh [SEEDS]
set -uo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH="$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
out=build/gpu-check   # everything; the few files worth fetching are copied to $OUT at the end
seeds="${1:-256}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv | tee "$out/device.txt"
echo "== CUDA replay, $seeds seeds"
/usr/bin/time -f "cuda replay wall %e s" build/lab replay --backend cuda --seeds "$seeds" --out "$out/cuda" --quiet 2>&1 | tail -n 12
echo "== CPU replay, $seeds seeds, $(nproc) cores"
/usr/bin/time -f "cpu replay wall %e s" build/lab replay --backend cpu --seeds "$seeds" --out "$out/cpu" --quiet 2>&1 | tail -n 8
echo "== test suite (CUDA tests run here)"
LAB_BIN=build/lab build/lab-tests 2>&1 | tail -n 5
echo "== compute-sanitizer memcheck over CUDA cases (one seed per variant)"
for v in fix bug-exp-log; do
  compute-sanitizer --tool memcheck --target-processes all --error-exitcode 99 \
    build/lab replay --incident 0004 --variant "$v" --seed 1 --backend cuda --no-plots --out "$out/san-$v" >"$out/san-$v.log" 2>&1
  echo "memcheck $v: exit $? ; $(grep -E 'ERROR SUMMARY' "$out/san-$v.log" | sort | uniq -c | tr '\n' ' ')"
done
if [ -n "${OUT:-}" ]; then
  cp "$out/cuda/summary.json" "$OUT/cuda-summary.json" 2>/dev/null
  cp "$out/cpu/summary.json" "$OUT/cpu-summary.json" 2>/dev/null
  cp "$out/cuda/results.jsonl" "$OUT/cuda-results.jsonl" 2>/dev/null
  cp "$out/cuda/plots/0004-pow-grad-nan.png" "$OUT/cuda-0004.png" 2>/dev/null
  cat "$out"/san-*.log > "$OUT/sanitizer.log" 2>/dev/null
fi
