#!/usr/bin/env bash
# test_backends_fake.sh: CPU-only dry runs of backends.sh, with every GPU piece faked; first runs
# test_backends_check.py (the checker's unit tests on fake JSON).
#
# Checks the script's plumbing (builds, steps, the CUPTI and profiler references, one causeway run per
# backend, backends_check.py through cw_json.py, checksums, the interleaved cost rounds, the summary,
# exit status and artifacts) on a machine without a GPU. Fakes: nvcc (writes a stand-in program for
# multistream.cu), nvidia-smi, python3 for torch_spine.py and tiny_loop.py, and the causeway CLI
# (`record --level 3 --backend cupti|events`, `report --json` in the scanner's shape; the events
# backend's clock section carries bound_ns {max, p50}). The backends are cupti, cupti-cb (the cupti
# backend with CAUSEWAY_CUPTI_CORRELATION=callback: the fake causeway and the fake programs log the
# variable as they see it, and the tiny loop costs FAKE_L3CB_US under it) and events.
#
# The events backend is faked as the scanner reports it (2026-11-29): no start check (checked 0), an
# end check (end_checked, end_before_call_end), a flat bound (bound_ns_max, bound_ns_p50), and each
# graph launch timed whole as one "[graph launch]" interval.
# The events backend's durations are an upper bound (upper-ok unless shorter than CUPTI's p50 beyond
# max(10 %, 2 us)); cupti and cupti-cb are judged symmetrically.
# Scenario A (planted findings; the caller's environment has CAUSEWAY_CUPTI_CORRELATION=bogus, which
#   backends.sh must remove): under the events backend multistream's short_b is 2.3 us SHORTER than
#   CUPTI's (-20.7 %: FAIL-below: durations FAIL) and prints another checksum; its other kernels run
#   longer (upper-ok); torch under events loses 2 vadd_kernel intervals besides its graph kernels
#   (association FAIL) and has 3 intervals ending before their call ended (clock FAIL); events costs
#   +3 us/op (ratio 3: MISSED), cupti +1 (ratio 9: MET), cupti-cb +0.5 (ratio 18: MET); 7 rounds.
#   Exit 0: findings are not script errors.
# Scenario B (nothing planted, 2 rounds): one finding, torch/events association GRAPH-WHOLE; exit 0.
# Scenario C (nvcc fails on multistream.cu): a script error, exit 1; torch is still checked.
# Scenario D (the events backend not in the build: the shim records at level 2 and says so): events
#   has no intervals (association FAIL, its cost ratio INVALID); exit 0.
# Scenario E (BACKENDS="cupti events", 1 round): no cupti-cb run, the variable never set.
# cupti_count.so is really built (gcc) when the CUPTI and CUDA headers are found (CUPTI_INC,
# CUDA_INC, CUPTI_LIBDIR; as test_level3_fake.sh); otherwise a fake gcc stands in.
#
# Run: bash control-experiments/device/test_backends_fake.sh   (prints PASS/FAIL; SHOW=1 also prints
#      what backends.sh printed)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/backends-fake.XXXXXX")
trap 'rm -rf "$T"' EXIT
REAL_PY=$(command -v python3)

"$REAL_PY" "$HERE/test_backends_check.py" > "$T/unit.log" 2>&1 || {
  cat "$T/unit.log"
  echo "test_backends_fake: FAIL (test_backends_check.py)"
  exit 1
}
echo "ok   - test_backends_check.py: $(tail -n 3 "$T/unit.log" | grep -E '^Ran ' || true)"

mkdir -p "$T/repo/.carry" "$T/bin"
cp -r "$SRC/control-experiments" "$T/repo/"

# ---- a CUDA_HOME with the CUPTI headers, or a fake gcc --------------------
CUPTI_INC=${CUPTI_INC:-/tmp/wheels/cupti/nvidia/cu13/include}
CUDA_INC=${CUDA_INC:-/tmp/cu/nvidia/cu13/include}
CUPTI_LIBDIR=${CUPTI_LIBDIR:-/tmp/wheels/cupti/nvidia/cu13/lib}
mkdir -p "$T/cuda/extras/CUPTI" "$T/cuda/lib64"
REAL_CUPTI=0
if [[ -f $CUPTI_INC/cupti.h && -f $CUDA_INC/cuda.h && -f $CUDA_INC/crt/host_defines.h && -e $CUPTI_LIBDIR/libcupti.so.13 ]]; then
  REAL_CUPTI=1
  ln -s "$CUPTI_INC" "$T/cuda/extras/CUPTI/include"
  ln -s "$CUDA_INC" "$T/cuda/include"
  ln -s "$CUPTI_LIBDIR/libcupti.so.13" "$T/cuda/lib64/libcupti.so.13"
