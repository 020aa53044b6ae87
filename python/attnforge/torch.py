"""attnforge attention as a PyTorch operator with its gradient.

    import attnforge.torch
    out = attnforge.torch.attention(q, k, v, mask="causal")  # q [B, H, Lq, D]
    out.sum().backward()                                      # q.grad, k.grad, v.grad

The forward runs the package's .lse kernel, the backward its backward kernel
(attnforge emit --backward). Both are registered as torch.library custom
operators (attnforge::attention, attnforge::attention_backward) with fake
implementations, so torch.compile traces them without a graph break.
Tensors are CPU float32, float16 or bfloat16 in [B, H, L, D] layout; a
(B, L, H, D) tensor passes as .transpose(1, 2), as with attnforge.attention.
A bias that requires grad gets its gradient from the .dbias backward kernel
(emit --backward SPEC.dbias), summed over the dims it is broadcast along.
"""
from typing import Optional, Tuple

import torch

import attnforge

__all__ = ["attention"]

Tensor = torch.Tensor


def _mask_options(mask, alignment, window_left, window_right, key_lengths, bias, alibi_slopes,
                  scale, softcap):
    return dict(mask=mask, alignment=alignment, window=(window_left, window_right),
                key_lengths=key_lengths, bias=bias, alibi_slopes=alibi_slopes, scale=scale,
                softcap=softcap)


@torch.library.custom_op("attnforge::attention", mutates_args=())
def _attention(q: Tensor, k: Tensor, v: Tensor, mask: str, alignment: str, window_left: int,
               window_right: int, key_lengths: Optional[Tensor], bias: Optional[Tensor],
               alibi_slopes: Optional[Tensor], scale: Optional[float],
               softcap: Optional[float]) -> Tuple[Tensor, Tensor]:
    out, lse = attnforge.attention(q, k, v, lse=True, **_mask_options(
        mask, alignment, window_left, window_right, key_lengths, bias, alibi_slopes, scale,
        softcap))
    return out, lse


@_attention.register_fake
def _(q, k, v, mask, alignment, window_left, window_right, key_lengths, bias, alibi_slopes, scale,
      softcap):
    return q.new_empty(q.shape), q.new_empty(q.shape[:3], dtype=torch.float32)


def _bias_gradient_shape(q, k, bias_grad):
    """[B, H, Lq, Lk] with bias_grad, else an empty tensor's (0,)."""
    return tuple(q.shape[:3]) + (k.shape[2],) if bias_grad else (0,)


@torch.library.custom_op("attnforge::attention_backward", mutates_args=())
def _attention_backward(q: Tensor, k: Tensor, v: Tensor, out: Tensor, d_out: Tensor, lse: Tensor,
                        mask: str, alignment: str, window_left: int, window_right: int,
                        key_lengths: Optional[Tensor], bias: Optional[Tensor],
                        alibi_slopes: Optional[Tensor], scale: Optional[float],
                        softcap: Optional[float],
                        bias_grad: bool) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    # The kernels read rows whose innermost stride is 1.
    d_out = d_out if d_out.stride(-1) == 1 else d_out.contiguous()
    gradients = attnforge.attention_backward(q, k, v, out, d_out, lse, bias_grad=bias_grad,
                                             **_mask_options(mask, alignment, window_left,
                                                             window_right, key_lengths, bias,
                                                             alibi_slopes, scale, softcap))
    return gradients if bias_grad else gradients + (q.new_empty((0,)),)


@_attention_backward.register_fake
def _(q, k, v, out, d_out, lse, mask, alignment, window_left, window_right, key_lengths, bias,
      alibi_slopes, scale, softcap, bias_grad):
    return (q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape),
            q.new_empty(_bias_gradient_shape(q, k, bias_grad)))


_OPTIONS = ("mask", "alignment", "window_left", "window_right", "key_lengths", "bias",
            "alibi_slopes", "scale", "softcap")


def _setup_context(ctx, inputs, output):
    q, k, v = inputs[:3]
    options = dict(zip(_OPTIONS, inputs[3:]))
    bias = options["bias"]
    ctx.bias_grad = bias is not None and bias.requires_grad
    ctx.bias_shape = None if bias is None else bias.shape
    out, lse = output
    ctx.mark_non_differentiable(lse)
    ctx.save_for_backward(q, k, v, out, lse)
    ctx.options = options


def _backward(ctx, d_out, d_lse):
    q, k, v, out, lse = ctx.saved_tensors
    dq, dk, dv, d_bias = _attention_backward(q, k, v, out, d_out, lse, **ctx.options,
                                             bias_grad=ctx.bias_grad)
    options = [None] * len(_OPTIONS)
    if ctx.bias_grad:
        # Every (b, h) entry's gradient; a bias broadcast over B or H sums it there.
        options[_OPTIONS.index("bias")] = d_bias.sum_to_size(ctx.bias_shape)
    return (dq, dk, dv) + tuple(options)


torch.library.register_autograd("attnforge::attention", _backward, setup_context=_setup_context)


def attention(q, k, v, *, mask="none", alignment="top_left", window=(0, 0), key_lengths=None,
              bias=None, alibi_slopes=None, scale=None, softcap=None):
    """softmax(q k^T * scale + bias + mask) v, differentiable in q, k and v.

    Arguments as attnforge.attention: q [B, H, Lq, D], k and v [B, H_kv, Lk,
    D]; mask "none", "causal" or "sliding_window" with window=(left, right);
    alignment "top_left" or "bottom_right"; key_lengths int32 [B]; bias
    [B or 1, H or 1, Lq, Lk] (differentiable: needs the spec's .dbias backward
    kernel); alibi_slopes float32 [H]; scale
    None for 1/sqrt(D); softcap None or the cap. Returns out [B, H, Lq, D].
    """
    out, _ = _attention(q, k, v, mask, alignment, int(window[0]), int(window[1]), key_lengths,
                        bias, alibi_slopes, None if scale is None else float(scale),
                        None if softcap is None else float(softcap))
    return out
