// ONNX export (onnx_export.h): one walk over the graph in topological order, each node written as
// the ONNX nodes of its operator. A value is a float (or other plain) tensor, an int8 value held as
// a uint8 tensor with a zero point and an exponent, or an int32 accumulator held as the float
// tensor of its real value (what QDQ's DequantizeLinear -> Conv computes), which a requantization
// quantizes at its output's exponent.
#include "loom/frontend/onnx_export.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "loom/graph/op_attrs.h"
#include "loom/runtime/error.h"
#include "onnx_tensor.h"

namespace loom::frontend {

namespace {

using graph::Graph;
using graph::Node;
using onnx_detail::onnx_type;

struct Value {
  enum class Kind { Plain, Int8, Accumulator };
  Kind kind = Kind::Plain;
  std::string name;    // Plain: the tensor; Int8: the uint8 tensor; Accumulator: the float tensor of its real value
  int zero_point = 0;  // Int8: value = (u - zero_point) * 2^exponent
  int exponent = 0;
  // Accumulator: the real value of one unit of the int32 accumulator, one or one per output channel.
  std::vector<double> unit;
};

// ONNX operators of the same name and meaning, one input.
const std::map<std::string, std::string>& unary_ops() {
  static const std::map<std::string, std::string> m = {{"relu", "Relu"},
                                                       {"sigmoid", "Sigmoid"},
                                                       {"tanh", "Tanh"},
                                                       {"exp", "Exp"},
                                                       {"sqrt", "Sqrt"},
                                                       {"neg", "Neg"},
                                                       {"abs", "Abs"},
                                                       {"reciprocal", "Reciprocal"},
                                                       {"log", "Log"},
                                                       {"erf", "Erf"},
                                                       {"floor", "Floor"},
                                                       {"ceil", "Ceil"},
                                                       {"round", "Round"},
                                                       {"sin", "Sin"},
                                                       {"cos", "Cos"},
                                                       {"tan", "Tan"},
                                                       {"sign", "Sign"},
                                                       {"softsign", "Softsign"},
                                                       {"softplus", "Softplus"},
                                                       {"identity", "Identity"},
                                                       {"atan", "Atan"},
                                                       {"asin", "Asin"},
                                                       {"acos", "Acos"},
                                                       {"sinh", "Sinh"},
                                                       {"cosh", "Cosh"},
                                                       {"asinh", "Asinh"},
                                                       {"acosh", "Acosh"},
                                                       {"atanh", "Atanh"},
                                                       {"logical_not", "Not"},
                                                       {"is_nan", "IsNaN"},
                                                       {"hard_swish", "HardSwish"},
                                                       {"global_avg_pool2d", "GlobalAveragePool"}};
  return m;
}

// Broadcasting binary operators.
const std::map<std::string, std::string>& binary_ops() {
  static const std::map<std::string, std::string> m = {{"add", "Add"}, {"sub", "Sub"},     {"mul", "Mul"},
                                                       {"div", "Div"}, {"maximum", "Max"}, {"minimum", "Min"},
                                                       {"pow", "Pow"}, {"where", "Where"}, {"matmul", "MatMul"}};
  return m;
}

// Element-wise operators with float attributes that ONNX names alike (and defaults alike).
const std::map<std::string, std::pair<std::string, std::vector<std::string>>>& float_attr_ops() {
  static const std::map<std::string, std::pair<std::string, std::vector<std::string>>> m = {
      {"leaky_relu", {"LeakyRelu", {"alpha"}}},
      {"elu", {"Elu", {"alpha"}}},
      {"selu", {"Selu", {"alpha", "gamma"}}},
      {"celu", {"Celu", {"alpha"}}},
      {"hard_sigmoid", {"HardSigmoid", {"alpha", "beta"}}},
      {"thresholded_relu", {"ThresholdedRelu", {"alpha"}}},
      {"shrink", {"Shrink", {"lambd", "bias"}}}};
  return m;
}

const std::map<std::string, std::string>& reduce_ops() {
  static const std::map<std::string, std::string> m = {{"reduce_sum", "ReduceSum"},
                                                       {"reduce_mean", "ReduceMean"},
                                                       {"reduce_max", "ReduceMax"},
                                                       {"reduce_min", "ReduceMin"},
                                                       {"reduce_prod", "ReduceProd"},
                                                       {"reduce_l1", "ReduceL1"},
                                                       {"reduce_l2", "ReduceL2"},
                                                       {"reduce_log_sum", "ReduceLogSum"},
                                                       {"reduce_log_sum_exp", "ReduceLogSumExp"},
                                                       {"reduce_sum_square", "ReduceSumSquare"}};
  return m;
}

// Operators that move int8 values without arithmetic: they act on the uint8 tensor.
bool moves_int8(const std::string& op) {
  return op == "reshape" || op == "transpose" || op == "slice" || op == "max_pool2d" || op == "relu";
}

class Exporter {
 public:
  Exporter(const Graph& g, const graph::QuantizedScales& scales, const OnnxExportOptions& options)
      : g_(g), scales_(scales), options_(options), users_(g.users()) {}

