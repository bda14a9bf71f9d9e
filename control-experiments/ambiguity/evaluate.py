#!/usr/bin/env python3
"""evaluate.py: scores a reconstructed dependency graph against the ambiguity workload's ground truth
(scenarios.h), for causeway's causal graph and two baselines computed from the same capture:

* nearest-timestamp stitching: a work item's parents are the latest-beginning work-issuing call that
  began before it started (its "launch") and the work item, on any stream, that ended last before it
  started (its "predecessor"); a host wait's parent is the work item that ended last before the wait
  returned. What a timeline viewer invites a reader to conclude.
* CUPTI-correlation-only: a work item's parents are its issuing call (the correlation id) and the
  previous work item on its stream (the record's stream id); nothing joins streams or host waits.

    evaluate.py --truth T.jsonl --graph G.json --capture CAP --cw causeway [--json OUT] [--name NAME]

Scored: the parents of every node the truth lists (device work, host waits) that is in the capture
(a node whose own record was lost cannot be scored; counted). Edge kinds the truth does not model
(program order, handoffs) are not scored. A truth edge marked lost (its record was torn or
overwritten) is matched by an edge from a missing record (`absent`), never by a guess. Also: root
cause top-1 (`causeway why --kernel NAME#K --json` against the truth's cause), critical-path fidelity
(the work items on why's chain before its first call against the truth's path), and false-complete
(a chain reported complete although a record it needs was lost). Baselines read a cause off their
own parent guess: `dependency` when it ended within SLACK of the start, else `device` (correlation
only, when the start came more than SLACK after the issuing call returned) or `host`; they never know
a record is missing, so every answer of theirs is "complete".
"""
import argparse
import bisect
import json
import subprocess
import sys
from collections import defaultdict

SLACK_NS = 100_000
UNSCORABLE = "UNSCORABLE"
# The pairs of scenarios.h: the same symptom, different true causes.
PAIRS = [("late_host", "late_fault", "late_device"), ("dependency", "overlap"), ("slow_copy", "blocked"),
         ("missing", "no_edge"), ("graph", "direct"), ("stale",), ("busy",), ("lossy",)]
ISSUING = {"launch", "copy", "memset", "graph_launch", "prefetch", "mem_op"}
SCORED_KINDS = {"issue", "graph_node", "stream_order", "event_wait", "context_event", "host_wait",
                "legacy_stream"}


def labelled_calls(p, nested=False):
    """(index, call) for the calls made inside an "amb/..." NVTX range of their thread, each call
    given `_label` (the innermost such range); outermost calls only unless `nested`."""
    by_tid = defaultdict(list)
    for r in p["ranges"]:
        if r["name"].startswith("amb/") and r.get("end_ns") is not None:
            by_tid[r["tid"]].append((r["begin_ns"], r["end_ns"], r["name"]))
    for v in by_tid.values():
        v.sort()
    out = []
    for i, c in enumerate(p["calls"]):
        if c["depth"] and not nested:
            continue
        rs = by_tid.get(c["tid"], [])
        k = bisect.bisect_right(rs, (c["begin_ns"], float("inf"), "")) - 1
        while k >= 0:
            b, e, name = rs[k]
            if b <= c["begin_ns"] <= e:
                c["_label"] = name
                out.append((i, c))
                break
            k -= 1
    return out


