#!/usr/bin/env python3
"""story_numbers.py: the measured numbers of the incidents' stories, generated from CPU replays and checked against them.

Usage: tools/stories/story_numbers.py check|write|list [--lab BIN] [--only NAME]... [--readme PATH] [--keep DIR] [--jobs N]

An incident's README holds generated blocks:

    <!-- generated: NAME (COMMAND) -->
    text whose figures come from the replay COMMAND
    <!-- end generated -->

each marker on a line of its own. Every block is defined below (BLOCKS): the CPU replays it needs (`lab replay
--backend cpu`, small seed counts, figures that are bit for bit the same on every run of the same build) and a
render function that turns their results.jsonl into a template and its figures. `write` runs the replays and
rewrites every block's marker line and text (`make stories`); `check` runs them and fails when a README's block
no longer says what the code measures, naming the README, the block and each figure that differs (`make test`
runs it); `list` prints the blocks and their commands. A block defined here but missing from its README, a marker
without its end, or a name no definition knows is an error in both. Text outside the blocks is not touched:
numbers measured on a GPU stay prose there, each naming its device and report folder.

--readme PATH checks or writes the blocks found in PATH instead of the incidents' READMEs (with --only, a copy of
one README; the tests use it). --keep DIR keeps the replays' results under DIR. --lab BIN is the lab binary
(default: $LAB_BIN, else build/lab); the replays run in the repository root, --jobs N of them at once (default 2,
the costliest first, each on every core). A check takes about 25 s on 2 cores (11 replays, 40 CPU-s).

Exit status: 0 every block matches (check) or was written (write); 1 a block differs from what the code measures;
2 bad usage or a malformed README (the message names the file and line); 3 the lab could not run a replay (the
message names the command and its exit status).
"""
import argparse
import concurrent.futures
import difflib
import json
import math
import os
import re
import shutil
import statistics
import string
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

BEGIN_RE = re.compile(r"^<!-- generated: (?P<name>[A-Za-z0-9_.-]+) \((?P<command>.*)\) -->$")
END_LINE = "<!-- end generated -->"


class UsageError(Exception):
    """Bad usage or a malformed README: exit 2, the message names the file and line."""


class LabError(Exception):
    """A replay could not be run or gave no usable results: exit 3, the message names the command."""


# ---------------------------------------------------------------------------------------------------------------
# Replays


class Run:
    """One CPU replay: `lab replay --backend cpu --incident ID [--variant V] [--seed S | [--first-seed S0] --seeds N]`."""

    def __init__(self, incident, variant=None, seeds=None, first_seed=None, seed=None, cost=1.0):
        self.incident, self.variant, self.seeds, self.first_seed, self.seed = incident, variant, seeds, first_seed, seed
        self.cost = cost  # rough seconds on 2 cores: the costliest replays start first

    def args(self):
        a = ["--incident", self.incident]
        if self.variant:
            a += ["--variant", self.variant]
        if self.seed is not None:
            a += ["--seed", str(self.seed)]
        if self.first_seed is not None:
            a += ["--first-seed", str(self.first_seed)]
        if self.seeds is not None:
            a += ["--seeds", str(self.seeds)]
        return a

    def command(self):
        """The command as a user types it (the marker's text)."""
        return " ".join(["build/lab", "replay", "--backend", "cpu"] + self.args())

    def key(self):
        return tuple(self.args())


