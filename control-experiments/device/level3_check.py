#!/usr/bin/env python3
"""level3_check.py: the checks of causeway's level-3 (device interval) proof.

Two commands (level3.sh runs both; the field names of causeway's JSON are read
only through cw_json.py):

  level3_check.py workload --title T --causeway REPORT.json --cupti CUPTI.json
        [--profiler-durations PROF.json] [--markdown OUT.md]
        [--tol-rel 0.10] [--tol-abs-ns 2000]
    (1) association: causeway's device intervals per kernel name (cw_json
        causeway_device_stats) equal CUPTI's kernel records per name
        (cupti_count.so, a separate run); unassociated == 0; device_dropped ==
        0; CUPTI itself dropped nothing; and, when cupti_count also counted
        copies (CUPTI_COUNT_COPIES=1), causeway's interval total equals CUPTI's
        kernel + memcpy + memset records.
    (2) durations: each kernel's p50 device time from causeway against the
        cupti_count reference (and torch.profiler's, if given; its names are
        demangled, so causeway's are demangled with c++filt to match).
        Tolerance: |Δp50| <= max(tol-rel x reference p50, tol-abs-ns), i.e.
        max(10 %, 2 µs) by default. Verdicts per kernel and reference:
          ok       within tol-rel
          ok-abs   outside tol-rel but within tol-abs-ns: a kernel too short for
                   the relative tolerance; passes, and is flagged so it is seen
          FAIL     outside both
          missing  the kernel is in the reference but causeway has no p50 for
                   it (or the other way round): FAIL for CUPTI; for the
                   profiler a name that matches nothing is "unmatched" and
                   listed, not failed.
    (3) clock: intervals that start before their issuing call (must be 0),
        the minimum launch->start latency (must be reported: no number means
        nothing was checked).
    Last line: "SUMMARY title=T assoc=PASS|FAIL durations=PASS|FAIL
    clock=PASS|FAIL key=value ...". Exit 0 if all pass, 1 if a check fails, 2
    if an input cannot be read.

  level3_check.py perf --dir DIR --rounds R [--arms bare,profiler,level2,level3]
        [--target 5] [--expect-ops N] [--l2-report J] [--l3-report J] [--markdown OUT.md]
    Reads DIR/perf-<arm>-<round>.out (tiny_loop.py's output; the round's value
    is its "median" µs/op over the reps), prints per arm min/median/max µs/op
    over the rounds and the added µs/op over bare (arm - bare of the same
    round: min/median/max), and the ratio (torch.profiler added) / (causeway
    level 3 added), medians. Target: ratio >= --target (5). Also checks that
    every run's checksum line equals bare's, and (given the reports of a
    level-2 and a level-3 run) that those runs recorded every op: level 3's
    device intervals >= --expect-ops with 0 unassociated and 0 dropped, level
    2's kernel launches >= --expect-ops; otherwise the figure would be that of
    a tracer that recorded less. Last line "SUMMARY perf result=MET|MISSED|
    INCOMPLETE ratio=...". Exit 0 met, 1 missed or not verified, 2 no data.
"""
import argparse
import json
import math
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cw_json  # noqa: E402
from compare_counts import clip, demangle_all, md_name  # noqa: E402


class InputError(Exception):
    pass


def load_json(path, what):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return json.load(f)
    except FileNotFoundError:
        raise InputError(f"{what}: {path}: no such file")
    except (OSError, ValueError) as exc:
        raise InputError(f"{what}: {path}: {exc}")


def num(v):
    return None if isinstance(v, bool) or not isinstance(v, (int, float)) else v


def fmt_ns(v):
    """ns for people: 1234 -> 1.23us."""
    if v is None:
        return "-"
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:.2f}ms"
    if a >= 1e3:
        return f"{v / 1e3:.2f}us"
    return f"{v:.0f}ns"


def fmt(v):
    return "-" if v is None else str(v)


# ---------------------------------------------------------------------------
# workload


