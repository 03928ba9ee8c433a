// Operator family: comparisons, boolean logic, selection and the remainder (equal, less, ...,
// logical_and/or/xor/not, where, mod, is_inf, is_nan). Bool tensors are one byte per element,
// 0 or 1. Each operator: fusion pattern, input count, type inference, tensor expressions,
// reference implementation (op_registry.h).
#include <cmath>

#include "op_registry_util.h"

namespace loom::graph {

using ir::Expr;
using ir::Tensor;

namespace {

void expect_bool(const TensorType& t, const char* what) {
  if (!t.dtype.is_bool()) LOOM_THROW(TypeError, what, " must be bool, is ", t.str());
}

Shape broadcast_all(const std::vector<TensorType>& in) {
  Shape s = in[0].shape;
  for (size_t k = 1; k < in.size(); ++k) s = ops::broadcast_shape(s, in[k].shape);
  return s;
}

// Python's remainder (sign of the divisor, ONNX Mod with fmod=0) and C's fmod (sign of the
// dividend, fmod=1), as tensor expressions of one type and as doubles.
Expr remainder_expr(Expr a, Expr b, bool fmod) {
  if (!a.type().is_float()) {
    Expr r = a % b;  // floor modulo: the divisor's sign
    if (!fmod) return r;
    Expr zero = ir::make_zero(a.type());
    return ir::select(r != zero && ((r < zero) != (a < zero)), r - b, r);
  }
  Expr q = a / b;
  Expr t = fmod ? ir::select(q < ir::make_zero(q.type()), ir::ceil(q), ir::floor(q)) : ir::floor(q);
  return a - t * b;
}

double remainder_ref(double a, double b, bool fmod) {
  if (fmod) return std::fmod(a, b);
  double r = std::fmod(a, b);
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}

}  // namespace

void add_logic_ops(const AddOp& add) {
  using Cmp = Expr (*)(Expr, Expr);
  struct Compare {
    const char* name;
    Cmp expr;
    bool (*reference)(double, double);
  };
  for (Compare c :
       {Compare{"equal", [](Expr a, Expr b) { return a == b; }, [](double a, double b) { return a == b; }},
        Compare{"less", [](Expr a, Expr b) { return a < b; }, [](double a, double b) { return a < b; }},
        Compare{"less_equal", [](Expr a, Expr b) { return a <= b; }, [](double a, double b) { return a <= b; }},
        Compare{"greater", [](Expr a, Expr b) { return a > b; }, [](double a, double b) { return a > b; }},
        Compare{"greater_equal", [](Expr a, Expr b) { return a >= b; }, [](double a, double b) { return a >= b; }}}) {
    add({c.name, OpPattern::Broadcast, 2, 2,
         [](const Node&, const std::vector<TensorType>& in) {
           same_dtype(in);
           return TensorType{broadcast_all(in), DataType::Bool()};
         },
         [e = c.expr](const Node&, const std::vector<Tensor>& in, const std::string& name) {
           return ops::broadcast_map(
               in, [e](const std::vector<Expr>& x) { return e(x[0], x[1]); }, name);
         },
         ref::broadcast_n(
             [r = c.reference](const Node&, const std::vector<double>& x) { return double(r(x[0], x[1])); })});
  }
  struct Logic {
    const char* name;
    Cmp expr;
    bool (*reference)(bool, bool);
  };
  for (Logic l : {Logic{"logical_and", [](Expr a, Expr b) { return a && b; }, [](bool a, bool b) { return a && b; }},
                  Logic{"logical_or", [](Expr a, Expr b) { return a || b; }, [](bool a, bool b) { return a || b; }},
                  Logic{"logical_xor", [](Expr a, Expr b) { return a != b; }, [](bool a, bool b) { return a != b; }}}) {
    add({l.name, OpPattern::Broadcast, 2, 2,
         [](const Node&, const std::vector<TensorType>& in) {
           expect_bool(in[0], "input 0");
           expect_bool(in[1], "input 1");
           return TensorType{broadcast_all(in), DataType::Bool()};
         },
         [e = l.expr](const Node&, const std::vector<Tensor>& in, const std::string& name) {
           return ops::broadcast_map(
               in, [e](const std::vector<Expr>& x) { return e(x[0], x[1]); }, name);
         },
         ref::broadcast_n([r = l.reference](const Node&, const std::vector<double>& x) {
           return double(r(x[0] != 0, x[1] != 0));
         })});
  }
  add({"logical_not", OpPattern::ElemWise, 1, 1,
       [](const Node&, const std::vector<TensorType>& in) {
         expect_bool(in[0], "input");
         return in[0];
       },
       [](const Node&, const std::vector<Tensor>& in, const std::string& name) {
         return ops::unary(
             in[0], [](Expr x) { return !x; }, name);
       },
       ref::elementwise([](const Node&, double x) { return double(x == 0); })})
      .layout_rule = LayoutRule::FollowsInput;
  // where(cond, x, y): x where cond, else y; all three broadcast.
  add({"where", OpPattern::Broadcast, 3, 3,
       [](const Node&, const std::vector<TensorType>& in) {
         expect_bool(in[0], "the condition");
         if (in[1].dtype != in[2].dtype)
           LOOM_THROW(TypeError, "the two branches have different element types (", in[1].str(), ", ", in[2].str(),
                      ")");
         return TensorType{broadcast_all(in), in[1].dtype};
       },
       [](const Node&, const std::vector<Tensor>& in, const std::string& name) {
         return ops::broadcast_map(
             in, [](const std::vector<Expr>& x) { return ir::select(x[0], x[1], x[2]); }, name);
       },
       ref::broadcast_n([](const Node&, const std::vector<double>& x) { return x[0] != 0 ? x[1] : x[2]; })});
  // mod: attribute fmod (0: the divisor's sign, integers only; 1: the dividend's sign).
  add({"mod", OpPattern::Broadcast, 2, 2,
       [](const Node& n, const std::vector<TensorType>& in) {
         same_dtype(in);
         if (in[0].dtype.is_bool()) LOOM_THROW(TypeError, "operands must be numbers, are bool");
         if (in[0].dtype.is_float() && !n.attrs.get_int("fmod", 0))
           LOOM_THROW(TypeError, "a float remainder needs fmod=1, operands are ", in[0].str());
         return TensorType{broadcast_all(in), in[0].dtype};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         bool fmod = n.attrs.get_int("fmod", 0) != 0;
         return ops::broadcast_map(
             in, [fmod](const std::vector<Expr>& x) { return remainder_expr(x[0], x[1], fmod); }, name);
       },
       ref::broadcast_n([](const Node& n, const std::vector<double>& x) {
         return remainder_ref(x[0], x[1], n.attrs.get_int("fmod", 0) != 0);
       })});
  // is_inf (attributes detect_positive, detect_negative: default 1) and is_nan of floats.
  add({"is_inf", OpPattern::ElemWise, 1, 1,
       [](const Node&, const std::vector<TensorType>& in) {
         expect_float(in[0], "input");
         return TensorType{in[0].shape, DataType::Bool()};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         bool pos = n.attrs.get_int("detect_positive", 1) != 0, neg = n.attrs.get_int("detect_negative", 1) != 0;
         return ops::unary(
             in[0],
             [pos, neg](Expr x) {
               Expr inf = ir::make_const(x.type(), INFINITY);
               Expr p = pos ? (x == inf) : ir::make_zero(DataType::Bool());
               Expr m = neg ? (x == -inf) : ir::make_zero(DataType::Bool());
               return p || m;
             },
             name);
       },
       ref::elementwise([](const Node& n, double x) {
         return double(std::isinf(x) && ((x > 0 && n.attrs.get_int("detect_positive", 1)) ||
                                         (x < 0 && n.attrs.get_int("detect_negative", 1))));
       })});
  add({"is_nan", OpPattern::ElemWise, 1, 1,
       [](const Node&, const std::vector<TensorType>& in) {
         expect_float(in[0], "input");
         return TensorType{in[0].shape, DataType::Bool()};
       },
       [](const Node&, const std::vector<Tensor>& in, const std::string& name) {
         return ops::unary(
             in[0], [](Expr x) { return x != x; }, name);
       },
       ref::elementwise([](const Node&, double x) { return double(std::isnan(x)); })});
}

}  // namespace loom::graph
