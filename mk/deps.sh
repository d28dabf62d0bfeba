#!/usr/bin/env bash
# mk/deps.sh: makes sure the lab's build and run dependencies are installed (Debian packages).
# Usage: mk/deps.sh [--fuzz|--slurm]   Installs what is missing with apt-get (as root, or through sudo);
# elsewhere stops with a message naming the packages to install. Prints nothing when all is present.
set -u
need=()
have_pc() { pkg-config --exists "$1" 2>/dev/null; }
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
command -v cc >/dev/null 2>&1 || need+=(gcc)
command -v make >/dev/null 2>&1 || need+=(make)
have_pc criterion || need+=(libcriterion-dev)
have_pc libcjson || need+=(libcjson-dev)
have_pc libcrypto || need+=(libssl-dev)
command -v gnuplot >/dev/null 2>&1 || need+=(gnuplot-nox)
/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1 || need+=(python3-numpy)
command -v mpirun >/dev/null 2>&1 || need+=(openmpi-bin)
have_pc ompi-c || need+=(libopenmpi-dev)
# lab report's page is checked in a real headless browser (tests/test_report.c).
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if [ "${1:-}" = "--fuzz" ]; then
  command -v clang >/dev/null 2>&1 || need+=(clang)
  ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 || need+=(libclang-rt-14-dev)
fi
# `make test-slurm`: a one-node Slurm cluster of the tests' own (tests/python/slurm_cluster.py)
if [ "${1:-}" = "--slurm" ]; then
  command -v slurmctld >/dev/null 2>&1 || need+=(slurmctld)
  command -v slurmd >/dev/null 2>&1 || need+=(slurmd)
  command -v srun >/dev/null 2>&1 || need+=(slurm-client)
  command -v munged >/dev/null 2>&1 || need+=(munge)
fi
[ ${#need[@]} -eq 0 ] && exit 0

echo "deps: missing: ${need[*]}" >&2
if ! command -v apt-get >/dev/null 2>&1; then
  echo "deps: this is not a Debian-like system; install the equivalents of: ${need[*]}" >&2
  exit 1
fi
if [ "$(id -u)" = 0 ]; then sudo=""; elif command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
  echo "deps: not root and no sudo; run as root: apt-get install -y ${need[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# Update the package lists once per machine unless they are fresh (under a day old).
if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null | head -n1)" ]; then
  $sudo apt-get update -qq || { echo "deps: apt-get update failed" >&2; exit 1; }
fi
if ! $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/tmp/lab-deps.log 2>&1; then
  echo "deps: apt-get install ${need[*]} failed; see /tmp/lab-deps.log" >&2
  tail -n 20 /tmp/lab-deps.log >&2
  exit 1
fi
echo "deps: installed ${need[*]}" >&2
