#!/usr/bin/env python3
"""control_check.py: the table of issue 5's experiment (control.sh), from
  - the ground truth: TRUTH.tsv, lines "MODE PART ROUND STEP_US_MEDIAN" of bare runs of the workload
    (overlap.cu, or its CPU stand-in overlap_prog) with PART in both, x, y, none, both+ev (both, with
    the workload's own timing events around each operation);
  - one `causeway control --json` result per configuration and mode: JSON_DIR/CONFIG-MODE.json.

Ground truth per mode (medians over rounds of each run's median step time, in us):
    T_both, T_x, T_y, T_none;  serial = T_x + T_y - T_none;  parallel = max(T_x, T_y)
    truth = (T_x + T_y - T_none - T_both) / (min(T_x, T_y) - T_none), clamped to [0, 1]
i.e. how much of the shorter operation's time disappeared when both ran in one step (each isolated
variant pays the step's fixed cost T_none once; both together pay it once). truth > 0.5: overlapped,
else serialised. By construction a and i are overlapped, b, p and c serialised.

The claim checked per mode: copy_compute_overlap for a, b, p (a copy and a kernel); stream_concurrency
for c and i (two kernels). The harness's mark is judged against the truth with TOL = 0.2:
    instrumented median < truth - TOL   the instrument removed overlap: the mark should be
                                        "does-not-survive" (the harness must flag it)
    |instrumented median - truth| <= TOL   faithful: the mark should be "holds" (a flag is wrong)
    instrumented median > truth + TOL   the instrument invented overlap: the control is a lower bound
                                        and cannot see this by design; expected "holds", listed apart
A claim that is not tested (level 2 records no device timing) has no mark to judge: "n/a".

Usage: control_check.py TRUTH.tsv JSON_DIR [--md OUT.md] [--json OUT.json]
Prints the table (markdown); exit 0 whatever the findings, 2 on unreadable input.
"""
import json
import os
import sys

TOL = 0.2
COPY_MODES = ("a", "b", "p")
EXPECTED_BY_CONSTRUCTION = {"a": "overlapped", "b": "serialised", "p": "serialised",
                            "c": "serialised", "i": "overlapped"}
MODE_TEXT = {
    "a": "pinned H2D copy on S0, kernel on S1",
    "b": "copy and kernel on one stream",
    "p": "pageable cudaMemcpy (legacy stream) after a kernel on a blocking stream",
    "c": "kernel on S1 waits (event) for kernel on S0",
    "i": "same calls, event recorded before S0's kernel",
}