else
  mkdir -p "$T/cuda/include"
  touch "$T/cuda/include/cupti.h" "$T/cuda/lib64/libcupti.so.13"
  cat > "$T/bin/gcc" << 'EOF'
#!/usr/bin/env bash
# fake gcc: creates the -o file
while (($#)); do [[ $1 == -o ]] && { : > "$2"; exit 0; }; shift; done
exit 1
EOF
fi

# ---- the stand-in GPU programs -------------------------------------------
FILL=_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_
FILL_DM=$(echo "$FILL" | c++filt 2> /dev/null || echo "$FILL")
cat > "$T/bin/fakeprog.py" << EOF
import json, os, sys
kind, args = sys.argv[1], sys.argv[2:]
PLANT = os.environ.get("FAKE_PLANT", "0") == "1"
BACKEND = os.environ.get("FAKE_CAUSEWAY_BACKEND", "")
CORR = os.environ.get("CAUSEWAY_CUPTI_CORRELATION")
with open(os.environ["FAKE_ENV_LOG"], "a") as f:  # what every program saw
    f.write(f"prog {kind} level={os.environ.get('FAKE_CAUSEWAY_LEVEL', '-')} backend={BACKEND or '-'} "
            f"corr={CORR or '-'}\n")
iters = int(args[args.index("--iters") + 1]) if "--iters" in args else 200
# name: (count, p50 ns as CUPTI sees it, as the cupti backend sees it, as the events backend sees it)
MULTI = {"_Z9compute_aPKjmjmiPj": (iters, 51200, 51300, 51900),
         "_Z6long_bjmiPj": (iters, 81300, 81250, 82000),
         "_Z7short_bPKjS0_jmiPj": (iters, 11100, 11150, 8800 if PLANT else 11600),  # 8.8: FAIL-below
         "_Z8tiny_incPj": (2 * iters, 1900, 1950, 3400),       # events: +1.5 us (+79 %): upper-ok
         "_Z8tiny_mixPKhjPj": (iters, 2100, 2080, 2500)}
TORCH = {"$FILL": (3, 1800, 1850, 2600), "nvjet_hsh_128x64_64x4_1x2_h_bz_coopB_NNN": (30, 21000, 21500, 21900),
         "vadd_kernel": (22, 6000, 6040, 6300), "graph_relu": (10, 3000, 3010, 3100)}
GRAPH = {"graph_relu": 10}  # graph-node executions (10 graph launches of a 1-kernel graph)
PROF_NAME = {"$FILL": """$FILL_DM"""}
table = {"multistream": MULTI, "torch": TORCH}.get(kind, {})
copies = {"multistream": (iters + 2, iters + 3), "torch": (44, 3)}.get(kind, (0, 0))
if os.environ.get("CUDA_INJECTION64_PATH") and os.environ.get("CUPTI_COUNT_OUT"):
    on = os.environ.get("CUPTI_COUNT_COPIES") == "1"
    with open(os.environ["CUPTI_COUNT_OUT"], "w") as f:
        json.dump({"tool": "fake", "record_struct": "fake", "dropped": 0,
                   "records": sum(v[0] for v in table.values()),
                   "kernels": {k: v[0] for k, v in table.items()},
                   "memcpy": copies[0] if on else 0, "memset": copies[1] if on else 0,
                   "copies": 1 if on else 0, "bad_times": 0,
                   "durations": {k: {"count": v[0], "p50_ns": v[1], "mean_ns": v[1], "min_ns": v[1],
                                     "max_ns": v[1]} for k, v in table.items()}}, f)
cap = os.environ.get("FAKE_CAUSEWAY_DIR")
level = os.environ.get("FAKE_CAUSEWAY_LEVEL", "")
if cap:
    col = 3 if BACKEND == "events" else 2
    dev = {k: [v[0], v[col]] for k, v in table.items()}
    via_graph = GRAPH if kind == "torch" else {}
    if BACKEND == "events" and via_graph:  # graph launches timed whole
        for k, g in via_graph.items():
            dev[k][0] -= g
            if dev[k][0] == 0:
                del dev[k]
        dev["[graph launch]"] = [10, 14000]
        if PLANT:
            dev["vadd_kernel"][0] -= 2
    ops = 0
    if kind == "tiny":
        ops = 2000 + 5 * 20200 if "--n" in args and args[args.index("--n") + 1] == "20000" else 0
        dev = {"$FILL": [1, 1500], "add_kernel": [ops, 1200]}
    neg = 3 if (kind == "torch" and BACKEND == "events" and PLANT) else 0
    with open(os.path.join(cap, "obs.json"), "w") as f:
        json.dump({"dev": dev, "copies": list(copies), "neg": neg, "ops": ops,
                   "launches": {k: v[0] for k, v in table.items()} if table else
                   {k: v[0] for k, v in dev.items()}, "via_graph": via_graph,
                   "graph_launches": 10 if via_graph else 0}, f)
if kind == "multistream":
    diff = PLANT and BACKEND == "events" and level == "3"
    print(f"multistream: iters={iters} tiny=2 (fake)")
    print(f"checksum: fnv={'deadbeef' if diff else '0123abcd'} iters={iters} tiny=2 counter={2 * iters}")
    sys.exit(0)
if kind == "torch":
    if "--profile-durations" in args:
        with open(args[args.index("--profile-durations") + 1], "w") as f:
            json.dump({PROF_NAME.get(k, k): {"count": v[0], "p50_ns": v[1] * 1.03, "mean_ns": v[1],
                                             "min_ns": v[1], "max_ns": v[1]} for k, v in table.items()}, f)
    print("checksum: 4242.0 steps=20 warmup=2 replays=10 triton=ok nvtx=ok")
    sys.exit(0)
if kind == "tiny":
    if level == "3":
        knob = ("FAKE_L3E_US" if BACKEND == "events" else
                "FAKE_L3CB_US" if CORR == "callback" else "FAKE_L3C_US")
        base = 6.0 + float(os.environ.get(knob, "0.5" if knob == "FAKE_L3CB_US" else "1.0"))
    else:
        base = {"": 6.0, "2": 6.3}[level]
    if "--profile" in args:
        base = 15.0
    for r in range(5):
        print(f"rep {r}: {base + 0.01 * r:.3f} us/op")
    print(f"tiny_loop: mode={'profiler' if '--profile' in args else 'bare'} n=20000 reps=5 "
          f"min={base:.3f} median={base + 0.02:.3f} max={base + 0.04:.3f} us/op")
    print("checksum: a0=103000.0 ops=103000 exact")
    sys.exit(0)
sys.exit(f"fakeprog: unknown kind {kind}")
EOF

cat > "$T/bin/nvcc" << EOF
#!/usr/bin/env bash
# fake nvcc: -o OUT SRC -> OUT runs fakeprog.py with the program's kind
out= src=
while ((\$#)); do
  case \$1 in
    -o) out=\$2; shift ;;
    --version) echo "Cuda compilation tools, release 13.0 (fake)"; exit 0 ;;
    *.cu) src=\$1 ;;
  esac
  shift
done
case \$(basename "\$src") in
  multistream.cu) kind=multistream ;;
  *) echo "fake nvcc: unknown source \$src" >&2; exit 1 ;;
