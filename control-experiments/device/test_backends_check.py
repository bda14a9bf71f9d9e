#!/usr/bin/env python3
"""test_backends_check.py: CPU-only tests of backends_check.py on fake JSON.

  workload   association (counts per name, interval total, associated, unassociated, dropped),
             durations: cupti and cupti-cb symmetric (ok / ok-abs / FAIL / missing against
             max(10 %, 2 us)), events an upper bound (upper-ok / FAIL-below, the excess and its
             median), vs torch.profiler; clock (before_call, min latency, the events bound in its
             shapes), checksums; a report that is missing, and one without device intervals
  perf       paired added cost (arm - bare of the same round) where the raw medians mislead;
             ratios per level-3 backend (cupti, cupti-cb, events): MET, MISSED, INVALID
  summary    tables again, verdict lines, the upper-bound excess, FINDINGS

Run: python3 control-experiments/device/test_backends_check.py
"""
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import backends_check as bc  # noqa: E402

# name: (count, CUPTI p50 ns)
REF = {"_Z9compute_aPKjmjmiPj": (200, 51200), "_Z6long_bjmiPj": (200, 81300),
       "_Z7short_bPKjS0_jmiPj": (200, 11100), "_Z8tiny_incPj": (400, 1900)}
COPIES = (202, 203)


def cupti_doc(kernels=REF, copies=COPIES, dropped=0):
    return {"tool": "cupti_count", "record_struct": "CUpti_ActivityKernel10", "records": 0,
            "dropped": dropped, "overflow": 0, "errors": 0,
            "kernels": {n: c for n, (c, _) in kernels.items()},
            "memcpy": copies[0], "memset": copies[1], "copies": 1, "bad_times": 0,
            "durations": {n: {"count": c, "p50_ns": p, "mean_ns": p, "min_ns": p, "max_ns": p}
                          for n, (c, p) in kernels.items()}}


def report(kernels, copies=COPIES, unassoc=0, associated=None, dropped=0, before=0, min_lat=4000,
           backend="cupti", clock_extra=None, notice=None):
    """A report in the scanner's shape; kernels: {name: (count, p50)}."""
    n = sum(c for c, _ in kernels.values()) + sum(copies)
    clock = {"conversion": "cupti-timestamp-callback", "converted": n, "unconverted": 0, "checked": n,
             "before_call": before, "min_launch_to_start_ns": min_lat if n else None}
    clock.update(clock_extra or {})
    u = {"total": unassoc, "no_call": unassoc, "call_not_in_capture": 0, "wrong_class": 0}
    return {"processes": [{"pid": 1, "backend": backend, "device_intervals": n,
                           "associated": n - unassoc, "unassociated": u, "device_dropped": dropped,
                           "notice": notice}],
            "kernels": [],
            "device": {"intervals": n, "associated": n - unassoc if associated is None else associated,
                       "unassociated": u, "unconverted": 0, "untimed": 0, "dropped": dropped,
                       "unknown_kind": 0, "clock": clock,
                       "kernels": [{"name": k, "count": c, "total_ns": c * p, "p50_ns": p, "p99_ns": p,
                                    "max_ns": p} for k, (c, p) in kernels.items()],
                       "copies": [{"kind": "HtoD", "count": copies[0], "p50_ns": 350000},
                                  {"kind": "memset", "count": copies[1], "p50_ns": 2000}]}}


def scaled(kernels, **p50):
    return {n: (c, p50.get(n, p)) for n, (c, p) in kernels.items()}


class Base(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="backends-check-test.")

    def tearDown(self):
        shutil.rmtree(self.d)

    def write(self, name, obj):
        p = os.path.join(self.d, name)
        with open(p, "w") as f:
            if isinstance(obj, str):
                f.write(obj)
            else:
                json.dump(obj, f)
        return p

    def run_main(self, argv):
        buf = io.StringIO()
        err = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
            rc = bc.main(argv)
        return rc, buf.getvalue()

    def workload(self, backends, runs=None, cupti=None, extra=()):
        argv = ["workload", "--title", "ms", "--cupti", self.write("cupti.json", cupti or cupti_doc()),
                "--json", os.path.join(self.d, "w.json")]
        for name, rep in backends.items():
            path = self.write(f"report-{name}.json", rep) if rep is not None else os.path.join(self.d, "nope")
            argv += ["--backend", name, path]
        for name, (rc, line) in (runs or {}).items():
            argv += ["--run", name, str(rc), self.write(f"{name}.out", f"hello\n{line}\n")]
        argv += list(extra)
        rc, out = self.run_main(argv)
        with open(os.path.join(self.d, "w.json")) as f:
            return rc, out, json.load(f)


