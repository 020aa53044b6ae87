"""The report opens with the headline ratios and draws its charts.
usage: report_test.py PATH/TO/report.py"""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = sys.argv.pop(1) if len(sys.argv) > 1 else "scripts/report.py"
spec = importlib.util.spec_from_file_location("report", SCRIPT)
report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(report)


def row(impl, ms, threads=2, shape="B1 H8 Lq2048 Lk2048 D64"):
    return {"spec": "full.mha8.d64.f32", "shape": shape, "impl": impl, "threads": threads,
            "ms_median": ms, "ms_min": ms, "ms_max": ms, "gflops": 1.0, "pct_peak": 1.0,
            "speedup_vs_naive": 400.0 / ms}


TUNED = [row("naive", 400.0), row("online_avx2", 60.0), row("tuned", 40.0),
         row("torch_sdpa", 50.0), row("openblas_unfused", 70.0), row("Adams2019", 200.0),
         row("fused_avx512", 44.0)]
PRESETS_ON_GPU = [row("naive", 30.0, 0), row("online_cuda", 3.0, 0), row("torch_flash", 1.5, 0),
                  row("autoscheduler:Li2018", 20.0, 0)]


class ReportTest(unittest.TestCase):
    def test_categories_tell_ours_from_peers(self):
        self.assertEqual(report.category("tuned"), "attnforge tuned")
        self.assertEqual(report.category("online_avx2"), "attnforge presets")
        self.assertEqual(report.category("autoscheduler:Li2018"), "Halide autoschedulers")
        self.assertEqual(report.category("Mullapudi2016"), "Halide autoschedulers")
        self.assertEqual(report.category("torch_efficient"), "outside peers")
        self.assertEqual(report.category("cublas_unfused"), "outside peers")
        self.assertEqual(report.category("naive"), "naive baseline")

    def test_headline_compares_ours_with_the_fastest_of_each_kind(self):
        lines = report.headline(report.groups(TUNED + PRESETS_ON_GPU))
        self.assertEqual(len(lines), 4)
        self.assertEqual(lines[2], "| full.mha8.d64.f32, B1 H8 Lq2048 Lk2048 D64, 2 thr | tuned "
                         "| 40.000 | 1.25x torch_sdpa | 5.00x | 1.10x | 10.00x |")
        # Nothing tuned: ours is the fastest preset, and there is no preset to compare.
        self.assertEqual(lines[3], "| full.mha8.d64.f32, B1 H8 Lq2048 Lk2048 D64, GPU "
                         "| online_cuda | 3.000 | 0.50x torch_flash | 6.67x | – | 10.00x |")

    def test_every_reference_has_its_stated_target(self):
        refs = report.references(TUNED)
        mine = report.ours(TUNED)
        text = [f"{report.ratio(r, mine)} {label}{report.verdict(r, mine, t)}"
                for label, r, t in refs]
        self.assertEqual(text, [
            "1.25x torch_sdpa (target 1.2x: met)",
            "1.75x openblas_unfused (target 1.3x: met)",
            "5.00x best Halide autoscheduler (Adams2019) (target 4x: met)",
            "1.10x best preset (fused_avx512) (target 1.1x: met)",
            "10.00x naive baseline (target 20x: missed)",
        ])

    def test_the_page_starts_with_the_headline_and_draws_both_charts(self):
        with tempfile.TemporaryDirectory() as folder:
            bench = os.path.join(folder, "bench.json")
            with open(bench, "w", encoding="utf-8") as out:
                json.dump(TUNED + PRESETS_ON_GPU, out)
            subprocess.run([sys.executable, SCRIPT, "--bench", bench, "--out", folder],
                           check=True)
            with open(os.path.join(folder, "index.md"), encoding="utf-8") as page:
                lines = page.read().splitlines()
            self.assertTrue(lines[4].startswith("| case | ours |"))
            for chart in ("speedup.png", "peak.png"):
                self.assertGreater(os.path.getsize(os.path.join(folder, chart)), 10000)

    def test_paged_rows_show_their_time_against_the_contiguous_cache(self):
        shape = "B1 H32 Lq1 Lk8192 D128"
        contiguous = dict(row("decode_avx2", 7.0, shape=shape),
                          spec="causal.br.kpad.gqa32x8.d128.f32")
        paged = dict(row("decode_avx2", 9.1, shape=shape),
                     spec="causal.br.kpad.page16.gqa32x8.d128.f32", vs_contiguous=1.3)
        with tempfile.TemporaryDirectory() as folder:
            bench = os.path.join(folder, "bench.json")
            with open(bench, "w", encoding="utf-8") as out:
                json.dump([contiguous, paged, dict(paged, impl="naive", ms_median=300.0)], out)
            subprocess.run([sys.executable, SCRIPT, "--bench", bench, "--out", folder],
                           check=True)
            with open(os.path.join(folder, "index.md"), encoding="utf-8") as page:
                text = page.read()
        self.assertIn("| 9.100 |", text)
        self.assertIn("| vs naive | vs contiguous |", text)
        self.assertIn("| 44.0x | 1.30x |", text)
        self.assertNotIn("0.00x", text)  # rows timed apart (naive) have no ratio


if __name__ == "__main__":
    unittest.main()
