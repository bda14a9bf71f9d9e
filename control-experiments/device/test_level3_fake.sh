#!/usr/bin/env bash
# test_level3_fake.sh: CPU-only dry runs of level3.sh, with every GPU piece faked.
#
# Checks the script's plumbing (steps, timeouts, the capture line, the CUPTI
# and profiler references, level3_check.py through cw_json.py, checksum and
# exit-code checks, the interleaved performance rounds and their table,
# summary and artifacts) on a machine without a GPU. Fakes: nvcc (writes a
# stand-in program), nvidia-smi, python3 for torch_spine.py and tiny_loop.py,
# and the causeway CLI, whose `report --json` has the device section in the
# shape of the scanner's work in progress (scanner/src/device.rs).
#
# Scenario A (planted failures): the per-thread spine_prog loses its graph
# kernels' device intervals (association must FAIL), the torch capture has 2
# intervals starting before their call (clock must FAIL); the rest passes, the
# performance target is met (profiler +9 us/op, level 3 +1 us/op); exit 1.
# Scenario B (nothing planted, 2 perf rounds): ALL PASSED, exit 0.
# Scenario C (level 3 costs 3 us/op): only the performance target fails.
# cupti_count.so is really built (gcc) when the CUPTI and CUDA headers are
# found (CUPTI_INC, CUDA_INC; defaults: the pip wheels unpacked in /tmp);
# otherwise a fake gcc stands in.
#
# Run: bash control-experiments/device/test_level3_fake.sh   (prints PASS/FAIL;
#      SHOW=1 also prints what level3.sh printed)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/level3-fake.XXXXXX")
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/repo/.carry" "$T/bin"
cp -r "$SRC/control-experiments" "$T/repo/"
REAL_PY=$(command -v python3)

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
# name: (count, p50 ns as CUPTI sees it, p50 ns as causeway sees it)
SPINE = {"spine_fill": (1, 5200, 5000), "_Z15producer_kernelPjji": (10, 9000, 9100),
         "_Z15consumer_kernelPKjPji": (10, 8000, 8050), "_Z11axpy_kernelIjEvPT_PKS0_S0_i": (4, 7000, 7010),
         "_Z12scale_kernelPjji": (7, 6000, 6100), "graph_stage1": (5, 4000, 4100),
         "_ZN5spine12graph_stage3EPji": (5, 1500, 2600),   # short: passes only through the 2 us floor
         "_Z13reduce_kernelPKjPyi": (1, 12000, 12500)}
GRAPH = {"_Z12scale_kernelPjji": 5, "graph_stage1": 5, "_ZN5spine12graph_stage3EPji": 5}
TORCH = {"$FILL": (3, 1800, 1850), "nvjet_hsh_128x64_64x4_1x2_h_bz_coopB_NNN": (30, 21000, 21500),
         "vadd_kernel": (22, 6000, 6040)}
PROF_NAME = {"$FILL": """$FILL_DM"""}
table = {"spine-legacy": SPINE, "spine-per-thread": SPINE, "torch": TORCH}.get(kind, {})
copies = {"spine-legacy": (5, 2), "spine-per-thread": (5, 2), "torch": (44, 3)}.get(kind, (0, 0))
if os.environ.get("CUDA_INJECTION64_PATH") and os.environ.get("CUPTI_COUNT_OUT"):
    on = os.environ.get("CUPTI_COUNT_COPIES") == "1"
    with open(os.environ["CUPTI_COUNT_OUT"], "w") as f:
        json.dump({"tool": "fake", "record_struct": "fake", "dropped": 0,
                   "records": sum(c for c, _, _ in table.values()),
                   "kernels": {k: c for k, (c, _, _) in table.items()},
                   "memcpy": copies[0] if on else 0, "memset": copies[1] if on else 0,
                   "copies": 1 if on else 0, "bad_times": 0,
                   "durations": {k: {"count": c, "p50_ns": p, "mean_ns": p, "min_ns": p, "max_ns": p}
                                 for k, (c, p, _) in table.items()}}, f)
