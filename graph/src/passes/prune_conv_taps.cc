// Pass: prune_conv_taps. A kernel row (or column) of a convolution whose every read, at every
// output position, falls in the zero padding contributes nothing: it is cut from the constant
// weights and the pads shrink to match, so the output is unchanged (where the result keeps the
// square, evenly padded form; in practice a 1x1 kernel at pads 0). DeepLabV3's atrous pyramid
// (3x3 kernels at dilations 24 and 36 over a 14x14 map) becomes 1x1 convolutions: the padded
// copy of a 960-channel input at pad 36 was 38 times the input, all but the center tap zeros.
#include <algorithm>
#include <cstring>

#include "loom/graph/passes.h"

namespace loom::graph {

namespace {

// The kernel taps [first, last] of one spatial axis that read inside the input for some output
// position; first > last when none does.
struct LiveTaps {
  int64_t first = 0, last = -1;
};

LiveTaps live_taps(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t dilation, int64_t pad_begin) {
  LiveTaps t{kernel, -1};
  for (int64_t k = 0; k < kernel; ++k) {
    int64_t lo = k * dilation - pad_begin, hi = lo + (out - 1) * stride;  // rows tap k reads
    // Some read lands in [0, in): the first row at or after 0 that the stride reaches.
    int64_t first_in = lo >= 0 ? lo : lo + (-lo + stride - 1) / stride * stride;
    if (first_in <= hi && first_in < in) t.first = std::min(t.first, k), t.last = std::max(t.last, k);
  }
  return t;
}

// Cuts weights [O, Cg, kh, kw] to rows [r0, r0 + nh) and columns [c0, c0 + nw).
NDArray cut_taps(const NDArray& w, int64_t r0, int64_t nh, int64_t c0, int64_t nw) {
  const Shape& s = w.shape();
  NDArray out = NDArray::empty({s[0], s[1], nh, nw}, w.dtype());
  int64_t bytes = w.dtype().bytes();
  auto* src = static_cast<const char*>(w.raw_data());
  auto* dst = static_cast<char*>(out.raw_data());
  for (int64_t oc = 0; oc < s[0] * s[1]; ++oc)
    for (int64_t r = 0; r < nh; ++r)
      std::memcpy(dst + ((oc * nh + r) * nw) * bytes, src + ((oc * s[2] + r0 + r) * s[3] + c0) * bytes, nw * bytes);
  return out;
}

}  // namespace

void prune_conv_taps(Graph& g) {
  bool changed = false;
  for (size_t id = 0; id < g.nodes.size(); ++id) {
    const Node& n = g.nodes[id];
    if (!n.is_op() || n.op != "conv2d" || n.inputs.size() < 2 || !g.node(n.inputs[1]).is_constant()) continue;
    const Shape x = g.type_of(n.inputs[0]).shape, w = g.type_of(n.inputs[1]).shape, y = n.type.shape;
    if (x.size() != 4 || w.size() != 4 || y.size() != 4) continue;  // plain NCHW, OIHW only
    auto strides = n.attrs.get_ints("strides", {1, 1}), pads = n.attrs.get_ints("pads", {0, 0, 0, 0}),
         dilations = n.attrs.get_ints("dilations", {1, 1});
    if (strides.size() != 2 || pads.size() != 4 || dilations.size() != 2) continue;
    LiveTaps rows = live_taps(x[2], y[2], w[2], strides[0], dilations[0], pads[0]);
    LiveTaps cols = live_taps(x[3], y[3], w[3], strides[1], dilations[1], pads[1]);
    // Every tap dead (an output of bias alone) or none: leave it.
    if (rows.first > rows.last || cols.first > cols.last) continue;
    int64_t nh = rows.last - rows.first + 1, nw = cols.last - cols.first + 1;
    if (nh == w[2] && nw == w[3]) continue;
    // The pads that keep every output where it was: the new first tap's offset, and the end pad
    // that gives the same output size.
    auto new_pads = [](int64_t in, int64_t out, int64_t s, int64_t d, int64_t begin, int64_t first, int64_t taps) {
      int64_t b = begin - first * d;
      return std::pair<int64_t, int64_t>{b, (out - 1) * s + d * (taps - 1) + 1 - in - b};
    };
    auto [top, bottom] = new_pads(x[2], y[2], strides[0], dilations[0], pads[0], rows.first, nh);
    auto [left, right] = new_pads(x[3], y[3], strides[1], dilations[1], pads[1], cols.first, nw);
    // Only into the "same" form every conv template and tuning key assumes (a square kernel k
    // with pads k / 2 on every side; the tuners rebuild a layer from its kernel, stride and output
    // size): a 2x2 kernel at pads 0 was rebuilt with pads 1 and an empty input.
    if (nh != nw || top != nh / 2 || bottom != nh / 2 || left != nh / 2 || right != nh / 2) continue;
    std::string name = g.unique_name(g.node(n.inputs[1]).name + "_live_taps");
    NDArray cut = cut_taps(g.node(n.inputs[1]).value, rows.first, nh, cols.first, nw);
    int wid = g.add_constant(name, cut);  // may move g.nodes: `n` is not used after this
    Node& conv = g.nodes[id];
    conv.inputs[1] = wid;
    conv.attrs.set("pads", std::vector<int64_t>{top, left, bottom, right});
    changed = true;
  }
  if (changed) {
    eliminate_dead_nodes(g);
    infer_types(g);
  }
}

}  // namespace loom::graph
