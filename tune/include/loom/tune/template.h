// Tunable operator templates: an operator with a schedule whose knobs (tile sizes, loop order,
// unrolling, parallel granularity) `loom tune` searches by measuring real runs (tuner.h).
//
//   auto t = make_conv2d_template({1, 64, 56, 56, 64, 3, 1, 1}, codegen::target_info());
//   Config c = t->default_config();   // the target-aware default (ops::conv_nchw_tiling_for)
//   runtime::Module m = t->build(c);  // function "kernel"
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loom/codegen/llvm.h"
#include "loom/runtime/module.h"
#include "loom/runtime/ndarray.h"

namespace loom::tune {

// A configuration: a value for every knob of a template.
using Config = std::map<std::string, int>;
std::string config_str(const Config& c);  // "mr=6 nr=16 k_unroll=4"

struct Knob {
  std::string name;
  std::vector<int> values;
};

class Template {
 public:
  virtual ~Template() = default;
  // What the tuning log is keyed by: the operator, its shape, and the target.
  virtual std::string op() const = 0;
  virtual std::vector<int64_t> shape() const = 0;
  virtual std::vector<Knob> knobs() const = 0;
  // Whether a configuration can be built (e.g. its blocks divide the layer).
  virtual bool valid(const Config& c) const = 0;
  virtual Config default_config() const = 0;
  // Numbers the cost model learns from: the knobs and what they imply (accumulators, loads per
  // multiply-add, parallel tasks, tail waste).
  virtual std::vector<float> features(const Config& c) const = 0;
  virtual double flops() const = 0;
  // Compiles the configuration for the template's target: function "kernel" taking arguments().
  virtual runtime::Module build(const Config& c) const = 0;
  // Random inputs and a zeroed output, in the kernel's argument order (the output last).
  virtual std::vector<NDArray> arguments(uint64_t seed) const = 0;

  // Every valid configuration (the product of the knobs' values, filtered).
  std::vector<Config> space() const;
};

// C[M, N] = A[M, K] x B[K, N] (fp32): knobs mr (rows in registers), nv (vectors of columns; nr =
// nv x lanes), k_unroll.
std::unique_ptr<Template> make_gemm_template(int64_t M, int64_t N, int64_t K, const codegen::TargetInfo& target);

struct Conv2dShape {
  int64_t batch = 1, in_channels = 64, height = 56, width = 56, out_channels = 64, kernel = 3, stride = 1, pad = 1;
  int64_t out_height() const { return (height + 2 * pad - kernel) / stride + 1; }
  int64_t out_width() const { return (width + 2 * pad - kernel) / stride + 1; }
};
// conv2d NCHW (fp32), weights packed by output-channel blocks: knobs oc_block, x_block,
// window_outer, parallel_rows (ops::ConvNchwTiling).
std::unique_ptr<Template> make_conv2d_template(const Conv2dShape& shape, const codegen::TargetInfo& target);
// conv2d on channel-blocked activations (NCHW{block}c) with packed weights: the kernel compiled
// models run (ops::schedule_conv2d_nchwc_cpu). Knobs channel_blocks (output-channel blocks per
// register tile) and x_block (columns; need not divide the row). Op "conv2d_nchwc", shape the
// Conv2dShape fields then the block: what `loom compile --tuning-log` looks up.
std::unique_ptr<Template> make_conv2d_nchwc_template(const Conv2dShape& shape, int64_t block, const codegen::TargetInfo& target);

// "cpu=znver3 vector_bits=256 threads=2": the target a measurement holds for.
std::string target_key(const codegen::TargetInfo& target, int threads);

}  // namespace loom::tune
