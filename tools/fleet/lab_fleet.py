#!/usr/bin/env python3
"""lab_fleet: orchestrate lab replays over a fleet (standard library only).

Three steps, each usable alone, each with --dry-run (print the commands, run nothing):

  launch   run `lab replay --mpi` across ranks, through mpirun with a host file or through Slurm
           (an sbatch script whose job step is srun); one report folder per launch
  collect  copy the report folders of several machines into one place (rsync over ssh, or a local copy)
  compare  run `lab compare BASELINE OTHER` for every other report and print one table, next to each
           report's own summary (host, device, cases, verdict); a lab without `compare` is reported as
           such and the summaries are still shown

Exit status: 0 all well; 1 a regression (lab compare said so) or a replay that is not ok; 2 an error
(bad arguments, a report that cannot be read, a command that failed to run).

Examples:
  tools/fleet/lab_fleet.py --dry-run launch --launcher mpirun --hostfile hosts --out runs/h200 -- --seeds 1024
  tools/fleet/lab_fleet.py launch --launcher slurm --nodes 2 --gpus-per-node 8 --partition gpu --out runs/b200 \
      --lab-command report -- --backend cuda       # lab report --mpi: report.json, which compare reads
  tools/fleet/lab_fleet.py collect --into runs h200=gpu1:/lab/runs/h200 b200=gpu9:/lab/runs/b200
  tools/fleet/lab_fleet.py compare runs/h200 runs/b200
"""

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys

EXIT_OK, EXIT_REGRESSION, EXIT_ERROR = 0, 1, 2


def quote(argv):
    """A command as one shell line."""
    return " ".join(shlex.quote(a) for a in argv)


class Runner:
    """Runs commands, or with dry_run only prints them (as shell lines, prefixed with '+ ')."""

    def __init__(self, dry_run):
        self.dry_run = dry_run

    def show(self, argv):
        print("+ " + quote(argv))

    def run(self, argv, capture=False, env=None):
        """Runs argv (printing it first) with this process's environment plus env (a dict, or None); returns a
        CompletedProcess, or None in dry-run mode. A missing program raises FileNotFoundError."""
        self.show(argv)
        if self.dry_run:
            return None
        sys.stdout.flush()
        return subprocess.run(argv, text=True, capture_output=capture, env=dict(os.environ, **env) if env else None)


# ---------------------------------------------------------------------------------------------- launch

def replay_argv(args):
    """The lab command every rank runs: `lab replay --mpi`, or `lab report --mpi` (the replay, then
    report.json and index.html, which `lab compare` reads)."""
    extra = list(args.replay_args)
    if extra and extra[0] == "--":
        extra = extra[1:]
    return [args.lab, args.lab_command, "--mpi", "--out", args.out] + extra


HWLOC_GPU_PLUGINS_OFF = "-gl,-cuda,-nvml,-opencl,-rsmi"


def mpirun_env(environ):
    """What mpirun's environment gets beside the caller's: hwloc's GPU plugins off (most of mpirun's own start on a
    GPU host, docs/scale-out.md), unless the caller set HWLOC_COMPONENTS."""
    return {} if "HWLOC_COMPONENTS" in environ else {"HWLOC_COMPONENTS": HWLOC_GPU_PLUGINS_OFF}


def mpirun_argv(args):
    """mpirun with --enable-recovery, so that rank 0 outlives a rank that dies and still writes the report; with a host
    file, --ranks-per-node ranks a host (default 1: one rank drives all of its host's GPUs); never bound to a core
    (--bind-to none: a rank sizes its workers from the CPUs it may use, and Open MPI would bind it to one)."""
    argv = ["mpirun"]
    if not args.no_recovery:
        argv.append("--enable-recovery")
    if args.hostfile:
        argv += ["--hostfile", args.hostfile, "--map-by", "ppr:%d:node" % args.ranks_per_node]
    argv += ["--bind-to", "none"]
    if args.np:
        argv += ["-np", str(args.np)]
    for kv in args.env:
        argv += ["-x", kv]
    argv += args.mpirun_arg
    return argv + replay_argv(args)


def slurm_dir(out):
    """Where a Slurm launch keeps its batch script and Slurm's output: a folder beside --out, never in it (the lab
    takes an --out that is missing, empty or an earlier result set, and refuses one holding other files)."""
    return os.path.abspath(out).rstrip("/") + ".slurm"


