#include "mma_online_form.h"

#include <array>
#include <limits>

#include "attention_terms.h"
#include "bf16_bits.h"
#include "mma_fragments.h"
#include "softmax_exp.h"
#include "tensor_core_calls.h"

namespace attnforge {

namespace {

using Halide::Expr;
using Halide::Func;
using Halide::FuncRef;
using Halide::RDom;
using Halide::Tuple;

// The 16 bits of a storage-type value.
Expr bits_of(const Expr& value) {
  return Halide::reinterpret(Halide::UInt(16), value);
}

// One mma word: `low` in bits 0-15, `high` in 16-31.
Expr pack(const Expr& low, const Expr& high) {
  return Halide::cast<uint32_t>(bits_of(low)) | (Halide::cast<uint32_t>(bits_of(high)) << 16);
}

// An f32 rounded to nearest even as the 16 bits of `storage` (f16 or bf16;
// bf16 on the integer bits, bf16_bits.h).
Expr storage_bits(const Expr& value, DType storage) {
  if (storage == DType::f16) return bits_of(Halide::cast(Halide::Float(16), value));
  return bf16_bits_of(value);
}

// The f32 value of the 16 bits of an f16 or bf16.
Expr f32_of_bits(const Expr& bits, DType storage) {
  if (storage == DType::f16) {
    return Halide::cast<float>(Halide::reinterpret(Halide::Float(16), bits));
  }
  return f32_of_bf16_bits(bits);
}

// Score tile n's column c as a key of its block (see the header).
Expr key_of_column(const Expr& tile, const Expr& column) {
  return tile / 4 * 32 + column / 2 * 8 + tile % 4 * 2 + column % 2;
}

Tuple tuple_of(const std::array<Expr, 4>& words) {
  return Tuple(words[0], words[1], words[2], words[3]);
}

std::array<Expr, 4> words_of(const FuncRef& ref) {
  return {ref[0], ref[1], ref[2], ref[3]};
}

// Word `word` (an Expr) of a Tuple of four.
Expr word_at(const Expr& word, const FuncRef& ref) {
  return Halide::mux(word, {ref[0], ref[1], ref[2], ref[3]});
}

class MmaOnlineBuilder {
 public:
  MmaOnlineBuilder(const AttentionSpec& spec, const AttentionInputs& in, const AttentionVars& v,
                   const MmaOnlineVars& m, const MmaTileShape& shape)
      : spec_(spec), in_(in), v_(v), m_(m), shape_(shape), terms_(spec, in) {
    f_.head_dim = spec.head_dim;
  }

  MmaOnlineFuncs build() {
    define_operands();
    define_scores();
    define_block_statistics();
    define_block_pv();
    define_state();
    define_output();
    return f_;
  }

 private:
  MmaInput input() const { return spec_.dtype == DType::bf16 ? MmaInput::bf16 : MmaInput::f16; }

  std::array<Expr, 4> mma(const std::array<Expr, 4>& a, const std::array<Expr, 2>& b,
                          const std::array<Expr, 4>& c) const {
    return shape_.emulated ? emulated_mma_m16n8k16(input(), m_.lane, a, b, c)
                           : mma_m16n8k16(input(), a, b, c);
  }
  Expr group_max(const Expr& value) const {
    return shape_.emulated ? emulated_lane_group_max(m_.lane, value) : lane_group_max(value);
  }
  Expr group_sum(const Expr& value) const {
    return shape_.emulated ? emulated_lane_group_sum(m_.lane, value) : lane_group_sum(value);
  }

  // Query row `half` of the lane's group in 16-row tile mi of the warp.
  Expr query_row(const Expr& half) const {
    return (m_.warp * shape_.warp_tiles + m_.mi) * 16 + half * 8 + m_.lane / 4;
  }
  Expr clamped_query(const Expr& i) const { return Halide::clamp(i, 0, in_.q_len - 1); }
  Expr clamped_key(const Expr& j) const { return Halide::clamp(j, 0, in_.kv_len - 1); }
  Expr block_key(const Expr& kb, const Expr& tile, const Expr& column) const {
    return kb * shape_.key_block + key_of_column(tile, column);
  }

