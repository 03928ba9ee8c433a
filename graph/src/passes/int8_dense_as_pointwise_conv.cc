// Pass: int8_dense_as_pointwise_conv. An int8 dense layer over many rows (a transformer's
// projections and feed-forward layers: 128 tokens x 768 features) is the 1x1 convolution of its
// rows laid out as one image row, [1, K, 1, M]: the blocked int8 convolutions compute it on the
// CPU's dot products (vpdpbusd / vpdpwssd, ops/layers.h), where the dense schedule would multiply
// widened elements. Its requantization moves with it, so the layout changes back to [M, N] carry
// int8 values:
//   x[M, K] -> transpose -> reshape [1, K, 1, M] -> conv2d (weights [N, K, 1, 1], int32 bias)
//     -> requantize(_channel) (channels on axis 1 as before) -> reshape [N, M] -> transpose -> [M, N]
#include "loom/graph/passes.h"

namespace loom::graph {

namespace {

// Rows from which the convolution's tiles pay for the two layout changes.
constexpr int64_t kMinRows = 16;

Attrs reshape_to(const Shape& s) { return Attrs().set("shape", s); }
Attrs transposed() { return Attrs().set("perm", std::vector<int64_t>{1, 0}); }

}  // namespace

void int8_dense_as_pointwise_conv(Graph& g) {
  if (!g.shape_vars.empty()) return;  // rows that vary per run keep the dense variants
  const auto users = g.users();
  const std::vector<std::string> outputs = g.output_names();
  bool changed = false;
  const size_t original = g.nodes.size();
  for (size_t id = 0; id < original; ++id) {
    const Node& n = g.nodes[id];
    if (!n.is_op() || n.op != "dense" || n.inputs.size() < 2 || n.attrs.get_int("n_block", 0) != 0) continue;
    if (n.type.dtype != DataType::Int(32) || g.type_of(n.inputs[0]).dtype != DataType::Int(8)) continue;
    const Node& w = g.node(n.inputs[1]);
    if (!w.is_constant() || w.value.dtype() != DataType::Int(8) || w.value.ndim() != 2) continue;
    if (n.inputs.size() > 2 && !g.node(n.inputs[2]).is_constant()) continue;
    const int64_t M = n.type.shape[0], N = w.value.shape()[0], K = w.value.shape()[1];
    if (M < kMinRows || N % 8 != 0 || K % 4 != 0) continue;
    // The requantization that reads the accumulator alone, per tensor or per output channel.
    if (users[id].size() != 1) continue;
    const int rq = users[id][0];
    const Node& r = g.node(rq);
    if (!r.is_op() || (r.op != "requantize" && r.op != "requantize_channel") || r.inputs[0] != int(id)) continue;

    const Node dense = n, requant = r;  // copies: adding nodes may move g.nodes
    NDArray oihw = NDArray::empty({N, K, 1, 1}, DataType::Int(8));
    std::copy_n(static_cast<const int8_t*>(w.value.raw_data()), N * K, static_cast<int8_t*>(oihw.raw_data()));
    int x = g.add_op("transpose", g.unique_name(dense.name + "_columns"), {dense.inputs[0]}, transposed());
    x = g.add_op("reshape", g.unique_name(dense.name + "_image"), {x}, reshape_to({1, K, 1, M}));
    std::vector<int> conv_inputs{x, g.add_constant(g.unique_name(w.name + "_oihw"), oihw)};
    if (dense.inputs.size() > 2) conv_inputs.push_back(dense.inputs[2]);
    int conv = g.add_op("conv2d", g.unique_name(dense.name + "_pointwise"), conv_inputs);
    std::vector<int> rq_inputs = requant.inputs;
    rq_inputs[0] = conv;
    int q = g.add_op(requant.op, g.unique_name(requant.name + "_pointwise"), rq_inputs, requant.attrs);
    int y = g.add_op("reshape", g.unique_name(requant.name + "_rows"), {q}, reshape_to({N, M}));
    y = g.add_op("transpose", g.unique_name(requant.name + "_nc"), {y}, transposed());
    g.replace_uses(rq, y);
    changed = true;
  }
  if (!changed) return;
  g.compact();
  g.name_outputs(outputs);
  infer_types(g);
}

}  // namespace loom::graph
