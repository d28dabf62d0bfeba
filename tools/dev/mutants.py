#!/usr/bin/env python3
"""mutants: planted regressions in the fixed kernels and the lab's core, applied one at a time to a scratch
copy of the tree; reports which the replay kills, which the unit tests kill, and which survive.

Each mutant is one exact, unique piece of code (matched as text, never by line number, across the files a glob
names, so that a file split or moved keeps its mutants) and its replacement. For each mutant the script copies
the text change into the scratch copy, rebuilds incrementally (CUDA off: the replay is the CPU one), replays the
named incidents on a few seeds and compares every variant's verdict, counts and the exit status with the
unmutated baseline at the same seeds (so a stated rate refused on a few seeds is part of the baseline, not a
kill), runs the named Criterion tests, and puts the file back. Nothing in the working tree is touched.

Usage: tools/dev/mutants.py [--scratch DIR] [--seeds N] [--only ID,...] [--no-tests] [--jobs N] [--list]
       tools/dev/mutants.py --check        (every mutant applies to the current tree: exactly one match each)
Exit status: 0 the run finished (survivors are reported, not an error), 2 bad usage or a mutant that does not
apply (named), 3 the scratch copy could not be built or the baseline is not reproducible.
"""

import argparse
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# id, files (globs), find (exact text, unique across the files), replace, what the regression is, the incidents
# whose replay should see it, the Criterion filter of the tests that should.
MUTANTS = [
    # ---- fixed kernels -------------------------------------------------------------------------------------
    dict(id="K01", files=["kernels/lab_semicrf*.c"],
         find="float v = padded ? (real ? e : 0.0f) : e * (float)real;",
         replace="float v = e * (float)real;",
         what="0001 fix masks its segment marginals by multiplying by 0 instead of selecting (inf * 0 = NaN)",
         replay=["0001"], tests="crf_oob/*"),
    dict(id="K02", files=["kernels/lab_semicrf*.c"],
         find="long rd = padded || clamped ? (real ? c : C - 1) : c;",
         replace="long rd = clamped ? (real ? c : C - 1) : c;",
         what="0001 fix drops the clamp of its reads of unpadded inputs (padding lanes read past rows)",
         replay=["0001"], tests="crf_oob/*"),
    dict(id="K03", files=["kernels/lab_semicrf*.c"],
         find="gsz = cfg->accum == LAB_SEMICRF_ACC_F64_ATOMIC ? 8 : 4;",
         replace="gsz = 4;",
         what="0002 fix-f64-atomic accumulates in float32 (precision swapped back)",
         replay=["0002"], tests="crf_drift/*"),
    dict(id="K04", files=["kernels/lab_semicrf*.c"],
         find="det = cfg->accum == LAB_SEMICRF_ACC_DETERMINISTIC;",
         replace="det = 0;",
         what="0002 fix-deterministic falls back to schedule-ordered float32 atomics",
         replay=["0002"], tests="crf_drift/*"),
    dict(id="K05", files=["kernels/lab_nvfp4.c"],
         find="if (m < rows && k < k_sf) v = kind == LAB_NVFP4_REMAP_MK_SWAP",
         replace="if (m < rows && k <= k_sf) v = kind == LAB_NVFP4_REMAP_MK_SWAP",
         what="0003 fix: off-by-one in the remap's K bound (one padding column takes the next row's scale)",
         replay=["0003"], tests="nvfp4*/*"),
    dict(id="K06", files=["kernels/lab_nvfp4.c"],
         find="        uint8_t v = 0;\n        if (m < rows && k < k_sf)",
         replace="        uint8_t v = dst[o];\n        if (m < rows && k < k_sf)",
         what="0003 fix leaves the tile padding as it found it (stale) instead of writing E4M3 +0",
         replay=["0003"], tests="nvfp4*/*"),
    dict(id="K07", files=["incidents/0004-pow-grad-nan/pow_grad.h"],
         find="float q = (x == 0.0f) ? 0.0f : y / x;",
         replace="float q = y / x;",
         what="0004 fix drops its guard for a zero base (0 / 0 = NaN where base^(e-1) is 0)",
         replay=["0004"], tests="pow_grad/*"),
    dict(id="K08", files=["incidents/0005-bf16-crf-nan/bfcrf_train.c"],
         find="P->trans[i * NT + j] = bfcrf_allowed(i, j) ? (bf ? lab_bf16_round(v) : v) : -INFINITY;",
         replace="P->trans[i * NT + j] = bfcrf_allowed(i, j) ? lab_bf16_round(v) : -INFINITY;",
         what="0005 fix keeps its CRF transition parameters in bf16 instead of float32",
         replay=["0005"], tests="bfcrf/*"),
    dict(id="K09", files=["incidents/0006-distill-step-hang/dsh_proto.c"],
         find="if (micro == 0) how = dp_exchange(e, step, micro, (uint64_t)step, 1, 1);",
         replace="if (micro == g - 1) how = dp_exchange(e, step, micro, (uint64_t)step, 1, 1);",
         what="0006 fix: trainers exchange on the last micro-step of a cycle instead of the first",
         replay=["0006"], tests="dsh/*"),
    dict(id="K10", files=["incidents/0007-harness-log-deadlock/hld.c"],
         find="[HLD_FIX_DRAIN] = {1, 0, 1},",
         replace="[HLD_FIX_DRAIN] = {0, 0, 1},",
         what="0007 fix-drain stops draining stdout while it waits for the reply",
         replay=["0007"], tests="hld/*"),
    dict(id="K11", files=["kernels/lab_semicrf*.c"],
         find="float v = padded ? (real ? g : 0.0f) : g * (float)real;",
         replace="float v = padded ? g : g * (float)real;",
         what="0001 fix writes unmasked transition marginals of padding lanes into its padded buffer",
         replay=["0001"], tests="crf_oob/*"),
    dict(id="K12", files=["incidents/0004-pow-grad-nan/pow_grad.h"],
         find="float r = sqrtf(ms + eps);",
         replace="float r = sqrtf(ms);",
         what="0004 fix's RMS head drops its eps (sqrt(ms) instead of sqrt(ms + eps))",
         replay=["0004"], tests="pow_grad/*"),
    # ---- the lab's core ------------------------------------------------------------------------------------
    dict(id="C01", files=["lab/lab_verdict.c"],
         find="size_t bad = ran - t->counts[LAB_OUT_PASS];",
         replace="size_t bad = ran - t->counts[LAB_OUT_PASS] - t->counts[LAB_OUT_CRASH];",
         what="verdict: a fix that crashes is counted as holding",
         replay=["0004"], tests="verdict/*"),
    dict(id="C02", files=["lab/lab_verdict.c"],
         find="v.ok = whole_run && v.variants_not_ok == 0 && v.cases_not_ok == 0 && !v.mismatch;",
         replace="v.ok = whole_run && v.cases_not_ok == 0;",
         what="verdict: the run's ok looks at cases only (a bug below its stated rate passes)",
         replay=["0004"], tests="verdict/*"),
    dict(id="C03", files=["lab/lab_results.c"],
         find='cJSON_AddBoolToObject(root, "ok", verdict->ok);',
         replace='cJSON_AddBoolToObject(root, "ok", verdict->cases_not_ok == 0);',
         what="summary.json's ok decided apart from the exit status (from the cases alone)",
         replay=["0004"], tests="verdict/*"),
    dict(id="C04", files=["lab/lab_verdict.c"],
         find="} else if (t->power < LAB_BINOM_POWER) {",
         replace="} else if (t->power < 0) {",
         what="verdict: a stated rate judged on too few seeds is not refused",
         replay=["0003"], tests="verdict/*"),
    dict(id="C05", files=["lab/lab_binom.c"],
         find="        c = (long)k;\n",
         replace="        c = (long)k + 1;\n",
         what="binomial test: critical count off by one (rejects a count the level allows)",
         replay=["0003"], tests="binom/*"),
    dict(id="C06", files=["lab/lab_isolate.c"],
         find="o->outcome = LAB_OUT_CRASH; /* died before reporting",
         replace="o->outcome = LAB_OUT_PASS; /* died before reporting",
         what="isolation: a case that exits with a failure status before reporting counts as PASS",
         replay=["0004"], tests="isolate/*"),
    dict(id="C07", files=["replay/cli/lab_main.c"],
         find="rc = res.verdict.exit_status; /*",
         replace="rc = LAB_EXIT_OK; /*",
         what="exit status decided apart from the verdict (always 0)",
         replay=["0003"], tests="cli/*"),
    dict(id="C08", files=["lab/lab_results.c"],
         find="        failures += !t[k].ok;\n",
         replace="        failures += 0;\n",
         what="JUnit: a variant judged not ok (a stated rate) is not counted a failure",
         replay=["0004"], tests="verdict/*"),
]


