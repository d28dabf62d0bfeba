#!/usr/bin/env python3
"""story_numbers.py: the measured numbers and the pictures of the incidents' stories, generated from CPU replays and
checked against them.

Usage: tools/stories/story_numbers.py check|write|list [--lab BIN] [--only NAME]... [--readme PATH] [--keep DIR] [--jobs N]

An incident's README, or a page beside it (notes/*.md), holds generated blocks:

    <!-- generated: NAME (COMMAND) -->
    text whose figures come from the replay COMMAND
    <!-- end generated -->

each marker on a line of its own, and shows pictures drawn from replays, each on a line of its own:

    ![what it shows](figures/NAME.svg)

Each incident defines its own blocks and pictures in incidents/<id>/story.py (found here, so that adding an incident
touches only its directory): BLOCKS, a list of Block (the CPU replays it needs, `lab replay --backend cpu` at small
seed counts whose figures are bit for bit the same on every run of the same build, and a render function that turns
their results.jsonl into a template and its figures), and PICTURES, a list of Picture (the replays it needs and a draw
function that turns their results, and the data their incident's figures hook wrote, into SVG text, with Svg below).
`write` runs the replays and rewrites every block's marker line and text and every picture's file (`make stories`);
`check` runs them and fails when a README's block no longer says what the code measures, naming the README, the block
and each figure that differs, or when a picture's file is not what the code draws (`make test` runs it); `list`
prints the blocks, the pictures and their commands. A block defined but missing from its README, a picture its README
does not show, a marker without its end, or a name no definition knows is an error in both. Text outside the blocks
is not touched: numbers measured on a GPU stay prose there, each naming its device and the command that measured
them.

--readme PATH checks or writes the blocks found in PATH instead of the incidents' READMEs (with --only, a copy of
one README; the tests use it; pictures are left alone). --keep DIR keeps the replays' results under DIR. --lab BIN is
the lab binary (default: $LAB_BIN, else build/lab); the replays run in the repository root, --jobs N of them at once
(default 2, the costliest first, each on every core). A check takes about 30 s on 2 cores.

Exit status: 0 every block and picture matches (check) or was written (write); 1 a block or picture differs from what
the code measures; 2 bad usage or a malformed README or story.py (the message names the file and line); 3 the lab
could not run a replay (the message names the command and its exit status).
"""
import argparse
import concurrent.futures
import difflib
import glob
import importlib.util
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
# The incidents' story.py files import this module by name: run as a script, it is that module too (one Block class).
sys.modules.setdefault("story_numbers", sys.modules[__name__])

BEGIN_RE = re.compile(r"^<!-- generated: (?P<name>[A-Za-z0-9_.-]+) \((?P<command>.*)\) -->$")
END_LINE = "<!-- end generated -->"


class UsageError(Exception):
    """Bad usage or a malformed README: exit 2, the message names the file and line."""


class LabError(Exception):
    """A replay could not be run or gave no usable results: exit 3, the message names the command."""


# ---------------------------------------------------------------------------------------------------------------
# Replays


class Run:
    """One CPU replay: `lab replay --backend cpu --incident ID [--variant V] [--seed S | [--first-seed S0] --seeds N]`;
    plots=True keeps the replay's plots on, so that the incident's figures hook writes the data a picture draws
    (Results.plots_dir)."""

    def __init__(self, incident, variant=None, seeds=None, first_seed=None, seed=None, cost=1.0, plots=False):
        self.incident, self.variant, self.seeds, self.first_seed, self.seed = incident, variant, seeds, first_seed, seed
        self.cost = cost  # rough seconds on 2 cores: the costliest replays start first
        self.plots = plots

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
        return tuple(self.args()) + (("plots",) if self.plots else ())


