// Pass: alter_layout. CPU data layouts (TVM's AlterOpLayout for x86):
//  - activations around convolutions become channel-blocked, NCHW{b}c with b the target's
//    float32 lanes, so every vector over channels is one contiguous load or store; element-wise
//    ops and pools keep the blocked layout; layout_transform nodes are inserted only where a
//    consumer needs NCHW (reshape, dense, softmax, concat, the graph's outputs, ...), and a
//    transform back to a layout the value already had is cancelled (the original is reused);
//  - constant weights are packed once, here: blocked conv2d [O/ob, C/ib, kh, kw, ib, ob],
//    depthwise [C/b, kh, kw, b], NCHW conv2d [O/b, C, kh, kw, b], dense [N/b, K, b]; int8
//    blocked conv2d weights grouped for the CPU's dot products [O/ob, C/ib, kh, kw, ib/G, ob, G]
//    (ops/layers.h): byte groups (G = 4) where the input is known to be non-negative, else int16
//    pairs (G = 2).
#include <cstring>
#include <functional>
#include <map>
#include <numeric>

#include "loom/graph/layout.h"
#include "loom/graph/op_attrs.h"
#include "loom/graph/passes.h"
#include "loom/ops/layers.h"

namespace loom::graph {

namespace {

int64_t choose_block(int64_t channels, int lanes) {
  for (int64_t b = lanes; b >= 8 && b >= lanes / 2; b /= 2)
    if (channels % b == 0) return b;
  return 0;
}

// Element copy with the destination index computed from the source's OIHW (or [N, K]) index.
template <typename F>
NDArray repack(const NDArray& w, Shape packed_shape, F dst_index) {
  NDArray p = NDArray::empty(std::move(packed_shape), w.dtype());
  int64_t bytes = w.dtype().bytes();
  const Shape& s = w.shape();
  auto* src = static_cast<const char*>(w.raw_data());
  auto* dst = static_cast<char*>(p.raw_data());
  std::vector<int64_t> idx(s.size(), 0);
  for (int64_t i = 0, n = w.numel(); i < n; ++i) {
    if (bytes == 4)  // float32 and int32 weights: one word, not a byte loop
      std::memcpy(dst + dst_index(idx) * 4, src + i * 4, 4);
    else
      std::copy_n(src + i * bytes, bytes, dst + dst_index(idx) * bytes);
    for (size_t d = s.size(); d-- > 0;) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
  return p;
}

class LayoutRewriter {
 public:
  LayoutRewriter(Graph& g, const LayoutOptions& o)
      : g_(g),
        lanes_(o.vector_lanes),
        blocked_(o.blocked_activations),
        int8_group_(o.int8_conv_group),
        int8_input_offset_(o.int8_input_offset),
        block_(g.nodes.size(), 0),
        plain_(g.nodes.size()) {
    for (size_t i = 0; i < g.nodes.size(); ++i) plain_[i] = g.nodes[i].type;
  }

  void run() {
    size_t original = g_.nodes.size();
    for (size_t id = 0; id < original; ++id) {
      const Node& n = g_.nodes[id];
      if (!n.is_op()) continue;
      int i = static_cast<int>(id);
      const OpDef& def = op_def(n.op);
      if (def.layer == WeightedLayer::Conv2d && blocked_ && try_blocked_conv(i)) continue;
      if (def.layer != WeightedLayer::None) {
        for (size_t k = 0; k < g_.nodes[id].inputs.size(); ++k) set_input(i, k, in_layout(g_.nodes[id].inputs[k], 0));
        pack_plain_weights(i);
        continue;
      }
      switch (def.layout_rule) {
        case LayoutRule::FollowsInput:
          block_[id] = block_[n.inputs[0]];
          break;
        case LayoutRule::Broadcasting:
          binary(i);
          break;
        case LayoutRule::PlainOnly:
          for (size_t k = 0; k < g_.nodes[id].inputs.size(); ++k) set_input(i, k, in_layout(g_.nodes[id].inputs[k], 0));
          break;
        case LayoutRule::ChannelConcat:
          channel_concat(i);
          break;
        case LayoutRule::SpatialSlice:
          spatial_slice(i);
          break;
      }
    }
    for (int& o : g_.outputs) o = in_layout(o, 0);
  }

 private:
  // The value of node `id` in layout `b` (0: plain), inserting or cancelling transforms.
  int in_layout(int id, int64_t b) {
    if (static_cast<size_t>(id) >= block_.size() || block_[id] == b) return id;
    auto key = std::make_pair(id, b);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    int out;
    const Node& n = g_.node(id);
    if (n.is_op() && n.op == "layout_transform" && static_cast<size_t>(n.inputs[0]) < block_.size() &&
        block_[n.inputs[0]] == b) {
      out = n.inputs[0];  // a transform straight back: cancel it
    } else if (b == 0) {
      out = add_transform(id, transform_attrs(Layout::nchw()), 0);
    } else {
      int plain = in_layout(id, 0);
      out = add_transform(plain, transform_attrs(Layout::nchwc(b)), b);
    }
    memo_[key] = out;
    return out;
  }

  int add_transform(int from, Attrs a, int64_t b) {
    std::string name = g_.unique_name(g_.node(from).name + (b ? "_nchw" + std::to_string(b) + "c" : "_nchw"));
    TensorType plain = plain_[from];
    int id = g_.add_op("layout_transform", name, {from}, std::move(a));
    block_.push_back(b);
    plain_.push_back(plain);
    return id;
  }
  const TensorType& plain_of(int id) const { return plain_[id]; }

  void set_input(int node, size_t k, int value) { g_.node(node).inputs[k] = value; }

  // Constant `constant` packed by `pack` (a weight's blocks, per-channel values in NCHW{b}c), once
  // per constant and packing however many layers read it: the steps of an unrolled LSTM share one
  // copy of their recurrent weights, which stays in cache.
  int packed_constant(int constant, const std::string& packing, const std::string& suffix,
                      const std::function<NDArray()>& pack) {
    auto key = std::make_pair(constant, packing);
    if (auto it = packed_.find(key); it != packed_.end()) return it->second;
    NDArray value = pack();
    int id = g_.add_constant(g_.unique_name(g_.node(constant).name + suffix), std::move(value));
    block_.push_back(0);
    plain_.push_back(g_.node(id).type);
    packed_[key] = id;
    return id;
  }

  bool try_blocked_conv(int id) {
    Node n = g_.node(id);
    const ConvAttrs attrs = ConvAttrs::from(n);
    if (n.inputs.size() < 2 || !g_.node(n.inputs[1]).is_constant() || conv_layout(n).blocked() || attrs.oc_block != 0 ||
        plain_of(n.inputs[0]).shape.size() != 4)
      return false;
    const NDArray& w = g_.node(n.inputs[1]).value;
    int64_t O = w.shape()[0], Cg = w.shape()[1], kh = w.shape()[2], kw = w.shape()[3];
    int64_t C = plain_of(n.inputs[0]).shape[1], groups = attrs.groups;
    int64_t ob = choose_block(O, lanes_);
    if (!ob) return false;
    // The packing, run once per weight and packing however many convs read the weight (packed_constant).
    std::function<NDArray()> pack;
    int64_t ib;
    int int8_group_size = 0;
    if (groups == 1) {
      int64_t have = block_[n.inputs[0]];
      ib = have && C % have == 0 ? have : choose_block(C, lanes_);
      if (!ib) ib = C;  // e.g. the 3 channels of an image: one block
      const int group = int8_group_size = int8_group(n, ib);
      if (group) {
        pack = [=] { return ops::pack_conv_weights_int8_groups(w, ib, ob, group); };
      } else {
        pack = [=] {
          return repack(w, {O / ob, C / ib, kh, kw, ib, ob}, [&](const std::vector<int64_t>& i) {
            return ((((i[0] / ob * (C / ib) + i[1] / ib) * kh + i[2]) * kw + i[3]) * ib + i[1] % ib) * ob + i[0] % ob;
          });
        };
      }
    } else if (groups > 1 && attrs.interleaved_groups && w.dtype() == DataType::Float(32)) {
      // Interleaved narrow groups (pass interleave_narrow_groups): group g's channels g, g + G, ...
      // share lane g % b of Cg blocks; weights [O/b, Cg, kh, kw, b], each lane its output's own.
      int64_t b = choose_block(C, lanes_);
      if (!b || groups % b || C != O) return false;
      ib = ob = b;
      pack = [=] {
        return repack(w, {O / b, Cg, kh, kw, b}, [&](const std::vector<int64_t>& i) {
          return (((i[0] / b * Cg + i[1]) * kh + i[2]) * kw + i[3]) * b + i[0] % b;
        });
      };
    } else if (groups > 1 && Cg > 1 && w.dtype() == DataType::Float(32) && narrow_groups(C, O, Cg, groups)) {
      // Groups narrower than a vector (ResNeXt's 4 and 8 channels): each block of b channels holds
      // b / Cg whole groups, so the conv is regrouped as C / b groups of b channels whose weights
      // are block-diagonal (zeros between the groups). b / Cg times the multiply-adds, but every
      // one a full vector; per-group vectors of Cg lanes run far slower.
      int64_t b = choose_block(C, lanes_);
      ib = ob = b;
      pack = [=] {
        NDArray packed = NDArray::zeros({O / b, 1, kh, kw, b, b}, w.dtype());
        const float* src = w.data<float>();
        float* dst = packed.data<float>();
        for (int64_t o = 0; o < O; ++o)
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t k = 0; k < kh * kw; ++k) {
              int64_t ci = (o / Cg) * Cg % b + c;  // the input channel within o's block
              dst[((o / b * kh * kw + k) * b + ci) * b + o % b] = src[(o * Cg + c) * kh * kw + k];
            }
        return packed;
      };
      ConvAttrs regrouped = attrs;
      regrouped.groups = C / b;
      regrouped.write(g_.node(id).attrs);
    } else if (groups > 1 && Cg > 1 && w.dtype() == DataType::Float(32)) {
      // Grouped: blocks of b within each group (both group widths whole blocks), ib = ob = b.
      int64_t b = choose_block(std::gcd(Cg, O / groups), lanes_);
      if (!b) return false;
      ib = ob = b;
      pack = [=] {
        return repack(w, {O / b, Cg / b, kh, kw, b, b}, [&](const std::vector<int64_t>& i) {
          return ((((i[0] / b * (Cg / b) + i[1] / b) * kh + i[2]) * kw + i[3]) * b + i[1] % b) * b + i[0] % b;
        });
      };
    } else if (groups == C && O == C && Cg == 1) {
      ib = ob;
      pack = [=] {
        return repack(w, {C / ob, kh, kw, ob}, [&](const std::vector<int64_t>& i) {
          return ((i[0] / ob * kh + i[2]) * kw + i[3]) * ob + i[0] % ob;
        });
      };
    } else {
      return false;
    }
    // The branch taken follows from the weight's shape and these, so they name the packing.
    const std::string packing = "nchwc " + std::to_string(groups) + " " + std::to_string(attrs.interleaved_groups) +
                                " " + std::to_string(ib) + " " + std::to_string(ob) + " " +
                                std::to_string(int8_group_size);
    int x = in_layout(n.inputs[0], ib);
    int wid = packed_constant(n.inputs[1], packing, "_nchwc", pack);
    Node& conv = g_.node(id);
    conv.inputs[0] = x;
    conv.inputs[1] = wid;
    set_conv_layout(conv, Layout::nchwc(ob));
    if (int8_group_size == 4) {  // byte groups: what lets the kernel read the input as uint8
      ConvAttrs unsigned_input = ConvAttrs::from(conv);
      if (nonnegative(n.inputs[0])) {
        unsigned_input.input_nonnegative = true;
      } else {  // int8_group chose the offset form
        unsigned_input.input_offset = true;
        int bias = offset_bias(n, w);
        Node& c = g_.node(id);
        if (c.inputs.size() > 2)
          c.inputs[2] = bias;
        else
          c.inputs.push_back(bias);
        block_.push_back(0);
        plain_.push_back(g_.node(bias).type);
      }
      unsigned_input.write(g_.node(id).attrs);
    }
    block_[id] = ob;
    return true;
  }

  // Whether a grouped conv's groups are narrower than the block chosen for its channels, with
  // equal input and output widths that divide the block (so each block holds whole groups).
  bool narrow_groups(int64_t C, int64_t O, int64_t Cg, int64_t groups) const {
    int64_t b = choose_block(C, lanes_);
    return b && C == O && O / groups == Cg && Cg < b && b % Cg == 0;
  }

  // The grouped int8 form of a blocked int8 conv with input block ib (ops/layers.h): byte groups
  // where its input is known to lie in [0, 127], else int16 pairs; 0: widened products.
  int int8_group(const Node& conv, int64_t ib) {
    if (g_.node(conv.inputs[1]).value.dtype() != DataType::Int(8) || plain_of(conv.inputs[0]).dtype != DataType::Int(8))
      return 0;
    if (int8_group_ >= 4 && ib % 4 == 0 && (nonnegative(conv.inputs[0]) || input_offset(conv))) return 4;
    return int8_group_ >= 2 && ib % 2 == 0 ? 2 : 0;
  }

  // Whether the byte groups may read a signed input plus 128 (LayoutOptions::int8_input_offset):
  // on an unpadded conv whose bias, if any, is a constant that can take the correction.
  bool input_offset(const Node& conv) const {
    if (!int8_input_offset_ || !ConvAttrs::from(conv).zero_pads()) return false;
    return conv.inputs.size() < 3 || g_.node(conv.inputs[2]).is_constant();
  }

  // The bias of an offset conv: its own (or zeros) less 128 x each output channel's weight sum.
  int offset_bias(const Node& conv, const NDArray& oihw) {
    const int64_t O = oihw.shape()[0], per = oihw.numel() / O;
    NDArray b = NDArray::empty({O}, DataType::Int(32));
    const int8_t* w = static_cast<const int8_t*>(oihw.raw_data());
    for (int64_t o = 0; o < O; ++o) {
      int64_t sum = 0;
      for (int64_t k = 0; k < per; ++k) sum += w[o * per + k];
      const int64_t own = conv.inputs.size() > 2 ? int64_t(g_.node(conv.inputs[2]).value.get_as_double(o)) : 0;
      b.set_from_double(o, double(own - 128 * sum));
    }
    const std::string base = conv.inputs.size() > 2 ? g_.node(conv.inputs[2]).name : conv.name + "_bias";
    return g_.add_constant(g_.unique_name(base + "_offset"), b);
  }

  // Whether every value of node `id` is >= 0, as its operator says (OpDef::nonnegative).
  bool nonnegative(int id) {
    const Node& n = g_.node(id);
    if (!n.is_op()) return false;
    const OpDef& def = op_def(n.op);
    return def.nonnegative && def.nonnegative(n, [&](size_t k) { return nonnegative(n.inputs[k]); });
  }

  void pack_plain_weights(int id) {
    Node n = g_.node(id);
    if (n.inputs.size() < 2 || !g_.node(n.inputs[1]).is_constant()) return;
    const NDArray& w = g_.node(n.inputs[1]).value;
    int64_t b = choose_block(w.shape()[0], lanes_);
    if (!b) return;
    std::function<NDArray()> pack;
    std::string packing;
    WeightedLayer layer = op_def(n.op).layer;
    const bool plain_conv = layer == WeightedLayer::Conv2d && [&] {
      const ConvAttrs c = ConvAttrs::from(n);
      return c.groups == 1 && c.oc_block == 0;
    }();
    if (plain_conv) {
      pack = [w, b] {
        int64_t rest = w.numel() / w.shape()[0];
        return repack(w, {w.shape()[0] / b, w.shape()[1], w.shape()[2], w.shape()[3], b},
                      [&](const std::vector<int64_t>& i) {
                        return ((i[0] / b) * rest + (i[1] * w.shape()[2] + i[2]) * w.shape()[3] + i[3]) * b + i[0] % b;
                      });
      };
      packing = "oc_block " + std::to_string(b);
      ConvAttrs packed_weights = ConvAttrs::from(g_.node(id));
      packed_weights.oc_block = b;
      packed_weights.write(g_.node(id).attrs);
    } else if (layer == WeightedLayer::Dense && n.attrs.get_int("n_block", 0) == 0) {
      pack = [w, b] {
        int64_t K = w.shape()[1];
        return repack(w, {w.shape()[0] / b, K, b},
                      [&](const std::vector<int64_t>& i) { return ((i[0] / b) * K + i[1]) * b + i[0] % b; });
      };
      packing = "n_block " + std::to_string(b);
      g_.node(id).attrs.set("n_block", b);
    } else {
      return;
    }
    int wid = packed_constant(n.inputs[1], packing, "_packed", pack);
    g_.node(id).inputs[1] = wid;
  }

  // A concat along the channels of NCHW values whose inputs come in whole blocks of b, one of
  // them already blocked: concatenated as NCHW{b}c (axis 1, the channel blocks), so a DenseNet
  // layer's features are not converted to NCHW and back for every concat that reads them. Along
  // the rows or columns (the regions of prune_conv_taps), axes 2 and 3 of either layout.
  void channel_concat(int id) {
    Node n = g_.node(id);
    const Shape out = plain_of(id).shape;  // a copy: in_layout adds nodes, and plain_ may move
    int64_t axis = n.attrs.get_int("axis", 0);
    if (axis < 0) axis += static_cast<int64_t>(out.size());
    int64_t b = 0;
    for (int in : n.inputs) b = b ? b : block_[in];
    bool whole_blocks = out.size() == 4 && (axis == 1 || axis == 2 || axis == 3) && b > 0;
    for (int in : n.inputs) whole_blocks = whole_blocks && plain_of(in).shape[1] % b == 0;
    if (!whole_blocks) b = 0;
    for (size_t k = 0; k < n.inputs.size(); ++k) set_input(id, k, in_layout(n.inputs[k], b));
    if (b) {
      g_.node(id).attrs.set("axis", axis);
      block_[id] = b;
    }
  }

  // A slice of a blocked NCHW value that cuts rows and columns only keeps the blocks: its axes
  // (2 and 3) index the same dimensions of NCHW{b}c.
  void spatial_slice(int id) {
    const Node& n = g_.node(id);
    int64_t b = block_[n.inputs[0]];
    std::vector<int64_t> axes = n.attrs.get_ints("axes");
    bool spatial = b > 0 && plain_of(n.inputs[0]).shape.size() == 4;
    for (int64_t& a : axes) {
      if (a < 0) a += 4;
      spatial = spatial && (a == 2 || a == 3);
    }
    if (!spatial) {
      set_input(id, 0, in_layout(n.inputs[0], 0));
      return;
    }
    g_.node(id).attrs.set("axes", axes);
    block_[id] = b;
  }

  // Operand `c` of a binary op whose output (plain shape `out`) is blocked by b, in that layout:
  // the full shape converted, a computed [1, C, 1, 1] converted, a constant per channel ([C, 1, 1] or [1, C, 1, 1]:
  // BatchNorm's scale and shift where no conv absorbed them) as [1, C/b, 1, 1, b] (the same values in the same order),
  // a one-element constant as is; -1 for any other broadcast.
  int operand_in_block(int c, const Shape& out, int64_t b) {
    const Shape& s = plain_of(c).shape;
    if (s == out) return in_layout(c, b);
    const Node& cn = g_.node(c);
    // A computed [1, C, 1, 1] (a squeeze-and-excitation block's channel scales) converts to
    // [1, C/b, 1, 1, b]: a few hundred elements, where the map it scales went to NCHW and back.
    if (!cn.is_constant())
      return s.size() == 4 && s[0] == 1 && s[1] == out[1] && s[2] == 1 && s[3] == 1 ? in_layout(c, b) : -1;
    if (cn.value.numel() == 1) return c;
    bool per_channel = (s.size() == 3 || (s.size() == 4 && s[0] == 1)) && s[s.size() - 3] == out[1] &&
                       s[s.size() - 2] == 1 && s[s.size() - 1] == 1;
    if (!per_channel) return -1;
    const NDArray value = cn.value;
    const int64_t blocks = out[1] / b;
    return packed_constant(c, "channels " + std::to_string(b), "_nchw" + std::to_string(b) + "c", [value, blocks, b] {
      NDArray v = NDArray::empty({1, blocks, 1, 1, b}, value.dtype());
      std::copy_n(static_cast<const char*>(value.raw_data()), value.numel() * value.dtype().bytes(),
                  static_cast<char*>(v.raw_data()));
      return v;
    });
  }

  void binary(int id) {
    Node n = g_.node(id);
    int a = n.inputs[0], c = n.inputs[1];
    int64_t ba = block_[a], bc = block_[c];
    // A copy: operand_in_block adds nodes, and plain_ may move.
    const TensorType out = plain_of(id);
    // Blocked when a blocked operand has the output's full shape and the other one either has it
    // too or is per-channel or one element (operand_in_block).
    int64_t b = ba && plain_of(a).shape == out.shape ? ba : bc && plain_of(c).shape == out.shape ? bc : 0;
    if (b && out.shape.size() == 4 && out.shape[1] % b == 0) {
      int in_a = operand_in_block(a, out.shape, b), in_c = operand_in_block(c, out.shape, b);
      if (in_a >= 0 && in_c >= 0) {
        set_input(id, 0, in_a);
        set_input(id, 1, in_c);
        block_[id] = b;
        return;
      }
    }
    set_input(id, 0, in_layout(a, 0));
    set_input(id, 1, in_layout(c, 0));
  }

  Graph& g_;
  int lanes_;
  bool blocked_;
  int int8_group_;
  bool int8_input_offset_;
  std::vector<int64_t> block_;                         // per node: 0 plain, b: NCHW{b}c
  std::vector<TensorType> plain_;                      // per node: its type in the plain layout
  std::map<std::pair<int, int64_t>, int> memo_;        // (value, block) -> the value in that layout
  std::map<std::pair<int, std::string>, int> packed_;  // (constant, packing) -> the packed constant
};

}  // namespace

void alter_layout(Graph& g, const LayoutOptions& options) {
  LayoutRewriter(g, options).run();
  g.compact();
  infer_types(g);
}

}  // namespace loom::graph
