"""test_lab_fleet: lab_fleet.py without a cluster: the dry-run commands of launch (mpirun, Slurm) and collect, real
launches through mpirun and through stand-ins of sbatch and srun that run the batch script and the lab for real (the
script and Slurm's output beside --out, the job judged by its exit status and summary.json, sbatch's own message
carried), compare's table and exit status against a stand-in `lab compare`, and its absence handled. A real Slurm
cluster: tests/python/test_slurm.py."""

import contextlib
import io
import json
import os
import stat
import sys
import tempfile
import unittest

import tools_path  # noqa: E402,F401
import lab_fleet  # noqa: E402


def run(argv):
    """lab_fleet.main(argv) -> (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            st = lab_fleet.main(argv)
        except SystemExit as e:  # argparse errors
            st = e.code
    return st, out.getvalue(), err.getvalue()


def summary(ok=True, ranks=None, pass_fix=8, detected=8):
    s = {"ok": ok, "backend": "cpu", "cases": 16, "wall_s": 1.0, "incidents": [
        {"id": "0004-pow-grad-nan", "title": "t", "variants": [
            {"name": "fix", "role": "fix", "seeds": 8, "counts": {"PASS": pass_fix, "FAIL": 8 - pass_fix}, "ok": pass_fix == 8},
            {"name": "bug-exp-log", "role": "bug", "seeds": 8, "counts": {"FAIL": detected}, "detected": detected,
             "ok": detected == 8}]}]}
    if ranks:
        s["ranks"] = ranks
    return s


class Launch(unittest.TestCase):
    def test_mpirun_dry_run_command(self):
        st, out, _ = run(["--dry-run", "launch", "--launcher", "mpirun", "--hostfile", "hosts", "--np", "4",
                          "--gpus-per-node", "2", "--env", "LAB_ROOT=/lab", "--out", "runs/h200", "--",
                          "--seeds", "64", "--backend", "cuda"])
        self.assertEqual(st, 0)
        self.assertEqual(out.strip(), "+ mpirun --enable-recovery --hostfile hosts --map-by ppr:1:node --bind-to none "
                                      "-np 4 -x LAB_ROOT=/lab build/lab replay --mpi --out runs/h200 --seeds 64 "
                                      "--backend cuda")

    def test_mpirun_leaves_hwloc_gpu_plugins_off_unless_set(self):
        self.assertEqual(lab_fleet.mpirun_env({"PATH": "/bin"}), {"HWLOC_COMPONENTS": "-gl,-cuda,-nvml,-opencl,-rsmi"})
        self.assertEqual(lab_fleet.mpirun_env({"HWLOC_COMPONENTS": "-nvml"}), {}, "a value the caller set stays")

        class Recorder(lab_fleet.Runner):
            def run(self, argv, capture=False, env=None):
                self.got = (argv[0], env)

        rec = Recorder(False)
        saved = os.environ.pop("HWLOC_COMPONENTS", None)
        try:
            args = lab_fleet.parser().parse_args(["launch", "--launcher", "mpirun", "--np", "2", "--out", "r"])
            self.assertEqual(lab_fleet.cmd_launch(args, rec), 0)  # the recorder runs nothing: no report to judge
            self.assertEqual(rec.got, ("mpirun", {"HWLOC_COMPONENTS": "-gl,-cuda,-nvml,-opencl,-rsmi"}))
            self.assertNotIn("HWLOC_COMPONENTS", os.environ, "the caller's own environment is left alone")
        finally:
            if saved is not None:
                os.environ["HWLOC_COMPONENTS"] = saved

    def test_mpirun_ranks_per_node_and_bad_count(self):
        st, out, _ = run(["--dry-run", "launch", "--launcher", "mpirun", "--hostfile", "hosts", "--ranks-per-node", "2",
                          "--out", "r"])
        self.assertEqual(st, 0)
        self.assertEqual(out.strip(), "+ mpirun --enable-recovery --hostfile hosts --map-by ppr:2:node --bind-to none "
                                      "build/lab replay --mpi --out r")
        st, _, err = run(["--dry-run", "launch", "--launcher", "mpirun", "--np", "2", "--ranks-per-node", "0",
                          "--out", "r"])
        self.assertEqual(st, 2)
        self.assertIn("--ranks-per-node 0: want 1 or more", err)

    def test_report_command(self):
        st, out, _ = run(["--dry-run", "launch", "--launcher", "mpirun", "--np", "8", "--lab-command", "report",
                          "--out", "runs/h200", "--", "--backend", "cuda"])
        self.assertEqual(st, 0)
        self.assertEqual(out.strip(), "+ mpirun --enable-recovery --bind-to none -np 8 build/lab report --mpi --out "
                                      "runs/h200 --backend cuda")

    def test_mpirun_without_recovery_and_own_lab(self):
        st, out, _ = run(["--dry-run", "--lab", "/opt/lab/bin/lab", "launch", "--launcher", "mpirun", "--np", "2",
                          "--no-recovery", "--out", "r"])
        self.assertEqual(st, 0)
        self.assertEqual(out.strip(), "+ mpirun --bind-to none -np 2 /opt/lab/bin/lab replay --mpi --out r")

    def test_mpirun_needs_hosts_or_ranks(self):
        st, _, err = run(["--dry-run", "launch", "--launcher", "mpirun", "--out", "r"])
        self.assertEqual(st, 2)
        self.assertIn("needs --hostfile FILE or --np N", err)

    def test_slurm_dry_run_script_and_sbatch(self):
        st, out, _ = run(["--dry-run", "--root", "/lab", "launch", "--launcher", "slurm", "--nodes", "2",
                          "--gpus-per-node", "8", "--partition", "gpu", "--time", "01:00:00", "--out", "/runs/b",
                          "--", "--seeds", "1024"])
        self.assertEqual(st, 0)
        lines = out.splitlines()
        self.assertEqual(lines[0], "# /runs/b.slurm/lab-replay.sbatch", "the script beside --out, not in it")
        self.assertEqual(lines[1], "#!/bin/bash")
        for want in ["#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=1", "#SBATCH --exclusive", "#SBATCH --gpus-per-node=8",
                     "#SBATCH --partition=gpu", "#SBATCH --time=01:00:00", "#SBATCH --output=/runs/b.slurm/slurm-%j.out",
                     "cd /lab",
                     "exec srun --mpi=pmix --cpu-bind=none --kill-on-bad-exit=1 build/lab replay --mpi --out /runs/b "
                     "--seeds 1024"]:
            self.assertIn(want, lines)
        self.assertEqual(lines[-1], "+ sbatch --parsable /runs/b.slurm/lab-replay.sbatch")

    def test_slurm_wait(self):
        st, out, _ = run(["--dry-run", "launch", "--launcher", "slurm", "--wait", "--out", "/o"])
        self.assertEqual(st, 0)
        self.assertEqual(out.splitlines()[-1], "+ sbatch --parsable --wait /o.slurm/lab-replay.sbatch")
        self.assertIn("#SBATCH --ntasks-per-node=1", out)

    def test_unknown_launcher_is_a_usage_error(self):
        st, _, err = run(["launch", "--launcher", "pbs", "--out", "r"])
        self.assertEqual(st, 2)
        self.assertIn("invalid choice: 'pbs'", err)

    def test_bad_env_is_named(self):
        st, _, err = run(["--dry-run", "launch", "--launcher", "mpirun", "--np", "2", "--env", "NOVALUE", "--out", "r"])
        self.assertEqual(st, 2)
        self.assertIn("--env NOVALUE: want NAME=VALUE", err)


class LaunchLocal(unittest.TestCase):
    """A real launch through mpirun on this machine (2 ranks, 2 cases), judged by its summary.json."""

    def test_mpirun_launch_writes_a_merged_report(self):
        import shutil
        import subprocess
        root = tools_path.ROOT
        lab = os.environ.get("LAB_BIN") or os.path.join(root, "build", "lab")
        if not shutil.which("mpirun"):
            self.skipTest("mpirun not found (mk/deps.sh installs Open MPI)")
        if not os.access(lab, os.X_OK):
            self.skipTest("%s not built" % lab)
        probe = subprocess.run([lab, "replay", "--mpi", "--variant", "none-such"], capture_output=True, text=True,
                               cwd=root)
        if "has no MPI" in probe.stderr:
            self.skipTest("%s was built without MPI" % lab)
        os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        with tempfile.TemporaryDirectory() as d:
            # A subprocess, so that mpirun's own output is captured and kept out of the test log.
            proc = subprocess.run([sys.executable, os.path.join(root, "tools", "fleet", "lab_fleet.py"), "--lab", lab,
                                   "launch", "--launcher", "mpirun", "--np", "2", "--mpirun-arg=--oversubscribe",
                                   "--out", d, "--", "--incident", "0004", "--seed", "1", "--no-plots"],
                                  cwd=root, capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            self.assertIn("summary.json: ok (2 cases)", proc.stdout)
            with open(os.path.join(d, "summary.json")) as f:
                s = json.load(f)
            self.assertTrue(s["ok"])
            self.assertEqual([r["status"] for r in s["ranks"]], ["done", "done"])
            self.assertEqual(s["cases"], 2)


STAND_IN_SBATCH = r"""#!/usr/bin/env python3
# A stand-in sbatch: runs the batch script for real, its output where its #SBATCH --output says (%j the job id), and
# with --wait exits with the script's status, as sbatch does. FAKE_SBATCH_REFUSE=text: refuses as sbatch does.
import os, re, subprocess, sys
if os.environ.get("FAKE_SBATCH_REFUSE"):
    sys.stderr.write("sbatch: error: " + os.environ["FAKE_SBATCH_REFUSE"] + "\n")
    sys.exit(1)
