#!/usr/bin/env python3
"""prof_summary.py DIR [--top N]: where the CPU time sampled by sampler.so (LD_PRELOAD, LAB_PROF_DIR=DIR) went.

Each sample is one expiry of a thread's 1 ms CPU-time timer (coarser where the kernel's tick is; wall time and
another period under LAB_PROF_CLOCK=wall and LAB_PROF_US): shares, not seconds; the threads' own CPU seconds come from /proc. Prints, over every process in DIR: samples per program; per thread name;
per module of the interrupted instruction (the leaf); the leaf functions; and, for leaves outside the main program
(the CUDA runtime and driver, libc, the kernel's time inside a system call), the innermost main-program function found
on the stack above them (the caller that paid). Symbols come from `nm` (the main program's own symbols, a library's
dynamic ones); an address without one prints as module+offset."""
import argparse
import bisect
import collections
import glob
import os
import re
import struct
import subprocess
import sys

DEPTH = 6
TICK = os.sysconf("SC_CLK_TCK")
SAMPLE = struct.Struct("<QII%dQ" % DEPTH)
HEADER = struct.Struct("<8sQQQ")


def read_maps(path):
    maps = []
    try:
        for line in open(path):
            f = line.split()
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            maps.append((lo, hi, int(f[2], 16), f[5] if len(f) > 5 else "[anon]"))
    except OSError:
        pass
    return maps


def load_segments(path):
    """PT_LOAD (offset, vaddr, filesz) of an ELF file, to turn a file offset into the address nm prints."""
    try:
        with open(path, "rb") as fh:
            e = fh.read(64)
            if e[:4] != b"\x7fELF":
                return []
            phoff, = struct.unpack_from("<Q", e, 32)
            phentsize, phnum = struct.unpack_from("<HH", e, 54)
            fh.seek(phoff)
            ph = fh.read(phentsize * phnum)
        segs = []
        for i in range(phnum):
            ptype, _flags, off, vaddr, _paddr, filesz = struct.unpack_from("<IIQQQQ", ph, i * phentsize)
            if ptype == 1:
                segs.append((off, vaddr, filesz))
        return segs
    except OSError:
        return []


class Symbols:
    def __init__(self):
        self.cache = {}
        self.memo = {}

    def table(self, path):
        if path in self.cache:
            return self.cache[path]
        addrs, names = [], []
        for flags in (["-C", "--defined-only", "-n"], ["-C", "-D", "--defined-only", "-n"]):
            try:
                out = subprocess.run(["nm"] + flags + [path], capture_output=True, text=True, timeout=60).stdout
            except (OSError, subprocess.SubprocessError):
                out = ""
            for line in out.splitlines():
                m = re.match(r"([0-9a-f]+) [tTwWiI] (.*)", line)
                if m:
                    addrs.append(int(m.group(1), 16))
                    names.append(m.group(2))
            if addrs:
                break
        pairs = sorted(zip(addrs, names))
        self.cache[path] = ([a for a, _ in pairs], [n for _, n in pairs], load_segments(path))
        return self.cache[path]

    def name(self, path, file_off):
        key = (path, file_off)
        if key not in self.memo:
            self.memo[key] = self.lookup(path, file_off)
        return self.memo[key]

    def lookup(self, path, file_off):
        addrs, names, segs = self.table(path)
        vaddr = file_off
        for off, va, sz in segs:
            if off <= file_off < off + sz:
                vaddr = file_off - off + va
                break
        i = bisect.bisect_right(addrs, vaddr) - 1
        if i < 0:
            return "%s+0x%x" % (os.path.basename(path), file_off)
        return names[i][:90]


def locate(maps, starts, addr):
    i = bisect.bisect_right(starts, addr) - 1
    if i >= 0 and addr < maps[i][1]:
        lo, _hi, off, path = maps[i]
        return path, addr - lo + off
    return "[unmapped]", addr


