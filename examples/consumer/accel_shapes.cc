#include "accel_shapes.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "loom/codegen/accel.h"
#include "loom/ops/accel_schedules.h"
#include "loom/ops/accel_target.h"
#include "loom/ops/quantized.h"
#include "loom/runtime/accel_device.h"
#include "loom/schedule/lower.h"

namespace {

using loom::DataType;
using loom::NDArray;
namespace ops = loom::ops;
namespace ir = loom::ir;

struct ConvCase {
  int in_ch, out_ch, size, kernel, stride, pad, vthreads;
};
struct DenseCase {
  int in_ch, out_ch, vthreads;
};
struct AddCase {
  int channels, size, vthreads;
};

NDArray random_int8(std::vector<int64_t> shape, std::mt19937& rng) {
  NDArray a = NDArray::empty(shape, DataType::Int(8));
  std::uniform_int_distribution<int> d(-128, 127);
  auto* p = static_cast<int8_t*>(a.raw_data());
  for (int64_t i = 0; i < a.numel(); ++i) p[i] = int8_t(d(rng));
  return a;
}

ir::Tensor int8_input(const std::vector<int64_t>& shape, const std::string& name) {
  std::vector<ir::Expr> dims;
  for (int64_t d : shape) dims.push_back(ir::Expr(int(d)));
  return ir::placeholder(dims, DataType::Int(8), name);
}

// The requantization as ops::Requantize documents it: arithmetic shift right, then the clamp.
int8_t requantize(int64_t acc, const ops::Requantize& rq) {
  int64_t v = acc >> rq.shift;
  int64_t lo = rq.relu ? std::max(0, rq.clip_lo) : rq.clip_lo;
  return int8_t(std::min<int64_t>(std::max(v, lo), rq.clip_hi));
}

// Compiles `func` for the config, runs it on a fresh "fsim" device with `args` (inputs, then the
// output) and returns the output's bytes.
std::vector<int8_t> run_on_fsim(const ir::LoweredFunc& func, const loom::accel::AccelConfig& cfg,
                                std::vector<NDArray> args) {
  loom::codegen::AccelModule m(func, cfg);
  auto dev = loom::make_accel_device("fsim", cfg.to_json());
  m.run(*dev, args);
  const NDArray& out = args.back();
  std::vector<int8_t> bytes(size_t(out.numel()));
  std::memcpy(bytes.data(), out.raw_data(), bytes.size());
  return bytes;
}

int mismatches(const std::vector<int8_t>& got, const std::vector<int8_t>& want) {
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i) bad += got[i] != want[i];
  return bad;
}

// Blocked layouts (loom/ops/quantized.h): data [1, C/bi, H, W, b, bi], weights [O/bo, C/bi, k, k,
// bo, bi], output [1, O/bo, OH, OW, b, bo].
int check_conv(const ConvCase& c, const loom::accel::AccelConfig& cfg, std::mt19937& rng) {
  const ops::AccelTarget t = ops::accel_target(cfg);
  const int b = t.blocking.batch, bi = t.blocking.block_in, bo = t.blocking.block_out;
  const int C = c.in_ch / bi, O = c.out_ch / bo, k = c.kernel;
  const int out = (c.size + 2 * c.pad - k) / c.stride + 1;
  ir::Tensor X = ir::placeholder({1, C, c.size, c.size, b, bi}, DataType::Int(8), "X");
  ir::Tensor W = ir::placeholder({O, C, k, k, bo, bi}, DataType::Int(8), "W");
  const ops::Requantize rq{10, true};
  ops::QuantizedStages q = ops::conv2d_int8_blocked(X, W, c.stride, c.pad, rq, "conv");
  ops::ConvShape shape = ops::conv_shape_of(q, c.stride, false);
  if (shape.out_h != out || shape.oc_blocks != O || shape.ic_blocks != C || shape.kernel_h != k) {
    std::printf("conv_shape_of disagrees with the conv's own sizes\n");
    return 1;
  }
  ops::AccelConvTiling tiling = ops::choose_conv_tiling(shape, c.vthreads, t.limits);
  ops::check_conv_tiling(shape, tiling, t.limits);
  loom::schedule::Schedule s({q.out});
  ops::schedule_conv2d_int8_accel(s, q, t.blocking, tiling);
  ir::LoweredFunc f = loom::schedule::lower(s, {X, W, q.out}, "conv");

  NDArray x = random_int8({1, C, c.size, c.size, b, bi}, rng), w = random_int8({O, C, k, k, bo, bi}, rng);
  NDArray y = NDArray::zeros({1, O, out, out, b, bo}, DataType::Int(8));
  std::vector<int8_t> got = run_on_fsim(f, cfg, {x, w, y});
  const auto* xp = static_cast<const int8_t*>(x.raw_data());
  const auto* wp = static_cast<const int8_t*>(w.raw_data());
  std::vector<int8_t> want(got.size());
  for (int o = 0; o < O * bo; ++o)
    for (int oy = 0; oy < out; ++oy)
      for (int ox = 0; ox < out; ++ox)
        for (int n = 0; n < b; ++n) {
          int64_t acc = 0;
          for (int i = 0; i < C * bi; ++i)
            for (int ky = 0; ky < k; ++ky)
              for (int kx = 0; kx < k; ++kx) {
                int iy = oy * c.stride + ky - c.pad, ix = ox * c.stride + kx - c.pad;
                if (iy < 0 || ix < 0 || iy >= c.size || ix >= c.size) continue;
                int64_t xv = xp[((((int64_t(i / bi) * c.size + iy) * c.size + ix) * b + n) * bi) + i % bi];
                int64_t wv = wp[((((int64_t(o / bo) * C + i / bi) * k + ky) * k + kx) * bo + o % bo) * bi + i % bi];
                acc += xv * wv;
              }
          want[size_t((((int64_t(o / bo) * out + oy) * out + ox) * b + n) * bo + o % bo)] = requantize(acc, rq);
        }
  int bad = mismatches(got, want);
  std::printf("conv2d %d->%d %dx%d k%d s%d p%d, %d vthreads: tiling %dx%d x %d blocks x %d contexts, %d of %zu wrong\n",
              c.in_ch, c.out_ch, c.size, c.size, k, c.stride, c.pad, c.vthreads, tiling.h_block, tiling.w_block,
              tiling.oc_blocks, tiling.virtual_threads, bad, want.size());
  return bad;
}