def run_replay(lab, run, out):
    """Runs one replay into out; returns its records (results.jsonl's objects). LabError when the lab exits with
    anything but 0 (ok) or 1 (a verdict NOT OK: a short replay may refuse a stated rate), when results.jsonl is
    missing or empty, or when a case is ERROR (the lab could not measure it)."""
    argv = [lab, "replay", "--backend", "cpu"] + run.args() + ["--out", out, "--quiet", "--no-plots"]
    try:
        p = subprocess.run(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    except OSError as e:
        raise LabError("%s: cannot run: %s (build it with make, or pass --lab)" % (lab, e))
    tail = "\n".join(p.stdout.strip().splitlines()[-8:])
    if p.returncode not in (0, 1):
        raise LabError("`%s` exited %d:\n%s" % (run.command(), p.returncode, tail))
    path = os.path.join(out, "results.jsonl")
    try:
        with open(path, encoding="utf-8") as f:
            recs = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        raise LabError("`%s`: no results (%s):\n%s" % (run.command(), e, tail))
    if not recs:
        raise LabError("`%s`: results.jsonl has no case" % run.command())
    bad = [r for r in recs if r.get("outcome") == "ERROR"]
    if bad:
        r = bad[0]
        raise LabError("`%s`: %d case(s) ERROR, first %s seed %s: %s" % (run.command(), len(bad), r.get("variant"),
                                                                          r.get("seed"), r.get("detail")))
    return recs


class Results:
    """The records of the replays a block asked for, by Run."""

    def __init__(self, by_key):
        self.by_key = by_key

    def of(self, run, variant=None):
        recs = self.by_key[run.key()]
        if variant is not None:
            recs = [r for r in recs if r["variant"] == variant]
        return sorted(recs, key=lambda r: (r["variant"], r["seed"]))


def metric(r, name):
    """A case's metric as a float (NaN or +-inf where the record says it was non-finite); KeyError when absent."""
    m = r["metrics"]
    v = m[name]
    if v is None:
        nf = (r.get("nonfinite_metrics") or {}).get(name, "nan")
        return {"inf": math.inf, "+inf": math.inf, "-inf": -math.inf}.get(nf, math.nan)
    return float(v)


# ---------------------------------------------------------------------------------------------------------------
# Formatting: every figure is a string, made by one of these, so the same measurement always reads the same.


def f_int(x):
    """An integer with thousands separators: 1,633,750."""
    return "{:,}".format(int(round(x)))


def f_plain(x):
    """An integer as it is, halves rounded up: 910, 1028.5 -> 1029."""
    return "%d" % int(math.floor(x + 0.5))


def f_sig(x, n=3):
    """n significant digits, trailing zeros kept, never an exponent: 0.160, -0.190, 0.878, 1.00."""
    if x == 0:
        return "0" if n <= 1 else "0." + "0" * (n - 1)
    e = math.floor(math.log10(abs(x)))
    d = max(0, n - 1 - e)
    s = "%.*f" % (d, x)
    e2 = math.floor(math.log10(abs(float(s)))) if float(s) != 0 else e
    if e2 != e:  # rounding carried into a new digit (0.9996 -> 1.000)
        d = max(0, n - 1 - e2)
        s = "%.*f" % (d, x)
    return s


def f_e(x, n=2):
    """A C-style exponent with n significant digits: 1.4e-06."""
    return "%.*e" % (n - 1, x)


def f_e_short(x, n=3):
    """An exponent without sign padding: 1.04e4, 8.22e4, 3.5e36."""
    m, e = ("%.*e" % (n - 1, x)).split("e")
    return "%se%d" % (m, int(e))


def f_pct(x, n=2):
    """A fraction as a percentage with n significant digits: 0.0164 -> 1.6%, 0.152 -> 15%."""
    v = x * 100
    e = math.floor(math.log10(abs(v))) if v else 0
    d = max(0, n - 1 - e)
    return "%.*f%%" % (d, v)


def f_range(vals, fmt, sep=" to "):
    """min to max of vals, each through fmt; one value when they are equal after formatting."""
    lo, hi = fmt(min(vals)), fmt(max(vals))
    return lo if lo == hi else lo + sep + hi


def n_of(n, total):
    return "%d of %d" % (n, total)


def every(n, total, what="seed"):
    """'every seed' when n == total, else 'N of M seeds'."""
    return "every %s" % what if n == total else "%d of %d %ss" % (n, total, what)


# ---------------------------------------------------------------------------------------------------------------
# The blocks. Each render function returns (template, figures): the template is str.format text with one named
# field per figure, so a check can say which figure differs.


class Block:
    def __init__(self, name, incident, runs, render, what):
        self.name, self.incident, self.runs, self.render, self.what = name, incident, runs, render, what

    def readme(self):
        return os.path.join(ROOT, "incidents", self.incident, "README.md")

    def command(self):
        return " ; ".join(r.command() for r in self.runs)


def seeds_of(recs):
    return sorted({r["seed"] for r in recs})


def seed_span(recs):
    s = seeds_of(recs)
    if s != list(range(s[0], s[-1] + 1)):
        raise LabError("seeds %s are not a range" % s)
    return s[0], s[-1]


# 0001: the unmasked kernel's strays and NaN over 96 seeds.
R0001 = Run("0001-crf-oob-atomics", "bug-unpadded", seeds=96, cost=4)
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


# 0002: run-to-run differences of the float32-atomic kernel, by T.
R0002 = Run("0002-crf-atomic-drift", "bug-f32-atomic", seeds=30, cost=2)
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


# 0003: the CPU replay of seeds 1-32 (every variant), and the padding bug up to the default 78 seeds.
R0003 = Run("0003-nvfp4-sf-layout", seeds=32, cost=3)
R0003_PAD = Run("0003-nvfp4-sf-layout", "bug-size-not-cosize", seeds=46, first_seed=33, cost=2)


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


# 0004: the old rule's NaN share.
R0004 = Run("0004-pow-grad-nan", "bug-exp-log", seeds=64)
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


# 0005: where the bf16 CRF's training goes NaN, 30 seeds of the bug (every configuration of the replay).
R0005 = Run("0005-bf16-crf-nan", "bug-bf16-crf", seeds=30, cost=11)


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


# 0006: every variant's verdicts over the default 16 seeds, and the step-counter bug's traces.
R0006 = Run("0006-distill-step-hang", seeds=16, cost=5)


def _all_or(recs, ok, what="one"):
    n = sum(1 for r in recs if ok(r))
    return "every %s" % what if n == len(recs) else "%d of %d" % (n, len(recs))


def render_0006_counts(res):
    figs = {}
    for key, v in (("fix", "fix"), ("bug", "bug-step-counter"), ("g1", "old-counters-g1"), ("logged", "bug-as-logged")):
        g = res.of(R0006, v)
        figs[key] = ", ".join("%d/%d %s" % (sum(r["outcome"] == o for r in g), len(g), o)
                              for o in sorted({r["outcome"] for r in g}))
    bug = res.of(R0006, "bug-step-counter")
    figs["hung"] = _all_or(bug, lambda r: metric(r, "hung") == 1)
    figs["as_logged"] = _all_or(res.of(R0006, "bug-as-logged"), lambda r: metric(r, "as_logged") == 1)
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
            "at3": _all_or(bug, lambda r: metric(r, "first_step_seq") == 3, "seed"),
            "end": _all_or(bug, lambda r: metric(r, "first_bad_seq") == 3 * metric(r, "steps"), "seed"),
            "seqs": "seq " + seqs,
            "ends": _all_or(bug, lambda r: metric(r, "distiller_step") == metric(r, "steps")
                            and metric(r, "trainer_step") < metric(r, "steps"), "seed"),
            "empty": _all_or(bug, lambda r: metric(r, "empty_shapes") == 0, "seed"),
            "trainers": f_range([metric(r, "n_trainers") for r in bug], f_plain),
            "G": f_range([metric(r, "G") for r in bug], f_plain),
            "steps": f_range([metric(r, "steps") for r in bug], f_plain)}
    t = ("Measured over the {n} default seeds of `bug-step-counter` ({trainers} trainers, G = {G}, {steps} steps): the"
         " counters part at seq 3 on {at3}; the first collective that does not pair up is seq = 3 * steps on {end}"
         " ({seqs}); the distiller stops with its counter at `steps` and the trainers short of it on {ends}; and no"
         " (0, 0) shape is held (`empty_shapes` 0) on {empty}.")
    return t, figs


