#include <gtest/gtest.h>

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

}  // namespace
}  // namespace loom::ir
