#!/usr/bin/env bash
# test_spine_fake.sh: CPU-only dry run of spine.sh, with every GPU piece faked.
#
# Checks the script's plumbing (steps, timeouts, parsing of the causeway
# capture line, reference JSONs, compare_counts, checksum and exit-code checks,
# bench statistics, demo tarball, summary and artifacts) on a machine without
# a GPU. Fakes: nvcc (writes a stand-in program), nvidia-smi, python3 for
# torch_spine.py, the causeway CLI and shim. The fake causeway loses the graph
# kernel executions of the per-thread spine_prog on purpose (it reports launch
# calls, as a tracer that does not expand graph replays would), so that must FAIL
# while the others PASS, and spine.sh must exit 1.
# The CUPTI reference library is really built (gcc) when CUDA_HOME has the
# CUPTI headers; otherwise that build fails and the rest still runs.
#
# Run: bash control-experiments/device/test_spine_fake.sh   (prints PASS/FAIL;
#      SHOW=1 also prints what spine.sh printed)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/spine-fake.XXXXXX")
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/repo/.carry" "$T/bin" "$T/out"
cp -r "$SRC/control-experiments" "$T/repo/"
REAL_PY=$(command -v python3)

# ---- the stand-in GPU programs -------------------------------------------
cat > "$T/bin/fakeprog.py" << 'EOF'
import json, os, sys
kind, args = sys.argv[1], sys.argv[2:]
SPINE = {"spine_fill": 1, "_Z15producer_kernelPjji": 10, "_Z15consumer_kernelPKjPji": 10,
         "_Z11axpy_kernelIjEvPT_PKS0_S0_i": 4, "_Z12scale_kernelPjji": 7, "graph_stage1": 5,
         "_ZN5spine12graph_stage3EPji": 5, "_Z13reduce_kernelPKjPyi": 1}
GRAPH = {"_Z12scale_kernelPjji": 5, "graph_stage1": 5, "_ZN5spine12graph_stage3EPji": 5}
CALLS = {k: v - GRAPH.get(k, 0) + (1 if k in GRAPH else 0) for k, v in SPINE.items()}
TORCH = {"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEE": 3,
         "nvjet_hsh_128x64_64x4_1x2_h_bz_coopB_NNN": 30, "vadd_kernel": 22}
counts = {"spine-legacy": SPINE, "spine-per-thread": SPINE, "torch": TORCH}.get(kind, {})
if os.environ.get("CUDA_INJECTION64_PATH") and os.environ.get("CUPTI_COUNT_OUT"):
    with open(os.environ["CUPTI_COUNT_OUT"], "w") as f:
        json.dump({"tool": "fake", "kernels": counts, "dropped": 0, "records": sum(counts.values())}, f)
cap = os.environ.get("FAKE_CAUSEWAY_DIR")
if cap:
    seen = dict(counts)
    if kind == "spine-per-thread":  # a tracer that counts launch calls, not graph executions
        seen = dict(CALLS)
    with open(os.path.join(cap, "counts.json"), "w") as f:
        json.dump(seen, f)
if kind.startswith("spine"):
    code = int(args[args.index("--exit-code") + 1]) if "--exit-code" in args else 0
    for k, v in SPINE.items():
        print(f"expected: {k} direct={v - GRAPH.get(k, 0)} graph={GRAPH.get(k, 0)}")
    print("funcname: cudaFuncGetName agrees on every kernel")
    print("expected_counts_json: " + json.dumps({"kernels": SPINE, "graph": GRAPH, "total": 43,
                                                 "api_calls": CALLS, "api_calls_total": 31}))
    print(f"checksum: sum=123 b_fnv=abc default_stream={kind[6:]}")
    sys.exit(code)
if kind == "query_bench":
    extra = 25.0 if "libcauseway" in os.environ.get("LD_PRELOAD", "") else 0.0
    for r in range(7):
        print(f"repeat {r}: {100.0 + extra + r:.2f} ns/call")
    sys.exit(0)
if kind == "torch":
    if "--profile" in args:
        demangled = {"void at::native::vectorized_elementwise_kernel<4, FillFunctor<float> >()": 3,
                     "nvjet_hsh_128x64_64x4_1x2_h_bz_coopB_NNN": 30, "vadd_kernel": 22}
        with open(args[args.index("--profile") + 1], "w") as f:
            json.dump(demangled, f)
    print("checksum: 4242.0 steps=20 warmup=2 replays=10 triton=ok nvtx=ok")
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
  query_bench.cu) kind=query_bench ;;
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
# python3 stand-in: torch_spine.py is faked, everything else is real python
case \${1:-} in
  *torch_spine.py) shift; exec "$REAL_PY" "$T/bin/fakeprog.py" torch "\$@" ;;
  -c) echo "torch 2.11.0+fake cuda 13.0 gpu NVIDIA H200"; exit 0 ;;
  *) exec "$REAL_PY" "\$@" ;;