esac
if [[ \${FAKE_NVCC_FAIL:-0} == 1 ]]; then echo "fake nvcc: planted failure" >&2; exit 2; fi
printf '#!/usr/bin/env bash\nexec "%s" "%s" %s "\$@"\n' "$REAL_PY" "$T/bin/fakeprog.py" "\$kind" > "\$out"
chmod +x "\$out"
EOF

cat > "$T/bin/nvidia-smi" << 'EOF'
#!/usr/bin/env bash
echo "GPU 0: NVIDIA H200 (fake)"
EOF

cat > "$T/bin/fakepy" << EOF
#!/usr/bin/env bash
# python3 stand-in: torch_spine.py and tiny_loop.py are faked, everything else is real python
case \${1:-} in
  *torch_spine.py) shift; exec "$REAL_PY" "$T/bin/fakeprog.py" torch "\$@" ;;
  *tiny_loop.py) shift; exec "$REAL_PY" "$T/bin/fakeprog.py" tiny "\$@" ;;
  -c) echo "torch 2.11.0+fake cuda 13.0 gpu NVIDIA H200"; exit 0 ;;
  *) exec "$REAL_PY" "\$@" ;;
esac
EOF

# ---- the fake causeway CLI -------------------------------------------------
cat > "$T/repo/.carry/causeway" << EOF
#!$REAL_PY
import json, os, subprocess, sys
a = sys.argv[1:]
if a[0] == "record":
    i = a.index("--")
    opts, cmd = a[1:i], a[i + 1:]
    level = opts[opts.index("--level") + 1]
    backend = opts[opts.index("--backend") + 1] if "--backend" in opts else ""
    if (level == "3") != (backend != ""):
        sys.exit("fake causeway: --backend goes with level 3 only")
    missing = backend == "events" and os.environ.get("FAKE_EVENTS_MISSING") == "1"
    out = opts[opts.index("--out") + 1]
    with open(os.environ["FAKE_ENV_LOG"], "a") as f:  # the record runs: where and with which switch
        f.write(f"record {os.path.basename(out)} level={level} backend={backend or '-'} "
                f"corr={os.environ.get('CAUSEWAY_CUPTI_CORRELATION') or '-'}\n")
    cap = os.path.join(out, "capture-0001")
    os.makedirs(cap)
    with open(os.path.join(cap, "meta.json"), "w") as f:
        json.dump({"level": "2" if missing else level, "backend": "none" if missing else backend,
                   "notice": "CAUSEWAY_BACKEND=events is not available in this build; recording at "
                             "level 2 (host calls only)" if missing else None}, f)
    env = dict(os.environ, FAKE_CAUSEWAY_DIR=cap, FAKE_CAUSEWAY_LEVEL=level, FAKE_CAUSEWAY_BACKEND=backend)
    rc = subprocess.call(cmd, env=env)
    if missing:
        print("causeway: note: the events backend is not available in this build yet: the shim recorded "
              "host calls only", file=sys.stderr)
    print(f"causeway: capture written to {cap}", file=sys.stderr)
    sys.exit(rc)