class UsageError(Exception):
    pass


def expand(files, root):
    out = []
    for pattern in files:
        out += sorted(glob.glob(os.path.join(root, pattern)))
    return out


def locate(m, root):
    """(path, text) of the one file of m's globs holding m['find'] exactly once; UsageError naming the mutant
    otherwise."""
    hits = []
    for path in expand(m["files"], root):
        with open(path) as f:
            text = f.read()
        n = text.count(m["find"])
        if n:
            hits.append((path, text, n))
    total = sum(h[2] for h in hits)
    if total != 1:
        raise UsageError("mutant %s: %r occurs %d times in %s (want exactly once): update tools/dev/mutants.py"
                         % (m["id"], m["find"], total, ", ".join(m["files"])))
    return hits[0][0], hits[0][1]


def check(root):
    """Every mutant applies to the tree at root. Returns a list of problems (empty: all apply)."""
    problems, ids = [], set()
    for m in MUTANTS:
        if m["id"] in ids:
            problems.append("mutant %s: id used twice" % m["id"])
        ids.add(m["id"])
        if m["find"] == m["replace"]:
            problems.append("mutant %s: the replacement changes nothing" % m["id"])
        try:
            locate(m, root)
        except UsageError as e:
            problems.append(str(e))
    return problems


def tree_files(root):
    """The files of the working tree a build reads: tracked and untracked-not-ignored (git ls-files)."""
    out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         capture_output=True, check=True).stdout
    return [p for p in out.decode().split("\0") if p and os.path.isfile(os.path.join(root, p))]


