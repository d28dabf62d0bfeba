#!/usr/bin/env python3
"""0008 study, Triton side, at the write-up's configuration: the semi-Markov CRF forward recursion with the upstream
store-then-load pattern, launched many times at num_warps 2, 4 and 8, with and without tl.debug_barrier().

The kernel (the lab's own, not upstream's code) has the structure the write-up's kernels had: one program per sequence;
per position t a [C_PAD] = [64] vector alpha[t] (C = 39 real classes) is stored to a global ring of K slots and loaded
back at t + 1 .. t + K; durations k = 1..K ascending, so the first load of a step is the row stored at the end of the
step before; each duration's term is a logsumexp over the source class c' of alpha[t - k][c'] + trans[c'][c] + seg(t - k,
k, c) on a [C_PAD, C_PAD] tile, folded over k by an online logsumexp, with upstream's NEG_INF and epsilon guards. The
ring is filled with NEG_INF before every launch (torch.full), as upstream's launcher did. Upstream's convention: alpha[0]
= 0, every segment (the first too) takes a transition. Every program has length T.

Per launch and configuration: wrong (max over programs of max_{t,c} |alpha - ref| / max |ref_b| above TOL, see below),
differs bit for bit from the configuration's launch 0 (alpha and padding lanes, as int32), non-finite. Rates with 95 %
Clopper-Pearson intervals (pure Python beta quantiles). Also the TTGIR layouts of the ring load and store, registers,
spills and bar.sync count of each configuration.

The tolerance. A race-free float32 step rounds alpha + (seg + trans) (1 rounding at up to |alpha|), the inner
max-shifted logsumexp's log and add back (2), and the online fold over k (1 per duration): K + 4 roundings of at most
2^-24 |alpha| per step, the count of 0008's WR_TOL_ULPS. logsumexp is 1-Lipschitz in the max norm, so errors carried
from earlier steps pass on as convex combinations; the worst case adds one step's roundings per step of the longest
chain, T (K + 4) 2^-24 = 1.0e-3 at T = 500, a bound that a stale read of the previous row also meets (it is useless as a
detector). Roundings of nearest rounding are zero-mean and, along the chain, close to independent: they add as a random
walk of standard deviation sqrt(T (K + 4)) 2^-24 / sqrt(3) = 4.5e-6 relative at T = 500. TOL = 10 sqrt(T (K + 4))
2^-24 = 7.8e-5 is 17 of those standard deviations: a chosen margin, not a bound, checked by measurement in every run
(the race-free configurations' worst error is printed next to TOL; the script says so when the margin is below 4).
"differs" needs no tolerance: a race-free launch is deterministic, so any differing bit is the race (or another
nondeterminism), whatever its size.

Usage: python3 triton_semicrf_probe.py OUTDIR. Needs torch, triton and a CUDA GPU. Writes OUTDIR/triton_semicrf_probe.json,
OUTDIR/triton_semicrf_probe.txt (the table) and OUTDIR/triton_semicrf_probe_launches.json (every launch's error, differ
and non-finite flags). Environment:
  PROBE_LAUNCHES          most launches per race configuration (4 and 8 warps without barrier), default 10000
  PROBE_CONTROL_LAUNCHES  most launches per control configuration (2 warps; barrier), default 2000
  PROBE_BUDGET_S          seconds of launches per race configuration, default 78
  PROBE_CONTROL_BUDGET_S  seconds of launches per control configuration, default 8
  PROBE_DEADLINE_S        the whole script stops launching at this many seconds after start (the files are written
                          then), default 215 (the script ends about 5 s later)
  PROBE_B, PROBE_T, PROBE_K  the shape (default 32, 500, 30: the write-up's batch, utterance length and segment bound)
  PROBE_CONFIGS           which configurations, as num_warps:barrier pairs (default 4:0,8:0,2:0,4:1,8:1,2:1; a race
                          configuration is 4 or 8 warps without the barrier)
The launch count of a configuration is the smallest of its cap, what its budget allows at the time per launch measured
over its first 3 launches, and what the deadline allows; the count reached is reported.
With TRITON_INTERPRET=1 (no GPU) it runs a self-test instead: the kernel under Triton's interpreter at tiny shapes
(B = 2, T = 20, K = 30 and K = 5; B = 1, T = 7, K = 3) against the float64 reference, and with PROBE_DRY=1 as well
the whole GPU path's bookkeeping on the CPU (give it tiny PROBE_B/T/K and budgets), and the Clopper-Pearson code
against closed forms and, where scipy is installed, scipy.stats.beta (Triton 3.6's interpreter needs numpy < 2.3: it
calls int() on 1-element arrays). With --compile-only (no GPU needed) it compiles every configuration for sm_90 and sm_89
and prints the ring load and store layouts and the bar.sync count, into OUTDIR/triton_semicrf_probe_compile.txt.
"""
import time

