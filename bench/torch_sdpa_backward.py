#!/usr/bin/env python3
"""Times the backward pass of torch.nn.functional.scaled_dot_product_attention on
the CPU or a CUDA device (--device): the gradients by q, k and v of an output gradient d_out, the forward run
once beforehand and kept. Inputs are written by attnforge's backward benchmark as
raw f32 (with --bf16 or --f16, values that type holds, run in it), dense [B, H, L, D]: q.bin, k.bin, v.bin, d_out.bin. Writes result.json
and result.bin, dq, dk and dv one after another as raw f32. Timing as
torch_timing.py's."""
import argparse
import os

import numpy as np
import torch
import torch.nn.functional as F
from torch_timing import time_runs, write_error, write_result


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--shape", required=True, help="BxHxLqxLkxD")
    p.add_argument("--kv-heads", type=int, required=True)
    p.add_argument("--causal", action="store_true", help="a top-left causal mask")
    p.add_argument("--scale", type=float, required=True)
    p.add_argument("--bf16", action="store_true", help="run in bfloat16 (the inputs hold bf16 values)")
    p.add_argument("--f16", action="store_true", help="run in float16 (the inputs hold f16 values)")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--min-time", type=float, default=0.5)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    b, h, lq, lk, d = (int(x) for x in a.shape.split("x"))

    dtype = torch.bfloat16 if a.bf16 else torch.float16 if a.f16 else torch.float32
    cuda = a.device == "cuda"

    def load(name, heads, length):
        values = np.fromfile(os.path.join(a.dir, name), dtype=np.float32)
        return torch.from_numpy(values.reshape(b, heads, length, d).copy()).to(a.device, dtype)

    q = load("q.bin", h, lq).requires_grad_()
    k = load("k.bin", a.kv_heads, lk).requires_grad_()
    v = load("v.bin", a.kv_heads, lk).requires_grad_()
    d_out = load("d_out.bin", h, lq)
    try:
        out = F.scaled_dot_product_attention(q, k, v, is_causal=a.causal, scale=a.scale,
                                             enable_gqa=h != a.kv_heads)
    except Exception as error:  # noqa: BLE001: any failure is the peer's answer
        write_error(a.dir, str(error), "result.json")
        return

    def run():
        gradients = torch.autograd.grad(out, (q, k, v), d_out, retain_graph=True)
        if cuda:
            torch.cuda.synchronize()  # a run ends when its gradients are written
        return gradients

    gradients = run()
    timing = time_runs(run, a.min_time)
    write_result(a.dir, timing, torch.cat([g.flatten() for g in gradients]), torch.__version__)


if __name__ == "__main__":
    main()
