#!/usr/bin/env python3
"""tools/measure/phase_summary.py: the phases of a lab command from its LAB_PHASES marks (lab/lab_phase.h).

Reads a log holding "lab phase +S s [pid P]: what" lines (the command's stderr; under --mpi every rank's, each on its
own clock) and prints the marks in the order written, the workers' "worker ready" marks summed up as a count and their
first, median and last times, and the process's exit last.
Usage: tools/measure/phase_summary.py LOG
"""
import re
import statistics
import sys

MARK = re.compile(r"lab phase \+([0-9.]+) s \[pid (\d+)\]: (.*)")


def summary(lines):
    ready, marks, exits = [], [], []
    for line in lines:
        m = MARK.match(line.strip())
        if not m:
            continue
        t, pid, what = float(m.group(1)), m.group(2), m.group(3)
        if what == "worker ready":
            ready.append(t)
        else:
            (exits if what == "exit" else marks).append("%7.3f %s %s" % (t, pid, what))
    out = marks + exits[-1:]
    if ready:
        out.append("workers ready: %d, first %.2f, median %.2f, last %.2f" %
                   (len(ready), min(ready), statistics.median(ready), max(ready)))
    return out


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    try:
        with open(argv[1], errors="replace") as f:
            print("\n".join(summary(f)))
    except OSError as e:
        sys.stderr.write("phase_summary.py: %s: %s\n" % (argv[1], e.strerror))
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