  void define_operands() {
    const auto& l = m_.lane;
    const Expr kvh = terms_.kv_head(v_.h);
    // Q's A words: word x = 8 p + 4 half + w for pair p of steps, w = 2 s +
    // second (mma_fragments.h: step 2p + s passes words 2s and 2s + 1), so
    // a row half's four words of a pair of steps are adjacent: one load.
    const Expr steps = m_.word / 8, half = m_.word / 4 % 2, w = m_.word % 4;
    const Expr q_pair = mma_k_pair<Expr>(steps, l, w);
    const Expr i = clamped_query(query_row(half));
    f_.q_fragments(m_.word, l, m_.mi, m_.warp, v_.h, v_.b) =
        pack(in_.q(2 * q_pair, i, v_.h, v_.b), in_.q(2 * q_pair + 1, i, v_.h, v_.b));

    // K's B words: the lane's column g of score tile `tile` is one key row.
    const Expr k_pair = mma_k_pair<Expr>(m_.steps, l, m_.word);
    const Expr key = clamped_key(block_key(m_.kb, m_.tile, l / 4));
    f_.k_words(m_.word, l, m_.tile, m_.steps, m_.kb, v_.h, v_.b) =
        pack(in_.k(2 * k_pair, key, kvh, v_.b), in_.k(2 * k_pair + 1, key, kvh, v_.b));

    f_.v_pairs(m_.pair, v_.d, v_.h, v_.b) =
        pack(in_.v(v_.d, clamped_key(2 * m_.pair), v_.h, v_.b),
             in_.v(v_.d, clamped_key(2 * m_.pair + 1), v_.h, v_.b));
    // V^T's B words: column d = 8 tile + g, the lane's four pairs of keys.
    f_.v_words(m_.word, l, m_.tile, m_.steps, m_.kb, v_.h, v_.b) =
        f_.v_pairs(m_.kb * (shape_.key_block / 2) + mma_k_pair<Expr>(m_.steps, l, m_.word),
                   m_.tile * 8 + l / 4, kvh, v_.b);
  }

  // `chain`(lane, tile, mi, kb, warp, h, b, slot): a chain of mma over
  // `pairs` pairs of steps (2p + s) in two alternating slots, ending in slot
  // 0; `a`(p, s, second, half) and `b`(p, s, second) give a step's words.
  template <typename AWord, typename BWord>
  void define_mma_chain(Func& chain, RDom& steps, int pairs, const char* name, AWord a, BWord b) {
    steps = RDom({{0, 2}, {0, pairs}}, name);
    const Halide::RVar s = steps.x, p = steps.y;
    auto at = [&](const Expr& slot) {
      return chain(m_.lane, m_.tile, m_.mi, m_.kb, m_.warp, v_.h, v_.b, slot);
    };
    at(m_.slot) = Tuple(0.f, 0.f, 0.f, 0.f);
    at(1 - s) = tuple_of(mma({a(p, s, 0, 0), a(p, s, 0, 1), a(p, s, 1, 0), a(p, s, 1, 1)},
                             {b(p, s, 0), b(p, s, 1)}, words_of(at(s))));
  }

  void define_scores() {
    const auto& l = m_.lane;
    auto q_word = [&](const Expr& p, const Expr& s, int second, int half) {
      return f_.q_fragments(8 * p + 4 * half + 2 * s + second, l, m_.mi, m_.warp, v_.h, v_.b);
    };
    auto k_word = [&](const Expr& p, const Expr& s, int second) {
      return f_.k_words(2 * s + second, l, m_.tile, p, m_.kb, v_.h, v_.b);
    };
    define_mma_chain(f_.scores, f_.over_dim_steps, spec_.head_dim / 32, "over_dim_steps", q_word,
                     k_word);
  }

  // The biased, masked logit of result word e + 2 half of score tile `tile`.
  Expr logit(const Expr& word, const Expr& tile, const Expr& kb) const {
    const auto& l = m_.lane;
    const Expr raw = word_at(word, f_.scores(l, tile, m_.mi, kb, m_.warp, v_.h, v_.b, 0));
    const Expr i = query_row(word / 2);
    const Expr j = block_key(kb, tile, l % 4 * 2 + word % 2);
    const Expr value =
        terms_.masked_logit(raw * in_.scale, clamped_key(j), clamped_query(i), v_.h, v_.b);
    return Halide::select(j < in_.kv_len, value, kMaskedLogit);
  }

