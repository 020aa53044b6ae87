"""Pipeline features and the log-time models built on them (numpy only).

A pipeline is a list of launch sites, each joined to its kernel's SASS and
ptxas features. Two models rank it: a hand-formed estimate of issue cycles
with fixed weights (nothing fitted), and ridge regression of log(ms) on the
log features below.
"""

import math

import numpy as np

SMS = 132  # H200
MAX_WARPS, MAX_BLOCKS, REGISTERS, SHARED = 64, 32, 65536, 228 * 1024
RESERVED_SHARED_PER_BLOCK, REGISTER_GRANULE = 1024, 256
# Issue slots per instruction class, a rough Hopper prior: memory and
# special-function instructions stall more than arithmetic does.
# An HMMA.16816 issues about every 4 cycles per sub-partition (no timed
# tensor-core data yet: a prior, like the rest).
CLASS_WEIGHTS = {"ffma": 1, "fmul_fadd": 1, "ldg": 4, "stg": 4, "lds": 2, "sts": 2,
                 "local": 8, "bar": 4, "shfl": 2, "mufu": 4, "branch": 1, "other": 1,
                 "hmma": 4}
# The FMAs of one HMMA.16816 warp instruction (16 x 8 x 16) in FFMA warp
# instructions (32 each): a kernel's required work may be done by either.
HMMA_FFMA = 16 * 8 * 16 // 32
FEATURES = ["log_launches", "log_waves", "log_loop_warp_instructions",
            "log_straight_warp_instructions", "log_loop_instructions_per_ffma",
            "log_global_stores", "log_global_loads", "log_spill_bytes",
            "log_loop_local", "weighted_occupancy", "loop_bar_fraction",
            "loop_shared_fraction", "loop_shfl_fraction", "loop_mufu_fraction",
            "log_loop_trips", "log_max_threads", "hand_log_cycles", "loop_hmma_fraction"]