# 0007: the old harness's blocked write at seed 1, and the log sizes the seeds draw.
R0007_BUG = Run("0007-harness-log-deadlock", "bug-full-log", seed=1)
R0007_FIX = Run("0007-harness-log-deadlock", "fix-drain", seeds=16)


def render_0007_write(res):
    r = res.of(R0007_BUG)[0]
    cap = metric(r, "pipe_capacity")
    figs = {"log": f_plain(metric(r, "log_bytes")), "ratio": "%.2f" % (metric(r, "log_bytes") / cap),
            "fill": f_plain(metric(r, "pipe_fill_bytes")), "cap": f_plain(cap),
            "read": f_plain(metric(r, "parent_read_bytes")),
            "blocked": "is blocked in" if metric(r, "blocked_in_write") == 1 and metric(r, "blocked_syscall") == 1
            else "is not blocked in"}
    t = ("At seed 1 the worker {blocked} `write(1, buf, {log})`, a log line {ratio}x the pipe. Its stdout pipe holds"
         " {fill} of {cap} bytes. The parent has read {read} bytes and is waiting on the socket.")
    return t, figs


def render_0007_sizes(res):
    recs = res.of(R0007_FIX)
    lo, hi = seed_span(recs)
    s = {r["seed"]: r for r in recs}
    figs = {"first": str(lo), "last": str(hi),
            "ratio": f_range([metric(r, "log_bytes") / metric(r, "pipe_capacity") for r in recs],
                             lambda v: "%.3gx" % v),
            "bytes": f_range([metric(r, "log_bytes") for r in recs], f_plain),
            "s1": f_plain(metric(s[1], "payload_bytes")), "s7": f_plain(metric(s[7], "log_bytes")),
            "pass": _all_or(recs, lambda r: r["outcome"] == "PASS", "seed")}
    t = ("Over seeds {first} to {last} the whole-message log is {ratio} the pipe ({bytes} bytes; seed 1's payload is"
         " {s1} bytes, seed 7's log {s7}), and the draining parent (`fix-drain`) passes on {pass}.")
    return t, figs


