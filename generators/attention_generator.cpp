// The one attention Generator. Its GeneratorParams are the spec as its
// canonical string (`spec`), the schedule to apply (`schedule`: a preset name,
// schedule JSON, "naive" or "auto") and the shape autoschedulers plan for.
// Its arguments are spec/kernel_arguments.h's kernel_argument_table, in that order.
#include <Halide.h>

#include <array>
#include <utility>
#include <vector>

#include "algorithm/attention_inputs.h"
#include "algorithm/attention_terms.h"
#include "algorithm/bf16_bits.h"
#include "algorithm/materialized_form.h"
#include "algorithm/modifier_key_ranges.h"
#include "algorithm/modifier_registry.h"
#include "algorithm/quantized_cache.h"
#include "algorithm/row_prefetch.h"
#include "modifier_inputs.h"
#include "schedules/apply_cuda.h"
#include "schedules/apply_mma.h"
#include "schedules/apply_x86.h"
#include "schedules/attention_pipeline.h"
#include "schedules/cuda_limits.h"
#include "schedules/naive_schedule.h"
#include "schedules/prefetch_lines.h"
#include "schedules/schedule_check.h"
#include "schedules/schedule_choice.h"
#include "schedules/space.h"
#include "score_inputs.h"
#include "spec/attention_spec.h"
#include "spec/kernel_arguments.h"

namespace attnforge {
namespace {

using Halide::Buffer;
using Halide::Expr;
using Halide::GeneratorInput;
using Halide::GeneratorOutput;
using Halide::GeneratorParam;

class AttentionGenerator : public Halide::Generator<AttentionGenerator> {
 public:
  // The spec as its canonical string (spec/attention_spec.h).
  GeneratorParam<std::string> spec{"spec", ""};
  GeneratorParam<std::string> schedule{"schedule", "naive"};
  // The shape autoschedulers plan for.
  GeneratorParam<int> estimate_batch{"estimate_batch", 1};
  GeneratorParam<int> estimate_q_len{"estimate_q_len", 2048};
  GeneratorParam<int> estimate_kv_len{"estimate_kv_len", 2048};

  void configure() {
    spec_ = resolve_spec();
    for_each_kernel_argument(spec_, [this](const KernelArgumentSlot& slot) { declare(slot); });
  }

  // One argument, in the table's order.
  void declare(const KernelArgumentSlot& slot) {
    const Halide::Type storage =
        storage_as_bits() ? Halide::UInt(16) : storage_type_of(spec_.dtype);
    const Halide::Type cache(argument_halide_type(spec_, ArgumentElement::cache,
                                                  get_target().has_feature(Halide::Target::CUDA)));
    const char* name = slot.name;
    const int dims = argument_dimensions(spec_, slot);
    switch (slot.argument) {
      case KernelArgument::q:
        q_ = add_input<Buffer<>>(name, storage, dims);
        break;
      case KernelArgument::k:
        k_ = add_input<Buffer<>>(name, cache, dims);
        break;
      case KernelArgument::v:
        v_ = add_input<Buffer<>>(name, cache, dims);
        break;
      case KernelArgument::k_scale:
        k_scale_ = add_input<Buffer<float>>(name, dims);
        break;
      case KernelArgument::v_scale:
        v_scale_ = add_input<Buffer<float>>(name, dims);
        break;
      case KernelArgument::page_table:
        page_table_ = add_input<Buffer<int32_t>>(name, dims);
        break;
      case KernelArgument::key_lengths:
      case KernelArgument::bias:
      case KernelArgument::alibi_slopes:
      case KernelArgument::scale:
      case KernelArgument::window_left:
      case KernelArgument::window_right:
        score_inputs_.declare(*this, name, dims, storage);
        break;
      case KernelArgument::out:
        modifier_inputs_.declare(*this, spec_);
        // A mask rule's key ranges (algorithm/modifier_key_ranges.h).
        if (has_mask_rule(spec_)) key_ranges_ = add_input<Buffer<int32_t>>("mod_key_ranges", 5);
        out_ = add_output<Buffer<>>(name, storage, dims);
        break;
      case KernelArgument::weights:
        weights_ = add_output<Buffer<>>(name, storage, dims);
        break;
      case KernelArgument::lse:
        lse_ = add_output<Buffer<float>>(name, dims);
        break;
    }
  }

