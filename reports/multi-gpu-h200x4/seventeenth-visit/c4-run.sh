#!/bin/bash
# Call 4 (one GPU): the threads test again, its GPU half comparing verdicts only (call 3 found GPU metrics that differ
# between any two runs), three times.
set -u
for f in .visit-x/*.gz; do b=$(basename $f .gz); [ -x .visit/$b ] || { mkdir -p .visit; gzip -dc $f > .visit/$b; chmod +x .visit/$b; }; done
export LD_LIBRARY_PATH=$PWD/.gpu/lib
mkdir -p build && cp .visit/lab-new build/lab
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for i in 1 2 3; do LAB_BIN=build/lab timeout 120 .visit/lab-tests --filter 'incidents/a_case_on_a_thread*' --verbose 2>&1 | grep -E "^\[(PASS|FAIL|----)\]|Synthesis"; done
