#!/usr/bin/env python3
"""test_level3_check.py: CPU-only tests of the level-3 proof's pieces on fake data.

  cw_json.py         the scanner's work-in-progress shape and the other shapes it accepts;
                     absent numbers are None, never 0
  level3_check.py    workload (association, durations, clock) and perf, on fake JSON
  cupti_count.c      the real CUPTI parser (cuptiActivityGetNextRecord) on a hand-made
                     activity buffer, through a harness that #includes the file
                     (skipped without the CUPTI/CUDA headers: CUPTI_INC, CUDA_INC, CUPTI_LIBDIR)
  torch_spine.py     kernel_durations_from_trace on a fake chrome trace (skipped without torch)
  tiny_loop.py       bare and --profile on the CPU (skipped without torch)

Run: python3 control-experiments/device/test_level3_check.py
(use a python with torch, e.g. /tmp/torchenv/bin/python, to run the torch parts too)
"""
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
WL = os.path.join(HERE, "..", "workloads")
sys.path.insert(0, HERE)
import cw_json  # noqa: E402
import level3_check  # noqa: E402

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except Exception:  # noqa: BLE001
    HAVE_TORCH = False

FILL = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_"
FILL_DM = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
           "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)")


def scanner_report(kernels, copies=(0, 0), unassoc=0, dropped=0, before=0, min_lat=2500,
                   checked=None):
    """The device section as scanner/src/device.rs (work in progress) serializes it."""
    k = sum(c for c, _ in kernels.values())
    n = k + sum(copies)
    u = {"total": unassoc, "no_call": unassoc, "call_not_in_capture": 0, "wrong_class": 0}
    return {
        "capture": "/x",
        "processes": [{"pid": 7, "entries": 10, "dropped": 0, "torn": 0, "backend": "cupti",
                       "device_intervals": n, "associated": n - unassoc, "unassociated": u,
                       "device_dropped": dropped, "unconverted": 0,
                       "counters": {"device_dropped": dropped}}],
        "kernels": [{"name": name, "launches": c, "device_count": c} for name, (c, _) in kernels.items()],
        "device": {
            "intervals": n, "associated": n - unassoc, "unassociated": u, "unconverted": 0,
            "dropped": dropped, "unknown_kind": 0,
            "clock": {"conversion": "cupti-timestamp-callback", "converted": n, "unconverted": 0,
                      "checked": n if checked is None else checked, "before_call": before,
                      "min_launch_to_start_ns": min_lat},
            "kernels": [{"name": name, "count": c, "total_ns": c * p, "p50_ns": p, "p99_ns": p,
                         "max_ns": p, "latency_count": c, "latency_p50_ns": 1, "latency_p99_ns": 2}
                        for name, (c, p) in kernels.items()],
            "copies": [{"kind": "HtoD", "count": copies[0], "bytes": 4, "total_ns": 1, "p50_ns": 1,
                        "p99_ns": 1, "max_ns": 1},
                       {"kind": "memset", "count": copies[1], "bytes": 4, "total_ns": 1, "p50_ns": 1,
                        "p99_ns": 1, "max_ns": 1}],
        },
        "totals": {"entries": 10},
    }


def cupti_doc(kernels, copies=None, dropped=0):
    d = {"tool": "cupti_count", "record_struct": "CUpti_ActivityKernel10", "records": 0,
         "dropped": dropped, "overflow": 0, "errors": 0,
         "kernels": {n: c for n, (c, _) in kernels.items()},
         "memcpy": copies[0] if copies else 0, "memset": copies[1] if copies else 0,
         "copies": 1 if copies else 0, "bad_times": 0,
         "durations": {n: {"count": c, "p50_ns": p, "mean_ns": p, "min_ns": p, "max_ns": p}
                       for n, (c, p) in kernels.items()}}
    d["records"] = sum(d["kernels"].values())
    return d


