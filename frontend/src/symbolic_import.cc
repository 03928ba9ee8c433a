// Shape variables in ONNX models: dimensions named by a dim_param (`seq`) that the options declare
// as shape variables. The importer evaluates shape computations (Shape -> Gather -> Concat ->
// Reshape) at import, so the model is imported once per probe point of the variables
// (Graph::shape_probes) and the graphs unified: they must have the same nodes; an integer
// attribute that differs becomes an affine form over the variables (Node::sym_attrs), and the
// input dimensions the variables name become symbolic. infer_types then derives every other
// dimension.
#include "symbolic_import.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include "loom/graph/passes.h"
#include "loom/runtime/error.h"

namespace loom::frontend::onnx_detail {

namespace {

using graph::Graph;
using graph::Node;
using Point = std::map<std::string, int64_t>;

std::string point_str(const Point& at) {
  std::string s;
  for (auto& [v, x] : at) s += (s.empty() ? "" : ", ") + v + " = " + std::to_string(x);
  return s;
}

// The integers of an attribute value (one for an int), or nullopt for another kind.
std::optional<std::vector<int64_t>> ints_of(const graph::AttrValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return std::vector<int64_t>{*i};
  if (auto* l = std::get_if<std::vector<int64_t>>(&v)) return *l;
  return std::nullopt;
}

bool same_value(const NDArray& a, const NDArray& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::equal(static_cast<const uint8_t*>(a.raw_data()), static_cast<const uint8_t*>(a.raw_data()) + a.nbytes(),
                    static_cast<const uint8_t*>(b.raw_data()));
}

}  // namespace

std::optional<runtime::DimExpr> dim_param_form(const std::string& text, const std::vector<graph::ShapeVar>& vars) {
  auto is_var = [&](const std::string& name) {
    return std::any_of(vars.begin(), vars.end(), [&](const graph::ShapeVar& v) { return v.name == name; });
  };
  runtime::DimExpr form = runtime::DimExpr::constant(0);
  size_t i = 0;
  int sign = 1;
  bool expect_term = true, any_var = false;
  auto skip = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  auto name_at = [&] {
    size_t start = i;
    while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_')) ++i;
    return text.substr(start, i - start);
  };
  for (skip(); i < text.size(); skip()) {
    char c = text[i];
    if (!expect_term) {
      if (c != '+' && c != '-') return std::nullopt;
      sign = c == '+' ? 1 : -1;
      ++i;
      expect_term = true;
      continue;
    }
    int64_t coeff = 1;
    if (std::isdigit(static_cast<unsigned char>(c))) {
      std::string digits = name_at();
      if (digits.size() > 9 ||
          !std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
        return std::nullopt;
      coeff = std::stoll(digits);
      skip();
      if (i >= text.size() || text[i] != '*') {  // a constant term
        form = form + runtime::DimExpr::constant(sign * coeff);
        expect_term = false;
        continue;
      }
      ++i;
      skip();
    }
    std::string name = name_at();
    if (name.empty() || !is_var(name)) return std::nullopt;
    form = form + runtime::DimExpr::variable(name) * (sign * coeff);
    any_var = true;
    expect_term = false;
  }
  if (expect_term || !any_var) return std::nullopt;
  return form;
}

std::vector<SymbolicInputDim> symbolic_input_dims(const onnx::GraphProto& gp, const std::vector<graph::ShapeVar>& vars,
                                                  const std::string& origin) {
  std::vector<SymbolicInputDim> dims;
  std::set<std::string> used;
  for (const auto& in : gp.input()) {
    if (!in.type().has_tensor_type() || !in.type().tensor_type().has_shape()) continue;
    const auto& shape = in.type().tensor_type().shape();
    for (int d = 0; d < shape.dim_size(); ++d) {
      if (!shape.dim(d).has_dim_param()) continue;
      std::optional<runtime::DimExpr> form = dim_param_form(shape.dim(d).dim_param(), vars);
      if (!form) continue;
      dims.push_back({in.name(), d, *form});
      for (const std::string& v : runtime::shape_variables({*form})) used.insert(v);
    }
  }
  for (const graph::ShapeVar& v : vars)
    if (!used.count(v.name)) {
      std::string params;
      for (const auto& in : gp.input())
        if (in.type().has_tensor_type())
          for (const auto& d : in.type().tensor_type().shape().dim())
            if (d.has_dim_param()) params += (params.empty() ? "" : ", ") + in.name() + ":" + d.dim_param();
      LOOM_THROW(ModelError, origin, ": shape variable '", v.name, "' names no input dimension (the model's named ",
                 "dimensions: ", params.empty() ? "none" : params, ")");
    }
  return dims;
}

std::map<std::string, std::vector<int64_t>> shapes_at(const onnx::GraphProto& gp,
                                                      const std::vector<SymbolicInputDim>& dims, const Point& at,
                                                      const std::string& origin) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const SymbolicInputDim& s : dims) {
    if (shapes.count(s.input)) continue;
    for (const auto& in : gp.input()) {
      if (in.name() != s.input) continue;
      std::vector<int64_t> shape;
      for (int d = 0; d < in.type().tensor_type().shape().dim_size(); ++d) {
        const auto& dim = in.type().tensor_type().shape().dim(d);
        if (dim.has_dim_value() && dim.dim_value() > 0) {
          shape.push_back(dim.dim_value());
          continue;
        }
        auto named = std::find_if(dims.begin(), dims.end(),
                                  [&](const SymbolicInputDim& o) { return o.input == s.input && o.axis == d; });
        if (named == dims.end())
          LOOM_THROW(ModelError, origin, ": input '", s.input, "': dimension '",
                     dim.has_dim_param() ? dim.dim_param() : "?",
                     "' is neither static nor a shape variable (declare it with --shape-var NAME=MIN..MAX; a sum of ",
                     "variables is written as one, e.g. 'past + seq')");
        shape.push_back(named->dim.eval(at));
      }
      shapes[s.input] = shape;
    }
  }
  return shapes;
}