  std::string run() {
    if (!g_.shape_vars.empty())
      LOOM_THROW(ModelError, "export: the graph has shape variables; export writes static shapes only");
    if (options_.opset < 13 || options_.opset > 18)
      LOOM_THROW(ModelError, "export: opset ", options_.opset, " is outside 13..18");
    model_.set_ir_version(8);
    model_.set_producer_name("loom");
    auto* opset = model_.add_opset_import();
    opset->set_domain("");
    opset->set_version(options_.opset);
    graph_ = model_.mutable_graph();
    graph_->set_name(g_.name.empty() ? "model" : g_.name);
    // The inputs' and outputs' names are the model's; every other tensor takes a free name.
    for (int id : g_.inputs) used_.insert(g_.node(id).name);
    for (int id : g_.outputs) used_.insert(g_.node(id).name);
    for (int id : g_.inputs) {
      const Node& n = g_.node(id);
      value_info(graph_->add_input(), n.name, n.type, "export: input '" + n.name + "'");
      values_[id] = {Value::Kind::Plain, n.name};
    }
    for (int id : g_.topological_order()) {
      const Node& n = g_.node(id);
      if (!n.is_op()) continue;
      try {
        emit(id, n);
      } catch (const ModelError& e) {
        LOOM_THROW(ModelError, "export: node '", n.name, "' (", n.op, "): ", e.what());
      }
    }
    for (int id : g_.outputs) {
      const Node& n = g_.node(id);
      auto it = values_.find(id);
      if (it != values_.end() && it->second.kind != Value::Kind::Plain)
        LOOM_THROW(ModelError, "export: output '", n.name, "' is an int8 value or accumulator (dequantize it first)");
      std::string name = plain(id);
      if (name != n.name) add("Identity", {name}, {n.name});
      value_info(graph_->add_output(), n.name, n.type, "export: output '" + n.name + "'");
    }
    std::string bytes;
    if (!model_.SerializeToString(&bytes)) LOOM_THROW(ModelError, "export: the model does not serialize");
    return bytes;
  }

 private:
  // ---- writing ONNX ----

  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int k = 1; used_.count(name); ++k) name = base + "_" + std::to_string(k);
    used_.insert(name);
    return name;
  }

  onnx::NodeProto& add(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out) {
    onnx::NodeProto* p = graph_->add_node();
    p->set_op_type(op);
    p->set_name(fresh(out.empty() ? op : out[0] + "_" + op));
    for (const std::string& s : in) p->add_input(s);
    for (const std::string& s : out) p->add_output(s);
    return *p;
  }
  // One output, named after `base`.
  std::string add1(const std::string& op, const std::vector<std::string>& in, const std::string& base,
                   const std::function<void(onnx::NodeProto&)>& attrs = {}) {
    std::string out = fresh(base);
    onnx::NodeProto& p = add(op, in, {out});
    if (attrs) attrs(p);
    return out;
  }

