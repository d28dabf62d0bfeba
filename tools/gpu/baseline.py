#!/usr/bin/env python3
"""tools/gpu/baseline.py: remakes baselines/<gpu>/ on the GPU at hand (`make baselines`).

Runs `lab report --backend cuda --seeds 1000` (the bench included, as on every CUDA report) into build/baseline-<gpu>,
then keeps of it what `lab compare` needs: baselines/<gpu>/report.json (compact JSON) and a README.md written from
it (GPU, command, date, commit and sources digest, the code the GPU ran, toolkit and driver, the verdict, the bench).
<gpu> is the GPU's model as nvidia-smi names it, its first word with a digit, lower case ("NVIDIA H100 80GB HBM3" ->
h100), or --gpu. A report that is NOT OK is not a baseline: nothing is written and the exit status is 1. The whole
baselines/ folder must stay within 10 files and 3 MB (checked after writing; exit 1 naming the excess). Exit 3 when no
GPU is visible or the report cannot be made.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

MAX_FILES = 10
MAX_BYTES = 3 * 1024 * 1024


def gpu_slug(name):
    for word in name.replace("NVIDIA", " ").split():
        if re.search(r"\d", word):
            return re.sub(r"[^a-z0-9]+", "-", word.lower()).strip("-")
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def readme(rep, slug, seeds):
    dev = rep.get("device", {})
    gpu = dev.get("gpu", {})
    code = gpu.get("code", {})
    build = rep.get("build", {})
    summ = rep.get("summary", {})
    bench = rep.get("bench") or {}
    records = bench.get("records", []) if isinstance(bench, dict) else []
    lines = [
        f"# Baseline: one {gpu.get('name', slug)}",
        "",
        f"`report.json` of `lab report --backend cuda --seeds {seeds}` (with its bench) on one {gpu.get('name', '?')} "
        f"({dev.get('host', {}).get('usable_cpus', '?')} CPUs), made {rep.get('created', '?')} by build "
        f"{build.get('commit', '?')[:12]}{' (dirty tree)' if build.get('dirty') else ''}, sources digest "
        f"{build.get('sources_digest', '?')} (kernels/ and incidents/: `lab compare` says when they changed since).",
        "",
        f"- GPU code: {code.get('runs', '?')} ({code.get('from', '?')} of the carried {code.get('carried', '?')}), "
        f"CUDA toolkit {code.get('toolkit', '?')}, driver {code.get('driver', '?')} "
        f"(CUDA {gpu.get('driver_cuda_version', '?')}), compute capability {gpu.get('compute_capability', '?')}.",
        f"- Verdict: {'OK' if summ.get('ok') else 'NOT OK'}, {summ.get('cases', '?')} cases in "
        f"{summ.get('wall_s', float('nan')):.1f} s.",
        f"- Bench: {len(records)} records.",
        "",
        f"Remake it with `make baselines` on a machine with this GPU (docs/reports.md); `lab report --from` does not "
        f"apply (only report.json is kept). Compare a fresh report with it: `build/lab compare baselines/{slug} "
        f"build/report`.",
        "",
    ]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lab", default="build/lab")
    ap.add_argument("--seeds", type=int, default=1000)
    ap.add_argument("--gpu", help="the folder's name under baselines/ (default: from nvidia-smi's model name)")
    a = ap.parse_args()
    if a.seeds < 1:
        print("baseline.py: --seeds: must be at least 1", file=sys.stderr)
        return 2
    try:
        names = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                               text=True, check=True).stdout.strip().splitlines()
    except (OSError, subprocess.CalledProcessError):
        names = []
    if not names:
        print("make baselines: no GPU visible to nvidia-smi: a baseline is one GPU kind's CUDA report", file=sys.stderr)
        return 3
    slug = a.gpu or gpu_slug(names[0])
    out = f"build/baseline-{slug}"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [a.lab, "report", "--backend", "cuda", "--seeds", str(a.seeds), "--out", out, "--quiet"]
    print("make baselines:", " ".join(cmd), flush=True)
    rc = subprocess.run(cmd).returncode
    path = os.path.join(out, "report.json")
    if rc not in (0, 1) or not os.path.exists(path):
        print(f"make baselines: {' '.join(cmd)} exited {rc} without a report", file=sys.stderr)
        return 3
    with open(path) as f:
        rep = json.load(f)
    if rc != 0 or not rep.get("summary", {}).get("ok"):
        print(f"make baselines: the report in {out} is NOT OK: not a baseline; baselines/{slug} left as it was",
              file=sys.stderr)
        return 1
    dest = os.path.join("baselines", slug)
    os.makedirs(dest, exist_ok=True)
    with open(os.path.join(dest, "report.json.tmp"), "w") as f:
        json.dump(rep, f, separators=(",", ":"))
        f.write("\n")
    os.replace(os.path.join(dest, "report.json.tmp"), os.path.join(dest, "report.json"))
    with open(os.path.join(dest, "README.md"), "w") as f:
        f.write(readme(rep, slug, a.seeds))
    files = [os.path.join(d, n) for d, _, ns in os.walk("baselines") for n in ns]
    size = sum(os.path.getsize(p) for p in files)
    print(f"make baselines: {dest}/report.json and README.md written; baselines/ holds {len(files)} files, "
          f"{size / 1e6:.2f} MB")
    if len(files) > MAX_FILES or size > MAX_BYTES:
        print(f"make baselines: baselines/ is over its budget ({MAX_FILES} files, {MAX_BYTES // 1024 // 1024} MB): "
              f"{len(files)} files, {size} bytes", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