T0 = time.perf_counter()  # the deadline counts from here, before torch's import

import inspect  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
NEG = -1e9


@triton.jit
def semicrf_fwd(cum_ptr, trans_ptr, dur_ptr, ring_ptr, out_ptr, T, K: tl.constexpr, C: tl.constexpr,
                C_PAD: tl.constexpr, BARRIER: tl.constexpr):
    NEG_INF: tl.constexpr = -1e9
    b = tl.program_id(0)
    d1 = tl.arange(0, C_PAD)                     # destination class c (rows of the tile)
    md = d1 < C
    s1 = tl.arange(0, C_PAD)                     # source class c' (columns)
    ms = s1 < C
    d2 = tl.arange(0, C_PAD)[:, None]
    s2 = tl.arange(0, C_PAD)[None, :]
    m2 = (d2 < C) & (s2 < C)
    tr = tl.load(trans_ptr + s2 * C + d2, mask=m2, other=0.0)   # trans[c'][c] as a [dst, src] tile
    ring = ring_ptr + b * K * C_PAD
    outb = out_ptr + b * (T + 1) * C_PAD
    cumb = cum_ptr + b * (T + 1) * C
    zero = tl.where(md, 0.0, NEG_INF)
    tl.store(ring + d1, zero, mask=md)           # alpha[0] = 0 into slot 0
    tl.store(outb + d1, zero, mask=md)
    if BARRIER:
        tl.debug_barrier()
    for t in tl.range(1, T + 1):
        cum_t = tl.load(cumb + t * C + d1, mask=md, other=0.0)
        acc = tl.full([C_PAD], NEG_INF, tl.float32)
        kmax = tl.minimum(t, K)
        for k in tl.range(1, kmax + 1):
            s = t - k
            prev = tl.load(ring + (s % K) * C_PAD + s1, mask=ms, other=NEG_INF)  # RING_LOAD
            seg = cum_t - tl.load(cumb + s * C + d1, mask=md, other=0.0)
            seg = seg + tl.load(dur_ptr + (k - 1) * C + d1, mask=md, other=0.0)
            sc = prev[None, :] + (seg[:, None] + tr)
            sc = tl.where(m2, sc, NEG_INF)
            mx = tl.max(sc, axis=1)
            alln = mx < NEG_INF + 1.0                       # upstream's NEG_INF guard
            mxs = tl.where(alln, 0.0, mx)
            lse = mxs + tl.log(tl.sum(tl.exp(sc - mxs[:, None]), axis=1) + 1e-10)
            lse = tl.where(alln, NEG_INF, lse)
            mm = tl.maximum(acc, lse)                       # online logsumexp over k, guarded
            both = mm < NEG_INF + 1.0
            mms = tl.where(both, 0.0, mm)
            acc = tl.where(both, NEG_INF, mms + tl.log(tl.exp(acc - mms) + tl.exp(lse - mms) + 1e-10))
        acc = tl.where(md, acc, NEG_INF)
        tl.store(ring + (t % K) * C_PAD + d1, acc, mask=md)  # RING_STORE
        tl.store(outb + t * C_PAD + d1, acc, mask=md)
        if BARRIER:
            tl.debug_barrier()


