"""scripts/check-includes passes on the repository and fails on an include
that points up the library graph, on one of the runtime's private headers and
on a folder the graph does not name.
usage: check_includes_test.py PATH/TO/check-includes REPOSITORY"""
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPT, REPOSITORY = (Path(a) for a in sys.argv[1:3]) if len(sys.argv) > 2 else (
    Path("scripts/check-includes"), Path("."))
del sys.argv[1:3]


def run(root):
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(root)], capture_output=True,
                          text=True)


class CheckIncludesTest(unittest.TestCase):
    def setUp(self):
        self.tree = Path(tempfile.mkdtemp())
        (self.tree / "scripts").mkdir()
        shutil.copy(REPOSITORY / "scripts/library_graph.txt", self.tree / "scripts")
        self.write("spec/attention_spec.h", "#include <string>\n")
        self.write("schedules/schedule.h", '#include "spec/attention_spec.h"\n')
        self.write("bench/timing.cpp", '#include "schedules/schedule.h"\n#include "attnforge/tensor.h"\n')

    def tearDown(self):
        shutil.rmtree(self.tree)

    def write(self, path, text):
        (self.tree / path).parent.mkdir(parents=True, exist_ok=True)
        (self.tree / path).write_text(text)

    def test_the_repository_follows_its_graph(self):
        result = run(REPOSITORY)
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_includes_down_the_graph_pass(self):
        result = run(self.tree)
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_an_upward_include_fails_naming_file_line_and_folders(self):
        self.write("spec/key_range.h", '#pragma once\n#include "schedules/schedule.h"\n')
        result = run(self.tree)
        self.assertEqual(result.returncode, 1)
        self.assertIn("spec/key_range.h:2: spec includes schedules/schedule.h from schedules, above it",
                      result.stderr)

    def test_the_runtime_private_headers_are_the_runtime_and_tests_only(self):
        self.write("bench/kernel_memory.cpp", '#include "runtime/src/halide_memory.h"\n')
        self.write("tests/runtime/packed_batch_test.cpp", '#include "runtime/src/packed_staging.h"\n')
        result = run(self.tree)
        self.assertEqual(result.returncode, 1)
        self.assertIn("bench/kernel_memory.cpp:1: includes the runtime's private", result.stderr)
        self.assertNotIn("tests/runtime", result.stderr)

    def test_a_folder_outside_the_graph_fails(self):
        self.write("misc/helper.cpp", '#include "spec/attention_spec.h"\n')
        result = run(self.tree)
        self.assertEqual(result.returncode, 1)
        self.assertIn("misc/helper.cpp: its folder is not in the library graph", result.stderr)


if __name__ == "__main__":
    unittest.main()
