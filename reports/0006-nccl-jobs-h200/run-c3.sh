#!/bin/bash
# Session 16, call 3: the old half of call 2 (a82bafd's 0006, one job), root set up with the incidents it reads.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
S=s16c3; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s)
R=/tmp/oldroot; rm -rf $R; mkdir -p $R; git archive a82bafd incidents 2>/dev/null | tar x -C $R || cp -r incidents $R/; cp -r .visit/old/build $R/
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='*.png' --exclude='junit.xml' --exclude='plots' $S) 2>/dev/null; }
nvidia-smi -L | cut -c1-90 | tee $W/host.txt
s=$(date +%s%N); LAB_ROOT=$R timeout -s INT 200 $R/build/lab replay --backend cuda --incident 0006 --seeds 100 --out $W/old-0006-100 > $W/old-0006-100.log 2>&1; rc=$?; e=$(date +%s%N)
echo "old-0006-100: exit $rc, command $(( (e - s) / 1000000 )) ms"; grep -vE "trace of this|^progress|^0006 seed|^\[" $W/old-0006-100.log | tail -8
pack
