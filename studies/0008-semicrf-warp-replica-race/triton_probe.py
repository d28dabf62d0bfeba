#!/usr/bin/env python3
"""0008 study, Triton side: does the store-then-load pattern of the semi-CRF backward race in Triton's own code?

A recurrence written the way the upstream backward recomputes alpha (a [C_PAD] vector stored to a global buffer at
step t and loaded back at step t + 1, broadcast over a [C_PAD, C_PAD] tile and reduced), one program per sequence,
run at num_warps 1, 2, 4, 8, with and without tl.debug_barrier() after the store. For each configuration: the
layouts Triton chose for the load and the store (TTGIR), registers and spills, and over many launches on the same
inputs how many outputs differ from a float64 recurrence and how many differ bit for bit from the first launch.

This is the lab's own kernel (not upstream's code). Needs torch and triton and a CUDA GPU; prints a table and writes
triton_probe.json to the folder given as the first argument (default: the current one).
"""
import json
import os
import re
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def recur(buf_ptr, w_ptr, T, C: tl.constexpr, C_PAD: tl.constexpr, BARRIER: tl.constexpr):
    NEG: tl.constexpr = -1e9
    b = tl.program_id(0)
    c = tl.arange(0, C_PAD)
    m = c < C
    d2 = tl.arange(0, C_PAD)[:, None]
    s2 = tl.arange(0, C_PAD)[None, :]
    m2 = (d2 < C) & (s2 < C)
    w = tl.load(w_ptr + b * C * C + s2 * C + d2, mask=m2, other=0.0)  # w[b][s][d] as a [dst, src] tile
    base = buf_ptr + b * (T + 1) * C_PAD
    tl.store(base + c, tl.where(m, 0.0, NEG), mask=m)
    if BARRIER:
        tl.debug_barrier()
    for t in tl.range(1, T + 1):
        prev = tl.load(base + (t - 1) * C_PAD + c, mask=m, other=NEG)
        sc = prev[None, :] + w
        sc = tl.where(m2, sc, NEG)
        mx = tl.max(sc, axis=1)
        a = mx + tl.log(tl.sum(tl.exp(sc - mx[:, None]), axis=1))
        a = tl.where(m, a, NEG)
        tl.store(base + t * C_PAD + c, a, mask=m)
        if BARRIER:
            tl.debug_barrier()


def reference(w, T, C):
    """float64 recurrence alpha[t][d] = logsumexp_s(alpha[t-1][s] + w[s][d]), alpha[0] = 0."""
    B = w.shape[0]
    a = torch.zeros(B, C, dtype=torch.float64, device=w.device)
    out = [a]
    wd = w.double()
    for _ in range(T):
        a = torch.logsumexp(a[:, :, None] + wd, dim=1)
        out.append(a)
    return torch.stack(out, dim=1)  # [B][T+1][C]


def layouts(ttgir):
    """The layouts of the buffer load and store in the loop (their tensor types)."""
    defs = dict(re.findall(r"^(#\w+) = (#ttg\.\w+<.*>)$", ttgir, re.M))
    loads = re.findall(r"tt\.load %\w+, %\w+, %\w+ : tensor<64x!tt\.ptr<f32>, (.*?)>\s", ttgir)
    stores = re.findall(r"tt\.store %\w+, %\w+, %\w+ : tensor<64x!tt\.ptr<f32>, (.*?)>\s", ttgir)
    exp = lambda s: re.sub(r"#\w+", lambda mm: defs.get(mm.group(0), mm.group(0)), s)
    return [exp(x) for x in loads], [exp(x) for x in stores]


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else "."
    runs = int(os.environ.get("WR_PROBE_RUNS", "200"))
    T, C, C_PAD = 500, 39, 64
    dev = torch.device("cuda")
    gen = torch.Generator(device="cpu").manual_seed(8)
    rows = []
    print(f"triton {triton.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name(0)}; T={T} C={C} C_PAD={C_PAD}; {runs} launches per configuration")
    for B in (32, 264):
        w = (torch.randn(B, C, C, generator=gen) * 0.3).to(dev)
        ref = reference(w, T, C)
        scale = ref.abs().max().item()
        for nw in (1, 2, 4, 8):
            for bar in (0, 1):
                buf = torch.full((B, T + 1, C_PAD), -1e9, device=dev, dtype=torch.float32)
                k = recur[(B,)](buf, w, T, C=C, C_PAD=C_PAD, BARRIER=bar, num_warps=nw)
                torch.cuda.synchronize()
                ld, st = layouts(k.asm["ttgir"])
                nbar = len(re.findall(r"bar\.sync|barrier\.sync", k.asm["ptx"]))
                first = None
                wrong = differ = 0
                worst = 0.0
                progs = set()
                for i in range(runs):
                    buf.fill_(-1e9)
                    recur[(B,)](buf, w, T, C=C, C_PAD=C_PAD, BARRIER=bar, num_warps=nw)
                    torch.cuda.synchronize()
                    got = buf[:, :, :C].double()
                    err = (got - ref).abs().amax(dim=(1, 2))  # per program
                    e = err.max().item() / scale
                    worst = max(worst, e)
                    if e > 1e-4:
                        wrong += 1
                        progs.update((err / scale > 1e-4).nonzero().flatten().tolist())
                    if first is None:
                        first = buf.clone()
                    elif not torch.equal(buf, first):
                        differ += 1
                row = dict(B=B, num_warps=nw, barrier=bar, runs=runs, wrong=wrong, differ=differ, worst_rel_err=worst,
                           programs_hit=len(progs), n_regs=k.n_regs, n_spills=k.n_spills, bar_sync_in_ptx=nbar,
                           load_layout=ld, store_layout=st)
                rows.append(row)
                print(f"B={B:3d} num_warps={nw} barrier={bar}: wrong {wrong}/{runs}, differ from run 0 {differ}/{runs - 1}, "
                      f"worst rel err {worst:.3g}, programs hit {len(progs)}, regs {k.n_regs}, spills {k.n_spills}, "
                      f"bar.sync {nbar}", flush=True)
                print(f"    load {ld}\n    store {st}", flush=True)
    with open(os.path.join(outdir, "triton_probe.json"), "w") as f:
        json.dump(dict(triton=triton.__version__, torch=torch.__version__, device=torch.cuda.get_device_name(0),
                       T=T, C=C, C_PAD=C_PAD, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