def sbatch_script(args):
    """The batch script: --ranks-per-node tasks a node (default 1: one rank drives all of its node's GPUs) on whole
    nodes; the job step is srun's (docs/scale-out.md says why each flag): Open MPI wires up through Slurm's PMIx
    (--mpi=pmix: without it a rank dies at MPI_Init), the tasks are not bound to a CPU (a rank sizes its workers from
    what Slurm allocated it, and a binding of one core would leave it one), and a rank that dies takes the step down
    at once (--kill-on-bad-exit=1: rank 0 has every finished case it got in its journal, and `lab replay --resume OUT`
    completes the set). `exec`: the step is the batch script's last word, its exit status the job's."""
    out = os.path.abspath(args.out)
    lines = ["#!/bin/bash", "#SBATCH --job-name=%s" % args.job_name]
    if args.nodes:
        lines.append("#SBATCH --nodes=%d" % args.nodes)
    lines.append("#SBATCH --ntasks-per-node=%d" % args.ranks_per_node)
    lines.append("#SBATCH --exclusive")
    if args.gpus_per_node:
        lines.append("#SBATCH --gpus-per-node=%d" % args.gpus_per_node)
    if args.partition:
        lines.append("#SBATCH --partition=%s" % args.partition)
    if args.time:
        lines.append("#SBATCH --time=%s" % args.time)
    lines.append("#SBATCH --output=%s/slurm-%%j.out" % slurm_dir(args.out))
    lines.append("set -u")
    lines.append("cd %s" % shlex.quote(os.path.abspath(args.root)))
    for kv in args.env:
        lines.append("export %s" % kv)
    srun = ["srun", "--mpi=%s" % args.srun_mpi, "--cpu-bind=none", "--kill-on-bad-exit=1"]
    extra = list(args.replay_args)
    if extra and extra[0] == "--":
        extra = extra[1:]
    lines.append("exec " + quote(srun + [args.lab, args.lab_command, "--mpi", "--out", out] + extra))
    return "\n".join(lines) + "\n"


def report_verdict(out_dir):
    """(exit status, message) from a report folder's summary.json: under --enable-recovery mpirun exits 0
    whatever the ranks return, so the report is the verdict."""
    path = os.path.join(out_dir, "summary.json")
    try:
        with open(path) as f:
            summary = json.load(f)
    except (OSError, ValueError) as e:
        return EXIT_ERROR, "%s: no readable summary (%s)" % (path, e)
    if summary.get("ok") is True:
        return EXIT_OK, "%s: ok (%s cases)" % (path, summary.get("cases"))
    return EXIT_REGRESSION, "%s: NOT OK" % path


def tail(path, lines=15):
    """The last lines of a file, or a word on why there are none."""
    try:
        with open(path, errors="replace") as f:
            text = f.read().rstrip("\n").splitlines()
    except OSError as e:
        return "(%s: %s)" % (path, e.strerror)
    return "\n".join(text[-lines:]) if text else "(%s is empty)" % path


def job_verdict(status, out_dir, log):
    """(exit status, message) of a Slurm job that ran `lab replay|report --mpi` (status: its exit status, as
    `sbatch --wait` returns it), judged by that status and the set's summary.json together: 0 when both say ok, 1
    when both say NOT OK (the lab's exit 1), 2 when the replay did not finish (interrupted: the time limit, scancel;
    the set holds the finished cases and `lab replay --resume OUT` completes it), wrote no summary, or the two
    disagree; every message names the file, and without a summary it carries the end of Slurm's output."""
    path = os.path.join(out_dir, "summary.json")
    try:
        with open(path) as f:
            summary = json.load(f)
    except (OSError, ValueError) as e:
        return EXIT_ERROR, "the job exited %d and %s is not readable (%s); the end of %s:\n%s" % (
            status, path, e, log, tail(log))
    if summary.get("interrupted") is True:
        return EXIT_ERROR, ("the job exited %d: the replay was interrupted by %s with %s of %s cases finished (%s); "
                            "`%s` completes it" % (status, summary.get("signal"), summary.get("cases"),
                                                   summary.get("cases_planned"), path, summary.get("resume")))
    ok = summary.get("ok") is True
    if ok and status == 0:
        return EXIT_OK, "%s: ok (%s cases)" % (path, summary.get("cases"))
    if not ok and status == 1:
        return EXIT_REGRESSION, "%s: NOT OK: %s" % (path, summary.get("verdict"))
    return EXIT_ERROR, "the job exited %d but %s says %s; the end of %s:\n%s" % (
        status, path, "ok" if ok else "NOT OK", log, tail(log))


