#include "loom/frontend/onnx.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "loom/graph/op_registry.h"
#include "loom/runtime/error.h"
#include "onnx_tensor.h"

namespace loom::frontend {

using namespace onnx_detail;
using graph::Attrs;
using graph::Graph;
using graph::TensorType;
using Shape = std::vector<int64_t>;

namespace {

class Importer;
using Handler = std::function<void(Importer&, const onnx::NodeProto&)>;
struct OpInfo {
  std::vector<std::string> attrs;  // attributes the importer understands (others are errors)
  Handler handler;
  // The oldest opset whose form of the operator the handler reads. Later changes up to opset 18
  // are handled (by opset where the meaning changed) or are additions it need not read (types);
  // an older form (attributes where inputs are now, other defaults) is refused by name.
  int since = 11;
};
const std::map<std::string, OpInfo>& handlers();

inline constexpr int kNewestOpset = 18;

class Importer {
 public:
  Importer(std::string origin, std::string base_dir, const OnnxImportOptions& opts)
      : origin_(std::move(origin)), base_dir_(std::move(base_dir)), opts_(opts) {}

  Graph run(const onnx::ModelProto& model) {
    opset_ = 0;
    for (auto& o : model.opset_import())
      if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version();
    if (opset_ == 0) LOOM_THROW(ModelError, origin_, ": the model imports no opset of the default ONNX domain");
    if (opset_ > kNewestOpset)
      LOOM_THROW(ModelError, origin_, ": ONNX opset ", opset_, " is newer than this importer reads (up to ",
                 kNewestOpset, "; re-export or convert the model)");
    const onnx::GraphProto& gp = model.graph();
    g_.name = gp.name().empty() ? "model" : gp.name();
    for (auto& init : gp.initializer())
      define(init.name(), g_.add_constant(init.name(), tensor_value(init, base_dir_,
                                                                    origin_ + ": initializer '" + init.name() + "'")));
    for (auto& in : gp.input()) {
      if (values_.count(in.name())) continue;  // an initializer also listed as input (older exporters)
      define(in.name(), g_.add_input(in.name(), input_type(in)));
    }
    // ONNX requires topological order; sort anyway so hand-made graphs import, and find cycles.
    for (int idx : node_order(gp)) import_node(gp.node(idx));
    for (auto& out : gp.output()) g_.outputs.push_back(value(out.name(), "graph output"));
    g_.verify();
    return std::move(g_);
  }

  // ---- helpers used by the handlers ----
  int opset() const { return opset_; }
  std::string where(const onnx::NodeProto& n) const {
    return origin_ + ": node '" + node_name(n) + "' (" + n.op_type() + ")";
  }
  static std::string node_name(const onnx::NodeProto& n) {
    return !n.name().empty() ? n.name() : n.output_size() > 0 ? n.output(0) : std::string("<unnamed>");
  }

  int input(const onnx::NodeProto& n, int i) {
    if (i >= n.input_size() || n.input(i).empty()) LOOM_THROW(ModelError, where(n), ": missing input ", i);
    return value(n.input(i), where(n));
  }
  bool has_input(const onnx::NodeProto& n, int i) const { return i < n.input_size() && !n.input(i).empty(); }
  const TensorType& type(int id) const { return g_.type_of(id); }
  bool is_const(int id) const { return g_.node(id).is_constant(); }
  const NDArray& constant(const onnx::NodeProto& n, int i) {
    int id = input(n, i);
    if (!is_const(id))
      LOOM_THROW(ModelError, where(n), ": input ", i, " ('", n.input(i),
                 "') must be a constant (computed at import), but depends on the model's inputs");
    return g_.node(id).value;
  }
  std::vector<int64_t> const_ints(const onnx::NodeProto& n, int i) { return int_values(constant(n, i)); }

  // Adds a graph operator and infers its type at once (importers of later nodes need shapes).
  int add(const onnx::NodeProto& n, const std::string& op, std::vector<int> inputs, Attrs attrs = {},
          const std::string& suffix = "") {
    int id = g_.add_op(op, g_.unique_name(node_name(n) + suffix), std::move(inputs), std::move(attrs));
    graph::Node& node = g_.node(id);
    const graph::OpDef& def = graph::op_def(op);
    std::vector<TensorType> in;
    for (int i : node.inputs) in.push_back(g_.type_of(i));
    try {
      node.type = def.infer_checked(node, in);
    } catch (const Error& e) {
      LOOM_THROW(ModelError, where(n), ": ", e.what());
    }
    node.typed = true;
    return id;
  }
  int add_const(const onnx::NodeProto& n, NDArray v, const std::string& suffix = "") {
    return g_.add_constant(g_.unique_name(node_name(n) + suffix), std::move(v));
  }
  void output(const onnx::NodeProto& n, int id) { define(n.output(0), id); }

