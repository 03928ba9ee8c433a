#include <gtest/gtest.h>
#include <iostream>
#include "loom/codegen/llvm.h"
#include "loom/ir/eval.h"
#include "loom/ir/printer.h"
#include "loom/ir/tensor.h"
#include "loom/schedule/lower.h"
#include "loom/schedule/schedule.h"
#include "common/test_util.h"
namespace loom {
namespace {
using namespace loom::ir;
TEST(SymExp, Print) {
  Var n("n");
  Tensor A = placeholder({n, 64}, DataType::Float(32), "A");
  Tensor W = placeholder({64, 32}, DataType::Float(32), "W");
  IterVar r = reduce_axis(64, "k");
  Tensor C = compute({n, 32}, [&](Var i, Var j) { return sum(A(i, r) * W(r, j), {r}); }, "C");
  schedule::Schedule s({C});
  auto st = s[C];
  auto [io, ii] = st.split(st.axis(0), 8);
  st.vectorize(st.axis(1));
  LoweredFunc f = schedule::lower(s, {A, W, C}, "f");
  std::cout << to_string(f) << std::endl;
  runtime::Module m = codegen::build_llvm({f});
  for (int64_t rows : {1, 7, 8, 13, 64}) {
    NDArray a = NDArray::empty({rows, 64}, DataType::Float(32)), w = NDArray::empty({64, 32}, DataType::Float(32));
    a.fill_random(1, -1, 1); w.fill_random(2, -1, 1);
    NDArray c = NDArray::zeros({rows, 32}, DataType::Float(32)), c2 = NDArray::zeros({rows, 32}, DataType::Float(32));
    m.call("f", {a, w, c});
    interpret(f, {a, w, c2});
    EXPECT_TRUE(test::arrays_close(c, c2, 1e-5, 1e-5)) << rows;
  }
}
}  // namespace
}  // namespace loom
