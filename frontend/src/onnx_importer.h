// Internal to the ONNX importer: the Importer state that the operator handlers read and extend
// (inputs, constants, attributes with the node in errors), and the handler table that the family
// files fill (import_*.cc, one per operator family; the list is below).
#pragma once
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "loom/frontend/node_builder.h"
#include "loom/frontend/onnx.h"
#include "loom/graph/op_registry.h"
#include "loom/runtime/error.h"
#include "onnx_tensor.h"

namespace loom::frontend::onnx_detail {

using graph::Attrs;
using graph::Graph;
using graph::TensorType;
using Shape = std::vector<int64_t>;

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
using HandlerTable = std::map<std::string, OpInfo>;

// One function per operator family, each in its own file; handlers() calls them all.
void add_nn_handlers(HandlerTable& t);        // import_nn.cc: convolutions, GEMMs, normalization, pools, softmax
void add_elemwise_handlers(HandlerTable& t);  // import_elemwise.cc: element-wise arithmetic and functions
void add_shape_handlers(HandlerTable& t);     // import_shape.cc: shapes, constants and data movement
void add_reduce_handlers(HandlerTable& t);    // import_reduce.cc: reductions
void add_resize_handlers(HandlerTable& t);    // import_resize.cc: Resize, Upsample
void add_rnn_handlers(HandlerTable& t);       // import_rnn.cc: RNN, GRU, LSTM unrolled over time
void add_quant_handlers(HandlerTable& t);     // import_quant.cc: quantization, integer and QLinear products
void add_scatter_handlers(HandlerTable& t);   // import_scatter.cc: Scatter(Elements, ND), GatherND, Einsum
const HandlerTable& handlers();
// The convolution of graph nodes x and w (and bias; -1: none) with Conv's attributes read from n,
// 1-D or 2-D (import_nn.cc; also for ConvInteger and QLinearConv).
int add_conv(Importer& im, const onnx::NodeProto& n, int x, int w, int bias);
// Operators left out on purpose, with the reason the error gives.
const std::map<std::string, std::string>& refused_ops();

inline constexpr int kNewestOpset = 18;

class Importer {
 public:
  // `probe`: this import is one probe point of shape variables (symbolic_import.h), and tracks
  // which constants come from shapes (from_shapes).
  Importer(std::string origin, std::string base_dir, const OnnxImportOptions& opts, bool probe = false)
      : origin_(std::move(origin)), base_dir_(std::move(base_dir)), opts_(opts), probe_(probe) {}

  Graph run(const onnx::ModelProto& model);
  // Imports a subgraph's nodes into this graph (they may read the enclosing graph's values) and
  // returns the ids of its outputs: an If whose condition is known inlines its branch so.
  std::vector<int> inline_subgraph(const onnx::GraphProto& g, const std::string& what);

  // ---- helpers used by the handlers ----
  int opset() const { return opset_; }
  std::string where(const onnx::NodeProto& n) const {
    return origin_ + ": node '" + node_name(n) + "' (" + n.op_type() + ")";
  }
  static std::string node_name(const onnx::NodeProto& n) {
    if (!n.name().empty()) return n.name();
    for (auto& o : n.output())
      if (!o.empty()) return o;
    return "<unnamed>";
  }

  int input(const onnx::NodeProto& n, int i) {
    if (i >= n.input_size() || n.input(i).empty()) LOOM_THROW(ModelError, where(n), ": missing input ", i);
    return value(n.input(i), where(n));
  }
  bool has_input(const onnx::NodeProto& n, int i) const { return i < n.input_size() && !n.input(i).empty(); }
  const TensorType& type(int id) const { return g_.type_of(id); }
  bool is_const(int id) const { return g_.node(id).is_constant(); }
  // Whether input i's value is known at import: a constant, or an input whose value is given
  // (OnnxImportOptions::input_values: bound now).
  bool known(const onnx::NodeProto& n, int i) {
    int id = input(n, i);
    if (!is_const(id) && g_.node(id).is_input() && opts_.input_values.count(g_.node(id).name)) bind(id);
    return is_const(id);
  }
  const NDArray& constant(const onnx::NodeProto& n, int i) {
    input(n, i);  // a missing input is named before its name is read
    require_known(n, i,
                  "input " + std::to_string(i) + " ('" + n.input(i) +
                      "') must be a constant (computed at import), but depends on the model's inputs");
    return g_.node(input(n, i)).value;
  }
  // Input i's value must be known at import: if not, an InputValuesNeeded naming the model's
  // inputs it is computed from (a ModelError when it comes from none), saying `what`.
  void require_known(const onnx::NodeProto& n, int i, const std::string& what);
  std::vector<int64_t> const_ints(const onnx::NodeProto& n, int i) { return int_values(constant(n, i)); }
  // The one value of a constant input (a bound, a ratio, a condition); ModelError if it holds
  // more or none.
  double scalar_value(const onnx::NodeProto& n, int i) {
    const NDArray& v = constant(n, i);
    if (v.numel() != 1)
      LOOM_THROW(ModelError, where(n), ": input ", i, " ('", n.input(i), "') must hold one value, holds ", v.numel());
    return v.get_as_double(0);
  }

