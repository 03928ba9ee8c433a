// Scalar code: element types, floor division, select/min/max, casts, intrinsics, loop kinds.
#include <algorithm>
#include <climits>

#include "codegen_test_util.h"
#include "loom/ir/expr.h"
#include "loom/ir/intrinsics.h"
#include "loom/ir/printer.h"
#include "loom/ir/tensor.h"
#include "loom/schedule/lower.h"
#include "loom/schedule/schedule.h"

namespace loom::test {
namespace {

using namespace loom::ir;

LoweredFunc vector_add(DataType t, int n, ForKind kind = ForKind::Serial) {
  Buffer A = arg("A", t, {n}), B = arg("B", t, {n}), C = arg("C", t, {n});
  Var i("i");
  Stmt body = for_loop(i, 0, n, kind, store(C, load(t, A, i) + load(t, B, i), i));
  return {"vadd_" + t.str(), {A, B, C}, body};
}

class VectorAddTest : public ::testing::TestWithParam<DataType> {};

TEST_P(VectorAddTest, MatchesInterpreter) {
  DataType t = GetParam();
  // Integer inputs up to +-100 overflow int8 sums: both sides must wrap around.
  EXPECT_TRUE(matches_interpreter(vector_add(t, 1000), 3, -100, 100));
}

INSTANTIATE_TEST_SUITE_P(Types, VectorAddTest,
                         ::testing::Values(DataType::Int(8), DataType::Int(16), DataType::Int(32), DataType::Int(64),
                                           DataType::UInt(8), DataType::Float(16), DataType::Float(32),
                                           DataType::Float(64)),
                         [](const auto& info) { return info.param.str(); });

TEST(LLVMScalar, Int8AdditionWrapsAround) {
  runtime::Module m = codegen::build_llvm({vector_add(DataType::Int(8), 4)});
  NDArray a = NDArray::empty({4}, DataType::Int(8)), b = NDArray::empty({4}, DataType::Int(8)),
          c = NDArray::zeros({4}, DataType::Int(8));
  int8_t av[] = {100, -100, 127, -128}, bv[] = {100, -100, 1, -1}, want[] = {-56, 56, -128, 127};
  for (int i = 0; i < 4; ++i) a.data<int8_t>()[i] = av[i], b.data<int8_t>()[i] = bv[i];
  m.call("vadd_int8", {a, b, c});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(c.data<int8_t>()[i], want[i]) << i;
}

TEST(LLVMScalar, LoopKindsCompileToLoops) {
  for (ForKind k : {ForKind::Unrolled, ForKind::Vectorized, ForKind::VirtualThread})
    EXPECT_TRUE(matches_interpreter(vector_add(DataType::Float(32), 67, k))) << to_string(k);
  // A vectorized loop the lowering left scalar asks LLVM's loop vectorizer to try.
  std::string ir_text =
      codegen::emit_llvm_ir({vector_add(DataType::Float(32), 67, ForKind::Vectorized)}, unoptimized());
  EXPECT_NE(ir_text.find("!{!\"llvm.loop.vectorize.enable\", i1 true}"), std::string::npos) << ir_text;
}

// A recurrence through memory (A[i + 1] = A[i] * B[i] + 1: nothing to vectorize) of `n` steps,
// under `pragma llvm_unroll = factor` unless factor is negative.
LoweredFunc recurrence(int n, int factor) {
  DataType f32 = DataType::Float(32);
  Buffer A = arg("A", f32, {n + 1}), B = arg("B", f32, {n});
  Var i("i");
  Stmt loop = for_loop(i, 0, n, ForKind::Serial, store(A, load(f32, A, i) * load(f32, B, i) + Expr(1.0f), i + 1));
  if (factor >= 0) loop = attr("pragma_llvm_unroll", Expr(factor), loop);
  return {"recurrence", {A, B}, loop};
}

// The schedule decides what LLVM's unroller does with a serial loop: left alone, LLVM unrolls 8
// steps completely; `pragma llvm_unroll = 0` keeps one loop body; 4 unrolls 64 steps by 4.
TEST(LLVMScalar, UnrollPragmaControlsLlvmsUnroller) {
  EXPECT_EQ(count_occurrences(codegen::emit_llvm_ir({recurrence(8, -1)}), "fmul"), 8u);
  std::string rolled = codegen::emit_llvm_ir({recurrence(8, 0)});
  EXPECT_EQ(count_occurrences(rolled, "fmul"), 1u) << rolled;
  EXPECT_NE(rolled.find("llvm.loop.unroll.disable"), std::string::npos) << rolled;
  EXPECT_EQ(count_occurrences(codegen::emit_llvm_ir({recurrence(64, 4)}), "fmul"), 4u);
  EXPECT_NE(codegen::emit_llvm_ir({recurrence(64, 4)}, unoptimized()).find("!{!\"llvm.loop.unroll.count\", i32 4}"),
            std::string::npos);
  // Above another pragma of the same loop.
  LoweredFunc nested = recurrence(8, -1);
  nested.body = attr("pragma_llvm_unroll", Expr(0), attr("pragma_other", Expr(1), nested.body));
  EXPECT_EQ(count_occurrences(codegen::emit_llvm_ir({nested}), "fmul"), 1u);
  for (int factor : {0, 4}) EXPECT_TRUE(matches_interpreter(recurrence(64, factor), 5, -1, 1)) << factor;
}

// A prefetch (ir::kPrefetch) becomes llvm.prefetch (a read into the L2), also of an address past
// its buffer's end, and changes no result: the interpreter skips it.
TEST(LLVMScalar, PrefetchesAreHintsOnly) {
  const int n = 64;
  DataType f32 = DataType::Float(32);
  Buffer A = arg("A", f32, {n}), B = arg("B", f32, {n});
  Var i("i");
  Stmt body = seq({evaluate(make_prefetch(A, i + 4096)), store(B, load(f32, A, i) * Expr(2.0f), i)});
  LoweredFunc f{"prefetching", {A, B}, for_loop(i, 0, n, ForKind::Serial, body)};
  std::string ir = codegen::emit_llvm_ir({f});
  EXPECT_NE(ir.find("call void @llvm.prefetch.p0(ptr "), std::string::npos) << ir;
  EXPECT_NE(ir.find(", i32 0, i32 2, i32 1)"), std::string::npos) << ir;
  EXPECT_TRUE(matches_interpreter(f, 7, -1, 1));
}

// Floor division and modulus of every sign combination, by variables and by constants.
TEST(LLVMScalar, FloorDivModSemantics) {
  const int n = 8;
  DataType i32 = DataType::Int(32);
  Buffer A = arg("A", i32, {n}), B = arg("B", i32, {n});
  std::vector<Buffer> outs;
  std::vector<Stmt> stores;
  Var i("i");
  Expr a = load(i32, A, i), b = load(i32, B, i);
  std::vector<std::pair<std::string, Expr>> exprs = {{"div", a / b},    {"mod", a % b},   {"div3", a / 3},
                                                     {"mod3", a % 3},   {"div4", a / 4},  {"mod4", a % 4},
                                                     {"divm3", a / -3}, {"modm3", a % -3}};
  for (auto& [name, e] : exprs) {
    outs.push_back(arg(name, i32, {n}));
    stores.push_back(store(outs.back(), e, i));
  }
  std::vector<Buffer> args = {A, B};
  args.insert(args.end(), outs.begin(), outs.end());
  LoweredFunc f{"floordiv", args, for_loop(i, 0, n, ForKind::Serial, seq(stores))};
  runtime::Module m = codegen::build_llvm({f});
  std::vector<NDArray> arrays;
  for (size_t k = 0; k < args.size(); ++k) arrays.push_back(NDArray::zeros({n}, i32));
  int av[n] = {7, -7, 7, -7, 0, -1, -6, 6}, bv[n] = {2, 2, -2, -2, 5, 3, 3, -4};
  for (int k = 0; k < n; ++k) arrays[0].data<int>()[k] = av[k], arrays[1].data<int>()[k] = bv[k];
  m.call("floordiv", arrays);
  auto fdiv = [](int x, int y) {
    int q = x / y;
    return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
  };
  for (int k = 0; k < n; ++k) {
    int x = av[k], y = bv[k];
    EXPECT_EQ(arrays[2].data<int>()[k], fdiv(x, y)) << x << " / " << y;
    EXPECT_EQ(arrays[3].data<int>()[k], x - fdiv(x, y) * y) << x << " % " << y;
    EXPECT_EQ(arrays[4].data<int>()[k], fdiv(x, 3)) << x << " / 3";
    EXPECT_EQ(arrays[5].data<int>()[k], x - fdiv(x, 3) * 3) << x << " % 3";
    EXPECT_EQ(arrays[6].data<int>()[k], fdiv(x, 4)) << x << " / 4";
    EXPECT_EQ(arrays[7].data<int>()[k], x - fdiv(x, 4) * 4) << x << " % 4";
    EXPECT_EQ(arrays[8].data<int>()[k], fdiv(x, -3)) << x << " / -3";
    EXPECT_EQ(arrays[9].data<int>()[k], x - fdiv(x, -3) * -3) << x << " % -3";
  }
  EXPECT_EQ(arrays[2].data<int>()[1], -4);  // -7 / 2
  EXPECT_EQ(arrays[3].data<int>()[1], 1);   // -7 % 2
  EXPECT_EQ(arrays[3].data<int>()[2], -1);  // 7 % -2
}

// Floor division and modulus by negative constants once unrolling has made both operands
// constants: the simplifier folds them at compile time, so the unrolled kernel only stores the
// simplifier's results. Checked against the interpreter running the same computation left as
// loops (division at run time), against the compiled loops, and against values written out here.
TEST(LLVMScalar, UnrolledFloorDivModByNegativeConstantsMatchInterpreter) {
  const int n = 16, nd = 4;  // dividends -8..7, divisors -3, -2, 1, 2
  auto divisor = [](Var j) { return select(j < 2, j - 3, j - 1); };
  auto build = [&](bool unrolled) {
    Tensor Q = compute(
        {n, nd}, [&](Var i, Var j) { return (i - 8) / divisor(j); }, "Q");
    Tensor R = compute(
        {n, nd}, [&](Var i, Var j) { return (i - 8) % divisor(j); }, "R");
    schedule::Schedule s({Q, R});
    if (unrolled)
      for (const Tensor& t : {Q, R}) s[t].unroll(s[t].axis(0)).unroll(s[t].axis(1));
    return schedule::lower(s, {Q, R}, unrolled ? "divmod_unrolled" : "divmod_loops");
  };
  LoweredFunc unrolled = build(true), loops = build(false);
  // Nothing is left to divide at run time in the unrolled kernel.
  std::string text = to_string(unrolled.body);
  EXPECT_EQ(text.find('/'), std::string::npos) << text;
  EXPECT_EQ(text.find('%'), std::string::npos) << text;
  EXPECT_EQ(text.find("for ("), std::string::npos) << text;
  runtime::Module m = codegen::build_llvm({unrolled, loops});
  DataType i32 = DataType::Int(32);
  auto fresh = [&] { return std::vector<NDArray>{NDArray::zeros({n, nd}, i32), NDArray::zeros({n, nd}, i32)}; };
  std::vector<NDArray> got = fresh(), compiled_loops = fresh(), want = fresh();
  m.call("divmod_unrolled", got);
  m.call("divmod_loops", compiled_loops);
  ir::interpret(loops, want);
  for (int k = 0; k < 2; ++k) {
    EXPECT_TRUE(arrays_close(got[k], want[k])) << (k ? "modulus" : "quotient") << " of the unrolled kernel\n" << text;
    EXPECT_TRUE(arrays_close(compiled_loops[k], want[k])) << (k ? "modulus" : "quotient") << " of the compiled loops";
  }
  auto at = [&](const NDArray& a, int dividend, int d) {
    return a.data<int>()[(dividend + 8) * nd + (d < 0 ? d + 3 : d + 1)];
  };
  const NDArray &q = got[0], &r = got[1];
  EXPECT_EQ(at(q, 7, -2), -4);
  EXPECT_EQ(at(q, -7, -2), 3);
  EXPECT_EQ(at(q, -7, 2), -4);
  EXPECT_EQ(at(q, 7, 2), 3);
  EXPECT_EQ(at(r, 7, -2), -1);
  EXPECT_EQ(at(r, -7, 2), 1);
  EXPECT_EQ(at(r, -7, -2), -1);
  EXPECT_EQ(at(r, 7, 2), 1);
  EXPECT_EQ(at(q, 7, -3), -3);
  EXPECT_EQ(at(r, 7, -3), -2);
  EXPECT_EQ(at(q, -8, -3), 2);
  EXPECT_EQ(at(r, -8, -3), -2);
  EXPECT_EQ(at(q, -1, 1), -1);
  EXPECT_EQ(at(r, -1, 1), 0);
}

TEST(LLVMScalar, FloorDivModOnIntegerAndFloatTypesMatchInterpreter) {
  for (DataType t : {DataType::Int(8), DataType::Int(16), DataType::Int(64), DataType::Float(32)}) {
    const int n = 64;
    Buffer A = arg("A", t, {n}), B = arg("B", t, {n}), Q = arg("Q", t, {n}), R = arg("R", t, {n}), S = arg("S", t, {n});
    Var i("i");
    Expr a = load(t, A, i), b = load(t, B, i);
    // Keep divisors away from zero.
    Expr safe_b = select(b == make_zero(t), make_one(t), b);
    Stmt body = seq(
        {store(Q, a / safe_b, i), store(R, a % safe_b, i), store(S, a / make_const(t, 7) + a % make_const(t, 7), i)});
    EXPECT_TRUE(matches_interpreter({"divmod_" + t.str(), {A, B, Q, R, S}, for_loop(i, 0, n, ForKind::Serial, body)}, 5,
                                    -50, 50))
        << t.str();
  }
}

TEST(LLVMScalar, SelectMinMaxAndCasts) {
  const int n = 100;
  DataType f32 = DataType::Float(32), i32 = DataType::Int(32), i8 = DataType::Int(8), u8 = DataType::UInt(8);
  Buffer A = arg("A", f32, {n}), I = arg("I", i32, {n}), U = arg("U", u8, {n});
  Buffer Sel = arg("Sel", f32, {n}), Mn = arg("Mn", i32, {n}), Mx = arg("Mx", f32, {n}), Wrap = arg("Wrap", i8, {n}),
         Zext = arg("Zext", i32, {n}), Trunc = arg("Trunc", i32, {n}), ToF = arg("ToF", f32, {n}),
         Bool = arg("Bool", i32, {n});
  Var i("i");
  Expr a = load(f32, A, i), x = load(i32, I, i), u = load(u8, U, i);
  Stmt body = seq({
      store(Sel, select(a > 0.5f && x < 100, a * 2.0f, -a), i),
      store(Mn, min(x, 37) + max(x, -20), i),
      store(Mx, max(a, Expr(0.0f)) - min(a, Expr(1.0f)), i),
      store(Wrap, cast(i8, x * 3), i),  // int32 -> int8 wraps (no saturation)
      store(Zext, cast(i32, u) - 128, i),
      store(Trunc, cast(i32, a * 10.0f), i),  // rounds towards zero
      store(ToF, cast(f32, x) / 4.0f, i),
      store(Bool, cast(i32, cast(DataType::Bool(), x)) + cast(i32, !(x >= 0)), i),
  });
  LoweredFunc f{
      "mixed", {A, I, U, Sel, Mn, Mx, Wrap, Zext, Trunc, ToF, Bool}, for_loop(i, 0, n, ForKind::Serial, body)};
  EXPECT_TRUE(matches_interpreter(f, 11, -200, 200));

  runtime::Module m = codegen::build_llvm({f});
  auto args = random_args(f, 2);
  args[1].data<int>()[0] = 300;   // 900 mod 256 = 132 -> int8 -124
  args[1].data<int>()[1] = -300;  // -900 -> int8 124
  m.call("mixed", args);
  EXPECT_EQ(args[6].data<int8_t>()[0], -124);
  EXPECT_EQ(args[6].data<int8_t>()[1], 124);
}

TEST(LLVMScalar, Intrinsics) {
  const int n = 50;
  DataType f32 = DataType::Float(32);
  Buffer A = arg("A", f32, {n}), E = arg("E", f32, {n}), T = arg("T", f32, {n}), S = arg("S", f32, {n}),
         F = arg("F", f32, {n}), P = arg("P", f32, {n});
  Var i("i");
  Expr a = load(f32, A, i);
  Stmt body = seq({
      store(E, exp(a), i),
      store(T, tanh(a) + abs(a), i),
      store(S, sqrt(abs(a)) + log(abs(a) + 1.0f), i),
      store(F, call_intrinsic(f32, "floor", {a}) + call_intrinsic(f32, "ceil", {a}), i),
      store(P, call_intrinsic(f32, "pow", {abs(a), Expr(1.5f)}) * 0.5f, i),
  });
  LoweredFunc f{"math", {A, E, T, S, F, P}, for_loop(i, 0, n, ForKind::Serial, body)};
  EXPECT_TRUE(matches_interpreter(f, 1, -4, 4));

  // fma (not in the interpreter): fused, so a*b+c rounds once.
  Buffer X = arg("X", f32, {1}), Y = arg("Y", f32, {1});
  Expr x = load(f32, X, 0);
  runtime::Module m =
      codegen::build_llvm({{"fma1", {X, Y}, store(Y, call_intrinsic(f32, "fma", {x, x, -(x * x)}), 0)}});
  NDArray xa = NDArray::empty({1}, f32), ya = NDArray::zeros({1}, f32);
  xa.data<float>()[0] = 1.0f + 1.0f / 4096;  // x*x is not exact in float32
  m.call("fma1", {xa, ya});
  float xv = xa.data<float>()[0];
  EXPECT_EQ(ya.data<float>()[0], std::fma(xv, xv, -(xv * xv)));
  EXPECT_NE(ya.data<float>()[0], 0.0f);
}

TEST(LLVMScalar, HalfPrecisionExp) {
  DataType f16 = DataType::Float(16);
  Buffer A = arg("A", f16, {64}), B = arg("B", f16, {64});
  Var i("i");
  EXPECT_TRUE(matches_interpreter(
      {"exp16", {A, B}, for_loop(i, 0, 64, ForKind::Serial, store(B, exp(load(f16, A, i)), i))}, 1, -2, 2));
}

// shift_right, the accelerator ALU's SHR (per-channel requantization): right by the amount, left
// (wrapping) by a negative one, saturating at 31 either way; the LLVM backend, serial and
// vectorized, and the interpreter equal the definition on edge amounts and values.
TEST(LLVMScalar, ShiftRightSaturatesAndShiftsLeftByNegativeAmounts) {
  DataType i32 = DataType::Int(32);
  const std::vector<int32_t> xs = {1000, -1000, 1, -1, INT32_MAX, INT32_MIN, 12345, -77, 0, 3, 96, -97, 5, -6, 7, 8};
  const std::vector<int32_t> ss = {3, 3, 0, 0, 31, 31, 40, 40, -1, -4, -31, -31, -40, -2, INT32_MIN, 1};
  const int n = int(xs.size());
  for (bool vectorized : {false, true}) {
    Buffer X = arg("X", i32, {n}), S = arg("S", i32, {n}), Y = arg("Y", i32, {n});
    Var i("i");
    LoweredFunc f{vectorized ? "shr_vec" : "shr",
                  {X, S, Y},
                  for_loop(i, 0, n, vectorized ? ForKind::Vectorized : ForKind::Serial,
                           store(Y, make_shift_right(load(i32, X, i), load(i32, S, i)), i))};
    runtime::Module m = codegen::build_llvm({f});
    NDArray x = NDArray::empty({n}, i32), sh = NDArray::empty({n}, i32), y = NDArray::zeros({n}, i32);
    std::copy(xs.begin(), xs.end(), x.data<int32_t>());
    std::copy(ss.begin(), ss.end(), sh.data<int32_t>());
    std::vector<NDArray> interp = {x, sh, NDArray::zeros({n}, i32)};
    m.call(f.name, {x, sh, y});
    ir::interpret(f, interp);
    for (int k = 0; k < n; ++k) {
      const int64_t s = ss[size_t(k)];
      const int32_t want = s >= 0 ? xs[size_t(k)] >> std::min<int64_t>(s, 31)
                                  : int32_t(uint32_t(xs[size_t(k)]) << std::min<int64_t>(-s, 31));
      EXPECT_EQ(y.data<int32_t>()[k], want) << f.name << ": " << xs[size_t(k)] << " by " << s;
      EXPECT_EQ(interp[2].data<int32_t>()[k], want) << "interpreter: " << xs[size_t(k)] << " by " << s;
    }
  }
}

// The false branch of if_then_else would read out of bounds: it must not be evaluated.
TEST(LLVMScalar, IfThenElseIsLazy) {
  DataType f32 = DataType::Float(32);
  Buffer A = arg("A", f32, {10}), B = arg("B", f32, {14});
  Var i("i");
  Expr v = if_then_else(i >= 2 && i < 12, load(f32, A, i - 2), Expr(0.0f));
  EXPECT_TRUE(matches_interpreter({"pad", {A, B}, for_loop(i, 0, 14, ForKind::Serial, store(B, v, i))}));
}

TEST(LLVMScalar, LetsIfsAndTwoFunctionsInOneModule) {
  DataType f32 = DataType::Float(32);
  Buffer A = arg("A", f32, {8, 8}), B = arg("B", f32, {8, 8});
  Var i("i"), j("j"), row("row"), t("t", f32);
  Stmt inner = for_loop(
      j, 0, 8, ForKind::Serial,
      if_then_else(j <= i, store(B, let(t, load(f32, A, row + j), t * t), row + j), store(B, Expr(0.0f), row + j)));
  LoweredFunc tril{"tril_sq", {A, B}, for_loop(i, 0, 8, ForKind::Serial, let_stmt(row, i * 8, inner))};
  LoweredFunc copy{"copy", {A, B}, for_loop(i, 0, 64, ForKind::Serial, store(B, load(f32, A, i), i))};
  runtime::Module m = codegen::build_llvm({tril, copy});
  EXPECT_EQ(m.function_names(), (std::vector<std::string>{"tril_sq", "copy"}));
  EXPECT_TRUE(matches_interpreter(tril));
  NDArray a = NDArray::empty({8, 8}, f32), b = NDArray::zeros({8, 8}, f32);
  a.fill_random(3);
  m.call("copy", {a, b});
  EXPECT_TRUE(arrays_close(b, a));
}

}  // namespace
}  // namespace loom::test
