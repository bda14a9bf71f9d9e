#!/usr/bin/env python3
"""test_timed.py: CPU-only tests of timed.py (the phase experiment's timer) and of the probe it is
read beside (bench/phase_probe.c, built with the system's cc when there is one).

Run: python3 control-experiments/device/test_timed.py
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TIMED = os.path.join(HERE, "timed.py")
PROBE = os.path.join(HERE, "..", "..", "bench", "phase_probe.c")


def timed(*args):
    p = subprocess.run([sys.executable, TIMED, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


class Timed(unittest.TestCase):
    def test_a_command_is_timed_and_its_counters_reported(self):
        rc, out, _ = timed("--label", "x", "--", sys.executable, "-c", "sum(range(3_000_000))")
        self.assertEqual(rc, 0)
        r = json.loads(out)
        self.assertEqual((r["label"], r["thp"], r["rc"]), ("x", True, 0))
        # The child's own CPU time is counted, and it cannot exceed the wall time by much (one CPU).
        self.assertGreater(r["user_s"], 0.0)
        self.assertLessEqual(r["user_s"] + r["sys_s"], r["wall_s"] + 0.05)
        self.assertGreater(r["minflt"], 0)
        for k in ("thp_fault_alloc", "thp_fault_fallback", "compact_stall", "steal_s"):
            self.assertIn(k, r)

    def test_the_command_output_is_not_mixed_into_the_json_line(self):
        rc, out, _ = timed("--", "echo", "noise")
        self.assertEqual(rc, 0)
        self.assertEqual(len(out.splitlines()), 1)
        json.loads(out)

    def test_a_failing_command_gives_its_status_and_a_nonzero_exit(self):
        rc, out, _ = timed("--", "sh", "-c", "exit 3")
        self.assertEqual((rc, json.loads(out)["rc"]), (1, 3))

    def test_no_thp_disables_huge_pages_for_the_command(self):
        rc, out, _ = timed("--no-thp", "--", "grep", "-q", "THP_enabled:\\s*0", "/proc/self/status")
        if rc != 0 and "THP_enabled" not in open("/proc/self/status").read():
            self.skipTest("this kernel does not report THP_enabled")
        self.assertEqual((rc, json.loads(out)["thp"]), (0, False))

    def test_bad_arguments_are_named(self):
        rc, _, err = timed("--bogus", "--", "true")
        self.assertNotEqual(rc, 0)
        self.assertIn("--bogus", err)
        rc, _, err = timed("--")
        self.assertNotEqual(rc, 0)
        self.assertIn("no command", err)


@unittest.skipUnless(shutil.which("cc"), "no C compiler")
class Probe(unittest.TestCase):
    def test_the_probe_builds_and_prints_every_figure(self):
        with tempfile.TemporaryDirectory() as d:
            exe = os.path.join(d, "probe")
            subprocess.run(["cc", "-O2", "-Wall", "-Werror", "-o", exe, PROBE], check=True)
            out = subprocess.run([exe, "4"], capture_output=True, text=True, check=True).stdout
            for what in ("spin:", "wide:", "touch 4k pages, pass 3", "touch huge pages, pass 3",
                         "read pass 3"):
                self.assertIn(what, out)
            out = subprocess.run([exe, "0", "read"], capture_output=True, text=True, check=True).stdout
            self.assertNotIn("touch", out)
            self.assertIn("read pass 3", out)


if __name__ == "__main__":
    unittest.main()
