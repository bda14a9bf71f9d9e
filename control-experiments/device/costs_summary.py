#!/usr/bin/env python3
"""costs_summary.py TSV: the table of control-experiments/device/costs.sh.

TSV rows: section, round, arm, key, value (costs.sh writes them). For every section and measured key
(a step time, µs per op, calls/s, peak RSS) and every arm: min/median/max of the arm's values over its
rounds, and — paired with bare of the same round — the ratio arm/bare and the added amount arm − bare,
each min/median/max. For the tiny loop, also the ratio of torch.profiler's added cost to each arm's
(the issue's "at least 5x cheaper" figure). Entries per NVTX step and the checksums (the traced program
must compute the same thing in every arm) come last. Pressure rows (calls/s of 16 threads, drops)
compare bare and the shim the same way.
"""
import csv
import statistics
import sys
from collections import defaultdict

INFO_KEYS = {"checksum", "entries", "dropped", "steps"}
ARM_ORDER = ["bare", "profiler", "cuptifloor", "level1", "level2", "level4", "l3cupti", "l3cupticb",
             "cbdomain", "cbnots", "cbnort", "l3events", "l3events16", "shim"]


def mmm(v):
    return (min(v), statistics.median(v), max(v)) if v else None


def fmt(t, f="{:.3f}"):
    return "-" if t is None else " / ".join(f.format(x) for x in t)


def arm_key(a):
    return (ARM_ORDER.index(a) if a in ARM_ORDER else len(ARM_ORDER), a)


def load(path):
    # data[section][key][arm][round] = value
    data = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))
    with open(path, newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            v = row["value"]
            if row["key"] != "checksum":
                try:
                    v = float(v)
                except ValueError:
                    continue
            data[row["section"]][row["key"]][row["arm"]][int(row["round"])] = v
    return data


def paired(arm_vals, bare_vals):
    rounds = sorted(set(arm_vals) & set(bare_vals))
    ratio = [arm_vals[r] / bare_vals[r] for r in rounds if bare_vals[r]]
    added = [arm_vals[r] - bare_vals[r] for r in rounds]
    return ratio, added


def summarize(data, out):
    for sec in data:
        keys = data[sec]
        out.write(f"\n== {sec}\n")
        for key in sorted(k for k in keys if k not in INFO_KEYS):
            arms = keys[key]
            if sec == "pressure" and not key.endswith("calls_per_s"):
                continue
            out.write(f"{key}: min / median / max over rounds; ratio and added paired with bare\n")
            base = arms.get("bare", {})
            added_med = {}
            lines = []
            for arm in sorted(arms, key=arm_key):
                vals = arms[arm]
                line = f"  {arm:<11} n={len(vals)}  {fmt(mmm(list(vals.values())))}"
                if arm != "bare" and base:
                    ratio, added = paired(vals, base)
                    if ratio:
                        line += f"  | x bare {fmt(mmm(ratio))}  | added {fmt(mmm(added))}"
                        added_med[arm] = statistics.median(added)
                lines.append((arm, line))
            prof = added_med.get("profiler")
            for arm, line in lines:
                if key == "tiny_us_per_op" and prof is not None and arm not in ("bare", "profiler"):
                    a = added_med.get(arm)
                    if a is not None and a > 0:
                        line += f"  | profiler added / this added = {prof / a:.2f}"
                out.write(line + "\n")
        # Entries per step and drops.
        if "entries" in keys and "steps" in keys:
            out.write("capture: entries per NVTX step (median over rounds), dropped (max)\n")
            for arm in sorted(keys["entries"], key=arm_key):
                e, s = keys["entries"][arm], keys["steps"].get(arm, {})
                per = [e[r] / s[r] for r in e if s.get(r)]
                drop = max(keys.get("dropped", {}).get(arm, {0: 0}).values())
                if per:
                    out.write(f"  {arm:<11} {statistics.median(per):.1f} entries/step, dropped {drop:.0f}\n")
        if sec == "pressure":
            for key in sorted(k for k in keys if not k.endswith("calls_per_s")):
                vals = keys[key].get("shim", {})
                if vals:
                    out.write(f"  shim {key}: {fmt(mmm(list(vals.values())), '{:.0f}')}\n")
        if "checksum" in keys:
            seen = defaultdict(set)
            for arm, by_round in keys["checksum"].items():
                for ck in by_round.values():
                    seen[ck].add(arm)
            if len(seen) == 1:
                out.write(f"checksums: identical in every run ({next(iter(seen))})\n")
            else:
                out.write("checksums DIFFER: " + "; ".join(
                    f"{ck or '(none)'}: {','.join(sorted(a))}" for ck, a in seen.items()) + "\n")


def main(argv):
    if len(argv) != 2:
        print("usage: costs_summary.py COSTS.tsv", file=sys.stderr)
        return 2
    summarize(load(argv[1]), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
