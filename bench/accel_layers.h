// ResNet-18's conv2d layers (ops::resnet18_accel_conv_layers) compiled by Loom for the
// accelerator: shared by accel_bench and perf_model_bench.
#pragma once
#include <vector>

#include "loom/codegen/accel.h"
#include "loom/ops/accel_operators.h"

namespace loom::bench {

using ConvLayer = ops::AccelConvLayer;
inline const std::vector<ConvLayer>& kResNet18 = ops::resnet18_accel_conv_layers();

struct Compiled {
  codegen::AccelModule module;
  std::vector<NDArray> args;
  double macs;
};

// oc_blocks: output-channel blocks per tile (0: the chosen tiling, what a model's layer gets).
inline Compiled compile_layer(const ConvLayer& l, const accel::AccelConfig& cfg, int vthreads, int oc_blocks = 0) {
  ops::AccelOperator a = ops::make_accel_conv_layer(l, ops::accel_target(cfg), vthreads, oc_blocks);
  return {codegen::build_accel(a.func, cfg), a.random_args(1), a.macs};
}

}  // namespace loom::bench
