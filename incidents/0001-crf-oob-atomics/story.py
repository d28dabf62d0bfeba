"""story.py: the generated numbers and pictures of incident 0001's story (README.md), for
tools/stories/story_numbers.py, which finds this file, runs the CPU replays below and checks or rewrites what
they measure (`make stories`, `make test`)."""

from story_numbers import (Block, Picture, Run, Svg, every, f_int, f_pct, f_plain, f_range, incident_of, metric,
                           n_of)

ID = incident_of(__file__)

# 0001: the unmasked kernel's strays and NaN over 96 seeds.
R0001 = Run(ID, "bug-unpadded", seeds=96, cost=4)
GUARD_KINDS = {0: "zeros", 1: "activations", 2: "stale", 3: "sentinels"}


def render_0001(res):
    recs = res.of(R0001)
    n = len(recs)
    w = [metric(r, "oob_writes") for r in recs]
    rd = [metric(r, "oob_reads") for r in recs]
    nan = [r for r in recs if metric(r, "nonfinite_grads") > 0]
    kinds = {}
    for r in recs:
        k = GUARD_KINDS.get(int(metric(r, "guard_kind")), "kind %d" % int(metric(r, "guard_kind")))
        a = kinds.setdefault(k, [0, 0])
        a[0] += metric(r, "nonfinite_grads") > 0
        a[1] += 1
    kind = lambda k: n_of(*kinds.get(k, (0, 0)))  # noqa: E731
    figs = {
        "oob_every": every(sum(x > 0 for x in w), n),
        "oob_min": f_int(min(w)), "oob_max": f_int(max(w)), "seeds": str(n),
        "reads_same": "the same number of" if w == rd else "a different number of",
        "cross_min": f_int(min(metric(r, "cross_row_writes") for r in recs)),
        "nan_seeds": str(len(nan)), "nan_pct": f_pct(len(nan) / n),
        "stale": kind("stale"), "sentinels": kind("sentinels"), "zeros": kind("zeros"), "acts": kind("activations"),
        "frac": f_range([metric(r, "nonfinite_frac") for r in nan], f_pct) if nan else "none",
    }
    t = ("- issues atomic adds **outside the gradient buffers on {oob_every}**: between {oob_min} and {oob_max} per case"
         " over {seeds} seeds (`oob_writes`), {reads_same} loads outside the input tensors (`oob_reads`), and at least"
         " {cross_min} more atomics that stay inside a buffer but land in the next row, i.e. on another class or"
         " position (`cross_row_writes`);\n"
         "- returns NaN gradients on **{nan_seeds} of {seeds} seeds ({nan_pct})**: exactly the seeds whose neighbouring"
         " memory holds non-finite or huge bit patterns (stale memory: {stale}; a tensor holding -inf/+inf/NaN"
         " sentinels: {sentinels}) and none of the seeds whose neighbours are zeros ({zeros}) or ordinary activations"
         " ({acts}). On a NaN seed, {frac} of all gradient values are NaN.")
    return t, figs


BLOCKS = [
    Block("0001-strays-and-nan", ID, [R0001], render_0001,
          "the unmasked kernel's stray accesses and NaN seeds over 96 seeds"),
]


# The picture: the C_PAD lanes over one row of a gradient buffer C wide (the unmasked kernel) and C_PAD wide (the fix),
# C and C_PAD as the cases record them, the counts of seed 1 of the same replay.
def draw_lanes(res):
    r = [x for x in res.of(R0001) if x["seed"] == 1][0]
    C, CP = int(metric(r, "C")), int(metric(r, "C_PAD"))
    cw, x0 = 11, 150
    svg = Svg(x0 + (2 * C) * cw + 40, 400, "0001: %d lanes against a gradient buffer %d wide" % (CP, C))
    svg.text(20, 28, "0001: C_PAD = %d lanes run C = %d classes; each lane l adds into address row * width + l"
             % (CP, C), size=15, weight="bold")
    real, pad, nxt, out = "#4e79a7", "#f28e2b", "#e15759", "#bab0ac"

    def lanes(y):
        svg.text(20, y + 13, "lanes", size=13)
        for lane in range(CP):
            svg.rect(x0 + lane * cw, y, cw - 1, 16, real if lane < C else pad)
        svg.text(x0, y - 4, "0", size=11)
        svg.text(x0 + C * cw, y - 4, "%d: padding lanes" % C, size=11, fill=pad)

    # the unmasked kernel: rows C wide, the padding lanes over the next row's first classes
    y = 70
    svg.text(20, y - 14, "unmasked kernel (bug-unpadded): rows %d wide" % C, size=13, weight="bold")
    lanes(y)
    y2 = y + 44
    svg.text(20, y2 + 13, "row t, t+1", size=13)
    for i in range(2 * C):
        hit = C <= i < CP
        svg.rect(x0 + i * cw, y2, cw - 1, 16, nxt if hit else ("#dbe6f1" if i < C else "#eeeeee"))
    for lane in range(C, CP, 4):
        svg.line(x0 + lane * cw + cw / 2, y + 17, x0 + lane * cw + cw / 2, y2 - 1, stroke=nxt, arrow=True)
    svg.text(x0, y2 + 32, "row t (classes 0..%d)" % (C - 1), size=11)
    svg.text(x0 + C * cw, y2 + 32, "row t+1: lanes %d..%d add into its classes 0..%d; at the last row, past the "
             "allocation" % (C, CP - 1, CP - 1 - C), size=11, fill=nxt)
    # the fix: rows C_PAD wide, the padding lanes into padding columns, sliced away
    y = 230
    svg.text(20, y - 14, "fix: rows padded to C_PAD = %d, padding columns sliced away after the kernel" % CP, size=13,
             weight="bold")
    lanes(y)
    y2 = y + 44
    svg.text(20, y2 + 13, "row t", size=13)
    for i in range(CP):
        svg.rect(x0 + i * cw, y2, cw - 1, 16, "#dbe6f1" if i < C else out)
    for lane in range(C, CP, 4):
        svg.line(x0 + lane * cw + cw / 2, y + 17, x0 + lane * cw + cw / 2, y2 - 1, stroke="#555", arrow=True)
    svg.text(x0 + C * cw, y2 + 32, "padding columns %d..%d: the lanes add exact zeros here" % (C, CP - 1), size=11)
    svg.text(20, 372, "seed 1 (T = %s), unmasked: %s atomics outside the allocation, %s more into the next row "
             "(oob_writes, cross_row_writes)" % (f_plain(metric(r, "T")), f_int(metric(r, "oob_writes")),
                                                 f_int(metric(r, "cross_row_writes"))), size=12)
    return svg.svg()


PICTURES = [
    Picture("padding-lanes", ID, [R0001], draw_lanes,
            "the C_PAD lanes against a buffer C wide (bug) and C_PAD wide (fix), with seed 1's stray counts"),
]
