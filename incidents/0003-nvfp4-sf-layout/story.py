"""story.py: the generated numbers and pictures of incident 0003's story (README.md), for
tools/stories/story_numbers.py, which finds this file, runs the CPU replays below and checks or rewrites what
they measure (`make stories`, `make test`)."""
import math
import os
import statistics

from story_numbers import (Block, Picture, Run, Svg, f_e_short, f_plain, f_range, f_sig, incident_of, metric,
                           n_of, seed_span)

ID = incident_of(__file__)

# 0003: the CPU replay of seeds 1-32 (every variant), and the padding bug up to the default 78 seeds.
R0003 = Run(ID, seeds=32, cost=3)
R0003_PAD = Run(ID, "bug-size-not-cosize", seeds=46, first_seed=33, cost=2)


def _cos_cell(recs, name):
    """A cosine column of the CPU table: 'NaN on N' where the metric is non-finite, else min .. max (1 for cosines
    that round to 1 at 3 digits)."""
    vals = [metric(r, name) for r in recs]
    fin = [v for v in vals if math.isfinite(v)]
    nan = len(vals) - len(fin)
    rng = f_range(fin, lambda v: f_sig(v, 3), " .. ") if fin else ""
    if rng == "1.00":
        rng = "1"
    if nan == len(vals):
        return "NaN on %d" % nan
    if nan:
        return "NaN on %d seeds, else %s" % (nan, rng)
    return rng


def render_0003_swap(res):
    recs = res.of(R0003, "bug-mk-swap")
    lo, hi = seed_span(recs)
    small = [metric(r, "cos_small") for r in recs]
    ones = [metric(r, "cos_ones") for r in recs]
    figs = {"first": str(lo), "last": str(hi),
            "ragged": f_range([metric(r, "cos_ragged") for r in recs], lambda v: f_sig(v, 3)),
            "large": f_range([metric(r, "cos_large") for r in recs], lambda v: f_sig(v, 3)),
            "small_min": f_sig(min(small), 2), "small_max": f_sig(max(small), 2),
            "small_median": f_sig(statistics.median(small), 2),
            "ones": "1 (to 15 digits)" if all(abs(v - 1) < 1e-15 for v in ones)
            else f_range(ones, lambda v: f_sig(v, 6))}
    t = ("In this lab's replay the frozen bug variants fail the same way. The M/K-swapped remap (`bug-mk-swap`, the"
         " code as it stood after the first fix) gives, over seeds {first} to {last}, a cosine with the float64"
         " reference of {ragged} on a ragged (200, 96, 592) problem, {large} on a (128, 64, 7168) slice of the"
         " production shape, and anything from {small_min} to {small_max} (median {small_median}) on the write-up's"
         " (1, 32, 32) case, while **all-ones data gives cosine {ones} and outputs bit-identical to the fixed"
         " kernel**.")
    return t, figs


def render_0003_table(res):
    recs = res.of(R0003)
    lo, hi = seed_span(recs)
    figs = {"first": str(lo), "last": str(hi)}
    var = {v: res.of(R0003, v) for v in ("fix", "bug-size-not-cosize", "bug-mk-swap", "bug-fold-global-scale")}
    for key, v in (("fix", "fix"), ("size", "bug-size-not-cosize"), ("swap", "bug-mk-swap"),
                   ("fold", "bug-fold-global-scale")):
        g = var[v]
        figs[key + "_verdicts"] = ", ".join("%d/%d %s" % (sum(r["outcome"] == o for r in g), len(g), o)
                                            for o in sorted({r["outcome"] for r in g}))
    for key, v in (("fix", "fix"), ("size", "bug-size-not-cosize"), ("swap", "bug-mk-swap")):
        for col in ("small", "ragged", "large", "ones"):
            figs["%s_%s" % (key, col)] = _cos_cell(var[v], "cos_" + col)
    sm = [metric(r, "cos_small") for r in var["bug-mk-swap"]]
    figs["swap_small"] = "%s .. %s (median %s)" % (f_sig(min(sm), 3), f_sig(max(sm), 3), f_sig(statistics.median(sm), 3))
    fold = var["bug-fold-global-scale"]
    figs["fold_cos"] = f_range([metric(r, "cos_random") for r in fold], lambda v: f_sig(v, 5 if v > 0.999 else 3),
                               " .. ")
    figs["fold_l2"] = f_range([metric(r, "fold_rel_l2") for r in fold], lambda v: f_sig(v, 2), " .. ")
    t = ("Measured on the CPU, seeds {first} to {last} (`build/lab replay --incident 0003 --seeds 32`; the default is"
         " 78):\n\n"
         "| variant | verdicts | cosine small | cosine ragged | cosine large | all-ones |\n"
         "| --- | --- | --- | --- | --- | --- |\n"
         "| fix | {fix_verdicts} | {fix_small} | {fix_ragged} | {fix_large} | {fix_ones} |\n"
         "| bug-size-not-cosize | {size_verdicts} | {size_small} | {size_ragged} | {size_large} (no K padding) |"
         " {size_ones} |\n"
         "| bug-mk-swap | {swap_verdicts} | {swap_small} | {swap_ragged} | {swap_large} | {swap_ones}"
         " (bit-identical to the fix) |\n"
         "| bug-fold-global-scale | {fold_verdicts} | - | ragged and large at seeded magnitudes: {fold_cos}"
         " (rel L2 {fold_l2}) | | - |")
    return t, figs