# 0008: the CPU model's census.
R0008_S3 = Run("0008-semicrf-warp-replica-race", seed=3)
R0008_S2 = Run("0008-semicrf-warp-replica-race", seed=2)


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
    Block("0001-strays-and-nan", "0001-crf-oob-atomics", [R0001], render_0001,
          "the unmasked kernel's stray accesses and NaN seeds over 96 seeds"),
    Block("0002-run-to-run", "0002-crf-atomic-drift", [R0002], render_0002,
          "run-to-run gradient differences of the float32-atomic kernel by T"),
    Block("0003-mk-swap-cosines", "0003-nvfp4-sf-layout", [R0003], render_0003_swap,
          "the M/K swap's cosines over seeds 1-32"),
    Block("0003-cpu-table", "0003-nvfp4-sf-layout", [R0003], render_0003_table,
          "every variant's verdicts and cosines over seeds 1-32"),
    Block("0003-padding-escapes", "0003-nvfp4-sf-layout", [R0003, R0003_PAD], render_0003_padding,
          "the padding bug's NaN codes and escapes over the default 78 seeds"),
    Block("0003-fold", "0003-nvfp4-sf-layout", [R0003], render_0003_fold,
          "the folded-scale bug and the fix against the per-element bound over seeds 1-32"),
    Block("0004-nan-share", "0004-pow-grad-nan", [R0004], render_0004,
          "the old rule's NaN gradients over seeds 1-64"),
    Block("0005-first-nan", "0005-bf16-crf-nan", [R0005], render_0005_first,
          "the bf16 CRF's first non-finite step at seeds 1-7"),
    Block("0005-when", "0005-bf16-crf-nan", [R0005], render_0005_table,
          "first non-finite steps by configuration over 30 seeds"),
    Block("0005-probe", "0005-bf16-crf-nan", [R0005], render_0005_probe,
          "how far the bug's probe is beyond the tolerances at seeds 1-6"),
    Block("0006-verdicts", "0006-distill-step-hang", [R0006], render_0006_counts,
          "every variant's verdicts over the default 16 seeds"),
    Block("0006-trace", "0006-distill-step-hang", [R0006], render_0006_trace,
          "where the step-counter bug's collectives part and stop over 16 seeds"),
    Block("0007-blocked-write", "0007-harness-log-deadlock", [R0007_BUG], render_0007_write,
          "the old harness's blocked write at seed 1"),
    Block("0007-log-sizes", "0007-harness-log-deadlock", [R0007_FIX], render_0007_sizes,
          "the verbose log sizes the default 16 seeds draw"),
    Block("0008-census", "0008-semicrf-warp-replica-race", [R0008_S3, R0008_S2], render_0008_census,
          "the CPU model's census of unsynchronised accesses at seeds 3 and 2"),
]