def occupancy(registers, threads, shared):
    """Resident warps per SM over 64 (same formula as scripts/ptx-check)."""
    warps = math.ceil(threads / 32)
    per_warp = math.ceil(max(registers, 1) * 32 / REGISTER_GRANULE) * REGISTER_GRANULE
    blocks = min(MAX_BLOCKS, MAX_WARPS // warps, REGISTERS // (per_warp * warps))
    if shared:
        blocks = min(blocks, SHARED // (shared + RESERVED_SHARED_PER_BLOCK))
    return blocks * warps / MAX_WARPS


def sites(kernels, launches):
    """Launch sites with their kernel's features, occupancy and waves."""
    result = []
    for launch in launches:
        kernel = kernels.get(launch["kernel"])
        if kernel is None or launch["blocks"] is None or launch["threads"] is None:
            raise ValueError(f"launch of {launch['kernel']} has an unknown size")
        occ = occupancy(kernel["registers"], launch["threads"], launch["shared_bytes"] or 0)
        warps = math.ceil(launch["threads"] / 32)
        per_sm = max(1, round(occ * MAX_WARPS / warps))
        result.append({**kernel, **launch, "occupancy": occ, "warps": warps,
                       "waves": math.ceil(launch["blocks"] / (SMS * per_sm))})
    return result


def count(kernel, key):
    """A class count; features recorded before a class existed have none."""
    return kernel.get(key, 0)


def total(kernel, where):
    return sum(count(kernel, f"{where}_{name}") for name in CLASS_WEIGHTS)


def weighted(kernel, where):
    return sum(weight * count(kernel, f"{where}_{name}") for name, weight in CLASS_WEIGHTS.items())


def loop_fma_work(kernel):
    """A kernel's loop FMAs in FFMA warp instructions: its FFMA, and its HMMA
    at the FMAs each does."""
    return count(kernel, "loop_ffma") + HMMA_FFMA * count(kernel, "loop_hmma")


def features(pipeline, fma_warp_instructions):
    """name -> value for the ridge model."""
    warp_count = [s["blocks"] * s["warps"] * s["times"] for s in pipeline]
    loop = sum(total(s, "loop") for s in pipeline) or 1
    ffma_kernels = [s for s in pipeline if loop_fma_work(s)]
    per_ffma = (sum(total(s, "loop") for s in ffma_kernels) /
                max(1, sum(loop_fma_work(s) for s in ffma_kernels))) if ffma_kernels else loop
    return {
        "log_launches": math.log(sum(s["times"] for s in pipeline)),
        "log_waves": math.log(sum(s["waves"] * s["times"] for s in pipeline)),
        "log_loop_warp_instructions": math.log1p(sum(
            w * total(s, "loop") for w, s in zip(warp_count, pipeline))),
        "log_straight_warp_instructions": math.log1p(sum(
            w * total(s, "outside") for w, s in zip(warp_count, pipeline))),
        "log_loop_instructions_per_ffma": math.log(per_ffma),
        "log_global_stores": math.log1p(sum(
            w * (s["loop_stg"] + s["outside_stg"]) for w, s in zip(warp_count, pipeline))),
        "log_global_loads": math.log1p(sum(
            w * (s["loop_ldg"] + s["outside_ldg"]) for w, s in zip(warp_count, pipeline))),
        "log_spill_bytes": math.log1p(max(s["spill_bytes"] for s in pipeline)),
        "log_loop_local": math.log1p(sum(s["loop_local"] for s in pipeline)),
        "weighted_occupancy": sum(w * s["occupancy"] for w, s in zip(warp_count, pipeline))
        / sum(warp_count),
        "loop_bar_fraction": sum(s["loop_bar"] for s in pipeline) / loop,
        "loop_shared_fraction": sum(s["loop_lds"] + s["loop_sts"] for s in pipeline) / loop,
        "loop_shfl_fraction": sum(s["loop_shfl"] for s in pipeline) / loop,
        "loop_mufu_fraction": sum(s["loop_mufu"] for s in pipeline) / loop,
        # Trips of the FFMA loops per thread if they do exactly the required FMAs.
        "log_loop_trips": math.log(fma_warp_instructions / max(1, sum(
            s["blocks"] * s["warps"] * s["times"] * loop_fma_work(s) for s in ffma_kernels))),
        "log_max_threads": math.log(max(s["threads"] for s in pipeline)),
        "hand_log_cycles": hand_estimate(pipeline, fma_warp_instructions),
        "loop_hmma_fraction": sum(count(s, "loop_hmma") for s in pipeline) / loop,
    }


def hand_estimate(pipeline, fma_warp_instructions):
    """Estimated issue cycles per SM, in log: the required FMAs are shared
    equally by the kernels with FFMA or HMMA in a loop (an HMMA counted as the
    HMMA_FFMA FFMA it replaces) and cost that loop's weighted instructions per
    FFMA; other kernels run their whole body once per warp.
    Low occupancy hides less latency, so cycles divide by occupancy's root."""
    ffma_kernels = [s for s in pipeline if loop_fma_work(s)]
    cycles = 0.0
    for s in pipeline:
        if s in ffma_kernels:
            warp_cycles = fma_warp_instructions / len(ffma_kernels) * weighted(s, "loop") \
                / loop_fma_work(s) + s["blocks"] * s["warps"] * weighted(s, "outside")
        else:
            warp_cycles = s["blocks"] * s["warps"] * (weighted(s, "loop") + weighted(s, "outside"))
        cycles += s["times"] * warp_cycles / SMS / math.sqrt(max(s["occupancy"], 1 / MAX_WARPS))
    return math.log(cycles)


def spearman(a, b):
    """Spearman rank correlation (average ranks for ties)."""
    def ranks(x):
        x = np.asarray(x, dtype=float)
        order = np.argsort(x, kind="stable")
        r = np.empty(len(x))
        r[order] = np.arange(len(x), dtype=float)
        for value in np.unique(x):
            tied = x == value
            r[tied] = r[tied].mean()
        return r
    ra, rb = ranks(a), ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return 0.0
    return float(np.corrcoef(ra, rb)[0, 1])


class Ridge:
    """Ridge regression on standardized features (the intercept is not penalized)."""

    def __init__(self, alpha):
        self.alpha = alpha

    def fit(self, x, y):
        x, y = np.asarray(x, float), np.asarray(y, float)
        self.mean, self.scale = x.mean(0), x.std(0)
        self.scale[self.scale == 0] = 1
        z = (x - self.mean) / self.scale
        self.intercept = y.mean()
        self.coef = np.linalg.solve(z.T @ z + self.alpha * np.eye(z.shape[1]),
                                    z.T @ (y - self.intercept))
        return self

    def predict(self, x):
        return (np.asarray(x, float) - self.mean) / self.scale @ self.coef + self.intercept


def cross_validated_spearman(x, y, alpha, folds, seed):
    """Mean Spearman over k folds of the training set only."""
    order = np.random.default_rng(seed).permutation(len(y))
    scores = []
    for k in range(folds):
        test = order[k::folds]
        train = np.setdiff1d(order, test)
        model = Ridge(alpha).fit(x[train], y[train])
        scores.append(spearman(model.predict(x[test]), y[test]))
    return float(np.mean(scores))
