// Winograd convolutions F(2x2, 3x3) and F(4x4, 3x3) on NCHWc data (ops/layers.h,
// schedule_conv2d_winograd_cpu): compiled on this host and compared with a 3x3 convolution
// written here as plain loops over doubles, for row and column counts that the tiles do not
// divide, asymmetric padding, batches, groups, a bias and a fused ReLU, each stage over the whole
// map or fused per chunk of tile rows, on 1 and 2 threads; the weight transform against G g G^T
// worked by hand; and the shape errors.
#include <gtest/gtest.h>

#include <cmath>

#include "common/test_util.h"
#include "loom/codegen/llvm.h"
#include "loom/ir/printer.h"
#include "loom/ops/cpu_schedules.h"
#include "loom/ops/layers.h"
#include "loom/runtime/error.h"
#include "loom/runtime/thread_pool.h"
#include "loom/schedule/lower.h"

namespace loom {
namespace {

using namespace loom::ir;

struct Case {
  int64_t n, c, o, h, w, block;
  std::array<int64_t, 4> pads;  // top, left, bottom, right
  bool bias, relu;
  int64_t groups = 1;  // of whole blocks
};

std::string describe(const Case& k) {
  return std::to_string(k.n) + "x" + std::to_string(k.c) + "x" + std::to_string(k.h) + "x" + std::to_string(k.w) +
         " -> " + std::to_string(k.o) + ", blocks of " + std::to_string(k.block) + ", pads " +
         std::to_string(k.pads[0]) + std::to_string(k.pads[1]) + std::to_string(k.pads[2]) + std::to_string(k.pads[3]) +
         (k.bias ? ", bias" : "") + (k.relu ? ", relu" : "") + ", " + std::to_string(k.groups) + " groups";
}

// x [N, C/b, H, W, b], w OIHW ([O, C/groups, 3, 3]): the convolution in doubles, blocked like the
// kernel's output.
NDArray direct_conv(const Case& k, const NDArray& x, const NDArray& w, const NDArray& bias) {
  const int64_t b = k.block, oh = k.h + k.pads[0] + k.pads[2] - 2, ow = k.w + k.pads[1] + k.pads[3] - 2;
  NDArray y = NDArray::empty({k.n, k.o / b, oh, ow, b}, DataType::Float(32));
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < k.o; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = k.bias ? bias.get_as_double(o) : 0.0;
          const int64_t cg = k.c / k.groups, first = o / (k.o / k.groups) * cg;
          for (int64_t c = first; c < first + cg; ++c)
            for (int64_t ky = 0; ky < 3; ++ky)
              for (int64_t kx = 0; kx < 3; ++kx) {
                int64_t yy = i + ky - k.pads[0], xx = j + kx - k.pads[1];
                if (yy < 0 || yy >= k.h || xx < 0 || xx >= k.w) continue;
                acc += x.get_as_double((((n * (k.c / b) + c / b) * k.h + yy) * k.w + xx) * b + c % b) *
                       w.get_as_double(((o * cg + c - first) * 3 + ky) * 3 + kx);
              }
          if (k.relu) acc = std::max(acc, 0.0);
          y.set_from_double((((n * (k.o / b) + o / b) * oh + i) * ow + j) * b + o % b, acc);
        }
  return y;
}

TEST(Winograd, MatchesTheDirectConvolution) {
  const codegen::TargetInfo target = codegen::target_info();
  for (const Case& k :
       {Case{1, 16, 32, 9, 11, 8, {1, 1, 1, 1}, true, false}, Case{1, 32, 16, 14, 14, 16, {1, 1, 1, 1}, false, true},
        Case{2, 8, 8, 7, 6, 8, {0, 1, 2, 1}, true, true}, Case{1, 16, 16, 5, 5, 8, {0, 0, 0, 0}, false, false},
        Case{1, 32, 32, 10, 9, 8, {1, 1, 1, 1}, true, true, 4},
        Case{1, 32, 64, 8, 8, 8, {1, 1, 1, 1}, false, false, 2}})
    for (int m : {2, 4}) {
      SCOPED_TRACE(describe(k) + ", F(" + std::to_string(m) + "x" + std::to_string(m) + ", 3x3)");
      const int64_t b = k.block, a = ops::winograd_alpha(m);
      Tensor X = placeholder({k.n, k.c / b, k.h, k.w, b}, DataType::Float(32), "X");
      Tensor U = placeholder({a * a, k.o / b, k.c / k.groups / b, b, b}, DataType::Float(32), "U");
      Tensor B = placeholder({k.o}, DataType::Float(32), "B");
      ops::Conv2dParams p;
      p.pads = k.pads;
      p.groups = k.groups;
      Tensor Y = ops::conv2d_winograd_nchwc(X, U, k.bias ? B : Tensor(), p, m, "Y");
      Tensor out = k.relu ? compute(ops::shape_exprs(ops::shape_of(Y)), ComputeFn([&](const std::vector<Var>& v) {
                                      return max(Y(std::vector<Expr>(v.begin(), v.end())), make_zero(Y.dtype()));
                                    }),
                                    "relu", "elemwise")
                          : Y;
      NDArray x = test::random_float32({k.n, k.c / b, k.h, k.w, b}, 1),
              w = test::random_float32({k.o, k.c / k.groups, 3, 3}, 2), bias = test::random_float32({k.o}, 3);
      NDArray want = direct_conv(k, x, w, bias);
      NDArray u = ops::pack_winograd_weights(w, m, b, b);
      // Each stage over the whole map, and fused per chunk of one and of two tile rows (a partial
      // last chunk where the tile rows are odd).
      for (int fused_rows : {0, 1, 2, 3}) {
        schedule::Schedule s({out});
        if (fused_rows == 3)  // one row through a tuned tile's choice, with the default register tile
          ops::schedule_conv2d_winograd_cpu(s, out, target.float32_lanes(), target.vector_registers,
                                            ops::NchwcConvTile{1, int(std::max<int64_t>(1, (k.w + m - 1) / m / 2)), 1});
        else
          ops::schedule_conv2d_winograd_cpu(s, out, target.float32_lanes(), target.vector_registers, std::nullopt,
                                            fused_rows);
        std::vector<Tensor> args = k.bias ? std::vector<Tensor>{X, U, B, out} : std::vector<Tensor>{X, U, out};
        LoweredFunc f = schedule::lower(s, args, "winograd");
        if (fused_rows == 3) {
          // Fused: the transformed input of one tile row, [alpha^2, C/b, tiles wide, b] (rounded up to
          // whole register tiles), not of the map.
          int64_t tw = (k.w - 2 + k.pads[1] + k.pads[3] + m - 1) / m,
                  th = (k.h - 2 + k.pads[0] + k.pads[2] + m - 1) / m;
          int64_t row = a * a * (k.c / b) * tw * b, map = row * th * k.n;
          std::string ir = to_string(f), what = "allocate Y_in[float32 * ";
          size_t at = ir.find(what);
          ASSERT_NE(at, std::string::npos) << ir;
          int64_t size = std::stoll(ir.substr(at + what.size()));
          EXPECT_GE(size, row) << ir;
          EXPECT_LT(size, 2 * row) << ir;
          if (map > row) EXPECT_LT(size, map) << ir;
        }
        runtime::Module mod = codegen::build_llvm({f});
        for (int threads : {1, 2}) {
          runtime::set_num_threads(threads);
          NDArray y = NDArray::zeros(want.shape(), DataType::Float(32));
          mod.call("winograd", k.bias ? std::vector<NDArray>{x, u, bias, y} : std::vector<NDArray>{x, u, y});
          EXPECT_TRUE(test::arrays_close(y, want, 1e-4, 1e-4)) << threads << " threads, fused rows " << fused_rows;
        }
      }
    }
  runtime::set_num_threads(0);
}

// F(2x2, 3x3): G = [[1, 0, 0], [1/2, 1/2, 1/2], [1/2, -1/2, 1/2], [0, 0, 1]]. A kernel with one
// tap g[1][1] = 1 transforms to U[i][j] = G[i][1] G[j][1]; the all-ones kernel to the row sums'
// products. Layout [alpha^2, O/ob, C/ib, ib, ob].
TEST(Winograd, WeightsAreGgGt) {
  const double center[4] = {0, 0.5, -0.5, 0}, ones[4] = {1, 1.5, 0.5, 1};
  NDArray w = NDArray::zeros({2, 1, 3, 3}, DataType::Float(32));
  w.set_from_double(4, 1.0);                                  // output 0: the center tap
  for (int k = 0; k < 9; ++k) w.set_from_double(9 + k, 1.0);  // output 1: all ones
  NDArray u = ops::pack_winograd_weights(w, 2, 1, 2);
  ASSERT_EQ(u.shape(), (ops::Shape{16, 1, 1, 1, 2}));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      EXPECT_DOUBLE_EQ(u.get_as_double((i * 4 + j) * 2 + 0), center[i] * center[j]) << i << "," << j;
      EXPECT_DOUBLE_EQ(u.get_as_double((i * 4 + j) * 2 + 1), ones[i] * ones[j]) << i << "," << j;
    }
  EXPECT_THROW(ops::pack_winograd_weights(NDArray::zeros({2, 1, 5, 5}, DataType::Float(32)), 2, 1, 2), TypeError);
  EXPECT_THROW(ops::pack_winograd_weights(NDArray::zeros({2, 1, 3, 3}, DataType::Int(8)), 2, 1, 2), TypeError);
  EXPECT_THROW(ops::pack_winograd_weights(w, 2, 1, 4), ShapeError);  // 4 does not divide 2 outputs
  EXPECT_THROW(ops::pack_winograd_weights(w, 3, 1, 2), ShapeError);  // no F(3x3, 3x3)
}