def sync(root, scratch):
    """Makes scratch hold the working tree's files (copies only what differs, keeps scratch/build, removes
    files the tree no longer has). Returns the number of files copied."""
    os.makedirs(scratch, exist_ok=True)
    files = tree_files(root)
    keep = set(files)
    copied = 0
    for rel in files:
        src, dst = os.path.join(root, rel), os.path.join(scratch, rel)
        with open(src, "rb") as f:
            data = f.read()
        if os.path.exists(dst):
            with open(dst, "rb") as f:
                if f.read() == data:
                    continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "wb") as f:
            f.write(data)
        shutil.copymode(src, dst)
        copied += 1
    for dirpath, dirnames, filenames in os.walk(scratch):
        rel_dir = os.path.relpath(dirpath, scratch)
        if rel_dir == "build" or rel_dir.startswith("build" + os.sep) or rel_dir == "out" or rel_dir.startswith("out" + os.sep):
            dirnames[:] = []
            continue
        for fn in filenames:
            rel = os.path.normpath(os.path.join(rel_dir, fn))
            if rel not in keep:
                os.remove(os.path.join(dirpath, fn))
    return copied


def run(argv, cwd, timeout):
    t0 = time.time()
    try:
        p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout + p.stderr, time.time() - t0
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"") + (e.stderr or b"")
        return None, out.decode(errors="replace") if isinstance(out, bytes) else str(out), time.time() - t0