  void generate() {
    constrain_shapes();
    AttentionInputs in;
    in.q = *q_;
    in.k = *k_;
    in.v = *v_;
    if (spec_.quantized_kv()) {
      in.k_levels = stored_levels(*k_, "k_levels");
      in.v_levels = stored_levels(*v_, "v_levels");
      in.k_scale = row_scales(*k_scale_, "k_row_scales");
      in.v_scale = row_scales(*v_scale_, "v_row_scales");
      in.k = dequantized_rows(in.k_levels, in.k_scale, "k_dequantized");
      in.v = dequantized_rows(in.v_levels, in.v_scale, "v_dequantized");
    }
    in.q_len = q_->dim(1).extent();
    in.kv_len = k_->dim(1).extent();
    if (spec_.paged()) {
      read_pages(in);
    } else {
      in.k_buffer = Halide::ImageParam(*k_).parameter();
      in.v_buffer = Halide::ImageParam(*v_).parameter();
      read_rows(in);
    }
    score_inputs_.add_to(in);
    if (storage_as_bits() && in.bias.defined()) in.bias = f32_of_bf16_bits(in.bias, 4, "bias_f32");
    modifier_inputs_.add_to(in);

    const std::string choice = schedule;
    if (storage_as_bits() && (choice == "auto" || choice == "naive")) {
      throw schedules::ScheduleError(
          "dtype", "bf16 on CUDA takes the tensor-core form online_mma; the " + choice +
                       " schedule's materialized form cannot (Halide's CUDA backend cannot "
                       "load bf16)");
    }
    if (choice == "auto") {
      // The algorithm as written, for an autoscheduler given in the GeneratorContext.
      MaterializedFuncs funcs = build_materialized(spec_, in, vars_);
      define_outputs(funcs.output, funcs.weights);
      set_estimates(spec_.head_dim);
      return;
    }
    if (choice == "naive") {
      MaterializedFuncs funcs = build_materialized(spec_, in, vars_);
      define_outputs(funcs.output, funcs.weights);
      if (!lse_) funcs.output = *out_;
      if (weights_) funcs.weights = *weights_;
      set_estimates(spec_.head_dim);
      schedules::apply_naive(funcs, vars_, get_target());
      return;
    }
    schedules::Schedule chosen = schedules::resolve_schedule(choice);
    // The tensor-core form on a CPU target: emulated, checked as for CUDA.
    const bool emulated = schedules::emulates_tensor_cores(chosen, get_target());
    schedules::validate(chosen, spec_,
                        emulated ? schedules::emulated_target(get_target()) : get_target());
    if (key_ranges_ && !emulated && !get_target().has_gpu_feature()) {
      // The CPU's tiled forms skip the key blocks the mask rule hides.
      in.modifier_key_ranges = *key_ranges_;
      in.key_ranges_per_head = mask_rule_reads_head(spec_);
    }
    schedules::AttentionPipeline pipeline =
        schedules::build_pipeline(spec_, in, chosen, emulated, storage_as_bits(),
                                  schedules::has_native_bf16_rounding(get_target()));
    vars_ = pipeline.vars;
    define_outputs(pipeline.output, pipeline.weights);
    if (lse_) {
      // The form's rows and their lse are one Tuple stage; out and lse copy it.
      pipeline.output.compute_root();
      schedule_output_copies();
    } else {
      pipeline.output = *out_;
    }
    if (weights_) pipeline.weights = *weights_;
    set_estimates(spec_.head_dim);
    if (emulated) {
      schedules::apply_mma_emulated(pipeline);
    } else if (get_target().has_gpu_feature()) {
      align_inputs(schedules::cuda_input_alignment(chosen));
      schedules::apply_cuda(chosen, pipeline, spec_.head_dim);
    } else {
      schedules::apply_x86(chosen, pipeline, spec_.head_dim);
      schedules::fix_prefetch_line_steps(get_pipeline());
      lower_row_prefetches(get_pipeline());
    }
  }

 private:
  // bf16 on CUDA travels as its 16 bits (Halide 21's PTX back end can load
  // and store no bf16); the tensor-core form, the only one that takes it,
  // reads and writes the bits.
  bool storage_as_bits() const {
    return spec_.dtype == DType::bf16 && get_target().has_feature(Halide::Target::CUDA);
  }

