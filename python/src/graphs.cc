// loom.Graph: Loom's graph IR built or read from Python (a front end's output, loom.compile's
// input), and loom.frontend.from_onnx. Each operator node is checked (registered operator, input
// count, attributes against its schema) and typed as it is added, so a front end learns at the
// call that made it which node is wrong.
#include <pybind11/stl.h>

#include <cmath>
#include <optional>

#include "bindings.h"
#include "loom/frontend/onnx.h"
#include "loom/frontend/recurrent.h"
#include "loom/frontend/resize.h"
#include "loom/graph/graph.h"
#include "loom/graph/layer_compare.h"
#include "loom/graph/op_registry.h"
#include "loom/graph/passes.h"
#include "loom/runtime/error.h"

namespace loom::python {

namespace {

using graph::Graph;

// A Python attribute value as the graph's: bool and int -> int, float -> float, str, and lists of
// ints or of floats (ints among floats read as floats).
graph::AttrValue attr_value(const py::handle& v, const std::string& what) {
  if (py::isinstance<py::bool_>(v) || py::isinstance<py::int_>(v)) return v.cast<int64_t>();
  if (py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    bool all_int = true;
    for (auto x : v) {
      if (py::isinstance<py::float_>(x)) {
        all_int = false;
      } else if (!py::isinstance<py::int_>(x) && !py::isinstance<py::bool_>(x)) {
        LOOM_THROW(TypeError, what, ": a list of ", type_name(x),
                   "; attributes are int, float, str or lists of ints or floats");
      }
    }
    if (all_int) return v.cast<std::vector<int64_t>>();
    return v.cast<std::vector<double>>();
  }
  LOOM_THROW(TypeError, what, ": a ", type_name(v), "; attributes are int, float, str or lists of ints or floats");
}

void check_id(const Graph& g, int id, const std::string& what) {
  if (id < 0 || size_t(id) >= g.nodes.size())
    LOOM_THROW(ModelError, what, ": node ", id, " does not exist (the graph has ", g.nodes.size(), " nodes)");
}

int add_input(Graph& g, const std::string& name, const std::vector<int64_t>& shape, const std::string& dtype) {
  graph::TensorType t{shape, tensor_dtype(dtype, "Graph.add_input '" + name + "'")};
  t.check_size();
  if (!name.empty() && g.unique_name(name) != name)
    LOOM_THROW(ModelError, "Graph.add_input: a node named '", name, "' exists already (input names are the model's)");
  return g.add_input(name.empty() ? g.unique_name("input") : name, t);
}

int add_constant(Graph& g, const std::string& name, const py::array& value) {
  const std::string n = g.unique_name(name.empty() ? "constant" : name);
  return g.add_constant(n, to_ndarray(value, "Graph.add_constant '" + n + "'"));
}

// An operator node, checked and typed before it joins the graph (a refused node leaves no trace).
int add_checked(Graph& g, const std::string& op, const std::vector<int>& inputs, graph::Attrs a, const std::string& n) {
  const std::string where = "node '" + n + "' (" + op + ")";
  const graph::OpDef& def = graph::op_def(op);  // ModelError naming an unknown operator
  if (int(inputs.size()) < def.min_inputs || int(inputs.size()) > def.max_inputs)
    LOOM_THROW(ModelError, where, ": ", inputs.size(), " inputs; ", op, " takes ",
               def.min_inputs == def.max_inputs
                   ? std::to_string(def.min_inputs)
                   : std::to_string(def.min_inputs) + " to " + std::to_string(def.max_inputs));
  for (int i : inputs) check_id(g, i, where);
  graph::Node probe;  // checked before it joins the graph, so a refused node leaves no trace
  probe.name = n;
  probe.op = op;
  probe.inputs = inputs;
  probe.attrs = a;
  def.check_attrs(probe);
  std::vector<graph::TensorType> in;
  for (int i : inputs) in.push_back(g.type_of(i));
  graph::TensorType t;
  try {
    t = def.infer_checked(probe, in);
  } catch (const Error& e) {
    std::string types;
    for (auto& x : in) types += (types.empty() ? "" : ", ") + x.str();
    LOOM_THROW(ModelError, where, " with inputs ", types, ": ", e.what());
  }
  int id = g.add_op(op, n, inputs, std::move(a));
  g.node(id).type = t;
  g.node(id).typed = true;
  return id;
}

int add_op(Graph& g, const std::string& op, const std::vector<int>& inputs, const py::dict& attrs,
           const std::string& name) {
  const std::string n = name.empty() ? g.unique_name(op) : g.unique_name(name);
  graph::Attrs a;
  for (auto [k, v] : attrs) {
    const std::string key = py::str(k);
    a.set(key, attr_value(v, "node '" + n + "' (" + op + ") attribute '" + key + "'"));
  }
  return add_checked(g, op, inputs, std::move(a), n);
}

// Adds to `g` for the graph-level builders (frontend/node_builder.h): nodes named `base` and a
// suffix, each checked and typed as add_op's.
frontend::NodeBuilder builder(Graph& g, const std::string& base) {
  return {[&g, base](NDArray v, const std::string& suffix) {
            return g.add_constant(g.unique_name(base + suffix), std::move(v));
          },
          [&g, base](const std::string& op, const std::vector<int>& in, graph::Attrs a, const std::string& suffix) {
            return add_checked(g, op, in, std::move(a), g.unique_name(base + suffix));
          },
          [&g](int id) { return g.type_of(id); }};
}

// Graph.add_resize: x resized to `sizes` by ONNX's Resize rules (frontend/resize.h), as the
// importer builds it: the tables as constants and one resample_axis per changed axis.
int add_resize(Graph& g, int x, const std::vector<int64_t>& sizes, const std::optional<std::vector<double>>& scales,
               const std::string& mode, const std::string& ctm, const std::string& nearest_mode, double cubic_coeff_a,
               bool exclude_outside, const std::string& name) {
  const std::string base = name.empty() ? "resize" : name;
  const std::string where = "Graph.add_resize '" + base + "'";
  check_id(g, x, where);
  const graph::TensorType t = g.type_of(x);
  if (sizes.size() != t.shape.size())
    LOOM_THROW(ShapeError, where, ": ", sizes.size(), " sizes for a tensor of rank ", t.shape.size());
  if (scales && scales->size() != sizes.size())
    LOOM_THROW(ShapeError, where, ": ", scales->size(), " scales for ", sizes.size(), " sizes");
  frontend::ResizeRules r;
  r.mode = mode;
  r.ctm = ctm;
  r.nearest = nearest_mode;
  r.cubic_a = cubic_coeff_a;
  r.exclude_outside = exclude_outside;
  if (ctm == "tf_crop_and_resize") LOOM_THROW(ModelError, where, ": tf_crop_and_resize needs a region (ONNX's roi)");
  if (std::string why = frontend::unsupported_resize(r); !why.empty()) LOOM_THROW(ModelError, where, ": ", why);
  std::vector<frontend::ResizeAxis> axes;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] < 1) LOOM_THROW(ShapeError, where, ": size ", sizes[d], " of dimension ", d, " is below 1");
    double scale = scales ? (*scales)[d] : double(sizes[d]) / double(t.shape[d]);
    if (!(scale > 0) || !std::isfinite(scale))
      LOOM_THROW(ShapeError, where, ": scale ", scale, " of dimension ", d, " is not a positive, finite factor");
    axes.push_back({t.shape[d], sizes[d], scale});
  }
  int y = frontend::build_resize(builder(g, base), x, t.dtype, axes, r);
  return y == x ? add_checked(g, "identity", {x}, {}, g.unique_name(base)) : y;
}

