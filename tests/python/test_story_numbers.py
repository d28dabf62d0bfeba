"""test_story_numbers: tools/stories/story_numbers.py finds each incident's blocks and pictures in its own story.py,
the generated blocks in the incidents' READMEs and notes, names the figure that differs, rejects malformed markers and
a story.py that does not import; and, with a lab binary ($LAB_BIN or build/lab), a copy of a README whose generated
figure was edited fails the check, naming the README, the block and the figure, while the unedited copy and an edit
outside the block pass; a picture whose file differs from what the code draws, or that its story does not show,
fails the check, and write redraws it."""

import argparse
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

    def test_each_incident_defines_its_own_blocks_and_pictures(self):
        for x in sn.BLOCKS + sn.PICTURES:
            self.assertTrue(os.path.exists(os.path.join(sn.ROOT, "incidents", x.incident, "story.py")), x.name)
        self.assertEqual({p.name for p in sn.PICTURES},
                         {"padding-lanes", "sf-tile", "step-counters", "wait-cycle", "replicas"})

    def test_a_story_py_that_does_not_import_is_named(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        os.makedirs(os.path.join(d, "incidents", "9999-broken"))
        with open(os.path.join(d, "incidents", "9999-broken", "story.py"), "w") as f:
            f.write("import no_such_module\n")
        with self.assertRaises(sn.UsageError) as cm:
            sn.discover(d)
        self.assertIn("incidents/9999-broken/story.py: cannot import: ModuleNotFoundError", str(cm.exception))

    def test_svg_is_the_same_bytes_for_the_same_picture(self):
        def draw():
            svg = sn.Svg(100, 50, "t <&>")
            svg.rect(1.25, 2, 3.5, 4, "#fff")
            svg.text(10, 20, "a < b")
            return svg.svg()
        self.assertEqual(draw(), draw())
        self.assertIn('<rect x="1.2" y="2" width="3.5" height="4"', draw())
        self.assertIn("<title>t &lt;&amp;&gt;</title>", draw())
        self.assertIn(">a &lt; b</text>", draw())

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
        self.assertIn("1 generated blocks and 0 pictures match", out)

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


@unittest.skipUnless(os.access(LAB, os.X_OK), "no lab binary (%s): make, or set LAB_BIN" % LAB)
class PicturesAgainstTheLab(unittest.TestCase):
    """The check of one picture (0007's wait cycle: one case of about 0.3 s) on a copy of its file and of its README:
    it passes as committed, fails when the file is not what the code draws or when the README does not show it, and
    write redraws the file."""

    @classmethod
    def setUpClass(cls):
        cls.pic = [p for p in sn.PICTURES if p.name == "wait-cycle"][0]
        cls.res = sn.measure(LAB, cls.pic.runs, None)

    @classmethod
    def tearDownClass(cls):
        cls.res.close()

    def setUp(self):
        self.d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.d)
        self.svg = os.path.join(self.d, "wait-cycle.svg")
        self.readme = os.path.join(self.d, "README.md")
        shutil.copy(self.pic.path(), self.svg)
        shutil.copy(self.pic.readme(), self.readme)
        d = self.d

        class Copy(sn.Picture):
            def path(self):
                return os.path.join(d, "wait-cycle.svg")

            def readme(self):
                return os.path.join(d, "README.md")
        self.copy = Copy(self.pic.name, self.pic.incident, self.pic.runs, self.pic.draw, self.pic.what)

    def check(self, action="check"):
        out = io.StringIO()
        with redirect_stdout(out):
            return sn.check_pictures(argparse.Namespace(action=action), [self.copy], self.res)

    def test_committed_picture_passes(self):
        self.assertEqual(self.check(), {})

    def test_an_edited_picture_fails_and_write_redraws_it(self):
        with open(self.svg) as f:
            text = f.read()
        with open(self.svg, "w") as f:
            f.write(text.replace("65536", "65537", 1))
        bad = self.check()
        self.assertEqual(list(bad.values()), [["the file is not what the code draws now (make stories redraws it)"]])
        self.assertEqual(self.check("write"), {})
        with open(self.svg) as f:
            self.assertEqual(f.read(), text)

    def test_a_picture_its_story_does_not_show_fails(self):
        with open(self.readme) as f:
            text = f.read()
        with open(self.readme, "w") as f:
            f.write(text.replace("](figures/wait-cycle.svg)", "](figures/other.svg)"))
        bad = self.check()
        self.assertIn("does not show it: add a line '![what it shows](figures/wait-cycle.svg)'",
                      " ".join(m for ms in bad.values() for m in ms))


if __name__ == "__main__":
    unittest.main()
