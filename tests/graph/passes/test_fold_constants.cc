// Pass fold_constants: constant subgraphs evaluated at compile time, transposes at any size.
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/graph/passes.h"
#include "loom/runtime/error.h"

namespace loom::graph {
namespace {

TEST(GraphPasses, ConstantSubgraphsFold) {
  Graph g;
  int x = g.add_input("x", {{2, 3}, DataType::Float(32)});
  int c = g.add_constant("c", test::random_float32({3, 2}, 3));
  int t = g.add_op("transpose", "t", {c}, Attrs().set("perm", std::vector<int64_t>{1, 0}));
  g.outputs = {g.add_op("add", "sum", {x, t})};
  optimize(g);
  int ops = 0;
  for (auto& n : g.nodes) ops += n.is_op();
  EXPECT_EQ(ops, 1) << g.str();
  for (auto& n : g.nodes)
    if (n.is_constant()) {
      EXPECT_EQ(n.type.shape, (Shape{2, 3}));
    }
}

// Transposes of constants fold whatever their size (the evaluator stops at fold_constants'
// max_elements): ONNX's 2-D MatMul by a constant imports as dense(x, transpose(W)), and a language
// model's output projection (768 x 50257) stayed a transpose at every run. Here past a limit of
// 1000 elements; a 3-axis permutation checked element by element, and a bad permutation named.
TEST(GraphPasses, ConstantTransposesFoldAtAnySize) {
  Graph g;
  int x = g.add_input("x", {{2, 48}, DataType::Float(32)});
  NDArray w = test::random_float32({48, 40}, 1);
  int wt = g.add_op("transpose", "wt", {g.add_constant("w", w)}, Attrs().set("perm", std::vector<int64_t>{1, 0}));
  NDArray c = test::random_float32({3, 5, 7}, 2);
  int ct = g.add_op("transpose", "ct", {g.add_constant("c", c)}, Attrs().set("perm", std::vector<int64_t>{2, 0, 1}));
  g.outputs = {g.add_op("dense", "proj", {x, wt}), ct};
  infer_types(g);
  fold_constants(g, 1000);
  for (auto& n : g.nodes) EXPECT_FALSE(n.is_op() && n.op == "transpose") << g.str();
  const Node& folded_w = g.node(g.node(g.outputs[0]).inputs[1]);
  ASSERT_TRUE(folded_w.is_constant());
  ASSERT_EQ(folded_w.value.shape(), (Shape{40, 48}));
  for (int64_t k = 0; k < 48; ++k)
    for (int64_t n = 0; n < 40; ++n)
      ASSERT_EQ(folded_w.value.get_as_double(n * 48 + k), w.get_as_double(k * 40 + n)) << k << ", " << n;
  const Node& folded_c = g.node(g.outputs[1]);
  ASSERT_TRUE(folded_c.is_constant());
  ASSERT_EQ(folded_c.value.shape(), (Shape{7, 3, 5}));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j)
      for (int64_t k = 0; k < 7; ++k)
        ASSERT_EQ(folded_c.value.get_as_double((k * 3 + i) * 5 + j), c.get_as_double((i * 5 + j) * 7 + k));
  EXPECT_THROW(transpose_constant(c, {0, 0, 1}), InternalError);
  EXPECT_THROW(transpose_constant(c, {}), InternalError);
}

}  // namespace
}  // namespace loom::graph
