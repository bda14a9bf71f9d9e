#!/usr/bin/env python3
"""backends_check.py: causeway's level-3 device-timing backends (cupti, cupti-cb, events) side by side.

Three commands (backends.sh runs them; causeway's JSON is read only through cw_json.py, plus the
raw `device.clock` section, which is printed as it is):

  backends_check.py workload --title T --cupti CUPTI.json [--profiler-durations PROF.json]
        --backend NAME REPORT.json [--backend NAME REPORT.json ...]
        [--run NAME RC STDOUT ...] --json OUT.json [--tol-rel 0.10] [--tol-abs-ns 2000]
        [--upper-backends events]
    For each backend's `causeway report --json` (a missing or unreadable file is "no report"):
    (a) association: device intervals per kernel name == the CUPTI reference's kernel records per
        name (cupti_count.so, a separate run); interval total == CUPTI's kernel + memcpy + memset
        records (when the reference counted copies); associated == intervals; unassociated == 0;
        dropped == 0; CUPTI itself dropped nothing: PASS. GRAPH-WHOLE (not a pass, reported as a
        finding) when the only differences are those of a backend that times each graph launch as
        one interval (a "[graph launch]" row): per name, count == CUPTI's - the report's own
        via_graph, the "[graph launch]" rows == totals.graph_launches. Otherwise FAIL.
    (b) durations: per kernel name, the backend's p50 device time vs the reference's p50 (CUPTI;
        and vs torch.profiler's when --profiler-durations is given). Two rules:
        symmetric (cupti, cupti-cb = the cupti backend with CAUSEWAY_CUPTI_CORRELATION=callback, and
        any backend not in --upper-backends): |p50 - reference p50| <= max(tol-rel x reference p50,
        tol-abs-ns) = max(10 %, 2 us). Verdicts: ok (within 10 %), ok-abs (only within the 2 us floor:
        passes, flagged), FAIL.
        upper bound (--upper-backends, default events): the events backend's interval is the stream
        time between a timing event recorded right before the launch call and one right after it, so
        it includes the time the stream waited before the work started (the host launch call on an
        idle stream, the wait for SMs on a busy device): an upper bound on the device time, not an
        estimate of it. Verdicts: upper-ok when p50 >= reference p50 - max(10 %, 2 us), else
        FAIL-below; the excess (p50 - reference p50, absolute and %) is printed per kernel and its
        median over the kernels, not judged. The workload's verdict is PASS when every compared
        kernel is upper-ok.
        Both: missing (a p50 on one side only: fails), graph-only (a kernel that ran only as a
        graph node, under a backend timing graph launches whole: not compared). A profiler name
        that matches no causeway name is "unmatched" (listed, not failed), as in level3_check.py.
        Rows like "[graph launch]" are not kernels: listed with their p50, not compared.
    (c) clock: the report's `clock` section, printed whole (conversion, checked, before_call,
        min_launch_to_start_ns, end_checked, end_before_call_end, and the events backend's bound:
        `bound_ns` {max, p50}, or the flat bound_ns_max / bound_ns_p50, or any key with "bound"
        in its name). Verdict PASS iff a causality check ran (start: checked > 0; end:
        end_checked > 0), found nothing (before_call == 0, end_before_call_end == 0), and no
        minimum latency is negative; nothing checked is not a pass.
    (d) checksums: each --run's first "checksum" line and exit code vs the run named "bare";
        a backend's run is the --run of the same NAME.
    Prints one table per workload (and the per-kernel durations), writes OUT.json (the verdicts,
    every number, and the printed lines). Exit 0 if every verdict passes, 1 if one does not,
    2 if the CUPTI reference cannot be read.

  backends_check.py perf --dir DIR --rounds R --arms bare,profiler,level2,l3cupti,l3cupti-cb,l3events
        [--report ARM REPORT.json ...] [--expect-ops N] [--target 5] --json OUT.json
    The tiny-kernel loop: DIR/perf-<arm>-<round>.out (tiny_loop.py's output; a run's value is
    its "median" us/op over its reps). Per arm the raw min/median/max us/op over the rounds; the
    paired added us/op: per round, arm - bare of the SAME round (the arms of a round run
    interleaved, so the machine's drift between rounds cancels), min/median/max over the rounds;
    and for each level-3 arm (l3*) the ratio (median paired torch.profiler added) / (median paired
    added of that arm); target >= --target (5). The unpaired figures (median(arm) -
    median(bare)) are printed for comparison only.
    With --report, checks that the arm's round-1 run recorded every op (level 3: device
    intervals >= N, 0 unassociated, 0 dropped; level 2: kernel launches >= N): a ratio of a run
    that did not is marked INVALID. Every run's checksum line must equal bare's.
    Exit 0 when every ratio is MET, 1 otherwise, 2 without data.

  backends_check.py summary --in A.json [B.json ...] --json OUT.json [--markdown OUT.md]
    Prints the tables of the given JSONs again, then one verdict line per workload x backend and
    per ratio, and the FINDINGS (verdicts that did not pass); writes all of it as one JSON and
    markdown. Exit 0 (2 if no input could be read).
"""
import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cw_json  # noqa: E402
from compare_counts import clip  # noqa: E402
from level3_check import (InputError, fmt_ns, load_cupti, load_json,  # noqa: E402
                          load_profiler_durations, match_profiler, read_round, spread, verdict,
                          verify_l2)

TOL_REL = 0.10
TOL_ABS_NS = 2000.0


def num(v):
    return None if isinstance(v, bool) or not isinstance(v, (int, float)) else v


def fmt(v):
    return "-" if v is None else str(v)


def pct(rel):
    if rel is None:
        return "-"
    if math.isinf(rel):
        return "inf"
    return f"{rel * 100:+.1f}%"


def fmt3(v):
    return "-" if v is None else f"{v:.3f}"


def ratio_s(a, b):
    return f"{fmt(a)}/{fmt(b)}"


def tol_text(tol_rel, tol_abs):
    return f"|p50 - reference p50| <= max({tol_rel * 100:g}% of the reference p50, {fmt_ns(tol_abs)})"


def upper_tol_text(tol_rel, tol_abs):
    return (f"p50 >= reference p50 - max({tol_rel * 100:g}% of the reference p50, {fmt_ns(tol_abs)}) "
            "(an upper bound: never meaningfully shorter than the reference)")


