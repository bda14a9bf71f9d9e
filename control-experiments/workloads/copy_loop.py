#!/usr/bin/env python3
"""copy_loop.py: a copy-heavy step loop for measuring what a tracer costs per step.

Each step (one NVTX range "copy_step"): a pinned host buffer of MB MiB is copied to the device on a
copy stream while a bf16 matmul (DIM x DIM, MATMULS times) runs on a compute stream; the step ends
when both streams are done (the copy's event is waited for by the compute stream, then the host syncs
on the compute stream), and the copied data feed a small reduction so the copy cannot be skipped.

    copy_loop.py [--mb 64] [--dim 4096] [--matmuls 4] [--steps 40] [--reps 3]

Prints "result: copy_step_ms=<median step ms over all reps> copy_step_p90_ms=<...>", then
"result: maxrss_kb=<peak RSS>" and "checksum: sum=<value>" (the same in every run with the same options).
"""
import argparse
import resource
import statistics
import sys
import time

import torch


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=64)
    ap.add_argument("--dim", type=int, default=4096)
    ap.add_argument("--matmuls", type=int, default=4)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args(argv)
    if min(args.mb, args.dim, args.matmuls, args.steps, args.reps) <= 0:
        ap.error("all options must be positive")
    if not torch.cuda.is_available():
        print("copy_loop: CUDA is not available", file=sys.stderr)
        return 1
    n = args.mb * (1 << 20) // 4
    host = torch.arange(n, dtype=torch.float32).remainder_(1000.0).pin_memory()
    dst = torch.empty(n, device="cuda")
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(args.dim, args.dim, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(args.dim, args.dim, device="cuda", dtype=torch.bfloat16, generator=g)
    s_copy = torch.cuda.Stream()
    s_comp = torch.cuda.Stream()
    acc = torch.zeros((), device="cuda", dtype=torch.float64)
    step_ms = []
    for rep in range(args.reps + 1):  # rep 0 warms up
        for _ in range(args.steps):
            t0 = time.perf_counter()
            torch.cuda.nvtx.range_push("copy_step")
            with torch.cuda.stream(s_copy):
                dst.copy_(host, non_blocking=True)
                done = torch.cuda.Event()
                done.record(s_copy)
            with torch.cuda.stream(s_comp):
                c = a
                for _ in range(args.matmuls):
                    c = torch.mm(c, b).clamp_(-1, 1)
                s_comp.wait_event(done)
                acc += dst[:1024].double().sum() + c[0, 0].double()
            s_comp.synchronize()
            torch.cuda.nvtx.range_pop()
            t1 = time.perf_counter()
            if rep > 0:
                step_ms.append((t1 - t0) * 1e3)
    torch.cuda.synchronize()
    step_ms.sort()
    p90 = step_ms[min(len(step_ms) - 1, int(0.9 * len(step_ms)))]
    print(f"result: copy_step_ms={statistics.median(step_ms):.4f} copy_step_p90_ms={p90:.4f}")
    print(f"result: maxrss_kb={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}")
    print(f"checksum: sum={acc.item():.6e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
