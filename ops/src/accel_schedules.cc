#include "loom/ops/accel_schedules.h"

#include <algorithm>
#include <optional>
#include "loom/runtime/error.h"

#include "loom/ir/buffer.h"
#include "loom/ir/intrinsics.h"

namespace loom::ops {

using namespace loom::ir;
using schedule::Schedule;
using schedule::Stage;

schedule::TensorIntrin accel_gemm_intrin(const Blocking& b) {
  Tensor inp = placeholder({b.batch, b.block_in}, DataType::Int(8), "inp");
  Tensor wgt = placeholder({b.block_out, b.block_in}, DataType::Int(8), "wgt");
  IterVar k = reduce_axis(b.block_in, "k");
  Tensor out = compute(
      {b.batch, b.block_out},
      [&](Var bb, Var o) { return sum(cast(DataType::Int(32), inp(bb, k)) * cast(DataType::Int(32), wgt(o, k)), {k}); },
      "gemm_out");
  return schedule::declare_tensor_intrin(ir::kAccelGemm, out, {inp, wgt});
}

namespace {

std::vector<int> divisors_descending(int n) {
  std::vector<int> d;
  for (int k = n; k >= 1; --k)
    if (n % k == 0) d.push_back(k);
  return d;
}

// The bias add and the requantization stages live in the accumulator scratchpad and run on the
// ALU; the bias of the tile's output-channel blocks is loaded into the accumulator scratchpad.
// Per-channel shift amounts (q.shifts) are loaded the same way, for the shift stage.
void schedule_alu_stages(Schedule& s, const QuantizedStages& q, const Stage& out, const IterVar& at) {
  std::vector<Tensor> stages = {q.shr, q.clip_lo, q.clip_hi};
  auto load = [&](const Tensor& per_channel, const Tensor& reader) {
    Stage b = s[s.cache_read(per_channel, scope::kAccAccum, {reader})];
    b.compute_at(out, at);
    b.pragma(b.axis(0), "dma_copy");
  };
  if (q.biased.defined()) {
    stages.insert(stages.begin(), q.biased);
    for (const Tensor& t : q.biased.op()->input_tensors())
      if (t.op() != q.acc.op()) load(t, q.biased);
  }
  if (q.shifts.defined()) load(q.shifts, q.shr);
  for (const Tensor& t : stages) {
    Stage st = s[t];
    st.set_scope(scope::kAccAccum);
    st.compute_at(out, at);
    st.pragma(st.axis(0), "alu");
  }
}

// Splits `outer` into `virtual_threads` contexts (bound to vthread) and what each context runs;
// returns the vthread loop (undefined when there is one context).
IterVar split_contexts(Stage& out, IterVar& outer, int virtual_threads) {
  if (virtual_threads <= 1) return IterVar();
  auto parts = out.split_nparts(outer, virtual_threads);
  outer = parts.second;
  return parts.first;
}

// Tiles a blocked activation output [N/b, C/bo, H, W, b, bo] into (b_o, [vthread], c_o, y_o, x_o,
// c_i, y_i, x_i, b_i, bo_i) with t.oc_blocks channel blocks per tile, stores each tile with DMA,
// and returns x_o, the loop the tile's stages attach to.
IterVar tile_activation(Stage& out, const AccelConvTiling& t) {
  auto [oco, oci] = out.split(out.axis(1), t.oc_blocks);
  auto [yo, yi] = out.split(out.axis(2), t.h_block);
  auto [xo, xi] = out.split(out.axis(3), t.w_block);
  IterVar vt = split_contexts(out, oco, t.virtual_threads);
  std::vector<IterVar> order = {out.axis(0)};
  if (vt) order.push_back(vt);
  for (const IterVar& v : {oco, yo, xo, oci, yi, xi, out.axis(4), out.axis(5)}) order.push_back(v);
  out.reorder(order);
  if (vt) out.bind(vt, "vthread");
  out.pragma(oci, "dma_copy");  // store the int8 tile from the accumulator scratchpad
  return xo;
}

// The default heuristic: rows of 7 (or the whole height), columns 14, 28 or 7 wide (or the whole
// width), virtual threads over output-channel tiles when there are enough, and as many
// output-channel blocks per tile (up to 8) as acc_depth accumulator entries hold for every
// context. Checked against every scratchpad by the caller.
AccelConvTiling heuristic_conv_tiling(int out_h, int out_w, int oc_blocks, int virtual_threads, int64_t acc_depth) {
  if (out_h < 1 || out_w < 1 || oc_blocks < 1 || virtual_threads < 1 || acc_depth < 1)
    LOOM_THROW(ScheduleError, "conv tiling: output ", out_h, "x", out_w, ", ", oc_blocks, " channel blocks, ",
               virtual_threads, " virtual threads and ", acc_depth, " accumulator entries must all be at least 1");
  auto pick = [](int n, std::initializer_list<int> prefs) {
    for (int p : prefs)
      if (n % p == 0) return p;
    return n;
  };
  AccelConvTiling t{pick(out_h, {7, 14}), pick(out_w, {14, 28, 7}), 1,
                    oc_blocks >= virtual_threads ? virtual_threads : 1};
  if (oc_blocks % t.virtual_threads) t.virtual_threads = 1;
  for (int ob = 1; ob <= 8; ++ob)
    if ((oc_blocks / t.virtual_threads) % ob == 0 &&
        int64_t(ob) * t.h_block * t.w_block * t.virtual_threads <= acc_depth)
      t.oc_blocks = ob;
  return t;
}

std::string divisors_text(int n) {
  std::string s;
  for (int k = 1; k <= n; ++k)
    if (n % k == 0) s += (s.empty() ? "" : ", ") + std::to_string(k);
  return s;
}

// Factors of a tiling must divide what they tile (tails are not emitted).
void check_divides(int n, int factor, const char* what, const char* of) {
  if (factor < 1 || n % factor)
    LOOM_THROW(ScheduleError, "accelerator tiling: ", what, " ", factor, " does not divide the ", n, " ", of,
               "; use one of ", divisors_text(n));
}

// Scratchpad entries a tiling takes, all contexts together.
struct TileNeeds {
  int64_t acc, inp, wgt;
};
TileNeeds tile_needs(const ConvShape& c, const AccelConvTiling& t) {
  int64_t vt = t.virtual_threads;
  // Weights in passes: each pass's accumulators, and one more set combining them.
  const int64_t outputs =
      int64_t(t.oc_blocks) * t.h_block * t.w_block * (c.weight_passes > 1 ? c.weight_passes + 1 : 1);
  return {(outputs + (c.bias ? t.oc_blocks : 0) + (c.channel_shifts ? t.oc_blocks : 0)) * vt,
          int64_t((t.h_block - 1) * c.stride + c.kernel_h) * ((t.w_block - 1) * c.stride + c.kernel_w) * vt,
          int64_t(t.oc_blocks) * c.kernel_h * c.kernel_w * c.weight_passes * vt};
}
// A dense chunk: its input blocks, its weight blocks, and its accumulators with the bias entries
// (and the shift amounts of a per-channel requantization).
TileNeeds dense_needs(const DenseShape& d, const AccelDenseTiling& t) {
  int64_t vt = t.virtual_threads, batch_blocks = d.batch_blocks;
  return {int64_t(t.oc_blocks) * (batch_blocks + 1 + (d.channel_shifts ? 1 : 0)) * vt,
          int64_t(batch_blocks) * t.ic_blocks * vt, int64_t(t.oc_blocks) * t.ic_blocks * vt};
}
bool fits(const TileNeeds& need, const AccelLimits& lim) {
  return need.acc <= lim.acc && need.inp <= lim.inp && need.wgt <= lim.wgt;
}

void check_tiling_divides(int out_h, int out_w, int oc_blocks, const AccelConvTiling& t) {
  check_divides(out_h, t.h_block, "h_block", "output rows");
  check_divides(out_w, t.w_block, "w_block", "output columns");
  if (t.virtual_threads < 1) LOOM_THROW(ScheduleError, "accelerator tiling: ", t.virtual_threads, " virtual threads");
  check_divides(oc_blocks, t.oc_blocks * t.virtual_threads, "oc_blocks x virtual threads =", "output-channel blocks");
}

}  // namespace

void check_conv_tiling(const ConvShape& c, const AccelConvTiling& t, const AccelLimits& lim) {
  check_tiling_divides(c.out_h, c.out_w, c.oc_blocks, t);
  TileNeeds need = tile_needs(c, t);
  auto over = [&](const char* pad, int64_t need, int64_t have, const char* fix) {
    if (need > have)
      LOOM_THROW(ScheduleError, "accelerator tiling ", t.h_block, "x", t.w_block, " x ", t.oc_blocks, " blocks x ",
                 t.virtual_threads, " virtual threads: the ", pad, " scratchpad needs ", need, " entries, has ", have,
                 "; ", fix);
  };
  over("acc", need.acc, lim.acc, "use smaller tiles, fewer output-channel blocks per tile or fewer virtual threads");
  over("inp", need.inp, lim.inp, "use smaller tiles or fewer virtual threads");
  over("wgt", need.wgt, lim.wgt, "use fewer output-channel blocks per tile or fewer virtual threads");
}

AccelConvTiling choose_conv_tiling(const ConvShape& c, int virtual_threads, const AccelLimits& lim) {
  if (c.out_h < 1 || c.out_w < 1 || c.oc_blocks < 1 || c.ic_blocks < 1 || c.kernel_h < 1 || c.kernel_w < 1 ||
      c.stride < 1 || virtual_threads < 1)
    LOOM_THROW(ScheduleError, "conv tiling: output ", c.out_h, "x", c.out_w, ", ", c.oc_blocks, " output and ",
               c.ic_blocks, " input blocks, kernel ", c.kernel_h, "x", c.kernel_w, ", stride ", c.stride, ", ",
               virtual_threads, " virtual threads must all be at least 1");
  const int64_t per_output = c.weight_passes > 1 ? c.weight_passes + 1 : 1;  // accumulators per output entry
  AccelConvTiling first = heuristic_conv_tiling(c.out_h, c.out_w, c.oc_blocks, virtual_threads,
                                                std::max<int64_t>((lim.acc - c.oc_blocks) / per_output, 1));
  try {
    check_conv_tiling(c, first, lim);
    return first;
  } catch (const ScheduleError&) {
  }
  // Estimated cost per tile and input block: the loads (16 bytes of bus per cycle: an input entry
  // is a block row, a weight entry a block) or the GEMM steps, whichever is longer, plus a fixed
  // overhead for the instructions; fewer, larger tiles reuse more.
  const double kInsnOverhead = 64;
  std::optional<AccelConvTiling> best;
  double best_cost = 0;
  for (int vt : {virtual_threads, 1})
    for (int h : divisors_descending(c.out_h))
      for (int w : divisors_descending(c.out_w))
        for (int ob : divisors_descending(c.oc_blocks)) {
          if (c.oc_blocks % (ob * vt)) continue;
          AccelConvTiling t{h, w, ob, vt};
          TileNeeds need = tile_needs(c, t);
          if (!fits(need, lim)) continue;
          double tiles = double(c.out_h / h) * (c.out_w / w) * (c.oc_blocks / ob);
          double load = double(need.inp) / vt +
                        16.0 * double(need.wgt) / vt;  // bus cycles (an input entry ~ one beat, a weight entry ~ 16)
          double gemm = double(ob) * h * w * c.kernel_h * c.kernel_w * c.weight_passes;
          double cost = tiles * c.ic_blocks * (std::max(load, gemm) + kInsnOverhead);
          if (!best || cost < best_cost) best = t, best_cost = cost;
        }
  if (!best)
    LOOM_THROW(ScheduleError, "conv tiling: not even one output entry of one block fits (kernel ", c.kernel_h, "x",
               c.kernel_w, " needs ", int64_t(c.kernel_h) * c.kernel_w, " input and weight entries; scratchpads inp ",
               lim.inp, ", wgt ", lim.wgt, ", acc ", lim.acc, " entries); use a config with larger buffers");
  return *best;
}

ConvShape conv_shape_of(const QuantizedStages& q, int stride, bool bias) {
  const bool passes = q.passes.defined();
  auto reads = (passes ? q.passes : q.acc).op()->input_tensors();  // data (or its padding), kernel
  if (reads.size() != 2 || q.out.ndim() != 6 || reads[1].ndim() != (passes ? 7 : 6))
    LOOM_THROW(ScheduleError, "conv_shape_of: '", q.out.name(),
               "' is not a blocked conv (output [N/b, C/bo, H, W, b, bo], weights [O/bo, C/bi, kh, kw, bo, bi] or "
               "[O/bo, C/bi, passes, kh, kw, bo, bi])");
  const Tensor& w = reads[1];
  const int k = passes ? 3 : 2;  // the kernel's first spatial axis
  return ConvShape{.out_h = int(const_dim(q.out, 2)),
                   .out_w = int(const_dim(q.out, 3)),
                   .oc_blocks = int(const_dim(q.out, 1)),
                   .ic_blocks = int(const_dim(w, 1)),
                   .kernel_h = int(const_dim(w, k)),
                   .kernel_w = int(const_dim(w, k + 1)),
                   .stride = stride,
                   .bias = bias,
                   .channel_shifts = q.shifts.defined(),
                   .weight_passes = passes ? int(const_dim(w, 2)) : 1};
}

void check_conv_shape(const ConvShape& c, const QuantizedStages& q, int stride) {
  ConvShape want = conv_shape_of(q, stride, c.bias);
  std::string wrong;
  auto field = [&](const char* name, int given, int is) {
    if (given != is)
      wrong += std::string(wrong.empty() ? "" : ", ") + name + " " + std::to_string(given) +
               " (the conv's: " + std::to_string(is) + ")";
  };
  field("out_h", c.out_h, want.out_h);
  field("out_w", c.out_w, want.out_w);
  field("oc_blocks", c.oc_blocks, want.oc_blocks);
  field("ic_blocks", c.ic_blocks, want.ic_blocks);
  field("kernel_h", c.kernel_h, want.kernel_h);
  field("kernel_w", c.kernel_w, want.kernel_w);
  field("weight_passes", c.weight_passes, want.weight_passes);
  field("channel_shifts", c.channel_shifts, want.channel_shifts);
  if (!wrong.empty()) LOOM_THROW(ScheduleError, "ConvShape for '", q.out.name(), "' does not describe it: ", wrong);
}

void schedule_conv2d_int8_accel(Schedule& s, const QuantizedStages& q, const Blocking& b, const AccelConvTiling& t) {
  const Tensor gemm = q.passes.defined() ? q.passes : q.acc;  // the GEMM stage (all passes in one)
  auto reads = gemm.op()->input_tensors();                    // data (or its padding), kernel
  if (reads.size() != 2)
    LOOM_THROW(ScheduleError, "schedule_conv2d_int8_accel: '", gemm.name(), "' must read data and kernel");
  check_tiling_divides(int(const_dim(q.out, 2)), int(const_dim(q.out, 3)), int(const_dim(q.out, 1)), t);
  Tensor data = reads[0], kernel = reads[1];
  Tensor pad = data.op()->tag == "pad" ? data : Tensor();

  Stage out = s[q.out];
  IterVar xo = tile_activation(out, t);

  Stage acc = s[gemm];
  acc.set_scope(scope::kAccAccum);
  acc.compute_at(out, xo);
  for (const Tensor& c : q.combine) {  // the passes combined on the ALU
    Stage st = s[c];
    st.set_scope(scope::kAccAccum);
    st.compute_at(out, xo);
    st.pragma(st.axis(0), "alu");
  }
  schedule_alu_stages(s, q, out, xo);
  // Accumulator tile loops, reduction blocks outside, the GEMM block innermost.
  IterVar ic = acc.reduce_axis(0), dy = acc.reduce_axis(1), dx = acc.reduce_axis(2), ic_tns = acc.reduce_axis(3);
  std::vector<IterVar> order = {ic, dy, dx};
  for (int a = 0; a < gemm.ndim(); ++a) order.push_back(acc.axis(a));
  order.push_back(ic_tns);
  acc.reorder(order);
  acc.tensorize(acc.axis(gemm.ndim() - 2), accel_gemm_intrin(b));

  Tensor inp = s.cache_read(data, scope::kAccInput, {gemm});
  Tensor wgt = s.cache_read(kernel, scope::kAccWeight, {gemm});
  if (pad.defined()) s[pad].compute_inline();  // the DMA pads while loading
  for (const Tensor& buf : {inp, wgt}) {
    Stage st = s[buf];
    st.compute_at(acc, ic);
    st.pragma(st.axis(0), "dma_copy");
  }
}

AccelConvTiling choose_add_tiling(const AddShape& a, int virtual_threads, const AccelLimits& limits) {
  if (a.out_h < 1 || a.out_w < 1 || a.channel_blocks < 1 || virtual_threads < 1)
    LOOM_THROW(ScheduleError, "add tiling: output ", a.out_h, "x", a.out_w, ", ", a.channel_blocks, " channel blocks, ",
               virtual_threads, " virtual threads must all be at least 1");
  // Each of the tile's instructions (the preset, two widening GEMMs, the requantization) pays the
  // core's fill once, so the largest tile that fits wins. Budgets per context: both operands'
  // input tiles (half the input scratchpad), the widened operands with the stages between them (a
  // quarter of the accumulator scratchpad), and the identity blocks (two weight entries when the
  // operands are shifted by scaled identities).
  constexpr int64_t kEyeEntries = 2;
  const int64_t inp_entries = limits.inp / 2, acc_entries = limits.acc / 4;
  for (int vt : {virtual_threads, 1}) {
    if (a.channel_blocks % vt || kEyeEntries * vt > limits.wgt) continue;
    std::optional<AccelConvTiling> best;
    for (int h : divisors_descending(a.out_h))
      for (int w : divisors_descending(a.out_w)) {
        const int64_t area = int64_t(h) * w, entries = area * vt;
        if (entries > inp_entries || entries > acc_entries) continue;
        // Ties: whole rows first (one contiguous DMA per operand).
        const int64_t best_area = best ? int64_t(best->h_block) * best->w_block : 0;
        if (area > best_area || (area == best_area && w > best->w_block)) best = AccelConvTiling{h, w, 1, vt};
      }
    if (best) return *best;
  }
  LOOM_THROW(ScheduleError, "add tiling: not even one entry of one block fits (scratchpads inp ", limits.inp, ", wgt ",
             limits.wgt, ", acc ", limits.acc,
             " entries; an add needs 2 input and 4 accumulator entries per output entry, and 2 weight entries)");
}

void schedule_add_int8_accel(Schedule& s, const AddWidenStages& add, const Blocking& b, const AccelConvTiling& t) {
  const QuantizedStages& q = add.q;
  if (q.out.ndim() != 6)
    LOOM_THROW(ScheduleError, "schedule_add_int8_accel: '", q.out.name(),
               "' must be a blocked NCHW activation (rank 6)");
  check_tiling_divides(int(const_dim(q.out, 2)), int(const_dim(q.out, 3)), int(const_dim(q.out, 1)), t);
  Stage out = s[q.out];
  IterVar xo = tile_activation(out, t);
  // The sum and the requantization: ALU stages in the accumulator, computed per tile.
  std::vector<Tensor> alu = add.scale;
  alu.push_back(q.acc);
  if (add.rounded.defined()) alu.push_back(add.rounded);
  for (const Tensor& t : alu) {
    Stage st = s[t];
    st.set_scope(scope::kAccAccum);
    st.compute_at(out, xo);
    st.pragma(st.axis(0), "alu");
  }
  schedule_alu_stages(s, q, out, xo);
  // Each operand widened by a GEMM with the identity block; its loads attach to the tile.
  for (const Tensor& w : {add.widen_a, add.widen_b}) {
    Stage st = s[w];
    st.set_scope(scope::kAccAccum);
    st.compute_at(out, xo);
    st.reorder({st.axis(0), st.axis(1), st.axis(2), st.axis(3), st.axis(4), st.axis(5), st.reduce_axis(0)});
    st.tensorize(st.axis(4), accel_gemm_intrin(b));
    Tensor operand = w.op()->input_tensors()[0];
    Stage in = s[s.cache_read(operand, scope::kAccInput, {w})];
    in.compute_at(out, xo);
    in.pragma(in.axis(0), "dma_copy");
  }
  Tensor eye = add.widen_a.op()->input_tensors()[1];
  Stage e = s[s.cache_read(eye, scope::kAccWeight, {add.widen_a, add.widen_b})];
  e.compute_at(out, xo);
  e.pragma(e.axis(0), "dma_copy");
}

AccelDenseTiling choose_dense_tiling(const DenseShape& d, int virtual_threads, const AccelLimits& lim) {
  const int batch_blocks = d.batch_blocks, ic_blocks = d.ic_blocks, oc_blocks = d.oc_blocks;
  if (batch_blocks < 1 || ic_blocks < 1 || oc_blocks < 1 || virtual_threads < 1)
    LOOM_THROW(ScheduleError, "dense tiling: ", batch_blocks, " batch, ", ic_blocks, " input and ", oc_blocks,
               " output blocks and ", virtual_threads, " virtual threads must all be at least 1");
  for (int vt : {virtual_threads, 1}) {
    if (oc_blocks % vt) continue;
    for (int ic : divisors_descending(ic_blocks))
      for (int ob : divisors_descending(oc_blocks / vt))
        if (fits(dense_needs(d, {ob, ic, vt}), lim)) return {ob, ic, vt};
  }
  LOOM_THROW(ScheduleError, "dense tiling: not even one input block (", batch_blocks,
             " batch blocks) and one weight block fit the scratchpads (inp ", lim.inp, ", wgt ", lim.wgt, ", acc ",
             lim.acc, " entries); use a config with larger buffers");
}

void check_dense_tiling(const DenseShape& d, const AccelDenseTiling& t, const AccelLimits& lim) {
  const int ic_blocks = d.ic_blocks, oc_blocks = d.oc_blocks;
  if (t.virtual_threads < 1) LOOM_THROW(ScheduleError, "dense tiling: ", t.virtual_threads, " virtual threads");
  check_divides(ic_blocks, t.ic_blocks, "ic_blocks", "input-channel blocks");
  check_divides(oc_blocks, t.oc_blocks * t.virtual_threads, "oc_blocks x virtual threads =", "output-channel blocks");
  TileNeeds need = dense_needs(d, t);
  auto over = [&](const char* pad, int64_t need, int64_t have) {
    if (need > have)
      LOOM_THROW(ScheduleError, "dense tiling ", t.oc_blocks, " output x ", t.ic_blocks, " input blocks x ",
                 t.virtual_threads, " virtual threads: the ", pad, " scratchpad needs ", need, " entries, has ", have,
                 "; use fewer blocks per chunk or fewer virtual threads");
  };
  over("inp", need.inp, lim.inp);
  over("wgt", need.wgt, lim.wgt);
  over("acc", need.acc, lim.acc);
}

void schedule_dense_int8_accel(Schedule& s, const QuantizedStages& q, const Blocking& b, const AccelDenseTiling& t) {
  auto reads = q.acc.op()->input_tensors();
  if (reads.size() != 2)
    LOOM_THROW(ScheduleError, "schedule_dense_int8_accel: '", q.acc.name(), "' must read data and weight");
  int64_t oc = const_dim(q.out, 1), ic = const_dim(reads[0], 1);
  if (t.oc_blocks < 1 || t.ic_blocks < 1 || t.virtual_threads < 1 || oc % (int64_t(t.oc_blocks) * t.virtual_threads) ||
      ic % t.ic_blocks)
    LOOM_THROW(ScheduleError, "schedule_dense_int8_accel: chunks of ", t.oc_blocks, " output blocks x ",
               t.virtual_threads, " virtual threads and ", t.ic_blocks, " input blocks must divide the layer's ", oc,
               " output and ", ic, " input blocks");
  Stage out = s[q.out];
  auto [oco, oci] = out.split(out.axis(1), t.oc_blocks);
  IterVar vt = split_contexts(out, oco, t.virtual_threads);
  std::vector<IterVar> order = {out.axis(0)};
  if (vt) order.push_back(vt);
  for (const IterVar& v : {oco, oci, out.axis(2), out.axis(3)}) order.push_back(v);
  out.reorder(order);
  if (vt) out.bind(vt, "vthread");
  out.pragma(oci, "dma_copy");  // store the chunk
  Stage acc = s[q.acc];
  acc.set_scope(scope::kAccAccum);
  acc.compute_at(out, oco);
  schedule_alu_stages(s, q, out, oco);
  auto [ico, ici] = acc.split(acc.reduce_axis(0), t.ic_blocks);
  IterVar ic_tns = acc.reduce_axis(1);
  acc.reorder({ico, ici, acc.axis(0), acc.axis(1), acc.axis(2), acc.axis(3), ic_tns});
  acc.tensorize(acc.axis(2), accel_gemm_intrin(b));
  for (auto [tensor, scope] : {std::pair{reads[0], scope::kAccInput}, std::pair{reads[1], scope::kAccWeight}}) {
    Stage st = s[s.cache_read(tensor, scope, {q.acc})];
    st.compute_at(acc, ico);
    st.pragma(st.axis(0), "dma_copy");
  }
}

}  // namespace loom::ops