# Backends whose device intervals are an upper bound on the kernel's execution time (--upper-backends).
UPPER_BACKENDS = ("events",)
UPPER_SEMANTICS = (
    "the events backend records a timing event on the stream right before the launch call and another "
    "right after it; its interval is the stream time between the two, so it includes any time the stream "
    "waited before the work started (on an idle stream: the host launch call; on a busy device: waiting "
    "for SMs). It is an UPPER BOUND on the device execution time, not an estimate of it: its p50 may "
    "exceed the reference's by any amount (the excess is reported), and must not be shorter beyond the "
    "tolerance.")


def duration_mode(name, upper=UPPER_BACKENDS):
    """"upper" for a backend whose intervals bound the device time from above (events), else
    "symmetric" (cupti, and cupti-cb: the cupti backend with callback correlation)."""
    return "upper" if name in upper else "symmetric"


def upper_verdict(value, ref, tol_rel, tol_abs):
    """(verdict, delta_ns, delta_rel) of an upper bound against the reference: upper-ok when
    value >= ref - max(tol_rel x ref, tol_abs), FAIL-below otherwise; missing without both."""
    if value is None or ref is None:
        return "missing", None, None
    d = value - ref
    rel = (d / ref) if ref else (0.0 if d == 0 else math.inf)
    if d >= -max(tol_rel * abs(ref), tol_abs):
        return "upper-ok", d, rel
    return "FAIL-below", d, rel


def signed_ns(v):
    if v is None:
        return "-"
    return ("+" if v >= 0 else "-") + fmt_ns(abs(v))


def excess_summary(rows):
    """min/median/max of (p50 - reference p50) over the rows that have both, and the median %."""
    ds = [r["delta_ns"] for r in rows if r.get("delta_ns") is not None]
    rels = [r["rel"] for r in rows if num(r.get("rel")) is not None and math.isfinite(r["rel"])]
    mn, md_, mx = spread(ds)
    return {"kernels": len(ds), "min_ns": mn, "median_ns": md_, "max_ns": mx,
            "median_rel": spread(rels)[1]}


def excess_text(e):
    if not e or not e.get("kernels"):
        return "no kernel compared"
    return (f"median {signed_ns(e['median_ns'])} and {pct(e['median_rel'])} over {e['kernels']} kernel(s) "
            f"(min {signed_ns(e['min_ns'])}, max {signed_ns(e['max_ns'])})")


def jsonable(x):
    """x with inf/nan turned into strings (json.dump would write invalid JSON)."""
    if isinstance(x, float) and (math.isinf(x) or math.isnan(x)):
        return str(x)
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    return x


def write_json(path, doc):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(jsonable(doc), f, indent=1, sort_keys=False)
        f.write("\n")


# ---------------------------------------------------------------------------
# one backend's report


def find_bound(clock):
    """(present, value) of the events backend's clock bound: clock["bound_ns"] (an object
    {max, p50}, a number or null); else the flat clock["bound_ns_max"] / ["bound_ns_p50"] as
    {"max", "p50"} (None when both are null); else {key: value} of the keys with "bound" in
    their name."""
    if not isinstance(clock, dict):
        return False, None
    if "bound_ns" in clock:
        return True, clock["bound_ns"]
    if "bound_ns_max" in clock or "bound_ns_p50" in clock:
        mx, p50 = clock.get("bound_ns_max"), clock.get("bound_ns_p50")
        return True, (None if mx is None and p50 is None else {"max": mx, "p50": p50})
    other = {k: v for k, v in clock.items() if "bound" in str(k).lower()}
    if other:
        return True, other
    return False, None


def fmt_bound(present, value):
    if not present:
        return "-"
    if value is None:
        return "null"
    if num(value) is not None:
        return fmt_ns(value)
    if isinstance(value, dict):
        if "max" in value or "p50" in value:
            return f"{fmt_ns(num(value.get('max')))}/{fmt_ns(num(value.get('p50')))}"
        return ",".join(f"{k}={fmt_bound(True, v)}" for k, v in value.items())
    return str(value)


def dur_counts_s(k):
    """The table's "ok/abs/FAIL/miss/gr" cell; an upper-bound backend: upper-ok/-/FAIL-below/..."""
    if "upper-ok" in k:
        return f"{k['upper-ok']}/-/{k['FAIL-below']}/{k['missing']}/{k['graph-only']}"
    return "/".join(str(k[x]) for x in ("ok", "ok-abs", "FAIL", "missing", "graph-only"))


def is_synthetic(name):
    """A device row that is not one kernel: "[graph launch]" (a graph launch timed whole)."""
    return name.startswith("[") and name.endswith("]")


def backend_view(rep):
    """What the checks need from one report (a dict), every number None when absent."""
    dev = rep.get("device") if isinstance(rep.get("device"), dict) else {}
    procs = [p for p in rep.get("processes") or [] if isinstance(p, dict)]
    summ = cw_json.causeway_device_summary(rep)
    stats = cw_json.causeway_device_stats(rep)
    extras = cw_json.causeway_device_extras(rep)
    associated = num(dev.get("associated"))
    if associated is None:
        vals = [num(p.get("associated")) for p in procs if num(p.get("associated")) is not None]
        associated = sum(vals) if vals else None
    clock = dev.get("clock") if isinstance(dev.get("clock"), dict) else rep.get("clock")
    clock = clock if isinstance(clock, dict) else None
    bpresent, bvalue = find_bound(clock)
    unassoc = dev.get("unassociated")
    copies = dev.get("copies") if isinstance(dev.get("copies"), list) else []
    via_graph = {}
    for row in rep.get("kernels") or []:
        if isinstance(row, dict) and row.get("name") is not None and num(row.get("via_graph")):
            via_graph[str(row["name"])] = via_graph.get(str(row["name"]), 0) + int(row["via_graph"])
    totals = rep.get("totals") if isinstance(rep.get("totals"), dict) else {}
    # The rings that timed something (children such as ptxas or a shell record no device work).
    rings = sorted({str(p.get("backend")) for p in procs
                    if p.get("backend") is not None and (num(p.get("device_intervals")) or 0) > 0})
    if not rings:
        rings = sorted({str(p.get("backend")) for p in procs if p.get("backend") is not None})
    return {
        "summary": summ,
        "stats": stats,
        "extras": extras,
        "associated": associated,
        "untimed": num(dev.get("untimed")),
        "unassociated_detail": unassoc if isinstance(unassoc, dict) else None,
        "clock": clock,
        "bound_present": bpresent,
        "bound": bvalue,
        "ring_backends": rings,
        "via_graph": via_graph,
        "graph_launches": num(totals.get("graph_launches")),
        "notices": sorted({str(p["notice"]) for p in procs if p.get("notice")}),
        "copies": [c for c in copies if isinstance(c, dict)],
    }


