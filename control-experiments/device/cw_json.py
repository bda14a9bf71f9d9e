#!/usr/bin/env python3
"""cw_json.py: read the device section (level 3) of `causeway report --json`.

THE ONE PLACE that knows the field names of causeway's device section, so that
level3.sh / level3_check.py need adjusting here only once the scanner's JSON
is settled. Everything is looked up defensively: the first key that is there
wins, and a number that is nowhere is None (never a made-up 0, so that a check
"== 0" cannot pass on a field that does not exist).

    causeway_device_stats(report) -> {kernel name: {"count": n, "p50_ns": x, "total_ns": y}}
    causeway_device_summary(report) -> {"intervals", "unassociated", "device_dropped",
                                        "causality_negative", "min_latency_ns"}

`report` is the parsed JSON (a dict), or a path to it, or its text.

Where it looks (first match wins):
  per-kernel device stats:
    report["device"]["kernels"]          rows {name, count, p50_ns, total_ns}
                                          (or a {name: {count, p50_ns, total_ns}} object);
    report["device_kernels"]              the same, at the top level;
    report["device"]["intervals"]         raw rows {name, start_ns|begin_ns, end_ns} or
                                          {name, dur_ns|duration_ns}: stats computed here;
    report["kernels"] rows               only if a row carries device fields itself:
                                          row["device"] = {count, p50_ns, total_ns}, or
                                          row["device_count"], row["device_p50_ns"], ...
    Row key aliases: count | intervals | executions | device_count | n;
    p50_ns | median_ns | device_p50_ns; total_ns | sum_ns | device_total_ns.
    Rows with a "kind" other than kernel (memcpy, memset) are left out. Rows of
    the same name (several processes or devices) are added up; their p50 is the
    p50 of the row with the most intervals (an approximation, flagged by
    "merged": rows in the result).
  summary numbers (first of: the device section, the totals, the clock
  section, then the sum over report["processes"] (min for min_latency_ns)):
    intervals:          device.intervals (a number; a list counts its rows) |
                        device.total_intervals | device.count | totals.device_intervals |
                        process.device_intervals | process.device.intervals
    unassociated:       device.unassociated | totals.device_unassociated |
                        totals.unassociated | process.unassociated |
                        process.device_unassociated | process.device.unassociated
    device_dropped:     device.device_dropped | device.dropped | totals.device_dropped |
                        process.device_dropped | process.counters.device_dropped |
                        process.device.dropped
    causality_negative: device.clock.before_call | device.clock.negative | clock.before_call |
                        clock.negative | device.causality_negative | ... |
                        process.clock.before_call | process.clock.negative
    min_latency_ns:     device.clock.min_launch_to_start_ns | device.clock.min_latency_ns |
                        clock.min_launch_to_start_ns | clock.min_latency_ns | ... (min over
                        processes)
  A value that is an object with a "total" (unassociated = {"total": n, "no_call": ..})
  counts as that total.
  As the scanner's work in progress (scanner/src/device.rs) has it: device = {intervals,
  associated, unassociated: {total, no_call, call_not_in_capture, wrong_class}, unconverted,
  dropped, clock: {conversion, converted, unconverted, checked, before_call,
  min_launch_to_start_ns}, kernels: [{name, count, total_ns, p50_ns, p99_ns, max_ns, ...}],
  copies: [{kind: HtoD|DtoH|..|memset, count, bytes, ...}]}; processes[i] = {...,
  backend, device_intervals, associated, unassociated: {total, ..}, device_dropped}.

Command line (for a quick look at a report):
    python3 cw_json.py REPORT.json      prints {"summary": ..., "kernels": ...}
"""
import json
import os
import sys

_COUNT_KEYS = ("count", "intervals", "executions", "device_count", "device_intervals", "n")
_P50_KEYS = ("p50_ns", "median_ns", "device_p50_ns", "p50")
_TOTAL_KEYS = ("total_ns", "sum_ns", "device_total_ns", "total")
_NON_KERNEL_KINDS = ("memcpy", "memset", "copy", "mem", "memory", "2", "3")


def _load(report):
    if isinstance(report, dict):
        return report
    if isinstance(report, (bytes, bytearray)):
        report = report.decode("utf-8", "replace")
    if isinstance(report, str):
        s = report.lstrip()
        if s.startswith("{"):
            return json.loads(s)
        if os.path.exists(report):
            with open(report, encoding="utf-8", errors="replace") as f:
                return json.load(f)
    raise ValueError("causeway report: expected a dict, a JSON text or a path")


