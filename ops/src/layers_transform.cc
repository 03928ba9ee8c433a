// Data movement for whole models: reshape, transpose, concat, pad, nearest resize (see layers.h).
#include "loom/ir/printer.h"
#include "loom/ir/simplify.h"
#include "loom/ops/layers.h"
#include "loom/ops/nn.h"

namespace loom::ops {

using namespace loom::ir;

static int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Tensor reshape(const Tensor& X, const Shape& shape, const std::string& name) {
  Shape xs = shape_of(X);
  if (numel(xs) != numel(shape))
    LOOM_THROW(ShapeError, "reshape '", name, "': ", shape_str(xs), " has ", numel(xs), " elements, ", shape_str(shape),
               " has ", numel(shape));
  return reshape(X, shape_exprs(shape), name);
}

Tensor reshape(const Tensor& X, const std::vector<Expr>& shape, const std::string& name) {
  const std::vector<Expr>& xs = X.shape();
  // Axes kept at either end (the same extents in order) index directly; the row-major arithmetic
  // covers only the axes between, so a cache's [2, 4, T, 64] -> [8, T, 64] divides by constants,
  // not by its run-time length T. The middles hold as many elements: the ends do.
  size_t lead = 0, tail = 0;
  while (lead < xs.size() && lead < shape.size() && same_extent(xs[lead], shape[lead])) ++lead;
  while (tail + lead < xs.size() && tail + lead < shape.size() &&
         same_extent(xs[xs.size() - 1 - tail], shape[shape.size() - 1 - tail]))
    ++tail;
  const size_t x_end = xs.size() - tail, out_end = shape.size() - tail;
  // Leading unit axes of the input's middle read 0; its first other axis takes what the inner ones
  // leave (no remainder: with a symbolic extent there, the row-major quotient is the index).
  size_t first = lead;
  while (first + 1 < x_end && is_one(xs[first])) ++first;
  return compute(shape, ComputeFn([&](const std::vector<Var>& v) {
                   std::vector<Expr> idx(xs.size(), Expr(0));
                   for (size_t d = 0; d < lead; ++d) idx[d] = v[d];
                   for (size_t k = 0; k < tail; ++k) idx[xs.size() - 1 - k] = v[shape.size() - 1 - k];
                   // Row-major flat index of the output's middle, then the input's middle point with it.
                   Expr flat = Expr(0);
                   for (size_t d = lead; d < out_end; ++d) flat = d == lead ? Expr(v[d]) : flat * shape[d] + v[d];
                   for (size_t d = x_end; d-- > first;) {
                     idx[d] = d == first ? flat : flat % xs[d];
                     flat = flat / xs[d];
                   }
                   return X(idx);
                 }),
                 name, "injective");
}

Tensor transpose(const Tensor& X, const std::vector<int64_t>& perm, const std::string& name) {
  const std::vector<Expr>& xs = X.shape();  // extents may be symbolic (layers.h)
  if (perm.size() != xs.size())
    LOOM_THROW(ShapeError, "transpose '", name, "': permutation of ", perm.size(), " axes for rank ", xs.size());
  std::vector<bool> seen(xs.size(), false);
  std::vector<Expr> out;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(xs.size()) || seen[p])
      LOOM_THROW(ShapeError, "transpose '", name, "': invalid permutation");
    seen[p] = true;
    out.push_back(xs[size_t(p)]);
  }
  return compute(out, ComputeFn([&](const std::vector<Var>& v) {
                   std::vector<Expr> idx(xs.size());
                   for (size_t d = 0; d < perm.size(); ++d) idx[perm[d]] = v[d];
                   return X(idx);
                 }),
                 name, "injective");
}

