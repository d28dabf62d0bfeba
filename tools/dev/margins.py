#!/usr/bin/env python3
"""margins.py: how close each variant's criterion metrics came to their bounds over a replay's seeds (max, median, quantiles, the seed of the max), from results.jsonl[.gz] and the incidents' metric specifications.

Usage: tools/dev/margins.py RESULTS [--specs REPORT_JSON] [--incident PREFIX]... [--all-roles] [--json]

RESULTS is a replay's results.jsonl (or .jsonl.gz). The bounds are the incidents' metric specifications
(`metric_specs` in lab/lab_incident.h) as `lab report` writes them into report.json: the report.json beside
RESULTS, or the one --specs names (any report of a lab with the same criteria). For a metric with a bound above
zero the margin is value / bound (the bound a number, or a metric of the same case such as 0001's `tol`); for a
lower bound (a cosine) it is (1 - value) / (1 - bound), as the lab's margin plot draws it: below 1 passes. A
census metric with bound 0 is reported as its raw maximum (must be 0). Non-finite values are counted, never
ranked. Quantiles are nearest-rank over the finite values.

Exit status: 0 when every fix variant's margins stay at or below 1 (and its census metrics at 0), 1 when one
does not, 2 for bad usage or input (the message names the file, line or field).
"""
import argparse
import gzip
import json
import math
import os
import sys


class InputError(Exception):
    """Bad input: the message names the file and the line or field."""


