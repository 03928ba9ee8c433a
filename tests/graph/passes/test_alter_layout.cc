// Pass alter_layout: which values run channel-blocked (convs, grouped convs, concats, per-channel
// scales) and where layout transforms go; every rewritten graph against the interpreter.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/test_util.h"
#include "loom/graph/build.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/layout.h"
#include "loom/graph/op_attrs.h"
#include "loom/graph/passes.h"
#include "loom/graph/reference.h"
#include "loom/runtime/graph_executor.h"

namespace loom::graph {
namespace {

TEST(GraphPasses, LayoutTransformsOnlyAtBoundaries) {
  // ResNet-18: activations stay blocked from the first convolution to the global pool; only the
  // image going in and the pooled features going to the classifier are transformed.
  Graph g = builtin_model("resnet18", 1, 64);
  optimize(g);
  int transforms = 0, blocked_convs = 0;
  for (auto& n : g.nodes) {
    transforms += n.is_op() && n.op == "layout_transform";
    blocked_convs +=
        n.is_op() && (n.op == "conv2d" || n.op == "conv2d_winograd") && n.attrs.get_string("layout", "") == "NCHWc";
  }
  EXPECT_EQ(transforms, 2) << g.str();
  EXPECT_EQ(blocked_convs, 20) << g.str();
}

// Grouped convolutions (ResNeXt, RegNet) whose group widths are whole blocks run blocked, each
// output block reading only its group's input blocks; groups narrower than a block (ResNeXt's 4
// and 8 channels) are regrouped into blocks of whole groups with block-diagonal weights (3x3
// stride-1 ones as Winograd convolutions with the same groups); others stay NCHW. Against the
// interpreter.
TEST(GraphPasses, GroupedConvolutionsRunBlocked) {
  struct Case {
    int64_t C, O, groups, k, stride;
    bool blocked;
  };
  for (const Case& c : {Case{64, 64, 4, 3, 1, true}, Case{64, 128, 8, 3, 2, true}, Case{32, 32, 2, 1, 1, true},
                        Case{128, 128, 32, 3, 1, true}, Case{64, 64, 8, 3, 2, true}, Case{32, 32, 16, 1, 1, true},
                        Case{6, 12, 2, 3, 1, false}}) {
    SCOPED_TRACE(std::to_string(c.groups) + " groups, " + std::to_string(c.C) + " -> " + std::to_string(c.O));
    Graph g;
    int x = g.add_input("x", {{1, c.C, 9, 11}, DataType::Float(32)});
    int w = g.add_constant("w", test::random_float32({c.O, c.C / c.groups, c.k, c.k}, 1, -0.3, 0.3));
    int64_t p = c.k / 2;
    Attrs a = Attrs().set("groups", c.groups).set("pads", std::vector<int64_t>{p, p, p, p});
    a.set("strides", std::vector<int64_t>{c.stride, c.stride});
    int conv = g.add_op("conv2d", "conv", {x, w, g.add_constant("b", test::random_float32({c.O}, 2))}, a);
    g.outputs = {g.add_op("relu", "relu", {conv})};
    NDArray in = test::random_float32({1, c.C, 9, 11}, 3);
    NDArray want = reference_run(g, {in})[0];
    Graph o = g;
    optimize(o);
    bool blocked = false;
    for (auto& n : o.nodes) {
      if (!n.is_op() || (n.op != "conv2d" && n.op != "conv2d_winograd") || !conv_layout(n).blocked()) continue;
      blocked = true;
      // Regrouped where a group is narrower than the block b: C / b groups of one block each.
      int64_t b = o.type_of(n.inputs[1]).shape[4], group_width = c.C / c.groups;
      EXPECT_EQ(n.attrs.get_int("groups", 1), group_width < b ? c.C / b : c.groups) << o.str();
    }
    EXPECT_EQ(blocked, c.blocked) << o.str();
    NDArray interpreted = reference_run(o, {in})[0];  // the blocked graph in the interpreter too
    NDArray got = runtime::GraphExecutor::from_model_file(build(g).file, "grouped").run({in})[0];
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < want.numel(); ++i) {
      ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), 1e-4) << "element " << i;
      ASSERT_NEAR(interpreted.get_as_double(i), want.get_as_double(i), 1e-4) << "element " << i;
    }
  }
}

