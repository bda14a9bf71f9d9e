#!/usr/bin/env python3
"""torch_spine.py: the PyTorch control workload for causeway's GPU proof.

One fixed, deterministic workload that touches the launch paths a tracer of
PyTorch programs has to see:

  * cuBLAS GEMMs (torch.matmul, 1024x1024, fp16 and bf16),
  * elementwise kernels (add, mul, relu) and reductions,
  * a Triton kernel (@triton.jit vector add, launched through its grid),
  * a CUDA graph (torch.cuda.CUDAGraph capturing matmul+relu+add) and
    --replays replays of it,
  * a pinned host-to-device copy (pin_memory().to('cuda', non_blocking=True)),
  * NVTX ranges, one "step" range per step.

Every count is fixed by the arguments (--warmup, --steps, --replays), and all
inputs are small integers, so every result is exact and the checksum line
printed at the end is bit-identical on every correct run (with or without a
tracer).

Modes:
  torch_spine.py [--steps N] [--replays N] [--warmup N]
      runs the workload, prints "checksum: ..." and exits 0.
  torch_spine.py --profile OUT.json [same options]
      runs the very same workload (warm-up included) inside torch.profiler
      (activities CPU+CUDA) and writes the device kernel launch counts per
      kernel name as JSON {name: count} (names as the profiler reports them,
      which are demangled). The counts are comparable with a CUPTI or causeway
      run of the plain mode, because the profiler is on from before the first
      CUDA call to after the final synchronize.
  torch_spine.py --profile-durations DUR.json [--profile OUT.json] [same options]
      the same profiled run; writes each kernel's device durations as JSON
      {name: {"count": n, "p50_ns": x, "mean_ns": x, "min_ns": x, "max_ns": x}}
      (from the same trace events as the counts: "dur" of the "kernel"
      events, microseconds in the trace, nanoseconds here; p50 is the lower
      median sorted[(n-1)//2], as in cupti_count.c). --profile, if given too,
      gets exactly the counts it gets alone.

If Triton is missing or fails on its first launch, the Triton kernel is left
out (the checksum line says triton=off), the same way on every run.
"""
import argparse
import collections
import json
import os
import sys
import tempfile

import torch

try:
    import triton
    import triton.language as tl
except Exception as exc:  # noqa: BLE001 - any import problem means "no Triton"
    triton = None
    TRITON_IMPORT_ERROR = repr(exc)
else:
    TRITON_IMPORT_ERROR = None

    @triton.jit
    def vadd_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(axis=0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, x + y, mask=mask)


N = 1024            # GEMM size
VEC = 1 << 20       # Triton vector length
H2D = 1 << 18       # pinned copy length (floats)
TRITON_BLOCK = 1024


class Workload:
    """All state of one run; run() is the whole GPU program."""

    def __init__(self, steps, replays, warmup):
        self.steps = steps
        self.replays = replays
        self.warmup = warmup
        self.triton_ok = triton is not None
        self.triton_note = TRITON_IMPORT_ERROR
        self.nvtx_ok = True
        self.mark_warmup = False

    # -- pieces ---------------------------------------------------------
    def nvtx_push(self, name):
        if self.nvtx_ok:
            try:
                torch.cuda.nvtx.range_push(name)
            except Exception as exc:  # noqa: BLE001
                self.nvtx_ok = False
                print(f"torch_spine: NVTX unavailable: {exc!r}", file=sys.stderr)

    def nvtx_pop(self):
        if self.nvtx_ok:
            torch.cuda.nvtx.range_pop()

    def triton_add(self, x, y):
        """out = x + y through the Triton kernel (or None without Triton)."""
        if not self.triton_ok:
            return None
        out = torch.empty_like(x)
        grid = (triton.cdiv(x.numel(), TRITON_BLOCK),)
        try:
            vadd_kernel[grid](x, y, out, x.numel(), BLOCK=TRITON_BLOCK)
        except Exception as exc:  # noqa: BLE001
            # Fails on the first call or never: same outcome on every run.
            self.triton_ok = False
            self.triton_note = repr(exc)
            print(f"torch_spine: Triton launch failed, leaving it out: {exc!r}",
                  file=sys.stderr)
            return None
        return out

    def step(self, name="step"):
        """One training-loop-like step: GEMMs, elementwise, Triton, H2D."""
        self.nvtx_push(name)
        c16 = torch.matmul(self.a16, self.b16)            # cuBLAS fp16
        cbf = torch.matmul(self.abf, self.bbf)            # cuBLAS bf16
        e = torch.mul(torch.relu(torch.add(c16, self.a16)), 0.5)  # add, relu, mul
        x = e.reshape(-1).float()
        t = self.triton_add(x, self.vy)
        h = self.host.to("cuda", non_blocking=True)       # pinned async H2D
        self.acc += e.double().sum()
        self.acc += cbf.double().sum()
        self.acc += h.double().sum()
        if t is not None:
            self.acc += t.double().sum()
        self.nvtx_pop()

    def graph_ops(self):
        return torch.add(torch.relu(torch.matmul(self.ga, self.gb)), 1.0)

    # -- the program ----------------------------------------------------
    def run(self):
        # Full-precision cuBLAS reductions: with them every GEMM result here is
        # exact (or rounded once), whatever order the partial sums come in.
        for flag in ("allow_fp16_reduced_precision_reduction",
                     "allow_bf16_reduced_precision_reduction"):
            try:
                setattr(torch.backends.cuda.matmul, flag, False)
            except (AttributeError, RuntimeError):
                pass
        torch.manual_seed(0)
        dev = "cuda"
        # Entries in {-1, 0, 1}: every product sum is an exact small integer.
        self.a16 = torch.randint(-1, 2, (N, N), device=dev).to(torch.float16)
        self.b16 = torch.randint(-1, 2, (N, N), device=dev).to(torch.float16)
        self.abf = self.a16.to(torch.bfloat16)
        self.bbf = self.b16.to(torch.bfloat16)
        self.vy = torch.randint(0, 5, (VEC,), device=dev).float()
        self.host = torch.arange(H2D, dtype=torch.float32).remainder(11).pin_memory()
        self.acc = torch.zeros((), dtype=torch.float64, device=dev)

        for _ in range(self.warmup):
            self.step("warmup" if self.mark_warmup else "step")
        for _ in range(self.steps):
            self.step()

        # CUDA graph: warm the captured ops up on a side stream (as the
        # PyTorch docs ask), capture them once, replay.
        self.ga = self.a16.clone()
        self.gb = self.b16.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                self.graph_ops()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            gout = self.graph_ops()
        for _ in range(self.replays):
            graph.replay()
            self.acc += gout.double().sum()

        torch.cuda.synchronize()
        return self.acc.item()