def load_cupti(path):
    doc = load_json(path, "cupti reference")
    if not isinstance(doc, dict) or not isinstance(doc.get("kernels"), dict):
        raise InputError(f"cupti reference: {path}: no 'kernels' object")
    counts = {}
    for k, v in doc["kernels"].items():
        if num(v) is None:
            raise InputError(f"cupti reference: count of {k!r} is not a number")
        counts[str(k)] = int(v)
    durs = {}
    for k, row in (doc.get("durations") or {}).items():
        if isinstance(row, dict) and num(row.get("p50_ns")) is not None:
            durs[str(k)] = row
    return counts, durs, doc


def load_profiler_durations(path):
    doc = load_json(path, "profiler durations")
    if not isinstance(doc, dict):
        raise InputError(f"profiler durations: {path}: not an object")
    out = {}
    for k, row in doc.items():
        if isinstance(row, dict) and num(row.get("p50_ns")) is not None:
            out[str(k)] = row
    return out


def verdict(value, ref, tol_rel, tol_abs):
    """(verdict, delta_ns, delta_rel) of value against ref."""
    if value is None or ref is None:
        return "missing", None, None
    d = value - ref
    rel = (d / ref) if ref else (0.0 if d == 0 else math.inf)
    if abs(d) <= tol_rel * abs(ref):
        return "ok", d, rel
    if abs(d) <= tol_abs:
        return "ok-abs", d, rel
    return "FAIL", d, rel


def _norm(s):
    return re.sub(r"\s+", "", s)


def _strip_params(s):
    """'void f<int>(int, float)' -> 'void f<int>' (the last balanced (...) at the end)."""
    s = s.rstrip()
    if not s.endswith(")"):
        return s
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        if s[i] == ")":
            depth += 1
        elif s[i] == "(":
            depth -= 1
            if depth == 0:
                return s[:i].rstrip()
    return s


def match_profiler(names, prof):
    """{causeway name: profiler name} for the names the profiler has, by demangled name:
    exact, then ignoring white space, then ignoring the parameter list (if unique)."""
    dm = demangle_all(names)
    by_exact = {p: p for p in prof}
    by_norm = {}
    by_base = {}
    for p in prof:
        by_norm.setdefault(_norm(p), []).append(p)
        by_base.setdefault(_norm(_strip_params(p)), []).append(p)
    out = {}
    for n in names:
        for cand in (n, dm.get(n, n)):
            if cand in by_exact:
                out[n] = cand
                break
            hits = by_norm.get(_norm(cand), [])
            if len(hits) == 1:
                out[n] = hits[0]
                break
            hits = by_base.get(_norm(_strip_params(cand)), [])
            if len(hits) == 1:
                out[n] = hits[0]
                break
    return out, dm


