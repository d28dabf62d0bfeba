#!/bin/sh
# mpi_fault_loop.sh: runs the dead-rank or hung-rank MPI replay (what tests/test_mpi.c does) N times in a
# row, each under its own deadline, and counts runs that hung, ran past their bound, lost their files,
# left a process behind (pgrep -f on the run's folder) or left Open MPI session files. By hand, not in
# `make test`:  tests/mpi_fault_loop.sh crash 200   |   tests/mpi_fault_loop.sh hang 50 [TIMEOUT_S]
# Exit 0 when every run was clean.
set -u
kind=${1:?crash or hang}; n=${2:-200}; to=${3:-15}
lab=${LAB_BIN:-build/lab}
# Bound: crash, start-up + cases + abort; hang, the watchdog + LAB_MPI_GRACE_S (10) + end grace (20) + slack.
if [ "$kind" = crash ]; then bound=60; else bound=$((to + 10 + 20 + 30)); fi
root=$(mktemp -d /tmp/lab-mpi-loop-XXXXXX)
bad=0; late=0; lost=0; left=0; files=0; maxw=0
i=1
while [ "$i" -le "$n" ]; do
  out=$root/run$i; mkdir -p "$out.ompi"
  t0=$(date +%s.%N)
  LAB_MPI_TEST_FAULT=$kind:1 OMPI_MCA_orte_tmpdir_base=$out.ompi OMPI_ALLOW_RUN_AS_ROOT=1 \
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
    timeout -k 5 $((bound + 60)) setsid mpirun --enable-recovery -np 2 "$lab" replay --mpi --incident 0004 \
    --seeds 4 --no-plots --quiet --timeout "$to" --out "$out" >"$out.log" 2>&1
  rc=$?
  w=$(echo "$(date +%s.%N) - $t0" | bc)
  [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && { bad=$((bad + 1)); echo "run $i: HUNG (killed at its deadline)"; }
  [ "$(echo "$w > $bound" | bc)" = 1 ] && { late=$((late + 1)); echo "run $i: took $w s > $bound s"; }
  [ "$(echo "$w > $maxw" | bc)" = 1 ] && maxw=$w
  [ "$(wc -l <"$out/results.jsonl" 2>/dev/null || echo 0)" -eq 8 ] || { lost=$((lost + 1)); echo "run $i: results.jsonl lost"; }
  sleep 0.2
  p=$(pgrep -f -- "$out" | wc -l)
  [ "$p" -eq 0 ] || { left=$((left + p)); echo "run $i: $p processes left:"; pgrep -af -- "$out"; pkill -9 -f -- "$out"; }
  f=$(find "$out.ompi" -type f | wc -l)
  [ "$f" -eq 0 ] || { files=$((files + 1)); echo "run $i: $f Open MPI session files left"; }
  rm -rf "$out" "$out.ompi" "$out.log"
  i=$((i + 1))
done
rmdir "$root" 2>/dev/null
echo "$kind x $n (timeout $to s): hung $bad, past bound ($bound s) $late, results lost $lost, processes left $left, runs with session files left $files; longest run $maxw s"
[ $((bad + late + lost + left + files)) -eq 0 ]
