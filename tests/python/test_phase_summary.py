"""Tests of phase_summary.py: marks kept in order, workers summed up, the exit last; and, with a lab binary ($LAB_BIN
or build/lab), the marks a real CPU replay writes under LAB_PHASES, and none without it."""
import os
import subprocess
import tempfile
import unittest

import tools_path  # noqa: E402,F401
import phase_summary as ps  # noqa: E402

ROOT = tools_path.ROOT
LAB = os.path.abspath(os.environ.get("LAB_BIN") or os.path.join(ROOT, "build", "lab"))


class Summary(unittest.TestCase):
    def test_marks_in_order_workers_summed_exit_last(self):
        lines = ["lab phase +0.001 s [pid 7]: device probe: making a context\n",
                 "progress line, not a mark\n",
                 "lab phase +0.500 s [pid 8]: worker ready\n",
                 "lab phase +0.300 s [pid 6]: replay clock starts\n",
                 "lab phase +0.900 s [pid 9]: worker ready\n",
                 "lab phase +0.700 s [pid 10]: worker ready\n",
                 "lab phase +2.000 s [pid 6]: exit\n",
                 "lab phase +1.500 s [pid 6]: cases done\n"]
        out = ps.summary(lines)
        self.assertEqual(out, ["  0.001 7 device probe: making a context", "  0.300 6 replay clock starts",
                               "  1.500 6 cases done", "  2.000 6 exit",
                               "workers ready: 3, first 0.50, median 0.70, last 0.90"])


@unittest.skipUnless(os.access(LAB, os.X_OK), "no lab binary (%s): make, or set LAB_BIN" % LAB)
class RealReplay(unittest.TestCase):
    def replay(self, phases):
        env = dict(os.environ, LAB_ROOT=ROOT)
        env.pop("LAB_PHASES", None)
        if phases:
            env["LAB_PHASES"] = "1"
        with tempfile.TemporaryDirectory() as tmp:
            p = subprocess.run([LAB, "replay", "--incident", "0004", "--seeds", "2", "-j", "2", "--quiet", "--no-plots",
                                "--out", os.path.join(tmp, "r")], capture_output=True, text=True, env=env, cwd=ROOT,
                               timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stderr.splitlines()

    def test_a_cpu_replay_marks_its_phases(self):
        out = ps.summary(self.replay(True))
        whats = [line.split(None, 2)[-1] for line in out if not line.startswith("workers")]
        for want in ["backend decided (device probe)", "replay clock starts", "cases done", "replay done", "exit"]:
            self.assertIn(want, whats, "\n".join(out))
        self.assertLess(whats.index("replay clock starts"), whats.index("cases done"))
        self.assertRegex(out[-1], r"^workers ready: 2, ")

    def test_no_marks_without_lab_phases(self):
        self.assertFalse([line for line in self.replay(False) if line.startswith("lab phase")])


if __name__ == "__main__":
    unittest.main()