Graph unify_probes(std::vector<std::pair<Point, Graph>> imported, const std::vector<graph::ShapeVar>& vars,
                   const std::vector<SymbolicInputDim>& dims, const std::string& origin) {
  const Point top = imported[0].first;
  Graph g = std::move(imported[0].second);
  imported.erase(imported.begin());  // the others are compared with it
  g.shape_vars = vars;
  const graph::Graph::ShapeProbes probes = g.shape_probes();
  auto graph_at = [&](const Point& at) -> const Graph& {
    for (auto& [p, other] : imported)
      if (p == at) return other;
    if (at == top) return g;
    LOOM_THROW(InternalError, "no import at ", point_str(at));
  };
  // Constants an operator or the outputs read (shape computations folded at import leave others).
  std::vector<bool> read(g.nodes.size(), false);
  for (const Node& n : g.nodes)
    for (int i : n.inputs) read[size_t(i)] = true;
  for (int o : g.outputs) read[size_t(o)] = true;
  for (auto& [at, other] : imported) {
    if (other.nodes.size() != g.nodes.size())
      LOOM_THROW(ModelError, origin, ": the model imports to ", g.nodes.size(), " nodes at ", point_str(top), " but ",
                 other.nodes.size(), " at ", point_str(at),
                 ": its structure depends on the shape variables (give them fixed values)");
    for (size_t id = 0; id < g.nodes.size(); ++id) {
      const Node &a = g.nodes[id], &b = other.nodes[id];
      if (a.kind != b.kind || a.op != b.op || a.inputs != b.inputs)
        LOOM_THROW(ModelError, origin, ": node '", a.name, "' (", a.op.empty() ? "a value" : a.op, ") at ",
                   point_str(top), " is '", b.name, "' (", b.op.empty() ? "a value" : b.op, ") at ", point_str(at),
                   ": the model's structure depends on the shape variables (give them fixed values)");
      if (a.is_constant() && read[id] && !same_value(a.value, b.value))
        LOOM_THROW(ModelError, origin, ": the value of '", a.name, "', computed at import, depends on the shape ",
                   "variables (", a.value.describe(), " at ", point_str(top), ", ", b.value.describe(), " at ",
                   point_str(at), "); values computed from shapes at run time are not supported yet");
    }
  }
  // Attributes that differ: an affine form per element, from the top and each variable one lower,
  // checked at the check point.
  for (size_t id = 0; id < g.nodes.size(); ++id) {
    Node& n = g.nodes[id];
    for (const auto& [key, value] : n.attrs.values()) {
      bool differs = false;
      for (auto& [at, other] : imported) differs |= !(other.nodes[id].attrs.values().at(key) == value);
      if (!differs) continue;
      std::optional<std::vector<int64_t>> hi = ints_of(value);
      if (!hi)
        LOOM_THROW(ModelError, origin, ": node '", n.name, "' (", n.op, "): attribute '", key,
                   "' depends on the shape variables and is not an integer");
      runtime::ShapeExpr form = runtime::constant_shape(*hi);
      for (const auto& [var, at] : probes.lower) {
        std::optional<std::vector<int64_t>> lo = ints_of(graph_at(at).nodes[id].attrs.values().at(key));
        if (!lo || lo->size() != hi->size())
          LOOM_THROW(ModelError, origin, ": node '", n.name, "' (", n.op, "): attribute '", key,
                     "' changes its length with ", var);
        for (size_t k = 0; k < hi->size(); ++k)
          if (int64_t c = (*hi)[k] - (*lo)[k])
            form[k] = form[k] + runtime::DimExpr::variable(var) * c + runtime::DimExpr::constant(-c * top.at(var));
      }
      for (const Point& check : probes.checks) {
        std::optional<std::vector<int64_t>> mid = ints_of(graph_at(check).nodes[id].attrs.values().at(key));
        if (!mid || runtime::eval_shape(form, check) != *mid)
          LOOM_THROW(ModelError, origin, ": node '", n.name, "' (", n.op, "): attribute '", key, "' is not affine in ",
                     "the shape variables (", runtime::shape_expr_str(form), " at the probes, but ",
                     mid ? shape_str(*mid) : std::string("another kind"), " at ", point_str(check), ")");
      }
      n.sym_attrs[key] = form;
    }
  }
  for (const SymbolicInputDim& s : dims)
    for (int id : g.inputs) {
      Node& in = g.node(id);
      if (in.name != s.input) continue;
      if (in.type.dims.empty()) in.type.dims = runtime::constant_shape(in.type.shape);
      in.type.dims[size_t(s.axis)] = s.dim;
    }
  graph::infer_types(g);
  return g;
}

}  // namespace loom::frontend::onnx_detail
