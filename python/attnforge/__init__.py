"""attnforge from Python: the attention and MHA layer kernels of an emitted
package, called through its runtime on numpy arrays or PyTorch tensors (CPU,
or CUDA for CUDA kernels) without a copy. Layouts come from the strides, so a
(B, L, H, D) tensor passed as .transpose(1, 2) is a [B, H, L, D] view.

    import attnforge
    out = attnforge.attention(q, k, v, mask="causal")

Training: attention_backward() computes the gradients from the forward's
out and lse; attnforge.torch.attention is the PyTorch operator with its
gradient (autograd and torch.compile).

Errors: ValueError for an invalid argument (the message names it, with the
expected and the given shape); NoKernelError when the package has no kernel
for the call; NoDeviceError for CUDA tensors without a CUDA device;
KernelError when a kernel fails. On any error nothing is written.
"""
import math

from . import _attnforge as _native

# Keeps a modifier's key ranges across calls: attention(..., key_range_cache=).
ModifierKeyRangeCache = _native.ModifierKeyRangeCache

__all__ = ["attention", "attention_backward", "mha_layer", "write_quantized_rows", "available_kernels",
           "set_num_threads", "ModifierKeyRangeCache", "AttnforgeError",
           "NoKernelError", "NoDeviceError", "KernelError"]


class AttnforgeError(RuntimeError):
    """A call the runtime could not serve (invalid arguments raise ValueError)."""


class NoKernelError(AttnforgeError):
    """The package has no kernel for the call's spec, device and CPU."""


class NoDeviceError(AttnforgeError):
    """CUDA tensors were given, but there is no CUDA driver or device."""


class KernelError(AttnforgeError):
    """The kernel reported an error while it ran."""


_MASKS = dict(_native.MASK_CODES)  # the C++ enums' codes, from the extension
_ALIGNMENTS = dict(_native.ALIGNMENT_CODES)
_ERRORS = {"invalid argument": ValueError, "no kernel": NoKernelError,
           "no device": NoDeviceError, "kernel failed": KernelError}


def _check(result):
    code, message = result
    if code != "ok":
        raise _ERRORS.get(code, AttnforgeError)(message)


def _choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"{name}: {value!r}; expected one of {', '.join(map(repr, choices))}")
    return choices[value]


def _mask_arguments(mask, alignment, window, key_lengths, bias, alibi_slopes, scale, softcap):
    if len(window) != 2:
        raise ValueError(f"window: {window!r}; expected (left, right)")
    return _native.MaskArguments(
        _choice("mask", mask, _MASKS), _choice("alignment", alignment, _ALIGNMENTS),
        int(window[0]), int(window[1]), key_lengths, bias, alibi_slopes,
        None if scale is None else float(scale), 0.0 if softcap is None else float(softcap))


def _empty_like(reference, shape):
    """An uninitialized array of the reference's kind, element type and device."""
    if hasattr(reference, "new_empty"):  # torch.Tensor
        return reference.new_empty(shape)
    import numpy

    return numpy.empty(shape, dtype=reference.dtype)


def _empty_f32_like(reference, shape):
    """An uninitialized float32 array of the reference's kind and device."""
    if hasattr(reference, "new_empty"):  # torch.Tensor
        import torch

        return reference.new_empty(shape, dtype=torch.float32)
    import numpy

    return numpy.empty(shape, dtype=numpy.float32)


def _extent(array, dim):
    shape = getattr(array, "shape", ())
    return int(shape[dim]) if len(shape) > abs(dim) else 0


def _fp8_as_bytes(array):
    """A torch float8_e4m3fn tensor as its bytes, the codes the kernels read."""
    if str(getattr(array, "dtype", "")) == "torch.float8_e4m3fn":
        import torch

        return array.view(torch.uint8)
    return array


