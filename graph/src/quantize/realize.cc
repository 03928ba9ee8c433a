// Quantization, pass 3: rewrite the annotated float graph into int8 operators (or, in the
// simulated mode, into float operators with fake_quantize at the same points).
#include <algorithm>
#include <climits>
#include <cmath>
#include <map>

#include "loom/graph/op_registry.h"
#include "loom/graph/passes.h"
#include "loom/graph/quantize.h"
#include "loom/runtime/error.h"
#include "power_of_two.h"

namespace loom::graph {

namespace {

double max_abs(const NDArray& a) {
  double m = 0;
  for (int64_t i = 0, n = a.numel(); i < n; ++i) m = std::max(m, std::fabs(a.get_as_double(i)));
  return m;
}

// The int8 (or, simulated, fake-quantized) version of a source value in the realized graph.
struct Int8Value {
  int node = -1;          // in the realized graph
  int exponent = 0;       // value = q * 2^exponent
  bool computed = false;  // produced by int8 arithmetic (not quantized from the float value)
};

class Realizer {
 public:
  Realizer(const Graph& g, const QuantizeAnnotation& a, const std::vector<PointCalibration>& cal,
           const QuantizeOptions& o, QuantizedScales* scales)
      : src_(g),
        r_(g),
        a_(a),
        sim_(o.simulated),
        per_channel_(o.per_channel),
        channel_exponents_(o.channel_exponents()),
        options_(o),
        wmax_(o.weight_levels()),
        amax_(o.activation_levels()),
        scales_(scales) {
    for (const auto& p : cal) exponent_[p.node] = p.exponent;
    users_ = g.users();
  }

  Graph run() {
    check_layer_widths();
    for (int id : src_.topological_order()) {
      switch (a_.role[id]) {
        case QuantRole::Accumulate:
          accumulate(id);
          break;
        case QuantRole::Add:
          add(id);
          break;
        case QuantRole::PassThrough:
          pass_through(id);
          break;
        case QuantRole::Product:
          product(id);
          break;
        case QuantRole::Rescale:
          rescale(id);
          break;
        case QuantRole::FoldedRelu:
        case QuantRole::Float:
          break;
      }
    }
    // Float readers of an int8 value read it dequantized; the float originals become dead.
    for (auto& [id, v] : int8_) {
      if (!v.computed) continue;
      r_.replace_uses(
          id, sim_ ? v.node : op("dequantize", id, "_dq", {v.node}, Attrs().set("exponent", int64_t(v.exponent))));
    }
    r_.compact();
    r_.name_outputs(src_.output_names());
    infer_types(r_);
    return std::move(r_);
  }

 private:
  int op(const std::string& kind, int orig, const std::string& suffix, std::vector<int> inputs, Attrs attrs = {}) {
    // The original's symbolic attributes (a reshape's target over shape variables) go with the
    // attributes copied from it.
    const graph::Node& o = src_.node(orig);
    std::map<std::string, runtime::ShapeExpr> sym;
    for (const auto& [key, dims] : o.sym_attrs)
      if (attrs.has(key) && o.attrs.has(key) && attrs.values().at(key) == o.attrs.values().at(key)) sym[key] = dims;
    int id = r_.add_op(kind, r_.unique_name(o.name + suffix), std::move(inputs), std::move(attrs));
    r_.node(id).sym_attrs = std::move(sym);
    return id;
  }

  // The scales an export writes beside the integers (QuantizedScales): a value keeps its
  // producer's exponent (a rescaled alias of it is not recorded).
  int remember(int node, int e) {
    if (scales_) scales_->exponents.emplace(r_.node(node).name, e);
    return node;
  }
  int remember_constant(int node, std::vector<double> scale) {
    if (scales_) scales_->constants[r_.node(node).name] = std::move(scale);
    return node;
  }

  int calibrated(int id) const {
    auto it = exponent_.find(id);
    if (it == exponent_.end())
      LOOM_THROW(InternalError, "quantize: no calibrated exponent for %", id, " (", src_.node(id).name, ")");
    return it->second;
  }

