#!/usr/bin/env python3
"""distortion_check.py: the table of issue 19's experiment (distortion.sh), from
  - TRUTH.tsv: lines "CASE PART ROUND STEP_US_MEDIAN" of bare runs of the workload (overlap.cu or its
    CPU stand-in), CASE = MODE:KERNEL_US:COPY_KIB, PART in both, x, y, none;
  - JSON_DIR/CASE--CONFIG.json (CASE with ':' as '-'): one `causeway control --json` per case and
    configuration (cupti, events, events16).

Per case, two truths of the copy/compute overlap:
  cupti  the cupti configuration's instrumented overlap (median over runs; CUPTI records nothing in
         the program's streams), with its run-to-run half-range as its own noise;
  wall   from the isolated variants: (T_x + T_y - T_none - T_both) / (min(T_x, T_y) - T_none), clamped
         to [0, 1] (how much of the shorter operation's time disappeared; at short ops the step's fixed
         cost counts twice, so read it beside the cupti truth, not instead of it).
Per row (case x configuration): the instrument moved the overlap by  moved = truth_cupti - instrumented.
The noise it is judged against is the larger of the harness's stated resolution for the claim and the
cupti truth's own half-range. Categories and the mark each calls for:
  removed   moved > noise: the instrument took overlap away; "does-not-survive". When the harness
            says "holds" but stated that its bound cannot expose a figure this high (detects_below
            at or under the instrumented figure), the row is "missed, as stated" rather than wrong.
  invented  moved < -noise: the instrument reads more overlap than CUPTI; the control is a lower bound
            and cannot see this by design: "holds", listed apart.
  faithful  otherwise: "holds".
The cupti row measures the truth itself (moved = 0 by construction): its mark should be "holds".
Step time: instrumented / control per round.

Usage: distortion_check.py TRUTH.tsv JSON_DIR [--md OUT.md] [--json OUT.json]
Prints the table (markdown); exit 0 whatever the findings, 2 on unreadable input.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from control_check import lower_median, read_truth  # noqa: E402  (the same truth file format)

OVERLAP = "copy_compute_overlap"


def wall_truth(samples, case):
    t = {part: lower_median(samples.get((case, part), [])) for part in ("both", "x", "y", "none")}
    if any(v is None for v in t.values()):
        return None, t
    denom = min(t["x"], t["y"]) - t["none"]
    if denom <= 0:
        return None, t
    return max(0.0, min(1.0, (t["x"] + t["y"] - t["none"] - t["both"]) / denom)), t


def claim(doc, cid):
    for c in doc.get("claims", []):
        if c.get("id") == cid:
            return c
    return {}


def spread(s):
    if not s:
        return None
    return (s.get("min"), s.get("median"), s.get("max"))


def fmt3(t, digits=2):
    if t is None or any(x is None for x in t):
        return "-"
    return "/".join(f"{x:.{digits}f}" for x in t)


def analyse(truth_path, json_dir):
    samples = read_truth(truth_path)
    docs = {}
    for name in sorted(os.listdir(json_dir)):
        if not name.endswith(".json") or "--" not in name:
            continue
        case, cfg = name[:-5].split("--", 1)
        with open(os.path.join(json_dir, name), encoding="utf-8") as f:
            docs[(case.replace("-", ":"), cfg)] = json.load(f)
    cases = sorted({c for c, _ in docs} | {c for c, _ in samples}, key=lambda c: (c[0], int(c.split(":")[1])))
    rows = []
    for case in cases:
        wt, parts = wall_truth(samples, case)
        cupti = docs.get((case, "cupti"))
        cs = spread(claim(cupti, OVERLAP).get("instrumented")) if cupti else None
        truth_cupti = cs[1] if cs else None
        truth_noise = (cs[2] - cs[0]) / 2 if cs else 0.0
        for cfg in ("cupti", "events", "events16", "contended"):
            doc = docs.get((case, cfg))
            if doc is None:
                continue
            ov = claim(doc, OVERLAP)
            ins = spread(ov.get("instrumented"))
            eff = ov.get("effect") or {}
            resolution = eff.get("resolution")
            mark = ov.get("mark", "-")
            moved = None
            expected = None
            category = None
            if ins and ins[1] is not None and truth_cupti is not None:
                moved = truth_cupti - ins[1]
                noise = max(resolution or 0.0, truth_noise)
                if moved > noise:
                    category, expected = "removed", "does-not-survive"
                elif moved < -noise:
                    category, expected = "invented", "holds"
                else:
                    category, expected = "faithful", "holds"
            st = claim(doc, "step_time")
            ratio = doc.get("step_time_ratio") or {}
            rows.append({
                "case": case,
                "config": cfg,
                "mode": case.split(":")[0],
                "kernel_us": int(case.split(":")[1]),
                "copy_kib": int(case.split(":")[2]),
                "step_ratio": spread(ratio),
                "step_mark": st.get("mark"),
                "instrumented": ins,
                "control_bound": spread(ov.get("control")),
                "detects_below": ov.get("detects_below"),
                "reference": spread(ov.get("reference")),
                "resolution": resolution,
                "truth_cupti": truth_cupti,
                "truth_wall": wt,
                "truth_parts_us": parts,
                "moved": moved,
                "mark": mark,
                "expected": expected,
                "category": category,
                "right": None if expected is None or mark == "not-tested" else mark == expected,
                "missed_as_stated": (category == "removed" and mark == "holds"
                                     and ov.get("detects_below") is not None
                                     and ins[1] is not None and ov["detects_below"] <= ins[1]),
                "busy_times_from": doc.get("busy_times_from"),
                "notes": doc.get("notes", []),
            })
    return rows


def verdict(r):
    if r["right"] is None:
        return "-"
    if r["right"]:
        return "yes"
    return "missed, as stated" if r["missed_as_stated"] else "NO"


def table(rows):
    out = ["| case (mode:kernel us:copy KiB) | config | step instr/control (min/med/max) | step mark | "
           "overlap instrumented (min/med/max) | control >= (min/med/max) | CUPTI arm (med) | truth CUPTI | "
           "truth wall | moved | resolution | category | mark | expected | right? |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        f = lambda v: "-" if v is None else f"{v:.2f}"
        out.append(
            f"| {r['case']} | {r['config']} | {fmt3(r['step_ratio'], 3)} | {r['step_mark'] or '-'} | "
            f"{fmt3(r['instrumented'])} | {fmt3(r['control_bound'])} | "
            f"{f(r['reference'][1]) if r['reference'] else '-'} | {f(r['truth_cupti'])} | "
            f"{f(r['truth_wall'])} | {f(r['moved'])} | {f(r['resolution'])} | {r['category'] or '-'} | "
            f"{r['mark']} | {r['expected'] or '-'} | {verdict(r)} |")
    judged = [r for r in rows if r["right"] is not None]
    right = sum(1 for r in judged if r["right"])
    stated = sum(1 for r in judged if not r["right"] and r["missed_as_stated"])
    invented = sum(1 for r in judged if r["category"] == "invented")
    out.append("")
    out.append(f"marks judged: {len(judged)}, right: {right}, missed as stated: {stated}, "
               f"wrong: {len(judged) - right - stated}; invented overlap (a lower bound cannot see it): {invented}")
    return "\n".join(out)


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    md = js = None
    rest = argv[3:]
    while rest:
        if rest[0] == "--md" and len(rest) > 1:
            md, rest = rest[1], rest[2:]
        elif rest[0] == "--json" and len(rest) > 1:
            js, rest = rest[1], rest[2:]
        else:
            print(f"distortion_check.py: unknown argument {rest[0]}", file=sys.stderr)
            return 2
    try:
        rows = analyse(argv[1], argv[2])
    except (OSError, ValueError) as e:
        print(f"distortion_check.py: {e}", file=sys.stderr)
        return 2
    text = table(rows)
    print(text)
    if md:
        with open(md, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    if js:
        with open(js, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