TEST(Winograd, ShapeErrorsNameWhatIsWrong) {
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const ShapeError& e) {
      return std::string(e.what());
    }
    return std::string("no ShapeError");
  };
  ops::Conv2dParams p;
  p.pads = {1, 1, 1, 1};
  EXPECT_NE(message([&] { ops::conv2d_winograd_shape({1, 2, 8, 8, 8}, {16, 2, 3, 8, 8}, p, 2); }), "no ShapeError");
  EXPECT_EQ(ops::conv2d_winograd_shape({1, 2, 8, 8, 8}, {16, 3, 2, 8, 8}, p, 2), (ops::Shape{1, 3, 8, 8, 8}));
  EXPECT_NE(message([&] {
              ops::conv2d_winograd_shape({1, 2, 8, 8, 8}, {36, 3, 2, 8, 8}, p, 2);
            }).find("are not [16, O/ob, 2, 8, ob]"),
            std::string::npos);
  EXPECT_NE(message([&] {
              ops::conv2d_winograd_shape({1, 2, 8, 8}, {16, 3, 2, 8, 8}, p, 2);
            }).find("rank 5"),
            std::string::npos);
  EXPECT_NE(message([&] {
              ops::conv2d_winograd_shape({1, 2, 8, 8, 8}, {16, 3, 2, 8, 8}, p, 6);
            }).find("output tiles of 6"),
            std::string::npos);
  ops::Conv2dParams strided = p;
  strided.strides = {2, 2};
  EXPECT_NE(message([&] {
              ops::conv2d_winograd_shape({1, 2, 8, 8, 8}, {16, 3, 2, 8, 8}, strided, 2);
            }).find("stride 1"),
            std::string::npos);
}

}  // namespace
}  // namespace loom