  static void attr_int(onnx::NodeProto& p, const std::string& name, int64_t v) {
    auto* a = p.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr_ints(onnx::NodeProto& p, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = p.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void attr_float(onnx::NodeProto& p, const std::string& name, double v) {
    auto* a = p.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(float(v));
  }
  static void attr_string(onnx::NodeProto& p, const std::string& name, const std::string& v) {
    auto* a = p.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }

  void value_info(onnx::ValueInfoProto* v, const std::string& name, const graph::TensorType& t,
                  const std::string& where) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx_type(t.dtype, where));
    auto* shape = tt->mutable_shape();
    for (int64_t d : t.shape) shape->add_dim()->set_dim_value(d);
  }

  std::string initializer(const NDArray& v, const std::string& base) {
    onnx::TensorProto* t = graph_->add_initializer();
    std::string name = fresh(base);
    t->set_name(name);
    t->set_data_type(onnx_type(v.dtype(), "constant '" + base + "'"));
    for (int64_t d : v.shape()) t->add_dims(d);
    t->set_raw_data(std::string(static_cast<const char*>(v.raw_data()), v.nbytes()));
    return name;
  }
  std::string ints(const std::vector<int64_t>& v, const std::string& base, bool scalar = false) {
    NDArray a =
        NDArray::empty(scalar ? std::vector<int64_t>{} : std::vector<int64_t>{int64_t(v.size())}, DataType::Int(64));
    std::memcpy(a.raw_data(), v.data(), v.size() * sizeof(int64_t));
    return initializer(a, base);
  }
  // Scalars shared by every node that reads them.
  std::string scalar(DataType t, double v) {
    auto key = std::make_pair(t.str(), v);
    auto it = scalars_.find(key);
    if (it != scalars_.end()) return it->second;
    NDArray a = NDArray::empty({}, t);
    a.set_from_double(0, v);
    return scalars_[key] = initializer(a, t.str() + "_" + std::to_string(v));
  }
  std::string scale(int exponent) { return scalar(DataType::Float(32), std::ldexp(1.0, exponent)); }

  // ---- values ----

  // The tensor a float (or other plain) reader takes.
  std::string plain(int id) {
    const Node& n = g_.node(id);
    if (n.is_constant()) {
      auto it = constants_.find(id);
      if (it != constants_.end()) return it->second;
      return constants_[id] = initializer(n.value, n.name);
    }
    const Value& v = values_.at(id);
    if (v.kind == Value::Kind::Int8)
      LOOM_THROW(ModelError, "'", n.name, "' is an int8 value read as a plain tensor (its reader has no int8 form)");
    return v.name;
  }

  const Value& int8_value(int id) {
    auto it = values_.find(id);
    if (it == values_.end() || it->second.kind != Value::Kind::Int8)
      LOOM_THROW(ModelError, "input '", g_.node(id).name, "' is not an int8 value");
    return it->second;
  }

  // DequantizeLinear of an int8 value at `exponent` (its own, or the one a reader's shifts give it).
  std::string dequantized(int id, int exponent) {
    const Value& v = int8_value(id);
    auto key = std::make_pair(id, exponent);
    auto it = dequantized_.find(key);
    if (it != dequantized_.end()) return it->second;
    return dequantized_[key] = add1("DequantizeLinear",
                                    {v.name, scale(exponent), scalar(DataType::UInt(8), v.zero_point)}, v.name + "_dq");
  }

  // A float tensor quantized to Loom's int8 range [lo, hi] at 2^exponent: uint8 with zero point 0
  // when lo >= 0, else 128 (int8 -128..127 exactly); a Clip where the clamp is narrower.
  Value quantized(const std::string& x, int exponent, int64_t lo, int64_t hi, const std::string& base) {
    if (lo < -128 || hi > 127 || lo > hi) LOOM_THROW(ModelError, "clamp [", lo, ", ", hi, "] is not an int8 range");
    int zp = lo >= 0 ? 0 : 128;
    std::string u8 = add1("QuantizeLinear", {x, scale(exponent), scalar(DataType::UInt(8), zp)}, base);
    if (lo + zp > 0 || hi + zp < 255)
      u8 = add1("Clip", {u8, scalar(DataType::UInt(8), double(lo + zp)), scalar(DataType::UInt(8), double(hi + zp))},
                base + "_clamp");
    return {Value::Kind::Int8, u8, zp, exponent};
  }

