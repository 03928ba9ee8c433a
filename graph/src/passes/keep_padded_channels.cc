// Pass: keep_padded_channels. pad_conv_channels leaves each padded conv behind a slice of its real
// channels, so a chain of such convs (ShuffleNetV2's branches: 1x1 conv, ReLU, depthwise conv, 1x1
// conv, ReLU, all 58 channels wide) leaves channel-blocked layout and comes back after every conv.
// Where the padded channels are known to be zero, the chain keeps them instead:
//   relu(slice(x))                  -> slice(relu(x))   (so the ReLU fuses into the conv)
//   pad(slice(x, 0:C), to x's width) -> x               (the depthwise conv's zero channels)
// so the branch's 1x1 conv, ReLU and depthwise conv stay blocked, and one slice is left before the
// second 1x1 conv. Float only; a value is known zero past channel C when it is a conv with constant
// weights and bias that are zero for those output channels, a ReLU of such a value, or a constant
// pad that adds them. A one-group conv does not read past the slice: its zero weights times a
// non-finite value there (0 * inf) would be NaN in its real channels, where the model's are not.
#include <algorithm>

#include "loom/graph/passes.h"

namespace loom::graph {

namespace {

// The number of leading channels a `slice` keeps when it keeps channels [0, C) of a rank-4 value
// along axis 1, fewer than the value has, and nothing else; -1 otherwise.
int64_t leading_channels(const Graph& g, const Node& n) {
  if (!n.is_op() || n.op != "slice" || n.type.shape.size() != 4) return -1;
  if (n.type.shape[1] >= g.type_of(n.inputs[0]).shape[1]) return -1;  // keeps every channel
  if (n.attrs.get_ints("axes") != std::vector<int64_t>{1} || n.attrs.get_ints("starts") != std::vector<int64_t>{0} ||
      n.attrs.get_ints("steps") != std::vector<int64_t>{1})
    return -1;
  return n.type.shape[1];
}

bool all_zero_from(const NDArray& v, int64_t from) {
  const int64_t per_channel = v.numel() / v.shape()[0];
  for (int64_t i = from * per_channel; i < v.numel(); ++i)
    if (v.get_as_double(i) != 0) return false;
  return true;
}

// Whether node `id` is a float rank-4 value whose channels from `from` on are all zero.
bool zero_from(const Graph& g, int id, int64_t from) {
  const Node& n = g.node(id);
  if (!n.is_op() || n.type.dtype != DataType::Float(32) || n.type.shape.size() != 4) return false;
  if (from >= n.type.shape[1]) return true;
  if (n.op == "relu") return zero_from(g, n.inputs[0], from);
  if (n.op == "pad") {
    const std::vector<int64_t> pads = n.attrs.get_ints("pads");
    if (pads.size() != 8 || n.attrs.get_string("mode", "constant") != "constant" || n.attrs.get_float("value", 0) != 0)
      return false;
    for (size_t k = 0; k < pads.size(); ++k)
      if (k != 5 && pads[k] != 0) return false;  // channels appended at the end only
    const int64_t kept = n.type.shape[1] - pads[5];
    return from >= kept || zero_from(g, n.inputs[0], from);
  }
  if (n.op != "conv2d" || n.inputs.size() < 2) return false;
  const Node& w = g.node(n.inputs[1]);
  if (!w.is_constant() || w.value.ndim() != 4 || w.value.shape()[0] != n.type.shape[1] || !all_zero_from(w.value, from))
    return false;
  if (n.inputs.size() < 3) return true;
  const Node& b = g.node(n.inputs[2]);
  return b.is_constant() && b.value.ndim() == 1 && all_zero_from(b.value, from);
}

// Node `fresh` takes the place of node `old`: its readers and its name.
void take_place(Graph& g, int old, int fresh) {
  g.replace_uses(old, fresh);
  const std::string name = g.node(old).name;
  g.node(old).name = g.unique_name(name + "_replaced");
  g.node(fresh).name = name;
}

// One rewrite at node `id` if one applies; true if the graph changed.
bool rewrite(Graph& g, int id, const std::vector<std::vector<int>>& users) {
  const Node n = g.node(id);  // a copy: adding nodes may move g.nodes
  if (!n.is_op() || n.inputs.empty() || n.type.dtype != DataType::Float(32)) return false;
  const int sliced = n.inputs[0];
  const int64_t kept = leading_channels(g, g.node(sliced));
  if (kept < 0) return false;
  const Node s = g.node(sliced);
  const int x = s.inputs[0];
  const int64_t wide = g.type_of(x).shape[1];
  if (n.op == "relu") {
    // Only where the ReLU is the slice's one reader and the slice the value's (graph outputs count
    // as readers), of padding: the ReLU can then fuse into the conv, and nothing is computed twice
    // or over channels a model's own split dropped.
    auto readers = [&](int v) { return users[v].size() + size_t(std::count(g.outputs.begin(), g.outputs.end(), v)); };
    if (readers(sliced) != 1 || readers(x) != 1 || !zero_from(g, x, kept)) return false;
    int relu = g.add_op("relu", g.unique_name(n.name + "_wide"), {x}, n.attrs);
    const int after = g.add_op("slice", g.unique_name(s.name + "_after"), {relu}, s.attrs);
    g.node(after).sym_attrs = s.sym_attrs;
    take_place(g, id, after);
    return true;
  }
  if (n.op == "pad") {
    // zero_from on the pad itself checks its form: zeros appended to the channels and nothing else
    if (n.type.shape[1] != wide || !zero_from(g, id, kept) || !zero_from(g, x, kept)) return false;
    g.replace_uses(id, x);
    return true;
  }
  return false;
}

}  // namespace

void keep_padded_channels(Graph& g) {
  const std::vector<std::string> outputs = g.output_names();
  for (bool changed = true; changed;) {
    changed = false;
    infer_types(g);
    const auto users = g.users();
    const size_t original = g.nodes.size();
    for (size_t id = 0; id < original && !changed; ++id) changed = rewrite(g, int(id), users);
    if (changed) g.compact();
  }
  g.name_outputs(outputs);
  infer_types(g);
}

}  // namespace loom::graph