if a[0] == "report":
    cap = a[-1]
    meta = json.load(open(os.path.join(cap, "meta.json")))
    try:
        obs = json.load(open(os.path.join(cap, "obs.json")))
    except FileNotFoundError:
        obs = {"dev": {}, "copies": [0, 0], "neg": 0, "launches": {}, "via_graph": {}, "graph_launches": 0}
    if "--json" not in a:
        print("DEVICE (fake text report)")
        sys.exit(0)
    lv3 = meta["level"] == "3"
    ev = meta["backend"] == "events"
    kern = sum(c for c, _ in obs["dev"].values())
    n = kern + sum(obs["copies"]) if lv3 else 0
    u = {"total": 0, "no_call": 0, "call_not_in_capture": 0, "wrong_class": 0}
    # the scanner's shape: cupti checks starts, events checks ends and states a bound
    clock = {"conversion": ("event-anchors" if ev else "cupti-timestamp-callback") if lv3 else "none",
             "converted": n, "unconverted": 0, "checked": n if lv3 and not ev else 0, "before_call": 0,
             "min_launch_to_start_ns": 4321 if lv3 and not ev else None,
             "end_checked": n if lv3 and ev else 0, "end_before_call_end": obs["neg"] if lv3 and ev else 0,
             "min_call_end_to_device_end_ns": (-2500 if obs["neg"] else 1161) if lv3 and ev else None,
             "bound_ns_max": 1800 if lv3 and ev else None, "bound_ns_p50": 640 if lv3 and ev else None,
             "anchors": 2 if lv3 and ev else 0}
    dev = {"intervals": n, "associated": n, "unassociated": u, "unconverted": 0, "untimed": 0, "dropped": 0,
           "unknown_kind": 0, "clock": clock,
           "kernels": [{"name": k, "count": c, "total_ns": c * q, "p50_ns": q, "p99_ns": q, "max_ns": q,
                        "latency_count": c, "latency_p50_ns": 3000, "latency_p99_ns": 9000}
                       for k, (c, q) in obs["dev"].items()] if lv3 else [],
           "copies": [{"kind": "HtoD", "count": obs["copies"][0], "bytes": 1, "total_ns": 1, "p50_ns": 1,
                       "p99_ns": 1, "max_ns": 1},
                      {"kind": "memset", "count": obs["copies"][1], "bytes": 1, "total_ns": 1, "p50_ns": 1,
                       "p99_ns": 1, "max_ns": 1}] if lv3 else []}
    print(json.dumps({"capture": cap,
                      "processes": [{"pid": 1, "entries": 99, "dropped": 0, "torn": 0,
                                     "backend": meta["backend"] if lv3 else "none", "notice": meta["notice"],
                                     "device_intervals": n, "associated": n, "unassociated": u,
                                     "device_dropped": 0, "unconverted": 0,
                                     "counters": {"device_dropped": 0}}],
                      "kernels": [{"name": k, "launches": v, "direct": v - obs["via_graph"].get(k, 0),
                                   "via_graph": obs["via_graph"].get(k, 0), "captured": 0,
                                   "failed": 0, "open": 0} for k, v in obs["launches"].items()],
                      "device": dev, "totals": {"entries": 99, "graph_launches": obs["graph_launches"]}}))
    sys.exit(0)
