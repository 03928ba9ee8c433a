// The typed intrinsic calls (ir/intrinsics.h): what a builder makes, the reader gives back; other
// calls are not mistaken for them; a malformed dma_copy is an internal error, not a misread.
#include <gtest/gtest.h>

#include "loom/ir/intrinsics.h"
#include "loom/ir/printer.h"
#include "loom/runtime/error.h"

namespace loom::ir {
namespace {

TEST(Intrinsics, DmaCopyRoundTrip) {
  Var a("a"), b("b");
  DmaCopy c{a + 1,
            b * 2,
            Expr(0),
            {{Expr(3), Expr(16), Expr(32), Expr(1), Expr(0)}, {Expr(16), Expr(1), Expr(1), Expr(0), Expr(2)}}};
  Expr call = make_dma_copy(c);
  auto back = as_dma_copy(call.as<CallNode>());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(to_string(back->dst), to_string(c.dst));
  EXPECT_EQ(to_string(back->src), to_string(c.src));
  ASSERT_EQ(back->dims.size(), 2u);
  EXPECT_EQ(*as_const_int(back->dims[0].dst_stride), 16);
  EXPECT_EQ(*as_const_int(back->dims[1].pad_after), 2);
  EXPECT_FALSE(as_dma_copy(call_intrinsic(DataType::Int(32), "dma_copy_not", {}).as<CallNode>()).has_value());
  // An argument count that does not match ndim.
  Expr bad = call_intrinsic(DataType::Int(32), kDmaCopy, {a, b, Expr(0), Expr(2), Expr(1)});
  EXPECT_THROW(as_dma_copy(bad.as<CallNode>()), InternalError);
}

TEST(Intrinsics, TensorIntrinCallRoundTrip) {
  Var a("a"), b("b"), c("c");
  for (TensorIntrinPart part : {TensorIntrinPart::Full, TensorIntrinPart::Reset, TensorIntrinPart::Update}) {
    Expr call = make_tensor_intrin_call({kAccelGemm, part, {a, b, c}});
    EXPECT_EQ(call.as<CallNode>()->name, std::string("accel.gemm.") + to_string(part));
    auto back = as_tensor_intrin_call(call.as<CallNode>());
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->intrinsic, kAccelGemm);
    EXPECT_EQ(back->part, part);
    EXPECT_EQ(back->addresses.size(), 3u);
  }
  EXPECT_FALSE(
      as_tensor_intrin_call(call_intrinsic(DataType::Int(32), "accel.gemm.sideways", {a}).as<CallNode>()).has_value());
  EXPECT_FALSE(as_tensor_intrin_call(call_intrinsic(DataType::Int(32), "exp", {a}).as<CallNode>()).has_value());
  EXPECT_FALSE(
      as_tensor_intrin_call(call_intrinsic(DataType::Int(32), "accel.gemm.full", {}).as<CallNode>()).has_value());
}

}  // namespace
}  // namespace loom::ir