Tensor concat(const std::vector<Tensor>& inputs, int axis, const std::string& name) {
  if (inputs.empty()) LOOM_THROW(ShapeError, "concat '", name, "': no inputs");
  std::vector<Expr> out = inputs[0].shape();  // extents may be symbolic (layers.h): offsets too
  int r = static_cast<int>(out.size());
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) LOOM_THROW(ShapeError, "concat '", name, "': axis out of range for rank ", r);
  auto str = [](const std::vector<Expr>& e) {
    std::string t = "[";
    for (size_t d = 0; d < e.size(); ++d) t += (d ? ", " : "") + ir::to_string(e[d]);
    return t + "]";
  };
  std::vector<Expr> offsets{Expr(0)};
  for (size_t i = 1; i < inputs.size(); ++i) {
    const std::vector<Expr>& s = inputs[i].shape();
    if (s.size() != out.size() || inputs[i].dtype() != inputs[0].dtype())
      LOOM_THROW(ShapeError, "concat '", name, "': input ", i, " is ", inputs[i].dtype().str(), str(s), ", input 0 is ",
                 inputs[0].dtype().str(), str(out));
    for (int d = 0; d < r; ++d)
      if (d != axis && !same_extent(s[size_t(d)], out[size_t(d)]))
        LOOM_THROW(ShapeError, "concat '", name, "': input ", i, " has shape ", str(s), ", which differs off axis ",
                   axis);
    offsets.push_back(out[size_t(axis)]);
    out[size_t(axis)] = ir::simplify(out[size_t(axis)] + s[size_t(axis)]);
  }
  return compute(out, ComputeFn([&](const std::vector<Var>& v) {
                   // The last input whose range starts at or before the index, as nested selects.
                   Expr value;
                   for (size_t i = 0; i < inputs.size(); ++i) {
                     std::vector<Expr> idx(v.begin(), v.end());
                     idx[axis] = v[axis] - offsets[i];
                     Expr here = inputs[i](idx);
                     value = i == 0 ? here : if_then_else(v[axis] >= offsets[i], here, value);
                   }
                   return value;
                 }),
                 name, "injective");
}

Tensor pad(const Tensor& X, const std::vector<int64_t>& pads, PadMode mode, double value, const std::string& name) {
  Shape xs = shape_of(X);
  size_t r = xs.size();
  if (pads.size() != 2 * r)
    LOOM_THROW(ShapeError, "pad '", name, "': ", pads.size(), " pads for rank ", r, " (need ", 2 * r, ")");
  Shape out = xs;
  for (size_t d = 0; d < r; ++d) {
    if (pads[d] < 0 || pads[d + r] < 0) LOOM_THROW(ShapeError, "pad '", name, "': negative pads are not supported");
    if (mode == PadMode::Reflect && (pads[d] >= xs[d] || pads[d + r] >= xs[d]))
      LOOM_THROW(ShapeError, "pad '", name, "': reflect padding ", pads[d], "/", pads[d + r],
                 " must be smaller than dimension ", d, " (", xs[d], ")");
    if (mode == PadMode::Edge && xs[d] == 0)
      LOOM_THROW(ShapeError, "pad '", name, "': edge padding of an empty dimension");
    out[d] += pads[d] + pads[d + r];
  }
  return compute(shape_exprs(out), ComputeFn([&](const std::vector<Var>& v) {
                   std::vector<Expr> idx;
                   Expr inside;
                   for (size_t d = 0; d < r; ++d) {
                     Expr i = v[d] - int(pads[d]);
                     int n = static_cast<int>(xs[d]);
                     if (pads[d] == 0 && pads[d + r] == 0) {
                       idx.push_back(v[d]);
                       continue;
                     }
                     if (mode == PadMode::Constant) {
                       Expr c = i >= 0 && i < n;
                       inside = inside.defined() ? (inside && c) : c;
                       idx.push_back(i);
                     } else if (mode == PadMode::Edge) {
                       idx.push_back(min(max(i, Expr(0)), Expr(n - 1)));
                     } else {  // reflect without repeating the edge: -1 -> 1, n -> n - 2
                       Expr a = abs(i);
                       idx.push_back(Expr(n - 1) - abs(Expr(n - 1) - a));
                     }
                   }
                   if (!inside.defined()) return X(idx);
                   return if_then_else(inside, X(idx), make_const(X.dtype(), value));
                 }),
                 name, "pad");
}

Tensor resize_nearest(const Tensor& X, const Tensor& ymap, const Tensor& xmap, const std::string& name) {
  Shape xs = shape_of(X);
  if (xs.size() != 4) LOOM_THROW(ShapeError, "resize '", name, "': input must be NCHW");
  Shape ys = shape_of(ymap), xms = shape_of(xmap);
  if (ys.size() != 1 || xms.size() != 1 || !ymap.dtype().is_int() || !xmap.dtype().is_int())
    LOOM_THROW(ShapeError, "resize '", name, "': index maps must be 1-D integer tensors");
  return compute(
      {int(xs[0]), int(xs[1]), int(ys[0]), int(xms[0])},
      [&](Var n, Var c, Var y, Var x) { return X(n, c, ymap(y), xmap(x)); }, name, "injective");
}

}  // namespace loom::ops