  int recorded_exponent(const Node& n) const {
    auto it = scales_.exponents.find(n.name);
    if (it == scales_.exponents.end())
      LOOM_THROW(ModelError, "int8 value '", n.name, "' has no exponent in the quantizer's scales");
    return it->second;
  }
  const std::vector<double>& constant_scales(const Node& c) const {
    auto it = scales_.constants.find(c.name);
    if (it == scales_.constants.end() || it->second.empty())
      LOOM_THROW(ModelError, "quantized constant '", c.name, "' has no scale in the quantizer's scales");
    return it->second;
  }

  // The exponent of int32 accumulator `id`, from its readers: a requantization's output exponent
  // less its shift, or a dequantization's exponent.
  int accumulator_exponent(int id) {
    std::optional<int> e;
    for (int u : users_[size_t(id)]) {
      const Node& r = g_.node(u);
      std::optional<int> here;
      if (r.op == "requantize") here = recorded_exponent(r) - int(r.attrs.get_int("shift"));
      if (r.op == "dequantize") here = int(r.attrs.get_int("exponent"));
      if (!here)
        LOOM_THROW(ModelError, "the int32 accumulator is read by '", r.name, "' (", r.op,
                   "), which has no QDQ form (requantize or dequantize)");
      if (e && *e != *here) LOOM_THROW(ModelError, "the readers of the int32 accumulator give it two exponents");
      e = here;
    }
    if (!e) LOOM_THROW(ModelError, "the int32 accumulator has no reader");
    return *e;
  }

  static int log2_exact(double s, const std::string& what) {
    double l = std::log2(s);
    if (!(std::fabs(l - std::round(l)) < 1e-9)) LOOM_THROW(ModelError, what, " scale ", s, " is not a power of two");
    return int(std::round(l));
  }

  // An int8 weight constant as DequantizeLinear, per tensor or per output channel (axis 0).
  std::string weight(int id, const std::vector<double>& s) {
    const Node& w = g_.node(id);
    if (!w.is_constant() || w.value.dtype() != DataType::Int(8))
      LOOM_THROW(ModelError, "weights '", w.name, "' are not an int8 constant");
    std::string q = initializer(w.value, w.name);
    return dequantize_constant(q, w.name, s, DataType::Int(8));
  }
  std::string dequantize_constant(const std::string& q, const std::string& base, const std::vector<double>& s,
                                  DataType type) {
    if (s.size() == 1)
      return add1("DequantizeLinear", {q, scalar(DataType::Float(32), s[0]), scalar(type, 0)}, base + "_dq");
    NDArray sc = NDArray::empty({int64_t(s.size())}, DataType::Float(32));
    for (size_t c = 0; c < s.size(); ++c) sc.set_from_double(int64_t(c), s[c]);
    std::string zp = initializer(NDArray::zeros({int64_t(s.size())}, type), base + "_zero_point");
    return add1("DequantizeLinear", {q, initializer(sc, base + "_scale"), zp}, base + "_dq",
                [](onnx::NodeProto& p) { attr_int(p, "axis", 0); });
  }

  // ---- operators ----