class CwJson(unittest.TestCase):
    def test_scanner_shape(self):
        rep = scanner_report({"a": (3, 1000), "b": (2, 500)}, copies=(4, 1), unassoc=0, before=0,
                             min_lat=1234)
        st = cw_json.causeway_device_stats(rep)
        self.assertEqual(st, {"a": {"count": 3, "p50_ns": 1000, "total_ns": 3000},
                              "b": {"count": 2, "p50_ns": 500, "total_ns": 1000}})
        s = cw_json.causeway_device_summary(rep)
        self.assertEqual(s, {"intervals": 10, "unassociated": 0, "device_dropped": 0,
                             "causality_negative": 0, "min_latency_ns": 1234})
        x = cw_json.causeway_device_extras(rep)
        self.assertEqual((x["memcpy"], x["memset"], x["checked"], x["backend"]), (4, 1, 10, "cupti"))
        self.assertEqual(x["conversion"], "cupti-timestamp-callback")

    def test_scanner_test_fixture(self):
        """The JSON cli/tests/device.rs (json_has_the_device_fields) asserts, two processes."""
        u1 = {"total": 1, "no_call": 1, "call_not_in_capture": 0, "wrong_class": 0}
        proc = {"pid": 1000, "level": 3, "backend": "cupti", "device_intervals": 3, "associated": 2,
                "unassociated": u1, "device_dropped": 1, "unconverted": 0,
                "counters": {"device_dropped": 1, "end_lost": 0}}
        rep = {"processes": [proc, dict(proc, pid=1001)],
               "kernels": [{"name": "gemm", "launches": 2, "device_count": 4}],
               "device": {"intervals": 6, "associated": 4,
                          "unassociated": {"total": 2, "no_call": 2, "call_not_in_capture": 0,
                                           "wrong_class": 0},
                          "unconverted": 0, "untimed": 0, "dropped": 2, "unknown_kind": 0,
                          "clock": {"conversion": "cupti-timestamp-callback", "converted": 6,
                                    "unconverted": 0, "checked": 4, "before_call": 0,
                                    "min_launch_to_start_ns": 1000},
                          "kernels": [{"name": "gemm", "count": 4, "total_ns": 2200, "p50_ns": 100,
                                       "p99_ns": 1000, "max_ns": 1000, "latency_count": 2,
                                       "latency_p50_ns": 3000, "latency_p99_ns": 4000}],
                          "copies": [{"kind": "HtoD", "count": 2, "bytes": 8192, "total_ns": 500,
                                      "p50_ns": 250, "p99_ns": 250, "max_ns": 250}]}}
        self.assertEqual(cw_json.causeway_device_stats(rep),
                         {"gemm": {"count": 4, "p50_ns": 100, "total_ns": 2200}})
        self.assertEqual(cw_json.causeway_device_summary(rep),
                         {"intervals": 6, "unassociated": 2, "device_dropped": 2,
                          "causality_negative": 0, "min_latency_ns": 1000})
        x = cw_json.causeway_device_extras(rep)
        self.assertEqual((x["memcpy"], x["memset"], x["checked"]), (2, 0, 4))
        # Without the device section, the per-process numbers (summed) stand in.
        del rep["device"]
        s = cw_json.causeway_device_summary(rep)
        self.assertEqual((s["intervals"], s["unassociated"], s["device_dropped"]), (6, 2, 2))
        self.assertEqual(cw_json.causeway_device_stats(rep),
                         {"gemm": {"count": 4, "p50_ns": None, "total_ns": None}})

    def test_unassociated_object_and_path_and_text(self):
        rep = scanner_report({"a": (3, 1000)}, unassoc=2, dropped=5, before=1, min_lat=-40)
        s = cw_json.causeway_device_summary(json.dumps(rep))
        self.assertEqual((s["unassociated"], s["device_dropped"], s["causality_negative"],
                          s["min_latency_ns"]), (2, 5, 1, -40))
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(rep, f)
        try:
            self.assertEqual(cw_json.causeway_device_summary(f.name), s)
        finally:
            os.unlink(f.name)

    def test_absent_is_none_not_zero(self):
        rep = {"processes": [{"pid": 1, "entries": 5}], "kernels": [{"name": "a", "launches": 9}]}
        self.assertEqual(cw_json.causeway_device_stats(rep), {})  # host launches never count
        s = cw_json.causeway_device_summary(rep)
        self.assertEqual(s, {k: None for k in ("intervals", "unassociated", "device_dropped",
                                               "causality_negative", "min_latency_ns")})

    def test_other_shapes(self):
        # {name: row} object, "kind" rows filtered, aliases
        rep = {"device": {"kernels": {"a": {"intervals": 2, "median_ns": 7, "sum_ns": 14},
                                      "cp": {"kind": "memcpy", "count": 3, "p50_ns": 1}}},
               "clock": {"negative": 0, "min_latency_ns": 99},
               "processes": [{"device_intervals": 3, "unassociated": 0, "device_dropped": 0},
                             {"device_intervals": 4, "unassociated": 1,
                              "counters": {"device_dropped": 2}}]}
        self.assertEqual(cw_json.causeway_device_stats(rep),
                         {"a": {"count": 2, "p50_ns": 7, "total_ns": 14}})
        self.assertEqual(cw_json.causeway_device_summary(rep),
                         {"intervals": 7, "unassociated": 1, "device_dropped": 2,
                          "causality_negative": 0, "min_latency_ns": 99})
        # raw intervals
        rep = {"device": {"intervals": [{"name": "k", "start_ns": 0, "end_ns": 10},
                                        {"name": "k", "start_ns": 5, "end_ns": 35},
                                        {"name": "k", "dur_ns": 20},
                                        {"name": "m", "kind": "memset", "dur_ns": 1}]}}
        self.assertEqual(cw_json.causeway_device_stats(rep),
                         {"k": {"count": 3, "p50_ns": 20, "total_ns": 60}})
        self.assertEqual(cw_json.causeway_device_summary(rep)["intervals"], 4)
        # host rows carrying device numbers; per-process minimum latency
        rep = {"kernels": [{"name": "a", "launches": 9, "device": {"count": 9, "p50_ns": 3}},
                           {"name": "b", "launches": 1, "device_count": 1, "device_p50_ns": 4}],
               "processes": [{"clock": {"min_latency_ns": 50, "negative": 0}},
                             {"clock": {"min_latency_ns": 20, "negative": 1}}]}
        st = cw_json.causeway_device_stats(rep)
        self.assertEqual((st["a"]["count"], st["a"]["p50_ns"], st["b"]["count"], st["b"]["p50_ns"]),
                         (9, 3, 1, 4))
        s = cw_json.causeway_device_summary(rep)
        self.assertEqual((s["min_latency_ns"], s["causality_negative"], s["intervals"]), (20, 1, 10))

    def test_merged_rows(self):
        rep = {"device": {"kernels": [{"name": "a", "count": 1, "p50_ns": 5, "total_ns": 5},
                                      {"name": "a", "count": 3, "p50_ns": 9, "total_ns": 27}]}}
        self.assertEqual(cw_json.causeway_device_stats(rep),
                         {"a": {"count": 4, "p50_ns": 9, "total_ns": 32, "merged": 2}})


