#include "loom/ops/accel_operators.h"

#include <algorithm>
#include <map>

#include "loom/ir/eval.h"
#include "loom/ops/conv_shape.h"
#include "loom/runtime/error.h"
#include "loom/schedule/lower.h"

namespace loom::ops {

using namespace loom::ir;

namespace {

std::vector<int64_t> shape_of_tensor(const Tensor& t) {
  std::vector<int64_t> s;
  for (auto& e : t.shape()) s.push_back(*as_const_int(e));
  return s;
}

}  // namespace

const char* to_string(AccelOpKind kind) {
  switch (kind) {
    case AccelOpKind::Conv2d:
      return "conv2d";
    case AccelOpKind::Dense:
      return "dense";
    case AccelOpKind::Add:
      return "add";
  }
  return "?";
}

AccelOpKind parse_accel_op_kind(const std::string& name) {
  for (AccelOpKind k : {AccelOpKind::Conv2d, AccelOpKind::Dense, AccelOpKind::Add})
    if (name == to_string(k)) return k;
  LOOM_THROW(ShapeError, "unknown accelerator operator '", name, "' (conv2d, dense, add)");
}

Requantize default_requantize(AccelOpKind kind) {
  return kind == AccelOpKind::Add ? Requantize{1, false} : Requantize{8, true};
}

AccelOperator make_accel_operator(const AccelOpSpec& spec, const AccelTarget& target, const std::string& name) {
  AccelOpSpec p = spec;
  if (target.out_bits < 8) {  // outputs the target stores narrow: clamped to their range
    p.rq.clip_lo = std::max(p.rq.clip_lo, -(1 << (target.out_bits - 1)));
    p.rq.clip_hi = std::min(p.rq.clip_hi, (1 << (target.out_bits - 1)) - 1);
  }
  const Blocking& b = target.blocking;
  const AccelLimits& lim = target.limits;
  const char* op = to_string(p.kind);
  if (p.channels % b.block_in || (p.kind != AccelOpKind::Add && p.out_channels % b.block_out))
    LOOM_THROW(ShapeError, op, ": channels (", p.channels, ") and out-channels (", p.out_channels,
               ") must be multiples of the config's blocks (", b.block_in, ", ", b.block_out, ")");
  int C = p.channels / b.block_in, O = p.out_channels / b.block_out;
  AccelOperator a;
  std::unique_ptr<schedule::Schedule> s;
  if (p.kind == AccelOpKind::Dense) {
    Tensor X = placeholder({1, C, b.batch, b.block_in}, DataType::Int(8), "X");
    Tensor W = placeholder({O, C, b.block_out, b.block_in}, DataType::Int(8), "W");
    QuantizedStages q = dense_int8_blocked(X, W, p.rq, name);
    s = std::make_unique<schedule::Schedule>(std::vector<Tensor>{q.out});
    schedule_dense_int8_accel(
        *s, q, b, choose_dense_tiling({.batch_blocks = 1, .ic_blocks = C, .oc_blocks = O}, p.virtual_threads, lim));
    a.inputs = {X, W};
    a.output = a.reference = q.out;
    a.macs = double(b.batch) * p.channels * p.out_channels;
  } else if (p.kind == AccelOpKind::Conv2d) {
    if (p.size + 2 * p.pad < p.kernel)
      LOOM_THROW(ShapeError, "conv2d: size ", p.size, " with padding ", p.pad, " is smaller than the ", p.kernel, "x",
                 p.kernel, " kernel");
    Tensor X = placeholder({1, C, p.size, p.size, b.batch, b.block_in}, DataType::Int(8), "X");
    Tensor W = placeholder({O, C, p.kernel, p.kernel, b.block_out, b.block_in}, DataType::Int(8), "W");
    QuantizedStages q = conv2d_int8_blocked(X, W, p.stride, p.pad, p.rq, name);
    s = std::make_unique<schedule::Schedule>(std::vector<Tensor>{q.out});
    int out = int(window_out(p.size, p.kernel, p.stride, p.pad, p.pad));
    ConvShape shape = conv_shape_of(q, p.stride, false);
    AccelConvTiling t = p.conv_tiling ? *p.conv_tiling : choose_conv_tiling(shape, p.virtual_threads, lim);
    check_conv_tiling(shape, t, lim);
    schedule_conv2d_int8_accel(*s, q, b, t);
    a.inputs = {X, W};
    a.output = a.reference = q.out;
    a.macs = double(b.batch) * p.out_channels * p.channels * p.kernel * p.kernel * out * out;
  } else {
    if (b.block_in != b.block_out)
      LOOM_THROW(ShapeError,
                 "add: the accelerator widens through an identity block, which needs block_in == block_out");
    Tensor A = placeholder({1, C, p.size, p.size, b.batch, b.block_in}, DataType::Int(8), "A");
    Tensor B = placeholder({1, C, p.size, p.size, b.batch, b.block_in}, DataType::Int(8), "B");
    Tensor Eye = placeholder({b.block_in, b.block_in}, DataType::Int(8), "eye");
    AddWidenStages add = add_int8_widening(A, B, Eye, p.rq, name);
    s = std::make_unique<schedule::Schedule>(std::vector<Tensor>{add.q.out});
    schedule_add_int8_accel(*s, add, b,
                            p.conv_tiling ? *p.conv_tiling
                                          : choose_add_tiling({.out_h = p.size, .out_w = p.size, .channel_blocks = C},
                                                              p.virtual_threads, lim));
    a.inputs = {A, B, Eye};
    a.output = add.q.out;
    a.reference = add_int8(A, B, p.rq, name + "_cpu").out;     // the CPU definition: plain int32 adds
    a.macs = 2.0 * p.channels * p.size * p.size * b.block_in;  // the two widening GEMMs
  }
  std::vector<Tensor> args = a.inputs;
  args.push_back(a.output);
  a.func = schedule::lower(*s, args, name);
  a.inp_bits = target.inp_bits;
  a.wgt_bits = target.wgt_bits;
  return a;
}

std::vector<NDArray> AccelOperator::random_args(uint64_t seed) const {
  std::vector<NDArray> args;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<int64_t> shape = shape_of_tensor(inputs[i]);
    args.push_back(NDArray::empty(shape, DataType::Int(8)));
    const int bits = inputs[i].name() == "W" ? wgt_bits : inp_bits;
    args.back().fill_random(seed + i, -(1 << (bits - 1)), (1 << (bits - 1)) - 1);
    if (inputs[i].name() == "eye") {
      auto id = identity_block(int(shape[0]));
      std::copy(id.begin(), id.end(), args.back().data<int8_t>());
    }
  }
  args.push_back(NDArray::zeros(shape_of_tensor(output), DataType::Int(8)));
  return args;
}

