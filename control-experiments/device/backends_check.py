#!/usr/bin/env python3
"""backends_check.py: causeway's level-3 device-timing backends (cupti, events) side by side.

Three commands (backends.sh runs them; causeway's JSON is read only through cw_json.py, plus the
raw `device.clock` section, which is printed as it is):

  backends_check.py workload --title T --cupti CUPTI.json [--profiler-durations PROF.json]
        --backend NAME REPORT.json [--backend NAME REPORT.json ...]
        [--run NAME RC STDOUT ...] --json OUT.json [--tol-rel 0.10] [--tol-abs-ns 2000]
    For each backend's `causeway report --json` (a missing or unreadable file is "no report"):
    (a) association: device intervals per kernel name == the CUPTI reference's kernel records per
        name (cupti_count.so, a separate run); interval total == CUPTI's kernel + memcpy + memset
        records (when the reference counted copies); associated == intervals; unassociated == 0;
        dropped == 0; CUPTI itself dropped nothing: PASS. GRAPH-WHOLE (not a pass, reported as a
        finding) when the only differences are those of a backend that times each graph launch as
        one interval (a "[graph launch]" row): per name, count == CUPTI's - the report's own
        via_graph, the "[graph launch]" rows == totals.graph_launches. Otherwise FAIL.
    (b) durations: per kernel name, the backend's p50 device time vs the reference's p50 (CUPTI;
        and vs torch.profiler's when --profiler-durations is given). Tolerance:
        |p50 - reference p50| <= max(tol-rel x reference p50, tol-abs-ns) = max(10 %, 2 us).
        Verdicts: ok (within 10 %), ok-abs (only within the 2 us floor: passes, flagged),
        FAIL, missing (a p50 on one side only: fails), graph-only (a kernel that ran only as a
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

  backends_check.py perf --dir DIR --rounds R --arms bare,profiler,level2,l3cupti,l3events
        [--report ARM REPORT.json ...] [--expect-ops N] [--target 5] --json OUT.json
    The tiny-kernel loop: DIR/perf-<arm>-<round>.out (tiny_loop.py's output; a run's value is
    its "median" us/op over its reps). Per arm min/median/max over the rounds, the added us/op
    over bare (arm - bare of the same round: min/median/max), and for each level-3 arm (l3*)
    the ratio (torch.profiler added) / (that arm added), medians; target >= --target (5).
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


def check_durations(view, cupti_durs, prof, pmap, tol_rel, tol_abs, cupti=None):
    """Per kernel name: the backend's p50 vs the reference's. A kernel that ran only as a graph node
    (the report's via_graph == CUPTI's count) has no p50 of its own under a backend that times
    graph launches whole (a "[graph launch]" row): verdict "graph-only", not compared."""
    stats = view["stats"]
    whole = any(is_synthetic(n) for n in stats)
    names = sorted(set(cupti_durs) | {n for n, s in stats.items()
                                      if s.get("p50_ns") is not None and not is_synthetic(n)},
                   key=lambda n: (-(num((cupti_durs.get(n) or {}).get("p50_ns")) or 0), n))
    synthetic = [{"name": n, "count": s.get("count"), "p50_ns": num(s.get("p50_ns"))}
                 for n, s in sorted(stats.items()) if is_synthetic(n)]
    counts = {"ok": 0, "ok-abs": 0, "FAIL": 0, "missing": 0, "graph-only": 0}
    pcounts = {"ok": 0, "ok-abs": 0, "FAIL": 0, "missing": 0, "unmatched": 0, "graph-only": 0}
    rows = []
    for n in names:
        p50 = num((stats.get(n) or {}).get("p50_ns"))
        ref = num((cupti_durs.get(n) or {}).get("p50_ns"))
        v, d, rel = verdict(p50, ref, tol_rel, tol_abs)
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
                pv, _, prel = verdict(p50, pp, tol_rel, tol_abs)
                pcounts[pv] += 1
                row.update(profiler_name=pn, profiler_p50_ns=pp, profiler_rel=prel,
                           profiler_verdict=pv)
        rows.append(row)
    problems = []
    if not rows:
        problems.append("no kernel durations to compare")
    if counts["FAIL"]:
        failed = [clip(r["name"], 50) for r in rows if r["verdict"] == "FAIL"]
        problems.append(f"{counts['FAIL']} kernel(s) outside the tolerance vs CUPTI: "
                        + ", ".join(failed[:5]) + (", ..." if len(failed) > 5 else ""))
    if counts["missing"]:
        problems.append(f"{counts['missing']} kernel(s) have a p50 on one side only (vs CUPTI)")
    if prof is not None:
        if pcounts["FAIL"]:
            problems.append(f"{pcounts['FAIL']} kernel(s) outside the tolerance vs torch.profiler")
        if rows and pcounts["unmatched"] == len(rows):
            problems.append("no kernel name matched torch.profiler's")
    return {"verdict": "FAIL" if problems else "PASS", "counts": counts,
            "profiler_counts": pcounts if prof is not None else None, "kernels": rows,
            "synthetic": synthetic, "problems": problems}


def check_clock(view):
    """Causality checks the report ran: start (intervals starting before their issuing call began:
    before_call of checked) and, where the report has them, end (end_before_call_end of
    end_checked). PASS iff at least one ran on some intervals, none found a violation, and no
    minimum latency is negative."""
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
    if end_ran:
        if end_before is None:
            problems.append("the report does not say how many intervals end before their call ended")
        elif end_before != 0:
            problems.append(f"{end_before} device interval(s) end before their issuing call ended (want 0)")
    if not start_ran and not end_ran:
        problems.append("no causality check ran (checked = 0 and no end check): nothing was checked")
    if minlat is not None and minlat < 0:
        problems.append(f"min launch->start latency {minlat} ns is negative")
    if min_end is not None and min_end < 0:
        problems.append(f"min call end->device end {min_end} ns is negative")
    return {"verdict": "FAIL" if problems else "PASS", "section": view["clock"],
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
    res = {}
    for b in order:
        if b in errors:
            res[b] = {"status": "no report", "error": errors[b],
                      "association": {"verdict": "NO DATA"}, "durations": {"verdict": "NO DATA"},
                      "clock": {"verdict": "NO DATA"}}
        else:
            v = views[b]
            res[b] = {"status": "ok", "ring_backends": v["ring_backends"], "notices": v["notices"],
                      "association": check_association(v, cupti, cupti_doc),
                      "durations": check_durations(v, cupti_durs, prof, pmap, tol_rel, tol_abs, cupti),
                      "clock": check_clock(v), "copies": v["copies"]}
        r = runs.get(b)
        res[b]["checksum"] = ("-" if r is None or r["same_as_bare"] is None
                              else ("same" if r["same_as_bare"] else "DIFF"))

    # ---- the table ------------------------------------------------------------------------------
    out = []
    ref_records = (sum(cupti.values()) + int(num(cupti_doc.get("memcpy")) or 0)
                   + int(num(cupti_doc.get("memset")) or 0)) if cupti_doc.get("copies") else None
    out.append(f"== {title}: level-3 backends vs the CUPTI reference (separate run); "
               f"tolerance {tol_text(tol_rel, tol_abs)} ==")
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
            f"{'/'.join(str(k[x]) for x in ('ok', 'ok-abs', 'FAIL', 'missing', 'graph-only')):>23} "
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
            h += f" | {b + ' p50':>11} {'d%':>7} {'vs ref':>7}"
            if prof is not None:
                h += f" {'vs prof':>9}"
        out.append(h)
        for n in knames:
            ref = cupti_durs.get(n) or {}
            s = f"{clip(n, kw):<{kw}} {fmt(ref.get('count')):>6} {fmt_ns(num(ref.get('p50_ns'))):>9}"
            if prof is not None:
                pn = pmap.get(n)
                s += f" {fmt_ns(num(prof[pn].get('p50_ns')) if pn else None):>9}"
            for b in ok_backends:
                row = next((x for x in res[b]["durations"]["kernels"] if x["name"] == n), None)
                if row is None:
                    s += f" | {'-':>11} {'-':>7} {'-':>7}" + (f" {'-':>9}" if prof is not None else "")
                    continue
                s += f" | {fmt_ns(row['p50_ns']):>11} {pct(row['rel']):>7} {row['verdict']:>7}"
                if prof is not None:
                    s += f" {row.get('profiler_verdict', '-'):>9}"
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
           "tolerance": {"rel": tol_rel, "abs_ns": tol_abs, "rule": tol_text(tol_rel, tol_abs)},
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

LABELS = {"bare": "bare", "profiler": "torch.profiler", "level2": "causeway level 2",
          "l3cupti": "causeway level 3 cupti", "l3events": "causeway level 3 events"}


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
    out = [f"== cost: tiny-kernel loop (a.add_(1.0) on 256 floats), us/op; a run's value = the median "
           f"of its reps; {args.rounds} interleaved rounds ==",
           f"{'arm':<24} {'runs':>4} {'min':>8} {'median':>8} {'max':>8}   "
           f"{'added min':>9} {'median':>8} {'max':>8}"]
    arms_doc = {}
    added = {}
    for a in arms:
        mn, md_, mx = spread(vals[a])
        n = sum(v is not None for v in vals[a])
        entry = {"label": LABELS.get(a, a), "values": vals[a], "min": mn, "median": md_, "max": mx}
        if a == "bare":
            out.append(f"{LABELS.get(a, a):<24} {n:>4} {fmt3(mn):>8} {fmt3(md_):>8} {fmt3(mx):>8}")
        else:
            diffs = [x - b for x, b in zip(vals[a], vals["bare"]) if x is not None and b is not None]
            amn, amd, amx = spread(diffs)
            added[a] = amd
            entry.update(added=diffs, added_min=amn, added_median=amd, added_max=amx)
            out.append(f"{LABELS.get(a, a):<24} {n:>4} {fmt3(mn):>8} {fmt3(md_):>8} {fmt3(mx):>8}   "
                       f"{fmt3(amn):>9} {fmt3(amd):>8} {fmt3(amx):>8}")
        arms_doc[a] = entry
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
        out.append(f"{LABELS.get(a, a)} round-1 run recorded every op: {line}")
    ratios = {}
    p_add = added.get("profiler")
    out.append(f"ratio (torch.profiler added) / (level 3 added), medians; target >= {args.target:g}:")
    for a in arms:
        if not a.startswith("l3"):
            continue
        c_add = added.get(a)
        if p_add is None or c_add is None:
            ratios[a] = {"ratio": None, "result": "INCOMPLETE", "profiler_added": p_add,
                         "added": c_add}
            out.append(f"  {LABELS.get(a, a)}: not computable (no complete round)")
            continue
        if c_add <= 0:
            ratio = math.inf if p_add > 0 else float("nan")
            note = " (level 3 added nothing measurable: <= 0 within the noise)"
        else:
            ratio, note = p_add / c_add, ""
        met = ratio >= args.target  # nan compares False
        result = "MET" if met else "MISSED"
        if a in verified and not verified[a]["ok"]:
            result = "INVALID"
            note += " (its run did not record every op: the figure is not that of level 3)"
        rs = "inf" if math.isinf(ratio) else ("nan" if math.isnan(ratio) else f"{ratio:.2f}")
        ratios[a] = {"ratio": ratio, "result": result, "profiler_added": p_add, "added": c_add}
        out.append(f"  {LABELS.get(a, a)}: {fmt3(p_add)} / {fmt3(c_add)} = {rs}  {result}{note}")
    out.append("raw (run medians, us/op): " + "; ".join(
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
           "target": args.target, "arms": arms_doc, "ratios": ratios, "verified": verified,
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
    findings = []
    tolerance = None
    for d in docs:
        lines += d.get("table") or []
        lines.append("")
        findings += d.get("findings") or []
        if d.get("kind") == "workload":
            tolerance = tolerance or d.get("tolerance")
            for b, r in (d.get("backends") or {}).items():
                verdicts.append(f"{d.get('title')}/{b}: association={r['association']['verdict']} "
                                f"durations={r['durations']['verdict']} clock={r['clock']['verdict']} "
                                f"checksum={r.get('checksum')}")
        elif d.get("kind") == "perf":
            for a, r in (d.get("ratios") or {}).items():
                rv = r.get("ratio")
                rs = f"{rv:.2f}" if num(rv) is not None else str(rv)
                verdicts.append(f"cost/{a}: (torch.profiler added)/(level 3 added) = {rs} "
                                f"(target >= {d.get('target')}): {r.get('result')}")
    if tolerance:
        lines.append(f"tolerance (durations): {tolerance['rule']}")
    lines.append("verdicts:")
    lines += [f"  {v}" for v in verdicts] or ["  (none)"]
    if findings:
        lines.append(f"FINDINGS ({len(findings)}):")
        lines += [f"  - {f}" for f in findings]
    else:
        lines.append("FINDINGS: none")
    print("\n".join(lines))
    doc = {"generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "tolerance": tolerance,
           "workloads": {d.get("title"): d for d in docs if d.get("kind") == "workload"},
           "cost": next((d for d in docs if d.get("kind") == "perf"), None),
           "verdicts": verdicts, "findings": findings}
    if args.json:
        write_json(args.json, doc)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(f"# causeway level-3 backends (cupti, events): {doc['generated']}\n\n```\n"
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
    p = sub.add_parser("perf")
    p.add_argument("--dir", required=True)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--arms", default="bare,profiler,level2,l3cupti,l3events")
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
