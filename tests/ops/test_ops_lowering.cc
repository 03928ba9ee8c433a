// The operator library's tuned CPU schedules, checked through the loop-IR interpreter against
// the naive reference (small shapes; the codegen tests run them compiled).
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/ir/printer.h"
#include "loom/ops/cpu_schedules.h"
#include "loom/schedule/lower.h"

namespace loom {
namespace {

using namespace loom::ir;

void run_and_compare(const schedule::Schedule& s, const std::vector<Tensor>& inputs, const Tensor& out,
                     const char* name) {
  std::vector<Tensor> args = inputs;
  args.push_back(out);
  LoweredFunc f = schedule::lower(s, args, name);
  std::vector<NDArray> arrays;
  std::map<const Operation*, NDArray> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    arrays.push_back(test::random_array(inputs[i], 10 + i));
    in[inputs[i].op().get()] = arrays.back();
  }
  arrays.push_back(test::empty_like(out));
  interpret(f, arrays);
  EXPECT_TRUE(test::arrays_close(arrays.back(), reference_eval({out}, in)[0], 1e-4, 1e-4)) << to_string(f);
}

TEST(OpsLowering, PackedGemmSchedule) {
  Tensor A = placeholder({16, 24}, DataType::Float(32), "A");
  Tensor B = placeholder({24, 64}, DataType::Float(32), "B");
  Tensor C = ops::matmul_packed(A, B, 32);
  schedule::Schedule s({C});
  ops::schedule_matmul_packed_cpu(s, C, {8, 32, 256});
  run_and_compare(s, {A, B}, C, "gemm");
}

TEST(OpsLowering, PackedConvSchedule) {
  Tensor X = placeholder({1, 4, 8, 8}, DataType::Float(32), "X");
  Tensor W = placeholder({16, 4, 3, 3}, DataType::Float(32), "W");
  Tensor Y = ops::conv2d_nchw_packed(X, W, 1, 1, 8);
  schedule::Schedule s({Y});
  ops::schedule_conv2d_nchw_cpu(s, Y, 8, 4);
  run_and_compare(s, {X, W}, Y, "conv");
}

TEST(OpsLowering, ShapeErrorsNameTheTensors) {
  Tensor A = placeholder({4, 5}, DataType::Float(32), "A");
  Tensor B = placeholder({6, 7}, DataType::Float(32), "B");
  try {
    ops::matmul(A, B, "mm");
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("'A' has 5, 'B' has 6"), std::string::npos) << e.what();
  }
  Tensor X = placeholder({1, 3, 8, 8}, DataType::Float(32), "X");
  Tensor W = placeholder({4, 2, 3, 3}, DataType::Float(32), "W");
  EXPECT_THROW(ops::conv2d_nchw(X, W, 1, 1), ShapeError);
}

}  // namespace
}  // namespace loom

#include "loom/ops/quantized.h"

