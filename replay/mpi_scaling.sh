#!/bin/bash
# mpi_scaling.sh: times `lab replay --mpi` on the same cases at several rank counts, prints the speed-up
# over one rank, and checks that every run's results.jsonl equals the one-rank run case by case (outcome, detail,
# metrics: the per-run fields wall_s, cpu_s, done_s, worker and first_run left out).
# Usage: replay/mpi_scaling.sh [--ranks "1 2 4"] [--jobs J] [--out DIR] [-- lab replay args...]
#   --jobs J   cases at once per rank (default: the lab's own, online CPUs / ranks on the host); with
#              --jobs 1 the rank count is the only parallelism, which isolates the scaling of the split.
# Example (two GPUs): replay/mpi_scaling.sh --ranks "1 2" -- --backend cuda --seeds 256
set -euo pipefail
ranks="1 2 4"
jobs=""
out=build/mpi-scaling
lab=${LAB_BIN:-build/lab}
while [ $# -gt 0 ]; do
    case "$1" in
        --ranks) ranks="$2"; shift 2 ;;
        --jobs) jobs="-j $2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --) shift; break ;;
        *) echo "mpi_scaling.sh: unknown flag '$1' (see the header of $0)" >&2; exit 2 ;;
    esac
done
[ -x "$lab" ] || { echo "mpi_scaling.sh: $lab not built (make)" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "mpi_scaling.sh: mpirun not found (mk/deps.sh installs Open MPI)" >&2; exit 2; }
root_flags=()
[ "$(id -u)" = 0 ] && root_flags=(--allow-run-as-root)
mkdir -p "$out"
first=""
t1=""
printf "%-6s %10s %10s %10s %8s  %s\n" ranks wall_s user_s sys_s speedup "results vs first"
for np in $ranks; do
    dir="$out/np$np"
    rm -rf "$dir"
    /usr/bin/time -f "%e %U %S" -o "$out/time-np$np" mpirun "${root_flags[@]}" --oversubscribe -np "$np" \
        "$lab" replay --mpi --no-plots --quiet $jobs --out "$dir" "$@" >"$out/log-np$np" 2>&1 || true
    read -r wall user sys <"$out/time-np$np"
    [ -z "$t1" ] && t1=$wall
    same=first
    if [ -n "$first" ]; then
        same=$(python3 - "$first/results.jsonl" "$dir/results.jsonl" <<'EOF'
import json, sys
def load(p):
    rows = [json.loads(l) for l in open(p)]
    for r in rows:
        for k in ("wall_s", "cpu_s", "done_s", "worker", "first_run"):
            r.pop(k, None)
    return rows
a, b = load(sys.argv[1]), load(sys.argv[2])
print("equal (%d cases)" % len(a) if a == b else "DIFFERENT (%d vs %d cases)" % (len(a), len(b)))
EOF
)
    else
        first=$dir
    fi
    printf "%-6s %10s %10s %10s %8.2f  %s\n" "$np" "$wall" "$user" "$sys" "$(python3 -c "print($t1/$wall)")" "$same"
done
echo "load average now: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
