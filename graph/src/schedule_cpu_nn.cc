// CPU schedules of the operators that anchor fused groups with a reduction (OpDef::schedule_cpu):
// conv2d in its three layouts and depthwise form, dense with packed weights, and matmul. A group whose
// reduction stage is not there (or in a form no template covers) gets the generic schedule.
#include "loom/graph/layout.h"
#include "loom/graph/op_attrs.h"
#include "loom/ops/cpu_schedules.h"
#include "loom/ops/layers.h"
#include "op_schedules.h"

namespace loom::graph {

namespace {

ir::Tensor stage_with_tag(const schedule::Schedule& s, const std::string& tag) {
  for (auto& st : s.stages())
    if (st->op->tag == tag && !st->op->reduce_axes().empty()) return ir::Tensor(st->op);
  return ir::Tensor();
}

// The tuner's key for a blocked conv node with a `kernel` x `kernel` window, if it has one (equal
// strides and pads, one group, equal input and output blocks: an image's 3 channels are one block
// of 3, which the templates do not take).
std::optional<ConvKernelKey> blocked_conv_key(const Graph& g, const Node& conv, int64_t kernel) {
  const Shape &x = g.type_of(conv.inputs[0]).shape, &y = conv.type.shape;
  const ConvAttrs a = ConvAttrs::from(conv);
  bool equal_pads = a.pads[0] == a.pads[1] && a.pads[0] == a.pads[2] && a.pads[0] == a.pads[3];
  if (x.size() != 5 || y.size() != 5 || a.groups != 1 || a.strides[0] != a.strides[1] || !a.unit_dilations() ||
      !equal_pads || x[4] != y[4])
    return std::nullopt;
  return ConvKernelKey{{x[0], x[1] * x[4], x[2], x[3], y[1] * y[4], kernel, a.strides[0], a.pads[0]}, x[4]};
}

// The key of a direct blocked conv2d (square kernel).
std::optional<ConvKernelKey> conv_kernel_key(const Graph& g, const Node& conv) {
  const Shape& w = g.type_of(conv.inputs[1]).shape;
  int64_t group = ops::int8_conv_weight_group(w);  // [O/b, C/b, k, k, b/G, b, G] (int8) or [O/b, C/b, k, k, b, b]
  // int8 data in the widened form has no template (and must not take a float kernel's tiles).
  if (g.type_of(conv.inputs[0]).dtype != DataType::Float(32) && !group) return std::nullopt;
  if ((w.size() != 6 && !group) || w[2] != w[3]) return std::nullopt;
  std::optional<ConvKernelKey> key = blocked_conv_key(g, conv, w[2]);
  if (key) key->int8_group = group;
  return key;
}

// Whether the group's kernel is the conv's own: its output is the conv's shape. A squeeze-and-
// excitation block's 1x1 conv on pooled features, multiplied into the feature map by its
// epilogue, writes the map: the tuner measured the conv alone, and its tile there recomputed the
// conv per tile of the map (DeepLabV3's SE kernels several times slower with a tuning log).
bool group_writes_the_conv(const CpuScheduleContext& c) {
  const Shape& conv = c.anchor.type.shape;
  if (c.out.ndim() != int(conv.size())) return false;
  for (size_t i = 0; i < conv.size(); ++i)
    if (ops::const_dim(c.out, int(i)) != conv[i]) return false;
  return true;
}

}  // namespace

void schedule_conv2d_cpu(const CpuScheduleContext& c) {
  const Node& n = c.anchor;
  int lanes = c.target.float32_lanes();
  ir::Tensor conv = stage_with_tag(c.s, "conv2d");
  const ConvAttrs a = ConvAttrs::from(n);
  const int64_t groups = a.groups;
  if (!conv.defined()) {
    ops::schedule_generic_cpu(c.s, c.out, lanes);
  } else if (conv_layout(n).blocked() && (groups == 1 || c.g.type_of(n.inputs[1]).shape.size() == 6)) {
    std::optional<ops::NchwcConvTile> tile;
    if (c.options.conv_tile && group_writes_the_conv(c))
      if (auto key = conv_kernel_key(c.g, n)) tile = c.options.conv_tile(*key);
    ops::schedule_conv2d_nchwc_cpu(c.s, conv, c.out, lanes, c.target.vector_registers, tile);
  } else if (conv_layout(n).blocked() && c.g.type_of(n.inputs[1]).shape.size() == 5) {
    ops::schedule_interleaved_groups_nchwc_cpu(c.s, conv, c.out, lanes);
  } else if (conv_layout(n).blocked()) {
    ops::schedule_depthwise_nchwc_cpu(c.s, conv, c.out, lanes);
  } else if (a.oc_block > 0) {
    ops::schedule_conv2d_fused_cpu(c.s, conv, c.out, lanes);
  } else if (groups > 1 && groups == c.g.type_of(n.inputs[0]).shape[1] && groups == n.type.shape[1]) {
    ops::schedule_depthwise_conv2d_cpu(c.s, conv, c.out, lanes);
  } else {
    ops::schedule_generic_cpu(c.s, c.out, lanes);
  }
}

void schedule_conv2d_winograd_cpu(const CpuScheduleContext& c) {
  // The tuner's key: the 3x3 layer it computes and its tile.
  std::optional<ops::NchwcConvTile> tile;
  if (c.options.conv_tile && group_writes_the_conv(c))
    if (std::optional<ConvKernelKey> key = blocked_conv_key(c.g, c.anchor, 3)) {
      key->winograd = c.anchor.attrs.get_int("tile", 0);
      tile = c.options.conv_tile(*key);
    }
  ops::schedule_conv2d_winograd_cpu(c.s, c.out, c.target.float32_lanes(), c.target.vector_registers, tile);
}

void schedule_dense_cpu(const CpuScheduleContext& c) {
  int lanes = c.target.float32_lanes();
  ir::Tensor dense = stage_with_tag(c.s, "dense");
  if (dense.defined() && c.anchor.attrs.get_int("n_block", 0) > 0)
    ops::schedule_dense_fused_cpu(c.s, dense, c.out, lanes, c.target.vector_registers);
  else
    ops::schedule_generic_cpu(c.s, c.out, lanes);
}

void schedule_matmul_cpu(const CpuScheduleContext& c) {
  ir::Tensor mm = stage_with_tag(c.s, "matmul");
  int lanes = c.target.float32_lanes();
  // Matrices on both sides (no vector operand) in float: the register-tiled GEMM; else generic.
  if (mm.defined() && mm.ndim() >= 2 && c.g.type_of(c.anchor.inputs[0]).shape.size() >= 2 &&
      c.g.type_of(c.anchor.inputs[1]).shape.size() >= 2 && c.anchor.type.dtype == DataType::Float(32))
    ops::schedule_batch_matmul_cpu(c.s, mm, c.out, lanes, c.target.vector_registers);
  else
    ops::schedule_generic_cpu(c.s, c.out, lanes);
}

}  // namespace loom::graph