class Capture:
    """The graph export of one process, with nodes labelled as the truth names them."""

    def __init__(self, doc):
        procs = [p for p in doc["processes"] if any(r["name"].startswith("amb/") for r in p["ranges"])]
        if len(procs) != 1:
            sys.exit(f"evaluate: expected one process with amb/ ranges, found {len(procs)}")
        p = self.p = procs[0]
        self.calls, self.device = p["calls"], p["device"]
        self.label = {}  # ("call", i) / ("work", j) -> "C:..." / "W:..."
        for i, c in labelled_calls(p):
            self.label[("call", i)] = "C:" + c["_label"]
        self.call_of_seq = {c["seq"]: i for i, c in enumerate(self.calls)}
        for j, d in enumerate(self.device):
            i = self.call_of_seq.get(d["call"]) if d.get("call") is not None else None
            if i is not None and ("call", i) in self.label:
                self.label[("work", j)] = "W:" + self.label[("call", i)][2:]
        self.node_of = {v: k for k, v in self.label.items()}
        self.lost = p["lost"]

    def name(self, node):
        kind, i = node
        if kind == "absent":
            return "ABSENT"
        if node not in self.label and kind == "work":
            seq = self.device[i].get("call")
            if seq is not None and seq not in self.call_of_seq:
                # Device work whose issuing call (and with it its label) the ring lost: real, but
                # not identifiable against the truth.
                return UNSCORABLE
        return self.label.get(node, f"?{kind}{i}")

    def causal_parents(self):
        parents = defaultdict(set)
        self.why_edge = {}  # (child, parent) -> "kind evidence", for the list of false edges
        for e in self.p["edges"]:
            if e["kind"] not in SCORED_KINDS:
                continue
            (tk, ti), = e["to"].items()
            (fk, fi), = e["from"].items()
            child = self.label.get((tk, ti))
            if child:
                parent = self.name((fk, fi))
                parents[child].add(parent)
                self.why_edge[(child, parent)] = f"{e['kind']} {e['evidence']['class']}"
        return parents

    def nearest_parents(self):
        parents = defaultdict(set)
        issuing = sorted((c["begin_ns"], i) for i, c in enumerate(self.calls)
                         if c["depth"] == 0 and c.get("class") in ISSUING)
        ends = sorted((d["end_ns"], j) for j, d in enumerate(self.device))
        ek = [e for e, _ in ends]
        for node, lab in self.label.items():
            kind, x = node
            if kind == "work":
                start = self.device[x]["begin_ns"]
                k = bisect.bisect_right(issuing, (start, float("inf"))) - 1
                if k >= 0:
                    parents[lab].add(self.name(("call", issuing[k][1])))
                k = bisect.bisect_right(ek, start) - 1
                while k >= 0 and ends[k][1] == x:
                    k -= 1
                if k >= 0:
                    parents[lab].add(self.name(("work", ends[k][1])))
            elif self.calls[x].get("class") == "sync" and self.calls[x].get("end_ns"):
                k = bisect.bisect_right(ek, self.calls[x]["end_ns"]) - 1
                if k >= 0:
                    parents[lab].add(self.name(("work", ends[k][1])))
        return parents

    def correlation_parents(self):
        parents = defaultdict(set)
        by_stream = defaultdict(list)
        for j, d in enumerate(self.device):
            by_stream[json.dumps(d["stream"], sort_keys=True)].append((d["begin_ns"], j))
        prev = {}
        for v in by_stream.values():
            v.sort()
            for a, b in zip(v, v[1:]):
                prev[b[1]] = a[1]
        for (kind, j), lab in self.label.items():
            if kind != "work":
                continue
            i = self.call_of_seq.get(self.device[j].get("call"))
            if i is not None:
                parents[lab].add(self.name(("call", i)))
            if j in prev:
                parents[lab].add(self.name(("work", prev[j])))
        return parents


def score(truth_parents, predicted, present, labelled):
    """(tp, fp, fn) over the scored children present in the capture. A truth parent that is not
    lost but not identifiable in the capture (its label's records were lost: `labelled` lacks it) is
    not scored, nor is a predicted parent that cannot be identified."""
    tp = fp = fn = 0
    for child, tset in truth_parents.items():
        if child not in present:
            continue
        pred = set(predicted.get(child, ())) - {UNSCORABLE}
        for parent, lost in tset:
            if not lost and parent not in labelled:
                continue
            hit = "ABSENT" if lost else parent
            if hit in pred:
                tp += 1
                pred.discard(hit)
            else:
                fn += 1
        fp += len(pred)
    return tp, fp, fn


