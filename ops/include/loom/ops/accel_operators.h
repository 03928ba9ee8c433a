// One int8 operator scheduled for the accelerator, with what a tool, a bench or a test needs
// around it: its inputs in argument order, its output, the reference the output must equal, its
// multiply-accumulates, and random arguments. `loom accel-run`, accel_bench and the tests build
// their operators here instead of each spelling out placeholders, stages and schedules.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "loom/ir/stmt.h"
#include "loom/ops/accel_schedules.h"
#include "loom/ops/accel_target.h"
#include "loom/runtime/ndarray.h"

namespace loom::ops {

enum class AccelOpKind : uint8_t { Conv2d, Dense, Add };
const char* to_string(AccelOpKind kind);  // "conv2d", "dense", "add"
// The kind named `name`; ShapeError listing the kinds for any other name.
AccelOpKind parse_accel_op_kind(const std::string& name);
// The requantization `loom accel-run` and `loom regress` give a kind: the add keeps its sum's
// scale (shift 1, no ReLU), conv2d and dense shift by 8 with a ReLU.
Requantize default_requantize(AccelOpKind kind);

// Square activations of batch one block, channels in whole blocks of the config.
struct AccelOpSpec {
  AccelOpKind kind = AccelOpKind::Conv2d;
  int channels = 64, out_channels = 64;            // multiples of the blocks (out_channels: conv2d, dense)
  int size = 14, kernel = 3, stride = 1, pad = 1;  // conv2d (size: add too)
  int virtual_threads = 2;                         // what the chooser tries (it may take fewer)
  std::optional<AccelConvTiling> conv_tiling;      // conv2d, add: else choose_conv_tiling / choose_add_tiling
  Requantize rq{8, true};                          // its clamp within [-128, 127] and the target's out_bits
};

struct AccelOperator {
  std::vector<ir::Tensor> inputs;  // argument order; the add's identity block is named "eye"
  ir::Tensor output;
  ir::Tensor reference;  // what `output` must equal: the operator's definition (add: the plain CPU add)
  ir::LoweredFunc func;
  double macs = 0;
  int inp_bits = 8, wgt_bits = 8;  // the target's: what random_args draws within
  // Random inputs in int8 containers within the target's widths (the weights "W" within wgt_bits,
  // the others within inp_bits; seeded; the identity block filled in), then a zeroed output.
  std::vector<NDArray> random_args(uint64_t seed = 1) const;
  // The reference's value for the inputs in `args` (the naive interpreter).
  NDArray expected(const std::vector<NDArray>& args) const;
};

// Throws ShapeError naming the operand for channels that are not whole blocks, ScheduleError for
// tilings that do not divide or fit.
AccelOperator make_accel_operator(const AccelOpSpec& spec, const AccelTarget& target, const std::string& name);

// ResNet-18's conv2d layers (batch 1, 224x224 input, after conv1 and the max-pool: 56x56x64), named
// as in the VTA paper's table; `repeats`: how often the network runs each. The workload of the
// accelerator benches, the performance model's checks and `loom dse`.
struct AccelConvLayer {
  const char* name;
  int channels, out_channels, size, kernel, stride, repeats;
};
const std::vector<AccelConvLayer>& resnet18_accel_conv_layers();
// One of them as an operator (pad kernel / 2), tiled as a model's layer is (choose_conv_tiling for
// `virtual_threads`), or with `oc_blocks` output-channel blocks per tile when nonzero.
AccelOperator make_accel_conv_layer(const AccelConvLayer& layer, const AccelTarget& target, int virtual_threads,
                                    int oc_blocks = 0);

}  // namespace loom::ops
