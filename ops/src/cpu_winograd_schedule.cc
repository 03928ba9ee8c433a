// CPU schedule of the Winograd convolution (layers.h, conv2d_winograd_nchwc).
#include "input_with_tag.h"
#include "loom/ops/cpu_schedules.h"
#include "loom/ops/layers.h"
#include "model_schedule_util.h"

namespace loom::ops {

using namespace loom::ir;
using detail::inline_injective;
using detail::input_with_tag;
using detail::schedule_loop_nest;
using schedule::Schedule;
using schedule::Stage;

namespace {

Tensor stage_tagged(const Schedule& s, const std::string& tag) {
  for (const Stage& st : s.stages())
    if (st->op->tag == tag) return Tensor(st->op);
  return Tensor();
}

}  // namespace

WinogradStages winograd_stages(const Schedule& s) {
  WinogradStages w;
  w.output = stage_tagged(s, "winograd_output");
  if (!w.output.defined()) return w;
  w.out_cols = input_with_tag(w.output, "winograd_transform");
  if (w.out_cols.defined()) w.gemm = input_with_tag(w.out_cols, "winograd_gemm");
  if (w.gemm.defined()) w.in = input_with_tag(w.gemm, "winograd_transform");
  if (w.in.defined()) w.in_rows = input_with_tag(w.in, "winograd_transform");
  if (w.in_rows.defined()) w.pad = input_with_tag(w.in_rows, "pad");
  return w;
}

void schedule_conv2d_winograd_cpu(Schedule& s, const Tensor& out, int lanes, int vector_registers,
                                  std::optional<NchwcConvTile> tile, int fused_rows) {
  WinogradStages w = winograd_stages(s);
  if (!w.in_rows.defined())
    LOOM_THROW(ScheduleError, "schedule_conv2d_winograd_cpu: '", out.name(), "' has no Winograd convolution stages");
  const int alpha = int(const_dim(w.in_rows, 0));
  const int m = alpha - 2;
  inline_injective(s, {w.pad.defined() ? w.pad.op().get() : nullptr, w.in_rows.op().get(), w.in.op().get(),
                       w.out_cols.op().get(), w.output.same_as(out) ? nullptr : w.output.op().get()});
  if (!w.output.same_as(out)) s[w.output].compute_inline();  // the bias and what follows in one pass
  const int64_t out_blocks = const_dim(w.gemm, 2), tiles_wide = const_dim(w.gemm, 4), ob_lanes = const_dim(w.gemm, 5);
  NchwcConvTile t = tile ? *tile : nchwc_conv_tile(lanes, vector_registers, out_blocks, ob_lanes, tiles_wide);
  if (t.channel_blocks < 1 || t.x_block < 1 || out_blocks % t.channel_blocks != 0)
    LOOM_THROW(ScheduleError, "schedule_conv2d_winograd_cpu: tile of ", t.channel_blocks, " blocks x ", t.x_block,
               " tiles does not fit '", out.name(), "' (", out_blocks, " channel blocks)");
  t.x_block = int(std::min<int64_t>(t.x_block, tiles_wide));
  // Fused: the input transform and the products per tile row, inside the output's parallel loop,
  // while they are in cache, the transformed weights read again for every row; else each stage
  // over the whole map in its own parallel loop, the transformed input and products through
  // memory. Fused paid from 14 tile rows on (docs/cpu_backend.md).
  if (fused_rows < 0 && tile) fused_rows = tile->fused_rows;  // a tuned tile's choice
  const bool fused = fused_rows > 0 || (fused_rows < 0 && const_dim(w.gemm, 3) >= 14);
  const int chunk = fused_rows > 0 ? fused_rows : 1;

  // Output [N, O/ob, OH, OW, ob] by (chunks of) tile rows: batch x tile rows in one parallel loop,
  // inside it A^T M A per output block; not fused, the output blocks join the parallel loop (a
  // 28x28 map has 7 tile rows of 4: uneven on 2 threads).
  Stage y = s[out];
  auto [yo, yi] = y.split(y.axis(2), m * chunk);
  auto [xo, xi] = y.split(y.axis(3), m);
  IterVar ob = y.axis(1);
  y.reorder({y.axis(0), yo, ob, yi, xo, xi, y.axis(4)});
  IterVar rows = y.fuse(y.axis(0), yo);
  if (!fused) rows = ob = y.fuse(rows, ob);
  y.parallel(rows);
  y.unroll(y.split(yi, m).second);  // the rows of a tile (a chunk's tile rows stay a loop)
  y.unroll(xi);
  y.vectorize(y.axis(4));

  // A^T along the columns, for the tile row's output block.
  Stage z = s[w.out_cols];
  z.compute_at(y, ob);
  auto [zxo, zxi] = z.split(z.axis(4), m);
  z.reorder({z.axis(1), z.axis(2), z.axis(3), zxo, z.axis(0), zxi, z.axis(5)});
  z.unroll(z.axis(0));
  z.unroll(zxi);
  z.vectorize(z.axis(5));

  // The products: register tiles of t.channel_blocks output blocks x t.x_block tiles, as the
  // direct NCHWc convolution's (one broadcast of a transformed input serves the blocks' weight
  // vectors), accumulated locally and stored once.
  Tensor acc = s.cache_write(w.gemm, "local");
  Stage g = s[w.gemm];
  auto [gco, gci] = g.split(g.axis(2), t.channel_blocks);
  auto [gxo, gxi] = g.split(g.axis(4), t.x_block);
  g.reorder({g.axis(0), g.axis(1), gco, g.axis(3), gxo, gci, gxi, g.axis(5)});
  if (fused) {
    g.compute_at(y, rows);
  } else {  // parallel over the points of the tile, the batch, the block groups and the tile rows
    IterVar gouter = g.fuse(g.fuse(g.fuse(g.axis(0), g.axis(1)), gco), g.axis(3));
    g.parallel(gouter);
  }
  g.vectorize(g.axis(5));
  Stage a = s[acc];
  a.compute_at(g, gxo);
  a.reorder({a.reduce_axis(0), a.reduce_axis(1), a.axis(4), a.axis(2), a.axis(5)});
  a.unroll(a.axis(4));
  a.unroll(a.axis(2));
  a.vectorize(a.axis(5));
  a.pragma(a.reduce_axis(1), "llvm_unroll", 0);

  // B^T d B: per tile, all alpha^2 points of a channel block (d B within it).
  Stage v = s[w.in];
  v.reorder({v.axis(1), v.axis(2), v.axis(3), v.axis(4), v.axis(0), v.axis(5)});
  if (fused) {
    v.compute_at(y, rows);
  } else {  // parallel over the batch, the channel blocks and the tile rows
    IterVar vouter = v.fuse(v.fuse(v.axis(1), v.axis(2)), v.axis(3));
    v.parallel(vouter);
  }
  v.unroll(v.axis(0));
  v.vectorize(v.axis(5));
  Stage r = s[w.in_rows];
  r.compute_at(v, v.axis(4));
  r.unroll(r.axis(0));
  r.unroll(r.axis(1));
  r.vectorize(r.axis(6));
  // The padded input once, in its own parallel loop.
  if (w.pad.defined()) schedule_loop_nest(s[w.pad], lanes);
}

}  // namespace loom::ops