namespace loom {
namespace {

using namespace loom::ir;

// Blocked int8 conv2d with requantization, lowered with a plain schedule, against a direct
// NCHW int32 reference computed here.
TEST(QuantizedOps, BlockedConvMatchesPlainReference) {
  const int N = 1, C = 32, H = 6, O = 32, K = 3, stride = 1, pad = 1;
  Tensor X = placeholder({N, C, H, H}, DataType::Int(8), "X");
  Tensor W = placeholder({O, C, K, K}, DataType::Int(8), "W");
  Tensor Xp = ops::pack_nchw(X, 1, 16, "Xp"), Wp = ops::pack_oihw(W, 16, 16, "Wp");
  ops::Requantize rq{4, true};
  auto q = ops::conv2d_int8_blocked(Xp, Wp, stride, pad, rq);
  Tensor Y = ops::unpack_nchw(q.out, "Y");
  schedule::Schedule s({Y});
  auto f = schedule::lower(s, {X, W, Y}, "qconv");
  NDArray x = test::random_array(X, 3, -128, 127), w = test::random_array(W, 4, -128, 127), y = test::empty_like(Y);
  interpret(f, {x, w, y});
  for (int o = 0; o < O; ++o)
    for (int yy = 0; yy < H; ++yy)
      for (int xx = 0; xx < H; ++xx) {
        int32_t acc = 0;
        for (int c = 0; c < C; ++c)
          for (int ky = 0; ky < K; ++ky)
            for (int kx = 0; kx < K; ++kx) {
              int iy = yy * stride + ky - pad, ix = xx * stride + kx - pad;
              if (iy < 0 || iy >= H || ix < 0 || ix >= H) continue;
              acc += int32_t(x.data<int8_t>()[(c * H + iy) * H + ix]) *
                     int32_t(w.data<int8_t>()[((o * C + c) * K + ky) * K + kx]);
            }
        int32_t r = std::min(127, std::max(0, acc >> rq.shift));
        ASSERT_EQ(y.data<int8_t>()[(o * H + yy) * H + xx], r) << "at o=" << o << " y=" << yy << " x=" << xx;
      }
}

TEST(QuantizedOps, BlockedDenseAndAdd) {
  Tensor X = placeholder({2, 32}, DataType::Int(8), "X");
  Tensor W = placeholder({16, 32}, DataType::Int(8), "W");
  auto q = ops::dense_int8_blocked(ops::pack_nc(X, 2, 16), ops::pack_oi(W, 16, 16), {6, false});
  Tensor Y = ops::unpack_nc(q.out, "Y");
  auto a = ops::add_int8(Y, Y, {1, false}, "sum");
  schedule::Schedule s({a.out});
  auto f = schedule::lower(s, {X, W, a.out}, "qdense");
  NDArray x = test::random_array(X, 5, -128, 127), w = test::random_array(W, 6, -128, 127),
          out = test::empty_like(a.out);
  interpret(f, {x, w, out});
  std::map<const Operation*, NDArray> in{{X.op().get(), x}, {W.op().get(), w}};
  EXPECT_TRUE(test::arrays_close(out, reference_eval({a.out}, in)[0]));
  // Spot-check one element by hand: floor shift semantics on negative accumulators.
  int32_t acc = 0;
  for (int c = 0; c < 32; ++c) acc += int32_t(x.data<int8_t>()[c]) * int32_t(w.data<int8_t>()[c]);
  int32_t y0 = std::min(127, std::max(-128, acc >> 6));
  EXPECT_EQ(out.data<int8_t>()[0], std::min(127, std::max(-128, (y0 + y0) >> 1)));
}

}  // namespace
}  // namespace loom

#include "loom/ops/accel_schedules.h"