// Data [1, C/bi, b, bi], weights [O/bo, C/bi, bo, bi], output [1, O/bo, b, bo].
int check_dense(const DenseCase& c, const loom::accel::AccelConfig& cfg, std::mt19937& rng) {
  const ops::AccelTarget t = ops::accel_target(cfg);
  const int b = t.blocking.batch, bi = t.blocking.block_in, bo = t.blocking.block_out;
  const int C = c.in_ch / bi, O = c.out_ch / bo;
  ir::Tensor X = ir::placeholder({1, C, b, bi}, DataType::Int(8), "X");
  ir::Tensor W = ir::placeholder({O, C, bo, bi}, DataType::Int(8), "W");
  const ops::Requantize rq{9, false, -100, 100};
  ops::QuantizedStages q = ops::dense_int8_blocked(X, W, rq, "dense");
  const ops::DenseShape shape{.batch_blocks = 1, .ic_blocks = C, .oc_blocks = O};
  ops::AccelDenseTiling tiling = ops::choose_dense_tiling(shape, c.vthreads, t.limits);
  ops::check_dense_tiling(shape, tiling, t.limits);
  loom::schedule::Schedule s({q.out});
  ops::schedule_dense_int8_accel(s, q, t.blocking, tiling);
  ir::LoweredFunc f = loom::schedule::lower(s, {X, W, q.out}, "dense");

  NDArray x = random_int8({1, C, b, bi}, rng), w = random_int8({O, C, bo, bi}, rng);
  std::vector<int8_t> got = run_on_fsim(f, cfg, {x, w, NDArray::zeros({1, O, b, bo}, DataType::Int(8))});
  const auto* xp = static_cast<const int8_t*>(x.raw_data());
  const auto* wp = static_cast<const int8_t*>(w.raw_data());
  std::vector<int8_t> want(got.size());
  for (int o = 0; o < O * bo; ++o)
    for (int n = 0; n < b; ++n) {
      int64_t acc = 0;
      for (int i = 0; i < C * bi; ++i)
        acc += int64_t(xp[(int64_t(i / bi) * b + n) * bi + i % bi]) *
               wp[((int64_t(o / bo) * C + i / bi) * bo + o % bo) * bi + i % bi];
      want[size_t((int64_t(o / bo) * b + n) * bo + o % bo)] = requantize(acc, rq);
    }
  int bad = mismatches(got, want);
  std::printf("dense %d->%d, %d vthreads: chunks of %d output x %d input blocks x %d contexts, %d of %zu wrong\n",
              c.in_ch, c.out_ch, c.vthreads, tiling.oc_blocks, tiling.ic_blocks, tiling.virtual_threads, bad,
              want.size());
  return bad;
}

