#!/usr/bin/env python3
"""test_compare_counts.py: CPU-only tests of compare_counts.py on fake JSON.

Run: python3 -m unittest control-experiments/device/test_compare_counts.py
(or python3 control-experiments/device/test_compare_counts.py)
"""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_counts  # noqa: E402

SPINE = {
    "spine_fill": 1,
    "_Z15producer_kernelPjji": 10,
    "_Z15consumer_kernelPKjPji": 10,
    "_Z11axpy_kernelIjEvPT_PKS0_S0_i": 4,
    "_Z12scale_kernelPjji": 7,
    "graph_stage1": 5,
    "_ZN5spine12graph_stage3EPji": 5,
    "_Z13reduce_kernelPKjPyi": 1,
}
GRAPH = {"_Z12scale_kernelPjji": 5, "graph_stage1": 5, "_ZN5spine12graph_stage3EPji": 5}
# Launch calls: each kernel captured into the graph is launched once during capture.
API_CALLS = {k: v - GRAPH.get(k, 0) + (1 if k in GRAPH else 0) for k, v in SPINE.items()}


def report(kernels, dropped=0, torn=0):
    return {
        "processes": [{"pid": 1, "entries": 100, "dropped": dropped, "torn": torn}],
        "apis": [{"name": "cuLaunchKernel", "calls": 3, "errors": 0, "total_ns": 10}],
        "kernels": [{"name": k, "launches": v} for k, v in kernels.items()],
    }


