// Graph IR: a model as a dataflow graph of operator nodes over typed tensors with static shapes.
// Every node produces one tensor: graph inputs, constants (weights) and operator nodes whose
// inputs are other nodes. Passes (passes.h) rewrite graphs; build.h compiles one into a
// compiled-model file for the runtime's graph executor.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "loom/runtime/dim_expr.h"
#include "loom/runtime/dtype.h"
#include "loom/runtime/ndarray.h"

namespace loom::graph {

using Shape = std::vector<int64_t>;

inline constexpr int64_t kMaxTensorElements = int64_t(1) << 40;

using runtime::ShapeVar;

// A tensor's type. With symbolic dimensions (`dims` not empty), `shape` is the largest shape (every
// shape variable at its maximum): what the memory plan reserves and what passes see.
struct TensorType {
  Shape shape;
  DataType dtype = DataType::Float(32);
  runtime::ShapeExpr dims{};  // empty: static ({}: brace initializations that leave it out do not warn)
  bool is_static() const { return dims.empty(); }
  int64_t numel() const;
  // Throws ShapeError unless every dimension is >= 0 and the product of the dimensions (zeros
  // counted as 1) is at most kMaxTensorElements, so any product of a type's dimensions fits in
  // int64_t. infer_types checks each inferred type, so shape arithmetic on attributes from a
  // file cannot carry an overflowed size downstream.
  void check_size() const;
  uint64_t nbytes() const { return static_cast<uint64_t>(numel()) * dtype.bytes(); }
  std::string str() const;  // "float32[1, 64, 56, 56]", "float32[1, seq, 768]"
  bool operator==(const TensorType& o) const { return shape == o.shape && dtype == o.dtype && dims == o.dims; }
};

// Operator attributes: integers, floats, strings and lists of integers or floats. Getters throw
// ModelError naming the attribute (callers add the node). Which keys an operator takes, of which
// kind, is its schema (OpDef::attrs); typed views of the common ones are in op_attrs.h.
using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;
class Attrs {
 public:
  Attrs& set(const std::string& key, AttrValue v) {
    values_[key] = std::move(v);
    return *this;
  }
  void erase(const std::string& key) { values_.erase(key); }
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  int64_t get_int(const std::string& key) const;
  int64_t get_int(const std::string& key, int64_t def) const { return has(key) ? get_int(key) : def; }
  double get_float(const std::string& key) const;  // integers convert
  double get_float(const std::string& key, double def) const { return has(key) ? get_float(key) : def; }
  std::string get_string(const std::string& key) const;
  std::string get_string(const std::string& key, const std::string& def) const {
    return has(key) ? get_string(key) : def;
  }
  std::vector<int64_t> get_ints(const std::string& key) const;
  std::vector<int64_t> get_ints(const std::string& key, const std::vector<int64_t>& def) const {
    return has(key) ? get_ints(key) : def;
  }
  const std::map<std::string, AttrValue>& values() const { return values_; }
  std::string str() const;  // "strides=[2, 2], groups=1"
  bool operator==(const Attrs& o) const { return values_ == o.values_; }

 private:
  std::map<std::string, AttrValue> values_;
};

enum class NodeKind : uint8_t { Input, Constant, Op };

struct Node {
  NodeKind kind = NodeKind::Op;
  std::string name;
  std::string op;           // operator name (Op nodes), see op_registry.h
  std::vector<int> inputs;  // ids of the nodes it reads
  Attrs attrs;
  // Integer attributes that depend on shape variables (a reshape's target over `seq`), as affine
  // forms per element; `attrs` holds their values at the variables' maxima. infer_types evaluates
  // them at each point it types the graph (docs/dynamic_shapes.md).
  std::map<std::string, runtime::ShapeExpr> sym_attrs;
  TensorType type;  // of its output; set for inputs/constants, inferred for ops
  bool typed = false;
  NDArray value;  // Constant nodes
  bool is_op() const { return kind == NodeKind::Op; }
  bool is_constant() const { return kind == NodeKind::Constant; }
  bool is_input() const { return kind == NodeKind::Input; }
};

class Graph {
 public:
  std::string name = "model";
  // A deque: add_op appends without moving the nodes already there, so a pass may hold a Node&
  // across add_op (iterators are still invalidated: loop by index while adding).
  std::deque<Node> nodes;
  std::vector<int> inputs;   // Input nodes, in order
  std::vector<int> outputs;  // nodes whose values are the model's outputs, in order
  // The model's key-value properties (ONNX metadata_props): what the model says about itself,
  // such as the distribution of an input (frontend/load.h reads "loom.input_distribution.NAME").
  std::map<std::string, std::string> metadata;
  // The shape variables the inputs' symbolic dimensions use (infer_types derives every other
  // tensor's dimensions from them, docs/dynamic_shapes.md).
  std::vector<ShapeVar> shape_vars;

