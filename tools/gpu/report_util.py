#!/usr/bin/env python3
"""report_util.py: adds GPU utilisation samples to a report.json (orchestration for tools/gpu/gpu_check.sh).

Usage: tools/gpu/report_util.py REPORT.json SAMPLES.csv INTERVAL_S
SAMPLES.csv holds `nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader,nounits`
lines taken every INTERVAL_S seconds while the replay ran. Writes report["gpu_utilisation"] = {interval_s,
samples: [[gpu, percent, mem_mib], ...], per_gpu: {gpu: {mean, max, n}}, mean} and replaces the file
atomically. Exit 2 on unreadable input, naming the file.
"""
import json
import os
import sys


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    path, csv, interval = argv[0], argv[1], float(argv[2])
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
        samples = []
        with open(csv, encoding="utf-8") as f:
            for line in f:
                parts = [p.strip() for p in line.split(",")]
                if len(parts) < 3 or not parts[1].replace(".", "").isdigit():
                    continue
                samples.append([int(parts[0]), float(parts[1]), float(parts[2])])
    except (OSError, ValueError) as e:
        print(f"report_util: {e}", file=sys.stderr)
        return 2
    per = {}
    for g, u, _ in samples:
        per.setdefault(g, []).append(u)
    report["gpu_utilisation"] = {
        "interval_s": interval,
        "source": "nvidia-smi utilization.gpu (percent of time a kernel ran), sampled during `lab report`",
        "samples": samples,
        "per_gpu": {str(g): {"mean": sum(v) / len(v), "max": max(v), "n": len(v)} for g, v in per.items()},
        "mean": (sum(u for _, u, _ in samples) / len(samples)) if samples else None,
    }
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)
    m = report["gpu_utilisation"]["mean"]
    print(f"gpu utilisation: {len(samples)} samples, mean {m:.1f}%" if m is not None else "gpu utilisation: no samples")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