def cmd_workload(args):
    try:
        rep = load_json(args.causeway, "causeway report")
        if not isinstance(rep, dict):
            raise InputError(f"causeway report: {args.causeway}: not an object")
        cupti, cupti_durs, cupti_doc = load_cupti(args.cupti)
        prof = (load_profiler_durations(args.profiler_durations)
                if args.profiler_durations else None)
        stats = cw_json.causeway_device_stats(rep)
        summ = cw_json.causeway_device_summary(rep)
        extras = cw_json.causeway_device_extras(rep)
    except (InputError, ValueError) as exc:
        print(f"level3_check: {exc}", file=sys.stderr)
        print(f"SUMMARY title={args.title} assoc=ERROR durations=ERROR clock=ERROR reason=input")
        return 2

    title = args.title
    md = []
    w = max(12, args.width)

    # ---- (1) association ----------------------------------------------------
    assoc_problems = []
    names = sorted(set(cupti) | set(stats),
                   key=lambda n: (-max(cupti.get(n, 0), (stats.get(n) or {}).get("count") or 0), n))
    rows = []
    for n in names:
        c = cupti.get(n)
        d = (stats.get(n) or {}).get("count")
        ok = (c or 0) == (d or 0)
        rows.append((n, c, d, ok))
    mism = [r for r in rows if not r[3]]
    cupti_total = sum(cupti.values())
    cw_total = sum((s.get("count") or 0) for s in stats.values())
    print(f"== {title}: (1) association: device intervals per kernel vs CUPTI (separate run) ==")
    head = f"{'kernel':<{w}} {'cupti':>8} {'causeway':>9}  match"
    print(head)
    print("-" * len(head))
    for n, c, d, ok in rows:
        print(f"{clip(n, w):<{w}} {fmt(c):>8} {fmt(d):>9}  {'yes' if ok else 'NO'}")
    print("-" * len(head))
    print(f"{'total':<{w}} {cupti_total:>8} {cw_total:>9}")
    if not stats:
        assoc_problems.append("causeway report has no device kernel stats (no device section?)")
    if mism:
        assoc_problems.append(f"{len(mism)} kernel name(s) differ in count")
    for key in ("unassociated", "device_dropped"):
        v = summ.get(key)
        if v is None:
            assoc_problems.append(f"causeway report does not say {key}")
        elif v != 0:
            assoc_problems.append(f"causeway {key} = {v} (want 0)")
    cd = num(cupti_doc.get("dropped")) or 0
    if cd:
        assoc_problems.append(f"CUPTI dropped {cd} records: the reference is incomplete")
    if cupti_doc.get("overflow"):
        assoc_problems.append(f"cupti_count name table overflowed ({cupti_doc['overflow']})")
    copies_on = bool(cupti_doc.get("copies"))
    cupti_records = None
    if copies_on:
        cupti_records = cupti_total + int(cupti_doc.get("memcpy") or 0) + int(cupti_doc.get("memset") or 0)
        if summ.get("intervals") is None:
            assoc_problems.append("causeway report does not say how many device intervals it has")
        elif summ["intervals"] != cupti_records:
            assoc_problems.append(f"causeway intervals {summ['intervals']} != CUPTI kernel+memcpy+memset "
                                  f"records {cupti_records}")
    line = (f"causeway: intervals={fmt(summ.get('intervals'))} unassociated={fmt(summ.get('unassociated'))} "
            f"device_dropped={fmt(summ.get('device_dropped'))} memcpy={fmt(extras.get('memcpy'))} "
            f"memset={fmt(extras.get('memset'))} backend={fmt(extras.get('backend'))}")
    print(line)
    cline = (f"cupti: kernel records={cupti_doc.get('records')} memcpy="
             f"{cupti_doc.get('memcpy') if copies_on else '-'} memset="
             f"{cupti_doc.get('memset') if copies_on else '-'} dropped={cupti_doc.get('dropped')} "
             f"struct={cupti_doc.get('record_struct')}")
    print(cline)
    dm = demangle_all(r[0] for r in mism)
    for n, c, d, _ in mism:
        print(f"  mismatch: {n}: cupti={fmt(c)} causeway={fmt(d)}")
        if dm.get(n, n) != n:
            print(f"      = {dm[n]}")
    for p in assoc_problems:
        print(f"problem: {p}")
    assoc_ok = not assoc_problems
    print(f"association: {'PASS' if assoc_ok else 'FAIL'}")

    md += [f"### {title}: device intervals per kernel (causeway level 3) vs CUPTI", "",
           "| kernel | CUPTI | causeway | match |", "|---|---:|---:|:-:|"]
    for n, c, d, ok in rows:
        md.append(f"| {md_name(n)} | {fmt(c)} | {fmt(d)} | {'yes' if ok else '**NO**'} |")
    md += [f"| **total** | {cupti_total} | {cw_total} | |", "", line, "", cline, ""]
    md += [f"problem: {p}" for p in assoc_problems]
    md += ["", f"association: **{'PASS' if assoc_ok else 'FAIL'}**", ""]

    # ---- (2) durations ------------------------------------------------------
    tol_rel, tol_abs = args.tol_rel, args.tol_abs_ns
    dnames = sorted(set(cupti_durs) | set(n for n, s in stats.items() if s.get("p50_ns") is not None),
                    key=lambda n: (-(num((cupti_durs.get(n) or {}).get("p50_ns")) or 0), n))
    pmap, dmn = (match_profiler(dnames, prof) if prof is not None else ({}, {}))
    counts = {"ok": 0, "ok-abs": 0, "FAIL": 0, "missing": 0}
    pcounts = {"ok": 0, "ok-abs": 0, "FAIL": 0, "missing": 0, "unmatched": 0}
    drows = []
    for n in dnames:
        cw = (stats.get(n) or {}).get("p50_ns")
        cref = cupti_durs.get(n) or {}
        cp50 = num(cref.get("p50_ns"))
        v, d, rel = verdict(cw, cp50, tol_rel, tol_abs)
        counts[v] += 1
        prow = None
        if prof is not None:
            pn = pmap.get(n)
            if pn is None:
                pcounts["unmatched"] += 1
                prow = ("unmatched", None, None, None, None)
            else:
                pp50 = num(prof[pn].get("p50_ns"))
                pv, pd, prel = verdict(cw, pp50, tol_rel, tol_abs)
                pcounts[pv] += 1
                prow = (pv, pp50, pd, prel, prof[pn].get("count"))
        drows.append((n, (stats.get(n) or {}).get("count"), cw, cref.get("count"), cp50, v, d, rel, prow))
    used = set(pmap.values())
    prof_only = sorted(set(prof or {}) - used)

    def pct(rel):
        if rel is None:
            return "-"
        if math.isinf(rel):
            return "inf"
        return f"{rel * 100:+.1f}%"

    print()
    print(f"== {title}: (2) durations: p50 device time per kernel; tolerance |dp50| <= "
          f"max({tol_rel * 100:g}%, {fmt_ns(tol_abs)}) ==")
    pw = max(12, w - 16)
    head = (f"{'kernel':<{pw}} {'n cw':>5} {'cw p50':>9} {'n cupti':>7} {'cupti p50':>9} "
            f"{'d':>9} {'d%':>7} {'vs cupti':>8}")
    if prof is not None:
        head += f" {'prof p50':>9} {'d%':>7} {'vs prof':>9}"
    print(head)
    print("-" * len(head))
    for n, ncw, cw, ncu, cp50, v, d, rel, prow in drows:
        s = (f"{clip(n, pw):<{pw}} {fmt(ncw):>5} {fmt_ns(cw):>9} {fmt(ncu):>7} {fmt_ns(cp50):>9} "
             f"{fmt_ns(d):>9} {pct(rel):>7} {v:>8}")
        if prow is not None:
            s += f" {fmt_ns(prow[1]):>9} {pct(prow[3]):>7} {prow[0]:>9}"
        print(s)
    print("-" * len(head))
    short = [r[0] for r in drows if r[5] == "ok-abs" or (r[8] and r[8][0] == "ok-abs")]
    if short:
        print(f"note: {len(short)} kernel(s) pass only through the {fmt_ns(tol_abs)} floor "
              f"(too short for {tol_rel * 100:g}%): " + ", ".join(clip(x, 60) for x in short))
    if prof is not None:
        unm = [r[0] for r in drows if r[8] and r[8][0] == "unmatched"]
        if unm:
            print(f"note: {len(unm)} kernel(s) found no torch.profiler name: "
                  + ", ".join(clip(dmn.get(x, x), 60) for x in unm))
        if prof_only:
            print(f"note: {len(prof_only)} torch.profiler kernel(s) matched no causeway kernel: "
                  + ", ".join(clip(x, 60) for x in prof_only))
    dur_problems = []
    if not drows:
        dur_problems.append("no kernel durations to compare")
    if counts["FAIL"]:
        dur_problems.append(f"{counts['FAIL']} kernel(s) outside the tolerance vs CUPTI")
    if counts["missing"]:
        dur_problems.append(f"{counts['missing']} kernel(s) have a p50 on one side only (vs CUPTI)")
    if pcounts["FAIL"]:
        dur_problems.append(f"{pcounts['FAIL']} kernel(s) outside the tolerance vs torch.profiler")
    if prof is not None and drows and pcounts["unmatched"] == len(drows):
        dur_problems.append("no kernel name matched torch.profiler's")
    for p in dur_problems:
        print(f"problem: {p}")
    dur_ok = not dur_problems
    dline = (f"vs CUPTI: ok={counts['ok']} ok-abs={counts['ok-abs']} FAIL={counts['FAIL']} "
             f"missing={counts['missing']}")
    if prof is not None:
        dline += (f"; vs torch.profiler: ok={pcounts['ok']} ok-abs={pcounts['ok-abs']} "
                  f"FAIL={pcounts['FAIL']} unmatched={pcounts['unmatched']}")
    print(dline)
    print(f"durations: {'PASS' if dur_ok else 'FAIL'}")

    md += [f"### {title}: p50 device time per kernel, tolerance |Δp50| ≤ max({tol_rel * 100:g} %, "
           f"{tol_abs / 1000:g} µs)", ""]
    mh = "| kernel | n causeway | causeway p50 | n CUPTI | CUPTI p50 | Δ | Δ % | vs CUPTI |"
    ms = "|---|---:|---:|---:|---:|---:|---:|:-:|"
    if prof is not None:
        mh += " profiler p50 | Δ % | vs profiler |"
        ms += "---:|---:|:-:|"
    md += [mh, ms]
    for n, ncw, cw, ncu, cp50, v, d, rel, prow in drows:
        s = (f"| {md_name(n)} | {fmt(ncw)} | {fmt_ns(cw)} | {fmt(ncu)} | {fmt_ns(cp50)} | "
             f"{fmt_ns(d)} | {pct(rel)} | {v if v != 'FAIL' else '**FAIL**'} |")
        if prow is not None:
            s += f" {fmt_ns(prow[1])} | {pct(prow[3])} | {prow[0] if prow[0] != 'FAIL' else '**FAIL**'} |"
        md.append(s)
    md += ["", dline, ""]
    md += [f"problem: {p}" for p in dur_problems]
    md += ["", f"durations: **{'PASS' if dur_ok else 'FAIL'}**", ""]

    # ---- (3) clock ----------------------------------------------------------
    neg = summ.get("causality_negative")
    minlat = summ.get("min_latency_ns")
    clock_problems = []
    if neg is None:
        clock_problems.append("causeway report does not give the number of intervals starting "
                              "before their issuing call")
    elif neg != 0:
        clock_problems.append(f"{neg} device intervals start before their issuing call (want 0)")
    if minlat is None:
        clock_problems.append("no minimum launch->start latency: nothing was checked "
                              f"(conversion={fmt(extras.get('conversion'))})")
    elif minlat < 0:
        clock_problems.append(f"min launch->start latency {minlat} ns is negative")
    clock_ok = not clock_problems
    print()
    print(f"== {title}: (3) clock ==")
    kline = (f"intervals starting before their issuing call: {fmt(neg)} (of {fmt(extras.get('checked'))} "
             f"checked); min launch->start latency: {fmt(minlat)} ns ({fmt_ns(minlat)}); "
             f"conversion: {fmt(extras.get('conversion'))}; unconverted: {fmt(extras.get('unconverted'))}")
    print(kline)
    for p in clock_problems:
        print(f"problem: {p}")
    print(f"clock: {'PASS' if clock_ok else 'FAIL'}")
    md += [f"### {title}: clock", "", kline, ""]
    md += [f"problem: {p}" for p in clock_problems]
    md += ["", f"clock: **{'PASS' if clock_ok else 'FAIL'}**", ""]

    if args.markdown:
        try:
            with open(args.markdown, "w") as f:
                f.write("\n".join(md) + "\n")
        except OSError as exc:
            print(f"level3_check: cannot write {args.markdown}: {exc}", file=sys.stderr)

    pf = lambda ok: "PASS" if ok else "FAIL"  # noqa: E731
    matched = len(rows) - len(mism)
    extra = ""
    if prof is not None:
        extra = (f" prof_ok={pcounts['ok']} prof_abs={pcounts['ok-abs']} prof_fail={pcounts['FAIL']} "
                 f"prof_unmatched={pcounts['unmatched']}")
    print(f"SUMMARY title={title} assoc={pf(assoc_ok)} durations={pf(dur_ok)} clock={pf(clock_ok)} "
          f"cupti_total={cupti_total} causeway_total={cw_total} names={len(rows)} matched={matched} "
          f"intervals={fmt(summ.get('intervals'))} cupti_records={fmt(cupti_records)} "
          f"unassociated={fmt(summ.get('unassociated'))} device_dropped={fmt(summ.get('device_dropped'))} "
          f"dur_ok={counts['ok']} dur_abs={counts['ok-abs']} dur_fail={counts['FAIL']} "
          f"dur_missing={counts['missing']}{extra} negative={fmt(neg)} min_latency_ns={fmt(minlat)}")
    return 0 if (assoc_ok and dur_ok and clock_ok) else 1


