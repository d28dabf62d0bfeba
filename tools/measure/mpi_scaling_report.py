#!/usr/bin/env python3
"""mpi_scaling_report.py: one run of tools/measure/mpi_scaling.sh against the first: prints whether its results.jsonl equals
the first run's case by case (what a run measures set aside: the per-run fields, metrics named *_s and orphans_found,
times in a detail line; the replay command is compared without its program, so two builds compare), then one line with
each rank's chunks, cases and run time from summary.json's "ranks" and the spread between the first and the last rank
to finish. Python standard library only.

Usage: tools/measure/mpi_scaling_report.py FIRST_DIR RUN_DIR
"""
import json
import os
import re
import sys

PER_RUN = ("wall_s", "cpu_s", "done_s", "worker", "first_run")
MEASURED = ("orphans_found",)  # besides every metric named *_s or ms_* (times a case measured)
TIME = re.compile(r"\b\d+(\.\d+)? ?(ms|s)\b")


def load(d):
    """The run's cases with what a run measures set aside."""
    with open(os.path.join(d, "results.jsonl"), encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    for r in rows:
        for k in PER_RUN:
            r.pop(k, None)
        m = r.get("metrics") or {}
        for k in [k for k in m if k.endswith("_s") or k.startswith("ms_") or k in MEASURED]:
            del m[k]
        r["detail"] = TIME.sub("<time>", r.get("detail", ""))
        # the replay command without its program, so that two builds of the lab (A/B on one host) compare
        r["replay"] = r.get("replay", "").partition(" ")[2]
    return rows


def key(r):
    return (r.get("incident", ""), r.get("variant", ""), str(r.get("seed", "")))


def differences(a, b):
    """Where two runs' cases differ, matched by (incident, variant, seed) whatever order they were written in:
    (cases that differ, {(incident, variant, field): count}); a field is outcome, detail, metric NAME, or "missing"."""
    ia, ib = {key(r): r for r in a}, {key(r): r for r in b}
    where, n = {}, 0
    for k in sorted(set(ia) | set(ib)):
        x, y = ia.get(k), ib.get(k)
        fields = ["missing"] if x is None or y is None else [f for f in x if f != "metrics" and x.get(f) != y.get(f)]
        if x is not None and y is not None:
            mx, my = x.get("metrics") or {}, y.get("metrics") or {}
            fields += ["metric " + m for m in sorted(set(mx) | set(my)) if mx.get(m) != my.get(m)]
        n += bool(fields)
        for f in fields:
            where[(k[0], k[1], f)] = where.get((k[0], k[1], f), 0) + 1
    return n, where


def compare(first, this):
    try:
        b = load(this)
        if os.path.samefile(first, this):
            return "first (%d cases)" % len(b)
        a = load(first)
    except (OSError, ValueError) as e:
        return "no results (%s)" % e
    n, where = differences(a, b)
    if n == 0:
        return "equal (%d cases)" % len(a)
    fields = {f for _, _, f in where}
    verdict = "DIFFERENT" if fields & {"outcome", "missing"} else \
        "outcomes equal, metrics differ" if all(f.startswith("metric ") for f in fields) else "outcomes equal, details differ"
    lines = ["%s (%d vs %d cases, %d differ):" % (verdict, len(a), len(b), n)]
    lines += ["    %s %s %s: %d" % (i, v, f, c) for (i, v, f), c in sorted(where.items(), key=lambda t: -t[1])[:12]]
    return "\n".join(lines)


def ranks_line(this):
    try:
        with open(os.path.join(this, "summary.json"), encoding="utf-8") as f:
            ranks = json.load(f).get("ranks") or []
    except (OSError, ValueError):
        ranks = []
    if not ranks:
        return "  (no ranks in summary.json)"
    cells = []
    for r in ranks:
        cell = "r%d %s: %d chunks %d cases %.1f s" % (r.get("rank", -1), r.get("host") or "?", r.get("chunks", 0),
                                                    r.get("cases", 0), r.get("wall_s", 0.0))
        if r.get("status") != "done":
            cell += " " + str(r.get("status"))
        cells.append(cell)
    walls = [r.get("wall_s", 0.0) for r in ranks if r.get("status") == "done"]
    spread = " (finish spread %.1f s)" % (max(walls) - min(walls)) if len(walls) > 1 else ""
    return "  " + " | ".join(cells) + spread


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    print(compare(argv[0], argv[1]))
    print(ranks_line(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
