"""story.py: the generated numbers and pictures of incident 0008's story (README.md), for
tools/stories/story_numbers.py, which finds this file, runs the CPU replays below and checks or rewrites what
they measure (`make stories`, `make test`)."""

import os

from story_numbers import Block, Picture, Run, Svg, f_int, incident_of, metric

ID = incident_of(__file__)

# 0008: the CPU model's census.
R0008_S3 = Run(ID, seed=3, plots=True)  # plots on: the figures hook writes the ownership
R0008_S2 = Run(ID, seed=2)


def render_0008_census(res):
    b4, b8 = res.of(R0008_S3, "bug-num-warps-4")[0], res.of(R0008_S3, "bug-num-warps-8")[0]
    b4_500 = res.of(R0008_S2, "bug-num-warps-4")[0]
    both = res.of(R0008_S3) + res.of(R0008_S2)
    war = sum(metric(r, "war_hazards") for r in both if r["role"] == "bug")
    fix = sorted({int(metric(r, "hazards")) for r in both if r["role"] == "fix"})
    figs = {"w4_cross": f_int(metric(b4, "raw_cross_warp")), "w4_intra": f_int(metric(b4, "raw_intra_warp")),
            "w8_cross": f_int(metric(b8, "raw_cross_warp")), "w8_intra": f_int(metric(b8, "raw_intra_warp")),
            "t500_cross": f_int(metric(b4_500, "raw_cross_warp")), "t500_intra": f_int(metric(b4_500, "raw_intra_warp")),
            "war": "All of them are reads before the store (no write-after-read)" if war == 0 else
            "%s of them are writes after a read" % f_int(war),
            "fix": " or ".join(str(x) for x in fix)}
    t = ("What the CPU model counts (`wr_model`, seed 3, T = 100, two sequences of 100 and 51 frames): at 4 warps"
         " {w4_cross} loads of an element last stored by a thread of another warp with no barrier since, and {w4_intra}"
         " within the storing thread's warp (another lane); at 8 warps {w8_cross} and {w8_intra}; at T = 500 (seed 2)"
         " {t500_cross} and {t500_intra}. {war}. With the three fixes (2 warps, the barrier, owner loads; seeds 2 and"
         " 3): {fix}, as at 1 warp (`semicrf_wr::census_of_the_bug_and_of_each_fix_seed_3`).")
    return t, figs


BLOCKS = [
    Block("0008-census", ID, [R0008_S3, R0008_S2], render_0008_census,
          "the CPU model's census of unsynchronised accesses at seeds 3 and 2"),
]


# The picture: who stores and who loads each element of one [C_PAD] row at 2, 4 and 8 warps, from the kernel's own
# ownership (the incident's figures hook writes plots/<id>-replicas.dat), with seed 3's census from the same replay.
def draw_replicas(res):
    path = os.path.join(res.plots_dir(R0008_S3), ID + "-replicas.dat")
    with open(path, encoding="utf-8") as f:
        lines = [ln.split() for ln in f if ln.strip()]
    rows = [[int(v) for v in ln] for ln in lines[1:]]
    census = {nw: res.of(R0008_S3, v)[0] for nw, v in ((2, "fix-num-warps-2"), (4, "bug-num-warps-4"),
                                                       (8, "bug-num-warps-8"))}
    n_el = 1 + max(max(r[3], r[4], r[5]) for r in rows)
    cw, ch, x0 = 11, 15, 110
    warps = sorted({r[0] for r in rows})
    height = 90 + sum(48 + ch * (nw + 1) for nw in warps) + 40
    svg = Svg(x0 + n_el * cw + 130, height, "0008: who stores and who loads one row of %d elements" % n_el)
    svg.text(20, 28, "0008: one row of the alpha buffer (%d elements) at 2, 4 and 8 warps: who stores it, who loads it"
             % n_el, size=15, weight="bold")
    own, intra, cross = "#59a14f", "#f28e2b", "#d62728"
    svg.rect(20, 44, 12, 12, own)
    svg.text(38, 54, "loads what the same thread stored", size=12)
    svg.rect(280, 44, 12, 12, intra)
    svg.text(298, 54, "stored by another thread of its warp", size=12)
    svg.rect(560, 44, 12, 12, cross)
    svg.text(578, 54, "stored by another warp: no barrier orders the load", size=12)
    y = 90
    for nw in warps:
        mine = [r for r in rows if r[0] == nw]
        owner = {r[3]: (r[1], r[2]) for r in mine if r[3] >= 0}
        c = census[nw]
        svg.text(20, y + 12, "%d warps (%d threads): %s" % (
            nw, len(mine), "every element stored and loaded by the same thread" if nw == 2 else
            "%s loads of an element another warp stored, seed 3 (raw_cross_warp)" % f_int(metric(c, "raw_cross_warp"))),
            size=13, weight="bold")
        y += 24
        for w in range(nw):
            svg.text(20, y + 11, "warp %d" % w, size=12)
            cells = {}
            for r in mine:
                if r[2] != w:
                    continue
                for e in (r[4], r[5]):
                    if e < 0:
                        continue
                    t, ow = owner[e]
                    kind = own if t == r[1] else intra if ow == w else cross
                    cells[e] = kind if cells.get(e) in (None, own) or kind == cross else cells[e]
            for e, kind in sorted(cells.items()):
                svg.rect(x0 + e * cw, y, cw - 1, ch - 2, kind)
            stores = sorted(r[3] for r in mine if r[2] == w and r[3] >= 0)
            if not stores:
                svg.text(x0 + n_el * cw + 6, y + 11, "stores nothing", size=11, fill="#666")
            y += ch
        svg.text(20, y + 11, "element", size=11, fill="#666")
        for e in range(0, n_el, 8):
            svg.text(x0 + e * cw, y + 11, str(e), size=10, fill="#666")
        y += ch + 24
    svg.text(20, y + 4, "Stores: the thread that owns the element (threads 0..%d); the other warps hold replicas that "
             "load it." % (n_el - 1), size=12)
    return svg.svg()


PICTURES = [
    Picture("replicas", ID, [R0008_S3], draw_replicas,
            "who stores and who loads one row at 2, 4 and 8 warps, with seed 3's count of cross-warp loads"),
]
