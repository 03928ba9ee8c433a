// Pass: alter_layout. CPU weight layouts: conv2d weights OIHW -> [O/b, C, kh, kw, b] and dense
// weights [N, K] -> [N/b, K, b], b a vector of float32 lanes (or half of one when the channel count
// needs it), so the kernels' vector loads over output channels are contiguous. Only constant
// weights are packed (at compile time, here); others keep the plain layout.
#include "loom/graph/passes.h"

namespace loom::graph {

namespace {

int64_t choose_block(int64_t channels, int lanes) {
  for (int64_t b = lanes; b >= 8 && b >= lanes / 2; b /= 2)
    if (channels % b == 0) return b;
  return 0;
}

// out[o / b][rest][o % b] = w[o][rest] for rest the flattened remaining dimensions.
NDArray pack_leading(const NDArray& w, int64_t b, Shape packed_shape) {
  NDArray p = NDArray::empty(std::move(packed_shape), w.dtype());
  int64_t outer = w.shape()[0], rest = w.numel() / outer, bytes = w.dtype().bytes();
  auto* src = static_cast<const char*>(w.raw_data());
  auto* dst = static_cast<char*>(p.raw_data());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r = 0; r < rest; ++r)
      std::copy_n(src + (o * rest + r) * bytes, bytes, dst + (((o / b) * rest + r) * b + o % b) * bytes);
  return p;
}

}  // namespace

void alter_layout(Graph& g, const LayoutOptions& options) {
  size_t original = g.nodes.size();
  for (size_t id = 0; id < original; ++id) {
    Node& n = g.nodes[id];
    if (!n.is_op() || n.inputs.size() < 2 || !g.node(n.inputs[1]).is_constant()) continue;
    if (n.op == "conv2d" && n.attrs.get_int("groups", 1) == 1 && n.attrs.get_int("oc_block", 0) == 0) {
      const NDArray& w = g.node(n.inputs[1]).value;
      int64_t b = choose_block(w.shape()[0], options.vector_lanes);
      if (!b) continue;
      NDArray p = pack_leading(w, b, {w.shape()[0] / b, w.shape()[1], w.shape()[2], w.shape()[3], b});
      int wid = g.add_constant(g.unique_name(g.node(n.inputs[1]).name + "_packed"), p);
      Node& conv = g.nodes[id];
      conv.inputs[1] = wid;
      conv.attrs.set("oc_block", b);
    } else if (n.op == "dense" && n.attrs.get_int("n_block", 0) == 0) {
      const NDArray& w = g.node(n.inputs[1]).value;
      int64_t b = choose_block(w.shape()[0], options.vector_lanes);
      if (!b) continue;
      NDArray p = pack_leading(w, b, {w.shape()[0] / b, w.shape()[1], b});
      int wid = g.add_constant(g.unique_name(g.node(n.inputs[1]).name + "_packed"), p);
      Node& d = g.nodes[id];
      d.inputs[1] = wid;
      d.attrs.set("n_block", b);
    }
  }
  g.compact();
  infer_types(g);
}

}  // namespace loom::graph