def cmd_launch(args, runner):
    if args.ranks_per_node < 1:
        raise UsageError("--ranks-per-node %d: want 1 or more" % args.ranks_per_node)
    if args.launcher == "mpirun":
        if not args.hostfile and not args.np:
            raise UsageError("launch --launcher mpirun needs --hostfile FILE or --np N")
        if args.hostfile and not runner.dry_run and not os.path.exists(args.hostfile):
            raise UsageError("--hostfile %s: no such file" % args.hostfile)
        argv = mpirun_argv(args)
        try:
            proc = runner.run(argv, env=mpirun_env(os.environ))
        except FileNotFoundError:
            raise UsageError("mpirun not found: install Open MPI (mk/deps.sh) or use --launcher slurm")
        if proc is None:
            return EXIT_OK
        status, msg = report_verdict(args.out)
        print(msg)
        if proc.returncode not in (0, 1) and status == EXIT_OK:
            status = EXIT_ERROR
        return status
    # slurm: the script and Slurm's output beside --out
    script = sbatch_script(args)
    sdir = slurm_dir(args.out)
    path = os.path.join(sdir, "lab-replay.sbatch")
    sbatch = ["sbatch", "--parsable"] + (["--wait"] if args.wait else []) + [path]
    if runner.dry_run:
        print("# %s" % path)
        sys.stdout.write(script)
        runner.show(sbatch)
        return EXIT_OK
    try:
        os.makedirs(sdir, exist_ok=True)
        with open(path, "w") as f:
            f.write(script)
    except OSError as e:
        raise UsageError("%s: cannot write the batch script: %s" % (path, e.strerror))
    try:
        proc = runner.run(sbatch, capture=True)
    except FileNotFoundError:
        raise UsageError("sbatch not found: this machine is not a Slurm submit host (use --launcher mpirun)")
    # --parsable prints "JOBID[;CLUSTER]" once the job is queued; with --wait sbatch then exits with the job's status
    job = (proc.stdout or "").strip().splitlines()[0].split(";")[0] if (proc.stdout or "").strip() else ""
    if not job.isdigit():
        said = ((proc.stderr or "") + (proc.stdout or "")).strip() or "it said nothing"
        print("lab_fleet: sbatch %s: the job was not submitted (exit %d): %s" % (path, proc.returncode, said),
              file=sys.stderr)
        return EXIT_ERROR
    log = os.path.join(sdir, "slurm-%s.out" % job)
    print("submitted job %s; Slurm's output in %s, the result set in %s" % (job, log, args.out))
    if not args.wait:
        return EXIT_OK
    status, msg = job_verdict(proc.returncode, args.out, log)
    print(msg, file=sys.stdout if status != EXIT_ERROR else sys.stderr)
    return status


# --------------------------------------------------------------------------------------------- collect

def parse_source(src):
    """'name=host:path', 'host:path' or a local 'path' -> (name, host or None, path)."""
    name = None
    if "=" in src.split(":", 1)[0]:
        name, src = src.split("=", 1)
    host, path = (None, src)
    if ":" in src and not src.startswith("/") and not src.startswith("."):
        host, path = src.split(":", 1)
    if not path:
        raise UsageError("collect: source '%s' has no path" % src)
    if not name:
        base = os.path.basename(os.path.normpath(path))
        name = "%s-%s" % (host, base) if host else base
    return name, host, path