class Verdict(unittest.TestCase):
    def test_tolerance(self):
        v = level3_check.verdict
        self.assertEqual(v(110000, 100000, 0.10, 2000)[0], "ok")       # exactly 10 %
        self.assertEqual(v(110001, 100000, 0.10, 2000)[0], "FAIL")
        self.assertEqual(v(3000, 1000, 0.10, 2000)[0], "ok-abs")       # +200 %, but 2 us
        self.assertEqual(v(3001, 1000, 0.10, 2000)[0], "FAIL")
        self.assertEqual(v(21000, 20000, 0.10, 2000)[0], "ok")
        self.assertEqual(v(None, 20000, 0.10, 2000)[0], "missing")
        self.assertEqual(v(5, 0, 0.10, 2000)[0], "ok-abs")

    def test_strip_params(self):
        self.assertEqual(level3_check._strip_params("void f<a (b)>(int, g(h))"), "void f<a (b)>")
        self.assertEqual(level3_check._strip_params("nvjet_x"), "nvjet_x")

    @unittest.skipUnless(shutil.which("c++filt"), "no c++filt")
    def test_match_profiler(self):
        prof = {FILL_DM: {}, "vadd_kernel": {}, "void other<int>(int)": {}}
        m, _ = level3_check.match_profiler([FILL, "vadd_kernel", "_Z5otherIiEvi", "nothing"], prof)
        self.assertEqual(m, {FILL: FILL_DM, "vadd_kernel": "vadd_kernel",
                             "_Z5otherIiEvi": "void other<int>(int)"})