# ---------------------------------------------------------------------------
# perf

RE_SUMMARY = re.compile(r"^tiny_loop: .*\bmedian=([0-9.]+)", re.M)
RE_CHECKSUM = re.compile(r"^checksum: .*$", re.M)


def read_round(path):
    """(median us/op, checksum line) of one tiny_loop run; (None, None) if absent."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None, None
    m = RE_SUMMARY.findall(text)
    c = RE_CHECKSUM.findall(text)
    return (float(m[-1]) if m else None), (c[-1].strip() if c else None)


def spread(vs):
    vs = [v for v in vs if v is not None]
    if not vs:
        return None, None, None
    return min(vs), statistics.median(vs), max(vs)


def verify_l3(path, ops):
    try:
        s = cw_json.causeway_device_summary(load_json(path, "level-3 report"))
    except (InputError, ValueError) as exc:
        return False, f"level 3 run: no report ({exc})"
    iv, un, dd = s.get("intervals"), s.get("unassociated"), s.get("device_dropped")
    ok = iv is not None and iv >= ops and un == 0 and dd == 0
    return ok, (f"level 3 run recorded: device intervals={fmt(iv)} (want >= {ops}) "
                f"unassociated={fmt(un)} device_dropped={fmt(dd)}: {'yes' if ok else 'NO'}")


def verify_l2(path, ops):
    try:
        rep = load_json(path, "level-2 report")
    except InputError as exc:
        return False, f"level 2 run: no report ({exc})"
    launches = 0
    for k in rep.get("kernels") or []:
        if isinstance(k, dict):
            launches += num(k.get("launches")) or 0
    dropped = sum(num(p.get("dropped")) or 0 for p in rep.get("processes") or [] if isinstance(p, dict))
    ok = launches >= ops and dropped == 0
    return ok, (f"level 2 run recorded: kernel launches={launches} (want >= {ops}) "
                f"dropped entries={dropped}: {'yes' if ok else 'NO'}")


def cmd_perf(args):
    arms = [a for a in args.arms.split(",") if a]
    if "bare" not in arms:
        print("level3_check: perf needs a 'bare' arm", file=sys.stderr)
        return 2
    vals = {a: [] for a in arms}
    cks = {a: [] for a in arms}
    for r in range(1, args.rounds + 1):
        for a in arms:
            v, c = read_round(os.path.join(args.dir, f"perf-{a}-{r}.out"))
            vals[a].append(v)
            cks[a].append(c)
    labels = {"bare": "bare", "profiler": "torch.profiler", "level2": "causeway level 2",
              "level3": "causeway level 3 (cupti)"}
    out = []
    out.append(f"tiny-kernel loop (a.add_(1.0) on 256 floats), µs/op; each value: the median of "
               f"one process's reps; {args.rounds} interleaved rounds")
    out.append(f"{'arm':<26} {'runs':>4} {'min':>8} {'median':>8} {'max':>8}   "
               f"{'added min':>9} {'median':>8} {'max':>8}")
    added = {}
    for a in arms:
        mn, md_, mx = spread(vals[a])
        n = sum(v is not None for v in vals[a])
        if a == "bare":
            out.append(f"{labels.get(a, a):<26} {n:>4} {fmt3(mn):>8} {fmt3(md_):>8} {fmt3(mx):>8}")
            continue
        diffs = [x - b for x, b in zip(vals[a], vals["bare"]) if x is not None and b is not None]
        amn, amd, amx = spread(diffs)
        added[a] = amd
        out.append(f"{labels.get(a, a):<26} {n:>4} {fmt3(mn):>8} {fmt3(md_):>8} {fmt3(mx):>8}   "
                   f"{fmt3(amn):>9} {fmt3(amd):>8} {fmt3(amx):>8}")
    problems = []
    # Transparency: each run's checksum line equals bare's (same op count, exact values).
    ref = next((c for c in cks["bare"] if c), None)
    for a in arms:
        for r, c in enumerate(cks[a], 1):
            if vals[a][r - 1] is None:
                problems.append(f"{a} round {r}: no result")
            elif c != ref or (c and "WRONG" in c):
                problems.append(f"{a} round {r}: checksum '{c}' != bare '{ref}'")
    ver = []
    if args.l3_report:
        ok, line = verify_l3(args.l3_report, args.expect_ops)
        ver.append(line)
        if not ok:
            problems.append("level 3 run did not record every op")
    if args.l2_report:
        ok, line = verify_l2(args.l2_report, args.expect_ops)
        ver.append(line)
        if not ok:
            problems.append("level 2 run did not record every op")
    out += ver
    p_add, c_add = added.get("profiler"), added.get("level3")
    result = "INCOMPLETE"
    ratio_s = "-"
    if p_add is None or c_add is None:
        out.append("ratio: not computable (a profiler or level-3 arm has no complete round)")
    else:
        if c_add <= 0:
            ratio = math.inf if p_add > 0 else float("nan")
            ratio_s = "inf" if p_add > 0 else "nan"
            note = " (level 3 added nothing measurable: <= 0 within the noise)"
        else:
            ratio = p_add / c_add
            ratio_s = f"{ratio:.2f}"
            note = ""
        met = ratio >= args.target  # nan compares False
        result = "MET" if met and not problems else ("MISSED" if not met else "INCOMPLETE")
        out.append(f"ratio (torch.profiler added) / (causeway level 3 added), medians: "
                   f"{fmt3(p_add)} / {fmt3(c_add)} = {ratio_s}{note}")
        out.append(f"target: level 3 adds at least {args.target:g}x less per op than torch.profiler: "
                   f"{'MET' if met else 'MISSED'}")
    if vals["bare"] and all(v is not None for v in vals["bare"]):
        out.append("raw (round medians, µs/op): " + "; ".join(
            f"{a} " + " ".join(fmt3(v) for v in vals[a]) for a in arms))
    for p in problems:
        out.append(f"problem: {p}")
    if not any(v is not None for v in vals["bare"]):
        result = "INCOMPLETE"
    print("\n".join(out))
    if args.markdown:
        try:
            with open(args.markdown, "w") as f:
                f.write("### performance: tiny-kernel loop\n\n```\n" + "\n".join(out) + "\n```\n")
        except OSError as exc:
            print(f"level3_check: cannot write {args.markdown}: {exc}", file=sys.stderr)
    print(f"SUMMARY perf result={result} ratio={ratio_s} bare_median={fmt3(spread(vals['bare'])[1])} "
          + " ".join(f"{a}_added={fmt3(added.get(a))}" for a in arms if a != "bare")
          + f" problems={len(problems)}")
    if not any(v is not None for v in vals["bare"]) or p_add is None or c_add is None:
        return 2
    return 0 if result == "MET" else 1


def fmt3(v):
    return "-" if v is None else f"{v:.3f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("workload", help="association, durations and clock of one workload")
    w.add_argument("--title", default="workload")
    w.add_argument("--causeway", required=True, metavar="REPORT.json")
    w.add_argument("--cupti", required=True, metavar="CUPTI.json")
    w.add_argument("--profiler-durations", metavar="PROF.json")
    w.add_argument("--markdown", metavar="OUT.md")
    w.add_argument("--tol-rel", type=float, default=0.10)
    w.add_argument("--tol-abs-ns", type=float, default=2000.0)
    w.add_argument("--width", type=int, default=64)
    p = sub.add_parser("perf", help="the tiny-kernel loop table and the target")
    p.add_argument("--dir", required=True)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--arms", default="bare,profiler,level2,level3")
    p.add_argument("--target", type=float, default=5.0)
    p.add_argument("--expect-ops", type=int, default=0)
    p.add_argument("--l2-report")
    p.add_argument("--l3-report")
    p.add_argument("--markdown")
    args = ap.parse_args(argv)
    return cmd_workload(args) if args.cmd == "workload" else cmd_perf(args)


if __name__ == "__main__":
    sys.exit(main())
