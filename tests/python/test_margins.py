"""test_margins: tools/dev/margins.py ranks each fix's criterion metrics against their bounds (a per-case bound metric,
a number, a lower bound, a census), names the seed of the max, reads .gz, names the file and line of bad input,
exits 1 when a fix is beyond its bound; and on the committed H100 report every fix stays within its bounds."""

import gzip
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
import tools_path  # noqa: E402,F401
import margins  # noqa: E402

SPECS = {"schema": "lab-report/1", "incidents": [
    {"id": "0001-x", "metric_specs": [
        {"name": "err", "tolerance": 0, "higher_is_worse": True, "tolerance_metric": "tol"},
        {"name": "oob", "tolerance": 0, "higher_is_worse": True}]},
    {"id": "0003-y", "metric_specs": [
        {"name": "cos", "tolerance": 0.9999, "higher_is_worse": False},
        {"name": "l2", "tolerance": 2e-6, "higher_is_worse": True}]},
]}


def rec(inc, var, seed, metrics, role="fix", backend="cpu"):
    return {"incident": inc, "variant": var, "role": role, "seed": seed, "backend": backend, "outcome": "PASS",
            "metrics": metrics}


class Margins(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.TemporaryDirectory()
        with open(os.path.join(self.d.name, "report.json"), "w") as f:
            json.dump(SPECS, f)

    def tearDown(self):
        self.d.cleanup()

    def write(self, recs, name="results.jsonl", gz=False):
        path = os.path.join(self.d.name, name)
        text = "".join(json.dumps(r) + "\n" for r in recs)
        if gz:
            with gzip.open(path, "wt") as f:
                f.write(text)
        else:
            with open(path, "w") as f:
                f.write(text)
        return path

    def run_main(self, args):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = margins.main(args)
        return rc, out.getvalue(), err.getvalue()

    def rows(self, path):
        rc, out, _ = self.run_main([path, "--json"])
        return rc, {(r["incident"], r["variant"], r["metric"]): r for r in map(json.loads, out.splitlines())}

    def test_ratios_quantiles_and_the_seed_of_the_max(self):
        recs = [rec("0001-x", "fix", s, {"err": e, "tol": t, "oob": 0})
                for s, e, t in [(1, 1.0, 4.0), (2, 3.0, 4.0), (3, 2.0, 8.0), (4, 1.5, 2.0)]]
        recs.append(rec("0001-x", "bug", 1, {"err": None, "tol": 4.0, "oob": 7}, role="bug"))
        recs.append(rec("0003-y", "fix", 5, {"cos": 0.99995, "l2": 1e-6}))
        recs.append(rec("0003-y", "fix", 6, {"cos": 1.0, "l2": 5e-7}))
        rc, rows = self.rows(self.write(recs))
        self.assertEqual(rc, 0)
        r = rows[("0001-x", "fix", "err")]
        self.assertEqual(r["n"], 4)
        self.assertAlmostEqual(r["max"], 0.75)      # 3/4 (seed 2) and 1.5/2 (seed 4): the lowest seed is named
        self.assertEqual(r["seed_max"], 2)
        self.assertAlmostEqual(r["median"], 0.25)   # nearest rank of [0.25, 0.25, 0.75, 0.75]
        self.assertEqual(rows[("0001-x", "fix", "oob")]["is_ratio"], False)
        self.assertNotIn(("0001-x", "bug", "err"), rows, "bug variants only with --all-roles")
        self.assertAlmostEqual(rows[("0003-y", "fix", "cos")]["max"], 0.5)  # (1 - 0.99995) / (1 - 0.9999)
        self.assertEqual(rows[("0003-y", "fix", "cos")]["seed_max"], 5)
        self.assertAlmostEqual(rows[("0003-y", "fix", "l2")]["max"], 0.5)

    def test_gz_input_and_all_roles(self):
        recs = [rec("0001-x", "bug", 1, {"err": None, "tol": 4.0, "oob": 7}, role="bug"),
                rec("0001-x", "fix", 1, {"err": 1.0, "tol": 4.0, "oob": 0})]
        path = self.write(recs, "results.jsonl.gz", gz=True)
        rc, out, _ = self.run_main([path, "--json", "--all-roles"])
        self.assertEqual(rc, 0, "a bug beyond its bound is what a bug is")
        rows = {(r["variant"], r["metric"]): r for r in map(json.loads, out.splitlines())}
        self.assertEqual(rows[("bug", "err")]["nonfinite"], 1)
        self.assertEqual(rows[("bug", "oob")]["max"], 7)

    def test_a_fix_beyond_its_bound_or_non_finite_exits_1(self):
        for m in ({"err": 5.0, "tol": 4.0, "oob": 0}, {"err": None, "tol": 4.0, "oob": 0},
                  {"err": 1.0, "tol": 4.0, "oob": 2}):
            rc, _, err = self.run_main([self.write([rec("0001-x", "fix", 9, m)])])
            self.assertEqual(rc, 1, m)
            self.assertIn("0001-x fix cpu", err)

    def test_unrecorded_metrics_are_left_out(self):
        rc, rows = self.rows(self.write([rec("0003-y", "fix", 1, {"l2": 1e-6})]))
        self.assertEqual(rc, 0)
        self.assertNotIn(("0003-y", "fix", "cos"), rows)

    def test_bad_input_names_the_file_and_line(self):
        path = os.path.join(self.d.name, "results.jsonl")
        with open(path, "w") as f:
            f.write(json.dumps(rec("0001-x", "fix", 1, {})) + "\n{not json\n")
        rc, _, err = self.run_main([path])
        self.assertEqual(rc, 2)
        self.assertIn("results.jsonl:2", err)
        with open(path, "w") as f:
            f.write(json.dumps({"incident": "0001-x", "variant": "fix", "role": "fix", "backend": "cpu"}) + "\n")
        rc, _, err = self.run_main([path])
        self.assertEqual(rc, 2)
        self.assertIn("results.jsonl:1: field 'seed' missing", err)
        os.unlink(os.path.join(self.d.name, "report.json"))
        rc, _, err = self.run_main([path])
        self.assertEqual(rc, 2)
        self.assertIn("--specs", err)
        bad = os.path.join(self.d.name, "bad.json")
        with open(bad, "w") as f:
            json.dump({"incidents": {}}, f)
        rc, _, err = self.run_main([path, "--specs", bad])
        self.assertEqual(rc, 2)
        self.assertIn("bad.json: field 'incidents'", err)


if __name__ == "__main__":
    unittest.main()
