// Data movement on run-time data (layers.h): casts, strided slices, gathers, broadcasts to a
// shape, tiling, triangle masks, cumulative sums and one-hot encodings.
#include <algorithm>

#include "index_util.h"
#include "loom/ir/printer.h"
#include "loom/ops/layers.h"
#include "loom/runtime/error.h"

namespace loom::ops {

using namespace loom::ir;

namespace {

size_t axis_of(int64_t axis, size_t rank, const char* what) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) LOOM_THROW(ShapeError, what, ": axis ", axis, " out of range for rank ", r);
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

}  // namespace

Tensor cast(const Tensor& X, DataType to, const std::string& name) {
  return unary(
      X, [to](Expr x) { return ir::cast(to, x); }, name);
}

SliceAxes slice_axes(const Shape& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                     const std::vector<int64_t>& axes, const std::vector<int64_t>& steps) {
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    LOOM_THROW(ShapeError, "slice: starts, ends, axes and steps must have the same length");
  size_t r = x.size();
  SliceAxes s{std::vector<int64_t>(r, 0), std::vector<int64_t>(r, 1), x};
  std::vector<bool> seen(r, false);
  for (size_t k = 0; k < starts.size(); ++k) {
    size_t ax = axis_of(axes[k], r, "slice");
    if (seen[ax]) LOOM_THROW(ShapeError, "slice: axis ", axes[k], " given twice");
    seen[ax] = true;
    int64_t dim = x[ax], st = steps[k];
    if (st == 0) LOOM_THROW(ShapeError, "slice: step 0 on axis ", axes[k]);
    // A step beyond the dimension takes one element, as that step does; clamping keeps the
    // arithmetic below from overflowing for steps near +-2^63.
    st = std::clamp<int64_t>(st, -(dim + 1), dim + 1);
    int64_t b = starts[k] < 0 ? std::max<int64_t>(starts[k], INT64_MIN + dim) + dim : starts[k];
    int64_t e = ends[k] < 0 ? std::max<int64_t>(ends[k], INT64_MIN + dim) + dim : ends[k];
    // Clamped as ONNX specifies: [0, dim] for positive steps, [-1, dim - 1] for negative ones.
    if (st > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      s.count[ax] = e > b ? (e - b + st - 1) / st : 0;
    } else {
      b = std::clamp<int64_t>(b, -1, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      s.count[ax] = b > e ? (b - e - st - 1) / -st : 0;
    }
    s.begin[ax] = b;
    s.step[ax] = st;
  }
  return s;
}

Tensor strided_slice(const Tensor& X, const SliceAxes& s, const std::string& name) {
  std::vector<Expr> begin;
  for (int64_t b : s.begin) begin.push_back(Expr(int(b)));
  return strided_slice(X, begin, s.step, shape_exprs(s.count), name);
}

Tensor strided_slice(const Tensor& X, const std::vector<Expr>& begin, const std::vector<int64_t>& step,
                     const std::vector<Expr>& extents, const std::string& name) {
  return compute(extents, ComputeFn([&](const std::vector<Var>& v) {
                   std::vector<Expr> idx;
                   for (size_t d = 0; d < v.size(); ++d) idx.push_back(begin[d] + v[d] * int(step[d]));
                   return X(idx);
                 }),
                 name, "injective");
}

Tensor gather(const Tensor& X, const Tensor& I, int64_t axis, const std::string& name) {
  const std::vector<Expr>&xs = X.shape(), &is = I.shape();  // extents may be symbolic (layers.h)
  size_t a = axis_of(axis, xs.size(), "gather");
  std::vector<Expr> out(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(a));
  out.insert(out.end(), is.begin(), is.end());
  out.insert(out.end(), xs.begin() + static_cast<std::ptrdiff_t>(a) + 1, xs.end());
  return compute(out, ComputeFn([&](const std::vector<Var>& v) {
                   std::vector<Expr> ii(v.begin() + static_cast<std::ptrdiff_t>(a),
                                        v.begin() + static_cast<std::ptrdiff_t>(a + is.size()));
                   std::vector<Expr> idx(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(a));
                   idx.push_back(clamped_index(I(ii), xs[a]));
                   idx.insert(idx.end(), v.begin() + static_cast<std::ptrdiff_t>(a + is.size()), v.end());
                   return X(idx);
                 }),
                 name, "injective");
}

Tensor gather_elements(const Tensor& X, const Tensor& I, int64_t axis, const std::string& name) {
  Shape xs = shape_of(X), is = shape_of(I);
  size_t a = axis_of(axis, xs.size(), "gather_elements");
  if (is.size() != xs.size()) LOOM_THROW(ShapeError, "gather_elements: indices and data differ in rank");
  return compute(shape_exprs(is), ComputeFn([&](const std::vector<Var>& v) {
                   std::vector<Expr> idx = at(v);
                   idx[a] = clamped_index(I(at(v)), xs[a]);
                   return X(idx);
                 }),
                 name, "injective");
}

Tensor expand(const Tensor& X, const Shape& shape, const std::string& name) {
  Shape xs = shape_of(X), out = broadcast_shape(xs, shape);
  return expand(X, shape_exprs(out), name);
}

Tensor expand(const Tensor& X, const std::vector<Expr>& out, const std::string& name) {
  const std::vector<Expr>& xs = X.shape();
  return compute(out, ComputeFn([&](const std::vector<Var>& v) {
                   std::vector<Expr> idx;  // right-aligned; an axis of extent 1 broadcasts
                   size_t off = v.size() - xs.size();
                   for (size_t d = 0; d < xs.size(); ++d) idx.push_back(is_one(xs[d]) ? Expr(0) : Expr(v[off + d]));
                   return X(idx);
                 }),
                 name, "broadcast");
}

Tensor tile(const Tensor& X, const std::vector<int64_t>& repeats, const std::string& name) {
  Shape xs = shape_of(X), out = xs;
  if (repeats.size() != xs.size()) LOOM_THROW(ShapeError, "tile: ", repeats.size(), " repeats for rank ", xs.size());
  for (size_t d = 0; d < xs.size(); ++d) {
    if (repeats[d] < 1) LOOM_THROW(ShapeError, "tile: repeat ", repeats[d], " must be positive");
    out[d] *= repeats[d];
  }
  return compute(shape_exprs(out), ComputeFn([&](const std::vector<Var>& v) {
                   std::vector<Expr> idx;
                   for (size_t d = 0; d < v.size(); ++d)
                     idx.push_back(repeats[d] == 1 ? Expr(v[d]) : v[d] % int(xs[d]));
                   return X(idx);
                 }),
                 name, "injective");
}

Tensor trilu(const Tensor& X, int64_t k, bool upper, const std::string& name) {
  Shape xs = shape_of(X);
  if (xs.size() < 2) LOOM_THROW(ShapeError, "trilu: input must have rank 2 or more, is ", shape_str(xs));
  int64_t bound = std::clamp<int64_t>(k, -(xs[xs.size() - 2] + 1), xs.back() + 1);
  return compute(X.shape(), ComputeFn([&](const std::vector<Var>& v) {
                   Expr diag = v[v.size() - 1] - v[v.size() - 2];  // column - row
                   Expr keep = upper ? diag >= int(bound) : diag <= int(bound);
                   return select(keep, X(at(v)), make_zero(X.dtype()));
                 }),
                 name, "injective");
}

Tensor cumsum(const Tensor& X, int64_t axis, bool exclusive, bool reverse, const std::string& name) {
  Shape xs = shape_of(X);
  size_t a = axis_of(axis, xs.size(), "cumsum");
  IterVar r = reduce_axis(int(xs[a]), "r_cumsum");
  return compute(X.shape(), ComputeFn([&](const std::vector<Var>& v) {
                   std::vector<Expr> idx = at(v);
                   idx[a] = r->var;
                   Expr i = v[a], j = r->var;
                   Expr in = reverse ? (exclusive ? j > i : j >= i) : (exclusive ? j < i : j <= i);
                   return sum(select(in, X(idx), make_zero(X.dtype())), {r});
                 }),
                 name, "reduce");
}

Tensor one_hot(const Tensor& I, const Tensor& values, int64_t depth, int64_t axis, const std::string& name) {
  Shape is = shape_of(I);
  size_t a = axis_of(axis, is.size() + 1, "one_hot");
  if (depth < 1) LOOM_THROW(ShapeError, "one_hot: depth ", depth, " must be positive");
  Shape out = is;
  out.insert(out.begin() + static_cast<std::ptrdiff_t>(a), depth);
  return compute(shape_exprs(out), ComputeFn([&](const std::vector<Var>& v) {
                   std::vector<Expr> ii = at(v);
                   Expr d = ii[a];
                   ii.erase(ii.begin() + static_cast<std::ptrdiff_t>(a));
                   // Negative indices count from depth; out-of-range ones match no position.
                   Expr i = cast(DataType::Int(64), I(ii));
                   i = select(i < make_zero(i.type()), i + make_const(i.type(), double(depth)), i);
                   return select(i == cast(DataType::Int(64), d), values(std::vector<Expr>{Expr(1)}),
                                 values(std::vector<Expr>{Expr(0)}));
                 }),
                 name, "injective");
}

Tensor resample_axis(const Tensor& X, const Tensor& index, const Tensor& weight, const Tensor& bias, int64_t axis,
                     const std::string& name) {
  Shape xs = shape_of(X), is = shape_of(index);
  size_t a = axis_of(axis, xs.size(), "resample_axis");
  if (is.size() != 2 || shape_of(weight) != is || !index.dtype().is_int())
    LOOM_THROW(ShapeError, "resample_axis: index and weight must be [taps, out] (integer index)");
  Shape out = xs;
  out[a] = is[1];
  return compute(shape_exprs(out), ComputeFn([&](const std::vector<Var>& v) {
                   Expr acc;
                   for (int t = 0; t < int(is[0]); ++t) {
                     std::vector<Expr> idx = at(v);
                     idx[a] = index(t, v[a]);
                     Expr term = weight(t, v[a]) * X(idx);
                     acc = acc.defined() ? acc + term : term;
                   }
                   return bias.defined() ? acc + bias(v[a]) : acc;
                 }),
                 name, "injective");
}

Tensor top_k(const Tensor& X, int64_t k, int64_t axis, bool largest, bool indices, const std::string& name) {
  Shape xs = shape_of(X);
  size_t a = axis_of(axis, xs.size(), "top_k");
  int len = static_cast<int>(xs[a]);
  if (k < 1 || k > len) LOOM_THROW(ShapeError, "top_k: k = ", k, " is not in [1, ", len, "]");
  auto along = [&](const std::vector<Var>& v, Expr j) {
    std::vector<Expr> idx = at(v);
    idx[a] = j;
    return idx;
  };
  // The rank of each element in the order asked for, ties broken by position (ONNX: the lower
  // index first): the count of elements that come before it. O(len^2) per row.
  IterVar r = reduce_axis(len, "r_rank");
  Tensor rank = compute(X.shape(), ComputeFn([&](const std::vector<Var>& v) {
                          Expr mine = X(at(v)), other = X(along(v, r->var));
                          // NaN orders above every number (numpy's sort, ONNX Runtime's TopK).
                          Expr other_nan = other != other, mine_nan = mine != mine;
                          Expr above = other > mine || (other_nan && !mine_nan);
                          Expr below = other < mine || (mine_nan && !other_nan);
                          Expr tie = other == mine || (other_nan && mine_nan);
                          Expr before = (largest ? above : below) || (tie && r->var < v[a]);
                          return sum(select(before, Expr(1), Expr(0)), {r});
                        }),
                        name + "_rank", "reduce");
  // Output position p holds the element whose rank is p.
  Shape out = xs;
  out[a] = k;
  IterVar s = reduce_axis(len, "r_pick");
  return compute(shape_exprs(out), ComputeFn([&](const std::vector<Var>& v) {
                   Expr hit = rank(along(v, s->var)) == v[a];
                   Expr value = indices ? cast(DataType::Int(64), s->var) : X(along(v, s->var));
                   return sum(select(hit, value, make_zero(value.type())), {s});
                 }),
                 name, "reduce");
}

}  // namespace loom::ops
