// Pass: winograd_conv. A blocked (NCHWc) 3x3 float conv with stride and dilation 1 and constant
// weights (grouped ones with groups of at least 32 channels in whole blocks too) becomes conv2d_winograd, F(m x m, 3 x
// 3) with m from winograd_tile_for, its weights transformed once, here (G g G^T, ops::pack_winograd_weights). Runs
// after alter_layout: the blocks are the ones alter_layout chose, and the node keeps its inputs, bias and output
// layout, so fusion and everything after it see a conv that writes the same value.
#include "loom/graph/layout.h"
#include "loom/graph/op_attrs.h"
#include "loom/graph/passes.h"
#include "loom/ops/layers.h"

namespace loom::graph {

namespace {

// Blocked weights [O/ob, C/ib, 3, 3, ib, ob] back to OIHW.
NDArray unblock_weights(const NDArray& w) {
  const Shape& s = w.shape();
  const int64_t OB = s[0], CB = s[1], kh = s[2], kw = s[3], ib = s[4], ob = s[5];
  NDArray out = NDArray::empty({OB * ob, CB * ib, kh, kw}, w.dtype());
  const float* src = w.data<float>();
  float* dst = out.data<float>();
  for (int64_t o = 0; o < OB * ob; ++o)
    for (int64_t c = 0; c < CB * ib; ++c)
      for (int64_t k = 0; k < kh * kw; ++k)
        dst[(o * CB * ib + c) * kh * kw + k] =
            src[(((o / ob * CB + c / ib) * kh * kw + k) * ib + c % ib) * ob + o % ob];
  return out;
}

// The tile for blocked conv `n`, 0 where it stays direct.
int tile_for(const Graph& g, const Node& n, double min_saved_macs) {
  if (n.op != "conv2d" || !conv_layout(n).blocked() || n.inputs.size() < 2) return 0;
  const Node& w = g.node(n.inputs[1]);
  if (!w.is_constant() || w.value.dtype() != DataType::Float(32) || w.value.ndim() != 6 || w.value.shape()[2] != 3 ||
      w.value.shape()[3] != 3)
    return 0;
  // Grouped: groups of whole blocks (weights [O/b, C/groups/b, 3, 3, b, b]) of at least 32 input
  // channels. ResNeXt-50's 4-channel groups, regrouped by alter_layout into blocks of 16, ran no
  // faster (docs/cpu_backend.md): 16 multiply-adds per transformed input do not repay its transform.
  const ConvAttrs c = ConvAttrs::from(n);
  const int64_t groups = c.groups;
  bool wide_groups = w.value.shape()[4] == w.value.shape()[5] && w.value.shape()[1] * w.value.shape()[4] >= 32;
  if (g.type_of(n.inputs[0]).dtype != DataType::Float(32) || (groups != 1 && !wide_groups) || !c.unit_strides() ||
      !c.unit_dilations())
    return 0;
  // Multiply-adds per output pixel and tap: batch x input channels per group x output channels.
  // (Weights [O/b, C/groups/b, 3, 3, b, b], output [N, O/b, H, W, b].)
  int64_t channel_products =
      n.type.shape[0] * w.value.shape()[1] * w.value.shape()[4] * n.type.shape[1] * n.type.shape[4];
  return winograd_tile_for(n.type.shape[2], n.type.shape[3], channel_products, min_saved_macs);
}

}  // namespace

int winograd_tile_for(int64_t out_h, int64_t out_w, int64_t channel_products, double min_saved_macs) {
  int best = 0;
  double best_saving = 1.5;
  for (int m : {4, 2}) {
    int64_t tiles = ((out_h + m - 1) / m) * ((out_w + m - 1) / m), alpha = m + 2;
    double saving = 9.0 * double(out_h) * double(out_w) / (double(tiles) * double(alpha * alpha));
    if (tiles >= 9 && saving >= best_saving) best = m, best_saving = saving;
  }
  double direct = 9.0 * double(out_h) * double(out_w) * double(channel_products);
  if (best && channel_products > 0 && direct * (1.0 - 1.0 / best_saving) < min_saved_macs) return 0;
  return best;
}

void winograd_conv(Graph& g, double min_saved_macs) {
  size_t original = g.nodes.size();
  for (size_t id = 0; id < original; ++id) {
    int m = tile_for(g, g.nodes[id], min_saved_macs);
    if (!m) continue;
    const Node& conv = g.nodes[id];
    const NDArray& w = g.node(conv.inputs[1]).value;
    NDArray u = ops::pack_winograd_weights(unblock_weights(w), m, w.shape()[4], w.shape()[5]);
    int uid = g.add_constant(g.unique_name(g.node(conv.inputs[1]).name + "_winograd" + std::to_string(m)), u);
    Node& n = g.nodes[id];
    n.op = "conv2d_winograd";
    n.inputs[1] = uid;
    Layout out = conv_layout(n);
    const ConvAttrs c = ConvAttrs::from(n);
    Attrs a;
    a.set("pads", std::vector<int64_t>(c.pads.begin(), c.pads.end()));
    a.set("tile", int64_t(m));
    if (c.groups != 1) a.set("groups", c.groups);
    n.attrs = a;
    set_conv_layout(n, out);  // blocks of oc_block output channels, as the conv it replaces wrote
  }
  g.compact();
  infer_types(g);
}

}  // namespace loom::graph