// Graph.add_recurrent: an RNN, GRU or LSTM layer unrolled as the ONNX importer unrolls it
// (frontend/recurrent.h), its weights as nodes in ONNX's layouts.
py::tuple add_recurrent(Graph& g, const std::string& cell, int x, int w, int r, std::optional<int> b,
                        std::optional<int> initial_h, std::optional<int> initial_c, std::optional<int> p,
                        int64_t hidden, const std::string& direction, bool batch_first, bool linear_before_reset,
                        const std::optional<std::vector<std::string>>& activations, double clip,
                        const std::optional<std::vector<int64_t>>& sequence_lengths, const std::string& name) {
  const std::string base = name.empty() ? cell : name;
  const std::string where = "Graph.add_recurrent '" + base + "'";
  frontend::RecurrentSpec s;
  if (cell == "rnn")
    s.cell = frontend::RecurrentCell::Rnn;
  else if (cell == "gru")
    s.cell = frontend::RecurrentCell::Gru;
  else if (cell == "lstm")
    s.cell = frontend::RecurrentCell::Lstm;
  else
    LOOM_THROW(ModelError, where, ": cell '", cell, "' is not one of rnn, gru, lstm");
  for (std::optional<int> id :
       {std::optional<int>(x), std::optional<int>(w), std::optional<int>(r), b, initial_h, initial_c, p})
    if (id) check_id(g, *id, where);
  const graph::TensorType xt = g.type_of(x);
  if (xt.shape.size() != 3) LOOM_THROW(ShapeError, where, ": X must have rank 3, is ", xt.str());
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    LOOM_THROW(ModelError, where, ": direction '", direction, "' is not one of forward, reverse, bidirectional");
  s.hidden = hidden;
  s.dirs = direction == "bidirectional" ? 2 : 1;
  s.reverse = direction == "reverse";
  s.batch_first = batch_first;
  s.seq = xt.shape[batch_first ? 1 : 0];
  s.batch = xt.shape[batch_first ? 0 : 1];
  s.input = xt.shape[2];
  s.linear_before_reset = linear_before_reset;
  s.clip = clip;
  s.dtype = xt.dtype;
  std::vector<std::string> names = activations ? *activations : std::vector<std::string>{};
  const size_t per_dir = frontend::default_recurrent_activations(s.cell).size();
  if (names.empty())
    for (int64_t d = 0; d < s.dirs; ++d)
      for (const std::string& a : frontend::default_recurrent_activations(s.cell)) names.push_back(a);
  if (names.size() == per_dir && s.dirs == 2) {  // the same for both directions
    const std::vector<std::string> once = names;
    names.insert(names.end(), once.begin(), once.end());
  }
  if (names.size() != per_dir * size_t(s.dirs))
    LOOM_THROW(ModelError, where, ": ", names.size(), " activations; ", cell, " takes ", per_dir, " per direction");
  s.acts.resize(size_t(s.dirs));
  for (size_t i = 0; i < names.size(); ++i) s.acts[i / per_dir].push_back(names[i]);
  if (sequence_lengths) s.lens = *sequence_lengths;
  frontend::RecurrentInputs in{x, w, r, b.value_or(-1), initial_h.value_or(-1), initial_c.value_or(-1), p.value_or(-1)};
  frontend::RecurrentOutputs out;
  try {
    out = frontend::build_recurrent(builder(g, base), s, in);
  } catch (const ModelError& e) {
    LOOM_THROW(ModelError, where, ": ", e.what());
  }
  return py::make_tuple(out.y, out.y_h, out.y_c >= 0 ? py::object(py::int_(out.y_c)) : py::object(py::none()));
}

