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

#include "loom/accel/config.h"
#include "loom/codegen/llvm.h"
#include "loom/ops/accel_operators.h"
#include "loom/ops/conv_shape.h"
#include "loom/runtime/module.h"
#include "loom/runtime/ndarray.h"

namespace loom::tune {

// A configuration: a value for every knob of a template.
using Config = std::map<std::string, int>;
std::string config_str(const Config& c);  // "mr=6 nr=16 k_unroll=4"
// The value of knob `name`; ConfigError if the configuration (e.g. from a hand-edited log) lacks it.
int knob(const Config& c, const std::string& name);
// The divisors of n up to `limit`, ascending: knob values that must divide an extent.
std::vector<int> divisors(int64_t n, int64_t limit);

struct Knob {
  std::string name;
  std::vector<int> values;
};

// How `tune` measures a configuration. Timed: build() is JIT-compiled and its runs are timed on
// this CPU (fastest of repeats, confirmation round against the default). Cycles: simulate() runs it
// once on a cycle-counting accelerator device; the count is deterministic, so one run decides.
enum class Measure { Timed, Cycles };

// One simulated run: the device's cycle count and the output it wrote.
struct Simulated {
  uint64_t cycles = 0;
  NDArray output;
};

class Template {
 public:
  virtual ~Template() = default;
  virtual Measure measure() const { return Measure::Timed; }
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
  // Timed templates: compiles the configuration for the template's target, function "kernel"
  // taking arguments(); random inputs and a zeroed output in the kernel's argument order (the
  // output last). Cycle templates throw InternalError.
  virtual runtime::Module build(const Config& c) const;
  virtual std::vector<NDArray> arguments(uint64_t seed) const;
  // Cycle templates: compiles the configuration and runs it once on the device with random
  // inputs (seeded). Timed templates throw InternalError.
  virtual Simulated simulate(const Config& c, uint64_t seed) const;

  // Every valid configuration (the product of the knobs' values, filtered).
  std::vector<Config> space() const;
};

// C[M, N] = A[M, K] x B[K, N] (fp32): knobs mr (rows in registers), nv (vectors of columns; nr =
// nv x lanes), k_unroll.
std::unique_ptr<Template> make_gemm_template(int64_t M, int64_t N, int64_t K, const codegen::TargetInfo& target);

// The CPU and accelerator conv templates take the layer shape every layer uses.
using Conv2dShape = ops::Conv2dLayer;
// conv2d NCHW (fp32), weights packed by output-channel blocks: knobs oc_block, x_block,
// window_outer, parallel_rows (ops::ConvNchwTiling).
std::unique_ptr<Template> make_conv2d_template(const Conv2dShape& shape, const codegen::TargetInfo& target);
// conv2d on channel-blocked activations (NCHW{block}c) with packed weights: the kernel compiled
// models run (ops::schedule_conv2d_nchwc_cpu). Knobs channel_blocks (output-channel blocks per
// register tile) and x_block (columns; need not divide the row). Op "conv2d_nchwc", shape the
// Conv2dShape fields then the block: what `loom compile --tuning-log` looks up.
// int8_group 2 or 4: the int8 convolution of quantized models in its grouped form (ops/layers.h:
// int16 pairs or byte groups, int32 output), op "conv2d_nchwc_int8", the group last in the shape.
std::unique_ptr<Template> make_conv2d_nchwc_template(const Conv2dShape& shape, int64_t block,
                                                     const codegen::TargetInfo& target, int int8_group = 0);
// The products of a Winograd F(m x m, 3 x 3) convolution on NCHWc data (ops::conv2d_winograd_nchwc,
// schedule_conv2d_winograd_cpu), op "conv2d_winograd", shape the 3x3 stride-1 layer, the block and
// m: knobs `channel_blocks` and `x_block` (the register tile: output blocks x tiles) and
// `fused_rows` (0: each stage over the whole map; 1, 2: the input transform and products per
// chunk of tile rows). GFLOP/s are counted as the direct convolution's.
std::unique_ptr<Template> make_conv2d_winograd_template(const Conv2dShape& shape, int64_t block, int m,
                                                        const codegen::TargetInfo& target);

// An int8 conv2d on the accelerator (ops::make_accel_operator: blocked layout, DMA, tensorized
// GEMM, requantization on the ALU, virtual threads), measured in cycles on the accelerator
// backend `device` ("rtl": the cycle-accurate Verilator simulation; any registered backend that
// counts cycles). Knobs h_block, w_block, oc_blocks, virtual_threads (ops::AccelConvTiling); valid
// configurations divide the output and fit every scratchpad for every context. Op "accel_conv2d",
// shape accel_conv_key(): what `loom compile --tuning-log` looks up for the accelerator's convs.
// The shape must be square (height == width) with batch 1.
std::unique_ptr<Template> make_accel_conv2d_template(const Conv2dShape& shape, const accel::AccelConfig& config,
                                                     const std::string& device = "rtl");
// The tiling an accel_conv2d configuration names (ConfigError for a missing knob), and the
// operator that template measures for it: what a bench or test runs on another backend.
ops::AccelConvTiling accel_conv_tiling(const Config& c);
ops::AccelOperator accel_conv2d_operator(const Conv2dShape& shape, const accel::AccelConfig& config, const Config& c);
// The log key of an accelerator conv: what its tiling depends on (output rows and columns,
// output- and input-channel blocks, kernel, stride), so compiled models find it by their layer.
std::vector<int64_t> accel_conv_key(int out_h, int out_w, int oc_blocks, int ic_blocks, int kernel_h, int kernel_w,
                                    int stride);
// "accel=default device=rtl": the target an accelerator measurement holds for.
std::string accel_target_key(const accel::AccelConfig& config, const std::string& device);

// "cpu=znver3 vector_bits=256 threads=2": the target a measurement holds for.
std::string target_key(const codegen::TargetInfo& target, int threads);

}  // namespace loom::tune
