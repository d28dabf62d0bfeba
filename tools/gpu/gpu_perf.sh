#!/usr/bin/env bash
# tools/gpu/gpu_perf.sh OUTDIR: the speed checks of the fixed kernels on a GPU machine, where build/ and .gpu/ were
# carried (tools/gpu/gpu_bundle.sh): the device, `lab bench` timed (every record, every byte checked by the benches),
# the GPU tests of identical bits, a CUDA replay of 0001, 0002 and 0003, compute-sanitizer on a deterministic case, and
# Nsight Compute profiles of the deterministic CRF kernels and the NVFP4 remap (the second round of a bench shape:
# CRF_SHAPES are 0002's bench shape indices (0: B=32 T=500, 1: B=8 T=200, 2: B=64 T=300 K=10 C=64), REMAP_SHAPES
# 0003's (0: 294912x448, 1: 294911x448, 2: 2097155x37, 3: 200003x450)). STEPS (default "device bench tests replay
# sanitize ncu") picks the steps. Everything goes to OUTDIR; a summary is printed last.
set -uo pipefail
out=${1:?usage: tools/gpu/gpu_perf.sh OUTDIR}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
steps="${STEPS:-device bench tests replay sanitize ncu}"
want() { [[ " $steps " == *" $1 "* ]]; }
ms() { date +%s%N | cut -c1-13; }
summary=()

if want device; then
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv >"$out/device.txt" 2>&1
  summary+=("device: $(tail -1 "$out/device.txt")")
fi
if want bench; then
  t0=$(ms); build/lab bench >"$out/bench.txt" 2>&1; rc=$?; t1=$(ms)
  echo "lab bench: exit $rc, $(( (t1 - t0) / 1000 )).$(( (t1 - t0) % 1000 / 100 )) s" >>"$out/bench.txt"
  summary+=("$(tail -1 "$out/bench.txt")")
  summary+=("$(grep -E '^ratio deterministic|^0003 remap|previous / now|^== |bench (skipped|failed)' "$out/bench.txt")")
fi
if want tests; then
  build/lab-tests --filter 'bench*/*' --verbose >"$out/tests-bench.txt" 2>&1
  build/lab-tests --filter 'seedbatch/*' >"$out/tests-seedbatch.txt" 2>&1
  summary+=("tests bench*: $(grep Synthesis "$out/tests-bench.txt")" "tests seedbatch: $(grep Synthesis "$out/tests-seedbatch.txt")")
  summary+=("$(grep -E '\[(FAIL|SKIP)\] bench' "$out/tests-bench.txt" | head -8)")
fi
if want replay; then
  build/lab replay --backend cuda --incident 0001 --incident 0002 --incident 0003 --seeds 32 --no-plots --quiet --out /tmp/gpu-perf-replay \
    >"$out/replay.txt" 2>&1
  summary+=("replay 0001 0002 0003 (32 seeds, cuda): exit $?" "$(grep -E ' (fix|bug)|cases in' "$out/replay.txt")")
fi
if want sanitize; then
  for tool in ${SANITIZE_TOOLS:-memcheck initcheck}; do
    compute-sanitizer --tool $tool --error-exitcode 9 build/lab case 0002 fix-deterministic 1 --backend cuda --sanitize $tool \
      >"$out/sanitize-$tool.txt" 2>&1
    summary+=("compute-sanitizer $tool 0002 fix-deterministic: exit $? $(grep -E 'ERROR SUMMARY' "$out/sanitize-$tool.txt")")
  done
fi
if want ncu; then
  NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  sections="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis"
  crf='regex:^(sg_det_spread|sg_det_finish|sg_marginals|sg_det_starts_dur|sg_det_ends|sg_det_trans_part|sg_det_reduce)$'
  # per round of a 0002 bench shape: sg_marginals twice (f32, f64), 2 production kernels, 5 previous ones; 24 rounds
  for s in ${CRF_SHAPES:-0 1}; do
    "$NCU" --clock-control none --target-processes all -k "$crf" --launch-skip $((s * 24 * 9 + 9)) --launch-count 9 $sections \
      build/lab bench 0002 >"$out/ncu-crf-$s.txt" 2>&1
    summary+=("ncu crf shape $s: exit $? $(grep -cE '^  sg_' "$out/ncu-crf-$s.txt") kernels")
  done
  for s in ${REMAP_SHAPES:-0 2 3}; do
    "$NCU" --clock-control none --target-processes all -k 'regex:^nv_remap_tiles' --launch-skip $((s * 24 + 1)) --launch-count 1 \
      $sections build/lab bench 0003 >"$out/ncu-remap-$s.txt" 2>&1
    summary+=("ncu remap shape $s: exit $?")
  done
fi
printf '%s\n' "${summary[@]}"
