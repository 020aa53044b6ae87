"""The attnforge Python module over the runtime test package: numpy calls
against a float64 reference written here (not the kernels' algorithm: whole
score matrices, masks by position), in-place outputs, strided layouts,
errors as exceptions with nothing written, no leaks, the GIL released while a
kernel runs; with torch installed, zero-copy tensors against
F.scaled_dot_product_attention and nn.MultiheadAttention.
Run with PYTHONPATH=<package>/python."""
import sys
import threading
import time
import unittest

import numpy as np

import attnforge
from attnforge.key_positions import aligned_offset

try:
    import torch
except ImportError:
    torch = None


def reference(q, k, v, mask="none", alignment="top_left", window=(0, 0), key_lengths=None,
              bias=None, alibi_slopes=None, scale=None, softcap=None, rule=None, with_lse=False):
    """(out, weights) in float64, and with_lse each row's log-sum-exp [B, H, Lq] (+inf for
    a row that sees no key). q [B, H, Lq, D], k and v [B, H_kv, Lk, D]; rule: a
    modifier's mask rule, bool [B, 1 or H, Lq, Lk]."""
    q, k, v = (np.asarray(t, dtype=np.float64) for t in (q, k, v))
    batch, heads, q_len, dim = q.shape
    kv_len = k.shape[2]
    group = heads // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scale = 1.0 / np.sqrt(dim) if scale is None else scale
    logits = np.einsum("bhid,bhjd->bhij", q, k) * scale
    if softcap is not None:
        logits = np.tanh(logits / softcap) * softcap
    # Query i sits at key i, or bottom-right at i + (the batch's key count) - Lq.
    valid = np.full(batch, kv_len) if key_lengths is None else np.asarray(key_lengths)
    offset = aligned_offset(alignment, valid, q_len)
    position = (np.arange(q_len)[None, :] + offset[:, None])[:, None, :, None]
    key = np.arange(kv_len)[None, None, None, :]
    keep = np.ones((batch, 1, q_len, kv_len), dtype=bool)
    if mask == "causal":
        keep &= key <= position
    if mask == "sliding_window":
        keep &= (key >= position - window[0]) & (key <= position + window[1])
    if key_lengths is not None:
        keep &= key < valid[:, None, None, None]
    if rule is not None:
        keep = keep & rule
    if bias is not None:
        logits = logits + np.asarray(bias, dtype=np.float64)
    if alibi_slopes is not None:
        logits = logits - np.asarray(alibi_slopes, dtype=np.float64)[None, :, None, None] * np.abs(
            key - position)
    logits = np.where(keep, logits, -np.inf)
    peak = np.max(logits, axis=-1, keepdims=True)
    exp = np.where(keep, np.exp(logits - np.where(np.isfinite(peak), peak, 0.0)), 0.0)
    total = exp.sum(axis=-1, keepdims=True)
    weights = np.divide(exp, total, out=np.zeros_like(exp), where=total > 0)
    out = np.einsum("bhij,bhjd->bhid", weights, v)
    if not with_lse:
        return out, weights
    seen = total[..., 0] > 0
    lse = np.where(seen, np.log(np.where(seen, total[..., 0], 1.0)) + np.where(seen, peak[..., 0], 0.0),
                   np.inf)
    return out, weights, lse


def gradient_reference(q, k, v, d_out, scale=None, **mask):
    """(dq, dk, dv) in float64 from the definitions, P the reference's weights:
    dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(P dP)), dQ = scale dS K,
    dK = scale dS^T Q, dK and dV summed over each KV head's query heads."""
    q64, k64, v64, grad = (np.asarray(t, dtype=np.float64) for t in (q, k, v, d_out))
    batch, heads, _, dim = q64.shape
    kv_heads, kv_len = k64.shape[1], k64.shape[2]
    group = heads // kv_heads
    _, p = reference(q, k, v, scale=scale, **mask)
    scale = 1.0 / np.sqrt(dim) if scale is None else scale
    k_rows, v_rows = np.repeat(k64, group, axis=1), np.repeat(v64, group, axis=1)
    dv = np.einsum("bhij,bhid->bhjd", p, grad)
    dp = np.einsum("bhid,bhjd->bhij", grad, v_rows)
    ds = p * (dp - (p * dp).sum(axis=-1, keepdims=True))  # also dBias
    dq = scale * np.einsum("bhij,bhjd->bhid", ds, k_rows)
    dk = scale * np.einsum("bhij,bhid->bhjd", ds, q64)
    per_kv_head = (batch, kv_heads, group, kv_len, dim)
    return dq, dk.reshape(per_kv_head).sum(axis=2), dv.reshape(per_kv_head).sum(axis=2), ds


