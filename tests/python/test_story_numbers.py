"""test_story_numbers: tools/stories/story_numbers.py finds the generated blocks of the incidents' READMEs, names the figure
that differs, rejects malformed markers; and, with a lab binary ($LAB_BIN or build/lab), a copy of a README whose
generated figure was edited fails the check, naming the README, the block and the figure, while the unedited copy
and an edit outside the block pass."""

import io
import os
import re
import shutil
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
import tools_path  # noqa: E402,F401
import story_numbers as sn  # noqa: E402

TEMPLATE = ("Over seeds {first} to {last} the share stays between {lo} and {hi}, on {every}.\n\n"
            "| T | max |\n|---|---|\n| 100 | {t100} |")
FIGS = {"first": "1", "last": "64", "lo": "0.49578", "hi": "0.50186", "every": "each seed", "t100": "4.3e-06"}


def run_main(argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = sn.main(argv)
    return rc, out.getvalue(), err.getvalue()


class Templates(unittest.TestCase):
    def test_equal_text_has_no_difference(self):
        self.assertEqual(sn.differences(TEMPLATE, FIGS, sn.fill(TEMPLATE, FIGS)), [])

    def test_a_changed_figure_is_named(self):
        text = sn.fill(TEMPLATE, FIGS).replace("0.50186", "0.50187").replace("4.3e-06", "4.4e-06")
        self.assertEqual(sn.differences(TEMPLATE, FIGS, text),
                         [("hi", "0.50187", "0.50186"), ("t100", "4.4e-06", "4.3e-06")])

    def test_edited_prose_is_not_a_figure(self):
        text = sn.fill(TEMPLATE, FIGS).replace("the share stays", "the share remains")
        self.assertIsNone(sn.differences(TEMPLATE, FIGS, text))

    def test_line_breaks_alone(self):
        text = sn.fill(TEMPLATE, FIGS).replace("share stays", "share\nstays")
        self.assertEqual(sn.differences(TEMPLATE, FIGS, text), [(None, None, None)])

    def test_wrap_keeps_tables_and_indents_list_items(self):
        text = sn.wrap("- " + "word " * 40 + "\n- short\n\n| a | b |\n|---|---|")
        lines = text.split("\n")
        self.assertTrue(all(len(ln) <= sn.WIDTH for ln in lines))
        self.assertTrue(lines[1].startswith("  word"))
        self.assertIn("- short", lines)
        self.assertEqual(lines[-2:], ["| a | b |", "|---|---|"])

    def test_formats(self):
        self.assertEqual(sn.f_sig(0.16, 3), "0.160")
        self.assertEqual(sn.f_sig(-0.190405, 3), "-0.190")
        self.assertEqual(sn.f_sig(0.99969, 3), "1.00")
        self.assertEqual(sn.f_int(1633750), "1,633,750")
        self.assertEqual(sn.f_plain(1028.5), "1029")
        self.assertEqual(sn.f_e(1.4e-6), "1.4e-06")
        self.assertEqual(sn.f_e_short(82172.8, 3), "8.22e4")
        self.assertEqual(sn.f_pct(0.0164), "1.6%")
        self.assertEqual(sn.f_pct(0.1518), "15%")


class Readmes(unittest.TestCase):
    def parse(self, text):
        return sn.parse_readme("R.md", text.split("\n"))

    def test_markers(self):
        f = self.parse("a\n<!-- generated: x-1 (build/lab replay --seed 1) -->\nbody\nmore\n<!-- end generated -->\nb")
        self.assertEqual([(b.name, b.command, b.text, b.begin, b.end) for b in f],
                         [("x-1", "build/lab replay --seed 1", "body\nmore", 2, 5)])

    def test_malformed(self):
        for text, want in (("<!-- generated: x (c) -->\nbody", "R.md:1: block x has no"),
                           ("<!-- end generated -->", "R.md:1: '<!-- end generated -->' without a block"),
                           ("<!-- generated: x (c) -->\n<!-- generated: y (c) -->", "R.md:2: block y starts inside"),
                           ("<!-- generated: x -->", "R.md:1: malformed marker"),
                           ("<!-- generated: x (c) -->\n<!-- end generated -->\n"
                            "<!-- generated: x (c) -->\n<!-- end generated -->", "block x appears 2 times")):
            with self.assertRaises(sn.UsageError) as cm:
                self.parse(text)
            self.assertIn(want, str(cm.exception))

    def test_every_block_is_in_its_readme(self):
        todo = sn.plan({b.name: b for b in sn.BLOCKS}, None, [])
        found = {fb.name for _p, _l, pairs in todo for fb, _b in pairs}
        self.assertEqual(found, {b.name for b in sn.BLOCKS})
        self.assertEqual({b.incident[:4] for b in sn.BLOCKS}, {"%04d" % i for i in range(1, 9)},
                         "a block for every incident")

    def test_unknown_block_and_missing_block(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        path = os.path.join(d, "README.md")
        with open(path, "w") as f:
            f.write("<!-- generated: no-such-block (c) -->\nx\n<!-- end generated -->\n")
        rc, _out, err = run_main(["check", "--readme", path])
        self.assertEqual(rc, 2)
        self.assertIn("block no-such-block is not defined", err)
        rc, _out, err = run_main(["check", "--only", "no-such-block"])
        self.assertEqual(rc, 2)
        self.assertIn("--only no-such-block: no such block", err)


LAB = os.environ.get("LAB_BIN") or os.path.join(sn.ROOT, "build", "lab")
LAB = LAB if os.path.isabs(LAB) else os.path.join(sn.ROOT, LAB)
BLOCK = "0004-nan-share"  # the cheapest block: 64 cases of about 20 ms


@unittest.skipUnless(os.access(LAB, os.X_OK), "no lab binary (%s): make, or set LAB_BIN" % LAB)
class CheckAgainstTheLab(unittest.TestCase):
    """The check on a copy of 0004's README: it passes as committed, fails on an edited figure (naming the README,
    the block and the figure), fails on edited prose inside the block, and ignores edits outside it; write repairs
    the copy."""

    def setUp(self):
        self.d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.d)
        self.copy = os.path.join(self.d, "README.md")
        shutil.copy(os.path.join(sn.ROOT, "incidents", "0004-pow-grad-nan", "README.md"), self.copy)
        with open(self.copy) as f:
            self.text = f.read()

    def check(self):
        return run_main(["check", "--lab", LAB, "--readme", self.copy, "--only", BLOCK])

    def edit(self, old, new, inside=True):
        block = self.text[self.text.index("<!-- generated: " + BLOCK):self.text.index("<!-- end generated -->")]
        self.assertEqual(old in block, inside, old)
        with open(self.copy, "w") as f:
            f.write(self.text.replace(old, new, 1))

    def test_committed_copy_passes(self):
        rc, out, err = self.check()
        self.assertEqual(rc, 0, err)
        self.assertIn("1 generated blocks match", out)

    def test_an_edited_figure_fails_and_is_named(self):
        m = re.search(r"at seed 1, (\d+) of", self.text)
        self.edit(m.group(0), "at seed 1, %d of" % (int(m.group(1)) + 1))
        rc, _out, err = self.check()
        self.assertEqual(rc, 1, err)
        self.assertIn(self.copy, err)
        self.assertIn("block %s: figure n1: the README says '%d', the code measures '%s'" % (
            BLOCK, int(m.group(1)) + 1, m.group(1)), err)

    def test_edited_prose_in_the_block_fails(self):
        self.edit("no other", "nothing else")
        rc, _out, err = self.check()
        self.assertEqual(rc, 1, err)
        self.assertIn("the text differs outside its figures", err)

    def test_an_edit_outside_the_block_passes(self):
        self.edit("Training gradients came back", "Gradients came back", inside=False)
        rc, _out, err = self.check()
        self.assertEqual(rc, 0, err)

    def test_write_repairs_the_copy(self):
        self.edit("no other", "nothing else")
        rc, _out, err = run_main(["write", "--lab", LAB, "--readme", self.copy, "--only", BLOCK])
        self.assertEqual(rc, 0, err)
        with open(self.copy) as f:
            self.assertEqual(f.read(), self.text)


if __name__ == "__main__":
    unittest.main()
