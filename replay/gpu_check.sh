#!/usr/bin/env bash
# replay/gpu_check.sh: runs on a GPU machine over the bundle of replay/gpu_bundle.sh: device facts, the
# device report (`lab report`: the CUDA replay over SEEDS seeds per variant, default 64) with per-incident
# time shares, the CPU replay (incident defaults), the test suite, compute-sanitizer over the memory-bug
# incidents, and the benchmarks. Logs go to build/gpu-check; each result is copied to $OUT (when set) as
# soon as it exists, so a run cut short still returns what it made. Usage: replay/gpu_check.sh [SEEDS]
set -uo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH="$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
out=build/gpu-check
seeds="${1:-64}"
mkdir -p "$out"
log="$out/gpu-check.log"
exec > >(tee "$log") 2>&1
keep() { [ -n "${OUT:-}" ] && cp "$log" "$OUT/" 2>/dev/null; true; }
nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv
echo "== device report: CUDA replay, $seeds seeds per variant, $(nproc) cores"
/usr/bin/time -f "cuda report wall %e s" build/lab report --backend cuda --seeds "$seeds" --out "$out/report" --quiet | tail -n 40
echo "== per-incident time shares of the CUDA replay (sum of case wall times)"
awk -F'"incident":"' 'NF>1{split($2,a,"\""); w=$0; sub(/.*"wall_s":/,"",w); sub(/[,}].*/,"",w); t[a[1]]+=w; T+=w}
  END{for(i in t) printf "  %-28s %8.1f s  %5.1f%%\n", i, t[i], 100*t[i]/T}' "$out/report/results.jsonl" | sort
[ -n "${OUT:-}" ] && tar czf "$OUT/report.tgz" -C "$out" report
keep
echo "== CPU replay, incident default seeds, $(nproc) cores"
/usr/bin/time -f "cpu replay wall %e s" build/lab replay --backend cpu --out "$out/cpu" --quiet --no-plots | tail -n 22
[ -n "${OUT:-}" ] && cp "$out/cpu/summary.json" "$OUT/cpu-summary.json"
echo "== test suite (CUDA tests run here)"
LAB_BIN=build/lab build/lab-tests --verbose=0 2>&1 | grep -B12 -E "^\[FAIL\]" | head -n 60
LAB_BIN=build/lab build/lab-tests 2>&1 | grep -E "Synthesis"
keep
echo "== compute-sanitizer: memcheck over 0001, initcheck over 0003 (1 seed)"
build/lab replay --backend cuda --sanitize memcheck --incident 0001 --seeds 1 --no-plots --quiet --out "$out/san-memcheck" | tail -n 12
build/lab replay --backend cuda --sanitize initcheck --incident 0003 --seeds 1 --no-plots --quiet --out "$out/san-initcheck" | tail -n 12
keep
echo "== benchmarks"
timeout 240 build/lab bench
keep
