// loom.te: tensor expressions from Python, with TVM's names: placeholder, compute (a Python
// function of the index variables), reduce_axis, sum/max/min, the element-wise functions, and
// expressions built with Python's operators (a Python number takes the other operand's type).
#include <pybind11/functional.h>
#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "loom/ir/printer.h"
#include "loom/ir/simplify.h"
#include "loom/ir/tensor.h"
#include "loom/runtime/error.h"
#include "te.h"

namespace loom::python {

namespace {

using ir::Expr;
using ir::Tensor;
using ir::Var;

// A Python number as a constant of `like`'s type (int32 / float32 when there is none).
Expr number(const py::handle& v, const Expr* like, const std::string& what) {
  if (py::isinstance<py::bool_>(v)) return ir::make_const(DataType::Bool(), v.cast<bool>() ? 1 : 0);
  if (py::isinstance<py::int_>(v)) {
    DataType t = like ? like->type() : DataType::Int(32);
    return ir::make_const(t, double(v.cast<int64_t>()));
  }
  if (py::isinstance<py::float_>(v)) {
    DataType t = like && like->type().is_float() ? like->type() : DataType::Float(32);
    return ir::make_const(t, v.cast<double>());
  }
  LOOM_THROW(TypeError, what, ": a ", type_name(v), " is not an expression or a number");
}

Expr binary(const Expr& a, const py::object& b, bool reversed, Expr (*op)(Expr, Expr), const char* name) {
  Expr rhs = to_expr(b, &a, std::string("expression ") + name);
  return reversed ? op(rhs, a) : op(a, rhs);
}

Expr add(Expr a, Expr b) { return a + b; }
Expr sub(Expr a, Expr b) { return a - b; }
Expr mul(Expr a, Expr b) { return a * b; }
Expr div(Expr a, Expr b) { return a / b; }
Expr mod(Expr a, Expr b) { return a % b; }
Expr lt(Expr a, Expr b) { return a < b; }
Expr le(Expr a, Expr b) { return a <= b; }
Expr gt(Expr a, Expr b) { return a > b; }
Expr ge(Expr a, Expr b) { return a >= b; }
Expr eq(Expr a, Expr b) { return a == b; }
Expr ne(Expr a, Expr b) { return a != b; }
Expr land(Expr a, Expr b) { return a && b; }
Expr lor(Expr a, Expr b) { return a || b; }

std::vector<ir::IterVar> axes_of(const py::object& axis) {
  std::vector<ir::IterVar> out;
  if (py::isinstance<IterVarRef>(axis)) {
    out.push_back(axis.cast<IterVarRef>().iv);
  } else {
    for (auto a : axis) {
      if (!py::isinstance<IterVarRef>(a))
        LOOM_THROW(TypeError, "axis: a ", type_name(a), " is not an iteration variable (te.reduce_axis)");
      out.push_back(a.cast<IterVarRef>().iv);
    }
  }
  if (out.empty()) LOOM_THROW(TypeError, "axis: a reduction needs at least one reduce_axis");
  for (auto& iv : out)
    if (iv->kind != ir::IterKind::Reduce)
      LOOM_THROW(TypeError, "axis: '", iv->var.name(), "' is a data-parallel axis, not a reduce_axis");
  return out;
}

Tensor compute(const py::object& shape, const py::function& fcompute, const std::string& name, const std::string& tag) {
  std::vector<Expr> dims = shape_exprs(shape, "compute '" + name + "'");
  ir::ComputeFn fn = [&](const std::vector<Var>& vars) {
    py::tuple args(vars.size());
    for (size_t i = 0; i < vars.size(); ++i) args[i] = py::cast(Expr(vars[i]));
    py::object body = fcompute(*args);
    return to_expr(body, nullptr, "compute '" + name + "': the function's result");
  };
  return ir::compute(std::move(dims), fn, name, tag);
}

}  // namespace

Expr to_expr(const py::handle& v, const Expr* like, const std::string& what) {
  if (py::isinstance<Expr>(v)) return v.cast<Expr>();
  if (py::isinstance<IterVarRef>(v)) return v.cast<IterVarRef>().iv->var;
  return number(v, like, what);
}

std::vector<Expr> shape_exprs(const py::object& shape, const std::string& what) {
  std::vector<Expr> dims;
  if (py::isinstance<py::int_>(shape) || py::isinstance<Expr>(shape)) {
    dims.push_back(to_expr(shape, nullptr, what));
  } else {
    for (auto d : shape) {
      if (py::isinstance<py::int_>(d) && d.cast<int64_t>() < 0)
        LOOM_THROW(ShapeError, what, ": dimension ", d.cast<int64_t>(), " is negative");
      dims.push_back(to_expr(d, nullptr, what + ": a dimension"));
    }
  }
  return dims;
}

void register_te(py::module_& m) {
  py::module_ te = m.def_submodule("te", "Tensor expressions (TVM's loom.te names): see docs/python.md.");
  py::class_<Expr>(te, "Expr", "A scalar expression: build it with Python's operators and te's functions.")
      .def_property_readonly(
          "dtype", [](const Expr& e) { return e.type().str(); }, "The expression's type, e.g. 'float32'.")
      .def("__add__", [](const Expr& a, const py::object& b) { return binary(a, b, false, add, "+"); })
      .def("__radd__", [](const Expr& a, const py::object& b) { return binary(a, b, true, add, "+"); })
      .def("__sub__", [](const Expr& a, const py::object& b) { return binary(a, b, false, sub, "-"); })
      .def("__rsub__", [](const Expr& a, const py::object& b) { return binary(a, b, true, sub, "-"); })
      .def("__mul__", [](const Expr& a, const py::object& b) { return binary(a, b, false, mul, "*"); })
      .def("__rmul__", [](const Expr& a, const py::object& b) { return binary(a, b, true, mul, "*"); })
      .def("__truediv__", [](const Expr& a, const py::object& b) { return binary(a, b, false, div, "/"); })
      .def("__rtruediv__", [](const Expr& a, const py::object& b) { return binary(a, b, true, div, "/"); })
      .def("__floordiv__", [](const Expr& a, const py::object& b) { return binary(a, b, false, div, "//"); })
      .def("__mod__", [](const Expr& a, const py::object& b) { return binary(a, b, false, mod, "%"); })
      .def("__lt__", [](const Expr& a, const py::object& b) { return binary(a, b, false, lt, "<"); })
      .def("__le__", [](const Expr& a, const py::object& b) { return binary(a, b, false, le, "<="); })
      .def("__gt__", [](const Expr& a, const py::object& b) { return binary(a, b, false, gt, ">"); })
      .def("__ge__", [](const Expr& a, const py::object& b) { return binary(a, b, false, ge, ">="); })
      .def("__eq__", [](const Expr& a, const py::object& b) { return binary(a, b, false, eq, "=="); })
      .def("__ne__", [](const Expr& a, const py::object& b) { return binary(a, b, false, ne, "!="); })
      .def("__hash__", [](const Expr& e) { return std::hash<const void*>()(e.get()); })  // identity, as TVM's
      .def("equal", [](const Expr& a, const py::object& b) { return binary(a, b, false, eq, "=="); })
      .def("not_equal", [](const Expr& a, const py::object& b) { return binary(a, b, false, ne, "!="); })
      .def("__and__", [](const Expr& a, const py::object& b) { return binary(a, b, false, land, "&"); })
      .def("__or__", [](const Expr& a, const py::object& b) { return binary(a, b, false, lor, "|"); })
      .def("__neg__", [](const Expr& a) { return -a; })
      .def("astype", [](const Expr& a, const std::string& t) { return ir::cast(tensor_dtype(t, "astype"), a); })
      .def("__str__", [](const Expr& e) { return ir::to_string(e); })
      .def("__repr__", [](const Expr& e) { return "Expr(" + ir::to_string(e) + ")"; })
      .def("__bool__", [](const Expr& e) -> bool {
        LOOM_THROW(TypeError, "the expression '", ir::to_string(e),
                   "' has no truth value in Python: use te.if_then_else, & and | instead of if, and, or");
      });
  py::class_<IterVarRef>(te, "IterVar", "An iteration axis: a compute's axis or a reduce_axis.")
      .def_property_readonly("var", [](const IterVarRef& v) { return Expr(v.iv->var); })
      .def_property_readonly("name", [](const IterVarRef& v) { return v.iv->var.name(); })
      .def_property_readonly("dom",
                             [](const IterVarRef& v) {
                               return py::make_tuple(ir::to_string(v.iv->dom.min), ir::to_string(v.iv->dom.extent));
                             })
      .def("__add__", [](const IterVarRef& a, const py::object& b) { return binary(a.iv->var, b, false, add, "+"); })
      .def("__radd__", [](const IterVarRef& a, const py::object& b) { return binary(a.iv->var, b, true, add, "+"); })
      .def("__sub__", [](const IterVarRef& a, const py::object& b) { return binary(a.iv->var, b, false, sub, "-"); })
      .def("__mul__", [](const IterVarRef& a, const py::object& b) { return binary(a.iv->var, b, false, mul, "*"); })
      .def("__rmul__", [](const IterVarRef& a, const py::object& b) { return binary(a.iv->var, b, true, mul, "*"); })
      .def("__repr__", [](const IterVarRef& v) {
        return "IterVar(" + v.iv->var.name() + (v.iv->kind == ir::IterKind::Reduce ? ", reduce" : "") + ")";
      });
  py::class_<Tensor>(te, "Tensor", "A tensor: a placeholder (an input) or a compute; T[i, j] reads it.")
      .def_property_readonly("name", &Tensor::name)
      .def_property_readonly("dtype", [](const Tensor& t) { return t.dtype().str(); })
      .def_property_readonly("shape",
                             [](const Tensor& t) {
                               py::list out;
                               for (const Expr& d : t.shape()) {
                                 const int64_t* c = ir::as_const_int(d);
                                 out.append(c ? py::cast(*c) : py::cast(d));
                               }
                               return py::tuple(out);
                             })
      .def_property_readonly("ndim", &Tensor::ndim)
      .def_property_readonly(
          "op", [](const Tensor& t) { return OperationRef{t}; }, "The operation: its axis and reduce_axis.")
      .def("__getitem__",
           [](const Tensor& t, const py::object& index) {
             std::vector<Expr> idx;
             if (py::isinstance<py::tuple>(index)) {
               for (auto i : index) idx.push_back(to_expr(i, nullptr, t.name() + "[...]"));
             } else {
               idx.push_back(to_expr(index, nullptr, t.name() + "[...]"));
             }
             if (int(idx.size()) != t.ndim())
               LOOM_THROW(ShapeError, t.name(), "[...]: ", idx.size(), " indices for a tensor of rank ", t.ndim());
             return t(idx);
           })
      .def("__repr__", [](const Tensor& t) { return "Tensor(" + t.name() + ", " + t.dtype().str() + ")"; });
  py::class_<OperationRef>(te, "Operation", "A tensor's operation: axis (one per output dimension), reduce_axis.")
      .def_property_readonly("name", [](const OperationRef& o) { return o.tensor.name(); })
      .def_property_readonly("tag", [](const OperationRef& o) { return o.tensor.op()->tag; })
      .def_property_readonly("axis",
                             [](const OperationRef& o) {
                               std::vector<IterVarRef> out;
                               for (auto& iv : o.tensor.op()->axis) out.push_back({iv});
                               return out;
                             })
      .def_property_readonly("reduce_axis", [](const OperationRef& o) {
        std::vector<IterVarRef> out;
        for (auto& iv : o.tensor.op()->reduce_axes()) out.push_back({iv});
        return out;
      });

  te.def(
      "placeholder",
      [](const py::object& shape, const std::string& name, const std::string& dtype) {
        return ir::placeholder(shape_exprs(shape, "placeholder '" + name + "'"),
                               tensor_dtype(dtype, "placeholder '" + name + "'"), name);
      },
      py::arg("shape"), py::arg("name") = "placeholder", py::arg("dtype") = "float32",
      "placeholder(shape, name='placeholder', dtype='float32') -> Tensor: an input.");
  te.def("compute", &compute, py::arg("shape"), py::arg("fcompute"), py::arg("name") = "compute", py::arg("tag") = "",
         "compute(shape, fcompute, name='compute', tag='') -> Tensor: element [i, j, ...] is\n"
         "fcompute(i, j, ...), a Python function of the index expressions.");
  te.def(
      "reduce_axis",
      [](const py::object& dom, const std::string& name) {
        if (py::isinstance<py::tuple>(dom) || py::isinstance<py::list>(dom)) {
          auto t = dom.cast<py::sequence>();
          if (t.size() != 2) LOOM_THROW(TypeError, "reduce_axis '", name, "': dom is (min, end) or an extent");
          Expr lo = to_expr(t[0], nullptr, "reduce_axis"), hi = to_expr(t[1], nullptr, "reduce_axis");
          return IterVarRef{ir::reduce_axis(lo, ir::simplify(hi - lo), name)};
        }
        return IterVarRef{ir::reduce_axis(to_expr(dom, nullptr, "reduce_axis"), name)};
      },
      py::arg("dom"), py::arg("name") = "rv", "reduce_axis(dom, name='rv'): dom is (min, end) or an extent.");
  te.def(
      "sum",
      [](const py::object& e, const py::object& axis) { return ir::sum(to_expr(e, nullptr, "sum"), axes_of(axis)); },
      py::arg("expr"), py::arg("axis"), "sum(expr, axis): the sum over reduce axes.");
  te.def(
      "max",
      [](const py::object& e, const py::object& axis) {
        return ir::max_reduce(to_expr(e, nullptr, "max"), axes_of(axis));
      },
      py::arg("expr"), py::arg("axis"), "max(expr, axis): the maximum over reduce axes.");
  te.def(
      "min",
      [](const py::object& e, const py::object& axis) {
        return ir::min_reduce(to_expr(e, nullptr, "min"), axes_of(axis));
      },
      py::arg("expr"), py::arg("axis"), "min(expr, axis): the minimum over reduce axes.");
  te.def(
      "const",
      [](const py::object& v, const std::string& dtype) {
        return ir::make_const(tensor_dtype(dtype, "const"), v.cast<double>());
      },
      py::arg("value"), py::arg("dtype") = "float32", "const(value, dtype='float32') -> Expr.");
  te.def(
      "if_then_else",
      [](const py::object& c, const py::object& t, const py::object& f) {
        Expr te = to_expr(t, nullptr, "if_then_else");
        return ir::if_then_else(to_expr(c, nullptr, "if_then_else"), te, to_expr(f, &te, "if_then_else"));
      },
      py::arg("cond"), py::arg("t"), py::arg("f"), "if_then_else(cond, t, f) -> Expr.");
  te.def(
      "maximum",
      [](const py::object& a, const py::object& b) {
        Expr x = to_expr(a, nullptr, "maximum");
        return ir::max(x, to_expr(b, &x, "maximum"));
      },
      "maximum(a, b) -> Expr.");
  te.def(
      "minimum",
      [](const py::object& a, const py::object& b) {
        Expr x = to_expr(a, nullptr, "minimum");
        return ir::min(x, to_expr(b, &x, "minimum"));
      },
      "minimum(a, b) -> Expr.");
  for (auto [name, fn] : std::vector<std::pair<const char*, Expr (*)(Expr)>>{{"exp", ir::exp},
                                                                             {"sqrt", ir::sqrt},
                                                                             {"log", ir::log},
                                                                             {"tanh", ir::tanh},
                                                                             {"sigmoid", ir::sigmoid},
                                                                             {"abs", ir::abs},
                                                                             {"floor", ir::floor},
                                                                             {"ceil", ir::ceil}}) {
    const std::string n = name;
    te.def(
        name, [fn, n](const py::object& x) { return fn(to_expr(x, nullptr, n)); }, py::arg("x"),
        "An element-wise function of an expression (float types).");
  }
}

}  // namespace loom::python
