// Which kernels a package gets: for every spec and target, a generic kernel
// (the best-fitting preset, so no spec is ever missing), on CPUs a generic
// kernel for short queries (decoding: up to 16 query rows, where query tiles
// would be mostly padding, so the materialized form wins), where its tiles hold
// more than one query's rows a one-row kernel (q1: the same preset with tiles of
// one query, its KV group's heads), and, per shape bucket,
// the fastest correct schedule the tuning database holds for that spec on a
// compatible target; layer specs get kernels of the whole MHA layer the same
// way. The order is deterministic, so one database always
// gives the same package sources.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "autotune/database.h"
#include "emit_target.h"
#include "spec/attention_spec.h"
#include "spec/layer_spec.h"
#include "spec/shape_bucket.h"

namespace attnforge::emit {

struct PlannedKernel {
  std::string function;  // entry point: attnforge_<tag>_<spec>_<bucket or generic>
  AttentionSpec spec;
  size_t target = 0;  // index into the emit targets
  std::string
      bucket;  // "generic", "generic.q16" / "generic.q1" (short queries) or e.g. b1.q2048.k2048
  ShapeBucket shape;               // the bucket's sizes; 0 matches any
  std::string schedule;            // schedule JSON, a preset name or "naive"
  std::string origin;              // where the schedule comes from, for the manifest
  std::optional<LayerSpec> layer;  // a whole MHA layer's kernel; spec is then its attention
  bool backward = false;           // spec's backward kernel (attention_backward's)

  // The canonical spec the kernel table names: the layer's when it is one.
  std::string spec_text() const { return layer ? layer->to_string() : spec.to_string(); }
};

struct KernelPlan {
  std::vector<PlannedKernel> kernels;
  std::vector<std::string> skipped;  // (spec, target) pairs no kernel can serve, and why
  // Specs served by another's kernels, and by which: a window spec with no
  // tuned kernel of its own ships as the spec taking its window per call.
  std::vector<std::string> served_by_other;
};

// The tuned kernels are the database's winners (Database::winners) that fit
// each target; extra_specs, extra_layers: specs to include even with no
// record. Layers (whole MHA layers, CPU only) get a generic kernel and the
// tuned ones, but no short-query kernel: they read no KV cache to stream.
// A window spec with no tuned record is planned as its `window` spec (sizes
// given per call): one kernel then serves every window, as fast as a
// compiled one, where each compiled window would need its own.
// backward_specs: specs whose backward kernel ships too (CPU targets, the
// first backward preset that fits), with their forward kernel returning the
// lse (`.lse`) that the backward reads.
KernelPlan plan_kernels(const autotune::Database& database, const std::vector<EmitTarget>& targets,
                        const std::vector<AttentionSpec>& extra_specs,
                        const std::vector<LayerSpec>& extra_layers = {},
                        const std::vector<AttentionSpec>& backward_specs = {});

}  // namespace attnforge::emit
