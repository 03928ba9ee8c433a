#include "loom/frontend/onnx.h"

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "loom/graph/passes.h"
#include "loom/runtime/suggest.h"
#include "onnx_importer.h"
#include "symbolic_import.h"

namespace loom::frontend {

namespace onnx_detail {

Graph Importer::run(const onnx::ModelProto& model) {
  opset_ = 0;
  for (auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version();
  if (opset_ == 0) {
    std::string domains;
    for (auto& o : model.opset_import()) domains += (domains.empty() ? "'" : ", '") + o.domain() + "'";
    LOOM_THROW(
        ModelError, origin_, ": the model imports no opset of the default ONNX domain",
        domains.empty() ? std::string() : " (only " + domains + ")",
        domains.find("training") != std::string::npos ? ": training operators are not supported (inference only)" : "");
  }
  if (opset_ > kNewestOpset)
    LOOM_THROW(ModelError, origin_, ": ONNX opset ", opset_, " is newer than this importer reads (up to ", kNewestOpset,
               "; re-export or convert the model)");
  const onnx::GraphProto& gp = model.graph();
  g_.name = gp.name().empty() ? "model" : gp.name();
  for (auto& init : gp.initializer())
    define(init.name(), g_.add_constant(init.name(), tensor_value(init, base_dir_,
                                                                  origin_ + ": initializer '" + init.name() + "'")));
  for (auto& in : gp.input()) {
    if (values_.count(in.name())) continue;  // an initializer also listed as input (older exporters)
    define(in.name(), g_.add_input(in.name(), input_type(in)));
  }
  for (auto& [name, v] : opts_.input_values)
    if (!values_.count(name) || !g_.node(values_[name]).is_input())
      LOOM_THROW(ModelError, origin_, ": a value is given for '", name, "', which is not an input of the model");
  if (!opts_.bind_only_where_needed)
    for (auto& [name, v] : opts_.input_values) bind(values_[name]);
  g_.outputs = inline_subgraph(gp, "graph output");
  // A value given for an input may be empty (no axes) if an operator took it as a constant; an
  // input left for run time may not.
  for (int id : g_.inputs)
    for (size_t d = 0; d < g_.node(id).type.shape.size(); ++d)
      if (g_.node(id).type.shape[d] == 0)
        LOOM_THROW(ModelError, origin_, ": input '", g_.node(id).name, "': dimension ", d,
                   " of the value given is 0: Loom tensors have no empty dimensions");
  // Operator nodes that are outputs take the model's output names (what `loom run` reports and
  // --output-dir writes), where no other node has that name.
  for (int k = 0; k < gp.output_size(); ++k) {
    graph::Node& out = g_.node(g_.outputs[size_t(k)]);
    const std::string& want = gp.output(k).name();
    if (out.is_op() && out.name != want && g_.unique_name(want) == want) out.name = want;
  }
  g_.verify();
  if (opts_.value_nodes) *opts_.value_nodes = values_;
  return std::move(g_);
}

std::vector<int> Importer::inline_subgraph(const onnx::GraphProto& gp, const std::string& what) {
  // ONNX requires topological order; sort anyway so hand-made graphs import, and find cycles.
  for (int idx : node_order(gp)) import_node(gp.node(idx));
  std::vector<int> outs;
  for (auto& out : gp.output()) outs.push_back(value(out.name(), what));
  return outs;
}

int Importer::fold_if_small(int id) {
  graph::Node& node = g_.node(id);
  if (node.type.numel() > kMaxFoldedElements) return id;
  for (int i : node.inputs)
    if (!g_.node(i).is_constant()) return id;
  NDArray v = graph::evaluate_constant_op(g_, id);
  node.kind = graph::NodeKind::Constant;
  node.value = v;
  node.inputs.clear();
  node.op.clear();
  node.attrs = Attrs();
  return id;
}

void Importer::require_known(const onnx::NodeProto& n, int i, const std::string& what) {
  if (known(n, i)) return;
  // The model's inputs the value is computed from. Compiling per value suits few small values
  // (a shape, axes, a condition), not data: a root that is larger or symbolic is a plain error.
  constexpr int64_t kMaxValueInputElements = 64;
  std::set<int> seen;
  std::vector<int> todo{input(n, i)}, roots;
  bool small = true;
  while (!todo.empty()) {
    int id = todo.back();
    todo.pop_back();
    if (!seen.insert(id).second) continue;
    const graph::Node& node = g_.node(id);
    if (node.is_input()) {
      roots.push_back(id);
      small &= node.type.is_static() && node.type.numel() <= kMaxValueInputElements;
    }
    todo.insert(todo.end(), node.inputs.begin(), node.inputs.end());
  }
  std::string message = where(n) + ": " + what;
  if (roots.empty() || !small) LOOM_THROW(ModelError, message);
  std::vector<std::string> names;
  for (int id : roots) names.push_back(g_.node(id).name);
  std::sort(names.begin(), names.end());
  std::string list, binds;
  for (const std::string& name : names) {
    list += (list.empty() ? "'" : ", '") + name + "'";
    binds += " --bind " + name + "=FILE.npy";
  }
  throw InputValuesNeeded(message + " (computed from the model's input" + (names.size() > 1 ? "s " : " ") + list +
                              ": give the value at compile time (loom compile" + binds +
                              "), or run the model in an OnnxSession (loom.OnnxSession), which compiles it per value "
                              "at run time)",
                          names);
}

void Importer::bind(int id) {
  graph::Node& node = g_.node(id);
  const NDArray& v = opts_.input_values.at(node.name);
  if (v.dtype() != node.type.dtype || v.shape() != node.type.shape)
    LOOM_THROW(ModelError, origin_, ": the value given for input '", node.name, "' is ", v.dtype().str(),
               shape_str(v.shape()), ", the input is ", node.type.str());
  node.kind = graph::NodeKind::Constant;
  node.value = v;
  g_.inputs.erase(std::find(g_.inputs.begin(), g_.inputs.end(), id));
}

TensorType Importer::input_type(const onnx::ValueInfoProto& in) {
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
  if (auto v = opts_.input_values.find(in.name()); v != opts_.input_values.end()) {
    // A bound input takes its value's shape (dimensions the model leaves symbolic included).
    t.shape = v->second.shape();
    bool fits = !tt.has_shape() || tt.shape().dim_size() == static_cast<int>(t.shape.size());
    for (int d = 0; fits && tt.has_shape() && d < tt.shape().dim_size(); ++d)
      fits = !tt.shape().dim(d).has_dim_value() || tt.shape().dim(d).dim_value() == t.shape[size_t(d)];
    if (!fits)
      LOOM_THROW(ModelError, where, ": the value given is ", t.dtype.str(), shape_str(t.shape),
                 ", which the model's input shape does not allow");
    return t;
  }
  if (!tt.has_shape()) LOOM_THROW(ModelError, where, ": has no shape (give one with --input-shape)");
  for (auto& d : tt.shape().dim()) {
    if (d.has_dim_value() && d.dim_value() == 0)
      // An empty input can only be a value read at import (no axes, no pads): one to bind.
      throw InputValuesNeeded(where + ": dimension " + std::to_string(t.shape.size()) +
                                  " is 0: Loom tensors have no empty dimensions (bind the input's value at compile "
                                  "time, run the model in an OnnxSession, which compiles it per value, or give "
                                  "another shape with --input-shape " +
                                  in.name() + "=...)",
                              {in.name()});
    if (!d.has_dim_value() || d.dim_value() < 0)
      LOOM_THROW(ModelError, where, ": dimension '", d.has_dim_param() ? d.dim_param() : "?",
                 probe_ ? "' is neither static nor an affine form of the shape variables (a name declared with "
                          "--shape-var, or a sum such as 'past + seq')"
                        : "' is not static (give the shape with --input-shape " + in.name() + "=...)");
    t.shape.push_back(d.dim_value());
  }
  return t;
}

std::vector<int> Importer::node_order(const onnx::GraphProto& gp) {
  std::map<std::string, int> producer;
  for (int i = 0; i < gp.node_size(); ++i)
    for (auto& o : gp.node(i).output())
      if (!o.empty()) producer[o] = i;  // "" is an omitted output, not a name
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

void Importer::import_node(const onnx::NodeProto& n) {
  bool any_output = false;  // a recurrent node may leave Y unnamed and give only Y_h
  for (auto& o : n.output()) any_output |= !o.empty();
  if (!any_output) LOOM_THROW(ModelError, where(n), ": the node has no output");
  if (!n.domain().empty() && n.domain() != "ai.onnx")
    LOOM_THROW(ModelError, where(n), ": operator domain '", n.domain(),
               "' is not supported (only the default ONNX domain)");
  auto it = handlers().find(n.op_type());
  if (auto why = refused_ops().find(n.op_type()); it == handlers().end() && why != refused_ops().end())
    LOOM_THROW(ModelError, where(n), ": operator '", n.op_type(), "' is not supported: ", why->second);
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
      LOOM_THROW(ModelError, where(n), ": attribute '", a.name(), "' is not supported", did_you_mean(a.name(), known),
                 " (supported: ", have.empty() ? "none" : have, ")");
    }
  }
  for (int o = 1; o < n.output_size(); ++o)
    if (!n.output(o).empty()) pending_extra_[n.output(o)] = "node '" + node_name(n) + "' (" + n.op_type() + ")";
  try {
    it->second.handler(*this, n);
  } catch (const Error& e) {
    // Errors from shared helpers (constant folding, shape arithmetic) do not know the node.
    std::string what = e.what();
    if (what.rfind(origin_, 0) == 0) throw;
    LOOM_THROW(ModelError, where(n), ": ", what);
  }
  if (probe_) track_shape_values(n);
}

void Importer::track_shape_values(const onnx::NodeProto& n) {
  bool varies = false;
  for (int i = 0; i < n.input_size(); ++i) {
    auto it = n.input(i).empty() ? values_.end() : values_.find(n.input(i));
    if (it == values_.end()) continue;
    bool reads_shape = i == 0 && (n.op_type() == "Shape" || n.op_type() == "Size") && !is_const(it->second);
    varies |= reads_shape || from_shapes(it->second);
  }
  if (!varies) return;
  for (const std::string& out : n.output())
    if (auto it = out.empty() ? values_.end() : values_.find(out); it != values_.end() && is_const(it->second))
      from_shapes_.insert(it->second);
}

const std::map<std::string, std::string>& refused_ops() {
  static const std::map<std::string, std::string> table = [] {
    std::map<std::string, std::string> t;
    for (const char* op :
         {"Bernoulli", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial"})
      t[op] = "it draws random numbers, and a compiled model is deterministic";
    for (const char* op : {"NonZero", "Unique", "Compress", "NonMaxSuppression"})
      t[op] = "its output's shape depends on the input values, and Loom compiles static shapes";
    for (const char* op : {"SequenceConstruct", "SequenceEmpty", "SequenceInsert", "SequenceAt", "SequenceErase",
                           "SequenceLength", "SequenceMap", "SplitToSequence", "ConcatFromSequence", "Optional",
                           "OptionalGetElement", "OptionalHasElement"})
      t[op] = "it works on sequence or optional values, and Loom compiles tensors only";
    for (const char* op : {"StringNormalizer", "TfIdfVectorizer", "RegexFullMatch", "StringConcat", "StringSplit"})
      t[op] = "it works on strings, and Loom compiles numeric tensors only";
    for (const char* op : {"Loop", "Scan"})
      t[op] = "its iterations are control flow at run time (an If with a known condition is inlined)";
    return t;
  }();
  return table;
}

const HandlerTable& handlers() {
  static const HandlerTable table = [] {
    HandlerTable t;
    add_nn_handlers(t);
    add_elemwise_handlers(t);
    add_shape_handlers(t);
    add_reduce_handlers(t);
    add_rnn_handlers(t);
    add_resize_handlers(t);
    add_quant_handlers(t);
    add_scatter_handlers(t);
    return t;
  }();
  return table;
}

}  // namespace onnx_detail

using namespace onnx_detail;

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
  if (!options.shape_vars.empty()) {
    // Shape variables: one import per probe point, unified (symbolic_import.cc).
    Graph probe;
    probe.shape_vars = options.shape_vars;
    probe.verify_shape_vars();
    std::vector<SymbolicInputDim> dims = symbolic_input_dims(model.graph(), options.shape_vars, origin);
    const Graph::ShapeProbes probes = probe.shape_probes();
    std::vector<std::map<std::string, int64_t>> points = {probes.top};
    for (auto& [var, at] : probes.lower) points.push_back(at);
    for (const auto& at : probes.checks) points.push_back(at);
    std::vector<std::pair<std::map<std::string, int64_t>, Graph>> imported;
    for (const auto& at : points) {
      OnnxImportOptions at_point = options;
      at_point.shape_vars.clear();
      for (auto& [input, shape] : shapes_at(model.graph(), dims, at, origin)) {
        if (options.input_shapes.count(input))
          LOOM_THROW(ModelError, origin, ": input '", input, "' has both a given shape and shape variables");
        at_point.input_shapes[input] = shape;
      }
      Importer im(origin, base_dir, at_point, /*probe=*/true);
      imported.emplace_back(at, im.run(model));
    }
    Graph g = unify_probes(std::move(imported), options.shape_vars, dims, origin);
    for (const auto& p : model.metadata_props()) g.metadata[p.key()] = p.value();
    return g;
  }
  Importer im(origin, base_dir, options);
  Graph g = im.run(model);
  for (const auto& p : model.metadata_props()) g.metadata[p.key()] = p.value();
  return g;
}

std::string onnx_detail::file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) LOOM_THROW(RuntimeError, "cannot open '", path, "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

NDArray read_onnx_tensor(const std::string& path) {
  onnx::TensorProto t;
  std::string bytes = file_bytes(path);
  if (!t.ParseFromString(bytes))
    LOOM_THROW(ModelError, "'", path, "': not a serialized ONNX tensor (the protobuf does not parse)");
  std::string base = std::filesystem::path(path).parent_path().string();
  return tensor_value(t, base.empty() ? "." : base, "'" + path + "'");
}

std::string onnx_with_outputs(const std::string& path, const std::vector<std::string>& outputs) {
  onnx::ModelProto model;
  if (!model.ParseFromString(file_bytes(path)) || !model.has_graph())
    LOOM_THROW(ModelError, "'", path, "': not a valid ONNX model");
  onnx::GraphProto* g = model.mutable_graph();
  for (const auto& init : g->initializer())
    if (init.data_location() == onnx::TensorProto::EXTERNAL)
      LOOM_THROW(ModelError, "'", path, "': initializer '", init.name(),
                 "' is in an external data file; the model with its values as outputs is written elsewhere, where "
                 "the file would not be found");
  std::set<std::string> present;
  for (const auto& o : g->output()) present.insert(o.name());
  for (const std::string& name : outputs) {
    if (!present.insert(name).second) continue;
    onnx::ValueInfoProto* o = g->add_output();
    o->set_name(name);
    o->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
  return model.SerializeAsString();
}

Graph import_onnx(const std::string& path, const OnnxImportOptions& options) {
  return import_onnx_file_bytes(file_bytes(path), path, options);
}

Graph onnx_detail::import_onnx_file_bytes(const std::string& bytes, const std::string& path,
                                          const OnnxImportOptions& options) {
  std::string base = std::filesystem::path(path).parent_path().string();
  Graph g = import_onnx_bytes(bytes, "'" + path + "'", base.empty() ? "." : base, options);
  if (g.name == "model" || g.name.empty() || g.name.find_first_of(" /") != std::string::npos || g.name == "torch_jit" ||
      g.name == "main_graph")
    g.name = std::filesystem::path(path).stem().string();
  return g;
}

}  // namespace loom::frontend
