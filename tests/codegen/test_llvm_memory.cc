// Temporaries: small constant allocations on the stack, large or dynamic ones on the heap.
#include <algorithm>
#include "codegen_test_util.h"

#include "loom/ir/expr.h"
#include "loom/runtime/module.h"

namespace loom::test {
namespace {

using namespace loom::ir;

// T = A * 2 (in a temporary), then B = T reversed + 1: needs T fully materialized.
LoweredFunc through_temporary(int n, const std::string& scope_name) {
  DataType f32 = DataType::Float(32);
  Buffer A = arg("A", f32, {n}), B = arg("B", f32, {n});
  Buffer T = make_buffer("T", f32, {Expr(n)}, scope_name);
  Var i("i"), j("j");
  Stmt body = allocate(T, seq({for_loop(i, 0, n, ForKind::Serial, store(T, load(f32, A, i) * 2.0f, i)),
                               for_loop(j, 0, n, ForKind::Serial, store(B, load(f32, T, n - 1 - j) + 1.0f, j))}));
  return {"tmp_" + std::to_string(n), {A, B}, body};
}

TEST(LLVMMemory, SmallTemporaryOnTheStack) {
  LoweredFunc f = through_temporary(64, scope::kLocal);
  EXPECT_TRUE(matches_interpreter(f));
  std::string ir_text = codegen::emit_llvm_ir({f}, unoptimized());
  EXPECT_NE(ir_text.find("alloca [64 x float], align 64"), std::string::npos) << ir_text;
  EXPECT_EQ(ir_text.find("loom_alloc"), std::string::npos);
}

TEST(LLVMMemory, LargeTemporaryOnTheHeap) {
  LoweredFunc f = through_temporary(100000, scope::kGlobal);  // 400 KB
  EXPECT_TRUE(matches_interpreter(f));
  std::string ir_text = codegen::emit_llvm_ir({f}, unoptimized());
  EXPECT_NE(ir_text.find("call ptr @loom_alloc(i64 400000, i64 64)"), std::string::npos) << ir_text;
  EXPECT_NE(ir_text.find("call void @loom_free"), std::string::npos);
}

TEST(LLVMMemory, TemporaryInsideLoopAndDynamicSize) {
  DataType f32 = DataType::Float(32);
  const int n = 10;
  Buffer A = arg("A", f32, {n, n}), B = arg("B", f32, {n});
  Var i("i"), j("j"), k("k");
  // Row i uses a temporary of i + 1 elements: a dynamic size, so it lives on the heap.
  Buffer T = make_buffer("T", f32, {i + 1}, scope::kLocal);
  Stmt fill = for_loop(j, 0, i + 1, ForKind::Serial, store(T, load(f32, A, i * n + j), j));
  Var acc_i("acc_i");
  Buffer Acc = make_buffer("acc", f32, {Expr(1)}, scope::kLocal);
  Stmt sum = seq({store(Acc, Expr(0.0f), 0),
                  for_loop(k, 0, i + 1, ForKind::Serial, store(Acc, load(f32, Acc, 0) + load(f32, T, k), 0)),
                  store(B, load(f32, Acc, 0), i)});
  Stmt body = for_loop(i, 0, n, ForKind::Serial, allocate(T, allocate(Acc, seq({fill, sum}))));
  // (The interpreter only handles constant-size allocations: compare with a direct sum.)
  runtime::Module m = codegen::build_llvm({{"prefix_rows", {A, B}, body}});
  NDArray a = NDArray::empty({n, n}, f32), b = NDArray::zeros({n}, f32);
  a.fill_random(4);
  m.call("prefix_rows", {a, b});
  for (int r = 0; r < n; ++r) {
    float want = 0;
    for (int c = 0; c <= r; ++c) want += a.data<float>()[r * n + c];
    EXPECT_FLOAT_EQ(b.data<float>()[r], want) << "row " << r;
  }
}

// loom_alloc's per-thread cache of freed large blocks: a block of the same size and alignment
// comes back (a kernel allocates the same temporaries every call; fresh pages from the kernel
// cost a page fault every 4 KiB), aligned and usable to its last byte; other alignments and
// small sizes do not take it; impossible requests fail with a message instead of crashing.
TEST(LLVMMemory, FreedLargeBlocksAreReused) {
  const uint64_t mib = uint64_t(1) << 20;
  auto* p = static_cast<unsigned char*>(loom_alloc(mib + 3, 64));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  std::fill(p, p + mib + 3, 0xab);
  loom_free(p);
  auto* q = static_cast<unsigned char*>(loom_alloc(mib + 3, 64));
  EXPECT_EQ(q, p) << "the freed block comes back";
  auto* other = static_cast<unsigned char*>(loom_alloc(mib + 3, 4096));  // q is taken: a new block
  ASSERT_NE(other, nullptr);
  EXPECT_NE(other, q);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(other) % 4096, 0u);
  std::fill(other, other + mib + 3, 0xcd);
  loom_free(q);
  auto* bigger = static_cast<unsigned char*>(loom_alloc(2 * mib, 64));  // not q: another size
  EXPECT_NE(bigger, q);
  loom_free(bigger);
  loom_free(other);
  void* small = loom_alloc(100, 8);
  ASSERT_NE(small, nullptr);
  loom_free(small);
  loom_free(nullptr);
  EXPECT_EQ(loom_alloc(uint64_t(1) << 63, 64), nullptr);
  EXPECT_STREQ(loom_get_last_error(), "out of host memory");
  EXPECT_EQ(loom_alloc(4096, 48), nullptr);
  EXPECT_NE(std::string(loom_get_last_error()).find("alignment"), std::string::npos);
}

}  // namespace
}  // namespace loom::test