esac
EOF

# ---- the fake causeway CLI and shim ---------------------------------------
cat > "$T/repo/.carry/causeway" << EOF
#!$REAL_PY
import json, os, subprocess, sys
a = sys.argv[1:]
if a[0] == "record":
    i = a.index("--")
    opts, cmd = a[1:i], a[i + 1:]
    out = opts[opts.index("--out") + 1]
    cap = os.path.join(out, "capture-0001")
    os.makedirs(cap)
    with open(os.path.join(cap, "ring.bin"), "wb") as f:
        f.write(b"\0" * 4096)
    rc = subprocess.call(cmd, env=dict(os.environ, FAKE_CAUSEWAY_DIR=cap))
    print(f"causeway: capture written to {cap}", file=sys.stderr)
    sys.exit(rc)
if a[0] == "report" and a[1] == "--json":
    try:
        with open(os.path.join(a[2], "counts.json")) as f:
            counts = json.load(f)
    except FileNotFoundError:  # e.g. the bench's LD_PRELOAD runs
        counts = {}
    print(json.dumps({"processes": [{"pid": 1, "entries": 99, "dropped": 0, "torn": 0}],
                      "apis": [{"name": "cuLaunchKernel", "calls": 9, "errors": 0, "total_ns": 5}],
                      "kernels": [{"name": k, "launches": v} for k, v in counts.items()],
                      "ranges": [{"name": "step", "domain": None, "count": 22, "open": 0}]}))
    sys.exit(0)
sys.exit("fake causeway: bad arguments")
EOF
chmod +x "$T/repo/.carry/causeway" "$T/bin/"*
echo 'int causeway_fake;' > "$T/shim.c"
gcc -shared -fPIC -o "$T/repo/.carry/libcauseway.so" "$T/shim.c"

# ---- run spine.sh ----------------------------------------------------------
rc=0
(cd "$T/repo" && PATH="$T/bin:$PATH" OUT="$T/out" PYTHON="$T/bin/fakepy" \
  CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}" SPINE_BUDGET_S=300 \
  bash control-experiments/device/spine.sh > "$T/stdout" 2> "$T/stderr") || rc=$?

bad=0
check() { # check DESCRIPTION COMMAND...
  if "${@:2}"; then echo "ok   - $1"; else echo "FAIL - $1"; bad=1; fi
}
check "spine.sh exits 1 (one workload fails on purpose)" test "$rc" = 1
check "spine-static passes" grep -Eq '^spine-static .* PASS$' "$T/stdout"
check "spine-perthread fails" grep -Eq '^spine-perthread .* FAIL$' "$T/stdout"
check "torch passes, with the profiler total" grep -Eq '^torch .* PASS \(torch.profiler total 55\)$' "$T/stdout"
check "the mismatch names the graph kernels" grep -q 'graph_stage1: .*expected=5 causeway=1  \[5 of the expected launches are CUDA graph nodes\]' "$T/stdout"
check "the mismatch is explained as graph replays" grep -q "note: causeway's counts equal the program's launch API calls" "$T/stdout"
check "NVTX ranges are checked" grep -q "nvtx 'step' ranges in the torch capture: yes: 22 complete, 0 open (want 22)" "$T/stdout"
check "exit code passes through" grep -q 'exit code 3 passes through causeway record: yes' "$T/stdout"
check "bench reports 25 ns added" grep -q 'bench: added ns per cudaStreamQuery at level 4: min=25.0 median=25.0 max=25.0' "$T/stdout"
check "only the planted failure (+ CUPTI build if no headers)" \
  bash -c "sed -n '/^FAILED/,\$p' '$T/stdout' | grep '^  - ' | grep -v 'cupti_count\|CUPTI' | grep -vc 'spine-perthread: kernel counts differ' | grep -qx 0"
check "OUT holds the 4 files" test "$(find "$T/out" -mindepth 1 -printf '%f\n' | sort | tr '\n' ' ')" = "artifacts.tar.gz demo-capture.tar.gz spine.log summary.md "
check "demo tarball holds the capture and its report" \
  bash -c "tar -tzf '$T/out/demo-capture.tar.gz' | grep -q 'capture-0001/ring.bin' && tar -tzf '$T/out/demo-capture.tar.gz' | grep -qx 'demo.causeway.json'"
check "artifacts hold the JSONs" bash -c "tar -tzf '$T/out/artifacts.tar.gz' | grep -q 'torch.causeway.json'"
check "summary.md has the tables" grep -q '### torch: kernel launches per name' "$T/out/summary.md"
check "nothing on stderr" test ! -s "$T/stderr"
if ((bad)) || [[ ${SHOW:-0} == 1 ]]; then
  echo "--- stdout"; cat "$T/stdout"; echo "--- stderr"; cat "$T/stderr"
fi
if ((bad)); then
  echo "test_spine_fake: FAIL"
  exit 1
fi
echo "test_spine_fake: PASS"
