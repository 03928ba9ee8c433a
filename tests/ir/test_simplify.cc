#include <gtest/gtest.h>

#include "loom/ir/functor.h"
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
  // Whole multiples of the divisor leave the quotient without bounds on the rest: what one
  // iteration moves a tile's address by (prefetch_ahead).
  EXPECT_EQ(to_string(simplify((x + 32) / 16 - x / 16)), "2");
  EXPECT_EQ(to_string(simplify((x - 17) / 16)), "(x + 15)/16 - 2");
  EXPECT_EQ(to_string(simplify((x + 16) % 16)), "x % 16");
  // Nested quotients still merge once the inner one's constant is out.
  EXPECT_EQ(to_string(simplify((x + 32) / 16 / 4)), "(x + 32)/64");
  EXPECT_EQ(to_string(simplify((x - 1) / 16 / 2)), "(x + 31)/32 - 1");
  // Not for unsigned values, whose subtraction wraps: (0u - 1) / 16 is 268435455.
  Var u("u", DataType::UInt(32));
  Expr u17 = u + make_const(u.type(), 17), whole = u17 / make_const(u.type(), 16);
  EXPECT_EQ(to_string(simplify(whole)), to_string(whole));
}

// Constant folding of floor division and modulus for every sign combination of dividend and
// divisor: the quotient rounds towards minus infinity and the remainder takes the divisor's sign.
// The expected values are written out by hand (Python's // and %), not computed by a helper.
// A fused loop's index split back into its two axes and recombined (x / c * c + x % c) is the
// index itself, for any x (floor semantics), times any coefficient and beside other terms; other
// divisors, coefficients or operands are left alone. Checked on values too.
TEST(Simplify, DivModPairsRecombine) {
  Var f("f"), y("y");
  EXPECT_EQ(to_string(simplify(f / 28 * 28 + f % 28)), "f");
  EXPECT_EQ(to_string(simplify((f / 28 * 28 + f % 28) * 3 + y)), "f*3 + y");
  EXPECT_EQ(to_string(simplify(y * 784 + f / 28 * 28 + f % 28 + 5)), "y*784 + f + 5");
  EXPECT_EQ(to_string(simplify((f + y) / 7 * 7 + (f + y) % 7)), "f + y");
  EXPECT_EQ(to_string(simplify(f / 28 * 27 + f % 28)), "f/28*27 + f % 28");  // not c x (f / c)
  EXPECT_EQ(to_string(simplify(f / 28 * 28 + f % 14)), "f/28*28 + f % 14");  // another divisor
  EXPECT_EQ(to_string(simplify(f / 28 * 28 + y % 28)), "f/28*28 + y % 28");  // another operand
  // The rewritten form equals the original at negative, boundary and large values of f.
  Expr original = (f / 28 * 28 + f % 28) * 3 + y * 5;
  Expr rewritten = simplify(original);
  for (int v : {-57, -28, -1, 0, 1, 27, 28, 783}) {
    VarMap at = {{f.get(), Expr(v)}, {y.get(), Expr(2)}};
    Expr want = simplify(substitute(original, at)), got = simplify(substitute(rewritten, at));
    ASSERT_TRUE(as_const_int(want) && as_const_int(got)) << to_string(want) << " " << to_string(got);
    EXPECT_EQ(*as_const_int(got), *as_const_int(want)) << "f = " << v;
  }
}

TEST(Simplify, FloorDivModConstantsOfEverySignCombination) {
  struct Case {
    int64_t a, b, q, r;
  };
  const Case cases[] = {{7, 2, 3, 1},    {-7, 2, -4, 1},   {7, -2, -4, -1}, {-7, -2, 3, -1}, {6, 3, 2, 0},
                        {-6, 3, -2, 0},  {6, -3, -2, 0},   {-6, -3, 2, 0},  {1, -5, -1, -4}, {-1, 5, -1, 4},
                        {-1, -5, 0, -1}, {0, -5, 0, 0},    {5, -1, -5, 0},  {-5, -1, 5, 0},  {13, -4, -4, -3},
                        {-13, 4, -4, 3}, {-13, -4, 3, -1}, {2, -7, -1, -5}, {-2, -7, 0, -2}, {100, -7, -15, -5}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.a) + " and " + std::to_string(c.b));
    for (DataType t : {DataType::Int(32), DataType::Int(64)}) {
      Expr a = make_const(t, double(c.a)), b = make_const(t, double(c.b));
      Expr q = simplify(a / b), r = simplify(a % b);
      ASSERT_TRUE(as_const_int(q)) << t.str() << ": " << to_string(q);
      ASSERT_TRUE(as_const_int(r)) << t.str() << ": " << to_string(r);
      EXPECT_EQ(*as_const_int(q), c.q) << t.str() << " " << c.a << " / " << c.b;
      EXPECT_EQ(*as_const_int(r), c.r) << t.str() << " " << c.a << " % " << c.b;
    }
  }
  // Folding inside a larger expression and through a linear form's constant: (x + 7) - x is 7.
  Var x("x");
  EXPECT_EQ(to_string(simplify(((x + 7) - x) / -2)), "-4");
  EXPECT_EQ(to_string(simplify(((x - 7) - x) / -2)), "3");
  EXPECT_EQ(to_string(simplify(((x + 7) - x) % -2)), "-1");
  EXPECT_EQ(to_string(simplify(((x - 7) - x) % 2)), "1");
  EXPECT_EQ(to_string(simplify(((x - 7) - x) % -2)), "-1");
  // A known remainder range by a positive divisor, with a negative constant part.
  VarBounds bx{{x.get(), {0, 3}}};
  EXPECT_EQ(to_string(simplify((x * 4 - 7 - x * 4) / 4, bx)), "-2");
  EXPECT_EQ(to_string(simplify((x - 8) / 4, bx)), "-2");
  EXPECT_EQ(to_string(simplify((x - 8) % 4, bx)), "x");
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
