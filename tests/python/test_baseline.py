"""test_baseline: tools/gpu/baseline.py (`make baselines`) names the folder by the GPU's model, keeps report.json and a
README written from it, refuses a NOT OK report and a machine without a GPU, and holds baselines/ to its budget; with
a stand-in nvidia-smi and a stand-in lab on PATH."""

import io
import json
import os
import stat
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
import tools_path  # noqa: E402,F401
import baseline  # noqa: E402

REPORT = {"schema": "lab-report/1", "created": "2026-12-07T10:00:00Z",
          "device": {"host": {"usable_cpus": 16},
                     "gpu": {"available": True, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0",
                             "driver_cuda_version": "13.0",
                             "code": {"carried": "sm_90 compute_90", "runs": "native", "from": "sm_90",
                                      "toolkit": "13.0.88", "driver": "580.159.04"}}},
          "build": {"commit": "0123456789abcdef0123", "dirty": False, "sources_digest": "9417696c06e11510"},
          "bench": {"records": [{"name": "a"}, {"name": "b"}]},
          "summary": {"ok": True, "cases": 21000, "wall_s": 28.5},
          "incidents": [{"id": "0004-pow-grad-nan", "variants": []}]}


def script(path, body):
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


class Baseline(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.cwd = os.getcwd()
        os.chdir(self.tmp.name)
        os.makedirs("bin")
        self.path = os.environ["PATH"]
        os.environ["PATH"] = os.path.join(self.tmp.name, "bin") + os.pathsep + self.path

    def tearDown(self):
        os.environ["PATH"] = self.path
        os.chdir(self.cwd)
        self.tmp.cleanup()

    def lab(self, report, rc=0):
        """A stand-in lab: `report ... --out DIR` writes DIR/report.json and exits rc."""
        with open("report.in.json", "w") as f:
            json.dump(report, f)
        script("bin/lab", 'while [ $# -gt 0 ]; do [ "$1" = --out ] && out="$2"; shift; done\n'
                          f'mkdir -p "$out" && cp {self.tmp.name}/report.in.json "$out/report.json"\nexit {rc}')

    def run_main(self, *args):
        argv = sys.argv
        sys.argv = ["baseline.py", "--lab", "bin/lab", *args]
        err, out = io.StringIO(), io.StringIO()
        try:
            with redirect_stderr(err), redirect_stdout(out):
                rc = baseline.main()
        finally:
            sys.argv = argv
        return rc, out.getvalue() + err.getvalue()

    def test_slug(self):
        self.assertEqual(baseline.gpu_slug("NVIDIA H100 80GB HBM3"), "h100")
        self.assertEqual(baseline.gpu_slug("NVIDIA H200"), "h200")
        self.assertEqual(baseline.gpu_slug("NVIDIA A100-SXM4-80GB"), "a100-sxm4-80gb")
        self.assertEqual(baseline.gpu_slug("Tesla T4"), "t4")

    def test_writes_report_and_readme(self):
        script("bin/nvidia-smi", 'echo "NVIDIA H100 80GB HBM3"')
        self.lab(REPORT)
        rc, text = self.run_main()
        self.assertEqual(rc, 0, text)
        self.assertEqual(sorted(os.listdir("baselines/h100")), ["README.md", "report.json"])
        with open("baselines/h100/report.json") as f:
            body = f.read()
        self.assertEqual(json.loads(body), REPORT)
        self.assertEqual(body.count("\n"), 1, "compact JSON")
        with open("baselines/h100/README.md") as f:
            md = f.read()
        for s in ("NVIDIA H100 80GB HBM3", "--seeds 1000", "0123456789ab", "9417696c06e11510", "native (sm_90",
                  "toolkit 13.0.88", "driver 580.159.04", "OK, 21000 cases", "2 records", "make baselines"):
            self.assertIn(s, md)

    def test_not_ok_is_no_baseline(self):
        script("bin/nvidia-smi", 'echo "NVIDIA H200"')
        bad = json.loads(json.dumps(REPORT))
        bad["summary"]["ok"] = False
        self.lab(bad, rc=1)
        rc, text = self.run_main()
        self.assertEqual(rc, 1)
        self.assertIn("NOT OK: not a baseline", text)
        self.assertFalse(os.path.exists("baselines/h200"))

    def test_no_gpu(self):
        script("bin/nvidia-smi", "exit 9")
        self.lab(REPORT)
        rc, text = self.run_main()
        self.assertEqual(rc, 3)
        self.assertIn("no GPU visible", text)

    def test_budget(self):
        script("bin/nvidia-smi", 'echo "NVIDIA H100 80GB HBM3"')
        self.lab(REPORT)
        os.makedirs("baselines/old")
        with open("baselines/old/big.bin", "wb") as f:
            f.write(b"x" * (3 * 1024 * 1024))
        rc, text = self.run_main()
        self.assertEqual(rc, 1)
        self.assertIn("over its budget", text)


if __name__ == "__main__":
    unittest.main()