  // At a probe point of shape variables: whether constant `id` was computed from
  // the shapes of run-time tensors (Shape, Size, and what is folded from them), so its value
  // depends on the variables at this probe point.
  bool from_shapes(int id) const { return from_shapes_.count(id) > 0; }
  // Whether input i of the node is such a constant (at a probe point).
  bool input_from_shapes(const onnx::NodeProto& n, int i) { return has_input(n, i) && from_shapes(input(n, i)); }

  // Adds a graph operator and infers its type at once (importers of later nodes need shapes);
  // a small one over constants is evaluated now unless `fold` is false.
  int add(const onnx::NodeProto& n, const std::string& op, std::vector<int> inputs, Attrs attrs = {},
          const std::string& suffix = "", bool fold = true) {
    int id = g_.add_op(op, unique_name(node_name(n) + suffix), std::move(inputs), std::move(attrs));
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
    if (!fold) return id;
    try {
      return fold_if_small(id);
    } catch (const Error& e) {
      LOOM_THROW(ModelError, where(n), ": evaluating it at import: ", e.what());
    }
  }
  int add_const(const onnx::NodeProto& n, NDArray v, const std::string& suffix = "") {
    return g_.add_constant(unique_name(node_name(n) + suffix), std::move(v));
  }
  // Adds as add and add_const do, for the graph-level builders (resize.h, recurrent.h).
  NodeBuilder builder(const onnx::NodeProto& n) {
    return {[this, &n](NDArray v, const std::string& suffix) { return add_const(n, std::move(v), suffix); },
            [this, &n](const std::string& op, const std::vector<int>& in, Attrs a, const std::string& suffix) {
              return add(n, op, in, std::move(a), suffix);
            },
            [this](int id) { return type(id); }};
  }
  // Defines the node's output k (0: its first) as graph node `id`.
  // A rank-0 constant of type t (broadcasts against anything).
  int scalar(const onnx::NodeProto& n, DataType t, double v, const std::string& suffix) {
    NDArray a = NDArray::empty({}, t);
    a.set_from_double(0, v);
    return add_const(n, a, suffix);
  }
  void output(const onnx::NodeProto& n, int id, int k = 0) {
    if (k < n.output_size()) define(n.output(k), id);
  }
  bool has_output(const onnx::NodeProto& n, int k) const { return k < n.output_size() && !n.output(k).empty(); }

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
                   "; that operator's extra outputs are not produced (inference)");
      LOOM_THROW(ModelError, where, ": reads '", name, "', which no input, initializer or earlier node defines");
    }
    return it->second;
  }

  TensorType input_type(const onnx::ValueInfoProto& in);
  // Makes graph input `id` the constant of OnnxImportOptions::input_values.
  void bind(int id);
  // A node name not yet in the graph: `base`, or base_1, base_2, ... (Graph::unique_name scans
  // every node; this keeps the names in a set, so importing N nodes is not quadratic).
  std::string unique_name(const std::string& base) {
    if (names_.empty())
      for (const graph::Node& node : g_.nodes) names_.insert(node.name);
    std::string name = base;
    for (int k = 1; names_.count(name); ++k) name = base + "_" + std::to_string(k);
    names_.insert(name);
    return name;
  }
  // Evaluates operator node `id` now if its inputs are constants and it is small: shape
  // computations (Shape, Gather, Range, Equal, Where, ...) stay static.
  int fold_if_small(int id);
  // Marks the node's constant outputs as from_shapes when it reads the shape of a run-time tensor
  // or a constant that is.
  void track_shape_values(const onnx::NodeProto& n);
  std::vector<int> node_order(const onnx::GraphProto& gp);
  void import_node(const onnx::NodeProto& n);

 private:
  std::string origin_, base_dir_;
  const OnnxImportOptions& opts_;
  bool probe_ = false;
  Graph g_;
  int opset_ = 0;
  std::map<std::string, int> values_;
  std::set<int> from_shapes_;
  std::set<std::string> names_;  // of the graph's nodes (unique_name)
  // Extra outputs a handler does not produce (BatchNorm's statistics, MaxPool's indices); reading
  // one is an error.
  std::map<std::string, std::string> pending_extra_;
};

// The bytes of a file (RuntimeError naming it if it cannot be read).
std::string file_bytes(const std::string& path);
// import_onnx of a model file's bytes, read already: `path` names it in errors, resolves external
// data and names a graph its exporter left unnamed.
Graph import_onnx_file_bytes(const std::string& bytes, const std::string& path, const OnnxImportOptions& options);

}  // namespace loom::frontend::onnx_detail
