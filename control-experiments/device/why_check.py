#!/usr/bin/env python3
"""why_check.py WORK ARM...: checks control-experiments/device/why.sh's answers against the causes
why_cases.cu injected. For each ARM, WORK/ARM-TARGET.json is `causeway why --kernel TARGET --json`;
WORK/ARM.out the program's output (handle_reused=). The lossy arm: WORK/lossy-m_consumer.json.
Prints one row per (arm, target) and PASS/FAIL; exits 1 on any failure.
"""
import json
import sys

CASES = {
    "h_late": ("host", "made no call for", None),
    "d_consumer": ("dependency", "d_long", "event_wait"),
    "v_victim": ("device", "v_hog", None),
    "r_consumer": (None, None, None),  # checked below: no event wait, not r_long
}


def main():
    work = sys.argv[1]
    failures = []
    rows = []
    for arm in sys.argv[2:]:
        out = open(f"{work}/{arm}.out").read()
        reused = "handle_reused=1" in out
        targets = ["m_consumer"] if arm.startswith("lossy") else list(CASES)
        for t in targets:
            try:
                w = json.load(open(f"{work}/{arm}-{t}.json"))
            except (OSError, ValueError) as e:
                failures.append(f"{arm} {t}: no answer ({e})")
                continue
            edges = [l["edge"] for l in w["chain"]]
            ok = True
            note = ""
            if t == "m_consumer":
                ok = w["cause"] == "unknown" and not w["complete"] and "missing" in [l["evidence"] for l in w["chain"]]
            elif t == "r_consumer":
                # An event record in an earlier lifetime of the handle is never an edge.
                if not reused:
                    note = "handle not reused by the driver: case not exercised"
                ok = "event_wait" not in edges and w["cause"] != "dependency"
            elif t == "v_victim" and arm.startswith("events"):
                # Timing events start when the stream reaches the work: queueing behind the hog is
                # part of the victim's interval, and the answer must say so.
                note = "events: queueing not visible (noted)"
                ok = any("timing events" in n for n in w.get("notes", [])) and w["complete"]
            else:
                cause, word, edge = CASES[t]
                ok = w["cause"] == cause and word in w["detail"] and w["complete"]
                if edge:
                    ok = ok and edges[:1] == [edge] and w["chain"][0]["evidence"] == "explicit"
            rows.append((arm, t, w["cause"], w["complete"], ",".join(edges), w.get("late_ns"), note))
            if not ok:
                failures.append(f"{arm} {t}: cause {w['cause']}, complete {w['complete']}, chain {edges}: {w['detail']}")
    print(f"{'arm':10} {'target':12} {'cause':11} {'complete':9} {'chain':40} late_ns")
    for arm, t, cause, complete, edges, late, note in rows:
        print(f"{arm:10} {t:12} {cause:11} {str(complete):9} {edges:40} {late} {note}")
    for f in failures:
        print("FAIL:", f)
    print("why_check:", "PASS" if not failures else f"FAIL ({len(failures)})")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
