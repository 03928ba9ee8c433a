// CPU schedules for the fused kernels of whole models (see cpu_schedules.h).
#include <algorithm>

#include "input_with_tag.h"
#include "loom/ir/functor.h"
#include "loom/ops/cpu_schedules.h"
#include "loom/ops/gemm_int8.h"
#include "loom/ops/layers.h"
#include "loom/runtime/thread_pool.h"
#include "model_schedule_util.h"
#include "register_tile.h"

namespace loom::ops {

using namespace loom::ir;
using schedule::Schedule;
using schedule::Stage;

namespace {
using detail::input_with_tag;

bool has_reduction(const Stage& st) { return !st->op->reduce_axes().empty(); }

// A stage that calls exp/log/tanh/... and is read by more than one stage: inlined, each consumer
// would recompute it (softmax's exp, read by the row sum and the division, ran twice per element:
// ~17 cycles per 8-lane exp, where storing and reloading the row costs ~2).
bool costly_for_several(const Schedule& s, const Stage& st) {
  bool costly = false;
  ir::post_order_visit(st->op->body, [&](const Expr& e) {
    auto* c = e.as<ir::CallNode>();
    if (c && (c->name == "exp" || c->name == "exp2" || c->name == "log" || c->name == "log2" || c->name == "tanh" ||
              c->name == "sigmoid" || c->name == "pow" || c->name == "sin" || c->name == "cos"))
      costly = true;
  });
  if (!costly) return false;
  int consumers = 0;
  for (const Stage& other : s.stages())
    if (other->op->is_compute())
      for (const Tensor& in : other->op->input_tensors()) consumers += in.op() == st->op;
  return consumers > 1;
}

int64_t extent_of(const IterVar& v) {
  auto* c = as_const_int(v->dom.extent);
  return c ? *c : 0;
}

int64_t points_of(const Stage& st) {
  int64_t n = 1;
  for (const IterVar& v : st->op->axis) n *= extent_of(v);
  return n;
}

// A stage that a consumer reads several times per point at indices loaded from a tensor (the
// second pass of a separable resize reading the first at two gathered columns), and that has no
// more points than the consumer: inlined, its own gathers ran once per consumer read (four per
// bilinear output instead of two), where storing it costs less than the consumer.
bool gathered_several_times(const Schedule& s, const Stage& st) {
  for (const Stage& other : s.stages()) {
    if (!other->op->is_compute() || other->op == st->op) continue;
    int gathers = 0;
    ir::post_order_visit(other->op->body, [&](const Expr& e) {
      auto* r = e.as<ir::TensorReadNode>();
      if (!r || r->op != st->op) return;
      bool gathered = false;
      for (const Expr& i : r->indices)
        ir::post_order_visit(i, [&](const Expr& x) { gathered = gathered || x.as<ir::TensorReadNode>(); });
      gathers += gathered;
    });
    if (gathers > 1 && points_of(st) <= points_of(other)) return true;
  }
  return false;
}

}  // namespace

namespace detail {

// Inlines every compute stage without a reduction except `keep`, the outputs, the costly ones
// read several times and those gathered several times.
void inline_injective(Schedule& s, const std::vector<const Operation*>& keep) {
  for (const Stage& st : s.stages()) {
    if (!st->op->is_compute() || st->is_output || has_reduction(st)) continue;
    if (std::find(keep.begin(), keep.end(), st->op.get()) != keep.end()) continue;
    if (costly_for_several(s, st) || gathered_several_times(s, st)) continue;
    Stage(st).compute_inline();
  }
}

// Parallel over the outer data-parallel axes, vectorized on the innermost one when it divides
// by the vector width (for a reduction, such as softmax's partial sums, also by a narrower power
// of two >= 4 that divides it); reduction axes (if any) run between them. Narrower vectors on
// element-wise stages made MobileNetV2 slower on 2 threads.
void schedule_loop_nest(Stage st, int lanes, bool join_rows) {
  size_t nd = st->op->axis.size();
  if (nd == 0) return;
  std::vector<IterVar> data;
  for (size_t i = 0; i < nd; ++i) data.push_back(st.axis(i));
  // A blocked map [N, C/b, H, W, b] (the only 5-D maps of the CPU's kernels with such an
  // innermost block) goes by rows before blocks, as the convolutions split theirs: the pool gives
  // each thread the same part of every loop, so the thread reads the rows it wrote.
  const int64_t block = nd == 5 ? extent_of(data[4]) : 0;
  if (block >= 4 && block <= 64 && (block & (block - 1)) == 0 && extent_of(data[2])) std::swap(data[1], data[2]);
  std::vector<IterVar> red;
  for (size_t i = 0; i < st->op->reduce_axes().size(); ++i) red.push_back(st.reduce_axis(i));
  // Rows of no whole number of vectors, read contiguously across rows (rows_read_contiguously):
  // one loop over both axes, whose vectors cross the rows' ends. Not when that leaves too few
  // points outside for the threads: a joined loop with a guarded tail stays out of the parallel
  // loop ([1, 197, 197] would run on one thread).
  int64_t outside = 1;
  for (size_t i = 0; i + 2 < nd; ++i) outside *= extent_of(data[i]);
  const int64_t joined = extent_of(data.back()) * (nd >= 2 ? extent_of(data[nd - 2]) : 0);
  if (join_rows && red.empty() && nd >= 2 && extent_of(data.back()) % lanes != 0 &&
      (joined % lanes == 0 || outside >= 2 * runtime::num_threads())) {
    IterVar rows = st.fuse(data[nd - 2], data.back());
    data.pop_back();
    data.back() = rows;
  }
  IterVar inner = data.back();
  IterVar vec;
  int64_t inner_extent = extent_of(inner);
  int v = lanes;
  while (!red.empty() && v > 4 && inner_extent % v != 0) v /= 2;
  // A symbolic innermost extent, or an element-wise stage's constant one that is no whole number of
  // vectors (softmax's exp over a ViT's 197 tokens: per-lane libm calls otherwise), splits by the
  // full width: partition_loops runs the whole vectors unguarded and the tail guarded.
  if (inner_extent == 0 && red.empty()) v = lanes;
  const bool guarded_tail = red.empty() && (inner_extent == 0 || (inner_extent > v && inner_extent % v != 0));
  if ((guarded_tail && v >= 4) || (inner_extent >= v && inner_extent % v == 0 && v >= 4)) {
    lanes = v;
    auto [o, i] = st.split(inner, v);
    data.back() = o;
    vec = i;
  }
  std::vector<IterVar> order = data;
  order.insert(order.end(), red.begin(), red.end());
  if (vec) order.push_back(vec);
  st.reorder(order);
  if (vec) st.vectorize(vec);
  // Fuse outer axes until there is enough parallel work (or all but the innermost are fused).
  // A reduction's points each do its whole reduction: LayerNorm's 128 row sums over 768 columns
  // are 98304 multiply-adds, not 128 points, and ran on one thread (BERT's encoder at 2 threads).
  // A symbolic extent (0 here) counts as a typical 64 for the work; only the outermost axis may
  // be one that the fused loop divides into (its divisors are the inner axes' extents).
  auto work_of = [](const IterVar& v) { return extent_of(v) ? extent_of(v) : int64_t(64); };
  int64_t total = 1, reduce_trips = 1;
  for (auto& d : data) total *= std::max<int64_t>(1, work_of(d));
  for (auto& r : red) reduce_trips *= std::max<int64_t>(1, work_of(r));
  int64_t points_work = total * (vec ? lanes : 1) * reduce_trips;
  if (points_work < 4096 || data.size() < 2) {
    if (data.size() == 1 && total >= 2 * runtime::num_threads() && points_work >= 4096) st.parallel(data[0]);
    return;
  }
  // With a vector split the last data axis is the split's outer part and may join too (a row
  // reduction's [1, 128] output is [1, 8] vectors); unsplit, it stays the contiguous inner loop.
  IterVar fused = data[0];
  int64_t work = work_of(data[0]);
  // A split with a guarded tail stays out of the fused loop: fused, its guard would not be monotone
  // in that loop, and partition_loops could not take the whole vectors out of the tail's code.
  const bool joins = vec && inner_extent % lanes == 0;
  for (size_t i = 1; i + (joins ? 0 : 1) < data.size() && work < 64 && extent_of(data[i]); ++i) {
    fused = st.fuse(fused, data[i]);
    work *= extent_of(data[i]);
  }
  if (work >= 2) st.parallel(fused);
}

}  // namespace detail

using detail::inline_injective;
using detail::schedule_loop_nest;

namespace {

// Largest divisor of n that is at most `limit`.
int divisor_at_most(int64_t n, int limit) {
  for (int d = limit; d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

}  // namespace

void schedule_generic_cpu(Schedule& s, const Tensor& out, int lanes) {
  inline_injective(s, {});
  for (const Stage& st : s.stages()) {
    if (!st->op->is_compute() || st->attach_type == schedule::AttachType::Inline) continue;
    schedule_loop_nest(st, lanes, detail::rows_read_contiguously(s, st));
  }
}

// Shared set-up of the fused conv schedules: inline the element-wise tail into `out`, and give
// the reduction its own local accumulator computed inside `out`'s tile.
static std::pair<Tensor, Stage> conv_stages(Schedule& s, const Tensor& conv, const Tensor& out, const Tensor& P) {
  inline_injective(s, {conv.op().get(), P.defined() ? P.op().get() : nullptr});
  if (conv.same_as(out)) {
    Tensor acc = s.cache_write(conv, "local");
    return {acc, s[conv]};
  }
  s[conv].set_scope("local");
  return {conv, s[out]};
}

void schedule_conv2d_fused_cpu(Schedule& s, const Tensor& conv, const Tensor& out, int lanes) {
  int64_t oc_block = 0;
  for (auto& in : conv.op()->input_tensors())
    if (in.ndim() == 5) oc_block = const_dim(in, 4);
  if (oc_block == 0)
    LOOM_THROW(ScheduleError, "schedule_conv2d_fused_cpu: '", conv.name(), "' does not read packed weights");
  Tensor P = input_with_tag(conv, "pad");
  auto [acc, y] = conv_stages(s, conv, out, P);
  // A row segment of x_block outputs times oc_block channels stays in registers: about half the
  // vector registers as accumulators.
  int64_t ow = const_dim(out, 3);
  int regs = lanes >= 16 ? 28 : 14;
  int x_limit = std::max<int>(1, regs / std::max<int>(1, static_cast<int>(oc_block / lanes)));
  int x_block = divisor_at_most(ow, std::min(x_limit, 16));
  auto [fo, fi] = y.split(y.axis(1), static_cast<int>(oc_block));
  auto [xo, xi] = y.split(y.axis(3), x_block);
  y.reorder({y.axis(0), fo, y.axis(2), xo, fi, xi});
  IterVar outer = y.fuse(y.axis(0), fo);
  outer = y.fuse(outer, y.axis(2));
  y.parallel(outer);
  if (x_block % lanes == 0)
    y.vectorize(xi);
  else
    y.vectorize(fi);
  auto yc = s[acc];
  yc.compute_at(y, xo);
  yc.reorder({yc.reduce_axis(0), yc.reduce_axis(1), yc.reduce_axis(2), yc.axis(3), yc.axis(1)});
  yc.unroll(yc.axis(3));
  yc.vectorize(yc.axis(1));
  yc.storage_order({0, 2, 3, 1});  // output channels innermost: the vectorized loop is contiguous
  if (P.defined()) s[P].compute_at(y, xo);
}

void schedule_depthwise_conv2d_cpu(Schedule& s, const Tensor& conv, const Tensor& out, int lanes) {
  Tensor P = input_with_tag(conv, "pad");
  auto [acc, y] = conv_stages(s, conv, out, P);
  int64_t ow = const_dim(out, 3);
  // The widest power-of-two vector (at most the target's) that divides the row.
  int v = lanes;
  while (v > 4 && ow % v != 0) v /= 2;
  if (ow % v != 0) v = 1;
  IterVar nc = y.fuse(y.axis(0), y.axis(1));
  IterVar row = y.axis(2);
  y.parallel(nc);
  if (v > 1) {
    auto [xo, xi] = y.split(y.axis(3), v);
    y.vectorize(xi);
  }
  auto yc = s[acc];
  yc.compute_at(y, row);
  if (v > 1) {
    auto [xo, xi] = yc.split(yc.axis(3), v);
    yc.reorder({yc.reduce_axis(0), yc.reduce_axis(1), yc.reduce_axis(2), xo, xi});
    yc.vectorize(xi);
  } else {
    yc.reorder({yc.reduce_axis(0), yc.reduce_axis(1), yc.reduce_axis(2), yc.axis(3)});
  }
  // The padded input once, in its own parallel loop: cheaper than recomputing kh rows per output row.
  if (P.defined()) schedule_loop_nest(s[P], lanes);
}

// The depthwise output tiling: [N, C/b, OH, OW, b] with OW split by x_block, the channel block
// vectorized, batch x channel blocks in one parallel loop and the rows serial inside it, so that
// loop partitioning splits off the first and last rows and columns, the only ones whose reads
// need the padding's guards (with rows in the parallel loop its index is a remainder and every
// read kept its guard, measurably slower). Few blocks: rows parallel too. Returns
// the loop of x_block columns, where the accumulator tile is computed.
static IterVar tile_depthwise_output(Stage& y, int x_block) {
  auto [xo, xi] = y.split(y.axis(3), x_block);
  // Rows outside the blocks, as the neighbouring kernels split their maps (schedule_loop_nest).
  y.reorder({y.axis(0), y.axis(2), y.axis(1), xo, xi, y.axis(4)});
  IterVar outer = y.fuse(y.axis(0), y.axis(2));
  if (extent_of(outer) < 4 * runtime::num_threads()) outer = y.fuse(outer, y.axis(1));
  y.parallel(outer);
  y.vectorize(y.axis(4));
  return xo;
}

// Blocked float convs whose input block has at most this many channels unroll them
// (schedule_conv2d_nchwc_cpu).
static constexpr int64_t kUnrolledInputBlock = 4;

bool nchwc_pairs_columns(int lanes, int64_t block, int64_t out_w) { return block * 2 == lanes && out_w % 2 == 0; }

int nchwc_paired_columns(int64_t out_w, int x_block) {
  return 2 * divisor_at_most(out_w / 2, std::max(1, x_block / 2));
}

NchwcConvTile nchwc_paired_conv_tile(int lanes, int vector_registers, int64_t channel_blocks, int64_t out_w) {
  NchwcConvTile t = nchwc_conv_tile(lanes, vector_registers, channel_blocks, lanes, out_w / 2);
  t.x_block = nchwc_paired_columns(out_w, 2 * t.x_block);  // nchwc_conv_tile counted pairs
  return t;
}

int int8_conv_spare_registers(int group) { return group == 2 ? 1 : group == 4 ? 2 : 0; }

NchwcConvTile nchwc_conv_tile(int lanes, int vector_registers, int64_t channel_blocks, int64_t block, int64_t out_w) {
  int vpb = std::max<int>(1, static_cast<int>(block / lanes));  // vectors per channel block
  std::vector<int> blocks, vectors;                             // groups of channel blocks that divide the layer's
  for (int cb = 1; cb <= channel_blocks; ++cb)
    if (channel_blocks % cb == 0) blocks.push_back(cb), vectors.push_back(cb * vpb);
  detail::RegisterTile t = detail::best_register_tile(vectors, vector_registers, out_w, false);
  if (t.candidate < 0) return {1, 1};
  return {blocks[size_t(t.candidate)], t.x};
}

bool nchwc_input_blocks_outer(const Tensor& conv, const Tensor& out, const NchwcConvTile& t) {
  // Weights of one block group: blocks x b outputs x every input channel x kh x kw elements (4
  // bytes a float, 2 or 1 in the grouped int8 forms).
  int64_t element_bytes = 4;
  for (const Tensor& in : conv.op()->input_tensors())
    if (in.ndim() >= 6) element_bytes = in.dtype().bytes();
  int64_t weight_bytes = element_bytes * int64_t(t.channel_blocks) * const_dim(out, 4);
  for (const IterVar& r : conv.op()->reduce_axes()) weight_bytes *= extent_of(r);
  int64_t acc_bytes = 4 * int64_t(t.channel_blocks) * const_dim(out, 4) * const_dim(out, 2) * const_dim(out, 3);
  return weight_bytes > (1 << 20) && acc_bytes <= (64 << 10);
}

bool nchwc_rows_first(const Tensor& conv) {
  int64_t weight_bytes = 0, input_bytes = 0;
  for (const Tensor& in : conv.op()->input_tensors()) {
    int64_t bytes = in.dtype().bytes();
    for (int64_t d = 0; d < in.ndim(); ++d) bytes *= std::max<int64_t>(1, const_dim(in, d));
    (in.ndim() >= 6 ? weight_bytes : input_bytes) += bytes;
  }
  return weight_bytes <= input_bytes;
}

void schedule_conv2d_nchwc_cpu(Schedule& s, const Tensor& conv, const Tensor& out, int lanes, int vector_registers,
                               std::optional<NchwcConvTile> tile) {
  int64_t ow = const_dim(out, 3), ob = const_dim(out, 4);
  // The grouped int8 forms (layers.h) reduce over groups of G input channels, the innermost
  // reduction, in one dot-product instruction.
  const auto& reduce = conv.op()->reduce_axes();
  const int group = reduce.size() == 5 ? int(extent_of(reduce[4])) : 0;
  // Blocks of half a vector (8 channels on AVX-512: layers of 24, 40 or 72 channels) over rows of
  // an even width: each vector holds two neighbouring columns of a block, so the multiply-adds
  // run at the full width. The weights are read as one half-vector twice, the input elements as two
  // broadcasts (ir::constant_lane_offsets).
  const bool paired = !group && nchwc_pairs_columns(lanes, ob, ow);
  NchwcConvTile t =
      tile     ? *tile
      : paired ? nchwc_paired_conv_tile(lanes, vector_registers, const_dim(out, 1), ow)
               : nchwc_conv_tile(lanes, vector_registers - int8_conv_spare_registers(group), const_dim(out, 1), ob, ow);
  if (t.channel_blocks < 1 || t.x_block < 1 || const_dim(out, 1) % t.channel_blocks != 0)
    LOOM_THROW(ScheduleError, "schedule_conv2d_nchwc_cpu: tile of ", t.channel_blocks, " blocks x ", t.x_block,
               " columns does not fit '", out.name(), "' (", const_dim(out, 1), " channel blocks)");
  // Paired: whole pairs that divide the row (a partial tile's guard would split a vector).
  if (paired && tile) t.x_block = nchwc_paired_columns(ow, t.x_block);
  // A tile wider than the row computes the row: cut it there, rather than unroll (and guard)
  // columns that do not exist (a hand-edited tuning log with x_block 1000000 compiled for minutes).
  t.x_block = int(std::min<int64_t>(t.x_block, ow));
  Tensor P = input_with_tag(conv, group ? "widen" : "pad");
  auto [acc, y] = conv_stages(s, conv, out, P);
  // Output [N, C/b, OH, OW, b]: tiles of t.channel_blocks blocks x t.x_block columns, batch x
  // block groups x rows in one parallel loop.
  auto [co, ci] = y.split(y.axis(1), t.channel_blocks);
  auto [xo, xi] = y.split(y.axis(3), t.x_block);
  // Rows outside the block groups where the weights are light (nchwc_rows_first); the input
  // blocks outermost keep a group's whole map in one iteration of the parallel loop.
  const bool input_blocks_outer = nchwc_input_blocks_outer(conv, out, t);
  const bool rows_first = !input_blocks_outer && nchwc_rows_first(conv);
  IterVar rows = y.axis(2);
  IterVar first = rows_first ? rows : co, second = rows_first ? co : rows;
  if (paired) {
    auto [xp, x2] = y.split(xi, 2);
    y.reorder({y.axis(0), first, second, xo, ci, xp, x2, y.axis(4)});
    y.vectorize(y.fuse(x2, y.axis(4)));
  } else {
    y.reorder({y.axis(0), first, second, xo, ci, xi, y.axis(4)});
    y.vectorize(y.axis(4));
  }
  IterVar outer = y.fuse(y.axis(0), first);
  if (!input_blocks_outer) outer = y.fuse(outer, second);
  y.parallel(outer);
  auto yc = s[acc];
  IterVar columns;  // the tile's columns, unrolled
  std::vector<IterVar> order;
  if (input_blocks_outer) {
    // The block group's whole output map accumulates in a local buffer while the input blocks
    // run outermost: each input block's weights (blocks x b x kh x kw x b) stay in L1 across
    // every row and column tile. Row-tile accumulators re-read the group's weights once per row
    // (DeepLabV3's 960-channel 3x3: 2.2 MB a group, 14 rows, from L3).
    yc.compute_at(y, outer);
    auto [yxo, yxi] = yc.split(yc.axis(3), t.x_block);
    columns = yxi;
    order = {yc.reduce_axis(0), yc.axis(0),        yc.axis(2), yxo,        yc.reduce_axis(1),
             yc.reduce_axis(2), yc.reduce_axis(3), yxi,        yc.axis(1), yc.axis(4)};
  } else {
    // Columns outside the channel blocks: one broadcast of an input element serves the blocks'
    // weight vectors and dies. Blocks outside columns kept all x_block broadcasts live for the
    // next block (CSE), which spilled the accumulators (half the speed on a 64-channel 56x56).
    yc.compute_at(y, xo);
    columns = yc.axis(3);
    order = {yc.reduce_axis(0), yc.reduce_axis(1), yc.reduce_axis(2), yc.reduce_axis(3),
             yc.axis(3),        yc.axis(1),        yc.axis(4)};
  }
  // The grouped forms' innermost reduction, the group, goes inside the channel block it is
  // tensorized with.
  if (group) order.push_back(yc.reduce_axis(4));
  IterVar pair_lane;  // paired: the second column of a pair, inside the blocks, fused with the lanes
  if (paired) {
    auto [cp, c2] = yc.split(columns, 2);
    auto at = std::find_if(order.begin(), order.end(), [&](const IterVar& v) { return v == columns; });
    *at = cp;
    order.insert(order.end() - 1, c2);
    columns = cp;
    pair_lane = c2;
  }
  yc.reorder(order);
  if (group)
    yc.tensorize(yc.axis(4), group == 2 ? cpu_dot2_i16_intrin(int(ob)) : cpu_dot4_u8s7_intrin(int(ob)));
  else if (paired)
    yc.vectorize(yc.fuse(pair_lane, yc.axis(4)));
  else
    yc.vectorize(yc.axis(4));
  yc.unroll(yc.axis(1));
  yc.unroll(columns);
  // The kernel rows and columns and the channels of an input block stay rolled loops around the
  // unrolled tile: unrolled by LLVM, its scheduler hoisted the weight loads of the whole body and
  // spilled the tile (rolling only the channels gained nothing).
  // An input block of a few channels (the image's 3) is unrolled instead: as a rolled loop of three
  // iterations, LLVM's scheduler hoisted the tile's broadcasts and spilled accumulators and address
  // registers (MobileNetV2's 3 -> 32 stem ran far slower; docs/cpu_backend.md).
  const bool unrolled_channels = !group && extent_of(yc.reduce_axis(3)) <= kUnrolledInputBlock;
  for (int r = 1; r < 4; ++r)
    if (r == 3 && unrolled_channels)
      yc.unroll(yc.reduce_axis(r));
    else
      yc.pragma(yc.reduce_axis(r), "llvm_unroll", 0);
  // The padded input once, in its own parallel loop: per tile it was rebuilt for every group of
  // output-channel blocks and for the overlap of neighbouring windows.
  if (P.defined()) schedule_loop_nest(s[P], lanes);
}

namespace {

// A conv whose output lanes each read only their own input lane (depthwise; interleaved groups):
// tiles of up to `max_columns` columns of one output block, the reductions (every one, in order)
// around the unrolled columns and the vectorized lanes; with `rolled`, those reduction loops stay
// rolled. Padding inline, as a select on each input read: such a conv does few multiply-adds per
// output (9 for a depthwise 3x3), so a padded copy of the input (4x the output at stride 2) cost
// as much as the convolution.
void schedule_lane_wise_conv(Schedule& s, const Tensor& conv, const Tensor& out, int max_columns, bool rolled) {
  Tensor P = input_with_tag(conv, "pad");
  auto [acc, y] = conv_stages(s, conv, out, P);
  IterVar xo = tile_depthwise_output(y, divisor_at_most(const_dim(out, 3), max_columns));
  auto yc = s[acc];
  yc.compute_at(y, xo);
  std::vector<IterVar> order;
  for (size_t r = 0; r < yc->op->reduce_axes().size(); ++r) order.push_back(yc.reduce_axis(int(r)));
  if (rolled)
    for (const IterVar& r : order) yc.pragma(r, "llvm_unroll", 0);
  order.push_back(yc.axis(3));
  order.push_back(yc.axis(4));
  yc.reorder(order);
  yc.unroll(yc.axis(3));
  yc.vectorize(yc.axis(4));
  if (P.defined()) s[P].compute_inline();
}

}  // namespace

void schedule_depthwise_nchwc_cpu(Schedule& s, const Tensor& conv, const Tensor& out, int /*lanes*/) {
  schedule_lane_wise_conv(s, conv, out, 8, false);
}

// Per input block and tap one weight vector feeds up to 14 columns' lane-wise multiply-adds, each
// on a contiguous input vector: no broadcasts.
void schedule_interleaved_groups_nchwc_cpu(Schedule& s, const Tensor& conv, const Tensor& out, int /*lanes*/) {
  schedule_lane_wise_conv(s, conv, out, 14, true);
}

void schedule_dense_fused_cpu(Schedule& s, const Tensor& dense, const Tensor& out, int lanes, int vector_registers) {
  int64_t nb = 0;
  for (auto& in : dense.op()->input_tensors())
    if (in.ndim() == 3) nb = const_dim(in, 2);
  if (nb == 0) LOOM_THROW(ScheduleError, "schedule_dense_fused_cpu: '", dense.name(), "' does not read packed weights");
  auto [acc, y] = conv_stages(s, dense, out, Tensor());
  // Symbolic rows (a transformer's tokens at run time) take the GEMM tile of many rows.
  const bool symbolic_rows = !as_const_int(out.shape()[0]);
  int64_t rows = symbolic_rows ? INT32_MAX : const_dim(out, 0), blocks = const_dim(out, 1) / nb;
  auto [no, ni] = y.split(y.axis(1), static_cast<int>(nb));
  auto yc = s[acc];
  if (rows < 4) {
    // A classifier's row or two, or a recurrent step's, streams the weights once: groups of up to
    // 8 output blocks, whose accumulators are independent chains of multiply-adds (one block's
    // single chain waited on each multiply-add's latency, not on the weights).
    int cb = divisor_at_most(blocks, 8);
    auto [bo, bi] = y.split(no, cb);
    y.reorder({y.axis(0), bo, bi, ni});
    IterVar outer = y.fuse(y.axis(0), bo);
    y.parallel(outer);
    // A recurrent step reads the same weights as the step before, more than a core's L2 holds:
    // run from where that step ended, the groups still cached, instead of from its first group,
    // long evicted. The direction is the kernel's, shared by layers of one shape
    // (docs/cpu_backend.md).
    y.pragma(outer, "alternate_order");
    y.vectorize(ni);
    yc.compute_at(y, outer);
    auto [yb, yl] = yc.split(yc.axis(1), static_cast<int>(nb));
    yc.reorder({yc.reduce_axis(0), yc.axis(0), yb, yl});
    yc.unroll(yc.axis(0));
    yc.unroll(yb);
    yc.vectorize(yl);
    return;
  }
  // Rows (a transformer's tokens) x output blocks: the GEMM register tile, mr rows x cb blocks
  // (one broadcast of x feeds cb weight vectors, one weight vector mr rows). Row tiles inside
  // the block groups: a group's weights (cb x K x b) stay in L2 across every row tile instead of
  // streaming all weights from memory once per row tile (BERT's 3072 x 768 projection: 9.4 MB).
  GemmTiling t = gemm_tiling_for(lanes, vector_registers);
  int mr = static_cast<int>(std::min<int64_t>(t.mr, rows));
  int cb = divisor_at_most(blocks, std::max<int>(1, static_cast<int>(t.nr / nb)));
  auto [bo, bi] = y.split(no, cb);
  auto [mo, mi] = y.split(y.axis(0), mr);
  y.reorder({bo, mo, bi, mi, ni});
  y.vectorize(ni);
  // The row tiles' loop stays its own, inside the parallel block groups, where partition_loops
  // must split it into full tiles and a guarded tail: a symbolic extent (fused with the groups,
  // the loop would divide by it, which bound inference cannot analyze) or rows that are no whole
  // number of tiles (fused, only the iterations before the first group's tail were unguarded).
  const bool row_tiles_own_loop = symbolic_rows || rows % mr != 0;
  if (row_tiles_own_loop) {
    y.parallel(bo);
    yc.compute_at(y, mo);
  } else {
    IterVar outer = y.fuse(bo, mo);
    y.parallel(outer);
    yc.compute_at(y, outer);
  }
  auto [yb, yl] = yc.split(yc.axis(1), static_cast<int>(nb));
  // The reduction unrolled by GEMM's k_unroll around the tile, as schedule_gemm_cpu's: fewer loop
  // and address steps per multiply-add.
  IterVar k = yc.reduce_axis(0);
  const int64_t K = extent_of(k);  // 0 where not a constant
  if (t.k_unroll > 1 && K > 0 && K % t.k_unroll == 0) {
    auto [ko, ki] = yc.split(k, t.k_unroll);
    yc.reorder({ko, ki, yc.axis(0), yb, yl});
    yc.unroll(ki);
    k = ko;
  } else {
    yc.reorder({k, yc.axis(0), yb, yl});
  }
  yc.unroll(yc.axis(0));
  yc.unroll(yb);
  yc.vectorize(yl);
  // The row tiles of a block group fetch the next group's weights between them: its first tile
  // waited for memory (BERT's weights do not fit the L3; docs/cpu_backend.md).
  if (blocks > cb && !row_tiles_own_loop) yc.pragma(k, "prefetch", Expr(static_cast<int>((rows + mr - 1) / mr)));
  // Row tiles in their own loop: the whole tiles fetch the next group's weights between them.
  if (blocks > cb && row_tiles_own_loop && !symbolic_rows) yc.pragma(k, "prefetch_across", mo->var);
}

void schedule_batch_matmul_cpu(Schedule& s, const Tensor& mm, const Tensor& out, int lanes, int vector_registers) {
  int r = out.ndim();
  if (r < 2 || mm.ndim() != r || mm.op()->reduce_axes().size() != 1)
    LOOM_THROW(ScheduleError, "schedule_batch_matmul_cpu: '", mm.name(), "' is not a product of matrices");
  auto [acc, y] = conv_stages(s, mm, out, Tensor());
  GemmTiling t = gemm_tiling_for(lanes, vector_registers);
  // Symbolic extents take the full tile (partition_loops splits the column tiles' loop into full
  // tiles and a guarded tail).
  const int64_t* m_const = as_const_int(out.shape()[size_t(r - 2)]);
  const int64_t* n_const = as_const_int(out.shape()[size_t(r - 1)]);
  int64_t M = m_const ? *m_const : INT32_MAX, N = n_const ? *n_const : lanes;  // symbolic columns: one vector
  // Two-vector column tiles; partition_loops narrows the last to the columns it has, in whole
  // vectors and one narrower (16 lanes: 197 = 6 x 32 + 5, 49 = 32 + 16 + 1).
  int nr = N >= t.nr ? t.nr : N >= lanes ? lanes : 1, mr = int(std::min<int64_t>(t.mr, M));
  auto [mo, mi] = y.split(y.axis(r - 2), mr);
  auto [no, ni] = y.split(y.axis(r - 1), nr);
  std::vector<IterVar> order;
  for (int d = 0; d < r - 2; ++d) order.push_back(y.axis(d));
  for (const IterVar& v : {mo, no, mi, ni}) order.push_back(v);
  y.reorder(order);
  // Symbolic rows: the row tiles' loop stays its own, inside the parallel batch (partition_loops
  // splits it into full tiles and a guarded tail); a fused loop would divide by its extent.
  IterVar outer = order[0];
  for (int d = 1; d < r - (m_const ? 1 : 2); ++d) outer = y.fuse(outer, order[size_t(d)]);
  y.parallel(outer);
  if (nr % lanes == 0) y.vectorize(ni);
  auto yc = s[acc];
  yc.compute_at(y, no);
  yc.reorder({yc.reduce_axis(0), yc.axis(r - 2), yc.axis(r - 1)});
  yc.unroll(yc.axis(r - 2));
  if (nr % lanes == 0) yc.vectorize(yc.axis(r - 1));
}

}  // namespace loom::ops
