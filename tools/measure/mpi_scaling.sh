#!/bin/bash
# mpi_scaling.sh: times `lab replay --mpi` on the same cases at several rank counts, prints the speed-up over the
# first, each rank's share (seed-group chunks dealt, cases, its own run time) and the spread between the first and the
# last rank to finish, and checks that every run's results.jsonl equals the first run's case by case: outcome, detail,
# metrics, replay command, with what a run measures set aside (the per-run fields wall_s, cpu_s, done_s, worker,
# first_run; metrics named *_s, wall-clock seconds a case measured, and orphans_found, the processes a hang left
# behind; times such as "1.8 ms" in a detail line), and each GPU's mean utilisation over the run (gpu_util.sh).
# Usage: tools/measure/mpi_scaling.sh [--ranks "1 2 4"] [--jobs J] [--out DIR] [-- lab replay args...]
#   --ranks    rank counts to time, all on this host (one rank drives all its GPUs; k ranks split them k ways)
#   --jobs J   cases at once per rank (default: the lab's own, lab_sched_workers on the rank's share of the host);
#              with --jobs 1 the rank count is the only parallelism, which isolates the scaling of the dealing.
# Example (a host of four GPUs): tools/measure/mpi_scaling.sh --ranks "1 2 4" -- --backend cuda --seeds 256
set -euo pipefail
ranks="1 2 4"
jobs=""
out=build/mpi-scaling
lab=${LAB_BIN:-build/lab}
here=$(dirname "$0")
. "$here/../gpu/gpu_util.sh"
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
# hwloc's GPU plugins are most of mpirun's own start on a GPU host (1.2 s of `mpirun -np 4 true` on 4 x H200, 0.07 s
# without them); nothing here binds by its topology. A value the caller set stays.
export HWLOC_COMPONENTS=${HWLOC_COMPONENTS--gl,-cuda,-nvml,-opencl,-rsmi}
root_flags=()
[ "$(id -u)" = 0 ] && root_flags=(--allow-run-as-root)
mkdir -p "$out"
first=""
t1=""
printf "%-6s %10s %10s %10s %8s  %s\n" ranks wall_s user_s sys_s speedup "results vs first"
for np in $ranks; do
    dir="$out/np$np"
    rm -rf "$dir"
    gpu_util_start "$out/util-np$np.csv"
    /usr/bin/time -f "%e %U %S" -o "$out/time-np$np" mpirun "${root_flags[@]}" --oversubscribe --bind-to none -np "$np" \
        "$lab" replay --mpi --no-plots --quiet $jobs --out "$dir" "$@" >"$out/log-np$np" 2>&1 || true
    gpu_util_stop
    # (a replay that is NOT OK exits 1: time then writes "Command exited with non-zero status 1" first)
    read -r wall user sys < <(tail -n 1 "$out/time-np$np")
    [ -z "$t1" ] && t1=$wall
    [ -z "$first" ] && first=$dir
    # line 1: the comparison with the first run; line 2: the ranks
    report=$(python3 "$here/mpi_scaling_report.py" "$first" "$dir")
    printf "%-6s %10s %10s %10s %8.2f  %s\n" "$np" "$wall" "$user" "$sys" "$(python3 -c "print($t1/$wall)")" \
        "$(head -n 1 <<<"$report")"
    tail -n +2 <<<"$report"
    echo "       GPU busy: $(gpu_util_mean "$out/util-np$np.csv" "$(gpu_count)")"
done
echo "load average now: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
