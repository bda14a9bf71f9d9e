#!/usr/bin/env python3
"""Unit tests of distortion_check.py on fixed inputs (no GPU, no causeway). Run: python3 test_distortion_check.py"""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import distortion_check as dc  # noqa: E402


def doc(ins, bound, mark, resolution, detects_below=None, ratio=(1.0, 1.01, 1.02)):
    """One `causeway control --json` document with an overlap claim."""
    sp = lambda t: {"n": 5, "min": t[0], "median": t[1], "max": t[2]}
    return {
        "claims": [
            {"id": "step_time", "mark": "holds"},
            {"id": "copy_compute_overlap", "instrumented": sp(ins), "control": sp(bound),
             "mark": mark, "effect": {"estimate": 0, "low": 0, "high": 0, "resolution": resolution},
             "detects_below": detects_below},
        ],
        "step_time_ratio": sp(ratio),
        "busy_times_from": "durations",
        "notes": [],
    }


class Table(unittest.TestCase):
    def rows(self, docs, truth_lines):
        with tempfile.TemporaryDirectory() as d:
            truth = os.path.join(d, "truth.tsv")
            with open(truth, "w") as f:
                f.write("\n".join(truth_lines) + "\nnot a line\n")
            jd = os.path.join(d, "json")
            os.mkdir(jd)
            for (case, cfg), body in docs.items():
                with open(os.path.join(jd, f"{case.replace(':', '-')}--{cfg}.json"), "w") as f:
                    json.dump(body, f)
            return {(r["case"], r["config"]): r for r in dc.analyse(truth, jd)}

    def test_categories_and_judgements(self):
        case = "a:80:4096"
        truth = [f"{case} both 1 92", f"{case} x 1 83", f"{case} y 1 90", f"{case} none 1 3"]
        r = self.rows({
            (case, "cupti"): doc((0.96, 0.97, 0.98), (0.85, 0.86, 0.87), "holds", 0.02, 0.84),
            # Removed (0.97 -> 0.67), flagged: right.
            (case, "contended"): doc((0.6, 0.67, 0.7), (0.85, 0.89, 0.89), "does-not-survive", 0.04, 0.85),
            # Removed but not flagged, with the bound stating it cannot reach 0.67: missed, as stated.
            (case, "events"): doc((0.6, 0.67, 0.7), (0.5, 0.55, 0.6), "holds", 0.04, 0.51),
            # Invented (reads 0.99 > 0.97 by more than the noise): holds is right.
            (case, "events16"): doc((0.99, 1.0, 1.0), (0.85, 0.86, 0.87), "holds", 0.01, 0.85),
        }, truth)
        self.assertEqual(r[(case, "cupti")]["category"], "faithful")
        self.assertTrue(r[(case, "cupti")]["right"])
        self.assertEqual(r[(case, "contended")]["category"], "removed")
        self.assertTrue(r[(case, "contended")]["right"])
        e = r[(case, "events")]
        self.assertEqual((e["category"], e["right"], e["missed_as_stated"]), ("removed", False, True))
        i = r[(case, "events16")]
        self.assertEqual((i["category"], i["expected"], i["right"]), ("invented", "holds", True))
        # Wall truth: (83 + 90 - 3 - 92) / (83 - 3) = 78 / 80.
        self.assertAlmostEqual(r[(case, "cupti")]["truth_wall"], 78 / 80)
        text = dc.table(list(r.values()))
        self.assertIn("right: 3, missed as stated: 1, wrong: 0", text)
        self.assertIn("missed, as stated", text)

    def test_a_wrong_flag_is_counted_wrong(self):
        case = "b:80:4096"
        r = self.rows({
            (case, "cupti"): doc((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), "holds", 0.0, 0.0),
            (case, "events"): doc((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), "does-not-survive", 0.0, 0.0),
        }, [])
        self.assertFalse(r[(case, "events")]["right"])
        self.assertIn("wrong: 1", dc.table(list(r.values())))
        self.assertIsNone(r[(case, "events")]["truth_wall"])

    def test_bad_input_exits_2(self):
        self.assertEqual(dc.main(["x", "/nonexistent/truth.tsv", "/nonexistent"]), 2)


if __name__ == "__main__":
    unittest.main()
