// Pass pad_conv_channels: convs with odd output channel counts computed on whole blocks.
#include <gtest/gtest.h>

#include <map>

#include "common/test_util.h"
#include "loom/graph/build.h"
#include "loom/graph/passes.h"
#include "loom/graph/reference.h"
#include "loom/runtime/graph_executor.h"

namespace loom::graph {
namespace {

// A conv with 21 output channels (a segmentation head's classes) computes 32 zero-padded ones,
// channel-blocked, and a slice keeps the 21; one with 3 (padding past twice the work) and one
// with a multiple of 8 are left alone. The optimized graph in the interpreter and the compiled
// model equal the interpreter on the original graph.
TEST(GraphPasses, OddOutputChannelsArePaddedToBlocks) {
  Graph g;
  int x = g.add_input("x", {{1, 16, 9, 9}, DataType::Float(32)});
  auto conv = [&](const std::string& name, int in, int64_t c, int64_t o) {
    int w = g.add_constant(name + "_w", test::random_float32({o, c, 1, 1}, uint64_t(o), -0.5, 0.5));
    int b = g.add_constant(name + "_b", test::random_float32({o}, uint64_t(o + 1)));
    return g.add_op("conv2d", name, {in, w, b});
  };
  int head = conv("head", g.add_op("relu", "r", {conv("body", x, 16, 24)}), 24, 21);
  g.outputs = {head, conv("tiny", x, 16, 3)};
  NDArray in = test::random_float32({1, 16, 9, 9}, 3);
  std::vector<NDArray> want = reference_run(g, {in});
  Graph o = g;
  PipelineOptions po;
  po.layout.vector_lanes = 16;
  optimize(o, po);
  std::map<std::string, Shape> convs;
  int slices = 0;
  for (const Node& n : o.nodes) {
    if (n.is_op() && n.op == "conv2d") convs[n.name] = n.type.shape;
    slices += n.is_op() && n.op == "slice";
  }
  EXPECT_EQ(convs["head_padded"], (Shape{1, 2, 9, 9, 16})) << o.str();  // 32 channels, blocked
  EXPECT_EQ(convs["tiny"], (Shape{1, 3, 9, 9})) << o.str();
  EXPECT_EQ(convs.count("body_padded"), 0u) << o.str();
  EXPECT_EQ(slices, 1) << o.str();
  std::vector<NDArray> interpreted = reference_run(o, {in});
  std::vector<NDArray> got = runtime::GraphExecutor::from_model_file(build(g).file, "heads").run({in});
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_TRUE(test::arrays_close(interpreted[k], want[k], 1e-9, 1e-9)) << "interpreted, output " << k;
    EXPECT_TRUE(test::arrays_close(got[k], want[k], 1e-4, 1e-4)) << "compiled, output " << k;
  }
}

// int8 weights: values in [-100, 100] from a simple generator, reproducible without NDArray's.
NDArray int8_values(const Shape& shape, int seed) {
  NDArray a = NDArray::empty(shape, DataType::Int(8));
  for (int64_t i = 0; i < a.numel(); ++i) a.set_from_double(i, double((i * 37 + seed * 11) % 201) - 100);
  return a;
}

// A quantized model's int8 conv with 58 output channels (ShuffleNetV2's branches) computes 64,
// blocked, and its requantization (per tensor, or per channel with its multipliers padded) runs on
// the 64 before the slice; the compiled model equals the interpreter on the original graph bit for
// bit.
void expect_int8_conv_padded(bool per_channel) {
  Graph g;
  int x = g.add_input("x", {{1, 64, 7, 7}, DataType::Float(32)});
  int q = g.add_op("quantize", "q", {x}, Attrs().set("exponent", int64_t(-5)));
  int w = g.add_constant("w", int8_values({58, 64, 1, 1}, 1));
  NDArray bias = NDArray::empty({58}, DataType::Int(32));
  for (int64_t c = 0; c < 58; ++c) bias.set_from_double(c, double(c * 97 % 1000) - 500);
  int conv = g.add_op("conv2d", "conv", {q, w, g.add_constant("b", bias)});
  int rq = -1;
  if (!per_channel) {
    rq = g.add_op("requantize", "rq", {conv}, Attrs().set("shift", int64_t(9)).set("min", int64_t(0)));
  } else {
    NDArray m = NDArray::empty({58}, DataType::Int(32));
    for (int64_t c = 0; c < 58; ++c) m.set_from_double(c, double(int64_t(1) << (c % 4)));
    rq = g.add_op("requantize_channel", "rq", {conv, g.add_constant("m", m)},
                  Attrs().set("shift", int64_t(11)).set("min", int64_t(0)));
  }
  g.outputs = {g.add_op("dequantize", "y", {rq}, Attrs().set("exponent", int64_t(-3)))};
  NDArray in = test::random_float32({1, 64, 7, 7}, 5, -4, 4);
  std::vector<NDArray> want = reference_run(g, {in});
  Graph o = g;
  optimize(o);
  bool padded = false, requantized_padded = false;
  for (const Node& n : o.nodes) {
    padded |= n.is_op() && n.op == "conv2d" && n.name == "conv_padded";
    requantized_padded |= n.is_op() && n.name == "rq_padded";
  }
  EXPECT_TRUE(padded && requantized_padded) << o.str();
  std::vector<NDArray> got = runtime::GraphExecutor::from_model_file(build(g).file, "int8 conv").run({in});
  EXPECT_TRUE(test::arrays_close(got[0], want[0], 0, 0)) << "per channel " << per_channel;
}

// Depthwise convs with 58 channels (ShuffleNetV2), float and int8: the input padded with zero
// channels to 64, 64 groups, a slice after; the compiled model equals the interpreter.
TEST(GraphPasses, OddDepthwiseConvsArePaddedWithTheirInputs) {
  for (bool int8 : {false, true}) {
    Graph g;
    int x = g.add_input("x", {{1, 58, 9, 9}, DataType::Float(32)});
    int in = int8 ? g.add_op("quantize", "q", {x}, Attrs().set("exponent", int64_t(-5))) : x;
    NDArray w = int8 ? int8_values({58, 1, 3, 3}, 2) : test::random_float32({58, 1, 3, 3}, 6, -0.5, 0.5);
    NDArray b = NDArray::empty({58}, int8 ? DataType::Int(32) : DataType::Float(32));
    for (int64_t c = 0; c < 58; ++c) b.set_from_double(c, int8 ? double(c * 31 % 400) - 200 : 0.01 * double(c));
    Attrs a = Attrs().set("groups", int64_t(58)).set("pads", std::vector<int64_t>{1, 1, 1, 1});
    int conv = g.add_op("conv2d", "dw", {in, g.add_constant("w", w), g.add_constant("b", b)}, a);
    g.outputs = {int8 ? g.add_op("dequantize", "y",
                                 {g.add_op("requantize", "rq", {conv}, Attrs().set("shift", int64_t(6)))},
                                 Attrs().set("exponent", int64_t(-4)))
                      : conv};
    NDArray v = test::random_float32({1, 58, 9, 9}, 8, -3, 3);
    std::vector<NDArray> want = reference_run(g, {v});
    Graph o = g;
    optimize(o);
    int64_t groups = 0;
    for (const Node& n : o.nodes)
      if (n.is_op() && n.name == "dw_padded") groups = n.attrs.get_int("groups", 1);
    EXPECT_EQ(groups, 64) << o.str();
    std::vector<NDArray> got = runtime::GraphExecutor::from_model_file(build(g).file, "depthwise").run({v});
    EXPECT_TRUE(test::arrays_close(got[0], want[0], int8 ? 0 : 1e-5, int8 ? 0 : 1e-5)) << "int8 " << int8;
  }
}

TEST(GraphPasses, OddInt8OutputChannelsArePaddedToBlocks) {
  expect_int8_conv_padded(false);
  expect_int8_conv_padded(true);
}

}  // namespace
}  // namespace loom::graph
