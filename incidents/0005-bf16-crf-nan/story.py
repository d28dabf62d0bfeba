"""story.py: the generated numbers and pictures of incident 0005's story (README.md), for
tools/stories/story_numbers.py, which finds this file, runs the CPU replays below and checks or rewrites what
they measure (`make stories`, `make test`)."""
import statistics

from story_numbers import Block, Run, f_e_short, f_plain, f_range, f_sig, incident_of, metric, n_of, seed_span

ID = incident_of(__file__)

# 0005: where the bf16 CRF's training goes NaN, 30 seeds of the bug (every configuration of the replay).
R0005 = Run(ID, "bug-bf16-crf", seeds=30, cost=11)


def _steps(recs):
    return [int(metric(r, "first_nan_step")) for r in recs]


def render_0005_first(res):
    recs = res.of(R0005)
    s = {r["seed"]: r for r in recs}
    steps = _steps([s[i] for i in range(1, 7)])
    s7 = s[7]
    lr15 = _steps([r for r in recs if metric(r, "lr") == 1.5e-4 and metric(r, "crf_weight") == 0.5])
    nan15 = [x for x in lr15 if x > 0]
    figs = {"steps": ", ".join(str(x) for x in steps[:-1]) + " and " + str(steps[-1]),
            "after": "every time after warm-up (500 steps)" if all(x > 500 for x in steps)
            else "not every time after warm-up (500 steps)",
            "s7": "at step %s of 2000" % f_plain(metric(s7, "first_nan_step"))
            if metric(s7, "first_nan_step") > 0 else "never",
            "n15": str(len(lr15)), "median15": f_plain(statistics.median(nan15)) if nan15 else "-"}
    t = ("At seeds 1 to 6 the bf16 CRF produces its first non-finite value at steps **{steps}**, {after} and with a"
         " finite loss; at seed 7, which replays the write-up's second run (lr 1e-4, the dual loss with"
         " crf_loss_weight 0.1), {s7}. At lr 1.5e-4 the median over {n15} seeds is step {median15}, near the"
         " write-up's 950.")
    return t, figs


def render_0005_table(res):
    recs = res.of(R0005)
    lo, hi = seed_span(recs)
    groups = {}
    for r in recs:
        groups.setdefault((metric(r, "crf_weight"), metric(r, "lr")), []).append(r)
    rows, figs = [], {"first": str(lo), "last": str(hi), "n": str(len(recs))}
    for i, (w, lr) in enumerate(sorted(groups, key=lambda k: (-k[0], k[1]))):
        g = groups[(w, lr)]
        st = sorted(x for x in _steps(g) if x > 0)
        k = "c%d" % i
        figs.update({k + "_steps": " ".join(str(x) for x in st),
                     k + "_median": f_plain(statistics.median(st)) if st else "-",
                     k + "_clean": n_of(sum(x == 0 for x in _steps(g)), len(g)),
                     k + "_score": f_range([metric(r, "max_abs_score") for r in g], f_plain, "-")})
        label = "CE + %g CRF, lr %s" % (w, f_e_short(lr, 2))
        if w == 0.1:
            label = "CE + 0.1 CRF, lr 1e-4 (seeds %s)" % ", ".join(str(r["seed"]) for r in g)
        rows.append("| %s | {%s_steps} | {%s_median} | {%s_clean} | {%s_score} |" % (label, k, k, k, k))
    steps = _steps(recs)
    figs.update({"nan": n_of(sum(x > 0 for x in steps), len(recs)),
                 "score": f_range([metric(r, "max_abs_score") for r in recs], f_plain),
                 "marg_step": f_range([metric(r, "first_marg_step") for r in recs], f_plain),
                 "overflow": f_range([metric(r, "first_grad_overflow_step") for r in recs], f_plain, " and "),
                 "marg": f_range([metric(r, "max_marg") for r in recs], lambda v: f_e_short(v, 2))})
    t = ("How often and when: `build/lab replay --incident 0005 --variant bug-bf16-crf --seeds {n}` (seeds {first} to"
         " {last}; 1500-step runs, 2000 for the second configuration):\n\n"
         "| configuration | first non-finite step, sorted | median | runs without NaN | `max_abs_score` |\n"
         "| --- | --- | --- | --- | --- |\n" + "\n".join(rows) + "\n\n"
         "{nan} runs went NaN within the run, with `max_abs_score` at the NaN from {score}. The marginals were off from"
         " step {marg_step} (`first_marg_step`), gradients above 1e6 appeared between steps {overflow}"
         " (`first_grad_overflow_step`), and the largest marginal seen before the NaN was {marg} (`max_marg`).")
    return t, figs


def render_0005_probe(res):
    recs = [r for r in res.of(R0005) if r["seed"] <= 6]
    figs = {"marg": f_range([metric(r, "max_marg") for r in recs], lambda v: f_e_short(v, 2)),
            "logz": f_range([metric(r, "probe_logz_err") for r in recs], lambda v: f_sig(v, 2)),
            "pmarg": f_range([metric(r, "probe_marg_err") for r in recs], lambda v: f_e_short(v, 1))}
    t = ("The bug exceeds them by 30 orders of magnitude (seeds 1 to 6: `max_marg` {marg}, `probe_logz_err` {logz},"
         " `probe_marg_err` {pmarg}): the tolerances separate nothing subtle.")
    return t, figs


BLOCKS = [
    Block("0005-first-nan", ID, [R0005], render_0005_first,
          "the bf16 CRF's first non-finite step at seeds 1-7"),
    Block("0005-when", ID, [R0005], render_0005_table,
          "first non-finite steps by configuration over 30 seeds"),
    Block("0005-probe", ID, [R0005], render_0005_probe,
          "how far the bug's probe is beyond the tolerances at seeds 1-6"),
]