class Tolerance(Base):
    def rows(self, p50s):
        view = bc.backend_view(report(scaled(REF, **p50s)))
        return {r["name"]: r["verdict"] for r in
                bc.check_durations(view, cupti_doc()["durations"], None, {}, 0.10, 2000)["kernels"]}

    def test_verdicts(self):
        v = self.rows({"_Z9compute_aPKjmjmiPj": 54000,   # +5.5 %: ok
                       "_Z6long_bjmiPj": 91300,          # +12.3 %, +10 us: FAIL
                       "_Z7short_bPKjS0_jmiPj": 12900,   # +16 %, +1.8 us: ok-abs (the 2 us floor)
                       "_Z8tiny_incPj": 3800})           # +100 %, +1.9 us: ok-abs
        self.assertEqual(v, {"_Z9compute_aPKjmjmiPj": "ok", "_Z6long_bjmiPj": "FAIL",
                             "_Z7short_bPKjS0_jmiPj": "ok-abs", "_Z8tiny_incPj": "ok-abs"})

    def test_just_outside_both(self):
        # short_b 11.1 us: 10 % = 1.11 us < 2 us, so the floor rules: 13.2 us is +2.1 us: FAIL
        self.assertEqual(self.rows({"_Z7short_bPKjS0_jmiPj": 13200})["_Z7short_bPKjS0_jmiPj"], "FAIL")
        # 50 us kernel: 10 % = 5.12 us rules: +5.0 us ok, +5.2 us FAIL
        self.assertEqual(self.rows({"_Z9compute_aPKjmjmiPj": 56200})["_Z9compute_aPKjmjmiPj"], "ok")
        self.assertEqual(self.rows({"_Z9compute_aPKjmjmiPj": 56400})["_Z9compute_aPKjmjmiPj"], "FAIL")


class UpperTolerance(Base):
    """The events backend: an upper bound, never meaningfully shorter than the reference."""

    def rows(self, p50s, mode="upper", name="events"):
        view = bc.backend_view(report(scaled(REF, **p50s), backend=name))
        return bc.check_durations(view, cupti_doc()["durations"], None, {}, 0.10, 2000, mode=mode)

    def test_modes(self):
        self.assertEqual(bc.duration_mode("events"), "upper")
        self.assertEqual(bc.duration_mode("cupti"), "symmetric")
        self.assertEqual(bc.duration_mode("cupti-cb"), "symmetric")
        self.assertEqual(bc.duration_mode("events", upper=()), "symmetric")

    def test_upper_verdicts(self):
        d = self.rows({"_Z9compute_aPKjmjmiPj": 46080,  # -5.12 us = -10 % of 51.2 us: upper-ok (edge)
                       "_Z6long_bjmiPj": 98000,         # +20.5 %: far above, still upper-ok
                       "_Z7short_bPKjS0_jmiPj": 9100,   # -2.0 us: the floor rules: upper-ok (edge)
                       "_Z8tiny_incPj": 9400})          # +7.5 us (+395 %): upper-ok
        v = {r["name"]: r["verdict"] for r in d["kernels"]}
        self.assertEqual(set(v.values()), {"upper-ok"})
        self.assertEqual(d["verdict"], "PASS")
        self.assertEqual(d["mode"], "upper")
        self.assertEqual(d["counts"], {"upper-ok": 4, "FAIL-below": 0, "missing": 0, "graph-only": 0})
        # excess: -5120, +16700, -2000, +7500 ns; sorted -5120 -2000 7500 16700: median 2750
        self.assertAlmostEqual(d["excess"]["median_ns"], 2750)
        self.assertEqual((d["excess"]["min_ns"], d["excess"]["max_ns"], d["excess"]["kernels"]),
                         (-5120, 16700, 4))
        self.assertIn("p50 >= reference p50 - max(10% of the reference p50, 2.00us)", d["rule"])

    def test_fail_below(self):
        d = self.rows({"_Z9compute_aPKjmjmiPj": 46000,   # -5.2 us > 10 % (5.12 us) below: FAIL-below
                       "_Z7short_bPKjS0_jmiPj": 9000})   # -2.1 us below the 2 us floor: FAIL-below
        v = {r["name"]: r["verdict"] for r in d["kernels"]}
        self.assertEqual(v, {"_Z9compute_aPKjmjmiPj": "FAIL-below", "_Z6long_bjmiPj": "upper-ok",
                             "_Z7short_bPKjS0_jmiPj": "FAIL-below", "_Z8tiny_incPj": "upper-ok"})
        self.assertEqual(d["verdict"], "FAIL")
        self.assertIn("2 kernel(s) shorter than CUPTI's p50 beyond the tolerance (an upper bound cannot be)",
                      d["problems"][0])

    def test_same_numbers_symmetric(self):
        # the same +20 % that events passes fails the cupti backends' symmetric tolerance
        p50s = {"_Z6long_bjmiPj": 98000}
        self.assertEqual(self.rows(p50s)["verdict"], "PASS")
        sym = self.rows(p50s, mode="symmetric", name="cupti")
        self.assertEqual(sym["verdict"], "FAIL")
        self.assertEqual(sym["counts"], {"ok": 3, "ok-abs": 0, "FAIL": 1, "missing": 0, "graph-only": 0})