def kernel_counts_from_trace(path):
    """{kernel name: launches} from a chrome trace torch.profiler wrote."""
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    counts = collections.Counter()
    for ev in events:
        # Kernels are complete ("X") events of category "kernel"; flow arrows
        # to them have other categories.
        if isinstance(ev, dict) and ev.get("cat") == "kernel" and ev.get("ph", "X") == "X":
            counts[ev.get("name", "<unnamed>")] += 1
    return counts


def kernel_durations_from_trace(path):
    """{kernel name: {count, p50_ns, mean_ns, min_ns, max_ns}} from a chrome trace.

    The same events kernel_counts_from_trace counts; an event without a usable
    "dur" is left out of the durations (so count here can be lower)."""
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    durs = collections.defaultdict(list)
    for ev in events:
        if isinstance(ev, dict) and ev.get("cat") == "kernel" and ev.get("ph", "X") == "X":
            d = ev.get("dur")
            if isinstance(d, (int, float)) and not isinstance(d, bool) and d >= 0:
                durs[ev.get("name", "<unnamed>")].append(d * 1000.0)  # us -> ns
    out = {}
    for name, v in sorted(durs.items()):
        v.sort()
        out[name] = {"count": len(v), "p50_ns": round(v[(len(v) - 1) // 2], 1),
                     "mean_ns": round(sum(v) / len(v), 1), "min_ns": round(v[0], 1),
                     "max_ns": round(v[-1], 1)}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--replays", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--mark-warmup", action="store_true",
                    help='name the warm-up steps\' NVTX ranges "warmup" (default: "step")')
    ap.add_argument("--profile", metavar="OUT.json",
                    help="run under torch.profiler and write {kernel name: count}")
    ap.add_argument("--profile-durations", metavar="DUR.json",
                    help="run under torch.profiler and write each kernel's device durations")
    args = ap.parse_args()

    if not torch.cuda.is_available():
        print("torch_spine: CUDA is not available", file=sys.stderr)
        return 1

    w = Workload(args.steps, args.replays, args.warmup)
    w.mark_warmup = args.mark_warmup
    if args.profile or args.profile_durations:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            checksum = w.run()
        fd, trace_path = tempfile.mkstemp(suffix=".json", prefix="torch_spine_trace_")
        os.close(fd)
        try:
            prof.export_chrome_trace(trace_path)
            counts = kernel_counts_from_trace(trace_path)
            durations = kernel_durations_from_trace(trace_path) if args.profile_durations else None
        finally:
            os.unlink(trace_path)
        if args.profile:
            with open(args.profile, "w") as f:
                json.dump(dict(sorted(counts.items())), f, indent=1)
        if durations is not None:
            with open(args.profile_durations, "w") as f:
                json.dump(durations, f, indent=1)
        print(f"torch_spine: profiler saw {sum(counts.values())} kernel launches "
              f"of {len(counts)} kernels -> {args.profile or '-'}"
              f"{f', durations -> {args.profile_durations}' if durations is not None else ''}",
              file=sys.stderr)
    else:
        checksum = w.run()

    if w.triton_note and not w.triton_ok:
        print(f"torch_spine: triton off: {w.triton_note}", file=sys.stderr)
    print(f"checksum: {checksum!r} steps={args.steps} warmup={args.warmup} "
          f"replays={args.replays} triton={'ok' if w.triton_ok else 'off'} "
          f"nvtx={'ok' if w.nvtx_ok else 'off'}")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
