"""attnforge.torch.attention over the runtime test package's backward kernels:
gradients against PyTorch's autograd of scaled_dot_product_attention in
float64, torch.autograd.gradcheck in float32, torch.compile without a graph
break, (B, L, H, D) strided tensors, and a bias's gradient, broadcast or not.
Skipped where torch is not installed. Run with PYTHONPATH=<package>/python."""
import unittest

try:
    import torch
    import torch.nn.functional as F

    import attnforge.torch as aft
except ImportError:
    torch = None


def sdpa_float64(q, k, v, bias=None, is_causal=False):
    """PyTorch's SDPA in float64 on copies, with K and V repeated per query head;
    the leaves are q, k, v and the bias when it requires grad."""
    group = q.shape[1] // k.shape[1]
    leaves = [t.detach().double().requires_grad_() for t in (q, k, v)]
    if bias is not None:
        bias = bias.detach().double().requires_grad_(bias.requires_grad)
        if bias.requires_grad:
            leaves.append(bias)
    q, k, v = leaves[:3]
    out = F.scaled_dot_product_attention(
        q, k.repeat_interleave(group, 1), v.repeat_interleave(group, 1), attn_mask=bias,
        is_causal=is_causal)
    return out, leaves


def assert_gradients_close(test, got, expected, tolerance):
    for name, a, b in zip(("q", "k", "v", "bias"), got, expected):
        scale = max(1.0, b.abs().max().item())
        error = (a.double() - b).abs().max().item()
        test.assertLessEqual(error, tolerance * scale, f"d{name}: max error {error}")


@unittest.skipIf(torch is None, "torch is not installed")
class Autograd(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)

    def test_strided_blhd_gradients_match_sdpa_autograd(self):
        # causal.br.kpad.gqa8x2.d64.f32, every key kept: plain causal GQA at Lq == Lk.
        for batch, length in ((1, 1), (2, 37), (1, 130)):
            q_blhd = (torch.rand(batch, length, 8, 64) - 0.5).requires_grad_()
            k_blhd = (torch.rand(batch, length, 2, 64) - 0.5).requires_grad_()
            v_blhd = (torch.rand(batch, length, 2, 64) - 0.5).requires_grad_()
            lengths = torch.full((batch,), length, dtype=torch.int32)
            q, k, v = (t.transpose(1, 2) for t in (q_blhd, k_blhd, v_blhd))
            out = aft.attention(q, k, v, mask="causal", alignment="bottom_right",
                                key_lengths=lengths)
            d_out = torch.rand_like(out)
            out.backward(d_out)
            expected, leaves = sdpa_float64(q, k, v, is_causal=True)
            expected.backward(d_out.double())
            torch.testing.assert_close(out.double(), expected, atol=2e-6, rtol=2e-5)
            got = [t.grad.transpose(1, 2) for t in (q_blhd, k_blhd, v_blhd)]
            assert_gradients_close(self, got, [t.grad for t in leaves], 2e-5)

    def test_gradcheck_in_float32(self):
        # causal.br.alibi.mha2.d32.f32; float32 kernels, so float32 differences
        # with eps 3e-3: tolerances of 3e-4 absolute and 1e-3 relative (a dq
        # 2% off fails).
        q, k, v = ((torch.rand(1, 2, 5, 32) - 0.5).requires_grad_() for _ in range(3))
        slopes = torch.tensor([0.5, 0.25])

        def attention(q, k, v):
            return aft.attention(q, k, v, mask="causal", alignment="bottom_right",
                                 alibi_slopes=slopes)

        self.assertTrue(torch.autograd.gradcheck(attention, (q, k, v), eps=3e-3, atol=3e-4,
                                                 rtol=1e-3, fast_mode=False))

    def test_torch_compile_traces_the_operator_without_a_graph_break(self):
        q = (torch.rand(1, 8, 16, 64) - 0.5).requires_grad_()
        k, v = ((torch.rand(1, 2, 16, 64) - 0.5).requires_grad_() for _ in range(2))
        lengths = torch.full((1,), 16, dtype=torch.int32)

        def loss(q, k, v):
            out = aft.attention(q, k, v, mask="causal", alignment="bottom_right",
                                key_lengths=lengths)
            return (out * out).sum()

        compiled = torch.compile(loss, fullgraph=True)  # a graph break raises
        compiled(q, k, v).backward()
        got = [t.grad.clone() for t in (q, k, v)]
        for t in (q, k, v):
            t.grad = None
        loss(q, k, v).backward()
        for a, b in zip(got, (q.grad, k.grad, v.grad)):
            torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)

    def test_bf16_with_a_bias(self):
        # full.bias.mqa4.d32.bf16
        q = (torch.rand(2, 4, 9, 32) - 0.5).bfloat16().requires_grad_()
        k, v = ((torch.rand(2, 1, 13, 32) - 0.5).bfloat16().requires_grad_() for _ in range(2))
        bias = torch.rand(2, 4, 9, 13).bfloat16()
        out = aft.attention(q, k, v, bias=bias)
        d_out = torch.rand_like(out)
        out.backward(d_out)
        expected, leaves = sdpa_float64(q, k, v, bias=bias)
        expected.backward(d_out.double())
        assert_gradients_close(self, [q.grad, k.grad, v.grad], [t.grad for t in leaves], 1e-2)

    def test_a_bias_gets_its_gradient_summed_over_its_broadcast_dims(self):
        # full.bias.mqa4.d32.f32.dbias: a bias per (b, h), then one shared by the batch.
        for bias_shape in ((2, 4, 9, 13), (1, 4, 9, 13)):
            q = (torch.rand(2, 4, 9, 32) - 0.5).requires_grad_()
            k, v = ((torch.rand(2, 1, 13, 32) - 0.5).requires_grad_() for _ in range(2))
            bias = (torch.rand(bias_shape) - 0.5).requires_grad_()
            out = aft.attention(q, k, v, bias=bias)
            d_out = torch.rand_like(out)
            out.backward(d_out)
            self.assertEqual(bias.grad.shape, bias.shape)
            expected, leaves = sdpa_float64(q, k, v, bias=bias)
            expected.backward(d_out.double())
            assert_gradients_close(self, [q.grad, k.grad, v.grad, bias.grad],
                                   [t.grad for t in leaves], 2e-5)


if __name__ == "__main__":
    unittest.main()
