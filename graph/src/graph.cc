#include "loom/graph/graph.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>
#include <sstream>

#include "loom/graph/op_registry.h"
#include "loom/runtime/error.h"

namespace loom::graph {

int64_t TensorType::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void TensorType::check_size() const {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) LOOM_THROW(ShapeError, "shape ", shape_str(shape), " has a negative dimension");
    if (__builtin_mul_overflow(n, d == 0 ? 1 : d, &n) || n > kMaxTensorElements)
      LOOM_THROW(ShapeError, "shape ", shape_str(shape), " is too large (more than 2^40 elements)");
  }
}

std::string TensorType::str() const {
  return dtype.str() + (dims.empty() ? shape_str(shape) : runtime::shape_expr_str(dims));
}

namespace {
const AttrValue& find_attr(const std::map<std::string, AttrValue>& m, const std::string& key) {
  auto it = m.find(key);
  if (it == m.end()) LOOM_THROW(ModelError, "missing attribute '", key, "'");
  return it->second;
}
std::string list_str(const auto& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}
}  // namespace

int64_t Attrs::get_int(const std::string& key) const {
  const AttrValue& v = find_attr(values_, key);
  if (auto* i = std::get_if<int64_t>(&v)) return *i;
  LOOM_THROW(ModelError, "attribute '", key, "' must be an integer");
}

double Attrs::get_float(const std::string& key) const {
  const AttrValue& v = find_attr(values_, key);
  if (auto* f = std::get_if<double>(&v)) return *f;
  if (auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  LOOM_THROW(ModelError, "attribute '", key, "' must be a number");
}

std::string Attrs::get_string(const std::string& key) const {
  const AttrValue& v = find_attr(values_, key);
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  LOOM_THROW(ModelError, "attribute '", key, "' must be a string");
}

std::vector<int64_t> Attrs::get_ints(const std::string& key) const {
  const AttrValue& v = find_attr(values_, key);
  if (auto* l = std::get_if<std::vector<int64_t>>(&v)) return *l;
  if (auto* i = std::get_if<int64_t>(&v)) return {*i};
  LOOM_THROW(ModelError, "attribute '", key, "' must be a list of integers");
}

std::string Attrs::str() const {
  std::ostringstream os;
  bool first = true;
  for (auto& [k, v] : values_) {
    os << (first ? "" : ", ") << k << "=";
    first = false;
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::string>)
            os << '"' << x << '"';
          else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>)
            os << x;
          else
            os << list_str(x);
        },
        v);
  }
  return os.str();
}

const ShapeVar* Graph::shape_var(const std::string& n) const {
  for (const ShapeVar& v : shape_vars)
    if (v.name == n) return &v;
  return nullptr;
}

std::map<std::string, int64_t> Graph::shape_var_maxima() const {
  std::map<std::string, int64_t> m;
  for (const ShapeVar& v : shape_vars) m[v.name] = v.max;
  return m;
}

namespace {
// The smallest value a probe takes: the minimum, or 1 for a variable that may be 0 (the graph
// has no types at 0, where its extents are empty; affine forms carry over).
int64_t probe_floor(const ShapeVar& v) { return std::max<int64_t>(v.min, 1); }
}  // namespace

Graph::ShapeProbes Graph::shape_probes() const {
  ShapeProbes p;
  p.top = shape_var_maxima();
  for (const ShapeVar& v : shape_vars) {
    if (v.min == v.max) continue;
    std::map<std::string, int64_t> at = p.top;
    at[v.name] = v.max - 1;
    p.lower.emplace_back(v.name, std::move(at));
  }
  std::map<std::string, int64_t> mid = p.top;
  bool checkable = false;
  for (const ShapeVar& v : shape_vars) {
    int64_t x = std::max(probe_floor(v), (v.min + v.max) / 2 - 1);
    if (x < v.max - 1) {
      mid[v.name] = x;
      checkable = true;
    }
  }
  if (checkable) p.checks.push_back(std::move(mid));
  // The minima, where that is neither the top, a lower probe nor the middle point.
  std::map<std::string, int64_t> low = p.top;
  for (const ShapeVar& v : shape_vars) low[v.name] = probe_floor(v);
  bool known = low == p.top;
  for (auto& [var, at] : p.lower) known |= at == low;
  for (auto& at : p.checks) known |= at == low;
  if (!known) p.checks.push_back(std::move(low));
  return p;
}