class Bound(unittest.TestCase):
    def test_shapes(self):
        self.assertEqual(bc.find_bound({"bound_ns": {"max": 1800, "p50": 640}}),
                         (True, {"max": 1800, "p50": 640}))
        self.assertEqual(bc.find_bound({"bound_ns": None}), (True, None))
        self.assertEqual(bc.find_bound({"anchor_bound_max_ns": 5}), (True, {"anchor_bound_max_ns": 5}))
        self.assertEqual(bc.find_bound({"before_call": 0}), (False, None))
        # the scanner's flat shape
        self.assertEqual(bc.find_bound({"bound_ns_max": 17111, "bound_ns_p50": 10537}),
                         (True, {"max": 17111, "p50": 10537}))
        self.assertEqual(bc.find_bound({"bound_ns_max": None, "bound_ns_p50": None}), (True, None))
        self.assertEqual(bc.find_bound(None), (False, None))
        self.assertEqual(bc.fmt_bound(True, {"max": 1800, "p50": 640}), "1.80us/640ns")
        self.assertEqual(bc.fmt_bound(True, None), "null")
        self.assertEqual(bc.fmt_bound(True, 2500), "2.50us")
        self.assertEqual(bc.fmt_bound(False, None), "-")


class Workload(Base):
    def test_all_pass(self):
        ck = "checksum: fnv=0123 iters=200 tiny=2 counter=400"
        rc, out, doc = self.workload(
            {"cupti": report(scaled(REF, _Z6long_bjmiPj=81000)),
             "events": report(scaled(REF, _Z8tiny_incPj=3500), backend="events",
                              clock_extra={"conversion": "events-anchor",
                                           "bound_ns": {"max": 1800, "p50": 640}})},
            runs={"bare": (0, ck), "cupti-ref": (0, ck), "cupti": (0, ck), "events": (0, ck)})
        self.assertEqual(rc, 0, out)
        self.assertEqual(doc["findings"], [])
        ev = doc["backends"]["events"]
        self.assertEqual(ev["association"]["verdict"], "PASS")
        self.assertEqual(ev["association"]["intervals"], 1405)
        self.assertEqual(ev["association"]["reference_records"], 1405)
        self.assertEqual(ev["durations"]["counts"], {"upper-ok": 4, "FAIL-below": 0, "missing": 0,
                                                   "graph-only": 0})
        self.assertEqual(ev["duration_mode"], "upper")
        self.assertEqual(doc["backends"]["cupti"]["duration_mode"], "symmetric")
        self.assertEqual(doc["tolerance"]["modes"], {"cupti": "symmetric", "events": "upper"})
        self.assertIn("UPPER BOUND", doc["tolerance"]["upper_semantics"])
        self.assertEqual(ev["clock"]["bound_ns"], {"max": 1800, "p50": 640})
        self.assertEqual(ev["checksum"], "same")
        self.assertRegex(out, r"(?m)^events +events +1405/1405 +1405 +0 +0 +0 +4/4 +4/-/0/0/0 +0/1405 +- +"
                              r"4.00us +1.80us/640ns +same  assoc=PASS dur=PASS clock=PASS$")
        self.assertRegex(out, r"(?m)^cupti .* -  +same  assoc=PASS")  # no bound: "-"
        self.assertIn("[cupti] clock bound: not in the report", out)
        self.assertIn('[events] clock: {"before_call": 0, "bound_ns": {"max": 1800, "p50": 640}', out)
        self.assertRegex(out, r"(?m)^_Z8tiny_incPj +400 +1.90us \| +1.90us +\+0.0% +ok \| +3.50us +\+1.60us "
                              r"+\+84.2% +upper-ok$")
        self.assertRegex(out, r"(?m)^_Z6long_bjmiPj +200 +81.30us \| +81.00us +-0.4% +ok \| +81.30us +\+0ns "
                              r"+\+0.0% +upper-ok$")
        self.assertIn("[events] durations are an upper bound: excess over CUPTI's p50: median +0ns and +0.0% "
                      "over 4 kernel(s) (min +0ns, max +1.60us)", out)
        self.assertNotIn("pass only through the 2.00us floor", out)  # ok-abs is a symmetric verdict
        self.assertIn("durations of cupti: tolerance |p50 - reference p50| <= max(10% of the reference p50, "
                      "2.00us)", out)
        self.assertIn("durations of events: an UPPER BOUND: p50 >= reference p50 - max(10% of the reference "
                      "p50, 2.00us)", out)

    def test_failures_are_reported(self):
        ck = "checksum: fnv=0123"
        ev = scaled(REF, _Z7short_bPKjS0_jmiPj=8800)  # -20.7 %, -2.3 us: FAIL-below
        ev["_Z8tiny_incPj"] = (300, 1900)               # 100 of 400 lost
        rc, out, doc = self.workload(
            {"cupti": report(REF, unassoc=5),
             "events": report(ev, backend="events", before=2, min_lat=-300,
                              clock_extra={"bound_ns": None})},
            runs={"bare": (0, ck), "cupti": (0, ck), "events": (0, "checksum: fnv=9999")})
        self.assertEqual(rc, 1)
        c, e = doc["backends"]["cupti"], doc["backends"]["events"]
        self.assertEqual(c["association"]["verdict"], "FAIL")
        self.assertIn("unassociated = 5 (want 0)", c["association"]["problems"])
        self.assertIn("associated 1400 != intervals 1405", c["association"]["problems"])
        self.assertEqual(c["durations"]["verdict"], "PASS")
        self.assertEqual(e["association"]["mismatches"],
                         [{"name": "_Z8tiny_incPj", "reference": 400, "backend": 300}])
        self.assertEqual(e["durations"]["verdict"], "FAIL")
        self.assertEqual(e["durations"]["counts"]["FAIL-below"], 1)
        self.assertEqual(e["clock"]["verdict"], "FAIL")
        self.assertEqual(e["checksum"], "DIFF")
        self.assertEqual(doc["findings"], ["ms/cupti: association FAIL", "ms/events: association FAIL",
                                           "ms/events: durations FAIL", "ms/events: clock FAIL",
                                           "ms/events: checksum or exit code differs from bare"])
        self.assertRegex(out, r"_Z7short_bPKjS0_jmiPj +200 +11.10us \| .* \| +8.80us +-2.30us +-20.7% "
                              r"+FAIL-below")
        self.assertIn("[events] problem (durations): 1 kernel(s) shorter than CUPTI's p50 beyond the "
                      "tolerance (an upper bound cannot be): _Z7short_bPKjS0_jmiPj", out)
        self.assertIn("[events] problem (clock): 2 device interval(s) start before their issuing call", out)
        self.assertIn("[events]   count mismatch: _Z8tiny_incPj: cupti=400 events=300", out)
        self.assertRegex(out, r"(?m)^events .* 3/-/1/0/0 +2/1305 +- +-300ns +null +DIFF  assoc=FAIL dur=FAIL "
                              r"clock=FAIL$")

    def test_exit_code_differs(self):
        ck = "checksum: fnv=0123"
        rc, out, doc = self.workload({"cupti": report(REF)},
                                     runs={"bare": (0, ck), "cupti": (3, ck)})
        self.assertEqual(doc["backends"]["cupti"]["checksum"], "DIFF")
        self.assertEqual(rc, 1)

    def test_missing_report_and_no_intervals(self):
        # events not built: the shim recorded at level 2, the device section is empty
        empty = report({}, copies=(0, 0), backend="none",
                       notice="CAUSEWAY_BACKEND=events is not available in this build")
        empty["device"]["clock"]["conversion"] = "none"
        rc, out, doc = self.workload({"events": empty, "cupti": None})
        self.assertEqual(rc, 1)
        self.assertEqual(doc["backends"]["cupti"]["status"], "no report")
        e = doc["backends"]["events"]
        self.assertEqual(e["association"]["verdict"], "FAIL")
        self.assertIn("no device kernel intervals in the report", e["association"]["problems"])
        self.assertEqual(e["durations"]["counts"]["missing"], 4)
        self.assertEqual(e["clock"]["verdict"], "FAIL")
        self.assertEqual(e["ring_backends"], ["none"])
        self.assertIn("[events] shim notice: CAUSEWAY_BACKEND=events is not available", out)
        self.assertRegex(out, r"(?m)^cupti +- .* NO REPORT$")
        self.assertIn("ms/cupti: association NO DATA", doc["findings"])

    def test_profiler_reference(self):
        prof = {"compute_a(unsigned int const*, unsigned long, unsigned int, unsigned long, int, "
                "unsigned int*)": {"count": 200, "p50_ns": 51000},
                "long_b(unsigned int, unsigned long, int, unsigned int*)": {"count": 200, "p50_ns": 60000}}
        rc, out, doc = self.workload({"cupti": report(REF)},
                                     extra=["--profiler-durations", self.write("prof.json", prof)])
        rows = {r["name"]: r for r in doc["backends"]["cupti"]["durations"]["kernels"]}
        if shutil.which("c++filt"):
            self.assertEqual(rows["_Z9compute_aPKjmjmiPj"]["profiler_verdict"], "ok")
            self.assertEqual(rows["_Z6long_bjmiPj"]["profiler_verdict"], "FAIL")
            self.assertEqual(doc["backends"]["cupti"]["durations"]["verdict"], "FAIL")
            self.assertEqual(rc, 1)
        self.assertEqual(rows["_Z8tiny_incPj"]["profiler_verdict"], "unmatched")

    def test_no_cupti_reference(self):
        p = os.path.join(self.d, "w.json")
        rc, out = self.run_main(["workload", "--title", "ms", "--cupti", os.path.join(self.d, "nope"),
                                 "--json", p, "--backend", "cupti", self.write("r.json", report(REF))])
        self.assertEqual(rc, 2)
        with open(p) as f:
            self.assertIn("no CUPTI reference", json.load(f)["findings"][0])