// Two activations [1, C/bi, H, W, b, bi] added in int32 and requantized (the residual add).
int check_add(const AddCase& c, const loom::accel::AccelConfig& cfg, std::mt19937& rng) {
  const ops::AccelTarget t = ops::accel_target(cfg);
  const int b = t.blocking.batch, bi = t.blocking.block_in, C = c.channels / bi;
  std::vector<int64_t> shape = {1, C, c.size, c.size, b, bi};
  ir::Tensor A = int8_input(shape, "A"), B = int8_input(shape, "B");
  ir::Tensor Eye = ir::placeholder({bi, bi}, DataType::Int(8), "eye");
  const ops::Requantize rq{1, false};
  ops::AddWidenStages add = ops::add_int8_widening(A, B, Eye, rq, "add");
  ops::AccelConvTiling tiling =
      ops::choose_add_tiling({.out_h = c.size, .out_w = c.size, .channel_blocks = C}, c.vthreads, t.limits);
  loom::schedule::Schedule s({add.q.out});
  ops::schedule_add_int8_accel(s, add, t.blocking, tiling);
  ir::LoweredFunc f = loom::schedule::lower(s, {A, B, Eye, add.q.out}, "add");

  NDArray a = random_int8(shape, rng), bb = random_int8(shape, rng);
  NDArray eye = NDArray::empty({bi, bi}, DataType::Int(8));
  std::vector<int8_t> id = ops::identity_block(bi);
  std::memcpy(eye.raw_data(), id.data(), id.size());
  std::vector<int8_t> got = run_on_fsim(f, cfg, {a, bb, eye, NDArray::zeros(shape, DataType::Int(8))});
  const auto* ap = static_cast<const int8_t*>(a.raw_data());
  const auto* bp = static_cast<const int8_t*>(bb.raw_data());
  std::vector<int8_t> want(got.size());
  for (size_t i = 0; i < want.size(); ++i) want[i] = requantize(int64_t(ap[i]) + bp[i], rq);
  int bad = mismatches(got, want);
  std::printf("add %d channels %dx%d, %d vthreads: tiling %dx%d x %d contexts, %d of %zu wrong\n", c.channels, c.size,
              c.size, c.vthreads, tiling.h_block, tiling.w_block, tiling.virtual_threads, bad, want.size());
  return bad;
}

template <typename Case, typename Check>
int guarded(const Case& c, Check check, const loom::accel::AccelConfig& cfg, std::mt19937& rng, const char* what) {
  try {
    return check(c, cfg, rng) ? 1 : 0;
  } catch (const std::exception& e) {
    std::printf("%s FAILED: %s\n", what, e.what());
    return 1;
  }
}

}  // namespace

int check_accel_shapes(const loom::accel::AccelConfig& cfg, unsigned sample_seed, int sample_size) {
  std::mt19937 rng(sample_seed);
  const ops::AccelTarget t = ops::accel_target(cfg);
  const int bi = t.blocking.block_in, bo = t.blocking.block_out;
  // Shapes that failed with the choosers of an older API: 31x31 and 47x47 outputs with two
  // contexts (scratchpads overflowed), AlexNet's first layer (11x11, stride 4, 227x227; its 3
  // input channels padded to one block), and a 512 -> 1000 dense layer (1000 padded to whole
  // blocks) with two contexts over an odd number of output blocks.
  std::vector<ConvCase> convs = {{64, 64, 31, 3, 1, 1, 2}, {32, 32, 47, 3, 1, 1, 2}, {bi, 64, 227, 11, 4, 0, 2}};
  std::vector<DenseCase> denses = {{512, (1000 + bo - 1) / bo * bo, 2}};
  std::vector<AddCase> adds = {{32, 31, 2}, {bi, 47, 2}};
  // A seeded sample of legal shapes.
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int i = 0; i < sample_size; ++i) {
    int k = 2 * pick(0, 3) + 1, pad = pick(0, k / 2), size = pick(std::max(1, k - 2 * pad), 40);
    convs.push_back({bi * pick(1, 4), bo * pick(1, 6), size, k, pick(1, 3), pad, pick(1, 4)});
    denses.push_back({bi * pick(1, 40), bo * pick(1, 70), pick(1, 4)});
    adds.push_back({bi * pick(1, 5), pick(1, 40), pick(1, 4)});
  }
  int failed = 0;
  for (const ConvCase& c : convs) failed += guarded(c, check_conv, cfg, rng, "conv2d");
  for (const DenseCase& c : denses) failed += guarded(c, check_dense, cfg, rng, "dense");
  if (bi == bo)  // the add widens through a square identity block
    for (const AddCase& c : adds) failed += guarded(c, check_add, cfg, rng, "add");
  return failed;
}