  void define_block_statistics() {
    const auto& l = m_.lane;
    const int tiles = shape_.key_block / 8;
    Expr lane_max;
    for (int tile = 0; tile < tiles; ++tile) {
      for (int e = 0; e < 2; ++e) {
        const Expr value = logit(2 * m_.half + e, tile, m_.kb);
        lane_max = lane_max.defined() ? Halide::max(lane_max, value) : value;
      }
    }
    f_.block_max(m_.half, l, m_.mi, m_.kb, m_.warp, v_.h, v_.b) = group_max(lane_max);

    // P words from the probabilities rounded to storage, and the row sum
    // of the rounded values: the weights P.V takes sum to the normalizer.
    auto rounded = [&](int e) {
      return storage_bits(softmax_exp(logit(2 * m_.half + e, m_.tile, m_.kb),
                                      f_.block_max(m_.half, l, m_.mi, m_.kb, m_.warp, v_.h, v_.b)),
                          spec_.dtype);
    };
    f_.p_words(m_.half, l, m_.tile, m_.mi, m_.kb, m_.warp, v_.h, v_.b) =
        Halide::cast<uint32_t>(rounded(0)) | (Halide::cast<uint32_t>(rounded(1)) << 16);
    Expr lane_sum = 0.f;
    for (int tile = 0; tile < tiles; ++tile) {
      const Expr word = f_.p_words(m_.half, l, tile, m_.mi, m_.kb, m_.warp, v_.h, v_.b);
      lane_sum += f32_of_bits(Halide::cast<uint16_t>(word), spec_.dtype) +
                  f32_of_bits(Halide::cast<uint16_t>(word >> 16), spec_.dtype);
    }
    f_.block_sum(m_.half, l, m_.mi, m_.kb, m_.warp, v_.h, v_.b) = lane_sum;
  }

  void define_block_pv() {
    const auto& l = m_.lane;
    // Step 2p + s's A words come from score tiles 4p + 2s (second 0) and
    // 4p + 2s + 1 (second 1), where the lane's keys are its V^T words 2s + second.
    auto p_word = [&](const Expr& p, const Expr& s, int second, int half) {
      return f_.p_words(half, l, 4 * p + 2 * s + second, m_.mi, m_.kb, m_.warp, v_.h, v_.b);
    };
    auto v_word = [&](const Expr& p, const Expr& s, int second) {
      return f_.v_words(2 * s + second, l, m_.tile, p, m_.kb, v_.h, v_.b);
    };
    define_mma_chain(f_.block_pv, f_.over_key_steps, shape_.key_block / 32, "over_key_steps",
                     p_word, v_word);
  }

  // The key blocks [begin, end) that the warp's rows can see.
  void skip_masked_blocks(const Expr& block) {
    const int rows = 16 * shape_.warp_tiles, keys = shape_.key_block;
    const Expr first = m_.warp * rows;
    const Expr last = Halide::min(first + rows, in_.q_len) - 1;
    Expr begin, end;
    if (shape_.skip_at_any_length) {
      begin = terms_.key_range_begin_any_length(first);
      end = terms_.key_range_end_any_length(last);
    } else {
      begin = terms_.key_range_begin(first, v_.b);
      end = terms_.key_range_end(last, v_.b);
    }
    f_.over_blocks.where(block >= begin / keys && block * keys < end);
  }

