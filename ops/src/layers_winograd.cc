// Winograd convolution F(m x m, 3 x 3) on channel-blocked activations (see layers.h).
#include <cmath>

#include "loom/ops/layers.h"

namespace loom::ops {

using namespace loom::ir;

// Interpolation points 0, 1, -1 (m = 2) and 0, 1, -1, 2, -2 (m = 4), plus infinity (Lavin and
// Gray).
const WinogradMatrices& winograd_matrices(int m) {
  static const WinogradMatrices f2{2,
                                   4,
                                   {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}},
                                   {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}},
                                   {{1, 1, 1, 0}, {0, 1, -1, -1}}};
  static const WinogradMatrices f4{
      4,
      6,
      {{4, 0, -5, 0, 1, 0},
       {0, -4, -4, 1, 1, 0},
       {0, 4, -4, -1, 1, 0},
       {0, -2, -1, 2, 1, 0},
       {0, 2, -1, -2, 1, 0},
       {0, 4, 0, -5, 0, 1}},
      {{1.0 / 4, 0, 0},
       {-1.0 / 6, -1.0 / 6, -1.0 / 6},
       {-1.0 / 6, 1.0 / 6, -1.0 / 6},
       {1.0 / 24, 1.0 / 12, 1.0 / 6},
       {1.0 / 24, -1.0 / 12, 1.0 / 6},
       {0, 0, 1}},
      {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}}};
  if (m == 2) return f2;
  if (m == 4) return f4;
  LOOM_THROW(ShapeError, "winograd: output tiles of ", m, " (supported: 2, 4)");
}

namespace {

// sum_k row[k] * term(k) over the nonzero coefficients, +-1 as additions and subtractions: after
// the schedule unrolls the loop that picks the row, no multiply by a constant 0 or 1 is left.
Expr combine(const std::vector<double>& row, const std::function<Expr(int)>& term, DataType t) {
  Expr acc;
  for (size_t k = 0; k < row.size(); ++k) {
    double c = row[k];
    if (c == 0) continue;
    Expr x = term(int(k));
    if (!acc.defined()) {
      acc = c == 1 ? x : c == -1 ? make_zero(t) - x : x * make_const(t, c);
    } else if (c == 1) {
      acc = acc + x;
    } else if (c == -1) {
      acc = acc - x;
    } else {
      acc = acc + x * make_const(t, c);
    }
  }
  return acc.defined() ? acc : make_zero(t);
}

// rows[index] as a chain of selects on `index` (an unrolled loop's variable, so a constant once
// lowered: the simplifier folds the chain to one row).
Expr pick_row(const Expr& index, const std::vector<std::vector<double>>& rows,
              const std::function<Expr(const std::vector<double>&)>& of) {
  Expr e = of(rows.back());
  for (size_t r = rows.size() - 1; r-- > 0;) e = select(index == Expr(int(r)), of(rows[r]), e);
  return e;
}

}  // namespace

int winograd_alpha(int m) { return winograd_matrices(m).alpha; }

Shape conv2d_winograd_shape(const Shape& x, const Shape& u, const Conv2dParams& p, int m) {
  int alpha = winograd_alpha(m);
  if (x.size() != 5) LOOM_THROW(ShapeError, "conv2d (Winograd): input must be NCHWc (rank 5), has rank ", x.size());
  if (p.strides != std::array<int64_t, 2>{1, 1} || p.dilations != std::array<int64_t, 2>{1, 1})
    LOOM_THROW(ShapeError, "conv2d (Winograd): needs stride 1 and dilation 1");
  if (p.groups < 1 || x[1] % p.groups != 0)
    LOOM_THROW(ShapeError, "conv2d (Winograd): ", p.groups, " groups do not divide the input's ", x[1],
               " channel blocks");
  // Grouped: every group whole blocks of input and output channels (ib = ob).
  const int64_t in_blocks = x[1] / p.groups;
  if (u.size() != 5 || u[0] != int64_t(alpha) * alpha || u[2] != in_blocks || u[3] != x[4] || u[1] % p.groups != 0 ||
      (p.groups > 1 && u[4] != x[4]))
    LOOM_THROW(ShapeError, "conv2d (Winograd F(", m, "x", m, ", 3x3)): weights ", shape_str(u), " are not [",
               alpha * alpha, ", O/ob, ", in_blocks, ", ", x[4], ", ob] for input ", shape_str(x),
               p.groups > 1 ? " in " + std::to_string(p.groups) + " groups of whole blocks" : std::string());
  Conv2dParams q = p;
  q.oc_block = 0;
  Shape plain = conv2d_shape({x[0], x[1] * x[4], x[2], x[3]}, {u[1] * u[4], in_blocks * x[4], 3, 3}, q);
  return {plain[0], u[1], plain[2], plain[3], u[4]};
}