  // The int8 version of a value (quantized once if it is a float value).
  const Int8Value& int8_of(int id) {
    auto it = int8_.find(id);
    if (it != int8_.end()) return it->second;
    int e = calibrated(id);
    Attrs attrs = Attrs().set("exponent", int64_t(e));
    if (amax_ != 127) attrs.set("min", int64_t(-amax_ - 1)).set("max", int64_t(amax_));
    int q = remember(op(sim_ ? "fake_quantize" : "quantize", id, "_q", {id}, attrs), e);
    return int8_[id] = {q, e, false};
  }

  // Constant `id` as rounded steps of 2^e clamped to the range of `type` (or, simulated, those
  // steps as float): e is one exponent for the whole constant, or one per slice of dimension 0
  // (per output channel).
  int steps_constant(int id, const std::vector<int>& e, DataType type, const std::string& suffix) {
    const NDArray& v = src_.node(id).value;
    const double hi = type == DataType::Int(8) ? double(wmax_) : 2147483647.0, lo = -hi - 1;
    const int64_t per = v.numel() / std::max<int64_t>(int64_t(e.size()), 1);
    NDArray q = NDArray::empty(v.shape(), sim_ ? DataType::Float(32) : type);
    for (int64_t i = 0, n = v.numel(); i < n; ++i) {
      const int ei = e[e.size() == 1 ? 0 : size_t(i / per)];
      double s = std::clamp(std::round(std::ldexp(v.get_as_double(i), -ei)), lo, hi);
      q.set_from_double(i, sim_ ? std::ldexp(s, ei) : s);
    }
    std::vector<double> scale;
    for (int ei : e) scale.push_back(std::ldexp(1.0, ei));
    return remember_constant(r_.add_constant(r_.unique_name(src_.node(id).name + suffix), q), std::move(scale));
  }

  // Weights as steps of 2^e within weight_bits (or, simulated, those steps as float).
  int weight_constant(int id, int& e) {
    e = exponent_for(max_abs(src_.node(id).value), wmax_);
    return steps_constant(id, {e}, DataType::Int(8), "_q");
  }

  // Bias in int32 at the accumulator's exponent.
  int bias_constant(int id, int e_acc) { return steps_constant(id, {e_acc}, DataType::Int(32), "_q"); }

  // The relu/clip(0, ...) folded into this node's requantization, or -1.
  int folded_relu(int id) const {
    for (int u : users_[id])
      if (a_.role[u] == QuantRole::FoldedRelu) return u;
    return -1;
  }

  // The clamp of a requantization at exponent e to activation_bits: [0, max] with a folded clamp
  // from 0.
  std::pair<int64_t, int64_t> clamp_of(int relu, int e) const {
    int64_t lo = -amax_ - 1, hi = amax_;
    if (relu >= 0) {
      lo = 0;
      const Node& rn = src_.node(relu);
      double max = op_def(rn.op).clamp(rn).hi;
      if (std::isfinite(max))
        hi = static_cast<int64_t>(std::clamp(std::floor(std::ldexp(max, -e)), 0.0, double(amax_)));
    }
    return {lo, hi};
  }

  // Where the requantization of node `id` goes: the value it produces (the relu folded into it, or
  // the node itself), that value's exponent and its int8 clamp.
  struct RequantTarget {
    int out, e;
    int64_t lo, hi;
  };
  RequantTarget requant_target(int id) const {
    int relu = folded_relu(id);
    int out = relu >= 0 ? relu : id;
    int e = calibrated(out);
    auto [lo, hi] = clamp_of(relu, e);
    return {out, e, lo, hi};
  }

  // Requantizes an int32 accumulator at exponent e_acc into the int8 value of `id` (or of the
  // relu folded into it).
  void requantize(int id, int acc, int e_acc) {
    auto [out, e, lo, hi] = requant_target(id);
    int q =
        sim_ ? op("fake_quantize", out, "_rq", {acc}, Attrs().set("exponent", int64_t(e)).set("min", lo).set("max", hi))
             : op("requantize", out, "_rq", {acc},
                  Attrs().set("shift", int64_t(e - e_acc)).set("min", lo).set("max", hi));
    int8_[out] = {remember(q, e), e, true};
  }

