#!/usr/bin/env python3
"""compare_counts.py: compare causeway's kernel launch counts with references.

Reads the JSON of `causeway report --json CAPTURE` and one or more reference
JSONs, prints a table (kernel name, each reference, causeway, match) with
totals and a list of mismatches, optionally writes the same table as markdown,
and exits 1 on any mismatch (2 if an input cannot be read).

References:
  --cupti PATH     cupti_count.so output {"kernels": {name: n}, "dropped": N}.
                   Names are the mangled names the driver reports, so they are
                   matched against causeway's names exactly, per name.
  --expected PATH  a program's own expected counts {"kernels": {name: n},
                   "graph": {name: n launched as graph nodes}, "api_calls":
                   {name: launch calls}} (spine_prog's "expected_counts_json:"
                   line). Exact names too, but only the names it lists are
                   checked (it knows only its own kernels). On a mismatch it
                   also says whether causeway's counts equal "api_calls" (each
                   launch made during stream capture once, graph replays not
                   expanded), which tells "misses graph kernels" from "misses
                   launches".
  --profiler PATH  torch_spine.py --profile output {name: n}. torch.profiler
                   demangles names, so only the totals are compared.

Also a failure: causeway reporting dropped or torn entries, or CUPTI reporting
dropped records (either makes the counts incomplete).

Usage:
  compare_counts.py --title torch --causeway report.json --cupti cupti.json \
      [--expected exp.json] [--profiler prof.json] [--markdown out.md]
The last line printed is "SUMMARY title=... result=PASS|FAIL ..." for scripts.
"""
import argparse
import json
import shutil
import subprocess
import sys


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


def as_count_map(obj, what):
    """{name: int} from a dict or a list of {name, launches|count} objects. A causeway report row
    names a kernel as the program's symbol (`symbol`, the mangled name CUPTI reports) when its `name`
    is the demangled form."""
    out = {}
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, list):
        items = []
        for row in obj:
            if not isinstance(row, dict) or "name" not in row:
                raise InputError(f"{what}: kernel entry without a name: {row!r}")
            n = row.get("launches", row.get("count"))
            items.append((row.get("symbol") or row["name"], n))
    else:
        raise InputError(f"{what}: kernels is neither an object nor a list")
    for name, n in items:
        if isinstance(n, bool) or not isinstance(n, int):
            raise InputError(f"{what}: count for {name!r} is not an integer: {n!r}")
        out[str(name)] = out.get(str(name), 0) + n
    return out


def load_causeway(path):
    doc = load_json(path, "causeway report")
    if not isinstance(doc, dict) or "kernels" not in doc:
        raise InputError(f"causeway report: {path}: no 'kernels' field")
    info = {"processes": 0, "entries": 0, "dropped": 0, "torn": 0}
    for p in doc.get("processes") or []:
        info["processes"] += 1
        for k in ("entries", "dropped", "torn"):
            v = p.get(k) or 0
            info[k] += v if isinstance(v, int) else 0
    apis = doc.get("apis") or []
    info["api_names"] = len(apis)
    info["api_calls"] = sum(a.get("calls") or 0 for a in apis if isinstance(a, dict))
    info["api_errors"] = sum(a.get("errors") or 0 for a in apis if isinstance(a, dict))
    return as_count_map(doc["kernels"], "causeway report"), info


def load_cupti(path):
    doc = load_json(path, "cupti reference")
    if not isinstance(doc, dict) or "kernels" not in doc:
        raise InputError(f"cupti reference: {path}: no 'kernels' field")
    return as_count_map(doc["kernels"], "cupti reference"), doc


def load_expected(path):
    """(counts, graph part, api_calls or None)."""
    doc = load_json(path, "expected counts")
    if isinstance(doc, dict) and "kernels" in doc:
        calls = doc.get("api_calls")
        return (as_count_map(doc["kernels"], "expected"),
                as_count_map(doc.get("graph") or {}, "expected graph"),
                None if calls is None else as_count_map(calls, "expected api_calls"))
    return as_count_map(doc, "expected"), {}, None


def load_profiler(path):
    doc = load_json(path, "profiler reference")
    if isinstance(doc, dict) and "kernels" in doc:
        doc = doc["kernels"]
    return as_count_map(doc, "profiler reference")


