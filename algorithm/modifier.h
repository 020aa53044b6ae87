// A user's score and mask rule, compiled into attention kernels: FlexAttention's
// score_mod and mask_mod as Halide expressions. A modifier file includes only
// this header and defines one modifier:
//
//   #include "algorithm/modifier.h"
//   ATTNFORGE_MODIFIER(document, m) {
//     m.tensor("document", Halide::Int(32), {attnforge::ModifierExtent::keys,
//                                           attnforge::ModifierExtent::batch});
//     m.mask = [](const attnforge::ModifierIndex& at, const attnforge::ModifierTensors& t) {
//       return t("document")(at.query, at.batch) == t("document")(at.key, at.batch);
//     };
//   }
//
// Specs name it `.mod<name>_<hash>`; calls pass its tensors by name.
#pragma once

#include <Halide.h>

#include <functional>
#include <string>
#include <vector>

namespace attnforge {

// Where a logit lies: batch, query head, query row and key position (from 0,
// as the tensors number them), and the call's lengths.
struct ModifierIndex {
  Halide::Expr batch, head, query, key;
  Halide::Expr q_len, kv_len;
};

// What a modifier tensor's dimension runs over, innermost first: a size of
// the call, or a fixed size (ModifierDimension::size).
enum class ModifierExtent { batch, heads, queries, keys, fixed };

struct ModifierDimension {
  ModifierExtent extent;
  int size = 0;                                       // fixed only
  ModifierDimension(ModifierExtent e) : extent(e) {}  // NOLINT: {keys, batch} lists read best
  static ModifierDimension fixed_size(int n) {
    ModifierDimension d(ModifierExtent::fixed);
    d.size = n;
    return d;
  }
};

// Representative values of a tensor at an index (innermost first), which
// the tuner and the benchmark run on: say, documents of 512 positions.
using ModifierSample = std::function<double(const std::vector<int>& index)>;

// An extra input a modifier reads, passed by name with every call.
struct ModifierTensor {
  std::string name;                     // a lowercase letter, then lowercase letters, digits and _
  Halide::Type type;                    // 8-, 16- or 32-bit integers, or f32
  std::vector<ModifierDimension> dims;  // innermost first
  ModifierSample sample;                // empty: zeros
};

// A modifier's tensors by name, as Funcs clamped to their extents: reading
// past an edge (a tile's padding keys) reads the edge.
class ModifierTensors {
 public:
  virtual ~ModifierTensors() = default;
  virtual Halide::Func operator()(const std::string& name) const = 0;
};

struct Modifier {
  std::vector<ModifierTensor> tensors;
  // The scaled logit (after .softcap, before the spec's bias, ALiBi and
  // mask), f32 in and out. Empty: unchanged.
  std::function<Halide::Expr(const Halide::Expr& score, const ModifierIndex& at,
                             const ModifierTensors& tensors)>
      score;
  // Whether the query may see the key, with the spec's own mask. Empty: all.
  std::function<Halide::Expr(const ModifierIndex& at, const ModifierTensors& tensors)> mask;

  void tensor(std::string name, Halide::Type type, std::vector<ModifierDimension> dims,
              ModifierSample sample = {}) {
    tensors.push_back({std::move(name), type, std::move(dims), std::move(sample)});
  }
};

}  // namespace attnforge

// The entry point of a modifier file: defines the modifier `name` in `m`.
#define ATTNFORGE_MODIFIER(name, m)                                    \
  extern "C" void attnforge_modifier_##name(::attnforge::Modifier& m); \
  extern "C" void attnforge_modifier_##name(::attnforge::Modifier& m)