args = sys.argv[1:]
script = args[-1]
out = re.search(r"^#SBATCH --output=(.*)$", open(script).read(), re.M).group(1).replace("%j", "4242")
print("4242", flush=True)
with open(out, "w") as log:
    rc = subprocess.call(["bash", script], stdout=log, stderr=subprocess.STDOUT)
sys.exit(rc if "--wait" in args else 0)
"""

STAND_IN_SRUN = r"""#!/bin/sh
# A stand-in srun: one task, this process; the options before the program are srun's.
while [ $# -gt 0 ]; do case "$1" in -*) shift;; *) break;; esac; done
exec "$@"
"""


class LaunchSlurmStandIn(unittest.TestCase):
    """A Slurm launch run for real through stand-ins of sbatch and srun (one task: a singleton MPI rank): the script
    and Slurm's output go beside --out and the lab writes its set into --out; --wait judges the job by its exit status
    and summary.json; sbatch's refusal reaches the user with its message. A real cluster: test_slurm.py."""

    def setUp(self):
        import shutil
        import subprocess
        self.root = tools_path.ROOT
        self.lab = os.environ.get("LAB_BIN") or os.path.join(self.root, "build", "lab")
        if not os.access(self.lab, os.X_OK):
            self.skipTest("%s not built" % self.lab)
        probe = subprocess.run([self.lab, "replay", "--mpi", "--variant", "none-such"], capture_output=True, text=True,
                               cwd=self.root)
        if "has no MPI" in probe.stderr:
            self.skipTest("%s was built without MPI" % self.lab)
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name
        bin_dir = os.path.join(self.d, "bin")
        os.makedirs(bin_dir)
        for name, text in (("sbatch", STAND_IN_SBATCH), ("srun", STAND_IN_SRUN)):
            path = os.path.join(bin_dir, name)
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o755)
        self.env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"])
        self.assertTrue(shutil.which("sbatch", path=self.env["PATH"]).startswith(bin_dir))

    def tearDown(self):
        self.tmp.cleanup()

    def launch(self, out, replay_args, env=None):
        import subprocess
        return subprocess.run([sys.executable, os.path.join(self.root, "tools", "fleet", "lab_fleet.py"), "--lab",
                               self.lab, "--root", self.root, "launch", "--launcher", "slurm", "--wait", "--out", out,
                               "--"] + replay_args, cwd=self.root, capture_output=True, text=True,
                              env=dict(self.env, **(env or {})))

    def test_a_launch_writes_its_set_into_out_and_its_script_beside(self):
        out = os.path.join(self.d, "run")
        proc = self.launch(out, ["--incident", "0004", "--seeds", "2", "--backend", "cpu", "--no-plots"])
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("submitted job 4242; Slurm's output in %s.slurm/slurm-4242.out" % out, proc.stdout)
        self.assertIn("summary.json: ok (4 cases)", proc.stdout)
        self.assertEqual(sorted(os.listdir(out)), ["junit.xml", "results.jsonl", "summary.json"])
        self.assertEqual(sorted(os.listdir(out + ".slurm")), ["lab-replay.sbatch", "slurm-4242.out"])
        with open(os.path.join(out + ".slurm", "slurm-4242.out")) as f:
            self.assertIn("mpi: 1 ranks on 1 host", f.read())

    def test_a_not_ok_replay_is_not_ok_and_an_error_is_an_error(self):
        out = os.path.join(self.d, "few")
        # a stated rate on 3 seeds is too few to judge: the lab's NOT OK, exit 1
        proc = self.launch(out, ["--incident", "0003", "--variant", "bug-size-not-cosize", "--seeds", "3",
                                 "--backend", "cpu", "--no-plots"])
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertIn("summary.json: NOT OK: ", proc.stdout)
        # an --out the lab refuses (a file): exit 2 from the lab, no summary: an error carrying Slurm's output
        bad = os.path.join(self.d, "a-file")
        with open(bad, "w") as f:
            f.write("x")
        proc = self.launch(bad, ["--incident", "0004", "--seeds", "2", "--backend", "cpu"])
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn("the job exited 2 and %s/summary.json is not readable" % bad, proc.stderr)
        self.assertIn("--out", proc.stderr, "the lab's own message, from Slurm's output")

    def test_sbatchs_refusal_carries_its_message(self):
        proc = self.launch(os.path.join(self.d, "r"), ["--seeds", "2"],
                           env={"FAKE_SBATCH_REFUSE": "Batch job submission failed: Invalid partition name specified"})
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn("the job was not submitted (exit 1): sbatch: error: Batch job submission failed: Invalid partition "
                      "name specified", proc.stderr)