// A concat along channels whose inputs come in whole blocks stays blocked (DenseNet: no NCHW round
// trip per layer), and so do the per-channel scale and shift after it (BatchNorm that no conv
// absorbed); a concat with an input of part of a block, and a spatial broadcast, run plain. Every
// output equals the interpreter on the original graph.
TEST(GraphPasses, ChannelConcatStaysBlocked) {
  Graph g;
  int x = g.add_input("x", {{1, 8, 6, 7}, DataType::Float(32)});
  auto conv = [&](const std::string& name, int64_t out, uint64_t seed) {
    int w = g.add_constant(name + "_w", test::random_float32({out, 8, 3, 3}, seed, -0.3, 0.3));
    return g.add_op("conv2d", name, {x, w}, Attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1}));
  };
  int a = conv("a", 16, 1), b = conv("b", 32, 2), c = conv("c", 24, 3);
  int ab = g.add_op("concat", "cat_ab", {a, b}, Attrs().set("axis", int64_t(-3)));
  int scaled = g.add_op("mul", "scale", {ab, g.add_constant("gamma", test::random_float32({48, 1, 1}, 4, 0.5, 1.5))});
  int shifted =
      g.add_op("add", "shift", {scaled, g.add_constant("beta", test::random_float32({1, 48, 1, 1}, 5, -0.2, 0.2))});
  int act = g.add_op("relu", "act", {shifted});
  int spatial = g.add_op("mul", "spatial", {act, g.add_constant("mask", test::random_float32({1, 1, 6, 7}, 6))});
  int d = g.add_op("conv2d", "d", {spatial, g.add_constant("d_w", test::random_float32({16, 48, 1, 1}, 7, -0.3, 0.3))});
  int ac = g.add_op("concat", "cat_ac", {a, c}, Attrs().set("axis", int64_t(1)));
  g.outputs = {d, g.add_op("relu", "act_ac", {ac})};
  NDArray in = test::random_float32({1, 8, 6, 7}, 8);
  std::vector<NDArray> want = reference_run(g, {in});
  Graph o = g;
  optimize(o);
  auto rank_of = [&](const std::string& name) -> size_t {
    for (auto& n : o.nodes)
      if (n.name == name) return n.type.shape.size();
    return 0;
  };
  int64_t lanes = PipelineOptions().layout.vector_lanes;  // what optimize() blocks by
  EXPECT_EQ(rank_of("cat_ab"), 5u) << o.str();
  EXPECT_EQ(rank_of("scale"), 5u) << o.str();
  EXPECT_EQ(rank_of("shift"), 5u) << o.str();
  EXPECT_EQ(rank_of("spatial"), 4u) << o.str();
  // 24 channels: whole blocks of 8 (AVX2's lanes), not of 16 (AVX-512's).
  EXPECT_EQ(rank_of("cat_ac"), 24 % lanes == 0 ? 5u : 4u) << o.str();
  std::vector<NDArray> interpreted = reference_run(o, {in});
  std::vector<NDArray> got = runtime::GraphExecutor::from_model_file(build(g).file, "concat").run({in});
  for (size_t k = 0; k < want.size(); ++k) {
    ASSERT_EQ(got[k].shape(), want[k].shape());
    for (int64_t i = 0; i < want[k].numel(); ++i) {
      ASSERT_NEAR(interpreted[k].get_as_double(i), want[k].get_as_double(i), 1e-4)
          << "output " << k << " element " << i;
      ASSERT_NEAR(got[k].get_as_double(i), want[k].get_as_double(i), 1e-4) << "output " << k << " element " << i;
    }
  }
}

