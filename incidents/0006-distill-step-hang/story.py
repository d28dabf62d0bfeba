"""story.py: the generated numbers and pictures of incident 0006's story (README.md), for
tools/stories/story_numbers.py, which finds this file, runs the CPU replays below and checks or rewrites what
they measure (`make stories`, `make test`)."""

import json
import os

from story_numbers import ROOT, Block, Picture, Run, Svg, all_or, f_plain, f_range, incident_of, metric, seeds_of

ID = incident_of(__file__)

# 0006: every variant's verdicts over the default 16 seeds, and the step-counter bug's traces.
R0006 = Run(ID, seeds=16, cost=5)


def render_0006_counts(res):
    figs = {}
    for key, v in (("fix", "fix"), ("bug", "bug-step-counter"), ("g1", "old-counters-g1"), ("logged", "bug-as-logged")):
        g = res.of(R0006, v)
        figs[key] = ", ".join("%d/%d %s" % (sum(r["outcome"] == o for r in g), len(g), o)
                              for o in sorted({r["outcome"] for r in g}))
    bug = res.of(R0006, "bug-step-counter")
    figs["hung"] = all_or(bug, lambda r: metric(r, "hung") == 1)
    figs["as_logged"] = all_or(res.of(R0006, "bug-as-logged"), lambda r: metric(r, "as_logged") == 1)
    figs["n"] = str(len(seeds_of(bug)))
    figs["cases"] = str(len(res.of(R0006)))
    t = ("Measured, default replay ({n} seeds, {cases} cases): fix {fix}, bug-step-counter {bug} ({hung} judged a hang),"
         " old-counters-g1 {g1}, bug-as-logged {logged} ({as_logged} as logged).")
    return t, figs


def render_0006_trace(res):
    bug = res.of(R0006, "bug-step-counter")
    n = len(bug)
    by_steps = {}
    for r in bug:
        by_steps.setdefault(int(metric(r, "steps")), []).append(r)
    seqs = ", ".join("%d at %d steps on %d seed%s" % (3 * s, s, len(g), "" if len(g) == 1 else "s")
                     for s, g in sorted(by_steps.items()))
    figs = {"n": str(n),
            "at3": all_or(bug, lambda r: metric(r, "first_step_seq") == 3, "seed"),
            "end": all_or(bug, lambda r: metric(r, "first_bad_seq") == 3 * metric(r, "steps"), "seed"),
            "seqs": "seq " + seqs,
            "ends": all_or(bug, lambda r: metric(r, "distiller_step") == metric(r, "steps")
                           and metric(r, "trainer_step") < metric(r, "steps"), "seed"),
            "empty": all_or(bug, lambda r: metric(r, "empty_shapes") == 0, "seed"),
            "trainers": f_range([metric(r, "n_trainers") for r in bug], f_plain),
            "G": f_range([metric(r, "G") for r in bug], f_plain),
            "steps": f_range([metric(r, "steps") for r in bug], f_plain)}
    t = ("Measured over the {n} default seeds of `bug-step-counter` ({trainers} trainers, G = {G}, {steps} steps): the"
         " counters part at seq 3 on {at3}; the first collective that does not pair up is seq = 3 * steps on {end}"
         " ({seqs}); the distiller stops with its counter at `steps` and the trainers short of it on {ends}; and no"
         " (0, 0) shape is held (`empty_shapes` 0) on {empty}.")
    return t, figs


BLOCKS = [
    Block("0006-verdicts", ID, [R0006], render_0006_counts,
          "every variant's verdicts over the default 16 seeds"),
    Block("0006-trace", ID, [R0006], render_0006_trace,
          "where the step-counter bug's collectives part and stop over 16 seeds"),
]


# The picture: the trainers' and the distiller's step counters over the exchanges of seed 1 of bug-step-counter, from
# the collective trace the case exported (build/traces/<id>/<variant>-cpu-seed1.trace.json: seq, op, step, micro of
# every collective of every rank) and its record (G, steps, the first collective that does not pair up).
def _trace(variant, seed):
    path = os.path.join(ROOT, "build", "traces", ID, "%s-cpu-seed%d.trace.json" % (variant, seed))
    with open(path, encoding="utf-8") as f:
        ev = json.load(f)["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"}
    colls = {}
    for e in ev:
        if e.get("ph") == "X" and e.get("tid") == 1:
            colls.setdefault(e["pid"], {})[e["args"]["seq"]] = e["args"]
    return names, colls


