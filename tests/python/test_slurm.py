"""test_slurm: the lab on a real one-node Slurm cluster (slurm_cluster.py: Debian's slurmctld, slurmd and munge under a
temporary folder, no cgroups), as a cluster user runs it: an srun job step and an sbatch job (through lab_fleet.py)
give sets equal case by case to a plain replay; srun without --mpi=pmix says why it cannot start; scancel of a running
replay keeps its finished cases and `lab replay --resume` completes the set, equal after; a rank killed under
--kill-on-bad-exit=1 takes the step down, the rest kept and completed the same way; a job's time limit interrupts the
replay with its finished cases kept; a 1-CPU task without cgroups or binding gets 1 worker, said and recorded. Each
path prints its figures (cases kept, exit status, time to stop) on stderr.

Run by `make test-slurm` (LAB_SLURM_TESTS=1; it installs what it needs); skipped elsewhere, and where the cluster
cannot start, with the reason."""

import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest
from datetime import datetime

import tools_path  # noqa: F401
import mpi_scaling_report  # noqa: E402
import slurm_cluster  # noqa: E402

ROOT = tools_path.ROOT
LAB = os.path.abspath(os.environ.get("LAB_BIN") or os.path.join(ROOT, "build", "lab"))
SMALL = ["--incident", "0004", "--seeds", "64", "--backend", "cpu", "--no-plots"]   # 128 cases
LARGE = ["--incident", "0004", "--seeds", "400", "--backend", "cpu", "--no-plots"]  # 800 cases
LONG = ["--incident", "0004", "--seeds", "5000", "--backend", "cpu", "--no-plots", "-j", "1"]  # past a minute


def say(*words):
    print("slurm:", *words, file=sys.stderr, flush=True)


def summary(out):
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)


def journal_lines(out):
    """Whole lines of the journals beside out (their headers included)."""
    n = 0
    for path in glob.glob(out + ".new-*/journal.jsonl"):
        with open(path, "rb") as f:
            n += f.read().count(b"\n")
    return n


def wait_until(ready, seconds, what):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if ready():
            return
        time.sleep(0.2)
    raise AssertionError("%s: not within %d s" % (what, seconds))