// A per-channel constant as a binary op's first operand, blocked while the layout pass adds nodes
// (the review's case: nine nodes, the repacked constant the ninth added, which grew the pass's
// type table under the output shape it was reading). Against the interpreter.
TEST(GraphPasses, ChannelConstantFirstOperandStaysBlocked) {
  Graph g;
  int x = g.add_input("x", {{1, 8, 4, 4}, DataType::Float(32)});
  std::vector<int> convs;
  for (int k = 0; k < 4; ++k) {
    int w = g.add_constant("w" + std::to_string(k), test::random_float32({8, 8, 1, 1}, 10 + k, -0.5, 0.5));
    convs.push_back(g.add_op("conv2d", "c" + std::to_string(k), {x, w}));
  }
  int cat = g.add_op("concat", "cat", convs, Attrs().set("axis", int64_t(2)));
  int y = g.add_op("mul", "scaled", {g.add_constant("s", test::random_float32({1, 8, 1, 1}, 20)), convs[0]});
  g.outputs = {cat, y};
  NDArray in = test::random_float32({1, 8, 4, 4}, 21);
  std::vector<NDArray> want = reference_run(g, {in});
  for (int lanes : {8, 16}) {
    Graph o = g;
    PipelineOptions po;
    po.layout.vector_lanes = lanes;
    optimize(o, po);
    for (auto& n : o.nodes)
      if (n.name == "scaled") EXPECT_EQ(n.type.shape.size(), 5u) << o.str();  // 8 channels: blocks of 8 either way
    std::vector<NDArray> got = reference_run(o, {in});
    for (size_t k = 0; k < want.size(); ++k)
      for (int64_t i = 0; i < want[k].numel(); ++i)
        ASSERT_NEAR(got[k].get_as_double(i), want[k].get_as_double(i), 1e-5) << "output " << k << " element " << i;
  }
}

// A squeeze-and-excitation block (EfficientNet, MobileNetV3): the computed [1, C, 1, 1] channel
// scales, as either operand of the multiply, convert to the blocked layout (a few elements) and
// the map they scale stays blocked instead of going to NCHW and back (docs/results.md).
// Against the interpreter (PyTorch: model_squeeze_excitation).
TEST(GraphPasses, ComputedChannelScalesKeepTheMapBlocked) {
  for (bool scale_first : {true, false}) {
    Graph g;
    int x = g.add_input("x", {{1, 8, 6, 6}, DataType::Float(32)});
    auto conv = [&](int in, int64_t O, int64_t C, int64_t k, const std::string& name) {
      int w = g.add_constant(name + "_w", test::random_float32({O, C, k, k}, int(O + C + k), -0.3, 0.3));
      Attrs a = Attrs().set("pads", std::vector<int64_t>(4, k / 2));
      return g.add_op("conv2d", name, {in, w, g.add_constant(name + "_b", test::random_float32({O}, int(O)))}, a);
    };
    int map = g.add_op("relu", "map", {conv(x, 32, 8, 3, "c0")});
    int squeezed = g.add_op("global_avg_pool2d", "pool", {map});
    int excited = g.add_op("relu", "fc1_relu", {conv(squeezed, 8, 32, 1, "fc1")});
    int scale = g.add_op("sigmoid", "scale", {conv(excited, 32, 8, 1, "fc2")});
    int scaled = g.add_op("mul", "scaled", scale_first ? std::vector<int>{scale, map} : std::vector<int>{map, scale});
    g.outputs = {conv(scaled, 16, 32, 1, "project")};
    infer_types(g);
    Graph o = g;
    PipelineOptions po;
    po.layout.vector_lanes = 16;
    optimize(o, po);
    for (int id = 0; id < static_cast<int>(o.nodes.size()); ++id) {
      const Node& n = o.node(id);
      if (n.name == "scaled") EXPECT_EQ(n.type.shape.size(), 5u) << o.str();
      // Only the image and the output convert at the map's size.
      if (n.op == "layout_transform" && n.type.numel() > 32)
        EXPECT_TRUE(n.inputs[0] == o.inputs[0] || std::find(o.outputs.begin(), o.outputs.end(), id) != o.outputs.end())
            << n.name << "\n"
            << o.str();
    }
    NDArray in = test::random_float32({1, 8, 6, 6}, 5);
    NDArray want = reference_run(g, {in})[0];
    NDArray interpreted = reference_run(o, {in})[0];
    NDArray got = runtime::GraphExecutor::from_model_file(build(g).file, "se").run({in})[0];
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < want.numel(); ++i) {
      ASSERT_NEAR(interpreted.get_as_double(i), want.get_as_double(i), 1e-4) << "element " << i;
      ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), 1e-4) << "element " << i;
    }
  }
}

