// Parallel loops: outlined bodies called through loom_parallel_for, with captured buffers, loop
// variables and lets, at 1 and 2 threads.
#include <cstdlib>
#include <regex>

#include "codegen_test_util.h"
#include "loom/ir/expr.h"
#include "loom/runtime/thread_pool.h"

namespace loom::test {
namespace {

using namespace loom::ir;

class LLVMParallel : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { runtime::set_num_threads(GetParam()); }
  void TearDown() override { runtime::set_num_threads(0); }
};

// C[i, j] = A[i, j] * scale + bias[j] with i parallel, j vectorized by ramps inside.
TEST_P(LLVMParallel, RowParallelWithCapturedValues) {
  const int rows = 37, cols = 64;
  DataType f32 = DataType::Float(32), v16 = DataType::Float(32, 16);
  Buffer A = arg("A", f32, {rows, cols}), Bias = arg("bias", f32, {cols}), C = arg("C", f32, {rows, cols});
  Var i("i"), j("j"), scale("scale", f32), base("base");
  Expr idx = ramp(base + j * 16, 1, 16);
  Stmt row = let_stmt(
      base, i * cols,
      for_loop(j, 0, cols / 16, ForKind::Serial,
               store(C, load(v16, A, idx) * broadcast(scale, 16) + load(v16, Bias, ramp(j * 16, 1, 16)), idx)));
  Stmt body = let_stmt(scale, Expr(2.5f), for_loop(i, 0, rows, ForKind::Parallel, row));
  EXPECT_TRUE(matches_interpreter({"row_parallel", {A, Bias, C}, body}));
}

// A parallel loop with a work hint (attr parallel_work, LowerOptions::parallel_work_hints) calls
// loom_parallel_for_work with its count, and computes the same whether the host's threshold makes
// it serial or parallel; one without keeps loom_parallel_for.
TEST_P(LLVMParallel, WorkHintsReachTheRuntime) {
  const int rows = 37, cols = 16;
  DataType f32 = DataType::Float(32);
  Buffer A = arg("A", f32, {rows, cols}), C = arg("C", f32, {rows, cols});
  Var i("i"), j("j");
  Stmt loop =
      for_loop(i, 0, rows, ForKind::Parallel,
               for_loop(j, 0, cols, ForKind::Serial, store(C, load(f32, A, i * cols + j) * 3.0f, i * cols + j)));
  LoweredFunc hinted{"hinted", {A, C}, attr(ir::attr_key::kParallelWork, Expr(int64_t{rows * cols}), loop)};
  std::string text = codegen::emit_llvm_ir({hinted});
  EXPECT_TRUE(std::regex_search(
      text, std::regex(R"(call i32 @loom_parallel_for_work\(i64 37, [^,]*@hinted\.parallel\.0, [^,]*, i64 592\))")))
      << text;
  EXPECT_EQ(codegen::emit_llvm_ir({{"plain", {A, C}, loop}}).find("loom_parallel_for_work"), std::string::npos);
  for (const char* min_work : {"0", "592", "593", "1000000000"}) {
    ::setenv("LOOM_MIN_PARALLEL_WORK", min_work, 1);
    runtime::set_num_threads(GetParam());  // a new pool reads it
    EXPECT_TRUE(matches_interpreter(hinted)) << "LOOM_MIN_PARALLEL_WORK=" << min_work;
  }
  ::unsetenv("LOOM_MIN_PARALLEL_WORK");
}

// `pragma alternate_order` on a parallel loop: loom_parallel_for_alternating with a direction word
// of the loop's own, and the same results on every call (forwards and backwards); on a serial
// loop it changes nothing; a value other than 1 is refused.
TEST_P(LLVMParallel, AlternateOrderReachesTheRuntime) {
  const int rows = 37, cols = 16;
  DataType f32 = DataType::Float(32);
  Buffer A = arg("A", f32, {rows, cols}), C = arg("C", f32, {rows, cols});
  Var i("i"), j("j");
  auto rows_loop = [&](ForKind kind) {
    return for_loop(i, 0, rows, kind,
                    for_loop(j, 0, cols, ForKind::Serial, store(C, load(f32, A, i * cols + j) - 1.5f, i * cols + j)));
  };
  LoweredFunc alternating{"alternating", {A, C}, attr("pragma_alternate_order", Expr(1), rows_loop(ForKind::Parallel))};
  std::string text = codegen::emit_llvm_ir({alternating});
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(@alternating\.parallel\.0\.direction = internal global i32 0)")))
      << text;
  EXPECT_TRUE(std::regex_search(
      text,
      std::regex(
          R"(call i32 @loom_parallel_for_alternating\(i64 37, [^,]*@alternating\.parallel\.0, [^,]*, i64 -1, ptr [^@,]*@alternating\.parallel\.0\.direction\))")))
      << text;
  // With a work hint, the hint goes along.
  LoweredFunc hinted{"hinted_alternating",
                     {A, C},
                     attr("pragma_alternate_order", Expr(1),
                          attr(ir::attr_key::kParallelWork, Expr(int64_t{592}), rows_loop(ForKind::Parallel)))};
  EXPECT_TRUE(std::regex_search(codegen::emit_llvm_ir({hinted}),
                                std::regex(R"(@loom_parallel_for_alternating\(i64 37, [^,]*, [^,]*, i64 592, )")));
  // One module's loop runs forwards, then backwards, then forwards: the interpreter's results each time.
  runtime::Module m = codegen::build_llvm({alternating});
  for (uint64_t call = 0; call < 3; ++call) {
    std::vector<NDArray> got = random_args(alternating, call + 1, -10, 10), want = deep_copy(got);
    m.call(alternating.name, got);
    ir::interpret(alternating, want);
    EXPECT_TRUE(arrays_close(got[1], want[1], 1e-6, 1e-6)) << "call " << call;
  }
  LoweredFunc serial{"serial_alternating", {A, C}, attr("pragma_alternate_order", Expr(1), rows_loop(ForKind::Serial))};
  EXPECT_EQ(codegen::emit_llvm_ir({serial}).find("loom_parallel_for"), std::string::npos);
  LoweredFunc bad{"bad_alternating", {A, C}, attr("pragma_alternate_order", Expr(2), rows_loop(ForKind::Parallel))};
  try {
    codegen::emit_llvm_ir({bad});
    ADD_FAILURE() << "pragma alternate_order 2 was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("pragma alternate_order takes the value 1, not 2"), std::string::npos)
        << e.what();
  }
}

// A parallel loop nested in a serial loop and another parallel loop (run serially inside).
TEST_P(LLVMParallel, NestedAndNonZeroMin) {
  const int n = 12;
  DataType i32 = DataType::Int(32);
  Buffer A = arg("A", i32, {n, n}), B = arg("B", i32, {n, n});
  Var o("o"), i("i"), j("j");
  Stmt inner = for_loop(j, 0, n, ForKind::Parallel, store(B, load(i32, A, i * n + j) * (o + 1) + i, i * n + j));
  Stmt body = for_loop(o, 0, 2, ForKind::Serial, for_loop(i, 3, n - 3, ForKind::Parallel, inner));
  EXPECT_TRUE(matches_interpreter({"nested_parallel", {A, B}, body}, 1, -100, 100));
}

// A temporary allocated inside the parallel body is private to each iteration.
TEST_P(LLVMParallel, PrivateTemporaries) {
  const int n = 16, m = 32;
  DataType f32 = DataType::Float(32);
  Buffer A = arg("A", f32, {n, m}), B = arg("B", f32, {n, m});
  Buffer T = make_buffer("T", f32, {Expr(m)}, scope::kLocal);
  Var i("i"), j("j"), k("k");
  Stmt fill = for_loop(j, 0, m, ForKind::Serial, store(T, load(f32, A, i * m + j) + 1.0f, j));
  Stmt use = for_loop(k, 0, m, ForKind::Serial, store(B, load(f32, T, m - 1 - k) * 2.0f, i * m + k));
  Stmt body = for_loop(i, 0, n, ForKind::Parallel, allocate(T, seq({fill, use})));
  EXPECT_TRUE(matches_interpreter({"private_tmp", {A, B}, body}));
}

INSTANTIATE_TEST_SUITE_P(Threads, LLVMParallel, ::testing::Values(1, 2),
                         [](const auto& info) { return std::to_string(info.param) + "threads"; });

}  // namespace
}  // namespace loom::test