def attention(q, k, v, *, mask="none", alignment="top_left", window=(0, 0), key_lengths=None,
              page_table=None, cu_seqlens_q=None, cu_seqlens_k=None, bias=None, alibi_slopes=None,
              scale=None, softcap=None, weights=False, lse=False, out=None, k_scale=None,
              v_scale=None, modifier=None, mod_tensors=None, key_range_cache=None):
    """softmax(q k^T * scale + bias + mask) v over many heads.

    q: [B, H, Lq, D]; k, v: [B, H_kv, Lk, D] (H a multiple of H_kv), or
    [num_pages, H_kv, page_size, D] with page_table (int32 [B, max_pages]).
    A packed batch (FlashAttention's varlen): q [1, H, total_q, D] and k, v
    [1, H_kv, total_k, D] with cu_seqlens_q, cu_seqlens_k (int32 [S + 1]
    offsets, CPU memory); a [total, H, D] tensor t is t.transpose(0, 1)[None].
    mask: "none", "causal" or "sliding_window" (window=(left, right): a
    kernel with that window compiled in, else one taking it per call);
    alignment: "top_left" or "bottom_right" (query i at key i + Lk - Lq);
    key_lengths: int32 [B], the keys each batch keeps; bias: [B or 1, H or 1,
    Lq, Lk]; alibi_slopes: float32 [H]; scale: None for 1/sqrt(D);
    softcap: None, or C to take tanh(s / C) * C of each scaled logit s
    before bias and mask (a kernel compiled with that cap).
    An 8-bit KV cache, as write_quantized_rows() fills it: k and v int8
    with k_scale and v_scale, float32 [B, H_kv, Lk] (or [num_pages, H_kv,
    page_size]), one scale per row (kv8); or k and v fp8 e4m3 codes (uint8,
    or torch.float8_e4m3fn) with k_scale and v_scale float32 [H_kv], one
    scale per KV head (kvfp8).
    modifier: the name of a modifier compiled into the package (emit --mod;
    docs/modifiers.md), whose tensors mod_tensors gives as a dict by name,
    each of the type and shape the modifier declares, outermost first (a
    {queries, batch} tensor is [B, Lq]); key_range_cache: a
    ModifierKeyRangeCache() that keeps a mask rule's key ranges across calls
    with the same shape and tensor values (one per thread).
    Returns out ([B, H, Lq, D], written in place when given), and with
    weights=True also the attention weights [B, H, Lq, Lk], and with lse=True
    also each row's log-sum-exp, float32 [B, H, Lq] (+inf for a row that sees
    no key), in that order.
    """
    if out is None:
        out = _empty_like(q, tuple(q.shape))
    weights_out = None
    if weights:
        kv_len = _extent(k, 2) * (_extent(page_table, 1) if page_table is not None else 1)
        weights_out = _empty_like(q, (_extent(q, 0), _extent(q, 1), _extent(q, 2), kv_len))
    lse_out = _empty_f32_like(q, (_extent(q, 0), _extent(q, 1), _extent(q, 2))) if lse else None
    arguments = _mask_arguments(mask, alignment, window, key_lengths, bias, alibi_slopes, scale,
                                softcap)
    k, v = _fp8_as_bytes(k), _fp8_as_bytes(v)
    _check(_native.attention(q, k, v, out, arguments, page_table, cu_seqlens_q, cu_seqlens_k,
                             weights_out, lse_out, k_scale, v_scale, modifier or "",
                             list((mod_tensors or {}).items()), key_range_cache))
    results = (out,) + ((weights_out,) if weights else ()) + ((lse_out,) if lse else ())
    return results if len(results) > 1 else out


def attention_backward(q, k, v, out, d_out, lse, *, mask="none", alignment="top_left",
                       window=(0, 0), key_lengths=None, bias=None, alibi_slopes=None, scale=None,
                       softcap=None, bias_grad=False, dq=None, dk=None, dv=None, d_bias=None):
    """The gradients of attention(q, k, v, ...) for a loss whose gradient by
    its output is d_out: (dq, dk, dv), shaped as q, k and v, dk and dv summed
    over each KV head's query heads. out and lse ([B, H, Lq] float32) are the
    forward's, from attention(..., lse=True); the mask options are the
    forward's (no page table, packed batch, 8-bit cache or modifier). The
    package needs the spec's backward kernel (attnforge emit --backward).
    bias_grad (or d_bias given): also the bias's gradient, returned fourth,
    [B, H, Lq, Lk] as q's type (every entry: a broadcast bias's gradient is
    its sum over the broadcast dims); needs the spec's .dbias kernel.
    dq, dk, dv, d_bias: written in place when given. CPU only.
    """
    dq = _empty_like(q, tuple(q.shape)) if dq is None else dq
    dk = _empty_like(k, tuple(k.shape)) if dk is None else dk
    dv = _empty_like(v, tuple(v.shape)) if dv is None else dv
    if bias_grad and d_bias is None:
        d_bias = _empty_like(q, tuple(q.shape[:3]) + (k.shape[2],))
    arguments = _mask_arguments(mask, alignment, window, key_lengths, bias, alibi_slopes, scale,
                                softcap)
    _check(_native.attention_backward(q, k, v, out, d_out, lse, dq, dk, dv, arguments, d_bias))
    return (dq, dk, dv) if d_bias is None else (dq, dk, dv, d_bias)


