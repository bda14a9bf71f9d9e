#!/usr/bin/env python3
"""decode_loop.py: a realistic token-decode loop for measuring what a tracer costs per step.

A small decoder-only transformer with random weights (no download): LAYERS blocks of pre-norm
attention with a KV cache (torch's scaled_dot_product_attention) and a GELU MLP, bf16, vocabulary
VOCAB. For each batch size it fills the cache with a PROMPT-token prompt, then generates STEPS tokens
greedily, one NVTX range "decode_step" per token (torch.cuda.nvtx). Each step ends with the next
tokens read back to the host (`.tolist()`), as a server does to check for end-of-sequence: the step's
wall time is host launch work plus device work plus that wait.

    decode_loop.py [--batches 1,32] [--steps 64] [--reps 3] [--layers 8] [--dim 1024]

Prints per batch size one line
    result: decode_b<B>_ms=<median step ms over all reps> decode_b<B>_p90_ms=<...>
and last "result: maxrss_kb=<peak RSS>" and "checksum: tokens=<sum of generated ids mod 2^31>"
(the same for every run with the same options: the weights come from a fixed seed).
"""
import argparse
import resource
import statistics
import sys
import time

import torch
import torch.nn.functional as F


class Block(torch.nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.n1 = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim, bias=False)
        self.proj = torch.nn.Linear(dim, dim, bias=False)
        self.n2 = torch.nn.LayerNorm(dim)
        self.up = torch.nn.Linear(dim, 4 * dim, bias=False)
        self.down = torch.nn.Linear(4 * dim, dim, bias=False)

    def forward(self, x, cache, pos):
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.n1(x)).view(b, t, 3, h, d // h).permute(2, 0, 3, 1, 4)
        kc, vc = cache
        kc[:, :, pos:pos + t] = k
        vc[:, :, pos:pos + t] = v
        a = F.scaled_dot_product_attention(q, kc[:, :, :pos + t], vc[:, :, :pos + t],
                                           is_causal=t > 1)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.down(F.gelu(self.up(self.n2(x))))


class Model(torch.nn.Module):
    def __init__(self, vocab, dim, heads, layers):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        self.blocks = torch.nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.norm = torch.nn.LayerNorm(dim)
        self.head = torch.nn.Linear(dim, vocab, bias=False)

    def forward(self, ids, caches, pos):
        x = self.emb(ids)
        for blk, c in zip(self.blocks, caches):
            x = blk(x, c, pos)
        return self.head(self.norm(x[:, -1]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--steps", type=int, default=64, help="generated tokens per rep")
    ap.add_argument("--prompt", type=int, default=32)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--vocab", type=int, default=32000)
    args = ap.parse_args(argv)
    batches = [int(b) for b in args.batches.split(",") if b]
    if not batches or min(batches) <= 0 or args.steps <= 0 or args.reps <= 0:
        ap.error("--batches, --steps and --reps must be positive")
    if not torch.cuda.is_available():
        print("decode_loop: CUDA is not available", file=sys.stderr)
        return 1
    torch.manual_seed(0)
    dev = "cuda"
    dt = torch.bfloat16
    model = Model(args.vocab, args.dim, args.heads, args.layers).to(dev, dt).eval()
    ctx = args.prompt + args.steps
    total = 0
    with torch.inference_mode():
        for b in batches:
            hd = args.dim // args.heads
            caches = [(torch.zeros(b, args.heads, ctx, hd, device=dev, dtype=dt),
                       torch.zeros(b, args.heads, ctx, hd, device=dev, dtype=dt))
                      for _ in range(args.layers)]
            gen = torch.Generator(device=dev).manual_seed(1)
            step_ms = []
            for rep in range(args.reps + 1):  # rep 0 warms up (allocator, cuBLAS handles)
                ids = torch.randint(0, args.vocab, (b, args.prompt), device=dev, generator=gen)
                nxt = model(ids, caches, 0).argmax(-1, keepdim=True)
                torch.cuda.synchronize()
                for s in range(args.steps):
                    t0 = time.perf_counter()
                    torch.cuda.nvtx.range_push("decode_step")
                    logits = model(nxt, caches, args.prompt + s)
                    nxt = logits.argmax(-1, keepdim=True)
                    toks = nxt.view(-1).tolist()
                    torch.cuda.nvtx.range_pop()
                    t1 = time.perf_counter()
                    if rep > 0:
                        step_ms.append((t1 - t0) * 1e3)
                        total = (total + sum(toks)) % (1 << 31)
            step_ms.sort()
            p90 = step_ms[min(len(step_ms) - 1, int(0.9 * len(step_ms)))]
            print(f"result: decode_b{b}_ms={statistics.median(step_ms):.4f} "
                  f"decode_b{b}_p90_ms={p90:.4f}", flush=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"result: maxrss_kb={rss}")
    print(f"checksum: tokens={total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
