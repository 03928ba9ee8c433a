#include "loom/ops/cpu_schedules.h"

#include <algorithm>

#include "gemm_tiles.h"
#include "input_with_tag.h"
#include "register_tile.h"

namespace loom::ops {

using namespace loom::ir;
using schedule::Schedule;

using detail::input_with_tag;

GemmTiling gemm_tiling_for(int lanes, int registers) {
  if (lanes < 1 || registers < 4)
    LOOM_THROW(ScheduleError, "gemm tiling: ", lanes, " lanes and ", registers, " vector registers are too few");
  return {std::min(8, (registers - 3) / 2), 2 * lanes, 256, 4};
}

namespace detail {

RegisterTile best_register_tile(const std::vector<int>& vectors, int registers, int64_t out_w,
                                bool later_on_equal_accumulators) {
  RegisterTile best;
  double best_cost = 1e30;
  int best_acc = 0;
  for (int i = 0; i < static_cast<int>(vectors.size()); ++i) {
    int v = vectors[size_t(i)];
    for (int x = static_cast<int>(std::min<int64_t>(out_w, (registers - v - 1) / v)); x >= 1; --x) {
      double waste = double((out_w + x - 1) / x * x) / double(out_w);
      double cost = double(v + x) / double(v * x) * waste;
      // Ties: more accumulators (more independent multiply-adds in flight).
      int acc = v * x;
      bool tie = cost < best_cost + 1e-9 && cost > best_cost - 1e-9;
      if (cost < best_cost - 1e-9 || (tie && (acc > best_acc || (later_on_equal_accumulators && acc == best_acc))))
        best = {i, x}, best_cost = cost, best_acc = acc;
    }
  }
  return best;
}

}  // namespace detail

ConvNchwTiling conv_nchw_tiling_for(int lanes, int registers, int out_channels, int out_w) {
  if (lanes < 1 || registers < 4 || out_channels < 1 || out_w < 1)
    LOOM_THROW(ScheduleError, "conv tiling: ", lanes, " lanes, ", registers, " registers, ", out_channels,
               " channels, ", out_w, " columns");
  std::vector<int> vectors;  // output-channel blocks of v vectors that divide the channels
  for (int v = 1; v * lanes <= out_channels; ++v)
    if (out_channels % (v * lanes) == 0) vectors.push_back(v);
  detail::RegisterTile t = detail::best_register_tile(vectors, registers, out_w, true);
  // Fewer than 8 channel blocks to share out (a 64-channel layer in one 64-wide tile on AVX-512):
  // the rows are parallel too, else one thread computed the whole layer.
  auto tiling = [&](int oc, int x) { return ConvNchwTiling{oc, x, true, out_channels / oc < 8}; };
  if (t.candidate < 0) return tiling(out_channels % lanes == 0 ? lanes : out_channels, 1);  // one column
  return tiling(vectors[size_t(t.candidate)] * lanes, t.x);
}

const char* to_string(GemmForm f) {
  switch (f) {
    case GemmForm::Packed:
      return "packed B";
    case GemmForm::Unpacked:
      return "B in place";
    case GemmForm::DotK:
      return "dot products along K";
  }
  return "?";
}

GemmTiling gemm_tiling_for(int lanes, int registers, int64_t M, int64_t N, int64_t K) {
  GemmTiling t = gemm_tiling_for(lanes, registers);
  if (M < 1 || N < 1 || K < 1) LOOM_THROW(ScheduleError, "gemm tiling: ", M, " x ", N, " x ", K, " is not a product");
  t.mr = static_cast<int>(std::min<int64_t>(t.mr, M));
  if (N == 1 && K % lanes == 0) {
    t.form = GemmForm::DotK;
    t.mr = static_cast<int>(std::min<int64_t>(4, M));
    t.nr = lanes;
  } else if (M <= 4) {
    t.form = GemmForm::Unpacked;
    int nv = std::max(1, std::min(4, (registers - 2) / (t.mr + 1)));
    // No wider than N needs.
    while (nv > 1 && int64_t(nv - 1) * lanes >= N) --nv;
    t.nr = nv * lanes;
  }
  return t;
}

namespace detail {
void schedule_gemm_tiles(Schedule& s, const Tensor& C, const GemmTiling& t, int64_t K) {
  // The accumulators: the product over whole panels where matmul_packed made one, else a cache.
  Tensor CC = input_with_tag(C, "matmul_panels");
  if (CC.defined())
    s[CC].set_scope("local");
  else
    CC = s.cache_write(C, "local");
  auto c = s[C];
  auto tiles = c.tile(c.axis(0), c.axis(1), t.mr, t.nr);  // io, jo, ii, ji
  c.reorder({tiles[1], tiles[0], tiles[2], tiles[3]});    // panels of packed B outermost
  if (double(const_dim(C, 0)) * double(const_dim(C, 1)) * double(K) >= kMinParallelMacs) c.parallel(tiles[1]);
  c.vectorize(tiles[3]);
  auto cc = s[CC];
  cc.compute_at(c, tiles[0]);
  auto [ko, ki] = cc.split(cc.reduce_axis(0), t.k_unroll > 0 && K % t.k_unroll == 0 ? t.k_unroll : 1);
  cc.reorder({ko, ki, cc.axis(0), cc.axis(1)});
  cc.unroll(ki);
  cc.unroll(cc.axis(0));
  cc.vectorize(cc.axis(1));
}
}  // namespace detail
using detail::schedule_gemm_tiles;

Tensor gemm(const Tensor& A, const Tensor& B, const GemmTiling& t, const std::string& name) {
  switch (t.form) {
    case GemmForm::Packed:
      return matmul_packed(A, B, t.nr, name);
    case GemmForm::Unpacked:
      return matmul(A, B, name);
    case GemmForm::DotK:
      return matmul_dot_k(A, B, t.nr, name);
  }
  LOOM_THROW(ScheduleError, "gemm: unknown form");
}

void schedule_gemm_cpu(Schedule& s, const Tensor& C, const GemmTiling& t) {
  if (C.op()->tag != "matmul" || C.ndim() != 2)
    LOOM_THROW(ScheduleError, "schedule_gemm_cpu: '", C.name(), "' is not a matmul (tag '", C.op()->tag, "')");
  switch (t.form) {
    case GemmForm::Packed:
      schedule_matmul_packed_cpu(s, C, t);
      return;
    case GemmForm::Unpacked:
      schedule_gemm_tiles(s, C, t, const_dim(C.op()->input_tensors()[0], 1));
      return;
    case GemmForm::DotK: {
      Tensor P = C.op()->input_tensors()[0];
      if (P.op()->tag != "dot_partial")
        LOOM_THROW(ScheduleError, "schedule_gemm_cpu: '", C.name(), "' is not in dot-product form (matmul_dot_k)");
      // Rows in parallel tiles of mr; each tile's partial sums (mr vectors) stay in registers
      // across K, then fold horizontally.
      auto c = s[C];
      auto [io, ii] = c.split(c.axis(0), t.mr);
      c.parallel(io);
      auto p = s[P];
      p.set_scope("local");
      p.compute_at(c, io);
      p.reorder({p.reduce_axis(0), p.axis(0), p.axis(1)});
      p.unroll(p.axis(0));
      p.vectorize(p.axis(1));
      return;
    }
  }
}

void schedule_matmul_packed_cpu(Schedule& s, const Tensor& C, const GemmTiling& t) {
  Tensor panels = input_with_tag(C, "matmul_panels");
  Tensor Bp = input_with_tag(panels.defined() ? panels : C, "pack");
  if (!Bp.defined())
    LOOM_THROW(ScheduleError, "schedule_matmul_packed_cpu: '", C.name(), "' does not read a packed matrix");
  if (const_dim(Bp, 2) != t.nr)
    LOOM_THROW(ScheduleError, "schedule_matmul_packed_cpu: '", Bp.name(), "' is packed by ", const_dim(Bp, 2),
               ", tiling wants ", t.nr);
  schedule_gemm_tiles(s, C, t, const_dim(Bp, 1));
  auto bp = s[Bp];
  bp.parallel(bp.axis(0));
  bp.vectorize(bp.axis(2));
}

void schedule_conv2d_nchw_cpu(Schedule& s, const Tensor& Y, int oc_block, int x_block) {
  ConvNchwTiling t;
  t.oc_block = oc_block;
  t.x_block = x_block;
  schedule_conv2d_nchw_cpu(s, Y, t);
}

void schedule_conv2d_nchw_cpu(Schedule& s, const Tensor& Y, const ConvNchwTiling& t) {
  const int oc_block = t.oc_block, x_block = t.x_block;
  Tensor Wp = input_with_tag(Y, "pack");
  Tensor P = input_with_tag(Y, "pad");
  if (!Wp.defined())
    LOOM_THROW(ScheduleError, "schedule_conv2d_nchw_cpu: '", Y.name(), "' does not read packed weights");
  if (const_dim(Wp, 4) != oc_block)
    LOOM_THROW(ScheduleError, "schedule_conv2d_nchw_cpu: weights packed by ", const_dim(Wp, 4), ", schedule wants ",
               oc_block);
  Tensor YC = s.cache_write(Y, "local");
  auto y = s[Y];
  auto [fo, fi] = y.split(y.axis(1), oc_block);
  auto [xo, xi] = y.split(y.axis(3), x_block);
  y.reorder({y.axis(0), fo, y.axis(2), xo, fi, xi});
  IterVar outer = y.fuse(y.axis(0), fo);
  if (t.parallel_rows) outer = y.fuse(outer, y.axis(2));
  y.parallel(outer);
  y.vectorize(xi);
  auto yc = s[YC];
  yc.compute_at(y, xo);
  // Registers hold x_block x oc_block accumulators; the reduction runs around them.
  if (t.window_outer)
    yc.reorder({yc.reduce_axis(1), yc.reduce_axis(2), yc.reduce_axis(0), yc.axis(3), yc.axis(1)});
  else
    yc.reorder({yc.reduce_axis(0), yc.reduce_axis(1), yc.reduce_axis(2), yc.axis(3), yc.axis(1)});
  yc.unroll(yc.axis(3));
  yc.vectorize(yc.axis(1));
  yc.storage_order({0, 2, 3, 1});  // output channels innermost: the vectorized loop is contiguous
  if (P.defined()) {
    // The padded input once, in its own parallel loop over channels: per register tile it was
    // rebuilt for every block of output channels and overlapping windows (16x the copies on
    // 64 -> 64 channels, 56 columns in tiles of 6).
    auto p = s[P];
    p.parallel(p.fuse(p.axis(0), p.axis(1)));
  }
  auto wp = s[Wp];
  wp.parallel(wp.axis(0));
  wp.vectorize(wp.axis(4));
}

}  // namespace loom::ops