sys.exit("fake causeway: bad arguments")
EOF
chmod +x "$T/repo/.carry/causeway" "$T/bin/"*

run_backends() { # run_backends NAME [ENV=VALUE...]: runs backends.sh, output in $T/NAME.*
  local name=$1
  shift
  mkdir -p "$T/out-$name"
  local rc=0
  (cd "$T/repo" && env PATH="$T/bin:$PATH" OUT="$T/out-$name" PYTHON="$T/bin/fakepy" TMPDIR="$T" \
    CUDA_HOME="$T/cuda" BACKENDS_BUDGET_S=300 FAKE_ENV_LOG="$T/$name.env" "$@" \
    bash control-experiments/device/backends.sh > "$T/$name.stdout" 2> "$T/$name.stderr") || rc=$?
  echo "$rc" > "$T/$name.rc"
}

bad=0
check() { # check DESCRIPTION COMMAND...
  if "${@:2}"; then echo "ok   - $1"; else echo "FAIL - $1"; bad=1; fi
}
jq_py() { # jq_py NAME EXPR: evaluates EXPR (python, `s` = backends-summary.json) and prints it
  "$REAL_PY" -c "import json,sys; s=json.load(open(sys.argv[1])); print($2)" "$T/out-$1/backends-summary.json"
}
findings() { sed -n '/^FINDINGS (/,/^[^ ]/p' "$T/$1.stdout" | grep '^  - ' | sed 's/^  - //' || true; }