namespace loom {
namespace {

std::string lower_accel(const schedule::Schedule& s, const std::vector<ir::Tensor>& args) {
  schedule::LowerOptions opt;
  opt.stop_after = "inject_dma_copy";
  return ir::to_string(schedule::lower(s, args, "layer", opt));
}

TEST(AccelSchedules, DenseShowsDmaGemmAluAndVirtualThreads) {
  using namespace loom::ir;
  Tensor X = placeholder({1, 4, 1, 16}, DataType::Int(8), "X");
  Tensor W = placeholder({4, 4, 16, 16}, DataType::Int(8), "W");
  auto q = ops::dense_int8_blocked(X, W, {8, true});
  schedule::Schedule s({q.out});
  ops::schedule_dense_int8_accel(s, q, {1, 16, 16}, ops::AccelDenseTiling{1, 1, 2});
  EXPECT_EQ(lower_accel(s, {X, W, q.out}),
            R"(func layer(X: int8[1, 4, 1, 16], W: int8[4, 4, 16, 16], dense: int8[1, 4, 1, 16]) {
  vthread (j.outer.outer, 0, 2) {
    for (j.outer.inner, 0, 2) {
      allocate dense_acc[int32 * 16] in acc.acc
      accel.gemm.reset(address_of(dense_acc[0]))
      for (ic.outer, 0, 4) {
        allocate X.acc.inp[int8 * 16] in acc.inp
        dma_copy(address_of(X.acc.inp[0]), address_of(X[ic.outer*16]), (int8)0, 1, 16, 1, 1, 0, 0)
        allocate W.acc.wgt[int8 * 256] in acc.wgt
        dma_copy(address_of(W.acc.wgt[0]), address_of(W[j.outer.outer*2048 + j.outer.inner*1024 + ic.outer*256]), (int8)0, 2, 16, 16, 16, 0, 0, 16, 1, 1, 0, 0)
        accel.gemm.update(address_of(X.acc.inp[0]), address_of(W.acc.wgt[0]), address_of(dense_acc[0]))
      }
      allocate dense_shr[int32 * 16] in acc.acc
      // attr pragma_alu = 1
      for (l, 0, 16) {
        dense_shr[l] = dense_acc[l]/256
      }
      allocate dense_max[int32 * 16] in acc.acc
      // attr pragma_alu = 1
      for (l#1, 0, 16) {
        dense_max[l#1] = max(dense_shr[l#1], 0)
      }
      allocate dense_min[int32 * 16] in acc.acc
      // attr pragma_alu = 1
      for (l#2, 0, 16) {
        dense_min[l#2] = min(dense_max[l#2], 127)
      }
      dma_copy(address_of(dense[j.outer.outer*32 + j.outer.inner*16]), address_of(dense_min[0]), (int8)0, 1, 16, 1, 1, 0, 0)
    }
  }
}
)");
}

TEST(AccelSchedules, ConvLowersWithPaddedDmaAndTensorizedGemm) {
  using namespace loom::ir;
  Tensor X = placeholder({1, 2, 8, 8, 1, 16}, DataType::Int(8), "X");
  Tensor W = placeholder({4, 2, 3, 3, 16, 16}, DataType::Int(8), "W");
  auto q = ops::conv2d_int8_blocked(X, W, 1, 1, {8, true});
  schedule::Schedule s({q.out});
  ops::schedule_conv2d_int8_accel(s, q, {1, 16, 16}, {4, 8, 1, 2});
  std::string ir = lower_accel(s, {X, W, q.out});
  EXPECT_NE(ir.find("vthread (j.outer.outer, 0, 2)"), std::string::npos) << ir;
  EXPECT_NE(ir.find("accel.gemm.update(address_of(conv_pad.acc.inp["), std::string::npos) << ir;
  EXPECT_NE(ir.find("allocate conv_pad.acc.inp[int8 * 960] in acc.inp"), std::string::npos)
      << ir;  // 6 rows x 10 cols x 16
  EXPECT_NE(ir.find("dma_copy(address_of(conv_pad.acc.inp[0]), address_of(X["), std::string::npos) << ir;
  EXPECT_EQ(ir.find("if_then_else"), std::string::npos) << ir;  // padding folded into the DMA
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {
using namespace loom::ir;
// Clamps that are not int8 values (they are 8-bit results and ALU immediates) and degenerate
// tilings are refused with the limit named, instead of wrapping or dividing by zero.
TEST(QuantizedOps, RequantizeClampsAndTilingAreChecked) {
  Tensor X = placeholder({1, 1, 4, 4, 1, 16}, DataType::Int(8), "X");
  Tensor W = placeholder({1, 1, 3, 3, 16, 16}, DataType::Int(8), "W");
  for (auto [lo, hi] : {std::pair{-129, 127}, std::pair{0, 300}, std::pair{5, 4}, std::pair{-40000, 40000}}) {
    ops::Requantize rq{4, false, lo, hi};
    try {
      ops::conv2d_int8_blocked(X, W, 1, 1, rq);
      ADD_FAILURE() << "clamp [" << lo << ", " << hi << "] accepted";
    } catch (const ShapeError& e) {
      EXPECT_NE(std::string(e.what()).find("must be an int8 range"), std::string::npos) << e.what();
    }
  }
  const ops::AccelLimits lim{2048, 1024, 2048};
  EXPECT_THROW(ops::choose_conv_tiling({14, 14, 4, 1, 3, 3, 1, false}, 0, lim), ScheduleError);
  EXPECT_THROW(ops::choose_conv_tiling({0, 14, 4, 1, 3, 3, 1, false}, 2, lim), ScheduleError);
  EXPECT_EQ(ops::choose_conv_tiling({14, 14, 4, 1, 3, 3, 1, false}, 2, lim).virtual_threads, 2);
}

}  // namespace
}  // namespace loom