class Slurm(unittest.TestCase):
    cluster = None

    @classmethod
    def setUpClass(cls):
        if os.environ.get("LAB_SLURM_TESTS") != "1":
            raise unittest.SkipTest("run by `make test-slurm` (it installs Slurm and munge, then sets LAB_SLURM_TESTS=1)")
        if not os.access(LAB, os.X_OK):
            raise unittest.SkipTest("%s not built" % LAB)
        probe = subprocess.run([LAB, "replay", "--mpi", "--variant", "none-such"], capture_output=True, text=True,
                               cwd=ROOT)
        if "has no MPI" in probe.stderr:
            raise unittest.SkipTest("%s was built without MPI" % LAB)
        cls.tmp = tempfile.mkdtemp(prefix="lab-slurm-test-")
        cls.cluster = slurm_cluster.Cluster()
        try:
            cls.cluster.start()
        except slurm_cluster.Unavailable as e:
            cls.cluster = None
            raise unittest.SkipTest("Slurm cannot start here: %s" % e)
        try:
            cls.start_jobs()
        except BaseException:
            cls.cluster.stop()
            raise

    @classmethod
    def start_jobs(cls):
        # The plain replays the sets are compared with.
        for name, args in (("plain-small", SMALL), ("plain-large", LARGE)):
            r = subprocess.run([LAB, "replay", "--quiet", "--out", cls.at(name)] + args, cwd=ROOT, capture_output=True,
                               text=True)
            assert r.returncode == 0, r.stdout + r.stderr
        # The batch job through lab_fleet (--exclusive: before anything else shares the node).
        t0 = time.monotonic()
        cls.fleet = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "fleet", "lab_fleet.py"), "--lab", LAB,
                                    "--root", ROOT, "launch", "--launcher", "slurm", "--ranks-per-node", "2",
                                    "--time", "5", "--wait", "--out", cls.at("fleet"), "--"] + SMALL,
                                   cwd=ROOT, capture_output=True, text=True, env=cls.cluster.env, timeout=300)
        cls.fleet_s = time.monotonic() - t0
        # The job that runs into its time limit (one minute, Slurm's least), beside the other tests.
        script = cls.at("limit.sbatch")
        with open(script, "w") as f:
            f.write("#!/bin/bash\n#SBATCH --time=1\n#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=1\n"
                    "#SBATCH --output=%s\ncd %s\nexec srun %s replay %s --out %s\n"
                    % (cls.at("limit.log"), ROOT, LAB, " ".join(LONG), cls.at("limit")))
        r = cls.cluster.run(["sbatch", "--parsable", script], cwd=ROOT, timeout=30)
        assert r.returncode == 0 and r.stdout.strip(), r.stdout + r.stderr
        cls.limit_job = r.stdout.strip().split(";")[0]
        cls.limit_t0 = time.monotonic()

    @classmethod
    def tearDownClass(cls):
        if cls.cluster:
            cls.cluster.stop()
        subprocess.run(["rm", "-rf", cls.tmp])

    @classmethod
    def at(cls, name):
        return os.path.join(cls.tmp, name)

    def expect_equal(self, out, plain, cases):
        """out's results.jsonl equals the plain replay's case by case: outcome, detail, metrics, replay command (what a
        run measures set aside)."""
        a, b = mpi_scaling_report.load(plain), mpi_scaling_report.load(out)
        self.assertEqual(len(a), cases)
        self.assertEqual(len(b), cases, "%s holds %d cases" % (out, len(b)))
        n, where = mpi_scaling_report.differences(a, b)
        self.assertEqual(n, 0, "%d cases differ: %s" % (n, where))

    def resume(self, out, planned, plain):
        """`lab replay --resume out`: exit 0, the kept cases said, and the set then equals the plain replay. Returns how
        many cases were kept."""
        r = subprocess.run([LAB, "replay", "--resume", out, "--quiet"], cwd=ROOT, capture_output=True, text=True,
                           timeout=600)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        m = re.search(r"(\d+) of %d cases finished before and are kept" % planned, r.stderr)
        self.assertIsNotNone(m, r.stderr)
        self.expect_equal(out, plain, planned)
        self.assertEqual(glob.glob(out + ".new-*"), [], "a staging folder is left")
        return int(m.group(1))

    def test_an_srun_job_step_equals_a_plain_replay(self):
        out = self.at("srun")
        r = self.cluster.run(["srun", "-n", "2", "--mpi=pmix", "--cpu-bind=none", "--kill-on-bad-exit=1", LAB, "replay",
                              "--mpi", "--out", out] + SMALL, cwd=ROOT)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.expect_equal(out, self.at("plain-small"), 128)
        ranks = summary(out)["ranks"]
        self.assertEqual(len(ranks), 2)
        for rk in ranks:
            # two tasks of the step on the node: each rank's CPUs are its task's, not divided again
            self.assertIn("over 2 tasks of the step on this node", rk["jobs_from"])
            self.assertIn("this rank's own", rk["jobs_from"])
        say("srun -n 2 --mpi=pmix: exit 0, 128 cases equal to a plain replay; rank 0 %s" % ranks[0]["jobs_from"])

    def test_srun_without_pmix_says_why_it_cannot_start(self):
        out = self.at("nopmix")
        r = self.cluster.run(["srun", "-n", "2", LAB, "replay", "--mpi", "--out", out] + SMALL, cwd=ROOT)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("OMPI was not built with SLURM's PMI support", r.stdout + r.stderr)
        self.assertFalse(os.path.exists(os.path.join(out, "summary.json")))
        say("srun without --mpi=pmix: exit %d, Open MPI: OMPI was not built with SLURM's PMI support" % r.returncode)

    def test_an_sbatch_job_through_lab_fleet_equals_a_plain_replay(self):
        r, out = self.fleet, self.at("fleet")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("summary.json: ok (128 cases)", r.stdout)
        self.expect_equal(out, self.at("plain-small"), 128)
        self.assertEqual(sorted(os.listdir(out)), ["junit.xml", "results.jsonl", "summary.json"])
        beside = sorted(os.listdir(out + ".slurm"))
        self.assertIn("lab-replay.sbatch", beside)
        self.assertTrue(any(re.match(r"slurm-\d+\.out$", n) for n in beside), beside)
        say("sbatch (lab_fleet.py launch --launcher slurm --wait): exit 0 in %.1f s, 128 cases equal" % self.fleet_s)

    def test_scancel_keeps_the_finished_cases_and_resume_completes_them(self):
        # the lab started from the batch script as a plain command: no exec, no job step
        out, script = self.at("cancel"), self.at("cancel.sbatch")
        with open(script, "w") as f:
            f.write("#!/bin/bash\ncd %s\n%s replay --out %s %s\necho the replay exited $?\n" % (ROOT, LAB, out,
                                                                                          " ".join(LARGE)))
        r = self.cluster.run(["sbatch", "--parsable", "-n", "2", "-o", self.at("cancel.log"), script], cwd=ROOT)
        self.assertEqual(r.returncode, 0, r.stderr)
        job = r.stdout.strip().split(";")[0]
        wait_until(lambda: journal_lines(out) > 100, 120, "100 cases in the journal")
        t0 = time.monotonic()
        self.cluster.run(["scancel", job])
        state = self.cluster.wait_job(job, 90)
        wait_until(lambda: os.path.exists(os.path.join(out, "summary.json")) or journal_lines(out) > 0, 60, "a set")
        stopped = time.monotonic() - t0
        self.assertEqual(state, "CANCELLED")
        s = summary(out) if os.path.exists(os.path.join(out, "summary.json")) else None
        if s:  # Slurm signalled the lab (proctrack/linuxproc: every process of the job): the set, interrupted
            self.assertTrue(s["interrupted"])
            self.assertEqual(s["resume"], "%s replay --resume %s" % (LAB, out))
        kept = self.resume(out, 800, self.at("plain-large"))
        self.assertGreater(kept, 100)
        say("scancel of a plain `lab replay` in a batch script: job %s, %s; %d of 800 cases kept, the set written "
            "within %.1f s of scancel; --resume completed it, equal to a plain replay"
            % (state, "set interrupted by %s" % s["signal"] if s else "journal only", kept, stopped))

    def test_a_rank_killed_takes_the_step_down_and_the_rest_is_kept(self):
        out = self.at("killed")
        t0 = time.monotonic()
        r = self.cluster.run(["srun", "-n", "2", "--mpi=pmix", "--cpu-bind=none", "--kill-on-bad-exit=1", LAB,
                              "replay", "--mpi", "--out", out] + LARGE, cwd=ROOT, env={"LAB_MPI_TEST_FAULT": "crash:1"})
        took = time.monotonic() - t0
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        s = summary(out) if os.path.exists(os.path.join(out, "summary.json")) else None
        kept = self.resume(out, 800, self.at("plain-large"))
        self.assertGreater(kept, 0)
        say("rank 1 killed under srun --kill-on-bad-exit=1: srun exit %d after %.1f s, %s; %d of 800 cases kept; "
            "--resume completed them, equal to a plain replay"
            % (r.returncode, took, "rank 0 wrote the set (interrupted by %s)" % s.get("signal") if s else
               "rank 0's journal only", kept))

    def test_a_one_cpu_task_without_cgroups_gets_one_worker(self):
        for how, argv in (("srun -c 1", ["srun", "-n", "1", "-c", "1"]),
                          ("a batch job of one task", None)):
            out = self.at("one-%d" % (argv is None))
            replay = [LAB, "replay", "--out", out, "--incident", "0004", "--seeds", "4", "--backend", "cpu",
                      "--no-plots"]
            if argv:
                r = self.cluster.run(argv + replay, cwd=ROOT)
                text = r.stdout + r.stderr
            else:
                script = self.at("one.sbatch")
                with open(script, "w") as f:
                    f.write("#!/bin/bash\ncd %s\n%s\n" % (ROOT, " ".join(replay)))
                r = self.cluster.run(["sbatch", "--parsable", "--wait", "-n", "1", "-o", self.at("one.log"), script],
                                     cwd=ROOT)
                with open(self.at("one.log")) as f:
                    text = f.read()
            self.assertEqual(r.returncode, 0, text)
            self.assertIn("scheduler: 1 workers (default: one a CPU; 1 CPUs: Slurm's SLURM_CPUS_", text)
            w = summary(out)["workers"]
            self.assertEqual(w["count"], 1, w)
            self.assertIn("SLURM_CPUS_", w["cpus_from"])
            if (os.cpu_count() or 1) > 1:  # task/none binds nothing: the task sees every CPU, Slurm's count binds
                self.assertIn("affinity %d of" % len(os.sched_getaffinity(0)), w["cpus_from"])
            say("1-CPU task (%s), no cgroups or binding: 1 worker, from %s" % (how, w["cpus_from"]))

    def test_the_time_limit_interrupts_the_replay_and_keeps_its_cases(self):
        out = self.at("limit")
        state = self.cluster.wait_job(self.limit_job, 240)
        ended = time.monotonic() - self.limit_t0
        self.assertEqual(state, "TIMEOUT")
        with open(self.at("limit.log")) as f:
            log = f.read()
        self.assertIn("DUE TO TIME LIMIT", log)
        self.assertIn("task 0: Exited with exit code 143", log)  # the lab's own status for SIGTERM
        s = summary(out)
        self.assertTrue(s["interrupted"])
        self.assertEqual(s["signal"], "SIGTERM")
        self.assertEqual(s["cases_planned"], 10000)
        self.assertGreater(s["cases"], 0)
        self.assertEqual(s["resume"], "%s replay --resume %s" % (LAB, out))
        # from Slurm's signal (the second its message names) to the set written
        at = re.search(r"CANCELLED AT (\S+) DUE TO TIME LIMIT", log).group(1)
        signalled = datetime.strptime(at, "%Y-%m-%dT%H:%M:%S").timestamp()
        written = os.path.getmtime(os.path.join(out, "summary.json"))
        self.assertLess(written - signalled, 3.0, "the set was written %.1f s after the time limit" % (written - signalled))
        # --resume takes every kept case (stopped once it has said so: the rest is some minutes of work)
        p = subprocess.Popen([LAB, "replay", "--resume", out, "--quiet"], cwd=ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
        line = p.stderr.readline()
        p.send_signal(2)
        p.communicate(timeout=60)
        self.assertIn(": %d of 10000 cases finished before and are kept" % s["cases"], line)
        say("time limit (1 min): job TIMEOUT after %.0f s, the step's lab exit 143, %d of 10000 cases kept, the set "
            "written %.1f s after Slurm's signal (to the second)" % (ended, s["cases"], written - signalled))


if __name__ == "__main__":
    unittest.main()