void Graph::set_shape_attr(int id, const std::string& key, const runtime::ShapeExpr& dims) {
  Node& n = node(id);
  n.attrs.set(key, runtime::eval_shape(dims, shape_var_maxima()));
  if (runtime::is_static(dims))
    n.sym_attrs.erase(key);
  else
    n.sym_attrs[key] = dims;
}

int Graph::add_input(const std::string& n, TensorType type) {
  if (!type.dims.empty()) {
    for (const std::string& v : runtime::shape_variables(type.dims))
      if (!shape_var(v))
        LOOM_THROW(ModelError, "input '", n, "' has the dimension variable '", v,
                   "', which is not one of the graph's shape variables (declare it with its range first)");
    type.shape = runtime::eval_shape(type.dims, shape_var_maxima());
    if (runtime::is_static(type.dims)) type.dims.clear();
  }
  Node node;
  node.kind = NodeKind::Input;
  node.name = n;
  node.type = std::move(type);
  node.typed = true;
  nodes.push_back(std::move(node));
  inputs.push_back(static_cast<int>(nodes.size() - 1));
  return inputs.back();
}

int Graph::add_constant(const std::string& n, NDArray value) {
  Node node;
  node.kind = NodeKind::Constant;
  node.name = n;
  node.type = {value.shape(), value.dtype()};
  node.typed = true;
  node.value = std::move(value);
  nodes.push_back(std::move(node));
  return static_cast<int>(nodes.size() - 1);
}

int Graph::add_op(const std::string& op, const std::string& n, std::vector<int> in, Attrs attrs) {
  for (int i : in)
    if (i < 0 || static_cast<size_t>(i) >= nodes.size())
      LOOM_THROW(ModelError, "node '", n, "' (", op, ") reads a node that does not exist");
  Node node;
  node.op = op;
  node.name = n;
  node.inputs = std::move(in);
  node.attrs = std::move(attrs);
  nodes.push_back(std::move(node));
  return static_cast<int>(nodes.size() - 1);
}

const Node& Graph::node(int id) const {
  LOOM_CHECK(id >= 0 && static_cast<size_t>(id) < nodes.size(), "node id ", id);
  return nodes[id];
}
Node& Graph::node(int id) {
  LOOM_CHECK(id >= 0 && static_cast<size_t>(id) < nodes.size(), "node id ", id);
  return nodes[id];
}

const TensorType& Graph::type_of(int id) const {
  const Node& n = node(id);
  LOOM_CHECK(n.typed, "type of node '", n.name, "' read before type inference");
  return n.type;
}

std::vector<std::vector<int>> Graph::users() const {
  std::vector<std::vector<int>> u(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int in : nodes[i].inputs) u[in].push_back(static_cast<int>(i));
  return u;
}

std::vector<int> Graph::topological_order() const {
  std::vector<int> order;
  std::vector<uint8_t> state(nodes.size(), 0);  // 0 new, 1 on stack, 2 done
  for (size_t root = 0; root < nodes.size(); ++root) {
    if (state[root]) continue;
    // Iterative DFS so deep graphs cannot overflow the stack.
    std::vector<std::pair<int, size_t>> stack{{static_cast<int>(root), 0}};
    state[root] = 1;
    while (!stack.empty()) {
      auto& [id, next] = stack.back();
      const Node& n = nodes[id];
      if (next < n.inputs.size()) {
        int in = n.inputs[next++];
        if (in < 0 || static_cast<size_t>(in) >= nodes.size())
          LOOM_THROW(ModelError, "node '", n.name, "' reads a node that does not exist");
        if (state[in] == 1)
          LOOM_THROW(ModelError, "the graph has a cycle through node '", nodes[in].name, "' (", nodes[in].op, ")");
        if (state[in] == 0) {
          state[in] = 1;
          stack.push_back({in, 0});
        }
      } else {
        state[id] = 2;
        order.push_back(id);
        stack.pop_back();
      }
    }
  }
  return order;
}