  // Attribute access with the node in errors.
  const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& name) const {
    for (auto& a : n.attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  int64_t attr_int(const onnx::NodeProto& n, const std::string& name, int64_t def) const {
    auto* a = attr(n, name);
    if (!a) return def;
    if (a->type() != onnx::AttributeProto::INT)
      LOOM_THROW(ModelError, where(n), ": attribute '", name, "' must be an integer");
    return a->i();
  }
  double attr_float(const onnx::NodeProto& n, const std::string& name, double def) const {
    auto* a = attr(n, name);
    if (!a) return def;
    if (a->type() != onnx::AttributeProto::FLOAT)
      LOOM_THROW(ModelError, where(n), ": attribute '", name, "' must be a float");
    return a->f();
  }
  std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const std::string& name, std::vector<int64_t> def) const {
    auto* a = attr(n, name);
    if (!a) return def;
    if (a->type() != onnx::AttributeProto::INTS)
      LOOM_THROW(ModelError, where(n), ": attribute '", name, "' must be a list of integers");
    return std::vector<int64_t>(a->ints().begin(), a->ints().end());
  }
  std::string attr_string(const onnx::NodeProto& n, const std::string& name, const std::string& def) const {
    auto* a = attr(n, name);
    if (!a) return def;
    if (a->type() != onnx::AttributeProto::STRING)
      LOOM_THROW(ModelError, where(n), ": attribute '", name, "' must be a string");
    return a->s();
  }
  NDArray attr_tensor(const onnx::NodeProto& n, const std::string& name) const {
    auto* a = attr(n, name);
    if (!a || a->type() != onnx::AttributeProto::TENSOR)
      LOOM_THROW(ModelError, where(n), ": attribute '", name, "' must be a tensor");
    return tensor_value(a->t(), base_dir_, where(n));
  }
  [[noreturn]] void unsupported(const onnx::NodeProto& n, const std::string& what) const {
    LOOM_THROW(ModelError, where(n), ": ", what);
  }

 private:
  void define(const std::string& name, int id) {
    if (name.empty()) return;
    values_[name] = id;
  }
  int value(const std::string& name, const std::string& where) const {
    auto it = values_.find(name);
    if (it == values_.end()) {
      auto extra = pending_extra_.find(name);
      if (extra != pending_extra_.end())
        LOOM_THROW(ModelError, where, ": reads '", name, "', an extra output of ", extra->second,
                   "; only first outputs are supported (inference)");
      LOOM_THROW(ModelError, where, ": reads '", name, "', which no input, initializer or earlier node defines");
    }
    return it->second;
  }

  TensorType input_type(const onnx::ValueInfoProto& in) {
    std::string where = origin_ + ": input '" + in.name() + "'";
    if (!in.type().has_tensor_type()) LOOM_THROW(ModelError, where, ": only tensor inputs are supported");
    auto& tt = in.type().tensor_type();
    TensorType t;
    t.dtype = onnx_dtype(tt.elem_type(), where);
    auto override_it = opts_.input_shapes.find(in.name());
    if (override_it != opts_.input_shapes.end()) {
      t.shape = override_it->second;
      if (tt.has_shape() && tt.shape().dim_size() != static_cast<int>(t.shape.size()))
        LOOM_THROW(ModelError, where, ": given shape ", shape_str(t.shape), " has rank ", t.shape.size(),
                   ", the model's has rank ", tt.shape().dim_size());
      return t;
    }
    if (!tt.has_shape()) LOOM_THROW(ModelError, where, ": has no shape (give one with --input-shape)");
    for (auto& d : tt.shape().dim()) {
      if (!d.has_dim_value() || d.dim_value() <= 0)
        LOOM_THROW(ModelError, where, ": dimension '", d.has_dim_param() ? d.dim_param() : "?",
                   "' is not static (give the shape with --input-shape ", in.name(), "=...)");
      t.shape.push_back(d.dim_value());
    }
    return t;
  }

  std::vector<int> node_order(const onnx::GraphProto& gp) {
    std::map<std::string, int> producer;
    for (int i = 0; i < gp.node_size(); ++i)
      for (auto& o : gp.node(i).output()) producer[o] = i;
    std::vector<int> order, state(gp.node_size(), 0);
    std::function<void(int)> visit = [&](int i) {
      if (state[i] == 2) return;
      if (state[i] == 1)
        LOOM_THROW(ModelError, origin_, ": the graph has a cycle through node '", node_name(gp.node(i)), "' (",
                   gp.node(i).op_type(), ")");
      state[i] = 1;
      for (auto& in : gp.node(i).input()) {
        auto it = producer.find(in);
        if (it != producer.end() && !values_.count(in)) visit(it->second);
      }
      state[i] = 2;
      order.push_back(i);
    };
    for (int i = 0; i < gp.node_size(); ++i) visit(i);
    return order;
  }

  void import_node(const onnx::NodeProto& n) {
    if (n.output_size() == 0 || n.output(0).empty()) LOOM_THROW(ModelError, where(n), ": the node has no output");
    if (!n.domain().empty() && n.domain() != "ai.onnx")
      LOOM_THROW(ModelError, where(n), ": operator domain '", n.domain(),
                 "' is not supported (only the default ONNX domain)");
    auto it = handlers().find(n.op_type());
    if (it == handlers().end()) {
      std::string have;
      for (auto& [k, v] : handlers()) have += (have.empty() ? "" : ", ") + k;
      LOOM_THROW(ModelError, where(n), ": operator '", n.op_type(), "' is not supported (supported: ", have, ")");
    }
    if (opset_ < it->second.since)
      LOOM_THROW(ModelError, where(n), ": the form of '", n.op_type(), "' in opset ", opset_,
                 " is not supported (this importer reads it from opset ", it->second.since,
                 " on; re-export or convert the model)");
    for (auto& a : n.attribute()) {
      auto& known = it->second.attrs;
      if (std::find(known.begin(), known.end(), a.name()) == known.end()) {
        std::string have;
        for (auto& k : known) have += (have.empty() ? "" : ", ") + k;
        LOOM_THROW(ModelError, where(n), ": attribute '", a.name(),
                   "' is not supported (supported: ", have.empty() ? "none" : have, ")");
      }
    }
    for (int o = 1; o < n.output_size(); ++o)
      if (!n.output(o).empty()) pending_extra_[n.output(o)] = "node '" + node_name(n) + "' (" + n.op_type() + ")";
    it->second.handler(*this, n);
  }

 private:
  std::string origin_, base_dir_;
  const OnnxImportOptions& opts_;
  Graph g_;
  int opset_ = 0;
  std::map<std::string, int> values_;
  // Extra outputs (BatchNorm statistics, Dropout masks) are never produced; reading one is an error.
  std::map<std::string, std::string> pending_extra_;
};

// ---- operator handlers ----

std::vector<int64_t> auto_pads(Importer& im, const onnx::NodeProto& n, const Shape& in_hw,
                               const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                               const std::vector<int64_t>& dilations) {
  std::string mode = im.attr_string(n, "auto_pad", "NOTSET");
  std::vector<int64_t> pads = im.attr_ints(n, "pads", {0, 0, 0, 0});
  if (pads.size() != 4) im.unsupported(n, "only 2-D windows are supported (pads must have 4 values)");
  if (mode == "NOTSET") return pads;
  if (mode == "VALID") return {0, 0, 0, 0};
  if (mode != "SAME_UPPER" && mode != "SAME_LOWER")
    im.unsupported(n, "auto_pad '" + mode + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  for (int d = 0; d < 2; ++d) {
    int64_t out = (in_hw[d] + strides[d] - 1) / strides[d];
    int64_t total = std::max<int64_t>(0, (out - 1) * strides[d] + dilations[d] * (kernel[d] - 1) + 1 - in_hw[d]);
    int64_t small = total / 2, big = total - small;
    pads[d] = mode == "SAME_UPPER" ? small : big;
    pads[d + 2] = mode == "SAME_UPPER" ? big : small;
  }
  return pads;
}

void import_conv(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0), w = im.input(n, 1);
  const Shape& xs = im.type(x).shape;
  const Shape& ws = im.type(w).shape;
  if (xs.size() != 4 || ws.size() != 4)
    im.unsupported(n, "only 2-D convolutions (NCHW input, OIHW weights) are supported");
  std::vector<int64_t> kernel = im.attr_ints(n, "kernel_shape", {ws[2], ws[3]});
  if (kernel != std::vector<int64_t>{ws[2], ws[3]}) im.unsupported(n, "kernel_shape differs from the weights' shape");
  std::vector<int64_t> strides = im.attr_ints(n, "strides", {1, 1}), dil = im.attr_ints(n, "dilations", {1, 1});
  if (strides.size() != 2 || dil.size() != 2) im.unsupported(n, "strides and dilations must have 2 values");
  Attrs a;
  a.set("strides", strides).set("dilations", dil).set("groups", im.attr_int(n, "group", 1));
  a.set("pads", auto_pads(im, n, {xs[2], xs[3]}, kernel, strides, dil));
  std::vector<int> in{x, w};
  if (im.has_input(n, 2)) in.push_back(im.input(n, 2));
  im.output(n, im.add(n, "conv2d", in, a));
}

void import_gemm(Importer& im, const onnx::NodeProto& n) {
  int a = im.input(n, 0), b = im.input(n, 1);
  double alpha = im.attr_float(n, "alpha", 1.0), beta = im.attr_float(n, "beta", 1.0);
  if (im.attr_int(n, "transA", 0))
    a = im.add(n, "transpose", {a}, Attrs().set("perm", std::vector<int64_t>{1, 0}), "_transA");
  // dense wants weights as [N, K]: that is B transposed unless transB.
  if (!im.attr_int(n, "transB", 0))
    b = im.add(n, "transpose", {b}, Attrs().set("perm", std::vector<int64_t>{1, 0}), "_transB");
  if (alpha != 1.0) {
    NDArray s = NDArray::empty({}, im.type(b).dtype);
    s.set_from_double(0, alpha);
    b = im.add(n, "mul", {b, im.add_const(n, s, "_alpha")}, {}, "_alphaB");
  }
  std::vector<int> in{a, b};
  int c = -1;
  if (im.has_input(n, 2) && beta != 0.0) {
    c = im.input(n, 2);
    if (beta != 1.0) {
      NDArray s = NDArray::empty({}, im.type(c).dtype);
      s.set_from_double(0, beta);
      c = im.add(n, "mul", {c, im.add_const(n, s, "_beta")}, {}, "_betaC");
    }
    int64_t N = im.type(b).shape[0];
    if (im.type(c).shape == Shape{N}) {
      in.push_back(c);
      c = -1;
    }
  }
  int y = im.add(n, "dense", in);
  if (c >= 0) y = im.add(n, "add", {y, c}, {}, "_bias");
  im.output(n, y);
}

void import_matmul(Importer& im, const onnx::NodeProto& n) {
  int a = im.input(n, 0), b = im.input(n, 1);
  if (im.type(a).shape.size() == 2 && im.type(b).shape.size() == 2 && im.is_const(b)) {
    int bt = im.add(n, "transpose", {b}, Attrs().set("perm", std::vector<int64_t>{1, 0}), "_weightT");
    im.output(n, im.add(n, "dense", {a, bt}));
  } else {
    im.output(n, im.add(n, "matmul", {a, b}));
  }
}

void import_batchnorm(Importer& im, const onnx::NodeProto& n) {
  if (im.attr_int(n, "training_mode", 0)) im.unsupported(n, "training_mode=1 is not supported (inference only)");
  std::vector<int> in;
  for (int i = 0; i < 5; ++i) in.push_back(im.input(n, i));
  im.output(n, im.add(n, "batch_norm", in, Attrs().set("epsilon", im.attr_float(n, "epsilon", 1e-5))));
}

Handler unary(const std::string& op) {
  return [op](Importer& im, const onnx::NodeProto& n) { im.output(n, im.add(n, op, {im.input(n, 0)})); };
}

Handler binary(const std::string& op) {
  return [op](Importer& im, const onnx::NodeProto& n) {
    im.output(n, im.add(n, op, {im.input(n, 0), im.input(n, 1)}));
  };
}

void import_clip(Importer& im, const onnx::NodeProto& n) {
  Attrs a;
  if (im.has_input(n, 1)) a.set("min", im.constant(n, 1).get_as_double(0));
  if (im.has_input(n, 2)) a.set("max", im.constant(n, 2).get_as_double(0));
  im.output(n, im.add(n, "clip", {im.input(n, 0)}, a));
}

// Softmax, and LogSoftmax as the log of it (`log`).
void import_softmax_or_log(Importer& im, const onnx::NodeProto& n, bool log) {
  auto finish = [&](int y) { return log ? im.add(n, "log", {y}, {}, "_log") : y; };
  int x = im.input(n, 0);
  Shape s = im.type(x).shape;
  int64_t r = static_cast<int64_t>(s.size());
  int64_t axis = im.attr_int(n, "axis", im.opset() >= 13 ? -1 : 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) im.unsupported(n, "axis out of range");
  if (im.opset() >= 13 || axis == r - 1) {
    im.output(n, finish(im.add(n, "softmax", {x}, Attrs().set("axis", axis))));
    return;
  }
  // Before opset 13, softmax works on the input flattened to 2-D at `axis`.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < r; ++d) (d < axis ? outer : inner) *= s[d];
  int flat = im.add(n, "reshape", {x}, Attrs().set("shape", Shape{outer, inner}), "_2d");
  int sm = finish(im.add(n, "softmax", {flat}, Attrs().set("axis", int64_t(1)), "_softmax"));
  im.output(n, im.add(n, "reshape", {sm}, Attrs().set("shape", s)));
}
void import_softmax(Importer& im, const onnx::NodeProto& n) { import_softmax_or_log(im, n, false); }
void import_log_softmax(Importer& im, const onnx::NodeProto& n) { import_softmax_or_log(im, n, true); }

Attrs pool_attrs(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  const Shape& xs = im.type(x).shape;
  if (xs.size() != 4) im.unsupported(n, "only 2-D pooling of NCHW tensors is supported");
  std::vector<int64_t> kernel = im.attr_ints(n, "kernel_shape", {});
  if (kernel.size() != 2) im.unsupported(n, "kernel_shape must have 2 values");
  std::vector<int64_t> strides = im.attr_ints(n, "strides", {1, 1}), dil = im.attr_ints(n, "dilations", {1, 1});
  if (im.attr_int(n, "storage_order", 0)) im.unsupported(n, "storage_order=1 (column major) is not supported");
  Attrs a;
  a.set("kernel", kernel)
      .set("strides", strides)
      .set("dilations", dil)
      .set("ceil_mode", im.attr_int(n, "ceil_mode", 0));
  a.set("pads", auto_pads(im, n, {xs[2], xs[3]}, kernel, strides, dil));
  return a;
}

void import_maxpool(Importer& im, const onnx::NodeProto& n) {
  im.output(n, im.add(n, "max_pool2d", {im.input(n, 0)}, pool_attrs(im, n)));
}

void import_avgpool(Importer& im, const onnx::NodeProto& n) {
  Attrs a = pool_attrs(im, n);
  a.set("count_include_pad", im.attr_int(n, "count_include_pad", 0));
  im.output(n, im.add(n, "avg_pool2d", {im.input(n, 0)}, a));
}

void import_flatten(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  Shape s = im.type(x).shape;
  int64_t r = static_cast<int64_t>(s.size()), axis = im.attr_int(n, "axis", 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r) im.unsupported(n, "axis out of range");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < r; ++d) (d < axis ? outer : inner) *= s[d];
  im.output(n, im.add(n, "reshape", {x}, Attrs().set("shape", Shape{outer, inner})));
}

// Reshape (or a constant reshaped at import).
void emit_reshape(Importer& im, const onnx::NodeProto& n, int x, Shape shape) {
  if (im.is_const(x)) {
    im.output(n, im.add_const(n, reshape_const(im.constant(n, 0), shape)));
    return;
  }
  im.output(n, im.add(n, "reshape", {x}, Attrs().set("shape", shape)));
}

void import_reshape(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  Shape in = im.type(x).shape;
  std::vector<int64_t> spec = im.const_ints(n, 1);
  bool allowzero = im.attr_int(n, "allowzero", 0) != 0;
  Shape out;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == 0 && !allowzero) {
      if (i >= in.size()) im.unsupported(n, "shape copies dimension " + std::to_string(i) + " that the input lacks");
      d = in[i];
    }
    if (d == -1) {
      if (infer >= 0) im.unsupported(n, "shape has more than one -1");
      infer = static_cast<int>(i);
      out.push_back(1);
      continue;
    }
    if (d < 0) im.unsupported(n, "negative dimension in shape");
    out.push_back(d);
    if (__builtin_mul_overflow(known, d, &known) || known > kMaxElements)
      im.unsupported(n, "shape " + shape_str(spec) + " is too large");
  }
  int64_t total = numel(in, im.where(n));
  if (infer >= 0) {
    if (known == 0 || total % known != 0)
      im.unsupported(n, "cannot infer the -1 dimension of " + shape_str(spec) + " for " + shape_str(in));
    out[infer] = total / known;
  }
  if (numel(out, im.where(n)) != total) im.unsupported(n, "cannot reshape " + shape_str(in) + " to " + shape_str(out));
  emit_reshape(im, n, x, out);
}

