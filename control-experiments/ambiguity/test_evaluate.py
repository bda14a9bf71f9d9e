#!/usr/bin/env python3
"""The ambiguity evaluator's scoring on a hand-made graph export, whose right answers are worked out
by hand below: a kernel p on stream A, a kernel c on stream B that waits for p through an event, a
stream sync after c, and a kernel d whose event record was lost."""
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from evaluate import Capture, score  # noqa: E402


def call(seq, begin, end, cls, depth=0):
    return {"seq": seq, "tid": 1, "api": "x", "class": cls, "begin_ns": begin, "end_ns": end,
            "depth": depth}


def rng(name, begin, end):
    return {"tid": 1, "name": f"amb/s/0/{name}", "begin_ns": begin, "end_ns": end}


def work(name, seq, stream, begin, end):
    return {"kind": "kernel", "name": name, "call": seq, "stream": {"Handle": stream},
            "begin_ns": begin, "end_ns": end}


DOC = {"processes": [{
    "ring": "r", "pid": 1, "exe": "x", "lost": {"dropped": 0, "overwritten": 0, "torn": 1},
    "ranges": [rng("p", 100, 110), rng("c", 120, 130), rng("sync0", 300, 400), rng("d", 500, 510)],
    "calls": [call(1, 101, 105, "launch"), call(2, 102, 104, "launch", depth=1),
              call(3, 121, 125, "launch"), call(4, 301, 390, "sync"), call(5, 501, 505, "launch")],
    "device": [work("p", 1, 10, 130, 200), work("c", 3, 11, 205, 250), work("d", 5, 11, 520, 530)],
    "absent": ["the record of event 0x1"],
    "edges": [
        {"from": {"call": 0}, "to": {"work": 0}, "kind": "issue", "evidence": {"class": "explicit"}},
        {"from": {"call": 2}, "to": {"work": 1}, "kind": "issue", "evidence": {"class": "explicit"}},
        {"from": {"work": 0}, "to": {"work": 1}, "kind": "event_wait", "evidence": {"class": "explicit"}},
        {"from": {"work": 1}, "to": {"call": 3}, "kind": "host_wait", "evidence": {"class": "explicit"}},
        {"from": {"call": 0}, "to": {"call": 2}, "kind": "program_order", "evidence": {"class": "explicit"}},
        {"from": {"call": 4}, "to": {"work": 2}, "kind": "issue", "evidence": {"class": "explicit"}},
        {"from": {"work": 1}, "to": {"work": 2}, "kind": "stream_order", "evidence": {"class": "explicit"}},
        {"from": {"absent": 0}, "to": {"work": 2}, "kind": "event_wait", "evidence": {"class": "missing"}},
    ],
}]}

TRUTH = {
    "W:amb/s/0/p": {("C:amb/s/0/p", False)},
    "W:amb/s/0/c": {("C:amb/s/0/c", False), ("W:amb/s/0/p", False)},
    "C:amb/s/0/sync0": {("W:amb/s/0/c", False)},
    # d waits (stream order) for c, and for p through an event whose record was lost.
    "W:amb/s/0/d": {("C:amb/s/0/d", False), ("W:amb/s/0/c", False), ("W:amb/s/0/p", True)},
}


class Scoring(unittest.TestCase):
    def setUp(self):
        self.cap = Capture(DOC)
        self.present = set(TRUTH)
        self.labelled = set(self.cap.node_of)

    def test_labels_follow_the_innermost_range_and_skip_nested_calls(self):
        self.assertEqual(self.cap.label[("call", 0)], "C:amb/s/0/p")
        self.assertNotIn(("call", 1), self.cap.label)  # depth 1
        self.assertEqual(self.cap.label[("work", 1)], "W:amb/s/0/c")

    def test_causal_scores_every_edge_and_a_missing_edge_matches_the_lost_parent(self):
        self.assertEqual(score(TRUTH, self.cap.causal_parents(), self.present, self.labelled), (7, 0, 0))

    def test_nearest_timestamp(self):
        # p: the call that began last before 130 is c's (wrong: FP, and p's own call missed: FN); no
        # work ended before it. c: its own call, and p (ended 200 <= 205): right. sync: c ended last
        # before 390: right. d: its own call; c ended last before 520: right; the lost record: FN.
        self.assertEqual(score(TRUTH, self.cap.nearest_parents(), self.present, self.labelled), (5, 1, 2))

    def test_correlation_only(self):
        # Issue edges right; stream order c -> d (stream 11) right; no event edges, no host waits.
        self.assertEqual(score(TRUTH, self.cap.correlation_parents(), self.present, self.labelled), (4, 0, 3))

    def test_children_not_in_the_capture_are_not_scored(self):
        self.assertEqual(score(TRUTH, self.cap.causal_parents(), {"W:amb/s/0/p"}, self.labelled), (1, 0, 0))


if __name__ == "__main__":
    unittest.main()