# ---- scenario A: planted findings ------------------------------------------
run_backends a FAKE_PLANT=1 FAKE_L3C_US=1.0 FAKE_L3E_US=3.0 FAKE_L3CB_US=0.5 CAUSEWAY_CUPTI_CORRELATION=bogus
S=$T/a.stdout
check "A: exits 0 (findings are not script errors)" test "$(cat "$T/a.rc")" = 0
if ((REAL_CUPTI)); then check "A: cupti_count.so was really built" grep -q '^\[ok     \] build-cupti-count' "$S"; fi
check "A: multistream built with -lineinfo" grep -q 'build-multistream (timeout .*-lineinfo' "$T/out-a/backends.log"
check "A: multistream cupti row passes" grep -Eq '^cupti +cupti +1605/1605 +1605 +0 +0 +0 +5/5 +5/0/0/0/0 +0/1605 +- +4.32us +null +same  assoc=PASS dur=PASS clock=PASS$' "$S"
check "A: multistream cupti-cb row passes like cupti" grep -Eq '^cupti-cb cupti +1605/1605 +1605 +0 +0 +0 +5/5 +5/0/0/0/0 +0/1605 +- +4.32us +null +same  assoc=PASS dur=PASS clock=PASS$' "$S"
check "A: multistream events row: durations FAIL (below), bound, checksum DIFF" grep -Eq '^events +events +1605/1605 +1605 +0 +0 +0 +5/5 +4/-/1/0/0 +- +0/1605 +- +1.80us/640ns +DIFF  assoc=PASS dur=FAIL clock=PASS$' "$S"
check "A: the table header states both rules" bash -c "grep -q '^durations of cupti, cupti-cb: tolerance |p50 - reference p50| <= max(10% of the reference p50, 2.00us)' '$S' && grep -q '^durations of events: an UPPER BOUND: p50 >= reference p50 - max(10% of the reference p50, 2.00us)' '$S'"
check "A: short_b shorter than CUPTI's under events: FAIL-below" grep -Eq '^_Z7short_bPKjS0_jmiPj +200 +11.10us \| +11.15us +\+0.5% +ok \| +11.15us +\+0.5% +ok \| +8.80us +-2.30us +-20.7% +FAIL-below$' "$S"
check "A: tiny_inc longer under events: upper-ok with its excess" grep -Eq '^_Z8tiny_incPj +400 +1.90us \| +1.95us +\+2.6% +ok \| +1.95us +\+2.6% +ok \| +3.40us +\+1.50us +\+78.9% +upper-ok$' "$S"
check "A: multistream events excess median" grep -q "^\[events\] durations are an upper bound: excess over CUPTI's p50: median +700ns and +1.4% over 5 kernel(s) (min -2.30us, max +1.50us)$" "$S"
check "A: the events clock section printed whole" grep -q '^\[events\] clock: {"anchors": 2, "before_call": 0, "bound_ns_max": 1800, "bound_ns_p50": 640, "checked": 0, "conversion": "event-anchors", "converted": 1605, "end_before_call_end": 0, "end_checked": 1605' "$S"
check "A: torch events association and clock fail" grep -Eq '^events +events +110/112 +110 +0 +0 +0 +2/5 +3/-/0/0/1 +- +3/110 +- +1.80us/640ns +same  assoc=FAIL dur=PASS clock=FAIL$' "$S"
check "A: torch events: graph launches not compared" grep -q '^\[events\] not a kernel row (not compared): \[graph launch\] n=10 p50=14.00us' "$S"
check "A: torch events: the end check failed" grep -q '^\[events\] problem (clock): 3 device interval(s) end before their issuing call ended (want 0, or within the stated bound)' "$S"
check "A: torch durations vs the profiler too" grep -Eq "^_ZN2at6native29vectorized_el~.* +3 +1.80us +1.85us \| +1.85us +\+2.8% +ok +ok \| +1.85us +\+2.8% +ok +ok \| +2.60us +\+800ns +\+44.4% +upper-ok +upper-ok$" "$S"
check "A: torch kernel mismatches named" bash -c "grep -q '^\[events\]   count mismatch: graph_relu: cupti=10 events=-' '$S' && grep -q '^\[events\]   count mismatch: vadd_kernel: cupti=22 events=20' '$S'"
check "A: cost: events ratio 3 MISSED" grep -q '^  causeway level 3 events: 9.000 / 3.000 = 3.00  MISSED$' "$S"
check "A: cost: cupti ratio 9 MET" grep -q '^  causeway level 3 cupti: 9.000 / 1.000 = 9.00  MET$' "$S"
check "A: cost: cupti-cb ratio 18 MET" grep -q '^  causeway level 3 cupti-cb: 9.000 / 0.500 = 18.00  MET$' "$S"
check "A: cost: paired added table" grep -Eq '^causeway level 3 cupti-cb +7 +6.520 +6.520 +6.520 \| +0.500 +0.500 +0.500 +7 \| +0.500$' "$S"
check "A: cost: 6 arms x 7 runs (the default rounds)" test "$(jq_py a "sorted((a, len([v for v in r['values'] if v])) for a, r in s['cost']['arms'].items())")" = \
  "[('bare', 7), ('l3cupti', 7), ('l3cupti-cb', 7), ('l3events', 7), ('level2', 7), ('profiler', 7)]"
