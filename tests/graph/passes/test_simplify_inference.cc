// Pass simplify_inference: BatchNorm folded into the conv before it (against the formula, and a
// compiled residual block against naive loops) or made a multiply-add, and copies removed.
#include <gtest/gtest.h>

#include <cmath>

#include "common/test_util.h"
#include "graph/graph_test_fixtures.h"
#include "loom/graph/build.h"
#include "loom/graph/passes.h"
#include "loom/runtime/graph_executor.h"

namespace loom::graph {
namespace {

TEST(GraphPasses, BatchNormFoldsIntoTheConvolution) {
  ResidualBlock b;
  Graph g = b.g;
  optimize(g);
  int batch_norms = 0, convs = 0;
  for (auto& n : g.nodes) {
    batch_norms += n.is_op() && n.op == "batch_norm";
    if (n.is_op() && (n.op == "conv2d" || n.op == "conv2d_winograd")) {
      ++convs;
      EXPECT_EQ(n.inputs.size(), 3u) << "the folded BatchNorm leaves a bias";
    }
  }
  EXPECT_EQ(batch_norms, 0) << g.str();
  EXPECT_EQ(convs, 1);
}

// The folded weights and bias against the formula, written out here: W' = W * s, b' = (b - mean) *
// s + beta with s = gamma / sqrt(var + eps), for an epsilon (1e-3) and variances (1e-4 .. 1e-3)
// where epsilon decides the scale.
TEST(GraphPasses, BatchNormFoldMatchesTheFormula) {
  const int64_t C = 3, O = 4;
  NDArray w = test::random_float32({O, C, 1, 1}, 11), b = test::random_float32({O}, 12, -0.1, 0.1);
  NDArray gamma = test::random_float32({O}, 13, 0.5, 1.5), beta = test::random_float32({O}, 14, -0.1, 0.1);
  NDArray mean = test::random_float32({O}, 15, -0.05, 0.05), var = test::random_float32({O}, 16, 1e-4, 1e-3);
  const double eps = 1e-3;
  Graph g;
  int x = g.add_input("x", {{1, C, 2, 2}, DataType::Float(32)});
  int conv = g.add_op("conv2d", "conv", {x, g.add_constant("w", w), g.add_constant("b", b)});
  int bn = g.add_op("batch_norm", "bn",
                    {conv, g.add_constant("gamma", gamma), g.add_constant("beta", beta), g.add_constant("mean", mean),
                     g.add_constant("var", var)},
                    Attrs().set("epsilon", eps));
  g.outputs = {bn};
  infer_types(g);
  simplify_inference(g);
  const Node& folded = g.node(g.outputs[0]);  // the BatchNorm's users now read the conv
  ASSERT_EQ(folded.op, "conv2d") << g.str();
  ASSERT_EQ(folded.inputs.size(), 3u) << g.str();
  const NDArray &fw = g.node(folded.inputs[1]).value, &fb = g.node(folded.inputs[2]).value;
  for (int64_t o = 0; o < O; ++o) {
    double s = gamma.get_as_double(o) / std::sqrt(var.get_as_double(o) + eps);
    EXPECT_NEAR(fb.get_as_double(o), (b.get_as_double(o) - mean.get_as_double(o)) * s + beta.get_as_double(o),
                1e-5 * std::fabs(s))
        << "bias of channel " << o;
    for (int64_t c = 0; c < C; ++c)
      EXPECT_NEAR(fw.get_as_double(o * C + c), w.get_as_double(o * C + c) * s, 1e-5 * std::fabs(s))
          << "weight " << o << ", " << c;
  }
}

TEST(GraphPasses, CompiledBlockMatchesNaiveLoops) {
  ResidualBlock b;
  for (bool blocked : {false, true}) {
    BuildOptions o;
    o.pipeline.layout.blocked_activations = blocked;
    BuildResult r = build(b.g, o);
    auto ex = runtime::GraphExecutor::from_model_file(r.file, "block");
    NDArray x = test::random_float32({1, b.C, b.H, b.W}, 9);
    NDArray got = ex.run({x})[0], want = b.reference(x);
    for (int64_t i = 0; i < want.numel(); ++i)
      ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), 1e-4) << i << (blocked ? " NCHWc" : " NCHW");
  }
}

TEST(GraphPasses, UnfoldableBatchNormBecomesMultiplyAdd) {
  Graph g;
  int x = g.add_input("x", {{1, 4, 3, 3}, DataType::Float(32)});
  std::vector<int> params{x};
  for (int i = 0; i < 4; ++i)
    params.push_back(g.add_constant("p" + std::to_string(i), test::random_float32({4}, 20 + i, 0.5, 1.5)));
  g.outputs = {g.add_op("batch_norm", "bn", params)};
  optimize(g);
  std::string s = g.str();
  EXPECT_EQ(s.find("batch_norm"), std::string::npos) << s;
  EXPECT_NE(s.find("mul("), std::string::npos) << s;
  EXPECT_NE(s.find("add("), std::string::npos) << s;
}

// An identity or a zero-width pad that is a graph output goes, and its producer takes its name
// (the model's output name); where the producer is an input, the copy stays, and so does a pad of
// positive width anywhere.
TEST(GraphPasses, RemovedCopiesKeepTheOutputName) {
  for (const char* op : {"identity", "pad"}) {
    SCOPED_TRACE(op);
    for (bool from_input : {false, true}) {
      Graph g;
      int x = g.add_input("x", {{1, 4, 3, 3}, DataType::Float(32)});
      int src = from_input ? x : g.add_op("relu", "relu", {x});
      Attrs a = std::string(op) == "pad" ? Attrs().set("pads", std::vector<int64_t>(8, 0)) : Attrs();
      g.outputs = {g.add_op(op, "output", {src}, a)};
      infer_types(g);
      simplify_inference(g);
      const Node& out = g.node(g.outputs[0]);
      EXPECT_EQ(out.name, "output") << g.str();
      EXPECT_EQ(out.op, from_input ? op : "relu") << g.str();
    }
  }
  // A pad of positive width is no copy: it stays.
  Graph g;
  int relu = g.add_op("relu", "relu", {g.add_input("x", {{1, 4, 3, 3}, DataType::Float(32)})});
  g.outputs = {g.add_op("pad", "output", {relu}, Attrs().set("pads", std::vector<int64_t>{0, 0, 1, 0, 0, 0, 0, 2}))};
  infer_types(g);
  simplify_inference(g);
  EXPECT_EQ(g.node(g.outputs[0]).op, "pad") << g.str();
  EXPECT_EQ(g.node(g.outputs[0]).type.shape, (Shape{1, 4, 4, 5}));
}

}  // namespace
}  // namespace loom::graph