def render_0003_padding(res):
    first = res.of(R0003, "bug-size-not-cosize")
    allr = sorted(first + res.of(R0003_PAD), key=lambda r: r["seed"])
    lo, hi = seed_span(allr)
    flo, fhi = seed_span(first)
    esc = [r for r in allr if r["outcome"] == "PASS"]
    if not esc:
        escapes = "no seed escapes"
    elif all(metric(r, "stale_nan_reads") == 0 for r in esc):
        escapes = "%s %s no NaN code in the padding (`stale_nan_reads` 0) and the padding bug passes there" % (
            "seed %d puts" % esc[0]["seed"] if len(esc) == 1 else
            "seeds %s put" % ", ".join(str(r["seed"]) for r in esc), "")
        escapes = escapes.replace("  ", " ")
    else:
        escapes = "seeds %s escape with NaN codes in the padding" % ", ".join(str(r["seed"]) for r in esc)
    figs = {"snr": f_range([metric(r, "stale_nan_reads") for r in first], f_plain), "ffirst": str(flo),
            "flast": str(fhi), "first": str(lo), "last": str(hi),
            "detected": n_of(sum(r["outcome"] == "FAIL" for r in allr), len(allr)), "escapes": escapes}
    t = ("The metric `stale_nan_reads` counts the NaN codes a seed puts there: {snr} over seeds {ffirst} to {flast}."
         " Over seeds {first} to {last}, the default replay's, the padding bug was detected on **{detected}**:"
         " {escapes}.")
    return t, figs


def render_0003_fold(res):
    bug = res.of(R0003, "bug-fold-global-scale")
    fix = res.of(R0003, "fix")
    lo, hi = seed_span(bug)
    figs = {"first": str(lo), "last": str(hi),
            "eob": f_range([metric(r, "err_over_bound") for r in bug], lambda v: f_e_short(v, 3)),
            "l2": f_range([metric(r, "fold_rel_l2") for r in bug], lambda v: f_sig(v, 2)),
            "cos_min": f_sig(min(metric(r, "cos_random") for r in bug), 3),
            "fix": f_range([metric(r, "mag_err_over_bound") for r in fix], lambda v: f_sig(v, 2))}
    t = ("Measured over seeds {first} to {last}: the bug at {eob} of the bound (rel L2 {l2}, cosine down to {cos_min}),"
         " the fix at {fix} of it (`mag_err_over_bound`).")
    return t, figs


BLOCKS = [
    Block("0003-mk-swap-cosines", ID, [R0003], render_0003_swap,
          "the M/K swap's cosines over seeds 1-32"),
    Block("0003-cpu-table", ID, [R0003], render_0003_table,
          "every variant's verdicts and cosines over seeds 1-32"),
    Block("0003-padding-escapes", ID, [R0003, R0003_PAD], render_0003_padding,
          "the padding bug's NaN codes and escapes over the default 78 seeds"),
    Block("0003-fold", ID, [R0003], render_0003_fold,
          "the folded-scale bug and the fix against the per-element bound over seeds 1-32"),
]


# The picture: the 128x4 tile's 512 bytes as the lab's own remap fills them (the incident's figures hook writes
# plots/<id>-sf-tile.dat), under the fix, the M/K swap and the size-vs-cosize loop.
R0003_TILE = Run(ID, "fix", seed=1, cost=1, plots=True)
TILE_BANDS = ["#4e79a7", "#59a14f", "#f28e2b", "#b07aa1"]  # m div 32


def _tile_rows(res):
    path = os.path.join(res.plots_dir(R0003_TILE), ID + "-sf-tile.dat")
    with open(path, encoding="utf-8") as f:
        lines = [ln.split() for ln in f if ln.strip() and not ln.startswith("#")]
    head, rows = lines[0], [[int(v) for v in ln] for ln in lines[1:]]
    return head, rows


