// Pass: prune_conv_taps. A kernel row (or column) of a convolution whose every read, at every
// output position, falls in the zero padding contributes nothing: it is cut from the constant
// weights and the pads shrink to match, so the output is unchanged (where the result keeps the
// square, evenly padded form; in practice a 1x1 kernel at pads 0). DeepLabV3's atrous pyramid
// (3x3 kernels at dilations 24 and 36 over a 14x14 map) becomes 1x1 convolutions: the padded
// copy of a 960-channel input at pad 36 was 38 times the input, all but the center tap zeros.
//
// Taps dead for most but not all outputs (dilation 12 over 14x14: the outer taps read the map
// only from the first and last two rows and columns, 18% of the kernel's work is live) split
// the output into regions, the rows (and columns) whose reads keep the same taps: each region is
// a convolution of its taps alone, without padding, over the slice of the input it reads, and
// the regions are concatenated back.
#include <algorithm>
#include <cstring>
#include <map>

#include "loom/graph/op_attrs.h"
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

// Output positions [begin, end) of one spatial axis whose reads keep taps [first, last].
struct Band {
  int64_t begin, end, first, last;
  int64_t taps() const { return last - first + 1; }
};

// The bands of one axis, in order; empty when some output reads no tap at all (bias alone).
std::vector<Band> live_bands(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t dilation,
                             int64_t pad_begin) {
  std::vector<Band> bands;
  for (int64_t o = 0; o < out; ++o) {
    int64_t first = kernel, last = -1;
    for (int64_t k = 0; k < kernel; ++k) {
      int64_t row = o * stride - pad_begin + k * dilation;
      if (row >= 0 && row < in) first = std::min(first, k), last = std::max(last, k);
    }
    if (first > last) return {};
    if (!bands.empty() && bands.back().first == first && bands.back().last == last)
      bands.back().end = o + 1;
    else
      bands.push_back({o, o + 1, first, last});
  }
  return bands;
}

// Splitting pays where at most half the multiply-adds are live, the convolution is large enough
// that the regions' extra kernels cost little beside what they save, the regions are few, and
// the dead multiply-adds saved outweigh the weights read again: each region reads its own taps'
// weights, streamed from L3 or memory at about a third of a byte per multiply-add time (a 2x2
// map's 3x3 conv, four 1-pixel regions of 2x2 taps, read 16 taps' weights instead of 9 to skip
// a few dead multiply-adds).
constexpr double kMaxLiveShare = 0.5;
constexpr int64_t kMinMultiplyAdds = int64_t(1) << 22;
constexpr size_t kMaxRegions = 25;
constexpr double kMultiplyAddsPerWeightByte = 3;