def demangle_all(names):
    """{name: demangled} using c++filt when it is there; identity otherwise."""
    tool = shutil.which("c++filt")
    names = list(names)
    if not tool or not names:
        return {n: n for n in names}
    try:
        res = subprocess.run([tool], input="\n".join(names) + "\n", capture_output=True,
                             text=True, timeout=20)
        out = res.stdout.split("\n")
        if res.returncode == 0 and len(out) >= len(names):
            return dict(zip(names, out[: len(names)]))
    except (OSError, subprocess.SubprocessError):
        pass
    return {n: n for n in names}


def clip(s, width):
    """Shorten in the middle: long mangled names often differ only at the end."""
    if len(s) <= width:
        return s
    head = (width - 1) * 2 // 3
    return s[:head] + "~" + s[len(s) - (width - 1 - head):]


def md_name(s):
    return "`" + s.replace("|", "\\|").replace("`", "'") + "`"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--title", default="workload")
    ap.add_argument("--causeway", required=True, metavar="REPORT.json")
    ap.add_argument("--cupti", metavar="JSON")
    ap.add_argument("--expected", metavar="JSON")
    ap.add_argument("--profiler", metavar="JSON")
    ap.add_argument("--markdown", metavar="OUT.md")
    ap.add_argument("--width", type=int, default=64, help="name column width on stdout")
    args = ap.parse_args(argv)
    if not (args.cupti or args.expected or args.profiler):
        ap.error("give at least one of --cupti, --expected, --profiler")

    try:
        cw, cw_info = load_causeway(args.causeway)
        exact = []  # (label, counts, partial?)
        notes, problems = [], []
        graph, api_calls = {}, None
        cupti_doc = None
        if args.cupti:
            cupti, cupti_doc = load_cupti(args.cupti)
            exact.append(("cupti", cupti, False))
        if args.expected:
            expected, graph, api_calls = load_expected(args.expected)
            exact.append(("expected", expected, True))
        prof = load_profiler(args.profiler) if args.profiler else None
    except InputError as exc:
        print(f"compare_counts: {exc}", file=sys.stderr)
        print(f"SUMMARY title={args.title} result=ERROR reason=input")
        return 2

    # ---- per-name comparison against the exact-name references ----------
    names = set(cw)
    for _, counts, _ in exact:
        names |= set(counts)
    names = sorted(names, key=lambda n: (-max([cw.get(n, 0)] + [c.get(n, 0) for _, c, _ in exact]), n))

    rows, mismatches = [], []
    for n in names:
        row = {"name": n, "causeway": cw.get(n)}
        ok = True
        for label, counts, partial in exact:
            ref = counts.get(n)
            row[label] = ref
            if ref is None and partial:
                continue  # a partial reference says nothing about other names
            if (ref or 0) != (cw.get(n) or 0):
                ok = False
        row["match"] = ok
        rows.append(row)
        if not ok:
            mismatches.append(row)

    labels = [label for label, _, _ in exact]
    totals = {label: sum(c.values()) for label, c, _ in exact}
    totals["causeway"] = sum(cw.values())

    # ---- other checks -----------------------------------------------------
    if cw_info["dropped"] or cw_info["torn"]:
        problems.append(f"causeway lost entries: dropped={cw_info['dropped']} torn={cw_info['torn']}")
    if cupti_doc is not None:
        d = cupti_doc.get("dropped") or 0
        if d:
            problems.append(f"CUPTI dropped {d} records: the reference is incomplete")
        if cupti_doc.get("errors"):
            notes.append(f"cupti_count reported {cupti_doc['errors']} CUPTI errors (see its stderr)")
        if cupti_doc.get("overflow"):
            problems.append(f"cupti_count name table overflowed ({cupti_doc['overflow']} records)")
    prof_line = None
    if prof is not None:
        pt = sum(prof.values())
        cmp_to = [f"causeway {totals['causeway']}"]
        if "cupti" in totals:
            cmp_to.append(f"cupti {totals['cupti']}")
        same = pt == totals["causeway"]
        prof_line = (f"torch.profiler total: {pt} launches of {len(prof)} kernels "
                     f"(vs {', '.join(cmp_to)}): {'match' if same else 'MISMATCH'}")
        if not same:
            problems.append(f"torch.profiler total {pt} != causeway total {totals['causeway']}")
        if "cupti" in totals and pt != totals["cupti"]:
            notes.append(f"torch.profiler total {pt} != cupti total {totals['cupti']} "
                         "(the two references disagree)")

    if mismatches and api_calls:
        if all(cw.get(n, 0) == c for n, c in api_calls.items()):
            notes.append("causeway's counts equal the program's launch API calls (a launch made "
                         "during stream capture counted once, graph replays not expanded): "
                         "CUDA graph kernel executions are what is missing")
        else:
            notes.append("causeway's counts match neither the kernel executions nor the "
                         "program's launch API calls")

    failed = bool(mismatches or problems)

    # ---- stdout table -----------------------------------------------------
    w = max(12, args.width)
    cols = labels + ["causeway"]
    head = f"{'kernel':<{w}} " + " ".join(f"{c:>9}" for c in cols) + "  match"
    print(f"== {args.title}: kernel launches per name ==")
    print(head)
    print("-" * len(head))

    def cell(v):
        return f"{'-' if v is None else v:>9}"

    for r in rows:
        print(f"{clip(r['name'], w):<{w}} " + " ".join(cell(r.get(c)) for c in cols)
              + ("  yes" if r["match"] else "  NO"))
    print("-" * len(head))
    print(f"{'total':<{w}} " + " ".join(cell(totals[c]) for c in cols))
    print(f"causeway: processes={cw_info['processes']} entries={cw_info['entries']} "
          f"dropped={cw_info['dropped']} torn={cw_info['torn']} api_names={cw_info['api_names']} "
          f"api_calls={cw_info['api_calls']} api_errors={cw_info['api_errors']}")
    if cupti_doc is not None:
        print(f"cupti: records={cupti_doc.get('records')} dropped={cupti_doc.get('dropped')} "
              f"struct={cupti_doc.get('record_struct')}")
    if prof_line:
        print(prof_line)
    dm = demangle_all(r["name"] for r in mismatches)
    if mismatches:
        print(f"mismatches ({len(mismatches)}):")
        for r in mismatches:
            parts = [f"{c}={'-' if r.get(c) is None else r.get(c)}" for c in cols]
            g = graph.get(r["name"])
            gnote = f"  [{g} of the expected launches are CUDA graph nodes]" if g else ""
            print(f"  {r['name']}: {' '.join(parts)}{gnote}")
            if dm.get(r["name"], r["name"]) != r["name"]:
                print(f"      = {dm[r['name']]}")
    for p in problems:
        print(f"problem: {p}")
    for n in notes:
        print(f"note: {n}")

    # ---- markdown ---------------------------------------------------------
    if args.markdown:
        md = [f"### {args.title}: kernel launches per name", ""]
        md.append("| kernel | " + " | ".join(cols) + " | match |")
        md.append("|---|" + "---:|" * len(cols) + ":-:|")
        for r in rows:
            md.append(f"| {md_name(r['name'])} | "
                      + " | ".join("-" if r.get(c) is None else str(r.get(c)) for c in cols)
                      + f" | {'yes' if r['match'] else '**NO**'} |")
        md.append("| **total** | " + " | ".join(str(totals[c]) for c in cols) + " | |")
        md.append("")
        md.append(f"causeway: processes={cw_info['processes']}, entries={cw_info['entries']}, "
                  f"dropped={cw_info['dropped']}, torn={cw_info['torn']}")
        if prof_line:
            md.append("")
            md.append(prof_line)
        for p in problems:
            md.append("")
            md.append(f"problem: {p}")
        for n in notes:
            md.append("")
            md.append(f"note: {n}")
        md.append("")
        md.append(f"result: **{'FAIL' if failed else 'PASS'}** "
                  f"({len(rows) - len(mismatches)}/{len(rows)} kernel names match)")
        md.append("")
        try:
            with open(args.markdown, "w") as f:
                f.write("\n".join(md) + "\n")
        except OSError as exc:
            print(f"compare_counts: cannot write {args.markdown}: {exc}", file=sys.stderr)

    tot = " ".join(f"{c}_total={totals[c]}" for c in cols)
    if prof is not None:
        tot += f" profiler_total={sum(prof.values())}"
    print(f"SUMMARY title={args.title} result={'FAIL' if failed else 'PASS'} names={len(rows)} "
          f"matched={len(rows) - len(mismatches)} mismatched={len(mismatches)} "
          f"problems={len(problems)} {tot}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