def run_replay(lab, run, out):
    """Runs one replay into out; returns its records (results.jsonl's objects). LabError when the lab exits with
    anything but 0 (ok) or 1 (a verdict NOT OK: a short replay may refuse a stated rate), when results.jsonl is
    missing or empty, or when a case is ERROR (the lab could not measure it)."""
    argv = [lab, "replay", "--backend", "cpu"] + run.args() + ["--out", out, "--quiet"] + ([] if run.plots else
                                                                                          ["--no-plots"])
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
    """The records of the replays a block or picture asked for, by Run, and the folders they wrote (kept until
    close())."""

    def __init__(self, by_key, dirs=None, tmp=None):
        self.by_key, self.dirs, self.tmp = by_key, dirs or {}, tmp

    def of(self, run, variant=None):
        recs = self.by_key[run.key()]
        if variant is not None:
            recs = [r for r in recs if r["variant"] == variant]
        return sorted(recs, key=lambda r: (r["variant"], r["seed"]))

    def plots_dir(self, run):
        """The plots folder of a replay run with plots=True."""
        return os.path.join(self.dirs[run.key()], "plots")

    def close(self):
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None


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


def all_or(recs, ok, what="one"):
    """'every one' (or 'every WHAT') when ok holds for every record, else 'N of M'."""
    n = sum(1 for r in recs if ok(r))
    return "every %s" % what if n == len(recs) else "%d of %d" % (n, len(recs))


def incident_of(path):
    """The incident id of a story.py: the name of its directory."""
    return os.path.basename(os.path.dirname(os.path.abspath(path)))


# ---------------------------------------------------------------------------------------------------------------
# The blocks. Each render function returns (template, figures): the template is str.format text with one named
# field per figure, so a check can say which figure differs.


class Block:
    """A generated block of an incident's README: its name (the marker's), the incident, the CPU replays it needs, the
    render function (Results -> (template, figures)) and one line of what it says."""

    def __init__(self, name, incident, runs, render, what):
        self.name, self.incident, self.runs, self.render, self.what = name, incident, runs, render, what

    def readme(self):
        return os.path.join(ROOT, "incidents", self.incident, "README.md")

    def pages(self):
        """The pages the block may live in: its incident's README.md and the pages of its notes/."""
        return [self.readme()] + sorted(glob.glob(os.path.join(ROOT, "incidents", self.incident, "notes", "*.md")))

    def command(self):
        return " ; ".join(r.command() for r in self.runs)


class Picture:
    """A picture an incident's story shows: incidents/<incident>/figures/<name>.svg, drawn by draw(Results) -> SVG text
    from the CPU replays it needs (their records, and the data the incident's figures hook wrote where a run keeps its
    plots); the README must show it on a line of its own, ![caption](figures/<name>.svg)."""

    def __init__(self, name, incident, runs, draw, what):
        self.name, self.incident, self.runs, self.draw, self.what = name, incident, runs, draw, what

    def readme(self):
        return os.path.join(ROOT, "incidents", self.incident, "README.md")

    def path(self):
        return os.path.join(ROOT, "incidents", self.incident, "figures", self.name + ".svg")

    def command(self):
        return " ; ".join(r.command() + (" (plots on)" if r.plots else "") for r in self.runs)