  // Weights as steps of a scale per output channel (dimension 0): max |w_c| / (2^(weight_bits-1) - 1).
  int weight_per_channel(int id, std::vector<double>& scale) {
    const NDArray& w = src_.node(id).value;
    int64_t C = w.shape()[0], per = w.numel() / C;
    scale.assign(size_t(C), 1.0);
    NDArray q = NDArray::empty(w.shape(), sim_ ? DataType::Float(32) : DataType::Int(8));
    for (int64_t c = 0; c < C; ++c) {
      double m = 0;
      for (int64_t k = 0; k < per; ++k) m = std::max(m, std::fabs(w.get_as_double(c * per + k)));
      scale[size_t(c)] = m > 0 ? m / wmax_ : 1.0;
      for (int64_t k = 0; k < per; ++k) {
        double v = std::clamp(std::round(w.get_as_double(c * per + k) / scale[size_t(c)]), -wmax_ - 1.0, double(wmax_));
        q.set_from_double(c * per + k, sim_ ? v * scale[size_t(c)] : v);
      }
    }
    return remember_constant(r_.add_constant(r_.unique_name(src_.node(id).name + "_qc"), q), scale);
  }

  // conv2d/dense with per-channel weight scales: the accumulator of channel c is at scale
  // 2^e_x * s_c; requantize_channel multiplies by M_c = round(2^(e_x - e_out) * s_c * 2^S) and
  // shifts right by S (S as large as keeps every M_c within int32).
  void accumulate_per_channel(int id) {
    const Node n = src_.node(id);
    Int8Value x = int8_of(n.inputs[0]);
    std::vector<double> s_w;
    std::vector<int> in{x.node, weight_per_channel(n.inputs[1], s_w)};
    if (n.inputs.size() > 2) {
      const NDArray& b = src_.node(n.inputs[2]).value;
      NDArray q = NDArray::empty(b.shape(), sim_ ? DataType::Float(32) : DataType::Int(32));
      for (int64_t c = 0; c < b.numel(); ++c)
        q.set_from_double(
            c, sim_ ? b.get_as_double(c)
                    : std::clamp(std::round(b.get_as_double(c) / (std::ldexp(1.0, x.exponent) * s_w[size_t(c)])),
                                 -2147483648.0, 2147483647.0));
      std::vector<double> bias_scale;
      for (double s : s_w) bias_scale.push_back(std::ldexp(s, x.exponent));
      in.push_back(
          remember_constant(r_.add_constant(r_.unique_name(src_.node(n.inputs[2]).name + "_qc"), q), bias_scale));
    }
    int acc = op(n.op, id, sim_ ? "_sim" : "_int8", in, n.attrs);
    auto [out, e, lo, hi] = requant_target(id);
    if (sim_) {
      int8_[out] = {remember(op("fake_quantize", out, "_rq", {acc},
                                Attrs().set("exponent", int64_t(e)).set("min", lo).set("max", hi)),
                             e),
                    e, true};
      return;
    }
    double max_r = 0;
    for (double sc : s_w) max_r = std::max(max_r, std::ldexp(sc, x.exponent - e));
    int S = std::clamp(int(std::floor(std::log2(2147483647.0 / max_r))), 1, 62);
    NDArray m = NDArray::empty({int64_t(s_w.size())}, DataType::Int(32));
    for (size_t c = 0; c < s_w.size(); ++c)
      m.set_from_double(int64_t(c), std::round(std::ldexp(s_w[c], x.exponent - e + S)));
    int mult = r_.add_constant(r_.unique_name(n.name + "_multipliers"), m);
    int q = op("requantize_channel", out, "_rq", {acc, mult},
               Attrs().set("shift", int64_t(S)).set("min", lo).set("max", hi));
    int8_[out] = {remember(q, e), e, true};
  }