def cmd_collect(args, runner):
    names = set()
    status = EXIT_OK
    if not runner.dry_run:
        os.makedirs(args.into, exist_ok=True)
    for src in args.sources:
        name, host, path = parse_source(src)
        if name in names:
            raise UsageError("collect: two sources named '%s' (name them: NAME=host:path)" % name)
        names.add(name)
        dest = os.path.join(args.into, name)
        if host:
            if shutil.which("rsync") or runner.dry_run:
                argv = ["rsync", "-a", "--delete", "%s:%s/" % (host, path.rstrip("/")), dest + "/"]
            else:
                argv = ["scp", "-r", "-q", "%s:%s" % (host, path.rstrip("/")), dest]
            try:
                proc = runner.run(argv)
            except FileNotFoundError as e:
                print("collect %s: %s" % (src, e), file=sys.stderr)
                status = EXIT_ERROR
                continue
            if proc is not None and proc.returncode != 0:
                print("collect %s: %s exited %d" % (src, argv[0], proc.returncode), file=sys.stderr)
                status = EXIT_ERROR
        else:
            runner.show(["cp", "-r", path, dest])
            if not runner.dry_run:
                if not os.path.isdir(path):
                    print("collect %s: no such directory" % path, file=sys.stderr)
                    status = EXIT_ERROR
                    continue
                shutil.copytree(path, dest, dirs_exist_ok=True)
    return status


# --------------------------------------------------------------------------------------------- compare

def load_summary(report):
    """A report folder's summary.json as a dict; raises UsageError naming the file."""
    path = os.path.join(report, "summary.json")
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise UsageError("%s: cannot read (%s)" % (path, e.strerror))
    except ValueError as e:
        raise UsageError("%s: not JSON (%s)" % (path, e))


def where(summary):
    """'host device' of rank 0 (a --mpi replay records its ranks), or the backend."""
    ranks = summary.get("ranks") or []
    if ranks:
        r0 = ranks[0]
        hosts = sorted({r.get("host") or "?" for r in ranks})
        return "%s (%d rank%s) %s" % (",".join(hosts), len(ranks), "" if len(ranks) == 1 else "s",
                                      r0.get("device", ""))
    return summary.get("backend", "?")


def run_compare(lab, base, other, runner):
    """(status word, detail) of `lab compare base other`; 'unavailable' when this lab has no compare."""
    argv = [lab, "compare", base, other]
    try:
        proc = runner.run(argv, capture=True)
    except (FileNotFoundError, PermissionError):
        return "unavailable", "%s not found" % lab
    if proc is None:
        return "dry-run", ""
    text = (proc.stdout or "") + (proc.stderr or "")
    if proc.returncode == 2 and "unknown command 'compare'" in text:
        return "unavailable", "%s has no `compare` command" % lab
    last = text.strip().splitlines()[-1] if text.strip() else ""
    if proc.returncode == 0:
        return "same", last
    if proc.returncode == 1:
        return "REGRESSION", last
    missing = [d for d in (base, other) if not os.path.exists(os.path.join(d, "report.json"))]
    if missing:  # a replay folder, not a report folder: say how to get one
        last += " (no report.json in %s: launch with --lab-command report)" % ", ".join(missing)
    return "error", "exit %d: %s" % (proc.returncode, last)


def cmd_compare(args, runner):
    reports = args.reports
    if len(reports) < 2:
        raise UsageError("compare needs at least two report folders")
    base = args.baseline or reports[0]
    if base not in reports:
        reports = [base] + reports
    if runner.dry_run:
        for r in reports:
            if r != base:
                runner.show([args.lab, "compare", base, r])
        return EXIT_OK
    summaries = {r: load_summary(r) for r in reports}

    status = EXIT_OK
    rows = []
    for r in reports:
        s = summaries[r]
        if r == base:
            verdict, detail = "baseline", ""
        else:
            verdict, detail = run_compare(args.lab, base, r, runner)
        if verdict == "REGRESSION" or s.get("ok") is not True:
            status = max(status, EXIT_REGRESSION)
        if verdict == "error":
            status = EXIT_ERROR
        rows.append((r, where(s), str(s.get("cases", "?")), "ok" if s.get("ok") is True else "NOT OK", verdict,
                     detail))

    # Per-variant PASS counts side by side.
    variants = []
    for r in reports:
        for inc in summaries[r].get("incidents", []):
            for v in inc.get("variants", []):
                key = "%s/%s" % (inc.get("id"), v.get("name"))
                if key not in variants:
                    variants.append(key)

    def cell(summary, key):
        for inc in summary.get("incidents", []):
            for v in inc.get("variants", []):
                if "%s/%s" % (inc.get("id"), v.get("name")) == key:
                    c = v.get("counts", {})
                    good = c.get("PASS", 0) if v.get("role") == "fix" else v.get("detected", 0)
                    return "%s %d/%d" % ("ok" if v.get("ok") else "BAD", good, v.get("seeds", 0))
        return "-"

    head = ("report", "where", "cases", "replay", "vs " + os.path.basename(os.path.normpath(base)), "lab compare says")
    table = [head] + rows
    widths = [max(len(str(t[i])) for t in table) for i in range(5)]
    for t in table:
        print("  ".join(str(t[i]).ljust(widths[i]) for i in range(5)) + "  " + t[5])
    if any(row[4] == "unavailable" for row in rows):
        print("note: `lab compare` is not available; only the summaries are compared")
    print()
    names = [os.path.basename(os.path.normpath(r)) for r in reports]
    kw = max([len("incident/variant")] + [len(k) for k in variants])
    cw = [max(len(n), 12) for n in names]
    print("incident/variant".ljust(kw) + "  " + "  ".join(n.ljust(w) for n, w in zip(names, cw)))
    for key in variants:
        print(key.ljust(kw) + "  " + "  ".join(cell(summaries[r], key).ljust(w) for r, w in zip(reports, cw)))
    return status