  void emit(int id, const Node& n) {
    auto in_kind = [&](size_t k) {
      auto it = values_.find(n.inputs[k]);
      return it == values_.end() ? Value::Kind::Plain : it->second.kind;
    };
    const bool int8_input = !n.inputs.empty() && in_kind(0) == Value::Kind::Int8;
    if (n.op == "quantize" || n.op == "fake_quantize") {
      Value q = quantized(plain(n.inputs[0]), int(n.attrs.get_int("exponent")), n.attrs.get_int("min", -128),
                          n.attrs.get_int("max", 127), n.name);
      values_[id] = q;
      // fake_quantize: the float value of the same steps.
      if (n.op == "fake_quantize") values_[id] = {Value::Kind::Plain, dequantized(id, q.exponent)};
      return;
    }
    if (n.op == "requantize" || n.op == "requantize_channel") {
      const Value& acc = values_.at(n.inputs[0]);
      if (acc.kind != Value::Kind::Accumulator) LOOM_THROW(ModelError, "input is not an int32 accumulator");
      const int e = recorded_exponent(n);
      std::string x = acc.name;
      if (options_.round_half_up) x = half_unit_added(n, acc, e);
      values_[id] = quantized(x, e, n.attrs.get_int("min", -128), n.attrs.get_int("max", 127), n.name);
      return;
    }
    if (n.op == "dequantize") {
      const Value& v = values_.at(n.inputs[0]);
      values_[id] = {Value::Kind::Plain, v.kind == Value::Kind::Accumulator
                                             ? v.name
                                             : dequantized(n.inputs[0], int(n.attrs.get_int("exponent")))};
      return;
    }
    if (n.op == "add_shifted") {
      int e = accumulator_exponent(id);
      std::string a = dequantized(n.inputs[0], e + int(n.attrs.get_int("lshift_a", 0)));
      std::string b = dequantized(n.inputs[1], e + int(n.attrs.get_int("lshift_b", 0)));
      values_[id] = {Value::Kind::Accumulator, add1("Add", {a, b}, n.name), 0, 0, {std::ldexp(1.0, e)}};
      return;
    }
    if ((n.op == "conv2d" || n.op == "dense") && int8_input) return int8_layer(id, n);
    if (n.op == "matmul" && int8_input) {
      // The product's exponent is its inputs' sum; a rescaled input's factor goes to the first.
      int e = accumulator_exponent(id);
      int e_b = int8_value(n.inputs[1]).exponent;
      std::string a = dequantized(n.inputs[0], e - e_b), b = dequantized(n.inputs[1], e_b);
      values_[id] = {Value::Kind::Accumulator, add1("MatMul", {a, b}, n.name), 0, 0, {std::ldexp(1.0, e)}};
      return;
    }
    if (moves_int8(n.op) && int8_input) {
      Value x = int8_value(n.inputs[0]);
      Value y = x;
      if (n.op == "relu") {
        if (x.zero_point != 0)
          y.name =
              add1("Clip", {x.name, scalar(DataType::UInt(8), x.zero_point), scalar(DataType::UInt(8), 255)}, n.name);
      } else {
        y.name = float_op(n, {x.name});
      }
      auto it = scales_.exponents.find(n.name);
      if (it != scales_.exponents.end()) y.exponent = it->second;
      values_[id] = y;
      return;
    }
    for (size_t k = 0; k < n.inputs.size(); ++k)
      if (in_kind(k) == Value::Kind::Accumulator)
        LOOM_THROW(ModelError, "input ", k, " is an int32 accumulator, which only requantize and dequantize read");
    std::vector<std::string> in;
    for (int x : n.inputs) in.push_back(plain(x));
    values_[id] = {Value::Kind::Plain, float_op(n, in)};
  }

