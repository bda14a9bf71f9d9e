#!/usr/bin/env python3
"""coverage_check.py WORK ARM... : checks control-experiments/device/coverage.sh's runs of newer_apis.

An ARM is NAME:LEVEL:LINK:BACKEND (LINK shared or static cudart; BACKEND none, cupti or events). For
each (WORK/NAME.json = `causeway report --json`, WORK/NAME.out = the program's stdout, WORK/NAME.rc its
exit code; WORK/bare-LINK.* the bare run): the program behaved as bare (checksum, exit 0); every newer
entry point it called that the arm can see is in the report with its class and no error (at level 3
the level-2 calls; with static cudart only driver calls and, through CUPTI's callbacks, the runtime
calls that issue device work); nothing the program looked up went untraced; at level 3 every device
interval is tied to the call that issued it and the kernel ran as often as the program launched it (3
direct + 2 graph executions; the events backend times a graph launch as one interval). Prints one
table; exits 1 on any failure.
"""
import json
import sys

# (API name prefix as the report names it, class): the driver's names are the versioned exports
# cuda.h maps them to (cuStreamWriteValue32 -> cuStreamWriteValue32_v2).
EXPECTED = [
    ("cudaGetDeviceCount", "other", 4),
    ("cudaSetDevice", "other", 4),
    ("cudaMemcpyBatchAsync", "copy", 2),
    ("cuStreamWriteValue32", "mem_op", 2),
    ("cuStreamWaitValue32", "mem_op", 2),
    ("cuCtxGetCurrent", "other", 4),
    ("cuCtxRecordEvent", "ctx_event_record", 2),
    ("cuCtxWaitEvent", "ctx_event_wait", 2),
    ("cudaMemPrefetchAsync", "prefetch", 2),
    ("cudaMalloc3D", "alloc", 4),
    ("cudaMemset3DAsync", "memset", 2),
    ("cudaGraphUpload", "stream_op", 2),
    ("cudaLaunchHostFunc", "host_func", 2),
]
WORK_CLASSES = {"launch", "copy", "memset", "graph_launch", "prefetch", "mem_op", "stream_op"}
KERNEL_EXECUTIONS = 5
DIRECT_LAUNCHES = 3


def visible(name, cls, level, arm_level, link, backend):
    if level > arm_level:
        return False
    if link == "static" and name.startswith("cuda"):
        # Static cudart never calls through the shim: only CUPTI's callbacks see its work calls.
        return backend == "cupti" and cls in WORK_CLASSES
    return True


def main():
    work = sys.argv[1]
    failures = []
    rows = []
    for spec in sys.argv[2:]:
        arm, level, link, backend = spec.split(":")
        level = int(level)
        bare = open(f"{work}/bare-{link}.out").read()
        bare_sum = [l for l in bare.splitlines() if l.startswith("checksum=")]
        if open(f"{work}/bare-{link}.rc").read().strip() != "0":
            failures.append(f"{arm}: the bare {link} run failed")
        out = open(f"{work}/{arm}.out").read()
        rc = open(f"{work}/{arm}.rc").read().strip()
        r = json.load(open(f"{work}/{arm}.json"))
        same = [l for l in out.splitlines() if l.startswith("checksum=")] == bare_sum and rc == "0"
        if not same:
            failures.append(f"{arm}: exit {rc} or checksum differs from the bare run")
        apis = {a["name"]: a for a in r["apis"]}
        found = 0
        expected = [(p, c) for p, c, lv in EXPECTED if visible(p, c, lv, level, link, backend)]
        for prefix, cls in expected:
            hits = [a for n, a in apis.items() if n == prefix or n.startswith(prefix + "_v")]
            if not hits:
                failures.append(f"{arm}: {prefix} not in the report")
                continue
            if any(a["class"] != cls for a in hits):
                failures.append(f"{arm}: {prefix} has class {[a['class'] for a in hits]}, not {cls}")
                continue
            if any(a["errors"] for a in hits):
                failures.append(f"{arm}: {prefix} recorded an error: {hits}")
            found += 1
        untraced = r.get("unmatched_lookups", [])
        if untraced:
            failures.append(f"{arm}: untraced lookups {untraced}")
        d = r["device"]
        level3 = d["intervals"] > 0
        kernel = [k for k in r["kernels"] if k["name"].startswith("scale")]
        execs = kernel[0]["launches"] if kernel else 0
        dev_count = kernel[0].get("device_count", 0) if kernel else 0
        if execs != KERNEL_EXECUTIONS:
            failures.append(f"{arm}: scale executions {execs}, expected {KERNEL_EXECUTIONS}")
        if level == 3 and not level3:
            failures.append(f"{arm}: no device intervals at level 3")
        if level3:
            un = d["unassociated"]
            if (sum(un.values()) if isinstance(un, dict) else un) != 0:
                failures.append(f"{arm}: unassociated device intervals {un}")
            want = DIRECT_LAUNCHES if backend == "events" else KERNEL_EXECUTIONS
            if dev_count != want:
                failures.append(f"{arm}: {dev_count} kernel intervals, expected {want}")
        copies = {c["kind"]: c["count"] for c in d.get("copies", [])}
        rows.append((arm, same, f"{found}/{len(expected)}", len(untraced), execs, d["intervals"],
                     d["associated"], copies))
    print("arm        same-as-bare  newer-APIs  untraced  scale-execs  device-intervals  associated  copies")
    for arm, same, found, untr, execs, iv, assoc, copies in rows:
        print(f"{arm:10} {str(same):13} {found:11} {untr:8} {execs:12} {iv:17} {assoc:11} {copies}")
    for f in failures:
        print("FAIL:", f)
    print("coverage_check:", "PASS" if not failures else f"FAIL ({len(failures)})")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