def _shade(hexcolour, k):
    """The band's colour, lighter for larger k (k 0..3)."""
    r, g, b = (int(hexcolour[i:i + 2], 16) for i in (1, 3, 5))
    t = 0.18 * k
    return "#%02x%02x%02x" % tuple(int(c + (255 - c) * t) for c in (r, g, b))


def draw_tile(res):
    head, rows = _tile_rows(res)
    col = {name: i for i, name in enumerate(head)}
    n = len(rows)
    fix = {o[0]: (o[col["fix-m"]], o[col["fix-k"]]) for o in rows}
    m_n = 1 + max(m for m, _k in fix.values())
    k_n = 1 + max(k for _m, k in fix.values())
    formula = all(o == 16 * (m % 32) + 4 * (m // 32) + k for o, (m, k) in fix.items() if m >= 0)
    kinds = [("fix", "fix"), ("bug-mk-swap", "mk-swap"), ("bug-size-not-cosize", "size-not-cosize")]
    cw, ch, gap, x0, y0 = 12, 10, 40, 30, 132
    pw = 16 * cw
    svg = Svg(x0 + 3 * pw + 2 * gap + 70, y0 + 32 * ch + 150,
              "0003: one 128x4 scale-factor tile, M = %d, K/16 = %d" % (m_n, k_n))
    svg.text(x0, 28, "0003: one 128x4 scale-factor tile, %d bytes (M = %d rows, K/16 = %d)" % (n, m_n, k_n), size=15,
             weight="bold")
    svg.text(x0, 50, ("a row of 16 bytes holds scale rows m, m+32, m+64, m+96, k = 0..3 each: byte = 16 (m mod 32) + "
                      "4 (m div 32) + k" if formula else "the bytes as the fix's remap fills them"), size=12)
    svg.text(x0, 68, "colour: the scale's m div 32 (4 bands), lighter for larger k", size=12)
    svg.rect(x0, 78, 10, 10, "#ffffff", stroke="#999")
    svg.text(x0 + 16, 87, "padding written as zero", size=12)
    svg.rect(x0 + 190, 78, 10, 10, "#d0d0d0")
    svg.text(x0 + 206, 87, "never written: stale", size=12)
    svg.rect(x0 + 360, 78, 10, 10, "none", stroke="#d62728", sw=1.5)
    svg.text(x0 + 376, 87, "not the scale the fix puts there", size=12)
    counts = {}
    for p, (title, key) in enumerate(kinds):
        px = x0 + p * (pw + gap)
        wrong = stale = 0
        for o in rows:
            m, k = o[col[key + "-m"]], o[col[key + "-k"]]
            x, y = px + (o[0] % 16) * cw, y0 + (o[0] // 16) * ch
            if m == -1:
                stale += 1
                svg.rect(x, y, cw - 1, ch - 1, "#d0d0d0")
                continue
            if m == -2:
                svg.rect(x + 0.5, y + 0.5, cw - 2, ch - 2, "#ffffff", stroke="#bbbbbb", sw=0.5)
            else:
                svg.rect(x, y, cw - 1, ch - 1, _shade(TILE_BANDS[(m // 32) % 4], k))
            if (m, k) != fix[o[0]]:
                wrong += 1
                svg.rect(x + 0.5, y + 0.5, cw - 2, ch - 2, "none", stroke="#d62728", sw=1.2)
        svg.text(px, y0 - 10, title, size=13, weight="bold")
        placed = sum(1 for o in rows if o[col[key + "-m"]] >= 0)
        counts[key] = (placed, wrong, stale)
        lines = [("%d scales placed" % placed, False)]
        if key != "fix":
            lines.append(("%d bytes not the fix's" % wrong if wrong else "each scale where the fix puts it", wrong > 0))
        lines.append(("%d bytes never written" % stale if stale else "every byte written", stale > 0))
        for i, (t, bad) in enumerate(lines):
            svg.text(px, y0 + 32 * ch + 22 + 18 * i, t, size=12, fill="#d62728" if bad else "#222")
    svg.text(x0, y0 + 32 * ch + 96, "The fix writes all %d bytes (the cosize): the scales, and zeros in the padding "
             "(rows %d..127, column k = %d)." % (n, m_n, k_n), size=12)
    svg.text(x0, y0 + 32 * ch + 114, "The swap reads src[k*M + m] for the scale of (m, k). The size loop writes its %d "
             "scales" % counts["size-not-cosize"][0], size=12)
    svg.text(x0, y0 + 32 * ch + 132, "and leaves %d bytes stale: E4M3 NaN codes there, if that is what the memory held."
             % counts["size-not-cosize"][2], size=12)
    return svg.svg()


PICTURES = [
    Picture("sf-tile", ID, [R0003_TILE], draw_tile,
            "the tile's bytes under the fix, the M/K swap and the size loop, from the lab's own remap"),
]
