#!/usr/bin/env python3
"""results_diff.py: compares two results.jsonl files case by case (the lab's own check that a refactoring
kept every outcome). Cases are keyed by (incident, variant, seed, backend); for each case present in both it
compares the outcome, the metrics (exactly, NaN equal to NaN, metrics named by --ignore-metric skipped) and,
unless --ignore-detail, the detail line. Prints one line per difference and a summary; exit 0 when the two
agree on every common case and neither has cases the other lacks, 1 otherwise, 2 on unreadable input.

Usage: tools/dev/results_diff.py A/results.jsonl B/results.jsonl [--ignore-metric NAME]... [--ignore-detail ID]...
"""
import json
import math
import sys


def load(path):
    cases = {}
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                o = json.loads(line)
                cases[(o["incident"], o["variant"], o["seed"], o["backend"])] = o
    except (OSError, ValueError, KeyError) as e:
        print(f"results_diff: {path}: {e}", file=sys.stderr)
        sys.exit(2)
    return cases


def same(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def main(argv):
    args, ignore_m, ignore_d = [], set(), set()
    i = 0
    while i < len(argv):
        if argv[i] == "--ignore-metric" and i + 1 < len(argv):
            ignore_m.add(argv[i + 1])
            i += 2
        elif argv[i] == "--ignore-detail" and i + 1 < len(argv):
            ignore_d.add(argv[i + 1])
            i += 2
        else:
            args.append(argv[i])
            i += 1
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    a, b = load(args[0]), load(args[1])
    diffs = 0
    for k in sorted(set(a) | set(b), key=str):
        if k not in a or k not in b:
            print(f"{k}: only in {'B' if k not in a else 'A'}")
            diffs += 1
            continue
        x, y = a[k], b[k]
        if x["outcome"] != y["outcome"]:
            print(f"{k}: outcome {x['outcome']} -> {y['outcome']}")
            diffs += 1
        if k[0] not in ignore_d and not any(k[0].startswith(p) for p in ignore_d) and x.get("detail") != y.get("detail"):
            print(f"{k}: detail\n  A: {x.get('detail')}\n  B: {y.get('detail')}")
            diffs += 1
        mx, my = x.get("metrics") or {}, y.get("metrics") or {}
        for m in sorted(set(mx) | set(my)):
            if m in ignore_m:
                continue
            if m not in mx or m not in my or not same(mx[m], my[m]):
                print(f"{k}: metric {m} {mx.get(m, 'absent')} -> {my.get(m, 'absent')}")
                diffs += 1
    common = len(set(a) & set(b))
    print(f"results_diff: {common} common cases, {len(set(a) ^ set(b))} in one only, {diffs} differences")
    return 0 if diffs == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
