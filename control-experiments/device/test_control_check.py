#!/usr/bin/env python3
"""Unit tests of control_check.py on fixed inputs (no GPU, no causeway). Run: python3 test_control_check.py"""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import control_check as cc  # noqa: E402


class Truth(unittest.TestCase):
    def test_overlapped_and_serialised(self):
        s = {("a", "both"): [2100, 2200, 2150], ("a", "x"): [2050], ("a", "y"): [2040],
             ("a", "none"): [30], ("b", "both"): [4100], ("b", "x"): [2050],
             ("b", "y"): [2040], ("b", "none"): [30]}
        a = cc.truth_of(s, "a")
        # (2050 + 2040 - 30 - 2150) / (2040 - 30) = 1910 / 2010
        self.assertAlmostEqual(a["overlap"], 1910 / 2010)
        self.assertEqual(a["verdict"], "overlapped")
        self.assertEqual(a["serial_us"], 4060)
        self.assertEqual(a["parallel_us"], 2050)
        b = cc.truth_of(s, "b")
        self.assertEqual(b["overlap"], 0.0)  # clamped: both took longer than the sum
        self.assertEqual(b["verdict"], "serialised")
        self.assertIsNone(cc.truth_of(s, "c"))

    def test_lower_median(self):
        self.assertEqual(cc.lower_median([3, 1, 2, 4]), 2)
        self.assertIsNone(cc.lower_median([]))


class Judge(unittest.TestCase):
    def test_marks(self):
        # Removed overlap: must be flagged.
        self.assertEqual(cc.judge(0.95, 0.05, "does-not-survive")[:2], ("does-not-survive", True))
        self.assertEqual(cc.judge(0.95, 0.05, "holds")[:2], ("does-not-survive", False))
        # True serialisation, seen as such: a flag is wrong.
        self.assertEqual(cc.judge(0.0, 0.02, "does-not-survive")[:2], ("holds", False))
        self.assertEqual(cc.judge(0.0, 0.02, "holds")[:2], ("holds", True))
        # Invented overlap: not detectable, expected holds.
        exp, right, case = cc.judge(0.0, 0.9, "holds")
        self.assertEqual((exp, right), ("holds", True))
        self.assertIn("invented", case)
        self.assertEqual(cc.judge(0.5, None, "not-tested"), (None, None, "n/a"))
        self.assertEqual(cc.judge(None, 0.5, "holds"), (None, None, "no truth"))


class EndToEnd(unittest.TestCase):
    def test_table_from_files(self):
        with tempfile.TemporaryDirectory() as d:
            truth = os.path.join(d, "truth.tsv")
            with open(truth, "w") as f:
                for part, v in (("both", 2100), ("x", 2050), ("y", 2040), ("none", 30)):
                    f.write(f"a {part} 1 {v}\n")
                f.write("garbage line\n")
            jd = os.path.join(d, "json")
            os.mkdir(jd)
            doc = {"claims": [
                {"id": "step_time", "mark": "does-not-survive"},
                {"id": "copy_compute_overlap", "mark": "does-not-survive",
                 "instrumented": {"min": 0.0, "median": 0.0, "max": 0.01},
                 "control": {"min": 0.9, "median": 0.92, "max": 0.95}}],
                "step_time_ratio": {"min": 1.9, "median": 1.95, "max": 2.0}}
            with open(os.path.join(jd, "events-a.json"), "w") as f:
                json.dump(doc, f)
            with open(os.path.join(jd, "l2-a.json"), "w") as f:
                json.dump({"claims": [{"id": "copy_compute_overlap", "mark": "not-tested"}]}, f)
            with open(os.path.join(jd, "cupti-a.json"), "w") as f:
                f.write("{not json")
            truths, rows = cc.analyse(truth, jd)
            self.assertEqual([r["config"] for r in rows], ["l2", "cupti", "events"])
            ev = rows[2]
            self.assertTrue(ev["right"])
            self.assertEqual(ev["expected"], "does-not-survive")
            self.assertIsNone(rows[0]["right"])
            self.assertIn("unreadable", rows[1]["error"])
            text = cc.render(truths, rows)
            self.assertIn("| a | events | copy_compute_overlap | 0.00/0.00/0.01 | 0.90/0.92/0.95 |",
                          text)
            self.assertIn("marks judged: 1, right: 1, wrong: 0", text)
            out_md, out_js = os.path.join(d, "s.md"), os.path.join(d, "s.json")
            self.assertEqual(cc.main(["x", truth, jd, "--md", out_md, "--json", out_js]), 0)
            with open(out_js) as f:
                self.assertEqual(json.load(f)["tolerance"], cc.TOL)


if __name__ == "__main__":
    unittest.main()
