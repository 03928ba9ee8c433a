// Compiling a graph into a compiled-model file: optimize (passes.h), fuse, plan memory, place
// every fused group on a device, plan the executor values, schedule and lower every kernel (CPU
// functions compiled by the LLVM backend into one shared library, GPU functions by NVRTC into one
// CUDA program, accelerator kernels linked into one image), and write the executor graph
// (runtime/executor_graph.h), parameters and each device's section into one ModelFile
// (runtime/model_file.h) that runtime::GraphExecutor runs without any compiler library.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "loom/codegen/cuda.h"
#include "loom/codegen/llvm.h"
#include "loom/graph/passes.h"
#include "loom/graph/quantize.h"
#include "loom/ops/accel_schedules.h"
#include "loom/ops/conv_shape.h"
#include "loom/ops/cpu_schedules.h"
#include "loom/runtime/executor_graph.h"
#include "loom/runtime/model_file.h"
#include "loom/runtime/thread_pool.h"

namespace loom::graph {

// A blocked (NCHWc) conv2d kernel as the tuner keys it: the plain layer and the channel block.
// Kernels with unequal strides or pads, dilation or groups have no key.
struct ConvKernelKey {
  ops::Conv2dLayer layer;
  int64_t block = 0;
  int64_t int8_group = 0;  // int8 data in a grouped form: its G (2 or 4, ops/layers.h); 0: float32 data
  int64_t winograd = 0;    // a conv2d_winograd node's output tile m (its products' tile is looked up); 0: direct
};

struct BuildOptions {
  codegen::LLVMOptions llvm;  // target CPU/features (host by default), optimization level
  // Set: partition int8 layers onto this accelerator (passes.h, partition_accel); their kernels
  // are linked into the model's accelerator image.
  std::optional<accel::AccelConfig> accel;
  PipelineOptions pipeline;  // graph dumps; layout lanes are set from the target
  // Called with a short message as the build makes progress ("kernel 3/21: fused_conv2d_add_relu").
  std::function<void(const std::string&)> progress;
  // The register tile of a blocked conv2d kernel, e.g. from a tuning log (tools: `loom compile
  // --tuning-log`); nullopt or unset: the target-aware default (ops::nchwc_conv_tile).
  std::function<std::optional<ops::NchwcConvTile>(const ConvKernelKey&)> conv_tile;
  // The tiling of an accelerator conv2d (output rows, columns and blocks, input blocks, kernel,
  // stride; bias included), e.g. from a tuning log; nullopt or unset: ops::choose_conv_tiling.
  // A tiling that does not divide or fit the scratchpads is an error naming the kernel.
  std::function<std::optional<ops::AccelConvTiling>(const ops::ConvShape&)> accel_conv_tiling;
  // Set: kernels run on a GPU: groups are scheduled for CUDA (NCHW activations, no CPU layouts),
  // lowered with LowerOptions::target_gpu and compiled by NVRTC into one CUDA program, the model
  // file's "CUDA" section (docs/cuda.md). A group the GPU has no kernel for (int8 data, the
  // quantization operators) runs on the CPU, its values copied across (BuildResult::cpu_fallback).
  // With `accel` too, the accelerator's layers run there and the rest on the GPU or the CPU.
  std::optional<codegen::cuda::CudaOptions> cuda;
  // Devices by node name, over the rules above (a placement file: `loom compile --placement`). A
  // node must be one a kernel of the optimized graph computes, on a device that is a target of the
  // build and can run it; ConfigError naming the node otherwise.
  std::map<std::string, runtime::KernelDevice> placement;
  // CPU kernels: a parallel loop doing fewer stores than this runs serially
  // (schedule::LowerOptions::min_parallel_work); with parallel_work_hints, the others carry their
  // work and the runtime decides against the threshold it measures on the host that runs the model
  // (runtime::min_parallel_work; docs/results.md has the measurements). Without hints the
  // floor is the only threshold: set it for the hosts the model will run on (a host whose
  // fork-join costs a few microseconds wants thousands of stores, the runtime's rule).
  int64_t min_parallel_work = runtime::kMinParallelWorkFloor;
  bool parallel_work_hints = true;
};

struct KernelReport {
  std::string func;   // function name in the library
  std::string nodes;  // "conv2d+add+relu"
  int calls = 0;      // kernel calls in the executor graph that use this function
  double ops = 0;     // CPU, CUDA: arithmetic operations of one call (ir/op_count.h); 0: not counted
  runtime::KernelDevice device = runtime::KernelDevice::CPU;
  // Deprecated (removed in the next release; docs/library.md): device == runtime::KernelDevice::Accel.
  // Not marked [[deprecated]]: on a data member GCC would warn in every copy of the struct.
  bool accel = false;
};

struct BuildResult {
  runtime::ModelFile file;
  runtime::ExecutorGraph executor_graph;  // what file.graph_json holds, typed
  Graph graph;                            // after optimization
  FusionPlan fusion;
  MemoryPlan memory;
  std::vector<KernelReport> kernels;      // distinct kernels (identical CPU or GPU groups share one)
  std::vector<std::string> cpu_fallback;  // with BuildOptions::cuda: "node (ops): why it runs on the CPU"
  AccelPartitionReport accel_report;      // with BuildOptions::accel
  std::vector<ir::LoweredFunc>
      cuda_funcs;  // with BuildOptions::cuda: the lowered GPU functions (for the grid interpreter)
  double seconds = 0;
};

// A placement (BuildOptions::placement) from a JSON object of node names to device names ("cpu",
// "cuda", "accel"); ConfigError naming `origin` and the node. read_placement reads a file.
std::map<std::string, runtime::KernelDevice> parse_placement(const std::string& text, const std::string& origin);
std::map<std::string, runtime::KernelDevice> read_placement(const std::string& path);

// ConfigError unless the graph suits the targets: the accelerator runs int8 operators that
// requantize with shifts, so an accelerator build refuses per-channel fixed-point multipliers
// (requantize_channel whose multipliers are not powers of two) and simulated int8
// (fake_quantize), naming the node. build() checks this first.
void check_targets(const Graph& g, const BuildOptions& options);
// The same rules before a model is quantized (a front end checks them before calibrating):
// `quantize` is how it will be quantized, null when it stays float.
void check_targets(const BuildOptions& options, const QuantizeOptions* quantize);
// The widths an accelerator target's config declares, into `quantize`: weights at its wgt_bits,
// activations at its inp_bits (the config decides; no second spelling of the widths), layers
// given wider weights (layer_weight_bits) as sums of wgt_bits-bit digits (weight_digit_bits), the
// passes it runs them in. Nothing for other targets. ConfigError for a config whose widths the
// quantizer has no mode for (2-bit inputs) or a layer width it does not run.
void follow_targets(QuantizeOptions& quantize, const BuildOptions& options);
// follow_targets, then the widths a user asked for (`precision`, "W4A8"; empty: none; wider
// layers as sums of its weight digits, so that the CPU model equals an accelerator's at that
// precision): for an accelerator target they must be the config's. ConfigError starting with
// `what` (the option's name) otherwise.
void follow_targets(QuantizeOptions& quantize, const BuildOptions& options, const std::string& precision,
                    const std::string& what);

BuildResult build(Graph g, const BuildOptions& options = {});

}  // namespace loom::graph
