#!/bin/bash
# Session 17, call 1 (4-GPU host): HEAD (352dfc3, .visit/lab-n) on a GPU for the first time: 0006 on NCCL (100 seeds),
# make replay's command on 4 GPUs and on 1, --mpi -np 2 / -np 4 against the plain 4-GPU replay (rounds), the scaling
# table (1, 2, 4 GPUs), and -j 48 on 2 and 4 GPUs.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$PWD/.gpu/lib PYTHONUNBUFFERED=1
S=s17c1; W=/tmp/w/$S; mkdir -p $W; T0=$(date +%s); LAB=.visit/lab-n
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
left() { [ $(( $(date +%s) - T0 )) -lt "$1" ]; }
pack() { (cd /tmp/w && tar czf $OUT/$S.tgz --exclude='*.png' --exclude='*.svg' --exclude='*.html' --exclude='report.json' --exclude='cases' --exclude='*.dat' --exclude='junit.xml' --exclude='traces' --exclude='results.jsonl' --exclude='*.tap' --exclude='plots' $S) 2>/dev/null; }
{ nvidia-smi -L | cut -c1-90; echo "nproc $(nproc)"; cat /sys/fs/cgroup/cpu.max 2>/dev/null; nvidia-smi --query-gpu=driver_version,persistence_mode --format=csv,noheader | head -4; mpirun --version 2>&1 | head -1; } | tee $W/host.txt
I="--seeds 1000 --incident 0001 --incident 0002 --incident 0003 --incident 0004 --incident 0005 --incident 0008"
cmd() { local name=$1 lim=$2; shift 2; el "$name"; local s=$(date +%s%N)
  timeout -s INT $lim "$@" --out $W/$name > $W/$name.log 2>&1; local rc=$?; local e=$(date +%s%N)
  echo "  exit $rc, command $(( (e - s) / 1000000 )) ms; $(grep -E 'cases in' $W/$name.log | tail -1)"
  grep -E "SKIP|ERROR|NOT OK|false" $W/$name.log | grep -v "trace of this" | head -6
  cp $W/$name/summary.json $W/$name.summary.json 2>/dev/null; pack; }
# 1. 0006 on NCCL with the one-pass pick
cmd nccl0006 120 $LAB replay --backend cuda --incident 0006 --seeds 100
python3 - $W/nccl0006/results.jsonl <<'PY' | tee $W/nccl0006.jobs.txt
import json,sys,collections
c=collections.Counter(); w=[]; o=collections.Counter(); t=collections.defaultdict(list)
for l in open(sys.argv[1]):
    r=json.loads(l); m=r.get('metrics',{})
    c[int(m.get('job',-1))]+=1; w.append(m.get('job_wait_s',0) or 0); o[(r['variant'],r['outcome'])]+=1; t[r['variant']].append(r['wall_s'])
print('cases by job', sorted(c.items())); print('outcomes', sorted(o.items()))
print("job_wait_s max %.3f sum %.3f"%(max(w),sum(w)))
for v,x in sorted(t.items()): x.sort(); print('%-18s wall median %.3f p90 %.3f max %.3f'%(v,x[len(x)//2],x[int(len(x)*.9)],x[-1]))
PY
# 2. make replay's command on 4 GPUs and on 1
cmd make-replay-4gpu 90 $LAB replay --backend auto
CUDA_VISIBLE_DEVICES=0 cmd make-replay-1gpu 40 $LAB replay --backend auto
ranks() { grep -A5 "^rank  host" $1 | awk 'NR>1 && NF>5{printf " r%s %s chunks %s cases %ss;", $1, $6, $7, $9} END{print ""}'; }
plain() { local name=$1; el "$name"
  LAB_BIN=$LAB timeout -s INT 60 replay/gpu_scaling.sh --gpus 4 --out $W/$name -- $I --quiet 2>&1 | grep -E "^[0-9] GPU" | head -1; pack; }
mpi() { local name=$1 np=$2 base=$3; el "$name"
  LAB_BIN=$LAB timeout -s INT 70 replay/mpi_scaling.sh --ranks "$np" --out $W/$name -- --backend cuda $I >/dev/null 2>&1
  echo "  mpirun wall $(cut -d' ' -f1 $W/$name/time-np$np | tail -1) s; clock $(grep -o 'in [0-9.]* s' $W/$name/log-np$np | head -1);$(ranks $W/$name/log-np$np)"
  echo "  vs plain: $(python3 replay/mpi_scaling_report.py $base $W/$name/np$np 2>&1 | head -1)"; pack; }
# 3. --mpi against the plain replay, rounds a, b
for r in a b; do
  left 330 || break
  plain plain-$r
  mpi np2-$r 2 $W/plain-$r/g4
  mpi np4-$r 4 $W/plain-$r/g4
done
# 4. the scaling table, one round
if left 400; then el scaling
  LAB_BIN=$LAB timeout -s INT 140 replay/gpu_scaling.sh --gpus "1 2 4" --out $W/sc -- $I --quiet > $W/sc.txt 2>&1
  grep -E "^[0-9] GPU" $W/sc.txt | sort -u
  for g in 1 2 4; do [ -f $W/sc/g$g/results.jsonl ] && python3 replay/case_timeline.py $W/sc/g$g/results.jsonl > $W/sc/g$g.timeline.txt 2>&1 && sed -n 2p $W/sc/g$g.timeline.txt; done; pack; fi
# 5. -j 48 on 2 and on 4 GPUs
for g in 2 4; do left 520 || break; el "j48 g$g"
  LAB_BIN=$LAB timeout -s INT 45 replay/gpu_scaling.sh --gpus $g --out $W/j48-g$g -- $I --quiet -j 48 2>&1 | grep -E "^[0-9] GPU" | head -1; pack; done
# 6. a third round of --mpi if time is left
if left 520; then plain plain-c; left 545 && mpi np2-c 2 $W/plain-c/g4; fi
el done; pack
