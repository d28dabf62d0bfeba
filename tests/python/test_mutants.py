"""test_mutants: the planted regressions of `make mutants` still apply to this tree (each find text exactly once
in its files), so the list does not rot as the code moves; and a mutant that no longer matches is named."""

import os
import sys
import tempfile
import unittest

import tools_path  # noqa: E402,F401
import mutants  # noqa: E402


class MutantsApply(unittest.TestCase):
    def test_every_mutant_applies_once(self):
        self.assertEqual(mutants.check(mutants.ROOT), [])
        self.assertGreaterEqual(len(mutants.MUTANTS), 10)
        kinds = {m["id"][0] for m in mutants.MUTANTS}
        self.assertEqual(kinds, {"K", "C"}, "kernels and core both have mutants")

    def test_a_mutant_that_no_longer_matches_is_named(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "lab"))
            with open(os.path.join(d, "lab", "lab_verdict.c"), "w") as f:
                f.write("size_t bad = 0;\n")
            m = [x for x in mutants.MUTANTS if x["id"] == "C01"]
            saved = mutants.MUTANTS[:]
            try:
                mutants.MUTANTS[:] = m
                problems = mutants.check(d)
            finally:
                mutants.MUTANTS[:] = saved
            self.assertEqual(len(problems), 1)
            self.assertIn("mutant C01", problems[0])
            self.assertIn("occurs 0 times", problems[0])


if __name__ == "__main__":
    unittest.main()