EVENTS_CLOCK = {"conversion": "event-anchors", "checked": 0, "before_call": 0,
                "min_launch_to_start_ns": None, "end_checked": 1405, "end_before_call_end": 0,
                "min_call_end_to_device_end_ns": 1161, "bound_ns_max": 17111, "bound_ns_p50": 10537,
                "anchors": 2}


class EventsShape(Base):
    """The events backend as the scanner reports it: no start check, an end check, a flat bound,
    graph launches timed whole as "[graph launch]" rows."""

    def test_end_check(self):
        ck = "checksum: x"
        rc, out, doc = self.workload({"events": report(REF, backend="events", clock_extra=EVENTS_CLOCK)},
                                     runs={"bare": (0, ck), "events": (0, ck)})
        c = doc["backends"]["events"]["clock"]
        self.assertEqual((c["verdict"], c["start_check_ran"], c["end_check_ran"]), ("PASS", False, True))
        self.assertEqual(rc, 0)
        self.assertRegex(out, r"(?m)^events .* +- +0/1405 +- +17.11us/10.54us +same  assoc=PASS dur=PASS "
                              r"clock=PASS$")
        # An end violation within the stated bound is what the bound allows: noted, not failed.
        inside = dict(EVENTS_CLOCK, end_before_call_end=4, min_call_end_to_device_end_ns=-20)
        rc, out, doc = self.workload({"events": report(REF, backend="events", clock_extra=inside)})
        c = doc["backends"]["events"]["clock"]
        self.assertEqual((c["verdict"], c["problems"]), ("PASS", []))
        self.assertIn("within the stated bound", c["notes"][0])
        bad = dict(EVENTS_CLOCK, end_before_call_end=4,
                   min_call_end_to_device_end_ns=-(EVENTS_CLOCK["bound_ns_max"] + 1))
        rc, out, doc = self.workload({"events": report(REF, backend="events", clock_extra=bad)})
        self.assertEqual(doc["backends"]["events"]["clock"]["problems"],
                         ["4 device interval(s) end before their issuing call ended (want 0, or within "
                          "the stated bound)",
                          f"min call end->device end {-(EVENTS_CLOCK['bound_ns_max'] + 1)} ns is negative, "
                          "beyond the stated bound"])
        none = dict(EVENTS_CLOCK, end_checked=0)
        rc, out, doc = self.workload({"events": report(REF, backend="events", clock_extra=none)})
        self.assertIn("no causality check ran (checked = 0 and no end check): nothing was checked",
                      doc["backends"]["events"]["clock"]["problems"])

    def graph_report(self, lose=0, graph_rows=10):
        # 10 graph launches of a 2-kernel graph: 20 of long_b/short_b's executions are graph nodes
        k = dict(REF)
        k["_Z6long_bjmiPj"] = (190 - lose, 81300)
        k["_Z7short_bPKjS0_jmiPj"] = (190, 11100)
        k["[graph launch]"] = (graph_rows, 95000)
        r = report(k, backend="events", clock_extra=EVENTS_CLOCK)
        r["kernels"] = [{"name": "_Z6long_bjmiPj", "launches": 200, "direct": 190, "via_graph": 10},
                        {"name": "_Z7short_bPKjS0_jmiPj", "launches": 200, "direct": 190, "via_graph": 10},
                        {"name": "[graph launch]", "launches": 0, "via_graph": 0, "device_count": 10}]
        r["totals"] = {"graph_launches": 10}
        return r

    def test_graph_launches_timed_whole(self):
        rc, out, doc = self.workload({"events": self.graph_report()})
        a = doc["backends"]["events"]["association"]
        self.assertEqual(a["verdict"], "GRAPH-WHOLE")
        self.assertEqual((a["intervals"], a["reference_records"]), (1395, 1405))
        self.assertTrue(a["graph_whole"]["reconciles"])
        self.assertIn("graph launches timed whole: 10 interval(s) named [graph launch] stand for 20 "
                      "graph-node kernel executions of 10 graph launch(es)", a["problems"][-1])
        d = doc["backends"]["events"]["durations"]
        self.assertEqual(d["verdict"], "PASS")  # the synthetic row is not compared
        self.assertEqual(d["synthetic"], [{"name": "[graph launch]", "count": 10, "p50_ns": 95000}])
        self.assertIn("[events] not a kernel row (not compared): [graph launch] n=10 p50=95.00us", out)
        self.assertEqual(doc["findings"], ["ms/events: association GRAPH-WHOLE"])

    def test_graph_only_kernel(self):
        k = {n: v for n, v in REF.items() if n != "_Z8tiny_incPj"}
        k["[graph launch]"] = (40, 5000)
        r = report(k, backend="events", clock_extra=EVENTS_CLOCK)
        r["kernels"] = [{"name": "_Z8tiny_incPj", "launches": 400, "direct": 0, "via_graph": 400}]
        r["totals"] = {"graph_launches": 40}
        rc, out, doc = self.workload({"events": r})
        e = doc["backends"]["events"]
        self.assertEqual(e["association"]["verdict"], "GRAPH-WHOLE")
        self.assertEqual(e["durations"]["verdict"], "PASS")
        self.assertEqual(e["durations"]["counts"]["graph-only"], 1)
        self.assertRegex(out, r"_Z8tiny_incPj +400 +1.90us \| +- +- +- +graph-only")
        self.assertRegex(out, r"(?m)^events +events +1045/1405 .* 3/-/0/0/1 ")

    def test_graph_plus_a_real_loss_fails(self):
        for r in (self.graph_report(lose=3), self.graph_report(graph_rows=9)):
            rc, out, doc = self.workload({"events": r})
            a = doc["backends"]["events"]["association"]
            self.assertEqual(a["verdict"], "FAIL")
            self.assertFalse(a["graph_whole"]["reconciles"])