void Graph::compact() {
  std::vector<char> live(nodes.size(), 0);
  std::vector<int> work(outputs.begin(), outputs.end());
  for (int i : inputs) live[i] = 1;
  while (!work.empty()) {
    int id = work.back();
    work.pop_back();
    if (live[id] == 2) continue;
    live[id] = 2;
    for (int in : nodes[id].inputs) work.push_back(in);
  }
  std::vector<int> remap(nodes.size(), -1);
  std::deque<Node> kept;
  for (int id : topological_order()) {
    if (!live[id]) continue;
    remap[id] = static_cast<int>(kept.size());
    kept.push_back(std::move(nodes[id]));
  }
  for (Node& n : kept)
    for (int& in : n.inputs) in = remap[in];
  for (int& i : inputs) i = remap[i];
  for (int& o : outputs) o = remap[o];
  nodes = std::move(kept);
}

void Graph::replace_uses(int from, int to) {
  for (Node& n : nodes)
    for (int& in : n.inputs)
      if (in == from) in = to;
  for (int& o : outputs)
    if (o == from) o = to;
}

void Graph::verify_shape_vars() const {
  std::set<std::string> var_names;
  for (const ShapeVar& v : shape_vars) {
    if (v.name.empty() || !(std::isalpha(static_cast<unsigned char>(v.name[0])) || v.name[0] == '_'))
      LOOM_THROW(ModelError, "graph '", name, "': shape variable '", v.name, "' must be a name (a letter first)");
    if (!var_names.insert(v.name).second)
      LOOM_THROW(ModelError, "graph '", name, "': two shape variables are named '", v.name, "'");
    if (v.min < 0 || v.max < v.min || v.max < (v.min == 0 ? 2 : 1))
      LOOM_THROW(ModelError, "graph '", name, "': shape variable '", v.name, "' has the range [", v.min, ", ", v.max,
                 "]; it must be 0 <= min <= max, with max >= 2 where min is 0");
  }
}

void Graph::verify() const {
  verify_shape_vars();
  topological_order();  // every edge reads an existing node, and there is no cycle
  const std::map<std::string, int64_t> top = shape_var_maxima();
  for (const Node& n : nodes)
    for (const auto& [key, dims] : n.sym_attrs) {
      std::vector<int64_t> at_top;
      for (const runtime::DimExpr& d : dims) {
        for (const runtime::DimTerm& t : d.terms)
          if (!shape_var(t.var))
            LOOM_THROW(ModelError, "node '", n.name, "': attribute '", key, "' uses the shape variable '", t.var,
                       "', which the graph does not declare");
        at_top.push_back(d.eval(top));
      }
      std::vector<int64_t> have = n.attrs.has(key) && std::holds_alternative<int64_t>(n.attrs.values().at(key))
                                      ? std::vector<int64_t>{n.attrs.get_int(key)}
                                      : n.attrs.get_ints(key, {});
      if (have != at_top)
        LOOM_THROW(ModelError, "node '", n.name, "': attribute '", key, "' is ", runtime::shape_expr_str(dims),
                   " over shape variables, but holds ", shape_str(have), " rather than its value at their maxima ",
                   shape_str(at_top));
    }
  if (outputs.empty()) LOOM_THROW(ModelError, "graph '", name, "' has no outputs");
  for (int o : outputs)
    if (o < 0 || static_cast<size_t>(o) >= nodes.size())
      LOOM_THROW(ModelError, "graph '", name, "': an output refers to a missing node");
  std::set<int> listed;
  for (int i : inputs) {
    if (i < 0 || static_cast<size_t>(i) >= nodes.size() || !nodes[i].is_input())
      LOOM_THROW(ModelError, "graph '", name, "': an input refers to a node that is not an input");
    if (!listed.insert(i).second)
      LOOM_THROW(ModelError, "graph '", name, "': input '", nodes[i].name, "' is listed twice");
  }
  for (size_t id = 0; id < nodes.size(); ++id) {
    const Node& n = nodes[id];
    switch (n.kind) {
      case NodeKind::Input:
        if (!listed.count(static_cast<int>(id)))
          LOOM_THROW(ModelError, "graph '", name, "': input node '", n.name, "' is not in the graph's input list");
        [[fallthrough]];
      case NodeKind::Constant:
        if (!n.inputs.empty())
          LOOM_THROW(ModelError, "node '", n.name, "' is ", n.is_input() ? "an input" : "a constant",
                     " but reads other nodes");
        if (n.is_constant() && (n.value.shape() != n.type.shape || n.value.dtype() != n.type.dtype))
          LOOM_THROW(ModelError, "constant '", n.name, "' holds ", n.value.dtype().str(), list_str(n.value.shape()),
                     " but its type says ", n.type.str());
        break;
      case NodeKind::Op: {
        const OpDef* def = nullptr;
        try {
          def = &op_def(n.op);  // names the operator and lists the supported ones
        } catch (const ModelError& e) {
          LOOM_THROW(ModelError, "node '", n.name, "': ", e.what());
        }
        int count = static_cast<int>(n.inputs.size());
        if (count < def->min_inputs || count > def->max_inputs)
          LOOM_THROW(ModelError, "node '", n.name, "' (", n.op, "): takes ", def->min_inputs,
                     def->min_inputs == def->max_inputs ? "" : " to " + std::to_string(def->max_inputs),
                     " inputs, has ", count);
        def->check_attrs(n);
        break;
      }
    }
  }
}

