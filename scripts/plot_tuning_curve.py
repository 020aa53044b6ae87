#!/usr/bin/env python3
"""Plots the tuning curve (best search timing so far against time, which never
rises, and the confirmed best as its own marker) of every (spec, target, shape
bucket) in a tuning database, and says when half of the final gain over the
best preset was reached. Of each group, the current generation is drawn, as
the database reads it. A cost model's estimates (a GPU tuned without one)
are a curve of their own, never mixed with measurements.

usage: plot_tuning_curve.py DATABASE.jsonl OUT.png
"""
import json
import sys
from collections import namedtuple
from datetime import datetime


def generation(record):
    return (record.get("attnforge_version"), record.get("halide_version"))


def current(records):
    """The records of the group's current generation, as the database loader
    decides it: that of the newest correct record (of equal times, the later
    line). Older kernels' timings would mix two tuning runs in one curve."""
    newest = None
    for r in records:
        if r["status"] == "ok" and (newest is None or r["time"] >= newest["time"]):
            newest = r
    if newest is None:
        return records
    return [r for r in records if generation(r) == generation(newest)]


def load(path):
    groups = {}
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn line, as the database loader skips it
            key = (record["spec"], record["bucket"], record["target"],
                   bool(record.get("estimate")))
            groups.setdefault(key, []).append(record)
    return {key: current(records) for key, records in groups.items()}


def seconds(record, start):
    return (datetime.fromisoformat(record["time"].rstrip("Z")) - start).total_seconds()


Curve = namedtuple("Curve", "times best preset confirmed confirmed_preset")
Curve.__doc__ = """A tuning curve. times, best: the lowest search timing so far, which
never rises; preset: the best preset's search timing. Finalists measured again
at the end (confirmations) stand apart, because a search's luckiest timing may
lie below them: confirmed is the confirmed best as (seconds, ms), the tuning
result, and confirmed_preset the best preset's confirmed ms; None if none."""


def curve(records):
    """The Curve of a group's schedule records, in time order."""
    records = sorted(records, key=lambda r: r["time"])  # stable: of equal times, file order
    start = datetime.fromisoformat(records[0]["time"].rstrip("Z"))
    times, best = [], []
    preset, confirmed, confirmed_preset = None, None, None
    for r in records:
        if not isinstance(r["schedule"], dict) or r["status"] != "ok":
            continue
        ms, at = r["ms_median"], seconds(r, start)
        is_preset = r.get("strategy", "").startswith("preset:")
        if r.get("confirmation"):
            if confirmed is None or ms < confirmed[1]:
                confirmed = (at, ms)
            if is_preset:
                confirmed_preset = lowest(confirmed_preset, ms)
            continue
        if is_preset:
            preset = lowest(preset, ms)
        times.append(at)
        best.append(lowest(best[-1] if best else None, ms))
    return Curve(times, best, preset, confirmed, confirmed_preset)


def lowest(a, b):
    return b if a is None else min(a, b)


def half_gain_time(c):
    """First time the search's best so far holds half of its final gain over the
    best preset, both search timings so that one measurement kind is compared."""
    final_gain = c.preset / c.best[-1] - 1.0
    if final_gain <= 0:
        return None
    for t, ms in zip(c.times, c.best):
        if c.preset / ms - 1.0 >= final_gain / 2:
            return t
    return None


def summary(label, c):
    """The tuning result against the best preset, confirmed figures where there are."""
    tuned = c.confirmed[1] if c.confirmed else c.best[-1]
    preset = c.confirmed_preset if c.confirmed_preset is not None else c.preset
    line = f"{label}: tuned {tuned:.2f} ms"
    if preset is None:
        return line
    half = half_gain_time(c)
    when = f"half of the search's gain at {half:.0f} s" if half is not None else "no gain"
    end = c.confirmed[0] if c.confirmed else c.times[-1]
    return (f"{line}, {preset / tuned:.3f}x the best preset ({preset:.2f} ms); "
            f"{when} of {end:.0f} s")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = load(sys.argv[1])
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for (spec, bucket, _, estimate), records in sorted(groups.items()):
        c = curve(records)
        if not c.times:
            continue
        label = f"{spec} {bucket}" + (" (estimated, never run)" if estimate else "")
        (line,) = ax.step(c.times, c.best, where="post", label=label)
        color = line.get_color()
        if c.preset is not None:
            ax.axhline(c.preset, color=color, linestyle=":", linewidth=1)
        if c.confirmed:
            ax.plot(*c.confirmed, marker="*", markersize=12, linestyle="none", color=color,
                    label=f"{label}: confirmed best")
            if c.confirmed_preset is not None:
                ax.plot(c.confirmed[0], c.confirmed_preset, marker="o", fillstyle="none",
                        linestyle="none", color=color)
        print(summary(label, c))
    ax.set_xlabel("seconds since the first record (the reference run precedes it)")
    ax.set_ylabel("best so far (ms, median)")
    ax.set_title("Tuning curve (line: best search timing so far; dotted: best preset;\n"
                 "star: confirmed best; circle: best preset confirmed)", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
