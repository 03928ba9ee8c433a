// Pass fuse_ops: which nodes share a kernel (a residual block, diamonds, LayerNorm's variance),
// and that the fused kernels compute what the interpreter does.
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "graph/graph_test_fixtures.h"
#include "loom/graph/build.h"
#include "loom/graph/passes.h"
#include "loom/graph/reference.h"
#include "loom/runtime/graph_executor.h"

namespace loom::graph {
namespace {

TEST(GraphPasses, ConvBiasReluResidualBecomeOneKernel) {
  ResidualBlock b;
  for (bool blocked : {false, true}) {
    Graph g = b.g;
    PipelineOptions o;
    o.layout.blocked_activations = blocked;
    o.layout.winograd_min_saved_macs = 0;  // Winograd on a map this small too: its kernel fuses the same
    optimize(g, o);
    FusionPlan plan = fuse_ops(g);
    std::string s = plan.str(g);
    // NCHW: one kernel. NCHWc: the input is blocked once (read by the conv and the residual add),
    // the conv kernel (Winograd F(2x2, 3x3) on the 6x7 map), and the output unblocked.
    ASSERT_EQ(plan.groups.size(), blocked ? 3u : 1u) << s;
    EXPECT_NE(s.find(blocked ? "[out-elemwise-fusable]: conv2d_winograd* relu add relu"
                             : "[out-elemwise-fusable]: conv2d* relu add relu"),
              std::string::npos)
        << s;
    int transforms = 0;
    for (auto& n : g.nodes) transforms += n.is_op() && n.op == "layout_transform";
    EXPECT_EQ(transforms, blocked ? 2 : 0) << g.str();
  }
}

// Diamonds: x = conv(...) read by an element-wise side chain and by the node that closes it
// (SiLU x * sigmoid(x), GELU x * (1 + erf(x / c)) / 2) fuse into the conv's kernel, so x is
// never stored; the compiled graph matches the interpreter. A residual add of x after the closing
// node closes a larger diamond (all one kernel). No diamond closes where the side's value is also
// a graph output, or read by another node, or where x is read after the closing node by a node
// that cannot join (a pool): the conv keeps its own kernel.
TEST(GraphPasses, DiamondsFuseIntoTheirProducer) {
  auto conv_graph = [](Graph& g, int64_t C) {
    int x = g.add_input("x", {{1, C, 6, 7}, DataType::Float(32)});
    return g.add_op("conv2d", "conv",
                    {x, g.add_constant("w", test::random_float32({C, C, 3, 3}, 31, -0.3, 0.3)),
                     g.add_constant("b", test::random_float32({C}, 32, -0.1, 0.1))},
                    Attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1}));
  };
  auto scalar = [](float v) {
    NDArray a = NDArray::empty({1}, DataType::Float(32));
    a.data<float>()[0] = v;
    return a;
  };
  enum Variant { kDiamond, kResidual, kSideIsOutput, kSideReadElsewhere, kXPooledAfter };
  for (Variant variant : {kDiamond, kResidual, kSideIsOutput, kSideReadElsewhere, kXPooledAfter})
    for (const char* act : {"silu", "gelu"}) {
      SCOPED_TRACE(std::string(act) + ", variant " + std::to_string(int(variant)));
      bool fuses = variant == kDiamond || variant == kResidual;
      Graph g;
      int conv = conv_graph(g, 16), side, y;
      if (std::string(act) == "silu") {
        side = g.add_op("sigmoid", "sig", {conv});
        y = g.add_op("mul", "silu", {conv, side});
      } else {
        int d = g.add_op("div", "d", {conv, g.add_constant("c", scalar(1.4142f))});
        side = g.add_op("add", "one_plus", {g.add_op("erf", "erf", {d}), g.add_constant("one", scalar(1.0f))});
        y = g.add_op("mul", "half", {g.add_op("mul", "gelu", {conv, side}), g.add_constant("h", scalar(0.5f))});
      }
      g.outputs = {y};
      if (variant == kSideIsOutput) g.outputs.push_back(side);
      if (variant == kSideReadElsewhere) g.outputs.push_back(g.add_op("relu", "side_reader", {side}));
      if (variant == kResidual) g.outputs[0] = g.add_op("add", "residual", {y, conv});
      if (variant == kXPooledAfter) g.outputs.push_back(g.add_op("global_avg_pool2d", "x_pool", {conv}));
      Graph o = g;
      PipelineOptions po;
      po.layout.blocked_activations = false;
      optimize(o, po);
      FusionPlan plan = fuse_ops(o);
      std::string s = plan.str(o);
      int with_conv = 0;
      for (const FusedGroup& grp : plan.groups)
        for (int id : grp.nodes)
          if (o.node(id).op == "conv2d") {
            ++with_conv;
            EXPECT_EQ(grp.nodes.size() > 1, fuses) << s;
            std::string closing = variant == kResidual ? "residual" : std::string(act) == "silu" ? "silu" : "half";
            if (fuses) {
              EXPECT_EQ(o.node(grp.output).name, closing) << s;
            }
          }
      EXPECT_EQ(with_conv, 1) << s;
      for (bool blocked : {false, true}) {
        BuildOptions bo;
        bo.pipeline.layout.blocked_activations = blocked;
        auto ex = runtime::GraphExecutor::from_model_file(build(g, bo).file, "diamond");
        NDArray x = test::random_float32({1, 16, 6, 7}, 33, -2, 2);
        std::vector<NDArray> got = ex.run({x}), want = reference_run(g, {x});
        for (size_t k = 0; k < want.size(); ++k)
          for (int64_t i = 0; i < want[k].numel(); ++i)
            ASSERT_NEAR(got[k].get_as_double(i), want[k].get_as_double(i), 1e-5) << k << " " << i;
      }
    }
}