// A weight that several layers read (an unrolled recurrence's steps, a weight-tied conv) is packed
// once: every layer reads the one packed copy. Against the interpreter.
TEST(GraphPasses, WeightsSharedByLayersArePackedOnce) {
  Graph g;
  int x = g.add_input("x", {{1, 32}, DataType::Float(32)});
  int w = g.add_constant("w", test::random_float32({32, 32}, 1, -0.3, 0.3));
  int b = g.add_constant("b", test::random_float32({32}, 2));
  int h = x;
  for (int step = 0; step < 3; ++step)
    h = g.add_op("tanh", "h" + std::to_string(step), {g.add_op("dense", "d" + std::to_string(step), {h, w, b})});
  int image = g.add_input("image", {{1, 16, 17, 17}, DataType::Float(32)});
  int cw = g.add_constant("cw", test::random_float32({16, 16, 3, 3}, 3, -0.3, 0.3));
  Attrs a = Attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1}).set("strides", std::vector<int64_t>{2, 2});
  int c = image;
  for (int step = 0; step < 2; ++step)
    c = g.add_op("relu", "r" + std::to_string(step), {g.add_op("conv2d", "c" + std::to_string(step), {c, cw}, a)});
  g.outputs = {h, c};
  std::vector<NDArray> in = {test::random_float32({1, 32}, 4), test::random_float32({1, 16, 17, 17}, 5)};
  std::vector<NDArray> want = reference_run(g, in);
  Graph o = g;
  optimize(o);
  std::set<int> dense_weights, conv_weights;
  for (auto& n : o.nodes) {
    if (n.is_op() && n.op == "dense") {
      EXPECT_NE(n.attrs.get_int("n_block", 0), 0) << o.str();
      dense_weights.insert(n.inputs[1]);
    }
    if (n.is_op() && n.op == "conv2d") {
      EXPECT_TRUE(conv_layout(n).blocked()) << o.str();
      conv_weights.insert(n.inputs[1]);
    }
  }
  EXPECT_EQ(dense_weights.size(), 1u) << o.str();
  EXPECT_EQ(conv_weights.size(), 1u) << o.str();
  std::vector<NDArray> got = runtime::GraphExecutor::from_model_file(build(g).file, "shared").run(in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    ASSERT_EQ(got[k].shape(), want[k].shape());
    for (int64_t i = 0; i < want[k].numel(); ++i)
      ASSERT_NEAR(got[k].get_as_double(i), want[k].get_as_double(i), 1e-4) << "output " << k << " element " << i;
  }
}

// With NCHW activations (blocked_activations off, as in CUDA builds) a plain convolution keeps
// its layout but its weights are packed by output blocks ([O/b, C, kh, kw, b], attribute
// oc_block): the interpreter reads the packed weights to the same sums, bit for bit, as the
// plain ones, for strides, dilations and asymmetric pads.
TEST(GraphPasses, PlainConvWeightsPackedByOutputBlocksInterpretTheSame) {
  Graph g;
  int x = g.add_input("x", {{2, 5, 11, 9}, DataType::Float(32)});
  int w = g.add_constant("w", test::random_float32({32, 5, 3, 3}, 1, -0.3, 0.3));
  Attrs a = Attrs().set("pads", std::vector<int64_t>{1, 0, 2, 1}).set("strides", std::vector<int64_t>{2, 1});
  a.set("dilations", std::vector<int64_t>{1, 2});
  int conv = g.add_op("conv2d", "conv", {x, w, g.add_constant("b", test::random_float32({32}, 2))}, a);
  g.outputs = {g.add_op("relu", "relu", {conv})};
  NDArray in = test::random_float32({2, 5, 11, 9}, 3);
  NDArray want = reference_run(g, {in})[0];
  Graph o = g;
  PipelineOptions po;
  po.layout.blocked_activations = false;
  optimize(o, po);
  int packed = 0;
  for (const Node& n : o.nodes)
    if (n.is_op() && n.op == "conv2d") {
      EXPECT_FALSE(conv_layout(n).blocked()) << o.str();
      packed += ConvAttrs::from(n).oc_block > 1;
    }
  ASSERT_EQ(packed, 1) << o.str();
  NDArray got = reference_run(o, {in})[0];
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0, n = want.numel(); i < n; ++i)
    ASSERT_EQ(got.get_as_double(i), want.get_as_double(i)) << "element " << i;
}

}  // namespace
}  // namespace loom::graph
