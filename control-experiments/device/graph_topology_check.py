#!/usr/bin/env python3
"""Scores a causal-graph export of graph_topo.cu against the dependencies the program printed.

usage: graph_topology_check.py PROGRAM_OUTPUT GRAPH_JSON

For each graph launch (device work grouped by the launch call's sequence number), the `graph_edge`
edges between its kernels, by kernel name, must be exactly the program's `edge FROM TO` lines between
the kernels that launch ran. Prints one line per graph and a summary; exits 1 on any mismatch.
"""
import collections
import json
import sys


def short(name):
    return name.split("(")[0]


def main(prog_out, graph_json):
    want = set()
    launches = 0
    for line in open(prog_out):
        parts = line.split()
        if parts[:1] == ["edge"]:
            want.add((parts[1], parts[2]))
        elif parts[:1] == ["launches"]:
            launches = int(parts[1])
    doc = json.load(open(graph_json))
    p = doc["processes"][0]
    dev = p["device"]
    by_launch = collections.defaultdict(set)
    ran = collections.defaultdict(set)
    with_node = 0
    for d in dev:
        if d.get("graph_node") is not None:
            with_node += 1
            ran[d["call"]].add(short(d["name"]))
    for e in p["edges"]:
        if e["kind"] != "graph_edge":
            continue
        f, t = e["from"], e["to"]
        if "work" not in f or "work" not in t:
            by_launch[dev[t["work"]]["call"]].add(("MISSING", short(dev[t["work"]]["name"])))
            continue
        if e["evidence"]["class"] != "explicit":
            by_launch[dev[t["work"]]["call"]].add(("NOT-EXPLICIT", "?"))
        by_launch[dev[t["work"]]["call"]].add((short(dev[f["work"]]["name"]), short(dev[t["work"]]["name"])))
    ok = bad = 0
    shapes = collections.Counter()
    for seq in sorted(ran):
        names = ran[seq]
        expect = {(a, b) for a, b in want if a in names and b in names}
        got = by_launch.get(seq, set())
        if got == expect:
            ok += 1
        else:
            bad += 1
            print(f"launch seq {seq}: kernels {sorted(names)}")
            print(f"   missing {sorted(expect - got)}")
            print(f"   extra   {sorted(got - expect)}")
        shapes[tuple(sorted(names))] += 1
    for names, n in shapes.items():
        print(f"graph {'/'.join(names)}: {n} launches")
    print(f"graph kernel executions with a node index: {with_node}; "
          f"launches whose graph_edge edges match the program: {ok} of {ok + bad} "
          f"(program launched {3 * launches})")
    return 0 if bad == 0 and ok == 3 * launches else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
