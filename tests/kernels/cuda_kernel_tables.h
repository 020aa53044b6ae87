// Every AOT CUDA kernel set the tests link: naive and the CUDA presets.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "attnforge_materialized_cuda_table.h"
#include "attnforge_naive_cuda_table.h"
#include "attnforge_online_cuda_table.h"
#include "attnforge_online_mma_cuda_table.h"
#include "attnforge_online_rows_cuda_table.h"
#include "attnforge_online_rows_split_cuda_table.h"
#include "attnforge_online_split_cuda_table.h"
#include "attnforge_online_warp_cuda_table.h"
#include "attnforge_online_warp_split_cuda_table.h"

namespace attnforge::testing {

struct CudaKernel {
  std::string set;
  const char* spec;
  int (*argv_entry)(void** args);
};

// How a failing test names its kernel.
inline void PrintTo(const CudaKernel& kernel, std::ostream* out) {
  *out << kernel.set << " " << kernel.spec;
}

template <typename Table>
void add_table(std::vector<CudaKernel>& all, const std::string& set, const Table& table) {
  for (const auto& entry : table) all.push_back({set, entry.spec, entry.argv_entry});
}

inline std::vector<CudaKernel> all_cuda_kernels() {
  std::vector<CudaKernel> all;
  add_table(all, "naive", attnforge_naive_cuda_table);
  add_table(all, "online", attnforge_online_cuda_table);
  add_table(all, "online_split", attnforge_online_split_cuda_table);
  add_table(all, "online_warp", attnforge_online_warp_cuda_table);
  add_table(all, "online_warp_split", attnforge_online_warp_split_cuda_table);
  add_table(all, "materialized", attnforge_materialized_cuda_table);
  add_table(all, "online_rows", attnforge_online_rows_cuda_table);
  add_table(all, "online_rows_split", attnforge_online_rows_split_cuda_table);
  add_table(all, "online_mma", attnforge_online_mma_cuda_table);
  return all;
}

}  // namespace attnforge::testing