  // conv2d/dense with a power-of-two weight step per output channel, 2^e_c: the accumulator of
  // channel c is at exponent e_x + e_c and shifts right by s_c = e_out - e_x - e_c, written as
  // requantize_channel with multipliers 2^(S - s_c) and shift S = max(1, max s_c) (exactly that
  // shift, rounded half up; requantize_channel shifts by at least 1). A channel of all-zero weights
  // takes the largest channel's step; channels of weights over 2^30 times smaller than the largest,
  // or whose shift would pass 30 (the accelerator's), take a coarser step: their outputs round to
  // about zero either way, and every multiplier fits int32.
  void accumulate_channel_exponents(int id) {
    const Node n = src_.node(id);
    const NDArray& w = src_.node(n.inputs[1]).value;
    const int64_t C = w.shape().empty() ? 0 : w.shape()[0], per = w.numel() / std::max<int64_t>(C, 1);
    if (C == 0) return accumulate_per_tensor(id);
    Int8Value x = int8_of(n.inputs[0]);
    auto [out, e, lo, hi] = requant_target(id);
    std::vector<int> e_w(static_cast<size_t>(C));
    std::vector<bool> zero(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) {
      double m = 0;
      for (int64_t k = 0; k < per; ++k) m = std::max(m, std::fabs(w.get_as_double(c * per + k)));
      e_w[size_t(c)] = exponent_for(m, wmax_);
      zero[size_t(c)] = !(m > 0);
    }
    int e_top = INT32_MIN;
    for (int64_t c = 0; c < C; ++c)
      if (!zero[size_t(c)]) e_top = std::max(e_top, e_w[size_t(c)]);
    if (e_top == INT32_MIN) e_top = e_w[0];  // every weight zero
    for (int64_t c = 0; c < C; ++c)
      e_w[size_t(c)] = zero[size_t(c)] ? e_top : std::max({e_w[size_t(c)], e_top - 30, e - x.exponent - 30});
    std::vector<int> in{x.node, steps_constant(n.inputs[1], e_w, DataType::Int(8), "_qc")};
    if (n.inputs.size() > 2) {
      std::vector<int> e_acc = e_w;
      for (int& ec : e_acc) ec += x.exponent;
      in.push_back(steps_constant(n.inputs[2], e_acc, DataType::Int(32), "_qc"));
    }
    int acc = op(n.op, id, sim_ ? "_sim" : "_int8", in, n.attrs);
    if (sim_) {
      int8_[out] = {remember(op("fake_quantize", out, "_rq", {acc},
                                Attrs().set("exponent", int64_t(e)).set("min", lo).set("max", hi)),
                             e),
                    e, true};
      return;
    }
    std::vector<int> shift(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) shift[size_t(c)] = e - x.exponent - e_w[size_t(c)];
    const int S = std::max(1, *std::max_element(shift.begin(), shift.end()));
    NDArray m = NDArray::empty({C}, DataType::Int(32));
    for (int64_t c = 0; c < C; ++c) {
      if (S - shift[size_t(c)] > 30)
        LOOM_THROW(ModelError, "quantize: layer '", n.name, "' would shift channel ", c, "'s accumulator left by ",
                   -shift[size_t(c)],
                   " bits into its output; its weights are too large for per-channel exponents "
                   "(use per-tensor weight exponents)");
      m.set_from_double(c, std::ldexp(1.0, S - shift[size_t(c)]));
    }
    int mult = r_.add_constant(r_.unique_name(n.name + "_multipliers"), m);
    int8_[out] = {remember(op("requantize_channel", out, "_rq", {acc, mult},
                              Attrs().set("shift", int64_t(S)).set("min", lo).set("max", hi)),
                           e),
                  e, true};
  }

