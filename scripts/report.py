#!/usr/bin/env python3
"""Writes the attnforge report: report/index.md opens with the headline ratios
(ours against the fastest outside peer, Halide's autoschedulers, our presets
and the naive baseline), then a table per (spec, shape, threads) and two charts
made with matplotlib, horizontal bars sorted by time and coloured by category:
speedup over the naive baseline (log scale) and percent of the FMA peak.

usage: report.py --bench BENCH.json --out DIR [--curve CURVE.png]
                 [--command TEXT] [--machine TEXT]
"""
import argparse
import json
import os
import shutil
from collections import OrderedDict

AUTOSCHEDULERS = ("Adams2019", "Li2018", "Mullapudi2016", "Anderson2021")
OUTSIDE_PREFIXES = ("torch_", "openblas_", "cublas_")
# The categories the charts colour, in legend order.
CATEGORIES = OrderedDict([
    ("attnforge tuned", "#08519c"),
    ("attnforge presets", "#6baed6"),
    ("Halide autoschedulers", "#969696"),
    ("outside peers", "#e6550d"),
    ("naive baseline", "#252525"),
])
# Ratio targets, as 'reference / ours' times, where the project states one.
TARGETS = {"naive": 20.0, "openblas_unfused": 1.3, "torch_sdpa": 1.2, "autoscheduler": 4.0,
           "preset": 1.1}


# Ratio columns a table shows where one of its rows has the ratio: the JSON
# key and the column's label.
RATIO_COLUMNS = [("vs_contiguous", "vs contiguous"), ("vs_bf16", "vs bf16"),
                 ("vs_plain", "vs plain")]

def category(impl):
    if impl == "tuned":
        return "attnforge tuned"
    if impl == "naive":
        return "naive baseline"
    if impl.startswith("autoscheduler:") or impl in AUTOSCHEDULERS:
        return "Halide autoschedulers"
    if impl.startswith(OUTSIDE_PREFIXES):
        return "outside peers"
    return "attnforge presets"


def groups(rows):
    by = OrderedDict()
    for r in rows:
        by.setdefault((r["spec"], r["shape"], r["threads"]), []).append(r)
    return by


def case(spec, shape, threads, short=False):
    """A case's name; threads 0 marks a GPU run."""
    where = "GPU" if threads == 0 else f"{threads} {'thr' if short else 'threads'}"
    return f"{spec}, {shape}, {where}"


def fastest(rows, kind):
    found = [r for r in rows if category(r["impl"]) == kind]
    return min(found, key=lambda r: r["ms_median"]) if found else None


def ours(rows):
    """The tuned kernel, or the fastest preset where nothing was tuned."""
    return fastest(rows, "attnforge tuned") or fastest(rows, "attnforge presets")


def ratio(reference, mine):
    """'reference / ours' as text."""
    return f"{reference['ms_median'] / mine['ms_median']:.2f}x"


def verdict(reference, mine, target):
    """Whether the ratio meets the stated target, as text; empty without a target."""
    if target is None:
        return ""
    met = reference["ms_median"] / mine["ms_median"] >= target
    return f" (target {target:g}x: {'met' if met else 'missed'})"


def references(rows):
    """(label, row, target) for what ours is compared against, fastest peer first."""
    mine = ours(rows)
    out = []
    peers = sorted((r for r in rows if category(r["impl"]) == "outside peers"),
                   key=lambda r: r["ms_median"])
    for r in peers:
        out.append((r["impl"], r, TARGETS.get(r["impl"])))
    auto = fastest(rows, "Halide autoschedulers")
    if auto:
        out.append((f"best Halide autoscheduler ({auto['impl']})", auto, TARGETS["autoscheduler"]))
    preset = fastest(rows, "attnforge presets")
    if mine["impl"] == "tuned" and preset:
        out.append((f"best preset ({preset['impl']})", preset, TARGETS["preset"]))
    naive = fastest(rows, "naive baseline")
    if naive:
        out.append(("naive baseline", naive, TARGETS["naive"]))
    return out


def headline(by):
    """One table row per (spec, shape, threads): ours and how many times faster it is."""
    lines = ["| case | ours | median ms | vs fastest outside peer | vs best autoscheduler "
             "| vs best preset | vs naive |", "|---|---|---:|---:|---:|---:|---:|"]
    for (spec, shape, threads), rows in by.items():
        mine = ours(rows)
        if not mine:
            continue
        cells = []
        for kind in ("outside peers", "Halide autoschedulers", "attnforge presets",
                     "naive baseline"):
            other = fastest(rows, kind)
            if other and other is not mine:
                cells.append(f"{ratio(other, mine)} {other['impl']}" if kind == "outside peers"
                             else ratio(other, mine))
            else:
                cells.append("–")
        lines.append(f"| {case(spec, shape, threads, short=True)} | {mine['impl']} | "
                     f"{mine['ms_median']:.3f} | " + " | ".join(cells) + " |")
    return lines