// LayerNorm as PyTorch exports it: the square is a multiply, and the variance's reduction takes the
// square in (one kernel from the square to the normalized output); numbers as the interpreter's.
TEST(GraphPasses, LayerNormVarianceIsOneKernelWithoutPow) {
  Graph g;
  int x = g.add_input("x", {{3, 40}, DataType::Float(32)});
  Attrs last = Attrs().set("axes", std::vector<int64_t>{-1}).set("keepdims", int64_t(1));
  int centered = g.add_op("sub", "centered", {x, g.add_op("reduce_mean", "mean", {x}, last)});
  NDArray two = NDArray::empty({}, DataType::Float(32));
  two.set_from_double(0, 2.0);
  int sq = g.add_op("pow", "square", {centered, g.add_constant("two", two)});
  NDArray eps = NDArray::empty({}, DataType::Float(32));
  eps.set_from_double(0, 1e-5);
  int var = g.add_op("add", "var_eps", {g.add_op("reduce_mean", "var", {sq}, last), g.add_constant("eps", eps)});
  NDArray three = NDArray::empty({}, DataType::Float(32));
  three.set_from_double(0, 3.0);
  g.outputs = {g.add_op("div", "normalized", {centered, g.add_op("sqrt", "std", {var})}),
               g.add_op("pow", "cube", {x, g.add_constant("three", three)})};  // stays a pow
  NDArray in = test::random_float32({3, 40}, 9, -3, 3);
  auto want = reference_run(g, {in});
  Graph o = g;
  optimize(o);
  int pows = 0;
  for (auto& n : o.nodes) pows += n.is_op() && n.op == "pow";
  EXPECT_EQ(pows, 1) << o.str();
  std::string plan = fuse_ops(o).str(o);
  EXPECT_NE(plan.find("mul reduce_mean* add sqrt div"), std::string::npos) << plan;
  auto got = runtime::GraphExecutor::from_model_file(build(g).file, "ln").run({in});
  for (size_t k = 0; k < 2; ++k)
    for (int64_t i = 0; i < want[k].numel(); ++i)
      EXPECT_NEAR(got[k].get_as_double(i), want[k].get_as_double(i), 1e-4) << "output " << k << " element " << i;
}

}  // namespace
}  // namespace loom::graph