  // conv2d/dense of an int8 input and int8 weights (+ int32 bias): DequantizeLinear of each, then
  // the float operator, whose output holds the accumulator's real value.
  void int8_layer(int id, const Node& n) {
    const Node& w = g_.node(n.inputs[1]);
    const std::vector<double>& s = constant_scales(w);
    // The input's exponent as this layer's shifts read it (a rescaled input differs from its
    // producer's): from the requantization of the accumulator, through the weights' scales.
    int e_x = 0;
    if (users_[size_t(id)].size() == 1 && g_.node(users_[size_t(id)][0]).op == "requantize_channel") {
      const Node& r = g_.node(users_[size_t(id)][0]);
      const Node& m = g_.node(r.inputs[1]);
      if (!m.is_constant() || m.value.numel() != int64_t(s.size()))
        LOOM_THROW(ModelError, "requantize_channel '", r.name, "' has no constant multiplier per weight scale");
      int64_t c = 0;
      for (int64_t k = 1; k < m.value.numel(); ++k)
        if (m.value.get_as_double(k) > m.value.get_as_double(c)) c = k;
      // Channel c's accumulator times 2^(e_x - e_out) * s_c is its output's steps: M_c / 2^shift.
      e_x = int(std::lround(recorded_exponent(r) + std::log2(m.value.get_as_double(c) / s[size_t(c)]) -
                            double(r.attrs.get_int("shift"))));
    } else {
      if (s.size() != 1) LOOM_THROW(ModelError, "per-channel weights need a requantize_channel reader");
      e_x = accumulator_exponent(id) - log2_exact(s[0], "weight");
    }
    // One accumulator unit per output channel: the input's scale times the weights'.
    std::vector<double> unit;
    for (double sc : s) unit.push_back(std::ldexp(sc, e_x));
    std::vector<std::string> in{dequantized(n.inputs[0], e_x), weight(n.inputs[1], s)};
    if (n.inputs.size() > 2) {
      const Node& b = g_.node(n.inputs[2]);
      if (!b.is_constant() || b.value.dtype() != DataType::Int(32))
        LOOM_THROW(ModelError, "bias '", b.name, "' is not an int32 constant");
      // ONNX Runtime's int8 kernels take the bias at the accumulator's unit.
      const std::vector<double>& recorded = constant_scales(b);
      for (size_t c = 0; c < unit.size(); ++c)
        if (recorded.size() != unit.size() || std::fabs(recorded[c] - unit[c]) > 1e-9 * unit[c])
          LOOM_THROW(ModelError, "bias '", b.name, "' is not at the input's scale times the weights'");
      in.push_back(dequantize_constant(initializer(b.value, b.name), b.name, unit, DataType::Int(32)));
    }
    values_[id] = {Value::Kind::Accumulator, float_op(n, in), 0, 0, unit};
  }

  // round_half_up: the accumulator plus half of its unit where the requantization rounds (a right
  // shift), so that no value is a tie of ONNX's rounding and the nearest is Loom's rounding up.
  std::string half_unit_added(const Node& r, const Value& acc, int e_out) {
    std::vector<double> half(acc.unit.size());
    for (size_t c = 0; c < half.size(); ++c) {
      int shift = e_out - log2_exact(acc.unit[c], "with round_half_up, the accumulator's");
      half[c] = shift > 0 ? acc.unit[c] / 2 : 0.0;
    }
    if (half.size() == 1)
      return half[0] == 0 ? acc.name : add1("Add", {acc.name, scalar(DataType::Float(32), half[0])}, r.name + "_half");
    // Per output channel, broadcast along axis 1 of an NC or NCHW accumulator.
    const size_t rank = g_.type_of(r.inputs[0]).shape.size();
    std::vector<int64_t> shape{int64_t(half.size())};
    for (size_t k = 2; k < rank; ++k) shape.push_back(1);
    NDArray h = NDArray::empty(shape, DataType::Float(32));
    for (size_t c = 0; c < half.size(); ++c) h.set_from_double(int64_t(c), half[c]);
    return add1("Add", {acc.name, initializer(h, r.name + "_half")}, r.name + "_half");
  }