NDArray AccelOperator::expected(const std::vector<NDArray>& args) const {
  std::map<const Operation*, NDArray> in;
  for (size_t i = 0; i < inputs.size(); ++i) in[inputs[i].op().get()] = args.at(i);
  return reference_eval({reference}, in)[0];
}

const std::vector<AccelConvLayer>& resnet18_accel_conv_layers() {
  static const std::vector<AccelConvLayer> layers = {
      {"c2", 64, 64, 56, 3, 1, 4},   {"c3", 64, 128, 56, 3, 2, 1},  {"c4", 64, 128, 56, 1, 2, 1},
      {"c5", 128, 128, 28, 3, 1, 3}, {"c6", 128, 256, 28, 3, 2, 1}, {"c7", 128, 256, 28, 1, 2, 1},
      {"c8", 256, 256, 14, 3, 1, 3}, {"c9", 256, 512, 14, 3, 2, 1}, {"c10", 256, 512, 14, 1, 2, 1},
      {"c11", 512, 512, 7, 3, 1, 3},
  };
  return layers;
}

AccelOperator make_accel_conv_layer(const AccelConvLayer& l, const AccelTarget& target, int virtual_threads,
                                    int oc_blocks) {
  AccelOpSpec spec;
  spec.channels = l.channels;
  spec.out_channels = l.out_channels;
  spec.size = l.size;
  spec.kernel = l.kernel;
  spec.stride = l.stride;
  spec.pad = l.kernel / 2;
  spec.virtual_threads = virtual_threads;
  if (l.channels % target.blocking.block_in || l.out_channels % target.blocking.block_out)
    LOOM_THROW(ShapeError, l.name, ": ", l.channels, " -> ", l.out_channels, " channels are not whole blocks of ",
               target.blocking.block_in, " -> ", target.blocking.block_out);
  int out = int(window_out(l.size, l.kernel, l.stride, spec.pad, spec.pad));
  ConvShape shape{out,
                  out,
                  l.out_channels / target.blocking.block_out,
                  l.channels / target.blocking.block_in,
                  l.kernel,
                  l.kernel,
                  l.stride,
                  false};
  AccelConvTiling t = choose_conv_tiling(shape, virtual_threads, target.limits);
  if (oc_blocks) t.oc_blocks = oc_blocks;
  spec.conv_tiling = t;
  return make_accel_operator(spec, target, l.name);
}

}  // namespace loom::ops