std::string Graph::str() const {
  std::ostringstream os;
  os << "graph " << name << "(";
  for (size_t i = 0; i < inputs.size(); ++i)
    os << (i ? ", " : "") << "%" << inputs[i] << ": " << nodes[inputs[i]].type.str();
  os << ") {\n";
  for (size_t id = 0; id < nodes.size(); ++id) {
    const Node& n = nodes[id];
    if (n.is_input()) continue;
    os << "  %" << id << " = ";
    if (n.is_constant()) {
      os << "constant";
    } else {
      os << n.op << "(";
      for (size_t i = 0; i < n.inputs.size(); ++i) os << (i ? ", " : "") << "%" << n.inputs[i];
      os << ")";
      if (!n.attrs.values().empty()) os << " {" << n.attrs.str() << "}";
    }
    if (n.typed) os << " : " << n.type.str();
    os << "  # " << n.name << "\n";
  }
  os << "  return ";
  for (size_t i = 0; i < outputs.size(); ++i) os << (i ? ", " : "") << "%" << outputs[i];
  os << "\n}\n";
  return os.str();
}

std::string Graph::unique_name(const std::string& base) const {
  std::set<std::string> used;
  for (auto& n : nodes) used.insert(n.name);
  if (!used.count(base)) return base;
  for (int i = 1;; ++i)
    if (!used.count(base + "_" + std::to_string(i))) return base + "_" + std::to_string(i);
}

std::vector<std::string> Graph::output_names() const {
  std::vector<std::string> names;
  for (int o : outputs) names.push_back(node(o).name);
  return names;
}

void Graph::name_outputs(const std::vector<std::string>& names) {
  LOOM_CHECK(names.size() == outputs.size(), "name_outputs: ", names.size(), " names for ", outputs.size(), " outputs");
  for (size_t k = 0; k < outputs.size(); ++k) {
    Node& out = node(outputs[k]);
    if (out.name == names[k]) continue;
    // An output read twice under two names keeps the first (one node has one name).
    bool earlier = false;
    for (size_t j = 0; j < k; ++j) earlier |= outputs[j] == outputs[k];
    // Inputs keep their names: they are what a caller binds by.
    bool input_holds = out.is_input();
    for (const Node& n : nodes) input_holds |= n.is_input() && n.name == names[k];
    if (earlier || input_holds) continue;
    for (Node& n : nodes)
      if (&n != &out && n.name == names[k]) n.name = unique_name(names[k] + "_orig");
    out.name = names[k];
  }
}

}  // namespace loom::graph