def check_association(view, cupti, cupti_doc):
    summ, stats = view["summary"], view["stats"]
    problems = []
    names = sorted(set(cupti) | set(stats),
                   key=lambda n: (-max(cupti.get(n, 0), (stats.get(n) or {}).get("count") or 0), n))
    mism = []
    for n in names:
        c, d = cupti.get(n), (stats.get(n) or {}).get("count")
        if (c or 0) != (d or 0):
            mism.append({"name": n, "reference": c, "backend": d})
    if not stats:
        problems.append("no device kernel intervals in the report")
    if mism:
        problems.append(f"{len(mism)} of {len(names)} kernel name(s) differ in count from CUPTI's")
    iv = summ.get("intervals")
    ref_records = None
    if cupti_doc.get("copies"):
        ref_records = (sum(cupti.values()) + int(num(cupti_doc.get("memcpy")) or 0)
                       + int(num(cupti_doc.get("memset")) or 0))
        if iv is None:
            problems.append("the report does not say how many device intervals it has")
        elif iv != ref_records:
            problems.append(f"intervals {iv} != CUPTI kernel+memcpy+memset records {ref_records}")
    un = summ.get("unassociated")
    if un is None:
        problems.append("the report does not say how many intervals are unassociated")
    elif un != 0:
        problems.append(f"unassociated = {un} (want 0)")
    assoc = view["associated"]
    if assoc is not None and iv is not None and assoc != iv:
        problems.append(f"associated {assoc} != intervals {iv}")
    dd = summ.get("device_dropped")
    if dd is None:
        problems.append("the report does not say how many device records were dropped")
    elif dd != 0:
        problems.append(f"dropped = {dd} (want 0)")
    cd = num(cupti_doc.get("dropped")) or 0
    if cd:
        problems.append(f"the CUPTI reference dropped {cd} records: it is incomplete")
    verdict_s = "FAIL" if problems else "PASS"
    graph = graph_whole(view, cupti, ref_records, stats, iv)
    if problems and graph is not None and graph["reconciles"]:
        # Only the count differences a backend that times each graph launch whole must have.
        rest = [p for p in problems if not (p.startswith("intervals ") or " differ in count " in p)]
        if not rest:
            verdict_s = "GRAPH-WHOLE"
            problems.append(f"graph launches timed whole: {graph['graph_intervals']} interval(s) named "
                            f"{', '.join(graph['names'])} stand for {graph['node_kernels']} graph-node "
                            f"kernel executions of {graph['graph_launches']} graph launch(es); every other "
                            "count matches CUPTI's")
    return {
        "verdict": verdict_s,
        "graph_whole": graph,
        "intervals": iv,
        "reference_records": ref_records,
        "reference_kernels": sum(cupti.values()),
        "backend_kernels": sum((s.get("count") or 0) for s in stats.values()),
        "associated": assoc,
        "unassociated": un,
        "unassociated_detail": view["unassociated_detail"],
        "dropped": dd,
        "untimed": view["untimed"],
        "names": len(names),
        "names_matched": len(names) - len(mism),
        "mismatches": mism,
        "problems": problems,
    }


def graph_whole(view, cupti, ref_records, stats, iv):
    """Whether the count differences are exactly those of a backend that times each graph launch
    as one interval (named like "[graph launch]"): per kernel name, backend count == CUPTI count -
    via_graph (the report's own host count of graph-node executions), the synthetic rows count the
    graph launches, and the interval total is CUPTI's records - graph-node kernels + graph
    launches. None when the report has no synthetic row."""
    synth = {n: s.get("count") or 0 for n, s in stats.items() if is_synthetic(n)}
    if not synth:
        return None
    vg = view["via_graph"]
    nodes = sum(vg.values())
    gl = view["graph_launches"]
    bad = []
    for n in sorted(set(cupti) | {n for n in stats if not is_synthetic(n)}):
        want = (cupti.get(n) or 0) - vg.get(n, 0)
        got = (stats.get(n) or {}).get("count") or 0
        if got != want:
            bad.append(n)
    gi = sum(synth.values())
    total_ok = ref_records is None or iv == ref_records - nodes + gi
    return {"names": sorted(synth), "graph_intervals": gi, "graph_launches": gl, "node_kernels": nodes,
            "names_off": bad,
            "reconciles": not bad and gl is not None and gi == gl and nodes > 0 and total_ok}


