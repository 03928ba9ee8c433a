// Error reporting of the LLVM backend and of calls into compiled modules.
#include <gmock/gmock.h>

#include "codegen_test_util.h"
#include "loom/ir/expr.h"
#include "loom/ir/tensor.h"
#include "loom/runtime/thread_pool.h"

namespace loom::test {
namespace {

using namespace loom::ir;
using ::testing::HasSubstr;

template <typename E, typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "<no exception>";
}

LoweredFunc matmul_like() {
  DataType f32 = DataType::Float(32);
  Buffer A = arg("A", f32, {64, 16}), B = arg("B", f32, {64, 32}), C = arg("C", f32, {64, 32});
  Var i("i");
  return {"matmul", {A, B, C}, for_loop(i, 0, 64 * 32, ForKind::Serial, store(C, load(f32, B, i), i))};
}

TEST(CodegenErrors, CallWithWrongShapeNamesTheArgument) {
  runtime::Module m = codegen::build_llvm({matmul_like()});
  DataType f32 = DataType::Float(32);
  NDArray a = NDArray::zeros({64, 16}, f32), c = NDArray::zeros({64, 32}, f32);
  EXPECT_EQ(error_of<ShapeError>([&] {
              m.call("matmul", {a, NDArray::zeros({32, 64}, f32), c});
            }),
            "matmul: argument 'B' expects float32[64, 32], got float32[32, 64]");
  EXPECT_EQ(error_of<TypeError>([&] {
              m.call("matmul", {a, NDArray::zeros({64, 32}, DataType::Float(16)), c});
            }),
            "matmul: argument 'B' expects float32[64, 32], got float16[64, 32]");
  EXPECT_EQ(error_of<ShapeError>([&] { m.call("matmul", {a, c}); }), "matmul: expects 3 arguments, got 2");
}

LoweredFunc checked_copy(ForKind kind) {
  DataType i32 = DataType::Int(32);
  Buffer A = arg("A", i32, {8}), B = arg("B", i32, {8});
  Buffer T = make_buffer("T", i32, {Expr(100000)}, scope::kGlobal);  // heap temporary, freed on failure too
  Var i("i");
  Stmt body = seq({assert_stmt(load(i32, A, i) >= 0, "A[i] >= 0 does not hold in checked_copy"),
                   store(T, load(i32, A, i), i), store(B, load(i32, T, i), i)});
  return {"checked_copy", {A, B}, allocate(T, for_loop(i, 0, 8, kind, body))};
}

TEST(CodegenErrors, AssertFailureBecomesRuntimeError) {
  for (ForKind kind : {ForKind::Serial, ForKind::Parallel}) {
    runtime::set_num_threads(2);
    runtime::Module m = codegen::build_llvm({checked_copy(kind)});
    NDArray a = NDArray::zeros({8}, DataType::Int(32)), b = NDArray::zeros({8}, DataType::Int(32));
    for (int i = 0; i < 8; ++i) a.data<int>()[i] = i;
    m.call("checked_copy", {a, b});
    EXPECT_EQ(b.data<int>()[7], 7);
    a.data<int>()[6] = -1;
    EXPECT_THAT(error_of<RuntimeError>([&] {
                  m.call("checked_copy", {a, b});
                }),
                HasSubstr("checked_copy: A[i] >= 0 does not hold in checked_copy"))
        << to_string(kind);
    runtime::set_num_threads(0);
  }
}

TEST(CodegenErrors, UnloweredNodesAreRejected) {
  DataType f32 = DataType::Float(32);
  Tensor P = placeholder({Expr(4)}, f32, "P");
  Buffer B = arg("B", f32, {4});
  Var i("i");
  LoweredFunc read{"te_read", {B}, for_loop(i, 0, 4, ForKind::Serial, store(B, P(i), i))};
  std::string msg = error_of<CodegenError>([&] { codegen::build_llvm({read}); });
  EXPECT_THAT(msg, HasSubstr("function 'te_read'"));
  EXPECT_THAT(msg, HasSubstr("tensor read"));

  LoweredFunc prov{"te_provide", {B}, provide(P.op(), {Expr(0)}, Expr(1.0f))};
  EXPECT_THAT(error_of<CodegenError>([&] { codegen::build_llvm({prov}); }),
              HasSubstr("function 'te_provide': Provide of 'P'"));
}

TEST(CodegenErrors, UnsupportedConstructsAreNamed) {
  DataType f32 = DataType::Float(32);
  Buffer A = arg("A", f32, {4});
  Var i("i");
  LoweredFunc gpu{"gpu_loop", {A}, for_loop(i, 0, 4, ForKind::ThreadBinding, store(A, Expr(0.0f), i), "threadIdx.x")};
  EXPECT_THAT(error_of<CodegenError>([&] { codegen::build_llvm({gpu}); }),
              HasSubstr("function 'gpu_loop': loop 'i' is bound to GPU thread 'threadIdx.x'"));

  Buffer S = make_buffer("S", f32, {Expr(4)}, scope::kShared);
  LoweredFunc shared{"shared_alloc", {A}, allocate(S, store(S, Expr(1.0f), 0))};
  EXPECT_THAT(error_of<CodegenError>([&] { codegen::build_llvm({shared}); }),
              HasSubstr("allocation of 'S' in memory scope 'shared'"));

  LoweredFunc dma{"uses_dma", {A}, evaluate(call_intrinsic(DataType::Int(32), "dma_copy", {Expr(0)}))};
  EXPECT_THAT(error_of<CodegenError>([&] { codegen::build_llvm({dma}); }),
              HasSubstr("intrinsic 'dma_copy' is not supported"));

  Var free_var("n");
  LoweredFunc unbound{"unbound", {A}, store(A, cast(f32, free_var), 0)};
  EXPECT_THAT(error_of<CodegenError>([&] { codegen::build_llvm({unbound}); }),
              HasSubstr("variable 'n' is used outside its definition"));

  Stmt loop = for_loop(i, 0, 4, ForKind::Serial, store(A, Expr(0.0f), i));
  for (Expr bad : {Expr(1), Expr(-2), Expr(int64_t{1} << 40), cast(DataType::Int(32), load(f32, A, 0))}) {
    LoweredFunc unroll{"bad_unroll", {A}, attr("pragma_llvm_unroll", bad, loop)};
    EXPECT_THAT(
        error_of<CodegenError>([&] { codegen::build_llvm({unroll}); }),
        HasSubstr(
            "function 'bad_unroll': pragma llvm_unroll needs a constant factor, 0 (keep the loop rolled) or >= 2"));
  }

  Stmt ploop = for_loop(i, 0, 4, ForKind::Parallel, store(A, Expr(0.0f), i));
  for (Expr bad : {Expr(-1), cast(DataType::Int(32), load(f32, A, 0))}) {
    LoweredFunc hint{"bad_work", {A}, attr(attr_key::kParallelWork, bad, ploop)};
    EXPECT_THAT(error_of<CodegenError>([&] { codegen::build_llvm({hint}); }),
                HasSubstr("function 'bad_work': parallel_work needs a constant count >= 0"));
  }

  // Extents over shape variables are affine forms (a plain variable is a symbolic extent).
  Buffer D = make_buffer("D", f32, {free_var * free_var});
  LoweredFunc dynamic{"dynamic", {D}, store(D, Expr(0.0f), 0)};
  EXPECT_THAT(error_of<CodegenError>([&] { codegen::build_llvm({dynamic}); }),
              HasSubstr("argument 'D' has the extent"));
}

}  // namespace
}  // namespace loom::test