class Workload(unittest.TestCase):
    K = {"a": (10, 20000), "b": (5, 1500), FILL: (3, 3000)}

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, obj):
        p = os.path.join(self.tmp.name, name)
        with open(p, "w") as f:
            json.dump(obj, f)
        return p

    def run_w(self, rep, cupti, prof=None):
        args = ["workload", "--title", "t", "--causeway", self.write("r.json", rep),
                "--cupti", self.write("c.json", cupti),
                "--markdown", os.path.join(self.tmp.name, "o.md")]
        if prof is not None:
            args += ["--profiler-durations", self.write("p.json", prof)]
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
            rc = level3_check.main(args)
        out = buf.getvalue()
        summary = dict(kv.split("=", 1) for kv in out.strip().splitlines()[-1].split()[1:])
        return rc, out, summary

    def test_all_pass(self):
        cw = {"a": (10, 21000), "b": (5, 3400), FILL: (3, 3100)}  # b: +1.9 us = ok-abs
        prof = {"a": {"count": 10, "p50_ns": 20500}, "b": {"count": 5, "p50_ns": 3300},
                FILL_DM: {"count": 3, "p50_ns": 3050}}
        rc, out, s = self.run_w(scanner_report(cw, copies=(2, 1)), cupti_doc(self.K, copies=(2, 1)), prof)
        self.assertEqual(rc, 0, out)
        self.assertEqual((s["assoc"], s["durations"], s["clock"]), ("PASS", "PASS", "PASS"))
        self.assertEqual((s["dur_ok"], s["dur_abs"], s["intervals"], s["cupti_records"]), ("2", "1", "21", "21"))
        if shutil.which("c++filt"):
            self.assertEqual(s["prof_unmatched"], "0")
        self.assertIn("pass only through the 2.00us floor", out)
        with open(os.path.join(self.tmp.name, "o.md")) as f:
            md = f.read()
        self.assertIn("| ok-abs |", md)
        self.assertIn("clock: **PASS**", md)

    def test_count_mismatch_unassoc_dropped(self):
        cw = dict(self.K)
        cw["a"] = (9, 20000)
        rc, out, s = self.run_w(scanner_report(cw, unassoc=1, dropped=2), cupti_doc(self.K))
        self.assertEqual(rc, 1)
        self.assertEqual(s["assoc"], "FAIL")
        self.assertEqual(s["durations"], "PASS")
        self.assertIn("mismatch: a: cupti=10 causeway=9", out)
        self.assertIn("causeway unassociated = 1 (want 0)", out)
        self.assertIn("causeway device_dropped = 2 (want 0)", out)

    def test_interval_total_vs_copies(self):
        rc, out, s = self.run_w(scanner_report(self.K, copies=(2, 0)), cupti_doc(self.K, copies=(2, 1)))
        self.assertEqual(s["assoc"], "FAIL")
        self.assertIn("causeway intervals 20 != CUPTI kernel+memcpy+memset records 21", out)

    def test_duration_fail_and_missing(self):
        cw = {"a": (10, 23000), "b": (5, 1500)}  # a: +15 % and +3 us; FILL missing
        rc, out, s = self.run_w(scanner_report(cw), cupti_doc(self.K))
        self.assertEqual(rc, 1)
        self.assertEqual((s["durations"], s["dur_fail"], s["dur_missing"]), ("FAIL", "1", "1"))

    def test_profiler_fail_counts(self):
        prof = {"a": {"count": 10, "p50_ns": 30000}}
        rc, out, s = self.run_w(scanner_report(self.K), cupti_doc(self.K), prof)
        self.assertEqual((s["durations"], s["prof_fail"]), ("FAIL", "1"))

    def test_clock(self):
        rc, out, s = self.run_w(scanner_report(self.K, before=3, min_lat=-200), cupti_doc(self.K))
        self.assertEqual((rc, s["clock"], s["negative"], s["min_latency_ns"]), (1, "FAIL", "3", "-200"))
        rc, out, s = self.run_w(scanner_report(self.K, min_lat=None, checked=0), cupti_doc(self.K))
        self.assertEqual(s["clock"], "FAIL")
        self.assertIn("nothing was checked", out)

    def test_no_device_section(self):
        rep = {"processes": [{"pid": 1}], "kernels": [{"name": "a", "launches": 10}]}
        rc, out, s = self.run_w(rep, cupti_doc(self.K))
        self.assertEqual(rc, 1)
        self.assertEqual((s["assoc"], s["durations"], s["clock"]), ("FAIL", "FAIL", "FAIL"))
        self.assertIn("does not say unassociated", out)

    def test_input_error(self):
        rc, out, s = self.run_w({"device": {}}, {"no": "kernels"})
        self.assertEqual((rc, s["assoc"]), (2, "ERROR"))


