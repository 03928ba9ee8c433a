// Pass: infer_types. Output type of every operator node from its inputs' types; with shape
// variables, also each dimension as an affine form over them (infer_symbolic_dims).
#include <algorithm>
#include <variant>

#include "loom/graph/passes.h"
#include "loom/runtime/error.h"

namespace loom::graph {

namespace {

// Every operator's type from its inputs' (concrete) types.
void infer_concrete(Graph& g) {
  for (int id : g.topological_order()) {
    Node& n = g.node(id);
    if (!n.is_op()) continue;
    const OpDef& def = op_def(n.op);  // registered, with as many inputs as it takes: verify()
    std::vector<TensorType> in;
    for (int i : n.inputs) {
      in.push_back(g.type_of(i));
      in.back().dims.clear();  // operators type concrete shapes
    }
    try {
      n.type = def.infer_checked(n, in);
    } catch (const Error& e) {
      std::string types;
      for (auto& t : in) types += (types.empty() ? "" : ", ") + t.str();
      LOOM_THROW(ModelError, "node '", n.name, "' (", n.op, ") with inputs ", types, ": ", e.what());
    }
    n.typed = true;
  }
}

std::string point_str(const std::map<std::string, int64_t>& at) {
  std::string s;
  for (auto& [v, x] : at) s += (s.empty() ? "" : ", ") + v + " = " + std::to_string(x);
  return s;
}

}  // namespace

Graph graph_at(const Graph& g, const std::map<std::string, int64_t>& at) {
  Graph probe = g;
  for (int id : probe.inputs) {
    Node& in = probe.node(id);
    if (!in.type.dims.empty()) in.type.shape = runtime::eval_shape(in.type.dims, at);
    in.type.dims.clear();
  }
  for (Node& n : probe.nodes) {
    for (const auto& [key, dims] : n.sym_attrs) {
      std::vector<int64_t> v = runtime::eval_shape(dims, at);
      if (std::holds_alternative<int64_t>(n.attrs.values().at(key)))
        n.attrs.set(key, v.at(0));
      else
        n.attrs.set(key, v);
    }
    n.sym_attrs.clear();
  }
  try {
    infer_concrete(probe);
  } catch (const Error& e) {
    LOOM_THROW(ModelError, "the graph types only at some values of its shape variables: at ", point_str(at), ", ",
               e.what());
  }
  probe.shape_vars.clear();
  return probe;
}

namespace {

// The concrete shape of every node with the shape variables at `at`.
std::vector<Shape> shapes_at(const Graph& g, const std::map<std::string, int64_t>& at) {
  Graph probe = graph_at(g, at);
  std::vector<Shape> shapes;
  for (const Node& n : probe.nodes) shapes.push_back(n.type.shape);
  return shapes;
}

// Symbolic dimensions: the graph's types at the variables' maxima (already inferred) and with
// one variable at a time one lower give each dimension's coefficient of that variable; a third
// point, every variable elsewhere in its range, checks that the dimensions are affine. Operators
// keep their type functions on concrete shapes.
void infer_symbolic_dims(Graph& g) {
  const Graph::ShapeProbes probes = g.shape_probes();
  const std::map<std::string, int64_t>& top = probes.top;
  std::vector<runtime::ShapeExpr> dims(g.nodes.size());
  for (size_t id = 0; id < g.nodes.size(); ++id)
    if (g.nodes[id].is_op()) dims[id] = runtime::constant_shape(g.nodes[id].type.shape);
  for (const auto& [var, at] : probes.lower) {
    std::vector<Shape> lower = shapes_at(g, at);
    for (size_t id = 0; id < g.nodes.size(); ++id) {
      if (!g.nodes[id].is_op()) continue;
      const Shape& hi = g.nodes[id].type.shape;
      if (lower[id].size() != hi.size())
        LOOM_THROW(ModelError, "node '", g.nodes[id].name, "' (", g.nodes[id].op, ") has rank ", hi.size(), " at ",
                   point_str(top), " but ", lower[id].size(), " at ", point_str(at));
      for (size_t d = 0; d < hi.size(); ++d)
        if (int64_t c = hi[d] - lower[id][d]) {
          runtime::DimExpr term = runtime::DimExpr::variable(var) * c;
          dims[id][d] = dims[id][d] + term + runtime::DimExpr::constant(-c * top.at(var));
        }
    }
  }
  // The checks: every dimension affine (further points).
  for (const std::map<std::string, int64_t>& mid : probes.checks) {
    std::vector<Shape> check = shapes_at(g, mid);
    for (size_t id = 0; id < g.nodes.size(); ++id) {
      if (!g.nodes[id].is_op()) continue;
      for (size_t d = 0; d < dims[id].size(); ++d)
        if (check[id].size() != dims[id].size() || dims[id][d].eval(mid) != check[id][d])
          LOOM_THROW(ModelError, "node '", g.nodes[id].name, "' (", g.nodes[id].op, "): dimension ", d,
                     " is not affine in the shape variables (", dims[id][d].str(), " at the probes, but ",
                     check[id].size() == dims[id].size() ? std::to_string(check[id][d]) : std::string("another rank"),
                     " at ", point_str(mid), "); give the variable a fixed value or a narrower range");
    }
  }
  for (size_t id = 0; id < g.nodes.size(); ++id) {
    if (!g.nodes[id].is_op()) continue;
    g.nodes[id].type.dims = runtime::is_static(dims[id]) ? runtime::ShapeExpr{} : dims[id];
  }
}

}  // namespace

void infer_types(Graph& g) {
  g.verify();
  infer_concrete(g);
  if (!g.shape_vars.empty()) infer_symbolic_dims(g);
}

void verify_types(const Graph& g) {
  g.verify();
  for (int id : g.topological_order()) {
    const Node& n = g.node(id);
    if (!n.is_op() || !n.typed) continue;
    std::vector<TensorType> in;
    for (int i : n.inputs) {
      if (!g.node(i).typed)
        LOOM_THROW(ModelError, "node '", n.name, "' (", n.op, ") is typed but its input '", g.node(i).name, "' is not");
      in.push_back(g.node(i).type);
      in.back().dims.clear();
    }
    TensorType inferred;
    try {
      inferred = op_def(n.op).infer_checked(n, in);
    } catch (const Error& e) {
      LOOM_THROW(ModelError, "node '", n.name, "' (", n.op, "): its inputs and attributes no longer type: ", e.what());
    }
    inferred.dims = n.type.dims;  // the operators type concrete shapes; infer_types derives the dims
    if (!(inferred == n.type))
      LOOM_THROW(ModelError, "node '", n.name, "' (", n.op, ") says its type is ", n.type.str(),
                 " but its inputs give ", inferred.str());
  }
}

}  // namespace loom::graph
