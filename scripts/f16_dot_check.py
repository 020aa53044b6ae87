#!/usr/bin/env python3
"""Whether f16 attention can use f16 dot products on x86 under Halide 21.

Two checks, both without the CPU that has the instructions:
1. Instructions: compiles a 128-long f16 dot product, accumulated in f32 and
   in f16, for each x86 target Halide 21 knows with f16 arithmetic, and lists
   the f16 instructions LLVM chose (an f16 dot product into f32, vdpphps, would
   appear here).
2. Accuracy: attention from f16 inputs against a double reference, computed
   as attnforge does it (f32 accumulation) and as f16 multiply-adds would
   (q.k and P.V accumulated in f16 per vector lane), against the f16 test
   tolerance (tests/support/attention_case.cpp: atol 1e-3, rtol 1e-3).

usage: f16_dot_check.py  (prints a report; exits 1 where a claim docs/performance.md
makes from it fails: an f32-accumulated dot product uses f16 instructions
other than conversions, or the f32 path misses the f16 tolerance)
"""
import os
import re
import sys
import tempfile

import halide as hl
import numpy as np

TARGETS = (
    "x86-64-linux-avx512_zen4-no_runtime",
    "x86-64-linux-avx512_sapphirerapids-no_runtime",
    "x86-64-linux-avx512_sapphirerapids-avx10_1-vector_bits_512-no_runtime",
)
ATOL = RTOL = 1e-3
LANES = 32  # f16 lanes of a 512-bit vector


def f16_instructions(accumulate, target, workdir):
    a = hl.ImageParam(hl.Float(16), 2, "a")
    b = hl.ImageParam(hl.Float(16), 2, "b")
    x, y = hl.Var("x"), hl.Var("y")
    r = hl.RDom([(0, 128)])
    dot = hl.Func("dot")
    if accumulate == "f32":
        dot[x, y] = hl.f32(0)
        dot[x, y] += hl.f32(a[r.x, y]) * hl.f32(b[r.x, x])
    else:
        dot[x, y] = hl.cast(hl.Float(16), 0)
        dot[x, y] += a[r.x, y] * b[r.x, x]
    dot.update().atomic().vectorize(r.x, LANES)
    path = os.path.join(workdir, "dot.s")
    dot.compile_to_assembly(path, [a, b], hl.Target(target))
    found = re.findall(r"\b(v\w*ph\b|v\w*ph[sx]\w*|vdp\w+|vcvt\w*ph\w*)", open(path).read())
    return sorted(set(found))


def attention(q, k, v, accumulate):
    """One head: q [Lq, D], k and v [Lk, D], f16 values; returns f64 [Lq, D]."""
    scale = 1.0 / np.sqrt(q.shape[1])
    if accumulate == "f64":
        s = (q.astype(np.float64) @ k.astype(np.float64).T) * scale
        p = np.exp(s - s.max(axis=1, keepdims=True))
        return (p @ v.astype(np.float64)) / p.sum(axis=1, keepdims=True)
    if accumulate == "f32":
        s = (q.astype(np.float32) @ k.astype(np.float32).T) * np.float32(scale)
        p = np.exp(s - s.max(axis=1, keepdims=True))
        out = (p @ v.astype(np.float32)) / p.sum(axis=1, keepdims=True)
        return out.astype(np.float16).astype(np.float64)
    # f16 multiply-adds: q.k per lane over head-dim chunks, lanes summed in
    # f16; P rounded to f16; P.V per output element over the keys in f16.
    qs = (q.astype(np.float32) * np.float32(scale)).astype(np.float16)
    D = q.shape[1]
    lanes = min(LANES, D)
    partial = np.zeros((q.shape[0], k.shape[0], lanes), np.float16)
    for c in range(0, D, lanes):
        partial = (partial + qs[:, None, c:c + lanes] * k[None, :, c:c + lanes]).astype(np.float16)
    s = partial.astype(np.float16).sum(axis=2, dtype=np.float16).astype(np.float32)
    p32 = np.exp(s - s.max(axis=1, keepdims=True))
    p = p32.astype(np.float16)
    acc = np.zeros((q.shape[0], D), np.float16)
    for j in range(k.shape[0]):
        acc = (acc + p[:, j:j + 1] * v[j:j + 1, :]).astype(np.float16)
    out = acc.astype(np.float32) / p32.sum(axis=1, keepdims=True)
    return out.astype(np.float16).astype(np.float64)


def main():
    print("1. f16 instructions LLVM emits for a 128-long f16 dot product (Halide %s)" %
          getattr(hl, "__version__", "21"))
    failures = []
    with tempfile.TemporaryDirectory() as workdir:
        for target in TARGETS:
            for accumulate in ("f32", "f16"):
                try:
                    found = f16_instructions(accumulate, target, workdir)
                except Exception as error:  # a target this Halide rejects
                    found = ["error: %s" % str(error).strip().splitlines()[-1]]
                print("  %-72s accumulate %s: %s" % (target, accumulate, " ".join(found) or "-"))
                if accumulate == "f32" and any(not i.startswith("vcvt") for i in found):
                    failures.append("f32 accumulation on %s uses %s" % (target, found))
    print("\n2. Max |error| against the double reference, inputs uniform in [-1, 1], one head")
    print("  %-16s %-22s %-22s" % ("Lq x Lk x D", "f32 accumulation", "f16 multiply-adds"))
    rng = np.random.default_rng(7)
    for Lq, Lk, D in ((16, 130, 64), (16, 2048, 64), (16, 2048, 128), (4, 8192, 128)):
        q, k, v = (rng.uniform(-1, 1, (n, D)).astype(np.float16) for n in (Lq, Lk, Lk))
        ref = attention(q, k, v, "f64")
        cells = []
        for accumulate in ("f32", "f16"):
            error = np.abs(attention(q, k, v, accumulate) - ref)
            within = bool(np.all(error <= ATOL + RTOL * np.abs(ref)))
            cells.append("%.2e (%s)" % (error.max(), "within" if within else "outside"))
            if accumulate == "f32" and not within:
                failures.append("f32 accumulation outside the tolerance at %dx%dx%d" % (Lq, Lk, D))
        print("  %-16s %-22s %-22s" % ("%dx%dx%d" % (Lq, Lk, D), cells[0], cells[1]))
    for failure in failures:
        print("FAILED: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