class Perf(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.d = self.tmp.name

    def put(self, arm, r, median, ck="checksum: a0=103000.0 ops=103000 exact"):
        with open(os.path.join(self.d, f"perf-{arm}-{r}.out"), "w") as f:
            f.write(f"rep 0: {median} us/op\ntiny_loop: mode=x n=1 reps=1 min={median} "
                    f"median={median} max={median} us/op\n{ck}\n")

    def run_p(self, *extra):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
            rc = level3_check.main(["perf", "--dir", self.d, "--rounds", "3", *extra])
        out = buf.getvalue()
        return rc, out, dict(kv.split("=", 1) for kv in out.strip().splitlines()[-1].split()[2:])

    def fill(self, l3=(7.0, 6.8, 7.1), bare=(6.0, 5.9, 6.1)):
        for r in range(3):
            self.put("bare", r + 1, bare[r])
            self.put("profiler", r + 1, bare[r] + 9.0)
            self.put("level2", r + 1, bare[r] + 0.3)
            self.put("level3", r + 1, l3[r])

    def test_met(self):
        self.fill()
        rc, out, s = self.run_p()
        self.assertEqual((rc, s["result"]), (0, "MET"), out)
        # added per round: level 3 1.0, 0.9, 1.0 (median 1.0); profiler 9.0 each
        self.assertEqual((s["level3_added"], s["profiler_added"], s["level2_added"]),
                         ("1.000", "9.000", "0.300"))
        self.assertEqual(s["ratio"], "9.00")

    def test_missed_and_inf(self):
        self.fill(l3=(8.0, 7.9, 8.1))
        rc, out, s = self.run_p()
        self.assertEqual((rc, s["result"], s["ratio"]), (1, "MISSED", "4.50"))
        self.fill(l3=(5.9, 5.8, 6.0))
        rc, out, s = self.run_p()
        self.assertEqual((rc, s["result"], s["ratio"]), (0, "MET", "inf"))
        self.assertIn("added nothing measurable", out)

    def test_checksum_and_missing_round(self):
        self.fill()
        self.put("level3", 2, 7.0, ck="checksum: a0=1.0 ops=103000 WRONG")
        os.unlink(os.path.join(self.d, "perf-level2-3.out"))
        rc, out, s = self.run_p()
        self.assertEqual((rc, s["result"]), (1, "INCOMPLETE"))
        self.assertIn("level3 round 2: checksum", out)
        self.assertIn("level2 round 3: no result", out)

    def test_verification(self):
        self.fill()
        l3 = os.path.join(self.d, "l3.json")
        with open(l3, "w") as f:
            json.dump(scanner_report({"add": (100, 1000)}), f)
        l2 = os.path.join(self.d, "l2.json")
        with open(l2, "w") as f:
            json.dump({"kernels": [{"name": "add", "launches": 103000}],
                       "processes": [{"dropped": 0}]}, f)
        rc, out, s = self.run_p("--expect-ops", "103000", "--l3-report", l3, "--l2-report", l2)
        self.assertEqual((rc, s["result"]), (1, "INCOMPLETE"))
        self.assertIn("device intervals=100 (want >= 103000)", out)
        self.assertIn("kernel launches=103000 (want >= 103000) dropped entries=0: yes", out)

    def test_no_data(self):
        rc, out, s = self.run_p()
        self.assertEqual((rc, s["result"]), (2, "INCOMPLETE"))


REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CUPTI_INC = os.environ.get("CUPTI_INC", "/tmp/wheels/cupti/nvidia/cu13/include")
CUDA_INC = os.environ.get("CUDA_INC", "/tmp/cu/nvidia/cu13/include")
CUPTI_LIBDIR = os.environ.get("CUPTI_LIBDIR", "/tmp/wheels/cupti/nvidia/cu13/lib")
HARNESS = r'''
#include "cupti_count.c"
static uint8_t buf[1 << 16] __attribute__((aligned(8)));
static size_t off;
static void kernel(const char *name, uint64_t start, uint64_t end) {
  CUPTI_KERNEL_RECORD *k = (CUPTI_KERNEL_RECORD *)(buf + off);
  memset(k, 0, sizeof *k);
  k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k->start = start;
  k->end = end;
  k->name = name;
  off += (sizeof *k + 7) & ~(size_t)7;
}
int main(int argc, char **argv) {
  (void)argc;
  kernel("kA", 1000, 1100); kernel("kA", 1000, 1300); kernel("k\"B", 5, 55);
  kernel("kA", 1000, 1200); kernel("kA", 1000, 1400); kernel("kA", 7, 7); /* bad time */
  CUpti_ActivityMemcpy6 *m = (CUpti_ActivityMemcpy6 *)(buf + off);
  memset(m, 0, sizeof *m); m->kind = CUPTI_ACTIVITY_KIND_MEMCPY; off += (sizeof *m + 7) & ~(size_t)7;
  CUpti_ActivityMemset4 *s = (CUpti_ActivityMemset4 *)(buf + off);
  memset(s, 0, sizeof *s); s->kind = CUPTI_ACTIVITY_KIND_MEMSET; off += (sizeof *s + 7) & ~(size_t)7;
  uint8_t *copy = malloc(sizeof buf);
  memcpy(copy, buf, off);
  buffer_completed(NULL, 0, copy, sizeof buf, off); /* frees copy */
  setenv("CUPTI_COUNT_OUT", argv[1], 1);
  write_json();
  return 0;
}
'''


@unittest.skipUnless(os.path.exists(os.path.join(CUPTI_INC, "cupti.h"))
                     and os.path.exists(os.path.join(CUDA_INC, "cuda.h"))
                     and os.path.exists(os.path.join(CUPTI_LIBDIR, "libcupti.so.13"))
                     and shutil.which("gcc"), "no CUPTI/CUDA headers or gcc")
class CuptiCount(unittest.TestCase):
    def test_durations_json(self):
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "h.c")
            with open(src, "w") as f:
                f.write(HARNESS)
            exe = os.path.join(d, "h")
            lib = os.path.join(CUPTI_LIBDIR, "libcupti.so.13")
            subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", exe, src,
                            "-I" + os.path.abspath(WL), "-I" + CUPTI_INC, "-I" + CUDA_INC,
                            # nvcc's crt/host_defines.h, which the runtime wheel's headers include but
                            # do not ship: the doubles' stand-in (used only if the real one is missing).
                            "-idirafter", os.path.join(REPO_ROOT, "ci/doubles/abi/stub"), lib,
                            "-Wl,-rpath," + CUPTI_LIBDIR, "-lpthread"], check=True)
            out = os.path.join(d, "o.json")
            subprocess.run([exe, out], check=True)
            with open(out) as f:
                doc = json.load(f)
        self.assertEqual(doc["kernels"], {"kA": 5, 'k"B': 1})
        self.assertEqual((doc["records"], doc["memcpy"], doc["memset"], doc["bad_times"], doc["copies"]),
                         (6, 1, 1, 1, 0))
        self.assertEqual(doc["durations"]["kA"], {"count": 4, "p50_ns": 200, "mean_ns": 250.0,
                                                  "min_ns": 100, "max_ns": 400})
        self.assertEqual(doc["durations"]['k"B']["p50_ns"], 50)
        for key in ("tool", "record_struct", "cupti_api_version", "records", "buffers", "dropped",
                    "overflow", "errors", "kernels"):  # the keys it always had
            self.assertIn(key, doc)