# ------------------------------------------------------------------------------------------------ main

class UsageError(Exception):
    pass


def parser():
    p = argparse.ArgumentParser(prog="lab_fleet.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    p.add_argument("--lab", default="build/lab", help="the lab binary (default build/lab)")
    p.add_argument("--root", default=".", help="repository root the ranks run in (default .)")
    sub = p.add_subparsers(dest="command", required=True)

    la = sub.add_parser("launch", help="run a replay across ranks (mpirun or Slurm)")
    la.add_argument("--launcher", choices=["mpirun", "slurm"], required=True)
    la.add_argument("--out", required=True, help="report folder (written by rank 0)")
    la.add_argument("--lab-command", choices=["replay", "report"], default="replay",
                    help="lab replay (default), or lab report: the replay plus report.json for `compare`")
    la.add_argument("--hostfile", help="mpirun: Open MPI host file")
    la.add_argument("--np", type=int, help="mpirun: number of ranks")
    la.add_argument("--nodes", type=int, help="slurm: number of nodes")
    la.add_argument("--gpus-per-node", type=int, help="slurm: GPUs a node to allocate")
    la.add_argument("--ranks-per-node", type=int, default=1,
                    help="ranks a node (default 1: one rank drives all of its node's GPUs; K splits them K ways)")
    la.add_argument("--partition", help="slurm partition")
    la.add_argument("--time", help="slurm time limit (HH:MM:SS)")
    la.add_argument("--job-name", default="lab-replay")
    la.add_argument("--srun-mpi", default="pmix", help="srun --mpi plugin (default pmix)")
    la.add_argument("--wait", action="store_true",
                    help="slurm: wait for the job and judge it by its exit status and summary.json")
    la.add_argument("--no-recovery", action="store_true",
                    help="mpirun: no --enable-recovery (a dying rank then ends the whole job)")
    la.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="exported to every rank")
    la.add_argument("--mpirun-arg", action="append", default=[], metavar="ARG", help="extra mpirun argument")
    la.add_argument("replay_args", nargs=argparse.REMAINDER, help="-- then arguments for lab replay")

    co = sub.add_parser("collect", help="copy report folders of several machines into one folder")
    co.add_argument("--into", required=True)
    co.add_argument("sources", nargs="+", metavar="[NAME=][HOST:]PATH")

    cm = sub.add_parser("compare", help="lab compare every report against a baseline, in one table")
    cm.add_argument("--baseline", help="report folder the others are compared with (default: the first)")
    cm.add_argument("reports", nargs="+", metavar="REPORT_DIR")
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    runner = Runner(args.dry_run)
    for kv in getattr(args, "env", []):
        if "=" not in kv or not kv.split("=", 1)[0]:
            print("lab_fleet: --env %s: want NAME=VALUE" % kv, file=sys.stderr)
            return EXIT_ERROR
    try:
        if args.command == "launch":
            return cmd_launch(args, runner)
        if args.command == "collect":
            return cmd_collect(args, runner)
        return cmd_compare(args, runner)
    except UsageError as e:
        print("lab_fleet: %s" % e, file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
