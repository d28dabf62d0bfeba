#!/usr/bin/env bash
# replay/gpu_bundle.sh: builds the lab and its tests here (CUDA on, sm_90) and copies the shared
# libraries they need that a bare GPU machine may lack (cJSON, Criterion and its dependencies, the CUDA
# runtime) into .gpu/lib, so `.gpu` and `build` can be carried to a lent GPU machine that cannot install
# packages. Then run replay/gpu_check.sh there.
set -euo pipefail
cd "$(dirname "$0")/.."
make -j"$(nproc)" CUDA=1 CUDA_ARCH="${CUDA_ARCH:-sm_90}" build/lab build/lab-tests
rm -rf .gpu && mkdir -p .gpu/lib
for bin in build/lab build/lab-tests; do
  ldd "$bin" | awk '/=> \//{print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libresolv.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libgcc_s.so*|libstdc++.so*) ;;
      *) cp -Ln "$lib" .gpu/lib/ ;;
    esac
  done
done
du -sh .gpu build | cat
