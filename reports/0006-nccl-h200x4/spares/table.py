#!/usr/bin/env python3
"""The NCCL runs of this folder, per variant: cases, outcomes, distinct seeds, mean case wall, the communicator wait
(comm_s), the largest detection latency; and the union of seeds over the default-configuration runs (spares 2, NCCL's
own channel settings). Usage: python3 table.py (from this folder)."""
import collections, glob, gzip, json, os

here = os.path.dirname(os.path.abspath(__file__))
runs = sorted(d for d in glob.glob(os.path.join(here, "call*")) if os.path.exists(os.path.join(d, "results.jsonl.gz")))
union = collections.defaultdict(lambda: collections.Counter())
seeds = collections.defaultdict(set)
for d in runs:
    name = os.path.basename(d)
    rows = [json.loads(l) for l in gzip.open(os.path.join(d, "results.jsonl.gz"), "rt")]
    s = json.load(open(os.path.join(d, "summary.json")))
    n = len(rows)
    print("%-16s %4d cases in %6.1f s: %.3f s a case%s" % (name, n, s.get("wall_s", 0), s.get("wall_s", 0) / max(n, 1),
                                                             " (interrupted)" if s.get("interrupted") else ""))
    by = collections.defaultdict(list)
    for r in rows:
        by[r["variant"]].append(r)
    for v, rs in sorted(by.items()):
        m = [r.get("metrics") or {} for r in rs]
        oc = collections.Counter(r["outcome"] for r in rs)
        print("    %-17s %s  mean wall %.3f s  comm mean %.3f max %.3f s  detect max %.3f s" % (
            v, " ".join("%s %d" % kv for kv in sorted(oc.items())), sum(r.get("wall_s", 0) for r in rs) / len(rs),
            sum(x.get("comm_s") or 0 for x in m) / len(m), max(x.get("comm_s") or 0 for x in m),
            max(x.get("detect_latency_s") or 0 for x in m)))
        if "lean" not in name and "sp0" not in name:
            union[v].update(oc)
            seeds[v].update(r["seed"] for r in rs)
print("default configuration (spares 2), every run together:")
for v in sorted(union):
    print("    %-17s %s over %d distinct seeds" % (v, " ".join("%s %d" % kv for kv in sorted(union[v].items())), len(seeds[v])))
