#!/usr/bin/env bash
# tools/measure/cuda_start_probe.sh: runs build/cuda_start_probe (tools/measure/cuda_start_probe.cu) on a GPU host over a matrix of
# process counts, GPU counts, start gates, with and without one MPS daemon a GPU, and prints each run's aggregate:
# when the last context was ready, the mean per-call costs, the CPU the children spent. Where a multi-GPU replay's
# start-up time goes (docs/performance.md). Usage: tools/measure/cuda_start_probe.sh [OUTFILE]
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:-/dev/stdout}
mapfile -t uuids < <(nvidia-smi -L | sed -n 's/.*UUID: \(GPU-[^)]*\)).*/\1/p')
n=${#uuids[@]}
echo "GPUs: $n" >"$out"
mpsdir=$(mktemp -d)
start_mps() {
  for ((g = 0; g < n; g++)); do
    mkdir -p "$mpsdir/$g/pipe" "$mpsdir/$g/log"
    CUDA_VISIBLE_DEVICES=${uuids[$g]} CUDA_MPS_PIPE_DIRECTORY=$mpsdir/$g/pipe CUDA_MPS_LOG_DIRECTORY=$mpsdir/$g/log \
      nvidia-cuda-mps-control -d
  done
}
stop_mps() {
  for ((g = 0; g < n; g++)); do echo quit | CUDA_MPS_PIPE_DIRECTORY=$mpsdir/$g/pipe nvidia-cuda-mps-control; done
  sleep 2
}
summ() { # aggregate the child lines of one run
  awk '/^child/{n++; if($6>ctx)ctx=$6; k+=$8; m+=$10; a+=$12; c+=$14; cpu+=$16; sys+=$18}
       /^procs/{print $0 "\n  last context ready " ctx " s; means: malloc+free " m/n " ms, pool alloc " a/n " ms, h2d 1MiB " c/n " ms; cpu " cpu/n " s (sys " sys/n ") a child"}'
}
run() { # procs ngpu gate mps
  local list
  list=$(IFS=,; echo "${uuids[*]:0:$2}")
  if [[ $4 == mps ]]; then PROBE_MPS=$mpsdir PROBE_GPUS=$list build/cuda_start_probe "$1" "$3"
  else PROBE_GPUS=$list build/cuda_start_probe "$1" "$3"; fi | tee -a "$out.raw" | summ >>"$out"
}
for mode in plain mps; do
  [[ $mode == mps ]] && start_mps
  run 1 1 0 $mode
  run 16 1 0 $mode
  if ((n >= 4)); then
    run 16 4 0 $mode
    run 64 4 0 $mode
    run 64 4 4 $mode
    run 64 4 1 $mode
  fi
  [[ $mode == mps ]] && stop_mps
done
rm -rf "$mpsdir"
