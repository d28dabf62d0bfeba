#!/bin/bash
# Session 16, call 1 (the host's GPUs, 2 or 4): 0006 with jobs that take turns (.visit/lab-n, this tree's build): a short NCCL
# replay as a check, then lab report --backend cuda --seeds 1000 on every GPU of the host, its set under build/ (kept on a warm
# machine for a resume).
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
S=s16c1; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s); LAB=.visit/lab-n
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='*.png' --exclude='*.svg' --exclude='*.html' --exclude='report.json' --exclude='cases' --exclude='*.dat' --exclude='junit.xml' --exclude='traces' --exclude='results.jsonl' --exclude='*.tap' --exclude='plots' $S) 2>/dev/null; }
{ nvidia-smi -L | cut -c1-90; echo "nproc $(nproc)"; cat /sys/fs/cgroup/cpu.max 2>/dev/null; nvidia-smi --query-gpu=driver_version,persistence_mode --format=csv,noheader | head -4; mpirun --version 2>&1 | head -1; ls /usr/lib/x86_64-linux-gnu/libnccl* /usr/local/cuda*/lib*/libnccl.so.2* 2>/dev/null | head -3; } | tee $W/host.txt
el "check: 0006 on NCCL, 16 seeds"
timeout -s INT 90 $LAB replay --backend cuda --incident 0006 --out $W/check > $W/check.log 2>&1; echo "exit $?"
grep -vE "trace of this|^\[" $W/check.log | tail -9
python3 - $W/check/results.jsonl <<'PY' | tee $W/check.jobs.txt
import json,sys,collections
c=collections.Counter(); w=[]
for l in open(sys.argv[1]):
    r=json.loads(l); m=r.get('metrics',{})
    c[(r['variant'],int(m.get('job',-1)))]+=1; w.append(m.get('job_wait_s',0) or 0)
print(sorted(c.items())); print("job_wait_s max %.3f sum %.3f"%(max(w),sum(w)))
PY
grep -q "every fix holds" $W/check.log || { el "check failed"; pack; exit 1; }
pack
el "report, every GPU"
s=$(date +%s%N); timeout -s INT 575 $LAB report --backend cuda --seeds 1000 --out build/s16-repN > $W/repN.log 2>&1; rc=$?; e=$(date +%s%N)
echo "report exit $rc, command $(( (e - s) / 1000000 )) ms"
grep -vE "trace of this|^\[" $W/repN.log | tail -45
cp build/s16-repN/summary.json $W/repN.summary.json 2>/dev/null
el done; pack