class Svg:
    """A small SVG writer for the stories' pictures: coordinates in pixels, numbers written with one decimal and text
    escaped, so that the same picture is the same bytes on every machine. svg() returns the document."""

    def __init__(self, width, height, title):
        self.w, self.h, self.items = width, height, []
        self.title = title

    @staticmethod
    def n(x):
        return ("%.1f" % x).rstrip("0").rstrip(".") if x != int(x) else "%d" % x

    @staticmethod
    def esc(t):
        return str(t).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")

    def rect(self, x, y, w, h, fill, stroke="none", sw=1, title=None):
        t = "<title>%s</title>" % self.esc(title) if title else ""
        self.items.append('<rect x="%s" y="%s" width="%s" height="%s" fill="%s" stroke="%s" stroke-width="%s">%s</rect>'
                          % (self.n(x), self.n(y), self.n(w), self.n(h), fill, stroke, self.n(sw), t) if t else
                          '<rect x="%s" y="%s" width="%s" height="%s" fill="%s" stroke="%s" stroke-width="%s"/>'
                          % (self.n(x), self.n(y), self.n(w), self.n(h), fill, stroke, self.n(sw)))

    def line(self, x1, y1, x2, y2, stroke="#222", sw=1, dash=None, arrow=False):
        self.items.append('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"%s%s/>' % (
            self.n(x1), self.n(y1), self.n(x2), self.n(y2), stroke, self.n(sw),
            ' stroke-dasharray="%s"' % dash if dash else "", ' marker-end="url(#arrow)"' if arrow else ""))

    def path(self, d, stroke="#222", sw=1, fill="none", dash=None, arrow=False):
        self.items.append('<path d="%s" stroke="%s" stroke-width="%s" fill="%s"%s%s/>' % (
            d, stroke, self.n(sw), fill, ' stroke-dasharray="%s"' % dash if dash else "",
            ' marker-end="url(#arrow)"' if arrow else ""))

    def text(self, x, y, t, size=13, anchor="start", weight=None, fill="#222", italic=False):
        self.items.append('<text x="%s" y="%s" font-size="%s" text-anchor="%s"%s%s fill="%s">%s</text>' % (
            self.n(x), self.n(y), self.n(size), anchor, ' font-weight="%s"' % weight if weight else "",
            ' font-style="italic"' if italic else "", fill, self.esc(t)))

    def svg(self):
        # drawn at least 1000 px wide (the report shows its figures at reading size); the viewBox keeps the units
        scale = max(1.0, 1000.0 / self.w)
        head = ('<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" '
                'font-family="DejaVu Sans, Helvetica, Arial, sans-serif">\n<title>%s</title>\n'
                '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
                'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="context-stroke"/></marker></defs>\n'
                '<rect x="0" y="0" width="%s" height="%s" fill="#ffffff"/>\n' % (
                    self.n(round(self.w * scale)), self.n(round(self.h * scale)), self.n(self.w), self.n(self.h),
                    self.esc(self.title),
                    self.n(self.w), self.n(self.h)))
        return head + "\n".join(self.items) + "\n</svg>\n"


def seeds_of(recs):
    return sorted({r["seed"] for r in recs})


def seed_span(recs):
    s = seeds_of(recs)
    if s != list(range(s[0], s[-1] + 1)):
        raise LabError("seeds %s are not a range" % s)
    return s[0], s[-1]


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
    """[(page path, its lines, [(Found, Block)])] to check or write. A block lives in one page of its incident: its
    README.md or a page beside it (notes/*.md). UsageError for an unknown name in a page or in --only, a block missing
    from every page of its incident or in two of them, or a block found in another incident's page."""
    for n in only:
        if n not in blocks_by_name:
            raise UsageError("--only %s: no such block or picture (story_numbers.py list)" % n)
    if readme:
        paths = [readme]
    else:
        paths = sorted({p for b in blocks_by_name.values() for p in b.pages()})
    out, where = [], {}
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
                raise UsageError("%s:%d: block %s is not defined in any incidents/*/story.py" % (rel(path), fb.begin,
                                                                                              fb.name))
            if not readme and path not in b.pages():
                raise UsageError("%s:%d: block %s belongs to %s" % (rel(path), fb.begin, fb.name, rel(b.readme())))
            if fb.name in where:
                raise UsageError("%s:%d: block %s is also in %s" % (rel(path), fb.begin, fb.name, rel(where[fb.name])))
            where[fb.name] = path
            if not only or fb.name in only:
                pairs.append((fb, b))
        if pairs:
            out.append((path, lines, pairs))
    if not readme:
        for b in blocks_by_name.values():
            if b.name not in where and (not only or b.name in only):
                raise UsageError("%s: block %s is missing: add its markers where its text belongs (the README or a "
                                 "page of notes/)\n  <!-- generated: %s (%s) -->\n  %s\n(then make stories)" % (
                                     rel(b.readme()), b.name, b.name, b.command(), END_LINE))
    return out