NDArray pack_winograd_weights(const NDArray& w, int m, int64_t ib, int64_t ob) {
  const WinogradMatrices& mx = winograd_matrices(m);
  if (w.ndim() != 4 || w.dtype() != DataType::Float(32) || w.shape()[2] != 3 || w.shape()[3] != 3)
    LOOM_THROW(TypeError, "winograd weights: need float32 OIHW 3x3 weights, got ", w.describe());
  const int64_t O = w.shape()[0], C = w.shape()[1];
  if (ib <= 0 || ob <= 0 || C % ib || O % ob)
    LOOM_THROW(ShapeError, "winograd weights: blocks ", ib, " and ", ob, " must divide ", C, " input and ", O,
               " output channels");
  const int a = mx.alpha;
  NDArray u = NDArray::empty({int64_t(a) * a, O / ob, C / ib, ib, ob}, DataType::Float(32));
  const float* g = w.data<float>();
  float* dst = u.data<float>();
  for (int64_t o = 0; o < O; ++o)
    for (int64_t c = 0; c < C; ++c) {
      const float* k = g + (o * C + c) * 9;
      // G g G^T in double: the fractions of F(4, 3) rounded once, at the end.
      double gg[6][3];
      for (int i = 0; i < a; ++i)
        for (int j = 0; j < 3; ++j) gg[i][j] = mx.g[i][0] * k[j] + mx.g[i][1] * k[3 + j] + mx.g[i][2] * k[6 + j];
      for (int i = 0; i < a; ++i)
        for (int j = 0; j < a; ++j) {
          double v = gg[i][0] * mx.g[j][0] + gg[i][1] * mx.g[j][1] + gg[i][2] * mx.g[j][2];
          int64_t nu = int64_t(i) * a + j;
          dst[(((nu * (O / ob) + o / ob) * (C / ib) + c / ib) * ib + c % ib) * ob + o % ob] = float(v);
        }
    }
  return u;
}

Tensor conv2d_winograd_nchwc(const Tensor& X, const Tensor& U, const Tensor& bias, const Conv2dParams& p, int m,
                             const std::string& name) {
  const WinogradMatrices& mx = winograd_matrices(m);
  const int a = mx.alpha;
  Shape xs = shape_of(X), us = shape_of(U);
  Shape out = conv2d_winograd_shape(xs, us, p, m);
  if (X.dtype() != DataType::Float(32) || U.dtype() != DataType::Float(32))
    LOOM_THROW(TypeError, "conv2d '", name, "' (Winograd): float32 only, got ", X.dtype().str(), " and ",
               U.dtype().str());
  const int64_t N = out[0], OB = out[1], OH = out[2], OW = out[3], ob = out[4], CB = xs[1], ib = xs[4];
  const int64_t th = (OH + m - 1) / m, tw = (OW + m - 1) / m;
  // Padding as the conv's, and more at the end so that every tile's alpha x alpha window is inside.
  Tensor P = pad(X, {0, 0, p.pads[0], p.pads[1], 0, 0, 0, p.pads[2] + th * m - OH, p.pads[3] + tw * m - OW, 0},
                 PadMode::Constant, 0.0, name + "_pad");
  DataType f32 = DataType::Float(32);
  // B^T d along the tile's rows: R[e1, j, n, cb, ty, tx, c] = sum_i BT[e1][i] d[i][j].
  Tensor R = compute(shape_exprs({a, a, N, CB, th, tw, ib}), ComputeFn([&](const std::vector<Var>& v) {
                       return pick_row(v[0], mx.bt, [&](const std::vector<double>& row) {
                         return combine(
                             row, [&](int i) { return P(v[2], v[3], v[4] * m + i, v[5] * m + v[1], v[6]); }, f32);
                       });
                     }),
                     name + "_in_rows", "winograd_transform");
  // ... and along its columns: V[e1 * alpha + e2, n, cb, ty, tx, c] = sum_j R[e1, j] BT[e2][j].
  Tensor V = compute(shape_exprs({a * a, N, CB, th, tw, ib}), ComputeFn([&](const std::vector<Var>& v) {
                       Expr e1 = v[0] / a, e2 = v[0] % a;
                       return pick_row(e2, mx.bt, [&](const std::vector<double>& row) {
                         return combine(
                             row, [&](int j) { return R(e1, j, v[1], v[2], v[3], v[4], v[5]); }, f32);
                       });
                     }),
                     name + "_in", "winograd_transform");
  // alpha^2 independent products over the input channels (of the output block's group), one per
  // point of the tile.
  const int in_per_group = int(us[2]), out_per_group = int(OB / p.groups);
  IterVar rco = reduce_axis(in_per_group, "rco"), rci = reduce_axis(int(ib), "rci");
  Tensor M = compute(
      shape_exprs({a * a, N, OB, th, tw, ob}), ComputeFn([&](const std::vector<Var>& v) {
        Expr cb = p.groups == 1 ? Expr(rco->var) : (v[2] / out_per_group) * in_per_group + rco->var;
        return sum(V(v[0], v[1], cb, v[3], v[4], rci->var) * U(v[0], v[2], rco->var, rci->var, v[5]), {rco, rci});
      }),
      name + "_gemm", "winograd_gemm");
  // A^T along the tile's columns, indexed by the output column: Z[e1, n, ob, ty, x, o].
  Tensor Z = compute(shape_exprs({a, N, OB, th, tw * m, ob}), ComputeFn([&](const std::vector<Var>& v) {
                       return pick_row(v[4] % m, mx.at, [&](const std::vector<double>& row) {
                         return combine(
                             row, [&](int e2) { return M(v[0] * a + e2, v[1], v[2], v[3], v[4] / m, v[5]); }, f32);
                       });
                     }),
                     name + "_out_cols", "winograd_transform");
  // ... and along its rows, plus the bias.
  int obi = int(ob);
  if (bias.defined() && shape_of(bias) != Shape{OB * ob})
    LOOM_THROW(ShapeError, "conv2d '", name, "': bias '", bias.name(), "' must have shape [", OB * ob, "]");
  return compute(shape_exprs(out), ComputeFn([&](const std::vector<Var>& v) {
                   Expr y = pick_row(v[2] % m, mx.at, [&](const std::vector<double>& row) {
                     return combine(
                         row, [&](int e1) { return Z(e1, v[0], v[1], v[2] / m, v[3], v[4]); }, f32);
                   });
                   return bias.defined() ? y + bias(v[1] * obi + v[4]) : y;
                 }),
                 name, "winograd_output");
}

}  // namespace loom::ops
