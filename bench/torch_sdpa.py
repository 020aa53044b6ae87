#!/usr/bin/env python3
"""Times torch.nn.functional.scaled_dot_product_attention on inputs written by
the attnforge benchmark (raw f32, dense [B, H, L, D]), checks its output
against the expected one, and writes result.json next to them. Timing: one
warm-up, then repeats until at least 3 runs and --min-time seconds, stopping
early once the best and third-best are within 3% (as the C++ benchmark)."""
import argparse
import os

import numpy as np
import torch
import torch.nn.functional as F

from torch_timing import time_runs, write_result


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--shape", required=True, help="BxHxLqxLkxD")
    p.add_argument("--kv-heads", type=int, required=True)
    p.add_argument("--mask", choices=["none", "causal_top_left", "causal_bottom_right"])
    p.add_argument("--scale", type=float, required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--min-time", type=float, default=0.5)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    b, h, lq, lk, d = (int(x) for x in a.shape.split("x"))

    def load(name, heads, length):
        data = np.fromfile(os.path.join(a.dir, name), dtype=np.float32)
        return torch.from_numpy(data.reshape(b, heads, length, d))

    q, k, v = load("q.bin", h, lq), load("k.bin", a.kv_heads, lk), load("v.bin", a.kv_heads, lk)
    expected = load("expected.bin", h, lq)
    mask, causal = None, a.mask == "causal_top_left"
    if a.mask == "causal_bottom_right":
        i = torch.arange(lq).unsqueeze(1)
        j = torch.arange(lk).unsqueeze(0)
        mask = j <= i + (lk - lq)  # True: attend
    gqa = a.kv_heads != h

    def run():
        with torch.no_grad():
            return F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, is_causal=causal, scale=a.scale, enable_gqa=gqa)

    out = run()
    diff = float((out - expected).abs().max())
    write_result(a.dir, time_runs(run, a.min_time), diff, torch.__version__)


if __name__ == "__main__":
    main()
