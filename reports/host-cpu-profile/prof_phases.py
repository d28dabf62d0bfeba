#!/usr/bin/env python3
"""prof_phases.py DIR [--exe BINARY]: sampler.so's samples of the lab's processes in DIR, by what the lab was doing.

Each sample goes to the first phase below whose pattern matches a frame of it (its leaf when in the lab, then the
main-program return addresses prof_summary.py's stack scan found): an incident's CPU-side checks, its host work, a
worker's start-up, the runner. The patterns name lab functions; a sample with no lab frame is counted by its leaf's
module."""
import argparse
import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prof_summary as P  # noqa: E402

PHASES = [
    ("0008: CPU forward + float32 model of the cross-check seeds", r"wr_group_cpu_make|wr_group_cpu_job"),
    ("0008: census and judge", r"wr_census|wr_judge"),
    ("0008: other host work (reference, set-up, launches)", r"^wr_"),
    ("0003: inputs made and quantised on the CPU (every seed)", r"nvfp4_sf_work_init|nv_values"),
    ("0003: float64 reference on the CPU (cross-check seeds)", r"nv_group_refs_cuda"),
    ("0003: CPU GEMMs bit for bit (cross-check seeds)", r"nvfp4_sf_run_cpu|nvfp4_fold_run_cpu"),
    ("0003: other host work", r"nvfp4|nv_"),
    ("0005: host work", r"bfcrf"),
    ("0004: host work", r"pg_|pow_grad"),
    ("0002: judge (emulation, run-to-run, golden)", r"cd_judge"),
    ("0001/0002: semi-CRF float64 reference", r"lab_semicrf_reference|lab_semicrf_group_setup|lab_semicrf_case_reference"),
    ("0001/0002: semi-CRF launches, fills, read-back", r"lab_semicrf_cu|sg_|sc_guard"),
    ("0001: host work", r"co_|crf_oob"),
    ("worker start-up (context, probe)", r"lab_cuda_ready|worker_init|probe_job|lab_device_gpu_job"),
    ("the runner (parent) and job plumbing", r"lab_isolate|lab_replay|lab_sched|lab_deal"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--exe", help="the main program's binary here, when the sampled path no longer exists")
    a = ap.parse_args()
    syms = P.Symbols()
    phases = [(name, re.compile(rx)) for name, rx in PHASES]
    count, total = collections.Counter(), 0
    for pr in P.processes(a.dir):
        if os.path.basename(pr.exe) != "lab" and not (a.exe and os.path.basename(pr.exe) == os.path.basename(a.exe)):
            continue
        binary = a.exe or pr.exe
        for _tid, path, off, ret in pr.samples():
            total += 1
            frames = ([syms.name(binary, off)] if path == pr.exe else []) + [syms.name(binary, pr.locate(r)[1]) for r in ret]
            name = next((n for n, rx in phases if any(rx.search(f) for f in frames)), None)
            if name is None:
                name = "other: leaf in %s" % os.path.basename(path) if not frames else "other: %s" % frames[0][:40]
            count[name] += 1
    if not total:
        print("no samples of the lab in %s" % a.dir)
        return 1
    print("%d samples of the lab's processes, by phase" % total)
    for name, v in count.most_common():
        print("%7d %5.1f%%  %s" % (v, 100.0 * v / total, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
