#!/usr/bin/env bash
# tools/gpu/gpu_scaling.sh: on a multi-GPU host, the same CUDA replay on 1, 2, 4 ... GPUs (CUDA_VISIBLE_DEVICES = the
# first k), each with default -j and every GPU's utilisation sampled every 0.5 s; prints wall (the command's, start-up
# included, as mpi_scaling.sh times mpirun; beside it the replay's own clock, which starts after the probes), cases/s,
# speed-up over one GPU, per-GPU mean utilisation, and whether every run's results equal the one-GPU run's case by case
# (tools/measure/mpi_scaling_report.py: matched by key; outcome, detail, metrics; not what a run measures). Results and
# samples go to OUTDIR/gK.
# Usage: tools/gpu/gpu_scaling.sh [--gpus "1 2 4"] [--out DIR] [-- lab replay args...]
# Example: tools/gpu/gpu_scaling.sh --gpus "1 2 4" -- --seeds 1000 --incident 0001 --incident 0008
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu/gpu_util.sh
gpus="1 2 4"
out=build/gpu-scaling
lab=${LAB_BIN:-build/lab}
while [ $# -gt 0 ]; do
    case "$1" in
        --gpus) gpus="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --) shift; break ;;
        *) echo "gpu_scaling.sh: unknown flag '$1' (see the header of $0)" >&2; exit 2 ;;
    esac
done
[ -x "$lab" ] || { echo "gpu_scaling.sh: $lab not built (make)" >&2; exit 2; }
have=$(gpu_count)
export NCCL_NVLS_ENABLE=0 # never NVLink multicast on shared hosts
mkdir -p "$out"
first=""
t1=""
rows=()
for k in $gpus; do
    if [ "$k" -gt "$have" ]; then echo "gpu_scaling.sh: $k GPUs asked, $have here: skipped" >&2; continue; fi
    dir="$out/g$k"
    rm -rf "$dir"
    vis=$(seq -s, 0 $((k - 1)))
    gpu_util_start "$dir.util.csv"
    start=$(date +%s.%N)
    CUDA_VISIBLE_DEVICES=$vis "$lab" replay --backend cuda --no-plots --out "$dir" "$@" >"$dir.log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    gpu_util_stop
    row=$(python3 - "$dir" "$k" "$rc" "$start" "$end" "${first:-}" "${t1:-}" "$(gpu_util_mean "$dir.util.csv" "$k")" <<'PY'
import json, sys
d, k, rc, start, end, first, t1, um = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), float(sys.argv[5]), sys.argv[6], sys.argv[7], sys.argv[8]
try:
    s = json.load(open(d + "/summary.json"))
    wall, own = end - start, s.get("wall_s", 0.0)
    n = sum(1 for _ in open(d + "/results.jsonl"))
except (OSError, ValueError):
    print("%d GPU: no result set (exit %s)" % (k, rc)); sys.exit()
# um: each GPU's busy share over the replay (gpu_util.sh: samples taken while it ran)
# case by case, matched by key, what a run measures set aside (mpi_scaling_report.py's comparison): race outputs of
# bug variants and the order of float atomics (0002's r2r) differ between two runs of one build, and are named
sys.path.insert(0, "replay")
import mpi_scaling_report as msr
same = msr.compare(first, d).splitlines()[0].rstrip(":") if first else "first"
sp = float(t1) / wall if t1 else 1.0
print("%d GPU%s  exit %s  %s  wall %.1f s (replay %.1f s)  %d cases  %.0f cases/s  speed-up %.2fx  util %s  results %s" %
      (k, "" if k == 1 else "s", rc, "OK" if s.get("ok") else "NOT OK", wall, own, n, n / wall, sp, um, same))
PY
)
    echo "$row"
    rows+=("$row")
    if [ -z "$first" ] && [ -f "$dir/summary.json" ]; then
        first=$dir
        t1=$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$start" "$end")
    fi
    grep -E "^scheduler|^cuda:|rerunning|NOT OK|: OK|ERROR|REGRESSED" "$dir.log" | head -n 12
done
echo "== scaling ($(nproc) CPUs online)"
printf '%s\n' "${rows[@]}"
