#pragma once

#include "attnforge/tensor.h"

namespace attnforge::runtime {

// A packed batch lies in [total, H, D] memory, so one head's K and V rows are
// H_kv x D elements apart. A power-of-two row stride then maps a key block's
// rows to a fraction of the L1 sets, and P.V's sweeps over the block miss L1
// (in bench/packed_batch: 11-13% slower than dense rows, 4% with rows padded
// off a power of two). A sequence whose keys are read often enough runs on
// dense copies of its K and V instead (4-5% then): each key is read by every
// query and every query head of its group, while the copy is one pass.
constexpr int64_t kStagedMinReadsPerKey = 256;

// Dense copies of a sequence's K and V, in memory from kernel_memory (kept
// per thread for the next call), or the views themselves where staging would
// not pay or its memory cannot be had.
class StagedKeysAndValues {
 public:
  StagedKeysAndValues(const TensorView& q, const TensorView& k, const TensorView& v);
  ~StagedKeysAndValues();
  StagedKeysAndValues(const StagedKeysAndValues&) = delete;
  StagedKeysAndValues& operator=(const StagedKeysAndValues&) = delete;

  TensorView k, v;

 private:
  void* memory_ = nullptr;
};

// Whether a view's elements lie row-major with no gaps.
bool is_dense(const TensorView& t);

// Whether two of a view's indices can reach one element (a stride of 0 on a
// dimension of extent above 1 broadcasts it); a dense copy would then be
// larger than the memory it copies.
bool has_broadcast(const TensorView& t);

// The same view over dense memory at `data`.
TensorView dense_view(const TensorView& t, void* data);

// Copies every element of `from` into `to`, of the same shape and type, a
// row at a time: either's outer strides may be anything, the innermost is 1
// (as validation requires of every view) or its extent 1.
void copy_elements(const TensorView& from, const TensorView& to);

}  // namespace attnforge::runtime
