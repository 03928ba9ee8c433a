// Pass pool_before_pointwise_conv: average pools moved before 1x1 convs where that is exact and
// cheaper; against the interpreter on the original graph.
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/graph/build.h"
#include "loom/graph/passes.h"
#include "loom/graph/reference.h"
#include "loom/runtime/graph_executor.h"

namespace loom::graph {
namespace {

// Pools of convs of pools: the nodes the pass makes are typed at once, so a later pool can read
// them (it threw "read before type inference"); each rewrite against the interpreter.
TEST(GraphPasses, ChainedPoolsAndPointwiseConvs) {
  for (bool pool_of_pool : {false, true}) {
    SCOPED_TRACE(pool_of_pool ? "conv, pool, pool" : "conv, pool, conv, pool");
    Graph g;
    int x = g.add_input("x", {{2, 16, 8, 8}, DataType::Float(32)});
    Attrs pool2 = Attrs()
                      .set("kernel", std::vector<int64_t>{2, 2})
                      .set("strides", std::vector<int64_t>{2, 2})
                      .set("pads", std::vector<int64_t>(4, 0));
    int a = g.add_op("conv2d", "a", {x, g.add_constant("wa", test::random_float32({24, 16, 1, 1}, 1, -0.3, 0.3))});
    int p1 = g.add_op("avg_pool2d", "p1", {a}, pool2);
    int y = p1;
    if (!pool_of_pool)
      y = g.add_op("conv2d", "b", {p1, g.add_constant("wb", test::random_float32({8, 24, 1, 1}, 2, -0.3, 0.3))});
    g.outputs = {
        g.add_op(pool_of_pool ? "avg_pool2d" : "global_avg_pool2d", "p2", {y}, pool_of_pool ? pool2 : Attrs())};
    infer_types(g);
    Graph o = g;
    pool_before_pointwise_conv(o);
    NDArray in = test::random_float32({2, 16, 8, 8}, 3);
    NDArray want = reference_run(g, {in})[0], got = reference_run(o, {in})[0];
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < want.numel(); ++i) ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), 1e-5) << i;
    EXPECT_EQ(o.node(o.outputs[0]).name, "p2");
  }
}

// An average pool of a 1x1 conv's output becomes the conv of the pooled input (DenseNet's
// transitions) wherever every output averages its window's in-bounds values and that does fewer
// operations: against the interpreter on the original graph, which pools the conv's output.
TEST(GraphPasses, AveragePoolsMoveBeforePointwiseConvs) {
  struct Case {
    std::string what;
    std::string pool = "avg_pool2d";
    int64_t kernel = 2, stride = 2, pad = 0;
    bool include_pad = false, ceil = false, zero_width_pad = false, second_reader = false, pool_is_output = false;
    int64_t conv_kernel = 1, groups = 1, conv_stride = 1, H = 10, W = 12;
    bool moved = true;
  };
  std::vector<Case> cases(12);
  cases[0].what = "2x2 stride 2 (a DenseNet transition)";
  cases[1].what = "global average, the graph's output", cases[1].pool = "global_avg_pool2d",
  cases[1].pool_is_output = true;
  cases[2].what = "a zero-width pad before the pool (PyTorch's export)", cases[2].zero_width_pad = true;
  cases[3].what = "partial windows (ceil mode)", cases[3].kernel = 3, cases[3].ceil = true, cases[3].H = 11;
  cases[4].what = "padding left out of the count", cases[4].kernel = 3, cases[4].pad = 1;
  cases[5].what = "grouped 1x1 conv", cases[5].groups = 4;
  cases[6].what = "padding counted (the bias is not averaged with weight one)", cases[6].kernel = 3, cases[6].pad = 1,
  cases[6].include_pad = true, cases[6].moved = false;
  cases[7].what = "an unpadded 3x3 conv", cases[7].conv_kernel = 3, cases[7].moved = false;
  cases[8].what = "the conv read twice", cases[8].second_reader = true, cases[8].moved = false;
  cases[9].what = "a pool that keeps the map's size", cases[9].kernel = 3, cases[9].stride = 1, cases[9].pad = 1,
  cases[9].moved = false;
  cases[10].what = "a strided 1x1 conv", cases[10].conv_stride = 2, cases[10].moved = false;
  cases[11].what = "3x3 stride 2 pool", cases[11].kernel = 3;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Graph g;
    const int64_t C = 32, O = 16;
    int x = g.add_input("x", {{1, C, c.H, c.W}, DataType::Float(32)});
    int w = g.add_constant("w", test::random_float32({O, C / c.groups, c.conv_kernel, c.conv_kernel}, 1, -0.3, 0.3));
    Attrs ca = Attrs().set("groups", c.groups).set("pads", std::vector<int64_t>(4, 0));
    ca.set("strides", std::vector<int64_t>{c.conv_stride, c.conv_stride});
    int conv = g.add_op("conv2d", "conv", {x, w, g.add_constant("b", test::random_float32({O}, 2, -1, 1))}, ca);
    int pooled = conv;
    if (c.zero_width_pad)
      pooled =
          g.add_op("pad", "pad", {pooled}, Attrs().set("pads", std::vector<int64_t>(8, 0)).set("mode", "constant"));
    Attrs pa;
    if (c.pool == "avg_pool2d")
      pa.set("kernel", std::vector<int64_t>{c.kernel, c.kernel})
          .set("strides", std::vector<int64_t>{c.stride, c.stride})
          .set("pads", std::vector<int64_t>(4, c.pad))
          .set("count_include_pad", int64_t(c.include_pad))
          .set("ceil_mode", int64_t(c.ceil));
    pooled = g.add_op(c.pool, "pool", {pooled}, pa);
    g.outputs = {c.pool_is_output ? pooled : g.add_op("relu", "relu", {pooled})};
    if (c.second_reader) g.outputs.push_back(g.add_op("sigmoid", "other_reader", {conv}));
    infer_types(g);
    Graph o = g;
    simplify_inference(o);
    pool_before_pointwise_conv(o);
    const Node& out = c.pool_is_output ? o.node(o.outputs[0]) : o.node(o.node(o.outputs[0]).inputs[0]);
    EXPECT_EQ(out.op, c.moved ? "conv2d" : c.pool) << o.str();
    EXPECT_EQ(o.node(o.outputs[0]).name, g.node(g.outputs[0]).name);  // outputs keep their names
    if (c.moved) {
      EXPECT_EQ(o.node(out.inputs[0]).op, c.pool) << o.str();
    }
    EXPECT_EQ(o.node(o.outputs[0]).type, g.node(g.outputs[0]).type);
    NDArray in = test::random_float32({1, C, c.H, c.W}, 3);
    std::vector<NDArray> want = reference_run(g, {in}), interpreted = reference_run(o, {in});
    std::vector<NDArray> got = runtime::GraphExecutor::from_model_file(build(g).file, "pooled").run({in});
    for (size_t k = 0; k < want.size(); ++k) {
      ASSERT_EQ(got[k].shape(), want[k].shape());
      for (int64_t i = 0; i < want[k].numel(); ++i) {
        ASSERT_NEAR(interpreted[k].get_as_double(i), want[k].get_as_double(i), 1e-5) << "element " << i;
        ASSERT_NEAR(got[k].get_as_double(i), want[k].get_as_double(i), 1e-4) << "element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace loom::graph