def check_durations(view, cupti_durs, prof, pmap, tol_rel, tol_abs, cupti=None, mode="symmetric"):
    """Per kernel name: the backend's p50 vs the reference's. mode "symmetric" (cupti, cupti-cb):
    |d| <= max(tol_rel, tol_abs): ok / ok-abs / FAIL. mode "upper" (events: an upper bound on the
    device time): p50 >= ref - max(tol_rel, tol_abs): upper-ok, else FAIL-below; the excess
    (p50 - ref) per kernel and its median over the kernels are reported. Both: missing (a p50 on one
    side only: fails). A kernel that ran only as a graph node (the report's via_graph == CUPTI's
    count) has no p50 of its own under a backend that times graph launches whole (a "[graph launch]"
    row): verdict "graph-only", not compared."""
    upper = mode == "upper"
    judge = upper_verdict if upper else verdict
    stats = view["stats"]
    whole = any(is_synthetic(n) for n in stats)
    names = sorted(set(cupti_durs) | {n for n, s in stats.items()
                                      if s.get("p50_ns") is not None and not is_synthetic(n)},
                   key=lambda n: (-(num((cupti_durs.get(n) or {}).get("p50_ns")) or 0), n))
    synthetic = [{"name": n, "count": s.get("count"), "p50_ns": num(s.get("p50_ns"))}
                 for n, s in sorted(stats.items()) if is_synthetic(n)]
    keys = ("upper-ok", "FAIL-below") if upper else ("ok", "ok-abs", "FAIL")
    counts = dict.fromkeys(keys + ("missing", "graph-only"), 0)
    pcounts = dict.fromkeys(keys + ("missing", "unmatched", "graph-only"), 0)
    rows = []
    for n in names:
        p50 = num((stats.get(n) or {}).get("p50_ns"))
        ref = num((cupti_durs.get(n) or {}).get("p50_ns"))
        v, d, rel = judge(p50, ref, tol_rel, tol_abs)
        if (v == "missing" and p50 is None and whole and cupti
                and view["via_graph"].get(n, 0) == cupti.get(n, -1) > 0):
            v = "graph-only"
        counts[v] += 1
        row = {"name": n, "count": (stats.get(n) or {}).get("count"), "p50_ns": p50,
               "reference_count": (cupti_durs.get(n) or {}).get("count"), "reference_p50_ns": ref,
               "delta_ns": d, "rel": rel, "verdict": v}
        if prof is not None and v == "graph-only":
            row.update(profiler_name=pmap.get(n), profiler_p50_ns=None, profiler_verdict="graph-only")
            pcounts["graph-only"] += 1
        elif prof is not None:
            pn = pmap.get(n)
            if pn is None:
                pcounts["unmatched"] += 1
                row.update(profiler_name=None, profiler_p50_ns=None, profiler_verdict="unmatched")
            else:
                pp = num(prof[pn].get("p50_ns"))
                pv, pd, prel = judge(p50, pp, tol_rel, tol_abs)
                pcounts[pv] += 1
                row.update(profiler_name=pn, profiler_p50_ns=pp, profiler_delta_ns=pd, profiler_rel=prel,
                           profiler_verdict=pv)
        rows.append(row)
    problems = []
    fail = "FAIL-below" if upper else "FAIL"
    if not rows:
        problems.append("no kernel durations to compare")
    if counts[fail]:
        failed = [clip(r["name"], 50) for r in rows if r["verdict"] == fail]
        what = ("shorter than CUPTI's p50 beyond the tolerance (an upper bound cannot be)" if upper
                else "outside the tolerance vs CUPTI")
        problems.append(f"{counts[fail]} kernel(s) {what}: "
                        + ", ".join(failed[:5]) + (", ..." if len(failed) > 5 else ""))
    if counts["missing"]:
        problems.append(f"{counts['missing']} kernel(s) have a p50 on one side only (vs CUPTI)")
    if prof is not None:
        if pcounts[fail]:
            what = "shorter than torch.profiler's p50 beyond the tolerance" if upper else \
                "outside the tolerance vs torch.profiler"
            problems.append(f"{pcounts[fail]} kernel(s) {what}")
        if rows and pcounts["unmatched"] == len(rows):
            problems.append("no kernel name matched torch.profiler's")
    excess = excess_summary(rows)
    pexcess = None
    if prof is not None:
        pexcess = excess_summary([{"delta_ns": r.get("profiler_delta_ns"), "rel": r.get("profiler_rel")}
                                  for r in rows])
    return {"verdict": "FAIL" if problems else "PASS", "mode": mode,
            "rule": upper_tol_text(tol_rel, tol_abs) if upper else tol_text(tol_rel, tol_abs),
            "counts": counts, "profiler_counts": pcounts if prof is not None else None, "kernels": rows,
            "excess": excess, "profiler_excess": pexcess, "synthetic": synthetic, "problems": problems}


def check_clock(view):
    """Causality checks the report ran: start (intervals starting before their issuing call began:
    before_call of checked) and, where the report has them, end (end_before_call_end of
    end_checked). PASS iff at least one ran on some intervals, none found a violation, and no
    minimum latency is negative — except that an end violation no larger than the report's stated
    bound (bound_ns_max) is what the bound allows: noted, not failed."""
    summ = view["summary"]
    clock = view["clock"] or {}
    neg, minlat = summ.get("causality_negative"), summ.get("min_latency_ns")
    checked = num(clock.get("checked"))
    end_checked, end_before = num(clock.get("end_checked")), num(clock.get("end_before_call_end"))
    min_end = num(clock.get("min_call_end_to_device_end_ns"))
    problems = []
    if view["clock"] is None:
        problems.append("the report has no clock section")
    start_ran = (checked or 0) > 0 or (checked is None and minlat is not None)
    end_ran = (end_checked or 0) > 0
    if start_ran:
        if neg is None:
            problems.append("the report does not say how many intervals start before their call")
        elif neg != 0:
            problems.append(f"{neg} device interval(s) start before their issuing call (want 0)")
        if minlat is None:
            problems.append("no minimum launch->start latency although intervals were checked")
    notes = []
    bound_max = num(clock.get("bound_ns_max"))
    # A negative call end -> device end is a measured lower bound on the conversion error: it is a
    # failure only when it exceeds the error the report states (the events backend's bound).
    within_bound = min_end is not None and min_end < 0 and bound_max is not None and -min_end <= bound_max
    if end_ran:
        if end_before is None:
            problems.append("the report does not say how many intervals end before their call ended")
        elif end_before != 0 and within_bound:
            notes.append(f"{end_before} device interval(s) end before their issuing call ended, by at most "
                         f"{-min_end} ns: within the stated bound (max {bound_max} ns)")
        elif end_before != 0:
            problems.append(f"{end_before} device interval(s) end before their issuing call ended (want 0, "
                            f"or within the stated bound)")
    if not start_ran and not end_ran:
        problems.append("no causality check ran (checked = 0 and no end check): nothing was checked")
    if minlat is not None and minlat < 0:
        problems.append(f"min launch->start latency {minlat} ns is negative")
    if min_end is not None and min_end < 0 and not within_bound:
        problems.append(f"min call end->device end {min_end} ns is negative, beyond the stated bound")
    return {"verdict": "FAIL" if problems else "PASS", "notes": notes, "section": view["clock"],
            "before_call": neg, "checked": checked, "min_launch_to_start_ns": minlat,
            "start_check_ran": start_ran, "end_check_ran": end_ran, "end_checked": end_checked,
            "end_before_call_end": end_before, "min_call_end_to_device_end_ns": min_end,
            "conversion": view["extras"].get("conversion"),
            "bound_present": view["bound_present"], "bound_ns": view["bound"], "problems": problems}


