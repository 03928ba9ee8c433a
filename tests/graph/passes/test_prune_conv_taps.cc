// Pass prune_conv_taps: kernel taps that read only padding cut from the weights, and partly dead
// ones split into regions; against the interpreter on the original graph.
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/graph/build.h"
#include "loom/graph/passes.h"
#include "loom/graph/reference.h"
#include "loom/runtime/graph_executor.h"

namespace loom::graph {
namespace {

// Kernel taps that read only padding at every output position are cut from the weights, the pads
// shrinking to keep the output where it was: DeepLabV3's atrous convolutions (dilation >= the map)
// become 1x1; a partly live dilation keeps its taps. Against the interpreter on the original graph.
// (Case: H, W, kernel, dilation, stride, pads, and the kernel expected after the pass.)
TEST(GraphPasses, DeadConvolutionTapsArePruned) {
  struct Case {
    int64_t H, W, k, dilation, stride;
    std::vector<int64_t> pads;  // top, left, bottom, right
    int64_t kh, kw;             // the kernel after the pass
  };
  // Cut only into the square, evenly padded form the conv templates and tuning keys assume: a
  // cut that would leave 2x3 or 1x2 taps, or uneven pads, keeps the kernel.
  for (const Case& c : {Case{14, 14, 3, 24, 1, {24, 24, 24, 24}, 1, 1}, Case{14, 14, 3, 12, 1, {12, 12, 12, 12}, 3, 3},
                        Case{1, 1, 5, 1, 1, {2, 2, 2, 2}, 1, 1}, Case{3, 3, 3, 4, 2, {4, 4, 4, 4}, 1, 1},
                        Case{4, 9, 3, 3, 1, {0, 3, 3, 3}, 3, 3}, Case{5, 7, 3, 6, 2, {6, 0, 6, 6}, 3, 3},
                        Case{2, 2, 3, 1, 2, {1, 1, 1, 1}, 3, 3}, Case{6, 6, 3, 1, 1, {1, 1, 1, 1}, 3, 3}}) {
    SCOPED_TRACE(std::to_string(c.H) + "x" + std::to_string(c.W) + " dilation " + std::to_string(c.dilation));
    Graph g;
    int x = g.add_input("x", {{1, 4, c.H, c.W}, DataType::Float(32)});
    int w = g.add_constant("w", test::random_float32({8, 4, c.k, c.k}, 1, -0.5, 0.5));
    Attrs a = Attrs().set("pads", c.pads).set("dilations", std::vector<int64_t>{c.dilation, c.dilation});
    a.set("strides", std::vector<int64_t>{c.stride, c.stride});
    g.outputs = {g.add_op("conv2d", "conv", {x, w, g.add_constant("b", test::random_float32({8}, 2))}, a)};
    infer_types(g);
    Graph pruned = g;
    prune_conv_taps(pruned);
    const Node& conv = pruned.node(pruned.outputs[0]);
    const Shape& kernel = pruned.type_of(conv.inputs[1]).shape;
    EXPECT_EQ(kernel[2], c.kh);
    EXPECT_EQ(kernel[3], c.kw);
    EXPECT_EQ(conv.type.shape, g.node(g.outputs[0]).type.shape);
    NDArray in = test::random_float32({1, 4, c.H, c.W}, 3);
    NDArray want = reference_run(g, {in})[0];
    NDArray interpreted = reference_run(pruned, {in})[0];
    NDArray got = runtime::GraphExecutor::from_model_file(build(g).file, "dilated").run({in})[0];
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < want.numel(); ++i) {
      ASSERT_NEAR(interpreted.get_as_double(i), want.get_as_double(i), 1e-5) << "element " << i;
      ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), 1e-4) << "element " << i;
    }
  }
}