  // An 8-bit cache's levels (d, position, kv head, batch or page) and their
  // scales per row (position, kv head, batch or page): quantized_cache.h.
  Halide::Func stored_levels(const Halide::Func& values, const std::string& name) const {
    if (spec_.kv_storage == KvStorage::fp8_e4m3) return e4m3_levels(values, name);
    return values;
  }
  Halide::Func row_scales(const Halide::Func& scales, const std::string& name) const {
    if (spec_.kv_storage == KvStorage::fp8_e4m3) return e4m3_row_scales(scales, name);
    return scales;
  }

  // The Generator's Outputs read the form's; the Outputs are then what gets
  // scheduled as the pipeline's root stages.
  void define_outputs(const Halide::Func& output, const Halide::Func& weights) {
    const AttentionVars& v = vars_;
    if (lse_) {
      (*out_)(v.d, v.i, v.h, v.b) = output(v.d, v.i, v.h, v.b)[0];
      (*lse_)(v.i, v.h, v.b) = output(0, v.i, v.h, v.b)[1];
    } else {
      (*out_)(v.d, v.i, v.h, v.b) = output(v.d, v.i, v.h, v.b);
    }
    if (weights_) {
      (*weights_)(vars_.j, vars_.i, vars_.h, vars_.b) = weights(vars_.j, vars_.i, vars_.h, vars_.b);
    }
  }

  // With lse, out and lse read the form's Tuple stage: row by row, in vectors.
  void schedule_output_copies() {
    const AttentionVars& v = vars_;
    if (get_target().has_gpu_feature()) {
      // A thread per element; a block per tile of rows, head and batch.
      Halide::Var db("db"), ib("ib"), dt("dt"), it("it"), hb("hb");
      const auto guard = Halide::TailStrategy::GuardWithIf;
      out_->gpu_tile(v.d, v.i, db, ib, dt, it, 32, 8, guard).fuse(v.h, v.b, hb).gpu_blocks(hb);
      lse_->gpu_tile(v.i, ib, it, 64, guard).fuse(v.h, v.b, hb).gpu_blocks(hb);
      return;
    }
    const int lanes = get_target().natural_vector_size<float>();
    out_->vectorize(v.d, lanes, Halide::TailStrategy::GuardWithIf).parallel(v.b);
    lse_->vectorize(v.i, lanes, Halide::TailStrategy::GuardWithIf).parallel(v.b);
  }

  // Kernels that load Q, K and V rows as vectors need each row aligned to
  // `bytes`: the pointers, and every stride but the head dim's (1), a whole
  // number of vectors. The kernel checks both (its callers pick another).
  void align_inputs(int bytes) {
    if (bytes <= 1) return;
    const int elements = bytes / storage_type_of(spec_.dtype).bytes();
    for (auto* input : {q_, k_, v_}) {
      input->set_host_alignment(bytes);
      for (int dim = 1; dim < 4; ++dim) {
        input->dim(dim).set_stride(input->dim(dim).stride() / elements * elements);
      }
    }
  }

  // A contiguous cache's rows, for schedules that prefetch them row by row.
  void read_rows(AttentionInputs& in) {
    Halide::Var j("j"), h("h"), b("b");
    for (auto [row, buffer, input, name] : {std::tuple{&in.k_row, &in.k_row_buffer, k_, "k_row"},
                                            std::tuple{&in.v_row, &in.v_row_buffer, v_, "v_row"}}) {
      Halide::Func row_offset(name);
      row_offset(j, h, b) = element_offset(*input, {0, j, h, b});
      *row = row_offset;
      *buffer = Halide::ImageParam(*input).parameter();
    }
  }

  // The offset of element `coordinates` in `input`'s storage.
  static Expr element_offset(const GeneratorInput<Buffer<>>& input,
                             const std::array<Expr, 4>& coordinates) {
    Expr offset = 0;
    for (int dim = 0; dim < 4; ++dim) {
      offset += (coordinates[dim] - input.dim(dim).min()) * input.dim(dim).stride();
    }
    return offset;
  }

