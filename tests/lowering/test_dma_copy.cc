// pragma dma_copy: copy nests (with and without a padding box) become one dma_copy call that an
// accelerator backend maps to its LOAD/STORE instructions.
#include <gtest/gtest.h>

#include "loom/ir/printer.h"
#include "loom/ops/nn.h"
#include "loom/schedule/lower.h"

namespace loom {
namespace {

using namespace loom::ir;
using schedule::Schedule;

std::string after_dma(const Schedule& s, const std::vector<Tensor>& args) {
  schedule::LowerOptions opt;
  opt.stop_after = "inject_dma_copy";
  return to_string(schedule::lower(s, args, "f", opt));
}

TEST(DmaCopy, CacheReadIntoScopeBecomesOneCopy) {
  Tensor A = placeholder({8, 32}, DataType::Int(8), "A");
  Tensor B = compute(
      {8, 32}, [&](Var i, Var j) { return A(i, j) + cast(DataType::Int(8), Expr(1)); }, "B");
  Schedule s({B});
  Tensor AL = s.cache_read(A, scope::kAccInput, {B});
  auto [io, ii] = s[B].split(s[B].axis(0), 2);
  s[AL].compute_at(s[B], io);
  s[AL].pragma(s[AL].axis(0), "dma_copy");
  std::string ir = after_dma(s, {A, B});
  EXPECT_NE(ir.find("allocate A.acc.inp[int8 * 64] in acc.inp"), std::string::npos) << ir;
  EXPECT_NE(
      ir.find(
          "dma_copy(address_of(A.acc.inp[0]), address_of(A[i.outer*64]), (int8)0, 2, 2, 32, 32, 0, 0, 32, 1, 1, 0, 0)"),
      std::string::npos)
      << ir;
}

TEST(DmaCopy, PaddingBecomesPerDimensionPads) {
  Tensor X = placeholder({1, 4, 6, 6}, DataType::Int(8), "X");
  Tensor P = ops::pad_nchw(X, 1, "P");
  Tensor Y = compute(
      {1, 4, 6, 6}, [&](Var n, Var c, Var y, Var x) { return P(n, c, y + 1, x) + P(n, c, y, x + 2); }, "Y");
  Schedule s({Y});
  auto [yo, yi] = s[Y].split(s[Y].axis(2), 3);
  s[P].set_scope(scope::kAccInput);
  s[P].compute_at(s[Y], yo);
  s[P].pragma(s[P].axis(0), "dma_copy");
  std::string ir = after_dma(s, {X, Y});
  // Rows: 4 per block of 3 output rows; block 0 starts one row above the image, the source
  // address is that of the first real row. Columns: 8 with one pad column on each side.
  EXPECT_NE(
      ir.find("dma_copy(address_of(P[0]), address_of(X[j*36 + k.outer*18 + max(k.outer*-3 + 1, 0)*6 - 6]), (int8)0, 2, "
              "4, 8, 6, max(k.outer*-3 + 1, 0), 0, "
              "8, 1, 1, 1, 1)"),
      std::string::npos)
      << ir;
}

TEST(DmaCopy, NonCopyIsAnError) {
  Tensor A = placeholder({8}, DataType::Int(32), "A");
  Tensor B = compute(
      {8}, [&](Var i) { return A(i) * 2; }, "B");
  Tensor C = compute(
      {8}, [&](Var i) { return B(i) + 1; }, "C");
  Schedule s({C});
  s[B].pragma(s[B].axis(0), "dma_copy");
  try {
    after_dma(s, {A, C});
    FAIL();
  } catch (const LoweringError& e) {
    EXPECT_NE(std::string(e.what()).find("not a copy (the stored value is not a load)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom
