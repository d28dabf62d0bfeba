"""Tests of mpi_scaling_report.py's comparison: cases matched by key whatever their order, what a run measures set
aside, and a real difference named by incident, variant and field."""
import json
import os
import tempfile
import unittest

import tools_path  # noqa: E402,F401
import mpi_scaling_report as msr  # noqa: E402


def write(d, rows):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "results.jsonl"), "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def case(seed, outcome="PASS", err=1e-6, wall=0.1, detail="ok in 1.5 ms"):
    return {"incident": "0001-x", "variant": "fix", "seed": seed, "outcome": outcome, "detail": detail,
            "wall_s": wall, "worker": seed % 3, "metrics": {"max_err": err, "job_s": wall}}


class Compare(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.a, self.b = os.path.join(self.tmp.name, "a"), os.path.join(self.tmp.name, "b")
        write(self.a, [case(s) for s in range(4)])

    def tearDown(self):
        self.tmp.cleanup()

    def test_order_and_measured_fields_do_not_count(self):
        write(self.b, [case(s, wall=0.5, detail="ok in 2.0 ms") for s in (3, 1, 0, 2)])
        self.assertEqual(msr.compare(self.a, self.b), "equal (4 cases)")

    def test_a_metric_difference_is_named(self):
        write(self.b, [case(s, err=2e-6 if s == 2 else 1e-6) for s in range(4)])
        out = msr.compare(self.a, self.b)
        self.assertTrue(out.startswith("outcomes equal, metrics differ (4 vs 4 cases, 1 differ)"), out)
        self.assertIn("0001-x fix metric max_err: 1", out)

    def test_an_outcome_difference_or_a_missing_case_is_different(self):
        write(self.b, [case(s, outcome="FAIL" if s == 1 else "PASS") for s in range(3)])
        out = msr.compare(self.a, self.b)
        self.assertTrue(out.startswith("DIFFERENT (4 vs 3 cases, 2 differ)"), out)
        self.assertIn("0001-x fix outcome: 1", out)
        self.assertIn("0001-x fix missing: 1", out)


if __name__ == "__main__":
    unittest.main()
