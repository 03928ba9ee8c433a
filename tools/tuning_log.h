// The bridge from the tuner's log to the model compiler (tools only, so that neither library
// depends on the other): `loom compile --tuning-log` and `loom tune model`.
#pragma once
#if defined(LOOM_HAVE_TUNE) && defined(LOOM_HAVE_GRAPH)
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "loom/graph/build.h"
#include "loom/tune/template.h"
#include "loom/tune/tuner.h"

namespace loom::tools {

// What conv_tiles_from_log found: kernels looked up and kernels the log had a configuration for.
struct TuningLogUse {
  int looked_up = 0, found = 0;
};

// A BuildOptions::conv_tile that looks up the best logged "conv2d_nchwc" configuration for this
// machine's target (and thread count); counts into `use`.
std::function<std::optional<ops::NchwcConvTile>(const graph::ConvKernelKey&)> conv_tiles_from_log(std::shared_ptr<const tune::TuningLog> log,
                                                                                                    std::shared_ptr<TuningLogUse> use);

// A BuildOptions::accel_conv_tiling that looks up the best logged "accel_conv2d" configuration
// for `config` measured on the RTL simulation; counts into `use`.
std::function<std::optional<ops::AccelConvTiling>(const ops::ConvShape&)> accel_conv_tilings_from_log(std::shared_ptr<const tune::TuningLog> log,
                                                                                                     const accel::AccelConfig& config,
                                                                                                     std::shared_ptr<TuningLogUse> use);

// The tuner's template for an accelerator conv2d of a model (square output and kernel; pad k/2).
std::unique_ptr<tune::Template> accel_conv_template(const ops::ConvShape& shape, const accel::AccelConfig& config);

// The tuner's template for a model's blocked conv2d kernel.
std::unique_ptr<tune::Template> conv_kernel_template(const graph::ConvKernelKey& key, const codegen::TargetInfo& target);

}  // namespace loom::tools
#endif