  // The ONNX form of a float operator (or of an int8 data movement, on uint8 tensors) over the
  // tensors `in`; returns its output.
  std::string float_op(const Node& n, const std::vector<std::string>& in) {
    const graph::Attrs& a = n.attrs;
    const std::string& op = n.op;
    if (auto it = unary_ops().find(op); it != unary_ops().end()) return add1(it->second, in, n.name);
    if (auto it = binary_ops().find(op); it != binary_ops().end()) return add1(it->second, in, n.name);
    if (auto it = float_attr_ops().find(op); it != float_attr_ops().end())
      return add1(it->second.first, in, n.name, [&](onnx::NodeProto& p) {
        for (const std::string& key : it->second.second)
          if (a.has(key)) attr_float(p, key, a.get_float(key));
      });
    if (auto it = reduce_ops().find(op); it != reduce_ops().end()) {
      std::vector<int64_t> axes = a.get_ints("axes", {});
      std::vector<std::string> args = in;
      // ReduceSum takes its axes as an input from opset 13, the others from opset 18.
      const bool axes_input = op == "reduce_sum" || options_.opset >= 18;
      if (axes_input && !axes.empty()) args.push_back(ints(axes, n.name + "_axes"));
      return add1(it->second, args, n.name, [&](onnx::NodeProto& p) {
        if (!axes_input && !axes.empty()) attr_ints(p, "axes", axes);
        attr_int(p, "keepdims", a.get_int("keepdims", 1));
      });
    }
    if (op == "conv2d") {
      const graph::ConvAttrs c = graph::ConvAttrs::from(n);
      if (c.oc_block != 0 || c.interleaved_groups || a.get_string("layout", "NCHW") != "NCHW")
        LOOM_THROW(ModelError, "the convolution is in a packed layout (export the graph before it is built)");
      return add1("Conv", in, n.name, [&](onnx::NodeProto& p) {
        attr_ints(p, "strides", {c.strides[0], c.strides[1]});
        attr_ints(p, "pads", {c.pads[0], c.pads[1], c.pads[2], c.pads[3]});
        attr_ints(p, "dilations", {c.dilations[0], c.dilations[1]});
        attr_int(p, "group", c.groups);
      });
    }
    if (op == "dense") {
      if (a.get_int("n_block", 0) != 0)
        LOOM_THROW(ModelError, "the weights are packed (export the graph before it is built)");
      return add1("Gemm", in, n.name, [](onnx::NodeProto& p) { attr_int(p, "transB", 1); });
    }
    if (op == "max_pool2d" || op == "avg_pool2d") {
      const graph::PoolAttrs pa = graph::PoolAttrs::from(n);
      const bool max = op == "max_pool2d";
      if (!max && (pa.dilations[0] != 1 || pa.dilations[1] != 1))
        LOOM_THROW(ModelError, "average pooling with dilations has no ONNX form before opset 19");
      return add1(max ? "MaxPool" : "AveragePool", in, n.name, [&](onnx::NodeProto& p) {
        attr_ints(p, "kernel_shape", {pa.kernel[0], pa.kernel[1]});
        attr_ints(p, "strides", {pa.strides[0], pa.strides[1]});
        attr_ints(p, "pads", {pa.pads[0], pa.pads[1], pa.pads[2], pa.pads[3]});
        if (max) attr_ints(p, "dilations", {pa.dilations[0], pa.dilations[1]});
        attr_int(p, "ceil_mode", pa.ceil_mode ? 1 : 0);
        if (!max) attr_int(p, "count_include_pad", pa.count_include_pad ? 1 : 0);
      });
    }
    if (op == "softmax")
      return add1("Softmax", in, n.name, [&](onnx::NodeProto& p) { attr_int(p, "axis", a.get_int("axis", -1)); });
    if (op == "batch_norm")
      return add1("BatchNormalization", in, n.name,
                  [&](onnx::NodeProto& p) { attr_float(p, "epsilon", a.get_float("epsilon", 1e-5)); });
    if (op == "clip") {
      DataType t = g_.type_of(n.inputs[0]).dtype;
      return add1(
          "Clip",
          {in[0], a.has("min") ? scalar(t, a.get_float("min")) : "", a.has("max") ? scalar(t, a.get_float("max")) : ""},
          n.name);
    }
    if (op == "reshape") return add1("Reshape", {in[0], ints(a.get_ints("shape"), n.name + "_shape")}, n.name);
    if (op == "expand") return add1("Expand", {in[0], ints(a.get_ints("shape"), n.name + "_shape")}, n.name);
    if (op == "tile") return add1("Tile", {in[0], ints(a.get_ints("repeats"), n.name + "_repeats")}, n.name);
    if (op == "transpose")
      return add1("Transpose", in, n.name, [&](onnx::NodeProto& p) { attr_ints(p, "perm", a.get_ints("perm")); });
    if (op == "concat")
      return add1("Concat", in, n.name, [&](onnx::NodeProto& p) { attr_int(p, "axis", a.get_int("axis")); });
    if (op == "slice")
      return add1("Slice",
                  {in[0], ints(a.get_ints("starts"), n.name + "_starts"), ints(a.get_ints("ends"), n.name + "_ends"),
                   ints(a.get_ints("axes"), n.name + "_axes"), ints(a.get_ints("steps"), n.name + "_steps")},
                  n.name);
    if (op == "gather" || op == "gather_elements")
      return add1(op == "gather" ? "Gather" : "GatherElements", in, n.name,
                  [&](onnx::NodeProto& p) { attr_int(p, "axis", a.get_int("axis", 0)); });
    if (op == "cast")
      return add1("Cast", in, n.name, [&](onnx::NodeProto& p) {
        attr_int(p, "to", onnx_type(DataType::parse(a.get_string("to")), "the cast's type"));
      });
    if (op == "pad") {
      DataType t = g_.type_of(n.inputs[0]).dtype;
      return add1("Pad", {in[0], ints(a.get_ints("pads"), n.name + "_pads"), scalar(t, a.get_float("value", 0))},
                  n.name, [&](onnx::NodeProto& p) { attr_string(p, "mode", a.get_string("mode", "constant")); });
    }
    if (op == "cumsum")
      return add1("CumSum", {in[0], ints({a.get_int("axis", 0)}, n.name + "_axis", true)}, n.name,
                  [&](onnx::NodeProto& p) {
                    attr_int(p, "exclusive", a.get_int("exclusive", 0));
                    attr_int(p, "reverse", a.get_int("reverse", 0));
                  });
    if (op == "trilu")
      return add1("Trilu", {in[0], ints({a.get_int("k", 0)}, n.name + "_k", true)}, n.name,
                  [&](onnx::NodeProto& p) { attr_int(p, "upper", a.get_int("upper", 1)); });
    if (op == "arg_max" || op == "arg_min")
      return add1(op == "arg_max" ? "ArgMax" : "ArgMin", in, n.name, [&](onnx::NodeProto& p) {
        attr_int(p, "axis", a.get_int("axis", 0));
        attr_int(p, "keepdims", a.get_int("keepdims", 1));
        attr_int(p, "select_last_index", a.get_int("select_last_index", 0));
      });
    if (op == "einsum")
      return add1("Einsum", in, n.name,
                  [&](onnx::NodeProto& p) { attr_string(p, "equation", a.get_string("equation")); });
    if (op == "is_inf")
      return add1("IsInf", in, n.name, [&](onnx::NodeProto& p) {
        attr_int(p, "detect_positive", a.get_int("detect_positive", 1));
        attr_int(p, "detect_negative", a.get_int("detect_negative", 1));
      });
    if (op == "mod")
      return add1("Mod", in, n.name, [&](onnx::NodeProto& p) { attr_int(p, "fmod", a.get_int("fmod", 0)); });
    if (op == "gather_nd")
      return add1("GatherND", in, n.name,
                  [&](onnx::NodeProto& p) { attr_int(p, "batch_dims", a.get_int("batch_dims", 0)); });
    LOOM_THROW(ModelError, "operator '", op, "' has no ONNX form in the exporter");
  }

  const Graph& g_;
  const graph::QuantizedScales& scales_;
  const OnnxExportOptions& options_;
  std::vector<std::vector<int>> users_;
  onnx::ModelProto model_;
  onnx::GraphProto* graph_ = nullptr;
  std::set<std::string> used_;            // tensor and node names taken
  std::map<int, Value> values_;           // by graph node
  std::map<int, std::string> constants_;  // graph constants read as plain tensors
  std::map<std::pair<std::string, double>, std::string> scalars_;
  std::map<std::pair<int, int>, std::string> dequantized_;  // (int8 value, exponent) -> its DequantizeLinear
};

}  // namespace

std::string export_onnx(const graph::Graph& g, const graph::QuantizedScales& scales, const OnnxExportOptions& options) {
  return Exporter(g, scales, options).run();
}

}  // namespace loom::frontend
