// hoist_reciprocals: float divisions by a loop-invariant divisor multiply by its reciprocal,
// computed once before the loop; the results stay within an ulp or two of the division, special
// divisors (zero, infinity, NaN, denormals) included, and divisors that change in the loop, or
// whose load may not run, stay divisions.
#include <algorithm>
#include <cmath>
#include <map>

#include "codegen_test_util.h"
#include "loom/ir/functor.h"
#include "loom/ir/tensor.h"
#include "loom/schedule/lower.h"
#include "loom/schedule/schedule.h"

namespace loom::test {
namespace {

using namespace loom::ir;

// Per output buffer, the divisions of its type left in its stores (not an index's integer ones)
// and the float ones; and each reciprocal's let with the number of loops around it.
struct Divisions : IRVisitor {
  std::map<std::string, int> left, float_left;
  std::map<std::string, int> recip_depth;
  int depth = 0;
  using IRVisitor::visit;
  void visit_for(const ForNode* op) override {
    ++depth;
    IRVisitor::visit_for(op);
    --depth;
  }
  void visit_let_stmt(const LetStmtNode* op) override {
    if (op->var.name().rfind("recip", 0) == 0 && op->var.name().rfind("recip_scale", 0) != 0)
      recip_depth[op->var.name()] = depth;
    IRVisitor::visit_let_stmt(op);
  }
  void visit_store(const StoreNode* op) override {
    post_order_visit(op->value, [&](const Expr& e) {
      if (e.kind() != ExprKind::Div) return;
      left[op->buffer->name] += e.type().with_lanes(1) == op->value.type().with_lanes(1);
      float_left[op->buffer->name] += e.type().is_float();
    });
    IRVisitor::visit_store(op);
  }
};

Divisions divisions_of(const LoweredFunc& f) {
  Divisions d;
  d.visit(f.body);
  return d;
}

// got equals want where want is NaN or infinite, else is within `ulps` of it (a float32 ulp, or
// the denormals' spacing below the normal range).
::testing::AssertionResult within_ulps(const NDArray& got, const NDArray& want, double ulps) {
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = got.get_as_double(i), w = want.get_as_double(i);
    bool ok = std::isnan(w)   ? std::isnan(g)
              : std::isinf(w) ? g == w
                              : std::abs(g - w) <= ulps * std::max(0x1p-23 * std::abs(w), 0x1p-149);
    if (!ok) return ::testing::AssertionFailure() << "element " << i << ": " << g << ", want " << w;
  }
  return ::testing::AssertionSuccess();
}

// Y = X / S[i] (a row's divisor: one reciprocal per row), Z = X / W (each element its own: a
// division), over 8 rows of 64 columns in vectors of 16; the rows' divisors include zero, an
// infinity, NaN, a denormal, a tiny normal value and one near the largest float, their
// numerators scaled so the quotients are normal numbers. P divides by two divisors of a row: a reciprocal each.
TEST(LLVMReciprocals, ARowsDivisorIsOneReciprocalPerRow) {
  const int rows = 8, cols = 64;
  DataType f32 = DataType::Float(32);
  Tensor X = placeholder({rows, cols}, f32, "X"), S = placeholder({rows}, f32, "S"),
         W = placeholder({rows, cols}, f32, "W"), S2 = placeholder({rows}, f32, "S2");
  Tensor Y = compute(
      {rows, cols}, [&](Var i, Var j) { return X(i, j) / S(i); }, "Y");
  Tensor Z = compute(
      {rows, cols}, [&](Var i, Var j) { return X(i, j) / W(i, j); }, "Z");
  Tensor P = compute(
      {rows, cols}, [&](Var i, Var j) { return X(i, j) / S2(i) + X(i, j) / (S2(i) * 3.0f); }, "P");
  schedule::Schedule s({Y, Z, P});
  for (const Tensor& t : {Y, Z, P}) {
    auto st = s[t];
    auto [outer, inner] = st.split(st.axis(1), 16);
    st.vectorize(inner);
  }
  LoweredFunc f = schedule::lower(s, {X, S, W, S2, Y, Z, P}, "row_divisors");
  Divisions d = divisions_of(f);
  EXPECT_EQ(d.left["Y"] + d.left["P"], 0) << to_string(f);
  EXPECT_GT(d.left["Z"], 0) << to_string(f);
  ASSERT_EQ(d.recip_depth.size(), 3u) << to_string(f);
  for (auto& [name, depth] : d.recip_depth) EXPECT_EQ(depth, 1) << "one per row, inside the row loop\n" << to_string(f);

  NDArray x = random_float32({rows, cols}, 1, -10, 10), w = random_float32({rows, cols}, 2, 0.5, 4);
  NDArray sd = NDArray::empty({rows}, f32);
  const double divisors[rows] = {3.0, -0.5, 1e-40, -1e-38, 0.0, INFINITY, NAN, 3.2e38};
  for (int i = 0; i < rows; ++i) {
    sd.set_from_double(i, divisors[i]);
    const double tiny = std::abs(divisors[i]) < 1e-30 && divisors[i] != 0, huge = std::abs(divisors[i]) > 1e30;
    if (tiny || huge)  // numerators of the divisor's size: quotients near 1
      for (int j = 0; j < cols; ++j)
        x.set_from_double(i * cols + j, x.get_as_double(i * cols + j) * (tiny ? 1e-39 : 1e37));
  }
  NDArray s2 = random_float32({rows}, 3, 1, 8);
  NDArray y = NDArray::zeros({rows, cols}, f32), z = NDArray::zeros({rows, cols}, f32),
          p = NDArray::zeros({rows, cols}, f32);
  codegen::build_llvm({f}).call(f.name, {x, sd, w, s2, y, z, p});
  NDArray want_y = NDArray::empty({rows, cols}, f32), want_z = NDArray::empty({rows, cols}, f32),
          want_p = NDArray::empty({rows, cols}, f32);
  for (int64_t k = 0; k < x.numel(); ++k) {
    const float xk = float(x.get_as_double(k)), d2 = float(s2.get_as_double(k / cols));
    want_y.set_from_double(k, xk / float(sd.get_as_double(k / cols)));
    want_z.set_from_double(k, xk / float(w.get_as_double(k)));
    want_p.set_from_double(k, xk / d2 + xk / (d2 * 3.0f));  // terms of one sign: no cancellation
  }
  EXPECT_TRUE(within_ulps(y, want_y, 1));  // 1 / 3.2e38 unscaled is subnormal: 4 ulps off
  EXPECT_TRUE(within_ulps(z, want_z, 0));
  EXPECT_TRUE(within_ulps(p, want_p, 3));
}

// Divisions that stay where they are, or move less far: integer and half divisions; a divisor
// computed inside the row loop (compute_at) gets its reciprocal inside it, before the columns;
// over a symbolic number of rows in tiles of 8, the tiles' divisor load is hoisted only inside
// the row-tile loop (which may run no iteration), and the guarded tail keeps its division; a
// divisor dividing integers stays in such a loop too.
TEST(LLVMReciprocals, DivisorsThatMayChangeOrNotRunStayInside) {
  const int rows = 8, cols = 32;
  DataType f32 = DataType::Float(32), i32 = DataType::Int(32), f16 = DataType::Float(16);
  Tensor X = placeholder({rows, cols}, f32, "X"), S = placeholder({rows}, f32, "S");
  Tensor A = placeholder({rows, cols}, i32, "A"), K = placeholder({rows}, i32, "K");
  Tensor H = placeholder({rows, cols}, f16, "H"), G = placeholder({rows}, f16, "G");
  Tensor T = compute(
      {rows}, [&](Var i) { return S(i) * 2.0f; }, "T");
  Tensor Y = compute(
      {rows, cols}, [&](Var i, Var j) { return X(i, j) / T(i); }, "Y");
  Tensor Q = compute(
      {rows, cols}, [&](Var i, Var j) { return A(i, j) / K(i); }, "Q");
  Tensor R = compute(
      {rows, cols}, [&](Var i, Var j) { return H(i, j) / G(i); }, "R");
  // quotients that a rounding, an integer conversion, a comparison or a remainder reads
  Tensor Rd = compute(
      {rows, cols}, [&](Var i, Var j) { return round_even(X(i, j) / S(i)); }, "Rd");
  Tensor Ci = compute(
      {rows, cols}, [&](Var i, Var j) { return cast(i32, X(i, j) / S(i)); }, "Ci");
  Tensor Cm = compute(
      {rows, cols}, [&](Var i, Var j) { return select(X(i, j) / S(i) > 0.5f, 1.0f, 0.0f); }, "Cm");
  Tensor Md = compute(
      {rows, cols}, [&](Var i, Var j) { return floormod(X(i, j) / S(i), Expr(2.0f)); }, "Md");
  schedule::Schedule s({Y, Q, R, Rd, Ci, Cm, Md});
  s[T].compute_at(s[Y], s[Y].axis(0));
  LoweredFunc f = schedule::lower(s, {X, S, A, K, H, G, Y, Q, R, Rd, Ci, Cm, Md}, "kept_divisions");
  Divisions d = divisions_of(f);
  EXPECT_EQ(d.left["Y"], 0) << to_string(f);
  for (const char* kept : {"Q", "R", "Rd", "Cm", "Md"}) EXPECT_GT(d.left[kept], 0) << kept << "\n" << to_string(f);
  EXPECT_GT(d.float_left["Ci"], 0) << "an integer store of a float quotient\n" << to_string(f);
  ASSERT_EQ(d.recip_depth.size(), 1u) << to_string(f);
  EXPECT_EQ(d.recip_depth.begin()->second, 1) << to_string(f);
  EXPECT_TRUE(matches_interpreter(f, 3, 1, 9));  // Q and R, as the interpreter runs them
  std::vector<NDArray> args = random_args(f, 3, 1, 9);
  codegen::build_llvm({f}).call(f.name, args);
  NDArray want = NDArray::empty({rows, cols}, f32);
  for (int64_t k = 0; k < want.numel(); ++k)
    want.set_from_double(k, float(args[0].get_as_double(k)) / (float(args[1].get_as_double(k / cols)) * 2.0f));
  EXPECT_TRUE(within_ulps(args[6], want, 2));

  Var n("n");
  Tensor U = placeholder({n, cols}, f32, "U"), D = placeholder({4}, f32, "D");
  Tensor V = compute(
      {n, cols}, [&](Var i, Var j) { return U(i, j) / D(0); }, "V");
  schedule::Schedule sv({V});
  sv[V].split(sv[V].axis(0), 8);
  LoweredFunc g = schedule::lower(sv, {U, D, V}, "symbolic_rows");
  Divisions dv = divisions_of(g);
  EXPECT_GT(dv.left["V"], 0) << "the guarded tail\n" << to_string(g);
  ASSERT_FALSE(dv.recip_depth.empty()) << to_string(g);
  for (auto& [name, depth] : dv.recip_depth) EXPECT_GE(depth, 1) << name << "\n" << to_string(g);
  runtime::Module m = codegen::build_llvm({g});
  for (int64_t r : {0, 5, 16, 21}) {
    NDArray u = random_float32({r, cols}, uint64_t(r) + 4), dd = random_float32({4}, 9, 1, 2);
    NDArray got = NDArray::zeros({r, cols}, f32), want = NDArray::empty({r, cols}, f32);
    m.call(g.name, {u, dd, got});
    for (int64_t k = 0; k < want.numel(); ++k)
      want.set_from_double(k, float(u.get_as_double(k)) / float(dd.get_as_double(0)));
    EXPECT_TRUE(within_ulps(got, want, 2)) << r << " rows";
  }
  // A divisor that divides integers is not hoisted out of a loop that may not run: with no rows,
  // E[1] = 0 is never a divisor, nor n = 0 in 12 / n.
  Tensor E = placeholder({2}, i32, "E");
  Tensor V2 = compute(
      {n, cols}, [&](Var i, Var j) { return U(i, j) / cast(f32, E(0) / E(1)) / cast(f32, Expr(12) / n); }, "V2");
  schedule::Schedule s2({V2});
  LoweredFunc g2 = schedule::lower(s2, {U, E, V2}, "integer_divisor");
  runtime::Module m2 = codegen::build_llvm({g2});
  NDArray e = NDArray::empty({2}, i32);
  e.set_from_double(0, 6);
  e.set_from_double(1, 0);
  NDArray none = NDArray::zeros({0, cols}, f32), none_out = NDArray::zeros({0, cols}, f32);
  m2.call(g2.name, {none, e, none_out});  // a hoisted 6 / 0 would trap here
  e.set_from_double(1, 2);
  NDArray u3 = random_float32({3, cols}, 11), got3 = NDArray::zeros({3, cols}, f32),
          want3 = NDArray::empty({3, cols}, f32);
  m2.call(g2.name, {u3, e, got3});
  for (int64_t k = 0; k < want3.numel(); ++k) want3.set_from_double(k, float(u3.get_as_double(k)) / 3.0f / 4.0f);
  EXPECT_TRUE(within_ulps(got3, want3, 2));
}

// A divisor load in an if_then_else's arm stays there (the backend evaluates one arm; rows 8 and 9
// pass the guard at no column and have no divisor in S); a loop's pragma stays on the loop when the lets go around it.
TEST(LLVMReciprocals, GuardedArmsKeepTheirDivisorsAndLoopsTheirPragmas) {
  const int rows = 8, cols = 32;
  DataType f32 = DataType::Float(32);
  Tensor X = placeholder({rows + 2, cols}, f32, "X"), S = placeholder({rows}, f32, "S");
  Tensor T = compute(
      {rows + 2, cols}, [&](Var i, Var j) { return if_then_else(i + j < rows, X(i, j) / S(i), make_zero(f32)); }, "T");
  Tensor U = compute(
      {rows, cols}, [&](Var i, Var j) { return X(i, j) / S(0); }, "U");
  schedule::Schedule s({T, U});
  s[T].parallel(s[T].axis(0));  // a parallel loop keeps its guard (partition_loops splits serial ones)
  s[U].pragma(s[U].axis(0), "marked");
  LoweredFunc f = schedule::lower(s, {X, S, T, U}, "guarded");
  Divisions d = divisions_of(f);
  EXPECT_GT(d.left["T"], 0) << to_string(f);
  EXPECT_EQ(d.left["U"], 0) << to_string(f);
  struct PragmaOnLoop : IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit_attr(const AttrNode* op) override {
      if (op->key == "pragma_marked") found = op->body.as<ForNode>() != nullptr;
      IRVisitor::visit_attr(op);
    }
  } pragma;
  pragma.visit(f.body);
  EXPECT_TRUE(pragma.found) << "the pragma right above its loop\n" << to_string(f);
  EXPECT_TRUE(matches_interpreter(f, 5, 1, 9));
}

}  // namespace
}  // namespace loom::test
