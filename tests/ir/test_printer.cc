#include <gtest/gtest.h>

#include <algorithm>

#include "loom/ir/functor.h"
#include "loom/ir/printer.h"
#include "loom/ir/tensor.h"

namespace loom::ir {
namespace {

TEST(Printer, PrecedenceAndParentheses) {
  Var a("a"), b("b"), c("c");
  EXPECT_EQ(to_string((a + b) * c), "(a + b)*c");
  EXPECT_EQ(to_string(a - (b - c)), "a - (b - c)");
  EXPECT_EQ(to_string(a - b - c), "a - b - c");
  EXPECT_EQ(to_string(a < b && b < c), "a < b && b < c");
  EXPECT_EQ(to_string(max(a, 0)), "max(a, 0)");
}

TEST(Printer, TensorExpressions) {
  Tensor A = placeholder({4, 4}, DataType::Float(16), "A");
  IterVar k = reduce_axis(4, "k");
  Tensor B = compute(
      {4}, [&](Var i) { return sum(A(i, k), {k}); }, "B");
  EXPECT_EQ(to_string(B.op()->body), "sum(A(i, k), axis=[k in [0, 4)])");
  EXPECT_EQ(to_string(cast(DataType::Int(8), Var("x"))), "int8(x)");
  EXPECT_EQ(to_string(ramp(Var("x"), 1, 4)), "ramp(x, 1, 4)");
}

TEST(Printer, ReductionOfNonReduceAxisIsAnError) {
  Tensor A = placeholder({4}, DataType::Float(32), "A");
  auto axis = make_iter_var(Var("i"), Range{0, 4}, IterKind::DataPar);
  EXPECT_THROW(sum(A(axis), {axis}), TypeError);
}

// post_order_visit visits the children of a node before the node (its documented order).
TEST(Functor, PostOrderVisitsChildrenFirst) {
  Var x("x"), y("y");
  Expr e = (x + y) * 3;
  std::vector<std::string> seen;
  post_order_visit(e, [&](const Expr& n) { seen.push_back(to_string(n)); });
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(seen.back(), to_string(e));  // the root last
  auto at = [&](const std::string& s) { return std::find(seen.begin(), seen.end(), s) - seen.begin(); };
  EXPECT_LT(at("x"), at(to_string(x + y)));
  EXPECT_LT(at("y"), at(to_string(x + y)));
  EXPECT_LT(at(to_string(x + y)), at(to_string(e)));
}

}  // namespace
}  // namespace loom::ir
