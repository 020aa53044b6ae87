"""The tuning curve script: which records make a curve, and when half of the
gain was reached. usage: plot_tuning_curve_test.py PATH/TO/plot_tuning_curve.py"""
import importlib.util
import json
import os
import sys
import tempfile
import unittest

SCRIPT = sys.argv.pop(1) if len(sys.argv) > 1 else "scripts/plot_tuning_curve.py"
spec = importlib.util.spec_from_file_location("plot_tuning_curve", SCRIPT)
plot = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plot)


def record(version, time, ms, strategy="evolutionary", status="ok", tile=16, confirmation=False):
    return {"spec": "full.mha8.d64.f32", "bucket": "b1.q2048.k2048", "target": "host",
            "schedule": {"form": "fused", "query_tile": tile}, "status": status,
            "ms_median": ms, "strategy": strategy, "attnforge_version": version,
            "halide_version": "21.0.0", "time": time, "confirmation": confirmation}


class TuningCurveTest(unittest.TestCase):
    def load(self, records, torn_tail=""):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "db.jsonl")
            with open(path, "w", encoding="utf-8") as out:
                out.writelines(json.dumps(r) + "\n" for r in records)
                out.write(torn_tail)
            groups = plot.load(path)
        self.assertEqual(len(groups), 1)
        return next(iter(groups.values()))

    def test_a_newer_generation_replaces_the_older_curve(self):
        records = self.load([
            record("0.1.0", "2026-01-01T10:00:00Z", 50.0, "preset:a", tile=64),
            record("0.1.0", "2026-01-01T10:01:00Z", 30.0),  # older kernels: not this curve
            record("0.2.0", "2026-02-01T10:00:00Z", 60.0, "preset:a", tile=64),
            record("0.2.0", "2026-02-01T10:00:30Z", 50.0, tile=32),
            record("0.2.0", "2026-02-01T10:02:00Z", 40.0, tile=16),
        ], torn_tail='{"spec": "full.mha8')
        c = plot.curve(records)
        self.assertEqual(c.times, [0.0, 30.0, 120.0])
        self.assertEqual(c.best, [60.0, 50.0, 40.0])
        self.assertEqual(c.preset, 60.0)
        self.assertIsNone(c.confirmed)
        # Final gain 0.5; 60/50 - 1 = 0.2 is under half of it, 60/40 - 1 reaches it.
        self.assertEqual(plot.half_gain_time(c), 120.0)

    def test_estimates_are_a_curve_apart_from_measurements(self):
        estimate = record("0.2.0", "2026-02-01T10:00:00Z", 10.0)
        estimate["estimate"] = True
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "db.jsonl")
            with open(path, "w", encoding="utf-8") as out:
                for r in [record("0.2.0", "2026-02-01T10:00:30Z", 50.0), estimate]:
                    out.write(json.dumps(r) + "\n")
            groups = plot.load(path)
        self.assertEqual(len(groups), 2)
        by_kind = {key[3]: plot.curve(records) for key, records in groups.items()}
        self.assertEqual(by_kind[False].best, [50.0])
        self.assertEqual(by_kind[True].best, [10.0])

    def test_a_generation_with_only_failures_keeps_the_older_curve(self):
        records = self.load([
            record("0.1.0", "2026-01-01T10:00:00Z", 50.0, "preset:a", tile=64),
            record("0.1.0", "2026-01-01T10:00:20Z", 25.0),
            record("0.2.0", "2026-02-01T10:00:00Z", 0.0, status="crashed"),
        ])
        c = plot.curve(records)
        self.assertEqual(c.times, [0.0, 20.0])
        self.assertEqual(c.best, [50.0, 25.0])
        self.assertEqual(plot.half_gain_time(c), 20.0)

    def test_confirmations_are_a_marker_apart_from_the_search_line(self):
        # A lucky search timing and a disturbed preset, both measured again at the
        # end. The line keeps the search's best and never rises; the confirmed
        # best is the tuning result, and the preset's confirmed figure is its own.
        records = self.load([
            record("0.1.0", "2026-01-01T10:00:00Z", 60.0, "preset:a", tile=64),
            record("0.1.0", "2026-01-01T10:00:10Z", 48.0, tile=32),
            record("0.1.0", "2026-01-01T10:00:20Z", 30.0, tile=16),
            record("0.1.0", "2026-01-01T10:00:30Z", 40.0, tile=8),  # never confirmed
            record("0.1.0", "2026-01-01T10:03:00Z", 45.0, tile=16, confirmation=True),
            record("0.1.0", "2026-01-01T10:03:00Z", 47.0, tile=32, confirmation=True),
            record("0.1.0", "2026-01-01T10:03:00Z", 50.0, "preset:a", tile=64,
                   confirmation=True),
        ])
        c = plot.curve(records)
        self.assertEqual(c.times, [0.0, 10.0, 20.0, 30.0])
        self.assertEqual(c.best, [60.0, 48.0, 30.0, 30.0])
        self.assertEqual(c.preset, 60.0)
        self.assertEqual(c.confirmed, (180.0, 45.0))
        self.assertEqual(c.confirmed_preset, 50.0)
        # The result is confirmed against confirmed: 50 / 45.
        self.assertIn("tuned 45.00 ms, 1.111x the best preset (50.00 ms)", plot.summary("g", c))
        # Search against search: final gain 60/30 - 1 = 1; 60/48 - 1 = 0.25 is under half.
        self.assertEqual(plot.half_gain_time(c), 20.0)

    def test_a_slower_measurement_never_raises_the_line(self):
        records = self.load([
            record("0.1.0", "2026-01-01T10:00:00Z", 60.0, "preset:a", tile=64),
            record("0.1.0", "2026-01-01T10:00:10Z", 40.0, tile=32),
            record("0.1.0", "2026-01-01T10:00:20Z", 55.0, tile=32),  # same schedule, disturbed
        ])
        self.assertEqual(plot.curve(records).best, [60.0, 40.0, 40.0])

    def test_no_gain_over_the_preset_has_no_half_time(self):
        records = self.load([
            record("0.1.0", "2026-01-01T10:00:00Z", 40.0, "preset:a", tile=64),
            record("0.1.0", "2026-01-01T10:00:20Z", 45.0),
        ])
        self.assertIsNone(plot.half_gain_time(plot.curve(records)))


if __name__ == "__main__":
    unittest.main()
