// Pass: simplify_inference. Identities (and pads of zero width) disappear; pow(x, 2) becomes x * x; batch_norm folds
// into the conv2d/dense before it when their weights are constants (W' = W * scale per output channel, b' = b * scale +
// shift with scale = gamma / sqrt(var + eps), shift = beta - mean * scale), and otherwise becomes a per-channel
// multiply and add.
#include <algorithm>
#include <cmath>

#include "loom/graph/passes.h"
#include "loom/runtime/error.h"

namespace loom::graph {

namespace {

bool is_const(const Graph& g, int id) { return g.node(id).is_constant(); }

bool zero_pads(const Node& pad) {
  if (!pad.attrs.has("pads")) return false;
  for (int64_t p : pad.attrs.get_ints("pads"))
    if (p != 0) return false;
  return true;
}

// pow(x, 2) of a float x by a constant scalar 2 (LayerNorm's variance as PyTorch exports it).
bool square(const Graph& g, const Node& pow) {
  int e = pow.inputs[1];
  return is_const(g, e) && g.node(e).value.numel() == 1 && g.node(e).value.get_as_double(0) == 2.0 &&
         g.type_of(e).shape.size() <= g.type_of(pow.inputs[0]).shape.size() &&  // the shape stays x's
         g.type_of(pow.inputs[0]).dtype.is_float();
}

// Per-channel scale and shift of a batch_norm node with constant parameters, in double.
void bn_scale_shift(const Graph& g, const Node& bn, std::vector<double>& scale, std::vector<double>& shift) {
  const NDArray &gamma = g.node(bn.inputs[1]).value, &beta = g.node(bn.inputs[2]).value,
                &mean = g.node(bn.inputs[3]).value, &var = g.node(bn.inputs[4]).value;
  double eps = bn.attrs.get_float("epsilon", 1e-5);
  int64_t c = gamma.numel();
  scale.resize(c);
  shift.resize(c);
  for (int64_t i = 0; i < c; ++i) {
    scale[i] = gamma.get_as_double(i) / std::sqrt(var.get_as_double(i) + eps);
    shift[i] = beta.get_as_double(i) - mean.get_as_double(i) * scale[i];
  }
}

// Folds into the producer; returns false if the producer cannot take it.
bool fold_into_producer(Graph& g, int bn_id, const std::vector<std::vector<int>>& users) {
  const Node& bn = g.node(bn_id);
  int prod_id = bn.inputs[0];
  const Node& prod = g.node(prod_id);
  if (!prod.is_op() || op_def(prod.op).layer == WeightedLayer::None) return false;
  if (prod.attrs.get_int("oc_block", 0) || prod.attrs.get_int("n_block", 0)) return false;
  if (users[prod_id].size() != 1 || g.node(prod_id).inputs.size() < 2 || !is_const(g, prod.inputs[1])) return false;
  if (prod.inputs.size() == 3 && !is_const(g, prod.inputs[2])) return false;
  bool graph_output = false;
  for (int o : g.outputs) graph_output |= o == prod_id;
  if (graph_output) return false;
  std::vector<double> scale, shift;
  bn_scale_shift(g, bn, scale, shift);
  const NDArray& w = g.node(prod.inputs[1]).value;
  int64_t out_channels = w.shape()[0];
  if (static_cast<int64_t>(scale.size()) != out_channels) return false;
  NDArray nw = w.copy();
  int64_t per = w.numel() / out_channels;
  for (int64_t o = 0; o < out_channels; ++o)
    for (int64_t i = 0; i < per; ++i) nw.set_from_double(o * per + i, w.get_as_double(o * per + i) * scale[o]);
  NDArray nb = NDArray::zeros({out_channels}, w.dtype());
  for (int64_t o = 0; o < out_channels; ++o) {
    double b = prod.inputs.size() == 3 ? g.node(prod.inputs[2]).value.get_as_double(o) : 0.0;
    nb.set_from_double(o, b * scale[o] + shift[o]);
  }
  std::string wname = g.node(prod.inputs[1]).name + "_bn", bname = bn.name + "_bias";
  int wid = g.add_constant(g.unique_name(wname), nw);
  int bid = g.add_constant(g.unique_name(bname), nb);
  Node& p = g.node(prod_id);
  p.inputs.resize(3);
  p.inputs[1] = wid;
  p.inputs[2] = bid;
  g.replace_uses(bn_id, prod_id);
  return true;
}

// x * scale + shift with per-channel constants shaped to broadcast along axis 1.
void decompose(Graph& g, int bn_id) {
  Node bn = g.node(bn_id);
  std::vector<double> scale, shift;
  bn_scale_shift(g, bn, scale, shift);
  const TensorType& t = g.type_of(bn.inputs[0]);
  Shape cshape{static_cast<int64_t>(scale.size())};
  for (size_t d = 2; d < t.shape.size(); ++d) cshape.push_back(1);
  NDArray s = NDArray::empty(cshape, t.dtype), b = NDArray::empty(cshape, t.dtype);
  for (size_t i = 0; i < scale.size(); ++i) {
    s.set_from_double(static_cast<int64_t>(i), scale[i]);
    b.set_from_double(static_cast<int64_t>(i), shift[i]);
  }
  int sid = g.add_constant(g.unique_name(bn.name + "_scale"), s);
  int bid = g.add_constant(g.unique_name(bn.name + "_shift"), b);
  int mul = g.add_op("mul", g.unique_name(bn.name + "_mul"), {bn.inputs[0], sid});
  int add = g.add_op("add", g.unique_name(bn.name + "_add"), {mul, bid});
  g.replace_uses(bn_id, add);
}

}  // namespace

void simplify_inference(Graph& g) {
  size_t original = g.nodes.size();
  auto is_output = [&](int id) { return std::find(g.outputs.begin(), g.outputs.end(), id) != g.outputs.end(); };
  for (size_t id = 0; id < original; ++id) {
    Node& n = g.node(static_cast<int>(id));
    if (!n.is_op()) continue;
    // A pad of zero width (PyTorch's exporter writes one before every average pool) copies.
    if (n.op == "identity" || (n.op == "pad" && n.inputs.size() == 1 && zero_pads(n))) {
      // A graph output keeps its name (the model's output name): its producer takes it, unless
      // that is no operator or an output itself; then the copy stays.
      if (is_output(static_cast<int>(id))) {
        Node& producer = g.node(n.inputs[0]);
        if (!producer.is_op() || is_output(n.inputs[0])) continue;
        std::string name = n.name;
        n.name += "_removed";
        producer.name = name;
      }
      g.replace_uses(static_cast<int>(id), n.inputs[0]);
      continue;
    }
    if (n.op == "pow" && square(g, n)) {  // x * x is exact; powf is a library call per element
      int x = n.inputs[0];
      g.replace_uses(static_cast<int>(id), g.add_op("mul", g.unique_name(n.name + "_square"), {x, x}));
      continue;
    }
    if (n.op != "batch_norm") continue;
    bool constant_params = true;
    for (size_t i = 1; i < 5; ++i) constant_params &= is_const(g, n.inputs[i]);
    if (!constant_params) continue;  // stays a batch_norm kernel
    if (!fold_into_producer(g, static_cast<int>(id), g.users())) decompose(g, static_cast<int>(id));
  }
  g.compact();
  infer_types(g);
}

}  // namespace loom::graph