class Perf(Base):
    ARMS = "bare,profiler,level2,l3cupti,l3cupti-cb,l3events"

    def runs(self, rounds, costs, ck="checksum: a0=103000.0 ops=103000 exact"):
        for r in range(1, rounds + 1):
            for arm, v in costs.items():
                self.write(f"perf-{arm}-{r}.out",
                           f"rep 0: {v} us/op\ntiny_loop: mode=x n=20000 reps=5 min={v} median={v + 0.01 * r} "
                           f"max={v} us/op\n{ck}\n")

    def by_round(self, values, ck="checksum: a0=103000.0 ops=103000 exact"):
        """values: {arm: [run median of round 1, round 2, ...]} (None: no output)."""
        for arm, vs in values.items():
            for r, v in enumerate(vs, 1):
                if v is not None:
                    self.write(f"perf-{arm}-{r}.out",
                               f"tiny_loop: mode=x n=20000 reps=5 min={v} median={v} max={v} us/op\n{ck}\n")

    def perf(self, extra=(), rounds=3):
        p = os.path.join(self.d, "perf.json")
        rc, out = self.run_main(["perf", "--dir", self.d, "--rounds", str(rounds), "--expect-ops", "1000",
                                 "--json", p] + list(extra))
        with open(p) as f:
            return rc, out, json.load(f)

    def test_ratios(self):
        self.runs(3, {"bare": 6.0, "profiler": 15.0, "level2": 6.3, "l3cupti": 7.0, "l3cupti-cb": 6.5,
                      "l3events": 9.0})
        good = report({"add": (1001, 1200)}, copies=(0, 0))
        rc, out, doc = self.perf(["--arms", self.ARMS, "--report", "l3cupti", self.write("c.json", good),
                                  "--report", "l3cupti-cb", self.write("cb.json", good),
                                  "--report", "l3events", self.write("e.json", good)])
        self.assertEqual(rc, 1)
        self.assertEqual(doc["ratios"]["l3cupti"]["result"], "MET")
        self.assertAlmostEqual(doc["ratios"]["l3cupti"]["ratio"], 9.0)
        self.assertEqual(doc["ratios"]["l3cupti-cb"]["result"], "MET")
        self.assertAlmostEqual(doc["ratios"]["l3cupti-cb"]["ratio"], 18.0)
        self.assertEqual(doc["ratios"]["l3events"]["result"], "MISSED")
        self.assertAlmostEqual(doc["ratios"]["l3events"]["ratio"], 3.0)
        self.assertIn("causeway level 3 events: 9.000 / 3.000 = 3.00  MISSED", out)
        self.assertIn("causeway level 3 cupti-cb: 9.000 / 0.500 = 18.00  MET", out)
        self.assertIn("causeway level 3 cupti-cb round-1 run recorded every op: device intervals=1001", out)
        self.assertRegex(out, r"(?m)^causeway level 2 +3 +6.310 +6.320 +6.330 \| +0.300 +0.300 +0.300 +3 \| "
                              r"+0.300$")
        self.assertRegex(out, r"(?m)^bare +3 +6.010 +6.020 +6.030$")
        self.assertEqual(doc["findings"], ["cost/l3events: ratio MISSED (3.00)"])

    def test_paired_not_raw(self):
        # The machine drifts between rounds (bare 6.8 .. 10.4 us/op, as on the H200). Every round the
        # profiler adds 6 us/op over that round's bare; level 3 about 1 us/op, except round 4, where
        # it ran in a slow moment (+4). The raw medians reorder the rounds: median(l3) - median(bare)
        # = 10.6 - 7.2 = 3.4 us/op, ratio 6 / 3.4 = 1.76 (MISSED); paired: median(+0.8, +1.0, +1.0,
        # +4.0, +1.2) = 1.0 us/op, ratio 6.0 (MET), which is what the arm costs.
        bare = [10.4, 6.8, 9.6, 7.0, 7.2]
        l3 = [b + a for b, a in zip(bare, [0.8, 1.0, 1.0, 4.0, 1.2])]
        self.by_round({"bare": bare, "profiler": [b + 6.0 for b in bare], "l3cupti": l3})
        rc, out, doc = self.perf(["--arms", "bare,profiler,l3cupti"], rounds=5)
        arm = doc["arms"]["l3cupti"]
        self.assertEqual([round(x, 3) for x in arm["added"]], [0.8, 1.0, 1.0, 4.0, 1.2])
        self.assertAlmostEqual(arm["added_median"], 1.0)
        self.assertAlmostEqual(arm["added_min"], 0.8)
        self.assertAlmostEqual(arm["added_max"], 4.0)
        self.assertAlmostEqual(arm["unpaired_added"], 3.4)  # raw medians: misleading
        self.assertAlmostEqual(arm["median"], 10.6)
        self.assertAlmostEqual(doc["arms"]["profiler"]["added_median"], 6.0)
        r = doc["ratios"]["l3cupti"]
        self.assertAlmostEqual(r["ratio"], 6.0)
        self.assertEqual(r["result"], "MET")
        self.assertAlmostEqual(r["unpaired_ratio"], 6.0 / 3.4)
        self.assertEqual(rc, 0)
        self.assertIn("causeway level 3 cupti: 6.000 / 1.000 = 6.00  MET", out)
        self.assertIn("(unpaired, median(arm) - median(bare), for comparison only: l3cupti 1.76)", out)
        self.assertIn("l3cupti +0.800 +1.000 +1.000 +4.000 +1.200", out)
        self.assertRegex(out, r"(?m)^causeway level 3 cupti +5 +7.800 +10.600 +11.200 \| +0.800 +1.000 "
                              r"+4.000 +5 \| +3.400$")

    def test_paired_skips_unpaired_rounds(self):
        # bare failed in round 2: that round's arms have no pair and are left out of the added cost
        self.by_round({"bare": [6.0, None, 10.0], "profiler": [11.0, 30.0, 15.0],
                       "l3cupti": [7.0, 20.0, 11.0]})
        rc, out, doc = self.perf(["--arms", "bare,profiler,l3cupti"])
        self.assertEqual(doc["arms"]["l3cupti"]["added"], [1.0, None, 1.0])
        self.assertEqual(doc["arms"]["l3cupti"]["added_pairs"], 2)
        self.assertAlmostEqual(doc["ratios"]["l3cupti"]["ratio"], 5.0)
        self.assertIn("bare round 2: no result", doc["problems"])
        self.assertIn("l3cupti +1.000 - +1.000", out)

    def test_invalid_when_not_recorded(self):
        self.runs(3, {"bare": 6.0, "profiler": 15.0, "level2": 6.3, "l3cupti": 7.0, "l3events": 6.2})
        empty = report({}, copies=(0, 0), backend="none")
        rc, out, doc = self.perf(["--arms", "bare,profiler,level2,l3cupti,l3events",
                                  "--report", "l3events", self.write("e.json", empty)])
        self.assertEqual(doc["ratios"]["l3events"]["result"], "INVALID")
        self.assertIn("cost/l3events: round-1 run did not record every op", doc["findings"])
        self.assertIn("device intervals=0 (want >= 1000)", out)
        self.assertEqual(rc, 1)

    def test_checksum_and_missing_round(self):
        self.runs(3, {"bare": 6.0, "profiler": 15.0, "level2": 6.3, "l3cupti": 6.5})
        self.write("perf-l3cupti-2.out", "tiny_loop: mode=x median=6.6 us/op\nchecksum: WRONG\n")
        os.unlink(os.path.join(self.d, "perf-level2-3.out"))
        rc, out, doc = self.perf(["--arms", "bare,profiler,level2,l3cupti"])
        self.assertIn("l3cupti round 2: checksum 'checksum: WRONG' != bare "
                      "'checksum: a0=103000.0 ops=103000 exact'", doc["problems"])
        self.assertIn("level2 round 3: no result", doc["problems"])
        self.assertEqual(rc, 1)