std::vector<int64_t> axes_of(Importer& im, const onnx::NodeProto& n) {
  if (im.opset() >= 13) return im.has_input(n, 1) ? im.const_ints(n, 1) : std::vector<int64_t>{};
  return im.attr_ints(n, "axes", {});
}

// Reduce*: axes from the attribute (before opset 18; ReduceSum before 13) or the optional second
// input; empty axes reduce everything, unless noop_with_empty_axes makes the node an identity.
Handler reduce(const std::string& op) {
  return [op](Importer& im, const onnx::NodeProto& n) {
    int x = im.input(n, 0);
    std::vector<int64_t> axes = im.has_input(n, 1) ? im.const_ints(n, 1) : im.attr_ints(n, "axes", {});
    if (axes.empty() && im.attr_int(n, "noop_with_empty_axes", 0)) {
      im.output(n, im.add(n, "identity", {x}));
      return;
    }
    Attrs a = Attrs().set("keepdims", im.attr_int(n, "keepdims", 1));
    if (!axes.empty()) a.set("axes", axes);
    im.output(n, im.add(n, op, {x}, a));
  };
}

void import_squeeze(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  Shape in = im.type(x).shape;
  std::vector<int64_t> axes = axes_of(im, n);
  int64_t r = static_cast<int64_t>(in.size());
  std::set<int64_t> drop;
  for (int64_t a : axes) {
    int64_t ax = a < 0 ? a + r : a;
    if (ax < 0 || ax >= r || in[ax] != 1)
      im.unsupported(n, "axis " + std::to_string(a) + " is not a dimension of size 1");
    drop.insert(ax);
  }
  Shape out;
  for (int64_t d = 0; d < r; ++d)
    if (axes.empty() ? in[d] != 1 : !drop.count(d)) out.push_back(in[d]);
  emit_reshape(im, n, x, out);
}

