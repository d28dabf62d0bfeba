#!/usr/bin/env python3
"""case_timeline.py RESULTS.jsonl[.gz]: where a replay's wall time went, from its per-case records (wall_s, cpu_s,
done_s, worker): when the first case finished, each worker's first case (its start-up: context, modules) against the
others, and how many cases finished in each 2-second window."""
import collections, gzip, json, statistics, sys

def main(path):
    op = gzip.open if path.endswith(".gz") else open
    rs = [json.loads(l) for l in op(path, "rt") if l.strip()]
    rs = [r for r in rs if "done_s" in r and "worker" in r]
    if not rs:
        sys.exit("no per-case timing in " + path)
    rs.sort(key=lambda r: r["done_s"])
    first = {}
    for r in rs:
        first.setdefault(r["worker"], r)
    f = list(first.values())
    rest = [r for r in rs if first[r["worker"]] is not r]
    print(f"{len(rs)} cases, {len(f)} workers; last done at {rs[-1]['done_s']:.1f} s, first at {rs[0]['done_s']:.2f} s")
    print("workers' first case: wall median %.2f s (max %.2f), cpu median %.2f s; started at %.2f..%.2f s" % (
        statistics.median(r["wall_s"] for r in f), max(r["wall_s"] for r in f), statistics.median(r["cpu_s"] for r in f),
        min(r["done_s"] - r["wall_s"] for r in f), max(r["done_s"] - r["wall_s"] for r in f)))
    if rest:
        print("other cases: wall sum %.1f s, cpu sum %.1f s, median wall %.1f ms" % (
            sum(r["wall_s"] for r in rest), sum(r["cpu_s"] for r in rest), 1000 * statistics.median(r["wall_s"] for r in rest)))
    h = collections.Counter(int(r["done_s"] // 2) * 2 for r in rs)
    print("finished per 2 s: " + " ".join(f"{k}:{v}" for k, v in sorted(h.items())))

if __name__ == "__main__":
    main(sys.argv[1])