def layer_reference(x, w_qkv, b_qkv, w_o, b_o, heads, **mask):
    """Self-attention layer in float64: x @ W + b, attention per head, output projection."""
    x = np.asarray(x, dtype=np.float64)
    batch, length, d_model = x.shape
    dim = d_model // heads
    qkv = x @ w_qkv + b_qkv
    split = [qkv[..., n * d_model:(n + 1) * d_model].reshape(batch, length, heads, dim)
             .transpose(0, 2, 1, 3) for n in range(3)]
    out, _ = reference(*split, **mask)
    return out.transpose(0, 2, 1, 3).reshape(batch, length, d_model) @ w_o + b_o


def random(rng, shape, dtype=np.float32, scale=1.0):
    return (rng.uniform(-scale, scale, size=shape)).astype(dtype)


class Attention(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(3)

    def qkv(self, batch, heads, kv_heads, q_len, kv_len, dim, dtype=np.float32):
        return (random(self.rng, (batch, heads, q_len, dim), dtype),
                random(self.rng, (batch, kv_heads, kv_len, dim), dtype),
                random(self.rng, (batch, kv_heads, kv_len, dim), dtype))

    def test_causal_gqa_matches_the_reference_on_odd_sizes(self):
        for batch, q_len, kv_len in ((1, 1, 1), (2, 7, 33), (3, 65, 40)):
            q, k, v = self.qkv(batch, 8, 2, q_len, kv_len, 64)
            out = attnforge.attention(q, k, v, mask="causal")
            expected, _ = reference(q, k, v, mask="causal")
            np.testing.assert_allclose(out, expected, atol=2e-5, rtol=2e-5)

    def test_mask_and_alignment_names_take_the_runtimes_codes(self):
        # The codes come from the C++ enums through the extension; the tests
        # above run each name against the reference.
        self.assertEqual(set(attnforge._MASKS), {"none", "causal", "sliding_window"})
        self.assertEqual(set(attnforge._ALIGNMENTS), {"top_left", "bottom_right"})
        self.assertEqual(len(set(attnforge._MASKS.values())), 3)

    def test_window_key_padding_in_f16(self):
        q, k, v = self.qkv(2, 2, 2, 9, 30, 32, np.float16)
        lengths = np.array([30, 11], dtype=np.int32)
        out = attnforge.attention(q, k, v, mask="sliding_window", window=(8, 4),
                                  alignment="bottom_right", key_lengths=lengths)
        self.assertEqual(out.dtype, np.float16)
        expected, _ = reference(q, k, v, "sliding_window", "bottom_right", (8, 4), lengths)
        np.testing.assert_allclose(out.astype(np.float64), expected, atol=3e-3, rtol=3e-3)

    def test_any_window_runs_the_kernel_taking_it_per_call(self):
        q, k, v = self.qkv(2, 2, 2, 9, 30, 32, np.float16)
        lengths = np.array([30, 11], dtype=np.int32)
        for window in ((0, 0), (5, 2), (17, 0)):
            out = attnforge.attention(q, k, v, mask="sliding_window", window=window,
                                      alignment="bottom_right", key_lengths=lengths)
            expected, _ = reference(q, k, v, "sliding_window", "bottom_right", window, lengths)
            np.testing.assert_allclose(out.astype(np.float64), expected, atol=3e-3, rtol=3e-3)

    def test_softcap_matches_the_reference(self):
        q, k, v = self.qkv(1, 8, 2, 13, 21, 64)
        q *= 40.0  # logits well past the cap
        out = attnforge.attention(q, k, v, mask="causal", softcap=30)
        expected, _ = reference(q, k, v, mask="causal", softcap=30.0)
        np.testing.assert_allclose(out, expected, atol=2e-5, rtol=2e-5)
        with self.assertRaisesRegex(attnforge.NoKernelError, "softcap50"):
            attnforge.attention(q, k, v, mask="causal", softcap=50)
        with self.assertRaisesRegex(ValueError, "softcap"):
            attnforge.attention(q, k, v, mask="causal", softcap=-1)

    def test_a_modifier_takes_its_tensors_by_name(self):
        q, k, v = self.qkv(2, 4, 2, 19, 19, 32)
        documents = ((np.arange(19)[None, :] + 2 * np.arange(2)[:, None]) // 5).astype(np.int32)
        tensors = {"query_document": documents, "key_document": documents}
        out = attnforge.attention(q, k, v, mask="causal", modifier="document", mod_tensors=tensors)
        same = documents[:, None, :, None] == documents[:, None, None, :]
        expected, _ = reference(q, k, v, mask="causal", rule=same)
        np.testing.assert_allclose(out, expected, atol=2e-5, rtol=2e-5)
        cache = attnforge.ModifierKeyRangeCache()
        for _ in range(2):
            again = attnforge.attention(q, k, v, mask="causal", modifier="document",
                                        mod_tensors=tensors, key_range_cache=cache)
            np.testing.assert_allclose(again, expected, atol=2e-5, rtol=2e-5)
        self.assertEqual((cache.computed, cache.reused), (1, 1))
        with self.assertRaisesRegex(ValueError, "key_document.*not given"):
            attnforge.attention(q, k, v, mask="causal", modifier="document",
                                mod_tensors={"query_document": documents})
        with self.assertRaisesRegex(ValueError, r"expected shape \[B, Lq\]"):
            attnforge.attention(q, k, v, mask="causal", modifier="document",
                                mod_tensors={**tensors, "query_document": documents[:, :5]})

    def test_alibi_and_weights(self):
        q, k, v = self.qkv(2, 2, 2, 5, 12, 32)
        slopes = np.array([0.5, 0.125], dtype=np.float32)
        out = attnforge.attention(q, k, v, mask="causal", alignment="bottom_right",
                                  alibi_slopes=slopes)
        expected, _ = reference(q, k, v, "causal", "bottom_right", alibi_slopes=slopes)
        np.testing.assert_allclose(out, expected, atol=2e-5, rtol=2e-5)
        out, weights = attnforge.attention(q, k, v, weights=True, scale=0.3)
        expected, expected_weights = reference(q, k, v, scale=0.3)
        np.testing.assert_allclose(out, expected, atol=2e-5, rtol=2e-5)
        np.testing.assert_allclose(weights, expected_weights, atol=2e-6)

    def test_lse_is_returned_next_to_out(self):
        q, k, v = self.qkv(3, 8, 2, 7, 20, 64)
        lengths = np.array([20, 0, 9], dtype=np.int32)  # batch 1 sees no key
        args = dict(mask="causal", alignment="bottom_right", key_lengths=lengths)
        out, lse = attnforge.attention(q, k, v, lse=True, **args)
        expected, _, expected_lse = reference(q, k, v, **args, with_lse=True)
        self.assertEqual(lse.dtype, np.float32)
        self.assertEqual(lse.shape, (3, 8, 7))
        np.testing.assert_allclose(out, expected, atol=2e-5, rtol=2e-5)
        self.assertTrue(np.all(np.isposinf(lse[1])))
        np.testing.assert_allclose(lse, expected_lse, atol=1e-5, rtol=1e-5)

    def test_out_is_written_in_place_and_layouts_come_from_strides(self):
        # (B, L, H, D) memory, passed as [B, H, L, D] views.
        q_blhd = random(self.rng, (2, 19, 8, 64))
        k_blhd = random(self.rng, (2, 23, 2, 64))
        v_blhd = random(self.rng, (2, 23, 2, 64))
        out_blhd = np.full((2, 19, 8, 64), np.nan, dtype=np.float32)
        q, k, v, out = (t.transpose(0, 2, 1, 3) for t in (q_blhd, k_blhd, v_blhd, out_blhd))
        result = attnforge.attention(q, k, v, mask="causal", out=out)
        self.assertIs(result, out)
        expected, _ = reference(q, k, v, mask="causal")
        np.testing.assert_allclose(out_blhd.transpose(0, 2, 1, 3), expected, atol=2e-5, rtol=2e-5)

    def test_a_packed_batch_matches_each_sequence_alone(self):
        lengths = [(37, 37), (1, 1), (70, 70), (5, 5)]
        cu_q = np.cumsum([0] + [lq for lq, _ in lengths]).astype(np.int32)
        cu_k = np.cumsum([0] + [lk for _, lk in lengths]).astype(np.int32)
        q = random(self.rng, (int(cu_q[-1]), 8, 64))  # FlashAttention's [total, H, D]
        k, v = (random(self.rng, (int(cu_k[-1]), 2, 64)) for _ in range(2))
        view = lambda t: t.transpose(1, 0, 2)[None]  # [1, H, total, D]
        out = attnforge.attention(view(q), view(k), view(v), mask="causal", cu_seqlens_q=cu_q,
                                  cu_seqlens_k=cu_k)
        for s in range(len(lengths)):
            part = lambda t, at: view(t)[:, :, at[s]:at[s + 1]]
            expected, _ = reference(part(q, cu_q), part(k, cu_k), part(v, cu_k), mask="causal")
            np.testing.assert_allclose(out[:, :, cu_q[s]:cu_q[s + 1]], expected, atol=2e-5,
                                       rtol=2e-5)

    def write_prefill_then_step(self, cache, scales):
        """Writes a prefill of 30 rows, then one step, into cache["k"] and cache["v"]
        [B, H_kv, capacity, D]; returns the rows written, by position."""
        batch, kv_heads, capacity, dim = cache["k"].shape
        written = {name: np.zeros((batch, kv_heads, capacity, dim)) for name in "kv"}
        for first, count in ((0, 30), (30, 1)):
            positions = np.full(batch, first, np.int32)
            for name in "kv":
                rows = random(self.rng, (batch, kv_heads, count, dim))
                attnforge.write_quantized_rows(rows, positions, cache[name], scales[name])
                written[name][:, :, first:first + count] = rows
        return written

    def expect_decoding_reads(self, cache, scales, read):
        """One query per sequence over the 31 rows written matches the reference on
        `read`, the cache's values; returns the queries and key lengths."""
        batch, _, _, dim = cache["k"].shape
        q = random(self.rng, (batch, 8, 1, dim))
        lengths = np.full(batch, 31, np.int32)
        out = attnforge.attention(q, cache["k"], cache["v"], mask="causal",
                                  alignment="bottom_right", key_lengths=lengths,
                                  k_scale=scales["k"], v_scale=scales["v"])
        expected, _ = reference(q, read["k"], read["v"], "causal", "bottom_right",
                                key_lengths=lengths)
        np.testing.assert_allclose(out, expected, atol=1e-4, rtol=1e-4)
        return q, lengths

    def test_an_8bit_cache_is_written_then_read(self):
        # A prefill of 30 rows, then one decoding step, per sequence.
        batch, kv_heads, capacity, dim = 2, 2, 48, 64
        cache = {name: np.zeros((batch, kv_heads, capacity, dim), np.int8) for name in "kv"}
        scales = {name: np.zeros((batch, kv_heads, capacity), np.float32) for name in "kv"}
        written = self.write_prefill_then_step(cache, scales)
        read = {name: cache[name].astype(np.float64) * scales[name][..., None] for name in "kv"}
        step = np.abs(written["k"]).max(axis=-1, keepdims=True) / 127
        self.assertTrue(np.all(np.abs(read["k"] - written["k"]) <= step * (0.5 + 1e-5)))
        q, lengths = self.expect_decoding_reads(cache, scales, read)
        before = cache["k"].copy()
        with self.assertRaisesRegex(ValueError, r"^positions: \[0\] is 40"):
            attnforge.write_quantized_rows(random(self.rng, (batch, kv_heads, 9, dim)),
                                           np.array([40, 0], np.int32), cache["k"], scales["k"])
        np.testing.assert_array_equal(cache["k"], before)
        with self.assertRaisesRegex(ValueError, r"^k_scale, v_scale"):
            attnforge.attention(q, cache["k"], cache["v"], mask="causal", key_lengths=lengths)

    def test_an_fp8_cache_is_written_then_read(self):
        # e4m3 codes (uint8) with a scale per KV head; a prefill, then one step.
        batch, kv_heads, capacity, dim = 2, 2, 48, 64
        cache = {name: np.zeros((batch, kv_heads, capacity, dim), np.uint8) for name in "kv"}
        scales = {name: np.full(kv_heads, 1 / 400, np.float32) for name in "kv"}
        written = self.write_prefill_then_step(cache, scales)

        def e4m3_values(codes):  # by the format's definition
            c = codes.astype(np.int64)
            exponent, mantissa = (c >> 3) & 15, c & 7
            magnitude = np.where(exponent == 0, mantissa / 8 * 2.0**-6,
                                 (1 + mantissa / 8) * 2.0**(exponent - 7))
            return np.where(c & 0x80, -magnitude, magnitude)

        read = {name: e4m3_values(cache[name]) * scales[name][None, :, None, None].astype(np.float64)
                for name in "kv"}
        half_step = np.maximum(np.abs(written["k"]) / 16, scales["k"][0] * 2.0**-10)
        self.assertTrue(np.all(np.abs(read["k"] - written["k"]) <= half_step * (1 + 1e-5)))
        self.expect_decoding_reads(cache, scales, read)
        with self.assertRaisesRegex(ValueError, r"^scales: \[1\] is 0"):
            attnforge.write_quantized_rows(random(self.rng, (batch, kv_heads, 1, dim)),
                                           np.array([31, 31], np.int32), cache["k"],
                                           np.array([1.0, 0.0], np.float32))

    def test_errors_are_exceptions_and_nothing_is_written(self):
        q, k, v = self.qkv(1, 8, 2, 3, 5, 64)
        out = np.full(q.shape, 7.0, dtype=np.float32)
        with self.assertRaisesRegex(ValueError, r"^k: expected shape"):
            attnforge.attention(q, k[:, :, :, :32], v, mask="causal", out=out)
        with self.assertRaisesRegex(ValueError, r"^mask: 'diagonal'"):
            attnforge.attention(q, k, v, mask="diagonal", out=out)
        with self.assertRaisesRegex(ValueError, r"^q: element type"):
            attnforge.attention(q.astype(np.float64), k, v, out=out)
        with self.assertRaisesRegex(ValueError, r"^key_lengths: \[0\] is 9"):
            attnforge.attention(q, k, v, mask="causal", key_lengths=np.array([9], np.int32),
                                out=out)
        np.testing.assert_array_equal(out, 7.0)
        q80, k80, v80 = self.qkv(1, 2, 2, 3, 4, 80)
        with self.assertRaises(attnforge.NoKernelError) as raised:
            attnforge.attention(q80, k80, v80)
        self.assertIn("no emitted kernel computes", str(raised.exception))

    def test_many_calls_do_not_leak(self):
        q, k, v = self.qkv(1, 8, 2, 4, 16, 64)
        out = np.empty_like(q)

        def resident_kb():
            with open("/proc/self/statm") as statm:
                return int(statm.read().split()[1]) * 4

        for _ in range(200):  # warm up: allocator pools, thread pool
            attnforge.attention(q, k, v, mask="causal", out=out)
        before = resident_kb()
        for _ in range(3000):
            attnforge.attention(q, k, v, mask="causal", out=out)
            try:
                attnforge.attention(q, k[:, :1], v, out=out)
            except ValueError:
                pass
        self.assertLess(resident_kb() - before, 4096)

    def test_the_gil_is_released_while_a_kernel_runs(self):
        attnforge.set_num_threads(1)  # a core for the counting thread
        try:
            q, k, v = self.qkv(1, 8, 2, 4096, 4096, 64)
            attnforge.attention(q, k, v, mask="causal")  # warm up
            counter, stop = [0], threading.Event()

            def count():
                while not stop.is_set():
                    counter[0] += 1

            thread = threading.Thread(target=count)
            thread.start()
            start = counter[0]
            time.sleep(0.2)  # sleeping releases the GIL: the counting rate alone
            rate = (counter[0] - start) / 0.2
            during, seconds = [], []
            for _ in range(3):
                start, began = counter[0], time.perf_counter()
                attnforge.attention(q, k, v, mask="causal")
                seconds.append(time.perf_counter() - began)
                during.append(counter[0] - start)
            stop.set()
            thread.join()
            # Held, the counting thread would run only around the calls, about
            # one switch interval each; released, it counts through them.
            held = rate * 2 * sys.getswitchinterval()
            self.assertGreater(min(seconds), 10 * sys.getswitchinterval(), seconds)
            self.assertGreater(min(during), 4 * held, (during, held))
        finally:
            attnforge.set_num_threads(0)

    def test_available_kernels_lists_attention_and_layers(self):
        specs = {k["spec"] for k in attnforge.available_kernels()}
        self.assertIn("causal.gqa8x2.d64.f32", specs)
        self.assertIn("self.dm64.full.kpad.mha4.d16.f32", specs)


class Backward(unittest.TestCase):
    """attention_backward on the forward's out and lse, against gradient_reference."""

    def setUp(self):
        self.rng = np.random.default_rng(5)

    def check(self, batch, heads, kv_heads, q_len, kv_len, dim, dtype, tolerance, **mask):
        q, k, v = (random(self.rng, (batch, h, n, dim), dtype)
                   for h, n in ((heads, q_len), (kv_heads, kv_len), (kv_heads, kv_len)))
        d_out = random(self.rng, (batch, heads, q_len, dim), dtype)
        out, lse = attnforge.attention(q, k, v, lse=True, **mask)
        dq, dk, dv = attnforge.attention_backward(q, k, v, out, d_out, lse, **mask)
        for got, expected in zip((dq, dk, dv), gradient_reference(q, k, v, d_out, **mask)[:3]):
            self.assertEqual(got.dtype, dtype)
            np.testing.assert_allclose(got.astype(np.float64), expected,
                                       atol=tolerance * max(1.0, np.abs(expected).max()), rtol=0)

    def test_causal_gqa_with_key_padding_and_a_row_without_keys(self):
        for batch, q_len, kv_len in ((3, 7, 20), (1, 1, 1), (2, 70, 131)):
            lengths = np.array([kv_len, 0, kv_len // 2][:batch], dtype=np.int32)
            self.check(batch, 8, 2, q_len, kv_len, 64, np.float32, 2e-5, mask="causal",
                       alignment="bottom_right", key_lengths=lengths)

    def test_alibi_and_a_window_given_per_call_in_f16(self):
        self.check(2, 2, 2, 19, 12, 32, np.float32, 2e-5, mask="causal", alignment="bottom_right",
                   alibi_slopes=np.array([0.5, 0.25], dtype=np.float32))
        lengths = np.array([40, 17], dtype=np.int32)
        self.check(2, 2, 2, 9, 40, 32, np.float16, 1e-2, mask="sliding_window", window=(5, 2),
                   alignment="bottom_right", key_lengths=lengths)

    def test_a_bias_gradient_with_bias_grad(self):
        # full.bias.mqa4.d32.f32.dbias, every entry's gradient even of a broadcast bias.
        q = random(self.rng, (2, 4, 9, 32))
        k, v = (random(self.rng, (2, 1, 13, 32)) for _ in range(2))
        d_out = random(self.rng, (2, 4, 9, 32))
        for bias in (random(self.rng, (2, 4, 9, 13)), random(self.rng, (1, 4, 9, 13))):
            out, lse = attnforge.attention(q, k, v, lse=True, bias=bias)
            got = attnforge.attention_backward(q, k, v, out, d_out, lse, bias=bias,
                                               bias_grad=True)
            expected = gradient_reference(q, k, v, d_out, bias=bias)
            self.assertEqual(got[3].shape, (2, 4, 9, 13))
            for a, b in zip(got, expected):
                np.testing.assert_allclose(a.astype(np.float64), b,
                                           atol=2e-5 * max(1.0, np.abs(b).max()), rtol=0)
        with self.assertRaisesRegex(ValueError, r"d_bias: the gradient of a bias"):
            attnforge.attention_backward(q, k, v, out, d_out, lse, bias_grad=True)

    def test_gradients_are_written_in_place(self):
        q, k, v = (random(self.rng, (1, 2, 9, 32), np.float32) for _ in range(3))
        d_out = random(self.rng, (1, 2, 9, 32), np.float32)
        args = dict(mask="causal", alignment="bottom_right", alibi_slopes=np.ones(2, np.float32))
        out, lse = attnforge.attention(q, k, v, lse=True, **args)
        dq, dk, dv = (np.full((1, 2, 9, 32), 7.0, np.float32) for _ in range(3))
        got = attnforge.attention_backward(q, k, v, out, d_out, lse, dq=dq, dk=dk, dv=dv, **args)
        self.assertTrue(all(a is b for a, b in zip(got, (dq, dk, dv))))
        self.assertFalse(np.any(dq == 7.0))

    def test_errors_name_the_argument_and_nothing_is_written(self):
        q, k, v = (random(self.rng, (1, 2, 9, 32), np.float32) for _ in range(3))
        args = dict(mask="causal", alignment="bottom_right", alibi_slopes=np.ones(2, np.float32))
        out, lse = attnforge.attention(q, k, v, lse=True, **args)
        dq = np.full((1, 2, 8, 32), 7.0, np.float32)
        with self.assertRaisesRegex(ValueError, r"dq: expected shape \[B, H, Lq, D\]"):
            attnforge.attention_backward(q, k, v, out, out, lse, dq=dq, **args)
        self.assertTrue(np.all(dq == 7.0))
        with self.assertRaisesRegex(attnforge.NoKernelError, "backward"):
            attnforge.attention_backward(q, k, v, out, out, lse, mask="causal")


class Layer(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(5)

    def parameters(self, d_model, heads):
        fan = 1.0 / np.sqrt(d_model)
        return dict(w_qkv=random(self.rng, (d_model, 3 * d_model), scale=fan),
                    b_qkv=random(self.rng, (3 * d_model,), scale=0.5),
                    w_o=random(self.rng, (d_model, d_model), scale=fan),
                    b_o=random(self.rng, (d_model,), scale=0.5))

    def test_self_attention_with_key_padding_matches_the_reference(self):
        p = self.parameters(64, 4)
        for batch, length in ((1, 1), (2, 37)):
            x = random(self.rng, (batch, length, 64))
            lengths = np.array([length, max(1, length // 2)][:batch], dtype=np.int32)
            out = attnforge.mha_layer(x, heads=4, key_lengths=lengths, **p)
            expected = layer_reference(x, heads=4, key_lengths=lengths, **p)
            np.testing.assert_allclose(out, expected, atol=2e-4, rtol=2e-4)

    def test_a_softcapped_layer_matches_the_reference(self):
        p = self.parameters(32, 2)
        x = random(self.rng, (2, 19, 32), scale=4.0)
        out = attnforge.mha_layer(x, heads=2, mask="causal", softcap=20, **p)
        expected = layer_reference(x, heads=2, mask="causal", softcap=20.0, **p)
        np.testing.assert_allclose(out, expected, atol=2e-4, rtol=2e-4)

    def test_cross_attention_returns_averaged_weights(self):
        d_model, heads, kv_heads, dim = 48, 4, 2, 12
        fan = 1.0 / np.sqrt(d_model)
        x_q, x_kv = random(self.rng, (2, 7, d_model)), random(self.rng, (2, 33, d_model))
        w = {name: random(self.rng, (d_model, features), scale=fan) for name, features in
             (("w_q", heads * dim), ("w_k", kv_heads * dim), ("w_v", kv_heads * dim),
              ("w_o", d_model))}
        b = {name: random(self.rng, (w["w" + name[1:]].shape[1],), scale=0.5)
             for name in ("b_q", "b_k", "b_v", "b_o")}
        bias = random(self.rng, (2, heads, 7, 33))
        out, weights = attnforge.mha_layer(x_q, x_kv=x_kv, heads=heads, kv_heads=kv_heads,
                                           mask="causal", alignment="bottom_right", bias=bias,
                                           weights=True, **w, **b)
        self.assertEqual(weights.shape, (2, 7, 33))

        def project(x, name):
            y = np.asarray(x, np.float64) @ w["w_" + name] + b["b_" + name]
            return y.reshape(y.shape[0], y.shape[1], -1, dim).transpose(0, 2, 1, 3)

        heads_out, expected_weights = reference(project(x_q, "q"), project(x_kv, "k"),
                                                project(x_kv, "v"), "causal", "bottom_right",
                                                bias=bias)
        expected = heads_out.transpose(0, 2, 1, 3).reshape(2, 7, d_model) @ w["w_o"] + b["b_o"]
        np.testing.assert_allclose(out, expected, atol=2e-4, rtol=2e-4)
        np.testing.assert_allclose(weights, expected_weights.mean(axis=1), atol=2e-5)

    def test_bad_layer_arguments_are_value_errors(self):
        p = self.parameters(64, 4)
        x = random(self.rng, (1, 5, 64))
        with self.assertRaisesRegex(ValueError, r"^d_model: "):
            attnforge.mha_layer(x, heads=5, **p)
        with self.assertRaisesRegex(ValueError, r"^b_o: null, but b_qkv is given"):
            attnforge.mha_layer(x, heads=4, **dict(p, b_o=None))


@unittest.skipIf(torch is None, "torch is not installed")
class Torch(unittest.TestCase):
    def test_strided_blhd_tensors_match_sdpa_without_a_copy(self):
        torch.manual_seed(0)
        q_blhd = torch.rand(2, 19, 8, 64) - 0.5
        k_blhd, v_blhd = torch.rand(2, 23, 2, 64) - 0.5, torch.rand(2, 23, 2, 64) - 0.5
        out_blhd = torch.empty(2, 19, 8, 64)
        q, k, v, out = (t.transpose(1, 2) for t in (q_blhd, k_blhd, v_blhd, out_blhd))
        result = attnforge.attention(q, k, v, mask="causal", out=out)
        self.assertEqual(result.data_ptr(), out_blhd.data_ptr())
        expected = torch.nn.functional.scaled_dot_product_attention(
            q.double(), k.double(), v.double(), is_causal=True, enable_gqa=True)
        torch.testing.assert_close(out.double(), expected, atol=2e-5, rtol=2e-5)
        allocated = attnforge.attention(q, k, v, mask="causal")
        self.assertIsInstance(allocated, torch.Tensor)

    def test_bf16_tensors_with_a_broadcast_bias(self):
        torch.manual_seed(1)
        q = (torch.rand(2, 4, 9, 32) - 0.5).bfloat16()
        k, v = ((torch.rand(2, 1, 17, 32) - 0.5).bfloat16() for _ in range(2))
        bias = (torch.rand(1, 4, 9, 17) - 0.5).bfloat16()
        out = attnforge.attention(q, k, v, bias=bias)
        self.assertEqual(out.dtype, torch.bfloat16)
        expected = torch.nn.functional.scaled_dot_product_attention(
            q.double(), k.double(), v.double(), attn_mask=bias.double(), enable_gqa=True)
        torch.testing.assert_close(out.double(), expected, atol=2e-2, rtol=2e-2)

    def test_mha_layer_matches_multihead_attention(self):
        torch.manual_seed(2)
        mha = torch.nn.MultiheadAttention(64, 4, batch_first=True).eval()
        x = torch.rand(2, 37, 64) - 0.5
        lengths = torch.tensor([37, 20], dtype=torch.int32)
        padding = torch.arange(37)[None, :] >= lengths[:, None]  # True: ignored
        with torch.no_grad():
            expected, _ = mha(x, x, x, key_padding_mask=padding, need_weights=False)
            # torch keeps weights [out, in]: the layer takes them [in, out].
            out = attnforge.mha_layer(
                x, heads=4, w_qkv=mha.in_proj_weight.T.contiguous(), b_qkv=mha.in_proj_bias.detach(),
                w_o=mha.out_proj.weight.T.contiguous(), b_o=mha.out_proj.bias.detach(),
                key_lengths=lengths)
        torch.testing.assert_close(out, expected, atol=2e-5, rtol=2e-4)


if __name__ == "__main__":
    unittest.main()