def _num(v):
    """A number (int or float, not bool), or None. An object with a numeric "total"
    (e.g. unassociated = {"total": n, "no_call": ...}) counts as that total."""
    if isinstance(v, dict):
        v = v.get("total")
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return v


def _get(d, path):
    """d[a][b]... for path "a.b...", or None."""
    for k in path.split("."):
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def _first_num(d, paths):
    for p in paths:
        v = _get(d, p)
        if isinstance(v, list) and p.endswith("intervals"):
            return len(v)
        v = _num(v)
        if v is not None:
            return v
    return None


def _first_key(row, keys):
    for k in keys:
        v = _num(row.get(k))
        if v is not None:
            return v
    return None


def _is_kernel_row(row):
    kind = row.get("kind", row.get("type"))
    if kind is None:
        return True
    return str(kind).lower() not in _NON_KERNEL_KINDS


def _p50(values):
    """Lower median (nearest rank): sorted[(n - 1) // 2]; the same rule as cupti_count.c."""
    if not values:
        return None
    s = sorted(values)
    return s[(len(s) - 1) // 2]


def _rows(obj):
    """[(name, row dict)] from a list of rows or a {name: row} object."""
    out = []
    if isinstance(obj, dict):
        for name, row in obj.items():
            if isinstance(row, dict):
                out.append((str(name), row))
            elif _num(row) is not None:
                out.append((str(name), {"count": row}))
    elif isinstance(obj, list):
        for row in obj:
            if isinstance(row, dict):
                # The program's symbol (the mangled name CUPTI reports) where the report shows a
                # demangled name.
                name = row.get("symbol") or row.get("name", row.get("kernel"))
                if name is not None:
                    out.append((str(name), row))
    return out


def _from_stat_rows(pairs):
    acc = {}
    for name, row in pairs:
        if not _is_kernel_row(row):
            continue
        n = _first_key(row, _COUNT_KEYS)
        p50 = _first_key(row, _P50_KEYS)
        tot = _first_key(row, _TOTAL_KEYS)
        if n is None and p50 is None and tot is None:
            continue
        a = acc.setdefault(name, {"count": 0, "p50_ns": None, "total_ns": None, "_best": -1,
                                  "_rows": 0})
        a["_rows"] += 1
        a["count"] += int(n or 0)
        if tot is not None:
            a["total_ns"] = (a["total_ns"] or 0) + tot
        if p50 is not None and (n or 0) > a["_best"]:
            a["p50_ns"], a["_best"] = p50, (n or 0)
    out = {}
    for name, a in acc.items():
        out[name] = {"count": a["count"], "p50_ns": a["p50_ns"], "total_ns": a["total_ns"]}
        if a["_rows"] > 1:
            out[name]["merged"] = a["_rows"]
    return out


def _from_raw_intervals(rows):
    durs = {}
    for row in rows:
        if not isinstance(row, dict) or not _is_kernel_row(row):
            continue
        name = row.get("name", row.get("kernel"))
        if name is None:
            continue
        d = _first_key(row, ("dur_ns", "duration_ns"))
        if d is None:
            b = _first_key(row, ("start_ns", "begin_ns", "t_begin_ns", "start"))
            e = _first_key(row, ("end_ns", "t_end_ns", "end"))
            if b is None or e is None:
                continue
            d = e - b
        durs.setdefault(str(name), []).append(d)
    return {n: {"count": len(v), "p50_ns": _p50(v), "total_ns": sum(v)} for n, v in durs.items()}


def causeway_device_stats(report_json):
    """{kernel name: {"count": n, "p50_ns": x, "total_ns": y}} of the device intervals.

    Empty dict if the report has no device section at all."""
    rep = _load(report_json)
    dev = rep.get("device")
    if isinstance(dev, dict):
        if dev.get("kernels") is not None:
            return _from_stat_rows(_rows(dev["kernels"]))
        ivs = dev.get("intervals")
        if isinstance(ivs, list) and ivs and isinstance(ivs[0], dict):
            return _from_raw_intervals(ivs)
    elif isinstance(dev, list):  # a list of per-process device sections
        pairs = []
        for d in dev:
            if isinstance(d, dict) and d.get("kernels") is not None:
                pairs += _rows(d["kernels"])
        if pairs:
            return _from_stat_rows(pairs)
    if rep.get("device_kernels") is not None:
        return _from_stat_rows(_rows(rep["device_kernels"]))
    # Host kernel rows that carry their device numbers (never the host "launches").
    pairs = []
    for name, row in _rows(rep.get("kernels")):
        sub = row.get("device")
        if isinstance(sub, dict):
            pairs.append((name, sub))
        else:
            flat = {k[len("device_"):]: v for k, v in row.items() if k.startswith("device_")}
            if flat:
                pairs.append((name, flat))
    return _from_stat_rows(pairs)


def _procs(rep):
    ps = rep.get("processes")
    return [p for p in ps if isinstance(p, dict)] if isinstance(ps, list) else []


def causeway_device_summary(report_json):
    """{"intervals", "unassociated", "device_dropped", "causality_negative", "min_latency_ns"};
    a value is None when the report does not carry it anywhere."""
    rep = _load(report_json)
    dev = rep.get("device") if isinstance(rep.get("device"), dict) else {}
    top = {"device": dev, "totals": rep.get("totals") or {}, "clock": rep.get("clock") or {}}
    procs = _procs(rep)

    def pick(top_paths, proc_paths, combine=sum):
        v = _first_num(top, top_paths)
        if v is not None:
            return v
        vals = [x for x in (_first_num(p, proc_paths) for p in procs) if x is not None]
        return combine(vals) if vals else None

    intervals = pick(("device.intervals", "device.total_intervals", "device.count",
                      "totals.device_intervals"),
                     ("device_intervals", "device.intervals", "device.count"))
    if intervals is None:  # no count anywhere: the per-kernel rows' total, if any
        st = causeway_device_stats(rep)
        if st:
            intervals = sum(r["count"] for r in st.values())
    return {
        "intervals": intervals,
        "unassociated": pick(("device.unassociated", "totals.device_unassociated",
                              "totals.unassociated"),
                             ("unassociated", "device_unassociated", "device.unassociated")),
        "device_dropped": pick(("device.device_dropped", "device.dropped",
                                "totals.device_dropped"),
                               ("device_dropped", "counters.device_dropped", "device.dropped")),
        "causality_negative": pick(("device.clock.before_call", "device.clock.negative",
                                    "clock.before_call", "clock.negative",
                                    "device.causality_negative", "device.clock.causality_negative",
                                    "totals.causality_negative"),
                                   ("clock.before_call", "clock.negative",
                                    "device.clock.before_call", "device.clock.negative",
                                    "causality_negative")),
        "min_latency_ns": pick(("device.clock.min_launch_to_start_ns",
                                "device.clock.min_latency_ns", "clock.min_launch_to_start_ns",
                                "clock.min_latency_ns", "device.min_latency_ns",
                                "totals.min_latency_ns"),
                               ("clock.min_launch_to_start_ns", "clock.min_latency_ns",
                                "device.clock.min_launch_to_start_ns",
                                "device.clock.min_latency_ns", "min_latency_ns"), combine=min),
    }


def causeway_device_extras(report_json):
    """Numbers beyond the summary, for the log (each None when absent):
    {"checked": intervals the causality check ran on, "conversion": how device times were put
     on the host clock, "unconverted": intervals not on the host clock,
     "memcpy": copy intervals (all copy kinds), "memset": memset intervals,
     "backend": the processes' backends, comma-separated}."""
    rep = _load(report_json)
    dev = rep.get("device") if isinstance(rep.get("device"), dict) else {}
    top = {"device": dev, "clock": rep.get("clock") or {}}
    conv = _get(top, "device.clock.conversion")
    if conv is None:
        conv = _get(top, "clock.conversion")
    memcpy = memset = None
    copies = dev.get("copies")
    if isinstance(copies, dict):  # {kind: row}
        copies = [dict(r, kind=k) for k, r in copies.items() if isinstance(r, dict)]
    if isinstance(copies, list):
        memcpy = memset = 0
        for r in copies:
            if not isinstance(r, dict):
                continue
            n = _first_key(r, _COUNT_KEYS) or 0
            if str(r.get("kind", r.get("name", ""))).lower() == "memset":
                memset += int(n)
            else:
                memcpy += int(n)
    backends = sorted({str(p["backend"]) for p in _procs(rep) if p.get("backend") is not None})
    return {
        "checked": _first_num(top, ("device.clock.checked", "clock.checked")),
        "conversion": conv if isinstance(conv, str) else None,
        "unconverted": _first_num(top, ("device.unconverted", "device.clock.unconverted")),
        "memcpy": memcpy,
        "memset": memset,
        "backend": ",".join(backends) if backends else None,
    }


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: cw_json.py REPORT.json")
    doc = _load(sys.argv[1])
    print(json.dumps({"summary": causeway_device_summary(doc),
                      "extras": causeway_device_extras(doc),
                      "kernels": causeway_device_stats(doc)}, indent=1, sort_keys=True))
