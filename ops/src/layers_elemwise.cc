// Broadcasting element-wise ops, pooling and softmax for whole models (see layers.h).
#include <cmath>
#include <limits>

#include "innermost_reduction.h"
#include "loom/ir/buffer.h"
#include "loom/ir/printer.h"
#include "loom/ir/simplify.h"
#include "loom/ops/layers.h"
#include "loom/ops/nn.h"

namespace loom::ops {

using namespace loom::ir;

Shape broadcast_shape(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      LOOM_THROW(ShapeError, "shapes ", shape_str(a), " and ", shape_str(b), " do not broadcast (dimension ", i, ": ",
                 da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<Expr> broadcast_index(const Shape& s, const std::vector<Var>& v) {
  std::vector<Expr> idx;
  size_t off = v.size() - s.size();
  for (size_t d = 0; d < s.size(); ++d) idx.push_back(s[d] == 1 ? Expr(0) : Expr(v[off + d]));
  return idx;
}

namespace {
// broadcast_shape over extents that may be symbolic: a dimension of 1 takes the other's.
std::vector<Expr> broadcast_extents(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  size_t r = std::max(a.size(), b.size());
  std::vector<Expr> out(r);
  for (size_t i = 0; i < r; ++i) {
    Expr da = i < r - a.size() ? Expr(1) : a[i - (r - a.size())];
    Expr db = i < r - b.size() ? Expr(1) : b[i - (r - b.size())];
    if (is_one(da))
      out[i] = db;
    else if (is_one(db) || same_extent(da, db))
      out[i] = da;
    else
      LOOM_THROW(ShapeError, "extents ", ir::to_string(da), " and ", ir::to_string(db), " of dimension ", i,
                 " do not broadcast");
  }
  return out;
}
}  // namespace

Tensor broadcast_map(const std::vector<Tensor>& operands, const std::function<Expr(const std::vector<Expr>&)>& f,
                     const std::string& name) {
  std::vector<Expr> out;
  for (size_t k = 0; k < operands.size(); ++k)
    out = k == 0 ? operands[0].shape() : broadcast_extents(out, operands[k].shape());
  bool same = true;
  for (const Tensor& t : operands) {
    same &= t.ndim() == static_cast<int>(out.size());
    for (int d = 0; same && d < t.ndim(); ++d) same = same_extent(t.shape()[d], out[d]);
  }
  return compute(out, ComputeFn([&](const std::vector<Var>& v) {
                   std::vector<Expr> x;
                   for (const Tensor& t : operands) {
                     std::vector<Expr> idx;  // a dimension of 1 broadcasts
                     size_t off = v.size() - t.shape().size();
                     for (size_t d = 0; d < t.shape().size(); ++d)
                       idx.push_back(is_one(t.shape()[d]) ? Expr(0) : Expr(v[off + d]));
                     x.push_back(t(idx));
                   }
                   return f(x);
                 }),
                 name, same ? "elemwise" : "broadcast");
}

Tensor binary(BinaryOp op, const Tensor& A, const Tensor& B, const std::string& name) {
  if (A.dtype() != B.dtype()) LOOM_THROW(TypeError, name, ": operands are ", A.dtype().str(), " and ", B.dtype().str());
  return broadcast_map(
      {A, B},
      [op](const std::vector<Expr>& x) {
        const Expr &a = x[0], &b = x[1];
        switch (op) {
          case BinaryOp::Add:
            return a + b;
          case BinaryOp::Sub:
            return a - b;
          case BinaryOp::Mul:
            return a * b;
          case BinaryOp::Div:
            return a / b;
          case BinaryOp::Max:
            return max(a, b);
          case BinaryOp::Min:
            return min(a, b);
          case BinaryOp::Pow:
            return ir::pow(a, b);
        }
        return a;
      },
      name);
}

Tensor unary(const Tensor& X, const std::function<Expr(Expr)>& f, const std::string& name) {
  return compute(X.shape(),
                 ComputeFn([&](const std::vector<Var>& v) { return f(X(std::vector<Expr>(v.begin(), v.end()))); }),
                 name, "elemwise");
}

Expr sigmoid(Expr x) { return ir::sigmoid(std::move(x)); }

Expr atan(Expr x) {
  auto c = [&](double v) { return make_const(x.type(), v); };
  const double kPi = 3.14159265358979323846;
  Expr a = abs(x);
  // atan|x| = base + atan(r): r = -1/|x| above tan(3pi/8), (|x|-1)/(|x|+1) above tan(pi/8).
  Expr big = a > c(2.414213562373095), mid = a > c(0.4142135623730950);
  Expr r = select(big, c(-1.0) / a, select(mid, (a - c(1.0)) / (a + c(1.0)), a));
  Expr base = select(big, c(kPi / 2), select(mid, c(kPi / 4), c(0.0)));
  Expr z = r * r;
  Expr p =
      (((c(8.05374449538e-2) * z - c(1.38776856032e-1)) * z + c(1.99777106478e-1)) * z - c(3.33329491539e-1)) * z * r +
      r;
  Expr y = base + p;
  return select(x < c(0.0), -y, y);
}

Shape pool2d_shape(const Shape& x, const Pool2dParams& p) {
  if (x.size() != 4 && x.size() != 5)
    LOOM_THROW(ShapeError, "pool2d: input must be NCHW (rank 4) or NCHWc (rank 5), has rank ", x.size());
  for (int i = 0; i < 2; ++i)
    if (p.kernel[i] <= 0 || p.strides[i] <= 0 || p.dilations[i] <= 0)
      LOOM_THROW(ShapeError, "pool2d: kernel, strides and dilations must be positive");
  for (int i = 0; i < 4; ++i)
    if (p.pads[i] < 0 || p.pads[i] >= p.kernel[i % 2] * p.dilations[i % 2])
      LOOM_THROW(ShapeError, "pool2d: padding ", p.pads[i], " must be non-negative and smaller than the kernel");
  int64_t oh = window_out(x[2], p.kernel[0], p.strides[0], p.pads[0], p.pads[2], p.dilations[0], p.ceil_mode);
  int64_t ow = window_out(x[3], p.kernel[1], p.strides[1], p.pads[1], p.pads[3], p.dilations[1], p.ceil_mode);
  if (oh <= 0 || ow <= 0)
    LOOM_THROW(ShapeError, "pool2d: window ", p.kernel[0], "x", p.kernel[1], " larger than the padded input");
  Shape out = {x[0], x[1], oh, ow};
  if (x.size() == 5) out.push_back(x[4]);
  return out;
}

// Index of X at spatial position (y, x) for an output index v (NCHW or NCHWc: spatial dims 2, 3).
static std::vector<Expr> spatial_index(const std::vector<Var>& v, Expr y, Expr x) {
  std::vector<Expr> idx(v.begin(), v.end());
  idx[2] = y;
  idx[3] = x;
  return idx;
}

// Pads X for the pool windows: explicit pads plus whatever the last (ceil-mode) window overshoots.
static Tensor pool_input(const Tensor& X, const Pool2dParams& p, const Shape& out, double fill,
                         const std::string& name) {
  Shape xs = shape_of(X);
  int64_t need_h = (out[2] - 1) * p.strides[0] + p.dilations[0] * (p.kernel[0] - 1) + 1;
  int64_t need_w = (out[3] - 1) * p.strides[1] + p.dilations[1] * (p.kernel[1] - 1) + 1;
  int64_t after_h = std::max<int64_t>(0, need_h - xs[2] - p.pads[0]),
          after_w = std::max<int64_t>(0, need_w - xs[3] - p.pads[1]);
  if (!p.pads[0] && !p.pads[1] && !after_h && !after_w) return X;
  std::vector<int64_t> pads(2 * xs.size(), 0);
  pads[2] = p.pads[0];
  pads[3] = p.pads[1];
  pads[xs.size() + 2] = after_h;
  pads[xs.size() + 3] = after_w;
  return pad(X, pads, PadMode::Constant, fill, name + "_pad");
}

Tensor max_pool2d(const Tensor& X, const Pool2dParams& p, const std::string& name) {
  Shape out = pool2d_shape(shape_of(X), p);
  // Padding is the type's lowest value, so it never wins: unsigned types pad with 0.
  double lowest = X.dtype().is_float() ? -std::numeric_limits<double>::infinity()
                  : X.dtype().is_int() ? -std::ldexp(1.0, X.dtype().bits() - 1)
                                       : 0.0;
  Tensor P = pool_input(X, p, out, lowest, name);
  IterVar ry = reduce_axis(int(p.kernel[0]), "ry"), rx = reduce_axis(int(p.kernel[1]), "rx");
  return compute(shape_exprs(out), ComputeFn([&](const std::vector<Var>& v) {
                   return max_reduce(P(spatial_index(v, v[2] * int(p.strides[0]) + ry->var * int(p.dilations[0]),
                                                     v[3] * int(p.strides[1]) + rx->var * int(p.dilations[1]))),
                                     {ry, rx});
                 }),
                 name, "pool");
}

Tensor avg_pool2d(const Tensor& X, const Pool2dParams& p, const std::string& name) {
  if (!X.dtype().is_float()) LOOM_THROW(TypeError, "avg_pool2d '", name, "': input must be floating point");
  Shape xs = shape_of(X);
  Shape out = pool2d_shape(xs, p);
  Tensor P = pool_input(X, p, out, 0.0, name);
  IterVar ry = reduce_axis(int(p.kernel[0]), "ry"), rx = reduce_axis(int(p.kernel[1]), "rx");
  Tensor s = compute(shape_exprs(out), ComputeFn([&](const std::vector<Var>& v) {
                       return sum(P(spatial_index(v, v[2] * int(p.strides[0]) + ry->var * int(p.dilations[0]),
                                                  v[3] * int(p.strides[1]) + rx->var * int(p.dilations[1]))),
                                  {ry, rx});
                     }),
                     name + "_sum", "pool");
  // Divisor per output point: the window clipped to the padded input (count_include_pad) or to the
  // input itself, as PyTorch and ONNX count it.
  auto extent = [&](Expr o, int d) {
    Expr start = o * int(p.strides[d]) - int(p.pads[d]);
    Expr end = min(start + int(p.dilations[d] * (p.kernel[d] - 1) + 1), Expr(int(xs[2 + d] + p.pads[d + 2])));
    if (!p.count_include_pad) {
      start = max(start, Expr(0));
      end = min(end, Expr(int(xs[2 + d])));
    }
    // Taps inside [start, end): dilation > 1 skips positions.
    return (end - start + int(p.dilations[d]) - 1) / int(p.dilations[d]);
  };
  return compute(shape_exprs(out), ComputeFn([&](const std::vector<Var>& v) {
                   return s(std::vector<Expr>(v.begin(), v.end())) / cast(X.dtype(), extent(v[2], 0) * extent(v[3], 1));
                 }),
                 name, "elemwise");
}

Tensor global_avg_pool2d(const Tensor& X, const std::string& name) {
  Shape xs = shape_of(X);
  if (xs.size() != 4 && xs.size() != 5)
    LOOM_THROW(ShapeError, "global_avg_pool2d '", name, "': input must be NCHW or NCHWc");
  Shape out = xs;
  out[2] = out[3] = 1;
  IterVar ry = reduce_axis(int(xs[2]), "ry"), rx = reduce_axis(int(xs[3]), "rx");
  Tensor s = compute(shape_exprs(out), ComputeFn([&](const std::vector<Var>& v) {
                       return sum(X(spatial_index(v, ry->var, rx->var)), {ry, rx});
                     }),
                     name + "_sum", "pool");
  double inv = 1.0 / static_cast<double>(xs[2] * xs[3]);
  return compute(shape_exprs(out), ComputeFn([&](const std::vector<Var>& v) {
                   return s(std::vector<Expr>(v.begin(), v.end())) * make_const(X.dtype(), inv);
                 }),
                 name, "elemwise");
}

Tensor softmax(const Tensor& X, int axis, const std::string& name) {
  if (!X.dtype().is_float()) LOOM_THROW(TypeError, "softmax '", name, "': input must be floating point");
  const std::vector<Expr>& xs = X.shape();  // extents may be symbolic (layers.h)
  int r = static_cast<int>(xs.size());
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) LOOM_THROW(ShapeError, "softmax '", name, "': axis out of range for rank ", r);
  std::vector<Expr> reduced = xs;
  reduced[size_t(axis)] = Expr(1);
  auto with_axis = [&](const std::vector<Var>& v, Expr a) {
    std::vector<Expr> idx(v.begin(), v.end());
    idx[axis] = a;
    return idx;
  };
  // A reduction along the softmax axis: along the innermost axis in two steps
  // (detail::reduce_innermost), else one chain per row.
  const Expr m = xs[size_t(axis)];
  auto reduce_along = [&](const Tensor& src, bool is_max, const std::string& what) {
    auto combine = [&](Expr e, std::vector<IterVar> axes) {
      return is_max ? max_reduce(e, std::move(axes)) : sum(e, std::move(axes));
    };
    if (axis == r - 1)
      return detail::reduce_innermost(
          reduced, true, m, combine,
          [&](const std::vector<Var>& row, Expr k) {
            std::vector<Expr> idx(row.begin(), row.end());
            idx.push_back(k);
            return src(idx);
          },
          name + "_" + what, "softmax",
          is_max ? make_const(X.dtype(), -std::numeric_limits<double>::infinity()) : make_zero(X.dtype()));
    IterVar k = reduce_axis(m, name + "_" + what + "_k");
    return compute(reduced,
                   ComputeFn([&](const std::vector<Var>& v) { return combine(src(with_axis(v, k->var)), {k}); }),
                   name + "_" + what, "softmax");
  };
  Tensor mx = reduce_along(X, true, "max");
  Tensor e = compute(xs, ComputeFn([&](const std::vector<Var>& v) {
                       return exp(X(std::vector<Expr>(v.begin(), v.end())) - mx(with_axis(v, 0)));
                     }),
                     name + "_exp", "softmax");
  Tensor s = reduce_along(e, false, "sum");
  return compute(xs, ComputeFn([&](const std::vector<Var>& v) {
                   return e(std::vector<Expr>(v.begin(), v.end())) / s(with_axis(v, 0));
                 }),
                 name, "elemwise");
}

}  // namespace loom::ops