class Summary(Base):
    def test_summary(self):
        ck = "checksum: x"
        slow = scaled(REF, _Z6long_bjmiPj=99000)  # +21.8 %
        self.workload({"cupti": report(REF), "cupti-cb": report(slow),
                       "events": report(slow, backend="events")},
                      runs={"bare": (0, ck), "cupti": (0, ck), "cupti-cb": (0, ck), "events": (0, ck)})
        out_json = os.path.join(self.d, "s.json")
        md = os.path.join(self.d, "s.md")
        rc, out = self.run_main(["summary", "--in", os.path.join(self.d, "w.json"),
                                 os.path.join(self.d, "absent.json"), "--json", out_json,
                                 "--markdown", md])
        self.assertEqual(rc, 0)
        # the same +21.8 %: cupti-cb (symmetric, like cupti) fails, events (an upper bound) passes
        self.assertIn("ms/cupti-cb: association=PASS durations=FAIL clock=PASS checksum=same", out)
        self.assertIn("ms/events: association=PASS durations=PASS clock=PASS checksum=same", out)
        self.assertIn("FINDINGS (1):\n  - ms/cupti-cb: durations FAIL", out)
        self.assertIn("tolerance (durations: cupti, cupti-cb): |p50 - reference p50| <= max(10% of the "
                      "reference p50, 2.00us)", out)
        self.assertIn("tolerance (durations: events, an UPPER BOUND): p50 >= reference p50 - max(10% of the "
                      "reference p50, 2.00us)", out)
        self.assertIn("upper-bound excess (p50 - CUPTI p50; reported, not judged):\n  ms/events: durations "
                      "are an upper bound; excess over CUPTI's p50: median +0ns and +0.0% over 4 kernel(s) "
                      "(min +0ns, max +17.70us)", out)
        self.assertRegex(out, r"(?m)^cupti-cb cupti .* 3/0/1/0/0 .* assoc=PASS dur=FAIL clock=PASS$")
        with open(out_json) as f:
            s = json.load(f)
        self.assertEqual(s["findings"], ["ms/cupti-cb: durations FAIL"])
        self.assertEqual(s["tolerance"]["modes"], {"cupti": "symmetric", "cupti-cb": "symmetric",
                                                   "events": "upper"})
        self.assertIn("UPPER BOUND", s["tolerance"]["upper_semantics"])
        self.assertEqual(s["workloads"]["ms"]["backends"]["events"]["durations"]["excess"]["max_ns"], 17700)
        with open(md) as f:
            text = f.read()
            self.assertIn("== ms: level-3 backends vs the CUPTI reference", text)
            self.assertIn("# causeway level-3 backends (cupti, cupti-cb, events)", text)


if __name__ == "__main__":
    unittest.main(verbosity=1)
