// ResNet-18's conv2d layers (batch 1, 224x224 input, after conv1 and the max-pool), compiled by
// Loom for the accelerator: shared by accel_bench and perf_model_bench.
#pragma once
#include <vector>

#include "loom/codegen/accel.h"
#include "loom/ops/accel_operators.h"
#include "loom/ops/conv_shape.h"

namespace loom::bench {

struct ConvLayer {
  const char* name;
  int channels, out_channels, size, kernel, stride, repeats;  // `repeats`: how often ResNet-18 runs it
};

// ResNet-18 at 224x224 after conv1 + max-pool (56x56x64), named as in the VTA paper's table.
inline const std::vector<ConvLayer> kResNet18 = {
    {"c2", 64, 64, 56, 3, 1, 4},   {"c3", 64, 128, 56, 3, 2, 1},  {"c4", 64, 128, 56, 1, 2, 1},
    {"c5", 128, 128, 28, 3, 1, 3}, {"c6", 128, 256, 28, 3, 2, 1}, {"c7", 128, 256, 28, 1, 2, 1},
    {"c8", 256, 256, 14, 3, 1, 3}, {"c9", 256, 512, 14, 3, 2, 1}, {"c10", 256, 512, 14, 1, 2, 1},
    {"c11", 512, 512, 7, 3, 1, 3},
};

struct Compiled {
  codegen::AccelModule module;
  std::vector<NDArray> args;
  double macs;
};

// oc_blocks: output-channel blocks per tile (0: the chosen tiling, what a model's layer gets).
inline Compiled compile_layer(const ConvLayer& l, const accel::AccelConfig& cfg, int vthreads, int oc_blocks = 0) {
  const ops::AccelTarget target = ops::accel_target(cfg);
  ops::AccelOpSpec spec;
  spec.channels = l.channels;
  spec.out_channels = l.out_channels;
  spec.size = l.size;
  spec.kernel = l.kernel;
  spec.stride = l.stride;
  spec.pad = l.kernel / 2;
  spec.virtual_threads = vthreads;
  int out = int(ops::window_out(l.size, l.kernel, l.stride, spec.pad, spec.pad));
  // The chosen tiling (what a model's layer gets), or --oc-blocks.
  ops::ConvShape shape{out,
                       out,
                       l.out_channels / target.blocking.block_out,
                       l.channels / target.blocking.block_in,
                       l.kernel,
                       l.kernel,
                       l.stride,
                       false};
  ops::AccelConvTiling t = ops::choose_conv_tiling(shape, vthreads, target.limits);
  if (oc_blocks) t.oc_blocks = oc_blocks;
  spec.conv_tiling = t;
  ops::AccelOperator a = ops::make_accel_operator(spec, target, l.name);
  return {codegen::build_accel(a.func, cfg), a.random_args(1), a.macs};
}

}  // namespace loom::bench