def chart(by, key, xlabel, path, log):
    """One panel per case: horizontal bars sorted by time, fastest on top, coloured
    by category (ours tuned, our presets, Halide's autoschedulers, outside peers)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    heights = [0.8 + 0.24 * len(rows) for rows in by.values()]
    fig, axes = plt.subplots(len(by), 1, figsize=(9, sum(heights) + 0.6), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, ((spec, shape, threads), rows) in zip(axes[:, 0], by.items()):
        rows = sorted(rows, key=lambda r: r["ms_median"], reverse=True)  # fastest on top
        ys = range(len(rows))
        ax.barh(ys, [r[key] for r in rows], color=[CATEGORIES[category(r["impl"])] for r in rows])
        ax.set_yticks(list(ys))
        ax.set_yticklabels([r["impl"] for r in rows], fontsize=7)
        for y, r in zip(ys, rows):
            ax.annotate(f" {r[key]:.3g}", (r[key], y), va="center", fontsize=6)
        if log:
            ax.set_xscale("log")
        ax.set_title(case(spec, shape, threads), fontsize=8, loc="left")
        ax.grid(True, axis="x", alpha=0.3)
        ax.tick_params(axis="x", labelsize=7)
    axes[-1, 0].set_xlabel(xlabel)
    fig.legend(handles=[Patch(color=c, label=n) for n, c in CATEGORIES.items()], fontsize=7,
               loc="upper center", ncol=len(CATEGORIES), frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.5 / (sum(heights) + 0.6)))
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
          os.path.join(a.out, "speedup.png"), True)
    chart(by, "pct_peak", "% of the measured FMA peak", os.path.join(a.out, "peak.png"), False)
    lines = ["# attnforge report", "",
             "How many times faster ours is (the tuned kernel; where nothing was tuned, the "
             "fastest preset), as reference time over ours, measured in one run:", ""]
    lines += headline(by) + [""]
    if a.machine:
        lines += [f"Machine: {a.machine}", ""]
    if a.command:
        lines += ["Made by:", "", "```sh", a.command, "```", ""]
    lines += ["Every implementation's output was checked against the naive baseline's before "
              "it was timed. Times are medians of repeats (min and max alongside); GFLOP/s count "
              "the useful work of Q.K^T and P.V (masked pairs excluded); percent of peak is of "
              "an FMA loop measured in the same run at the same thread count. Where a table has "
              "% bw (decoding: at most 16 query rows, memory-bound), it is the bytes attention "
              "must read and write (an 8-bit cache's scales included) over the median time, as "
              "a percent of the read bandwidth of a probe timed in turns with the rows (the "
              "median of its runs). Where it has vs contiguous (a paged KV cache), it is "
              "the time over the same implementation's with a contiguous cache, the median of "
              "their ratios in the turns they were timed in together; vs bf16 (an 8-bit KV "
              "cache) likewise against the same spec with a bf16 cache, and vs plain (a softcap or "
              "a window given per call) against the spec without them.", ""]
    for (spec, shape, threads), group in by.items():
        lines += [f"## {case(spec, shape, threads)}", ""]
        mine = ours(group)
        for label, reference, target in references(group) if mine else []:
            lines.append(f"- {mine['impl']}: {ratio(reference, mine)} {label}"
                         + verdict(reference, mine, target))
        bandwidth = any(r.get("pct_bandwidth", 0) > 0 for r in group)
        ratios = [(key, label) for key, label in RATIO_COLUMNS
                  if any(r.get(key, 0) > 0 for r in group)]
        lines += ["", "| implementation | median ms | min–max ms | GFLOP/s | % peak | vs naive |"
                  + (" % bw |" if bandwidth else "") + "".join(f" {label} |" for _, label in ratios),
                  "|---|---:|---:|---:|---:|---:|" + ("---:|" if bandwidth else "")
                  + "---:|" * len(ratios)]
        for r in sorted(group, key=lambda r: r["ms_median"]):
            lines.append(f"| {r['impl']} | {r['ms_median']:.3f} | {r['ms_min']:.3f}–"
                         f"{r['ms_max']:.3f} | {r['gflops']:.1f} | {r['pct_peak']:.1f} | "
                         f"{r['speedup_vs_naive']:.1f}x |"
                         + (f" {r.get('pct_bandwidth', 0):.1f} |" if bandwidth else "")
                         + "".join(f" {r[key]:.2f}x |" if r.get(key, 0) > 0 else " – |"
                                   for key, _ in ratios))
        lines.append("")
    lines += ["## Charts", "", "![Speedup over the naive baseline](speedup.png)", "",
              "![Percent of the measured FMA peak](peak.png)", ""]
    if a.curve and os.path.exists(a.curve):
        shutil.copyfile(a.curve, os.path.join(a.out, "tuning_curve.png"))
        lines += ["## Tuning curve", "", "The best search timing so far against time; dotted: "
                  "the best preset; star: the confirmed best (the finalists measured again).", "",
                  "![Tuning curve](tuning_curve.png)", ""]
    with open(os.path.join(a.out, "index.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
