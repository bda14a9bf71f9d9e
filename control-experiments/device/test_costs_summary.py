#!/usr/bin/env python3
"""Tests of costs_summary.py on fixed inputs (no GPU): pairing by round, ratios, the profiler ratio,
entries per step, checksum agreement and disagreement."""
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import costs_summary as cs  # noqa: E402


def tsv(rows):
    f = tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False)
    f.write("section\tround\tarm\tkey\tvalue\n")
    for r in rows:
        f.write("\t".join(str(x) for x in r) + "\n")
    f.close()
    return f.name


def summary(rows):
    out = io.StringIO()
    cs.summarize(cs.load(tsv(rows)), out)
    return out.getvalue()


class CostsSummary(unittest.TestCase):
    def test_pairs_by_round_and_reports_the_profiler_ratio(self):
        rows = []
        # Round r: bare 10+r, profiler +5, level2 +1 (so the ratio is 5), the drift cancels in pairs.
        for r in (1, 2, 3):
            rows += [("tiny", r, "bare", "tiny_us_per_op", 10 + r),
                     ("tiny", r, "profiler", "tiny_us_per_op", 15 + r),
                     ("tiny", r, "level2", "tiny_us_per_op", 11 + r)]
        s = summary(rows)
        self.assertIn("level2      n=3  12.000 / 13.000 / 14.000", s)
        self.assertIn("added 1.000 / 1.000 / 1.000", s)
        self.assertIn("profiler added / this added = 5.00", s)
        # The ratio arm/bare is paired per round: (11+r)/(10+r) = 1.091, 1.083, 1.077.
        self.assertIn("x bare 1.077 / 1.083 / 1.091", s)

    def test_unpaired_rounds_are_left_out(self):
        rows = [("decode", 1, "bare", "decode_b1_ms", 2.0),
                ("decode", 2, "level2", "decode_b1_ms", 3.0),
                ("decode", 1, "level2", "decode_b1_ms", 2.2)]
        s = summary(rows)
        self.assertIn("added 0.200 / 0.200 / 0.200", s)

    def test_entries_per_step_and_checksums(self):
        rows = [("decode", 1, "level2", "entries", 1000), ("decode", 1, "level2", "steps", 10),
                ("decode", 2, "level2", "entries", 3000), ("decode", 2, "level2", "steps", 20),
                ("decode", 1, "level2", "dropped", 0),
                ("decode", 1, "bare", "checksum", "checksum:_tokens=5"),
                ("decode", 1, "level2", "checksum", "checksum:_tokens=5")]
        s = summary(rows)
        self.assertIn("level2      125.0 entries/step, dropped 0", s)
        self.assertIn("checksums: identical in every run", s)
        rows.append(("decode", 2, "level2", "checksum", "checksum:_tokens=6"))
        self.assertIn("checksums DIFFER", summary(rows))

    def test_pressure_rows(self):
        rows = [("pressure", 1, "bare", "ring64_drop_x0.9_calls_per_s", 4e7),
                ("pressure", 1, "shim", "ring64_drop_x0.9_calls_per_s", 2e7),
                ("pressure", 1, "shim", "ring64_drop_x0.9_dropped", 0)]
        s = summary(rows)
        self.assertIn("x bare 0.500 / 0.500 / 0.500", s)
        self.assertIn("shim ring64_drop_x0.9_dropped: 0 / 0 / 0", s)

    def test_bad_values_are_skipped_not_fatal(self):
        s = summary([("copy", 1, "bare", "copy_step_ms", "nan?"), ("copy", 1, "bare", "copy_step_ms", 5)])
        self.assertIn("bare        n=1  5.000 / 5.000 / 5.000", s)


if __name__ == "__main__":
    unittest.main()