def read_checksum(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("checksum"):
                    return line.strip()
    except OSError:
        pass
    return None


def cmd_workload(args):
    title = args.title
    tol_rel, tol_abs = args.tol_rel, args.tol_abs_ns
    try:
        cupti, cupti_durs, cupti_doc = load_cupti(args.cupti)
        prof = load_profiler_durations(args.profiler_durations) if args.profiler_durations else None
    except InputError as exc:
        print(f"backends_check: {exc}", file=sys.stderr)
        doc = {"kind": "workload", "title": title, "error": str(exc),
               "table": [f"== {title}: no CUPTI reference ({exc}) =="], "findings": [
                   f"{title}: no CUPTI reference: nothing compared"]}
        write_json(args.json, doc)
        print(doc["table"][0])
        return 2

    runs = {}
    for name, rc, path in args.run or []:
        try:
            rc_v = int(rc)
        except ValueError:
            rc_v = None
        runs[name] = {"rc": rc_v, "checksum": read_checksum(path), "stdout": path}
    bare = runs.get("bare")
    for name, r in runs.items():
        if bare is None or name == "bare":
            r["same_as_bare"] = None
        else:
            r["same_as_bare"] = (r["checksum"] is not None and r["checksum"] == bare["checksum"]
                                 and r["rc"] == bare["rc"])

    views, errors = {}, {}
    for name, path in args.backend or []:
        try:
            rep = load_json(path, f"{name} report")
            if not isinstance(rep, dict):
                raise InputError(f"{name} report: {path}: not an object")
            views[name] = backend_view(rep)
        except (InputError, ValueError) as exc:
            errors[name] = str(exc)
    all_names = set(cupti_durs)
    for v in views.values():
        all_names |= set(v["stats"])
    pmap = match_profiler(sorted(all_names), prof)[0] if prof is not None else {}

    order = [b for b, _ in args.backend or []]
    upper = tuple(x for x in (args.upper_backends or "").split(",") if x)
    modes = {b: duration_mode(b, upper) for b in order}
    res = {}
    for b in order:
        if b in errors:
            res[b] = {"status": "no report", "error": errors[b],
                      "association": {"verdict": "NO DATA"}, "durations": {"verdict": "NO DATA"},
                      "clock": {"verdict": "NO DATA"}}
        else:
            v = views[b]
            res[b] = {"status": "ok", "duration_mode": modes[b], "ring_backends": v["ring_backends"],
                      "notices": v["notices"],
                      "association": check_association(v, cupti, cupti_doc),
                      "durations": check_durations(v, cupti_durs, prof, pmap, tol_rel, tol_abs, cupti,
                                                   mode=modes[b]),
                      "clock": check_clock(v), "copies": v["copies"]}
        r = runs.get(b)
        res[b]["checksum"] = ("-" if r is None or r["same_as_bare"] is None
                              else ("same" if r["same_as_bare"] else "DIFF"))

    # ---- the table ------------------------------------------------------------------------------
    out = []
    ref_records = (sum(cupti.values()) + int(num(cupti_doc.get("memcpy")) or 0)
                   + int(num(cupti_doc.get("memset")) or 0)) if cupti_doc.get("copies") else None
    sym_b = [b for b in order if modes[b] == "symmetric"]
    up_b = [b for b in order if modes[b] == "upper"]
    out.append(f"== {title}: level-3 backends vs the CUPTI reference (separate run) ==")
    if sym_b or not up_b:
        out.append(f"durations of {', '.join(sym_b) or '-'}: tolerance {tol_text(tol_rel, tol_abs)}: "
                   "ok, ok-abs (only within the floor), else FAIL")
    if up_b:
        out.append(f"durations of {', '.join(up_b)}: an UPPER BOUND: {upper_tol_text(tol_rel, tol_abs)}: "
                   "upper-ok, else FAIL-below (the ok/abs/FAIL cells below: upper-ok/-/FAIL-below); the "
                   "excess (p50 - reference p50) is reported, not judged")
        out.append(f"  why: {UPPER_SEMANTICS}")
    out.append(f"reference (cupti_count): {sum(cupti.values())} kernel records in {len(cupti)} names, "
               f"memcpy {cupti_doc.get('memcpy') if cupti_doc.get('copies') else '-'}, memset "
               f"{cupti_doc.get('memset') if cupti_doc.get('copies') else '-'} -> {fmt(ref_records)} "
               f"records; dropped {cupti_doc.get('dropped')}")
    if bare is not None:
        others = [f"{n}: {'same' if r['same_as_bare'] else 'DIFF'}" for n, r in runs.items()
                  if n != "bare" and n not in res and r["same_as_bare"] is not None]
        out.append(f"bare: {bare['checksum'] or '<no checksum line>'} (exit {fmt(bare['rc'])})"
                   + "".join(f"; {x}" for x in others))
    head = (f"{'backend':<8} {'ring':<7} {'intervals/ref':>13} {'assoc':>7} {'unassoc':>7} "
            f"{'dropped':>7} {'untimed':>7} {'names':>7} {'dur ok/abs/FAIL/miss/gr':>23} "
            f"{'start<call':>11} {'end<end':>11} {'min lat':>9} {'bound max/p50':>15} {'checksum':>8}  "
            "verdicts")
    out.append(head)
    out.append("-" * len(head))
    for b in order:
        r = res[b]
        if r["status"] != "ok":
            out.append(f"{b:<8} {'-':<7} {'-':>13} {'-':>7} {'-':>7} {'-':>7} {'-':>7} {'-':>7} "
                       f"{'-':>23} {'-':>11} {'-':>11} {'-':>9} {'-':>15} {r['checksum']:>8}  NO REPORT")
            continue
        a, d, c = r["association"], r["durations"], r["clock"]
        k = d["counts"]
        out.append(
            f"{b:<8} {','.join(r['ring_backends']) or '-':<7} "
            f"{fmt(a['intervals']) + '/' + fmt(a['reference_records']):>13} {fmt(a['associated']):>7} "
            f"{fmt(a['unassociated']):>7} {fmt(a['dropped']):>7} {fmt(a['untimed']):>7} "
            f"{str(a['names_matched']) + '/' + str(a['names']):>7} "
            f"{dur_counts_s(k):>23} "
            f"{ratio_s(c['before_call'], c['checked']) if c['start_check_ran'] else '-':>11} "
            f"{ratio_s(c['end_before_call_end'], c['end_checked']) if c['end_check_ran'] else '-':>11} "
            f"{fmt_ns(c['min_launch_to_start_ns']):>9} "
            f"{fmt_bound(c['bound_present'], c['bound_ns']):>15} {r['checksum']:>8}  "
            f"assoc={a['verdict']} dur={d['verdict']} clock={c['verdict']}")
    out.append("-" * len(head))

    # per-kernel durations
    ok_backends = [b for b in order if res[b]["status"] == "ok"]
    if ok_backends:
        kw = 44
        knames = []
        for b in ok_backends:
            for row in res[b]["durations"]["kernels"]:
                if row["name"] not in knames:
                    knames.append(row["name"])
        knames.sort(key=lambda n: (-(num((cupti_durs.get(n) or {}).get("p50_ns")) or 0), n))
        h = f"{'kernel (p50 device time)':<{kw}} {'n ref':>6} {'ref p50':>9}"
        if prof is not None:
            h += f" {'prof p50':>9}"
        for b in ok_backends:
            if modes[b] == "upper":
                h += f" | {b + ' p50':>12} {'excess':>9} {'ex%':>8} {'vs ref':>10}"
            else:
                h += f" | {b + ' p50':>12} {'d%':>8} {'vs ref':>10}"
            if prof is not None:
                h += f" {'vs prof':>10}"
        out.append(h)
        for n in knames:
            ref = cupti_durs.get(n) or {}
            s = f"{clip(n, kw):<{kw}} {fmt(ref.get('count')):>6} {fmt_ns(num(ref.get('p50_ns'))):>9}"
            if prof is not None:
                pn = pmap.get(n)
                s += f" {fmt_ns(num(prof[pn].get('p50_ns')) if pn else None):>9}"
            for b in ok_backends:
                row = next((x for x in res[b]["durations"]["kernels"] if x["name"] == n), None)
                up = modes[b] == "upper"
                if row is None:
                    s += f" | {'-':>12}" + (f" {'-':>9}" if up else "") + f" {'-':>8} {'-':>10}"
                    s += f" {'-':>10}" if prof is not None else ""
                    continue
                s += f" | {fmt_ns(row['p50_ns']):>12}"
                if up:
                    s += f" {signed_ns(row['delta_ns']):>9}"
                s += f" {pct(row['rel']):>8} {row['verdict']:>10}"
                if prof is not None:
                    s += f" {row.get('profiler_verdict', '-'):>10}"
            out.append(s)
    for b in order:
        r = res[b]
        if r["status"] != "ok":
            out.append(f"[{b}] no report: {r['error']}")
            continue
        out.append(f"[{b}] clock: " + json.dumps(r["clock"]["section"], sort_keys=True))
        if not r["clock"]["bound_present"]:
            out.append(f"[{b}] clock bound: not in the report")
        cps = [f"{c.get('kind', '?')} n={fmt(c.get('count'))} p50={fmt_ns(num(c.get('p50_ns')))}"
               for c in r["copies"]]
        if cps:
            out.append(f"[{b}] copies: " + "; ".join(cps))
        for n in r["notices"]:
            out.append(f"[{b}] shim notice: {n}")
        if modes[b] == "upper":
            out.append(f"[{b}] durations are an upper bound: excess over CUPTI's p50: "
                       f"{excess_text(r['durations']['excess'])}")
            if r["durations"].get("profiler_excess") is not None:
                out.append(f"[{b}] excess over torch.profiler's p50: "
                           f"{excess_text(r['durations']['profiler_excess'])}")
        for x in r["durations"]["synthetic"]:
            out.append(f"[{b}] not a kernel row (not compared): {x['name']} n={fmt(x['count'])} "
                       f"p50={fmt_ns(x['p50_ns'])}")
        for m in r["association"]["mismatches"][:12]:
            out.append(f"[{b}]   count mismatch: {clip(m['name'], 70)}: cupti={fmt(m['reference'])} "
                       f"{b}={fmt(m['backend'])}")
        for part in ("association", "durations", "clock"):
            for p in r[part]["problems"]:
                out.append(f"[{b}] problem ({part}): {p}")
        if r["checksum"] == "DIFF":
            rr = runs[b]
            out.append(f"[{b}] problem (checksum): '{rr['checksum'] or '<none>'}' (exit {fmt(rr['rc'])})"
                       f" != bare '{bare['checksum'] or '<none>'}' (exit {fmt(bare['rc'])})")
    short = sorted({row["name"] for b in ok_backends for row in res[b]["durations"]["kernels"]
                    if row["verdict"] == "ok-abs"})
    if short:
        out.append(f"note: {len(short)} kernel(s) pass only through the {fmt_ns(tol_abs)} floor for "
                   "some backend: " + ", ".join(clip(x, 50) for x in short))
    for n, r in runs.items():
        if n not in res and n != "bare" and r["same_as_bare"] is False:
            out.append(f"note: the {n} run's checksum/exit differs from bare: '{r['checksum']}' "
                       f"(exit {fmt(r['rc'])})")

    findings = []
    for b in order:
        r = res[b]
        for part in ("association", "durations", "clock"):
            if r[part]["verdict"] != "PASS":
                findings.append(f"{title}/{b}: {part} {r[part]['verdict']}")
        if r["checksum"] == "DIFF":
            findings.append(f"{title}/{b}: checksum or exit code differs from bare")
    print("\n".join(out))
    doc = {"kind": "workload", "title": title,
           "tolerance": {"rel": tol_rel, "abs_ns": tol_abs, "rule": tol_text(tol_rel, tol_abs),
                         "upper_rule": upper_tol_text(tol_rel, tol_abs),
                         "upper_semantics": UPPER_SEMANTICS, "modes": modes,
                         "symmetric_backends": sym_b, "upper_backends": up_b},
           "reference": {"tool": "cupti_count", "kernels": sum(cupti.values()), "names": len(cupti),
                         "memcpy": cupti_doc.get("memcpy"), "memset": cupti_doc.get("memset"),
                         "copies_counted": bool(cupti_doc.get("copies")), "records": ref_records,
                         "dropped": cupti_doc.get("dropped"),
                         "profiler": args.profiler_durations is not None},
           "runs": runs, "backends": res, "findings": findings, "table": out}
    write_json(args.json, doc)
    print(f"SUMMARY title={title} " + " ".join(
        f"{b}=assoc:{res[b]['association']['verdict']},dur:{res[b]['durations']['verdict']},"
        f"clock:{res[b]['clock']['verdict']},checksum:{res[b]['checksum']}".replace(" ", "_")
        for b in order) + f" findings={len(findings)}")
    return 1 if findings else 0


# ---------------------------------------------------------------------------
# perf

LABELS = {"bare": "bare", "profiler": "torch.profiler", "level2": "causeway level 2"}


def label(arm):
    """"l3cupti-cb" -> "causeway level 3 cupti-cb"."""
    if arm in LABELS:
        return LABELS[arm]
    return f"causeway level 3 {arm[2:]}" if arm.startswith("l3") else arm


def paired_added(arm_vals, bare_vals):
    """Per round: arm - bare of the SAME round (None where either is missing)."""
    return [(x - b) if x is not None and b is not None else None for x, b in zip(arm_vals, bare_vals)]


def cost_ratio(p_add, c_add):
    """(ratio, note) of (profiler added) / (level 3 added)."""
    if p_add is None or c_add is None:
        return None, "not computable"
    if c_add <= 0:
        return (math.inf if p_add > 0 else float("nan"),
                " (level 3 added nothing measurable: <= 0 within the noise)")
    return p_add / c_add, ""


def ratio_str(r):
    if r is None:
        return "-"
    return "inf" if math.isinf(r) else ("nan" if math.isnan(r) else f"{r:.2f}")


def verify_level3(path, ops):
    try:
        s = cw_json.causeway_device_summary(load_json(path, "level-3 report"))
    except (InputError, ValueError) as exc:
        return False, f"no report ({exc})"
    iv, un, dd = s.get("intervals"), s.get("unassociated"), s.get("device_dropped")
    ok = iv is not None and iv >= ops and un == 0 and dd == 0
    return ok, (f"device intervals={fmt(iv)} (want >= {ops}) unassociated={fmt(un)} "
                f"dropped={fmt(dd)}: {'yes' if ok else 'NO'}")


def cmd_perf(args):
    arms = [a for a in args.arms.split(",") if a]
    if "bare" not in arms:
        print("backends_check: perf needs a 'bare' arm", file=sys.stderr)
        return 2
    vals = {a: [] for a in arms}
    cks = {a: [] for a in arms}
    for r in range(1, args.rounds + 1):
        for a in arms:
            v, c = read_round(os.path.join(args.dir, f"perf-{a}-{r}.out"))
            vals[a].append(v)
            cks[a].append(c)
    lw = max([26] + [len(label(a)) for a in arms])
    out = [f"== cost: tiny-kernel loop (a.add_(1.0) on 256 floats), us/op; a run's value = the median "
           f"of its reps; {args.rounds} interleaved rounds (arm order rotating) ==",
           "added = arm - bare of the SAME round (paired: the machine's drift between rounds cancels); "
           "unpaired = median(arm) - median(bare), for comparison only",
           f"{'arm':<{lw}} {'runs':>4} {'min':>8} {'median':>8} {'max':>8} | "
           f"{'added min':>9} {'median':>8} {'max':>8} {'pairs':>5} | {'unpaired':>8}"]
    arms_doc = {}
    added = {}
    _, bare_md, _ = spread(vals["bare"])
    for a in arms:
        mn, md_, mx = spread(vals[a])
        n = sum(v is not None for v in vals[a])
        entry = {"label": label(a), "values": vals[a], "min": mn, "median": md_, "max": mx}
        line = f"{label(a):<{lw}} {n:>4} {fmt3(mn):>8} {fmt3(md_):>8} {fmt3(mx):>8} |"
        if a != "bare":
            per_round = paired_added(vals[a], vals["bare"])
            pairs = sum(x is not None for x in per_round)
            amn, amd, amx = spread(per_round)
            unpaired = None if md_ is None or bare_md is None else md_ - bare_md
            added[a] = amd
            entry.update(added=per_round, added_pairs=pairs, added_min=amn, added_median=amd,
                         added_max=amx, unpaired_added=unpaired)
            line += (f" {fmt3(amn):>9} {fmt3(amd):>8} {fmt3(amx):>8} {pairs:>5} | {fmt3(unpaired):>8}")
        arms_doc[a] = entry
        out.append(line.rstrip(" |"))
    out.append("paired added per round (us/op; '-' = no pair): " + "; ".join(
        f"{a} " + " ".join("-" if x is None else f"{x:+.3f}" for x in arms_doc[a]["added"])
        for a in arms if a != "bare"))
    problems = []
    ref = next((c for c in cks["bare"] if c), None)
    for a in arms:
        for r, c in enumerate(cks[a], 1):
            if vals[a][r - 1] is None:
                problems.append(f"{a} round {r}: no result")
            elif c != ref or (c and "WRONG" in c):
                problems.append(f"{a} round {r}: checksum '{c}' != bare '{ref}'")
    verified = {}
    for a, path in args.report or []:
        if a.startswith("l3"):
            ok, line = verify_level3(path, args.expect_ops)
        else:
            ok, line = verify_l2(path, args.expect_ops)
            line = line.replace("level 2 run recorded: ", "")
        verified[a] = {"ok": ok, "line": line}
        out.append(f"{label(a)} round-1 run recorded every op: {line}")
    ratios = {}
    p_add = added.get("profiler")
    p_unp = (arms_doc.get("profiler") or {}).get("unpaired_added")
    out.append(f"ratio (torch.profiler added) / (level 3 added), medians of the paired added; "
               f"target >= {args.target:g}:")
    unpaired_s = []
    for a in arms:
        if not a.startswith("l3"):
            continue
        c_add = added.get(a)
        u_ratio, _ = cost_ratio(p_unp, arms_doc[a].get("unpaired_added"))
        unpaired_s.append(f"{a} {ratio_str(u_ratio)}")
        if p_add is None or c_add is None:
            ratios[a] = {"ratio": None, "result": "INCOMPLETE", "profiler_added": p_add,
                         "added": c_add, "unpaired_ratio": u_ratio}
            out.append(f"  {label(a)}: not computable (no complete round)")
            continue
        ratio, note = cost_ratio(p_add, c_add)
        met = ratio >= args.target  # nan compares False
        result = "MET" if met else "MISSED"
        if a in verified and not verified[a]["ok"]:
            result = "INVALID"
            note += " (its run did not record every op: the figure is not that of level 3)"
        ratios[a] = {"ratio": ratio, "result": result, "profiler_added": p_add, "added": c_add,
                     "unpaired_ratio": u_ratio}
        out.append(f"  {label(a)}: {fmt3(p_add)} / {fmt3(c_add)} = {ratio_str(ratio)}  {result}{note}")
    if unpaired_s:
        out.append("  (unpaired, median(arm) - median(bare), for comparison only: " + "; ".join(unpaired_s)
                   + ")")
    out.append("raw (run medians, us/op, by round): " + "; ".join(
        f"{a} " + " ".join(fmt3(v) for v in vals[a]) for a in arms))
    for p in problems:
        out.append(f"problem: {p}")
    findings = [f"cost/{a}: ratio {r['result']}" + (f" ({r['ratio']:.2f})" if num(r["ratio"]) is not None
                                                    and math.isfinite(r["ratio"]) else "")
                for a, r in ratios.items() if r["result"] != "MET"]
    findings += [f"cost: {p}" for p in problems]
    findings += [f"cost/{a}: round-1 run did not record every op" for a, v in verified.items()
                 if not v["ok"]]
    print("\n".join(out))
    doc = {"kind": "perf", "title": "cost", "rounds": args.rounds, "expect_ops": args.expect_ops,
           "target": args.target, "method": "added = arm - bare of the same round (paired), median over "
           "rounds; ratio = median paired profiler added / median paired level-3 added",
           "arms": arms_doc, "ratios": ratios, "verified": verified,
           "problems": problems, "findings": findings, "table": out}
    write_json(args.json, doc)
    print("SUMMARY perf " + " ".join(f"{a}={r['result']}" for a, r in ratios.items())
          + f" problems={len(problems)}")
    if not any(v is not None for v in vals["bare"]):
        return 2
    return 0 if ratios and all(r["result"] == "MET" for r in ratios.values()) and not problems else 1


# ---------------------------------------------------------------------------
# summary


def cmd_summary(args):
    docs = []
    for p in args.inputs:
        try:
            d = load_json(p, "part")
            if isinstance(d, dict):
                docs.append(d)
        except InputError as exc:
            print(f"backends_check: {exc}", file=sys.stderr)
    lines = []
    verdicts = []
    excess = []
    findings = []
    tolerance = None
    modes = {}
    for d in docs:
        lines += d.get("table") or []
        lines.append("")
        findings += d.get("findings") or []
        if d.get("kind") == "workload":
            tolerance = tolerance or d.get("tolerance")
            modes.update((d.get("tolerance") or {}).get("modes") or {})
            for b, r in (d.get("backends") or {}).items():
                verdicts.append(f"{d.get('title')}/{b}: association={r['association']['verdict']} "
                                f"durations={r['durations']['verdict']} clock={r['clock']['verdict']} "
                                f"checksum={r.get('checksum')}")
                if r["durations"].get("mode") == "upper":
                    excess.append(f"{d.get('title')}/{b}: durations are an upper bound; excess over "
                                  f"CUPTI's p50: {excess_text(r['durations'].get('excess'))}")
        elif d.get("kind") == "perf":
            for a, r in (d.get("ratios") or {}).items():
                rv = r.get("ratio")
                rs = f"{rv:.2f}" if num(rv) is not None else str(rv)
                verdicts.append(f"cost/{a}: (torch.profiler added)/(level 3 added), paired medians = "
                                f"{rs} (target >= {d.get('target')}): {r.get('result')}")
    if tolerance:
        sym = sorted(b for b, m in modes.items() if m == "symmetric")
        up = sorted(b for b, m in modes.items() if m == "upper")
        lines.append(f"tolerance (durations{': ' + ', '.join(sym) if sym else ''}): {tolerance['rule']}")
        if up and tolerance.get("upper_rule"):
            lines.append(f"tolerance (durations: {', '.join(up)}, an UPPER BOUND): {tolerance['upper_rule']}")
            lines.append(f"  why: {tolerance.get('upper_semantics')}")
    lines.append("verdicts:")
    lines += [f"  {v}" for v in verdicts] or ["  (none)"]
    if excess:
        lines.append("upper-bound excess (p50 - CUPTI p50; reported, not judged):")
        lines += [f"  {x}" for x in excess]
    if findings:
        lines.append(f"FINDINGS ({len(findings)}):")
        lines += [f"  - {f}" for f in findings]
    else:
        lines.append("FINDINGS: none")
    print("\n".join(lines))
    if tolerance:
        tolerance = dict(tolerance, modes=modes)
    doc = {"generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "tolerance": tolerance,
           "upper_bound_excess": excess,
           "workloads": {d.get("title"): d for d in docs if d.get("kind") == "workload"},
           "cost": next((d for d in docs if d.get("kind") == "perf"), None),
           "verdicts": verdicts, "findings": findings}
    if args.json:
        write_json(args.json, doc)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(f"# causeway level-3 backends ({', '.join(modes) or '-'}): {doc['generated']}\n\n```\n"
                    + "\n".join(lines) + "\n```\n")
    return 0 if docs else 2


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("workload")
    w.add_argument("--title", default="workload")
    w.add_argument("--cupti", required=True)
    w.add_argument("--profiler-durations")
    w.add_argument("--backend", nargs=2, action="append", metavar=("NAME", "REPORT.json"))
    w.add_argument("--run", nargs=3, action="append", metavar=("NAME", "RC", "STDOUT"))
    w.add_argument("--json", required=True)
    w.add_argument("--tol-rel", type=float, default=TOL_REL)
    w.add_argument("--tol-abs-ns", type=float, default=TOL_ABS_NS)
    w.add_argument("--upper-backends", default=",".join(UPPER_BACKENDS),
                   help="backends whose durations are an upper bound (comma-separated; default events)")
    p = sub.add_parser("perf")
    p.add_argument("--dir", required=True)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--arms", default="bare,profiler,level2,l3cupti,l3cupti-cb,l3events")
    p.add_argument("--report", nargs=2, action="append", metavar=("ARM", "REPORT.json"))
    p.add_argument("--expect-ops", type=int, default=0)
    p.add_argument("--target", type=float, default=5.0)
    p.add_argument("--json", required=True)
    s = sub.add_parser("summary")
    s.add_argument("--in", dest="inputs", nargs="+", required=True)
    s.add_argument("--json")
    s.add_argument("--markdown")
    args = ap.parse_args(argv)
    return {"workload": cmd_workload, "perf": cmd_perf, "summary": cmd_summary}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
