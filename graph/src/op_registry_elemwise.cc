// Operator family: element-wise ops: broadcasting binary arithmetic and unary functions. Each operator: fusion pattern,
// input count, type inference, tensor expressions, reference implementation (op_registry.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include "op_registry_util.h"

namespace loom::graph {

using ir::Expr;
using ir::Tensor;

void add_elemwise_ops(const AddOp& add) {
  struct Bin {
    const char* name;
    ops::BinaryOp op;
    double (*reference)(double, double);
  };
  for (Bin b : {Bin{"add", ops::BinaryOp::Add, [](double a, double c) { return a + c; }},
                Bin{"sub", ops::BinaryOp::Sub, [](double a, double c) { return a - c; }},
                Bin{"mul", ops::BinaryOp::Mul, [](double a, double c) { return a * c; }},
                Bin{"div", ops::BinaryOp::Div, [](double a, double c) { return a / c; }},
                Bin{"maximum", ops::BinaryOp::Max, [](double a, double c) { return std::max(a, c); }},
                Bin{"minimum", ops::BinaryOp::Min, [](double a, double c) { return std::min(a, c); }}}) {
    ops::BinaryOp op = b.op;
    OpDef& d = add({b.name, OpPattern::Broadcast, 2, 2,
                    [](const Node&, const std::vector<TensorType>& in) {
                      same_dtype(in);
                      return TensorType{ops::broadcast_shape(in[0].shape, in[1].shape), in[0].dtype};
                    },
                    [op](const Node&, const std::vector<Tensor>& in, const std::string& name) {
                      return ops::binary(op, in[0], in[1], name);
                    },
                    ref::broadcast(b.reference)});
    d.layout_rule = LayoutRule::Broadcasting;
    if (op == ops::BinaryOp::Add) d.int8 = Int8Rule::Add;
  }
  // An element-wise op: its tensor expression f and its reference r, both of one element.
  using UnaryFn = std::function<Expr(const Node&, Expr)>;
  using UnaryRef = std::function<double(const Node&, double)>;
  auto unary = [&](const std::string& name, bool float_only, UnaryFn f, UnaryRef r) -> OpDef& {
    OpDef& d = add({name, OpPattern::ElemWise, 1, 1,
                    [float_only](const Node&, const std::vector<TensorType>& in) {
                      if (float_only) expect_float(in[0], "input");
                      return in[0];
                    },
                    [f](const Node& n, const std::vector<Tensor>& in, const std::string& nm) {
                      return ops::unary(
                          in[0], [&](Expr x) { return f(n, x); }, nm);
                    },
                    ref::elementwise(std::move(r))});
    d.layout_rule = LayoutRule::FollowsInput;
    return d;
  };
  const double inf = std::numeric_limits<double>::infinity();
  OpDef& relu = unary(
      "relu", false, [](const Node&, Expr x) { return ir::max(x, ir::make_zero(x.type())); },
      [](const Node&, double x) { return std::max(x, 0.0); });
  relu.nonnegative = [](const Node&, const std::function<bool(size_t)>&) { return true; };
  relu.int8 = Int8Rule::ScaleInvariant;
  relu.clamp = [inf](const Node&) { return ClampRange{0.0, inf}; };
  OpDef& clip = unary(
      "clip", false,
      [](const Node& n, Expr x) {
        Expr r = x;
        if (n.attrs.has("min")) r = ir::max(r, ir::make_const(x.type(), n.attrs.get_float("min")));
        if (n.attrs.has("max")) r = ir::min(r, ir::make_const(x.type(), n.attrs.get_float("max")));
        return r;
      },
      [](const Node& n, double x) {
        if (n.attrs.has("min")) x = std::max(x, n.attrs.get_float("min"));
        if (n.attrs.has("max")) x = std::min(x, n.attrs.get_float("max"));
        return x;
      });
  clip.clamp = [inf](const Node& n) {
    return ClampRange{n.attrs.has("min") ? n.attrs.get_float("min") : -inf,
                      n.attrs.has("max") ? n.attrs.get_float("max") : inf};
  };
  unary(
      "leaky_relu", true,
      [](const Node& n, Expr x) {
        return ir::select(x > ir::make_zero(x.type()), x,
                          x * ir::make_const(x.type(), n.attrs.get_float("alpha", 0.01)));
      },
      [](const Node& n, double x) { return x > 0 ? x : x * n.attrs.get_float("alpha", 0.01); });
  unary(
      "sigmoid", true, [](const Node&, Expr x) { return ops::sigmoid(x); },
      [](const Node&, double x) { return 1.0 / (1.0 + std::exp(-x)); });
  unary(
      "tanh", true, [](const Node&, Expr x) { return ir::tanh(x); },
      [](const Node&, double x) { return std::tanh(x); });
  unary(
      "exp", true, [](const Node&, Expr x) { return ir::exp(x); }, [](const Node&, double x) { return std::exp(x); });
  unary(
      "sqrt", true, [](const Node&, Expr x) { return ir::sqrt(x); },
      [](const Node&, double x) { return std::sqrt(x); });
  unary(
      "neg", false, [](const Node&, Expr x) { return -x; }, [](const Node&, double x) { return -x; });
  unary(
      "abs", false, [](const Node&, Expr x) { return ir::abs(x); }, [](const Node&, double x) { return std::fabs(x); });
  unary(
      "identity", false, [](const Node&, Expr x) { return x; }, [](const Node&, double x) { return x; })
      .nonnegative = input0_nonnegative;
}

}  // namespace loom::graph
