#!/usr/bin/env python3
"""Runs torch.nn.MultiheadAttention (batch_first, eval mode, no weights
returned) on a self-attention layer written by attnforge as raw f32 files:
x [B, L, d_model], w_qkv [d_model, 3 d_model] (y = x W), b_qkv, w_o
[d_model, d_model] and b_o. Unless --check-only, times it as torch_sdpa.py
does; writes result.json and its output [B, L, d_model] as result.bin next to
the inputs, for the benchmark to check as it checks its own."""
import argparse
import os

import numpy as np
import torch

from torch_timing import time_runs, write_result


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--shape", required=True, help="BxLxDMODEL")
    p.add_argument("--heads", type=int, required=True)
    p.add_argument("--mask", choices=["none", "causal"], required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--min-time", type=float, default=0.5)
    p.add_argument("--check-only", action="store_true")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    b, length, dm = (int(x) for x in a.shape.split("x"))

    def load(name, *shape):
        data = np.fromfile(os.path.join(a.dir, name), dtype=np.float32)
        return torch.from_numpy(data.reshape(*shape))

    x = load("x.bin", b, length, dm)
    mha = torch.nn.MultiheadAttention(dm, a.heads, bias=True, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(load("w_qkv.bin", dm, 3 * dm).t())
        mha.in_proj_bias.copy_(load("b_qkv.bin", 3 * dm))
        mha.out_proj.weight.copy_(load("w_o.bin", dm, dm).t())
        mha.out_proj.bias.copy_(load("b_o.bin", dm))
    mha.eval()
    mask = None
    if a.mask == "causal":
        mask = torch.nn.Transformer.generate_square_subsequent_mask(length)

    def run():
        with torch.inference_mode():
            return mha(x, x, x, need_weights=False, attn_mask=mask,
                       is_causal=mask is not None)[0]

    out = run()
    timing = {"ms_median": 0.0, "ms_min": 0.0, "ms_max": 0.0, "repeats": 0}
    if not a.check_only:
        timing = time_runs(run, a.min_time)
    write_result(a.dir, timing, out, torch.__version__)


if __name__ == "__main__":
    main()
