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

struct AccelOpSpec {
  std::string op = "conv2d";                       // conv2d, dense or add
  int channels = 64, out_channels = 64;            // multiples of the blocks (out_channels: conv2d, dense)
  int size = 14, kernel = 3, stride = 1, pad = 1;  // conv2d (size: add too)
  int virtual_threads = 2;
  std::optional<AccelConvTiling> conv_tiling;  // conv2d, add: else chosen for the scratchpads
  Requantize rq{8, true};
};

struct AccelOperator {
  std::vector<ir::Tensor> inputs;  // argument order; the add's identity block is named "eye"
  ir::Tensor output;
  ir::Tensor reference;  // what `output` must equal: the operator's definition (add: the plain CPU add)
  ir::LoweredFunc func;
  double macs = 0;
  // Random int8 inputs (seeded; the identity block filled in), then a zeroed output.
  std::vector<NDArray> random_args(uint64_t seed = 1) const;
  // The reference's value for the inputs in `args` (the naive interpreter).
  NDArray expected(const std::vector<NDArray>& args) const;
};

// Throws ShapeError naming the operand for channels that are not whole blocks, ScheduleError for
// tilings that do not divide or fit.
AccelOperator make_accel_operator(const AccelOpSpec& spec, const AccelTarget& target, const std::string& name);

}  // namespace loom::ops