cap = os.environ.get("FAKE_CAUSEWAY_DIR")
if cap:
    dev = {k: [c, q] for k, (c, _, q) in table.items()}
    if kind == "spine-per-thread" and PLANT:  # graph kernels' intervals lost
        for k, g in GRAPH.items():
            dev[k][0] -= g
    ops = 0
    if kind == "tiny":
        ops = 2000 + 5 * 20200 if "--n" in args and args[args.index("--n") + 1] == "20000" else 0
        dev = {"$FILL": [1, 1500], "add_kernel": [ops, 1200]}
    neg = 2 if (kind == "torch" and PLANT) else 0
    with open(os.path.join(cap, "obs.json"), "w") as f:
        json.dump({"dev": dev, "copies": list(copies), "neg": neg, "ops": ops,
                   "launches": {k: v[0] for k, v in dev.items()}}, f)
if kind.startswith("spine"):
    code = int(args[args.index("--exit-code") + 1]) if "--exit-code" in args else 0
    print(f"checksum: sum=123 b_fnv=abc default_stream={kind[6:]}")
    sys.exit(code)
if kind == "torch":
    if "--profile-durations" in args:
        with open(args[args.index("--profile-durations") + 1], "w") as f:
            json.dump({PROF_NAME.get(k, k): {"count": c, "p50_ns": p * 1.03, "mean_ns": p, "min_ns": p,
                                             "max_ns": p} for k, (c, p, _) in table.items()}, f)
    if "--profile" in args:
        with open(args[args.index("--profile") + 1], "w") as f:
            json.dump({PROF_NAME.get(k, k): c for k, (c, _, _) in table.items()}, f)
    print("checksum: 4242.0 steps=20 warmup=2 replays=10 triton=ok nvtx=ok")
    sys.exit(0)
if kind == "tiny":
    level = os.environ.get("FAKE_CAUSEWAY_LEVEL", "")
    base = {"": 6.0, "2": 6.3, "3": float(os.environ.get("FAKE_L3_US", "1.0")) + 6.0}[level]
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
out= src= mode=legacy
while ((\$#)); do
  case \$1 in
    -o) out=\$2; shift ;;
    --default-stream) [[ \$2 == per-thread ]] && mode=per-thread; shift ;;
    --version) echo "Cuda compilation tools, release 13.0 (fake)"; exit 0 ;;
    *.cu) src=\$1 ;;
  esac
  shift
done
case \$(basename "\$src") in
  spine_prog.cu) kind=spine-\$mode ;;
  *) echo "fake nvcc: unknown source \$src" >&2; exit 1 ;;
esac
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
    if level == "3" and opts[opts.index("--backend") + 1] != "cupti":
        sys.exit("fake causeway: level 3 wants --backend cupti")
    out = opts[opts.index("--out") + 1]
    cap = os.path.join(out, "capture-0001")
    os.makedirs(cap)
    with open(os.path.join(cap, "ring.bin"), "wb") as f:
        f.write(b"\0" * 4096)
    with open(os.path.join(cap, "level"), "w") as f:
        f.write(level)
    rc = subprocess.call(cmd, env=dict(os.environ, FAKE_CAUSEWAY_DIR=cap, FAKE_CAUSEWAY_LEVEL=level))
    print(f"causeway: capture written to {cap}", file=sys.stderr)
    sys.exit(rc)
