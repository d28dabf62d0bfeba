#!/usr/bin/env bash
# replay/gpu_check.sh: runs on a GPU machine over the bundle of replay/gpu_bundle.sh: device facts, the
# CUDA replay (SEEDS per variant, default 1000) with per-incident time shares, the CPU replay (incident
# defaults), the test suite, every CUDA case under compute-sanitizer, the benchmarks, and a device report
# where `lab report` exists. Logs go to build/gpu-check; the summaries, results and report come back
# through $OUT when it is set (at most 8 files). Usage: replay/gpu_check.sh [SEEDS] [lab replay flags...]
set -uo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH="$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
out=build/gpu-check
seeds="${1:-1000}"
shift || true
mkdir -p "$out"
log="$out/gpu-check.log"
exec > >(tee "$log") 2>&1
nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv
echo "== CUDA replay, $seeds seeds per variant, $(nproc) cores"
/usr/bin/time -f "cuda replay wall %e s" build/lab replay --backend cuda --seeds "$seeds" --out "$out/cuda" --quiet "$@" | tail -n 40
echo "== per-incident time shares of the CUDA replay (sum of case wall times)"
awk -F'"incident":"' 'NF>1{split($2,a,"\""); w=$0; sub(/.*"wall_s":/,"",w); sub(/[,}].*/,"",w); t[a[1]]+=w; T+=w}
  END{for(i in t) printf "  %-28s %8.1f s  %5.1f%%\n", i, t[i], 100*t[i]/T}' "$out/cuda/results.jsonl" | sort
echo "== CPU replay, incident default seeds, $(nproc) cores"
/usr/bin/time -f "cpu replay wall %e s" build/lab replay --backend cpu --out "$out/cpu" --quiet "$@" | tail -n 30
echo "== test suite (CUDA tests run here)"
LAB_BIN=build/lab build/lab-tests 2>&1 | grep -E "FAIL|Synthesis|skip" | head -n 30
for t in memcheck initcheck racecheck; do
  echo "== compute-sanitizer $t over every CUDA case (2 seeds)"
  build/lab replay --backend cuda --sanitize "$t" --seeds 2 --no-plots --quiet --out "$out/san-$t" "$@" | tail -n 30
done
echo "== benchmarks"
build/lab bench
if build/lab help | grep -q '^  report'; then
  echo "== device report"
  build/lab report --backend cuda --seeds "$seeds" --out "$out/report" "$@" | tail -n 5
fi
if [ -n "${OUT:-}" ]; then
  cp "$log" "$OUT/"
  cp "$out/cuda/summary.json" "$OUT/cuda-summary.json" 2>/dev/null
  cp "$out/cpu/summary.json" "$OUT/cpu-summary.json" 2>/dev/null
  gzip -c "$out/cuda/results.jsonl" > "$OUT/cuda-results.jsonl.gz" 2>/dev/null
  tar czf "$OUT/plots.tgz" -C "$out/cuda" plots 2>/dev/null
  [ -d "$out/report" ] && tar czf "$OUT/report.tgz" -C "$out" report
  tar czf "$OUT/sanitize.tgz" -C "$out" san-memcheck san-initcheck san-racecheck 2>/dev/null
fi
