// Symbolic extents: one compiled kernel whose argument shapes use a shape variable runs at every
// value of it (module.h ABI: the variable's value after the buffers), against the interpreter.
#include <gmock/gmock.h>

#include "codegen_test_util.h"
#include "common/error_text.h"
#include "loom/ir/functor.h"
#include "loom/ir/printer.h"
#include "loom/ir/tensor.h"
#include "loom/schedule/lower.h"
#include "loom/schedule/schedule.h"

namespace loom::test {
namespace {

using namespace loom::ir;

// C[n, 32] = A[n, 64] x W[64, 32], rows split by 8 (a tail when 8 does not divide n), columns
// vectorized.
LoweredFunc rows_times_weights() {
  Var n("n");
  Tensor A = placeholder({n, 64}, DataType::Float(32), "A");
  Tensor W = placeholder({64, 32}, DataType::Float(32), "W");
  IterVar r = reduce_axis(64, "k");
  Tensor C = compute(
      {n, 32}, [&](Var i, Var j) { return sum(A(i, r) * W(r, j), {r}); }, "C");
  schedule::Schedule s({C});
  auto st = s[C];
  st.split(st.axis(0), 8);
  st.vectorize(st.axis(1));
  return schedule::lower(s, {A, W, C}, "rows_times_weights");
}

TEST(LLVMSymbolic, OneKernelRunsEveryExtent) {
  LoweredFunc f = rows_times_weights();
  runtime::FunctionSignature sig = codegen::signature_of(f);
  ASSERT_EQ(sig.shape_vars, (std::vector<std::string>{"n"}));
  EXPECT_EQ(sig.args[0].str(), "float32[n, 64]");
  EXPECT_EQ(sig.args[0].shape, (std::vector<int64_t>{-1, 64}));
  runtime::Module m = codegen::build_llvm({f});
  for (int64_t rows : {1, 7, 8, 13, 64}) {
    NDArray a = random_float32({rows, 64}, uint64_t(rows)), w = random_float32({64, 32}, 2);
    NDArray got = NDArray::zeros({rows, 32}, DataType::Float(32)),
            want = NDArray::zeros({rows, 32}, DataType::Float(32));
    m.call(f.name, {a, w, got});
    interpret(f, {a, w, want});
    EXPECT_TRUE(arrays_close(got, want, 1e-5, 1e-5)) << "n = " << rows;
  }
  // The arguments must agree on n.
  NDArray a = random_float32({5, 64}, 1), w = random_float32({64, 32}, 2),
          c = NDArray::zeros({6, 32}, DataType::Float(32));
  EXPECT_THAT(
      error_text<ShapeError>([&] {
        m.call(f.name, {a, w, c});
      }),
      ::testing::HasSubstr("argument 'C' expects float32[n, 32], got float32[6, 32]: dimension 0 is 6, not n = 5"));
}

// partition_loops splits the symbolic row-tile loop at n / 8: the full tiles run without the
// guard, the tail keeps it.
// The loops over `name` in a statement, and whether each one's body holds a guard.
struct LoopGuards : IRVisitor {
  std::string name;
  std::vector<bool> guarded;  // per loop, in order
  int open = -1;
  using IRVisitor::visit;
  void visit_for(const ForNode* op) override {
    if (op->var.name() != name) return IRVisitor::visit_for(op);
    int saved = open;
    open = static_cast<int>(guarded.size());
    guarded.push_back(false);
    IRVisitor::visit_for(op);
    open = saved;
  }
  void visit_if(const IfThenElseNode* op) override {
    if (open >= 0) guarded[size_t(open)] = true;
    IRVisitor::visit_if(op);
  }
};

TEST(LLVMSymbolic, FullTilesOfASymbolicLoopRunUnguarded) {
  LoweredFunc f = rows_times_weights();
  LoopGuards loops;
  loops.name = "i.outer";
  loops.visit(f.body);
  ASSERT_EQ(loops.guarded.size(), 2u) << to_string(f);
  EXPECT_FALSE(loops.guarded[0]) << to_string(f);  // the full tiles
  EXPECT_TRUE(loops.guarded[1]) << to_string(f);   // the tail
}

TEST(LLVMSymbolic, ExtentsMustBeAffine) {
  Var n("n");
  Buffer A = make_buffer("A", DataType::Float(32), {n * n});
  Var i("i");
  LoweredFunc f{"square", {A}, for_loop(i, 0, n * n, ForKind::Serial, store(A, Expr(0.0f), i))};
  EXPECT_THAT(error_text<CodegenError>([&] { codegen::build_llvm({f}); }),
              ::testing::HasSubstr("neither constant nor affine in shape variables"));
}

}  // namespace
}  // namespace loom::test