def scenario(label):
    return label.split("/")[1] if label.count("/") >= 3 else "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--truth", required=True)
    ap.add_argument("--graph", required=True)
    ap.add_argument("--capture", required=True)
    ap.add_argument("--cw", required=True)
    ap.add_argument("--json")
    ap.add_argument("--name", default="")
    a = ap.parse_args()

    truth_parents, scored, targets, notes = defaultdict(set), [], [], []
    for line in open(a.truth):
        t = json.loads(line)
        if "edge" in t:
            child, parent = t["edge"]
            truth_parents[child].add((parent, t["lost"]))
        elif "node" in t:
            scored.append(t["node"])
        elif "target" in t:
            targets.append(t)
        elif "note" in t:
            notes.append(t["note"])
    cap = Capture(json.load(open(a.graph)))
    present = {n for n in scored if n in cap.node_of}
    missing_children = sorted(set(scored) - present)

    methods = {
        "causal": cap.causal_parents(),
        "nearest-timestamp": cap.nearest_parents(),
        "correlation-only": cap.correlation_parents(),
    }
    per = {}
    for m, pred in methods.items():
        labelled = set(cap.node_of)
        per[m] = {"all": score(truth_parents, pred, present, labelled)}
        for s in sorted({scenario(c) for c in present}):
            sub = {c: v for c, v in truth_parents.items() if scenario(c) == s}
            per[m][s] = score(sub, pred, present, labelled)

    # Root cause, path fidelity, false-complete.
    kernels = defaultdict(list)
    for j, d in enumerate(cap.device):
        if d["kind"] == "kernel":
            kernels[d["name"]].append((d["begin_ns"], j))
    for v in kernels.values():
        v.sort()
    rc = {m: [0, 0] for m in methods}
    fid = {m: [0, 0] for m in methods}
    false_complete = {m: 0 for m in methods}
    rows = []
    for t in targets:
        node = cap.node_of.get(t["target"])
        if node is None:
            rows.append((t["target"], "not in capture"))
            continue
        j = node[1]
        d = cap.device[j]
        k = [x for _, x in kernels[d["name"]]].index(j) + 1
        bare = d["name"].split("(")[0].strip()
        bare = bare[5:] if bare.startswith("void ") else bare
        r = subprocess.run([a.cw, "why", "--kernel", f"{bare}#{k}", "--json", a.capture],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"evaluate: causeway why failed for {t['target']}: {r.stderr.strip()}")
        w = json.loads(r.stdout)
        chain_work = []
        for link in w["chain"]:
            (kind, x), = link["node"].items()
            if kind != "work":
                break
            chain_work.append(cap.name(("work", x)))
        answers = {"causal": (w["cause"], w["complete"], [t["target"]] + chain_work)}
        start = d["begin_ns"]
        for m in ("nearest-timestamp", "correlation-only"):
            pred = [x for x in methods[m].get(t["target"], ()) if x.startswith("W:")]
            prev = [cap.node_of.get(x) for x in pred]
            prev = [cap.device[n[1]] for n in prev if n]
            near = max(prev, key=lambda x: x["end_ns"], default=None)
            i = cap.call_of_seq.get(d.get("call"))
            issued_end = cap.calls[i].get("end_ns") if i is not None else None
            if near is not None and start - near["end_ns"] <= SLACK_NS:
                cause, path = "dependency", [t["target"], pred[prev.index(near)]]
            elif m == "correlation-only" and issued_end and start - issued_end > SLACK_NS:
                cause, path = "device", [t["target"]]
            else:
                cause, path = "host", [t["target"]]
            answers[m] = (cause, True, path)
        for m, (cause, complete, path) in answers.items():
            rc[m][0] += cause == t["cause"]
            rc[m][1] += 1
            n = len(t["path"])
            ok = path[:n] == t["path"] and (m != "causal" or len(chain_work) >= n - 1)
            if m == "causal" and n == 1:
                ok = not chain_work
            fid[m][0] += ok
            fid[m][1] += 1
            if complete and not t["complete"]:
                false_complete[m] += 1
        rows.append((t["target"], f"truth {t['cause']}: causal {w['cause']}"
                     f"{'' if w['complete'] else ' (incomplete)'}, nearest {answers['nearest-timestamp'][0]},"
                     f" correlation {answers['correlation-only'][0]}"))

    def pr(tp, fp, fn):
        p = tp / (tp + fp) if tp + fp else 1.0
        r = tp / (tp + fn) if tp + fn else 1.0
        return p, r

    print(f"== ambiguity benchmark {a.name}: {len(present)} scored nodes"
          f" ({len(missing_children)} truth nodes not in the capture: their records were lost),"
          f" {sum(len(v) for c, v in truth_parents.items() if c in present)} truth edges,"
          f" {len(targets)} targets; ring lost {cap.lost}")
    scen = sorted({scenario(c) for c in present})
    print(f"{'scenario':12} " + "  ".join(f"{m:>24}" for m in methods))
    for s in scen:
        cells = []
        for m in methods:
            p, r = pr(*per[m][s])
            cells.append(f"P {p:4.2f} R {r:4.2f} ({per[m][s][0]:3}/{sum(per[m][s]) - per[m][s][0]:2})")
        print(f"{s:12} " + "  ".join(f"{c:>24}" for c in cells))
    for m in methods:
        p, r = pr(*per[m]["all"])
        print(f"{m:18} precision {p:.3f} recall {r:.3f}  root cause top-1 {rc[m][0]}/{rc[m][1]}"
              f"  critical path {fid[m][0]}/{fid[m][1]}  false-complete {false_complete[m]}")
    def f1(t):
        p, r = pr(*t)
        return 2 * p * r / (p + r) if p + r else 0.0

    worse = []
    for pair in PAIRS:
        if not all(s in per["causal"] for s in pair):
            continue
        sums = {m: tuple(sum(per[m][s][i] for s in pair) for i in range(3)) for m in methods}
        c, n = f1(sums["causal"]), f1(sums["nearest-timestamp"])
        print(f"pair {' vs '.join(pair):24} F1 causal {c:.2f}  nearest-timestamp {n:.2f}"
              f"  correlation-only {f1(sums['correlation-only']):.2f}")
        if n < c - 0.05:
            worse.append(" vs ".join(pair))
    print(f"nearest-timestamp measurably worse (F1 lower by > 0.05) on {len(worse)} pair(s)")
    # The causal graph's false edges, to say what it got wrong.
    wrong = []
    for child in sorted(present):
        t = {("ABSENT" if lost else p) for p, lost in truth_parents.get(child, ())}
        for parent in sorted(methods["causal"].get(child, set()) - t - {UNSCORABLE}):
            wrong.append(f"  false edge: {child} <- {parent} ({cap.why_edge.get((child, parent), '?')})")
    for line in wrong[:20]:
        print(line)
    if len(wrong) > 20:
        print(f"  ... and {len(wrong) - 20} more false edges")
    for target, text in rows:
        print(f"  {target}: {text}")
    for n in notes:
        print(f"  note: {n}")
    result = {
        m: {"precision": pr(*per[m]["all"])[0], "recall": pr(*per[m]["all"])[1],
            "tp_fp_fn": per[m]["all"], "root_cause": rc[m], "critical_path": fid[m],
            "false_complete": false_complete[m],
            "scenarios": {s: per[m][s] for s in scen}}
        for m in methods
    }
    result["missing_children"] = missing_children
    result["baseline_worse_pairs"] = worse
    if a.json:
        json.dump(result, open(a.json, "w"), indent=1)
    return result


if __name__ == "__main__":
    main()