# ---------------------------------------------------------------------------------------------------------------
# Templates, READMEs, the check


WIDTH = 115


def wrap(text):
    """The block's text as the README holds it: paragraphs and list items ('- ') wrapped at WIDTH, continuation lines
    of an item indented by two spaces, tables ('|' lines) as they are."""
    out = []
    for para in text.split("\n\n"):
        lines = para.split("\n")
        if lines[0].startswith("|"):
            out.append(para)
            continue
        if lines[0].startswith("- "):
            items = []
            for ln in lines:
                if ln.startswith("- "):
                    items.append(ln[2:])
                else:
                    items[-1] += " " + ln.strip()
            out.append("\n".join(textwrap.fill(it, WIDTH, initial_indent="- ", subsequent_indent="  ",
                                               break_long_words=False, break_on_hyphens=False) for it in items))
            continue
        out.append(textwrap.fill(" ".join(ln.strip() for ln in lines), WIDTH, break_long_words=False,
                                 break_on_hyphens=False))
    return "\n\n".join(out)


def fill(template, figs):
    """The block's text: the template with its figures, wrapped. KeyError names a figure the render function forgot."""
    return wrap(template.format(**figs))


def squash(text):
    """Text with every run of spaces and line breaks made one space (line breaks are the wrapper's, not figures')."""
    return re.sub(r"\s+", " ", text).strip()


def template_regex(template):
    """A regex matching the squashed template with any text in place of each figure (a repeated figure must
    repeat)."""
    out, seen = [], set()
    for lit, field, _spec, _conv in string.Formatter().parse(template):
        out.append(re.escape(re.sub(r"\s+", " ", lit)))
        if field is None:
            continue
        if field in seen:
            out.append("(?P=%s)" % field)
        else:
            seen.add(field)
            out.append("(?P<%s>.*?)" % field)
    return re.compile("".join(out) + r"\Z", re.S)


def differences(template, figs, text):
    """What differs between a README block's text and the text the figures make: a list of (figure, README's value,
    measured value); [] when they are equal; [(None, None, None)] when only the line breaks differ; None when the text
    differs outside the figures (edited prose or a changed template)."""
    want = fill(template, figs)
    if text == want:
        return []
    m = template_regex(template.strip()).match(squash(text))
    if not m:
        return None
    diff = [(k, v, squash(figs[k])) for k, v in m.groupdict().items() if v != squash(figs[k])]
    return diff or [(None, None, None)]


class Found:
    """A generated block found in a README: name, the marker's command, the text between the markers, line numbers
    (1-based) of the begin and end markers."""

    def __init__(self, name, command, text, begin, end):
        self.name, self.command, self.text, self.begin, self.end = name, command, text, begin, end


