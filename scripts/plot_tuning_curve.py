#!/usr/bin/env python3
"""Plots the tuning curve (best so far against time) of every (spec, target,
shape bucket) in a tuning database, and says when half of the final gain over
the best preset was reached. Records are read as the database reads them: the
current generation of each group, and the newest record of each schedule.

usage: plot_tuning_curve.py DATABASE.jsonl OUT.png
"""
import json
import sys
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
            key = (record["spec"], record["bucket"], record["target"])
            groups.setdefault(key, []).append(record)
    return {key: current(records) for key, records in groups.items()}


def seconds(record, start):
    return (datetime.fromisoformat(record["time"].rstrip("Z")) - start).total_seconds()


def curve(records):
    """(times, best so far, best preset) over schedule records, in time order.
    As in the database, the newest record of a schedule stands for it, and
    once finalists were confirmed (measured again) only confirmed schedules
    compete: the curve ends at the confirmed best, which may lie above the
    search's luckiest timing."""
    records = sorted(records, key=lambda r: r["time"])  # stable: of equal times, file order
    start = datetime.fromisoformat(records[0]["time"].rstrip("Z"))
    standing, confirmed, presets = {}, set(), set()
    times, best, preset = [], [], None
    for r in records:
        if not isinstance(r["schedule"], dict):
            continue
        key = json.dumps(r["schedule"], sort_keys=True)
        standing[key] = r["ms_median"] if r["status"] == "ok" else None
        confirmed.discard(key)
        if r.get("confirmation") and r["status"] == "ok":
            confirmed.add(key)
        if r.get("strategy", "").startswith("preset:"):
            presets.add(key)
        contenders = {k: ms for k, ms in standing.items()
                      if ms is not None and (not confirmed or k in confirmed)}
        if not contenders:
            continue
        preset_ms = [ms for k, ms in contenders.items() if k in presets]
        preset = min(preset_ms) if preset_ms else None
        times.append(seconds(r, start))
        best.append(min(contenders.values()))
    return times, best, preset


def half_gain_time(times, best, preset):
    """First time the best so far holds half of the final gain over the best preset."""
    final_gain = preset / best[-1] - 1.0
    if final_gain <= 0:
        return None
    for t, ms in zip(times, best):
        if preset / ms - 1.0 >= final_gain / 2:
            return t
    return None


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = load(sys.argv[1])
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for (spec, bucket, _), records in sorted(groups.items()):
        times, best, preset = curve(records)
        if not times:
            continue
        label = f"{spec} {bucket}"
        (line,) = ax.step(times, best, where="post", label=label)
        if preset is not None:
            ax.axhline(preset, color=line.get_color(), linestyle=":", linewidth=1)
            half = half_gain_time(times, best, preset)
            gain = preset / best[-1]
            when = f"half of it at {half:.0f} s" if half is not None else "no gain"
            print(f"{label}: tuned {best[-1]:.2f} ms, {gain:.3f}x the best preset "
                  f"({preset:.2f} ms); {when} of {times[-1]:.0f} s")
    ax.set_xlabel("seconds since the first record (the reference run precedes it)")
    ax.set_ylabel("best so far (ms, median)")
    ax.set_title("Tuning curve (dotted: best preset)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