  // A paged cache read as the contiguous one the forms expect: key j of
  // sequence b is position j % P of page page_table(j / P, b). Keys run to the
  // table's end; key_lengths masks the rest. Table entries and page numbers
  // are clamped so that any key >= 0 reads inside the cache (keys past the
  // table read its last page); callers reject tables that would need it.
  void read_pages(AttentionInputs& in) {
    const int page = spec_.page_size;
    const Expr pages = k_->dim(3).extent(), entries = page_table_->dim(0).extent();
    Halide::Var d("d"), j("j"), h("h"), b("b"), position("position"), entry("entry");
    auto page_of = [&](const Expr& e) {
      return Halide::clamp((*page_table_)(Halide::clamp(e, 0, entries - 1), b), 0, pages - 1);
    };
    // Rows stored (d, position in page, kv head, page), read by key and by page.
    auto paged_rows = [&](const Halide::Func& stored, Halide::Func* cache, Halide::Func* by_page,
                          const std::string& name) {
      Halide::Func rows(name), rows_by_page(name + "_by_page");
      rows_by_page(d, position, entry, h, b) = stored(d, position, h, page_of(entry));
      rows(d, j, h, b) = rows_by_page(d, j % page, j / page, h, b);
      *cache = rows;
      *by_page = rows_by_page;
    };
    // A value per row stored (position in page, kv head, page): an 8-bit cache's scales.
    auto paged_scales = [&](const Halide::Func& stored, Halide::Func* scales, Halide::Func* by_page,
                            const std::string& name) {
      Halide::Func values(name), values_by_page(name + "_by_page");
      values_by_page(position, entry, h, b) = stored(position, h, page_of(entry));
      values(j, h, b) = values_by_page(j % page, j / page, h, b);
      *scales = values;
      *by_page = values_by_page;
    };
    for (auto [rows, by_page, row, buffer, input, name] :
         {std::tuple{&in.k, &in.k_by_page, &in.k_row, &in.k_row_buffer, k_, std::string("k_pages")},
          std::tuple{&in.v, &in.v_by_page, &in.v_row, &in.v_row_buffer, v_,
                     std::string("v_pages")}}) {
      paged_rows(*rows, rows, by_page, name);
      Halide::Func row_offset(name + "_row");
      row_offset(j, h, b) = element_offset(*input, {0, j % page, h, page_of(j / page)});
      *row = row_offset;
      *buffer = Halide::ImageParam(*input).parameter();
    }
    if (spec_.quantized_kv()) {
      paged_rows(in.k_levels, &in.k_levels, &in.k_levels_by_page, "k_level_pages");
      paged_rows(in.v_levels, &in.v_levels, &in.v_levels_by_page, "v_level_pages");
      paged_scales(in.k_scale, &in.k_scale, &in.k_scale_by_page, "k_scale_pages");
      paged_scales(in.v_scale, &in.v_scale, &in.v_scale_by_page, "v_scale_pages");
    }
    in.kv_len = entries * page;
    in.page_size = page;
  }

  AttentionSpec resolve_spec() const {
    if (std::string(spec).empty()) {
      throw SpecError("spec",
                      "the Generator needs spec=<canonical spec string>, e.g. "
                      "spec=causal.gqa32x8.d128.f16");
    }
    return AttentionSpec::parse(std::string(spec));
  }

  // Shapes as (d, position, head, batch); every min is 0 and D, H, H_kv fixed.
  void constrain_shapes() {
    const int d = spec_.head_dim;
    Expr batch = q_->dim(3).extent();
    Expr q_len = q_->dim(1).extent();
    Expr kv_len =
        spec_.paged() ? page_table_->dim(0).extent() * spec_.page_size : k_->dim(1).extent();
    auto constrain = [&](auto* buffer, std::vector<Expr> extents) {
      for (size_t dim = 0; dim < extents.size(); ++dim) {
        buffer->dim(dim).set_min(0);
        if (extents[dim].defined()) buffer->dim(dim).set_extent(extents[dim]);
      }
    };
    constrain(q_, {d, Expr(), spec_.heads, Expr()});
    modifier_inputs_.constrain(spec_, batch, q_len, kv_len);
    if (key_ranges_) {
      constrain(key_ranges_,
                {kKeyRangeValues, q_len, kKeyRangeLevels, key_range_heads(spec_), batch});
    }
    if (spec_.paged()) {
      // (d, position in page, kv head, page), any number of pages.
      constrain(k_, {d, spec_.page_size, spec_.kv_heads, Expr()});
      constrain(v_, {d, spec_.page_size, spec_.kv_heads, k_->dim(3).extent()});
      constrain(page_table_, {Expr(), batch});
    } else {
      constrain(k_, {d, Expr(), spec_.kv_heads, batch});
      constrain(v_, {d, kv_len, spec_.kv_heads, batch});
    }
    // kv8: a scale per stored row, (position, kv head, batch or page) as k's;
    // kvfp8: one per kv head.
    for (auto* scales : {k_scale_, v_scale_}) {
      if (!scales) continue;
      if (spec_.kv_storage == KvStorage::fp8_e4m3) {
        constrain(scales, {spec_.kv_heads});
      } else {
        constrain(scales, {k_->dim(1).extent(), spec_.kv_heads, k_->dim(3).extent()});
      }
    }
    constrain(out_, {d, q_len, spec_.heads, batch});
    score_inputs_.constrain(spec_, batch, q_len, kv_len);
    if (weights_) constrain(weights_, {kv_len, q_len, spec_.heads, batch});
    if (lse_) constrain(lse_, {q_len, spec_.heads, batch});
  }

