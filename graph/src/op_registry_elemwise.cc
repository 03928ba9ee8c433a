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
                Bin{"minimum", ops::BinaryOp::Min, [](double a, double c) { return std::min(a, c); }},
                Bin{"pow", ops::BinaryOp::Pow, [](double a, double c) { return std::pow(a, c); }}}) {
    ops::BinaryOp op = b.op;
    OpDef& d = add({b.name, OpPattern::Broadcast, 2, 2,
                    [op](const Node&, const std::vector<TensorType>& in) {
                      same_dtype(in);
                      if (op == ops::BinaryOp::Pow) expect_float(in[0], "base");
                      return TensorType{ops::broadcast_shape(in[0].shape, in[1].shape), in[0].dtype};
                    },
                    [op](const Node&, const std::vector<Tensor>& in, const std::string& name) {
                      return ops::binary(op, in[0], in[1], name);
                    },
                    ref::broadcast(b.reference)});
    d.layout_rule = LayoutRule::Broadcasting;
    if (op == ops::BinaryOp::Add) d.int8 = Int8Rule::Add;
    if (op == ops::BinaryOp::Mul || op == ops::BinaryOp::Div) d.int8 = Int8Rule::ScaleByConstant;
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
  // Activations and element-wise functions of ONNX; float attributes with ONNX's defaults.
  auto attr = [](const Node& n, const char* name, double def) { return n.attrs.get_float(name, def); };
  auto c = [](Expr x, double v) { return ir::make_const(x.type(), v); };
  unary(
      "reciprocal", true, [c](const Node&, Expr x) { return c(x, 1.0) / x; },
      [](const Node&, double x) { return 1.0 / x; });
  unary(
      "softsign", true, [c](const Node&, Expr x) { return x / (c(x, 1.0) + ir::abs(x)); },
      [](const Node&, double x) { return x / (1.0 + std::fabs(x)); });
  unary(
      "softplus", true, [c](const Node&, Expr x) { return ir::log(ir::exp(x) + c(x, 1.0)); },
      [](const Node&, double x) { return std::log(std::exp(x) + 1.0); });
  unary(
      "log", true, [](const Node&, Expr x) { return ir::log(x); }, [](const Node&, double x) { return std::log(x); });
  unary(
      "sign", false,
      [c](const Node&, Expr x) {
        return ir::select(x > c(x, 0.0), c(x, 1.0), ir::select(x < c(x, 0.0), c(x, -1.0), c(x, 0.0)));
      },
      [](const Node&, double x) { return double((x > 0) - (x < 0)); });
  unary(
      "elu", true,
      [attr, c](const Node& n, Expr x) {
        return ir::select(x > c(x, 0.0), x, c(x, attr(n, "alpha", 1.0)) * (ir::exp(x) - c(x, 1.0)));
      },
      [attr](const Node& n, double x) { return x > 0 ? x : attr(n, "alpha", 1.0) * (std::exp(x) - 1.0); });
  const double selu_alpha = 1.67326319217681884765625, selu_gamma = 1.05070102214813232421875;
  unary(
      "selu", true,
      [=](const Node& n, Expr x) {
        Expr a = c(x, attr(n, "alpha", selu_alpha)), g = c(x, attr(n, "gamma", selu_gamma));
        return ir::select(x > c(x, 0.0), g * x, g * (a * ir::exp(x) - a));
      },
      [=](const Node& n, double x) {
        double a = attr(n, "alpha", selu_alpha), g = attr(n, "gamma", selu_gamma);
        return x > 0 ? g * x : g * (a * std::exp(x) - a);
      });
  unary(
      "celu", true,
      [attr, c](const Node& n, Expr x) {
        Expr a = c(x, attr(n, "alpha", 1.0)), zero = c(x, 0.0);
        return ir::max(zero, x) + ir::min(zero, a * (ir::exp(x / a) - c(x, 1.0)));
      },
      [attr](const Node& n, double x) {
        double a = attr(n, "alpha", 1.0);
        return std::max(0.0, x) + std::min(0.0, a * (std::exp(x / a) - 1.0));
      });
  unary(
      "hard_sigmoid", true,
      [attr, c](const Node& n, Expr x) {
        Expr y = c(x, attr(n, "alpha", 0.2)) * x + c(x, attr(n, "beta", 0.5));
        return ir::max(c(x, 0.0), ir::min(c(x, 1.0), y));
      },
      [attr](const Node& n, double x) {
        return std::max(0.0, std::min(1.0, attr(n, "alpha", 0.2) * x + attr(n, "beta", 0.5)));
      });
  unary(
      "hard_swish", true,
      [c](const Node&, Expr x) { return x * ir::max(c(x, 0.0), ir::min(c(x, 1.0), x * c(x, 1.0 / 6.0) + c(x, 0.5))); },
      [](const Node&, double x) { return x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5)); });
  unary(
      "thresholded_relu", true,
      [attr, c](const Node& n, Expr x) { return ir::select(x > c(x, attr(n, "alpha", 1.0)), x, c(x, 0.0)); },
      [attr](const Node& n, double x) { return x > attr(n, "alpha", 1.0) ? x : 0.0; });
  unary(
      "floor", true, [](const Node&, Expr x) { return ir::floor(x); },
      [](const Node&, double x) { return std::floor(x); });
  unary(
      "ceil", true, [](const Node&, Expr x) { return ir::ceil(x); },
      [](const Node&, double x) { return std::ceil(x); });
  unary(
      "round", true, [](const Node&, Expr x) { return ir::round_even(x); },
      [](const Node&, double x) { return std::nearbyint(x); });
  unary(
      "sin", true, [](const Node&, Expr x) { return ir::sin(x); }, [](const Node&, double x) { return std::sin(x); });
  unary(
      "cos", true, [](const Node&, Expr x) { return ir::cos(x); }, [](const Node&, double x) { return std::cos(x); });
  unary(
      "tan", true, [](const Node&, Expr x) { return ir::sin(x) / ir::cos(x); },
      [](const Node&, double x) { return std::tan(x); });
  unary(
      "shrink", false,
      [attr, c](const Node& n, Expr x) {
        Expr l = c(x, attr(n, "lambd", 0.5)), b = c(x, attr(n, "bias", 0.0));
        return ir::select(x < -l, x + b, ir::select(x > l, x - b, c(x, 0.0)));
      },
      [attr](const Node& n, double x) {
        double l = attr(n, "lambd", 0.5), b = attr(n, "bias", 0.0);
        return x < -l ? x + b : x > l ? x - b : 0.0;
      });
  // Inverse and hyperbolic trigonometry from exp, log, sqrt and ops::atan (all vectorize).
  unary(
      "atan", true, [](const Node&, Expr x) { return ops::atan(x); },
      [](const Node&, double x) { return std::atan(x); });
  unary(
      "asin", true, [c](const Node&, Expr x) { return ops::atan(x / ir::sqrt(c(x, 1.0) - x * x)); },
      [](const Node&, double x) { return std::asin(x); });
  unary(
      "acos", true,
      [c](const Node&, Expr x) { return c(x, 2.0) * ops::atan(ir::sqrt((c(x, 1.0) - x) / (c(x, 1.0) + x))); },
      [](const Node&, double x) { return std::acos(x); });
  // Near 0 the exp/log forms cancel (1% error at 1e-5 in float32): there the odd Taylor series.
  auto near0 = [c](Expr x, Expr series, Expr general) { return ir::select(ir::abs(x) < c(x, 0.05), series, general); };
  unary(
      "sinh", true,
      [c, near0](const Node&, Expr x) {
        Expr x2 = x * x;
        return near0(x, x * (c(x, 1.0) + x2 * (c(x, 1.0 / 6) + x2 * c(x, 1.0 / 120))),
                     (ir::exp(x) - ir::exp(-x)) * c(x, 0.5));
      },
      [](const Node&, double x) { return std::sinh(x); });
  unary(
      "cosh", true, [c](const Node&, Expr x) { return (ir::exp(x) + ir::exp(-x)) * c(x, 0.5); },
      [](const Node&, double x) { return std::cosh(x); });
  unary(
      "asinh", true,
      [c, near0](const Node&, Expr x) {
        Expr a = ir::abs(x), y = ir::log(a + ir::sqrt(a * a + c(x, 1.0)));
        Expr x2 = x * x;
        return near0(x, x * (c(x, 1.0) + x2 * (c(x, -1.0 / 6) + x2 * c(x, 3.0 / 40))),
                     ir::select(x < c(x, 0.0), -y, y));
      },
      [](const Node&, double x) { return std::asinh(x); });
  unary(
      "acosh", true, [c](const Node&, Expr x) { return ir::log(x + ir::sqrt(x * x - c(x, 1.0))); },
      [](const Node&, double x) { return std::acosh(x); });
  unary(
      "atanh", true,
      [c, near0](const Node&, Expr x) {
        Expr x2 = x * x;
        return near0(x, x * (c(x, 1.0) + x2 * (c(x, 1.0 / 3) + x2 * c(x, 1.0 / 5))),
                     c(x, 0.5) * ir::log((c(x, 1.0) + x) / (c(x, 1.0) - x)));
      },
      [](const Node&, double x) { return std::atanh(x); });
  // erf as x P(x^2) / Q(x^2), a rational of degrees 6 and 4 in x^2 fitted (minimax) on [-3.92,
  // 3.92], beyond which erf rounds to +-1 in float: absolute error below 3.6e-7 in float
  // arithmetic (GraphOps.ErfIsWithinItsBoundOverTheWholeRange). Eleven multiply-adds and one
  // division, no exp and no cancellation near 0, so GELU's erf takes few vector operations. A
  // true division, not recip_finite: near |x| = 3.9, where erf is within a float step of 1, the
  // bound leaves less than one step of room, less than a reciprocal estimate's error. x is
  // clamped by selects, so NaN stays NaN and +-inf gives +-1 (to within one float step).
  unary(
      "erf", true,
      [c](const Node&, Expr x) {
        Expr xc = ir::select(x > c(x, 3.92), c(x, 3.92), x);
        xc = ir::select(xc < c(x, -3.92), c(x, -3.92), xc);
        Expr u = xc * xc;
        Expr p = c(x, 1.9919690318264493e-08);
        for (double k : {-1.9942103794005572e-06, 1.4898809988386495e-04, 3.9731335030398964e-03,
                         5.1398191664134979e-02, 2.0612126985282042e-01, 1.1283787776363547e+00})
          p = p * u + c(x, k);
        Expr q = c(x, 1.02416701320138e-03);
        for (double k : {1.488977521312913e-02, 1.1756744504434642e-01, 5.159989865177511e-01, 1.0})
          q = q * u + c(x, k);
        return xc * p / q;
      },
      [](const Node&, double x) { return std::erf(x); });
  unary(
      "identity", false, [](const Node&, Expr x) { return x; }, [](const Node&, double x) { return x; })
      .nonnegative = input0_nonnegative;
}

}  // namespace loom::graph