// Replaces conv2d node `id` by its regions (see the file comment); false where it does not pay.
bool split_live_regions(Graph& g, int id) {
  const Node n = g.node(id);  // a copy: adding nodes moves g.nodes
  const Shape x = g.type_of(n.inputs[0]).shape, w = g.type_of(n.inputs[1]).shape, y = n.type.shape;
  if (g.type_of(n.inputs[0]).dtype != DataType::Float(32)) return false;
  const ConvAttrs a = ConvAttrs::from(n);
  const auto &strides = a.strides, &dilations = a.dilations;
  const auto& pads = a.pads;
  std::vector<Band> rows = live_bands(x[2], y[2], w[2], strides[0], dilations[0], pads[0]);
  std::vector<Band> cols = live_bands(x[3], y[3], w[3], strides[1], dilations[1], pads[1]);
  if (rows.empty() || cols.empty() || rows.size() * cols.size() > kMaxRegions) return false;
  auto live = [](const std::vector<Band>& bands) {
    int64_t sum = 0;
    for (const Band& b : bands) sum += (b.end - b.begin) * b.taps();
    return sum;
  };
  double share = double(live(rows)) * double(live(cols)) / double(y[2] * w[2] * y[3] * w[3]);
  double multiply_adds = double(y[0] * y[1] * y[2] * y[3] * w[1] * w[2] * w[3]);
  int64_t region_taps = 0;
  for (const Band& r : rows)
    for (const Band& c : cols) region_taps += r.taps() * c.taps();
  double extra_weight_bytes = 4.0 * double(w[0] * w[1] * (region_taps - w[2] * w[3]));
  if (share > kMaxLiveShare || multiply_adds < double(kMinMultiplyAdds) ||
      (1 - share) * multiply_adds < kMultiplyAddsPerWeightByte * extra_weight_bytes)
    return false;
  // The input rows (columns) a band reads: from its first output's first tap to its last
  // output's last tap, all inside the input by the bands' construction.
  auto reads = [](const Band& b, int64_t stride, int64_t dilation, int64_t pad_begin) {
    return std::pair<int64_t, int64_t>{b.begin * stride - pad_begin + b.first * dilation,
                                       (b.end - 1) * stride - pad_begin + b.last * dilation + 1};
  };
  std::map<std::vector<int64_t>, int> weights;  // (first row, rows, first column, columns) -> constant
  Attrs attrs = n.attrs;
  ConvAttrs unpadded = a;
  unpadded.pads = {0, 0, 0, 0};
  unpadded.write(attrs);
  std::vector<int> row_parts;
  for (const Band& r : rows) {
    std::vector<int> parts;
    for (const Band& c : cols) {
      auto [r0, r1] = reads(r, strides[0], dilations[0], pads[0]);
      auto [c0, c1] = reads(c, strides[1], dilations[1], pads[1]);
      std::string region = "_r" + std::to_string(r.begin) + "c" + std::to_string(c.begin);
      int in = n.inputs[0];
      if (r0 > 0 || r1 < x[2] || c0 > 0 || c1 < x[3])
        in = g.add_op("slice", g.unique_name(n.name + region + "_input"), {in},
                      Attrs()
                          .set("starts", std::vector<int64_t>{r0, c0})
                          .set("ends", std::vector<int64_t>{r1, c1})
                          .set("axes", std::vector<int64_t>{2, 3})
                          .set("steps", std::vector<int64_t>{1, 1}));
      std::vector<int64_t> key{r.first, r.taps(), c.first, c.taps()};
      if (!weights.count(key))
        weights[key] = g.add_constant(g.unique_name(g.node(n.inputs[1]).name + region),
                                      cut_taps(g.node(n.inputs[1]).value, r.first, r.taps(), c.first, c.taps()));
      std::vector<int> inputs{in, weights[key]};
      if (n.inputs.size() > 2) inputs.push_back(n.inputs[2]);
      parts.push_back(g.add_op("conv2d", g.unique_name(n.name + region), inputs, attrs));
    }
    row_parts.push_back(parts.size() == 1 ? parts[0]
                                          : g.add_op("concat", g.unique_name(n.name + "_r" + std::to_string(r.begin)),
                                                     parts, Attrs().set("axis", int64_t(3))));
  }
  int joined = row_parts.size() == 1
                   ? row_parts[0]
                   : g.add_op("concat", g.unique_name(n.name + "_regions"), row_parts, Attrs().set("axis", int64_t(2)));
  // The regions' concat has the conv's type: a later conv of this pass may read it before the pass
  // ends and types the graph again.
  g.node(joined).type = n.type;
  g.node(joined).typed = true;
  g.replace_uses(id, joined);
  return true;
}

}  // namespace

void prune_conv_taps(Graph& g) {
  bool changed = false;
  const size_t original = g.nodes.size();  // the regions' nodes, added below, need no visit
  for (size_t id = 0; id < original; ++id) {
    const Node& n = g.nodes[id];
    if (!n.is_op() || n.op != "conv2d" || n.inputs.size() < 2 || !g.node(n.inputs[1]).is_constant()) continue;
    const Shape x = g.type_of(n.inputs[0]).shape, w = g.type_of(n.inputs[1]).shape, y = n.type.shape;
    if (x.size() != 4 || w.size() != 4 || y.size() != 4) continue;  // plain NCHW, OIHW only
    const ConvAttrs a = ConvAttrs::from(n);
    const auto &strides = a.strides, &dilations = a.dilations;
    const auto& pads = a.pads;
    LiveTaps rows = live_taps(x[2], y[2], w[2], strides[0], dilations[0], pads[0]);
    LiveTaps cols = live_taps(x[3], y[3], w[3], strides[1], dilations[1], pads[1]);
    // Every tap dead (an output of bias alone) or none: leave it.
    if (rows.first > rows.last || cols.first > cols.last) continue;
    int64_t nh = rows.last - rows.first + 1, nw = cols.last - cols.first + 1;
    if (nh == w[2] && nw == w[3]) {
      changed |= split_live_regions(g, static_cast<int>(id));
      continue;
    }
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
    if (nh != nw || top != nh / 2 || bottom != nh / 2 || left != nh / 2 || right != nh / 2) {
      changed |= split_live_regions(g, static_cast<int>(id));
      continue;
    }
    std::string name = g.unique_name(g.node(n.inputs[1]).name + "_live_taps");
    NDArray cut = cut_taps(g.node(n.inputs[1]).value, rows.first, nh, cols.first, nw);
    int wid = g.add_constant(name, cut);  // may move g.nodes: `n` is not used after this
    Node& conv = g.nodes[id];
    conv.inputs[1] = wid;
    ConvAttrs repadded = ConvAttrs::from(conv);
    repadded.pads = {top, left, bottom, right};
    repadded.write(conv.attrs);
    changed = true;
  }
  if (changed) {
    eliminate_dead_nodes(g);
    infer_types(g);
  }
}

}  // namespace loom::graph