if a[0] == "report":
    cap = a[-1]
    level = open(os.path.join(cap, "level")).read()
    try:
        obs = json.load(open(os.path.join(cap, "obs.json")))
    except FileNotFoundError:
        obs = {"dev": {}, "copies": [0, 0], "neg": 0, "launches": {}}
    if "--json" not in a:
        print("DEVICE (fake text report)")
        sys.exit(0)
    lv3 = level == "3"
    kern = sum(c for c, _ in obs["dev"].values())
    n = kern + sum(obs["copies"]) if lv3 else 0
    u = {"total": 0, "no_call": 0, "call_not_in_capture": 0, "wrong_class": 0}
    dev = {"intervals": n, "associated": n, "unassociated": u, "unconverted": 0, "dropped": 0,
           "unknown_kind": 0,
           "clock": {"conversion": "cupti-timestamp-callback" if lv3 else "none", "converted": n,
                     "unconverted": 0, "checked": n, "before_call": obs["neg"] if lv3 else 0,
                     "min_launch_to_start_ns": (-150 if obs["neg"] else 2345) if lv3 else None},
           "kernels": [{"name": k, "count": c, "total_ns": c * q, "p50_ns": q, "p99_ns": q, "max_ns": q,
                        "latency_count": c, "latency_p50_ns": 3000, "latency_p99_ns": 9000}
                       for k, (c, q) in obs["dev"].items()] if lv3 else [],
           "copies": [{"kind": "HtoD", "count": obs["copies"][0], "bytes": 1, "total_ns": 1, "p50_ns": 1,
                       "p99_ns": 1, "max_ns": 1},
                      {"kind": "memset", "count": obs["copies"][1], "bytes": 1, "total_ns": 1, "p50_ns": 1,
                       "p99_ns": 1, "max_ns": 1}] if lv3 else []}
    print(json.dumps({"capture": cap,
                      "processes": [{"pid": 1, "entries": 99, "dropped": 0, "torn": 0,
                                     "backend": "cupti" if lv3 else "none", "device_intervals": n,
                                     "associated": n, "unassociated": u, "device_dropped": 0,
                                     "unconverted": 0, "counters": {"device_dropped": 0}}],
                      "apis": [{"name": "cuLaunchKernel", "calls": 9, "errors": 0, "total_ns": 5}],
                      "kernels": [{"name": k, "launches": v, "direct": v, "via_graph": 0, "captured": 0,
                                   "failed": 0, "open": 0} for k, v in obs["launches"].items()],
                      "device": dev, "totals": {"entries": 99}}))
    sys.exit(0)
sys.exit("fake causeway: bad arguments")
EOF
chmod +x "$T/repo/.carry/causeway" "$T/bin/"*

run_level3() { # run_level3 NAME [ENV=VALUE...]: runs level3.sh, output in $T/NAME.*
  local name=$1
  shift
  mkdir -p "$T/out-$name"
  local rc=0
  (cd "$T/repo" && env PATH="$T/bin:$PATH" OUT="$T/out-$name" PYTHON="$T/bin/fakepy" TMPDIR="$T" \
    CUDA_HOME="$T/cuda" LEVEL3_BUDGET_S=300 "$@" \
    bash control-experiments/device/level3.sh > "$T/$name.stdout" 2> "$T/$name.stderr") || rc=$?
  echo "$rc" > "$T/$name.rc"
}

bad=0
check() { # check DESCRIPTION COMMAND...
  if "${@:2}"; then echo "ok   - $1"; else echo "FAIL - $1"; bad=1; fi
}
failed_list() { sed -n '/^FAILED/,$p' "$T/$1.stdout" | grep '^  - ' | sed 's/^  - //' || true; }