void import_unsqueeze(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  Shape in = im.type(x).shape;
  std::vector<int64_t> axes = axes_of(im, n);
  int64_t r = static_cast<int64_t>(in.size() + axes.size());
  std::set<int64_t> add;
  for (int64_t a : axes) {
    int64_t ax = a < 0 ? a + r : a;
    if (ax < 0 || ax >= r || !add.insert(ax).second) im.unsupported(n, "invalid axes");
  }
  Shape out;
  size_t k = 0;
  for (int64_t d = 0; d < r; ++d) out.push_back(add.count(d) ? 1 : in[k++]);
  emit_reshape(im, n, x, out);
}

void import_transpose(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  size_t r = im.type(x).shape.size();
  std::vector<int64_t> perm;
  for (size_t d = 0; d < r; ++d) perm.push_back(static_cast<int64_t>(r - 1 - d));
  perm = im.attr_ints(n, "perm", perm);
  if (im.is_const(x) && im.type(x).dtype == DataType::Int(64)) {
    im.output(n, im.add_const(n, transpose_const(im.constant(n, 0), perm)));
    return;
  }
  im.output(n, im.add(n, "transpose", {x}, Attrs().set("perm", perm)));
}

void import_concat(Importer& im, const onnx::NodeProto& n) {
  std::vector<int> in;
  bool all_const = true;
  for (int i = 0; i < n.input_size(); ++i) {
    in.push_back(im.input(n, i));
    all_const &= im.is_const(in.back());
  }
  if (in.empty()) im.unsupported(n, "needs at least one input");  // found by fuzz_onnx (read in[0])
  int64_t axis = im.attr_int(n, "axis", 0);
  if (all_const && im.type(in[0]).dtype == DataType::Int(64)) {
    std::vector<NDArray> parts;
    for (int i = 0; i < n.input_size(); ++i) parts.push_back(im.constant(n, i));
    im.output(n, im.add_const(n, concat_const(parts, axis)));
    return;
  }
  im.output(n, im.add(n, "concat", in, Attrs().set("axis", axis)));
}