  // The state's update runs over (tile, key block): the tile is a
  // reduction dimension, so that every tile may read the stats tile, which
  // comes last. It updates in place: no extern call reads the state (the
  // mma reads block_pv), so Halide orders the Tuple's reads before its stores.
  void define_state() {
    const auto& l = m_.lane;
    const int stats = f_.stats_tile(), keys = shape_.key_block;
    f_.over_blocks = RDom({{0, stats + 1}, {0, (in_.kv_len + keys - 1) / keys}}, "over_blocks");
    const Halide::RVar tile = f_.over_blocks.x, kb = f_.over_blocks.y;
    if (shape_.skip_masked_blocks && (spec_.mask != PositionMask::none || spec_.key_padding)) {
      skip_masked_blocks(kb);
    }
    auto at = [&](const Expr& tile) { return f_.state(l, tile, m_.mi, m_.warp, v_.h, v_.b); };
    f_.state(l, m_.tile, m_.mi, m_.warp, v_.h, v_.b) = Halide::select(
        m_.tile == stats, Tuple(kMaskedLogit, kMaskedLogit, 0.f, 0.f), Tuple(0.f, 0.f, 0.f, 0.f));
    // Old and new maxima per row half; the block's P.V and sum scale by beta.
    std::array<Expr, 2> alpha, beta, new_max, new_sum;
    for (int half = 0; half < 2; ++half) {
      const Expr old_max = at(stats)[half];
      const Expr block = f_.block_max(half, l, m_.mi, kb, m_.warp, v_.h, v_.b);
      new_max[half] = Halide::max(old_max, block);
      alpha[half] = softmax_exp(old_max, new_max[half]);
      beta[half] = softmax_exp(block, new_max[half]);
      new_sum[half] = at(stats)[2 + half] * alpha[half] +
                      f_.block_sum(half, l, m_.mi, kb, m_.warp, v_.h, v_.b) * beta[half];
    }
    const FuncRef pv =
        f_.block_pv(l, Halide::min(tile, stats - 1), m_.mi, kb, m_.warp, v_.h, v_.b, 0);
    std::array<Expr, 4> accumulators;
    for (int word = 0; word < 4; ++word) {
      accumulators[word] = at(tile)[word] * alpha[word / 2] + pv[word] * beta[word / 2];
    }
    at(tile) = Halide::select(tile == stats, Tuple(new_max[0], new_max[1], new_sum[0], new_sum[1]),
                              tuple_of(accumulators));
  }

  void define_output() {
    const auto& l = m_.lane;
    const int stats = f_.stats_tile();
    const FuncRef final_state = f_.state(l, m_.tile, m_.mi, m_.warp, v_.h, v_.b);
    const FuncRef final_stats = f_.state(l, stats, m_.mi, m_.warp, v_.h, v_.b);
    const Expr half = m_.word / 2;
    const Expr row_max = Halide::mux(half, {final_stats[0], final_stats[1]});
    const Expr row_sum = group_sum(Halide::mux(half, {final_stats[2], final_stats[3]}));
    const Expr has_keys = AttentionTerms::row_has_keys(row_max);
    const Expr normalized =
        Halide::select(has_keys, word_at(m_.word, final_state) * (1.f / row_sum), 0.f);
    // With .lse, the stats tile's words e + 2 half hold row half's
    // log-sum-exp, of the P values as rounded for P.V (so the backward's P
    // matches this output): shared memory grows by one tile, not a copy.
    if (spec_.return_lse) {
      const Expr lse = Halide::select(has_keys, row_max + Halide::log(row_sum),
                                      std::numeric_limits<float>::infinity());
      f_.lane_output(m_.word, l, m_.tile, m_.mi, m_.warp, v_.h, v_.b) =
          Halide::select(m_.tile == stats, lse, normalized);
    } else {
      f_.lane_output(m_.word, l, m_.tile, m_.mi, m_.warp, v_.h, v_.b) = normalized;
    }
    // Lane 4g + t holds d = 8 tile + 2t + e of rows g + 8 half: word e + 2 half.
    const Expr d = v_.d, i = v_.i;
    const int rows = 16 * shape_.warp_tiles;
    const Expr mi = i / 16 % shape_.warp_tiles, warp = i / rows, row_half = i % 16 / 8;
    const Expr value =
        f_.lane_output(d % 2 + row_half * 2, i % 8 * 4 + d / 2 % 4, d / 8, mi, warp, v_.h, v_.b);
    const Halide::Type type = shape_.storage_bits ? Halide::UInt(16) : terms_.storage_type();
    const Expr stored = Halide::reinterpret(type, storage_bits(value, spec_.dtype));
    if (spec_.return_lse) {
      const Expr lse = f_.lane_output(row_half * 2, i % 8 * 4, stats, mi, warp, v_.h, v_.b);
      f_.output(d, i, v_.h, v_.b) = Tuple(stored, lse);
    } else {
      f_.output(d, i, v_.h, v_.b) = stored;
    }
  }

  AttentionSpec spec_;
  AttentionInputs in_;
  AttentionVars v_;
  MmaOnlineVars m_;
  MmaTileShape shape_;
  AttentionTerms terms_;
  MmaOnlineFuncs f_;
};

}  // namespace

MmaOnlineFuncs build_mma_online(const AttentionSpec& spec, const AttentionInputs& inputs,
                                const AttentionVars& v, const MmaOnlineVars& m,
                                const MmaTileShape& shape) {
  return MmaOnlineBuilder(spec, inputs, v, m, shape).build();
}

}  // namespace attnforge
