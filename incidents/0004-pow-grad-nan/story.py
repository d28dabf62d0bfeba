"""story.py: the generated numbers and pictures of incident 0004's story (README.md), for
tools/stories/story_numbers.py, which finds this file, runs the CPU replays below and checks or rewrites what
they measure (`make stories`, `make test`)."""
import re

from story_numbers import Block, Run, f_plain, f_sig, incident_of, metric, seed_span

ID = incident_of(__file__)

# 0004: the old rule's NaN share.
R0004 = Run(ID, "bug-exp-log", seeds=64)
NAN_RE = re.compile(r"^(\d+) of (\d+) gradients NaN in each workload \(every negative base\)")


def render_0004(res):
    recs = res.of(R0004)
    lo, hi = seed_span(recs)
    exact = 0
    for r in recs:
        m = NAN_RE.match(r["detail"])
        if m and int(m.group(1)) == metric(r, "negative_bases") == metric(r, "nonfinite_square") \
                == metric(r, "nonfinite_rms"):
            exact += 1
    s1 = [r for r in recs if r["seed"] == lo][0]
    m1 = NAN_RE.match(s1["detail"])
    frac = [metric(r, "nonfinite_frac") for r in recs]
    figs = {"s1": str(lo), "n1": f_plain(metric(s1, "nonfinite_square")), "total": m1.group(2) if m1 else "?",
            "frac1": f_sig(metric(s1, "nonfinite_frac"), 6), "first": str(lo), "last": str(hi),
            "fmin": f_sig(min(frac), 5), "fmax": f_sig(max(frac), 5),
            "exact": "each seed" if exact == len(recs) else "%d of %d seeds" % (exact, len(recs))}
    t = ("In this lab's replay (256 x 1024 activations drawn from a standard normal, the last row a padding token of"
         " zeros), the old rule turns **every gradient whose base is negative into NaN and no other**: at seed {s1},"
         " {n1} of {total} gradients in each workload, a non-finite share (`nonfinite_frac`) of {frac1}. Over seeds"
         " {first} to {last} the share stays between {fmin} and {fmax}, and on {exact} the NaN gradients are exactly"
         " the negative entries of x.")
    return t, figs


BLOCKS = [
    Block("0004-nan-share", ID, [R0004], render_0004,
          "the old rule's NaN gradients over seeds 1-64"),
]
