# The document modifier from an emitted package: checked against SDPA in float64, then timed
# with its key ranges computed per call and kept (docs/modifiers.md, "In a package").
import time
import torch
import attnforge
from torch.nn.functional import scaled_dot_product_attention as sdpa

torch.manual_seed(0)
B, H, L, D = 1, 8, 4096, 64
q, k, v = (torch.randn(B, H, L, D) for _ in range(3))
documents = torch.arange(L, dtype=torch.int32)[None] // 512  # [B, L]
tensors = {"query_document": documents, "key_document": documents}
cache = attnforge.ModifierKeyRangeCache()
out = attnforge.attention(q, k, v, mask="causal", modifier="document", mod_tensors=tensors,
                          key_range_cache=cache)
same = documents[:, None, :, None] == documents[:, None, None, :]
causal = torch.ones(L, L, dtype=torch.bool).tril()
expected = sdpa(q.double(), k.double(), v.double(), attn_mask=same & causal)
print("max abs error vs SDPA in float64:", (out.double() - expected).abs().max().item())
print([k["bucket"] for k in attnforge.available_kernels()])
for label, kw in (("table per call", {}), ("table kept", {"key_range_cache": cache})):
    times = []
    for _ in range(10):
        t = time.perf_counter()
        attnforge.attention(q, k, v, mask="causal", modifier="document", mod_tensors=tensors, **kw)
        times.append(time.perf_counter() - t)
    print(label, "median ms", sorted(times)[5] * 1e3)
print("cache computed", cache.computed, "reused", cache.reused)
