// Quantization, pass 3: rewrite the annotated float graph into int8 operators (or, in the
// simulated mode, into float operators with fake_quantize at the same points).
#include <algorithm>
#include <cmath>
#include <map>

#include "loom/graph/passes.h"
#include "loom/graph/quantize.h"
#include "loom/runtime/error.h"

namespace loom::graph {

namespace {

double max_abs(const NDArray& a) {
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::fabs(a.get_as_double(i)));
  return m;
}

class Realizer {
 public:
  Realizer(const Graph& g, const QuantizeAnnotation& a, const std::vector<PointCalibration>& cal, const QuantizeOptions& o)
      : src_(g), r_(g), a_(a), sim_(o.simulated) {
    for (const auto& p : cal) exponent_[p.node] = p.exponent;
    users_ = g.users();
  }

  Graph run() {
    for (int id : src_.topological_order()) {
      switch (a_.role[id]) {
        case QuantRole::Accumulate: accumulate(id); break;
        case QuantRole::Add: add(id); break;
        case QuantRole::PassThrough: pass_through(id); break;
        case QuantRole::FoldedRelu:
        case QuantRole::Float: break;
      }
    }
    // Float readers of an int8 value read it dequantized; the float originals become dead.
    for (auto& [id, q] : computed_) r_.replace_uses(id, sim_ ? q : op("dequantize", id, "_dq", {q}, Attrs().set("exponent", int64_t(exp_of_q_[id]))));
    r_.compact();
    infer_types(r_);
    return std::move(r_);
  }

 private:
  int op(const std::string& kind, int orig, const std::string& suffix, std::vector<int> inputs, Attrs attrs = {}) {
    return r_.add_op(kind, r_.unique_name(src_.node(orig).name + suffix), std::move(inputs), std::move(attrs));
  }

  int calibrated(int id) const {
    auto it = exponent_.find(id);
    if (it == exponent_.end()) LOOM_THROW(InternalError, "quantize: no calibrated exponent for %", id, " (", src_.node(id).name, ")");
    return it->second;
  }

  // The int8 version of a value (quantized once if it is a float value).
  int int8_of(int id) {
    auto it = q_.find(id);
    if (it != q_.end()) return it->second;
    int e = calibrated(id);
    int q = op(sim_ ? "fake_quantize" : "quantize", id, "_q", {id}, Attrs().set("exponent", int64_t(e)));
    q_[id] = q;
    exp_of_q_[id] = e;
    return q;
  }

  // Weights as int8 steps of 2^e (or, simulated, those steps as float).
  int weight_constant(int id, int& e) {
    const NDArray& w = src_.node(id).value;
    e = exponent_for(max_abs(w));
    NDArray q = NDArray::empty(w.shape(), sim_ ? DataType::Float(32) : DataType::Int(8));
    for (int64_t i = 0; i < w.numel(); ++i) {
      double s = std::clamp(std::round(std::ldexp(w.get_as_double(i), -e)), -128.0, 127.0);
      q.set_from_double(i, sim_ ? std::ldexp(s, e) : s);
    }
    return r_.add_constant(r_.unique_name(src_.node(id).name + "_q"), q);
  }

  // Bias in int32 at the accumulator's exponent.
  int bias_constant(int id, int e_acc) {
    const NDArray& b = src_.node(id).value;
    NDArray q = NDArray::empty(b.shape(), sim_ ? DataType::Float(32) : DataType::Int(32));
    for (int64_t i = 0; i < b.numel(); ++i) {
      double s = std::clamp(std::round(std::ldexp(b.get_as_double(i), -e_acc)), -2147483648.0, 2147483647.0);
      q.set_from_double(i, sim_ ? std::ldexp(s, e_acc) : s);
    }
    return r_.add_constant(r_.unique_name(src_.node(id).name + "_q"), q);
  }

  // The relu/clip(0, ...) folded into this node's requantization, or -1.
  int folded_relu(int id) const {
    for (int u : users_[id])
      if (a_.role[u] == QuantRole::FoldedRelu) return u;
    return -1;
  }

  // Requantizes an int32 accumulator at exponent e_acc into the int8 value of `id` (or of the
  // relu folded into it).
  void requantize(int id, int acc, int e_acc) {
    int relu = folded_relu(id);
    int out = relu >= 0 ? relu : id;
    int e = calibrated(out);
    int64_t lo = -128, hi = 127;
    if (relu >= 0) {
      lo = 0;
      const Node& rn = src_.node(relu);
      if (rn.op == "clip" && rn.attrs.has("max"))
        hi = std::clamp<int64_t>(static_cast<int64_t>(std::floor(std::ldexp(rn.attrs.get_float("max"), -e))), 0, 127);
    }
    int q = sim_ ? op("fake_quantize", out, "_rq", {acc}, Attrs().set("exponent", int64_t(e)).set("min", lo).set("max", hi))
                 : op("requantize", out, "_rq", {acc}, Attrs().set("shift", int64_t(e - e_acc)).set("min", lo).set("max", hi));
    q_[out] = computed_[out] = q;
    exp_of_q_[out] = e;
  }

  void accumulate(int id) {
    const Node n = src_.node(id);
    int x = int8_of(n.inputs[0]);
    int e_x = exp_of_q_[n.inputs[0]], e_w = 0;
    std::vector<int> in{x, weight_constant(n.inputs[1], e_w)};
    if (n.inputs.size() > 2) in.push_back(bias_constant(n.inputs[2], e_x + e_w));
    int acc = op(n.op, id, sim_ ? "_sim" : "_int8", in, n.attrs);
    requantize(id, acc, e_x + e_w);
  }

  void add(int id) {
    const Node n = src_.node(id);
    int a = int8_of(n.inputs[0]), b = int8_of(n.inputs[1]);
    int ea = exp_of_q_[n.inputs[0]], eb = exp_of_q_[n.inputs[1]], ec = std::min(ea, eb);
    int sum = sim_ ? op("add", id, "_sim", {a, b})
                   : op("add_shifted", id, "_int8", {a, b}, Attrs().set("lshift_a", int64_t(ea - ec)).set("lshift_b", int64_t(eb - ec)));
    requantize(id, sum, ec);
  }

  void pass_through(int id) {
    const Node n = src_.node(id);
    int in = n.inputs[0];
    int q = op(n.op, id, sim_ ? "_sim" : "_int8", {q_.at(in)}, n.attrs);
    q_[id] = computed_[id] = q;
    exp_of_q_[id] = exp_of_q_.at(in);
  }

  const Graph& src_;
  Graph r_;
  const QuantizeAnnotation& a_;
  bool sim_;
  std::map<int, int> exponent_;  // calibrated exponents by source node
  std::map<int, int> q_;         // source node -> its int8 (or fake-quantized) value in r_
  std::map<int, int> computed_;  // the subset of q_ computed in int8 (not quantized from float)
  std::map<int, int> exp_of_q_;  // source node -> exponent of q_
  std::vector<std::vector<int>> users_;
};

}  // namespace

Graph realize_quantization(const Graph& g, const QuantizeAnnotation& annotation, const std::vector<PointCalibration>& calibration,
                           const QuantizeOptions& options) {
  if (annotation.role.size() != g.nodes.size()) LOOM_THROW(InternalError, "quantize: the annotation is for another graph");
  return Realizer(g, annotation, calibration, options).run();
}

}  // namespace loom::graph
