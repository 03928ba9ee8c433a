// Quantization, pass 1: choose the nodes computed in int8 and the values calibration measures.
#include <sstream>

#include "loom/graph/layout.h"
#include "loom/graph/op_registry.h"
#include "loom/graph/quantize.h"
#include "loom/runtime/error.h"
#include "power_of_two.h"

namespace loom::graph {

namespace {

bool constant_float(const Graph& g, int id) {
  return g.node(id).is_constant() && g.type_of(id).dtype == DataType::Float(32);
}

// A weighted layer (conv2d, dense) with float32 data and constant weights (and bias), in the
// plain layouts.
bool quantizable_layer(const Graph& g, const Node& n) {
  if (op_def(n.op).int8 != Int8Rule::Accumulate) return false;
  if (conv_layout(n).blocked() || n.attrs.get_int("oc_block", 0) || n.attrs.get_int("n_block", 0)) return false;
  if (g.type_of(n.inputs[0]).dtype != DataType::Float(32)) return false;
  for (size_t i = 1; i < n.inputs.size(); ++i)
    if (!constant_float(g, n.inputs[i])) return false;
  return true;
}

// A product of two float activations (attention's QKᵀ and AV).
bool quantizable_product(const Graph& g, const Node& n) {
  if (op_def(n.op).int8 != Int8Rule::Product) return false;
  for (int in : n.inputs)
    if (g.node(in).is_constant() || g.type_of(in).dtype != DataType::Float(32) || g.type_of(in).shape.size() < 2)
      return false;
  return true;
}

// A clamp from 0 (relu, clip(0, ...)): what requantize's clamp can absorb.
bool clamp_from_zero(const Node& n) {
  const OpDef& def = op_def(n.op);
  return def.clamp && def.clamp(n).lo == 0.0;
}

}  // namespace

QuantizeAnnotation annotate_quantization(const Graph& g, const QuantizeOptions& options) {
  QuantizeAnnotation a;
  a.role.assign(g.nodes.size(), QuantRole::Float);
  std::vector<bool> int8(g.nodes.size(), false), is_output(g.nodes.size(), false);
  for (int o : g.outputs) is_output[o] = true;
  auto users = g.users();
  bool first_conv = true;
  for (int id : g.topological_order()) {
    const Node& n = g.node(id);
    if (!n.is_op()) continue;
    QuantRole& role = a.role[id];
    const OpDef& def = op_def(n.op);
    bool conv = def.layer == WeightedLayer::Conv2d;
    if (quantizable_layer(g, n)) {
      bool skip = conv ? (first_conv && options.skip_first_conv) : options.skip_dense;
      if (conv) first_conv = false;
      if (!skip) role = QuantRole::Accumulate;
    } else if (conv) {
      first_conv = false;
    } else if (def.int8 == Int8Rule::Add && (int8[n.inputs[0]] || int8[n.inputs[1]]) &&
               g.type_of(n.inputs[0]) == g.type_of(n.inputs[1]) && g.type_of(id).dtype == DataType::Float(32)) {
      role = QuantRole::Add;
    } else if (clamp_from_zero(n) && int8[n.inputs[0]]) {
      int in = n.inputs[0];
      bool sole_reader = users[in].size() == 1 && !is_output[in];
      QuantRole r = a.role[in];
      role = sole_reader && (r == QuantRole::Accumulate || r == QuantRole::Add || r == QuantRole::Product)
                 ? QuantRole::FoldedRelu
             : def.int8 == Int8Rule::ScaleInvariant ? QuantRole::PassThrough
                                                    : QuantRole::Float;
    } else if (def.int8 == Int8Rule::ScaleInvariant && int8[n.inputs[0]]) {
      role = QuantRole::PassThrough;
    } else if (quantizable_product(g, n)) {
      role = QuantRole::Product;
    } else if (def.int8 == Int8Rule::ScaleByConstant && int8[n.inputs[0]] && power_of_two_scale(g, n)) {
      role = QuantRole::Rescale;
    }
    int8[id] = role != QuantRole::Float;
  }
  // Points: float values entering an int8 layer, and every value a requantization produces.
  std::vector<bool> point(g.nodes.size(), false);
  for (size_t id = 0; id < g.nodes.size(); ++id) {
    const Node& n = g.nodes[id];
    QuantRole r = a.role[id];
    if (r == QuantRole::Accumulate && !int8[n.inputs[0]]) point[n.inputs[0]] = true;
    if (r == QuantRole::Add || r == QuantRole::Product)
      for (int in : n.inputs)
        if (!int8[in]) point[in] = true;
    if (r == QuantRole::FoldedRelu) point[id] = true;
    if (r == QuantRole::Accumulate || r == QuantRole::Add || r == QuantRole::Product) {
      bool folded = false;
      for (int u : users[id]) folded |= a.role[u] == QuantRole::FoldedRelu;
      if (!folded) point[id] = true;
    }
  }
  for (size_t id = 0; id < point.size(); ++id)
    if (point[id]) a.points.push_back(static_cast<int>(id));
  return a;
}

std::string QuantizeAnnotation::str(const Graph& g) const {
  static const char* names[] = {"float",        "int8 accumulate", "int8 add", "folded relu", "int8 pass-through",
                                "int8 product", "int8 rescale"};
  std::ostringstream os;
  for (size_t id = 0; id < role.size(); ++id)
    if (role[id] != QuantRole::Float)
      os << "%" << id << " " << g.nodes[id].op << " (" << g.nodes[id].name << "): " << names[int(role[id])] << "\n";
  os << "calibration points:";
  for (int p : points) os << " %" << p;
  os << "\n";
  return os.str();
}

const char* to_string(CalibrationMode m) {
  switch (m) {
    case CalibrationMode::Max:
      return "max";
    case CalibrationMode::Percentile:
      return "percentile";
    case CalibrationMode::KL:
      return "kl";
  }
  return "?";
}

CalibrationMode parse_calibration_mode(const std::string& s) {
  if (s == "max") return CalibrationMode::Max;
  if (s == "percentile") return CalibrationMode::Percentile;
  if (s == "kl") return CalibrationMode::KL;
  LOOM_THROW(ModelError, "unknown calibration mode '", s, "' (supported: max, percentile, kl)");
}

}  // namespace loom::graph