def build(scratch, jobs):
    # BUILD=build: the scratch copy's only build, without CUDA, in build/ (CUDA=0 alone would build in build/nocuda)
    rc, out, _ = run(["make", "-j%d" % jobs, "CUDA=0", "BUILD=build", "all", "build/lab-tests"], scratch, 1800)
    return rc == 0, out


def replay(scratch, incident, seeds, tag):
    """(exit status, {variant: (ok, verdict_kind, counts)}) of a CPU replay of incident on seeds 1..N."""
    out = os.path.join(scratch, "out", "%s-%s" % (tag, incident))
    rc, text, _ = run(["build/lab", "replay", "--incident", incident, "--seeds", str(seeds), "--backend", "cpu",
                       "--no-plots", "--quiet", "--out", out], scratch, 900)
    verdicts = {}
    try:
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
        for inc in s.get("incidents", []):
            for v in inc.get("variants", []):
                verdicts[v["name"]] = (v.get("ok"), v.get("verdict_kind"), json.dumps(v.get("counts"), sort_keys=True))
        verdicts["(summary ok)"] = s.get("ok")
    except (OSError, ValueError):
        verdicts = {"(no summary)": text[-300:]}
    return rc, verdicts


def tests(scratch, filt):
    rc, text, _ = run(["build/lab-tests", "--filter", filt, "-j2"], scratch, 900)
    return rc == 0, text


def differences(base, got):
    brc, bv = base
    rc, v = got
    diff = []
    if rc != brc:
        diff.append("exit %s (baseline %s)" % ("timeout" if rc is None else rc, brc))
    for name in sorted(set(bv) | set(v)):
        if bv.get(name) != v.get(name):
            b, g = bv.get(name), v.get(name)
            if isinstance(b, tuple) and isinstance(g, tuple):
                diff.append("%s: %s (baseline %s)" % (name, g[1], b[1]) if g[1] != b[1] else "%s: counts %s (baseline %s)"
                            % (name, g[2], b[2]))
            else:
                diff.append("%s: %s (baseline %s)" % (name, g, b))
    return diff