class CompareCounts(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, obj):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            json.dump(obj, f)
        return path

    @staticmethod
    def read(path):
        with open(path) as f:
            return f.read()

    def run_cc(self, *args):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
            rc = compare_counts.main(list(args))
        return rc, buf.getvalue()

    def test_all_match(self):
        cw = self.write("cw.json", report(SPINE))
        cu = self.write("cu.json", {"kernels": SPINE, "dropped": 0, "records": 43})
        ex = self.write("ex.json", {"kernels": SPINE, "graph": GRAPH, "total": 43})
        md = os.path.join(self.tmp.name, "out.md")
        rc, out = self.run_cc("--title", "spine", "--causeway", cw, "--cupti", cu,
                              "--expected", ex, "--markdown", md)
        self.assertEqual(rc, 0, out)
        self.assertIn("result=PASS", out.splitlines()[-1])
        self.assertIn("cupti_total=43 expected_total=43 causeway_total=43", out)
        text = self.read(md)
        self.assertIn("| `_Z12scale_kernelPjji` | 7 | 7 | 7 | yes |", text)
        self.assertIn("result: **PASS**", text)

    def test_demangled_report_names_match_by_symbol(self):
        # The report shows demangled names and keeps the mangled symbol CUPTI counts under.
        rep = report(SPINE)
        for row in rep["kernels"]:
            if row["name"] == "_Z12scale_kernelPjji":
                row["symbol"] = row["name"]
                row["name"] = "scale_kernel(unsigned int*, unsigned int, int)"
        cw = self.write("cw.json", rep)
        cu = self.write("cu.json", {"kernels": SPINE, "dropped": 0, "records": 43})
        rc, out = self.run_cc("--title", "spine", "--causeway", cw, "--cupti", cu)
        self.assertEqual(rc, 0, out)
        self.assertIn("result=PASS", out.splitlines()[-1])

    def test_graph_kernels_missing_in_causeway(self):
        cw_counts = dict(SPINE)
        for k, g in GRAPH.items():
            cw_counts[k] -= g
        cw_counts = {k: v for k, v in cw_counts.items() if v}
        cw = self.write("cw.json", report(cw_counts))
        cu = self.write("cu.json", {"kernels": SPINE, "dropped": 0})
        ex = self.write("ex.json", {"kernels": SPINE, "graph": GRAPH})
        rc, out = self.run_cc("--causeway", cw, "--cupti", cu, "--expected", ex)
        self.assertEqual(rc, 1)
        self.assertIn("mismatched=3", out)
        self.assertIn("_Z12scale_kernelPjji: cupti=7 expected=7 causeway=2", out)
        self.assertIn("graph_stage1: cupti=5 expected=5 causeway=-", out)
        self.assertIn("[5 of the expected launches are CUDA graph nodes]", out)
        self.assertNotIn("launch API calls", out)  # no api_calls given

    def test_api_call_view(self):
        cu = self.write("cu.json", {"kernels": SPINE, "dropped": 0})
        ex = self.write("ex.json", {"kernels": SPINE, "graph": GRAPH, "api_calls": API_CALLS})
        # causeway counts launch calls (captured ones once, replays not expanded)
        cw = self.write("cw.json", report(API_CALLS))
        rc, out = self.run_cc("--causeway", cw, "--cupti", cu, "--expected", ex)
        self.assertEqual(rc, 1)
        self.assertIn("note: causeway's counts equal the program's launch API calls", out)
        # causeway misses something else as well
        cw = self.write("cw2.json", report(dict(API_CALLS, spine_fill=0)))
        rc, out = self.run_cc("--causeway", cw, "--cupti", cu, "--expected", ex)
        self.assertEqual(rc, 1)
        self.assertIn("match neither the kernel executions nor", out)
        # all correct: no note at all
        cw = self.write("cw3.json", report(SPINE))
        rc, out = self.run_cc("--causeway", cw, "--cupti", cu, "--expected", ex)
        self.assertEqual(rc, 0, out)
        self.assertNotIn("note:", out)

    def test_extra_name_in_causeway(self):
        cw = self.write("cw.json", report(dict(SPINE, extra_kernel=2)))
        cu = self.write("cu.json", {"kernels": SPINE, "dropped": 0})
        rc, out = self.run_cc("--causeway", cw, "--cupti", cu)
        self.assertEqual(rc, 1)
        self.assertIn("extra_kernel: cupti=- causeway=2", out)

    def test_expected_is_partial(self):
        # A name the program does not list is not a mismatch against "expected".
        cw = self.write("cw.json", report(dict(SPINE, other=1)))
        ex = self.write("ex.json", {"kernels": SPINE, "graph": GRAPH})
        rc, out = self.run_cc("--causeway", cw, "--expected", ex)
        self.assertEqual(rc, 0, out)

    def test_profiler_totals_only(self):
        cw = self.write("cw.json", report({"_Z3fooi": 3, "bar": 2}))
        cu = self.write("cu.json", {"kernels": {"_Z3fooi": 3, "bar": 2}, "dropped": 0})
        prof_ok = self.write("p1.json", {"foo(int)": 3, "bar": 2})
        prof_bad = self.write("p2.json", {"foo(int)": 3, "bar": 1})
        rc, out = self.run_cc("--causeway", cw, "--cupti", cu, "--profiler", prof_ok)
        self.assertEqual(rc, 0, out)
        self.assertIn("torch.profiler total: 5 launches of 2 kernels", out)
        self.assertIn("profiler_total=5", out)
        rc, out = self.run_cc("--causeway", cw, "--cupti", cu, "--profiler", prof_bad)
        self.assertEqual(rc, 1)
        self.assertIn("MISMATCH", out)
        self.assertIn("note: torch.profiler total 4 != cupti total 5", out)

    def test_dropped_and_torn_fail(self):
        cw = self.write("cw.json", report(SPINE, dropped=1))
        cu = self.write("cu.json", {"kernels": SPINE, "dropped": 0})
        rc, out = self.run_cc("--causeway", cw, "--cupti", cu)
        self.assertEqual(rc, 1)
        self.assertIn("problem: causeway lost entries: dropped=1 torn=0", out)
        cw = self.write("cw2.json", report(SPINE))
        cu = self.write("cu2.json", {"kernels": SPINE, "dropped": 4})
        rc, out = self.run_cc("--causeway", cw, "--cupti", cu)
        self.assertEqual(rc, 1)
        self.assertIn("CUPTI dropped 4 records", out)

    def test_duplicate_names_are_summed(self):
        doc = report({})
        doc["kernels"] = [{"name": "k", "launches": 2}, {"name": "k", "launches": 3}]
        cw = self.write("cw.json", doc)
        cu = self.write("cu.json", {"kernels": {"k": 5}, "dropped": 0})
        rc, out = self.run_cc("--causeway", cw, "--cupti", cu)
        self.assertEqual(rc, 0, out)

    def test_bad_inputs(self):
        cu = self.write("cu.json", {"kernels": SPINE})
        rc, out = self.run_cc("--causeway", os.path.join(self.tmp.name, "nope.json"),
                              "--cupti", cu)
        self.assertEqual(rc, 2)
        self.assertIn("result=ERROR", out)
        bad = os.path.join(self.tmp.name, "bad.json")
        with open(bad, "w") as f:
            f.write("{not json")
        rc, _ = self.run_cc("--causeway", bad, "--cupti", cu)
        self.assertEqual(rc, 2)
        cw = self.write("cw.json", {"kernels": [{"name": "k", "launches": "3"}]})
        rc, _ = self.run_cc("--causeway", cw, "--cupti", cu)
        self.assertEqual(rc, 2)

    def test_markdown_escapes_pipes(self):
        name = "weird|name"
        cw = self.write("cw.json", report({name: 1}))
        cu = self.write("cu.json", {"kernels": {name: 1}, "dropped": 0})
        md = os.path.join(self.tmp.name, "o.md")
        rc, _ = self.run_cc("--causeway", cw, "--cupti", cu, "--markdown", md)
        self.assertEqual(rc, 0)
        self.assertIn("`weird\\|name`", self.read(md))


if __name__ == "__main__":
    unittest.main()
