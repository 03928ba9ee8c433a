// Pass: interleave_narrow_groups. A grouped conv whose groups are narrower than a vector (ResNeXt's
// 4 and 8 channels) sits between two ordinary convs: the first's output channels and the second's
// input channels can be put in any order for free (their weights are constants). In the order
// j G + g for channel g Cg + j (G groups of Cg), group g's channels are g, g + G, ...: on
// channel-blocked data (G a multiple of the block) they share one lane of Cg blocks, and the
// grouped conv becomes Cg lane-wise multiply-adds per tap (conv2d attribute interleaved_groups;
// alter_layout packs its weights [O/b, Cg, kh, kw, b]) instead of block-diagonal weights that
// do b / Cg times the work. Only element-wise ops with no per-channel operand may lie between the
// convs, each value read once.
#include <algorithm>
#include <set>

#include "loom/graph/op_attrs.h"
#include "loom/graph/op_registry.h"
#include "loom/graph/passes.h"

namespace loom::graph {

namespace {

// One-input element-wise ops that treat every channel alike.
bool channel_agnostic(const Node& n) {
  static const char* const kOps[] = {"relu", "clip", "leaky_relu", "sigmoid", "tanh", "hard_sigmoid", "hard_swish"};
  if (!n.is_op() || n.inputs.size() != 1) return false;
  for (const char* op : kOps)
    if (n.op == op) return true;
  return false;
}

bool float_constant(const Graph& g, int id) {
  const Node& n = g.node(id);
  return n.is_constant() && n.value.dtype() == DataType::Float(32);
}

// An ungrouped conv with constant float weights (and bias, if any).
bool plain_conv(const Graph& g, const Node& n) {
  if (!n.is_op() || n.op != "conv2d" || n.attrs.has("layout")) return false;
  const ConvAttrs c = ConvAttrs::from(n);
  return c.groups == 1 && c.oc_block == 0 && float_constant(g, n.inputs[1]) &&
         (n.inputs.size() < 3 || float_constant(g, n.inputs[2]));
}

// Channel c = g Cg + j goes to position j G + g.
int64_t interleaved(int64_t c, int64_t Cg, int64_t G) { return (c % Cg) * G + c / Cg; }

// A copy of constant `id` (leading axis `axis` of length C permuted) as a new constant.
int permuted_constant(Graph& g, int id, int axis, int64_t Cg, int64_t G) {
  const NDArray& v = g.node(id).value;
  NDArray out = NDArray::empty(v.shape(), v.dtype());
  int64_t outer = 1, inner = 1, C = v.shape()[size_t(axis)];
  for (int d = 0; d < axis; ++d) outer *= v.shape()[size_t(d)];
  for (size_t d = size_t(axis) + 1; d < v.shape().size(); ++d) inner *= v.shape()[d];
  const float* src = v.data<float>();
  float* dst = out.data<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < C; ++c)
      std::copy_n(src + (o * C + c) * inner, inner, dst + (o * C + interleaved(c, Cg, G)) * inner);
  return g.add_constant(g.unique_name(g.node(id).name + "_interleaved"), std::move(out));
}

}  // namespace

void interleave_narrow_groups(Graph& g, int lanes) {
  auto users = g.users();
  std::set<int> outputs(g.outputs.begin(), g.outputs.end());
  auto read_once = [&](int id) { return users[size_t(id)].size() == 1 && !outputs.count(id); };
  for (int id : g.topological_order()) {
    const Node& n = g.node(id);
    if (!n.is_op() || n.op != "conv2d" || n.attrs.has("layout")) continue;
    const ConvAttrs c = ConvAttrs::from(n);
    if (c.interleaved_groups || c.oc_block || !float_constant(g, n.inputs[1]) ||
        (n.inputs.size() > 2 && !float_constant(g, n.inputs[2])))
      continue;
    const Shape w = g.node(n.inputs[1]).value.shape();
    const int64_t G = c.groups, C = w[0], Cg = w.size() == 4 ? w[1] : 0;
    if (G <= 1 || Cg <= 1 || Cg > lanes || C != G * Cg || G % lanes || g.type_of(n.inputs[0]).shape[1] != C) continue;
    // Up to the conv whose output channels it reads, down to the conv that reads its own.
    std::vector<int> above, below;
    int p = n.inputs[0];
    while (read_once(p) && channel_agnostic(g.node(p))) above.push_back(p), p = g.node(p).inputs[0];
    if (!read_once(p) || !plain_conv(g, g.node(p)) || !read_once(id)) continue;
    int q = users[size_t(id)][0], last = id;
    while (channel_agnostic(g.node(q)) && read_once(q)) below.push_back(q), last = q, q = users[size_t(q)][0];
    if (!plain_conv(g, g.node(q)) || g.node(q).inputs[0] != last || g.node(q).inputs[1] == last) continue;
    // The producer's output channels (weights' axis 0, bias), the grouped conv's outputs (its
    // weights' axis 0, bias; its inputs follow from the attribute), the consumer's inputs (axis 1).
    // (Adding constants moves the nodes: ids only from here on.)
    const std::vector<int> p_in = g.node(p).inputs, g_in = n.inputs, q_in = g.node(q).inputs;
    int pw = permuted_constant(g, p_in[1], 0, Cg, G);
    int pb = p_in.size() > 2 ? permuted_constant(g, p_in[2], 0, Cg, G) : -1;
    int gw = permuted_constant(g, g_in[1], 0, Cg, G);
    int gb = g_in.size() > 2 ? permuted_constant(g, g_in[2], 0, Cg, G) : -1;
    int qw = permuted_constant(g, q_in[1], 1, Cg, G);
    g.node(p).inputs[1] = pw;
    if (pb >= 0) g.node(p).inputs[2] = pb;
    Node& grouped = g.node(id);
    grouped.inputs[1] = gw;
    if (gb >= 0) grouped.inputs[2] = gb;
    ConvAttrs interleaved = c;
    interleaved.interleaved_groups = true;
    interleaved.write(grouped.attrs);
    g.node(q).inputs[1] = qw;
    users = g.users();  // new constants
  }
}

}  // namespace loom::graph