check "A: cost: paired per-round added in the JSON" test "$(jq_py a "s['cost']['arms']['profiler']['added'], s['cost']['arms']['profiler']['added_median']")" = \
  "[9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0] 9.0"
check "A: the caller's CAUSEWAY_CUPTI_CORRELATION removed (and said)" grep -q '^note: CAUSEWAY_CUPTI_CORRELATION=bogus was set by the caller; removed' "$S"
check "A: callback correlation in exactly the cupti-cb record runs (2 workloads + 7 rounds)" test \
  "$(grep -c '^record .*cupti-cb.* level=3 backend=cupti corr=callback$' "$T/a.env") $(grep -c 'corr=callback' "$T/a.env") $(grep -c '^record .*cupti-cb' "$T/a.env")" = "9 18 9"
check "A: no other run sees the variable" test "$(grep -v 'corr=callback$' "$T/a.env" | grep -vc 'corr=-$')" = 0
check "A: every program under cupti-cb ran with callback" test "$(grep -c '^prog .* backend=cupti corr=callback$' "$T/a.env")" = 9
check "A: summary JSON: modes" test "$(jq_py a "sorted(s['tolerance']['modes'].items())")" = \
  "[('cupti', 'symmetric'), ('cupti-cb', 'symmetric'), ('events', 'upper')]"
check "A: cost runs verified" grep -q '^causeway level 3 events round-1 run recorded every op: device intervals=103001 (want >= 103000) unassociated=0 dropped=0: yes' "$S"
check "A: the findings, exactly" test "$(findings a | tr '\n' '|')" = \
  "multistream/events: durations FAIL|multistream/events: checksum or exit code differs from bare|torch/events: association FAIL|torch/events: clock FAIL|cost/l3events: ratio MISSED (3.00)|"
check "A: no script errors" grep -q '^script: every step ran (no script errors)$' "$S"
check "A: summary JSON: verdicts" test "$(jq_py a "s['workloads']['multistream']['backends']['events']['durations']['verdict'], s['workloads']['torch']['backends']['cupti']['association']['verdict'], s['workloads']['torch']['backends']['cupti-cb']['durations']['verdict'], s['cost']['ratios']['l3cupti']['result'], s['cost']['ratios']['l3cupti-cb']['result']")" = "FAIL PASS PASS MET MET"
check "A: summary states the upper-bound excess" grep -q "^  torch/events: durations are an upper bound; excess over CUPTI's p50: median +800ns and +5.0% over 3 kernel(s)" "$S"
check "A: summary JSON: events bound and tolerance" test "$(jq_py a "s['workloads']['multistream']['backends']['events']['clock']['bound_ns']['max'], s['tolerance']['abs_ns']")" = "1800 2000.0"
check "A: arm order rotates" bash -c "grep -oE '\] perf-[a-z0-9]+-2 ' '$S' | head -n 1 | grep -q perf-profiler-2"
check "A: OUT holds the 4 files" test "$(find "$T/out-a" -mindepth 1 -printf '%f\n' | sort | tr '\n' ' ')" = \
  "backends-artifacts.tar.gz backends-summary.json backends-summary.md backends.log "
check "A: artifacts hold the reports and references" bash -c "tar -tzf '$T/out-a/backends-artifacts.tar.gz' > '$T/a.tar'; grep -q 'multistream.cw-events.json' '$T/a.tar' && grep -q 'torch.cw-cupti-cb.json' '$T/a.tar' && grep -q 'perf-l3cupti-cb.causeway.json' '$T/a.tar' && grep -q 'torch.cupti-ref.json' '$T/a.tar' && grep -q 'torch.profiler-durations.json' '$T/a.tar' && grep -q 'multistream.cw-cupti.capture.tar.gz' '$T/a.tar' && grep -q 'perf-l3events.causeway.json' '$T/a.tar' && grep -q 'torch.cw-events.report.txt' '$T/a.tar'"
check "A: summary.md has the tables and the tail" bash -c "grep -q '== torch: level-3 backends vs the CUPTI reference' '$T/out-a/backends-summary.md' && grep -q '^script: every step ran' '$T/out-a/backends-summary.md'"
check "A: captures removed" bash -c "! ls -d '$T'/causeway-backends.*/cap-* 2> /dev/null | grep -q ."
check "A: nothing on stderr" test ! -s "$T/a.stderr"

