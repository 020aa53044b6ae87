"""The SASS histogram of the GPU cost model: loops found from backward
branches, instruction classes counted inside and outside them.
usage: sass_histogram_test.py SCRIPTS_DIR SASS_LISTING"""
import os
import sys
import unittest

SCRIPTS = sys.argv.pop(1) if len(sys.argv) > 2 else "scripts"
LISTING = sys.argv.pop(1) if len(sys.argv) > 1 else "tests/data/row_sum_sm90.sass"
sys.path.insert(0, os.path.abspath(SCRIPTS))
import launch_grid  # noqa: E402
import sass_histogram  # noqa: E402

# Two nested loops: .L_x_1 holds .L_x_2, then a forward branch and the trap.
NESTED = """\
.text.nested:
        /*0000*/                   MOV R0, RZ ;
.L_x_1:
        /*0010*/                   LDG.E R2, desc[UR4][R4.64] ;
.L_x_2:
        /*0020*/                   FFMA R3, R2, R2, R3 ;
        /*0030*/                   FFMA R6, R2, R3, R6 ;
        /*0040*/               @P1 BRA `(.L_x_2) ;
        /*0050*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0060*/               @P0 BRA `(.L_x_1) ;
        /*0070*/               @P2 BRA `(.L_x_3) ;
        /*0080*/                   STG.E desc[UR4][R4.64], R3 ;
.L_x_3:
        /*0090*/                   EXIT ;
.L_x_4:
        /*00a0*/                   BRA `(.L_x_4);
        /*00b0*/                   NOP;
"""


class RecordedListingTest(unittest.TestCase):
    """A row-sum kernel from ptxas 13.0 for sm_90: two single loops."""

    def setUp(self):
        with open(LISTING, encoding="utf-8") as listing:
            self.kernels = sass_histogram.histograms(listing.read())

    def test_one_kernel(self):
        self.assertEqual(list(self.kernels), ["_kernel_row_sum__2_s1_h_hb_block_id_y"])

    def test_loops_and_trap(self):
        h = self.kernels["_kernel_row_sum__2_s1_h_hb_block_id_y"]
        self.assertEqual(h["loops"], 2)  # the trailing self-branch is no loop
        self.assertEqual(h["max_depth"], 1)
        self.assertEqual(h["instructions"], 70)  # NOP padding left out

    def test_classes_in_loops(self):
        h = self.kernels["_kernel_row_sum__2_s1_h_hb_block_id_y"]
        self.assertEqual((h["loop_ldg"], h["loop_lds"], h["loop_fmul_fadd"], h["loop_branch"],
                          h["loop_other"]), (1, 1, 2, 2, 8))
        self.assertEqual((h["loop_sts"], h["loop_bar"], h["loop_stg"]), (0, 0, 0))

    def test_classes_outside(self):
        h = self.kernels["_kernel_row_sum__2_s1_h_hb_block_id_y"]
        self.assertEqual((h["outside_sts"], h["outside_bar"], h["outside_lds"], h["outside_ldg"],
                          h["outside_stg"], h["outside_branch"]), (2, 2, 1, 1, 1, 3))


class NestedLoopTest(unittest.TestCase):
    def test_depths(self):
        h = sass_histogram.histograms(NESTED)["nested"]
        self.assertEqual((h["loops"], h["max_depth"], h["instructions"]), (2, 2, 11))  # the trap counts, outside loops
        self.assertEqual((h["inner_ffma"], h["inner_branch"], h["inner_ldg"]), (2, 1, 0))
        self.assertEqual((h["loop_ffma"], h["loop_ldg"], h["loop_bar"], h["loop_branch"]),
                         (2, 1, 1, 2))
        self.assertEqual((h["outside_stg"], h["outside_branch"], h["outside_other"]), (1, 2, 2))


class LaunchGridTest(unittest.TestCase):
    STMT = """\
external_plus_metadata func k (q, k, v, scale, out) {
 let t1 = (q.extent.1 + 31)/32
 let t2 = q.extent.3*16
 for (k.s0.i, 0, min(k.extent.1, 2)) {
  let r = halide_cuda_run(cuda[0], "_kernel_a", t1, 1, t2, 16, max(2, 4), 1, 0 + (128*4), (void *)x)
 }
 let r2 = halide_cuda_run(cuda[0], "_kernel_b", t1, t1, 1, 32, 1, 1, 0, (void *)x)
}
"""

    def test_grid_from_shape(self):
        values = launch_grid.shape_values(2, 16, 16, 100, 50, 64)
        a, b = launch_grid.launches(self.STMT, values)
        self.assertEqual((a["kernel"], a["blocks"], a["threads"], a["shared_bytes"], a["times"]),
                         ("_kernel_a", 4 * 32, 64, 512, 2))
        self.assertEqual((b["kernel"], b["blocks"], b["threads"], b["times"]),
                         ("_kernel_b", 16, 32, 1))


if __name__ == "__main__":
    unittest.main()
