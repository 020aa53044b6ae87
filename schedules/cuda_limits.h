// What a CUDA schedule asks of the GPU, worked out before compiling: the
// threads of a block and each thread's share of a tile, the shared memory a
// block holds and the registers a thread's accumulators take.
#pragma once

#include "schedule.h"
#include "spec/cuda_register_limit.h"

namespace attnforge::schedules {

struct CudaThreads {
  int x = 0, y = 0;         // threads per block along lanes and query rows
  int dims_per_thread = 0;  // head-dim elements per thread
  int keys_per_thread = 0;  // keys of a block per thread
  int rows_per_thread = 0;  // query rows per thread
};

CudaThreads cuda_threads(const Schedule& schedule, int head_dim);

// An online schedule whose block is one warp (gpu_threads 32 x 1): each lane
// keeps its head-dim slice of every row's running state in registers, as
// Halide stripes a block's register Func over gpu_lanes. CUDA only: OpenCL
// has no gpu_lanes.
bool cuda_warp_block(const Schedule& schedule);
constexpr int kCudaWarp = 32;

// The alignment in bytes a kernel needs of its Q, K and V rows (pointers and
// strides), 1 for none: online_rows loads them as 16-byte vectors.
int cuda_input_alignment(const Schedule& schedule);
constexpr int kCudaVectorBytes = 16;

// Floats the rows of a one-warp block's shared tiles are padded by (0 otherwise).
int cuda_shared_row_pad(const Schedule& schedule);

// Shared memory of one block in bytes (f32 intermediates).
int cuda_shared_bytes(const Schedule& schedule, int head_dim);

// f32 values one thread keeps in registers at its peak.
int cuda_register_values(const Schedule& schedule, int head_dim);

// Per streaming multiprocessor of an sm_80/sm_90 GPU: the most resident
// threads and blocks, its registers, and the shared memory blocks may use.
struct SmLimits {
  int threads = 2048;
  int blocks = 32;
  int registers = 65536;
  int shared_bytes = 164 * 1024;  // sm_80; sm_90 has 228 KiB
};

// Resident warps per SM over the most it holds (0..1) for a kernel of
// `threads` per block, `registers` per thread and `shared_bytes` per block.
double cuda_occupancy(int threads, int registers, int shared_bytes, const SmLimits& sm = {});

// The hard limits of every GPU the CUDA target supports (sm_80 and newer):
// launchable threads per block, static shared memory per block without
// opting in to more, and registers per thread.
constexpr int kCudaMaxThreadsPerBlock = 1024;
constexpr int kCudaMaxSharedBytes = 48 * 1024;
constexpr int kCudaMaxRegistersPerThread = kCudaRegisterLimit;
// Accumulators a thread may keep: half its registers, the rest for
// addresses, operands and the exp of the softmax.
constexpr int kCudaAccumulatorBudget = 128;
// online_rows keeps a row's state in registers, and the compiler loads a
// whole key block's K rows ahead of q.k. Assembled by ptxas under 255
// registers, 330 such values (D64, key blocks of 4) and 263 (D128, 1) do not
// spill; 392 (D128, 2) and 590 (D64, 8) do.
constexpr int kCudaRowBudget = 336;
// online_rows computes a key block's P.V this many head-dim elements at a
// time, each chunk merged into the state before the next: a row's registers
// then hold its state and one chunk, not a second head_dim of P.V (D128 fits).
constexpr int kCudaRowPvChunk = 4;
// Key splits of the forms that keep their state in shared memory or lanes:
// online_rows splits much further (decoding), a thread per split.
constexpr int kCudaBlockStateSplits = 8;
// Threads along the head dim and keys of the forms that share rows between threads.
constexpr int kCudaMinLaneThreads = 4;
// Floats each position-major staged row is padded by (bank-conflict-free copies).
constexpr int kCudaStagedRowPad = 4;
// online_mma's warps per block: each warp's query rows are independent, and
// the warps of a block share K and V rows through L1.
constexpr int kCudaMmaMaxWarps = 4;
// The values an online_mma lane keeps (cuda_register_values). Assembled by
// ptxas for sm_90 under 255 registers, causal specs: 200 (D64, two 16-row
// tiles, key blocks of 64; D96, two tiles, blocks of 32) do not spill; 248
// (D96, two tiles, 64; D128, two tiles, 32) do.
constexpr int kCudaMmaValueBudget = 224;

}  // namespace attnforge::schedules