def parse_readme(path, lines):
    """The generated blocks of a README's lines. UsageError naming path:line for a marker without its end, an end
    without a marker, nested markers, a malformed marker or a name used twice."""
    found, cur = [], None
    for no, line in enumerate(lines, 1):
        s = line.rstrip("\n")
        if s.startswith("<!-- generated"):
            m = BEGIN_RE.match(s)
            if not m:
                raise UsageError("%s:%d: malformed marker (want '<!-- generated: NAME (COMMAND) -->'): %s" % (path, no, s))
            if cur:
                raise UsageError("%s:%d: block %s starts inside block %s (line %d)" % (path, no, m.group("name"),
                                                                                       cur[0], cur[2]))
            cur = (m.group("name"), m.group("command"), no, [])
        elif s == END_LINE:
            if not cur:
                raise UsageError("%s:%d: '%s' without a block" % (path, no, END_LINE))
            found.append(Found(cur[0], cur[1], "\n".join(cur[3]), cur[2], no))
            cur = None
        elif cur:
            cur[3].append(s)
    if cur:
        raise UsageError("%s:%d: block %s has no '%s'" % (path, cur[2], cur[0], END_LINE))
    names = [f.name for f in found]
    for n in set(names):
        if names.count(n) > 1:
            raise UsageError("%s: block %s appears %d times" % (path, n, names.count(n)))
    return found


def rel(path):
    return os.path.relpath(path, ROOT) if path.startswith(ROOT + os.sep) else path


def plan(blocks_by_name, readme, only):
    """[(README path, its lines, [(Found, Block)])] to check or write. UsageError for an unknown name in a README or
    in --only, a block missing from its README, or a block found in another incident's README."""
    for n in only:
        if n not in blocks_by_name:
            raise UsageError("--only %s: no such block (story_numbers.py list)" % n)
    if readme:
        paths = [readme]
    else:
        paths = sorted({b.readme() for b in blocks_by_name.values()})
    out = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().split("\n")
        except OSError as e:
            raise UsageError("%s: cannot read: %s" % (rel(path), e))
        found = parse_readme(rel(path), lines)
        pairs = []
        for fb in found:
            b = blocks_by_name.get(fb.name)
            if b is None:
                raise UsageError("%s:%d: block %s is not defined in tools/stories/story_numbers.py" % (rel(path), fb.begin,
                                                                                             fb.name))
            if not readme and b.readme() != path:
                raise UsageError("%s:%d: block %s belongs to %s" % (rel(path), fb.begin, fb.name, rel(b.readme())))
            if not only or fb.name in only:
                pairs.append((fb, b))
        if not readme:
            have = {fb.name for fb in found}
            for b in blocks_by_name.values():
                if b.readme() == path and b.name not in have and (not only or b.name in only):
                    raise UsageError("%s: block %s is missing: add its markers where its text belongs\n"
                                     "  <!-- generated: %s (%s) -->\n  %s\n(then make stories)" % (
                                         rel(path), b.name, b.name, b.command(), END_LINE))
        if pairs:
            out.append((path, lines, pairs))
    return out