def write_quantized_rows(rows, positions, cache, scales, *, page_table=None):
    """Quantizes rows [B, H_kv, n, D] (float32, float16 or bfloat16) into an
    8-bit cache at positions[b] .. positions[b] + n - 1 of each sequence
    (positions: int32 [B]): cache [B, H_kv, Lk, D], or [num_pages, H_kv,
    page_size, D] with page_table (int32 [B, max_pages]).
    - cache int8 (kv8): scales float32 [B, H_kv, Lk] (or [num_pages, H_kv,
      page_size]) receive each row's scale.
    - cache uint8 or torch.float8_e4m3fn (kvfp8): scales float32 [H_kv], one
      per KV head, are given and read; values saturate at 448 * scale.
    Call once for K and once for V. Raises ValueError naming a bad argument;
    then nothing is written.
    """
    cache = _fp8_as_bytes(cache)
    _check(_native.write_quantized_rows(rows, positions, cache, scales, page_table))


def mha_layer(x, *, heads, w_o, w_qkv=None, b_qkv=None, b_o=None, x_kv=None, w_q=None, w_k=None,
              w_v=None, b_q=None, b_k=None, b_v=None, kv_heads=0, mask="none",
              alignment="top_left", window=(0, 0), key_lengths=None, bias=None,
              alibi_slopes=None, scale=None, softcap=None, weights=False, average_weights=True,
              out=None):
    """A whole multi-head attention layer, as torch.nn.MultiheadAttention
    (batch_first) computes it. x: [B, L, d_model]; cross-attention passes
    x_kv [B, Lk, d_model] and w_q, w_k, w_v instead of the packed w_qkv
    [d_model, (H + 2 H_kv) D]. Weights are [in, out] (y = x W: torch's
    in_proj_weight.T and out_proj.weight.T); biases all given or all None.
    Mask options as attention(). Returns out [B, Lq, d_model], and with
    weights=True also the attention weights, averaged over heads [B, Lq, Lk]
    or per head [B, H, Lq, Lk] with average_weights=False.
    """
    x_q = x
    if out is None:
        out = _empty_like(x_q, tuple(x_q.shape))
    weights_out = None
    if weights:
        batch, q_len = _extent(x_q, 0), _extent(x_q, 1)
        kv_len = _extent(x_kv, 1) if x_kv is not None else q_len
        shape = (batch, q_len, kv_len) if average_weights else (batch, heads, q_len, kv_len)
        weights_out = _empty_like(x_q, shape)
    parameters = [w_qkv, b_qkv, w_q, w_k, w_v, b_q, b_k, b_v, w_o, b_o]
    arguments = _mask_arguments(mask, alignment, window, key_lengths, bias, alibi_slopes, scale,
                                softcap)
    _check(_native.mha_layer(x_q, x_kv, parameters, out, int(heads), int(kv_heads), arguments,
                             weights_out, bool(weights and average_weights)))
    return (out, weights_out) if weights else out


def available_kernels():
    """The package's kernels: dicts of function, spec, target and bucket."""
    return [dict(zip(("function", "spec", "target", "bucket"), k))
            for k in _native.available_kernels()]


def set_num_threads(threads):
    """Worker threads of CPU kernels (0: one per core), for later calls."""
    _native.set_num_threads(int(threads))