void set_outputs(Graph& g, const std::vector<int>& ids) {
  if (ids.empty()) LOOM_THROW(ModelError, "Graph.outputs: a model needs at least one output");
  for (int i : ids) check_id(g, i, "Graph.outputs");
  g.outputs = ids;
}

Graph from_onnx(const std::string& path, const std::map<std::string, std::vector<int64_t>>& input_shapes,
                const std::map<std::string, std::pair<int64_t, int64_t>>& shape_vars) {
  frontend::OnnxImportOptions o;
  o.input_shapes = input_shapes;
  for (auto& [name, range] : shape_vars) o.shape_vars.push_back({name, range.first, range.second});
  py::gil_scoped_release released;
  return frontend::import_onnx(path, o);
}

}  // namespace

void register_graphs(py::module_& m) {
  py::class_<Graph>(m, "Graph",
                    "A model in Loom's graph IR: inputs, constants and operator nodes, each a number.\n"
                    "Built by a front end (loom.frontend.from_torch, from_onnx) or by hand; loom.compile takes it.")
      .def(py::init([](const std::string& name) {
             Graph g;
             g.name = name;
             return g;
           }),
           py::arg("name") = "model")
      .def_readwrite("name", &Graph::name, "The model's name.")
      .def("add_input", &add_input, py::arg("name"), py::arg("shape"), py::arg("dtype") = "float32",
           "add_input(name, shape, dtype='float32') -> int: a model input.")
      .def("add_constant", &add_constant, py::arg("name"), py::arg("value"),
           "add_constant(name, value) -> int: a constant (weights) holding a copy of the numpy array.")
      .def("add_resize", &add_resize, py::arg("x"), py::arg("sizes"), py::kw_only(), py::arg("scales") = py::none(),
           py::arg("mode") = "nearest", py::arg("coordinate_transformation_mode") = "half_pixel",
           py::arg("nearest_mode") = "round_prefer_floor", py::arg("cubic_coeff_a") = -0.75,
           py::arg("exclude_outside") = false, py::arg("name") = "",
           "add_resize(x, sizes, *, scales=None, mode='nearest', coordinate_transformation_mode='half_pixel',\n"
           "           nearest_mode='round_prefer_floor', cubic_coeff_a=-0.75, exclude_outside=False, name='')\n"
           "-> int: node x resized to `sizes` by ONNX's Resize rules (modes nearest, linear, cubic), as the\n"
           "ONNX importer builds it; `scales` (one per axis) are the factors the coordinates divide by\n"
           "(default sizes / input sizes).")
      .def("add_recurrent", &add_recurrent, py::arg("cell"), py::arg("x"), py::arg("w"), py::arg("r"),
           py::arg("b") = py::none(), py::arg("initial_h") = py::none(), py::arg("initial_c") = py::none(),
           py::arg("p") = py::none(), py::kw_only(), py::arg("hidden"), py::arg("direction") = "forward",
           py::arg("batch_first") = false, py::arg("linear_before_reset") = false, py::arg("activations") = py::none(),
           py::arg("clip") = 0.0, py::arg("sequence_lengths") = py::none(), py::arg("name") = "",
           "add_recurrent(cell, x, w, r, b=None, initial_h=None, initial_c=None, p=None, *, hidden,\n"
           "              direction='forward', batch_first=False, linear_before_reset=False, activations=None,\n"
           "              clip=0.0, sequence_lengths=None, name='') -> (y, y_h, y_c)\n"
           "An RNN, GRU or LSTM layer ('rnn', 'gru', 'lstm') unrolled over time as the ONNX importer unrolls\n"
           "it, over nodes in ONNX's layouts and gate orders (LSTM i, o, f, c; GRU z, r, h): X [seq, batch,\n"
           "input] ([batch, seq, input] batch first), W [D, G*H, input], R [D, G*H, H], B [D, 2*G*H], states\n"
           "[D, batch, H], P [D, 3*H]. Returns Y [seq, D, batch, H] ([batch, seq, D, H]), Y_h and Y_c (None\n"
           "but for the LSTM). activations: graph operators (sigmoid, tanh, relu), per direction or once.")
      .def("add_op", &add_op, py::arg("op"), py::arg("inputs"), py::arg("attrs") = py::dict(), py::arg("name") = "",
           "add_op(op, inputs, attrs={}, name='') -> int: an operator node over existing nodes, checked\n"
           "and typed now (loom.ModelError names the node and what is wrong). loom.operators() lists\n"
           "the operators and their attributes.")
      .def_property(
          "outputs", [](const Graph& g) { return g.outputs; }, &set_outputs,
          "The nodes whose values the model returns, in order.")
      .def_property_readonly(
          "inputs", [](const Graph& g) { return g.inputs; }, "The input nodes, in order.")
      .def(
          "shape",
          [](const Graph& g, int id) {
            check_id(g, id, "Graph.shape");
            return py::tuple(py::cast(g.type_of(id).shape));
          },
          py::arg("node"), "The shape of a node's value.")
      .def(
          "dtype",
          [](const Graph& g, int id) {
            check_id(g, id, "Graph.dtype");
            return numpy_dtype_name(g.type_of(id).dtype);
          },
          py::arg("node"), "numpy's name of a node's element type.")
      .def(
          "node_name",
          [](const Graph& g, int id) {
            check_id(g, id, "Graph.node_name");
            return g.node(id).name;
          },
          py::arg("node"), "A node's name.")
      .def(
          "op",
          [](const Graph& g, int id) {
            check_id(g, id, "Graph.op");
            const graph::Node& n = g.node(id);
            return n.is_op() ? n.op : n.is_input() ? std::string("input") : std::string("constant");
          },
          py::arg("node"), "A node's operator ('input' and 'constant' for those).")
      .def("__len__", [](const Graph& g) { return g.nodes.size(); })
      .def("__str__", [](const Graph& g) { return g.str(); })
      .def(
          "verify", [](const Graph& g) { graph::verify_types(g); },
          "Checks the structure and every node's type (loom.ModelError naming the node).");
  m.def(
      "operators",
      []() {
        py::dict out;
        for (const std::string& name : graph::op_names()) {
          const graph::OpDef& d = graph::op_def(name);
          py::dict attrs;
          for (const graph::AttrSpec& s : d.attrs) attrs[py::str(s.name)] = s.help;
          py::dict e;
          e["inputs"] = py::make_tuple(d.min_inputs, d.max_inputs);
          e["attrs"] = attrs;
          out[py::str(name)] = e;
        }
        return out;
      },
      "operators() -> {name: {'inputs': (min, max), 'attrs': {key: help}}}: Loom's graph operators.");
  m.def(
      "layer_error",
      [](const py::array& got, const py::array& want) {
        NDArray g = to_ndarray(got, "layer_error: got"), w = to_ndarray(want, "layer_error: want");
        return graph::layer_error(g, w);
      },
      py::arg("got"), py::arg("want"),
      "layer_error(got, want) -> float: the largest |got - want| over want's largest magnitude (infinity\n"
      "where got has a NaN or infinity want has not): the measure of loom.compare and `loom compare`.");
  m.def("from_onnx", &from_onnx, py::arg("path"),
        py::arg("input_shapes") = std::map<std::string, std::vector<int64_t>>{},
        py::arg("shape_vars") = std::map<std::string, std::pair<int64_t, int64_t>>{},
        "from_onnx(path, input_shapes={}, shape_vars={}) -> Graph: an ONNX model (opsets up to 18) as Loom's\n"
        "graph; input_shapes fixes symbolic dimensions by input name; shape_vars keeps named dimensions\n"
        "symbolic within a range ({'seq': (1, 512)}): the compiled model runs every length in it.");
}

}  // namespace loom::python
