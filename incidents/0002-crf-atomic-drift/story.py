"""story.py: the generated numbers and pictures of incident 0002's story (README.md), for
tools/stories/story_numbers.py, which finds this file, runs the CPU replays below and checks or rewrites what
they measure (`make stories`, `make test`)."""
import re
import statistics

from story_numbers import Block, LabError, Run, f_e, f_pct, incident_of, metric, n_of, seed_span

ID = incident_of(__file__)

# 0002: run-to-run differences of the float32-atomic kernel, by T.
R0002 = Run(ID, "bug-f32-atomic", seeds=30, cost=2)
DIFFER_RE = re.compile(r"(\d+) of (\d+) values differ")


def render_0002(res):
    recs = res.of(R0002)
    lo, hi = seed_span(recs)
    by_t = {}
    for r in recs:
        by_t.setdefault(int(metric(r, "T")), []).append(r)
    counts = [len(by_t[t]) for t in sorted(by_t)]
    figs = {"first": str(lo), "last": str(hi),
            "per_t": str(counts[0]) if len(set(counts)) == 1 else "/".join(str(c) for c in counts)}
    rows = []
    for t in sorted(by_t):
        g = by_t[t]
        r2r = [metric(r, "r2r") for r in g]
        figs.update({"T%d_min" % t: f_e(min(r2r)), "T%d_median" % t: f_e(statistics.median(r2r)),
                     "T%d_max" % t: f_e(max(r2r)),
                     "T%d_trans" % t: f_e(statistics.median(metric(r, "r2r_trans") for r in g)),
                     "T%d_cum" % t: f_e(statistics.median(metric(r, "r2r_cum") for r in g))})
        rows.append("| %d | {T%d_min} | {T%d_median} | {T%d_max} | {T%d_trans} | {T%d_cum} |" % ((t,) + (t,) * 5))
    differ = values = 0
    for r in recs:
        m = DIFFER_RE.search(r["detail"])
        if not m:
            raise LabError("0002 seed %d: detail without 'N of M values differ': %s" % (r["seed"], r["detail"]))
        differ, values = differ + int(m.group(1)), values + int(m.group(2))
    figs["detected"] = n_of(sum(r["outcome"] == "FAIL" for r in recs), len(recs))
    figs["differ_pct"] = f_pct(differ / values)
    t = ("What the lab measures (CPU emulation, B = 2, K = 30, C = 39, two seeded block orders per case, seeds {first}"
         " to {last}: {per_t} seeds per T, variant `bug-f32-atomic`), max |grad_A - grad_B| over all gradient tensors:"
         "\n\n| T | min | median | max | of which: transitions (median) | cumulative scores (median) |\n"
         "|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n\n"
         "The two runs disagree on {detected} seeds, and {differ_pct} of all gradient values differ in at least one bit"
         " between them.")
    return t, figs


BLOCKS = [
    Block("0002-run-to-run", ID, [R0002], render_0002,
          "run-to-run gradient differences of the float32-atomic kernel by T"),
]