# ---- scenario B: nothing planted -----------------------------------------
run_backends b FAKE_PLANT=0 FAKE_L3C_US=1.0 FAKE_L3E_US=1.5 PERF_ROUNDS=2
check "B: exits 0" test "$(cat "$T/b.rc")" = 0
check "B: the only finding: graph launches timed whole" test "$(findings b | tr '\n' '|')" = "torch/events: association GRAPH-WHOLE|"
check "B: torch events row" grep -Eq '^events +events +112/112 +112 +0 +0 +0 +3/5 +3/-/0/0/1 +- +0/112 +- +1.80us/640ns +same  assoc=GRAPH-WHOLE dur=PASS clock=PASS$' "$T/b.stdout"
check "B: 2 cost rounds" grep -Eq '^bare +2 ' "$T/b.stdout"
check "B: events ratio 6 MET" grep -q '^  causeway level 3 events: 9.000 / 1.500 = 6.00  MET$' "$T/b.stdout"
check "B: cupti-cb ratio 18 MET" grep -q '^  causeway level 3 cupti-cb: 9.000 / 0.500 = 18.00  MET$' "$T/b.stdout"

# ---- scenario C: nvcc fails ------------------------------------------------
run_backends c FAKE_PLANT=0 FAKE_NVCC_FAIL=1 PERF_ROUNDS=1
check "C: exits 1 (script error)" test "$(cat "$T/c.rc")" = 1
check "C: the build failure is a script error" bash -c "sed -n '/^SCRIPT ERRORS/,\$p' '$T/c.stdout' | grep -q 'build multistream.cu: exit code 2'"
check "C: multistream not run" grep -q 'multistream: .*/multistream was not built; workload not run' "$T/c.stdout"
check "C: NVTX-less build retried" grep -q 'retrying without NVTX' "$T/c.stdout"
check "C: torch still checked" grep -q 'torch/events: association=GRAPH-WHOLE durations=PASS clock=PASS checksum=same' "$T/c.stdout"

# ---- scenario D: the events backend not in the build ------------------------
run_backends d FAKE_PLANT=0 FAKE_EVENTS_MISSING=1 PERF_ROUNDS=1
check "D: exits 0" test "$(cat "$T/d.rc")" = 0
check "D: events row shows no intervals and the fallback" grep -Eq '^events +none +0/1605 +0 +0 +0 +0 +0/5 +0/-/0/5/0 +- +- +- +null +same  assoc=FAIL dur=FAIL clock=FAIL$' "$T/d.stdout"
check "D: the shim's notice is shown" grep -q '^\[events\] shim notice: CAUSEWAY_BACKEND=events is not available' "$T/d.stdout"
check "D: the record note is logged" grep -q 'multistream/events: causeway record says: causeway: note: the events backend is not available' "$T/out-d/backends.log"
check "D: events cost ratio INVALID" grep -q 'causeway level 3 events: .* INVALID (its run did not record every op' "$T/d.stdout"

# ---- scenario E: two backends, no cupti-cb -------------------------------------
run_backends e FAKE_PLANT=0 BACKENDS="cupti events" PERF_ROUNDS=1
check "E: exits 0" test "$(cat "$T/e.rc")" = 0
check "E: no cupti-cb run, the variable never set" test "$(grep -c 'cupti-cb\|corr=callback' "$T/e.env") $(grep -vc 'corr=-$' "$T/e.env")" = "0 0"
check "E: two level-3 ratios" test "$(jq_py e "sorted(s['cost']['ratios'])")" = "['l3cupti', 'l3events']"
check "E: only cupti in the symmetric rule" grep -q '^durations of cupti: tolerance ' "$T/e.stdout"

if ((bad)) || [[ ${SHOW:-0} == 1 ]]; then
  for n in a b c d e; do
    echo "--- scenario $n stdout"; cat "$T/$n.stdout"; echo "--- scenario $n stderr"; cat "$T/$n.stderr"
  done
fi
if ((bad)); then
  echo "test_backends_fake: FAIL"
  exit 1
fi
echo "test_backends_fake: PASS"