class Process:
    """One sampled process: its maps, threads (names, CPU seconds from /proc), dropped count and samples."""

    def __init__(self, binf):
        base = binf[:-4]
        self.data = open(binf, "rb").read()
        self.ok = len(self.data) >= HEADER.size and self.data[:8] == b"LABPROF1"
        self.maps = sorted(read_maps(base + ".maps"))
        self.starts = [m[0] for m in self.maps]
        self.pid, text_lo = (HEADER.unpack_from(self.data)[1:3]) if self.ok else (0, 0)
        self.exe = self.locate(text_lo)[0]  # the main program: the object whose code the header names
        self.names, self.cpu, self.dropped = {}, {}, 0
        try:
            for line in open(base + ".tasks"):
                m = re.match(r"(\d+) \((.*)\) (.*)", line)
                if m:
                    tid, f = int(m.group(1)), m.group(3).split()  # from field 3 (state): utime, stime are 14, 15
                    self.names[tid] = m.group(2)
                    self.cpu[tid] = (int(f[11]) + int(f[12])) / TICK
                elif line.startswith("dropped "):
                    self.dropped += int(line.split()[1])
        except OSError:
            pass

    def locate(self, addr):
        return locate(self.maps, self.starts, addr)

    def thread(self, tid):
        return "%s (%s)" % (self.names.get(tid, "?"), "main" if tid == self.pid else "other")

    def samples(self):
        """(tid, leaf path, leaf file offset, main-program return addresses) per sample"""
        for i in range((len(self.data) - HEADER.size) // SAMPLE.size if self.ok else 0):
            rip, tid, k, *ret = SAMPLE.unpack_from(self.data, HEADER.size + i * SAMPLE.size)
            path, off = self.locate(rip)
            yield tid, path, off, ret[:k]


def processes(directory):
    for binf in sorted(glob.glob(os.path.join(directory, "prof.*.bin"))):
        p = Process(binf)
        if p.ok:
            yield p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--exe", help="path of the main program's binary here, when the sampled path no longer exists")
    a = ap.parse_args()
    syms = Symbols()
    per_prog, per_thread, per_module, per_leaf, per_caller, per_chain, per_tmod = (collections.Counter() for _ in range(7))
    total, procs, dropped = 0, 0, 0
    thread_cpu = collections.Counter()
    for pr in processes(a.dir):
        procs += 1
        dropped += pr.dropped
        for tid, sec in pr.cpu.items():
            thread_cpu[pr.thread(tid)] += sec
        exe = pr.exe
        binary = a.exe or exe
        for tid, path, off, ret in pr.samples():
            total += 1
            per_prog[os.path.basename(exe)] += 1
            per_thread[pr.thread(tid)] += 1
            mod = os.path.basename(path)
            per_module[mod] += 1
            per_tmod["%s thread, leaf in %s" % ("main" if tid == pr.pid else "other", mod)] += 1
            leaf = syms.name(binary if path == exe else path, off) if path.startswith("/") else "%s+0x%x" % (mod, off)
            per_leaf["%s  [%s]" % (leaf, mod)] += 1
            if path != exe and ret:
                callers = [syms.name(binary, pr.locate(r)[1]) for r in ret]
                per_caller["%s  <- %s" % (mod, callers[0])] += 1
                per_chain["%s <- %s" % (mod, " <- ".join(dict.fromkeys(callers[:4])))] += 1
    if not total:
        print("no samples in %s" % a.dir)
        return 1
    print("%d samples from %d processes (shares of the CPU time sampled); %d dropped (every buffer slot taken)" %
          (total, procs, dropped))
    print("\n== CPU seconds by thread, from /proc at each process's end (exact; threads gone by then are missing)")
    for key, v in thread_cpu.most_common(a.top):
        print("%9.2f  %s" % (v, key))
    for title, c in (("program", per_prog), ("thread", per_thread), ("module of the leaf", per_module), ("thread and module", per_tmod),
                     ("leaf function", per_leaf), ("outside the program: its innermost caller in it", per_caller),
                     ("outside the program: callers (stack scan, may hold stale frames)", per_chain)):
        print("\n== by %s" % title)
        for key, v in c.most_common(a.top):
            print("%7d %5.1f%%  %s" % (v, 100.0 * v / total, key))
    return 0


if __name__ == "__main__":
    sys.exit(main())