def measure(lab, runs, keep, jobs=2):
    """Runs each distinct replay once, up to jobs at a time, the costliest first (a replay that mostly waits, such
    as 0006's hangs, then overlaps the others); Results of them all. LabError of the first replay that failed."""
    distinct = {}
    for run in runs:
        distinct.setdefault(run.key(), run)
    order = sorted(distinct.values(), key=lambda r: -r.cost)
    tmp = None if keep else tempfile.mkdtemp(prefix="story-numbers-")
    base = keep or tmp
    try:
        outs = {}
        for i, run in enumerate(order):
            outs[run.key()] = os.path.join(base, "%02d-%s" % (i, re.sub(r"[^A-Za-z0-9.-]+", "_", " ".join(run.args()))))
            os.makedirs(outs[run.key()], exist_ok=True)
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
            futs = {run.key(): ex.submit(run_replay, lab, run, outs[run.key()]) for run in order}
            return Results({k: f.result() for k, f in futs.items()})
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="story_numbers.py", description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=("check", "write", "list"))
    ap.add_argument("--lab", default=os.environ.get("LAB_BIN") or os.path.join("build", "lab"),
                    help="the lab binary (default: $LAB_BIN, else build/lab)")
    ap.add_argument("--only", action="append", default=[], help="this block only (repeatable)")
    ap.add_argument("--readme", help="the README (or a copy of one) to check or write instead of the incidents'")
    ap.add_argument("--keep", help="keep the replays' results under this folder")
    ap.add_argument("--jobs", type=int, default=2, help="replays run at once (default 2; each uses every core)")
    a = ap.parse_args(argv)
    by_name = {b.name: b for b in BLOCKS}
    if a.action == "list":
        for b in BLOCKS:
            print("%-22s %s\n    %s\n    %s" % (b.name, rel(b.readme()), b.what, b.command()))
        return 0
    lab = a.lab if os.path.isabs(a.lab) else os.path.join(ROOT, a.lab)
    t0 = time.monotonic()
    try:
        todo = plan(by_name, os.path.abspath(a.readme) if a.readme else None, a.only)
        if not os.access(lab, os.X_OK):
            raise LabError("%s: no lab binary (make, or --lab BIN)" % rel(lab))
        runs = [r for _p, _l, pairs in todo for _f, b in pairs for r in b.runs]
        res = measure(lab, runs, os.path.abspath(a.keep) if a.keep else None, a.jobs)
    except UsageError as e:
        sys.stderr.write("story_numbers.py: %s\n" % e)
        return 2
    except LabError as e:
        sys.stderr.write("story_numbers.py: %s\n" % e)
        return 3
    bad, nblocks = {}, 0
    for path, lines, pairs in todo:
        changed = False
        for fb, b in sorted(pairs, key=lambda p: -p[0].begin):  # bottom up, so line numbers stay valid
            nblocks += 1
            try:
                template, figs = b.render(res)
                want = fill(template, figs)
            except (LabError, KeyError, IndexError, ValueError) as e:
                sys.stderr.write("story_numbers.py: %s: block %s: cannot render from the replay: %r\n" % (
                    rel(path), b.name, e))
                return 3
            marker = "<!-- generated: %s (%s) -->" % (b.name, b.command())
            if a.action == "write":
                if fb.text != want or lines[fb.begin - 1] != marker:
                    lines[fb.begin - 1:fb.end] = [marker] + want.split("\n") + [END_LINE]
                    changed = True
                continue
            where = "%s:%d: block %s" % (rel(path), fb.begin, b.name)
            msgs = []
            if fb.command != b.command():
                msgs.append("the marker's command is `%s`, the block's is `%s`" % (fb.command, b.command()))
            d = differences(template, figs, fb.text)
            if d is None:
                diff = "\n".join(difflib.unified_diff(fb.text.split("\n"), want.split("\n"), "README", "measured",
                                                      lineterm="", n=0))
                msgs.append("the text differs outside its figures (edited by hand? change the template in "
                            "tools/stories/story_numbers.py, then make stories):\n%s" % diff)
            for fig, have, meas in d or []:
                msgs.append("figure %s: the README says '%s', the code measures '%s'" % (fig, have, meas) if fig else
                            "the figures match, the line breaks are not the ones make stories writes")
            if msgs:
                bad[where] = msgs
        if changed:
            tmp = path + ".tmp.%d" % os.getpid()
            with open(tmp, "w", encoding="utf-8") as f:
                f.write("\n".join(lines))
            os.replace(tmp, path)
            print("story_numbers.py: wrote %s" % rel(path))
    secs = time.monotonic() - t0
    nruns = len({r.key() for _p, _l, pairs in todo for _f, b in pairs for r in b.runs})
    if bad:
        for where in sorted(bad):
            for msg in bad[where]:
                sys.stderr.write("story_numbers.py: %s: %s\n" % (where, msg))
        sys.stderr.write("story_numbers.py: %d of %d generated blocks differ from what the code measures (%d CPU "
                         "replays, %.1f s); make stories rewrites them\n" % (len(bad), nblocks, nruns, secs))
        return 1
    print("story_numbers.py: %d generated blocks %s (%d CPU replays, %.1f s)" % (
        nblocks, "written" if a.action == "write" else "match what the code measures", nruns, secs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