def read_results(path):
    """Records of a results.jsonl or .jsonl.gz. InputError naming path:line for a line that is not a JSON object
    with incident, variant, role, seed, backend and metrics."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            lines = f.readlines()
    except (OSError, EOFError) as e:
        raise InputError("%s: cannot read: %s" % (path, e))
    recs = []
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except ValueError as e:
            raise InputError("%s:%d: not JSON: %s" % (path, no, e))
        if not isinstance(r, dict):
            raise InputError("%s:%d: not a JSON object" % (path, no))
        for field in ("incident", "variant", "role", "seed", "backend"):
            if field not in r:
                raise InputError("%s:%d: field '%s' missing" % (path, no, field))
        m = r.get("metrics", {})
        if not isinstance(m, dict):
            raise InputError("%s:%d: field 'metrics' is not an object" % (path, no))
        r["metrics"] = m
        recs.append(r)
    return recs


def read_specs(path):
    """{incident id: [spec, ...]} from a lab report.json (its incidents' `metric_specs`). InputError naming the
    file and field when the file is not such a report."""
    try:
        with open(path, encoding="utf-8") as f:
            rep = json.load(f)
    except (OSError, ValueError) as e:
        raise InputError("%s: cannot read a report: %s" % (path, e))
    incs = rep.get("incidents") if isinstance(rep, dict) else None
    if not isinstance(incs, list):
        raise InputError("%s: field 'incidents' is not a list (not a lab report.json)" % path)
    specs = {}
    for i, inc in enumerate(incs):
        if not isinstance(inc, dict) or not isinstance(inc.get("id"), str):
            raise InputError("%s: incidents[%d].id missing" % (path, i))
        out = []
        for j, s in enumerate(inc.get("metric_specs") or []):
            if not isinstance(s, dict) or not isinstance(s.get("name"), str):
                raise InputError("%s: incidents[%d].metric_specs[%d].name missing" % (path, i, j))
            tol = s.get("tolerance", 0)
            if not isinstance(tol, (int, float)) or isinstance(tol, bool):
                raise InputError("%s: incidents[%d].metric_specs[%d].tolerance is not a number" % (path, i, j))
            out.append({"name": s["name"], "tolerance": float(tol),
                        "higher_is_worse": bool(s.get("higher_is_worse", True)),
                        "tolerance_metric": s.get("tolerance_metric")})
        specs[inc["id"]] = out
    return specs


def _num(v):
    """A metric value as a float, NaN for null, a string or anything else non-numeric."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return float("nan")
    return float(v)


def margin_of(spec, metrics):
    """The case's margin for one spec: value / bound (or (1 - value) / (1 - bound) for a lower bound); for a census
    spec (bound 0 and no bound metric) the raw value. NaN when the value or the case's own bound is missing or
    non-finite. Returns (margin, is_ratio)."""
    v = _num(metrics.get(spec["name"]))
    if spec.get("tolerance_metric"):
        bound = _num(metrics.get(spec["tolerance_metric"]))
    else:
        bound = spec["tolerance"]
    if not spec["higher_is_worse"]:
        den = 1.0 - bound
        return ((1.0 - v) / den if den > 0 else float("nan")), True
    if spec.get("tolerance_metric") or bound > 0:
        return (v / bound if bound > 0 else float("nan")), True
    return v, False


def quantile(sorted_vals, q):
    """Nearest-rank quantile of a sorted list (q in [0, 1]); NaN for an empty list."""
    if not sorted_vals:
        return float("nan")
    k = max(1, math.ceil(q * len(sorted_vals)))
    return sorted_vals[k - 1]


def margins(recs, specs, incidents=(), all_roles=False):
    """One row per (incident, variant, backend, spec): n, nonfinite, max, median, p90, p99, seed_max (the lowest
    seed holding the max), is_ratio, role, bound (a number or the bound metric's name). Skipped cases (no metrics)
    and metrics a case did not record (another backend's, an older criterion's) are left out; a metric recorded as
    null (non-finite) counts as non-finite."""
    groups = {}
    for r in recs:
        if incidents and not any(r["incident"].startswith(p) for p in incidents):
            continue
        if not all_roles and r["role"] != "fix":
            continue
        if not r["metrics"]:
            continue
        for s in specs.get(r["incident"], []):
            if s["name"] not in r["metrics"]:
                continue  # not recorded on this backend or by this version of the criterion
            m, is_ratio = margin_of(s, r["metrics"])
            key = (r["incident"], r["variant"], r["backend"], s["name"])
            g = groups.setdefault(key, {"role": r["role"], "spec": s, "is_ratio": is_ratio, "vals": [], "nonfinite": 0})
            if math.isfinite(m):
                g["vals"].append((m, r["seed"]))
            else:
                g["nonfinite"] += 1
    rows = []
    for key in sorted(groups):
        g = groups[key]
        vals = sorted(v for v, _ in g["vals"])
        vmax = vals[-1] if vals else float("nan")
        seed_max = min((sd for v, sd in g["vals"] if v == vmax), default=None)
        s = g["spec"]
        rows.append({"incident": key[0], "variant": key[1], "backend": key[2], "metric": key[3], "role": g["role"],
                     "bound": s["tolerance_metric"] or s["tolerance"], "lower_bound": not s["higher_is_worse"],
                     "is_ratio": g["is_ratio"], "n": len(vals) + g["nonfinite"], "nonfinite": g["nonfinite"],
                     "max": vmax, "median": quantile(vals, 0.5), "p90": quantile(vals, 0.9),
                     "p99": quantile(vals, 0.99), "seed_max": seed_max})
    return rows


def row_ok(row):
    """A fix's row is ok when every case had a finite value at or under its bound (a census at 0)."""
    if row["nonfinite"]:
        return False
    return row["max"] <= 1.0 if row["is_ratio"] else row["max"] == 0


def _fmt(x):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else "%.4g" % x


def print_table(rows, out):
    out.write("%-28s %-18s %-5s %-20s %-9s %5s %4s %9s %9s %9s %9s %9s\n" % (
        "incident", "variant", "bknd", "metric", "as", "n", "nonf", "max", "median", "p90", "p99", "seed(max)"))
    for r in rows:
        kind = "/bound" if r["is_ratio"] else "raw"
        if r["is_ratio"] and r["lower_bound"]:
            kind = "(1-v)/(1-b)"
        out.write("%-28s %-18s %-5s %-20s %-9s %5d %4d %9s %9s %9s %9s %9s\n" % (
            r["incident"][:28], r["variant"][:18], r["backend"][:5], r["metric"][:20], kind, r["n"], r["nonfinite"],
            _fmt(r["max"]), _fmt(r["median"]), _fmt(r["p90"]), _fmt(r["p99"]),
            "-" if r["seed_max"] is None else str(r["seed_max"])))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="margins.py", description=__doc__.splitlines()[0])
    ap.add_argument("results", help="results.jsonl or results.jsonl.gz of a replay")
    ap.add_argument("--specs", help="a lab report.json holding the incidents' metric_specs (default: the one beside RESULTS)")
    ap.add_argument("--incident", action="append", default=[], help="incident id prefix (repeatable)")
    ap.add_argument("--all-roles", action="store_true", help="bug variants too (their margins are expected above 1)")
    ap.add_argument("--json", action="store_true", help="one JSON object per row instead of the table")
    a = ap.parse_args(argv)
    specs_path = a.specs or os.path.join(os.path.dirname(os.path.abspath(a.results)), "report.json")
    try:
        if not os.path.exists(specs_path):
            raise InputError("%s: no report.json beside the results; pass --specs REPORT.json (any `lab report` "
                             "output of a lab with the same criteria)" % specs_path)
        specs = read_specs(specs_path)
        recs = read_results(a.results)
    except InputError as e:
        sys.stderr.write("margins.py: %s\n" % e)
        return 2
    rows = margins(recs, specs, a.incident, a.all_roles)
    if a.json:
        for r in rows:
            sys.stdout.write(json.dumps({k: (None if isinstance(v, float) and math.isnan(v) else v)
                                         for k, v in r.items()}) + "\n")
    else:
        print_table(rows, sys.stdout)
    bad = [r for r in rows if r["role"] == "fix" and not row_ok(r)]
    for r in bad:
        sys.stderr.write("margins.py: %s %s %s: %s max %s (nonfinite %d) beyond its bound\n" % (
            r["incident"], r["variant"], r["backend"], r["metric"], _fmt(r["max"]), r["nonfinite"]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
