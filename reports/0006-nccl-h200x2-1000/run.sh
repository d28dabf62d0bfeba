#!/bin/bash
# 2-GPU call: 0006 on NCCL after the spare-order fix, lean communicators (the default): SEEDS seeds of every variant
# from FIRST (SIGINT at 540 s keeps what finished), then the NCCL test (every rank in the Perfetto trace).
# Usage: .visit/call5.sh FIRST SEEDS TAG
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
first=$1 seeds=$2 tag=$3; W=/tmp/w/$tag; mkdir -p $W; T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
nvidia-smi -L; nproc; nvidia-smi topo -m | head -4
el "0006 on NCCL, seeds $first.. ($seeds), lean default"
DSH_NCCL_TIMES=$W/times timeout -s INT 540 build/lab replay --backend cuda --incident 0006 --seeds $seeds --first-seed $first --no-plots --out $W/res > $W/res.log 2>&1
echo "exit $?"; tail -6 $W/res.log
python3 .visit/sumr.py $W/res $W/times
el "NCCL test"
timeout 40 build/lab-tests --filter 'dsh_job/nccl_backend_skips_or_runs' 2>&1 | tail -3
el "done"
cd /tmp/w && tar czf $OUT/$tag.tgz --exclude='*.trace.json' $tag 2>/dev/null; cp build/traces/0006-distill-step-hang/bug-as-logged-cuda-seed1.trace.json $OUT/ 2>/dev/null; ls -la $OUT
