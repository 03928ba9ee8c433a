// tensorize: a VTA-style GEMM block (1x16 inputs times 16x16 weights into int32) replacing the
// inner loop nest of a packed dense layer, and precise reasons when a pattern does not match.
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/ir/printer.h"
#include "loom/schedule/lower.h"

namespace loom {
namespace {

using namespace loom::ir;
using schedule::Schedule;

schedule::TensorIntrin gemm_intrin(int batch = 1, int block = 16) {
  Tensor inp = placeholder({batch, block}, DataType::Int(8), "inp");
  Tensor wgt = placeholder({block, block}, DataType::Int(8), "wgt");
  IterVar k = reduce_axis(block, "k");
  Tensor out = compute(
      {batch, block},
      [&](Var b, Var o) { return sum(cast(DataType::Int(32), inp(b, k)) * cast(DataType::Int(32), wgt(o, k)), {k}); },
      "out");
  return schedule::declare_tensor_intrin("gemm", out, {inp, wgt});
}

// Packed dense: A[bo, io, bi, ii] x W[oo, io, oi, ii] -> C[bo, oo, bi, oi].
struct PackedDense {
  Tensor A, W, C;
  IterVar rio, rii;
};
PackedDense packed_dense(int in_blocks, int out_blocks, bool swap_cast = false) {
  PackedDense d;
  d.A = placeholder({1, in_blocks, 1, 16}, DataType::Int(8), "A");
  d.W = placeholder({out_blocks, in_blocks, 16, 16}, DataType::Int(8), "W");
  d.rio = reduce_axis(in_blocks, "io");
  d.rii = reduce_axis(16, "ii");
  d.C = compute({1, out_blocks, 1, 16}, ComputeFn([&](const std::vector<Var>& v) {
                  Expr a = cast(DataType::Int(32), d.A(v[0], d.rio, v[2], d.rii));
                  Expr w = cast(DataType::Int(32), d.W(v[1], d.rio, v[3], d.rii));
                  return sum(swap_cast ? w * a : a * w, {d.rio, d.rii});
                }),
                "C");
  return d;
}

std::string lowered(const Schedule& s, const std::vector<Tensor>& args) {
  return to_string(schedule::lower(s, args, "dense"));
}

TEST(Tensorize, GemmBlockReplacesInnerNest) {
  auto d = packed_dense(4, 2);
  Schedule s({d.C});
  auto c = s[d.C];
  c.reorder({c.axis(0), c.axis(1), d.rio, c.axis(2), c.axis(3), d.rii});
  c.tensorize(c.axis(2), gemm_intrin());
  EXPECT_EQ(lowered(s, {d.A, d.W, d.C}),
            R"(func dense(A: int8[1, 4, 1, 16], W: int8[2, 4, 16, 16], C: int32[1, 2, 1, 16]) {
  for (j, 0, 2) {
    gemm.reset(address_of(C[j*16]))
    for (io, 0, 4) {
      gemm.update(address_of(A[io*16]), address_of(W[j*1024 + io*256]), address_of(C[j*16]))
    }
  }
}
)");
}

// LowerOptions::min_parallel_work counts a tensorized nest's intrinsic calls as work (an int8
// conv's dot products are calls, not stores): 2 x (1 reset + 4 updates) = 10 calls here.
TEST(Tensorize, IntrinsicCallsCountAsParallelWork) {
  auto d = packed_dense(4, 2);
  auto parallel_loops = [&](int64_t min_work) {
    Schedule s({d.C});
    auto c = s[d.C];
    c.reorder({c.axis(0), c.axis(1), d.rio, c.axis(2), c.axis(3), d.rii});
    c.tensorize(c.axis(2), gemm_intrin());
    c.parallel(c.axis(1));
    schedule::LowerOptions o;
    o.min_parallel_work = min_work;
    std::string text = to_string(schedule::lower(s, {d.A, d.W, d.C}, "dense", o));
    return text.find("parallel (") != std::string::npos;
  };
  EXPECT_TRUE(parallel_loops(10));
  EXPECT_FALSE(parallel_loops(11));
}

TEST(Tensorize, WholeReductionUsesFullPart) {
  auto d = packed_dense(1, 2);
  Schedule s({d.C});
  auto c = s[d.C];
  c.reorder({c.axis(0), c.axis(1), c.axis(2), d.rio, c.axis(3), d.rii});
  c.tensorize(c.axis(2), gemm_intrin());
  EXPECT_NE(lowered(s, {d.A, d.W, d.C}).find("gemm.full(address_of(A[0]), address_of(W[j*256]), address_of(C[j*16]))"),
            std::string::npos)
      << lowered(s, {d.A, d.W, d.C});
}

TEST(Tensorize, MismatchesSayWhy) {
  {
    auto d = packed_dense(4, 2, /*swap_cast=*/true);
    Schedule s({d.C});
    auto c = s[d.C];
    c.reorder({c.axis(0), c.axis(1), d.rio, c.axis(2), c.axis(3), d.rii});
    c.tensorize(c.axis(2), gemm_intrin());
    std::string e = test::error_text<ScheduleError>([&] { lowered(s, {d.A, d.W, d.C}); });
    EXPECT_NE(e.find("tensorize 'gemm' at 'k' of stage 'C': the stage computes"), std::string::npos) << e;
    EXPECT_NE(e.find("moving differently"), std::string::npos) << e;
  }
  {
    auto d = packed_dense(4, 2);
    Schedule s({d.C});
    auto c = s[d.C];
    auto [oo, oi] = c.split(c.axis(3), 8);
    c.reorder({c.axis(0), c.axis(1), d.rio, c.axis(2), oo, oi, d.rii});
    c.tensorize(oi, gemm_intrin());
    std::string e = test::error_text<ScheduleError>([&] { lowered(s, {d.A, d.W, d.C}); });
    EXPECT_NE(e.find("axis 'l' sweeps 8 iterations, the intrinsic's axis 'j' has 16"), std::string::npos) << e;
  }
  {
    auto d = packed_dense(4, 2);
    Schedule s({d.C});
    auto c = s[d.C];
    auto [ko, ki] = c.split(d.rii, 5);
    c.reorder({c.axis(0), c.axis(1), d.rio, ko, c.axis(2), c.axis(3), ki});
    c.tensorize(c.axis(2), gemm_intrin());
    std::string e = test::error_text<ScheduleError>([&] { lowered(s, {d.A, d.W, d.C}); });
    EXPECT_NE(e.find("needs a bounds guard"), std::string::npos) << e;
  }
  {
    // int16 inputs do not match the int8 pattern.
    Tensor A = placeholder({1, 1, 1, 16}, DataType::Int(16), "A16");
    Tensor W = placeholder({1, 1, 16, 16}, DataType::Int(8), "W");
    IterVar io = reduce_axis(1, "io"), ii = reduce_axis(16, "ii");
    Tensor C = compute(
        {1, 1, 1, 16}, ComputeFn([&](const std::vector<Var>& v) {
          return sum(cast(DataType::Int(32), A(v[0], io, v[2], ii)) * cast(DataType::Int(32), W(v[1], io, v[3], ii)),
                     {io, ii});
        }),
        "C");
    Schedule s({C});
    s[C].tensorize(s[C].axis(2), gemm_intrin());
    std::string e = test::error_text<ScheduleError>([&] { lowered(s, {A, W, C}); });
    EXPECT_NE(e.find("type int16 instead of int8"), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace loom
