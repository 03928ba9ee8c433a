// Pass dense_from_matmul: matmuls by constant matrices become dense layers, with their bias add.
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/graph/build.h"
#include "loom/graph/passes.h"
#include "loom/graph/reference.h"
#include "loom/runtime/graph_executor.h"

namespace loom::graph {
namespace {

// Linear layers as PyTorch exports them for 3-D activations: matmul by a constant, then a bias add.
TEST(GraphPasses, MatmulByConstantsBecomesDenseWithItsBias) {
  Graph g;
  int x = g.add_input("x", {{2, 5, 12}, DataType::Float(32)});
  int w = g.add_constant("w", test::random_float32({12, 7}, 1));  // shared by two layers
  int b = g.add_constant("b", test::random_float32({1, 1, 7}, 2));
  int y1 = g.add_op("add", "bias", {b, g.add_op("matmul", "proj1", {x, w})});
  int y2 = g.add_op("matmul", "proj2", {x, w});
  int wide = g.add_constant("b_wide", test::random_float32({5, 7}, 3));  // not along the last axis only
  int y3 = g.add_op("add", "bias_rows", {g.add_op("matmul", "proj3", {x, w}), wide});
  int v = g.add_op("transpose", "xt", {x}, Attrs().set("perm", std::vector<int64_t>{0, 2, 1}));
  int y4 = g.add_op("matmul", "activations", {x, v});  // no constant: stays a matmul
  g.outputs = {y1, y2, y3, y4};
  Graph d = g;
  dense_from_matmul(d);
  int dense = 0, matmul = 0, transposed = 0;
  for (auto& n : d.nodes) {
    dense += n.is_op() && n.op == "dense";
    matmul += n.is_op() && n.op == "matmul";
    transposed += n.is_constant() && n.type.shape == Shape{7, 12};
  }
  EXPECT_EQ(dense, 3) << d.str();
  EXPECT_EQ(matmul, 1) << d.str();
  EXPECT_EQ(transposed, 1) << "one transposed copy of the shared weights\n" << d.str();
  for (auto& n : d.nodes)
    if (n.is_op() && n.op == "dense" && n.name.find("proj1") != std::string::npos)
      EXPECT_EQ(n.inputs.size(), 3u) << "the bias add folds into the first layer";
  NDArray in = test::random_float32({2, 5, 12}, 4);
  auto want = reference_run(g, {in}), got = reference_run(d, {in});
  auto compiled = runtime::GraphExecutor::from_model_file(build(g).file, "m").run({in});
  for (size_t o = 0; o < 4; ++o) {
    ASSERT_EQ(got[o].shape(), want[o].shape());
    for (int64_t i = 0; i < want[o].numel(); ++i) {
      EXPECT_NEAR(got[o].get_as_double(i), want[o].get_as_double(i), 1e-5) << "output " << o << " element " << i;
      EXPECT_NEAR(compiled[o].get_as_double(i), want[o].get_as_double(i), 1e-5) << "output " << o << " element " << i;
    }
  }
}

}  // namespace
}  // namespace loom::graph
