#!/usr/bin/env python3
"""Training's step through torch.autograd: the forward and the backward of
attnforge.torch.attention against torch.nn.functional.scaled_dot_product_attention,
in one process on the same inputs, timed in turns (median of each), with the
gradients of each checked against the other's first. Run with PYTHONPATH=<an
emitted package>/python whose --backward specs hold the masks asked for
(scripts/bench-autograd does both)."""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F

import attnforge
import attnforge.torch as aft


def step(attention, q, k, v, d_out):
    for t in (q, k, v):
        t.grad = None
    attention(q, k, v).backward(d_out)
    return [t.grad for t in (q, k, v)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shape", default="1x8x2048x2048x64", help="BxHxLqxLkxD")
    p.add_argument("--masks", default="none,causal")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--turns", type=int, default=7)
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    p.add_argument("--json", help="write the rows here too")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    attnforge.set_num_threads(a.threads)
    b, h, lq, lk, d = (int(x) for x in a.shape.split("x"))
    dtype = getattr(torch, a.dtype)
    torch.manual_seed(0)
    q = (torch.rand(b, h, lq, d) - 0.5).to(dtype).requires_grad_()
    k, v = ((torch.rand(b, h, lk, d) - 0.5).to(dtype).requires_grad_() for _ in range(2))
    d_out = (torch.rand(b, h, lq, d) - 0.5).to(dtype)
    flops = 3.5 * 4 * b * h * lq * lk * d  # forward + 2.5x forward
    rows = []
    print(f"torch {torch.__version__}, {a.threads} threads, B{b} H{h} Lq{lq} Lk{lk} D{d} "
          f"{a.dtype}")
    # The gradients agree within the dtype's rounding.
    tolerance = dict(atol=1e-4, rtol=1e-3) if dtype == torch.float32 else dict(atol=2e-2, rtol=5e-2)
    print(f"{'mask':8} {'attnforge ms':>13} {'torch SDPA ms':>14} {'speedup':>8} {'GFLOP/s':>9}")
    for mask in a.masks.split(","):
        causal = mask == "causal"
        ours = lambda q, k, v: aft.attention(q, k, v, mask=mask)  # noqa: E731
        peer = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # noqa
        for got, expected in zip(step(ours, q, k, v, d_out), step(peer, q, k, v, d_out)):
            torch.testing.assert_close(got, expected, **tolerance)
        times = {"attnforge": [], "torch": []}
        for _ in range(a.turns):
            for name, attention in (("attnforge", ours), ("torch", peer)):
                start = time.perf_counter()
                step(attention, q, k, v, d_out)
                times[name].append((time.perf_counter() - start) * 1e3)
        ours_ms, peer_ms = (statistics.median(times[n]) for n in ("attnforge", "torch"))
        rate = flops / (2 if causal else 1) / ours_ms / 1e6
        print(f"{mask:8} {ours_ms:13.1f} {peer_ms:14.1f} {peer_ms / ours_ms:7.2f}x {rate:9.1f}")
        rows.append({"mask": mask, "attnforge_ms": ours_ms, "torch_ms": peer_ms,
                     "speedup": peer_ms / ours_ms, "times": times})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"shape": a.shape, "threads": a.threads, "dtype": a.dtype,
                       "torch": torch.__version__,
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
