// count_ops on expressions whose arithmetic is known by hand: a matmul's multiply-adds, a padded
// convolution whose index arithmetic and padding condition are not counted, an element-wise chain
// with a math call, and a run-time extent.
#include <gtest/gtest.h>

#include "loom/ir/op_count.h"

using namespace loom;
using namespace loom::ir;

TEST(OpCount, MatmulIsTwoOpsPerMultiplyAdd) {
  Tensor a = placeholder({8, 32}, DataType::Float(32), "A");
  Tensor b = placeholder({32, 16}, DataType::Float(32), "B");
  IterVar k = reduce_axis(32, "k");
  Tensor c = compute(
      {8, 16}, [&](Var i, Var j) { return sum(a(i, k) * b(k, j), {k}); }, "C");
  EXPECT_EQ(count_ops({c}), 2.0 * 8 * 16 * 32);
}

TEST(OpCount, IndexArithmeticAndConditionsAreNotCounted) {
  // A 3-tap stencil reading x(2i + r) over a zero-padded input: the padding's select is one
  // operation an element, its bounds test none; the stencil's index arithmetic none.
  Tensor x = placeholder({16}, DataType::Float(32), "x");
  Tensor pad = compute(
      {18}, [&](Var i) { return select(i >= 1 && i < 17, x(i - 1), Expr(0.0f)); }, "pad");
  IterVar r = reduce_axis(3, "r");
  Tensor y = compute(
      {8}, [&](Var i) { return sum(pad(i * 2 + r->var) * Expr(0.5f), {r}); }, "y");
  EXPECT_EQ(count_ops({y}), 18.0 * 1 + 8.0 * 3 * 2);
}

TEST(OpCount, ElementwiseChainWithACall) {
  Tensor x = placeholder({4, 10}, DataType::Float(32), "x");
  Tensor y = compute(
      {4, 10}, [&](Var i, Var j) { return exp(x(i, j) * Expr(2.0f) + Expr(1.0f)); }, "y");
  Tensor z = compute(
      {4, 10}, [&](Var i, Var j) { return max(y(i, j), Expr(0.0f)); }, "z");
  EXPECT_EQ(count_ops({z}), 40.0 * 3 + 40.0 * 1);
}

TEST(OpCount, RunTimeExtentIsUnknown) {
  Var n("n");
  Tensor x = placeholder({n, 10}, DataType::Float(32), "x");
  Tensor y = compute(
      {n, 10}, [&](Var i, Var j) { return x(i, j) + Expr(1.0f); }, "y");
  EXPECT_FALSE(count_ops({y}).has_value());
  EXPECT_EQ(count_ops({x}), 0.0);  // a placeholder computes nothing
}