class VerdictAgreement(unittest.TestCase):
    """lab_fleet judges a run by summary.json's "ok" exactly as `lab replay` judges it by its exit status."""

    def test_ok_must_be_json_true(self):
        with tempfile.TemporaryDirectory() as d:
            for ok, want in ((True, lab_fleet.EXIT_OK), (False, lab_fleet.EXIT_REGRESSION), ("true", lab_fleet.EXIT_REGRESSION),
                             (1, lab_fleet.EXIT_REGRESSION), (None, lab_fleet.EXIT_REGRESSION)):
                s = summary()
                if ok is None:
                    del s["ok"]
                else:
                    s["ok"] = ok
                with open(os.path.join(d, "summary.json"), "w") as f:
                    json.dump(s, f)
                self.assertEqual(lab_fleet.report_verdict(d)[0], want, "ok = %r" % (ok,))

    def test_real_replays_agree_with_their_exit_status(self):
        import subprocess
        root = tools_path.ROOT
        lab = os.environ.get("LAB_BIN") or os.path.join(root, "build", "lab")
        if not os.access(lab, os.X_OK):
            self.skipTest("%s not built" % lab)
        # An ok replay, and one whose verdict is refused: a stated rate on 3 seeds is too few to judge.
        for args, want_exit, want_kind in ((["--incident", "0004", "--seeds", "2"], 0, "ok"),
                                           (["--incident", "0003", "--variant", "bug-size-not-cosize", "--seeds", "3"], 1,
                                            "too-few-seeds")):
            with tempfile.TemporaryDirectory() as d:
                out = os.path.join(d, "r")
                proc = subprocess.run([lab, "replay", "--backend", "cpu", "--no-plots", "--quiet", "--out", out] + args,
                                      cwd=root, capture_output=True, text=True)
                self.assertEqual(proc.returncode, want_exit, proc.stdout + proc.stderr)
                with open(os.path.join(out, "summary.json")) as f:
                    s = json.load(f)
                self.assertIs(s["ok"], want_exit == 0)
                self.assertEqual(s["exit_status"], want_exit)
                self.assertEqual(s["incidents"][0]["variants"][-1]["verdict_kind"], want_kind)
                st, msg = lab_fleet.report_verdict(out)
                self.assertEqual(st, lab_fleet.EXIT_OK if want_exit == 0 else lab_fleet.EXIT_REGRESSION, msg)