def lower_median(values):
    v = sorted(values)
    return v[(len(v) - 1) // 2] if v else None


def read_truth(path):
    """{(mode, part): [step_us_median per round]} from TRUTH.tsv (bad lines are skipped)."""
    out = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            p = line.split()
            if len(p) != 4:
                continue
            try:
                v = float(p[3])
            except ValueError:
                continue
            out.setdefault((p[0], p[1]), []).append(v)
    return out


def truth_of(samples, mode):
    """The ground truth of one mode (see the module doc), or None without all four variants."""
    t = {part: lower_median(samples.get((mode, part), [])) for part in ("both", "x", "y", "none")}
    if any(v is None for v in t.values()):
        return None
    denom = min(t["x"], t["y"]) - t["none"]
    ov = None
    if denom > 0:
        ov = max(0.0, min(1.0, (t["x"] + t["y"] - t["none"] - t["both"]) / denom))
    ev = lower_median(samples.get((mode, "both+ev"), []))
    return {
        "t_both_us": t["both"], "t_x_us": t["x"], "t_y_us": t["y"], "t_none_us": t["none"],
        "serial_us": t["x"] + t["y"] - t["none"], "parallel_us": max(t["x"], t["y"]),
        "overlap": ov,
        "verdict": None if ov is None else ("overlapped" if ov > 0.5 else "serialised"),
        "by_construction": EXPECTED_BY_CONSTRUCTION.get(mode),
        "t_both_timing_events_us": ev,
    }


def judge(truth_overlap, instrumented_median, mark):
    """(expected mark, right?, case) for one claim; expected None when there is nothing to judge."""
    if mark == "not-tested" or instrumented_median is None:
        return None, None, "n/a"
    if truth_overlap is None:
        return None, None, "no truth"
    if instrumented_median < truth_overlap - TOL:
        case, expected = "instrument removed overlap", "does-not-survive"
    elif instrumented_median > truth_overlap + TOL:
        case, expected = "instrument invented overlap (one-sided: not detectable)", "holds"
    else:
        case, expected = "faithful", "holds"
    return expected, expected == mark, case


def claim(doc, cid):
    for c in doc.get("claims", []):
        if c.get("id") == cid:
            return c
    return None


def spread(s, fmt="{:.2f}"):
    if not s:
        return "-"
    return "/".join(fmt.format(s[k]) for k in ("min", "median", "max"))


def analyse(truth_path, json_dir):
    samples = read_truth(truth_path)
    modes = sorted({m for (m, _) in samples} | {
        n.rsplit("-", 1)[1][:-5] for n in os.listdir(json_dir) if n.endswith(".json") and "-" in n},
        key=lambda m: "abpci".find(m) if m in "abpci" else 99)
    truths = {m: truth_of(samples, m) for m in modes}
    rows = []
    for name in sorted(os.listdir(json_dir)):
        if not name.endswith(".json") or "-" not in name:
            continue
        config, mode = name[:-5].rsplit("-", 1)
        row = {"config": config, "mode": mode}
        try:
            with open(os.path.join(json_dir, name), encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            row["error"] = f"unreadable: {e}"
            rows.append(row)
            continue
        cid = "copy_compute_overlap" if mode in COPY_MODES else "stream_concurrency"
        c = claim(doc, cid) or {}
        ins, ctl = c.get("instrumented"), c.get("control")
        t = truths.get(mode)
        tov = t["overlap"] if t else None
        expected, right, case = judge(tov, ins["median"] if ins else None, c.get("mark"))
        st = claim(doc, "step_time") or {}
        row.update({
            "claim": cid, "instrumented": ins, "control": ctl, "mark": c.get("mark"),
            "compared": c.get("compared"), "truth": tov, "expected": expected, "right": right,
            "case": case, "step_time_mark": st.get("mark"),
            "step_time_ratio": doc.get("step_time_ratio"),
            "process_time_ratio": doc.get("process_time_ratio"),
            "control_process_time_ratio": doc.get("control_process_time_ratio"),
            "instrumented_setup": doc.get("instrumented"), "notes": doc.get("notes", []),
        })
        rows.append(row)
    order = {"l2": 0, "cupti": 1, "events": 2}
    rows.sort(key=lambda r: ("abpci".find(r["mode"]) if r["mode"] in "abpci" else 99,
                             order.get(r["config"], 9), r["config"]))
    return truths, rows


def render(truths, rows):
    out = ["## Ground truth (bare runs, no shim; median step time in us)", "",
           "| mode | what | both | x alone | y alone | none | serial (x+y-none) | parallel (max) | "
           "true overlap | verdict | by construction | both, own timing events |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for m, t in truths.items():
        if not t:
            out.append(f"| {m} | {MODE_TEXT.get(m, '')} | missing variants | | | | | | | | | |")
            continue
        agree = "" if t["verdict"] == t["by_construction"] else " (DISAGREES)"
        ev = "-" if t["t_both_timing_events_us"] is None else f"{t['t_both_timing_events_us']:.0f}"
        ov = "-" if t["overlap"] is None else f"{t['overlap']:.2f}"
        out.append(f"| {m} | {MODE_TEXT.get(m, '')} | {t['t_both_us']:.0f} | {t['t_x_us']:.0f} | "
                   f"{t['t_y_us']:.0f} | {t['t_none_us']:.0f} | {t['serial_us']:.0f} | "
                   f"{t['parallel_us']:.0f} | {ov} | {t['verdict']}{agree} | "
                   f"{t['by_construction']} | {ev} |")
    out += ["", "## causeway control (per-run medians: min/median/max; control = lower bound)", "",
            "| mode | config | claim | instrumented | control (>=) | truth | mark | expected | right | "
            "step time mark | step ratio ins/ctl | process ratio ins/bare |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['mode']} | {r['config']} | {r['error']} | | | | | | | | | |")
            continue
        truth = "-" if r["truth"] is None else f"{r['truth']:.2f}"
        right = {True: "yes", False: "NO", None: "n/a"}[r["right"]]
        out.append(
            f"| {r['mode']} | {r['config']} | {r['claim']} | {spread(r['instrumented'])} | "
            f"{spread(r['control'])} | {truth} | {r['mark']} | {r['expected'] or '-'} | {right}"
            f"{'' if r['case'] in ('faithful', 'n/a') else ' (' + r['case'] + ')'} | "
            f"{r['step_time_mark']} | {spread(r['step_time_ratio'], '{:.3f}')} | "
            f"{spread(r['process_time_ratio'], '{:.3f}')} |")
    judged = [r for r in rows if r.get("right") is not None]
    wrong = [r for r in judged if not r["right"]]
    out += ["", f"marks judged: {len(judged)}, right: {len(judged) - len(wrong)}, wrong: {len(wrong)}"
            + "".join(f"\n  WRONG: mode {r['mode']} {r['config']}: mark {r['mark']}, expected "
                      f"{r['expected']} ({r['case']})" for r in wrong)]
    return "\n".join(out) + "\n"


def main(argv):
    args = argv[1:]
    md = js = None
    pos = []
    while args:
        a = args.pop(0)
        if a in ("--md", "--json") and args:
            if a == "--md":
                md = args.pop(0)
            else:
                js = args.pop(0)
        else:
            pos.append(a)
    if len(pos) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        truths, rows = analyse(pos[0], pos[1])
    except OSError as e:
        print(f"control_check: {e}", file=sys.stderr)
        return 2
    text = render(truths, rows)
    sys.stdout.write(text)
    if md:
        with open(md, "w", encoding="utf-8") as f:
            f.write(text)
    if js:
        with open(js, "w", encoding="utf-8") as f:
            json.dump({"tolerance": TOL, "truth": truths, "rows": rows}, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