  // The sizes the autoschedulers plan for, by default one batch of
  // 2048-long sequences. The outputs must be defined first.
  void set_estimates(int d) {
    const int B = estimate_batch, Lq = estimate_q_len, Lk = estimate_kv_len;
    q_->set_estimates({{0, d}, {0, Lq}, {0, spec_.heads}, {0, B}});
    if (spec_.paged()) {
      const int P = spec_.page_size, pages_per_sequence = (Lk + P - 1) / P;
      k_->set_estimates({{0, d}, {0, P}, {0, spec_.kv_heads}, {0, B * pages_per_sequence}});
      v_->set_estimates({{0, d}, {0, P}, {0, spec_.kv_heads}, {0, B * pages_per_sequence}});
      page_table_->set_estimates({{0, pages_per_sequence}, {0, B}});
    } else {
      k_->set_estimates({{0, d}, {0, Lk}, {0, spec_.kv_heads}, {0, B}});
      v_->set_estimates({{0, d}, {0, Lk}, {0, spec_.kv_heads}, {0, B}});
    }
    out_->set_estimates({{0, d}, {0, Lq}, {0, spec_.heads}, {0, B}});
    for (auto* scales : {k_scale_, v_scale_}) {
      if (scales && spec_.kv_storage == KvStorage::fp8_e4m3) {
        scales->set_estimates({{0, spec_.kv_heads}});
      } else if (scales) {
        const int rows = spec_.paged() ? spec_.page_size : Lk;
        const int extent = spec_.paged() ? B * ((Lk + rows - 1) / rows) : B;
        scales->set_estimates({{0, rows}, {0, spec_.kv_heads}, {0, extent}});
      }
    }
    score_inputs_.set_estimates(spec_, B, Lq, Lk);
    if (weights_) weights_->set_estimates({{0, Lk}, {0, Lq}, {0, spec_.heads}, {0, B}});
    if (lse_) lse_->set_estimates({{0, Lq}, {0, spec_.heads}, {0, B}});
    modifier_inputs_.set_estimates(spec_, B, Lq, Lk);
    if (key_ranges_) {
      key_ranges_->set_estimates({{0, kKeyRangeValues},
                                  {0, Lq},
                                  {0, kKeyRangeLevels},
                                  {0, key_range_heads(spec_)},
                                  {0, B}});
    }
  }

  AttentionSpec spec_;
  AttentionVars vars_;
  GeneratorInput<Buffer<>>* q_ = nullptr;
  GeneratorInput<Buffer<>>* k_ = nullptr;
  GeneratorInput<Buffer<>>* v_ = nullptr;
  GeneratorInput<Buffer<float>>* k_scale_ = nullptr;
  GeneratorInput<Buffer<float>>* v_scale_ = nullptr;
  GeneratorInput<Buffer<int32_t>>* page_table_ = nullptr;
  ScoreInputs score_inputs_;
  ModifierInputs modifier_inputs_;
  GeneratorInput<Buffer<int32_t>>* key_ranges_ = nullptr;
  GeneratorOutput<Buffer<>>* out_ = nullptr;
  GeneratorOutput<Buffer<>>* weights_ = nullptr;
  GeneratorOutput<Buffer<float>>* lse_ = nullptr;
};

}  // namespace
}  // namespace attnforge

HALIDE_REGISTER_GENERATOR(attnforge::AttentionGenerator, attention)