  // Every layer given its own width is a quantized conv2d/dense layer of the graph.
  void check_layer_widths() const {
    std::string layers;
    for (size_t id = 0; id < src_.nodes.size(); ++id)
      if (a_.role[id] == QuantRole::Accumulate) layers += (layers.empty() ? "" : ", ") + src_.node(int(id)).name;
    for (const auto& [name, bits] : options_.layer_weight_bits) {
      bool found = false;
      for (size_t id = 0; id < src_.nodes.size() && !found; ++id)
        found = a_.role[id] == QuantRole::Accumulate && src_.node(int(id)).name == name;
      if (!found)
        LOOM_THROW(ModelError, "quantize: layer '", name, "' is given ", bits,
                   "-bit weights but is no quantized conv2d/dense layer of the model; those are: ", layers);
    }
  }

  void accumulate(int id) {
    wmax_ = options_.weight_levels(options_.weight_bits_of(src_.node(id).name));
    if (per_channel_) return accumulate_per_channel(id);
    if (channel_exponents_) return accumulate_channel_exponents(id);
    accumulate_per_tensor(id);
  }

  void accumulate_per_tensor(int id) {
    const Node n = src_.node(id);
    Int8Value x = int8_of(n.inputs[0]);
    int e_x = x.exponent, e_w = 0;
    std::vector<int> in{x.node, weight_constant(n.inputs[1], e_w)};
    if (n.inputs.size() > 2) in.push_back(bias_constant(n.inputs[2], e_x + e_w));
    int acc = op(n.op, id, sim_ ? "_sim" : "_int8", in, n.attrs);
    requantize(id, acc, e_x + e_w);
  }

  void add(int id) {
    const Node n = src_.node(id);
    Int8Value a = int8_of(n.inputs[0]), b = int8_of(n.inputs[1]);
    int ec = std::min(a.exponent, b.exponent);
    int sum = sim_ ? op("add", id, "_sim", {a.node, b.node})
                   : op("add_shifted", id, "_int8", {a.node, b.node},
                        Attrs().set("lshift_a", int64_t(a.exponent - ec)).set("lshift_b", int64_t(b.exponent - ec)));
    requantize(id, sum, ec);
  }

  // a x b of two activations: int8 x int8 accumulated in int32 at exponent e_a + e_b.
  void product(int id) {
    const Node n = src_.node(id);
    Int8Value a = int8_of(n.inputs[0]), b = int8_of(n.inputs[1]);
    int acc = op(n.op, id, sim_ ? "_sim" : "_int8", {a.node, b.node}, n.attrs);
    requantize(id, acc, a.exponent + b.exponent);
  }

  // x * 2^k: the same int8 values (no node) at exponent e + k.
  void rescale(int id) {
    const Node n = src_.node(id);
    Int8Value x = int8_.at(n.inputs[0]);
    int k = *power_of_two_scale(src_, n);
    // Simulated: the fake-quantized float value times the constant.
    int8_[id] = {sim_ ? op(n.op, id, "_sim", {x.node, n.inputs[1]}, n.attrs) : x.node, x.exponent + k, true};
  }

  void pass_through(int id) {
    const Node n = src_.node(id);
    int in = n.inputs[0];
    const Int8Value& x = int8_.at(in);
    int8_[id] = {remember(op(n.op, id, sim_ ? "_sim" : "_int8", {x.node}, n.attrs), x.exponent), x.exponent, true};
  }

  const Graph& src_;
  Graph r_;
  const QuantizeAnnotation& a_;
  bool sim_, per_channel_, channel_exponents_;
  const QuantizeOptions& options_;
  int wmax_, amax_;  // the largest weight (of the layer being realized) and activation magnitudes (127 at 8 bits)
  QuantizedScales* scales_;        // null: not recorded
  std::map<int, int> exponent_;    // calibrated exponents by source node
  std::map<int, Int8Value> int8_;  // by source node
  std::vector<std::vector<int>> users_;
};

}  // namespace

Graph realize_quantization(const Graph& g, const QuantizeAnnotation& annotation,
                           const std::vector<PointCalibration>& calibration, const QuantizeOptions& options,
                           QuantizedScales* scales) {
  if (annotation.role.size() != g.nodes.size())
    LOOM_THROW(InternalError, "quantize: the annotation is for another graph");
  return Realizer(g, annotation, calibration, options, scales).run();
}

}  // namespace loom::graph