class Collect(unittest.TestCase):
    def test_dry_run_commands(self):
        st, out, _ = run(["--dry-run", "collect", "--into", "runs", "h200=gpu1:/lab/runs/h200",
                          "gpu2:/x/b200/", "local/report"])
        self.assertEqual(st, 0)
        self.assertEqual(out.splitlines(), [
            "+ rsync -a --delete gpu1:/lab/runs/h200/ runs/h200/",
            "+ rsync -a --delete gpu2:/x/b200/ runs/gpu2-b200/",
            "+ cp -r local/report runs/report",
        ])

    def test_duplicate_names_are_refused(self):
        st, _, err = run(["--dry-run", "collect", "--into", "runs", "a:/r/x", "a:/s/x"])
        self.assertEqual(st, 2)
        self.assertIn("two sources named 'a-x'", err)

    def test_local_copy(self):
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "rep")
            os.makedirs(src)
            with open(os.path.join(src, "summary.json"), "w") as f:
                f.write("{}")
            st, _, _ = run(["collect", "--into", os.path.join(d, "all"), "m1=" + src])
            self.assertEqual(st, 0)
            self.assertTrue(os.path.exists(os.path.join(d, "all", "m1", "summary.json")))
            st, _, err = run(["collect", "--into", os.path.join(d, "all"), os.path.join(d, "missing")])
            self.assertEqual(st, 2)
            self.assertIn("no such directory", err)


