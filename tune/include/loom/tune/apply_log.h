// From a tuning log to the model compiler: the BuildOptions hooks that look up the best logged
// configuration of each kernel a build compiles (what `loom compile --tuning-log` does), and the
// kernels of a model that `loom tune model` tunes. A program that links Loom uses a log with
//
//   auto log = std::make_shared<const tune::TuningLog>("tune.jsonl");
//   graph::BuildOptions options;
//   tune::LogUse use = tune::apply_log(options, log);
//   graph::BuildResult r = graph::build(model, options);   // then use.cpu->found, use.accel->found
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "loom/graph/build.h"
#include "loom/tune/template.h"
#include "loom/tune/tuner.h"

namespace loom::tune {

// How many kernels a build looked up in the log, and how many the log had a configuration for;
// for the blocked CPU convs, the target looked up and the other targets (another thread count,
// another machine) the log has entries of the kernels it did not find for.
struct LogLookups {
  int looked_up = 0, found = 0;
  std::string target;
  std::set<std::string> other_targets;
};
struct LogUse {
  std::shared_ptr<LogLookups> cpu = std::make_shared<LogLookups>(), accel = std::make_shared<LogLookups>();
};

// Sets options.conv_tile (blocked CPU convs: the best "conv2d_nchwc" / "conv2d_nchwc_int8" entry
// for this host's target and thread count) and, when options.accel is set, options.accel_conv_tiling
// (the best "accel_conv2d" entry for that config measured on the RTL simulation). A kernel the log
// has no entry for keeps its default; a malformed entry is a ConfigError naming the log.
LogUse apply_log(graph::BuildOptions& options, std::shared_ptr<const TuningLog> log);

// The hooks apply_log sets, one by one, counting into `lookups`.
std::function<std::optional<ops::NchwcConvTile>(const graph::ConvKernelKey&)> conv_tiles_from_log(
    std::shared_ptr<const TuningLog> log, std::shared_ptr<LogLookups> lookups);
std::function<std::optional<ops::AccelConvTiling>(const ops::ConvShape&)> accel_conv_tilings_from_log(
    std::shared_ptr<const TuningLog> log, const accel::AccelConfig& config, std::shared_ptr<LogLookups> lookups);

// The tuner's template for a model's blocked conv2d kernel.
std::unique_ptr<Template> conv_kernel_template(const graph::ConvKernelKey& key, const codegen::TargetInfo& target);
// The tuner's template for an accelerator conv2d of a model (square output and kernel; pad k/2).
std::unique_ptr<Template> accel_conv_template(const ops::ConvShape& shape, const accel::AccelConfig& config);
// The layer an accelerator conv kernel was built for (square, "same" padding), as the accelerator
// conv template takes it.
Conv2dShape accel_conv_shape(const ops::ConvShape& shape, const accel::AccelConfig& config);

// Every distinct blocked conv2d kernel a build of `model` compiles for this host (distinct as the
// log keys them), in build order.
std::vector<graph::ConvKernelKey> model_conv_kernels(graph::Graph model);
// Every distinct accelerator conv2d a build of the int8 `model` for `config` compiles.
std::vector<ops::ConvShape> model_accel_convs(graph::Graph model, const accel::AccelConfig& config);

}  // namespace loom::tune