def draw_counters(res):
    r = [x for x in res.of(R0006, "bug-step-counter") if x["seed"] == 1][0]
    G, steps, bad = int(metric(r, "G")), int(metric(r, "steps")), int(metric(r, "first_bad_seq"))
    names, colls = _trace("bug-step-counter", 1)
    dist = [p for p, n in names.items() if "distiller" in n][0]
    trainer = min(p for p, n in names.items() if "trainer" in n)
    n_tr = sum(1 for n in names.values() if "trainer" in n)
    seqs = sorted(s for s in colls[trainer] if colls[trainer][s]["op"] == "bcast")  # an exchange starts with a bcast
    cols = len(seqs)
    cw, x0, top = 180, 130, 90
    svg = Svg(x0 + cols * cw + 30, 470, "0006 seed 1: the two step counters over the micro-steps")
    svg.text(20, 28, "0006 seed 1 (bug-step-counter): %d trainers, G = %d micro-steps a step, %d steps" % (
        n_tr, G, steps), size=15, weight="bold")
    svg.text(20, 50, "one column per exchange (bcast, gather, scatter); each side's step counter as its trace records "
             "it", size=12)
    blue, orange, red = "#4e79a7", "#f28e2b", "#d62728"
    ymax = max(steps, 1)
    ybase, yh = top + 190, 170

    def yof(step):
        return ybase - yh * step / ymax

    for k in range(ymax + 1):
        svg.line(x0, yof(k), x0 + cols * cw, yof(k), stroke="#e5e5e5")
        svg.text(x0 - 8, yof(k) + 4, str(k), size=11, anchor="end", fill="#666")
    svg.text(20, top - 8, "step counter", size=12, fill="#666")
    pts = {"t": [], "d": []}
    for i, s in enumerate(seqs):
        xl, xc = x0 + i * cw, x0 + i * cw + cw / 2
        t, d = colls[trainer][s], colls[dist].get(s)
        svg.text(xc, ybase + 22, "seq %d" % s, size=12, anchor="middle", fill="#666")
        svg.text(xc, ybase + 42, "trainers: %s" % t["op"], size=12, anchor="middle", fill=blue)
        svg.text(xc, ybase + 58, "step %d, micro-step %d" % (t["step"], t["micro"]), size=12, anchor="middle",
                 fill=blue)
        if d:
            paired = d["op"] == t["op"]
            svg.text(xc, ybase + 78, "distiller: %s" % d["op"], size=12, anchor="middle",
                     fill=orange if paired else red, weight=None if paired else "bold")
            svg.text(xc, ybase + 94, "step %d" % d["step"], size=12, anchor="middle", fill=orange if paired else red,
                     weight=None if paired else "bold")
            pts["d"].append((xl, xl + cw, yof(d["step"])))
        pts["t"].append((xl, xl + cw, yof(t["step"])))
        if s == bad:
            svg.rect(xl + 6, top - 4, cw - 12, ybase - top + 106, "none", stroke=red, sw=2)
    for key, colour in (("t", blue), ("d", orange)):
        d = []
        for i, (a, b, y) in enumerate(pts[key]):  # a step function: flat over each exchange, a riser between
            d.append(("M" if i == 0 else "L") + " %s %s L %s %s" % (Svg.n(a + 10), Svg.n(y), Svg.n(b - 10), Svg.n(y)))
        svg.path(" ".join(d), stroke=colour, sw=3)
    svg.rect(20, 402, 16, 4, blue)
    svg.text(42, 408, "trainers' step counter: one step per G = %d micro-steps, one exchange per micro-step" % G, size=12)
    svg.rect(20, 420, 16, 4, orange)
    svg.text(42, 426, "distiller's step counter: one step per exchange", size=12)
    svg.text(20, 452, "seq %d does not pair up: the distiller finalizes at step %d while the trainers, at step %d, "
             "broadcast%s" % (bad, steps, colls[trainer][seqs[-1]]["step"],
                              ": the job hangs" if metric(r, "hung") == 1 else ""), size=13, fill=red, weight="bold")
    return svg.svg()


PICTURES = [
    Picture("step-counters", ID, [R0006], draw_counters,
            "the trainers' and the distiller's step counters over the exchanges of seed 1, from its trace"),
]