def main(argv=None):
    ap = argparse.ArgumentParser(prog="mutants.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--scratch", default=None, help="scratch copy (default /tmp/lab-mutants-<hash of the tree path>)")
    ap.add_argument("--seeds", type=int, default=4, help="seeds per replay (default 4)")
    ap.add_argument("--only", default=None, help="comma-separated mutant ids")
    ap.add_argument("--no-tests", action="store_true", help="replay only, no Criterion tests")
    ap.add_argument("--jobs", type=int, default=2, help="make -j (default 2)")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--check", action="store_true", help="check that every mutant applies to this tree, and exit")
    ap.add_argument("--json", default=None, help="also write the results as JSON to this file")
    try:
        a = ap.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    if a.list:
        for m in MUTANTS:
            print("%s  %-44s %s" % (m["id"], ",".join(m["files"]), m["what"]))
        return 0
    problems = check(ROOT)
    if problems:
        for p in problems:
            print("mutants: %s" % p, file=sys.stderr)
        return 2
    if a.check:
        print("mutants: all %d apply to %s" % (len(MUTANTS), ROOT))
        return 0
    if a.seeds < 1 or a.seeds > 1024:
        print("mutants: --seeds %d: want 1..1024" % a.seeds, file=sys.stderr)
        return 2
    chosen = MUTANTS
    if a.only:
        ids = a.only.split(",")
        unknown = [i for i in ids if i not in {m["id"] for m in MUTANTS}]
        if unknown:
            print("mutants: --only: unknown mutant %s" % ", ".join(unknown), file=sys.stderr)
            return 2
        chosen = [m for m in MUTANTS if m["id"] in ids]

    scratch = a.scratch or "/tmp/lab-mutants-%s" % hashlib.sha1(ROOT.encode()).hexdigest()[:10]
    if os.path.realpath(scratch).startswith(os.path.realpath(ROOT) + os.sep) or os.path.realpath(scratch) == os.path.realpath(ROOT):
        print("mutants: --scratch %s lies in the working tree: choose a folder outside it" % scratch, file=sys.stderr)
        return 2
    t0 = time.time()
    n = sync(ROOT, scratch)
    print("scratch copy: %s (%d files copied)" % (scratch, n), flush=True)
    ok, out = build(scratch, a.jobs)
    if not ok:
        print(out[-3000:], file=sys.stderr)
        print("mutants: the unmutated scratch copy does not build", file=sys.stderr)
        return 3
    incidents = sorted({i for m in chosen for i in m["replay"]})
    base = {}
    for inc in incidents:
        base[inc] = replay(scratch, inc, a.seeds, "base")
    base_tests = {}
    if not a.no_tests:
        for filt in sorted({m["tests"] for m in chosen}):
            base_tests[filt] = tests(scratch, filt)[0]
    print("baseline: %d replays, %d test filters in %.0f s" % (len(base), len(base_tests), time.time() - t0), flush=True)
    # A baseline must be reproducible to be compared with: the second replay of each incident must agree.
    for inc in incidents:
        again = replay(scratch, inc, a.seeds, "base2")
        if differences(base[inc], again):
            print("mutants: the baseline replay of %s is not reproducible: %s" % (inc, "; ".join(differences(base[inc], again))),
                  file=sys.stderr)
            return 3

    results = []
    for m in chosen:
        tm = time.time()
        path, text = locate(m, scratch)
        with open(path, "w") as f:
            f.write(text.replace(m["find"], m["replace"], 1))
        try:
            built, bout = build(scratch, a.jobs)
            r = {"id": m["id"], "what": m["what"], "file": os.path.relpath(path, scratch)}
            if not built:
                r.update(status="stillborn", by=[], detail="does not build: " + bout.strip().splitlines()[-1][:200])
            else:
                by, detail = [], []
                for inc in m["replay"]:
                    d = differences(base[inc], replay(scratch, inc, a.seeds, m["id"]))
                    if d:
                        by.append("replay %s" % inc)
                        detail += d
                if not a.no_tests:
                    passed, ttext = tests(scratch, m["tests"])
                    if base_tests.get(m["tests"]) and not passed:
                        by.append("tests %s" % m["tests"])
                        failing = [ln for ln in ttext.splitlines() if ln.startswith("[FAIL]") or "CRASH" in ln]
                        detail += failing[:3]
                r.update(status="killed" if by else "survived", by=by, detail="; ".join(detail)[:400])
        finally:
            with open(path, "w") as f:
                f.write(text)
        r["seconds"] = round(time.time() - tm, 1)
        results.append(r)
        print("%-4s %-9s %-34s %5.0f s  %s" % (r["id"], r["status"], ", ".join(r["by"]) or "-", r["seconds"], r["what"]),
              flush=True)
        if r["detail"]:
            print("       %s" % r["detail"], flush=True)
    build(scratch, a.jobs)  # leave the scratch copy built as the tree is
    killed = [r for r in results if r["status"] == "killed"]
    by_replay = [r for r in killed if any(b.startswith("replay") for b in r["by"])]
    survivors = [r for r in results if r["status"] == "survived"]
    print("\n%d mutants: %d killed (%d by the replay, %d only by the tests), %d survived, %d stillborn; %.0f s"
          % (len(results), len(killed), len(by_replay), len(killed) - len(by_replay), len(survivors),
             len(results) - len(killed) - len(survivors), time.time() - t0))
    for r in survivors:
        print("survived: %s %s" % (r["id"], r["what"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"seeds": a.seeds, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UsageError as e:
        print("mutants: %s" % e, file=sys.stderr)
        sys.exit(2)