// Taps dead for most outputs but not all (DeepLabV3's dilation 12 over 14x14) cut the output into
// regions of one live tap set each: convolutions of those taps alone, unpadded, over slices of
// the input, concatenated back; slices and concats keep the channel-blocked layout. Where more
// than half the work is live the conv stays whole. Against the interpreter on the original graph
// (PyTorch checks the same forms: model_conv_atrous_regions*).
TEST(GraphPasses, PartlyDeadConvolutionTapsSplitIntoRegions) {
  struct Case {
    int64_t C, H, W, dilation, stride;
    size_t regions;  // conv2d nodes after the pass; 1: not split
  };
  for (const Case& c : {Case{64, 14, 14, 12, 1, 9}, Case{96, 20, 16, 8, 2, 6}, Case{64, 14, 14, 2, 1, 1}}) {
    SCOPED_TRACE(std::to_string(c.H) + "x" + std::to_string(c.W) + " dilation " + std::to_string(c.dilation));
    Graph g;
    int x = g.add_input("x", {{1, c.C, c.H, c.W}, DataType::Float(32)});
    // A 1x1 stem: the atrous conv reads a blocked value, as inside a network.
    x = g.add_op("conv2d", "stem", {x, g.add_constant("stem_w", test::random_float32({c.C, c.C, 1, 1}, 4, -0.2, 0.2))});
    int w = g.add_constant("w", test::random_float32({64, c.C, 3, 3}, 1, -0.1, 0.1));
    Attrs a = Attrs().set("pads", std::vector<int64_t>(4, c.dilation));
    a.set("dilations", std::vector<int64_t>{c.dilation, c.dilation});
    a.set("strides", std::vector<int64_t>{c.stride, c.stride});
    int conv = g.add_op("conv2d", "conv", {x, w, g.add_constant("b", test::random_float32({64}, 2))}, a);
    g.outputs = {g.add_op("relu", "relu", {conv})};
    infer_types(g);
    Graph o = g;
    PipelineOptions po;
    po.layout.vector_lanes = 16;
    optimize(o, po);
    size_t convs = 0, transforms = 0;
    for (const Node& n : o.nodes) {
      if (n.op == "layout_transform") ++transforms;
      if (n.op != "conv2d" || n.name.rfind("stem", 0) == 0) continue;
      ++convs;
      if (c.regions > 1) EXPECT_EQ(n.attrs.get_ints("pads"), std::vector<int64_t>(4, 0)) << o.str();
    }
    EXPECT_EQ(convs, c.regions) << o.str();
    EXPECT_EQ(transforms, 2u) << o.str();  // the input and the output only: slices and concats stay blocked
    NDArray in = test::random_float32({1, c.C, c.H, c.W}, 3);
    NDArray want = reference_run(g, {in})[0];
    NDArray interpreted = reference_run(o, {in})[0];
    NDArray got = runtime::GraphExecutor::from_model_file(build(g).file, "atrous").run({in})[0];
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < want.numel(); ++i) {
      ASSERT_NEAR(interpreted.get_as_double(i), want.get_as_double(i), 1e-4) << "element " << i;
      ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), 1e-4) << "element " << i;
    }
  }
}

// Two atrous convs in a row, both split: the second reads the first's regions through their
// concat, which the pass types at once (it was read untyped, an internal error). Against the
// interpreter on the original graph.
TEST(GraphPasses, ChainedPartlyDeadConvolutionsSplit) {
  Graph g;
  int x = g.add_input("x", {{1, 64, 14, 14}, DataType::Float(32)});
  Attrs a = Attrs().set("pads", std::vector<int64_t>(4, 12)).set("dilations", std::vector<int64_t>{12, 12});
  int y = x;
  for (int k = 0; k < 2; ++k)
    y = g.add_op("conv2d", "atrous" + std::to_string(k),
                 {y, g.add_constant("w" + std::to_string(k), test::random_float32({64, 64, 3, 3}, 7 + k, -0.1, 0.1))},
                 a);
  g.outputs = {y};
  infer_types(g);
  Graph o = g;
  prune_conv_taps(o);
  size_t convs = 0;
  for (const Node& n : o.nodes) convs += n.op == "conv2d";
  EXPECT_EQ(convs, 18u) << o.str();
  NDArray in = test::random_float32({1, 64, 14, 14}, 9);
  NDArray want = reference_run(g, {in})[0], got = reference_run(o, {in})[0];
  for (int64_t i = 0; i < want.numel(); ++i) ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), 1e-4) << i;
}

}  // namespace
}  // namespace loom::graph
