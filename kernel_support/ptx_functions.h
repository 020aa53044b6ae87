// Tensor-core instructions for Halide 21 CUDA kernels, which cannot emit
// them. A kernel calls one of the functions below as a pure extern call;
// Halide compiles it to a PTX call of an undefined `.extern .func`.
// link_ptx_functions replaces each such call with the instruction inline,
// before the PTX is assembled or loaded. ptxas does not inline a `.func`
// (it stays a CALL), so the bodies go in at the call sites.
//
// mma.m16n8k16 gives each lane four f32 results; a call returns at most 64
// bits. A kernel therefore calls the `_lo` function (results 0 and 1, packed
// as two f32 bit patterns) and the `_hi` function (2 and 3) with the same
// arguments; the two become one mma when no argument changes between them.
//
// Arguments of every mma function, each 32 bits: the A fragment (four f16 or
// bf16 pairs), the B fragment (two pairs), the C fragment (four f32 bit
// patterns), in the lane layout PTX documents for mma.m16n8k16 .row.col.
//
// The lane-group functions reduce an f32 (passed and returned as its 32-bit
// pattern) over the 4 lanes 4g to 4g + 3 of a warp, the lanes that hold one
// row of an mma result: two butterfly shuffles, each followed by the
// combining instruction, give every lane of the group the same result.
#pragma once

#include <string>
#include <vector>

namespace attnforge {

struct PtxFunction {
  const char* name;         // the extern function the kernel calls
  const char* instruction;  // the PTX instruction its call stands for
  int first_result;         // which of the instruction's four results come back: 0 or 2
};

// Every mma function link_ptx_functions knows.
const std::vector<PtxFunction>& ptx_functions();

struct PtxLaneGroupFunction {
  const char* name;     // the extern function the kernel calls
  const char* combine;  // the instruction that joins two lanes' values: max.f32 or add.f32
};

// Every lane-group function link_ptx_functions knows.
const std::vector<PtxLaneGroupFunction>& ptx_lane_group_functions();

// `ptx` with every call to a known function replaced by its instruction and
// the functions' declarations removed. Text without such calls comes back
// unchanged. Throws std::invalid_argument naming the function when a call
// does not have the form Halide's NVPTX back end gives it.
std::string link_ptx_functions(const std::string& ptx);

}  // namespace attnforge