  // An input whose type has symbolic dimensions gets its largest shape from the shape variables
  // (ModelError naming one it uses that shape_vars lacks).
  int add_input(const std::string& name, TensorType type);
  const ShapeVar* shape_var(const std::string& name) const;  // null if there is none of that name
  // The value of every shape variable at its maximum.
  std::map<std::string, int64_t> shape_var_maxima() const;
  // The points at which infer_types types a graph with shape variables (and the importer imports
  // a model with them): every variable at its maximum; for each variable whose range has more than
  // one value, that variable one lower; and the checks, where the ranges allow: every variable
  // inside its range, and every variable at its minimum (where a clamp, such as a slice from the
  // end longer than the axis, would bend an affine form).
  struct ShapeProbes {
    std::map<std::string, int64_t> top;
    std::vector<std::pair<std::string, std::map<std::string, int64_t>>> lower;  // per variable
    std::vector<std::map<std::string, int64_t>> checks;
  };
  ShapeProbes shape_probes() const;
  // Sets node `id`'s integer-list attribute `key` to `dims` (a shape for a reshape): its value at
  // the variables' maxima, and the forms as sym_attrs where they are symbolic.
  void set_shape_attr(int id, const std::string& key, const runtime::ShapeExpr& dims);
  int add_constant(const std::string& name, NDArray value);
  // Inputs must be existing nodes (ModelError otherwise).
  int add_op(const std::string& op, const std::string& name, std::vector<int> inputs, Attrs attrs = {});

  const Node& node(int id) const;
  Node& node(int id);
  const TensorType& type_of(int id) const;  // InternalError if not inferred yet
  // Users of every node (ids of the nodes reading it; a node reading twice appears twice).
  std::vector<std::vector<int>> users() const;
  // Node ids with every node after its inputs. ModelError naming a node on the cycle if there is one.
  std::vector<int> topological_order() const;
  // Keeps only nodes the outputs depend on (plus the inputs), renumbered in topological order.
  void compact();
  // Every read of node `from` (by nodes and by the outputs) reads `to` instead.
  void replace_uses(int from, int to);
  // Checks the structure: every edge reads an existing node, no cycle, the outputs exist, the
  // input list holds exactly the Input nodes, inputs and constants read nothing, a constant's
  // value has its type, every operator is registered, has as many inputs as it takes and only
  // the attributes its schema declares, of their kinds and in range (OpDef::check_attrs).
  // ModelError naming the node and what is wrong. Types are checked by verify_types (passes.h).
  void verify() const;
  // The shape variables alone: names (a letter first, each once), 1 <= min <= max.
  void verify_shape_vars() const;
  // Readable text: one line per node, "%12 = conv2d(%3, %4) {strides=[1, 1]} : float32[1, 64, 56, 56]  # name".
  std::string str() const;
  // A name not used by any node yet, built from `base`.
  std::string unique_name(const std::string& base) const;
  // The names of the output nodes, in order; and giving them back after a rewrite replaced an
  // output node (quantization's dequantize, a fused or removed copy): output k is named names[k],
  // a node that held that name is renamed. Outputs keep the model's names through every pass.
  std::vector<std::string> output_names() const;
  void name_outputs(const std::vector<std::string>& names);
};

}  // namespace loom::graph
