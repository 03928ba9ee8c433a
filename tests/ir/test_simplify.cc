#include <gtest/gtest.h>

#include "loom/ir/printer.h"
#include "loom/ir/simplify.h"

namespace loom::ir {
namespace {

TEST(Simplify, LinearFormsCancel) {
  Var x("x"), y("y");
  EXPECT_EQ(to_string(simplify(x * 4 + 3 - x * 4)), "3");
  EXPECT_EQ(to_string(simplify((x + 2) * 4 - 8 + y)), "x*4 + y");
  EXPECT_EQ(to_string(simplify(x - (y - x))), "x*2 - y");
  EXPECT_EQ(to_string(simplify(Expr(2) * 3 + 1)), "7");
}

TEST(Simplify, FloorDivModWithRanges) {
  Var x("x"), y("y");
  VarBounds b{{y.get(), {0, 15}}};
  EXPECT_EQ(to_string(simplify((x * 16 + y) / 16, b)), "x");
  EXPECT_EQ(to_string(simplify((x * 16 + y) % 16, b)), "y");
  EXPECT_EQ(to_string(simplify((x * 16 + y + 32) / 16, b)), "x + 2");
  EXPECT_EQ(to_string(simplify(Expr(-7) / 2)), "-4");  // floor semantics
  EXPECT_EQ(to_string(simplify(Expr(-7) % 2)), "1");
  EXPECT_EQ(to_string(simplify(x / 4 / 2)), "x/8");
}

TEST(Simplify, ComparisonsAndMinMaxUnderBounds) {
  Var i("i"), o("o");
  VarBounds b{{i.get(), {0, 3}}, {o.get(), {0, 3}}};
  EXPECT_EQ(to_string(simplify(o * 4 + i < 16, b)), "true");
  EXPECT_EQ(to_string(simplify(o * 4 + i < 15, b)), "o*4 + i < 15");
  EXPECT_EQ(to_string(simplify(min(i, i + 1))), "i");
  EXPECT_EQ(to_string(simplify(max(o * 4, o * 4 + 3))), "o*4 + 3");
  EXPECT_TRUE(can_prove(i >= 0, b));
  EXPECT_FALSE(can_prove(i >= 1, b));
}

TEST(Simplify, StatementsFoldLoopsAndIfs) {
  Var i("i");
  Buffer buf = make_buffer("A", DataType::Float(32), {Expr(8)});
  Stmt loop = for_loop(i, 0, 8, ForKind::Serial, if_then_else(i < 8, store(buf, 1.0f, i)));
  EXPECT_EQ(to_string(simplify(loop)), "for (i, 0, 8) {\n  A[i] = 1.0f\n}\n");
  Stmt single = for_loop(i, 2, 1, ForKind::Serial, store(buf, 1.0f, i));
  EXPECT_EQ(to_string(simplify(single)), "A[2] = 1.0f\n");
  EXPECT_EQ(to_string(simplify(for_loop(i, 0, 0, ForKind::Serial, store(buf, 1.0f, i)))), "0\n");
}

TEST(Simplify, IntegerCastsWrapAndFloatsFold) {
  EXPECT_EQ(to_string(simplify(cast(DataType::Int(8), Expr(200)))), "(int8)-56");
  EXPECT_EQ(to_string(simplify(Expr(1.5f) * Expr(2.0f))), "3.0f");
  EXPECT_EQ(to_string(simplify(cast(DataType::Int(32), Expr(2.7f)))), "2");
}

}  // namespace
}  // namespace loom::ir

namespace loom::ir {
namespace {

// A rewritten if_then_else keeps the lanes of its values, not of its scalar condition (a vectorized
// padded pool once became x16(if_then_else(...)) of vectors, invalid LLVM IR).
TEST(Simplify, IfThenElseKeepsTheLanesOfItsValues) {
  Var x("x");
  Expr vec = broadcast(make_const(DataType::Float(32), 1.0), 16);
  Expr e = if_then_else(x + 0 < 5, vec, broadcast(make_const(DataType::Float(32), -1.0), 16));
  Expr s = simplify(e);
  ASSERT_NE(s.as<CallNode>(), nullptr) << to_string(s);
  EXPECT_EQ(s.type().lanes(), 16);
  EXPECT_EQ(s.as<CallNode>()->args[0].type().lanes(), 1);
}

}  // namespace
}  // namespace loom::ir