# ---- scenario A: planted failures ----------------------------------------
run_level3 a FAKE_PLANT=1 FAKE_L3_US=1.0
S=$T/a.stdout
check "A: exits 1" test "$(cat "$T/a.rc")" = 1
if ((REAL_CUPTI)); then check "A: cupti_count.so was really built" grep -q '^\[ok     \] build-cupti-count' "$S"; fi
check "A: spine-static passes" grep -Eq '^spine-static .* 43 .* 8/8 .* 0 .* 0 .* 50/50 .* 0 .* same +assoc=PASS durations=PASS clock=PASS => PASS$' "$S"
check "A: spine-perthread association fails" grep -Eq '^spine-perthread .*assoc=FAIL durations=PASS clock=PASS => FAIL$' "$S"
check "A: torch clock fails" grep -Eq '^torch .*assoc=PASS durations=PASS clock=FAIL => FAIL$' "$S"
check "A: the short kernel is flagged ok-abs" grep -Eq '_ZN5spine12graph_stage3EPji +5 +2.60us +5 +1.50us +1.10us +\+73.3% +ok-abs' "$S"
check "A: durations table spine-static 7 ok 1 ok-abs" grep -Eq '^spine-static +7 +1 +0 +0 +- +- +- +- +2345$' "$S"
check "A: torch matched all 3 profiler names (demangled)" grep -Eq '^torch +3 +0 +0 +0 +3 +0 +0 +0 +-150$' "$S"
check "A: mismatch names the graph kernel" grep -q 'mismatch: graph_stage1: cupti=5 causeway=0' "$S"
check "A: clock problem printed" grep -q 'problem: 2 device intervals start before their issuing call (want 0)' "$S"
check "A: perf table: level 3 added 1.000" grep -Eq '^causeway level 3 \(cupti\) +5 +7.020 +7.020 +7.020 +1.000 +1.000 +1.000$' "$S"
check "A: ratio 9.00, target met" grep -q '= 9.00$' "$S"
check "A: target MET line" grep -q 'torch.profiler: MET' "$S"
check "A: level 3 perf run verified" grep -q 'level 3 run recorded: device intervals=103001 (want >= 103000) unassociated=0 device_dropped=0: yes' "$S"
check "A: level 2 perf run verified" grep -q 'level 2 run recorded: kernel launches=103001 (want >= 103000) dropped entries=0: yes' "$S"
check "A: exit code passes through" grep -q 'exit code 3 passes through causeway record --level 3: yes' "$S"
check "A: host-count note" grep -q 'note: torch: host launch counts at level 3 vs CUPTI: PASS (55/55)' "$S"
check "A: only the planted failures" test "$(failed_list a | sort | tr '\n' '|')" = \
  "spine-perthread: association (device intervals vs CUPTI) FAIL|torch: clock (causality) FAIL|"
check "A: OUT holds the 3 files" test "$(find "$T/out-a" -mindepth 1 -printf '%f\n' | sort | tr '\n' ' ')" = \
  "level3-artifacts.tar.gz level3-summary.md level3.log "
check "A: artifacts hold JSONs, captures, text reports" bash -c "tar -tzf '$T/out-a/level3-artifacts.tar.gz' > '$T/a.tar'; grep -q 'torch.causeway.json' '$T/a.tar' && grep -q 'torch.cupti.json' '$T/a.tar' && grep -q 'torch.profiler-durations.json' '$T/a.tar' && grep -q 'spine-static.capture.tar.gz' '$T/a.tar' && grep -q 'perf-level3.causeway.json' '$T/a.tar' && grep -q 'torch.causeway-report.txt' '$T/a.tar'"
check "A: summary.md has the tables" bash -c "grep -q '### torch: p50 device time per kernel' '$T/out-a/level3-summary.md' && grep -q '### performance: tiny-kernel loop' '$T/out-a/level3-summary.md'"
check "A: perf captures removed (round 1 after its report)" bash -c "! ls -d '$T'/causeway-level3.*/cap-perf-* 2> /dev/null | grep -q ."
check "A: nothing on stderr" test ! -s "$T/a.stderr"

# ---- scenario B: nothing planted -----------------------------------------
run_level3 b FAKE_PLANT=0 FAKE_L3_US=1.0 PERF_ROUNDS=2
check "B: exits 0" test "$(cat "$T/b.rc")" = 0
check "B: ALL PASSED" grep -q '^ALL PASSED$' "$T/b.stdout"
check "B: 2 perf rounds" grep -Eq '^bare +2 ' "$T/b.stdout"

# ---- scenario C: level 3 too expensive ------------------------------------
run_level3 c FAKE_PLANT=0 FAKE_L3_US=3.0 PERF_ROUNDS=2
check "C: exits 1" test "$(cat "$T/c.rc")" = 1
check "C: ratio 3.00, target MISSED" grep -q 'torch.profiler: MISSED' "$T/c.stdout"
check "C: the only failure is the target" test "$(failed_list c | tr '\n' '|')" = \
  "performance target missed: (profiler added)/(level 3 added) = 3.00, want >= 5|"

if ((bad)) || [[ ${SHOW:-0} == 1 ]]; then
  for n in a b c; do
    echo "--- scenario $n stdout"; cat "$T/$n.stdout"; echo "--- scenario $n stderr"; cat "$T/$n.stderr"
  done
fi
if ((bad)); then
  echo "test_level3_fake: FAIL"
  exit 1
fi
echo "test_level3_fake: PASS"