@unittest.skipUnless(HAVE_TORCH, "no torch")
class TorchScripts(unittest.TestCase):
    def test_kernel_durations_from_trace(self):
        sys.path.insert(0, os.path.abspath(WL))
        import torch_spine
        trace = {"traceEvents": [
            {"ph": "X", "cat": "kernel", "name": "k", "dur": 1.5},
            {"ph": "X", "cat": "kernel", "name": "k", "dur": 2.25},
            {"ph": "X", "cat": "kernel", "name": "k", "dur": 3.0},
            {"ph": "X", "cat": "kernel", "name": "k", "dur": 10.0},
            {"ph": "X", "cat": "kernel", "name": "j"},               # no dur: counted, no duration
            {"ph": "f", "cat": "kernel", "name": "k", "dur": 99},    # a flow event
            {"ph": "X", "cat": "cpu_op", "name": "k", "dur": 99}]}
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(trace, f)
        try:
            self.assertEqual(dict(torch_spine.kernel_counts_from_trace(f.name)), {"k": 4, "j": 1})
            self.assertEqual(torch_spine.kernel_durations_from_trace(f.name),
                             {"k": {"count": 4, "p50_ns": 2250.0, "mean_ns": 4187.5, "min_ns": 1500.0,
                                    "max_ns": 10000.0}})
        finally:
            os.unlink(f.name)

    def test_tiny_loop_cpu(self):
        for extra in ([], ["--profile"]):
            r = subprocess.run([sys.executable, os.path.join(WL, "tiny_loop.py"), "--device", "cpu",
                                "--n", "300", "--reps", "3", "--warmup", "10", "--rep-warmup", "5",
                                *extra], capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr)
            lines = r.stdout.splitlines()
            self.assertEqual(len([x for x in lines if x.startswith("rep ")]), 3)
            self.assertRegex(lines[-2], r"^tiny_loop: mode=(bare|profiler) n=300 reps=3 min=[0-9.]+ "
                                        r"median=[0-9.]+ max=[0-9.]+ us/op$")
            self.assertEqual(lines[-1], "checksum: a0=925.0 ops=925 exact")


if __name__ == "__main__":
    unittest.main(verbosity=1)