class Compare(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name
        ranks = [{"rank": 0, "host": "gpu1", "device": "cuda:0 NVIDIA H200"},
                 {"rank": 1, "host": "gpu1", "device": "cuda:1 NVIDIA H200"}]
        self.reports = {}
        for name, s in [("base", summary(ranks=ranks)), ("same", summary()), ("worse", summary(ok=False, pass_fix=6))]:
            p = os.path.join(self.d, name)
            os.makedirs(p)
            with open(os.path.join(p, "summary.json"), "w") as f:
                json.dump(s, f)
            with open(os.path.join(p, "report.json"), "w") as f:
                json.dump({"schema": "lab-report/1", "summary": s}, f)
            self.reports[name] = p

    def tearDown(self):
        self.tmp.cleanup()

    def fake_lab(self, body):
        """A stand-in lab binary whose `compare` runs the given shell body."""
        path = os.path.join(self.d, "lab")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + body + "\n")
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        return path

    def test_dry_run_lists_compare_commands(self):
        r = self.reports
        st, out, _ = run(["--dry-run", "--lab", "build/lab", "compare", r["base"], r["same"], r["worse"]])
        self.assertEqual(st, 0)
        self.assertEqual(out.splitlines(), ["+ build/lab compare %s %s" % (r["base"], r["same"]),
                                            "+ build/lab compare %s %s" % (r["base"], r["worse"])])

    def test_regression_found_by_lab_compare(self):
        lab = self.fake_lab('case "$3" in *worse) echo "fix regressed on 2 seeds"; exit 1;; '
                            '*) echo "no regression"; exit 0;; esac')
        r = self.reports
        st, out, _ = run(["--lab", lab, "compare", r["base"], r["same"], r["worse"]])
        self.assertEqual(st, 1, out)
        self.assertRegex(out, r"same\s.*ok\s+same\s+no regression")
        self.assertRegex(out, r"worse\s.*NOT OK\s+REGRESSION\s+fix regressed on 2 seeds")
        self.assertIn("gpu1 (2 ranks) cuda:0 NVIDIA H200", out)
        self.assertRegex(out, r"0004-pow-grad-nan/fix\s+ok 8/8\s+ok 8/8\s+BAD 6/8")

    def test_no_regression(self):
        lab = self.fake_lab('echo "no regression"; exit 0')
        st, out, _ = run(["--lab", lab, "compare", self.reports["base"], self.reports["same"]])
        self.assertEqual(st, 0, out)

    def test_compare_error_is_exit_2(self):
        lab = self.fake_lab('echo "compare: cannot read results.jsonl" >&2; exit 2')
        st, out, _ = run(["--lab", lab, "compare", self.reports["base"], self.reports["same"]])
        self.assertEqual(st, 2, out)
        self.assertIn("exit 2: compare: cannot read results.jsonl", out)

    def test_replay_folder_without_report_json_gets_a_hint(self):
        lab = self.fake_lab('echo "lab compare: $3/report.json: cannot read" >&2; exit 2')
        os.remove(os.path.join(self.reports["same"], "report.json"))
        st, out, _ = run(["--lab", lab, "compare", self.reports["base"], self.reports["same"]])
        self.assertEqual(st, 2, out)
        self.assertIn("launch with --lab-command report", out)

    def test_lab_without_compare_is_handled(self):
        lab = self.fake_lab("echo \"lab: unknown command '$1'\" >&2; exit 2")
        st, out, _ = run(["--lab", lab, "compare", self.reports["base"], self.reports["same"]])
        self.assertEqual(st, 0, out)
        self.assertIn("has no `compare` command", out)
        self.assertIn("only the summaries are compared", out)

    def test_missing_lab_binary_is_handled(self):
        st, out, _ = run(["--lab", os.path.join(self.d, "nope"), "compare", self.reports["base"],
                          self.reports["same"]])
        self.assertEqual(st, 0, out)
        self.assertIn("not found", out)

    def test_unreadable_report_is_named(self):
        st, _, err = run(["compare", self.reports["base"], os.path.join(self.d, "missing")])
        self.assertEqual(st, 2)
        self.assertIn("missing/summary.json: cannot read", err)


if __name__ == "__main__":
    unittest.main()
