#!/usr/bin/env python3
"""tiny_loop.py: per-op cost of a tracer on the smallest PyTorch kernel launch.

    a = torch.zeros(256, device="cuda")
    for _ in range(N): a.add_(1.0)

A 256-element in-place add runs on the GPU in about a microsecond, so the loop
is bound by the host's launch path, and whatever a tracer adds per launch shows
up in full. Each repetition: WARMUP ops, torch.cuda.synchronize(), then N ops
timed (time.perf_counter) up to and including a final synchronize; µs/op =
elapsed / N. Repeated --reps times in one process (after --warmup ops once).

Modes:
  tiny_loop.py [--n 20000] [--reps 5] [--warmup 2000]
      bare (or under whatever tracer runs the process: LD_PRELOAD, causeway record)
  tiny_loop.py --profile [same options]
      each repetition (its warm-up ops and the timed loop) inside
      torch.profiler.profile(activities=[CPU, CUDA]); the trace is not exported,
      and leaving the profile context (where the profiler collects its events)
      is outside the timed part.

Prints one "rep <i>: <x> us/op" line per repetition, then
    tiny_loop: mode=<bare|profiler> n=<N> reps=<R> min=<x> median=<x> max=<x> us/op
then "result: tiny_us_per_op=<median>" and "result: maxrss_kb=<peak RSS>" (for costs.sh), and last a
"checksum: a0=<value> ops=<count>" line (every element of `a` must
equal the number of adds: exact in float32 below 2**24).
"""
import argparse
import statistics
import sys
import time

import torch


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20000, help="ops per timed repetition")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2000, help="ops once before the first rep")
    ap.add_argument("--rep-warmup", type=int, default=200,
                    help="ops before each rep (inside the profile context with --profile)")
    ap.add_argument("--profile", action="store_true",
                    help="run each repetition inside torch.profiler (CPU+CUDA)")
    ap.add_argument("--device", default="cuda", help=argparse.SUPPRESS)  # cpu: tests only
    args = ap.parse_args(argv)
    if args.n <= 0 or args.reps <= 0 or args.warmup < 0 or args.rep_warmup < 0:
        ap.error("--n and --reps must be > 0, warm-ups >= 0")
    cuda = args.device.startswith("cuda")
    if cuda and not torch.cuda.is_available():
        print("tiny_loop: CUDA is not available", file=sys.stderr)
        return 1

    def sync():
        if cuda:
            torch.cuda.synchronize()

    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])

        def context():
            return profile(activities=acts)
    else:
        import contextlib

        context = contextlib.nullcontext

    a = torch.zeros(256, device=args.device)
    ops = 0
    for _ in range(args.warmup):
        a.add_(1.0)
    ops += args.warmup
    sync()

    per_op = []
    for r in range(args.reps):
        with context():
            for _ in range(args.rep_warmup):
                a.add_(1.0)
            sync()
            t0 = time.perf_counter()
            for _ in range(args.n):
                a.add_(1.0)
            sync()
            t1 = time.perf_counter()
        ops += args.rep_warmup + args.n
        us = (t1 - t0) * 1e6 / args.n
        per_op.append(us)
        print(f"rep {r}: {us:.3f} us/op", flush=True)

    mode = "profiler" if args.profile else "bare"
    print(f"tiny_loop: mode={mode} n={args.n} reps={args.reps} min={min(per_op):.3f} "
          f"median={statistics.median(per_op):.3f} max={max(per_op):.3f} us/op")
    print(f"result: tiny_us_per_op={statistics.median(per_op):.4f}")
    import resource
    print(f"result: maxrss_kb={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}")
    a0 = a[0].item()
    ok = bool((a == float(ops)).all().item())
    print(f"checksum: a0={a0!r} ops={ops} {'exact' if ok else 'WRONG'}")
    sys.stdout.flush()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