void import_pad(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  std::string mode = im.attr_string(n, "mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    im.unsupported(n, "mode '" + mode + "' is not supported (constant, reflect, edge)");
  std::vector<int64_t> pads = im.const_ints(n, 1);
  if (im.has_input(n, 3)) im.unsupported(n, "the 'axes' input is not supported");
  double value = im.has_input(n, 2) ? im.constant(n, 2).get_as_double(0) : 0.0;
  for (int64_t p : pads)
    if (p < 0) im.unsupported(n, "negative pads (cropping) are not supported");
  im.output(n, im.add(n, "pad", {x}, Attrs().set("pads", pads).set("mode", mode).set("value", value)));
}

// Source index of every output index along one axis, with ONNX Resize's nearest-neighbour rules.
NDArray nearest_map(Importer& im, const onnx::NodeProto& n, int64_t in, int64_t out, double scale) {
  std::string ctm = im.attr_string(n, "coordinate_transformation_mode", "half_pixel");
  std::string nm = im.attr_string(n, "nearest_mode", "round_prefer_floor");
  NDArray m = folded_const({out}, DataType::Int(32), im.where(n));
  for (int64_t o = 0; o < out; ++o) {
    double x;
    if (ctm == "asymmetric")
      x = o / scale;
    else if (ctm == "half_pixel")
      x = (o + 0.5) / scale - 0.5;
    else if (ctm == "pytorch_half_pixel")
      x = out > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
    else if (ctm == "align_corners")
      x = out > 1 ? o * double(in - 1) / double(out - 1) : 0.0;
    else if (ctm == "tf_half_pixel_for_nn")
      x = (o + 0.5) / scale;
    else
      im.unsupported(n, "coordinate_transformation_mode '" + ctm + "' is not supported");
    double r;
    if (nm == "floor")
      r = std::floor(x);
    else if (nm == "ceil")
      r = std::ceil(x);
    else if (nm == "round_prefer_floor")
      r = (x - std::floor(x) == 0.5) ? std::floor(x) : std::round(x);
    else if (nm == "round_prefer_ceil")
      r = std::round(x);
    else
      im.unsupported(n, "nearest_mode '" + nm + "' is not supported");
    m.data<int32_t>()[o] = static_cast<int32_t>(std::clamp<double>(r, 0, static_cast<double>(in - 1)));
  }
  return m;
}

void import_resize(Importer& im, const onnx::NodeProto& n) {
  std::string mode = im.attr_string(n, "mode", "nearest");
  if (mode != "nearest") im.unsupported(n, "mode '" + mode + "' is not supported (nearest)");
  int x = im.input(n, 0);
  Shape in = im.type(x).shape;
  if (in.size() != 4) im.unsupported(n, "only NCHW inputs are supported");
  std::vector<double> scales(4, 1.0);
  Shape out = in;
  if (im.has_input(n, 3)) {
    out = im.const_ints(n, 3);
    if (out.size() != 4) im.unsupported(n, "sizes must have 4 values");
    for (int d = 0; d < 4; ++d)
      if (out[d] < 1 || out[d] > kMaxElements)
        im.unsupported(n, "size " + std::to_string(out[d]) + " of dimension " + std::to_string(d) + " is out of range");
    for (int d = 0; d < 4; ++d) scales[d] = double(out[d]) / double(in[d]);
  } else if (im.has_input(n, 2)) {
    const NDArray& s = im.constant(n, 2);
    if (s.numel() != 4) im.unsupported(n, "scales must have 4 values");
    for (int d = 0; d < 4; ++d) {
      scales[d] = s.get_as_double(d);
      double size = std::floor(double(in[d]) * scales[d]);
      if (!(scales[d] > 0) || !(size >= 1 && size <= double(kMaxElements)))
        im.unsupported(n, "scale " + std::to_string(scales[d]) + " of dimension " + std::to_string(d) +
                              " is not a positive, finite factor");
      out[d] = static_cast<int64_t>(size);
    }
  } else {
    im.unsupported(n, "needs scales or sizes");
  }
  if (out[0] != in[0] || out[1] != in[1]) im.unsupported(n, "resizing the batch or channel dimension is not supported");
  int ym = im.add_const(n, nearest_map(im, n, in[2], out[2], scales[2]), "_ymap");
  int xm = im.add_const(n, nearest_map(im, n, in[3], out[3], scales[3]), "_xmap");
  im.output(n, im.add(n, "resize_nearest", {x, ym, xm}));
}

void import_constant(Importer& im, const onnx::NodeProto& n) {
  if (im.attr(n, "value")) {
    im.output(n, im.add_const(n, im.attr_tensor(n, "value")));
  } else if (auto* a = im.attr(n, "value_float")) {
    NDArray v = NDArray::empty({}, DataType::Float(32));
    v.data<float>()[0] = a->f();
    im.output(n, im.add_const(n, v));
  } else if (auto* a = im.attr(n, "value_int")) {
    im.output(n, im.add_const(n, int64_array({a->i()}, {})));
  } else if (auto* a = im.attr(n, "value_ints")) {
    std::vector<int64_t> v(a->ints().begin(), a->ints().end());
    im.output(n, im.add_const(n, int64_array(v, {static_cast<int64_t>(v.size())})));
  } else if (auto* a = im.attr(n, "value_floats")) {
    NDArray v = NDArray::empty({a->floats_size()}, DataType::Float(32));
    std::copy(a->floats().begin(), a->floats().end(), v.data<float>());
    im.output(n, im.add_const(n, v));
  } else {
    im.unsupported(n, "needs a value, value_float(s) or value_int(s) attribute");
  }
}

void import_shape(Importer& im, const onnx::NodeProto& n) {
  Shape s = im.type(im.input(n, 0)).shape;
  int64_t r = static_cast<int64_t>(s.size());
  int64_t start = im.attr_int(n, "start", 0), end = im.attr_int(n, "end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, start, r);
  std::vector<int64_t> v(s.begin() + start, s.begin() + end);
  im.output(n, im.add_const(n, int64_array(v, {static_cast<int64_t>(v.size())})));
}

void import_gather(Importer& im, const onnx::NodeProto& n) {
  im.output(n, im.add_const(n, gather_const(im.constant(n, 0), im.constant(n, 1), im.attr_int(n, "axis", 0))));
}

void import_slice(Importer& im, const onnx::NodeProto& n) {
  const NDArray& data = im.constant(n, 0);
  std::vector<int64_t> starts = im.const_ints(n, 1), ends = im.const_ints(n, 2);
  std::vector<int64_t> axes, steps(starts.size(), 1);
  for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (im.has_input(n, 3)) axes = im.const_ints(n, 3);
  if (im.has_input(n, 4)) steps = im.const_ints(n, 4);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    im.unsupported(n, "starts, ends, axes and steps must have the same length");
  im.output(n, im.add_const(n, slice_const(data, starts, ends, axes, steps)));
}

void import_cast(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  DataType to = onnx_dtype(static_cast<int>(im.attr_int(n, "to", 1)), im.where(n));
  if (im.type(x).dtype == to) {
    im.output(n, x);
    return;
  }
  im.output(n, im.add_const(n, cast_const(im.constant(n, 0), to)));
}

void import_constant_of_shape(Importer& im, const onnx::NodeProto& n) {
  std::vector<int64_t> shape = im.const_ints(n, 0);
  NDArray fill = im.attr(n, "value") ? im.attr_tensor(n, "value") : NDArray::zeros({1}, DataType::Float(32));
  if (fill.numel() != 1)
    im.unsupported(n, "value must hold exactly one element, it has " + std::to_string(fill.numel()));
  NDArray out = folded_const(shape, fill.dtype(), im.where(n));
  for (int64_t i = 0; i < out.numel(); ++i)
    std::memcpy(static_cast<char*>(out.raw_data()) + i * fill.dtype().bytes(), fill.raw_data(), fill.dtype().bytes());
  im.output(n, im.add_const(n, out));
}

void import_global_avgpool(Importer& im, const onnx::NodeProto& n) {
  im.output(n, im.add(n, "global_avg_pool2d", {im.input(n, 0)}));
}

// Max, Min, Sum, Mean of any number of inputs (numpy broadcasting): a chain of the binary graph
// operator, divided by the count for Mean.
Handler variadic(const std::string& op, bool mean = false) {
  return [op, mean](Importer& im, const onnx::NodeProto& n) {
    if (n.input_size() < 1) im.unsupported(n, "needs at least one input");
    int acc = im.input(n, 0);
    for (int i = 1; i < n.input_size(); ++i) acc = im.add(n, op, {acc, im.input(n, i)});
    if (n.input_size() == 1) acc = im.add(n, "identity", {acc});
    if (mean && n.input_size() > 1) {
      DataType t = im.type(acc).dtype;
      if (!t.is_float()) im.unsupported(n, "Mean of integer inputs");
      NDArray k = NDArray::empty({1}, t);
      k.set_from_double(0, 1.0 / n.input_size());
      acc = im.add(n, "mul", {acc, im.add_const(n, k)});
    }
    im.output(n, acc);
  };
}

// An element-wise operator with float attributes (alpha, beta, gamma): those the node sets are
// copied (import_node has checked their names against the table); the graph operator has ONNX's
// defaults for the rest.
Handler unary_with_floats(const std::string& op) {
  return [op](Importer& im, const onnx::NodeProto& n) {
    Attrs a;
    for (const onnx::AttributeProto& at : n.attribute()) a.set(at.name(), im.attr_float(n, at.name(), 0.0));
    im.output(n, im.add(n, op, {im.input(n, 0)}, a));
  };
}

const std::map<std::string, OpInfo>& handlers() {
  static const std::map<std::string, OpInfo> table = {
      {"Conv", {{"kernel_shape", "strides", "pads", "dilations", "group", "auto_pad"}, import_conv, 1}},
      {"Gemm", {{"alpha", "beta", "transA", "transB"}, import_gemm, 7}},
      {"MatMul", {{}, import_matmul, 1}},
      {"BatchNormalization", {{"epsilon", "momentum", "training_mode"}, import_batchnorm, 9}},
      {"Relu", {{}, unary("relu"), 6}},
      {"Sigmoid", {{}, unary("sigmoid"), 6}},
      {"Tanh", {{}, unary("tanh"), 6}},
      {"Exp", {{}, unary("exp"), 6}},
      {"Sqrt", {{}, unary("sqrt"), 6}},
      {"Neg", {{}, unary("neg"), 6}},
      {"Abs", {{}, unary("abs"), 6}},
      {"Identity", {{}, unary("identity"), 1}},
      {"Dropout", {{"seed"}, unary("identity"), 7}},
      {"LeakyRelu", {{"alpha"}, unary_with_floats("leaky_relu"), 6}},
      {"Max", {{}, variadic("maximum"), 6}},
      {"Min", {{}, variadic("minimum"), 6}},
      {"Sum", {{}, variadic("add"), 6}},
      {"Mean", {{}, variadic("add", true), 6}},
      {"Elu", {{"alpha"}, unary_with_floats("elu"), 6}},
      {"Selu", {{"alpha", "gamma"}, unary_with_floats("selu"), 6}},
      {"Celu", {{"alpha"}, unary_with_floats("celu"), 12}},
      {"HardSigmoid", {{"alpha", "beta"}, unary_with_floats("hard_sigmoid"), 6}},
      {"HardSwish", {{}, unary("hard_swish"), 14}},
      {"Softplus", {{}, unary("softplus"), 1}},
      {"Softsign", {{}, unary("softsign"), 1}},
      {"Reciprocal", {{}, unary("reciprocal"), 6}},
      {"Log", {{}, unary("log"), 6}},
      {"Sign", {{}, unary("sign"), 9}},
      {"Floor", {{}, unary("floor"), 6}},
      {"Ceil", {{}, unary("ceil"), 6}},
      {"Round", {{}, unary("round"), 11}},
      {"Sin", {{}, unary("sin"), 7}},
      {"Cos", {{}, unary("cos"), 7}},
      {"Tan", {{}, unary("tan"), 7}},
      {"Erf", {{}, unary("erf"), 9}},
      {"Pow", {{}, binary("pow"), 7}},
      {"Clip", {{}, import_clip}},
      {"Softmax", {{"axis"}, import_softmax, 1}},
      {"LogSoftmax", {{"axis"}, import_log_softmax, 1}},
      {"ThresholdedRelu", {{"alpha"}, unary_with_floats("thresholded_relu"), 10}},
      {"Add", {{}, binary("add"), 7}},
      {"Sub", {{}, binary("sub"), 7}},
      {"Mul", {{}, binary("mul"), 7}},
      {"Div", {{}, binary("div"), 7}},
      {"MaxPool",
       {{"kernel_shape", "strides", "pads", "dilations", "ceil_mode", "auto_pad", "storage_order"}, import_maxpool, 8}},
      {"AveragePool",
       {{"kernel_shape", "strides", "pads", "dilations", "ceil_mode", "auto_pad", "count_include_pad"},
        import_avgpool,
        7}},
      {"GlobalAveragePool", {{}, import_global_avgpool, 1}},
      {"Flatten", {{"axis"}, import_flatten, 1}},
      {"Reshape", {{"allowzero"}, import_reshape}},
      {"Squeeze", {{"axes"}, import_squeeze, 1}},
      {"Unsqueeze", {{"axes"}, import_unsqueeze, 1}},
      {"Transpose", {{"perm"}, import_transpose, 1}},
      {"Concat", {{"axis"}, import_concat, 4}},
      {"Pad", {{"mode"}, import_pad}},
      {"Resize",
       {{"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
         "extrapolation_value"},
        import_resize}},
      {"Constant", {{"value", "value_float", "value_floats", "value_int", "value_ints"}, import_constant, 1}},
      {"Shape", {{"start", "end"}, import_shape, 1}},
      {"Gather", {{"axis"}, import_gather, 1}},
      {"Slice", {{}, import_slice}},
      {"Cast", {{"to"}, import_cast, 6}},
      {"ReduceSum", {{"axes", "keepdims", "noop_with_empty_axes"}, reduce("reduce_sum"), 1}},
      {"ReduceMean", {{"axes", "keepdims", "noop_with_empty_axes"}, reduce("reduce_mean"), 1}},
      {"ReduceMax", {{"axes", "keepdims", "noop_with_empty_axes"}, reduce("reduce_max"), 1}},
      {"ReduceMin", {{"axes", "keepdims", "noop_with_empty_axes"}, reduce("reduce_min"), 1}},
      {"ReduceSumSquare", {{"axes", "keepdims", "noop_with_empty_axes"}, reduce("reduce_sum_square"), 1}},
      {"ReduceL1", {{"axes", "keepdims", "noop_with_empty_axes"}, reduce("reduce_l1"), 1}},
      {"ReduceL2", {{"axes", "keepdims", "noop_with_empty_axes"}, reduce("reduce_l2"), 1}},
      {"ReduceLogSum", {{"axes", "keepdims", "noop_with_empty_axes"}, reduce("reduce_log_sum"), 1}},
      {"ReduceLogSumExp", {{"axes", "keepdims", "noop_with_empty_axes"}, reduce("reduce_log_sum_exp"), 1}},
      {"ConstantOfShape", {{"value"}, import_constant_of_shape, 9}},
  };
  return table;
}

}  // namespace

std::vector<std::string> onnx_supported_ops() {
  std::vector<std::string> names;
  for (auto& [k, v] : handlers()) names.push_back(k);
  return names;
}

Graph import_onnx_bytes(const std::string& bytes, const std::string& origin, const std::string& base_dir,
                        const OnnxImportOptions& options) {
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes))
    LOOM_THROW(ModelError, origin,
               ": not a valid ONNX model (the protobuf does not parse; truncated or not an .onnx file?)");
  if (!model.has_graph()) LOOM_THROW(ModelError, origin, ": the ONNX model has no graph");
  Importer im(origin, base_dir, options);
  return im.run(model);
}

namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) LOOM_THROW(RuntimeError, "cannot open '", path, "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

NDArray read_onnx_tensor(const std::string& path) {
  onnx::TensorProto t;
  std::string bytes = file_bytes(path);
  if (!t.ParseFromString(bytes))
    LOOM_THROW(ModelError, "'", path, "': not a serialized ONNX tensor (the protobuf does not parse)");
  std::string base = std::filesystem::path(path).parent_path().string();
  return tensor_value(t, base.empty() ? "." : base, "'" + path + "'");
}

Graph import_onnx(const std::string& path, const OnnxImportOptions& options) {
  std::string base = std::filesystem::path(path).parent_path().string();
  Graph g = import_onnx_bytes(file_bytes(path), "'" + path + "'", base.empty() ? "." : base, options);
  if (g.name == "model" || g.name.empty() || g.name.find_first_of(" /") != std::string::npos || g.name == "torch_jit" ||
      g.name == "main_graph")
    g.name = std::filesystem::path(path).stem().string();
  return g;
}

}  // namespace loom::frontend
