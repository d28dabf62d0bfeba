#!/bin/bash
# Call 3 (one GPU): the test suite of the commit's build with a GPU present (the CUDA tests run instead of skipping),
# the new threads test among them.
set -u
for f in .visit-x/*.gz; do b=$(basename $f .gz); [ -x .visit/$b ] || { mkdir -p .visit; gzip -dc $f > .visit/$b; chmod +x .visit/$b; }; done
export LD_LIBRARY_PATH=$PWD/.gpu/lib NCCL_NVLS_ENABLE=0
mkdir -p build && cp .visit/lab-new build/lab
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
LAB_BIN=build/lab timeout 300 .visit/lab-tests --filter 'incidents/a_case_on_a_thread*' --verbose 2>&1 | grep -E "^\[(PASS|FAIL|----)\]|Synthesis"
LAB_BIN=build/lab timeout 420 .visit/lab-tests --jobs 16 > $OUT/suite.txt 2>&1; echo "suite exit $?"
grep -E "^\[(FAIL|PASS|SKIP)\]|Synthesis|CRASH" $OUT/suite.txt | grep -vE "^\[PASS\]" | grep -v "Test is disabled" | head -40