def make_inputs(B, T, K, C, seed, device):
    """Emissions 0.5 N(0,1) summed in float64 and rounded (cum[b][0] = 0), transitions and duration biases 0.3 N(0,1):
    the lab's scales (lab_semicrf_problem_fill)."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    e = torch.randn(B, T, C, generator=g, dtype=torch.float64) * 0.5
    cum = torch.zeros(B, T + 1, C, dtype=torch.float64)
    cum[:, 1:] = torch.cumsum(e, dim=1)
    trans = torch.randn(C, C, generator=g, dtype=torch.float64) * 0.3
    dur = torch.randn(K, C, generator=g, dtype=torch.float64) * 0.3
    return [x.float().contiguous().to(device) for x in (cum, trans, dur)]


def reference(cum, trans, dur, T, K):
    """float64 alpha [B][T+1][C] of the same recurrence from the same float32 inputs: alpha[t][c] = logsumexp over k
    <= min(K, t) and c' of alpha[t-k][c'] + trans[c'][c] + cum[t][c] - cum[t-k][c] + dur[k-1][c]; alpha[0] = 0."""
    B, _, C = cum.shape
    cd, td, dd = cum.double(), trans.double(), dur.double()
    alpha = torch.zeros(B, T + 1, C, dtype=torch.float64, device=cum.device)
    for t in range(1, T + 1):
        kk = min(K, t)
        ks = torch.arange(1, kk + 1, device=cum.device)
        s = t - ks
        seg = cd[:, t, None, :] - cd[:, s, :] + dd[ks - 1][None]          # [B, kk, C]
        sc = alpha[:, s, :, None] + td[None, None] + seg[:, :, None, :]   # [B, kk, src, dst]
        alpha[:, t] = torch.logsumexp(sc.reshape(B, kk * C, C), dim=1)
    return alpha


# ---- Clopper-Pearson with a pure-Python beta quantile -----------------------------------------------------------------

def _betacf(a, b, x):
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = tiny if abs(d) < tiny else d
    d = 1.0 / d
    h = d
    for m in range(1, 100000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = tiny if abs(d) < tiny else d
        c = 1.0 + aa / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = tiny if abs(d) < tiny else d
        c = 1.0 + aa / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        de = d * c
        h *= de
        if abs(de - 1.0) < 1e-15:
            break
    return h


def betainc(a, b, x):
    """Regularized incomplete beta I_x(a, b), a, b > 0."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(lbt) * _betacf(a, b, x) / a
    return 1.0 - math.exp(lbt) * _betacf(b, a, 1.0 - x) / b


def beta_ppf(p, a, b):
    """The p-quantile of Beta(a, b) by bisection on I_x(a, b) (monotone in x)."""
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if betainc(a, b, mid) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-15:
            break
    return 0.5 * (lo + hi)


def clopper_pearson(k, n, alpha=0.05):
    """Exact two-sided (1 - alpha) interval of a binomial rate from k successes in n trials."""
    if n <= 0:
        return (float("nan"), float("nan"))
    lo = 0.0 if k == 0 else beta_ppf(alpha / 2, k, n - k + 1)
    hi = 1.0 if k == n else beta_ppf(1 - alpha / 2, k + 1, n - k)
    return (lo, hi)


# ---- compiled code ----------------------------------------------------------------------------------------------------

def marker_lines():
    """Source lines (in this file) of the ring load and store."""
    src, first = inspect.getsourcelines(semicrf_fwd.fn)
    out = {}
    for i, line in enumerate(src):
        for tag in ("RING_LOAD", "RING_STORE"):
            if "# " + tag in line:
                out[tag] = first + i
    return out


def layouts(ttgir):
    """Layouts of the ring load and store in the TTGIR (found through their source locations), expanded."""
    defs = dict(re.findall(r"^(#\w+) = (#ttg\.\w+<.*>)$", ttgir, re.M))
    expand = lambda s: re.sub(r"#\w+", lambda mm: defs.get(mm.group(0), mm.group(0)), s)
    bodies = dict(re.findall(r"^(#loc\d*) = loc\((.*)\)$", ttgir, re.M))

    def line_of(name, depth=0):
        """The source line of a location: its own "file":line:col, or that of the location it names or wraps."""
        body = bodies.get(name)
        if body is None or depth > 20:
            return None
        mm = re.search(r'":(\d+):\d+', body)
        if mm:
            return int(mm.group(1))
        for ref in re.findall(r"#loc\d*", body):
            ln = line_of(ref, depth + 1)
            if ln is not None:
                return ln
        return None
    want = marker_lines()
    res = {"RING_LOAD": [], "RING_STORE": []}
    for line in ttgir.splitlines():
        mm = re.search(r"\b(tt\.load|tt\.store)\b.*: tensor<64x!tt\.ptr<f32>, (.*?)>\s+loc\((#loc\d*)\)", line)
        if not mm:
            continue
        ln = line_of(mm.group(3))
        for tag, want_ln in want.items():
            if ln == want_ln and (mm.group(1) == "tt.load") == (tag == "RING_LOAD"):
                res[tag].append(expand(mm.group(2)))
    return res


# ---- the GPU run ------------------------------------------------------------------------------------------------------

def env_num(name, default, kind=float):
    v = os.environ.get(name)
    if v is None or v == "":
        return default
    try:
        x = kind(v)
    except ValueError:
        sys.exit(f"triton_semicrf_probe: {name}={v!r} is not a number")
    if x <= 0:
        sys.exit(f"triton_semicrf_probe: {name}={v!r} must be positive")
    return x


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    cap_race = env_num("PROBE_LAUNCHES", 10000, int)
    cap_ctrl = env_num("PROBE_CONTROL_LAUNCHES", 2000, int)
    bud_race = env_num("PROBE_BUDGET_S", 78.0)
    bud_ctrl = env_num("PROBE_CONTROL_BUDGET_S", 8.0)
    deadline = env_num("PROBE_DEADLINE_S", 215.0)
    B, T, K = env_num("PROBE_B", 32, int), env_num("PROBE_T", 500, int), env_num("PROBE_K", 30, int)
    C, C_PAD = 39, 64
    dry = os.environ.get("TRITON_INTERPRET") == "1"  # bookkeeping check on the CPU (interpreter, tiny shapes)
    dev = torch.device("cpu" if dry else "cuda")
    if dry:
        class props:  # noqa: N801 (a stand-in for the device properties)
            name, multi_processor_count, major, minor = "cpu (Triton interpreter: bookkeeping check only)", 1, 0, 0
    else:
        props = torch.cuda.get_device_properties(0)
    sync = (lambda: None) if dry else torch.cuda.synchronize
    lines = []

    def log(s):
        print(s, flush=True)
        lines.append(s)

    tol = 10.0 * math.sqrt(T * (K + 4)) * 2.0 ** -24
    log(f"triton {triton.__version__}, torch {torch.__version__}, {props.name} ({props.multi_processor_count} SMs, "
        f"sm_{props.major}{props.minor}); B={B} T={T} K={K} C={C} C_PAD={C_PAD}; tol {tol:.3g} "
        f"(10 sqrt(T (K+4)) 2^-24); caps {cap_race}/{cap_ctrl} launches, budgets {bud_race:g}/{bud_ctrl:g} s "
        f"(race/control configurations), deadline {deadline:g} s")
    # estimate from the arithmetic: per program and step, sum over k <= min(K, t) of a C_PAD x C_PAD tile, ~8 flops
    # and one exp per element; one program per SM (B <= SMs), MUFU 16 exp/clk/SM, 128 FP32 lanes/SM
    elems = sum(min(K, t) for t in range(1, T + 1)) * C_PAD * C_PAD
    clk = 1.755e9
    est_ms = 1e3 * (elems / (16 * clk) + 8 * elems / (128 * clk))
    log(f"estimate: {elems / 1e6:.1f} M tile elements per program, throughput floor ~{est_ms:.1f} ms a launch at "
        f"{clk / 1e9:.2f} GHz (one program per SM; a latency-bound block is 2-5x slower); measured per configuration below")
    cum, trans, dur = make_inputs(B, T, K, C, 8, dev)
    tr0 = time.perf_counter()
    ref = reference(cum, trans, dur, T, K)
    sync()
    scale = ref.abs().amax(dim=(1, 2))  # [B]
    log(f"float64 reference in {time.perf_counter() - tr0:.2f} s; max |alpha| {scale.max().item():.1f}, "
        f"log Z range {torch.logsumexp(ref[:, T], dim=1).min().item():.1f} .. "
        f"{torch.logsumexp(ref[:, T], dim=1).max().item():.1f}")
    ring = torch.full((B, K, C_PAD), NEG, device=dev, dtype=torch.float32)
    out = torch.full((B, T + 1, C_PAD), NEG, device=dev, dtype=torch.float32)
    # race configurations first (the ones the budget is for), controls after; PROBE_CONFIGS="4:0,8:0" picks some
    configs = [(4, 0), (8, 0), (2, 0), (4, 1), (8, 1), (2, 1)]
    if os.environ.get("PROBE_CONFIGS"):
        try:
            configs = [tuple(int(v) for v in item.split(":")) for item in os.environ["PROBE_CONFIGS"].split(",")]
            assert all(len(cf) == 2 and cf[0] in (1, 2, 4, 8) and cf[1] in (0, 1) for cf in configs)
        except (ValueError, AssertionError):
            sys.exit(f"triton_semicrf_probe: PROBE_CONFIGS={os.environ['PROBE_CONFIGS']!r}: need num_warps:barrier pairs "
                     "such as 4:0,8:0 (num_warps 1, 2, 4, 8; barrier 0 or 1)")
    rows, per_launch = [], {}
    log(f"{'num_warps':>9} {'barrier':>7} {'launches':>8} {'wrong':>7} {'differ':>7} {'nonfin':>6} "
        f"{'wrong rate [95% CI]':>28} {'differ rate [95% CI]':>28} {'worst err':>9} {'med err':>9} {'ms':>7} "
        f"{'regs':>4} {'spill':>5} {'bar':>3}")
    for ci, (nw, bar) in enumerate(configs):
        race = nw > 2 and not bar
        cap = cap_race if race else cap_ctrl
        budget = bud_race if race else bud_ctrl
        # time left, less a reserve of 6 s (compile and first launches) for each configuration still to come
        left = deadline - (time.perf_counter() - T0) - 6.0 * (len(configs) - ci - 1)
        budget = min(budget, left)
        ring.fill_(NEG)
        tc = time.perf_counter()
        k = semicrf_fwd[(B,)](cum, trans, dur, ring, out, T, K=K, C=C, C_PAD=C_PAD, BARRIER=bar, num_warps=nw)
        sync()
        compile_s = time.perf_counter() - tc
        asm = getattr(k, "asm", None) or {}
        lay = layouts(asm["ttgir"]) if "ttgir" in asm else {"RING_LOAD": [], "RING_STORE": []}
        nbar = len(re.findall(r"bar\.sync|barrier\.sync", asm["ptx"])) if "ptx" in asm else None
        n_regs, n_spills = getattr(k, "n_regs", None), getattr(k, "n_spills", None)
        errs = torch.empty(cap, device=dev, dtype=torch.float64)
        hits = torch.empty(cap, device=dev, dtype=torch.int32)
        diff = torch.empty(cap, device=dev, dtype=torch.bool)
        nonf = torch.empty(cap, device=dev, dtype=torch.bool)
        first = None
        outi = out.view(torch.int32)

        def launch(i):
            nonlocal first
            ring.fill_(NEG)
            semicrf_fwd[(B,)](cum, trans, dur, ring, out, T, K=K, C=C, C_PAD=C_PAD, BARRIER=bar, num_warps=nw)
            got = out[:, :, :C]
            e = (got.double() - ref).abs().amax(dim=(1, 2)) / scale    # per program; NaN propagates
            e = torch.where(torch.isnan(e), torch.full_like(e, float("inf")), e)
            errs[i] = e.max()
            hits[i] = (e > tol).sum()
            nonf[i] = ~torch.isfinite(got).all()
            if first is None:
                first = outi.clone()
                diff[i] = False
            else:
                diff[i] = (outi != first).any()

        n = 0
        t_start = time.perf_counter()
        launch(n)          # the first launch of a configuration pays for torch's first kernels of the shape: not timed
        n += 1
        sync()
        t_warm = time.perf_counter()
        for _ in range(min(5, cap - n)):
            launch(n)
            n += 1
        sync()
        per = (time.perf_counter() - t_warm) / max(1, n - 1) if n > 1 else t_warm - t_start
        target = max(n, min(cap, int(budget / per)))
        log(f"  [{time.perf_counter() - T0:6.1f} s] num_warps={nw} barrier={bar}: compiled and first launch "
            f"{compile_s:.2f} s, {1e3 * per:.2f} ms a launch with checks; target {target} launches "
            f"(cap {cap}, budget {budget:.0f} s)")
        chunk = max(1, int(2.0 / per))
        last_print = time.perf_counter()
        while n < target:
            m = min(chunk, target - n)
            for _ in range(m):
                launch(n)
                n += 1
            sync()
            now = time.perf_counter()
            if now - last_print > 10.0:
                w = int((errs[:n] > tol).sum().item())
                dd = int(diff[:n].sum().item())
                log(f"  [{now - T0:6.1f} s] num_warps={nw} barrier={bar}: {n}/{target} launches, wrong {w}, differ {dd}")
                last_print = now
            if now - t_start > budget:
                break
        sync()
        elapsed = time.perf_counter() - t_start
        e_h = errs[:n].cpu().tolist()
        d_h = diff[:n].cpu().tolist()
        f_h = nonf[:n].cpu().tolist()
        h_h = hits[:n].cpu().tolist()
        wrong = sum(1 for x in e_h if not (x <= tol))
        differ = sum(d_h)
        nonfin = sum(f_h)
        cpw, cpd = clopper_pearson(wrong, n), clopper_pearson(differ, n - 1)
        cpn = clopper_pearson(nonfin, n)
        srt = sorted(e_h)
        q = lambda p: srt[min(len(srt) - 1, int(p * len(srt)))]
        row = dict(num_warps=nw, barrier=bar, race_config=race, launches=n, seconds=elapsed, ms_per_launch=1e3 * elapsed / n,
                   wrong=wrong, wrong_rate=wrong / n, wrong_ci95=cpw, differ=differ, differ_of=n - 1,
                   differ_rate=differ / max(1, n - 1), differ_ci95=cpd, nonfinite=nonfin, nonfinite_rate=nonfin / n,
                   nonfinite_ci95=cpn, worst_rel_err=srt[-1], median_rel_err=q(0.5), p99_rel_err=q(0.99),
                   programs_hit_max=max(h_h), programs_hit_mean=sum(h_h) / n, n_regs=n_regs, n_spills=n_spills,
                   bar_sync_in_ptx=nbar, ring_load_layout=lay["RING_LOAD"], ring_store_layout=lay["RING_STORE"],
                   compile_s=compile_s)
        rows.append(row)
        per_launch[f"nw{nw}_bar{bar}"] = dict(rel_err=[float(f"{x:.4g}") for x in e_h], differ=[int(x) for x in d_h],
                                               nonfinite=[int(x) for x in f_h], programs_hit=h_h)
        log(f"{nw:>9} {bar:>7} {n:>8} {wrong:>7} {differ:>7} {nonfin:>6} "
            f"{wrong / n:>9.4f} [{cpw[0]:.4f}, {cpw[1]:.4f}] {differ / max(1, n - 1):>9.4f} [{cpd[0]:.4f}, {cpd[1]:.4f}] "
            f"{srt[-1]:>9.3g} {q(0.5):>9.3g} {1e3 * elapsed / n:>7.2f} {str(n_regs):>4} {str(n_spills):>5} {str(nbar):>3}")
        log(f"    ring load  {lay['RING_LOAD']}")
        log(f"    ring store {lay['RING_STORE']}")
        write(outdir, lines, rows, per_launch, dict(B=B, T=T, K=K, C=C, C_PAD=C_PAD, tol=tol, device=props.name,
                                                   sms=props.multi_processor_count, cc=f"{props.major}.{props.minor}",
                                                   triton=triton.__version__, torch=torch.__version__,
                                                   estimate_ms=est_ms), final=False)
    free = [r for r in rows if not r["race_config"]]
    if free:
        worst_free = max(r["worst_rel_err"] for r in free)
        margin = tol / worst_free if worst_free > 0 else float("inf")
        log(f"race-free configurations (2 warps; barrier): worst error {worst_free:.3g} = tol / {margin:.1f}"
            + ("  WARNING: margin below 4, the tolerance is too close to race-free rounding" if margin < 4 else ""))
    log(f"total {time.perf_counter() - T0:.1f} s")
    write(outdir, lines, rows, per_launch, dict(B=B, T=T, K=K, C=C, C_PAD=C_PAD, tol=tol, device=props.name,
                                               sms=props.multi_processor_count, cc=f"{props.major}.{props.minor}",
                                               triton=triton.__version__, torch=torch.__version__, estimate_ms=est_ms),
          final=True)


def write(outdir, lines, rows, per_launch, meta, final):
    meta = dict(meta, complete=final, seconds=time.perf_counter() - T0)
    with open(os.path.join(outdir, "triton_semicrf_probe.json"), "w") as f:
        json.dump(dict(meta, rows=rows), f, indent=1)
    with open(os.path.join(outdir, "triton_semicrf_probe_launches.json"), "w") as f:
        json.dump(per_launch, f)
    with open(os.path.join(outdir, "triton_semicrf_probe.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


# ---- self-test on the CPU (TRITON_INTERPRET=1) ------------------------------------------------------------------------

def selftest(outdir):
    ok = True
    res = {}
    for (B, T, K) in ((2, 20, 30), (2, 20, 5), (1, 7, 3)):
        C, C_PAD = 39, 64
        cum, trans, dur = make_inputs(B, T, K, C, 8, "cpu")
        ref = reference(cum, trans, dur, T, K)
        for bar in (0, 1):
            ring = torch.full((B, K, C_PAD), NEG, dtype=torch.float32)
            out = torch.full((B, T + 1, C_PAD), NEG, dtype=torch.float32)
            semicrf_fwd[(B,)](cum, trans, dur, ring, out, T, K=K, C=C, C_PAD=C_PAD, BARRIER=bar, num_warps=4)
            got = out[:, :, :C].double()
            scale = ref.abs().amax(dim=(1, 2))
            err = ((got - ref).abs().amax(dim=(1, 2)) / scale).max().item()
            tol = 10.0 * math.sqrt(T * (K + 4)) * 2.0 ** -24
            pad_ok = bool((out[:, :, C:] == NEG).all())
            good = err <= tol and pad_ok and bool(torch.isfinite(got).all())
            ok &= good
            res[f"B{B}_T{T}_K{K}_bar{bar}"] = dict(rel_err=err, tol=tol, padding_untouched=pad_ok, ok=good)
            print(f"interpreter B={B} T={T} K={K} barrier={bar}: max rel err {err:.3g} (tol {tol:.3g}), "
                  f"padding lanes untouched {pad_ok}: {'ok' if good else 'FAIL'}", flush=True)
    # Clopper-Pearson against closed forms: k = 0 -> upper 1 - (alpha/2)^(1/n); k = n -> lower (alpha/2)^(1/n)
    for n in (1, 16, 100, 10000):
        hi = clopper_pearson(0, n)[1]
        lo = clopper_pearson(n, n)[0]
        want = 1 - 0.025 ** (1 / n)
        good = abs(hi - want) < 1e-9 and abs(lo - 0.025 ** (1 / n)) < 1e-9
        ok &= good
        print(f"clopper-pearson n={n}: (0/n) upper {hi:.6g} vs {want:.6g}; (n/n) lower {lo:.6g}: {'ok' if good else 'FAIL'}")
    try:
        from scipy.stats import beta as sbeta
        for (kk, n) in ((1, 10), (3, 100), (50, 100), (17, 10000), (9990, 10000)):
            lo, hi = clopper_pearson(kk, n)
            slo, shi = sbeta.ppf(0.025, kk, n - kk + 1), sbeta.ppf(0.975, kk + 1, n - kk)
            good = abs(lo - slo) < 1e-9 and abs(hi - shi) < 1e-9
            ok = ok and bool(good)
            print(f"clopper-pearson {kk}/{n}: [{lo:.8g}, {hi:.8g}] scipy [{slo:.8g}, {shi:.8g}]: {'ok' if good else 'FAIL'}")
    except ImportError:
        print("scipy absent: Clopper-Pearson checked against the closed forms only")
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "triton_semicrf_probe_selftest.json"), "w") as f:
        json.dump(dict(ok=bool(ok), triton=triton.__version__, torch=torch.__version__, cases=res), f, indent=1)
    print("selftest", "ok" if ok else "FAILED")
    return 0 if ok else 1


def compile_only(outdir):
    """Every configuration compiled for sm_90 and sm_89 without a GPU: the ring load and store layouts, bar.sync count."""
    from triton.backends.compiler import GPUTarget
    sig = {"cum_ptr": "*fp32", "trans_ptr": "*fp32", "dur_ptr": "*fp32", "ring_ptr": "*fp32", "out_ptr": "*fp32",
           "T": "i32", "K": "constexpr", "C": "constexpr", "C_PAD": "constexpr", "BARRIER": "constexpr"}
    lines = [f"triton {triton.__version__}: compiled only (no launch), K=30 C=39 C_PAD=64"]
    for cc in (90, 89):
        for nw in (1, 2, 4, 8):
            for bar in (0, 1):
                src = triton.compiler.ASTSource(fn=semicrf_fwd, signature=sig,
                                                constexprs={"K": 30, "C": 39, "C_PAD": 64, "BARRIER": bar})
                k = triton.compile(src, target=GPUTarget("cuda", cc, 32), options={"num_warps": nw})
                lay = layouts(k.asm["ttgir"])
                nbar = len(re.findall(r"bar\.sync|barrier\.sync", k.asm["ptx"]))
                lines += [f"sm_{cc} num_warps={nw} barrier={bar}: bar.sync {nbar}",
                          f"    ring load  {lay['RING_LOAD']}", f"    ring store {lay['RING_STORE']}"]
                print("\n".join(lines[-3:]), flush=True)
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "triton_semicrf_probe_compile.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--compile-only"]
    od = args[0] if args else "."
    if "--compile-only" in sys.argv[1:]:
        sys.exit(compile_only(od))
    if os.environ.get("TRITON_INTERPRET") == "1":
        if os.environ.get("PROBE_DRY") == "1":
            sys.exit(main(od))
        sys.exit(selftest(od))
    if not torch.cuda.is_available():
        sys.exit("triton_semicrf_probe: no CUDA GPU (TRITON_INTERPRET=1 runs the CPU self-test)")
    main(od)