def measure(lab, runs, keep, jobs=2):
    """Runs each distinct replay once, up to jobs at a time, the costliest first (a replay that mostly waits, such
    as 0006's hangs, then overlaps the others); Results of them all, whose folders stay until its close() (under keep,
    when given, for good). LabError of the first replay that failed."""
    distinct = {}
    for run in runs:
        distinct.setdefault(run.key(), run)
    order = sorted(distinct.values(), key=lambda r: -r.cost)
    tmp = None if keep else tempfile.mkdtemp(prefix="story-numbers-")
    base = keep or tmp
    try:
        outs = {}
        for i, run in enumerate(order):
            outs[run.key()] = os.path.join(base, "%02d-%s" % (i, re.sub(r"[^A-Za-z0-9.-]+", "_",
                                                                        " ".join(run.key()))))
            os.makedirs(outs[run.key()], exist_ok=True)
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
            futs = {run.key(): ex.submit(run_replay, lab, run, outs[run.key()]) for run in order}
            return Results({k: f.result() for k, f in futs.items()}, outs, tmp)
    except BaseException:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        raise


def discover(root=ROOT):
    """Every incident's blocks and pictures: incidents/*/story.py imported in order, their BLOCKS and PICTURES lists
    (each may be absent). UsageError naming the file that cannot be imported or whose entries are not Block or
    Picture, and a block or picture name used twice."""
    blocks, pictures = [], []
    for path in sorted(glob.glob(os.path.join(root, "incidents", "*", "story.py"))):
        inc = os.path.basename(os.path.dirname(path))
        name = "story_" + re.sub(r"[^A-Za-z0-9_]", "_", inc)
        try:
            spec = importlib.util.spec_from_file_location(name, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        except Exception as e:  # a story.py that does not import: name it and why
            raise UsageError("%s: cannot import: %s: %s" % (rel(path), type(e).__name__, e))
        for b in getattr(mod, "BLOCKS", []):
            if not isinstance(b, Block) or b.incident != inc:
                raise UsageError("%s: BLOCKS holds %r, not a Block of %s" % (rel(path), b, inc))
            blocks.append(b)
        for pic in getattr(mod, "PICTURES", []):
            if not isinstance(pic, Picture) or pic.incident != inc:
                raise UsageError("%s: PICTURES holds %r, not a Picture of %s" % (rel(path), pic, inc))
            pictures.append(pic)
    names = [x.name for x in blocks + pictures]
    for n in sorted(set(names)):
        if names.count(n) > 1:
            raise UsageError("a block or picture named %s is defined %d times (incidents/*/story.py)" % (
                n, names.count(n)))
    return blocks, pictures


def picture_shown(pic):
    """Whether the picture's README shows it: a line '![...](figures/NAME.svg)'."""
    try:
        with open(pic.readme(), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return False
    return re.search(r"(?m)^!\[[^\]\n]+\]\(figures/%s\.svg\)$" % re.escape(pic.name), text) is not None


def check_blocks(a, todo, res):
    """Checks or writes the blocks of todo (plan's) from res; returns ({where: [message]}, blocks seen). LabError when a
    block cannot be rendered from its replay."""
    bad, nblocks = {}, 0
    for path, lines, pairs in todo:
        changed = False
        for fb, b in sorted(pairs, key=lambda p: -p[0].begin):  # bottom up, so line numbers stay valid
            nblocks += 1
            try:
                template, figs = b.render(res)
                want = fill(template, figs)
            except (LabError, KeyError, IndexError, ValueError) as e:
                raise LabError("%s: block %s: cannot render from the replay: %r" % (rel(path), b.name, e))
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
                            "incidents/%s/story.py, then make stories):\n%s" % (b.incident, diff))
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
    return bad, nblocks


def check_pictures(a, pics, res):
    """Checks or writes the pictures pics from res; returns {where: [message]}. LabError when a picture cannot be
    drawn from its replays."""
    bad = {}
    for pic in pics:
        try:
            want = pic.draw(res)
        except (LabError, KeyError, IndexError, ValueError, OSError) as e:
            raise LabError("%s: picture %s: cannot draw from the replay: %r" % (rel(pic.readme()), pic.name, e))
        where = "%s: picture %s" % (rel(pic.path()), pic.name)
        try:
            with open(pic.path(), encoding="utf-8") as f:
                have = f.read()
        except OSError:
            have = None
        if a.action == "write":
            if have != want:
                os.makedirs(os.path.dirname(pic.path()), exist_ok=True)
                tmp = pic.path() + ".tmp.%d" % os.getpid()
                with open(tmp, "w", encoding="utf-8") as f:
                    f.write(want)
                os.replace(tmp, pic.path())
                print("story_numbers.py: wrote %s" % rel(pic.path()))
        elif have is None:
            bad[where] = ["missing: make stories draws it"]
        elif have != want:
            bad[where] = ["the file is not what the code draws now (make stories redraws it)"]
        if not picture_shown(pic):
            bad.setdefault(where, []).append("%s does not show it: add a line '![what it shows](figures/%s.svg)'" % (
                rel(pic.readme()), pic.name))
    return bad


def main(argv=None):
    ap = argparse.ArgumentParser(prog="story_numbers.py", description=__doc__.splitlines()[1])
    ap.add_argument("action", choices=("check", "write", "list"))
    ap.add_argument("--lab", default=os.environ.get("LAB_BIN") or os.path.join("build", "lab"),
                    help="the lab binary (default: $LAB_BIN, else build/lab)")
    ap.add_argument("--only", action="append", default=[], help="this block or picture only (repeatable)")
    ap.add_argument("--readme", help="the README (or a copy of one) to check or write instead of the incidents'")
    ap.add_argument("--keep", help="keep the replays' results under this folder")
    ap.add_argument("--jobs", type=int, default=2, help="replays run at once (default 2; each uses every core)")
    a = ap.parse_args(argv)
    try:
        blocks, pictures = discover()
    except UsageError as e:
        sys.stderr.write("story_numbers.py: %s\n" % e)
        return 2
    by_name = {b.name: b for b in blocks}
    pic_names = {p.name for p in pictures}
    if a.action == "list":
        for b in blocks:
            print("%-22s %s\n    %s\n    %s" % (b.name, rel(b.readme()), b.what, b.command()))
        for p in pictures:
            print("%-22s %s\n    %s\n    %s" % (p.name, rel(p.path()), p.what, p.command()))
        return 0
    lab = a.lab if os.path.isabs(a.lab) else os.path.join(ROOT, a.lab)
    t0 = time.monotonic()
    res = None
    try:
        block_only = [n for n in a.only if n not in pic_names]
        todo = plan(by_name, os.path.abspath(a.readme) if a.readme else None, block_only) \
            if not a.only or block_only else []
        pics = [] if a.readme else [p for p in pictures if not a.only or p.name in a.only]
        if not os.access(lab, os.X_OK):
            raise LabError("%s: no lab binary (make, or --lab BIN)" % rel(lab))
        runs = [r for _p, _l, pairs in todo for _f, b in pairs for r in b.runs] + [r for p in pics for r in p.runs]
        res = measure(lab, runs, os.path.abspath(a.keep) if a.keep else None, a.jobs)
        bad, nblocks = check_blocks(a, todo, res)
        bad.update(check_pictures(a, pics, res))
    except UsageError as e:
        sys.stderr.write("story_numbers.py: %s\n" % e)
        return 2
    except LabError as e:
        sys.stderr.write("story_numbers.py: %s\n" % e)
        return 3
    finally:
        if res:
            res.close()
    secs = time.monotonic() - t0
    nruns = len({r.key() for r in runs})
    if bad:
        for where in sorted(bad):
            for msg in bad[where]:
                sys.stderr.write("story_numbers.py: %s: %s\n" % (where, msg))
        sys.stderr.write("story_numbers.py: %d of %d generated blocks and pictures differ from what the code measures "
                         "(%d CPU replays, %.1f s); make stories rewrites them\n" % (
                             len(bad), nblocks + len(pics), nruns, secs))
        return 1
    print("story_numbers.py: %d generated blocks and %d pictures %s (%d CPU replays, %.1f s)" % (
        nblocks, len(pics), "written" if a.action == "write" else "match what the code measures", nruns, secs))
    return 0


# Every incident's blocks and pictures (incidents/*/story.py); a story.py that does not import is named by main.
try:
    BLOCKS, PICTURES = discover()
except UsageError:
    BLOCKS, PICTURES = [], []


if __name__ == "__main__":
    sys.exit(main())
