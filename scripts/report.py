#!/usr/bin/env python3
"""Writes the attnforge report: report/index.md with the benchmark table per
(spec, shape, threads), the ratios the targets are stated in, and two charts
made with matplotlib: speedup over the naive baseline (log scale) and percent
of the measured FMA peak, per implementation.

usage: report.py --bench BENCH.json --out DIR [--curve CURVE.png]
                 [--command TEXT] [--machine TEXT]
"""
import argparse
import json
import os
import shutil
from collections import OrderedDict

PEERS = ("naive", "tuned", "openblas_unfused", "torch_sdpa")
AUTOSCHEDULERS = ("Adams2019", "Li2018", "Mullapudi2016")


def groups(rows):
    by = OrderedDict()
    for r in rows:
        by.setdefault((r["spec"], r["shape"], r["threads"]), []).append(r)
    return by


def best_preset(rows):
    presets = [r for r in rows if r["impl"] not in PEERS + AUTOSCHEDULERS]
    return min(presets, key=lambda r: r["ms_median"]) if presets else None


def best_autoscheduler(rows):
    found = [r for r in rows if r["impl"] in AUTOSCHEDULERS]
    return min(found, key=lambda r: r["ms_median"]) if found else None


def ratios(rows):
    """Tuned against each reference, as 'reference / tuned' time ratios."""
    impl = {r["impl"]: r for r in rows}
    tuned = impl.get("tuned")
    if not tuned:
        return []
    out = []
    for label, other, target in (
        ("naive baseline", impl.get("naive"), 20.0),
        ("OpenBLAS unfused", impl.get("openblas_unfused"), 1.3),
        ("PyTorch SDPA", impl.get("torch_sdpa"), 1.2),
        ("best Halide autoscheduler", best_autoscheduler(rows), 4.0),
        ("best preset", best_preset(rows), 1.1),
    ):
        if other:
            ratio = other["ms_median"] / tuned["ms_median"]
            verdict = "met" if ratio >= target else "missed"
            out.append(f"{ratio:.2f}x {label} ({other['impl']}; target {target:g}x: {verdict})")
    return out


def chart(by, key, ylabel, title, path, log):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{spec}\n{shape}, {t} thr" for spec, shape, t in by]
    impls = []
    for rows in by.values():
        for r in rows:
            if r["impl"] not in impls:
                impls.append(r["impl"])
    width = 0.8 / max(1, len(impls))
    colors = plt.cm.tab20.colors  # one distinct color per implementation (up to 20)
    fig, ax = plt.subplots(figsize=(max(8, 2.2 * len(labels) + 3), 5))
    for n, impl in enumerate(impls):
        xs, ys = [], []
        for g, rows in enumerate(by.values()):
            for r in rows:
                if r["impl"] == impl:
                    xs.append(g + (n - len(impls) / 2 + 0.5) * width)
                    ys.append(r[key])
        ax.bar(xs, ys, width, label=impl, color=colors[n % len(colors)])
    if log:
        ax.set_yscale("log")
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7, ncol=2, bbox_to_anchor=(1.01, 1), loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bench", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--curve")
    p.add_argument("--command", default="")
    p.add_argument("--machine", default="")
    a = p.parse_args()
    with open(a.bench, encoding="utf-8") as f:
        rows = json.load(f)
    by = groups(rows)
    os.makedirs(a.out, exist_ok=True)
    chart(by, "speedup_vs_naive", "speedup over the naive baseline (log)",
          "Speedup over the naive baseline", os.path.join(a.out, "speedup.png"), True)
    chart(by, "pct_peak", "% of the measured FMA peak", "Percent of peak",
          os.path.join(a.out, "peak.png"), False)
    lines = ["# attnforge report", ""]
    if a.machine:
        lines += [f"Machine: {a.machine}", ""]
    if a.command:
        lines += ["Made by:", "", "```sh", a.command, "```", ""]
    lines += ["Every implementation's output was checked against the naive baseline's before "
              "it was timed. Times are medians of repeats (min and max alongside); GFLOP/s count "
              "the useful work of Q.K^T and P.V (masked pairs excluded); percent of peak is of "
              "an FMA loop measured in the same run at the same thread count. Where a table has "
              "% bw (decoding: at most 16 query rows, memory-bound), it is the bytes attention "
              "must read and write over the median time, as a percent of the read bandwidth "
              "measured in the same run.", ""]
    for (spec, shape, threads), group in by.items():
        lines += [f"## {spec}, {shape}, {threads} threads", ""]
        for ratio in ratios(group):
            lines.append(f"- tuned: {ratio}")
        bandwidth = any(r.get("pct_bandwidth", 0) > 0 for r in group)
        lines += ["", "| implementation | median ms | min–max ms | GFLOP/s | % peak | vs naive |"
                  + (" % bw |" if bandwidth else ""),
                  "|---|---:|---:|---:|---:|---:|" + ("---:|" if bandwidth else "")]
        for r in sorted(group, key=lambda r: r["ms_median"]):
            lines.append(f"| {r['impl']} | {r['ms_median']:.3f} | {r['ms_min']:.3f}–"
                         f"{r['ms_max']:.3f} | {r['gflops']:.1f} | {r['pct_peak']:.1f} | "
                         f"{r['speedup_vs_naive']:.1f}x |"
                         + (f" {r.get('pct_bandwidth', 0):.1f} |" if bandwidth else ""))
        lines.append("")
    lines += ["## Charts", "", "![Speedup over the naive baseline](speedup.png)", "",
              "![Percent of the measured FMA peak](peak.png)", ""]
    if a.curve and os.path.exists(a.curve):
        shutil.copyfile(a.curve, os.path.join(a.out, "tuning_curve.png"))
        lines += ["## Tuning curve", "", "Best so far against time; dotted: the best preset.", "",
                  "![Tuning curve](tuning_curve.png)", ""]
    with open(os.path.join(a.out, "index.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
